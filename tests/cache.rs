//! The warm-start cache (`.xfile_cache/`): a start from it answers exactly
//! as a cold index of the same tree, whatever happened to the tree or to the
//! cache file in between.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use xfile::service::Service;
use xfile::service::warm::{self, format::KEY_OFFSET};

/// Everything a project answers that a cache could get wrong: every
/// relationship, every output relation, the warnings, the export (less its
/// timestamps) and each file's extracted facts.
fn picture(service: &Service) -> String {
    let mut export = serde_json::to_value(service.export()).expect("export serializes");
    export["metadata"]["timestamp"] = serde_json::Value::Null;
    // Its order follows interned ids, which parallel indexing assigns in
    // any order; `rendered_outputs` has the same tuples, sorted.
    export["derived"] = serde_json::Value::Null;
    for file in export["files"].as_array_mut().expect("files") {
        file["last_modified"] = serde_json::Value::Null;
    }
    let engine = service.engine();
    let facts: Vec<String> = engine
        .paths()
        .map(|path| format!("{path}: {:?}", engine.facts(path)))
        .collect();
    format!(
        "{:#?}\n{:#?}\n{}\n{export:#}\n{facts:#?}",
        common::lines(service),
        common::rendered_outputs(engine),
        serde_json::to_string_pretty(&service.warnings(None).expect("warnings")).expect("json"),
    )
}

/// A cold index: the cache removed first (it is written again).
fn cold(root: &Path) -> Service {
    warm::clean(root).expect("clean");
    Service::open(root).expect("opens")
}

fn cache_file(root: &Path) -> std::path::PathBuf {
    root.join(warm::DIR).join(warm::FILE)
}

fn xfile(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(args)
        .arg("--root")
        .arg(root)
        .output()
        .expect("xfile runs")
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "xfile failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_warm_start_reuses_every_file_and_answers_as_a_cold_one() {
    for name in [
        "member_calls",
        "string_links",
        "sub_projects",
        "warnings_patterns",
    ] {
        let dir = common::copy_fixture(name);
        let fresh = cold(dir.path());
        assert_eq!(fresh.warm_start().reused, 0, "{name}");
        let expected = picture(&fresh);
        // The last handle waits for the cache's write.
        drop(fresh);
        assert!(cache_file(dir.path()).is_file(), "{name}: cache written");
        let warm = Service::open(dir.path()).expect("opens");
        let files = warm.engine().paths().count();
        assert!(files > 0);
        assert_eq!(
            (warm.warm_start().reused, warm.warm_start().parsed),
            (files, 0),
            "{name}"
        );
        assert_eq!(picture(&warm), expected, "{name}");
    }
}

#[test]
fn edits_creations_deletions_and_renames_while_stopped_are_seen() {
    let dir = common::copy_sample();
    let root = dir.path();
    let before = cold(root);
    let files = before.engine().paths().count();
    drop(before);
    // Edited: an import and a call change; created: a new module that
    // imports another; deleted: a module others import; renamed: a module
    // moves, so its importers no longer resolve it.
    let bot = root.join("app/bot.py");
    let text = std::fs::read_to_string(&bot).expect("bot.py");
    let edited = text.replace("retry_with_backoff as retry", "retry_with_backoff as again");
    assert_ne!(edited, text);
    std::fs::write(&bot, edited).expect("edit");
    std::fs::write(
        root.join("app/fresh.py"),
        "from app.models import User\n\n\ndef make():\n    return User()\n",
    )
    .expect("create");
    std::fs::remove_file(root.join("app/admin.py")).expect("delete");
    std::fs::rename(root.join("app/storage.py"), root.join("app/store.py")).expect("rename");
    // The same length and a preserved mtime must not fool it either: the
    // text is hashed.
    let models = root.join("app/models.py");
    let stamp = std::fs::metadata(&models)
        .and_then(|m| m.modified())
        .expect("mtime");
    let text = std::fs::read_to_string(&models).expect("models.py");
    let swapped = text.replacen("class User", "class Usre", 1);
    assert_eq!(swapped.len(), text.len());
    std::fs::write(&models, swapped).expect("edit");
    std::fs::File::options()
        .write(true)
        .open(&models)
        .and_then(|f| f.set_modified(stamp))
        .expect("mtime kept");

    let warm = Service::open(root).expect("opens");
    let outcome = warm.warm_start().clone();
    // bot, models, fresh and store parsed; the rest reused.
    assert_eq!(outcome.parsed, 4, "{outcome:?}");
    assert_eq!(outcome.reused, files - 1 - 3, "{outcome:?}");
    let warm_picture = picture(&warm);
    assert!(warm_picture.contains("app/fresh.py"));
    assert!(!warm_picture.contains("app/admin.py:"));
    assert_eq!(warm_picture, picture(&cold(root)));
}

