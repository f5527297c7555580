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
pub const DIR: &str = xfile_workspace::discover::CACHE_DIR;
/// The cache file of per-file facts in it.
pub const FILE: &str = "index.bin";
/// Every file the cache keeps (`answers.rs`'s is the other).
const FILES: [&str; 2] = [FILE, super::answers::ANSWERS];
/// Subdirectories whose every file is the cache's: the kept blames
/// (`service/blame_store.rs`).
const SUBDIRS: [&str; 1] = [crate::blame_store::DIR];

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
///
/// How the write went is recorded (`failed_writes`), so that `/health`
/// can say that the cache is not written.
pub(crate) fn write_file(root: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let written = ensure_dir(root).and_then(|dir| {
        let renamed = replace(&dir, name, bytes, true);
        sweep(&dir, is_temp);
        renamed
    });
    crate::failed_writes::record(&dir(root).join(name), &written);
    written
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

/// How long a write may take at most: a temporary file older than this is
/// abandoned even when a process of its writer's id still runs (the id
/// reused, or a writer in another PID namespace).
const ABANDONED: std::time::Duration = std::time::Duration::from_secs(600);

/// A writer that died (`kill -9`, a crash, a full disk) leaves its
/// temporary file; every one that is abandoned ([`abandoned`]) and that
/// `temp` says is a temporary file of this directory's is removed, so the
/// directory stays bounded. A live writer's file is left alone.
pub(crate) fn sweep(dir: &Path, temp: impl Fn(&str) -> bool) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if temp(&name) && entry.metadata().is_ok_and(|meta| abandoned(&name, &meta)) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Whether the temporary file `name` (with metadata `meta`, not followed)
/// is no writer's any more: its writer's process is gone, or it is older
/// than any write takes. Only regular files are ever ours.
fn abandoned(name: &str, meta: &fs::Metadata) -> bool {
    let old = meta
        .modified()
        .is_ok_and(|at| at.elapsed().is_ok_and(|age| age > ABANDONED));
    meta.file_type().is_file() && (old || writer(name).is_some_and(gone))
}

/// The process id in a temporary file's name, as [`replace`] writes it:
/// `<name>.<pid>.<32 hex digits>.tmp`.
fn writer(name: &str) -> Option<i32> {
    let rest = name.strip_suffix(".tmp")?;
    let (rest, id) = rest.rsplit_once('.')?;
    let (_, pid) = rest.rsplit_once('.')?;
    let hex = id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit());
    let pid: i32 = pid.parse().ok()?;
    (hex && pid > 0).then_some(pid)
}

/// Whether no process `pid` runs (in this PID namespace).
fn gone(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists; `pid` is
    // positive, so it names one process, never a group.
    let found = unsafe { libc::kill(pid, 0) };
    found == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

fn is_temp(name: &str) -> bool {
    FILES.iter().any(|f| name.starts_with(f)) && name.ends_with(".tmp")
}

/// Temporary files of the cache directory's subdirectories (`SUBDIRS`).
fn is_sub_temp(name: &str) -> bool {
    name.ends_with(".tmp")
}

/// At a start: removes the temporary files writers that are gone left in
/// the cache directory and its subdirectories. Creates nothing; a link in
/// a directory's place is never followed.
pub(crate) fn sweep_leftovers(root: &Path) {
    if let Ok(dir) = existing_dir(root) {
        sweep(&dir, is_temp);
    }
    for sub in SUBDIRS {
        if let Ok(dir) = existing_subdir(root, sub) {
            sweep(&dir, is_sub_temp);
        }
    }
}

/// Temporary files in the cache directory and its subdirectories.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct Leftovers {
    pub files: usize,
    pub bytes: u64,
    /// Of those, the ones no writer will finish (removed at the next start).
    pub abandoned: usize,
}

/// The temporary files there are now, for `cache info`.
pub(crate) fn leftovers(root: &Path) -> Leftovers {
    let mut found = Leftovers::default();
    let mut count = |dir: &Path, temp: fn(&str) -> bool| {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if temp(&name) && meta.file_type().is_file() {
                found.files += 1;
                found.bytes += meta.len();
                found.abandoned += usize::from(abandoned(&name, &meta));
            }
        }
    };
    if let Ok(dir) = existing_dir(root) {
        count(&dir, is_temp);
    }
    for sub in SUBDIRS {
        if let Ok(dir) = existing_subdir(root, sub) {
            count(&dir, is_sub_temp);
        }
    }
    found
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failed_writes;

    #[test]
    fn a_cache_write_that_fails_is_recorded_until_one_succeeds() {
        let root = tempfile::tempdir().expect("tempdir");
        let root = root.path();
        // Something in the way of the file: the rename fails, as a write
        // to a full disk does.
        fs::create_dir_all(dir(root).join(FILE).join("in the way")).expect("in the way");
        assert!(write(root, b"facts").is_err());
        let failed = failed_writes::under(root);
        assert_eq!(failed.len(), 1, "{failed:?}");
        let line = failed[0].describe(root);
        assert!(
            line.starts_with("writing .xfile_cache/index.bin failed at "),
            "{line}"
        );
        fs::remove_dir_all(dir(root).join(FILE)).expect("out of the way");
        write(root, b"facts").expect("written");
        assert!(failed_writes::under(root).is_empty());
    }

    #[test]
    fn temporary_files_name_their_writer() {
        let id = "0123456789abcdef0123456789abcdef";
        assert_eq!(writer(&format!("index.bin.42.{id}.tmp")), Some(42));
        assert_eq!(writer(&format!("00ff.bin.7.{id}.tmp")), Some(7));
        for not_ours in [
            format!("index.bin.0.{id}.tmp"),
            format!("index.bin.-1.{id}.tmp"),
            "index.bin.42.short.tmp".to_string(),
            format!("index.bin.x.{id}.tmp"),
            format!("index.bin.42.{id}"),
        ] {
            assert_eq!(writer(&not_ours), None, "{not_ours}");
        }
        assert!(!gone(i32::try_from(std::process::id()).expect("pid")));
    }
}
