//! Base facts of string-keyed extension points (rules/plugins*.dl): a
//! `PluginUse` becomes a fact only once the names it rests on resolve to
//! Django's, pluggy's or importlib's own (first hop, as for calls), so a
//! project function that happens to be called `receiver` or a `.connect`
//! on a database handle relates nothing.

use super::Builder;
use crate::datalog::{
    ConnectsSignal, EntryPointsCall, HookDecorator, HookimplMarker, HookspecMarker, InputFact,
    Node, SendsSignal, SignalDef, Site, Sym,
};
use xfile_python::{PluginKind, Reference};

/// Where Django defines `Signal` and `receiver` (the package re-exports them).
const DISPATCH: &[&str] = &[
    "<third-party:django.dispatch>",
    "<third-party:django.dispatch.dispatcher>",
];

/// The functions whose result an entry-point group is looked up in.
const LOADERS: &[(&str, &str)] = &[
    ("<stdlib:importlib.metadata>", "entry_points"),
    ("<third-party:importlib_metadata>", "entry_points"),
    ("<third-party:pkg_resources>", "iter_entry_points"),
];

impl Builder<'_> {
    pub(super) fn plugins(&mut self) {
        let semantic = self.semantic;
        for plugin in &semantic.plugins {
            let site = Site(plugin.site);
            match &plugin.kind {
                PluginKind::Factory {
                    name,
                    factory,
                    argument,
                } => self.factory(site, name, factory, argument.as_deref()),
                PluginKind::SignalCall { signal, sends } => {
                    if let Some((module, name)) = self.signal(signal, false) {
                        self.facts.push(if *sends {
                            InputFact::SendsSignal(SendsSignal(self.me, site, module, name))
                        } else {
                            InputFact::ConnectsSignal(ConnectsSignal(self.me, site, module, name))
                        });
                    }
                }
                PluginKind::Decorator {
                    decorator,
                    arguments,
                    hook,
                } => self.decorator(site, decorator, arguments, hook.as_deref()),
                PluginKind::LoadsGroup { loader, group } => {
                    let loads = loader.as_ref().is_none_or(|loader| {
                        LOADERS
                            .iter()
                            .any(|(module, name)| self.resolves_to(loader, module, name))
                    });
                    if loads {
                        let group = self.interner.sym(group);
                        self.facts.push(InputFact::EntryPointsCall(EntryPointsCall(
                            self.me, site, group,
                        )));
                    }
                }
            }
        }
    }

    /// `name = factory(argument)`: a signal or a pluggy marker when the
    /// factory is Django's or pluggy's and nothing else binds `name`.
    fn factory(&mut self, site: Site, name: &str, factory: &Reference, argument: Option<&str>) {
        let mut bindings = self.semantic.bindings.iter().filter(|b| b.name == name);
        let bound_once = matches!(
            (bindings.next(), bindings.next()),
            (Some(binding), None) if !binding.conditional
        );
        if !bound_once {
            return;
        }
        let sym = self.interner.sym(name);
        if DISPATCH
            .iter()
            .any(|module| self.resolves_to(factory, module, "Signal"))
        {
            self.facts
                .push(InputFact::SignalDef(SignalDef(self.me, site, sym)));
            return;
        }
        let Some(project) = argument else { return };
        let project = self.interner.sym(project);
        if self.resolves_to(factory, "<third-party:pluggy>", "HookspecMarker") {
            self.facts.push(InputFact::HookspecMarker(HookspecMarker(
                self.me, site, sym, project,
            )));
        } else if self.resolves_to(factory, "<third-party:pluggy>", "HookimplMarker") {
            self.facts.push(InputFact::HookimplMarker(HookimplMarker(
                self.me, site, sym, project,
            )));
        }
    }

    /// `@receiver(signals)` connects each signal; any other decorator
    /// that resolves into the project may be a pluggy marker.
    fn decorator(
        &mut self,
        site: Site,
        decorator: &Reference,
        arguments: &[Reference],
        hook: Option<&str>,
    ) {
        if DISPATCH
            .iter()
            .any(|module| self.resolves_to(decorator, module, "receiver"))
        {
            for argument in arguments {
                if let Some((module, name)) = self.signal(argument, true) {
                    let at = Site(argument.site);
                    self.facts.push(InputFact::ConnectsSignal(ConnectsSignal(
                        self.me, at, module, name,
                    )));
                }
            }
            return;
        }
        let Some(hook) = hook else { return };
        if let Some((_, module, name)) = self.first_hop(decorator)
            && !module.is_marker()
        {
            let hook = self.interner.sym(hook);
            self.facts.push(InputFact::HookDecorator(HookDecorator(
                self.me, site, module, name, hook,
            )));
        }
    }

    /// The module and name a signal expression refers to. A name from
    /// outside the project is a signal only if `vouched` (an argument of
    /// `@receiver`) or if its module is a `signals` module: a `.connect`
    /// or `.send` on anything else outside may be a socket or a mailer.
    fn signal(&mut self, signal: &Reference, vouched: bool) -> Option<(Node, Sym)> {
        let (_, module, name) = self.first_hop(signal)?;
        if module.is_marker() {
            let text = self.interner.node_text(module);
            let signals_module = text
                .trim_end_matches('>')
                .rsplit(['.', ':'])
                .next()
                .is_some_and(|last| last == "signals");
            if !(module.is_external() && (vouched || signals_module)) {
                return None;
            }
        }
        Some((module, name))
    }
}
