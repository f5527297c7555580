//! The one way xfile reads a file from disk: the type
//! is checked on the open descriptor before any byte is read, so a FIFO,
//! socket or device is never read (and, opened non-blocking, a FIFO never
//! hangs the open); reads are size-bounded; a project file is confined and
//! judged sensitive by the target its links resolve to, not by the name
//! that leads to it.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::{Path, PathBuf};

use super::discover::{Stamp, is_sensitive};

/// Why a file was not read. The messages never name a link's target: it
/// may lie outside the root.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("it does not exist")]
    Missing,
    #[error("it is a broken symlink (its target does not exist)")]
    Dangling,
    #[error("it is a symlink loop")]
    Loop,
    #[error("it resolves outside the project root")]
    OutsideRoot,
    #[error("it may hold secrets (by its name, or by the name of the file it links to)")]
    Sensitive,
    #[error("it is not a regular file ({0})")]
    NotRegular(&'static str),
    #[error("it is {0} bytes, over the {1}-byte limit")]
    TooBig(u64, u64),
    #[error("it cannot be read ({0})")]
    Io(std::io::Error),
}

impl Refusal {
    fn from_io(error: std::io::Error) -> Refusal {
        match error.kind() {
            std::io::ErrorKind::NotFound => Refusal::Missing,
            // ELOOP: O_NOFOLLOW met a link (or a loop) where a file was.
            _ if error.raw_os_error() == Some(libc::ELOOP) => Refusal::Loop,
            _ => Refusal::Io(error),
        }
    }
}

/// What kind of non-regular file `metadata` describes.
pub fn file_kind(metadata: &Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let kind = metadata.file_type();
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_symlink() {
        "a symlink"
    } else {
        "not a regular file"
    }
}

/// Opens `path` for reading only if it is a regular file: its type is
/// checked before the open (opening some devices acts on them) and again on
/// the descriptor (it may have been swapped in between). Non-blocking, so
/// a FIFO swapped in never hangs the open; `follow: false` refuses a
/// symlink in the last component (`O_NOFOLLOW`).
pub fn open_regular(path: &Path, follow: bool) -> Result<(File, Metadata), Refusal> {
    use std::os::unix::fs::OpenOptionsExt;
    let before = if follow {
        std::fs::metadata(path)
    } else {
        std::fs::symlink_metadata(path)
    };
    let before = before.map_err(Refusal::from_io)?;
    if !before.is_file() {
        return Err(Refusal::NotRegular(file_kind(&before)));
    }
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(Refusal::from_io)?;
    let metadata = file.metadata().map_err(Refusal::Io)?;
    if !metadata.is_file() {
        return Err(Refusal::NotRegular(file_kind(&metadata)));
    }
    Ok((file, metadata))
}

/// Reads an open regular file, refusing one over `limit` bytes (checked on
/// the size and again on what the read yields, since a file can grow).
pub fn read_bounded(file: File, metadata: &Metadata, limit: u64) -> Result<Vec<u8>, Refusal> {
    if metadata.len() > limit {
        return Err(Refusal::TooBig(metadata.len(), limit));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Refusal::Io)?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > limit {
        return Err(Refusal::TooBig(read, limit));
    }
    Ok(bytes)
}

/// Reads a small file that xfile's own commands look at (an editor's MCP
/// configuration, a `pyproject.toml`) as text: only a regular file, never
/// through a symlink in its last component, never blocking (a FIFO is
/// refused, not waited on), at most `limit` bytes. `Ok(None)` when there
/// is no such file.
pub fn read_regular_text(path: &Path, limit: u64) -> Result<Option<String>, Refusal> {
    let (file, metadata) = match open_regular(path, false) {
        Ok(opened) => opened,
        Err(Refusal::Missing) => return Ok(None),
        Err(refusal) => return Err(refusal),
    };
    let bytes = read_bounded(file, &metadata, limit)?;
    String::from_utf8(bytes).map(Some).map_err(|_| {
        Refusal::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "it is not valid UTF-8",
        ))
    })
}

/// What is known of the symlinks on a path below the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Links {
    /// A walk from the (canonical) root saw none down to this file: the
    /// path is its own target, and resolving it would only cost a dozen
    /// system calls per file.
    Absent,
    /// There may be some: resolve the path.
    Resolve,
}

