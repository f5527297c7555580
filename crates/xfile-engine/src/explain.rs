//! Derivations of tuples, reconstructed after evaluation: crepe keeps no
//! provenance, so an explanation retraces the rules over the materialized
//! relations (every derived relation is materialized, intermediates too).
//!
//! For a tuple of a derived relation, each rule with that head is followed
//! with the head's variables bound, through the [`RulePlan`] the rules
//! compiler generated: body atoms are joined left to right, negated atoms must find no
//! tuple, guards run as compiled Rust. Among all premise sets, the one of
//! least derivation height wins (a base fact has height 0, a rule adds one
//! to its highest premise), found by a depth-limited search whose limit
//! doubles until it succeeds. That keeps derivations of recursive relations
//! finite and shortest-first: a cycle can never be part of a least-height
//! derivation.
//!
//! A tuple that does not hold gets [`Miss`]es instead: per rule, how far its
//! body could be satisfied and which clause failed, with nearby tuples.

use std::cell::RefCell;
use std::rc::Rc;

use rustc_hash::FxHashMap;

use super::datalog::{
    self, Clause, PLANS, RELATIONS, RULES, RelationKind, RuleInfo, RulePlan, Term, Value,
};
use super::db::Program;
use super::intern::Interner;

/// One tuple of a named relation.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fact {
    pub relation: &'static str,
    pub values: Vec<Value>,
}

/// A tuple with its least-height derivation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Derivation {
    pub fact: Fact,
    /// The rule that derived it; `None` for a base fact.
    pub rule: Option<&'static RuleInfo>,
    /// One per body atom, in body order.
    pub premises: Vec<Premise>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Premise {
    Holds(Derivation),
    /// A negated atom: no tuple matches `pattern` (`None` is `_`).
    Absent {
        relation: &'static str,
        pattern: Vec<Option<Value>>,
    },
}

/// Why one rule (or, for a base relation, the facts) does not give a tuple.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Miss {
    /// `None` when the relation is a base relation.
    pub rule: Option<&'static RuleInfo>,
    /// The rule's variables bound when it got stuck.
    pub bindings: Vec<(&'static str, Value)>,
    /// The premises that did hold before the failing clause.
    pub satisfied: Vec<Fact>,
    pub failed: Failure,
    /// When the failing clause is a missing derived tuple: why that one
    /// does not hold, in turn (a few levels deep).
    pub deeper: Vec<Miss>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// No tuple matches `pattern`; `near` are tuples that differ in one
    /// bound argument.
    Missing {
        relation: &'static str,
        pattern: Vec<Option<Value>>,
        near: Vec<Fact>,
    },
    /// A negated atom found this tuple.
    Present(Fact),
    /// A guard was false.
    Guard(&'static str),
    /// The rule's head cannot have this shape (a variable repeated in the
    /// head would need two different values).
    Head,
}

/// How many nearby tuples a [`Failure::Missing`] lists.
const NEAR_LIMIT: usize = 5;
/// How many partial matches the search for a [`Miss`] visits per rule.
const MISS_BUDGET: usize = 10_000;
/// Deep derivations recurse; below this much stack left, grow it.
pub const RED_ZONE: usize = 64 * 1024;
pub const STACK_SEGMENT: usize = 1024 * 1024;
/// How many levels of missing derived premises [`Explainer::why_not`]
/// follows.
const MISS_DEPTH: usize = 4;

/// A relation's tuples with lookup indexes built on demand, one per set of
/// bound positions.
struct Table {
    /// A base relation: its tuples need no derivation.
    input: bool,
    tuples: Vec<Vec<Value>>,
    indexes: RefCell<FxHashMap<u64, Rc<Index>>>,
}

/// Bound values → positions in [`Table::tuples`].
type Index = FxHashMap<Vec<Value>, Vec<usize>>;

impl Table {
    fn new(input: bool, mut tuples: Vec<Vec<Value>>) -> Self {
        tuples.sort_unstable();
        tuples.dedup();
        Table {
            input,
            tuples,
            indexes: RefCell::default(),
        }
    }

    /// The tuple equal to `values`, found by binary search (tuples are sorted).
    fn get(&self, values: &[Value]) -> Option<&[Value]> {
        let at = self
            .tuples
            .binary_search_by(|t| t.as_slice().cmp(values))
            .ok()?;
        self.tuples.get(at).map(Vec::as_slice)
    }

    /// The tuples that agree with `pattern` on its bound positions.
    fn matching(&self, pattern: &[Option<Value>]) -> Vec<&[Value]> {
        let mask = pattern
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_some())
            .fold(0u64, |mask, (i, _)| mask | 1 << i.min(63));
        let key: Vec<Value> = pattern.iter().flatten().copied().collect();
        if mask == 0 {
            return self.tuples.iter().map(Vec::as_slice).collect();
        }
        if key.len() == pattern.len() {
            return self.get(&key).into_iter().collect();
        }
        let index = self
            .indexes
            .borrow_mut()
            .entry(mask)
            .or_insert_with(|| {
                let mut index = Index::default();
                for (i, tuple) in self.tuples.iter().enumerate() {
                    let key = pattern
                        .iter()
                        .zip(tuple)
                        .filter(|(p, _)| p.is_some())
                        .map(|(_, v)| *v)
                        .collect();
                    index.entry(key).or_default().push(i);
                }
                Rc::new(index)
            })
            .clone();
        index
            .get(&key)
            .into_iter()
            .flatten()
            .filter_map(|&i| self.tuples.get(i).map(Vec::as_slice))
            .collect()
    }
}

