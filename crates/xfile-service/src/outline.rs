//! A file's outline (its definitions, members nested under their class) and
//! one definition's source: what an agent asks for before, or instead of,
//! reading a whole file. Both come from the facts the front end extracted.
//!
//! A name bound twice in a file (a redefined function, a property's getter
//! and setter) is listed once per binding in the outline, each earlier one
//! marked with the line that rebinds it; the source shown for a symbol is
//! its last binding, the one the rest of the program resolves to.

use std::collections::HashMap;
use std::fmt::Write;

use serde::Serialize;

use super::Service;
use super::calls::{Symbol, SymbolError};
use super::context::count_tokens;
use xfile_python::{Definition, DefinitionKind};
use xfile_workspace::PathError;

/// Candidates an ambiguous name lists at most.
const CANDIDATES: usize = 10;
/// Classes named at most in the line that says whose members were left out.
const NAMED_CLASSES: usize = 5;

/// A file's definitions in source order, members nested.
#[derive(Clone, Debug, Serialize)]
pub struct Outline {
    pub file: String,
    /// Set when the file does not parse: it then has no definitions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parse_error: Option<String>,
    pub definitions: Vec<Entry>,
    /// Definitions in the file, listed or not.
    pub total: usize,
    /// Set when the outline was cut to fit the answer budget: what was left
    /// out and how to get it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<String>,
}

/// One binding of a definition.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    /// `f`, `C`, `C.method`, `C.Inner.method`.
    pub qualname: String,
    pub kind: DefinitionKind,
    /// Header text: `def save(self, storage)`, `class User(Base)`, or the
    /// first line of an assignment.
    pub signature: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub decorators: Vec<String>,
    /// The `def`/`class` line (decorators sit above it).
    pub start_line: u32,
    pub end_line: u32,
    /// The docstring's first line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docstring: Option<String>,
    /// The line of the next binding of the same name, which replaces this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redefined_at: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<Entry>,
    /// Members (at any depth) left out to fit the answer budget.
    #[serde(skip_serializing_if = "is_zero")]
    pub members_left_out: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Entry {
    fn new(definition: &Definition, redefined_at: Option<u32>) -> Entry {
        Entry {
            qualname: definition.qualname.to_string(),
            kind: definition.kind,
            signature: definition.signature.to_string(),
            decorators: definition.decorators.clone(),
            start_line: definition.start_line,
            end_line: definition.end_line,
            docstring: definition.docstring.as_deref().map(str::to_string),
            redefined_at,
            members: Vec::new(),
            members_left_out: 0,
        }
    }

    /// Whether `other` is one of this definition's members: named under it
    /// and inside its lines (a class bound twice has two sets of members).
    fn holds(&self, other: &Definition) -> bool {
        parent(&other.qualname) == Some(self.qualname.as_str())
            && (self.start_line..=self.end_line).contains(&other.start_line)
    }

    fn count(entries: &[Entry]) -> usize {
        entries
            .iter()
            .map(|e| 1 + e.members_left_out + Entry::count(&e.members))
            .sum()
    }

    fn write(&self, out: &mut String, depth: usize) {
        let _ = write!(out, "{}", "  ".repeat(depth));
        for decorator in &self.decorators {
            let _ = write!(out, "@{decorator} ");
        }
        let _ = write!(out, "{}  :{}", self.signature, self.start_line);
        if self.end_line > self.start_line {
            let _ = write!(out, "-{}", self.end_line);
        }
        if let Some(doc) = &self.docstring {
            let _ = write!(out, "  # {doc}");
        }
        if let Some(line) = self.redefined_at {
            let _ = write!(out, "  (redefined at :{line})");
        }
        if self.members_left_out > 0 {
            let _ = write!(out, "  ({} members left out)", self.members_left_out);
        }
        out.push('\n');
        for member in &self.members {
            member.write(out, depth + 1);
        }
    }
}

/// The qualified name a member is named under: `C` for `C.m`, `f` for
/// `f.<locals>.g`.
fn parent(qualname: &str) -> Option<&str> {
    let (parent, _) = qualname.rsplit_once('.')?;
    Some(parent.strip_suffix(".<locals>").unwrap_or(parent))
}

