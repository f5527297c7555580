//! Base facts, before any rule stage: each file's own (`module_facts`,
//! then `file_base_facts` on its search path) and the project-level ones
//! about paths and settings (test modules, layers, entry points).

use std::sync::Arc;

use super::{Bucket, Db, Project, SourceFile};
use crate::base_facts;
use crate::datalog::{InputFact, Node, TestModule, Value};
use crate::entry_points;
use crate::layers::LayerMatcher;
use crate::modules::{self, SearchPath};
use crate::resolve::{DbLayout, Resolver};
use crate::test_modules::TestMatcher;
use xfile_python::{self as python, ModuleFacts};

/// Parse and extract everything about one file, unless its facts were
/// handed in with its text. Shared, so a cache can keep them without a copy.
#[salsa::tracked(returns(ref))]
pub(crate) fn module_facts(db: &dyn Db, file: SourceFile) -> Arc<ModuleFacts> {
    db.log().executed("module_facts", Some(file.path(db)));
    match file.preset(db) {
        Some(facts) => Arc::clone(facts),
        // The text is held until these facts exist; read back only if salsa
        // ever made them again without a new text.
        None => {
            let text = file.text(db).get(file.path(db), db.text_loader());
            Arc::new(python::extract(text.as_deref().unwrap_or_default()))
        }
    }
}

/// The project's test-module matcher, built once per pytest configuration.
#[salsa::tracked(returns(ref))]
pub(crate) fn test_matcher(db: &dyn Db, project: Project) -> TestMatcher {
    db.log().executed("test_matcher", None);
    TestMatcher::new(project.test_patterns(db))
}

/// Where `path` (which need not be a project file) searches its imports.
pub(crate) fn search_path_of(
    db: &dyn Db,
    project: Project,
    path: &str,
    is_test: bool,
) -> SearchPath {
    modules::search_path(
        &DbLayout { db },
        project.sub_projects(db),
        project.extra_search_paths(db),
        path,
        is_test,
    )
}

/// Where one file searches its imports: a query of its own, so that a
/// change to the test patterns or the sub-projects re-resolves only the
/// files whose search path changed.
#[salsa::tracked(returns(ref))]
pub(crate) fn file_search_path(db: &dyn Db, project: Project, file: SourceFile) -> SearchPath {
    let path = file.path(db);
    let is_test = test_matcher(db, project).is_test(path);
    search_path_of(db, project, path, is_test)
}

/// One file's Datalog base facts, with the nodes they name.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BaseFacts {
    facts: Vec<InputFact>,
    keys: Arc<[Value]>,
}

impl BaseFacts {
    pub(crate) fn facts(&self) -> &[InputFact] {
        &self.facts
    }

    /// Every node (file or marker) in the facts, sorted: what ties other
    /// tuples to the file. Every `resolve` relation and project-level fact
    /// the file rules select by its first argument has a node here, so
    /// names and sites need not be keys.
    pub(crate) fn keys(&self) -> &Arc<[Value]> {
        &self.keys
    }
}

/// The Datalog base facts of one file: its imports resolved to modules, its
/// module-level bindings, and the first hop of its calls and class bases.
/// The keys are made with them rather than in a query of their own: one
/// memo fewer per file for every first edit to verify.
#[salsa::tracked(returns(ref))]
pub(crate) fn file_base_facts(db: &dyn Db, project: Project, file: SourceFile) -> BaseFacts {
    db.log().executed("file_base_facts", Some(file.path(db)));
    db.facts_made().report(file);
    let path = file.path(db);
    let resolver = Resolver::new(db, path, file_search_path(db, project, file));
    let mut facts = base_facts::build(db.interner(), &resolver, path, file.semantic(db));
    // Kept for the file's life (memoized): no spare room from pushing.
    facts.shrink_to_fit();
    let mut keys: Vec<Value> = facts
        .iter()
        .flat_map(InputFact::values)
        .filter(|v| matches!(v, Value::Node(_)))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    // Copied into a block of its size: collected with every repeat (a
    // file's facts name its own node in almost every tuple), the vector
    // kept ~20 MB of spare room on Django.
    BaseFacts {
        facts,
        keys: keys.into(),
    }
}

