//! Warnings about code static analysis cannot follow, in source and test
//! modules, on fixture projects, every expected warning asserted exactly.

use crate::common;

use common::{lines, open};
use xfile::service::Service;
use xfile::service::model::Warning;

/// `file:line:column type severity` per warning.
fn rows(warnings: &[Warning]) -> Vec<String> {
    warnings
        .iter()
        .map(|w| {
            format!(
                "{}:{}:{} {} {}",
                w.file,
                w.line,
                w.column,
                w.warning_type.as_str(),
                serde_json::to_value(w.severity).unwrap().as_str().unwrap()
            )
        })
        .collect()
}

fn warnings_of(service: &Service, file: &str) -> Vec<String> {
    rows(&service.warnings(Some(file)).unwrap().warnings)
}

fn find(service: &Service, file: &str, line: u32) -> Warning {
    service
        .warnings(Some(file))
        .unwrap()
        .warnings
        .into_iter()
        .find(|w| w.line == line)
        .unwrap_or_else(|| panic!("no warning at {file}:{line}"))
}

#[test]
fn every_pattern_warns_in_source_modules_fr30_to_fr37() {
    let service = open("warnings_patterns");
    let all = rows(&service.warnings(None).unwrap().warnings);
    let source: Vec<&str> = all
        .iter()
        .map(String::as_str)
        .filter(|r| r.starts_with("app/"))
        .collect();
    assert_eq!(
        source,
        [
            "app/cycle_a.py:1:5 circular_import warning",
            "app/cycle_b.py:1:7 circular_import warning",
            "app/decorators.py:6:1 decorator info",
            "app/decorators.py:11:1 decorator info",
            "app/dispatch.py:2:11 dynamic_dispatch warning",
            "app/dynamic_imports.py:6:11 dynamic_import warning",
            "app/dynamic_imports.py:10:11 dynamic_import warning",
            "app/dynamic_imports.py:14:11 dynamic_import warning",
            "app/execution.py:2:4 exec_eval warning",
            "app/execution.py:3:11 exec_eval warning",
            "app/metaclasses.py:5:17 metaclass info",
            "app/patching.py:5:0 monkey_patching warning",
            "app/patching.py:6:0 monkey_patching warning",
        ]
    );
}

#[test]
fn test_modules_keep_only_dynamic_import_and_metaclass_warnings_dd3_fr31_ec6_ec7() {
    // The test module has every pattern; dispatch, patching, exec and the
    // decorator are expected there (mocking, fixtures) and stay silent.
    let service = open("warnings_patterns");
    assert_eq!(
        warnings_of(&service, "tests/test_dynamic_patterns.py"),
        [
            "tests/test_dynamic_patterns.py:11:11 dynamic_import warning",
            "tests/test_dynamic_patterns.py:41:11 metaclass info",
        ]
    );
    // They are still untrackable: the export says so.
    let export = service.export();
    let entry = |path: &str| {
        export
            .files
            .iter()
            .find(|f| f.relative_path == path)
            .unwrap()
            .clone()
    };
    let test = entry("tests/test_dynamic_patterns.py");
    assert!(test.test_module);
    let names: Vec<&str> = test
        .untrackable_patterns
        .iter()
        .map(|p| p.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "dynamic_import",
            "dynamic_dispatch",
            "monkey_patching",
            "exec_eval",
            "decorator",
            "metaclass"
        ]
    );
    assert!(!entry("app/dispatch.py").test_module);
    assert!(entry("app/models.py").untrackable_patterns.is_empty());
    // The export's warnings are the warnings, notices are apart.
    assert_eq!(export.warnings.len(), 15);
    assert!(export.notices.is_empty());
}

