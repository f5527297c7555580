//! `read_with_context` (TDD §3.8.3): a file's content behind a
//! `[Cross-File Context]` section with the signatures of exactly the project
//! symbols the file imports or uses.
//!
//! Not yet here (issue 3): the token budget, the snippet cache and its age
//! indicator, and the injection log.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::Service;
use super::model::{Relationship, RelationshipType};
use crate::engine::intern::is_marker;
use crate::workspace::PathError;

/// One project definition the file uses, at its first use.
struct Used {
    first_line: u32,
    file: String,
    symbol: String,
}

pub fn read_with_context(service: &Service, input: &str) -> Result<String, PathError> {
    let path = service.resolve_file(input)?;
    let engine = service.engine();
    let content = engine.text(&path).unwrap_or_default();
    let relationships = service.dependencies(&path)?;
    let mut out = String::from("[Cross-File Context]\n\n");

    let mut imported: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut used: Vec<Used> = Vec::new();
    let mut notes = Vec::new();
    for r in &relationships {
        if is_marker(&r.target_file) {
            continue;
        }
        if r.relationship_type == RelationshipType::Import {
            let names = imported.entry(r.target_file.clone()).or_default();
            names.extend(r.source_symbol.clone().filter(|s| s != "*"));
            if r.metadata.wildcard == Some(true) {
                notes.push(format!(
                    "Note: this file star-imports {} (`import *`); only names that resolve for certain are shown (EC-4).",
                    r.target_file
                ));
            }
        }
        if let Some(used_here) = definition_used(r)
            && !used
                .iter()
                .any(|u| u.file == used_here.file && u.symbol == used_here.symbol)
        {
            used.push(used_here);
        }
        if let Some(facts) = engine.facts(&r.target_file)
            && let Some(error) = &facts.parse_error
        {
            let note = format!(
                "Note: {} has a syntax error at line {}; its definitions are not available.",
                r.target_file, error.line
            );
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
    }

    if imported.is_empty() {
        out.push_str("This file imports nothing from the project.\n");
    } else {
        out.push_str("This file imports from:\n");
        for (file, names) in &imported {
            let names = if names.is_empty() {
                String::new()
            } else {
                format!(": {}", names.join(", "))
            };
            let _ = writeln!(out, "- {file}{names}");
        }
    }

    used.sort_by_key(|u| u.first_line);
    if !used.is_empty() {
        out.push_str("\nDefinitions used by this file:\n");
    }
    for u in &used {
        let Some(definition) = engine.facts(&u.file).and_then(|facts| {
            facts
                .definitions
                .iter()
                .rev()
                .find(|d| d.qualname == u.symbol)
        }) else {
            continue;
        };
        let _ = writeln!(out, "\nFrom {}:{}", u.file, definition.start_line);
        for decorator in &definition.decorators {
            let _ = writeln!(out, "@{decorator}");
        }
        let _ = writeln!(out, "{}", definition.signature);
        if let Some(doc) = &definition.docstring {
            let _ = writeln!(
                out,
                "    \"\"\"{}\"\"\"",
                doc.chars().take(80).collect::<String>()
            );
        }
        let _ = writeln!(
            out,
            "    # Implementation in {}:{}-{}",
            u.file, definition.start_line, definition.end_line
        );
    }

    notes.dedup();
    if !notes.is_empty() {
        out.push('\n');
        for note in &notes {
            let _ = writeln!(out, "{note}");
        }
    }
    out.push_str("\n---\n\n[File Content]\n");
    out.push_str(content);
    Ok(out)
}

fn definition_used(r: &Relationship) -> Option<Used> {
    let (file, symbol) = match r.relationship_type {
        RelationshipType::Import => (r.metadata.defined_in.clone()?, r.target_symbol.clone()?),
        _ => (r.target_file.clone(), r.target_symbol.clone()?),
    };
    Some(Used {
        first_line: r.line_number,
        file,
        symbol,
    })
}
