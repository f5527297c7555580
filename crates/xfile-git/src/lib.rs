//! Git history of the project, in process through gix: commit logs, blame
//! and diffs as typed values. No user input ever reaches a command line;
//! revisions and paths are still checked strictly (`args`), so that what
//! is asked is what git would take as a name, and no path leaves the root.
//!
//! This layer knows nothing of MCP, the CLI or the index: the service
//! renders its answers. One entry point: [`Repo`].

// What other crates can reach is declared `pub`; everything else says
// `pub(crate)`, so a signature tells a reader whether it is the API.
#![warn(unreachable_pub)]

mod args;
mod blame;
mod diff;
mod log;
mod recency;

use std::path::{Path, PathBuf};

use gix::bstr::ByteSlice;

pub use blame::{
    Blame, BlameCache, BlameRange, BlameStore, HistoryIndex, IndexBounds, KeptBlame,
    MAX_INDEX_COMMITS, Run as KeptRun,
};
pub use diff::{Diff, FileDiff, FileStatus, Hunk, LineChange};
pub use gix::ObjectId;
pub use log::{DEFAULT_LIMIT as DEFAULT_LOG_LIMIT, Log, LogQuery, MAX_LIMIT as MAX_LOG_LIMIT};
pub use recency::{ChangeTimes, WalkBounds};

/// A failure a user can act on; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error(
        "Not a git repository: {0} is not inside a git work tree; run `git init` there, or serve a root inside a repository"
    )]
    NotARepository(PathBuf),
    #[error("the repository has no commits yet; commit once, then ask again")]
    NoCommits,
    #[error(
        "`{0}` is not a revision xfile accepts: give a branch or tag name, HEAD or a commit hash, optionally followed by ~N or ^N"
    )]
    InvalidRevision(String),
    #[error(
        "`{0}` names no commit in this repository; check the spelling (git_log lists recent commits)"
    )]
    UnknownRevision(String),
    #[error("`{0}` is not a path xfile accepts: {1}")]
    InvalidPath(String, &'static str),
    #[error("{0} is outside the project root {1}; give a path inside the root")]
    OutsideRoot(String, PathBuf),
    #[error("{0} has {1} lines; ask for lines between 1 and {1}")]
    PastEnd(String, u32),
    #[error("{0} is not a file in the working tree; give the path of an existing file")]
    NotAFile(String),
    #[error("{0} may hold secrets and is never read")]
    Sensitive(String),
    #[error(
        "`{0}` is not a date: give one as 2024-05-01, 2024-05-01 12:00:00 +0200, `2 weeks ago` or a unix time @1714521600"
    )]
    InvalidDate(String),
    #[error(
        "{0} is {1} bytes, over the {2}-byte limit of the git tools (as for git diff); blame a smaller file, or run `git blame -L` on it yourself"
    )]
    TooLarge(String, u64, usize),
    #[error(
        "this root's git repository reaches outside it ({0}); xfile reads git only inside the root: {1}"
    )]
    OutsideGit(String, String),
    #[error("git failed: {0}; check the repository with `git status`")]
    Git(String),
}

impl GitError {
    /// A stable code for adapters.
    pub fn code(&self) -> &'static str {
        match self {
            GitError::NotARepository(_) => "not_a_git_repository",
            GitError::NoCommits => "no_commits",
            GitError::InvalidRevision(_) => "invalid_revision",
            GitError::UnknownRevision(_) => "unknown_revision",
            GitError::InvalidPath(..) | GitError::PastEnd(..) => "invalid_parameter",
            GitError::OutsideRoot(..) => "outside_root",
            GitError::NotAFile(_) => "file_not_found",
            GitError::Sensitive(_) => "sensitive_file",
            GitError::InvalidDate(_) => "invalid_parameter",
            GitError::TooLarge(..) => "file_too_large",
            GitError::OutsideGit(..) => "git_outside_root",
            GitError::Git(_) => "git_error",
        }
    }
}

