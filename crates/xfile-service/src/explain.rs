//! `explain 'Relation(args)'`: derivation trees of tuples, down to the base
//! facts and the source lines they come from, or why a tuple does not hold;
//! and explanation dumps of a file's (or the project's) derived tuples.
//! The engine retraces the rules ([`xfile_engine::explain`]); this module
//! renders its answers to paths, positions and source text.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use super::query::{self, QueryError};
use super::texts::Texts;
use xfile_engine::Engine;
use xfile_engine::datalog::{self, Node, RELATIONS, RelationKind, RuleInfo, Site, Value};
use xfile_engine::explain::{
    Derivation, Explainer, Fact, Failure, Miss, Premise, RED_ZONE, STACK_SEGMENT,
};
use xfile_engine::is_marker;
use xfile_workspace::config::CONFIG_FILE;

/// Base relations built from the configuration file rather than from a
/// source file (`engine::layers`): that file is their source.
const CONFIG_FACTS: &[&str] = &["InLayer", "LayerAbove"];

/// How many matching tuples one `explain` derives; the rest are counted.
const EXPLAIN_LIMIT: usize = 20;

/// The answer to one `explain` pattern.
#[derive(Clone, Debug, Serialize)]
pub struct Explanation {
    pub pattern: String,
    pub relation: &'static str,
    /// Whether any tuple matches the pattern.
    pub holds: bool,
    /// One tree per matching tuple (at most 20).
    pub derivations: Vec<Tree>,
    /// Matching tuples beyond those derived here.
    pub more: usize,
    /// When nothing matches: per rule, how far it got and what failed.
    pub misses: Vec<MissReport>,
    /// Constants of the pattern that name no known file, marker, name or
    /// position (when nothing matches): no tuple can hold them.
    pub unknown: Vec<String>,
}

/// One node of a derivation tree.
#[derive(Clone, Debug, Serialize)]
pub struct Tree {
    /// `Relation(arg, ...)` as `query` renders it; negated premises read
    /// `!Relation(...)`.
    pub fact: String,
    /// `derived`, `base`, or `absent` (a negated premise: no such tuple).
    pub kind: &'static str,
    /// A derived tuple whose derivation appears earlier in the same tree.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub see_above: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<RuleRef>,
    /// Where a base fact comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceRef>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub premises: Vec<Tree>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RuleRef {
    pub file: &'static str,
    pub line: usize,
    pub text: &'static str,
}

impl From<&'static RuleInfo> for RuleRef {
    fn from(rule: &'static RuleInfo) -> Self {
        RuleRef {
            file: rule.file,
            line: rule.line,
            text: rule.text,
        }
    }
}

/// A source location: a file, and where known a 1-based line, the column
/// and the line's text.
#[derive(Clone, Debug, Serialize)]
pub struct SourceRef {
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// Why one rule does not derive the asked tuple.
#[derive(Clone, Debug, Serialize)]
pub struct MissReport {
    /// `None` for a base relation: the front end produced no such fact.
    pub rule: Option<RuleRef>,
    /// The rule's variables bound when it got stuck, rendered.
    pub bindings: Vec<(String, serde_json::Value)>,
    /// Premises that held before the failing clause.
    pub satisfied: Vec<String>,
    /// The failing clause, instantiated.
    pub failed: String,
    /// Why it failed, in words.
    pub reason: String,
    /// Tuples that differ from the missing one in one argument: the import
    /// that exists but resolves elsewhere, and the like.
    pub near: Vec<String>,
    /// Why the missing premise, a derived tuple, does not hold in turn.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub because: Vec<MissReport>,
}

/// Renders engine answers for one engine state.
pub(crate) struct Renderer<'e> {
    engine: &'e Engine,
    explainer: Explainer<'e>,
    texts: Texts<'e>,
}

impl<'e> Renderer<'e> {
    pub(crate) fn new(engine: &'e Engine) -> Self {
        Renderer {
            engine,
            explainer: Explainer::new(engine.program(), engine.interner()),
            texts: Texts::new(engine),
        }
    }

