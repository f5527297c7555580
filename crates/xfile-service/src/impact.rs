//! `impact`: what a change may break. The diff of the working tree
//! against a base revision gives the changed lines; the index gives the
//! definitions (functions, methods, classes) those lines lie in, then
//! their dependents at symbol level, breadth first to a depth: callers
//! (the call graph), subclasses, and the modules that import them. Code
//! in test modules is listed apart, with the test modules that cover a
//! changed or dependent file (`TestCovers`).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt::Write;

use serde::Serialize;

use super::Service;
use super::calls::{MAX_DEPTH, Symbol};
use super::context::count_tokens;
use super::paging::{fitting_parts, part_tokens};
use xfile_engine::RefKind;
use xfile_git::{FileDiff, FileStatus, GitError, Repo};
use xfile_python::facts::{Definition, DefinitionKind};

/// How far dependents are followed by default.
pub const DEFAULT_DEPTH: usize = 2;
/// Dependents gathered at most: past this the walk stops and says so.
const WORK_LIMIT: usize = 5_000;
/// Tokens kept for the closing line.
const CLOSING_TOKENS: usize = 60;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Added,
    Modified,
    Removed,
}

/// A definition whose lines the change touches; `<module>` for lines
/// outside every definition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChangedSymbol {
    /// `path::Qualified.name`.
    pub symbol: String,
    pub change: Change,
    /// Lines of the definition: in the working tree, or in the base for a
    /// removed one.
    pub start_line: u32,
    pub end_line: u32,
}

/// How a dependent depends on what it reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    Calls,
    Subclasses,
    Imports,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Dependent {
    /// `path::Qualified.name`, `path::<module>` for module-level code.
    pub symbol: String,
    /// 1: depends on a changed symbol directly.
    pub depth: usize,
    pub via: Via,
    /// What it depends on, first found.
    pub of: String,
    /// Where: the call, base or import line in the dependent's file.
    pub line: u32,
    /// How many changed symbols it reaches.
    pub reaches: usize,
}

/// A test module that covers a changed or dependent file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CoveringTest {
    pub test: String,
    pub covers: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Impact {
    pub base: String,
    pub depth: usize,
    /// Root-relative paths the diff lists.
    pub files: Vec<String>,
    pub changed: Vec<ChangedSymbol>,
    /// Ranked: nearest first, then those reaching most changed symbols.
    pub dependents: Vec<Dependent>,
    /// Test code among the dependents, ranked the same way.
    pub test_dependents: Vec<Dependent>,
    pub covering_tests: Vec<CoveringTest>,
    /// False when the walk stopped at its work limit.
    pub complete: bool,
}

/// Definitions that count as symbols of a change.
fn is_symbol(definition: &Definition) -> bool {
    definition.kind != DefinitionKind::Variable
}

fn symbol_of(file: &str, qualname: &str) -> Symbol {
    Symbol {
        file: file.to_string(),
        qualname: qualname.to_string(),
    }
}

