//! Methods that return an instance of the class they are called on:
//! `return self`, `return self.__class__(...)`, `return type(self)(...)`,
//! `return cls(...)` in a classmethod, or the result of another such
//! method of the receiver (`return self._clone()`). Fluent and copying
//! APIs (`qs.filter(...).order_by(...)`, builders, `copy()`) are written
//! this way, and a call on a subclass instance then gives the subclass,
//! which a return annotation naming the class would not.
//!
//! The extractor only records the shape of each `return`; which method a
//! `self.m()` reaches is decided by the rules, from the receiver's class.

use ruff_python_ast::Expr;

use super::{Extractor, FrameKind, NameValue, is_name};
use crate::facts::{ExprId, ExprKind, Lookup, Name, OwnReturn};

/// What a function's `return` statements give, as far as they agree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) enum Own {
    /// No `return` with a value yet.
    #[default]
    Nothing,
    /// An instance of the receiver's class.
    Instance,
    /// An instance of the receiver's class, or what calling the receiver's
    /// method of this name gives.
    Via(Name),
    Unknown,
}

impl Own {
    fn merge(self, other: Own) -> Own {
        match (self, other) {
            (Own::Unknown, _) | (_, Own::Unknown) => Own::Unknown,
            (Own::Nothing, shape) | (shape, Own::Nothing) => shape,
            (Own::Instance, Own::Instance) => Own::Instance,
            (Own::Instance, Own::Via(name)) | (Own::Via(name), Own::Instance) => Own::Via(name),
            (Own::Via(a), Own::Via(b)) if a == b => Own::Via(a),
            (Own::Via(_), Own::Via(_)) => Own::Unknown,
        }
    }

    /// The declaration a method with these returns makes, if any.
    pub(super) fn declaration(self, qualname: &str, classmethod: bool) -> Option<OwnReturn> {
        let via = match self {
            Own::Instance => None,
            // `cls.other()` would be looked up on a class, not an instance.
            Own::Via(name) if !classmethod => Some(name),
            Own::Via(_) | Own::Nothing | Own::Unknown => return None,
        };
        Some(OwnReturn {
            qualname: Name::from(qualname),
            classmethod,
            via,
            declared: None,
        })
    }
}

/// The receiver a name holds in the method being walked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Receiver {
    /// `self` of an instance method.
    Instance,
    /// `cls` of a classmethod.
    Class,
}

impl Extractor<'_> {
    /// Folds the value of a `return` into the innermost method's shape.
    pub(super) fn own_return(&mut self, value: Option<&Expr>) {
        let shape = match value.filter(|v| !v.is_none_literal_expr()) {
            None => Own::Nothing,
            Some(value) => self.own_shape(value),
        };
        if let Some(frame) = self.scopes.last_mut() {
            frame.own = std::mem::take(&mut frame.own).merge(shape);
        }
    }

    fn own_shape(&self, value: &Expr) -> Own {
        let Some(class) = self
            .scopes
            .last()
            .filter(|f| f.kind == FrameKind::Deferred)
            .and_then(|f| f.class)
        else {
            return Own::Unknown;
        };
        let receiver = |expr: &Expr| match expr {
            Expr::Name(name) => match self.name_value(name.id.as_str()) {
                NameValue::Local(Some(id)) => self.receiver_of(id, class),
                _ => None,
            },
            _ => None,
        };
        match value {
            Expr::Name(name) => match self.name_value(name.id.as_str()) {
                NameValue::Local(Some(id)) => self.own_shape_of(id, class),
                _ => Own::Unknown,
            },
            Expr::Call(call) => match call.func.as_ref() {
                callee @ Expr::Name(_) if receiver(callee) == Some(Receiver::Class) => {
                    Own::Instance
                }
                Expr::Attribute(attribute) => match receiver(&attribute.value) {
                    Some(Receiver::Instance) if attribute.attr.as_str() == "__class__" => {
                        Own::Instance
                    }
                    Some(_) => Own::Via(Name::from(attribute.attr.as_str())),
                    None => Own::Unknown,
                },
                // `type(self)(...)`, with the built-in `type`.
                Expr::Call(inner)
                    if is_name(&inner.func, "type")
                        && matches!(self.lookup("type"), Some(Lookup::Globals))
                        && inner.arguments.keywords.is_empty()
                        && matches!(&inner.arguments.args[..], [only] if receiver(only) == Some(Receiver::Instance)) =>
                {
                    Own::Instance
                }
                _ => Own::Unknown,
            },
            _ => Own::Unknown,
        }
    }

    /// The shape of a local's value (an expression of the flattened table).
    fn own_shape_of(&self, id: ExprId, class: u32) -> Own {
        let kind = |id: ExprId| self.semantic.expressions.get(id as usize).map(|e| &e.kind);
        match kind(id) {
            Some(ExprKind::SelfOf { class: c }) if *c == class => Own::Instance,
            Some(ExprKind::Call { callee }) => match kind(*callee) {
                Some(ExprKind::ClassOf { class: c }) if *c == class => Own::Instance,
                Some(ExprKind::Attribute { base, name }) => {
                    let Some(name) = self.semantic.names.get(*name as usize) else {
                        return Own::Unknown;
                    };
                    match self.receiver_of(*base, class) {
                        Some(Receiver::Instance) if name == "__class__" => Own::Instance,
                        Some(_) => Own::Via(name.clone()),
                        None => Own::Unknown,
                    }
                }
                _ => Own::Unknown,
            },
            _ => Own::Unknown,
        }
    }

    /// Whether expression `id` is the receiver of a method of `class`.
    fn receiver_of(&self, id: ExprId, class: u32) -> Option<Receiver> {
        match self.semantic.expressions.get(id as usize)?.kind {
            ExprKind::SelfOf { class: c } if c == class => Some(Receiver::Instance),
            ExprKind::ClassOf { class: c } if c == class => Some(Receiver::Class),
            _ => None,
        }
    }
}
