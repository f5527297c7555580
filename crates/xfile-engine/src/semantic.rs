//! The engine's answers, typed: references (imports, calls, bases) from and
//! to a file, how many files use a definition, and the import cycles.
//!
//! This is the one place that decides what is true for every adapter. The
//! fail-safe is already applied by the rules (`rules/resolution.dl`: an
//! ambiguous name resolves to nothing), so what is read here is certain and
//! a filter by source and a filter by target see the same references
//! (one place decides what is true). Nothing here renders text: the service formats.

use std::collections::{BTreeSet, VecDeque};

use rustc_hash::FxHashMap;

use super::datalog::{InputFact, Node, Outputs, Site, Sym, Warning};
use super::db::{self, Bucket, Db, Project};

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
    let defined_in = keyed(outputs.import_defined_in(), |t| t.0, file);
    let mut out: Vec<Reference> = keyed(outputs.imports(), |t| t.0, file)
        .iter()
        .map(|t| {
            // One tuple per site at most: `Resolves` is unique per name.
            let defined = defined_in.iter().find(|d| d.1 == t.1);
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
        keyed(outputs.calls(), |t| t.0, file)
            .iter()
            .map(|t| resolved(RefKind::Call, t.1, t.2, t.3)),
    );
    out.extend(
        keyed(outputs.inherits(), |t| t.0, file)
            .iter()
            .map(|t| resolved(RefKind::Inheritance, t.1, t.2, t.3)),
    );
    out.sort_unstable();
    out
}

/// `(file, dependent)` for every `DependentOf` tuple, sorted: who depends
/// on a file, gathered from each file's own rules (a file's `DependentOf`
/// tuples are derived with its `file` stage), without the union of every
/// relation that `program` builds.
#[salsa::tracked(returns(ref))]
pub(crate) fn dependents_index(db: &dyn Db, project: Project) -> Vec<(Node, Node)> {
    let mut pairs: Vec<(Node, Node)> = crate::db::gathered_buckets(db, project)
        .iter()
        .flat_map(|&bucket| bucket_dependents(db, project, bucket))
        .copied()
        .collect();
    // Sorted runs, one per bucket: the stable sort merges them.
    pairs.sort();
    pairs.dedup();
    pairs
}

