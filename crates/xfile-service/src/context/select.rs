//! What a file (or a line range of it) uses from other project files, as
//! definitions in priority order: the base classes of its classes first,
//! then by score (how many uses the read lines make of it, times the
//! ranking boosts: recently changed files, the reader's own package,
//! files the session reads often), then widely used definitions, imports
//! before calls before inheritance, and first use.
//!
//! A use is a call, an import, a base, or an attribute read without a
//! call: a module's (`models.CASCADE`), or a member that is code
//! (`partial(self.clean)`, a property) rather than an attribute's value.
//!
//! Class members come with their class: a method the reader calls or
//! reads on `self`, on an instance or through `super()`, or overrides, is
//! listed under the class the reader names whose method resolution order
//! reaches it. A member no such class reaches stands on its own.

use std::collections::{HashMap, HashSet};

use super::super::Service;
use super::super::model::{Relationship, RelationshipType};
use super::super::ranking::{Accesses, Boosts};
use super::builtin_members::BUILTIN_MEMBERS;
use super::defs::Definitions;
use xfile_engine::{ImportedName, is_marker};
use xfile_python::{DefinitionKind, ImportTarget, ModuleFacts};

/// Lines `start..=end` of the read file (1-based), or all of it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Lines {
    pub start: u32,
    pub end: u32,
    /// Every line of the file (no range was asked for, or it spans all).
    pub whole: bool,
}

impl Lines {
    pub(super) fn contains(self, line: u32) -> bool {
        (self.start..=self.end).contains(&line)
    }
}

/// A member of a used class, as the reader reaches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Member {
    pub file: String,
    /// Qualified name: `FormMixin.get_form`.
    pub qualname: String,
}

/// One definition of another file that the reader uses.
#[derive(Debug)]
pub(super) struct Used {
    pub file: String,
    pub symbol: String,
    pub first_line: u32,
    /// How many uses in the read lines point at it (its members' included).
    pub uses: u32,
    /// A base class of a class in the read lines.
    pub base: bool,
    /// How the reader first meets it: import before call before inheritance.
    pub kind: RelationshipType,
    /// For a class: the members the reader uses, in first-use order.
    pub members: Vec<Member>,
    pub certainty: Certainty,
}

impl Used {
    /// A definition first used at `first_line`, once, with no members yet.
    pub(super) fn new(
        file: String,
        symbol: String,
        first_line: u32,
        kind: RelationshipType,
        certainty: Certainty,
    ) -> Used {
        Used {
            file,
            symbol,
            first_line,
            uses: 1,
            base: false,
            kind,
            members: Vec::new(),
            certainty,
        }
    }
}

/// How sure the context is that the lines use a definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Certainty {
    /// Resolution found it.
    Certain,
    /// One of the definitions a name may be bound to: the module it is
    /// imported from binds it under a condition (`try`/`except
    /// ImportError`, `if`), and the program decides which when it runs.
    Conditional,
    /// Found by its name alone: a member the lines use on a value whose
    /// class is not known, and one of the few project definitions with
    /// that name.
    Guessed,
}

