//! MCP server on stdio (`xfile serve`): a thin adapter over [`Service`].
//!
//! The first index runs in the background, so `initialize` and `tools/list`
//! answer at once; a tool called before it finishes waits for it. Every
//! failure is a tool result with `isError` and a JSON body
//! `{"code", "message", "suggestion"}`; the server never exits on a bad
//! request. stdout carries only protocol.

mod args;
mod errors;
mod projects;
mod request;
mod results;
mod schema;
mod wire;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ErrorData, Implementation, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ServerCapabilities, ServerConfig, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::Serialize;

use crate::federation::links;
use crate::federation::{Level, Scope, SessionError};
use crate::service::calls::Direction;
use crate::service::context::count_tokens;
use crate::service::graph;
use crate::service::live::{Involved, Live};
use crate::service::paging;
use crate::service::search::{Expand, SearchOptions};
use crate::service::text::{self, shortened};
use crate::service::warm::answers;
use crate::service::{ReadOptions, Service};
use crate::workspace::config::Config;
use args::{
    CallGraphArgs, CollectionMapArgs, CrossRefsArgs, DependentsArgs, ExpandClusterArgs,
    ExplainArgs, FileArgs, Format, GitBlameArgs, GitDiffArgs, GitLogArgs, GraphArgs, ImpactArgs,
    InjectionArgs, OutlineArgs, PageArgs, QueryArgs, ReadArgs, RegistryAction, RegistryArgs,
    SearchArgs, SessionArgs, SymbolArgs, WarningsArgs,
};
use errors::{ToolError, cancelled, error_code, failure, internal, join_failed};
use projects::{Member, Projects};
use request::{REQUEST, Request, current_request};
use results::{FRAME_TOKENS, first_text, ok_json, paged, paged_knowing, text_result, with_notes};
use schema::{graph_output_schema, portable_schema, with_session_argument};

/// Notices (skipped files, encoding fallbacks, configuration problems)
/// spelled out in a warnings answer; the count says how many there are.
const NOTICES: usize = 20;

/// `get_warnings` as JSON: counts by type, then one page of the warnings.
#[derive(Serialize)]
struct WarningsAnswer {
    by_type: BTreeMap<&'static str, usize>,
    suppressed: BTreeMap<&'static str, usize>,
    notices_total: usize,
    notices: Vec<crate::workspace::Notice>,
    warnings: paging::Page<crate::service::model::Warning>,
}

/// The git history tools: listed only when `enabled_tools` names them or
/// the group `git` (agents usually have git at hand; these cost tool-list
/// tokens in every session), and only inside a git work tree. They answer
/// by name either way. `impact` is listed by default inside a work tree.
const GIT_GROUP: &str = "git";
const GIT_TOOLS: [&str; 3] = ["git_log", "git_blame", "git_diff"];

/// The git tools (and `impact`) left out of the list for `root`.
fn unlisted_git_tools(config: &Config, root: &std::path::Path) -> Vec<String> {
    let in_work_tree = crate::git::Repo::open(root).is_ok();
    let enabled = |name: &str| {
        config
            .enabled_tools
            .iter()
            .any(|e| e == name || e == GIT_GROUP || e == "all")
    };
    GIT_TOOLS
        .iter()
        .filter(|name| !in_work_tree || !enabled(name))
        .chain((!in_work_tree).then_some(&"impact"))
        .map(|name| name.to_string())
        .collect()
}

/// Tools left out of the tool list unless `enabled_tools` names them, but
/// still answering when called by name: the operations tools serve
/// whoever operates xfile, not the agent's task.
const UNLISTED_TOOLS: [&str; 3] = [
    "get_recent_injections",
    "get_cache_statistics",
    "explain_recomputation",
];

/// Where the relation catalogue is served.
const RELATIONS_URI: &str = "xfile://relations";

fn invalid_pattern(error: crate::service::query::QueryError) -> ToolError {
    ToolError {
        code: "invalid_parameter",
        message: error.to_string(),
        suggestion: "Write Relation(arg, ...) with one argument per relation field.",
    }
}

