//! The history index: for every commit walked from HEAD, its parents and
//! the files its tree changed against its first parent's (with their blob
//! ids before and after), so that a first blame of a file visits only the
//! commits that changed it instead of looking the path up in every commit
//! and diffing every tree (`walk.rs`).
//!
//! Each entry is a fact about one commit, whatever HEAD is, so an index
//! built at one HEAD is brought forward to a newer one by adding the
//! commits since (read from the new HEAD through parents down to commits
//! the index holds); a rewritten history only adds commits, and an index
//! at its bound of commits (`IndexBounds::max_commits`) is built afresh.
//! A walk that meets a commit the index does not hold (past that bound)
//! hands the rest to gix's blame, so an incomplete index is slower, never
//! wrong.
//!
//! On disk (`encode`, `decode`): a magic line, a SHA-256 of the rest, then
//! the record; anything that does not check out is no index.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use gix::ObjectId;
use gix::bstr::ByteSlice;
use sha2::{Digest, Sha256};

use super::super::{GitError, Repo, failed};

/// What an index file starts with; another format is no index.
const MAGIC: &[u8] = b"xfile history 1\n";
/// Commits an index holds at most unless told otherwise
/// (`IndexBounds::max_commits`); a history longer than this is indexed
/// from HEAD down to it, and the walk hands older commits to gix.
pub const MAX_INDEX_COMMITS: usize = 200_000;
/// A parent the index does not hold.
const ABSENT: u32 = u32::MAX;

/// How long building or bringing an index forward may take, and how
/// large the index may grow.
#[derive(Clone, Copy, Debug)]
pub struct IndexBounds {
    pub deadline: Duration,
    /// Commits to add at most; more to add is no index.
    pub max_new: usize,
    /// Commits the index holds at most (`MAX_INDEX_COMMITS` outside
    /// tests): past it the index ends, and a blame's walk hands the older
    /// history to gix there.
    pub max_commits: usize,
}

/// One commit: its id and its parents (positions in the index, `ABSENT`
/// for one it does not hold), in the commit's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Node {
    pub(super) id: ObjectId,
    pub(super) parents: Vec<u32>,
}

/// A path's entry at one commit: the blob there and in the first parent
/// (`None`: no file, or a directory, there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Change {
    pub(super) commit: u32,
    pub(super) blob: Option<ObjectId>,
    pub(super) before: Option<ObjectId>,
}

/// The index (see the module comment).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistoryIndex {
    /// The position of the HEAD it was built (or brought forward) for.
    head: u32,
    pub(super) nodes: Vec<Node>,
    /// Work-tree path → the commits whose tree changed it against their
    /// first parent's, in no particular order.
    pub(super) changes: HashMap<String, Vec<Change>>,
}

impl HistoryIndex {
    /// The HEAD the index is for.
    pub fn head(&self) -> Option<ObjectId> {
        self.nodes.get(self.head as usize).map(|node| node.id)
    }

    pub(super) fn head_position(&self) -> u32 {
        self.head
    }

    /// Commits held.
    pub fn commits(&self) -> usize {
        self.nodes.len()
    }

