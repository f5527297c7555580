//! What an edit may break, said right after it (the agent's edit hook).
//!
//! An update that changes a few files keeps, per file, what the file was
//! before it: its facts, and who referred to each definition the update
//! removes. Those referrers are read before the update is written, because
//! afterwards nothing resolves to a removed definition any more. When the
//! edit is asked about, the file as it is now is compared with that state:
//! calls in other files that no longer fit a changed signature (and, for
//! an `__init__`, the class's constructor calls), overriding methods left
//! with the old signature, what referred to a removed definition or
//! module, and names the file uses that it no longer defines. Asking takes
//! the state, so the next edit is compared with this one's result.
//!
//! Every claim is fail-safe: a call whose arguments are unpacked, a method
//! call that may or may not be bound, a file that uses `import *` are
//! passed over rather than guessed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use super::Service;
use super::impact::ImportInto;
use super::paging::{fitting_parts, part_tokens};
use xfile_python::facts::{
    CallArguments, Definition, DefinitionKind, ExprKind, ImportTarget, ModuleFacts, Parameters,
};

/// Updates that change more files than this are not edits (a checkout, a
/// formatter over the tree): nothing is kept for them.
pub(crate) const EDIT_FILES: usize = 16;
/// Files whose state before their edit is kept at most, oldest dropped.
const KEPT_FILES: usize = 64;
/// Places listed at most per break, the rest counted: every broken call
/// is one the agent must mend, so the list is long; the answer as a whole
/// is still cut at the token budget (the hook's `hook_token_limit`).
const LISTED: usize = 40;

/// The state before their latest unasked-about edits of the files an
/// update changed, shared by the service's snapshots.
#[derive(Default)]
pub struct Befores {
    files: Mutex<BTreeMap<String, Before>>,
}

/// What an update read of the edited files before writing them.
#[derive(Default)]
pub(crate) struct Recorded {
    /// Kept once the update is written.
    pub(crate) befores: Vec<(String, Before)>,
    /// The facts of the new texts, which the update uses.
    pub(crate) presets: Vec<(String, Arc<ModuleFacts>)>,
}

/// One file before its edits.
#[derive(Clone)]
pub(crate) struct Before {
    /// `None`: the file did not exist.
    facts: Option<Arc<ModuleFacts>>,
    /// Who referred, before, to each definition an edit removed (by
    /// qualified name), and to the module itself when it was removed (key
    /// `""`).
    referrers: BTreeMap<String, Vec<Referrer>>,
    /// Orders the entries, for dropping the oldest.
    order: u64,
}

/// A place in another file that referred to a definition.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Referrer {
    file: String,
    line: u32,
    how: How,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum How {
    Imports,
    /// Called by this symbol of the file.
    Calls(String),
    /// This class of the file is a subclass.
    Subclasses(String),
}

impl Befores {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Before>> {
        self.files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keeps `before` for `path` unless an earlier state is kept already:
    /// the answer compares with the state before the first edit not yet
    /// asked about. Referrers of definitions removed later are added.
    pub(crate) fn keep(&self, path: String, before: Before) {
        let mut files = self.lock();
        let order = files.values().map(|b| b.order + 1).max().unwrap_or(0);
        match files.get_mut(&path) {
            Some(kept) => {
                for (name, referrers) in before.referrers {
                    kept.referrers.entry(name).or_insert(referrers);
                }
                kept.order = order;
            }
            None => {
                files.insert(path, Before { order, ..before });
            }
        }
        while files.len() > KEPT_FILES {
            let oldest = files
                .iter()
                .min_by_key(|(_, b)| b.order)
                .map(|(path, _)| path.clone());
            match oldest {
                Some(path) => files.remove(&path),
                None => break,
            };
        }
    }

    fn get(&self, path: &str) -> Option<Before> {
        self.lock().get(path).cloned()
    }