impl Service {
    /// The impact of the working tree's changes against `base` (default
    /// HEAD), dependents followed to `depth` (1..=5).
    pub fn impact(&self, base: Option<&str>, depth: usize) -> Result<Impact, GitError> {
        let repo = self.git.repo(self.root())?;
        let mut diff = repo.diff(base, None, None)?;
        // New files git does not track yet are part of the change too.
        diff.files.extend(repo.untracked()?);
        diff.files.sort_by(|a, b| a.path.cmp(&b.path));
        self.git.warm_blames_later(self.root());
        let base = diff.base.clone();
        let depth = depth.clamp(1, MAX_DEPTH);
        let mut changed = Vec::new();
        // A file whose lines the diff withholds (it may hold secrets, is
        // too large or binary) is listed, never read: no symbols.
        for file in diff
            .files
            .iter()
            .filter(|f| f.path.ends_with(".py") && f.withheld.is_none())
        {
            changed.extend(self.changed_symbols(&repo, &base, file)?);
        }
        // A module the change deletes or moves away is one more thing gone.
        for file in diff.files.iter().filter(|f| f.path.ends_with(".py")) {
            let gone = match &file.status {
                FileStatus::Deleted => Some(file.path.as_str()),
                FileStatus::Renamed { from } => Some(from.as_str()),
                _ => None,
            };
            if let Some(path) = gone.filter(|p| !self.engine.contains(p)) {
                changed.push(ChangedSymbol {
                    symbol: format!("{path}::<module>"),
                    change: Change::Removed,
                    start_line: 1,
                    end_line: 1,
                });
            }
        }
        let mut walk = Walk::new(self);
        for (origin, symbol) in changed.iter().enumerate() {
            let Some((file, qualname)) = symbol.symbol.split_once("::") else {
                continue;
            };
            let users = match symbol.change {
                Change::Removed => Some(self.users_of_removed(file, qualname)),
                _ => None,
            };
            walk.start(symbol_of(file, qualname), users, origin, depth);
        }
        let complete = walk.complete;
        let (test_dependents, dependents) = walk.ranked();
        let mut covered: BTreeSet<&str> = changed
            .iter()
            .filter_map(|c| c.symbol.split_once("::").map(|(file, _)| file))
            .collect();
        covered.extend(
            dependents
                .iter()
                .filter_map(|d| d.symbol.split_once("::").map(|(file, _)| file)),
        );
        let mut covering_tests = Vec::new();
        for file in covered {
            for test in self.engine.tests_covering(file) {
                covering_tests.push(CoveringTest {
                    test,
                    covers: file.to_string(),
                });
            }
        }
        Ok(Impact {
            base,
            depth,
            files: diff.files.iter().map(|f| f.path.clone()).collect(),
            changed,
            dependents,
            test_dependents,
            covering_tests,
            complete,
        })
    }

    /// The definitions `file`'s changes touch (innermost), the new ones,
    /// and those the change removed; `<module>` when code outside every
    /// definition changed (blank and comment lines do not count).
    fn changed_symbols(
        &self,
        repo: &Repo,
        base: &str,
        file: &FileDiff,
    ) -> Result<Vec<ChangedSymbol>, GitError> {
        let old_path = match &file.status {
            FileStatus::Renamed { from } => Some(from.as_str()),
            FileStatus::Added => None,
            _ => Some(file.path.as_str()),
        };
        let old_blob = match old_path {
            Some(path) => repo.blob_at(base, path)?,
            None => None,
        };
        let old_text = match old_blob {
            Some(id) => String::from_utf8_lossy(&repo.blob(id)?).into_owned(),
            None => String::new(),
        };
        // The base's definitions, parsed once per blob: the base of a
        // change in progress stays the same from one `impact` to the next.
        let old_definitions = match old_blob {
            Some(id) => self
                .git
                .base_definitions(id, || Ok(xfile_python::extract(&old_text).definitions))?,
            None => std::sync::Arc::default(),
        };
        let indexed_text = match file.status {
            FileStatus::Deleted => None,
            _ => self.engine.text(&file.path),
        };
        // Indexed, but changed on disk since (between the freshness check
        // and this read): its lines would not be the ones its definitions
        // describe, and every one would look removed. Left out rather
        // than reported wrong.
        let deleted = matches!(file.status, FileStatus::Deleted);
        if !deleted && indexed_text.is_none() && self.engine.contains(&file.path) {
            return Ok(Vec::new());
        }
        let (new_text, new_definitions): (&str, &[Definition]) = match file.status {
            FileStatus::Deleted => ("", &[]),
            _ => match (indexed_text.as_deref(), self.engine.facts(&file.path)) {
                (Some(text), Some(facts)) => (text, &facts.definitions),
                _ => ("", &[]),
            },
        };
        let old = Side::new(&old_text, &old_definitions);
        let new = Side::new(new_text, new_definitions);
        let mut found: Vec<ChangedSymbol> = Vec::new();
        let mut add = |qualname: &str, start_line, end_line, change| {
            let symbol = format!("{}::{qualname}", file.path);
            if !found.iter().any(|c| c.symbol == symbol) {
                found.push(ChangedSymbol {
                    symbol,
                    change,
                    start_line,
                    end_line,
                });
            }
        };
        let mut module = None;
        for change in &file.changes {
            let added = change.new_start..change.new_start + change.new_lines;
            for line in added {
                match new.holder(line) {
                    Some(d) => {
                        let kind = if old.has(&d.qualname) {
                            Change::Modified
                        } else {
                            Change::Added
                        };
                        add(&d.qualname, d.start_line, d.end_line, kind);
                    }
                    None if new.is_code(line) => module = module.or(Some(line)),
                    None => {}
                }
            }
            let removed = change.old_start..change.old_start + change.old_lines;
            for line in removed {
                match old.holder(line) {
                    // Lines removed from a definition that stays.
                    Some(d) => {
                        if let Some(now) = new.definition(&d.qualname) {
                            add(
                                &now.qualname,
                                now.start_line,
                                now.end_line,
                                Change::Modified,
                            );
                        }
                    }
                    None if old.is_code(line) => module = module.or(Some(change.new_start.max(1))),
                    None => {}
                }
            }
        }
        for gone in old.symbols.iter().filter(|d| !new.has(&d.qualname)) {
            add(
                &gone.qualname,
                gone.start_line,
                gone.end_line,
                Change::Removed,
            );
        }
        if let Some(line) = module {
            add("<module>", line, line, Change::Modified);
        }
        Ok(found)
    }
}

