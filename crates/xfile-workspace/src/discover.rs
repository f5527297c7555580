//! Finding and reading the project's Python files: `.gitignore`/`.ignore`
//! honoured, environment and build directories and sensitive files always
//! skipped, files too long skipped with a notice, text that is not UTF-8
//! read as latin-1, symlinks followed only while they stay inside the root.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Serialize;

use super::read::{self, Links, Refusal};

/// Tool directories never descended into, whatever the ignore files say,
/// and without a notice: they hold version control data, caches and test
/// environments, never a project's sources, and a notice for each would
/// only bury the ones that matter. (`.venv` is the usual name of a
/// project's virtual environment.)
pub const QUIET_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    ".venv",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    "__pycache__",
];

/// What makes a directory a Python environment (skipped with a notice,
/// whatever its name): `pyvenv.cfg` (venv, virtualenv, uv) or `conda-meta`
/// (a conda environment created inside the project).
pub const ENV_MARKERS: &[&str] = &["pyvenv.cfg", "conda-meta"];

/// Build output, skipped with a notice where a build puts it: directly in
/// the root or in a sub-project's directory, and only when it is not a
/// package (no `__init__.py`). Anywhere else a directory of that name is
/// the project's own (`pkg/build/`).
pub const BUILD_DIRS: &[&str] = &["build", "dist"];

/// Installed packages (JavaScript's, or Python's outside an environment),
/// skipped with a notice wherever they are.
pub const PACKAGE_DIRS: &[&str] = &["node_modules", "site-packages"];

