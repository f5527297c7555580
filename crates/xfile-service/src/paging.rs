//! Long answers a page at a time, so no answer is unbounded: at most `limit`
//! items and the answer budget in tokens, with a cursor for the rest, so
//! that the pages together are exactly the whole list.

use serde::Serialize;

use super::context::count_tokens;

/// Items per page unless asked otherwise, and at most.
pub const DEFAULT_LIMIT: usize = 100;
pub const MAX_LIMIT: usize = 1000;

/// One page of a list: the union of the pages, cursor after cursor, is the
/// whole list.
#[derive(Debug, Serialize)]
pub struct Page<T> {
    /// Offset of the first item in the whole list.
    #[serde(skip)]
    pub start: usize,
    pub items: Vec<T>,
    pub total: usize,
    /// Pass as `cursor` for the next page; absent on the last one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Why the page holds fewer than `limit` items, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl<T> Page<T> {
    /// The closing line of a page's text form: which items these are and
    /// how to get the next ones; nothing when the page is the whole list.
    pub fn footer(&self, what: &str) -> String {
        let mut out = String::new();
        if let Some(note) = &self.note {
            out.push_str(&format!("({note})\n"));
        }
        match &self.next_cursor {
            Some(next) => out.push_str(&format!(
                "{}-{} of {} {what}; pass cursor \"{next}\" for the next page.\n",
                self.start + 1,
                self.start + self.items.len(),
                self.total
            )),
            None if self.start > 0 => out.push_str(&format!(
                "{}-{} of {} {what} (last page).\n",
                self.start + 1,
                self.start + self.items.len(),
                self.total
            )),
            None => out.push_str(&format!("{} {what}\n", self.total)),
        }
        out
    }
}

#[derive(Debug, thiserror::Error)]
#[error("cursor {0:?} is not one this tool gave; omit it to start from the beginning")]
pub struct CursorError(String);

/// The page of `items` from `cursor` (an offset this function gave), at
/// most `limit` items and `token_budget` tokens of compact JSON.
pub fn page<T: Serialize>(
    items: Vec<T>,
    cursor: Option<&str>,
    limit: usize,
    token_budget: usize,
) -> Result<Page<T>, CursorError> {
    page_by(items, cursor, limit, token_budget, tokens_of)
}

/// [`page`] with the page's size in tokens measured by `cost` (the text
/// form of an answer is smaller than its JSON).
pub fn page_by<T>(
    items: Vec<T>,
    cursor: Option<&str>,
    limit: usize,
    token_budget: usize,
    cost: impl Fn(&[T]) -> usize,
) -> Result<Page<T>, CursorError> {
    let total = items.len();
    let start = match cursor {
        None => 0,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|&n| n <= total)
            .ok_or_else(|| CursorError(text.to_string()))?,
    };
    let limit = limit.clamp(1, MAX_LIMIT);
    let mut items: Vec<T> = items.into_iter().skip(start).take(limit).collect();
    let mut note = None;
    let keep = fitting(items.len(), token_budget, |n| cost(&items[..n]));
    if keep < items.len() {
        items.truncate(keep);
        note = Some(format!(
            "cut to {keep} items by the {token_budget}-token answer budget"
        ));
    }
    let end = start + items.len();
    Ok(Page {
        start,
        next_cursor: (end < total).then(|| end.to_string()),
        items,
        total,
        note,
    })
}

/// How many of the first `len` items fit `budget` tokens (at least one),
/// where `cost(n)` is the size of an answer with the first `n`: shrinks in
/// proportion to the excess until the answer fits. Every answer cut item
/// by item (pages, call graphs, explanations) fits this way.
pub fn fitting(len: usize, budget: usize, cost: impl Fn(usize) -> usize) -> usize {
    let mut n = len;
    while n > 1 {
        let spent = cost(n);
        if spent <= budget {
            break;
        }
        n = (n * budget / spent).clamp(1, n - 1);
    }
    n
}

