//! The project's pytest settings that say which files are tests, read
//! statically: pytest is never imported or run. Files are
//! tried in pytest's own order (pytest.ini, .pytest.ini, pyproject.toml,
//! tox.ini, setup.cfg) and the first one with a pytest section wins, as in
//! pytest; only `testpaths` and `python_files` are taken from it.

use std::path::Path;

use configparser::ini::Ini;

/// Where a setting came from and what it says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PytestConfig {
    /// The file the settings were read from, if any has a pytest section.
    pub source: Option<&'static str>,
    pub python_files: Vec<String>,
    pub testpaths: Vec<String>,
}

#[derive(Clone, Copy)]
enum Format {
    /// An INI file and the section pytest reads in it.
    Ini(&'static str),
    /// `pyproject.toml`, `[tool.pytest.ini_options]`.
    Toml,
}

const FILES: &[(&str, Format)] = &[
    ("pytest.ini", Format::Ini("pytest")),
    (".pytest.ini", Format::Ini("pytest")),
    ("pyproject.toml", Format::Toml),
    ("tox.ini", Format::Ini("pytest")),
    ("setup.cfg", Format::Ini("tool:pytest")),
];

/// The files (at the root) pytest settings may be read from.
pub fn settings_files() -> impl Iterator<Item = &'static str> {
    FILES.iter().map(|(file, _)| *file)
}

/// Whether `name` is a file (at the root) that pytest settings are read from.
pub fn is_settings_file(name: &std::ffi::OsStr) -> bool {
    FILES.iter().any(|(file, _)| name == *file)
}

/// Reads the root's pytest configuration. Problems (unreadable or
/// malformed files, invalid globs) come back as messages and never stop
/// indexing: the default test patterns still apply.
pub fn load(root: &Path) -> (PytestConfig, Vec<(String, String)>) {
    let mut problems = Vec::new();
    for &(name, format) in FILES {
        let text = match super::read::read_settings(root, name) {
            Ok(Some(text)) => text,
            Ok(None) => continue,
            Err(why) => {
                problems.push((
                    name.to_string(),
                    format!("{why}; its pytest settings are ignored"),
                ));
                continue;
            }
        };
        match parse(&text, format) {
            Ok(Some((python_files, testpaths))) => {
                let mut config = PytestConfig {
                    source: Some(name),
                    python_files,
                    testpaths,
                };
                for list in [&mut config.python_files, &mut config.testpaths] {
                    list.retain(|pattern| match globset::Glob::new(pattern) {
                        Ok(_) => true,
                        Err(error) => {
                            problems.push((name.to_string(), format!("{name}: pytest pattern `{pattern}` is not a valid glob ({error}); ignored")));
                            false
                        }
                    });
                }
                return (config, problems);
            }
            Ok(None) => {}
            Err(error) => problems.push((
                name.to_string(),
                format!("{name}: cannot parse it ({error}); its pytest settings are ignored"),
            )),
        }
    }
    (PytestConfig::default(), problems)
}

type Settings = (Vec<String>, Vec<String>);

/// `python_files` and `testpaths` of the pytest section, `None` when the
/// file has no such section.
fn parse(text: &str, format: Format) -> Result<Option<Settings>, String> {
    match format {
        Format::Ini(section) => {
            let mut ini = Ini::new();
            // Values over indented lines, as Python's configparser reads them.
            ini.set_multiline(true);
            let sections = ini.read(text.to_string())?;
            Ok(sections.get(section).map(|properties| {
                let list = |key: &str| {
                    properties
                        .get(key)
                        .and_then(Option::as_deref)
                        .map(split)
                        .unwrap_or_default()
                };
                (list("python_files"), list("testpaths"))
            }))
        }
        Format::Toml => {
            let table: toml::Table = text
                .parse()
                .map_err(|e: toml::de::Error| e.message().to_string())?;
            let options = table
                .get("tool")
                .and_then(|tool| tool.get("pytest"))
                .and_then(|pytest| pytest.get("ini_options"));
            Ok(options.map(|options| {
                let list = |key| options.get(key).map(toml_list).unwrap_or_default();
                (list("python_files"), list("testpaths"))
            }))
        }
    }
}

/// An INI list: whitespace separated, possibly over several lines.
fn split(value: &str) -> Vec<String> {
    value
        .split_whitespace()
        .map(|item| item.trim_matches(['"', '\'']).to_string())
        .filter(|item| !item.is_empty())
        .collect()
}

/// A TOML list of strings, or one string holding a whitespace-separated list.
fn toml_list(value: &toml::Value) -> Vec<String> {
    match value {
        toml::Value::String(text) => split(text),
        toml::Value::Array(items) => items
            .iter()
            .filter_map(|item| item.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(text: &str, format: Format) -> Settings {
        parse(text, format).unwrap().unwrap()
    }

    #[test]
    fn pytest_ini_multiline_testpaths_dd3() {
        let text = "[pytest]\npython_files = check_*.py  *_spec.py\ntestpaths =\n    integration\n    e2e\n";
        assert_eq!(
            settings(text, Format::Ini("pytest")),
            (
                vec!["check_*.py".to_string(), "*_spec.py".to_string()],
                vec!["integration".to_string(), "e2e".to_string()]
            )
        );
    }

    #[test]
    fn pyproject_ini_options_as_list_or_string() {
        let text = "[tool.pytest.ini_options]\ntestpaths = [\"integration\"]\npython_files = \"check_*.py\"\n";
        assert_eq!(
            settings(text, Format::Toml),
            (
                vec!["check_*.py".to_string()],
                vec!["integration".to_string()]
            )
        );
        assert_eq!(
            parse("[tool.black]\nline-length = 88\n", Format::Toml),
            Ok(None)
        );
    }

    #[test]
    fn setup_cfg_reads_tool_pytest_and_ignores_other_sections() {
        let text = "[metadata]\nname = x\n[tool:pytest]\ntestpaths = checks\n";
        assert_eq!(
            settings(text, Format::Ini("tool:pytest")),
            (vec![], vec!["checks".to_string()])
        );
        assert_eq!(
            parse("[flake8]\nmax-line-length = 99\n", Format::Ini("pytest")),
            Ok(None)
        );
    }

    #[test]
    fn malformed_toml_is_an_error_not_a_panic() {
        assert!(parse("[tool.pytest.ini_options\n", Format::Toml).is_err());
    }
}