/// Files that may hold secrets: never read, never served, never
/// shown by a git answer. The one list every reader asks, through
/// [`is_sensitive`]: globs on a root-relative path, each matching in any
/// directory (`name` is a file `name` anywhere, `dir/name` a file `name`
/// in any directory `dir`, `dir/**` everything under one), without regard
/// to case (`.ENV` is `.env`).
pub const SENSITIVE: &[&str] = &[
    // Environment files.
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    // Tokens of package registries and tools.
    ".pypirc",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".netrc",
    "_netrc",
    ".git-credentials",
    ".htpasswd",
    ".pgpass",
    ".my.cnf",
    // Cloud and cluster credentials: AWS (`.aws/credentials`), gcloud
    // (`credentials.db`, `application_default_credentials.json`), any
    // `*credentials*` file, Azure's tokens, Docker's and Kubernetes' logins.
    "*credentials*",
    ".aws/**",
    ".azure/**",
    "gcloud/*.db",
    "gcloud/legacy_credentials/**",
    ".docker/config.json",
    ".kube/config",
    // Private keys and key stores.
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.ppk",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".ssh/**",
    ".gnupg/**",
];

/// Files that make their directory a sub-project with its own module
/// search roots (packaging metadata: it is installed on its own).
pub const SUB_PROJECT_MARKERS: &[&str] = &["pyproject.toml", "setup.py", "setup.cfg"];

/// xfile's own log directory under the root: never indexed, never noticed.
pub const LOG_DIR: &str = ".cross_file_context_logs";
/// xfile's own warm-start cache under the root: the same.
pub const CACHE_DIR: &str = ".xfile_cache";

/// Files longer than this are skipped, with a notice.
pub const MAX_LINES: usize = 10_000;

/// A file that was indexed with a caveat, or not indexed, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Notice {
    pub path: String,
    pub kind: NoticeKind,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeKind {
    /// Not valid UTF-8: decoded as latin-1.
    Latin1Fallback,
    TooLarge,
    Binary,
    Unreadable,
    SymlinkOutsideRoot,
    Config,
    /// A hidden file or directory (name starting with `.`).
    Hidden,
    /// A symlink whose target does not exist.
    Dangling,
    SymlinkLoop,
    /// A FIFO, socket or device: never opened.
    NotRegular,
    /// A file that may hold secrets, by its name or its link target's.
    Sensitive,
    /// A name that is not valid UTF-8.
    NonUtf8Name,
    /// A directory of tools, not of the project: a virtual environment,
    /// build output, installed packages.
    ToolDirectory,
    /// Search roots read from packaging metadata and test settings.
    PackageRoots,
}

pub struct SourceText {
    pub path: String,
    pub text: String,
    /// The file's metadata just before it was read.
    pub stamp: Stamp,
}

/// Modification time and length: a cheap check that a file on disk is still
/// the one that was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub modified: Option<std::time::SystemTime>,
    pub len: u64,
}

impl Stamp {
    pub fn of(metadata: &std::fs::Metadata) -> Stamp {
        Stamp {
            modified: metadata.modified().ok(),
            len: metadata.len(),
        }
    }

    /// The stamp of the file at `path` now, `None` if it is gone.
    pub fn read(path: &Path) -> Option<Stamp> {
        std::fs::metadata(path).ok().map(|m| Stamp::of(&m))
    }
}

pub struct Discovery {
    pub files: Vec<SourceText>,
    pub notices: Vec<Notice>,
    /// Every directory the walk entered, and every one it skipped for what
    /// it holds (an environment, build output: see [`guarded`]), absolute:
    /// what a watcher watches, and whose stamps the warm-start answers
    /// compare.
    pub dirs: Vec<std::path::PathBuf>,
    /// Sub-project marker files below the root (not the root's own),
    /// root-relative, sorted.
    pub markers: Vec<String>,
}

/// The sub-project directories that `markers` (marker file paths) make.
pub fn sub_project_dirs<'a>(markers: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut dirs: Vec<String> = markers
        .into_iter()
        .filter_map(|marker| marker.rsplit_once('/').map(|(dir, _)| dir.to_string()))
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Whether the file at `path` may hold secrets ([`SENSITIVE`]): `path` is
/// root-relative (a bare file name is judged by its name alone), so that
/// the directories above the root never count.
pub fn is_sensitive(path: impl AsRef<Path>) -> bool {
    sensitive_set().is_match(path.as_ref())
}

fn sensitive_set() -> &'static GlobSet {
    static SET: std::sync::OnceLock<GlobSet> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        let mut builder = GlobSetBuilder::new();
        for pattern in SENSITIVE {
            // Every pattern compiles (a unit test says so).
            if let Ok(glob) = sensitive_glob(pattern) {
                builder.add(glob);
            }
        }
        builder.build().unwrap_or_else(|_| GlobSet::empty())
    })
}

/// One [`SENSITIVE`] pattern as a glob on root-relative paths: in any
/// directory, `*` within one name, any case.
fn sensitive_glob(pattern: &str) -> Result<Glob, globset::Error> {
    globset::GlobBuilder::new(&format!("**/{pattern}"))
        .case_insensitive(true)
        .literal_separator(true)
        .build()
}

/// Walks `root` (which must be canonical) and reads every Python file, in
/// parallel. `ignore_patterns` are extra globs on root-relative paths.
pub fn discover(root: &Path, ignore_patterns: &[String]) -> Discovery {
    walk(root, ignore_patterns, None)
}

/// [`discover`] restricted to `scope` (absolute paths under `root`): files
/// and directories at or under a scope path, reached through the same walk,
/// so the same ignore files and skip rules decide. This is how a change
/// seen by the watcher is re-read.
pub fn discover_within(root: &Path, ignore_patterns: &[String], scope: &[PathBuf]) -> Discovery {
    walk(root, ignore_patterns, Some(scope))
}

