//! Salsa early cut-off and incremental-equals-from-scratch: an update gives what a fresh index gives.

use std::collections::BTreeMap;

use crate::common;

use xfile::engine::{Change, Engine, Recomputation, TestPatterns};
use xfile::service::relationships;
use xfile::workspace::NoticeKind;
use xfile::workspace::discover;

fn engine_for(fixture: &str) -> Engine {
    engine_at(&common::fixture(fixture))
}

fn engine_at(root: &std::path::Path) -> Engine {
    let root = root.canonicalize().unwrap();
    let mut engine = Engine::new(Vec::new());
    let found = discover::discover(&root, &[]);
    let entry_points = found
        .markers
        .iter()
        .filter(|marker| marker.ends_with("pyproject.toml"))
        .flat_map(|marker| {
            let text = std::fs::read_to_string(root.join(marker)).unwrap();
            xfile::engine::parse_entry_points(marker, &text).unwrap()
        })
        .collect();
    engine.apply(Change {
        sub_projects: Some(discover::sub_project_dirs(&found.markers)),
        entry_points: Some(entry_points),
        unindexed: Some(
            found
                .notices
                .iter()
                .filter(|n| n.kind == NoticeKind::TooLarge)
                .map(|n| n.path.clone())
                .collect(),
        ),
        ..Change::texts(found.files.into_iter().map(|f| (f.path, f.text)))
    });
    engine
}

fn count(log: &[String], query: &str) -> usize {
    log.iter()
        .filter(|entry| *entry == query || entry.starts_with(&format!("{query}(")))
        .count()
}

/// A fresh index of what `engine` holds, recording its executions (take
/// them with `take_executions`).
fn from_scratch(engine: &Engine) -> Engine {
    let mut fresh = Engine::new(Vec::new());
    fresh.record_executions();
    let files: Vec<(String, String)> = engine
        .paths()
        .map(|p| (p.to_string(), engine.text(p).unwrap().to_string()))
        .collect();
    fresh.apply(Change {
        test_patterns: Some(engine.test_patterns().clone()),
        sub_projects: Some(engine.sub_projects().to_vec()),
        entry_points: Some(engine.entry_points().to_vec()),
        unindexed: Some(engine.unindexed().to_vec()),
        ..Change::texts(files)
    });
    fresh
}

/// What applying `change` ran and reused.
fn recorded(engine: &mut Engine, change: Change) -> Recomputation {
    engine.record_executions();
    engine.apply(change);
    engine.take_executions()
}

/// How many memos of `query` a recorded update verified without re-running.
fn walked(log: &Recomputation, query: &str) -> usize {
    log.reused.get(query).copied().unwrap_or(0)
}

fn assert_same_as_scratch(engine: &Engine) {
    common::assert_stages_match_reference(engine);
    let fresh = from_scratch(engine);
    assert_eq!(relationships::all(engine), relationships::all(&fresh));
    assert_eq!(
        common::rendered_outputs(engine),
        common::rendered_outputs(&fresh)
    );
}

#[test]
fn body_only_edit_reruns_no_resolution_and_no_datalog() {
    let mut engine = engine_for("reexport_chain");
    let path = "api/impl/core.py";
    let text = engine.text(path).unwrap().to_string();
    // A changed body that also shifts every later line down by one.
    let edited = text.replace(
        "    return request\n",
        "    request = request or {}\n\n    return request\n",
    );
    assert_ne!(edited, text);
    let log = recorded(&mut engine, Change::text(path, edited)).executed;
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
    let text = engine.text("client.py").unwrap().to_string();
    let edited = text.replace(
        "from api import handler\n",
        "from api.impl.core import handler\n",
    );
    let log = recorded(&mut engine, Change::text("client.py", edited)).executed;
    assert_eq!(count(&log, "file_base_facts"), 1, "{log:?}");
    assert_eq!(count(&log, "file_stage"), 1, "{log:?}");
    // The union of every relation is built only when a query, an
    // explanation or an export asks for it, not on the update path.
    assert_eq!(count(&log, "program"), 0, "{log:?}");
    let rels = relationships::all(&engine);
    assert!(rels.iter().any(|r| r.source_file == "client.py"
        && r.target_file == "api/impl/core.py"
        && r.line_number == 1));
}

