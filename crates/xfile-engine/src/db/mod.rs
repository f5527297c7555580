//! The salsa database: inputs (one [`SourceFile`] per Python file, one
//! [`Project`]) and the tracked queries that turn them into Datalog base
//! facts and derived relations.
//!
//! Query chain, each memoized per input revision:
//! `module_facts(file)` (parse + extract, from `text`) and, downstream of the
//! location-free `semantic` field, `file_base_facts(file)` (also reads
//! `file_search_path(file)` and the memoized resolutions of
//! `crate::resolve`, over per-directory inputs) → `program(project)`, which
//! also takes `project_facts(project)` (per bucket `bucket_path_facts`:
//! test modules and layers, from paths and configuration only).
//! What reads every file reads it bucket by bucket (`Bucket`,
//! `buckets.rs`), so a change to one file re-runs one bucket's gathering.
//!
//! Early cut-off sits at the `semantic` field. The engine writes it after
//! `module_facts` ran for a new text, and only when it differs. Texts and
//! the semantics of edited files have low durability (a semantic is high
//! when written by the first index, low for a file added later), and the
//! buckets' file lists medium as the first index writes them, low once a
//! later change to the file set rewrites one. A body-only edit writes a
//! text only: salsa walks the few memos that read a low input (the
//! chains of files edited before, their buckets' queries, the gatherings
//! over buckets) and
//! verifies everything else in O(1) (backdating alone would re-verify
//! every file's chain). An edit that changes a semantic is a low change
//! too: the per-file queries of the files not edited since the index read
//! high inputs only (their semantics, the module-tree entries the index
//! wrote, the sub-projects, the configuration), and the queries of the
//! buckets without an edited file medium ones, so neither is walked. A
//! new or deleted file is a low change too: it walks its bucket's
//! queries, not every bucket's.
//!
//! Three values of whole-project queries are written back to inputs by the
//! engine before any read (`Engine::resolve`, `resolved_inputs.rs`): each
//! file's `resolved` tuples, the class table and the project-level facts.
//! The file rules' queries read those inputs, not the queries, so each
//! file's chain keeps the durability of its own inputs: after an edit, the
//! files it did not reach are verified in O(1) rather than walked (read
//! through the queries, every chain took the durability of the stages,
//! which read every file).

//!
//! The queries live by stage, in the order the rules run
//! (`rules/*.dl`, `// stage:`): [`facts`] (base facts, before any rule),
//! [`resolve`], [`classes`], [`file`], [`project`] and [`report`];
//! [`stages`] holds what the stages share and [`union`] what is built
//! only when asked. What the rest of the engine reads is re-exported here.

mod classes;
mod facts;
mod file;
mod inputs;
mod log;
mod project;
mod report;
mod resolve;
mod stages;
mod union;

use std::sync::Arc;

use crate::class_contexts::FactsMade;
use crate::intern::Interner;
use crate::resolve::TreeInputs;
use crate::resolve_parts::ResolveMemo;
use crate::source_text::TextLoader;

pub(crate) use self::classes::{
    bucket_class_inputs, class_slices, class_table, classes_outputs, classes_stage, mro_facts,
};
pub(crate) use self::facts::{
    all_files, bucket_path_facts, file_base_facts, files_by_node, module_facts, project_facts,
    search_path_of, test_matcher,
};
pub(crate) use self::file::{file_resolved, file_stage};
pub(crate) use self::inputs::{Bucket, Project, SourceFile};
pub(crate) use self::log::ExecutionLog;
pub use self::log::Recomputation;
pub(crate) use self::project::{bucket_project_shares, cycle_groups, project_stage};
pub(crate) use self::report::{bucket_report_shares, report_stage};
pub(crate) use self::resolve::{
    Slices, bucket_files_keys, bucket_resolve_shares, files_keys, resolve_stage, resolved_slices,
};
pub(crate) use self::stages::{
    StageInputs, add_share, bucket_shares, gathered, per_file, run_stage, whole_project_inputs,
};
pub use self::union::Program;
pub(crate) use self::union::{all_facts, program};

/// The project's buckets, for a query that gathers over them: it reads
/// [`Project::low_mark`] too, so that its memo is low from the first
/// index and an equal value after the first edit counts as unchanged.
pub(crate) fn gathered_buckets(db: &dyn Db, project: Project) -> &[Bucket] {
    project.low_mark(db);
    project.buckets(db)
}

#[salsa::db]
pub(crate) trait Db: salsa::Database {
    fn interner(&self) -> &Interner;
    fn log(&self) -> &ExecutionLog;
    fn tree_inputs(&self) -> &TreeInputs;
    fn resolve_memo(&self) -> &ResolveMemo;
    /// Where `file_base_facts` reports the files it made facts for.
    fn facts_made(&self) -> &FactsMade;
    fn text_loader(&self) -> Option<&TextLoader>;
}

#[salsa::db]
#[derive(Clone)]
pub(crate) struct Database {
    storage: salsa::Storage<Self>,
    interner: Arc<Interner>,
    log: ExecutionLog,
    tree_inputs: TreeInputs,
    resolve_memo: ResolveMemo,
    facts_made: FactsMade,
    /// Set once, before the first index: with it, texts are let go once
    /// their facts are extracted.
    text_loader: Option<TextLoader>,
}

impl Default for Database {
    fn default() -> Self {
        let log = ExecutionLog::default();
        let sink = log.clone();
        let storage = salsa::Storage::new(Some(Box::new(move |event: salsa::Event| {
            if let salsa::EventKind::DidValidateMemoizedValue { database_key } = event.kind {
                sink.reused(database_key);
            }
        })));
        Self {
            storage,
            interner: Arc::default(),
            log,
            tree_inputs: TreeInputs::default(),
            resolve_memo: ResolveMemo::default(),
            facts_made: FactsMade::default(),
            text_loader: None,
        }
    }
}

impl Database {
    pub(crate) fn execution_log(&self) -> &ExecutionLog {
        &self.log
    }

    pub(crate) fn set_text_loader(&mut self, loader: TextLoader) {
        self.text_loader = Some(loader);
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

    fn tree_inputs(&self) -> &TreeInputs {
        &self.tree_inputs
    }

    fn facts_made(&self) -> &FactsMade {
        &self.facts_made
    }

    fn resolve_memo(&self) -> &ResolveMemo {
        &self.resolve_memo
    }

    fn text_loader(&self) -> Option<&TextLoader> {
        self.text_loader.as_ref()
    }
}
