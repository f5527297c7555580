//! The first stage of an index on its own: each file's imports, to the
//! module file (or marker) each statement names. It needs the module tree
//! and the texts of the files asked about, not the member-level model, so
//! on a tree with no cache it costs a fraction of an index (`xfile deps
//! --imports`, `xfile dependents --imports`).

use std::path::Path;

use xfile_engine::{Change, Engine, Reference};
use xfile_workspace::{self as workspace, PathError};

use crate::model::Relationship;
use crate::{Gathered, relationships};

/// The import relationships whose source is `file` (root-relative or
/// absolute): [`crate::Service::dependencies`]' imports, without what
/// following re-exports adds (`target_line`, `metadata.defined_in`). Only `file`'s text is parsed.
pub fn dependencies(root: &Path, file: &str) -> Result<Vec<Relationship>, PathError> {
    let (engine, file) = open(root, file, false)?;
    Ok(relationships::render(&engine, &engine.imports_from(&file)))
}

/// The import relationships whose target is the module `file`: every
/// file's text is parsed, and no re-export is followed, so an import of a
/// name `file` defines through a package's `__init__.py` is not among them
/// (it is in [`crate::Service::dependents`]).
pub fn dependents(root: &Path, file: &str) -> Result<Vec<Relationship>, PathError> {
    let (engine, file) = open(root, file, true)?;
    let imports: Vec<Reference> = engine
        .paths()
        .flat_map(|source| engine.imports_from(source))
        .collect();
    // Interned while the imports were made, if anything names it.
    let Some(node) = engine.interner().find_node(&file) else {
        return Ok(Vec::new());
    };
    let references: Vec<Reference> = imports
        .into_iter()
        .filter(|r| r.target == node && r.source != node)
        .collect();
    Ok(relationships::render(&engine, &references))
}

/// The engine after the first stage: every file in the module tree, the
/// text of `file` parsed (every file's with `every_text`), no rule run.
/// Returns it with `file` root-relative.
fn open(root: &Path, file: &str, every_text: bool) -> Result<(Engine, String), PathError> {
    let gathered = Gathered::read(root, &|_| {})?;
    let relative = workspace::resolve_user_path(&gathered.root, file)?;
    if !gathered.files.iter().any(|(path, _)| *path == relative) {
        return Err(
            if !relative.ends_with(".py") && gathered.root.join(&relative).is_file() {
                PathError::NotPython(file.to_string())
            } else {
                PathError::NotFound(format!("{file} (not an indexed Python file)"))
            },
        );
    }
    // The other files take part as paths only: an import resolves on the
    // module tree, never on the text of the module it names.
    let files = gathered.files.into_iter().map(|(path, text)| {
        let text = if every_text || path == relative {
            text
        } else {
            String::new()
        };
        (path, text)
    });
    let mut engine = Engine::new(gathered.config.extra_search_paths.clone());
    engine.apply_files(Change {
        files: Change::texts(files).files,
        ..gathered.settings
    });
    Ok((engine, relative))
}
