//! The warm-start cache (`.xfile_cache/`): a start from it answers exactly
//! as a cold index of the same tree, whatever happened to the tree or to the
//! cache file in between.

use crate::common::{self, xfile};

use std::path::Path;
use std::process::{Command, Output};

use xfile::service::Service;
use xfile::service::model::Relationship;
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

// The answers (`answers.bin`): `deps`, `dependents` and a server's first
// answers read them without indexing when the tree is as they record.

/// Waits until stamps taken from now on are settled: a change within the
/// coarse clock's margin of a start is hashed (files) or not trusted
/// (directories), so answers written right after a change are not used.
fn settle() {
    std::thread::sleep(std::time::Duration::from_millis(250));
}

fn answers_current(root: &Path) -> bool {
    warm::info(root).answers.current
}

/// Starts until the answers hold for the tree: the first start after a
/// change (creating `.xfile_cache/` is one) records an unsettled tree.
fn warmed(root: &Path) {
    for _ in 0..4 {
        if answers_current(root) {
            return;
        }
        settle();
        drop(Service::open(root).expect("opens"));
    }
    panic!("answers never current: {:?}", warm::info(root).answers);
}

type Answers = Vec<(String, Vec<Relationship>, Vec<Relationship>)>;

/// Every file's dependencies and dependents from a fresh index of a copy
/// of `root`.
fn fresh_answers(root: &Path) -> Answers {
    let copy = common::copy_tree(root);
    let fresh = cold(copy.path());
    let paths: Vec<String> = fresh.engine().paths().map(str::to_string).collect();
    paths
        .into_iter()
        .map(|path| {
            let deps = fresh.dependencies(&path).expect("deps");
            let dependents = fresh.dependents(&path).expect("dependents");
            (path, deps, dependents)
        })
        .collect()
}

/// Whatever the answers file answers for `root` equals `expected`; with
/// `used`, it answers for every file.
fn cached_as(root: &Path, expected: &Answers, used: bool, what: &str) {
    for (path, deps, dependents) in expected {
        let cached = warm::cached_dependencies(root, path);
        assert_eq!(cached.is_some(), used, "{what}: {path}");
        if let Some(cached) = cached {
            assert_eq!(&cached, deps, "{what}: deps of {path}");
        }
        if let Some(cached) = warm::cached_dependents(root, path) {
            assert_eq!(&cached, dependents, "{what}: dependents of {path}");
        }
    }
}

fn canonical(dir: &tempfile::TempDir) -> std::path::PathBuf {
    std::fs::canonicalize(dir.path()).expect("canonical")
}

#[test]
fn cached_answers_equal_a_fresh_index_for_every_file() {
    for name in [
        "member_calls",
        "string_links",
        "sub_projects",
        "warnings_patterns",
        "granular_resolution",
    ] {
        let dir = common::copy_fixture(name);
        let root = canonical(&dir);
        let expected = fresh_answers(&root);
        assert!(expected.iter().any(|(_, _, d)| !d.is_empty()), "{name}");
        warmed(&root);
        cached_as(&root, &expected, true, name);
    }
}

#[test]
fn deps_and_dependents_commands_answer_from_the_cache_as_without_it() {
    let dir = common::copy_sample();
    let root = canonical(&dir);
    warmed(&root);
    for args in [
        vec!["deps", "app/bot.py"],
        vec!["--json", "deps", "app/handlers.py"],
        vec!["dependents", "app/models.py"],
        vec!["--json", "dependents", "app/utils/retry.py"],
        vec!["dependents", "app/models.py", "--symbol", "User"],
        vec!["deps", "app/missing.py"],
    ] {
        let warm = xfile(&root, &args);
        let no_cache = xfile(&root, &[&["--no-cache"], &args[..]].concat());
        assert_eq!(warm.stdout, no_cache.stdout, "{args:?}");
        assert_eq!(warm.status, no_cache.status, "{args:?}");
        assert_eq!(warm.stderr, no_cache.stderr, "{args:?}");
        assert!(answers_current(&root), "{args:?}: still current");
    }
    // From a directory inside the root, FILE is taken from there.
    let inside = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .current_dir(root.join("app"))
        .args(["deps", "bot.py"])
        .output()
        .expect("runs");
    assert_eq!(
        stdout(&inside),
        stdout(&xfile(&root, &["--no-cache", "deps", "app/bot.py"]))
    );
}

