//! Whole-file blames kept on disk, in `.xfile_cache/blame/`, so that a
//! blame computed by one process (a server's blames computed ahead, an
//! earlier `xfile git blame`) answers the next one without walking the
//! file's history again, and one kept for an older HEAD is brought
//! forward by walking only the commits since (`git::KeptBlame`).
//!
//! One file per blamed path (named by a hash of the path), holding the
//! blame for the last HEAD it was computed at. Read without following
//! links and only when regular and not too large; anything that does not
//! decode, or is for another path, is ignored and written over. Written
//! through a temporary file and a rename (`warm::disk`), so a reader sees
//! an old file or a new one; the directory holds at most `MAX_FILES`.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::warm::{self, disk};
use crate::git::{BlameStore, KeptBlame};

/// The subdirectory of the cache directory.
pub(crate) const DIR: &str = "blame";
/// What a file starts with; another format is ignored.
const MAGIC: &[u8] = b"xfile blame 1\n";
/// Files larger than this are not read (a blame of a 100,000-line file
/// with a commit per line is about this size).
const MAX_BYTES: u64 = 16 << 20;
/// Blamed files kept; the least recently written go first.
const MAX_FILES: usize = 256;

/// The kept blames of the project at `root` (canonical).
pub struct DiskBlames {
    root: PathBuf,
}

impl DiskBlames {
    /// `None` when the cache is switched off (`--no-cache`).
    pub fn new(root: &Path) -> Option<DiskBlames> {
        warm::enabled().then(|| DiskBlames {
            root: root.to_path_buf(),
        })
    }
}

fn file_name(path: &str) -> String {
    let digest = Sha256::digest(path.as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("{hex}.bin")
}

impl BlameStore for DiskBlames {
    fn load(&self, path: &str) -> Option<KeptBlame> {
        let dir = disk::existing_subdir(&self.root, DIR).ok()?;
        let file = disk::open_in(&dir, &file_name(path)).ok()?;
        if file.metadata().ok()?.len() > MAX_BYTES {
            return None;
        }
        let mut bytes = Vec::new();
        file.take(MAX_BYTES).read_to_end(&mut bytes).ok()?;
        let record = bytes.strip_prefix(MAGIC)?;
        let kept: KeptBlame = rmp_serde::from_slice(record).ok()?;
        (kept.path == path).then_some(kept)
    }

    fn save(&self, blame: &KeptBlame) {
        let Ok(bytes) = rmp_serde::to_vec(blame).map(|record| [MAGIC, &record].concat()) else {
            return;
        };
        if bytes.len() as u64 > MAX_BYTES {
            return;
        }
        let saved = disk::subdir(&self.root, DIR).and_then(|dir| {
            disk::replace(&dir, &file_name(&blame.path), &bytes, false)?;
            bound(&dir);
            Ok(())
        });
        if let Err(error) = saved {
            tracing::debug!("blame of {} not kept: {error}", blame.path);
        }
    }
}

/// Keeps the directory to `MAX_FILES` blames (the oldest written go) and
/// removes temporary files a writer that died left.
fn bound(dir: &Path) {
    disk::sweep(dir, |name| name.ends_with(".tmp"));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut kept: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".bin"))
        .filter_map(|entry| {
            let meta = entry.metadata().ok()?;
            Some((meta.modified().ok()?, entry.path()))
        })
        .collect();
    if kept.len() <= MAX_FILES {
        return;
    }
    kept.sort();
    for (_, path) in &kept[..kept.len() - MAX_FILES] {
        let _ = std::fs::remove_file(path);
    }
}