/// The definitions as a tree: sorted by line (a container before what it
/// holds), each nested under the open definition that holds it.
fn tree(definitions: &[Definition]) -> Vec<Entry> {
    let mut sorted: Vec<&Definition> = definitions.iter().collect();
    sorted.sort_by_key(|d| {
        (
            d.start_line,
            std::cmp::Reverse(d.end_line),
            d.qualname.matches('.').count(),
        )
    });
    let mut next_binding: HashMap<&str, u32> = HashMap::new();
    let mut redefined_at = vec![None; sorted.len()];
    for (index, d) in sorted.iter().enumerate().rev() {
        redefined_at[index] = next_binding.insert(d.qualname.as_str(), d.start_line);
    }
    let mut roots = Vec::new();
    // Open definitions, each a member of the one below it.
    let mut open: Vec<Entry> = Vec::new();
    for (d, redefined_at) in sorted.into_iter().zip(redefined_at) {
        while let Some(top) = open.last() {
            if top.holds(d) {
                break;
            }
            close(&mut open, &mut roots);
        }
        open.push(Entry::new(d, redefined_at));
    }
    while !open.is_empty() {
        close(&mut open, &mut roots);
    }
    roots
}

fn close(open: &mut Vec<Entry>, roots: &mut Vec<Entry>) {
    if let Some(entry) = open.pop() {
        match open.last_mut() {
            Some(holder) => holder.members.push(entry),
            None => roots.push(entry),
        }
    }
}

impl Outline {
    /// One line per definition, members indented under their class:
    /// `  @property def label(self)  :34-36  # The label.`
    pub fn to_text(&self) -> String {
        let mut out = self.file.clone();
        match &self.parse_error {
            Some(error) => {
                let _ = writeln!(out, ": does not parse ({error}), so it has no outline");
            }
            None => {
                let _ = writeln!(out, " ({} definitions)", self.total);
            }
        }
        for entry in &self.definitions {
            entry.write(&mut out, 0);
        }
        if let Some(truncated) = &self.truncated {
            let _ = writeln!(out, "... {truncated}");
        }
        out
    }

    /// Cuts the outline until `render` of it takes at most `budget` tokens:
    /// every top-level definition stays (as many as fit, if even they do
    /// not), and the members of as many classes as fit, in source order.
    pub fn fit(&mut self, budget: usize, render: impl Fn(&Outline) -> String) {
        let fits = |outline: &Outline| count_tokens(&render(outline)) <= budget;
        if fits(self) {
            return;
        }
        let mut held: Vec<(usize, Vec<Entry>)> = Vec::new();
        for (index, entry) in self.definitions.iter_mut().enumerate() {
            if !entry.members.is_empty() {
                let members = std::mem::take(&mut entry.members);
                entry.members_left_out = Entry::count(&members);
                held.push((index, members));
            }
        }
        self.note(budget, None);
        if !fits(self) {
            self.keep_top_level(budget, &fits);
            return;
        }
        // What each class's members add, measured on the class alone.
        let alone = |entry: &Entry| {
            count_tokens(&render(&Outline {
                file: String::new(),
                parse_error: None,
                definitions: vec![entry.clone()],
                total: 0,
                truncated: None,
            }))
        };
        let mut spent = count_tokens(&render(self));
        let mut expanded = Vec::new();
        for (index, members) in held {
            let entry = &mut self.definitions[index];
            let before = alone(entry);
            entry.members = members;
            entry.members_left_out = 0;
            let added = alone(entry).saturating_sub(before);
            if spent + added <= budget {
                spent += added;
                expanded.push(index);
            } else {
                entry.members_left_out = Entry::count(&entry.members);
                entry.members.clear();
            }
        }
        self.note(budget, None);
        // The estimate leaves out how the closing line changes.
        while !fits(self) {
            let Some(index) = expanded.pop() else { break };
            let entry = &mut self.definitions[index];
            entry.members_left_out = Entry::count(&entry.members);
            entry.members.clear();
            self.note(budget, None);
        }
    }

    /// Keeps the longest run of top-level definitions that fits.
    fn keep_top_level(&mut self, budget: usize, fits: &dyn Fn(&Outline) -> bool) {
        let all = std::mem::take(&mut self.definitions);
        let (mut low, mut high) = (0, all.len());
        while low < high {
            let middle = (low + high).div_ceil(2);
            self.definitions = all[..middle].to_vec();
            self.note(budget, all.get(middle));
            if fits(self) {
                low = middle;
            } else {
                high = middle - 1;
            }
        }
        self.definitions = all[..low].to_vec();
        self.note(budget, all.get(low));
    }

