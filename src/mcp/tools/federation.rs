//! The tools of a server of registered projects: sessions, references
//! across projects, the collection map and the registry itself.

use std::sync::Arc;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router};

use crate::federation::links;
use crate::federation::{Level, Scope, SessionError};
use crate::mcp::XfileServer;
use crate::mcp::args::{
    CollectionMapArgs, CrossRefsArgs, RegistryAction, RegistryArgs, SessionArgs,
};
use crate::mcp::errors::{ToolError, failure, join_failed};
use crate::mcp::projects::{self, Member};
use crate::mcp::request::current_request;
use crate::mcp::results::{FRAME_TOKENS, ok_json, with_notes};
use crate::service::context::count_tokens;
use crate::service::paging;

/// The tools that work across projects: listed only by a server of
/// registered projects.
pub(crate) const FEDERATION_TOOLS: [&str; 4] = [
    "create_session",
    "cross_refs",
    "collection_map",
    "manage_registry",
];

#[tool_router(router = federation_tools, vis = "pub(super)")]
impl XfileServer {
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
