//! The string-keyed links of the project as typed values, read from each
//! file's own base facts and `file` stage (rules/plugins.dl), so asking
//! for them never builds the union of every relation.

use super::datalog::{InputFact, Site};
use super::{Engine, db};

/// One use or definition of a string-keyed extension point in a Python
/// file; `site` indexes the file's `ModuleFacts::sites`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LinkSite {
    pub file: String,
    pub site: u32,
    pub what: LinkTuple,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LinkTuple {
    /// `name = Signal()` (`SignalDef`).
    SignalDefinition { name: String },
    /// `SignalReceiver`; `signal_file` is a path or a marker.
    SignalReceiver { signal_file: String, signal: String },
    /// `SignalSender`.
    SignalSender { signal_file: String, signal: String },
    /// `HookSpec`.
    HookSpec { project: String, hook: String },
    /// `HookImpl`.
    HookImpl { project: String, hook: String },
    /// `LoadsEntryPoints`.
    LoadsEntryPoints { group: String },
}

impl Engine {
    /// Every file's string-keyed links, sorted by file, then site.
    pub fn string_link_sites(&self) -> Vec<LinkSite> {
        let interner = self.interner();
        let node = |n| interner.node_text(n).to_string();
        let sym = |s| interner.sym_text(s).to_string();
        let mut links = Vec::new();
        for &(_, file) in db::files_by_node(&self.db, self.project) {
            let path = file.path(&self.db);
            let mut at = |Site(site), what| {
                links.push(LinkSite {
                    file: path.clone(),
                    site,
                    what,
                })
            };
            for fact in db::file_base_facts(&self.db, self.project, file).facts() {
                if let InputFact::SignalDef(t) = fact {
                    at(t.1, LinkTuple::SignalDefinition { name: sym(t.2) });
                }
            }
            let outputs = db::file_stage(&self.db, self.project, file);
            for t in outputs.signal_receiver() {
                let (signal_file, signal) = (node(t.2), sym(t.3));
                at(
                    t.1,
                    LinkTuple::SignalReceiver {
                        signal_file,
                        signal,
                    },
                );
            }
            for t in outputs.signal_sender() {
                let (signal_file, signal) = (node(t.2), sym(t.3));
                at(
                    t.1,
                    LinkTuple::SignalSender {
                        signal_file,
                        signal,
                    },
                );
            }
            for t in outputs.hook_spec() {
                let (project, hook) = (sym(t.2), sym(t.3));
                at(t.1, LinkTuple::HookSpec { project, hook });
            }
            for t in outputs.hook_impl() {
                let (project, hook) = (sym(t.2), sym(t.3));
                at(t.1, LinkTuple::HookImpl { project, hook });
            }
            for t in outputs.loads_entry_points() {
                at(t.1, LinkTuple::LoadsEntryPoints { group: sym(t.2) });
            }
        }
        links.sort();
        links
    }
}
