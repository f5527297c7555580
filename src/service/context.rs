//! `read_with_context` (TDD §3.8.3): a file's content behind a
//! `[Cross-File Context]` section with the signatures of exactly the project
//! symbols the file imports or uses.
//!
//! The section is held to `context_token_limit` tokens (cl100k_base): the
//! summary keeps one line per directly imported project file, then snippets
//! are added in order of first use until the budget is spent, and the section
//! says what was left out and how to get it.
//!
//! The file's own warnings go in with the notes (counted against the
//! budget); warnings inside an injected definition follow its snippet.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use std::time::Instant;

use super::Service;
use super::cache::{Entry, Lookup};
use super::injections::{self, InjectionEvent};
use super::model::{Relationship, RelationshipType};
use crate::engine::is_marker;
use crate::workspace::PathError;

/// One project definition the file uses, at its first use.
struct Used {
    first_line: u32,
    /// How the file first uses it: import before call before inheritance.
    kind: RelationshipType,
    file: String,
    symbol: String,
}

/// Tokens of `text` in the cl100k_base encoding (built once, on first use).
pub fn count_tokens(text: &str) -> usize {
    tiktoken_rs::cl100k_base_singleton()
        .encode_with_special_tokens(text)
        .len()
}

pub fn read_with_context(service: &Service, input: &str) -> Result<String, PathError> {
    let path = service.resolve_file(input)?;
    let engine = service.engine();
    let content = engine.text(&path).unwrap_or_default();
    if !service.config().enable_context_injection {
        return Ok(content.to_string());
    }
    let relationships = service.dependencies_of(&path);
    let mut out = String::from("[Cross-File Context]\n\n");

    let mut imported: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut used: Vec<Used> = Vec::new();
    let mut notes = Vec::new();
    for r in &relationships {
        if r.target_file.starts_with("<unresolved:")
            && r.relationship_type == RelationshipType::Import
        {
            // EC-14: a module the file imports is not in the project (any more).
            let module = r
                .target_file
                .trim_start_matches("<unresolved:")
                .trim_end_matches('>');
            notes.push(match service.deleted_module(module) {
                Some((path, when)) => format!(
                    "Note: line {} imports {module} from {path}, which was deleted at {}.",
                    r.line_number,
                    humantime::format_rfc3339_seconds(when)
                ),
                None => format!(
                    "Note: line {} imports {module}, which is not in the project (deleted, moved or not created yet).",
                    r.line_number
                ),
            });
        }
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

    // TDD §3.8.2 priority (all of these are direct dependencies): files
    // edited in the last 10 minutes, then widely used definitions, then
    // imports before calls before inheritance, then order of first use.
    let threshold =
        usize::try_from(service.config().function_usage_warning_threshold).unwrap_or(usize::MAX);
    used.sort_by_cached_key(|u| {
        let recent = recently_edited(service, &u.file);
        let widely_used = service.usage_count(&u.file, &u.symbol) >= threshold;
        (!recent, !widely_used, u.kind, u.first_line)
    });
    let snippets: Vec<Snippet> = used
        .iter()
        .filter_map(|u| cached_snippet(service, &u.file, &u.symbol))
        .collect();

    notes.extend(own_warning_notes(service, &path));
    notes.dedup();
    let mut tail = String::new();
    for note in &notes {
        let _ = writeln!(tail, "{note}");
    }

    // Snippets go in by first use while they fit; after the first that does
    // not, the rest are named instead, so priority order is kept.
    let limit = usize::try_from(service.config().context_token_limit).unwrap_or(usize::MAX);
    let heading = "\nDefinitions used by this file:\n";
    let mut spent = count_tokens(&out) + count_tokens(&tail) + count_tokens(heading);
    let mut left_out = Vec::new();
    let mut kept = String::new();
    let mut events = Vec::new();
    for snippet in snippets {
        let cost = snippet.tokens;
        if left_out.is_empty() && spent + cost <= limit {
            spent += cost;
            kept.push_str(&snippet.text);
            for warning in symbol_warnings(service, &snippet.file, &snippet.symbol) {
                let _ = writeln!(tail, "Warning on {}: {}", snippet.symbol, warning.message);
            }
            events.push(snippet.event(&path, cost));
            let users = service.usage_count(&snippet.file, &snippet.symbol);
            if users as u64 >= service.config().function_usage_warning_threshold {
                let _ = writeln!(
                    tail,
                    "Note: {} is used in {users} files; a signature change affects them all (get_dependents {}).",
                    snippet.symbol, snippet.file
                );
            }
        } else {
            left_out.push(snippet.symbol);
        }
    }
    if service.config().enable_injection_logging
        && let Err(error) = injections::append(service.root(), &events)
    {
        // Logging is best effort: the agent still gets its context.
        tracing::warn!("cannot write the injection log: {error}");
    }
    if !kept.is_empty() {
        out.push_str(heading);
        out.push_str(&kept);
    }
    if !left_out.is_empty() {
        let count = match left_out.len() {
            1 => "1 definition".to_string(),
            n => format!("{n} definitions"),
        };
        let _ = writeln!(
            out,
            "\nLeft out for the {limit}-token context budget: {count} ({}). Call get_dependencies for this file to see them.",
            left_out.join(", ")
        );
    }
    if !tail.is_empty() {
        out.push('\n');
        out.push_str(&tail);
    }
    out.push_str("\n---\n\n[File Content]\n");
    out.push_str(content);
    Ok(out)
}

/// At most this many of the read file's own warnings are spelled out.
const OWN_WARNINGS: usize = 5;

/// The read file's warnings (TDD §3.9): where its context is incomplete.
fn own_warning_notes(service: &Service, file: &str) -> Vec<String> {
    let warnings = service.warnings_of(file);
    let mut notes: Vec<String> = warnings
        .iter()
        .take(OWN_WARNINGS)
        .map(|w| format!("Warning: {}", w.message))
        .collect();
    if warnings.len() > OWN_WARNINGS {
        notes.push(format!(
            "Note: {} more warnings in this file; call get_warnings for it.",
            warnings.len() - OWN_WARNINGS
        ));
    }
    notes
}

/// Warnings inside the definition of `symbol` in `file`, its decorators
/// included: what makes the injected snippet less certain.
fn symbol_warnings(service: &Service, file: &str, symbol: &str) -> Vec<super::model::Warning> {
    let Some(definition) = service.engine().facts(file).and_then(|facts| {
        facts
            .definitions
            .iter()
            .rev()
            .find(|d| d.qualname == symbol)
    }) else {
        return Vec::new();
    };
    let decorators = u32::try_from(definition.decorators.len()).unwrap_or(u32::MAX);
    let first = definition.start_line.saturating_sub(decorators);
    let mut warnings = service.warnings_of(file);
    warnings.retain(|w| (first..=definition.end_line).contains(&w.line));
    warnings
}

fn recently_edited(service: &Service, file: &str) -> bool {
    std::fs::metadata(service.root().join(file))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|modified| modified.elapsed().ok())
        .is_some_and(|age| age.as_secs() < 600)
}

