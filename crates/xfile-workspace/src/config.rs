//! `.cross_file_context_links.yml` at the project root. Every
//! key is checked on its own: an unknown key or a bad value gives a notice
//! and the default, never an error.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_yaml_ng::Value;

pub const CONFIG_FILE: &str = ".cross_file_context_links.yml";

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Config {
    pub cache_expiry_minutes: u64,
    pub cache_size_limit_kb: u64,
    pub context_token_limit: u64,
    /// How many hops of types `read_with_context` follows from the used
    /// definitions' signatures (1: only what the file uses).
    pub import_depth: u64,
    /// Tokens (cl100k_base) one tool answer's page may take.
    pub answer_token_limit: u64,
    pub enable_context_injection: bool,
    pub warn_on_wildcards: bool,
    /// Files (root-relative paths) and globs whose warnings are suppressed.
    pub suppress_warnings: Vec<String>,
    /// Per file, the warning types suppressed there (the most specific
    /// suppression).
    pub file_specific_suppressions: BTreeMap<String, Vec<String>>,
    pub suppress_dynamic_import_warnings: bool,
    pub suppress_dynamic_dispatch_warnings: bool,
    pub suppress_monkey_patching_warnings: bool,
    pub suppress_exec_eval_warnings: bool,
    pub suppress_decorator_warnings: bool,
    pub suppress_metaclass_warnings: bool,
    pub suppress_circular_import_warnings: bool,
    /// Extra exclusions beyond `.gitignore`, as globs on root-relative paths.
    pub ignore_patterns: Vec<String>,
    pub function_usage_warning_threshold: u64,
    pub metrics_anonymize_paths: bool,
    pub enable_injection_logging: bool,
    pub enable_warning_logging: bool,
    /// Extra module search roots, root-relative.
    pub extra_search_paths: Vec<String>,
    /// Architecture layers, top to bottom (`rules/layers.dl`).
    pub layers: Vec<LayerSpec>,
    /// MCP tools switched on beyond the default set (the operations tools
    /// are off by default), or `all`.
    pub enabled_tools: Vec<String>,
    /// MCP tools switched off.
    pub excluded_tools: Vec<String>,
    /// Boosts of search and `read_with_context` ranking. Left out of the
    /// serialized form: that is the warm-start cache's key, and ranking
    /// changes no indexed fact.
    #[serde(skip)]
    pub ranking: Ranking,
    /// Seconds a shared service (`xfile serve` without `--standalone`)
    /// stays up with no client connected. Left out of the serialized form
    /// for the same reason as `ranking`.
    #[serde(skip)]
    pub service_idle_seconds: u64,
    /// Tokens `xfile hook` may add to an agent's turn after a Read. Left
    /// out of the serialized form for the same reason as `ranking`.
    #[serde(skip)]
    pub hook_token_limit: u64,
}

/// The longest idle time a shared service may be given: a week.
pub const MAX_SERVICE_IDLE_SECONDS: u64 = 7 * 24 * 3600;

/// `ranking:` — how much each boost counts (0 switches it off; 1, the
/// default, gives the boosts their full size), or all of them off.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranking {
    pub enabled: bool,
    pub recency_weight: f64,
    pub module_weight: f64,
    pub frequency_weight: f64,
}

impl Default for Ranking {
    fn default() -> Self {
        Ranking {
            enabled: true,
            recency_weight: 1.0,
            module_weight: 1.0,
            frequency_weight: 1.0,
        }
    }
}

/// One entry of `layers`: `[name, glob, ...]`, globs on root-relative paths.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LayerSpec {
    pub name: String,
    pub globs: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            cache_expiry_minutes: 10,
            cache_size_limit_kb: 50,
            context_token_limit: 550,
            import_depth: 1,
            answer_token_limit: 8000,
            enable_context_injection: true,
            warn_on_wildcards: false,
            suppress_warnings: Vec::new(),
            file_specific_suppressions: BTreeMap::new(),
            suppress_dynamic_import_warnings: false,
            suppress_dynamic_dispatch_warnings: false,
            suppress_monkey_patching_warnings: false,
            suppress_exec_eval_warnings: false,
            suppress_decorator_warnings: false,
            suppress_metaclass_warnings: false,
            suppress_circular_import_warnings: false,
            ignore_patterns: Vec::new(),
            function_usage_warning_threshold: 3,
            metrics_anonymize_paths: false,
            enable_injection_logging: true,
            enable_warning_logging: true,
            extra_search_paths: Vec::new(),
            layers: Vec::new(),
            enabled_tools: Vec::new(),
            excluded_tools: Vec::new(),
            ranking: Ranking::default(),
            service_idle_seconds: 300,
            // The hook's text arrives unasked on every Read, so it must stay
            // a small share of the agent's turn; 1,500 tokens holds the
            // default context (`context_token_limit`, 550) with room for a
            // raised one, and is the budget the context measurement used.
            hook_token_limit: 1_500,
        }
    }
}

