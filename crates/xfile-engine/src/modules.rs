//! Module resolution as CPython's path-based finder does it, over the
//! project's module files instead of the file system: for each search root
//! in order, a regular package (`name/__init__.py`) wins, then a module file
//! (`name.py`), and a directory without `__init__.py` is a namespace-package
//! portion that counts only if no root has a package or module of that name.
//!
//! Search roots depend on the importing file ([`SearchPath`]), as they do for
//! the Python tools that run it: a sub-project (a directory with its own
//! `pyproject.toml`, `setup.py` or `setup.cfg`) puts its `src/` and its own
//! directory first, since it is installed and tested on its own; pytest's
//! default `prepend` import mode puts a test module's basedir first; and a
//! script outside any package finds the modules beside it, as `python
//! script.py` does.
//!
//! Everything here reads the tree through [`Layout`], one directory at a
//! time, so the engine can answer from per-directory salsa inputs and
//! record which directories each resolution looked at.

/// Where a dotted module name leads.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ModuleLoc {
    /// A module file or a package's `__init__.py`, root-relative.
    File(String),
    /// A namespace package: directories only, no file.
    Namespace,
    Missing,
}

/// The project's module tree as resolution sees it: module files, and
/// directories that hold module files somewhere below them. Both answers
/// are `false` when `dir` itself does not exist.
pub(crate) trait Layout {
    /// Whether `dir/name` is a module file (`name` ends in `.py`).
    fn has_file(&self, dir: &str, name: &str) -> bool;
    /// Whether `dir/name` is a directory with module files below it.
    fn has_dir(&self, dir: &str, name: &str) -> bool;
}

/// The module search path of one importing file: root-relative
/// directories, `""` being the project root.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct SearchPath {
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

fn is_package(layout: &dyn Layout, dir: &str) -> bool {
    layout.has_file(dir, "__init__.py")
}

/// The search path of `file` (which need not exist). `is_test` says whether
/// pytest collects it; `sub_projects` are the sub-project directories,
/// `extra_roots` the configured search roots.
pub(crate) fn search_path(
    layout: &dyn Layout,
    sub_projects: &[String],
    extra_roots: &[String],
    file: &str,
    is_test: bool,
) -> SearchPath {
    let mut roots = Vec::new();
    // pytest's `prepend` mode: the first directory upwards that is not a
    // package goes first on `sys.path`.
    let basedir = is_test.then(|| {
        let mut dir = parent(file);
        while !dir.is_empty() && is_package(layout, dir) {
            dir = parent(dir);
        }
        dir.to_string()
    });
    roots.extend(basedir.clone());
    // Innermost sub-project first: each is installed on its own, its `src/`
    // layout included.
    let mut enclosing: Vec<&String> = sub_projects
        .iter()
        .filter(|sub| !sub.is_empty() && is_within(file, sub))
        .collect();
    enclosing.sort_by_key(|sub| std::cmp::Reverse(sub.len()));
    for sub in enclosing {
        if layout.has_dir(sub, "src") {
            roots.push(join(sub, "src"));
        }
        roots.push(sub.clone());
    }
    roots.push(String::new());
    if layout.has_dir("", "src") {
        roots.push("src".to_string());
    }
    roots.extend(extra_roots.iter().map(|r| r.trim_matches('/').to_string()));
    let mut seen = rustc_hash::FxHashSet::default();
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
    let fallback = (!is_package(layout, dir) && !roots.iter().any(|root| root == dir))
        .then(|| dir.to_string());
    SearchPath {
        roots,
        own,
        fallback,
    }
}

/// Finds the dotted module `components` on `roots`, then on `fallback`.
pub(crate) fn find(
    layout: &dyn Layout,
    roots: &[String],
    fallback: Option<&str>,
    components: &[&str],
) -> ModuleLoc {
    match find_on(layout, roots, components) {
        ModuleLoc::Missing => match fallback {
            Some(dir) => find_on(layout, &[dir.to_string()], components),
            None => ModuleLoc::Missing,
        },
        found => found,
    }
}