fn walk(root: &Path, ignore_patterns: &[String], scope: Option<&[PathBuf]>) -> Discovery {
    let mut notices = Vec::new();
    let mut extra = GlobSetBuilder::new();
    for pattern in ignore_patterns {
        match Glob::new(pattern) {
            Ok(glob) => {
                extra.add(glob);
            }
            Err(error) => notices.push(Notice {
                path: pattern.clone(),
                kind: NoticeKind::Config,
                message: format!(
                    "ignore pattern `{pattern}` is not a valid glob ({error}); ignored"
                ),
            }),
        }
    }
    let extra = extra.build().unwrap_or_else(|_| GlobSet::empty());

    let found = std::sync::Mutex::new((Vec::new(), Vec::new(), Vec::new(), Vec::new()));
    // Entries the walk filter turns away: their notices, and the
    // directories skipped for what they hold.
    let skipped = std::sync::Arc::new(std::sync::Mutex::new((Vec::new(), Vec::new())));
    // Linked directories the walk entered: files below one are resolved
    // before they are read, the others are their own targets.
    let linked = std::sync::Arc::new(std::sync::RwLock::new(Vec::new()));
    let (walk_root, skips, links) = (root.to_path_buf(), skipped.clone(), linked.clone());
    let scope: Option<Vec<PathBuf>> = scope.map(<[PathBuf]>::to_vec);
    let in_scope = |path: &Path| {
        scope
            .as_ref()
            .is_none_or(|scope| scope.iter().any(|s| path.starts_with(s)))
    };
    let filter_scope = scope.clone();
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .follow_links(true)
        .require_git(false)
        // Hidden entries are skipped below, with a notice.
        .hidden(false);
    // The `ignore` crate opens the ignore files itself, and would block on
    // a FIFO or read a device forever: they are checked before it does.
    if let Some(notice) = unusable_ignore_file(root, root) {
        // A walk restricted to a scope reports only what lies in it, so
        // that an update replaces the notices of its scope and no others.
        if in_scope(&root.join(&notice.path)) {
            notices.push(Notice {
                message: format!(
                    "{}; ignore files are not honoured in this index",
                    notice.message
                ),
                ..notice
            });
        }
        builder.git_ignore(false).ignore(false).git_exclude(false);
    }
    builder
        .filter_entry(move |entry| {
            let path = entry.path();
            // Ancestors of a scope path are entered (their ignore files
            // apply), and everything under one; nothing else.
            if let Some(scope) = &filter_scope
                && !scope
                    .iter()
                    .any(|s| s.starts_with(path) || path.starts_with(s))
            {
                return false;
            }
            let Some(skip) = refuse_entry(&walk_root, entry) else {
                if entry.path_is_symlink() && entry.file_type().is_some_and(|t| t.is_dir()) {
                    let mut links = links.write().unwrap_or_else(|e| e.into_inner());
                    links.push(path.to_path_buf());
                }
                return true;
            };
            let inside = filter_scope
                .as_ref()
                .is_none_or(|scope| scope.iter().any(|s| path.starts_with(s)));
            if inside {
                let mut skips = skips.lock().unwrap_or_else(|e| e.into_inner());
                skips.0.extend(skip.notice);
                if skip.guarded {
                    skips.1.push(path.to_path_buf());
                }
            }
            false
        })
        .build_parallel()
        .run(|| {
            let (found, extra, in_scope, linked) = (&found, &extra, &in_scope, &linked);
            Box::new(move |entry| {
                let entry = match entry {
                    Ok(entry) => entry,
                    Err(error) => {
                        if let Some(notice) = walk_error(root, &error)
                            && in_scope(&root.join(&notice.path))
                        {
                            let mut found = found.lock().unwrap_or_else(|e| e.into_inner());
                            found.1.push(notice);
                        }
                        return ignore::WalkState::Continue;
                    }
                };
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                let links = if entry.path_is_symlink()
                    || linked
                        .read()
                        .unwrap_or_else(|e| e.into_inner())
                        .iter()
                        .any(|dir| entry.path().starts_with(dir))
                {
                    Links::Resolve
                } else {
                    Links::Absent
                };
                let (file, notice) = visit(root, &entry, links, extra);
                let marker = sub_project_marker(root, &entry);
                if file.is_some() || notice.is_some() || is_dir || marker.is_some() {
                    let mut found = found.lock().unwrap_or_else(|e| e.into_inner());
                    found.0.extend(file);
                    found.1.extend(notice);
                    found.3.extend(marker);
                    if is_dir {
                        found.2.push(entry.into_path());
                    }
                }
                ignore::WalkState::Continue
            })
        });
    let (mut files, found_notices, mut dirs, mut markers): (
        Vec<SourceText>,
        Vec<Notice>,
        Vec<PathBuf>,
        Vec<String>,
    ) = found.into_inner().unwrap_or_else(|e| e.into_inner());
    {
        let mut skipped = skipped.lock().unwrap_or_else(|e| e.into_inner());
        notices.append(&mut skipped.0);
        dirs.append(&mut skipped.1);
    }
    dirs.sort();
    dirs.dedup();
    markers.sort();
    markers.dedup();
    notices.extend(found_notices);
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files.dedup_by(|a, b| a.path == b.path);
    notices.sort_by(|a, b| a.path.cmp(&b.path));
    notices.dedup();
    Discovery {
        files,
        notices,
        dirs,
        markers,
    }
}

