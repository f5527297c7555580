//! The `resolve` stage re-run only where an edit reached.
//!
//! Resolution follows names from module to module, so the stage reads every
//! file's facts: on Django about 27,000 of them, and 15-25 ms of crepe for
//! any edit that changes one (an import added, a file created). Yet a
//! name's resolution only joins facts about the pairs it is imported as,
//! re-exported as or defined as (`rules/resolution.dl`, `plugin_keys.dl`).
//! So the facts fall into parts that no rule joins across:
//! - a `(module, name)` pair, with every pair that imports it and every
//!   pair it imports;
//! - a module in a star import or an `__all__` inclusion (either side),
//!   with all its names, since `from m import *` reaches every name of `m`.
//!
//! Every derived tuple is keyed by its first arguments, `(module, name)` or
//! `module`, and that key lies in the part of the facts it was derived
//! from. An update therefore finds the keys its changed facts mention,
//! drops the tuples of their parts (as the parts were before the edit and as
//! they are after), re-runs the stage over the facts of the parts now
//! holding those keys, and keeps every other tuple. The parts are kept
//! with their keys and facts, and an update partitions anew only the parts
//! its changed facts were in, plus the facts that came (all the facts when
//! which modules are starred changed). The result equals a
//! whole run (`tests/incremental.rs` compares them after random edits). A
//! fact or tuple this file does not know how to key makes the update run
//! the whole stage instead: a new rule in the stage is slower until it is
//! taught here, never wrong.
//!
//! The previous run is kept outside salsa (`ResolveMemo`, shared by the
//! database's snapshots). The stage's value is still a function of its
//! inputs alone: the memo only says which parts can be reused, after
//! comparing what each file's share was then with what it is now.

use std::sync::{Arc, Mutex};

use rustc_hash::{FxHashMap, FxHashSet};

use super::buckets::{self, PerFile};
use super::datalog::{self, InputFact, Node, Outputs, Sym, Value};
use super::db::{Project, Slices};

/// What a derived tuple or a base fact is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    Pair(Node, Sym),
    Module(Node),
}

/// How a base fact joins keys.
enum Joins {
    One(Key),
    Two(Key, Key),
    /// A star import or `__all__` inclusion: both modules, with all their
    /// names.
    Modules(Node, Node),
}

impl Joins {
    /// The keys of one base fact of the stage; `None` for a relation this
    /// partition was not taught.
    fn of(fact: &InputFact) -> Option<Joins> {
        use Key::{Module, Pair};
        Some(match *fact {
            InputFact::Defines(t) => Joins::One(Pair(t.0, t.1)),
            InputFact::Binds(t) => Joins::One(Pair(t.0, t.1)),
            InputFact::BindsImported(t) => Joins::Two(Pair(t.0, t.1), Pair(t.2, t.3)),
            InputFact::DefinesConditionally(t) => Joins::One(Pair(t.0, t.1)),
            InputFact::ImportsConditionally(t) => Joins::Two(Pair(t.0, t.1), Pair(t.2, t.3)),
            InputFact::StarImport(t) => Joins::Modules(t.0, t.2),
            InputFact::AllIncludes(t) => Joins::Modules(t.0, t.1),
            // Read only for modules that are star-imported, or whose
            // `__all__` one that is includes: modules with all their names
            // in the part of the star import.
            InputFact::HasAll(t) => Joins::One(Module(t.0)),
            InputFact::StarExport(t) => Joins::One(Module(t.0)),
            InputFact::SignalDef(t) => Joins::One(Pair(t.0, t.2)),
            InputFact::HookspecMarker(t) => Joins::One(Pair(t.0, t.2)),
            InputFact::HookimplMarker(t) => Joins::One(Pair(t.0, t.2)),
            InputFact::EntryPointTarget(t) => Joins::Two(Pair(t.0, t.1), Pair(t.3, t.4)),
            _ => return None,
        })
    }

    /// One of the keys: all of a fact's keys lie in one part.
    fn first(&self) -> Key {
        match *self {
            Joins::One(key) | Joins::Two(key, _) => key,
            Joins::Modules(module, _) => Key::Module(module),
        }
    }
}

/// The key of a derived tuple from its first two arguments.
fn head_key(first: Value, second: Option<Value>) -> Option<Key> {
    match (first, second) {
        (Value::Node(module), Some(Value::Sym(name))) => Some(Key::Pair(module, name)),
        (Value::Node(module), _) => Some(Key::Module(module)),
        _ => None,
    }
}