/// Any gix failure that no user input explains (a corrupt object, an
/// unreadable pack): reported as it is.
fn failed(error: impl std::fmt::Display) -> GitError {
    GitError::Git(error.to_string())
}

/// Files larger than this (a side of a diff, a file blamed, any version a
/// blame walks) are not compared line by line: a diff lists them, a blame
/// refuses them, and a blame walk takes an older version this large for
/// binary (its lines are given to the commit after it).
pub const MAX_FILE_BYTES: usize = 4 << 20;

/// Git's test for binary content: a NUL byte in the first 8,000 bytes.
fn is_binary(content: &[u8]) -> bool {
    content[..content.len().min(8_000)].contains(&0)
}

/// What HEAD is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "name")]
pub enum HeadState {
    /// On a branch (its short name).
    Branch(String),
    /// Detached at a commit (its short hash).
    Detached(String),
    /// On a branch with no commits yet.
    Unborn(String),
}

/// One commit as answers show it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Commit {
    /// Full hexadecimal id.
    pub id: String,
    pub author: String,
    pub email: String,
    /// Author date, `YYYY-MM-DD HH:MM:SS +zzzz` in the author's zone.
    pub date: String,
    /// The first line of the message.
    pub summary: String,
    /// More than one parent: a merge.
    pub merge: bool,
}

impl Commit {
    /// The id cut to the 10 digits answers show.
    pub fn short_id(&self) -> &str {
        self.id.get(..10).unwrap_or(&self.id)
    }

    fn read(commit: &gix::Commit<'_>) -> Result<Commit, GitError> {
        let author = commit.author().map_err(failed)?;
        let time = author.time().map_err(failed)?;
        let message = commit.message_raw_sloppy();
        let summary = message
            .lines()
            .map(|line| line.trim())
            .find(|line| !line.is_empty())
            .unwrap_or_default();
        Ok(Commit {
            id: commit.id.to_string(),
            author: author.name.to_str_lossy().into_owned(),
            email: author.email.to_str_lossy().into_owned(),
            date: time.format_or_unix(gix::date::time::format::ISO8601),
            summary: summary.to_str_lossy().into_owned(),
            merge: commit.parent_ids().nth(1).is_some(),
        })
    }
}

/// The repository that holds a project root, with the root's place in
/// its work tree: every path in and out is root-relative.
pub struct Repo {
    repo: gix::Repository,
    /// The project root, canonical.
    root: PathBuf,
    /// The root relative to the work tree: "" or `dir/sub/`.
    prefix: String,
}

/// A repository opened once (see [`Repo::share`]).
pub struct SharedRepo {
    repo: gix::ThreadSafeRepository,
    root: PathBuf,
    prefix: String,
}

impl SharedRepo {
    pub fn local(&self) -> Repo {
        let mut repo = self.repo.to_thread_local();
        caches(&mut repo);
        Repo {
            repo,
            root: self.root.clone(),
            prefix: self.prefix.clone(),
        }
    }
}

/// The object cache of each repository handle.
const OBJECT_CACHE_BYTES: usize = 8 << 20;
/// The cache of resolved delta bases of each handle: a blame walk reads a
/// file's versions newest first, and in a packed repository each older
/// one is a delta against a newer one, so resolving it from a cached base
/// is one delta instead of the whole chain.
const PACK_CACHE_BYTES: usize = 16 << 20;

/// A handle's caches. Blame, logs of a path and the recency walk read the
/// same trees over and over.
fn caches(repo: &mut gix::Repository) {
    repo.object_cache_size_if_unset(OBJECT_CACHE_BYTES);
    repo.objects.set_pack_cache(|| {
        Box::new(gix::odb::pack::cache::lru::MemoryCappedHashmap::new(
            PACK_CACHE_BYTES,
        ))
    });
}

