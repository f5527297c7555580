//! The project's classes after name resolution: each class's method
//! resolution order (C3 linearization over its resolved bases), its
//! members, and the declared types of members. The rules read them as
//! `MroStart`/`MroNext`/`HasMember` facts and `InstanceType`/`ReturnType`/
//! `PatchedMember` tuples; `ClassTable::context` picks, for one file, the
//! ones its member lookups can reach, so the file rules see every class
//! they need and nothing else.
//!
//! Fail-safe: the order stops before the first base that is outside the
//! project or cannot be named (a dynamic expression, an unresolved or
//! ambiguous name, a cycle, an order C3 rejects). A lookup that gets there
//! finds nothing, because the member may be defined there.

use rustc_hash::{FxHashMap, FxHashSet};

use super::datalog::{
    BaseOf, ClassAlias, ClassDef, HasMember, HiddenOnInstances, InputFact, InstanceType, IsFixture,
    IsProperty, MadeBy, MroNext, MroStart, Node, OpaqueBase, Outputs, PatchedMember, ReturnType,
    ReturnsCls, ReturnsSelf, ReturnsSelfVia, SetsOnSelf, Site, Sym,
};
use super::resolved_inputs::FileResolved;

/// A class: its file and qualified name.
type Class = (Node, Sym);

/// One entry of a linearization while it is computed.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Entry {
    Known(Class),
    /// A base nothing is known about; each one distinct.
    Opaque(u32),
}

/// Everything the member lookups of any file may read, indexed.
#[derive(Default, PartialEq, Eq, Debug)]
pub(crate) struct ClassTable {
    /// Each class's order, itself first, cut before the first opaque entry.
    mro: FxHashMap<Class, Vec<Class>>,
    /// (class, name) → the member it binds.
    members: FxHashMap<(Class, Sym), Sym>,
    /// (file, qualified name) → the classes it holds or returns.
    instance_types: FxHashMap<(Node, Sym), Vec<InstanceType>>,
    return_types: FxHashMap<(Node, Sym), Vec<ReturnType>>,
    /// (file, qualified name) → the class it names (`client_class = Client`).
    class_aliases: FxHashMap<(Node, Sym), Vec<ClassAlias>>,
    /// (file, qualified name of an attribute) → the receiver attribute
    /// whose call made it (`self.client = self.client_class()`).
    made_by: FxHashMap<(Node, Sym), Vec<MadeBy>>,
    /// (file, qualified name of a method) → its `ReturnsSelf`,
    /// `ReturnsSelfVia` or `ReturnsCls` fact.
    own_returns: FxHashMap<(Node, Sym), InputFact>,
    /// (file, qualified name of a method) read as an attribute.
    properties: FxHashSet<(Node, Sym)>,
    /// (file, name of a module-level function) decorated as a fixture.
    fixtures: FxHashSet<(Node, Sym)>,
    patched: FxHashSet<(Class, Sym)>,
    /// (class, name): a class in the order of class binds name to a class,
    /// and one assigns name on self (`HiddenOnInstances`).
    hidden: FxHashSet<(Class, Sym)>,
}

