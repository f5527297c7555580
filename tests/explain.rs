//! `explain`: full derivation trees on fixture projects, asserted exactly
//! (rule file:line and text, premises down to base facts and their source
//! lines), near misses for tuples that do not hold, errors, JSON and dumps.

use crate::common;

use std::process::Command;

use common::{fixture, open};

fn explain(fixture: &str, pattern: &str) -> String {
    open(fixture)
        .explain(pattern)
        .expect("pattern is valid")
        .to_text()
}

#[test]
fn direct_import_dependency_down_to_the_import_line() {
    assert_eq!(
        explain(
            "reexport_chain",
            r#"DependsOn("client.py", "api/__init__.py")"#
        ),
        r#"
DependsOn(client.py, api/__init__.py)
  [rule rules/dependencies.dl:22] DependsOn(a, b) <- Imports(a, _, b), (a != b), (!b.is_marker());
  Imports(client.py, 1:5, api/__init__.py)
    [rule rules/relationships.dl:26] Imports(f, s, m) <- ImportStmt(f, s, m);
    ImportStmt(client.py, 1:5, api/__init__.py)
      [base client.py:1:5] from api import handler

"#
        .trim_start()
    );
}

#[test]
fn call_through_a_reexport_chain_follows_every_resolves_hop() {
    assert_eq!(
        explain("reexport_chain", r#"Calls("client.py", "10:11", _, _)"#),
        r#"
Calls(client.py, 10:11, api/impl/core.py, handler)
  [rule rules/relationships.dl:30] Calls(f, s, df, dn) <- CallRef(f, s, m, n), Resolves(m, n, df, dn), (f != df);
  CallRef(client.py, 10:11, api/__init__.py, handler)
    [base client.py:10:11] return handler(req)
  Resolves(api/__init__.py, handler, api/impl/core.py, handler)
    [rule rules/resolution.dl:43] Resolves(m, n, df, dn) <- Candidate(m, n, df, dn), !Ambiguous(m, n);
    Candidate(api/__init__.py, handler, api/impl/core.py, handler)
      [rule rules/resolution.dl:32] Candidate(m, n, df, dn) <- BindsImported(m, n, t, tn), Candidate(t, tn, df, dn);
      BindsImported(api/__init__.py, handler, api/impl/__init__.py, handler)
        [base api/__init__.py:1] from .impl import handler, Resource
      Candidate(api/impl/__init__.py, handler, api/impl/core.py, handler)
        [rule rules/resolution.dl:32] Candidate(m, n, df, dn) <- BindsImported(m, n, t, tn), Candidate(t, tn, df, dn);
        BindsImported(api/impl/__init__.py, handler, api/impl/core.py, handler)
          [base api/impl/__init__.py:1] from .core import handler
        Candidate(api/impl/core.py, handler, api/impl/core.py, handler)
          [rule rules/resolution.dl:31] Candidate(m, n, m, n) <- Defines(m, n);
          Defines(api/impl/core.py, handler)
            [base api/impl/core.py:1] def handler(request):
    !Ambiguous(api/__init__.py, handler)
      [absent]

"#
        .trim_start()
    );
}

#[test]
fn cycle_membership_takes_the_shortest_cycle() {
    assert_eq!(
        explain("import_cycles", r#"InCycle("a.py")"#),
        r#"
InCycle(a.py)
  [rule rules/cycles.dl:23] InCycle(a) <- CycleEdge(a, _);
  CycleEdge(a.py, b.py)
    [rule rules/cycles.dl:22] CycleEdge(a, b) <- RuntimeDependsOn(a, b), CycleGroup(a, g), CycleGroup(b, h), (g == h);
    RuntimeDependsOn(a.py, b.py)
      [rule rules/dependencies.dl:30] RuntimeDependsOn(a, b) <- RuntimeImportAt(a, _, b);
      RuntimeImportAt(a.py, 2:5, b.py)
        [rule rules/dependencies.dl:29] RuntimeImportAt(a, s, b) <- ImportStmt(a, s, b), RuntimeImport(a, s), (a != b), (!b.is_marker());
        ImportStmt(a.py, 2:5, b.py)
          [base a.py:2:5] from b import step
        RuntimeImport(a.py, 2:5)
          [base a.py:2:5] from b import step
    CycleGroup(a.py, a.py)
      [base a.py] import cycle a.py -> c.py -> a.py
    CycleGroup(b.py, a.py)
      [base b.py] import cycle b.py -> c.py -> a.py -> b.py

"#
        .trim_start()
    );
}

#[test]
fn a_name_that_resolves_elsewhere_is_a_near_miss() {
    // The import exists, but the name resolves to api/impl/core.py; each
    // level shows the rule that got furthest.
    assert_eq!(
        explain(
            "reexport_chain",
            r#"ImportDefinedIn("client.py", _, "api/__init__.py", handler)"#
        ),
        r#"ImportDefinedIn("client.py", _, "api/__init__.py", handler) does not hold.
  [rule rules/relationships.dl:28] ImportDefinedIn(f, s, df, dn) <- ImportName(f, s, m, n), Resolves(m, n, df, dn);
    with f = client.py, df = api/__init__.py, dn = handler, m = api/__init__.py, n = handler
    holds: ImportName(client.py, 1:5, api/__init__.py, handler)
    fails: Resolves(api/__init__.py, handler, api/__init__.py, handler): no such tuple; these differ in one argument
      near: Resolves(api/__init__.py, handler, api/impl/core.py, handler)
      [rule rules/resolution.dl:43] Resolves(m, n, df, dn) <- Candidate(m, n, df, dn), !Ambiguous(m, n);
        with m = api/__init__.py, n = handler, df = api/__init__.py, dn = handler
        fails: Candidate(api/__init__.py, handler, api/__init__.py, handler): no such tuple; these differ in one argument
          near: Candidate(api/__init__.py, handler, api/impl/core.py, handler)
          [rule rules/resolution.dl:32] Candidate(m, n, df, dn) <- BindsImported(m, n, t, tn), Candidate(t, tn, df, dn);
            with m = api/__init__.py, n = handler, df = api/__init__.py, dn = handler, t = api/impl/__init__.py, tn = handler
            holds: BindsImported(api/__init__.py, handler, api/impl/__init__.py, handler)
            fails: Candidate(api/impl/__init__.py, handler, api/__init__.py, handler): no such tuple; these differ in one argument
              near: Candidate(api/impl/__init__.py, handler, api/impl/core.py, handler)
              [rule rules/resolution.dl:32] Candidate(m, n, df, dn) <- BindsImported(m, n, t, tn), Candidate(t, tn, df, dn);
                with m = api/impl/__init__.py, n = handler, df = api/__init__.py, dn = handler, t = api/impl/core.py, tn = handler
                holds: BindsImported(api/impl/__init__.py, handler, api/impl/core.py, handler)
                fails: Candidate(api/impl/core.py, handler, api/__init__.py, handler): no such tuple; these differ in one argument
                  near: Candidate(api/impl/core.py, handler, api/impl/core.py, handler)
"#
    );
}

#[test]
fn a_name_outside_dunder_all_is_explained_down_to_the_negated_premise() {
    assert_eq!(
        explain("wildcard", r#"Calls(consumer.py, "6:0", _, not_exported)"#),
        r#"Calls(consumer.py, "6:0", _, not_exported) does not hold.
  [rule rules/relationships.dl:30] Calls(f, s, df, dn) <- CallRef(f, s, m, n), Resolves(m, n, df, dn), (f != df);
    with f = consumer.py, dn = not_exported, m = consumer.py, n = not_exported
    holds: CallRef(consumer.py, 6:0, consumer.py, not_exported)
    fails: Resolves(consumer.py, not_exported, _, not_exported): no such tuple; these differ in one argument
      near: Resolves(lib/helpers.py, not_exported, lib/helpers.py, not_exported)
      [rule rules/resolution.dl:43] Resolves(m, n, df, dn) <- Candidate(m, n, df, dn), !Ambiguous(m, n);
        with m = consumer.py, n = not_exported, dn = not_exported
        fails: Candidate(consumer.py, not_exported, _, not_exported): no such tuple; these differ in one argument
          near: Candidate(lib/helpers.py, not_exported, lib/helpers.py, not_exported)
          [rule rules/resolution.dl:34] Candidate(m, n, df, dn) <- StarImport(m, _, t), Exported(t, n), Candidate(t, n, df, dn), !Binds(m, n);
            with m = consumer.py, n = not_exported, dn = not_exported, t = lib/helpers.py
            holds: StarImport(consumer.py, 1:5, lib/helpers.py)
            fails: Exported(lib/helpers.py, not_exported): no such tuple; these differ in one argument
              near: Exported(lib/helpers.py, public_helper)
              [rule rules/resolution.dl:38] Exported(m, n) <- Candidate(m, n, _, _), StarImported(m), !HasAll(m), (!n.is_private());
                with m = lib/helpers.py, n = not_exported
                holds: Candidate(lib/helpers.py, not_exported, lib/helpers.py, not_exported)
                holds: StarImported(lib/helpers.py)
                fails: !HasAll(lib/helpers.py): the rule requires this tuple to be absent, and it holds
  [rule rules/relationships.dl:31] Calls(f, s, m, n) <- CallRef(f, s, m, n), (m.is_external());
    with f = consumer.py, m = consumer.py, n = not_exported
    holds: CallRef(consumer.py, 6:0, consumer.py, not_exported)
    fails: (m.is_external()): the condition is false for these bindings
  [rule rules/relationships.dl:32] Calls(f, s, df, q) <- MethodCall(f, s), MemberRef(f, s, df, q), (f != df);
    with f = consumer.py, q = not_exported
    fails: MethodCall(consumer.py, 6:0): no such tuple
"#
    );
}

#[test]
fn cycle_derivations_never_loop_and_pick_the_two_file_cycle() {
    // a -> c -> a is shorter than a -> b -> c -> a: the group fact of a.py
    // shows the two-file cycle as its evidence.
    let text = explain("import_cycles", "InCycle(a.py)");
    let evidence: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("import cycle"))
        .map(str::trim)
        .collect();
    assert_eq!(
        evidence,
        [
            "[base a.py] import cycle a.py -> c.py -> a.py",
            "[base b.py] import cycle b.py -> c.py -> a.py -> b.py",
        ]
    );
}

#[test]
fn an_unknown_name_in_the_pattern_is_reported() {
    assert_eq!(
        explain("reexport_chain", r#"DependsOn("client.py", "nope.py")"#),
        "DependsOn(\"client.py\", \"nope.py\") does not hold.\n  `nope.py` names no indexed file, marker, name or position, so no tuple can hold it.\n"
    );
}

#[test]
fn a_missing_base_fact_lists_facts_that_differ_in_one_argument() {
    assert_eq!(
        explain(
            "reexport_chain",
            r#"ImportStmt("client.py", "1:5", "api/impl/core.py")"#
        ),
        r#"ImportStmt("client.py", "1:5", "api/impl/core.py") does not hold.
  [base] the front end produced no such fact
    fails: ImportStmt(client.py, 1:5, api/impl/core.py): no such tuple; these differ in one argument
      near: ImportStmt(client.py, 1:5, api/__init__.py)
"#
    );
}

#[test]
fn malformed_patterns_are_errors_that_list_relations_and_arguments() {
    let service = open("reexport_chain");
    for pattern in ["Nope(_)", "DependsOn(_)", "Bogus(x", "Reaches(_, _)", ""] {
        let error = service.explain(pattern).expect_err(pattern).to_string();
        assert!(
            error.contains("Available relations:")
                && error.contains("  DependsOn(file, dependency)  [derived]")
                && error.contains("  ImportStmt(file, site, module)  [base]"),
            "{pattern}: {error}"
        );
    }
}

#[test]
fn cli_explain_json_nests_rules_premises_and_sources() {
    let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args([
            "explain",
            r#"DependsOn("client.py", "api/__init__.py")"#,
            "--json",
            "--root",
        ])
        .arg(fixture("reexport_chain"))
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(json["holds"], true);
    let tree = &json["derivations"][0];
    assert_eq!(tree["fact"], "DependsOn(client.py, api/__init__.py)");
    assert_eq!(tree["rule"]["file"], "rules/dependencies.dl");
    assert_eq!(tree["rule"]["line"], 22);
    let import = &tree["premises"][0]["premises"][0];
    assert_eq!(import["kind"], "base");
    assert_eq!(
        import["source"],
        serde_json::json!({"file": "client.py", "line": 1, "column": 5, "text": "from api import handler"})
    );
    // The marker test is a guard, not a premise.
    assert_eq!(tree["premises"].as_array().map(Vec::len), Some(1));

    let bad = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["explain", "Nope(_)", "--root"])
        .arg(fixture("reexport_chain"))
        .output()
        .expect("runs");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("Calls(file, site, target, name)"));
}

#[test]
fn dump_writes_text_and_json_per_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["explain", "--dump"])
        .arg(dir.path())
        .arg("b.py")
        .arg("--root")
        .arg(fixture("import_cycles"))
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = std::fs::read_to_string(dir.path().join("b.py.txt")).expect("text dump");
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("b.py.json")).expect("json dump"),
    )
    .expect("json");
    assert_eq!(json["file"], "b.py");
    let facts: Vec<&str> = json["derivations"]
        .as_array()
        .expect("derivations")
        .iter()
        .map(|d| d["fact"].as_str().unwrap_or_default())
        .collect();
    // Every @output tuple whose first argument is b.py, in catalogue order.
    assert_eq!(
        facts,
        [
            "InCycle(b.py)",
            "CycleEdge(b.py, c.py)",
            "DependsOn(b.py, c.py)",
            "DependentOf(b.py, a.py)",
            "RuntimeDependsOn(b.py, c.py)",
            "Invokes(b.py, 5:13, c.py, finish)",
            "CallsSymbol(b.py, 5:13, step, c.py, finish)",
            "Imports(b.py, 1:7, c.py)",
            "Calls(b.py, 5:13, c.py, finish)",
            "Resolves(b.py, step, b.py, step)",
            "Warning(b.py, 1:7, circular_import)",
        ]
    );
    assert!(text.starts_with("# b.py\n\n## Derivations\n\nInCycle(b.py)\n"));
    assert!(text.contains("    [base b.py:1:7] import c\n"), "{text}");
    assert!(!dir.path().join("a.py.txt").exists());
}

