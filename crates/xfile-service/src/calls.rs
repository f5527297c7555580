//! The function-level call graph as users ask for it: a symbol named as
//! `path::Qualified.name` or by dotted module path, its callers or callees
//! to a depth, breadth first, each symbol visited once (so recursion and
//! cycles end), and bounded: at most `limit` calls, with how many there
//! were in all.

use std::collections::{BTreeSet, VecDeque};

use serde::Serialize;

use super::Service;
use xfile_engine::CallEdge;
use xfile_workspace::PathError;

/// Deepest a call-graph walk goes, whatever is asked.
pub const MAX_DEPTH: usize = 5;
/// Calls listed by default.
pub const DEFAULT_LIMIT: usize = 100;
/// Calls listed at most over MCP, whatever is asked.
pub const MAX_LIMIT: usize = 1_000;
/// Calls a walk gathers at most, listed or not: past this, `total` is a
/// lower bound.
const WORK_LIMIT: usize = 10_000;

/// A symbol the user named, found in the project.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Symbol {
    /// Root-relative path of the defining file.
    pub file: String,
    /// Qualified name in it: `f`, `Model.save`, `<module>`.
    pub qualname: String,
}

impl Symbol {
    /// `path::Qualified.name`, the form every answer uses.
    pub fn display(&self) -> String {
        format!("{}::{}", self.file, self.qualname)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SymbolError {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error(
        "{0} names no definition; give path::Qualified.name (app/models.py::User.save), a dotted name (app.models.User.save) or a qualified name only one definition has (User.save) of a function, class, method or variable"
    )]
    NotFound(String),
    #[error("{0} names a module; give one of its definitions, such as {0}::name")]
    Module(String),
    #[error(
        "{file} does not define {name}; its class inherits it from {definition}: ask about that file"
    )]
    Inherited {
        name: String,
        file: String,
        /// `path::Qualified.name` of the definition inherited.
        definition: String,
    },
    #[error(
        "{name} names {total} definitions: {candidates}; give one of them as path::Qualified.name"
    )]
    Ambiguous {
        name: String,
        total: usize,
        /// Some of them as `path::Qualified.name`, comma-separated.
        candidates: String,
    },
    /// The file on disk is no longer the text that was indexed: its lines
    /// would not be the definition's.
    #[error("{0} changed on disk while it was read")]
    Changed(String),
}

impl SymbolError {
    pub fn code(&self) -> &'static str {
        match self {
            SymbolError::Path(error) => error.code(),
            SymbolError::NotFound(_) | SymbolError::Inherited { .. } => "symbol_not_found",
            SymbolError::Module(_) => "invalid_parameter",
            SymbolError::Ambiguous { .. } => "ambiguous_symbol",
            SymbolError::Changed(_) => "file_changed",
        }
    }
}

/// Where a symbol asked about is defined ([`Service::find_symbol`]).
enum Located {
    Here,
    /// A member its class inherits: the definition its order reaches.
    Inherited(Symbol),
    Nowhere,
}

/// Which way a walk goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Callers,
    Callees,
}

/// One call in an answer.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Call {
    /// How many calls away from the symbol asked about (1: direct).
    pub depth: usize,
    /// `path::Qualified.name` of the calling code (`<module>` for module level).
    pub caller: String,
    /// `path::Qualified.name` of what is called, or a marker for code
    /// outside the project (`<stdlib:json>::dumps`).
    pub callee: String,
    /// Where the call is: the caller's file, 1-based line, 0-based column.
    pub file: String,
    pub line: u32,
    pub column: u32,
}

#[derive(Clone, Debug, Serialize)]
pub struct CallGraph {
    pub symbol: String,
    pub direction: Direction,
    pub depth: usize,
    /// Calls in breadth-first order, at most `limit`.
    pub calls: Vec<Call>,
    /// Calls found within the depth, listed or not.
    pub total: usize,
    /// False when the walk stopped early and `total` is a lower bound.
    pub complete: bool,
    /// Set when `calls` is cut: what to ask for the rest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<String>,
}

impl CallGraph {
    /// Adds `callers` found elsewhere (other projects) as direct callers,
    /// after the walk's own direct callers, cutting the list at `limit`
    /// again.
    pub fn add_direct_callers(&mut self, callers: Vec<Call>, limit: usize) {
        self.total += callers.len();
        let direct = self.calls.iter().take_while(|c| c.depth == 1).count();
        self.calls.splice(direct..direct, callers);
        if self.calls.len() > limit {
            self.calls.truncate(limit);
            self.truncated = Some(format!(
                "{limit} of {} calls listed; ask with a higher limit or a smaller depth",
                self.total
            ));
        }
    }
}

