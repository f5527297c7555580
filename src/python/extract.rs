//! One pass over a parsed module that records imports, bindings, calls, class
//! bases, `__all__` and definitions, with Python's scoping rules applied so
//! that a call is only recorded when its name can refer to a module global or
//! to an import.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{
    self as ast, ExceptHandler, Expr, Parameters, Stmt, StmtClassDef, StmtFunctionDef, StringFlags,
};
use ruff_source_file::LineIndex;
use ruff_text_size::{Ranged, TextRange, TextSize};
use rustc_hash::{FxHashMap, FxHashSet};

use super::dynamic;
use super::facts::{
    Binding, BindingKind, Condition, Definition, DefinitionKind, DunderAll, Dynamic,
    DynamicPattern, Import, ImportTarget, Lookup, ModuleFacts, Reference, Scope, Semantic, Site,
    SiteId,
};

/// Stack head-room the recursive walkers keep; below it they continue on a
/// freshly allocated segment, so a deeply nested file cannot overflow the stack.
const RED_ZONE: usize = 128 * 1024;
const STACK_SEGMENT: usize = 4 * 1024 * 1024;

/// Expressions quoted in dynamic-pattern facts are cut to this many characters.
const SHORT_TEXT: usize = 60;

pub(super) struct Extractor<'src> {
    source: &'src str,
    lines: LineIndex,
    facts: ModuleFacts,
    semantic: Semantic,
    scopes: Vec<Frame>,
    conditions: Vec<Condition>,
    class_names: Vec<String>,
    depth: usize,
    pub(super) max_depth: usize,
}

