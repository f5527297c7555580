//! The counters the MCP tools and the watcher update while a server runs:
//! Prometheus metrics for `/metrics`, and per session and project what
//! that session did, for its session metrics record.
//!
//! One instance per process ([`global`]), like Prometheus' default
//! registry: the MCP server, the watcher callbacks and the HTTP side all
//! live in one process and report into the same place. A standalone
//! server is one session ([`PROCESS_SESSION`]); a shared service opens a
//! session per connection ([`Metrics::begin_session`]), so what one client
//! read never ranks another's answers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::service::Service;
use crate::service::cache::CacheStatistics;
use crate::service::model::UpdateReport;

/// Samples kept per series in one session: enough for a day of reads; past
/// it, counts go on but the distributions keep the first samples.
const MAX_SAMPLES: usize = 100_000;

/// Distinct values a label of ours takes at most (tools, error types):
/// past it, a new value is counted under [`OTHER_LABEL`], so no input can
/// grow `/metrics` or the process's memory a series at a time.
const MAX_LABEL_VALUES: usize = 64;
/// The label value of whatever is past [`MAX_LABEL_VALUES`].
pub const OTHER_LABEL: &str = "other";
/// The `tool` label of a call of a tool the server does not have.
pub const UNKNOWN_TOOL: &str = "unknown";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabel {
    r#type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProjectLabel {
    project: String,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// Latency buckets from 0.5 ms to about 16 s, doubling.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// What a served project's index and cache look like at a scrape.
pub struct ProjectFigures {
    pub name: String,
    pub files: usize,
    pub relationships: usize,
    pub cache: CacheStatistics,
}

impl ProjectFigures {
    pub fn of(name: &str, service: &Service) -> ProjectFigures {
        ProjectFigures {
            name: name.to_string(),
            files: service.engine().paths().count(),
            relationships: crate::service::relationships::counts(service.engine())
                .values()
                .sum(),
            cache: service.cache_statistics(),
        }
    }
}

pub struct Metrics {
    registry: Registry,
    tool_seconds: Histograms<ToolLabel>,
    update_seconds: Histogram,
    watcher_events: Counter,
    errors: Family<ErrorLabel, Counter>,
    index_files: Family<ProjectLabel, Gauge>,
    index_relationships: Family<ProjectLabel, Gauge>,
    cache_hits: Family<ProjectLabel, Gauge>,
    cache_misses: Family<ProjectLabel, Gauge>,
    cache_evictions: Family<ProjectLabel, Gauge>,
    cache_bytes: Family<ProjectLabel, Gauge>,
    heavy_running: Gauge,
    heavy_waiting: Gauge,
    /// The label values in use, per family, capped at [`MAX_LABEL_VALUES`].
    tool_labels: Mutex<BTreeSet<String>>,
    error_labels: Mutex<BTreeSet<String>>,
    sessions: Mutex<Sessions>,
    /// When the process's session began: [`global`] is first called as
    /// the server starts.
    started: SystemTime,
}

/// Which session a tool call belongs to.
pub type SessionId = u64;

/// The session of a process serving one client (a standalone server, the
/// dashboard): open from the start.
pub const PROCESS_SESSION: SessionId = 0;

/// The sessions open, and what each did per project.
struct Sessions {
    /// Each open session and when it began.
    open: BTreeMap<SessionId, SystemTime>,
    logs: BTreeMap<(SessionId, PathBuf), SessionLog>,
    next: SessionId,
}

/// What one session did with one project, kept until the session ends.
#[derive(Clone, Debug)]
pub struct SessionLog {
    pub started: SystemTime,
    /// How often each file (root-relative) was read with context.
    pub reads: BTreeMap<String, u32>,
    /// Tokens of each read's context section (reads that got context).
    pub injection_tokens: Vec<f64>,
    /// Wall time of each `read_with_context`, in milliseconds.
    pub injection_ms: Vec<f64>,
    /// Per injection, the relationship types that brought context in.
    pub injections_by_type: BTreeMap<String, usize>,
    /// Parse time of each update (the files it re-read), in milliseconds.
    pub parse_ms: Vec<f64>,
    /// Files the session saw edited, created or renamed into place.
    pub edited: BTreeSet<String>,
    /// Calls of each git tool (`git_log`, `git_blame`, `git_diff`, `impact`).
    pub git_calls: BTreeMap<String, u32>,
}

impl SessionLog {
    fn since(started: SystemTime) -> Self {
        SessionLog {
            started,
            reads: BTreeMap::new(),
            injection_tokens: Vec::new(),
            injection_ms: Vec::new(),
            injections_by_type: BTreeMap::new(),
            parse_ms: Vec::new(),
            edited: BTreeSet::new(),
            git_calls: BTreeMap::new(),
        }
    }
}

fn push_sample(samples: &mut Vec<f64>, value: f64) {
    if samples.len() < MAX_SAMPLES {
        samples.push(value);
    }
}

/// One whole-project tool call in the gauges.
pub struct HeavyCall<'a> {
    metrics: &'a Metrics,
    running: bool,
}

