//! The facts the front end extracts from one Python module.
//!
//! Facts are split in two so that salsa can cut off early: [`Semantic`] holds
//! only what other files and the Datalog program depend on, and refers to source
//! positions through indexes into [`ModuleFacts::sites`]. An edit that only
//! shifts lines or changes a function body leaves `Semantic` equal, so nothing
//! downstream re-runs; locations are looked up late, when an answer is rendered.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A name, dotted module path or other short text as written in the
/// source. Held inline up to 24 bytes, which is most of them (on Django
/// 583k of 716k strings): facts are kept for every indexed file, and a
/// `String` costs a heap block on top of its 24 bytes.
pub type Name = compact_str::CompactString;

/// A source position: 1-based line, 0-based column in characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Site {
    pub line: u32,
    pub column: u32,
}

/// Index into [`ModuleFacts::sites`].
pub type SiteId = u32;

/// Index into [`Semantic::names`].
pub type NameId = u32;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleFacts {
    /// Set when the module does not parse; all other facts are then empty.
    pub parse_error: Option<ParseErrorFact>,
    pub sites: Vec<Site>,
    pub definitions: Vec<Definition>,
    /// The arguments of each call with a site, by site: what a check of
    /// calls against a changed signature reads. Kept out of [`Semantic`]:
    /// an edit of arguments changes no resolution.
    pub arguments: Vec<CallArguments>,
    /// Shared with the engine's `semantic` input, so it is held once.
    pub semantic: Arc<Semantic>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseErrorFact {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

/// Everything resolution and the rules consume, free of line numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Semantic {
    /// One entry per imported name, in source order.
    pub imports: Vec<Import>,
    /// Module-level name bindings in statement order; the last one wins.
    pub bindings: Vec<Binding>,
    /// Calls of a plain name or a dotted name chain.
    pub calls: Vec<Reference>,
    /// Class bases that are a plain name or a dotted name chain.
    pub bases: Vec<Reference>,
    /// The module's `__all__`: the names it lists itself.
    pub all: DunderAll,
    /// The other modules' `__all__` it adds to those, as name chains that
    /// name them (`fields_all`, bound by `from .fields import __all__ as
    /// fields_all`, or `fields.__all__`): `__all__ = fields_all + [...]`.
    pub all_from: Vec<Reference>,
    /// Code whose effect static analysis cannot follow (what warnings are
    /// about), in source order.
    pub dynamic: Vec<Dynamic>,
    /// Classes, module level and nested, in source order.
    pub classes: Vec<Class>,
    /// The receivers of member calls, flattened: `Attribute::base` and the
    /// like index this list, and each expression has a site of its own.
    pub expressions: Vec<Expression>,
    /// The names `expressions` use, each once: on Django a file's
    /// expressions name about 90 names each, mostly the same few, and an
    /// index keeps an expression at 16 bytes instead of 40.
    pub names: Vec<Name>,
    /// Attributes read as values, not called, that may name a definition
    /// of another file: name chains headed by a global (`models.CASCADE`,
    /// `isinstance(x, models.Model)`) and one attribute of `self`, `cls`,
    /// `super()` or a local of a known class (`partial(self.clean)`,
    /// `form.errors`), a class's own attributes on `self` and `cls` left
    /// out. Each is the outermost expression of its chain.
    pub reads: Vec<ExprId>,
    /// Every call the engine may resolve, with the function it sits in.
    pub call_sites: Vec<CallSite>,
    /// Qualified names of the code calls sit in (`f`, `C.m`,
    /// `outer.<locals>.inner`, `<module>`); `CallSite::caller` indexes it.
    pub scopes: Vec<Name>,
    /// Statically declared types: what a variable or attribute holds, or
    /// what a function returns.
    pub types: Vec<Typed>,
    /// Methods whose calls give an instance of the class they are made on.
    pub own_returns: Vec<OwnReturn>,
    /// Methods decorated `@property` or `@cached_property` (`C.m`): reading
    /// the attribute gives what the method returns.
    pub properties: Vec<Name>,
    /// Uses of string-keyed extension points (Django signals, pluggy
    /// hooks, entry-point groups) as written, in source order.
    pub plugins: Vec<PluginUse>,
    /// Module-level functions decorated as pytest fixtures under their
    /// own name.
    pub fixtures: Vec<Name>,
}

impl Semantic {
    /// Expression `id` as a name chain headed by a global (`mod.Class`),
    /// if it is one; the reference's site is the expression's own.
    pub fn chain(&self, mut id: ExprId) -> Option<Reference> {
        let mut path = Vec::new();
        let site = self.expressions.get(id as usize)?.site;
        loop {
            let expression = self.expressions.get(id as usize)?;
            match &expression.kind {
                // Bases come before what is built on them: a later base
                // would be a malformed table, not a chain.
                ExprKind::Attribute { base, name } if *base < id => {
                    path.push(self.names.get(*name as usize)?.clone());
                    id = *base;
                }
                ExprKind::Global { name, lookup } => {
                    path.push(self.names.get(*name as usize)?.clone());
                    path.reverse();
                    return Some(Reference {
                        site,
                        path: exact(path).into_boxed_slice(),
                        lookup: *lookup,
                    });
                }
                _ => return None,
            }
        }
    }
}

/// `v` without spare room. Facts live as long as their file is indexed,
/// and pushing leaves up to half of a vector unused (a one-name chain
/// four names' room). `shrink_to_fit` does not give that back: mimalloc
/// keeps a block that shrinks by less than half where it is. So the
/// elements move to a block of their own size.
pub(crate) fn exact<T>(v: Vec<T>) -> Vec<T> {
    if v.capacity() == v.len() {
        return v;
    }
    let mut out = Vec::with_capacity(v.len());
    out.extend(v);
    out
}

/// One use of a string-keyed extension point, as written. Whether the
/// names involved really are Django's, pluggy's or importlib's is left to
/// resolution (a project function called `receiver` is no receiver).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PluginUse {
    pub site: SiteId,
    pub kind: PluginKind,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PluginKind {
    /// `name = factory(...)` at module level and under no condition: a
    /// `Signal()` or a pluggy marker once `factory` resolves to one.
    /// `argument` is the first positional argument if it is a string
    /// literal. The site is the target name's.
    Factory {
        name: Name,
        factory: Reference,
        argument: Option<Name>,
    },
    /// `signal.connect(...)` (`sends` false) or `signal.send(...)`,
    /// `send_robust`, `asend`, `asend_robust` (`sends` true), where
    /// `signal` is a name chain. The site is the method name's.
    SignalCall { signal: Reference, sends: bool },
    /// A function decorated with `@decorator` or `@decorator(...)`.
    /// `arguments` are the name chains of the first positional argument
    /// (itself, or the elements of a list or tuple); `hook` is the name
    /// the function registers under: its own, or a literal `specname=`
    /// (`None` for any other `specname`). The site is the decorator's.
    Decorator {
        decorator: Reference,
        arguments: Vec<Reference>,
        hook: Option<Name>,
    },
    /// A call that loads the entry points of the literal `group`: through
    /// `loader` (`entry_points`, `iter_entry_points`) or, when `None`,
    /// pluggy's `load_setuptools_entrypoints` method. The site is the
    /// name of the function or method called last.
    LoadsGroup {
        loader: Option<Reference>,
        group: Name,
    },
}

/// A class statement.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Class {
    /// `C`, `Outer.Inner`, `f.<locals>.C`.
    pub qualname: Name,
    /// Its bases in order: the site of a base that is a name chain (also
    /// listed in [`Semantic::bases`]), `None` for any other expression.
    pub bases: Vec<Option<SiteId>>,
    /// Names the class body binds, and attributes its methods assign on
    /// `self`, each once.
    pub members: Vec<Name>,
    /// The attributes its methods assign on `self` or `cls`, each once: on
    /// an instance they hide a class attribute of the same name.
    pub set_on_self: Vec<Name>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Expression {
    /// The expression's own site, which the Datalog facts use as its id.
    pub site: SiteId,
    pub kind: ExprKind,
}

/// Index into [`Semantic::expressions`].
pub type ExprId = u32;

const _: () = assert!(std::mem::size_of::<CallArguments>() == 24);

// Every file holds hundreds of these (320k on Django): keep them small.
const _: () = assert!(std::mem::size_of::<Expression>() == 16);

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ExprKind {
    /// A name looked up in the module globals (or a local import).
    Global { name: NameId, lookup: Lookup },
    /// The instance a method of `Semantic::classes[class]` runs on (`self`).
    SelfOf { class: u32 },
    /// The class a classmethod of `Semantic::classes[class]` runs on (`cls`).
    ClassOf { class: u32 },
    /// `super()` in a method of `Semantic::classes[class]`.
    SuperOf { class: u32 },
    /// `base.name`.
    Attribute { base: ExprId, name: NameId },
    /// `callee(...)`.
    Call { callee: ExprId },
    /// A value declared an instance of what `annotation` names (a
    /// parameter or variable annotation).
    Instance { annotation: ExprId },
    /// One of two values a local may hold where paths meet (after an
    /// `if`): known only as what both are.
    Either { first: ExprId, second: ExprId },
    /// The value pytest passes a test or fixture function for its
    /// parameter `name` (or `request.getfixturevalue("name")` gives): what
    /// the nearest fixture of that name gives.
    Fixture { name: NameId },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CallSite {
    /// The site of the callee's last name (shared with the call's
    /// [`Reference`] when it has one).
    pub site: SiteId,
    /// The callee when it is an attribute of an expression: resolved at
    /// member level.
    pub callee: Option<ExprId>,
    /// Index into [`Semantic::scopes`].
    pub caller: u32,
}

/// A declaration of what `qualname` holds or returns, as a name chain.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Typed {
    /// `x`, `C.x` (a class or instance attribute), `f`, `C.m`.
    pub qualname: Name,
    pub source: TypeSource,
    pub reference: Reference,
}

/// A method annotated `-> Self`, or one without a return annotation, not
/// async and no generator, whose every `return` gives an instance of the
/// class the call is made on:
/// `self`, `self.__class__(...)` or `type(self)(...)` in an instance
/// method, `cls(...)` in a classmethod (or nothing at all), directly or
/// through a local holding one of those. A subclass's call thus gives the
/// subclass: `qs.filter(...)` on a `QuerySet` subclass stays that subclass.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OwnReturn {
    /// `C.m`.
    pub qualname: Name,
    pub classmethod: bool,
    /// Some `return`s give instead what calling this method of the
    /// receiver gives (`return self._clone()`): the method returns an
    /// instance of the receiver's class when that one does. Instance
    /// methods only.
    pub via: Option<Name>,
    /// Declared by a return annotation `Self` rather than seen in the
    /// `return`s: holds only when the name is typing's `Self`, which
    /// resolution decides.
    pub declared: Option<Reference>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TypeSource {
    /// `x: T`: an instance of class T.
    Annotation,
    /// `x = T(...)`, every binding of x: what calling T gives.
    Call,
    /// `def f(...) -> T`: calling f gives an instance of class T.
    Returns,
    /// `def f(...)` without a return annotation whose every `return`
    /// returns `T(...)` (or nothing): calling f gives what calling T gives.
    ReturnsCall,
    /// `x = T` (a class attribute or module variable naming T): x is T
    /// itself, when T is a class.
    Alias,
    /// `self.x = y` where the local y is declared an instance of T (an
    /// annotated parameter): x holds one too. Unlike an annotation of x
    /// itself, every binding of x must agree.
    Holds,
    /// `self.x = self.f(...)` or `cls.x = cls.f(...)`: x holds what calling
    /// the class attribute f gives, f looked up from the receiver's class
    /// (the reference's path is `[f]`; it is not looked up as a name).
    AttributeCall,
    /// One of several values x may hold that name different things
    /// (`self.console = console or get_console()`, or two bindings of x):
    /// what calling the chain gives. x holds a known class only when every
    /// alternative of x gives that one class, which the rules decide after
    /// resolution.
    EitherCall,
    /// As `EitherCall`, for an alternative that holds what an annotated
    /// local holds (`console: Optional[Console]` above).
    EitherHolds,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DunderAll {
    /// No `__all__`: a star import takes every public module-level name.
    #[default]
    Absent,
    /// Built from string literals, and from other modules' `__all__`
    /// (`Semantic::all_from`).
    Names(Vec<Name>),
    /// Computed in a way static analysis cannot follow.
    Dynamic,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Import {
    pub target: ImportTarget,
    /// `as` name, if any.
    pub alias: Option<Name>,
    /// The name the relationship is about: the module name, or for
    /// `from . import x` the imported name.
    pub site: SiteId,
    pub condition: Option<Condition>,
    pub scope: Scope,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ImportTarget {
    /// `import a.b.c`
    Module { dotted: Name },
    /// `from <level dots><module> import name`
    From {
        level: u32,
        module: Option<Name>,
        name: Name,
    },
    /// `from <level dots><module> import *`
    Star { level: u32, module: Option<Name> },
    /// `importlib.import_module("a.b")` or `__import__("a.b")` with a literal
    /// absolute name: an import once `callee` resolves to one of those two.
    Call { dotted: Name, callee: Reference },
}

impl Import {
    /// The name this import binds in its scope, if any.
    pub fn bound_name(&self) -> Option<&str> {
        match (&self.target, &self.alias) {
            (ImportTarget::Star { .. } | ImportTarget::Call { .. }, _) => None,
            (_, Some(alias)) => Some(alias),
            (ImportTarget::Module { dotted }, None) => dotted.split('.').next(),
            (ImportTarget::From { name, .. }, None) => Some(name),
        }
    }
}

/// Why an import or binding only happens under some condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Condition {
    TypeChecking,
    VersionCheck,
    TryExcept,
    Other,
    /// Inside `if __name__ == "__main__":` at module level: runs when the
    /// file is executed as a script, never when it is imported.
    MainBlock,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Module,
    Class,
    Function,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Binding {
    pub name: Name,
    pub kind: BindingKind,
    pub conditional: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BindingKind {
    /// `def` or `class` at module level.
    Definition,
    /// Assignment, annotated assignment, augmented assignment.
    Assignment,
    /// Bound by the import with this index in [`Semantic::imports`].
    Import(u32),
    /// Loop targets, `with ... as`, `except ... as`, `del`, walrus, ...
    Other,
}

/// A use of a name chain `a` / `a.b.c` as a callee or a class base.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Reference {
    pub site: SiteId,
    /// The chain, head first: `["mod", "f"]` for `mod.f()`. A boxed
    /// slice, made once and never grown: no room to spare.
    pub path: Box<[Name]>,
    pub lookup: Lookup,
}

/// Where the head of a reference's chain is looked up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Lookup {
    /// Module globals as they stand after the first `visible` module-level
    /// bindings (module-level code runs top to bottom).
    GlobalsAt { visible: u32 },
    /// Module globals after the whole module ran (code in function bodies).
    Globals,
    /// A function- or class-scope import, by index into [`Semantic::imports`].
    LocalImport(u32),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    /// `f`, `C`, `C.method`; module-level assignments by their target name.
    pub qualname: Name,
    pub kind: DefinitionKind,
    /// Header text, whitespace folded: `def f(a, b=1) -> int`. Mostly
    /// longer than a `Name` holds inline: boxed, 8 bytes less than a
    /// `String`.
    pub signature: Box<str>,
    pub docstring: Option<Box<str>>,
    pub decorators: Vec<String>,
    pub start_line: u32,
    pub end_line: u32,
}

/// The parameters of a `def`, as far as they decide which calls fit it
/// (read from its signature when asked: [`crate::parameters_of`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parameters {
    /// Positional parameters in order, positional-only ones first.
    pub positional: Box<[Parameter]>,
    /// How many of `positional` are positional-only (before `/`).
    pub positional_only: u32,
    pub keyword_only: Box<[Parameter]>,
    /// `*args`.
    pub var_positional: bool,
    /// `**kwargs`.
    pub var_keyword: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parameter {
    pub name: Name,
    /// No default value.
    pub required: bool,
}

/// The shape of one call's arguments (their values do not matter). One
/// per call: kept small.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallArguments {
    /// The call's site, as its [`CallSite`] has it.
    pub site: SiteId,
    /// Saturated: a count past this is no real call.
    pub positional: u16,
    pub keywords: Box<[Name]>,
    /// A `*value` or `**value` argument: how many arguments it holds is
    /// not known.
    pub unpacked: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DefinitionKind {
    Function,
    AsyncFunction,
    Class,
    Method,
    Variable,
}

/// One use of a pattern static analysis cannot see through.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Dynamic {
    /// Where a warning points: the call, assignment target, decorator or
    /// `metaclass` keyword.
    pub site: SiteId,
    pub pattern: DynamicPattern,
}

/// What the front end saw. Patterns that hold a callee are only dynamic when
/// the callee resolves to the built-in or stdlib function its name suggests
/// (a project function called `eval` is no `eval`); the engine decides that.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DynamicPattern {
    /// `importlib.import_module(x)` or `__import__(x)` where `x` (as written)
    /// is not a literal absolute module name.
    Import { callee: Reference, argument: Name },
    /// `getattr(object, name)(...)` where `name` is not a literal.
    Dispatch {
        callee: Reference,
        object: Name,
        name: Name,
    },
    /// `exec(...)` or `eval(...)`.
    Exec { callee: Reference },
    /// `head.attr = value` where `head` is not a local variable: monkey
    /// patching when `head` is bound by an import. The target's
    /// chain, head first.
    AttributeAssignment { target: Reference },
    /// A decorator that may replace what it decorates: neither a
    /// common test decorator nor one that keeps the definition as written.
    Decorator { name: Name },
    /// `class C(metaclass=M)`, or `__metaclass__ = M` in a class body.
    Metaclass { class: Name, metaclass: Name },
}
