//! What the front end records for the symbol model: which expression a
//! base or annotation names, what kind of method a `def` is, and what a
//! module variable or class attribute is declared to hold.

use std::collections::BTreeMap;

use ruff_python_ast::{self as ast, Expr, Operator, StmtFunctionDef, StringFlags};

use super::extract::last_name;
use super::facts::{Binding, Name, Reference, TypeSource, Typed};

/// What the first parameter of a method is bound to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum MethodKind {
    /// `self`: an instance of the class.
    Instance,
    /// `cls`: the class (classmethods, `__new__`, `__init_subclass__`).
    Class,
    /// No implicit first argument.
    Static,
}

/// `@property` or `@cached_property` (`functools.cached_property`,
/// Django's): reading the attribute gives what the method returns.
pub(super) fn is_property(def: &StmtFunctionDef) -> bool {
    def.decorator_list.iter().any(|d| {
        last_name(&d.expression).is_some_and(|last| last == "property" || last == "cached_property")
    })
}

/// Whether `def` is a pytest fixture known by its own name: decorated
/// `fixture` or `x.fixture` (pytest's, pytest-asyncio's), bare or called
/// without a `name=` that would give it another.
pub(super) fn is_fixture(def: &StmtFunctionDef) -> bool {
    def.decorator_list.iter().any(|d| {
        let (callee, renamed) = match &d.expression {
            Expr::Call(call) => (
                call.func.as_ref(),
                call.arguments
                    .keywords
                    .iter()
                    .any(|k| k.arg.as_ref().is_none_or(|arg| arg.as_str() == "name")),
            ),
            other => (other, false),
        };
        !renamed && last_name(callee).is_some_and(|last| last == "fixture")
    })
}

/// What a fixture annotated `-> Iterator[T]` (`Generator[T, ...]`, the
/// async ones, `Iterable`) gives its tests: `T`; any other annotation as
/// it is.
pub(super) fn yielded_type(annotation: &Expr) -> &Expr {
    let Expr::Subscript(subscript) = annotation else {
        return annotation;
    };
    if !matches!(
        last_name(&subscript.value).as_deref(),
        Some(
            "Iterator"
                | "Generator"
                | "Iterable"
                | "AsyncIterator"
                | "AsyncGenerator"
                | "AsyncIterable"
        )
    ) {
        return annotation;
    }
    match subscript.slice.as_ref() {
        Expr::Tuple(tuple) => tuple.elts.first().unwrap_or(annotation),
        first => first,
    }
}

pub(super) fn method_kind(def: &StmtFunctionDef) -> MethodKind {
    let decorated = |wanted: &str| {
        def.decorator_list
            .iter()
            .any(|d| last_name(&d.expression).is_some_and(|last| last == wanted))
    };
    if decorated("staticmethod") {
        MethodKind::Static
    } else if decorated("classmethod")
        || matches!(
            def.name.as_str(),
            "__new__" | "__init_subclass__" | "__class_getitem__"
        )
    {
        MethodKind::Class
    } else {
        MethodKind::Instance
    }
}

