//! Keeps every file's `resolved` input (the `resolve` and `classes` tuples
//! keyed by a node of its facts) equal to what the stages derive, by delta.
//!
//! Why an input and not a query: a query that read the stages' slices would
//! take their durability, and the stages read every file. Every file's
//! `file` stage chain would then be walked by salsa's verification after any
//! edit anywhere (on Django, ~60% of an update's time). Written here, each
//! file's chain reads only inputs of its own durability: the files an edit
//! did not reach are verified in O(1).
//!
//! How: after the stages ran, their slices and every file's keys are
//! compared with the last run's (each is shared, so an unchanged one is the
//! same allocation). The files whose keys changed, and the files that read
//! a key whose slice changed, get their tuples assembled again; those whose
//! tuples differ are rewritten. The first run writes every file with high
//! durability; later rewrites are low, so a file an edit reached is walked
//! from then on, and the others never are.

use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use super::buckets::{self, PerFile};
use super::datalog::{self, InputFact, Outputs, Value};
use super::db::{self, Db, Project, Slices, SourceFile};

/// The engine's side of the `resolved` inputs: the slices and keys they were
/// last written from. Shared by an engine and its snapshots; only
/// [`ResolvedInputs::changes`] (called from `Engine::analyze`) touches it.
#[derive(Clone, Default)]
pub(crate) struct ResolvedInputs(Arc<Mutex<Last>>);

#[derive(Default)]
struct Last {
    slices: Option<[Arc<Slices>; 2]>,
    /// Every file's keys, bucket by bucket (empty before the first run).
    keys: Vec<PerFile<Arc<[Value]>>>,
    by_file: FxHashMap<SourceFile, Arc<[Value]>>,
    /// The files whose keys include a node.
    readers: FxHashMap<Value, FxHashSet<SourceFile>>,
    /// The project-level facts last seen: the engine writes them to an
    /// input too, and compares them (at a cost) only when their query ran
    /// again.
    project_facts: Option<Arc<Vec<InputFact>>>,
}

/// Below this many files to assemble, one thread does it.
const PARALLEL_THRESHOLD: usize = 64;

impl ResolvedInputs {
    /// The files whose `resolved` input must change, with their new tuples,
    /// and whether this is the first run (every file is new to it). Runs
    /// the `resolve` and `classes` stages if they are out of date.
    pub(crate) fn changes(
        &self,
        db: &db::Database,
        project: Project,
    ) -> (Vec<(SourceFile, FileResolved)>, bool) {
        let slices = [
            db::resolved_slices(db, project).clone(),
            db::class_slices(db, project).clone(),
        ];
        let keys = db::files_keys(db, project);
        let mut guard = self.lock();
        let last = &mut *guard;
        let first = last.slices.is_none();
        let same_slices = last
            .slices
            .as_ref()
            .is_some_and(|old| old.iter().zip(&slices).all(|(a, b)| Arc::ptr_eq(a, b)));
        let same_keys = last.keys.len() == keys.len()
            && last.keys.iter().zip(&keys).all(|(a, b)| Arc::ptr_eq(a, b));
        if same_slices && same_keys {
            return (Vec::new(), false);
        }
        let mut affected: FxHashSet<SourceFile> = FxHashSet::default();
        if !same_keys {
            last.update_keys(keys, &mut affected);
        }
        if !same_slices {
            let mut changed: FxHashSet<Value> = FxHashSet::default();
            match &last.slices {
                Some(old) => {
                    for (old, new) in old.iter().zip(&slices) {
                        changed_keys(old, new, &mut changed);
                    }
                }
                None => changed.extend(slices.iter().flat_map(|s| s.0.iter().map(|(k, _)| *k))),
            }
            for key in &changed {
                if let Some(readers) = last.readers.get(key) {
                    affected.extend(readers.iter().copied());
                }
            }
        }
        last.slices = Some(slices.clone());
        let work: Vec<(SourceFile, Arc<[Value]>)> = affected
            .into_iter()
            .filter_map(|file| Some((file, last.by_file.get(&file)?.clone())))
            .collect();
        drop(guard);
        let assemble =
            |(file, keys): &(SourceFile, Arc<[Value]>)| (*file, assembled(&slices, keys));
        let assembled: Vec<(SourceFile, FileResolved)> = if work.len() >= PARALLEL_THRESHOLD {
            work.par_iter().map(assemble).collect()
        } else {
            work.iter().map(assemble).collect()
        };
        let changes = assembled
            .into_iter()
            // The first run writes every file, so that all start high.
            .filter(|(file, tuples)| first || **file.resolved(db) != *tuples)
            .inspect(|(file, _)| db.log().executed("resolved_input", Some(file.path(db))))
            .collect();
        (changes, first)
    }
}

