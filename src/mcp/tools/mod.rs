//! The tools, one module a family, each family with a router of its own;
//! and which tools the tool list shows.

mod context;
mod federation;
mod git;
mod graph;
mod operations;
mod query;
mod search;
mod warnings;

use rmcp::handler::server::router::tool::ToolRouter;

use super::XfileServer;
use crate::workspace::config::Config;
use git::GIT_GROUP;
use operations::UNLISTED_TOOLS;

pub(crate) use federation::FEDERATION_TOOLS;
pub(crate) use git::{GIT_TOOLS, unlisted_git_tools};
pub(crate) use warnings::NOTICES;

impl XfileServer {
    /// The routes of every tool.
    pub(crate) fn tool_router() -> ToolRouter<Self> {
        Self::context_tools()
            + Self::graph_tools()
            + Self::search_tools()
            + Self::warnings_tools()
            + Self::query_tools()
            + Self::git_tools()
            + Self::federation_tools()
            + Self::operations_tools()
    }
}

/// Tools that answer by name but are listed only when `enabled_tools`
/// names them, their group `more`, or `all`. With the context of every
/// Read arriving through the hook, the default list keeps the tools an
/// agent reaches for on its own (reading, search, callers and callees,
/// dependencies and dependents, warnings, impact) under 1,000 tokens: a
/// listed tool costs its description in every session, used or not.
const MORE_GROUP: &str = "more";
const MORE_TOOLS: [&str; 6] = [
    "get_relationship_graph",
    "query_relation",
    "explain",
    "expand_cluster_relationship",
    "get_symbol",
    "get_file_outline",
];

/// Which tools the list shows and which answer at all: the unlisted
/// tools unless `enabled_tools` names them (or their group, or `all`) are
/// left out of the list; what `excluded_tools` names is switched off.
/// Unknown names are logged, so a typo does not pass silently.
pub(crate) struct ToolChoice {
    pub(crate) unlisted: Vec<String>,
    pub(crate) excluded: Vec<String>,
}

impl ToolChoice {
    pub(crate) fn new<'a>(config: &Config, known: impl Iterator<Item = &'a str>) -> ToolChoice {
        let known: Vec<&str> = known.collect();
        for name in config.enabled_tools.iter().chain(&config.excluded_tools) {
            let group = [GIT_GROUP, MORE_GROUP].contains(&name.as_str());
            if name != "all" && !group && !known.contains(&name.as_str()) {
                tracing::warn!(
                    "{}: no tool is named `{name}`; the tools are {}",
                    crate::workspace::config::CONFIG_FILE,
                    known.join(", ")
                );
            }
        }
        let enabled = |name: &str| config.enabled_tools.iter().any(|e| e == name || e == "all");
        let more = config.enabled_tools.iter().any(|e| e == MORE_GROUP);
        ToolChoice {
            unlisted: UNLISTED_TOOLS
                .iter()
                .filter(|name| !enabled(name))
                .chain(MORE_TOOLS.iter().filter(|name| !more && !enabled(name)))
                .map(|name| name.to_string())
                .collect(),
            excluded: config.excluded_tools.clone(),
        }
    }
}
