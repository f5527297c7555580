//! What blame does at each commit that changed a file, shared by the walks
//! that compose blames (`kept.rs`'s `advance`, `walk.rs`): the line diff
//! of the file's version against its parent's, as gix's blame makes it
//! (imara-diff with git's slider heuristics, lines as git splits them),
//! and which lines of the blamed version are still looked for.

use gix::ObjectId;
use gix::bstr::BStr;
use gix::diff::blob::sources::byte_lines;
use gix::diff::blob::{
    Algorithm, Diff, IndentHeuristic, IndentLevel, InternedInput, ResourceKind, Token,
    diff_with_slider_heuristics,
};

use super::super::{GitError, Repo, failed};

/// For each line of `new`, the line of `old` it is unchanged from, or
/// `None` where `new` changed it.
pub(super) fn unchanged_from(old: &[u8], new: &[u8], algorithm: Algorithm) -> Vec<Option<u32>> {
    let input = InternedInput::new(old, new);
    let diff = diff_with_slider_heuristics(algorithm, &input);
    line_map(&diff, input.after.len())
}

/// [`unchanged_from`] of a computed diff whose newer side has `after`
/// lines.
fn line_map(diff: &Diff, after: usize) -> Vec<Option<u32>> {
    let total = u32::try_from(after).unwrap_or(u32::MAX);
    let mut map = Vec::with_capacity(after);
    let (mut old_line, mut new_line) = (0u32, 0u32);
    for hunk in diff.hunks() {
        while new_line < hunk.after.start {
            map.push(Some(old_line));
            old_line += 1;
            new_line += 1;
        }
        old_line = hunk.before.end;
        for _ in hunk.after.clone() {
            map.push(None);
            new_line += 1;
        }
    }
    while new_line < total {
        map.push(Some(old_line));
        old_line += 1;
        new_line += 1;
    }
    map
}

/// Lines interned once for a whole walk: each distinct line a token, as
/// `InternedInput` would give (the diff depends on which lines are equal,
/// not on the numbers), kept across versions.
#[derive(Default)]
struct LineTable {
    ids: rustc_hash::FxHashMap<Box<[u8]>, Token>,
    lines: Vec<Box<[u8]>>,
}

/// The number of leading `tokens` whose lines make up `bytes` bytes.
fn lines_within(tokens: &[Token], lines: &[Box<[u8]>], bytes: usize) -> usize {
    let mut left = bytes;
    tokens
        .iter()
        .take_while(|t| match left.checked_sub(lines[t.0 as usize].len()) {
            Some(rest) if left > 0 => {
                left = rest;
                true
            }
            _ => false,
        })
        .count()
}

/// The number of trailing `tokens` whose lines make up `bytes` bytes.
fn lines_within_end(tokens: &[Token], lines: &[Box<[u8]>], bytes: usize) -> usize {
    let mut left = bytes;
    tokens
        .iter()
        .rev()
        .take_while(|t| match left.checked_sub(lines[t.0 as usize].len()) {
            Some(rest) if left > 0 => {
                left = rest;
                true
            }
            _ => false,
        })
        .count()
}

/// The length of the common start of `a` and `b`, compared a block at a
/// time (a walk compares two versions of the file at each step).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 64;
    let blocks = a
        .chunks_exact(BLOCK)
        .zip(b.chunks_exact(BLOCK))
        .take_while(|(x, y)| x == y)
        .count();
    let at = blocks * BLOCK;
    at + a[at..]
        .iter()
        .zip(&b[at..])
        .take_while(|(x, y)| x == y)
        .count()
}

