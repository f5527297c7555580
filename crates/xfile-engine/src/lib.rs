//! The incremental engine: salsa inputs and queries over one project's files,
//! and the Datalog program the rules compile to. [`Engine`] is the layer's
//! one entry point; it knows nothing of the file system or of adapters.

mod base_facts;
mod buckets;
mod change;
mod class_contexts;
mod classes;
pub mod datalog;
mod db;
mod entry_points;
pub mod explain;
mod intern;
mod layers;
mod modules;
mod resolve;
mod resolve_parts;
mod resolved_inputs;
mod semantic;
mod site_ranks;
mod source_text;
mod string_links;
mod test_modules;
mod tree;

/// Hashes of the sources the warm-start cache's entries come from, for its
/// key: a build whose rules, front end or engine differ reads none of an
/// older build's entries.
pub mod cache_keys {
    /// The rules (`rules/*.dl`).
    pub const RULES: &str = env!("XFILE_RULES_HASH");
    /// The front end's sources and the locked parser versions.
    pub const FRONT_END: &str = env!("XFILE_FRONT_END_HASH");
    /// The front end and the engine, which the cached answers come from.
    pub const ENGINE: &str = env!("XFILE_ENGINE_HASH");
}

use std::collections::BTreeMap;
use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashSet;
use salsa::{Durability, Setter};

pub use self::change::{Applied, Change, FileText};
use self::datalog::Outputs;
use self::db::{Bucket, Database, Db, Project, SourceFile};
pub use self::db::{Program, Recomputation};
pub use self::entry_points::{EntryPointSpec, parse as parse_entry_points};
use self::intern::Interner;
pub use self::intern::is_marker;
pub use self::layers::Layer;
pub use self::semantic::{CallEdge, RefKind, Reference};
pub use self::source_text::{TextLoader, TextRef};
pub use self::string_links::{LinkSite, LinkTuple};
pub use self::test_modules::TestPatterns;
use xfile_python::ModuleFacts;

/// An attribute that names a class member for certain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberUse {
    pub line: u32,
    /// The file that defines the member.
    pub file: String,
    /// Its qualified name, such as `Model.save`.
    pub member: String,
    /// The attribute is only read: neither called nor what a call or
    /// another attribute is made on (`partial(self.clean)`).
    pub read: bool,
}

/// A module's attribute read without a call (`models.CASCADE`) that is a
/// definition of another project file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttributeRead {
    pub line: u32,
    /// The file that defines it.
    pub file: String,
    pub symbol: String,
}

/// A name of a module that is a definition of another project file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportedName {
    pub name: String,
    pub file: String,
    /// The definition's name in `file`.
    pub symbol: String,
}

/// One project's model. Several engines can live side by side. Its inputs
/// change through [`Engine::apply`] alone.
///
/// A clone is a snapshot: it shares the salsa storage and sees the inputs as
/// they were when it was taken. Changing an input on one handle cancels the
/// queries running on the others and waits until they are dropped (salsa's
/// rule), so snapshots must be short-lived and readers must retry on
/// `salsa::Cancelled`.
#[derive(Clone)]
pub struct Engine {
    db: Database,
    project: Project,
    files: Arc<BTreeMap<String, SourceFile>>,
    /// Per file, the engine-wide change counter at its last change: a cheap
    /// staleness stamp for caches above the engine.
    revisions: Arc<BTreeMap<String, u64>>,
    changes: u64,
    /// Files added since the last [`Engine::analyze`], to decide whether
    /// computing their facts in parallel is worth it.
    unanalyzed: usize,
    /// The module files by directory, behind the per-directory inputs.
    tree: Arc<tree::Tree>,
    /// Python files too large to index, sorted: modules all the
    /// same, so they are in `tree`.
    unindexed: Arc<Vec<String>>,
    /// What every file's `resolved` input was last written from.
    resolved_inputs: resolved_inputs::ResolvedInputs,
    /// What every file's `classes` input was last made from.
    class_contexts: class_contexts::ClassContexts,
    /// Files given new `resolved` tuples, whose `classes` input is to be
    /// made again (with those whose facts were made anew).
    contexts_due: FxHashSet<SourceFile>,
    /// Many files were new at the last [`Engine::resolve`], or every file's
    /// chain was to be checked (`walk_due`): the rest of the analysis runs
    /// every file's rules on all cores.
    many_new: bool,
    /// An input of the first index was written over its high value: salsa
    /// will check every file's chain, which `analyze` then does on all
    /// cores, file by file, instead of one bucket query after another.
    walk_due: bool,
    /// Files whose `semantic`, `resolved` and `classes` inputs are low
    /// already: made ready for an edit ([`Engine::prepare_for_edits`]),
    /// added after the first index, or given a new input since
    /// ([`Engine::replacement`]).
    prepared: Arc<FxHashSet<SourceFile>>,
}