/// The first edit of a file of the index gives the file a new input, low
/// from the start, rather than writing over the high inputs the index
/// wrote (which would make salsa walk every file's chain down to the
/// resolutions and directory listings): neither that edit nor the next
/// walks another file's search path or resolutions.
#[test]
fn a_first_edit_and_the_next_walk_no_other_files_resolutions() {
    let mut engine = engine_for("reexport_chain");
    let text = engine.text("client.py").unwrap().to_string();
    let edit =
        |engine: &mut Engine, text: String| recorded(engine, Change::text("client.py", text));
    assert!(engine.needs_preparing("client.py"));
    let first = edit(
        &mut engine,
        text.replace(
            "from api import handler\n",
            "from api.impl.core import handler\n",
        ),
    );
    assert_same_as_scratch(&engine);
    assert!(!engine.needs_preparing("client.py"));
    let second = edit(&mut engine, text);
    assert_same_as_scratch(&engine);
    for log in [&first, &second] {
        assert!(walked(log, "file_search_path") <= 1, "{log:?}");
    }
    // The first edit checks no more resolutions than a later one does.
    assert!(
        walked(&first, "resolve") <= walked(&second, "resolve"),
        "first {first:?}, second {second:?}"
    );
}

#[test]
fn touch_without_change_costs_nothing() {
    let mut engine = engine_for("aliases");
    let text = engine.text("checkout.py").unwrap().to_string();
    engine.record_executions();
    let applied = engine.apply(Change::text("checkout.py", text));
    assert!(applied.modified.is_empty(), "{applied:?}");
    assert!(engine.take_executions().executed.is_empty());
}

#[test]
fn edits_creations_and_deletions_match_a_fresh_index() {
    let mut engine = engine_for("reexport_chain");
    // Delete the defining file: the chain breaks, nothing dangles.
    engine.apply(Change::removing(["api/impl/core.py"]));
    assert_same_as_scratch(&engine);
    assert!(
        relationships::all(&engine)
            .iter()
            .all(|r| r.target_file != "api/impl/core.py")
    );
    // Re-create it under a new name and point the package at it.
    engine.apply(Change::texts([
        (
            "api/impl/engine.py".to_string(),
            "def handler(request):\n    return request\n\n\nclass Resource:\n    pass\n"
                .to_string(),
        ),
        (
            "api/impl/__init__.py".to_string(),
            "from .engine import handler, Resource\n".to_string(),
        ),
    ]));
    assert_same_as_scratch(&engine);
    let rels = relationships::all(&engine);
    assert!(rels.iter().any(|r| r.source_file == "client.py"
        && r.target_file == "api/impl/engine.py"
        && r.relationship_type.as_str() == "function_call"));
    // A syntax error drops the file's facts; fixing it brings them back.
    engine.apply(Change::text("client.py", "from api import (\n"));
    assert_same_as_scratch(&engine);
    assert!(
        relationships::all(&engine)
            .iter()
            .all(|r| r.source_file != "client.py")
    );
}

/// The files whose `file_base_facts` executed, sorted, each once: an
/// importer of the first index whose resolutions changed is given a new
/// input (`Engine::replacement`), whose base facts are made again.
fn resolved(log: &[String]) -> Vec<&str> {
    let mut files: Vec<&str> = log
        .iter()
        .filter_map(|e| e.strip_prefix("file_base_facts(")?.strip_suffix(')'))
        .collect();
    files.sort();
    files.dedup();
    files
}

/// Resolution is memoized per (search roots, module name) over
/// per-directory inputs: a new or deleted file re-resolves only the files
/// whose resolutions it changes; every other file's facts are re-verified,
/// not recomputed, and test-module and layer membership are decided for
/// the new file alone.
#[test]
fn a_new_or_deleted_file_re_resolves_only_the_files_it_affects() {
    let mut engine = engine_for("granular_resolution");
    // main.py imports pkg.later, which does not exist yet.
    let log = recorded(&mut engine, Change::text("pkg/later.py", "VALUE = 1\n")).executed;
    assert_eq!(resolved(&log), ["main.py", "pkg/later.py"], "{log:?}");
    assert_eq!(count(&log, "test_matcher"), 0, "{log:?}");
    assert_eq!(count(&log, "layer_matcher"), 0, "{log:?}");
    assert_same_as_scratch(&engine);
    // A module nobody imports, in another directory: only itself.
    let log = recorded(&mut engine, Change::text("other/extra.py", "import pkg\n")).executed;
    assert_eq!(resolved(&log), ["other/extra.py"], "{log:?}");
    assert_same_as_scratch(&engine);
    // Deleting pkg/util.py changes what `from . import util` in
    // pkg/core.py names; other/user.py imports the name `util` from
    // pkg/core.py, which does not depend on the file.
    let log = recorded(&mut engine, Change::removing(["pkg/util.py"])).executed;
    assert_eq!(resolved(&log), ["pkg/core.py"], "{log:?}");
    assert_same_as_scratch(&engine);
    // A new package directory: only the importer of its name moves.
    let log = recorded(&mut engine, Change::text("pkg/later/__init__.py", "")).executed;
    assert_eq!(
        resolved(&log),
        ["main.py", "pkg/later/__init__.py"],
        "{log:?}"
    );
    assert_same_as_scratch(&engine);
}

