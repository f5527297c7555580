//! The files in buckets by a hash of their path, so that what reads every
//! file can read them bucket by bucket (`db::Bucket`), and what the engine
//! keeps about every file outside salsa can be compared with its last run
//! bucket by bucket ([`changes`]): an update then costs the buckets it
//! reached, not the project.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::db::SourceFile;

/// How many buckets the files are spread over: enough that a bucket holds
/// a few dozen files of a large project (Django: ~44), few enough that
/// going over the buckets is cheap for a small one.
pub(crate) const BUCKETS: usize = 64;

/// The bucket of a file, from its path alone: fixed for a file's life (a
/// rename is a removal and a new file).
pub(crate) fn bucket_of(path: &str) -> usize {
    // Fixed keys: the same path lands in the same bucket in every run.
    let mut hasher = std::hash::DefaultHasher::new();
    path.hash(&mut hasher);
    (hasher.finish() % BUCKETS as u64) as usize
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
