//! Where a project keeps its packages, as its packaging metadata says
//! (`lib/` in SQLAlchemy), and the directories its test configuration puts
//! on `sys.path` (`test_apps/` in flask's `conftest.py`): search roots for
//! absolute imports that no layout rule finds. Only literal values are
//! read; nothing is run.

use std::collections::BTreeSet;
use std::path::Path;

use super::discover::{Notice, NoticeKind, SourceText};

/// A search root and where it was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackageRoot {
    /// Root-relative directory.
    pub dir: String,
    /// The file and the setting: `pyproject.toml [tool.setuptools.packages.find] where`.
    pub from: String,
}

/// The package roots the metadata files of the sub-projects `markers`
/// (their `pyproject.toml`, `setup.cfg`, `setup.py`, root-relative) and the
/// `conftest.py` files among `sources` declare, existing directories under
/// `root` only, each once; and a notice naming them.
pub fn find(
    root: &Path,
    markers: &BTreeSet<String>,
    sources: &[SourceText],
) -> (Vec<PackageRoot>, Option<Notice>) {
    let mut found: Vec<PackageRoot> = Vec::new();
    let mut dirs: BTreeSet<String> = markers.iter().map(|m| parent(m).to_string()).collect();
    // The root's own metadata counts whether or not it is a marker.
    dirs.insert(String::new());
    for dir in &dirs {
        let read = |name: &str| -> Option<String> {
            let path = root.join(dir).join(name);
            crate::read_config_file(&path).ok().flatten()
        };
        let file = |name: &str| join(dir, name);
        if let Some(text) = read("pyproject.toml") {
            for (declared, setting) in from_pyproject(&text) {
                found.push(PackageRoot {
                    dir: join(dir, &declared),
                    from: format!("{} {setting}", file("pyproject.toml")),
                });
            }
        }
        if let Some(text) = read("setup.cfg") {
            for (declared, setting) in from_setup_cfg(&text) {
                found.push(PackageRoot {
                    dir: join(dir, &declared),
                    from: format!("{} {setting}", file("setup.cfg")),
                });
            }
        }
        if let Some(text) = read("setup.py") {
            for (declared, setting) in from_setup_py(&text) {
                found.push(PackageRoot {
                    dir: join(dir, &declared),
                    from: format!("{} {setting}", file("setup.py")),
                });
            }
        }
    }
    for source in sources
        .iter()
        .filter(|s| s.path == "conftest.py" || s.path.ends_with("/conftest.py"))
    {
        for declared in from_conftest(&source.text) {
            found.push(PackageRoot {
                dir: join(parent(&source.path), &declared),
                from: format!("{} sys.path", source.path),
            });
        }
    }
    let mut seen = BTreeSet::new();
    found.retain(|r| {
        let inside = !r.dir.is_empty()
            && !r.dir.split('/').any(|part| part == ".." || part == ".")
            && root.join(&r.dir).is_dir();
        inside && seen.insert(r.dir.clone())
    });
    let notice = (!found.is_empty()).then(|| Notice {
        path: found[0]
            .from
            .split(' ')
            .next()
            .unwrap_or_default()
            .to_string(),
        kind: NoticeKind::PackageRoots,
        message: format!(
            "search roots from packaging and test settings: {}",
            found
                .iter()
                .map(|r| format!("{} ({})", r.dir, r.from))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    });
    (found, notice)
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// `dir/name` with `.`, `./` and trailing slashes taken off; `dir` alone for `.`.
fn join(dir: &str, name: &str) -> String {
    let name = name.trim().trim_start_matches("./").trim_end_matches('/');
    match (dir.is_empty(), name.is_empty() || name == ".") {
        (_, true) => dir.to_string(),
        (true, false) => name.to_string(),
        (false, false) => format!("{dir}/{name}"),
    }
}

/// Package directories a `pyproject.toml` declares, with the setting.
fn from_pyproject(text: &str) -> Vec<(String, &'static str)> {
    let Ok(table) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let get = |path: &[&str]| -> Option<&toml::Value> {
        let mut value = table.get(path[0])?;
        for key in &path[1..] {
            value = value.get(key)?;
        }
        Some(value)
    };
    let strings = |value: &toml::Value| -> Vec<String> {
        match value {
            toml::Value::String(s) => vec![s.clone()],
            toml::Value::Array(items) => items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        }
    };
    let mut found = Vec::new();
    if let Some(dir) = get(&["tool", "setuptools", "package-dir", ""]).and_then(|v| v.as_str()) {
        found.push((dir.to_string(), "[tool.setuptools] package-dir"));
    }
    if let Some(value) = get(&["tool", "setuptools", "packages", "find", "where"]) {
        for dir in strings(value) {
            found.push((dir, "[tool.setuptools.packages.find] where"));
        }
    }
    if let Some(value) = get(&["tool", "hatch", "build", "targets", "wheel", "packages"]) {
        for package in strings(value) {
            found.push((
                parent(&package).to_string(),
                "[tool.hatch.build.targets.wheel] packages",
            ));
        }
    }
    if let Some(toml::Value::Array(packages)) = get(&["tool", "poetry", "packages"]) {
        for package in packages {
            if let Some(from) = package.get("from").and_then(|v| v.as_str()) {
                found.push((from.to_string(), "[tool.poetry] packages from"));
            }
        }
    }
    if let Some(dir) = get(&["tool", "pdm", "build", "package-dir"]).and_then(|v| v.as_str()) {
        found.push((dir.to_string(), "[tool.pdm.build] package-dir"));
    }
    found
}

/// Package directories a `setup.cfg` declares: `[options] package_dir`'s
/// root entry (`=lib`) and `[options.packages.find] where`.
fn from_setup_cfg(text: &str) -> Vec<(String, &'static str)> {
    let mut found = Vec::new();
    let mut section = String::new();
    let mut key = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || trimmed.starts_with(';') || trimmed.is_empty() {
            continue;
        }
        if let Some(name) = trimmed.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            section = name.trim().to_string();
            key.clear();
            continue;
        }
        // A continuation line belongs to the key above it.
        let (entry_key, value) = match line.starts_with([' ', '\t']) {
            true => (key.clone(), trimmed.to_string()),
            false => match trimmed.split_once('=') {
                Some((k, v)) => {
                    key = k.trim().to_string();
                    (key.clone(), v.trim().to_string())
                }
                None => continue,
            },
        };
        match (section.as_str(), entry_key.as_str()) {
            ("options", "package_dir") => {
                // `=lib`: the root package's directory.
                if let Some(dir) = value.strip_prefix('=').map(str::trim)
                    && !dir.is_empty()
                {
                    found.push((dir.to_string(), "[options] package_dir"));
                }
            }
            ("options.packages.find", "where") if !value.is_empty() => {
                found.push((value, "[options.packages.find] where"));
            }
            _ => {}
        }
    }
    found
}

