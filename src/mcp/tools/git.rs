//! Git history (log, blame, diff) and the impact of uncommitted changes.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router};

use crate::mcp::XfileServer;
use crate::mcp::args::{GitBlameArgs, GitDiffArgs, GitLogArgs, ImpactArgs};
use crate::mcp::results::text_result;
use crate::service::live::Involved;
use crate::workspace::config::Config;

/// The git history tools: listed only when `enabled_tools` names them or
/// the group `git` (agents usually have git at hand; these cost tool-list
/// tokens in every session), and only inside a git work tree. They answer
/// by name either way. `impact` is listed by default inside a work tree.
pub(super) const GIT_GROUP: &str = "git";
pub(crate) const GIT_TOOLS: [&str; 3] = ["git_log", "git_blame", "git_diff"];

/// The git tools (and `impact`) left out of the list for `root`.
pub(crate) fn unlisted_git_tools(config: &Config, root: &std::path::Path) -> Vec<String> {
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

#[tool_router(router = git_tools, vis = "pub(super)")]
impl XfileServer {
    #[tool(
        title = "Change impact",
        description = "What uncommitted changes may break: changed definitions, their callers, subclasses, importers and tests."
    )]
    async fn impact(&self, Parameters(args): Parameters<ImpactArgs>) -> CallToolResult {
        let session = self.session;
        self.fresh(Involved::All, move |s| {
            crate::ops::metrics::global().record_git(session, s.root(), "impact");
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
        let session = self.session;
        self.with_live(move |live, _| {
            live.read(|s| {
                crate::ops::metrics::global().record_git(session, s.root(), "git_log");
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
        let session = self.session;
        self.with_live(move |live, _| {
            live.read(|s| {
                crate::ops::metrics::global().record_git(session, s.root(), "git_blame");
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
        let session = self.session;
        self.with_live(move |live, _| {
            live.read(|s| {
                crate::ops::metrics::global().record_git(session, s.root(), "git_diff");
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
