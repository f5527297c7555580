//! Module resolution as CPython's path-based finder does it, over the set of
//! project files instead of the file system: for each search root in order, a
//! regular package (`name/__init__.py`) wins, then a module file (`name.py`),
//! and a directory without `__init__.py` is a namespace-package portion that
//! counts only if no root has a package or module of that name.
//!
//! Search roots depend on the importing file ([`SearchPath`]), as they do for
//! the Python tools that run it: a sub-project (a directory with its own
//! `pyproject.toml`, `setup.py` or `setup.cfg`) puts its `src/` and its own
//! directory first, since it is installed and tested on its own; pytest's
//! default `prepend` import mode puts a test module's basedir first; and a
//! script outside any package finds the modules beside it, as `python
//! script.py` does.

use rustc_hash::FxHashSet;

/// Where a dotted module name leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModuleLoc {
    /// A module file or a package's `__init__.py`, root-relative.
    File(String),
    /// A namespace package: directories only, no file.
    Namespace,
    Missing,
}

/// The module search path of one importing file: root-relative
/// directories, `""` being the project root.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SearchPath {
    /// Searched in order for absolute imports.
    pub roots: Vec<String>,
    /// The root the file's own module name (and so its package, the base of
    /// its relative imports) is counted from.
    pub own: String,
    /// The file's directory when it is in no package: searched only when
    /// `roots` have no such module, before the name counts as outside the
    /// project.
    pub fallback: Option<String>,
}

/// The project's importable modules, built from the file paths alone.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ModuleIndex {
    /// Module files, including those too large to index (EC-17): they are
    /// still modules an import can name.
    files: FxHashSet<String>,
    dirs: FxHashSet<String>,
    /// Sub-project directories, innermost last once sorted.
    sub_projects: Vec<String>,
    /// Root-relative search roots of files outside any sub-project, in
    /// `sys.path` order.
    roots: Vec<String>,
    /// The same few modules are imported thousands of times.
    cache: ResolutionCache,
}

/// Memoized [`ModuleIndex::find`] results. Derived from the other fields, so
/// it takes no part in equality.
#[derive(Debug, Default)]
struct ResolutionCache(std::sync::RwLock<rustc_hash::FxHashMap<String, ModuleLoc>>);

impl PartialEq for ResolutionCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for ResolutionCache {}

