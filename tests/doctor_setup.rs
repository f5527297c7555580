//! `xfile setup` writes each editor's MCP entry and keeps the rest of the
//! file; `xfile doctor` finds seeded problems and `--fix` repairs the safe
//! ones.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

fn xfile(root: &Path, home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(args)
        .arg("--root")
        .arg(root)
        .env("XFILE_HOME", home)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn binary() -> String {
    Path::new(env!("CARGO_BIN_EXE_xfile"))
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// Each editor's file with entries of its own, and where xfile's goes.
fn editors() -> [(&'static str, &'static str, Value, &'static str); 4] {
    [
        (
            "claude-code",
            ".mcp.json",
            json!({"mcpServers": {"other": {"command": "other-mcp", "args": ["--x"]}}, "extra": [1, 2]}),
            "mcpServers",
        ),
        (
            "cursor",
            ".cursor/mcp.json",
            json!({"mcpServers": {"other": {"url": "http://localhost:9/sse"}}}),
            "mcpServers",
        ),
        (
            "vscode",
            ".vscode/mcp.json",
            json!({"inputs": [{"id": "key", "type": "promptString"}], "servers": {"other": {"type": "stdio", "command": "other-mcp"}}}),
            "servers",
        ),
        (
            "zed",
            ".zed/settings.json",
            json!({"theme": "One Dark", "tab_size": 4, "context_servers": {"other": {"source": "custom", "command": "other-mcp", "args": []}}}),
            "context_servers",
        ),
    ]
}

#[test]
fn setup_round_trips_each_editors_file_keeping_other_entries() {
    let home = tempfile::tempdir().unwrap();
    for (editor, file, original, key) in editors() {
        let project = common::copy_sample();
        let root = project.path().canonicalize().unwrap();
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let original_text = serde_json::to_string_pretty(&original).unwrap();
        std::fs::write(&path, &original_text).unwrap();

        let out = xfile(&root, home.path(), &["setup", "--editor", editor, "--yes"]);
        assert!(out.status.success(), "{editor}: {out:?}");
        assert!(
            text(&out.stdout).contains("Next: "),
            "{editor}: {}",
            text(&out.stdout)
        );
        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let entry = &written[key]["xfile"];
        assert_eq!(entry["command"], binary(), "{editor}: {written}");
        assert_eq!(
            entry["args"],
            json!(["serve", "--root", root.to_str().unwrap()])
        );
        if editor == "vscode" {
            assert_eq!(entry["type"], "stdio");
        }
        // Everything else is as it was.
        let mut without = written.clone();
        without[key].as_object_mut().unwrap().remove("xfile");
        assert_eq!(without, original, "{editor}");
        let backup = std::fs::read_to_string(format!("{}.bak", path.display())).unwrap();
        assert_eq!(backup, original_text, "{editor}");

        // Again: nothing to change, nothing written.
        let before = std::fs::read(&path).unwrap();
        let again = xfile(&root, home.path(), &["setup", "--editor", editor, "--yes"]);
        assert!(again.status.success());
        assert!(
            text(&again.stdout).contains("already set up"),
            "{}",
            text(&again.stdout)
        );
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }
}

#[test]
fn setup_creates_a_missing_file_asks_without_yes_and_refuses_links() {
    let home = tempfile::tempdir().unwrap();
    let project = common::copy_sample();
    let root = project.path();
    // Not a terminal and no --yes: nothing written.
    let out = xfile(root, home.path(), &["setup"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(text(&out.stderr).contains("--yes"));
    assert!(!root.join(".mcp.json").exists());
    // No editor named and none configured: Claude Code's file, created.
    let out = xfile(root, home.path(), &["setup", "--yes"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        text(&out.stdout).contains("created"),
        "{}",
        text(&out.stdout)
    );
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(".mcp.json")).unwrap()).unwrap();
    assert_eq!(written["mcpServers"]["xfile"]["command"], binary());
    assert!(!root.join(".mcp.json.bak").exists());
    // A link in place of the file is never written through.
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("settings.json");
    std::fs::write(&target, "{}").unwrap();
    std::fs::create_dir(root.join(".zed")).unwrap();
    std::os::unix::fs::symlink(&target, root.join(".zed/settings.json")).unwrap();
    let out = xfile(root, home.path(), &["setup", "--editor", "zed", "--yes"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("symbolic link"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "{}");
    // Settings with comments are not JSON xfile can keep: left alone.
    std::fs::remove_file(root.join(".zed/settings.json")).unwrap();
    let commented = "// Zed settings\n{\"theme\": \"One Dark\"}\n";
    std::fs::write(root.join(".zed/settings.json"), commented).unwrap();
    let out = xfile(root, home.path(), &["setup", "--editor", "zed", "--yes"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("by hand"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".zed/settings.json")).unwrap(),
        commented
    );
}

#[test]
fn doctor_finds_seeded_problems_and_fix_repairs_the_safe_ones() {
    let home = tempfile::tempdir().unwrap();
    let project = common::copy_sample();
    let root = project.path().canonicalize().unwrap();
    std::fs::write(
        root.join(".cross_file_context_links.yml"),
        "bogus_key: 1\ncontext_token_limit: lots\n",
    )
    .unwrap();
    std::fs::write(root.join(".cross_file_context_logs"), "in the way").unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), root.join(".xfile_cache")).unwrap();
    std::fs::write(
        root.join(".mcp.json"),
        json!({"mcpServers": {"xfile": {"command": "/nonexistent/xfile", "args": ["serve", "--root", "."]}, "other": {"command": "x"}}}).to_string(),
    )
    .unwrap();
    std::fs::create_dir(root.join(".vscode")).unwrap();
    let wrong_root = elsewhere.path().to_str().unwrap();
    std::fs::write(
        root.join(".vscode/mcp.json"),
        json!({"servers": {"xfile": {"type": "stdio", "command": binary(), "args": ["serve", "--root", wrong_root]}}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        home.path().join("registry.sqlite3"),
        "not a database, just text long enough to be read as a header",
    )
    .unwrap();

    let out = xfile(&root, home.path(), &["doctor"]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        !report.contains('\u{1b}'),
        "colors without a terminal:\n{report}"
    );
    for expected in [
        "⚠ configuration: ",
        "bogus_key",
        "context_token_limit",
        "✗ log directory: .cross_file_context_logs is not a directory",
        "✗ cache: .xfile_cache is a symbolic link",
        "✗ Claude Code (.mcp.json): the command `/nonexistent/xfile` is not an executable",
        &format!("✗ VS Code (.vscode/mcp.json): serves {wrong_root}, not this project"),
        "✗ registry: ",
        "damaged",
        "✓ inotify watch limit: ",
        "fix: xfile setup --editor claude-code --yes",
    ] {
        assert!(report.contains(expected), "`{expected}` not in:\n{report}");
    }

    let out = xfile(&root, home.path(), &["doctor", "--fix"]);
    let report = text(&out.stdout);
    for expected in [
        "✓ log directory: ",
        "✓ cache: no .xfile_cache",
        "✓ Claude Code (.mcp.json): runs ",
        "✓ VS Code (.vscode/mcp.json): runs ",
        "fixed: removed the link",
        // Not ours to repair: the user's configuration and registry.
        "⚠ configuration: ",
        "✗ registry: ",
    ] {
        assert!(report.contains(expected), "`{expected}` not in:\n{report}");
    }
    assert!(root.join(".cross_file_context_logs").is_dir());
    let moved = root.join(".cross_file_context_logs.moved-1");
    assert_eq!(std::fs::read_to_string(moved).unwrap(), "in the way");
    assert!(elsewhere.path().is_dir(), "the link's target stays");
    let claude: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(".mcp.json")).unwrap()).unwrap();
    assert_eq!(claude["mcpServers"]["xfile"]["command"], binary());
    assert_eq!(claude["mcpServers"]["other"], json!({"command": "x"}));
    assert!(root.join(".mcp.json.bak").is_file());
    // With the registry moved away as advised, nothing is wrong any more.
    std::fs::remove_file(home.path().join("registry.sqlite3")).unwrap();
    let out = xfile(&root, home.path(), &["doctor"]);
    assert!(out.status.success(), "{}", text(&out.stdout));
}

fn mkfifo(path: &Path) {
    let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
    assert_eq!(
        unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) },
        0,
        "mkfifo {path:?}"
    );
}

/// `xfile ARGS --root ROOT`, killed if it is still running after a minute
/// (a hang guard: a command that waits on a FIFO never ends by itself).
fn xfile_unless_hung(root: &Path, home: &Path, args: &[&str]) -> Output {
    let child = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(args)
        .arg("--root")
        .arg(root)
        .env("XFILE_HOME", home)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = i32::try_from(child.id()).unwrap();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        let hung = finished
            .recv_timeout(std::time::Duration::from_secs(60))
            .is_err();
        if hung {
            // SAFETY: signals our own child, still running (not reaped).
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        hung
    });
    let output = child.wait_with_output().unwrap();
    let _ = done.send(());
    assert!(!watchdog.join().unwrap(), "xfile {args:?} hung");
    output
}

// Regression: a FIFO `.mcp.json` hung `setup --yes`, `doctor` and
// `doctor --fix`; a device in its place was read without limit. Only a
// regular file is opened, never through a link (here to /dev/zero), never
// waited on, and read up to a size limit; each command says what to do.
#[test]
fn setup_and_doctor_refuse_fifo_and_device_config_files() {
    let home = tempfile::tempdir().unwrap();
    let project = common::copy_sample();
    let root = project.path().canonicalize().unwrap();
    mkfifo(&root.join(".mcp.json"));
    std::fs::create_dir(root.join(".cursor")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.join(".cursor/mcp.json")).unwrap();
    mkfifo(&root.join(".cross_file_context_links.yml"));
    // A big file is not read either.
    std::fs::create_dir(root.join(".vscode")).unwrap();
    let big = format!(
        "{{\"servers\": {{}}, \"pad\": \"{}\"}}",
        "x".repeat(2 << 20)
    );
    std::fs::write(root.join(".vscode/mcp.json"), big).unwrap();

    let out = xfile_unless_hung(
        &root,
        home.path(),
        &["setup", "--editor", "claude-code", "--yes"],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(".mcp.json: not read: it is not a regular file (a FIFO)")
            && stderr.contains("remove or replace it"),
        "{stderr}"
    );
    let out = xfile_unless_hung(
        &root,
        home.path(),
        &["setup", "--editor", "vscode", "--yes"],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        text(&out.stderr).contains("over the 1048576-byte limit"),
        "{out:?}"
    );

    for args in [&["doctor"][..], &["doctor", "--fix"]] {
        let out = xfile_unless_hung(&root, home.path(), args);
        let report = text(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {report}");
        for expected in [
            "✗ Claude Code (.mcp.json): not read: it is not a regular file (a FIFO)",
            "✗ Cursor (.cursor/mcp.json): not read: it is not a regular file (a symlink)",
            "✗ VS Code (.vscode/mcp.json): not read: it is",
            "fix: replace it with a regular JSON file",
            "⚠ configuration: .cross_file_context_links.yml: not read: it is not a regular file (a FIFO)",
        ] {
            assert!(
                report.contains(expected),
                "{args:?}: `{expected}` not in:\n{report}"
            );
        }
    }
    // Nothing of the user's was replaced.
    use std::os::unix::fs::FileTypeExt;
    let kind = std::fs::symlink_metadata(root.join(".mcp.json"))
        .unwrap()
        .file_type();
    assert!(kind.is_fifo());
    let link = std::fs::read_link(root.join(".cursor/mcp.json")).unwrap();
    assert_eq!(link, Path::new("/dev/zero"));
}
