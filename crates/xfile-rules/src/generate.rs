//! The Rust the engine includes as `OUT_DIR/rules.rs`: only what depends on
//! the rules. The code that is the same for every set of rules is written
//! by hand in `crates/xfile-engine/src/datalog/`; this refers to it.

use std::fmt::Write as _;

use crate::clauses::{Atom, Clause, Plan, Term};
use crate::parse::{Kind, Relation, Rules};
use crate::stages::StagePlan;

pub(crate) fn rust(rules: &Rules, plans: &[Plan], stages: &[StagePlan]) -> String {
    let mut out = String::new();
    write_reference(&mut out, rules);
    write_structs(&mut out, rules);
    write_tables(&mut out, rules);
    write_inputs(&mut out, rules);
    write_derived(&mut out, rules);
    for plan in stages {
        write_stage(&mut out, rules, plan);
    }
    let all_inputs: Vec<&Relation> = inputs(rules).collect();
    let all_derived: Vec<&Relation> = derived(rules).collect();
    write_run(
        &mut out,
        "run_reference",
        "reference",
        &all_inputs,
        &[],
        &all_derived,
    );
    write_plans(&mut out, rules, plans);
    out
}

fn inputs(rules: &Rules) -> impl Iterator<Item = &Relation> {
    rules.relations.iter().filter(|r| r.kind == Kind::Input)
}

/// Derived relations, `@output` and intermediate, in the order `Outputs`
/// keeps them.
fn derived(rules: &Rules) -> impl Iterator<Item = &Relation> {
    rules.relations.iter().filter(|r| r.kind != Kind::Input)
}

fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// `pub Node, pub Site`: a relation's fields in a crepe declaration.
fn crepe_fields(r: &Relation) -> String {
    let fields: Vec<String> = r.types.iter().map(|t| format!("pub {t}")).collect();
    fields.join(", ")
}

/// Every rule in one crepe program. crepe takes attributes only after an
/// `@` marker. Intermediate relations are published to Rust too (crepe
/// wants them `pub` then), so explanations can show their tuples; the
/// catalogue keeps them intermediate.
fn write_reference(out: &mut String, rules: &Rules) {
    let mut program = String::new();
    for r in &rules.relations {
        let marker = if r.kind == Kind::Input {
            "@input"
        } else {
            "@output"
        };
        writeln!(
            program,
            "{marker}\n#[derive(Debug, PartialOrd, Ord)]\npub struct {}({});",
            r.name,
            crepe_fields(r)
        )
        .unwrap();
    }
    for rule in &rules.rules {
        writeln!(program, "{}", rule.text).unwrap();
    }
    writeln!(
        out,
        "/// Every rule in one program: the reference the stages are tested against.\npub mod reference {{\n    use super::*;\n    crepe::crepe! {{\n{program}\n    }}\n}}\n"
    )
    .unwrap();
}

/// The relation types the rest of the engine uses (each crepe program has
/// its own copies, converted at its boundary): `relation_struct!` in the
/// engine declares each with what the runtime needs of it.
fn write_structs(out: &mut String, rules: &Rules) {
    let fields = |r: &Relation| -> String {
        let fields: Vec<String> = r
            .types
            .iter()
            .enumerate()
            .map(|(i, t)| format!("{t} {i}"))
            .collect();
        fields.join(", ")
    };
    for r in inputs(rules) {
        writeln!(out, "relation_struct!(input {}({}));", r.name, fields(r)).unwrap();
    }
    for (index, r) in derived(rules).enumerate() {
        let get = snake(&r.name);
        writeln!(
            out,
            "relation_struct!(derived {}({}), {index}, {get}, {get}_mut);",
            r.name,
            fields(r)
        )
        .unwrap();
    }
    writeln!(out).unwrap();
}