fn definition_used(r: &Relationship) -> Option<Used> {
    let (file, symbol) = match r.relationship_type {
        RelationshipType::Import => (r.metadata.defined_in.clone()?, r.target_symbol.clone()?),
        _ => (r.target_file.clone(), r.target_symbol.clone()?),
    };
    Some(Used {
        first_line: r.line_number,
        kind: r.relationship_type,
        file,
        symbol,
    })
}

/// The snippet for `symbol` in `file`, from the working memory cache when it
/// is current, rendered and cached otherwise. Entries older than a minute say
/// how old they are (TDD §3.8.3 cache age).
fn cached_snippet(service: &Service, file: &str, symbol: &str) -> Option<Snippet> {
    let engine = service.engine();
    let revision = engine.revision(file)?;
    let mut cache = service.snippet_cache();
    let (entry, cache_hit) = match cache.get(file, symbol, revision) {
        Lookup::Hit(entry) => (entry, true),
        Lookup::Miss => {
            let text = render_snippet(service, file, symbol)?;
            let entry = Entry {
                tokens: count_tokens(&text),
                text,
                revision,
                created: Instant::now(),
            };
            cache.insert(file, symbol, entry.clone());
            (entry, false)
        }
    };
    let age = entry.created.elapsed();
    let minutes = age.as_secs() / 60;
    let (text, tokens) = if minutes == 0 {
        (entry.text, entry.tokens)
    } else {
        // Annotate the `From file:line` header, the snippet's first line.
        let body = entry.text.strip_prefix('\n').unwrap_or(&entry.text);
        let (header, rest) = body.split_once('\n').unwrap_or((body, ""));
        let text = format!("\n{header} (cached {minutes} min ago)\n{rest}");
        let tokens = count_tokens(&text);
        (text, tokens)
    };
    Some(Snippet {
        file: file.to_string(),
        symbol: symbol.to_string(),
        text,
        tokens,
        cache_hit,
        age_seconds: age.as_secs_f64(),
    })
}

/// One rendered snippet on its way into the context section.
struct Snippet {
    file: String,
    symbol: String,
    text: String,
    tokens: usize,
    cache_hit: bool,
    age_seconds: f64,
}

impl Snippet {
    fn event(&self, trigger_file: &str, token_count: usize) -> InjectionEvent {
        let lines = self
            .text
            .rsplit_once(&format!("{}:", self.file))
            .map_or(String::new(), |(_, range)| range.trim().to_string());
        InjectionEvent {
            timestamp: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            event_type: "context_injection".into(),
            trigger: "agent_read_file".into(),
            trigger_file: trigger_file.to_string(),
            source_file: self.file.clone(),
            symbol: self.symbol.clone(),
            lines,
            snippet: self.text.trim().to_string(),
            cache_hit: self.cache_hit,
            cache_age_seconds: self.age_seconds,
            token_count,
        }
    }
}

fn render_snippet(service: &Service, file: &str, symbol: &str) -> Option<String> {
    let facts = service.engine().facts(file)?;
    let definition = facts
        .definitions
        .iter()
        .rev()
        .find(|d| d.qualname == symbol)?;
    let mut snippet = format!("\nFrom {}:{}\n", file, definition.start_line);
    for decorator in &definition.decorators {
        let _ = writeln!(snippet, "@{decorator}");
    }
    let _ = writeln!(snippet, "{}", definition.signature);
    if let Some(doc) = &definition.docstring {
        let doc: String = doc.chars().take(80).collect();
        let _ = writeln!(snippet, "    \"\"\"{doc}\"\"\"");
    }
    let _ = writeln!(
        snippet,
        "    # Implementation in {}:{}-{}",
        file, definition.start_line, definition.end_line
    );
    Some(snippet)
}