    fn line_text(&self, file: &str, line: u32) -> Option<String> {
        self.texts.line(file, line, |text| text.trim().to_string())
    }

    fn fact(&self, relation: &str, values: &[Value]) -> String {
        let args: Vec<String> = query::render(self.engine, values)
            .iter()
            .map(query::value_text)
            .collect();
        format!("{relation}({})", args.join(", "))
    }

    /// A pattern with `_` where unbound.
    fn pattern(&self, relation: &str, pattern: &[Option<Value>]) -> String {
        // Render bound values in place; a site needs the node before it,
        // which a pattern binds whenever it binds the site.
        let bound: Vec<Value> = pattern.iter().flatten().copied().collect();
        let mut rendered = query::render(self.engine, &bound).into_iter();
        let args: Vec<String> = pattern
            .iter()
            .map(|v| match v {
                Some(_) => rendered
                    .next()
                    .map_or_else(|| "?".to_string(), |r| query::value_text(&r)),
                None => "_".to_string(),
            })
            .collect();
        format!("{relation}({})", args.join(", "))
    }

    /// Renders a derivation. A derived tuple whose derivation was already
    /// shown in this tree is shown once more without it (`see_above`):
    /// rules such as the cycle filters reuse the same premises many times.
    fn tree(&self, derivation: &Derivation, shown: &mut FxHashSet<Fact>) -> Tree {
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || {
            self.tree_on_stack(derivation, shown)
        })
    }

    fn tree_on_stack(&self, derivation: &Derivation, shown: &mut FxHashSet<Fact>) -> Tree {
        let Fact { relation, values } = &derivation.fact;
        let repeated = derivation.rule.is_some() && !shown.insert(derivation.fact.clone());
        Tree {
            fact: self.fact(relation, values),
            kind: if derivation.rule.is_some() {
                "derived"
            } else {
                "base"
            },
            see_above: repeated,
            rule: derivation.rule.filter(|_| !repeated).map(RuleRef::from),
            source: derivation
                .rule
                .is_none()
                .then(|| self.source(relation, values))
                .flatten(),
            premises: if repeated {
                Vec::new()
            } else {
                derivation
                    .premises
                    .iter()
                    .map(|p| match p {
                        Premise::Holds(d) => self.tree(d, shown),
                        Premise::Absent { relation, pattern } => Tree {
                            fact: format!("!{}", self.pattern(relation, pattern)),
                            kind: "absent",
                            see_above: false,
                            rule: None,
                            source: None,
                            premises: Vec::new(),
                        },
                    })
                    .collect()
            },
        }
    }

    /// Where a base tuple comes from: the configuration for configured
    /// facts; else its site if it has one (in the file named by the node
    /// before it), else the line that binds its name in its file, else its
    /// file.
    fn source(&self, relation: &str, values: &[Value]) -> Option<SourceRef> {
        if CONFIG_FACTS.contains(&relation) {
            return Some(SourceRef {
                file: CONFIG_FILE.to_string(),
                line: None,
                column: None,
                text: None,
            });
        }
        if matches!(relation, "EntryPointDecl" | "EntryPointTarget") {
            return self.entry_point(values);
        }
        if relation == "CycleGroup" {
            // Computed from the runtime import graph: the cycle itself is
            // the evidence.
            let file = values.first().and_then(|v| match *v {
                Value::Node(node) => project_file(self.engine, node),
                _ => None,
            })?;
            let cycle = self.engine.cycle_through(&file)?;
            return Some(SourceRef {
                text: Some(format!(
                    "import cycle {}",
                    super::warnings::shown_cycle(cycle).join(" -> ")
                )),
                file,
                line: None,
                column: None,
            });
        }
        let interner = self.engine.interner();
        let mut file: Option<String> = None;
        let mut name: Option<String> = None;
        for value in values {
            match *value {
                Value::Node(node) if file.is_none() => file = project_file(self.engine, node),
                Value::Site(site) => {
                    let path = file.clone()?;
                    return Some(self.at_site(path, site));
                }
                Value::Sym(sym) if name.is_none() => {
                    name = Some(interner.sym_text(sym).to_string())
                }
                _ => {}
            }
        }
        let file = file?;
        let line = name.and_then(|n| binding_line(self.engine, &file, &n));
        Some(SourceRef {
            text: line.and_then(|l| self.line_text(&file, l)),
            line,
            column: None,
            file,
        })
    }

    /// An entry point's declaration in its `pyproject.toml`: the facts
    /// start with the file, the group and the name.
    fn entry_point(&self, values: &[Value]) -> Option<SourceRef> {
        let interner = self.engine.interner();
        let text = |value: Option<&Value>| match value {
            Some(Value::Node(node)) => Some(interner.node_text(*node).to_string()),
            Some(Value::Sym(sym)) => Some(interner.sym_text(*sym).to_string()),
            _ => None,
        };
        let key = (
            text(values.first())?,
            text(values.get(1))?,
            text(values.get(2))?,
        );
        let spec = self
            .engine
            .entry_points()
            .iter()
            .find(|s| (&s.pyproject, &s.group, &s.name) == (&key.0, &key.1, &key.2))?;
        Some(SourceRef {
            file: spec.pyproject.clone(),
            line: Some(spec.line),
            column: None,
            text: Some(spec.text.clone()),
        })
    }

    fn at_site(&self, file: String, site: Site) -> SourceRef {
        let position = self
            .engine
            .facts(&file)
            .and_then(|f| f.sites.get(site.0 as usize).copied());
        SourceRef {
            line: position.map(|p| p.line),
            column: position.map(|p| p.column),
            text: position.and_then(|p| self.line_text(&file, p.line)),
            file,
        }
    }

    fn miss(&self, miss: &Miss) -> MissReport {
        let (failed, reason, near) = match &miss.failed {
            Failure::Missing {
                relation,
                pattern,
                near,
            } => (
                self.pattern(relation, pattern),
                if near.is_empty() {
                    "no such tuple".to_string()
                } else {
                    "no such tuple; these differ in one argument".to_string()
                },
                near.iter()
                    .map(|f| self.fact(f.relation, &f.values))
                    .collect(),
            ),
            Failure::Present(fact) => (
                format!("!{}", self.fact(fact.relation, &fact.values)),
                "the rule requires this tuple to be absent, and it holds".to_string(),
                Vec::new(),
            ),
            Failure::Guard(text) => (
                text.to_string(),
                "the condition is false for these bindings".to_string(),
                Vec::new(),
            ),
            Failure::Head => (
                String::new(),
                "the rule's head cannot take these values".to_string(),
                Vec::new(),
            ),
        };
        MissReport {
            rule: miss.rule.map(RuleRef::from),
            // A site alone renders to nothing readable; the satisfied
            // premises show it in its file.
            bindings: miss
                .bindings
                .iter()
                .filter(|(_, value)| !matches!(value, Value::Site(_)))
                .map(|(name, value)| {
                    let rendered = query::render(self.engine, &[*value]);
                    (
                        name.to_string(),
                        rendered.into_iter().next().unwrap_or_default(),
                    )
                })
                .collect(),
            satisfied: miss
                .satisfied
                .iter()
                .map(|f| self.fact(f.relation, &f.values))
                .collect(),
            failed,
            reason,
            near,
            because: miss.deeper.iter().map(|m| self.miss(m)).collect(),
        }
    }

    /// The derivation of one tuple known to hold.
    pub(crate) fn derive(&self, relation: &'static str, values: Vec<Value>) -> Option<Tree> {
        let derivation = self.explainer.derive(&Fact { relation, values })?;
        Some(self.tree(&derivation, &mut FxHashSet::default()))
    }

    /// The pattern's constants as engine values; the ones that name
    /// nothing known are returned apart.
    fn constants(
        &self,
        relation: &datalog::RelationInfo,
        args: &[Option<String>],
    ) -> (Vec<Option<Value>>, Vec<String>, bool) {
        let interner = self.engine.interner();
        let mut unknown = Vec::new();
        let mut ambiguous = false;
        let mut file: Option<String> = None;
        let mut values = Vec::new();
        for (ty, arg) in relation.types.iter().zip(args) {
            let Some(text) = arg else {
                values.push(None);
                continue;
            };
            let value = match *ty {
                "Node" => {
                    file = Some(text.clone());
                    interner.find_node(text).map(Value::Node)
                }
                "Sym" => interner.find_sym(text).map(Value::Sym),
                "Pattern" => datalog::Pattern::from_name(text).map(Value::Pattern),
                _ => file.as_deref().and_then(|f| {
                    let (site, several) = find_site(self.engine, f, text)?;
                    ambiguous |= several;
                    Some(site)
                }),
            };
            if value.is_none() {
                unknown.push(text.clone());
            }
            values.push(value);
        }
        (values, unknown, ambiguous)
    }
}

