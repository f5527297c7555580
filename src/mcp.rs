//! MCP server on stdio (`xfile serve`): a thin adapter over [`Service`].
//!
//! The first index runs in the background, so `initialize` and `tools/list`
//! answer at once; a tool called before it finishes waits for it. Every
//! failure is a tool result with `isError` and a JSON body
//! `{"code", "message", "suggestion"}`; the server never exits on a bad
//! request. stdout carries only protocol.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

use crate::service::graph::{self, Detail};
use crate::service::live::{Involved, Live};
use crate::service::paging::{self, CursorError};
use crate::service::{ReadError, ReadOptions, Service};
use crate::watch::{self, Watch};
use crate::workspace::PathError;

#[derive(Deserialize, JsonSchema)]
pub struct FileArgs {
    /// Path of a Python file, relative to the project root or absolute inside it.
    pub file_path: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// Path of a Python file, relative to the project root or absolute inside it.
    pub file_path: String,
    /// First line to read (1-based); with end_line, only what those lines use is injected.
    pub start_line: Option<u32>,
    /// Last line to read (inclusive).
    pub end_line: Option<u32>,
    /// 2 also shows the classes that the injected signatures mention; default 1 (configurable).
    pub import_depth: Option<u32>,
    /// Also list the public names of the sibling modules in the file's package.
    #[serde(default)]
    pub show_available: bool,
}

