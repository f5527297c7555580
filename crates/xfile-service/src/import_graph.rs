//! The first stage of an index on its own: each file's imports, to the
//! module file (or marker) each statement names. It needs the module tree
//! and the texts of the files asked about, not the member-level model, so
//! on a tree with no cache it costs a fraction of an index (`xfile deps
//! --imports`, `xfile dependents --imports`).

use std::path::Path;

use xfile_engine::{Change, Engine, Reference};
use xfile_workspace::PathError;

use crate::model::Relationship;
use crate::{Gathered, indexed_file, relationships};

/// The import relationships whose source is `file` (root-relative or
/// absolute): [`crate::Service::dependencies`]' imports, without what
/// following re-exports adds (`target_line`, `metadata.defined_in`). Only
/// `file`'s text is parsed.
pub fn dependencies(root: &Path, file: &str) -> Result<Vec<Relationship>, PathError> {
    let (engine, parsed) = open(root, file, |_, _, _| false)?;
    Ok(relationships::render(
        &engine,
        &engine.imports_from(&parsed[0]),
    ))
}

/// The import relationships whose target is the module `file`. No
/// re-export is followed, so an import of a name `file` defines through a
/// package's `__init__.py` is not among them (it is in
/// [`crate::Service::dependents`]). Only the texts that may name the module
/// are parsed ([`may_import`]).
pub fn dependents(root: &Path, file: &str) -> Result<Vec<Relationship>, PathError> {
    let (engine, parsed) = open(root, file, may_import)?;
    // Only the parsed files have imports to read.
    let imports: Vec<Reference> = parsed
        .iter()
        .flat_map(|source| engine.imports_from(source))
        .collect();
    // Interned while the imports were made, if anything names it (the
    // asked file comes first in `parsed`).
    let Some(node) = engine.interner().find_node(&parsed[0]) else {
        return Ok(Vec::new());
    };
    let references: Vec<Reference> = imports
        .into_iter()
        .filter(|r| r.target == node && r.source != node)
        .collect();
    Ok(relationships::render(&engine, &references))
}

/// Whether `text` may hold an import of the module file `target`: every
/// import statement, `__import__` or `import_module` string names the
/// module's last component as a whole word, but for `from . import name`
/// (and `from ..`) in the package's own files, which names its
/// `__init__.py` by its place alone.
fn may_import(target: &str, path: &str, text: &str) -> bool {
    let mut parts = target.trim_end_matches(".py").rsplit('/');
    let last = match parts.next() {
        Some("__init__") => match parts.next() {
            Some(package) => package,
            None => return true,
        },
        Some(module) => module,
        None => return true,
    };
    let is_name = |c: char| c.is_alphanumeric() || c == '_';
    let names_it = text.match_indices(last).any(|(at, _)| {
        !text[..at].ends_with(is_name) && !text[at + last.len()..].starts_with(is_name)
    });
    // A relative import reaches no package above the importing file's.
    let package = target.trim_end_matches("__init__.py");
    names_it
        || target.ends_with("__init__.py") && path.starts_with(package) && has_relative_import(text)
}

/// Whether `text` has `from` followed by a dot, with only blanks and line
/// continuations between: the start of every relative import (and of some
/// comments and strings, which only cost a parse).
fn has_relative_import(text: &str) -> bool {
    text.match_indices("from").any(|(at, word)| {
        text[at + word.len()..]
            .trim_start_matches([' ', '\t', '\x0c', '\\', '\r', '\n'])
            .starts_with('.')
    })
}

/// The engine after the first stage: every file in the module tree, no
/// rule run, and parsed only `file` and the texts `parse` takes (given
/// `file` root-relative, then a file's path and text). Returns it with the
/// parsed files, root-relative, `file` first.
fn open(
    root: &Path,
    file: &str,
    parse: impl Fn(&str, &str, &str) -> bool,
) -> Result<(Engine, Vec<String>), PathError> {
    let gathered = Gathered::read(root, &|_| {})?;
    let relative = indexed_file(&gathered.root, file, |relative| {
        gathered.files.iter().any(|(path, _)| path == relative)
    })?;
    // The other files take part as paths only: an import resolves on the
    // module tree, never on the text of the module it names.
    let mut parsed = vec![relative.clone()];
    let files = gathered.files.into_iter().map(|(path, text)| {
        if path == relative {
            return (path, text);
        }
        if parse(&relative, &path, &text) {
            parsed.push(path.clone());
            return (path, text);
        }
        (path, String::new())
    });
    let files = Change::texts(files).files;
    let mut engine = Engine::new(gathered.config.extra_search_paths.clone());
    engine.apply_files(Change {
        files,
        ..gathered.settings
    });
    Ok((engine, parsed))
}

#[cfg(test)]
mod tests {
    use super::may_import;

    #[test]
    fn a_text_may_import_a_module_it_names_as_a_word_or_its_package_relatively() {
        let cases = [
            (
                "app/base.py",
                "app/x.py",
                "from app.base import Model\n",
                true,
            ),
            (
                "app/base.py",
                "app/x.py",
                "import_module('app.base')\n",
                true,
            ),
            (
                "app/base.py",
                "app/x.py",
                "from .base import (\n    Model,\n)\n",
                true,
            ),
            (
                "app/base.py",
                "app/x.py",
                "from app.database import base_url\n",
                false,
            ),
            ("app/base.py", "app/x.py", "from . import models\n", false),
            (
                "app/__init__.py",
                "app/x.py",
                "from . import models\n",
                true,
            ),
            (
                "app/__init__.py",
                "app/sub/y.py",
                "from \\\n  .. import models\n",
                true,
            ),
            (
                "app/__init__.py",
                "lib/y.py",
                "from . import models\n",
                false,
            ),
            ("app/__init__.py", "lib/y.py", "import apps\n", false),
            ("__init__.py", "lib/y.py", "x = 1\n", true),
        ];
        for (target, path, text, expected) in cases {
            assert_eq!(
                may_import(target, path, text),
                expected,
                "{target} in {text:?}"
            );
        }
    }
}
