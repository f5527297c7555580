//! `search_with_context`: symbols found by name, grouped into clusters of
//! related definitions with explicit expansion states and tiered previews
//! held to token budgets.
//!
//! A cluster is a file's or a class's matches (its seeds). Its related
//! containers: `colocated` (the file's other top-level definitions) and
//! `siblings` (the other members of the seed's class) are always loaded;
//! `callers`, `callees` and `typeFamily` (bases, subclasses, overrides)
//! load when asked, in the search or later by cluster id
//! (`expand_cluster_relationship`). Clusters are kept for expansion in a
//! small cache that forgets them after `cache_expiry_minutes`.

mod hot;
mod index;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::Service;
use super::calls::Direction;
use super::context::count_tokens;
use super::ranking::{Accesses, Boosts};
pub(crate) use hot::HotSpots;
pub use index::MatchKind;
pub(crate) use index::SymbolIndex;
use index::{Entry, Kind, Query};
use xfile_python::{Definition, DefinitionKind};

/// Token allocation of a cluster's sections.
const SEED_TOKENS: usize = 400;
const CALLERS_TOKENS: usize = 300;
const CALLEES_TOKENS: usize = 300;
const TYPE_FAMILY_TOKENS: usize = 200;
const COLOCATED_TOKENS: usize = 150;
const SIBLINGS_TOKENS: usize = 100;
/// Per-preview caps of the three tiers.
const FULL_TIER: usize = 200;
const SIGNATURE_TIER: usize = 60;
const MINIMAL_TIER: usize = 25;
/// Related symbols listed per container at most, before the token budget.
const RELATED_CAP: usize = 15;
/// Seeds per cluster.
const SEEDS_PER_CLUSTER: usize = 3;
/// Matches ranked by use; the rest (worse matches) are counted only.
const RANKED: usize = 500;
/// Clusters kept for expansion.
const KEPT_CLUSTERS: usize = 256;
/// The longest query searched for (characters): longer ones are refused
/// before any work (a name, even qualified, is far shorter).
pub const MAX_QUERY_CHARS: usize = 1_000;
/// The query as echoed in the answer, at most (tokens).
const ECHO_TOKENS: usize = 100;

#[derive(Clone, Copy, Debug, Default)]
pub struct Expand {
    pub callers: bool,
    pub callees: bool,
    pub type_family: bool,
}

impl Expand {
    /// Every expensive relationship.
    pub fn all() -> Expand {
        Expand {
            callers: true,
            callees: true,
            type_family: true,
        }
    }
}

#[derive(Clone, Debug)]
pub struct SearchOptions {
    pub max_clusters: usize,
    /// Calls away the callers and callees containers follow (1-5).
    pub expansion_depth: usize,
    pub include_preview: bool,
    pub expand: Expand,
    /// The file in hand: definitions in its package get the module boost,
    /// and nearer ones rank higher among equals.
    pub context_file: Option<String>,
    /// How often the session read each file: the frequency boost.
    pub accesses: Accesses,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            max_clusters: 5,
            expansion_depth: 2,
            include_preview: true,
            expand: Expand::default(),
            context_file: None,
            accesses: Accesses::new(),
        }
    }
}

/// Whether a container's data is there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    NotLoaded,
    Loading,
    Loaded,
    Failed,
    Truncated,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Related {
    /// `path::Qualified.name`.
    pub symbol: String,
    pub kind: &'static str,
    pub file: String,
    pub line: u32,
    /// How it relates: `calls`, `called_by`, `base`, `subclass`, `overrides`, ...
    pub relation: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    pub state: State,
    pub data: Vec<Related>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How many there are, when `data` holds fewer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_count: Option<usize>,
    /// Milliseconds since the Unix epoch of the load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loaded_at: Option<u64>,
}

impl Container {
    fn not_loaded() -> Container {
        Container {
            state: State::NotLoaded,
            data: Vec::new(),
            error: None,
            total_count: None,
            loaded_at: None,
        }
    }

