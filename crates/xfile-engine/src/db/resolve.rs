//! The `resolve` stage (name resolution across modules), and the slices
//! of its tuples, by node, that each file's `resolved` input is cut from.

use std::sync::Arc;

use super::{
    Bucket, Db, Project, StageInputs, add_share, file_base_facts, per_file, project_facts,
    run_stage,
};
use crate::buckets::PerFile;
use crate::datalog::{self, InputFact, Outputs, Value};

/// One bucket's files' shares of the `resolve` stage, file by file: the
/// stage's memo compares them with its last run's.
#[salsa::tracked(returns(ref))]
pub(crate) fn bucket_resolve_shares(
    db: &dyn Db,
    project: Project,
    bucket: Bucket,
) -> PerFile<Arc<[InputFact]>> {
    db.log().executed("bucket_resolve_shares", None);
    per_file(db, bucket, |file| {
        let mut share = StageInputs::default();
        add_share(db, project, file, &datalog::RESOLVE, false, &mut share);
        share.facts.into()
    })
}

/// The `resolve` stage (name resolution across modules) over all files'
/// shares: after an edit, re-run only over the parts of the facts the edit
/// reached (`resolve_parts.rs`). An edit that changes no file's share (a
/// call, a plain import) stops before this: every share is equal, and
/// salsa reuses the stage.
#[salsa::tracked(returns(ref))]
pub(crate) fn resolve_stage(db: &dyn Db, project: Project) -> Outputs {
    db.log().executed("resolve_stage", None);
    let shares: Vec<PerFile<Arc<[InputFact]>>> = super::gathered_buckets(db, project)
        .iter()
        .map(|&bucket| bucket_resolve_shares(db, project, bucket).clone())
        .collect();
    let extra: Vec<InputFact> = project_facts(db, project)
        .iter()
        .copied()
        .filter(datalog::RESOLVE.reads_fact)
        .collect();
    db.resolve_memo().run(project, shares, extra, |facts| {
        db.log().record(|r| r.resolve_facts_read += facts.len());
        run_stage(
            db,
            "resolve_stage",
            &datalog::RESOLVE,
            facts,
            &Outputs::default(),
        )
    })
}

/// The tuples of a stage before the file rules (`resolve`, `classes`) that
/// the `file` stage reads whose first argument is one node (a file or a
/// marker), by node, sorted. The engine compares them with the last run's
/// and rewrites the `resolved` input of only the files that read a node
/// whose tuples changed (`resolved_inputs.rs`).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Slices(pub(crate) Vec<(Value, Arc<Outputs>)>);

impl Slices {
    pub(crate) fn of(outputs: &Outputs) -> Arc<Slices> {
        Arc::new(Slices(
            datalog::FILE
                .derived_keys(outputs)
                .into_iter()
                .map(|key| (key, Self::select(outputs, key)))
                .collect(),
        ))
    }

    fn select(outputs: &Outputs, key: Value) -> Arc<Outputs> {
        Arc::new(datalog::FILE.select_derived(outputs, &[key]))
    }

    /// The slices of `outputs`, whose tuples differ from those `before` was
    /// taken from only under `heads` (sorted): those are sliced again, the
    /// others shared with `before`. Equal to [`Slices::of`].
    pub(crate) fn updated(before: &Slices, outputs: &Outputs, heads: &[Value]) -> Arc<Slices> {
        let mut slices = Vec::with_capacity(before.0.len() + heads.len());
        let add = |slices: &mut Vec<(Value, Arc<Outputs>)>, key: Value| {
            let slice = Self::select(outputs, key);
            if slice.tuple_count() > 0 {
                slices.push((key, slice));
            }
        };
        let mut heads = heads.iter().copied().peekable();
        for (key, slice) in &before.0 {
            while let Some(head) = heads.next_if(|head| head < key) {
                add(&mut slices, head);
            }
            if heads.next_if_eq(key).is_some() {
                add(&mut slices, *key);
            } else {
                slices.push((*key, Arc::clone(slice)));
            }
        }
        for head in heads {
            add(&mut slices, head);
        }
        Arc::new(Slices(slices))
    }

    pub(crate) fn get(&self, key: Value) -> Option<&Arc<Outputs>> {
        self.0
            .binary_search_by_key(&key, |(k, _)| *k)
            .ok()
            .map(|at| &self.0[at].1)
    }
}

/// The `resolve` stage's slices.
#[salsa::tracked(returns(ref))]
pub(crate) fn resolved_slices(db: &dyn Db, project: Project) -> Arc<Slices> {
    db.log().executed("resolved_slices", None);
    db.resolve_memo().slices(resolve_stage(db, project))
}

/// One bucket's files with their keys (`BaseFacts::keys`).
#[salsa::tracked(returns(ref))]
pub(crate) fn bucket_files_keys(
    db: &dyn Db,
    project: Project,
    bucket: Bucket,
) -> PerFile<Arc<[Value]>> {
    db.log().executed("bucket_files_keys", None);
    per_file(db, bucket, |file| {
        file_base_facts(db, project, file).keys().clone()
    })
}

/// Every file's keys, bucket by bucket: what the engine reads to
/// know which files read which nodes' slices.
pub(crate) fn files_keys(db: &dyn Db, project: Project) -> Vec<PerFile<Arc<[Value]>>> {
    super::gathered_buckets(db, project)
        .iter()
        .map(|&bucket| bucket_files_keys(db, project, bucket).clone())
        .collect()
}
