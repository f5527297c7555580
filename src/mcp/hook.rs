//! `xfile hook`: run by an agent after one of its tool calls (Claude
//! Code's `PostToolUse`), with the call as JSON on stdin. After a Read of
//! a Python file of a project it asks the root's shared service (started
//! if absent) for the context of the lines read; after an Edit, MultiEdit
//! or Write, for what the edit may break. It prints the answer as the
//! hook's `additionalContext`, or nothing when there is none.
//!
//! It must never get in the agent's way: whatever happens it exits 0 and
//! prints valid JSON or nothing, and gives up after a hard time cap
//! (nothing rather than late). Its own failures go, one line each, to the
//! project's log directory.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::given::Given;
use super::relay;
use super::rendezvous;
use crate::service::context::count_tokens;
use crate::service::jsonl::LOG_DIR;
use crate::workspace::config::Config;
use crate::workspace::marked_root;

/// The name the hook gives itself to the service, which writes no session
/// record for it.
pub(crate) const CLIENT_NAME: &str = "xfile-hook";
/// Overrides the time cap, in milliseconds (tests, slow machines).
pub(crate) const TIMEOUT_ENV: &str = "XFILE_HOOK_TIMEOUT_MS";
/// The time cap: the agent waits for the hook before it goes on, so it
/// must be short; a cold service that is not ready by then answers the
/// next Read.
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(2000);
/// The hook input read at most: a Read's `tool_response` holds the file
/// read, which may be large; beyond this it is not a call worth serving.
const INPUT_BYTES: u64 = 32 * 1024 * 1024;
/// The hook log is rotated (to `hook.log.old`) past this size.
const LOG_BYTES: u64 = 1024 * 1024;
/// A reply line from the service read at most.
const REPLY_BYTES: u64 = 16 * 1024 * 1024;

/// What the hook found out: an answer to print, or nothing (with, when
/// something went wrong in a project, the line to log).
struct Outcome {
    answer: Option<Value>,
    root: Option<PathBuf>,
    failure: Option<String>,
}

impl Outcome {
    fn nothing() -> Outcome {
        Outcome {
            answer: None,
            root: None,
            failure: None,
        }
    }
}

/// Runs the hook on this process's stdin and stdout. Never fails.
pub fn run_hook() {
    let cap = std::env::var(TIMEOUT_ENV)
        .ok()
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .map_or(DEFAULT_TIMEOUT, Duration::from_millis);
    let deadline = Instant::now() + cap;
    let (send, receive) = mpsc::channel();
    // The work runs on a thread of its own so that a stdin that never
    // ends or a service that never answers cannot hold the hook past its
    // cap: the process leaves without it.
    let (root_send, root_receive) = mpsc::channel::<(PathBuf, PathBuf)>();
    std::thread::spawn(move || {
        let outcome = answer(deadline, &root_send);
        let _ = send.send(outcome);
    });
    let outcome = match receive.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(outcome) => outcome,
        Err(_) => match root_receive.try_iter().last() {
            Some((root, file)) => Outcome {
                root: Some(root),
                failure: Some(format!(
                    "{}: no answer within {} ms",
                    file.display(),
                    cap.as_millis()
                )),
                answer: None,
            },
            None => Outcome::nothing(),
        },
    };
    if let (Some(root), Some(failure)) = (&outcome.root, &outcome.failure) {
        log_failure(root, failure);
    }
    if let Some(answer) = outcome.answer {
        let mut out = std::io::stdout().lock();
        // A reader gone away is not the hook's problem: it exits 0 anyway.
        let _ = writeln!(out, "{answer}");
        let _ = out.flush();
    }
}

