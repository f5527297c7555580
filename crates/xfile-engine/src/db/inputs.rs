//! The salsa inputs: one [`SourceFile`] per indexed file, the [`Bucket`]s
//! that share the files out, and the [`Project`] with its settings. Only
//! the engine writes them, never a query.

use std::sync::Arc;

use super::StageInputs;
use crate::datalog::InputFact;
use crate::entry_points::EntryPointSpec;
use crate::layers::Layer;
use crate::resolved_inputs::FileResolved;
use crate::source_text::SourceText;
use crate::test_modules::TestPatterns;
use xfile_python::{ModuleFacts, Semantic};

#[salsa::input(debug)]
pub(crate) struct SourceFile {
    /// Root-relative, `/`-separated. Fixed for the input's life: a rename is
    /// a removal plus a new input.
    #[returns(ref)]
    pub path: String,
    /// Held until the file's facts are extracted (`source_text.rs`).
    #[returns(ref)]
    pub text: SourceText,
    /// What `module_facts(file).semantic` was for the current text; written
    /// by the engine, never by a query.
    #[returns(ref)]
    pub semantic: Arc<Semantic>,
    /// Facts extracted earlier from exactly this `text` (the warm-start
    /// cache vouches for that by content hash), so `module_facts` need not
    /// parse; written with `text`, never by a query.
    #[returns(ref)]
    pub preset: Option<Arc<ModuleFacts>>,
    /// The `resolve` and `classes` tuples whose first argument is a node of
    /// this file's facts: written by the engine after those stages ran
    /// (`resolved_inputs.rs`), never by a query. An input rather than a
    /// query so that the file's own chain depends on nothing of the whole
    /// project: it keeps the durability of the file's inputs, and an edit
    /// elsewhere verifies it without a walk.
    #[returns(ref)]
    pub resolved: Arc<FileResolved>,
    /// The slice of the class table this file's member lookups reach:
    /// written by the engine when the file or what its lookups read in the
    /// table changed (`class_contexts.rs`), never by a query, for the same
    /// reason as `resolved`.
    #[returns(ref)]
    pub classes: Arc<StageInputs>,
}

/// A fixed share of the project's files, chosen by a hash of the path
/// (`buckets.rs`). What reads every file reads them bucket by bucket,
/// through a query per bucket: a new, deleted or edited file re-runs its
/// bucket's query (on Django ~44 files) and the gathering over the
/// buckets (64 on Django, more on a larger project), and the other
/// buckets' values are reused. After a new or deleted file salsa still
/// checks their edges (every bucket's query has
/// the durability of the file lists, medium), but a check of a file's memo
/// costs far less than fetching it into a query that runs again; an edit
/// is a low change and leaves them unchecked.
#[salsa::input(debug)]
pub(crate) struct Bucket {
    /// The bucket's indexed files, sorted by path.
    #[returns(ref)]
    pub files: Vec<SourceFile>,
}

#[salsa::input(debug)]
pub(crate) struct Project {
    /// The indexed files, in buckets (`buckets::bucket_count` of the first
    /// index's files); their number is fixed once files were added.
    #[returns(ref)]
    pub buckets: Vec<Bucket>,
    /// Extra module search roots from configuration, root-relative.
    #[returns(ref)]
    pub extra_search_paths: Vec<String>,
    /// Directories below the root holding a sub-project marker
    /// (`pyproject.toml`, `setup.py`, `setup.cfg`), root-relative.
    #[returns(ref)]
    pub sub_projects: Vec<String>,
    /// The project's pytest settings that name test modules.
    #[returns(ref)]
    pub test_patterns: TestPatterns,
    /// Architecture layers from configuration, top to bottom.
    #[returns(ref)]
    pub layers: Vec<Layer>,
    /// Entry points the project's `pyproject.toml` files declare.
    #[returns(ref)]
    pub entry_points: Vec<EntryPointSpec>,
    /// The value of [`project_facts`] at the last `Engine::resolve`,
    /// written by the engine, never by a query: what each file's chain
    /// reads of it. As an input of high durability, it keeps the files'
    /// chains free of the whole project's durability (see
    /// `resolved_inputs.rs`); a change to it is written high, so that
    /// update walks every chain once, as any whole-project change did.
    #[returns(ref)]
    pub written_project_facts: Arc<Vec<InputFact>>,
    /// Never written; low. Read by every query that gathers over the
    /// buckets ([`super::gathered_buckets`]), so that those memos are low
    /// from the first index, as the first edit makes them anyway. salsa
    /// keeps an equal value as unchanged only when its durability did not
    /// fall: without this, the first edit after an index re-ran every
    /// stage after a gathering, equal inputs or not (the `classes` stage:
    /// 50-65 ms on four copies of Django).
    pub low_mark: (),
}