impl Config {
    /// Reads the root's configuration file if there is one. Returns the
    /// configuration and one notice per problem found.
    pub fn load(root: &Path) -> (Config, Vec<String>) {
        match super::read::read_settings(root, CONFIG_FILE) {
            Ok(Some(text)) => Config::parse(&text),
            Ok(None) => (Config::default(), Vec::new()),
            Err(why) => (Config::default(), vec![format!("{why}; using defaults")]),
        }
    }

    pub fn parse(text: &str) -> (Config, Vec<String>) {
        let mut config = Config::default();
        let mut notices = Vec::new();
        let mapping = match serde_yaml_ng::from_str::<Value>(text) {
            Ok(Value::Mapping(mapping)) => mapping,
            Ok(Value::Null) => return (config, notices),
            Ok(_) => {
                notices.push(format!(
                    "{CONFIG_FILE}: expected a mapping of keys to values; using defaults"
                ));
                return (config, notices);
            }
            Err(error) => {
                notices.push(format!(
                    "{CONFIG_FILE}: not valid YAML ({error}); using defaults"
                ));
                return (config, notices);
            }
        };
        for (key, value) in &mapping {
            let Some(key) = key.as_str() else {
                notices.push(format!("{CONFIG_FILE}: ignoring a non-string key"));
                continue;
            };
            let mut check = Checker {
                key,
                value,
                notices: &mut notices,
            };
            match key {
                "cache_expiry_minutes" => {
                    check.positive(&mut config.cache_expiry_minutes, u64::MAX)
                }
                "cache_size_limit_kb" => check.positive(&mut config.cache_size_limit_kb, u64::MAX),
                "context_token_limit" => check.positive(&mut config.context_token_limit, 9_999),
                "import_depth" => check.positive(&mut config.import_depth, 3),
                "answer_token_limit" => check.positive(&mut config.answer_token_limit, 20_000),
                "function_usage_warning_threshold" => {
                    check.positive(&mut config.function_usage_warning_threshold, u64::MAX)
                }
                "enable_context_injection" => check.flag(&mut config.enable_context_injection),
                "warn_on_wildcards" => check.flag(&mut config.warn_on_wildcards),
                "suppress_dynamic_import_warnings" => {
                    check.flag(&mut config.suppress_dynamic_import_warnings)
                }
                "suppress_dynamic_dispatch_warnings" => {
                    check.flag(&mut config.suppress_dynamic_dispatch_warnings)
                }
                "suppress_monkey_patching_warnings" => {
                    check.flag(&mut config.suppress_monkey_patching_warnings)
                }
                "suppress_exec_eval_warnings" => {
                    check.flag(&mut config.suppress_exec_eval_warnings)
                }
                "suppress_decorator_warnings" => {
                    check.flag(&mut config.suppress_decorator_warnings)
                }
                "suppress_metaclass_warnings" => {
                    check.flag(&mut config.suppress_metaclass_warnings)
                }
                "suppress_circular_import_warnings" => {
                    check.flag(&mut config.suppress_circular_import_warnings)
                }
                "metrics_anonymize_paths" => check.flag(&mut config.metrics_anonymize_paths),
                "enable_injection_logging" => check.flag(&mut config.enable_injection_logging),
                "enable_warning_logging" => check.flag(&mut config.enable_warning_logging),
                "suppress_warnings" => check.strings(&mut config.suppress_warnings),
                "file_specific_suppressions" => {
                    check.lists_by_key(&mut config.file_specific_suppressions)
                }
                "ignore_patterns" => check.strings(&mut config.ignore_patterns),
                "extra_search_paths" => check.strings(&mut config.extra_search_paths),
                "layers" => check.layers(&mut config.layers),
                "enabled_tools" => check.strings(&mut config.enabled_tools),
                "excluded_tools" => check.strings(&mut config.excluded_tools),
                "ranking" => check.ranking(&mut config.ranking),
                "hook_token_limit" => check.positive(&mut config.hook_token_limit, 9_999),
                "service_idle_seconds" => {
                    check.positive(&mut config.service_idle_seconds, MAX_SERVICE_IDLE_SECONDS)
                }
                _ => check
                    .notices
                    .push(format!("{CONFIG_FILE}: unknown key `{key}` ignored")),
            }
        }
        (config, notices)
    }
}

