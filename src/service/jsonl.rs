//! The JSONL logs under `.cross_file_context_logs/` at the project root
//! (TDD §3.8.5, §3.9.5): one serde value per line, appended, read back
//! leniently (a line that does not parse is skipped).

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

pub const LOG_DIR: &str = ".cross_file_context_logs";

/// A log past this size moves to `<name>.1` (replacing the previous one)
/// before the next append, so logs and their readers stay bounded.
const ROTATE_BYTES: u64 = 4 * 1024 * 1024;

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
        ignore_in_git(dir)?;
    }
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.len() > ROTATE_BYTES) {
        let mut rotated = path.as_os_str().to_owned();
        rotated.push(".1");
        std::fs::rename(path, rotated)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(lines.as_bytes())
}

/// Gives the logs directory its own `.gitignore` (as ruff does for its
/// cache), so it never shows as untracked. `create_new` never follows a
/// link planted in its place.
fn ignore_in_git(dir: &Path) -> std::io::Result<()> {
    let ignore = dir.join(".gitignore");
    if std::fs::symlink_metadata(&ignore).is_ok() {
        return Ok(());
    }
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&ignore)
    {
        Ok(mut file) => file.write_all(b"# Created by xfile: its logs are not source.\n*\n"),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(error),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_directory_ignores_itself_in_git_and_logs_rotate_by_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = log_path(dir.path(), "x.jsonl");
        append(&path, &[1]).unwrap();
        let ignore = std::fs::read_to_string(dir.path().join(LOG_DIR).join(".gitignore")).unwrap();
        assert!(ignore.lines().any(|l| l == "*"), "{ignore}");
        // Past the size limit, the next append starts a fresh file.
        let big = vec![0u8; usize::try_from(ROTATE_BYTES).unwrap() + 1];
        std::fs::write(&path, big).unwrap();
        append(&path, &[2]).unwrap();
        assert_eq!(read::<i32>(&path), vec![2]);
        let rotated = dir.path().join(LOG_DIR).join("x.jsonl.1");
        assert!(std::fs::metadata(rotated).unwrap().len() > ROTATE_BYTES);
    }
}
