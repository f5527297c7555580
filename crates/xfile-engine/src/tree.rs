//! The engine's side of the per-path inputs resolution reads: for every
//! path ever seen, whether it is a module file and whether module files lie
//! below it, and for every directory the stems ever seen in it. Kept up to
//! date as modules come and go, and written to the [`Entry`] and
//! [`Directory`] inputs only where a value really changed.
//!
//! Durability: what the first index writes is high, and everything after
//! it low, like an edit's inputs. Salsa walks every memo of a durability
//! at most that of a change (and reports the old durability of an input
//! it overwrites), so an addition, deletion or rename among paths made
//! after the index is a low change: it walks the few resolutions that
//! looked at those paths, the memos edits made low, and nothing else.
//! Written medium, these changes walked every memo that reads the
//! buckets' medium file lists (about six per file: 68,000 on four copies
//! of Django, against 1,600 now). Changing what the index wrote (deleting
//! an indexed file, a directory's first new name) pays that walk once per
//! input.

use std::collections::BTreeSet;

use rustc_hash::{FxHashMap, FxHashSet};
use salsa::{Durability, Setter};

use super::db::{Database, Db};
use super::modules::join;
use super::resolve::{Directory, Entry, Kinds};

/// Module paths (indexed files and files too large to index), counted per
/// path stem and per directory.
#[derive(Clone, Default)]
pub(crate) struct Tree {
    /// By stem path: `a/b` stands for `a/b.py` and `a/b/`.
    stems: FxHashMap<String, Stem>,
    /// By directory path (the root, and every stem path).
    dirs: FxHashMap<String, Dir>,
    /// Stems whose counts changed since the last [`Tree::write`].
    touched_stems: FxHashSet<String>,
    /// Directories that gained a stem since the last [`Tree::write`].
    touched_dirs: FxHashSet<String>,
    /// Set once the first index was analyzed: inputs written from then on
    /// are low.
    settled: bool,
}

#[derive(Clone, Default)]
struct Stem {
    input: Option<Entry>,
    /// The input holds a value the first index wrote (high durability).
    high: bool,
    /// Module paths at `stem.py` (a path may be both a file and listed as
    /// too large while an update moves it).
    files: usize,
    /// Module paths below `stem/`.
    below: usize,
}

impl Stem {
    fn kinds(&self) -> Kinds {
        Kinds {
            file: self.files > 0,
            dir: self.below > 0,
        }
    }
}

#[derive(Clone, Default)]
struct Dir {
    input: Option<Directory>,
    /// The input holds a value the first index wrote (high durability).
    high: bool,
    stems: BTreeSet<String>,
}

/// `path` split into its directory and its stem; `None` for a path that is
/// not a module file.
fn split_module(path: &str) -> Option<(&str, &str)> {
    let stem_path = path.strip_suffix(".py")?;
    let (dir, stem) = stem_path.rsplit_once('/').unwrap_or(("", stem_path));
    Some((dir, stem))
}

impl Tree {
    /// An empty tree with the root's input, so that every lookup has a
    /// directory to read from the start.
    pub(crate) fn new(db: &Database) -> Tree {
        let input = Directory::builder(Vec::new())
            .stems_durability(Durability::HIGH)
            .new(db);
        db.tree_inputs().insert_directory(String::new(), input);
        let mut tree = Tree::default();
        tree.dirs.insert(
            String::new(),
            Dir {
                input: Some(input),
                high: true,
                stems: BTreeSet::new(),
            },
        );
        tree
    }

    pub(crate) fn settled(&self) -> bool {
        self.settled
    }

    /// The durability of an input the engine writes: `at_index` while the
    /// first index is written, low from then on, like an edit (see the
    /// module comment; also the file lists and later files' semantics).
    pub(crate) fn durability(&self, at_index: Durability) -> Durability {
        if self.settled {
            Durability::LOW
        } else {
            at_index
        }
    }

    /// Called once the first index is analyzed: from then on, inputs are
    /// written low.
    pub(crate) fn settle(&mut self) {
        self.settled = true;
    }