/// How every repository is opened (nothing a
/// repository or its configuration names is ever run): gix's defaults for
/// the repository's trust, but never the git binary's own configuration
/// (finding it runs `git`), and `core.fsmonitor` off (gix does not run it;
/// should it learn to, this keeps it off). The filter and diff drivers are
/// taken out after opening ([`run_nothing`]).
fn open_options() -> gix::sec::trust::Mapping<gix::open::Options> {
    let mut map = gix::sec::trust::Mapping::<gix::open::Options>::default();
    for options in [&mut map.full, &mut map.reduced] {
        options.permissions.config.git_binary = false;
        options.permissions.attributes.git_binary = false;
        options.modify(|o| o.config_overrides(["core.fsmonitor=false"]));
    }
    map
}

/// Takes every program a configuration names for reading files out of
/// `repo`'s configuration, from every source (the repository's, the
/// user's, the system's): the filter drivers (`filter.<name>.clean`,
/// `smudge`, `process`) that gix's filter pipeline would start for a file
/// whose attributes name them (in status, diff and blame alike), and the
/// diff drivers (`diff.<name>.textconv`, `command`). Without a driver, an
/// attribute naming one does nothing, as in git for an undefined driver;
/// files are read raw (end-of-line conversion, built in, still applies).
/// Then checks that gix's filter pipeline for `repo` has no driver left: a
/// gix that found drivers elsewhere would be refused, not run.
fn run_nothing(repo: &mut gix::Repository) -> Result<(), GitError> {
    let drivers: Vec<_> = repo
        .config_snapshot()
        .plumbing()
        .sections_and_ids()
        .filter(|(section, _)| {
            let header = section.header();
            let named = header.subsection_name().is_some_and(|n| !n.is_empty());
            let name = header.name();
            name.eq_ignore_ascii_case(b"filter")
                || (named
                    && (name.eq_ignore_ascii_case(b"diff") || name.eq_ignore_ascii_case(b"merge")))
        })
        .map(|(_, id)| id)
        .collect();
    if !drivers.is_empty() {
        let mut config = repo.config_snapshot_mut();
        for id in drivers {
            config.remove_section_by_id(id);
        }
        config.commit().map_err(failed)?;
    }
    let left = gix::filter::Pipeline::options(repo)
        .map_err(failed)?
        .drivers;
    if !left.is_empty() {
        return Err(failed(
            "the repository's configuration names filter programs that xfile could not switch off",
        ));
    }
    Ok(())
}

/// The nearest of `root` and its ancestors that holds a `.git` entry: where
/// git's discovery found the repository.
fn dot_git_holder(root: &Path) -> Option<&Path> {
    root.ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
}

