//! `git diff`: between two commits (renames found as git finds them), or
//! between a commit and the working tree (tracked files, as `git diff
//! REV` compares them), with per-file hunks and line counts.

use std::collections::BTreeSet;
use std::path::Path;

use gix::ObjectId;
use gix::bstr::{BString, ByteSlice};
use gix::diff::blob::unified_diff::{ConsumeHunk, ContextSize, DiffLineKind, HunkHeader};
use gix::diff::blob::{Algorithm, InternedInput, UnifiedDiff, diff_with_slider_heuristics};
use gix::object::tree::diff::ChangeDetached;

use super::{GitError, MAX_FILE_BYTES, Repo, args, failed, is_binary};

/// Why a file's lines are not shown: it may hold secrets
/// (`discover::SENSITIVE`, by its path or the path it was renamed from).
/// It is still listed with its status, without counts or hunks, so that a
/// change to it is not hidden.
pub(crate) const WITHHELD_SENSITIVE: &str = "may hold secrets";
/// Lines of context around each change, as git shows by default.
const CONTEXT_LINES: u32 = 3;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum FileStatus {
    Added,
    Deleted,
    Modified,
    /// Moved from `from` (root-relative), maybe changed too.
    Renamed {
        from: String,
    },
}

/// One change without context: lines `old_start..old_start+old_lines`
/// became `new_start..new_start+new_lines` (1-based starts; a start with
/// 0 lines is the line before which lines were removed or added).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LineChange {
    pub old_start: u32,
    pub old_lines: u32,
    pub new_start: u32,
    pub new_lines: u32,
}

