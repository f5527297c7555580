//! Turns one file's [`Semantic`] facts into Datalog base facts: imports
//! resolved to module files or markers, the file's final module-level
//! bindings, and the first hop of each call, class base and module
//! attribute read (the module and name it refers to). Following re-exports
//! from there is the rules' job.
//!
//! Fail-safe: where Python's binding is uncertain (a conditional
//! rebinding, a local variable, an attribute of something that is not a
//! module) no fact is produced, so no relationship can be derived.

use std::rc::Rc;

use rustc_hash::{FxHashMap, FxHashSet};

mod links;

use super::datalog::{
    AllIncludes, Annotated, AssignedCall, AssignedName, BaseOf, BaseRef, Binds, BindsImported,
    CallIn, CallRef, ClassDef, Defines, DefinesConditionally, DynamicSite, EitherCall, EitherHolds,
    ExprAttr, ExprCall, ExprCls, ExprEither, ExprFixture, ExprInstance, ExprName, ExprSelf,
    ExprSuper, External, FixtureBefore, HasAll, HasMember, ImportName, ImportStmt,
    ImportsConditionally, InputFact, IsFixture, IsProperty, MadeBy, MethodCall, Node, OpaqueBase,
    PatchesAttr, Pattern, ProjectFile, ReadRef, ReturnsAnnotated, ReturnsCall, ReturnsCls,
    ReturnsSelf, ReturnsSelfVia, RuntimeImport, SetsOnSelf, Site, StarExport, StarImport, Sym,
};
use super::intern::Interner;
use super::modules::{self, ModuleLoc};
use super::resolve::Resolver;
use xfile_python::names;
use xfile_python::{
    Binding, BindingKind, Condition, DunderAll, DynamicPattern, ExprId, ExprKind, Import,
    ImportTarget, Lookup, Name, Reference, Scope, Semantic, TypeSource,
};

pub(crate) fn build(
    interner: &Interner,
    resolver: &Resolver,
    path: &str,
    semantic: &Semantic,
) -> Vec<InputFact> {
    let mut builder = Builder {
        interner,
        resolver,
        semantic,
        me: interner.node(path),
        has_star: semantic
            .imports
            .iter()
            .any(|i| matches!(i.target, ImportTarget::Star { .. })),
        facts: Vec::new(),
        bindings: std::cell::RefCell::new(vec![None; semantic.imports.len()]),
        index: BindingIndex::new(&semantic.bindings),
        fixture_sources: None,
    };
    builder
        .facts
        .push(InputFact::ProjectFile(ProjectFile(builder.me)));
    builder.imports();
    builder.bindings();
    builder.references();
    builder.dynamic();
    builder.classes();
    builder.calls();
    builder.plugins();
    builder.facts
}

/// A module an import statement or binding leads to.
#[derive(Clone)]
enum Module {
    /// A project file: a module or a package's `__init__.py`.
    Project(String),
    /// Outside the project and known (stdlib, third-party, built-in): names
    /// in it can be related to.
    External { marker: String, dotted: String },
    /// A namespace package: no file to relate names to, but submodules
    /// resolve below it. `dotted` is relative to `level` leading dots.
    Namespace {
        marker: String,
        level: u32,
        dotted: String,
    },
    /// Not found: a marker for the import alone.
    Unresolved(String),
}

struct Builder<'a> {
    interner: &'a Interner,
    resolver: &'a Resolver<'a>,
    semantic: &'a Semantic,
    me: Node,
    has_star: bool,
    facts: Vec<InputFact>,
    /// What each import binds, once worked out (by index in
    /// `Semantic::imports`): every call through a name asks again.
    bindings: std::cell::RefCell<Vec<Option<Option<ModuleOrName>>>>,
    index: BindingIndex<'a>,
    /// `fixture_sources`, once asked.
    fixture_sources: Option<Rc<[Node]>>,
}

