//! `Relation(arg, _)` patterns over any base or output relation (`xfile query`).

use std::collections::BTreeMap;

use super::model::{DerivedRelation, QueryResult};
use xfile_engine::Engine;
use xfile_engine::datalog::{self, RELATIONS, RelationKind, Value};

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error(
        "cannot parse `{0}`: write Relation(arg, ...) with quoted or bare strings and `_` wildcards. Available relations:\n{1}"
    )]
    Syntax(String, String),
    #[error("unknown relation `{0}`. Available relations:\n{1}")]
    UnknownRelation(String, String),
    #[error(
        "`{name}` takes {expected} arguments ({signature}), got {got}. Available relations:\n{catalogue}"
    )]
    Arity {
        name: String,
        expected: usize,
        got: usize,
        signature: String,
        catalogue: String,
    },
    #[error("`{0}` is an intermediate relation, internal to the rules. Available relations:\n{1}")]
    Intermediate(String, String),
}

/// `Name(arg, ...)` with its documentation, one per line.
pub fn catalogue() -> String {
    RELATIONS
        .iter()
        .filter(|r| r.kind != RelationKind::Intermediate)
        .map(|r| format!("  {}  [{}]  {}", signature(r), kind_name(r.kind), r.doc))
        .collect::<Vec<_>>()
        .join("\n")
}

fn kind_name(kind: RelationKind) -> &'static str {
    match kind {
        RelationKind::Input => "base",
        RelationKind::Output => "derived",
        RelationKind::Intermediate => "intermediate",
    }
}

pub(crate) fn signature(relation: &datalog::RelationInfo) -> String {
    format!("{}({})", relation.name, relation.args.join(", "))
}

/// Parses `Name(a, "b", _)` into the name and its arguments (`None` = `_`).
fn parse(pattern: &str) -> Result<(String, Vec<Option<String>>), QueryError> {
    let syntax = || QueryError::Syntax(pattern.to_string(), catalogue());
    let pattern = pattern.trim();
    let (name, rest) = pattern.split_once('(').ok_or_else(syntax)?;
    let inner = rest.trim_end().strip_suffix(')').ok_or_else(syntax)?;
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(syntax());
    }
    let mut args = Vec::new();
    if !inner.trim().is_empty() {
        for raw in inner.split(',') {
            let arg = raw.trim();
            let unquoted = arg
                .strip_prefix('"')
                .and_then(|a| a.strip_suffix('"'))
                .or_else(|| arg.strip_prefix('\'').and_then(|a| a.strip_suffix('\'')));
            args.push(match (arg, unquoted) {
                ("_", None) => None,
                (_, Some(text)) => Some(text.to_string()),
                ("", None) => return Err(syntax()),
                (text, None) => Some(text.to_string()),
            });
        }
    }
    Ok((name.to_string(), args))
}

/// The relation a pattern names and its arguments (`None` = `_`), checked
/// against the catalogue: known, not intermediate, right arity.
pub(crate) fn resolve(
    pattern: &str,
) -> Result<(&'static datalog::RelationInfo, Vec<Option<String>>), QueryError> {
    let (name, args) = parse(pattern)?;
    let relation = datalog::relation(&name)
        .ok_or_else(|| QueryError::UnknownRelation(name.clone(), catalogue()))?;
    if relation.kind == RelationKind::Intermediate {
        return Err(QueryError::Intermediate(name, catalogue()));
    }
    if args.len() != relation.args.len() {
        return Err(QueryError::Arity {
            name,
            expected: relation.args.len(),
            got: args.len(),
            signature: signature(relation),
            catalogue: catalogue(),
        });
    }
    Ok((relation, args))
}

