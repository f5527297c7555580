//! The context injection log (TDD §3.8.5, FR-26..29): one JSONL line per
//! injected snippet in `.cross_file_context_logs/injections.jsonl` under the
//! root, created on demand, off with `enable_injection_logging: false`.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub const LOG_DIR: &str = ".cross_file_context_logs";
const LOG_FILE: &str = "injections.jsonl";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InjectionEvent {
    /// Unix time in seconds.
    pub timestamp: f64,
    pub event_type: String,
    pub trigger: String,
    /// The file that was read and received the context.
    pub trigger_file: String,
    /// The file the snippet comes from.
    pub source_file: String,
    pub symbol: String,
    /// Line range of the definition, `start-end`.
    pub lines: String,
    pub snippet: String,
    pub cache_hit: bool,
    pub cache_age_seconds: f64,
    pub token_count: usize,
}

pub fn log_path(root: &Path) -> PathBuf {
    root.join(LOG_DIR).join(LOG_FILE)
}

/// Appends events; a failure to log never fails the read, it is returned
/// for the caller to report.
pub fn append(root: &Path, events: &[InjectionEvent]) -> std::io::Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let path = log_path(root);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let mut lines = String::new();
    for event in events {
        lines.push_str(&serde_json::to_string(event).map_err(std::io::Error::other)?);
        lines.push('\n');
    }
    file.write_all(lines.as_bytes())
}

/// The newest `limit` events, newest first, optionally only those injected
/// into `trigger_file`. Lines that do not parse are skipped.
pub fn recent(root: &Path, trigger_file: Option<&str>, limit: usize) -> Vec<InjectionEvent> {
    let Ok(file) = std::fs::File::open(log_path(root)) else {
        return Vec::new();
    };
    let mut events: Vec<InjectionEvent> = std::io::BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str(&line).ok())
        .filter(|e: &InjectionEvent| trigger_file.is_none_or(|f| e.trigger_file == f))
        .collect();
    events.reverse();
    events.truncate(limit);
    events
}
