//! The projects one server serves: one root (`xfile serve`), or registered
//! projects (`--collection`, `--projects`, `--global`), each indexed in the
//! background and watched; which of them a request sees (its session's
//! scope, else the server's); and answers gathered from each in parallel,
//! labelled by project, where a project that cannot answer gives a note
//! instead of failing the answer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock};
use tokio::sync::OnceCell;

use super::errors::{ToolError, failure, join_failed};
use super::results::first_text;
use super::tools::NOTICES;
use crate::federation::{CrossIndex, Peer, Scope, Sessions};
use crate::registry::Registry;
use crate::service::Service;
use crate::service::live::Live;
use crate::service::warm::answers::Prebuilt;
use crate::watch::{self, Watch};

type Shared = Arc<OnceCell<Result<Arc<Live>, String>>>;

/// A tool's work on one project: its live index and how many projects
/// share the answer.
pub(crate) type ProjectWork =
    Arc<dyn Fn(&Arc<Live>, usize) -> Result<CallToolResult, ToolError> + Send + Sync>;

/// The project states (name, `Engine::changes`) an index was built at.
type Built = (Vec<(String, u64)>, Arc<CrossIndex>);

/// How long a tool waits for a project's first index: one served root is
/// waited for, several are not (a project still indexing gets a note).
const INDEX_WAIT: Duration = Duration::from_secs(30);
const INDEX_WAIT_MANY: Duration = Duration::from_secs(5);
/// How long one project may take to answer a request that several share.
const PROJECT_TIME_LIMIT: Duration = Duration::from_secs(20);
/// Least answer budget a project gets when several share one.
const LEAST_SHARE: usize = 400;

/// What the server was started on.
enum Served {
    Root(Arc<Member>),
    Registry {
        registry: Mutex<Registry>,
        /// The projects the server sees without a session.
        base: Scope,
    },
}

pub(crate) struct Projects {
    served: Served,
    members: Mutex<BTreeMap<String, Arc<Member>>>,
    pub(crate) sessions: Sessions,
    /// The cross-project index and the project states it was built at.
    index: Mutex<Option<Built>>,
}

pub(crate) use crate::service::live::BACKGROUND_QUIET;

/// One served project.
pub(crate) struct Member {
    pub(crate) name: String,
    pub(crate) root: PathBuf,
    cell: Shared,
    /// The warm-start answers, if they hold for the tree as the server
    /// found it: what `get_dependencies`/`get_dependents` answer with
    /// until the first index is there.
    prebuilt: Arc<OnceCell<Option<Arc<Prebuilt>>>>,
    watch: Mutex<Option<Watch>>,
}

/// Why a project gives no answer.
pub(crate) enum Unready {
    Indexing,
    Failed(String),
}

impl Member {
    fn new(name: String, root: PathBuf) -> Arc<Member> {
        Arc::new(Member {
            name,
            root,
            cell: Arc::new(OnceCell::new()),
            prebuilt: Arc::new(OnceCell::new()),
            watch: Mutex::new(None),
        })
    }

    /// Starts the first index, then hot spots and the file watcher, in
    /// the background.
    pub(crate) fn start(self: &Arc<Member>) {
        let member = self.clone();
        tokio::spawn(async move {
            // Checked before the index begins and before the tokenizer is
            // built, so nothing competes with it for the disk or the cores;
            // it stats the tree and reads a table, no more. When it holds,
            // the first answers come from it, and later ones may need the
            // tokenizer (paging counts tokens): the index, which takes
            // every core, starts once that is built, not alongside it.
            let prebuilt = member.prebuilt().await.is_some();
            let tokenizer =
                tokio::task::spawn_blocking(|| crate::service::context::count_tokens(""));
            if prebuilt {
                let _ = tokenizer.await;
            }
            let Ok(live) = member.cell.get_or_init(|| open(member.root.clone())).await else {
                return;
            };
            // Hot spots are computed off the request path; an update
            // cancels and restarts the computation.
            let hot = live.clone();
            // Then what the first index freed goes back to the system.
            tokio::task::spawn_blocking(move || {
                hot.read_when_quiet(BACKGROUND_QUIET, Service::precompute_hot_spots);
                crate::allocator::give_back_freed_memory();
            });
            // The files modified last are prepared for cheap first edits,
            // once updates pause.
            live.expect_recent_edits(BACKGROUND_QUIET);
            // So are the blames of the files changed last (no index needed:
            // they come from the repository).
            let blames = live.clone();
            tokio::task::spawn_blocking(move || blames.snapshot().precompute_blames());
            // What follows an update (the warning log, hot spots) is the
            // live service's own; the server only counts updates.
            let root = member.root.clone();
            let watcher = Watch::start(live.clone(), watch::Options::default(), move |report| {
                crate::ops::metrics::global().record_update(&root, report);
            });
            *lock(&member.watch) = Some(watcher);
        });
    }

