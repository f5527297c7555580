//! Renders the `Imports`, `Calls` and `Inherits` relations as relationship
//! objects: positions, symbols and metadata are looked up late from the
//! source file's facts, target lines from the defining file's definitions.

use rustc_hash::FxHashMap;

use super::model::{Metadata, Relationship, RelationshipType};
use xfile_engine::datalog::{Node, Site, Sym};
use xfile_engine::{Engine, RefKind, Reference};
use xfile_python::{Condition, ImportTarget, Scope};

/// Every relationship of the project.
pub fn all(engine: &Engine) -> Vec<Relationship> {
    render(engine, &engine.references())
}

/// Renders references (from the engine's semantic layer) as relationship
/// objects, in source order.
pub fn render(engine: &Engine, references: &[Reference]) -> Vec<Relationship> {
    render_each(engine, references)
        .into_iter()
        .map(|(relationship, _)| relationship)
        .collect()
}

/// [`render`], each relationship with the index of the reference it was
/// rendered from (references that render to nothing are left out).
pub(crate) fn render_each(engine: &Engine, references: &[Reference]) -> Vec<(Relationship, usize)> {
    let renderer = Renderer {
        engine,
        owners: Default::default(),
    };
    let mut out: Vec<(Relationship, usize)> = references
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((renderer.render(r)?, i)))
        .collect();
    // Stable: relationships with equal keys keep the references' order.
    out.sort_by(|(a, _), (b, _)| {
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
    let [imports, calls, inherits] = engine.reference_counts();
    [
        (RelationshipType::Import, imports),
        (RelationshipType::FunctionCall, calls),
        (RelationshipType::Inheritance, inherits),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(kind, n)| (kind.as_str(), n))
    .collect()
}

struct Renderer<'a> {
    engine: &'a Engine,
    /// Per source file: which import or reference owns each site.
    owners: std::cell::RefCell<FxHashMap<Node, std::rc::Rc<SiteOwners>>>,
}

/// For each site of a file, the index of the import or base there, or the
/// scope the call there is made in.
#[derive(Default)]
struct SiteOwners {
    imports: FxHashMap<u32, usize>,
    callers: FxHashMap<u32, u32>,
    bases: FxHashMap<u32, usize>,
}

impl Renderer<'_> {
    fn owners(&self, file: Node, facts: &xfile_python::ModuleFacts) -> std::rc::Rc<SiteOwners> {
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
                    callers: semantic
                        .call_sites
                        .iter()
                        .map(|c| (c.site, c.caller))
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
        if node.is_marker() {
            return None;
        }
        let facts = self.engine.facts(&self.path(node))?;
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
            ImportTarget::From { name, .. } => ("from", false, Some(name.to_string())),
            ImportTarget::Star { .. } => ("from", true, Some("*".to_string())),
            ImportTarget::Call { .. } => ("importlib", false, None),
        };
        let source_symbol = match &import.target {
            ImportTarget::Module { dotted } | ImportTarget::Call { dotted, .. } => {
                Some(import.alias.as_ref().unwrap_or(dotted).to_string())
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
                alias: Some(import.alias.as_deref().map(str::to_string)),
                conditional: Some(import.condition.is_some()),
                condition: import.condition.map(condition_name),
                wildcard: Some(wildcard),
                scope: Some(scope_name(import.scope)),
                defined_in,
            },
        })
    }

    fn render(&self, r: &Reference) -> Option<Relationship> {
        match (r.kind, r.symbol) {
            (RefKind::Import, _) => {
                self.import(r.source, r.site, r.target, r.defined_in.zip(r.symbol))
            }
            (RefKind::Call, Some(name)) => self.reference(
                RelationshipType::FunctionCall,
                r.source,
                r.site,
                r.target,
                name,
            ),
            (RefKind::Inheritance, Some(name)) => self.reference(
                RelationshipType::Inheritance,
                r.source,
                r.site,
                r.target,
                name,
            ),
            (_, None) => None,
        }
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
        // A call names its caller; a base, the name as written.
        let source_symbol = match kind {
            RelationshipType::Inheritance => owners
                .bases
                .get(&site.0)
                .and_then(|&i| facts.semantic.bases.get(i))
                .map(|r| r.path.join(".")),
            _ => owners
                .callers
                .get(&site.0)
                .and_then(|&i| facts.semantic.scopes.get(i as usize))
                .map(|scope| scope.to_string()),
        };
        let name = self.engine.interner().sym_text(name).to_string();
        Some(Relationship {
            source_file,
            target_file: self.path(target),
            relationship_type: kind,
            line_number: position.line,
            column: position.column,
            source_symbol,
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
        Condition::MainBlock => "main_block",
    }
}

fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::Module => "module",
        Scope::Class => "class",
        Scope::Function => "function",
    }
}
