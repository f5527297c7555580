//! The warm-start cache's answers key: the sources besides the engine's
//! (whose hash `xfile_engine::cache_keys` gives) that cached answers
//! come from: discovery and the service's rendering.

use std::path::{Path, PathBuf};

use xfile_rules::sources::{hash, rust_files};

fn main() {
    let mut answers = rust_files(Path::new("../xfile-workspace/src"));
    answers.extend(rust_files(Path::new("src/warm")));
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
    println!(
        "cargo:rustc-env=XFILE_ANSWERS_HASH={}",
        hash(Path::new(""), &answers)
    );
}
