//! Hostile input, round two: syntax nested past any real code,
//! chains that made the work quadratic, an import ring of thousands of
//! files, very long lines. Each test is named for the finding it repeats;
//! large inputs are generated at test time.

#![cfg(unix)]

use crate::common;
use common::write;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use xfile::service::Service;

use common::mcp_client::Client;

/// Runs `f` on a thread of its own and fails the test if it has not
/// finished in two minutes: a hang must fail, not stall the suite.
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    common::bounded(Duration::from_secs(120), f).unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn xfile(root: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(args)
        .arg("--root")
        .arg(root)
        .arg("--no-cache")
        .output()
        .unwrap()
}

/// The deep shapes that overflowed the stack: an attribute chain on a line of its own,
/// as a base class and as a decorator.
fn deep_tree(links: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let chain = format!("a{}", ".b".repeat(links));
    write(dir.path(), "deep.py", &format!("import a\nx = {chain}\n"));
    write(
        dir.path(),
        "base.py",
        &format!("import a\nclass C({chain}):\n    pass\n"),
    );
    write(
        dir.path(),
        "decorated.py",
        &format!("import a\n@{chain}\ndef f():\n    pass\n"),
    );
    write(dir.path(), "a.py", "def b():\n    pass\n");
    write(
        dir.path(),
        "main.py",
        "import deep\nimport base\nimport decorated\nfrom a import b\nb()\n",
    );
    dir
}

#[test]
fn a_35k_attribute_chain_no_longer_crash_loops_the_server_finding_1() {
    let dir = deep_tree(35_000);
    let mut client = Client::start(dir.path());
    for file in ["main.py", "deep.py", "base.py", "decorated.py"] {
        let (error, text) = client.call("read_with_context", json!({ "file_path": file }));
        assert!(!error, "{file}: {text:.300}");
    }
    let (error, text) = client.call("get_dependents", json!({ "file_path": "a.py" }));
    assert!(!error, "{text:.300}");
    assert!(text.contains("main.py"), "{text:.300}");
    let (error, text) = client.call("get_warnings", json!({}));
    assert!(!error, "{text:.300}");
    // The server is still there: it answers once more and exits cleanly.
    let (error, _) = client.call("get_dependencies", json!({ "file_path": "main.py" }));
    assert!(!error);
    assert!(client.disconnect().success());
}

#[test]
fn chains_of_200k_links_as_value_base_and_decorator_index_with_a_parse_mark_finding_1() {
    let dir = deep_tree(200_000);
    let root = dir.path().to_path_buf();
    let output = bounded("xfile index", move || xfile(&root, &["index", "--json"]));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["files"], 5, "{summary}");
    assert_eq!(summary["parse_errors"], 3, "{summary}");
    let root = dir.path().to_path_buf();
    let service = bounded("Service::open", move || Service::open(&root).unwrap());
    for file in ["deep.py", "base.py", "decorated.py"] {
        let error = service
            .engine()
            .facts(file)
            .and_then(|facts| facts.parse_error.clone())
            .unwrap_or_else(|| panic!("{file} has no parse mark"));
        assert!(error.message.contains("nested more than"), "{error:?}");
    }
    // The shallow files around them are analysed as ever.
    let deps = service.dependencies("main.py").unwrap();
    assert!(
        deps.iter()
            .any(|r| r.target_file == "a.py" && r.target_symbol.as_deref() == Some("b")),
        "{deps:?}"
    );
}

/// Expressions and sites a file's facts hold: what extraction built.
fn extracted_work(source: &str) -> usize {
    let facts = xfile::python::extract(source);
    assert!(facts.parse_error.is_none(), "{:?}", facts.parse_error);
    facts.semantic.expressions.len() + facts.sites.len()
}

#[test]
fn method_chains_cost_linear_work_not_quadratic_finding_3() {
    // `x = a.b().b()...`: every call asked for the whole chain below it,
    // so 8,000 links took 45 s and 3 GB. Work now grows with the chain.
    let chain = |links: usize| format!("import a\nx = a{}\n", ".b()".repeat(links));
    let short = extracted_work(&chain(50));
    let long = extracted_work(&chain(400));
    assert!(
        long <= 8 * short * 3 / 2,
        "50 links: {short}, 400 links: {long} (more than linear)"
    );
    // Past the nesting limit the file is a parse mark, found in linear time.
    let facts = bounded("an 8,000-link chain", move || {
        xfile::python::extract(&chain(8_000))
    });
    assert!(facts.parse_error.is_some());
    // A chain the token scan lets through is measured on the tree, which
    // names the line where the nesting passes the limit.
    let facts = xfile::python::extract(&format!("import a\n\nx = a{}\n", ".b".repeat(3_000)));
    let error = facts.parse_error.expect("a 3,000-link chain is too deep");
    assert_eq!(
        (error.line, error.message.contains("nested more than")),
        (3, true)
    );
}

