//! The warm-start cache's answers key: the sources besides the engine's
//! (whose hash `xfile_engine::cache_keys` gives) that cached answers
//! come from: discovery and the service's rendering.

use std::hash::{DefaultHasher, Hasher};
use std::path::{Path, PathBuf};

fn main() {
    let mut answers = Vec::new();
    rust_files(Path::new("../xfile-workspace/src"), &mut answers);
    rust_files(Path::new("src/warm"), &mut answers);
    println!("cargo:rerun-if-changed=../xfile-workspace/src");
    println!("cargo:rerun-if-changed=src/warm");
    for file in [
        "src/lib.rs",
        "src/links.rs",
        "src/model.rs",
        "src/relationships.rs",
        // The text form whose first page's tokens the answers keep.
        "src/text.rs",
    ] {
        println!("cargo:rerun-if-changed={file}");
        answers.push(PathBuf::from(file));
    }
    answers.sort();
    // A different hash only costs a rebuild of the cache, so the std
    // hasher suffices; nothing adversarial is at stake.
    let mut hasher = DefaultHasher::new();
    for path in &answers {
        hasher.write(path.to_string_lossy().as_bytes());
        hasher.write(&std::fs::read(path).expect("unreadable source file"));
    }
    println!(
        "cargo:rustc-env=XFILE_ANSWERS_HASH={:016x}",
        hasher.finish()
    );
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("unreadable source directory") {
        let path = entry.expect("unreadable source directory").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
