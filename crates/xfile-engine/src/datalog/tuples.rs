//! How tuples are held, the same for every set of rules. The generated code
//! (`OUT_DIR/rules.rs`) declares each relation's struct through
//! [`relation_struct!`], and the enums `InputFact` (a base fact) and
//! `Tuples` (one derived relation's tuples) with a variant per relation,
//! each with a macro (`each_input!`, `each_derived!`) that evaluates an
//! expression for whichever variant a value is. The methods here are
//! written once with those macros, over the traits below.

use super::{
    InputFact, Node, Pattern, RELATIONS, RelationKind, Site, Sym, Tuples, Value, each_derived,
    each_input,
};

/// A type a relation's argument may have. Only sites are renamed when
/// lines move.
pub(super) trait Argument: Copy {
    const IS_SITE: bool = false;

    fn renamed(self, _rename: &impl Fn(Site) -> Site) -> Self {
        self
    }
}

impl Argument for Node {}

impl Argument for Sym {}

impl Argument for Pattern {}

impl Argument for Site {
    const IS_SITE: bool = true;

    fn renamed(self, rename: &impl Fn(Site) -> Site) -> Self {
        rename(self)
    }
}

/// What the runtime needs of a relation's struct.
pub(super) trait Tuple: Copy + Ord {
    /// The relation's name in the rules.
    const RELATION: &'static str;
    /// Whether an argument is a site, which [`Tuple::map_sites`] renames.
    const HAS_SITES: bool;

    /// Every argument, in order.
    fn values(self) -> impl Iterator<Item = Value>;

    /// The first argument, which keys a tuple to what it is about.
    fn first(self) -> Value;

    /// The same tuple with each of its sites renamed by `rename`.
    fn map_sites(self, rename: impl Fn(Site) -> Site) -> Self;
}

/// What the runtime needs of a derived relation's struct besides.
pub(super) trait Derived: Tuple {
    /// Where its tuples sit in [`Outputs`], which keeps relations in this
    /// order.
    const INDEX: u8;

    /// These tuples as the relation's variant of [`Tuples`].
    fn wrap(tuples: Vec<Self>) -> Tuples;

    /// Its tuples, if `tuples` holds this relation.
    fn of(tuples: &Tuples) -> Option<&Vec<Self>>;

    /// The same, to change.
    fn of_mut(tuples: &mut Tuples) -> Option<&mut Vec<Self>>;
}

/// Declares a relation's struct, one field per argument (`Node 0, Site 1`:
/// its type and position), with what the runtime needs of it. The
/// generated code writes one per relation: an `input` one is also a base
/// fact; a `derived` one sits at `index` in [`Outputs`], which gets the
/// accessors `get` (its tuples) and `get_mut`.
macro_rules! relation_struct {
    (input $name:ident($($ty:ident $i:tt),+)) => {
        relation_struct!(@struct $name($($ty $i),+));

        impl From<$name> for $crate::datalog::InputFact {
            fn from(fact: $name) -> Self {
                Self::$name(fact)
            }
        }
    };
    (derived $name:ident($($ty:ident $i:tt),+), $index:literal, $get:ident, $get_mut:ident) => {
        relation_struct!(@struct $name($($ty $i),+));

        impl $crate::datalog::tuples::Derived for $name {
            const INDEX: u8 = $index;

            fn wrap(tuples: Vec<Self>) -> $crate::datalog::Tuples {
                $crate::datalog::Tuples::$name(tuples)
            }

            fn of(tuples: &$crate::datalog::Tuples) -> Option<&Vec<Self>> {
                match tuples {
                    $crate::datalog::Tuples::$name(t) => Some(t),
                    _ => None,
                }
            }

            fn of_mut(tuples: &mut $crate::datalog::Tuples) -> Option<&mut Vec<Self>> {
                match tuples {
                    $crate::datalog::Tuples::$name(t) => Some(t),
                    _ => None,
                }
            }
        }

        impl $crate::datalog::Outputs {
            #[doc = concat!("The `", stringify!($name), "` tuples, sorted.")]
            pub fn $get(&self) -> &[$name] {
                self.get()
            }

            #[doc = concat!("The `", stringify!($name), "` tuples to add to (then [`Outputs::normalize`]).")]
            pub fn $get_mut(&mut self) -> &mut Vec<$name> {
                self.get_mut()
            }
        }
    };
    (@struct $name:ident($($ty:ident $i:tt),+)) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name($(pub $ty),+);

        impl $crate::datalog::tuples::Tuple for $name {
            const RELATION: &'static str = stringify!($name);
            const HAS_SITES: bool =
                $(<$ty as $crate::datalog::tuples::Argument>::IS_SITE)||+;

            fn values(self) -> impl Iterator<Item = $crate::datalog::Value> {
                [$($crate::datalog::Value::from(self.$i)),+].into_iter()
            }

            fn first(self) -> $crate::datalog::Value {
                $crate::datalog::Value::from(self.0)
            }

            fn map_sites(self, rename: impl Fn($crate::datalog::Site) -> $crate::datalog::Site) -> Self {
                use $crate::datalog::tuples::Argument as _;
                $name($(self.$i.renamed(&rename)),+)
            }
        }
    };
}
pub(super) use relation_struct;