fn write_tables(out: &mut String, rules: &Rules) {
    writeln!(out, "/// Every relation declared in `rules/*.dl`.").unwrap();
    writeln!(out, "pub const RELATIONS: &[RelationInfo] = &[").unwrap();
    for r in &rules.relations {
        writeln!(
            out,
            "    RelationInfo {{ name: {:?}, kind: RelationKind::{}, types: &{:?}, args: &{:?}, doc: {:?}, file: {:?}, line: {} }},",
            r.name, r.kind.name(), r.types, r.args, r.doc, r.at.file, r.at.line
        )
        .unwrap();
    }
    writeln!(out, "];\n").unwrap();
    writeln!(out, "/// Every rule in `rules/*.dl`, in program order.").unwrap();
    writeln!(out, "pub const RULES: &[RuleInfo] = &[").unwrap();
    for r in &rules.rules {
        writeln!(
            out,
            "    RuleInfo {{ head: {:?}, text: {:?}, file: {:?}, line: {} }},",
            r.head, r.text, r.at.file, r.at.line
        )
        .unwrap();
    }
    writeln!(out, "];\n").unwrap();
}

/// Enum `name` (declared after `prefix`: its doc, derives and visibility)
/// with a variant per relation, and the macro `each` that evaluates an
/// expression for whichever variant a value is, so that the runtime writes
/// its methods once for every relation.
fn write_enum(
    out: &mut String,
    prefix: &str,
    name: &str,
    holds: &dyn Fn(&str) -> String,
    each: &str,
    relations: &[&Relation],
) {
    writeln!(out, "{prefix}enum {name} {{").unwrap();
    for r in relations {
        writeln!(out, "    {}({}),", r.name, holds(&r.name)).unwrap();
    }
    writeln!(
        out,
        "}}\n\n/// `$body` with `$t` bound to what a `{name}` value holds, whatever its relation.\nmacro_rules! {each} {{\n    ($value:expr, $t:ident => $body:expr) => {{\n        match $value {{"
    )
    .unwrap();
    for r in relations {
        writeln!(out, "            {name}::{}($t) => $body,", r.name).unwrap();
    }
    writeln!(out, "        }}\n    }};\n}}\nuse {each};\n").unwrap();
}

fn write_inputs(out: &mut String, rules: &Rules) {
    write_enum(
        out,
        "/// One base fact of any `@input` relation.\n#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]\npub ",
        "InputFact",
        &|name| name.to_string(),
        "each_input",
        &inputs(rules).collect::<Vec<_>>(),
    );
}

fn write_derived(out: &mut String, rules: &Rules) {
    write_enum(
        out,
        "/// One derived relation's tuples.\n#[derive(Clone, Debug, PartialEq, Eq)]\n",
        "Tuples",
        &|name| format!("Vec<{name}>"),
        "each_derived",
        &derived(rules).collect::<Vec<_>>(),
    );
}

/// `Name(t.0, t.1, ...)`: the same tuple as another struct of the same shape.
fn convert(path: &str, r: &Relation, binding: &str) -> String {
    let args: Vec<String> = (0..r.types.len())
        .map(|i| format!("{binding}.{i}"))
        .collect();
    format!("{path}{}({})", r.name, args.join(", "))
}

/// `matches!(value, Enum::A(_) | Enum::B(_))`, false for no relation.
fn matches(value: &str, path: &str, relations: &[&Relation]) -> String {
    let patterns = if relations.is_empty() {
        "_ if false".to_string()
    } else {
        let patterns: Vec<String> = relations
            .iter()
            .map(|r| format!("{path}::{}(_)", r.name))
            .collect();
        patterns.join(" | ")
    };
    format!("matches!({value}, {patterns})")
}