#[derive(Clone)]
pub struct XfileServer {
    projects: Arc<Projects>,
    tool_router: ToolRouter<Self>,
    /// Tools that answer but are not in the tool list.
    unlisted: Arc<Vec<String>>,
    /// Permits for [`HEAVY_TOOLS`] calls running at once.
    heavy: Arc<tokio::sync::Semaphore>,
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

/// Which tools the list shows and which answer at all: the unlisted
/// tools unless `enabled_tools` names them (or says `all`) are left out of
/// the list; what `excluded_tools` names is switched off. Unknown names
/// are logged, so a typo does not pass silently.
struct ToolChoice {
    unlisted: Vec<String>,
    excluded: Vec<String>,
}

impl ToolChoice {
    fn new<'a>(config: &Config, known: impl Iterator<Item = &'a str>) -> ToolChoice {
        let known: Vec<&str> = known.collect();
        for name in config.enabled_tools.iter().chain(&config.excluded_tools) {
            if name != "all" && name != GIT_GROUP && !known.contains(&name.as_str()) {
                tracing::warn!(
                    "{}: no tool is named `{name}`; the tools are {}",
                    crate::workspace::config::CONFIG_FILE,
                    known.join(", ")
                );
            }
        }
        let enabled = |name: &str| config.enabled_tools.iter().any(|e| e == name || e == "all");
        ToolChoice {
            unlisted: UNLISTED_TOOLS
                .iter()
                .filter(|name| !enabled(name))
                .map(|name| name.to_string())
                .collect(),
            excluded: config.excluded_tools.clone(),
        }
    }
}

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

/// The tools that work across projects: listed only by a server of
/// registered projects.
const FEDERATION_TOOLS: [&str; 4] = [
    "create_session",
    "cross_refs",
    "collection_map",
    "manage_registry",
];

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

    /// `get_dependencies` (`dependents` none) or `get_dependents` (with
    /// the symbol asked for, if any) from the warm-start answers, while a
    /// single project's first index is not there yet and the answers hold
    /// for the tree; `None` means the index answers, as it does for
    /// everything else (several projects, a file the answers do not know,
    /// or one of the files the answer rests on changed since the start).
    async fn prebuilt(
        &self,
        file: String,
        dependents: Option<Option<String>>,
        page: PageArgs,
    ) -> Option<CallToolResult> {
        if self.projects.federated() {
            return None;
        }
        let member = match self.members().ok()?.as_slice() {
            [member] => member.clone(),
            _ => return None,
        };
        if member.ready_now().is_some() {
            return None;
        }
        let prebuilt = member.prebuilt().await?;
        tokio::task::spawn_blocking(move || {
            let path = crate::workspace::resolve_user_path(&member.root, &file).ok()?;
            let list = match &dependents {
                None => prebuilt.dependencies(&path)?,
                Some(None) => prebuilt.dependents(&path)?,
                Some(Some(symbol)) => prebuilt.dependents_of_symbol(&path, symbol)?,
            };
            if !prebuilt.still(&path, &list) {
                return None;
            }
            tracing::debug!(file = %path, "answered from the warm-start answers");
            let budget = usize::try_from(prebuilt.config.answer_token_limit).unwrap_or(usize::MAX);
            // The first page's size is known for the whole list only.
            let known = match &dependents {
                Some(Some(_)) => None,
                _ => prebuilt
                    .first_page_tokens(&path, dependents.is_some())
                    .map(|tokens| (list.len().min(answers::PAGE), tokens)),
            };
            let answer = paged_knowing(
                list,
                &page,
                budget,
                "relationships",
                text::relationships,
                known,
            );
            Some(answer.unwrap_or_else(failure))
        })
        .await
        .ok()
        .flatten()
    }

    /// A call-graph walk over fresh files (any file may hold a caller).
    async fn call_graph(&self, args: CallGraphArgs, direction: Direction) -> CallToolResult {
        // Callers may be in other projects; callees are the project's own
        // (calls into other projects show as their targets).
        let across = match direction {
            Direction::Callers => self.cross_project().await,
            Direction::Callees => None,
        };
        self.fresh(Involved::All, move |s| {
            let limit = args
                .limit
                .unwrap_or(crate::service::calls::DEFAULT_LIMIT)
                .min(crate::service::calls::MAX_LIMIT);
            let mut graph =
                s.call_graph(&args.symbol, direction, args.depth.unwrap_or(1), limit)?;
            if let Some((projects, members)) = &across {
                let symbol = s.find_symbol(&args.symbol)?;
                let calls = projects.across(members, |peers, index| {
                    match peers.iter().position(|p| p.service.root() == s.root()) {
                        Some(me) => links::callers_across(peers, index, me, &symbol.file, &symbol.qualname),
                        None => Vec::new(),
                    }
                });
                graph.total += calls.len();
                // Direct callers first, as the walk lists them.
                let direct = graph.calls.iter().take_while(|c| c.depth == 1).count();
                graph.calls.splice(direct..direct, calls);
                if graph.calls.len() > limit {
                    graph.calls.truncate(limit);
                    graph.truncated = Some(format!(
                        "{limit} of {} calls listed; ask with a higher limit or a smaller depth",
                        graph.total
                    ));
                }
            }
            let render = |g: &crate::service::calls::CallGraph| match args.format {
                Format::Text => text::call_graph(g),
                Format::Json => serde_json::to_string(g).unwrap_or_default(),
            };
            // Calls beyond the answer budget are cut like calls beyond the
            // limit: the answer says how many there are.
            let budget = s.answer_token_limit();
            let shown = |n: usize| {
                let mut cut = graph.clone();
                cut.calls.truncate(n);
                count_tokens(&render(&cut))
            };
            let keep = paging::fitting(graph.calls.len(), budget.saturating_sub(FRAME_TOKENS), shown);
            if keep < graph.calls.len() {
                graph.calls.truncate(keep);
                graph.truncated = Some(format!(
                    "{keep} of {} calls listed, cut by the {budget}-token answer budget; ask with a smaller depth",
                    graph.total
                ));
            }
            let answer = render(&graph);
            Ok(text_result(answer))
        })
        .await
    }
}

