//! xfile: an incremental cross-file context engine for Python projects.
//!
//! Layers point one way: [`cli`] and [`mcp`] → [`watch`] → [`service`] → [`engine`] →
//! [`python`]; the service also reads [`git`] history; [`workspace`] holds the project on disk (root, configuration, files);
//! [`registry`] the projects and collections a user registered, shared by processes;
//! [`federation`] scopes, sessions and references across the projects a server serves.

pub mod allocator;
pub mod cli;
/// The incremental engine and the rules, a crate of its own
/// (`crates/xfile-engine`): it sees the front end and nothing above it.
pub use xfile_engine as engine;
pub mod federation;
/// Git history read in process, a crate of its own (`crates/xfile-git`).
pub use xfile_git as git;
pub mod http;
pub mod mcp;
pub mod ops;
/// The front end, a crate of its own (`crates/xfile-python`): nothing in it
/// can reach the engine, the service or the adapters.
pub use xfile_python as python;
pub mod registry;
/// One project's answers, live updates and the watcher, a crate of its own
/// (`crates/xfile-service`).
pub use xfile_service as service;
pub use xfile_service::watch;
/// The project on disk, a crate of its own (`crates/xfile-workspace`).
pub use xfile_workspace as workspace;