/// A stage's crepe module, its run function, which facts and earlier
/// relations it reads, and its `StageProgram` constant.
fn write_stage(out: &mut String, rules: &Rules, plan: &StagePlan) {
    let relation = |i: &usize| &rules.relations[*i];
    let name = plan.stage.name();
    let module = format!("stage_{name}");
    let mut program = String::new();
    for r in plan.reads.iter().map(relation) {
        writeln!(
            program,
            "@input\n#[derive(Debug)]\npub struct {}({});",
            r.name,
            crepe_fields(r)
        )
        .unwrap();
    }
    for r in plan.derived.iter().map(relation) {
        writeln!(
            program,
            "@output\n#[derive(Debug)]\npub struct {}({});",
            r.name,
            crepe_fields(r)
        )
        .unwrap();
    }
    for rule in rules.rules.iter().filter(|r| r.stage == plan.stage) {
        writeln!(program, "{}", rule.text).unwrap();
    }
    writeln!(
        out,
        "mod {module} {{\n    #![allow(clippy::all, unused_imports, dead_code)]\n    use super::{{Node, Pattern, Site, Sym}};\n    crepe::crepe! {{\n{program}\n    }}\n}}\n"
    )
    .unwrap();
    let (base, earlier): (Vec<&Relation>, Vec<&Relation>) = plan
        .reads
        .iter()
        .map(relation)
        .partition(|r| r.kind == Kind::Input);
    let made: Vec<&Relation> = plan.derived.iter().map(relation).collect();
    write_run(out, &format!("run_{name}"), &module, &base, &earlier, &made);
    writeln!(
        out,
        "fn {name}_reads_fact(fact: &InputFact) -> bool {{\n    {}\n}}\n",
        matches("fact", "InputFact", &base)
    )
    .unwrap();
    writeln!(
        out,
        "fn {name}_reads_derived(tuples: &Tuples) -> bool {{\n    {}\n}}\n",
        matches("tuples", "Tuples", &earlier)
    )
    .unwrap();
    writeln!(
        out,
        "/// The `{name}` stage of the rules.\npub const {}: StageProgram = StageProgram {{\n    reads_facts: {},\n    reads_fact: {name}_reads_fact,\n    reads_derived: {name}_reads_derived,\n    run: run_{name},\n}};\n",
        name.to_uppercase(),
        !base.is_empty()
    )
    .unwrap();
}

/// `fn name(facts, derived) -> Outputs` running crepe module `module`.
fn write_run(
    out: &mut String,
    name: &str,
    module: &str,
    base: &[&Relation],
    earlier: &[&Relation],
    made: &[&Relation],
) {
    // The reference program is called directly; the stages through their
    // `StageProgram` constant.
    let visibility = if module == "reference" { "pub " } else { "" };
    writeln!(
        out,
        "#[allow(unused_variables, unused_mut, clippy::single_match)]\n{visibility}fn {name}(facts: &[InputFact], derived: &Outputs) -> Outputs {{\n    let mut runtime = {module}::Crepe::new();"
    )
    .unwrap();
    if !base.is_empty() {
        writeln!(out, "    for fact in facts {{\n        match *fact {{").unwrap();
        for r in base {
            writeln!(
                out,
                "            InputFact::{}(t) => runtime.extend([{}]),",
                r.name,
                convert(&format!("{module}::"), r, "t")
            )
            .unwrap();
        }
        writeln!(
            out,
            "            #[allow(unreachable_patterns)]\n            _ => {{}}\n        }}\n    }}"
        )
        .unwrap();
    }
    for r in earlier {
        writeln!(
            out,
            "    runtime.extend(derived.{}().iter().map(|t| {}));",
            snake(&r.name),
            convert(&format!("{module}::"), r, "t")
        )
        .unwrap();
    }
    let names: Vec<String> = made.iter().map(|r| snake(&r.name)).collect();
    writeln!(
        out,
        "    let ({},) = runtime.run_with_hasher::<rustc_hash::FxBuildHasher>();\n    Outputs::from_relations([",
        names.join(", ")
    )
    .unwrap();
    for r in made {
        let n = snake(&r.name);
        writeln!(
            out,
            "        Tuples::{}(sorted({n}.into_iter().map(|t| {}))),",
            r.name,
            convert("", r, "t")
        )
        .unwrap();
    }
    writeln!(out, "    ])\n}}\n").unwrap();
}

