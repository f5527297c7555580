//! Hostile input, round three: what a
//! `kill -9` leaves in the cache directory, writes that fail while
//! `/health` says all is well, warm-cache answers that skip the checks a
//! fresh index makes, directories skipped by name, and FILE arguments
//! resolved differently by different commands. Each test is named for the
//! finding it repeats.

#![cfg(unix)]

use crate::common::{self, xfile};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use xfile::service::Service;
use xfile::service::warm;

fn xfile_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("xfile runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh index, the warm-start cache removed first.
fn cold(root: &Path) -> Service {
    warm::clean(root).expect("clean");
    Service::open(root).expect("opens")
}

/// The skip notices for tool directories, by path.
fn tool_notices(service: &Service) -> Vec<String> {
    service
        .summary()
        .notices
        .iter()
        // By its name on the wire: the kind is new with the finding.
        .filter(|n| serde_json::to_value(n.kind).ok() == Some("tool_directory".into()))
        .map(|n| n.path.clone())
        .collect()
}

/// Applies the changes at `paths` as the watcher would report them.
fn apply(service: &mut Service, paths: &[PathBuf]) {
    let pending = service.read_changes(paths, "test").expect("changes read");
    let written = service.write_changes(pending);
    service.finish(written);
}

#[test]
fn tool_directories_are_skipped_for_what_they_are_not_for_their_name_finding_17b() {
    let dir = common::copy_fixture("tool_dirs");
    let root = dir.path().canonicalize().expect("root");
    let mut service = cold(&root);
    let paths: Vec<&str> = service.engine().paths().collect();
    assert_eq!(
        paths,
        [
            "app.py",
            "libs/__init__.py",
            "libs/dist/__init__.py",
            "libs/setup.py",
            "pkg/__init__.py",
            "pkg/build/__init__.py",
            "pkg/dist/wheel.py",
            "pkg/env/__init__.py",
            "pkg/venv/__init__.py",
            "tools/src/tools/__init__.py",
        ]
    );
    // Packages named build, env, venv and dist are the project's: their
    // imports resolve.
    let imports: Vec<String> = service
        .dependencies("app.py")
        .expect("app.py is indexed")
        .into_iter()
        .filter(|r| r.relationship_type.as_str() == "import")
        .map(|r| r.target_file)
        .collect();
    assert_eq!(
        imports,
        [
            "pkg/env/__init__.py",
            "pkg/build/__init__.py",
            "pkg/venv/__init__.py",
            "pkg/dist/wheel.py",
            "libs/dist/__init__.py",
            "<third-party:requests>",
        ]
    );
    // Every tool directory skipped says so, once; the hidden tool
    // directories (`.venv`) and bytecode caches go silently.
    assert_eq!(
        tool_notices(&service),
        ["build", "dist", "myenv", "tools/build", "web/node_modules"]
    );
    let summary = service.summary();
    assert!(
        summary.notices.iter().all(|n| !n.path.starts_with(".venv")),
        "{:?}",
        summary.notices
    );
    // What decides a skip is watched, and a change to it is read as a
    // fresh index reads it: `build/` becomes a package, `myenv` stops being
    // an environment, `pkg/env` becomes one.
    let dirs = service.dirs();
    for watched in ["build", "dist", "myenv", "tools/build"] {
        assert!(dirs.contains(&root.join(watched)), "{watched} not watched");
    }
    std::fs::write(root.join("build/__init__.py"), "").expect("write");
    std::fs::remove_file(root.join("myenv/pyvenv.cfg")).expect("remove");
    std::fs::write(root.join("pkg/env/pyvenv.cfg"), "home = /usr/bin\n").expect("write");
    apply(
        &mut service,
        &[
            root.join("build/__init__.py"),
            root.join("myenv/pyvenv.cfg"),
            root.join("pkg/env/pyvenv.cfg"),
        ],
    );
    // A sub-project marker decides its build directory's skip too.
    std::fs::remove_file(root.join("tools/pyproject.toml")).expect("remove");
    apply(&mut service, &[root.join("tools/pyproject.toml")]);
    let fresh = cold(&root);
    let files = |s: &Service| s.engine().paths().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(files(&service), files(&fresh));
    for now in [
        "build/__init__.py",
        "build/lib/pkg/__init__.py",
        "myenv/bin/activate_this.py",
        "tools/build/lib/tools_out.py",
    ] {
        assert!(files(&fresh).iter().any(|f| f == now), "{now} not indexed");
    }
    assert!(!files(&fresh).iter().any(|f| f.starts_with("pkg/env/")));
    assert_eq!(common::lines(&service), common::lines(&fresh));
    assert_eq!(tool_notices(&service), tool_notices(&fresh));
    assert_eq!(
        tool_notices(&fresh),
        [
            "dist",
            "myenv/lib/python3.12/site-packages",
            "pkg/env",
            "web/node_modules"
        ]
    );
}

/// The sample project, committed to a fresh repository (for `git blame`
/// and `git log`).
fn sample_repo() -> common::git_repo::GitRepo {
    let repo = common::git_repo::GitRepo::init();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sample_project");
    for file in ["pyproject.toml"]
        .into_iter()
        .map(PathBuf::from)
        .chain(common::python_files(&sample))
    {
        let file = file.strip_prefix(&sample).unwrap_or(&file).to_path_buf();
        let text = std::fs::read_to_string(sample.join(&file)).expect("sample file");
        repo.write(&file.to_string_lossy(), &text);
    }
    repo.commit("Ann", 1, "The sample");
    repo
}

#[test]
fn every_file_argument_is_read_from_the_working_directory_finding_17d() {
    let repo = sample_repo();
    let root = repo.path();
    let utils = root.join("app/utils");
    let dump = tempfile::tempdir().expect("tempdir");
    let dump = dump.path().to_string_lossy().into_owned();
    // Each command with `../models.py` from `app/utils` answers as it does
    // with `app/models.py` from the root.
    let commands: [&[&str]; 13] = [
        &["outline", "{}"],
        &["read", "{}"],
        &["deps", "{}"],
        &["dependents", "{}"],
        &["dependents", "{}", "--symbol", "User"],
        &["warnings", "{}"],
        &["explain", "--dump", &dump, "{}"],
        &["git", "blame", "{}"],
        &["git", "log", "{}"],
        &["show", "{}::User"],
        &["callers", "{}::User.save"],
        &["callees", "{}::User.save"],
        &["search", "save", "--context-file", "{}"],
    ];
    for command in commands {
        let with =
            |file: &str| -> Vec<String> { command.iter().map(|a| a.replace("{}", file)).collect() };
        let run = |cwd: &Path, args: &[String]| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let output = xfile_in(cwd, &args);
            assert!(
                output.status.success(),
                "{args:?} in {}: {}",
                cwd.display(),
                text(&output.stderr)
            );
            text(&output.stdout)
        };
        let from_root = run(&root, &with("app/models.py"));
        let from_utils = run(&utils, &with("../models.py"));
        assert!(!from_root.is_empty(), "{command:?}");
        assert_eq!(from_utils, from_root, "{command:?}");
    }
}

