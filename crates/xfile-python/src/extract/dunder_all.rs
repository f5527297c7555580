//! A module's `__all__`: string literals, and other modules' `__all__`
//! added to them (`__all__ = fields_all + indexes_all + ["Model"]`,
//! `__all__ += base.__all__`, `__all__.extend(...)`), as packages that
//! gather their submodules' exports write it. Anything else makes it
//! dynamic: what a star import takes is then unknown.

use ruff_python_ast::{Expr, Operator, Stmt};

use super::{Extractor, is_name};
use crate::facts::{DunderAll, Name, Reference};

/// What one expression adds to `__all__`: names, and references to other
/// modules' `__all__`.
type Parts = (Vec<Name>, Vec<Reference>);

impl Extractor<'_> {
    pub(super) fn dunder_all(&mut self, stmt: &Stmt) {
        if !self.at_module_scope() {
            return;
        }
        let update = match stmt {
            Stmt::Assign(assign) if assign.targets.iter().any(|t| is_name(t, "__all__")) => {
                Some((false, self.all_parts(&assign.value)))
            }
            Stmt::AnnAssign(assign) if is_name(&assign.target, "__all__") => {
                assign.value.as_ref().map(|v| (false, self.all_parts(v)))
            }
            Stmt::AugAssign(assign)
                if is_name(&assign.target, "__all__") && assign.op == Operator::Add =>
            {
                Some((true, self.all_parts(&assign.value)))
            }
            Stmt::AugAssign(assign) if is_name(&assign.target, "__all__") => Some((true, None)),
            Stmt::Expr(expr) => self.all_method_call(&expr.value).map(|p| (true, p)),
            _ => None,
        };
        let Some((extend, parts)) = update else {
            return;
        };
        let all = std::mem::take(&mut self.semantic.all);
        self.semantic.all = match (extend, parts, all) {
            (_, None, _) | (true, _, DunderAll::Dynamic) => {
                self.semantic.all_from.clear();
                DunderAll::Dynamic
            }
            (false, Some((names, from)), _) | (true, Some((names, from)), DunderAll::Absent) => {
                self.semantic.all_from = from;
                DunderAll::Names(names)
            }
            (true, Some((mut more, mut from)), DunderAll::Names(mut names)) => {
                names.append(&mut more);
                self.semantic.all_from.append(&mut from);
                DunderAll::Names(names)
            }
        };
    }

    /// `[...]`, `(...)`, another module's `__all__`, or a sum of those;
    /// `None` for anything else.
    fn all_parts(&mut self, expr: &Expr) -> Option<Parts> {
        match expr {
            Expr::List(_) | Expr::Tuple(_) => string_list(expr).map(|names| (names, Vec::new())),
            Expr::BinOp(sum) if sum.op == Operator::Add => {
                let (mut names, mut from) = self.all_parts(&sum.left)?;
                let (mut more, mut more_from) = self.all_parts(&sum.right)?;
                names.append(&mut more);
                from.append(&mut more_from);
                Some((names, from))
            }
            // Which name or attribute really is a module's `__all__` is
            // decided once imports resolve (base facts).
            Expr::Name(_) => Some((Vec::new(), vec![self.reference(expr)?])),
            Expr::Attribute(attribute) if attribute.attr.as_str() == "__all__" => {
                Some((Vec::new(), vec![self.reference(expr)?]))
            }
            _ => None,
        }
    }

    /// `__all__.extend(...)` / `__all__.append("x")`: `Some(None)` when
    /// the argument is not understood.
    fn all_method_call(&mut self, expr: &Expr) -> Option<Option<Parts>> {
        let Expr::Call(call) = expr else { return None };
        let Expr::Attribute(attribute) = call.func.as_ref() else {
            return None;
        };
        if !is_name(&attribute.value, "__all__") {
            return None;
        }
        let argument = call.arguments.args.first();
        Some(match (attribute.attr.as_str(), argument) {
            ("extend", Some(list)) => self.all_parts(list),
            ("append", Some(Expr::StringLiteral(s))) => {
                Some((vec![Name::from(s.value.to_str())], Vec::new()))
            }
            _ => None,
        })
    }
}

fn string_list(expr: &Expr) -> Option<Vec<Name>> {
    let elements = match expr {
        Expr::List(list) => &list.elts,
        Expr::Tuple(tuple) => &tuple.elts,
        _ => return None,
    };
    elements
        .iter()
        .map(|e| match e {
            Expr::StringLiteral(s) => Some(Name::from(s.value.to_str())),
            _ => None,
        })
        .collect()
}
