//! What can go wrong with the registry, each with a message that says what
//! to do and a stable code for adapters.

use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error(
        "cannot find the user's data directory for the registry; set XFILE_HOME to a directory xfile may write to"
    )]
    NoDataDir,
    #[error(
        "{0} is a symbolic link; xfile never writes through one: replace it with a real directory, or set XFILE_HOME to another directory"
    )]
    Symlink(PathBuf),
    #[error(
        "cannot create or open the registry directory {path}: {source}; set XFILE_HOME to a directory xfile may write to"
    )]
    Directory {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the registry {0} is not a valid xfile database (corrupt, or another program's file); remove it to start over (projects and collections will have to be added again)"
    )]
    Corrupt(PathBuf),
    #[error("the registry {0} is locked: another xfile is writing to it; retry in a moment")]
    Locked(PathBuf),
    #[error(
        "the registry {path} has schema version {found}, newer than this xfile knows ({supported}): a newer xfile wrote it; upgrade xfile, or remove the file to start over"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("the registry {path} failed: {source}")]
    Database {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("{0} is not an existing directory; give the path of a project directory")]
    NotADirectory(PathBuf),
    #[error(
        "{0} is {1}: xfile never registers it, since serving it would index (and write a cache into) everything under it; register the project directories inside it"
    )]
    TooWide(PathBuf, &'static str),
    #[error(
        "{0} holds no Python project marker (pyproject.toml, setup.py, setup.cfg, .git, a .py file or a package with __init__.py at its top); give the project's own directory, or register it anyway from the command line with `xfile project add --force PATH`"
    )]
    NotAProject(PathBuf),
    #[error("{0} is not valid UTF-8; xfile registers only projects whose path is UTF-8")]
    NonUtf8Path(PathBuf),
    #[error(
        "{0:?} is not a valid name: use a non-empty name without commas, slashes, control characters or surrounding spaces, not starting with '-'"
    )]
    InvalidName(String),
    #[error("a project named {0:?} is already registered; pick another name with --name")]
    ProjectNameTaken(String),
    #[error("{path} is already registered as project {name:?}")]
    ProjectPathTaken { path: String, name: String },
    #[error("no project is registered as {0:?}; `xfile project list` shows the registered ones")]
    ProjectNotFound(String),
    #[error("a collection named {0:?} already exists; pick another name")]
    CollectionNameTaken(String),
    #[error("no collection is named {0:?}; `xfile collection list` shows the existing ones")]
    CollectionNotFound(String),
    #[error("project {project:?} is already in collection {collection:?}")]
    AlreadyMember { collection: String, project: String },
    #[error("project {project:?} is not in collection {collection:?}")]
    NotMember { collection: String, project: String },
}

impl RegistryError {
    /// A stable code for adapters (MCP tool errors, exit statuses).
    pub fn code(&self) -> &'static str {
        match self {
            RegistryError::NoDataDir | RegistryError::Directory { .. } => "registry_unavailable",
            RegistryError::Symlink(_) => "symlink_refused",
            RegistryError::Corrupt(_) => "registry_corrupt",
            RegistryError::Locked(_) => "registry_locked",
            RegistryError::TooNew { .. } => "registry_too_new",
            RegistryError::Database { .. } => "registry_error",
            RegistryError::NotADirectory(_) => "not_a_directory",
            RegistryError::TooWide(..) => "root_too_wide",
            RegistryError::NotAProject(_) => "not_a_project",
            RegistryError::NonUtf8Path(_) | RegistryError::InvalidName(_) => "invalid_parameter",
            RegistryError::ProjectNameTaken(_)
            | RegistryError::ProjectPathTaken { .. }
            | RegistryError::CollectionNameTaken(_)
            | RegistryError::AlreadyMember { .. } => "already_exists",
            RegistryError::ProjectNotFound(_) => "project_not_found",
            RegistryError::CollectionNotFound(_) => "collection_not_found",
            RegistryError::NotMember { .. } => "not_a_member",
        }
    }

    /// Whether the user can fix it (a name, a path, a file to remove, a
    /// retry), as opposed to a failure of the database itself.
    pub fn is_user_error(&self) -> bool {
        !matches!(self, RegistryError::Database { .. })
    }
}

/// Names the failures a user can act on: a file that is not a database,
/// and a lock another process holds past the busy timeout.
pub(crate) fn classify(path: &Path, error: rusqlite::Error) -> RegistryError {
    match error.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            RegistryError::Corrupt(path.to_path_buf())
        }
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            RegistryError::Locked(path.to_path_buf())
        }
        _ => RegistryError::Database {
            path: path.to_path_buf(),
            source: error,
        },
    }
}
