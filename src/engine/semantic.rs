//! The engine's answers, typed: references (imports, calls, bases) from and
//! to a file, how many files use a definition, and the import cycles.
//!
//! This is the one place that decides what is true for every adapter. The
//! fail-safe is already applied by the rules (`rules/resolution.dl`: an
//! ambiguous name resolves to nothing), so what is read here is certain and
//! a filter by source and a filter by target see the same references
//! (DESIGN invariant 9). Nothing here renders text: the service formats.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::datalog::{Node, Outputs, Site, Sym};
use super::db::{self, Db, Project};

/// What a reference is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RefKind {
    Import,
    Call,
    Inheritance,
}

/// One import, call or class base of a file, resolved for certain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reference {
    pub source: Node,
    pub site: Site,
    pub kind: RefKind,
    /// The module an import names, or the file (or marker) that defines
    /// what a call or base refers to.
    pub target: Node,
    /// The definition's name in `target` (for an import, in `defined_in`).
    pub symbol: Option<Sym>,
    /// For `from m import name`: the file that finally defines `name`,
    /// following re-exports.
    pub defined_in: Option<Node>,
}

impl Reference {
    /// Whether this reference points into `file` (directly, or for an
    /// import through the definition it reaches).
    pub fn reaches(&self, file: Node) -> bool {
        self.target == file || self.defined_in == Some(file)
    }
}

/// The run of `tuples` (sorted by `first`) whose `first` is `key`.
pub(crate) fn keyed<T>(tuples: &[T], first: impl Fn(&T) -> Node, key: Node) -> &[T] {
    let start = tuples.partition_point(|t| first(t) < key);
    let end = tuples.partition_point(|t| first(t) <= key);
    &tuples[start..end]
}

/// The references of one source file, in site order.
pub(crate) fn references_from(outputs: &Outputs, file: Node) -> Vec<Reference> {
    let defined_in = keyed(&outputs.import_defined_in, |t| t.0, file);
    let mut out: Vec<Reference> = keyed(&outputs.imports, |t| t.0, file)
        .iter()
        .map(|t| {
            // One tuple per site at most: `Resolves` is unique per name.
            let defined = keyed_site(defined_in, t.1);
            Reference {
                source: t.0,
                site: t.1,
                kind: RefKind::Import,
                target: t.2,
                symbol: defined.map(|d| d.3),
                defined_in: defined.map(|d| d.2),
            }
        })
        .collect();
    let resolved = |kind, site, target, symbol| Reference {
        source: file,
        site,
        kind,
        target,
        symbol: Some(symbol),
        defined_in: None,
    };
    out.extend(
        keyed(&outputs.calls, |t| t.0, file)
            .iter()
            .map(|t| resolved(RefKind::Call, t.1, t.2, t.3)),
    );
    out.extend(
        keyed(&outputs.inherits, |t| t.0, file)
            .iter()
            .map(|t| resolved(RefKind::Inheritance, t.1, t.2, t.3)),
    );
    out.sort_unstable();
    out
}

fn keyed_site(
    tuples: &[super::datalog::ImportDefinedIn],
    site: Site,
) -> Option<&super::datalog::ImportDefinedIn> {
    tuples.iter().find(|t| t.1 == site)
}

/// Every reference of the project.
pub(crate) fn references(outputs: &Outputs, files: impl Iterator<Item = Node>) -> Vec<Reference> {
    files.flat_map(|f| references_from(outputs, f)).collect()
}