impl ClassTable {
    /// `facts`: every file's `ClassDef`, `HasMember`, `BaseOf` and
    /// `OpaqueBase` facts, plus the `BaseOf` sites of bases that add no
    /// members (`object`, `typing.Generic`); `resolved`: the resolve stage.
    pub(crate) fn build<'a>(
        facts: impl IntoIterator<Item = &'a InputFact>,
        transparent: &FxHashSet<(Node, Site)>,
        resolved: &Outputs,
    ) -> Self {
        let mut classes: Vec<Class> = Vec::new();
        let mut bases: FxHashMap<Class, Vec<Site>> = FxHashMap::default();
        let mut opaque: FxHashSet<Class> = FxHashSet::default();
        let mut set_on_self: FxHashSet<(Class, Sym)> = FxHashSet::default();
        let mut table = ClassTable::default();
        for fact in facts {
            match *fact {
                InputFact::ClassDef(ClassDef(file, class)) => classes.push((file, class)),
                InputFact::HasMember(HasMember(file, class, name, member)) => {
                    table.members.insert(((file, class), name), member);
                }
                InputFact::BaseOf(BaseOf(file, site, class))
                    if !transparent.contains(&(file, site)) =>
                {
                    bases.entry((file, class)).or_default().push(site);
                }
                InputFact::OpaqueBase(OpaqueBase(file, class)) => {
                    opaque.insert((file, class));
                }
                InputFact::MadeBy(made) => {
                    table
                        .made_by
                        .entry((made.0, made.1))
                        .or_default()
                        .push(made);
                }
                InputFact::ReturnsSelf(ReturnsSelf(file, method))
                | InputFact::ReturnsSelfVia(ReturnsSelfVia(file, method, _))
                | InputFact::ReturnsCls(ReturnsCls(file, method)) => {
                    table.own_returns.insert((file, method), *fact);
                }
                InputFact::IsProperty(IsProperty(file, method)) => {
                    table.properties.insert((file, method));
                }
                InputFact::IsFixture(IsFixture(file, function)) => {
                    table.fixtures.insert((file, function));
                }
                InputFact::SetsOnSelf(SetsOnSelf(file, class, name)) => {
                    set_on_self.insert(((file, class), name));
                }
                _ => {}
            }
        }
        let resolved_bases: FxHashMap<(Node, Site), Class> = resolved
            .base_class()
            .iter()
            .map(|b| ((b.0, b.2), (b.3, b.4)))
            .collect();
        let mut linearizer = Linearizer {
            bases: &bases,
            resolved: &resolved_bases,
            opaque: &opaque,
            memo: FxHashMap::default(),
            visiting: FxHashSet::default(),
            next_opaque: 0,
        };
        for &class in &classes {
            let order: Vec<Class> = linearizer
                .linearize(class)
                .iter()
                .map_while(|entry| match entry {
                    Entry::Known(class) => Some(*class),
                    Entry::Opaque(_) => None,
                })
                .collect();
            table.mro.insert(class, order);
        }
        for t in resolved.instance_type() {
            table.instance_types.entry((t.0, t.1)).or_default().push(*t);
        }
        for t in resolved.return_type() {
            table.return_types.entry((t.0, t.1)).or_default().push(*t);
        }
        for t in resolved.class_alias() {
            table.class_aliases.entry((t.0, t.1)).or_default().push(*t);
        }
        table
            .patched
            .extend(resolved.patched_member().iter().map(|p| ((p.0, p.1), p.2)));
        table.hidden = table.hidden_on_instances(&set_on_self);
        table
    }

    /// The (class, name) pairs of `HiddenOnInstances`: only names some
    /// class binds to a class are asked about, and those are few.
    fn hidden_on_instances(
        &self,
        set_on_self: &FxHashSet<(Class, Sym)>,
    ) -> FxHashSet<(Class, Sym)> {
        let mut aliases: FxHashMap<Class, Vec<Sym>> = FxHashMap::default();
        for (&(class, name), &member) in &self.members {
            if self.class_aliases.contains_key(&(class.0, member)) {
                aliases.entry(class).or_default().push(name);
            }
        }
        let mut hidden = FxHashSet::default();
        for (&class, order) in &self.mro {
            for ancestor in order {
                for &name in aliases.get(ancestor).into_iter().flatten() {
                    if order.iter().any(|a| set_on_self.contains(&(*a, name))) {
                        hidden.insert((class, name));
                    }
                }
            }
        }
        hidden
    }

    /// The method resolution order of `class`, itself first, cut before
    /// the first base nothing is known about; `None` for an unknown class.
    pub(crate) fn mro(&self, class: Class) -> Option<&[Class]> {
        self.mro.get(&class).map(Vec::as_slice)
    }

    /// The classes whose order holds `class` (its subclasses, direct or
    /// not), not itself.
    pub(crate) fn subclasses(&self, class: Class) -> Vec<Class> {
        self.mro
            .iter()
            .filter(|(other, order)| **other != class && order.contains(&class))
            .map(|(&other, _)| other)
            .collect()
    }

    /// `MroStart`, `MroNext` and `HiddenOnInstances` facts of every
    /// class, sorted.
    pub(crate) fn mro_facts(&self) -> Vec<InputFact> {
        let mut facts = Vec::new();
        for (&class, order) in &self.mro {
            push_order(&mut facts, class, order);
        }
        facts.extend(self.hidden.iter().map(|&((file, class), name)| {
            InputFact::HiddenOnInstances(HiddenOnInstances(file, class, name))
        }));
        facts.sort_unstable();
        facts
    }

    /// What the member lookups of one file can read: the orders of the
    /// classes its expressions may be instances of, the members of those
    /// orders' classes by the attribute names the file uses, and the
    /// declared types of those members, followed to the classes they name.
    ///
    /// `looked` gets every class the walk looked up, found or not, and the
    /// definitions it started from: the context can change only where the
    /// table's entries under one of them do, a member's declared types
    /// counting as its class's ([`ClassTable::changed_keys`]).
    pub(crate) fn context(
        &self,
        (own, definitions): (Vec<Class>, Vec<Class>),
        names: &[Sym],
        looked: &mut Vec<Class>,
    ) -> (Vec<InputFact>, Outputs) {
        let mut facts = Vec::new();
        let mut derived = Outputs::default();
        let mut names = names.to_vec();
        // A member made by a receiver attribute (`self.client_class()`),
        // or a method returning another method's result (`return
        // self._clone()`), asks for that attribute too: the walk runs
        // again when it adds names (rarely more than twice).
        loop {
            let asked = names.len();
            let mut work: Vec<Class> = own.clone();
            // What the definitions the file's names resolve to are:
            // classes, or declared to hold or return instances of one.
            for &definition in &definitions {
                looked.push(definition);
                if self.mro.contains_key(&definition) {
                    facts.push(InputFact::ClassDef(ClassDef(definition.0, definition.1)));
                    work.push(definition);
                }
                self.declared_types(definition, &mut derived, &mut work, &mut names, &mut facts);
            }
            let mut seen: FxHashSet<Class> = FxHashSet::default();
            let mut ancestors_seen: FxHashSet<Class> = FxHashSet::default();
            while let Some(class) = work.pop() {
                if !seen.insert(class) {
                    continue;
                }
                looked.push(class);
                let Some(order) = self.mro.get(&class) else {
                    continue;
                };
                push_order(&mut facts, class, order);
                for &name in &names {
                    if self.hidden.contains(&(class, name)) {
                        facts.push(InputFact::HiddenOnInstances(HiddenOnInstances(
                            class.0, class.1, name,
                        )));
                    }
                }
                for &ancestor in order {
                    if !ancestors_seen.insert(ancestor) {
                        continue;
                    }
                    looked.push(ancestor);
                    let mut index = 0;
                    while let Some(&name) = names.get(index) {
                        index += 1;
                        if self.patched.contains(&(ancestor, name)) {
                            derived
                                .patched_member_mut()
                                .push(PatchedMember(ancestor.0, ancestor.1, name));
                        }
                        let Some(&member) = self.members.get(&(ancestor, name)) else {
                            continue;
                        };
                        facts.push(InputFact::HasMember(HasMember(
                            ancestor.0, ancestor.1, name, member,
                        )));
                        self.declared_types(
                            (ancestor.0, member),
                            &mut derived,
                            &mut work,
                            &mut names,
                            &mut facts,
                        );
                    }
                }
            }
            if names.len() == asked {
                break;
            }
        }
        facts.sort_unstable();
        facts.dedup();
        derived.normalize();
        looked.sort_unstable();
        looked.dedup();
        (facts, derived)
    }

    /// The keys under which `old` and `new` hold different entries: the
    /// class of an order, a member, a hidden or a patched name, and the
    /// definition of a declared type, alias, property or fixture, with the
    /// classes that have that definition as a member. What
    /// [`ClassTable::context`] reads is all filed under such keys.
    pub(crate) fn changed_keys(old: &ClassTable, new: &ClassTable) -> FxHashSet<Class> {
        let mut changed = FxHashSet::default();
        differ(&old.mro, &new.mro, |&k| k, &mut changed);
        differ(
            &old.members,
            &new.members,
            |&(class, _)| class,
            &mut changed,
        );
        differ_sets(
            &old.patched,
            &new.patched,
            |&(class, _)| class,
            &mut changed,
        );
        differ_sets(&old.hidden, &new.hidden, |&(class, _)| class, &mut changed);
        let mut declared = FxHashSet::default();
        differ(
            &old.instance_types,
            &new.instance_types,
            |&k| k,
            &mut declared,
        );
        differ(&old.return_types, &new.return_types, |&k| k, &mut declared);
        differ(
            &old.class_aliases,
            &new.class_aliases,
            |&k| k,
            &mut declared,
        );
        differ(&old.made_by, &new.made_by, |&k| k, &mut declared);
        differ(&old.own_returns, &new.own_returns, |&k| k, &mut declared);
        differ_sets(&old.properties, &new.properties, |&k| k, &mut declared);
        differ_sets(&old.fixtures, &new.fixtures, |&k| k, &mut declared);
        if !declared.is_empty() {
            // A context looks up a member's declared types under the member
            // but records only the class it found the member in.
            for table in [old, new] {
                for (&(class, _), &member) in &table.members {
                    if declared.contains(&(class.0, member)) {
                        changed.insert(class);
                    }
                }
            }
        }
        changed.extend(declared);
        changed
    }
}