/// Module paths are inputs one by one (engine/tree.rs): a file created,
/// renamed or deleted at a path no resolution looked at writes low inputs
/// that no other file's chain reads, so salsa verifies every other chain
/// of the index in O(1) instead of walking it down to the resolutions it
/// read. Only a change to what the index wrote walks them, once per input:
/// here the first new name in `other/`. The files added since the index
/// are low like edited ones: their own chains are walked.
#[test]
fn a_file_nobody_looked_for_walks_no_other_files_chain() {
    let mut engine = engine_for("granular_resolution");
    let step = |engine: &mut Engine, change: Change| {
        let log = recorded(engine, change);
        assert_same_as_scratch(engine);
        log
    };
    let first = step(&mut engine, Change::text("other/extra.py", "import pkg\n"));
    // Every resolution of the index.
    assert_eq!(walked(&first, "resolve"), 8, "{first:?}");
    // Each change, with how many files added since the index exist before it.
    let renamed = |from: &str, to: &str| Change {
        removed: vec![from.to_string()],
        ..Change::text(to, "import pkg\n")
    };
    let changes: [(&str, usize, Change); 5] = [
        ("renamed", 1, renamed("other/extra.py", "other/spare.py")),
        (
            "renamed back",
            1,
            renamed("other/spare.py", "other/extra.py"),
        ),
        (
            "created beside",
            1,
            Change::text("other/third.py", "import pkg\n"),
        ),
        (
            "created in a new directory",
            2,
            Change::text("other/sub/deep.py", "import pkg\n"),
        ),
        (
            "deleted",
            3,
            Change::removing(["other/extra.py", "other/sub/deep.py"]),
        ),
    ];
    for (what, added, change) in changes {
        let reused = step(&mut engine, change);
        // At most a new file's one resolution, shared with main.py and
        // verified in O(1); no search path of a file of the index, the
        // empty modules' included (their chains read high inputs only).
        assert!(walked(&reused, "resolve") <= 1, "{what}: {reused:?}");
        assert!(
            walked(&reused, "file_search_path") <= added,
            "{what}: {reused:?}"
        );
    }
}

/// Test modules follow the pytest settings and the file set, and
/// changing the settings re-resolves only files whose search path moved.
#[test]
fn pytest_settings_and_file_set_changes_match_a_fresh_index() {
    let mut engine = engine_for("warnings_pytest_ini");
    let warned = |engine: &Engine| {
        let mut files: Vec<String> = engine
            .program()
            .outputs
            .warning()
            .iter()
            .map(|t| engine.interner().node_text(t.0).to_string())
            .collect();
        files.sort();
        files.dedup();
        files
    };
    // No settings yet: only the default patterns, which match none here.
    assert_eq!(
        warned(&engine),
        ["integration/flows.py", "pkg/app.py", "pkg/check_app.py"]
    );
    let patterns = TestPatterns {
        python_files: vec!["check_*.py".into()],
        testpaths: vec!["integration".into()],
    };
    let log = recorded(
        &mut engine,
        Change {
            test_patterns: Some(patterns),
            ..Change::default()
        },
    )
    .executed;
    // Only integration/flows.py, now a test module outside any package,
    // gets a new search path (its pytest basedir): no other file is
    // re-resolved.
    let resolved: Vec<&String> = log
        .iter()
        .filter(|e| e.starts_with("file_base_facts("))
        .collect();
    assert_eq!(
        resolved,
        ["file_base_facts(integration/flows.py)"],
        "{log:?}"
    );
    assert_eq!(count(&log, "project_facts"), 1, "{log:?}");
    assert_eq!(warned(&engine), ["pkg/app.py"]);
    assert_same_as_scratch(&engine);
    // A new file under a testpath is a test module; removing it forgets it.
    engine.apply(Change::texts([
        (
            "integration/more.py".to_string(),
            "exec(code)\n".to_string(),
        ),
        ("pkg/more.py".to_string(), "exec(code)\n".to_string()),
    ]));
    assert_eq!(warned(&engine), ["pkg/app.py", "pkg/more.py"]);
    assert_same_as_scratch(&engine);
    engine.apply(Change {
        removed: vec!["pkg/more.py".to_string()],
        test_patterns: Some(TestPatterns::default()),
        ..Change::default()
    });
    assert_eq!(
        warned(&engine),
        [
            "integration/flows.py",
            "integration/more.py",
            "pkg/app.py",
            "pkg/check_app.py"
        ]
    );
    assert_same_as_scratch(&engine);
}

