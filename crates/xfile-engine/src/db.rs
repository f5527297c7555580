//! The salsa database: inputs (one [`SourceFile`] per Python file, one
//! [`Project`]) and the tracked queries that turn them into Datalog base
//! facts and derived relations.
//!
//! Query chain, each memoized per input revision:
//! `module_facts(file)` (parse + extract, from `text`) and, downstream of the
//! location-free `semantic` field, `file_base_facts(file)` (also reads
//! `file_search_path(file)` and the memoized resolutions of
//! `super::resolve`, over per-directory inputs) → `program(project)`, which
//! also takes `project_facts(project)` (per file `is_test_module`: path
//! and pytest settings only, and `file_layer`: path and configured layers).
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

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::base_facts;
use super::buckets::PerFile;
use super::classes::{self, ClassTable};
use super::datalog::{
    self, BaseRef, CycleGroup, InputFact, Node, Outputs, Site, StageProgram, Sym, TestModule, Value,
};
use super::entry_points::{self, EntryPointSpec};
use super::intern::Interner;
use super::layers::{Layer, LayerMatcher};
use super::modules::{self, SearchPath};
use super::resolve::{DbLayout, Resolver, TreeInputs};
use super::resolve_parts::ResolveMemo;
use super::site_ranks::SiteRanks;
use super::test_modules::{TestMatcher, TestPatterns};
use xfile_python::{self as python, ModuleFacts, Semantic};

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
    /// Facts extracted earlier from exactly this `text` (the warm-start
    /// cache vouches for that by content hash), so `module_facts` need not
    /// parse; written with `text`, never by a query.
    #[returns(ref)]
    pub preset: Option<Arc<ModuleFacts>>,
    /// The `resolve` and `classes` tuples whose first argument is a node of
    /// this file's facts: written by the engine after those stages ran
    /// (`resolved_inputs.rs`), never by a query. An input rather than a
    /// query so that the file's own chain depends on nothing of the whole
    /// project: it keeps the durability of the file's inputs, and an edit
    /// elsewhere verifies it without a walk.
    #[returns(ref)]
    pub resolved: Arc<Outputs>,
}

/// A fixed share of the project's files, chosen by a hash of the path
/// (`buckets.rs`). What reads every file reads them bucket by bucket,
/// through a query per bucket: a new, deleted or edited file re-runs its
/// bucket's query (on Django ~44 files) and the gathering over the
/// buckets (64 on Django, more on a larger project), and the other
/// buckets' values are reused. After a new or deleted file salsa still
/// checks their edges (every bucket's query has
/// the durability of the file lists, medium), but a check of a file's memo
/// costs far less than fetching it into a query that runs again; an edit
/// is a low change and leaves them unchecked.
#[salsa::input(debug)]
pub struct Bucket {
    /// The bucket's indexed files, sorted by path.
    #[returns(ref)]
    pub files: Vec<SourceFile>,
}

#[salsa::input(debug)]
pub struct Project {
    /// The indexed files, in buckets (`buckets::bucket_count` of the first
    /// index's files); their number is fixed once files were added.
    #[returns(ref)]
    pub buckets: Vec<Bucket>,
    /// Extra module search roots from configuration, root-relative.
    #[returns(ref)]
    pub extra_search_paths: Vec<String>,
    /// Directories below the root holding a sub-project marker
    /// (`pyproject.toml`, `setup.py`, `setup.cfg`), root-relative.
    #[returns(ref)]
    pub sub_projects: Vec<String>,
    /// The project's pytest settings that name test modules (DD-3).
    #[returns(ref)]
    pub test_patterns: TestPatterns,
    /// Architecture layers from configuration, top to bottom.
    #[returns(ref)]
    pub layers: Vec<Layer>,
    /// Entry points the project's `pyproject.toml` files declare.
    #[returns(ref)]
    pub entry_points: Vec<EntryPointSpec>,
    /// The value of [`class_table`] and of [`project_facts`] at the last
    /// `Engine::resolve`, written by the engine, never by a query: what
    /// each file's chain reads of them. As inputs of high durability, they
    /// keep the files' chains free of the whole project's durability (see
    /// `resolved_inputs.rs`); a change to either is written high, so that
    /// update walks every chain once, as any whole-project change did.
    #[returns(ref)]
    pub written_class_table: Arc<ClassTable>,
    #[returns(ref)]
    pub written_project_facts: Arc<Vec<InputFact>>,
}

#[salsa::db]
pub trait Db: salsa::Database {
    fn interner(&self) -> &Interner;
    fn log(&self) -> &ExecutionLog;
    fn tree_inputs(&self) -> &TreeInputs;
    fn resolve_memo(&self) -> &ResolveMemo;
}

/// What salsa did while recording: for tests, `explain_recomputation` and
/// debug logs.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Recomputation {
    /// Queries that executed, as `query(file)` for per-file queries.
    pub executed: Vec<String>,
    /// Memoized results salsa re-verified and reused, by query name, each
    /// counted once however many revisions of the update checked it.
    /// Queries whose inputs are all of a durability that did not change are
    /// reused without being visited, so they do not appear here.
    pub reused: BTreeMap<String, usize>,
    /// Time spent evaluating rules, by stage query (`resolve_stage`,
    /// `file_stage`, `project_stage`); empty if no rules re-ran.
    pub datalog_ms: BTreeMap<String, f64>,
    /// Base facts the `resolve` stage read: all of them on a whole run,
    /// those of the parts an edit reached otherwise.
    pub resolve_facts_read: usize,
}