    /// The project's live index, waiting for the first index at most `wait`.
    pub(crate) async fn ready(&self, wait: Duration) -> Result<Arc<Live>, Unready> {
        let waiting = self.cell.get_or_init(|| open(self.root.clone()));
        match tokio::time::timeout(wait, waiting).await {
            Err(_) => Err(Unready::Indexing),
            Ok(Ok(live)) => Ok(live.clone()),
            Ok(Err(message)) => Err(Unready::Failed(message.clone())),
        }
    }

    /// The warm-start answers, if they held for the tree when first asked.
    pub(crate) async fn prebuilt(&self) -> Option<Arc<Prebuilt>> {
        let root = self.root.clone();
        self.prebuilt
            .get_or_init(|| async move {
                tokio::task::spawn_blocking(move || Prebuilt::open(&root).ok().map(Arc::new))
                    .await
                    .ok()
                    .flatten()
            })
            .await
            .clone()
    }

    /// The live index if the first index is done.
    pub(crate) fn ready_now(&self) -> Option<Arc<Live>> {
        self.cell.get().and_then(|r| r.as_ref().ok()).cloned()
    }

    pub(crate) fn watch_status(&self) -> Option<watch::Status> {
        lock(&self.watch).as_ref().map(Watch::status)
    }

    /// Why the first index failed, if it did.
    pub(crate) fn failure(&self) -> Option<String> {
        self.cell.get().and_then(|r| r.as_ref().err()).cloned()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

async fn open(root: PathBuf) -> Result<Arc<Live>, String> {
    let opened = tokio::task::spawn_blocking(move || Live::open(&root).map_err(|e| e.to_string()))
        .await
        .unwrap_or_else(|e| Err(format!("indexing stopped: {e}")));
    match &opened {
        Ok(live) => {
            let summary = live.read(Service::summary);
            tracing::info!(
                files = summary.files,
                parse_errors = summary.parse_errors,
                ms = summary.wall_time_ms,
                "indexed {}",
                summary.project_root
            );
            for notice in summary.notices.iter().take(NOTICES) {
                tracing::warn!(path = %notice.path, "{}", notice.message);
            }
            if summary.notices.len() > NOTICES {
                tracing::warn!(
                    "... and {} more notices (`xfile index --json` lists them all)",
                    summary.notices.len() - NOTICES
                );
            }
            log_warnings(live);
        }
        Err(message) => tracing::error!("indexing failed: {message}"),
    }
    opened
}

/// Appends warnings not logged yet to `warnings.jsonl`.
fn log_warnings(live: &Live) {
    if let Err(error) = live.read(Service::log_warnings) {
        // Best effort: the tools still answer.
        tracing::warn!("cannot write the warning log: {error}");
    }
}

impl Projects {
    /// A server of one root.
    pub(crate) fn root(root: PathBuf) -> Projects {
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "root".to_string());
        Projects::new(Served::Root(Member::new(name, root)))
    }

    /// A server of the registered projects `base` names.
    pub(crate) fn registry(registry: Registry, base: Scope) -> Projects {
        Projects::new(Served::Registry {
            registry: Mutex::new(registry),
            base,
        })
    }

    fn new(served: Served) -> Projects {
        Projects {
            served,
            members: Mutex::default(),
            sessions: Sessions::default(),
            index: Mutex::default(),
        }
    }

    /// Whether the server serves registered projects (several, or some).
    pub(crate) fn federated(&self) -> bool {
        matches!(self.served, Served::Registry { .. })
    }

    /// Starts indexing every project the server sees without a session.
    pub(crate) fn start(&self) {
        match self.in_scope(None) {
            Ok(members) => {
                for member in members {
                    member.start();
                }
            }
            Err(error) => tracing::error!("cannot list the projects to serve: {}", error.message),
        }
    }

    /// The projects started so far: a registry server starts a project
    /// when it first comes into scope.
    pub(crate) fn started(&self) -> Vec<Arc<Member>> {
        match &self.served {
            Served::Root(member) => vec![member.clone()],
            Served::Registry { .. } => lock(&self.members).values().cloned().collect(),
        }
    }

    /// Writes session `id`'s metrics record of each project whose first
    /// index is done (a project still indexing did nothing to report).
    pub(crate) async fn end_session(&self, id: crate::ops::metrics::SessionId) {
        let ready = self
            .started()
            .into_iter()
            .filter_map(|m| Some((m.name.clone(), m.root.clone(), m.ready_now()?)))
            .collect();
        crate::ops::end_sessions(id, ready).await;
    }

    /// The server's scope, or `session`'s (a server of one root has no
    /// sessions and ignores it).
    pub(crate) fn scope(&self, session: Option<&str>) -> Result<Scope, ToolError> {
        match (&self.served, session) {
            (Served::Root(_), _) => Ok(Scope::global()),
            (Served::Registry { base, .. }, None) => Ok(base.clone()),
            (Served::Registry { .. }, Some(id)) => Ok(self.sessions.scope(id)?),
        }
    }

    /// Runs `f` on the registry, if the server serves registered projects.
    pub(crate) fn with_registry<T>(
        &self,
        f: impl FnOnce(&mut Registry, &Scope) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        match &self.served {
            Served::Root(_) => Err(not_federated()),
            Served::Registry { registry, base } => f(&mut lock(registry), base),
        }
    }

    /// The projects a request with `session` sees, started if new.
    pub(crate) fn in_scope(&self, session: Option<&str>) -> Result<Vec<Arc<Member>>, ToolError> {
        let registry = match &self.served {
            Served::Root(member) => return Ok(vec![member.clone()]),
            Served::Registry { registry, .. } => registry,
        };
        let scope = self.scope(session)?;
        let projects = scope.projects(&lock(registry))?;
        let mut members = lock(&self.members);
        let mut seen = Vec::new();
        for project in projects {
            let root = PathBuf::from(&project.path);
            let current = members
                .get(&project.name)
                .filter(|m| m.root == root)
                .cloned();
            let member = match current {
                Some(member) => member,
                None => {
                    let member = Member::new(project.name.clone(), root);
                    if tokio::runtime::Handle::try_current().is_ok() {
                        member.start();
                    }
                    members.insert(project.name, member.clone());
                    member
                }
            };
            seen.push(member);
        }
        Ok(seen)
    }

    /// The served project whose root holds `root`.
    pub(crate) fn member_at(&self, root: &Path) -> Option<Arc<Member>> {
        if let Served::Root(member) = &self.served {
            return Some(member.clone());
        }
        lock(&self.members)
            .values()
            .find(|m| m.root == root)
            .cloned()
    }

    /// Snapshots of the ready projects among `members`, and the index of
    /// references across them (built again when a project's state moved).
    /// Call it inside a read: a snapshot held blocks that project's
    /// updates, and a cancelled query unwinds to the read's retry.
    pub(crate) fn peers(&self, members: &[Arc<Member>]) -> (Vec<Peer>, Arc<CrossIndex>) {
        let peers: Vec<Peer> = members
            .iter()
            .filter(|m| m.root.is_dir())
            .filter_map(|m| {
                Some(Peer {
                    name: m.name.clone(),
                    service: m.ready_now()?.snapshot(),
                })
            })
            .collect();
        let states: Vec<(String, u64)> = peers
            .iter()
            .map(|p| (p.name.clone(), p.service.engine().changes()))
            .collect();
        let mut index = lock(&self.index);
        if let Some((at, built)) = index.as_ref()
            && *at == states
        {
            return (peers, built.clone());
        }
        let built = Arc::new(CrossIndex::build(&peers));
        *index = Some((states, built.clone()));
        (peers, built)
    }
}

impl Projects {
    /// `f` over [`Projects::peers`], again on fresh snapshots when an
    /// update cancelled it.
    pub(crate) fn across<T>(
        &self,
        members: &[Arc<Member>],
        mut f: impl FnMut(&[Peer], &CrossIndex) -> T,
    ) -> T {
        loop {
            let outcome = salsa::Cancelled::catch(std::panic::AssertUnwindSafe(|| {
                let (peers, index) = self.peers(members);
                f(&peers, &index)
            }));
            if let Ok(value) = outcome {
                return value;
            }
            tracing::debug!("cross-project query cancelled by an update; retrying");
        }
    }
}

/// Waits, for all `members` at once, until each first index is done or
/// the wait for several projects is over.
pub(crate) async fn settle(members: &[Arc<Member>]) {
    let mut waits = tokio::task::JoinSet::new();
    for member in members {
        let member = member.clone();
        waits.spawn(async move { member.ready(INDEX_WAIT_MANY).await.is_ok() });
    }
    while waits.join_next().await.is_some() {}
}

/// Notes on the `members` whose first index is not done (or failed).
pub(crate) fn unready_notes(members: &[Arc<Member>]) -> Vec<String> {
    members
        .iter()
        .filter_map(|m| match m.cell.get() {
            _ if !m.root.is_dir() => Some(format!(
                "{}: its directory {} is gone (project_missing)",
                m.name,
                m.root.display()
            )),
            None => Some(format!("{}: still indexing; ask again in a moment", m.name)),
            Some(Err(message)) => Some(format!("{}: {message}", m.name)),
            Some(Ok(_)) => None,
        })
        .collect()
}

pub(crate) fn not_federated() -> ToolError {
    ToolError {
        code: "not_federated",
        message: "this server serves one project".to_string(),
        suggestion: "Start xfile serve with --collection NAME, --projects a,b or --global to serve registered projects.",
    }
}

/// Error codes that only say a project does not hold what was asked: left
/// out of an answer other projects gave.
const ABSENT: [&str; 4] = [
    "file_not_found",
    "symbol_not_found",
    "outside_root",
    "not_python",
];

/// Answers `f` from every member in parallel, each within its share of
/// the answer budget and the per-project time limit, labelled by project;
/// projects that cannot answer give a note. One member answers as is.
pub(crate) async fn gather(
    members: Vec<Arc<Member>>,
    labelled: bool,
    f: ProjectWork,
) -> CallToolResult {
    let shares = members.len().max(1);
    if !labelled && let [member] = members.as_slice() {
        return match member.ready(INDEX_WAIT).await {
            Ok(live) => run(live, f, 1).await,
            Err(unready) => Err(unready_error(member, unready)),
        }
        .unwrap_or_else(failure);
    }
    let mut tasks = tokio::task::JoinSet::new();
    for (order, member) in members.into_iter().enumerate() {
        let f = f.clone();
        tasks.spawn(async move {
            let outcome = match member.ready(INDEX_WAIT_MANY).await {
                Ok(live) => {
                    match tokio::time::timeout(PROJECT_TIME_LIMIT, run(live, f, shares)).await {
                        Ok(outcome) => outcome,
                        Err(_) => Err(ToolError {
                            code: "timeout",
                            message: format!(
                                "did not answer within {} s",
                                PROJECT_TIME_LIMIT.as_secs()
                            ),
                            suggestion: "Ask again; a large project may still be updating.",
                        }),
                    }
                }
                Err(unready) => Err(unready_error(&member, unready)),
            };
            (order, member.name.clone(), outcome)
        });
    }
    let mut answers = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        if let Ok(answer) = joined {
            answers.push(answer);
        }
    }
    answers.sort_by_key(|(order, _, _)| *order);
    combine(answers)
}

