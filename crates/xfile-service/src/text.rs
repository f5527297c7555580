//! The plain-text forms of list answers, shared by the CLI and the MCP
//! tools (their default form: about 2.5 times fewer tokens than JSON).
//! Columns are padded to the widest cell of the list, up to a cap, so a
//! long symbol shifts only its own row.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::calls::{CallGraph, Direction};
use super::model::{QueryResult, Relationship, Severity, Warning, WarningReport};
use xfile_workspace::Notice;

/// Widest padding of a column; longer cells overflow their row.
const MAX_PAD: usize = 40;

fn width<'a>(cells: impl Iterator<Item = &'a str>) -> usize {
    cells
        .map(|c| c.chars().count())
        .max()
        .unwrap_or(0)
        .min(MAX_PAD)
}

/// One line per relationship: `file:line  type  symbol -> target`.
pub fn relationships(list: &[Relationship]) -> String {
    let locations: Vec<String> = list
        .iter()
        .map(|r| format!("{}:{}", r.source_file, r.line_number))
        .collect();
    let symbols: Vec<&str> = list
        .iter()
        .map(|r| r.target_symbol.as_deref().unwrap_or(""))
        .collect();
    let location_width = width(locations.iter().map(String::as_str));
    let type_width = width(list.iter().map(|r| r.relationship_type.as_str()));
    let symbol_width = width(symbols.iter().copied());
    let mut out = String::new();
    for ((r, location), symbol) in list.iter().zip(&locations).zip(&symbols) {
        let target = match (&r.metadata.defined_in, r.target_line) {
            (Some(defined_in), Some(line)) => {
                format!("{} (defined in {defined_in}:{line})", r.target_file)
            }
            (Some(defined_in), None) => format!("{} (defined in {defined_in})", r.target_file),
            (None, Some(line)) => format!("{}:{line}", r.target_file),
            (None, None) => r.target_file.clone(),
        };
        let _ = writeln!(
            out,
            "{location:<location_width$}  {:<type_width$}  {symbol:<symbol_width$}  -> {target}",
            r.relationship_type.as_str(),
        );
    }
    out
}

/// `text` cut after `chars` characters, saying how many more there were.
pub fn shortened(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!(
            "{}… ({} more characters)",
            &text[..at],
            text[at..].chars().count()
        ),
        None => text.to_string(),
    }
}

/// The first lines of `text` that fit `budget` tokens, and a closing line
/// that says the rest was cut.
pub fn cut_to_budget(text: &str, budget: usize) -> String {
    let mut out = lines_within(text, budget).to_string();
    let _ = writeln!(
        out,
        "... cut by the {budget}-token answer budget; narrow the request to see the rest."
    );
    out
}

/// The longest run of whole first lines of `text` within `budget` tokens
/// (counted line by line: the tokenizer splits at line ends).
pub fn lines_within(text: &str, budget: usize) -> &str {
    // A token is at least a byte: text no longer than the budget in bytes
    // is never counted.
    if text.len() <= budget {
        return text;
    }
    let mut spent = 0;
    let mut end = 0;
    for line in text.split_inclusive('\n') {
        spent += super::context::count_tokens(line);
        if spent > budget {
            break;
        }
        end += line.len();
    }
    &text[..end]
}

/// The longest prefix of `text`, cut at a character, within `budget`
/// tokens: never shorter than `budget` bytes (a token is at least a byte),
/// longer where the text allows.
pub fn prefix_within(text: &str, budget: usize) -> &str {
    if text.len() <= budget || super::context::count_tokens(text) <= budget {
        return text;
    }
    let floor = |mut end: usize| {
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        end
    };
    // Code runs about 4 bytes a token: try that, then less, down to the
    // length that fits for certain.
    let mut end = floor(text.len().min(budget.saturating_mul(4)));
    while end > budget && super::context::count_tokens(&text[..end]) > budget {
        end = floor((end * 3 / 4).max(budget));
    }
    &text[..end]
}

/// Counts by type with each type's guidance once, for the whole report
/// (`warnings` is its list, taken out to be paged).
pub fn warnings_summary(report: &WarningReport, warnings: &[Warning]) -> String {
    let mut by_type: BTreeMap<&str, (usize, Option<&str>)> = BTreeMap::new();
    for w in warnings {
        let entry = by_type.entry(w.warning_type.as_str()).or_default();
        entry.0 += 1;
        entry.1 = entry.1.or(w.guidance);
    }
    let suppressed: usize = report.suppressed.values().sum();
    let mut out = format!(
        "{} warnings ({suppressed} suppressed by configuration)",
        warnings.len()
    );
    let counts: Vec<String> = by_type
        .iter()
        .map(|(kind, (n, _))| format!("{kind} {n}"))
        .collect();
    if !counts.is_empty() {
        let _ = write!(out, ": {}", counts.join(", "));
    }
    out.push('\n');
    for (kind, (_, guidance)) in &by_type {
        if let Some(guidance) = guidance {
            let _ = writeln!(out, "  {kind}: {guidance}");
        }
    }
    out
}

