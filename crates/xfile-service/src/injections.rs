//! The context injection log: one JSONL line per
//! injected snippet in `.cross_file_context_logs/injections.jsonl` under the
//! root, created on demand, off with `enable_injection_logging: false`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::jsonl;

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

/// Appends events; a failure to log never fails the read, it is returned
/// for the caller to report.
pub(crate) fn append(root: &Path, events: &[InjectionEvent]) -> std::io::Result<()> {
    jsonl::append(&jsonl::log_path(root, LOG_FILE), events)
}

/// The newest `limit` events, newest first, optionally only those injected
/// into `trigger_file`.
pub(crate) fn recent(root: &Path, trigger_file: Option<&str>, limit: usize) -> Vec<InjectionEvent> {
    let mut events: Vec<InjectionEvent> = jsonl::read(&jsonl::log_path(root, LOG_FILE));
    events.retain(|e| trigger_file.is_none_or(|f| e.trigger_file == f));
    events.reverse();
    events.truncate(limit);
    events
}
