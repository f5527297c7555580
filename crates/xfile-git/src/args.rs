//! The strict checks of what users hand the git layer. gix parses
//! revisions in process, so nothing here guards a shell; the checks keep
//! the promise that a revision is a plain name (a branch, tag, HEAD or a
//! hash, with `~N`/`^N` steps) and a path lies inside the root, whatever
//! reaches the layer later (a shelled `git` included).

use std::path::{Component, Path, PathBuf};

use super::GitError;
use xfile_workspace::discover;

/// Longest revision accepted: a full SHA-256 id is 64 digits, and ref
/// names this long are already unusual.
const MAX_REVISION: usize = 200;

/// `input` when it is a revision: a name of `[A-Za-z0-9._/-]` that git's
/// ref rules allow (no leading `-`, no `..`, `//`, component starting with
/// `.`, trailing `/`, `.` or `.lock`), then any `~N` and `^N` steps.
/// Everything else (`--output=x`, `-c`, `;rm`, `$(...)`, `@{...}`,
/// ranges, paths) is refused.
pub(crate) fn revision(input: &str) -> Result<&str, GitError> {
    let refuse = || Err(GitError::InvalidRevision(input.to_string()));
    let name_end = input.find(['~', '^']).unwrap_or(input.len());
    let (name, steps) = input.split_at(name_end);
    let name_ok = !name.is_empty()
        && input.len() <= MAX_REVISION
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'/' | b'-'))
        && !name.starts_with('-')
        && !name.contains("..")
        && !name.contains("//")
        && !name.ends_with(['/', '.'])
        && !name.ends_with(".lock")
        && name.split('/').all(|part| !part.starts_with('.'));
    let steps_ok = steps
        .split(['~', '^'])
        .skip(1)
        .all(|n| n.bytes().all(|b| b.is_ascii_digit()) && n.len() <= 6);
    if name_ok && steps_ok {
        Ok(input)
    } else {
        refuse()
    }
}

/// `input` (root-relative or absolute) as a root-relative path with `/`
/// separators, "" for the root itself. The path need not exist (history
/// holds deleted files), so `..` and `.` are resolved by name first; one
/// that exists must also stay inside the root once symlinks are resolved.
pub(crate) fn path(root: &Path, input: &str) -> Result<String, GitError> {
    let invalid = |why| Err(GitError::InvalidPath(input.to_string(), why));
    if input.contains('\0') {
        return invalid("it contains a NUL byte");
    }
    if input.starts_with('-') {
        return invalid("a path may not start with `-`; write ./-name for such a file");
    }
    if input.starts_with(':') {
        return invalid("pathspec magic (`:(...)`) is not supported; give a plain path");
    }
    let outside = || GitError::OutsideRoot(input.to_string(), root.to_path_buf());
    let mut joined = PathBuf::new();
    for component in root.join(input).components() {
        match component {
            Component::ParentDir => {
                joined.pop();
            }
            Component::CurDir => {}
            other => joined.push(other),
        }
    }
    let Ok(inside) = joined.strip_prefix(root) else {
        return Err(outside());
    };
    if joined.symlink_metadata().is_ok() {
        let canonical = joined.canonicalize().map_err(|_| outside())?;
        if !canonical.starts_with(root) {
            return Err(outside());
        }
    }
    let relative: Vec<String> = inside
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Ok(relative.join("/"))
}

/// `relative` (root-relative) when its content may be shown: never a
/// sensitive file's (`discover::SENSITIVE`, judged on the whole path).
pub(crate) fn readable(relative: &str) -> Result<&str, GitError> {
    if discover::is_sensitive(relative) {
        Err(GitError::Sensitive(relative.to_string()))
    } else {
        Ok(relative)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_are_plain_names_with_steps() {
        for good in [
            "HEAD",
            "main",
            "v1.2",
            "feature/x-y",
            "HEAD~2",
            "HEAD^",
            "a1b2c3^2~3",
        ] {
            assert!(revision(good).is_ok(), "{good}");
        }
        for bad in [
            "--output=/tmp/x",
            "-c",
            ";rm -rf",
            "$(touch x)",
            "`id`",
            "main..dev",
            "HEAD@{1}",
            "a b",
            ".hidden",
            "x.lock",
            "HEAD~x",
            "",
            "main:file.py",
        ] {
            assert!(revision(bad).is_err(), "{bad}");
        }
    }
}
