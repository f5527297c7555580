//! Reading source: a file with the definitions it uses from other files,
//! a file's outline, and one definition.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::{Peer, RoleServer};
use rmcp::{tool, tool_router};

use crate::mcp::XfileServer;
use crate::mcp::args::{Format, OutlineArgs, ReadArgs, SymbolArgs};
use crate::mcp::results::text_result;
use crate::service::ReadOptions;
use crate::service::live::Involved;

#[tool_router(router = context_tools, vis = "pub(super)")]
impl XfileServer {
    #[tool(
        title = "Read with context",
        description = "Read a Python file with the signatures and locations of the project definitions it uses from other files. Prefer it to a plain read."
    )]
    async fn read_with_context(
        &self,
        peer: Peer<RoleServer>,
        Parameters(args): Parameters<ReadArgs>,
    ) -> CallToolResult {
        let session = self.session;
        // The hook's read names what the lines use within its own, larger
        // limit: the agent did not ask, so naming is all it must get.
        let from_hook = peer
            .peer_info()
            .is_some_and(|info| info.client_info.name == crate::mcp::hook::CLIENT_NAME);
        let involved = Involved::Dependencies(args.file_path.clone());
        let path = args.file_path.clone();
        self.fresh_before_edit(path, involved, move |s| {
            let options = ReadOptions {
                start_line: args.start_line,
                end_line: args.end_line,
                import_depth: args.import_depth,
                show_available: args.show_available,
                log: true,
                accesses: crate::ops::metrics::global().reads(session, s.root()),
                names_limit: from_hook.then(|| s.config().hook_token_limit),
            };
            let started = std::time::Instant::now();
            let answer = s.read_with_options(&args.file_path, &options)?;
            if let Ok(file) = s.resolve_file(&args.file_path) {
                crate::ops::metrics::global().record_read(
                    session,
                    s,
                    &file,
                    &answer,
                    started.elapsed(),
                );
            }
            Ok(text_result(answer))
        })
        .await
    }

    #[tool(
        title = "File outline",
        description = "A Python file's classes, functions and members with signatures, docstrings and lines."
    )]
    async fn get_file_outline(&self, Parameters(args): Parameters<OutlineArgs>) -> CallToolResult {
        let involved = Involved::Dependencies(args.file_path.clone());
        let path = args.file_path.clone();
        self.fresh_before_edit(path, involved, move |s| {
            let mut outline = s.outline(&args.file_path)?;
            let render = |o: &crate::service::outline::Outline| match args.format {
                Format::Text => o.to_text(),
                Format::Json => serde_json::to_string(o).unwrap_or_default(),
            };
            outline.fit(s.answer_token_limit(), render);
            Ok(text_result(render(&outline)))
        })
        .await
    }

    #[tool(
        title = "Symbol source",
        description = "One definition's source, decorators included, with its location."
    )]
    async fn get_symbol(&self, Parameters(args): Parameters<SymbolArgs>) -> CallToolResult {
        // A bare name is looked up in every file.
        self.fresh(Involved::All, move |s| {
            Ok(text_result(s.symbol_source(&args.name)?.to_text()))
        })
        .await
    }
}