    /// Drops what is kept for `path` if it is still `before`: an edit
    /// that came in between starts from the same state.
    fn forget(&self, path: &str, before: &Before) {
        let mut files = self.lock();
        if files.get(path).is_some_and(|b| b.order == before.order) {
            files.remove(path);
        }
    }
}

impl Service {
    /// The state before this update of the files it modifies or removes
    /// (root-relative paths, with their new texts for the modified ones),
    /// read from the index as it still is; and the facts of the new texts,
    /// which the update then uses instead of parsing them again.
    pub(crate) fn befores(&self, modified: &[(&str, &str)], removed: &[String]) -> Recorded {
        let mut befores = Vec::new();
        let mut presets = Vec::new();
        if modified.len() + removed.len() > EDIT_FILES {
            return Recorded { befores, presets };
        }
        for &(path, text) in modified {
            let new = Arc::new(xfile_python::extract(text));
            let old = self.engine.shared_facts(path).cloned();
            let referrers = match &old {
                Some(old) => self.removed_referrers(path, old, Some(&new)),
                None => BTreeMap::new(),
            };
            befores.push((
                path.to_string(),
                Before {
                    facts: old,
                    referrers,
                    order: 0,
                },
            ));
            presets.push((path.to_string(), new));
        }
        for path in removed.iter().filter(|p| p.ends_with(".py")) {
            let Some(old) = self.engine.shared_facts(path).cloned() else {
                continue;
            };
            let mut referrers = self.removed_referrers(path, &old, None);
            let importers = Service::importers(&self.imports_into(path), path, None);
            if !importers.is_empty() {
                referrers.insert(String::new(), importers);
            }
            befores.push((
                path.clone(),
                Before {
                    facts: Some(old),
                    referrers,
                    order: 0,
                },
            ));
        }
        Recorded { befores, presets }
    }

    /// Who refers, from other files, to each definition of `old` that
    /// `new` (none: the file is removed) no longer has.
    fn removed_referrers(
        &self,
        path: &str,
        old: &ModuleFacts,
        new: Option<&ModuleFacts>,
    ) -> BTreeMap<String, Vec<Referrer>> {
        let kept: BTreeSet<&str> = new
            .map(|n| n.definitions.iter().map(|d| d.qualname.as_str()).collect())
            .unwrap_or_default();
        let mut found = BTreeMap::new();
        // Read once for every definition gone, and only if one is.
        let mut imports: Option<Vec<ImportInto>> = None;
        for gone in old
            .definitions
            .iter()
            .filter(|d| counts(d) && !kept.contains(d.qualname.as_str()))
        {
            let imports = imports.get_or_insert_with(|| self.imports_into(path));
            let mut referrers = Service::importers(imports, path, Some(&gone.qualname));
            for edge in self.engine.callers(path, &gone.qualname) {
                let interner = self.engine.interner();
                let file = interner.node_text(edge.file).to_string();
                if file == path {
                    continue;
                }
                let line = self.site_line(&file, edge.site.0);
                let caller = interner.sym_text(edge.caller).to_string();
                referrers.push(Referrer {
                    file,
                    line,
                    how: How::Calls(caller),
                });
            }
            if gone.kind == DefinitionKind::Class {
                for (file, class) in self.engine.subclasses(path, &gone.qualname) {
                    if file == path {
                        continue;
                    }
                    let line = self.definition_line(&file, &class);
                    referrers.push(Referrer {
                        file,
                        line,
                        how: How::Subclasses(class),
                    });
                }
            }
            referrers.sort();
            referrers.dedup();
            if !referrers.is_empty() {
                found.insert(gone.qualname.to_string(), referrers);
            }
        }
        found
    }

    /// The imports in other files of `path` (the module, or with `name`
    /// only those of that name), from `imports` (`Service::imports_into`).
    fn importers(imports: &[ImportInto], path: &str, name: Option<&str>) -> Vec<Referrer> {
        let mut found: Vec<Referrer> = imports
            .iter()
            .filter(|i| i.importer != path)
            .filter(|i| name.is_none_or(|n| i.name.as_deref() == Some(n)))
            .map(|i| Referrer {
                file: i.importer.clone(),
                line: i.line,
                how: How::Imports,
            })
            .collect();
        found.sort();
        found.dedup();
        found
    }