impl HeavyCall<'_> {
    pub fn started(&mut self) {
        if !self.running {
            self.running = true;
            self.metrics.heavy_waiting.dec();
            self.metrics.heavy_running.inc();
        }
    }
}

impl Drop for HeavyCall<'_> {
    fn drop(&mut self) {
        if self.running {
            self.metrics.heavy_running.dec();
        } else {
            self.metrics.heavy_waiting.dec();
        }
    }
}

/// The process's metrics.
pub fn global() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

impl Metrics {
    fn new() -> Metrics {
        let started = SystemTime::now();
        let mut registry = Registry::with_prefix("xfile");
        let tool_seconds: Histograms<ToolLabel> = Family::new_with_constructor(latency_histogram);
        let update_seconds = latency_histogram();
        let watcher_events = Counter::default();
        let errors = Family::<ErrorLabel, Counter>::default();
        let gauge = Family::<ProjectLabel, Gauge>::default;
        let metrics = Metrics {
            registry: Registry::default(),
            tool_seconds,
            update_seconds,
            watcher_events,
            errors,
            index_files: gauge(),
            index_relationships: gauge(),
            cache_hits: gauge(),
            cache_misses: gauge(),
            cache_evictions: gauge(),
            cache_bytes: gauge(),
            heavy_running: Gauge::default(),
            heavy_waiting: Gauge::default(),
            tool_labels: Mutex::new(BTreeSet::new()),
            error_labels: Mutex::new(BTreeSet::new()),
            sessions: Mutex::new(Sessions {
                open: BTreeMap::from([(PROCESS_SESSION, started)]),
                logs: BTreeMap::new(),
                next: PROCESS_SESSION + 1,
            }),
            started,
        };
        // Metrics are handles on shared values: the registry keeps clones.
        let m = &metrics;
        registry.register(
            "tool_request_duration_seconds",
            "Latency of MCP tool calls, per tool",
            m.tool_seconds.clone(),
        );
        registry.register(
            "update_duration_seconds",
            "Latency of applying file changes to the index",
            m.update_seconds.clone(),
        );
        registry.register(
            "watcher_events",
            "Changed files the file watcher applied",
            m.watcher_events.clone(),
        );
        registry.register(
            "errors",
            "Errors by type: a tool error's code, or a failure of xfile's own",
            m.errors.clone(),
        );
        let gauges = [
            ("index_files", "Indexed Python files", &m.index_files),
            (
                "index_relationships",
                "Relationships (imports, calls, inheritance) in the index",
                &m.index_relationships,
            ),
            ("cache_hits", "Snippet cache hits so far", &m.cache_hits),
            (
                "cache_misses",
                "Snippet cache misses so far",
                &m.cache_misses,
            ),
            (
                "cache_evictions",
                "Snippet cache LRU evictions so far",
                &m.cache_evictions,
            ),
            ("cache_size_bytes", "Snippet cache size", &m.cache_bytes),
        ];
        for (name, help, family) in gauges {
            registry.register(name, help, family.clone());
        }
        registry.register(
            "heavy_requests_running",
            "Whole-project tool calls running now (a few at a time)",
            m.heavy_running.clone(),
        );
        registry.register(
            "heavy_requests_waiting",
            "Whole-project tool calls waiting for their turn",
            m.heavy_waiting.clone(),
        );
        Metrics {
            registry,
            ..metrics
        }
    }

