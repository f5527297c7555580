//! The first reader: rules files, line by line, into relation declarations
//! and rule texts. Rule bodies are read further by `clauses`.

use crate::Source;
use crate::error::{Error, Location, Problem};
use crate::stages::Stage;

/// The types a relation's arguments may have: the variants of the engine's
/// `datalog::Value`, which the generated code names.
const ARGUMENT_TYPES: [&str; 4] = ["Node", "Sym", "Site", "Pattern"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `@input`: base facts the engine feeds in.
    Input,
    /// `@output`: derived and published.
    Output,
    /// Neither: a derived helper.
    Intermediate,
}

impl Kind {
    /// The engine's `RelationKind` variant.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Input => "Input",
            Kind::Output => "Output",
            Kind::Intermediate => "Intermediate",
        }
    }
}

#[derive(Debug)]
pub(crate) struct Relation {
    pub name: String,
    pub kind: Kind,
    pub types: Vec<String>,
    /// The argument names of the doc line.
    pub args: Vec<String>,
    /// The doc line's meaning, after `Name(args):`.
    pub doc: String,
    pub at: Location,
}

#[derive(Debug)]
pub(crate) struct Rule {
    /// The name of the relation it derives.
    pub head: String,
    /// The rule on one line, as crepe and explanations get it.
    pub text: String,
    /// Where it starts.
    pub at: Location,
    pub stage: Stage,
}

/// Every declaration and rule of the rules files, in the order given.
#[derive(Debug, Default)]
pub(crate) struct Rules {
    pub relations: Vec<Relation>,
    pub rules: Vec<Rule>,
}

impl Rules {
    pub(crate) fn parse(sources: &[Source<'_>]) -> Result<Rules, Error> {
        let mut rules = Rules::default();
        for source in sources {
            rules.read(source.file, source.text)?;
        }
        Ok(rules)
    }

    /// The index of relation `name` in `relations`.
    pub(crate) fn relation(&self, name: &str) -> Option<usize> {
        self.relations.iter().position(|r| r.name == name)
    }

    fn read(&mut self, file: &str, text: &str) -> Result<(), Error> {
        let at = |line| Location {
            file: file.to_string(),
            line,
        };
        // What the next declaration takes: its doc line and its attribute,
        // each with the line it is on.
        let mut doc: Option<(Location, String)> = None;
        let mut attribute: Option<(Location, &str)> = None;
        // A rule read so far, from the line it starts on.
        let mut pending: Option<(Location, String)> = None;
        let mut stage = Stage::Project;
        for (index, raw) in text.lines().enumerate() {
            let here = at(index + 1);
            let line = raw.trim();
            if let Some(name) = line.strip_prefix("// stage:") {
                let name = name.trim();
                stage = Stage::named(name)
                    .ok_or_else(|| Error::at(&here, Problem::UnknownStage(name.to_string())))?;
                continue;
            }
            if let Some(rest) = line.strip_prefix("///") {
                if doc.is_some() {
                    return Err(Error::at(&here, Problem::SecondDocLine));
                }
                doc = Some((here, rest.trim().to_string()));
                continue;
            }
            if line.is_empty() || line.starts_with("//") {
                continue;
            }
            if line == "@input" || line == "@output" {
                if let Some((first, attribute)) = &attribute {
                    let problem = Problem::DetachedAttribute(attribute.to_string());
                    return Err(Error::at(first, problem));
                }
                attribute = Some((here, line));
                continue;
            }
            if line.starts_with("pub struct") || line.starts_with("struct") {
                let kind = match attribute.take() {
                    Some((_, "@input")) => Kind::Input,
                    Some(_) => Kind::Output,
                    None => Kind::Intermediate,
                };
                let relation = declaration(line, kind, doc.take().map(|(_, d)| d), here)?;
                if let Some(first) = self.relations.iter().find(|r| r.name == relation.name) {
                    let problem = Problem::DuplicateRelation {
                        relation: relation.name.clone(),
                        first: first.at.clone(),
                    };
                    return Err(Error::at(&relation.at, problem));
                }
                self.relations.push(relation);
                continue;
            }
            if pending.is_none() {
                detached(&doc, &attribute)?;
            }
            let (start, mut body) = pending.take().unwrap_or((here, String::new()));
            if !body.is_empty() {
                body.push(' ');
            }
            body.push_str(line);
            if body.ends_with(';') {
                let head = body.split('(').next().unwrap_or_default().trim();
                self.rules.push(Rule {
                    head: head.to_string(),
                    text: body,
                    at: start,
                    stage,
                });
            } else {
                pending = Some((start, body));
            }
        }
        if let Some((start, _)) = pending {
            return Err(Error::at(&start, Problem::UnterminatedRule));
        }
        detached(&doc, &attribute)
    }
}

/// A doc line or attribute still waiting for its declaration where none
/// can follow.
fn detached(
    doc: &Option<(Location, String)>,
    attribute: &Option<(Location, &str)>,
) -> Result<(), Error> {
    if let Some((at, _)) = doc {
        return Err(Error::at(at, Problem::DetachedDoc));
    }
    if let Some((at, attribute)) = attribute {
        return Err(Error::at(
            at,
            Problem::DetachedAttribute(attribute.to_string()),
        ));
    }
    Ok(())
}

/// `[pub] struct Name(pub Type, ...);` with the doc line before it.
fn declaration(
    line: &str,
    kind: Kind,
    doc: Option<String>,
    at: Location,
) -> Result<Relation, Error> {
    let bad = |problem| Error::at(&at, problem);
    let (name, fields) = line
        .trim_start_matches("pub ")
        .strip_prefix("struct ")
        .and_then(|rest| rest.strip_suffix(';'))
        .and_then(|rest| rest.trim_end().strip_suffix(')'))
        .and_then(|rest| rest.split_once('('))
        .ok_or_else(|| bad(Problem::BadDeclaration))?;
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return Err(bad(Problem::BadDeclaration));
    }
    let types: Vec<String> = fields
        .split(',')
        .map(|t| t.trim().trim_start_matches("pub ").trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    if types.is_empty() {
        return Err(bad(Problem::NoArguments(name.to_string())));
    }
    if let Some(ty) = types.iter().find(|t| !ARGUMENT_TYPES.contains(&t.as_str())) {
        return Err(bad(Problem::UnknownType {
            relation: name.to_string(),
            ty: ty.clone(),
        }));
    }
    let doc = doc.ok_or_else(|| bad(Problem::MissingDoc(name.to_string())))?;
    // `Name(a, b): meaning` names the arguments.
    let malformed = || {
        bad(Problem::MalformedDoc {
            relation: name.to_string(),
            arity: types.len(),
        })
    };
    let (args, meaning) = doc
        .strip_prefix(name)
        .and_then(|rest| rest.strip_prefix('('))
        .and_then(|rest| rest.split_once("):"))
        .ok_or_else(malformed)?;
    let args: Vec<String> = args.split(',').map(|a| a.trim().to_string()).collect();
    let meaning = meaning.trim();
    if args.len() != types.len() || args.iter().any(String::is_empty) || meaning.is_empty() {
        return Err(malformed());
    }
    Ok(Relation {
        name: name.to_string(),
        kind,
        types,
        args,
        doc: meaning.to_string(),
        at,
    })
}

#[cfg(test)]
mod tests {
    use super::{Kind, Rules};
    use crate::Source;
    use crate::fixture::message;
    use crate::stages::Stage;

