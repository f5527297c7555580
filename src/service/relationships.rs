//! Renders the `Imports`, `Calls` and `Inherits` relations as relationship
//! objects: positions, symbols and metadata are looked up late from the
//! source file's facts, target lines from the defining file's definitions.

use rustc_hash::FxHashMap;

use super::model::{Metadata, Relationship, RelationshipType};
use crate::engine::Engine;
use crate::engine::datalog::{Node, Site, Sym};
use crate::engine::intern::is_marker;
use crate::python::{Condition, ImportTarget, Scope};

/// Which relationships to render.
#[derive(Clone, Copy)]
pub enum Filter {
    All,
    /// Relationships whose source is this file.
    Source(Node),
    /// Relationships whose target, or for imports whose defining file, is this file.
    Target(Node),
}

impl Filter {
    fn keeps(self, source: Node, target: Node, defined_in: Option<Node>) -> bool {
        match self {
            Filter::All => true,
            Filter::Source(file) => source == file,
            Filter::Target(file) => target == file || defined_in == Some(file),
        }
    }
}

pub fn all(engine: &Engine) -> Vec<Relationship> {
    select(engine, Filter::All)
}

/// Renders the relationships `filter` keeps, without rendering the others.
pub fn select(engine: &Engine, filter: Filter) -> Vec<Relationship> {
    let outputs = engine.outputs();
    let renderer = Renderer {
        engine,
        owners: Default::default(),
    };

    // Outputs are sorted with the source file first: a source filter reads
    // only that file's slice of each relation.
    let imports = source_slice(&outputs.imports, filter, |t| t.0);
    let import_defined_in = source_slice(&outputs.import_defined_in, filter, |t| t.0);
    let calls = source_slice(&outputs.calls, filter, |t| t.0);
    let inherits = source_slice(&outputs.inherits, filter, |t| t.0);

    let mut defined_in: FxHashMap<(Node, Site), Vec<(Node, Sym)>> = FxHashMap::default();
    for t in import_defined_in {
        defined_in.entry((t.0, t.1)).or_default().push((t.2, t.3));
    }

    let mut out = Vec::new();
    for t in imports {
        let defined = certain(defined_in.get(&(t.0, t.1)).map(Vec::as_slice));
        if filter.keeps(t.0, t.2, defined.map(|d| d.0)) {
            out.extend(renderer.import(t.0, t.1, t.2, defined));
        }
    }
    let calls = calls
        .iter()
        .filter(|t| filter.keeps(t.0, t.2, None))
        .map(|t| (t.0, t.1, t.2, t.3));
    out.extend(renderer.references(RelationshipType::FunctionCall, calls));
    let bases = inherits
        .iter()
        .filter(|t| filter.keeps(t.0, t.2, None))
        .map(|t| (t.0, t.1, t.2, t.3));
    out.extend(renderer.references(RelationshipType::Inheritance, bases));
    out.sort_by(|a, b| {
        (
            &a.source_file,
            a.line_number,
            a.column,
            a.relationship_type,
            &a.target_file,
        )
            .cmp(&(
                &b.source_file,
                b.line_number,
                b.column,
                b.relationship_type,
                &b.target_file,
            ))
    });
    out
}

/// Relationship counts by type, without rendering any relationship.
pub fn counts(engine: &Engine) -> std::collections::BTreeMap<&'static str, usize> {
    let outputs = engine.outputs();
    let certain_sites = |tuples: Vec<(Node, Site)>| {
        let mut per_site: FxHashMap<(Node, Site), usize> = FxHashMap::default();
        for key in tuples {
            *per_site.entry(key).or_default() += 1;
        }
        per_site.values().filter(|&&n| n == 1).count()
    };
    let calls = certain_sites(outputs.calls.iter().map(|t| (t.0, t.1)).collect());
    let bases = certain_sites(outputs.inherits.iter().map(|t| (t.0, t.1)).collect());
    [
        (RelationshipType::Import, outputs.imports.len()),
        (RelationshipType::FunctionCall, calls),
        (RelationshipType::Inheritance, bases),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(kind, n)| (kind.as_str(), n))
    .collect()
}

fn source_slice<T>(tuples: &[T], filter: Filter, source: impl Fn(&T) -> Node) -> &[T] {
    match filter {
        Filter::Source(file) => keyed(tuples, source, file),
        _ => tuples,
    }
}

/// The run of `tuples` (sorted by `first`) whose `first` is `key`.
pub(crate) fn keyed<T>(tuples: &[T], first: impl Fn(&T) -> Node, key: Node) -> &[T] {
    let start = tuples.partition_point(|t| first(t) < key);
    let end = tuples.partition_point(|t| first(t) <= key);
    &tuples[start..end]
}

/// One candidate is a fact; several mean the binding is ambiguous and
/// nothing is claimed (fail-safe).
fn certain(candidates: Option<&[(Node, Sym)]>) -> Option<(Node, Sym)> {
    match candidates {
        Some([one]) => Some(*one),
        _ => None,
    }
}

struct Renderer<'a> {
    engine: &'a Engine,
    /// Per source file: which import or reference owns each site.
    owners: std::cell::RefCell<FxHashMap<Node, std::rc::Rc<SiteOwners>>>,
}

