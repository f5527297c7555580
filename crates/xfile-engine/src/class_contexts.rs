//! Keeps every file's `classes` input (the slice of the class table its
//! member lookups reach, `ClassTable::context`) up to date, by delta.
//!
//! Why an input and not a query over the class table: the table is one
//! value for the whole project. A query per file that read it re-ran for
//! every file (1,497 on Django) whenever any class changed, and the table,
//! written high so that the files' chains keep their own durability, made
//! salsa walk every memo of the project: adding a method cost 130-160 ms on
//! Django and 470-510 ms on four copies.
//!
//! How: each file's context records the table keys its walk looked up,
//! found or not. When the table changes, the keys whose entries differ
//! pick the files to walk again; so do a file's own changes (its facts or
//! its `resolved` tuples, which seed the walk). The engine writes the
//! contexts that came out different, as it writes `resolved`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use super::classes::{self, ClassTable};
use super::datalog::{Node, Sym};
use super::db::{self, Db, Project, SourceFile, StageInputs};

/// The engine's side of the `classes` inputs. Shared by an engine and its
/// snapshots; only [`ClassContexts::changes`] (called from
/// `Engine::resolve`) touches it.
#[derive(Clone, Default)]
pub(crate) struct ClassContexts(Arc<Mutex<Last>>);

#[derive(Default)]
struct Last {
    /// The table the contexts were last made from.
    table: Option<Arc<ClassTable>>,
    /// Per file, the keys its context looked up, sorted.
    looked: FxHashMap<SourceFile, Looked>,
}

/// The table keys one file's context looked up, sorted.
type Looked = Box<[(Node, Sym)]>;

/// The files whose base facts were made since the engine last looked:
/// `file_base_facts` reports each run here (its value is unaffected), so
/// that a file whose facts changed without an edit of its own (an import
/// now resolving elsewhere) gets its context made again too. Shared by a
/// database and its snapshots.
#[derive(Clone, Default)]
pub(crate) struct FactsMade(Arc<Mutex<Vec<SourceFile>>>);

impl FactsMade {
    pub(crate) fn report(&self, file: SourceFile) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(file);
    }

    pub(crate) fn take(&self) -> Vec<SourceFile> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Below this many files to walk, one thread does it.
const PARALLEL_THRESHOLD: usize = 64;

impl ClassContexts {
    /// The files whose `classes` input must change, with their new
    /// context: of the files in `due` (given new `resolved` tuples), of
    /// those whose base facts were made anew ([`FactsMade`]) and of those
    /// whose looked-up keys changed in the table.
    /// `files` are the indexed files by path, to pass over (and forget)
    /// the inputs replaced or removed. With `all`, every context made is
    /// returned, equal or not: the first index writes every file's input,
    /// so that all start high (an empty context would otherwise stay at
    /// the placeholder's low durability, and every edit walk its chain).
    pub(crate) fn changes(
        &self,
        db: &db::Database,
        project: Project,
        due: FxHashSet<SourceFile>,
        files: &BTreeMap<String, SourceFile>,
        all: bool,
    ) -> Vec<(SourceFile, StageInputs)> {
        let live = |file: SourceFile| files.get(file.path(db)) == Some(&file);
        let table = db::class_table(db, project).clone();
        let mut guard = self.lock();
        let last = &mut *guard;
        let mut work = due;
        work.extend(db.facts_made().take());
        match &last.table {
            Some(old) if Arc::ptr_eq(old, &table) => {}
            Some(old) => {
                let changed = ClassTable::changed_keys(old, &table);
                if !changed.is_empty() {
                    work.extend(
                        last.looked
                            .iter()
                            .filter(|(_, keys)| keys.iter().any(|k| changed.contains(k)))
                            .map(|(file, _)| *file),
                    );
                }
            }
            None => {}
        }
        last.table = Some(table.clone());
        // A file replaced or removed leaves its record behind: dropped here
        // once the records outnumber the files by half.
        if last.looked.len() > files.len() * 3 / 2 {
            last.looked.retain(|file, _| live(*file));
        }
        let work: Vec<SourceFile> = work.into_iter().filter(|&f| live(f)).collect();
        drop(guard);
        let walk = |db: &mut db::Database, &file: &SourceFile| {
            db.log().executed("class_context", Some(file.path(db)));
            let mut looked = Vec::new();
            let context = context_of(db, project, &table, file, &mut looked);
            (file, context, looked.into_boxed_slice())
        };
        let made: Vec<(SourceFile, StageInputs, Looked)> = if work.len() >= PARALLEL_THRESHOLD {
            work.par_iter().map_with(db.clone(), walk).collect()
        } else {
            let mut own = db.clone();
            work.iter().map(|file| walk(&mut own, file)).collect()
        };
        let mut last = self.lock();
        made.into_iter()
            .filter_map(|(file, context, looked)| {
                last.looked.insert(file, looked);
                (all || **file.classes(db) != context).then_some((file, context))
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Last> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The classes one file's member lookups can reach, from its base facts
/// and `resolved` tuples.
fn context_of(
    db: &dyn Db,
    project: Project,
    table: &ClassTable,
    file: SourceFile,
    looked: &mut Vec<(Node, Sym)>,
) -> StageInputs {
    let facts = db::file_base_facts(db, project, file).facts();
    let names = classes::attribute_names(facts);
    if names.is_empty() {
        return StageInputs::default();
    }
    let resolved = file.resolved(db);
    let (facts, derived) = table.context(classes::seeds(facts, resolved), &names, looked);
    StageInputs { facts, derived }
}