/// A change made while xfile was not running, and whether the answers
/// still hold after it (only a change of stamps without one of contents).
type Change = (&'static str, fn(&Path), bool);

#[test]
fn answers_are_not_used_after_changes_while_stopped() {
    let dir = common::copy_sample();
    let root = canonical(&dir);
    let changes: [Change; 10] = [
        (
            "touched",
            |root| {
                let path = root.join("app/bot.py");
                let file = std::fs::File::options()
                    .write(true)
                    .open(&path)
                    .expect("open");
                file.set_modified(std::time::SystemTime::now())
                    .expect("touch");
            },
            true,
        ),
        (
            "edited, same length and mtime",
            |root| {
                let models = root.join("app/models.py");
                let stamp = std::fs::metadata(&models)
                    .and_then(|m| m.modified())
                    .expect("mtime");
                let text = std::fs::read_to_string(&models).expect("models.py");
                std::fs::write(&models, text.replacen("class User", "class Usre", 1))
                    .expect("edit");
                let file = std::fs::File::options()
                    .write(true)
                    .open(&models)
                    .expect("open");
                file.set_modified(stamp).expect("mtime kept");
            },
            false,
        ),
        (
            "created",
            |root| {
                std::fs::write(
                    root.join("app/fresh.py"),
                    "from app.models import Usre\n\n\ndef make():\n    return Usre()\n",
                )
                .expect("create");
            },
            false,
        ),
        (
            "created at the root",
            |root| {
                std::fs::write(root.join("top.py"), "from app.models import Usre\n")
                    .expect("create");
            },
            false,
        ),
        (
            "deleted",
            |root| {
                std::fs::remove_file(root.join("app/admin.py")).expect("delete");
            },
            false,
        ),
        (
            "renamed",
            |root| {
                std::fs::rename(root.join("app/storage.py"), root.join("app/store.py"))
                    .expect("rename");
            },
            false,
        ),
        (
            "new package",
            |root| {
                std::fs::create_dir(root.join("app/sub")).expect("dir");
                std::fs::write(root.join("app/sub/__init__.py"), "").expect("init");
                std::fs::write(
                    root.join("app/sub/deep.py"),
                    "from app.utils.retry import *\n",
                )
                .expect("module");
            },
            false,
        ),
        (
            "ignore file",
            |root| {
                std::fs::write(root.join(".gitignore"), "app/plugins.py\n").expect("ignore");
            },
            false,
        ),
        (
            "ignore file edited",
            |root| {
                std::fs::write(root.join(".gitignore"), "app/handlers.py\n").expect("ignore");
            },
            false,
        ),
        (
            "configuration",
            |root| {
                std::fs::write(
                    root.join(".cross_file_context_links.yml"),
                    "warn_on_wildcards: true\n",
                )
                .expect("config");
            },
            false,
        ),
    ];
    for (what, change, holds) in changes {
        warmed(&root);
        change(&root);
        let expected = fresh_answers(&root);
        assert_eq!(answers_current(&root), holds, "{what}");
        cached_as(&root, &expected, holds, what);
        // The command answers as a fresh index, and the answers are
        // written again for the tree as it is now.
        for (path, _, _) in expected.iter().take(3) {
            for command in ["deps", "dependents"] {
                let warm = xfile(&root, &[command, path]);
                let no_cache = xfile(&root, &["--no-cache", command, path]);
                assert_eq!(stdout(&warm), stdout(&no_cache), "{what}: {command} {path}");
            }
        }
        warmed(&root);
        cached_as(&root, &expected, true, what);
    }
}

#[test]
fn damaged_answers_are_not_used() {
    let dir = common::copy_sample();
    let root = canonical(&dir);
    warmed(&root);
    let answers = root.join(warm::DIR).join("answers.bin");
    let good = std::fs::read(&answers).expect("answers");
    // The last file in path order: its dependents are the last record.
    let command = ["dependents", "app/utils/retry.py"];
    let expected = stdout(&xfile(&root, &[&["--no-cache"], &command[..]].concat()));
    let mut table = good.clone();
    table[100] ^= 0x40;
    let mut record = good.clone();
    let last = record.len() - 1;
    record[last] ^= 0x40;
    let damaged: [(&str, Vec<u8>); 4] = [
        ("table", table),
        ("record", record),
        ("truncated", good[..good.len() - 1].to_vec()),
        ("empty", Vec::new()),
    ];
    for (what, bytes) in damaged {
        std::fs::write(&answers, &bytes).expect("damage");
        let output = xfile(&root, &command);
        assert_eq!(stdout(&output), expected, "{what}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("answers.bin was not used") && stderr.contains("rebuilding"),
            "{what}: {stderr}"
        );
        // Rebuilt: used again, quietly.
        warmed(&root);
        let output = xfile(&root, &command);
        assert_eq!(stdout(&output), expected, "{what}");
        assert!(output.stderr.is_empty(), "{what}: {:?}", output.stderr);
    }
}

#[test]
fn a_servers_first_answers_come_from_the_cache_and_equal_the_index() {
    use common::mcp_client::Client;
    use serde_json::json;
    // Big enough that the first index takes a while: the first answers
    // come before it.
    let dir = tempfile::tempdir().expect("tempdir");
    let root = canonical(&dir);
    std::fs::create_dir(root.join("pkg")).expect("pkg");
    std::fs::write(root.join("pkg/__init__.py"), "").expect("init");
    for i in 0..600 {
        let text = match i {
            0 => "def f0():\n    return 0\n".to_string(),
            _ => format!(
                "from pkg.m{p} import f{p}\nimport pkg.m0\n\n\ndef f{i}():\n    return f{p}() + pkg.m0.f0()\n",
                p = i - 1
            ),
        };
        std::fs::write(root.join(format!("pkg/m{i}.py")), text).expect("module");
    }
    warmed(&root);
    let root_arg = root.to_str().expect("UTF-8");
    let calls = [
        ("get_dependencies", json!({"file_path": "pkg/m5.py"})),
        (
            "get_dependents",
            json!({"file_path": "pkg/m0.py", "limit": 50}),
        ),
        // A first page whose size the answers file knows, and the next.
        ("get_dependents", json!({"file_path": "pkg/m0.py"})),
        (
            "get_dependents",
            json!({"file_path": "pkg/m0.py", "cursor": "100"}),
        ),
        (
            "get_dependents",
            json!({"file_path": "pkg/m5.py", "symbol": "f5", "format": "json"}),
        ),
        ("get_dependencies", json!({"file_path": "pkg/nowhere.py"})),
    ];
    // Outside the root: a file created there changes the tree.
    let logs = tempfile::tempdir().expect("tempdir");
    let log = logs.path().join("server.log");
    // In process: the test reads the server's own log.
    let mut warm = Client::serve_logging(
        &["--standalone", "--root", root_arg],
        &[("XFILE_LOG", "xfile=debug")],
        std::fs::File::create(&log).expect("log").into(),
    );
    let answers: Vec<_> = calls
        .iter()
        .map(|(tool, args)| warm.call(tool, args.clone()))
        .collect();
    let logged = std::fs::read_to_string(&log).expect("log");
    assert!(
        logged.contains("answered from the warm-start answers"),
        "{logged}"
    );
    warm.disconnect();
    let mut indexed = Client::serve(&["--no-cache", "--root", root_arg], &[]);
    for ((tool, args), answer) in calls.iter().zip(answers) {
        assert_eq!(indexed.call(tool, args.clone()), answer, "{tool} {args}");
    }
}