/// One function, lambda, comprehension or class scope. The module scope is
/// the empty stack.
struct Frame {
    kind: FrameKind,
    locals: FxHashMap<String, Local>,
    globals: FxHashSet<String>,
    nonlocals: FxHashSet<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FrameKind {
    /// A `def` or `lambda` body: runs later, sees the final module globals.
    Deferred,
    /// A class body or comprehension: runs where it stands.
    Immediate,
    /// A class body: like `Immediate`, but invisible to nested functions.
    Class,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Local {
    /// Bound only by imports; `None` until the import statement is reached.
    Import(Option<u32>),
    Other,
}

impl<'src> Extractor<'src> {
    pub(super) fn new(source: &'src str) -> Self {
        Self {
            source,
            lines: LineIndex::from_source_text(source),
            facts: ModuleFacts::default(),
            semantic: Semantic::default(),
            scopes: Vec::new(),
            conditions: Vec::new(),
            class_names: Vec::new(),
            depth: 0,
            max_depth: 0,
        }
    }

    pub(super) fn finish(self) -> ModuleFacts {
        ModuleFacts {
            semantic: std::sync::Arc::new(self.semantic),
            ..self.facts
        }
    }

    pub(super) fn site_of(&self, offset: TextSize) -> Site {
        position(&self.lines, self.source, offset)
    }

    fn add_site(&mut self, offset: TextSize) -> SiteId {
        let site = self.site_of(offset);
        self.facts.sites.push(site);
        (self.facts.sites.len() - 1) as SiteId
    }

    fn sem(&mut self) -> &mut Semantic {
        &mut self.semantic
    }

    fn at_module_scope(&self) -> bool {
        self.scopes.is_empty()
    }

    fn current_scope(&self) -> Scope {
        match self
            .scopes
            .iter()
            .rev()
            .find(|f| f.kind != FrameKind::Immediate)
        {
            None => Scope::Module,
            Some(f) if f.kind == FrameKind::Class => Scope::Class,
            Some(_) => Scope::Function,
        }
    }

    fn text(&self, node: &impl Ranged) -> &'src str {
        &self.source[node.range()]
    }

    fn bind_module(&mut self, name: &str, kind: BindingKind) {
        if self.at_module_scope() {
            let conditional = !self.conditions.is_empty();
            self.sem().bindings.push(Binding {
                name: name.to_string(),
                kind,
                conditional,
            });
        }
    }

    fn bind_targets(&mut self, target: &Expr, kind: BindingKind) {
        let mut names = Vec::new();
        target_names(target, &mut names);
        for name in names {
            self.bind_module(name, kind);
        }
    }

    /// How the head of a name chain is looked up from the current position,
    /// or `None` when it is a local variable that no import binds.
    fn lookup(&self, name: &str) -> Option<Lookup> {
        let mut deferred = false;
        let innermost = self.scopes.len();
        for (index, frame) in self.scopes.iter().enumerate().rev() {
            if frame.kind == FrameKind::Deferred {
                deferred = true;
            }
            if frame.kind == FrameKind::Class && index + 1 != innermost {
                continue;
            }
            if frame.globals.contains(name) {
                break;
            }
            if frame.nonlocals.contains(name) {
                continue;
            }
            match frame.locals.get(name) {
                Some(Local::Import(Some(index))) => return Some(Lookup::LocalImport(*index)),
                Some(_) => return None,
                None => {}
            }
        }
        if deferred {
            Some(Lookup::Globals)
        } else {
            let visible = self.semantic.bindings.len() as u32;
            Some(Lookup::GlobalsAt { visible })
        }
    }

    fn reference(&mut self, expr: &Expr) -> Option<Reference> {
        let mut path = Vec::new();
        let name_start = name_chain(expr, &mut path)?;
        let lookup = self.lookup(&path[0])?;
        let site = self.add_site(name_start);
        Some(Reference { site, path, lookup })
    }

    pub(super) fn module(&mut self, body: &[Stmt]) {
        self.suite(body);
    }

    fn suite(&mut self, body: &[Stmt]) {
        for stmt in body {
            self.visit_stmt(stmt);
        }
    }

    fn conditional_suite(&mut self, condition: Condition, body: &[Stmt]) {
        self.conditions.push(condition);
        self.suite(body);
        self.conditions.pop();
    }

    fn import(&mut self, target: ImportTarget, alias: Option<&ast::Identifier>, at: TextSize) {
        let site = self.add_site(at);
        let import = Import {
            target,
            alias: alias.map(|a| a.id.to_string()),
            site,
            condition: self.conditions.last().copied(),
            scope: self.current_scope(),
        };
        let bound = import.bound_name().map(str::to_string);
        self.sem().imports.push(import);
        let index = (self.semantic.imports.len() - 1) as u32;
        let Some(name) = bound else { return };
        if let Some(frame) = self.scopes.last_mut() {
            if let Some(Local::Import(slot)) = frame.locals.get_mut(&name) {
                *slot = Some(index);
            }
        } else {
            self.bind_module(&name, BindingKind::Import(index));
        }
    }

    fn function_def(&mut self, def: &StmtFunctionDef) {
        self.decorators(&def.decorator_list);
        self.parameter_defaults(&def.parameters);
        if let Some(returns) = &def.returns {
            self.visit_expr(returns);
        }
        self.record_function(def);
        self.bind_module(def.name.as_str(), BindingKind::Definition);

        let mut locals = FxHashMap::default();
        for parameter in def.parameters.iter() {
            locals.insert(parameter.name().to_string(), Local::Other);
        }
        let mut frame = Frame::new(FrameKind::Deferred, locals);
        collect_locals(&def.body, &mut frame);
        self.scopes.push(frame);
        self.suite(&def.body);
        self.scopes.pop();
    }

    fn parameter_defaults(&mut self, parameters: &Parameters) {
        for parameter in parameters.iter() {
            if let Some(default) = parameter.default() {
                self.visit_expr(default);
            }
            if let Some(annotation) = parameter.annotation() {
                self.visit_expr(annotation);
            }
        }
    }

    fn class_def(&mut self, class: &StmtClassDef) {
        self.decorators(&class.decorator_list);
        if let Some(arguments) = &class.arguments {
            for base in arguments.args.iter() {
                if let Some(reference) = self.reference(base) {
                    self.sem().bases.push(reference);
                }
                self.visit_expr(base);
            }
            for keyword in arguments.keywords.iter() {
                if keyword
                    .arg
                    .as_ref()
                    .is_some_and(|a| a.as_str() == "metaclass")
                {
                    self.metaclass(class.name.as_str(), keyword.range.start(), &keyword.value);
                }
                self.visit_expr(&keyword.value);
            }
        }
        self.record_class(class);
        self.bind_module(class.name.as_str(), BindingKind::Definition);

        let mut frame = Frame::new(FrameKind::Class, FxHashMap::default());
        collect_locals(&class.body, &mut frame);
        self.scopes.push(frame);
        self.class_names.push(class.name.to_string());
        self.suite(&class.body);
        self.class_names.pop();
        self.scopes.pop();
    }

    fn record_function(&mut self, def: &StmtFunctionDef) {
        let in_class = self
            .scopes
            .last()
            .is_some_and(|f| f.kind == FrameKind::Class);
        if !(self.at_module_scope() || in_class && self.class_names.len() == self.scopes.len()) {
            return;
        }
        let kind = match (in_class, def.is_async) {
            (true, _) => DefinitionKind::Method,
            (false, true) => DefinitionKind::AsyncFunction,
            (false, false) => DefinitionKind::Function,
        };
        let mut signature = format!(
            "{}def {}{}",
            if def.is_async { "async " } else { "" },
            def.name.as_str(),
            self.text(def.parameters.as_ref())
        );
        if let Some(returns) = &def.returns {
            signature.push_str(" -> ");
            signature.push_str(self.text(returns.as_ref()));
        }
        self.push_definition(
            self.qualify(def.name.as_str()),
            kind,
            signature,
            &def.body,
            &def.decorator_list,
            TextRange::new(def.name.range.start(), def.range.end()),
        );
    }

    fn record_class(&mut self, class: &StmtClassDef) {
        if !self.at_module_scope() {
            return;
        }
        let mut signature = format!("class {}", class.name.as_str());
        if let Some(arguments) = &class.arguments {
            signature.push_str(self.text(arguments.as_ref()));
        }
        self.push_definition(
            class.name.to_string(),
            DefinitionKind::Class,
            signature,
            &class.body,
            &class.decorator_list,
            TextRange::new(class.name.range.start(), class.range.end()),
        );
    }

    fn qualify(&self, name: &str) -> String {
        match self.class_names.last() {
            Some(class) if !self.at_module_scope() => format!("{class}.{name}"),
            _ => name.to_string(),
        }
    }

    fn push_definition(
        &mut self,
        qualname: String,
        kind: DefinitionKind,
        signature: String,
        body: &[Stmt],
        decorators: &[ast::Decorator],
        // From the `def`/`class` name (not the first decorator) to the end.
        lines: TextRange,
    ) {
        let definition = Definition {
            qualname,
            kind,
            signature: fold_whitespace(&signature),
            docstring: docstring(body),
            decorators: decorators
                .iter()
                .map(|d| fold_whitespace(self.text(&d.expression)))
                .collect(),
            start_line: self.site_of(lines.start()).line,
            end_line: self.site_of(lines.end()).line,
        };
        self.facts.definitions.push(definition);
    }

    fn record_variable(&mut self, target: &Expr, stmt: &Stmt) {
        if !self.at_module_scope() {
            return;
        }
        let Expr::Name(name) = target else { return };
        let first_line = self.text(stmt).lines().next().unwrap_or_default();
        let signature: String = first_line.chars().take(120).collect();
        self.facts.definitions.push(Definition {
            qualname: name.id.to_string(),
            kind: DefinitionKind::Variable,
            signature,
            docstring: None,
            decorators: Vec::new(),
            start_line: self.site_of(stmt.range().start()).line,
            end_line: self.site_of(stmt.range().end()).line,
        });
    }

    fn dunder_all(&mut self, stmt: &Stmt) {
        if !self.at_module_scope() {
            return;
        }
        let update = match stmt {
            Stmt::Assign(assign) if assign.targets.iter().any(|t| is_name(t, "__all__")) => {
                Some((false, string_list(&assign.value)))
            }
            Stmt::AnnAssign(assign) if is_name(&assign.target, "__all__") => {
                assign.value.as_ref().map(|v| (false, string_list(v)))
            }
            Stmt::AugAssign(assign) if is_name(&assign.target, "__all__") => {
                Some((true, string_list(&assign.value)))
            }
            Stmt::Expr(expr) => all_method_call(&expr.value).map(|names| (true, names)),
            _ => None,
        };
        let Some((extend, names)) = update else {
            return;
        };
        let all = &mut self.semantic.all;
        *all = match (extend, names, std::mem::take(all)) {
            (_, None, _) | (true, _, DunderAll::Dynamic) => DunderAll::Dynamic,
            (false, Some(names), _) | (true, Some(names), DunderAll::Absent) => {
                DunderAll::Names(names)
            }
            (true, Some(mut more), DunderAll::Names(mut names)) => {
                names.append(&mut more);
                DunderAll::Names(names)
            }
        };
    }

    fn try_stmt(&mut self, stmt: &ast::StmtTry) {
        let guards_import = stmt.handlers.iter().any(|ExceptHandler::ExceptHandler(h)| {
            h.type_.as_deref().is_none_or(catches_import_error)
        });
        let condition = if guards_import {
            Condition::TryExcept
        } else {
            Condition::Other
        };
        self.conditional_suite(condition, &stmt.body);
        for ExceptHandler::ExceptHandler(handler) in &stmt.handlers {
            if let Some(type_) = &handler.type_ {
                self.visit_expr(type_);
            }
            if let Some(name) = &handler.name {
                self.bind_module(name.as_str(), BindingKind::Other);
            }
            self.conditional_suite(condition, &handler.body);
        }
        self.conditional_suite(condition, &stmt.orelse);
        self.suite(&stmt.finalbody);
    }

    fn if_stmt(&mut self, stmt: &ast::StmtIf) {
        self.visit_expr(&stmt.test);
        let condition = classify_condition(&stmt.test);
        self.conditional_suite(condition, &stmt.body);
        for clause in &stmt.elif_else_clauses {
            if let Some(test) = &clause.test {
                self.visit_expr(test);
            }
            // The else branch of `if TYPE_CHECKING` runs at run time only.
            let branch = match condition {
                Condition::TypeChecking => Condition::Other,
                other => other,
            };
            self.conditional_suite(branch, &clause.body);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match stmt {
            Stmt::FunctionDef(def) => self.function_def(def),
            Stmt::ClassDef(class) => self.class_def(class),
            Stmt::Import(import) => {
                for alias in &import.names {
                    let target = ImportTarget::Module {
                        dotted: alias.name.to_string(),
                    };
                    self.import(target, alias.asname.as_ref(), alias.name.range.start());
                }
            }
            Stmt::ImportFrom(from) => {
                let module = from.module.as_ref().map(|m| m.to_string());
                for alias in &from.names {
                    let at = from
                        .module
                        .as_ref()
                        .map_or(alias.name.range.start(), |m| m.range.start());
                    let target = if alias.name.as_str() == "*" {
                        ImportTarget::Star {
                            level: from.level,
                            module: module.clone(),
                        }
                    } else {
                        ImportTarget::From {
                            level: from.level,
                            module: module.clone(),
                            name: alias.name.to_string(),
                        }
                    };
                    self.import(target, alias.asname.as_ref(), at);
                }
            }
            Stmt::If(stmt) => self.if_stmt(stmt),
            Stmt::Try(stmt) => self.try_stmt(stmt),
            Stmt::Assign(assign) => {
                self.visit_expr(&assign.value);
                self.dunder_all(stmt);
                self.dunder_metaclass(assign);
                for target in &assign.targets {
                    self.attribute_assignments(target);
                    self.visit_expr(target);
                    self.bind_targets(target, BindingKind::Assignment);
                    self.record_variable(target, stmt);
                }
            }
            Stmt::AnnAssign(assign) => {
                self.visit_expr(&assign.annotation);
                if let Some(value) = &assign.value {
                    self.visit_expr(value);
                    self.dunder_all(stmt);
                    self.bind_targets(&assign.target, BindingKind::Assignment);
                    self.record_variable(&assign.target, stmt);
                }
                self.visit_expr(&assign.target);
            }
            Stmt::AugAssign(assign) => {
                self.visit_expr(&assign.value);
                self.dunder_all(stmt);
                self.visit_expr(&assign.target);
                self.bind_targets(&assign.target, BindingKind::Assignment);
            }
            Stmt::For(stmt) => {
                self.visit_expr(&stmt.iter);
                self.bind_targets(&stmt.target, BindingKind::Other);
                self.visit_expr(&stmt.target);
                self.conditional_suite(Condition::Other, &stmt.body);
                self.conditional_suite(Condition::Other, &stmt.orelse);
            }
            Stmt::While(stmt) => {
                self.visit_expr(&stmt.test);
                self.conditional_suite(Condition::Other, &stmt.body);
                self.conditional_suite(Condition::Other, &stmt.orelse);
            }
            Stmt::With(stmt) => {
                for item in &stmt.items {
                    self.visit_expr(&item.context_expr);
                    if let Some(vars) = &item.optional_vars {
                        self.bind_targets(vars, BindingKind::Other);
                        self.visit_expr(vars);
                    }
                }
                self.suite(&stmt.body);
            }
            Stmt::Match(stmt) => {
                self.visit_expr(&stmt.subject);
                for case in &stmt.cases {
                    if let Some(guard) = &case.guard {
                        self.visit_expr(guard);
                    }
                    self.conditional_suite(Condition::Other, &case.body);
                }
            }
            Stmt::Delete(delete) => {
                for target in &delete.targets {
                    self.bind_targets(target, BindingKind::Other);
                    self.visit_expr(target);
                }
            }
            Stmt::Expr(expr) => {
                self.dunder_all(stmt);
                self.visit_expr(&expr.value);
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn expr(&mut self, expr: &Expr) {
        match expr {
            Expr::Call(call) => {
                if let Some(reference) = self.reference(&call.func) {
                    self.sem().calls.push(reference);
                }
                self.dynamic_call(call);
                visitor::walk_expr(self, expr);
            }
            Expr::Lambda(lambda) => {
                let mut locals = FxHashMap::default();
                if let Some(parameters) = &lambda.parameters {
                    self.parameter_defaults(parameters);
                    for parameter in parameters.iter() {
                        locals.insert(parameter.name().to_string(), Local::Other);
                    }
                }
                self.scopes.push(Frame::new(FrameKind::Deferred, locals));
                self.visit_expr(&lambda.body);
                self.scopes.pop();
            }
            Expr::ListComp(ast::ExprListComp {
                elt, generators, ..
            })
            | Expr::SetComp(ast::ExprSetComp {
                elt, generators, ..
            })
            | Expr::Generator(ast::ExprGenerator {
                elt, generators, ..
            }) => self.comprehension(generators, &[elt]),
            Expr::DictComp(comp) => {
                let mut elements: Vec<&Expr> = comp.key.iter().map(AsRef::as_ref).collect();
                elements.push(&comp.value);
                self.comprehension(&comp.generators, &elements);
            }
            Expr::Named(named) => {
                self.visit_expr(&named.value);
                self.bind_targets(&named.target, BindingKind::Other);
            }
            _ => visitor::walk_expr(self, expr),
        }
    }

    fn comprehension(&mut self, generators: &[ast::Comprehension], elements: &[&Expr]) {
        let mut locals = FxHashMap::default();
        for generator in generators {
            let mut names = Vec::new();
            target_names(&generator.target, &mut names);
            locals.extend(names.into_iter().map(|n| (n.to_string(), Local::Other)));
        }
        // The first iterable is evaluated in the enclosing scope.
        let mut first = true;
        self.scopes
            .push(Frame::new(FrameKind::Immediate, FxHashMap::default()));
        for generator in generators {
            if first {
                let frame = self.scopes.pop();
                self.visit_expr(&generator.iter);
                self.scopes.extend(frame);
                if let Some(frame) = self.scopes.last_mut() {
                    frame.locals = std::mem::take(&mut locals);
                }
                first = false;
            } else {
                self.visit_expr(&generator.iter);
            }
            for condition in &generator.ifs {
                self.visit_expr(condition);
            }
        }
        for element in elements {
            self.visit_expr(element);
        }
        self.scopes.pop();
    }

    fn push_dynamic(&mut self, at: TextSize, pattern: DynamicPattern) {
        let site = self.add_site(at);
        self.sem().dynamic.push(Dynamic { site, pattern });
    }

    /// Source text of `node`, whitespace folded, cut to a readable length.
    fn short_text(&self, node: &impl Ranged) -> String {
        let folded = fold_whitespace(self.text(node));
        match folded.char_indices().nth(SHORT_TEXT) {
            Some((end, _)) => format!("{}...", &folded[..end]),
            None => folded,
        }
    }

    /// Dynamic imports (and literal ones, which are imports), dynamic
    /// dispatch and exec/eval. Whether the callee is the real built-in or
    /// importlib function is left to resolution.
    fn dynamic_call(&mut self, call: &ast::ExprCall) {
        let first = call.arguments.args.first();
        match call.func.as_ref() {
            Expr::Call(inner) if is_name(&inner.func, "getattr") => {
                let [object, name, ..] = &inner.arguments.args[..] else {
                    return;
                };
                if matches!(name, Expr::StringLiteral(_)) {
                    return;
                }
                let Some(callee) = self.reference(&inner.func) else {
                    return;
                };
                let (object, name) = (self.short_text(object), self.short_text(name));
                let pattern = DynamicPattern::Dispatch {
                    callee,
                    object,
                    name,
                };
                self.push_dynamic(call.range().start(), pattern);
            }
            Expr::Name(name) if matches!(name.id.as_str(), "exec" | "eval") => {
                if let Some(callee) = self.reference(&call.func) {
                    self.push_dynamic(call.range().start(), DynamicPattern::Exec { callee });
                }
            }
            func if dynamic::is_import_function(func) => {
                let Some(callee) = self.reference(func) else {
                    return;
                };
                match first {
                    Some(Expr::StringLiteral(literal))
                        if !literal.value.to_str().starts_with('.') =>
                    {
                        let dotted = literal.value.to_str().to_string();
                        let at = literal
                            .value
                            .iter()
                            .next()
                            .map_or(literal.range.start(), |part| {
                                part.range.start() + part.flags.opener_len()
                            });
                        self.import(ImportTarget::Call { dotted, callee }, None, at);
                    }
                    Some(argument) => {
                        let argument = self.short_text(argument);
                        let pattern = DynamicPattern::Import { callee, argument };
                        self.push_dynamic(call.range().start(), pattern);
                    }
                    None => {}
                }
            }
            _ => {}
        }
    }

    /// Decorators are expressions evaluated where the definition stands;
    /// those that may replace what they decorate are recorded (EC-8).
    fn decorators(&mut self, decorators: &[ast::Decorator]) {
        for decorator in decorators {
            let expression = &decorator.expression;
            let callee = match expression {
                Expr::Call(call) => call.func.as_ref(),
                other => other,
            };
            let mut path = Vec::new();
            let name = match name_chain(callee, &mut path) {
                Some(_) => path.join("."),
                None => self.short_text(callee),
            };
            if !dynamic::keeps_definition(&name) {
                self.push_dynamic(
                    expression.range().start(),
                    DynamicPattern::Decorator { name },
                );
            }
            self.visit_expr(expression);
        }
    }

    fn metaclass(&mut self, class: &str, at: TextSize, metaclass: &Expr) {
        let pattern = DynamicPattern::Metaclass {
            class: class.to_string(),
            metaclass: self.short_text(metaclass),
        };
        self.push_dynamic(at, pattern);
    }

    /// Python 2's `__metaclass__ = M` in a class body.
    fn dunder_metaclass(&mut self, assign: &ast::StmtAssign) {
        let in_class_body = self
            .scopes
            .last()
            .is_some_and(|f| f.kind == FrameKind::Class);
        if !in_class_body {
            return;
        }
        let Some(target) = assign.targets.iter().find(|t| is_name(t, "__metaclass__")) else {
            return;
        };
        let class = self.class_names.last().cloned().unwrap_or_default();
        self.metaclass(&class, target.range().start(), &assign.value);
    }

    /// `a.b = value` (also inside tuple targets) where `a` is not a local
    /// variable: a candidate monkey patch, decided by resolution (EC-7).
    fn attribute_assignments(&mut self, target: &Expr) {
        match target {
            Expr::Attribute(_) => {
                if let Some(reference) = self.reference(target) {
                    let pattern = DynamicPattern::AttributeAssignment { target: reference };
                    self.push_dynamic(target.range().start(), pattern);
                }
            }
            Expr::Tuple(tuple) => tuple
                .elts
                .iter()
                .for_each(|e| self.attribute_assignments(e)),
            Expr::List(list) => list.elts.iter().for_each(|e| self.attribute_assignments(e)),
            Expr::Starred(starred) => self.attribute_assignments(&starred.value),
            _ => {}
        }
    }

    fn guarded<F: FnOnce(&mut Self)>(&mut self, f: F) {
        self.depth += 1;
        self.max_depth = self.max_depth.max(self.depth);
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || f(self));
        self.depth -= 1;
    }
}

impl<'a> Visitor<'a> for Extractor<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        self.guarded(|this| this.stmt(stmt));
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        self.guarded(|this| this.expr(expr));
    }
}

impl Frame {
    fn new(kind: FrameKind, locals: FxHashMap<String, Local>) -> Self {
        Self {
            kind,
            locals,
            globals: FxHashSet::default(),
            nonlocals: FxHashSet::default(),
        }
    }

    fn bind(&mut self, name: &str, local: Local) {
        let entry = self.locals.entry(name.to_string()).or_insert(local);
        if local == Local::Other {
            *entry = Local::Other;
        }
    }
}

/// Names a function or class body binds anywhere, which makes them local to
/// it for the whole body (Python decides scope at compile time).
fn collect_locals(body: &[Stmt], frame: &mut Frame) {
    struct Collector<'f> {
        frame: &'f mut Frame,
    }
    impl<'a> Visitor<'a> for Collector<'_> {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || self.stmt(stmt));
        }
        fn visit_expr(&mut self, expr: &'a Expr) {
            stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || match expr {
                Expr::Named(named) => {
                    self.targets(&named.target);
                    self.visit_expr(&named.value);
                }
                Expr::Lambda(_) => {}
                _ => visitor::walk_expr(self, expr),
            });
        }
    }
    impl Collector<'_> {
        fn targets(&mut self, target: &Expr) {
            let mut names = Vec::new();
            target_names(target, &mut names);
            for name in names {
                self.frame.bind(name, Local::Other);
            }
        }
        fn stmt(&mut self, stmt: &Stmt) {
            match stmt {
                Stmt::FunctionDef(def) => self.frame.bind(def.name.as_str(), Local::Other),
                Stmt::ClassDef(class) => self.frame.bind(class.name.as_str(), Local::Other),
                Stmt::Import(import) => {
                    for alias in &import.names {
                        let name = alias.asname.as_ref().map_or_else(
                            || alias.name.split('.').next().unwrap_or_default(),
                            |a| a.as_str(),
                        );
                        self.frame.bind(name, Local::Import(None));
                    }
                }
                Stmt::ImportFrom(from) => {
                    for alias in from.names.iter().filter(|a| a.name.as_str() != "*") {
                        let name = alias.asname.as_ref().unwrap_or(&alias.name);
                        self.frame.bind(name.as_str(), Local::Import(None));
                    }
                }
                Stmt::Global(global) => {
                    for name in &global.names {
                        self.frame.globals.insert(name.to_string());
                    }
                }
                Stmt::Nonlocal(nonlocal) => {
                    for name in &nonlocal.names {
                        self.frame.nonlocals.insert(name.to_string());
                    }
                }
                Stmt::Assign(assign) => {
                    for target in &assign.targets {
                        self.targets(target);
                    }
                    self.visit_expr(&assign.value);
                }
                Stmt::AnnAssign(assign) => self.targets(&assign.target),
                Stmt::AugAssign(assign) => self.targets(&assign.target),
                Stmt::For(stmt) => {
                    self.targets(&stmt.target);
                    visitor::walk_body(self, &stmt.body);
                    visitor::walk_body(self, &stmt.orelse);
                }
                Stmt::With(stmt) => {
                    for item in &stmt.items {
                        if let Some(vars) = &item.optional_vars {
                            self.targets(vars);
                        }
                    }
                    visitor::walk_body(self, &stmt.body);
                }
                Stmt::Delete(delete) => {
                    for target in &delete.targets {
                        self.targets(target);
                    }
                }
                Stmt::Try(stmt) => {
                    visitor::walk_body(self, &stmt.body);
                    for ExceptHandler::ExceptHandler(handler) in &stmt.handlers {
                        if let Some(name) = &handler.name {
                            self.frame.bind(name.as_str(), Local::Other);
                        }
                        visitor::walk_body(self, &handler.body);
                    }
                    visitor::walk_body(self, &stmt.orelse);
                    visitor::walk_body(self, &stmt.finalbody);
                }
                Stmt::Match(stmt) => {
                    for case in &stmt.cases {
                        pattern_names(&case.pattern, self.frame);
                        visitor::walk_body(self, &case.body);
                    }
                }
                _ => visitor::walk_stmt(self, stmt),
            }
        }
    }
    visitor::walk_body(&mut Collector { frame }, body);
}

