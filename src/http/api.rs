//! The dashboard's JSON, read-only (spec FR-043..048): per project an
//! overview, the module dependency graph (packages as nodes, imports as
//! edges, cycles marked), warnings with filters, and the session timeline.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use petgraph::graphmap::DiGraphMap;
use serde::{Deserialize, Serialize};

use super::{AppState, ProjectState, blocking};
use crate::ops::metrics;
use crate::ops::session::{self, SessionRecord};
use crate::ops::stats::Distribution;
use crate::service::Service;
use crate::service::live::Live;
use crate::service::model::Warning;

/// Warnings listed per answer (the counts cover all).
const WARNINGS_LISTED: usize = 500;
/// Past sessions listed on the timeline, newest first.
const SESSIONS_LISTED: usize = 100;
/// Updates whose files count as recently changed in the graph.
const RECENT_UPDATES: usize = 16;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/projects", get(projects))
        .route("/api/overview", get(overview))
        .route("/api/graph", get(graph))
        .route("/api/warnings", get(warnings))
        .route("/api/sessions", get(sessions))
}

#[derive(Deserialize)]
struct Which {
    /// The project's name; the first served one by default.
    project: Option<String>,
    /// Graph: the package to drill into.
    package: Option<String>,
    /// Warnings: only this type, only files starting with this.
    r#type: Option<String>,
    file: Option<String>,
}

fn json(value: &impl Serialize) -> Response {
    axum::Json(value).into_response()
}

/// Why a request gets no data: a status and a message.
type Refusal = (StatusCode, String);

/// The asked project, with its index.
fn chosen(state: &AppState, which: &Which) -> Result<(ProjectState, Arc<Live>), Refusal> {
    let mut projects = state.source.projects();
    let position = match &which.project {
        Some(name) => projects.iter().position(|p| &p.name == name),
        None => (!projects.is_empty()).then_some(0),
    };
    let Some(position) = position else {
        return Err((StatusCode::NOT_FOUND, "no such project".to_string()));
    };
    let project = projects.swap_remove(position);
    match project.live.clone() {
        Some(live) => Ok((project, live)),
        None => Err((
            StatusCode::SERVICE_UNAVAILABLE,
            match &project.failure {
                Some(failure) => format!("{}: indexing failed: {failure}", project.name),
                None => format!("{}: still indexing", project.name),
            },
        )),
    }
}

#[derive(Serialize)]
struct ProjectItem {
    name: String,
    ready: bool,
}

async fn projects(State(state): State<AppState>) -> Response {
    let list: Vec<ProjectItem> = state
        .source
        .projects()
        .into_iter()
        .map(|p| ProjectItem {
            ready: p.live.is_some(),
            name: p.name,
        })
        .collect();
    json(&list)
}

#[derive(Serialize)]
struct Overview {
    project: String,
    files: usize,
    relationships: BTreeMap<&'static str, usize>,
    parse_errors: usize,
    import_cycles: usize,
    warnings: BTreeMap<&'static str, usize>,
    /// When the newest update that changed something finished.
    last_update: Option<String>,
    index_time_ms: f64,
    cache: crate::service::cache::CacheStatistics,
    watcher: Option<crate::watch::Status>,
    session: CurrentSession,
}

/// The MCP session under way, so far.
#[derive(Serialize)]
struct CurrentSession {
    reads: u32,
    injections: usize,
    injection_tokens: Distribution,
    injection_latency_ms: Distribution,
    update_parse_ms: Distribution,
    edited_files: usize,
}

async fn overview(State(state): State<AppState>, Query(which): Query<Which>) -> Response {
    let (project, live) = match chosen(&state, &which) {
        Ok(found) => found,
        Err(refusal) => return refusal.into_response(),
    };
    let answer = blocking(move || {
        let summary = live.read(Service::summary);
        let log = metrics::global().session(&project.root);
        Overview {
            project: project.name,
            files: summary.files,
            relationships: summary.relationships,
            parse_errors: summary.parse_errors,
            import_cycles: summary.import_cycles,
            warnings: summary.warnings,
            last_update: live.recent_updates().last().map(|u| u.finished_at.clone()),
            index_time_ms: summary.wall_time_ms,
            cache: live.read(Service::cache_statistics),
            watcher: project.watcher,
            session: CurrentSession {
                reads: log.reads.values().sum(),
                injections: log.injection_tokens.len(),
                injection_tokens: Distribution::of(&log.injection_tokens),
                injection_latency_ms: Distribution::of(&log.injection_ms),
                update_parse_ms: Distribution::of(&log.parse_ms),
                edited_files: log.edited.len(),
            },
        }
    })
    .await;
    answer.map_or_else(IntoResponse::into_response, |o| json(&o))
}

#[derive(Serialize)]
struct Graph {
    /// The package drilled into, if any.
    package: Option<String>,
    nodes: Vec<Node>,
    edges: Vec<Edge>,
}

#[derive(Serialize)]
struct Node {
    /// A package's directory (`app/utils`, `.` for the root), or inside a
    /// drilled-into package one of its files.
    id: String,
    /// `package` or `file`.
    kind: &'static str,
    files: usize,
    /// In a cycle of imports between nodes.
    in_cycle: bool,
    /// Holds a file changed by a recent update.
    recent: bool,
}

#[derive(Serialize)]
struct Edge {
    source: String,
    target: String,
    /// Import statements from one node's files to the other's.
    imports: usize,
    in_cycle: bool,
}

fn directory(file: &str) -> &str {
    file.rsplit_once('/').map_or(".", |(dir, _)| dir)
}

