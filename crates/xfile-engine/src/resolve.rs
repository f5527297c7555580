//! Module resolution as salsa queries, granular the way ty's module
//! resolver is: each path's module entries are an input ([`Entry`]),
//! module names and search-root lists are interned, and [`resolve`] is
//! memoized per (search roots, absolute module name). A resolution records
//! exactly the paths it looked at, so adding or deleting a file re-runs only
//! the resolutions that looked at that path (or, for a name never seen
//! before, at its directory's [`Directory`] input), and a file whose
//! resolutions come out the same is not re-resolved (its `file_base_facts`
//! is re-verified, not re-executed).
//!
//! Inputs per path rather than per directory listing keep an addition from
//! touching every resolution in its directory: with listings, a new file in
//! `django/utils` made every `django.utils.*` resolution, and so every
//! importer's chain, read a changed input.

use std::sync::{Arc, RwLock};

use rustc_hash::FxHashMap;

use super::db::Db;
use super::modules::{self, Layout, ModuleLoc, SearchPath};

/// What resolution reads of one path (`dir/stem`, without `.py`): whether
/// `stem.py` is a module file and whether `stem/` holds module files below.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Kinds {
    pub file: bool,
    pub dir: bool,
}

/// One path's [`Kinds`]. There is one input per path ever seen; a path
/// that goes keeps its input with both kinds false.
#[salsa::input(debug)]
pub struct Entry {
    #[returns(copy)]
    pub kinds: Kinds,
}

/// The stems ever seen in one directory (sorted; they only grow). A lookup
/// of a path that has no [`Entry`] reads it, so the stem's first
/// appearance re-runs exactly the resolutions that looked for it.
#[salsa::input(debug)]
pub struct Directory {
    #[returns(ref)]
    pub stems: Vec<String>,
}

/// The [`Entry`] and [`Directory`] inputs by root-relative path, written by
/// the engine only and never shrunk. A path has a [`Directory`] input
/// exactly when it is the root or has an [`Entry`]; so when a lookup finds
/// no entry, the nearest ancestor with a [`Directory`] input is where the
/// path's first unseen stem will be recorded, and reading that input is
/// what makes the untracked table lookup safe.
#[derive(Clone, Default)]
pub(crate) struct TreeInputs(Arc<RwLock<Table>>);

#[derive(Default)]
struct Table {
    entries: FxHashMap<String, Entry>,
    directories: FxHashMap<String, Directory>,
}

impl TreeInputs {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Table> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Table> {
        self.0.write().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn insert_entry(&self, path: String, entry: Entry) {
        self.write().entries.insert(path, entry);
    }

    pub(crate) fn insert_directory(&self, path: String, directory: Directory) {
        self.write().directories.insert(path, directory);
    }

    /// The kinds of `dir/stem`, as a tracked read.
    fn kinds(&self, db: &dyn Db, dir: &str, stem: &str) -> Kinds {
        let path = modules::join(dir, stem);
        let (entry, seen) = {
            let table = self.read();
            let entry = table.entries.get(&path).copied();
            let mut seen = None;
            if entry.is_none() {
                let mut dir = dir;
                seen = loop {
                    if let Some(directory) = table.directories.get(dir) {
                        break Some(*directory);
                    }
                    if dir.is_empty() {
                        break None;
                    }
                    dir = modules::parent(dir);
                };
            }
            (entry, seen)
        };
        match (entry, seen) {
            (Some(entry), _) => entry.kinds(db),
            (None, Some(directory)) => {
                // Never seen: false until the stem appears on the way down.
                directory.stems(db);
                Kinds::default()
            }
            (None, None) => Kinds::default(),
        }
    }
}

#[salsa::interned(debug)]
pub struct ModuleName<'db> {
    #[returns(ref)]
    pub dotted: String,
}