    /// One tool call: its latency, and its error code if it failed.
    /// `tool` must be a tool the server has (else pass [`UNKNOWN_TOOL`]);
    /// past [`MAX_LABEL_VALUES`] names it is counted as [`OTHER_LABEL`].
    pub fn record_tool(&self, tool: &str, latency: Duration, error: Option<&str>) {
        let label = ToolLabel {
            tool: admit(&self.tool_labels, tool),
        };
        self.tool_seconds
            .get_or_create(&label)
            .observe(latency.as_secs_f64());
        if let Some(code) = error {
            self.record_error(code);
        }
    }

    /// A whole-project tool call waiting for its turn: counted as waiting,
    /// then (after [`HeavyCall::started`]) as running, until dropped.
    pub fn heavy_call(&self) -> HeavyCall<'_> {
        self.heavy_waiting.inc();
        HeavyCall {
            metrics: self,
            running: false,
        }
    }

    pub fn record_error(&self, kind: &str) {
        self.errors
            .get_or_create(&ErrorLabel {
                r#type: admit(&self.error_labels, kind),
            })
            .inc();
    }

    /// One `read_with_context` answer of `session` for `file`
    /// (root-relative) of the project `service` holds.
    pub fn record_read(
        &self,
        session: SessionId,
        service: &Service,
        file: &str,
        answer: &str,
        latency: Duration,
    ) {
        let context_tokens = context_section(answer).map(crate::service::context::count_tokens);
        let types: BTreeSet<&'static str> = match context_tokens {
            Some(_) => service
                .dependencies_of(file)
                .iter()
                .filter(|r| !r.target_file.starts_with('<'))
                .map(|r| r.relationship_type.as_str())
                .collect(),
            None => BTreeSet::new(),
        };
        self.with_session(session, service.root(), |log| {
            *log.reads.entry(file.to_string()).or_default() += 1;
            push_sample(&mut log.injection_ms, latency.as_secs_f64() * 1e3);
            if let Some(tokens) = context_tokens {
                push_sample(&mut log.injection_tokens, tokens as f64);
                for kind in types {
                    *log.injections_by_type.entry(kind.to_string()).or_default() += 1;
                }
            }
        });
    }

    /// A call of the git tool `tool` by `session` on the project at `root`.
    pub fn record_git(&self, session: SessionId, root: &Path, tool: &str) {
        self.with_session(session, root, |log| {
            *log.git_calls.entry(tool.to_string()).or_default() += 1;
        });
    }

    /// An update the watcher applied to the project at `root`: every open
    /// session saw it.
    pub fn record_update(&self, root: &Path, report: &UpdateReport) {
        self.update_seconds.observe(report.durations.total_ms / 1e3);
        let files = report.added.len() + report.modified.len() + report.removed.len();
        self.watcher_events.inc_by(files as u64);
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let open: Vec<(SessionId, SystemTime)> =
            sessions.open.iter().map(|(id, at)| (*id, *at)).collect();
        for (id, started) in open {
            let log = sessions
                .logs
                .entry((id, root.to_path_buf()))
                .or_insert_with(|| SessionLog::since(started));
            push_sample(&mut log.parse_ms, report.durations.parse_ms);
            log.edited
                .extend(report.added.iter().chain(&report.modified).cloned());
        }
    }

    /// Opens a session (a client connected to a shared service), its clock
    /// starting now.
    pub fn begin_session(&self) -> SessionId {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let id = sessions.next;
        sessions.next += 1;
        sessions.open.insert(id, SystemTime::now());
        id
    }

    /// Closes `session`, forgetting what it did in projects whose log was
    /// not taken: nothing is recorded for it afterwards.
    pub fn close_session(&self, session: SessionId) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.open.remove(&session);
        sessions.logs.retain(|(id, _), _| *id != session);
    }

    /// The sessions open now.
    pub fn open_sessions(&self) -> Vec<SessionId> {
        let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.open.keys().copied().collect()
    }

    /// Runs `f` on what `session` did with the project at `root`; nothing
    /// for a session that is not open.
    fn with_session(&self, session: SessionId, root: &Path, f: impl FnOnce(&mut SessionLog)) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let Some(started) = sessions.open.get(&session).copied() else {
            return;
        };
        f(sessions
            .logs
            .entry((session, root.to_path_buf()))
            .or_insert_with(|| SessionLog::since(started)));
    }

    /// The session so far for the project at `root` (empty if nothing
    /// happened yet): the oldest open session's, which is the only one
    /// of a standalone server.
    pub fn session(&self, root: &Path) -> SessionLog {
        let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let Some((&id, &started)) = sessions.open.iter().next() else {
            return SessionLog::since(self.started);
        };
        sessions
            .logs
            .get(&(id, root.to_path_buf()))
            .cloned()
            .unwrap_or_else(|| SessionLog::since(started))
    }

    /// How often `session` read each file of the project at `root` with
    /// context: the frequency boost of ranking.
    pub fn reads(&self, session: SessionId, root: &Path) -> BTreeMap<String, u32> {
        let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions
            .logs
            .get(&(session, root.to_path_buf()))
            .map(|log| log.reads.clone())
            .unwrap_or_default()
    }

    /// Ends what `session` did with the project at `root`: its log, and a
    /// fresh one if the session goes on.
    pub fn take_session(&self, session: SessionId, root: &Path) -> SessionLog {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let started = sessions.open.get(&session).copied().unwrap_or(self.started);
        sessions
            .logs
            .remove(&(session, root.to_path_buf()))
            .unwrap_or_else(|| SessionLog::since(started))
    }

    /// The metrics in Prometheus text format, with the index and cache
    /// figures of `projects` as they are now.
    pub fn encode(&self, projects: &[ProjectFigures]) -> String {
        for p in projects {
            let label = ProjectLabel {
                project: p.name.clone(),
            };
            let set = |family: &Family<ProjectLabel, Gauge>, value: u64| {
                family
                    .get_or_create(&label)
                    .set(i64::try_from(value).unwrap_or(i64::MAX));
            };
            set(&self.index_files, p.files as u64);
            set(&self.index_relationships, p.relationships as u64);
            set(&self.cache_hits, p.cache.hits);
            set(&self.cache_misses, p.cache.misses);
            set(&self.cache_evictions, p.cache.evictions);
            set(&self.cache_bytes, p.cache.size_bytes as u64);
        }
        let mut text = String::new();
        if let Err(error) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            // A metrics failure is logged, never fatal.
            tracing::warn!("cannot encode the metrics: {error}");
        }
        text
    }
}

