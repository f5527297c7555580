//! Finding and reading the project's Python files (TDD NFR-7, NFR-8, §3.12.2,
//! EC-17, §3.11.2): `.gitignore`/`.ignore` honoured, environment and build
//! directories and sensitive files always skipped, symlinks followed only
//! while they stay inside the root.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Serialize;

/// Directories never descended into, whatever the ignore files say.
pub const SKIPPED_DIRS: &[&str] = &[
    ".git",
    ".venv",
    "venv",
    "env",
    "node_modules",
    "__pycache__",
    "site-packages",
    "build",
    "dist",
    ".tox",
    ".mypy_cache",
];

/// Files that may hold secrets: never read, never served (§3.12.2).
const SENSITIVE: &[&str] = &[
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*credentials*",
    ".netrc",
    ".pgpass",
    "*.p12",
    "*.pfx",
];

/// Files that make their directory a sub-project with its own module
/// search roots (packaging metadata: it is installed on its own).
pub const SUB_PROJECT_MARKERS: &[&str] = &["pyproject.toml", "setup.py", "setup.cfg"];

/// Files longer than this are skipped (EC-17).
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
    /// Every directory the walk entered, absolute: what a watcher watches.
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

pub fn is_sensitive(file_name: &str) -> bool {
    sensitive_set().is_match(file_name)
}

fn sensitive_set() -> &'static GlobSet {
    static SET: std::sync::OnceLock<GlobSet> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        let mut builder = GlobSetBuilder::new();
        for pattern in SENSITIVE {
            if let Ok(glob) = Glob::new(pattern) {
                builder.add(glob);
            }
        }
        builder.build().unwrap_or_else(|_| GlobSet::empty())
    })
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
    let escaped = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (walk_root, escapes) = (root.to_path_buf(), escaped.clone());
    let scope: Option<Vec<PathBuf>> = scope.map(<[PathBuf]>::to_vec);
    ignore::WalkBuilder::new(root)
        .follow_links(true)
        .require_git(false)
        .filter_entry(move |entry| {
            let path = entry.path();
            // Ancestors of a scope path are entered (their ignore files
            // apply), and everything under one; nothing else.
            if let Some(scope) = &scope
                && !scope
                    .iter()
                    .any(|s| s.starts_with(path) || path.starts_with(s))
            {
                return false;
            }
            let name = entry.file_name().to_string_lossy();
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if is_dir && SKIPPED_DIRS.contains(&name.as_ref()) {
                return false;
            }
            // A linked directory is entered only if it resolves inside the root.
            if is_dir && entry.path_is_symlink() && !resolves_inside(&walk_root, entry.path()) {
                if let Some(relative) = relative_path(&walk_root, entry.path()) {
                    escapes
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(relative);
                }
                return false;
            }
            true
        })
        .build_parallel()
        .run(|| {
            let (found, extra) = (&found, &extra);
            Box::new(move |entry| {
                if let Ok(entry) = entry {
                    let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                    let (file, notice) = visit(root, &entry, extra);
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
    dirs.sort();
    markers.sort();
    markers.dedup();
    notices.extend(found_notices);
    let escaped = std::mem::take(&mut *escaped.lock().unwrap_or_else(|e| e.into_inner()));
    notices.extend(escaped.into_iter().map(|path| Notice {
        path,
        kind: NoticeKind::SymlinkOutsideRoot,
        message: "symlinked directory points outside the project root; skipped".into(),
    }));
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files.dedup_by(|a, b| a.path == b.path);
    notices.sort_by(|a, b| a.path.cmp(&b.path));
    Discovery {
        files,
        notices,
        dirs,
        markers,
    }
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
    extra: &GlobSet,
) -> (Option<SourceText>, Option<Notice>) {
    let path = entry.path();
    let is_python = entry.file_type().is_some_and(|t| t.is_file())
        && path.extension().is_some_and(|e| e == "py");
    let Some(relative) = is_python.then(|| relative_path(root, path)).flatten() else {
        return (None, None);
    };
    let name = entry.file_name().to_string_lossy();
    if is_sensitive(&name) || extra.is_match(&relative) {
        return (None, None);
    }
    if entry.path_is_symlink() && !resolves_inside(root, path) {
        let notice = Notice {
            path: relative,
            kind: NoticeKind::SymlinkOutsideRoot,
            message: "symlink points outside the project root; skipped".into(),
        };
        return (None, Some(notice));
    }
    read_source(relative, path)
}

fn resolves_inside(root: &Path, path: &Path) -> bool {
    path.canonicalize()
        .is_ok_and(|target| target.starts_with(root))
}

/// Reads one file, decoding it as UTF-8 or else latin-1 (§3.11.2).
pub fn read_source(relative: String, path: &Path) -> (Option<SourceText>, Option<Notice>) {
    let notice = |kind, message: String| Notice {
        path: relative.clone(),
        kind,
        message,
    };
    let read = || -> std::io::Result<(Stamp, Vec<u8>)> {
        use std::io::Read;
        let mut file = std::fs::File::open(path)?;
        let stamp = Stamp::of(&file.metadata()?);
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok((stamp, bytes))
    };
    let (stamp, bytes) = match read() {
        Ok(read) => read,
        Err(error) => {
            return (
                None,
                Some(notice(
                    NoticeKind::Unreadable,
                    format!("cannot read: {error}"),
                )),
            );
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
    let lines = bytecount_lines(&bytes);
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

fn bytecount_lines(bytes: &[u8]) -> usize {
    let newlines = memchr::memchr_iter(b'\n', bytes).count();
    newlines + usize::from(bytes.last().is_some_and(|&b| b != b'\n'))
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
