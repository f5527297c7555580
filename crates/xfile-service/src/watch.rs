//! Keeps a [`Live`] service fresh from file system events.
//!
//! The watcher watches, one by one and not recursively, the directories the
//! discovery walk entered, so ignored trees (`.git`, `node_modules`, build
//! output, anything in `.gitignore`) cost no watches and raise no events.
//! Events are coalesced: a batch closes once no event came for
//! [`Options::quiet`] (or after [`Options::max_batch`]), then its paths go
//! through [`Live::apply`], which re-reads them with discovery's rules. Each
//! path is only a hint of where to look, so the kind of event does not
//! matter: a rename is a path that vanished and one that appeared.
//!
//! If the native watcher cannot start or fails (typically the inotify watch
//! limit), the same directories are polled for mtime changes, a warning is
//! logged, and the native watcher is retried after 1, 2, 4, 8 and 16 units
//! of [`Options::backoff_unit`]; after the fifth failed retry polling stays.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::{PollWatcher, RecommendedWatcher, RecursiveMode, Watcher};
use serde::Serialize;

use crate::Service;
use crate::live::Live;
use crate::model::UpdateReport;
use xfile_workspace::config::CONFIG_FILE;
use xfile_workspace::discover::{ENV_MARKERS, SUB_PROJECT_MARKERS};
use xfile_workspace::pytest;

/// Retry delays, in units of [`Options::backoff_unit`]: doubling, five
/// retries at most.
const BACKOFF: [u32; 5] = [1, 2, 4, 8, 16];

/// Creates the native watcher; replaceable so tests can make it fail.
pub type NativeFactory = fn(Sender<Message>) -> notify::Result<Box<dyn Watcher + Send>>;

#[derive(Clone)]
pub struct Options {
    /// A batch closes once no event arrived for this long.
    pub quiet: Duration,
    /// A batch closes at the latest this long after its first event.
    pub max_batch: Duration,
    /// How often directories are polled when the native watcher is down.
    pub poll_interval: Duration,
    /// The unit of the retry delays (one second in production).
    pub backoff_unit: Duration,
    /// Poll from the start (for file systems without native events); set
    /// by `XFILE_WATCHER=poll`.
    pub force_poll: bool,
    pub native: NativeFactory,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            quiet: Duration::from_millis(10),
            max_batch: Duration::from_millis(200),
            poll_interval: Duration::from_secs(1),
            backoff_unit: Duration::from_secs(1),
            force_poll: std::env::var("XFILE_WATCHER").is_ok_and(|v| v == "poll"),
            native: native_watcher,
        }
    }
}

fn native_watcher(sender: Sender<Message>) -> notify::Result<Box<dyn Watcher + Send>> {
    let watcher = RecommendedWatcher::new(
        move |event| {
            let _ = sender.send(Message::Event(event));
        },
        notify::Config::default(),
    )?;
    Ok(Box::new(watcher))
}

fn poll_watcher(
    sender: Sender<Message>,
    interval: Duration,
) -> notify::Result<Box<dyn Watcher + Send>> {
    let watcher = PollWatcher::new(
        move |event| {
            let _ = sender.send(Message::Event(event));
        },
        notify::Config::default().with_poll_interval(interval),
    )?;
    Ok(Box::new(watcher))
}

pub enum Message {
    Event(notify::Result<notify::Event>),
    Stop,
}

/// How the watcher is doing, for `explain_recomputation` and logs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Status {
    /// `native`, `poll`, or `stopped`.
    pub mode: &'static str,
    pub watched_dirs: usize,
    /// Native watcher start attempts that failed.
    pub failures: u32,
    /// The native watcher is no longer retried; polling stays.
    pub gave_up: bool,
    pub last_error: Option<String>,
}

/// A running watcher; dropping it stops the thread.
pub struct Watch {
    sender: Sender<Message>,
    status: Arc<Mutex<Status>>,
    thread: Option<JoinHandle<()>>,
}

impl Watch {
    /// Starts watching `live`'s tree; `on_update` sees every applied update
    /// that changed something.
    pub fn start(
        live: Arc<Live>,
        options: Options,
        on_update: impl Fn(&UpdateReport) + Send + 'static,
    ) -> Watch {
        let (sender, receiver) = mpsc::channel();
        let status = Arc::new(Mutex::new(Status::default()));
        let mut state = State {
            live,
            options,
            sender: sender.clone(),
            status: status.clone(),
            backend: None,
            polling: false,
            watched: BTreeSet::new(),
            next_retry: None,
        };
        let thread = std::thread::Builder::new()
            .name("xfile-watch".into())
            .spawn(move || state.run(&receiver, &on_update))
            .map_err(|e| tracing::error!("cannot start the file watcher thread: {e}"))
            .ok();
        Watch {
            sender,
            status,
            thread,
        }
    }