/// What is known of a tuple's least derivation height.
#[derive(Clone, Default)]
struct Known {
    /// The least height and the derivation step that achieves it.
    exact: Option<(u32, Step)>,
    /// No derivation of height at most this exists.
    fails_up_to: Option<u32>,
}

/// A value ordered by what it stands for.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum TextKey {
    Wild,
    Site(u32),
    Text(std::sync::Arc<str>),
}

/// One derivation step: the plan and the matched premises, in body order.
#[derive(Clone)]
struct Step {
    plan: &'static RulePlan,
    premises: Vec<StepPremise>,
}

#[derive(Clone)]
enum StepPremise {
    Holds(Fact),
    Absent(&'static str, Vec<Option<Value>>),
}

/// Explains tuples of one evaluated program. Tables and derivation heights
/// are cached, so explaining many tuples (a dump) shares the work.
pub struct Explainer<'p> {
    program: Program<'p>,
    interner: &'p Interner,
    tables: RefCell<FxHashMap<&'static str, Rc<Table>>>,
    known: RefCell<FxHashMap<Fact, Known>>,
}

impl<'p> Explainer<'p> {
    pub fn new(program: Program<'p>, interner: &'p Interner) -> Self {
        Explainer {
            program,
            interner,
            tables: RefCell::default(),
            known: RefCell::default(),
        }
    }