#[test]
fn messages_follow_tdd_3_9_1() {
    let service = open("warnings_patterns");
    let dispatch = find(&service, "app/dispatch.py", 2);
    assert_eq!(
        dispatch.message,
        "⚠️ Dynamic dispatch detected in app/dispatch.py:2 - relationship tracking unavailable for `getattr(handler, action)`"
    );
    assert_eq!(dispatch.pattern, "return getattr(handler, action)()");
    assert_eq!(
        dispatch.guidance,
        Some("Consider using explicit function calls if the function name is known.")
    );
    assert_eq!(
        find(&service, "app/patching.py", 6).message,
        "⚠️ Monkey patching detected in app/patching.py:6 - `Model.save` reassigned, relationship tracking may be inaccurate"
    );
    assert_eq!(
        find(&service, "app/execution.py", 2).message,
        "⚠️ Dynamic code execution detected in app/execution.py:2 - `exec()`/`eval()` prevents static analysis, relationships may be incomplete"
    );
    assert_eq!(
        find(&service, "app/decorators.py", 6).message,
        "ℹ️ Decorator `register` in app/decorators.py:6 may modify function behavior - tracking original definition only"
    );
    assert_eq!(
        find(&service, "app/metaclasses.py", 5).message,
        "ℹ️ Metaclass detected in app/metaclasses.py:5 - class `Registered` uses metaclass `Meta`, runtime behavior may differ from static definition"
    );
    assert_eq!(
        find(&service, "app/dynamic_imports.py", 10).message,
        "⚠️ Dynamic import detected: `__import__(name)` - relationship tracking unavailable"
    );
    // The full cycle path, from the warned file back to it.
    assert_eq!(
        find(&service, "app/cycle_b.py", 1).message,
        "⚠️ Circular import detected: app/cycle_b.py → app/cycle_a.py → app/cycle_b.py"
    );
    let json = serde_json::to_value(&dispatch).unwrap();
    for key in [
        "type",
        "file",
        "line",
        "column",
        "severity",
        "pattern",
        "message",
        "explanation",
    ] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
}

#[test]
fn negative_cases_constant_getattr_literal_import_and_local_attributes() {
    let service = open("warnings_patterns");
    // `getattr(handler, "run")()` on line 7 is not dynamic.
    assert_eq!(
        warnings_of(&service, "app/dispatch.py"),
        ["app/dispatch.py:2:11 dynamic_dispatch warning"]
    );
    // `local.name = ...` and `self.ready = ...` are no monkey patching.
    assert_eq!(
        warnings_of(&service, "app/patching.py"),
        [
            "app/patching.py:5:0 monkey_patching warning",
            "app/patching.py:6:0 monkey_patching warning"
        ]
    );
    // A local function called eval is not the built-in (line 11).
    assert_eq!(warnings_of(&service, "app/execution.py").len(), 2);
    // property, setter and staticmethod keep the definition as written.
    assert_eq!(warnings_of(&service, "app/decorators.py").len(), 2);
    // A class without a metaclass, pytest.mark in a test module.
    assert_eq!(warnings_of(&service, "app/metaclasses.py").len(), 1);
}

#[test]
fn literal_import_module_is_an_import_and_dynamic_ones_relate_nothing_ec2_fr42() {
    let service = open("warnings_patterns");
    let imports: Vec<String> = lines(&service)
        .into_iter()
        .filter(|l| l.starts_with("app/dynamic_imports.py") && l.contains(" import "))
        .collect();
    assert_eq!(
        imports,
        [
            "app/dynamic_imports.py:1:7 import <stdlib:importlib> - -",
            "app/dynamic_imports.py:2:5 import <stdlib:importlib> import_module -",
            "app/dynamic_imports.py:18:38 import app/plugins/csv_plugin.py - -",
        ]
    );
    // The dynamic dispatch relates to getattr itself, never to a guess.
    let dispatch: Vec<String> = lines(&service)
        .into_iter()
        .filter(|l| l.starts_with("app/dispatch.py"))
        .collect();
    assert_eq!(
        dispatch,
        [
            "app/dispatch.py:2:11 function_call <builtin:getattr> getattr -",
            "app/dispatch.py:7:11 function_call <builtin:getattr> getattr -",
        ]
    );
}

