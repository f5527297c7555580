//! `git blame` of a file as it is in the working tree: for each run of
//! lines, the commit that last changed them (following renames), or none
//! for lines not committed yet.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use gix::ObjectId;
use gix::bstr::{BStr, ByteSlice};

use super::{Commit, GitError, MAX_FILE_BYTES, Repo, args, failed};
use xfile_workspace::read::{self, Refusal};

mod index;
mod kept;
mod lines;
mod walk;

pub use index::{HistoryIndex, IndexBounds, MAX_INDEX_COMMITS};
pub use kept::{BlameStore, KeptBlame, Run};

/// Lines `start..=end` (1-based) and who last changed them.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BlameRange {
    pub start: u32,
    pub end: u32,
    /// `None`: the lines are not committed yet.
    pub commit: Option<Commit>,
    /// The file's root-relative path in that commit when it was elsewhere then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_path: Option<String>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Blame {
    /// Root-relative.
    pub path: String,
    /// Lines in the file.
    pub lines: u32,
    /// In line order, covering the asked lines.
    pub ranges: Vec<BlameRange>,
    /// The history is cut short (a shallow clone): lines older than it
    /// are given to its oldest commit.
    pub shallow: bool,
}

/// Blames kept in memory by what they depend on: the file's path and
/// content, and HEAD. Asked again with neither moved, a blame (or a range
/// of a whole-file blame) is answered without walking history.
pub struct BlameCache(Mutex<lru::LruCache<BlameKey, Arc<Blame>>>);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct BlameKey {
    path: String,
    head: ObjectId,
    /// The blob id of the working-tree content blamed.
    content: ObjectId,
    /// A shallow clone's cut (`Repo::cut`): deepening it changes blames
    /// without moving HEAD or the contents.
    cut: Vec<ObjectId>,
    first: u32,
    last: u32,
}

/// Blames a cache keeps: each is a few lines per range.
const CACHED_BLAMES: usize = 64;

impl Default for BlameCache {
    fn default() -> Self {
        BlameCache(Mutex::new(lru::LruCache::new(
            NonZeroUsize::new(CACHED_BLAMES).unwrap_or(NonZeroUsize::MIN),
        )))
    }
}

impl BlameCache {
    /// The blame of `key`'s lines: kept for them, or cut from a blame of
    /// the whole file.
    fn get(&self, key: &BlameKey, lines: u32) -> Option<Blame> {
        let mut cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = cache.get(key) {
            return Some(Blame::clone(found));
        }
        let whole = BlameKey {
            first: 1,
            last: lines,
            ..key.clone()
        };
        let found = cache.get(&whole)?;
        let ranges = found
            .ranges
            .iter()
            .filter(|r| r.end >= key.first && r.start <= key.last)
            .map(|r| BlameRange {
                start: r.start.max(key.first),
                end: r.end.min(key.last),
                ..r.clone()
            })
            .collect();
        Some(Blame {
            ranges,
            ..Blame::clone(found)
        })
    }

    fn put(&self, key: BlameKey, blame: &Blame) {
        let mut cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
        cache.put(key, Arc::new(blame.clone()));
    }
}

impl Repo {
    /// Blames `file` (root-relative or absolute), lines `start..=end`
    /// (1-based, both optional).
    pub fn blame(
        &self,
        file: &str,
        start: Option<u32>,
        end: Option<u32>,
    ) -> Result<Blame, GitError> {
        self.blame_cached(file, start, end, None, None)
    }