/// One bucket's files' `DependentOf` pairs, sorted.
#[salsa::tracked(returns(ref))]
pub(crate) fn bucket_dependents(
    db: &dyn Db,
    project: Project,
    bucket: Bucket,
) -> Vec<(Node, Node)> {
    db.log().executed("bucket_dependents", None);
    let mut pairs: Vec<(Node, Node)> = bucket
        .files(db)
        .iter()
        .flat_map(|&file| db::file_stage(db, project, file).dependent_of().iter())
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
    // Stage by stage: the union of every relation (`program`), built for
    // these three, was the largest thing a server kept (35 MB on Django).
    let uses = stage_outputs(db, project).flat_map(|outputs| {
        let calls = outputs.calls().iter().map(|t| (t.0, t.2, t.3));
        let inherits = outputs.inherits().iter().map(|t| (t.0, t.2, t.3));
        let imports = outputs.import_defined_in().iter().map(|t| (t.0, t.2, t.3));
        calls.chain(inherits).chain(imports)
    });
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

/// Every stage's outputs but the union's: the whole-project stages and
/// each file's own `file` stage. What `program` concatenates, read here
/// relation by relation so that an answer about one relation does not
/// build (and keep) the union of all of them.
fn stage_outputs(db: &dyn Db, project: Project) -> impl Iterator<Item = &Outputs> {
    whole_project_outputs(db, project)
        .into_iter()
        .chain(db::all_files(db, project).map(move |file| db::file_stage(db, project, file)))
}

/// The outputs of the stages that run over the whole project.
fn whole_project_outputs(db: &dyn Db, project: Project) -> [&Outputs; 4] {
    [
        db::resolve_stage(db, project),
        db::classes_outputs(db, project),
        db::project_stage(db, project),
        db::report_stage(db, project),
    ]
}

/// The `Warning` tuples of every stage, sorted and without duplicates: the
/// relation `program` holds, gathered without the union of every relation
/// (what `xfile index` and the warning log read). The file rules' share
/// is read bucket by bucket, so an edit gathers one bucket's files again,
/// not every file's.
#[salsa::tracked(returns(ref))]
pub(crate) fn warnings(db: &dyn Db, project: Project) -> Vec<Warning> {
    distinct(
        whole_project_outputs(db, project)
            .into_iter()
            .flat_map(|outputs| outputs.warning().iter().copied())
            .chain(
                crate::db::gathered_buckets(db, project)
                    .iter()
                    .flat_map(|&bucket| bucket_warnings(db, project, bucket).iter().copied()),
            ),
    )
}

/// One bucket's files' `Warning` tuples from their file rules.
#[salsa::tracked(returns(ref))]
fn bucket_warnings(db: &dyn Db, project: Project, bucket: Bucket) -> Vec<Warning> {
    db.log().executed("bucket_warnings", None);
    bucket
        .files(db)
        .iter()
        .flat_map(|&file| db::file_stage(db, project, file).warning().iter().copied())
        .collect()
}

/// The tuples sorted, each once (a relation several stages publish).
fn distinct<T: Copy + Ord>(tuples: impl Iterator<Item = T>) -> Vec<T> {
    let mut all: Vec<T> = tuples.collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// How many imports, calls and bases the union of every stage holds (as
/// `program` would count them, duplicates once), without building it.
#[salsa::tracked(returns(copy))]
pub(crate) fn reference_counts(db: &dyn Db, project: Project) -> [usize; 3] {
    [
        distinct(stage_outputs(db, project).flat_map(|o| o.imports().iter().copied())).len(),
        distinct(stage_outputs(db, project).flat_map(|o| o.calls().iter().copied())).len(),
        distinct(stage_outputs(db, project).flat_map(|o| o.inherits().iter().copied())).len(),
    ]
}

/// `CycleEdge` as adjacency, sorted by node: each file's successors on a
/// cycle, ordered by path, so that the cycles found (shortest first, ties
/// by path) are the same whatever the interning order.
#[salsa::tracked(returns(ref))]
pub(crate) fn cycle_adjacency(db: &dyn Db, project: Project) -> Vec<(Node, Vec<Node>)> {
    db::project_stage(db, project)
        .cycle_edge()
        .chunk_by(|a, b| a.0 == b.0)
        .map(|edges| {
            let mut next: Vec<Node> = edges.iter().map(|t| t.1).collect();
            next.sort_by_cached_key(|&n| db.interner().node_text(n));
            (edges[0].0, next)
        })
        .collect()
}

/// One shortest cycle per group of files that import each other in a
/// circle (the `CycleGroup` facts), from the group's first file by path
/// back to it; groups in path order.
#[salsa::tracked(returns(ref))]
pub(crate) fn cycles(db: &dyn Db, project: Project) -> Vec<Vec<Node>> {
    let mut groups: Vec<Node> = db::cycle_groups(db, project)
        .iter()
        .filter_map(|fact| match fact {
            InputFact::CycleGroup(t) => Some(t.1),
            _ => None,
        })
        .collect();
    groups.sort_by_cached_key(|&n| db.interner().node_text(n));
    groups.dedup();
    let adjacency = cycle_adjacency(db, project);
    groups
        .into_iter()
        .filter_map(|group| shortest_path(adjacency, group, group, usize::MAX))
        .collect()
}

/// The shortest import cycle through `file`, from it back to it, if it is
/// on one.
pub(crate) fn cycle_through(db: &dyn Db, project: Project, file: Node) -> Option<Vec<Node>> {
    shortest_path(cycle_adjacency(db, project), file, file, usize::MAX)
}

/// Modules the search for one warning's cycle visits at most: a warning
/// stands at every import on a cycle, so an unbounded search made a ring
/// of n modules cost n² (5,000 modules: 25 million steps).
const CYCLE_SEARCH: usize = 1_024;

/// The shortest import cycle that starts with the edge `file` → `next`,
/// from `file` back to it; `None` also when it is not found among the
/// first [`CYCLE_SEARCH`] modules searched.
pub(crate) fn cycle_via(
    db: &dyn Db,
    project: Project,
    file: Node,
    next: Node,
) -> Option<Vec<Node>> {
    let mut cycle = vec![file];
    cycle.extend(shortest_path(
        cycle_adjacency(db, project),
        next,
        file,
        CYCLE_SEARCH,
    )?);
    Some(cycle)
}

/// The shortest path of one or more cycle edges from `from` to `to`
/// (breadth first, successors in path order), both ends included.
fn shortest_path(
    adjacency: &[(Node, Vec<Node>)],
    from: Node,
    to: Node,
    max_visited: usize,
) -> Option<Vec<Node>> {
    let successors = |node: Node| -> &[Node] {
        adjacency
            .binary_search_by_key(&node, |(n, _)| *n)
            .map_or(&[], |at| adjacency[at].1.as_slice())
    };
    let mut previous: FxHashMap<Node, Node> = FxHashMap::default();
    let mut queue = VecDeque::from([from]);
    while let Some(node) = queue.pop_front() {
        for &next in successors(node) {
            if next == to {
                let mut path = vec![to, node];
                let mut at = node;
                while at != from {
                    at = *previous.get(&at)?;
                    path.push(at);
                }
                path.reverse();
                return Some(path);
            }
            if next != from && !previous.contains_key(&next) {
                if previous.len() >= max_visited {
                    return None;
                }
                previous.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    None
}

/// One edge of the function-level call graph: the call at `site` of
/// `file`, made in `caller`, calls `name` of `target`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallEdge {
    pub file: Node,
    pub site: Site,
    pub caller: Sym,
    pub target: Node,
    pub name: Sym,
}

impl From<&super::datalog::CallsSymbol> for CallEdge {
    fn from(t: &super::datalog::CallsSymbol) -> Self {
        CallEdge {
            file: t.0,
            site: t.1,
            caller: t.2,
            target: t.3,
            name: t.4,
        }
    }
}

/// Every call edge, sorted by callee (`target`, `name`), then caller: who
/// calls a symbol, read from each file's own rules. Built only when a
/// caller query asks, never on the update path.
#[salsa::tracked(returns(ref))]
pub(crate) fn callers_index(db: &dyn Db, project: Project) -> Vec<CallEdge> {
    let mut edges: Vec<CallEdge> = db::all_files(db, project)
        .flat_map(|file| db::file_stage(db, project, file).calls_symbol().iter())
        .map(CallEdge::from)
        .collect();
    edges.sort_unstable_by_key(|e| (e.target, e.name, e.file, e.caller, e.site));
    edges.dedup();
    edges
}

/// The calls made by `caller` of `file`, from that file's own rules.
pub(crate) fn callees(outputs: &Outputs, file: Node, caller: Sym) -> Vec<CallEdge> {
    keyed(outputs.calls_symbol(), |t| t.0, file)
        .iter()
        .filter(|t| t.2 == caller)
        .map(CallEdge::from)
        .collect()
}

/// The calls of `name` of `target`, from every file.
pub(crate) fn callers(db: &dyn Db, project: Project, target: Node, name: Sym) -> &[CallEdge] {
    let index = callers_index(db, project);
    let start = index.partition_point(|e| (e.target, e.name) < (target, name));
    let end = index.partition_point(|e| (e.target, e.name) <= (target, name));
    &index[start..end]
}