impl InputFact {
    pub fn relation(&self) -> &'static str {
        fn of<T: Tuple>(_: &T) -> &'static str {
            T::RELATION
        }
        each_input!(self, t => of(t))
    }

    pub fn values(&self) -> Vec<Value> {
        each_input!(*self, t => t.values().collect())
    }

    /// The same fact with each of its sites renamed by `rename`.
    pub fn map_sites(self, rename: impl Fn(Site) -> Site) -> InputFact {
        each_input!(self, t => InputFact::from(t.map_sites(&rename)))
    }

    /// The first argument, which keys a fact to what it is about.
    pub fn first(&self) -> Value {
        each_input!(*self, t => t.first())
    }
}

impl Tuples {
    fn index(&self) -> u8 {
        fn of<T: Derived>(_: &[T]) -> u8 {
            T::INDEX
        }
        each_derived!(self, t => of(t))
    }

    fn relation(&self) -> &'static str {
        fn of<T: Tuple>(_: &[T]) -> &'static str {
            T::RELATION
        }
        each_derived!(self, t => of(t))
    }

    fn len(&self) -> usize {
        each_derived!(self, t => t.len())
    }

    /// Appends `other`'s tuples when it holds the same relation.
    fn extend_from(&mut self, other: &Tuples) {
        fn append<T: Derived>(tuples: &mut Vec<T>, other: &Tuples) {
            if let Some(other) = T::of(other) {
                tuples.extend_from_slice(other);
            }
        }
        each_derived!(self, t => append(t, other))
    }

    /// Adds `other`'s tuples, both sorted, keeping the order: the stable
    /// sort merges the two sorted runs it finds.
    fn merge_from(&mut self, other: &Tuples) {
        fn merge<T: Derived>(tuples: &mut Vec<T>, other: &Tuples) {
            if let Some(other) = T::of(other) {
                tuples.extend_from_slice(other);
                tuples.sort();
                tuples.dedup();
            }
        }
        each_derived!(self, t => merge(t, other))
    }

    fn normalize(&mut self) {
        each_derived!(self, t => {
            t.sort_unstable();
            t.dedup();
        })
    }

    /// The tuples (sorted) whose first argument is in `keys`, without
    /// spare room.
    fn select(&self, keys: &[Value]) -> Tuples {
        fn select<T: Derived>(all: &[T], keys: &[Value]) -> Tuples {
            let mut selected = Vec::new();
            for key in keys {
                let start = all.partition_point(|t| t.first() < *key);
                selected.extend(
                    all[start..]
                        .iter()
                        .take_while(|t| t.first() == *key)
                        .copied(),
                );
            }
            selected.shrink_to_fit();
            T::wrap(selected)
        }
        each_derived!(self, t => select(t, keys))
    }

    fn values(&self) -> Box<dyn Iterator<Item = Value> + '_> {
        each_derived!(self, t => Box::new(t.iter().flat_map(|t| t.values())))
    }
}

/// Every derived relation (`@output` and intermediate) materialized, each
/// sorted. Only the relations that hold tuples take room, in relation
/// order: most values (a file's rules, its slices of other stages) hold a
/// few of the derived relations, and a struct of a vector per relation cost
/// 1 KB each before any tuple (measured on Django: see docs/performance-history.md).
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    relations: Vec<Tuples>,
}

/// Equal when every relation holds the same tuples (an emptied relation
/// equals an absent one).
impl PartialEq for Outputs {
    fn eq(&self, other: &Self) -> bool {
        let held = |t: &&Tuples| t.len() > 0;
        self.relations
            .iter()
            .filter(held)
            .eq(other.relations.iter().filter(held))
    }
}

impl Eq for Outputs {}

impl Outputs {
    fn position(&self, index: u8) -> Result<usize, usize> {
        self.relations.binary_search_by_key(&index, Tuples::index)
    }

    /// Adds a relation's tuples (nothing when there are none).
    fn put(&mut self, tuples: Tuples) {
        if tuples.len() == 0 {
            return;
        }
        match self.position(tuples.index()) {
            Ok(at) => self.relations[at].extend_from(&tuples),
            Err(at) => self.relations.insert(at, tuples),
        }
    }

    /// The relation of `empty`'s kind, added empty when absent.
    fn slot(&mut self, empty: Tuples) -> &mut Tuples {
        let at = match self.position(empty.index()) {
            Ok(at) => at,
            Err(at) => {
                self.relations.insert(at, empty);
                at
            }
        };
        &mut self.relations[at]
    }

    /// Outputs of these relations' tuples, without spare room.
    pub(super) fn from_relations(relations: impl IntoIterator<Item = Tuples>) -> Self {
        let mut outputs = Outputs {
            relations: relations.into_iter().filter(|t| t.len() > 0).collect(),
        };
        outputs.relations.sort_by_key(Tuples::index);
        outputs.relations.shrink_to_fit();
        outputs
    }