/// Search roots in order and the fallback directory: the context a module
/// name is resolved in, shared by every file with the same search path.
#[salsa::interned(debug)]
pub struct Roots<'db> {
    #[returns(ref)]
    pub roots: Vec<String>,
    #[returns(ref)]
    pub fallback: Option<String>,
}

/// Resolves absolute module `name` on `roots`.
#[salsa::tracked(returns(ref))]
pub fn resolve<'db>(db: &'db dyn Db, roots: Roots<'db>, name: ModuleName<'db>) -> ModuleLoc {
    let components: Vec<&str> = name.dotted(db).split('.').collect();
    modules::find(
        &DbLayout { db },
        roots.roots(db),
        roots.fallback(db).as_deref(),
        &components,
    )
}

/// The module tree through [`directory`] inputs: every answer is a
/// tracked read of the directories it looked at.
pub(crate) struct DbLayout<'db> {
    pub db: &'db dyn Db,
}

impl Layout for DbLayout<'_> {
    fn has_file(&self, dir: &str, name: &str) -> bool {
        name.strip_suffix(".py")
            .is_some_and(|stem| self.db.tree_inputs().kinds(self.db, dir, stem).file)
    }

    fn has_dir(&self, dir: &str, name: &str) -> bool {
        self.db.tree_inputs().kinds(self.db, dir, name).dir
    }
}

/// Resolves one file's imports: absolute names on its search path,
/// relative ones turned into absolute names on its own root first, so
/// every importer of a module shares one memo.
pub(crate) struct Resolver<'db> {
    db: &'db dyn Db,
    file: &'db str,
    search: &'db SearchPath,
    roots: Roots<'db>,
    own: Roots<'db>,
}

impl<'db> Resolver<'db> {
    pub(crate) fn new(db: &'db dyn Db, file: &'db str, search: &'db SearchPath) -> Self {
        Resolver {
            db,
            file,
            search,
            roots: Roots::new(db, search.roots.clone(), search.fallback.clone()),
            own: Roots::new(db, vec![search.own.clone()], None),
        }
    }

    fn find(&self, roots: Roots<'db>, dotted: &str) -> ModuleLoc {
        resolve(self.db, roots, ModuleName::new(self.db, dotted.to_string())).clone()
    }

    /// Resolves an absolute dotted module name.
    pub(crate) fn absolute(&self, dotted: &str) -> ModuleLoc {
        self.find(self.roots, dotted)
    }

    /// Resolves `from <level dots><module> import ...`. `None` means the
    /// import reaches above the top-level package.
    pub(crate) fn relative(&self, level: u32, module: Option<&str>) -> Option<ModuleLoc> {
        let package = modules::relative_package(self.search, self.file, level)?;
        let dotted = match module {
            Some(module) => format!("{package}.{module}"),
            None => package,
        };
        Some(self.find(self.own, &dotted))
    }

    /// Resolves submodule `name` of the package whose file is `package_file`.
    pub(crate) fn submodule(&self, package_file: &str, name: &str) -> ModuleLoc {
        match package_file.strip_suffix("/__init__.py") {
            Some(dir) => self.find(Roots::new(self.db, vec![dir.to_string()], None), name),
            None => ModuleLoc::Missing,
        }
    }

    /// `dir/conftest.py`, if it is a module file of the project.
    pub(crate) fn conftest(&self, dir: &str) -> Option<String> {
        let roots = Roots::new(self.db, vec![dir.to_string()], None);
        match self.find(roots, "conftest") {
            ModuleLoc::File(path) if path == modules::join(dir, "conftest.py") => Some(path),
            _ => None,
        }
    }

    /// Whether the top-level name of `dotted` exists on the search path,
    /// which makes a missing submodule "unresolved" rather than third-party.
    pub(crate) fn has_top_level(&self, dotted: &str) -> bool {
        let top = dotted.split('.').next().unwrap_or(dotted);
        self.absolute(top) != ModuleLoc::Missing
    }
}
