//! The `project` stage (import cycles, linked plugins) over every file's
//! share, with the cycle groups it joins.

use super::{
    Bucket, Db, Project, StageInputs, bucket_shares, classes_stage, resolve_stage, run_stage,
    whole_project_inputs,
};
use crate::datalog::{self, CycleGroup, InputFact, Node, Outputs};

#[salsa::tracked(returns(ref))]
pub(crate) fn bucket_project_shares(db: &dyn Db, project: Project, bucket: Bucket) -> StageInputs {
    db.log().executed("bucket_project_shares", None);
    bucket_shares(db, project, bucket, &datalog::PROJECT)
}

/// The `resolve` tuples the `project` stage reads (entry points): a query
/// of its own, like the `file` stage's slices, so that a change to name
/// resolution that leaves them as they were does not re-gather every
/// file's share of the stage (`resolved_for_report` does the same for the
/// `report` stage).
#[salsa::tracked(returns(ref))]
pub(crate) fn resolved_for_project(db: &dyn Db, project: Project) -> Outputs {
    let mut derived = Outputs::default();
    datalog::PROJECT.take_derived(&mut derived, resolve_stage(db, project));
    datalog::PROJECT.take_derived(&mut derived, classes_stage(db, project));
    derived
}

/// What the `project` stage reads: base facts and the tuples of earlier
/// stages, from every file.
#[salsa::tracked(returns(ref))]
pub(crate) fn project_inputs(db: &dyn Db, project: Project) -> StageInputs {
    db.log().executed("project_inputs", None);
    whole_project_inputs(
        db,
        project,
        &datalog::PROJECT,
        bucket_project_shares,
        &[resolved_for_project(db, project)],
    )
}

/// `CycleGroup` facts: the strongly connected components of the runtime
/// import graph with two or more files (Tarjan's algorithm, linear in the
/// edges), each named by its first file by path so that the facts do not
/// depend on interning order. The graph is the `RuntimeDependsOn` tuples
/// the `project` stage already gathered (its rules join them with these
/// facts), so an edit that leaves them as they were stops before this.
#[salsa::tracked(returns(ref))]
pub(crate) fn cycle_groups(db: &dyn Db, project: Project) -> Vec<InputFact> {
    db.log().executed("cycle_groups", None);
    let edges = &project_inputs(db, project).derived.runtime_depends_on();
    // Dense indices by binary search over the sorted nodes: a graph keyed
    // by hashing each node (`GraphMap`) spent most of this query hashing.
    let mut nodes: Vec<Node> = edges.iter().flat_map(|t| [t.0, t.1]).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let index = |node: Node| nodes.partition_point(|&n| n < node) as u32;
    let graph: petgraph::Graph<(), (), petgraph::Directed, u32> =
        petgraph::Graph::from_edges(edges.iter().map(|t| (index(t.0), index(t.1))));
    let mut facts = Vec::new();
    for component in petgraph::algo::tarjan_scc(&graph) {
        if component.len() < 2 {
            continue;
        }
        let files: Vec<Node> = component
            .iter()
            .filter_map(|i| nodes.get(i.index()).copied())
            .collect();
        let Some(&group) = files
            .iter()
            .min_by_key(|&&node| db.interner().node_text(node))
        else {
            continue;
        };
        facts.extend(
            files
                .iter()
                .map(|&file| InputFact::CycleGroup(CycleGroup(file, group))),
        );
    }
    facts.sort_unstable();
    facts
}

/// The `project` stage (cycles) over all files.
#[salsa::tracked(returns(ref))]
pub(crate) fn project_stage(db: &dyn Db, project: Project) -> Outputs {
    db.log().executed("project_stage", None);
    let inputs = project_inputs(db, project);
    let facts: Vec<InputFact> = inputs
        .facts
        .iter()
        .chain(cycle_groups(db, project))
        .copied()
        .collect();
    run_stage(
        db,
        "project_stage",
        &datalog::PROJECT,
        &facts,
        &inputs.derived,
    )
}