/// Ids follow interning order, which parallel analysis varies between runs
/// on large projects; explanations must not depend on it.
#[test]
fn explanations_do_not_depend_on_interning_order() {
    let root = fixture("import_cycles");
    let files: Vec<(String, String)> = xfile::workspace::discover::discover(&root, &[])
        .files
        .into_iter()
        .map(|f| (f.path, f.text))
        .collect();
    let explain_with = |reverse: bool| {
        let mut engine = xfile::engine::Engine::new(Vec::new());
        if reverse {
            for (path, _) in files.iter().rev() {
                engine.interner().node(path);
            }
        }
        engine.apply(xfile::engine::Change::texts(files.iter().cloned()));
        xfile::service::explain::explain(&engine, "InCycle(_)")
            .expect("valid")
            .to_text()
    };
    let forward = explain_with(false);
    assert_eq!(forward, explain_with(true));
    assert_eq!(forward, explain("import_cycles", "InCycle(_)"));
    // Of a.py's two runtime imports, b.py comes first by text, and groups
    // are named by their first file by path.
    assert!(forward.contains(
        "  CycleEdge(a.py, b.py)\n    [rule rules/cycles.dl:22] CycleEdge(a, b) <- RuntimeDependsOn(a, b), CycleGroup(a, g), CycleGroup(b, h), (g == h);\n"
    ));
    assert!(forward.contains("    CycleGroup(c.py, a.py)\n"));
}

