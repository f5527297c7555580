//! Salsa early cut-off and incremental-equals-from-scratch (DESIGN invariant 6).

mod common;

use xfile::engine::Engine;
use xfile::engine::datalog::{RELATIONS, RelationKind};
use xfile::service::{query, relationships};
use xfile::workspace::discover;

fn engine_for(fixture: &str) -> Engine {
    let root = common::fixture(fixture).canonicalize().unwrap();
    let mut engine = Engine::new(Vec::new());
    let files = discover::discover(&root, &[]).files;
    engine.set_files(files.into_iter().map(|f| (f.path, f.text)));
    engine.analyze();
    engine
}

fn count(log: &[String], query: &str) -> usize {
    log.iter()
        .filter(|entry| entry.starts_with(&format!("{query}(")))
        .count()
}

fn from_scratch(engine: &Engine) -> Engine {
    let mut fresh = Engine::new(Vec::new());
    let files: Vec<(String, String)> = engine
        .paths()
        .map(|p| (p.to_string(), engine.text(p).unwrap().to_string()))
        .collect();
    fresh.set_files(files);
    fresh.analyze();
    fresh
}

/// Every output relation, rendered to paths and names (interned ids differ
/// between engines), sorted.
fn rendered_outputs(engine: &Engine) -> Vec<(String, Vec<String>)> {
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

fn assert_same_as_scratch(engine: &Engine) {
    let fresh = from_scratch(engine);
    assert_eq!(relationships::all(engine), relationships::all(&fresh));
    assert_eq!(rendered_outputs(engine), rendered_outputs(&fresh));
}

#[test]
fn body_only_edit_reruns_no_resolution_and_no_datalog() {
    let mut engine = engine_for("reexport_chain");
    let path = "api/impl/core.py";
    let text = engine.text(path).unwrap().to_string();
    engine.record_executions();
    // A changed body that also shifts every later line down by one.
    let edited = text.replace(
        "    return request\n",
        "    request = request or {}\n\n    return request\n",
    );
    assert_ne!(edited, text);
    engine.set_file(path, edited);
    engine.analyze();
    let log = engine.take_executions();
    assert_eq!(count(&log, "module_facts"), 1, "{log:?}");
    assert_eq!(count(&log, "file_base_facts"), 0, "{log:?}");
    assert_eq!(count(&log, "program"), 0, "{log:?}");
    // Locations are looked up late, so the shifted definition line shows.
    let rels = relationships::all(&engine);
    let resource = rels
        .iter()
        .find(|r| r.source_file == "client.py" && r.relationship_type.as_str() == "inheritance")
        .unwrap();
    assert_eq!(resource.target_line, Some(8));
}

#[test]
fn import_edit_reresolves_only_the_edited_file_then_reruns_datalog() {
    let mut engine = engine_for("reexport_chain");
    engine.record_executions();
    let text = engine.text("client.py").unwrap().to_string();
    engine.set_file(
        "client.py",
        text.replace(
            "from api import handler\n",
            "from api.impl.core import handler\n",
        ),
    );
    engine.analyze();
    let log = engine.take_executions();
    assert_eq!(count(&log, "file_base_facts"), 1, "{log:?}");
    assert_eq!(count(&log, "program"), 1, "{log:?}");
    let rels = relationships::all(&engine);
    assert!(rels.iter().any(|r| r.source_file == "client.py"
        && r.target_file == "api/impl/core.py"
        && r.line_number == 1));
}

#[test]
fn touch_without_change_costs_nothing() {
    let mut engine = engine_for("aliases");
    let text = engine.text("checkout.py").unwrap().to_string();
    engine.record_executions();
    engine.set_file("checkout.py", text);
    engine.analyze();
    assert!(engine.take_executions().is_empty());
}

#[test]
fn edits_creations_and_deletions_match_a_fresh_index() {
    let mut engine = engine_for("reexport_chain");
    // Delete the defining file: the chain breaks, nothing dangles.
    engine.remove_file("api/impl/core.py");
    engine.analyze();
    assert_same_as_scratch(&engine);
    assert!(
        relationships::all(&engine)
            .iter()
            .all(|r| r.target_file != "api/impl/core.py")
    );
    // Re-create it under a new name and point the package at it.
    engine.set_file(
        "api/impl/engine.py",
        "def handler(request):\n    return request\n\n\nclass Resource:\n    pass\n".into(),
    );
    engine.set_file(
        "api/impl/__init__.py",
        "from .engine import handler, Resource\n".into(),
    );
    engine.analyze();
    assert_same_as_scratch(&engine);
    let rels = relationships::all(&engine);
    assert!(rels.iter().any(|r| r.source_file == "client.py"
        && r.target_file == "api/impl/engine.py"
        && r.relationship_type.as_str() == "function_call"));
    // A syntax error drops the file's facts; fixing it brings them back.
    engine.set_file("client.py", "from api import (\n".into());
    engine.analyze();
    assert_same_as_scratch(&engine);
    assert!(
        relationships::all(&engine)
            .iter()
            .all(|r| r.source_file != "client.py")
    );
}
