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

mod dunder_all;
mod flow;
mod links;
mod own_returns;
use super::facts::{
    Binding, BindingKind, CallArguments, CallSite, Class, Condition, Definition, DefinitionKind,
    DunderAll, Dynamic, DynamicPattern, ExprId, ExprKind, Expression, Import, ImportTarget, Lookup,
    ModuleFacts, Name, NameId, OwnReturn, Reference, Scope, Semantic, Site, SiteId, TypeSource,
    exact,
};
use super::members::{self, Declarations, Declared, MethodKind};

/// Stack head-room the recursive walkers keep; below it they continue on a
/// freshly allocated segment. Files reach them only up to
/// `nesting::MAX_DEPTH` levels deep, so the segments are bounded too.
const RED_ZONE: usize = 128 * 1024;
const STACK_SEGMENT: usize = 4 * 1024 * 1024;

/// The longest chain of attributes and calls (`a.b().c`: three links) a
/// member lookup starts from; fluent chains in real code stay far below.
const MAX_VALUE_CHAIN: usize = 64;

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
    /// Index of each scope's qualified name in `Semantic::scopes`.
    scope_ids: FxHashMap<String, u32>,
    /// Index of each name in `Semantic::names`.
    name_ids: FxHashMap<Name, NameId>,
    /// What module variables and class attributes are bound to, decided
    /// when the module is done.
    declarations: Declarations,
    /// `from __future__ import annotations`: every annotation is read
    /// late, as if it were a string.
    postponed_annotations: bool,
    /// Names are being looked up for an annotation read late: a global
    /// is the module's final binding, not the one bound so far.
    late_names: bool,
    /// Module variables bound to a `TypeVar(...)`: `def m(self: T) -> T`
    /// returns the receiver's own class.
    type_vars: FxHashSet<String>,
    /// Module variables a function rebinds (`global x`).
    rebound_globals: FxHashSet<String>,
}

/// One function, lambda, comprehension or class scope. The module scope is
/// the empty stack.
struct Frame {
    kind: FrameKind,
    /// Its statements run in order, so what reaches each use is followed
    /// (`flow.rs`): a function body or a `__main__` block.
    flows: bool,
    locals: FxHashMap<String, Local>,
    globals: FxHashSet<String>,
    nonlocals: FxHashSet<String>,
    /// How many statements (or parameters) bind each local.
    counts: FxHashMap<String, u32>,
    /// What a local bound exactly once holds, as an expression.
    values: FxHashMap<String, ExprId>,
    /// What a local bound more than once holds here (`flow.rs`).
    reaching: flow::Reaching,
    /// Locals a nested function declares `nonlocal`: never known.
    rebound_inside: FxHashSet<String>,
    /// Locals whose attributes the body sets (`C.x = ...`, `setattr(C,
    /// ...)`): a class bound to one of them is not known.
    patched: FxHashSet<String>,
    /// What the function's `return` statements return so far.
    returned: Returned,
    /// What its `yield`s yield so far (a fixture's value when it is a
    /// generator).
    yielded: Returned,
    /// Whether they return an instance of the receiver's class so far.
    own: own_returns::Own,
    /// The body yields: calling it makes a generator.
    generator: bool,
    /// `f`, `C.m`, `outer.<locals>.inner` for functions and classes;
    /// `None` for lambdas and comprehensions, which calls are not
    /// attributed to.
    qualname: Option<String>,
    /// A class body: the class's index in `Semantic::classes`. A method
    /// body: the class it is a method of (for `super()`).
    class: Option<u32>,
    /// A class body: the attributes its methods set on `self` or `cls` so
    /// far.
    set_on_self: FxHashSet<Name>,
}

/// The values a function's `return` statements give, as far as they agree.
enum Returned {
    /// Only `return`, `return None` or none at all.
    Nothing,
    /// Calls of one name chain (`return Engine(...)`), a global or import.
    Call(Reference),
    /// Anything else.
    Unknown,
}

