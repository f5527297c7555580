//! The `file` stage: one file's rules, over its base facts, its `resolved`
//! and `classes` inputs (the slice of the class table its lookups reach)
//! and the project-level facts about what it names.

use super::{Db, Project, SourceFile, file_base_facts, run_stage};
use crate::datalog::{self, InputFact, Outputs, Value};
use crate::resolved_inputs::FileResolved;

/// The project-level facts whose first argument is one of `keys`, or
/// occurs in one of those (one step further, for joins such as a layer's
/// rank), sorted.
fn project_context(project_facts: &[InputFact], keys: &[Value]) -> Vec<InputFact> {
    let keyed = |keys: &[Value]| -> Vec<InputFact> {
        keys.iter()
            .flat_map(|key| {
                let start = project_facts.partition_point(|f| f.first() < *key);
                project_facts[start..]
                    .iter()
                    .take_while(move |f| f.first() == *key)
            })
            .copied()
            .collect()
    };
    let first = keyed(keys);
    let mut further: Vec<Value> = first
        .iter()
        .flat_map(InputFact::values)
        .filter(|v| keys.binary_search(v).is_err())
        .collect();
    further.sort_unstable();
    further.dedup();
    let mut context: Vec<InputFact> = first.into_iter().chain(keyed(&further)).collect();
    context.sort_unstable();
    context.dedup();
    context
}

/// The `resolve` and `classes` tuples whose first argument occurs in a
/// file's facts: its `resolved` input, which the engine keeps up to date.
pub(crate) fn file_resolved(db: &dyn Db, file: SourceFile) -> &FileResolved {
    file.resolved(db)
}

/// The project-level facts about any value of one file's facts or of the
/// `resolve` and class tuples it sees (so a rule can ask whether the file a
/// call resolves to is a test module): the only part of the `file`
/// stage's inputs that is not another per-file query's value already. A
/// query of its own, so that a change to the project-level facts (a new
/// test module, a layer) re-runs only the files whose slice changed.
/// `tests/incremental.rs` checks on every fixture that the stage's inputs
/// are all the file rules need.
#[salsa::tracked(returns(ref))]
pub(crate) fn file_context(db: &dyn Db, project: Project, file: SourceFile) -> Vec<InputFact> {
    db.log().executed("file_context", Some(file.path(db)));
    let mut keys: Vec<Value> = file_resolved(db, file)
        .tuples_values()
        .chain(file.classes(db).derived.tuples_values())
        .chain(file_base_facts(db, project, file).keys().iter().copied())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let mut context = project_context(project.written_project_facts(db), &keys);
    context.retain(datalog::FILE.reads_fact);
    context
}

/// The `file` stage for one file, over its own base facts, the `resolve`
/// tuples whose first argument occurs in them (`file_resolved`), the slice
/// of the class table its member lookups reach (its `classes` input) and its
/// `file_context`. Those are assembled here and dropped after the run
/// rather than kept as a value of their own: each is an input or a
/// memoized query already, so equal parts still let salsa skip the file's
/// rules.
#[salsa::tracked(returns(ref))]
pub(crate) fn file_stage(db: &dyn Db, project: Project, file: SourceFile) -> Outputs {
    db.log().executed("file_stage", Some(file.path(db)));
    let members = file.classes(db);
    let facts: Vec<InputFact> = file_base_facts(db, project, file)
        .facts()
        .iter()
        .chain(file_context(db, project, file))
        .chain(&members.facts)
        .copied()
        .filter(datalog::FILE.reads_fact)
        .collect();
    let mut derived = file_resolved(db, file).union();
    derived.extend(&members.derived);
    run_stage(db, "file_stage", &datalog::FILE, &facts, &derived)
}
