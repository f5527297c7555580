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

use std::collections::HashMap;

use super::super::Service;
use super::super::model::{Relationship, RelationshipType};
use super::super::ranking::{Accesses, Boosts};
use super::defs::Definitions;
use xfile_engine::is_marker;
use xfile_python::{DefinitionKind, ModuleFacts};

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
    // Names bound by `import *`, or (for a line range) by imports above
    // the range, are found by their uses in the lines.
    if !lines.whole
        || relationships
            .iter()
            .any(|r| r.metadata.wildcard == Some(true))
    {
        uses.extend(names_used(service, path, lines));
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
    (
        items.into_iter().map(|(_, _, u)| u).collect(),
        relationships,
    )
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
                    file: u.file,
                    symbol: u.symbol,
                    first_line: u.line,
                    uses: 1,
                    base: u.base,
                    kind: u.kind,
                    members: Vec::new(),
                });
            }
        }
    }
}

/// The imported names (from another file, directly or through `import *`)
/// that the read lines mention, at their first mention: a star import
/// expands to the explicit names the file uses, and a range read sees
/// the names its imports bind above it.
fn names_used(service: &Service, path: &str, lines: Lines) -> Vec<Use> {
    let engine = service.engine();
    let Some(text) = engine.text(path) else {
        return Vec::new();
    };
    let imported = engine.imported_names(path);
    if imported.is_empty() {
        return Vec::new();
    }
    let newlines: Vec<usize> = text.match_indices('\n').map(|(offset, _)| offset).collect();
    let mut first_use: HashMap<&str, u32> = HashMap::new();
    for name in xfile_python::name_ranges(text) {
        let line =
            u32::try_from(newlines.partition_point(|&n| n < name.start) + 1).unwrap_or(u32::MAX);
        if let (true, Some(name)) = (lines.contains(line), text.get(name)) {
            first_use.entry(name).or_insert(line);
        }
    }
    imported
        .into_iter()
        .filter_map(|n| {
            let line = *first_use.get(n.name.as_str())?;
            Some(Use {
                file: n.file,
                symbol: n.symbol,
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
