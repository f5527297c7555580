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

/// `InLayer(file, layer)` for each file in the first layer that matches it,
/// and `LayerAbove(upper, lower)` for every pair of layers in order.
pub fn facts<'a>(
    interner: &Interner,
    layers: &[Layer],
    paths: impl Iterator<Item = &'a str>,
) -> Vec<InputFact> {
    if layers.is_empty() {
        return Vec::new();
    }
    let names: Vec<_> = layers.iter().map(|l| interner.sym(&l.name)).collect();
    let mut facts = Vec::new();
    for (i, upper) in names.iter().enumerate() {
        for lower in names.iter().skip(i + 1) {
            facts.push(InputFact::LayerAbove(LayerAbove(*upper, *lower)));
        }
    }
    let sets: Vec<GlobSet> = layers.iter().map(|l| glob_set(&l.globs)).collect();
    for path in paths {
        if let Some(i) = sets.iter().position(|set| set.is_match(path)) {
            facts.push(InputFact::InLayer(InLayer(interner.node(path), names[i])));
        }
    }
    facts
}