impl ModuleIndex {
    /// `paths` are the module files (indexed or not), `sub_projects` the
    /// directories below the root that hold a project marker, `extra_roots`
    /// the configured search roots.
    pub fn new<'a>(
        paths: impl IntoIterator<Item = &'a str>,
        sub_projects: &[String],
        extra_roots: &[String],
    ) -> Self {
        let mut files = FxHashSet::default();
        let mut dirs = FxHashSet::default();
        for path in paths {
            let mut dir = parent(path);
            while dirs.insert(dir.to_string()) && !dir.is_empty() {
                dir = parent(dir);
            }
            files.insert(path.to_string());
        }
        let mut roots = vec![String::new()];
        if dirs.contains("src") {
            roots.push("src".to_string());
        }
        for extra in extra_roots {
            let extra = extra.trim_matches('/').to_string();
            if !roots.contains(&extra) {
                roots.push(extra);
            }
        }
        let mut sub_projects: Vec<String> = sub_projects
            .iter()
            .map(|dir| dir.trim_matches('/').to_string())
            .filter(|dir| !dir.is_empty())
            .collect();
        sub_projects.sort();
        sub_projects.dedup();
        Self {
            files,
            dirs,
            sub_projects,
            roots,
            cache: ResolutionCache::default(),
        }
    }

    pub fn contains_file(&self, path: &str) -> bool {
        self.files.contains(path)
    }

    /// The search path of `file` (which need not exist); `is_test` says
    /// whether pytest collects it as a test module.
    pub fn search_path(&self, file: &str, is_test: bool) -> SearchPath {
        let mut roots = Vec::new();
        // pytest's `prepend` mode: the first directory upwards that is not
        // a package goes first on `sys.path` (rootdir/conftest docs).
        let basedir = is_test.then(|| {
            let mut dir = parent(file);
            while !dir.is_empty() && self.is_package(dir) {
                dir = parent(dir);
            }
            dir.to_string()
        });
        roots.extend(basedir.clone());
        // Innermost sub-project first: each is installed on its own, its
        // `src/` layout included.
        for sub in self.sub_projects.iter().rev() {
            if is_within(file, sub) {
                let src = join(sub, "src");
                if self.dirs.contains(&src) {
                    roots.push(src);
                }
                roots.push(sub.clone());
            }
        }
        roots.extend(self.roots.iter().cloned());
        let mut seen = FxHashSet::default();
        roots.retain(|root| seen.insert(root.clone()));
        let own = basedir.unwrap_or_else(|| {
            roots
                .iter()
                .filter(|root| is_within(file, root))
                .max_by_key(|root| root.len())
                .cloned()
                .unwrap_or_default()
        });
        let dir = parent(file);
        let fallback = (!self.is_package(dir) && !roots.iter().any(|root| root == dir))
            .then(|| dir.to_string());
        SearchPath {
            roots,
            own,
            fallback,
        }
    }

    fn is_package(&self, dir: &str) -> bool {
        self.files.contains(&join(dir, "__init__.py"))
    }

    /// Resolves an absolute dotted module name on `search`.
    pub fn absolute(&self, search: &SearchPath, dotted: &str) -> ModuleLoc {
        let components: Vec<&str> = dotted.split('.').collect();
        match self.find(&search.roots, &components) {
            ModuleLoc::Missing => match &search.fallback {
                Some(dir) => self.find(std::slice::from_ref(dir), &components),
                None => ModuleLoc::Missing,
            },
            found => found,
        }
    }

    /// The directory a relative import of `level` dots in `file` starts from,
    /// or `None` when it reaches above the top-level package.
    pub fn relative_base(&self, search: &SearchPath, file: &str, level: u32) -> Option<String> {
        let within = file
            .strip_prefix(search.own.as_str())
            .unwrap_or(file)
            .trim_start_matches('/');
        let package_depth = within.matches('/').count();
        if level == 0 || level as usize > package_depth {
            return None;
        }
        let mut dir = parent(file);
        for _ in 1..level {
            dir = parent(dir);
        }
        Some(dir.to_string())
    }

    /// Resolves `from <level dots><module> import ...` in `file`. `None`
    /// means the import reaches above the top-level package.
    pub fn relative(
        &self,
        search: &SearchPath,
        file: &str,
        level: u32,
        module: Option<&str>,
    ) -> Option<ModuleLoc> {
        let base = self.relative_base(search, file, level)?;
        Some(match module {
            Some(module) => {
                let components: Vec<&str> = module.split('.').collect();
                self.find(std::slice::from_ref(&base), &components)
            }
            None => self.package_at(&base),
        })
    }
    /// Resolves submodule `name` of the package whose file is `package_file`.
    pub fn submodule(&self, package_file: &str, name: &str) -> ModuleLoc {
        match package_file.strip_suffix("/__init__.py") {
            Some(dir) => self.find(&[dir.to_string()], &[name]),
            None => ModuleLoc::Missing,
        }
    }

    fn package_at(&self, dir: &str) -> ModuleLoc {
        let init = join(dir, "__init__.py");
        if self.files.contains(&init) {
            ModuleLoc::File(init)
        } else {
            ModuleLoc::Namespace
        }
    }

    fn find(&self, start: &[String], components: &[&str]) -> ModuleLoc {
        let key = format!("{}\0{}", start.join("\0"), components.join("."));
        let cache = &self.cache.0;
        if let Some(found) = cache.read().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return found.clone();
        }
        let found = self.find_uncached(start, components);
        cache
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, found.clone());
        found
    }

    fn find_uncached(&self, start: &[String], components: &[&str]) -> ModuleLoc {
        let mut dirs: Vec<String> = start.to_vec();
        for (position, component) in components.iter().enumerate() {
            let last = position + 1 == components.len();
            let mut portions = Vec::new();
            let mut found = None;
            for dir in &dirs {
                let base = join(dir, component);
                let init = join(&base, "__init__.py");
                if self.files.contains(&init) {
                    found = Some((init, Some(base)));
                    break;
                }
                let module = format!("{base}.py");
                if self.files.contains(&module) {
                    found = Some((module, None));
                    break;
                }
                if self.dirs.contains(&base) {
                    portions.push(base);
                }
            }
            match found {
                Some((file, _)) if last => return ModuleLoc::File(file),
                Some((_, Some(package_dir))) => dirs = vec![package_dir],
                Some((_, None)) => return ModuleLoc::Missing,
                None if portions.is_empty() => return ModuleLoc::Missing,
                None if last => return ModuleLoc::Namespace,
                None => dirs = portions,
            }
        }
        ModuleLoc::Missing
    }

    /// The dotted name `file` is imported by from its own search root
    /// (`src/pkg/__init__.py` → `pkg`), whether or not the file exists.
    pub fn module_name(&self, search: &SearchPath, file: &str) -> String {
        let relative = file
            .strip_prefix(search.own.as_str())
            .unwrap_or(file)
            .trim_start_matches('/');
        let stem = relative.strip_suffix(".py").unwrap_or(relative);
        let stem = stem.strip_suffix("/__init__").unwrap_or(stem);
        stem.replace('/', ".")
    }

    /// Whether the top-level name of `dotted` exists on `search` at all,
    /// which makes a missing submodule "unresolved" rather than third-party.
    pub fn has_top_level(&self, search: &SearchPath, dotted: &str) -> bool {
        let top = dotted.split('.').next().unwrap_or(dotted);
        self.absolute(search, top) != ModuleLoc::Missing
    }
}