impl Builder<'_> {
    fn node(&mut self, module: &Module) -> Node {
        match module {
            Module::Project(path) => self.interner.node(path),
            Module::External { marker, .. } => {
                let node = self.interner.node(marker);
                self.facts.push(InputFact::External(External(node)));
                node
            }
            Module::Namespace { marker, .. } | Module::Unresolved(marker) => {
                self.interner.node(marker)
            }
        }
    }

    /// What `module.level` leading dots plus `dotted` resolves to.
    fn resolve(&self, level: u32, dotted: &str) -> Module {
        let written = format!("{}{dotted}", ".".repeat(level as usize));
        let loc = if level == 0 {
            Some(self.resolver.absolute(dotted))
        } else {
            let module = (!dotted.is_empty()).then_some(dotted);
            self.resolver.relative(level, module)
        };
        match loc {
            Some(ModuleLoc::File(path)) => Module::Project(path),
            Some(ModuleLoc::Namespace) => Module::Namespace {
                marker: format!("<namespace:{written}>"),
                level,
                dotted: dotted.to_string(),
            },
            Some(ModuleLoc::Missing) if level == 0 => self.outside(dotted),
            _ => Module::Unresolved(format!("<unresolved:{written}>")),
        }
    }

    /// An absolute module the project does not have: unresolved if its
    /// top-level package is the project's, else stdlib or third-party.
    fn outside(&self, dotted: &str) -> Module {
        let top = dotted.split('.').next().unwrap_or(dotted);
        if self.resolver.has_top_level(dotted) {
            return Module::Unresolved(format!("<unresolved:{dotted}>"));
        }
        let kind = if names::is_stdlib(top) {
            "stdlib"
        } else {
            "third-party"
        };
        Module::External {
            marker: format!("<{kind}:{dotted}>"),
            dotted: dotted.to_string(),
        }
    }

    fn absolute(&self, dotted: &str) -> Module {
        self.resolve(0, dotted)
    }

    /// The module `from <level><module> import ...` names.
    fn base_module(&self, level: u32, module: Option<&str>) -> Module {
        self.resolve(level, module.unwrap_or_default())
    }

    /// `from <level><module> import name`: `Ok` with the submodule `name` if
    /// it is one, else `Err` with the module the statement names.
    fn import_target(
        &self,
        level: u32,
        module: Option<&str>,
        name: &str,
    ) -> Result<Module, Module> {
        let base = self.base_module(level, module);
        self.submodule(&base, name).ok_or(base)
    }

    /// Submodule `name` of `base`, if it is a module or namespace package.
    fn submodule(&self, base: &Module, name: &str) -> Option<Module> {
        match base {
            Module::Project(path) => match self.resolver.submodule(path, name) {
                ModuleLoc::File(file) => Some(Module::Project(file)),
                _ => None,
            },
            Module::Namespace { level, dotted, .. } => {
                let full = if dotted.is_empty() {
                    name.to_string()
                } else {
                    format!("{dotted}.{name}")
                };
                match self.resolve(*level, &full) {
                    found @ (Module::Project(_) | Module::Namespace { .. }) => Some(found),
                    _ => None,
                }
            }
            Module::External { .. } | Module::Unresolved(_) => None,
        }
    }

    fn imports(&mut self) {
        for import in &self.semantic.imports {
            let site = Site(import.site);
            let (target, name) = match &import.target {
                ImportTarget::Module { dotted } => (self.absolute(dotted), None),
                ImportTarget::From {
                    level,
                    module,
                    name,
                } => match self.import_target(*level, module.as_deref(), name) {
                    Ok(submodule) => (submodule, None),
                    Err(base) => (base, Some(name.as_str())),
                },
                ImportTarget::Call { dotted, callee } => {
                    if !self.is_import_function(callee) {
                        continue;
                    }
                    (self.absolute(dotted), None)
                }
                ImportTarget::Star { level, module } => {
                    let base = self.base_module(*level, module.as_deref());
                    if let Module::Project(_) = base {
                        let node = self.node(&base);
                        self.facts
                            .push(InputFact::StarImport(StarImport(self.me, site, node)));
                    }
                    (base, None)
                }
            };
            let node = self.node(&target);
            self.facts
                .push(InputFact::ImportStmt(ImportStmt(self.me, site, node)));
            if let (Some(name), Module::Project(_)) = (name, &target) {
                let sym = self.interner.sym(name);
                self.facts
                    .push(InputFact::ImportName(ImportName(self.me, site, node, sym)));
            }
            // A `TYPE_CHECKING` import never runs; a `__main__` block's only
            // when the file runs as a script, not when it is imported.
            let never_on_import = matches!(
                import.condition,
                Some(Condition::TypeChecking | Condition::MainBlock)
            );
            if import.scope == Scope::Module && !never_on_import {
                self.facts
                    .push(InputFact::RuntimeImport(RuntimeImport(self.me, site)));
            }
        }
    }

    fn bindings(&mut self) {
        let mut seen = FxHashSet::default();
        for binding in &self.semantic.bindings {
            if !seen.insert(binding.name.as_str()) {
                continue;
            }
            let name = self.interner.sym(&binding.name);
            if self.has_star {
                self.facts.push(InputFact::Binds(Binds(self.me, name)));
            }
            match self.index.select(&binding.name, usize::MAX) {
                Selected::One(final_binding) => self.final_binding(name, final_binding),
                Selected::Ambiguous => self.conditional_bindings(name, &binding.name),
                Selected::Unbound => {}
            }
        }
        match &self.semantic.all {
            DunderAll::Names(all) => {
                self.facts.push(InputFact::HasAll(HasAll(self.me)));
                for name in all {
                    let sym = self.interner.sym(name);
                    self.facts
                        .push(InputFact::StarExport(StarExport(self.me, sym)));
                }
                // Only a chain that names a module's own `__all__` adds
                // that module's names; any other adds none we know of.
                let dunder_all = self.interner.sym("__all__");
                for reference in &self.semantic.all_from {
                    if let Some((_, module, name)) = self.first_hop(reference)
                        && name == dunder_all
                    {
                        self.facts
                            .push(InputFact::AllIncludes(AllIncludes(self.me, module)));
                    }
                }
            }
            DunderAll::Dynamic => self.facts.push(InputFact::HasAll(HasAll(self.me))),
            // Without `__all__`, a star import takes every public name, which
            // a rule derives from what resolves (rules/resolution.dl): names
            // that resolve to nothing would relate nothing anyway.
            DunderAll::Absent => {}
        }
    }

    /// The alternatives of a name bound under a condition: the file's own
    /// def or class, and what its name imports name.
    fn conditional_bindings(&mut self, name: Sym, text: &str) {
        let mut defines = false;
        let alternatives: Vec<&Binding> = self.index.all(text).collect();
        for binding in alternatives {
            match binding.kind {
                BindingKind::Definition => defines = true,
                BindingKind::Import(index) => {
                    if let Some((module, original)) = self.imported_name(index) {
                        self.facts
                            .push(InputFact::ImportsConditionally(ImportsConditionally(
                                self.me, name, module, original,
                            )));
                    }
                }
                BindingKind::Assignment | BindingKind::Other => {}
            }
        }
        if defines {
            self.facts
                .push(InputFact::DefinesConditionally(DefinesConditionally(
                    self.me, name,
                )));
        }
    }

    fn final_binding(&mut self, name: Sym, binding: &Binding) {
        match binding.kind {
            BindingKind::Definition | BindingKind::Assignment | BindingKind::Other => {
                self.facts.push(InputFact::Defines(Defines(self.me, name)));
            }
            BindingKind::Import(index) => {
                if let Some((module, original)) = self.imported_name(index) {
                    self.facts.push(InputFact::BindsImported(BindsImported(
                        self.me, name, module, original,
                    )));
                }
            }
        }
    }

    /// The module and name that import `index` binds, when it binds a name
    /// of a module (`from m import x`) rather than a module.
    fn imported_name(&mut self, index: u32) -> Option<(Node, Sym)> {
        let import = self.semantic.imports.get(index as usize)?;
        let ModuleOrName::Name(module, original) = self.import_binding(import)? else {
            return None;
        };
        Some((self.node(&module), self.interner.sym(&original)))
    }

    /// What the name import `index` binds refers to, memoized.
    fn imported(&self, index: u32) -> Option<ModuleOrName> {
        if let Some(Some(known)) = self.bindings.borrow().get(index as usize) {
            return known.clone();
        }
        let import = self.semantic.imports.get(index as usize)?;
        let bound = self.import_binding(import);
        if let Some(slot) = self.bindings.borrow_mut().get_mut(index as usize) {
            *slot = Some(bound.clone());
        }
        bound
    }

    /// What the name an import binds refers to.
    fn import_binding(&self, import: &Import) -> Option<ModuleOrName> {
        match &import.target {
            ImportTarget::Module { dotted } => {
                let bound = match &import.alias {
                    Some(_) => dotted.as_str(),
                    None => dotted.split('.').next().unwrap_or(dotted),
                };
                Some(ModuleOrName::Module(self.absolute(bound)))
            }
            ImportTarget::From {
                level,
                module,
                name,
            } => match self.import_target(*level, module.as_deref(), name) {
                Ok(submodule) => Some(ModuleOrName::Module(submodule)),
                Err(Module::Namespace { .. } | Module::Unresolved(_)) => None,
                Err(base) => Some(ModuleOrName::Name(base, name.clone())),
            },
            ImportTarget::Star { .. } | ImportTarget::Call { .. } => None,
        }
    }

    fn references(&mut self) {
        for call in &self.semantic.calls {
            if let Some((site, module, name)) = self.first_hop(call) {
                self.facts
                    .push(InputFact::CallRef(CallRef(self.me, site, module, name)));
            }
        }
        for base in &self.semantic.bases {
            if let Some((site, module, name)) = self.first_hop(base) {
                self.facts
                    .push(InputFact::BaseRef(BaseRef(self.me, site, module, name)));
            }
        }
    }

    /// The module and name a reference's chain refers to, when certain.
    fn first_hop(&mut self, reference: &Reference) -> Option<(Site, Node, Sym)> {
        let site = Site(reference.site);
        let (head, rest) = reference.path.split_first()?;
        let bound = match reference.lookup {
            Lookup::LocalImport(index) => self.imported(index),
            Lookup::Globals | Lookup::GlobalsAt { .. } => {
                let visible = match reference.lookup {
                    Lookup::GlobalsAt { visible } => visible as usize,
                    _ => usize::MAX,
                };
                match self.index.select(head, visible) {
                    Selected::Ambiguous => return None,
                    Selected::Unbound => return self.unbound(site, head, rest),
                    Selected::One(binding) => match binding.kind {
                        BindingKind::Import(index) => self.imported(index),
                        // A name this file defines, when the binding seen
                        // here is the final one the rules know as `Defines`.
                        _ => {
                            let last = self.index.select(head, usize::MAX);
                            let is_final = self.index.only_assigned(head)
                                || matches!(last, Selected::One(last) if std::ptr::eq(last, binding));
                            if !is_final || !rest.is_empty() {
                                return None;
                            }
                            return Some((site, self.me, self.interner.sym(head)));
                        }
                    },
                }
            }
        };
        let (module, name) = match bound? {
            ModuleOrName::Name(module, name) if rest.is_empty() => (module, name),
            ModuleOrName::Name(Module::External { dotted, .. }, name) => {
                self.attribute_of(self.outside(&format!("{dotted}.{name}")), rest)?
            }
            ModuleOrName::Name(..) => return None,
            ModuleOrName::Module(module) => self.attribute_of(module, rest)?,
        };
        let node = self.node(&module);
        Some((site, node, self.interner.sym(&name)))
    }

    /// `module.a.b.f`: walks submodules and returns the module that holds
    /// the final name. Only a chain of modules then one name is certain.
    fn attribute_of(&self, mut module: Module, rest: &[Name]) -> Option<(Module, Name)> {
        let (name, middle) = rest.split_last()?;
        if let Module::External { dotted, .. } = &module {
            // Outside modules cannot be inspected: the chain names a module.
            if !middle.is_empty() {
                module = self.outside(&format!("{dotted}.{}", middle.join(".")));
            }
        } else {
            for part in middle {
                module = self.submodule(&module, part)?;
            }
        }
        match module {
            Module::Project(_) | Module::External { .. } => Some((module, name.clone())),
            Module::Namespace { .. } | Module::Unresolved(_) => None,
        }
    }

    /// A name no module-level statement binds: a built-in, or a name that
    /// a star import may provide (left to the rules).
    fn unbound(&mut self, site: Site, head: &str, rest: &[Name]) -> Option<(Site, Node, Sym)> {
        if !rest.is_empty() {
            return None;
        }
        if self.has_star {
            return Some((site, self.me, self.interner.sym(head)));
        }
        if names::is_builtin(head) {
            let marker = Module::External {
                marker: format!("<builtin:{head}>"),
                dotted: head.to_string(),
            };
            let node = self.node(&marker);
            return Some((site, node, self.interner.sym(head)));
        }
        None
    }
}

