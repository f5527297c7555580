//! The Datalog program compiled from `rules/*.dl` by `build.rs` (with
//! `xfile-rules`), its value types, and the tables that make every relation
//! queryable by name. What the generated code does the same for every
//! relation is written once in `tuples`.

mod tuples;

use serde::Serialize;

pub use self::tuples::Outputs;
use self::tuples::relation_struct;

/// A project file or a marker, interned (see [`super::intern::Interner`]).
/// Two high bits classify markers, so rules can tell project files from
/// outside targets without a join (a join would tie each file's rules to
/// facts from every other file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node(pub u32);

impl Node {
    /// Any marker: `<stdlib:os>`, `<unresolved:x>`, `<namespace:pkg>`, ...
    pub const MARKER: u32 = 1 << 31;
    /// A marker for a module or name outside the project that exists
    /// (`<stdlib:…>`, `<third-party:…>`, `<builtin:…>`): what `External` lists.
    pub const EXTERNAL: u32 = 1 << 30;

    pub fn is_marker(self) -> bool {
        self.0 & Self::MARKER != 0
    }

    pub fn is_external(self) -> bool {
        self.0 & Self::EXTERNAL != 0
    }
}

/// A Python name, interned. The top bit marks a private (`_`-prefixed)
/// name, so rules can test privacy without a lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(pub u32);

impl Sym {
    pub const PRIVATE: u32 = 1 << 31;

    pub fn is_private(self) -> bool {
        self.0 & Self::PRIVATE != 0
    }
}

/// A source position, as an index into the facts of the file the tuple
/// starts from (`ModuleFacts::sites`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Site(pub u32);

/// A kind of code static analysis cannot see through, and so the type of a
/// warning. Rules name the variants directly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    DynamicImport,
    DynamicDispatch,
    MonkeyPatching,
    ExecEval,
    Decorator,
    Metaclass,
    CircularImport,
    WildcardImport,
}

impl Pattern {
    pub const ALL: [Pattern; 8] = [
        Pattern::DynamicImport,
        Pattern::DynamicDispatch,
        Pattern::MonkeyPatching,
        Pattern::ExecEval,
        Pattern::Decorator,
        Pattern::Metaclass,
        Pattern::CircularImport,
        Pattern::WildcardImport,
    ];

    /// The name in warnings, configuration and queries.
    pub fn as_str(self) -> &'static str {
        match self {
            Pattern::DynamicImport => "dynamic_import",
            Pattern::DynamicDispatch => "dynamic_dispatch",
            Pattern::MonkeyPatching => "monkey_patching",
            Pattern::ExecEval => "exec_eval",
            Pattern::Decorator => "decorator",
            Pattern::Metaclass => "metaclass",
            Pattern::CircularImport => "circular_import",
            Pattern::WildcardImport => "wildcard_import",
        }
    }

    pub fn from_name(name: &str) -> Option<Pattern> {
        Pattern::ALL.into_iter().find(|p| p.as_str() == name)
    }
}

/// One argument of any tuple, typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, salsa::SalsaValue)]
pub enum Value {
    Node(Node),
    Sym(Sym),
    Site(Site),
    Pattern(Pattern),
}

impl From<Node> for Value {
    fn from(node: Node) -> Self {
        Value::Node(node)
    }
}

impl From<Sym> for Value {
    fn from(sym: Sym) -> Self {
        Value::Sym(sym)
    }
}

impl From<Pattern> for Value {
    fn from(pattern: Pattern) -> Self {
        Value::Pattern(pattern)
    }
}

impl From<Site> for Value {
    fn from(site: Site) -> Self {
        Value::Site(site)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RelationKind {
    /// Base facts fed by the engine.
    Input,
    /// Derived and published.
    Output,
    /// Derived helper relations, not published.
    Intermediate,
}

#[derive(Clone, Copy, Debug, Serialize)]
pub struct RelationInfo {
    pub name: &'static str,
    pub kind: RelationKind,
    pub types: &'static [&'static str],
    pub args: &'static [&'static str],
    pub doc: &'static str,
    pub file: &'static str,
    pub line: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RuleInfo {
    pub head: &'static str,
    pub text: &'static str,
    pub file: &'static str,
    pub line: usize,
}

/// An argument of an atom in a [`RulePlan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Term {
    /// A variable, by index into [`RulePlan::vars`].
    Var(usize),
    Wild,
    /// A constant written in the rule, such as `Pattern::CircularImport`.
    Const(Value),
}