/// A small deterministic generator (no dependency needed for test noise).
const SNIPPETS: &[&str] = &[
    "from app.utils import retry_with_backoff\n",
    "from .models import *\n",
    "import app.models\n",
    "from app.storage import Storage\n",
    "from . import admin\n",
    "from .bot import EchoBot\n",
    "retry_with_backoff(print)\n",
    "Storage()\n",
    "app.models.User(id=1)\n",
    "class Extra(EchoBot):\n    pass\n",
    "__all__ = [\"User\"]\n",
    "def (:\n",
    "if TYPE_CHECKING:\n    from app.admin import AdminBot\n",
    "getattr(app, name)()\n",
    "app.models.User = None\n",
    "exec(code)\n",
    "@retry_with_backoff\ndef wrapped():\n    pass\n",
    // Resolve only inside a sub-project, or to a module too large to index.
    "import models\n",
    "from retry import retry_with_backoff\n",
    "import app.huge\n",
    // Modules that do not exist until the test creates them, in a known
    // directory and in a new one: an import names a path first, the file
    // comes later (engine/tree.rs creates its input then).
    "from app.later import helper\n",
    "import app.pending.mod\n",
];

/// Directories the randomized test turns into sub-projects and back.
const SUB_PROJECTS: &[&str] = &["app", "app/utils", "tests"];

/// Incremental equals from scratch: random edits, creations, renames, deletions,
/// re-creations and syntax errors; after every batch each relation equals
/// a fresh index's. The engine gets each batch as one change, what the
/// batch left, as the service hands over what it finds on disk.
#[test]
fn randomized_edits_match_a_fresh_index() {
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sample_project");
    let mut engine = engine_at(&sample);
    let mut rng = common::Lcg(42);
    let mut removed: Vec<(String, String)> = Vec::new();
    for batch in 0..40 {
        let mut texts: BTreeMap<String, String> = engine
            .paths()
            .map(|p| (p.to_string(), engine.text(p).unwrap().to_string()))
            .collect();
        let mut sub_projects = engine.sub_projects().to_vec();
        let mut unindexed = engine.unindexed().to_vec();
        for _ in 0..8 {
            let paths: Vec<String> = texts.keys().cloned().collect();
            let path = paths[rng.below(paths.len())].clone();
            let text = texts[&path].clone();
            match rng.below(8) {
                0 | 1 => {
                    let snippet = SNIPPETS[rng.below(SNIPPETS.len())];
                    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
                    let at = rng.below(lines.len() + 1);
                    lines.insert(at.min(lines.len()), snippet);
                    texts.insert(path, lines.concat());
                }
                2 => {
                    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
                    if !lines.is_empty() {
                        lines.remove(rng.below(lines.len()));
                    }
                    texts.insert(path, lines.concat());
                }
                3 => {
                    let renamed = text.replacen("def ", "def renamed_", 1);
                    texts.insert(path, renamed);
                }
                4 if paths.len() > 3 => {
                    texts.remove(&path);
                    removed.push((path, text));
                }
                5 => {
                    // A sub-project marker appears or goes.
                    let dir = SUB_PROJECTS[rng.below(SUB_PROJECTS.len())].to_string();
                    match sub_projects.iter().position(|d| *d == dir) {
                        Some(at) => {
                            sub_projects.remove(at);
                        }
                        None => sub_projects.push(dir),
                    }
                }
                6 => {
                    // A module grows past the size limit, or shrinks back.
                    unindexed = if unindexed.is_empty() {
                        vec!["app/huge.py".to_string()]
                    } else {
                        Vec::new()
                    };
                }
                7 if !removed.is_empty() && rng.below(2) == 0 => {
                    // A deleted file comes back where its importers look.
                    let (path, text) = removed.swap_remove(rng.below(removed.len()));
                    texts.insert(path, text);
                }
                _ => {
                    // Some new files are test modules; some are the
                    // modules snippets import before they exist.
                    let new_path = match rng.below(5) {
                        0 => format!("tests/test_new_{batch}.py"),
                        3 => "app/later.py".to_string(),
                        4 => "app/pending/mod.py".to_string(),
                        n => format!("app/new_{batch}_{n}.py"),
                    };
                    let body: String = (0..3)
                        .map(|_| SNIPPETS[rng.below(SNIPPETS.len())])
                        .collect();
                    texts.insert(new_path, body);
                }
            }
        }
        let gone = engine
            .paths()
            .filter(|p| !texts.contains_key(*p))
            .map(str::to_string)
            .collect();
        engine.apply(Change {
            removed: gone,
            sub_projects: Some(sub_projects),
            unindexed: Some(unindexed),
            ..Change::texts(texts)
        });
        assert_same_as_scratch(&engine);
    }
}

/// Every fixture, evaluated in stages, derives what the reference program
/// (all rules in one crepe program) derives: the `file` stage's rules only
/// join what its inputs carry.
#[test]
fn staged_evaluation_matches_the_reference_program_on_every_fixture() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut checked = 0;
    for entry in std::fs::read_dir(fixtures).unwrap().flatten() {
        if entry.path().is_dir() {
            common::assert_stages_match_reference(&engine_at(&entry.path()));
            checked += 1;
        }
    }
    assert!(checked > 20, "{checked} fixtures");
}

