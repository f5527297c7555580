//! Whole-file blames that outlive a process: [`KeptBlame`], the blame of a
//! file's committed version at one commit, which a [`BlameStore`] keeps
//! (the service's is on disk), and how one is reused.
//!
//! Three ways to a blame of the working-tree contents, cheapest first:
//!
//! - the kept blame is for HEAD and the file's blob there: the contents
//!   are diffed against that blob, changed lines are not committed yet and
//!   the others take the kept lines' commits (what `gix::blame::file` does
//!   first with working-tree contents, then walks history for the rest);
//! - it is for an older HEAD: the commits between are walked (`advance`),
//!   as blame would walk them, and the lines that reach the old HEAD take
//!   its kept commits; only where that walk is a single line of history
//!   without renames (a merge is passed through only when the file is the
//!   same as in one of its parents, as blame passes it); anything else
//!   is blamed afresh;
//! - none, or none usable: through the store's history index when it
//!   has one (`walk.rs`: only the commits that changed the file), else a
//!   full walk (`gix::blame::file`); then kept.
//!
//! Each line's commit depends only on the line and the history behind it,
//! not on which other lines are blamed with it, so a blame composed this
//! way answers line for line as a fresh one.

use std::collections::{HashMap, HashSet};

use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::diff::blob::Algorithm;
use serde::{Deserialize, Serialize};

use super::super::{Commit, GitError, MAX_FILE_BYTES, Repo, failed};
use super::index::{HistoryIndex, IndexBounds, MAX_INDEX_COMMITS};
use super::lines::{Differ, Tracked};

/// Commits between a kept blame's HEAD and the current one past which
/// advancing it is not tried: a full blame costs about the same then.
const MAX_ADVANCE: usize = 1_000;

/// How far a blame brings a kept history index forward before answering,
/// where that costs less than the walk without the index it saves. On the
/// git history benchmark (docs/performance.md), bringing the
/// index forward costs about 0.035 ms a commit on the generated history
/// (0.06 repacked), a blame through it 41 ms (30) and gix's walk without
/// it 120 ms (87): forwarding pays up to about 2,200 commits (900
/// repacked). 600 stays well below both, at about 21 ms (37), a margin for
/// files whose walk is shorter (it stops once every line has a commit)
/// and for a loaded machine. The deadline, about the walk's cost less the
/// blame through the index, guards against repositories whose commits
/// cost far more to diff. Past either bound the blame walks without the
/// index, which the warm-up (or the next `xfile git blame`, after its
/// answer) brings forward instead.
const INLINE_INDEX: IndexBounds = IndexBounds {
    deadline: std::time::Duration::from_millis(80),
    max_new: 600,
    max_commits: MAX_INDEX_COMMITS,
};

/// The blame of one file as committed at one commit: every line's commit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptBlame {
    /// Root-relative.
    pub path: String,
    /// The commit blamed at (hexadecimal).
    pub head: String,
    /// The file's blob at that commit (hexadecimal).
    pub blob: String,
    /// The line diff algorithm the blame used (the repository's
    /// `diff.algorithm`): another gives other answers.
    pub algorithm: String,
    pub lines: u32,
    /// The commits lines are given to; [`Run::commit`] indexes it.
    pub commits: Vec<Commit>,
    /// Runs of lines in order, covering `1..=lines`.
    pub runs: Vec<Run>,
}

/// Lines `start..=end` (1-based) and the commit that last changed them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    pub start: u32,
    pub end: u32,
    /// Index into [`KeptBlame::commits`].
    pub commit: u32,
    /// Root-relative path of the file in that commit when it was
    /// elsewhere then (as [`super::BlameRange::source_path`]).
    pub source_path: Option<String>,
}

/// Where whole-file blames are kept between answers and processes.
pub trait BlameStore {
    /// The blame kept for `path` (root-relative), whatever HEAD it is for.
    fn load(&self, path: &str) -> Option<KeptBlame>;
    /// Keeps `blame` (replacing the one kept for its path).
    fn save(&self, blame: &KeptBlame);
    /// The history index kept, whatever HEAD it is for.
    fn load_index(&self) -> Option<HistoryIndex> {
        None
    }
    /// Keeps `index` (replacing the one kept).
    fn save_index(&self, _index: &HistoryIndex) {}
}