impl Builder<'_> {
    /// Dynamic patterns, where the callee or target resolves as the pattern
    /// needs, and star imports.
    fn dynamic(&mut self) {
        let semantic = self.semantic;
        for dynamic in &semantic.dynamic {
            let pattern = match &dynamic.pattern {
                DynamicPattern::Import { callee, .. } => self
                    .is_import_function(callee)
                    .then_some(Pattern::DynamicImport),
                DynamicPattern::Dispatch { callee, .. } => self
                    .is_builtin(callee, &["getattr"])
                    .then_some(Pattern::DynamicDispatch),
                DynamicPattern::Exec { callee } => self
                    .is_builtin(callee, &["exec", "eval"])
                    .then_some(Pattern::ExecEval),
                DynamicPattern::AttributeAssignment { target } => self
                    .bound_by_import(target)
                    .then_some(Pattern::MonkeyPatching),
                DynamicPattern::Decorator { .. } => Some(Pattern::Decorator),
                DynamicPattern::Metaclass { .. } => Some(Pattern::Metaclass),
            };
            if let Some(pattern) = pattern {
                self.facts.push(InputFact::DynamicSite(DynamicSite(
                    self.me,
                    Site(dynamic.site),
                    pattern,
                )));
            }
        }
        for import in &semantic.imports {
            if let ImportTarget::Star { .. } = import.target {
                self.facts.push(InputFact::DynamicSite(DynamicSite(
                    self.me,
                    Site(import.site),
                    Pattern::WildcardImport,
                )));
            }
        }
    }

    /// `importlib.import_module` or the built-in `__import__`.
    fn is_import_function(&mut self, callee: &Reference) -> bool {
        self.resolves_to(callee, "<stdlib:importlib>", "import_module")
            || self.is_builtin(callee, &["__import__"])
    }

    /// Whether `callee` is the built-in function of one of `names`.
    fn is_builtin(&mut self, callee: &Reference, names: &[&str]) -> bool {
        names
            .iter()
            .any(|name| self.resolves_to(callee, &format!("<builtin:{name}>"), name))
    }

    fn resolves_to(&mut self, reference: &Reference, module: &str, name: &str) -> bool {
        self.first_hop(reference).is_some_and(|(_, node, sym)| {
            *self.interner.node_text(node) == *module && *self.interner.sym_text(sym) == *name
        })
    }

    /// Whether the head of `target`'s chain is bound by an import (of a
    /// module, or of a class or other object from another module) where the
    /// assignment runs: assigning to its attribute patches shared state.
    fn bound_by_import(&self, target: &Reference) -> bool {
        let Some(head) = target.path.first() else {
            return false;
        };
        let visible = match target.lookup {
            Lookup::LocalImport(_) => return true,
            Lookup::Globals => usize::MAX,
            Lookup::GlobalsAt { visible } => visible as usize,
        };
        matches!(
            self.index.select(head, visible),
            Selected::One(Binding {
                kind: BindingKind::Import(_),
                ..
            })
        )
    }
}