/// Whether `path` lies inside directory `dir` (`""` holds everything).
fn is_within(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(paths: &[&str]) -> ModuleIndex {
        ModuleIndex::new(paths.iter().copied(), &[], &[])
    }

    fn absolute(index: &ModuleIndex, file: &str, dotted: &str) -> ModuleLoc {
        index.absolute(&index.search_path(file, false), dotted)
    }

    #[test]
    fn module_names_follow_the_search_root() {
        let index = index(&["src/pkg/__init__.py", "src/pkg/mod.py", "tools/run.py"]);
        let name = |file| index.module_name(&index.search_path(file, false), file);
        assert_eq!(name("src/pkg/__init__.py"), "pkg");
        assert_eq!(name("src/pkg/gone.py"), "pkg.gone");
        assert_eq!(name("tools/run.py"), "tools.run");
    }

    #[test]
    fn regular_package_beats_module_file() {
        let index = index(&["main.py", "utils.py", "utils/__init__.py"]);
        assert_eq!(
            absolute(&index, "main.py", "utils"),
            ModuleLoc::File("utils/__init__.py".into())
        );
    }

    #[test]
    fn module_file_beats_namespace_directory() {
        let index = index(&["main.py", "utils.py", "utils/helpers.py"]);
        assert_eq!(
            absolute(&index, "main.py", "utils"),
            ModuleLoc::File("utils.py".into())
        );
        assert_eq!(
            absolute(&index, "main.py", "utils.helpers"),
            ModuleLoc::Missing
        );
    }

    #[test]
    fn relative_levels_stop_at_top_level_package() {
        let index = index(&["pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/m.py"]);
        let search = index.search_path("pkg/sub/m.py", false);
        let base = |level| index.relative_base(&search, "pkg/sub/m.py", level);
        assert_eq!(base(1).as_deref(), Some("pkg/sub"));
        assert_eq!(base(2).as_deref(), Some("pkg"));
        assert_eq!(base(3), None);
    }

    #[test]
    fn search_paths_per_file() {
        let index = ModuleIndex::new(
            [
                "src/app/__init__.py",
                "tools/sub/src/lib/__init__.py",
                "tools/sub/tests/test_lib.py",
                "tools/sub/tests/unit/__init__.py",
                "tools/sub/tests/unit/test_deep.py",
            ],
            &["tools/sub".to_string()],
            &["vendor".to_string()],
        );
        assert_eq!(
            index.search_path("src/app/__init__.py", false),
            SearchPath {
                roots: vec!["".into(), "src".into(), "vendor".into()],
                own: "src".into(),
                fallback: None,
            }
        );
        assert_eq!(
            index.search_path("tools/sub/tests/unit/test_deep.py", true),
            SearchPath {
                roots: vec![
                    "tools/sub/tests".into(),
                    "tools/sub/src".into(),
                    "tools/sub".into(),
                    "".into(),
                    "src".into(),
                    "vendor".into()
                ],
                own: "tools/sub/tests".into(),
                fallback: None,
            }
        );
        // Not collected by pytest: no basedir, but the script directory.
        assert_eq!(
            index.search_path("tools/sub/tests/test_lib.py", false),
            SearchPath {
                roots: vec![
                    "tools/sub/src".into(),
                    "tools/sub".into(),
                    "".into(),
                    "src".into(),
                    "vendor".into()
                ],
                own: "tools/sub".into(),
                fallback: Some("tools/sub/tests".into()),
            }
        );
    }
}