/// The hook's answer to the call on stdin. Tells `root_found` the project
/// and file once
/// they are known, so a timeout can still be logged there.
fn answer(deadline: Instant, root_found: &mpsc::Sender<(PathBuf, PathBuf)>) -> Outcome {
    let mut input = Vec::new();
    if std::io::stdin()
        .take(INPUT_BYTES)
        .read_to_end(&mut input)
        .is_err()
    {
        return Outcome::nothing();
    }
    let Ok(call) = serde_json::from_slice::<Value>(&input) else {
        return Outcome::nothing();
    };
    let Some(read) = ToolCall::of(&call) else {
        return Outcome::nothing();
    };
    let _ = root_found.send((read.root.clone(), read.file.clone()));
    let failed = |why: String| Outcome {
        answer: None,
        root: Some(read.root.clone()),
        failure: Some(format!("{}: {why}", read.file.display())),
    };
    let text = match ask_service(&read, deadline) {
        Ok(text) => text,
        Err(why) => return failed(why),
    };
    let config = Config::load(&read.root).0;
    let context = match read.asked {
        Asked::Lines { .. } => {
            // The service already keeps the section within
            // `context_token_limit`: when that is the smaller limit the hook
            // need not count again, and spares the agent the tokenizer's
            // start-up on every Read.
            let limit = match config.context_token_limit <= config.hook_token_limit {
                true => None,
                false => Some(config.hook_token_limit),
            };
            let context = context_of(&text, limit);
            // What this agent session was given already and is unchanged
            // is not given again.
            match (context, read.session.as_deref().and_then(Given::load)) {
                (Some(context), Some(mut given)) => {
                    let new = given.strip(&context);
                    given.save();
                    new
                }
                (context, _) => context,
            }
        }
        // Each answer is about a new edit: nothing to leave out.
        Asked::Breaks => cut(text.trim(), Some(config.hook_token_limit)),
    };
    let Some(context) = context else {
        return Outcome {
            root: Some(read.root),
            ..Outcome::nothing()
        };
    };
    Outcome {
        answer: Some(json!({
            "hookSpecificOutput": {
                "hookEventName": "PostToolUse",
                "additionalContext": context,
            }
        })),
        root: Some(read.root),
        failure: None,
    }
}

/// A Read or an edit of a Python file inside a project, as the hook input
/// gives it.
struct ToolCall {
    /// Canonical.
    root: PathBuf,
    /// Canonical, inside `root`.
    file: PathBuf,
    asked: Asked,
    /// The agent's session, for what it was given already.
    session: Option<String>,
}

/// What the hook asks the service for.
#[derive(Debug, PartialEq)]
enum Asked {
    /// The context of these lines (a Read).
    Lines { start: u64, end: Option<u64> },
    /// What the edit may break.
    Breaks,
}

/// The agent's tools that change a file.
const EDIT_TOOLS: [&str; 3] = ["Edit", "MultiEdit", "Write"];

impl ToolCall {
    /// The Read or edit in `call`, if it is one the hook serves.
    fn of(call: &Value) -> Option<ToolCall> {
        if call
            .get("hook_event_name")
            .and_then(Value::as_str)
            .is_some_and(|event| event != "PostToolUse")
        {
            return None;
        }
        let tool = call.get("tool_name").and_then(Value::as_str)?;
        if tool != "Read" && !EDIT_TOOLS.contains(&tool) {
            return None;
        }
        let input = call.get("tool_input")?;
        let given = PathBuf::from(input.get("file_path")?.as_str()?);
        let given = match given.is_absolute() {
            true => given,
            false => PathBuf::from(call.get("cwd")?.as_str()?).join(given),
        };
        let file = given.canonicalize().ok()?;
        if file.extension().is_none_or(|e| e != "py") || !file.is_file() {
            return None;
        }
        // The agent's project, when it is one (it holds the marker) and the
        // file is in it: the root its MCP session serves, so both share one
        // service and one set of paths, sub-projects included. A marker
        // found above the agent's directory is not taken: a home directory
        // kept in git would make every Read index the whole home.
        // Otherwise the file's own project; a file under no marker is
        // nobody's to index.
        let root = agent_project(call)
            .filter(|dir| file.starts_with(dir) && marked_root(dir).as_deref() == Some(dir))
            .or_else(|| marked_root(file.parent()?))?;
        let number = |key: &str| input.get(key).and_then(Value::as_u64);
        let start = number("offset").filter(|&n| n > 0).unwrap_or(1);
        let end = number("limit")
            .filter(|&n| n > 0)
            .map(|limit| start.saturating_add(limit - 1));
        let asked = match tool {
            "Read" => Asked::Lines { start, end },
            _ => Asked::Breaks,
        };
        let session = call
            .get("session_id")
            .and_then(Value::as_str)
            .map(str::to_string);
        Some(ToolCall {
            root,
            file,
            asked,
            session,
        })
    }
}

