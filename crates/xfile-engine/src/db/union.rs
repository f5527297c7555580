//! What queries, explanations and exports read, built only when asked:
//! the union of every stage's relations and every base fact.

use super::{
    Db, Project, all_files, classes_outputs, cycle_groups, file_base_facts, file_stage,
    files_by_node, mro_facts, project_facts, project_stage, report_stage, resolve_stage,
};
use crate::datalog::{InputFact, Outputs};

/// Every base fact, sorted: what `query` and `explain` read for base
/// relations. Computed only when asked, never on the update path.
#[salsa::tracked(returns(ref))]
pub(crate) fn all_facts(db: &dyn Db, project: Project) -> Vec<InputFact> {
    db.log().executed("all_facts", None);
    let mut facts: Vec<InputFact> = all_files(db, project)
        .flat_map(|file| file_base_facts(db, project, file).facts().iter().copied())
        .chain(project_facts(db, project).iter().copied())
        .chain(cycle_groups(db, project).iter().copied())
        .chain(mro_facts(db, project).iter().copied())
        .collect();
    facts.sort_unstable();
    facts.dedup();
    facts
}

/// Base facts and derived relations together, as `explain` reads them.
#[derive(Clone, Copy)]
pub struct Program<'a> {
    pub facts: &'a [InputFact],
    pub outputs: &'a Outputs,
}

/// Every derived relation: the union of the stages.
#[salsa::tracked(returns(ref))]
pub(crate) fn program(db: &dyn Db, project: Project) -> Outputs {
    db.log().executed("program", None);
    let mut outputs = resolve_stage(db, project).clone();
    outputs.extend(classes_outputs(db, project));
    for &(_, file) in files_by_node(db, project) {
        outputs.extend(file_stage(db, project, file));
    }
    outputs.extend(project_stage(db, project));
    outputs.extend(report_stage(db, project));
    outputs.normalize();
    outputs
}