/// The class an annotation names: `T`, `mod.T`, `Optional[T]`, `T | None`,
/// or one of those written as a string (a forward reference, `"T"`), as
/// a name chain whose sites are where it stands in `source`, and whether
/// it was a string (its names are then looked up when the annotation is
/// read, not where it stands). Other generics name none.
pub(super) fn annotation_chain(source: &str, annotation: &Expr) -> Option<(Expr, bool)> {
    match annotation {
        Expr::Name(_) | Expr::Attribute(_) => Some((annotation.clone(), false)),
        Expr::StringLiteral(string) => match forward_reference(source, string)? {
            // A string in a string names nothing.
            Expr::StringLiteral(_) => None,
            parsed => annotation_chain(source, &parsed).map(|(chain, _)| (chain, true)),
        },
        Expr::Subscript(subscript) => match last_name(&subscript.value).as_deref() {
            Some("Optional") => annotation_chain(source, &subscript.slice),
            _ => None,
        },
        Expr::BinOp(binop) if binop.op == Operator::BitOr => {
            match (binop.left.as_ref(), binop.right.as_ref()) {
                (Expr::NoneLiteral(_), other) | (other, Expr::NoneLiteral(_)) => {
                    annotation_chain(source, other)
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// Forward references are names, not programs: a longer string is not
/// parsed.
const MAX_FORWARD_REFERENCE: usize = 256;

/// A string annotation parsed where it stands, so its names keep their
/// sites: one literal whose text in the source is its value (no escapes,
/// no implicit concatenation).
fn forward_reference(source: &str, string: &ast::ExprStringLiteral) -> Option<Expr> {
    let [literal] = string.value.as_slice() else {
        return None;
    };
    if literal.value.len() > MAX_FORWARD_REFERENCE {
        return None;
    }
    let inner = literal
        .range
        .add_start(literal.flags.opener_len())
        .sub_end(literal.flags.closer_len());
    if source.get(inner.start().to_usize()..inner.end().to_usize())? != &*literal.value {
        return None;
    }
    let parsed = ruff_python_parser::parse_string_annotation(source, literal).ok()?;
    Some(parsed.into_expr())
}

/// The expression a class base names: `B`, `mod.B`, or `B` for `B[T]`.
pub(super) fn base_chain(base: &Expr) -> &Expr {
    match base {
        Expr::Subscript(ast::ExprSubscript { value, .. }) => value,
        other => other,
    }
}

/// What one binding holds: one declaration, or the alternatives of a value
/// such as `a or b()`; `None` when not statically known.
pub(super) type Declared = Option<Vec<(TypeSource, Reference)>>;

/// At most this many different alternatives make a declaration the rules
/// settle; more, and the name is left unknown.
pub(super) const MAX_ALTERNATIVES: usize = 4;

/// Declarations gathered while walking a module, decided at its end: a
/// name holds a known type only when every binding agrees (one annotation,
/// or the same callee for every assignment). Bindings and alternatives
/// that name different callees or annotated locals are handed to the rules
/// as `Either` declarations: they agree when all give the same class after
/// resolution. A module variable must also be bound by nothing else
/// (loops, imports, `def`s), where or whether each binding runs aside.
#[derive(Default)]
pub(super) struct Declarations {
    bound: BTreeMap<String, Vec<Declared>>,
    returns: Vec<Typed>,
}

impl Declarations {
    pub(super) fn bind(&mut self, qualname: String, declared: Declared) {
        self.bound.entry(qualname).or_default().push(declared);
    }

    pub(super) fn returns(
        &mut self,
        qualname: String,
        (source, reference): (TypeSource, Reference),
    ) {
        self.returns.push(Typed {
            qualname: Name::from(qualname.as_str()),
            source,
            reference,
        });
    }

    /// `rebound`: module variables a function rebinds (`global x`), of
    /// which nothing is known.
    pub(super) fn finish(
        self,
        module_bindings: &[Binding],
        rebound: &rustc_hash::FxHashSet<String>,
    ) -> Vec<Typed> {
        let mut types = Vec::new();
        for (qualname, declared) in self.bound {
            if !qualname.contains('.') {
                if rebound.contains(&qualname) {
                    continue;
                }
                let bindings = module_bindings
                    .iter()
                    .filter(|b| b.name == qualname)
                    .count();
                // Conditional bindings are fine when every binding is one
                // of these: whichever ran, the name holds what they agree on.
                if bindings != declared.len() {
                    continue;
                }
            }
            types.extend(
                chosen(declared)
                    .into_iter()
                    .map(|(source, reference)| Typed {
                        qualname: Name::from(qualname.as_str()),
                        source,
                        reference,
                    }),
            );
        }
        // A function defined twice (a conditional redefinition) has no
        // certain return type.
        let mut returns = self.returns;
        returns.sort_by(|a, b| a.qualname.cmp(&b.qualname));
        let mut index = 0;
        while index < returns.len() {
            let end = returns[index..]
                .iter()
                .position(|t| t.qualname != returns[index].qualname)
                .map_or(returns.len(), |n| index + n);
            if end - index == 1 {
                types.push(returns[index].clone());
            }
            index = end;
        }
        types
    }
}

/// What the bindings of one name declare together: the annotation when
/// there is one (every annotation naming the same chain); else the one
/// thing every binding and alternative names; else, when each names a
/// callee or an annotated local, each of them as an `Either` declaration
/// for the rules to settle; else nothing.
fn chosen(declared: Vec<Declared>) -> Vec<(TypeSource, Reference)> {
    let annotations: Vec<&Reference> = declared
        .iter()
        .flatten()
        .flatten()
        .filter(|(source, _)| *source == TypeSource::Annotation)
        .map(|(_, r)| r)
        .collect();
    if let Some(first) = annotations.first() {
        return if annotations.iter().all(|r| r.path == first.path) {
            vec![(TypeSource::Annotation, (*first).clone())]
        } else {
            Vec::new()
        };
    }
    if declared.iter().any(Option::is_none) {
        return Vec::new();
    }
    let mut alternatives: Vec<(TypeSource, Reference)> = Vec::new();
    for (source, reference) in declared.into_iter().flatten().flatten() {
        if !alternatives
            .iter()
            .any(|(s, r)| *s == source && r.path == reference.path)
        {
            alternatives.push((source, reference));
        }
    }
    if alternatives.len() == 1 {
        return alternatives;
    }
    if alternatives.len() > MAX_ALTERNATIVES {
        return Vec::new();
    }
    let mut either = Vec::new();
    for (source, reference) in alternatives {
        either.push(match source {
            TypeSource::Call => (TypeSource::EitherCall, reference),
            TypeSource::Holds => (TypeSource::EitherHolds, reference),
            _ => return Vec::new(),
        });
    }
    either
}
