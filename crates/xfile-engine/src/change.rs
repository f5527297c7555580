//! The one way in for changes: a [`Change`] says in plain data what is new
//! (texts, removed files, settings), and [`Engine::apply`] writes it into
//! the inputs in the order they need and brings what is derived up to
//! date. Callers hand over what they found; none orders the steps.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rayon::prelude::*;
use salsa::{Durability, Setter};

use super::db::{self, Database, Db, SourceFile, StageInputs};
use super::entry_points::EntryPointSpec;
use super::layers::Layer;
use super::resolved_inputs::FileResolved;
use super::source_text::SourceText;
use super::test_modules::TestPatterns;
use super::{Engine, PARALLEL_THRESHOLD, buckets, empty_buckets};
use xfile_python::{ModuleFacts, Semantic};

/// A change to one project's inputs: what [`Engine::apply`] takes. A
/// setting left `None` stays as it is, and a text equal to the one held
/// changes nothing, so a caller may hand over more than changed.
#[derive(Clone, Debug, Default)]
pub struct Change {
    /// Files to add or update. Written after `removed`: a path in both is
    /// indexed anew.
    pub files: Vec<FileText>,
    /// Files to remove, by path; a path not indexed is passed over.
    pub removed: Vec<String>,
    /// The directories below the root holding a `pyproject.toml`,
    /// `setup.py` or `setup.cfg`: they change the search path of the files
    /// inside them.
    pub sub_projects: Option<Vec<String>>,
    /// The Python files that exist but are not indexed (too large to index):
    /// imports resolve to them, they have no facts and are not among
    /// [`Engine::paths`].
    pub unindexed: Option<Vec<String>>,
    /// The architecture layers, top to bottom, that `InLayer` and
    /// `LayerAbove` facts come from.
    pub layers: Option<Vec<Layer>>,
    /// The entry points the project's `pyproject.toml` files declare.
    pub entry_points: Option<Vec<EntryPointSpec>>,
    /// The project's pytest settings that name test modules.
    pub test_patterns: Option<TestPatterns>,
}

/// One file's path and text.
#[derive(Clone, Debug)]
pub struct FileText {
    pub path: String,
    pub text: String,
    /// The facts `python::extract` gave for exactly this text (a warm
    /// start's cache), which stand in for parsing it. Wrong facts give
    /// wrong answers, so the caller must know they belong to the text (by
    /// content hash).
    pub facts: Option<Arc<ModuleFacts>>,
}

impl Change {
    /// The texts of `files` (path, text), to be parsed.
    pub fn texts(files: impl IntoIterator<Item = (String, String)>) -> Change {
        Change {
            files: files
                .into_iter()
                .map(|(path, text)| FileText {
                    path,
                    text,
                    facts: None,
                })
                .collect(),
            ..Change::default()
        }
    }

    /// The text of one file, to be parsed.
    pub fn text(path: impl Into<String>, text: impl Into<String>) -> Change {
        Change::texts([(path.into(), text.into())])
    }

    /// The removal of `paths`.
    pub fn removing(paths: impl IntoIterator<Item = impl Into<String>>) -> Change {
        Change {
            removed: paths.into_iter().map(Into::into).collect(),
            ..Change::default()
        }
    }
}

/// What [`Engine::apply`] changed, and how long its analysis took.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Files that were not indexed, by path, in the change's order.
    pub added: Vec<String>,
    /// Indexed files whose text changed.
    pub modified: Vec<String>,
    /// Indexed files removed.
    pub removed: Vec<String>,
    /// How long bringing what is derived up to date took, once the inputs
    /// were written (for [`Engine::apply_inputs`], name resolution alone):
    /// the rest of the call wrote inputs and parsed.
    pub analysis_time: Duration,
}

