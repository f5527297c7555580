//! The `classes` stage (resolved bases, declared types, patched members)
//! and the class table built on it. Both see each class site as its rank
//! in its file (`site_ranks.rs`).

use std::sync::Arc;

use super::{
    Bucket, Db, Project, Slices, SourceFile, StageInputs, file_base_facts, files_by_node, gathered,
    resolve_stage, run_stage,
};
use crate::classes::ClassTable;
use crate::datalog::{self, BaseRef, InputFact, Node, Outputs, Site, Sym, Value};
use crate::site_ranks::SiteRanks;

/// What the class table reads of one file: its classes, their members
/// and bases, and which bases add no members (`object`, `typing.Generic`,
/// `typing.Protocol`). A query of its own so that an edit that changes no
/// class stops here.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ClassFacts {
    facts: Vec<InputFact>,
    transparent: Vec<(Node, Site)>,
}

/// The sites of one file's class declarations (`site_ranks.rs`): what the
/// `classes` stage and the class table see of them is their rank here.
/// Memoized for [`classes_outputs`], which renames ranks back to sites when
/// asked; what runs on every update ranks the sites itself
/// ([`class_ranks`]), so that a walk after an edit has one memo fewer per
/// file to verify.
#[salsa::tracked(returns(ref))]
pub(crate) fn class_sites(db: &dyn Db, project: Project, file: SourceFile) -> SiteRanks {
    class_ranks(db, project, file)
}

/// [`class_sites`], not memoized.
fn class_ranks(db: &dyn Db, project: Project, file: SourceFile) -> SiteRanks {
    SiteRanks::of(class_declarations(db, project, file))
}

/// One file's base facts that the `classes` stage reads.
fn class_declarations(
    db: &dyn Db,
    project: Project,
    file: SourceFile,
) -> impl Iterator<Item = &InputFact> {
    file_base_facts(db, project, file)
        .facts()
        .iter()
        .filter(|fact| (datalog::CLASSES.reads_fact)(fact))
}

/// One file's [`ClassFacts`]: made by the bucket's query, not a memo of
/// its own, so that a walk after an edit has one memo fewer per file to
/// verify; an edit re-makes those of its bucket's files.
fn class_facts(db: &dyn Db, project: Project, file: SourceFile) -> ClassFacts {
    let interner = db.interner();
    let ranks = class_ranks(db, project, file);
    let mut class_facts = ClassFacts::default();
    for fact in file_base_facts(db, project, file).facts() {
        match fact {
            InputFact::ClassDef(_)
            | InputFact::HasMember(_)
            | InputFact::SetsOnSelf(_)
            | InputFact::BaseOf(_)
            | InputFact::OpaqueBase(_)
            | InputFact::MadeBy(_)
            | InputFact::ReturnsSelf(_)
            | InputFact::ReturnsSelfVia(_)
            | InputFact::ReturnsCls(_)
            | InputFact::IsProperty(_)
            | InputFact::IsFixture(_) => class_facts
                .facts
                .push(fact.map_sites(|site| ranks.rank(site))),
            InputFact::BaseRef(BaseRef(file, site, module, name)) => {
                let transparent = matches!(
                    (&*interner.node_text(*module), &*interner.sym_text(*name)),
                    ("<builtin:object>", "object")
                        | (
                            "<stdlib:typing>"
                                | "<stdlib:typing_extensions>"
                                | "<third-party:typing_extensions>",
                            "Generic" | "Protocol",
                        )
                );
                if transparent {
                    class_facts.transparent.push((*file, ranks.rank(*site)));
                }
            }
            _ => {}
        }
    }
    class_facts
}

/// One bucket's class facts: those of its files that have any.
#[salsa::tracked(returns(ref))]
pub(crate) fn bucket_class_inputs(
    db: &dyn Db,
    project: Project,
    bucket: Bucket,
) -> Vec<Arc<ClassFacts>> {
    db.log().executed("bucket_class_inputs", None);
    bucket
        .files(db)
        .iter()
        .map(|&file| class_facts(db, project, file))
        .filter(|facts| !facts.facts.is_empty() || !facts.transparent.is_empty())
        .map(Arc::new)
        .collect()
}

/// Every file's class facts together, shared as the buckets hold them: a
/// query of its own so that a change to the file set that adds or removes
/// no class (a new module of functions, a rename of one) stops here and
/// the table is reused.
#[salsa::tracked(returns(ref))]
pub(crate) fn class_inputs(db: &dyn Db, project: Project) -> Vec<Arc<ClassFacts>> {
    super::gathered_buckets(db, project)
        .iter()
        .flat_map(|&bucket| bucket_class_inputs(db, project, bucket))
        .cloned()
        .collect()
}

/// Every class's method resolution order, members and declared member
/// types, after name resolution.
#[salsa::tracked(returns(ref))]
pub(crate) fn class_table(db: &dyn Db, project: Project) -> Arc<ClassTable> {
    db.log().executed("class_table", None);
    let inputs = class_inputs(db, project);
    let transparent: rustc_hash::FxHashSet<(Node, Site)> = inputs
        .iter()
        .flat_map(|file| file.transparent.iter().copied())
        .collect();
    Arc::new(ClassTable::build(
        inputs.iter().flat_map(|file| file.facts.iter()),
        &transparent,
        class_resolved(db, project),
    ))
}

