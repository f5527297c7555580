//! Ranking boosts, shared by search and `read_with_context`: a result's
//! base score is multiplied by
//!
//! - recency: its file changed in the last day (1.5) or week (1.2), by
//!   its last commit or by an edit the service saw (the watcher, or the
//!   freshness check before an answer);
//! - module: its file is in the same package (directory) as the file in
//!   hand (1.3);
//! - frequency: the session read its file often, `1 + reads / 100`, at
//!   most 1.5.
//!
//! The configuration's `ranking` weights scale each boost (`1 + weight ×
//! (boost − 1)`: 0 switches it off) or switch them all off. Each scored
//! result is logged at debug level (`XFILE_LOG=xfile::ranking=debug`).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::Service;
use xfile_git::ChangeTimes;
use xfile_workspace::config::Ranking;

const DAY: i64 = 86_400;
const RECENT_DAY: f64 = 1.5;
const RECENT_WEEK: f64 = 1.2;
const SAME_MODULE: f64 = 1.3;
const FREQUENCY_CAP: f64 = 1.5;

/// What the adapter knows of the session: how often it read each file
/// (root-relative).
pub type Accesses = BTreeMap<String, u32>;

/// The boosts of one result, each weighted already.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Boost {
    pub recency: f64,
    pub module: f64,
    pub frequency: f64,
}

impl Boost {
    pub const NONE: Boost = Boost {
        recency: 1.0,
        module: 1.0,
        frequency: 1.0,
    };

    pub fn product(self) -> f64 {
        self.recency * self.module * self.frequency
    }
}

/// Scores results for one answer.
pub struct Boosts<'a> {
    ranking: Ranking,
    now: i64,
    /// Last commit times, when recency counts and there is a repository.
    commits: Option<Arc<ChangeTimes>>,
    edits: &'a BTreeMap<String, SystemTime>,
    accesses: &'a Accesses,
    /// The directory of the file in hand ("" at the root).
    module: Option<&'a str>,
    /// Per file, its boost (results share files).
    memo: RefCell<HashMap<String, Boost>>,
}

/// Seconds since the epoch.
fn seconds(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn directory(file: &str) -> &str {
    file.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// A boost scaled by its weight: 0 gives 1, 1 the boost itself.
fn weighted(boost: f64, weight: f64) -> f64 {
    1.0 + weight * (boost - 1.0)
}

impl<'a> Boosts<'a> {
    /// The boosts of `service`'s project for an answer about
    /// `context_file` (if any) in a session that read `accesses`.
    pub fn new(
        service: &'a Service,
        context_file: Option<&'a str>,
        accesses: &'a Accesses,
    ) -> Boosts<'a> {
        let ranking = service.config().ranking.clone();
        let commits = (ranking.enabled && ranking.recency_weight > 0.0)
            .then(|| service.git.change_times(service.root()))
            .flatten();
        Boosts {
            ranking,
            now: seconds(SystemTime::now()),
            commits,
            edits: &service.edited,
            accesses,
            module: context_file.map(directory),
            memo: RefCell::new(HashMap::new()),
        }
    }

    /// The boost of a result in `file`.
    pub fn of(&self, file: &str) -> Boost {
        if !self.ranking.enabled {
            return Boost::NONE;
        }
        if let Some(found) = self.memo.borrow().get(file) {
            return *found;
        }
        let boost = Boost {
            recency: weighted(self.recency(file), self.ranking.recency_weight),
            module: weighted(
                match self.module {
                    Some(dir) if dir == directory(file) => SAME_MODULE,
                    _ => 1.0,
                },
                self.ranking.module_weight,
            ),
            frequency: weighted(
                (1.0 + f64::from(self.accesses.get(file).copied().unwrap_or(0)) / 100.0)
                    .min(FREQUENCY_CAP),
                self.ranking.frequency_weight,
            ),
        };
        self.memo.borrow_mut().insert(file.to_string(), boost);
        boost
    }

    fn recency(&self, file: &str) -> f64 {
        let committed = self
            .commits
            .as_ref()
            .and_then(|c| c.times.get(file).copied());
        let edited = self.edits.get(file).copied().map(seconds);
        let Some(last) = committed.max(edited) else {
            return 1.0;
        };
        // A time ahead of the clock (skew) counts as now.
        match self.now.saturating_sub(last) {
            age if age < DAY => RECENT_DAY,
            age if age < 7 * DAY => RECENT_WEEK,
            _ => 1.0,
        }
    }

    /// `base` boosted for a result `what` in `file`; logged at debug level.
    pub fn score(&self, what: &str, file: &str, base: f64) -> f64 {
        let boost = self.of(file);
        let score = base * boost.product();
        tracing::debug!(
            target: "xfile::ranking",
            "{what}: base {base} × recency {} × module {} × frequency {} = {score}",
            boost.recency,
            boost.module,
            boost.frequency
        );
        score
    }
}