/// One body clause of a rule, as `engine::explain` retraces it.
#[derive(Clone, Copy, Debug)]
pub enum Clause {
    /// `Relation(args)`, or `!Relation(args)` when negated.
    Atom {
        relation: &'static str,
        negated: bool,
        args: &'static [Term],
    },
    /// A Rust guard `( ... )`, compiled by `xfile-rules` into `check` over the
    /// variables bound so far (`None` where unbound).
    Guard {
        text: &'static str,
        check: fn(&[Option<Value>]) -> bool,
    },
}

/// How to find the premises of a head tuple of rule `RULES[rule]`.
#[derive(Clone, Copy, Debug)]
pub struct RulePlan {
    pub rule: usize,
    pub head: &'static [Term],
    pub vars: &'static [&'static str],
    pub body: &'static [Clause],
}

fn sorted<T: Ord>(set: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut tuples: Vec<T> = set.into_iter().collect();
    tuples.sort_unstable();
    tuples
}

/// One stage of the rules (`// stage:` in a rules file; the generated code
/// has a constant per stage: `RESOLVE`, `CLASSES`, `FILE`, `PROJECT`,
/// `REPORT`): what it reads and how to run it.
pub struct StageProgram {
    /// Whether it reads any base relation: a stage that reads none need
    /// not scan the files' facts.
    pub reads_facts: bool,
    pub reads_fact: fn(&InputFact) -> bool,
    /// Whether it reads the relation of these tuples, derived by an earlier
    /// stage.
    reads_derived: fn(&Tuples) -> bool,
    /// Evaluates the stage over base facts and earlier stages' tuples.
    pub run: fn(&[InputFact], &Outputs) -> Outputs,
}

impl StageProgram {
    /// Appends the tuples of earlier stages' relations it reads.
    pub fn take_derived(&self, into: &mut Outputs, from: &Outputs) {
        into.take(from, self.reads_derived);
    }

    /// Those tuples (of sorted outputs) whose first argument is in `keys`.
    pub fn select_derived(&self, from: &Outputs, keys: &[Value]) -> Outputs {
        from.select(keys, self.reads_derived)
    }

    /// The first arguments of those tuples, sorted and without repeats:
    /// the keys `select_derived` can find something for.
    pub fn derived_keys(&self, from: &Outputs) -> Vec<Value> {
        from.keys(self.reads_derived)
    }
}

include!(concat!(env!("OUT_DIR"), "/rules.rs"));

/// The reference evaluation: every rule in one crepe program over all of
/// `facts`. The engine runs the stages instead (`engine::db`); tests check
/// that both derive the same relations.
pub fn run(facts: &[InputFact]) -> Outputs {
    run_reference(facts, &Outputs::default())
}

/// Looks up a relation by name.
pub fn relation(name: &str) -> Option<&'static RelationInfo> {
    RELATIONS.iter().find(|r| r.name == name)
}

#[cfg(test)]
mod tests {
    use super::{Calls, DependsOn, Node, Outputs, Site, Sym, Value};

    fn depends(a: u32, b: u32) -> DependsOn {
        DependsOn(Node(a), Node(b))
    }

    /// Outputs keep only the relations that hold tuples, so equality must
    /// not see whether a relation was touched and left empty.
    #[test]
    fn an_emptied_relation_equals_an_absent_one() {
        let mut touched = Outputs::default();
        touched.depends_on_mut();
        touched
            .calls_mut()
            .push(Calls(Node(1), Site(2), Node(3), Sym(4)));
        let mut plain = Outputs::default();
        plain
            .calls_mut()
            .push(Calls(Node(1), Site(2), Node(3), Sym(4)));
        assert_eq!(touched, plain);
        assert_ne!(plain, Outputs::default());
        assert_eq!(touched.depends_on(), &[] as &[DependsOn]);
        assert_eq!(touched.tuple_count(), 1);
    }

    #[test]
    fn extend_and_normalize_merge_relation_by_relation() {
        let mut one = Outputs::default();
        one.depends_on_mut().extend([depends(2, 3), depends(1, 2)]);
        let mut other = Outputs::default();
        other.depends_on_mut().push(depends(1, 2));
        other
            .calls_mut()
            .push(Calls(Node(1), Site(2), Node(3), Sym(4)));
        one.extend(&other);
        one.normalize();
        assert_eq!(one.depends_on(), &[depends(1, 2), depends(2, 3)]);
        assert_eq!(one.calls().len(), 1);
        assert_eq!(
            one.tuples("DependsOn"),
            Some(vec![
                vec![Value::Node(Node(1)), Value::Node(Node(2))],
                vec![Value::Node(Node(2)), Value::Node(Node(3))],
            ])
        );
        let mut values: Vec<Value> = one.tuples_values().collect();
        values.sort_unstable();
        values.dedup();
        assert_eq!(values.len(), 5, "nodes 1, 2, 3, the site and the symbol");
    }
}
