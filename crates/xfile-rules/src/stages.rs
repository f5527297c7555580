//! When rules run: each stage is a crepe program of its own, which reads
//! base facts and the relations of earlier stages and derives its own.

use crate::clauses::{Clause, Plan};
use crate::error::{Error, Problem};
use crate::parse::{Kind, Rules};

/// When a rule runs (`// stage: NAME`; `project` without one). `file`
/// rules see one file's base facts, the project-level facts and the earlier
/// stages' tuples whose first argument occurs in that file's facts; the
/// others see everything. `report` runs after `project`, so that
/// whole-project results (cycles) are recomputed only when what they rest
/// on changed, not when a site moved. `classes` runs after `resolve` on the
/// class declarations and the resolution of the names they mention, so a
/// change to resolution that no declaration mentions (an import added) does
/// not re-run it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum Stage {
    Resolve,
    Classes,
    File,
    Project,
    Report,
}

/// In the order they run.
const STAGES: [Stage; 5] = [
    Stage::Resolve,
    Stage::Classes,
    Stage::File,
    Stage::Project,
    Stage::Report,
];

impl Stage {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Stage::Resolve => "resolve",
            Stage::Classes => "classes",
            Stage::File => "file",
            Stage::Project => "project",
            Stage::Report => "report",
        }
    }

    pub(crate) fn named(name: &str) -> Option<Stage> {
        STAGES.into_iter().find(|s| s.name() == name)
    }
}

/// One stage's program: the relations it derives and the ones it reads
/// from base facts and earlier stages (indexes into `Rules::relations`, in
/// the order the stage's rules first name them).
#[derive(Debug)]
pub(crate) struct StagePlan {
    pub stage: Stage,
    pub derived: Vec<usize>,
    pub reads: Vec<usize>,
}

/// Every stage's program, checking that each relation a stage reads is a
/// base relation or comes whole from one earlier stage.
pub(crate) fn plan(rules: &Rules, plans: &[Plan]) -> Result<Vec<StagePlan>, Error> {
    let derived_in = |relation: usize| -> Vec<Stage> {
        let mut stages: Vec<Stage> = plans
            .iter()
            .zip(&rules.rules)
            .filter(|(plan, _)| plan.head.relation == relation)
            .map(|(_, rule)| rule.stage)
            .collect();
        stages.sort_unstable();
        stages.dedup();
        stages
    };
    let mut stages = Vec::new();
    for stage in STAGES {
        let in_stage = || {
            plans
                .iter()
                .zip(&rules.rules)
                .filter(move |(_, rule)| rule.stage == stage)
        };
        let mut derived: Vec<usize> = Vec::new();
        for (plan, _) in in_stage() {
            if !derived.contains(&plan.head.relation) {
                derived.push(plan.head.relation);
            }
        }
        let mut reads: Vec<usize> = Vec::new();
        for (plan, rule) in in_stage() {
            for clause in &plan.body {
                let Clause::Atom(atom) = clause else {
                    continue;
                };
                let read = atom.relation;
                if derived.contains(&read) || reads.contains(&read) {
                    continue;
                }
                let relation = &rules.relations[read];
                if relation.kind != Kind::Input {
                    let stages = derived_in(read);
                    if stages.is_empty() {
                        let problem = Problem::NotDerived(relation.name.clone());
                        return Err(Error::at(&rule.at, problem));
                    }
                    if stages.len() != 1 || stages[0] >= stage {
                        let problem = Problem::ReadsLaterStage {
                            relation: relation.name.clone(),
                            derived_in: stages.iter().map(|s| s.name()).collect(),
                            stage: stage.name(),
                        };
                        return Err(Error::at(&rule.at, problem));
                    }
                }
                reads.push(read);
            }
        }
        stages.push(StagePlan {
            stage,
            derived,
            reads,
        });
    }
    // Last, so that a mistake in the rules there are is reported first.
    if let Some(empty) = stages.iter().find(|s| s.derived.is_empty()) {
        return Err(Error {
            at: None,
            problem: Problem::EmptyStage(empty.stage.name()),
        });
    }
    Ok(stages)
}

#[cfg(test)]
mod tests {
    use super::{Stage, plan};
    use crate::Source;
    use crate::clauses::Plan;
    use crate::fixture::{FILES, message};
    use crate::parse::Rules;

    #[test]
    fn each_stage_reads_base_facts_and_earlier_stages() {
        let sources: Vec<Source<'_>> = FILES
            .iter()
            .map(|(file, text)| Source { file, text })
            .collect();
        let rules = Rules::parse(&sources).unwrap_or_else(|e| panic!("{e}"));
        let plans: Vec<Plan> = rules
            .rules
            .iter()
            .map(|rule| Plan::of(rule, &rules).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        let stages = plan(&rules, &plans).unwrap_or_else(|e| panic!("{e}"));
        let name = |i: &usize| rules.relations[*i].name.as_str();
        let read: Vec<(Stage, Vec<&str>, Vec<&str>)> = stages
            .iter()
            .map(|s| {
                (
                    s.stage,
                    s.derived.iter().map(name).collect(),
                    s.reads.iter().map(name).collect(),
                )
            })
            .collect();
        assert_eq!(
            read,
            [
                (Stage::Resolve, vec!["Resolved"], vec!["Fact"]),
                (Stage::Classes, vec!["Classed"], vec!["Resolved"]),
                (Stage::File, vec!["Filed"], vec!["Classed", "Fact"]),
                (Stage::Project, vec!["Projected"], vec!["Filed"]),
                (Stage::Report, vec!["Reported"], vec!["Projected"]),
            ]
        );
    }

    #[test]
    fn a_stage_reads_no_relation_of_its_own_or_a_later_stage() {
        assert_eq!(
            message(
                "rules/c_file.dl",
                "// stage: file\n/// Filed(file): a file.\n@output\npub struct Filed(pub Node);\nFiled(f) <- Classed(f, _), Projected(f);\n"
            ),
            "rules/c_file.dl:5: `Projected` is derived in stage(s) [\"project\"], so a `file` rule cannot read it; a stage reads only base relations and relations derived whole in one earlier stage"
        );
        // Derived in an earlier stage, but not whole.
        assert_eq!(
            message(
                "rules/e_report.dl",
                "// stage: report\n/// Reported(file): projected.\n@output\npub struct Reported(pub Node);\nReported(f) <- Projected(f);\nResolved(f, n) <- Fact(f, n), Projected(f);\n"
            ),
            "rules/b_classes.dl:6: `Resolved` is derived in stage(s) [\"resolve\", \"report\"], so a `classes` rule cannot read it; a stage reads only base relations and relations derived whole in one earlier stage"
        );
    }

    #[test]
    fn a_relation_read_is_a_base_relation_or_derived() {
        assert_eq!(
            message(
                "rules/d_project.dl",
                "// stage: project\n/// Projected(file): filed.\n@output\npub struct Projected(pub Node);\n/// Orphan(file): derived nowhere.\nstruct Orphan(pub Node);\nProjected(f) <- Filed(f), Orphan(f);\n"
            ),
            "rules/d_project.dl:7: `Orphan` is read here but no rule derives it; add a rule for it, or make it a base relation (`@input`, in rules/base.dl)"
        );
    }

    #[test]
    fn every_stage_has_a_rule() {
        assert_eq!(
            message("rules/e_report.dl", "// Nothing to report.\n"),
            "no rules file declares `// stage: report`; each stage needs at least one rule"
        );
    }
}
