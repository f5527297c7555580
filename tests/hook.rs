//! `xfile hook`: after a Read of a Python file of a project it prints the
//! context of exactly the lines read as Claude Code's `additionalContext`,
//! through the root's shared service; anything else gives nothing, and
//! always status 0. `setup --editor claude-code` writes the hook, and the
//! command it wrote answers. Every test has a runtime directory of its
//! own and kills the services it started.

use crate::common;
use crate::edit_hook::edit_call;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::runtime::Runtime;
use serde_json::{Value, json};

/// A cap no test machine reaches: these tests check answers, not time.
const GENEROUS_MS: &str = "120000";

/// Runs `program args` with `input` on stdin and the runtime's environment.
pub(crate) fn run(program: &str, args: &[&str], input: &str, env: &[(&str, String)]) -> Output {
    let mut child = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("XFILE_HOOK_TIMEOUT_MS", GENEROUS_MS)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("xfile hook starts");
    if let Some(mut stdin) = child.stdin.take() {
        // The hook may stop reading early (it ignores input it cannot use).
        let _ = stdin.write_all(input.as_bytes());
    }
    child.wait_with_output().expect("xfile hook ends")
}

pub(crate) fn hook(input: &str, runtime: &Runtime) -> Output {
    run(
        env!("CARGO_BIN_EXE_xfile"),
        &["hook"],
        input,
        &runtime.env(),
    )
}

/// The documented input of a Read of `file`, in an agent session of its
/// own (so that nothing was given to it before).
pub(crate) fn read_call(file: &Path, offset: Option<u64>, limit: Option<u64>) -> String {
    static SESSIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let session = format!("s-{}-{n}", std::process::id());
    read_call_in(&session, file, offset, limit)
}

/// The documented input of a Read of `file` in agent session `session`.
fn read_call_in(session: &str, file: &Path, offset: Option<u64>, limit: Option<u64>) -> String {
    let mut input = json!({"file_path": file});
    if let Some(offset) = offset {
        input["offset"] = json!(offset);
    }
    if let Some(limit) = limit {
        input["limit"] = json!(limit);
    }
    json!({
        "session_id": session,
        "cwd": file.parent(),
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": input,
        "tool_response": {"type": "text"},
    })
    .to_string()
}