fn terms(terms: &[Term]) -> String {
    let items: Vec<String> = terms
        .iter()
        .map(|t| match t {
            Term::Var(i) => format!("Term::Var({i})"),
            Term::Wild => "Term::Wild".to_string(),
            Term::Const { ty, text } => format!("Term::Const(Value::{ty}({text}))"),
        })
        .collect();
    format!("&[{}]", items.join(", "))
}

/// For each rule, the plan `engine::explain` follows to find the premises of
/// a head tuple: body atoms in order (variables bound left to right),
/// negated atoms, and each Rust guard as a generated function over the
/// variables bound before it.
fn write_plans(out: &mut String, rules: &Rules, plans: &[Plan]) {
    let mut written = String::new();
    let mut guards = String::new();
    for (index, plan) in plans.iter().enumerate() {
        let mut body = Vec::new();
        for (position, clause) in plan.body.iter().enumerate() {
            match clause {
                Clause::Guard { text, bound } => {
                    let name = format!("guard_{index}_{position}");
                    writeln!(
                        guards,
                        "#[allow(unused_variables, unused_parens, clippy::all)]\nfn {name}(env: &[Option<Value>]) -> bool {{"
                    )
                    .unwrap();
                    for (i, (var, ty)) in plan.vars[..*bound].iter().enumerate() {
                        writeln!(
                            guards,
                            "    let Some(&Some(Value::{ty}({var}))) = env.get({i}) else {{ return false }};"
                        )
                        .unwrap();
                    }
                    writeln!(guards, "    {text}\n}}\n").unwrap();
                    body.push(format!("Clause::Guard {{ text: {text:?}, check: {name} }}"));
                }
                Clause::Atom(Atom {
                    relation,
                    negated,
                    args,
                }) => body.push(format!(
                    "Clause::Atom {{ relation: {:?}, negated: {negated}, args: {} }}",
                    rules.relations[*relation].name,
                    terms(args)
                )),
            }
        }
        let vars: Vec<&str> = plan.vars.iter().map(|(name, _)| name.as_str()).collect();
        writeln!(
            written,
            "    RulePlan {{ rule: {index}, head: {}, vars: &{vars:?}, body: &[{}] }},",
            terms(&plan.head.args),
            body.join(", ")
        )
        .unwrap();
    }
    writeln!(out, "{guards}").unwrap();
    writeln!(
        out,
        "/// How to retrace each rule of [`RULES`] (same order), for explanations."
    )
    .unwrap();
    writeln!(out, "pub const PLANS: &[RulePlan] = &[\n{written}];").unwrap();
}

#[cfg(test)]
mod tests {
    use crate::fixture::{FILES, compile_with};