/// `value` as a label value: itself if it is already in use or there is
/// room for one more, else [`OTHER_LABEL`].
fn admit(used: &Mutex<BTreeSet<String>>, value: &str) -> String {
    let mut used = used.lock().unwrap_or_else(|e| e.into_inner());
    if used.contains(value) {
        return value.to_string();
    }
    if used.len() < MAX_LABEL_VALUES {
        used.insert(value.to_string());
        return value.to_string();
    }
    OTHER_LABEL.to_string()
}

/// The context section of a `read_with_context` answer, if it has one.
pub(crate) fn context_section(answer: &str) -> Option<&str> {
    if !answer.starts_with("[Cross-File Context]") {
        return None;
    }
    let end = answer.find("\n[File Content").unwrap_or(answer.len());
    Some(&answer[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Thousands of tool names or error types from
    /// input give at most [`MAX_LABEL_VALUES`] series each, the rest
    /// counted under `other`.
    #[test]
    fn metrics_labels_are_capped_whatever_the_input() {
        let metrics = Metrics::new();
        let record = |names: std::ops::Range<usize>| {
            for n in names {
                let name = format!("tool_{n}_{}", "x".repeat(100));
                metrics.record_tool(&name, Duration::from_millis(1), Some(&name));
            }
        };
        record(0..100);
        let early = metrics.encode(&[]);
        record(100..3_000);
        let text = metrics.encode(&[]);
        let series = |prefix: &str| text.lines().filter(|l| l.starts_with(prefix)).count();
        // One count line per tool label, and one error line per type.
        assert_eq!(
            series("xfile_tool_request_duration_seconds_count"),
            MAX_LABEL_VALUES + 1
        );
        assert_eq!(series("xfile_errors_total"), MAX_LABEL_VALUES + 1);
        assert!(text.contains(&format!(
            "xfile_tool_request_duration_seconds_count{{tool=\"{OTHER_LABEL}\"}} {}",
            3_000 - MAX_LABEL_VALUES
        )));
        // 2,900 names more, a few digits more.
        assert!(
            text.len() < early.len() + 1_000,
            "{} then {} bytes",
            early.len(),
            text.len()
        );
    }
}