/// The `additionalContext` of a hook's answer, checking the rest of it.
pub(crate) fn context(output: &Output) -> String {
    assert!(output.status.success(), "{output:?}");
    let answer: Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert_eq!(answer["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("a context text")
        .to_string()
}

pub(crate) fn assert_quiet(output: &Output, what: &str) {
    assert!(output.status.success(), "{what}: {output:?}");
    assert!(output.stdout.is_empty(), "{what}: {output:?}");
}

#[test]
fn a_read_gets_the_definitions_its_lines_use_and_no_others() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    // Lines 8-10 of app/bot.py: `class EchoBot` and `__init__`, which
    // builds a `Storage`; `User`, `Message` and the retry helper are used
    // further down only.
    let bot = sample.path().join("app/bot.py");
    let text = context(&hook(&read_call(&bot, Some(8), Some(3)), &runtime));
    assert!(
        text.lines()
            .any(|line| line == "class Storage  # app/storage.py:6-16"),
        "{text}"
    );
    for unused in ["class Message", "class User", "retry_with_backoff"] {
        assert!(!text.contains(unused), "{unused}: {text}");
    }
    // Line 1 imports a third-party module only: nothing to add.
    assert_quiet(
        &hook(&read_call(&bot, Some(1), Some(1)), &runtime),
        "a line that uses nothing of the project",
    );
    // The file read whole: those further down come too.
    let whole = context(&hook(&read_call(&bot, None, None), &runtime));
    assert!(
        whole.contains("class Message(Base)  # app/models.py"),
        "{whole}"
    );
}

#[test]
fn a_read_in_a_sub_project_is_served_from_the_agents_project() {
    let tree = common::copy_fixture("sub_projects");
    std::fs::write(
        tree.path().join("pyproject.toml"),
        "[project]\nname = \"mono\"\n",
    )
    .expect("write the top marker");
    let runtime = Runtime::new();
    let test = tree.path().join("libs/alpha/tests/test_core.py");
    // Each call in a session of its own, from the agent's `cwd`: the
    // context's line for `run`, the definition the file uses.
    let run_line = |cwd: &Path| {
        let mut call: Value = serde_json::from_str(&read_call(&test, None, None)).expect("JSON");
        call["cwd"] = json!(cwd);
        let text = context(&hook(&call.to_string(), &runtime));
        match text.lines().find(|line| line.starts_with("def run()")) {
            Some(line) => line.to_string(),
            None => text,
        }
    };
    // The agent works at the top of the tree: its MCP session serves that
    // root, and so does the hook, with paths from there.
    assert_eq!(
        run_line(tree.path()),
        "def run()  # libs/alpha/alpha/core.py:5-6"
    );
    // An agent working inside the sub-project, in a directory with no
    // marker of its own, and one working in a directory that is no project
    // itself (its marker is above it, as in a home directory kept in git),
    // leave the file its own root: the sub-project.
    for cwd in ["libs/alpha/tests", "libs"] {
        assert_eq!(
            run_line(&tree.path().join(cwd)),
            "def run()  # alpha/core.py:5-6",
            "from {cwd}"
        );
    }
    // A file outside the agent's project is served from its own.
    let elsewhere = tempfile::tempdir().expect("tempdir");
    std::fs::write(elsewhere.path().join("pyproject.toml"), "").expect("write a marker");
    assert_eq!(run_line(elsewhere.path()), "def run()  # alpha/core.py:5-6");
}

/// The service a hook used is killed: a later call starts another and
/// answers again (a call may print nothing while that one indexes, since
/// the hook answers within its cap or not at all).
#[test]
fn a_hook_after_its_service_was_killed_starts_another_and_answers() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    let bot = sample.path().join("app/bot.py");
    let before = context(&hook(&read_call(&bot, Some(8), Some(3)), &runtime));
    assert!(before.contains("class Storage"), "{before}");
    let killed = runtime.service_pids();
    assert_eq!(killed.len(), 1, "one service answered the first call");
    runtime.kill_services();
    let mut after = String::new();
    common::wait_until("a hook call answers again", || {
        let output = hook(&read_call(&bot, Some(8), Some(3)), &runtime);
        assert!(output.status.success(), "a hook always exits 0");
        after = String::from_utf8_lossy(&output.stdout).into_owned();
        !after.is_empty()
    });
    let answered: Value = serde_json::from_str(&after).expect("the hook prints JSON");
    assert_eq!(
        answered["hookSpecificOutput"]["additionalContext"].as_str(),
        Some(before.as_str())
    );
    let running = runtime.service_pids();
    assert_eq!(running.len(), 1, "one service again");
    assert_ne!(running, killed);
}

/// A hook call is a question of the agent's session, not a session: the
/// service writes no session record for it, only for the MCP session.
#[test]
fn hook_calls_leave_no_session_record() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    let bot = sample.path().join("app/bot.py");
    for _ in 0..2 {
        let call = read_call(&bot, Some(8), Some(3));
        assert!(context(&hook(&call, &runtime)).contains("class Storage"));
    }
    let env = runtime.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let root = sample.path().to_str().expect("UTF-8 test path");
    let mut session = common::mcp_client::Client::serve(&["--root", root], &env);
    let (error, text) = session.call("read_with_context", json!({"file_path": "app/bot.py"}));
    assert!(!error, "{text}");
    // The session's record is written before its relay sees the end.
    assert!(session.disconnect().success());
    let log = sample
        .path()
        .join(".cross_file_context_logs/session_metrics.jsonl");
    let records = std::fs::read_to_string(&log).expect("session records");
    assert_eq!(records.lines().count(), 1, "{records}");
}