/// One entry per warning: location, severity, type and the source line,
/// then the message.
pub fn warning_list(listed: &[Warning]) -> String {
    let mut out = String::new();
    let locations: Vec<String> = listed
        .iter()
        .map(|w| format!("{}:{}:{}", w.file, w.line, w.column))
        .collect();
    let location_width = width(locations.iter().map(String::as_str));
    let type_width = width(listed.iter().map(|w| w.warning_type.as_str()));
    for (w, location) in listed.iter().zip(&locations) {
        let severity = match w.severity {
            Severity::Info => "info",
            Severity::Warning => "warning",
        };
        let _ = writeln!(
            out,
            "{location:<location_width$}  {severity:<7}  {:<type_width$}  {}",
            w.warning_type.as_str(),
            w.pattern
        );
        let _ = writeln!(out, "    {}", w.message);
    }
    out
}

/// The indexing notices, and how many more there are than `notices`.
pub fn notices(notices: &[Notice], total: usize) -> String {
    let mut out = String::new();
    for notice in notices {
        let _ = writeln!(out, "notice: {}: {}", notice.path, notice.message);
    }
    if total > notices.len() {
        let _ = writeln!(out, "... and {} more notices", total - notices.len());
    }
    out
}

/// The header, then the calls grouped: by depth, by the file they are
/// in, then by caller and callee, each pair once with its positions
/// (`line:column`). What the header names is not repeated: the callee of
/// direct callers, the caller of direct callees. A name in the file of
/// its group is given without the file.
pub fn call_graph(graph: &CallGraph) -> String {
    let what = match graph.direction {
        Direction::Callers => "Callers of",
        Direction::Callees => "Calls made by",
    };
    let mut out = format!(
        "{what} {} (depth {}):
",
        graph.symbol, graph.depth
    );
    if graph.calls.is_empty() {
        out.push_str("  none found\n");
    }
    // (depth, file) → (caller, callee) → positions, in the calls' order.
    type Pairs<'a> = Vec<((&'a str, &'a str), Vec<String>)>;
    let mut groups: Vec<((usize, &str), Pairs)> = Vec::new();
    for call in &graph.calls {
        let key = (call.depth, call.file.as_str());
        if groups.last().is_none_or(|(k, _)| *k != key) {
            groups.push((key, Vec::new()));
        }
        let Some((_, pairs)) = groups.last_mut() else {
            continue;
        };
        let pair = (call.caller.as_str(), call.callee.as_str());
        let position = format!("{}:{}", call.line, call.column);
        match pairs.iter_mut().find(|(p, _)| *p == pair) {
            Some((_, positions)) => positions.push(position),
            None => pairs.push((pair, vec![position])),
        }
    }
    let mut depth = 1;
    for ((level, file), pairs) in &groups {
        if *level != depth {
            depth = *level;
            let _ = writeln!(out, "depth {depth}:");
        }
        let _ = writeln!(out, "{file}");
        let short = |symbol: &'_ str| -> String {
            match symbol.split_once("::") {
                Some((in_file, name)) if in_file == *file => name.to_string(),
                _ => symbol.to_string(),
            }
        };
        for ((caller, callee), positions) in pairs {
            let named = match (graph.direction, *level) {
                (Direction::Callers, 1) => short(caller),
                (Direction::Callees, 1) => format!("-> {}", short(callee)),
                _ => format!("{} -> {}", short(caller), short(callee)),
            };
            let _ = writeln!(out, "  {named}: {}", positions.join(", "));
        }
    }
    if let Some(truncated) = &graph.truncated {
        let _ = writeln!(out, "({truncated})");
    }
    out
}

/// `Relation(arg, ...)`, then one tuple per line, its values comma-separated.
pub fn query(result: &QueryResult, tuples: &[Vec<serde_json::Value>]) -> String {
    let mut out = format!("{}({})\n", result.relation, result.args.join(", "));
    for tuple in tuples {
        let values: Vec<String> = tuple.iter().map(super::query::value_text).collect();
        let _ = writeln!(out, "  {}", values.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::count_tokens;

    #[test]
    fn prefixes_and_lines_stay_within_the_budget() {
        let text = "value = [1, 2, 3]  # é\n".repeat(200);
        for budget in [1, 7, 50, 400] {
            let prefix = prefix_within(&text, budget);
            assert!(count_tokens(prefix) <= budget && prefix.len() + 3 >= budget.min(text.len()));
            let lines = lines_within(&text, budget);
            assert!(count_tokens(lines) <= budget && lines.ends_with('\n') || lines.is_empty());
        }
        assert_eq!(prefix_within("short", 10), "short");
    }
}