    fn parse(text: &str) -> Rules {
        let source = Source {
            file: "rules/t.dl",
            text,
        };
        Rules::parse(&[source]).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The file stage's relation and rule of the fixture, to put mistakes
    /// around.
    const FILED: &str = "/// Filed(file): a file with a private name and no other fact.\n@output\npub struct Filed(pub Node);\n";
    const RULE: &str = "Filed(f) <- Classed(f, n), !Fact(f, _), (n.is_private());\n";

    fn file_stage(text: &str) -> String {
        message("rules/c_file.dl", text)
    }

    #[test]
    fn a_declaration_takes_its_doc_line_and_attribute() {
        let rules = parse(
            "// Calls.\n\n/// Calls(file, site, callee): the call at site in file is to callee.\n@output\npub struct Calls(pub Node, pub Site, pub Node);\n\n/// Base(file): a base fact.\n@input\npub struct Base(pub Node);\n\n@output\n/// Warned(file, pattern): attribute before the doc line.\npub struct Warned(pub Node, pub Pattern);\n\n/// Helper(name): a helper.\nstruct Helper(pub Sym);\n",
        );
        let calls = &rules.relations[0];
        assert_eq!(calls.name, "Calls");
        assert_eq!(calls.kind, Kind::Output);
        assert_eq!(calls.types, ["Node", "Site", "Node"]);
        assert_eq!(calls.args, ["file", "site", "callee"]);
        assert_eq!(calls.doc, "the call at site in file is to callee.");
        assert_eq!(calls.at.to_string(), "rules/t.dl:5");
        let kinds: Vec<(&str, Kind)> = rules
            .relations
            .iter()
            .map(|r| (r.name.as_str(), r.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("Calls", Kind::Output),
                ("Base", Kind::Input),
                ("Warned", Kind::Output),
                ("Helper", Kind::Intermediate)
            ]
        );
        assert!(rules.rules.is_empty());
    }

    #[test]
    fn a_rule_runs_in_the_stage_its_file_names_and_may_span_lines() {
        let rules = parse(
            "// stage: file\n\nA(x) <- B(x),\n    // a comment inside\n    C(x);\nD(x) <- A(x);\n",
        );
        let read: Vec<(&str, &str, usize, Stage)> = rules
            .rules
            .iter()
            .map(|r| (r.head.as_str(), r.text.as_str(), r.at.line, r.stage))
            .collect();
        assert_eq!(
            read,
            [
                ("A", "A(x) <- B(x), C(x);", 3, Stage::File),
                ("D", "D(x) <- A(x);", 6, Stage::File)
            ]
        );
        let rules = parse("A(x) <- B(x);\n");
        assert_eq!(rules.rules[0].stage, Stage::Project, "the default stage");
    }

    #[test]
    fn an_unknown_stage_is_named() {
        assert_eq!(
            file_stage(&format!("// stage: later\n{FILED}{RULE}")),
            "rules/c_file.dl:1: unknown stage `later`; use resolve, classes, file, project or report"
        );
    }

    #[test]
    fn a_doc_line_is_one_line_right_before_its_declaration() {
        assert_eq!(
            file_stage(&format!(
                "// stage: file\n/// Filed(file): a file with a private name\n/// and no other fact.\n@output\npub struct Filed(pub Node);\n{RULE}"
            )),
            "rules/c_file.dl:3: a second `///` line: a relation's doc is one line, `/// Name(arg, ...): meaning`; join the lines, or make this one a `//` comment"
        );
        let detached = "this `///` line documents no relation: a declaration (`struct Name(...);`) must follow it; write a comment on a rule with `//`";
        assert_eq!(
            file_stage(&format!("// stage: file\n{FILED}\n/// Why files.\n{RULE}")),
            format!("rules/c_file.dl:6: {detached}")
        );
        assert_eq!(
            file_stage(&format!("// stage: file\n{FILED}{RULE}/// Trailing.\n")),
            format!("rules/c_file.dl:6: {detached}")
        );
    }

    #[test]
    fn an_attribute_marks_the_declaration_right_after_it() {
        assert_eq!(
            file_stage(&format!("// stage: file\n{FILED}@output\n{RULE}")),
            "rules/c_file.dl:5: `@output` must be followed by the declaration it marks (`pub struct Name(pub Node, ...);`)"
        );
        assert_eq!(
            file_stage(&format!(
                "// stage: file\n/// Filed(file): a file.\n@input\n@output\npub struct Filed(pub Node);\n{RULE}"
            )),
            "rules/c_file.dl:3: `@input` must be followed by the declaration it marks (`pub struct Name(pub Node, ...);`)"
        );
    }

    #[test]
    fn a_declaration_must_be_a_tuple_struct_of_argument_types() {
        let declared = |declaration: &str| {
            file_stage(&format!(
                "// stage: file\n/// Filed(file): a file.\n@output\n{declaration}\n{RULE}"
            ))
        };
        let unreadable =
            "rules/c_file.dl:4: cannot read this declaration; write `struct Name(pub Type, ...);`";
        assert_eq!(declared("pub struct Filed pub Node;"), unreadable);
        assert_eq!(declared("pub struct Filed(pub Node)"), unreadable);
        assert_eq!(declared("pub struct (pub Node);"), unreadable);
        assert_eq!(
            declared("pub struct Filed();"),
            "rules/c_file.dl:4: `Filed` has no arguments; a relation needs at least one (its first argument keys its tuples)"
        );
        assert_eq!(
            declared("pub struct Filed(pub String);"),
            "rules/c_file.dl:4: `String` in `Filed` is not an argument type; use Node, Sym, Site or Pattern"
        );
    }

    #[test]
    fn a_declaration_needs_a_doc_line_naming_each_argument() {
        assert_eq!(
            file_stage(&format!(
                "// stage: file\n@output\npub struct Filed(pub Node);\n{RULE}"
            )),
            "rules/c_file.dl:3: `Filed` has no doc line; put `/// Filed(arg, ...): meaning` on the line before its declaration"
        );
        let malformed = "rules/c_file.dl:4: the doc line of `Filed` must read `/// Filed(arg, ...): meaning`, with a name for each of its 1 arguments and the meaning after `):`";
        for doc in [
            "/// A file with a private name.",
            "/// Filed: a file.",
            "/// Filer(file): a file.",
            "/// Filed(file, name): a file.",
            "/// Filed(): a file.",
            "/// Filed(file) a file.",
            "/// Filed(file):",
        ] {
            assert_eq!(
                file_stage(&format!(
                    "// stage: file\n{doc}\n@output\npub struct Filed(pub Node);\n{RULE}"
                )),
                malformed,
                "{doc}"
            );
        }
    }

    #[test]
    fn a_relation_is_declared_once() {
        assert_eq!(
            file_stage(&format!(
                "// stage: file\n{FILED}/// Resolved(file, name): again.\nstruct Resolved(pub Node, pub Sym);\n{RULE}"
            )),
            "rules/c_file.dl:6: `Resolved` is declared a second time (first at rules/a_resolve.dl:5); rename or remove one of them"
        );
    }

    #[test]
    fn a_rule_ends_with_a_semicolon() {
        assert_eq!(
            file_stage(&format!(
                "// stage: file\n{FILED}Filed(f) <- Classed(f, n),\n    !Fact(f, _)\n"
            )),
            "rules/c_file.dl:5: the rule starting here has no `;` before the end of the file; end it with `;`"
        );
    }
}