struct Checker<'a> {
    key: &'a str,
    value: &'a Value,
    notices: &'a mut Vec<String>,
}

impl Checker<'_> {
    fn reject(&mut self, expected: &str) {
        self.notices.push(format!(
            "{CONFIG_FILE}: `{}` must be {expected}; using the default",
            self.key
        ));
    }

    fn positive(&mut self, slot: &mut u64, max: u64) {
        match self.value.as_u64() {
            Some(n) if n > 0 && n <= max => *slot = n,
            _ if max == u64::MAX => self.reject("a whole number above 0"),
            _ => self.reject(&format!("a whole number from 1 to {max}")),
        }
    }

    fn flag(&mut self, slot: &mut bool) {
        match self.value.as_bool() {
            Some(b) => *slot = b,
            None => self.reject("true or false"),
        }
    }

    fn strings(&mut self, slot: &mut Vec<String>) {
        match string_list(self.value) {
            Some(strings) => *slot = strings,
            None => self.reject("a list of strings"),
        }
    }

    fn lists_by_key(&mut self, slot: &mut BTreeMap<String, Vec<String>>) {
        let lists = self.value.as_mapping().and_then(|mapping| {
            mapping
                .iter()
                .map(|(key, value)| Some((key.as_str()?.to_string(), string_list(value)?)))
                .collect::<Option<BTreeMap<_, _>>>()
        });
        match lists {
            Some(lists) => *slot = lists,
            None => self.reject("a mapping of file paths to lists of warning types"),
        }
    }
}

impl Checker<'_> {
    /// `ranking: {enabled, recency_weight, module_weight, frequency_weight}`,
    /// each sub-key checked on its own.
    fn ranking(&mut self, slot: &mut Ranking) {
        let Some(mapping) = self.value.as_mapping() else {
            return self.reject(
                "a mapping of enabled, recency_weight, module_weight and frequency_weight",
            );
        };
        for (key, value) in mapping {
            let name = key.as_str().unwrap_or_default();
            let weight = match name {
                "recency_weight" => Some(&mut slot.recency_weight),
                "module_weight" => Some(&mut slot.module_weight),
                "frequency_weight" => Some(&mut slot.frequency_weight),
                _ => None,
            };
            let problem = match (name, weight) {
                (_, Some(weight)) => match value.as_f64() {
                    Some(w) if w.is_finite() && (0.0..=MAX_WEIGHT).contains(&w) => {
                        *weight = w;
                        None
                    }
                    _ => Some(format!("a number from 0 to {MAX_WEIGHT}")),
                },
                ("enabled", None) => match value.as_bool() {
                    Some(on) => {
                        slot.enabled = on;
                        None
                    }
                    None => Some("true or false".to_string()),
                },
                _ => {
                    self.notices.push(format!(
                        "{CONFIG_FILE}: unknown key `ranking.{name}` ignored"
                    ));
                    None
                }
            };
            if let Some(expected) = problem {
                self.notices.push(format!(
                    "{CONFIG_FILE}: `ranking.{name}` must be {expected}; using the default"
                ));
            }
        }
    }
}

/// A weight past this would let one boost swamp what was matched.
const MAX_WEIGHT: f64 = 10.0;

fn string_list(value: &Value) -> Option<Vec<String>> {
    value.as_sequence().and_then(|items| {
        items
            .iter()
            .map(|item| item.as_str().map(str::to_string))
            .collect()
    })
}