/// Why the walk does not enter or read an entry.
struct Skip {
    /// What the user is told, if anything.
    notice: Option<Notice>,
    /// Skipped for what it holds, which may change (a `pyvenv.cfg` or an
    /// `__init__.py` created or removed): watched like an entered
    /// directory, so that the change is seen.
    guarded: bool,
}

impl Skip {
    fn quiet() -> Option<Skip> {
        Some(Skip {
            notice: None,
            guarded: false,
        })
    }

    fn told(notice: Notice) -> Option<Skip> {
        Some(Skip {
            notice: Some(notice),
            guarded: false,
        })
    }
}

/// Why the walk does not enter `entry` (below the root), with a notice
/// when the user should hear of it. The hidden tool directories
/// (`QUIET_DIRS`) and hidden files that are not Python go silently: they
/// would never be indexed and would only bury the notices that matter. A
/// hidden directory gets one notice, not one per file inside it; so does
/// each skipped tool directory.
fn refuse_entry(root: &Path, entry: &ignore::DirEntry) -> Option<Skip> {
    let path = entry.path();
    let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
    let named_python = path.extension().is_some_and(|e| e == "py");
    let notice = |kind, message: &str| Notice {
        path: display_relative(root, path),
        kind,
        message: message.to_string(),
    };
    let Some(name) = entry.file_name().to_str() else {
        return Some(Skip {
            notice: (is_dir || named_python).then(|| {
                notice(
                    NoticeKind::NonUtf8Name,
                    "name is not valid UTF-8, so no tool could address it; skipped (rename it to index it)",
                )
            }),
            guarded: false,
        });
    };
    if is_dir && QUIET_DIRS.contains(&name) {
        return Skip::quiet();
    }
    if name.starts_with('.') {
        let told = is_dir && name != LOG_DIR && name != CACHE_DIR;
        return Some(Skip {
            notice: if told {
                Some(notice(
                    NoticeKind::Hidden,
                    "hidden directory; skipped with everything in it",
                ))
            } else {
                (named_python && !is_dir)
                    .then(|| notice(NoticeKind::Hidden, "hidden file; skipped"))
            },
            guarded: false,
        });
    }
    if !is_dir {
        return None;
    }
    if entry.path_is_symlink() && !resolves_inside(root, path) {
        return Skip::told(notice(
            NoticeKind::SymlinkOutsideRoot,
            "symlinked directory points outside the project root; skipped",
        ));
    }
    if let Some(why) = tool_directory(root, path, name) {
        return Some(Skip {
            notice: Some(notice(NoticeKind::ToolDirectory, &why)),
            guarded: !PACKAGE_DIRS.contains(&name),
        });
    }
    unusable_ignore_file(root, path).and_then(|mut notice| {
        notice.message.push_str("; directory skipped");
        Skip::told(notice)
    })
}