    fn failed(error: String) -> Container {
        Container {
            state: State::Failed,
            error: Some(error),
            loaded_at: Some(now_ms()),
            ..Container::not_loaded()
        }
    }

    /// `found` held to `cap` items and `budget` tokens of previews.
    fn loaded(mut found: Vec<Related>, budget: usize) -> (Container, usize) {
        let total = found.len();
        let mut spent = 0;
        let mut kept = 0;
        for item in found.iter().take(RELATED_CAP) {
            let cost = count_tokens(&serde_json::to_string(item).unwrap_or_default());
            if spent + cost > budget {
                break;
            }
            spent += cost;
            kept += 1;
        }
        found.truncate(kept);
        let truncated = kept < total;
        let container = Container {
            state: if truncated {
                State::Truncated
            } else {
                State::Loaded
            },
            data: found,
            error: None,
            total_count: truncated.then_some(total),
            loaded_at: Some(now_ms()),
        };
        (container, spent)
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Seed {
    pub symbol: String,
    pub kind: &'static str,
    pub file: String,
    pub line: u32,
    #[serde(rename = "match")]
    pub matched: MatchKind,
    /// How many other project files use it.
    pub used_by: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedSet {
    pub callers: Container,
    pub callees: Container,
    pub type_family: Container,
    pub colocated: Container,
    pub siblings: Container,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cluster {
    pub id: String,
    pub seeds: Vec<Seed>,
    pub related: RelatedSet,
    /// Tokens per section and in all.
    pub token_usage: BTreeMap<&'static str, usize>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncated {
    pub cluster_id: String,
    pub relationship: &'static str,
    pub available_count: usize,
}

#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hints {
    pub truncated_relationships: Vec<Truncated>,
    pub recommended_expansions: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// The whole answer's: the echoed query's and the clusters'.
    pub estimated: usize,
    /// The echoed query's (cut short when long).
    pub query: usize,
    pub budget: usize,
    pub per_cluster: Vec<usize>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchAnswer {
    pub query: String,
    pub clusters: Vec<Cluster>,
    pub total_matches: usize,
    pub search_time_ms: f64,
    pub token_usage: TokenUsage,
    pub expansion_hints: Hints,
    /// Why fewer clusters than asked were answered, when that happened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A match as ranked: how well it matched, its score (use times the
/// ranking boosts), use, and how near it is to the file in hand.
struct Ranked<'a> {
    quality: (MatchKind, u8),
    score: f64,
    used: usize,
    near: usize,
    entry: &'a Entry,
}

/// A matched entry: how it matched and how many files use it.
type Found<'a> = (MatchKind, usize, &'a Entry);

/// What a kept cluster needs to expand later.
#[derive(Clone, Debug)]
struct KeptCluster {
    seeds: Vec<(String, String)>,
    depth: usize,
    include_preview: bool,
    kept_at: Instant,
}

/// Clusters by id, for `expand_cluster_relationship`.
pub(crate) struct ClusterCache {
    clusters: Mutex<lru::LruCache<String, KeptCluster>>,
    next: std::sync::atomic::AtomicU64,
    expiry: Duration,
}

impl ClusterCache {
    pub(crate) fn new(expiry: Duration) -> ClusterCache {
        ClusterCache {
            clusters: Mutex::new(lru::LruCache::new(
                std::num::NonZeroUsize::new(KEPT_CLUSTERS).unwrap_or(std::num::NonZeroUsize::MIN),
            )),
            next: std::sync::atomic::AtomicU64::new(1),
            expiry,
        }
    }

    fn keep(&self, cluster: KeptCluster) -> String {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = format!("c{n}");
        let mut clusters = self.clusters.lock().unwrap_or_else(|e| e.into_inner());
        clusters.put(id.clone(), cluster);
        id
    }

    fn get(&self, id: &str) -> Option<KeptCluster> {
        let mut clusters = self.clusters.lock().unwrap_or_else(|e| e.into_inner());
        let kept = clusters.get(id)?.clone();
        if kept.kept_at.elapsed() > self.expiry {
            clusters.pop(id);
            return None;
        }
        Some(kept)
    }
}

// The relationship types `expand_cluster_relationship` expands (a plain
// comment: a doc comment would repeat in the tool list).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(inline)]
pub enum Expandable {
    Callers,
    Callees,
    TypeFamily,
}

impl Expandable {
    fn as_str(self) -> &'static str {
        match self {
            Expandable::Callers => "callers",
            Expandable::Callees => "callees",
            Expandable::TypeFamily => "typeFamily",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("the query is empty: give a name, a part of one, or a qualified name like User.save")]
    EmptyQuery,
    #[error(
        "the query is {0} characters long, over the limit of {MAX_QUERY_CHARS}: give a name, a part of one, or a qualified name like User.save"
    )]
    QueryTooLong(usize),
    #[error(
        "cluster {0:?} is unknown or expired (clusters are kept for a while after a search); run search_with_context again"
    )]
    UnknownCluster(String),
}

