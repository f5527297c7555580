//! Scopes and sessions: which registered projects a server, or a session
//! token it handed out, may see. A session never sees more than the
//! server it was created on; only a global scope administers the registry.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::registry::{Project, Registry, RegistryError};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum Level {
    Global,
    Collection,
    Project,
}

/// A level and, below global, the collections or projects it names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Scope {
    pub level: Level,
    pub ids: Vec<String>,
}

impl Scope {
    pub fn global() -> Scope {
        Scope {
            level: Level::Global,
            ids: Vec::new(),
        }
    }

    /// The registered projects in scope, by name.
    pub fn projects(&self, registry: &Registry) -> Result<Vec<Project>, RegistryError> {
        let mut projects = match self.level {
            Level::Global => registry.projects()?,
            Level::Collection => {
                let mut all = Vec::new();
                for collection in &self.ids {
                    all.extend(registry.members(collection)?);
                }
                all
            }
            Level::Project => self
                .ids
                .iter()
                .map(|id| registry.project(id))
                .collect::<Result<_, _>>()?,
        };
        projects.sort_by(|a, b| a.name.cmp(&b.name));
        projects.dedup_by(|a, b| a.name == b.name);
        Ok(projects)
    }

    /// Whether this scope sees no more than `outer`: a global scope only
    /// within a global one, else its projects among `outer`'s.
    pub fn within(&self, outer: &Scope, registry: &Registry) -> Result<bool, RegistryError> {
        if outer.level == Level::Global {
            return Ok(true);
        }
        if self.level == Level::Global {
            return Ok(false);
        }
        let allowed: BTreeSet<String> = outer
            .projects(registry)?
            .into_iter()
            .map(|p| p.name)
            .collect();
        Ok(self
            .projects(registry)?
            .iter()
            .all(|p| allowed.contains(&p.name)))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("no session has the id {0}")]
    Unknown(String),
    #[error("session {0} expired")]
    Expired(String),
    #[error("insufficient scope: {0}")]
    Insufficient(String),
    #[error("{0} sessions are open, the most one server keeps")]
    TooMany(usize),
}

impl SessionError {
    pub fn code(&self) -> &'static str {
        match self {
            SessionError::Unknown(_) => "session_not_found",
            SessionError::Expired(_) => "session_expired",
            SessionError::Insufficient(_) => "insufficient_scope",
            SessionError::TooMany(_) => "too_many_sessions",
        }
    }
}

/// Sessions one server keeps at most (expired ones are dropped first).
const MAX_SESSIONS: usize = 1_000;
/// A session's life when none is asked for, and the longest one.
pub const DEFAULT_TTL: Duration = Duration::from_secs(3_600);
pub const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3_600);

struct Session {
    scope: Scope,
    expires: SystemTime,
}

/// The sessions of one server, in memory: a restart ends them all.
#[derive(Default)]
pub struct Sessions {
    open: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    /// Opens a session over `scope` for `ttl` (at most `MAX_TTL`); returns
    /// its id (a random UUID) and when it expires.
    pub fn create(
        &self,
        scope: Scope,
        ttl: Duration,
    ) -> Result<(String, SystemTime), SessionError> {
        let now = SystemTime::now();
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.retain(|_, s| s.expires > now);
        if open.len() >= MAX_SESSIONS {
            return Err(SessionError::TooMany(open.len()));
        }
        let id = uuid::Uuid::new_v4().to_string();
        let expires = now + ttl.min(MAX_TTL);
        open.insert(id.clone(), Session { scope, expires });
        Ok((id, expires))
    }

    /// The scope of session `id`, if it is open.
    pub fn scope(&self, id: &str) -> Result<Scope, SessionError> {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let shown: String = id.chars().take(40).collect();
        let session = open.get(id).ok_or(SessionError::Unknown(shown.clone()))?;
        if session.expires <= SystemTime::now() {
            return Err(SessionError::Expired(shown));
        }
        Ok(session.scope.clone())
    }
}