/// Adds to `changed` the key (as `key` files it) of every entry that is in
/// one map and not in the other, or differs.
fn differ<K: Eq + std::hash::Hash, V: PartialEq>(
    old: &FxHashMap<K, V>,
    new: &FxHashMap<K, V>,
    key: impl Fn(&K) -> Class,
    changed: &mut FxHashSet<Class>,
) {
    for (k, v) in new {
        if old.get(k) != Some(v) {
            changed.insert(key(k));
        }
    }
    for k in old.keys() {
        if !new.contains_key(k) {
            changed.insert(key(k));
        }
    }
}

fn differ_sets<K: Eq + std::hash::Hash>(
    old: &FxHashSet<K>,
    new: &FxHashSet<K>,
    key: impl Fn(&K) -> Class,
    changed: &mut FxHashSet<Class>,
) {
    changed.extend(old.symmetric_difference(new).map(key));
}

impl ClassTable {
    /// The declared instance and return types of definition `key`, into
    /// `derived`, and the classes they name, onto `work`.
    fn declared_types(
        &self,
        key: (Node, Sym),
        derived: &mut Outputs,
        work: &mut Vec<Class>,
        names: &mut Vec<Sym>,
        facts: &mut Vec<InputFact>,
    ) {
        for t in self.class_aliases.get(&key).into_iter().flatten() {
            derived.class_alias_mut().push(*t);
            work.push((t.2, t.3));
        }
        for made in self.made_by.get(&key).into_iter().flatten() {
            facts.push(InputFact::MadeBy(*made));
            if !names.contains(&made.2) {
                names.push(made.2);
            }
        }
        if self.properties.contains(&key) {
            facts.push(InputFact::IsProperty(IsProperty(key.0, key.1)));
        }
        if self.fixtures.contains(&key) {
            facts.push(InputFact::IsFixture(IsFixture(key.0, key.1)));
        }
        if let Some(&own) = self.own_returns.get(&key) {
            facts.push(own);
            // `return self._clone()` asks for the receiver's `_clone`.
            if let InputFact::ReturnsSelfVia(ReturnsSelfVia(_, _, via)) = own
                && !names.contains(&via)
            {
                names.push(via);
            }
        }
        for t in self.instance_types.get(&key).into_iter().flatten() {
            derived.instance_type_mut().push(*t);
            work.push((t.2, t.3));
        }
        for t in self.return_types.get(&key).into_iter().flatten() {
            derived.return_type_mut().push(*t);
            work.push((t.2, t.3));
        }
    }
}

