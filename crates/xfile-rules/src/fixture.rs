//! Small rules for the tests: one relation per stage, each read by the
//! next, so that a test changes one file and sees one mistake.

use crate::{Source, compile};

/// `rules/base.dl` and a file per stage, in the order they run.
pub(crate) const FILES: [(&str, &str); 6] = [
    (
        "rules/base.dl",
        "// Base facts.\n\n/// Fact(file, name): file names name.\n@input\npub struct Fact(pub Node, pub Sym);\n",
    ),
    (
        "rules/a_resolve.dl",
        "// stage: resolve\n\n/// Resolved(file, name): file names name.\n@output\npub struct Resolved(pub Node, pub Sym);\n\nResolved(f, n) <- Fact(f, n);\n",
    ),
    (
        "rules/b_classes.dl",
        "// stage: classes\n\n/// Classed(file, name): resolved.\nstruct Classed(pub Node, pub Sym);\n\nClassed(f, n) <- Resolved(f, n);\n",
    ),
    (
        "rules/c_file.dl",
        "// stage: file\n\n/// Filed(file): a file with a private name and no other fact.\n@output\npub struct Filed(pub Node);\n\nFiled(f) <- Classed(f, n), !Fact(f, _), (n.is_private());\n",
    ),
    (
        "rules/d_project.dl",
        "// stage: project\n\n/// Projected(file): filed.\n@output\npub struct Projected(pub Node);\n\nProjected(f) <- Filed(f);\n",
    ),
    (
        "rules/e_report.dl",
        "// stage: report\n\n/// Reported(file): projected.\n@output\npub struct Reported(pub Node);\n\nReported(f) <- Projected(f);\n",
    ),
];

/// [`FILES`] with `file`'s text replaced by `text` (or added, if no file
/// has that name), compiled.
pub(crate) fn compile_with(file: &str, text: &str) -> Result<String, crate::Error> {
    let mut sources: Vec<Source<'_>> = FILES
        .iter()
        .filter(|(name, _)| *name != file)
        .map(|(file, text)| Source { file, text })
        .collect();
    sources.push(Source { file, text });
    sources.sort_by_key(|s| s.file);
    compile(&sources)
}

/// The message the rules' author sees for `file` as `text`.
pub(crate) fn message(file: &str, text: &str) -> String {
    match compile_with(file, text) {
        Ok(_) => panic!("{file} compiles:\n{text}"),
        Err(error) => error.to_string(),
    }
}
