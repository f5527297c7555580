//! The second reader: a rule's text into its head and body clauses, each
//! variable numbered in order of first appearance. The stages learn from
//! it which relations a rule reads; explanations retrace it (body atoms
//! left to right, with the head's variables bound).

use crate::error::{Error, Problem};
use crate::parse::{Rule, Rules};

/// One argument of an atom.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Term {
    /// By index into [`Plan::vars`].
    Var(usize),
    Wild,
    /// A Rust expression of the argument's type, as written in the rule,
    /// such as `Pattern::CircularImport`.
    Const {
        ty: String,
        text: String,
    },
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Atom {
    /// Index into `Rules::relations`.
    pub relation: usize,
    pub negated: bool,
    pub args: Vec<Term>,
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Clause {
    Atom(Atom),
    /// A Rust guard `( ... )` over the first `bound` variables, the ones
    /// bound before it.
    Guard {
        text: String,
        bound: usize,
    },
}

/// A rule read whole.
#[derive(Debug)]
pub(crate) struct Plan {
    pub head: Atom,
    pub body: Vec<Clause>,
    /// The variables, in order of first appearance, with their types.
    pub vars: Vec<(String, String)>,
}

impl Plan {
    pub(crate) fn of(rule: &Rule, rules: &Rules) -> Result<Plan, Error> {
        let fail = |problem| Error::at(&rule.at, problem);
        let (head, body) = rule
            .text
            .trim_end_matches(';')
            .split_once("<-")
            .ok_or_else(|| fail(Problem::NotARule))?;
        let head = atom(head.trim()).ok_or_else(|| fail(Problem::UnreadableHead))?;
        let mut vars = Vars::default();
        let head = vars.atom(head, false, rules).map_err(fail)?;
        let mut clauses = Vec::new();
        for clause in split_top(body) {
            if clause.starts_with('(') {
                let bound = vars.0.len();
                clauses.push(Clause::Guard {
                    text: clause,
                    bound,
                });
                continue;
            }
            if clause.starts_with("let ") || clause.starts_with("for ") {
                return Err(fail(Problem::LetOrFor(clause)));
            }
            let (negated, text) = match clause.strip_prefix('!') {
                Some(rest) => (true, rest.trim()),
                None => (false, clause.as_str()),
            };
            let parts =
                atom(text).ok_or_else(|| fail(Problem::UnreadableClause(clause.clone())))?;
            clauses.push(Clause::Atom(
                vars.atom(parts, negated, rules).map_err(fail)?,
            ));
        }
        Ok(Plan {
            head,
            body: clauses,
            vars: vars.0,
        })
    }
}

/// A rule's variables so far, with their types.
#[derive(Default)]
struct Vars(Vec<(String, String)>);

impl Vars {
    /// The atom `name(args)`, numbering the variables it is the first to name.
    fn atom(
        &mut self,
        (name, args): (&str, Vec<String>),
        negated: bool,
        rules: &Rules,
    ) -> Result<Atom, Problem> {
        let relation = rules
            .relation(name)
            .ok_or_else(|| Problem::UndeclaredRelation(name.to_string()))?;
        let types = &rules.relations[relation].types;
        if args.len() != types.len() {
            return Err(Problem::WrongArity {
                relation: name.to_string(),
                expected: types.len(),
                found: args.len(),
            });
        }
        let mut terms = Vec::new();
        for (arg, ty) in args.iter().zip(types) {
            terms.push(match arg.as_str() {
                "_" => Term::Wild,
                "" => {
                    let atom = format!("{name}({})", args.join(", "));
                    return Err(Problem::EmptyArgument(atom));
                }
                _ if !arg.chars().all(|c| c.is_alphanumeric() || c == '_') => Term::Const {
                    ty: ty.clone(),
                    text: arg.clone(),
                },
                _ => match self.0.iter().position(|(n, _)| n == arg) {
                    Some(i) => Term::Var(i),
                    None => {
                        self.0.push((arg.clone(), ty.clone()));
                        Term::Var(self.0.len() - 1)
                    }
                },
            });
        }
        Ok(Atom {
            relation,
            negated,
            args: terms,
        })
    }
}

/// Splits at commas outside brackets.
fn split_top(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        parts.push(current.trim().to_string());
    }
    parts
}

/// `Name(a, b)` into the name and its arguments.
fn atom(text: &str) -> Option<(&str, Vec<String>)> {
    let (name, rest) = text.split_once('(')?;
    let inner = rest.trim_end().strip_suffix(')')?;
    Some((name.trim(), split_top(inner)))
}