/// Why the directory `dir` (named `name`, below `root`) is a tool's and not
/// the project's, if it is: a Python environment (by what it holds, not
/// by its name), installed packages, or build output where a build puts it
/// and not a package.
fn tool_directory(root: &Path, dir: &Path, name: &str) -> Option<String> {
    if let Some(marker) = ENV_MARKERS
        .iter()
        .find(|marker| std::fs::symlink_metadata(dir.join(marker)).is_ok())
    {
        return Some(format!(
            "Python environment (it holds {marker}); skipped with everything in it"
        ));
    }
    if PACKAGE_DIRS.contains(&name) {
        return Some(format!(
            "installed packages ({name}); skipped with everything in it"
        ));
    }
    let package = std::fs::symlink_metadata(dir.join("__init__.py")).is_ok();
    (BUILD_DIRS.contains(&name) && at_project_root(root, dir) && !package).then(|| {
        format!(
            "build output ({name}/ at a project root, with no __init__.py); skipped with everything in it"
        )
    })
}

/// Whether `dir` lies directly in the root or in a sub-project's directory
/// (one holding a packaging file), where builds put their output.
fn at_project_root(root: &Path, dir: &Path) -> bool {
    dir.parent().is_some_and(|parent| {
        parent == root
            || SUB_PROJECT_MARKERS
                .iter()
                .any(|marker| parent.join(marker).is_file())
    })
}

/// The directories whose skip or entry a change at `path` (absolute, under
/// `root`) may decide, besides `path` itself: an environment marker's or an
/// `__init__.py`'s directory, and beside a sub-project marker its build
/// directories. An update re-reads them whole, as a fresh index would.
pub fn guarded(root: &Path, path: &Path) -> Vec<PathBuf> {
    let Some((name, parent)) = path.file_name().zip(path.parent()) else {
        return Vec::new();
    };
    if !parent.starts_with(root) || parent == root {
        return Vec::new();
    }
    let parent_named = |names: &[&str]| {
        parent
            .file_name()
            .is_some_and(|n| names.iter().any(|name| n == *name))
    };
    let build_package =
        name == "__init__.py" && parent_named(BUILD_DIRS) && at_project_root(root, parent);
    if ENV_MARKERS.iter().any(|m| name == *m) || build_package {
        return vec![parent.to_path_buf()];
    }
    if SUB_PROJECT_MARKERS.iter().any(|m| name == *m) {
        return BUILD_DIRS.iter().map(|dir| parent.join(dir)).collect();
    }
    Vec::new()
}

/// Ignore files the `ignore` crate reads in a directory it enters.
const IGNORE_FILES: &[&str] = &[".gitignore", ".ignore", ".git/info/exclude"];

/// A notice for the first ignore file in `dir` that must not be handed to
/// the `ignore` crate (not a regular file, a link out of the root, ...).
fn unusable_ignore_file(root: &Path, dir: &Path) -> Option<Notice> {
    IGNORE_FILES.iter().find_map(|name| {
        let path = dir.join(name);
        let refusal = read::check_project_file(root, &path).err()?;
        Some(Notice {
            path: display_relative(root, &path),
            kind: refusal_kind(&refusal),
            message: format!("not read: {refusal}; replace it with a regular file"),
        })
    })
}

/// The notice for an entry the walk could not follow or list.
fn walk_error(root: &Path, error: &ignore::Error) -> Option<Notice> {
    let (path, kind, message) = match error {
        ignore::Error::WithDepth { err, .. } => return walk_error(root, err),
        ignore::Error::Loop { child, .. } => (
            child,
            NoticeKind::SymlinkLoop,
            "symlink loop (leads back to a directory above it); skipped".to_string(),
        ),
        ignore::Error::WithPath { path, err } => match err.io_error() {
            // Not found and not a link: it went away during the walk.
            Some(io) if io.kind() == std::io::ErrorKind::NotFound => {
                if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) {
                    return None;
                }
                (
                    path,
                    NoticeKind::Dangling,
                    "broken symlink (its target does not exist); skipped".to_string(),
                )
            }
            Some(io) if io.raw_os_error() == Some(libc::ELOOP) => (
                path,
                NoticeKind::SymlinkLoop,
                "symlink loop; skipped".to_string(),
            ),
            Some(io) => (
                path,
                NoticeKind::Unreadable,
                format!("cannot read: {io}; skipped"),
            ),
            None => return None,
        },
        // Errors inside ignore files (a bad glob) only weaken the filter.
        _ => return None,
    };
    Some(Notice {
        path: display_relative(root, path),
        kind,
        message,
    })
}

