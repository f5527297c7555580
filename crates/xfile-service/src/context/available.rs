//! "Available in this package": the public names of the read file's
//! sibling modules, module → names, so that an agent sees what exists
//! before it writes code that may already be there.

use std::fmt::Write as _;

use super::super::Service;
use xfile_python::{DefinitionKind, DunderAll};

/// Names shown per module before `+N more`.
const NAMES_PER_MODULE: usize = 12;

/// One line per sibling module with public classes or functions:
/// `name.py: Class, function(), +N more`.
pub(super) fn sibling_lines(service: &Service, path: &str) -> Vec<String> {
    let engine = service.engine();
    let dir = match path.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/"),
        None => String::new(),
    };
    let mut lines = Vec::new();
    for sibling in engine.paths() {
        let Some(name) = sibling.strip_prefix(dir.as_str()) else {
            continue;
        };
        if sibling == path || name.contains('/') || name == "__init__.py" {
            continue;
        }
        let Some(facts) = engine.facts(sibling) else {
            continue;
        };
        let exported = |n: &str| match &facts.semantic.all {
            DunderAll::Names(names) => names.iter().any(|a| a == n),
            _ => !n.starts_with('_'),
        };
        let names: Vec<String> = facts
            .definitions
            .iter()
            .filter(|d| !d.qualname.contains('.') && exported(&d.qualname))
            .filter_map(|d| match d.kind {
                DefinitionKind::Class => Some(d.qualname.to_string()),
                DefinitionKind::Function | DefinitionKind::AsyncFunction => {
                    Some(format!("{}()", d.qualname))
                }
                _ => None,
            })
            .fold(Vec::new(), |mut names, name| {
                if !names.contains(&name) {
                    names.push(name);
                }
                names
            });
        if names.is_empty() {
            continue;
        }
        let mut line = format!(
            "{name}: {}",
            names[..names.len().min(NAMES_PER_MODULE)].join(", ")
        );
        if names.len() > NAMES_PER_MODULE {
            let _ = write!(line, ", +{} more", names.len() - NAMES_PER_MODULE);
        }
        line.push('\n');
        lines.push(line);
    }
    lines
}
