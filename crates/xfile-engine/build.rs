//! Compiles `rules/*.dl` into crepe programs plus a table of relations and
//! rules, so that every relation is queryable and every rule explainable by
//! name without hand-written adapter code (DESIGN §3, invariant 8).
//!
//! A rules file holds crepe syntax: relation declarations
//! (`@input`/`@output`/plain `struct Name(pub Type, ...);`, each optionally
//! preceded by a `/// Name(arg, ...): what it means` doc line) and rules
//! (`Head(..) <- Body, ...;`). `//` comments are kept out of the program,
//! except `// stage: resolve|classes|file|project|report`, which says when the
//! file's rules run (see `Stage`; `project` if absent).
//!
//! Each stage is its own crepe program: it reads base facts and the
//! relations of earlier stages as inputs and derives its own. The engine
//! runs `resolve` once over all files, then `classes` once over all files
//! (on the `resolve` tuples its declarations name), `file` once per file (so an edit
//! re-runs one file's rules), and `project` once over all files. A reference
//! program with every rule in one block is generated too, for the test that
//! checks the stages derive exactly what it derives.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

struct Relation {
    name: String,
    kind: &'static str,
    types: Vec<String>,
    args: Vec<String>,
    doc: String,
    file: String,
    line: usize,
}

struct Rule {
    head: String,
    text: String,
    file: String,
    line: usize,
    stage: Stage,
}

/// When a rule runs. `file` rules see one file's base facts, the
/// project-level facts and the earlier stages' tuples whose first argument
/// occurs in that file's facts; the others see everything. `report` runs
/// after `project`, so that whole-project results (cycles) are recomputed
/// only when what they rest on changed, not when a site moved. `classes`
/// runs after `resolve` on the class declarations and the resolution of the
/// names they mention, so a change to resolution that no declaration
/// mentions (an import added) does not re-run it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Stage {
    Resolve,
    Classes,
    File,
    Project,
    Report,
}

const STAGES: [Stage; 5] = [
    Stage::Resolve,
    Stage::Classes,
    Stage::File,
    Stage::Project,
    Stage::Report,
];

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Resolve => "resolve",
            Stage::Classes => "classes",
            Stage::File => "file",
            Stage::Project => "project",
            Stage::Report => "report",
        }
    }
}

fn main() {
    // The rules live at the workspace's root, beside the engine: a new
    // relation is a new file there and nothing else.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let rules_dir = root.join("rules");
    println!("cargo:rerun-if-changed={}", rules_dir.display());
    let mut paths: Vec<_> = std::fs::read_dir(&rules_dir)
        .expect("rules/ directory is missing")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "dl"))
        .collect();
    paths.sort();

    let mut program = String::new();
    let mut relations = Vec::new();
    let mut rules = Vec::new();
    for path in &paths {
        println!("cargo:rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(path).expect("unreadable rules file");
        // Named from the workspace's root, as explanations cite them.
        let file = format!(
            "rules/{}",
            path.file_name().unwrap_or_default().to_string_lossy()
        );
        parse_file(&file, &text, &mut program, &mut relations, &mut rules);
    }

    let mut out = String::new();
    writeln!(
        out,
        "/// Every rule in one program: the reference the stages are tested against.\npub mod reference {{\n    use super::*;\n    crepe::crepe! {{\n{program}\n    }}\n}}\n"
    )
    .unwrap();
    write_canonical(&mut out, &relations);
    write_tables(&mut out, &relations, &rules);
    write_inputs(&mut out, &relations);
    write_outputs(&mut out, &relations);
    write_stages(&mut out, &relations, &rules);
    write_plans(&mut out, &relations, &rules);

    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("rules.rs");
    std::fs::write(dest, out).unwrap();
    write_cache_keys(&root, &paths);
}

