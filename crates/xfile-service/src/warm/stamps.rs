//! What a warm start compares instead of reading the tree: each file's and
//! directory's metadata (modification and change times, length, inode),
//! and whether a stamp can be trusted at all.
//!
//! A stamp says a file is unchanged only if no change could have left the
//! same stamp. Timestamps come from a clock that ticks coarsely, so a write
//! made just after a read can keep the stamp the read saw (git's "racily
//! clean" entries). A stamp is therefore *settled* only when its change
//! time (which no tool can set back, unlike the modification time) lies
//! safely before the moment the index began reading; an unsettled file is
//! hashed, an unsettled directory is not trusted.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Nanoseconds since the epoch.
pub(crate) type Nanos = i64;

/// How far before a read a change must lie to be told apart from one made
/// right after it: a few ticks of the kernel's coarse clock on file systems
/// with fine timestamps, two seconds where they have whole seconds only.
const FINE_MARGIN: Nanos = 100_000_000;
const COARSE_MARGIN: Nanos = 2_000_000_000;

pub(crate) fn now() -> Nanos {
    nanos(SystemTime::now())
}

fn nanos(time: SystemTime) -> Nanos {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => Nanos::try_from(after.as_nanos()).unwrap_or(Nanos::MAX),
        Err(before) => -Nanos::try_from(before.duration().as_nanos()).unwrap_or(Nanos::MAX),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stamp {
    modified: Nanos,
    changed: Nanos,
    len: u64,
    inode: u64,
    /// File type and permission bits.
    mode: u32,
}

impl Stamp {
    pub(crate) fn of(metadata: &Metadata) -> Stamp {
        let time = |secs: i64, nsecs: i64| secs.saturating_mul(1_000_000_000).saturating_add(nsecs);
        Stamp {
            modified: time(metadata.mtime(), metadata.mtime_nsec()),
            changed: time(metadata.ctime(), metadata.ctime_nsec()),
            len: metadata.len(),
            inode: metadata.ino(),
            mode: metadata.mode(),
        }
    }

    /// The stamp of what `path` names now (links followed, as the walk
    /// follows them); `None` when nothing is there.
    pub(crate) fn at(path: &Path) -> Option<Stamp> {
        std::fs::metadata(path).ok().map(|m| Stamp::of(&m))
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Whether this stamp was already what it is well before `read_from`,
    /// the moment the index began reading: then the contents read after it
    /// are the contents this stamp stands for.
    pub(crate) fn settled(&self, read_from: Nanos) -> bool {
        let whole_seconds = self.changed % 1_000_000_000 == 0 && self.modified % 1_000_000_000 == 0;
        let margin = if whole_seconds {
            COARSE_MARGIN
        } else {
            FINE_MARGIN
        };
        self.changed.saturating_add(margin) < read_from
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_changed_after_the_read_began_is_not_settled() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.py");
        std::fs::write(&path, "x = 1\n").expect("write");
        let stamp = Stamp::at(&path).expect("stamp");
        assert!(!stamp.settled(now()), "changed a moment ago");
        assert!(stamp.settled(now() + 3 * COARSE_MARGIN));
        std::fs::write(&path, "x = 22\n").expect("write");
        assert_ne!(Stamp::at(&path), Some(stamp));
        assert_eq!(Stamp::at(&dir.path().join("gone.py")), None);
    }
}