    /// Sets the closing line: whose members were left out, and from which
    /// top-level definition on (`rest`) the list stops.
    fn note(&mut self, budget: usize, rest: Option<&Entry>) {
        let collapsed: Vec<&str> = self
            .definitions
            .iter()
            .filter(|e| e.members_left_out > 0)
            .map(|e| e.qualname.as_str())
            .collect();
        let mut parts = Vec::new();
        if let Some(rest) = rest {
            parts.push(format!(
                "the definitions from line {} on are left out; read the file from there",
                rest.start_line
            ));
        }
        if !collapsed.is_empty() {
            let mut names = collapsed[..collapsed.len().min(NAMED_CLASSES)].join(", ");
            if collapsed.len() > NAMED_CLASSES {
                let _ = write!(names, " and {} more", collapsed.len() - NAMED_CLASSES);
            }
            parts.push(format!(
                "the members of {names} are left out; get_symbol on a class shows its source"
            ));
        }
        self.truncated = (!parts.is_empty()).then(|| {
            format!(
                "cut by the {budget}-token answer budget: {}",
                parts.join("; ")
            )
        });
    }
}

/// One definition's source, decorators and docstring included.
#[derive(Clone, Debug, Serialize)]
pub struct SymbolSource {
    /// `path::Qualified.name`.
    pub symbol: String,
    pub file: String,
    pub kind: DefinitionKind,
    /// The first decorator's line, else the `def`/`class` line.
    pub start_line: u32,
    pub end_line: u32,
    /// Lines of earlier bindings of the same name, which this one replaces.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub earlier_bindings: Vec<u32>,
    /// The lines shown, exactly as in the file.
    pub source: String,
    /// Set when the source was cut: which lines are shown, where the rest is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<String>,
}

impl SymbolSource {
    /// A header with the location, then the source as it stands in the file.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "{}  {}:{}-{}",
            self.symbol, self.file, self.start_line, self.end_line
        );
        if !self.earlier_bindings.is_empty() {
            let lines: Vec<String> = self
                .earlier_bindings
                .iter()
                .map(|l| format!(":{l}"))
                .collect();
            let _ = write!(out, "  (replaces the binding at {})", lines.join(", "));
        }
        out.push('\n');
        out.push_str(&self.source);
        if !self.source.is_empty() && !self.source.ends_with('\n') {
            out.push('\n');
        }
        if let Some(truncated) = &self.truncated {
            let _ = writeln!(out, "... {truncated}");
        }
        out
    }

    /// Cuts the source at a line boundary until the answer takes at most
    /// `budget` tokens, and says where the rest is.
    fn fit(&mut self, budget: usize) {
        let source = std::mem::take(&mut self.source);
        let lines: Vec<&str> = source.split_inclusive('\n').collect();
        let mut kept = lines.len();
        let cut = |this: &mut SymbolSource, kept: usize| {
            this.source = lines[..kept].concat();
            this.truncated = (kept < lines.len()).then(|| {
                let shown = match kept {
                    0 => "no lines shown".to_string(),
                    _ => format!(
                        "lines {}-{} of {}-{} shown",
                        this.start_line,
                        this.start_line as usize + kept - 1,
                        this.start_line,
                        this.end_line
                    ),
                };
                format!(
                    "{shown}, cut by the {budget}-token answer budget; the rest is at {}:{}",
                    this.file,
                    this.start_line as usize + kept
                )
            });
        };
        cut(self, kept);
        if count_tokens(&self.to_text()) <= budget {
            return;
        }
        // First guess: the lines that fit beside the header and closing line.
        cut(self, 0);
        let frame = count_tokens(&self.to_text());
        kept = super::text::lines_within(&source, budget.saturating_sub(frame))
            .split_inclusive('\n')
            .count();
        cut(self, kept);
        while kept > 0 && count_tokens(&self.to_text()) > budget {
            kept -= 1;
            cut(self, kept);
        }
    }
}