/// Why the repository `repo`, found through the `.git` entry of `holder`
/// (canonical), may not be read, as (what, what to do); `None` when it
/// may. It may when its work tree is `holder` and its git directory is
/// `holder`'s own: inside it (sharing no other repository's through a
/// `commondir` file), or elsewhere but naming `holder` as its work tree (a
/// linked worktree's `gitdir` file; a submodule's or a separate git
/// directory's `core.worktree`). Anything else would show another
/// repository's files as the root's, or read files outside the root.
fn foreign_layout(repo: &gix::Repository, holder: &Path) -> Option<(String, String)> {
    let dot_git = holder.join(".git");
    let shown = holder.display();
    let workdir = repo.workdir().and_then(|dir| dir.canonicalize().ok());
    if workdir.as_deref() != Some(holder) {
        let at = workdir.map_or("nowhere".to_string(), |w| w.display().to_string());
        return Some((
            format!(
                "its core.worktree puts the work tree at {at}, not at {shown}, which holds .git"
            ),
            "serve the root the work tree is at, or unset core.worktree (git config --unset core.worktree)"
                .to_string(),
        ));
    }
    let (Ok(meta), Ok(git_dir), Ok(common_dir)) = (
        dot_git.symlink_metadata(),
        repo.git_dir().canonicalize(),
        repo.common_dir().canonicalize(),
    ) else {
        return Some((
            format!("{} cannot be resolved", dot_git.display()),
            "check the repository with `git status`".to_string(),
        ));
    };
    // Its own: the git directory in the work tree, sharing nothing else.
    let own = |dir: &Path| dir.starts_with(holder);
    if own(&git_dir) && (common_dir == git_dir || own(&common_dir)) {
        return None;
    }
    // A linked worktree: its git directory names the `.git` file back.
    let named_back = meta.is_file()
        && small_file(&git_dir.join("gitdir")).is_some_and(|line| {
            git_dir
                .join(line.trim_end_matches(['\n', '\r']))
                .canonicalize()
                .is_ok_and(|target| target == dot_git)
        });
    // A submodule or a separate git directory: its own configuration sets
    // core.worktree (which gix took for the work tree, checked above).
    let config = repo.config_snapshot();
    let sets_worktree = common_dir == git_dir
        && config
            .plumbing()
            .sections_by_name("core")
            .into_iter()
            .flatten()
            .any(|section| {
                section.value("worktree").is_some()
                    && section
                        .meta()
                        .path
                        .as_deref()
                        .is_some_and(|path| path.starts_with(repo.git_dir()))
            });
    if named_back || sets_worktree {
        return None;
    }
    let written = if meta.is_dir() {
        "a git directory that shares another repository's (its commondir file)".to_string()
    } else if meta.is_symlink() {
        std::fs::read_link(&dot_git)
            .map(|target| format!("a link to {}", target.display()))
            .unwrap_or_else(|_| "a link".to_string())
    } else {
        gitdir_line(&dot_git).unwrap_or_else(|| "a gitdir: file".to_string())
    };
    Some((
        format!(
            "{} is {written}, outside {shown}, which does not name it as its work tree",
            dot_git.display()
        ),
        format!(
            "a linked worktree or a submodule is read (its git directory names its work tree); for a git directory of this root's own kept elsewhere (git init --separate-git-dir), name the root as its work tree: git config core.worktree {shown}"
        ),
    ))
}

/// The `gitdir: ...` line of a `.git` file, as written.
fn gitdir_line(dot_git: &Path) -> Option<String> {
    let text = small_file(dot_git)?;
    Some(format!("`{}`", text.lines().next()?.trim()))
}

/// The text of a small regular file of git's (a `.git` file, a linked
/// worktree's `gitdir`: one path each), never a FIFO or a device, never
/// through a link; `None` when it is not one.
fn small_file(path: &Path) -> Option<String> {
    use xfile_workspace::read;
    let (file, meta) = read::open_regular(path, false).ok()?;
    let bytes = read::read_bounded(file, &meta, 4096).ok()?;
    String::from_utf8(bytes).ok()
}

impl Repo {
    /// The repository whose work tree holds `root` (a canonical
    /// directory), found as git finds it: in `root` or an ancestor. The
    /// one place a repository is opened: it runs nothing ([`run_nothing`])
    /// and reads nothing outside its work tree ([`foreign_layout`]).
    pub fn open(root: &Path) -> Result<Repo, GitError> {
        let not_a_repository = || GitError::NotARepository(root.to_path_buf());
        let mut repo =
            gix::ThreadSafeRepository::discover_opts(root, Default::default(), open_options())
                .map_err(|_| not_a_repository())?
                .to_thread_local();
        let holder = dot_git_holder(root).ok_or_else(not_a_repository)?;
        if let Some((what, todo)) = foreign_layout(&repo, holder) {
            return Err(GitError::OutsideGit(what, todo));
        }
        run_nothing(&mut repo)?;
        caches(&mut repo);
        let prefix = match root.strip_prefix(holder) {
            Ok(inside) if inside.as_os_str().is_empty() => String::new(),
            Ok(inside) => format!("{}/", inside.to_string_lossy().replace('\\', "/")),
            Err(_) => return Err(not_a_repository()),
        };
        Ok(Repo {
            repo,
            root: root.to_path_buf(),
            prefix,
        })
    }

    /// The repository as a handle threads share: opened once, a
    /// [`Repo`] per use without discovering it again.
    pub fn share(self) -> SharedRepo {
        SharedRepo {
            repo: self.repo.into_sync(),
            root: self.root,
            prefix: self.prefix,
        }
    }