impl SearchError {
    pub fn code(&self) -> &'static str {
        match self {
            SearchError::EmptyQuery | SearchError::QueryTooLong(_) => "invalid_parameter",
            SearchError::UnknownCluster(_) => "cluster_not_found",
        }
    }
}

/// One expanded relationship of a kept cluster.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Expansion {
    pub cluster_id: String,
    pub relationship: &'static str,
    pub container: Container,
    pub tokens: usize,
}

/// Refuses an empty query, and one over [`MAX_QUERY_CHARS`] before
/// anything else looks at it.
pub fn check_query(query: &str) -> Result<(), SearchError> {
    // Four bytes a character at most: a short query is not counted.
    if query.len() > MAX_QUERY_CHARS {
        let chars = query.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(SearchError::QueryTooLong(chars));
        }
    }
    if query.trim().is_empty() {
        return Err(SearchError::EmptyQuery);
    }
    Ok(())
}

impl Service {
    /// The symbol index of the current state, built once per state (by the
    /// first search of that state) and kept for the next searches.
    fn symbol_index(&self) -> std::sync::Arc<SymbolIndex> {
        self.symbols
            .get_or_update(self.engine.changes(), |previous| {
                SymbolIndex::build(&self.engine, previous)
            })
    }

    /// The symbol index of the current state, if a search has built it.
    fn kept_symbol_index(&self) -> Option<std::sync::Arc<SymbolIndex>> {
        self.symbols.current(self.engine.changes())
    }