impl Service {
    /// The definition `symbol` names: `path::Qualified.name`, a dotted
    /// name whose longest prefix that is a project module names the file
    /// (a member a class inherits names the definition it inherits), or
    /// else a name that only one definition in the project has, such as
    /// `retry` or `User.save` (several give the candidates).
    pub fn find_symbol(&self, symbol: &str) -> Result<Symbol, SymbolError> {
        let symbol = symbol.trim();
        let error = match self.named_symbol(symbol) {
            Ok(found) => return Ok(found),
            Err(error @ (SymbolError::NotFound(_) | SymbolError::Module(_))) => error,
            Err(error) => return Err(error),
        };
        self.unique_definition(symbol).ok_or(error)?
    }

    /// The definition `symbol` names by its path or module.
    fn named_symbol(&self, symbol: &str) -> Result<Symbol, SymbolError> {
        let found = match symbol.split_once("::") {
            Some((path, qualname)) => Symbol {
                file: self.resolve_file(path)?,
                qualname: qualname.to_string(),
            },
            None => self.dotted_symbol(symbol)?,
        };
        match self.locate(&found) {
            Located::Here => Ok(found),
            Located::Inherited(definition) => Ok(definition),
            Located::Nowhere => Err(SymbolError::NotFound(symbol.to_string())),
        }
    }

    /// Refuses `symbol` of `file` when the file defines no such thing: an
    /// answer about it would be empty, which reads as "nothing depends on
    /// it". A member the class inherits names where it is defined.
    pub(crate) fn check_defined(&self, file: &str, symbol: &str) -> Result<(), SymbolError> {
        let asked = Symbol {
            file: file.to_string(),
            qualname: symbol.to_string(),
        };
        match self.locate(&asked) {
            Located::Here => Ok(()),
            Located::Inherited(definition) => Err(SymbolError::Inherited {
                name: asked.qualname,
                file: asked.file,
                definition: definition.display(),
            }),
            Located::Nowhere => Err(SymbolError::NotFound(asked.display())),
        }
    }

    /// Where `symbol` is defined: in its own file, or, for `Class.name`
    /// that `Class` inherits, in a base.
    fn locate(&self, symbol: &Symbol) -> Located {
        if symbol.qualname == "<module>" || self.defines(&symbol.file, &symbol.qualname) {
            return Located::Here;
        }
        self.inherited(symbol)
            .map_or(Located::Nowhere, Located::Inherited)
    }

    fn defines(&self, file: &str, qualname: &str) -> bool {
        self.engine
            .facts(file)
            .is_some_and(|facts| facts.definitions.iter().any(|d| d.qualname == qualname))
    }

    /// `Class.name` that `Class` does not define but inherits: the
    /// definition its method resolution order reaches first. None when the
    /// order stops (at a base outside the project or unknown) before one.
    fn inherited(&self, symbol: &Symbol) -> Option<Symbol> {
        let (class, name) = symbol.qualname.rsplit_once('.')?;
        if !self.defines(&symbol.file, class) {
            return None;
        }
        self.engine
            .mro(&symbol.file, class)
            .into_iter()
            .skip(1)
            .map(|(file, base)| Symbol {
                qualname: format!("{base}.{name}"),
                file,
            })
            .find(|candidate| self.defines(&candidate.file, &candidate.qualname))
    }