/// An import statement of another file that reaches a file.
#[derive(Clone, Debug)]
pub(crate) struct ImportInto {
    pub(crate) importer: String,
    /// The name imported, for `from m import name`.
    pub(crate) name: Option<String>,
    pub(crate) line: u32,
}

impl Service {
    /// The import statements of other files that reach `file` (directly,
    /// or through re-exports to a definition in it).
    pub(crate) fn imports_into(&self, file: &str) -> Vec<ImportInto> {
        let interner = self.engine.interner();
        self.engine
            .references_to(file)
            .into_iter()
            .filter(|r| r.kind == RefKind::Import)
            .filter_map(|r| {
                let importer = interner.node_text(r.source).to_string();
                let line = self
                    .engine
                    .facts(&importer)?
                    .sites
                    .get(r.site.0 as usize)?
                    .line;
                let name = r.symbol.map(|s| interner.sym_text(s).to_string());
                Some(ImportInto {
                    importer,
                    name,
                    line,
                })
            })
            .collect()
    }

    /// What, in other files, still uses `qualname` of `file` (`<module>`:
    /// the module itself), which the change removed: nothing resolves to
    /// it any more, so the uses are found by name, through the imports
    /// that name its module, and from what the service saw before the
    /// removal (`breaks`).
    fn users_of_removed(&self, file: &str, qualname: &str) -> Vec<(Symbol, Via, u32)> {
        let mut users = self.users_before(file, qualname);
        if qualname == "<module>" {
            let marker = format!("<unresolved:{}>", self.engine.module_name(file));
            for (importer, line) in self.importers_of_marker(&marker) {
                users.push((symbol_of(&importer, "<module>"), Via::Imports, line));
            }
        } else if !qualname.contains('.') {
            users.extend(self.users_by_name(file, qualname));
        }
        users.sort_by(|a, b| (&a.0, a.2).cmp(&(&b.0, b.2)));
        users.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        users
    }

    /// The imports of a module no file provides (`marker`, as
    /// `<unresolved:a.b>`): (importing file, line). Each file's own
    /// imports are read: the dependents index holds files only.
    fn importers_of_marker(&self, marker: &str) -> Vec<(String, u32)> {
        let interner = self.engine.interner();
        let mut found = Vec::new();
        for path in self.engine.paths() {
            for reference in self.engine.references_from(path) {
                if reference.kind == RefKind::Import
                    && &*interner.node_text(reference.target) == marker
                {
                    let line = self
                        .engine
                        .facts(path)
                        .and_then(|f| f.sites.get(reference.site.0 as usize))
                        .map_or(0, |s| s.line);
                    found.push((path.to_string(), line));
                }
            }
        }
        found
    }