/// Collects a [`Recomputation`] between `start` and `take`. Every tracked
/// query records its own execution as its first statement (salsa events
/// name inputs by id only, and reports should name files).
#[derive(Clone, Default)]
pub struct ExecutionLog {
    entries: Arc<Mutex<Option<Recording>>>,
    /// Whether a recording is on: checked before taking the lock, since
    /// salsa reports every memo it checks (tens of thousands an update).
    recording: Arc<std::sync::atomic::AtomicBool>,
}

/// A recording in progress. Reused memos are counted by salsa ingredient
/// (one per query); a query's name is formatted once per recording, not
/// once per memo (an update re-verifies thousands). An update runs over
/// several revisions (each input write starts one), and a memo checked in
/// two of them is one memo reused.
#[derive(Default)]
struct Recording {
    report: Recomputation,
    reused: rustc_hash::FxHashMap<salsa::IngredientIndex, (String, usize)>,
    seen: rustc_hash::FxHashSet<salsa::DatabaseKeyIndex>,
}

impl ExecutionLog {
    /// Starts recording (clearing what was recorded before).
    pub fn start(&self) {
        *self.lock() = Some(Recording::default());
        self.recording
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Stops recording and returns what was recorded.
    pub fn take(&self) -> Recomputation {
        self.recording
            .store(false, std::sync::atomic::Ordering::Release);
        let Some(recording) = self.lock().take() else {
            return Recomputation::default();
        };
        let mut report = recording.report;
        for (name, count) in recording.reused.into_values() {
            *report.reused.entry(name).or_default() += count;
        }
        report
    }

    fn record(&self, f: impl FnOnce(&mut Recomputation)) {
        if !self.recording.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        if let Some(recording) = self.lock().as_mut() {
            f(&mut recording.report);
        }
    }

    fn reused(&self, key: salsa::DatabaseKeyIndex) {
        if !self.recording.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        if let Some(recording) = self.lock().as_mut() {
            if !recording.seen.insert(key) {
                return;
            }
            recording
                .reused
                .entry(key.ingredient_index())
                .or_insert_with(|| {
                    let key = format!("{key:?}");
                    (key.split('(').next().unwrap_or_default().to_string(), 0)
                })
                .1 += 1;
        }
    }

    pub(crate) fn executed(&self, query: &str, file: Option<&str>) {
        self.record(|r| {
            r.executed.push(match file {
                Some(file) => format!("{query}({file})"),
                None => query.to_string(),
            })
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Recording>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[salsa::db]
#[derive(Clone)]
pub struct Database {
    storage: salsa::Storage<Self>,
    interner: Arc<Interner>,
    log: ExecutionLog,
    tree_inputs: TreeInputs,
    resolve_memo: ResolveMemo,
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

    fn tree_inputs(&self) -> &TreeInputs {
        &self.tree_inputs
    }

    fn resolve_memo(&self) -> &ResolveMemo {
        &self.resolve_memo
    }
}

/// Parse and extract everything about one file, unless its facts were
/// handed in with its text. Shared, so a cache can keep them without a copy.
#[salsa::tracked(returns(ref))]
pub(crate) fn module_facts(db: &dyn Db, file: SourceFile) -> Arc<ModuleFacts> {
    db.log().executed("module_facts", Some(file.path(db)));
    match file.preset(db) {
        Some(facts) => Arc::clone(facts),
        None => Arc::new(python::extract(file.text(db))),
    }
}

/// The project's test-module matcher, built once per pytest configuration.
#[salsa::tracked(returns(ref))]
pub fn test_matcher(db: &dyn Db, project: Project) -> TestMatcher {
    db.log().executed("test_matcher", None);
    TestMatcher::new(project.test_patterns(db))
}

/// Whether pytest collects `file` as a test module (DD-3): per file, so a
/// new file decides only its own membership.
#[salsa::tracked(returns(copy))]
pub fn is_test_module(db: &dyn Db, project: Project, file: SourceFile) -> bool {
    test_matcher(db, project).is_test(file.path(db))
}

/// Where `path` (which need not be a project file) searches its imports.
pub fn search_path_of(db: &dyn Db, project: Project, path: &str, is_test: bool) -> SearchPath {
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
pub fn file_search_path(db: &dyn Db, project: Project, file: SourceFile) -> SearchPath {
    let is_test = is_test_module(db, project, file);
    search_path_of(db, project, file.path(db), is_test)
}

/// The Datalog base facts of one file: its imports resolved to modules, its
/// module-level bindings, and the first hop of its calls and class bases.
#[salsa::tracked(returns(ref))]
pub(crate) fn file_base_facts(db: &dyn Db, project: Project, file: SourceFile) -> Vec<InputFact> {
    db.log().executed("file_base_facts", Some(file.path(db)));
    let path = file.path(db);
    let resolver = Resolver::new(db, path, file_search_path(db, project, file));
    let mut facts = base_facts::build(db.interner(), &resolver, path, file.semantic(db));
    // Kept for the file's life (memoized): no spare room from pushing.
    facts.shrink_to_fit();
    facts
}

/// Every indexed file, bucket by bucket. It reads every bucket's file
/// list: for what runs when asked (queries, explanations), not for what
/// runs on every update.
pub(crate) fn all_files(db: &dyn Db, project: Project) -> impl Iterator<Item = SourceFile> + '_ {
    project
        .buckets(db)
        .iter()
        .flat_map(move |bucket| bucket.files(db).iter().copied())
}

/// The project-level facts about one bucket's files: `TestModule` and
/// `InLayer`. They depend on paths and configuration, not on file
/// contents, so a change to the pytest configuration re-runs no
/// resolution, and a new file re-runs only its bucket's.
#[salsa::tracked(returns(ref))]
pub(crate) fn bucket_path_facts(db: &dyn Db, project: Project, bucket: Bucket) -> Vec<InputFact> {
    db.log().executed("bucket_path_facts", None);
    let mut facts = Vec::new();
    for &file in bucket.files(db) {
        if is_test_module(db, project, file) {
            let node = db.interner().node(file.path(db));
            facts.push(InputFact::TestModule(TestModule(node)));
        }
        facts.extend(file_layer(db, project, file));
    }
    facts
}

/// The configured layers, compiled once per configuration.
#[salsa::tracked(returns(ref))]
pub fn layer_matcher(db: &dyn Db, project: Project) -> LayerMatcher {
    db.log().executed("layer_matcher", None);
    LayerMatcher::new(project.layers(db))
}

/// One file's `InLayer` fact: per file, so a new file decides only its own.
#[salsa::tracked(returns(copy))]
pub fn file_layer(db: &dyn Db, project: Project, file: SourceFile) -> Option<InputFact> {
    layer_matcher(db, project).in_layer(db.interner(), file.path(db))
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
    for &bucket in project.buckets(db) {
        facts.extend_from_slice(bucket_path_facts(db, project, bucket));
    }
    facts.extend_from_slice(entry_point_facts(db, project));
    facts.sort_unstable_by_key(|f| (f.first(), *f));
    Arc::new(facts)
}

/// Every base fact, sorted: what `query` and `explain` read for base
/// relations. Computed only when asked, never on the update path.
#[salsa::tracked(returns(ref))]
pub(crate) fn all_facts(db: &dyn Db, project: Project) -> Vec<InputFact> {
    db.log().executed("all_facts", None);
    let mut facts: Vec<InputFact> = all_files(db, project)
        .flat_map(|file| file_base_facts(db, project, file).iter().copied())
        .chain(project_facts(db, project).iter().copied())
        .chain(cycle_groups(db, project).iter().copied())
        .chain(mro_facts(db, project).iter().copied())
        .collect();
    facts.sort_unstable();
    facts.dedup();
    facts
}

/// What the class table reads of one file: its classes, their members
/// and bases, and which bases add no members (`object`, `typing.Generic`,
/// `typing.Protocol`). A query of its own so that an edit that changes no
/// class stops here.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ClassFacts {
    facts: Vec<InputFact>,
    transparent: Vec<(Node, Site)>,
}

/// The sites of one file's class declarations (`site_ranks.rs`): what the
/// `classes` stage and the class table see of them is their rank here.
#[salsa::tracked(returns(ref))]
pub(crate) fn class_sites(db: &dyn Db, project: Project, file: SourceFile) -> SiteRanks {
    SiteRanks::of(class_declarations(db, project, file))
}

/// One file's base facts that the `classes` stage reads.
fn class_declarations(
    db: &dyn Db,
    project: Project,
    file: SourceFile,
) -> impl Iterator<Item = &InputFact> {
    file_base_facts(db, project, file)
        .iter()
        .filter(|fact| (datalog::CLASSES.reads_fact)(fact))
}

#[salsa::tracked(returns(ref))]
pub(crate) fn class_facts(db: &dyn Db, project: Project, file: SourceFile) -> ClassFacts {
    let interner = db.interner();
    let ranks = class_sites(db, project, file);
    let mut class_facts = ClassFacts::default();
    for fact in file_base_facts(db, project, file) {
        match fact {
            InputFact::ClassDef(_)
            | InputFact::HasMember(_)
            | InputFact::SetsOnSelf(_)
            | InputFact::BaseOf(_)
            | InputFact::OpaqueBase(_)
            | InputFact::MadeBy(_)
            | InputFact::ReturnsSelf(_)
            | InputFact::ReturnsSelfVia(_)
            | InputFact::ReturnsCls(_)
            | InputFact::IsProperty(_) => class_facts
                .facts
                .push(fact.map_sites(|site| ranks.rank(site))),
            InputFact::BaseRef(BaseRef(file, site, module, name)) => {
                let transparent = matches!(
                    (&*interner.node_text(*module), &*interner.sym_text(*name)),
                    ("<builtin:object>", "object")
                        | (
                            "<stdlib:typing>"
                                | "<stdlib:typing_extensions>"
                                | "<third-party:typing_extensions>",
                            "Generic" | "Protocol",
                        )
                );
                if transparent {
                    class_facts.transparent.push((*file, ranks.rank(*site)));
                }
            }
            _ => {}
        }
    }
    class_facts
}

impl ClassFacts {
    fn extend(&mut self, other: &ClassFacts) {
        self.facts.extend_from_slice(&other.facts);
        self.transparent.extend_from_slice(&other.transparent);
    }
}

/// One bucket's class facts together.
#[salsa::tracked(returns(ref))]
pub(crate) fn bucket_class_inputs(db: &dyn Db, project: Project, bucket: Bucket) -> ClassFacts {
    db.log().executed("bucket_class_inputs", None);
    let mut inputs = ClassFacts::default();
    for &file in bucket.files(db) {
        inputs.extend(class_facts(db, project, file));
    }
    inputs
}

/// Every file's class facts together: a query of its own so that a change
/// to the file set that adds or removes no class (a new module of
/// functions, a rename of one) stops here and the table is reused.
#[salsa::tracked(returns(ref))]
pub(crate) fn class_inputs(db: &dyn Db, project: Project) -> ClassFacts {
    let mut inputs = ClassFacts::default();
    for &bucket in project.buckets(db) {
        inputs.extend(bucket_class_inputs(db, project, bucket));
    }
    inputs
}

/// Every class's method resolution order, members and declared member
/// types, after name resolution.
#[salsa::tracked(returns(ref))]
pub(crate) fn class_table(db: &dyn Db, project: Project) -> Arc<ClassTable> {
    db.log().executed("class_table", None);
    let inputs = class_inputs(db, project);
    let transparent: rustc_hash::FxHashSet<(Node, Site)> =
        inputs.transparent.iter().copied().collect();
    Arc::new(ClassTable::build(
        &inputs.facts,
        &transparent,
        class_resolved(db, project),
    ))
}

/// The `classes` tuples the class table reads (resolved bases, declared
/// types, class aliases, patched members), without the stage's helpers: a
/// query of its own so that a change to those helpers alone stops here and
/// the table, and every file's slice of it, is reused.
#[salsa::tracked(returns(ref))]
pub(crate) fn class_resolved(db: &dyn Db, project: Project) -> Outputs {
    let resolved = classes_stage(db, project);
    let mut class = Outputs::default();
    class
        .base_class_mut()
        .extend_from_slice(resolved.base_class());
    class
        .instance_type_mut()
        .extend_from_slice(resolved.instance_type());
    class
        .return_type_mut()
        .extend_from_slice(resolved.return_type());
    class
        .patched_member_mut()
        .extend_from_slice(resolved.patched_member());
    class
        .class_alias_mut()
        .extend_from_slice(resolved.class_alias());
    class
}

/// `MroStart`/`MroNext` facts of every class, for queries, explanations
/// and the reference program.
#[salsa::tracked(returns(ref))]
pub(crate) fn mro_facts(db: &dyn Db, project: Project) -> Vec<InputFact> {
    class_table(db, project).mro_facts()
}

/// The classes one file's member lookups can reach (`ClassTable::context`).
#[salsa::tracked(returns(ref))]
pub(crate) fn class_context(db: &dyn Db, project: Project, file: SourceFile) -> StageInputs {
    db.log().executed("class_context", Some(file.path(db)));
    let facts = file_base_facts(db, project, file);
    let names = classes::attribute_names(facts);
    if names.is_empty() {
        return StageInputs::default();
    }
    let resolved = file_resolved(db, file);
    let (facts, derived) = project
        .written_class_table(db)
        .context(classes::seeds(facts, resolved), &names);
    StageInputs { facts, derived }
}

/// Adds one file's share of what a whole-project stage reads to
/// `inputs`: its base facts the stage reads and, for stages after the file
/// rules (`after_files`), the tuples of its `file` stage the stage takes.
/// Said by the caller, not found by comparing `stage` with the stages'
/// constants: each use of a constant may be another address. Computed inside a
/// bucket's query, not kept per file: the bucket's value is the only copy,
/// and a bucket whose shares come out equal stops the change there.
fn add_share(
    db: &dyn Db,
    project: Project,
    file: SourceFile,
    stage: &StageProgram,
    after_files: bool,
    inputs: &mut StageInputs,
) {
    if stage.reads_facts {
        inputs.facts.extend(
            file_base_facts(db, project, file)
                .iter()
                .copied()
                .filter(stage.reads_fact),
        );
    }
    if after_files {
        stage.take_derived(&mut inputs.derived, file_stage(db, project, file));
    }
}

/// One bucket's files' shares of a whole-project stage after the file
/// rules, in file order.
fn bucket_shares(
    db: &dyn Db,
    project: Project,
    bucket: Bucket,
    stage: &StageProgram,
) -> StageInputs {
    let mut inputs = StageInputs::default();
    for &file in bucket.files(db) {
        add_share(db, project, file, stage, true, &mut inputs);
    }
    inputs.facts.shrink_to_fit();
    inputs
}

/// One bucket's files' class declarations, each site as its rank
/// (`class_sites`).
#[salsa::tracked(returns(ref))]
pub(crate) fn bucket_classes_shares(db: &dyn Db, project: Project, bucket: Bucket) -> StageInputs {
    db.log().executed("bucket_classes_shares", None);
    let mut inputs = StageInputs::default();
    for &file in bucket.files(db) {
        let ranks = class_sites(db, project, file);
        inputs.facts.extend(
            class_declarations(db, project, file)
                .map(|fact| fact.map_sites(|site| ranks.rank(site))),
        );
    }
    inputs.facts.shrink_to_fit();
    inputs
}

#[salsa::tracked(returns(ref))]
pub(crate) fn bucket_project_shares(db: &dyn Db, project: Project, bucket: Bucket) -> StageInputs {
    db.log().executed("bucket_project_shares", None);
    bucket_shares(db, project, bucket, &datalog::PROJECT)
}

#[salsa::tracked(returns(ref))]
pub(crate) fn bucket_report_shares(db: &dyn Db, project: Project, bucket: Bucket) -> StageInputs {
    db.log().executed("bucket_report_shares", None);
    bucket_shares(db, project, bucket, &datalog::REPORT)
}

/// The facts and file-stage tuples a whole-project stage reads, from every
/// file's share (bucket by bucket) and the project-level facts, in file order: deterministic,
/// so equal inputs give an equal value and salsa can stop there (crepe
/// needs no order and drops duplicates).
fn gathered(
    db: &dyn Db,
    project: Project,
    stage: &StageProgram,
    bucket_share: fn(&dyn Db, Project, Bucket) -> &StageInputs,
) -> StageInputs {
    let mut inputs = StageInputs::default();
    for &bucket in project.buckets(db) {
        inputs.extend(bucket_share(db, project, bucket));
    }
    if stage.reads_facts {
        inputs.facts.extend(
            project_facts(db, project)
                .iter()
                .copied()
                .filter(stage.reads_fact),
        );
    }
    inputs
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

/// What one stage program runs on.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct StageInputs {
    pub facts: Vec<InputFact>,
    /// Tuples of relations derived by earlier stages.
    pub derived: Outputs,
}

impl StageInputs {
    fn extend(&mut self, other: &StageInputs) {
        self.facts.extend_from_slice(&other.facts);
        self.derived.extend(&other.derived);
    }
}

/// Runs `stage` and records how long it took under `query`.
fn run_stage(
    db: &dyn Db,
    query: &str,
    stage: &StageProgram,
    facts: &[InputFact],
    derived: &Outputs,
) -> Outputs {
    let started = std::time::Instant::now();
    let outputs = (stage.run)(facts, derived);
    let ms = started.elapsed().as_secs_f64() * 1e3;
    db.log().record(|r| {
        *r.datalog_ms.entry(query.to_string()).or_default() += ms;
    });
    outputs
}

/// A value for each of a bucket's files, in its order.
fn per_file<T>(db: &dyn Db, bucket: Bucket, value: impl Fn(SourceFile) -> T) -> PerFile<T> {
    Arc::new(
        bucket
            .files(db)
            .iter()
            .map(|&file| (file, value(file)))
            .collect(),
    )
}

/// One bucket's files' shares of the `resolve` stage, file by file: the
/// stage's memo compares them with its last run's.
#[salsa::tracked(returns(ref))]
pub(crate) fn bucket_resolve_shares(
    db: &dyn Db,
    project: Project,
    bucket: Bucket,
) -> PerFile<Arc<[InputFact]>> {
    db.log().executed("bucket_resolve_shares", None);
    per_file(db, bucket, |file| {
        let mut share = StageInputs::default();
        add_share(db, project, file, &datalog::RESOLVE, false, &mut share);
        share.facts.into()
    })
}

/// The `resolve` stage (name resolution across modules) over all files'
/// shares: after an edit, re-run only over the parts of the facts the edit
/// reached (`resolve_parts.rs`). An edit that changes no file's share (a
/// call, a plain import) stops before this: every share is equal, and
/// salsa reuses the stage.
#[salsa::tracked(returns(ref))]
pub(crate) fn resolve_stage(db: &dyn Db, project: Project) -> Outputs {
    db.log().executed("resolve_stage", None);
    let shares: Vec<PerFile<Arc<[InputFact]>>> = project
        .buckets(db)
        .iter()
        .map(|&bucket| bucket_resolve_shares(db, project, bucket).clone())
        .collect();
    let extra: Vec<InputFact> = project_facts(db, project)
        .iter()
        .copied()
        .filter(datalog::RESOLVE.reads_fact)
        .collect();
    db.resolve_memo().run(project, shares, extra, |facts| {
        db.log().record(|r| r.resolve_facts_read += facts.len());
        run_stage(
            db,
            "resolve_stage",
            &datalog::RESOLVE,
            facts,
            &Outputs::default(),
        )
    })
}

/// The class declarations of every file (`bucket_classes_shares`), and the
/// `(module, name)` pairs they name, sorted: the only `Resolves` tuples the
/// `classes` stage reads (each of its rules starts from a declaration,
/// `rules/classes.dl`). Equal unless a declaration changed.
#[salsa::tracked(returns(ref))]
pub(crate) fn classes_facts(db: &dyn Db, project: Project) -> (Vec<InputFact>, Vec<(Node, Sym)>) {
    db.log().executed("classes_facts", None);
    let facts = gathered(db, project, &datalog::CLASSES, bucket_classes_shares).facts;
    let mut named: Vec<(Node, Sym)> = Vec::new();
    for fact in &facts {
        for pair in fact.values().windows(2) {
            if let [Value::Node(module), Value::Sym(name)] = *pair {
                named.push((module, name));
            }
        }
    }
    named.sort_unstable();
    named.dedup();
    (facts, named)
}

/// The `resolve` tuples the `classes` stage reads, cut to the names its
/// declarations name: a resolution change elsewhere (an import added, a
/// re-export) leaves this equal, and salsa reuses the stage.
#[salsa::tracked(returns(ref))]
pub(crate) fn classes_resolved(db: &dyn Db, project: Project) -> Outputs {
    let (_, named) = classes_facts(db, project);
    let mut derived = Outputs::default();
    datalog::CLASSES.take_derived(&mut derived, resolve_stage(db, project));
    derived
        .resolves_mut()
        .retain(|t| named.binary_search(&(t.0, t.1)).is_ok());
    derived
}

/// The `classes` stage (bases, declared types, patched members) over all
/// files' declarations, with sites as ranks (`site_ranks.rs`): what the
/// class table and the later stages read, none of which reads a site of
/// it. [`classes_outputs`] has the real sites.
#[salsa::tracked(returns(ref))]
pub(crate) fn classes_stage(db: &dyn Db, project: Project) -> Outputs {
    db.log().executed("classes_stage", None);
    let (facts, _) = classes_facts(db, project);
    run_stage(
        db,
        "classes_stage",
        &datalog::CLASSES,
        facts,
        classes_resolved(db, project),
    )
}

/// The `classes` stage's tuples with every site renamed back from its rank
/// to the site: what queries, explanations and the union of the stages
/// show.
#[salsa::tracked(returns(ref))]
pub(crate) fn classes_outputs(db: &dyn Db, project: Project) -> Outputs {
    let mut outputs = classes_stage(db, project).clone();
    let files = files_by_node(db, project);
    outputs.map_sites(|first, rank| match first {
        Value::Node(node) => match files.binary_search_by_key(&node, |&(node, _)| node) {
            Ok(at) => class_sites(db, project, files[at].1).site(rank),
            Err(_) => rank,
        },
        _ => rank,
    });
    outputs
}

/// The tuples of a stage before the file rules (`resolve`, `classes`) that
/// the `file` stage reads whose first argument is one node (a file or a
/// marker), by node, sorted. The engine compares them with the last run's
/// and rewrites the `resolved` input of only the files that read a node
/// whose tuples changed (`resolved_inputs.rs`).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Slices(pub(crate) Vec<(Value, Arc<Outputs>)>);

impl Slices {
    pub(crate) fn of(outputs: &Outputs) -> Arc<Slices> {
        Arc::new(Slices(
            datalog::FILE
                .derived_keys(outputs)
                .into_iter()
                .map(|key| (key, Self::select(outputs, key)))
                .collect(),
        ))
    }

    fn select(outputs: &Outputs, key: Value) -> Arc<Outputs> {
        Arc::new(datalog::FILE.select_derived(outputs, &[key]))
    }

    /// The slices of `outputs`, whose tuples differ from those `before` was
    /// taken from only under `heads` (sorted): those are sliced again, the
    /// others shared with `before`. Equal to [`Slices::of`].
    pub(crate) fn updated(before: &Slices, outputs: &Outputs, heads: &[Value]) -> Arc<Slices> {
        let mut slices = Vec::with_capacity(before.0.len() + heads.len());
        let add = |slices: &mut Vec<(Value, Arc<Outputs>)>, key: Value| {
            let slice = Self::select(outputs, key);
            if slice.tuple_count() > 0 {
                slices.push((key, slice));
            }
        };
        let mut heads = heads.iter().copied().peekable();
        for (key, slice) in &before.0 {
            while let Some(head) = heads.next_if(|head| head < key) {
                add(&mut slices, head);
            }
            if heads.next_if_eq(key).is_some() {
                add(&mut slices, *key);
            } else {
                slices.push((*key, Arc::clone(slice)));
            }
        }
        for head in heads {
            add(&mut slices, head);
        }
        Arc::new(Slices(slices))
    }

    pub(crate) fn get(&self, key: Value) -> Option<&Outputs> {
        self.0
            .binary_search_by_key(&key, |(k, _)| *k)
            .ok()
            .map(|at| self.0[at].1.as_ref())
    }
}

/// The `resolve` stage's slices.
#[salsa::tracked(returns(ref))]
pub(crate) fn resolved_slices(db: &dyn Db, project: Project) -> Arc<Slices> {
    db.log().executed("resolved_slices", None);
    db.resolve_memo().slices(resolve_stage(db, project))
}

/// The `classes` stage's slices.
#[salsa::tracked(returns(ref))]
pub(crate) fn class_slices(db: &dyn Db, project: Project) -> Arc<Slices> {
    db.log().executed("class_slices", None);
    Slices::of(classes_stage(db, project))
}

/// One bucket's files with their `file_keys`.
#[salsa::tracked(returns(ref))]
pub(crate) fn bucket_files_keys(
    db: &dyn Db,
    project: Project,
    bucket: Bucket,
) -> PerFile<Arc<[Value]>> {
    db.log().executed("bucket_files_keys", None);
    per_file(db, bucket, |file| file_keys(db, project, file).clone())
}

/// Every file's `file_keys`, bucket by bucket: what the engine reads to
/// know which files read which nodes' slices.
pub(crate) fn files_keys(db: &dyn Db, project: Project) -> Vec<PerFile<Arc<[Value]>>> {
    project
        .buckets(db)
        .iter()
        .map(|&bucket| bucket_files_keys(db, project, bucket).clone())
        .collect()
}

/// The `resolve` tuples the `project` stage reads (entry points), and the
/// ones the `report` stage reads (none today): queries of their own, like
/// the `file` stage's slices, so that a change to name resolution that leaves
/// them as they were does not re-gather every file's share of those
/// stages.
#[salsa::tracked(returns(ref))]
pub(crate) fn resolved_for_project(db: &dyn Db, project: Project) -> Outputs {
    let mut derived = Outputs::default();
    datalog::PROJECT.take_derived(&mut derived, resolve_stage(db, project));
    datalog::PROJECT.take_derived(&mut derived, classes_stage(db, project));
    derived
}

#[salsa::tracked(returns(ref))]
pub(crate) fn resolved_for_report(db: &dyn Db, project: Project) -> Outputs {
    let mut derived = Outputs::default();
    datalog::REPORT.take_derived(&mut derived, resolve_stage(db, project));
    datalog::REPORT.take_derived(&mut derived, classes_stage(db, project));
    derived
}

/// Every node (file or marker) in a file's base facts, sorted: what ties
/// other tuples to it. Every `resolve` relation and project-level fact the
/// file rules select by its first argument has a node there, so names and
/// sites need not be keys.
#[salsa::tracked(returns(ref))]
pub(crate) fn file_keys(db: &dyn Db, project: Project, file: SourceFile) -> Arc<[Value]> {
    db.log().executed("file_keys", Some(file.path(db)));
    let mut keys: Vec<Value> = file_base_facts(db, project, file)
        .iter()
        .flat_map(InputFact::values)
        .filter(|v| matches!(v, Value::Node(_)))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    // Copied into a block of its size: collected with every repeat (a
    // file's facts name its own node in almost every tuple), the vector
    // kept ~20 MB of spare room on Django.
    keys.into()
}

/// The project-level facts whose first argument is one of `keys`, or
/// occurs in one of those (one step further, for joins such as a layer's
/// rank), sorted.
fn project_context(project_facts: &[InputFact], keys: &[Value]) -> Vec<InputFact> {
    let keyed = |keys: &[Value]| -> Vec<InputFact> {
        keys.iter()
            .flat_map(|key| {
                let start = project_facts.partition_point(|f| f.first() < *key);
                project_facts[start..]
                    .iter()
                    .take_while(move |f| f.first() == *key)
            })
            .copied()
            .collect()
    };
    let first = keyed(keys);
    let mut further: Vec<Value> = first
        .iter()
        .flat_map(InputFact::values)
        .filter(|v| keys.binary_search(v).is_err())
        .collect();
    further.sort_unstable();
    further.dedup();
    let mut context: Vec<InputFact> = first.into_iter().chain(keyed(&further)).collect();
    context.sort_unstable();
    context.dedup();
    context
}

/// The `resolve` and `classes` tuples whose first argument occurs in a
/// file's facts: its `resolved` input, which the engine keeps up to date.
pub(crate) fn file_resolved(db: &dyn Db, file: SourceFile) -> &Outputs {
    file.resolved(db)
}

/// The project-level facts about any value of one file's facts or of the
/// `resolve` and class tuples it sees (so a rule can ask whether the file a
/// call resolves to is a test module): the only part of the `file`
/// stage's inputs that is not another per-file query's value already. A
/// query of its own, so that a change to the project-level facts (a new
/// test module, a layer) re-runs only the files whose slice changed.
/// `tests/incremental.rs` checks on every fixture that the stage's inputs
/// are all the file rules need.
#[salsa::tracked(returns(ref))]
pub(crate) fn file_context(db: &dyn Db, project: Project, file: SourceFile) -> Vec<InputFact> {
    db.log().executed("file_context", Some(file.path(db)));
    let mut keys: Vec<Value> = file_resolved(db, file)
        .tuples_values()
        .chain(class_context(db, project, file).derived.tuples_values())
        .chain(file_keys(db, project, file).iter().copied())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let mut context = project_context(project.written_project_facts(db), &keys);
    context.retain(datalog::FILE.reads_fact);
    context
}

/// The `file` stage for one file, over its own base facts, the `resolve`
/// tuples whose first argument occurs in them (`file_resolved`), the slice
/// of the class table its member lookups reach (`class_context`) and its
/// `file_context`. Those are assembled here and dropped after the run
/// rather than kept as a value of their own: each is a memoized query
/// already, so equal parts still let salsa skip the file's rules.
#[salsa::tracked(returns(ref))]
pub(crate) fn file_stage(db: &dyn Db, project: Project, file: SourceFile) -> Outputs {
    db.log().executed("file_stage", Some(file.path(db)));
    let members = class_context(db, project, file);
    let facts: Vec<InputFact> = file_base_facts(db, project, file)
        .iter()
        .chain(file_context(db, project, file))
        .chain(&members.facts)
        .copied()
        .filter(datalog::FILE.reads_fact)
        .collect();
    let resolved = file_resolved(db, file);
    let merged;
    let derived = if members.derived == Outputs::default() {
        resolved
    } else {
        let mut union = resolved.clone();
        union.extend(&members.derived);
        merged = union;
        &merged
    };
    run_stage(db, "file_stage", &datalog::FILE, &facts, derived)
}

/// What the `project` stage reads: base facts and the tuples of earlier
/// stages, from every file.
#[salsa::tracked(returns(ref))]
pub(crate) fn project_inputs(db: &dyn Db, project: Project) -> StageInputs {
    db.log().executed("project_inputs", None);
    whole_project_inputs(
        db,
        project,
        &datalog::PROJECT,
        bucket_project_shares,
        &[resolved_for_project(db, project)],
    )
}

/// `CycleGroup` facts: the strongly connected components of the runtime
/// import graph with two or more files (Tarjan's algorithm, linear in the
/// edges), each named by its first file by path so that the facts do not
/// depend on interning order. The graph is the `RuntimeDependsOn` tuples
/// the `project` stage already gathered (its rules join them with these
/// facts), so an edit that leaves them as they were stops before this.
#[salsa::tracked(returns(ref))]
pub(crate) fn cycle_groups(db: &dyn Db, project: Project) -> Vec<InputFact> {
    db.log().executed("cycle_groups", None);
    let edges = &project_inputs(db, project).derived.runtime_depends_on();
    // Dense indices by binary search over the sorted nodes: a graph keyed
    // by hashing each node (`GraphMap`) spent most of this query hashing.
    let mut nodes: Vec<Node> = edges.iter().flat_map(|t| [t.0, t.1]).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let index = |node: Node| nodes.partition_point(|&n| n < node) as u32;
    let graph: petgraph::Graph<(), (), petgraph::Directed, u32> =
        petgraph::Graph::from_edges(edges.iter().map(|t| (index(t.0), index(t.1))));
    let mut facts = Vec::new();
    for component in petgraph::algo::tarjan_scc(&graph) {
        if component.len() < 2 {
            continue;
        }
        let files: Vec<Node> = component
            .iter()
            .filter_map(|i| nodes.get(i.index()).copied())
            .collect();
        let Some(&group) = files
            .iter()
            .min_by_key(|&&node| db.interner().node_text(node))
        else {
            continue;
        };
        facts.extend(
            files
                .iter()
                .map(|&file| InputFact::CycleGroup(CycleGroup(file, group))),
        );
    }
    facts.sort_unstable();
    facts
}

/// The inputs of a whole-project stage: every file's `share` of it (the
/// base facts it reads and what it takes of the file's `file` stage), the
/// project-level facts it reads, and what it reads of the `earlier` stages
/// (the `resolve` stage's through its own query, `resolved_for_project` or
/// `resolved_for_report`).
fn whole_project_inputs(
    db: &dyn Db,
    project: Project,
    stage: &StageProgram,
    bucket_share: fn(&dyn Db, Project, Bucket) -> &StageInputs,
    earlier: &[&Outputs],
) -> StageInputs {
    let mut inputs = gathered(db, project, stage, bucket_share);
    for outputs in earlier {
        stage.take_derived(&mut inputs.derived, outputs);
    }
    inputs
}

/// The `project` stage (cycles) over all files.
#[salsa::tracked(returns(ref))]
pub(crate) fn project_stage(db: &dyn Db, project: Project) -> Outputs {
    db.log().executed("project_stage", None);
    let inputs = project_inputs(db, project);
    let facts: Vec<InputFact> = inputs
        .facts
        .iter()
        .chain(cycle_groups(db, project))
        .copied()
        .collect();
    run_stage(
        db,
        "project_stage",
        &datalog::PROJECT,
        &facts,
        &inputs.derived,
    )
}

/// What the `report` stage reads: base facts and earlier stages' tuples.
#[salsa::tracked(returns(ref))]
pub(crate) fn report_inputs(db: &dyn Db, project: Project) -> StageInputs {
    db.log().executed("report_inputs", None);
    let whole = project_stage(db, project);
    let mut inputs = whole_project_inputs(
        db,
        project,
        &datalog::REPORT,
        bucket_report_shares,
        &[resolved_for_report(db, project), whole],
    );
    // Report rules start from what the project stage derived about a file
    // (its cycle edges) and join only what is about the nodes that names
    // (`docs/rule-authoring.md`). So the rest stays out: the stage indexes
    // the runtime imports of the files in cycles, not every one, and an
    // edit to a file in none leaves this value equal.
    let named: rustc_hash::FxHashSet<Value> = whole
        .tuples_values()
        .filter(|v| matches!(v, Value::Node(_)))
        .collect();
    inputs.facts.retain(|fact| named.contains(&fact.first()));
    inputs
        .derived
        .retain_heads(|first, _| named.contains(&first));
    inputs
}

/// The `report` stage (warnings on whole-project results) over all files.
#[salsa::tracked(returns(ref))]
pub(crate) fn report_stage(db: &dyn Db, project: Project) -> Outputs {
    db.log().executed("report_stage", None);
    let inputs = report_inputs(db, project);
    run_stage(
        db,
        "report_stage",
        &datalog::REPORT,
        &inputs.facts,
        &inputs.derived,
    )
}

/// Base facts and derived relations together, as `explain` reads them.
#[derive(Clone, Copy)]
pub struct Program<'a> {
    pub facts: &'a [InputFact],
    pub outputs: &'a Outputs,
}

/// Every derived relation: the union of the stages.
#[salsa::tracked(returns(ref))]
pub(crate) fn program(db: &dyn Db, project: Project) -> Outputs {
    db.log().executed("program", None);
    let mut outputs = resolve_stage(db, project).clone();
    outputs.extend(classes_outputs(db, project));
    for &(_, file) in files_by_node(db, project) {
        outputs.extend(file_stage(db, project, file));
    }
    outputs.extend(project_stage(db, project));
    outputs.extend(report_stage(db, project));
    outputs.normalize();
    outputs
}
