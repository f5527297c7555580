//! The salsa database: inputs (one [`SourceFile`] per Python file, one
//! [`Project`]) and the tracked queries that turn them into Datalog base
//! facts and derived relations.
//!
//! Query chain, each memoized per input revision:
//! `module_facts(file)` (parse + extract, from `text`) and, downstream of the
//! location-free `semantic` field, `file_base_facts(file)` (also reads
//! `module_index`) → `program(project)`, which also takes the project-level
//! facts of `test_modules(project)` (paths and pytest settings only) and
//! `layer_facts(project)` (file paths and configured layers).
//!
//! Early cut-off sits at the `semantic` field. The engine writes it after
//! `module_facts` ran for a new text, and only when it differs. Texts have low
//! durability and semantics medium, so a body-only edit touches no medium
//! input: salsa then reuses `program` without walking the per-file queries at
//! all (backdating alone would still re-verify every file's chain).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::base_facts;
use super::datalog::{self, InputFact, Outputs, TestModule};
use super::intern::Interner;
use super::layers::{self, Layer};
use super::modules::ModuleIndex;
use super::test_modules::{TestMatcher, TestPatterns};
use crate::python::{self, ModuleFacts, Semantic};

#[salsa::input(debug)]
pub struct SourceFile {
    /// Root-relative, `/`-separated. Fixed for the input's life: a rename is
    /// a removal plus a new input.
    #[returns(ref)]
    pub path: String,
    #[returns(ref)]
    pub text: String,
    /// What `module_facts(file).semantic` was for the current text; written
    /// by the engine, never by a query.
    #[returns(ref)]
    pub semantic: Arc<Semantic>,
}

#[salsa::input(debug)]
pub struct Project {
    /// All indexed files, sorted by path.
    #[returns(ref)]
    pub files: Vec<SourceFile>,
    /// Extra module search roots from configuration, root-relative.
    #[returns(ref)]
    pub extra_search_paths: Vec<String>,
    /// The project's pytest settings that name test modules (DD-3).
    #[returns(ref)]
    pub test_patterns: TestPatterns,
    /// Architecture layers from configuration, top to bottom.
    #[returns(ref)]
    pub layers: Vec<Layer>,
}

#[salsa::db]
pub trait Db: salsa::Database {
    fn interner(&self) -> &Interner;
    fn log(&self) -> &ExecutionLog;
}

/// What salsa did while recording: for tests, `explain_recomputation` and
/// debug logs.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Recomputation {
    /// Queries that executed, as `query(file)` for per-file queries.
    pub executed: Vec<String>,
    /// Memoized results salsa re-verified and reused, by query name. Queries
    /// whose inputs are all of a durability that did not change are reused
    /// without being visited, so they do not appear here.
    pub reused: BTreeMap<String, usize>,
    /// Time spent evaluating the Datalog program, if it re-ran.
    pub datalog_ms: Option<f64>,
}

/// Collects a [`Recomputation`] between `start` and `take`. Every tracked
/// query records its own execution as its first statement (salsa events
/// name inputs by id only, and reports should name files).
#[derive(Clone, Default)]
pub struct ExecutionLog {
    entries: Arc<Mutex<Option<Recomputation>>>,
}

impl ExecutionLog {
    /// Starts recording (clearing what was recorded before).
    pub fn start(&self) {
        *self.lock() = Some(Recomputation::default());
    }

    /// Stops recording and returns what was recorded.
    pub fn take(&self) -> Recomputation {
        self.lock().take().unwrap_or_default()
    }

    fn record(&self, f: impl FnOnce(&mut Recomputation)) {
        if let Some(entries) = self.lock().as_mut() {
            f(entries);
        }
    }