#[cfg(test)]
mod tests {
    use super::{Atom, Clause, Plan, Term};
    use crate::Source;
    use crate::fixture::message;
    use crate::parse::Rules;

    const FILED: &str = "// stage: file\n/// Filed(file): a file with a private name and no other fact.\n@output\npub struct Filed(pub Node);\n";

    /// The message for `rule` as the file stage's rule (on line 5).
    fn rule(rule: &str) -> String {
        message("rules/c_file.dl", &format!("{FILED}{rule}\n"))
    }

    #[test]
    fn a_rule_reads_into_atoms_negations_guards_and_constants() {
        let text = "/// Fact(file, name): a fact.\n@input\npub struct Fact(pub Node, pub Sym);\n/// Warned(file, name, pattern): a warning.\n@output\npub struct Warned(pub Node, pub Sym, pub Pattern);\nWarned(f, n, Pattern::CircularImport) <- Fact(f, n), !Fact(g, _), (f != g), Fact(g, m);\n";
        let rules = Rules::parse(&[Source {
            file: "rules/t.dl",
            text,
        }])
        .unwrap_or_else(|e| panic!("{e}"));
        let plan = Plan::of(&rules.rules[0], &rules).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            plan.head,
            Atom {
                relation: 1,
                negated: false,
                args: vec![
                    Term::Var(0),
                    Term::Var(1),
                    Term::Const {
                        ty: "Pattern".to_string(),
                        text: "Pattern::CircularImport".to_string()
                    }
                ],
            }
        );
        assert_eq!(
            plan.body,
            [
                Clause::Atom(Atom {
                    relation: 0,
                    negated: false,
                    args: vec![Term::Var(0), Term::Var(1)],
                }),
                Clause::Atom(Atom {
                    relation: 0,
                    negated: true,
                    args: vec![Term::Var(2), Term::Wild],
                }),
                Clause::Guard {
                    text: "(f != g)".to_string(),
                    bound: 3,
                },
                Clause::Atom(Atom {
                    relation: 0,
                    negated: false,
                    args: vec![Term::Var(2), Term::Var(3)],
                }),
            ]
        );
        let vars: Vec<(&str, &str)> = plan
            .vars
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        assert_eq!(
            vars,
            [("f", "Node"), ("n", "Sym"), ("g", "Node"), ("m", "Sym")]
        );
    }

    #[test]
    fn a_rule_has_a_head_an_arrow_and_atoms_or_guards() {
        assert_eq!(
            rule("Filed(f);"),
            "rules/c_file.dl:5: cannot read this rule; write `Head(..) <- body;` (explanations retrace rules of that form)"
        );
        assert_eq!(
            rule("Filed <- Classed(f, _);"),
            "rules/c_file.dl:5: cannot read the head of this rule; write `Name(arg, ...) <- body;`"
        );
        assert_eq!(
            rule("Filed(f) <- Classed;"),
            "rules/c_file.dl:5: cannot read `Classed`; a body clause is an atom `Name(arg, ...)`, a negated atom `!Name(arg, ...)` or a Rust guard in parentheses"
        );
        assert_eq!(
            rule("Filed(f) <- Classed(f, n), let m = n;"),
            "rules/c_file.dl:5: `let m = n`: explanations do not follow `let` or `for` clauses; compute such values in base facts"
        );
        assert_eq!(
            rule("Filed(f) <- Classed(, f);"),
            "rules/c_file.dl:5: an empty argument in `Classed(, f)`; write a variable, `_` or a constant"
        );
    }

    #[test]
    fn an_atom_names_a_declared_relation_with_all_its_arguments() {
        let unknown = |name: &str| {
            format!(
                "rules/c_file.dl:5: unknown relation `{name}`; declare it in a rules file (`/// {name}(arg, ...): meaning`, then `struct {name}(pub Node, ...);`) or correct the name"
            )
        };
        assert_eq!(rule("Filed(f) <- Classified(f, _);"), unknown("Classified"));
        assert_eq!(rule("Filled(f) <- Classed(f, _);"), unknown("Filled"));
        assert_eq!(
            rule("Filed(f) <- Classed(f);"),
            "rules/c_file.dl:5: `Classed` has 2 arguments, but this rule gives it 1"
        );
        assert_eq!(
            rule("Filed(f, n) <- Classed(f, n);"),
            "rules/c_file.dl:5: `Filed` has 1 arguments, but this rule gives it 2"
        );
    }
}