    /// Records `stem` in `dir`, creating the directory's record (a new stem
    /// path is a new directory path too).
    fn see(&mut self, dir: &str, stem: &str) {
        let record = self.dirs.entry(dir.to_string()).or_default();
        if !record.stems.contains(stem) {
            record.stems.insert(stem.to_string());
            self.touched_dirs.insert(dir.to_string());
        }
        let path = join(dir, stem);
        if !self.dirs.contains_key(&path) {
            self.dirs.insert(path.clone(), Dir::default());
            self.touched_dirs.insert(path);
        }
    }

    /// Adds one to (or takes one from) the count `field` picks of
    /// `dir/stem`.
    fn bump(&mut self, dir: &str, stem: &str, up: bool, field: fn(&mut Stem) -> &mut usize) {
        if up {
            self.see(dir, stem);
        }
        let path = join(dir, stem);
        let count = field(self.stems.entry(path.clone()).or_default());
        *count = if up {
            *count + 1
        } else {
            count.saturating_sub(1)
        };
        self.touched_stems.insert(path);
    }

    /// Counts `path` (a module file) in, or out with `up == false`, along
    /// with each directory above it.
    fn count(&mut self, path: &str, up: bool) {
        let Some((dir, stem)) = split_module(path) else {
            return;
        };
        if !up {
            let present = self
                .stems
                .get(&join(dir, stem))
                .is_some_and(|s| s.files > 0);
            if !present {
                return;
            }
        }
        self.bump(dir, stem, up, |s| &mut s.files);
        let mut dir = dir;
        while !dir.is_empty() {
            let (above, name) = dir.rsplit_once('/').unwrap_or(("", dir));
            self.bump(above, name, up, |s| &mut s.below);
            dir = above;
        }
    }

    pub(crate) fn add(&mut self, path: &str) {
        self.count(path, true);
    }

    pub(crate) fn remove(&mut self, path: &str) {
        self.count(path, false);
    }

    /// Writes the inputs of the paths touched since the last write, where
    /// they differ from what the inputs hold, and creates the inputs of new
    /// paths (see the module comment for durabilities).
    ///
    /// Inputs are created after every write: a new input is stamped with
    /// the revision current at its creation, and a resolution that found no
    /// entry for a path read a directory that one of these writes changes.
    /// Re-run, it reads the new entry instead; were the entry stamped
    /// before that write, salsa would take the new answer for one older
    /// than the importers' memos and keep them.
    /// Returns whether it wrote over a value of the first index: salsa
    /// then checks every memo that read a high input.
    pub(crate) fn write(&mut self, db: &mut Database) -> bool {
        let durability = self.durability(Durability::HIGH);
        let high = durability == Durability::HIGH;
        let mut over_high = false;
        let mut new_entries = Vec::new();
        for path in std::mem::take(&mut self.touched_stems) {
            let Some(stem) = self.stems.get_mut(&path) else {
                continue;
            };
            let kinds = stem.kinds();
            match stem.input {
                None => new_entries.push((path, kinds)),
                Some(input) if input.kinds(db) != kinds => {
                    input.set_kinds(db).with_durability(durability).to(kinds);
                    over_high |= stem.high;
                    stem.high = high;
                }
                Some(_) => {}
            }
        }
        let mut new_dirs = Vec::new();
        for path in std::mem::take(&mut self.touched_dirs) {
            let Some(dir) = self.dirs.get_mut(&path) else {
                continue;
            };
            let stems: Vec<String> = dir.stems.iter().cloned().collect();
            match dir.input {
                None => new_dirs.push((path, stems)),
                Some(input) if *input.stems(db) != stems => {
                    input.set_stems(db).with_durability(durability).to(stems);
                    over_high |= dir.high;
                    dir.high = high;
                }
                Some(_) => {}
            }
        }
        for (path, kinds) in new_entries {
            let input = Entry::builder(kinds).kinds_durability(durability).new(&*db);
            db.tree_inputs().insert_entry(path.clone(), input);
            if let Some(stem) = self.stems.get_mut(&path) {
                stem.input = Some(input);
                stem.high = high;
            }
        }
        for (path, stems) in new_dirs {
            let input = Directory::builder(stems)
                .stems_durability(durability)
                .new(&*db);
            db.tree_inputs().insert_directory(path.clone(), input);
            if let Some(dir) = self.dirs.get_mut(&path) {
                dir.input = Some(input);
                dir.high = high;
            }
        }
        over_high
    }
}
