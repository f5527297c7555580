//! String-keyed extension points as written (`PluginUse`): Django signal
//! definitions, receivers and senders, pluggy markers and the functions
//! they decorate, and calls that load an entry-point group. Only shapes
//! whose key is a literal or a name chain are recorded; the engine decides
//! whether the names are Django's, pluggy's or importlib's.

use ruff_python_ast::{self as ast, Expr, StmtFunctionDef};
use ruff_text_size::{Ranged, TextSize};

use super::Extractor;
use crate::facts::{Name, PluginKind, PluginUse};

/// Signal methods that register a receiver (`false`) or send (`true`).
const SIGNAL_METHODS: &[(&str, bool)] = &[
    ("connect", false),
    ("send", true),
    ("send_robust", true),
    ("asend", true),
    ("asend_robust", true),
];

/// Functions that return entry points: `importlib.metadata.entry_points`
/// (and its backport) and `pkg_resources.iter_entry_points`.
const LOADERS: &[&str] = &["entry_points", "iter_entry_points"];

impl Extractor<'_> {
    fn push_plugin(&mut self, at: TextSize, kind: PluginKind) {
        let site = self.add_site(at);
        self.semantic.plugins.push(PluginUse { site, kind });
    }

    /// `name = factory(...)` at module level, run unconditionally.
    pub(super) fn plugin_factory(&mut self, assign: &ast::StmtAssign) {
        if !self.at_module_scope() || !self.conditions.is_empty() {
            return;
        }
        let ([Expr::Name(target)], Expr::Call(call)) = (&assign.targets[..], &*assign.value) else {
            return;
        };
        let Some(factory) = self.reference(&call.func) else {
            return;
        };
        let argument = call.arguments.args.first().and_then(literal);
        let kind = PluginKind::Factory {
            name: Name::from(target.id.as_str()),
            factory,
            argument,
        };
        self.push_plugin(target.range.start(), kind);
    }

    /// Signal calls and entry-point loads.
    pub(super) fn plugin_call(&mut self, call: &ast::ExprCall) {
        if is_loader(&call.func) {
            // `entry_points(group="g")`, `pkg_resources.iter_entry_points("g")`.
            self.loads_group(call, &call.func, true);
            return;
        }
        let Expr::Attribute(attribute) = call.func.as_ref() else {
            return;
        };
        let method = attribute.attr.as_str();
        if let Some(&(_, sends)) = SIGNAL_METHODS.iter().find(|(m, _)| *m == method) {
            if let Some(signal) = self.reference(&attribute.value) {
                let kind = PluginKind::SignalCall { signal, sends };
                self.push_plugin(attribute.attr.range.start(), kind);
            }
            return;
        }
        match (method, attribute.value.as_ref()) {
            // `pm.load_setuptools_entrypoints("g")`: pluggy's name alone
            // says what it is, whatever `pm` is.
            ("load_setuptools_entrypoints", _) => {
                if let Some(group) = group_argument(call, true) {
                    let kind = PluginKind::LoadsGroup {
                        loader: None,
                        group,
                    };
                    self.push_plugin(attribute.attr.range.start(), kind);
                }
            }
            // `entry_points().select(group="g")`, `entry_points().get("g")`.
            ("select" | "get", Expr::Call(inner))
                if inner.arguments.is_empty() && is_loader(&inner.func) =>
            {
                self.loads_group(call, &inner.func, method == "get");
            }
            _ => {}
        }
    }

    /// `entry_points()["g"]`.
    pub(super) fn plugin_subscript(&mut self, subscript: &ast::ExprSubscript) {
        let Expr::Call(inner) = subscript.value.as_ref() else {
            return;
        };
        if !inner.arguments.is_empty() || !is_loader(&inner.func) {
            return;
        }
        let (Some(group), Some(loader)) = (literal(&subscript.slice), self.reference(&inner.func))
        else {
            return;
        };
        let kind = PluginKind::LoadsGroup {
            loader: Some(loader),
            group,
        };
        self.push_plugin(last_name(&inner.func), kind);
    }

    /// A load of the literal group `call` names (`group=`, or the first
    /// argument if `positional`) through the function `loader`.
    fn loads_group(&mut self, call: &ast::ExprCall, loader: &Expr, positional: bool) {
        let Some(group) = group_argument(call, positional) else {
            return;
        };
        let Some(reference) = self.reference(loader) else {
            return;
        };
        let kind = PluginKind::LoadsGroup {
            loader: Some(reference),
            group,
        };
        self.push_plugin(last_name(&call.func), kind);
    }

    /// Decorators of a function, evaluated where the definition stands.
    pub(super) fn plugin_decorators(&mut self, def: &StmtFunctionDef) {
        for decorator in &def.decorator_list {
            let (callee, call) = match &decorator.expression {
                Expr::Call(call) => (call.func.as_ref(), Some(call)),
                other => (other, None),
            };
            let Some(reference) = self.reference(callee) else {
                continue;
            };
            let mut arguments = Vec::new();
            let mut hook = Some(Name::from(def.name.as_str()));
            if let Some(call) = call {
                let elements = match call.arguments.args.first() {
                    Some(Expr::List(list)) => list.elts.iter().collect(),
                    Some(Expr::Tuple(tuple)) => tuple.elts.iter().collect(),
                    Some(other) => vec![other],
                    None => Vec::new(),
                };
                arguments = crate::facts::exact(
                    elements
                        .into_iter()
                        .filter_map(|e| self.reference(e))
                        .collect(),
                );
                if let Some(specname) = call.arguments.find_keyword("specname") {
                    hook = literal(&specname.value);
                }
            }
            let kind = PluginKind::Decorator {
                decorator: reference,
                arguments,
                hook,
            };
            self.push_plugin(decorator.expression.range().start(), kind);
        }
    }
}

/// Whether `func` is a name chain ending in an entry-point loader's name.
fn is_loader(func: &Expr) -> bool {
    let mut path = Vec::new();
    super::name_chain(func, &mut path).is_some()
        && path.last().is_some_and(|n| LOADERS.contains(&n.as_str()))
}

/// The literal `group=` argument, or (if `positional`) the literal first
/// positional one.
fn group_argument(call: &ast::ExprCall, positional: bool) -> Option<Name> {
    if let Some(keyword) = call.arguments.find_keyword("group") {
        return literal(&keyword.value);
    }
    positional
        .then(|| call.arguments.args.first())
        .flatten()
        .and_then(literal)
}

fn literal(expr: &Expr) -> Option<Name> {
    match expr {
        Expr::StringLiteral(s) => Some(Name::from(s.value.to_str())),
        _ => None,
    }
}

/// Where the last name of a callee starts (`select` in `x().select`).
fn last_name(func: &Expr) -> TextSize {
    match func {
        Expr::Attribute(attribute) => attribute.attr.range.start(),
        other => other.range().start(),
    }
}