/// The definitions `path` uses in `lines`, most useful first, and the
/// relationships of those lines.
pub(super) fn used_definitions(
    service: &Service,
    definitions: &Definitions,
    path: &str,
    lines: Lines,
    accesses: &Accesses,
) -> (Vec<Used>, Vec<Relationship>) {
    let engine = service.engine();
    let relationships: Vec<Relationship> = service
        .dependencies_of(path)
        .into_iter()
        .filter(|r| lines.contains(r.line_number))
        .collect();
    let mut uses: Vec<Use> = relationships.iter().filter_map(Use::of).collect();
    let text = engine.text(path).unwrap_or_default();
    let names = Names::of(&text, lines);
    // The names the file imports from the project, for both the names the
    // lines use and what a guess leaves out.
    let imported = engine.imported_names(path);
    // Names bound by `import *`, or (for a line range) by imports above
    // the range, are found by their uses in the lines.
    if !lines.whole
        || relationships
            .iter()
            .any(|r| r.metadata.wildcard == Some(true))
    {
        uses.extend(names_used(&imported, &names));
    }
    // A module's attributes read without a call (`models.CASCADE`).
    uses.extend(
        engine
            .attribute_reads(path)
            .into_iter()
            .filter(|r| lines.contains(r.line) && r.file != path)
            .map(|r| Use {
                file: r.file,
                symbol: r.symbol,
                line: r.line,
                kind: RelationshipType::Import,
                base: false,
            }),
    );
    let mut members: Vec<(u32, Member)> = engine
        .member_uses(path)
        .into_iter()
        .filter(|m| lines.contains(m.line) && m.file != path)
        // A member only read counts when it is code (a method, property
        // or class: `partial(self.clean)`), not an attribute's value.
        .filter(|m| !m.read || is_code(definitions, &m.file, &m.member))
        .map(|m| {
            let member = Member {
                file: m.file,
                qualname: m.member,
            };
            (m.line, member)
        })
        .collect();
    if let Some(facts) = engine.facts(path) {
        members.extend(overrides(service, definitions, path, facts, lines));
    }

    let mut found = Found::default();
    for u in uses {
        // Module-level names have no dot; members (`Model.save`) do.
        if u.symbol.contains('.') {
            let member = Member {
                file: u.file,
                qualname: u.symbol,
            };
            members.push((u.line, member));
        } else {
            found.add(u);
        }
    }
    members.sort_by_key(|(line, _)| *line);
    // Only classes have an order for members to be found along.
    let orders: Vec<Vec<(String, String)>> = found
        .items
        .iter()
        .map(|u| match definitions.get(&u.file, &u.symbol) {
            Some(d) if d.kind == DefinitionKind::Class => engine.mro(&u.file, &u.symbol),
            _ => Vec::new(),
        })
        .collect();
    for (line, member) in members {
        let Some((owner, _)) = member.qualname.rsplit_once('.') else {
            continue;
        };
        let class = orders
            .iter()
            .position(|order| order.iter().any(|(f, c)| *f == member.file && c == owner));
        match class {
            Some(index) => {
                let item = &mut found.items[index];
                item.uses += 1;
                if !item.members.contains(&member) {
                    item.members.push(member);
                }
            }
            None => found.add(Use {
                file: member.file,
                symbol: member.qualname,
                line,
                kind: RelationshipType::FunctionCall,
                base: false,
            }),
        }
    }

    let threshold =
        usize::try_from(service.config().function_usage_warning_threshold).unwrap_or(usize::MAX);
    let boosts = Boosts::new(service, Some(path), accesses);
    let mut items: Vec<(f64, bool, Used)> = found
        .items
        .into_iter()
        .map(|u| {
            let what = format!("{}::{}", u.file, u.symbol);
            let score = boosts.score(&what, &u.file, f64::from(u.uses));
            let widely_used = service.usage_count(&u.file, &u.symbol) >= threshold;
            (score, widely_used, u)
        })
        .collect();
    items.sort_by(|(a_score, a_wide, a), (b_score, b_wide, b)| {
        b.base
            .cmp(&a.base)
            .then_with(|| b_score.total_cmp(a_score))
            .then_with(|| b_wide.cmp(a_wide))
            .then_with(|| a.kind.cmp(&b.kind))
            .then_with(|| a.first_line.cmp(&b.first_line))
    });
    let mut used: Vec<Used> = items.into_iter().map(|(_, _, u)| u).collect();
    // Last, and only where nothing certain was found for the name.
    let known: HashSet<&str> = used
        .iter()
        .flat_map(|u| {
            std::iter::once(u.symbol.as_str()).chain(u.members.iter().map(|m| m.qualname.as_str()))
        })
        .map(last_name)
        .collect();
    // A guess stands apart even when its class is in the section: listed
    // among the class's members it would read as certain.
    let guessed = guessed_members(service, path, &names, &imported, &known);
    used.extend(conditional_names(engine, path, &names));
    used.extend(guessed);
    (used, relationships)
}

/// Whether `symbol` of `file` is a function, method (property included)
/// or class.
fn is_code(definitions: &Definitions, file: &str, symbol: &str) -> bool {
    definitions
        .get(file, symbol)
        .is_some_and(|d| d.kind != DefinitionKind::Variable)
}