    fn site_line(&self, file: &str, site: u32) -> u32 {
        self.engine
            .facts(file)
            .and_then(|f| f.sites.get(site as usize))
            .map_or(0, |s| s.line)
    }

    fn definition_line(&self, file: &str, qualname: &str) -> u32 {
        self.engine
            .facts(file)
            .and_then(|f| f.definitions.iter().find(|d| d.qualname == qualname))
            .map_or(0, |d| d.start_line)
    }

    /// Who used `qualname` (`<module>`: the module) of `path` before an
    /// update removed it, as the service saw it then; nothing when it saw
    /// no such update or the edit hook was told already.
    pub(crate) fn users_before(
        &self,
        path: &str,
        qualname: &str,
    ) -> Vec<(super::calls::Symbol, super::impact::Via, u32)> {
        use super::impact::Via;
        let Some(before) = self.befores.get(path) else {
            return Vec::new();
        };
        let key = if qualname == "<module>" { "" } else { qualname };
        let Some(referrers) = before.referrers.get(key) else {
            return Vec::new();
        };
        let symbol = |file: &str, qualname: &str| super::calls::Symbol {
            file: file.to_string(),
            qualname: qualname.to_string(),
        };
        let module = self.engine.module_name(path);
        let name = match key {
            "" => module.rsplit('.').next().unwrap_or_default(),
            _ => last_name(qualname),
        };
        self.still_referring(referrers, name)
            .into_iter()
            .map(|r| match r.how {
                How::Imports => (symbol(&r.file, "<module>"), Via::Imports, r.line),
                How::Calls(caller) => (symbol(&r.file, &caller), Via::Calls, r.line),
                How::Subclasses(class) => (symbol(&r.file, &class), Via::Subclasses, r.line),
            })
            .collect()
    }

    /// Keeps the states before an update that is being written.
    pub(crate) fn keep_befores(&self, befores: Vec<(String, Before)>) {
        for (path, before) in befores {
            self.befores.keep(path, before);
        }
    }

    /// What the edits of `path` (root-relative) since it was last asked
    /// about may break, within `budget` tokens; empty when nothing does or
    /// nothing is known of the file before them.
    pub fn edit_breaks(&self, path: &str, budget: usize) -> String {
        // Read, not taken, until the answer is made: a read cancelled by
        // an update is run again.
        let Some(before) = self.befores.get(path) else {
            return String::new();
        };
        let breaks = self.breaks(path, &before);
        // A file that does not parse says nothing of its definitions: the
        // state before is kept, for the edit that mends it.
        if breaks.parse_error.is_none() {
            self.befores.forget(path, &before);
        }
        breaks.to_text(path, budget)
    }

    fn breaks(&self, path: &str, before: &Before) -> Breaks {
        let mut breaks = Breaks::default();
        let now = self.engine.facts(path);
        if let Some(error) = now.and_then(|f| f.parse_error.as_ref()) {
            breaks.parse_error = Some((error.line, error.message.clone()));
            return breaks;
        }
        if let Some(old) = &before.facts {
            let new_definitions: &[Definition] = now.map_or(&[], |f| &f.definitions);
            for definition in runtime_definitions(&old.definitions) {
                // The definition that runs: the last of a name (after its
                // `@overload`s).
                match new_definitions
                    .iter()
                    .rfind(|d| d.qualname == definition.qualname)
                {
                    Some(new) => self.signature_breaks(path, definition, new, &mut breaks),
                    None => {
                        let referrers = before
                            .referrers
                            .get(definition.qualname.as_str())
                            .map(|r| self.still_referring(r, last_name(&definition.qualname)))
                            .unwrap_or_default();
                        if !referrers.is_empty() {
                            let renamed = renamed_to(definition, old, new_definitions);
                            breaks.removed.push(Removed {
                                what: definition.qualname.to_string(),
                                renamed,
                                referrers,
                            });
                        }
                    }
                }
            }
            if now.is_none()
                && let Some(importers) = before.referrers.get("")
            {
                let module = self.engine.module_name(path);
                let module = module.rsplit('.').next().unwrap_or_default();
                let importers = self.still_referring(importers, module);
                if !importers.is_empty() {
                    breaks.module_importers = importers;
                }
            }
            if let Some(now) = now {
                breaks.undefined = newly_undefined(old, now);
            }
        }
        breaks
    }

