//! The dashboard's JSON, read-only: per project an
//! overview, the module dependency graph (packages as nodes, imports as
//! edges, cycles marked), warnings with filters, and the session timeline.
//!
//! Every list pages, so no answer grows with the project: `limit` (a
//! default and a maximum per list) and `offset`; an answer says `total`,
//! the `offset` and `limit` it used and `next_offset` (null on the last
//! page), and stops early, at [`ANSWER_BYTES`] of JSON, whatever the
//! limit. Long texts of a project (a warning's message) are cut short, so
//! no item is big either. Empty query values (`type=&file=`) mean no filter.

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
use crate::ops::session;
use crate::ops::stats::Distribution;
use crate::service::Service;
use crate::service::live::Live;
use crate::service::model::Warning;
use crate::service::text;

/// Items per page by default, and at most, of one list.
#[derive(Clone, Copy)]
struct Paging {
    default: usize,
    max: usize,
}

const WARNINGS: Paging = Paging {
    default: 100,
    max: 500,
};
/// Past sessions, newest first.
const SESSIONS: Paging = Paging {
    default: 20,
    max: 100,
};
const PROJECTS: Paging = Paging {
    default: 200,
    max: 1000,
};
/// Graph nodes, most connected first.
const NODES: Paging = Paging {
    default: 200,
    max: 1000,
};
/// Edges among a page's nodes, most imports first.
const EDGES_LISTED: usize = 2000;
/// A list stops growing past this much JSON (one item is always listed).
const ANSWER_BYTES: usize = 1 << 20;
/// A warning's message is cut to this many characters (a cycle through
/// thousands of modules names them all).
const MESSAGE_CHARS: usize = 500;
/// A session record bigger than this is listed by its start only.
const RECORD_BYTES: usize = 64 * 1024;
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

#[derive(Default, Deserialize)]
struct Which {
    /// The project's name; the first served one by default.
    project: Option<String>,
    /// Graph: the package to drill into.
    package: Option<String>,
    /// Warnings: only this type, only files starting with this.
    r#type: Option<String>,
    file: Option<String>,
    /// Paging, as text so that an empty value is no value.
    limit: Option<String>,
    offset: Option<String>,
}

/// Which items of a list a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Window {
    offset: usize,
    limit: usize,
}

impl Which {
    /// Empty values are no values: `?type=&file=` filters nothing.
    fn normalized(mut self) -> Which {
        for value in [
            &mut self.project,
            &mut self.package,
            &mut self.r#type,
            &mut self.file,
            &mut self.limit,
            &mut self.offset,
        ] {
            if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                *value = None;
            }
        }
        self
    }

    /// The page asked for: `limit` (the list's default when absent, at
    /// most its maximum, at least 1) items from `offset` (0).
    fn window(&self, paging: Paging) -> Result<Window, Refusal> {
        let number = |name: &str, value: &Option<String>| -> Result<Option<usize>, Refusal> {
            value
                .as_deref()
                .map(|v| {
                    v.trim().parse::<usize>().map_err(|_| {
                        (
                            StatusCode::BAD_REQUEST,
                            format!("{name} must be a whole number, not {v:?}"),
                        )
                    })
                })
                .transpose()
        };
        Ok(Window {
            offset: number("offset", &self.offset)?.unwrap_or(0),
            limit: number("limit", &self.limit)?
                .unwrap_or(paging.default)
                .clamp(1, paging.max),
        })
    }
}

/// Where a page sits in its list, and where the next one starts.
#[derive(Debug, Serialize)]
struct Page {
    total: usize,
    offset: usize,
    limit: usize,
    /// The `offset` to ask for the rest; null on the last page.
    next_offset: Option<usize>,
}