/// Set by Claude Code for its hook commands: the project the agent was
/// started in (the input's `cwd` moves when the agent changes directory).
const PROJECT_DIR_ENV: &str = "CLAUDE_PROJECT_DIR";

/// The directory the agent works in: `CLAUDE_PROJECT_DIR`, else the
/// input's `cwd`.
fn agent_project(call: &Value) -> Option<PathBuf> {
    let dir = std::env::var_os(PROJECT_DIR_ENV)
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from(call.get("cwd")?.as_str()?)))?;
    dir.canonicalize().ok()
}

/// The text of the service's answer to `read`: `read_with_context` for a
/// Read, `edit_impact` for an edit.
fn ask_service(read: &ToolCall, deadline: Instant) -> Result<String, String> {
    let place = rendezvous::place(&read.root, false)?;
    let stream = relay::connect_or_start(&read.root, &place, false)?;
    let left = || {
        let left = deadline.saturating_duration_since(Instant::now());
        // A zero timeout means none to the socket: keep it positive.
        Some(left.max(Duration::from_millis(1)))
    };
    stream.set_read_timeout(left()).map_err(|e| e.to_string())?;
    stream
        .set_write_timeout(left())
        .map_err(|e| e.to_string())?;
    let mut writer = stream.try_clone().map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream);
    let mut send = |message: Value| {
        writeln!(writer, "{message}").map_err(|e| format!("cannot write to the service: {e}"))
    };
    send(json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")},
        }
    }))?;
    reply(&mut reader, 1)?;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    let mut arguments = json!({"file_path": read.file.to_string_lossy()});
    let tool = match read.asked {
        Asked::Lines { start, end } => {
            arguments["start_line"] = json!(start);
            if let Some(end) = end {
                arguments["end_line"] = json!(end);
            }
            "read_with_context"
        }
        Asked::Breaks => "edit_impact",
    };
    send(json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }))?;
    let result = reply(&mut reader, 2)?;
    // The session ends when the service sees the connection close.
    let _ = writer.shutdown(std::net::Shutdown::Both);
    let text = result
        .pointer("/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(format!("{tool} failed: {text}"));
    }
    Ok(text.to_string())
}

/// The result of the reply to request `id`, skipping notifications.
fn reply(reader: &mut BufReader<UnixStream>, id: u64) -> Result<Value, String> {
    loop {
        let mut line = String::new();
        let read = reader
            .by_ref()
            .take(REPLY_BYTES)
            .read_line(&mut line)
            .map_err(|e| format!("no reply from the service: {e}"))?;
        if read == 0 {
            return Err("the service closed the connection".to_string());
        }
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            return Err("the service sent something other than JSON".to_string());
        };
        if message.get("id").and_then(Value::as_u64) != Some(id) {
            continue;
        }
        if let Some(error) = message.get("error") {
            return Err(format!("the service refused the request: {error}"));
        }
        return Ok(message.get("result").cloned().unwrap_or(Value::Null));
    }
}

/// The context part of a `read_with_context` answer, cut to `limit`
/// tokens (if any) at a line's end; `None` when there is none.
fn context_of(answer: &str, limit: Option<u64>) -> Option<String> {
    let section = crate::ops::metrics::context_section(answer)?;
    let section = section.trim_end().trim_end_matches("---").trim_end();
    // A header with nothing under it: the lines use nothing from elsewhere.
    if bare(section) {
        return None;
    }
    cut(section, limit)
}

/// A heading line with nothing under it.
fn bare(text: &str) -> bool {
    text.lines().skip(1).all(|line| line.trim().is_empty())
}