/// One use of a definition of another file, before grouping.
struct Use {
    file: String,
    symbol: String,
    line: u32,
    kind: RelationshipType,
    base: bool,
}

impl Use {
    /// The definition a relationship reaches, if it is one (an import of
    /// a module is not).
    fn of(r: &Relationship) -> Option<Use> {
        let (file, symbol) = match r.relationship_type {
            RelationshipType::Import => (r.metadata.defined_in.clone()?, r.target_symbol.clone()?),
            _ => (r.target_file.clone(), r.target_symbol.clone()?),
        };
        if is_marker(&file) || file == r.source_file {
            return None;
        }
        Some(Use {
            file,
            symbol,
            line: r.line_number,
            kind: r.relationship_type,
            base: r.relationship_type == RelationshipType::Inheritance,
        })
    }
}

/// The used definitions, each once, in first-seen order.
#[derive(Default)]
struct Found {
    items: Vec<Used>,
    index: HashMap<(String, String), usize>,
}

impl Found {
    fn add(&mut self, u: Use) {
        match self.index.get(&(u.file.clone(), u.symbol.clone())) {
            Some(&i) => {
                let item = &mut self.items[i];
                item.uses += 1;
                item.base |= u.base;
                item.kind = item.kind.min(u.kind);
                item.first_line = item.first_line.min(u.line);
            }
            None => {
                self.index
                    .insert((u.file.clone(), u.symbol.clone()), self.items.len());
                self.items.push(Used {
                    base: u.base,
                    ..Used::new(u.file, u.symbol, u.line, u.kind, Certainty::Certain)
                });
            }
        }
    }
}

/// The imported names (from another file, directly or through `import *`)
/// that the read lines mention, at their first mention: a star import
/// expands to the explicit names the file uses, and a range read sees
/// the names its imports bind above it.
fn names_used(imported: &[ImportedName], names: &Names) -> Vec<Use> {
    if imported.is_empty() {
        return Vec::new();
    }
    let first_use = names.first_uses();
    imported
        .iter()
        .filter_map(|n| {
            let line = *first_use.get(n.name.as_str())?;
            Some(Use {
                file: n.file.clone(),
                symbol: n.symbol.clone(),
                line,
                kind: RelationshipType::Import,
                base: false,
            })
        })
        .collect()
}

/// The methods and attributes classes of `path` define that a class
/// further along their method resolution order, in another file, also
/// defines: what an override must stay compatible with.
fn overrides(
    service: &Service,
    definitions: &Definitions,
    path: &str,
    facts: &ModuleFacts,
    lines: Lines,
) -> Vec<(u32, Member)> {
    let engine = service.engine();
    let mut found = Vec::new();
    for class in &facts.semantic.classes {
        let own: Vec<(&str, u32)> = class
            .members
            .iter()
            .filter_map(|name| {
                let qualname = format!("{}.{name}", class.qualname);
                let definition = definitions.get(path, &qualname)?;
                let callable = matches!(
                    definition.kind,
                    DefinitionKind::Method
                        | DefinitionKind::Function
                        | DefinitionKind::AsyncFunction
                );
                (callable && lines.contains(definition.start_line))
                    .then_some((name.as_str(), definition.start_line))
            })
            .collect();
        if own.is_empty() {
            continue;
        }
        let order = engine.mro(path, &class.qualname);
        for (name, line) in own {
            let inherited = order.iter().skip(1).find_map(|(file, base)| {
                let qualname = format!("{base}.{name}");
                definitions.get(file, &qualname).map(|_| Member {
                    file: file.clone(),
                    qualname,
                })
            });
            if let Some(member) = inherited.filter(|m| m.file != path) {
                found.push((line, member));
            }
        }
    }
    found
}

/// The names in a file's text (`Name` tokens), with their lines, and the
/// lines read.
pub(super) struct Names<'t> {
    text: &'t str,
    lines: Lines,
    all: Vec<NameAt<'t>>,
}

