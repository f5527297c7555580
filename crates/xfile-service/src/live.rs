//! A [`Service`] that stays fresh while files change: readers work on
//! snapshots, updates apply to a master copy.
//!
//! Salsa lets one handle change inputs only when every other handle is
//! dropped: a write sets the cancellation flag, queries running on
//! snapshots unwind with `salsa::Cancelled`, and the write waits for them.
//! So a reader takes a snapshot, answers, and drops it, never holding a
//! lock while it answers; a reader that is cancelled takes the next
//! snapshot and tries again. The writer withdraws the published snapshot
//! only once the changed files are read, and publishes a new one right after
//! the inputs are set, before the derived relations are brought up to date:
//! readers that arrive meanwhile share that one computation (salsa blocks
//! them on it) instead of seeing old results.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, SystemTime};

use rustc_hash::FxHashMap;

use super::Service;
use super::model::UpdateReport;
use xfile_workspace::PathError;

/// Which indexed files an answer rests on, for the freshness check.
pub enum Involved {
    /// A file (user path) and the project files it depends on.
    Dependencies(String),
    /// A file (user path) and the files that depend on it.
    Dependents(String),
    /// Every indexed file (a stat each: a few milliseconds on 3,000 files).
    All,
}

/// How many update reports are kept for `explain_recomputation`.
const KEPT_REPORTS: usize = 16;
/// Files waiting to be prepared for edits, at most: each prepared file's
/// chain is one that every later edit checks, so a reader that reads many
/// files between pauses gets the first ones prepared, not all.
const MAX_EXPECTED: usize = 64;

/// How many of the files modified last a server prepares for edits as it
/// starts, and how recent they must be (`Live::expect_recent_edits`).
const RECENT_FILES: usize = 16;
const RECENT_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

/// A directory modified less than this long ago may be modified again in
/// the same tick of the file system's clock without its time changing (a
/// second file created right after the first): it is looked at again on
/// every read until its time is older.
const RACY: Duration = Duration::from_secs(2);

/// How long updates must pause before background work (hot spots, files
/// prepared for edits) takes a core: not worth one during a burst of edits.
pub const BACKGROUND_QUIET: Duration = Duration::from_millis(300);

pub struct Live {
    root: PathBuf,
    /// Files a reader expects to be edited soon, waiting to be prepared
    /// ([`Live::expect_edit`]); `None` while nobody is preparing them.
    expected: Mutex<Option<Vec<String>>>,
    /// Each directory that holds modules ([`Service::module_dirs`]), with
    /// its modification time when it was last looked at, and whether that
    /// time had settled (was older than [`RACY`]).
    dir_times: Mutex<FxHashMap<PathBuf, (SystemTime, bool)>>,
    /// How many updates changed something: read without the master lock
    /// (held while an update runs) by work that waits for a pause.
    changed: AtomicU64,
    master: Mutex<Master>,
    published: Mutex<Option<Service>>,
    republished: Condvar,
    /// Wakes the thread that does what follows an update that changed
    /// something ([`follow_updates`]); dropping it ends that thread.
    followups: Mutex<Sender<()>>,
}

struct Master {
    service: Service,
    updates: u64,
    reports: VecDeque<UpdateReport>,
}

impl Live {
    /// A live service, with the thread that follows its updates.
    pub fn new(service: Service) -> Arc<Live> {
        let (wake, woken) = std::sync::mpsc::channel();
        Arc::new_cyclic(|live: &Weak<Live>| {
            let live = live.clone();
            let spawned = std::thread::Builder::new()
                .name("xfile-followups".into())
                .spawn(move || follow_updates(&live, &woken));
            if let Err(error) = spawned {
                // Answers stay right without it; only the warning log
                // and hot spots wait for the next start.
                tracing::warn!("cannot start the thread that follows updates: {error}");
            }
            Live {
                root: service.root().to_path_buf(),
                dir_times: Mutex::new(dir_times(service.module_dirs())),
                expected: Mutex::new(None),
                changed: AtomicU64::new(0),
                published: Mutex::new(Some(service.clone())),
                master: Mutex::new(Master {
                    service,
                    updates: 0,
                    reports: VecDeque::new(),
                }),
                republished: Condvar::new(),
                followups: Mutex::new(wake),
            }
        })
    }