/// Below this many new files, analysis runs on the calling thread: spawning
/// costs more than it saves.
const PARALLEL_THRESHOLD: usize = 32;

/// `count` empty buckets, their file lists medium as the first index
/// writes them (`db::Project::buckets`).
fn empty_buckets(db: &Database, count: usize) -> Vec<Bucket> {
    (0..count)
        .map(|_| {
            Bucket::builder(Vec::new())
                .files_durability(Durability::MEDIUM)
                .new(db)
        })
        .collect()
}

impl Engine {
    pub fn new(extra_search_paths: Vec<String>) -> Self {
        let db = Database::default();
        let buckets = empty_buckets(&db, buckets::MIN_BUCKETS);
        let project = Project::builder(
            buckets,
            extra_search_paths,
            Vec::new(),
            TestPatterns::default(),
            Vec::new(),
            Vec::new(),
            Arc::default(),
            (),
        )
        .buckets_durability(Durability::HIGH)
        .extra_search_paths_durability(Durability::HIGH)
        .sub_projects_durability(Durability::HIGH)
        .test_patterns_durability(Durability::HIGH)
        .layers_durability(Durability::HIGH)
        .entry_points_durability(Durability::HIGH)
        .written_project_facts_durability(Durability::HIGH)
        .low_mark_durability(Durability::LOW)
        .new(&db);
        let tree = Arc::new(tree::Tree::new(&db));
        Self {
            db,
            project,
            files: Arc::default(),
            revisions: Arc::default(),
            changes: 0,
            unanalyzed: 0,
            tree,
            unindexed: Arc::default(),
            resolved_inputs: Default::default(),
            class_contexts: Default::default(),
            contexts_due: Default::default(),
            many_new: false,
            walk_due: false,
            prepared: Arc::default(),
        }
    }

    /// A change stamp per path, for readers that cache by revision.
    fn stamp(&mut self, path: &str) {
        self.changes += 1;
        Arc::make_mut(&mut self.revisions).insert(path.to_string(), self.changes);
    }

    /// Unwinds with `salsa::Cancelled` if an update is waiting for this
    /// snapshot: for long loops above the engine that call no query for a
    /// while (an update blocks until every snapshot is dropped).
    pub fn check_cancelled(&self) {
        use salsa::Database as _;
        self.db.unwind_if_revision_cancelled();
    }

    /// A counter that grows with every change to any file or to the file set.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// The change stamp of `path`: it grows whenever the file's text changes.
    pub fn revision(&self, path: &str) -> Option<u64> {
        self.revisions.get(path).copied()
    }

    /// Whether [`Engine::prepare_for_edits`] would write the inputs of the
    /// file at `path`.
    pub fn needs_preparing(&self, path: &str) -> bool {
        self.files
            .get(path)
            .is_some_and(|&file| self.holds_index_values(file))
    }