/// One agent session is not given a definition twice while it is
/// unchanged: a Read that uses nothing new gives nothing, a later one names
/// what came before, a changed definition comes again, and another session
/// gets everything.
#[test]
fn a_session_is_given_each_definition_once_until_it_changes() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    let bot = sample.path().join("app/bot.py");
    let first = context(&hook(
        &read_call_in("agent-a", &bot, Some(8), Some(3)),
        &runtime,
    ));
    assert!(
        first.contains("class Storage  # app/storage.py:6-16"),
        "{first}"
    );
    assert_quiet(
        &hook(&read_call_in("agent-a", &bot, Some(8), Some(3)), &runtime),
        "the same lines again",
    );
    let whole = context(&hook(&read_call_in("agent-a", &bot, None, None), &runtime));
    assert!(whole.contains("class Message(Base)"), "{whole}");
    assert!(!whole.contains("class Storage  #"), "{whole}");
    assert!(
        whole.ends_with("Given earlier in this session, unchanged: class Storage."),
        "{whole}"
    );
    let other = context(&hook(
        &read_call_in("agent-b", &bot, Some(8), Some(3)),
        &runtime,
    ));
    assert_eq!(other, first, "another session starts with nothing given");
    let storage = sample.path().join("app/storage.py");
    let text = std::fs::read_to_string(&storage).unwrap();
    let changed = text.replace(
        "def put(self, row: models.Base)",
        "def put(self, row: models.Base, at: int = 0)",
    );
    assert_ne!(
        changed, text,
        "the fixture has the signature this test edits"
    );
    std::fs::write(&storage, changed).unwrap();
    let again = context(&hook(
        &read_call_in("agent-a", &bot, Some(8), Some(3)),
        &runtime,
    ));
    assert!(
        again.contains("def put(self, row: models.Base, at: int = 0)"),
        "{again}"
    );
}

#[test]
fn hook_token_limit_cuts_the_context_at_a_line() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    let bot = sample.path().join("app/bot.py");
    let call = read_call(&bot, Some(12), Some(5));
    let full = context(&hook(&call, &runtime));
    assert!(full.contains("retry_with_backoff"), "{full}");
    std::fs::write(
        sample.path().join(".cross_file_context_links.yml"),
        "hook_token_limit: 40\n",
    )
    .expect("write the configuration");
    let cut = context(&hook(&call, &runtime));
    assert!(full.starts_with(&cut) && cut.len() < full.len(), "{cut}");
    assert!(!cut.contains("retry_with_backoff"), "{cut}");
}

/// The hook's read names everything the lines use within
/// `hook_token_limit`, past a smaller `context_token_limit`, which still
/// bounds a `read_with_context` call's section.
#[test]
fn the_hook_names_what_the_lines_use_within_its_own_limit() {
    let sample = common::copy_sample();
    common::write(
        sample.path(),
        ".cross_file_context_links.yml",
        "context_token_limit: 80\nenable_injection_logging: false\n",
    );
    let service = xfile::service::Service::open(sample.path()).expect("index the sample");
    let read = service.read_with_context("app/bot.py").expect("read");
    assert!(read.contains("Not shown for the 80-token budget"), "{read}");
    let runtime = Runtime::new();
    let bot = sample.path().join("app/bot.py");
    let text = context(&hook(&read_call(&bot, None, None), &runtime));
    assert!(!text.contains("Not shown"), "{text}");
    for used in ["Message", "Storage", "retry_with_backoff"] {
        assert!(text.contains(used), "{used}: {text}");
    }
    assert!(
        xfile::service::context::count_tokens(&text) <= 1_500,
        "{text}"
    );
}