fn project_file(engine: &Engine, node: Node) -> Option<String> {
    let text = engine.interner().node_text(node);
    (!is_marker(&text) && engine.contains(&text)).then(|| text.to_string())
}

/// The last line of `file` where a module-level statement defines or
/// imports `name`.
fn binding_line(engine: &Engine, file: &str, name: &str) -> Option<u32> {
    let facts = engine.facts(file)?;
    let defined = facts
        .definitions
        .iter()
        .filter(|d| d.qualname == name)
        .map(|d| d.start_line)
        .next_back();
    let imported = facts
        .semantic
        .imports
        .iter()
        .filter(|i| i.bound_name() == Some(name))
        .filter_map(|i| facts.sites.get(i.site as usize).map(|s| s.line))
        .next_back();
    defined.max(imported)
}

/// The site of `file` at `line:column`, if exactly one site is there.
/// The site of `file` at `position` (`line:column`), and whether several
/// sites share that position.
fn find_site(engine: &Engine, file: &str, position: &str) -> Option<(Value, bool)> {
    let (line, column) = position.split_once(':')?;
    let (line, column): (u32, u32) = (line.trim().parse().ok()?, column.trim().parse().ok()?);
    let facts = engine.facts(file)?;
    // Several facts can start at one position (a call that is also a
    // dynamic pattern), each with its own site; the last one recorded is
    // the most specific (the front end records a call before what it finds
    // inside it).
    let at = |s: &&xfile_python::Site| s.line == line && s.column == column;
    let index = facts.sites.iter().rposition(|s| at(&s))?;
    let several = facts.sites.iter().filter(at).count() > 1;
    Some((Value::Site(Site(u32::try_from(index).ok()?)), several))
}

