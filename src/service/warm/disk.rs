//! The cache directory on disk: created only as a real directory, files
//! opened without following links and only when regular, written whole
//! (temporary file, fsync, rename) so a reader sees an old file or a new
//! one, never half of one.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The cache directory at the root, ignored by git through its own
/// `.gitignore` (as ruff's `.ruff_cache`).
pub const DIR: &str = crate::workspace::discover::CACHE_DIR;
/// The cache file of per-file facts in it.
pub const FILE: &str = "index.bin";
/// Every file the cache keeps (`answers.rs`'s is the other).
const FILES: [&str; 2] = [FILE, super::answers::ANSWERS];
/// Subdirectories whose every file is the cache's: the kept blames
/// (`service/blame_store.rs`).
const SUBDIRS: [&str; 1] = [crate::service::blame_store::DIR];

pub(crate) fn dir(root: &Path) -> PathBuf {
    root.join(DIR)
}

/// The directory if it is one: a link or anything else in its place is an
/// error, never followed.
fn existing_dir(root: &Path) -> io::Result<PathBuf> {
    let dir = dir(root);
    let meta = fs::symlink_metadata(&dir)?;
    if !meta.file_type().is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory (a link or a file); remove it",
            dir.display()
        )));
    }
    Ok(dir)
}

/// Creates the directory (private) and its `.gitignore` when missing.
pub(crate) fn ensure_dir(root: &Path) -> io::Result<PathBuf> {
    let dir = dir(root);
    match fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error),
    }
    let dir = existing_dir(root)?;
    let ignore = dir.join(".gitignore");
    match new_file(&ignore) {
        Ok(mut file) => file.write_all(b"# Created by xfile: a cache, not source.\n*\n")?,
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error),
    }
    Ok(dir)
}