    /// Definitions matching `query`, best first, grouped into clusters.
    pub fn search(
        &self,
        query: &str,
        options: &SearchOptions,
    ) -> Result<SearchAnswer, SearchError> {
        let started = Instant::now();
        check_query(query)?;
        let parsed = Query::new(query);
        let index = self.symbol_index();
        let mut found = index.find(&parsed);
        let total_matches = found.len();
        // Rank: match quality first (ranking boosts never lift a worse
        // match over a better one), then the score: use across the project
        // (plus one, so unused definitions are boosted too) times the
        // ranking boosts; then nearness to the file in hand, kind, and the
        // shorter path.
        let boosts = Boosts::new(self, options.context_file.as_deref(), &options.accesses);
        let mut ranked: Vec<Ranked> = Vec::new();
        found.sort_by_key(|(quality, _)| *quality);
        for (quality, entry) in found.into_iter().take(RANKED) {
            let used = self.engine.usage_count(&entry.file, &entry.qualname);
            let near = options
                .context_file
                .as_deref()
                .map_or(0, |context| shared_dirs(context, &entry.file));
            let score = boosts.score(&entry.id(), &entry.file, (used + 1) as f64);
            ranked.push(Ranked {
                quality,
                score,
                used,
                near,
                entry,
            });
        }
        ranked.sort_by(|a, b| {
            a.quality
                .cmp(&b.quality)
                .then_with(|| b.score.total_cmp(&a.score))
                .then_with(|| b.near.cmp(&a.near))
                .then_with(|| kind_rank(a.entry.kind).cmp(&kind_rank(b.entry.kind)))
                .then_with(|| a.entry.file.len().cmp(&b.entry.file.len()))
                .then_with(|| a.entry.id().cmp(&b.entry.id()))
        });
        // Group the ranked seeds by container (class, else file), in rank order.
        let mut groups: Vec<(String, Vec<Found>)> = Vec::new();
        for Ranked {
            quality: (matched, _),
            used,
            entry,
            ..
        } in ranked
        {
            let key = container_key(entry);
            let open = groups.len() < options.max_clusters.clamp(1, 20);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, seeds)) if seeds.len() < SEEDS_PER_CLUSTER => {
                    seeds.push((matched, used, entry))
                }
                Some(_) => {}
                None if open => groups.push((key, vec![(matched, used, entry)])),
                None => {}
            }
        }
        let budget = self.answer_token_limit();
        // The query comes back in the answer, cut short if long: its
        // tokens are spent first.
        let echo = cap_tokens(query.trim(), ECHO_TOKENS.min(budget / 8));
        let mut clusters = Vec::new();
        let mut hints = Hints::default();
        let mut per_cluster = Vec::new();
        let echo_tokens = count_tokens(&echo);
        let mut spent = echo_tokens;
        let mut note = None;
        for (_, seeds) in groups {
            let kept = KeptCluster {
                seeds: seeds
                    .iter()
                    .map(|(_, _, e)| (e.file.to_string(), e.qualname.to_string()))
                    .collect(),
                depth: options.expansion_depth.clamp(1, super::calls::MAX_DEPTH),
                include_preview: options.include_preview,
                kept_at: Instant::now(),
            };
            let cluster = match seeds.as_slice() {
                [(matched, _, entry)] if options.include_preview => {
                    let cached = match self.hot_cluster(entry) {
                        hot::Lookup::Hit(cluster) => Some(*cluster),
                        hot::Lookup::Stale => Some(self.refresh_hot(entry)),
                        hot::Lookup::Absent => None,
                    };
                    match cached {
                        Some(mut cluster) => {
                            cluster.seeds[0].matched = *matched;
                            if kept.depth != hot::HOT_DEPTH {
                                self.cluster(&seeds, &kept, options)
                            } else {
                                only_asked(cluster, options.expand)
                            }
                        }
                        None => self.cluster(&seeds, &kept, options),
                    }
                }
                _ => self.cluster(&seeds, &kept, options),
            };
            let tokens = cluster.token_usage.get("total").copied().unwrap_or(0);
            if spent + tokens > budget && !clusters.is_empty() {
                note = Some(format!(
                    "{} clusters fit the {budget}-token answer budget; search with a narrower query or maxClusters for the rest",
                    clusters.len()
                ));
                break;
            }
            spent += tokens;
            let id = self.clusters.keep(kept);
            let mut cluster = cluster;
            cluster.id = id.clone();
            hints.add(&cluster);
            per_cluster.push(tokens);
            clusters.push(cluster);
        }
        Ok(SearchAnswer {
            query: echo,
            clusters,
            total_matches,
            search_time_ms: started.elapsed().as_secs_f64() * 1000.0,
            token_usage: TokenUsage {
                estimated: spent,
                query: echo_tokens,
                budget,
                per_cluster,
            },
            expansion_hints: hints,
            note,
        })
    }

    /// Loads one relationship of a cluster a search answered with.
    pub fn expand_cluster(
        &self,
        id: &str,
        relationship: Expandable,
    ) -> Result<Expansion, SearchError> {
        let kept = self
            .clusters
            .get(id)
            .ok_or_else(|| SearchError::UnknownCluster(id.to_string()))?;
        let (container, tokens) = self.related(&kept, relationship);
        Ok(Expansion {
            cluster_id: id.to_string(),
            relationship: relationship.as_str(),
            container,
            tokens,
        })
    }

    fn cluster(&self, seeds: &[Found], kept: &KeptCluster, options: &SearchOptions) -> Cluster {
        let mut usage = BTreeMap::new();
        let mut seed_spent = 0;
        let mut listed = Vec::new();
        for (matched, used, entry) in seeds {
            let preview = options.include_preview.then(|| {
                let text = self.full_preview(entry);
                cap_tokens(&text, FULL_TIER)
            });
            let seed = Seed {
                symbol: entry.id(),
                kind: entry.kind.as_str(),
                file: entry.file.to_string(),
                line: entry.line,
                matched: *matched,
                used_by: *used,
                preview,
            };
            let cost = count_tokens(&serde_json::to_string(&seed).unwrap_or_default());
            if seed_spent + cost > SEED_TOKENS && !listed.is_empty() {
                break;
            }
            seed_spent += cost;
            listed.push(seed);
        }
        usage.insert("seeds", seed_spent);
        let (colocated, colocated_spent) = Container::loaded(
            self.colocated(kept, options.include_preview),
            COLOCATED_TOKENS,
        );
        let (siblings, siblings_spent) = Container::loaded(
            self.siblings(kept, options.include_preview),
            SIBLINGS_TOKENS,
        );
        usage.insert("colocated", colocated_spent);
        usage.insert("siblings", siblings_spent);
        let mut load = |wanted: bool, relationship: Expandable, name: &'static str| {
            if !wanted {
                return Container::not_loaded();
            }
            let (container, spent) = self.related(kept, relationship);
            usage.insert(name, spent);
            container
        };
        let callers = load(options.expand.callers, Expandable::Callers, "callers");
        let callees = load(options.expand.callees, Expandable::Callees, "callees");
        let type_family = load(
            options.expand.type_family,
            Expandable::TypeFamily,
            "typeFamily",
        );
        let total: usize = usage.values().sum::<usize>() + 50;
        usage.insert("total", total);
        Cluster {
            id: String::new(),
            seeds: listed,
            related: RelatedSet {
                callers,
                callees,
                type_family,
                colocated,
                siblings,
            },
            token_usage: usage,
        }
    }

    /// An expensive container of a kept cluster, loaded now.
    fn related(&self, kept: &KeptCluster, relationship: Expandable) -> (Container, usize) {
        let budget = match relationship {
            Expandable::Callers => CALLERS_TOKENS,
            Expandable::Callees => CALLEES_TOKENS,
            Expandable::TypeFamily => TYPE_FAMILY_TOKENS,
        };
        let mut found = Vec::new();
        for (file, qualname) in &kept.seeds {
            if self.engine.facts(file).is_none() {
                let error = format!("{file} is no longer in the index; search again");
                return (Container::failed(error), 0);
            }
            let more = match relationship {
                Expandable::Callers | Expandable::Callees => {
                    self.call_neighbours(file, qualname, relationship, kept)
                }
                Expandable::TypeFamily => Ok(self.type_family(file, qualname, kept)),
            };
            match more {
                Ok(more) => found.extend(more),
                Err(error) => return (Container::failed(error), 0),
            }
        }
        let mut seen = std::collections::HashSet::new();
        found.retain(|r: &Related| seen.insert((r.symbol.clone(), r.relation)));
        Container::loaded(found, budget)
    }

    fn call_neighbours(
        &self,
        file: &str,
        qualname: &str,
        relationship: Expandable,
        kept: &KeptCluster,
    ) -> Result<Vec<Related>, String> {
        if qualname.is_empty() {
            return Ok(Vec::new());
        }
        let direction = match relationship {
            Expandable::Callers => Direction::Callers,
            _ => Direction::Callees,
        };
        let symbol = format!("{file}::{qualname}");
        let graph = self
            .call_graph(&symbol, direction, kept.depth, super::calls::MAX_LIMIT)
            .map_err(|e| e.to_string())?;
        Ok(graph
            .calls
            .iter()
            .map(|call| {
                let (symbol, relation) = match direction {
                    Direction::Callers => (call.caller.clone(), "called_by"),
                    Direction::Callees => (call.callee.clone(), "calls"),
                };
                let (target_file, target_qualname) =
                    symbol.split_once("::").unwrap_or((symbol.as_str(), ""));
                let definition = self.definition(target_file, target_qualname);
                let line = match direction {
                    Direction::Callers => call.line,
                    Direction::Callees => definition.map_or(0, |d| d.start_line),
                };
                Related {
                    kind: definition.map_or("function", |d| kind_name(d.kind)),
                    file: target_file.to_string(),
                    line,
                    relation,
                    preview: kept
                        .include_preview
                        .then(|| definition.map(signature_preview))
                        .flatten(),
                    symbol,
                }
            })
            .collect())
    }

    /// Bases (the method resolution order) and subclasses of a class; for a
    /// method, the methods of the same name it overrides and that override it.
    fn type_family(&self, file: &str, qualname: &str, kept: &KeptCluster) -> Vec<Related> {
        let (class, member) = match self.definition(file, qualname).map(|d| d.kind) {
            Some(DefinitionKind::Class) => (qualname, None),
            Some(DefinitionKind::Method) => match qualname.rsplit_once('.') {
                Some((class, member)) => (class, Some(member)),
                None => return Vec::new(),
            },
            _ => return Vec::new(),
        };
        let mut family = Vec::new();
        let mut add = |file: &str, class: &str, relation: &'static str| {
            let qualname = match member {
                Some(member) => format!("{class}.{member}"),
                None => class.to_string(),
            };
            if let Some(definition) = self.definition(file, &qualname) {
                family.push(Related {
                    symbol: format!("{file}::{qualname}"),
                    kind: kind_name(definition.kind),
                    file: file.to_string(),
                    line: definition.start_line,
                    relation,
                    preview: kept.include_preview.then(|| signature_preview(definition)),
                });
            }
        };
        let own = (file.to_string(), class.to_string());
        for (base_file, base) in self.engine.mro(file, class) {
            if (base_file.clone(), base.clone()) != own {
                add(
                    &base_file,
                    &base,
                    if member.is_some() {
                        "overrides"
                    } else {
                        "base"
                    },
                );
            }
        }
        for (sub_file, sub) in self.engine.subclasses(file, class) {
            add(
                &sub_file,
                &sub,
                if member.is_some() {
                    "overridden_by"
                } else {
                    "subclass"
                },
            );
        }
        family
    }

    /// The other top-level definitions of the seeds' files.
    fn colocated(&self, kept: &KeptCluster, include_preview: bool) -> Vec<Related> {
        let mut found = Vec::new();
        for (file, qualname) in &kept.seeds {
            let top = qualname.split('.').next().unwrap_or_default();
            let Some(facts) = self.engine.facts(file) else {
                continue;
            };
            for d in facts
                .definitions
                .iter()
                .filter(|d| !d.qualname.contains('.'))
            {
                let seed = kept
                    .seeds
                    .iter()
                    .any(|(f, q)| f == file && *q == d.qualname);
                if d.qualname != top && !seed {
                    found.push(minimal(file, d, "same_file", include_preview));
                }
            }
        }
        dedup(found)
    }

    /// The other members of the seeds' classes.
    fn siblings(&self, kept: &KeptCluster, include_preview: bool) -> Vec<Related> {
        let mut found = Vec::new();
        for (file, qualname) in &kept.seeds {
            let Some((class, _)) = qualname.rsplit_once('.') else {
                continue;
            };
            let Some(facts) = self.engine.facts(file) else {
                continue;
            };
            for d in &facts.definitions {
                let member_of_class = d
                    .qualname
                    .strip_prefix(class)
                    .and_then(|rest| rest.strip_prefix('.'))
                    .is_some_and(|rest| !rest.contains('.'));
                let seed = kept
                    .seeds
                    .iter()
                    .any(|(f, q)| f == file && *q == d.qualname);
                if member_of_class && !seed {
                    found.push(minimal(file, d, "same_class", include_preview));
                }
            }
        }
        dedup(found)
    }

    fn definition(&self, file: &str, qualname: &str) -> Option<&Definition> {
        self.engine
            .facts(file)?
            .definitions
            .iter()
            .rev()
            .find(|d| d.qualname == qualname)
    }

    /// The seed's signature, docstring (three lines at most) and location.
    fn full_preview(&self, entry: &Entry) -> String {
        let Some(definition) = self.definition(&entry.file, &entry.qualname) else {
            return format!("module {}  # {}", entry.dotted, entry.file);
        };
        let mut text = String::new();
        for decorator in &definition.decorators {
            text.push_str(&format!("@{decorator}\n"));
        }
        text.push_str(&format!(
            "{}  # {}:{}-{}",
            definition.signature, entry.file, definition.start_line, definition.end_line
        ));
        if let Some(doc) = &definition.docstring {
            let doc: Vec<&str> = doc.lines().take(3).collect();
            text.push_str(&format!("\n    \"\"\"{}\"\"\"", doc.join("\n    ")));
        }
        text
    }
}

