//! Hashes of source files, for the warm-start cache's keys: the build
//! scripts of the engine and the service name what cached entries come
//! from, and a build whose sources differ reads none of an older build's
//! entries. A different hash only costs a rebuild of the cache, so the std
//! hasher suffices; nothing adversarial is at stake.

use std::hash::{DefaultHasher, Hasher};
use std::path::{Path, PathBuf};

/// The `.rs` files under `dir`, recursively, sorted. A build script's input
/// that cannot be read stops the build.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("unreadable source directory") {
            let path = entry.expect("unreadable source directory").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    files.sort();
    files
}

/// A hash of `paths` (in their order), their names and contents; names are
/// taken from `base` when under it, so a key does not depend on where the
/// checkout is.
pub fn hash(base: &Path, paths: &[PathBuf]) -> String {
    let mut hasher = DefaultHasher::new();
    for path in paths {
        let named = path.strip_prefix(base).unwrap_or(path);
        hasher.write(named.to_string_lossy().as_bytes());
        hasher.write(&std::fs::read(path).expect("unreadable source file"));
    }
    format!("{:016x}", hasher.finish())
}
