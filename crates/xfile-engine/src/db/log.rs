//! What an update ran and reused ([`Recomputation`]), as the
//! [`ExecutionLog`] records it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

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
pub(crate) struct ExecutionLog {
    entries: Arc<Mutex<Option<Recomputation>>>,
    /// Whether a recording is on: checked before taking a lock, since
    /// salsa reports every memo it checks (tens of thousands an update).
    recording: Arc<AtomicBool>,
    /// The memos salsa reported valid while recording, by shard: each
    /// thread pushes to its own, so the threads that check memos together
    /// (a first edit's walk runs on all cores) seldom wait for each other.
    /// Counted by query when the recording is taken: an update runs over
    /// several revisions (each input write starts one), and a memo checked
    /// in two of them is one memo reused.
    reused: Arc<[Mutex<Shard>; SHARDS]>,
}

/// One thread's share of the memos reported valid, and the names of their
/// queries: salsa formats a key with its query's name only inside its own
/// callback, so each query's name is kept the first time it comes.
#[derive(Default)]
struct Shard {
    keys: Vec<salsa::DatabaseKeyIndex>,
    names: rustc_hash::FxHashMap<salsa::IngredientIndex, String>,
}

/// Shards of [`ExecutionLog::reused`].
const SHARDS: usize = 8;

/// The shard of the calling thread, given out in turn.
fn shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SHARD.with(|shard| *shard)
}

impl ExecutionLog {
    /// Starts recording (clearing what was recorded before).
    pub(crate) fn start(&self) {
        for shard in self.reused.iter() {
            lock(shard).keys.clear();
        }
        *lock(&self.entries) = Some(Recomputation::default());
        self.recording.store(true, Ordering::Release);
    }

    /// Stops recording and returns what was recorded.
    pub(crate) fn take(&self) -> Recomputation {
        self.recording.store(false, Ordering::Release);
        let Some(mut report) = lock(&self.entries).take() else {
            return Recomputation::default();
        };
        let mut keys: Vec<salsa::DatabaseKeyIndex> = Vec::new();
        let mut names = rustc_hash::FxHashMap::default();
        for shard in self.reused.iter() {
            let mut shard = lock(shard);
            keys.append(&mut shard.keys);
            names.extend(shard.names.iter().map(|(k, v)| (*k, v.clone())));
        }
        keys.sort_unstable_by_key(|key| (key.ingredient_index(), key.key_index()));
        keys.dedup();
        for run in keys.chunk_by(|a, b| a.ingredient_index() == b.ingredient_index()) {
            let name = names
                .get(&run[0].ingredient_index())
                .cloned()
                .unwrap_or_default();
            *report.reused.entry(name).or_default() += run.len();
        }
        report
    }

    pub(crate) fn record(&self, f: impl FnOnce(&mut Recomputation)) {
        if !self.recording.load(Ordering::Acquire) {
            return;
        }
        if let Some(report) = lock(&self.entries).as_mut() {
            f(report);
        }
    }

    pub(crate) fn reused(&self, key: salsa::DatabaseKeyIndex) {
        if !self.recording.load(Ordering::Acquire) {
            return;
        }
        let mut shard = lock(&self.reused[shard()]);
        shard.keys.push(key);
        // A query's name is formatted once, not once per memo.
        shard
            .names
            .entry(key.ingredient_index())
            .or_insert_with(|| {
                let key = format!("{key:?}");
                key.split('(').next().unwrap_or_default().to_string()
            });
    }

    pub(crate) fn executed(&self, query: &str, file: Option<&str>) {
        self.record(|r| {
            r.executed.push(match file {
                Some(file) => format!("{query}({file})"),
                None => query.to_string(),
            })
        });
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
