//! Tool failures: every error a tool meets becomes a [`ToolError`] with a
//! stable code, a message and a suggestion, and reaches the client as a
//! tool result with `isError` (see [`failure`]), never as a protocol error.

use rmcp::model::{CallToolResult, ContentBlock, ErrorData};

use super::results::first_text;
use crate::federation::SessionError;
use crate::registry::RegistryError;
use crate::service::ReadError;
use crate::service::paging::CursorError;
use crate::service::search::SearchError;
use crate::service::text::shortened;
use crate::workspace::PathError;

/// A tool failure: a stable code, what went wrong, and what to do.
pub(crate) struct ToolError {
    pub(crate) code: &'static str,
    pub(crate) message: String,
    pub(crate) suggestion: &'static str,
}

/// Characters of a failure's message kept (the relation catalogue a
/// pattern error carries is ~11,000): whatever a message quotes, a 10 MB
/// input must not come back as a 10 MB error.
const MESSAGE_CHARS: usize = 16_000;

/// Characters of a user's input a message quotes.
pub(crate) const QUOTED_CHARS: usize = 200;

pub(crate) fn failure(error: ToolError) -> CallToolResult {
    let message = shortened(&error.message, MESSAGE_CHARS);
    let body = serde_json::json!({
        "code": error.code,
        "message": message,
        "suggestion": error.suggestion,
    });
    CallToolResult::error(vec![ContentBlock::text(body.to_string())])
}

/// The code of a failed answer, for the error counts: a tool error's
/// `code`, or `protocol` for a request rmcp refused.
pub(crate) fn error_code(
    answer: &Result<rmcp::model::CallToolResponse, ErrorData>,
) -> Option<String> {
    let result = match answer {
        Err(_) => return Some("protocol".into()),
        Ok(rmcp::model::CallToolResponse::Complete(result)) => result,
        Ok(_) => return None,
    };
    if result.is_error != Some(true) {
        return None;
    }
    let body: serde_json::Value = serde_json::from_str(&first_text(result)).unwrap_or_default();
    // Codes are snake_case names the server chose; anything else is counted
    // as `other`, so a label never carries other text.
    let code = body["code"].as_str().unwrap_or_default();
    let named = !code.is_empty()
        && code.len() <= 40
        && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
    Some(if named { code.into() } else { "other".into() })
}

pub(crate) fn cancelled() -> ToolError {
    ToolError {
        code: "cancelled",
        message: "the request was cancelled".into(),
        suggestion: "Ask again if the answer is still wanted.",
    }
}

/// A request whose work stopped (it panicked, or the server is shutting
/// down).
pub(crate) fn join_failed(error: tokio::task::JoinError) -> ToolError {
    ToolError {
        code: "internal",
        message: format!("the request failed: {error}"),
        suggestion: "Retry; if it keeps failing, report it with the server log.",
    }
}

pub(crate) fn internal(error: serde_json::Error) -> ToolError {
    ToolError {
        code: "internal",
        message: format!("cannot write the answer: {error}"),
        suggestion: "Retry; if it keeps failing, report it with the server log.",
    }
}

impl From<crate::git::GitError> for ToolError {
    fn from(error: crate::git::GitError) -> Self {
        use crate::git::GitError;
        let suggestion = match &error {
            GitError::NotARepository(_) => "The git tools need a project inside a git work tree.",
            GitError::NoCommits => "Commit once, then ask again.",
            GitError::InvalidRevision(_) | GitError::UnknownRevision(_) => {
                "Pass a branch, tag, HEAD~N or a commit hash; git_log lists commits."
            }
            GitError::PastEnd(..) => "Ask for a line range inside the file, or omit it.",
            GitError::InvalidPath(..)
            | GitError::OutsideRoot(..)
            | GitError::NotAFile(_)
            | GitError::Sensitive(_) => "Give the path of a file inside the project root.",
            GitError::InvalidDate(_) => "Write a date as 2024-05-01 or `2 weeks ago`.",
            GitError::TooLarge(..) => "Blame a smaller file, or a part of it with git itself.",
            GitError::OutsideGit(..) => {
                "Serve a root whose git repository is its own (see the message)."
            }
            GitError::Git(_) => "Check the repository with `git status`, then retry.",
        };
        ToolError {
            code: error.code(),
            message: error.to_string(),
            suggestion,
        }
    }
}

impl From<crate::service::calls::SymbolError> for ToolError {
    fn from(error: crate::service::calls::SymbolError) -> Self {
        use crate::service::calls::SymbolError;
        match error {
            SymbolError::Path(error) => error.into(),
            inherited @ SymbolError::Inherited { .. } => ToolError {
                code: inherited.code(),
                message: inherited.to_string(),
                suggestion: "Ask about the file and the definition the message names.",
            },
            changed @ SymbolError::Changed(_) => ToolError {
                code: changed.code(),
                message: changed.to_string(),
                suggestion: "Ask again: the new text is taken in first.",
            },
            other => ToolError {
                code: other.code(),
                message: other.to_string(),
                suggestion: "Name a definition as path::Qualified.name; get_dependencies lists a file's targets with their symbols.",
            },
        }
    }
}

impl From<SearchError> for ToolError {
    fn from(error: SearchError) -> Self {
        ToolError {
            code: error.code(),
            suggestion: match error {
                SearchError::UnknownCluster(_) => {
                    "Run search_with_context again; its clusters have ids to expand."
                }
                SearchError::EmptyQuery | SearchError::QueryTooLong(_) => {
                    "Search for a name, part of one, or a qualified name (at most 1000 characters)."
                }
            },
            message: error.to_string(),
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
            changed @ ReadError::Changed(_) => ToolError {
                code: changed.code(),
                message: changed.to_string(),
                suggestion: "Read it again: the new text is taken in first.",
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
            PathError::NulByte(_) | PathError::TooLong(_) => "Pass a plain path string.",
            PathError::MissingRoot(_) => "Restart the server with an existing --root.",
            PathError::NotPython(_) => {
                "Read other files directly; xfile adds context to .py files."
            }
        };
        let quoted = |path: &str| shortened(path, QUOTED_CHARS);
        let message = match &error {
            PathError::NotFound(p) => PathError::NotFound(quoted(p)),
            PathError::OutsideRoot(p, root) => PathError::OutsideRoot(quoted(p), root.clone()),
            PathError::NulByte(p) => PathError::NulByte(quoted(p)),
            PathError::Sensitive(p) => PathError::Sensitive(quoted(p)),
            PathError::NotPython(p) => PathError::NotPython(quoted(p)),
            PathError::MissingRoot(p) => PathError::MissingRoot(p.clone()),
            PathError::TooLong(n) => PathError::TooLong(*n),
        }
        .to_string();
        ToolError {
            code: error.code(),
            message,
            suggestion,
        }
    }
}

impl From<SessionError> for ToolError {
    fn from(error: SessionError) -> Self {
        let suggestion = match error {
            SessionError::Insufficient(_) => {
                "Use a session of a wider scope, or a server started with --global."
            }
            SessionError::TooMany(_) => "Reuse an open session, or wait for some to expire.",
            _ => "Create a new session with create_session, or call without session_id.",
        };
        ToolError {
            code: error.code(),
            message: error.to_string(),
            suggestion,
        }
    }
}

impl From<RegistryError> for ToolError {
    fn from(error: RegistryError) -> Self {
        ToolError {
            code: error.code(),
            message: error.to_string(),
            suggestion: "Check the names with manage_registry {action: project_list} or collection_list.",
        }
    }
}