    /// Orders premise lists by their text, not their ids, comparing value
    /// by value only as far as needed.
    fn text_cmp(&self, a: &[StepPremise], b: &[StepPremise]) -> std::cmp::Ordering {
        let values = |p: &StepPremise| -> (&'static str, Vec<Option<Value>>) {
            match p {
                StepPremise::Holds(fact) => (
                    fact.relation,
                    fact.values.iter().copied().map(Some).collect(),
                ),
                StepPremise::Absent(relation, pattern) => (relation, pattern.clone()),
            }
        };
        for (x, y) in a.iter().zip(b) {
            let ((rx, vx), (ry, vy)) = (values(x), values(y));
            let order = rx.cmp(ry).then_with(|| {
                vx.iter()
                    .zip(&vy)
                    .map(|(u, v)| {
                        if u == v {
                            std::cmp::Ordering::Equal
                        } else {
                            self.text(*u).cmp(&self.text(*v))
                        }
                    })
                    .find(|o| o.is_ne())
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            if order.is_ne() {
                return order;
            }
        }
        a.len().cmp(&b.len())
    }

    fn text(&self, value: Option<Value>) -> TextKey {
        match value {
            None => TextKey::Wild,
            Some(Value::Node(node)) => TextKey::Text(self.interner.node_text(node)),
            Some(Value::Sym(sym)) => TextKey::Text(self.interner.sym_text(sym)),
            Some(Value::Pattern(pattern)) => TextKey::Text(std::sync::Arc::from(pattern.as_str())),
            // Site indexes follow source order within their file.
            Some(Value::Site(site)) => TextKey::Site(site.0),
        }
    }

    fn table(&self, relation: &'static str) -> Rc<Table> {
        if let Some(table) = self.tables.borrow().get(relation) {
            return table.clone();
        }
        let is_input = datalog::relation(relation).is_some_and(|r| r.kind == RelationKind::Input);
        let tuples = if is_input {
            // `program` sorts the facts, and `InputFact` orders its variants
            // as `RELATIONS` lists the inputs (the rules compiler writes both), so one
            // relation's facts are one contiguous run.
            let rank = |name: &str| {
                RELATIONS
                    .iter()
                    .filter(|r| r.kind == RelationKind::Input)
                    .position(|r| r.name == name)
            };
            let target = rank(relation);
            let facts = &self.program.facts;
            let start = facts.partition_point(|f| rank(f.relation()) < target);
            let end = facts.partition_point(|f| rank(f.relation()) <= target);
            facts
                .get(start..end)
                .unwrap_or_default()
                .iter()
                .map(|f| f.values())
                .collect()
        } else {
            self.program.outputs.tuples(relation).unwrap_or_default()
        };
        let table = Rc::new(Table::new(is_input, tuples));
        self.tables.borrow_mut().insert(relation, table.clone());
        table
    }

    /// The tuples of `relation` that match `pattern` (`None` is `_`).
    pub fn matching(&self, relation: &'static str, pattern: &[Option<Value>]) -> Vec<Fact> {
        self.table(relation)
            .matching(pattern)
            .into_iter()
            .map(|values| Fact {
                relation,
                values: values.to_vec(),
            })
            .collect()
    }

    pub fn holds(&self, fact: &Fact) -> bool {
        self.table(fact.relation).get(&fact.values).is_some()
    }

    /// The least-height derivation of `fact`, or `None` if it does not hold.
    pub fn derive(&self, fact: &Fact) -> Option<Derivation> {
        if !self.holds(fact) {
            return None;
        }
        // `height` is exact whenever the least height is within the limit,
        // so doubling the limit finds it; the memo carries over between
        // rounds. A tuple that holds has a derivation no higher than the
        // number of derived tuples, so the search ends.
        let bound = u32::try_from(self.program.outputs.tuple_count())
            .unwrap_or(u32::MAX)
            .saturating_add(1);
        let mut limit = 1;
        while self.height(fact, limit).is_none() {
            if limit >= bound {
                return None;
            }
            limit = limit.saturating_mul(2).min(bound);
        }
        self.tree(fact)
    }

    /// Builds the tree from the recorded least-height steps.
    fn tree(&self, fact: &Fact) -> Option<Derivation> {
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.tree_on_stack(fact))
    }

    fn tree_on_stack(&self, fact: &Fact) -> Option<Derivation> {
        if is_input(fact.relation) {
            return Some(Derivation {
                fact: fact.clone(),
                rule: None,
                premises: Vec::new(),
            });
        }
        let step = self.known.borrow().get(fact)?.exact.clone()?.1;
        let premises = step
            .premises
            .iter()
            .map(|p| match p {
                StepPremise::Holds(premise) => self.tree(premise).map(Premise::Holds),
                StepPremise::Absent(relation, pattern) => Some(Premise::Absent {
                    relation,
                    pattern: pattern.clone(),
                }),
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Derivation {
            fact: fact.clone(),
            rule: RULES.get(step.plan.rule),
            premises,
        })
    }

    /// The least derivation height of `fact` if it is at most `limit`.
    /// Recursion is as deep as the derivation is high (a long chain of
    /// re-exports, say), so the stack grows on demand.
    fn height(&self, fact: &Fact, limit: u32) -> Option<u32> {
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || {
            self.height_on_stack(fact, limit)
        })
    }

    fn height_on_stack(&self, fact: &Fact, limit: u32) -> Option<u32> {
        let table = self.table(fact.relation);
        if table.input {
            return table.get(&fact.values).map(|_| 0);
        }
        if let Some(known) = self.known.borrow().get(fact) {
            if let Some((height, _)) = &known.exact {
                return (*height <= limit).then_some(*height);
            }
            if known.fails_up_to.is_some_and(|f| f >= limit) {
                return None;
            }
        }
        if limit == 0 || table.get(&fact.values).is_none() {
            return None;
        }
        let mut best: Option<(u32, Step)> = None;
        for plan in plans_for(fact.relation) {
            let Some(env) = bind_head(plan, &fact.values) else {
                continue;
            };
            let mut search = Search {
                explainer: self,
                plan,
                limit: limit - 1,
                best: &mut best,
                premises: Vec::new(),
            };
            search.clauses(0, env, 0);
        }
        let mut known = self.known.borrow_mut();
        let entry = known.entry(fact.clone()).or_default();
        match best {
            Some((height, step)) => {
                entry.exact = Some((height, step));
                Some(height)
            }
            None => {
                entry.fails_up_to = Some(limit);
                None
            }
        }
    }

    /// Why `relation` has no tuple matching `pattern`: one [`Miss`] per rule
    /// with that head (for a base relation, one without a rule).
    pub fn why_not(&self, relation: &'static str, pattern: &[Option<Value>]) -> Vec<Miss> {
        self.why_not_within(relation, pattern, MISS_DEPTH)
    }

    fn why_not_within(
        &self,
        relation: &'static str,
        pattern: &[Option<Value>],
        depth: usize,
    ) -> Vec<Miss> {
        if is_input(relation) {
            return vec![Miss {
                rule: None,
                bindings: Vec::new(),
                satisfied: Vec::new(),
                failed: self.missing(relation, pattern.to_vec()),
                deeper: Vec::new(),
            }];
        }
        plans_for(relation)
            .filter_map(|plan| {
                let rule = RULES.get(plan.rule);
                let Some(env) = bind_pattern(plan, pattern) else {
                    return Some(Miss {
                        rule,
                        bindings: Vec::new(),
                        satisfied: Vec::new(),
                        failed: Failure::Head,
                        deeper: Vec::new(),
                    });
                };
                let mut probe = Probe {
                    explainer: self,
                    plan,
                    budget: MISS_BUDGET,
                    deepest: None,
                    satisfied: Vec::new(),
                };
                probe.clauses(0, env);
                let (_, mut miss) = probe.deepest?;
                if let Failure::Missing {
                    relation, pattern, ..
                } = &miss.failed
                    && depth > 1
                    && !is_input(relation)
                {
                    miss.deeper = most_advanced(self.why_not_within(relation, pattern, depth - 1));
                }
                Some(miss)
            })
            .collect()
    }

    fn missing(&self, relation: &'static str, pattern: Vec<Option<Value>>) -> Failure {
        let mut near = Vec::new();
        // Relaxing the only bound argument would list unrelated tuples.
        let bound = pattern.iter().flatten().count();
        for (i, value) in pattern.iter().enumerate().filter(|_| bound > 1) {
            if value.is_none() || near.len() >= NEAR_LIMIT || pins_a_site(&pattern, i) {
                continue;
            }
            let mut relaxed = pattern.clone();
            relaxed[i] = None;
            for fact in self.matching(relation, &relaxed) {
                if near.len() < NEAR_LIMIT && !near.contains(&fact) {
                    near.push(fact);
                }
            }
        }
        Failure::Missing {
            relation,
            pattern,
            near,
        }
    }
}

/// Below the top level, only the rules that got furthest into their body
/// are worth reading: the others fail at their first premise.
fn most_advanced(misses: Vec<Miss>) -> Vec<Miss> {
    let furthest = misses
        .iter()
        .filter(|m| m.failed != Failure::Head)
        .map(|m| m.satisfied.len())
        .max();
    misses
        .into_iter()
        .filter(|m| m.failed != Failure::Head && Some(m.satisfied.len()) == furthest)
        .collect()
}

/// Whether position `i` is the file of a bound site after it: a site is an
/// index into that file's positions, so with another file it would name an
/// unrelated place.
fn pins_a_site(pattern: &[Option<Value>], i: usize) -> bool {
    matches!(pattern.get(i), Some(Some(Value::Node(_))))
        && pattern
            .iter()
            .skip(i + 1)
            .take_while(|v| !matches!(v, Some(Value::Node(_))))
            .any(|v| matches!(v, Some(Value::Site(_))))
}

fn is_input(relation: &str) -> bool {
    datalog::relation(relation).is_some_and(|r| r.kind == RelationKind::Input)
}

fn plans_for(relation: &str) -> impl Iterator<Item = &'static RulePlan> + '_ {
    PLANS
        .iter()
        .filter(move |p| RULES.get(p.rule).is_some_and(|r| r.head == relation))
}

/// The rule's variables with the head bound to `values`, or `None` when a
/// repeated head variable would need two values.
fn bind_head(plan: &RulePlan, values: &[Value]) -> Option<Vec<Option<Value>>> {
    let pattern: Vec<Option<Value>> = values.iter().copied().map(Some).collect();
    bind_pattern(plan, &pattern)
}

fn bind_pattern(plan: &RulePlan, pattern: &[Option<Value>]) -> Option<Vec<Option<Value>>> {
    let mut env = vec![None; plan.vars.len()];
    for (term, value) in plan.head.iter().zip(pattern) {
        match (term, value) {
            (Term::Var(i), Some(value)) => match env.get(*i).copied().flatten() {
                Some(bound) if bound != *value => return None,
                _ => *env.get_mut(*i)? = Some(*value),
            },
            (Term::Const(constant), Some(value)) if constant != value => return None,
            _ => {}
        }
    }
    Some(env)
}

/// An atom's arguments under `env` (`None` for `_` and unbound variables).
fn instantiate(args: &[Term], env: &[Option<Value>]) -> Vec<Option<Value>> {
    args.iter()
        .map(|t| match t {
            Term::Var(i) => env.get(*i).copied().flatten(),
            Term::Wild => None,
            Term::Const(value) => Some(*value),
        })
        .collect()
}

/// `env` extended with the variables an atom binds in `tuple`, or `None`
/// if the tuple disagrees with a bound variable.
fn unify(args: &[Term], tuple: &[Value], env: &[Option<Value>]) -> Option<Vec<Option<Value>>> {
    let mut env = env.to_vec();
    for (term, value) in args.iter().zip(tuple) {
        match term {
            Term::Var(i) => {
                let slot = env.get_mut(*i)?;
                match slot {
                    Some(bound) if bound != value => return None,
                    _ => *slot = Some(*value),
                }
            }
            Term::Const(constant) if constant != value => return None,
            _ => {}
        }
    }
    Some(env)
}

/// The search for the least-height premises of one rule.
struct Search<'s, 'p> {
    explainer: &'s Explainer<'p>,
    plan: &'static RulePlan,
    /// Premises must have a derivation at most this high.
    limit: u32,
    best: &'s mut Option<(u32, Step)>,
    premises: Vec<StepPremise>,
}

impl Search<'_, '_> {
    /// Matches clauses from `at` on; `height` is the highest premise so far.
    fn clauses(&mut self, at: usize, env: Vec<Option<Value>>, height: u32) {
        // Branch and bound: a step is one above its highest premise. Equal
        // heights go on, to be broken by text below.
        if self.best.as_ref().is_some_and(|(b, _)| height + 1 > *b) {
            return;
        }
        let Some(clause) = self.plan.body.get(at) else {
            // Ties: the earlier rule, then the premises first by text. Ids
            // depend on interning order, which parallel analysis makes vary
            // between runs; text keeps answers stable.
            let better = match &*self.best {
                None => true,
                Some((b, _)) if height + 1 < *b => true,
                Some((_, step)) => {
                    step.plan.rule == self.plan.rule
                        && self
                            .explainer
                            .text_cmp(&self.premises, &step.premises)
                            .is_lt()
                }
            };
            if better {
                *self.best = Some((
                    height + 1,
                    Step {
                        plan: self.plan,
                        premises: self.premises.clone(),
                    },
                ));
            }
            return;
        };
        match *clause {
            Clause::Guard { check, .. } => {
                if check(&env) {
                    self.clauses(at + 1, env, height);
                }
            }
            Clause::Atom {
                relation,
                negated: true,
                args,
            } => {
                let pattern = instantiate(args, &env);
                if self.explainer.matching(relation, &pattern).is_empty() {
                    self.premises.push(StepPremise::Absent(relation, pattern));
                    self.clauses(at + 1, env, height);
                    self.premises.pop();
                }
            }
            Clause::Atom {
                relation,
                negated: false,
                args,
            } => {
                let pattern = instantiate(args, &env);
                for fact in self.explainer.matching(relation, &pattern) {
                    let Some(next) = unify(args, &fact.values, &env) else {
                        continue;
                    };
                    let Some(premise) = self.explainer.height(&fact, self.limit) else {
                        continue;
                    };
                    self.premises.push(StepPremise::Holds(fact));
                    self.clauses(at + 1, next, height.max(premise));
                    self.premises.pop();
                }
            }
        }
    }
}

/// The search for how far one rule's body can be satisfied.
struct Probe<'s, 'p> {
    explainer: &'s Explainer<'p>,
    plan: &'static RulePlan,
    budget: usize,
    /// The failure that got furthest into the body, with its clause index.
    deepest: Option<(usize, Miss)>,
    satisfied: Vec<Fact>,
}

impl Probe<'_, '_> {
    fn clauses(&mut self, at: usize, env: Vec<Option<Value>>) {
        if self.budget == 0 {
            return;
        }
        self.budget -= 1;
        let Some(clause) = self.plan.body.get(at) else {
            // The body holds: the tuple would be derived, so the pattern
            // was not the reason (cannot happen for a pattern with no
            // match, but a budget-cut search stays honest).
            return;
        };
        let failure = match *clause {
            Clause::Guard { check, text } => {
                if check(&env) {
                    return self.clauses(at + 1, env);
                }
                Failure::Guard(text)
            }
            Clause::Atom {
                relation,
                negated: true,
                args,
            } => {
                let pattern = instantiate(args, &env);
                match self
                    .explainer
                    .matching(relation, &pattern)
                    .into_iter()
                    .next()
                {
                    None => return self.clauses(at + 1, env),
                    Some(blocking) => Failure::Present(blocking),
                }
            }
            Clause::Atom {
                relation,
                negated: false,
                args,
            } => {
                let pattern = instantiate(args, &env);
                let found = self.explainer.matching(relation, &pattern);
                if found.is_empty() {
                    self.explainer.missing(relation, pattern)
                } else {
                    for fact in found {
                        if let Some(next) = unify(args, &fact.values, &env) {
                            self.satisfied.push(fact);
                            self.clauses(at + 1, next);
                            self.satisfied.pop();
                        }
                    }
                    return;
                }
            }
        };
        if self.deepest.as_ref().is_none_or(|(depth, _)| at > *depth) {
            let bindings = self
                .plan
                .vars
                .iter()
                .zip(&env)
                .filter_map(|(name, value)| Some((*name, (*value)?)))
                .collect();
            self.deepest = Some((
                at,
                Miss {
                    rule: RULES.get(self.plan.rule),
                    bindings,
                    satisfied: self.satisfied.clone(),
                    failed: failure,
                    deeper: Vec::new(),
                },
            ));
        }
    }
}
