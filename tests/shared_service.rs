//! `xfile serve` through the user's shared service of a root: sessions
//! on one root share one service (one index), the service's directory and
//! socket are owner-only and refused when unsafe, a stale socket is
//! replaced, a killed service is replaced and its sessions go on, the service leaves
//! after its idle time, and `--standalone` starts none. Every test has a
//! runtime directory of its own and kills the services it started.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use common::mcp_client::Client;
use common::runtime::Runtime;
use common::wait_until;
use serde_json::{Value, json};

/// A session on `root` through the services of `runtime`, with `extra`
/// environment.
fn session_with(root: &Path, runtime: &Runtime, extra: &[(&str, &str)]) -> Client {
    let mut env: Vec<(&str, String)> = runtime.env();
    env.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let root = root.to_str().expect("UTF-8 test path");
    Client::serve(&["--root", root], &env)
}

fn session(root: &Path, runtime: &Runtime) -> Client {
    session_with(root, runtime, &[])
}

/// The processes running as the shared service from `runtime`, found by
/// their command line and environment (not by the files the service
/// writes).
fn services(runtime: &Runtime) -> Vec<i32> {
    let mut found: Vec<i32> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            cmdline.split(|&b| b == 0).any(|arg| arg == b"--service") && runtime.runs_here(pid)
        })
        .collect();
    found.sort();
    found
}

fn dependents_of_models(client: &mut Client) -> String {
    let (error, text) = client.call("get_dependents", json!({"file_path": "app/models.py"}));
    assert!(!error, "{text}");
    text
}

fn cache_statistics(client: &mut Client) -> Value {
    let (error, text) = client.call("get_cache_statistics", json!({}));
    assert!(!error, "{text}");
    serde_json::from_str(&text).expect("JSON statistics")
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .expect("exists")
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn two_sessions_on_one_root_share_one_service_and_its_index() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    let mut first = session(sample.path(), &runtime);
    let answer = dependents_of_models(&mut first);
    assert!(
        answer.contains("app/bot.py") && answer.contains("User.save"),
        "{answer}"
    );
    let (error, _) = first.call("read_with_context", json!({"file_path": "app/bot.py"}));
    assert!(!error);
    let warmed = cache_statistics(&mut first);
    assert!(warmed["entries"].as_u64() > Some(0), "{warmed}");

    let mut second = session(sample.path(), &runtime);
    assert_eq!(dependents_of_models(&mut second), answer);
    // The second session's first look at the snippet cache finds what the
    // first session's read put there: one index, one cache.
    let seen = cache_statistics(&mut second);
    assert_eq!(seen["entries"], warmed["entries"], "{seen}");
    let (error, _) = second.call("read_with_context", json!({"file_path": "app/bot.py"}));
    assert!(!error);
    let after = cache_statistics(&mut second);
    assert!(
        after["hits"].as_u64() > warmed["hits"].as_u64(),
        "the second session's read hit the first one's snippets: {after}"
    );

    let running = services(&runtime);
    assert_eq!(running.len(), 1, "one service for both sessions");
    let pid_files = runtime.files("pid");
    assert_eq!(pid_files.len(), 1);
    let written = std::fs::read_to_string(&pid_files[0]).expect("pid file");
    assert_eq!(written.trim(), running[0].to_string());
    assert_eq!(runtime.files("sock").len(), 1);
}

#[test]
fn sessions_started_at_once_share_one_service() {
    let sample = common::copy_sample();
    let runtime = std::sync::Arc::new(Runtime::new());
    let root = sample.path().to_path_buf();
    let starting: Vec<_> = (0..4)
        .map(|_| {
            let (root, runtime) = (root.clone(), runtime.clone());
            std::thread::spawn(move || {
                let mut client = session(&root, &runtime);
                let answer = dependents_of_models(&mut client);
                (client, answer)
            })
        })
        .collect();
    let mut clients = Vec::new();
    for started in starting {
        let (client, answer) = started.join().expect("a session");
        assert!(answer.contains("app/bot.py"), "{answer}");
        clients.push(client);
    }
    // The services that lost the race for the lock are gone.
    wait_until("one service is left", || services(&runtime).len() == 1);
    assert_eq!(runtime.files("sock").len(), 1);
    // And no session fell back to an index of its own: what one reads,
    // every other's cache holds.
    let (error, _) = clients[0].call("read_with_context", json!({"file_path": "app/bot.py"}));
    assert!(!error);
    for client in &mut clients {
        let seen = cache_statistics(client);
        assert!(seen["entries"].as_u64() > Some(0), "{seen}");
    }
}