/// Modules and names the resolution edits below draw from: names the
/// fixtures define, re-export and star-import.
const NAMES: &[&str] = &[
    "CharField",
    "IntField",
    "Model",
    "Index",
    "Point",
    "f",
    "handler",
    "Resource",
    "price",
    "helper",
    "Storage",
];

/// A statement about resolution: a star import, a re-export, an
/// `__all__` (listed or gathered from another module's), a definition.
fn resolution_snippet(rng: &mut common::Lcg, modules: &[String]) -> String {
    let module = &modules[rng.below(modules.len())];
    let name = NAMES[rng.below(NAMES.len())];
    match rng.below(8) {
        0 | 1 => format!("from {module} import *\n"),
        2 | 3 => format!("from {module} import {name}\n"),
        4 => format!("__all__ = [\"{name}\"]\n"),
        5 => {
            format!("from {module} import __all__ as gathered\n__all__ = gathered + [\"{name}\"]\n")
        }
        6 => format!("class {name}:\n    pass\n"),
        _ => format!("{name} = None\n"),
    }
}

/// The resolve stage re-runs only over the parts of its facts an edit
/// reached (`engine/resolve_parts.rs`): after each
/// random edit to re-exports, star imports, `__all__` lists and their
/// inclusions, ambiguous names, signals and hooks, every relation equals a
/// fresh index's and every stage's tuples the reference program's. Most
/// updates read only part of the facts.
#[test]
fn resolution_by_parts_matches_a_fresh_index_after_each_edit() {
    let mut partial = 0;
    let mut updates = 0;
    for fixture in [
        "gathered_all",
        "star_ambiguity",
        "reexport_chain",
        "wildcard",
        "aliases",
        "string_links",
    ] {
        let mut engine = engine_for(fixture);
        let mut rng = common::Lcg(7);
        for step in 0..50 {
            let paths: Vec<String> = engine.paths().map(str::to_string).collect();
            let modules: Vec<String> = paths.iter().map(|p| engine.module_name(p)).collect();
            let path = paths[rng.below(paths.len())].clone();
            let text = engine.text(&path).unwrap_or_default().to_string();
            let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
            let change = match rng.below(6) {
                0..=2 => {
                    let at = rng.below(lines.len() + 1).min(lines.len());
                    lines.insert(at, resolution_snippet(&mut rng, &modules));
                    Change::text(path, lines.concat())
                }
                3 if !lines.is_empty() => {
                    lines.remove(rng.below(lines.len()));
                    Change::text(path, lines.concat())
                }
                4 if paths.len() > 3 => Change::removing([path]),
                _ => {
                    let dir = path.rsplit_once('/').map_or("", |(dir, _)| dir);
                    let new_path = match dir {
                        "" => format!("new_{step}.py"),
                        dir => format!("{dir}/new_{step}.py"),
                    };
                    let body = resolution_snippet(&mut rng, &modules)
                        + &resolution_snippet(&mut rng, &modules);
                    Change::text(new_path, body)
                }
            };
            let read = recorded(&mut engine, change).resolve_facts_read;
            let fresh = from_scratch(&engine);
            let whole = fresh.take_executions().resolve_facts_read;
            if read > 0 {
                updates += 1;
                if read < whole {
                    partial += 1;
                }
            }
            assert_eq!(
                relationships::all(&engine),
                relationships::all(&fresh),
                "{fixture}, step {step}"
            );
            assert_eq!(
                common::rendered_outputs(&engine),
                common::rendered_outputs(&fresh),
                "{fixture}, step {step}"
            );
            common::assert_stages_match_reference(&engine);
        }
    }
    assert!(
        partial * 2 > updates,
        "only {partial} of {updates} updates re-ran part of the resolve stage"
    );
}