    fn fixture() -> String {
        compile_with(FILES[0].0, FILES[0].1).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The text from `start` up to, not including, `end`.
    fn between<'a>(rust: &'a str, start: &str, end: &str) -> &'a str {
        let from = rust.find(start).unwrap_or_else(|| panic!("no `{start}`"));
        let to = rust[from..]
            .find(end)
            .unwrap_or_else(|| panic!("no `{end}`"));
        &rust[from..from + to]
    }

    #[test]
    fn each_relation_gets_its_struct_and_derived_ones_their_place_in_order() {
        assert_eq!(
            between(&fixture(), "relation_struct!", "\n\n"),
            "relation_struct!(input Fact(Node 0, Sym 1));
relation_struct!(derived Resolved(Node 0, Sym 1), 0, resolved, resolved_mut);
relation_struct!(derived Classed(Node 0, Sym 1), 1, classed, classed_mut);
relation_struct!(derived Filed(Node 0), 2, filed, filed_mut);
relation_struct!(derived Projected(Node 0), 3, projected, projected_mut);
relation_struct!(derived Reported(Node 0), 4, reported, reported_mut);"
        );
    }

    #[test]
    fn a_stage_is_a_crepe_program_over_what_it_reads() {
        assert_eq!(
            between(&fixture(), "mod stage_file {", "mod stage_project {"),
            "mod stage_file {
    #![allow(clippy::all, unused_imports, dead_code)]
    use super::{Node, Pattern, Site, Sym};
    crepe::crepe! {
@input
#[derive(Debug)]
pub struct Classed(pub Node, pub Sym);
@input
#[derive(Debug)]
pub struct Fact(pub Node, pub Sym);
@output
#[derive(Debug)]
pub struct Filed(pub Node);
Filed(f) <- Classed(f, n), !Fact(f, _), (n.is_private());

    }
}

#[allow(unused_variables, unused_mut, clippy::single_match)]
fn run_file(facts: &[InputFact], derived: &Outputs) -> Outputs {
    let mut runtime = stage_file::Crepe::new();
    for fact in facts {
        match *fact {
            InputFact::Fact(t) => runtime.extend([stage_file::Fact(t.0, t.1)]),
            #[allow(unreachable_patterns)]
            _ => {}
        }
    }
    runtime.extend(derived.classed().iter().map(|t| stage_file::Classed(t.0, t.1)));
    let (filed,) = runtime.run_with_hasher::<rustc_hash::FxBuildHasher>();
    Outputs::from_relations([
        Tuples::Filed(sorted(filed.into_iter().map(|t| Filed(t.0)))),
    ])
}

fn file_reads_fact(fact: &InputFact) -> bool {
    matches!(fact, InputFact::Fact(_))
}

fn file_reads_derived(tuples: &Tuples) -> bool {
    matches!(tuples, Tuples::Classed(_))
}

/// The `file` stage of the rules.
pub const FILE: StageProgram = StageProgram {
    reads_facts: true,
    reads_fact: file_reads_fact,
    reads_derived: file_reads_derived,
    run: run_file,
};

"
        );
    }

    #[test]
    fn a_stage_without_base_facts_reads_none() {
        let rust = fixture();
        assert!(rust.contains(
            "fn project_reads_fact(fact: &InputFact) -> bool {\n    matches!(fact, _ if false)\n}"
        ));
        assert!(
            rust.contains(
                "pub const PROJECT: StageProgram = StageProgram {\n    reads_facts: false,"
            )
        );
        assert!(rust.contains(
            "fn resolve_reads_derived(tuples: &Tuples) -> bool {\n    matches!(tuples, _ if false)\n}"
        ));
    }

    #[test]
    fn a_rule_is_retraced_through_its_plan_and_guards() {
        let rust = fixture();
        assert_eq!(
            between(
                &rust,
                "#[allow(unused_variables, unused_parens",
                "/// How to retrace"
            ),
            "#[allow(unused_variables, unused_parens, clippy::all)]
fn guard_2_2(env: &[Option<Value>]) -> bool {
    let Some(&Some(Value::Node(f))) = env.get(0) else { return false };
    let Some(&Some(Value::Sym(n))) = env.get(1) else { return false };
    (n.is_private())
}


"
        );
        assert!(rust.contains(
            r#"    RulePlan { rule: 2, head: &[Term::Var(0)], vars: &["f", "n"], body: &[Clause::Atom { relation: "Classed", negated: false, args: &[Term::Var(0), Term::Var(1)] }, Clause::Atom { relation: "Fact", negated: true, args: &[Term::Var(0), Term::Wild] }, Clause::Guard { text: "(n.is_private())", check: guard_2_2 }] },"#
        ));
    }

    #[test]
    fn the_tables_name_every_relation_and_rule() {
        let rust = fixture();
        assert!(rust.contains(
            r#"    RelationInfo { name: "Classed", kind: RelationKind::Intermediate, types: &["Node", "Sym"], args: &["file", "name"], doc: "resolved.", file: "rules/b_classes.dl", line: 4 },"#
        ));
        assert!(rust.contains(
            r#"    RuleInfo { head: "Filed", text: "Filed(f) <- Classed(f, n), !Fact(f, _), (n.is_private());", file: "rules/c_file.dl", line: 7 },"#
        ));
    }
}