#[derive(Clone, Copy)]
pub(super) struct NameAt<'t> {
    text: &'t str,
    line: u32,
    /// Byte offset of its first character in the file.
    start: usize,
}

impl<'t> Names<'t> {
    fn of(text: &'t str, lines: Lines) -> Self {
        let newlines: Vec<usize> = text.match_indices('\n').map(|(offset, _)| offset).collect();
        let all = xfile_python::name_ranges(text)
            .into_iter()
            .filter_map(|range| {
                let line = u32::try_from(newlines.partition_point(|&n| n < range.start) + 1)
                    .unwrap_or(u32::MAX);
                Some(NameAt {
                    start: range.start,
                    text: text.get(range)?,
                    line,
                })
            })
            .collect();
        Names { text, lines, all }
    }

    fn in_lines(&self) -> impl Iterator<Item = NameAt<'t>> + '_ {
        let lines = self.lines;
        self.all
            .iter()
            .copied()
            .filter(move |n| lines.contains(n.line))
    }

    /// The line of each name's first use in the lines as a name of its
    /// own: `x.User` is some value's attribute, not the name `User`.
    fn first_uses(&self) -> HashMap<&'t str, u32> {
        let mut first: HashMap<&str, u32> = HashMap::new();
        for name in self.in_lines() {
            if !self.before(name).ends_with('.') {
                first.entry(name.text).or_insert(name.line);
            }
        }
        first
    }

    /// Whether `name` is on a line that starts an import statement (the
    /// dotted module names there are no attributes).
    fn in_import(&self, name: NameAt) -> bool {
        let start = self.text[..name.start].rfind('\n').map_or(0, |i| i + 1);
        let line = self.text[start..].trim_start();
        line.starts_with("from ") || line.starts_with("import ")
    }

    /// The text before `name` on its line, without the blanks between (a
    /// chain continued on the next line inside brackets starts that line
    /// with its `.`).
    fn before(&self, name: NameAt) -> &'t str {
        self.text[..name.start].trim_end_matches([' ', '\t'])
    }

    /// Whether `name` is called: `(` follows it on its line.
    fn called(&self, name: NameAt) -> bool {
        self.text[name.start + name.text.len()..]
            .trim_start_matches([' ', '\t'])
            .starts_with('(')
    }
}

/// At most this many unrelated project definitions of a name make a
/// guess: more say nothing about which one the value has. Overrides of a
/// guessed method are no rivals: the method they override is the guess.
const GUESSES: usize = 2;

/// Names with more definitions than this are not looked at for overrides
/// (each costs a method resolution order).
const OVERRIDES: usize = 8;

/// Names shorter than this (`d`, `f`, `i` of a date format) are too
/// common to guess from.
const SHORTEST: usize = 3;