/// What reads every file reads them bucket by bucket (engine/buckets.rs):
/// a new or deleted file re-runs its own bucket's gathering, and every other
/// bucket's is reused without visiting its files. The project is generated
/// because its size is what this exercises: 256 modules, ~4 per bucket,
/// each importing the next.
#[test]
fn a_new_or_deleted_file_visits_only_its_buckets_files() {
    let modules = 256;
    let mut engine = Engine::new(Vec::new());
    engine.apply(Change::texts(
        (0..modules)
            .map(|i| {
                let next = (i + 1) % modules;
                let text = format!("from pkg.m{next} import f{next}\n\n\nclass C{i}:\n    pass\n\n\ndef f{i}():\n    return C{i}()\n");
                (format!("pkg/m{i}.py"), text)
            })
            .chain([("pkg/__init__.py".to_string(), String::new())]),
    ));
    let new_file = || Change::text("pkg/extra.py", "from pkg.m0 import f0\n\nf0()\n");
    // The first new file in `pkg/` changes what the index wrote of the
    // directory (engine/tree.rs): salsa walks every chain once.
    recorded(&mut engine, new_file());
    assert_same_as_scratch(&engine);
    let changes = [
        ("deleted", Change::removing(["pkg/extra.py"])),
        ("created", new_file()),
    ];
    for (what, change) in changes {
        let log = recorded(&mut engine, change);
        assert_same_as_scratch(&engine);
        // One bucket's gathering re-runs, over its few files; before
        // buckets, each gathering re-ran over all 257.
        for query in [
            "bucket_resolve_shares",
            "bucket_classes_shares",
            "bucket_class_inputs",
            "bucket_files_keys",
            "bucket_path_facts",
            "bucket_project_shares",
            "bucket_report_shares",
            "bucket_dependents",
        ] {
            assert_eq!(count(&log.executed, query), 1, "{what}: {query}: {log:?}");
        }
        // The other buckets' values are checked, not recomputed: their
        // files' shares are verified in O(1) each and none runs again.
        for query in ["file_base_facts", "file_context", "file_stage"] {
            let ran: Vec<&String> = log
                .executed
                .iter()
                .filter(|e| e.starts_with(&format!("{query}(")) && !e.contains("pkg/extra.py"))
                .collect();
            assert!(ran.is_empty(), "{what}: {ran:?}");
        }
        // Nor are they walked: the change to the file set is low, so only
        // the memos reading low inputs are checked (the changed bucket's,
        // the added file's chain, the gatherings), not each file's.
        let walked = log.reused.get("file_stage").copied().unwrap_or(0);
        assert!(walked < 32, "{what}: {walked} of 257 files' chains walked");
    }
}

/// The first edit of a file of the index writes over inputs salsa holds
/// high, so it verifies every file's chain down to its search path; a file
/// made ready for editing beforehand (`Engine::prepare_for_edits`, done
/// when a reader expects an edit) pays that walk then, and its first edit
/// walks only the low chains.
/// An edit makes its file's bucket low, and every later edit checks each
/// file of every low bucket (engine/buckets.rs), so a bucket must hold about
/// as many files in a large project as in a small one.
#[test]
fn buckets_hold_as_many_files_in_a_large_project_as_in_a_small_one() {
    let checked_by_an_edit_after_another = |modules: usize| {
        let mut engine = Engine::new(Vec::new());
        engine.apply(Change::texts(
            (0..modules)
                .map(|i| (format!("pkg/m{i}.py"), format!("def f{i}():\n    pass\n")))
                .chain([("pkg/__init__.py".to_string(), String::new())]),
        ));
        for (file, body) in [("pkg/m1.py", "    return 1"), ("pkg/m2.py", "    return 2")] {
            engine.apply(Change::text(file, format!("def f():\n{body}\n")));
        }
        let log = recorded(
            &mut engine,
            Change::text("pkg/m1.py", "def f():\n    return 3\n"),
        );
        walked(&log, "file_base_facts")
    };
    let small = checked_by_an_edit_after_another(1_000);
    let large = checked_by_an_edit_after_another(8_000);
    // The two low buckets: about 2 x 1,000 / 64 files, and 2 x 8,000 / 256
    // with buckets that grow in number; 2 x 8,000 / 64 = 250 if they did not.
    assert!(small <= 60, "{small} files checked of 1,000");
    assert!(large <= 100, "{large} files checked of 8,000");
}

#[test]
fn a_file_prepared_for_editing_walks_no_other_files_chain_on_its_first_edit() {
    let modules = 256;
    let text = |i: usize, extra: &str| {
        let next = i + 1;
        format!(
            "{extra}from pkg.m{next} import f{next}\n\n\nclass C{i}:\n    pass\n\n\ndef f{i}():\n    return C{i}()\n"
        )
    };
    let mut engine = Engine::new(Vec::new());
    engine.apply(Change::texts(
        (0..modules)
            .map(|i| (format!("pkg/m{i}.py"), text(i, "")))
            .chain([("pkg/__init__.py".to_string(), String::new())]),
    ));
    // How many files' search paths an edit verified: one per chain walked.
    let edit = |engine: &mut Engine, i: usize, extra: &str| {
        let log = recorded(engine, Change::text(format!("pkg/m{i}.py"), text(i, extra)));
        assert_same_as_scratch(engine);
        walked(&log, "file_search_path")
    };
    // Unprepared: the first edit gives the file a new input, low from the
    // start, and walks no other file's chain; nor does the next.
    for (round, extra) in ["import os\n", ""].into_iter().enumerate() {
        let walked = edit(&mut engine, 7, extra);
        assert!(walked <= 1, "edit {round}: {walked} of 257 chains walked");
    }

    assert!(engine.needs_preparing("pkg/m9.py"));
    assert_eq!(engine.prepare_for_edits(["pkg/m9.py", "pkg/nowhere.py"]), 1);
    assert!(!engine.needs_preparing("pkg/m9.py"));
    // Prepared once: a second request writes nothing.
    assert_eq!(engine.prepare_for_edits(["pkg/m9.py"]), 0);
    engine.record_executions();
    engine.analyze();
    assert_same_as_scratch(&engine);
    let preparing = engine.take_executions();
    assert!(
        preparing
            .executed
            .iter()
            .all(|q| !q.starts_with("file_stage(") || q.contains("pkg/m9.py")),
        "preparing re-ran another file's rules: {preparing:?}"
    );
    // Its first edit, an import and so a new resolution too, walks only the
    // low chains: those of the two files edited or prepared.
    for (round, extra) in ["import os\n", "import os\nimport sys\n", ""]
        .into_iter()
        .enumerate()
    {
        let walked = edit(&mut engine, 9, extra);
        assert!(walked <= 2, "edit {round}: {walked} of 257 chains walked");
    }
    // A file added after the index is low already.
    engine.apply(Change::text("pkg/late.py", "from pkg.m0 import f0\n"));
    assert!(!engine.needs_preparing("pkg/late.py"));
}