#[test]
fn anything_but_a_read_of_python_in_a_project_gives_nothing() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    let bot = sample.path().join("app/bot.py");
    let bash = read_call(&bot, None, None).replace("\"Read\"", "\"Bash\"");
    assert_quiet(&hook(&bash, &runtime), "a tool the hook does not serve");
    let toml = sample.path().join("pyproject.toml");
    assert_quiet(
        &hook(&read_call(&toml, None, None), &runtime),
        "a non-Python file",
    );
    assert_quiet(&hook("{\"tool_name\": \"Read\", ", &runtime), "cut JSON");
    assert_quiet(&hook("not json at all", &runtime), "not JSON");
    assert_quiet(&hook("", &runtime), "no input");
    let missing = sample.path().join("app/missing.py");
    assert_quiet(
        &hook(&read_call(&missing, None, None), &runtime),
        "a missing file",
    );
    let outside = tempfile::tempdir().expect("tempdir");
    let loose = outside.path().join("loose.py");
    std::fs::write(&loose, "from os import path\nx = path.join('a')\n").expect("write");
    let marked = loose
        .ancestors()
        .any(|dir| dir.join(".git").exists() || dir.join("pyproject.toml").exists());
    if !marked {
        assert_quiet(
            &hook(&read_call(&loose, None, None), &runtime),
            "a file in no project",
        );
    }
    // None of these was worth a service.
    assert!(
        runtime.files("sock").is_empty(),
        "{:?}",
        runtime.files("sock")
    );
}

#[test]
fn a_hook_that_cannot_reach_a_service_logs_why_and_prints_nothing() {
    let sample = common::copy_sample();
    let bot = sample.path().join("app/bot.py");
    let env = [("XFILE_RUNTIME_DIR", "relative/dir".to_string())];
    let output = run(
        env!("CARGO_BIN_EXE_xfile"),
        &["hook"],
        &read_call(&bot, Some(1), Some(5)),
        &env,
    );
    assert_quiet(&output, "no runtime directory");
    let log = std::fs::read_to_string(sample.path().join(".cross_file_context_logs/hook.log"))
        .expect("the hook log");
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(log.contains("must be an absolute path"), "{log}");
}

