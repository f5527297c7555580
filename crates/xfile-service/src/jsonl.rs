//! The JSONL logs under `.cross_file_context_logs/` at the project root
//! (injections, warnings, session metrics): one serde value per line,
//! appended, read back leniently (a line that does not parse is skipped).

use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use xfile_workspace::read;

pub use xfile_workspace::LOG_DIR;

/// A log past this size moves to `<name>.1` (replacing the previous one)
/// before the next append, so logs and their readers stay bounded.
const ROTATE_BYTES: u64 = 4 * 1024 * 1024;

/// `<root>/.cross_file_context_logs/<name>`.
pub fn log_path(root: &Path, name: &str) -> PathBuf {
    root.join(LOG_DIR).join(name)
}

/// Appends one line per item in a single write, creating the directory on
/// demand. Nothing to append opens nothing. Neither the directory nor the
/// log may be a symlink: xfile writes only inside its own directory,
/// so a linked one turns logging off, and the error says so.
///
/// How the append went is recorded (`failed_writes`), so that `/health`
/// can say that logging fails.
pub fn append<T: Serialize>(path: &Path, items: &[T]) -> std::io::Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    let mut lines = String::new();
    for item in items {
        lines.push_str(&serde_json::to_string(item).map_err(std::io::Error::other)?);
        lines.push('\n');
    }
    let appended = append_lines(path, &lines);
    super::failed_writes::record(path, &appended);
    appended
}

/// [`append`] of lines already serialized.
fn append_lines(path: &Path, lines: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(path);
    if std::fs::symlink_metadata(dir).is_err() {
        // Only the last component: the root exists, and a missing root is
        // not something a log should create.
        match std::fs::create_dir(dir) {
            Err(error) if error.kind() != std::io::ErrorKind::AlreadyExists => return Err(error),
            _ => {}
        }
    }
    own_dir(dir)?;
    ignore_in_git(dir)?;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_symlink() => return Err(refused(path, "a symlink")),
        // Checked before the open: opening a device can act on it.
        Ok(m) if !m.is_file() => return Err(refused(path, read::file_kind(&m))),
        Ok(m) if m.len() > ROTATE_BYTES => {
            let mut rotated = path.as_os_str().to_owned();
            rotated.push(".1");
            std::fs::rename(path, rotated)?;
        }
        _ => {}
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|error| match error.raw_os_error() {
            Some(libc::ELOOP) => refused(path, "a symlink"),
            _ => error,
        })?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(refused(path, read::file_kind(&metadata)));
    }
    // Records are whole or absent: a write cut short (a full disk) is
    // taken back, so the next record does not join a half line.
    file.write_all(lines.as_bytes()).inspect_err(|_| {
        let _ = file.set_len(metadata.len());
    })
}

/// An error saying that `path` is not one xfile writes to, and what to do.
fn refused(path: &Path, why: &str) -> std::io::Error {
    std::io::Error::other(format!(
        "{} is not a regular file of xfile's ({why}); logging is off until it is removed",
        path.display()
    ))
}

/// Checks that `dir` is a real directory, not a symlink to one.
fn own_dir(dir: &Path) -> std::io::Result<()> {
    let metadata = std::fs::symlink_metadata(dir)?;
    if metadata.is_dir() {
        return Ok(());
    }
    let why = if metadata.is_symlink() {
        "a symlink"
    } else {
        read::file_kind(&metadata)
    };
    Err(refused(dir, why))
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

/// How much of a log is read back: its newest part. Appends rotate at
/// `ROTATE_BYTES`, so this is all of it unless one batch was huge.
const READ_BYTES: u64 = 2 * ROTATE_BYTES;

/// Every line that parses as `T`, oldest first, from the newest
/// `READ_BYTES` of the log; a missing log is empty, and so is one that is
/// not a regular file in xfile's own directory (never read through a
/// link, never a FIFO).
pub fn read<T: DeserializeOwned>(path: &Path) -> Vec<T> {
    if path.parent().is_none_or(|dir| own_dir(dir).is_err()) {
        return Vec::new();
    }
    let Ok((mut file, metadata)) = read::open_regular(path, false) else {
        return Vec::new();
    };
    let skip = metadata.len().saturating_sub(READ_BYTES);
    if file.seek(SeekFrom::Start(skip)).is_err() {
        return Vec::new();
    }
    let mut lines = std::io::BufReader::new(file.take(READ_BYTES)).lines();
    if skip > 0 {
        // The first line read is the tail of one cut in the middle.
        lines.next();
    }
    lines
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str(&line).ok())
        .collect()
}

/// Every line that parses as `T` in the whole log and in the one it last
/// rotated to (`<name>.1`), oldest first: what was logged already, for a
/// writer that appends only what is new. Each part is at most
/// `ROTATE_BYTES` plus one append, so this is bounded too; it is read a
/// line at a time.
pub fn read_every<T: DeserializeOwned>(path: &Path) -> Vec<T> {
    if path.parent().is_none_or(|dir| own_dir(dir).is_err()) {
        return Vec::new();
    }
    let mut rotated = path.as_os_str().to_owned();
    rotated.push(".1");
    let mut every = Vec::new();
    for part in [Path::new(&rotated), path] {
        let Ok((file, _)) = read::open_regular(part, false) else {
            continue;
        };
        every.extend(
            std::io::BufReader::new(file)
                .lines()
                .map_while(Result::ok)
                .filter_map(|line| serde_json::from_str(&line).ok()),
        );
    }
    every
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
