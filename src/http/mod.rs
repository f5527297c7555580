//! The optional HTTP side (axum): `/metrics` in Prometheus text format,
//! `/health`, and the read-only dashboard with its JSON (`api.rs`). It
//! serves whatever a [`Source`] says is served: the MCP server's projects
//! (`xfile serve --http`) or one project indexed for the dashboard alone
//! (`xfile dashboard`). It listens on loopback unless told otherwise,
//! answers only requests that name it (`guard.rs`), and bounds what a
//! client can hold: connections and their idle time (`conn.rs`), answer
//! sizes (`api.rs`) and the work running at once ([`AppState::work`]).

mod api;
mod conn;
mod guard;
mod standalone;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;

use crate::ops::metrics::{self, ProjectFigures};
use crate::service::live::Live;
use crate::watch;

pub use standalone::dashboard;

/// The dashboard's port when none is asked for, and how many
/// after it are tried when it is taken.
const DEFAULT_PORT: u16 = 3456;
const PORTS_TRIED: u16 = 10;

/// One served project as the HTTP side sees it.
pub struct ProjectState {
    pub name: String,
    pub root: PathBuf,
    /// Set once the first index is there.
    pub live: Option<Arc<Live>>,
    /// Why the first index failed, if it did.
    pub failure: Option<String>,
    pub watcher: Option<watch::Status>,
}

/// What the HTTP side reports on.
pub trait Source: Send + Sync + 'static {
    fn projects(&self) -> Vec<ProjectState>;
}

#[derive(Clone)]
struct AppState {
    source: Arc<dyn Source>,
    started: Instant,
    /// Permits for work off the async workers ([`blocking`]): a few
    /// requests compute at once, the others wait their turn.
    work: Arc<tokio::sync::Semaphore>,
}

/// Requests computing at once (index reads, answers being built).
const WORKING: usize = 2;

/// Where to listen: `ADDR` as given (`127.0.0.1:8080`, or a port alone,
/// on loopback). An address that is not loopback is allowed, with a
/// warning, since the dashboard and metrics then reach the network.
pub fn address(asked: &str) -> Result<SocketAddr, String> {
    let addr = match asked.parse::<u16>() {
        Ok(port) => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
        Err(_) => asked.parse::<SocketAddr>().map_err(|e| {
            format!("--http {asked}: {e}; give HOST:PORT such as 127.0.0.1:3456, or a port")
        })?,
    };
    if !addr.ip().is_loopback() {
        eprintln!(
            "xfile: warning: listening on {addr}, beyond this machine: anyone who reaches it can read the project's structure"
        );
    }
    Ok(addr)
}

/// Binds `addr` (or, with none, the first free port from 3456 on loopback),
/// starts serving in the background and says where on stderr.
pub async fn spawn(
    addr: Option<SocketAddr>,
    source: Arc<dyn Source>,
) -> std::io::Result<SocketAddr> {
    let listener = match addr {
        Some(addr) => tokio::net::TcpListener::bind(addr).await?,
        None => default_listener().await?,
    };
    let bound = listener.local_addr()?;
    let app = router(
        AppState {
            source,
            started: Instant::now(),
            work: Arc::new(tokio::sync::Semaphore::new(WORKING)),
        },
        guard::Allowed { bound },
    );
    tokio::spawn(conn::serve(listener, app, conn::Limits::from_env()));
    eprintln!("xfile: dashboard at http://{bound}/ (metrics at /metrics, health at /health)");
    Ok(bound)
}

async fn default_listener() -> std::io::Result<tokio::net::TcpListener> {
    let mut last = None;
    for port in DEFAULT_PORT..DEFAULT_PORT + PORTS_TRIED {
        match tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await {
            Ok(listener) => return Ok(listener),
            Err(error) => last = Some(error),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no port to try")))
}

fn router(state: AppState, allowed: guard::Allowed) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/metrics", get(prometheus))
        .route("/health", get(health))
        .merge(api::routes())
        .fallback(not_found)
        .with_state(state)
        .layer(axum::middleware::from_fn_with_state(allowed, guard::guard))
}

async fn not_found() -> (StatusCode, &'static str) {
    (StatusCode::NOT_FOUND, "not found\n")
}

async fn page() -> Html<&'static str> {
    Html(include_str!("dashboard.html"))
}