impl ResolvedInputs {
    /// Whether `facts` is a new value of the project-level facts query.
    pub(crate) fn project_facts_ran(&self, facts: &Arc<Vec<InputFact>>) -> bool {
        ran(&mut self.lock().project_facts, facts)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Last> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Whether `value` is another allocation than the one last seen in `seen`
/// (a query that ran again gives a new one), keeping it there.
fn ran<T>(seen: &mut Option<Arc<T>>, value: &Arc<T>) -> bool {
    if seen.as_ref().is_some_and(|seen| Arc::ptr_eq(seen, value)) {
        return false;
    }
    *seen = Some(value.clone());
    true
}

impl Last {
    /// Takes in every file's keys, adding the files whose keys changed (or
    /// that are new) to `affected` and dropping the files that are gone.
    /// Only the buckets whose value changed are looked at.
    fn update_keys(
        &mut self,
        keys: Vec<PerFile<Arc<[Value]>>>,
        affected: &mut FxHashSet<SourceFile>,
    ) {
        let before = std::mem::take(&mut self.keys);
        buckets::changes(&before, &keys, |file, old, new| {
            if let Some(old) = old {
                self.forget(file, old);
            }
            match new {
                Some(new) => {
                    self.by_file.insert(file, new.clone());
                    for key in new.iter() {
                        self.readers.entry(*key).or_default().insert(file);
                    }
                    affected.insert(file);
                }
                None => {
                    self.by_file.remove(&file);
                }
            }
        });
        self.keys = keys;
    }

    fn forget(&mut self, file: SourceFile, keys: &[Value]) {
        for key in keys {
            if let Some(readers) = self.readers.get_mut(key) {
                readers.remove(&file);
                if readers.is_empty() {
                    self.readers.remove(key);
                }
            }
        }
    }
}

/// Adds to `changed` the keys whose tuples differ between two runs' slices
/// (both sorted by key).
fn changed_keys(old: &Slices, new: &Slices, changed: &mut FxHashSet<Value>) {
    let (mut a, mut b) = (old.0.iter().peekable(), new.0.iter().peekable());
    loop {
        match (a.peek(), b.peek()) {
            (Some((ka, ta)), Some((kb, tb))) => match ka.cmp(kb) {
                std::cmp::Ordering::Less => {
                    changed.insert(*ka);
                    a.next();
                }
                std::cmp::Ordering::Greater => {
                    changed.insert(*kb);
                    b.next();
                }
                std::cmp::Ordering::Equal => {
                    if ta != tb {
                        changed.insert(*ka);
                    }
                    a.next();
                    b.next();
                }
            },
            (Some((k, _)), None) | (None, Some((k, _))) => {
                changed.insert(*k);
                a.next();
                b.next();
            }
            (None, None) => break,
        }
    }
}

/// A file's `resolved` tuples: each of its keys' slices, the `resolve`
/// stage's then the `classes` stage's, shared with the stages' slices
/// rather than copied into one value per file. Taken in key order, every
/// relation comes out sorted (each relation comes whole from one of the
/// two stages, and a slice holds the tuples of one first argument).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct FileResolved(Vec<Arc<Outputs>>);

impl FileResolved {
    /// The `Resolves` tuples, sorted.
    pub(crate) fn resolves(&self) -> impl Iterator<Item = &datalog::Resolves> {
        self.0.iter().flat_map(|slice| slice.resolves())
    }

    pub(crate) fn tuples_values(&self) -> impl Iterator<Item = Value> + '_ {
        self.0.iter().flat_map(|slice| slice.tuples_values())
    }

    /// The tuples as one value, for a stage to run on.
    pub(crate) fn union(&self) -> Outputs {
        let mut union = Outputs::default();
        for slice in &self.0 {
            union.extend(slice);
        }
        union
    }
}

fn assembled(slices: &[Arc<Slices>; 2], keys: &[Value]) -> FileResolved {
    FileResolved(
        keys.iter()
            .flat_map(|&key| slices.iter().filter_map(move |slices| slices.get(key)))
            .cloned()
            .collect(),
    )
}