#[test]
fn each_session_keeps_its_own_record_and_reads() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    let mut first = session(sample.path(), &runtime);
    let mut second = session(sample.path(), &runtime);
    for file in ["app/bot.py", "app/bot.py"] {
        let (error, text) = first.call("read_with_context", json!({"file_path": file}));
        assert!(!error, "{text}");
    }
    let (error, text) = second.call("read_with_context", json!({"file_path": "app/admin.py"}));
    assert!(!error, "{text}");
    // A session's record is written before its relay sees the end.
    assert!(first.disconnect().success());
    assert!(second.disconnect().success());
    let log = sample
        .path()
        .join(".cross_file_context_logs/session_metrics.jsonl");
    let text = std::fs::read_to_string(&log).expect("session records");
    let records: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON record"))
        .collect();
    assert_eq!(records.len(), 2, "{text}");
    let mut injections: Vec<u64> = records
        .iter()
        .filter_map(|r| r["injection_stats"]["total_injections"].as_u64())
        .collect();
    injections.sort();
    assert_eq!(injections, [1, 2], "{text}");
    // Only the session that read bot.py twice re-read anything.
    let rereads: Vec<&Value> = records.iter().map(|r| &r["reread_patterns"]).collect();
    assert!(
        rereads.iter().any(|r| r.get("app/bot.py").is_some())
            && rereads
                .iter()
                .any(|r| r.as_object().is_some_and(|o| o.is_empty())),
        "{text}"
    );
    assert_eq!(
        services(&runtime).len(),
        1,
        "the service outlives its sessions"
    );
}

#[test]
fn the_directory_and_socket_are_owner_only() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    // A directory xfile creates itself.
    let dir = runtime.path().join("made-by-xfile");
    let dir_arg = dir.display().to_string();
    let mut client = session_with(sample.path(), &runtime, &[("XFILE_RUNTIME_DIR", &dir_arg)]);
    dependents_of_models(&mut client);
    assert_eq!(mode(&dir), 0o700);
    let sockets: Vec<_> = std::fs::read_dir(&dir)
        .expect("the directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "sock"))
        .collect();
    assert_eq!(sockets.len(), 1, "{sockets:?}");
    assert_eq!(mode(&sockets[0]), 0o600);
    for file in std::fs::read_dir(&dir).expect("the directory").flatten() {
        assert_eq!(mode(&file.path()), 0o600, "{:?}", file.path());
    }
    drop(client);
    kill_services_in(&dir);
}

/// Kills the services whose pid files are in `dir` (a runtime directory
/// other than a [`Runtime`]'s own), and waits until they are gone.
fn kill_services_in(dir: &Path) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.path().extension().is_none_or(|e| e != "pid") {
            continue;
        }
        let Some(pid) = std::fs::read_to_string(entry.path())
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
        else {
            continue;
        };
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let wanted = format!("XFILE_RUNTIME_DIR={}", dir.display());
        if environ.split(|&b| b == 0).any(|e| e == wanted.as_bytes()) {
            // SAFETY: kill(2) on a service this test started, checked above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

#[test]
fn an_unsafe_directory_is_refused_and_the_session_served_in_process() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    let open = runtime.path().join("open");
    std::fs::create_dir(&open).expect("a directory");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let link = runtime.path().join("link");
    let private = runtime.path().join("private");
    std::fs::create_dir(&private).expect("a directory");
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    std::os::unix::fs::symlink(&private, &link).expect("a link");
    for (dir, why) in [(&open, "open to other users"), (&link, "symbolic link")] {
        let log = runtime.path().join("serve.log");
        let dir_arg = dir.display().to_string();
        let mut env = runtime.env();
        env.retain(|(k, _)| *k != "XFILE_RUNTIME_DIR");
        env.push(("XFILE_RUNTIME_DIR", dir_arg));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let root = sample.path().to_str().expect("UTF-8");
        let mut client = Client::serve_logging(
            &["--root", root],
            &env,
            std::fs::File::create(&log).expect("a log").into(),
        );
        let answer = dependents_of_models(&mut client);
        assert!(answer.contains("app/bot.py"), "{answer}");
        assert!(client.disconnect().success());
        let logged = std::fs::read_to_string(&log).expect("the log");
        assert!(
            logged.contains(why) && logged.contains("serving standalone"),
            "{logged}"
        );
        assert_eq!(std::fs::read_dir(dir).expect("dir").count(), 0, "{dir:?}");
    }
    assert!(services(&runtime).is_empty());
}

#[test]
fn a_stale_socket_file_is_replaced() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    let mut client = session(sample.path(), &runtime);
    let answer = dependents_of_models(&mut client);
    let socket = runtime.files("sock").pop().expect("a socket");
    assert!(client.disconnect().success());
    drop(client);
    runtime.kill_services();
    // What a service killed at a bad moment leaves: a socket file no one
    // listens on.
    let _ = std::fs::remove_file(&socket);
    drop(std::os::unix::net::UnixListener::bind(&socket).expect("bind"));
    assert!(socket.exists());
    assert!(std::os::unix::net::UnixStream::connect(&socket).is_err());

    let mut client = session(sample.path(), &runtime);
    assert_eq!(dependents_of_models(&mut client), answer);
    assert!(std::os::unix::net::UnixStream::connect(&socket).is_ok());
    assert_eq!(services(&runtime).len(), 1);
}