fn pattern_names(pattern: &ast::Pattern, frame: &mut Frame) {
    use ast::Pattern;
    match pattern {
        Pattern::MatchAs(p) => {
            if let Some(name) = &p.name {
                frame.bind(name.as_str(), Local::Other);
            }
            if let Some(inner) = &p.pattern {
                pattern_names(inner, frame);
            }
        }
        Pattern::MatchStar(p) => {
            if let Some(name) = &p.name {
                frame.bind(name.as_str(), Local::Other);
            }
        }
        Pattern::MatchMapping(p) => {
            if let Some(rest) = &p.rest {
                frame.bind(rest.as_str(), Local::Other);
            }
            p.patterns.iter().for_each(|p| pattern_names(p, frame));
        }
        Pattern::MatchSequence(p) => p.patterns.iter().for_each(|p| pattern_names(p, frame)),
        Pattern::MatchOr(p) => p.patterns.iter().for_each(|p| pattern_names(p, frame)),
        Pattern::MatchClass(p) => {
            p.arguments
                .patterns
                .iter()
                .for_each(|p| pattern_names(p, frame));
            for keyword in &p.arguments.keywords {
                pattern_names(&keyword.pattern, frame);
            }
        }
        Pattern::MatchValue(_) | Pattern::MatchSingleton(_) => {}
    }
}

