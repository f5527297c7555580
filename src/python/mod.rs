//! Python front end: source text in, [`ModuleFacts`] out. Knows nothing of
//! files, projects or salsa.

mod dynamic;
mod extract;
pub mod facts;
mod members;
pub mod names;

pub use facts::*;

use ruff_source_file::LineIndex;

/// ASTs deeper than this are dropped on a dedicated stack: dropping is
/// recursive and would overflow the caller's stack on pathological input.
const DEEP_AST: usize = 2_000;

/// Parses `source` and extracts its facts. Never panics on any input: a
/// syntax error yields facts that carry only `parse_error` (EC-18).
pub fn extract(source: &str) -> ModuleFacts {
    let parsed = match stacker::maybe_grow(128 * 1024, 4 * 1024 * 1024, || {
        ruff_python_parser::parse_module(source)
    }) {
        Ok(parsed) => parsed,
        Err(error) => {
            let lines = LineIndex::from_source_text(source);
            let site = extract::position(&lines, source, error.location.start());
            return ModuleFacts {
                parse_error: Some(ParseErrorFact {
                    line: site.line,
                    column: site.column,
                    message: error.error.to_string(),
                }),
                ..ModuleFacts::default()
            };
        }
    };
    let mut extractor = extract::Extractor::new(source);
    extractor.module(&parsed.syntax().body);
    let depth = extractor.max_depth;
    let facts = extractor.finish();
    if depth > DEEP_AST {
        stacker::grow(depth.saturating_mul(1024) + (1 << 20), move || drop(parsed));
    }
    facts
}