/// What a file's input holds beside its path and text, all written by the
/// engine: its semantic, facts made ahead, `resolved` tuples and class
/// context.
pub(crate) struct Held {
    pub(crate) semantic: Arc<Semantic>,
    preset: Option<Arc<ModuleFacts>>,
    pub(crate) resolved: Arc<FileResolved>,
    pub(crate) classes: Arc<StageInputs>,
}

/// A file whose text an update wrote, and the durability of its semantic.
struct Touched {
    file: SourceFile,
    durability: Durability,
    new: bool,
}

impl Engine {
    /// Writes `change` into the inputs, then computes every file's facts,
    /// every rule stage and the dependents index (what dependencies and
    /// dependents are answered from), as [`Engine::analyze`] does. Queries
    /// are memoized, so this does only what the change put out of date.
    pub fn apply(&mut self, change: Change) -> Applied {
        let mut applied = self.write(change);
        let started = Instant::now();
        self.analyze();
        applied.analysis_time = started.elapsed();
        applied
    }

    /// [`Engine::apply`] up to its last write: the inputs, then name
    /// resolution, which writes each file's `resolved` input. What is left,
    /// [`Engine::analyze`], reads the inputs only. A write waits until every
    /// snapshot is dropped, so a caller that serves readers from snapshots
    /// (the live service) holds them off for this part alone and lets them
    /// back in before the rest.
    pub fn apply_inputs(&mut self, change: Change) -> Applied {
        let mut applied = self.write(change);
        let started = Instant::now();
        self.resolve();
        applied.analysis_time = started.elapsed();
        applied
    }

    /// Writes `change` into the inputs and makes each written file's facts,
    /// without name resolution or rules: the first stage of an index, on
    /// which [`Engine::imports_from`] answers (the import graph). The other
    /// answers wait for [`Engine::analyze`], which completes the index.
    pub fn apply_files(&mut self, change: Change) -> Applied {
        self.write(change)
    }

    /// Writes the inputs `change` names: the settings, then the removals
    /// and the texts, each with one change to the file set, then the
    /// unindexed paths.
    fn write(&mut self, change: Change) -> Applied {
        let Change {
            files,
            removed,
            sub_projects,
            unindexed,
            layers,
            entry_points,
            test_patterns,
        } = change;
        if let Some(dirs) = sub_projects {
            self.set_sub_projects(dirs);
        }
        if let Some(entry_points) = entry_points {
            self.set_entry_points(entry_points);
        }
        if let Some(patterns) = test_patterns {
            self.set_test_patterns(patterns);
        }
        if let Some(layers) = layers {
            self.set_layers(layers);
        }
        let mut applied = Applied::default();
        self.remove_files(removed, &mut applied);
        self.set_files(files, &mut applied);
        if let Some(paths) = unindexed {
            self.set_unindexed(paths);
        }
        applied
    }

    /// Sets the sub-project directories (below the root, each holding a
    /// `pyproject.toml`, `setup.py` or `setup.cfg`), which change the
    /// search path of the files inside them; equal sets change nothing.
    fn set_sub_projects(&mut self, mut dirs: Vec<String>) {
        dirs.sort();
        dirs.dedup();
        if *self.project.sub_projects(&self.db) != dirs {
            self.changes += 1;
            self.project
                .set_sub_projects(&mut self.db)
                .with_durability(Durability::HIGH)
                .to(dirs);
        }
    }

    /// Sets the entry points the project's `pyproject.toml` files declare.
    fn set_entry_points(&mut self, entry_points: Vec<EntryPointSpec>) {
        if *self.project.entry_points(&self.db) != entry_points {
            self.changes += 1;
            self.project
                .set_entry_points(&mut self.db)
                .with_durability(Durability::HIGH)
                .to(entry_points);
        }
    }

    /// Sets the project's pytest test-module settings; equal settings
    /// change nothing.
    fn set_test_patterns(&mut self, patterns: TestPatterns) {
        if *self.project.test_patterns(&self.db) != patterns {
            self.changes += 1;
            self.project
                .set_test_patterns(&mut self.db)
                .with_durability(Durability::HIGH)
                .to(patterns);
        }
    }