/// `text` cut to `limit` tokens (if any) at a line's end; `None` when
/// only its heading, or nothing, is left.
fn cut(text: &str, limit: Option<u64>) -> Option<String> {
    if text.is_empty() {
        return None;
    }
    let limit = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    // A token is at least a byte: a short text needs no count.
    if text.len() <= limit || count_tokens(text) <= limit {
        return Some(text.to_string());
    }
    // Cut at a line, each line tokenized once, as answers cut part by
    // part are.
    use crate::service::paging::{fitting_parts, part_tokens};
    let lines: Vec<String> = text.lines().map(|line| format!("{line}\n")).collect();
    let keep = fitting_parts(&part_tokens(&lines), limit);
    let kept = lines[..keep].concat();
    let kept = kept.trim_end();
    (!bare(kept)).then(|| kept.to_string())
}

/// Appends one line to the project's hook log, rotating it when large;
/// a log that cannot be written is left alone (the hook stays quiet).
fn log_failure(root: &Path, failure: &str) {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = root.join(LOG_DIR);
    if std::fs::symlink_metadata(&dir).is_ok_and(|m| !m.is_dir()) {
        return;
    }
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let path = dir.join("hook.log");
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() > LOG_BYTES) {
        let _ = std::fs::rename(&path, dir.join("hook.log.old"));
    }
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path);
    if let Ok(mut file) = file
        && file.metadata().is_ok_and(|m| m.is_file())
    {
        let when = epoch_seconds();
        let line = failure.replace('\n', " ");
        let _ = writeln!(file, "{when} {line}");
    }
}

/// Seconds since the epoch: enough to order the log's lines.
fn epoch_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_is_cut_at_a_line_within_the_limit() {
        let answer = "[Cross-File Context]\nDefinitions:\nclass A  # a.py:1\nclass B  # b.py:1\n\n---\n\n[File Content: lines 1-2 of 2]\nx\n";
        let whole = context_of(answer, Some(1_000)).unwrap_or_default();
        assert!(whole.ends_with("class B  # b.py:1"), "{whole}");
        let cut = context_of(answer, Some(12)).unwrap_or_default();
        assert!(!cut.contains("class B"), "{cut}");
        assert_eq!(context_of(answer, Some(3)), None);
        assert_eq!(
            context_of("[File Content: lines 1-2 of 2]\nx\n", Some(1_000)),
            None
        );
        let empty = "[Cross-File Context]\n\n---\n\n[File Content: lines 1-1 of 2]\nx\n";
        assert_eq!(context_of(empty, Some(1_000)), None);
    }

    #[test]
    fn only_reads_and_edits_of_python_in_a_project_are_served() {
        let dir = std::env::temp_dir().join(format!("xfile-hook-test-{}", std::process::id()));
        let _ = std::fs::create_dir_all(dir.join("pkg"));
        let _ = std::fs::write(dir.join("pyproject.toml"), "");
        let _ = std::fs::write(dir.join("pkg/a.py"), "x = 1\n");
        let file = dir.join("pkg/a.py");
        let call = |tool: &str, input: Value| json!({"tool_name": tool, "tool_input": input});
        let read = ToolCall::of(&call(
            "Read",
            json!({"file_path": file, "offset": 10, "limit": 5}),
        ));
        let read = read.map(|r| r.asked);
        let lines = |start, end| Some(Asked::Lines { start, end });
        assert_eq!(read, lines(10, Some(14)));
        let whole = ToolCall::of(&call("Read", json!({"file_path": file})));
        assert_eq!(whole.map(|r| r.asked), lines(1, None));
        for tool in EDIT_TOOLS {
            let edit = ToolCall::of(&call(tool, json!({"file_path": file})));
            assert_eq!(edit.map(|r| r.asked), Some(Asked::Breaks));
        }
        assert!(ToolCall::of(&call("Bash", json!({"file_path": file}))).is_none());
        assert!(
            ToolCall::of(&call(
                "Read",
                json!({"file_path": dir.join("pyproject.toml")})
            ))
            .is_none()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