/// Computes again, on a thread of its own, the hot spots an update made
/// stale, once edits pause (they are a head start for searches, which
/// compute a stale one when they hit it: not worth a core during a burst
/// of edits); one refresh at a time (a refresh running covers the updates
/// that come meanwhile only if they came before it looked, so the next
/// search still checks).
fn refresh_hot_spots(live: &Arc<Live>, refreshing: &Arc<std::sync::atomic::AtomicBool>) {
    use std::sync::atomic::Ordering;
    if refreshing.swap(true, Ordering::AcqRel) {
        return;
    }
    let (live, refreshing) = (live.clone(), refreshing.clone());
    std::thread::spawn(move || {
        live.wait_quiet(projects::BACKGROUND_QUIET);
        let started = std::time::Instant::now();
        live.read_when_quiet(projects::BACKGROUND_QUIET, Service::refresh_hot_spots);
        tracing::debug!(
            ms = crate::service::elapsed_ms(started),
            "hot spots refreshed"
        );
        refreshing.store(false, Ordering::Release);
    });
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
        title = "Read with context",
        description = "Read a Python file with the signatures and locations of the project definitions it uses from other files. Prefer it to a plain read."
    )]
    async fn read_with_context(&self, Parameters(args): Parameters<ReadArgs>) -> CallToolResult {
        let involved = Involved::Dependencies(args.file_path.clone());
        let path = args.file_path.clone();
        self.fresh_before_edit(path, involved, move |s| {
            let options = ReadOptions {
                start_line: args.start_line,
                end_line: args.end_line,
                import_depth: args.import_depth,
                show_available: args.show_available,
                log: true,
                accesses: crate::ops::metrics::global().reads(s.root()),
            };
            let started = std::time::Instant::now();
            let answer = s.read_with_options(&args.file_path, &options)?;
            if let Ok(file) = s.resolve_file(&args.file_path) {
                crate::ops::metrics::global().record_read(s, &file, &answer, started.elapsed());
            }
            Ok(text_result(answer))
        })
        .await
    }

    #[tool(
        title = "File dependencies",
        description = "What a Python file imports, calls and inherits from other files, with lines and target locations."
    )]
    async fn get_dependencies(&self, Parameters(args): Parameters<FileArgs>) -> CallToolResult {
        let file = args.file_path.clone();
        if let Some(answer) = self.prebuilt(file, None, args.page.clone()).await {
            return answer;
        }
        let involved = Involved::Dependencies(args.file_path.clone());
        let across = self.cross_project().await;
        self.fresh(involved, move |s| {
            let mut list = s.dependencies(&args.file_path)?;
            if let Some((projects, members)) = &across {
                projects.across(members, |peers, _| {
                    if let Some(me) = peers.iter().position(|p| p.service.root() == s.root()) {
                        links::dependencies_across(peers, me, &mut list);
                    }
                });
            }
            paged(
                list,
                &args.page,
                s.answer_token_limit(),
                "relationships",
                text::relationships,
            )
        })
        .await
    }

    #[tool(
        title = "File dependents",
        description = "Who imports, calls or inherits from a Python file or one of its definitions: check it before changing a signature."
    )]
    async fn get_dependents(&self, Parameters(args): Parameters<DependentsArgs>) -> CallToolResult {
        let (file, symbol) = (args.file_path.clone(), args.symbol.clone());
        let dependents = Some(symbol);
        if let Some(answer) = self.prebuilt(file, dependents, args.page.clone()).await {
            return answer;
        }
        let involved = Involved::Dependents(args.file_path.clone());
        let across = self.cross_project().await;
        let path = args.file_path.clone();
        self.fresh_before_edit(path, involved, move |s| {
            let mut list = match &args.symbol {
                Some(symbol) => s.dependents_of_symbol(&args.file_path, symbol)?,
                None => s.dependents(&args.file_path)?,
            };
            let mut notes = Vec::new();
            if let Some((projects, members)) = &across {
                let file = s.resolve_file(&args.file_path)?;
                let (crossed, unlinked) = projects.across(members, |peers, index| {
                    match peers.iter().position(|p| p.service.root() == s.root()) {
                        Some(me) => links::dependents_across(peers, index, me, &file),
                        None => Default::default(),
                    }
                });
                let wanted = |r: &crate::service::model::Relationship| match &args.symbol {
                    Some(symbol) => r
                        .target_symbol
                        .as_deref()
                        .is_some_and(|t| t == symbol || t.starts_with(&format!("{symbol}."))),
                    None => true,
                };
                list.extend(crossed.into_iter().filter(wanted));
                notes = unlinked;
            }
            let page = paged(
                list,
                &args.page,
                s.answer_token_limit(),
                "relationships",
                text::relationships,
            )?;
            Ok(with_notes(page, &notes))
        })
        .await
    }

    #[tool(
        title = "Callers",
        description = "Who calls a function, method or class (also through self, super() and typed objects), with each call's line."
    )]
    async fn get_callers(&self, Parameters(args): Parameters<CallGraphArgs>) -> CallToolResult {
        self.call_graph(args, Direction::Callers).await
    }

    #[tool(
        title = "Callees",
        description = "What a function, method or class calls, with each call's line."
    )]
    async fn get_callees(&self, Parameters(args): Parameters<CallGraphArgs>) -> CallToolResult {
        self.call_graph(args, Direction::Callees).await
    }

    #[tool(
        title = "File outline",
        description = "A Python file's classes, functions and members with signatures, docstrings and lines."
    )]
    async fn get_file_outline(&self, Parameters(args): Parameters<OutlineArgs>) -> CallToolResult {
        let involved = Involved::Dependencies(args.file_path.clone());
        let path = args.file_path.clone();
        self.fresh_before_edit(path, involved, move |s| {
            let mut outline = s.outline(&args.file_path)?;
            let render = |o: &crate::service::outline::Outline| match args.format {
                Format::Text => o.to_text(),
                Format::Json => serde_json::to_string(o).unwrap_or_default(),
            };
            outline.fit(s.answer_token_limit(), render);
            Ok(text_result(render(&outline)))
        })
        .await
    }

    #[tool(
        title = "Symbol source",
        description = "One definition's source, decorators included, with its location."
    )]
    async fn get_symbol(&self, Parameters(args): Parameters<SymbolArgs>) -> CallToolResult {
        // A bare name is looked up in every file.
        self.fresh(Involved::All, move |s| {
            Ok(text_result(s.symbol_source(&args.name)?.to_text()))
        })
        .await
    }

    #[tool(
        title = "Project graph",
        description = "Project overview: counts, most connected files, import cycles; detail pages through one list.",
        output_schema = graph_output_schema()
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
            let value = serde_json::to_value(&answer).map_err(internal)?;
            Ok(CallToolResult::structured(value))
        })
        .await
    }

    #[tool(
        title = "Blind spots",
        description = "Where static analysis goes blind (dynamic imports, getattr, monkey patching, exec, metaclasses, cycles), by type."
    )]
    async fn get_warnings(&self, Parameters(args): Parameters<WarningsArgs>) -> CallToolResult {
        // Across projects, a package several of them provide is a blind
        // spot of its own.
        let across = match args.file_path {
            None => self.cross_project().await,
            Some(_) => None,
        };
        let answer = self
            .fresh(Involved::All, move |s| {
                let mut report = s.warnings(args.file_path.as_deref())?;
                let notices_total = report.notices.len();
                report.notices.truncate(NOTICES);
                let list = std::mem::take(&mut report.warnings);
                let summary = text::warnings_summary(&report, &list);
                let budget = s.answer_token_limit();
                if args.page.format == Format::Json {
                    let mut by_type = BTreeMap::new();
                    for w in &list {
                        *by_type.entry(w.warning_type.as_str()).or_default() += 1;
                    }
                    let cursor = args.page.cursor.as_deref();
                    let limit = args.page.limit.unwrap_or(paging::DEFAULT_LIMIT);
                    let budget = budget.saturating_sub(count_tokens(&summary));
                    return Ok(ok_json(&WarningsAnswer {
                        by_type,
                        suppressed: report.suppressed,
                        notices_total,
                        notices: report.notices,
                        warnings: paging::page(list, cursor, limit, budget)?,
                    }));
                }
                let notices = text::notices(&report.notices, notices_total);
                let budget = budget.saturating_sub(count_tokens(&summary) + count_tokens(&notices));
                let page = paged(list, &args.page, budget, "warnings", text::warning_list)?;
                Ok(text_result(format!(
                    "{summary}{}{notices}",
                    first_text(&page)
                )))
            })
            .await;
        let Some((projects, members)) = across else {
            return answer;
        };
        let notes = tokio::task::spawn_blocking(move || {
            projects.across(&members, |_, index| index.notes_for(None))
        })
        .await
        .unwrap_or_default();
        with_notes(answer, &notes)
    }

    #[tool(
        title = "Search symbols",
        description = "Find definitions by name, part of one, qualified name or with a typo, in clusters of related symbols."
    )]
    async fn search_with_context(
        &self,
        Parameters(args): Parameters<SearchArgs>,
    ) -> CallToolResult {
        // Before any work (waiting for the index included): a query over
        // the limit is refused as it is (issue 39 F10).
        if let Err(error) = crate::service::search::check_query(&args.query) {
            return failure(error.into());
        }
        self.fresh(Involved::All, move |s| {
            let expand = args.expand_relationships.unwrap_or_default();
            let options = SearchOptions {
                max_clusters: args.max_clusters.unwrap_or(5),
                expansion_depth: args.expansion_depth.unwrap_or(2),
                include_preview: args.include_preview.unwrap_or(true),
                expand: Expand {
                    callers: expand.callers || expand.all,
                    callees: expand.callees || expand.all,
                    type_family: expand.type_family || expand.all,
                },
                context_file: args
                    .context_file
                    .as_deref()
                    .map(|f| s.resolve_file(f))
                    .transpose()?,
                accesses: crate::ops::metrics::global().reads(s.root()),
            };
            Ok(ok_json(&s.search(&args.query, &options)?))
        })
        .await
    }

    #[tool(
        title = "Expand a search cluster",
        description = "Load the callers, callees or typeFamily of a cluster that search_with_context answered with."
    )]
    async fn expand_cluster_relationship(
        &self,
        Parameters(args): Parameters<ExpandClusterArgs>,
    ) -> CallToolResult {
        self.fresh(Involved::All, move |s| {
            Ok(ok_json(&s.expand_cluster(
                &args.cluster_id,
                args.relationship_type,
            )?))
        })
        .await
    }

    #[tool(
        title = "Create a session",
        description = "Open a session that sees the registered projects of a scope (global, collection or project); pass its session_id to other tools."
    )]
    async fn create_session(&self, Parameters(args): Parameters<SessionArgs>) -> CallToolResult {
        let projects = self.projects.clone();
        let caller = current_request().session;
        let outcome = (|| {
            let scope = Scope {
                level: args.scope,
                ids: args.ids,
            };
            if (scope.level == Level::Global) != scope.ids.is_empty() {
                return Err(ToolError {
                    code: "invalid_parameter",
                    message: "a global scope names no ids; a collection or project scope names at least one".to_string(),
                    suggestion: "Pass ids with the collection or project names, or none for global.",
                });
            }
            let outer = projects.scope(caller.as_deref())?;
            let names = projects.with_registry(|registry, _| {
                let names: Vec<String> = scope
                    .projects(registry)?
                    .into_iter()
                    .map(|p| p.name)
                    .collect();
                if !scope.within(&outer, registry)? {
                    return Err(SessionError::Insufficient(
                        "a session sees no more than the server or session that creates it"
                            .to_string(),
                    )
                    .into());
                }
                Ok(names)
            })?;
            let ttl = args.ttl.map_or(
                crate::federation::scope::DEFAULT_TTL,
                std::time::Duration::from_secs,
            );
            let (id, expires) = projects.sessions.create(scope.clone(), ttl)?;
            Ok(ok_json(&serde_json::json!({
                "session_id": id,
                "scope": scope,
                "projects": names,
                "expires_at": humantime::format_rfc3339_seconds(expires).to_string(),
            })))
        })();
        outcome.unwrap_or_else(failure)
    }

    #[tool(
        title = "Cross-project references",
        description = "Imports, calls and subclasses in one project of a symbol defined in another, with file, line and the line's text."
    )]
    async fn cross_refs(&self, Parameters(args): Parameters<CrossRefsArgs>) -> CallToolResult {
        self.across(move |peers, index, budget| {
            let limit = args
                .limit
                .unwrap_or(paging::DEFAULT_LIMIT)
                .min(paging::MAX_LIMIT);
            let answer = links::cross_refs(peers, index, &args.symbol_name, limit);
            let shown = |n: usize| {
                count_tokens(&serde_json::to_string(&answer.first(n)).unwrap_or_default())
            };
            let keep = paging::fitting(
                answer.total.min(limit),
                budget.saturating_sub(FRAME_TOKENS),
                shown,
            );
            Ok(ok_json(&answer.first(keep)))
        })
        .await
    }

    #[tool(
        title = "Collection map",
        description = "The projects in scope with their symbol counts, and which reference which (counts and symbols), as JSON for a graph."
    )]
    async fn collection_map(
        &self,
        Parameters(args): Parameters<CollectionMapArgs>,
    ) -> CallToolResult {
        if let Some(collection) = &args.collection {
            // Only a collection within the caller's scope.
            let caller = current_request().session;
            let scope = Scope {
                level: Level::Collection,
                ids: vec![collection.clone()],
            };
            let allowed = self.projects.scope(caller.as_deref()).and_then(|outer| {
                self.projects
                    .with_registry(|registry, _| Ok(scope.within(&outer, registry)?))
            });
            match allowed {
                Ok(true) => {}
                Ok(false) => {
                    return failure(
                        SessionError::Insufficient(format!(
                            "collection {collection} is not within this session's scope"
                        ))
                        .into(),
                    );
                }
                Err(error) => return failure(error),
            }
        }
        let members = match self.members() {
            Ok(members) => members,
            Err(error) => return failure(error),
        };
        let names: Option<Vec<String>> = match &args.collection {
            Some(collection) => match self.projects.with_registry(|registry, _| {
                Ok(registry
                    .members(collection)?
                    .into_iter()
                    .map(|p| p.name)
                    .collect())
            }) {
                Ok(names) => Some(names),
                Err(error) => return failure(error),
            },
            None => None,
        };
        let members: Vec<Arc<Member>> = members
            .into_iter()
            .filter(|m| names.as_ref().is_none_or(|n| n.contains(&m.name)))
            .collect();
        projects::settle(&members).await;
        let unready = projects::unready_notes(&members);
        let projects = self.projects.clone();
        let collection = args.collection;
        tokio::task::spawn_blocking(move || {
            projects.across(&members, |peers, index| {
                let map = links::collection_map(peers, index, collection.as_deref());
                with_notes(ok_json(&map), &unready)
            })
        })
        .await
        .unwrap_or_else(|e| failure(join_failed(e)))
    }

    #[tool(
        title = "Manage the registry",
        description = "Add, list and remove registered projects and collections (needs a global scope)."
    )]
    async fn manage_registry(&self, Parameters(args): Parameters<RegistryArgs>) -> CallToolResult {
        let caller = current_request().session;
        let outcome = self.projects.scope(caller.as_deref()).and_then(|scope| {
            if scope.level != Level::Global {
                return Err(SessionError::Insufficient(
                    "managing the registry needs a global scope".to_string(),
                )
                .into());
            }
            self.projects.with_registry(|registry, base| {
                if base.level != Level::Global {
                    return Err(SessionError::Insufficient(
                        "managing the registry needs a server started with --global".to_string(),
                    )
                    .into());
                }
                registry_action(registry, &args)
            })
        });
        outcome.unwrap_or_else(failure)
    }

    #[tool(
        title = "Recent context injections",
        description = "The latest context injections: which definitions were added to which file reads, with token counts and cache hits."
    )]
    async fn get_recent_injections(
        &self,
        Parameters(args): Parameters<InjectionArgs>,
    ) -> CallToolResult {
        self.with_live(move |live, _| {
            live.read(|s| {
                let limit = args.limit.unwrap_or(10).min(paging::MAX_LIMIT);
                let events = s.recent_injections(args.target_file.as_deref(), limit)?;
                let page = paging::page(events, None, limit, s.answer_token_limit())?;
                Ok(ok_json(&page))
            })
        })
        .await
    }

    #[tool(
        title = "Snippet cache statistics",
        description = "Statistics of the cache of injected snippets: hits, misses, refreshes, evictions, size against the limit."
    )]
    async fn get_cache_statistics(&self) -> CallToolResult {
        self.with_live(|live, _| Ok(ok_json(&live.read(Service::cache_statistics))))
            .await
    }

    #[tool(
        title = "Query relation",
        description = "Tuples of a rules relation matching a pattern; the xfile://relations resource lists relations."
    )]
    async fn query_relation(&self, Parameters(args): Parameters<QueryArgs>) -> CallToolResult {
        self.fresh(Involved::All, move |s| {
            let mut result = s.query(&args.pattern).map_err(invalid_pattern)?;
            let tuples = std::mem::take(&mut result.tuples);
            if args.page.format == Format::Json {
                let cursor = args.page.cursor.as_deref();
                let limit = args.page.limit.unwrap_or(paging::DEFAULT_LIMIT);
                let page = paging::page(tuples, cursor, limit, s.answer_token_limit())?;
                return Ok(ok_json(&serde_json::json!({
                    "relation": result.relation,
                    "args": result.args,
                    "tuples": page,
                })));
            }
            paged(
                tuples,
                &args.page,
                s.answer_token_limit(),
                "tuples",
                |tuples| text::query(&result, tuples),
            )
        })
        .await
    }

    #[tool(
        title = "Explain",
        description = "Why a relationship holds, down to source lines, or which premise fails when it does not."
    )]
    async fn explain(&self, Parameters(args): Parameters<ExplainArgs>) -> CallToolResult {
        self.fresh(Involved::All, move |s| {
            let mut explanation = s.explain(&args.fact).map_err(invalid_pattern)?;
            let json = args.format == Format::Json || args.json == Some(true);
            let budget = s.answer_token_limit();
            let render = |e: &crate::service::explain::Explanation| {
                if json {
                    serde_json::to_string(e).unwrap_or_default()
                } else {
                    e.to_text()
                }
            };
            // Whole derivations go until the answer fits.
            let shown = |n: usize| {
                let mut cut = explanation.clone();
                cut.derivations.truncate(n);
                count_tokens(&render(&cut))
            };
            let keep = paging::fitting(explanation.derivations.len(), budget, shown);
            explanation.more += explanation.derivations.len() - keep;
            explanation.derivations.truncate(keep);
            let mut text = render(&explanation);
            if !json && count_tokens(&text) > budget {
                text = text::cut_to_budget(&text, budget);
            }
            Ok(text_result(text))
        })
        .await
    }

    #[tool(
        title = "Recent model updates",
        description = "The recent model updates: files changed, incremental queries re-run and reused, whether the rules re-ran, phase times, and the file watcher's state."
    )]
    async fn explain_recomputation(&self) -> CallToolResult {
        let projects = self.projects.clone();
        self.with_live(move |live, _| {
            let watcher = projects
                .member_at(live.root())
                .and_then(|m| m.watch_status());
            Ok(ok_json(&serde_json::json!({
                "watcher": watcher,
                "updates": live.recent_updates(),
            })))
        })
        .await
    }

    #[tool(
        title = "Change impact",
        description = "What uncommitted changes may break: changed definitions, their callers, subclasses, importers and tests."
    )]
    async fn impact(&self, Parameters(args): Parameters<ImpactArgs>) -> CallToolResult {
        self.fresh(Involved::All, move |s| {
            crate::ops::metrics::global().record_git(s.root(), "impact");
            let depth = crate::service::impact::DEFAULT_DEPTH;
            let impact = s.impact(args.base.as_deref(), depth)?;
            Ok(text_result(impact.to_text(s.answer_token_limit())))
        })
        .await
    }

    #[tool(
        title = "Git log",
        description = "Commits that changed a file or directory (default the project), newest first, with author, date and summary."
    )]
    async fn git_log(&self, Parameters(args): Parameters<GitLogArgs>) -> CallToolResult {
        self.with_live(move |live, _| {
            live.read(|s| {
                crate::ops::metrics::global().record_git(s.root(), "git_log");
                let query = crate::git::LogQuery {
                    path: args.path.as_deref(),
                    limit: args.limit.unwrap_or(crate::git::DEFAULT_LOG_LIMIT),
                    since: args.since.as_deref(),
                    until: args.until.as_deref(),
                    author: args.author.as_deref(),
                };
                let text = s.git_log(&query)?;
                Ok(text_result(text))
            })
        })
        .await
    }

    #[tool(
        title = "Git blame",
        description = "Who last changed each run of lines of a file: commit, author, date and summary."
    )]
    async fn git_blame(&self, Parameters(args): Parameters<GitBlameArgs>) -> CallToolResult {
        self.with_live(move |live, _| {
            live.read(|s| {
                crate::ops::metrics::global().record_git(s.root(), "git_blame");
                let text = s.git_blame(&args.file_path, args.start_line, args.end_line)?;
                Ok(text_result(text))
            })
        })
        .await
    }

    #[tool(
        title = "Git diff",
        description = "Files added, removed and modified between two revisions, or the working tree and HEAD, with hunks and line counts."
    )]
    async fn git_diff(&self, Parameters(args): Parameters<GitDiffArgs>) -> CallToolResult {
        self.with_live(move |live, _| {
            live.read(|s| {
                crate::ops::metrics::global().record_git(s.root(), "git_diff");
                let text = s.git_diff(
                    args.base.as_deref(),
                    args.head.as_deref(),
                    args.path.as_deref(),
                )?;
                Ok(text_result(text))
            })
        })
        .await
    }
}