/// The length of the common end of `a` and `b`.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 64;
    let blocks = a
        .rchunks_exact(BLOCK)
        .zip(b.rchunks_exact(BLOCK))
        .take_while(|(x, y)| x == y)
        .count();
    let at = blocks * BLOCK;
    at + a[..a.len() - at]
        .iter()
        .rev()
        .zip(b[..b.len() - at].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

impl LineTable {
    fn intern(&mut self, line: &[u8]) -> Token {
        if let Some(&token) = self.ids.get(line) {
            return token;
        }
        let token = Token(u32::try_from(self.lines.len()).unwrap_or(u32::MAX));
        self.lines.push(line.into());
        self.ids.insert(line.into(), token);
        token
    }

    fn tokens(&mut self, data: &[u8]) -> Vec<Token> {
        byte_lines(data).map(|line| self.intern(line)).collect()
    }

    /// The tokens of `old`, given `new` and its tokens: the whole lines of
    /// their common start and end are `new`'s tokens again, so only the
    /// lines between are hashed (one version's few changed lines, where
    /// interning both versions whole hashed every line twice a step).
    fn tokens_against(&mut self, old: &[u8], new: &[u8], new_tokens: &[Token]) -> Vec<Token> {
        if old == new {
            return new_tokens.to_vec();
        }
        let common = common_prefix(old, new);
        // The prefix's whole lines end at its last newline.
        let start = memchr::memrchr(b'\n', &old[..common]).map_or(0, |at| at + 1);
        let room = (old.len() - start).min(new.len() - start);
        let tail = common_suffix(&old[old.len() - room..], &new[new.len() - room..]);
        // The suffix's whole lines start at a line start of both texts.
        let (old_at, new_at) = (old.len() - tail, new.len() - tail);
        let starts_line = |text: &[u8], at: usize| at == start || text[at - 1] == b'\n';
        let end = if starts_line(old, old_at) && starts_line(new, new_at) {
            old_at
        } else {
            memchr::memchr(b'\n', &old[old_at..]).map_or(old.len(), |at| old_at + at + 1)
        };
        let middle: Vec<Token> = byte_lines(&old[start..end])
            .map(|line| self.intern(line))
            .collect();
        // Lines before `start` and from `end` on are as many in `new`'s
        // tokens, from its start and its end: counted there by their
        // bytes instead of by scanning for newlines.
        let before = lines_within(new_tokens, &self.lines, start);
        let after = lines_within_end(new_tokens, &self.lines, old.len() - end);
        let mut tokens = Vec::with_capacity(before + middle.len() + after);
        tokens.extend_from_slice(&new_tokens[..before]);
        tokens.extend(middle);
        tokens.extend_from_slice(&new_tokens[new_tokens.len() - after..]);
        tokens
    }

    /// The diff blame makes of `old` to `new`: as
    /// `diff_with_slider_heuristics` on an `InternedInput` of the two.
    fn diff(&self, algorithm: Algorithm, old: &[Token], new: &[Token]) -> Diff {
        let mut diff = Diff::default();
        let count = u32::try_from(self.lines.len()).unwrap_or(u32::MAX);
        diff.compute_with(algorithm, old, new, count);
        diff.postprocess_with(
            old,
            new,
            IndentHeuristic::new(|token: Token| {
                IndentLevel::for_ascii_line(self.lines[token.0 as usize].iter().copied(), 8)
            }),
        );
        diff
    }
}

/// Line diffs of one file's versions, read as gix's blame reads them
/// (through the repository's diff resource cache, so a version it takes
/// for binary is one here too).
pub(super) struct Differ<'r> {
    repo: &'r Repo,
    resources: gix::diff::blob::Platform,
    repo_path: String,
    algorithm: Algorithm,
    table: LineTable,
    /// The newer version of the last step (blob id, tokens): a walk back
    /// diffs each version against its parent, so a step's older version
    /// is the next step's newer one.
    last: Option<(ObjectId, Vec<Token>)>,
}

impl<'r> Differ<'r> {
    pub(super) fn new(
        repo: &'r Repo,
        repo_path: &str,
        algorithm: Algorithm,
    ) -> Result<Self, GitError> {
        Ok(Differ {
            repo,
            resources: repo.resource_cache()?,
            repo_path: repo_path.to_string(),
            algorithm,
            table: LineTable::default(),
            last: None,
        })
    }

    /// [`unchanged_from`] of the blobs `old` and `new`; `None` when either
    /// is taken for binary (it has no lines to map). Lines are interned
    /// once for the whole walk (`LineTable`).
    pub(super) fn unchanged(
        &mut self,
        old: ObjectId,
        new: ObjectId,
    ) -> Result<Option<Vec<Option<u32>>>, GitError> {
        for (kind, id) in [
            (ResourceKind::OldOrSource, old),
            (ResourceKind::NewOrDestination, new),
        ] {
            self.resources
                .set_resource(
                    id,
                    gix::object::tree::EntryKind::Blob,
                    BStr::new(self.repo_path.as_bytes()),
                    kind,
                    &self.repo.repo.objects,
                )
                .map_err(failed)?;
        }
        let prepared = self.resources.prepare_diff().map_err(failed)?;
        let map = match (prepared.old.data.as_slice(), prepared.new.data.as_slice()) {
            (Some(old_data), Some(new_data)) => {
                let new_tokens = match self.last.take() {
                    Some((id, tokens)) if id == new => tokens,
                    _ => self.table.tokens(new_data),
                };
                let old_tokens = self.table.tokens_against(old_data, new_data, &new_tokens);
                let diff = self.table.diff(self.algorithm, &old_tokens, &new_tokens);
                self.last = Some((old, old_tokens));
                Some(line_map(&diff, new_tokens.len()))
            }
            _ => None,
        };
        self.resources.clear_resource_cache_keep_allocation();
        Ok(map)
    }
}