    fn dotted_symbol(&self, dotted: &str) -> Result<Symbol, SymbolError> {
        let mut best: Option<(usize, &str)> = None;
        for path in self.engine.paths() {
            let module = self.engine.module_name(path);
            let longer = best.is_none_or(|(length, _)| module.len() > length);
            let prefix = dotted
                .strip_prefix(module.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'));
            if longer && prefix && !module.is_empty() {
                best = Some((module.len(), path));
            }
        }
        let Some((length, path)) = best else {
            return Err(SymbolError::NotFound(dotted.to_string()));
        };
        let qualname = dotted[length..].trim_start_matches('.');
        if qualname.is_empty() {
            return Err(SymbolError::Module(path.to_string()));
        }
        Ok(Symbol {
            file: path.to_string(),
            qualname: qualname.to_string(),
        })
    }

    /// The calls of `qualname` of `path`; for an `__init__`, the
    /// constructor calls of its class and of the subclasses that inherit
    /// it too, since each runs it.
    pub(crate) fn calls_of(&self, path: &str, qualname: &str) -> Vec<CallEdge> {
        let mut edges = self.engine.callers(path, qualname);
        if let Some(class) = qualname.strip_suffix(".__init__") {
            for (file, class) in self.constructed_classes(path, class) {
                edges.extend(self.engine.callers(&file, &class));
            }
        }
        edges
    }

    /// `class` of `path` and its subclasses that inherit its `__init__`
    /// (neither they nor a class between define one), leaving out those
    /// whose construction a decorator may change (dataclasses).
    pub(crate) fn constructed_classes(&self, path: &str, class: &str) -> Vec<(String, String)> {
        let mut found = vec![(path.to_string(), class.to_string())];
        for (file, sub) in self.engine.subclasses(path, class) {
            let mro = self.engine.mro(&file, &sub);
            let inherits = mro
                .iter()
                .take_while(|(f, c)| !(f == path && c == class))
                .all(|(f, c)| {
                    self.engine.facts(f).is_some_and(|facts| {
                        let init = format!("{c}.__init__");
                        let new = format!("{c}.__new__");
                        // A decorated class (a dataclass) may get another
                        // `__init__`.
                        facts.definitions.iter().all(|d| {
                            d.qualname != init
                                && d.qualname != new
                                && (d.qualname != *c || d.decorators.is_empty())
                        })
                    })
                });
            if inherits && mro.iter().any(|(f, c)| f == path && c == class) {
                found.push((file, sub));
            }
        }
        found
    }

    /// The callers or callees of `symbol`, breadth first to `depth`
    /// (1..=`MAX_DEPTH`), at most `limit` calls.
    pub fn call_graph(
        &self,
        symbol: &str,
        direction: Direction,
        depth: usize,
        limit: usize,
    ) -> Result<CallGraph, SymbolError> {
        let start = self.find_symbol(symbol)?;
        let depth = depth.clamp(1, MAX_DEPTH);
        let interner = self.engine.interner();
        let mut seen: BTreeSet<Symbol> = BTreeSet::from([start.clone()]);
        let mut queue = VecDeque::from([(start.clone(), 1)]);
        let mut calls = Vec::new();
        let mut complete = true;
        while let Some((symbol, level)) = queue.pop_front() {
            if calls.len() >= WORK_LIMIT {
                complete = queue.is_empty();
                break;
            }
            let edges: Vec<CallEdge> = match direction {
                Direction::Callers => self.calls_of(&symbol.file, &symbol.qualname),
                Direction::Callees => self.engine.callees(&symbol.file, &symbol.qualname),
            };
            let mut level_calls = Vec::new();
            let mut found = Vec::new();
            for edge in edges {
                let caller = Symbol {
                    file: interner.node_text(edge.file).to_string(),
                    qualname: interner.sym_text(edge.caller).to_string(),
                };
                let callee = Symbol {
                    file: interner.node_text(edge.target).to_string(),
                    qualname: interner.sym_text(edge.name).to_string(),
                };
                let Some(site) = self
                    .engine
                    .facts(&caller.file)
                    .and_then(|f| f.sites.get(edge.site.0 as usize).copied())
                else {
                    continue;
                };
                level_calls.push(Call {
                    depth: level,
                    caller: caller.display(),
                    callee: callee.display(),
                    file: caller.file.clone(),
                    line: site.line,
                    column: site.column,
                });
                let next = match direction {
                    Direction::Callers => caller,
                    Direction::Callees => callee,
                };
                // Module-level code is called by no one; markers have no code.
                let walkable = next.qualname != "<module>" && !next.file.starts_with('<');
                if level < depth && walkable && seen.insert(next.clone()) {
                    found.push(next);
                }
            }
            level_calls
                .sort_by(|a, b| (&a.file, a.line, a.column).cmp(&(&b.file, b.line, b.column)));
            calls.extend(level_calls);
            found.sort();
            queue.extend(found.into_iter().map(|s| (s, level + 1)));
        }
        let total = calls.len();
        let truncated = (total > limit).then(|| {
            format!(
                "{} of {total} calls listed; ask again with a larger limit or a smaller depth",
                limit
            )
        });
        calls.truncate(limit);
        Ok(CallGraph {
            symbol: start.display(),
            direction,
            depth,
            calls,
            total,
            complete,
            truncated,
        })
    }
}