/// Orders tuples by their rendering: ids follow interning order, which
/// varies between runs on large projects, and answers should not.
fn sort_by_text(engine: &Engine, tuples: &mut [Vec<Value>]) {
    if tuples.len() > 1 {
        tuples.sort_by_cached_key(|values| text_key(engine, values));
    }
}

/// Paths and names by text, sites by source order.
fn text_key(engine: &Engine, values: &[Value]) -> Vec<(u32, std::sync::Arc<str>)> {
    let interner = engine.interner();
    values
        .iter()
        .map(|value| match *value {
            Value::Node(node) => (0, interner.node_text(node)),
            Value::Sym(sym) => (0, interner.sym_text(sym)),
            Value::Pattern(pattern) => (0, std::sync::Arc::from(pattern.as_str())),
            Value::Site(site) => (site.0, std::sync::Arc::from("")),
        })
        .collect()
}

/// Explains the tuples that match `pattern`, or why none does.
pub fn explain(engine: &Engine, pattern: &str) -> Result<Explanation, QueryError> {
    let (relation, args) = query::resolve(pattern)?;
    let renderer = Renderer::new(engine);
    let (values, unknown, ambiguous) = renderer.constants(relation, &args);
    // With every constant known, the engine's indexed lookup finds the
    // tuples; otherwise (a site without its file, or a position several
    // sites share) match renderings, as `query` does.
    let matching: Vec<Vec<Value>> = if unknown.is_empty() && !ambiguous {
        renderer
            .explainer
            .matching(relation.name, &values)
            .into_iter()
            .map(|fact| fact.values)
            .collect()
    } else {
        query::select(engine, relation, &args)
            .into_iter()
            .map(|(values, _)| values)
            .collect()
    };
    let mut matching = matching;
    sort_by_text(engine, &mut matching);
    let more = matching.len().saturating_sub(EXPLAIN_LIMIT);
    let derivations: Vec<Tree> = matching
        .into_iter()
        .take(EXPLAIN_LIMIT)
        .filter_map(|values| renderer.derive(relation.name, values))
        .collect();
    let (misses, unknown) = if derivations.is_empty() {
        let misses = if unknown.is_empty() {
            renderer
                .explainer
                .why_not(relation.name, &values)
                .iter()
                .map(|m| renderer.miss(m))
                .collect()
        } else {
            Vec::new()
        };
        (misses, unknown)
    } else {
        (Vec::new(), Vec::new())
    };
    Ok(Explanation {
        pattern: pattern.trim().to_string(),
        relation: relation.name,
        holds: !derivations.is_empty(),
        derivations,
        more,
        misses,
        unknown,
    })
}

