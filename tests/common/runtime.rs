//! A private runtime directory for the shared services a test's `xfile
//! serve` sessions start (`XFILE_RUNTIME_DIR`), with a short idle time,
//! and the end of those services when it is dropped: tests never share a
//! service, and leave none behind.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Seconds a test's service stays up with no client: short, in case a
/// test process dies before it can stop the service itself.
pub const IDLE_SECONDS: &str = "20";

pub struct Runtime {
    dir: tempfile::TempDir,
}

impl Runtime {
    pub fn new() -> Runtime {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("a runtime directory");
        // Owner-only, as xfile requires (tempfile leaves it to the umask).
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
            .expect("chmod 700");
        Runtime { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The environment that points `xfile serve` here.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("XFILE_RUNTIME_DIR", self.path().display().to_string()),
            ("XFILE_SERVICE_IDLE_SECONDS", IDLE_SECONDS.to_string()),
        ]
    }

    /// Files in the directory with this extension (`sock`, `pid`, ...).
    pub fn files(&self, extension: &str) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(self.path())
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|e| e == extension))
            .collect();
        found.sort();
        found
    }

    /// The ids of the services running from this directory (by their pid
    /// files, checked against the process's environment).
    pub fn service_pids(&self) -> Vec<i32> {
        self.files("pid")
            .iter()
            .filter_map(|file| std::fs::read_to_string(file).ok()?.trim().parse().ok())
            .filter(|&pid| self.runs_here(pid))
            .collect()
    }

    /// Whether `pid` is a live process started with this directory as its
    /// runtime directory (a pid file may outlive its process, and a pid be
    /// reused by another).
    pub fn runs_here(&self, pid: i32) -> bool {
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            return false;
        };
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = state
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        let wanted = format!("XFILE_RUNTIME_DIR={}", self.path().display());
        !zombie
            && environ
                .split(|&b| b == 0)
                .any(|entry| entry == wanted.as_bytes())
    }

    /// Kills the services running from this directory and waits (bounded)
    /// until they are gone.
    pub fn kill_services(&self) {
        let pids = self.service_pids();
        for &pid in &pids {
            // SAFETY: kill(2) on a process this test started, checked above.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pids.iter().any(|&pid| self.runs_here(pid)) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.kill_services();
    }
}