/// A new file, never an existing one nor through a link.
fn new_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// The cache file's bytes; `NotFound` when there is none. A link, a FIFO or
/// any other non-regular file is refused before a byte is read.
pub(crate) fn read(root: &Path) -> io::Result<Vec<u8>> {
    let mut file = open(root, FILE)?;
    let mut bytes = Vec::with_capacity(usize::try_from(file.metadata()?.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The cache file `name`, open for reading; only a regular file, never
/// through a link.
pub(crate) fn open(root: &Path, name: &str) -> io::Result<File> {
    open_in(&existing_dir(root)?, name)
}

/// The file `name` of the cache directory or one of its subdirectories
/// (`dir`), as [`open`].
pub(crate) fn open_in(dir: &Path, name: &str) -> io::Result<File> {
    let path = dir.join(name);
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)?;
    if !file.metadata()?.file_type().is_file() {
        return Err(io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    Ok(file)
}

/// Replaces the cache file with `bytes` at once.
pub(crate) fn write(root: &Path, bytes: &[u8]) -> io::Result<()> {
    write_file(root, FILE, bytes)
}

/// Replaces the cache file `name` with `bytes` at once. Each writer has its
/// own temporary file, so processes writing together each leave a whole
/// file.
pub(crate) fn write_file(root: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let dir = ensure_dir(root)?;
    let renamed = replace(&dir, name, bytes, true);
    sweep(&dir, is_temp);
    renamed
}

/// Replaces `dir`'s file `name` with `bytes` at once, through a temporary
/// file of this writer's own; synced to disk first when `durable` (a file
/// that is cheap to compute again and checked when read need not be).
pub(crate) fn replace(dir: &Path, name: &str, bytes: &[u8], durable: bool) -> io::Result<()> {
    let temp = dir.join(format!(
        "{name}.{}.{}.tmp",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let written = new_file(&temp).and_then(|mut file| {
        file.write_all(bytes)?;
        if durable { file.sync_all() } else { Ok(()) }
    });
    let renamed = written.and_then(|()| fs::rename(&temp, dir.join(name)));
    if renamed.is_err() {
        let _ = fs::remove_file(&temp);
    }
    renamed
}

/// The subdirectory `name` of the cache directory, created (private)
/// when missing; a link or anything else in its place is an error, never
/// followed.
pub(crate) fn subdir(root: &Path, name: &str) -> io::Result<PathBuf> {
    let dir = ensure_dir(root)?.join(name);
    match fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error),
    }
    existing_subdir(root, name)
}

/// The subdirectory `name` if it is a real directory in a real cache
/// directory.
pub(crate) fn existing_subdir(root: &Path, name: &str) -> io::Result<PathBuf> {
    let dir = existing_dir(root)?.join(name);
    if !fs::symlink_metadata(&dir)?.file_type().is_dir() {
        return Err(io::Error::other(format!(
            "{} is not a directory (a link or a file); remove it",
            dir.display()
        )));
    }
    Ok(dir)
}

/// Removes the cache file `name` (a link in its place is removed, never
/// followed), best effort: it is written again by the next index.
pub(crate) fn remove(root: &Path, name: &str) {
    if let Ok(dir) = existing_dir(root) {
        let _ = fs::remove_file(dir.join(name));
    }
}

/// A writer that died leaves its temporary file; one older than any write
/// takes (named as `temp` tells) is removed, so the directory stays
/// bounded.
pub(crate) fn sweep(dir: &Path, temp: impl Fn(&str) -> bool) {
    const ABANDONED: std::time::Duration = std::time::Duration::from_secs(600);
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let abandoned = entry.metadata().is_ok_and(|meta| {
            meta.file_type().is_file()
                && meta
                    .modified()
                    .is_ok_and(|at| at.elapsed().is_ok_and(|age| age > ABANDONED))
        });
        if abandoned && temp(&entry.file_name().to_string_lossy()) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

fn is_temp(name: &str) -> bool {
    FILES.iter().any(|f| name.starts_with(f)) && name.ends_with(".tmp")
}

/// The cache files' size in all, if there is one.
pub(crate) fn size(root: &Path) -> Option<u64> {
    let dir = existing_dir(root).ok()?;
    let sizes: Vec<u64> = FILES
        .iter()
        .filter_map(|name| {
            let meta = fs::symlink_metadata(dir.join(name)).ok()?;
            meta.file_type().is_file().then_some(meta.len())
        })
        .collect();
    (!sizes.is_empty()).then(|| sizes.iter().sum())
}

/// Removes the cache directory's files (ours only: the cache file, its
/// temporary files and the `.gitignore`) and the directory when that
/// leaves it empty. A link in the directory's place is left alone.
pub(crate) fn clean(root: &Path) -> io::Result<bool> {
    let dir = match existing_dir(root) {
        Ok(dir) => dir,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(error),
    };
    // The subdirectories' files are all ours (`SUBDIRS`); a link in a
    // subdirectory's place is removed, never followed.
    for sub in SUBDIRS {
        match existing_subdir(root, sub) {
            Ok(subdir) => {
                for entry in fs::read_dir(&subdir)? {
                    let entry = entry?;
                    if !entry.file_type()?.is_dir() {
                        remove_ours(&entry.path())?;
                    }
                }
                let _ = fs::remove_dir(&subdir);
            }
            Err(_) => {
                if fs::symlink_metadata(dir.join(sub)).is_ok_and(|m| m.file_type().is_symlink()) {
                    remove_ours(&dir.join(sub))?;
                }
            }
        }
    }
    for entry in fs::read_dir(&dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let ours = FILES.contains(&&*name) || name == ".gitignore" || is_temp(&name);
        // `remove_file` removes a link itself, never its target.
        // One another process renamed or removed meanwhile is gone too.
        if ours && !entry.file_type()?.is_dir() {
            remove_ours(&entry.path())?;
        }
    }
    Ok(fs::remove_dir(&dir).is_ok())
}

/// Removes a file (a link itself, never its target); one another process
/// renamed or removed meanwhile is gone too.
fn remove_ours(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}
