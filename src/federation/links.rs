//! References across projects: an import, call or base that is
//! `<third-party:pkg…>` in one project lands in another that provides the
//! top-level module `pkg`. The fail-safe holds across projects too: a
//! top-level module two projects in scope provide links nowhere, and says
//! so in a note.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::service::Service;
use crate::service::calls::Call;
use crate::service::external::{ExternalRef, Landing};
use crate::service::links::{LinkKind, StringLink};
use crate::service::model::{Metadata, Relationship, RelationshipType};

/// One project's snapshot, under its name.
pub struct Peer {
    pub name: String,
    pub service: Service,
}

/// Which projects provide each top-level module.
struct Providers<'a> {
    peers: &'a [Peer],
    by_top: BTreeMap<String, Vec<usize>>,
    /// Landings by (project, module, name): many references name the same
    /// definition, and finding it reads the module's facts.
    landed: std::cell::RefCell<LandingMemo>,
}

type LandingMemo = rustc_hash::FxHashMap<(usize, String, Option<String>), Option<Landing>>;

/// Where a project's external reference lands.
enum Lands {
    /// No project in scope provides its top-level module (or the one that
    /// does holds no such definition): it stays third-party.
    Outside,
    Project(usize, Landing),
    /// Several projects provide the module: no link.
    Ambiguous(Vec<usize>),
}

impl<'a> Providers<'a> {
    fn new(peers: &'a [Peer]) -> Self {
        let mut by_top: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, peer) in peers.iter().enumerate() {
            for top in peer.service.modules().tops() {
                by_top.entry(top.to_string()).or_default().push(i);
            }
        }
        Providers {
            peers,
            by_top,
            landed: Default::default(),
        }
    }

    /// Where `r`, a reference of project `from`, lands.
    fn land(&self, from: usize, r: &ExternalRef) -> Lands {
        let top = r.module.split('.').next().unwrap_or(&r.module);
        let providers: Vec<usize> = self
            .by_top
            .get(top)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&p| p != from)
            .collect();
        match providers.as_slice() {
            [] => Lands::Outside,
            [one] => {
                let key = (*one, r.module.clone(), r.name.clone());
                let mut landed = self.landed.borrow_mut();
                let landing = landed
                    .entry(key)
                    .or_insert_with(|| self.peers[*one].service.land(&r.module, r.name.as_deref()));
                match landing {
                    Some(landing) => Lands::Project(*one, landing.clone()),
                    None => Lands::Outside,
                }
            }
            several => Lands::Ambiguous(several.to_vec()),
        }
    }

    /// The note for a module several projects provide.
    fn ambiguous_note(&self, module: &str, providers: &[usize]) -> String {
        let names: Vec<&str> = providers
            .iter()
            .map(|&p| self.peers[p].name.as_str())
            .collect();
        let top = module.split('.').next().unwrap_or(module);
        format!(
            "{top} is provided by {}: references to it link to none of them",
            names.join(" and ")
        )
    }
}

/// One reference in a `cross_refs` answer.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CrossReference {
    pub file: String,
    pub line: u32,
    /// `import`, `function_call` or `inheritance`.
    pub kind: &'static str,
    /// The referring line, trimmed.
    pub context: String,
    /// `path::Qualified.name` (or the module's path) in the defining project.
    pub target: String,
}

