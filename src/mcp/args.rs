//! The arguments of each tool, as the client sends them. Their doc
//! comments become the descriptions in the tool list, which every client
//! reads in full: they stay short, and fields whose names say it all have
//! none.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::federation::Level;
use crate::service::graph::Detail;
use crate::service::search::Expandable;

// How a list answer is written: text (the default, lines like the CLI's)
// or json. No doc comment and no field descriptions: the enum says it, and
// the tool list repeats it for every list tool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub(crate) enum Format {
    #[default]
    Text,
    Json,
}

/// One page of a list answer. Fields whose names say it all carry no
/// description: every word here is repeated in each client's tool list
/// (limit defaults to 100; cursor is the previous page's next_cursor).
#[derive(Clone, Deserialize, JsonSchema)]
pub(crate) struct PageArgs {
    pub(crate) limit: Option<usize>,
    pub(crate) cursor: Option<String>,
    #[serde(default)]
    pub(crate) format: Format,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct FileArgs {
    pub(crate) file_path: String,
    #[serde(flatten)]
    pub(crate) page: PageArgs,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct ReadArgs {
    pub(crate) file_path: String,
    /// First line (1-based).
    pub(crate) start_line: Option<u32>,
    /// Last line (inclusive).
    pub(crate) end_line: Option<u32>,
    /// 2-3: also classes the signatures mention.
    pub(crate) import_depth: Option<u32>,
    /// List sibling modules' names.
    #[serde(default)]
    pub(crate) show_available: bool,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct DependentsArgs {
    pub(crate) file_path: String,
    /// A definition: `User` or `User.save`.
    pub(crate) symbol: Option<String>,
    #[serde(flatten)]
    pub(crate) page: PageArgs,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct CallGraphArgs {
    /// `app/models.py::User.save`, dotted, or `User.save` when only one definition has that name.
    pub(crate) symbol: String,
    /// 1 (default) to 5.
    pub(crate) depth: Option<usize>,
    pub(crate) limit: Option<usize>,
    #[serde(default)]
    pub(crate) format: Format,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct OutlineArgs {
    pub(crate) file_path: String,
    #[serde(default)]
    pub(crate) format: Format,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct SymbolArgs {
    /// `app/models.py::User.save`, `app.models.User.save` or a unique name.
    pub(crate) name: String,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct GraphArgs {
    /// Only under this path.
    pub(crate) path_prefix: Option<String>,
    /// Default summary.
    #[serde(default)]
    pub(crate) detail: Detail,
    pub(crate) limit: Option<usize>,
    pub(crate) cursor: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct WarningsArgs {
    /// Only this file's warnings.
    pub(crate) file_path: Option<String>,
    #[serde(flatten)]
    pub(crate) page: PageArgs,
}

/// Which related containers a search loads at once.
#[derive(Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
#[schemars(inline)]
pub(crate) struct ExpandArgs {
    pub(crate) callers: bool,
    pub(crate) callees: bool,
    pub(crate) type_family: bool,
    pub(crate) all: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SearchArgs {
    /// A name, part of one, or qualified (`User.save`).
    pub(crate) query: String,
    pub(crate) max_clusters: Option<usize>,
    /// Call depth of callers/callees (default 2).
    pub(crate) expansion_depth: Option<usize>,
    pub(crate) include_preview: Option<bool>,
    /// Load these at once (default none).
    pub(crate) expand_relationships: Option<ExpandArgs>,
    /// Rank definitions near this file first.
    pub(crate) context_file: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExpandClusterArgs {
    /// From search_with_context.
    pub(crate) cluster_id: String,
    pub(crate) relationship_type: Expandable,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct SessionArgs {
    pub(crate) scope: Level,
    /// Collection or project names (none for global).
    #[serde(default)]
    pub(crate) ids: Vec<String>,
    /// Seconds (default 3600).
    pub(crate) ttl: Option<u64>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct CrossRefsArgs {
    /// `User`, `models.User` or `corelib.models.User`.
    pub(crate) symbol_name: String,
    pub(crate) limit: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct CollectionMapArgs {
    /// Default: every project in scope.
    pub(crate) collection: Option<String>,
}

#[derive(Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub(crate) enum RegistryAction {
    ProjectAdd,
    ProjectList,
    ProjectRemove,
    CollectionCreate,
    CollectionAdd,
    CollectionRemove,
    CollectionList,
    CollectionDelete,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct RegistryArgs {
    pub(crate) action: RegistryAction,
    /// The project or collection acted on.
    pub(crate) name: Option<String>,
    /// project_add: its directory, holding pyproject.toml, setup.py,
    /// setup.cfg, .git, or a top-level .py file or package.
    pub(crate) path: Option<String>,
    /// collection_add/remove: the project; collection_create: members.
    #[serde(default)]
    pub(crate) projects: Vec<String>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct InjectionArgs {
    /// Only injections into this file.
    pub(crate) target_file: Option<String>,
    /// Events, newest first (default 10).
    pub(crate) limit: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct QueryArgs {
    /// E.g. `Calls("app.py", _, _, _)`; `_` is a wildcard.
    pub(crate) pattern: String,
    #[serde(flatten)]
    pub(crate) page: PageArgs,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct ExplainArgs {
    /// E.g. `DependsOn("app.py", "models.py")`.
    pub(crate) fact: String,
    #[serde(default)]
    pub(crate) format: Format,
    /// Older spelling of `format: json`.
    #[schemars(skip)]
    pub(crate) json: Option<bool>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct GitLogArgs {
    /// A file or directory.
    pub(crate) path: Option<String>,
    /// Default 10.
    pub(crate) limit: Option<usize>,
    /// A date: 2024-05-01 or `2 weeks ago`.
    pub(crate) since: Option<String>,
    pub(crate) until: Option<String>,
    /// Part of a name or e-mail.
    pub(crate) author: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct EditImpactArgs {
    pub(crate) file_path: String,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct GitBlameArgs {
    pub(crate) file_path: String,
    pub(crate) start_line: Option<u32>,
    pub(crate) end_line: Option<u32>,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct GitDiffArgs {
    /// Default HEAD.
    pub(crate) base: Option<String>,
    /// Default the working tree.
    pub(crate) head: Option<String>,
    pub(crate) path: Option<String>,
}

/// `depth` stays the CLI's: two levels answer the question in most
/// projects, and every field costs tool-list tokens.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct ImpactArgs {
    /// Default HEAD.
    pub(crate) base: Option<String>,
}
