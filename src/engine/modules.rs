//! Module resolution as CPython's path-based finder does it, over the set of
//! project files instead of the file system: for each search root in order, a
//! regular package (`name/__init__.py`) wins, then a module file (`name.py`),
//! and a directory without `__init__.py` is a namespace-package portion that
//! counts only if no root has a package or module of that name.

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

/// The project's importable modules, built from the file paths alone.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ModuleIndex {
    files: FxHashSet<String>,
    dirs: FxHashSet<String>,
    /// Root-relative search roots in `sys.path` order; `""` is the root.
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
    pub fn new<'a>(paths: impl IntoIterator<Item = &'a str>, extra_roots: &[String]) -> Self {
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
        Self {
            files,
            dirs,
            roots,
            cache: ResolutionCache::default(),
        }
    }

    /// Resolves an absolute dotted module name.
    pub fn absolute(&self, dotted: &str) -> ModuleLoc {
        let components: Vec<&str> = dotted.split('.').collect();
        self.find(&self.roots, &components)
    }

    /// The directory a relative import of `level` dots in `file` starts from,
    /// or `None` when it reaches above the top-level package.
    pub fn relative_base(&self, file: &str, level: u32) -> Option<String> {
        let root = self.root_of(file);
        let within = file
            .strip_prefix(root)
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
    pub fn relative(&self, file: &str, level: u32, module: Option<&str>) -> Option<ModuleLoc> {
        let base = self.relative_base(file, level)?;
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

    fn root_of(&self, file: &str) -> &str {
        self.roots
            .iter()
            .filter(|root| root.is_empty() || file.starts_with(&format!("{root}/")))
            .max_by_key(|root| root.len())
            .map_or("", String::as_str)
    }

    /// The dotted name `file` is imported by from its search root
    /// (`src/pkg/__init__.py` → `pkg`), whether or not the file exists.
    pub fn module_name(&self, file: &str) -> String {
        let root = self.root_of(file);
        let relative = file
            .strip_prefix(root)
            .unwrap_or(file)
            .trim_start_matches('/');
        let stem = relative.strip_suffix(".py").unwrap_or(relative);
        let stem = stem.strip_suffix("/__init__").unwrap_or(stem);
        stem.replace('/', ".")
    }

    /// Whether the top-level name of `dotted` exists in the project at all,
    /// which makes a missing submodule "unresolved" rather than third-party.
    pub fn has_top_level(&self, dotted: &str) -> bool {
        let top = dotted.split('.').next().unwrap_or(dotted);
        self.find(&self.roots, &[top]) != ModuleLoc::Missing
    }
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
        ModuleIndex::new(paths.iter().copied(), &[])
    }

    #[test]
    fn module_names_follow_the_search_root() {
        let index = index(&["src/pkg/__init__.py", "src/pkg/mod.py", "tools/run.py"]);
        assert_eq!(index.module_name("src/pkg/__init__.py"), "pkg");
        assert_eq!(index.module_name("src/pkg/gone.py"), "pkg.gone");
        assert_eq!(index.module_name("tools/run.py"), "tools.run");
    }

    #[test]
    fn regular_package_beats_module_file() {
        let index = index(&["utils.py", "utils/__init__.py"]);
        assert_eq!(
            index.absolute("utils"),
            ModuleLoc::File("utils/__init__.py".into())
        );
    }

    #[test]
    fn module_file_beats_namespace_directory() {
        let index = index(&["utils.py", "utils/helpers.py"]);
        assert_eq!(index.absolute("utils"), ModuleLoc::File("utils.py".into()));
        assert_eq!(index.absolute("utils.helpers"), ModuleLoc::Missing);
    }

    #[test]
    fn relative_levels_stop_at_top_level_package() {
        let index = index(&["pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/m.py"]);
        assert_eq!(
            index.relative_base("pkg/sub/m.py", 1).as_deref(),
            Some("pkg/sub")
        );
        assert_eq!(
            index.relative_base("pkg/sub/m.py", 2).as_deref(),
            Some("pkg")
        );
        assert_eq!(index.relative_base("pkg/sub/m.py", 3), None);
    }
}