fn push_order(facts: &mut Vec<InputFact>, class: Class, order: &[Class]) {
    let Some(&first) = order.first() else { return };
    facts.push(InputFact::MroStart(MroStart(
        class.0, class.1, first.0, first.1,
    )));
    for pair in order.windows(2) {
        facts.push(InputFact::MroNext(MroNext(
            class.0, class.1, pair[0].0, pair[0].1, pair[1].0, pair[1].1,
        )));
    }
}

/// The classes a file's expressions start member lookups from (its own
/// `self`/`cls`/`super()` classes), and the definitions its names and
/// fixtures resolve to (not every name of the modules it imports).
pub(crate) fn seeds(facts: &[InputFact], resolved: &FileResolved) -> (Vec<Class>, Vec<Class>) {
    let mut names: Vec<(Node, Sym)> = Vec::new();
    let mut own: Vec<Class> = Vec::new();
    for fact in facts {
        match *fact {
            InputFact::ExprSelf(f) => own.push((f.2, f.3)),
            InputFact::ExprCls(f) => own.push((f.2, f.3)),
            InputFact::ExprSuper(f) => own.push((f.2, f.3)),
            InputFact::ExprName(f) => names.push((f.2, f.3)),
            InputFact::ExprFixture(f) => names.push((f.2, f.3)),
            _ => {}
        }
    }
    names.sort_unstable();
    names.dedup();
    let definitions = resolved
        .resolves()
        .filter(|t| names.binary_search(&(t.0, t.1)).is_ok())
        .map(|t| (t.2, t.3))
        .collect();
    (own, definitions)
}