/// The items of `window` among `items` (`total` of them), each rendered,
/// as many as fit in [`ANSWER_BYTES`] of JSON; only those are rendered.
fn paged<I, T: Serialize>(
    items: impl Iterator<Item = I>,
    total: usize,
    window: Window,
    render: impl Fn(I) -> T,
) -> (Vec<T>, Page) {
    let mut kept = Vec::new();
    let mut bytes = 0;
    for item in items.skip(window.offset).take(window.limit) {
        let item = render(item);
        let size = serde_json::to_vec(&item).map_or(0, |json| json.len()) + 1;
        if !kept.is_empty() && bytes + size > ANSWER_BYTES {
            break;
        }
        bytes += size;
        kept.push(item);
    }
    let end = window.offset.saturating_add(kept.len());
    let info = Page {
        total,
        offset: window.offset,
        limit: window.limit,
        next_offset: (end < total).then_some(end),
    };
    (kept, info)
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

#[derive(Serialize)]
struct Projects {
    #[serde(flatten)]
    page: Page,
    projects: Vec<ProjectItem>,
}

async fn projects(State(state): State<AppState>, Query(which): Query<Which>) -> Response {
    let window = match which.normalized().window(PROJECTS) {
        Ok(window) => window,
        Err(refusal) => return refusal.into_response(),
    };
    let all = state.source.projects();
    let total = all.len();
    let (projects, page) = paged(all.into_iter(), total, window, |p| ProjectItem {
        ready: p.live.is_some(),
        name: p.name,
    });
    json(&Projects { page, projects })
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
    let which = which.normalized();
    let (project, live) = match chosen(&state, &which) {
        Ok(found) => found,
        Err(refusal) => return refusal.into_response(),
    };
    let answer = blocking(&state, move || {
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

/// One page of a graph: its nodes, most connected first, and the edges
/// between them, most imports first.
#[derive(Serialize)]
struct GraphPage {
    package: Option<String>,
    /// Nodes: `total` of them, this page's from `offset`.
    #[serde(flatten)]
    page: Page,
    /// Edges of the whole graph, and how many of them join two nodes of
    /// this page (the `edges` listed, up to a cap).
    total_edges: usize,
    edges_among_nodes: usize,
    nodes: Vec<Node>,
    edges: Vec<Edge>,
}

fn paged_graph(graph: Graph, window: Window) -> GraphPage {
    let mut degree: BTreeMap<String, usize> = BTreeMap::new();
    for edge in &graph.edges {
        *degree.entry(edge.source.clone()).or_default() += edge.imports;
        *degree.entry(edge.target.clone()).or_default() += edge.imports;
    }
    let connected = |node: &Node| degree.get(&node.id).copied().unwrap_or(0);
    let mut nodes = graph.nodes;
    // Stable: ties keep the nodes' order (by id).
    nodes.sort_by_key(|n| std::cmp::Reverse(connected(n)));
    let total = nodes.len();
    let (nodes, page) = paged(nodes.into_iter(), total, window, |n| n);
    let ids: BTreeSet<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
    let total_edges = graph.edges.len();
    let mut edges: Vec<Edge> = graph
        .edges
        .into_iter()
        .filter(|e| ids.contains(e.source.as_str()) && ids.contains(e.target.as_str()))
        .collect();
    let edges_among_nodes = edges.len();
    edges.sort_by_key(|e| std::cmp::Reverse(e.imports));
    let all_edges = Window {
        offset: 0,
        limit: EDGES_LISTED,
    };
    let (edges, _) = paged(edges.into_iter(), edges_among_nodes, all_edges, |e| e);
    GraphPage {
        package: graph.package,
        page,
        total_edges,
        edges_among_nodes,
        nodes,
        edges,
    }
}

async fn graph(State(state): State<AppState>, Query(which): Query<Which>) -> Response {
    let which = which.normalized();
    let window = match which.window(NODES) {
        Ok(window) => window,
        Err(refusal) => return refusal.into_response(),
    };
    let (_, live) = match chosen(&state, &which) {
        Ok(found) => found,
        Err(refusal) => return refusal.into_response(),
    };
    let package = which.package;
    let answer = blocking(&state, move || {
        let updates = live.recent_updates();
        let recent: BTreeSet<String> = updates
            .iter()
            .rev()
            .take(RECENT_UPDATES)
            .flat_map(|u| u.added.iter().chain(&u.modified).cloned())
            .collect();
        let graph = live.read(|s| module_graph(s, package.as_deref(), &recent));
        paged_graph(graph, window)
    })
    .await;
    answer.map_or_else(IntoResponse::into_response, |g| json(&g))
}

#[derive(Serialize)]
struct Warnings {
    /// Counts by type of all warnings (before the filters).
    by_type: BTreeMap<&'static str, usize>,
    /// How many pass the filters (the page's `total`).
    matching: usize,
    #[serde(flatten)]
    page: Page,
    warnings: Vec<Warning>,
}

/// A warning as listed: its message cut short.
fn listed(warning: &Warning) -> Warning {
    Warning {
        message: text::shortened(&warning.message, MESSAGE_CHARS),
        pattern: text::shortened(&warning.pattern, MESSAGE_CHARS),
        ..warning.clone()
    }
}

async fn warnings(State(state): State<AppState>, Query(which): Query<Which>) -> Response {
    let which = which.normalized();
    let window = match which.window(WARNINGS) {
        Ok(window) => window,
        Err(refusal) => return refusal.into_response(),
    };
    let (_, live) = match chosen(&state, &which) {
        Ok(found) => found,
        Err(refusal) => return refusal.into_response(),
    };
    let answer = blocking(&state, move || {
        // Counted and filtered where they are; only the page is copied.
        let all = live.read(Service::all_warnings);
        let mut by_type = BTreeMap::new();
        for w in all.active() {
            *by_type.entry(w.warning_type.as_str()).or_default() += 1;
        }
        let kept = |w: &&Warning| {
            which
                .r#type
                .as_ref()
                .is_none_or(|t| w.warning_type.as_str() == t)
                && which
                    .file
                    .as_ref()
                    .is_none_or(|f| w.file.starts_with(f.as_str()))
        };
        let matching = all.active().filter(kept).count();
        let (warnings, page) = paged(all.active().filter(kept), matching, window, listed);
        Warnings {
            by_type,
            matching,
            page,
            warnings,
        }
    })
    .await;
    answer.map_or_else(IntoResponse::into_response, |w| json(&w))
}

#[derive(Serialize)]
struct Sessions {
    #[serde(flatten)]
    page: Page,
    /// Session records, newest first.
    sessions: Vec<serde_json::Value>,
}

/// A session record as listed: whole, or past [`RECORD_BYTES`] its start
/// and duration only, with where to read the rest.
fn session_listed(record: &session::SessionRecord) -> serde_json::Value {
    let value = serde_json::to_value(record).unwrap_or_default();
    let size = serde_json::to_vec(&value).map_or(0, |json| json.len());
    if size <= RECORD_BYTES {
        return value;
    }
    serde_json::json!({
        "session_id": record.session_id,
        "session_start": record.session_start,
        "session_duration_seconds": record.session_duration_seconds,
        "omitted": format!(
            "a {size}-byte record, over the {RECORD_BYTES}-byte limit: read it in .cross_file_context_logs/session_metrics.jsonl"
        ),
    })
}

async fn sessions(State(state): State<AppState>, Query(which): Query<Which>) -> Response {
    let which = which.normalized();
    let window = match which.window(SESSIONS) {
        Ok(window) => window,
        Err(refusal) => return refusal.into_response(),
    };
    let (project, _) = match chosen(&state, &which) {
        Ok(found) => found,
        Err(refusal) => return refusal.into_response(),
    };
    let answer = blocking(&state, move || {
        let records = session::read(&session::log_path(&project.root));
        let total = records.len();
        let (sessions, page) = paged(records.iter().rev(), total, window, session_listed);
        Sessions { page, sessions }
    })
    .await;
    answer.map_or_else(IntoResponse::into_response, |s| json(&s))
}