/// The `classes` tuples the class table reads (resolved bases, declared
/// types, class aliases, patched members), without the stage's helpers: a
/// query of its own so that a change to those helpers alone stops here and
/// the table, and every file's slice of it, is reused.
#[salsa::tracked(returns(ref))]
pub(crate) fn class_resolved(db: &dyn Db, project: Project) -> Outputs {
    let resolved = classes_stage(db, project);
    let mut class = Outputs::default();
    class
        .base_class_mut()
        .extend_from_slice(resolved.base_class());
    class
        .instance_type_mut()
        .extend_from_slice(resolved.instance_type());
    class
        .return_type_mut()
        .extend_from_slice(resolved.return_type());
    class
        .patched_member_mut()
        .extend_from_slice(resolved.patched_member());
    class
        .class_alias_mut()
        .extend_from_slice(resolved.class_alias());
    class
}

/// `MroStart`/`MroNext` facts of every class, for queries, explanations
/// and the reference program.
#[salsa::tracked(returns(ref))]
pub(crate) fn mro_facts(db: &dyn Db, project: Project) -> Vec<InputFact> {
    class_table(db, project).mro_facts()
}

/// One bucket's files' class declarations, each site as its rank
/// (`class_ranks`).
#[salsa::tracked(returns(ref))]
pub(crate) fn bucket_classes_shares(db: &dyn Db, project: Project, bucket: Bucket) -> StageInputs {
    db.log().executed("bucket_classes_shares", None);
    let mut inputs = StageInputs::default();
    for &file in bucket.files(db) {
        let ranks = class_ranks(db, project, file);
        inputs.facts.extend(
            class_declarations(db, project, file)
                .map(|fact| fact.map_sites(|site| ranks.rank(site))),
        );
    }
    inputs.facts.shrink_to_fit();
    inputs
}

/// The class declarations of every file (`bucket_classes_shares`), and the
/// `(module, name)` pairs they name, sorted: the only `Resolves` tuples the
/// `classes` stage reads (each of its rules starts from a declaration,
/// `rules/classes.dl`). Equal unless a declaration changed.
#[salsa::tracked(returns(ref))]
pub(crate) fn classes_facts(db: &dyn Db, project: Project) -> (Vec<InputFact>, Vec<(Node, Sym)>) {
    db.log().executed("classes_facts", None);
    let facts = gathered(db, project, &datalog::CLASSES, bucket_classes_shares).facts;
    let mut named: Vec<(Node, Sym)> = Vec::new();
    for fact in &facts {
        for pair in fact.values().windows(2) {
            if let [Value::Node(module), Value::Sym(name)] = *pair {
                named.push((module, name));
            }
        }
    }
    named.sort_unstable();
    named.dedup();
    (facts, named)
}

/// The `resolve` tuples the `classes` stage reads, cut to the names its
/// declarations name: a resolution change elsewhere (an import added, a
/// re-export) leaves this equal, and salsa reuses the stage.
#[salsa::tracked(returns(ref))]
pub(crate) fn classes_resolved(db: &dyn Db, project: Project) -> Outputs {
    let (_, named) = classes_facts(db, project);
    let mut derived = Outputs::default();
    datalog::CLASSES.take_derived(&mut derived, resolve_stage(db, project));
    derived
        .resolves_mut()
        .retain(|t| named.binary_search(&(t.0, t.1)).is_ok());
    derived
}

/// The `classes` stage (bases, declared types, patched members) over all
/// files' declarations, with sites as ranks (`site_ranks.rs`): what the
/// class table and the later stages read, none of which reads a site of
/// it. [`classes_outputs`] has the real sites.
#[salsa::tracked(returns(ref))]
pub(crate) fn classes_stage(db: &dyn Db, project: Project) -> Outputs {
    db.log().executed("classes_stage", None);
    let (facts, _) = classes_facts(db, project);
    run_stage(
        db,
        "classes_stage",
        &datalog::CLASSES,
        facts,
        classes_resolved(db, project),
    )
}

/// The `classes` stage's tuples with every site renamed back from its rank
/// to the site: what queries, explanations and the union of the stages
/// show.
#[salsa::tracked(returns(ref))]
pub(crate) fn classes_outputs(db: &dyn Db, project: Project) -> Outputs {
    let mut outputs = classes_stage(db, project).clone();
    let files = files_by_node(db, project);
    outputs.map_sites(|first, rank| match first {
        Value::Node(node) => match files.binary_search_by_key(&node, |&(node, _)| node) {
            Ok(at) => class_sites(db, project, files[at].1).site(rank),
            Err(_) => rank,
        },
        _ => rank,
    });
    outputs
}

/// The `classes` stage's slices.
#[salsa::tracked(returns(ref))]
pub(crate) fn class_slices(db: &dyn Db, project: Project) -> Arc<Slices> {
    db.log().executed("class_slices", None);
    Slices::of(classes_stage(db, project))
}