/// Where a name used in an expression comes from.
enum NameValue {
    Global(Lookup),
    /// A local variable, with its value when that is known.
    Local(Option<ExprId>),
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
            scope_ids: FxHashMap::default(),
            name_ids: FxHashMap::default(),
            declarations: Declarations::default(),
            postponed_annotations: false,
            late_names: false,
            type_vars: FxHashSet::default(),
            rebound_globals: FxHashSet::default(),
        }
    }

    pub(super) fn finish(mut self) -> ModuleFacts {
        let declarations = std::mem::take(&mut self.declarations);
        self.semantic.types = declarations.finish(&self.semantic.bindings, &self.rebound_globals);
        for class in &mut self.semantic.classes {
            let mut seen = FxHashSet::default();
            class.members.retain(|m| seen.insert(m.clone()));
            exact_in_place(&mut class.members);
            class.set_on_self.sort_unstable();
            class.set_on_self.dedup();
            exact_in_place(&mut class.set_on_self);
        }
        let mut semantic = self.semantic;
        if let DunderAll::Names(names) = &mut semantic.all {
            exact_in_place(names);
        }
        exact_in_place(&mut semantic.imports);
        exact_in_place(&mut semantic.bindings);
        exact_in_place(&mut semantic.calls);
        exact_in_place(&mut semantic.bases);
        exact_in_place(&mut semantic.all_from);
        exact_in_place(&mut semantic.dynamic);
        exact_in_place(&mut semantic.classes);
        exact_in_place(&mut semantic.expressions);
        exact_in_place(&mut semantic.names);
        exact_in_place(&mut semantic.reads);
        exact_in_place(&mut semantic.call_sites);
        exact_in_place(&mut semantic.scopes);
        exact_in_place(&mut semantic.types);
        exact_in_place(&mut semantic.own_returns);
        exact_in_place(&mut semantic.properties);
        exact_in_place(&mut semantic.plugins);
        let mut facts = self.facts;
        exact_in_place(&mut facts.sites);
        exact_in_place(&mut facts.definitions);
        facts.arguments.sort_unstable_by_key(|a| a.site);
        exact_in_place(&mut facts.arguments);
        ModuleFacts {
            semantic: std::sync::Arc::new(semantic),
            ..facts
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
                name: Name::from(name),
                kind,
                conditional,
            });
        } else if self.scopes.last().is_some_and(|f| f.globals.contains(name)) {
            // `global x` then `x = ...` in a function rebinds the module's
            // `x` whenever it is called: nothing is known of what it holds.
            self.rebound_globals.insert(name.to_string());
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
        match self.name_value(name) {
            NameValue::Global(lookup) => Some(lookup),
            NameValue::Local(_) => None,
        }
    }

    /// Where `name` comes from at the current position, by Python's scoping
    /// rules (class bodies are invisible to the functions inside them).
    fn name_value(&self, name: &str) -> NameValue {
        let mut deferred = false;
        let innermost = self.scopes.len();
        for (index, frame) in self.scopes.iter().enumerate().rev() {
            // A function between the use and this frame runs later: only a
            // value bound once holds there.
            let later = deferred;
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
                Some(Local::Import(Some(index))) => {
                    return NameValue::Global(Lookup::LocalImport(*index));
                }
                Some(_) => return NameValue::Local(frame.value_of(name, later)),
                None => {}
            }
        }
        if deferred || self.late_names {
            NameValue::Global(Lookup::Globals)
        } else {
            let visible = self.semantic.bindings.len() as u32;
            NameValue::Global(Lookup::GlobalsAt { visible })
        }
    }

    /// `name`'s index in `Semantic::names`, added the first time.
    fn name_id(&mut self, name: &str) -> NameId {
        if let Some(&id) = self.name_ids.get(name) {
            return id;
        }
        let id = self.semantic.names.len() as NameId;
        let name = Name::from(name);
        self.semantic.names.push(name.clone());
        self.name_ids.insert(name, id);
        id
    }

    fn push_expression(&mut self, site: SiteId, kind: ExprKind) -> ExprId {
        self.semantic.expressions.push(Expression { site, kind });
        (self.semantic.expressions.len() - 1) as ExprId
    }

    /// `expr` as an expression a member lookup can start from: a name
    /// chain, `self`, `cls`, `super()`, a call of one of those, or a local
    /// bound once to one of those. `site` replaces the outermost node's own
    /// site (a callee shares its call's site). A chain longer than
    /// [`MAX_VALUE_CHAIN`] is not followed: every call in a chain asks for
    /// the chain below it, so following any length would make the work
    /// quadratic in the chain.
    fn value_expr(&mut self, expr: &Expr, site: Option<SiteId>) -> Option<ExprId> {
        if chain_head(expr).0 > MAX_VALUE_CHAIN {
            return None;
        }
        self.value_chain(expr, site)
    }

    fn value_chain(&mut self, expr: &Expr, site: Option<SiteId>) -> Option<ExprId> {
        match expr {
            Expr::Name(name) => match self.name_value(name.id.as_str()) {
                NameValue::Local(value) => value,
                NameValue::Global(lookup) => {
                    let site = site.unwrap_or_else(|| self.add_site(name.range.start()));
                    let kind = ExprKind::Global {
                        name: self.name_id(name.id.as_str()),
                        lookup,
                    };
                    Some(self.push_expression(site, kind))
                }
            },
            Expr::Attribute(attribute) => {
                let base = self.value_chain(&attribute.value, None)?;
                let site = site.unwrap_or_else(|| self.add_site(attribute.attr.range.start()));
                let kind = ExprKind::Attribute {
                    base,
                    name: self.name_id(attribute.attr.as_str()),
                };
                Some(self.push_expression(site, kind))
            }
            Expr::Call(call) => {
                let kind = match (self.super_call(call), self.fixture_value(call)) {
                    (Some(class), _) => ExprKind::SuperOf { class },
                    (None, Some(name)) => ExprKind::Fixture {
                        name: self.name_id(name),
                    },
                    (None, None) => ExprKind::Call {
                        callee: self.value_chain(&call.func, None)?,
                    },
                };
                let site = site.unwrap_or_else(|| self.add_site(call.range().start()));
                Some(self.push_expression(site, kind))
            }
            Expr::If(_) | Expr::BoolOp(_) => self.either(choice(expr)?, expr, site),
            _ => None,
        }
    }

    /// `a if c else b()` or `a or b()`: one of the alternatives that are
    /// not `None` (a member call on the value assumes it is not), known
    /// as what all of them are. Only name chains and calls of them count,
    /// so a choice inside a choice is not followed.
    fn either<'e>(
        &mut self,
        alternatives: impl IntoIterator<Item = &'e Expr>,
        expr: &Expr,
        site: Option<SiteId>,
    ) -> Option<ExprId> {
        let mut values = Vec::new();
        for alternative in alternatives {
            if alternative.is_none_literal_expr() {
                continue;
            }
            if values.len() == members::MAX_ALTERNATIVES || !is_chain(alternative) {
                return None;
            }
            values.push(self.value_expr(alternative, None)?);
        }
        let (&first, rest) = values.split_first()?;
        let mut value = first;
        for (index, &second) in rest.iter().enumerate() {
            // Each pair its own site: the last one's is the choice's.
            let at = match site {
                Some(site) if index + 1 == rest.len() => site,
                _ => self.add_site(expr.start()),
            };
            value = self.push_expression(
                at,
                ExprKind::Either {
                    first: value,
                    second,
                },
            );
        }
        Some(value)
    }

    /// The fixture `request.getfixturevalue("name")` asks for, where
    /// `request` is a local (the parameter pytest fills).
    fn fixture_value<'c>(&self, call: &'c ast::ExprCall) -> Option<&'c str> {
        let Expr::Attribute(attribute) = call.func.as_ref() else {
            return None;
        };
        if attribute.attr.as_str() != "getfixturevalue"
            || !is_name(&attribute.value, "request")
            || !matches!(self.name_value("request"), NameValue::Local(_))
            || !call.arguments.keywords.is_empty()
        {
            return None;
        }
        match &call.arguments.args[..] {
            [Expr::StringLiteral(name)] => Some(name.value.to_str()),
            _ => None,
        }
    }

    /// `super()` (or `super(C, self)` naming the class) directly in a
    /// method: the class whose MRO it walks.
    fn super_call(&self, call: &ast::ExprCall) -> Option<u32> {
        if !is_name(&call.func, "super") || !matches!(self.lookup("super"), Some(Lookup::Globals)) {
            return None;
        }
        let frame = self.scopes.last()?;
        let class = frame.class.filter(|_| frame.kind == FrameKind::Deferred)?;
        match &call.arguments.args[..] {
            [] => Some(class),
            [Expr::Name(named), _] if self.class_names.last() == Some(&named.id.to_string()) => {
                Some(class)
            }
            _ => None,
        }
    }

    /// An instance of what `annotation` names, as an expression.
    fn annotated_value(&mut self, annotation: &Expr) -> Option<ExprId> {
        let (chain, late) = self.annotation_class(annotation)?;
        let class = self.looking_up_late(late, |this| this.value_expr(&chain, None))?;
        let site = self.add_site(annotation.range().start());
        Some(self.push_expression(site, ExprKind::Instance { annotation: class }))
    }

    /// The qualified name of a function or class named `name` defined here.
    fn qualname_of(&self, name: &str) -> String {
        let parent = self.scopes.iter().rev().find_map(|f| {
            f.qualname
                .as_deref()
                .map(|q| (q, f.kind == FrameKind::Class))
        });
        match parent {
            None => name.to_string(),
            Some((parent, true)) => format!("{parent}.{name}"),
            Some((parent, false)) => format!("{parent}.<locals>.{name}"),
        }
    }

    /// The index in `Semantic::scopes` of the code running here.
    fn caller(&mut self) -> u32 {
        let name = self
            .scopes
            .iter()
            .rev()
            .find_map(|f| f.qualname.clone())
            .unwrap_or_else(|| "<module>".to_string());
        if let Some(&id) = self.scope_ids.get(&name) {
            return id;
        }
        let id = self.semantic.scopes.len() as u32;
        self.semantic.scopes.push(Name::from(name.as_str()));
        self.scope_ids.insert(name, id);
        id
    }

    /// The class whose body is being run, if the innermost scope is one.
    fn class_body(&self) -> Option<u32> {
        self.scopes
            .last()
            .filter(|f| f.kind == FrameKind::Class)
            .and_then(|f| f.class)
    }

    /// The body frame of class `class`, when it is being walked.
    fn class_frame(&mut self, class: u32) -> Option<&mut Frame> {
        self.scopes
            .iter_mut()
            .rev()
            .find(|f| f.kind == FrameKind::Class && f.class == Some(class))
    }

    /// An attribute read as a value, not called (`expr` is the outermost
    /// attribute of its chain), when it may name a definition for
    /// certain: a name chain headed by a global (`models.CASCADE`, which
    /// resolution follows through modules only), or one attribute of
    /// `super()` or a call (`Q(...).referenced_base_fields`, a member of
    /// what the call gives), or one or two of `self`, `cls` or a local
    /// whose value is known (`form.errors`; `self.form.errors` and
    /// `request.url.scheme`, a member of what an attribute holds). A class's own
    /// attribute read on `self` or `cls` is left out: the lookup finds it
    /// in this file first. Longer chains through instances are left out
    /// too: they rarely resolve, and each link would cost facts in every
    /// file.
    fn attribute_read(&mut self, expr: &Expr) {
        let Expr::Attribute(attribute) = expr else {
            return;
        };
        let mut root = attribute.value.as_ref();
        let mut links = 1;
        while let Expr::Attribute(inner) = root {
            root = &inner.value;
            links += 1;
        }
        let readable = match root {
            Expr::Name(head) => match self.name_value(head.id.as_str()) {
                NameValue::Global(_) => true,
                NameValue::Local(Some(id)) if links <= 2 => {
                    match self.semantic.expressions[id as usize].kind {
                        ExprKind::SelfOf { class } | ExprKind::ClassOf { class } if links == 1 => {
                            let name = attribute.attr.as_str();
                            self.class_frame(class).is_none_or(|frame| {
                                !frame.locals.contains_key(name)
                                    && !frame.set_on_self.contains(name)
                            })
                        }
                        _ => true,
                    }
                }
                NameValue::Local(_) => false,
            },
            Expr::Call(_) => links == 1,
            _ => false,
        };
        if readable && let Some(id) = self.value_expr(expr, None) {
            self.semantic.reads.push(id);
        }
    }

    /// Walks what an attribute chain (a callee, a class base) is built on
    /// without taking the chain itself for a read.
    fn visit_below_chain(&mut self, expr: &Expr) {
        let mut root = expr;
        while let Expr::Attribute(attribute) = root {
            root = &attribute.value;
        }
        self.visit_expr(root);
    }

    /// `self.name = value` in a method: an instance attribute of the class.
    fn self_attribute(
        &mut self,
        stmt: &Stmt,
        target: &Expr,
        value: Option<&Expr>,
        annotation: Option<&Expr>,
    ) {
        let Expr::Attribute(attribute) = target else {
            return;
        };
        let Expr::Name(head) = attribute.value.as_ref() else {
            return;
        };
        let NameValue::Local(Some(id)) = self.name_value(head.id.as_str()) else {
            return;
        };
        let (ExprKind::SelfOf { class } | ExprKind::ClassOf { class }) =
            self.semantic.expressions[id as usize].kind
        else {
            return;
        };
        let name = attribute.attr.to_string();
        let Some(qualname) = self
            .semantic
            .classes
            .get(class as usize)
            .map(|c| format!("{}.{name}", c.qualname))
        else {
            return;
        };
        let declared = self.declared(value, annotation);
        if let Some(frame) = self.class_frame(class) {
            frame.set_on_self.insert(Name::from(name.as_str()));
        }
        if let Some(class) = self.semantic.classes.get_mut(class as usize) {
            class.members.push(Name::from(name.as_str()));
            class.set_on_self.push(Name::from(name));
        }
        self.declarations.bind(qualname.clone(), declared);
        self.record_attribute(qualname, stmt);
    }

    /// What a binding to `value` (or declared as `annotation`) holds, as a
    /// type declaration (several for `a or b()`), or `None` when it is not
    /// statically known.
    fn declared(&mut self, value: Option<&Expr>, annotation: Option<&Expr>) -> Declared {
        if let Some((annotation, late)) = annotation.and_then(|a| self.annotation_class(a)) {
            return self
                .looking_up_late(late, |this| this.reference(&annotation))
                .map(|r| vec![(TypeSource::Annotation, r)]);
        }
        let value = value?;
        match choice(value) {
            Some(alternatives) => self.alternatives(alternatives.into_iter()),
            None => self.declared_one(value).map(|d| vec![d]),
        }
    }

    /// The declaration of a value that is not a choice.
    fn declared_one(&mut self, value: &Expr) -> Option<(TypeSource, Reference)> {
        match value {
            Expr::Call(call) => match self.receiver_attribute(&call.func) {
                Some(attribute) => Some((TypeSource::AttributeCall, attribute)),
                None => self.reference(&call.func).map(|r| (TypeSource::Call, r)),
            },
            // `self.storage = storage`: what the local holds (an annotated
            // parameter, a constructor call), as declared where it was bound.
            Expr::Name(name)
                if matches!(self.name_value(name.id.as_str()), NameValue::Local(_)) =>
            {
                match self.name_value(name.id.as_str()) {
                    NameValue::Local(Some(id)) => self.declared_by_value(id),
                    _ => None,
                }
            }
            value @ (Expr::Name(_) | Expr::Attribute(_)) => {
                self.reference(value).map(|r| (TypeSource::Alias, r))
            }
            _ => None,
        }
    }

    /// The alternatives of `a or b()` or `a if c else b()`: each a callee
    /// or a local holding an instance (a `None` alternative adds nothing:
    /// a member call on the value assumes it is not `None`). Anything else
    /// among them, a nested choice included, leaves the value unknown.
    fn alternatives<'e>(&mut self, values: impl Iterator<Item = &'e Expr>) -> Declared {
        let mut all = Vec::new();
        for value in values {
            if value.is_none_literal_expr() {
                continue;
            }
            if !matches!(value, Expr::Call(_) | Expr::Name(_)) {
                return None;
            }
            let declared = self.declared_one(value)?;
            if !matches!(declared.0, TypeSource::Call | TypeSource::Holds) {
                return None;
            }
            all.push(declared);
        }
        (!all.is_empty()).then_some(all)
    }

    /// The declaration a local's value makes: an instance of what an
    /// annotation names, or what calling a name chain gives.
    fn declared_by_value(&self, id: ExprId) -> Option<(TypeSource, Reference)> {
        match &self.semantic.expressions.get(id as usize)?.kind {
            ExprKind::Instance { annotation } => self
                .semantic
                .chain(*annotation)
                .map(|r| (TypeSource::Holds, r)),
            ExprKind::Call { callee } => {
                self.semantic.chain(*callee).map(|r| (TypeSource::Call, r))
            }
            _ => None,
        }
    }

    /// `self.f` or `cls.f` (a method's own receiver), as a reference whose
    /// path is `[f]`.
    fn receiver_attribute(&mut self, callee: &Expr) -> Option<Reference> {
        let Expr::Attribute(attribute) = callee else {
            return None;
        };
        let Expr::Name(head) = attribute.value.as_ref() else {
            return None;
        };
        let NameValue::Local(Some(id)) = self.name_value(head.id.as_str()) else {
            return None;
        };
        match self.semantic.expressions[id as usize].kind {
            ExprKind::SelfOf { .. } | ExprKind::ClassOf { .. } => {}
            _ => return None,
        }
        let site = self.add_site(attribute.attr.range.start());
        Some(Reference {
            site,
            path: Box::new([Name::from(attribute.attr.as_str())]),
            lookup: Lookup::Globals,
        })
    }

    /// A local bound to `value` (or declared as `annotation`) holds it:
    /// everywhere when it is bound once, else until it is bound again or
    /// the flow merges (`flow.rs`).
    /// `assigned` keeps the value's expression across the targets of one
    /// assignment: it is evaluated once, before any target is bound.
    fn local_value(
        &mut self,
        target: &Expr,
        value: Option<&Expr>,
        annotation: Option<&Expr>,
        assigned: &mut Option<Option<ExprId>>,
    ) {
        let Expr::Name(name) = target else {
            self.forget_targets(target);
            return;
        };
        let Some(frame) = self.scopes.last() else {
            return;
        };
        let once = frame.counts.get(name.id.as_str()) == Some(&1);
        if !once && value.is_none() {
            // A bare declaration binds nothing at run time.
            return;
        }
        let id = match (annotation, *assigned) {
            (Some(annotation), _) => self.annotated_value(annotation),
            (None, Some(id)) => id,
            (None, None) => *assigned.insert(value.and_then(|v| self.value_expr(v, None))),
        };
        if !once {
            self.reach(name.id.as_str(), id);
        } else if let (Some(id), Some(frame)) = (id, self.scopes.last_mut()) {
            frame.values.insert(name.id.to_string(), id);
        }
    }

    /// `with manager as name` (`async with`) in a function: `name` holds
    /// what `manager.__enter__()` (`__aenter__`) gives, as an expression
    /// the engine resolves like any call of a method: the class itself for
    /// `return self` or `-> Self`, the declared class otherwise, nothing
    /// when neither is known.
    fn entered(&mut self, name: &ast::ExprName, manager: &Expr, is_async: bool) {
        let Some(frame) = self.scopes.last() else {
            return;
        };
        if !frame.flows {
            return;
        }
        let once = frame.counts.get(name.id.as_str()) == Some(&1);
        let Some(base) = self.value_expr(manager, None) else {
            return;
        };
        let method = if is_async { "__aenter__" } else { "__enter__" };
        let at = name.range.start();
        let attribute = ExprKind::Attribute {
            base,
            name: self.name_id(method),
        };
        let site = self.add_site(at);
        let callee = self.push_expression(site, attribute);
        let site = self.add_site(at);
        let value = self.push_expression(site, ExprKind::Call { callee });
        if !once {
            self.reach(name.id.as_str(), Some(value));
        } else if let Some(frame) = self.scopes.last_mut() {
            frame.values.insert(name.id.to_string(), value);
        }
    }

    /// A module variable or class attribute bound by an assignment.
    fn declare(&mut self, target: &Expr, value: Option<&Expr>, annotation: Option<&Expr>) {
        let Expr::Name(name) = target else { return };
        if self.at_module_scope()
            && let Some(Expr::Call(call)) = value
            && last_name(&call.func).is_some_and(|last| last == "TypeVar")
        {
            self.type_vars.insert(name.id.to_string());
        }
        let qualname = if self.at_module_scope() {
            name.id.to_string()
        } else if let Some(class) = self.class_body() {
            match self.semantic.classes.get(class as usize) {
                Some(c) => format!("{}.{}", c.qualname, name.id),
                None => return,
            }
        } else {
            return;
        };
        let bound_once = self
            .scopes
            .last()
            .is_none_or(|f| f.counts.get(name.id.as_str()) == Some(&1));
        let declared = if bound_once {
            self.declared(value, annotation)
        } else {
            None
        };
        self.declarations.bind(qualname, declared);
    }

    fn reference(&mut self, expr: &Expr) -> Option<Reference> {
        let mut path = Vec::new();
        let name_start = name_chain(expr, &mut path)?;
        let lookup = self.lookup(&path[0])?;
        let site = self.add_site(name_start);
        Some(Reference {
            site,
            path: exact(path).into_boxed_slice(),
            lookup,
        })
    }

    pub(super) fn module(&mut self, body: &[Stmt]) {
        self.postponed_annotations = body.iter().any(|stmt| {
            matches!(stmt, Stmt::ImportFrom(from)
                if from.module.as_ref().is_some_and(|m| m.as_str() == "__future__")
                    && from.names.iter().any(|alias| alias.name.as_str() == "annotations"))
        });
        self.suite(body);
    }

    /// The class `annotation` names (`members::annotation_chain`), and
    /// whether its names are read late (a string, or any annotation under
    /// `from __future__ import annotations`).
    fn annotation_class(&self, annotation: &Expr) -> Option<(Expr, bool)> {
        let (chain, string) = members::annotation_chain(self.source, annotation)?;
        Some((chain, string || self.postponed_annotations))
    }

    /// Runs `f` with names looked up late when `late`.
    fn looking_up_late<T>(&mut self, late: bool, f: impl FnOnce(&mut Self) -> T) -> T {
        let before = std::mem::replace(&mut self.late_names, late);
        let result = f(self);
        self.late_names = before;
        result
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
            alias: alias.map(|a| Name::from(a.id.as_str())),
            site,
            // Within a `__main__` block, whatever the nearer condition: the
            // import never runs when the module is imported.
            condition: match self.conditions.contains(&Condition::MainBlock) {
                true => Some(Condition::MainBlock),
                false => self.conditions.last().copied(),
            },
            scope: self.current_scope(),
        };
        let bound = import.bound_name().map(str::to_string);
        self.sem().imports.push(import);
        let index = (self.semantic.imports.len() - 1) as u32;
        let Some(name) = bound else { return };
        self.reach(&name, None);
        if let Some(frame) = self.scopes.last_mut() {
            if let Some(Local::Import(slot)) = frame.locals.get_mut(&name) {
                *slot = Some(index);
            }
        } else {
            self.bind_module(&name, BindingKind::Import(index));
        }
    }

    fn function_def(&mut self, def: &StmtFunctionDef) {
        let fixture = members::is_fixture(def);
        if fixture && self.at_module_scope() {
            self.semantic.fixtures.push(Name::from(def.name.as_str()));
        }
        self.plugin_decorators(def);
        self.decorators(&def.decorator_list);
        self.parameter_defaults(&def.parameters);
        if let Some(returns) = &def.returns {
            self.visit_expr(returns);
        }
        let qualname = self.qualname_of(def.name.as_str());
        self.record_function(def, &qualname);
        self.bind_module(def.name.as_str(), BindingKind::Definition);
        self.reach(def.name.as_str(), None);
        if let Some(class) = self.class_body()
            && let Some(c) = self.semantic.classes.get_mut(class as usize)
        {
            c.members.push(Name::from(def.name.as_str()));
            if members::is_property(def) {
                self.semantic.properties.push(Name::from(qualname.as_str()));
            }
        }
        let method = self
            .class_body()
            .map(|class| (class, members::method_kind(def)));
        // An async method's call gives a coroutine; `async with` awaits
        // `__aenter__`'s.
        if let Some((_, kind @ (MethodKind::Instance | MethodKind::Class))) = method
            && (!def.is_async || def.name.as_str() == "__aenter__")
            && self.returns_receiver_type(def)
        {
            self.semantic.own_returns.push(OwnReturn {
                qualname: Name::from(qualname.as_str()),
                classmethod: kind == MethodKind::Class,
                via: None,
                declared: None,
            });
        }
        // A fixture's value is what its generator yields.
        let returns = def.returns.as_deref().map(|r| match fixture {
            true => members::yielded_type(r),
            false => r,
        });
        if let Some((returns, late)) = returns.and_then(|r| self.annotation_class(r))
            && let Some(reference) = self.looking_up_late(late, |this| this.reference(&returns))
        {
            // `-> Self` (PEP 673), when it is typing's: base facts decide.
            if let Some((_, kind @ (MethodKind::Instance | MethodKind::Class))) = method
                && reference.path.last().is_some_and(|last| last == "Self")
            {
                self.semantic.own_returns.push(OwnReturn {
                    qualname: Name::from(qualname.as_str()),
                    classmethod: kind == MethodKind::Class,
                    via: None,
                    declared: Some(reference.clone()),
                });
            }
            self.declarations
                .returns(qualname.clone(), (TypeSource::Returns, reference));
        }

        // Parameter annotations are evaluated here, in the enclosing scope.
        let mut annotated = Vec::new();
        for parameter in def.parameters.iter() {
            if let Some(annotation) = parameter.annotation()
                && let Some(id) = self.annotated_value(annotation)
            {
                annotated.push((parameter.name().to_string(), id));
            }
        }

        let injected = if fixture || self.is_test(def) {
            self.fixture_parameters(def, method.is_some_and(|(_, k)| k != MethodKind::Static))
        } else {
            Vec::new()
        };

        let mut locals = FxHashMap::default();
        for parameter in def.parameters.iter() {
            locals.insert(parameter.name().to_string(), Local::Other);
        }
        let mut frame = Frame::new(FrameKind::Deferred, locals);
        for parameter in def.parameters.iter() {
            frame.count(parameter.name().as_str());
        }
        collect_locals(&def.body, &mut frame);
        frame.qualname = Some(qualname);
        frame.class = method.map(|(class, _)| class);
        let receiver = match method {
            Some((class, MethodKind::Instance)) => Some(ExprKind::SelfOf { class }),
            Some((class, MethodKind::Class)) => Some(ExprKind::ClassOf { class }),
            Some((_, MethodKind::Static)) | None => None,
        };
        let first = def
            .parameters
            .posonlyargs
            .first()
            .or(def.parameters.args.first());
        if let (Some(kind), Some(first)) = (receiver, first) {
            let site = self.add_site(first.parameter.name.range.start());
            let id = self.push_expression(site, kind);
            frame.values.insert(first.parameter.name.to_string(), id);
        }
        for (name, id) in annotated.into_iter().chain(injected) {
            frame.values.entry(name).or_insert(id);
        }
        // A parameter bound again in the body holds its value until then.
        let (once, again) = std::mem::take(&mut frame.values)
            .into_iter()
            .partition(|(name, _)| frame.counts.get(name) == Some(&1));
        frame.values = once;
        frame.reaching = again;
        self.scopes.push(frame);
        self.suite(&def.body);
        // Calling an async function or a generator gives a coroutine or a
        // generator, whatever it returns.
        let Some(frame) = self.scopes.pop() else {
            return;
        };
        let (Some(qualname), None) = (frame.qualname, &def.returns) else {
            return;
        };
        // A fixture's value, what tests are given, is what it yields when
        // it is a generator (awaited when it is async): nobody calls it.
        let returned = if fixture {
            if frame.generator {
                frame.yielded
            } else {
                frame.returned
            }
        } else if frame.generator || def.is_async {
            return;
        } else {
            if let Some((_, kind @ (MethodKind::Instance | MethodKind::Class))) = method
                && let Some(own) = frame.own.declaration(&qualname, kind == MethodKind::Class)
            {
                self.semantic.own_returns.push(own);
            }
            frame.returned
        };
        if let Returned::Call(reference) = returned {
            self.declarations
                .returns(qualname, (TypeSource::ReturnsCall, reference));
        }
    }

    /// `def m(self: T) -> T` (`cls: type[T]`) for a module `TypeVar` `T`:
    /// the method gives an instance of the class it is called on.
    fn returns_receiver_type(&self, def: &StmtFunctionDef) -> bool {
        let (Some(Expr::Name(returns)), Some(first)) = (
            def.returns.as_deref(),
            def.parameters
                .posonlyargs
                .first()
                .or(def.parameters.args.first()),
        ) else {
            return false;
        };
        let receiver = match first.parameter.annotation.as_deref() {
            Some(Expr::Name(name)) => name,
            Some(Expr::Subscript(subscript))
                if is_name(&subscript.value, "type") || is_name(&subscript.value, "Type") =>
            {
                match subscript.slice.as_ref() {
                    Expr::Name(name) => name,
                    _ => return false,
                }
            }
            _ => return false,
        };
        receiver.id == returns.id
            && self.type_vars.contains(returns.id.as_str())
            && matches!(
                self.lookup(returns.id.as_str()),
                Some(Lookup::Globals | Lookup::GlobalsAt { .. })
            )
    }

    /// Whether pytest collects `def` as a test: `test*` at module level or
    /// in a `Test*` class.
    fn is_test(&self, def: &StmtFunctionDef) -> bool {
        if !def.name.starts_with("test") {
            return false;
        }
        match self.class_body() {
            None => self.at_module_scope(),
            Some(class) => self.semantic.classes.get(class as usize).is_some_and(|c| {
                c.qualname
                    .rsplit('.')
                    .next()
                    .is_some_and(|name| name.starts_with("Test"))
            }),
        }
    }

    /// The parameters pytest fills with fixtures (all but the receiver,
    /// annotated ones, ones with a default, and `request`), each as the
    /// fixture of its name.
    fn fixture_parameters(
        &mut self,
        def: &StmtFunctionDef,
        has_receiver: bool,
    ) -> Vec<(String, ExprId)> {
        let parameters = &def.parameters;
        let positional = parameters.posonlyargs.iter().chain(&parameters.args);
        let mut injected = Vec::new();
        for (index, parameter) in positional.chain(&parameters.kwonlyargs).enumerate() {
            let name = parameter.parameter.name.as_str();
            if (has_receiver && index == 0)
                || parameter.default.is_some()
                || parameter.parameter.annotation.is_some()
                || name == "request"
            {
                continue;
            }
            let site = self.add_site(parameter.parameter.name.range.start());
            let kind = ExprKind::Fixture {
                name: self.name_id(name),
            };
            let id = self.push_expression(site, kind);
            injected.push((name.to_string(), id));
        }
        injected
    }

    /// A `return` of the innermost function.
    fn returns(&mut self, value: Option<&Expr>) {
        let Some(value) = value.filter(|v| !v.is_none_literal_expr()) else {
            return;
        };
        let Some(frame) = self.scopes.last_mut() else {
            return;
        };
        let so_far = std::mem::replace(&mut frame.returned, Returned::Unknown);
        let returned = self.gives(so_far, value);
        if let Some(frame) = self.scopes.last_mut() {
            frame.returned = returned;
        }
    }

    /// A `yield` of the innermost function.
    fn yields(&mut self, value: Option<&Expr>) {
        let Some(frame) = self.scopes.last_mut() else {
            return;
        };
        frame.generator = true;
        let Some(value) = value.filter(|v| !v.is_none_literal_expr()) else {
            return;
        };
        let so_far = std::mem::replace(&mut frame.yielded, Returned::Unknown);
        let yielded = self.gives(so_far, value);
        if let Some(frame) = self.scopes.last_mut() {
            frame.yielded = yielded;
        }
    }

    /// What a function's returns (or yields) give after one more of
    /// `value`: a call of one name chain, directly or through a local
    /// bound to one (`app = Flask(...)` ... `return app`).
    fn gives(&mut self, so_far: Returned, value: &Expr) -> Returned {
        let local = match value {
            Expr::Name(name) => match self.name_value(name.id.as_str()) {
                NameValue::Local(Some(id)) => match self.declared_by_value(id) {
                    Some((TypeSource::Call, reference)) => Some(reference),
                    _ => return Returned::Unknown,
                },
                _ => return Returned::Unknown,
            },
            Expr::Call(_) => None,
            _ => return Returned::Unknown,
        };
        match (so_far, value) {
            (Returned::Unknown, _) => Returned::Unknown,
            (Returned::Call(first), Expr::Call(call)) => {
                let mut path = Vec::new();
                match name_chain(&call.func, &mut path) {
                    Some(_) if path[..] == first.path[..] => Returned::Call(first),
                    _ => Returned::Unknown,
                }
            }
            (Returned::Call(first), _) => match local {
                Some(reference) if reference.path == first.path => Returned::Call(first),
                _ => Returned::Unknown,
            },
            (Returned::Nothing, Expr::Call(call)) => match self.reference(&call.func) {
                Some(reference) => Returned::Call(reference),
                None => Returned::Unknown,
            },
            (Returned::Nothing, _) => local.map_or(Returned::Unknown, Returned::Call),
        }
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
        let kept = self.decorators(&class.decorator_list);
        let qualname = self.qualname_of(class.name.as_str());
        let mut bases = Vec::new();
        if let Some(arguments) = &class.arguments {
            for base in arguments.args.iter() {
                match self.reference(members::base_chain(base)) {
                    Some(reference) => {
                        bases.push(Some(reference.site));
                        self.sem().bases.push(reference);
                        // The chain is a base, not a read.
                        if let Expr::Subscript(subscript) = base {
                            self.visit_expr(&subscript.slice);
                        }
                    }
                    None => {
                        bases.push(None);
                        self.visit_expr(base);
                    }
                }
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
        self.record_class(class, &qualname);
        self.bind_module(class.name.as_str(), BindingKind::Definition);
        if let Some(outer) = self.class_body()
            && let Some(c) = self.semantic.classes.get_mut(outer as usize)
        {
            c.members.push(Name::from(class.name.as_str()));
        }

        let mut frame = Frame::new(FrameKind::Class, FxHashMap::default());
        collect_locals(&class.body, &mut frame);
        // Every name the body binds is a class attribute.
        let mut members: Vec<Name> = frame
            .locals
            .keys()
            .filter(|name| !frame.globals.contains(*name) && !frame.nonlocals.contains(*name))
            .map(|name| Name::from(name.as_str()))
            .collect();
        members.sort_unstable();
        frame.class = Some(self.semantic.classes.len() as u32);
        frame.qualname = Some(qualname.clone());
        self.semantic.classes.push(Class {
            qualname: Name::from(qualname.as_str()),
            bases: exact(bases),
            members,
            set_on_self: Vec::new(),
        });
        let index = self.semantic.classes.len() as u32 - 1;
        self.scopes.push(frame);
        self.class_names.push(class.name.to_string());
        self.suite(&class.body);
        self.class_names.pop();
        self.scopes.pop();
        self.local_class(class, index, kept);
    }

    /// A class defined in a function is a local bound to that class, once
    /// its body has run: `Model.check()` and `Form().is_valid()` in a test
    /// resolve. Not when a decorator may replace it or the function sets
    /// its attributes (which would patch its members).
    fn local_class(&mut self, class: &StmtClassDef, index: u32, kept: bool) {
        let name = class.name.as_str();
        let Some(frame) = self.scopes.last() else {
            return;
        };
        if !frame.flows || !kept || frame.patched.contains(name) {
            self.reach(name, None);
            return;
        }
        let once = frame.counts.get(name) == Some(&1);
        let site = self.add_site(class.name.range.start());
        let id = self.push_expression(site, ExprKind::ClassOf { class: index });
        match self.scopes.last_mut() {
            Some(frame) if once => {
                frame.values.insert(name.to_string(), id);
            }
            _ => self.reach(name, Some(id)),
        }
    }

    /// Whether definitions here are recorded: at module level and in
    /// classes nested only in classes.
    fn records_definitions(&self) -> bool {
        self.scopes.iter().all(|f| f.kind == FrameKind::Class)
    }

    fn record_function(&mut self, def: &StmtFunctionDef, qualname: &str) {
        let in_class = self
            .scopes
            .last()
            .is_some_and(|f| f.kind == FrameKind::Class);
        if !self.records_definitions() {
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
            without_comments(self.text(def.parameters.as_ref()))
        );
        if let Some(returns) = &def.returns {
            signature.push_str(" -> ");
            signature.push_str(self.text(returns.as_ref()));
        }
        self.push_definition(
            qualname.to_string(),
            kind,
            signature,
            &def.body,
            &def.decorator_list,
            TextRange::new(def.name.range.start(), def.range.end()),
        );
    }

    fn record_class(&mut self, class: &StmtClassDef, qualname: &str) {
        if !self.records_definitions() {
            return;
        }
        let mut signature = format!("class {}", class.name.as_str());
        if let Some(arguments) = &class.arguments {
            signature.push_str(self.text(arguments.as_ref()));
        }
        self.push_definition(
            qualname.to_string(),
            DefinitionKind::Class,
            signature,
            &class.body,
            &class.decorator_list,
            TextRange::new(class.name.range.start(), class.range.end()),
        );
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
            qualname: Name::from(qualname.as_str()),
            kind,
            signature: Box::from(shortened(fold_whitespace(&signature)).as_str()),
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
        let Expr::Name(name) = target else { return };
        let qualname = if self.at_module_scope() {
            name.id.to_string()
        } else if self.records_definitions() {
            self.qualname_of(name.id.as_str())
        } else {
            return;
        };
        self.push_variable(qualname, stmt);
    }

    /// An instance attribute's first assignment, as its definition.
    fn record_attribute(&mut self, qualname: String, stmt: &Stmt) {
        let known = self
            .facts
            .definitions
            .iter()
            .any(|d| d.qualname == qualname);
        if !known && self.scopes.iter().all(|f| f.kind != FrameKind::Immediate) {
            self.push_variable(qualname, stmt);
        }
    }

    fn push_variable(&mut self, qualname: String, stmt: &impl Ranged) {
        let first_line = self.text(stmt).lines().next().unwrap_or_default();
        let signature: String = first_line.chars().take(120).collect();
        self.facts.definitions.push(Definition {
            qualname: Name::from(qualname.as_str()),
            kind: DefinitionKind::Variable,
            signature: Box::from(signature.as_str()),
            docstring: None,
            decorators: Vec::new(),
            start_line: self.site_of(stmt.range().start()).line,
            end_line: self.site_of(stmt.range().end()).line,
        });
    }

    fn try_stmt(&mut self, entry: &mut flow::Entry, stmt: &ast::StmtTry) {
        let guards_import = stmt.handlers.iter().any(|ExceptHandler::ExceptHandler(h)| {
            h.type_.as_deref().is_none_or(catches_import_error)
        });
        let condition = if guards_import {
            Condition::TryExcept
        } else {
            Condition::Other
        };
        self.conditional_suite(condition, &stmt.body);
        let body_done = self.snapshot();
        for ExceptHandler::ExceptHandler(handler) in &stmt.handlers {
            self.merge(entry);
            if let Some(type_) = &handler.type_ {
                self.visit_expr(type_);
            }
            if let Some(name) = &handler.name {
                self.bind_module(name.as_str(), BindingKind::Other);
            }
            self.conditional_suite(condition, &handler.body);
        }
        // `else` runs when the body ran to its end.
        self.restore(body_done);
        self.conditional_suite(condition, &stmt.orelse);
        self.merge(entry);
        self.suite(&stmt.finalbody);
    }

    fn if_stmt(&mut self, entry: &mut flow::Entry, stmt: &ast::StmtIf) {
        self.visit_expr(&stmt.test);
        let condition = classify_condition(&stmt.test);
        if self.at_module_scope() && is_main_test(&stmt.test) {
            // Runs only when the file is executed, never when it is
            // imported: its names are a scope of their own, like a
            // function's (values followed, imports local), and bind nothing
            // importers see.
            let mut frame = Frame::new(FrameKind::Immediate, FxHashMap::default());
            frame.flows = true;
            collect_locals(&stmt.body, &mut frame);
            self.scopes.push(frame);
            self.conditional_suite(Condition::MainBlock, &stmt.body);
            self.scopes.pop();
        } else {
            self.conditional_suite(condition, &stmt.body);
        }
        self.path_end(entry, Some(&stmt.body));
        for clause in &stmt.elif_else_clauses {
            self.branch(entry);
            if let Some(test) = &clause.test {
                self.visit_expr(test);
            }
            // The else branch of `if TYPE_CHECKING` runs at run time only.
            let branch = match condition {
                Condition::TypeChecking => Condition::Other,
                other => other,
            };
            self.conditional_suite(branch, &clause.body);
            self.path_end(entry, Some(&clause.body));
        }
        // No `else`: the statement may be skipped.
        if stmt.elif_else_clauses.iter().all(|c| c.test.is_some()) {
            self.path_end(entry, None);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        let mut entry = self.enter(stmt);
        self.simple_or_compound(stmt, &mut entry);
        self.leave(&mut entry);
    }

    fn simple_or_compound(&mut self, stmt: &Stmt, entry: &mut flow::Entry) {
        match stmt {
            Stmt::FunctionDef(def) => self.function_def(def),
            Stmt::ClassDef(class) => self.class_def(class),
            Stmt::Import(import) => {
                for alias in &import.names {
                    let target = ImportTarget::Module {
                        dotted: Name::from(alias.name.as_str()),
                    };
                    self.import(target, alias.asname.as_ref(), alias.name.range.start());
                }
            }
            Stmt::ImportFrom(from) => {
                let module = from.module.as_ref().map(|m| Name::from(m.as_str()));
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
                            name: Name::from(alias.name.as_str()),
                        }
                    };
                    self.import(target, alias.asname.as_ref(), at);
                }
            }
            Stmt::If(stmt) => self.if_stmt(entry, stmt),
            Stmt::Try(stmt) => self.try_stmt(entry, stmt),
            Stmt::Assign(assign) => {
                self.plugin_factory(assign);
                self.visit_expr(&assign.value);
                self.dunder_all(stmt);
                self.dunder_metaclass(assign);
                let mut assigned = None;
                for target in &assign.targets {
                    self.attribute_assignments(target);
                    self.visit_expr(target);
                    self.declare(target, Some(&assign.value), None);
                    self.local_value(target, Some(&assign.value), None, &mut assigned);
                    self.self_attribute(stmt, target, Some(&assign.value), None);
                    self.bind_targets(target, BindingKind::Assignment);
                    self.record_variable(target, stmt);
                }
            }
            Stmt::AnnAssign(assign) => {
                self.visit_expr(&assign.annotation);
                let annotation = Some(assign.annotation.as_ref());
                let value = assign.value.as_deref();
                if let Some(value) = value {
                    self.visit_expr(value);
                    self.dunder_all(stmt);
                    self.bind_targets(&assign.target, BindingKind::Assignment);
                    self.record_variable(&assign.target, stmt);
                } else if self.class_body().is_some() {
                    // A field declaration (`name: T` in a dataclass).
                    self.record_variable(&assign.target, stmt);
                }
                self.declare(&assign.target, value, annotation);
                self.local_value(&assign.target, value, annotation, &mut None);
                self.self_attribute(stmt, &assign.target, value, annotation);
                self.visit_expr(&assign.target);
            }
            Stmt::AugAssign(assign) => {
                self.visit_expr(&assign.value);
                self.dunder_all(stmt);
                self.visit_expr(&assign.target);
                self.declare(&assign.target, None, None);
                self.self_attribute(stmt, &assign.target, None, None);
                self.bind_targets(&assign.target, BindingKind::Assignment);
                self.forget_targets(&assign.target);
            }
            Stmt::For(stmt) => {
                self.visit_expr(&stmt.iter);
                // Each iteration starts where any earlier one may have left.
                self.merge(entry);
                self.bind_targets(&stmt.target, BindingKind::Other);
                self.visit_expr(&stmt.target);
                self.conditional_suite(Condition::Other, &stmt.body);
                self.merge(entry);
                self.conditional_suite(Condition::Other, &stmt.orelse);
            }
            Stmt::While(stmt) => {
                self.merge(entry);
                self.visit_expr(&stmt.test);
                self.conditional_suite(Condition::Other, &stmt.body);
                self.merge(entry);
                self.conditional_suite(Condition::Other, &stmt.orelse);
            }
            Stmt::With(stmt) => {
                for item in &stmt.items {
                    self.visit_expr(&item.context_expr);
                    if let Some(vars) = &item.optional_vars {
                        self.bind_targets(vars, BindingKind::Other);
                        self.visit_expr(vars);
                        self.forget_targets(vars);
                        if let Expr::Name(name) = vars.as_ref() {
                            self.entered(name, &item.context_expr, stmt.is_async);
                        }
                    }
                }
                // Straight on inside; when the context manager may swallow
                // an exception (`flow::may_swallow`), what follows merges.
                self.suite(&stmt.body);
            }
            Stmt::Match(stmt) => {
                self.visit_expr(&stmt.subject);
                for case in &stmt.cases {
                    self.merge(entry);
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
                    self.forget_targets(target);
                }
            }
            Stmt::Expr(expr) => {
                self.dunder_all(stmt);
                self.visit_expr(&expr.value);
            }
            Stmt::Return(ret) => {
                if let Some(value) = &ret.value {
                    self.visit_expr(value);
                }
                self.returns(ret.value.as_deref());
                self.own_return(ret.value.as_deref());
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn expr(&mut self, expr: &Expr) {
        match expr {
            Expr::Call(call) => {
                if let Some(site) = self.call_of(&call.func) {
                    self.facts
                        .arguments
                        .push(call_arguments(site, &call.arguments));
                }
                // `partial(f, ...)` calls `f` later, with arguments not all
                // known here.
                if self.is_partial(&call.func)
                    && let Some(target @ (Expr::Name(_) | Expr::Attribute(_))) =
                        call.arguments.args.first()
                    && let Some(site) = self.call_of(target)
                {
                    self.facts.arguments.push(CallArguments {
                        site,
                        positional: 0,
                        keywords: Box::default(),
                        unpacked: true,
                    });
                }
                self.dynamic_call(call);
                self.plugin_call(call);
                self.visit_below_chain(&call.func);
                self.visit_arguments(&call.arguments);
            }
            Expr::Attribute(attribute) if attribute.ctx.is_load() => {
                self.attribute_read(expr);
                self.visit_below_chain(expr);
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
            Expr::Yield(ast::ExprYield { value, .. }) => {
                self.yields(value.as_deref());
                visitor::walk_expr(self, expr);
            }
            Expr::YieldFrom(_) => {
                if let Some(frame) = self.scopes.last_mut() {
                    frame.generator = true;
                    frame.yielded = Returned::Unknown;
                }
                visitor::walk_expr(self, expr);
            }
            Expr::Named(named) => {
                self.visit_expr(&named.value);
                self.bind_targets(&named.target, BindingKind::Other);
                self.forget_everywhere(&named.target);
            }
            Expr::Subscript(subscript) => {
                self.plugin_subscript(subscript);
                visitor::walk_expr(self, expr);
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
    fn short_text(&self, node: &impl Ranged) -> Name {
        let folded = fold_whitespace(self.text(node));
        match folded.char_indices().nth(SHORT_TEXT) {
            Some((end, _)) => compact_str::format_compact!("{}...", &folded[..end]),
            None => Name::from(folded.as_str()),
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
                        let dotted = Name::from(literal.value.to_str());
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
    /// those that may replace what they decorate are recorded.
    /// Returns whether every decorator keeps the definition as written.
    /// Records a call of `func` (its reference, its member-level callee,
    /// its call site) and returns the call's site, if it has one.
    fn call_of(&mut self, func: &Expr) -> Option<SiteId> {
        let mut reference = self.reference(func);
        let mut callee = None;
        // A local: a call of what it holds for certain, looked up once.
        if let (None, Expr::Name(name)) = (&reference, func)
            && let Some(value) = self.alias_of(name)
        {
            match self.alias_reference(name, value) {
                Some(chain) => {
                    // `get = Measurement.get`: a chain may end in a class's
                    // member, which only the member lookup finds.
                    if chain.path.len() > 1 {
                        callee = self.alias_callee(chain.site, value);
                    }
                    reference = Some(chain);
                }
                None => {
                    let site = self.add_site(name.range.start());
                    callee = self.alias_callee(site, value);
                }
            }
        }
        let shared = reference.as_ref().map(|r| r.site);
        if let Some(reference) = reference {
            self.sem().calls.push(reference);
        }
        if let Expr::Attribute(_) = func {
            callee = self.value_expr(func, shared);
        }
        let site = callee
            .map(|id| self.semantic.expressions[id as usize].site)
            .or(shared)?;
        let caller = self.caller();
        self.sem().call_sites.push(CallSite {
            site,
            callee,
            caller,
        });
        Some(site)
    }

    /// Whether `func` is `functools.partial`, as this module imported it
    /// (`from functools import partial`, `import functools`).
    fn is_partial(&self, func: &Expr) -> bool {
        let mut path = Vec::new();
        if name_chain(func, &mut path).is_none() {
            return false;
        }
        let names: Vec<&str> = path.iter().map(Name::as_str).collect();
        let imported = |wanted: &dyn Fn(&Import) -> bool| self.semantic.imports.iter().any(wanted);
        match names[..] {
            ["partial"] => imported(&|i| {
                i.alias.is_none()
                    && matches!(&i.target, ImportTarget::From { level: 0, module: Some(m), name }
                        if m == "functools" && name == "partial")
            }),
            ["functools", "partial"] => imported(&|i| {
                i.alias.is_none()
                    && matches!(&i.target, ImportTarget::Module { dotted } if dotted == "functools")
            }),
            _ => false,
        }
    }

    /// The value local `name` holds for certain where it is called.
    fn alias_of(&self, name: &ast::ExprName) -> Option<ExprId> {
        match self.name_value(name.id.as_str()) {
            NameValue::Local(value) => value,
            NameValue::Global(_) => None,
        }
    }

    /// The chain of global names `value` is (`render`, `text.core.render`,
    /// `Console.print`), with where its head is looked up.
    fn global_chain(&self, value: ExprId) -> Option<(Vec<Name>, Lookup)> {
        let mut path = Vec::new();
        let mut at = value;
        for _ in 0..=MAX_VALUE_CHAIN {
            match self.semantic.expressions.get(at as usize)?.kind {
                ExprKind::Attribute { base, name } => {
                    path.push(self.semantic.names.get(name as usize)?.clone());
                    at = base;
                }
                ExprKind::Global { name, lookup } => {
                    path.push(self.semantic.names.get(name as usize)?.clone());
                    path.reverse();
                    return Some((path, lookup));
                }
                _ => return None,
            }
        }
        None
    }

    /// A call of local `name` holding `value`, a chain of global names
    /// (`show = render`, `make = models.Style`), is a call of that chain:
    /// the same reference, at the call.
    fn alias_reference(&mut self, name: &ast::ExprName, value: ExprId) -> Option<Reference> {
        let (path, lookup) = self.global_chain(value)?;
        let site = self.add_site(name.range.start());
        Some(Reference {
            site,
            path: path.into_boxed_slice(),
            lookup,
        })
    }

    /// The callee of a call, at `site`, of a local holding `value`, a
    /// member of a value (`get = console.get_style`: a bound method): the
    /// same expression again.
    fn alias_callee(&mut self, site: SiteId, value: ExprId) -> Option<ExprId> {
        let kind = self.semantic.expressions.get(value as usize)?.kind.clone();
        if !matches!(kind, ExprKind::Attribute { .. }) {
            return None;
        }
        Some(self.push_expression(site, kind))
    }

    fn decorators(&mut self, decorators: &[ast::Decorator]) -> bool {
        let mut keeps = true;
        for decorator in decorators {
            let expression = &decorator.expression;
            // A bare decorator is a call with the definition as its one
            // argument (`@attrs.define` as `attrs.define(cls)`), a builtin
            // such as `@property` aside: no one asks who calls it.
            let builtin =
                matches!(expression, Expr::Name(n) if crate::names::is_builtin(n.id.as_str()));
            if matches!(expression, Expr::Name(_) | Expr::Attribute(_))
                && !builtin
                && let Some(site) = self.call_of(expression)
            {
                self.facts.arguments.push(CallArguments {
                    site,
                    positional: 1,
                    keywords: Box::default(),
                    unpacked: false,
                });
            }
            let callee = match expression {
                Expr::Call(call) => call.func.as_ref(),
                other => other,
            };
            let mut path = Vec::new();
            let name = match name_chain(callee, &mut path) {
                Some(_) => Name::from(path.join(".")),
                None => self.short_text(callee),
            };
            if !dynamic::keeps_definition(&name) {
                keeps = false;
                self.push_dynamic(
                    expression.range().start(),
                    DynamicPattern::Decorator { name },
                );
            }
            self.visit_expr(expression);
        }
        keeps
    }

    fn metaclass(&mut self, class: &str, at: TextSize, metaclass: &Expr) {
        let pattern = DynamicPattern::Metaclass {
            class: Name::from(class),
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
    /// variable: a candidate monkey patch, decided by resolution.
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
        stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, || f(self));
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
            flows: kind == FrameKind::Deferred,
            locals,
            globals: FxHashSet::default(),
            nonlocals: FxHashSet::default(),
            counts: FxHashMap::default(),
            values: FxHashMap::default(),
            reaching: flow::Reaching::default(),
            rebound_inside: FxHashSet::default(),
            patched: FxHashSet::default(),
            returned: Returned::Nothing,
            yielded: Returned::Nothing,
            own: own_returns::Own::Nothing,
            generator: false,
            qualname: None,
            class: None,
            set_on_self: FxHashSet::default(),
        }
    }

    /// What local `name` holds at the current position; `later` for a use
    /// from a nested function.
    fn value_of(&self, name: &str, later: bool) -> Option<ExprId> {
        if self.rebound_inside.contains(name) {
            return None;
        }
        match self.values.get(name) {
            Some(&id) => Some(id),
            None if later => None,
            None => self.reaching.get(name).copied(),
        }
    }

    fn count(&mut self, name: &str) {
        *self.counts.entry(name.to_string()).or_default() += 1;
    }

    fn bind(&mut self, name: &str, local: Local) {
        self.count(name);
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
                Expr::Call(call) => {
                    setattr_object(call, &mut self.frame.patched);
                    visitor::walk_expr(self, expr);
                }
                // A lambda binds nothing here, but may set attributes.
                Expr::Lambda(lambda) => flow::nested_changes_in(&lambda.body, self.frame),
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
            attribute_heads(target, &mut self.frame.patched);
        }
        fn stmt(&mut self, stmt: &Stmt) {
            match stmt {
                Stmt::FunctionDef(def) => {
                    self.frame.bind(def.name.as_str(), Local::Other);
                    flow::nested_changes(&def.body, self.frame);
                }
                Stmt::ClassDef(class) => {
                    self.frame.bind(class.name.as_str(), Local::Other);
                    flow::nested_changes(&class.body, self.frame);
                }
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

/// `setattr(C, ...)`: C's attributes are set.
fn setattr_object(call: &ast::ExprCall, out: &mut FxHashSet<String>) {
    if is_name(&call.func, "setattr")
        && let Some(Expr::Name(object)) = call.arguments.args.first()
    {
        out.insert(object.id.to_string());
    }
}

/// The names whose attributes an assignment target sets (`C.x = ...`).
fn attribute_heads(target: &Expr, out: &mut FxHashSet<String>) {
    match target {
        Expr::Attribute(attribute) => {
            if let Expr::Name(name) = attribute.value.as_ref() {
                out.insert(name.id.to_string());
            }
        }
        Expr::Tuple(tuple) => tuple.elts.iter().for_each(|e| attribute_heads(e, out)),
        Expr::List(list) => list.elts.iter().for_each(|e| attribute_heads(e, out)),
        Expr::Starred(starred) => attribute_heads(&starred.value, out),
        _ => {}
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

fn exact_in_place<T>(v: &mut Vec<T>) {
    *v = exact(std::mem::take(v));
}

/// Fills `path` with the names of `a.b.c` and returns where the last one starts.
/// How many attributes and calls `expr` chains, counted up to one past
/// [`MAX_VALUE_CHAIN`].
/// The alternatives of a choice, `a or b` or `a if c else b`; `None` for
/// any other expression.
fn choice(expr: &Expr) -> Option<Vec<&Expr>> {
    match expr {
        Expr::BoolOp(operation) if operation.op == ast::BoolOp::Or => {
            Some(operation.values.iter().collect())
        }
        Expr::If(choice) => Some(vec![choice.body.as_ref(), choice.orelse.as_ref()]),
        _ => None,
    }
}

/// Whether `expr` is a name chain or calls of one (`a.b().c`), within
/// [`MAX_VALUE_CHAIN`] links.
fn is_chain(expr: &Expr) -> bool {
    let (links, head) = chain_head(expr);
    links <= MAX_VALUE_CHAIN && matches!(head, Expr::Name(_))
}

/// How many attribute and call links lead from `expr` to the head of its
/// chain (counted to one past [`MAX_VALUE_CHAIN`] at most), and that head.
fn chain_head(mut expr: &Expr) -> (usize, &Expr) {
    let mut links = 0;
    while links <= MAX_VALUE_CHAIN {
        expr = match expr {
            Expr::Attribute(attribute) => &attribute.value,
            Expr::Call(call) => &call.func,
            _ => break,
        };
        links += 1;
    }
    (links, expr)
}

/// The last name of a name chain (`fixture` of `pytest.fixture`).
pub(super) fn last_name(expr: &Expr) -> Option<Name> {
    let mut path = Vec::new();
    name_chain(expr, &mut path)?;
    path.pop()
}

pub(super) fn name_chain(expr: &Expr, path: &mut Vec<Name>) -> Option<TextSize> {
    match expr {
        Expr::Name(name) => {
            path.push(Name::from(name.id.as_str()));
            Some(name.range.start())
        }
        Expr::Attribute(attribute) => {
            name_chain(&attribute.value, path)?;
            path.push(Name::from(attribute.attr.as_str()));
            Some(attribute.attr.range.start())
        }
        _ => None,
    }
}

fn is_name(expr: &Expr, id: &str) -> bool {
    matches!(expr, Expr::Name(name) if name.id.as_str() == id)
}

/// `__name__ == "__main__"`, either way round.
fn is_main_test(test: &Expr) -> bool {
    let Expr::Compare(compare) = test else {
        return false;
    };
    let is_main = |e: &Expr| matches!(e, Expr::StringLiteral(s) if s.value.to_str() == "__main__");
    match (&compare.ops[..], &compare.comparators[..]) {
        ([ast::CmpOp::Eq], [right]) => {
            (is_name(&compare.left, "__name__") && is_main(right))
                || (is_main(&compare.left) && is_name(right, "__name__"))
        }
        _ => false,
    }
}

fn catches_import_error(type_: &Expr) -> bool {
    let is_import_error = |e: &Expr| {
        matches!(
            last_name(e).as_deref(),
            Some("ImportError" | "ModuleNotFoundError" | "Exception" | "BaseException")
        )
    };
    match type_ {
        Expr::Tuple(tuple) => tuple.elts.iter().any(is_import_error),
        other => is_import_error(other),
    }
}

fn classify_condition(test: &Expr) -> Condition {
    if last_name(test).is_some_and(|n| n == "TYPE_CHECKING") {
        return Condition::TypeChecking;
    }
    let mentions_version =
        |e: &Expr| last_name(e).is_some_and(|n| n == "version_info" || n == "PY3" || n == "PY2");
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

fn docstring(body: &[Stmt]) -> Option<Box<str>> {
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
        .map(Box::from)
}

/// What a signature check needs of a `def`'s parameters.
pub(crate) fn parameters(parameters: &ast::Parameters) -> crate::facts::Parameters {
    let parameter = |p: &ast::ParameterWithDefault| crate::facts::Parameter {
        name: Name::from(p.parameter.name.as_str()),
        required: p.default.is_none(),
    };
    crate::facts::Parameters {
        positional: parameters
            .posonlyargs
            .iter()
            .chain(&parameters.args)
            .map(parameter)
            .collect(),
        positional_only: u32::try_from(parameters.posonlyargs.len()).unwrap_or(u32::MAX),
        keyword_only: parameters.kwonlyargs.iter().map(parameter).collect(),
        var_positional: parameters.vararg.is_some(),
        var_keyword: parameters.kwarg.is_some(),
    }
}

/// The shape of the arguments of the call at `site`.
fn call_arguments(site: SiteId, arguments: &ast::Arguments) -> CallArguments {
    let starred = arguments.args.iter().any(|a| matches!(a, Expr::Starred(_)));
    let double_starred = arguments.keywords.iter().any(|k| k.arg.is_none());
    CallArguments {
        site,
        positional: u16::try_from(arguments.args.len()).unwrap_or(u16::MAX),
        keywords: arguments
            .keywords
            .iter()
            .filter_map(|k| k.arg.as_ref().map(|name| Name::from(name.as_str())))
            .collect(),
        unpacked: starred || double_starred,
    }
}

/// The longest signature kept whole, in characters: one with a literal of
/// megabytes as a default would otherwise fill every outline and context
/// it is shown in.
const MAX_SIGNATURE: usize = 1_000;

/// `signature` cut to [`MAX_SIGNATURE`] characters, marked with `…`.
fn shortened(mut signature: String) -> String {
    if let Some((cut, _)) = signature.char_indices().nth(MAX_SIGNATURE) {
        signature.truncate(cut);
        signature.push('…');
    }
    signature
}

/// `text` (source code) without its comments: once its lines are folded
/// into one, a comment would hide the rest of a parameter list.
fn without_comments(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('#') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut kept = String::with_capacity(text.len());
    // The quote of the string being read, and whether it is tripled.
    let mut quote: Option<(char, bool)> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some((q, triple)) => {
                kept.push(c);
                if c == '\\' {
                    if let Some(next) = chars.next() {
                        kept.push(next);
                    }
                } else if c == q && (!triple || kept.ends_with(&q.to_string().repeat(3))) {
                    quote = None;
                }
            }
            None if c == '#' => {
                while chars.peek().is_some_and(|&n| n != '\n') {
                    chars.next();
                }
            }
            None => {
                kept.push(c);
                if c == '"' || c == '\'' {
                    let tripled = chars.peek() == Some(&c) && {
                        let mut ahead = chars.clone();
                        ahead.next();
                        ahead.peek() == Some(&c)
                    };
                    if tripled {
                        kept.push(c);
                        kept.push(c);
                        chars.next();
                        chars.next();
                    }
                    quote = Some((c, tripled));
                }
            }
        }
    }
    std::borrow::Cow::Owned(kept)
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

#[cfg(test)]
mod comment_tests {
    use super::without_comments;

    #[test]
    fn comments_go_and_strings_stay() {
        assert_eq!(
            without_comments("(a,  # old\n b='#', c=\"x#\") # end"),
            "(a,  \n b='#', c=\"x#\") "
        );
        assert_eq!(without_comments("(a='''#\n''', b)"), "(a='''#\n''', b)");
        assert_eq!(without_comments("(a='\\'#', b)"), "(a='\\'#', b)");
    }
}
