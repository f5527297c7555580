//! What one project shares with others, seen from inside it: the modules it
//! provides (by dotted name) and its references to code it does not hold
//! (`<third-party:…>` targets). The federation layer matches the two
//! across projects; this module knows nothing of other projects.

use rustc_hash::FxHashMap;
use serde::Serialize;

use super::Service;
use super::model::RelationshipType;

const THIRD_PARTY: &str = "<third-party:";

/// A reference from this project to a module it does not hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ExternalRef {
    /// Root-relative path of the referring file.
    pub file: String,
    pub line: u32,
    pub kind: RelationshipType,
    /// The caller (`<module>` at module level) or the imported name.
    pub source_symbol: Option<String>,
    /// The dotted module the reference names (`corelib.models`).
    pub module: String,
    /// The name used from it (`User`), if any.
    pub name: Option<String>,
}

/// A project's references to other code, grouped for lookups.
#[derive(Default)]
pub struct ExternalRefs {
    refs: Vec<ExternalRef>,
    /// Indexes into `refs` by the name used, or for a plain module import
    /// the module's last component.
    by_name: FxHashMap<String, Vec<usize>>,
}

impl ExternalRefs {
    pub fn all(&self) -> &[ExternalRef] {
        &self.refs
    }

    /// The references that use `name` (a definition's or a module's last
    /// name component).
    pub fn named<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a ExternalRef> + 'a {
        self.by_name
            .get(name)
            .into_iter()
            .flatten()
            .map(|&i| &self.refs[i])
    }
}

/// The modules a project provides, by dotted name, and its top-level
/// names (`corelib` for `src/corelib/models.py`).
#[derive(Default)]
pub struct Modules {
    files: FxHashMap<String, String>,
    tops: std::collections::BTreeSet<String>,
}

impl Modules {
    pub fn file(&self, module: &str) -> Option<&str> {
        self.files.get(module).map(String::as_str)
    }

    pub fn provides(&self, top: &str) -> bool {
        self.tops.contains(top)
    }

    pub fn tops(&self) -> impl Iterator<Item = &str> {
        self.tops.iter().map(String::as_str)
    }
}

/// Where a dotted reference lands in a project.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Landing {
    pub file: String,
    /// The definition's qualified name, or none for a module.
    pub symbol: Option<String>,
    pub line: Option<u32>,
}

impl Service {
    /// This project's references to third-party modules, per engine state.
    pub fn external_refs(&self) -> std::sync::Arc<ExternalRefs> {
        self.external.get(self.engine.changes(), || {
            let engine = &self.engine;
            let interner = engine.interner();
            let references: Vec<_> = engine
                .references()
                .into_iter()
                .filter(|r| {
                    r.target.is_marker() && interner.node_text(r.target).starts_with(THIRD_PARTY)
                })
                .collect();
            let mut refs: Vec<ExternalRef> = super::relationships::render(engine, &references)
                .into_iter()
                .filter_map(|r| {
                    let module = r.target_file.strip_prefix(THIRD_PARTY)?.strip_suffix('>')?;
                    Some(ExternalRef {
                        module: module.to_string(),
                        name: r.target_symbol,
                        file: r.source_file,
                        line: r.line_number,
                        kind: r.relationship_type,
                        source_symbol: r.source_symbol,
                    })
                })
                .collect();
            refs.dedup();
            let mut by_name: FxHashMap<String, Vec<usize>> = FxHashMap::default();
            for (i, r) in refs.iter().enumerate() {
                let name = match &r.name {
                    Some(name) => name.rsplit('.').next().unwrap_or(name),
                    None => r.module.rsplit('.').next().unwrap_or(&r.module),
                };
                by_name.entry(name.to_string()).or_default().push(i);
            }
            ExternalRefs { refs, by_name }
        })
    }

    /// The modules this project provides, per engine state.
    pub fn modules(&self) -> std::sync::Arc<Modules> {
        self.modules.get(self.engine.changes(), || {
            let mut modules = Modules::default();
            for path in self.engine.paths() {
                let name = self.engine.module_name(path);
                if name.is_empty() {
                    continue;
                }
                let top = name.split('.').next().unwrap_or(&name).to_string();
                modules.tops.insert(top);
                modules.files.insert(name, path.to_string());
            }
            modules
        })
    }

    /// Where `module` (and `name` in it) lands in this project: the module
    /// file, a submodule, a definition of the module or one it imports
    /// from another file of the project (a re-export). None when the
    /// project does not hold it for certain.
    pub fn land(&self, module: &str, name: Option<&str>) -> Option<Landing> {
        let modules = self.modules();
        let file = modules.file(module)?;
        let Some(name) = name else {
            return Some(Landing {
                file: file.to_string(),
                symbol: None,
                line: None,
            });
        };
        if let Some(sub) = modules.file(&format!("{module}.{name}")) {
            return Some(Landing {
                file: sub.to_string(),
                symbol: None,
                line: None,
            });
        }
        let defined = |file: &str, symbol: &str| {
            let facts = self.engine.facts(file)?;
            // The last binding wins, as in Python.
            let line = facts
                .definitions
                .iter()
                .filter(|d| d.qualname == symbol)
                .map(|d| d.start_line)
                .next_back()?;
            Some(Landing {
                file: file.to_string(),
                symbol: Some(symbol.to_string()),
                line: Some(line),
            })
        };
        if let Some(found) = defined(file, name) {
            return Some(found);
        }
        let imported = self.engine.imported_names(file);
        let mut through = imported.iter().filter(|i| i.name == name);
        match (through.next(), through.next()) {
            (Some(one), None) => defined(&one.file, &one.symbol),
            _ => None,
        }
    }
}