/// Methods the lines call (`request.is_secure()`) on a value whose class
/// nothing tells, with a name that at most [`GUESSES`] members of project
/// classes of its sub-project (tests aside) have, overrides aside, and all
/// of them methods: each of those, marked as a guess, first use first.
/// Only calls: an attribute read (`request.session`) is as likely set from
/// outside the class, where no definition shows it. Left out: names
/// something certain in the lines has (`known`), dunder and very short
/// names, the names of builtin and everyday standard library types'
/// members (`get`, `join`, `write`),
/// names the read file defines itself, calls on `self`, `cls` and
/// `super()` (whose classes are known), and attributes of a name bound to
/// something outside the project (`os.path.join`).
fn guessed_members(
    service: &Service,
    path: &str,
    names: &Names,
    imported: &[ImportedName],
    known: &HashSet<&str>,
) -> Vec<Used> {
    let engine = service.engine();
    let Some(facts) = engine.facts(path) else {
        return Vec::new();
    };
    // Names bound to something outside the project (`os`, `json`): their
    // attributes are that library's. A chain from a project name that
    // resolution could not follow (`ContentType.objects.db_manager()`,
    // through a base made by a call) may still be guessed.
    let project: HashSet<&str> = imported
        .iter()
        .map(|n| n.name.as_str())
        .chain(
            facts
                .definitions
                .iter()
                .filter(|d| !d.qualname.contains('.'))
                .map(|d| d.qualname.as_str()),
        )
        .collect();
    let outside: HashSet<&str> = bound_names(facts)
        .into_iter()
        .filter(|name| !project.contains(*name))
        .collect();
    let own: HashSet<&str> = facts
        .definitions
        .iter()
        .map(|d| last_name(&d.qualname))
        .collect();
    let mut wanted: HashMap<&str, u32> = HashMap::new();
    for name in names.in_lines() {
        let Some(receiver) = names.before(name).strip_suffix('.') else {
            continue;
        };
        let chain = chain_before(receiver);
        let head = chain.split('.').next().unwrap_or_default();
        if !names.called(name)
            || name.text.len() < SHORTEST
            || name.text.starts_with("__")
            || known.contains(name.text)
            || own.contains(name.text)
            || BUILTIN_MEMBERS.binary_search(&name.text).is_ok()
            || outside.contains(head)
            // The receiver's own class and `super()` are known: what they
            // do not find is outside the project.
            || matches!(chain, "self" | "cls")
            || receiver.ends_with("super()")
            || names.in_import(name)
        {
            continue;
        }
        wanted.entry(name.text).or_insert(name.line);
    }
    if wanted.is_empty() {
        return Vec::new();
    }
    // Every member of that name, methods or not: `response.headers`
    // guesses nothing when one class has a `headers` method and another
    // sets `self.headers`.
    let mut found: HashMap<&str, Vec<(&str, &str, DefinitionKind)>> = HashMap::new();
    // Only the reader's own sub-project: a copy of a class in another one
    // is a namesake, not a second candidate.
    let sub_projects = engine.sub_projects();
    let own_project = sub_project_of(sub_projects, path);
    for file in engine.paths() {
        if file == path
            || engine.is_test_module(file)
            || sub_project_of(sub_projects, file) != own_project
        {
            continue;
        }
        let Some(facts) = engine.facts(file) else {
            continue;
        };
        for d in &facts.definitions {
            let Some((owner, name)) = d.qualname.rsplit_once('.') else {
                continue;
            };
            if owner.contains("<locals>") {
                continue;
            }
            if let Some((&name, _)) = wanted.get_key_value(name) {
                let at = found.entry(name).or_default();
                // A property's getter and setter are one member.
                if !at.iter().any(|&(f, q, _)| f == file && q == d.qualname) {
                    at.push((file, d.qualname.as_str(), d.kind));
                }
            }
        }
    }
    let mut guessed: Vec<Used> = found
        .into_iter()
        .filter(|(_, at)| at.len() <= OVERRIDES && at.iter().all(|a| a.2 == DefinitionKind::Method))
        .map(|(name, at)| (name, roots(engine, at)))
        .filter(|(_, roots)| roots.len() <= GUESSES)
        .flat_map(|(name, at)| {
            let line = wanted[name];
            at.into_iter().map(move |(file, qualname, _)| {
                Used::new(
                    file.to_string(),
                    qualname.to_string(),
                    line,
                    RelationshipType::FunctionCall,
                    Certainty::Guessed,
                )
            })
        })
        .collect();
    by_first_use(&mut guessed);
    guessed
}

/// The definitions of a method name no other of them overrides: the one
/// method of a hierarchy whatever subclass the value is (its contract),
/// one per unrelated hierarchy.
fn roots<'f>(
    engine: &xfile_engine::Engine,
    at: Vec<(&'f str, &'f str, DefinitionKind)>,
) -> Vec<(&'f str, &'f str, DefinitionKind)> {
    let class = |qualname: &'f str| qualname.rsplit_once('.').map_or(qualname, |(c, _)| c);
    let overrides: Vec<bool> = at
        .iter()
        .map(|&(file, qualname, _)| {
            let order = engine.mro(file, class(qualname));
            at.iter().any(|&(other, other_qualname, _)| {
                (other, other_qualname) != (file, qualname)
                    && order
                        .iter()
                        .skip(1)
                        .any(|(f, c)| f == other && c == class(other_qualname))
            })
        })
        .collect();
    at.into_iter()
        .zip(overrides)
        .filter(|(_, overrides)| !overrides)
        .map(|(definition, _)| definition)
        .collect()
}