/// The root-relative path of a walked sub-project marker file below the
/// root (the root's own markers make no sub-project).
fn sub_project_marker(root: &Path, entry: &ignore::DirEntry) -> Option<String> {
    let is_marker = entry.file_type().is_some_and(|t| t.is_file())
        && SUB_PROJECT_MARKERS
            .iter()
            .any(|name| entry.file_name() == *name);
    let relative = is_marker
        .then(|| relative_path(root, entry.path()))
        .flatten()?;
    relative.contains('/').then_some(relative)
}

/// Reads one walked entry if it is a project Python file.
fn visit(
    root: &Path,
    entry: &ignore::DirEntry,
    links: Links,
    extra: &GlobSet,
) -> (Option<SourceText>, Option<Notice>) {
    let path = entry.path();
    let is_python = !entry.file_type().is_some_and(|t| t.is_dir())
        && path.extension().is_some_and(|e| e == "py");
    let Some(relative) = is_python.then(|| relative_path(root, path)).flatten() else {
        return (None, None);
    };
    if extra.is_match(&relative) {
        return (None, None);
    }
    read_source(root, relative, path, links)
}

fn resolves_inside(root: &Path, path: &Path) -> bool {
    path.canonicalize()
        .is_ok_and(|target| target.starts_with(root))
}

/// Python sources bigger than this are skipped (a 10,000-line file of
/// long lines is still far below it).
pub const MAX_SOURCE_BYTES: u64 = 8 * 1024 * 1024;

/// The kind of notice a refused file gets.
fn refusal_kind(refusal: &Refusal) -> NoticeKind {
    match refusal {
        Refusal::Missing | Refusal::Dangling => NoticeKind::Dangling,
        Refusal::Loop => NoticeKind::SymlinkLoop,
        Refusal::OutsideRoot => NoticeKind::SymlinkOutsideRoot,
        Refusal::Sensitive => NoticeKind::Sensitive,
        Refusal::NotRegular(_) => NoticeKind::NotRegular,
        Refusal::TooBig(..) => NoticeKind::TooLarge,
        Refusal::Io(_) => NoticeKind::Unreadable,
    }
}

/// An indexed file's text read again as discovery reads it, for the
/// engine that let it go once its facts were extracted
/// (`xfile_engine::TextLoader`): `None` if it is gone or now refused.
pub fn read_again(root: &Path, relative: &str) -> Option<String> {
    let path = root.join(relative);
    let (source, _) = read_source(root, relative.to_string(), &path, Links::Resolve);
    source.map(|source| source.text)
}

/// Reads one Python file of the project at `path` (`relative` to `root`),
/// through [`read::read_project_file`], decoding it as UTF-8 or else
/// latin-1.
fn read_source(
    root: &Path,
    relative: String,
    path: &Path,
    links: Links,
) -> (Option<SourceText>, Option<Notice>) {
    let notice = |kind, message: String| Notice {
        path: relative.clone(),
        kind,
        message,
    };
    let (stamp, bytes) = match read::read_project_file(root, path, links, MAX_SOURCE_BYTES) {
        Ok(read) => read,
        // Deleted since the walk listed it: simply not there.
        Err(Refusal::Missing) => return (None, None),
        Err(refusal) => {
            let message = format!("not read: {refusal}; skipped");
            return (None, Some(notice(refusal_kind(&refusal), message)));
        }
    };
    if memchr::memchr(0, &bytes[..bytes.len().min(8192)]).is_some() {
        return (
            None,
            Some(notice(
                NoticeKind::Binary,
                "binary file (NUL bytes); skipped".into(),
            )),
        );
    }
    let lines = count_lines(&bytes);
    if lines > MAX_LINES {
        let message = format!("{lines} lines, over the {MAX_LINES}-line limit (EC-17); skipped");
        return (None, Some(notice(NoticeKind::TooLarge, message)));
    }
    match String::from_utf8(bytes) {
        Ok(text) => (
            Some(SourceText {
                path: relative,
                text,
                stamp,
            }),
            None,
        ),
        Err(error) => {
            let text: String = error.as_bytes().iter().map(|&b| char::from(b)).collect();
            let message = "not valid UTF-8; decoded as latin-1".to_string();
            let notice = notice(NoticeKind::Latin1Fallback, message);
            (
                Some(SourceText {
                    path: relative,
                    text,
                    stamp,
                }),
                Some(notice),
            )
        }
    }
}