/// The parts of the stage's facts: each key's part, and each part's keys
/// and facts, so that an update re-partitions only the parts it reached.
#[derive(Default)]
struct Parts {
    part: FxHashMap<Key, u32>,
    keys: FxHashMap<u32, Vec<Key>>,
    facts: FxHashMap<u32, Vec<InputFact>>,
    /// Modules in a star import or an `__all__` inclusion: every pair of
    /// such a module is in the module's part, derived pairs included.
    starred: FxHashSet<Node>,
    /// The id of the next part made: ids are never reused, so a part an
    /// update makes is never taken for one it replaced.
    next: u32,
}

impl Parts {
    /// `None` when a fact is of a relation this partition was not taught.
    fn of<'a>(facts: impl Iterator<Item = &'a InputFact> + Clone) -> Option<Parts> {
        let mut starred = FxHashSet::default();
        for fact in facts.clone() {
            if let Joins::Modules(a, b) = Joins::of(fact)? {
                starred.extend([a, b]);
            }
        }
        let mut parts = Parts {
            starred,
            ..Parts::default()
        };
        parts.add(facts)?;
        Some(parts)
    }

    /// Partitions `facts` and adds their parts, returning their ids.
    /// `facts` must be closed: no fact joins a key of a part already held.
    fn add<'a>(&mut self, facts: impl Iterator<Item = &'a InputFact>) -> Option<Vec<u32>> {
        let mut keys = Keys::default();
        let mut of_facts: Vec<(u32, InputFact)> = Vec::new();
        for fact in facts {
            let joins = Joins::of(fact)?;
            let first = joins.first();
            of_facts.push((keys.id(first), *fact));
            let (a, b) = match joins {
                Joins::One(a) => (a, None),
                Joins::Two(a, b) => (a, Some(b)),
                Joins::Modules(a, b) => {
                    keys.join(Key::Module(a), Key::Module(b));
                    continue;
                }
            };
            for key in std::iter::once(a).chain(b) {
                keys.join(first, key);
                if let Key::Pair(module, _) = key
                    && self.starred.contains(&module)
                {
                    keys.join(key, Key::Module(module));
                }
            }
        }
        for (id, _) in &mut of_facts {
            *id = keys.root(*id);
        }
        let mut ids: FxHashMap<u32, u32> = FxHashMap::default();
        let next = &mut self.next;
        let mut fresh = |root: u32| {
            *ids.entry(root).or_insert_with(|| {
                *next += 1;
                *next - 1
            })
        };
        for (key, root) in keys.parts() {
            let part = fresh(root);
            self.part.insert(key, part);
            self.keys.entry(part).or_default().push(key);
        }
        for (root, fact) in of_facts {
            self.facts.entry(fresh(root)).or_default().push(fact);
        }
        Some(ids.into_values().collect())
    }

    /// Takes the parts `ids` out, returning their facts.
    fn remove(&mut self, ids: &FxHashSet<u32>) -> Vec<InputFact> {
        let mut facts = Vec::new();
        for id in ids {
            for key in self.keys.remove(id).unwrap_or_default() {
                self.part.remove(&key);
            }
            facts.extend(self.facts.remove(id).unwrap_or_default());
        }
        facts
    }

    /// The keys of `parts`.
    fn keys_in<'a>(&'a self, parts: &'a FxHashSet<u32>) -> impl Iterator<Item = Key> + 'a {
        held_by(&self.keys, parts)
    }

    /// The facts of `parts`.
    fn facts_in<'a>(&'a self, parts: &'a FxHashSet<u32>) -> impl Iterator<Item = InputFact> + 'a {
        held_by(&self.facts, parts)
    }

    /// The part holding `key`: a pair of a starred module that no fact
    /// mentions (a name a star import brings) is in the module's part.
    fn of_key(&self, key: Key) -> Option<u32> {
        self.part.get(&key).copied().or_else(|| match key {
            Key::Pair(module, _) if self.starred.contains(&module) => {
                self.part.get(&Key::Module(module)).copied()
            }
            _ => None,
        })
    }
}

/// What `parts` hold of `by_part`.
fn held_by<'a, T: Copy>(
    by_part: &'a FxHashMap<u32, Vec<T>>,
    parts: &'a FxHashSet<u32>,
) -> impl Iterator<Item = T> + 'a {
    parts
        .iter()
        .filter_map(|part| by_part.get(part))
        .flatten()
        .copied()
}

/// A union-find over keys.
#[derive(Default)]
struct Keys {
    ids: FxHashMap<Key, u32>,
    parents: Vec<u32>,
}

impl Keys {
    fn id(&mut self, key: Key) -> u32 {
        let parents = &mut self.parents;
        *self.ids.entry(key).or_insert_with(|| {
            parents.push(parents.len() as u32);
            parents.len() as u32 - 1
        })
    }

    fn join(&mut self, a: Key, b: Key) {
        let (a, b) = (self.id(a), self.id(b));
        let (a, b) = (self.root(a), self.root(b));
        if a != b {
            self.parents[a.max(b) as usize] = a.min(b);
        }
    }