/// Every shape of deep syntax the fuzzing harness also generates, at a
/// million links: each degrades to a parse mark and none aborts.
#[test]
fn a_million_links_of_every_shape_degrade_to_a_parse_mark_finding_1() {
    const LINKS: usize = 1_000_000;
    let shapes: Vec<(&str, String)> = vec![
        ("attribute", format!("x = a{}\n", ".b".repeat(LINKS))),
        ("call", format!("x = a{}\n", "()".repeat(LINKS))),
        ("subscript", format!("x = a{}\n", "[0]".repeat(LINKS))),
        ("binary", format!("x = a{}\n", " + a".repeat(LINKS))),
        (
            "brackets",
            format!("x = {}a{}\n", "(".repeat(LINKS), ")".repeat(LINKS)),
        ),
        ("unary", format!("x = {}a\n", "-".repeat(LINKS))),
        ("not", format!("x = {}a\n", "not ".repeat(LINKS))),
        ("lambda", format!("x = {}a\n", "lambda: ".repeat(LINKS))),
        (
            "ternary",
            format!("x = {}a\n", "a if b else ".repeat(LINKS / 4)),
        ),
    ];
    for (shape, source) in shapes {
        let facts = bounded(shape, move || xfile::python::extract(&source));
        let error = facts
            .parse_error
            .unwrap_or_else(|| panic!("{shape}: no parse mark"));
        assert!(
            error.message.contains("nested more than"),
            "{shape}: {error:?}"
        );
    }
}

/// `rN.py: import r(N+1)`, closed into a ring.
fn ring(files: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..files {
        write(
            dir.path(),
            &format!("r{i}.py"),
            &format!("import r{}\n", (i + 1) % files),
        );
    }
    dir
}

#[test]
fn an_import_ring_of_2000_files_gives_bounded_warnings_and_logs_once_finding_6() {
    const FILES: usize = 2_000;
    let dir = ring(FILES);
    let root = dir.path().to_path_buf();
    let output = bounded("xfile index", move || xfile(&root, &["index", "--json"]));
    assert!(output.status.success());
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["warnings"]["circular_import"], FILES, "{summary}");
    let log = dir
        .path()
        .join(".cross_file_context_logs")
        .join("warnings.jsonl");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(logged.lines().count(), FILES);
    // Each message names a bounded part of the ring, not all of it.
    let longest = logged.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 2_000, "a log line of {longest} bytes");
    // Indexing again logs nothing new: the whole log is known.
    let root = dir.path().to_path_buf();
    let again = bounded("xfile index again", move || xfile(&root, &["index"]));
    assert!(again.status.success());
    assert_eq!(std::fs::read_to_string(&log).unwrap(), logged);

    let mut client = Client::start(dir.path());
    let (error, one) = client.call("get_warnings", json!({ "limit": 1 }));
    assert!(!error, "{one:.300}");
    assert!(one.len() < 4_000, "one warning took {} bytes", one.len());
    let (error, graph) = client.call("get_relationship_graph", json!({}));
    assert!(!error, "{graph:.300}");
    assert!(
        graph.len() < 16_000,
        "the graph summary took {} bytes",
        graph.len()
    );
    let (error, cycles) = client.call("get_relationship_graph", json!({ "detail": "cycles" }));
    assert!(!error, "{cycles:.300}");
    assert!(cycles.contains("more modules"), "{cycles:.600}");
}

#[test]
fn a_short_cycle_is_named_in_full_finding_6() {
    let dir = ring(3);
    let service = Service::open(dir.path()).unwrap();
    let warnings = service.warnings(Some("r0.py")).unwrap();
    let messages: Vec<&str> = warnings
        .warnings
        .iter()
        .map(|w| w.message.as_str())
        .collect();
    assert_eq!(
        messages,
        ["⚠️ Circular import detected: r0.py → r1.py → r2.py → r0.py"]
    );
}

#[test]
fn a_one_megabyte_line_is_read_within_the_budget_finding_14() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "one.py",
        &format!("x = \"{}\"\n", "y".repeat(1_000_000)),
    );
    write(
        dir.path(),
        "fn.py",
        &format!("def f(a=\"{}\"):\n    return a\n", "y".repeat(3_000_000)),
    );
    let mut client = Client::start(dir.path());
    let (error, text) = client.call("read_with_context", json!({ "file_path": "one.py" }));
    assert!(!error, "{text:.300}");
    assert!(text.len() < 100_000, "{} bytes", text.len());
    assert!(text.contains("cut after"), "{}", &text[text.len() - 300..]);
    let (error, outline) = client.call("get_file_outline", json!({ "file_path": "fn.py" }));
    assert!(!error, "{outline:.300}");
    assert!(outline.len() < 100_000, "{} bytes", outline.len());
    assert!(outline.contains("def f(a=\"yyy"), "{outline:.300}");
    assert!(outline.contains("…"), "{outline:.300}");
}

#[test]
fn no_answer_echoes_an_oversized_argument_past_the_budget_finding_10() {
    let sample = common::copy_sample();
    let mut client = Client::start(sample.path());
    let big = "x".repeat(100_000);
    let calls = [
        ("get_relationship_graph", json!({ "path_prefix": big })),
        ("get_symbol", json!({ "name": big })),
        ("query_relation", json!({ "pattern": big })),
        ("explain", json!({ "fact": big })),
        ("read_with_context", json!({ "file_path": big })),
        ("get_callers", json!({ "symbol": big })),
        (
            "get_dependents",
            json!({ "file_path": "app/bot.py", "symbol": big }),
        ),
        ("get_warnings", json!({ "file_path": big })),
        ("search_with_context", json!({ "query": big })),
    ];
    for (tool, arguments) in calls {
        let (error, text) = client.call(tool, arguments);
        assert!(error, "{tool}: {text:.300}");
        assert!(text.contains("invalid_parameter"), "{tool}: {text:.300}");
        assert!(text.len() < 2_000, "{tool}: {} bytes", text.len());
    }
}