#[test]
fn setup_writes_the_hook_once_beside_other_hooks_and_the_command_answers() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    let home = tempfile::tempdir().expect("home");
    let settings = sample.path().join(".claude/settings.json");
    std::fs::create_dir_all(sample.path().join(".claude")).expect("mkdir");
    let theirs = json!({"matcher": "Bash", "hooks": [{"type": "command", "command": "echo ran"}]});
    std::fs::write(
        &settings,
        json!({"model": "sonnet", "hooks": {"PostToolUse": [theirs.clone()]}}).to_string(),
    )
    .expect("write settings");
    let setup = || {
        let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
            .args(["setup", "--editor", "claude-code", "--yes", "--root"])
            .arg(sample.path())
            .env("XFILE_HOME", home.path())
            .output()
            .expect("setup runs");
        assert!(output.status.success(), "{output:?}");
    };
    setup();
    setup();
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).expect("settings")).expect("JSON");
    assert_eq!(written["model"], "sonnet");
    let groups = written["hooks"]["PostToolUse"]
        .as_array()
        .expect("PostToolUse hooks");
    assert_eq!(groups.len(), 3, "{written}");
    assert_eq!(groups[0], theirs);
    assert_eq!(groups[1]["matcher"], "Read");
    assert_eq!(groups[2]["matcher"], "Edit|MultiEdit|Write");
    let command_of = |group: &Value| {
        let ours = group["hooks"].as_array().expect("hooks");
        assert_eq!(ours.len(), 1, "{written}");
        assert_eq!(ours[0]["type"], "command");
        let command = ours[0]["command"].as_str().expect("a command");
        assert!(command.ends_with(" hook"), "{command}");
        command.to_string()
    };
    let command = command_of(&groups[1]);
    let edit_command = command_of(&groups[2]);
    // Run as Claude Code runs it: by the shell, the documented JSON on stdin.
    let as_claude_code_runs =
        |command: &str, input: &str| run("sh", &["-c", command], input, &runtime.env());
    let bot = sample.path().join("app/bot.py");
    let output = as_claude_code_runs(&command, &read_call(&bot, Some(8), Some(3)));
    let text = context(&output);
    assert!(
        text.lines()
            .any(|line| line == "class Storage  # app/storage.py:6-16"),
        "{text}"
    );
    // An Edit that adds a required parameter: the call that does not pass
    // it is named.
    let storage = sample.path().join("app/storage.py");
    let (old, new) = (
        "def put(self, row: models.Base):",
        "def put(self, row: models.Base, key):",
    );
    let before = std::fs::read_to_string(&storage).expect("read");
    std::fs::write(&storage, before.replacen(old, new, 1)).expect("write");
    let output = as_claude_code_runs(&edit_command, &edit_call("Edit", &storage, old, new));
    assert_eq!(
        context(&output),
        "[xfile: what the edit of app/storage.py may break]\n\
         Storage.put changed at line 12: `def put(self, row: models.Base, key)` (was `def put(self, row: models.Base)`)\n  \
         app/models.py:21 in User.save: does not pass `key`"
    );
    // A Write of a new file breaks nothing.
    let new_file = sample.path().join("app/extra.py");
    std::fs::write(&new_file, "X = 1\n").expect("write");
    assert_quiet(
        &as_claude_code_runs(&edit_command, &edit_call("Write", &new_file, "", "X = 1\n")),
        "a new file",
    );
    let doctor = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["doctor", "--root"])
        .arg(sample.path())
        .env("XFILE_HOME", home.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("doctor runs");
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        report.contains("✓ Claude Code hook (.claude/settings.json): runs `")
            && report.contains("after each Read and each edit"),
        "{report}"
    );
}

#[test]
fn setup_refuses_a_settings_file_that_is_a_link() {
    let sample = common::copy_sample();
    let home = tempfile::tempdir().expect("home");
    let elsewhere = tempfile::tempdir().expect("elsewhere");
    let target = elsewhere.path().join("settings.json");
    std::fs::write(&target, "{\"theirs\": true}\n").expect("write");
    std::fs::create_dir_all(sample.path().join(".claude")).expect("mkdir");
    std::os::unix::fs::symlink(&target, sample.path().join(".claude/settings.json"))
        .expect("symlink");
    let output = Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(["setup", "--editor", "claude-code", "--yes", "--root"])
        .arg(sample.path())
        .env("XFILE_HOME", home.path())
        .output()
        .expect("setup runs");
    assert!(!output.status.success(), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("symbolic link"),
        "{output:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&target).expect("target"),
        "{\"theirs\": true}\n"
    );
}

/// `xfile hook [AGENT]`: `claude-code` names the protocol spoken by
/// default; an agent xfile does not know, or arguments it does not know,
/// still exit 0 with nothing on stdout.
#[test]
fn the_agent_argument_is_taken_and_nothing_unknown_fails() {
    let sample = common::copy_sample();
    let runtime = Runtime::new();
    let bot = sample.path().join("app/bot.py");
    let named = run(
        env!("CARGO_BIN_EXE_xfile"),
        &["hook", "claude-code"],
        &read_call(&bot, Some(8), Some(3)),
        &runtime.env(),
    );
    assert!(context(&named).contains("class Storage"));
    for args in [
        &["hook", "some-other-agent"][..],
        &["hook", "--bogus", "x"][..],
    ] {
        let output = run(
            env!("CARGO_BIN_EXE_xfile"),
            args,
            &read_call(&bot, Some(8), Some(3)),
            &runtime.env(),
        );
        assert_quiet(&output, &format!("{args:?}"));
    }
    runtime.kill_services();
}