#[test]
fn corrupt_and_truncated_caches_are_rebuilt_with_a_notice() {
    let dir = common::copy_sample();
    let root = dir.path();
    let expected = stdout(&xfile(root, &["--no-cache", "deps", "app/bot.py"]));
    assert!(!root.join(warm::DIR).exists(), "--no-cache writes nothing");
    stdout(&xfile(root, &["index"]));
    let good = std::fs::read(cache_file(root)).expect("cache");
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x40;
    let damaged: [(&str, Vec<u8>, &str); 4] = [
        ("flipped", flipped, "checksum"),
        ("truncated", good[..good.len() / 2].to_vec(), "truncated"),
        ("empty", Vec::new(), "not an xfile cache"),
        (
            "foreign",
            b"SQLite format 3\0".repeat(8),
            "not an xfile cache",
        ),
    ];
    for (what, bytes, reason) in damaged {
        std::fs::write(cache_file(root), &bytes).expect("damage");
        let output = xfile(root, &["deps", "app/bot.py"]);
        assert_eq!(stdout(&output), expected, "{what}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(reason) && stderr.contains("rebuilding"),
            "{what}: {stderr}"
        );
        // Rebuilt: the next start uses it quietly.
        let output = xfile(root, &["deps", "app/bot.py"]);
        assert_eq!(stdout(&output), expected, "{what}");
        assert!(output.stderr.is_empty(), "{what}: {:?}", output.stderr);
        assert_eq!(
            std::fs::read(cache_file(root)).expect("cache"),
            good,
            "{what}"
        );
    }
}

#[test]
fn a_cache_written_with_another_key_is_rejected() {
    let dir = common::copy_sample();
    let root = dir.path();
    let expected = stdout(&xfile(root, &["--no-cache", "deps", "app/bot.py"]));
    stdout(&xfile(root, &["index"]));
    // Another xfile version or other rules: the key in the header differs.
    let mut bytes = std::fs::read(cache_file(root)).expect("cache");
    bytes[KEY_OFFSET] ^= 1;
    std::fs::write(cache_file(root), &bytes).expect("rekey");
    let info = stdout(&xfile(root, &["cache", "info"]));
    assert!(info.contains("another xfile build"), "{info}");
    let output = xfile(root, &["deps", "app/bot.py"]);
    assert_eq!(stdout(&output), expected);
    assert!(String::from_utf8_lossy(&output.stderr).contains("another xfile build"));
    assert!(stdout(&xfile(root, &["cache", "info"])).contains("used by this xfile"));
    // A configuration change is part of the key too.
    std::fs::write(
        root.join(".cross_file_context_links.yml"),
        "warn_on_wildcards: true\n",
    )
    .expect("config");
    let output = xfile(root, &["index"]);
    stdout(&output);
    assert!(String::from_utf8_lossy(&output.stderr).contains("another xfile build"));
}