    /// The imports and calls, in other files, of module-level `name` of
    /// `file`, by name: `from m import name` and what calls the name it
    /// binds, or `import m` / `from p import m` and `m.name(...)`.
    fn users_by_name(&self, file: &str, name: &str) -> Vec<(Symbol, Via, u32)> {
        use xfile_python::ImportTarget;
        let mut users = Vec::new();
        let importers: BTreeSet<String> = self
            .imports_into(file)
            .into_iter()
            .map(|i| i.importer)
            .collect();
        let module = self.engine.module_name(file);
        for importer in importers.into_iter().filter(|i| i != file) {
            let Some(facts) = self.engine.facts(&importer) else {
                continue;
            };
            let semantic = &facts.semantic;
            let line = |site: u32| facts.sites.get(site as usize).map_or(0, |s| s.line);
            // The chains that name `name` in this file: `[binding]` for
            // `from m import name`, `[m.., name]` for a module import.
            let mut chains: Vec<Vec<&str>> = Vec::new();
            for import in &semantic.imports {
                match &import.target {
                    ImportTarget::From { name: imported, .. } if imported == name => {
                        users.push((
                            symbol_of(&importer, "<module>"),
                            Via::Imports,
                            line(import.site),
                        ));
                        chains.push(vec![import.alias.as_deref().unwrap_or(name)]);
                    }
                    ImportTarget::From { name: imported, .. }
                        if module.rsplit('.').next() == Some(imported.as_str()) =>
                    {
                        let bound = import.alias.as_deref().unwrap_or(imported);
                        chains.push(vec![bound, name]);
                    }
                    ImportTarget::Module { dotted } if *dotted == module => {
                        let mut chain: Vec<&str> = match &import.alias {
                            Some(alias) => vec![alias.as_str()],
                            None => dotted.split('.').collect(),
                        };
                        chain.push(name);
                        chains.push(chain);
                    }
                    _ => {}
                }
            }
            for call in &semantic.calls {
                let path: Vec<&str> = call.path.iter().map(|n| n.as_str()).collect();
                if !chains.iter().any(|c| path.starts_with(c)) {
                    continue;
                }
                let caller = semantic
                    .call_sites
                    .iter()
                    .find(|c| c.site == call.site)
                    .and_then(|c| semantic.scopes.get(c.caller as usize))
                    .map_or("<module>", |s| s.as_str());
                users.push((symbol_of(&importer, caller), Via::Calls, line(call.site)));
            }
        }
        users
    }
}

/// One version of a file: its lines and its symbol definitions.
struct Side<'a> {
    lines: Vec<&'a str>,
    symbols: Vec<&'a Definition>,
}

impl<'a> Side<'a> {
    fn new(text: &'a str, definitions: &'a [Definition]) -> Self {
        Side {
            lines: text.lines().collect(),
            symbols: definitions.iter().filter(|d| is_symbol(d)).collect(),
        }
    }

    /// The innermost definition holding 1-based `line`.
    fn holder(&self, line: u32) -> Option<&'a Definition> {
        self.symbols
            .iter()
            .filter(|d| d.start_line <= line && line <= d.end_line)
            .min_by_key(|d| d.end_line - d.start_line)
            .copied()
    }

    fn definition(&self, qualname: &str) -> Option<&'a Definition> {
        self.symbols
            .iter()
            .find(|d| d.qualname == qualname)
            .copied()
    }

    fn has(&self, qualname: &str) -> bool {
        self.definition(qualname).is_some()
    }

    /// Whether 1-based `line` holds code: not blank, not a comment.
    fn is_code(&self, line: u32) -> bool {
        let text = self
            .lines
            .get(line.saturating_sub(1) as usize)
            .map_or("", |l| l.trim());
        !text.is_empty() && !text.starts_with('#')
    }
}

/// The breadth-first walk from the changed symbols to their dependents.
struct Walk<'s> {
    service: &'s Service,
    found: Vec<Dependent>,
    /// Index in `found` and the changed symbols reaching each dependent.
    seen: BTreeMap<Symbol, (usize, BTreeSet<usize>)>,
    starts: BTreeSet<Symbol>,
    /// Import references into each file, read once.
    imports: HashMap<String, Vec<ImportInto>>,
    complete: bool,
}

impl<'s> Walk<'s> {
    fn new(service: &'s Service) -> Self {
        Walk {
            service,
            found: Vec::new(),
            seen: BTreeMap::new(),
            starts: BTreeSet::new(),
            imports: HashMap::new(),
            complete: true,
        }
    }

