//! Python front end: source text in, [`ModuleFacts`] out. Knows nothing of
//! files, projects or salsa.

// What other crates can reach is declared `pub`; everything else says
// `pub(crate)`, so a signature tells a reader whether it is the API.
#![warn(unreachable_pub)]

mod dynamic;
mod extract;
pub mod facts;
mod members;
pub mod names;
mod nesting;

pub use facts::*;

use ruff_source_file::LineIndex;
use ruff_text_size::Ranged;

/// Parses `source` and extracts its facts. Never panics on any input: a
/// syntax error yields facts that carry only `parse_error`, and so
/// does a file nested deeper than [`nesting::MAX_DEPTH`], which no walk
/// over its syntax then sees.
pub fn extract(source: &str) -> ModuleFacts {
    if nesting::too_deep_to_parse(source) {
        return too_deep(1, 0);
    }
    let module = match ruff_python_parser::parse_module(source) {
        Ok(parsed) => parsed.into_syntax(),
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
    let depth = match nesting::depth(&module) {
        Ok(depth) => depth,
        Err(deep) => {
            let lines = LineIndex::from_source_text(source);
            let site = extract::position(&lines, source, deep.start());
            nesting::drop_flat(module);
            return too_deep(site.line, site.column);
        }
    };
    let mut extractor = extract::Extractor::new(source);
    extractor.module(&module.body);
    let facts = extractor.finish();
    nesting::drop_tree(module, depth);
    facts
}

fn too_deep(line: u32, column: u32) -> ModuleFacts {
    ModuleFacts {
        parse_error: Some(ParseErrorFact {
            line,
            column,
            message: format!(
                "nested more than {} levels deep: not analysed (CPython cannot compile such \
                 nesting either)",
                nesting::MAX_DEPTH
            ),
        }),
        ..ModuleFacts::default()
    }
}

/// The parameters of the `def` whose signature (as
/// [`Definition::signature`] holds it) is `signature`; `None` for a
/// signature that was shortened, is not a `def`'s, or does not parse.
/// Parsed when asked, not kept: few definitions are ever checked.
pub fn parameters_of(signature: &str) -> Option<Parameters> {
    if signature.ends_with('…')
        || !(signature.starts_with("def ") || signature.starts_with("async def "))
    {
        return None;
    }
    let source = format!("{signature}: ...\n");
    if nesting::too_deep_to_parse(&source) {
        return None;
    }
    let parsed = ruff_python_parser::parse_module(&source).ok()?;
    match parsed.syntax().body.first()? {
        ruff_python_ast::Stmt::FunctionDef(def) => Some(extract::parameters(&def.parameters)),
        _ => None,
    }
}

/// Where `source` names something (its `Name` tokens, keywords excluded),
/// in order; syntax errors do not stop it. Empty for a file nested too
/// deeply to parse safely.
pub fn name_ranges(source: &str) -> Vec<std::ops::Range<usize>> {
    if nesting::too_deep_to_parse(source) {
        return Vec::new();
    }
    let parsed =
        ruff_python_parser::parse_unchecked_source(source, ruff_python_ast::PySourceType::Python);
    let names = parsed
        .tokens()
        .iter()
        .filter(|token| token.kind() == ruff_python_ast::token::TokenKind::Name)
        .map(|token| token.start().to_usize()..token.end().to_usize())
        .collect();
    nesting::drop_flat(parsed.into_syntax());
    names
}
