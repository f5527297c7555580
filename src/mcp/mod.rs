//! MCP server on stdio (`xfile serve`): a thin adapter over
//! [`Service`](crate::service::Service).
//!
//! By default the sessions of one user on one root share a service
//! (`shared`), which `xfile serve` finds or starts and relays stdio to
//! (`relay`) through a private socket (`rendezvous`); `--standalone`, and
//! every server of registered projects, serves in process.
//!
//! The first index runs in the background, so `initialize` and `tools/list`
//! answer at once; a tool called before it finishes waits for it. Every
//! failure is a tool result with `isError` and a JSON body
//! `{"code", "message", "suggestion"}`; the server never exits on a bad
//! request. stdout carries only protocol.
//!
//! Here: the server, what it does before and around every tool call, and
//! the entry points. The tools are in `tools`, a module a family; their
//! arguments in `args`; what a call sees and how its work runs in
//! `request`; failures in `errors`; the shapes of answers in
//! `results` and of the tool list in `schema`.

mod args;
mod errors;
mod given;
mod hook;
mod projects;
mod relay;
mod rendezvous;
mod request;
mod results;
mod schema;
mod shared;
mod tools;
mod wire;

pub use hook::run_hook;
pub use relay::serve_shared;
pub use shared::serve_service;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    ErrorData, Implementation, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt, tool_handler};

use crate::federation::Scope;
use crate::ops::metrics::{PROCESS_SESSION, SessionId};
use crate::service::text::shortened;
use crate::workspace::config::Config;
use errors::{ToolError, cancelled, error_code, failure};
use projects::Projects;
use request::{REQUEST, Request};
use results::first_text;
use schema::{portable_schema, with_session_argument};
use tools::{FEDERATION_TOOLS, GIT_TOOLS, ToolChoice, unlisted_git_tools};

/// Where the relation catalogue is served.
const RELATIONS_URI: &str = "xfile://relations";

#[derive(Clone)]
pub struct XfileServer {
    projects: Arc<Projects>,
    tool_router: ToolRouter<Self>,
    /// Tools that answer but are not in the tool list.
    unlisted: Arc<Vec<String>>,
    /// Permits for [`HEAVY_TOOLS`] calls running at once, shared by every
    /// session of a service.
    heavy: Arc<tokio::sync::Semaphore>,
    /// The client's session: what it read ranks its own answers only.
    session: SessionId,
}

/// Tools whose work spans the whole project (every file, every relation,
/// a history walk): at most [`HEAVY_AT_ONCE`] run at a time, the rest
/// wait (and leave when cancelled), so a flood of them costs the memory
/// of a few, not of all (a full graph summary on Django holds ~100 MB).
const HEAVY_TOOLS: &[&str] = &[
    "get_relationship_graph",
    "query_relation",
    "explain",
    "get_warnings",
    "search_with_context",
    "expand_cluster_relationship",
    "get_callers",
    "get_callees",
    "impact",
    "git_log",
    "git_blame",
    "git_diff",
    "cross_refs",
    "collection_map",
];
const HEAVY_AT_ONCE: usize = 2;

/// How rmcp begins the error of arguments that do not fit a tool's type.
const ARGUMENT_ERROR: &str = "failed to deserialize parameters:";

/// The longest string argument a tool takes, in characters (paths,
/// symbols, patterns, revisions): a longer one is refused before any work,
/// so nothing a caller sends can be echoed into an answer past its budget.
const MAX_ARGUMENT_CHARS: usize = 4_096;

/// The first top-level string argument longer than [`MAX_ARGUMENT_CHARS`],
/// with its length in characters. Arguments are flat (strings, numbers,
/// booleans and lists of strings), so lists are looked into one level.
fn oversized_argument(
    arguments: &serde_json::Map<String, serde_json::Value>,
) -> Option<(String, usize)> {
    let too_long = |value: &serde_json::Value| {
        value
            .as_str()
            .map(|text| text.chars().count())
            .filter(|&chars| chars > MAX_ARGUMENT_CHARS)
    };
    arguments.iter().find_map(|(name, value)| {
        let chars = too_long(value).or_else(|| value.as_array()?.iter().find_map(too_long))?;
        Some((shortened(name, 64), chars))
    })
}

impl XfileServer {
    /// A server of the project at `root`.
    pub fn new(root: PathBuf) -> Self {
        let (config, _) = Config::load(&root);
        let git = unlisted_git_tools(&config, &root);
        Self::serving(Projects::root(root), &config, git)
    }

