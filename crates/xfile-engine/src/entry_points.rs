//! Entry points the project declares in its `pyproject.toml` files
//! (`[project.entry-points."group"]`), read statically from their text,
//! and the project-level base facts they give: `EntryPointDecl` for each,
//! and `EntryPointTarget` when its object reference names a module of the
//! project. `rules/plugin_keys.dl` follows the name to its definition.
//! `[project.scripts]` and `[project.gui-scripts]` are commands, not
//! groups a host loads, and are left out.

use toml::de::{DeTable, DeValue};

use super::datalog::{EntryPointDecl, EntryPointTarget, InputFact};
use super::intern::Interner;
use super::modules::ModuleLoc;

/// A source line quoted for an entry point is cut to this many characters.
const LINE_TEXT: usize = 200;

/// One declared entry point.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EntryPointSpec {
    /// The declaring `pyproject.toml`, root-relative.
    pub pyproject: String,
    pub group: String,
    pub name: String,
    /// The object reference as written: `pkg.mod:attr.path` or `pkg.mod`.
    pub object: String,
    /// 1-based line of the declaration.
    pub line: u32,
    /// That line, trimmed and bounded.
    pub text: String,
}

impl EntryPointSpec {
    /// The module and the first name of the attribute path the object
    /// reference names, if it names an attribute (extras such as
    /// `mod:attr [extra]` dropped).
    fn target(&self) -> Option<(&str, &str)> {
        let (module, attribute) = self.object.split_once(':')?;
        let attribute = attribute.split('[').next().unwrap_or_default().trim();
        let first = attribute.split('.').next().unwrap_or_default();
        let module = module.trim();
        let valid = |s: &str| !s.is_empty() && s.split('.').all(is_identifier);
        (valid(module) && is_identifier(first)).then_some((module, first))
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// The entry points `text`, the contents of `pyproject` (root-relative),
/// declares, in file order; an error message if it is not valid TOML.
/// Entries whose value is not a string are skipped.
pub fn parse(pyproject: &str, text: &str) -> Result<Vec<EntryPointSpec>, String> {
    let document = DeTable::parse(text).map_err(|e| e.to_string())?;
    let mut specs = Vec::new();
    let Some(groups) = table(document.get_ref(), "project").and_then(|p| table(p, "entry-points"))
    else {
        return Ok(specs);
    };
    for (group, entries) in groups {
        let DeValue::Table(entries) = entries.get_ref() else {
            continue;
        };
        for (name, object) in entries {
            let DeValue::String(object_text) = object.get_ref() else {
                continue;
            };
            let line = line_of(text, object.span().start);
            specs.push(EntryPointSpec {
                pyproject: pyproject.to_string(),
                group: group.get_ref().to_string(),
                name: name.get_ref().to_string(),
                object: object_text.to_string(),
                line,
                text: line_text(text, line),
            });
        }
    }
    specs.sort_by_key(|s| s.line);
    Ok(specs)
}

fn table<'t, 'i>(parent: &'t DeTable<'i>, key: &str) -> Option<&'t DeTable<'i>> {
    parent
        .iter()
        .find(|(k, _)| k.get_ref() == key)
        .and_then(|(_, v)| match v.get_ref() {
            DeValue::Table(t) => Some(t),
            _ => None,
        })
}

fn line_of(text: &str, offset: usize) -> u32 {
    let before = text.get(..offset).unwrap_or(text);
    u32::try_from(before.matches('\n').count() + 1).unwrap_or(u32::MAX)
}

fn line_text(text: &str, line: u32) -> String {
    let found = text.lines().nth(line.saturating_sub(1) as usize);
    found
        .unwrap_or_default()
        .trim()
        .chars()
        .take(LINE_TEXT)
        .collect()
}

/// The base facts of `specs`; `find` resolves an absolute module name as
/// imports from the declaring pyproject's directory would.
pub(crate) fn facts(
    interner: &Interner,
    specs: &[EntryPointSpec],
    find: impl Fn(&EntryPointSpec, &str) -> ModuleLoc,
) -> Vec<InputFact> {
    let mut facts = Vec::new();
    for spec in specs {
        let pyproject = interner.node(&spec.pyproject);
        let group = interner.sym(&spec.group);
        let name = interner.sym(&spec.name);
        facts.push(InputFact::EntryPointDecl(EntryPointDecl(
            pyproject, group, name,
        )));
        let Some((module, attribute)) = spec.target() else {
            continue;
        };
        if let ModuleLoc::File(file) = find(spec, module) {
            facts.push(InputFact::EntryPointTarget(EntryPointTarget(
                pyproject,
                group,
                name,
                interner.node(&file),
                interner.sym(attribute),
            )));
        }
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_read_with_their_lines_and_other_tables_are_not() {
        let text = "[project]\nname = \"x\"\n\n[project.scripts]\ncli = \"x.cli:main\"\n\n\
                    [project.entry-points.\"shop.plugins\"]\nship = \"ship.plugin:Plugin.run [fast]\"\n\
                    mod_only = \"ship.hooks\"\nbad = 3\n";
        let specs = parse("sub/pyproject.toml", text).expect("valid TOML");
        let found: Vec<_> = specs
            .iter()
            .map(|s| format!("{} {} {} {:?}", s.group, s.name, s.line, s.target()))
            .collect();
        assert_eq!(
            found,
            [
                "shop.plugins ship 8 Some((\"ship.plugin\", \"Plugin\"))",
                "shop.plugins mod_only 9 None",
            ]
        );
        assert_eq!(specs[0].text, "ship = \"ship.plugin:Plugin.run [fast]\"");
        assert!(parse("pyproject.toml", "[project\n").is_err());
    }
}