/// What the engine knows of an expression before the rules run.
#[derive(Clone, Copy)]
enum Value {
    /// Name `.1` of module `.0`: an `ExprName` fact once something uses it.
    Name(Site, Node, Sym),
    /// Only the rules can tell (an attribute, call or instance of a name,
    /// `self`, `cls`, `super()`): its facts are out.
    Dynamic(Site),
    /// A module, or nothing static analysis can name.
    Unknown,
}

impl Builder<'_> {
    /// Classes, their members and bases, declared types and patched
    /// attributes.
    fn classes(&mut self) {
        let semantic = self.semantic;
        for class in &semantic.classes {
            let name = self.interner.sym(&class.qualname);
            self.facts
                .push(InputFact::ClassDef(ClassDef(self.me, name)));
            for member in &class.members {
                let attribute = self.interner.sym(member);
                let qualified = self.interner.sym(&format!("{}.{member}", class.qualname));
                self.facts.push(InputFact::HasMember(HasMember(
                    self.me, name, attribute, qualified,
                )));
            }
            for attribute in &class.set_on_self {
                let attribute = self.interner.sym(attribute);
                self.facts
                    .push(InputFact::SetsOnSelf(SetsOnSelf(self.me, name, attribute)));
            }
            for base in &class.bases {
                self.facts.push(match base {
                    Some(site) => InputFact::BaseOf(BaseOf(self.me, Site(*site), name)),
                    None => InputFact::OpaqueBase(OpaqueBase(self.me, name)),
                });
            }
        }
        // The alternatives of one name count only all together: one whose
        // first hop is not known drops the others (the rules would take
        // the rest for all of them).
        let mut unknown_alternative: Vec<&str> = semantic
            .types
            .iter()
            .filter(|t| matches!(t.source, TypeSource::EitherCall | TypeSource::EitherHolds))
            .filter(|t| self.first_hop(&t.reference).is_none())
            .map(|t| t.qualname.as_str())
            .collect();
        unknown_alternative.sort_unstable();
        for typed in &semantic.types {
            if unknown_alternative
                .binary_search(&typed.qualname.as_str())
                .is_ok()
            {
                continue;
            }
            let qualname = self.interner.sym(&typed.qualname);
            if typed.source == TypeSource::AttributeCall {
                // Looked up on the receiver's class in the rules, not as a name.
                if let [attribute] = &typed.reference.path[..] {
                    let attribute = self.interner.sym(attribute);
                    self.facts
                        .push(InputFact::MadeBy(MadeBy(self.me, qualname, attribute)));
                }
                continue;
            }
            let Some((_, module, name)) = self.first_hop(&typed.reference) else {
                continue;
            };
            self.facts.push(match typed.source {
                // Holding what an annotated local holds is being an
                // instance of the class it names, as an annotation says.
                TypeSource::Annotation | TypeSource::Holds => {
                    InputFact::Annotated(Annotated(self.me, qualname, module, name))
                }
                TypeSource::Call => {
                    InputFact::AssignedCall(AssignedCall(self.me, qualname, module, name))
                }
                TypeSource::Returns => {
                    InputFact::ReturnsAnnotated(ReturnsAnnotated(self.me, qualname, module, name))
                }
                TypeSource::ReturnsCall => {
                    InputFact::ReturnsCall(ReturnsCall(self.me, qualname, module, name))
                }
                TypeSource::Alias => {
                    InputFact::AssignedName(AssignedName(self.me, qualname, module, name))
                }
                TypeSource::EitherCall => {
                    InputFact::EitherCall(EitherCall(self.me, qualname, module, name))
                }
                TypeSource::EitherHolds => {
                    InputFact::EitherHolds(EitherHolds(self.me, qualname, module, name))
                }
                TypeSource::AttributeCall => continue,
            });
        }
        for property in &semantic.properties {
            let member = self.interner.sym(property);
            self.facts
                .push(InputFact::IsProperty(IsProperty(self.me, member)));
        }
        for fixture in &semantic.fixtures {
            let function = self.interner.sym(fixture);
            self.facts
                .push(InputFact::IsFixture(IsFixture(self.me, function)));
        }
        for own in &semantic.own_returns {
            if let Some(declared) = &own.declared
                && !self.is_typing_self(declared)
            {
                continue;
            }
            let method = self.interner.sym(&own.qualname);
            self.facts.push(match (&own.via, own.classmethod) {
                (Some(via), _) => InputFact::ReturnsSelfVia(ReturnsSelfVia(
                    self.me,
                    method,
                    self.interner.sym(via),
                )),
                (None, true) => InputFact::ReturnsCls(ReturnsCls(self.me, method)),
                (None, false) => InputFact::ReturnsSelf(ReturnsSelf(self.me, method)),
            });
        }
        for dynamic in &semantic.dynamic {
            let DynamicPattern::AttributeAssignment { target } = &dynamic.pattern else {
                continue;
            };
            let [_, attribute] = &target.path[..] else {
                continue;
            };
            let head = Reference {
                path: target.path[..1].into(),
                ..target.clone()
            };
            if let Some((_, module, name)) = self.first_hop(&head) {
                let attribute = self.interner.sym(attribute);
                self.facts.push(InputFact::PatchesAttr(PatchesAttr(
                    self.me,
                    Site(dynamic.site),
                    module,
                    name,
                    attribute,
                )));
            }
        }
    }

    /// Whether `reference` names typing's (or typing_extensions') `Self`.
    fn is_typing_self(&mut self, reference: &Reference) -> bool {
        let Some((_, module, name)) = self.first_hop(reference) else {
            return false;
        };
        &*self.interner.sym_text(name) == "Self"
            && matches!(
                &*self.interner.node_text(module),
                "<stdlib:typing>"
                    | "<stdlib:typing_extensions>"
                    | "<third-party:typing_extensions>"
            )
    }

    /// Who makes each call, and the facts of member-level callees.
    fn calls(&mut self) {
        let semantic = self.semantic;
        let mut values: Vec<Option<Value>> = vec![None; semantic.expressions.len()];
        let mut named = FxHashSet::default();
        // A call nothing can resolve needs no caller: only sites with a
        // `CallRef` or a `MethodCall` get a `CallIn`.
        let resolvable: FxHashSet<Site> = self
            .facts
            .iter()
            .filter_map(|fact| match fact {
                InputFact::CallRef(call) => Some(call.1),
                _ => None,
            })
            .collect();
        let mut callers: Vec<Option<Sym>> = vec![None; semantic.scopes.len()];
        for call in &semantic.call_sites {
            let mut site = Site(call.site);
            let mut resolves = resolvable.contains(&site);
            if let Some(callee) = call.callee
                && let Value::Dynamic(at) = self.value(callee, &mut values, &mut named)
            {
                self.facts
                    .push(InputFact::MethodCall(MethodCall(self.me, at)));
                (site, resolves) = (at, true);
            }
            let Some(slot) = callers.get_mut(call.caller as usize) else {
                continue;
            };
            let caller = *slot
                .get_or_insert_with(|| self.interner.sym(&semantic.scopes[call.caller as usize]));
            if resolves {
                self.facts
                    .push(InputFact::CallIn(CallIn(self.me, site, caller)));
            }
        }
        // Attributes read, not called. A name chain counts when it names
        // an attribute of a project module (`ReadRef`), and gives no other
        // fact: what a class or variable holds is left unread (a
        // `settings.X`, an enum member), as each would cost facts in every
        // file. An attribute of an instance or class gives its `ExprAttr`.
        for &read in &semantic.reads {
            if let Some(reference) = semantic.chain(read) {
                if let Some((site, module, name)) = self.first_hop(&reference)
                    && !module.is_marker()
                    && module != self.me
                {
                    self.facts
                        .push(InputFact::ReadRef(ReadRef(self.me, site, module, name)));
                }
            } else {
                self.value(read, &mut values, &mut named);
            }
        }
    }

    /// The value of expression `id`, emitting its facts (and those of the
    /// expressions it is built from) the first time.
    fn value(
        &mut self,
        id: ExprId,
        values: &mut [Option<Value>],
        named: &mut FxHashSet<ExprId>,
    ) -> Value {
        if let Some(value) = values.get(id as usize).copied().flatten() {
            return value;
        }
        let value =
            stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.evaluate(id, values, named));
        if let Some(slot) = values.get_mut(id as usize) {
            *slot = Some(value);
        }
        value
    }

    fn evaluate(
        &mut self,
        id: ExprId,
        values: &mut [Option<Value>],
        named: &mut FxHashSet<ExprId>,
    ) -> Value {
        let semantic = self.semantic;
        let Some(expression) = semantic.expressions.get(id as usize) else {
            return Value::Unknown;
        };
        let site = Site(expression.site);
        let class_of = |class: u32| semantic.classes.get(class as usize).map(|c| &c.qualname);
        match &expression.kind {
            ExprKind::Global { .. } | ExprKind::Attribute { .. } => {
                if let Some(reference) = semantic.chain(id)
                    && let Some((_, module, name)) = self.first_hop(&reference)
                {
                    return Value::Name(site, module, name);
                }
                let ExprKind::Attribute { base, name } = &expression.kind else {
                    return Value::Unknown;
                };
                // Only expressions earlier in the list can be bases.
                if *base >= id {
                    return Value::Unknown;
                }
                let Some(name) = semantic.names.get(*name as usize) else {
                    return Value::Unknown;
                };
                let Some(base) = self.operand(*base, values, named) else {
                    return Value::Unknown;
                };
                let name = self.interner.sym(name);
                self.facts
                    .push(InputFact::ExprAttr(ExprAttr(self.me, site, base, name)));
                Value::Dynamic(site)
            }
            ExprKind::SelfOf { class }
            | ExprKind::ClassOf { class }
            | ExprKind::SuperOf { class } => {
                let Some(qualname) = class_of(*class) else {
                    return Value::Unknown;
                };
                let class_sym = self.interner.sym(qualname);
                let fact = match expression.kind {
                    ExprKind::SelfOf { .. } => {
                        InputFact::ExprSelf(ExprSelf(self.me, site, self.me, class_sym))
                    }
                    ExprKind::ClassOf { .. } => {
                        InputFact::ExprCls(ExprCls(self.me, site, self.me, class_sym))
                    }
                    _ => InputFact::ExprSuper(ExprSuper(self.me, site, self.me, class_sym)),
                };
                self.facts.push(fact);
                Value::Dynamic(site)
            }
            ExprKind::Call { callee } | ExprKind::Instance { annotation: callee } => {
                if *callee >= id {
                    return Value::Unknown;
                }
                let Some(operand) = self.operand(*callee, values, named) else {
                    return Value::Unknown;
                };
                self.facts.push(match expression.kind {
                    ExprKind::Call { .. } => InputFact::ExprCall(ExprCall(self.me, site, operand)),
                    _ => InputFact::ExprInstance(ExprInstance(self.me, site, operand)),
                });
                Value::Dynamic(site)
            }
            ExprKind::Either { first, second } => {
                if *first >= id || *second >= id {
                    return Value::Unknown;
                }
                let (Some(first), Some(second)) = (
                    self.operand(*first, values, named),
                    self.operand(*second, values, named),
                ) else {
                    return Value::Unknown;
                };
                self.facts.push(InputFact::ExprEither(ExprEither(
                    self.me, site, first, second,
                )));
                Value::Dynamic(site)
            }
            ExprKind::Fixture { name } => {
                let Some(name) = semantic.names.get(*name as usize) else {
                    return Value::Unknown;
                };
                let name = self.interner.sym(name);
                let sources = self.fixture_sources();
                for &module in sources.iter() {
                    self.facts.push(InputFact::ExprFixture(ExprFixture(
                        self.me, site, module, name,
                    )));
                }
                Value::Dynamic(site)
            }
        }
    }

    /// Where a test of this file finds fixtures, nearest first: its own
    /// module, then each `conftest.py` from its directory up to the root;
    /// their order as `FixtureBefore` facts the first time it is asked.
    fn fixture_sources(&mut self) -> Rc<[Node]> {
        if let Some(sources) = &self.fixture_sources {
            return sources.clone();
        }
        let path = self.interner.node_text(self.me);
        let mut sources = vec![self.me];
        let mut dir = modules::parent(&path);
        loop {
            if let Some(conftest) = self.resolver.conftest(dir)
                && conftest != *path
            {
                sources.push(self.interner.node(&conftest));
            }
            if dir.is_empty() {
                break;
            }
            dir = modules::parent(dir);
        }
        for (index, &near) in sources.iter().enumerate() {
            for &far in &sources[index + 1..] {
                self.facts
                    .push(InputFact::FixtureBefore(FixtureBefore(self.me, near, far)));
            }
        }
        let sources: Rc<[Node]> = sources.into();
        self.fixture_sources = Some(sources.clone());
        sources
    }

    /// The site of expression `id` as an operand of another, with its
    /// `ExprName` fact out if it is a name; `None` if nothing can be known.
    fn operand(
        &mut self,
        id: ExprId,
        values: &mut [Option<Value>],
        named: &mut FxHashSet<ExprId>,
    ) -> Option<Site> {
        match self.value(id, values, named) {
            Value::Name(site, module, name) => {
                if named.insert(id) {
                    self.facts
                        .push(InputFact::ExprName(ExprName(self.me, site, module, name)));
                }
                Some(site)
            }
            Value::Dynamic(site) => Some(site),
            Value::Unknown => None,
        }
    }
}

