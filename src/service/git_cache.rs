//! What the service keeps of the project's git repository between
//! answers: the repository handle (opened once), blames (per file content
//! and HEAD), the base versions' definitions `impact` compares with (per
//! blob), and when each file last changed in a commit (per HEAD), for the
//! recency boost of ranking.

use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::git::{BlameCache, ChangeTimes, GitError, ObjectId, Repo, SharedRepo, WalkBounds};
use crate::python::facts::Definition;

/// Bounds of the history walk behind the recency boost: changes older
/// than a week rank as old anyway, and the walk must stay short because an
/// answer waits for it (once per HEAD).
const RECENCY_WINDOW: Duration = Duration::from_secs(7 * 86_400);
const RECENCY_COMMITS: usize = 2_000;
const RECENCY_DEADLINE: Duration = Duration::from_millis(100);
/// Base versions of files whose definitions are kept.
const KEPT_BASES: usize = 256;

#[derive(Default)]
pub(crate) struct GitCache {
    repo: Mutex<Option<Arc<SharedRepo>>>,
    pub blames: BlameCache,
    /// HEAD and what changed when, as of that HEAD.
    recency: Mutex<Option<(ObjectId, Arc<ChangeTimes>)>>,
    bases: Mutex<Option<lru::LruCache<ObjectId, Arc<Vec<Definition>>>>>,
}

impl GitCache {
    /// The repository holding `root`, opened on first use. Not finding one
    /// is not remembered: `git init` may come later.
    pub fn repo(&self, root: &Path) -> Result<Repo, GitError> {
        let mut slot = self.repo.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(shared) = &*slot {
            return Ok(shared.local());
        }
        let shared = Arc::new(Repo::open(root)?.share());
        let repo = shared.local();
        *slot = Some(shared);
        Ok(repo)
    }

    /// When each file last changed in a commit, as far as a bounded walk
    /// from the current HEAD saw; computed once per HEAD. `None` without a
    /// repository or commits.
    pub fn change_times(&self, root: &Path) -> Option<Arc<ChangeTimes>> {
        let repo = self.repo(root).ok()?;
        let head = repo.head_id()?;
        // Held across the walk, so that answers arriving meanwhile wait
        // for this one walk instead of each starting their own.
        let mut slot = self.recency.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, times)) = &*slot
            && *at == head
        {
            return Some(times.clone());
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let bounds = WalkBounds {
            since: i64::try_from(now.saturating_sub(RECENCY_WINDOW.as_secs())).unwrap_or(0),
            max_commits: RECENCY_COMMITS,
            deadline: RECENCY_DEADLINE,
        };
        let times = match repo.change_times(&bounds) {
            Ok(times) => times,
            Err(error) => {
                tracing::debug!("no commit times for ranking: {error}");
                ChangeTimes::default()
            }
        };
        if !times.complete {
            tracing::debug!(
                "ranking: the history walk stopped at its bound; {} files have commit times",
                times.times.len()
            );
        }
        let times = Arc::new(times);
        *slot = Some((head, times.clone()));
        Some(times)
    }

    /// The definitions of the blob `id`, parsed once.
    pub fn base_definitions(
        &self,
        id: ObjectId,
        parse: impl FnOnce() -> Result<Vec<Definition>, GitError>,
    ) -> Result<Arc<Vec<Definition>>, GitError> {
        let cached = {
            let mut slot = self.bases.lock().unwrap_or_else(|e| e.into_inner());
            slot.get_or_insert_with(|| {
                lru::LruCache::new(NonZeroUsize::new(KEPT_BASES).unwrap_or(NonZeroUsize::MIN))
            })
            .get(&id)
            .cloned()
        };
        if let Some(found) = cached {
            return Ok(found);
        }
        // Parsed outside the lock: other answers need not wait for it.
        let parsed = Arc::new(parse()?);
        let mut slot = self.bases.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cache) = slot.as_mut() {
            cache.put(id, parsed.clone());
        }
        Ok(parsed)
    }
}