/// Hashes for the warm-start cache's key: the rules, the front end whose
/// output the cache holds (its sources and the locked parser versions), and
/// the engine that turns facts into the answers the cache keeps. A
/// different hash only costs a rebuild, so the std hasher suffices; nothing
/// adversarial is at stake.
fn write_cache_keys(root: &Path, rules: &[PathBuf]) {
    use std::hash::{DefaultHasher, Hasher};
    // Paths are hashed from the workspace's root, so a key does not depend
    // on where the checkout is.
    let hash_files = |paths: &[PathBuf]| {
        let mut hasher = DefaultHasher::new();
        for path in paths {
            let named = path.strip_prefix(root).unwrap_or(path);
            hasher.write(named.to_string_lossy().as_bytes());
            hasher.write(&std::fs::read(path).expect("unreadable source file"));
        }
        format!("{:016x}", hasher.finish())
    };
    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("unreadable source directory") {
            let path = entry.expect("unreadable source directory").path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let front_end_dir = root.join("crates/xfile-python");
    let lock = root.join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", front_end_dir.display());
    println!("cargo:rerun-if-changed={}", lock.display());
    let mut front_end = vec![lock];
    rust_files(&front_end_dir, &mut front_end);
    front_end.sort();
    let mut engine = front_end.clone();
    let engine_dir = root.join("crates/xfile-engine/src");
    println!("cargo:rerun-if-changed={}", engine_dir.display());
    rust_files(&engine_dir, &mut engine);
    engine.sort();
    println!("cargo:rustc-env=XFILE_RULES_HASH={}", hash_files(rules));
    println!(
        "cargo:rustc-env=XFILE_FRONT_END_HASH={}",
        hash_files(&front_end)
    );
    println!("cargo:rustc-env=XFILE_ENGINE_HASH={}", hash_files(&engine));
}

fn parse_file(
    file: &str,
    text: &str,
    program: &mut String,
    relations: &mut Vec<Relation>,
    rules: &mut Vec<Rule>,
) {
    let mut doc = String::new();
    let mut attribute: Option<&'static str> = None;
    let mut pending: Option<(usize, String)> = None;
    let mut stage = Stage::Project;
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.trim();
        if let Some(name) = line.strip_prefix("// stage:") {
            stage = match name.trim() {
                "resolve" => Stage::Resolve,
                "classes" => Stage::Classes,
                "file" => Stage::File,
                "project" => Stage::Project,
                "report" => Stage::Report,
                other => panic!(
                    "{file}:{line_no}: unknown stage `{other}`; use resolve, classes, file, project or report"
                ),
            };
            continue;
        }
        if let Some(rest) = line.strip_prefix("///") {
            doc = rest.trim().to_string();
            continue;
        }
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        if line == "@input" || line == "@output" {
            attribute = Some(if line == "@input" { "Input" } else { "Output" });
            continue;
        }
        if line.starts_with("pub struct") || line.starts_with("struct") {
            let relation = parse_struct(
                line,
                attribute.take(),
                std::mem::take(&mut doc),
                file,
                line_no,
            );
            // crepe takes attributes only after an `@` marker. Intermediate
            // relations are published to Rust too (crepe wants them `pub`
            // then), so explanations can show their tuples; the catalogue
            // keeps them intermediate.
            let marker = if relation.kind == "Input" {
                "@input"
            } else {
                "@output"
            };
            let fields: Vec<String> = relation.types.iter().map(|t| format!("pub {t}")).collect();
            writeln!(
                program,
                "{marker}\n#[derive(Debug, PartialOrd, Ord)]\npub struct {}({});",
                relation.name,
                fields.join(", ")
            )
            .unwrap();
            relations.push(relation);
            continue;
        }
        let (start, mut body) = pending.take().unwrap_or((line_no, String::new()));
        if !body.is_empty() {
            body.push(' ');
        }
        body.push_str(line);
        if body.ends_with(';') {
            let head = body
                .split('(')
                .next()
                .unwrap_or_default()
                .trim()
                .to_string();
            writeln!(program, "{body}").unwrap();
            rules.push(Rule {
                head,
                text: body,
                file: file.to_string(),
                line: start,
                stage,
            });
        } else {
            pending = Some((start, body));
        }
    }
    assert!(
        pending.is_none(),
        "{file}: unterminated rule at end of file"
    );
}

