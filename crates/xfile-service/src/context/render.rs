//! The text of one injected definition at each preview tier. Every line
//! that shows a definition ends with its location, `path:line` (a range
//! `path:start-end` at the full tier, so the body can be read directly).
//!
//! - minimal: `name kind path:line`, one line, and for a class one such
//!   line per member the reader uses;
//! - signature: the header (decorators that change its kind inline) and,
//!   for a class, one line per member the reader uses;
//! - full: the signature tier plus a one-line docstring and, for a class,
//!   its other members as the budget allows.

use std::fmt::Write as _;

use xfile_python::{Definition, DefinitionKind};

/// Longest header shown; longer ones (say, a field with a big default)
/// end in `…`.
const HEADER_CHARS: usize = 110;
/// Longest docstring excerpt.
const DOC_CHARS: usize = 80;
/// Decorators kept on a header: the ones that change what the name is.
const KIND_DECORATORS: [&str; 6] = [
    "property",
    "classmethod",
    "staticmethod",
    "cached_property",
    "abstractmethod",
    "dataclass",
];

pub(super) fn kind_word(kind: DefinitionKind) -> &'static str {
    match kind {
        DefinitionKind::Function => "function",
        DefinitionKind::AsyncFunction => "async function",
        DefinitionKind::Class => "class",
        DefinitionKind::Method => "method",
        DefinitionKind::Variable => "variable",
    }
}

/// `name kind path:line`.
pub(super) fn minimal(file: &str, definition: &Definition) -> String {
    format!(
        "{} {} {file}:{}\n",
        definition.qualname,
        kind_word(definition.kind),
        definition.start_line
    )
}

/// The header line of `definition`: its signature with the decorators that
/// change its kind, then `# path:line` (`path:start-end` when `range`),
/// and `owner` when the member is inherited from another class.
pub(super) fn header(
    file: &str,
    definition: &Definition,
    indent: &str,
    owner: Option<&str>,
    range: bool,
) -> String {
    let mut line = String::from(indent);
    for decorator in &definition.decorators {
        let name = decorator.rsplit('.').next().unwrap_or(decorator);
        let name = name.split('(').next().unwrap_or(name);
        if KIND_DECORATORS.contains(&name) {
            let _ = write!(line, "@{decorator} ");
        }
    }
    line.push_str(&clip(&definition.signature, HEADER_CHARS));
    line.push_str("  # ");
    if let Some(owner) = owner {
        let _ = write!(line, "{owner} ");
    }
    let _ = write!(line, "{file}:{}", definition.start_line);
    if range && definition.end_line > definition.start_line {
        let _ = write!(line, "-{}", definition.end_line);
    }
    line.push('\n');
    line
}

/// The docstring's first sentence, clipped, as a line under a header.
pub(super) fn doc(definition: &Definition, indent: &str) -> Option<String> {
    let doc = definition.docstring.as_deref()?.trim();
    let first = doc.lines().next()?.trim();
    let sentence = first.split_inclusive(". ").next().unwrap_or(first).trim();
    if sentence.is_empty() {
        return None;
    }
    Some(format!(
        "{indent}    \"\"\"{}\"\"\"\n",
        clip(sentence, DOC_CHARS)
    ))
}

/// The line that says a class has `count` members not shown.
pub(super) fn more_members(count: usize) -> String {
    format!("    ...  # {count} more members\n")
}

fn clip(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_string();
    }
    let mut clipped: String = text.chars().take(limit - 1).collect();
    clipped.push('…');
    clipped
}
