//! What the service keeps of the project's git repository between
//! answers: the repository handle (opened once), blames (per file content
//! and HEAD), the base versions' definitions `impact` compares with (per
//! blob), and when each file last changed in a commit (per HEAD), for the
//! recency boost of ranking. Blames of the files changed last are
//! computed ahead, once per HEAD, off the request path (`warm_blames`).

use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::blame_store::DiskBlames;
use super::history::{INDEX_BOUNDS, kept};
use xfile_git::{BlameCache, ChangeTimes, GitError, ObjectId, Repo, SharedRepo, WalkBounds};
use xfile_python::facts::Definition;

/// Bounds of the history walk behind the recency boost: changes older
/// than a week rank as old anyway, and the walk must stay short because an
/// answer waits for it (once per HEAD).
const RECENCY_WINDOW: Duration = Duration::from_secs(7 * 86_400);
const RECENCY_COMMITS: usize = 2_000;
const RECENCY_DEADLINE: Duration = Duration::from_millis(100);
/// Base versions of files whose definitions are kept.
const KEPT_BASES: usize = 256;
/// Blames computed ahead: the files changed by the newest commits are the
/// ones an agent working on the project asks about first. A first blame
/// costs about as much as `git blame` (a walk of the file's whole
/// history), too slow to wait for; ahead of time it costs nothing to the
/// answer. Bounded so the warm-up stays a small share of the cores: a few
/// files (well within the blame cache), looked for in the last commits,
/// and stopped after a few seconds or when HEAD moves.
const WARM_FILES: usize = 8;
const WARM_LOOKBACK: WalkBounds = WalkBounds {
    since: 0,
    max_commits: 100,
    deadline: Duration::from_millis(200),
};
const WARM_TIME: Duration = Duration::from_secs(5);

#[derive(Default)]
pub(crate) struct GitCache {
    repo: Mutex<Option<Arc<SharedRepo>>>,
    pub blames: BlameCache,
    /// HEAD and what changed when, as of that HEAD.
    recency: Mutex<Option<(ObjectId, Arc<ChangeTimes>)>>,
    bases: Mutex<Option<lru::LruCache<ObjectId, Arc<Vec<Definition>>>>>,
    /// The HEAD whose blames were (or are being) computed ahead, and the
    /// files blamed for it.
    warmed: Mutex<Option<(ObjectId, Vec<String>)>>,
}

impl GitCache {
    /// The repository holding `root`, opened on first use. Not finding one
    /// is not remembered: `git init` may come later.
    pub(crate) fn repo(&self, root: &Path) -> Result<Repo, GitError> {
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
    pub(crate) fn change_times(&self, root: &Path) -> Option<Arc<ChangeTimes>> {
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
    pub(crate) fn base_definitions(
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

    /// Blames, whole, the files the newest commits changed (newest first,
    /// at most `WARM_FILES`) into the blame cache, where `git_blame`
    /// finds them; once per HEAD. The blame cache is keyed by path, HEAD
    /// and content, so a warmed blame is exactly the one a request would
    /// compute. Stops when HEAD moves or after `WARM_TIME`; files it cannot
    /// blame (gone, binary, sensitive) are passed over.
    pub(crate) fn warm_blames(&self, root: &Path) {
        let Ok(repo) = self.repo(root) else { return };
        let Some(head) = repo.head_id() else { return };
        {
            let mut warmed = self.warmed.lock().unwrap_or_else(|e| e.into_inner());
            if warmed.as_ref().is_some_and(|(at, _)| *at == head) {
                return;
            }
            *warmed = Some((head, Vec::new()));
        }
        let started = Instant::now();
        // Kept on disk too: the next process (a restart, the CLI) finds
        // them, and brings them forward when HEAD moved since.
        let store = DiskBlames::new(root);
        // The history index first: with it, the blames below and any
        // first blame a request asks for walk only their file's commits.
        if let Some(store) = &store {
            match repo.keep_history_index(store, &INDEX_BOUNDS) {
                Ok(kept) => tracing::debug!(
                    "history index {} in {:.0} ms",
                    if kept { "kept" } else { "not built" },
                    started.elapsed().as_secs_f64() * 1e3
                ),
                Err(error) => tracing::debug!("no history index: {error}"),
            }
        }
        let recent = match repo.change_times(&WARM_LOOKBACK) {
            Ok(recent) => recent,
            Err(error) => {
                tracing::debug!("no blames computed ahead: {error}");
                return;
            }
        };
        let mut files: Vec<(&String, &i64)> = recent.times.iter().collect();
        files.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        for (path, _) in files {
            if started.elapsed() > WARM_TIME || repo.head_id() != Some(head) {
                break;
            }
            match repo.blame_cached(path, None, None, Some(&self.blames), kept(&store)) {
                Ok(_) => {
                    let mut warmed = self.warmed.lock().unwrap_or_else(|e| e.into_inner());
                    match warmed.as_mut() {
                        Some((at, blamed)) if *at == head => {
                            blamed.push(path.clone());
                            if blamed.len() == WARM_FILES {
                                break;
                            }
                        }
                        // Another warm-up, for a newer HEAD, took over.
                        _ => break,
                    }
                }
                Err(error) => tracing::debug!("{path} not blamed ahead: {error}"),
            }
        }
        tracing::debug!(
            "blames computed ahead in {:.0} ms",
            started.elapsed().as_secs_f64() * 1e3
        );
    }

    /// [`GitCache::warm_blames`] on a thread of its own when HEAD moved
    /// since the last warm-up: the answer that noticed does not wait.
    pub(crate) fn warm_blames_later(self: &Arc<Self>, root: &Path) {
        let head = match self.repo(root) {
            Ok(repo) => repo.head_id(),
            Err(_) => return,
        };
        let warmed = self.warmed.lock().unwrap_or_else(|e| e.into_inner());
        if head.is_none() || warmed.as_ref().map(|(at, _)| *at) == head {
            return;
        }
        drop(warmed);
        let (cache, root) = (self.clone(), root.to_path_buf());
        let spawned = std::thread::Builder::new()
            .name("xfile-blame-ahead".into())
            .spawn(move || cache.warm_blames(&root));
        if let Err(error) = spawned {
            tracing::debug!("no thread for blames ahead: {error}");
        }
    }

    /// The files whose blames were computed ahead for HEAD `head`.
    pub(crate) fn blamed_ahead(&self, head: ObjectId) -> Vec<String> {
        let warmed = self.warmed.lock().unwrap_or_else(|e| e.into_inner());
        match warmed.as_ref() {
            Some((at, blamed)) if *at == head => blamed.clone(),
            _ => Vec::new(),
        }
    }
}