/// Starts until the warm-start answers hold for the tree (`cache info`
/// says so): the first start after a change records stamps too recent to
/// trust, so a later one writes them again. Waits for a precondition
/// only; what the test asserts afterwards holds however long this took.
fn warmed(root: &Path) {
    for _ in 0..8 {
        if warm::info(root).answers.current {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
        drop(Service::open(root).expect("opens"));
    }
    panic!("answers never current: {:?}", warm::info(root).answers);
}

#[test]
fn warm_answers_check_their_arguments_as_a_fresh_index_does_finding_17a() {
    let dir = common::copy_sample();
    let root = dir.path().canonicalize().expect("root");
    warmed(&root);
    let cases: [&[&str]; 12] = [
        // The typo of the report, a member that is not there, one the
        // class only inherits: errors, never "0 relationships".
        &["dependents", "app/models.py", "--symbol", "Usr"],
        &["dependents", "app/models.py", "--symbol", "User.nope"],
        &["dependents", "app/admin.py", "--symbol", "AdminBot.send"],
        &["--json", "dependents", "app/models.py", "--symbol", "Usr"],
        // Defined, with and without dependents, spaced as typed.
        &["dependents", "app/models.py", "--symbol", "User"],
        &["dependents", "app/models.py", "--symbol", " User.save "],
        &["dependents", "app/models.py", "--symbol", "Message.text"],
        &["dependents", "app/models.py", "--symbol", "<module>"],
        &["dependents", "app/models.py"],
        &["deps", "app/models.py"],
        // Files the answers do not hold.
        &["deps", "app/missing.py"],
        &["dependents", "pyproject.toml"],
    ];
    for args in cases {
        assert!(warm::info(&root).answers.current, "{args:?}: not warm");
        let warm = xfile(&root, args);
        let fresh = xfile(&root, &[&["--no-cache"], args].concat());
        assert_eq!(text(&warm.stderr), text(&fresh.stderr), "{args:?}");
        assert_eq!(warm.status.code(), fresh.status.code(), "{args:?}");
        assert_eq!(text(&warm.stdout), text(&fresh.stdout), "{args:?}");
    }
    let typo = xfile(&root, &["dependents", "app/models.py", "--symbol", "Usr"]);
    assert_eq!(typo.status.code(), Some(2));
    assert!(text(&typo.stderr).contains("names no definition"));
}

#[test]
fn a_servers_first_dependents_of_a_symbol_check_it_as_the_index_does_finding_17a() {
    use common::mcp_client::Client;
    use serde_json::json;
    // Big enough that the first index takes a while, so the first answers
    // may come from the warm-start answers; whichever answers, the answer
    // must be the index's.
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("root");
    std::fs::create_dir(root.join("pkg")).expect("pkg");
    std::fs::write(root.join("pkg/__init__.py"), "").expect("init");
    for i in 0..600 {
        let text = match i {
            0 => "def f0():\n    return 0\n\n\ndef unused():\n    return 1\n".to_string(),
            _ => format!("from pkg.m0 import f0\n\n\ndef f{i}():\n    return f0()\n"),
        };
        std::fs::write(root.join(format!("pkg/m{i}.py")), text).expect("module");
    }
    warmed(&root);
    let root_arg = root.to_str().expect("UTF-8");
    let calls = [
        json!({"file_path": "pkg/m0.py", "symbol": "f00"}),
        json!({"file_path": "pkg/m0.py", "symbol": "unused"}),
        json!({"file_path": "pkg/m0.py", "symbol": " f0 ", "limit": 3}),
        json!({"file_path": "pkg/m0.py", "symbol": "f0.nope"}),
    ];
    let mut warm = Client::serve(&["--root", root_arg], &[]);
    let answers: Vec<_> = calls
        .iter()
        .map(|args| warm.call("get_dependents", args.clone()))
        .collect();
    warm.disconnect();
    let mut indexed = Client::serve(&["--no-cache", "--root", root_arg], &[]);
    for (args, answer) in calls.iter().zip(answers) {
        assert_eq!(
            indexed.call("get_dependents", args.clone()),
            answer,
            "{args}"
        );
    }
    let (failed, typo) = indexed.call("get_dependents", calls[0].clone());
    assert!(failed && typo.contains("names no definition"), "{typo}");
}

/// The process id of a process that has exited: what a writer killed
/// with `kill -9` leaves in its temporary file's name.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().expect("true runs");
    let pid = child.id();
    child.wait().expect("true exits");
    pid
}