    /// Makes the files at `paths` ready to be edited cheaply, returning how
    /// many it wrote: their `semantic`, `resolved` and `classes` inputs are
    /// written again, unchanged, at low durability. A file of the first index holds
    /// them high, and salsa reports a write at the durability it replaces,
    /// so this walks every file's chain once (in the next
    /// [`Engine::analyze`]); its first edit then checks only the low part.
    /// An unprepared file's first edit costs less than this walk (it gives
    /// the file a new input, `Engine::replacement`), so preparing pays only
    /// where the walk is done while nothing waits. Not every file is
    /// prepared: low chains are what every later edit checks one by one. Nor is its directory's listing: a
    /// package's is read by every `from package import Name` of a name its
    /// `__init__` binds (the lookup of a submodule `Name` finds none), so
    /// written low it made hundreds of importers' chains low, and prepared
    /// first edits on Django 3-5 ms slower, to save 10-15 ms on the first
    /// new file in that directory.
    pub fn prepare_for_edits<'a>(&mut self, paths: impl IntoIterator<Item = &'a str>) -> usize {
        let mut written = 0;
        for path in paths {
            if !self.needs_preparing(path) {
                continue;
            }
            let file = self.files[path];
            let semantic = file.semantic(&self.db).clone();
            file.set_semantic(&mut self.db)
                .with_durability(Durability::LOW)
                .to(semantic);
            self.lower_derived(file);
            written += 1;
        }
        written
    }

    /// Writes `file`'s `resolved` and `classes` inputs again, unchanged, at
    /// low durability, and counts the file prepared: the write over the first index's high
    /// value, which makes salsa check every file's chain once, so that
    /// [`Engine::analyze`] does that check on all cores (`walk_due`).
    fn lower_derived(&mut self, file: SourceFile) {
        let resolved = file.resolved(&self.db).clone();
        file.set_resolved(&mut self.db)
            .with_durability(Durability::LOW)
            .to(resolved);
        let classes = file.classes(&self.db).clone();
        file.set_classes(&mut self.db)
            .with_durability(Durability::LOW)
            .to(classes);
        Arc::make_mut(&mut self.prepared).insert(file);
        self.walk_due = true;
    }

    pub fn test_patterns(&self) -> &TestPatterns {
        self.project.test_patterns(&self.db)
    }

    pub fn sub_projects(&self) -> &[String] {
        self.project.sub_projects(&self.db)
    }

    pub fn unindexed(&self) -> &[String] {
        &self.unindexed
    }

    /// The declared entry points, in the order they were set.
    pub fn entry_points(&self) -> &[EntryPointSpec] {
        self.project.entry_points(&self.db)
    }

    /// Computes every file's facts (on all cores when many are new), then
    /// every rule stage and the dependents index: what dependencies and
    /// dependents are answered from. The union of all relations
    /// ([`Engine::outputs`], for queries, explanations and exports) is left
    /// until someone asks. Queries are memoized, so this only does what is
    /// out of date.
    ///
    /// [`Engine::apply`] ends with this. It is public for the callers that
    /// write without it and let readers in before the rest:
    /// [`Engine::apply_inputs`] and [`Engine::prepare_for_edits`].
    pub fn analyze(&mut self) {
        self.resolve();
        let files: Vec<SourceFile> = if std::mem::take(&mut self.many_new) {
            self.files.values().copied().collect()
        } else {
            Vec::new()
        };
        let project = self.project;
        if !files.is_empty() {
            db::class_table(&self.db, project);
        }
        // Each file's rules, then each bucket's shares of the later
        // stages, on all cores when many files are new.
        files
            .par_iter()
            .for_each_with(self.db.clone(), |db, &file| {
                db::file_stage(db, project, file);
            });
        if !files.is_empty() {
            self.project.buckets(&self.db).par_iter().for_each_with(
                self.db.clone(),
                |db, &bucket| {
                    db::bucket_project_shares(db, project, bucket);
                    db::bucket_report_shares(db, project, bucket);
                    semantic::bucket_dependents(db, project, bucket);
                },
            );
        }
        db::report_stage(&self.db, self.project);
        semantic::dependents_index(&self.db, self.project);
        // What the first index wrote of the module tree stays high; what
        // changes later is low (`tree.rs`), and so are the file lists.
        if !self.tree.settled() {
            Arc::make_mut(&mut self.tree).settle();
        }
    }

    /// Runs name resolution and writes each file's `resolved` input from
    /// it: what every read needs after an input changed, and the only part
    /// of [`Engine::analyze`] that writes inputs. So it must run while no
    /// snapshot is held (a write waits for every snapshot to be dropped);
    /// the rest of the analysis can then run beside readers.
    fn resolve(&mut self) {
        let walk = std::mem::take(&mut self.walk_due);
        let many = std::mem::take(&mut self.unanalyzed) >= PARALLEL_THRESHOLD;
        // Either way the later stages run on all cores too.
        self.many_new = many || walk;
        let project = self.project;
        if many {
            // Each file's base facts (with their keys), then each bucket's
            // class facts, so that the stages gather on one thread what is
            // already there.
            let files: Vec<SourceFile> = self.files.values().copied().collect();
            files
                .par_iter()
                .for_each_with(self.db.clone(), |db, &file| {
                    db::file_base_facts(db, project, file);
                });
            project
                .buckets(&self.db)
                .par_iter()
                .for_each_with(self.db.clone(), |db, &bucket| {
                    db::bucket_class_inputs(db, project, bucket);
                });
        } else if walk {
            self.check_buckets();
        }
        loop {
            let (changes, first) = self.resolved_inputs.changes(&self.db, project);
            let mut replacements = self.write_resolved(changes, first);
            if replacements.is_empty() {
                // The class table, then the contexts it changed and those
                // of the files written so far.
                let due = std::mem::take(&mut self.contexts_due);
                let all = !self.tree.settled();
                let contexts =
                    self.class_contexts
                        .changes(&self.db, project, due, &self.files, all);
                replacements = self.write_classes(contexts);
            }
            if replacements.is_empty() {
                break;
            }
            // The replaced files' tuples are in their new inputs already:
            // the next round finds them equal and writes nothing.
            self.sync_file_set(replacements, Vec::new());
            self.many_new = true;
            self.check_buckets();
        }
        // What the replacements added is analyzed in this round.
        self.unanalyzed = 0;
        let facts = db::project_facts(&self.db, project).clone();
        if self.resolved_inputs.project_facts_ran(&facts)
            && **project.written_project_facts(&self.db) != *facts
        {
            project.set_written_project_facts(&mut self.db).to(facts);
        }
    }

    /// The stages' bucket queries, checked (and the edited files' made
    /// again) on all cores before the stages gather them: after a bucket's
    /// file list changed, or an input of the first index was written over.
    fn check_buckets(&self) {
        let project = self.project;
        project
            .buckets(&self.db)
            .par_iter()
            .for_each_with(self.db.clone(), |db, &bucket| {
                db::bucket_files_keys(db, project, bucket);
                db::bucket_resolve_shares(db, project, bucket);
                db::bucket_class_inputs(db, project, bucket);
                db::bucket_path_facts(db, project, bucket);
            });
    }

    /// Writes each file's new `resolved` tuples: high on the first run, low
    /// later (`resolved_inputs.rs`). A file still holding the first index's
    /// values (an importer of an edited module, say) is given a new input
    /// instead ([`Engine::holds_index_values`]). Returns those
    /// replacements, for the buckets' file lists.
    fn write_resolved(
        &mut self,
        changes: Vec<(SourceFile, resolved_inputs::FileResolved)>,
        first: bool,
    ) -> Vec<(usize, SourceFile)> {
        let durability = if first {
            Durability::HIGH
        } else {
            Durability::LOW
        };
        let mut replacements = Vec::new();
        for (file, tuples) in changes {
            let tuples = Arc::new(tuples);
            if self.holds_index_values(file) {
                replacements.push(self.replacement(file, |held| held.resolved = tuples));
                continue;
            }
            file.set_resolved(&mut self.db)
                .with_durability(durability)
                .to(tuples);
            self.contexts_due.insert(file);
        }
        replacements
    }

    /// Writes each file's new `classes` input, as [`Engine::write_resolved`]
    /// writes `resolved`: high on the first index, low later, and a file
    /// still holding the first index's value is replaced instead.
    fn write_classes(
        &mut self,
        contexts: Vec<(SourceFile, db::StageInputs)>,
    ) -> Vec<(usize, SourceFile)> {
        let durability = self.tree.durability(Durability::HIGH);
        let mut replacements = Vec::new();
        for (file, context) in contexts {
            let context = Arc::new(context);
            if self.holds_index_values(file) {
                replacements.push(self.replacement(file, |held| held.classes = context));
                continue;
            }
            file.set_classes(&mut self.db)
                .with_durability(durability)
                .to(context);
        }
        replacements
    }

    /// Every derived relation, up to date with the inputs.
    pub fn outputs(&self) -> &Outputs {
        db::program(&self.db, self.project)
    }

    /// Base facts and derived relations, for explanations and queries over
    /// base relations (gathering every base fact is kept off the update path).
    pub fn program(&self) -> Program<'_> {
        Program {
            facts: db::all_facts(&self.db, self.project),
            outputs: self.outputs(),
        }
    }

    /// Every `Warning` tuple, sorted: the relation of [`Engine::outputs`]
    /// without the union of every other relation.
    pub fn warning_tuples(&self) -> &[datalog::Warning] {
        semantic::warnings(&self.db, self.project)
    }

    /// How many imports, calls and bases [`Engine::outputs`] holds, counted
    /// without building it.
    pub fn reference_counts(&self) -> [usize; 3] {
        semantic::reference_counts(&self.db, self.project)
    }

    /// The module the import at `site` of `path` names (`Imports`), from
    /// that file's own rules.
    pub fn import_target(&self, path: &str, site: datalog::Site) -> Option<datalog::Node> {
        let node = self.interner().find_node(path)?;
        let &file = self.files.get(path)?;
        let imports = &db::file_stage(&self.db, self.project, file).imports();
        let start = imports.partition_point(|t| (t.0, t.1) < (node, site));
        imports
            .get(start)
            .filter(|t| (t.0, t.1) == (node, site))
            .map(|t| t.2)
    }

    /// Every import, call and base of the project that resolves for certain.
    pub fn references(&self) -> Vec<Reference> {
        self.paths().flat_map(|p| self.references_from(p)).collect()
    }

    /// The references whose source is `path`, read from its own rules'
    /// results (no project-wide union).
    pub fn references_from(&self, path: &str) -> Vec<Reference> {
        match (self.interner().find_node(path), self.files.get(path)) {
            (Some(node), Some(&file)) => {
                semantic::references_from(db::file_stage(&self.db, self.project, file), node)
            }
            _ => Vec::new(),
        }
    }

    /// The imports of `path`, each to the module file (or marker) its
    /// statement names, from that file's facts and the module tree alone:
    /// no re-export is followed (`symbol` and `defined_in` are `None`), so
    /// this needs neither the other files' texts nor the rules. The import
    /// references of [`Engine::references_from`] are the same, with those
    /// two filled in.
    pub fn imports_from(&self, path: &str) -> Vec<Reference> {
        let Some(&file) = self.files.get(path) else {
            return Vec::new();
        };
        let mut imports: Vec<Reference> = db::file_base_facts(&self.db, self.project, file)
            .facts()
            .iter()
            .filter_map(|fact| match fact {
                datalog::InputFact::ImportStmt(stmt) => Some(Reference {
                    source: stmt.0,
                    site: stmt.1,
                    kind: RefKind::Import,
                    target: stmt.2,
                    symbol: None,
                    defined_in: None,
                }),
                _ => None,
            })
            .collect();
        imports.sort_unstable();
        imports
    }

    /// The references of other files that point into `path`: they target
    /// it, or (imports) reach a definition in it through re-exports. Only
    /// the files `DependentOf` lists are read, so this costs what the
    /// answer costs.
    pub fn references_to(&self, path: &str) -> Vec<Reference> {
        let Some(node) = self.interner().find_node(path) else {
            return Vec::new();
        };
        self.dependent_nodes(node)
            .flat_map(|source| self.references_from(&self.interner().node_text(source)))
            .filter(|r| r.reaches(node) && r.source != node)
            .collect()
    }

    fn dependent_nodes(&self, node: datalog::Node) -> impl Iterator<Item = datalog::Node> + '_ {
        semantic::dependents(&self.db, self.project, node)
            .iter()
            .map(|t| t.1)
    }

    /// The project files `path` depends on (`DependsOn`).
    pub fn dependency_files(&self, path: &str) -> Vec<String> {
        let Some(&file) = self.files.get(path) else {
            return Vec::new();
        };
        self.texts(
            db::file_stage(&self.db, self.project, file)
                .depends_on()
                .iter()
                .map(|t| t.1),
        )
    }

    /// The project files that depend on `path` (`DependentOf`).
    pub fn dependent_files(&self, path: &str) -> Vec<String> {
        match self.interner().find_node(path) {
            Some(node) => self.texts(self.dependent_nodes(node)),
            None => Vec::new(),
        }
    }

    /// Paths (or markers) of `nodes`.
    fn texts(&self, nodes: impl IntoIterator<Item = datalog::Node>) -> Vec<String> {
        let interner = self.interner();
        nodes
            .into_iter()
            .map(|n| interner.node_text(n).to_string())
            .collect()
    }

    /// The shortest import cycle through `path` (paths, from it back to
    /// it), if it lies on one.
    pub fn cycle_through(&self, path: &str) -> Option<Vec<String>> {
        let node = self.interner().find_node(path)?;
        Some(self.texts(semantic::cycle_through(&self.db, self.project, node)?))
    }

    /// The shortest import cycle that starts with the import edge `path` →
    /// `next`, if that edge lies on one.
    pub fn cycle_via(&self, path: &str, next: &str) -> Option<Vec<String>> {
        let interner = self.interner();
        let (file, next) = (interner.find_node(path)?, interner.find_node(next)?);
        Some(self.texts(semantic::cycle_via(&self.db, self.project, file, next)?))
    }

    /// The `limit` files with the most dependents, most first (ties by path).
    pub fn most_depended_on(&self, limit: usize) -> Vec<(String, usize)> {
        let interner = self.interner();
        let index = semantic::dependents_index(&self.db, self.project);
        let mut counts: Vec<(String, usize)> = index
            .chunk_by(|a, b| a.0 == b.0)
            .map(|group| (interner.node_text(group[0].0).to_string(), group.len()))
            .collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        counts.truncate(limit);
        counts
    }

    /// How many other files import (through any re-export chain), call or
    /// inherit from definition `symbol` of `path`.
    pub fn usage_count(&self, path: &str, symbol: &str) -> usize {
        let interner = self.interner();
        let (Some(node), Some(sym)) = (interner.find_node(path), interner.find_sym(symbol)) else {
            return 0;
        };
        let counts = semantic::usage_counts(&self.db, self.project);
        counts
            .binary_search_by_key(&(node, sym), |(key, _)| *key)
            .map_or(0, |i| counts[i].1 as usize)
    }

    /// The calls of definition `symbol` (a qualified name such as
    /// `Model.save`) of `path`, from every file, by callee then caller.
    pub fn callers(&self, path: &str, symbol: &str) -> Vec<CallEdge> {
        let interner = self.interner();
        match (interner.find_node(path), interner.find_sym(symbol)) {
            (Some(node), Some(sym)) => {
                semantic::callers(&self.db, self.project, node, sym).to_vec()
            }
            _ => Vec::new(),
        }
    }

    /// The calls made in `symbol` (a qualified name, or `<module>`) of
    /// `path`, read from that file's own rules.
    pub fn callees(&self, path: &str, symbol: &str) -> Vec<CallEdge> {
        let interner = self.interner();
        match (
            interner.find_node(path),
            interner.find_sym(symbol),
            self.files.get(path),
        ) {
            (Some(node), Some(sym), Some(&file)) => {
                semantic::callees(db::file_stage(&self.db, self.project, file), node, sym)
            }
            _ => Vec::new(),
        }
    }

    /// `path`'s node, the results of its own rules and its facts: what
    /// answers about one file's uses read.
    fn own_rules(&self, path: &str) -> Option<(datalog::Node, &Outputs, &ModuleFacts)> {
        let node = self.interner().find_node(path)?;
        let &file = self.files.get(path)?;
        let facts = self.facts(path)?;
        Some((node, db::file_stage(&self.db, self.project, file), facts))
    }

    /// The attributes of `path` that name a class member for certain
    /// (`self.save`, `Model.objects`, `super().clean`), in site order.
    pub fn member_uses(&self, path: &str) -> Vec<MemberUse> {
        let Some((node, outputs, facts)) = self.own_rules(path) else {
            return Vec::new();
        };
        let interner = self.interner();
        let semantic = &facts.semantic;
        let reads: FxHashSet<u32> = semantic
            .reads
            .iter()
            .filter_map(|&id| Some(semantic.expressions.get(id as usize)?.site))
            .collect();
        semantic::keyed(outputs.member_ref(), |t| t.0, node)
            .iter()
            .filter_map(|t| {
                Some(MemberUse {
                    line: facts.sites.get(t.1.0 as usize)?.line,
                    file: interner.node_text(t.2).to_string(),
                    member: interner.sym_text(t.3).to_string(),
                    read: reads.contains(&t.1.0),
                })
            })
            .collect()
    }

    /// The attributes of modules that `path` reads without calling them
    /// and that are, for certain, definitions of other project files
    /// (`Reads`), in site order.
    pub fn attribute_reads(&self, path: &str) -> Vec<AttributeRead> {
        let Some((node, outputs, facts)) = self.own_rules(path) else {
            return Vec::new();
        };
        let interner = self.interner();
        semantic::keyed(outputs.reads(), |t| t.0, node)
            .iter()
            .filter_map(|t| {
                Some(AttributeRead {
                    line: facts.sites.get(t.1.0 as usize)?.line,
                    file: interner.node_text(t.2).to_string(),
                    symbol: interner.sym_text(t.3).to_string(),
                })
            })
            .collect()
    }

    /// The names bound at the top of `path` that are, for certain, a
    /// definition of another project file (imported, directly or through
    /// `import *` and re-exports), by name.
    pub fn imported_names(&self, path: &str) -> Vec<ImportedName> {
        let (Some(node), Some(&file)) = (self.interner().find_node(path), self.files.get(path))
        else {
            return Vec::new();
        };
        let interner = self.interner();
        let resolved = db::file_resolved(&self.db, file);
        resolved
            .resolves()
            .filter(|t| t.0 == node && t.2 != node && !t.2.is_external())
            .map(|t| ImportedName {
                name: interner.sym_text(t.1).to_string(),
                file: interner.node_text(t.2).to_string(),
                symbol: interner.sym_text(t.3).to_string(),
            })
            .collect()
    }

    /// The names `path` binds under a condition, itself or through the
    /// module it imports them from (`try: from psycopg import Jsonb` then
    /// `except ImportError: class Jsonb`): which binding runs is decided
    /// when the program runs, so resolution gives none ([`imported_names`]
    /// leaves them out). One entry per project definition the name may be
    /// (`MayResolve`), the file's own left out.
    ///
    /// [`imported_names`]: Engine::imported_names
    pub fn conditional_bindings(&self, path: &str) -> Vec<ImportedName> {
        let interner = self.interner();
        let Some(node) = interner.find_node(path) else {
            return Vec::new();
        };
        // No rule of the `file` stage reads these, so they are not in the
        // file's `resolved` input: read from the stage itself.
        let stage = db::resolve_stage(&self.db, self.project);
        semantic::keyed(stage.may_resolve(), |t| t.0, node)
            .iter()
            .filter(|t| t.2 != node)
            .map(|t| ImportedName {
                name: interner.sym_text(t.1).to_string(),
                file: interner.node_text(t.2).to_string(),
                symbol: interner.sym_text(t.3).to_string(),
            })
            .collect()
    }

    /// Whether `path` is a test module (by name, under `tests/`, or by the pytest settings).
    pub fn is_test_module(&self, path: &str) -> bool {
        db::test_matcher(&self.db, self.project).is_test(path)
    }

    /// The test modules that cover `path` (`TestCovers`), sorted. Only
    /// the files that depend on it are read: a covering test imports or
    /// calls into it.
    pub fn tests_covering(&self, path: &str) -> Vec<String> {
        let interner = self.interner();
        let Some(node) = interner.find_node(path) else {
            return Vec::new();
        };
        let mut tests: Vec<String> = self
            .dependent_nodes(node)
            .filter_map(|test| {
                let text = interner.node_text(test);
                let &file = self.files.get(&*text)?;
                let covers = &db::file_stage(&self.db, self.project, file).test_covers();
                covers
                    .iter()
                    .any(|c| c.0 == test && c.1 == node)
                    .then(|| text.to_string())
            })
            .collect();
        tests.sort();
        tests.dedup();
        tests
    }

    /// The method resolution order of class `class` (a qualified name) of
    /// `path` as (file, class) pairs, itself first, cut before the first
    /// base outside the project or unknown; empty for an unknown class.
    /// The classes of the project whose resolution order holds `class` of
    /// `path` (its subclasses, direct or not), as (file, class), sorted.
    pub fn subclasses(&self, path: &str, class: &str) -> Vec<(String, String)> {
        let interner = self.interner();
        let (Some(node), Some(sym)) = (interner.find_node(path), interner.find_sym(class)) else {
            return Vec::new();
        };
        let mut found: Vec<(String, String)> = db::class_table(&self.db, self.project)
            .subclasses((node, sym))
            .into_iter()
            .map(|(file, class)| {
                (
                    interner.node_text(file).to_string(),
                    interner.sym_text(class).to_string(),
                )
            })
            .collect();
        found.sort();
        found
    }

    pub fn mro(&self, path: &str, class: &str) -> Vec<(String, String)> {
        let interner = self.interner();
        let (Some(node), Some(sym)) = (interner.find_node(path), interner.find_sym(class)) else {
            return Vec::new();
        };
        db::class_table(&self.db, self.project)
            .mro((node, sym))
            .unwrap_or_default()
            .iter()
            .map(|&(file, class)| {
                (
                    interner.node_text(file).to_string(),
                    interner.sym_text(class).to_string(),
                )
            })
            .collect()
    }

    /// One shortest import cycle per group of files importing each other in
    /// a circle, as root-relative paths from the group's first file back to it.
    pub fn cycles(&self) -> Vec<Vec<String>> {
        semantic::cycles(&self.db, self.project)
            .iter()
            .map(|cycle| self.texts(cycle.iter().copied()))
            .collect()
    }

    pub fn facts(&self, path: &str) -> Option<&ModuleFacts> {
        self.shared_facts(path).map(|facts| &**facts)
    }

    /// [`Engine::facts`], shared: what a cache keeps without copying.
    pub fn shared_facts(&self, path: &str) -> Option<&Arc<ModuleFacts>> {
        let file = *self.files.get(path)?;
        Some(db::module_facts(&self.db, file))
    }

    /// `path`'s indexed text: held, or read back from disk if it has not
    /// changed there since (`None` if it has, or if it is not indexed).
    pub fn text(&self, path: &str) -> Option<Arc<str>> {
        let file = self.files.get(path)?;
        file.text(&self.db).get(path, self.db.text_loader())
    }

    /// [`Engine::text`] to read later, without this handle.
    pub fn text_ref(&self, path: &str) -> Option<TextRef> {
        let file = self.files.get(path)?;
        Some(TextRef::new(
            path,
            file.text(&self.db),
            self.db.text_loader(),
        ))
    }

    /// Whether `text` is `path`'s indexed text (`None`: not indexed).
    pub fn text_is(&self, path: &str, text: &str) -> Option<bool> {
        let file = self.files.get(path)?;
        Some(file.text(&self.db).is(text))
    }

    /// How to read a text back from disk: from now on, the engine keeps a
    /// file's text only until its facts are extracted. Set it before the
    /// first change.
    pub fn set_text_loader(&mut self, loader: TextLoader) {
        self.db.set_text_loader(loader);
    }

    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// The indexed files at `path` or below it (root-relative; the empty
    /// path is the root), by a range of the sorted paths: what an update
    /// of one directory reads, without going over every file.
    pub fn paths_within<'a>(&'a self, path: &'a str) -> impl Iterator<Item = &'a str> {
        self.files
            .range::<str, _>((std::ops::Bound::Included(path), std::ops::Bound::Unbounded))
            .map(|(p, _)| p.as_str())
            .take_while(move |p| p.starts_with(path))
            .filter(move |p| {
                path.is_empty() || p.len() == path.len() || p.as_bytes()[path.len()] == b'/'
            })
    }

    pub fn contains(&self, path: &str) -> bool {
        self.files.contains_key(path)
    }

    /// The dotted module name `path` (which need not exist) is imported
    /// by, from its own search root.
    pub fn module_name(&self, path: &str) -> String {
        let is_test = db::test_matcher(&self.db, self.project).is_test(path);
        let search = db::search_path_of(&self.db, self.project, path, is_test);
        modules::module_name(&search, path)
    }

    pub fn interner(&self) -> &Interner {
        db::Db::interner(&self.db)
    }

    /// Records the queries that execute from now until [`Engine::take_executions`].
    pub fn record_executions(&self) {
        self.db.execution_log().start();
    }

    pub fn take_executions(&self) -> db::Recomputation {
        self.db.execution_log().take()
    }
}
