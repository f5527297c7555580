//! Definitions by file and qualified name, indexed on first use: a read
//! looks up many names in few files.

use std::cell::RefCell;
use std::collections::HashMap;

use rustc_hash::FxHashMap;

use xfile_engine::Engine;
use xfile_python::Definition;

type Index<'s> = FxHashMap<&'s str, &'s Definition>;

pub(super) struct Definitions<'s> {
    engine: &'s Engine,
    files: RefCell<HashMap<String, Option<Index<'s>>>>,
}

impl<'s> Definitions<'s> {
    pub(super) fn new(engine: &'s Engine) -> Self {
        Definitions {
            engine,
            files: RefCell::new(HashMap::new()),
        }
    }

    /// The definition `qualname` finally binds in `file` (its last one).
    pub(super) fn get(&self, file: &str, qualname: &str) -> Option<&'s Definition> {
        let mut files = self.files.borrow_mut();
        if !files.contains_key(file) {
            let index = self.engine.facts(file).map(|facts| {
                // Later bindings replace earlier ones.
                facts
                    .definitions
                    .iter()
                    .map(|d| (d.qualname.as_str(), d))
                    .collect()
            });
            files.insert(file.to_string(), index);
        }
        files.get(file)?.as_ref()?.get(qualname).copied()
    }
}
