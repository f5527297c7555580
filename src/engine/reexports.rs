//! The `resolve` stage (rules/resolution.dl), one group of modules at a
//! time, so that an edit re-resolves only what it can change.
//!
//! A module's names depend on the modules it imports names from
//! (`from t import n`, `from t import *`), and only on those. The engine
//! builds that graph over project files, groups files that import names
//! from each other in a circle (strongly connected components, Tarjan), and
//! resolves each group with the rules over its members' facts plus, for
//! every module outside the group it imports names from, that module's
//! final candidates (`Settled` facts, from the target's own group) and the
//! facts that decide what its star export takes (`HasAll`, `StarExport`).
//! The union of all groups is what one program over every file derives
//! (checked against the reference program on every fixture and after every
//! randomized edit batch). Each group is a salsa query keyed by its
//! members, so a from-import edit in a leaf module re-runs one small
//! program instead of resolution over the whole project.

use petgraph::graphmap::DiGraphMap;

use super::datalog::{self, InputFact, Node, Outputs, Settled, Value};
use super::db::{self, Db, Project, SourceFile};
use super::semantic::keyed;

/// Files whose names resolve together: they import names from each other
/// in a circle (most groups are one file).
#[salsa::interned(debug)]
pub struct ResolveGroup<'db> {
    /// Sorted by node.
    #[returns(ref)]
    pub members: Vec<SourceFile>,
}

/// The project file `node` names, if it is one.
pub(crate) fn file_of(db: &dyn Db, project: Project, node: Node) -> Option<SourceFile> {
    if node.is_marker() {
        return None;
    }
    let files = db::files_by_node(db, project);
    let at = files.binary_search_by_key(&node, |(n, _)| *n).ok()?;
    Some(files[at].1)
}

/// The other project files `file` imports names from: the modules of its
/// `from m import name` bindings and star imports.
#[salsa::tracked(returns(ref))]
pub(crate) fn name_sources(db: &dyn Db, project: Project, file: SourceFile) -> Vec<SourceFile> {
    let me = db.interner().node(file.path(db));
    let mut nodes: Vec<Node> = db::resolve_share(db, project, file)
        .facts
        .iter()
        .filter_map(|fact| match fact {
            InputFact::BindsImported(t) => Some(t.2),
            InputFact::StarImport(t) => Some(t.2),
            _ => None,
        })
        .filter(|&node| node != me)
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    nodes
        .into_iter()
        .filter_map(|node| file_of(db, project, node))
        .collect()
}

/// Every group, dependencies before the groups that import names from
/// them, and for each file (by node) the index of its group.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Groups {
    /// Each group's members, sorted by node.
    pub(crate) members: Vec<Vec<SourceFile>>,
    /// `(file, group index)`, sorted by node.
    pub(crate) index: Vec<(Node, usize)>,
}

/// The groups of the project. Adding an import rarely changes them, so
/// the per-file `group_of` lookups that read this mostly stay as they were.
#[salsa::tracked(returns(ref))]
pub(crate) fn groups(db: &dyn Db, project: Project) -> Groups {
    db.log().executed("groups", None);
    let node = |file: SourceFile| db.interner().node(file.path(db));
    let mut graph: DiGraphMap<Node, ()> = DiGraphMap::new();
    for &(from, file) in db::files_by_node(db, project) {
        graph.add_node(from);
        for &target in name_sources(db, project, file) {
            graph.add_edge(from, node(target), ());
        }
    }
    // Tarjan's algorithm yields components in reverse topological order:
    // a group comes after every group it imports names from.
    let mut members = Vec::new();
    let mut index = Vec::new();
    for component in petgraph::algo::tarjan_scc(&graph) {
        let mut files: Vec<(Node, SourceFile)> = component
            .iter()
            .filter_map(|&n| Some((n, file_of(db, project, n)?)))
            .collect();
        files.sort_unstable_by_key(|(n, _)| *n);
        index.extend(files.iter().map(|(n, _)| (*n, members.len())));
        members.push(files.into_iter().map(|(_, f)| f).collect());
    }
    index.sort_unstable();
    Groups { members, index }
}

/// The group `file` belongs to. Per file, so a change to the grouping
/// re-resolves only the groups whose membership changed.
#[salsa::tracked(returns(copy))]
pub(crate) fn group_of<'db>(
    db: &'db dyn Db,
    project: Project,
    file: SourceFile,
) -> ResolveGroup<'db> {
    let node = db.interner().node(file.path(db));
    let groups = groups(db, project);
    let members = groups
        .index
        .binary_search_by_key(&node, |(n, _)| *n)
        .ok()
        .and_then(|at| groups.members.get(groups.index[at].1))
        .cloned()
        .unwrap_or_else(|| vec![file]);
    ResolveGroup::new(db, members)
}

/// The `resolve` rules over one group: its members' facts, and what it
/// needs to know of each module outside it that it imports names from.
#[salsa::tracked(returns(ref))]
pub(crate) fn group_resolution<'db>(
    db: &'db dyn Db,
    project: Project,
    group: ResolveGroup<'db>,
) -> Outputs {
    let members = group.members(db);
    db.log().executed(
        "group_resolution",
        members.first().map(|f| f.path(db).as_str()),
    );
    let mut facts: Vec<InputFact> = Vec::new();
    let mut sources: Vec<SourceFile> = Vec::new();
    for &member in members {
        facts.extend_from_slice(&db::resolve_share(db, project, member).facts);
        sources.extend(name_sources(db, project, member));
    }
    sources.retain(|s| !members.contains(s));
    sources.sort_unstable_by_key(|s| db.interner().node(s.path(db)));
    sources.dedup();
    for source in sources {
        let node = db.interner().node(source.path(db));
        let settled = group_resolution(db, project, group_of(db, project, source));
        facts.extend(
            keyed(&settled.candidate, |t| t.0, node)
                .iter()
                .map(|t| InputFact::Settled(Settled(t.0, t.1, t.2, t.3))),
        );
        facts.extend(
            db::resolve_share(db, project, source)
                .facts
                .iter()
                .filter(|f| matches!(f, InputFact::HasAll(_) | InputFact::StarExport(_)))
                .copied(),
        );
    }
    db::run_stage(
        db,
        "resolve_stage",
        &datalog::RESOLVE,
        &facts,
        &Outputs::default(),
    )
}

/// The tuples the `file` stage reads of the resolution of the project
/// files among `keys`: read from each one's group, so a file's slice
/// changes only when one of those groups' results did.
pub(crate) fn resolved_for(db: &dyn Db, project: Project, keys: &[Value]) -> Outputs {
    let mut out = Outputs::default();
    for key in keys {
        let Value::Node(node) = *key else { continue };
        let Some(file) = file_of(db, project, node) else {
            continue;
        };
        let resolution = group_resolution(db, project, group_of(db, project, file));
        out.extend(&(datalog::FILE.select_derived)(resolution, &[*key]));
    }
    out.normalize();
    out
}

/// Every group's resolution, dependencies first (so no group waits on a
/// deep chain of others): the whole `resolve` stage, as explanations,
/// queries and the reference check read it.
pub(crate) fn all_groups(db: &dyn Db, project: Project) -> Outputs {
    let mut outputs = Outputs::default();
    for members in &groups(db, project).members {
        let Some(&first) = members.first() else {
            continue;
        };
        outputs.extend(group_resolution(db, project, group_of(db, project, first)));
    }
    outputs.normalize();
    outputs
}