impl Explanation {
    /// The readable form: one indented tree per tuple, or the misses.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for tree in &self.derivations {
            write_tree(&mut out, tree, 0);
            out.push('\n');
        }
        if self.more > 0 {
            let _ = writeln!(
                out,
                "... and {} more matching tuples; narrow the pattern to see them.",
                self.more
            );
        }
        if self.holds {
            return out;
        }
        let _ = writeln!(out, "{} does not hold.", self.pattern);
        for text in &self.unknown {
            let _ = writeln!(
                out,
                "  `{text}` names no indexed file, marker, name or position, so no tuple can hold it."
            );
        }
        if self.misses.is_empty() && self.unknown.is_empty() {
            let _ = writeln!(out, "  No rule derives {}.", self.relation);
        }
        for miss in &self.misses {
            write_miss(&mut out, miss, 1);
        }
        out
    }
}

fn write_tree(out: &mut String, node: &Tree, depth: usize) {
    stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || {
        write_tree_on_stack(out, node, depth)
    })
}

fn write_tree_on_stack(out: &mut String, node: &Tree, depth: usize) {
    let indent = "  ".repeat(depth);
    if node.see_above {
        let _ = writeln!(out, "{indent}{}  [see above]", node.fact);
        return;
    }
    let _ = writeln!(out, "{indent}{}", node.fact);
    if let Some(rule) = &node.rule {
        let _ = writeln!(
            out,
            "{indent}  [rule {}:{}] {}",
            rule.file, rule.line, rule.text
        );
    }
    match (&node.source, node.kind) {
        (Some(source), _) => {
            let mut at = source.file.clone();
            if let Some(line) = source.line {
                let _ = write!(at, ":{line}");
            }
            if let Some(column) = source.column {
                let _ = write!(at, ":{column}");
            }
            match &source.text {
                Some(text) => {
                    let _ = writeln!(out, "{indent}  [base {at}] {text}");
                }
                None => {
                    let _ = writeln!(out, "{indent}  [base {at}]");
                }
            }
        }
        (None, "base") => {
            let _ = writeln!(out, "{indent}  [base]");
        }
        (None, "absent") => {
            let _ = writeln!(out, "{indent}  [absent]");
        }
        _ => {}
    }
    for premise in &node.premises {
        write_tree(out, premise, depth + 1);
    }
}

fn write_miss(out: &mut String, miss: &MissReport, depth: usize) {
    let indent = "    ".repeat(depth - 1);
    match &miss.rule {
        Some(rule) => {
            let _ = writeln!(
                out,
                "{indent}  [rule {}:{}] {}",
                rule.file, rule.line, rule.text
            );
        }
        None => {
            let _ = writeln!(out, "{indent}  [base] the front end produced no such fact");
        }
    }
    if !miss.bindings.is_empty() {
        let bindings: Vec<String> = miss
            .bindings
            .iter()
            .map(|(name, value)| format!("{name} = {}", query::value_text(value)))
            .collect();
        let _ = writeln!(out, "{indent}    with {}", bindings.join(", "));
    }
    for fact in &miss.satisfied {
        let _ = writeln!(out, "{indent}    holds: {fact}");
    }
    if miss.failed.is_empty() {
        let _ = writeln!(out, "{indent}    fails: {}", miss.reason);
    } else {
        let _ = writeln!(out, "{indent}    fails: {}: {}", miss.failed, miss.reason);
    }
    for fact in &miss.near {
        let _ = writeln!(out, "{indent}      near: {fact}");
    }
    for deeper in &miss.because {
        write_miss(out, deeper, depth + 1);
    }
}