/// Runs `f` off the async workers (index reads may compute), when one of
/// the [`WORKING`] permits is free.
async fn blocking<T: Send + 'static>(
    state: &AppState,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response> {
    let failed = |error: String| {
        metrics::global().record_error("http");
        (StatusCode::INTERNAL_SERVER_ERROR, error).into_response()
    };
    let _permit = state
        .work
        .acquire()
        .await
        .map_err(|error| failed(error.to_string()))?;
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|error| failed(error.to_string()))
}

async fn prometheus(State(state): State<AppState>) -> Response {
    let text = blocking(&state.clone(), move || {
        let figures: Vec<ProjectFigures> = state
            .source
            .projects()
            .iter()
            .filter_map(|p| {
                let live = p.live.as_ref()?;
                Some(live.read(|s| ProjectFigures::of(&p.name, s)))
            })
            .collect();
        metrics::global().encode(&figures)
    })
    .await;
    match text {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(refusal) => refusal.into_response(),
    }
}

#[derive(Serialize)]
struct Health {
    status: &'static str,
    checks: Checks,
    uptime_seconds: f64,
    /// What failed, per project, when something did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    problems: Vec<String>,
}

#[derive(Clone, Copy, Serialize)]
struct Checks {
    /// Every project's index is built.
    index: bool,
    /// Every project's file watcher runs natively, or polls as asked.
    watcher: bool,
    /// Every project's log directory is writable, and the last write of
    /// each of xfile's files under the root (logs, cache) succeeded.
    logs: bool,
}

/// Unhealthy without an index (no tool can answer); degraded when the
/// tools answer but freshness or logging suffers.
fn status(checks: Checks) -> (&'static str, StatusCode) {
    if !checks.index {
        ("unhealthy", StatusCode::SERVICE_UNAVAILABLE)
    } else if !(checks.watcher && checks.logs) {
        ("degraded", StatusCode::TOO_MANY_REQUESTS)
    } else {
        ("healthy", StatusCode::OK)
    }
}

async fn health(State(state): State<AppState>) -> Response {
    let projects = state.source.projects();
    let mut problems = Vec::new();
    let mut checks = Checks {
        index: true,
        watcher: true,
        logs: true,
    };
    for p in &projects {
        if p.live.is_none() {
            checks.index = false;
            problems.push(match &p.failure {
                Some(failure) => format!("{}: indexing failed: {failure}", p.name),
                None => format!("{}: still indexing", p.name),
            });
        }
        let watching = p
            .watcher
            .as_ref()
            .is_some_and(|w| w.mode != "stopped" && (w.mode == "native" || w.failures == 0));
        if p.live.is_some() && !watching {
            checks.watcher = false;
            problems.push(format!("{}: file watcher not running natively", p.name));
        }
        if let Err(problem) = crate::ops::logs::writable(&p.root) {
            checks.logs = false;
            problems.push(format!("{}: {problem}", p.name));
        }
        // The directory may look writable while writes fail (a full
        // disk, a file in the way): the last try of each file tells.
        for failed in crate::service::failed_writes::under(&p.root) {
            checks.logs = false;
            problems.push(format!("{}: {}", p.name, failed.describe(&p.root)));
        }
    }
    let (status, code) = status(checks);
    let body = Health {
        status,
        checks,
        uptime_seconds: state.started.elapsed().as_secs_f64(),
        problems,
    };
    (code, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_status_per_state_fr068() {
        let all = |index, watcher, logs| Checks {
            index,
            watcher,
            logs,
        };
        assert_eq!(status(all(true, true, true)).1, StatusCode::OK);
        assert_eq!(
            status(all(true, false, true)).1,
            StatusCode::TOO_MANY_REQUESTS
        );
        assert_eq!(status(all(true, true, false)).0, "degraded");
        assert_eq!(
            status(all(false, true, true)).1,
            StatusCode::SERVICE_UNAVAILABLE
        );
    }

    #[test]
    fn addresses_default_to_loopback() {
        assert_eq!(address("8080").unwrap().to_string(), "127.0.0.1:8080");
        assert_eq!(address("[::1]:9").unwrap().to_string(), "[::1]:9");
        assert!(address("localhost:x").is_err());
    }
}
