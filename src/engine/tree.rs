//! The engine's side of the per-directory inputs: which module files each
//! directory holds and which child directories have module files below,
//! kept up to date as modules come and go, and written to the
//! [`Directory`] inputs only where a listing really changed.

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap, FxHashSet};
use salsa::{Durability, Setter};

use super::db::{Database, Db};
use super::resolve::{Directory, Listing};

/// Module paths (indexed files and files too large to index) by directory.
#[derive(Clone, Default)]
pub struct Tree {
    dirs: FxHashMap<String, Entries>,
    /// Directories whose entries changed since the last [`Tree::write`].
    touched: FxHashSet<String>,
}

#[derive(Clone)]
struct Entries {
    input: Directory,
    /// Module file name → how many module paths it stands for (a path may
    /// be both a file and listed as too large while an update moves it).
    files: BTreeMap<String, usize>,
    /// Child directory name → how many module paths lie below it.
    children: BTreeMap<String, usize>,
}

fn split(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

impl Tree {
    /// A tree with the root directory's input, empty.
    pub fn new(db: &Database) -> Tree {
        let mut tree = Tree::default();
        tree.entries(db, "");
        tree
    }

    /// The entries of `dir`, creating its input the first time. Inputs are
    /// never dropped: a path keeps its input for the engine's life.
    fn entries(&mut self, db: &Database, dir: &str) -> &mut Entries {
        self.dirs.entry(dir.to_string()).or_insert_with(|| {
            let input = Directory::builder(Listing::default())
                .listing_durability(Durability::HIGH)
                .new(db);
            db.directories().insert(dir.to_string(), input);
            Entries {
                input,
                files: BTreeMap::new(),
                children: BTreeMap::new(),
            }
        })
    }

    pub fn add(&mut self, db: &Database, path: &str) {
        let (mut dir, name) = split(path);
        let count = self
            .entries(db, dir)
            .files
            .entry(name.to_string())
            .or_default();
        *count += 1;
        if *count == 1 {
            self.touched.insert(dir.to_string());
        }
        while !dir.is_empty() {
            let (parent, child) = split(dir);
            let count = self
                .entries(db, parent)
                .children
                .entry(child.to_string())
                .or_default();
            *count += 1;
            if *count == 1 {
                self.touched.insert(parent.to_string());
            }
            dir = parent;
        }
    }

    pub fn remove(&mut self, path: &str) {
        let (mut dir, name) = split(path);
        let Some(entries) = self.dirs.get_mut(dir) else {
            return;
        };
        if !decrement(&mut entries.files, name) {
            return;
        }
        if !entries.files.contains_key(name) {
            self.touched.insert(dir.to_string());
        }
        while !dir.is_empty() {
            let (parent, child) = split(dir);
            if let Some(entries) = self.dirs.get_mut(parent) {
                decrement(&mut entries.children, child);
                if !entries.children.contains_key(child) {
                    self.touched.insert(parent.to_string());
                }
            }
            dir = parent;
        }
    }

    /// Writes the listings of the directories touched since the last
    /// write, where they differ from what the inputs hold. Listings are
    /// high durability: every file's resolutions read them, and an edit
    /// inside a file (medium) must not make salsa walk those chains; a new
    /// or deleted file walks them, as it must re-check resolutions anyway.
    pub fn write(&mut self, db: &mut Database) {
        for dir in std::mem::take(&mut self.touched) {
            let Some(entries) = self.dirs.get(&dir) else {
                continue;
            };
            let listing = Listing {
                files: entries.files.keys().cloned().collect(),
                dirs: entries.children.keys().cloned().collect(),
            };
            if *entries.input.listing(db) != listing {
                entries
                    .input
                    .set_listing(db)
                    .with_durability(Durability::HIGH)
                    .to(listing);
            }
        }
    }
}

/// Takes one from `key`'s count, dropping the key at zero; `false` if
/// there was none.
fn decrement(counts: &mut BTreeMap<String, usize>, key: &str) -> bool {
    let Some(count) = counts.get_mut(key) else {
        return false;
    };
    *count -= 1;
    if *count == 0 {
        counts.remove(key);
    }
    true
}
