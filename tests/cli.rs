//! The CLI contract on the sample project the README indexes.

use crate::common;

use std::path::Path;
use std::process::Command;

/// Runs on a copy of the sample: `index` writes the warning log.
fn xfile(args: &[&str]) -> (i32, serde_json::Value) {
    let root = common::copy_sample();
    let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(args)
        .arg("--root")
        .arg(root.path())
        .arg("--json")
        .output()
        .expect("runs");
    let json = serde_json::from_slice(&output.stdout).unwrap_or(serde_json::Value::Null);
    (output.status.code().unwrap_or(-1), json)
}

#[test]
fn index_summarizes_files_relationships_and_cycles() {
    let (status, summary) = xfile(&["index"]);
    assert_eq!(status, 0);
    assert_eq!(summary["files"], 9);
    assert_eq!(summary["parse_errors"], 0);
    assert_eq!(summary["relationships"]["import"], 17);
    assert_eq!(summary["relationships"]["function_call"], 19);
    assert_eq!(summary["relationships"]["inheritance"], 1);
    assert_eq!(summary["import_cycles"], 1);
}

#[test]
fn export_has_the_spec_shape_fr23() {
    let (status, export) = xfile(&["export"]);
    assert_eq!(status, 0);
    for key in [
        "metadata",
        "files",
        "relationships",
        "warnings",
        "graph_metadata",
    ] {
        assert!(export.get(key).is_some(), "missing {key}");
    }
    assert_eq!(export["metadata"]["language"], "python");
    assert_eq!(export["metadata"]["total_files"], 9);
    assert_eq!(
        export["graph_metadata"]["circular_imports"],
        serde_json::json!([["app/admin.py", "app/bot.py", "app/admin.py"]])
    );
    let bot = export["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["relative_path"] == "app/bot.py")
        .unwrap();
    assert_eq!(bot["in_import_cycle"], true);
    let first = &export["relationships"][0];
    for key in [
        "source_file",
        "target_file",
        "relationship_type",
        "line_number",
        "column",
        "source_symbol",
        "target_symbol",
        "target_line",
        "metadata",
    ] {
        assert!(first.get(key).is_some(), "relationship lacks {key}");
    }
}

#[test]
fn dependents_follow_reexports_to_the_defining_file_fr18() {
    let (status, dependents) = xfile(&["dependents", "app/utils/retry.py"]);
    assert_eq!(status, 0);
    let summary: Vec<(String, u64, String)> = dependents
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["source_file"].as_str().unwrap().to_string(),
                r["line_number"].as_u64().unwrap(),
                r["relationship_type"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("app/bot.py".to_string(), 5, "import".to_string()),
            ("app/bot.py".to_string(), 16, "function_call".to_string()),
            ("app/utils/__init__.py".to_string(), 2, "import".to_string()),
        ]
    );
}

/// `--imports` answers from the import graph alone: the modules the
/// statements name, with no re-export followed, so `app/bot.py`'s import of
/// `retry_with_backoff` through `app/utils/__init__.py` is not among the
/// dependents of `app/utils/retry.py`, where the full answer has it.
#[test]
fn imports_alone_name_the_modules_the_statements_name() {
    let (status, full) = xfile(&["deps", "app/bot.py"]);
    assert_eq!(status, 0);
    let (status, imports) = xfile(&["deps", "--imports", "app/bot.py"]);
    assert_eq!(status, 0);
    let rows = |json: &serde_json::Value| -> Vec<(u64, String)> {
        json.as_array()
            .unwrap()
            .iter()
            .filter(|r| r["relationship_type"] == "import")
            .map(|r| {
                let line = r["line_number"].as_u64().unwrap();
                (line, r["target_file"].as_str().unwrap().to_string())
            })
            .collect()
    };
    assert_eq!(rows(&imports), rows(&full));
    assert_eq!(rows(&imports).len(), imports.as_array().unwrap().len());
    assert!(
        rows(&imports)
            .iter()
            .any(|(_, t)| t == "app/utils/__init__.py")
    );
    let imports = imports.as_array().unwrap();
    assert!(
        imports
            .iter()
            .all(|r| r["metadata"]["defined_in"].is_null())
    );
    let (status, importers) = xfile(&["dependents", "--imports", "app/utils/retry.py"]);
    assert_eq!(status, 0);
    assert_eq!(
        rows(&importers),
        [(2, "app/utils/retry.py".to_string())],
        "{importers:#}"
    );
    let (status, _) = xfile(&["dependents", "--imports", "--symbol", "x", "app/models.py"]);
    assert_eq!(status, 2, "--imports and --symbol together are refused");
    let dir = common::copy_sample();
    for args in [
        ["deps", "--imports", "app/nothing.py"],
        ["dependents", "--imports", "pyproject.toml"],
    ] {
        let (status, _, stderr) = xfile_in(dir.path(), &args);
        assert_eq!(status, 2, "{args:?}");
        assert!(stderr.contains(args[2]), "{stderr}");
    }
}