/// The references from one project into another.
#[derive(Clone, Debug, Serialize)]
pub struct CrossGroup {
    /// The referring project.
    pub from_project: String,
    /// The project that defines the symbol.
    pub to_project: String,
    pub references: Vec<CrossReference>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CrossRefs {
    pub symbol: String,
    pub cross_refs: Vec<CrossGroup>,
    /// References in all groups, listed or not.
    pub total: usize,
    /// Set when references are left out: how many are listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl CrossRefs {
    /// The answer with its first `n` references, in group order.
    pub fn first(&self, n: usize) -> CrossRefs {
        let mut left = n;
        let mut cut = CrossRefs {
            cross_refs: Vec::new(),
            ..self.clone()
        };
        for group in &self.cross_refs {
            if left == 0 {
                break;
            }
            let references: Vec<CrossReference> =
                group.references.iter().take(left).cloned().collect();
            left -= references.len();
            cut.cross_refs.push(CrossGroup {
                references,
                ..group.clone()
            });
        }
        cut.say_cut(n);
        cut
    }

    fn say_cut(&mut self, listed: usize) {
        self.truncated = (listed < self.total).then(|| {
            format!(
                "{listed} of {} references listed; ask with a qualified name (models.User) for fewer",
                self.total
            )
        });
    }
}

/// The last component of a dotted or qualified name.
fn last(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// The source line `line` of `file` in `service`, trimmed and bounded.
fn context_line(service: &Service, file: &str, line: u32) -> String {
    const MAX_CHARS: usize = 160;
    let whole = service.engine().text(file).unwrap_or_default();
    let text = whole
        .lines()
        .nth(line.saturating_sub(1) as usize)
        .unwrap_or("")
        .trim();
    match text.char_indices().nth(MAX_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

fn target_text(landing: &Landing) -> String {
    match &landing.symbol {
        Some(symbol) => format!("{}::{symbol}", landing.file),
        None => landing.file.clone(),
    }
}

/// The dotted name of where a reference lands: the module's, then the
/// qualified name of the definition, if any.
fn dotted(service: &Service, landing: &Landing) -> String {
    let module = service.engine().module_name(&landing.file);
    match &landing.symbol {
        Some(qualname) => format!("{module}.{qualname}"),
        None => module,
    }
}

/// Whether dotted name `name` is `symbol` or ends with it (`models.User`,
/// `corelib.models.User`, `User.save`).
fn ends_with(name: &str, symbol: &str) -> bool {
    name == symbol || (name.ends_with(symbol) && name[..name.len() - symbol.len()].ends_with('.'))
}

/// Every external reference of the projects in scope resolved once: the
/// ones that land in another project, by name and by target file, and the
/// notes on modules the fail-safe left unlinked. Built per set of project
/// states (see `Federation::index`), so answers are lookups.
pub struct CrossIndex {
    links: Vec<Link>,
    /// String-keyed links across projects (signals, hooks, entry points).
    keyed: Vec<KeyedLink>,
    /// Indexes into `keyed` by the key's last name (and whole key).
    keyed_by_name: rustc_hash::FxHashMap<String, Vec<usize>>,
    by_name: rustc_hash::FxHashMap<String, Vec<usize>>,
    by_target: rustc_hash::FxHashMap<(usize, String), Vec<usize>>,
    /// Notes on modules several projects provide, with those projects.
    notes: BTreeMap<String, Vec<usize>>,
}

/// One external reference of project `from` landing in project `to`.
struct Link {
    from: usize,
    to: usize,
    r: ExternalRef,
    landing: Landing,
    /// Where it lands (`corelib.models.User`) and the name as the
    /// referring code wrote it (`corelib.User`), for matching names.
    dotted: String,
    written: String,
    /// `path::name` of the landing, as answers show it.
    target: String,
}

impl Link {
    fn named(&self, symbol: &str) -> bool {
        ends_with(&self.dotted, symbol) || ends_with(&self.written, symbol)
    }
}

/// A string-keyed link of project `from` to project `to`: a signal's
/// receiver or sender to its definition, a hook implementation to its
/// specification, a plugin's entry point to the host that loads its group.
struct KeyedLink {
    from: usize,
    to: usize,
    kind: &'static str,
    key: String,
    file: String,
    line: u32,
    context: String,
    /// `path::name` or `path:line` of the other end, in `to`.
    target: String,
    /// The name a collection map lists for the link.
    symbol: String,
}

/// The string-keyed links between projects, and notes where a key has
/// several possible ends (the fail-safe: no link).
fn keyed_links(
    peers: &[Peer],
    providers: &Providers,
) -> (Vec<KeyedLink>, BTreeMap<String, Vec<usize>>) {
    let all: Vec<Vec<StringLink>> = peers.iter().map(|p| p.service.string_links()).collect();
    // Hook specifications and entry-point loads, by key.
    let mut ends: BTreeMap<(&'static str, &str), Vec<(usize, &StringLink)>> = BTreeMap::new();
    for (project, links) in all.iter().enumerate() {
        for link in links {
            match link.kind {
                LinkKind::HookSpec => ends
                    .entry(("hook", &link.key))
                    .or_default()
                    .push((project, link)),
                LinkKind::EntryPointLoaded => ends
                    .entry(("group", &link.key))
                    .or_default()
                    .push((project, link)),
                _ => {}
            }
        }
    }
    let mut keyed = Vec::new();
    let mut notes = BTreeMap::new();
    for (from, links) in all.iter().enumerate() {
        let made =
            |to: usize, kind: &'static str, link: &StringLink, target: String, symbol: String| {
                KeyedLink {
                    from,
                    to,
                    kind,
                    key: link.key.clone(),
                    file: link.file.clone(),
                    line: link.line,
                    context: link.context.clone(),
                    target,
                    symbol,
                }
            };
        for link in links {
            match link.kind {
                LinkKind::SignalReceiver | LinkKind::SignalSender => {
                    let Some((module, name)) = link.key.rsplit_once('.') else {
                        continue;
                    };
                    let reference = ExternalRef {
                        file: link.file.clone(),
                        line: link.line,
                        kind: crate::service::model::RelationshipType::Import,
                        source_symbol: None,
                        module: module.to_string(),
                        name: Some(name.to_string()),
                    };
                    let kind = if link.kind == LinkKind::SignalReceiver {
                        "signal_receiver"
                    } else {
                        "signal_sender"
                    };
                    match providers.land(from, &reference) {
                        Lands::Project(to, landing) => {
                            let symbol = landing.symbol.clone().unwrap_or_default();
                            let defined = all[to].iter().any(|d| {
                                d.kind == LinkKind::SignalDefinition
                                    && d.file == landing.file
                                    && last(&d.key) == symbol
                            });
                            if defined {
                                keyed.push(made(to, kind, link, target_text(&landing), symbol));
                            }
                        }
                        Lands::Ambiguous(several) => {
                            notes.insert(providers.ambiguous_note(module, &several), several);
                        }
                        Lands::Outside => {}
                    }
                }
                LinkKind::HookImpl | LinkKind::EntryPointProvided => {
                    let (what, kind) = if link.kind == LinkKind::HookImpl {
                        ("hook", "hook_impl")
                    } else {
                        ("group", "entry_point")
                    };
                    let others: Vec<&(usize, &StringLink)> = ends
                        .get(&(what, link.key.as_str()))
                        .into_iter()
                        .flatten()
                        .filter(|(project, _)| *project != from)
                        .collect();
                    let projects: BTreeSet<usize> = others.iter().map(|(p, _)| *p).collect();
                    // A hook has one specification; several projects
                    // specifying it link to none. A group may have several
                    // hosts: a plugin is loaded by each.
                    if what == "hook" && projects.len() > 1 {
                        let names: Vec<&str> =
                            projects.iter().map(|&p| peers[p].name.as_str()).collect();
                        notes.insert(
                            format!(
                                "hook {} is specified by {}: implementations link to none of them",
                                link.key,
                                names.join(" and ")
                            ),
                            projects.into_iter().collect(),
                        );
                        continue;
                    }
                    for (to, end) in others {
                        let target = format!("{}:{}", end.file, end.line);
                        keyed.push(made(*to, kind, link, target, link.key.clone()));
                    }
                }
                _ => {}
            }
        }
    }
    (keyed, notes)
}

impl CrossIndex {
    pub fn build(peers: &[Peer]) -> CrossIndex {
        let providers = Providers::new(peers);
        let mut links = Vec::new();
        let mut notes = BTreeMap::new();
        for (from, peer) in peers.iter().enumerate() {
            for r in peer.service.external_refs().all() {
                match providers.land(from, r) {
                    Lands::Outside => {}
                    Lands::Ambiguous(several) => {
                        let note = providers.ambiguous_note(&r.module, &several);
                        notes.insert(note, several);
                    }
                    Lands::Project(to, landing) => links.push(Link {
                        from,
                        to,
                        dotted: dotted(&peers[to].service, &landing),
                        written: match &r.name {
                            Some(name) => format!("{}.{name}", r.module),
                            None => r.module.clone(),
                        },
                        target: target_text(&landing),
                        r: r.clone(),
                        landing,
                    }),
                }
            }
        }
        let mut by_name: rustc_hash::FxHashMap<String, Vec<usize>> = Default::default();
        let mut by_target: rustc_hash::FxHashMap<(usize, String), Vec<usize>> = Default::default();
        for (i, link) in links.iter().enumerate() {
            by_name
                .entry(last(&link.dotted).to_string())
                .or_default()
                .push(i);
            if last(&link.written) != last(&link.dotted) {
                by_name
                    .entry(last(&link.written).to_string())
                    .or_default()
                    .push(i);
            }
            by_target
                .entry((link.to, link.landing.file.clone()))
                .or_default()
                .push(i);
        }
        let (keyed, keyed_notes) = keyed_links(peers, &providers);
        notes.extend(keyed_notes);
        let mut keyed_by_name: rustc_hash::FxHashMap<String, Vec<usize>> = Default::default();
        for (i, link) in keyed.iter().enumerate() {
            keyed_by_name
                .entry(last(&link.key).to_string())
                .or_default()
                .push(i);
            if last(&link.key) != link.key {
                keyed_by_name.entry(link.key.clone()).or_default().push(i);
            }
        }
        CrossIndex {
            links,
            keyed,
            keyed_by_name,
            by_name,
            by_target,
            notes,
        }
    }

    /// Notes on the modules `project` is one of several to provide (all
    /// notes for none).
    pub fn notes_for(&self, project: Option<usize>) -> Vec<String> {
        self.notes
            .iter()
            .filter(|(_, providers)| project.is_none_or(|p| providers.contains(&p)))
            .map(|(note, _)| note.clone())
            .collect()
    }
}

/// References in one project to `symbol` defined in another, grouped by
/// (referring, defining) project, deduplicated, in path and line order:
/// all counted, the first `limit` listed with their line's text.
pub fn cross_refs(peers: &[Peer], index: &CrossIndex, symbol: &str, limit: usize) -> CrossRefs {
    let mut found: Vec<(usize, usize, &str, u32, &'static str, &str)> = index
        .by_name
        .get(last(symbol))
        .into_iter()
        .flatten()
        .map(|&i| &index.links[i])
        .filter(|link| link.named(symbol))
        .map(|link| {
            (
                link.from,
                link.to,
                link.r.file.as_str(),
                link.r.line,
                link.r.kind.as_str(),
                link.target.as_str(),
            )
        })
        .collect();
    let keyed: Vec<&KeyedLink> = index
        .keyed_by_name
        .get(symbol)
        .or_else(|| index.keyed_by_name.get(last(symbol)))
        .into_iter()
        .flatten()
        .map(|&i| &index.keyed[i])
        .filter(|link| ends_with(&link.key, symbol))
        .collect();
    found.extend(keyed.iter().map(|link| {
        (
            link.from,
            link.to,
            link.file.as_str(),
            link.line,
            link.kind,
            link.target.as_str(),
        )
    }));
    found.sort();
    found.dedup();
    let keyed_context = |file: &str, line: u32| {
        keyed
            .iter()
            .find(|k| k.file == file && k.line == line)
            .map(|k| k.context.clone())
    };
    let mut groups: Vec<CrossGroup> = Vec::new();
    for (from, to, file, line, kind, target) in found.iter().take(limit) {
        let reference = CrossReference {
            context: keyed_context(file, *line)
                .unwrap_or_else(|| context_line(&peers[*from].service, file, *line)),
            file: file.to_string(),
            line: *line,
            kind,
            target: target.to_string(),
        };
        let (from, to) = (&peers[*from].name, &peers[*to].name);
        match groups.last_mut() {
            Some(group) if group.from_project == *from && group.to_project == *to => {
                group.references.push(reference)
            }
            _ => groups.push(CrossGroup {
                from_project: from.clone(),
                to_project: to.clone(),
                references: vec![reference],
            }),
        }
    }
    let mut answer = CrossRefs {
        symbol: symbol.to_string(),
        total: found.len(),
        truncated: None,
        cross_refs: groups,
        notes: index.notes_for(None),
    };
    answer.say_cut(limit.min(found.len()));
    answer
}

/// A project in a collection map.
#[derive(Clone, Debug, Serialize)]
pub struct MapProject {
    pub path: String,
    /// Definitions (classes, functions, methods, module-level names).
    pub symbol_count: usize,
}

/// References from one project into another.
#[derive(Clone, Debug, Serialize)]
pub struct MapEdge {
    pub from: String,
    pub to: String,
    pub cross_refs: usize,
    /// The defining project's definitions (or modules) referred to, sorted.
    pub symbols: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CollectionMap {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collection: Option<String>,
    pub projects: BTreeMap<String, MapProject>,
    pub edges: Vec<MapEdge>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Symbol names listed per edge at most (the count says all).
const EDGE_SYMBOLS: usize = 50;

/// The projects and the references between them, for a graph view.
pub fn collection_map(
    peers: &[Peer],
    index: &CrossIndex,
    collection: Option<&str>,
) -> CollectionMap {
    let mut edges: BTreeMap<(usize, usize), (usize, BTreeSet<String>)> = BTreeMap::new();
    for link in &index.links {
        let edge = edges.entry((link.from, link.to)).or_default();
        edge.0 += 1;
        let name = match &link.landing.symbol {
            Some(symbol) => symbol.clone(),
            None => peers[link.to]
                .service
                .engine()
                .module_name(&link.landing.file),
        };
        edge.1.insert(name);
    }
    for link in &index.keyed {
        let edge = edges.entry((link.from, link.to)).or_default();
        edge.0 += 1;
        edge.1.insert(link.symbol.clone());
    }
    CollectionMap {
        collection: collection.map(str::to_string),
        projects: peers
            .iter()
            .map(|peer| {
                let engine = peer.service.engine();
                let symbol_count = engine
                    .paths()
                    .filter_map(|p| engine.facts(p))
                    .map(|f| f.definitions.len())
                    .sum();
                let project = MapProject {
                    path: peer.service.root().display().to_string(),
                    symbol_count,
                };
                (peer.name.clone(), project)
            })
            .collect(),
        edges: edges
            .into_iter()
            .map(|((from, to), (count, symbols))| MapEdge {
                from: peers[from].name.clone(),
                to: peers[to].name.clone(),
                cross_refs: count,
                symbols: symbols.into_iter().take(EDGE_SYMBOLS).collect(),
            })
            .collect(),
        notes: index.notes_for(None),
    }
}

/// `project:path`, how a file of another project is named.
fn qualified(project: &str, path: &str) -> String {
    format!("{project}:{path}")
}

/// A cross-project relationship: both ends named `project:path`.
fn relationship(from: &Peer, r: &ExternalRef, to: &Peer, landing: &Landing) -> Relationship {
    Relationship {
        source_file: qualified(&from.name, &r.file),
        target_file: qualified(&to.name, &landing.file),
        relationship_type: r.kind,
        line_number: r.line,
        column: 0,
        source_symbol: r.source_symbol.clone(),
        target_symbol: landing.symbol.clone().or_else(|| r.name.clone()),
        target_line: landing.line,
        metadata: Metadata::default(),
    }
}

/// Which of `peers` is the project at `root`.
pub fn peer_at(peers: &[Peer], root: &std::path::Path) -> Option<usize> {
    peers.iter().position(|p| p.service.root() == root)
}

/// The relationships of project `to`'s `file` (or of its definition
/// `symbol` and its members) from other projects (what breaks elsewhere if
/// it changes), in project, path and line order, and notes on modules the
/// fail-safe left unlinked that `to` provides.
pub fn dependents_across(
    peers: &[Peer],
    index: &CrossIndex,
    to: usize,
    file: &str,
    symbol: Option<&str>,
) -> (Vec<Relationship>, Vec<String>) {
    let mut found = index
        .by_target
        .get(&(to, file.to_string()))
        .into_iter()
        .flatten()
        .map(|&i| {
            let link = &index.links[i];
            relationship(&peers[link.from], &link.r, &peers[to], &link.landing)
        })
        .collect();
    if let Some(symbol) = symbol {
        crate::service::of_symbol(&mut found, symbol);
    }
    (found, index.notes_for(Some(to)))
}

/// Project `from`'s relationships to third-party modules that land in
/// another project: the target named `project:path`, the source left as
/// it is (the answer is `from`'s); the rest are left alone.
pub fn dependencies_across(peers: &[Peer], from: usize, relationships: &mut [Relationship]) {
    let providers = Providers::new(peers);
    for rel in relationships.iter_mut() {
        let Some(module) = rel
            .target_file
            .strip_prefix("<third-party:")
            .and_then(|m| m.strip_suffix('>'))
        else {
            continue;
        };
        let r = ExternalRef {
            file: rel.source_file.clone(),
            line: rel.line_number,
            kind: rel.relationship_type,
            source_symbol: rel.source_symbol.clone(),
            module: module.to_string(),
            name: rel.target_symbol.clone(),
        };
        if let Lands::Project(to, landing) = providers.land(from, &r) {
            let mut crossed = relationship(&peers[from], &r, &peers[to], &landing);
            crossed.source_file = r.file;
            crossed.column = rel.column;
            crossed.metadata = std::mem::take(&mut rel.metadata);
            *rel = crossed;
        }
    }
}

/// The calls from other projects of `qualname` in project `to`'s `file`,
/// as direct callers (callers of those callers are their projects' own
/// business), files named `project:path`, in project, path and line order.
pub fn callers_across(
    peers: &[Peer],
    index: &CrossIndex,
    to: usize,
    file: &str,
    qualname: &str,
) -> Vec<Call> {
    let mut calls: Vec<Call> = index
        .by_target
        .get(&(to, file.to_string()))
        .into_iter()
        .flatten()
        .map(|&i| &index.links[i])
        .filter(|link| {
            link.r.kind == RelationshipType::FunctionCall
                && link.landing.symbol.as_deref() == Some(qualname)
        })
        .map(|link| {
            let from = &peers[link.from].name;
            let caller = link.r.source_symbol.as_deref().unwrap_or("<module>");
            Call {
                depth: 1,
                caller: format!("{from}:{}::{caller}", link.r.file),
                callee: format!("{file}::{qualname}"),
                file: qualified(from, &link.r.file),
                line: link.r.line,
                column: 0,
            }
        })
        .collect();
    calls.sort();
    calls.dedup();
    calls
}
