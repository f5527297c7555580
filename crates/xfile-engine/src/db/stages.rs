//! What the rule stages share: their inputs ([`StageInputs`]), gathered
//! from every file's share bucket by bucket, and the timed run of a
//! stage's program.

use std::sync::Arc;

use super::{Bucket, Db, Project, SourceFile, file_base_facts, file_stage, project_facts};
use crate::buckets::PerFile;
use crate::datalog::{InputFact, Outputs, StageProgram};

/// Adds one file's share of what a whole-project stage reads to
/// `inputs`: its base facts the stage reads and, for stages after the file
/// rules (`after_files`), the tuples of its `file` stage the stage takes.
/// Said by the caller, not found by comparing `stage` with the stages'
/// constants: each use of a constant may be another address. Computed inside a
/// bucket's query, not kept per file: the bucket's value is the only copy,
/// and a bucket whose shares come out equal stops the change there.
pub(crate) fn add_share(
    db: &dyn Db,
    project: Project,
    file: SourceFile,
    stage: &StageProgram,
    after_files: bool,
    inputs: &mut StageInputs,
) {
    if stage.reads_facts {
        inputs.facts.extend(
            file_base_facts(db, project, file)
                .facts()
                .iter()
                .copied()
                .filter(stage.reads_fact),
        );
    }
    if after_files {
        stage.take_derived(&mut inputs.derived, file_stage(db, project, file));
    }
}

/// One bucket's files' shares of a whole-project stage after the file
/// rules, in file order.
pub(crate) fn bucket_shares(
    db: &dyn Db,
    project: Project,
    bucket: Bucket,
    stage: &StageProgram,
) -> StageInputs {
    let mut inputs = StageInputs::default();
    for &file in bucket.files(db) {
        add_share(db, project, file, stage, true, &mut inputs);
    }
    inputs.facts.shrink_to_fit();
    inputs
}

/// The facts and file-stage tuples a whole-project stage reads, from every
/// file's share (bucket by bucket) and the project-level facts, in file order: deterministic,
/// so equal inputs give an equal value and salsa can stop there (crepe
/// needs no order and drops duplicates).
pub(crate) fn gathered(
    db: &dyn Db,
    project: Project,
    stage: &StageProgram,
    bucket_share: fn(&dyn Db, Project, Bucket) -> &StageInputs,
) -> StageInputs {
    let shares: Vec<&StageInputs> = super::gathered_buckets(db, project)
        .iter()
        .map(|&bucket| bucket_share(db, project, bucket))
        .collect();
    let project_facts = stage.reads_facts.then(|| project_facts(db, project));
    // Sized once: the value is kept as long as the project is indexed, and
    // growing it by doubling left up to half of it unused.
    let facts = shares.iter().map(|share| share.facts.len()).sum::<usize>()
        + project_facts.map_or(0, |facts| facts.len());
    let mut inputs = StageInputs {
        facts: Vec::with_capacity(facts),
        derived: Outputs::default(),
    };
    for share in shares {
        inputs.extend(share);
    }
    if let Some(project_facts) = project_facts {
        inputs
            .facts
            .extend(project_facts.iter().copied().filter(stage.reads_fact));
    }
    inputs
}

/// What one stage program runs on.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct StageInputs {
    pub(crate) facts: Vec<InputFact>,
    /// Tuples of relations derived by earlier stages.
    pub(crate) derived: Outputs,
}

impl StageInputs {
    fn extend(&mut self, other: &StageInputs) {
        self.facts.extend_from_slice(&other.facts);
        self.derived.extend(&other.derived);
    }
}

/// Runs `stage` and records how long it took under `query`.
pub(crate) fn run_stage(
    db: &dyn Db,
    query: &str,
    stage: &StageProgram,
    facts: &[InputFact],
    derived: &Outputs,
) -> Outputs {
    let started = std::time::Instant::now();
    let outputs = (stage.run)(facts, derived);
    let ms = started.elapsed().as_secs_f64() * 1e3;
    db.log().record(|r| {
        *r.datalog_ms.entry(query.to_string()).or_default() += ms;
    });
    outputs
}

/// A value for each of a bucket's files, in its order.
pub(crate) fn per_file<T>(
    db: &dyn Db,
    bucket: Bucket,
    value: impl Fn(SourceFile) -> T,
) -> PerFile<T> {
    Arc::new(
        bucket
            .files(db)
            .iter()
            .map(|&file| (file, value(file)))
            .collect(),
    )
}

/// The inputs of a whole-project stage: every file's `share` of it (the
/// base facts it reads and what it takes of the file's `file` stage), the
/// project-level facts it reads, and what it reads of the `earlier` stages
/// (the `resolve` stage's through its own query, `resolved_for_project` or
/// `resolved_for_report`).
pub(crate) fn whole_project_inputs(
    db: &dyn Db,
    project: Project,
    stage: &StageProgram,
    bucket_share: fn(&dyn Db, Project, Bucket) -> &StageInputs,
    earlier: &[&Outputs],
) -> StageInputs {
    let mut inputs = gathered(db, project, stage, bucket_share);
    for outputs in earlier {
        stage.take_derived(&mut inputs.derived, outputs);
    }
    inputs
}