    /// Follows `id` to its part's root, halving the path on the way.
    fn root(&mut self, mut id: u32) -> u32 {
        let parents = &mut self.parents;
        while parents[id as usize] != id {
            let grand = parents[parents[id as usize] as usize];
            parents[id as usize] = grand;
            id = grand;
        }
        id
    }

    /// Each key's part, named by its root.
    fn parts(mut self) -> FxHashMap<Key, u32> {
        let ids = std::mem::take(&mut self.ids);
        ids.into_iter()
            .map(|(key, id)| (key, self.root(id)))
            .collect()
    }
}

/// Each file's share of the stage, bucket by bucket.
type Shares = Vec<PerFile<Arc<[InputFact]>>>;

/// The stage's last run: the facts it read, file by file, and what it
/// derived.
struct Last {
    project: Project,
    shares: Shares,
    project_facts: Vec<InputFact>,
    /// Built at the first update that needs it, so a one-off index does not
    /// pay for it.
    parts: Option<Parts>,
    output: Outputs,
    /// The first arguments of the tuples that came or went since the
    /// output was last sliced (`None`: a whole run since, or never sliced).
    heads: Option<FxHashSet<Value>>,
    /// The output's slices, when they were taken.
    slices: Option<Arc<Slices>>,
}

/// The `resolve` stage's last run, shared by a database and its snapshots.
#[derive(Clone, Default)]
pub(crate) struct ResolveMemo(Arc<Mutex<Option<Last>>>);

/// What a file's share of the stage was and is.
struct Change<'a> {
    before: &'a [InputFact],
    after: &'a [InputFact],
}

impl ResolveMemo {
    /// The stage's output over `shares` (each file's facts, bucket by
    /// bucket) and `project_facts`: `run` over the parts an edit reached
    /// when the last run is known, else over everything.
    pub(crate) fn run(
        &self,
        project: Project,
        shares: Shares,
        project_facts: Vec<InputFact>,
        run: impl Fn(&[InputFact]) -> Outputs,
    ) -> Outputs {
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // Taken out while it is brought up to date, so that an update cut
        // short leaves no memo half-changed behind: the next run is whole.
        let last = guard.take().filter(|last| last.project == project);
        if let Some(mut last) = last
            && let Some(output) = update(&mut last, &shares, &project_facts, &run)
        {
            last.shares = shares;
            last.project_facts = project_facts;
            *guard = Some(last);
            return output;
        }
        let facts: Vec<InputFact> = all_facts(&shares, &project_facts).copied().collect();
        let output = run(&facts);
        *guard = Some(Last {
            project,
            shares,
            project_facts,
            parts: None,
            output: output.clone(),
            heads: None,
            slices: None,
        });
        output
    }

    /// The slices of `output`, the stage's last output: by delta from the
    /// last slices when only some heads changed since (an update touches a
    /// few files' tuples; slicing and comparing all of them took a third of
    /// an edit's time on a large project), else whole.
    pub(crate) fn slices(&self, output: &Outputs) -> Arc<Slices> {
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let Some(last) = guard.as_mut() else {
            return Slices::of(output);
        };
        let slices = match (&last.slices, last.heads.take()) {
            (Some(before), Some(heads)) => {
                let mut heads: Vec<Value> = heads.into_iter().collect();
                heads.sort_unstable();
                Slices::updated(before, output, &heads)
            }
            _ => Slices::of(output),
        };
        last.slices = Some(Arc::clone(&slices));
        last.heads = Some(FxHashSet::default());
        slices
    }
}

/// Every fact of `shares` and `project_facts`.
fn all_facts<'a>(
    shares: &'a Shares,
    project_facts: &'a [InputFact],
) -> impl Iterator<Item = &'a InputFact> + Clone {
    shares
        .iter()
        .flat_map(|bucket| bucket.iter().flat_map(|(_, share)| share.iter()))
        .chain(project_facts)
}

