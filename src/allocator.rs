//! The process's allocator. Parsing and fact extraction allocate many
//! small, short-lived objects: mimalloc serves them faster than the system
//! allocator. The feature `system-alloc` leaves it out for heap profilers
//! (README, development).
//!
//! What a process frees, mimalloc gives back to the system once a purge
//! delay (1 s) has passed *and* some later allocation or collection comes
//! by. A server goes quiet right after its first index, so much of the
//! index's peak stayed resident until a worker thread happened to exit
//! (about 10 s later, tokio's keep-alive), or for good: a served Django sat
//! at 304-318 MB from a cold start and 381 MB from the warm-start cache for
//! its first 10 s, against 287-295 MB 2 s after the index once it is given
//! back (docs/performance.md). Purging at once from the start instead
//! would cost the first index about 15 % of its wall time.

#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay`: its position in `mi_option_t`
/// (mimalloc v3), which the bindings have no constant for.
#[cfg(not(feature = "system-alloc"))]
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Gives the memory the first index freed back to the system, and from then
/// on returns freed memory at once: for a server once its first index and
/// the work done ahead of it are over. The free pages a thread holds can
/// only be released by that thread, so every thread of the rayon pool
/// (where the index parses) collects its own, then the calling thread,
/// whose forced collection also purges what every thread freed so far.
/// Only then is the delay set to zero: mimalloc skips the purges already
/// scheduled once the delay is zero.
pub fn give_back_freed_memory() {
    #[cfg(not(feature = "system-alloc"))]
    {
        // SAFETY: mi_option_set stores one aligned integer that mimalloc
        // reads each time it schedules a purge; mimalloc documents options
        // as changeable while the program runs. mi_collect only releases
        // the calling thread's free pages and purges what was freed.
        rayon::broadcast(|_| unsafe { libmimalloc_sys::mi_collect(true) });
        unsafe { libmimalloc_sys::mi_collect(true) };
        unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 0) };
        tracing::debug!("freed memory given back");
    }
}

#[cfg(all(test, not(feature = "system-alloc")))]
mod tests {
    use super::PURGE_DELAY;

    /// Guards the hard-coded position against a mimalloc that moves it: the
    /// purge delay is the one option whose default is 1,000 (ms).
    #[test]
    fn the_purge_delay_option_is_where_we_set_it() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        let value = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        assert_eq!(value, 1000);
    }
}