/// The names an assignment target binds (attributes and subscripts bind none).
fn target_names<'a>(target: &'a Expr, out: &mut Vec<&'a str>) {
    match target {
        Expr::Name(name) => out.push(name.id.as_str()),
        Expr::Tuple(tuple) => tuple.elts.iter().for_each(|e| target_names(e, out)),
        Expr::List(list) => list.elts.iter().for_each(|e| target_names(e, out)),
        Expr::Starred(starred) => target_names(&starred.value, out),
        _ => {}
    }
}

/// Fills `path` with the names of `a.b.c` and returns where the last one starts.
fn name_chain(expr: &Expr, path: &mut Vec<String>) -> Option<TextSize> {
    match expr {
        Expr::Name(name) => {
            path.push(name.id.to_string());
            Some(name.range.start())
        }
        Expr::Attribute(attribute) => {
            name_chain(&attribute.value, path)?;
            path.push(attribute.attr.to_string());
            Some(attribute.attr.range.start())
        }
        _ => None,
    }
}

fn is_name(expr: &Expr, id: &str) -> bool {
    matches!(expr, Expr::Name(name) if name.id.as_str() == id)
}

fn string_list(expr: &Expr) -> Option<Vec<String>> {
    let elements = match expr {
        Expr::List(list) => &list.elts,
        Expr::Tuple(tuple) => &tuple.elts,
        _ => return None,
    };
    elements
        .iter()
        .map(|e| match e {
            Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
            _ => None,
        })
        .collect()
}