/// The update of `last` to `shares` (its output and parts; the caller
/// keeps `shares` and `project_facts`), or `None` when the whole stage must
/// run.
fn update(
    last: &mut Last,
    shares: &Shares,
    project_facts: &[InputFact],
    run: &impl Fn(&[InputFact]) -> Outputs,
) -> Option<Outputs> {
    let mut changes: Vec<Change<'_>> = Vec::new();
    let empty: &[InputFact] = &[];
    buckets::changes(&last.shares, shares, |_, before, after| {
        changes.push(Change {
            before: before.map_or(empty, |share| share),
            after: after.map_or(empty, |share| share),
        });
    });
    if last.project_facts != project_facts {
        changes.push(Change {
            before: &last.project_facts,
            after: project_facts,
        });
    }
    if changes.is_empty() {
        return Some(last.output.clone());
    }

    // The facts that went and came, and the keys they mention.
    let mut removed: Vec<InputFact> = Vec::new();
    let mut added: Vec<InputFact> = Vec::new();
    for change in &changes {
        differing(change.before, change.after, &mut removed, &mut added);
    }
    // A file given a new input (as its first edit does) is one file gone
    // and one new: what both held is no change.
    if !removed.is_empty() && !added.is_empty() {
        let (went, came) = (std::mem::take(&mut removed), std::mem::take(&mut added));
        differing(&went, &came, &mut removed, &mut added);
    }
    if removed.is_empty() && added.is_empty() {
        return Some(last.output.clone());
    }
    let mut touched: FxHashSet<Key> = FxHashSet::default();
    let mut restarred = false;
    for fact in removed.iter().chain(&added) {
        match Joins::of(fact)? {
            Joins::One(a) => {
                touched.insert(a);
            }
            Joins::Two(a, b) => {
                touched.extend([a, b]);
            }
            Joins::Modules(a, b) => {
                touched.extend([Key::Module(a), Key::Module(b)]);
                restarred = true;
            }
        }
    }

    let before = match last.parts.take() {
        Some(parts) => parts,
        None => Parts::of(all_facts(&last.shares, &last.project_facts))?,
    };
    let dirty_before: FxHashSet<u32> = touched.iter().filter_map(|&k| before.of_key(k)).collect();
    let gone_before: Vec<Key> = before.keys_in(&dirty_before).collect();
    let (after, rerun, starred_before) = if restarred {
        // Which modules are starred changed: a pair of one may join its
        // module's part from anywhere, so the facts are partitioned anew.
        let after = Parts::of(all_facts(shares, project_facts))?;
        let mut rerun: FxHashSet<u32> = touched.iter().filter_map(|&k| after.of_key(k)).collect();
        rerun.extend(gone_before.iter().filter_map(|&key| after.of_key(key)));
        (after, rerun, before.starred)
    } else {
        // The parts the changed facts were in hold every fact that joins
        // their keys (a fact that came joins only touched keys), so only
        // they are partitioned again, with the facts that came and without
        // those that went.
        let mut after = before;
        let facts = after.remove(&dirty_before);
        // Every fact that went is among them: what is in `facts` and not
        // in `removed` is what stays.
        let mut kept = Vec::with_capacity(facts.len() + added.len());
        differing(&facts, &removed, &mut kept, &mut Vec::new());
        kept.extend(added);
        let rerun: FxHashSet<u32> = after.add(kept.iter())?.into_iter().collect();
        (after, rerun, FxHashSet::default())
    };
    let read: Vec<InputFact> = after.facts_in(&rerun).collect();
    let fresh = run(&read);

    // The keys whose tuples go: those of the parts re-run, and of the parts
    // the changed facts were in before. A pair no fact mentions goes with
    // its starred module.
    let gone: FxHashSet<Key> = gone_before
        .into_iter()
        .chain(after.keys_in(&rerun))
        .collect();
    let gone_modules: FxHashSet<Node> = starred_before
        .iter()
        .chain(&after.starred)
        .copied()
        .filter(|&module| gone.contains(&Key::Module(module)))
        .collect();
    let output = &mut last.output;
    let mut unkeyed = false;
    let mut heads: Vec<Value> = Vec::new();
    output.retain_heads(|first, second| {
        let keep = match head_key(first, second) {
            Some(key) => match key {
                Key::Pair(module, _) if gone_modules.contains(&module) => false,
                key => !gone.contains(&key),
            },
            None => {
                unkeyed = true;
                true
            }
        };
        if !keep {
            heads.push(first);
        }
        keep
    });
    if unkeyed {
        return None;
    }
    output.merge(&fresh);
    heads.extend(datalog::FILE.derived_keys(&fresh));
    if let Some(pending) = &mut last.heads {
        pending.extend(heads);
    }
    let output = output.clone();
    last.parts = Some(after);
    Some(output)
}

/// Adds the facts of `before` missing from `after` to `removed`, and those
/// of `after` missing from `before` to `added` (as multisets).
fn differing(
    before: &[InputFact],
    after: &[InputFact],
    removed: &mut Vec<InputFact>,
    added: &mut Vec<InputFact>,
) {
    let mut before = before.to_vec();
    let mut after = after.to_vec();
    before.sort_unstable();
    after.sort_unstable();
    let (mut i, mut j) = (0, 0);
    loop {
        match (before.get(i), after.get(j)) {
            (Some(a), Some(b)) if a == b => {
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a < b => {
                removed.push(*a);
                i += 1;
            }
            (Some(a), None) => {
                removed.push(*a);
                i += 1;
            }
            (_, Some(b)) => {
                added.push(*b);
                j += 1;
            }
            (None, None) => break,
        }
    }
}