/// One line's owner while blames are composed: a commit and the path the
/// line had there when it was elsewhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Owner {
    pub(super) commit: ObjectId,
    pub(super) source_path: Option<String>,
}

impl KeptBlame {
    fn head_id(&self) -> Option<ObjectId> {
        ObjectId::from_hex(self.head.as_bytes()).ok()
    }

    /// Whether this blame is the one of `blob` at `head` under `algorithm`.
    pub(super) fn is_for(&self, head: ObjectId, blob: ObjectId, algorithm: Algorithm) -> bool {
        self.head_id() == Some(head)
            && ObjectId::from_hex(self.blob.as_bytes()).ok() == Some(blob)
            && self.algorithm == algorithm_name(algorithm)
    }

    /// Each line's owner, in order; `None` when the runs do not cover the
    /// lines exactly (a damaged record).
    pub(super) fn owners(&self) -> Option<Vec<Owner>> {
        let ids: Vec<ObjectId> = self
            .commits
            .iter()
            .map(|c| ObjectId::from_hex(c.id.as_bytes()).ok())
            .collect::<Option<_>>()?;
        let mut owners = Vec::with_capacity(usize::try_from(self.lines).ok()?);
        for run in &self.runs {
            if run.start != u32::try_from(owners.len()).ok()? + 1 || run.end < run.start {
                return None;
            }
            let commit = *ids.get(usize::try_from(run.commit).ok()?)?;
            for _ in run.start..=run.end {
                owners.push(Owner {
                    commit,
                    source_path: run.source_path.clone(),
                });
            }
        }
        (owners.len() == usize::try_from(self.lines).ok()?).then_some(owners)
    }

    /// The commit each kept line names, by id.
    pub(super) fn commit_table(&self) -> HashMap<ObjectId, Commit> {
        self.commits
            .iter()
            .filter_map(|c| Some((ObjectId::from_hex(c.id.as_bytes()).ok()?, c.clone())))
            .collect()
    }
}

pub(super) fn algorithm_name(algorithm: Algorithm) -> String {
    format!("{algorithm:?}").to_lowercase()
}

impl Repo {
    /// The kept blame of `path` (root-relative) at `head`, whose blob
    /// there is `blob`: `kept` as it is, advanced from its older HEAD, or
    /// computed afresh; stored when new. `None` when a fresh whole-file
    /// blame is not wanted (`whole` false) and nothing kept can be used.
    pub(super) fn kept_blame(
        &self,
        path: &str,
        head: ObjectId,
        blob: ObjectId,
        store: &dyn BlameStore,
        whole: bool,
    ) -> Result<Option<KeptBlame>, GitError> {
        // A committed version over the size limit is not blamed line by
        // line (nor a blame kept for it read): the walk without it takes
        // it for binary.
        if self.blob_too_large(blob)? {
            return Ok(None);
        }
        let algorithm = self.repo.diff_algorithm().map_err(failed)?;
        let kept = store.load(path).filter(|k| k.path == path);
        if let Some(kept) = &kept
            && kept.is_for(head, blob, algorithm)
            && kept.owners().is_some()
        {
            return Ok(Some(kept.clone()));
        }
        let advanced = match &kept {
            Some(kept) if kept.algorithm == algorithm_name(algorithm) => {
                self.advance(kept, path, head, blob, algorithm)?
            }
            _ => None,
        };
        let indexed = match advanced {
            Some(_) => None,
            None => self.indexed_kept(path, head, blob, algorithm, store)?,
        };
        let fresh = match advanced.or(indexed) {
            Some(found) => found,
            None if whole => self.fresh_kept(path, head, blob, algorithm)?,
            None => return Ok(None),
        };
        // A walk that left lines without a commit (gix's blame does on
        // some histories with several roots) is not kept.
        if fresh.owners().is_none() {
            return Ok(None);
        }
        store.save(&fresh);
        Ok(Some(fresh))
    }

