#![allow(dead_code)]

pub mod git_repo;
pub mod http;
pub mod mcp_client;
pub mod raw_mcp;
pub mod runtime;

use std::path::{Path, PathBuf};

use xfile::engine::Engine;
use xfile::engine::datalog::{RELATIONS, RelationKind};
use xfile::service::Service;
use xfile::service::model::Relationship;
use xfile::service::query;

/// Runs `f` on a thread of its own: Err on a panic or after `limit` (a
/// hang), so a test names what hung instead of hanging.
pub fn bounded<T: Send + 'static>(
    limit: std::time::Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .stack_size(8 * 1024 * 1024)
        .spawn(move || {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
            let _ = send.send(outcome);
        })
        .map_err(|e| e.to_string())?;
    match receive.recv_timeout(limit) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(panic)) => Err(format!(
            "panicked: {}",
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
        Err(_) => Err(format!("did not finish within {limit:?} (hang)")),
    }
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

pub fn open(name: &str) -> Service {
    Service::open(&fixture(name)).expect("fixture opens")
}

/// One line per relationship: `src:line:col type target symbol target_line`
/// plus the metadata that is set.
pub fn line(r: &Relationship) -> String {
    let m = &r.metadata;
    let mut extra = Vec::new();
    if let Some(Some(alias)) = &m.alias {
        extra.push(format!("alias={alias}"));
    }
    if let Some(condition) = m.condition {
        extra.push(format!("condition={condition}"));
    }
    if m.wildcard == Some(true) {
        extra.push("wildcard".to_string());
    }
    if let Some(scope) = m.scope.filter(|s| *s != "module") {
        extra.push(format!("scope={scope}"));
    }
    if let Some(defined_in) = &m.defined_in {
        extra.push(format!("defined_in={defined_in}"));
    }
    let mut text = format!(
        "{}:{}:{} {} {} {} {}",
        r.source_file,
        r.line_number,
        r.column,
        r.relationship_type.as_str(),
        r.target_file,
        r.target_symbol.as_deref().unwrap_or("-"),
        r.target_line.map_or("-".to_string(), |l| l.to_string()),
    );
    for e in extra {
        text.push(' ');
        text.push_str(&e);
    }
    text
}

pub fn lines(service: &Service) -> Vec<String> {
    service.relationships().iter().map(line).collect()
}

/// Copies a fixture into a fresh temporary directory.
pub fn copy_fixture(name: &str) -> tempfile::TempDir {
    copy_tree(&fixture(name))
}

/// Copies the sample project into a fresh temporary directory, so tests that
/// write logs leave the repository alone.
pub fn copy_sample() -> tempfile::TempDir {
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sample_project"))
}

pub fn copy_tree(from: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(from, dir.path());
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() == ".cross_file_context_logs" || entry.file_name() == ".xfile_cache" {
            continue;
        }
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Every output relation, rendered to paths and names (interned ids differ
/// between engines), sorted.
pub fn rendered_outputs(engine: &Engine) -> Vec<(String, Vec<String>)> {
    RELATIONS
        .iter()
        .filter(|r| r.kind == RelationKind::Output)
        .map(|r| {
            let mut tuples: Vec<String> = engine
                .program()
                .outputs
                .tuples(r.name)
                .unwrap()
                .iter()
                .map(|t| serde_json::to_string(&query::render(engine, t)).unwrap())
                .collect();
            tuples.sort();
            (r.name.to_string(), tuples)
        })
        .collect()
}

/// The engine evaluates the rules in stages (resolve, per file, project);
/// they must derive exactly what one program with every rule derives.
pub fn assert_stages_match_reference(engine: &Engine) {
    let reference = xfile::engine::datalog::run(engine.program().facts);
    let staged = engine.outputs();
    for relation in RELATIONS.iter().filter(|r| r.kind != RelationKind::Input) {
        assert_eq!(
            staged.tuples(relation.name),
            reference.tuples(relation.name),
            "{} differs between the staged and the reference evaluation",
            relation.name
        );
    }
}

/// A tiny deterministic random generator for the randomized edit tests.
pub struct Lcg(pub u64);

impl Lcg {
    pub fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

/// Every `.py` file below `dir`, links not followed.
pub fn python_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            files.extend(python_files(&path));
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "py") {
            files.push(path);
        }
    }
    files
}

/// Writes `text` to `relative` under `root`, creating its directories.
pub fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, text).unwrap();
}

/// Waits until `done` holds, failing the test after 20 seconds: a test
/// waits for background work to reach a state, never for a time.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `xfile ARGS --root ROOT`, run to its end.
pub fn xfile(root: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_xfile"))
        .args(args)
        .arg("--root")
        .arg(root)
        .output()
        .expect("xfile runs")
}