    pub fn status(&self) -> Status {
        self.status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.sender.send(Message::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct State {
    live: Arc<Live>,
    options: Options,
    sender: Sender<Message>,
    status: Arc<Mutex<Status>>,
    backend: Option<Box<dyn Watcher + Send>>,
    polling: bool,
    watched: BTreeSet<PathBuf>,
    next_retry: Option<Instant>,
}

impl State {
    fn run(&mut self, receiver: &Receiver<Message>, on_update: &dyn Fn(&UpdateReport)) {
        if self.options.force_poll {
            self.start_polling("polling requested with XFILE_WATCHER=poll".into());
        } else {
            self.start_native();
        }
        // Changes between the index and the first watch raised no event.
        let root = self.live.root().to_path_buf();
        self.update(&[root], on_update);
        loop {
            let wait = self
                .next_retry
                .map(|at| at.saturating_duration_since(Instant::now()))
                .unwrap_or(Duration::from_secs(3600));
            let first = match receiver.recv_timeout(wait) {
                Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => break,
                Ok(Message::Event(event)) => event,
                Err(RecvTimeoutError::Timeout) => {
                    if self.next_retry.is_some_and(|at| at <= Instant::now()) {
                        self.retry_native(on_update);
                    }
                    continue;
                }
            };
            let mut paths = BTreeSet::new();
            // Only an event worth a look opens a batch or keeps it open:
            // the access events of our own reads (a freshness check
            // lists directories on every answer) would otherwise hold
            // every change back for the whole `max_batch`.
            if !self.take_event(first, &mut paths) {
                continue;
            }
            let mut stop = false;
            let opened = Instant::now();
            let mut quiet_from = opened;
            while opened.elapsed() < self.options.max_batch {
                // The quiet spell is over once its time has passed, even
                // with ignored events still queued: a steady stream of
                // them must not keep the batch open.
                let Some(wait) = (quiet_from + self.options.quiet)
                    .checked_duration_since(Instant::now())
                    .filter(|wait| !wait.is_zero())
                else {
                    break;
                };
                match receiver.recv_timeout(wait) {
                    Ok(Message::Event(event)) => {
                        if self.take_event(event, &mut paths) {
                            quiet_from = Instant::now();
                        }
                    }
                    Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => {
                        stop = true;
                        break;
                    }
                    Err(RecvTimeoutError::Timeout) => break,
                }
            }
            if !paths.is_empty() {
                let paths: Vec<PathBuf> = paths.into_iter().collect();
                self.update(&paths, on_update);
            }
            if stop {
                break;
            }
        }
        self.backend = None;
        self.set_status(|s| s.mode = "stopped");
    }

    /// Adds an event's relevant paths; a watcher error switches to polling.
    /// Whether it added any.
    fn take_event(
        &mut self,
        event: notify::Result<notify::Event>,
        paths: &mut BTreeSet<PathBuf>,
    ) -> bool {
        match event {
            // Reading files (as every update does) raises access events.
            Ok(event) if matches!(event.kind, notify::EventKind::Access(_)) => false,
            Ok(event) => {
                let mut added = false;
                if event.need_rescan() {
                    paths.insert(self.live.root().to_path_buf());
                    added = true;
                }
                for path in event.paths {
                    tracing::debug!(path = %path.display(), kind = ?event.kind, "file event");
                    if self.relevant(&path) {
                        paths.insert(path);
                        added = true;
                    }
                }
                added
            }
            Err(error) if !self.polling => {
                self.start_polling(format!("file watcher failed: {error}"));
                // Whatever happened meanwhile is found by one walk.
                paths.insert(self.live.root().to_path_buf());
                true
            }
            Err(error) => {
                tracing::debug!("poll watcher: {error}");
                false
            }
        }
    }

    /// Python files, directories and the files that steer indexing or
    /// module search paths (environment markers too: one makes its
    /// directory skipped); the rest (editor swap files, bytecode) is not
    /// worth a walk.
    fn relevant(&self, path: &Path) -> bool {
        let named = |name: &str| path.file_name().is_some_and(|n| n == name);
        path.extension().is_some_and(|e| e == "py")
            || [CONFIG_FILE, ".gitignore", ".ignore"]
                .iter()
                .any(|n| named(n))
            || path.file_name().is_some_and(pytest::is_settings_file)
            || SUB_PROJECT_MARKERS.iter().any(|n| named(n))
            || ENV_MARKERS.iter().any(|n| named(n))
            || self.watched.contains(path)
            || path.is_dir()
    }

    fn update(&mut self, paths: &[PathBuf], on_update: &dyn Fn(&UpdateReport)) {
        match self
            .live
            .apply(paths, if self.polling { "poll" } else { "watcher" })
        {
            Ok(report) if report.changed() => {
                let started = Instant::now();
                on_update(&report);
                tracing::debug!(ms = crate::elapsed_ms(started), "after update");
            }
            Ok(_) => {}
            Err(error) => tracing::warn!("update failed: {error}"),
        }
        let started = Instant::now();
        self.sync_watches();
        tracing::debug!(ms = crate::elapsed_ms(started), "watches synced");
    }

    fn start_native(&mut self) {
        let started = (self.options.native)(self.sender.clone()).and_then(|backend| {
            self.backend = Some(backend);
            self.watched.clear();
            self.polling = false;
            self.sync_watches_strict()
        });
        match started {
            Ok(()) => {
                self.next_retry = None;
                self.set_status(|s| s.mode = "native");
            }
            Err(error) => self.start_polling(format!("cannot start the file watcher: {error}")),
        }
    }

    fn start_polling(&mut self, reason: String) {
        let failures = {
            let mut status = self.status.lock().unwrap_or_else(|e| e.into_inner());
            if !self.options.force_poll {
                status.failures += 1;
            }
            status.last_error = Some(reason.clone());
            status.failures
        };
        // The first start is not a retry: five retries follow it.
        let retry = usize::try_from(failures)
            .ok()
            .and_then(|n| BACKOFF.get(n.wrapping_sub(1)))
            .filter(|_| !self.options.force_poll);
        match retry {
            Some(&units) => {
                let delay = self.options.backoff_unit * units;
                tracing::warn!(
                    "{reason}; polling every {:?}, retrying in {delay:?}",
                    self.options.poll_interval
                );
                self.next_retry = Some(Instant::now() + delay);
            }
            None => {
                if !self.options.force_poll {
                    tracing::warn!(
                        "{reason}; giving up on native file events, polling stays (restart the server to retry)"
                    );
                    self.set_status(|s| s.gave_up = true);
                }
                self.next_retry = None;
            }
        }
        self.backend = None;
        self.watched.clear();
        match poll_watcher(self.sender.clone(), self.options.poll_interval) {
            Ok(backend) => {
                self.backend = Some(backend);
                self.polling = true;
                self.sync_watches();
                self.set_status(|s| s.mode = "poll");
            }
            Err(error) => {
                tracing::error!(
                    "cannot poll either: {error}; answers are still checked against the disk on read"
                );
                self.set_status(|s| s.mode = "stopped");
            }
        }
    }

    fn retry_native(&mut self, on_update: &dyn Fn(&UpdateReport)) {
        self.next_retry = None;
        self.start_native();
        if !self.polling {
            tracing::info!("native file watcher restarted");
            // Events between dropping the poller and watching again are lost.
            let root = self.live.root().to_path_buf();
            self.update(&[root], on_update);
        }
    }

    /// Watches directories discovery entered and unwatches those it no
    /// longer does; a failure while native switches to polling.
    fn sync_watches(&mut self) {
        if let Err(error) = self.sync_watches_strict() {
            if self.polling {
                tracing::debug!("poll watcher: {error}");
            } else {
                self.start_polling(format!("file watcher failed: {error}"));
            }
        }
    }

    fn sync_watches_strict(&mut self) -> notify::Result<()> {
        let Some(backend) = self.backend.as_mut() else {
            return Ok(());
        };
        let wanted = self.live.read(Service::dirs);
        let gone: Vec<PathBuf> = self.watched.difference(&wanted).cloned().collect();
        for dir in gone {
            // The directory may be deleted already, with its watch.
            let _ = backend.unwatch(&dir);
            self.watched.remove(&dir);
        }
        let new: Vec<PathBuf> = wanted.difference(&self.watched).cloned().collect();
        let mut added = Vec::new();
        for dir in new {
            match backend.watch(&dir, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    self.watched.insert(dir.clone());
                    added.push(dir);
                }
                // Deleted since it was walked: the next event about it updates.
                Err(error) if matches!(error.kind, notify::ErrorKind::PathNotFound) => {}
                Err(error) => return Err(error),
            }
        }
        let count = self.watched.len();
        self.set_status(|s| s.watched_dirs = count);
        // Files created in a new directory before its watch existed raised
        // no event there: walk the new directories once more.
        if !added.is_empty() && count != added.len() {
            let _ = self.sender.send(Message::Event(Ok(notify::Event {
                kind: notify::EventKind::Any,
                paths: added,
                attrs: Default::default(),
            })));
        }
        Ok(())
    }

    fn set_status(&self, f: impl FnOnce(&mut Status)) {
        f(&mut self.status.lock().unwrap_or_else(|e| e.into_inner()));
    }
}
