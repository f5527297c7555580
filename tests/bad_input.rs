//! Bad input never stops the index: syntax errors, deep nesting, binary,
//! oversized and non-UTF-8 files are marks or notices for that file only.

use crate::common;

use std::process::Command;

use xfile::workspace::NoticeKind;

#[test]
fn syntax_error_marks_the_file_and_keeps_its_facts_out_ec18() {
    let service = common::open("bad_input");
    let export = service.export();
    let broken = export
        .files
        .iter()
        .find(|f| f.relative_path == "syntax_error.py")
        .unwrap();
    let error = broken.parse_error.as_ref().expect("parse error recorded");
    assert_eq!(error.line, 3);
    assert!(
        export
            .relationships
            .iter()
            .all(|r| r.source_file != "syntax_error.py")
    );
    // Other files still index, and may import the broken one.
    assert!(
        export
            .relationships
            .iter()
            .any(|r| r.source_file == "good.py" && r.target_file == "syntax_error.py")
    );
}

#[test]
fn invalid_utf8_decodes_as_latin1_with_a_notice_and_binary_is_skipped() {
    let service = common::open("bad_input");
    let summary = service.summary();
    let kinds: Vec<(&str, NoticeKind)> = summary
        .notices
        .iter()
        .map(|n| (n.path.as_str(), n.kind))
        .collect();
    assert!(
        kinds.contains(&("latin1_encoded.py", NoticeKind::Latin1Fallback)),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&("binary_file.py", NoticeKind::Binary)),
        "{kinds:?}"
    );
    let text = service.engine().text("latin1_encoded.py").unwrap();
    assert!(text.contains("café"));
    assert!(
        service
            .relationships()
            .iter()
            .any(|r| r.source_file == "latin1_encoded.py" && r.target_file == "good.py")
    );
    assert!(!service.engine().contains("binary_file.py"));
}

#[test]
fn deeply_nested_expressions_neither_overflow_nor_hang() {
    let dir = common::copy_fixture("bad_input");
    let depth = 100_000;
    let nested_lists = format!("x = {}1{}\n", "[".repeat(depth), "]".repeat(depth));
    let long_chain = format!("y = 1{}\n", " + 1".repeat(depth));
    let unary = format!("z = {}1\n", "-".repeat(depth));
    std::fs::write(dir.path().join("deep_lists.py"), nested_lists).unwrap();
    std::fs::write(dir.path().join("deep_binop_chain.py"), long_chain).unwrap();
    std::fs::write(dir.path().join("deep_unary.py"), unary).unwrap();
    std::fs::write(
        dir.path().join("deep_calls.py"),
        format!("f = g{}\n", "()".repeat(depth)),
    )
    .unwrap();
    let service = xfile::service::Service::open(dir.path()).unwrap();
    for file in [
        "deep_lists.py",
        "deep_binop_chain.py",
        "deep_unary.py",
        "deep_calls.py",
    ] {
        assert!(service.engine().facts(file).is_some(), "{file} indexed");
    }
}

#[test]
fn files_over_ten_thousand_lines_are_skipped_with_a_notice_ec17() {
    let dir = common::copy_fixture("bad_input");
    std::fs::write(dir.path().join("huge.py"), "x = 1\n".repeat(10_001)).unwrap();
    let service = xfile::service::Service::open(dir.path()).unwrap();
    assert!(!service.engine().contains("huge.py"));
    assert!(
        service
            .summary()
            .notices
            .iter()
            .any(|n| n.path == "huge.py" && n.kind == NoticeKind::TooLarge)
    );
}

#[test]
fn discovery_honours_ignore_files_skip_dirs_and_sensitive_files() {
    let service = common::open("discovery");
    let paths: Vec<&str> = service.engine().paths().collect();
    assert_eq!(paths, ["pkg/__init__.py", "pkg/kept.py"]);
}

#[cfg(unix)]
#[test]
fn symlinks_are_followed_only_inside_the_root() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.py"), "import os\n").unwrap();
    let dir = common::copy_fixture("aliases");
    std::os::unix::fs::symlink(
        outside.path().join("secret.py"),
        dir.path().join("escape.py"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("checkout.py"),
        dir.path().join("inside_link.py"),
    )
    .unwrap();
    let service = xfile::service::Service::open(dir.path()).unwrap();
    assert!(!service.engine().contains("escape.py"));
    assert!(service.engine().contains("inside_link.py"));
    let cli = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["deps", "escape.py", "--root"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(cli.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&cli.stderr).contains("outside the project root"));
}

#[test]
fn missing_root_and_outside_file_exit_with_status_two() {
    let missing = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["index", "--root", "/definitely/not/here"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("does not exist"));

    let outside = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["deps", "/etc/passwd", "--root"])
        .arg(common::fixture("aliases"))
        .output()
        .unwrap();
    assert_eq!(outside.status.code(), Some(2));
    assert!(outside.stdout.is_empty());
    let dotdot = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["deps", "../wildcard/consumer.py", "--root"])
        .arg(common::fixture("aliases"))
        .output()
        .unwrap();
    assert_eq!(dotdot.status.code(), Some(2));
}

/// The index summary names the files it could not parse, not only a count.
#[test]
fn index_names_the_files_with_syntax_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("fine.py"), "VALUE = 1\n").unwrap();
    std::fs::write(dir.path().join("broken.py"), "import os\ndef (:\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["index", "--root"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("  parse errors:   1\n    broken.py:2: "),
        "{stdout}"
    );
}