fn find_on(layout: &dyn Layout, start: &[String], components: &[&str]) -> ModuleLoc {
    let mut dirs: Vec<String> = start.to_vec();
    for (position, component) in components.iter().enumerate() {
        let last = position + 1 == components.len();
        let mut portions = Vec::new();
        let mut found = None;
        for dir in &dirs {
            let is_dir = layout.has_dir(dir, component);
            let base = join(dir, component);
            if is_dir && is_package(layout, &base) {
                found = Some((join(&base, "__init__.py"), Some(base)));
                break;
            }
            if layout.has_file(dir, &format!("{component}.py")) {
                found = Some((format!("{base}.py"), None));
                break;
            }
            if is_dir {
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

/// The dotted package a relative import of `level` dots in `file` starts
/// from, counted from the file's own root, or `None` when it reaches above
/// the top-level package. Resolving that absolute name on the own root
/// alone is what the relative import does.
pub(crate) fn relative_package(search: &SearchPath, file: &str, level: u32) -> Option<String> {
    let within = within_own(search, file);
    let package_depth = within.matches('/').count();
    if level == 0 || level as usize > package_depth {
        return None;
    }
    let mut dir = parent(within);
    for _ in 1..level {
        dir = parent(dir);
    }
    Some(dir.replace('/', "."))
}

/// The dotted name `file` is imported by from its own search root
/// (`src/pkg/__init__.py` → `pkg`), whether or not the file exists.
pub(crate) fn module_name(search: &SearchPath, file: &str) -> String {
    let relative = within_own(search, file);
    let stem = relative.strip_suffix(".py").unwrap_or(relative);
    let stem = stem.strip_suffix("/__init__").unwrap_or(stem);
    stem.replace('/', ".")
}

fn within_own<'a>(search: &SearchPath, file: &'a str) -> &'a str {
    file.strip_prefix(search.own.as_str())
        .unwrap_or(file)
        .trim_start_matches('/')
}

/// Whether `path` lies inside directory `dir` (`""` holds everything).
fn is_within(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

pub(crate) fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

pub(crate) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashSet;

    /// A layout over a list of paths.
    struct Paths {
        files: FxHashSet<String>,
        dirs: FxHashSet<String>,
    }

    impl Paths {
        fn new(paths: &[&str]) -> Self {
            let mut dirs = FxHashSet::default();
            for path in paths {
                let mut dir = parent(path);
                while !dir.is_empty() && dirs.insert(dir.to_string()) {
                    dir = parent(dir);
                }
            }
            Paths {
                files: paths.iter().map(|p| p.to_string()).collect(),
                dirs,
            }
        }

        fn absolute(&self, file: &str, dotted: &str) -> ModuleLoc {
            let search = search_path(self, &[], &[], file, false);
            let components: Vec<&str> = dotted.split('.').collect();
            find(self, &search.roots, search.fallback.as_deref(), &components)
        }
    }

    impl Layout for Paths {
        fn has_file(&self, dir: &str, name: &str) -> bool {
            self.files.contains(&join(dir, name))
        }

        fn has_dir(&self, dir: &str, name: &str) -> bool {
            self.dirs.contains(&join(dir, name))
        }
    }

    #[test]
    fn module_names_follow_the_search_root() {
        let paths = Paths::new(&["src/pkg/__init__.py", "src/pkg/mod.py", "tools/run.py"]);
        let name = |file| module_name(&search_path(&paths, &[], &[], file, false), file);
        assert_eq!(name("src/pkg/__init__.py"), "pkg");
        assert_eq!(name("src/pkg/gone.py"), "pkg.gone");
        assert_eq!(name("tools/run.py"), "tools.run");
    }

    #[test]
    fn regular_package_beats_module_file() {
        let paths = Paths::new(&["main.py", "utils.py", "utils/__init__.py"]);
        assert_eq!(
            paths.absolute("main.py", "utils"),
            ModuleLoc::File("utils/__init__.py".into())
        );
    }

    #[test]
    fn module_file_beats_namespace_directory() {
        let paths = Paths::new(&["main.py", "utils.py", "utils/helpers.py"]);
        assert_eq!(
            paths.absolute("main.py", "utils"),
            ModuleLoc::File("utils.py".into())
        );
        assert_eq!(
            paths.absolute("main.py", "utils.helpers"),
            ModuleLoc::Missing
        );
    }

    #[test]
    fn relative_levels_stop_at_top_level_package() {
        let paths = Paths::new(&["pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/m.py"]);
        let search = search_path(&paths, &[], &[], "pkg/sub/m.py", false);
        let base = |level| relative_package(&search, "pkg/sub/m.py", level);
        assert_eq!(base(1).as_deref(), Some("pkg.sub"));
        assert_eq!(base(2).as_deref(), Some("pkg"));
        assert_eq!(base(3), None);
    }

    #[test]
    fn search_paths_per_file() {
        let paths = Paths::new(&[
            "src/app/__init__.py",
            "tools/sub/src/lib/__init__.py",
            "tools/sub/tests/test_lib.py",
            "tools/sub/tests/unit/__init__.py",
            "tools/sub/tests/unit/test_deep.py",
        ]);
        let subs = ["tools/sub".to_string()];
        let extra = ["vendor".to_string()];
        let search = |file, is_test| search_path(&paths, &subs, &extra, file, is_test);
        assert_eq!(
            search("src/app/__init__.py", false),
            SearchPath {
                roots: vec!["".into(), "src".into(), "vendor".into()],
                own: "src".into(),
                fallback: None,
            }
        );
        assert_eq!(
            search("tools/sub/tests/unit/test_deep.py", true),
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
            search("tools/sub/tests/test_lib.py", false),
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