    /// Walks from `from` to its dependents; what depends on it directly is
    /// `first` when given instead of looked up: what still uses a
    /// definition or module that is gone, which nothing resolves to.
    fn start(
        &mut self,
        from: Symbol,
        mut first: Option<Vec<(Symbol, Via, u32)>>,
        origin: usize,
        depth: usize,
    ) {
        self.starts.insert(from.clone());
        let mut queue = VecDeque::from([(from, 0)]);
        while let Some((symbol, level)) = queue.pop_front() {
            if level == depth {
                continue;
            }
            let direct = match first.take() {
                Some(given) => given,
                None => self.direct(&symbol),
            };
            for (next, via, line) in direct {
                if self.starts.contains(&next) || next == symbol {
                    continue;
                }
                if let Some((_, origins)) = self.seen.get_mut(&next) {
                    // Reached again: by one more changed symbol, maybe.
                    origins.insert(origin);
                    continue;
                }
                if self.found.len() >= WORK_LIMIT {
                    self.complete = false;
                    return;
                }
                self.seen
                    .insert(next.clone(), (self.found.len(), BTreeSet::from([origin])));
                self.found.push(Dependent {
                    symbol: next.display(),
                    depth: level + 1,
                    via,
                    of: symbol.display(),
                    line,
                    reaches: 0,
                });
                // An import alone runs nothing: what the importer does
                // with the name is found as its calls and bases.
                if via != Via::Imports && next.qualname != "<module>" {
                    queue.push_back((next, level + 1));
                }
            }
        }
    }

    /// What depends on `symbol` directly, with the line where.
    fn direct(&mut self, symbol: &Symbol) -> Vec<(Symbol, Via, u32)> {
        let engine = &self.service.engine;
        let interner = engine.interner();
        let mut direct = Vec::new();
        if symbol.qualname != "<module>" {
            for edge in self.service.calls_of(&symbol.file, &symbol.qualname) {
                let file = interner.node_text(edge.file).to_string();
                let line = engine
                    .facts(&file)
                    .and_then(|f| f.sites.get(edge.site.0 as usize))
                    .map_or(0, |site| site.line);
                let caller = interner.sym_text(edge.caller).to_string();
                direct.push((
                    Symbol {
                        file,
                        qualname: caller,
                    },
                    Via::Calls,
                    line,
                ));
            }
            // Only a class (one of the file's class facts, which the class
            // table is built from) has subclasses; asking the table of
            // every method and function (a scan of every class's
            // resolution order each) was a third of the walk.
            let is_class = engine.facts(&symbol.file).is_some_and(|facts| {
                facts
                    .semantic
                    .classes
                    .iter()
                    .any(|c| c.qualname == symbol.qualname)
            });
            let subclasses = if is_class {
                engine.subclasses(&symbol.file, &symbol.qualname)
            } else {
                Vec::new()
            };
            for (file, class) in subclasses {
                let line = engine
                    .facts(&file)
                    .and_then(|f| f.definitions.iter().find(|d| d.qualname == class))
                    .map_or(0, |d| d.start_line);
                direct.push((symbol_of(&file, &class), Via::Subclasses, line));
            }
        }
        // A module-level change reaches every importer; a definition,
        // those importing it by name. Only module-level definitions can be
        // imported by name (an import resolves to a module-level binding),
        // so a method or a nested function has no importers to look up.
        let importable = symbol.qualname == "<module>" || !symbol.qualname.contains('.');
        if importable {
            for import in self.imports_of(&symbol.file) {
                if symbol.qualname == "<module>" || import.name.as_deref() == Some(&symbol.qualname)
                {
                    direct.push((
                        symbol_of(&import.importer, "<module>"),
                        Via::Imports,
                        import.line,
                    ));
                }
            }
        }
        direct.sort_by(|a, b| (&a.0, a.2).cmp(&(&b.0, b.2)));
        direct.dedup_by(|a, b| a.0 == b.0);
        direct
    }

