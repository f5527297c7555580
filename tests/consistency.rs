//! One place decides what is true. Every relationship a
//! file's dependencies list is listed among the dependents of the files it
//! points into, and nothing else is: the union of all dependencies (project
//! targets only) equals the union of all dependents, relationship for
//! relationship, and both equal the export's relationships.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{fixture, line, open};
use xfile::service::Service;

/// Checks the invariant over every file of `service`; returns the number of
/// relationships compared.
fn assert_consistent(service: &Service) -> usize {
    let files: Vec<String> = service.engine().paths().map(str::to_string).collect();
    let is_file = |path: &str| service.engine().contains(path);
    let mut from_dependencies = BTreeSet::new();
    let mut all_dependencies = BTreeSet::new();
    let mut from_dependents = BTreeSet::new();
    for file in &files {
        for r in service.dependencies(file).expect("indexed file") {
            let reaches_other =
                |target: Option<&str>| target.is_some_and(|t| t != r.source_file && is_file(t));
            if reaches_other(Some(&r.target_file))
                || reaches_other(r.metadata.defined_in.as_deref())
            {
                from_dependencies.insert(line(&r));
            }
            all_dependencies.insert(line(&r));
        }
        for r in service.dependents(file).expect("indexed file") {
            assert_ne!(r.source_file, *file, "a file is not its own dependent");
            assert!(
                r.target_file == *file || r.metadata.defined_in.as_deref() == Some(file),
                "dependents of {file} lists {} which points elsewhere",
                line(&r)
            );
            from_dependents.insert(line(&r));
        }
    }
    let missing: Vec<_> = from_dependencies.difference(&from_dependents).collect();
    let extra: Vec<_> = from_dependents.difference(&from_dependencies).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "dependencies and dependents disagree:\nonly in dependencies: {missing:#?}\nonly in dependents: {extra:#?}"
    );
    let exported: BTreeSet<String> = service.relationships().iter().map(line).collect();
    assert_eq!(
        exported, all_dependencies,
        "export differs from the dependencies"
    );
    from_dependents.len()
}

#[test]
fn star_imports_with_rival_definitions_give_no_call_in_either_direction() {
    let service = open("star_ambiguity");
    assert_consistent(&service);
    // `f` comes from two star imports in p/__init__.py: ambiguous, so no
    // call from c.py or d.py, in dependencies or in dependents (fail-safe).
    let deps: Vec<String> = service
        .dependencies("c.py")
        .unwrap()
        .iter()
        .map(line)
        .collect();
    assert_eq!(
        deps,
        [
            "c.py:1:5 import p/__init__.py * - wildcard",
            "c.py:4:0 function_call p/a.py only_a 5",
        ]
    );
    for target in ["p/a.py", "p/b.py"] {
        let dependents: Vec<String> = service
            .dependents(target)
            .unwrap()
            .iter()
            .map(line)
            .collect();
        assert!(
            dependents.iter().all(|l| !l.contains(" f ")),
            "{target}: {dependents:#?}"
        );
    }
    let d: Vec<String> = service
        .dependencies("d.py")
        .unwrap()
        .iter()
        .map(line)
        .collect();
    assert_eq!(
        d,
        [
            "d.py:1:5 import p/__init__.py f -",
            "d.py:1:5 import p/__init__.py only_a 5 defined_in=p/a.py",
            "d.py:4:0 function_call p/a.py only_a 5",
        ]
    );
    // Usage counts and DependsOn agree: b.py is used by nobody.
    assert_eq!(service.usage_count("p/a.py", "f"), 0);
    assert_eq!(service.usage_count("p/b.py", "f"), 0);
    assert_eq!(service.usage_count("p/a.py", "only_a"), 2);
    let b: Vec<String> = service
        .dependents("p/b.py")
        .unwrap()
        .iter()
        .map(line)
        .collect();
    assert_eq!(b, ["p/__init__.py:2:6 import p/b.py * - wildcard"]);
    let ambiguous = service.query(r#"Ambiguous("p/__init__.py", "f")"#).unwrap();
    assert_eq!(ambiguous.tuples.len(), 1);
}

#[test]
fn every_fixture_agrees_between_dependencies_and_dependents() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut compared = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        let Ok(service) = Service::open(&fixture(&name)) else {
            continue;
        };
        compared += assert_consistent(&service);
    }
    let sample =
        Service::open(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sample_project"))
            .unwrap();
    compared += assert_consistent(&sample);
    assert!(compared > 50, "only {compared} relationships compared");
}

/// A real tree: packages of the local CPython standard library with star
/// re-exports (`asyncio/__init__.py` star-imports its submodules), relative
/// imports and re-export chains.
#[test]
fn a_real_tree_agrees_between_dependencies_and_dependents() {
    let output = std::process::Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ])
        .output()
        .expect("python3 runs (the real-tree tests read its standard library)");
    let stdlib = String::from_utf8(output.stdout).unwrap();
    let stdlib = Path::new(stdlib.trim());
    let tree = tempfile::tempdir().unwrap();
    for package in ["asyncio", "email", "json", "importlib", "concurrent"] {
        let copy = common::copy_tree(&stdlib.join(package));
        std::fs::rename(copy.path(), tree.path().join(package)).unwrap();
    }
    let service = Service::open(tree.path()).unwrap();
    let compared = assert_consistent(&service);
    assert!(compared > 500, "only {compared} relationships compared");
}

/// The import graph's stage alone (`xfile deps --imports`, `dependents
/// --imports`, which parse only the files the answer reads) gives every
/// import the full index gives, as the full index gives it but for what
/// following re-exports adds.
#[test]
fn the_import_graph_alone_gives_every_import_of_the_full_index() {
    use xfile::service::import_graph;
    use xfile::service::model::{Relationship, RelationshipType};
    // A full answer's import as the import graph has it: no re-export
    // followed.
    let unfollowed = |r: &Relationship| {
        let mut r = r.clone();
        r.target_line = None;
        r.metadata.defined_in = None;
        line(&r)
    };
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut roots: Vec<_> = std::fs::read_dir(&fixtures)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    roots.sort();
    roots.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sample_project"));
    let (mut compared, mut outward) = (0, 0);
    for root in roots {
        let Ok(service) = Service::open(&root) else {
            continue;
        };
        for file in service.engine().paths() {
            let imports = |rs: Vec<Relationship>| -> Vec<String> {
                rs.iter()
                    .filter(|r| r.relationship_type == RelationshipType::Import)
                    .map(unfollowed)
                    .collect()
            };
            let full = imports(service.dependencies(file).unwrap());
            let staged = import_graph::dependencies(&root, file).unwrap();
            assert!(staged.iter().all(|r| r.metadata.defined_in.is_none()));
            assert_eq!(
                staged.iter().map(line).collect::<Vec<_>>(),
                full,
                "{}: imports of {file}",
                root.display()
            );
            compared += full.len();
            let mut full: Vec<String> = imports(service.dependents(file).unwrap())
                .into_iter()
                .filter(|l| l.split(' ').nth(2) == Some(file))
                .collect();
            full.sort();
            let mut staged: Vec<String> = import_graph::dependents(&root, file)
                .unwrap()
                .iter()
                .map(line)
                .collect();
            staged.sort();
            assert_eq!(staged, full, "{}: importers of {file}", root.display());
            outward += full.len();
        }
    }
    assert!(compared > 300 && outward > 100, "{compared} and {outward}");
}