/// Every indexed file, bucket by bucket. It reads every bucket's file
/// list: for what runs when asked (queries, explanations), not for what
/// runs on every update.
pub(crate) fn all_files(db: &dyn Db, project: Project) -> impl Iterator<Item = SourceFile> + '_ {
    super::gathered_buckets(db, project)
        .iter()
        .flat_map(move |bucket| bucket.files(db).iter().copied())
}

/// The project-level facts about one bucket's files: `TestModule` and
/// `InLayer`. They depend on paths and configuration, not on file
/// contents, so a change to the pytest configuration re-runs no
/// resolution, and a new file re-runs only its bucket's. Each file's are
/// decided here, not in a query of the file's own: matching a path is
/// cheaper than a memo that every first edit would verify for every file.
#[salsa::tracked(returns(ref))]
pub(crate) fn bucket_path_facts(db: &dyn Db, project: Project, bucket: Bucket) -> Vec<InputFact> {
    db.log().executed("bucket_path_facts", None);
    let (tests, layers) = (test_matcher(db, project), layer_matcher(db, project));
    let interner = db.interner();
    let mut facts = Vec::new();
    for &file in bucket.files(db) {
        let path = file.path(db);
        if tests.is_test(path) {
            facts.push(InputFact::TestModule(TestModule(interner.node(path))));
        }
        facts.extend(layers.in_layer(interner, path));
    }
    facts
}

/// The configured layers, compiled once per configuration.
#[salsa::tracked(returns(ref))]
pub(crate) fn layer_matcher(db: &dyn Db, project: Project) -> LayerMatcher {
    db.log().executed("layer_matcher", None);
    LayerMatcher::new(project.layers(db))
}

/// Project-level base facts of the declared entry points, each object
/// reference's module resolved as an import from the declaring
/// pyproject's directory would be.
#[salsa::tracked(returns(ref))]
pub(crate) fn entry_point_facts(db: &dyn Db, project: Project) -> Vec<InputFact> {
    db.log().executed("entry_point_facts", None);
    entry_points::facts(db.interner(), project.entry_points(db), |spec, module| {
        let search = search_path_of(db, project, &spec.pyproject, false);
        Resolver::new(db, &spec.pyproject, &search).absolute(module)
    })
}

/// Project-level base facts (test modules, layers and their order, entry
/// points): facts about paths and configuration rather than one file's
/// code.
#[salsa::tracked(returns(ref))]
pub(crate) fn project_facts(db: &dyn Db, project: Project) -> Arc<Vec<InputFact>> {
    db.log().executed("project_facts", None);
    let mut facts: Vec<InputFact> = layer_matcher(db, project).above(db.interner());
    for &bucket in super::gathered_buckets(db, project) {
        facts.extend_from_slice(bucket_path_facts(db, project, bucket));
    }
    facts.extend_from_slice(entry_point_facts(db, project));
    facts.sort_unstable_by_key(|f| (f.first(), *f));
    Arc::new(facts)
}

/// The project's files with their node ids, ordered by node: concatenated
/// in this order, most relations (keyed by their file) come out already
/// sorted, and a node's file is found by binary search.
#[salsa::tracked(returns(ref))]
pub(crate) fn files_by_node(db: &dyn Db, project: Project) -> Vec<(Node, SourceFile)> {
    db.log().executed("files_by_node", None);
    let mut files: Vec<(Node, SourceFile)> = all_files(db, project)
        .map(|file| (db.interner().node(file.path(db)), file))
        .collect();
    files.sort_unstable_by_key(|(node, _)| *node);
    files
}