    /// The index as its file holds it.
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::new();
        put_u32(&mut body, self.head);
        put_u32(&mut body, len32(self.nodes.len()));
        for node in &self.nodes {
            body.extend_from_slice(node.id.as_bytes());
            put_u32(&mut body, len32(node.parents.len()));
            for &parent in &node.parents {
                put_u32(&mut body, parent);
            }
        }
        put_u32(&mut body, len32(self.changes.len()));
        // Paths in order: the same index gives the same bytes.
        let mut paths: Vec<(&String, &Vec<Change>)> = self.changes.iter().collect();
        paths.sort_unstable_by_key(|(path, _)| *path);
        for (path, changes) in paths {
            put_u32(&mut body, len32(path.len()));
            body.extend_from_slice(path.as_bytes());
            put_u32(&mut body, len32(changes.len()));
            for change in changes {
                put_u32(&mut body, change.commit);
                body.push(u8::from(change.blob.is_some()) | u8::from(change.before.is_some()) << 1);
                for id in [change.blob, change.before].into_iter().flatten() {
                    body.extend_from_slice(id.as_bytes());
                }
            }
        }
        let mut out = Vec::with_capacity(MAGIC.len() + 32 + body.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&Sha256::digest(&body));
        out.extend_from_slice(&body);
        out
    }

    /// An index from its file's bytes; `None` when they are not one
    /// (another format, damaged, a position out of range).
    pub fn decode(bytes: &[u8]) -> Option<HistoryIndex> {
        let rest = bytes.strip_prefix(MAGIC)?;
        let (sum, body) = rest.split_at_checked(32)?;
        if Sha256::digest(body).as_slice() != sum {
            return None;
        }
        let mut input = Reader(body);
        let head = input.u32()?;
        let count = input.u32()?;
        let mut nodes = Vec::with_capacity((count as usize).min(MAX_INDEX_COMMITS));
        for _ in 0..count {
            let id = input.id()?;
            let parents = (0..input.u32()?)
                .map(|_| input.u32().filter(|&p| p == ABSENT || p < count))
                .collect::<Option<Vec<u32>>>()?;
            nodes.push(Node { id, parents });
        }
        if head >= count {
            return None;
        }
        let paths = input.u32()?;
        let mut changes = HashMap::with_capacity((paths as usize).min(1 << 20));
        for _ in 0..paths {
            let len = input.u32()? as usize;
            let path = std::str::from_utf8(input.take(len)?).ok()?.to_string();
            let entries = input.u32()?;
            let mut list = Vec::with_capacity((entries as usize).min(MAX_INDEX_COMMITS));
            for _ in 0..entries {
                let commit = input.u32().filter(|&c| c < count)?;
                let flags = input.take(1)?[0];
                let blob = (flags & 1 != 0).then(|| input.id()).flatten();
                let before = (flags & 2 != 0).then(|| input.id()).flatten();
                if (flags & 1 != 0) != blob.is_some() || (flags & 2 != 0) != before.is_some() {
                    return None;
                }
                list.push(Change {
                    commit,
                    blob,
                    before,
                });
            }
            changes.insert(path, list);
        }
        input.0.is_empty().then_some(HistoryIndex {
            head,
            nodes,
            changes,
        })
    }
}

fn len32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn put_u32(out: &mut Vec<u8>, n: u32) {
    out.extend_from_slice(&n.to_le_bytes());
}

/// Bounds-checked reads of an index file.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (taken, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(taken)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn id(&mut self) -> Option<ObjectId> {
        ObjectId::try_from(self.take(gix::hash::Kind::Sha1.len_in_bytes())?).ok()
    }
}

