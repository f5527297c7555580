//! Where the sessions of one project root meet their shared service: a
//! directory only the user can enter (in the user's runtime directory),
//! and in it, per root, the service's socket, the lock that lets one
//! service run, its pid file and its log.
//!
//! The directory is the guard: it is created owner-only and refused when
//! it is anything else (a link, another user's, open to the group or
//! others), so nobody else can reach the socket, replace it or read the
//! log. The socket is owner-only too, and the service checks each peer's
//! user id on top of that.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Names the directory of the sockets, used as is (created if missing):
/// for tests and for users whose runtime directory is unusual.
pub(crate) const RUNTIME_DIR_ENV: &str = "XFILE_RUNTIME_DIR";

/// Bytes a socket path may take: `sun_path` holds 108 with the closing NUL.
const SOCKET_PATH_MAX: usize = 107;

/// The files of one root's service.
#[derive(Clone, Debug)]
pub(crate) struct Place {
    pub(crate) socket: PathBuf,
    pub(crate) lock: PathBuf,
    pub(crate) pid: PathBuf,
    pub(crate) log: PathBuf,
}

/// The place of the service of `root` (canonical), the directory made
/// ready. `no_cache` services are separate: the flag is the process's.
pub(crate) fn place(root: &Path, no_cache: bool) -> Result<Place, String> {
    let dir = private_dir()?;
    let name = name(root, no_cache);
    let socket = dir.join(format!("{name}.sock"));
    if socket.as_os_str().len() > SOCKET_PATH_MAX {
        return Err(format!(
            "the socket path {} is longer than the {SOCKET_PATH_MAX} bytes a socket \
             address holds; set {RUNTIME_DIR_ENV} to a shorter directory",
            socket.display()
        ));
    }
    Ok(Place {
        socket,
        lock: dir.join(format!("{name}.lock")),
        pid: dir.join(format!("{name}.pid")),
        log: dir.join(format!("{name}.log")),
    })
}

/// The user's private runtime directory, made ready.
pub(crate) fn private_dir() -> Result<PathBuf, String> {
    let dir = runtime_dir()?;
    ensure_private(&dir)?;
    Ok(dir)
}

/// `$XFILE_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/xfile`, else a directory
/// of the user's own under the temporary directory.
fn runtime_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os(RUNTIME_DIR_ENV).filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        if !dir.is_absolute() {
            return Err(format!(
                "{RUNTIME_DIR_ENV} must be an absolute path, not {}",
                dir.display()
            ));
        }
        return Ok(dir);
    }
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from)
        && runtime.is_absolute()
    {
        return Ok(runtime.join("xfile"));
    }
    Ok(std::env::temp_dir().join(format!("xfile-{}", effective_uid())))
}

pub(crate) fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Creates `dir` owner-only if it is missing, and refuses it unless it is
/// a directory (not a link to one) owned by the user that no one else may
/// enter.
pub(crate) fn ensure_private(dir: &Path) -> Result<(), String> {
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => {
            return Err(format!(
                "cannot create the directory {}: {error}; create its parent or set \
                 {RUNTIME_DIR_ENV} to a directory of your own",
                dir.display()
            ));
        }
    }
    let meta = fs::symlink_metadata(dir)
        .map_err(|error| format!("cannot read {}: {error}", dir.display()))?;
    let shown = dir.display();
    if meta.file_type().is_symlink() {
        return Err(format!(
            "{shown} is a symbolic link; remove it (xfile creates the directory itself)"
        ));
    }
    if !meta.is_dir() {
        return Err(format!("{shown} is not a directory; remove it"));
    }
    let uid = effective_uid();
    if meta.uid() != uid {
        return Err(format!(
            "{shown} belongs to user id {}, not to you ({uid}); remove it or set \
             {RUNTIME_DIR_ENV} to a directory of your own",
            meta.uid()
        ));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "{shown} is open to other users (mode {mode:03o}); run `chmod 700 {shown}`"
        ));
    }
    Ok(())
}