    /// The referrers whose line still names `name`: a file edited since
    /// may have dropped the use.
    fn still_referring(&self, referrers: &[Referrer], name: &str) -> Vec<Referrer> {
        let texts = crate::texts::Texts::new(&self.engine);
        referrers
            .iter()
            .filter(|r| texts.line(&r.file, r.line, |line| line.contains(name)) == Some(true))
            .cloned()
            .collect()
    }

    /// The calls of `old` (a function or method kept under its name) that
    /// fitted its parameters and fit none of `new`'s, and the overrides
    /// left with the old parameters.
    fn signature_breaks(
        &self,
        path: &str,
        old: &Definition,
        new: &Definition,
        breaks: &mut Breaks,
    ) {
        let (Some(before), Some(after)) = (
            xfile_python::parameters_of(&old.signature),
            xfile_python::parameters_of(&new.signature),
        ) else {
            return;
        };
        let (before, after) = (&before, &after);
        if before == after || is_property(new) {
            return;
        }
        let mut misfits = Vec::new();
        let method = new.kind == DefinitionKind::Method;
        // A constructor call of the class passes `__init__`'s arguments.
        for edge in self.calls_of(path, &new.qualname) {
            let interner = self.engine.interner();
            let file = interner.node_text(edge.file).to_string();
            if file == path {
                continue;
            }
            let bound = match (method, *interner.sym_text(edge.name) == new.qualname) {
                (_, false) => Bound::Yes,
                (true, true) => self.binding_at(&file, edge.site.0, new),
                (false, true) => Bound::No,
            };
            let caller = interner.sym_text(edge.caller).to_string();
            if let Some(why) = self.misfit(&file, edge.site.0, before, after, bound) {
                misfits.push(Misfit {
                    line: self.site_line(&file, edge.site.0),
                    file,
                    caller,
                    why,
                });
            }
        }
        misfits.sort();
        misfits.dedup();
        let overrides = match (method, new.qualname.rsplit_once('.')) {
            (true, Some((class, name))) => self.overrides_left(path, class, name, before, after),
            _ => Vec::new(),
        };
        if !misfits.is_empty() || !overrides.is_empty() {
            breaks.changed.push(Changed {
                what: new.qualname.to_string(),
                was: old.signature.to_string(),
                now: new.signature.to_string(),
                line: new.start_line,
                misfits,
                overrides,
            });
        }
    }

    /// Methods named `name` of subclasses of `class` that accepted every
    /// call `old` accepted and do not accept all that `new` does: left
    /// behind by the change.
    fn overrides_left(
        &self,
        path: &str,
        class: &str,
        name: &str,
        old: &Parameters,
        new: &Parameters,
    ) -> Vec<Override> {
        let mut found = Vec::new();
        for (file, sub) in self.engine.subclasses(path, class) {
            let qualname = format!("{sub}.{name}");
            let Some(facts) = self.engine.facts(&file) else {
                continue;
            };
            let parameters = facts
                .definitions
                .iter()
                .rfind(|d| d.qualname == qualname)
                .and_then(|m| Some((m, xfile_python::parameters_of(&m.signature)?)));
            if let Some((method, parameters)) = parameters
                && accepts(&parameters, old)
                && !accepts(&parameters, new)
            {
                found.push(Override {
                    file,
                    line: method.start_line,
                    method: qualname,
                    signature: method.signature.to_string(),
                });
            }
        }
        found.sort();
        found
    }

