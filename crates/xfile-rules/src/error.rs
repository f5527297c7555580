//! What can be wrong with the rules, worded for their author: each message
//! names the place and says what to write instead.

use std::fmt;

/// A line of a rules file (`rules/NAME.dl`, counted from 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub line: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A mistake in the rules, where it is (`None` when it is about the rules
/// as a whole) and what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub at: Option<Location>,
    pub problem: Problem,
}

impl Error {
    pub(crate) fn at(at: &Location, problem: Problem) -> Error {
        Error {
            at: Some(at.clone()),
            problem,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// `// stage: NAME` with a name that is no stage.
    UnknownStage(String),
    /// A second `///` line before one declaration.
    SecondDocLine,
    /// A `///` line that no declaration follows.
    DetachedDoc,
    /// `@input` or `@output` that no declaration follows.
    DetachedAttribute(String),
    /// A `struct` line that is not `struct Name(Type, ...);`.
    BadDeclaration,
    NoArguments(String),
    UnknownType {
        relation: String,
        ty: String,
    },
    MissingDoc(String),
    MalformedDoc {
        relation: String,
        arity: usize,
    },
    DuplicateRelation {
        relation: String,
        first: Location,
    },
    /// A rule whose last line has no `;`.
    UnterminatedRule,
    /// A rule without `<-`.
    NotARule,
    UnreadableHead,
    UnreadableClause(String),
    LetOrFor(String),
    EmptyArgument(String),
    UndeclaredRelation(String),
    WrongArity {
        relation: String,
        expected: usize,
        found: usize,
    },
    /// A relation a rule reads that is neither a base relation nor derived.
    NotDerived(String),
    /// A relation read by a stage that does not get it whole from one
    /// earlier stage.
    ReadsLaterStage {
        relation: String,
        derived_in: Vec<&'static str>,
        stage: &'static str,
    },
    EmptyStage(&'static str),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::UnknownStage(name) => write!(
                f,
                "unknown stage `{name}`; use resolve, classes, file, project or report"
            ),
            Problem::SecondDocLine => write!(
                f,
                "a second `///` line: a relation's doc is one line, `/// Name(arg, ...): meaning`; \
                 join the lines, or make this one a `//` comment"
            ),
            Problem::DetachedDoc => write!(
                f,
                "this `///` line documents no relation: a declaration (`struct Name(...);`) must \
                 follow it; write a comment on a rule with `//`"
            ),
            Problem::DetachedAttribute(attribute) => write!(
                f,
                "`{attribute}` must be followed by the declaration it marks (`pub struct Name(pub Node, ...);`)"
            ),
            Problem::BadDeclaration => write!(
                f,
                "cannot read this declaration; write `struct Name(pub Type, ...);`"
            ),
            Problem::NoArguments(relation) => write!(
                f,
                "`{relation}` has no arguments; a relation needs at least one (its first argument keys its tuples)"
            ),
            Problem::UnknownType { relation, ty } => write!(
                f,
                "`{ty}` in `{relation}` is not an argument type; use Node, Sym, Site or Pattern"
            ),
            Problem::MissingDoc(relation) => write!(
                f,
                "`{relation}` has no doc line; put `/// {relation}(arg, ...): meaning` on the line before its declaration"
            ),
            Problem::MalformedDoc { relation, arity } => write!(
                f,
                "the doc line of `{relation}` must read `/// {relation}(arg, ...): meaning`, with a name \
                 for each of its {arity} arguments and the meaning after `):`"
            ),
            Problem::DuplicateRelation { relation, first } => write!(
                f,
                "`{relation}` is declared a second time (first at {first}); rename or remove one of them"
            ),
            Problem::UnterminatedRule => write!(
                f,
                "the rule starting here has no `;` before the end of the file; end it with `;`"
            ),
            Problem::NotARule => write!(
                f,
                "cannot read this rule; write `Head(..) <- body;` (explanations retrace rules of that form)"
            ),
            Problem::UnreadableHead => write!(
                f,
                "cannot read the head of this rule; write `Name(arg, ...) <- body;`"
            ),
            Problem::UnreadableClause(clause) => write!(
                f,
                "cannot read `{clause}`; a body clause is an atom `Name(arg, ...)`, a negated atom \
                 `!Name(arg, ...)` or a Rust guard in parentheses"
            ),
            Problem::LetOrFor(clause) => write!(
                f,
                "`{clause}`: explanations do not follow `let` or `for` clauses; compute such values in base facts"
            ),
            Problem::EmptyArgument(atom) => write!(
                f,
                "an empty argument in `{atom}`; write a variable, `_` or a constant"
            ),
            Problem::UndeclaredRelation(relation) => write!(
                f,
                "unknown relation `{relation}`; declare it in a rules file (`/// {relation}(arg, ...): meaning`, \
                 then `struct {relation}(pub Node, ...);`) or correct the name"
            ),
            Problem::WrongArity {
                relation,
                expected,
                found,
            } => write!(
                f,
                "`{relation}` has {expected} arguments, but this rule gives it {found}"
            ),
            Problem::NotDerived(relation) => write!(
                f,
                "`{relation}` is read here but no rule derives it; add a rule for it, or make it a base \
                 relation (`@input`, in rules/base.dl)"
            ),
            Problem::ReadsLaterStage {
                relation,
                derived_in,
                stage,
            } => write!(
                f,
                "`{relation}` is derived in stage(s) {derived_in:?}, so a `{stage}` rule cannot read it; \
                 a stage reads only base relations and relations derived whole in one earlier stage"
            ),
            Problem::EmptyStage(stage) => write!(
                f,
                "no rules file declares `// stage: {stage}`; each stage needs at least one rule"
            ),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.at {
            Some(at) => write!(f, "{at}: {}", self.problem),
            None => write!(f, "{}", self.problem),
        }
    }
}

impl std::error::Error for Error {}