    fn executed(&self, query: &str, file: Option<&str>) {
        self.record(|r| {
            r.executed.push(match file {
                Some(file) => format!("{query}({file})"),
                None => query.to_string(),
            })
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Recomputation>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[salsa::db]
#[derive(Clone)]
pub struct Database {
    storage: salsa::Storage<Self>,
    interner: Arc<Interner>,
    log: ExecutionLog,
}

impl Default for Database {
    fn default() -> Self {
        let log = ExecutionLog::default();
        let sink = log.clone();
        let storage = salsa::Storage::new(Some(Box::new(move |event: salsa::Event| {
            if let salsa::EventKind::DidValidateMemoizedValue { database_key } = event.kind {
                sink.record(|r| {
                    let key = format!("{database_key:?}");
                    let name = key.split('(').next().unwrap_or_default().to_string();
                    *r.reused.entry(name).or_default() += 1;
                });
            }
        })));
        Self {
            storage,
            interner: Arc::default(),
            log,
        }
    }
}

impl Database {
    pub fn execution_log(&self) -> &ExecutionLog {
        &self.log
    }
}

#[salsa::db]
impl salsa::Database for Database {}

#[salsa::db]
impl Db for Database {
    fn interner(&self) -> &Interner {
        &self.interner
    }

    fn log(&self) -> &ExecutionLog {
        &self.log
    }
}

/// Parse and extract everything about one file.
#[salsa::tracked(returns(ref))]
pub fn module_facts(db: &dyn Db, file: SourceFile) -> ModuleFacts {
    db.log().executed("module_facts", Some(file.path(db)));
    python::extract(file.text(db))
}

#[salsa::tracked(returns(ref))]
pub fn module_index(db: &dyn Db, project: Project) -> ModuleIndex {
    db.log().executed("module_index", None);
    let paths: Vec<&str> = project
        .files(db)
        .iter()
        .map(|file| file.path(db).as_str())
        .collect();
    ModuleIndex::new(paths, project.extra_search_paths(db))
}

/// The Datalog base facts of one file: its imports resolved to modules, its
/// module-level bindings, and the first hop of its calls and class bases.
#[salsa::tracked(returns(ref))]
pub fn file_base_facts(db: &dyn Db, project: Project, file: SourceFile) -> Vec<InputFact> {
    db.log().executed("file_base_facts", Some(file.path(db)));
    let index = module_index(db, project);
    base_facts::build(db.interner(), index, file.path(db), file.semantic(db))
}

/// `TestModule` facts. They depend on paths and configuration, not on file
/// contents, so they are computed over the file set, apart from each file's
/// facts: a change to the pytest configuration re-runs no resolution.
#[salsa::tracked(returns(ref))]
pub fn test_modules(db: &dyn Db, project: Project) -> Vec<InputFact> {
    db.log().executed("test_modules", None);
    let matcher = TestMatcher::new(project.test_patterns(db));
    project
        .files(db)
        .iter()
        .map(|file| file.path(db))
        .filter(|path| matcher.is_test(path))
        .map(|path| InputFact::TestModule(TestModule(db.interner().node(path))))
        .collect()
}

/// Project-level base facts: the files' layers.
#[salsa::tracked(returns(ref))]
pub fn layer_facts(db: &dyn Db, project: Project) -> Vec<InputFact> {
    db.log().executed("layer_facts", None);
    let paths = project.files(db).iter().map(|file| file.path(db).as_str());
    layers::facts(db.interner(), project.layers(db), paths)
}

/// All base facts and the relations the rules derive from them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Program {
    pub facts: Vec<InputFact>,
    pub outputs: Outputs,
}

#[salsa::tracked(returns(ref))]
pub fn program(db: &dyn Db, project: Project) -> Program {
    db.log().executed("program", None);
    let mut facts: Vec<InputFact> = project
        .files(db)
        .iter()
        .flat_map(|&file| file_base_facts(db, project, file).iter().copied())
        .chain(test_modules(db, project).iter().copied())
        .chain(layer_facts(db, project).iter().copied())
        .collect();
    facts.sort_unstable();
    facts.dedup();
    let started = std::time::Instant::now();
    let outputs = datalog::run(&facts);
    let ms = started.elapsed().as_secs_f64() * 1e3;
    db.log().record(|r| r.datalog_ms = Some(ms));
    Program { facts, outputs }
}