#[test]
fn query_filters_any_relation_and_explains_bad_patterns() {
    let (status, result) = xfile(&["query", r#"Inherits("app/admin.py", _, _, _)"#]);
    assert_eq!(status, 0);
    assert_eq!(
        result["tuples"],
        serde_json::json!([["app/admin.py", "4:15", "app/bot.py", "EchoBot"]])
    );

    let unknown = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["query", "Nope(_)", "--root"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sample_project"))
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    let message = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        message.contains("unknown relation `Nope`")
            && message.contains("Imports(file, site, module)"),
        "{message}"
    );

    let (status, _) = xfile(&["query", "Imports(_)"]);
    assert_eq!(status, 2);
}

/// Every file under `dir`, relative, sorted.
fn tree(dir: &std::path::Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    files.sort();
    files
}

/// Read-only commands write nothing into the project but the warm-start
/// cache in its own directory, and with `--no-cache` not even that.
#[test]
fn read_only_commands_write_nothing_into_the_project() {
    let dir = common::copy_sample();
    let before = tree(dir.path());
    for no_cache in [true, false] {
        for args in [
            vec!["read", "app/bot.py"],
            vec!["deps", "app/bot.py"],
            vec!["deps", "--imports", "app/bot.py"],
            vec!["query", "Calls(_, _, _, _)"],
            vec!["explain", "DependsOn(\"app/bot.py\", \"app/models.py\")"],
        ] {
            let status = Command::new(env!("CARGO_BIN_EXE_xfile"))
                .args(no_cache.then_some("--no-cache"))
                .args(&args)
                .arg("--root")
                .arg(dir.path())
                .output()
                .unwrap()
                .status;
            assert!(status.success(), "{args:?}");
        }
        let mut after = tree(dir.path());
        if !no_cache {
            let cache = [".xfile_cache/.gitignore", ".xfile_cache/index.bin"];
            assert!(cache.iter().all(|f| after.contains(&f.to_string())));
            after.retain(|f| !f.starts_with(".xfile_cache/"));
        }
        assert_eq!(after, before, "no_cache: {no_cache}");
    }
}

#[test]
fn a_reader_that_goes_away_is_not_an_error() {
    use std::io::Read;
    // More output than a pipe buffers (64 KiB), so the writer meets the
    // closed pipe.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.py"), "def f():\n    pass\n").unwrap();
    let calls = "from lib import f\n".to_string() + &"f()\n".repeat(5000);
    std::fs::write(dir.path().join("main.py"), calls).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["query", "Calls(_, _, _, _)", "--root"])
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read a little, then close the pipe as `head` would.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 100];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{:?} {stderr}", output.status);
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
}

/// Runs `xfile ARGS --json` in `cwd` (no `--root`: the root is found from
/// there); returns the status, the JSON answer and stderr.
fn xfile_in(cwd: &Path, args: &[&str]) -> (i32, serde_json::Value, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(args)
        .arg("--json")
        .current_dir(cwd)
        .output()
        .expect("runs");
    let json = serde_json::from_slice(&output.stdout).unwrap_or(serde_json::Value::Null);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code().unwrap_or(-1), json, stderr)
}