    /// [`Repo::blame`], answered from `cache` when it holds the blame and
    /// kept there when not; with a `store`, from the whole-file blame kept
    /// there (brought to HEAD, or computed and kept when the whole file
    /// is asked for).
    pub fn blame_cached(
        &self,
        file: &str,
        start: Option<u32>,
        end: Option<u32>,
        cache: Option<&BlameCache>,
        store: Option<&dyn BlameStore>,
    ) -> Result<Blame, GitError> {
        let relative = args::path(&self.root, file)?;
        args::readable(&relative)?;
        let on_disk = self.root.join(&relative);
        // Only a regular file is read (never a FIFO or a device, never
        // through a link), and only up to the size a diff compares: a
        // larger one is refused before any history is read.
        let contents = match read::open_regular(&on_disk, false)
            .and_then(|(file, meta)| read::read_bounded(file, &meta, MAX_FILE_BYTES as u64))
        {
            Ok(contents) => contents,
            Err(Refusal::TooBig(size, _)) => {
                return Err(GitError::TooLarge(relative, size, MAX_FILE_BYTES));
            }
            Err(_) => return Err(GitError::NotAFile(relative)),
        };
        if super::is_binary(&contents) {
            return Err(GitError::InvalidPath(
                relative,
                "it is a binary file; blame reads text",
            ));
        }
        let lines = line_count(&contents);
        let first = start.unwrap_or(1).max(1);
        let last = end.unwrap_or(lines).min(lines);
        if first > lines || first > last {
            return Err(GitError::PastEnd(relative, lines));
        }
        let head = self.head_commit()?;
        let cut = self.cut()?;
        let key = match cache {
            Some(_) => Some(BlameKey {
                path: relative.clone(),
                head: head.id,
                content: gix::objs::compute_hash(
                    self.repo.object_hash(),
                    gix::objs::Kind::Blob,
                    &contents,
                )
                .map_err(failed)?,
                cut: cut.clone(),
                first,
                last,
            }),
            None => None,
        };
        if let (Some(cache), Some(key)) = (cache, &key)
            && let Some(found) = cache.get(key, lines)
        {
            return Ok(found);
        }
        let repo_path = self.repo_path(&relative);
        let in_head = head
            .tree()
            .map_err(failed)?
            .lookup_entry_by_path(&repo_path)
            .map_err(failed)?;
        let committed = in_head.is_some();
        let shallow = !cut.is_empty() || self.is_shallow();
        if !committed {
            return Ok(Blame {
                path: relative,
                lines,
                ranges: vec![BlameRange {
                    start: first,
                    end: last,
                    commit: None,
                    source_path: None,
                }],
                shallow,
            });
        }
        // A kept blame (and the history index) holds only where the
        // history behind HEAD is whole: deepening a shallow clone changes
        // blames without moving HEAD, and neither records the cut it was
        // computed under. So a shallow clone blames afresh, always.
        if let (Some(store), Some(entry), false) = (store, &in_head, shallow)
            && entry.mode().is_blob()
        {
            let whole = first == 1 && last == lines;
            let kept = self.kept_blame(&relative, head.id, entry.object_id(), store, whole)?;
            if let Some(blame) = kept
                .map(|kept| self.blame_from_kept(&kept, &contents, first, last))
                .transpose()?
                .flatten()
            {
                if let (Some(cache), Some(key)) = (cache, key) {
                    cache.put(key, &blame);
                }
                return Ok(blame);
            }
        }
        // A shallow clone's commits at the cut have their parents grafted
        // away, as git sees them, so blame ends there instead of failing
        // on a parent that is not there.
        let graph = if cut.is_empty() {
            self.repo.commit_graph_if_enabled().map_err(failed)?
        } else {
            None
        };
        let outcome = self.blame_walk(
            Grafted {
                objects: &self.repo.objects,
                cut,
            },
            gix::blame::Start::Contents {
                first_suspect: head.id,
                contents: contents.into(),
            },
            graph,
            &repo_path,
            self.repo.diff_algorithm().map_err(failed)?,
            gix::blame::BlameRanges::from_one_based_inclusive_range(first..=last)
                .map_err(failed)?,
        )?;
        let mut commits: HashMap<ObjectId, Option<Commit>> = HashMap::new();
        let mut ranges: Vec<BlameRange> = Vec::new();
        for entry in &outcome.entries {
            let commit = match commits.get(&entry.commit_id) {
                Some(found) => found.clone(),
                None => {
                    let found = self.commit_of(entry.commit_id)?;
                    commits.insert(entry.commit_id, found.clone());
                    found
                }
            };
            let source_path = entry
                .source_file_name
                .as_ref()
                .map(|name| self.source_path(&name.to_str_lossy()));
            let start = entry.start_in_blamed_file + 1;
            let end = entry.start_in_blamed_file + entry.len.get();
            push_range(&mut ranges, start..=end, commit, source_path);
        }
        let blame = Blame {
            path: relative,
            lines,
            ranges,
            shallow,
        };
        if let (Some(cache), Some(key)) = (cache, key) {
            cache.put(key, &blame);
        }
        Ok(blame)
    }

    /// A shallow clone's cut: the commits whose parents it lacks, sorted
    /// (`Grafted` searches them); empty for a whole history.
    fn cut(&self) -> Result<Vec<ObjectId>, GitError> {
        let mut cut: Vec<ObjectId> = match self.repo.shallow_commits().map_err(failed)? {
            Some(commits) => commits.iter().copied().collect(),
            None => Vec::new(),
        };
        cut.sort_unstable();
        Ok(cut)
    }

    /// One history walk of gix's blame from `start` over `objects`, the
    /// lines in `ranges` of `repo_path`, renames followed.
    pub(super) fn blame_walk(
        &self,
        objects: impl gix::objs::Find + gix::objs::FindHeader,
        start: gix::blame::Start,
        graph: Option<gix::commitgraph::Graph>,
        repo_path: &str,
        diff_algorithm: gix::diff::blob::Algorithm,
        ranges: gix::blame::BlameRanges,
    ) -> Result<gix::blame::Outcome, GitError> {
        gix::blame::file(
            objects,
            start,
            graph,
            &mut self.resource_cache()?,
            BStr::new(repo_path.as_bytes()),
            gix::blame::Options {
                diff_algorithm,
                ranges,
                since: None,
                rewrites: Some(Default::default()),
                debug_track_path: false,
            },
        )
        .map_err(failed)
    }