#[test]
fn two_processes_starting_at_once_both_answer_and_leave_a_whole_cache() {
    let dir = common::copy_fixture("member_calls");
    let root = dir.path();
    let expected = stdout(&xfile(root, &["--no-cache", "export", "--json"]));
    let strip = |text: &str| {
        let mut value: serde_json::Value = serde_json::from_str(text).expect("json");
        value["metadata"]["timestamp"] = serde_json::Value::Null;
        value
    };
    for round in 0..3 {
        // Round 0 starts with no cache, the others with one being replaced.
        let children: Vec<_> = (0..2)
            .map(|_| {
                Command::new(env!("CARGO_BIN_EXE_xfile"))
                    .args(["export", "--json", "--root"])
                    .arg(root)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("spawns")
            })
            .collect();
        for child in children {
            let output = child.wait_with_output().expect("waits");
            assert_eq!(strip(&stdout(&output)), strip(&expected), "round {round}");
            assert!(
                output.stderr.is_empty(),
                "round {round}: {:?}",
                output.stderr
            );
        }
        let info = stdout(&xfile(root, &["cache", "info"]));
        assert!(info.contains("used by this xfile"), "{info}");
        let leftovers: Vec<_> = std::fs::read_dir(root.join(warm::DIR))
            .expect("dir")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }
}

#[test]
fn links_and_special_files_in_the_cache_are_never_followed() {
    let dir = common::copy_sample();
    let root = dir.path();
    let expected = stdout(&xfile(root, &["--no-cache", "deps", "app/bot.py"]));
    let outside = tempfile::tempdir().expect("tempdir");
    let target = outside.path().join("victim");
    std::fs::write(&target, "keep me").expect("victim");

    // The cache file is a link: not read, replaced by a file, target kept.
    std::fs::create_dir(root.join(warm::DIR)).expect("dir");
    std::os::unix::fs::symlink(&target, cache_file(root)).expect("link");
    let output = xfile(root, &["deps", "app/bot.py"]);
    assert_eq!(stdout(&output), expected);
    assert_eq!(std::fs::read_to_string(&target).expect("victim"), "keep me");
    assert!(!cache_file(root).is_symlink());

    // A FIFO: refused without blocking.
    std::fs::remove_file(cache_file(root)).expect("remove");
    let status = Command::new("mkfifo")
        .arg(cache_file(root))
        .status()
        .expect("mkfifo");
    assert!(status.success());
    assert_eq!(stdout(&xfile(root, &["deps", "app/bot.py"])), expected);

    // The directory is a link: nothing is written through it.
    warm::clean(root).expect("clean");
    std::fs::remove_dir_all(root.join(warm::DIR)).ok();
    std::os::unix::fs::symlink(outside.path(), root.join(warm::DIR)).expect("link");
    assert_eq!(stdout(&xfile(root, &["deps", "app/bot.py"])), expected);
    let written: Vec<_> = std::fs::read_dir(outside.path())
        .expect("outside")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(written, vec![std::ffi::OsString::from("victim")]);
    assert!(
        warm::clean(root).is_err(),
        "a link is refused, not followed"
    );
    assert!(root.join(warm::DIR).is_symlink());
}

#[test]
fn cache_info_and_clean() {
    let dir = common::copy_sample();
    let root = dir.path();
    let info = stdout(&xfile(root, &["cache", "info"]));
    assert!(info.ends_with("no cache\n"), "{info}");
    // What writers that died left behind: removed once old, kept while a
    // writer may still be at work.
    std::fs::create_dir(root.join(warm::DIR)).expect("dir");
    let abandoned = root.join(warm::DIR).join("index.bin.1.dead.tmp");
    let recent = root.join(warm::DIR).join("index.bin.2.busy.tmp");
    for path in [&abandoned, &recent] {
        std::fs::write(path, "partial").expect("temp");
    }
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&abandoned)
        .and_then(|f| f.set_modified(hour_ago))
        .expect("mtime");
    stdout(&xfile(root, &["index"]));
    assert!(!abandoned.exists() && recent.exists());
    let info: serde_json::Value =
        serde_json::from_str(&stdout(&xfile(root, &["cache", "info", "--json"]))).expect("json");
    assert_eq!(info["usable"], true);
    assert_eq!(info["files"], 9);
    assert!(info["bytes"].as_u64().is_some_and(|b| b > 0));
    let ignore = std::fs::read_to_string(root.join(warm::DIR).join(".gitignore")).expect("ignore");
    assert!(ignore.lines().any(|l| l == "*"));
    assert!(stdout(&xfile(root, &["cache", "clean"])).starts_with("removed "));
    assert!(!root.join(warm::DIR).exists());
    assert_eq!(
        stdout(&xfile(root, &["cache", "clean"])),
        "no cache to remove\n"
    );
}