/// An edit that changes what another file of the first index resolves
/// (its importer's `resolved` input, high until then) gives that file a
/// new input too, instead of writing over the high value: no edit walks
/// the chain of a file it did not reach. Writing over it made salsa walk
/// every file's chain.
#[test]
fn an_edit_that_changes_an_importers_resolutions_walks_no_other_files_chain() {
    let modules = 256;
    let text = |i: usize, name: &str| {
        let next = i + 1;
        format!("from pkg.m{next} import f{next}\n\n\ndef {name}():\n    return f{next}()\n")
    };
    let mut engine = Engine::new(Vec::new());
    engine.apply(Change::texts(
        (0..modules)
            .map(|i| (format!("pkg/m{i}.py"), text(i, &format!("f{i}"))))
            .chain([("pkg/__init__.py".to_string(), String::new())]),
    ));
    // m8's own first edit, then renames of the function m7 imports: each
    // changes m7's resolutions, the first over the index's value.
    for (round, name) in ["f8", "g8", "f8", "h8"].into_iter().enumerate() {
        let log = recorded(&mut engine, Change::text("pkg/m8.py", text(8, name)));
        assert_same_as_scratch(&engine);
        // The chains walked are those of the files the edit reached: m8
        // and the files whose resolutions were assembled again (m7, and m6,
        // whose tuples name m7's `f7`).
        let reached = log
            .executed
            .iter()
            .filter(|q| q.starts_with("resolved_input(") && !q.contains("pkg/m8.py"))
            .count()
            + 1;
        let walked = walked(&log, "file_search_path");
        assert!(
            walked <= reached.max(2),
            "edit {round}: {walked} of 257 chains walked, {reached} files reached"
        );
        assert!(reached <= 3, "edit {round}: {reached} files reached");
        if round > 0 {
            assert!(
                log.executed
                    .iter()
                    .any(|q| q == "resolved_input(pkg/m7.py)"),
                "edit {round} left the importer's resolutions: {log:?}"
            );
        }
    }
}

/// A method added to a class makes again the class contexts of the files
/// whose member lookups looked at that class, and no other: the class
/// table is one value for the project, and a context per file read from it
/// re-ran for every file that looks up members, with a walk of every
/// file's chain (the table was an input of the first index).
#[test]
fn a_class_edit_remakes_only_the_contexts_that_looked_at_the_class() {
    let own = |i: usize| {
        format!(
            "class C{i}:\n    def f(self):\n        return 1\n\n\ndef use{i}():\n    return C{i}().f()\n"
        )
    };
    let user = |j: usize| {
        format!(
            "from base import Base\n\n\nclass U{j}(Base):\n    def go(self):\n        return self.run()\n"
        )
    };
    let base = |extra: &str| format!("class Base:\n    def run(self):\n        return 1\n{extra}");
    let mut engine = Engine::new(Vec::new());
    engine.apply(Change::texts(
        (0..100)
            .map(|i| (format!("m{i}.py"), own(i)))
            .chain((0..10).map(|j| (format!("u{j}.py"), user(j))))
            .chain([("base.py".to_string(), base(""))]),
    ));
    let extras = [
        "\n    def stop(self):\n        return 2\n",
        "\n    def stop(self):\n        return 2\n\n    def pause(self):\n        return 3\n",
        "",
    ];
    for (round, extra) in extras.into_iter().enumerate() {
        let log = recorded(&mut engine, Change::text("base.py", base(extra)));
        assert_same_as_scratch(&engine);
        let mut made: Vec<&str> = log
            .executed
            .iter()
            .filter_map(|q| q.strip_prefix("class_context(")?.strip_suffix(')'))
            .collect();
        made.sort();
        made.dedup();
        assert!(
            made.iter().all(|f| *f == "base.py" || f.starts_with('u')),
            "edit {round}: contexts made {made:?}"
        );
        assert!(made.len() >= 10, "edit {round}: contexts made {made:?}");
        // The chains walked: base.py's and its subclasses' files at most.
        let walked = walked(&log, "file_search_path");
        assert!(walked <= 11, "edit {round}: {walked} of 111 chains walked");
    }
}