    /// The tuples of relation `T`, sorted.
    pub(super) fn get<T: Derived>(&self) -> &[T] {
        match self.position(T::INDEX) {
            Ok(at) => T::of(&self.relations[at]).map_or(&[], Vec::as_slice),
            Err(_) => &[],
        }
    }

    /// The tuples of relation `T` to add to (then [`Outputs::normalize`]).
    pub(super) fn get_mut<T: Derived>(&mut self) -> &mut Vec<T> {
        T::of_mut(self.slot(T::wrap(Vec::new()))).expect("a slot holds the relation of its index")
    }

    /// The tuples of derived relation `name`, or `None` if there is no such relation.
    pub fn tuples(&self, name: &str) -> Option<Vec<Vec<Value>>> {
        RELATIONS
            .iter()
            .find(|r| r.name == name && r.kind != RelationKind::Input)?;
        let held = self.relations.iter().find(|t| t.relation() == name);
        Some(held.map_or_else(
            Vec::new,
            |tuples| each_derived!(tuples, t => t.iter().map(|t| t.values().collect()).collect()),
        ))
    }

    /// How many tuples all derived relations hold together.
    pub fn tuple_count(&self) -> usize {
        self.relations.iter().map(Tuples::len).sum()
    }

    /// Every value of every tuple, in no particular order.
    pub fn tuples_values(&self) -> impl Iterator<Item = Value> + '_ {
        self.relations.iter().flat_map(Tuples::values)
    }

    /// Renames every site: `rename(first, site)`, where `first` is the
    /// tuple's first argument (a site is a position in the file the tuple
    /// starts from).
    pub fn map_sites(&mut self, rename: impl Fn(Value, Site) -> Site) {
        fn map<T: Tuple>(tuples: &mut [T], rename: &impl Fn(Value, Site) -> Site) {
            if T::HAS_SITES {
                for t in tuples {
                    let first = t.first();
                    *t = t.map_sites(|site| rename(first, site));
                }
            }
        }
        for tuples in &mut self.relations {
            each_derived!(tuples, t => map(t, &rename));
        }
    }

    /// Keeps the tuples whose first two arguments `keep` accepts (the
    /// second is `None` in a relation of one argument); order is kept.
    pub fn retain_heads(&mut self, mut keep: impl FnMut(Value, Option<Value>) -> bool) {
        fn retain<T: Tuple>(
            tuples: &mut Vec<T>,
            keep: &mut impl FnMut(Value, Option<Value>) -> bool,
        ) {
            tuples.retain(|t| keep(t.first(), t.values().nth(1)));
        }
        for tuples in &mut self.relations {
            each_derived!(tuples, t => retain(t, &mut keep));
        }
        self.relations.retain(|t| t.len() > 0);
    }

    /// Appends every tuple of `other`; [`Outputs::normalize`] restores the order.
    pub fn extend(&mut self, other: &Outputs) {
        self.add(other, Tuples::extend_from);
    }

    /// Adds `other`'s tuples; both sorted, and so is the result (a merge,
    /// not a sort: for a few tuples added to many).
    pub fn merge(&mut self, other: &Outputs) {
        self.add(other, Tuples::merge_from);
    }

    /// Adds each relation of `other` to this one's with `into`, or as it is
    /// where this one has none.
    fn add(&mut self, other: &Outputs, into: fn(&mut Tuples, &Tuples)) {
        for tuples in &other.relations {
            if tuples.len() > 0 {
                match self.position(tuples.index()) {
                    Ok(at) => into(&mut self.relations[at], tuples),
                    Err(at) => self.relations.insert(at, tuples.clone()),
                }
            }
        }
    }

    /// Sorts every relation and drops duplicates.
    pub fn normalize(&mut self) {
        for tuples in &mut self.relations {
            tuples.normalize();
        }
    }

    /// Appends the tuples of `from`'s relations that `reads` accepts.
    pub(super) fn take(&mut self, from: &Outputs, reads: fn(&Tuples) -> bool) {
        for tuples in from.relations.iter().filter(|t| reads(t)) {
            self.put(tuples.clone());
        }
    }

    /// The tuples of the relations `reads` accepts whose first argument is
    /// in `keys`.
    pub(super) fn select(&self, keys: &[Value], reads: fn(&Tuples) -> bool) -> Outputs {
        let mut into = Outputs::default();
        for tuples in self.relations.iter().filter(|t| reads(t)) {
            into.put(tuples.select(keys));
        }
        into.relations.shrink_to_fit();
        into
    }

    /// The first arguments of the tuples of the relations `reads` accepts,
    /// sorted and without repeats.
    pub(super) fn keys(&self, reads: fn(&Tuples) -> bool) -> Vec<Value> {
        let mut keys: Vec<Value> = Vec::new();
        for tuples in self.relations.iter().filter(|t| reads(t)) {
            each_derived!(tuples, t => keys.extend(t.iter().map(|t| t.first())));
        }
        keys.sort_unstable();
        keys.dedup();
        keys
    }
}
