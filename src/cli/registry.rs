//! `xfile project ...` and `xfile collection ...`: the registry of projects
//! and collections. They need no project root and open no engine.

use std::io::Write;
use std::path::PathBuf;

use clap::Subcommand;
use serde::Serialize;

use super::Failure;
use crate::registry::{Collection, Marker, Project, Registry, RegistryError};

#[derive(Subcommand)]
pub(super) enum ProjectCommand {
    /// Register the directory PATH as a project. It must hold a Python
    /// project marker (pyproject.toml, setup.py, setup.cfg, .git, or a .py
    /// file or package at its top); `/` and the home directory never.
    Add {
        path: PathBuf,
        /// The project's name (default: the directory's name).
        #[arg(long)]
        name: Option<String>,
        /// Register the directory even without a project marker.
        #[arg(long)]
        force: bool,
    },
    /// List the registered projects.
    List,
    /// Forget a project (by name or path) and drop it from every
    /// collection; its files are left alone.
    Remove { name: String },
}

#[derive(Subcommand)]
pub(super) enum CollectionCommand {
    /// Create a collection, optionally with registered projects.
    Create {
        name: String,
        /// Projects to put in it (comma-separated names or paths).
        #[arg(long, value_delimiter = ',')]
        projects: Vec<String>,
    },
    /// Add a registered project to collection NAME.
    Add { name: String, project: String },
    /// Take a project out of collection NAME (it stays registered).
    Remove { name: String, project: String },
    /// List the collections and their projects.
    List,
    /// Delete a collection; its projects stay registered.
    Delete { name: String },
}

impl From<RegistryError> for Failure {
    fn from(error: RegistryError) -> Self {
        Failure {
            status: if error.is_user_error() { 2 } else { 1 },
            message: error.to_string(),
        }
    }
}

fn print_json(out: &mut impl Write, value: &impl Serialize) -> Result<(), Failure> {
    writeln!(out, "{}", serde_json::to_string_pretty(value)?)?;
    Ok(())
}

/// `name  path  added_at`, columns padded to the widest name.
fn project_lines(out: &mut impl Write, projects: &[Project]) -> std::io::Result<()> {
    let width = projects.iter().map(|p| p.name.len()).max().unwrap_or(0);
    for p in projects {
        writeln!(
            out,
            "{:<width$}  {}  (added {})",
            p.name, p.path, p.added_at
        )?;
    }
    Ok(())
}

fn members(collection: &Collection) -> String {
    match collection.projects.as_slice() {
        [] => "no projects".to_string(),
        names => names.join(", "),
    }
}

pub(super) fn project(command: ProjectCommand, json: bool) -> Result<(), Failure> {
    let mut registry = Registry::open()?;
    let mut out = std::io::stdout().lock();
    match command {
        ProjectCommand::Add { path, name, force } => {
            let marker = if force {
                Marker::Optional
            } else {
                Marker::Required
            };
            let project = registry.add_project_with(&path, name.as_deref(), marker)?;
            if json {
                return print_json(&mut out, &project);
            }
            writeln!(out, "added project {} at {}", project.name, project.path)?;
        }
        ProjectCommand::List => {
            let projects = registry.projects()?;
            if json {
                return print_json(&mut out, &projects);
            }
            if projects.is_empty() {
                writeln!(
                    out,
                    "no projects registered in {}; add one with `xfile project add PATH`",
                    registry.path().display()
                )?;
            }
            project_lines(&mut out, &projects)?;
        }
        ProjectCommand::Remove { name } => {
            let project = registry.remove_project(&name)?;
            if json {
                return print_json(&mut out, &project);
            }
            writeln!(
                out,
                "removed project {} ({}); its files are untouched",
                project.name, project.path
            )?;
        }
    }
    Ok(())
}

pub(super) fn collection(command: CollectionCommand, json: bool) -> Result<(), Failure> {
    let mut registry = Registry::open()?;
    let mut out = std::io::stdout().lock();
    let (collection, done) = match command {
        CollectionCommand::Create { name, projects } => {
            let projects: Vec<&str> = projects.iter().map(String::as_str).collect();
            let created = registry.create_collection(&name, &projects)?;
            let done = format!("created collection {}: {}", created.name, members(&created));
            (created, done)
        }
        CollectionCommand::Add { name, project } => {
            let changed = registry.add_to_collection(&name, &project)?;
            let done = format!(
                "added {project} to collection {}: {}",
                changed.name,
                members(&changed)
            );
            (changed, done)
        }
        CollectionCommand::Remove { name, project } => {
            let changed = registry.remove_from_collection(&name, &project)?;
            let done = format!(
                "removed {project} from collection {}: {}",
                changed.name,
                members(&changed)
            );
            (changed, done)
        }
        CollectionCommand::Delete { name } => {
            let deleted = registry.delete_collection(&name)?;
            let done = format!(
                "deleted collection {}; its projects stay registered ({})",
                deleted.name,
                members(&deleted)
            );
            (deleted, done)
        }
        CollectionCommand::List => {
            let collections = registry.collections()?;
            if json {
                return print_json(&mut out, &collections);
            }
            if collections.is_empty() {
                writeln!(
                    out,
                    "no collections; create one with `xfile collection create NAME --projects a,b`"
                )?;
            }
            let width = collections.iter().map(|c| c.name.len()).max().unwrap_or(0);
            for c in &collections {
                writeln!(out, "{:<width$}  {}", c.name, members(c))?;
            }
            return Ok(());
        }
    };
    if json {
        return print_json(&mut out, &collection);
    }
    writeln!(out, "{done}")?;
    Ok(())
}

/// `serve --collection`, `--projects`, `--global`: checks that the scope
/// names registered projects (so a typo fails here, with the names to
/// choose from), then serves them over MCP.
pub(super) fn serve(
    scope: crate::federation::Scope,
    http: Option<std::net::SocketAddr>,
) -> Result<(), Failure> {
    let registry = Registry::open()?;
    let projects = scope.projects(&registry)?;
    if projects.is_empty() {
        return Err(Failure {
            message: "no registered project is in that scope; add some with `xfile project add PATH` and `xfile collection add NAME PROJECT`".to_string(),
            status: 2,
        });
    }
    crate::mcp::serve_registered(registry, scope, http).map_err(|e| Failure {
        message: format!("MCP server stopped: {e}"),
        status: 1,
    })
}
