//! The registry's boundary types, as adapters print and serialize them.

use serde::Serialize;

/// A registered project: a directory xfile can serve under a name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Project {
    pub id: i64,
    pub name: String,
    /// Canonical absolute path of the project directory.
    pub path: String,
    /// When it was registered, UTC, RFC 3339.
    pub added_at: String,
}

/// A named set of registered projects.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Collection {
    pub id: i64,
    pub name: String,
    /// When it was created, UTC, RFC 3339.
    pub created_at: String,
    /// Names of its member projects, sorted.
    pub projects: Vec<String>,
}