    /// Whether the call at `site` of `file`, of method `method`, passes
    /// the instance itself.
    fn binding_at(&self, file: &str, site: u32, method: &Definition) -> Bound {
        if method.decorators.iter().any(|d| d == "staticmethod") {
            return Bound::No;
        }
        if method.decorators.iter().any(|d| d == "classmethod") {
            return Bound::Yes;
        }
        let Some(facts) = self.engine.facts(file) else {
            return Bound::Unknown;
        };
        let semantic = &facts.semantic;
        let base = semantic
            .call_sites
            .iter()
            .find(|c| c.site == site)
            .and_then(|c| c.callee)
            .and_then(|callee| semantic.expressions.get(callee as usize))
            .and_then(|e| match e.kind {
                ExprKind::Attribute { base, .. } => semantic.expressions.get(base as usize),
                _ => None,
            });
        match base.map(|b| &b.kind) {
            // An instance: `self.m()`, `super().m()`, `make().m()`, a
            // value declared an instance.
            Some(
                ExprKind::SelfOf { .. }
                | ExprKind::SuperOf { .. }
                | ExprKind::Call { .. }
                | ExprKind::Instance { .. }
                | ExprKind::Fixture { .. },
            ) => Bound::Yes,
            _ => Bound::Unknown,
        }
    }