#[test]
fn suppression_levels_and_precedence_tdd_3_9_4_fr39_fr40() {
    let service = open("warnings_suppression");
    let report = service.warnings(None).unwrap();
    assert_eq!(
        rows(&report.warnings),
        [
            // warn_on_wildcards is on.
            "app/star.py:1:5 wildcard_import warning",
            // Only dynamic_dispatch is suppressed for app/utils.py.
            "app/utils.py:3:4 exec_eval warning",
            // Test modules still warn about dynamic imports.
            "tests/test_utils.py:6:11 dynamic_import warning",
        ]
    );
    // Per reason, the most specific first: legacy/old.py's exec counts as
    // file_type, its import as file; app/base.py's and the test module's
    // metaclasses as type; generated/** and vendor/ as directory.
    let suppressed: Vec<(&str, usize)> = report.suppressed.into_iter().collect();
    assert_eq!(
        suppressed,
        [("directory", 2), ("file", 2), ("file_type", 2), ("type", 2)]
    );
    let per_file = |file: &str| {
        service
            .warnings(Some(file))
            .unwrap()
            .suppressed
            .into_iter()
            .collect::<Vec<_>>()
    };
    assert_eq!(per_file("legacy/old.py"), [("file", 1), ("file_type", 1)]);
    assert_eq!(per_file("tests/test_legacy.py"), [("file", 1)]);
    assert_eq!(per_file("vendor/lib.py"), [("directory", 1)]);
    assert_eq!(per_file("generated/models_gen.py"), [("directory", 1)]);
}

#[test]
fn invalid_suppression_entries_are_config_notices_and_ignored() {
    let service = open("warnings_suppression");
    let notices: Vec<String> = service
        .warnings(None)
        .unwrap()
        .notices
        .into_iter()
        .map(|n| n.message)
        .collect();
    assert_eq!(notices.len(), 4, "{notices:?}");
    for expected in ["missing/file.py", "bad[glob", "app/nope.py", "no_such_type"] {
        assert!(
            notices.iter().any(|n| n.contains(expected)),
            "{expected}: {notices:?}"
        );
    }
}

#[test]
fn wildcard_imports_warn_only_with_warn_on_wildcards() {
    let service = open("warnings_patterns");
    assert_eq!(warnings_of(&service, "app/star.py"), Vec::<String>::new());
    let star = service
        .export()
        .files
        .into_iter()
        .find(|f| f.relative_path == "app/star.py")
        .unwrap();
    assert_eq!(
        star.untrackable_patterns
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>(),
        ["wildcard_import"]
    );
}

#[test]
fn pytest_ini_python_files_and_testpaths_mark_test_modules_dd3() {
    let service = open("warnings_pytest_ini");
    assert_eq!(
        rows(&service.warnings(None).unwrap().warnings),
        ["pkg/app.py:2:11 dynamic_dispatch warning"]
    );
}

#[test]
fn pyproject_testpaths_mark_test_modules_dd3() {
    let service = open("warnings_pyproject");
    assert_eq!(
        rows(&service.warnings(None).unwrap().warnings),
        ["pkg/app.py:2:4 exec_eval warning"]
    );
}

#[test]
fn warnings_jsonl_logs_each_warning_once_fr41() {
    let dir = common::copy_fixture("warnings_patterns");
    let service = Service::open(dir.path()).unwrap();
    assert_eq!(service.log_warnings().unwrap(), 15);
    let log = dir.path().join(".cross_file_context_logs/warnings.jsonl");
    let text = std::fs::read_to_string(&log).unwrap();
    let entries: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries.len(), 15);
    let first = &entries[0];
    for key in [
        "timestamp",
        "type",
        "file",
        "line",
        "severity",
        "pattern",
        "message",
    ] {
        assert!(first.get(key).is_some(), "missing {key} in {first}");
    }
    // Indexing again logs nothing new.
    let again = Service::open(dir.path()).unwrap();
    assert_eq!(again.log_warnings().unwrap(), 0);
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 15);
}