    /// Sets the architecture layers (top to bottom) that `InLayer` and
    /// `LayerAbove` facts come from.
    fn set_layers(&mut self, layers: Vec<Layer>) {
        if *self.project.layers(&self.db) != layers {
            self.changes += 1;
            self.project
                .set_layers(&mut self.db)
                .with_durability(Durability::HIGH)
                .to(layers);
        }
    }

    /// Removes `paths` with one change to the file set (a deleted
    /// directory); a path not indexed is passed over.
    fn remove_files(&mut self, paths: Vec<String>, applied: &mut Applied) {
        let mut changed = Vec::new();
        let bucket_count = self.project.buckets(&self.db).len();
        for path in paths {
            Arc::make_mut(&mut self.revisions).remove(&path);
            self.changes += 1;
            if let Some(file) = Arc::make_mut(&mut self.files).remove(&path) {
                Arc::make_mut(&mut self.prepared).remove(&file);
                Arc::make_mut(&mut self.tree).remove(&path);
                changed.push(buckets::bucket_of(&path, bucket_count));
                applied.removed.push(path);
            }
        }
        if !changed.is_empty() {
            self.sync_file_set(Vec::new(), changed);
        }
    }

    /// Adds or updates `files` with one change to the file set. A text
    /// equal to what is held changes nothing, so a touch without an edit
    /// costs nothing downstream.
    fn set_files(&mut self, files: Vec<FileText>, applied: &mut Applied) {
        if self.files.is_empty() && !self.tree.settled() {
            // The first index decides how many buckets there are.
            let count = buckets::bucket_count(files.len());
            if count != self.project.buckets(&self.db).len() {
                let buckets = empty_buckets(&self.db, count);
                self.project
                    .set_buckets(&mut self.db)
                    .with_durability(Durability::HIGH)
                    .to(buckets);
            }
        }
        let bucket_count = self.project.buckets(&self.db).len();
        let mut added = Vec::new();
        let mut touched = Vec::new();
        for FileText { path, text, facts } in files {
            match self.files.get(&path) {
                Some(&file) => {
                    if !file.text(&self.db).is(&text) {
                        file.set_text(&mut self.db).to(SourceText::new(text));
                        // Facts handed in for the old text must not outlive it.
                        file.set_preset(&mut self.db).to(facts);
                        self.stamp(&path);
                        applied.modified.push(path);
                        touched.push(Touched {
                            file,
                            durability: Durability::LOW,
                            new: false,
                        });
                    }
                }
                None => {
                    let file = self.new_file(path.clone(), text, facts);
                    Arc::make_mut(&mut self.tree).add(&path);
                    added.push((buckets::bucket_of(&path, bucket_count), file));
                    applied.added.push(path.clone());
                    Arc::make_mut(&mut self.files).insert(path, file);
                    touched.push(Touched {
                        file,
                        durability: self.tree.durability(Durability::HIGH),
                        new: true,
                    });
                }
            }
        }
        if !added.is_empty() {
            self.sync_file_set(added, Vec::new());
        }
        self.refresh_semantics(&touched);
        // Their facts are extracted: an answer that shows their lines reads
        // them back from disk.
        if self.db.text_loader().is_some() {
            for touched in &touched {
                touched.file.text(&self.db).let_go();
            }
        }
    }

    /// Sets the Python files that exist but are not indexed (too large,
    /// too large): imports resolve to them, they have no facts and are not
    /// among [`Engine::paths`]. Equal sets change nothing.
    fn set_unindexed(&mut self, mut paths: Vec<String>) {
        paths.sort();
        paths.dedup();
        if *self.unindexed == paths {
            return;
        }
        self.changes += 1;
        let tree = Arc::make_mut(&mut self.tree);
        for gone in self
            .unindexed
            .iter()
            .filter(|p| paths.binary_search(p).is_err())
        {
            tree.remove(gone);
        }
        for new in paths
            .iter()
            .filter(|p| self.unindexed.binary_search(p).is_err())
        {
            tree.add(new);
        }
        self.walk_due |= tree.write(&mut self.db);
        self.unindexed = Arc::new(paths);
    }