impl Service {
    /// The outline of `file`: every definition the front end records (module
    /// level and in classes; not those local to a function), members nested.
    pub fn outline(&self, file: &str) -> Result<Outline, PathError> {
        let file = self.resolve_file(file)?;
        let facts = self.engine.facts(&file);
        let parse_error = facts
            .and_then(|f| f.parse_error.as_ref())
            .map(|e| format!("line {}: {}", e.line, e.message));
        let definitions = facts.map(|f| tree(&f.definitions)).unwrap_or_default();
        Ok(Outline {
            file,
            parse_error,
            total: Entry::count(&definitions),
            definitions,
            truncated: None,
        })
    }

    /// The source of the definition `name` names (`path::Qualified.name`, a
    /// dotted name, or a name that only one definition in the project has,
    /// such as `retry` or `User.save`), cut to the answer budget.
    pub fn symbol_source(&self, name: &str) -> Result<SymbolSource, SymbolError> {
        let symbol = self.find_symbol(name)?;
        let bindings: Vec<&Definition> = self
            .engine
            .facts(&symbol.file)
            .map(|f| {
                f.definitions
                    .iter()
                    .filter(|d| d.qualname == symbol.qualname)
                    .collect()
            })
            .unwrap_or_default();
        // The last binding is the one the program resolves to.
        let Some((definition, earlier)) = bindings.split_last() else {
            return Err(SymbolError::Module(symbol.file));
        };
        let text = self
            .engine
            .text(&symbol.file)
            .ok_or_else(|| SymbolError::Changed(symbol.file.clone()))?;
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let start_line = decorated_start(&lines, definition);
        let first = (start_line as usize).saturating_sub(1);
        let last = (definition.end_line as usize).min(lines.len());
        let mut source = SymbolSource {
            symbol: symbol.display(),
            file: symbol.file.clone(),
            kind: definition.kind,
            start_line,
            end_line: definition.end_line,
            earlier_bindings: earlier.iter().map(|d| d.start_line).collect(),
            source: lines.get(first..last).unwrap_or_default().concat(),
            truncated: None,
        };
        source.fit(self.answer_token_limit());
        Ok(source)
    }

    /// The one definition whose qualified name is `name` or ends in
    /// `.name`: `None` when there is none, an error listing candidates when
    /// there are several.
    pub(super) fn unique_definition(&self, name: &str) -> Option<Result<Symbol, SymbolError>> {
        if name.is_empty() || name.contains("::") {
            return None;
        }
        let suffix = format!(".{name}");
        let mut found: Vec<Symbol> = Vec::new();
        for path in self.engine.paths() {
            let Some(facts) = self.engine.facts(path) else {
                continue;
            };
            for d in &facts.definitions {
                if d.qualname != name && !d.qualname.ends_with(&suffix) {
                    continue;
                }
                let symbol = Symbol {
                    file: path.to_string(),
                    qualname: d.qualname.to_string(),
                };
                // A name bound twice is one symbol.
                if !found.contains(&symbol) {
                    found.push(symbol);
                }
            }
        }
        found.sort();
        match found.len() {
            0 => None,
            1 => found.pop().map(Ok),
            total => {
                let mut candidates: Vec<String> =
                    found.iter().take(CANDIDATES).map(Symbol::display).collect();
                if total > CANDIDATES {
                    candidates.push(format!("and {} more", total - CANDIDATES));
                }
                Some(Err(SymbolError::Ambiguous {
                    name: name.to_string(),
                    total,
                    candidates: candidates.join(", "),
                }))
            }
        }
    }
}

/// The line of the first decorator above `definition`, whose facts give
/// the decorators' text but start at the `def`/`class` line: each decorator
/// starts with `@` at the indentation of the `def`, and only decorator
/// continuation lines and comments lie between. Falls back to the `def`
/// line when the decorators are not found where they must be.
fn decorated_start(lines: &[&str], definition: &Definition) -> u32 {
    let def_line = definition.start_line;
    let wanted = definition.decorators.len();
    let Some(header) = lines.get((def_line as usize).wrapping_sub(1)) else {
        return def_line;
    };
    let indent = |line: &str| line.len() - line.trim_start().len();
    let mut found = 0;
    let mut at = def_line as usize - 1;
    while found < wanted && at > 0 {
        at -= 1;
        let line = lines[at];
        if indent(line) == indent(header) && line.trim_start().starts_with('@') {
            found += 1;
        }
    }
    if found == wanted {
        at as u32 + 1
    } else {
        def_line
    }
}
