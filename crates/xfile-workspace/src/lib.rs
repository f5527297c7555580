//! The project on disk: where its root is, its configuration, which files
//! belong to it, and the check that a path a user hands in lies inside it.

// What other crates can reach is declared `pub`; everything else says
// `pub(crate)`, so a signature tells a reader whether it is the API.
#![warn(unreachable_pub)]

pub mod config;
pub mod discover;
pub mod package_roots;
pub mod pytest;
pub mod read;

use std::path::{Path, PathBuf};

pub use config::Config;
pub use discover::{Discovery, LOG_DIR, Notice, NoticeKind, SourceText};

/// A configuration file larger than this is not read.
pub const CONFIG_FILE_LIMIT: u64 = 1 << 20;

/// Reads a configuration file: `Ok(None)` if it does not exist, an error
/// message if it is not a regular file (a symlink, FIFO, socket or device
/// is never opened), is larger than [`CONFIG_FILE_LIMIT`] or cannot be read.
pub fn read_config_file(path: &Path) -> Result<Option<String>, String> {
    read::read_regular_text(path, CONFIG_FILE_LIMIT)
        .map_err(|refusal| format!("not read: {refusal}"))
}

/// Errors a user can cause with a root or a path argument.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error(
        "project root {0} does not exist or is not a directory; pass an existing directory with --root"
    )]
    MissingRoot(PathBuf),
    #[error(
        "{0} does not exist; give a path relative to the project root or an absolute path inside it"
    )]
    NotFound(String),
    #[error("{0} is outside the project root {1}; only files inside the root can be read")]
    OutsideRoot(String, PathBuf),
    #[error("{0} contains a NUL byte; give a plain file path")]
    NulByte(String),
    #[error("{0} may hold secrets and is never read (sensitive file rule)")]
    Sensitive(String),
    #[error("{0} is not a Python file; xfile serves .py files only")]
    NotPython(String),
    #[error(
        "the path is {0} bytes long, more than a file system allows ({MAX_PATH_BYTES}); give a real path"
    )]
    TooLong(usize),
}

/// Longest path a user may give (Linux's PATH_MAX): longer ones name no
/// file, and resolving them component by component would be slow.
pub const MAX_PATH_BYTES: usize = 4096;

/// The checks every user path passes before it touches the file system.
fn plain(input: &str) -> Result<(), PathError> {
    if input.len() > MAX_PATH_BYTES {
        return Err(PathError::TooLong(input.len()));
    }
    if input.contains('\0') {
        return Err(PathError::NulByte(input.replace('\0', "\\0")));
    }
    Ok(())
}

impl PathError {
    /// A stable code for adapters (MCP tool errors, exit statuses).
    pub fn code(&self) -> &'static str {
        match self {
            PathError::MissingRoot(_) => "root_not_found",
            PathError::NotFound(_) => "file_not_found",
            PathError::OutsideRoot(..) => "outside_root",
            PathError::NulByte(_) | PathError::TooLong(_) => "invalid_parameter",
            PathError::Sensitive(_) => "sensitive_file",
            PathError::NotPython(_) => "not_python",
        }
    }
}

/// The nearest ancestor of `start` holding `.git` or `pyproject.toml`, else
/// `start` itself.
pub fn find_root(start: &Path) -> PathBuf {
    marked_root(start).unwrap_or_else(|| start.to_path_buf())
}

/// The nearest ancestor of `start` (itself included) holding `.git` or
/// `pyproject.toml`, if any.
pub fn marked_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join(".git").exists() || dir.join("pyproject.toml").exists())
        .map(Path::to_path_buf)
}

/// Canonicalizes a root given by the user.
pub fn canonical_root(root: &Path) -> Result<PathBuf, PathError> {
    match root.canonicalize() {
        Ok(path) if path.is_dir() => Ok(path),
        _ => Err(PathError::MissingRoot(root.to_path_buf())),
    }
}

