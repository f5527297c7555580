//! `git diff`: between two commits (renames found as git finds them), or
//! between a commit and the working tree (tracked files, as `git diff
//! REV` compares them), with per-file hunks and line counts.

use std::collections::BTreeSet;

use gix::ObjectId;
use gix::bstr::{BString, ByteSlice};
use gix::diff::blob::unified_diff::{ConsumeHunk, ContextSize, DiffLineKind, HunkHeader};
use gix::diff::blob::{Algorithm, InternedInput, UnifiedDiff, diff_with_slider_heuristics};
use gix::object::tree::diff::ChangeDetached;

use super::{GitError, Repo, args, failed, is_binary};

/// Files larger than this (either side) are listed, not diffed.
const MAX_DIFF_BYTES: usize = 4 << 20;
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
        let base_label = base.unwrap_or("HEAD").to_string();
        let base_commit = self.commit(&base_label)?;
        let base_tree = base_commit.tree().map_err(failed)?;
        let mut pairs: Vec<(Option<String>, Option<String>, Side, Side)> = Vec::new();
        let head_label = match head {
            Some(head) => {
                let head_tree = self.commit(head)?.tree().map_err(failed)?;
                let changes = self
                    .repo
                    .diff_tree_to_tree(&base_tree, &head_tree, None)
                    .map_err(failed)?;
                for change in changes {
                    if let Some(pair) = tree_pair(change)
                        && (pair.0.as_deref().is_some_and(inside)
                            || pair.1.as_deref().is_some_and(inside))
                    {
                        pairs.push(pair);
                    }
                }
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
        let mut paths = BTreeSet::new();
        if self.index_is(tree)? {
            // The index holds `tree` as it is: only the working tree can
            // differ, and comparing the whole tree with the index (every
            // tree object read) is skipped.
            for item in status
                .into_index_worktree_iter(Vec::<BString>::new())
                .map_err(failed)?
            {
                let item = item.map_err(failed)?;
                paths.insert(item.rela_path().to_str_lossy().into_owned());
            }
            return Ok(paths);
        }
        let status = status
            .tree_index_track_renames(gix::status::tree_index::TrackRenames::Disabled)
            .head_tree(tree)
            .into_iter(Vec::<BString>::new())
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

    /// The diff of one file; `None` when both sides are the same.
    fn file_diff(
        &self,
        old_path: Option<String>,
        new_path: Option<String>,
        old: Side,
        new: Side,
    ) -> Result<Option<FileDiff>, GitError> {
        let shown = |repo_path: &str| match self.root_relative(repo_path) {
            Some(inside) => inside.to_string(),
            // A rename from outside the root: say where from.
            None => format!("/{repo_path}"),
        };
        let (path, status) = match (&old_path, &new_path) {
            (Some(from), Some(to)) if from != to => {
                (shown(to), FileStatus::Renamed { from: shown(from) })
            }
            (Some(_), Some(to)) => (shown(to), FileStatus::Modified),
            (None, Some(to)) => (shown(to), FileStatus::Added),
            (Some(from), None) => (shown(from), FileStatus::Deleted),
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
        if args::readable(&file.path).is_err() {
            file.withheld = Some("may hold secrets");
            return Ok(Some(file));
        }
        let (before, after) = (self.content(&old)?, self.content(&new)?);
        if before == after {
            return Ok(match file.status {
                FileStatus::Renamed { .. } => Some(file),
                _ => None,
            });
        }
        if before.len().max(after.len()) > MAX_DIFF_BYTES {
            file.withheld = Some("too large to diff");
        } else if is_binary(&before) || is_binary(&after) {
            file.withheld = Some("binary");
        } else {
            diff_lines(&before, &after, &mut file)?;
        }
        Ok(Some(file))
    }

    fn content(&self, side: &Side) -> Result<Vec<u8>, GitError> {
        Ok(match side {
            Side::Absent => Vec::new(),
            Side::Blob(id) => self.repo.find_blob(*id).map_err(failed)?.detach().data,
            Side::Worktree(relative) => {
                let path = self.root.join(relative);
                match path.symlink_metadata() {
                    // A link's content is where it points, as git stores it.
                    Ok(meta) if meta.is_symlink() => std::fs::read_link(&path)
                        .map(|target| target.to_string_lossy().into_owned().into_bytes())
                        .map_err(|e| unreadable(relative, e))?,
                    // Only regular files are read: never a FIFO or a device.
                    Ok(meta) if meta.is_file() => {
                        std::fs::read(&path).map_err(|e| unreadable(relative, e))?
                    }
                    _ => Vec::new(),
                }
            }
        })
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
