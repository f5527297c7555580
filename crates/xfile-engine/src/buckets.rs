//! The files in buckets by a hash of their path, so that what reads every
//! file can read them bucket by bucket (`db::Bucket`), and what the engine
//! keeps about every file outside salsa can be compared with its last run
//! bucket by bucket ([`changes`]): an update then costs the buckets it
//! reached, not the project.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::db::SourceFile;

/// The fewest buckets the files are spread over: few enough that going
/// over the buckets is cheap for a small project.
pub(crate) const MIN_BUCKETS: usize = 64;

/// The most: a bucket of a project larger than this many times
/// [`FILES_PER_BUCKET`] files holds more.
const MAX_BUCKETS: usize = 4096;

/// About how many files a bucket holds in a large project (Django: ~44 in
/// 64 buckets). An edit makes its file's bucket low, and every later edit
/// checks the memos of a low bucket's files one by one, so a bucket must
/// not grow with the project: four copies of Django in 64 buckets put
/// ~176 files in each, and an edit after 17 others checked ~3,000 files'
/// memos.
const FILES_PER_BUCKET: usize = 48;

/// How many buckets the first index spreads `files` files over: a power of
/// two from [`MIN_BUCKETS`] to [`MAX_BUCKETS`]. Fixed from then on, so
/// that a file keeps its bucket.
pub(crate) fn bucket_count(files: usize) -> usize {
    (files / FILES_PER_BUCKET)
        .next_power_of_two()
        .clamp(MIN_BUCKETS, MAX_BUCKETS)
}

/// The bucket of a file among `count`, from its path alone: fixed for a
/// file's life (a rename is a removal and a new file).
pub(crate) fn bucket_of(path: &str, count: usize) -> usize {
    // Fixed keys: the same path lands in the same bucket in every run.
    let mut hasher = std::hash::DefaultHasher::new();
    path.hash(&mut hasher);
    (hasher.finish() % count.max(1) as u64) as usize
}

/// One bucket's files, each with a value, in the bucket's file order: the
/// value of a per-bucket query that the engine keeps to compare with.
pub(crate) type PerFile<T> = Arc<Vec<(SourceFile, T)>>;

/// Calls `f(file, before, after)` for every file whose value differs
/// between two runs' buckets (`before` empty: every file is new). A bucket
/// that is the same allocation in both is skipped without a look.
pub(crate) fn changes<'a, T: PartialEq>(
    before: &'a [PerFile<T>],
    after: &'a [PerFile<T>],
    mut f: impl FnMut(SourceFile, Option<&'a T>, Option<&'a T>),
) {
    for (index, new) in after.iter().enumerate() {
        let Some(old) = before.get(index) else {
            for (file, value) in new.iter() {
                f(*file, None, Some(value));
            }
            continue;
        };
        if Arc::ptr_eq(old, new) {
            continue;
        }
        let mut gone: FxHashMap<SourceFile, &T> =
            old.iter().map(|(file, value)| (*file, value)).collect();
        for (file, value) in new.iter() {
            match gone.remove(file) {
                Some(was) if was == value => {}
                was => f(*file, was, Some(value)),
            }
        }
        for (file, value) in gone {
            f(file, Some(value), None);
        }
    }
}