/// A hot spot's cluster (every relationship loaded) with what the search
/// did not ask for set back to not loaded, as a computed one would be.
fn only_asked(mut cluster: Cluster, expand: Expand) -> Cluster {
    let related = &mut cluster.related;
    for (wanted, container, name) in [
        (expand.callers, &mut related.callers, "callers"),
        (expand.callees, &mut related.callees, "callees"),
        (expand.type_family, &mut related.type_family, "typeFamily"),
    ] {
        if !wanted {
            *container = Container::not_loaded();
            if let Some(spent) = cluster.token_usage.remove(name)
                && let Some(total) = cluster.token_usage.get_mut("total")
            {
                *total -= spent;
            }
        }
    }
    cluster
}

fn minimal(file: &str, d: &Definition, relation: &'static str, include_preview: bool) -> Related {
    Related {
        symbol: format!("{file}::{}", d.qualname),
        kind: kind_name(d.kind),
        file: file.to_string(),
        line: d.start_line,
        relation,
        preview: include_preview.then(|| {
            cap_tokens(
                &format!("{} ({})", d.qualname, kind_name(d.kind)),
                MINIMAL_TIER,
            )
        }),
    }
}

fn signature_preview(d: &Definition) -> String {
    cap_tokens(&d.signature, SIGNATURE_TIER)
}