fn parse_struct(
    line: &str,
    kind: Option<&'static str>,
    doc: String,
    file: &str,
    line_no: usize,
) -> Relation {
    let after = line.split("struct").nth(1).unwrap_or_default();
    let name = after
        .split('(')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    let inner = after
        .split_once('(')
        .and_then(|(_, rest)| rest.rsplit_once(')'))
        .map(|(inner, _)| inner)
        .unwrap_or_default();
    let types: Vec<String> = inner
        .split(',')
        .map(|t| t.trim().trim_start_matches("pub ").trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    // `/// Name(a, b): meaning` names the arguments.
    let args = doc
        .strip_prefix(&format!("{name}("))
        .and_then(|rest| rest.split_once(')'))
        .map(|(args, _)| {
            args.split(',')
                .map(|a| a.trim().to_string())
                .collect::<Vec<_>>()
        })
        .filter(|args| args.len() == types.len())
        .unwrap_or_else(|| types.iter().map(|t| t.to_lowercase()).collect());
    let doc = doc
        .split_once("):")
        .map_or(doc.clone(), |(_, d)| d.trim().to_string());
    Relation {
        name,
        kind: kind.unwrap_or("Intermediate"),
        types,
        args,
        doc,
        file: file.to_string(),
        line: line_no,
    }
}

fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

fn write_tables(out: &mut String, relations: &[Relation], rules: &[Rule]) {
    writeln!(out, "/// Every relation declared in `rules/*.dl`.").unwrap();
    writeln!(out, "pub const RELATIONS: &[RelationInfo] = &[").unwrap();
    for r in relations {
        writeln!(
            out,
            "    RelationInfo {{ name: {:?}, kind: RelationKind::{}, types: &{:?}, args: &{:?}, doc: {:?}, file: {:?}, line: {} }},",
            r.name, r.kind, r.types, r.args, r.doc, r.file, r.line
        )
        .unwrap();
    }
    writeln!(out, "];\n").unwrap();
    writeln!(out, "/// Every rule in `rules/*.dl`, in program order.").unwrap();
    writeln!(out, "pub const RULES: &[RuleInfo] = &[").unwrap();
    for r in rules {
        writeln!(
            out,
            "    RuleInfo {{ head: {:?}, text: {:?}, file: {:?}, line: {} }},",
            r.head, r.text, r.file, r.line
        )
        .unwrap();
    }
    writeln!(out, "];\n").unwrap();
}

fn fields(r: &Relation, binding: &str) -> String {
    (0..r.types.len())
        .map(|i| format!("Value::from({binding}.{i})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `t.0, rename(t.1), ...`: a tuple's fields, each `Site` through `rename`.
fn renamed_fields(r: &Relation, binding: &str) -> String {
    r.types
        .iter()
        .enumerate()
        .map(|(i, t)| match t.as_str() {
            "Site" => format!("rename({binding}.{i})"),
            _ => format!("{binding}.{i}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `Name(t.0, t.1, ...)`: the same tuple as another struct of the same shape.
fn convert(path: &str, r: &Relation, binding: &str) -> String {
    let args: Vec<String> = (0..r.types.len())
        .map(|i| format!("{binding}.{i}"))
        .collect();
    format!("{path}{}({})", r.name, args.join(", "))
}

/// The relation types the rest of the crate uses; each crepe program has its
/// own copies, converted at its boundary.
fn write_canonical(out: &mut String, relations: &[Relation]) {
    for r in relations {
        let fields: Vec<String> = r.types.iter().map(|t| format!("pub {t}")).collect();
        writeln!(
            out,
            "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]\npub struct {}({});",
            r.name,
            fields.join(", ")
        )
        .unwrap();
    }
    writeln!(out).unwrap();
}

fn write_inputs(out: &mut String, relations: &[Relation]) {
    let inputs: Vec<_> = relations.iter().filter(|r| r.kind == "Input").collect();
    writeln!(out, "/// One base fact of any `@input` relation.").unwrap();
    writeln!(
        out,
        "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]"
    )
    .unwrap();
    writeln!(out, "pub enum InputFact {{").unwrap();
    for r in &inputs {
        writeln!(out, "    {0}({0}),", r.name).unwrap();
    }
    writeln!(out, "}}\n").unwrap();
    writeln!(out, "impl InputFact {{").unwrap();
    writeln!(
        out,
        "    pub fn relation(&self) -> &'static str {{\n        match self {{"
    )
    .unwrap();
    for r in &inputs {
        writeln!(out, "            InputFact::{0}(_) => {0:?},", r.name).unwrap();
    }
    writeln!(out, "        }}\n    }}\n").unwrap();
    writeln!(
        out,
        "    pub fn values(&self) -> Vec<Value> {{\n        match self {{"
    )
    .unwrap();
    for r in &inputs {
        writeln!(
            out,
            "            InputFact::{}(t) => vec![{}],",
            r.name,
            fields(r, "t")
        )
        .unwrap();
    }
    writeln!(out, "        }}\n    }}\n").unwrap();
    writeln!(
        out,
        "    /// The same fact with each of its sites renamed by `rename`.\n    pub fn map_sites(self, rename: impl Fn(Site) -> Site) -> InputFact {{\n        match self {{"
    )
    .unwrap();
    for r in &inputs {
        writeln!(
            out,
            "            InputFact::{0}(t) => InputFact::{0}({0}({1})),",
            r.name,
            renamed_fields(r, "t")
        )
        .unwrap();
    }
    writeln!(out, "        }}\n    }}\n").unwrap();
    writeln!(
        out,
        "    /// The first argument, which keys a fact to what it is about.\n    pub fn first(&self) -> Value {{\n        match self {{"
    )
    .unwrap();
    for r in &inputs {
        writeln!(
            out,
            "            InputFact::{}(t) => Value::from(t.0),",
            r.name
        )
        .unwrap();
    }
    writeln!(out, "        }}\n    }}\n}}\n").unwrap();
}

fn write_outputs(out: &mut String, relations: &[Relation]) {
    let outputs: Vec<_> = relations.iter().filter(|r| r.kind != "Input").collect();
    let each = |f: &dyn Fn(&Relation) -> String| -> String {
        outputs.iter().map(|r| f(r)).collect::<Vec<_>>().join("\n")
    };
    writeln!(
        out,
        "/// One derived relation's tuples.\n#[derive(Clone, Debug, PartialEq, Eq)]\nenum Tuples {{\n{}\n}}\n",
        each(&|r| format!("    {0}(Vec<{0}>),", r.name))
    )
    .unwrap();
    writeln!(
        out,
        "impl Tuples {{\n    fn index(&self) -> u8 {{\n        match self {{\n{}\n        }}\n    }}\n",
        outputs
            .iter()
            .enumerate()
            .map(|(i, r)| format!("            Tuples::{}(_) => {i},", r.name))
            .collect::<Vec<_>>()
            .join("\n")
    )
    .unwrap();
    writeln!(
        out,
        "    fn len(&self) -> usize {{\n        match self {{\n{}\n        }}\n    }}\n",
        each(&|r| format!("            Tuples::{}(t) => t.len(),", r.name))
    )
    .unwrap();
    writeln!(
        out,
        "    /// Appends `other`'s tuples when it holds the same relation.\n    fn extend_from(&mut self, other: &Tuples) {{\n        match (self, other) {{\n{}\n            _ => {{}}\n        }}\n    }}\n",
        each(&|r| format!(
            "            (Tuples::{0}(t), Tuples::{0}(o)) => t.extend_from_slice(o),",
            r.name
        ))
    )
    .unwrap();
    writeln!(
        out,
        "    /// Adds `other`'s tuples, both sorted, keeping the order: the stable\n    /// sort merges the two sorted runs it finds.\n    fn merge_from(&mut self, other: &Tuples) {{\n        match (self, other) {{\n{}\n            _ => {{}}\n        }}\n    }}\n",
        each(&|r| format!(
            "            (Tuples::{0}(t), Tuples::{0}(o)) => {{\n                t.extend_from_slice(o);\n                t.sort();\n                t.dedup();\n            }}",
            r.name
        ))
    )
    .unwrap();
    writeln!(
        out,
        "    fn normalize(&mut self) {{\n        match self {{\n{}\n        }}\n    }}\n}}\n",
        each(&|r| format!(
            "            Tuples::{}(t) => {{\n                t.sort_unstable();\n                t.dedup();\n            }}",
            r.name
        ))
    )
    .unwrap();
    writeln!(
        out,
        "/// Every derived relation (`@output` and intermediate) materialized, each
/// sorted. Only the relations that hold tuples take room, in relation
/// order: most values (a file's rules, its slices of other stages) hold a
/// few of the {} relations, and a struct of that many vectors cost 1 KB
/// each before any tuple (docs/performance.md, issue 10).
#[derive(Clone, Debug, Default)]
pub struct Outputs {{
    relations: Vec<Tuples>,
}}

/// Equal when every relation holds the same tuples (an emptied relation
/// equals an absent one).
impl PartialEq for Outputs {{
    fn eq(&self, other: &Self) -> bool {{
        let held = |t: &&Tuples| t.len() > 0;
        self.relations.iter().filter(held).eq(other.relations.iter().filter(held))
    }}
}}

impl Eq for Outputs {{}}
",
        outputs.len()
    )
    .unwrap();
    writeln!(out, "impl Outputs {{").unwrap();
    writeln!(
        out,
        "    fn position(&self, index: u8) -> Result<usize, usize> {{
        self.relations.binary_search_by_key(&index, Tuples::index)
    }}

    /// Adds a relation's tuples (nothing when there are none).
    fn put(&mut self, tuples: Tuples) {{
        if tuples.len() == 0 {{
            return;
        }}
        match self.position(tuples.index()) {{
            Ok(at) => self.relations[at].extend_from(&tuples),
            Err(at) => self.relations.insert(at, tuples),
        }}
    }}

    /// The relation of `empty`'s kind, added empty when absent.
    fn slot(&mut self, empty: Tuples) -> &mut Tuples {{
        let at = match self.position(empty.index()) {{
            Ok(at) => at,
            Err(at) => {{
                self.relations.insert(at, empty);
                at
            }}
        }};
        &mut self.relations[at]
    }}

    /// Outputs of these relations' tuples, without spare room.
    fn from_relations(relations: impl IntoIterator<Item = Tuples>) -> Self {{
        let mut outputs = Outputs {{
            relations: relations.into_iter().filter(|t| t.len() > 0).collect(),
        }};
        outputs.relations.sort_by_key(Tuples::index);
        outputs.relations.shrink_to_fit();
        outputs
    }}
"
    )
    .unwrap();
    for (i, r) in outputs.iter().enumerate() {
        let n = snake(&r.name);
        writeln!(
            out,
            "    /// The `{name}` tuples, sorted.
    pub fn {n}(&self) -> &[{name}] {{
        match self.position({i}).map(|at| &self.relations[at]) {{
            Ok(Tuples::{name}(t)) => t,
            _ => &[],
        }}
    }}

    /// The `{name}` tuples to add to (then [`Outputs::normalize`]).
    pub fn {n}_mut(&mut self) -> &mut Vec<{name}> {{
        match self.slot(Tuples::{name}(Vec::new())) {{
            Tuples::{name}(t) => t,
            _ => unreachable!(\"a slot holds the relation of its index\"),
        }}
    }}
",
            name = r.name
        )
        .unwrap();
    }
    writeln!(
        out,
        "    /// The tuples of derived relation `name`, or `None` if there is no such relation."
    )
    .unwrap();
    writeln!(
        out,
        "    pub fn tuples(&self, name: &str) -> Option<Vec<Vec<Value>>> {{\n        match name {{"
    )
    .unwrap();
    for r in &outputs {
        writeln!(
            out,
            "            {:?} => Some(self.{}().iter().map(|t| vec![{}]).collect()),",
            r.name,
            snake(&r.name),
            fields(r, "t")
        )
        .unwrap();
    }
    writeln!(out, "            _ => None,\n        }}\n    }}\n").unwrap();
    writeln!(
        out,
        "    /// How many tuples all derived relations hold together.\n    pub fn tuple_count(&self) -> usize {{\n        self.relations.iter().map(Tuples::len).sum()\n    }}\n"
    )
    .unwrap();
    writeln!(
        out,
        "    /// Every value of every tuple, in no particular order.\n    pub fn tuples_values(&self) -> impl Iterator<Item = Value> + '_ {{\n        self.relations.iter().flat_map(|tuples| -> Box<dyn Iterator<Item = Value> + '_> {{\n            match tuples {{"
    )
    .unwrap();
    for r in &outputs {
        writeln!(
            out,
            "                Tuples::{}(t) => Box::new(t.iter().flat_map(|t| [{}])),",
            r.name,
            fields(r, "t")
        )
        .unwrap();
    }
    writeln!(out, "            }}\n        }})\n    }}\n").unwrap();
    writeln!(
        out,
        "    /// Renames every site: `rename(first, site)`, where `first` is the\n    /// tuple's first argument (a site is a position in the file the tuple\n    /// starts from).\n    pub fn map_sites(&mut self, rename: impl Fn(Value, Site) -> Site) {{\n        for tuples in &mut self.relations {{\n            match tuples {{"
    )
    .unwrap();
    for r in &outputs {
        if r.types.iter().any(|t| t == "Site") {
            writeln!(
                out,
                "                Tuples::{0}(t) => t.iter_mut().for_each(|t| {{ let first = Value::from(t.0); let rename = |site| rename(first, site); *t = {0}({1}); }}),",
                r.name,
                renamed_fields(r, "t")
            )
            .unwrap();
        }
    }
    writeln!(
        out,
        "                _ => {{}}\n            }}\n        }}\n    }}\n"
    )
    .unwrap();
    writeln!(
        out,
        "    /// Keeps the tuples whose first two arguments `keep` accepts (the\n    /// second is `None` in a relation of one argument); order is kept.\n    pub fn retain_heads(&mut self, mut keep: impl FnMut(Value, Option<Value>) -> bool) {{\n        for tuples in &mut self.relations {{\n            match tuples {{"
    )
    .unwrap();
    for r in &outputs {
        let second = if r.types.len() > 1 {
            "Some(Value::from(t.1))"
        } else {
            "None"
        };
        writeln!(
            out,
            "                Tuples::{}(t) => t.retain(|t| keep(Value::from(t.0), {second})),",
            r.name
        )
        .unwrap();
    }
    writeln!(
        out,
        "            }}\n        }}\n        self.relations.retain(|t| t.len() > 0);\n    }}\n"
    )
    .unwrap();
    writeln!(
        out,
        "    /// Appends every tuple of `other`; [`Outputs::normalize`] restores the order.
    pub fn extend(&mut self, other: &Outputs) {{
        self.add(other, Tuples::extend_from);
    }}

    /// Adds `other`'s tuples; both sorted, and so is the result (a merge,
    /// not a sort: for a few tuples added to many).
    pub fn merge(&mut self, other: &Outputs) {{
        self.add(other, Tuples::merge_from);
    }}

    /// Adds each relation of `other` to this one's with `into`, or as it is
    /// where this one has none.
    fn add(&mut self, other: &Outputs, into: fn(&mut Tuples, &Tuples)) {{
        for tuples in &other.relations {{
            if tuples.len() > 0 {{
                match self.position(tuples.index()) {{
                    Ok(at) => into(&mut self.relations[at], tuples),
                    Err(at) => self.relations.insert(at, tuples.clone()),
                }}
            }}
        }}
    }}

    /// Sorts every relation and drops duplicates.
    pub fn normalize(&mut self) {{
        for tuples in &mut self.relations {{
            tuples.normalize();
        }}
    }}
}}
"
    )
    .unwrap();
}

/// Which stages derive each relation, checking that every relation a stage
/// reads is a base relation or comes whole from earlier stages.
fn stage_reads(relations: &[Relation], rules: &[Rule]) -> Vec<(Stage, Vec<String>, Vec<String>)> {
    let derived_in = |name: &str| -> Vec<Stage> {
        let mut stages: Vec<Stage> = rules
            .iter()
            .filter(|r| r.head == name)
            .map(|r| r.stage)
            .collect();
        stages.dedup();
        stages
    };
    let mut plan = Vec::new();
    for stage in STAGES {
        let mut derived: Vec<String> = Vec::new();
        let mut reads: Vec<String> = Vec::new();
        for rule in rules.iter().filter(|r| r.stage == stage) {
            if !derived.contains(&rule.head) {
                derived.push(rule.head.clone());
            }
        }
        for rule in rules.iter().filter(|r| r.stage == stage) {
            let body = rule
                .text
                .split_once("<-")
                .map(|(_, b)| b)
                .unwrap_or_default();
            for clause in split_top(body.trim_end_matches(';')) {
                let text = clause.trim_start_matches('!').trim();
                if text.starts_with('(') || text.starts_with("let ") || text.starts_with("for ") {
                    continue;
                }
                let Some((name, _)) = atom(text) else {
                    continue;
                };
                if derived.contains(&name) || reads.contains(&name) {
                    continue;
                }
                let relation = relations
                    .iter()
                    .find(|r| r.name == name)
                    .unwrap_or_else(|| {
                        panic!("{}:{}: unknown relation `{name}`", rule.file, rule.line)
                    });
                if relation.kind != "Input" {
                    let stages = derived_in(&name);
                    assert!(
                        stages.iter().all(|s| *s < stage) && stages.len() == 1,
                        "{}:{}: `{name}` is derived in stage(s) {:?}, so a `{}` rule cannot read it; \
                         a stage reads only base relations and relations derived whole in one earlier stage",
                        rule.file,
                        rule.line,
                        stages.iter().map(|s| s.name()).collect::<Vec<_>>(),
                        stage.name()
                    );
                }
                reads.push(name);
            }
        }
        plan.push((stage, derived, reads));
    }
    plan
}

/// One crepe module per stage, its run function, and which facts it reads.
fn write_stages(out: &mut String, relations: &[Relation], rules: &[Rule]) {
    let relation = |name: &str| relations.iter().find(|r| r.name == name).expect("declared");
    let plan = stage_reads(relations, rules);
    for (stage, derived, reads) in &plan {
        assert!(
            !derived.is_empty(),
            "no rules file declares `// stage: {}`; each stage needs at least one rule",
            stage.name()
        );
        let module = format!("stage_{}", stage.name());
        let mut program = String::new();
        for name in reads {
            let r = relation(name);
            let fields: Vec<String> = r.types.iter().map(|t| format!("pub {t}")).collect();
            writeln!(
                program,
                "@input\n#[derive(Debug)]\npub struct {}({});",
                r.name,
                fields.join(", ")
            )
            .unwrap();
        }
        for name in derived {
            let r = relation(name);
            let fields: Vec<String> = r.types.iter().map(|t| format!("pub {t}")).collect();
            writeln!(
                program,
                "@output\n#[derive(Debug)]\npub struct {}({});",
                r.name,
                fields.join(", ")
            )
            .unwrap();
        }
        for rule in rules.iter().filter(|r| r.stage == *stage) {
            writeln!(program, "{}", rule.text).unwrap();
        }
        writeln!(
            out,
            "mod {module} {{\n    #![allow(clippy::all, unused_imports, dead_code)]\n    use super::{{Node, Pattern, Site, Sym}};\n    crepe::crepe! {{\n{program}\n    }}\n}}\n"
        )
        .unwrap();
        let base: Vec<&Relation> = reads
            .iter()
            .map(|n| relation(n))
            .filter(|r| r.kind == "Input")
            .collect();
        let earlier: Vec<&Relation> = reads
            .iter()
            .map(|n| relation(n))
            .filter(|r| r.kind != "Input")
            .collect();
        let made: Vec<&Relation> = derived.iter().map(|n| relation(n)).collect();
        write_run(
            out,
            &format!("run_{}", stage.name()),
            &module,
            &base,
            &earlier,
            &made,
        );
        // Which base facts and earlier relations the stage reads.
        let name = stage.name();
        let facts = if base.is_empty() {
            "_ if false".to_string()
        } else {
            base.iter()
                .map(|r| format!("InputFact::{}(_)", r.name))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        writeln!(
            out,
            "fn {name}_reads_fact(fact: &InputFact) -> bool {{\n    matches!(fact, {facts})\n}}\n"
        )
        .unwrap();
        writeln!(
            out,
            "#[allow(unused_variables)]\nfn {name}_take_derived(into: &mut Outputs, from: &Outputs) {{"
        )
        .unwrap();
        for r in &earlier {
            let n = snake(&r.name);
            writeln!(
                out,
                "    into.put(Tuples::{}(from.{n}().to_vec()));",
                r.name
            )
            .unwrap();
        }
        writeln!(out, "}}\n").unwrap();
        writeln!(
            out,
            "#[allow(unused_variables, unused_mut, clippy::let_and_return)]\nfn {name}_select_derived(from: &Outputs, keys: &[Value]) -> Outputs {{\n    let mut into = Outputs::default();"
        )
        .unwrap();
        for r in &earlier {
            let n = snake(&r.name);
            writeln!(
                out,
                "    let all = from.{n}();\n    if !all.is_empty() {{\n        let mut selected = Vec::new();\n        for key in keys {{\n            let start = all.partition_point(|t| Value::from(t.0) < *key);\n            selected.extend(all[start..].iter().take_while(|t| Value::from(t.0) == *key).copied());\n        }}\n        selected.shrink_to_fit();\n        into.put(Tuples::{}(selected));\n    }}",
                r.name
            )
            .unwrap();
        }
        writeln!(out, "    into.relations.shrink_to_fit();\n    into\n}}\n").unwrap();
        writeln!(
            out,
            "#[allow(unused_variables, unused_mut, clippy::let_and_return)]\nfn {name}_derived_keys(from: &Outputs) -> Vec<Value> {{\n    let mut keys: Vec<Value> = Vec::new();"
        )
        .unwrap();
        for r in &earlier {
            let n = snake(&r.name);
            writeln!(
                out,
                "    keys.extend(from.{n}().iter().map(|t| Value::from(t.0)));"
            )
            .unwrap();
        }
        writeln!(
            out,
            "    keys.sort_unstable();\n    keys.dedup();\n    keys\n}}\n"
        )
        .unwrap();
        writeln!(
            out,
            "/// The `{name}` stage of the rules.\npub const {}: StageProgram = StageProgram {{\n    reads_facts: {},\n    reads_fact: {name}_reads_fact,\n    take_derived: {name}_take_derived,\n    select_derived: {name}_select_derived,\n    derived_keys: {name}_derived_keys,\n    run: run_{name},\n}};\n",
            name.to_uppercase(),
            !base.is_empty()
        )
        .unwrap();
    }
    let all_inputs: Vec<&Relation> = relations.iter().filter(|r| r.kind == "Input").collect();
    let all_derived: Vec<&Relation> = relations.iter().filter(|r| r.kind != "Input").collect();
    write_run(
        out,
        "run_reference",
        "reference",
        &all_inputs,
        &[],
        &all_derived,
    );
}

/// `fn name(facts, derived) -> Outputs` running crepe module `module`.
fn write_run(
    out: &mut String,
    name: &str,
    module: &str,
    base: &[&Relation],
    earlier: &[&Relation],
    made: &[&Relation],
) {
    // The reference program is called directly; the stages through their
    // `StageProgram` constant.
    let visibility = if module == "reference" { "pub " } else { "" };
    writeln!(
        out,
        "#[allow(unused_variables, unused_mut, clippy::single_match)]\n{visibility}fn {name}(facts: &[InputFact], derived: &Outputs) -> Outputs {{\n    let mut runtime = {module}::Crepe::new();"
    )
    .unwrap();
    if !base.is_empty() {
        writeln!(out, "    for fact in facts {{\n        match *fact {{").unwrap();
        for r in base {
            writeln!(
                out,
                "            InputFact::{}(t) => runtime.extend([{}]),",
                r.name,
                convert(&format!("{module}::"), r, "t")
            )
            .unwrap();
        }
        writeln!(
            out,
            "            #[allow(unreachable_patterns)]\n            _ => {{}}\n        }}\n    }}"
        )
        .unwrap();
    }
    for r in earlier {
        writeln!(
            out,
            "    runtime.extend(derived.{}().iter().map(|t| {}));",
            snake(&r.name),
            convert(&format!("{module}::"), r, "t")
        )
        .unwrap();
    }
    let names: Vec<String> = made.iter().map(|r| snake(&r.name)).collect();
    assert!(
        !names.is_empty(),
        "{module}: a program without derived relations"
    );
    writeln!(
        out,
        "    let ({},) = runtime.run_with_hasher::<rustc_hash::FxBuildHasher>();\n    Outputs::from_relations([",
        names.join(", ")
    )
    .unwrap();
    for r in made {
        let n = snake(&r.name);
        writeln!(
            out,
            "        Tuples::{}(sorted({n}.into_iter().map(|t| {}))),",
            r.name,
            convert("", r, "t")
        )
        .unwrap();
    }
    writeln!(out, "    ])\n}}\n").unwrap();
}

/// One argument of an atom: a variable (by index into the rule's variables)
/// or `_`.
enum Term {
    Var(usize),
    Wild,
    /// A Rust expression of the argument's type, as written in the rule.
    Const(String),
}

/// A rule's variables, in order of first appearance, with their types.
#[derive(Default)]
struct Vars {
    names: Vec<String>,
    types: Vec<String>,
}

impl Vars {
    fn term(&mut self, arg: &str, ty: &str, where_: &str) -> Term {
        if arg == "_" {
            return Term::Wild;
        }
        assert!(!arg.is_empty(), "{where_}: an empty atom argument");
        if !arg.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return Term::Const(format!("Value::{ty}({arg})"));
        }
        if let Some(i) = self.names.iter().position(|n| n == arg) {
            return Term::Var(i);
        }
        self.names.push(arg.to_string());
        self.types.push(ty.to_string());
        Term::Var(self.names.len() - 1)
    }
}

/// Splits at commas outside brackets.
fn split_top(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        parts.push(current.trim().to_string());
    }
    parts
}

/// `Name(a, b)` into the name and its arguments.
fn atom(text: &str) -> Option<(String, Vec<String>)> {
    let (name, rest) = text.split_once('(')?;
    let inner = rest.trim_end().strip_suffix(')')?;
    Some((name.trim().to_string(), split_top(inner)))
}

fn terms(terms: &[Term]) -> String {
    let items: Vec<String> = terms
        .iter()
        .map(|t| match t {
            Term::Var(i) => format!("Term::Var({i})"),
            Term::Wild => "Term::Wild".to_string(),
            Term::Const(value) => format!("Term::Const({value})"),
        })
        .collect();
    format!("&[{}]", items.join(", "))
}

/// For each rule, the plan `engine::explain` follows to find the premises of
/// a head tuple: body atoms in order (variables bound left to right),
/// negated atoms, and each Rust guard as a generated function over the
/// variables bound before it.
fn write_plans(out: &mut String, relations: &[Relation], rules: &[Rule]) {
    let types = |name: &str, where_: &str| -> Vec<String> {
        relations
            .iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("{where_}: unknown relation `{name}`"))
            .types
            .clone()
    };
    let mut plans = String::new();
    let mut guards = String::new();
    for (index, rule) in rules.iter().enumerate() {
        let where_ = format!("{}:{}", rule.file, rule.line);
        let (head_text, body_text) = rule
            .text
            .trim_end_matches(';')
            .split_once("<-")
            .unwrap_or_else(|| {
                panic!("{where_}: explanations need rules of the form `Head(..) <- body;`")
            });
        let (head_name, head_args) =
            atom(head_text.trim()).unwrap_or_else(|| panic!("{where_}: cannot read the head"));
        let mut vars = Vars::default();
        let head_types = types(&head_name, &where_);
        let head: Vec<Term> = head_args
            .iter()
            .zip(&head_types)
            .map(|(a, t)| vars.term(a, t, &where_))
            .collect();
        let mut body = Vec::new();
        for (position, clause) in split_top(body_text).iter().enumerate() {
            if clause.starts_with('(') {
                let name = format!("guard_{index}_{position}");
                let mut function = format!(
                    "#[allow(unused_variables, unused_parens, clippy::all)]\nfn {name}(env: &[Option<Value>]) -> bool {{\n"
                );
                for (i, (var, ty)) in vars.names.iter().zip(&vars.types).enumerate() {
                    writeln!(
                        function,
                        "    let Some(&Some(Value::{ty}({var}))) = env.get({i}) else {{ return false }};"
                    )
                    .unwrap();
                }
                writeln!(function, "    {clause}\n}}\n").unwrap();
                guards.push_str(&function);
                body.push(format!(
                    "Clause::Guard {{ text: {clause:?}, check: {name} }}"
                ));
                continue;
            }
            assert!(
                !clause.starts_with("let ") && !clause.starts_with("for "),
                "{where_}: `{clause}`: explanations do not follow `let` or `for` clauses; \
                 compute such values in base facts"
            );
            let (negated, text) = match clause.strip_prefix('!') {
                Some(rest) => (true, rest.trim()),
                None => (false, clause.as_str()),
            };
            let (name, args) =
                atom(text).unwrap_or_else(|| panic!("{where_}: cannot read `{clause}`"));
            let atom_types = types(&name, &where_);
            let args: Vec<Term> = args
                .iter()
                .zip(&atom_types)
                .map(|(a, t)| vars.term(a, t, &where_))
                .collect();
            body.push(format!(
                "Clause::Atom {{ relation: {name:?}, negated: {negated}, args: {} }}",
                terms(&args)
            ));
        }
        writeln!(
            plans,
            "    RulePlan {{ rule: {index}, head: {}, vars: &{:?}, body: &[{}] }},",
            terms(&head),
            vars.names,
            body.join(", ")
        )
        .unwrap();
    }
    writeln!(out, "{guards}").unwrap();
    writeln!(
        out,
        "/// How to retrace each rule of [`RULES`] (same order), for explanations."
    )
    .unwrap();
    writeln!(out, "pub const PLANS: &[RulePlan] = &[\n{plans}];").unwrap();
}