    pub fn head_state(&self) -> Result<HeadState, GitError> {
        let head = self.repo.head().map_err(failed)?;
        let branch = || {
            head.referent_name()
                .map(|name| name.shorten().to_str_lossy().into_owned())
                .unwrap_or_default()
        };
        Ok(match &head.kind {
            gix::head::Kind::Unborn(_) => HeadState::Unborn(branch()),
            gix::head::Kind::Detached { target, .. } => {
                HeadState::Detached(target.to_hex_with_len(10).to_string())
            }
            gix::head::Kind::Symbolic(_) => HeadState::Branch(branch()),
        })
    }

    /// Whether the history is cut short (a shallow clone); an unreadable
    /// shallow file counts as a cut.
    pub fn is_shallow(&self) -> bool {
        self.repo.is_shallow().unwrap_or(true)
    }

    /// The commit `revision` names, after the strict check.
    fn commit(&self, revision: &str) -> Result<gix::Commit<'_>, GitError> {
        let revision = args::revision(revision)?;
        if revision == "HEAD" {
            return self.head_commit();
        }
        self.repo
            .rev_parse_single(revision)
            .ok()
            .and_then(|id| id.object().ok())
            .and_then(|object| object.peel_to_commit().ok())
            .ok_or_else(|| GitError::UnknownRevision(revision.to_string()))
    }

    fn head_commit(&self) -> Result<gix::Commit<'_>, GitError> {
        let mut head = self.repo.head().map_err(failed)?;
        if head.is_unborn() {
            return Err(GitError::NoCommits);
        }
        head.peel_to_commit().map_err(failed)
    }

    /// The content of `path` (inside the root) at `revision`; `None` when
    /// no file is there.
    pub fn file_at(&self, revision: &str, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        self.blob_at(revision, path)?
            .map(|id| self.blob(id))
            .transpose()
    }

    /// The blob `path` (inside the root) names at `revision`; `None` when
    /// no file is there.
    pub fn blob_at(&self, revision: &str, path: &str) -> Result<Option<ObjectId>, GitError> {
        let relative = args::path(&self.root, path)?;
        args::readable(&relative)?;
        let tree = self.commit(revision)?.tree().map_err(failed)?;
        let Some(entry) = tree
            .lookup_entry_by_path(self.repo_path(&relative))
            .map_err(failed)?
        else {
            return Ok(None);
        };
        Ok(entry.mode().is_blob().then(|| entry.object_id()))
    }

    /// The content of the blob `id` (from [`Repo::blob_at`]).
    pub fn blob(&self, id: ObjectId) -> Result<Vec<u8>, GitError> {
        Ok(self.repo.find_blob(id).map_err(failed)?.detach().data)
    }

    /// The blob cache of every diff of blobs gix makes for xfile (tree
    /// diffs, blame walks): no filter or diff driver (as the repository's
    /// configuration is, see [`run_nothing`]; cleared here again), and a
    /// version over [`MAX_FILE_BYTES`] taken for binary, its size looked
    /// up before it is read, so that no walk diffs a huge file line by
    /// line.
    pub fn resource_cache(&self) -> Result<gix::diff::blob::Platform, GitError> {
        let mut cache = self
            .repo
            .diff_resource_cache_for_tree_diff()
            .map_err(failed)?;
        cache.filter.worktree_filter.options_mut().drivers.clear();
        cache.filter.options.large_file_threshold_bytes = MAX_FILE_BYTES as u64;
        Ok(cache)
    }

    /// A root-relative path of the user's, checked, as the work tree
    /// names it.
    fn repo_path(&self, relative: &str) -> String {
        format!("{}{relative}", self.prefix)
    }

    /// A work-tree path back to root-relative; `None` outside the root.
    fn root_relative<'a>(&self, repo_path: &'a str) -> Option<&'a str> {
        repo_path.strip_prefix(self.prefix.as_str())
    }
}