#[test]
fn temporary_files_of_killed_writers_are_counted_and_removed_at_the_next_start_finding_15a() {
    let dir = common::copy_sample();
    let root = dir.path().canonicalize().expect("root");
    let index = xfile(&root, &["index"]);
    assert!(index.status.success(), "{}", text(&index.stderr));
    let cache = root.join(warm::DIR);
    let blame = cache.join("blame");
    std::fs::create_dir(&blame).expect("blame directory");
    let id = "0123456789abcdef0123456789abcdef";
    let (dead, live) = (dead_pid(), std::process::id());
    // Named as writers name them: `<file>.<pid>.<id>.tmp`.
    let killed = [
        cache.join(format!("index.bin.{dead}.{id}.tmp")),
        cache.join(format!("answers.bin.{dead}.{id}.tmp")),
        blame.join(format!("00ff.bin.{dead}.{id}.tmp")),
    ];
    // A writer that still runs (this process): its file stays...
    let writing = cache.join(format!("index.bin.{live}.{id}.tmp"));
    // ... unless it is older than any write takes.
    let stale = cache.join(format!("answers.bin.{live}.{id}.tmp"));
    for path in killed.iter().chain([&writing, &stale]) {
        std::fs::write(path, vec![7u8; 1000]).expect("temporary file");
    }
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .and_then(|f| f.set_modified(hour_ago))
        .expect("mtime");
    // `cache info` counts them, and says which no writer will finish.
    let info = xfile(&root, &["--json", "cache", "info"]);
    let json: serde_json::Value = serde_json::from_slice(&info.stdout).expect("JSON");
    assert_eq!(
        json["temporary"],
        serde_json::json!({"files": 5, "bytes": 5000, "abandoned": 4}),
        "{json}"
    );
    let info = text(&xfile(&root, &["cache", "info"]).stdout);
    assert!(
        info.contains("temporary files: 5, 5 KiB; 4 left by writers that are gone")
            && info.contains("1 being written"),
        "{info}"
    );
    // The next start removes the abandoned ones...
    let deps = xfile(&root, &["deps", "app/bot.py"]);
    assert!(deps.status.success(), "{}", text(&deps.stderr));
    for path in killed.iter().chain([&stale]) {
        assert!(!path.exists(), "{} left", path.display());
    }
    assert!(writing.exists(), "a live writer's file was removed");
    // ... and so does every start after it, whether it indexes or
    // answers from the cache.
    let again = cache.join(format!("index.bin.{}.{id}.tmp", dead_pid()));
    std::fs::write(&again, b"cut short").expect("temporary file");
    let deps = xfile(&root, &["deps", "app/bot.py"]);
    assert!(deps.status.success(), "{}", text(&deps.stderr));
    assert!(!again.exists(), "left by a later start");
    let info = xfile(&root, &["--json", "cache", "info"]);
    let json: serde_json::Value = serde_json::from_slice(&info.stdout).expect("JSON");
    assert_eq!(json["temporary"]["files"], 1, "{json}");
    assert_eq!(json["temporary"]["abandoned"], 0, "{json}");
}

