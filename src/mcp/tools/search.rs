//! Finding definitions by name, in clusters of related symbols, and
//! loading a cluster's relations.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router};

use crate::mcp::XfileServer;
use crate::mcp::args::{ExpandClusterArgs, SearchArgs};
use crate::mcp::errors::failure;
use crate::mcp::results::ok_json;
use crate::service::live::Involved;
use crate::service::search::{Expand, SearchOptions};

#[tool_router(router = search_tools, vis = "pub(super)")]
impl XfileServer {
    #[tool(
        title = "Search symbols",
        description = "Find definitions by name, part of one, qualified name or with a typo, in clusters of related symbols."
    )]
    async fn search_with_context(
        &self,
        Parameters(args): Parameters<SearchArgs>,
    ) -> CallToolResult {
        let session = self.session;
        // Before any work (waiting for the index included): a query over
        // the limit is refused as it is.
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
                accesses: crate::ops::metrics::global().reads(session, s.root()),
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
}