    /// The import statements that reach `file`, read once per walk.
    fn imports_of(&mut self, file: &str) -> &[ImportInto] {
        let service = self.service;
        self.imports
            .entry(file.to_string())
            .or_insert_with(|| service.imports_into(file))
    }

    /// (test code, other code), each nearest first, then by how many
    /// changed symbols they reach, then by name.
    fn ranked(mut self) -> (Vec<Dependent>, Vec<Dependent>) {
        for (index, origins) in self.seen.values() {
            self.found[*index].reaches = origins.len();
        }
        self.found.sort_by(|a, b| {
            (a.depth, std::cmp::Reverse(a.reaches), &a.symbol).cmp(&(
                b.depth,
                std::cmp::Reverse(b.reaches),
                &b.symbol,
            ))
        });
        let engine = &self.service.engine;
        self.found.into_iter().partition(|d| {
            d.symbol
                .split_once("::")
                .is_some_and(|(file, _)| engine.is_test_module(file))
        })
    }
}

impl Impact {
    /// Markdown within `budget` tokens: dependents and tests are cut
    /// from the end (the least related first), with a line saying so.
    pub fn to_text(&self, budget: usize) -> String {
        let budget = budget.saturating_sub(CLOSING_TOKENS);
        let mut head = format!(
            "## impact of the working tree against {}\n\n{} files changed, {} symbols changed; dependents to depth {}\n",
            self.base,
            self.files.len(),
            self.changed.len(),
            self.depth
        );
        if self.files.is_empty() {
            head.push_str("\nNo changes.\n");
            return head;
        }
        head.push_str("\n### Changed\n");
        for c in &self.changed {
            let change = match c.change {
                Change::Added => "added",
                Change::Modified => "modified",
                Change::Removed => "removed",
            };
            let _ = writeln!(
                head,
                "- {} ({change}, lines {}-{})",
                c.symbol, c.start_line, c.end_line
            );
        }
        let line = |d: &Dependent| {
            let via = match d.via {
                Via::Calls => "calls",
                Via::Subclasses => "subclasses",
                Via::Imports => "imports",
            };
            let also = if d.reaches > 1 {
                format!(", reaches {} changed symbols", d.reaches)
            } else {
                String::new()
            };
            format!(
                "- {} ({via} {} at line {}, depth {}{also})\n",
                d.symbol, d.of, d.line, d.depth
            )
        };
        let mut items: Vec<(usize, String)> = Vec::new();
        items.extend(self.dependents.iter().map(|d| (0, line(d))));
        items.extend(self.test_dependents.iter().map(|d| (1, line(d))));
        items.extend(
            self.covering_tests
                .iter()
                .map(|t| (2, format!("- {} (covers {})\n", t.test, t.covers))),
        );
        // Each item's line, with its section's heading when it is the
        // section's first: parts tokenized once (`paging::part_tokens`).
        let parts: Vec<String> = items
            .iter()
            .enumerate()
            .map(|(i, (kind, text))| {
                let mut part = String::new();
                if i == 0 || items[i - 1].0 != *kind {
                    part.push_str(match kind {
                        0 => "\n### Dependents, nearest first\n",
                        1 => "\n### Tests that use them\n",
                        _ => "\n### Test modules covering the changed and dependent files\n",
                    });
                }
                part.push_str(text);
                part
            })
            .collect();
        let room = budget.saturating_sub(count_tokens(&head));
        let costs = part_tokens(&parts);
        let shown = fitting_parts(&costs, room);
        let shown = if costs[..shown].iter().sum::<usize>() <= room {
            shown
        } else {
            0
        };
        let render = |n: usize| parts[..n].concat();
        let mut out = head + &render(shown);
        if self.dependents.is_empty() && self.test_dependents.is_empty() {
            out.push_str("\nNo dependents found in the project.\n");
        }
        if shown < items.len() {
            let _ = writeln!(
                out,
                "\n{} of {} lines not shown, cut by the answer budget; ask with a smaller depth, or get_callers on one symbol.",
                items.len() - shown,
                items.len()
            );
        } else if !self.complete {
            let _ = writeln!(
                out,
                "\nThe walk stopped at {WORK_LIMIT} dependents; ask with a smaller depth."
            );
        }
        out
    }
}
