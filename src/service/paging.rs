//! Long answers a page at a time (DESIGN invariant 10): at most `limit`
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
    fn a_page_over_the_token_budget_is_cut_and_says_so() {
        let items: Vec<String> = (0..100).map(|i| format!("item number {i}")).collect();
        let page = page(items, None, 100, 50).unwrap();
        assert!(page.items.len() < 100);
        assert!(tokens_of(&page.items) <= 50 || page.items.len() == 1);
        assert!(page.note.unwrap().contains("50-token"));
        assert_eq!(page.next_cursor, Some(page.items.len().to_string()));
    }
}