/// `__all__.extend([...])` / `__all__.append("x")`: `Some(None)` when the
/// argument is not a literal.
fn all_method_call(expr: &Expr) -> Option<Option<Vec<String>>> {
    let Expr::Call(call) = expr else { return None };
    let Expr::Attribute(attribute) = call.func.as_ref() else {
        return None;
    };
    if !is_name(&attribute.value, "__all__") {
        return None;
    }
    let argument = call.arguments.args.first();
    Some(match (attribute.attr.as_str(), argument) {
        ("extend", Some(list)) => string_list(list),
        ("append", Some(Expr::StringLiteral(s))) => Some(vec![s.value.to_str().to_string()]),
        _ => None,
    })
}

fn catches_import_error(type_: &Expr) -> bool {
    let is_import_error = |e: &Expr| {
        let mut path = Vec::new();
        name_chain(e, &mut path).is_some()
            && matches!(
                path.last().map(String::as_str),
                Some("ImportError" | "ModuleNotFoundError" | "Exception" | "BaseException")
            )
    };
    match type_ {
        Expr::Tuple(tuple) => tuple.elts.iter().any(is_import_error),
        other => is_import_error(other),
    }
}

fn classify_condition(test: &Expr) -> Condition {
    let mut path = Vec::new();
    if name_chain(test, &mut path).is_some() && path.last().is_some_and(|n| n == "TYPE_CHECKING") {
        return Condition::TypeChecking;
    }
    let mentions_version = |e: &Expr| {
        let mut path = Vec::new();
        name_chain(e, &mut path).is_some()
            && path
                .last()
                .is_some_and(|n| n == "version_info" || n == "PY3" || n == "PY2")
    };
    let version = match test {
        Expr::Compare(compare) => {
            mentions_version(&compare.left) || compare.comparators.iter().any(mentions_version)
        }
        Expr::Subscript(subscript) => mentions_version(&subscript.value),
        other => mentions_version(other),
    };
    if version {
        Condition::VersionCheck
    } else {
        Condition::Other
    }
}

fn docstring(body: &[Stmt]) -> Option<String> {
    let Some(Stmt::Expr(first)) = body.first() else {
        return None;
    };
    let Expr::StringLiteral(literal) = first.value.as_ref() else {
        return None;
    };
    literal
        .value
        .to_str()
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(str::to_string)
}

fn fold_whitespace(text: &str) -> String {
    let mut folded = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !folded.is_empty() && !folded.ends_with(['(', '[']) && !word.starts_with([')', ']']) {
            folded.push(' ');
        }
        folded.push_str(word);
    }
    folded
}

pub(super) fn position(lines: &LineIndex, source: &str, offset: TextSize) -> Site {
    let line = lines.line_index(offset);
    let start = lines.line_start(line, source);
    let column = source
        .get(start.to_usize()..offset.to_usize())
        .map_or(0, |s| s.chars().count());
    Site {
        line: u32::try_from(line.get()).unwrap_or(u32::MAX),
        column: u32::try_from(column).unwrap_or(u32::MAX),
    }
}