#[derive(Deserialize, JsonSchema)]
pub struct DependentsArgs {
    /// Path of a Python file, relative to the project root or absolute inside it.
    pub file_path: String,
    /// Only relationships about this definition of the file: a function or
    /// class name, or a member such as `User.save` (a class takes in its
    /// members).
    pub symbol: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub struct CallGraphArgs {
    /// The function, method or class: `path::Qualified.name`
    /// (`app/models.py::User.save`) or a dotted name (`app.models.User.save`).
    pub symbol: String,
    /// How many calls away to follow, 1 (direct, the default) to 5.
    pub depth: Option<usize>,
    /// Calls listed at most (default 100); the answer says how many there are.
    pub limit: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
pub struct GraphArgs {
    /// Only files, relationships, warnings and cycles under this path prefix.
    pub path_prefix: Option<String>,
    /// summary (default): counts, most connected files, some cycles; or one
    /// list, a page at a time: files, relationships, warnings, cycles.
    #[serde(default)]
    pub detail: Detail,
    /// Items per page (default 100, at most 1000).
    pub limit: Option<usize>,
    /// The next_cursor of the previous page.
    pub cursor: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub struct WarningsArgs {
    /// Only warnings and notices about this file.
    pub file_path: Option<String>,
    /// Warnings per page (default 100, at most 1000).
    pub limit: Option<usize>,
    /// The next_cursor of the previous page.
    pub cursor: Option<String>,
}

/// Notices (skipped files, encoding fallbacks, configuration problems)
/// spelled out in a warnings answer; the count says how many there are.
const NOTICES: usize = 20;

/// `get_warnings`: counts by type, then one page of the warnings.
#[derive(Serialize)]
struct WarningsAnswer {
    by_type: BTreeMap<&'static str, usize>,
    suppressed: BTreeMap<&'static str, usize>,
    notices_total: usize,
    notices: Vec<crate::workspace::Notice>,
    warnings: paging::Page<crate::service::model::Warning>,
}

#[derive(Deserialize, JsonSchema)]
pub struct InjectionArgs {
    /// Only injections into this file (the file that was read).
    pub target_file: Option<String>,
    /// How many events, newest first (default 10).
    pub limit: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
pub struct QueryArgs {
    /// A relation pattern such as `Calls("app.py", _, _, _)`; `_` is a wildcard.
    pub pattern: String,
}

#[derive(Deserialize, JsonSchema)]
pub struct ExplainArgs {
    /// A tuple pattern such as `DependsOn("app.py", "models.py")`; `_` is a wildcard.
    pub fact: String,
    /// Answer with the JSON tree instead of indented text.
    pub json: Option<bool>,
}

/// The relations `query_relation` and `explain` accept, generated from the
/// rules so a new rules file shows up in the tool descriptions by itself.
fn relations_description(what: &str) -> String {
    format!(
        "{what} Relations (name(arguments)):\n{}",
        crate::service::query::catalogue()
    )
}

fn invalid_pattern(error: crate::service::query::QueryError) -> ToolError {
    ToolError {
        code: "invalid_parameter",
        message: error.to_string(),
        suggestion: "Write Relation(arg, ...) with one argument per relation field.",
    }
}

type Shared = Arc<OnceCell<Result<Arc<Live>, String>>>;

/// How long a tool waits for the first index before answering `indexing`.
const INDEX_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Clone)]
pub struct XfileServer {
    root: PathBuf,
    service: Shared,
    /// The file watcher, once the first index is done.
    watch: Arc<Mutex<Option<Watch>>>,
    tool_router: ToolRouter<Self>,
}

/// A tool failure: a stable code, what went wrong, and what to do.
struct ToolError {
    code: &'static str,
    message: String,
    suggestion: &'static str,
}

impl From<crate::service::calls::SymbolError> for ToolError {
    fn from(error: crate::service::calls::SymbolError) -> Self {
        use crate::service::calls::SymbolError;
        match error {
            SymbolError::Path(error) => error.into(),
            other => ToolError {
                code: other.code(),
                message: other.to_string(),
                suggestion: "Name a definition as path::Qualified.name; get_dependencies lists a file's targets with their symbols.",
            },
        }
    }
}

impl From<CursorError> for ToolError {
    fn from(error: CursorError) -> Self {
        ToolError {
            code: "invalid_parameter",
            message: error.to_string(),
            suggestion: "Start again without cursor, or pass next_cursor from the previous page.",
        }
    }
}

impl From<ReadError> for ToolError {
    fn from(error: ReadError) -> Self {
        match error {
            ReadError::Path(error) => error.into(),
            range @ ReadError::Range(_) => ToolError {
                code: range.code(),
                message: range.to_string(),
                suggestion: "Omit start_line and end_line to read the whole file.",
            },
        }
    }
}

impl From<PathError> for ToolError {
    fn from(error: PathError) -> Self {
        let suggestion = match &error {
            PathError::NotFound(_) => {
                "Check the spelling; get_relationship_graph with detail: files and a path_prefix lists files."
            }
            PathError::OutsideRoot(..) => "Use a path inside the project root.",
            PathError::Sensitive(_) => "This file is never served; it may hold secrets.",
            PathError::NulByte(_) => "Pass a plain path string.",
            PathError::MissingRoot(_) => "Restart the server with an existing --root.",
            PathError::NotPython(_) => {
                "Read other files directly; xfile adds context to .py files."
            }
        };
        ToolError {
            code: error.code(),
            message: error.to_string(),
            suggestion,
        }
    }
}

fn ok_json(value: &impl serde::Serialize) -> CallToolResult {
    let text = serde_json::to_string(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    CallToolResult::success(vec![ContentBlock::text(text)])
}

fn failure(error: ToolError) -> CallToolResult {
    let body = serde_json::json!({
        "code": error.code,
        "message": error.message,
        "suggestion": error.suggestion,
    });
    CallToolResult::error(vec![ContentBlock::text(body.to_string())])
}

impl XfileServer {
    pub fn new(root: PathBuf) -> Self {
        Self {
            root,
            service: Arc::new(OnceCell::new()),
            watch: Arc::new(Mutex::new(None)),
            tool_router: Self::tool_router(),
        }
    }

    /// Starts the first index, and building the tokenizer, in the
    /// background; the file watcher starts once the index is there.
    pub fn start_indexing(&self) {
        tokio::task::spawn_blocking(|| crate::service::context::count_tokens(""));
        let (root, cell, watch) = (self.root.clone(), self.service.clone(), self.watch.clone());
        tokio::spawn(async move {
            if let Ok(live) = cell.get_or_init(|| open(root)).await {
                let logged = live.clone();
                let watcher = Watch::start(live.clone(), watch::Options::default(), move |_| {
                    log_warnings(&logged)
                });
                *watch.lock().unwrap_or_else(|e| e.into_inner()) = Some(watcher);
            }
        });
    }

    /// Answers with `f` on a snapshot of the service that is no older than
    /// the `involved` files on disk, off the async workers (a freshness
    /// update may parse files).
    async fn fresh(
        &self,
        involved: Involved,
        f: impl Fn(&Service) -> Result<CallToolResult, ToolError> + Send + 'static,
    ) -> CallToolResult {
        self.with_live(move |live| live.read_fresh(&involved, &f))
            .await
    }

    /// A call-graph walk over fresh files (any file may hold a caller).
    async fn call_graph(
        &self,
        args: CallGraphArgs,
        direction: crate::service::calls::Direction,
    ) -> CallToolResult {
        self.fresh(Involved::All, move |s| {
            let graph = s.call_graph(
                &args.symbol,
                direction,
                args.depth.unwrap_or(1),
                args.limit
                    .unwrap_or(crate::service::calls::DEFAULT_LIMIT)
                    .min(crate::service::calls::MAX_LIMIT),
            )?;
            Ok(ok_json(&graph))
        })
        .await
    }

    /// Runs `f` on the live service, waiting for the first index if needed.
    async fn with_live(
        &self,
        f: impl FnOnce(&Live) -> Result<CallToolResult, ToolError> + Send + 'static,
    ) -> CallToolResult {
        let root = self.root.clone();
        let waiting = self.service.get_or_init(|| open(root));
        let Ok(ready) = tokio::time::timeout(INDEX_WAIT, waiting).await else {
            return failure(ToolError {
                code: "indexing",
                message: format!(
                    "the first index of {} is still running after {} s",
                    self.root.display(),
                    INDEX_WAIT.as_secs()
                ),
                suggestion: "Try again in a moment; large projects take a while to index.",
            });
        };
        let outcome = match ready {
            Ok(live) => {
                let live = live.clone();
                tokio::task::spawn_blocking(move || f(&live))
                    .await
                    .unwrap_or_else(|e| {
                        Err(ToolError {
                            code: "internal",
                            message: format!("the request failed: {e}"),
                            suggestion: "Retry; if it keeps failing, report it with the server log.",
                        })
                    })
            }
            Err(message) => Err(ToolError {
                code: "index_failed",
                message: message.clone(),
                suggestion: "Restart the server with an existing --root.",
            }),
        };
        outcome.unwrap_or_else(failure)
    }
}

async fn open(root: PathBuf) -> Result<Arc<Live>, String> {
    let opened = tokio::task::spawn_blocking(move || {
        Live::open(&root).map(Arc::new).map_err(|e| e.to_string())
    })
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
            for notice in &summary.notices {
                tracing::warn!(path = %notice.path, "{}", notice.message);
            }
            log_warnings(live);
        }
        Err(message) => tracing::error!("indexing failed: {message}"),
    }
    opened
}

/// Appends warnings not logged yet to `warnings.jsonl` (TDD §3.9.5).
fn log_warnings(live: &Live) {
    if let Err(error) = live.read(Service::log_warnings) {
        // Best effort: the tools still answer.
        tracing::warn!("cannot write the warning log: {error}");
    }
}

#[tool_router(router = tool_router)]
impl XfileServer {
    #[tool(
        description = "Read a Python file (or a line range of it) together with the signatures, class skeletons and locations of the project definitions those lines use from other files, within a token budget. Use this instead of a plain read when you need to know what imported names mean."
    )]
    async fn read_with_context(&self, Parameters(args): Parameters<ReadArgs>) -> CallToolResult {
        let involved = Involved::Dependencies(args.file_path.clone());
        self.fresh(involved, move |s| {
            let options = ReadOptions {
                start_line: args.start_line,
                end_line: args.end_line,
                import_depth: args.import_depth,
                show_available: args.show_available,
                log: true,
            };
            let text = s.read_with_options(&args.file_path, &options)?;
            Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
        })
        .await
    }

    #[tool(
        description = "List what a Python file depends on: its imports, the cross-file functions it calls and the classes it inherits from, with line numbers and target definitions."
    )]
    async fn get_dependencies(&self, Parameters(args): Parameters<FileArgs>) -> CallToolResult {
        let involved = Involved::Dependencies(args.file_path.clone());
        self.fresh(involved, move |s| {
            Ok(ok_json(&s.dependencies(&args.file_path)?))
        })
        .await
    }

    #[tool(
        description = "List who depends on a Python file (imports it, calls into it, inherits from it), optionally for one symbol. Use before changing a signature to see what may break."
    )]
    async fn get_dependents(&self, Parameters(args): Parameters<DependentsArgs>) -> CallToolResult {
        let involved = Involved::Dependents(args.file_path.clone());
        self.fresh(involved, move |s| {
            let dependents = match &args.symbol {
                Some(symbol) => s.dependents_of_symbol(&args.file_path, symbol)?,
                None => s.dependents(&args.file_path)?,
            };
            Ok(ok_json(&dependents))
        })
        .await
    }

    #[tool(
        description = "List who calls a function, method or class, breadth first to a depth (1-5), with the line of each call: what breaks if its signature changes. Calls through self, cls, super() and objects of known class are included. Bounded by limit."
    )]
    async fn get_callers(&self, Parameters(args): Parameters<CallGraphArgs>) -> CallToolResult {
        self.call_graph(args, crate::service::calls::Direction::Callers)
            .await
    }

    #[tool(
        description = "List what a function, method or class body calls, breadth first to a depth (1-5), with the line of each call. Bounded by limit."
    )]
    async fn get_callees(&self, Parameters(args): Parameters<CallGraphArgs>) -> CallToolResult {
        self.call_graph(args, crate::service::calls::Direction::Callees)
            .await
    }

    #[tool(
        description = "Overview of the project graph: file, relationship and warning counts, the most connected files and import cycles. Pass detail to page through files, relationships, warnings or cycles; path_prefix narrows everything to a directory."
    )]
    async fn get_relationship_graph(
        &self,
        Parameters(args): Parameters<GraphArgs>,
    ) -> CallToolResult {
        self.fresh(Involved::All, move |s| {
            let answer = graph::answer(
                s,
                args.path_prefix.as_deref(),
                args.detail,
                args.limit.unwrap_or(paging::DEFAULT_LIMIT),
                args.cursor.as_deref(),
            )?;
            Ok(ok_json(&answer))
        })
        .await
    }

    #[tool(
        description = "List where static analysis goes blind: dynamic imports, getattr dispatch, monkey patching, exec/eval, decorators, metaclasses, circular imports (and wildcard imports if enabled), each with line, code, explanation and guidance; plus how many were suppressed by configuration and indexing notices (skipped files, latin-1 fallbacks, configuration problems). Counts by type first, then the warnings a page at a time (limit, cursor); optionally for one file."
    )]
    async fn get_warnings(&self, Parameters(args): Parameters<WarningsArgs>) -> CallToolResult {
        self.fresh(Involved::All, move |s| {
            let report = s.warnings(args.file_path.as_deref())?;
            let mut by_type = BTreeMap::new();
            for w in &report.warnings {
                *by_type.entry(w.warning_type.as_str()).or_default() += 1;
            }
            let notices_total = report.notices.len();
            let mut notices = report.notices;
            notices.truncate(NOTICES);
            let warnings = paging::page(
                report.warnings,
                args.cursor.as_deref(),
                args.limit.unwrap_or(paging::DEFAULT_LIMIT),
                s.answer_token_limit(),
            )?;
            Ok(ok_json(&WarningsAnswer {
                by_type,
                suppressed: report.suppressed,
                notices_total,
                notices,
                warnings,
            }))
        })
        .await
    }

    #[tool(
        description = "Recent context injections from the injection log: which snippets were added to which file reads, with token counts and cache hits. Use to see what context an agent was given."
    )]
    async fn get_recent_injections(
        &self,
        Parameters(args): Parameters<InjectionArgs>,
    ) -> CallToolResult {
        self.with_live(move |live| {
            live.read(|s| {
                let events =
                    s.recent_injections(args.target_file.as_deref(), args.limit.unwrap_or(10))?;
                Ok(ok_json(&events))
            })
        })
        .await
    }

    #[tool(
        description = "Statistics of the working memory cache of injected snippets: hits, misses, staleness refreshes, evictions, current and peak size against the limit."
    )]
    async fn get_cache_statistics(&self) -> CallToolResult {
        self.with_live(|live| Ok(ok_json(&live.read(Service::cache_statistics))))
            .await
    }

    #[tool(
        description = relations_description(
            "Query any relation of the Datalog rules with a pattern like Imports(\"app.py\", _, _) or DependsOn(_, \"models.py\"); `_` is a wildcard, other arguments are paths, names or line:column positions."
        )
    )]
    async fn query_relation(&self, Parameters(args): Parameters<QueryArgs>) -> CallToolResult {
        self.fresh(Involved::All, move |s| {
            s.query(&args.pattern)
                .map(|r| ok_json(&r))
                .map_err(invalid_pattern)
        })
        .await
    }

    #[tool(
        description = relations_description(
            "Explain why a relationship holds: the rule (file:line) and its premises, down to base facts and the source lines they come from. For a tuple that does not hold, says which rule premise fails and shows near misses (e.g. the import exists but resolves elsewhere). Pattern like DependsOn(\"app.py\", \"models.py\") or Calls(\"app.py\", _, _, \"f\")."
        )
    )]
    async fn explain(&self, Parameters(args): Parameters<ExplainArgs>) -> CallToolResult {
        self.fresh(Involved::All, move |s| {
            let explanation = s.explain(&args.fact).map_err(invalid_pattern)?;
            Ok(if args.json.unwrap_or(false) {
                ok_json(&explanation)
            } else {
                CallToolResult::success(vec![ContentBlock::text(explanation.to_text())])
            })
        })
        .await
    }

    #[tool(
        description = "Explain the recent model updates: for each (newest last), which files were added, modified or removed, which incremental queries executed and which cached results were reused, whether the Datalog rules re-ran, and how long each phase took; plus the file watcher's state. Use to check that the model is fresh after edits or to debug slowness."
    )]
    async fn explain_recomputation(&self) -> CallToolResult {
        let watcher = self
            .watch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(Watch::status);
        self.with_live(move |live| {
            Ok(ok_json(&serde_json::json!({
                "watcher": watcher,
                "updates": live.recent_updates(),
            })))
        })
        .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for XfileServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("xfile", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Cross-file context for this Python project: read files with read_with_context, check impact with get_dependents.",
            )
    }
}

/// Serves MCP on stdio until the client closes the connection. Logs go to
/// stderr, filtered by `XFILE_LOG` (for example `XFILE_LOG=debug`; default
/// `warn,xfile=info`).
pub fn serve(root: PathBuf) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_env("XFILE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,xfile=info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    tracing::info!(root = %root.display(), "xfile MCP server starting");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let server = XfileServer::new(root);
        server.start_indexing();
        let running = server.serve(rmcp::transport::stdio()).await?;
        running.waiting().await?;
        Ok(())
    })
}
