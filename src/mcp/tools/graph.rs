//! The relationships between files and definitions: a file's dependencies
//! and dependents, callers and callees, and the project's graph.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router};

use crate::federation::links;
use crate::mcp::XfileServer;
use crate::mcp::args::{CallGraphArgs, DependentsArgs, FileArgs, Format, GraphArgs, PageArgs};
use crate::mcp::errors::{failure, internal};
use crate::mcp::results::{FRAME_TOKENS, paged, paged_knowing, text_result, with_notes};
use crate::mcp::schema::graph_output_schema;
use crate::service::calls::Direction;
use crate::service::context::count_tokens;
use crate::service::graph;
use crate::service::live::Involved;
use crate::service::paging;
use crate::service::text;
use crate::service::warm::answers;

#[tool_router(router = graph_tools, vis = "pub(super)")]
impl XfileServer {
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
                    if let Some(me) = links::peer_at(peers, s.root()) {
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
                let symbol = args.symbol.as_deref();
                let (crossed, unlinked) = projects.across(members, |peers, index| {
                    match links::peer_at(peers, s.root()) {
                        Some(me) => links::dependents_across(peers, index, me, &file, symbol),
                        None => Default::default(),
                    }
                });
                list.extend(crossed);
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
}

impl XfileServer {
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
                    match links::peer_at(peers, s.root()) {
                        Some(me) => links::callers_across(peers, index, me, &symbol.file, &symbol.qualname),
                        None => Vec::new(),
                    }
                });
                graph.add_direct_callers(calls, limit);
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