    /// A server of `projects`, leaving `unlisted` out of the tool list too.
    fn serving(projects: Projects, config: &Config, unlisted: Vec<String>) -> Self {
        let federated = projects.federated();
        let mut tool_router = Self::tool_router();
        for route in tool_router.map.values_mut() {
            let schema = Arc::make_mut(&mut route.attr.input_schema);
            portable_schema(schema);
            if federated {
                with_session_argument(schema);
            }
            // Every tool only reads the projects (the logs and the registry
            // are xfile's own).
            let read_only = route.attr.name != "manage_registry";
            // No idempotentHint: the MCP schema gives it meaning only when
            // readOnlyHint is false, and it cost 6 tokens a tool in every list.
            route.attr.annotations = Some(ToolAnnotations::new().read_only(read_only));
        }
        let mut choice = ToolChoice::new(config, tool_router.map.keys().map(|k| k.as_ref()));
        if !federated {
            choice
                .unlisted
                .extend(FEDERATION_TOOLS.iter().map(|t| t.to_string()));
        }
        for name in choice.excluded {
            tool_router.disable_route(name);
        }
        choice.unlisted.extend(unlisted);
        Self {
            projects: Arc::new(projects),
            tool_router,
            unlisted: Arc::new(choice.unlisted),
            heavy: Arc::new(tokio::sync::Semaphore::new(HEAVY_AT_ONCE)),
            session: PROCESS_SESSION,
        }
    }

    /// This server, for the client of `session`.
    fn in_session(&self, session: SessionId) -> Self {
        Self {
            session,
            ..self.clone()
        }
    }