/// A re-export chain a thousand modules long: the derivation is a thousand
/// Resolves steps deep, and neither deepening nor rendering overflows.
#[test]
fn a_very_long_reexport_chain_explains_without_overflow() {
    const LENGTH: usize = 1000;
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..LENGTH {
        let text = if i + 1 < LENGTH {
            format!("from m{} import f\n", i + 1)
        } else {
            "def f():\n    pass\n".to_string()
        };
        std::fs::write(dir.path().join(format!("m{i}.py")), text).expect("write");
    }
    std::fs::write(dir.path().join("main.py"), "from m0 import f\n\nf()\n").expect("write");
    let service = xfile::service::Service::open(dir.path()).expect("opens");
    let text = service
        .explain(r#"Calls("main.py", "3:0", _, _)"#)
        .expect("valid")
        .to_text();
    assert!(
        text.starts_with("Calls(main.py, 3:0, m999.py, f)\n"),
        "{text}"
    );
    assert_eq!(text.matches("[base m").count(), LENGTH + 1);
}

/// A warning is a derived tuple like any other: its tree ends at
/// the dynamic pattern's source line (no relationship comes of it).
#[test]
fn a_warning_is_explained_down_to_the_dynamic_code() {
    assert_eq!(
        explain(
            "warnings_patterns",
            r#"Warning("app/execution.py", "2:4", exec_eval)"#
        ),
        r#"
Warning(app/execution.py, 2:4, exec_eval)
  [rule rules/warnings.dl:21] Warning(f, s, p) <- DynamicSite(f, s, p), !TestModule(f);
  DynamicSite(app/execution.py, 2:4, exec_eval)
    [base app/execution.py:2:4] exec(code)
  !TestModule(app/execution.py)
    [absent]

"#
        .trim_start()
    );
}

/// Exec in a test module is expected, and the explanation says so.
#[test]
fn a_warning_left_out_in_a_test_module_is_a_near_miss_that_says_why() {
    let text = explain(
        "warnings_patterns",
        r#"Warning("tests/test_dynamic_patterns.py", "24:4", exec_eval)"#,
    );
    assert!(
        text.contains(
            "    holds: DynamicSite(tests/test_dynamic_patterns.py, 24:4, exec_eval)\n    fails: !TestModule(tests/test_dynamic_patterns.py): the rule requires this tuple to be absent, and it holds\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("    fails: (!matches!(p, Pattern::DynamicDispatch | Pattern::MonkeyPatching | Pattern::ExecEval | Pattern::Decorator)): the condition is false for these bindings\n"),
        "{text}"
    );
}

#[test]
fn a_conditional_binding_is_explained_down_to_the_definition_it_may_be() {
    // compat.py binds Encoder by an import, or by its own class if that
    // fails: app.py's Encoder may be the class, and says why.
    assert_eq!(
        explain(
            "context_conditional",
            r#"MayResolve("app.py", "Encoder", _, _)"#
        ),
        r#"
MayResolve(app.py, Encoder, compat.py, Encoder)
  [rule rules/resolution.dl:69] MayResolve(m, n, df, dn) <- BindsImported(m, n, t, tn), MayResolve(t, tn, df, dn);
  BindsImported(app.py, Encoder, compat.py, Encoder)
    [base app.py:1] from compat import Encoder, dumps
  MayResolve(compat.py, Encoder, compat.py, Encoder)
    [rule rules/resolution.dl:67] MayResolve(m, n, m, n) <- DefinesConditionally(m, n);
    DefinesConditionally(compat.py, Encoder)
      [base compat.py:4] class Encoder:

"#
        .trim_start()
    );
}
