//! Module resolution as salsa queries, granular the way ty's module
//! resolver is: each directory's module entries are an input
//! ([`Directory`]), module names and search-root lists are interned, and
//! [`resolve`] is memoized per (search roots, absolute module name). A
//! resolution records exactly the directories it looked at, so adding or
//! deleting a file re-runs only the resolutions that listed its directory,
//! and a file whose resolutions come out the same is not re-resolved (its
//! `file_base_facts` is re-verified, not re-executed).

use std::sync::{Arc, RwLock};

use rustc_hash::FxHashMap;

use super::db::Db;
use super::modules::{self, Layout, ModuleLoc, SearchPath};

/// One directory's module entries. There is one input per directory ever
/// seen; a directory that goes is emptied, not dropped, so a path keeps its
/// input across revisions.
#[salsa::input(debug)]
pub struct Directory {
    #[returns(ref)]
    pub listing: Listing,
}

/// What resolution reads of a directory.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Listing {
    /// Module file names (`name.py`), sorted.
    pub files: Vec<String>,
    /// Child directories with module files below them, sorted.
    pub dirs: Vec<String>,
}

impl Listing {
    fn has_file(&self, name: &str) -> bool {
        self.files
            .binary_search_by(|f| f.as_str().cmp(name))
            .is_ok()
    }

    fn has_dir(&self, name: &str) -> bool {
        self.dirs.binary_search_by(|d| d.as_str().cmp(name)).is_ok()
    }
}

/// The [`Directory`] inputs by root-relative path. Written by the engine
/// only, read by [`directory`] only after the parent's listing (a tracked
/// read) says the directory exists, so no query result depends on this
/// table alone.
#[derive(Clone, Default)]
pub struct Directories(Arc<RwLock<FxHashMap<String, Directory>>>);

impl Directories {
    pub fn get(&self, path: &str) -> Option<Directory> {
        let table = self.0.read().unwrap_or_else(|e| e.into_inner());
        table.get(path).copied()
    }

    pub fn insert(&self, path: String, directory: Directory) {
        let mut table = self.0.write().unwrap_or_else(|e| e.into_inner());
        table.insert(path, directory);
    }
}

#[salsa::interned(debug)]
pub struct DirPath<'db> {
    #[returns(ref)]
    pub path: String,
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

/// The directory at `path`, if it exists: found through its parent's
/// listing, from the root down.
#[salsa::tracked(returns(copy))]
pub fn directory<'db>(db: &'db dyn Db, path: DirPath<'db>) -> Option<Directory> {
    let path = path.path(db);
    if path.is_empty() {
        return db.directories().get("");
    }
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
    let parent = directory(db, DirPath::new(db, dir.to_string()))?;
    if !parent.listing(db).has_dir(name) {
        return None;
    }
    db.directories().get(path)
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
pub struct DbLayout<'db> {
    pub db: &'db dyn Db,
}

impl DbLayout<'_> {
    fn listing(&self, dir: &str) -> Option<&Listing> {
        let directory = directory(self.db, DirPath::new(self.db, dir.to_string()))?;
        Some(directory.listing(self.db))
    }
}

impl Layout for DbLayout<'_> {
    fn has_file(&self, dir: &str, name: &str) -> bool {
        self.listing(dir).is_some_and(|l| l.has_file(name))
    }

    fn has_dir(&self, dir: &str, name: &str) -> bool {
        self.listing(dir).is_some_and(|l| l.has_dir(name))
    }
}

/// Resolves one file's imports: absolute names on its search path,
/// relative ones turned into absolute names on its own root first, so
/// every importer of a module shares one memo.
pub struct Resolver<'db> {
    db: &'db dyn Db,
    file: &'db str,
    search: &'db SearchPath,
    roots: Roots<'db>,
    own: Roots<'db>,
}

impl<'db> Resolver<'db> {
    pub fn new(db: &'db dyn Db, file: &'db str, search: &'db SearchPath) -> Self {
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
    pub fn absolute(&self, dotted: &str) -> ModuleLoc {
        self.find(self.roots, dotted)
    }

    /// Resolves `from <level dots><module> import ...`. `None` means the
    /// import reaches above the top-level package.
    pub fn relative(&self, level: u32, module: Option<&str>) -> Option<ModuleLoc> {
        let package = modules::relative_package(self.search, self.file, level)?;
        let dotted = match module {
            Some(module) => format!("{package}.{module}"),
            None => package,
        };
        Some(self.find(self.own, &dotted))
    }

    /// Resolves submodule `name` of the package whose file is `package_file`.
    pub fn submodule(&self, package_file: &str, name: &str) -> ModuleLoc {
        match package_file.strip_suffix("/__init__.py") {
            Some(dir) => self.find(Roots::new(self.db, vec![dir.to_string()], None), name),
            None => ModuleLoc::Missing,
        }
    }

    /// Whether the top-level name of `dotted` exists on the search path,
    /// which makes a missing submodule "unresolved" rather than third-party.
    pub fn has_top_level(&self, dotted: &str) -> bool {
        let top = dotted.split('.').next().unwrap_or(dotted);
        self.absolute(top) != ModuleLoc::Missing
    }
}