/// The attribute names a file's member lookups ask for, sorted.
pub(crate) fn attribute_names(facts: &[InputFact]) -> Vec<Sym> {
    let mut names: Vec<Sym> = facts
        .iter()
        .filter_map(|fact| match fact {
            InputFact::ExprAttr(attr) => Some(attr.3),
            _ => None,
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

struct Linearizer<'a> {
    bases: &'a FxHashMap<Class, Vec<Site>>,
    resolved: &'a FxHashMap<(Node, Site), Class>,
    opaque: &'a FxHashSet<Class>,
    memo: FxHashMap<Class, Vec<Entry>>,
    visiting: FxHashSet<Class>,
    next_opaque: u32,
}

impl Linearizer<'_> {
    fn opaque(&mut self) -> Entry {
        self.next_opaque += 1;
        Entry::Opaque(self.next_opaque)
    }

    /// C3: the class, then the merge of its bases' orders and its bases.
    fn linearize(&mut self, class: Class) -> Vec<Entry> {
        if let Some(order) = self.memo.get(&class) {
            return order.clone();
        }
        if !self.visiting.insert(class) {
            // An inheritance cycle: Python rejects it; nothing is known.
            return vec![Entry::Known(class), self.opaque()];
        }
        let order = stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.compute(class));
        self.visiting.remove(&class);
        self.memo.insert(class, order.clone());
        order
    }

    fn compute(&mut self, class: Class) -> Vec<Entry> {
        if self.opaque.contains(&class) {
            // Where the unknown base sits among the others is not recorded:
            // only the class's own members are certain.
            return vec![Entry::Known(class), self.opaque()];
        }
        let sites = self.bases.get(&class).cloned().unwrap_or_default();
        let mut direct = Vec::with_capacity(sites.len());
        for site in sites {
            match self.resolved.get(&(class.0, site)) {
                Some(&base) => direct.push(Entry::Known(base)),
                None => direct.push(self.opaque()),
            }
        }
        let mut lists: Vec<Vec<Entry>> = Vec::with_capacity(direct.len() + 1);
        for base in &direct {
            lists.push(match *base {
                Entry::Known(base) => self.linearize(base),
                opaque @ Entry::Opaque(_) => vec![opaque],
            });
        }
        lists.push(direct);
        let mut order = vec![Entry::Known(class)];
        match merge(lists) {
            Some(merged) => order.extend(merged),
            None => order.push(self.opaque()),
        }
        order
    }
}

/// The C3 merge; `None` when no consistent order exists.
fn merge(mut lists: Vec<Vec<Entry>>) -> Option<Vec<Entry>> {
    let mut order = Vec::new();
    lists.iter_mut().for_each(|l| l.reverse());
    loop {
        lists.retain(|l| !l.is_empty());
        if lists.is_empty() {
            return Some(order);
        }
        let head = lists
            .iter()
            .filter_map(|l| l.last().copied())
            .find(|candidate| {
                !lists
                    .iter()
                    .any(|l| l.len() > 1 && l[..l.len() - 1].contains(candidate))
            })?;
        order.push(head);
        for list in &mut lists {
            if list.last() == Some(&head) {
                list.pop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(n: u32) -> Entry {
        Entry::Known((Node(0), Sym(n)))
    }

    #[test]
    fn c3_diamond() {
        // class D(B, C); B(A); C(A): D B C A.
        let a = vec![known(1)];
        let b = vec![known(2), known(1)];
        let c = vec![known(3), known(1)];
        let merged = merge(vec![b, c, vec![known(2), known(3)]]).unwrap();
        assert_eq!(merged, vec![known(2), known(3), known(1)]);
        assert_eq!(merge(vec![a.clone(), a]).unwrap(), vec![known(1)]);
    }

    #[test]
    fn c3_rejects_inconsistent_order() {
        // class X(A, B) and Y(B, A), then Z(X, Y): no order.
        let x = vec![known(10), known(1), known(2)];
        let y = vec![known(11), known(2), known(1)];
        assert!(merge(vec![x, y, vec![known(10), known(11)]]).is_none());
    }
}
