//! The rules compiler: `rules/*.dl` in, the Rust the engine includes as
//! `OUT_DIR/rules.rs` out (a new relation is a new
//! rules file and nothing else). The engine's build script reads the files
//! and calls [`compile`]; a mistake in the rules comes back as an [`Error`]
//! that names the file and line.
//!
//! A rules file holds crepe syntax: relation declarations
//! (`@input`/`@output`/plain `struct Name(pub Type, ...);`, each preceded by
//! a `/// Name(arg, ...): what it means` doc line) and rules
//! (`Head(..) <- Body, ...;`). `//` comments are kept out of the program,
//! except `// stage: resolve|classes|file|project|report`, which says when
//! the file's rules run (`project` if absent).
//!
//! Each stage is its own crepe program: it reads base facts and the
//! relations of earlier stages as inputs and derives its own. The engine
//! runs `resolve` once over all files, then `classes` once over all files
//! (on the `resolve` tuples its declarations name), `file` once per file
//! (so an edit re-runs one file's rules), `project` and then `report` once
//! over all files. A reference program with every rule in one block is
//! generated too, for the test that checks the stages derive exactly what
//! it derives.
//!
//! What is the same for every set of rules (how tuples are held, merged,
//! selected) is hand-written Rust in the engine (`datalog/tuples.rs`); the
//! generated code holds only what depends on the rules.

// What other crates can reach is declared `pub`; everything else says
// `pub(crate)`, so a signature tells a reader whether it is the API.
#![warn(unreachable_pub)]

mod clauses;
mod error;
#[cfg(test)]
mod fixture;
mod generate;
mod parse;
pub mod sources;
mod stages;

pub use error::{Error, Location, Problem};

/// One rules file: its name as explanations cite it (`rules/NAME.dl`) and
/// its text.
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    pub file: &'a str,
    pub text: &'a str,
}

/// The Rust for these rules files, read in the order given.
pub fn compile(sources: &[Source<'_>]) -> Result<String, Error> {
    let rules = parse::Rules::parse(sources)?;
    let plans = rules
        .rules
        .iter()
        .map(|rule| clauses::Plan::of(rule, &rules))
        .collect::<Result<Vec<_>, _>>()?;
    let stages = stages::plan(&rules, &plans)?;
    Ok(generate::rust(&rules, &plans, &stages))
}

#[cfg(test)]
mod tests {
    use super::{Source, compile};
    use std::path::Path;

    /// The workspace's `rules/*.dl`, named as the engine's build script
    /// names them.
    fn real_rules() -> Vec<(String, String)> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../rules");
        let mut files: Vec<(String, String)> = std::fs::read_dir(&dir)
            .expect("the workspace's rules/")
            .map(|entry| entry.expect("a rules/ entry").path())
            .filter(|path| path.extension().is_some_and(|e| e == "dl"))
            .map(|path| {
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                let text = std::fs::read_to_string(&path).expect("a readable rules file");
                (format!("rules/{name}"), text)
            })
            .collect();
        files.sort();
        files
    }

    fn sources(files: &[(String, String)]) -> Vec<Source<'_>> {
        files
            .iter()
            .map(|(file, text)| Source { file, text })
            .collect()
    }

    #[test]
    fn the_workspace_rules_compile() {
        let files = real_rules();
        let rust = compile(&sources(&files)).unwrap_or_else(|e| panic!("{e}"));
        for stage in ["RESOLVE", "CLASSES", "FILE", "PROJECT", "REPORT"] {
            assert!(rust.contains(&format!("pub const {stage}: StageProgram")));
        }
    }

    /// Invariant 8: a relation added as one more rules file, with nothing
    /// else changed, gets its struct, its accessor, its place in the tables
    /// and in the program of its stage.
    #[test]
    fn a_new_rules_file_is_all_a_new_relation_needs() {
        let mut files = real_rules();
        let before = compile(&sources(&files)).unwrap_or_else(|e| panic!("{e}"));
        files.push((
            "rules/zz_probe.dl".to_string(),
            "// A probe.\n// stage: file\n\n/// Probe(file): file imports something.\n@output\npub struct Probe(pub Node);\n\nProbe(f) <- Imports(f, _, _);\n".to_string(),
        ));
        let rust = compile(&sources(&files)).unwrap_or_else(|e| panic!("{e}"));
        let derived = before.matches("relation_struct!(derived ").count();
        for wanted in [
            format!("relation_struct!(derived Probe(Node 0), {derived}, probe, probe_mut);"),
            "    Probe(Vec<Probe>),".to_string(),
            "            Tuples::Probe($t) => $body,".to_string(),
            r#"    RelationInfo { name: "Probe", kind: RelationKind::Output, types: &["Node"], args: &["file"], doc: "file imports something.", file: "rules/zz_probe.dl", line: 6 },"#.to_string(),
            r#"    RuleInfo { head: "Probe", text: "Probe(f) <- Imports(f, _, _);", file: "rules/zz_probe.dl", line: 8 },"#.to_string(),
            "        Tuples::Probe(sorted(probe.into_iter().map(|t| Probe(t.0)))),".to_string(),
        ] {
            assert!(rust.contains(&wanted), "no `{wanted}`");
        }
        // In the file stage's program, and the reference's.
        let file_stage = rust
            .split("mod stage_file {")
            .nth(1)
            .and_then(|rest| rest.split("mod stage_project {").next())
            .expect("the file stage");
        assert!(file_stage.contains("@output\n#[derive(Debug)]\npub struct Probe(pub Node);"));
        assert!(file_stage.contains("\nProbe(f) <- Imports(f, _, _);\n"));
        assert_eq!(rust.matches("Probe(f) <- Imports(f, _, _);").count(), 3);
    }
}
