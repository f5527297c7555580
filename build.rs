//! Compiles `rules/*.dl` into one crepe program plus a table of relations and
//! rules, so that every relation is queryable and every rule explainable by
//! name without hand-written adapter code (DESIGN §3, invariant 8).
//!
//! A rules file holds crepe syntax: relation declarations
//! (`@input`/`@output`/plain `struct Name(pub Type, ...);`, each optionally
//! preceded by a `/// Name(arg, ...): what it means` doc line) and rules
//! (`Head(..) <- Body, ...;`). `//` comments are kept out of the program.

use std::fmt::Write as _;
use std::path::Path;

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
}

fn main() {
    println!("cargo:rerun-if-changed=rules");
    let mut paths: Vec<_> = std::fs::read_dir("rules")
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
        let file = path.to_string_lossy().replace('\\', "/");
        parse_file(&file, &text, &mut program, &mut relations, &mut rules);
    }

    let mut out = String::new();
    writeln!(out, "crepe::crepe! {{\n{program}\n}}\n").unwrap();
    write_tables(&mut out, &relations, &rules);
    write_inputs(&mut out, &relations);
    write_outputs(&mut out, &relations);

    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("rules.rs");
    std::fs::write(dest, out).unwrap();
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
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.trim();
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
            // crepe takes attributes only after an `@` marker.
            let marker = match relation.kind {
                "Input" => "@input\n#[derive(Debug, PartialOrd, Ord)]\n",
                "Output" => "@output\n#[derive(Debug, PartialOrd, Ord)]\n",
                _ => "",
            };
            writeln!(program, "{marker}{line}").unwrap();
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
    writeln!(out, "        }}\n    }}\n}}\n").unwrap();
    writeln!(out, "fn feed(runtime: &mut Crepe, facts: &[InputFact]) {{").unwrap();
    writeln!(out, "    for fact in facts {{\n        match *fact {{").unwrap();
    for r in &inputs {
        writeln!(
            out,
            "            InputFact::{}(t) => runtime.extend([t]),",
            r.name
        )
        .unwrap();
    }
    writeln!(out, "        }}\n    }}\n}}\n").unwrap();
}

fn write_outputs(out: &mut String, relations: &[Relation]) {
    let outputs: Vec<_> = relations.iter().filter(|r| r.kind == "Output").collect();
    writeln!(
        out,
        "/// The materialized `@output` relations, each sorted."
    )
    .unwrap();
    writeln!(out, "#[derive(Debug, Default, PartialEq, Eq)]").unwrap();
    writeln!(out, "pub struct Outputs {{").unwrap();
    for r in &outputs {
        writeln!(out, "    pub {}: Vec<{}>,", snake(&r.name), r.name).unwrap();
    }
    writeln!(out, "}}\n").unwrap();
    writeln!(out, "fn evaluate(facts: &[InputFact]) -> Outputs {{").unwrap();
    writeln!(
        out,
        "    let mut runtime = Crepe::new();\n    feed(&mut runtime, facts);"
    )
    .unwrap();
    let names: Vec<_> = outputs.iter().map(|r| snake(&r.name)).collect();
    writeln!(
        out,
        "    let ({},) = runtime.run_with_hasher::<rustc_hash::FxBuildHasher>();",
        names.join(", ")
    )
    .unwrap();
    writeln!(out, "    Outputs {{").unwrap();
    for n in &names {
        writeln!(out, "        {n}: sorted({n}),").unwrap();
    }
    writeln!(out, "    }}\n}}\n").unwrap();
    writeln!(out, "impl Outputs {{").unwrap();
    writeln!(
        out,
        "    /// The tuples of output relation `name`, or `None` if there is no such output."
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
            "            {:?} => Some(self.{}.iter().map(|t| vec![{}]).collect()),",
            r.name,
            snake(&r.name),
            fields(r, "t")
        )
        .unwrap();
    }
    writeln!(out, "            _ => None,\n        }}\n    }}\n}}").unwrap();
}