/// The service is killed while a session is open: the session goes on
/// with another service, which it opened the session with again (a
/// request it had sent and not had answered is told to ask again), and a
/// later session shares that one.
#[test]
fn a_service_killed_mid_session_is_replaced_and_the_session_goes_on() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    let mut first = session(sample.path(), &runtime);
    let answer = dependents_of_models(&mut first);
    let killed = services(&runtime);
    assert_eq!(killed.len(), 1);
    runtime.kill_services();
    // A request may reach the relay before it sees the service gone: it
    // is answered with an error saying to ask again, never lost.
    let mut again = None;
    for _ in 0..2 {
        let response = first.request(
            "tools/call",
            json!({"name": "get_dependents", "arguments": {"file_path": "app/models.py"}}),
        );
        match response.get("error") {
            Some(error) => assert!(
                error["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("ask again")),
                "{response}"
            ),
            None => {
                again = response["result"]["content"][0]["text"]
                    .as_str()
                    .map(str::to_string);
                break;
            }
        }
    }
    assert_eq!(again.as_deref(), Some(answer.as_str()));
    let running = services(&runtime);
    assert_eq!(running.len(), 1);
    assert_ne!(running, killed);

    let mut next = session(sample.path(), &runtime);
    assert_eq!(dependents_of_models(&mut next), answer);
    assert_eq!(services(&runtime), running, "the next session shares it");
    assert!(first.disconnect().success());
}

/// A request the client is still writing when the service goes away is
/// not lost: the relay hands it whole to the service that replaces it.
#[test]
fn a_request_half_written_when_the_service_dies_is_answered_by_the_next() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    let mut client = session(sample.path(), &runtime);
    let answer = dependents_of_models(&mut client);
    let killed = services(&runtime);
    let line = client.request_line(
        "tools/call",
        json!({"name": "get_dependents", "arguments": {"file_path": "app/models.py"}}),
    );
    let (head, tail) = line.as_bytes().split_at(line.len() / 2);
    let response = client.request_in_pieces(&[head, tail], |client| {
        // The relay holds the half line when its service dies; it has
        // seen the service go once it runs another.
        client.wait_until_stdin_read();
        runtime.kill_services();
        wait_until("another service runs", || {
            let running = services(&runtime);
            !running.is_empty() && running != killed
        });
    });
    assert_eq!(
        response["result"]["content"][0]["text"].as_str(),
        Some(answer.as_str()),
        "{response}"
    );
}

#[test]
fn the_service_leaves_after_its_idle_time() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    let mut client = session_with(
        sample.path(),
        &runtime,
        &[("XFILE_SERVICE_IDLE_SECONDS", "1")],
    );
    dependents_of_models(&mut client);
    assert_eq!(services(&runtime).len(), 1);
    assert!(client.disconnect().success());
    wait_until("the idle service has left", || {
        services(&runtime).is_empty()
    });
    wait_until("its files are gone", || {
        ["sock", "lock", "pid"]
            .iter()
            .all(|e| runtime.files(e).is_empty())
    });
    // Its log stays, for a look at what it did.
    assert_eq!(runtime.files("log").len(), 1);
}

#[test]
fn standalone_starts_no_service() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    let env = runtime.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let root = sample.path().to_str().expect("UTF-8");
    let mut client = Client::serve(&["--standalone", "--root", root], &env);
    let answer = dependents_of_models(&mut client);
    assert!(answer.contains("app/bot.py"), "{answer}");
    assert!(client.disconnect().success());
    assert!(services(&runtime).is_empty());
    assert_eq!(std::fs::read_dir(runtime.path()).expect("dir").count(), 0);
}

#[test]
fn a_session_without_the_cache_gets_a_service_of_its_own() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    let mut cached = session(sample.path(), &runtime);
    let env = runtime.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let root = sample.path().to_str().expect("UTF-8");
    let mut uncached = Client::serve(&["--no-cache", "--root", root], &env);
    assert_eq!(
        dependents_of_models(&mut cached),
        dependents_of_models(&mut uncached)
    );
    assert_eq!(services(&runtime).len(), 2);
}

/// Another user reaching the socket (its directory and mode loosened
/// here on purpose) gets no session: the service checks the peer's user
/// id. Needs root (to run a client as another user) and python3.
#[test]
fn another_user_gets_no_session() {
    let python = Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !python {
        eprintln!("skipped: needs root and python3 to connect as another user");
        return;
    }
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    let mut client = session(sample.path(), &runtime);
    dependents_of_models(&mut client);
    let socket = runtime.files("sock").pop().expect("a socket");
    std::fs::set_permissions(runtime.path(), std::fs::Permissions::from_mode(0o711))
        .expect("chmod");
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    let connect = "import socket, sys\n\
                   s = socket.socket(socket.AF_UNIX)\n\
                   s.connect(sys.argv[1])\n\
                   s.settimeout(20)\n\
                   print(repr(s.recv(64)))\n";
    let run_as = |uid: u32| {
        use std::os::unix::process::CommandExt;
        let output = Command::new("python3")
            .args(["-c", connect])
            .arg(&socket)
            .uid(uid)
            .gid(uid)
            .output()
            .expect("python3 runs");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    };
    assert_eq!(run_as(65534), "b''", "refused without a greeting");
    assert!(run_as(0).contains("xfile-service"), "the user is greeted");
    // The user's session goes on.
    dependents_of_models(&mut client);
}
