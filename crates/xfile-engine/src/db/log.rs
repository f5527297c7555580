//! What an update ran and reused ([`Recomputation`]), as the
//! [`ExecutionLog`] records it.

use std::collections::BTreeMap;
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
    pub(crate) fn start(&self) {
        *self.lock() = Some(Recording::default());
        self.recording
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Stops recording and returns what was recorded.
    pub(crate) fn take(&self) -> Recomputation {
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

    pub(crate) fn record(&self, f: impl FnOnce(&mut Recomputation)) {
        if !self.recording.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        if let Some(recording) = self.lock().as_mut() {
            f(&mut recording.report);
        }
    }

    pub(crate) fn reused(&self, key: salsa::DatabaseKeyIndex) {
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