    /// A whole-file blame of `path` at `head` by a full history walk.
    fn fresh_kept(
        &self,
        path: &str,
        head: ObjectId,
        blob: ObjectId,
        algorithm: Algorithm,
    ) -> Result<KeptBlame, GitError> {
        let repo_path = self.repo_path(path);
        let graph = self.repo.commit_graph_if_enabled().map_err(failed)?;
        let outcome = self.blame_walk(
            &self.repo.objects,
            gix::blame::Start::Commit(head),
            graph,
            &repo_path,
            algorithm,
            gix::blame::BlameRanges::default(),
        )?;
        let mut owners = Vec::new();
        for entry in &outcome.entries {
            let source_path = entry
                .source_file_name
                .as_ref()
                .map(|name| self.source_path(&name.to_str_lossy()));
            for _ in 0..entry.len.get() {
                owners.push(Owner {
                    commit: entry.commit_id,
                    source_path: source_path.clone(),
                });
            }
        }
        self.keep(path, head, blob, algorithm, &owners, &HashMap::new())
    }

    /// A whole-file blame of `path` at `head` through the history index
    /// `store` keeps, brought forward first when it is for an older HEAD
    /// and only a few commits behind; `None` without a usable index.
    fn indexed_kept(
        &self,
        path: &str,
        head: ObjectId,
        blob: ObjectId,
        algorithm: Algorithm,
        store: &dyn BlameStore,
    ) -> Result<Option<KeptBlame>, GitError> {
        let Some(mut index) = store.load_index() else {
            return Ok(None);
        };
        if index.head() != Some(head) {
            match self.history_index(Some(index), &INLINE_INDEX)? {
                Some(forward) => {
                    store.save_index(&forward);
                    index = forward;
                }
                None => return Ok(None),
            }
        }
        let owners = self.indexed_owners(&index, &self.repo_path(path), head, blob, algorithm)?;
        owners
            .map(|owners| self.keep(path, head, blob, algorithm, &owners, &HashMap::new()))
            .transpose()
    }

    /// `kept` (for an older HEAD) brought to `head` by walking the commits
    /// between as blame would; `None` where that walk is not one line of
    /// history ending at the kept HEAD (see the module comment).
    fn advance(
        &self,
        kept: &KeptBlame,
        path: &str,
        head: ObjectId,
        blob: ObjectId,
        algorithm: Algorithm,
    ) -> Result<Option<KeptBlame>, GitError> {
        let Some(old_head) = kept.head_id() else {
            return Ok(None);
        };
        let Some(old_owners) = kept.owners() else {
            return Ok(None);
        };
        // The commits the walk may visit: those HEAD has and the kept
        // HEAD has not. A blame that reaches any other commit is not the
        // kept one's business.
        // A kept HEAD the repository no longer has (rewritten and
        // collected) fails this walk: blamed afresh.
        let mut between = HashSet::new();
        let Ok(walk) = self.repo.rev_walk([head]).with_hidden([old_head]).all() else {
            return Ok(None);
        };
        for info in walk {
            let Ok(info) = info else { return Ok(None) };
            between.insert(info.id);
            if between.len() > MAX_ADVANCE {
                return Ok(None);
            }
        }
        let repo_path = self.repo_path(path);
        let mut differ = Differ::new(self, &repo_path, algorithm)?;
        let mut tracked = Tracked::new(super::line_count(&self.blob(blob)?));
        let (mut at, mut at_blob) = (head, blob);
        while at != old_head {
            if !between.contains(&at) {
                return Ok(None);
            }
            let commit = self.repo.find_commit(at).map_err(failed)?;
            let parents: Vec<ObjectId> = commit.parent_ids().map(|id| id.detach()).collect();
            let mut in_parents = Vec::with_capacity(parents.len());
            for parent in &parents {
                in_parents.push(self.blob_in(*parent, &repo_path)?);
            }
            // Unchanged from a parent: blame passes there whole (the first
            // such parent, as blame takes it).
            if let Some(same) = in_parents.iter().position(|b| *b == Some(at_blob)) {
                at = parents[same];
                continue;
            }
            let ([parent], [Some(parent_blob)]) = (parents.as_slice(), in_parents.as_slice())
            else {
                // A root commit, a merge that changed the file, or a file
                // added (maybe by a rename): blamed afresh.
                return Ok(None);
            };
            // A version taken for binary has no lines to map: blamed afresh.
            let Some(map) = differ.unchanged(*parent_blob, at_blob)? else {
                return Ok(None);
            };
            if tracked.step(&map, at) {
                break;
            }
            (at, at_blob) = (*parent, *parent_blob);
        }
        if !tracked.done() && ObjectId::from_hex(kept.blob.as_bytes()).ok() != Some(at_blob) {
            return Ok(None);
        }
        let Tracked { at_line, owned } = tracked;
        let mut owners = Vec::with_capacity(at_line.len());
        for (line, owner) in at_line.iter().zip(&owned) {
            owners.push(match (owner, line) {
                (Some(commit), _) => Owner {
                    commit: *commit,
                    source_path: None,
                },
                (None, Some(old)) => match old_owners.get(*old as usize) {
                    Some(found) => found.clone(),
                    None => return Ok(None),
                },
                (None, None) => return Ok(None),
            });
        }
        self.keep(path, head, blob, algorithm, &owners, &kept.commit_table())
            .map(Some)
    }