impl Checker<'_> {
    /// `layers: [[name, glob, ...], ...]`. Each entry is checked on its own:
    /// a bad one gives a notice and is left out, the rest keep their order.
    fn layers(&mut self, slot: &mut Vec<LayerSpec>) {
        let Some(entries) = self.value.as_sequence() else {
            return self.reject("a list of [name, glob, ...] entries, top layer first");
        };
        let mut layers: Vec<LayerSpec> = Vec::new();
        for (index, entry) in entries.iter().enumerate() {
            let strings = entry.as_sequence().and_then(|items| {
                items
                    .iter()
                    .map(|item| item.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
            });
            let problem = match strings.as_deref() {
                Some([name, globs @ ..]) if !name.is_empty() && !globs.is_empty() => {
                    if layers.iter().any(|l| l.name == *name) {
                        Some(format!("repeats layer name `{name}`"))
                    } else {
                        globs.iter().find_map(|glob| {
                            globset::Glob::new(glob)
                                .err()
                                .map(|e| format!("has an invalid glob `{glob}` ({e})"))
                        })
                    }
                }
                _ => Some("must be a list of a layer name and at least one glob".to_string()),
            };
            match (problem, strings) {
                (None, Some(mut strings)) => {
                    let name = strings.remove(0);
                    layers.push(LayerSpec {
                        name,
                        globs: strings,
                    });
                }
                (problem, _) => self.notices.push(format!(
                    "{CONFIG_FILE}: `layers` entry {} {}; that entry is ignored",
                    index + 1,
                    problem.unwrap_or_default()
                )),
            }
        }
        *slot = layers;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_values_and_unknown_keys_fall_back_to_defaults() {
        let (config, notices) = Config::parse(
            "context_token_limit: -3\nwarn_on_wildcards: yes-please\nbogus: 1\nextra_search_paths: [lib]\n",
        );
        assert_eq!(config.context_token_limit, 550);
        assert!(!config.warn_on_wildcards);
        assert_eq!(config.extra_search_paths, vec!["lib".to_string()]);
        assert_eq!(notices.len(), 3, "{notices:?}");
    }

    #[test]
    fn the_service_idle_time_is_bounded_and_left_out_of_the_cache_key() {
        let (config, notices) = Config::parse("service_idle_seconds: 30\n");
        assert_eq!((config.service_idle_seconds, notices.len()), (30, 0));
        let (config, notices) = Config::parse("service_idle_seconds: 0\n");
        assert_eq!(config.service_idle_seconds, 300);
        assert!(notices[0].contains("from 1 to 604800"), "{notices:?}");
        let key = |c: &Config| serde_yaml_ng::to_string(c).unwrap_or_default();
        assert_eq!(key(&config), key(&Config::default()));
        assert!(!key(&config).contains("service_idle"));
    }

    #[test]
    fn ranking_weights_are_checked_one_by_one() {
        let (config, notices) = Config::parse(
            "ranking:\n  recency_weight: 0\n  module_weight: 2.5\n  frequency_weight: -1\n  enabled: false\n  speed: 3\n",
        );
        let ranking = &config.ranking;
        assert_eq!(
            (
                ranking.enabled,
                ranking.recency_weight,
                ranking.module_weight
            ),
            (false, 0.0, 2.5)
        );
        assert_eq!(ranking.frequency_weight, 1.0);
        assert_eq!(notices.len(), 2, "{notices:?}");
        assert!(notices[0].contains("`ranking.frequency_weight` must be a number from 0 to 10"));
        assert!(notices[1].contains("unknown key `ranking.speed`"));
        let (config, notices) = Config::parse("ranking: off\n");
        assert_eq!(config.ranking, Ranking::default());
        assert_eq!(notices.len(), 1, "{notices:?}");
    }

    #[test]
    fn layers_keep_valid_entries_in_order_and_report_bad_ones() {
        let (config, notices) = Config::parse(
            "layers:\n  - [ui, \"app/ui/**\"]\n  - [domain]\n  - [infra, \"app/[\"]\n  - [ui, \"x/**\"]\n  - 7\n  - [core, \"app/core/**\", \"app/models.py\"]\n",
        );
        assert_eq!(
            config.layers,
            vec![
                LayerSpec {
                    name: "ui".into(),
                    globs: vec!["app/ui/**".into()]
                },
                LayerSpec {
                    name: "core".into(),
                    globs: vec!["app/core/**".into(), "app/models.py".into()]
                },
            ]
        );
        assert_eq!(notices.len(), 4, "{notices:?}");
        assert!(
            notices[0]
                .contains("`layers` entry 2 must be a list of a layer name and at least one glob")
        );
        assert!(notices[1].contains("`layers` entry 3 has an invalid glob `app/[`"));
        assert!(notices[2].contains("`layers` entry 4 repeats layer name `ui`"));
        let (config, notices) = Config::parse("layers: ui\n");
        assert!(config.layers.is_empty());
        assert_eq!(notices.len(), 1, "{notices:?}");
    }
}