/// One hunk as `git diff` prints it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Hunk {
    /// `@@ -old,len +new,len @@`.
    pub header: String,
    /// The hunk's lines with their ` `, `+` or `-` marks, each ending in a newline.
    pub lines: String,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FileDiff {
    /// Root-relative (the new path of a rename).
    pub path: String,
    #[serde(flatten)]
    pub status: FileStatus,
    /// Why no lines are shown: binary content, a sensitive file, too large.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withheld: Option<&'static str>,
    pub insertions: u32,
    pub deletions: u32,
    #[serde(skip)]
    pub changes: Vec<LineChange>,
    pub hunks: Vec<Hunk>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Diff {
    /// What was compared: a revision as given, or `working tree`.
    pub base: String,
    pub head: String,
    /// By path.
    pub files: Vec<FileDiff>,
}

impl FileDiff {
    /// Whether its lines are withheld because it may hold secrets.
    pub fn is_sensitive(&self) -> bool {
        self.withheld == Some(WITHHELD_SENSITIVE)
    }
}

impl Diff {
    pub fn insertions(&self) -> u32 {
        self.files.iter().map(|f| f.insertions).sum()
    }

    pub fn deletions(&self) -> u32 {
        self.files.iter().map(|f| f.deletions).sum()
    }
}

/// Where one side of a file's content is.
enum Side {
    Absent,
    Blob(ObjectId),
    /// Root-relative path in the working tree.
    Worktree(String),
}

impl Repo {
    /// The diff from `base` (default HEAD) to `head` (default the working
    /// tree), of `path` (a file or directory; default the whole root).
    pub fn diff(
        &self,
        base: Option<&str>,
        head: Option<&str>,
        path: Option<&str>,
    ) -> Result<Diff, GitError> {
        let path = path.map(|p| args::path(&self.root, p)).transpose()?;
        let filter = match &path {
            Some(p) if !p.is_empty() => format!("{}{p}", self.prefix),
            _ => self.prefix.trim_end_matches('/').to_string(),
        };
        let inside = |repo_path: &str| {
            filter.is_empty()
                || repo_path == filter
                || repo_path
                    .strip_prefix(filter.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        };
        // Only the root's files: a rename from (or to) a path outside the
        // root is an addition (a deletion) here, so nothing of a file
        // outside the root is read.
        let in_root = |repo_path: &Option<String>| {
            repo_path
                .as_deref()
                .and_then(|p| self.root_relative(p))
                .map(str::to_string)
        };
        let base_label = base.unwrap_or("HEAD").to_string();
        let base_commit = self.commit(&base_label)?;
        let base_tree = base_commit.tree().map_err(failed)?;
        let mut pairs: Vec<(Option<String>, Option<String>, Side, Side)> = Vec::new();
        let head_label = match head {
            Some(head) => {
                let head_tree = self.commit(head)?.tree().map_err(failed)?;
                // Renames found as git finds them (its configuration), blobs
                // compared through xfile's cache (no drivers, huge blobs
                // taken for binary).
                let mut cache = self.resource_cache()?;
                base_tree
                    .changes()
                    .map_err(failed)?
                    .for_each_to_obtain_tree_with_cache(&head_tree, &mut cache, |change| {
                        if let Some(pair) = tree_pair(change.detach())
                            && (pair.0.as_deref().is_some_and(inside)
                                || pair.1.as_deref().is_some_and(inside))
                        {
                            pairs.push(pair);
                        }
                        Ok(std::ops::ControlFlow::Continue(()))
                    })
                    .map_err(failed)?;
                head.to_string()
            }
            None => {
                for repo_path in self.worktree_changes(base_tree.id)? {
                    if !inside(&repo_path) {
                        continue;
                    }
                    let old = match base_tree.lookup_entry_by_path(&repo_path).map_err(failed)? {
                        Some(entry) if entry.mode().is_blob_or_symlink() => {
                            Side::Blob(entry.object_id())
                        }
                        _ => Side::Absent,
                    };
                    let new = match self.root_relative(&repo_path) {
                        Some(relative) if self.root.join(relative).symlink_metadata().is_ok() => {
                            Side::Worktree(relative.to_string())
                        }
                        _ => Side::Absent,
                    };
                    let (old_path, new_path) = (
                        (!matches!(old, Side::Absent)).then(|| repo_path.clone()),
                        (!matches!(new, Side::Absent)).then(|| repo_path.clone()),
                    );
                    pairs.push((old_path, new_path, old, new));
                }
                "working tree".to_string()
            }
        };
        let mut files = Vec::new();
        for (old_path, new_path, old, new) in pairs {
            let (old_path, new_path) = (in_root(&old_path), in_root(&new_path));
            let old = if old_path.is_some() {
                old
            } else {
                Side::Absent
            };
            let new = if new_path.is_some() {
                new
            } else {
                Side::Absent
            };
            if let Some(file) = self.file_diff(old_path, new_path, old, new)? {
                files.push(file);
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Diff {
            base: base_label,
            head: head_label,
            files,
        })
    }

    /// The files of the root that git does not track (nor ignore), each
    /// as an addition: part of a change in progress that `diff` leaves
    /// out, as `git diff` does.
    pub fn untracked(&self) -> Result<Vec<FileDiff>, GitError> {
        let status = self
            .repo
            .status(gix::progress::Discard)
            .map_err(failed)?
            .untracked_files(gix::status::UntrackedFiles::Files)
            .index_worktree_submodules(None);
        let patterns: Vec<BString> = match self.prefix.trim_end_matches('/') {
            "" => Vec::new(),
            dir => vec![format!(":(top,literal){dir}").into()],
        };
        let mut files = Vec::new();
        for item in status.into_index_worktree_iter(patterns).map_err(failed)? {
            let item = item.map_err(failed)?;
            let gix::status::index_worktree::Item::DirectoryContents { entry, .. } = &item else {
                continue;
            };
            if !matches!(entry.status, gix::dir::entry::Status::Untracked) {
                continue;
            }
            let repo_path = entry.rela_path.to_str_lossy().into_owned();
            let Some(relative) = self.root_relative(&repo_path).map(str::to_string) else {
                continue;
            };
            let new = Side::Worktree(relative.clone());
            if let Some(file) = self.file_diff(None, Some(relative), Side::Absent, new)? {
                files.push(file);
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(files)
    }

    /// Work-tree paths whose index or working-tree state differs from
    /// `tree`: a superset of what differs between the tree and the
    /// working tree (a file changed and changed back is compared later).
    fn worktree_changes(&self, tree: ObjectId) -> Result<BTreeSet<String>, GitError> {
        let status = self
            .repo
            .status(gix::progress::Discard)
            .map_err(failed)?
            .untracked_files(gix::status::UntrackedFiles::None)
            .index_worktree_submodules(None);
        // Only the root's part of the work tree is looked at (and only its
        // files are read to compare them): as a pathspec from the top of
        // the work tree, taken literally.
        let patterns: Vec<BString> = match self.prefix.trim_end_matches('/') {
            "" => Vec::new(),
            dir => vec![format!(":(top,literal){dir}").into()],
        };
        let mut paths = BTreeSet::new();
        if self.index_is(tree)? {
            // The index holds `tree` as it is: only the working tree can
            // differ, and comparing the whole tree with the index (every
            // tree object read) is skipped.
            for item in status.into_index_worktree_iter(patterns).map_err(failed)? {
                let item = item.map_err(failed)?;
                paths.insert(item.rela_path().to_str_lossy().into_owned());
            }
            return Ok(paths);
        }
        let status = status
            .tree_index_track_renames(gix::status::tree_index::TrackRenames::Disabled)
            .head_tree(tree)
            .into_iter(patterns)
            .map_err(failed)?;
        for item in status {
            let item = item.map_err(failed)?;
            paths.insert(item.location().to_str_lossy().into_owned());
        }
        Ok(paths)
    }

    /// Whether the index's cache tree says that it holds `tree` exactly: its
    /// root entry is valid (git invalidates the entries along any path
    /// staged since the tree was written) and names `tree`.
    fn index_is(&self, tree: ObjectId) -> Result<bool, GitError> {
        let index = self.repo.index_or_empty().map_err(failed)?;
        Ok(index
            .tree()
            .is_some_and(|root| root.num_entries.is_some() && root.id == tree))
    }

    /// The diff of one file (paths root-relative); `None` when both sides
    /// are the same.
    fn file_diff(
        &self,
        old_path: Option<String>,
        new_path: Option<String>,
        old: Side,
        new: Side,
    ) -> Result<Option<FileDiff>, GitError> {
        let (path, status) = match (&old_path, &new_path) {
            (Some(from), Some(to)) if from != to => {
                (to.clone(), FileStatus::Renamed { from: from.clone() })
            }
            (Some(_), Some(to)) => (to.clone(), FileStatus::Modified),
            (None, Some(to)) => (to.clone(), FileStatus::Added),
            (Some(from), None) => (from.clone(), FileStatus::Deleted),
            (None, None) => return Ok(None),
        };
        let mut file = FileDiff {
            path,
            status,
            withheld: None,
            insertions: 0,
            deletions: 0,
            changes: Vec::new(),
            hunks: Vec::new(),
        };
        // Either name: a secret renamed to an innocent name is still one.
        if [&old_path, &new_path]
            .into_iter()
            .flatten()
            .any(|p| args::readable(p).is_err())
        {
            file.withheld = Some(WITHHELD_SENSITIVE);
            return Ok(Some(file));
        }
        let (before, after) = match (self.content(&old)?, self.content(&new)?) {
            (Ok(before), Ok(after)) => (before, after),
            (Err(why), _) | (_, Err(why)) => {
                file.withheld = Some(why);
                return Ok(Some(file));
            }
        };
        if before == after {
            return Ok(match file.status {
                FileStatus::Renamed { .. } => Some(file),
                _ => None,
            });
        }
        if is_binary(&before) || is_binary(&after) {
            file.withheld = Some("binary");
        } else {
            diff_lines(&before, &after, &mut file)?;
        }
        Ok(Some(file))
    }

    /// One side's content, or why it is not read: larger than
    /// [`MAX_FILE_BYTES`] (a blob's size is looked up before it is
    /// read), or reached through a link out of the root.
    fn content(&self, side: &Side) -> Result<Result<Vec<u8>, &'static str>, GitError> {
        const TOO_LARGE: &str = "too large to diff";
        Ok(Ok(match side {
            Side::Absent => Vec::new(),
            Side::Blob(id) => {
                let size = self.repo.find_header(*id).map_err(failed)?.size();
                if size > MAX_FILE_BYTES as u64 {
                    return Ok(Err(TOO_LARGE));
                }
                self.repo.find_blob(*id).map_err(failed)?.detach().data
            }
            Side::Worktree(relative) => {
                use xfile_workspace::read::{self, Refusal};
                let path = self.root.join(relative);
                // The directories on the way stay inside the root, and the
                // file they lead to is not a secret under another name
                // (`cfg/config` with `cfg` a link to `.aws`).
                let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
                    return Ok(Ok(Vec::new()));
                };
                let Ok(parent) = parent.canonicalize() else {
                    // Gone since the status saw it.
                    return Ok(Ok(Vec::new()));
                };
                let Ok(inside) = parent
                    .join(name)
                    .strip_prefix(&self.root)
                    .map(Path::to_path_buf)
                else {
                    return Ok(Err("outside the project root (through a symlink)"));
                };
                if xfile_workspace::discover::is_sensitive(&inside) {
                    return Ok(Err(WITHHELD_SENSITIVE));
                }
                match path.symlink_metadata() {
                    // A link's content is where it points, as git stores it.
                    Ok(meta) if meta.is_symlink() => std::fs::read_link(&path)
                        .map(|target| target.to_string_lossy().into_owned().into_bytes())
                        .map_err(|e| unreadable(relative, e))?,
                    // Only regular files are read, never through a link
                    // swapped in meanwhile: never a FIFO or a device.
                    Ok(meta) if meta.is_file() => {
                        let read = read::open_regular(&path, false).and_then(|(file, meta)| {
                            read::read_bounded(file, &meta, MAX_FILE_BYTES as u64)
                        });
                        match read {
                            Ok(bytes) => bytes,
                            Err(Refusal::TooBig(..)) => return Ok(Err(TOO_LARGE)),
                            Err(Refusal::Io(error)) => return Err(unreadable(relative, error)),
                            // Swapped for something else since: not a file now.
                            Err(_) => Vec::new(),
                        }
                    }
                    _ => Vec::new(),
                }
            }
        }))
    }
}

/// A working-tree file that cannot be read: a wrong diff would be worse.
fn unreadable(relative: &str, error: std::io::Error) -> GitError {
    failed(format!(
        "cannot read {relative} ({error}); check its permissions"
    ))
}

/// A tree-to-tree change as (old path, new path, old side, new side);
/// `None` for directories and submodules.
fn tree_pair(change: ChangeDetached) -> Option<(Option<String>, Option<String>, Side, Side)> {
    let text = |b: &BString| b.to_str_lossy().into_owned();
    match change {
        ChangeDetached::Addition {
            location,
            entry_mode,
            id,
            ..
        } if entry_mode.is_blob_or_symlink() => {
            Some((None, Some(text(&location)), Side::Absent, Side::Blob(id)))
        }
        ChangeDetached::Deletion {
            location,
            entry_mode,
            id,
            ..
        } if entry_mode.is_blob_or_symlink() => {
            Some((Some(text(&location)), None, Side::Blob(id), Side::Absent))
        }
        ChangeDetached::Modification {
            location,
            previous_id,
            id,
            entry_mode,
            ..
        } if entry_mode.is_blob_or_symlink() => Some((
            Some(text(&location)),
            Some(text(&location)),
            Side::Blob(previous_id),
            Side::Blob(id),
        )),
        ChangeDetached::Rewrite {
            source_location,
            source_id,
            location,
            id,
            entry_mode,
            copy: false,
            ..
        } if entry_mode.is_blob_or_symlink() => Some((
            Some(text(&source_location)),
            Some(text(&location)),
            Side::Blob(source_id),
            Side::Blob(id),
        )),
        ChangeDetached::Rewrite {
            location,
            id,
            entry_mode,
            ..
        } if entry_mode.is_blob_or_symlink() => {
            Some((None, Some(text(&location)), Side::Absent, Side::Blob(id)))
        }
        _ => None,
    }
}

/// Fills in `file`'s counts, changes and hunks.
fn diff_lines(before: &[u8], after: &[u8], file: &mut FileDiff) -> Result<(), GitError> {
    use gix::diff::blob::sources::byte_lines;
    let input = InternedInput::new(byte_lines(before), byte_lines(after));
    let diff = diff_with_slider_heuristics(Algorithm::Histogram, &input);
    file.insertions = diff.count_additions();
    file.deletions = diff.count_removals();
    file.changes = diff
        .hunks()
        .map(|hunk| LineChange {
            old_start: hunk.before.start + u32::from(!hunk.before.is_empty()),
            old_lines: hunk.before.end - hunk.before.start,
            new_start: hunk.after.start + u32::from(!hunk.after.is_empty()),
            new_lines: hunk.after.end - hunk.after.start,
        })
        .collect();
    file.hunks = UnifiedDiff::new(
        &diff,
        &input,
        Hunks::default(),
        ContextSize::symmetrical(CONTEXT_LINES),
    )
    .consume()
    .map_err(failed)?;
    Ok(())
}

/// Collects the unified diff's hunks.
#[derive(Default)]
struct Hunks(Vec<Hunk>);

impl ConsumeHunk for Hunks {
    type Out = Vec<Hunk>;

    fn consume_hunk(
        &mut self,
        header: HunkHeader,
        lines: &[(DiffLineKind, &[u8])],
    ) -> std::io::Result<()> {
        let mut text = String::new();
        for (kind, line) in lines {
            text.push(match kind {
                DiffLineKind::Context => ' ',
                DiffLineKind::Add => '+',
                DiffLineKind::Remove => '-',
            });
            let line = line.to_str_lossy();
            text.push_str(line.trim_end_matches(['\n', '\r']));
            text.push('\n');
        }
        self.0.push(Hunk {
            header: header.to_string(),
            lines: text,
        });
        Ok(())
    }

    fn finish(self) -> Self::Out {
        self.0
    }
}
