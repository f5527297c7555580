//! Tool results as the client reads them: text or JSON, one page of a
//! list within the answer budget, notes appended.

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;

use super::args::{Format, PageArgs};
use super::errors::ToolError;
use crate::service::context::count_tokens;
use crate::service::paging;

/// Tokens kept for a text answer's header and closing lines.
pub(crate) const FRAME_TOKENS: usize = 150;

pub(crate) fn text_result(text: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

pub(crate) fn ok_json(value: &impl serde::Serialize) -> CallToolResult {
    let text = serde_json::to_string(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    CallToolResult::success(vec![ContentBlock::text(text)])
}

/// A page of `items` in the asked format: text lines by `render` with a
/// closing line that says how to get the rest, or the JSON page.
pub(crate) fn paged<T: Serialize>(
    items: Vec<T>,
    args: &PageArgs,
    budget: usize,
    what: &str,
    render: impl Fn(&[T]) -> String,
) -> Result<CallToolResult, ToolError> {
    paged_knowing(items, args, budget, what, render, None)
}

/// [`paged`], knowing the tokens of the text form of the first `n` items
/// (`known`: `(n, tokens)`), as the warm-start answers do.
pub(crate) fn paged_knowing<T: Serialize>(
    items: Vec<T>,
    args: &PageArgs,
    budget: usize,
    what: &str,
    render: impl Fn(&[T]) -> String,
    known: Option<(usize, usize)>,
) -> Result<CallToolResult, ToolError> {
    let limit = args.limit.unwrap_or(paging::DEFAULT_LIMIT);
    let cursor = args.cursor.as_deref();
    let budget = budget.saturating_sub(FRAME_TOKENS).max(1);
    Ok(match args.format {
        Format::Text => {
            let page = paging::page_by(items, cursor, limit, budget, |items| {
                match known {
                    Some((n, tokens)) if cursor.is_none() && items.len() == n => return tokens,
                    _ => {}
                }
                let text = render(items);
                // A token is at least a byte: a text no longer than the
                // budget fits, whatever its count (which is all paging
                // asks of a cost within the budget), without counting.
                if text.len() <= budget {
                    text.len()
                } else {
                    count_tokens(&text)
                }
            })?;
            text_result(render(&page.items) + &page.footer(what))
        }
        Format::Json => ok_json(&paging::page(items, cursor, limit, budget)?),
    })
}

/// Notes appended to a text answer (a JSON answer gets them as `notes`).
pub(crate) fn with_notes(mut result: CallToolResult, notes: &[String]) -> CallToolResult {
    if notes.is_empty() {
        return result;
    }
    let text = first_text(&result);
    let joined = match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(serde_json::Value::Object(mut object)) => {
            let listed = object
                .entry("notes")
                .or_insert_with(|| serde_json::json!([]));
            if let Some(listed) = listed.as_array_mut() {
                listed.extend(notes.iter().map(|n| serde_json::json!(n)));
            }
            serde_json::Value::Object(object).to_string()
        }
        _ => format!("{text}\nNotes:\n- {}", notes.join("\n- ")),
    };
    result.content = vec![ContentBlock::text(joined)];
    result
}

/// The text of a result's first content block.
pub(crate) fn first_text(result: &CallToolResult) -> String {
    result
        .content
        .first()
        .and_then(|block| block.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default()
}