async fn run(live: Arc<Live>, f: ProjectWork, shares: usize) -> Result<CallToolResult, ToolError> {
    let root = live.root().to_path_buf();
    if !root.is_dir() {
        return Err(ToolError {
            code: "project_missing",
            message: format!("its directory {} is gone", root.display()),
            suggestion: "Remove it with manage_registry {action: project_remove}, or restore the directory.",
        });
    }
    tokio::task::spawn_blocking(move || f(&live, shares))
        .await
        .unwrap_or_else(|e| Err(join_failed(e)))
}

fn unready_error(member: &Member, unready: Unready) -> ToolError {
    match unready {
        Unready::Indexing => ToolError {
            code: "indexing",
            message: format!(
                "the first index of {} is still running",
                member.root.display()
            ),
            suggestion: "Try again in a moment; large projects take a while to index.",
        },
        Unready::Failed(message) => ToolError {
            code: "index_failed",
            message,
            suggestion: "Check that the project's directory exists and is readable.",
        },
    }
}

/// The per-project answers as one: JSON answers under `projects` by name,
/// text ones in sections headed by the project's name; failures as notes,
/// except a project's "not here" when another answered.
fn combine(answers: Vec<(usize, String, Result<CallToolResult, ToolError>)>) -> CallToolResult {
    let answered = answers.iter().any(|(_, _, a)| a.is_ok());
    let mut notes = Vec::new();
    let mut parts: Vec<(String, CallToolResult)> = Vec::new();
    let mut errors = Vec::new();
    for (_, name, answer) in answers {
        match answer {
            Ok(result) if result.is_error == Some(true) => errors.push((name, result)),
            Ok(result) => parts.push((name, result)),
            Err(error) if answered && ABSENT.contains(&error.code) => {}
            Err(error) if !answered && ABSENT.contains(&error.code) => {
                errors.push((name, failure(error)))
            }
            Err(error) => notes.push(format!("{name}: {} ({})", error.message, error.code)),
        }
    }
    if parts.is_empty() {
        let mut messages: Vec<String> = errors
            .iter()
            .map(|(name, result)| format!("{name}: {}", first_text(result)))
            .collect();
        messages.extend(notes);
        let code = errors
            .first()
            .and_then(|(_, r)| serde_json::from_str::<serde_json::Value>(&first_text(r)).ok())
            .and_then(|v| v["code"].as_str().map(str::to_string))
            .unwrap_or_else(|| "no_answer".to_string());
        return failure(ToolError {
            code: leak_code(&code),
            message: format!("no project answered: {}", messages.join("; ")),
            suggestion: "Name a file as project:path, or check the project names with collection_map.",
        });
    }
    let json: Option<BTreeMap<String, serde_json::Value>> = parts
        .iter()
        .map(|(name, result)| {
            let value = match &result.structured_content {
                Some(value) => value.clone(),
                None => serde_json::from_str(&first_text(result)).ok()?,
            };
            Some((name.clone(), value))
        })
        .collect();
    if let Some(projects) = json {
        let value = serde_json::json!({"projects": projects, "notes": notes});
        return CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
    }
    let mut text = String::new();
    for (name, result) in &parts {
        text.push_str(&format!("## {name}\n{}\n\n", first_text(result)));
    }
    if !notes.is_empty() {
        text.push_str(&format!("Notes:\n- {}\n", notes.join("\n- ")));
    }
    CallToolResult::success(vec![ContentBlock::text(text.trim_end().to_string())])
}

/// A code as the `'static` string `ToolError` carries (codes are few and
/// fixed, so the known ones are matched and the rest named generally).
fn leak_code(code: &str) -> &'static str {
    const KNOWN: [&str; 8] = [
        "file_not_found",
        "symbol_not_found",
        "outside_root",
        "not_python",
        "invalid_parameter",
        "ambiguous_symbol",
        "sensitive_file",
        "indexing",
    ];
    KNOWN
        .iter()
        .find(|k| **k == code)
        .copied()
        .unwrap_or("no_answer")
}

/// The budget share of one project among `shares`.
pub(crate) fn share(service: &Service, shares: usize) -> Service {
    if shares <= 1 {
        return service.clone();
    }
    let share = (service.answer_token_limit() / shares).max(LEAST_SHARE);
    service.with_answer_budget(share)
}

/// What the HTTP side reports on: the projects started so far.
impl crate::http::Source for Projects {
    fn projects(&self) -> Vec<crate::http::ProjectState> {
        self.started()
            .into_iter()
            .map(|m| crate::http::ProjectState {
                name: m.name.clone(),
                root: m.root.clone(),
                live: m.ready_now(),
                failure: m.failure(),
                watcher: m.watch_status(),
            })
            .collect()
    }
}