    /// The commit `id` names; `None` for the null id blame gives lines
    /// not committed yet.
    fn commit_of(&self, id: ObjectId) -> Result<Option<Commit>, GitError> {
        if id.is_null() {
            return Ok(None);
        }
        let commit = self.repo.find_commit(id).map_err(failed)?;
        Commit::read(&commit).map(Some)
    }
}

impl Repo {
    /// The blame of `contents` (the working tree's, `lines` long), lines
    /// `first..=last`, from the kept blame of the file at HEAD: lines the
    /// contents changed are not committed yet, the others keep their
    /// commit. `None` for a damaged kept blame.
    fn blame_from_kept(
        &self,
        kept: &KeptBlame,
        contents: &[u8],
        first: u32,
        last: u32,
    ) -> Result<Option<Blame>, GitError> {
        let Some(owners) = kept.owners() else {
            return Ok(None);
        };
        let committed = ObjectId::from_hex(kept.blob.as_bytes())
            .map_err(failed)
            .and_then(|blob| self.blob(blob))?;
        let map: Vec<Option<u32>> = if committed == contents {
            (0..kept.lines).map(Some).collect()
        } else {
            lines::unchanged_from(
                &committed,
                contents,
                self.repo.diff_algorithm().map_err(failed)?,
            )
        };
        let commits = kept.commit_table();
        let mut ranges = Vec::new();
        for line in first..=last {
            let owner = map
                .get(line as usize - 1)
                .copied()
                .flatten()
                .and_then(|at| owners.get(at as usize));
            let (commit, source_path) = match owner {
                Some(owner) => match commits.get(&owner.commit) {
                    Some(commit) => (Some(commit.clone()), owner.source_path.clone()),
                    None => return Ok(None),
                },
                None => (None, None),
            };
            push_range(&mut ranges, line..=line, commit, source_path);
        }
        Ok(Some(Blame {
            path: kept.path.clone(),
            lines: line_count(contents),
            ranges,
            shallow: false,
        }))
    }
}

/// Adds lines `lines` owned by `commit` after `ranges`, joined to the last
/// range when it ends just before with the same owner.
fn push_range(
    ranges: &mut Vec<BlameRange>,
    lines: std::ops::RangeInclusive<u32>,
    commit: Option<Commit>,
    source_path: Option<String>,
) {
    let (start, end) = lines.into_inner();
    match ranges.last_mut() {
        Some(last)
            if last.end + 1 == start
                && last.commit == commit
                && last.source_path == source_path =>
        {
            last.end = end
        }
        _ => ranges.push(BlameRange {
            start,
            end,
            commit,
            source_path,
        }),
    }
}

/// The object database with the commits in `cut` (sorted) read without
/// their parents.
struct Grafted<'a> {
    objects: &'a gix::OdbHandle,
    cut: Vec<ObjectId>,
}

impl gix::objs::Find for Grafted<'_> {
    fn try_find<'b>(
        &self,
        id: &gix::hash::oid,
        buffer: &'b mut Vec<u8>,
    ) -> gix::error::Result<Option<gix::objs::Data<'b>>> {
        let Some(data) = self.objects.try_find(id, buffer)? else {
            return Ok(None);
        };
        let (kind, object_hash) = (data.kind, data.object_hash);
        if kind != gix::objs::Kind::Commit
            || self.cut.binary_search_by(|c| c.as_ref().cmp(id)).is_err()
        {
            return Ok(Some(gix::objs::Data {
                kind,
                object_hash,
                data: buffer,
            }));
        }
        // The header ends at the first empty line; only its parent lines go.
        let header_end = buffer.find(b"\n\n").unwrap_or(buffer.len());
        let (header, message) = buffer.split_at(header_end);
        let mut kept: Vec<u8> = header
            .split_inclusive(|&b| b == b'\n')
            .filter(|line| !line.starts_with(b"parent "))
            .flatten()
            .copied()
            .collect();
        kept.extend_from_slice(message);
        *buffer = kept;
        Ok(Some(gix::objs::Data {
            kind,
            object_hash,
            data: buffer,
        }))
    }
}

impl gix::objs::FindHeader for Grafted<'_> {
    fn try_header(&self, id: &gix::hash::oid) -> gix::error::Result<Option<gix::objs::Header>> {
        self.objects.try_header(id)
    }
}

/// Lines as git counts them: a last line without a newline counts.
fn line_count(contents: &[u8]) -> u32 {
    let newlines = contents.iter().filter(|&&b| b == b'\n').count();
    let unterminated = usize::from(!contents.is_empty() && !contents.ends_with(b"\n"));
    u32::try_from(newlines + unterminated).unwrap_or(u32::MAX)
}