#[derive(Clone)]
enum ModuleOrName {
    /// The name is bound to a module object.
    Module(Module),
    /// The name is bound to attribute `.1` of module `.0`.
    Name(Module, Name),
}

enum Selected<'a> {
    One(&'a Binding),
    Ambiguous,
    Unbound,
}

/// The module-level bindings by name, so that looking one up costs the
/// bindings of that name, not all of them: a file binding 100,000 names
/// (one `from m import (...)`) looks each up once.
struct BindingIndex<'a> {
    bindings: &'a [Binding],
    /// Per name, the positions of its bindings in `bindings`, ascending.
    by_name: FxHashMap<&'a str, Vec<usize>>,
}

impl<'a> BindingIndex<'a> {
    fn new(bindings: &'a [Binding]) -> Self {
        let mut by_name: FxHashMap<&str, Vec<usize>> = FxHashMap::default();
        for (position, binding) in bindings.iter().enumerate() {
            by_name.entry(&binding.name).or_default().push(position);
        }
        BindingIndex { bindings, by_name }
    }

    /// Every module-level binding of `name`, in statement order.
    fn all(&self, name: &str) -> impl Iterator<Item = &'a Binding> + '_ {
        self.by_name
            .get(name)
            .into_iter()
            .flatten()
            .map(|&p| &self.bindings[p])
    }

    /// Whether every module-level binding of `name` is an assignment: then
    /// they are one definition, the module variable, however many and
    /// wherever they run, and what it holds is known only when every
    /// assignment agrees (`Declarations`).
    fn only_assigned(&self, name: &str) -> bool {
        self.by_name.get(name).is_some_and(|positions| {
            positions
                .iter()
                .all(|&p| self.bindings[p].kind == BindingKind::Assignment)
        })
    }

    /// The binding of `name` after the first `visible` module-level
    /// bindings ran: the last one wins, but a conditional last binding with
    /// rivals is ambiguous, unless all are assignments.
    fn select(&self, name: &str, visible: usize) -> Selected<'a> {
        let positions = self.by_name.get(name).map_or(&[][..], Vec::as_slice);
        let seen = &positions[..positions.partition_point(|&p| p < visible)];
        let Some((&last, earlier)) = seen.split_last() else {
            return Selected::Unbound;
        };
        let last = &self.bindings[last];
        if last.conditional && !earlier.is_empty() && !self.only_assigned(name) {
            Selected::Ambiguous
        } else {
            Selected::One(last)
        }
    }
}
