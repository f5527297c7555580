//! Project-level base facts from the `layers` configuration: which layer
//! each file belongs to, and which layer lies above which. The rules in
//! `rules/layers.dl` turn them into `LayerViolation`s.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::datalog::{InLayer, InputFact, LayerAbove};
use super::intern::Interner;

/// One architecture layer: a name and globs on root-relative paths. Layers
/// are given top to bottom.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layer {
    pub name: String,
    pub globs: Vec<String>,
}

/// `*` stays within one path segment, `**` crosses them, as in
/// `.gitignore`. A glob that does not compile matches nothing (the
/// configuration reported it already).
fn glob_set(globs: &[String]) -> GlobSet {
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        if let Ok(glob) = GlobBuilder::new(glob).literal_separator(true).build() {
            builder.add(glob);
        }
    }
    builder.build().unwrap_or_else(|_| GlobSet::empty())
}

/// The configured layers, compiled: built once per configuration, asked
/// per file, so a new file decides only its own layer.
#[derive(Debug)]
pub(crate) struct LayerMatcher {
    /// What the sets were built from: two matchers are equal when these are.
    layers: Vec<Layer>,
    sets: Vec<GlobSet>,
}

impl PartialEq for LayerMatcher {
    fn eq(&self, other: &Self) -> bool {
        self.layers == other.layers
    }
}

impl Eq for LayerMatcher {}

impl LayerMatcher {
    pub(crate) fn new(layers: &[Layer]) -> Self {
        LayerMatcher {
            layers: layers.to_vec(),
            sets: layers.iter().map(|l| glob_set(&l.globs)).collect(),
        }
    }

    /// `LayerAbove(upper, lower)` for every pair of layers in order.
    pub(crate) fn above(&self, interner: &Interner) -> Vec<InputFact> {
        let names: Vec<_> = self.layers.iter().map(|l| interner.sym(&l.name)).collect();
        let mut facts = Vec::new();
        for (i, upper) in names.iter().enumerate() {
            for lower in names.iter().skip(i + 1) {
                facts.push(InputFact::LayerAbove(LayerAbove(*upper, *lower)));
            }
        }
        facts
    }

    /// `InLayer(file, layer)` for the first layer that matches `path`.
    pub(crate) fn in_layer(&self, interner: &Interner, path: &str) -> Option<InputFact> {
        let i = self.sets.iter().position(|set| set.is_match(path))?;
        let name = interner.sym(&self.layers[i].name);
        Some(InputFact::InLayer(InLayer(interner.node(path), name)))
    }
}
