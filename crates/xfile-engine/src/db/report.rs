//! The `report` stage (circular-import warnings), over what the `project`
//! stage derived and the facts about the files it names.

use super::{
    Bucket, Db, Project, StageInputs, bucket_shares, classes_stage, project_stage, resolve_stage,
    run_stage, whole_project_inputs,
};
use crate::datalog::{self, Outputs, Value};

#[salsa::tracked(returns(ref))]
pub(crate) fn bucket_report_shares(db: &dyn Db, project: Project, bucket: Bucket) -> StageInputs {
    db.log().executed("bucket_report_shares", None);
    bucket_shares(db, project, bucket, &datalog::REPORT)
}

/// The `resolve` tuples the `report` stage reads (none today), in a query
/// of its own as `resolved_for_project` is for the `project` stage.
#[salsa::tracked(returns(ref))]
pub(crate) fn resolved_for_report(db: &dyn Db, project: Project) -> Outputs {
    let mut derived = Outputs::default();
    datalog::REPORT.take_derived(&mut derived, resolve_stage(db, project));
    datalog::REPORT.take_derived(&mut derived, classes_stage(db, project));
    derived
}

/// What the `report` stage reads: base facts and earlier stages' tuples.
#[salsa::tracked(returns(ref))]
pub(crate) fn report_inputs(db: &dyn Db, project: Project) -> StageInputs {
    db.log().executed("report_inputs", None);
    let whole = project_stage(db, project);
    let mut inputs = whole_project_inputs(
        db,
        project,
        &datalog::REPORT,
        bucket_report_shares,
        &[resolved_for_report(db, project), whole],
    );
    // Report rules start from what the project stage derived about a file
    // (its cycle edges) and join only what is about the nodes that names
    // (`docs/rule-authoring.md`). So the rest stays out: the stage indexes
    // the runtime imports of the files in cycles, not every one, and an
    // edit to a file in none leaves this value equal.
    let named: rustc_hash::FxHashSet<Value> = whole
        .tuples_values()
        .filter(|v| matches!(v, Value::Node(_)))
        .collect();
    inputs.facts.retain(|fact| named.contains(&fact.first()));
    inputs
        .derived
        .retain_heads(|first, _| named.contains(&first));
    inputs
}

/// The `report` stage (warnings on whole-project results) over all files.
#[salsa::tracked(returns(ref))]
pub(crate) fn report_stage(db: &dyn Db, project: Project) -> Outputs {
    db.log().executed("report_stage", None);
    let inputs = report_inputs(db, project);
    run_stage(
        db,
        "report_stage",
        &datalog::REPORT,
        &inputs.facts,
        &inputs.derived,
    )
}