/// A name per root, version and cache mode: a hash, since paths can be
/// longer than a socket address. Another version of xfile gets a service
/// of its own.
fn name(root: &Path, no_cache: bool) -> String {
    let mut hash = Sha256::new();
    hash.update(env!("CARGO_PKG_VERSION").as_bytes());
    hash.update([0]);
    hash.update(root.as_os_str().as_encoded_bytes());
    hash.update([0, u8::from(no_cache)]);
    hash.finalize()[..10]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// An open file that is not followed through a link and is the user's
/// alone.
fn private_file(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    options
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// The lock one service of a root holds while it runs. Dropped, it is
/// released; [`Lock::remove`] also removes its file.
pub(crate) struct Lock {
    file: File,
    path: PathBuf,
}

impl Lock {
    /// Takes the lock at `path` unless another process holds it (`None`).
    pub(crate) fn take(path: &Path) -> io::Result<Option<Lock>> {
        // A service leaving removes the file while holding it: one that
        // opened it just before then locks a file no longer in place, and
        // tries again with the new one.
        for _ in 0..16 {
            let file = private_file(path, OpenOptions::new().read(true).write(true).create(true))?;
            // SAFETY: flock on a descriptor this function owns.
            let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if locked != 0 {
                let error = io::Error::last_os_error();
                if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
                    return Ok(None);
                }
                return Err(error);
            }
            let held = file.metadata()?;
            match fs::symlink_metadata(path) {
                Ok(now) if now.dev() == held.dev() && now.ino() == held.ino() => {
                    return Ok(Some(Lock {
                        file,
                        path: path.to_path_buf(),
                    }));
                }
                _ => continue,
            }
        }
        Err(io::Error::other(format!(
            "the lock {} keeps being replaced",
            path.display()
        )))
    }

    /// Removes the lock's file, then releases it.
    pub(crate) fn remove(self) {
        let _ = fs::remove_file(&self.path);
        drop(self.file);
    }
}

/// Clears the way for a new socket at `path`, under the lock: a socket
/// file no one listens on (a service that was killed) is removed, and so
/// is anything else but a directory. Errs when a service answers there.
pub(crate) fn clear_socket(path: &Path) -> Result<(), String> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(format!("cannot read {}: {error}", path.display())),
    };
    if meta.is_dir() {
        return Err(format!(
            "{} is a directory where the socket goes; remove it",
            path.display()
        ));
    }
    if meta.file_type().is_socket() && std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(format!("a service already listens on {}", path.display()));
    }
    // Unlinking never follows a link.
    fs::remove_file(path)
        .map_err(|error| format!("cannot remove the stale socket {}: {error}", path.display()))
}

/// Writes this process's id to `path` (replacing what is there).
pub(crate) fn write_pid(path: &Path) -> io::Result<()> {
    remove_if_present(path)?;
    let mut file = private_file(path, OpenOptions::new().write(true).create_new(true))?;
    writeln!(file, "{}", std::process::id())
}

/// Opens the service's log at `path`, the previous one kept beside it as
/// `.old`.
pub(crate) fn open_log(path: &Path) -> io::Result<File> {
    let old = path.with_extension("log.old");
    match fs::rename(path, &old) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    private_file(path, OpenOptions::new().append(true).create_new(true))
}

pub(crate) fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn tempdir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "xfile-rendezvous-test-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        fs::create_dir(&dir).expect("a test directory");
        dir
    }

    #[test]
    fn the_directory_is_created_private_and_refused_when_open_or_a_link() {
        let base = tempdir();
        let dir = base.join("xfile");
        assert_eq!(ensure_private(&dir), Ok(()));
        let mode = fs::metadata(&dir).map(|m| m.permissions().mode() & 0o777);
        assert_eq!(mode.ok(), Some(0o700));
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o750)).expect("chmod");
        let open = ensure_private(&dir).expect_err("a group may enter");
        assert!(open.contains("chmod 700"), "{open}");
        let link = base.join("link");
        std::os::unix::fs::symlink(&dir, &link).expect("a link");
        let linked = ensure_private(&link).expect_err("a link");
        assert!(linked.contains("symbolic link"), "{linked}");
        let file = base.join("file");
        fs::write(&file, "").expect("a file");
        assert!(ensure_private(&file).is_err());
        let _ = fs::remove_dir_all(&base);
    }

    #[test]
    fn names_differ_by_root_and_cache_mode_and_fit_a_socket_address() {
        let a = name(Path::new("/a"), false);
        assert_ne!(a, name(Path::new("/b"), false));
        assert_ne!(a, name(Path::new("/a"), true));
        assert_eq!(a, name(Path::new("/a"), false));
        let long = PathBuf::from(format!("/{}", "x".repeat(4000)));
        assert_eq!(name(&long, false).len(), 20);
    }

    #[test]
    fn one_lock_holder_at_a_time_and_a_removed_lock_is_taken_again() {
        let dir = tempdir();
        let path = dir.join("a.lock");
        let first = Lock::take(&path)
            .ok()
            .flatten()
            .expect("the first takes it");
        assert!(Lock::take(&path).ok().flatten().is_none());
        first.remove();
        assert!(!path.exists());
        assert!(Lock::take(&path).ok().flatten().is_some());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_stale_socket_is_cleared_and_a_live_one_is_not() {
        let dir = tempdir();
        let path = dir.join("a.sock");
        let listening = std::os::unix::net::UnixListener::bind(&path).expect("bind");
        assert!(clear_socket(&path).is_err());
        drop(listening);
        assert!(path.exists(), "a closed listener leaves its file");
        assert_eq!(clear_socket(&path), Ok(()));
        assert!(!path.exists());
        fs::create_dir(&path).expect("a directory");
        assert!(clear_socket(&path).is_err());
        let _ = fs::remove_dir_all(&dir);
    }
}