/// For each site of a file, the index of the import, call or base there.
#[derive(Default)]
struct SiteOwners {
    imports: FxHashMap<u32, usize>,
    calls: FxHashMap<u32, usize>,
    bases: FxHashMap<u32, usize>,
}

impl Renderer<'_> {
    fn owners(&self, file: Node, facts: &crate::python::ModuleFacts) -> std::rc::Rc<SiteOwners> {
        self.owners
            .borrow_mut()
            .entry(file)
            .or_insert_with(|| {
                let semantic = &facts.semantic;
                std::rc::Rc::new(SiteOwners {
                    imports: semantic
                        .imports
                        .iter()
                        .enumerate()
                        .map(|(i, x)| (x.site, i))
                        .collect(),
                    calls: semantic
                        .calls
                        .iter()
                        .enumerate()
                        .map(|(i, x)| (x.site, i))
                        .collect(),
                    bases: semantic
                        .bases
                        .iter()
                        .enumerate()
                        .map(|(i, x)| (x.site, i))
                        .collect(),
                })
            })
            .clone()
    }

    fn path(&self, node: Node) -> String {
        self.engine.interner().node_text(node).to_string()
    }

    /// The line where `name` is finally defined in project file `node`.
    fn definition_line(&self, node: Node, name: &str) -> Option<u32> {
        let path = self.path(node);
        if is_marker(&path) {
            return None;
        }
        let facts = self.engine.facts(&path)?;
        facts
            .definitions
            .iter()
            .rev()
            .find(|d| d.qualname == name)
            .map(|d| d.start_line)
    }

    fn import(
        &self,
        file: Node,
        site: Site,
        target: Node,
        defined: Option<(Node, Sym)>,
    ) -> Option<Relationship> {
        let source_file = self.path(file);
        let facts = self.engine.facts(&source_file)?;
        let position = *facts.sites.get(site.0 as usize)?;
        let owners = self.owners(file, facts);
        let import = facts.semantic.imports.get(*owners.imports.get(&site.0)?)?;
        let (style, wildcard, target_symbol) = match &import.target {
            ImportTarget::Module { .. } => ("import", false, None),
            ImportTarget::From { name, .. } => ("from", false, Some(name.clone())),
            ImportTarget::Star { .. } => ("from", true, Some("*".to_string())),
            ImportTarget::Call { .. } => ("importlib", false, None),
        };
        let source_symbol = match &import.target {
            ImportTarget::Module { dotted } | ImportTarget::Call { dotted, .. } => {
                Some(import.alias.clone().unwrap_or_else(|| dotted.clone()))
            }
            _ => import
                .bound_name()
                .map(str::to_string)
                .or(Some("*".to_string())),
        };
        let (defined_in, target_line) = match defined {
            Some((node, sym)) => {
                let name = self.engine.interner().sym_text(sym);
                (Some(self.path(node)), self.definition_line(node, &name))
            }
            None => (None, None),
        };
        Some(Relationship {
            source_file,
            target_file: self.path(target),
            relationship_type: RelationshipType::Import,
            line_number: position.line,
            column: position.column,
            source_symbol,
            target_symbol,
            target_line,
            metadata: Metadata {
                import_style: Some(style),
                alias: Some(import.alias.clone()),
                conditional: Some(import.condition.is_some()),
                condition: import.condition.map(condition_name),
                wildcard: Some(wildcard),
                scope: Some(scope_name(import.scope)),
                defined_in,
            },
        })
    }

    fn references(
        &self,
        kind: RelationshipType,
        tuples: impl Iterator<Item = (Node, Site, Node, Sym)>,
    ) -> Vec<Relationship> {
        let mut by_site: FxHashMap<(Node, Site), Vec<(Node, Sym)>> = FxHashMap::default();
        for (file, site, target, name) in tuples {
            by_site
                .entry((file, site))
                .or_default()
                .push((target, name));
        }
        by_site
            .into_iter()
            .filter_map(|((file, site), targets)| {
                let (target, name) = certain(Some(&targets))?;
                self.reference(kind, file, site, target, name)
            })
            .collect()
    }

    fn reference(
        &self,
        kind: RelationshipType,
        file: Node,
        site: Site,
        target: Node,
        name: Sym,
    ) -> Option<Relationship> {
        let source_file = self.path(file);
        let facts = self.engine.facts(&source_file)?;
        let position = *facts.sites.get(site.0 as usize)?;
        let owners = self.owners(file, facts);
        let (references, index) = match kind {
            RelationshipType::Inheritance => (&facts.semantic.bases, &owners.bases),
            _ => (&facts.semantic.calls, &owners.calls),
        };
        let written = index
            .get(&site.0)
            .and_then(|&i| references.get(i))
            .map(|r| r.path.join("."));
        let name = self.engine.interner().sym_text(name).to_string();
        Some(Relationship {
            source_file,
            target_file: self.path(target),
            relationship_type: kind,
            line_number: position.line,
            column: position.column,
            source_symbol: written,
            target_line: self.definition_line(target, &name),
            target_symbol: Some(name),
            metadata: Metadata::default(),
        })
    }
}

fn condition_name(condition: Condition) -> &'static str {
    match condition {
        Condition::TypeChecking => "type_checking",
        Condition::VersionCheck => "version_check",
        Condition::TryExcept => "try_except",
        Condition::Other => "other",
    }
}

fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::Module => "module",
        Scope::Class => "class",
        Scope::Function => "function",
    }
}
