//! Interning of paths, markers and names to the dense integer ids that the
//! Datalog program works on (crepe needs `Copy + Ord` fields).
//!
//! The interner is append-only and owned by the engine, so an id stays valid
//! for the engine's lifetime and the same string always gets the same id:
//! queries that intern stay deterministic.

use std::hash::BuildHasher;
use std::sync::{Arc, RwLock};

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use super::datalog::{Node, Sym};

#[derive(Default)]
pub struct Interner {
    inner: RwLock<Table>,
}

/// Each string once, in `strings` (its index is its id); `ids` holds only
/// the ids, found by the string's hash: a map keyed by the strings held a
/// second pointer to each, a slot of 24 bytes where this one takes 4.
#[derive(Default)]
struct Table {
    ids: HashTable<u32>,
    strings: Vec<Arc<str>>,
}

fn hash_of(text: &str) -> u64 {
    FxBuildHasher.hash_one(text)
}

impl Table {
    fn find(&self, text: &str) -> Option<u32> {
        self.ids
            .find(hash_of(text), |&id| {
                self.strings.get(id as usize).is_some_and(|s| &**s == text)
            })
            .copied()
    }
}

impl Interner {
    fn intern(&self, text: &str) -> u32 {
        if let Some(id) = self.read().find(text) {
            return id;
        }
        let mut table = self.inner.write().unwrap_or_else(|e| e.into_inner());
        if let Some(id) = table.find(text) {
            return id;
        }
        let id = u32::try_from(table.strings.len())
            .ok()
            .filter(|id| id & (Sym::PRIVATE | Node::MARKER | Node::EXTERNAL) == 0)
            .expect("more than 2^30 interned strings");
        let Table { ids, strings } = &mut *table;
        strings.push(Arc::from(text));
        ids.insert_unique(hash_of(text), id, |&id| {
            strings.get(id as usize).map_or(0, |s| hash_of(s))
        });
        id
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Table> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn lookup(&self, id: u32) -> Arc<str> {
        self.read()
            .strings
            .get(id as usize)
            .cloned()
            .unwrap_or_else(|| Arc::from("<unknown>"))
    }

    fn find(&self, text: &str) -> Option<u32> {
        self.read().find(text)
    }

    pub fn node(&self, path_or_marker: &str) -> Node {
        node_for(path_or_marker, self.intern(path_or_marker))
    }

    pub fn sym(&self, name: &str) -> Sym {
        sym_for(name, self.intern(name))
    }

    pub fn node_text(&self, node: Node) -> Arc<str> {
        self.lookup(node.0 & !(Node::MARKER | Node::EXTERNAL))
    }

    pub fn sym_text(&self, sym: Sym) -> Arc<str> {
        self.lookup(sym.0 & !Sym::PRIVATE)
    }

    /// The node for `text` if it was ever interned; never creates one.
    pub fn find_node(&self, text: &str) -> Option<Node> {
        Some(node_for(text, self.find(text)?))
    }

    pub fn find_sym(&self, text: &str) -> Option<Sym> {
        Some(sym_for(text, self.find(text)?))
    }
}

/// A node's id with the marker bits set for markers.
fn node_for(text: &str, id: u32) -> Node {
    const EXTERNAL: &[&str] = &["<stdlib:", "<third-party:", "<builtin:"];
    if EXTERNAL.iter().any(|prefix| text.starts_with(prefix)) {
        Node(id | Node::MARKER | Node::EXTERNAL)
    } else if is_marker(text) {
        Node(id | Node::MARKER)
    } else {
        Node(id)
    }
}

/// A name's id with the private bit set for `_`-prefixed names.
fn sym_for(name: &str, id: u32) -> Sym {
    if name.starts_with('_') {
        Sym(id | Sym::PRIVATE)
    } else {
        Sym(id)
    }
}

/// Markers stand for targets outside the project.
pub fn is_marker(node_text: &str) -> bool {
    node_text.starts_with('<')
}
