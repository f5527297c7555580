//! Front-end facts: definitions with signature,
//! first docstring line, decorators and line range; `__all__` in its forms.

use crate::common;

use xfile::python::{DefinitionKind, DunderAll, extract};

fn facts(file: &str) -> xfile::python::ModuleFacts {
    let path = common::fixture("definitions").join(file);
    extract(&std::fs::read_to_string(path).unwrap())
}

/// qualname, kind, signature, docstring, decorators, start line, end line.
type Row = (
    String,
    DefinitionKind,
    String,
    Option<String>,
    Vec<String>,
    u32,
    u32,
);

#[test]
fn definitions_carry_signature_docstring_decorators_and_lines() {
    let facts = facts("shapes.py");
    let rows: Vec<Row> = facts
        .definitions
        .iter()
        .map(|d| {
            (
                d.qualname.to_string(),
                d.kind,
                d.signature.to_string(),
                d.docstring.as_deref().map(str::to_string),
                d.decorators.clone(),
                d.start_line,
                d.end_line,
            )
        })
        .collect();
    let s = |x: &str| x.to_string();
    assert_eq!(
        rows,
        vec![
            (
                s("__all__"),
                DefinitionKind::Variable,
                s("__all__ = [\"area\", \"Shape\"]"),
                None,
                vec![],
                4,
                4
            ),
            (
                s("PI"),
                DefinitionKind::Variable,
                s("PI: float = 3.14159"),
                None,
                vec![],
                8,
                8
            ),
            (
                s("DEFAULT_SCALE"),
                DefinitionKind::Variable,
                s("DEFAULT_SCALE = 2"),
                None,
                vec![],
                9,
                9
            ),
            (
                s("area"),
                DefinitionKind::Function,
                s("def area(radius: float, scale: int = DEFAULT_SCALE,) -> float"),
                Some(s("Area of a circle.")),
                vec![s("functools.lru_cache(maxsize=None)")],
                13,
                21,
            ),
            (
                s("fetch_shape"),
                DefinitionKind::AsyncFunction,
                s("async def fetch_shape(name)"),
                None,
                vec![],
                24,
                25
            ),
            (
                s("Shape"),
                DefinitionKind::Class,
                s("class Shape"),
                Some(s("Base of all shapes.")),
                vec![],
                28,
                33
            ),
            (
                s("Shape.name"),
                DefinitionKind::Method,
                s("def name(self) -> str"),
                None,
                vec![s("property")],
                32,
                33
            ),
            (
                s("Circle"),
                DefinitionKind::Class,
                s("class Circle(Shape)"),
                None,
                vec![],
                36,
                38
            ),
            (
                s("Circle.__init__"),
                DefinitionKind::Method,
                s("def __init__(self, radius)"),
                None,
                vec![],
                37,
                38
            ),
            (
                s("Circle.radius"),
                DefinitionKind::Variable,
                s("self.radius = radius"),
                None,
                vec![],
                38,
                38
            ),
        ]
    );
}

#[test]
fn dunder_all_literal_augmented_and_extended() {
    assert_eq!(
        facts("shapes.py").semantic.all,
        DunderAll::Names(vec![
            "area".into(),
            "Shape".into(),
            "Circle".into(),
            "PI".into()
        ])
    );
    // Another module's `__all__` added to a literal: the literal's names,
    // and the name that holds the other one's (resolved with the imports).
    let gathered = facts("gathered_all.py").semantic;
    assert_eq!(gathered.all, DunderAll::Names(vec!["extra".into()]));
    let from: Vec<Vec<&str>> = gathered
        .all_from
        .iter()
        .map(|r| r.path.iter().map(|n| n.as_str()).collect())
        .collect();
    assert_eq!(from, [["_shape_names"]]);
    assert_eq!(facts("computed_all.py").semantic.all, DunderAll::Dynamic);
}