/// The lines of a blamed version while a walk goes back through history:
/// for each, the line it still is in the version the walk is at, or the
/// commit that changed it (which owns it then).
pub(super) struct Tracked {
    pub(super) at_line: Vec<Option<u32>>,
    pub(super) owned: Vec<Option<ObjectId>>,
}

impl Tracked {
    /// `lines` lines, none owned yet.
    pub(super) fn new(lines: u32) -> Tracked {
        Tracked {
            at_line: (0..lines).map(Some).collect(),
            owned: vec![None; lines as usize],
        }
    }

    /// One commit, `commit`, whose version maps to its parent's by `map`
    /// (from [`unchanged_from`]): the lines it changed are its own, the
    /// others follow to the parent. True when no line is left.
    pub(super) fn step(&mut self, map: &[Option<u32>], commit: ObjectId) -> bool {
        let mut left = false;
        for (line, owner) in self.at_line.iter_mut().zip(self.owned.iter_mut()) {
            if let Some(i) = *line {
                match map.get(i as usize).copied().flatten() {
                    Some(old) => {
                        *line = Some(old);
                        left = true;
                    }
                    None => {
                        *line = None;
                        *owner = Some(commit);
                    }
                }
            }
        }
        !left
    }

    /// Every line not owned yet to `commit` (a root commit's).
    pub(super) fn give_rest(&mut self, commit: ObjectId) {
        for (line, owner) in self.at_line.iter_mut().zip(self.owned.iter_mut()) {
            if line.take().is_some() {
                *owner = Some(commit);
            }
        }
    }

    /// Whether every line is owned.
    pub(super) fn done(&self) -> bool {
        self.at_line.iter().all(Option::is_none)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seeded random edits (xorshift), repeated and blank lines among
    /// them so that diffs have sliders to place: a walk's token reuse
    /// gives the line maps of a fresh `InternedInput` each step.
    #[test]
    fn reused_tokens_map_lines_as_a_fresh_diff_does() {
        let mut state: u64 = 0x1234_5678_9abc_def1;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let pool = [
            "pass\n",
            "\n",
            "    x = 1\n",
            "def f():\n",
            "    return\n",
            "}\n",
        ];
        let mut lines: Vec<String> = (0..40).map(|i| format!("v{i} = {i}\n")).collect();
        let mut versions = Vec::new();
        for step in 0..300 {
            for _ in 0..1 + next(3) {
                let at = next(lines.len() + 1).min(lines.len().saturating_sub(1));
                match next(5) {
                    0 => lines[at] = format!("v{at} = {step}\n"),
                    1 | 2 => lines.insert(at, pool[next(pool.len())].to_string()),
                    3 if lines.len() > 3 => {
                        lines.remove(at);
                    }
                    _ => lines.insert(at, format!("w{step}\n")),
                }
            }
            let mut text = lines.concat();
            if step % 7 == 0 {
                text.pop(); // no newline at the end, now and then
            }
            versions.push(text.into_bytes());
        }
        for algorithm in [Algorithm::Histogram, Algorithm::Myers] {
            // Walked back, newest first, as blame walks.
            let mut table = LineTable::default();
            let mut new_tokens = table.tokens(versions.last().unwrap());
            for pair in versions.windows(2).rev() {
                let (old, new) = (&pair[0], &pair[1]);
                let old_tokens = table.tokens_against(old, new, &new_tokens);
                assert_eq!(old_tokens, table.tokens(old), "tokens of the older version");
                let diff = table.diff(algorithm, &old_tokens, &new_tokens);
                assert_eq!(
                    line_map(&diff, new_tokens.len()),
                    unchanged_from(old, new, algorithm)
                );
                new_tokens = old_tokens;
            }
        }
    }
}
