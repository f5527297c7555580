//! What one tool call sees and how its work runs: the session and project
//! it asked for beyond its arguments, the projects in scope, fresh
//! snapshots of them off the async workers, and the client's cancellation.

use std::sync::Arc;

use rmcp::model::{CallToolResult, JsonObject};

use super::XfileServer;
use super::errors::{ToolError, cancelled, failure, join_failed};
use super::projects::{self, Member, Projects};
use super::results::with_notes;
use crate::federation::links;
use crate::service::Service;
use crate::service::live::{Involved, Live};
use crate::workspace::config::Config;

tokio::task_local! {
    /// What the request being answered asked for beyond its tool's
    /// arguments: a session, and a project named in a path.
    pub(crate) static REQUEST: Request;
}

#[derive(Clone, Default)]
pub(crate) struct Request {
    pub(crate) session: Option<String>,
    pub(crate) project: Option<String>,
    /// Cancelled when the client cancels the request: work not yet begun
    /// is skipped (see [`check_cancelled`]).
    pub(crate) cancel: tokio_util::sync::CancellationToken,
}

pub(crate) fn current_request() -> Request {
    REQUEST.try_with(Request::clone).unwrap_or_default()
}

/// Stops a request the client cancelled before its work begins (rmcp
/// sends no reply for it).
fn check_cancelled(cancel: &tokio_util::sync::CancellationToken) -> Result<(), ToolError> {
    if cancel.is_cancelled() {
        return Err(cancelled());
    }
    Ok(())
}

impl XfileServer {
    /// The projects the current request sees: its session's scope (else
    /// the server's), narrowed to the project a `project:path` names.
    pub(crate) fn members(&self) -> Result<Vec<Arc<Member>>, ToolError> {
        let request = current_request();
        let mut members = self.projects.in_scope(request.session.as_deref())?;
        if let Some(project) = request.project {
            members.retain(|m| m.name == project);
        }
        Ok(members)
    }

    /// Answers with `f` on a snapshot of each project in scope that is no
    /// older than the `involved` files on disk, off the async workers (a
    /// freshness update may parse files).
    pub(crate) async fn fresh(
        &self,
        involved: Involved,
        f: impl Fn(&Service) -> Result<CallToolResult, ToolError> + Send + Sync + 'static,
    ) -> CallToolResult {
        let cancel = current_request().cancel;
        self.with_live(move |live, shares| {
            live.read_fresh(&involved, |s| {
                check_cancelled(&cancel)?;
                f(&projects::share(s, shares))
            })
        })
        .await
    }

    /// [`XfileServer::fresh`] for a tool whose answer is read before the
    /// file at `path` is edited: afterwards, in a pause, the file is made
    /// ready for a cheap first edit (`Live::expect_edit`).
    pub(crate) async fn fresh_before_edit(
        &self,
        path: String,
        involved: Involved,
        f: impl Fn(&Service) -> Result<CallToolResult, ToolError> + Send + Sync + 'static,
    ) -> CallToolResult {
        let cancel = current_request().cancel;
        self.with_live(move |live, shares| {
            let answer = live.read_fresh(&involved, |s| {
                check_cancelled(&cancel)?;
                f(&projects::share(s, shares))
            });
            live.expect_edit(&path, projects::BACKGROUND_QUIET);
            answer
        })
        .await
    }

    /// The project a `project:path` argument names (the prefix is taken
    /// off the argument), if it names one in scope.
    pub(crate) fn project_prefix(
        &self,
        arguments: &mut JsonObject,
        session: Option<&str>,
    ) -> Option<String> {
        let members = self.projects.in_scope(session).ok()?;
        for key in ["file_path", "target_file", "context_file"] {
            let Some(serde_json::Value::String(value)) = arguments.get_mut(key) else {
                continue;
            };
            let Some((project, path)) = value.split_once(':') else {
                continue;
            };
            if members.iter().any(|m| m.name == project) {
                let project = project.to_string();
                *value = path.to_string();
                return Some(project);
            }
        }
        None
    }

    /// For answers that follow references into other projects: the
    /// projects and the members in scope, when serving several.
    pub(crate) async fn cross_project(&self) -> Option<(Arc<Projects>, Vec<Arc<Member>>)> {
        if !self.projects.federated() {
            return None;
        }
        let members = self
            .projects
            .in_scope(current_request().session.as_deref())
            .ok()?;
        projects::settle(&members).await;
        Some((self.projects.clone(), members))
    }

    /// Runs `f` on each project in scope (with the number of projects
    /// sharing the answer), waiting for a single project's first index if
    /// needed.
    pub(crate) async fn with_live(
        &self,
        f: impl Fn(&Arc<Live>, usize) -> Result<CallToolResult, ToolError> + Send + Sync + 'static,
    ) -> CallToolResult {
        match self.members() {
            Ok(members) => projects::gather(members, self.projects.federated(), Arc::new(f)).await,
            Err(error) => failure(error),
        }
    }

    /// Runs `f` off the async workers on snapshots of the ready projects
    /// in scope and the index of references across them.
    pub(crate) async fn across(
        &self,
        f: impl Fn(&[links::Peer], &links::CrossIndex, usize) -> Result<CallToolResult, ToolError>
        + Send
        + 'static,
    ) -> CallToolResult {
        if !self.projects.federated() {
            return failure(projects::not_federated());
        }
        let members = match self.members() {
            Ok(members) => members,
            Err(error) => return failure(error),
        };
        projects::settle(&members).await;
        let unready = projects::unready_notes(&members);
        let projects = self.projects.clone();
        tokio::task::spawn_blocking(move || {
            let budget = Config::default().answer_token_limit;
            let budget = usize::try_from(budget).unwrap_or(usize::MAX);
            let answer = projects.across(&members, |peers, index| f(peers, index, budget))?;
            Ok(with_notes(answer, &unready))
        })
        .await
        .unwrap_or_else(|e| Err(join_failed(e)))
        .unwrap_or_else(failure)
    }
}
