//! The operations tools: what xfile injected into reads, its snippet
//! cache, and its recent model updates.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router};

use crate::mcp::XfileServer;
use crate::mcp::args::{EditImpactArgs, InjectionArgs};
use crate::mcp::results::ok_json;
use crate::mcp::results::text_result;
use crate::service::Service;
use crate::service::live::Involved;
use crate::service::paging;

/// Tools left out of the tool list unless `enabled_tools` names them, but
/// still answering when called by name: the operations tools serve
/// whoever operates xfile, not the agent's task; `edit_impact` serves the
/// edit hook, which calls it after every edit without the agent asking.
pub(super) const UNLISTED_TOOLS: [&str; 4] = [
    "get_recent_injections",
    "get_cache_statistics",
    "explain_recomputation",
    "edit_impact",
];

#[tool_router(router = operations_tools, vis = "pub(super)")]
impl XfileServer {
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
        title = "Edit impact",
        description = "What the edits of a file since it was last asked about may break: calls that no longer fit a changed signature, overrides left with the old one, uses of what was removed or renamed, names the file no longer defines. Empty when nothing."
    )]
    async fn edit_impact(&self, Parameters(args): Parameters<EditImpactArgs>) -> CallToolResult {
        let involved = Involved::Dependencies(args.file_path.clone());
        self.fresh(involved, move |s| {
            let path = crate::workspace::resolve_user_path(s.root(), &args.file_path)?;
            Ok(text_result(s.edit_breaks(&path, s.answer_token_limit())))
        })
        .await
    }
}