/// A member's declared type is looked up under the member but recorded as
/// the class the member was found in: a changed return annotation remakes
/// the contexts that reached the member through that class, here as an
/// ancestor in a module the user does not import (so its `resolved` tuples,
/// keyed by the modules it names, do not change).
#[test]
fn a_changed_return_annotation_remakes_the_contexts_that_reached_the_member() {
    let classes = "class A:\n    def value(self):\n        return 1\n\n\nclass B:\n    def value(self):\n        return 2\n";
    let factory = |returns: &str| {
        format!(
            "from a import A, B\n\n\nclass F:\n    def make(self) -> {returns}:\n        return {returns}()\n"
        )
    };
    let child = "from f import F\n\n\nclass G(F):\n    pass\n";
    let user = "from g import G\n\n\ndef use():\n    return G().make().value()\n";
    let mut engine = Engine::new(Vec::new());
    engine.apply(Change::texts([
        ("a.py".to_string(), classes.to_string()),
        ("f.py".to_string(), factory("A")),
        ("g.py".to_string(), child.to_string()),
        ("u.py".to_string(), user.to_string()),
    ]));
    for returns in ["B", "A", "B"] {
        let log = recorded(&mut engine, Change::text("f.py", factory(returns)));
        assert_same_as_scratch(&engine);
        assert!(
            log.executed.iter().any(|q| q == "class_context(u.py)"),
            "-> {returns}: {log:?}"
        );
    }
}

/// A line added above a class moves the sites of its bases; the class
/// stages that read every file's declarations see each file's class
/// sites by rank (`engine/site_ranks.rs`), so the edit re-runs neither
/// the `classes` stage nor the class table, and what is shown keeps the
/// real sites (checked against the reference program, which reads them).
/// A new base is a new declaration and re-runs both.
#[test]
fn a_line_added_above_a_class_re_runs_no_whole_project_class_stage() {
    let mut engine = engine_for("member_calls");
    let text = engine.text("shop/models.py").unwrap().to_string();
    let executed = |engine: &mut Engine, text: String| {
        let log = recorded(engine, Change::text("shop/models.py", text));
        assert_same_as_scratch(engine);
        log.executed
    };
    let whole_project = |executed: &[String]| -> Vec<String> {
        executed
            .iter()
            .filter(|q| *q == "classes_stage" || *q == "class_table")
            .cloned()
            .collect()
    };
    // The first edit lowers the file's durability, and salsa does not
    // keep a value as unchanged when its durability fell: everything above
    // the file runs once (as it does when the file is prepared for edits).
    executed(&mut engine, format!("{text}\nimport os\n"));
    for extra in ["import os\n", "import os\n\n\nimport sys\n", ""] {
        let ran = executed(&mut engine, format!("{extra}{text}"));
        assert!(
            ran.iter().any(|q| q.starts_with("file_base_facts(")),
            "the edit was not analyzed: {ran:?}"
        );
        assert_eq!(
            whole_project(&ran),
            Vec::<String>::new(),
            "{extra:?}: {ran:?}"
        );
    }
    let ran = executed(
        &mut engine,
        text.replace("class Product(Entity):", "class Product(Cached, Entity):"),
    );
    assert_eq!(
        whole_project(&ran),
        ["classes_stage", "class_table"],
        "{ran:?}"
    );
}

/// The first edit after an index re-runs no stage whose inputs it left
/// equal, as later edits do not: the gatherings over the buckets are low
/// from the index on (`Project::low_mark`), so salsa keeps their equal
/// values as unchanged. Before, that edit re-ran the `classes` stage and
/// every stage after a gathering.
#[test]
fn the_first_edit_after_an_index_reruns_no_stage_with_equal_inputs() {
    let mut engine = engine_for("member_calls");
    let mut paths: Vec<String> = engine.paths().map(str::to_string).collect();
    paths.sort();
    for (round, path) in paths.iter().take(3).enumerate() {
        let text = engine.text(path).unwrap().to_string();
        let log = recorded(
            &mut engine,
            Change::text(path, format!("{text}\nimport os\n")),
        );
        assert_same_as_scratch(&engine);
        for stage in [
            "classes_stage",
            "class_table",
            "project_stage",
            "report_stage",
        ] {
            assert_eq!(
                count(&log.executed, stage),
                0,
                "edit {round}, {stage}: {log:?}"
            );
        }
    }
}