    fn new_file(
        &mut self,
        path: String,
        text: String,
        preset: Option<Arc<ModuleFacts>>,
    ) -> SourceFile {
        self.stamp(&path);
        // `resolved` starts low so that its first write (high on the first
        // index, low for a file added later) reports no high change. So
        // does the semantic of a file added later: its first write reports
        // the placeholder's durability, and a medium one walked every
        // bucket's memos.
        let placeholder = self.tree.durability(Durability::MEDIUM);
        let held = Held {
            semantic: Arc::default(),
            preset,
            resolved: Arc::default(),
            classes: Arc::default(),
        };
        self.file_input(path, SourceText::new(text), held, placeholder)
    }

    /// A new input for the file at `path`, counted among the files to
    /// analyze and, once the first index is done, prepared: its `resolved`
    /// and `classes` inputs start low, and so does its semantic unless
    /// `durability` says otherwise.
    fn file_input(
        &mut self,
        path: String,
        text: SourceText,
        held: Held,
        durability: Durability,
    ) -> SourceFile {
        self.unanalyzed += 1;
        let Held {
            semantic,
            preset,
            resolved,
            classes,
        } = held;
        let file = SourceFile::builder(path, text, semantic, preset, resolved, classes)
            .path_durability(Durability::HIGH)
            .semantic_durability(durability)
            .resolved_durability(Durability::LOW)
            .classes_durability(Durability::LOW)
            .new(&self.db);
        if self.tree.settled() {
            Arc::make_mut(&mut self.prepared).insert(file);
        }
        file
    }

    /// Parses `files` (in parallel when there are many) and writes each
    /// one's `semantic` input where it changed, with the durability it
    /// comes with: the early cut-off point.
    ///
    /// Durability per file: the semantic of a file of the first index is
    /// HIGH, that of an edited file or of a file added later LOW. An edit then
    /// changes only LOW inputs, and salsa verifies in O(1) every memo that
    /// reads no LOW input: the other files' chains (their base facts,
    /// resolutions, search paths and shares) and the queries of the
    /// buckets holding no edited file, which read the MEDIUM file lists. A
    /// MEDIUM semantic would make every bucket query walk its edges (one
    /// per file) after each edit. Writing over a file's HIGH semantic would
    /// make salsa walk every file's chain (it reports the old durability),
    /// so the first edit of a file of the first index gives it a new input
    /// instead ([`Engine::replacement`]): its bucket's MEDIUM file list
    /// changes, and only the buckets' queries are walked, once. The file
    /// stays LOW afterwards, and so does its bucket, whose queries a later
    /// body-only edit anywhere then checks edge by edge.
    fn refresh_semantics(&mut self, files: &[Touched]) {
        // A new file's semantic is written even when it equals the
        // placeholder (an empty module's does): left unwritten, it would
        // keep the placeholder's durability, medium on the first index, and
        // salsa would walk the file's chain after every change.
        let extract = |db: &mut Database, touched: &Touched| {
            let file = touched.file;
            let semantic = &db::module_facts(db, file).semantic;
            (touched.new || file.semantic(db) != semantic)
                .then(|| (file, semantic.clone(), touched.durability))
        };
        let changed: Vec<(SourceFile, Arc<Semantic>, Durability)> =
            if files.len() >= PARALLEL_THRESHOLD {
                files
                    .par_iter()
                    .map_with(self.db.clone(), extract)
                    .flatten()
                    .collect()
            } else {
                let mut db = self.db.clone();
                let changed = files.iter().filter_map(|f| extract(&mut db, f)).collect();
                drop(db);
                changed
            };
        let mut replacements = Vec::new();
        for (file, semantic, durability) in changed {
            // The first edit of a file of the first index: `analyze` checks
            // the buckets' queries its new input makes it walk.
            if self.holds_index_values(file) {
                replacements.push(self.replacement(file, |held| held.semantic = semantic));
                continue;
            }
            file.set_semantic(&mut self.db)
                .with_durability(durability)
                .to(semantic);
        }
        if !replacements.is_empty() {
            self.sync_file_set(replacements, Vec::new());
            self.walk_due = true;
        }
    }