    /// Starts the first index of every project served, and building the
    /// tokenizer, in the background; each project's file watcher starts
    /// once its index is there.
    pub fn start_indexing(&self) {
        // Each project builds the tokenizer (once for all) after looking
        // at its warm-start answers (`projects::Member::start`).
        self.projects.start();
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for XfileServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("xfile", env!("CARGO_PKG_VERSION")))
        .with_instructions(if self.projects.federated() {
            "Cross-file context for several Python projects: name a file as project:path, find references between projects with cross_refs and collection_map, narrow what you see with create_session."
        } else {
            "Cross-file context for this Python project: read files with read_with_context, check impact with get_dependents and get_callers."
        })
    }

    /// Reads what the server handles before the tool: `session_id`, and a
    /// `project:` prefix on a path argument naming a served project.
    async fn call_tool(
        &self,
        mut request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        let mut asked = Request::default();
        if let Some(arguments) = request.arguments.as_mut() {
            asked.session = match arguments.remove("session_id") {
                Some(serde_json::Value::String(id)) => Some(id),
                _ => None,
            };
            if self.projects.federated() {
                asked.project = self.project_prefix(arguments, asked.session.as_deref());
            }
        }
        let tool = request.name.to_string();
        let started = std::time::Instant::now();
        let known = self.tool_router.has_route(&request.name);
        if let Some((name, chars)) = request.arguments.as_ref().and_then(oversized_argument) {
            return Ok(failure(ToolError {
                code: "invalid_parameter",
                message: format!(
                    "argument `{name}` is {chars} characters long, over the limit of \
                     {MAX_ARGUMENT_CHARS} for any argument"
                ),
                suggestion: "Pass a path, name or pattern, not file contents.",
            })
            .into());
        }
        asked.cancel = context.ct.clone();
        // Held until the answer is in: the gauge's entry and the permit.
        let mut heavy = HEAVY_TOOLS
            .contains(&tool.as_str())
            .then(|| crate::ops::metrics::global().heavy_call());
        let _permit = match heavy.as_mut() {
            Some(call) => {
                let permit = tokio::select! {
                    permit = self.heavy.clone().acquire_owned() => permit.ok(),
                    () = context.ct.cancelled() => return Ok(failure(cancelled()).into()),
                };
                call.started();
                permit
            }
            None => None,
        };
        let call = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        let answer = REQUEST.scope(asked, self.tool_router.call(call)).await;
        // Arguments that do not fit the schema are the caller's to fix,
        // like any other tool error: the same shape, the input cut short.
        let invalid = |message: String| {
            Ok(failure(ToolError {
                code: "invalid_parameter",
                message,
                suggestion: "Check the arguments against the tool's inputSchema in tools/list.",
            })
            .into())
        };
        let answer = match answer {
            Ok(rmcp::model::CallToolResponse::Complete(result))
                if result.is_error == Some(true)
                    && first_text(&result).starts_with(ARGUMENT_ERROR) =>
            {
                invalid(first_text(&result))
            }
            Err(error) if known && error.code == rmcp::model::ErrorCode::INVALID_PARAMS => {
                invalid(error.message.to_string())
            }
            other => other,
        };
        // Only the server's own tool names become labels: a name from the
        // client that is no tool is counted as `unknown`, so a client cannot
        // grow the metrics without end.
        let label = if known {
            tool.as_str()
        } else {
            crate::ops::metrics::UNKNOWN_TOOL
        };
        crate::ops::metrics::global().record_tool(
            label,
            started.elapsed(),
            error_code(&answer).as_deref(),
        );
        answer
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = self.tool_router.list_all();
        tools.retain(|tool| !self.unlisted.iter().any(|name| *name == tool.name));
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let relations = Resource::new(RELATIONS_URI, "relations")
            .with_description(
                "The relations query_relation and explain accept, with their arguments.",
            )
            .with_mime_type("text/plain");
        Ok(ListResourcesResult::with_all_items(vec![relations]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != RELATIONS_URI {
            return Err(ErrorData::resource_not_found(
                format!(
                    "no resource {}; the only one is {RELATIONS_URI}",
                    request.uri
                ),
                None,
            ));
        }
        Ok(ReadResourceResult::new(vec![ResourceContents::text(
            crate::service::query::catalogue(),
            RELATIONS_URI,
        )])
        .into())
    }
}

/// Serves MCP on stdio for the project at `root`, in this process, until
/// the client closes the connection. Logs go to stderr, filtered by `XFILE_LOG` (for example
/// `XFILE_LOG=debug`; default `warn,xfile=info`).
/// With `http`, the HTTP side (`/metrics`, `/health`, the dashboard)
/// listens there too.
pub fn serve(root: PathBuf, http: Option<SocketAddr>) -> anyhow::Result<()> {
    tracing_to_stderr();
    tracing::info!(root = %root.display(), "xfile MCP server starting");
    run(move || XfileServer::new(root), http)
}

/// Serves the registered projects `scope` names (`--collection`,
/// `--projects`, `--global`), like [`serve`].
pub fn serve_registered(
    registry: crate::registry::Registry,
    scope: Scope,
    http: Option<SocketAddr>,
) -> anyhow::Result<()> {
    tracing_to_stderr();
    tracing::info!(scope = ?scope, "xfile MCP server starting");
    // The git tools need one project's work tree: listed serving one root.
    let git = GIT_TOOLS
        .iter()
        .chain(&["impact"])
        .map(|t| t.to_string())
        .collect();
    run(
        move || XfileServer::serving(Projects::registry(registry, scope), &Config::default(), git),
        http,
    )
}

pub(crate) fn tracing_to_stderr() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("XFILE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,xfile=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

/// Serves the client on `wire` until it closes its side. A handshake
/// that fails (an `initialize` rmcp cannot accept) is logged and the next
/// `initialize` starts over: the server stays up whatever arrives.
/// One MCP session over `wire`, until the client leaves; gives the name the
/// client gave itself, if it got that far.
async fn session(server: XfileServer, wire: &wire::Wire) -> anyhow::Result<Option<String>> {
    loop {
        match server.clone().serve(wire.link()).await {
            Ok(running) => {
                let client = running
                    .peer()
                    .peer_info()
                    .map(|i| i.client_info.name.clone());
                return running.waiting().await.map(|_| client).map_err(Into::into);
            }
            Err(_) if wire.input_ended() => return Ok(None),
            Err(error) => {
                tracing::warn!(%error, "the client's handshake failed; waiting for a new initialize");
                wire.restart();
            }
        }
    }
}

fn run(server: impl FnOnce() -> XfileServer, http: Option<SocketAddr>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    // The session's clock starts with the server.
    crate::ops::metrics::global();
    let outcome = runtime.block_on(async move {
        let server = server();
        server.start_indexing();
        if let Some(addr) = http {
            crate::http::spawn(Some(addr), server.projects.clone()).await?;
        }
        let projects = server.projects.clone();
        let wire = wire::Wire::stdio();
        // The session ends when the client disconnects or the process is
        // asked to stop; either way its metrics are written.
        let ended = tokio::select! {
            quit = session(server, &wire) => quit.map(drop),
            () = crate::ops::terminated() => Ok(()),
        };
        wire.finish().await;
        projects.end_session(PROCESS_SESSION).await;
        ended
    });
    // A blocking read of stdin cannot be cancelled (after SIGTERM the
    // client may still hold it open): the process exits without it.
    runtime.shutdown_background();
    outcome
}