    pub fn open(root: &Path) -> Result<Arc<Live>, PathError> {
        Service::open(root).map(Live::new)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The current snapshot, waiting while an update withdrew it. Hold it
    /// briefly and inside `salsa::Cancelled::catch`: the next update
    /// cancels its queries and waits for it to be dropped.
    pub fn snapshot(&self) -> Service {
        let mut published = lock(&self.published);
        loop {
            if let Some(service) = published.as_ref() {
                return service.clone();
            }
            published = self
                .republished
                .wait(published)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Runs `f` on a snapshot; if an update cancels it, runs it again on
    /// the next one.
    pub fn read<T>(&self, f: impl Fn(&Service) -> T) -> T {
        self.read_retrying(f, || {
            tracing::debug!("query cancelled by an update; retrying")
        })
    }

    /// Like [`Live::read`], for work in the background: once an update
    /// cancels it, it starts again only after no update came for `quiet`.
    /// During a burst of edits, restarting at once kept a core busy redoing
    /// work that the next edit cancelled again, and held snapshots the
    /// edits' updates had to wait for.
    pub fn read_when_quiet<T>(&self, quiet: Duration, f: impl Fn(&Service) -> T) -> T {
        self.read_retrying(f, || self.wait_quiet(quiet))
    }

    /// Runs `f` on a snapshot until no update cancels it, calling
    /// `cancelled` before each new try.
    fn read_retrying<T>(&self, f: impl Fn(&Service) -> T, cancelled: impl Fn()) -> T {
        loop {
            let snapshot = self.snapshot();
            let outcome = salsa::Cancelled::catch(AssertUnwindSafe(|| f(&snapshot)));
            drop(snapshot);
            if let Ok(value) = outcome {
                return value;
            }
            cancelled();
        }
    }

    /// Returns once no update changed anything for `quiet`.
    pub fn wait_quiet(&self, quiet: Duration) {
        loop {
            let seen = self.changed.load(Ordering::Acquire);
            std::thread::sleep(quiet);
            if self.changed.load(Ordering::Acquire) == seen {
                return;
            }
        }
    }

    /// Like [`Live::read`], but first brings the files `involved` names up to
    /// date with the disk: whatever the watcher saw or missed, the answer is
    /// no older than those files at call time.
    pub fn read_fresh<T>(&self, involved: &Involved, f: impl Fn(&Service) -> T) -> T {
        let started = std::time::Instant::now();
        let mut stale = self.read(|s| s.stale(&s.involved(involved)));
        stale.extend(self.appeared());
        tracing::debug!(ms = crate::elapsed_ms(started), "freshness check");
        if !stale.is_empty() {
            tracing::debug!(files = stale.len(), "stale on read; updating first");
            if let Err(error) = self.apply(&stale, "read") {
                tracing::warn!("update on read failed: {error}");
            }
        }
        let started = std::time::Instant::now();
        let answer = self.read(f);
        tracing::debug!(ms = crate::elapsed_ms(started), "fresh read");
        answer
    }

    /// What appeared in the directories that hold modules since they were
    /// last looked at: each whose modification time moved, or is too recent
    /// to be trusted, is listed. A file created an instant ago, before any
    /// watcher event, is in the next answer, whatever the answer is about;
    /// one in a directory with no module yet is left to the watcher. A stat
    /// per directory (651 on Django, about 1 ms).
    fn appeared(&self) -> Vec<PathBuf> {
        let snapshot = self.snapshot();
        let now = SystemTime::now();
        let mut times = lock(&self.dir_times);
        let mut appeared = Vec::new();
        for (dir, known) in times.iter_mut() {
            let Ok(modified) = std::fs::metadata(dir).and_then(|m| m.modified()) else {
                continue;
            };
            if *known == (modified, true) {
                continue;
            }
            // A directory made in this one since the last look was born
            // after that look's time (adding it moved the time).
            appeared.extend(snapshot.appeared_in(dir, known.0));
            *known = (modified, settled(now, modified));
        }
        appeared
    }

    /// Applies changes under `paths` (see [`Service::read_changes`]) and
    /// publishes the result. Must not be called while holding a snapshot.
    pub fn apply(&self, paths: &[PathBuf], trigger: &str) -> Result<UpdateReport, PathError> {
        let mut master = lock(&self.master);
        let pending = master.service.read_changes(paths, trigger)?;
        let mut report = if pending.is_empty() {
            pending.into_report()
        } else {
            let written = self.writing(&mut master, |service| service.write_changes(pending));
            let report = master.service.finish(written);
            master.service.updated_warm();
            report
        };
        master.updates += 1;
        report.update = master.updates;
        if !report.added.is_empty() {
            // New modules' directories are looked at from now on.
            let mut times = lock(&self.dir_times);
            let new: Vec<PathBuf> = report
                .added
                .iter()
                .flat_map(|file| Path::new(file.as_str()).ancestors().skip(1))
                .map(|dir| self.root.join(dir))
                .filter(|dir| !times.contains_key(dir))
                .collect();
            times.extend(dir_times(new));
        }
        if report.changed() {
            self.changed.fetch_add(1, Ordering::AcqRel);
            tracing::debug!(
                added = ?report.added,
                modified = ?report.modified,
                removed = ?report.removed,
                executed = ?report.queries.executed,
                reused = ?report.queries.reused,
                datalog_ms = ?report.queries.datalog_ms,
                total_ms = report.durations.total_ms,
                "update {} ({})",
                report.update,
                report.trigger,
            );
            if master.reports.len() == KEPT_REPORTS {
                master.reports.pop_front();
            }
            master.reports.push_back(report.clone());
            // Whoever applied it (the watcher, a read that found files
            // stale, any adapter), what follows an update follows it.
            let _ = lock(&self.followups).send(());
        }
        Ok(report)
    }

    /// Runs `write` on the master service with no snapshot published (a
    /// write to salsa's inputs waits for every snapshot to be dropped),
    /// then publishes the master's new state.
    fn writing<T>(&self, master: &mut Master, write: impl FnOnce(&mut Service) -> T) -> T {
        let withdrawn = lock(&self.published).take();
        drop(withdrawn);
        let written = write(&mut master.service);
        *lock(&self.published) = Some(master.service.clone());
        self.republished.notify_all();
        written
    }

    /// Notes that `path` (a user path) is likely to be edited soon: it was
    /// read to be worked on. Once no update came for `quiet`, a background
    /// thread makes it ready for a cheap first edit
    /// ([`Service::prepare_for_edits`]), taking the walk over the whole
    /// project that such an edit would cost off the edit's path.
    pub fn expect_edit(self: &Arc<Self>, path: &str, quiet: Duration) {
        let mut expected = lock(&self.expected);
        match expected.as_mut() {
            Some(paths) => {
                if paths.len() < MAX_EXPECTED && !paths.iter().any(|p| p == path) {
                    paths.push(path.to_string());
                }
            }
            None => {
                let live = self.clone();
                let spawned = std::thread::Builder::new()
                    .name("xfile-prepare-edits".into())
                    .spawn(move || live.prepare_expected(quiet));
                match spawned {
                    Ok(_) => *expected = Some(vec![path.to_string()]),
                    Err(error) => tracing::debug!("no thread to prepare edits: {error}"),
                }
            }
        }
    }

    /// Expects edits of the files modified last before the index
    /// ([`Service::recently_modified`]: at most [`RECENT_FILES`], within
    /// [`RECENT_WINDOW`]), as a server starts: an agent resuming work
    /// tends to edit what was edited last, and those first edits then skip
    /// the walk of every file's chain. Each prepared file adds its chain to
    /// what later edits check, so they are few.
    pub fn expect_recent_edits(self: &Arc<Self>, quiet: Duration) {
        for path in self.read(|s| s.recently_modified(RECENT_FILES, RECENT_WINDOW)) {
            self.expect_edit(&path, quiet);
        }
    }

    /// Prepares the expected files, batch by batch, each after a pause.
    fn prepare_expected(&self, quiet: Duration) {
        loop {
            self.wait_quiet(quiet);
            let paths = {
                let mut expected = lock(&self.expected);
                match expected.as_mut() {
                    Some(paths) if !paths.is_empty() => std::mem::take(paths),
                    _ => {
                        *expected = None;
                        return;
                    }
                }
            };
            let started = std::time::Instant::now();
            let mut master = lock(&self.master);
            let files = master.service.unprepared(&paths);
            if files.is_empty() {
                continue;
            }
            self.writing(&mut master, |service| service.prepare_for_edits(&files));
            master.service.settle_prepared();
            tracing::debug!(
                files = files.len(),
                ms = crate::elapsed_ms(started),
                "prepared for edits"
            );
        }
    }

    /// Reports of the recent updates that changed something, newest last.
    pub fn recent_updates(&self) -> Vec<UpdateReport> {
        lock(&self.master).reports.iter().cloned().collect()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// What follows every update that changed something, on a thread of its
/// own so that no update or answer waits for it: the new warnings go to
/// the warning log, then, once edits pause, the hot spots the update made
/// stale are computed again (a head start for searches, which compute a
/// stale one when they hit it). Updates that come meanwhile are followed
/// together. Ends when the [`Live`] is dropped.
fn follow_updates(live: &Weak<Live>, woken: &Receiver<()>) {
    while woken.recv().is_ok() {
        while woken.try_recv().is_ok() {}
        let Some(live) = live.upgrade() else {
            return;
        };
        let started = std::time::Instant::now();
        if let Err(error) = live.read(Service::log_warnings) {
            // Best effort: the answers do not depend on it.
            tracing::warn!("cannot write the warning log: {error}");
        }
        tracing::debug!(ms = super::elapsed_ms(started), "warnings logged");
        live.wait_quiet(BACKGROUND_QUIET);
        let started = std::time::Instant::now();
        let refreshed = live.read_when_quiet(BACKGROUND_QUIET, Service::refresh_hot_spots);
        if refreshed > 0 {
            tracing::debug!(
                refreshed,
                ms = super::elapsed_ms(started),
                "hot spots refreshed"
            );
        }
    }
}

/// Whether a time `modified` is old enough, at `now`, to show every later
/// change ([`RACY`]).
fn settled(now: SystemTime, modified: SystemTime) -> bool {
    now.duration_since(modified).is_ok_and(|age| age >= RACY)
}

/// The modification times of `dirs`, and whether each has settled.
fn dir_times(dirs: impl IntoIterator<Item = PathBuf>) -> FxHashMap<PathBuf, (SystemTime, bool)> {
    let now = SystemTime::now();
    dirs.into_iter()
        .filter_map(|dir| {
            let modified = std::fs::metadata(&dir).and_then(|m| m.modified()).ok()?;
            Some((dir, (modified, settled(now, modified))))
        })
        .collect()
}
