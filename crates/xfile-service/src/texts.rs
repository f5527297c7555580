//! Indexed texts read back once each within one answer. A served engine
//! keeps a text only until its facts are extracted (`Engine::text` reads it
//! back from disk and checks it), so an answer that quotes many lines,
//! often of the same few files, reads each file once through this.

use std::cell::RefCell;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use xfile_engine::Engine;

pub(crate) struct Texts<'e> {
    engine: &'e Engine,
    read: RefCell<FxHashMap<String, Option<Arc<str>>>>,
}

impl<'e> Texts<'e> {
    pub(crate) fn new(engine: &'e Engine) -> Self {
        Texts {
            engine,
            read: RefCell::default(),
        }
    }

    /// `path`'s indexed text, as [`Engine::text`].
    pub(crate) fn text(&self, path: &str) -> Option<Arc<str>> {
        if let Some(read) = self.read.borrow().get(path) {
            return read.clone();
        }
        let text = self.engine.text(path);
        self.read
            .borrow_mut()
            .insert(path.to_string(), text.clone());
        text
    }

    /// Line `line` (1-based) of `path`'s indexed text, through `f`.
    pub(crate) fn line<R>(&self, path: &str, line: u32, f: impl FnOnce(&str) -> R) -> Option<R> {
        let index = usize::try_from(line).ok()?.checked_sub(1)?;
        let text = self.text(path)?;
        text.lines().nth(index).map(f)
    }
}