#[test]
fn warning_logging_can_be_switched_off() {
    let dir = common::copy_fixture("warnings_patterns");
    std::fs::write(
        dir.path().join(".cross_file_context_links.yml"),
        "enable_warning_logging: false\n",
    )
    .unwrap();
    let service = Service::open(dir.path()).unwrap();
    assert_eq!(service.log_warnings().unwrap(), 0);
    assert!(!dir.path().join(".cross_file_context_logs").exists());
}

#[test]
fn read_with_context_names_own_and_injected_definitions_warnings() {
    let dir = common::copy_fixture("warnings_patterns");
    std::fs::write(
        dir.path().join("app/consumer.py"),
        "from app.decorators import handler\nfrom app.dispatch import handle\n\nhandler()\nhandle(None, \"x\")\nexec(\"x = 1\")\n",
    )
    .unwrap();
    let service = Service::open(dir.path()).unwrap();
    let text = service.read_with_context("app/consumer.py").unwrap();
    let context = text.split("[File Content]").next().unwrap();
    // Summarized by type for the file read, by place for the definitions
    // shown (a decorator on handler, dynamic dispatch inside handle).
    assert!(
        context.contains(
            "Warnings: 1 exec_eval in these lines (get_warnings app/consumer.py); decorator at app/decorators.py:6, dynamic_dispatch at app/dispatch.py:2 in the definitions shown.\n"
        ),
        "{context}"
    );
    // Warnings elsewhere in those files are not about the injected symbols.
    assert!(!context.contains("functools.lru_cache"), "{context}");
}

#[test]
fn cli_warnings_command_text_and_json() {
    let root = common::fixture("warnings_patterns");
    let run = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_xfile"))
            .arg("warnings")
            .args(extra)
            .arg("--root")
            .arg(&root)
            .output()
            .unwrap()
    };
    let text = run(&["app/dispatch.py"]);
    assert!(text.status.success());
    let stdout = String::from_utf8(text.stdout).unwrap();
    // Counts by type with the guidance once, then each warning.
    assert!(
        stdout.starts_with(
            "1 warnings (0 suppressed by configuration): dynamic_dispatch 1\n  dynamic_dispatch: Consider"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "\napp/dispatch.py:2:11  warning  dynamic_dispatch  return getattr(handler, action)()\n"
        ),
        "{stdout}"
    );
    let json = run(&["--json"]);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["warnings"].as_array().unwrap().len(), 15);
    assert!(report["notices"].as_array().unwrap().is_empty());
    let missing = run(&["nope.py"]);
    assert_eq!(missing.status.code(), Some(2));
}

/// Every warning with everything it says, as JSON lines.
fn rendered(report: &xfile::service::model::WarningReport) -> Vec<String> {
    report
        .warnings
        .iter()
        .map(|w| serde_json::to_string(w).unwrap())
        .collect()
}

