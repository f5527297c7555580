//! The JSONL logs under `.cross_file_context_logs/` at the project root
//! (TDD §3.8.5, §3.9.5): one serde value per line, appended, read back
//! leniently (a line that does not parse is skipped).

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

pub const LOG_DIR: &str = ".cross_file_context_logs";

/// `<root>/.cross_file_context_logs/<name>`.
pub fn log_path(root: &Path, name: &str) -> PathBuf {
    root.join(LOG_DIR).join(name)
}

/// Appends one line per item in a single write, creating the directory on
/// demand. Nothing to append opens nothing.
pub fn append<T: Serialize>(path: &Path, items: &[T]) -> std::io::Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    let mut lines = String::new();
    for item in items {
        lines.push_str(&serde_json::to_string(item).map_err(std::io::Error::other)?);
        lines.push('\n');
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(lines.as_bytes())
}

/// Every line that parses as `T`, oldest first; a missing log is empty.
pub fn read<T: DeserializeOwned>(path: &Path) -> Vec<T> {
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    std::io::BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str(&line).ok())
        .collect()
}
