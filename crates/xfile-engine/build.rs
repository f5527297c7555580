//! Compiles `rules/*.dl` into `OUT_DIR/rules.rs` with `xfile-rules`, and
//! gives the warm-start cache's key parts (`engine::cache_keys`).

use std::path::{Path, PathBuf};

fn main() {
    // The rules live at the workspace's root, beside the engine: a new
    // relation is a new file there and nothing else.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let rules_dir = root.join("rules");
    println!("cargo:rerun-if-changed={}", rules_dir.display());
    let mut paths: Vec<_> = std::fs::read_dir(&rules_dir)
        .expect("rules/ directory is missing")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "dl"))
        .collect();
    paths.sort();

    let mut files = Vec::new();
    for path in &paths {
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(path).expect("unreadable rules file");
        // Named from the workspace's root, as explanations cite them.
        let file = format!(
            "rules/{}",
            path.file_name().unwrap_or_default().to_string_lossy()
        );
        files.push((file, text));
    }
    let sources: Vec<xfile_rules::Source<'_>> = files
        .iter()
        .map(|(file, text)| xfile_rules::Source { file, text })
        .collect();
    match xfile_rules::compile(&sources) {
        Ok(rust) => {
            let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("rules.rs");
            std::fs::write(dest, rust).unwrap();
        }
        // The build stops with the message alone: the file, the line and
        // what to write there.
        Err(error) => println!("cargo::error={error}"),
    }
    write_cache_keys(&root, &paths);
}

/// Hashes for the warm-start cache's key: the rules, the front end whose
/// output the cache holds (its sources and the locked parser versions), and
/// the engine that turns facts into the answers the cache keeps.
fn write_cache_keys(root: &Path, rules: &[PathBuf]) {
    use xfile_rules::sources::{hash, rust_files};
    let front_end_dir = root.join("crates/xfile-python");
    let lock = root.join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", front_end_dir.display());
    println!("cargo:rerun-if-changed={}", lock.display());
    let mut front_end = vec![lock];
    front_end.extend(rust_files(&front_end_dir));
    front_end.sort();
    let engine_dir = root.join("crates/xfile-engine/src");
    println!("cargo:rerun-if-changed={}", engine_dir.display());
    let mut engine = front_end.clone();
    engine.extend(rust_files(&engine_dir));
    engine.sort();
    println!("cargo:rustc-env=XFILE_RULES_HASH={}", hash(root, rules));
    println!(
        "cargo:rustc-env=XFILE_FRONT_END_HASH={}",
        hash(root, &front_end)
    );
    println!("cargo:rustc-env=XFILE_ENGINE_HASH={}", hash(root, &engine));
}