/// Lines as Python counts them: ended by `\n`, `\r\n` or a lone `\r`.
fn count_lines(bytes: &[u8]) -> usize {
    let newlines = memchr::memchr_iter(b'\n', bytes).count();
    // Most files hold no `\r`: one vectorized scan says so.
    let lone_returns = match memchr::memchr(b'\r', bytes) {
        None => 0,
        Some(first) => memchr::memchr_iter(b'\r', &bytes[first..])
            .filter(|&i| bytes.get(first + i + 1) != Some(&b'\n'))
            .count(),
    };
    let ends = newlines + lone_returns;
    ends + usize::from(bytes.last().is_some_and(|&b| b != b'\n' && b != b'\r'))
}

/// `path` relative to `root` for a notice: like [`relative_path`], with
/// bytes that are not UTF-8 written as `\xNN`, never replaced, so two
/// names never look the same.
fn display_relative(root: &Path, path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let relative = path.strip_prefix(root).unwrap_or(path);
    let mut out = String::new();
    for chunk in relative.as_os_str().as_bytes().utf8_chunks() {
        out.push_str(chunk.valid());
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out
}

/// `path` relative to `root` with `/` separators, if it lies under it.
pub fn relative_path(root: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(root).ok()?;
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() {
        return None;
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::{SENSITIVE, count_lines, is_sensitive, sensitive_glob};

    #[test]
    fn every_sensitive_pattern_compiles() {
        for pattern in SENSITIVE {
            assert!(sensitive_glob(pattern).is_ok(), "{pattern}");
        }
    }

    #[test]
    fn secrets_are_known_by_name_and_place_in_any_case_issue_39_f12() {
        for secret in [
            ".env",
            ".ENV",
            "app/.env.production",
            "deploy/prod.env",
            ".pypirc",
            ".npmrc",
            "web/.NPMRC",
            ".netrc",
            ".git-credentials",
            ".htpasswd",
            "home/.aws/credentials",
            ".aws/config",
            ".config/gcloud/credentials.db",
            ".config/gcloud/access_tokens.db",
            ".config/gcloud/application_default_credentials.json",
            ".config/gcloud/legacy_credentials/ann@example.com/adc.json",
            ".azure/msal_token_cache.json",
            ".docker/config.json",
            ".kube/config",
            "certs/server.pem",
            "tls/Server.KEY",
            "keys/id_rsa",
            "keys/id_ed25519.pub",
            ".ssh/known_hosts",
        ] {
            assert!(is_sensitive(secret), "{secret}");
        }
        for plain in [
            "app/models.py",
            "envoy.py",
            "environment.py",
            "docker/config.json",
            "kube/config.py",
            "gcloud/deploy.py",
            "docs/keys.md",
        ] {
            assert!(!is_sensitive(plain), "{plain}");
        }
    }

    #[test]
    fn lines_end_at_lf_crlf_and_a_lone_cr_f9() {
        assert_eq!(count_lines(b""), 0);
        assert_eq!(count_lines(b"a\nb\r\nc\rd"), 4);
        assert_eq!(count_lines(b"a\r\n"), 1);
        assert_eq!(count_lines(b"a\r\r\n\r"), 3);
        assert_eq!(count_lines(&b"x = 1\r".repeat(20_000)), 20_000);
    }
}