/// `(file, dependent)` for every `DependentOf` tuple, sorted: who depends
/// on a file, gathered from each file's own rules (a file's `DependentOf`
/// tuples are derived with its `file` stage), without the union of every
/// relation that `program` builds.
#[salsa::tracked(returns(ref))]
pub(crate) fn dependents_index(db: &dyn Db, project: Project) -> Vec<(Node, Node)> {
    let mut pairs: Vec<(Node, Node)> = project
        .files(db)
        .iter()
        .flat_map(|&file| db::file_stage(db, project, file).dependent_of.iter())
        .map(|t| (t.0, t.1))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

/// The files that depend on `file`.
pub(crate) fn dependents(db: &dyn Db, project: Project, file: Node) -> &[(Node, Node)] {
    keyed(dependents_index(db, project), |t| t.0, file)
}

/// How many other files use each definition `(file, name)`: by importing
/// it (through any re-export chain), calling it or inheriting from it.
/// Sorted by key, for binary search.
#[salsa::tracked(returns(ref))]
pub(crate) fn usage_counts(db: &dyn Db, project: Project) -> Vec<((Node, Sym), u32)> {
    let outputs = db::program(db, project);
    let uses = outputs
        .calls
        .iter()
        .map(|t| (t.0, t.2, t.3))
        .chain(outputs.inherits.iter().map(|t| (t.0, t.2, t.3)))
        .chain(outputs.import_defined_in.iter().map(|t| (t.0, t.2, t.3)));
    let users: BTreeSet<(Node, Sym, Node)> = uses
        .filter(|(source, target, _)| source != target)
        .map(|(source, target, name)| (target, name, source))
        .collect();
    let mut counts: Vec<((Node, Sym), u32)> = Vec::new();
    for (target, name, _) in users {
        match counts.last_mut() {
            Some((key, n)) if *key == (target, name) => *n += 1,
            _ => counts.push(((target, name), 1)),
        }
    }
    counts
}

/// One shortest cycle per group of files that import each other in a
/// circle, starting and ending at the group's first file by path (paths,
/// not interning order, so the answer is the same on every run).
/// `CycleEdge` tuples (rules/cycles.dl) decide which edges lie on a cycle;
/// this only picks a readable path through each group.
#[salsa::tracked(returns(ref))]
pub(crate) fn cycles(db: &dyn Db, project: Project) -> Vec<Vec<Node>> {
    let adjacency = cycle_adjacency(db, db::program(db, project));
    // Every cycle edge joins two files of the same strongly connected
    // group, so the groups are the connected components of these edges.
    let mut seen: BTreeSet<Named> = BTreeSet::new();
    let mut found = Vec::new();
    for start in adjacency.keys() {
        if seen.contains(start) {
            continue;
        }
        let group = component(&adjacency, start);
        let first = group
            .iter()
            .next()
            .cloned()
            .unwrap_or_else(|| start.clone());
        seen.extend(group);
        if let Some(cycle) = shortest_cycle(&adjacency, &first) {
            found.push(cycle.into_iter().map(|(_, node)| node).collect());
        }
    }
    found
}

/// The shortest import cycle through `file`, from it back to it, if it is
/// on one.
pub(crate) fn cycle_through(db: &dyn Db, project: Project, file: Node) -> Option<Vec<Node>> {
    let adjacency = cycle_adjacency(db, db::program(db, project));
    let start = (db.interner().node_text(file), file);
    let cycle = shortest_cycle(&adjacency, &start)?;
    Some(cycle.into_iter().map(|(_, node)| node).collect())
}

/// `CycleEdge` as adjacency sets, ordered by path.
fn cycle_adjacency(db: &dyn Db, outputs: &Outputs) -> Adjacency {
    let named = |node: Node| (db.interner().node_text(node), node);
    let mut adjacency: Adjacency = BTreeMap::new();
    for edge in &outputs.cycle_edge {
        adjacency
            .entry(named(edge.0))
            .or_default()
            .insert(named(edge.1));
    }
    adjacency
}

/// A file by path, then node: ordered by path.
type Named = (std::sync::Arc<str>, Node);
type Adjacency = BTreeMap<Named, BTreeSet<Named>>;

fn component(adjacency: &Adjacency, start: &Named) -> BTreeSet<Named> {
    let mut undirected: BTreeMap<&Named, Vec<&Named>> = BTreeMap::new();
    for (from, tos) in adjacency {
        for to in tos {
            undirected.entry(from).or_default().push(to);
            undirected.entry(to).or_default().push(from);
        }
    }
    let mut group = BTreeSet::new();
    let mut stack = vec![start];
    while let Some(node) = stack.pop() {
        if group.insert(node.clone()) {
            stack.extend(undirected.get(node).into_iter().flatten().copied());
        }
    }
    group
}

fn shortest_cycle(adjacency: &Adjacency, start: &Named) -> Option<Vec<Named>> {
    let mut previous: BTreeMap<&Named, &Named> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for next in adjacency.get(node).into_iter().flatten() {
            if next == start {
                let mut back = Vec::new();
                let mut at = node;
                while at != start {
                    back.push(at.clone());
                    at = previous.get(at)?;
                }
                let mut cycle = vec![start.clone()];
                cycle.extend(back.into_iter().rev());
                cycle.push(start.clone());
                return Some(cycle);
            }
            if !previous.contains_key(next) {
                previous.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    None
}
