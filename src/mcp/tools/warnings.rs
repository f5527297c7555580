//! Where static analysis goes blind, with the indexing notices.

use std::collections::BTreeMap;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router};
use serde::Serialize;

use crate::mcp::XfileServer;
use crate::mcp::args::{Format, WarningsArgs};
use crate::mcp::results::{first_text, ok_json, paged, text_result, with_notes};
use crate::service::context::count_tokens;
use crate::service::live::Involved;
use crate::service::paging;
use crate::service::text;

/// Notices (skipped files, encoding fallbacks, configuration problems)
/// spelled out in a warnings answer; the count says how many there are.
pub(crate) const NOTICES: usize = 20;

/// `get_warnings` as JSON: counts by type, then one page of the warnings.
#[derive(Serialize)]
struct WarningsAnswer {
    by_type: BTreeMap<&'static str, usize>,
    suppressed: BTreeMap<&'static str, usize>,
    notices_total: usize,
    notices: Vec<crate::workspace::Notice>,
    warnings: paging::Page<crate::service::model::Warning>,
}

#[tool_router(router = warnings_tools, vis = "pub(super)")]
impl XfileServer {
    #[tool(
        title = "Blind spots",
        description = "Where static analysis goes blind (dynamic imports, getattr, monkey patching, exec, metaclasses, cycles), by type."
    )]
    async fn get_warnings(&self, Parameters(args): Parameters<WarningsArgs>) -> CallToolResult {
        // Across projects, a package several of them provide is a blind
        // spot of its own.
        let across = match args.file_path {
            None => self.cross_project().await,
            Some(_) => None,
        };
        let answer = self
            .fresh(Involved::All, move |s| {
                let mut report = s.warnings(args.file_path.as_deref())?;
                let notices_total = report.notices.len();
                report.notices.truncate(NOTICES);
                let list = std::mem::take(&mut report.warnings);
                let summary = text::warnings_summary(&report, &list);
                let budget = s.answer_token_limit();
                if args.page.format == Format::Json {
                    let mut by_type = BTreeMap::new();
                    for w in &list {
                        *by_type.entry(w.warning_type.as_str()).or_default() += 1;
                    }
                    let cursor = args.page.cursor.as_deref();
                    let limit = args.page.limit.unwrap_or(paging::DEFAULT_LIMIT);
                    let budget = budget.saturating_sub(count_tokens(&summary));
                    return Ok(ok_json(&WarningsAnswer {
                        by_type,
                        suppressed: report.suppressed,
                        notices_total,
                        notices: report.notices,
                        warnings: paging::page(list, cursor, limit, budget)?,
                    }));
                }
                let notices = text::notices(&report.notices, notices_total);
                let budget = budget.saturating_sub(count_tokens(&summary) + count_tokens(&notices));
                let page = paged(list, &args.page, budget, "warnings", text::warning_list)?;
                Ok(text_result(format!(
                    "{summary}{}{notices}",
                    first_text(&page)
                )))
            })
            .await;
        let Some((projects, members)) = across else {
            return answer;
        };
        let notes = tokio::task::spawn_blocking(move || {
            projects.across(&members, |_, index| index.notes_for(None))
        })
        .await
        .unwrap_or_default();
        with_notes(answer, &notes)
    }
}