impl Repo {
    /// Brings the history index `store` keeps to the current HEAD (or
    /// builds it) within `bounds`, and keeps it; `Ok(false)` when there is
    /// none to keep (no commits, a shallow clone, past the bounds).
    pub fn keep_history_index(
        &self,
        store: &dyn super::BlameStore,
        bounds: &IndexBounds,
    ) -> Result<bool, GitError> {
        let previous = store.load_index();
        let at = previous.as_ref().and_then(HistoryIndex::head);
        match self.history_index(previous, bounds)? {
            Some(index) => {
                if index.head() != at {
                    store.save_index(&index);
                }
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// The history index for the current HEAD: `previous` as it is when
    /// it is for HEAD, brought forward when it is for another commit, or
    /// built afresh (none, too large). `None` without commits, in a shallow
    /// clone (its history is not whole), or past `bounds`.
    pub fn history_index(
        &self,
        previous: Option<HistoryIndex>,
        bounds: &IndexBounds,
    ) -> Result<Option<HistoryIndex>, GitError> {
        let Some(head) = self.head_id() else {
            return Ok(None);
        };
        // None in a shallow clone: the commits at the cut would be held as
        // roots, and deepening the clone changes that without moving HEAD,
        // so an index (like a kept blame) could not tell it went stale.
        // Blames there walk the grafted history with gix (tests/git_shallow.rs).
        if self.is_shallow() {
            return Ok(None);
        }
        let previous = previous.filter(|index| index.nodes.len() < bounds.max_commits);
        if let Some(index) = &previous
            && index.head() == Some(head)
        {
            return Ok(previous);
        }
        let started = Instant::now();
        let mut index = previous.unwrap_or_default();
        let known: HashMap<ObjectId, u32> = index
            .nodes
            .iter()
            .enumerate()
            .map(|(i, node)| (node.id, len32(i)))
            .collect();
        // HEAD moved back to a commit the index holds: nothing to add.
        if let Some(&at) = known.get(&head) {
            index.head = at;
            return Ok(Some(index));
        }
        // The commits HEAD has and the index does not: all of them for a
        // new index, the ones since its HEAD for an older one. Read from
        // HEAD through parents, stopping at commits the index holds (it
        // holds their ancestors too), so bringing an index forward reads
        // only the new commits.
        let mut new: Vec<(ObjectId, Vec<ObjectId>)> = Vec::new();
        let mut queued: HashSet<ObjectId> = HashSet::from([head]);
        let mut queue = VecDeque::from([head]);
        while let Some(id) = queue.pop_front() {
            if index.nodes.len() + new.len() >= bounds.max_commits {
                break;
            }
            if new.len() >= bounds.max_new || started.elapsed() >= bounds.deadline {
                return Ok(None);
            }
            let commit = self.repo.find_commit(id).map_err(failed)?;
            let parents: Vec<ObjectId> = commit.parent_ids().map(|id| id.detach()).collect();
            for parent in &parents {
                if !known.contains_key(parent) && queued.insert(*parent) {
                    queue.push_back(*parent);
                }
            }
            new.push((id, parents));
        }
        // Oldest first. The commits an index is brought forward by are the
        // newest, which a repository mostly holds loose or in packs written
        // or fetched in history order, each tree a delta on its older
        // version: read oldest first, that base is still in the delta-base
        // cache (newest first, each tree's chain was resolved anew: three
        // times slower on the generated benchmark history). A pack fully
        // repacked holds the newest versions whole, where this order is
        // about twice as slow (a first build: 63 ms instead of 33 on the
        // repacked benchmark, off any answer's path).
        new.reverse();
        let mut positions = known;
        for (i, (id, _)) in new.iter().enumerate() {
            positions.insert(*id, len32(index.nodes.len() + i));
        }
        let mut cache = self.resource_cache()?;
        for (id, parents) in new {
            // Not kept in part: the commits left out would stay out, as
            // the next walk stops at the commits the index holds.
            if started.elapsed() >= bounds.deadline {
                return Ok(None);
            }
            let at = len32(index.nodes.len());
            if let Some(first) = parents.first() {
                self.changed_paths(id, *first, &mut cache, |path, blob, before| {
                    index.changes.entry(path).or_default().push(Change {
                        commit: at,
                        blob,
                        before,
                    });
                })?;
            }
            index.nodes.push(Node {
                id,
                parents: parents
                    .iter()
                    .map(|parent| positions.get(parent).copied().unwrap_or(ABSENT))
                    .collect(),
            });
        }
        // Parents past `max_commits` are not held: a blame walk hands
        // over to gix there.
        let held = len32(index.nodes.len());
        for node in &mut index.nodes {
            for parent in &mut node.parents {
                if *parent >= held {
                    *parent = ABSENT;
                }
            }
        }
        match positions.get(&head) {
            Some(&at) if at < held => index.head = at,
            _ => return Ok(None),
        }
        Ok(Some(index))
    }

    /// Calls `found` with each file (work-tree path inside the root) whose
    /// entry differs between the trees of `commit` and `parent`, with its
    /// blob in each (`None`: absent, or not a file).
    fn changed_paths(
        &self,
        commit: ObjectId,
        parent: ObjectId,
        cache: &mut gix::diff::blob::Platform,
        mut found: impl FnMut(String, Option<ObjectId>, Option<ObjectId>),
    ) -> Result<(), GitError> {
        let tree = self.commit_tree(commit)?;
        let parent_tree = self.commit_tree(parent)?;
        use gix::object::tree::diff::Change as TreeChange;
        let file = |mode: gix::object::tree::EntryMode, id: gix::Id<'_>| {
            (!mode.is_tree()).then(|| id.detach())
        };
        parent_tree
            .changes()
            .map_err(failed)?
            .options(|o| {
                o.track_rewrites(None);
            })
            .for_each_to_obtain_tree_with_cache(&tree, cache, |change| {
                let location = change.location().to_str_lossy();
                if location.starts_with(self.prefix.as_str()) {
                    let (blob, before) = match change {
                        TreeChange::Addition { entry_mode, id, .. } => (file(entry_mode, id), None),
                        TreeChange::Deletion { entry_mode, id, .. } => (None, file(entry_mode, id)),
                        TreeChange::Modification {
                            previous_entry_mode,
                            previous_id,
                            entry_mode,
                            id,
                            ..
                        } => (file(entry_mode, id), file(previous_entry_mode, previous_id)),
                        // Rename tracking is off.
                        TreeChange::Rewrite { .. } => (None, None),
                    };
                    if blob.is_some() || before.is_some() {
                        found(location.into_owned(), blob, before);
                    }
                }
                Ok(std::ops::ControlFlow::Continue(()))
            })
            .map_err(failed)?;
        Ok(())
    }
}