/// One `manage_registry` action on the registry.
fn registry_action(
    registry: &mut crate::registry::Registry,
    args: &RegistryArgs,
) -> Result<CallToolResult, ToolError> {
    let name = || {
        args.name.as_deref().ok_or(ToolError {
            code: "invalid_parameter",
            message: "this action needs name".to_string(),
            suggestion: "Pass name: the project or collection acted on.",
        })
    };
    let project = || {
        args.projects.first().map(String::as_str).ok_or(ToolError {
            code: "invalid_parameter",
            message: "this action needs projects: [the project]".to_string(),
            suggestion: "Pass projects with the project's name.",
        })
    };
    Ok(match args.action {
        RegistryAction::ProjectAdd => {
            let path = args.path.as_deref().ok_or(ToolError {
                code: "invalid_parameter",
                message: "project_add needs path".to_string(),
                suggestion: "Pass path: the project's directory.",
            })?;
            ok_json(&registry.add_project(std::path::Path::new(path), args.name.as_deref())?)
        }
        RegistryAction::ProjectList => ok_json(&registry.projects()?),
        RegistryAction::ProjectRemove => ok_json(&registry.remove_project(name()?)?),
        RegistryAction::CollectionCreate => {
            let members: Vec<&str> = args.projects.iter().map(String::as_str).collect();
            ok_json(&registry.create_collection(name()?, &members)?)
        }
        RegistryAction::CollectionAdd => ok_json(&registry.add_to_collection(name()?, project()?)?),
        RegistryAction::CollectionRemove => {
            ok_json(&registry.remove_from_collection(name()?, project()?)?)
        }
        RegistryAction::CollectionList => ok_json(&registry.collections()?),
        RegistryAction::CollectionDelete => ok_json(&registry.delete_collection(name()?)?),
    })
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
        // client that is no tool is counted as `unknown` (issue 39 F9).
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

/// Serves MCP on stdio for the project at `root` until the client closes
/// the connection. Logs go to stderr, filtered by `XFILE_LOG` (for example
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
async fn session(server: XfileServer, wire: &wire::Wire) -> anyhow::Result<()> {
    loop {
        match server.clone().serve(wire.link()).await {
            Ok(running) => return running.waiting().await.map(drop).map_err(Into::into),
            Err(_) if wire.input_ended() => return Ok(()),
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
        // asked to stop; either way its metrics are written (FR-43).
        let ended = tokio::select! {
            quit = session(server, &wire) => quit,
            () = crate::ops::terminated() => Ok(()),
        };
        wire.finish().await;
        let ready = projects
            .started()
            .into_iter()
            .filter_map(|m| Some((m.name.clone(), m.root.clone(), m.ready_now()?)))
            .collect();
        crate::ops::end_sessions(ready).await;
        ended
    });
    // A blocking read of stdin cannot be cancelled (after SIGTERM the
    // client may still hold it open): the process exits without it.
    runtime.shutdown_background();
    outcome
}