fn dedup(mut found: Vec<Related>) -> Vec<Related> {
    let mut seen = std::collections::HashSet::new();
    found.retain(|r| seen.insert(r.symbol.clone()));
    found
}

/// `text` cut to at most `limit` tokens, with `...` when cut.
fn cap_tokens(text: &str, limit: usize) -> String {
    let kept = super::text::prefix_within(text, limit);
    if kept.len() == text.len() {
        return text.to_string();
    }
    // `...` is one token.
    format!(
        "{}...",
        super::text::prefix_within(kept, limit.saturating_sub(1))
    )
}

fn kind_name(kind: DefinitionKind) -> &'static str {
    match kind {
        DefinitionKind::Class => "class",
        DefinitionKind::Function | DefinitionKind::AsyncFunction => "function",
        DefinitionKind::Method => "method",
        DefinitionKind::Variable => "variable",
    }
}

fn kind_rank(kind: Kind) -> u8 {
    match kind {
        Kind::Class => 0,
        Kind::Function => 1,
        Kind::Method => 2,
        Kind::Module => 3,
        Kind::Variable => 4,
    }
}

/// The class a seed belongs to (or is), else its file: seeds that share
/// it form one cluster.
fn container_key(entry: &Entry) -> String {
    let class = match entry.kind {
        Kind::Method => entry.qualname.rsplit_once('.').map(|(class, _)| class),
        Kind::Class => Some(entry.qualname.as_str()),
        _ => None,
    };
    match class {
        Some(class) => format!("{}::{class}", entry.file),
        None => entry.file.to_string(),
    }
}