/// The key a logged warning is known by.
fn logged_keys(log: &std::path::Path) -> Vec<(String, String, u64, u64, String)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            (
                v["type"].as_str().unwrap().to_string(),
                v["file"].as_str().unwrap().to_string(),
                v["line"].as_u64().unwrap(),
                v["column"].as_u64().unwrap(),
                v["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// After each edit, the warnings a live service renders (reusing the files
/// whose warnings did not change) are those a fresh index renders, the
/// message of a cycle through an unedited file included; and the log gets
/// each warning once, written by the update's follow-up, also when it goes and comes back, and everything
/// again when the log is removed.
#[test]
fn warnings_after_edits_match_a_fresh_index_and_are_logged_once_fr41() {
    use xfile::service::live::Live;
    let dir = common::copy_fixture("warnings_patterns");
    let root = dir.path();
    let log = root.join(".cross_file_context_logs/warnings.jsonl");
    let live = Live::open(root).unwrap();
    assert_eq!(live.read(Service::log_warnings).unwrap(), 15);
    let mut seen: std::collections::BTreeSet<_> = logged_keys(&log).into_iter().collect();
    let dispatch = root.join("app/dispatch.py");
    let original = std::fs::read_to_string(&dispatch).unwrap();
    let added = format!("{original}\n\ndef more(obj, name):\n    return getattr(obj, name)()\n");
    // Each step: what it is, and the files it writes (or deletes: `None`).
    type Step<'a> = (&'a str, Vec<(&'a str, Option<String>)>);
    let steps: Vec<Step> = vec![
        // cycle_a.py is not edited, but its cycle becomes a → b → c → a.
        (
            "a longer cycle",
            vec![
                (
                    "app/cycle_b.py",
                    Some("import app.cycle_c\n\n\ndef pong():\n    return app.cycle_c\n".into()),
                ),
                ("app/cycle_c.py", Some("import app.cycle_a\n".into())),
            ],
        ),
        (
            "a new dispatch",
            vec![("app/dispatch.py", Some(added.clone()))],
        ),
        (
            "the dispatch gone",
            vec![("app/dispatch.py", Some(original.clone()))],
        ),
        ("the dispatch back", vec![("app/dispatch.py", Some(added))]),
        ("the cycle broken", vec![("app/cycle_c.py", None)]),
    ];
    for (step, files) in steps {
        let mut paths = Vec::new();
        for (file, text) in files {
            let path = root.join(file);
            match text {
                Some(text) => std::fs::write(&path, text).unwrap(),
                None => std::fs::remove_file(&path).unwrap(),
            }
            paths.push(path);
        }
        live.apply(&paths, "test").unwrap();
        let now = live.read(|s| s.warnings(None).unwrap());
        let fresh = Service::open(root).unwrap().warnings(None).unwrap();
        assert_eq!(rendered(&now), rendered(&fresh), "after {step}");
        assert_eq!(now.suppressed, fresh.suppressed, "after {step}");
        let new: Vec<_> = now
            .warnings
            .iter()
            .map(|w| {
                let v = serde_json::to_value(w).unwrap();
                (
                    v["type"].as_str().unwrap().to_string(),
                    w.file.clone(),
                    u64::from(w.line),
                    u64::from(w.column),
                    w.message.clone(),
                )
            })
            .filter(|key| seen.insert(key.clone()))
            .collect();
        // The update's own follow-up logs them (whoever applied it); an
        // explicit call then finds nothing left to log.
        common::wait_until(&format!("the log holds what {step} added: {new:?}"), || {
            logged_keys(&log)
                .into_iter()
                .collect::<std::collections::BTreeSet<_>>()
                == seen
        });
        assert_eq!(live.read(Service::log_warnings).unwrap(), 0, "after {step}");
    }
    // Each once: the cycle steps logged new messages, the dispatch once.
    assert_eq!(logged_keys(&log).len(), seen.len());
    assert!(seen.iter().any(|k| k.4.contains("cycle_c")), "{seen:?}");
    std::fs::remove_file(&log).unwrap();
    let count = live.read(|s| s.warnings(None).unwrap().warnings.len());
    assert_eq!(live.read(Service::log_warnings).unwrap(), count);
}

/// An import in `if __name__ == "__main__":` runs only when the file is
/// executed, never when it is imported: it closes no import cycle (even
/// under a further condition), though it is still an import. Two modules
/// importing each other at the top are a cycle.
#[test]
fn a_main_block_import_closes_no_cycle() {
    let service = open("main_block_cycle");
    let all = rows(&service.warnings(None).unwrap().warnings);
    assert_eq!(
        all,
        [
            "app/c.py:1:5 circular_import warning",
            "app/d.py:1:5 circular_import warning",
        ]
    );
    let imports: Vec<String> = lines(&service)
        .into_iter()
        .filter(|l| l.starts_with("app/b.py:8"))
        .collect();
    assert_eq!(
        imports,
        ["app/b.py:8:13 import app/a.py a - condition=main_block"],
        "{:?}",
        lines(&service)
    );
}