/// Validates a user-supplied path (root-relative or absolute) and returns it
/// root-relative with `/` separators. Symlinks are resolved first, so a link
/// that points out of the root is rejected.
pub fn resolve_user_path(root: &Path, input: &str) -> Result<String, PathError> {
    plain(input)?;
    validate(root, &root.join(input), input)
}

/// Like [`resolve_user_path`], for a FILE typed on the command line in
/// `cwd`: a relative path means what the shell means by it when it names an
/// existing file inside the root (`cd app && xfile deps ./views.py`), and
/// is root-relative otherwise, so commands written from the
/// root keep working from anywhere.
pub fn resolve_cli_path(root: &Path, cwd: &Path, input: &str) -> Result<String, PathError> {
    plain(input)?;
    let here = cwd.join(input);
    let inside = |path: &Path| path.canonicalize().is_ok_and(|p| p.starts_with(root));
    if Path::new(input).is_absolute() || (here.is_file() && inside(&here)) {
        return validate(root, &here, input);
    }
    let from_root = root.join(input);
    if from_root.exists() {
        return validate(root, &from_root, input);
    }
    if here.exists() {
        // Only the working directory has it, and not inside the root (or
        // not as a file): say that rather than "does not exist".
        return validate(root, &here, input);
    }
    if !lands_inside(root, &from_root, MAX_LINK_HOPS) {
        return Err(PathError::OutsideRoot(
            input.to_string(),
            root.to_path_buf(),
        ));
    }
    Err(PathError::NotFound(format!(
        "{input} (relative to the working directory {} or to the project root {})",
        cwd.display(),
        root.display()
    )))
}

/// The checks every incoming path passes: it exists, lies inside `root`
/// once symlinks are resolved, and is not a sensitive file. `input` is the
/// path as the user gave it, for the messages. A path outside the root is
/// refused the same way whether or not it exists, so the answer tells
/// nothing about the file system outside.
fn validate(root: &Path, joined: &Path, input: &str) -> Result<String, PathError> {
    let outside = || PathError::OutsideRoot(input.to_string(), root.to_path_buf());
    let Ok(canonical) = joined.canonicalize() else {
        return Err(if lands_inside(root, joined, MAX_LINK_HOPS) {
            PathError::NotFound(input.to_string())
        } else {
            outside()
        });
    };
    if !canonical.starts_with(root) {
        return Err(outside());
    }
    // Judged by where it leads (below the root) and by the name that
    // leads there.
    let by_name = joined.file_name().is_some_and(discover::is_sensitive);
    let by_target = canonical
        .strip_prefix(root)
        .is_ok_and(discover::is_sensitive);
    if by_name || by_target {
        return Err(PathError::Sensitive(input.to_string()));
    }
    discover::relative_path(root, &canonical).ok_or_else(|| PathError::NotFound(input.to_string()))
}

/// Links followed before a path that does not resolve counts as outside
/// (the kernel's own limit).
const MAX_LINK_HOPS: u32 = 40;

/// Whether a path that does not resolve would lie inside `root`: its
/// nearest existing ancestor decides, and a link on the way is followed to
/// where it points (a dangling link to a missing file outside the root is
/// outside, as a link to an existing one is).
fn lands_inside(root: &Path, path: &Path, hops: u32) -> bool {
    if let Ok(canonical) = path.canonicalize() {
        return canonical.starts_with(root);
    }
    for ancestor in path.ancestors() {
        match std::fs::symlink_metadata(ancestor) {
            Ok(metadata) if metadata.is_symlink() => {
                let (Ok(target), Some(parent), Ok(rest)) = (
                    std::fs::read_link(ancestor),
                    ancestor.parent(),
                    path.strip_prefix(ancestor),
                ) else {
                    return false;
                };
                return hops > 0 && lands_inside(root, &parent.join(target).join(rest), hops - 1);
            }
            Ok(_) => return ancestor.canonicalize().is_ok_and(|c| c.starts_with(root)),
            Err(_) => {}
        }
    }
    false
}