/// How many leading directories two paths share.
fn shared_dirs(a: &str, b: &str) -> usize {
    a.split('/')
        .zip(b.split('/'))
        .take_while(|(x, y)| x == y)
        .count()
}

impl SearchAnswer {
    /// The readable form: per cluster its seeds with previews, then each
    /// related container in a line (names, or its state).
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        if self.clusters.is_empty() {
            let _ = writeln!(out, "Nothing matches `{}`.", self.query);
        }
        for cluster in &self.clusters {
            let _ = writeln!(out, "[{}]", cluster.id);
            for seed in &cluster.seeds {
                let _ = writeln!(
                    out,
                    "{} ({}, {:?} match, used by {} files)",
                    seed.symbol, seed.kind, seed.matched, seed.used_by
                );
                if let Some(preview) = &seed.preview {
                    for line in preview.lines() {
                        let _ = writeln!(out, "    {line}");
                    }
                }
            }
            let related = &cluster.related;
            for (name, container) in [
                ("siblings", &related.siblings),
                ("colocated", &related.colocated),
                ("callers", &related.callers),
                ("callees", &related.callees),
                ("type family", &related.type_family),
            ] {
                let names: Vec<String> = container
                    .data
                    .iter()
                    .map(|r| {
                        format!(
                            "{}:{} {}",
                            r.file,
                            r.line,
                            r.symbol.rsplit("::").next().unwrap_or_default()
                        )
                    })
                    .collect();
                let line = match container.state {
                    State::NotLoaded => "not loaded (--expand)".to_string(),
                    State::Failed => {
                        format!("failed: {}", container.error.clone().unwrap_or_default())
                    }
                    State::Truncated => format!(
                        "{} (of {})",
                        names.join(", "),
                        container.total_count.unwrap_or(names.len())
                    ),
                    _ if names.is_empty() => "none".to_string(),
                    _ => names.join(", "),
                };
                let _ = writeln!(out, "  {name}: {line}");
            }
        }
        let _ = writeln!(
            out,
            "{} matches; {} clusters shown",
            self.total_matches,
            self.clusters.len()
        );
        if let Some(note) = &self.note {
            let _ = writeln!(out, "{note}");
        }
        out
    }
}