/// Where a project file (a source, the configuration, an ignore or pytest
/// file) really is: `path` with its links resolved, inside `root`, not
/// sensitive by the link's name nor by the target's.
pub fn resolve_in_root(root: &Path, path: &Path, links: Links) -> Result<PathBuf, Refusal> {
    let resolved = match links {
        Links::Absent => Ok(path.to_path_buf()),
        Links::Resolve => path.canonicalize(),
    };
    let resolved = resolved.map_err(|error| {
        match std::fs::symlink_metadata(path) {
            // The name is there but does not resolve: a link to nothing,
            // or one that leads back to itself.
            Ok(_) if error.raw_os_error() == Some(libc::ELOOP) => Refusal::Loop,
            Ok(_) if error.kind() == std::io::ErrorKind::NotFound => Refusal::Dangling,
            _ => Refusal::from_io(error),
        }
    })?;
    if !resolved.starts_with(root) {
        return Err(Refusal::OutsideRoot);
    }
    // Judged by the path below the root (`.aws/credentials`), else by the
    // name alone.
    let sensitive = |p: &Path| match p.strip_prefix(root) {
        Ok(relative) => is_sensitive(relative),
        Err(_) => p.file_name().is_some_and(is_sensitive),
    };
    if sensitive(path) || sensitive(&resolved) {
        return Err(Refusal::Sensitive);
    }
    Ok(resolved)
}

/// Reads a project file: [`resolve_in_root`], then the resolved path is
/// opened without following links (so a link swapped in after the check is
/// refused, not followed) and read if it is a regular file of at most
/// `limit` bytes. The stamp is the file's metadata as it was opened.
pub fn read_project_file(
    root: &Path,
    path: &Path,
    links: Links,
    limit: u64,
) -> Result<(Stamp, Vec<u8>), Refusal> {
    let resolved = resolve_in_root(root, path, links)?;
    let (file, metadata) = open_regular(&resolved, false)?;
    let bytes = read_bounded(file, &metadata, limit)?;
    Ok((Stamp::of(&metadata), bytes))
}

/// Whether a project file that another library will open (the `ignore`
/// crate's ignore files) is safe to hand over: absent, or a regular file
/// inside the root that is not sensitive and no bigger than a settings
/// file may be (that library reads it whole).
pub fn check_project_file(root: &Path, path: &Path) -> Result<(), Refusal> {
    match std::fs::symlink_metadata(path) {
        // Absent, or under a parent that is a file (`.git/info/exclude`
        // when `.git` is a worktree's `gitdir:` file): nothing to read.
        Err(error)
            if matches!(
                error.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(());
        }
        Err(error) => return Err(Refusal::Io(error)),
        Ok(_) => {}
    }
    let resolved = resolve_in_root(root, path, Links::Resolve)?;
    let metadata = std::fs::symlink_metadata(&resolved).map_err(Refusal::from_io)?;
    if !metadata.is_file() {
        return Err(Refusal::NotRegular(file_kind(&metadata)));
    }
    if metadata.len() > SETTINGS_BYTES {
        return Err(Refusal::TooBig(metadata.len(), SETTINGS_BYTES));
    }
    Ok(())
}

/// Settings files (configuration, pytest settings) bigger than this are
/// not read.
const SETTINGS_BYTES: u64 = 1024 * 1024;

/// Reads the settings file `name` at `root` as text: `Ok(None)` when there
/// is none. The error says why it was not read and names only the file, so
/// nothing of a link's target outside the root is echoed.
pub fn read_settings(root: &Path, name: &str) -> Result<Option<String>, String> {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    match read_project_file(&root, &root.join(name), Links::Resolve, SETTINGS_BYTES) {
        Ok((_, bytes)) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| format!("{name}: not read: it is not valid UTF-8")),
        Err(Refusal::Missing) => Ok(None),
        Err(refusal) => Err(format!("{name}: not read: {refusal}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_blocking_f3() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.py");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let root = dir.path().canonicalize().unwrap();
        let refused = read_project_file(&root, &root.join("pipe.py"), Links::Resolve, 1024);
        assert!(
            matches!(refused, Err(Refusal::NotRegular("a FIFO"))),
            "{refused:?}"
        );
    }

    #[test]
    fn reads_are_bounded_and_links_are_judged_by_their_target_f1() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("big.py"), "x = 1\n".repeat(100)).unwrap();
        assert!(matches!(
            read_project_file(&root, &root.join("big.py"), Links::Resolve, 10),
            Err(Refusal::TooBig(600, 10))
        ));
        std::fs::write(root.join(".env"), "API_TOKEN = 'x'\n").unwrap();
        std::os::unix::fs::symlink(root.join(".env"), root.join("settings.py")).unwrap();
        assert!(matches!(
            read_project_file(&root, &root.join("settings.py"), Links::Resolve, 1024),
            Err(Refusal::Sensitive)
        ));
        std::os::unix::fs::symlink(root.join("nothing"), root.join("gone.py")).unwrap();
        assert!(matches!(
            read_project_file(&root, &root.join("gone.py"), Links::Resolve, 1024),
            Err(Refusal::Dangling)
        ));
    }
}