/// The names the lines use that are bound under a condition, in the file
/// or in the module it imports them from
/// ([`xfile_engine::Engine::conditional_bindings`]): each project
/// definition the name may be, at the name's first use.
fn conditional_names(engine: &xfile_engine::Engine, path: &str, names: &Names) -> Vec<Used> {
    let conditional = engine.conditional_bindings(path);
    if conditional.is_empty() {
        return Vec::new();
    }
    let first_use = names.first_uses();
    let mut used: Vec<Used> = conditional
        .into_iter()
        .filter_map(|n| {
            let line = *first_use.get(n.name.as_str())?;
            Some(Used::new(
                n.file,
                n.symbol,
                line,
                RelationshipType::Import,
                Certainty::Conditional,
            ))
        })
        .collect();
    by_first_use(&mut used);
    used
}

/// In order of first use, then of file and name.
fn by_first_use(used: &mut [Used]) {
    used.sort_by(|a, b| {
        (a.first_line, &a.file, &a.symbol).cmp(&(b.first_line, &b.file, &b.symbol))
    });
}

/// The innermost of the sub-project directories `dirs` that holds `path`
/// (none: the root project).
fn sub_project_of<'d>(dirs: &'d [String], path: &str) -> Option<&'d str> {
    dirs.iter()
        .map(String::as_str)
        .filter(|dir| {
            path.strip_prefix(dir)
                .is_some_and(|rest| rest.starts_with('/'))
        })
        .max_by_key(|dir| dir.len())
}

/// The chain of names that ends `receiver` (`os.path`, `request`), empty
/// when the receiver is anything else (a call, a subscript, a literal).
fn chain_before(receiver: &str) -> &str {
    let start = receiver
        .char_indices()
        .rev()
        .find(|&(_, c)| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let chain = &receiver[start..];
    match chain.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        true => "",
        false => chain,
    }
}

/// The names `facts`' module binds at module level, and every name an
/// import binds in any scope.
fn bound_names(facts: &ModuleFacts) -> HashSet<&str> {
    let semantic = &facts.semantic;
    let imported = semantic.imports.iter().filter_map(|import| {
        if let Some(alias) = &import.alias {
            return Some(alias.as_str());
        }
        match &import.target {
            ImportTarget::Module { dotted } => dotted.split('.').next(),
            ImportTarget::From { name, .. } => Some(name.as_str()),
            _ => None,
        }
    });
    semantic
        .bindings
        .iter()
        .map(|b| b.name.as_str())
        .chain(imported)
        .collect()
}

/// `save` of `Model.save`.
fn last_name(qualname: &str) -> &str {
    qualname.rsplit_once('.').map_or(qualname, |(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_member_names_are_sorted_for_the_binary_search() {
        assert!(BUILTIN_MEMBERS.windows(2).all(|w| w[0] < w[1]));
        for name in ["get", "join", "write", "setter", "strftime"] {
            assert!(BUILTIN_MEMBERS.binary_search(&name).is_ok(), "{name}");
        }
    }

    #[test]
    fn a_path_belongs_to_its_innermost_sub_project() {
        let dirs = ["copy".to_string(), "copy/inner".to_string()];
        assert_eq!(sub_project_of(&dirs, "copy/inner/a.py"), Some("copy/inner"));
        assert_eq!(sub_project_of(&dirs, "copy/a.py"), Some("copy"));
        assert_eq!(sub_project_of(&dirs, "copy2/a.py"), None);
        assert_eq!(sub_project_of(&dirs, "a.py"), None);
    }

    #[test]
    fn the_chain_before_a_dot_is_names_only() {
        assert_eq!(chain_before("        if request"), "request");
        assert_eq!(chain_before("x = self.request"), "self.request");
        assert_eq!(chain_before("(os.path"), "os.path");
        assert_eq!(chain_before("make()"), "");
        assert_eq!(chain_before("items[0]"), "");
        assert_eq!(chain_before("x = 1"), "");
        assert_eq!(chain_before("données"), "données");
        assert_eq!(chain_before(""), "");
    }
}