    /// Whether the blob `id` is over [`MAX_FILE_BYTES`], by its size
    /// looked up without reading it.
    pub(super) fn blob_too_large(&self, id: ObjectId) -> Result<bool, GitError> {
        let size = self.repo.find_header(id).map_err(failed)?.size();
        Ok(size > MAX_FILE_BYTES as u64)
    }

    /// The regular-file blob at `repo_path` in `commit`, if any.
    pub(super) fn blob_in(
        &self,
        commit: ObjectId,
        repo_path: &str,
    ) -> Result<Option<ObjectId>, GitError> {
        Ok(self
            .commit_tree(commit)?
            .lookup_entry_by_path(repo_path)
            .map_err(failed)?
            .filter(|entry| entry.mode().is_blob())
            .map(|entry| entry.object_id()))
    }

    /// The tree of `commit`.
    pub(super) fn commit_tree(&self, commit: ObjectId) -> Result<gix::Tree<'_>, GitError> {
        self.repo
            .find_commit(commit)
            .map_err(failed)?
            .tree()
            .map_err(failed)
    }

    /// A blame's source path as answers name it: root-relative, or
    /// absolute in the work tree when outside the root.
    pub(super) fn source_path(&self, repo_path: &str) -> String {
        match self.root_relative(repo_path) {
            Some(inside) => inside.to_string(),
            None => format!("/{repo_path}"),
        }
    }

    /// The kept blame of the lines `owners`, commits read from `known`
    /// or the repository.
    pub(super) fn keep(
        &self,
        path: &str,
        head: ObjectId,
        blob: ObjectId,
        algorithm: Algorithm,
        owners: &[Owner],
        known: &HashMap<ObjectId, Commit>,
    ) -> Result<KeptBlame, GitError> {
        let mut index: HashMap<ObjectId, u32> = HashMap::new();
        let mut commits = Vec::new();
        let mut runs: Vec<Run> = Vec::new();
        for (line, owner) in (1u32..).zip(owners) {
            let commit = match index.get(&owner.commit) {
                Some(&i) => i,
                None => {
                    let found = match known.get(&owner.commit) {
                        Some(found) => found.clone(),
                        None => {
                            Commit::read(&self.repo.find_commit(owner.commit).map_err(failed)?)?
                        }
                    };
                    let i = u32::try_from(commits.len()).unwrap_or(u32::MAX);
                    commits.push(found);
                    index.insert(owner.commit, i);
                    i
                }
            };
            match runs.last_mut() {
                Some(last) if last.commit == commit && last.source_path == owner.source_path => {
                    last.end = line
                }
                _ => runs.push(Run {
                    start: line,
                    end: line,
                    commit,
                    source_path: owner.source_path.clone(),
                }),
            }
        }
        Ok(KeptBlame {
            path: path.to_string(),
            head: head.to_string(),
            blob: blob.to_string(),
            algorithm: algorithm_name(algorithm),
            lines: u32::try_from(owners.len()).unwrap_or(u32::MAX),
            commits,
            runs,
        })
    }
}