/// Packages as nodes and imports between project files as edges; inside
/// `package`, its files are nodes and the packages around it stay whole.
fn module_graph(service: &Service, package: Option<&str>, recent: &BTreeSet<String>) -> Graph {
    let node_of = |file: &str| -> String {
        let dir = directory(file);
        match package {
            Some(p) if dir == p => file.to_string(),
            _ => dir.to_string(),
        }
    };
    let inside = |file: &str| package.is_none_or(|p| directory(file) == p);
    let mut files: BTreeMap<String, (usize, bool, bool)> = BTreeMap::new();
    for path in service.engine().paths() {
        let entry = files.entry(node_of(path)).or_insert((
            0,
            package.is_some_and(|p| directory(path) == p),
            false,
        ));
        entry.0 += 1;
        entry.2 |= recent.contains(path);
    }
    // Straight from the `Imports` relation (one tuple per imported module
    // per statement), not rendered relationships: on Django, rendering
    // every relationship would take most of a second per poll.
    let engine = service.engine();
    let interner = engine.interner();
    let mut counts: BTreeMap<(String, String), usize> = BTreeMap::new();
    for import in engine.outputs().imports() {
        if import.2.is_marker() {
            continue;
        }
        let (source, target) = (interner.node_text(import.0), interner.node_text(import.2));
        if !(inside(&source) || inside(&target)) {
            continue;
        }
        let (from, to) = (node_of(&source), node_of(&target));
        if from != to {
            *counts.entry((from, to)).or_default() += 1;
        }
    }
    // Nodes in one strongly connected component (of more than one node)
    // import each other in a circle.
    let ids: Vec<&String> = files.keys().collect();
    let index: BTreeMap<&str, usize> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let mut graph = DiGraphMap::<usize, ()>::new();
    for (from, to) in counts.keys() {
        if let (Some(a), Some(b)) = (index.get(from.as_str()), index.get(to.as_str())) {
            graph.add_edge(*a, *b, ());
        }
    }
    let mut component = vec![usize::MAX; ids.len()];
    for (n, scc) in petgraph::algo::tarjan_scc(&graph).into_iter().enumerate() {
        if scc.len() > 1 {
            for node in scc {
                component[node] = n;
            }
        }
    }
    let cyclic = |id: &str| {
        index
            .get(id)
            .map(|i| component[*i])
            .filter(|c| *c != usize::MAX)
    };
    let shown: BTreeSet<&String> = match package {
        None => files.keys().collect(),
        Some(_) => files
            .iter()
            .filter(|(_, (_, file, _))| *file)
            .map(|(id, _)| id)
            .chain(counts.keys().flat_map(|(a, b)| [a, b]))
            .collect(),
    };
    Graph {
        package: package.map(str::to_string),
        nodes: files
            .iter()
            .filter(|(id, _)| shown.contains(id))
            .map(|(id, (n, file, recent))| Node {
                id: id.clone(),
                kind: if *file { "file" } else { "package" },
                files: *n,
                in_cycle: cyclic(id).is_some(),
                recent: *recent,
            })
            .collect(),
        edges: counts
            .into_iter()
            .map(|((source, target), imports)| Edge {
                in_cycle: cyclic(&source).is_some() && cyclic(&source) == cyclic(&target),
                source,
                target,
                imports,
            })
            .collect(),
    }
}

async fn graph(State(state): State<AppState>, Query(which): Query<Which>) -> Response {
    let (_, live) = match chosen(&state, &which) {
        Ok(found) => found,
        Err(refusal) => return refusal.into_response(),
    };
    let package = which.package;
    let answer = blocking(move || {
        let updates = live.recent_updates();
        let recent: BTreeSet<String> = updates
            .iter()
            .rev()
            .take(RECENT_UPDATES)
            .flat_map(|u| u.added.iter().chain(&u.modified).cloned())
            .collect();
        live.read(|s| module_graph(s, package.as_deref(), &recent))
    })
    .await;
    answer.map_or_else(IntoResponse::into_response, |g| json(&g))
}

#[derive(Serialize)]
struct Warnings {
    /// Counts by type of all warnings (before the filters).
    by_type: BTreeMap<&'static str, usize>,
    /// How many pass the filters; the first of them are listed.
    matching: usize,
    warnings: Vec<crate::service::model::Warning>,
}

async fn warnings(State(state): State<AppState>, Query(which): Query<Which>) -> Response {
    let (_, live) = match chosen(&state, &which) {
        Ok(found) => found,
        Err(refusal) => return refusal.into_response(),
    };
    let answer = blocking(move || {
        let all: Vec<Warning> = live.read(|s| s.all_warnings().active().cloned().collect());
        let mut by_type = BTreeMap::new();
        for w in &all {
            *by_type.entry(w.warning_type.as_str()).or_default() += 1;
        }
        let kept: Vec<_> = all
            .into_iter()
            .filter(|w| {
                which
                    .r#type
                    .as_ref()
                    .is_none_or(|t| w.warning_type.as_str() == t)
            })
            .filter(|w| {
                which
                    .file
                    .as_ref()
                    .is_none_or(|f| w.file.starts_with(f.as_str()))
            })
            .collect();
        Warnings {
            by_type,
            matching: kept.len(),
            warnings: kept.into_iter().take(WARNINGS_LISTED).collect(),
        }
    })
    .await;
    answer.map_or_else(IntoResponse::into_response, |w| json(&w))
}

async fn sessions(State(state): State<AppState>, Query(which): Query<Which>) -> Response {
    let (project, _) = match chosen(&state, &which) {
        Ok(found) => found,
        Err(refusal) => return refusal.into_response(),
    };
    let answer = blocking(move || {
        let mut records: Vec<SessionRecord> = session::read(&session::log_path(&project.root));
        records.reverse();
        records.truncate(SESSIONS_LISTED);
        records
    })
    .await;
    answer.map_or_else(IntoResponse::into_response, |s| json(&s))
}
