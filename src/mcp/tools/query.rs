//! The rules relations: their tuples matching a pattern, and why a fact
//! holds or which premise fails.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router};

use crate::mcp::XfileServer;
use crate::mcp::args::{ExplainArgs, Format, QueryArgs};
use crate::mcp::errors::ToolError;
use crate::mcp::results::{ok_json, paged, text_result};
use crate::service::context::count_tokens;
use crate::service::live::Involved;
use crate::service::paging;
use crate::service::text;

#[tool_router(router = query_tools, vis = "pub(super)")]
impl XfileServer {
    #[tool(
        title = "Query relation",
        description = "Tuples of a rules relation matching a pattern; the xfile://relations resource lists relations."
    )]
    async fn query_relation(&self, Parameters(args): Parameters<QueryArgs>) -> CallToolResult {
        self.fresh(Involved::All, move |s| {
            let mut result = s.query(&args.pattern).map_err(invalid_pattern)?;
            let tuples = std::mem::take(&mut result.tuples);
            if args.page.format == Format::Json {
                let cursor = args.page.cursor.as_deref();
                let limit = args.page.limit.unwrap_or(paging::DEFAULT_LIMIT);
                let page = paging::page(tuples, cursor, limit, s.answer_token_limit())?;
                return Ok(ok_json(&serde_json::json!({
                    "relation": result.relation,
                    "args": result.args,
                    "tuples": page,
                })));
            }
            paged(
                tuples,
                &args.page,
                s.answer_token_limit(),
                "tuples",
                |tuples| text::query(&result, tuples),
            )
        })
        .await
    }

    #[tool(
        title = "Explain",
        description = "Why a relationship holds, down to source lines, or which premise fails when it does not."
    )]
    async fn explain(&self, Parameters(args): Parameters<ExplainArgs>) -> CallToolResult {
        self.fresh(Involved::All, move |s| {
            let mut explanation = s.explain(&args.fact).map_err(invalid_pattern)?;
            let json = args.format == Format::Json || args.json == Some(true);
            let budget = s.answer_token_limit();
            let render = |e: &crate::service::explain::Explanation| {
                if json {
                    serde_json::to_string(e).unwrap_or_default()
                } else {
                    e.to_text()
                }
            };
            // Whole derivations go until the answer fits.
            let shown = |n: usize| {
                let mut cut = explanation.clone();
                cut.derivations.truncate(n);
                count_tokens(&render(&cut))
            };
            let keep = paging::fitting(explanation.derivations.len(), budget, shown);
            explanation.more += explanation.derivations.len() - keep;
            explanation.derivations.truncate(keep);
            let mut text = render(&explanation);
            if !json && count_tokens(&text) > budget {
                text = text::cut_to_budget(&text, budget);
            }
            Ok(text_result(text))
        })
        .await
    }
}

fn invalid_pattern(error: crate::service::query::QueryError) -> ToolError {
    ToolError {
        code: "invalid_parameter",
        message: error.to_string(),
        suggestion: "Write Relation(arg, ...) with one argument per relation field.",
    }
}