/// One JSON-RPC exchange with a server over its stdio.
fn rpc(
    server: &mut common::http::Server,
    lines: &mut impl std::io::BufRead,
    id: u64,
    method: &str,
    params: serde_json::Value,
) -> serde_json::Value {
    use std::io::Write;
    let stdin = server.child.stdin.as_mut().expect("stdin");
    let message =
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    writeln!(stdin, "{message}").expect("request");
    if method == "initialize" {
        let note = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        writeln!(stdin, "{note}").expect("notification");
    }
    loop {
        let mut line = String::new();
        assert!(
            lines.read_line(&mut line).expect("answer") > 0,
            "server gone"
        );
        let message: serde_json::Value = serde_json::from_str(&line).expect("JSON-RPC");
        if message["id"] == serde_json::json!(id) {
            return message;
        }
    }
}

#[test]
fn health_reports_log_writes_that_fail_finding_15b() {
    use serde_json::{Value, json};
    let project = common::copy_sample();
    let root = project.path().canonicalize().expect("root");
    // The log directory is there and writable, but a directory stands in
    // the injection log's place: every append fails, as on a full disk.
    let in_the_way = root.join(".cross_file_context_logs/injections.jsonl");
    std::fs::create_dir_all(&in_the_way).expect("in the way");
    let root_arg = root.to_str().expect("UTF-8");
    let mut server =
        common::http::Server::start(&["serve", "--root", root_arg, "--http", "127.0.0.1:0"], &[]);
    let mut lines = std::io::BufReader::new(server.child.stdout.take().expect("stdout"));
    let hello = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}});
    rpc(&mut server, &mut lines, 1, "initialize", hello);
    let read = |server: &mut common::http::Server, lines: &mut _, id, file: &str| {
        let args = json!({"name": "read_with_context", "arguments": {"file_path": file}});
        let answer = rpc(server, lines, id, "tools/call", args);
        assert_ne!(answer["result"]["isError"], true, "{answer}");
    };
    // The read answers, and its injections are logged: that fails.
    read(&mut server, &mut lines, 2, "app/admin.py");
    let (status, body) = common::http::get(&server.addr, "/health");
    let health: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(status, 429, "{health}");
    assert_eq!(health["status"], "degraded", "{health}");
    assert_eq!(health["checks"]["logs"], false, "{health}");
    let problems = health["problems"].to_string();
    assert!(
        problems.contains("writing .cross_file_context_logs/injections.jsonl failed"),
        "{health}"
    );
    // Out of the way: the next append succeeds, and the failure is gone.
    std::fs::remove_dir(&in_the_way).expect("remove");
    read(&mut server, &mut lines, 3, "app/bot.py");
    let (_, body) = common::http::get(&server.addr, "/health");
    let health: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(health["checks"]["logs"], true, "{health}");
    assert!(in_the_way.is_file(), "the log was written");
}
