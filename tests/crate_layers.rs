//! The crates are the layers, lowest first: a crate may depend only on
//! crates of a lower layer. Cargo already refuses cycles; this test also
//! refuses an arrow pointing up, and a crate added without a layer.

use std::process::Command;

/// The workspace's crates, lowest layer first.
const LAYERS: &[&str] = &[
    "xfile-rules",
    "xfile-python",
    "xfile-engine",
    "xfile-workspace",
    "xfile-git",
    "xfile-service",
    "xfile",
];

#[test]
fn every_crate_depends_only_on_crates_of_lower_layers() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let packages = metadata["packages"].as_array().expect("a package list");
    let layer = |name: &str| LAYERS.iter().position(|l| *l == name);
    let mut seen = Vec::new();
    for package in packages {
        let name = package["name"].as_str().expect("a package name");
        let own = layer(name).unwrap_or_else(|| panic!("crate {name} has no layer in LAYERS"));
        seen.push(name);
        for dependency in package["dependencies"].as_array().into_iter().flatten() {
            let target = dependency["name"].as_str().unwrap_or_default();
            if let Some(theirs) = layer(target) {
                assert!(
                    theirs < own,
                    "{name} depends on {target}, which is not in a lower layer"
                );
            }
        }
    }
    seen.sort_unstable();
    let mut all: Vec<&str> = LAYERS.to_vec();
    all.sort_unstable();
    assert_eq!(seen, all, "every layer is a crate of the workspace");
}
