//! The writes xfile makes under a project root (its logs, the warm-start
//! cache, the kept blames) whose last try failed: a full disk, a file in
//! the way, a directory that became read-only. Every such write is best
//! effort (the tools answer regardless), so nothing else would say that
//! they fail; `/health` reports them. A later write of the same file that
//! succeeds takes its failure back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// One file's last write, which failed.
#[derive(Clone, Debug)]
pub struct FailedWrite {
    pub path: PathBuf,
    pub error: String,
    /// The disk (or the user's quota) is full.
    pub no_space: bool,
    pub at: SystemTime,
}

impl FailedWrite {
    /// One line: which file (relative to `root`), when, why, and what to do.
    pub fn describe(&self, root: &Path) -> String {
        let path = self.path.strip_prefix(root).unwrap_or(&self.path);
        let what_to_do = if self.no_space {
            "free some disk space"
        } else {
            "fix what the error names"
        };
        format!(
            "writing {} failed at {}: {}; {what_to_do}, xfile tries again with its next write",
            path.display(),
            humantime::format_rfc3339_seconds(self.at),
            self.error
        )
    }
}

/// Files whose last write failed, by path. Bounded: one entry per file
/// xfile writes (the kept blames count as one).
static FAILED: Mutex<BTreeMap<PathBuf, FailedWrite>> = Mutex::new(BTreeMap::new());

/// Records how a write of `path` went.
pub(crate) fn record<T>(path: &Path, result: &std::io::Result<T>) {
    let mut failed = FAILED.lock().unwrap_or_else(|e| e.into_inner());
    match result {
        Ok(_) => {
            failed.remove(path);
        }
        Err(error) => {
            let no_space = matches!(
                error.raw_os_error(),
                Some(libc::ENOSPC) | Some(libc::EDQUOT)
            );
            failed.insert(
                path.to_path_buf(),
                FailedWrite {
                    path: path.to_path_buf(),
                    error: error.to_string(),
                    no_space,
                    at: SystemTime::now(),
                },
            );
        }
    }
}

/// The files under `root` whose last write failed, by path.
pub fn under(root: &Path) -> Vec<FailedWrite> {
    let failed = FAILED.lock().unwrap_or_else(|e| e.into_inner());
    failed
        .values()
        .filter(|f| f.path.starts_with(root))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_stays_until_the_same_file_is_written() {
        let root = tempfile::tempdir().expect("tempdir");
        let log = root.path().join("logs/a.jsonl");
        let full: std::io::Result<()> = Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
        record(&log, &full);
        let failed = under(root.path());
        assert_eq!(failed.len(), 1);
        let line = failed[0].describe(root.path());
        assert!(
            line.starts_with("writing logs/a.jsonl failed at ") && line.contains("free some disk"),
            "{line}"
        );
        record(&root.path().join("logs/b.jsonl"), &Ok(()));
        assert_eq!(under(root.path()).len(), 1);
        record(&log, &Ok(()));
        assert!(under(root.path()).is_empty());
    }
}