impl Hints {
    fn add(&mut self, cluster: &Cluster) {
        let related = &cluster.related;
        for (name, container) in [
            ("callers", &related.callers),
            ("callees", &related.callees),
            ("typeFamily", &related.type_family),
            ("colocated", &related.colocated),
            ("siblings", &related.siblings),
        ] {
            if let Some(total) = container.total_count {
                self.truncated_relationships.push(Truncated {
                    cluster_id: cluster.id.clone(),
                    relationship: name,
                    available_count: total,
                });
            }
        }
        let Some(seed) = cluster.seeds.first() else {
            return;
        };
        if related.callers.state == State::NotLoaded && seed.kind != "module" {
            self.recommended_expansions.push(format!(
                "expand callers of cluster {} to see who uses {} before changing it",
                cluster.id, seed.symbol
            ));
        }
        if related.type_family.state == State::NotLoaded && seed.kind == "class" {
            self.recommended_expansions.push(format!(
                "expand typeFamily of cluster {} for the bases and subclasses of {}",
                cluster.id, seed.symbol
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(expiry_age: Duration) -> KeptCluster {
        KeptCluster {
            seeds: vec![("a.py".into(), "f".into())],
            depth: 1,
            include_preview: false,
            kept_at: Instant::now()
                .checked_sub(expiry_age)
                .unwrap_or_else(Instant::now),
        }
    }

    #[test]
    fn kept_clusters_expire() {
        let cache = ClusterCache::new(Duration::from_secs(60));
        let fresh = cache.keep(kept(Duration::ZERO));
        let old = cache.keep(kept(Duration::from_secs(120)));
        assert!(cache.get(&fresh).is_some());
        assert!(cache.get(&old).is_none());
        assert!(cache.get("c0").is_none());
    }

    #[test]
    fn previews_are_capped_in_tokens() {
        let long = "word ".repeat(500);
        let cut = cap_tokens(&long, 25);
        assert!(count_tokens(&cut) <= 25 && cut.ends_with("..."));
        assert_eq!(cap_tokens("short", 25), "short");
    }
}
