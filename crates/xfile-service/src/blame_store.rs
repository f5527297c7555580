//! Whole-file blames kept on disk, in `.xfile_cache/blame/`, so that a
//! blame computed by one process (a server's blames computed ahead, an
//! earlier `xfile git blame`) answers the next one without walking the
//! file's history again, and one kept for an older HEAD is brought
//! forward by walking only the commits since (`git::KeptBlame`).
//!
//! Beside them, the history index (`history.idx`): the files each commit
//! changed, which makes a first blame of a file visit only its commits.
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
use xfile_git::{BlameStore, HistoryIndex, KeptBlame};

/// The subdirectory of the cache directory.
pub(crate) const DIR: &str = "blame";
/// What a file starts with; another format is ignored.
const MAGIC: &[u8] = b"xfile blame 1\n";
/// Files larger than this are not read (a blame of a 100,000-line file
/// with a commit per line is about this size).
const MAX_BYTES: u64 = 16 << 20;
/// Blamed files kept; the least recently written go first.
const MAX_FILES: usize = 256;
/// The history index's file (`git::HistoryIndex`), beside the blames: not
/// one of them (not `.bin`), so never removed to bound them.
pub(crate) const INDEX: &str = "history.idx";
/// An index larger than this is not read (about what `git::HistoryIndex`
/// holds at its bound of commits with a few files changed in each).
const MAX_INDEX_BYTES: u64 = 128 << 20;

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

impl DiskBlames {
    /// The bytes of the file `name` in the blame directory: only a regular
    /// file, never through a link, at most `max` bytes.
    fn read(&self, name: &str, max: u64) -> Option<Vec<u8>> {
        let dir = disk::existing_subdir(&self.root, DIR).ok()?;
        let file = disk::open_in(&dir, name).ok()?;
        let len = file.metadata().ok()?.len();
        if len > max {
            return None;
        }
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        file.take(max).read_to_end(&mut bytes).ok()?;
        Some(bytes)
    }
}

impl BlameStore for DiskBlames {
    fn load(&self, path: &str) -> Option<KeptBlame> {
        let bytes = self.read(&file_name(path), MAX_BYTES)?;
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
        // One record for all the blames: the last one kept, or not.
        crate::failed_writes::record(&disk::dir(&self.root).join(DIR), &saved);
        if let Err(error) = saved {
            tracing::debug!("blame of {} not kept: {error}", blame.path);
        }
    }

    fn load_index(&self) -> Option<HistoryIndex> {
        HistoryIndex::decode(&self.read(INDEX, MAX_INDEX_BYTES)?)
    }

    fn save_index(&self, index: &HistoryIndex) {
        let bytes = index.encode();
        if bytes.len() as u64 > MAX_INDEX_BYTES {
            return;
        }
        let saved =
            disk::subdir(&self.root, DIR).and_then(|dir| disk::replace(&dir, INDEX, &bytes, false));
        let path = disk::dir(&self.root).join(DIR).join(INDEX);
        crate::failed_writes::record(&path, &saved);
        if let Err(error) = saved {
            tracing::debug!("history index not kept: {error}");
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

/// What the blame directory holds, for `cache info`.
#[derive(Debug, serde::Serialize)]
pub struct Usage {
    /// Kept blames: files and bytes.
    pub blames: usize,
    pub blame_bytes: u64,
    /// The history index, when there is a file in its place.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<IndexUsage>,
}

#[derive(Debug, serde::Serialize)]
pub struct IndexUsage {
    pub bytes: u64,
    /// Commits it holds; absent when it does not decode (it is rebuilt).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commits: Option<usize>,
    /// The HEAD it is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
}

/// The kept blames and history index of the project at `root`; `None`
/// without a blame directory (or with a link in its place: never read).
pub fn usage(root: &Path) -> Option<Usage> {
    let dir = disk::existing_subdir(root, DIR).ok()?;
    let mut usage = Usage {
        blames: 0,
        blame_bytes: 0,
        index: None,
    };
    for entry in std::fs::read_dir(&dir).ok()?.filter_map(Result::ok) {
        // Only regular files count: a link is never followed.
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !meta.file_type().is_file() {
            continue;
        }
        if name.ends_with(".bin") {
            usage.blames += 1;
            usage.blame_bytes += meta.len();
        } else if name == INDEX {
            let index = DiskBlames {
                root: root.to_path_buf(),
            }
            .load_index();
            usage.index = Some(IndexUsage {
                bytes: meta.len(),
                commits: index.as_ref().map(HistoryIndex::commits),
                head: index.and_then(|i| i.head()).map(|id| id.to_string()),
            });
        }
    }
    Some(usage)
}