/// The tuples of `relation` whose rendering matches `args`, each with its
/// rendering.
pub(crate) fn select(
    engine: &Engine,
    relation: &datalog::RelationInfo,
    args: &[Option<String>],
) -> Vec<(Vec<Value>, Vec<serde_json::Value>)> {
    let program = engine.program();
    let tuples: Vec<Vec<Value>> = match relation.kind {
        RelationKind::Input => program
            .facts
            .iter()
            .filter(|f| f.relation() == relation.name)
            .map(|f| f.values())
            .collect(),
        _ => program.outputs.tuples(relation.name).unwrap_or_default(),
    };
    let mut selected: Vec<_> = tuples
        .into_iter()
        .map(|tuple| {
            let rendered = render(engine, &tuple);
            (tuple, rendered)
        })
        .filter(|(_, rendered)| {
            rendered.iter().zip(args).all(|(value, arg)| match arg {
                None => true,
                Some(arg) => value.as_str() == Some(arg) || value_text(value) == *arg,
            })
        })
        .collect();
    selected.sort_by_cached_key(|(_, rendered)| text_order(rendered));
    selected
}

/// Tuples in the order of their text (positions by line, then column), not
/// of interned ids, which depend on which thread reached a path first.
fn text_order(rendered: &[serde_json::Value]) -> Vec<(u32, u32, String)> {
    rendered
        .iter()
        .map(|value| {
            let text = value_text(value);
            match text.split_once(':').map(|(l, c)| (l.parse(), c.parse())) {
                Some((Ok(line), Ok(column))) => (line, column, String::new()),
                _ => (u32::MAX, u32::MAX, text),
            }
        })
        .collect()
}

/// `@output` relations the export shows in its own shape: relationships
/// (`Imports`, `ImportDefinedIn` as `defined_in`, `Calls`, `Inherits`),
/// `files[].in_import_cycle` (`InCycle`) and `circular_imports` (`CycleEdge`).
const EXPORTED_ELSEWHERE: &[&str] = &[
    "Imports",
    "ImportDefinedIn",
    "Calls",
    "Inherits",
    "InCycle",
    "CycleEdge",
];

/// The export's `derived` section: every other `@output` relation.
pub(crate) fn derived(engine: &Engine) -> BTreeMap<&'static str, DerivedRelation> {
    RELATIONS
        .iter()
        .filter(|r| r.kind == RelationKind::Output && !EXPORTED_ELSEWHERE.contains(&r.name))
        .map(|r| {
            let mut tuples: Vec<_> = engine
                .outputs()
                .tuples(r.name)
                .unwrap_or_default()
                .iter()
                .map(|t| render(engine, t))
                .collect();
            tuples.sort_by_cached_key(|t| text_order(t));
            (
                r.name,
                DerivedRelation {
                    args: r.args.to_vec(),
                    tuples,
                },
            )
        })
        .collect()
}

pub fn run(engine: &Engine, pattern: &str) -> Result<QueryResult, QueryError> {
    let (relation, args) = resolve(pattern)?;
    Ok(QueryResult {
        relation: relation.name.to_string(),
        args: relation.args.iter().map(|a| a.to_string()).collect(),
        tuples: select(engine, relation, &args)
            .into_iter()
            .map(|(_, rendered)| rendered)
            .collect(),
    })
}

pub(crate) fn value_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Renders a tuple: nodes as paths or markers, names as text, a site as
/// `line:column` in the file named by the nearest node before it.
pub fn render(engine: &Engine, tuple: &[Value]) -> Vec<serde_json::Value> {
    let interner = engine.interner();
    let mut file: Option<String> = None;
    tuple
        .iter()
        .map(|value| match *value {
            Value::Node(node) => {
                let text = interner.node_text(node).to_string();
                file = Some(text.clone());
                serde_json::Value::String(text)
            }
            Value::Sym(sym) => serde_json::Value::String(interner.sym_text(sym).to_string()),
            Value::Pattern(pattern) => serde_json::Value::String(pattern.as_str().to_string()),
            Value::Site(site) => {
                let position = file
                    .as_deref()
                    .and_then(|f| engine.facts(f))
                    .and_then(|facts| facts.sites.get(site.0 as usize).copied());
                match position {
                    Some(p) => serde_json::Value::String(format!("{}:{}", p.line, p.column)),
                    None => serde_json::Value::Null,
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_constants_quotes_and_wildcards() {
        let (name, args) = parse(r#"Imports("a.py", _, b.py)"#).unwrap();
        assert_eq!(name, "Imports");
        assert_eq!(args, vec![Some("a.py".into()), None, Some("b.py".into())]);
        assert!(parse("Imports(").is_err());
        assert!(parse("(a)").is_err());
    }
}