fn sources(relationships: &serde_json::Value) -> Vec<&str> {
    relationships
        .as_array()
        .expect("a list of relationships")
        .iter()
        .filter_map(|r| r["source_file"].as_str())
        .collect()
}

#[test]
fn file_arguments_are_relative_to_the_working_directory_inside_the_root() {
    let dir = common::copy_sample();
    let utils = dir.path().join("app/utils");
    let (status, dependents, stderr) = xfile_in(&utils, &["dependents", "./retry.py"]);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(
        sources(&dependents),
        ["app/bot.py", "app/bot.py", "app/utils/__init__.py"]
    );
    let (status, deps, stderr) = xfile_in(&utils, &["deps", "../bot.py"]);
    assert_eq!(status, 0, "{stderr}");
    assert!(!sources(&deps).is_empty());
    assert!(sources(&deps).iter().all(|s| *s == "app/bot.py"), "{deps}");
    let read = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["read", "retry.py"])
        .current_dir(&utils)
        .output()
        .expect("runs");
    assert!(read.status.success());
    assert!(String::from_utf8_lossy(&read.stdout).contains("def retry_with_backoff"));
    let (status, warnings, stderr) = xfile_in(&utils, &["warnings", "__init__.py"]);
    assert_eq!(status, 0, "{stderr}");
    assert!(warnings["warnings"].is_array(), "{warnings}");
}

#[test]
fn root_relative_file_arguments_still_work_from_anywhere() {
    let dir = common::copy_sample();
    // From a subdirectory where `app/bot.py` names nothing: the root's.
    let (status, deps, stderr) = xfile_in(&dir.path().join("app/utils"), &["deps", "app/bot.py"]);
    assert_eq!(status, 0, "{stderr}");
    assert!(sources(&deps).iter().all(|s| *s == "app/bot.py"), "{deps}");
    assert!(!sources(&deps).is_empty());
    // From outside the root, with --root.
    let elsewhere = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["dependents", "app/utils/retry.py", "--json", "--root"])
        .arg(dir.path())
        .current_dir(elsewhere.path())
        .output()
        .expect("runs");
    assert!(output.status.success());
    let dependents: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(sources(&dependents).len(), 3, "{dependents}");
}

#[test]
fn a_file_in_the_working_directory_wins_over_the_same_path_under_the_root() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pyproject.toml"), "").unwrap();
    std::fs::create_dir(dir.path().join("pkg")).unwrap();
    std::fs::write(dir.path().join("pkg/__init__.py"), "").unwrap();
    std::fs::write(dir.path().join("helpers.py"), "import json\n").unwrap();
    std::fs::write(dir.path().join("pkg/helpers.py"), "import os\n").unwrap();
    let (status, deps, stderr) = xfile_in(&dir.path().join("pkg"), &["deps", "helpers.py"]);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(deps[0]["source_file"], "pkg/helpers.py");
    assert_eq!(deps[0]["target_file"], "<stdlib:os>");
}

#[test]
fn file_arguments_outside_the_root_or_missing_are_refused_with_a_hint() {
    let dir = common::copy_sample();
    let utils = dir.path().join("app/utils");
    let (status, _, stderr) = xfile_in(&utils, &["deps", "nothing_here.py"]);
    assert_eq!(status, 2);
    assert!(
        stderr.contains("nothing_here.py") && stderr.contains("working directory"),
        "{stderr}"
    );
    // Up out of the root: both temporary directories share a parent.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("other.py"), "x = 1\n").unwrap();
    let name = outside.path().file_name().unwrap().to_string_lossy();
    let escape = format!("../../../{name}/other.py");
    assert!(utils.join(&escape).exists());
    let (status, _, stderr) = xfile_in(&utils, &["deps", &escape]);
    assert_eq!(status, 2);
    assert!(stderr.contains("outside the project root"), "{stderr}");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.path().join("other.py"), utils.join("link.py")).unwrap();
        let (status, _, stderr) = xfile_in(&utils, &["deps", "link.py"]);
        assert_eq!(status, 2);
        assert!(stderr.contains("outside the project root"), "{stderr}");
    }
}