/// Package directories a `setup.py` declares with literals:
/// `package_dir={"": "lib"}`, `find_packages("lib")`,
/// `find_packages(where="lib")`.
fn from_setup_py(text: &str) -> Vec<(String, &'static str)> {
    let mut found = Vec::new();
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let literal = |rest: &str| -> Option<String> {
        let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        let body = &rest[1..];
        let end = body.find(quote)?;
        Some(body[..end].to_string())
    };
    for (at, _) in compact.match_indices("package_dir={") {
        let rest = &compact[at + "package_dir={".len()..];
        for empty in ["\"\":", "'':"] {
            if let Some(value) = rest.strip_prefix(empty).and_then(literal) {
                found.push((value, "package_dir"));
            }
        }
    }
    for call in ["find_packages(", "find_namespace_packages("] {
        for (at, _) in compact.match_indices(call) {
            let rest = &compact[at + call.len()..];
            let rest = rest.strip_prefix("where=").unwrap_or(rest);
            if let Some(value) = literal(rest) {
                found.push((value, "find_packages where"));
            }
        }
    }
    found
}

/// Directories a `conftest.py` puts on `sys.path` with a literal name next
/// to itself: `sys.path.insert(0, os.path.join(os.path.dirname(__file__),
/// "apps"))`, `.append(...)`, `monkeypatch.syspath_prepend(...)`.
fn from_conftest(text: &str) -> Vec<String> {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let mut found = Vec::new();
    for call in ["sys.path.insert(", "sys.path.append(", "syspath_prepend("] {
        for (at, _) in compact.match_indices(call) {
            let rest = &compact[at + call.len()..];
            for beside in [
                "os.path.join(os.path.dirname(__file__),",
                "os.path.join(os.path.dirname(os.path.abspath(__file__)),",
                "str(Path(__file__).parent/",
                "Path(__file__).parent/",
            ] {
                let Some(at) = rest.find(beside) else {
                    continue;
                };
                // Only this call's argument: up to its closing parenthesis.
                if rest[..at].contains(')') {
                    continue;
                }
                let value = &rest[at + beside.len()..];
                let quote = value.chars().next();
                if let Some(q @ ('"' | '\'')) = quote
                    && let Some(end) = value[1..].find(q)
                {
                    found.push(value[1..1 + end].to_string());
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_metadata_format_is_read() {
        let pyproject = "[tool.setuptools.packages.find]\nwhere = [\"lib\"]\n\
                         [tool.poetry]\npackages = [{include = \"a\", from = \"src2\"}]\n\
                         [tool.hatch.build.targets.wheel]\npackages = [\"pkgs/b\"]\n";
        let dirs: Vec<String> = from_pyproject(pyproject).into_iter().map(|d| d.0).collect();
        assert_eq!(dirs, ["lib", "pkgs", "src2"]);
        let cfg = "[options]\npackage_dir =\n    =lib\n[options.packages.find]\nwhere = lib2\n";
        let dirs: Vec<String> = from_setup_cfg(cfg).into_iter().map(|d| d.0).collect();
        assert_eq!(dirs, ["lib", "lib2"]);
        let setup = "setup(package_dir={'': 'lib'}, packages=find_packages(where='lib'))";
        let dirs: Vec<String> = from_setup_py(setup).into_iter().map(|d| d.0).collect();
        assert_eq!(dirs, ["lib", "lib"]);
        let conftest = "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), \"apps\"))\n\
                        def f(monkeypatch):\n    monkeypatch.syspath_prepend(os.path.join(os.path.dirname(__file__), name))\n";
        assert_eq!(from_conftest(conftest), ["apps"]);
    }
}