    /// Why the call at `site` of `file` fits `after` no longer, if it
    /// fitted `before`; `None` when it fits, or may.
    fn misfit(
        &self,
        file: &str,
        site: u32,
        before: &Parameters,
        after: &Parameters,
        bound: Bound,
    ) -> Option<String> {
        let facts = self.engine.facts(file)?;
        let at = facts
            .arguments
            .binary_search_by_key(&site, |a| a.site)
            .ok()?;
        let arguments = &facts.arguments[at];
        if arguments.unpacked {
            return None;
        }
        let skips: &[usize] = match bound {
            Bound::No => &[0],
            Bound::Yes => &[1],
            Bound::Unknown => &[0, 1],
        };
        let fitted = skips
            .iter()
            .any(|&skip| fit(before, arguments, skip).is_ok());
        if !fitted {
            return None;
        }
        let mut why = None;
        for &skip in skips {
            match fit(after, arguments, skip) {
                Ok(()) => return None,
                Err(reason) => why = why.or(Some(reason)),
            }
        }
        why
    }
}

#[derive(Clone, Copy)]
enum Bound {
    /// The instance (or class) is passed first, unseen.
    Yes,
    No,
    Unknown,
}

/// Whether an override with `parameters` accepts every call that `base`
/// (both methods, their first parameter the instance) accepts: room for
/// as many positional arguments, every name, and nothing required that
/// the base does not require.
fn accepts(parameters: &Parameters, base: &Parameters) -> bool {
    let own: Vec<&xfile_python::facts::Parameter> = parameters
        .positional
        .iter()
        .skip(1)
        .chain(parameters.keyword_only.iter())
        .collect();
    let theirs: Vec<&xfile_python::facts::Parameter> = base
        .positional
        .iter()
        .skip(1)
        .chain(base.keyword_only.iter())
        .collect();
    let room = parameters.var_positional
        || (!base.var_positional && parameters.positional.len() >= base.positional.len());
    let names = parameters.var_keyword
        || (!base.var_keyword && theirs.iter().all(|p| own.iter().any(|o| o.name == p.name)));
    let required = own
        .iter()
        .filter(|p| p.required)
        .all(|p| theirs.iter().any(|t| t.name == p.name && t.required));
    room && names && required
}

/// Whether a call with `arguments` fits `parameters` once the first
/// `skip` positional parameters are passed implicitly; why not if not.
fn fit(parameters: &Parameters, arguments: &CallArguments, skip: usize) -> Result<(), String> {
    let positional = parameters.positional.get(skip..).unwrap_or_default();
    let only = (parameters.positional_only as usize).saturating_sub(skip);
    let given = arguments.positional as usize;
    if given > positional.len() && !parameters.var_positional {
        return Err(format!(
            "passes {given} positional, it takes {}",
            positional.len()
        ));
    }
    let mut filled: BTreeSet<&str> = positional
        .iter()
        .take(given)
        .map(|p| p.name.as_str())
        .collect();
    for keyword in arguments.keywords.iter() {
        let named = positional
            .iter()
            .skip(only)
            .chain(parameters.keyword_only.iter())
            .find(|p| p.name == *keyword);
        match named {
            Some(p) if filled.contains(p.name.as_str()) => {
                return Err(format!("passes `{keyword}` twice"));
            }
            Some(p) => {
                filled.insert(p.name.as_str());
            }
            None if parameters.var_keyword => {}
            None => return Err(format!("passes `{keyword}=`, no such parameter")),
        }
    }
    let missing = positional
        .iter()
        .chain(parameters.keyword_only.iter())
        .find(|p| p.required && !filled.contains(p.name.as_str()));
    match missing {
        Some(p) => Err(format!("does not pass `{}`", p.name)),
        None => Ok(()),
    }
}

/// The definitions of `definitions` that [`counts`] keeps, each name once:
/// the last, which is the one that runs (an `@overload`'s are typing
/// only).
fn runtime_definitions(definitions: &[Definition]) -> Vec<&Definition> {
    let mut last: BTreeMap<&str, &Definition> = BTreeMap::new();
    for definition in definitions.iter().filter(|d| counts(d)) {
        last.insert(definition.qualname.as_str(), definition);
    }
    let mut kept: Vec<&Definition> = last.into_values().collect();
    kept.sort_by_key(|d| d.start_line);
    kept
}

/// Definitions whose removal or change others can notice: functions,
/// methods, classes, and module-level variables (imported by name).
fn counts(definition: &Definition) -> bool {
    definition.kind != DefinitionKind::Variable || !definition.qualname.contains('.')
}

fn is_property(definition: &Definition) -> bool {
    definition
        .decorators
        .iter()
        .any(|d| d == "property" || d.ends_with(".setter") || d.ends_with(".getter"))
}

fn last_name(qualname: &str) -> &str {
    qualname.rsplit('.').next().unwrap_or(qualname)
}

/// The one definition the file gained, of the same kind, scope and
/// parameters and as long, as `gone`: most likely `gone` renamed.
fn renamed_to(gone: &Definition, old: &ModuleFacts, now: &[Definition]) -> Option<String> {
    let scope = |q: &str| q.rsplit_once('.').map_or("", |(s, _)| s).to_string();
    let mut candidates = now.iter().filter(|d| {
        d.kind == gone.kind
            && scope(&d.qualname) == scope(&gone.qualname)
            && xfile_python::parameters_of(&d.signature)
                == xfile_python::parameters_of(&gone.signature)
            && d.end_line - d.start_line == gone.end_line - gone.start_line
            && !old.definitions.iter().any(|o| o.qualname == d.qualname)
    });
    let first = candidates.next()?;
    candidates
        .next()
        .is_none()
        .then(|| first.qualname.to_string())
}

/// The global names `now` uses without defining them (not bound at module
/// level, not builtins) that `old` did not use so: `(name, line)`, by line.
/// None when the module binds names no one can see (`import *`).
fn newly_undefined(old: &ModuleFacts, now: &ModuleFacts) -> Vec<(String, u32)> {
    let before: BTreeSet<String> = undefined(old).into_iter().map(|(n, _)| n).collect();
    let mut found: Vec<(String, u32)> = undefined(now)
        .into_iter()
        .filter(|(name, _)| !before.contains(name))
        .collect();
    found.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    found.dedup_by(|a, b| a.0 == b.0);
    found
}

/// Names a module sets without a binding the facts record.
const MODULE_NAMES: &[&str] = &[
    "__name__",
    "__file__",
    "__doc__",
    "__package__",
    "__spec__",
    "__loader__",
    "__path__",
    "__builtins__",
    "__annotations__",
    "__dict__",
    "__all__",
];

fn undefined(facts: &ModuleFacts) -> Vec<(String, u32)> {
    let semantic = &facts.semantic;
    let wildcard = semantic
        .imports
        .iter()
        .any(|i| matches!(i.target, ImportTarget::Star { .. }));
    if wildcard || facts.parse_error.is_some() {
        return Vec::new();
    }
    let bound: BTreeSet<&str> = semantic.bindings.iter().map(|b| b.name.as_str()).collect();
    let line = |site: u32| facts.sites.get(site as usize).map_or(0, |s| s.line);
    let mut used: Vec<(String, u32)> = Vec::new();
    for reference in semantic.calls.iter().chain(&semantic.bases) {
        if let Some(head) = reference.path.first() {
            used.push((head.to_string(), line(reference.site)));
        }
    }
    for expression in &semantic.expressions {
        if let ExprKind::Global { name, .. } = expression.kind
            && let Some(name) = semantic.names.get(name as usize)
        {
            used.push((name.to_string(), line(expression.site)));
        }
    }
    used.retain(|(name, _)| {
        !bound.contains(name.as_str())
            && !xfile_python::names::is_builtin(name)
            && !MODULE_NAMES.contains(&name.as_str())
    });
    used
}

/// What an edit may break.
#[derive(Default)]
struct Breaks {
    changed: Vec<Changed>,
    removed: Vec<Removed>,
    /// Imports of the file, which was removed.
    module_importers: Vec<Referrer>,
    /// Names the file uses and no longer defines, with their first line.
    undefined: Vec<(String, u32)>,
    /// The file does not parse: line and message; nothing else is said.
    parse_error: Option<(u32, String)>,
}

struct Changed {
    what: String,
    was: String,
    now: String,
    line: u32,
    misfits: Vec<Misfit>,
    overrides: Vec<Override>,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Misfit {
    file: String,
    line: u32,
    caller: String,
    why: String,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Override {
    file: String,
    line: u32,
    method: String,
    signature: String,
}

struct Removed {
    what: String,
    renamed: Option<String>,
    referrers: Vec<Referrer>,
}

impl Breaks {
    fn is_empty(&self) -> bool {
        self.changed.is_empty()
            && self.removed.is_empty()
            && self.module_importers.is_empty()
            && self.undefined.is_empty()
            && self.parse_error.is_none()
    }

    /// The answer: a heading, then one block per break, each place on a
    /// line of its own, cut at `budget` tokens at a line.
    fn to_text(&self, path: &str, budget: usize) -> String {
        if self.is_empty() {
            return String::new();
        }
        let mut lines = vec![format!("[xfile: what the edit of {path} may break]")];
        if let Some((line, message)) = &self.parse_error {
            lines.push(format!(
                "{path} does not parse (line {line}: {message}); what it breaks is said once it does"
            ));
        }
        let listed = |lines: &mut Vec<String>, items: Vec<String>| {
            let more = items.len().saturating_sub(LISTED);
            lines.extend(items.into_iter().take(LISTED).map(|i| format!("  {i}")));
            if more > 0 {
                lines.push(format!("  … {more} more"));
            }
        };
        for changed in &self.changed {
            lines.push(format!(
                "{} changed at line {}: `{}` (was `{}`)",
                changed.what, changed.line, changed.now, changed.was
            ));
            let calls = changed
                .misfits
                .iter()
                .map(|m| format!("{}:{} {}: {}", m.file, m.line, in_caller(&m.caller), m.why))
                .collect();
            listed(&mut lines, calls);
            let overrides = changed
                .overrides
                .iter()
                .map(|o| {
                    format!(
                        "{}:{} {} overrides it, not taking all it now takes: `{}`",
                        o.file, o.line, o.method, o.signature
                    )
                })
                .collect();
            listed(&mut lines, overrides);
        }
        for removed in &self.removed {
            let heading = match &removed.renamed {
                Some(to) => format!("{} renamed to {}; still used as before:", removed.what, to),
                None => format!("{} removed; still used:", removed.what),
            };
            lines.push(heading);
            let places = removed.referrers.iter().map(Referrer::describe).collect();
            listed(&mut lines, places);
        }
        if !self.module_importers.is_empty() {
            lines.push(format!("{path} removed; still imported:"));
            let places = self
                .module_importers
                .iter()
                .map(Referrer::describe)
                .collect();
            listed(&mut lines, places);
        }
        if !self.undefined.is_empty() {
            lines.push(format!(
                "{path} uses names it no longer defines or imports:"
            ));
            let names = self
                .undefined
                .iter()
                .map(|(name, line)| format!("`{name}` at line {line}"))
                .collect();
            listed(&mut lines, names);
        }
        let parts: Vec<String> = lines.into_iter().map(|l| format!("{l}\n")).collect();
        let keep = if parts.concat().len() <= budget {
            parts.len()
        } else {
            fitting_parts(&part_tokens(&parts), budget)
        };
        let mut text = parts[..keep].concat();
        if keep < parts.len() {
            let _ = writeln!(text, "… cut at {budget} tokens");
        }
        text.trim_end().to_string()
    }
}

impl Referrer {
    fn describe(&self) -> String {
        match &self.how {
            How::Imports => format!("{}:{} imports it", self.file, self.line),
            How::Calls(caller) => {
                format!("{}:{} {} calls it", self.file, self.line, in_caller(caller))
            }
            How::Subclasses(class) => {
                format!("{}:{} class {class} inherits it", self.file, self.line)
            }
        }
    }
}

fn in_caller(caller: &str) -> String {
    match caller {
        "<module>" => "at module level".to_string(),
        _ => format!("in {caller}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xfile_python::facts::Parameter;

    fn parameters(positional: &[(&str, bool)], keyword_only: &[(&str, bool)]) -> Parameters {
        let made = |list: &[(&str, bool)]| {
            list.iter()
                .map(|&(name, required)| Parameter {
                    name: name.into(),
                    required,
                })
                .collect()
        };
        Parameters {
            positional: made(positional),
            keyword_only: made(keyword_only),
            ..Parameters::default()
        }
    }

    fn call(positional: u16, keywords: &[&str]) -> CallArguments {
        CallArguments {
            site: 0,
            positional,
            keywords: keywords.iter().map(|&k| k.into()).collect(),
            unpacked: false,
        }
    }

    #[test]
    fn long_lists_are_counted_past_their_cap_and_the_answer_cut_at_the_budget() {
        let misfits = (1..=45)
            .map(|line| Misfit {
                file: "a.py".to_string(),
                line,
                caller: "f".to_string(),
                why: "does not pass `x`".to_string(),
            })
            .collect();
        let breaks = Breaks {
            changed: vec![Changed {
                what: "g".to_string(),
                was: "def g()".to_string(),
                now: "def g(x)".to_string(),
                line: 1,
                misfits,
                overrides: Vec::new(),
            }],
            ..Breaks::default()
        };
        let text = breaks.to_text("b.py", 10_000);
        assert_eq!(text.lines().count(), 1 + 1 + LISTED + 1, "{text}");
        assert!(text.ends_with("  … 5 more"), "{text}");
        let cut = breaks.to_text("b.py", 60);
        assert!(cut.ends_with("… cut at 60 tokens"), "{cut}");
        assert!(cut.lines().count() < 10, "{cut}");
    }

    #[test]
    fn a_call_fits_when_every_argument_lands_and_nothing_required_is_missing() {
        let p = parameters(&[("self", true), ("a", true), ("b", false)], &[("c", true)]);
        assert_eq!(fit(&p, &call(1, &["c"]), 1), Ok(()));
        assert_eq!(fit(&p, &call(2, &["c"]), 1), Ok(()));
        assert_eq!(fit(&p, &call(1, &["b", "c"]), 1), Ok(()));
        assert_eq!(
            fit(&p, &call(3, &["c"]), 1),
            Err("passes 3 positional, it takes 2".to_string())
        );
        assert_eq!(
            fit(&p, &call(1, &[]), 1),
            Err("does not pass `c`".to_string())
        );
        assert_eq!(
            fit(&p, &call(1, &["a", "c"]), 1),
            Err("passes `a` twice".to_string())
        );
        assert_eq!(
            fit(&p, &call(1, &["c", "d"]), 1),
            Err("passes `d=`, no such parameter".to_string())
        );
        let open = Parameters {
            var_positional: true,
            var_keyword: true,
            ..parameters(&[("a", true)], &[])
        };
        assert_eq!(fit(&open, &call(5, &["z"]), 0), Ok(()));
    }
}