/// What `explain --dump` wrote.
#[derive(Clone, Debug, Serialize)]
pub struct DumpSummary {
    pub directory: String,
    pub files: usize,
    pub tuples: usize,
}

/// One file's dump. Sections are top-level keys, so another kind of
/// explanation (recomputation traces, say) is one more field.
#[derive(Clone, Debug, Serialize)]
pub struct FileDump {
    pub file: String,
    /// Every tuple of every `@output` relation whose first argument is the
    /// file, with its derivation.
    pub derivations: Vec<Tree>,
}

impl FileDump {
    pub fn to_text(&self) -> String {
        let mut out = format!("# {}\n\n## Derivations\n\n", self.file);
        for tree in &self.derivations {
            write_tree(&mut out, tree, 0);
            out.push('\n');
        }
        out
    }
}

/// The explanation dump of some files, rendered and written one file at a
/// time so a whole project's dump never sits in memory at once.
pub struct Dump<'e> {
    renderer: Renderer<'e>,
    /// Per file, its @output tuples in catalogue order, then text order.
    files: Vec<(String, Vec<Tuple>)>,
}

/// A tuple with its relation's name.
type Tuple = (&'static str, Vec<Value>);

/// The dump of `files` (root-relative paths).
pub fn dump<'e>(engine: &'e Engine, files: Vec<String>) -> Dump<'e> {
    let outputs = engine.outputs();
    // Every @output tuple by its first argument, in catalogue order.
    let mut by_first: FxHashMap<Value, Vec<Tuple>> = FxHashMap::default();
    for relation in RELATIONS.iter().filter(|r| r.kind == RelationKind::Output) {
        for tuple in outputs.tuples(relation.name).unwrap_or_default() {
            if let Some(first) = tuple.first() {
                by_first
                    .entry(*first)
                    .or_default()
                    .push((relation.name, tuple));
            }
        }
    }
    let order: FxHashMap<&str, usize> = RELATIONS
        .iter()
        .enumerate()
        .map(|(i, r)| (r.name, i))
        .collect();
    let files = files
        .into_iter()
        .map(|file| {
            let mut tuples = engine
                .interner()
                .find_node(&file)
                .and_then(|node| by_first.remove(&Value::Node(node)))
                .unwrap_or_default();
            tuples.sort_by_cached_key(|(relation, values)| {
                (order.get(relation).copied(), text_key(engine, values))
            });
            (file, tuples)
        })
        .collect();
    Dump {
        renderer: Renderer::new(engine),
        files,
    }
}

impl Dump<'_> {
    /// Each file's dump, derived when asked for.
    pub fn file_dumps(&self) -> impl Iterator<Item = FileDump> + '_ {
        self.files.iter().map(|(file, tuples)| FileDump {
            file: file.clone(),
            derivations: tuples
                .iter()
                .filter_map(|(relation, values)| self.renderer.derive(relation, values.clone()))
                .collect(),
        })
    }

    /// Writes `<dir>/<file>.txt` and `<dir>/<file>.json` per file.
    pub fn write(&self, dir: &Path) -> std::io::Result<DumpSummary> {
        let mut summary = DumpSummary {
            directory: dir.display().to_string(),
            files: 0,
            tuples: 0,
        };
        for dump in self.file_dumps() {
            let base: PathBuf = dir.join(&dump.file);
            if let Some(parent) = base.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let json = serde_json::to_string_pretty(&dump).map_err(std::io::Error::other)?;
            std::fs::write(with_suffix(&base, ".json"), json + "\n")?;
            std::fs::write(with_suffix(&base, ".txt"), dump.to_text())?;
            summary.files += 1;
            summary.tuples += dump.derivations.len();
        }
        Ok(summary)
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}