    /// Whether `file`'s inputs still hold the first index's values (it was
    /// neither edited, prepared nor added since). They are high, and salsa
    /// reports a write at the durability it replaces, so writing over any
    /// of them would make salsa verify every file's chain: such a file is
    /// given a new input instead ([`Engine::replacement`]).
    pub(crate) fn holds_index_values(&self, file: SourceFile) -> bool {
        self.tree.settled() && !self.prepared.contains(&file)
    }

    /// A new input for the indexed `file`, holding what it held with
    /// `change` made, low from the start as a new file's, put in its place
    /// (but not yet in its bucket's list, which takes the returned bucket
    /// index and input). That changes the bucket's file list, which only
    /// the buckets' queries read, not every file's chain. The text and the
    /// facts extracted from it carry over, so nothing is parsed again. The
    /// old input's memos stay behind, unread; salsa cannot drop an input.
    pub(crate) fn replacement(
        &mut self,
        file: SourceFile,
        change: impl FnOnce(&mut Held),
    ) -> (usize, SourceFile) {
        let path = file.path(&self.db).clone();
        let text = file.text(&self.db).clone();
        let mut held = Held {
            semantic: file.semantic(&self.db).clone(),
            preset: Some(db::module_facts(&self.db, file).clone()),
            resolved: file.resolved(&self.db).clone(),
            classes: file.classes(&self.db).clone(),
        };
        change(&mut held);
        let bucket = buckets::bucket_of(&path, self.project.buckets(&self.db).len());
        let new = self.file_input(path.clone(), text, held, Durability::LOW);
        Arc::make_mut(&mut self.files).insert(path, new);
        (bucket, new)
    }

    /// Writes the module-tree inputs that changed with the file set, and
    /// the file lists of the buckets (by index) that gained the `added`
    /// files or lost files (`emptied`): each from its old list, so the
    /// cost is the buckets', not the project's.
    pub(crate) fn sync_file_set(
        &mut self,
        added: Vec<(usize, SourceFile)>,
        mut emptied: Vec<usize>,
    ) {
        self.walk_due |= Arc::make_mut(&mut self.tree).write(&mut self.db);
        let buckets = self.project.buckets(&self.db).clone();
        let mut lists: Vec<Option<Vec<SourceFile>>> = vec![None; buckets.len()];
        emptied.extend(added.iter().map(|&(index, _)| index));
        for index in emptied {
            lists[index].get_or_insert_with(|| {
                let db = &self.db;
                let files = &self.files;
                buckets[index]
                    .files(db)
                    .iter()
                    .copied()
                    .filter(|&file| files.get(file.path(db)) == Some(&file))
                    .collect()
            });
        }
        for (index, file) in added {
            if let Some(list) = &mut lists[index] {
                let path = file.path(&self.db);
                let at = list.partition_point(|f| f.path(&self.db) < path);
                list.insert(at, file);
            }
        }
        // Medium as the first index writes them, so that an edit walks no
        // bucket's memos; low once a later change rewrites one, so that
        // the change walks that bucket's, not every bucket's (`tree.rs`).
        let durability = self.tree.durability(Durability::MEDIUM);
        for (bucket, list) in buckets.into_iter().zip(lists) {
            if let Some(files) = list {
                bucket
                    .set_files(&mut self.db)
                    .with_durability(durability)
                    .to(files);
            }
        }
    }
}