/// The token count of each of an answer's parts (lines, hunks, sections),
/// each tokenized once, for answers cut part by part without tokenizing
/// each candidate length again. The tokenizer splits text into pieces
/// before encoding each piece on its own, and a piece never runs past a
/// newline followed by a character other than whitespace; so when each
/// part ends with a newline and none starts with a blank line, the counts
/// of consecutive parts add up to the count of their concatenation
/// exactly. Where a part does start with a blank line (a section's
/// heading), the sum counts that newline apart: at most a token more than
/// the text, never less.
pub fn part_tokens<S: AsRef<str>>(parts: &[S]) -> Vec<usize> {
    parts
        .iter()
        .map(|part| count_tokens(part.as_ref()))
        .collect()
}

/// How many of the first parts, whose token counts are `costs`, fit
/// `budget` tokens (the longest prefix whose sum does; at least one when
/// there is one, as [`fitting`]).
pub fn fitting_parts(costs: &[usize], budget: usize) -> usize {
    let mut spent = 0usize;
    let fit = costs
        .iter()
        .take_while(|&&cost| {
            spent = spent.saturating_add(cost);
            spent <= budget
        })
        .count();
    fit.max(usize::from(!costs.is_empty()))
}

fn tokens_of<T: Serialize>(items: &[T]) -> usize {
    serde_json::to_string(items).map_or(usize::MAX, |json| count_tokens(&json))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_cover_the_list_exactly_and_bad_cursors_are_errors() {
        let items: Vec<u32> = (0..250).collect();
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = page(items.clone(), cursor.as_deref(), 100, 10_000).unwrap();
            assert_eq!(page.total, 250);
            seen.extend(page.items);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, items);
        assert!(page(items.clone(), Some("x"), 10, 100).is_err());
        assert!(page(items.clone(), Some("251"), 10, 100).is_err());
    }

    #[test]
    fn parts_counted_apart_add_up_to_the_whole_answer() {
        // Lines as answers make them: punctuation, numbers, code, and
        // words that the tokenizer merges within a line.
        let parts = [
            "## git blame src/a.py:1-40 (40 lines in the file)\n\n",
            "- lines 1-3: `0123456789` 2024-01-01 10:00:00 +0000 Ann <ann@example.com>: Start\n",
            "- line 4: not committed yet\n",
            "@@ -1,3 +1,3 @@\n def f():\n-    return 1\n+    return  2\n \n",
            "```\n\n### b.py\n```diff\n",
            "- b.py::f (calls a.py::g at line 3, depth 1)\n",
        ];
        let costs = part_tokens(&parts);
        for n in 1..=parts.len() {
            let whole = count_tokens(&parts[..n].concat());
            assert_eq!(costs[..n].iter().sum::<usize>(), whole, "first {n} parts");
        }
        // A part starting with a blank line is counted apart: the sum is
        // never below the text's count.
        let heading = ["- x\n", "\n### Tests that use them\n", "- y\n"];
        let sum: usize = part_tokens(&heading).iter().sum();
        assert!(sum >= count_tokens(&heading.concat()));
        assert_eq!(fitting_parts(&costs, 0), 1);
        assert_eq!(fitting_parts(&[], 10), 0);
        let all: usize = costs.iter().sum();
        assert_eq!(fitting_parts(&costs, all), parts.len());
        assert_eq!(fitting_parts(&costs, all - 1), parts.len() - 1);
    }

    #[test]
    fn a_page_over_the_token_budget_is_cut_and_says_so() {
        let items: Vec<String> = (0..100).map(|i| format!("item number {i}")).collect();
        let page = page(items, None, 100, 50).unwrap();
        assert!(page.items.len() < 100);
        assert!(tokens_of(&page.items) <= 50 || page.items.len() == 1);
        assert!(page.note.unwrap().contains("50-token"));
        assert_eq!(page.next_cursor, Some(page.items.len().to_string()));
    }
}
