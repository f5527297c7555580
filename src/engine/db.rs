//! The salsa database: inputs (one [`SourceFile`] per Python file, one
//! [`Project`]) and the tracked queries that turn them into Datalog base
//! facts and derived relations.
//!
//! Query chain, each memoized per input revision:
//! `module_facts(file)` (parse + extract, from `text`) and, downstream of the
//! location-free `semantic` field, `file_base_facts(file)` (also reads
//! `module_index`) → `program(project)`, which also takes the project-level
//! facts of `layer_facts(project)` (file paths and configured layers).
//!
//! Early cut-off sits at the `semantic` field. The engine writes it after
//! `module_facts` ran for a new text, and only when it differs. Texts have low
//! durability and semantics medium, so a body-only edit touches no medium
//! input: salsa then reuses `program` without walking the per-file queries at
//! all (backdating alone would still re-verify every file's chain).

use std::sync::{Arc, Mutex};

use super::base_facts;
use super::datalog::{self, InputFact, Outputs};
use super::intern::Interner;
use super::layers::{self, Layer};
use super::modules::ModuleIndex;
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
    /// Architecture layers from configuration, top to bottom.
    #[returns(ref)]
    pub layers: Vec<Layer>,
}

#[salsa::db]
pub trait Db: salsa::Database {
    fn interner(&self) -> &Interner;
}

/// Records which queries executed, for tests and `explain_recomputation`.
#[derive(Clone, Default)]
pub struct ExecutionLog {
    entries: Arc<Mutex<Option<Vec<String>>>>,
}

impl ExecutionLog {
    /// Starts recording (clearing what was recorded before).
    pub fn start(&self) {
        *self.lock() = Some(Vec::new());
    }

    /// Stops recording and returns the executed queries, as
    /// `query_name(input)`.
    pub fn take(&self) -> Vec<String> {
        self.lock().take().unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Vec<String>>> {
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
            if let salsa::EventKind::WillExecute { database_key } = event.kind
                && let Some(entries) = sink.lock().as_mut()
            {
                entries.push(format!("{database_key:?}"));
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
}

/// Parse and extract everything about one file.
#[salsa::tracked(returns(ref))]
pub fn module_facts(db: &dyn Db, file: SourceFile) -> ModuleFacts {
    python::extract(file.text(db))
}

#[salsa::tracked(returns(ref))]
pub fn module_index(db: &dyn Db, project: Project) -> ModuleIndex {
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
    let index = module_index(db, project);
    base_facts::build(db.interner(), index, file.path(db), file.semantic(db))
}

/// Project-level base facts: the files' layers.
#[salsa::tracked(returns(ref))]
pub fn layer_facts(db: &dyn Db, project: Project) -> Vec<InputFact> {
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
    let mut facts: Vec<InputFact> = project
        .files(db)
        .iter()
        .flat_map(|&file| file_base_facts(db, project, file).iter().copied())
        .chain(layer_facts(db, project).iter().copied())
        .collect();
    facts.sort_unstable();
    facts.dedup();
    let outputs = datalog::run(&facts);
    Program { facts, outputs }
}
