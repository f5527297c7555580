//! Front-end facts: definitions with signature,
//! first docstring line, decorators and line range; `__all__` in its forms;
//! attributes read without a call.

use crate::common;

use xfile::python::{DefinitionKind, DunderAll, ExprId, ExprKind, Semantic, extract};

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

/// Expression `id` as text: `self`, `super()`, `f()`, `a.b`.
fn expression(semantic: &Semantic, id: ExprId) -> String {
    let kind = &semantic.expressions[id as usize].kind;
    match kind {
        ExprKind::Global { name, .. } => semantic.names[*name as usize].to_string(),
        ExprKind::SelfOf { .. } => "self".into(),
        ExprKind::ClassOf { .. } => "cls".into(),
        ExprKind::SuperOf { .. } => "super()".into(),
        ExprKind::Attribute { base, name } => {
            format!(
                "{}.{}",
                expression(semantic, *base),
                semantic.names[*name as usize]
            )
        }
        ExprKind::Call { callee } => format!("{}()", expression(semantic, *callee)),
        ExprKind::Instance { annotation } => format!("<{}>", expression(semantic, *annotation)),
        ExprKind::Either { first, second } => format!(
            "({} | {})",
            expression(semantic, *first),
            expression(semantic, *second)
        ),
        ExprKind::Fixture { name } => format!("<fixture {}>", semantic.names[*name as usize]),
    }
}

#[test]
fn attributes_read_without_a_call_are_recorded_when_they_may_name_a_definition() {
    let facts = extract(
        r#"
import pkg.fields
from pkg import forms


class Shape(forms.Form):
    kind = pkg.fields.DecimalField
    own = 1

    def check(self, value, other):
        form = forms.Form()
        self.on = 2
        return (
            forms.CASCADE,
            self.clean,
            self.own,
            self.on,
            self.a.b,
            super().errors,
            form.errors,
            form.a.b,
            other.errors,
            forms.Form().errors,
            self.clean(),
            forms.Form.clean(),
        )
"#,
    );
    let semantic = &facts.semantic;
    let reads: Vec<(u32, String)> = semantic
        .reads
        .iter()
        .map(|&id| {
            let site = semantic.expressions[id as usize].site;
            (facts.sites[site as usize].line, expression(semantic, id))
        })
        .collect();
    // The base is a base; called attributes are calls; Shape's own
    // attributes on self and an unknown parameter are not recorded; a
    // chain of two from self or a local (`self.a.b`, `form.a.b`: a member
    // of what an attribute holds) and one attribute of a call's result
    // (`forms.Form().errors`) are. `form` holds the constructor call.
    assert_eq!(
        reads,
        [
            (7, "pkg.fields.DecimalField".to_string()),
            (14, "forms.CASCADE".to_string()),
            (15, "self.clean".to_string()),
            (18, "self.a.b".to_string()),
            (19, "super().errors".to_string()),
            (20, "forms.Form().errors".to_string()),
            (21, "forms.Form().a.b".to_string()),
            (23, "forms.Form().errors".to_string()),
        ]
    );
}
