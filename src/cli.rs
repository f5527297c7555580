//! The `xfile` command line: a thin adapter over [`Service`]
//! and, for `project` and `collection`, over [`crate::registry::Registry`].

mod cache;
mod git;
mod ops;
mod registry;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::service::calls::Direction;
use crate::service::changes::{Changes, GraphChanges, GraphTracker};
use crate::service::live::Live;
use crate::service::model::{Relationship, UpdateReport, UpdateTimings, WarningReport};
use crate::service::search::{Expand, SearchOptions};
use crate::service::{ReadOptions, Service, text};
use crate::watch::{self, Watch};
use crate::workspace;

#[derive(Parser)]
#[command(
    name = "xfile",
    version,
    about = "Cross-file code context for Python projects",
    after_help = "FILE arguments are absolute, relative to the working directory (when they name a file there inside the project root), or relative to the project root."
)]
pub struct Cli {
    /// Project root (default: nearest ancestor with .git or pyproject.toml).
    #[arg(long, global = true)]
    root: Option<PathBuf>,
    /// Print JSON instead of human-readable text.
    #[arg(long, global = true)]
    json: bool,
    /// Neither read nor write the warm-start cache (`.xfile_cache/`).
    #[arg(long, global = true)]
    no_cache: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Index the project and print a summary.
    Index,
    /// The warm-start cache in `.xfile_cache/`: `info` or `clean`.
    Cache {
        #[command(subcommand)]
        command: cache::CacheCommand,
    },
    /// Write the relationship graph as JSON.
    Export {
        /// Write to this file instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Relationships where FILE is the source.
    Deps {
        file: String,
        /// Only imports, each to the module file its statement names, from
        /// the import graph alone: no index is built and no cache read
        /// (FILE's text is the only one parsed). Re-exports are not
        /// followed (no `defined_in`).
        #[arg(long)]
        imports: bool,
    },
    /// Relationships where FILE is the target.
    Dependents {
        file: String,
        /// Only those whose target is this definition of FILE (`User`,
        /// `User.save`); a class takes in its members.
        #[arg(long)]
        symbol: Option<String>,
        /// Only imports that name the module FILE, from the import graph
        /// alone: no index is built and no cache read (only the files that
        /// name the module are parsed). Re-exports are not followed.
        #[arg(long, conflicts_with = "symbol")]
        imports: bool,
    },
    /// Who calls SYMBOL (`path::Qualified.name`, a dotted name such as
    /// app.models.User.save, or a name only one definition has, such as
    /// User.save), breadth first to a depth.
    Callers {
        symbol: String,
        /// How many calls away to follow (1 to 5).
        #[arg(long, default_value_t = 1)]
        depth: usize,
        /// Calls listed at most.
        #[arg(long, default_value_t = crate::service::calls::DEFAULT_LIMIT)]
        limit: usize,
    },
    /// What SYMBOL calls, breadth first to a depth.
    Callees {
        symbol: String,
        /// How many calls away to follow (1 to 5).
        #[arg(long, default_value_t = 1)]
        depth: usize,
        /// Calls listed at most.
        #[arg(long, default_value_t = crate::service::calls::DEFAULT_LIMIT)]
        limit: usize,
    },
    /// FILE's definitions with their lines, members nested under their class.
    Outline { file: String },
    /// The source of SYMBOL (`path::Qualified.name`, a dotted name, or a
    /// name only one definition has), cut to the answer budget.
    Show { symbol: String },
    /// Definitions matching QUERY (a name, part of one, a qualified name,
    /// or with a typo), in clusters with their neighbours.
    Search {
        query: String,
        /// Clusters at most.
        #[arg(long, default_value_t = 5)]
        max_clusters: usize,
        /// Also load these: callers, callees, type-family or all (comma-separated).
        #[arg(long, value_delimiter = ',')]
        expand: Vec<String>,
        /// Rank definitions near this file first.
        #[arg(long)]
        context_file: Option<String>,
    },
    /// Tuples of a relation, e.g. 'Imports("app.py", _, _)'.
    Query { pattern: String },
    /// Derivation tree of the tuples matching a pattern, e.g. 'DependsOn("app.py", _)':
    /// each rule (file:line) and premise, down to base facts and their source lines;
    /// or why the tuple does not hold.
    Explain {
        /// The pattern; with --dump, the FILE to dump (default: every file).
        #[arg(required_unless_present = "dump")]
        target: Option<String>,
        /// Write the derivations of FILE's derived tuples, or of every file's,
        /// to DIR as <file>.txt and <file>.json.
        #[arg(long, value_name = "DIR")]
        dump: Option<PathBuf>,
    },
    /// FILE with its cross-file context, as the MCP tool read_with_context returns it.
    Read {
        file: String,
        /// First line to read (1-based); only what the range uses is injected.
        #[arg(long)]
        start_line: Option<u32>,
        /// Last line to read (inclusive).
        #[arg(long)]
        end_line: Option<u32>,
        /// 2 also shows the classes the injected signatures mention.
        #[arg(long)]
        import_depth: Option<u32>,
        /// Also list the public names of the sibling modules.
        #[arg(long)]
        show_available: bool,
    },
    /// Warnings about code static analysis cannot follow, all or for FILE.
    Warnings { file: Option<String> },
    /// Serve MCP on stdio for the root, or for registered projects.
    Serve {
        /// Serve the projects of this registered collection.
        #[arg(long, conflicts_with_all = ["projects", "global"])]
        collection: Option<String>,
        /// Serve these registered projects (comma-separated names).
        #[arg(long, value_delimiter = ',', conflicts_with = "global")]
        projects: Vec<String>,
        /// Serve every registered project, and allow managing the registry.
        #[arg(long)]
        global: bool,
        /// Also serve /metrics, /health and the dashboard over HTTP at
        /// ADDR (HOST:PORT, or a port on 127.0.0.1).
        #[arg(long, value_name = "ADDR", value_parser = crate::http::address)]
        http: Option<std::net::SocketAddr>,
        /// Index and serve in this process, instead of through the user's
        /// shared service of the root (what every other session of the
        /// root uses). Implied by --http and by serving registered projects.
        #[arg(long, conflicts_with = "service")]
        standalone: bool,
        /// Be the shared service of the root (`xfile serve` starts it).
        #[arg(long, hide = true, conflicts_with_all = ["collection", "projects", "global", "http"])]
        service: bool,
    },
    /// Run by an agent after a tool call, with the call as JSON on stdin
    /// (Claude Code's PostToolUse): after a Read of a Python file, prints
    /// the context of the lines read as the hook's additionalContext;
    /// after an Edit, MultiEdit or Write, what the edit may break.
    /// Always exits 0; prints valid JSON or nothing.
    Hook {
        /// The agent whose hook protocol to speak: `claude-code` (the
        /// default, and the only one known so far).
        agent: Option<String>,
    },
    /// The project's git history: log, blame, diff.
    Git {
        #[command(subcommand)]
        command: git::GitCommand,
    },
    /// What the working tree's changes against BASE may break: the changed
    /// functions, methods and classes, their callers, subclasses and
    /// importers to a depth, and the tests that cover them.
    Impact {
        /// A branch, tag, HEAD~N or commit hash (default HEAD).
        #[arg(long)]
        base: Option<String>,
        /// How far to follow dependents (1 to 5).
        #[arg(long, default_value_t = crate::service::impact::DEFAULT_DEPTH)]
        depth: usize,
    },
    /// The registry of projects (in $XFILE_HOME, else the user's data
    /// directory): add, list, remove.
    Project {
        #[command(subcommand)]
        command: registry::ProjectCommand,
    },
    /// Named sets of registered projects: create, add, remove, list, delete.
    Collection {
        #[command(subcommand)]
        command: registry::CollectionCommand,
    },
    #[command(flatten)]
    Ops(ops::OpsCommand),
    /// Watch the tree and print, for each update, the files that changed
    /// and the relationships and warnings that came and went, until
    /// interrupted.
    Watch {
        /// Also print what each update recomputed and what it reused (the
        /// MCP tool explain_recomputation, live).
        #[arg(long)]
        trace: bool,
        /// Also write, per update, its recomputation trace and the
        /// derivations of the changed files to DIR/update-<n>/.
        #[arg(long, value_name = "DIR")]
        dump: Option<PathBuf>,
    },
}

/// A failure with the exit status it maps to: 2 for what the user can fix
/// (a bad root, path or pattern), 1 for anything else.
struct Failure {
    message: String,
    status: u8,
}

/// `From` conversions for `?`: which errors the user can fix (status 2).
macro_rules! failure_from {
    ($($error:ty => $status:expr),* $(,)?) => {$(
        impl From<$error> for Failure {
            fn from(error: $error) -> Self {
                Failure { message: error.to_string(), status: $status }
            }
        }
    )*};
}

failure_from! {
    workspace::PathError => 2,
    crate::service::calls::SymbolError => 2,
    crate::service::ReadError => 2,
    crate::service::query::QueryError => 2,
    crate::service::search::SearchError => 2,
}

/// A reader that went away (`xfile query ... | head`) is not a failure:
/// the output stops quietly with status 0.
const QUIET: u8 = 0;

/// Notices the `index` summary lists in text: a tree of a thousand hidden
/// or broken entries must not bury the rest of the summary.
const NOTICES_LISTED: usize = 20;

impl From<std::io::Error> for Failure {
    fn from(error: std::io::Error) -> Self {
        let status = match error.kind() {
            std::io::ErrorKind::BrokenPipe => QUIET,
            _ => 1,
        };
        Failure {
            message: error.to_string(),
            status,
        }
    }
}

impl From<serde_json::Error> for Failure {
    fn from(error: serde_json::Error) -> Self {
        match error.io_error_kind() {
            Some(kind) => std::io::Error::from(kind).into(),
            None => Failure {
                message: error.to_string(),
                status: 1,
            },
        }
    }
}

pub fn main() -> ExitCode {
    // A hook must never get in the agent's way, not even with arguments
    // it does not know: it is served before the command line is checked.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "hook") {
        let agent = args.get(2).map(|a| a.to_string_lossy().into_owned());
        run_hook(agent.as_deref());
        return ExitCode::SUCCESS;
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) if failure.status == QUIET => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("xfile: {}", failure.message);
            ExitCode::from(failure.status)
        }
    }
}

/// Runs the hook for `agent` (Claude Code's protocol when none is named);
/// for an agent whose protocol xfile does not speak, says so on stderr and
/// prints nothing.
fn run_hook(agent: Option<&str>) {
    match agent {
        None | Some("claude-code" | "claude") => crate::mcp::run_hook(),
        Some(other) => eprintln!(
            "xfile hook: no hook protocol for `{other}` (known: claude-code); nothing printed"
        ),
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    // The registry is the user's, not a root's: no root, no engine.
    match cli.command {
        Command::Project { command } => return registry::project(command, cli.json),
        Command::Collection { command } => return registry::collection(command, cli.json),
        // The hook finds its root from the file read, not from the cwd.
        Command::Hook { agent } => {
            run_hook(agent.as_deref());
            return Ok(());
        }
        _ => {}
    }
    let root = match &cli.root {
        Some(root) => root.clone(),
        None => workspace::find_root(&std::env::current_dir()?),
    };
    if cli.no_cache {
        crate::service::warm::disable();
    }
    if let Command::Cache { command } = &cli.command {
        return cache::run(command, &workspace::canonical_root(&root)?, cli.json);
    }
    if let Command::Git { command } = cli.command {
        return git::git(command, &root, cli.json);
    }
    if let Command::Ops(command) = cli.command {
        return ops::run(command, &root, cli.json);
    }
    if let Command::Serve {
        collection,
        projects,
        global,
        http,
        standalone,
        service,
    } = &cli.command
    {
        let scope = if *global {
            Some(crate::federation::Scope::global())
        } else if let Some(collection) = collection {
            Some(crate::federation::Scope {
                level: crate::federation::Level::Collection,
                ids: vec![collection.clone()],
            })
        } else if !projects.is_empty() {
            Some(crate::federation::Scope {
                level: crate::federation::Level::Project,
                ids: projects.clone(),
            })
        } else {
            None
        };
        if let Some(scope) = scope {
            return registry::serve(scope, *http);
        }
        let root = workspace::canonical_root(&root)?;
        let served = if *service {
            crate::mcp::serve_service(root, cli.no_cache)
        } else if *standalone || http.is_some() {
            crate::mcp::serve(root, *http)
        } else {
            crate::mcp::serve_shared(root, cli.no_cache)
        };
        return served.map_err(|e| Failure {
            message: format!("MCP server stopped: {e}"),
            status: 1,
        });
    }
    if let Command::Deps {
        file,
        imports: true,
    }
    | Command::Dependents {
        file,
        imports: true,
        ..
    } = &cli.command
    {
        let root = workspace::canonical_root(&root)?;
        let file = file_arg(&root, file)?;
        let relationships = if matches!(cli.command, Command::Deps { .. }) {
            crate::service::import_graph::dependencies(&root, &file)?
        } else {
            crate::service::import_graph::dependents(&root, &file)?
        };
        return print_relationships(&mut std::io::stdout().lock(), &relationships, cli.json);
    }
    if cache::answered(&cli.command, &root, cli.json)? {
        return Ok(());
    }
    let opened = std::time::Instant::now();
    let service = open(&root)?;
    let file_arg = |file: &str| file_arg(service.root(), file);
    let symbol_arg = |symbol: &str| symbol_arg(service.root(), symbol);
    let mut out = std::io::stdout().lock();
    match cli.command {
        Command::Index => {
            if let Err(error) = service.log_warnings() {
                eprintln!("xfile: cannot write the warning log: {error}");
            }
            let mut summary = service.summary();
            // Everything the command waited for, the warnings rendered and
            // logged included, not only the index's phases.
            summary.wall_time_ms = crate::service::elapsed_ms(opened);
            if cli.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&summary)?)?;
            } else {
                writeln!(out, "Indexed {}", summary.project_root)?;
                writeln!(out, "  files:          {}", summary.files)?;
                writeln!(out, "  parse errors:   {}", summary.parse_errors)?;
                for file in &summary.parse_error_files {
                    writeln!(out, "    {file}")?;
                }
                for (kind, count) in &summary.relationships {
                    writeln!(out, "  {:<15} {count}", format!("{kind}:"))?;
                }
                writeln!(out, "  import cycles:  {}", summary.import_cycles)?;
                let warnings: usize = summary.warnings.values().sum();
                writeln!(out, "  warnings:       {warnings}")?;
                for (kind, count) in &summary.warnings {
                    writeln!(out, "    {kind}: {count}")?;
                }
                writeln!(out, "  notices:        {}", summary.notices.len())?;
                for notice in summary.notices.iter().take(NOTICES_LISTED) {
                    writeln!(out, "    {}: {}", notice.path, notice.message)?;
                }
                if let Some(more) = summary.notices.len().checked_sub(NOTICES_LISTED)
                    && more > 0
                {
                    writeln!(
                        out,
                        "    ... and {more} more (`xfile index --json` lists them all)"
                    )?;
                }
                let p = &summary.phases;
                writeln!(
                    out,
                    "  wall time:      {:.1} ms (discover {:.1}, parse {:.1}, resolve + rules {:.1}, \
                     warnings and their log {:.1})",
                    summary.wall_time_ms,
                    p.discover_ms,
                    p.parse_ms,
                    p.analyze_ms,
                    (summary.wall_time_ms - p.total_ms).max(0.0)
                )?;
            }
        }
        Command::Export { out: path } => {
            let json = serde_json::to_string_pretty(&service.export())?;
            match path {
                Some(path) => std::fs::write(&path, json + "\n").map_err(|e| Failure {
                    message: format!("cannot write {}: {e}", path.display()),
                    status: 2,
                })?,
                None => writeln!(out, "{json}")?,
            }
        }
        Command::Deps { file, .. } => print_relationships(
            &mut out,
            &service.dependencies(&file_arg(&file)?)?,
            cli.json,
        )?,
        Command::Dependents { file, symbol, .. } => {
            let file = file_arg(&file)?;
            let dependents = match symbol {
                Some(symbol) => service.dependents_of_symbol(&file, &symbol)?,
                None => service.dependents(&file)?,
            };
            print_relationships(&mut out, &dependents, cli.json)?
        }
        Command::Callers {
            symbol,
            depth,
            limit,
        } => {
            let graph =
                service.call_graph(&symbol_arg(&symbol), Direction::Callers, depth, limit)?;
            print_call_graph(&mut out, &graph, cli.json)?
        }
        Command::Callees {
            symbol,
            depth,
            limit,
        } => {
            let graph =
                service.call_graph(&symbol_arg(&symbol), Direction::Callees, depth, limit)?;
            print_call_graph(&mut out, &graph, cli.json)?
        }
        Command::Outline { file } => {
            let outline = service.outline(&file_arg(&file)?)?;
            if cli.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&outline)?)?;
            } else {
                write!(out, "{}", outline.to_text())?;
            }
        }
        Command::Search {
            query,
            max_clusters,
            expand,
            context_file,
        } => {
            let wants = |name: &str| expand.iter().any(|e| e == name || e == "all");
            for name in &expand {
                if !["callers", "callees", "type-family", "all"].contains(&name.as_str()) {
                    return Err(Failure {
                        message: format!(
                            "--expand takes callers, callees, type-family or all, not `{name}`"
                        ),
                        status: 2,
                    });
                }
            }
            let options = SearchOptions {
                max_clusters,
                expand: Expand {
                    callers: wants("callers"),
                    callees: wants("callees"),
                    type_family: wants("type-family"),
                },
                context_file: match context_file {
                    Some(file) => Some(service.resolve_file(&file_arg(&file)?)?),
                    None => None,
                },
                ..SearchOptions::default()
            };
            let answer = service.search(&query, &options)?;
            if cli.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&answer)?)?;
            } else {
                write!(out, "{}", answer.to_text())?;
            }
        }
        Command::Show { symbol } => {
            let source = service.symbol_source(&symbol_arg(&symbol))?;
            if cli.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&source)?)?;
            } else {
                write!(out, "{}", source.to_text())?;
            }
        }
        Command::Read {
            file,
            start_line,
            end_line,
            import_depth,
            show_available,
        } => {
            let options = ReadOptions {
                start_line,
                end_line,
                import_depth,
                show_available,
                log: false,
                ..ReadOptions::default()
            };
            write!(
                out,
                "{}",
                service.read_with_options(&file_arg(&file)?, &options)?
            )?
        }
        Command::Warnings { file } => {
            let file = file.as_deref().map(file_arg).transpose()?;
            print_warnings(&mut out, &service.warnings(file.as_deref())?, cli.json)?
        }
        Command::Impact { base, depth } => {
            let impact = service.impact(base.as_deref(), depth)?;
            if cli.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&impact)?)?;
            } else {
                write!(out, "{}", impact.to_text(service.answer_token_limit()))?;
            }
        }
        Command::Serve { .. }
        | Command::Hook { .. }
        | Command::Project { .. }
        | Command::Collection { .. }
        | Command::Git { .. }
        | Command::Cache { .. }
        | Command::Ops(_) => {}
        Command::Watch { trace, dump } => {
            drop(out);
            watch(service, cli.json, trace, dump);
        }
        Command::Explain {
            target,
            dump: Some(dir),
        } => {
            let file = target.as_deref().map(file_arg).transpose()?;
            let summary = service
                .explain_dump(file.as_deref())?
                .write(&dir)
                .map_err(|e| Failure {
                    message: format!("cannot write the dump to {}: {e}", dir.display()),
                    status: 1,
                })?;
            if cli.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&summary)?)?;
            } else {
                writeln!(
                    out,
                    "wrote derivations of {} tuples for {} file(s) to {}",
                    summary.tuples, summary.files, summary.directory
                )?;
            }
        }
        Command::Explain { target, dump: None } => {
            let explanation = service.explain(target.as_deref().unwrap_or_default())?;
            if cli.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&explanation)?)?;
            } else {
                write!(out, "{}", explanation.to_text())?;
            }
        }
        Command::Query { pattern } => {
            let result = service.query(&pattern)?;
            if cli.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&result)?)?;
            } else {
                write!(out, "{}", text::query(&result, &result.tuples))?;
                writeln!(out, "{} tuples", result.tuples.len())?;
            }
        }
    }
    // The process ends here: skip tearing down the database, once the
    // warm-start cache is written.
    service.flush_warm();
    std::mem::forget(service);
    Ok(())
}

/// A FILE argument of any command, root-relative: from the working
/// directory when it names a file there inside the root (`cd app && xfile
/// outline ../models.py`), else from the root; absolute paths too (see
/// `workspace::resolve_cli_path`). Every command that takes a FILE takes
/// it through this, so that they all agree.
fn file_arg(root: &std::path::Path, file: &str) -> Result<String, Failure> {
    Ok(workspace::resolve_cli_path(
        root,
        &std::env::current_dir()?,
        file,
    )?)
}

/// A SYMBOL argument: the path of `path::Qualified.name` taken as a FILE
/// argument ([`file_arg`]); a path that does not resolve, and every other
/// form, go on unchanged, for the service to answer (or refuse) as ever.
fn symbol_arg(root: &std::path::Path, symbol: &str) -> String {
    match symbol.trim().split_once("::") {
        Some((path, qualname)) => match file_arg(root, path) {
            Ok(path) => format!("{path}::{qualname}"),
            Err(_) => symbol.to_string(),
        },
        None => symbol.to_string(),
    }
}

/// A PATH of `git log` and `git diff`, which may name a directory or a
/// file that exists only in history: from the working directory when it
/// names something there inside the root, as [`file_arg`] does, else
/// unchanged (root-relative or absolute, checked by the git side).
fn history_arg(root: &std::path::Path, path: &str) -> Result<String, Failure> {
    let cwd = std::env::current_dir()?;
    let here = cwd.join(path);
    let inside = here
        .canonicalize()
        .is_ok_and(|canonical| canonical.starts_with(root));
    Ok(match here.to_str() {
        Some(absolute) if !std::path::Path::new(path).is_absolute() && inside => {
            absolute.to_string()
        }
        _ => path.to_string(),
    })
}

/// Runs the watcher until the process is interrupted.
fn watch(service: Service, json: bool, trace: bool, dump: Option<PathBuf>) -> ! {
    let tracker = Mutex::new(GraphTracker::new(&service));
    let live = Live::new(service);
    let read = live.clone();
    let watcher = Watch::start(live, watch::Options::default(), move |report| {
        let changes = tracker
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .update(&read, report);
        let mut out = std::io::stdout().lock();
        let _ = if json {
            let update = WatchUpdate {
                update: report.update,
                trigger: &report.trigger,
                finished_at: &report.finished_at,
                added: &report.added,
                modified: &report.modified,
                removed: &report.removed,
                reloaded: report.reloaded,
                changes: &changes,
                trace: trace.then_some(Trace {
                    unchanged: report.unchanged,
                    rescanned: report.rescanned,
                    layout_changed: report.layout_changed,
                    datalog_rerun: report.datalog_rerun,
                    queries: &report.queries,
                    durations: &report.durations,
                }),
            };
            serde_json::to_string(&update)
                .map_err(std::io::Error::other)
                .and_then(|line| writeln!(out, "{line}"))
        } else {
            print_update(&mut out, report, &changes, trace)
        };
        let _ = out.flush();
        if let Some(dir) = &dump
            && let Err(error) = dump_update(&read, report, dir)
        {
            eprintln!("xfile: cannot write the dump to {}: {error}", dir.display());
        }
    });
    // The first status is settled once the initial catch-up walk is done.
    std::thread::sleep(Duration::from_millis(200));
    let status = watcher.status();
    eprintln!(
        "watching {} directories ({}); press Ctrl-C to stop",
        status.watched_dirs, status.mode
    );
    loop {
        std::thread::park();
    }
}

/// One line of `watch --json`: an update's files and graph changes, and
/// with `--trace` what it recomputed.
#[derive(Serialize)]
struct WatchUpdate<'a> {
    update: u64,
    trigger: &'a str,
    finished_at: &'a str,
    added: &'a [String],
    modified: &'a [String],
    removed: &'a [String],
    reloaded: bool,
    #[serde(flatten)]
    changes: &'a GraphChanges,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace: Option<Trace<'a>>,
}

#[derive(Serialize)]
struct Trace<'a> {
    unchanged: usize,
    rescanned: bool,
    layout_changed: bool,
    datalog_rerun: bool,
    queries: &'a crate::engine::Recomputation,
    durations: &'a UpdateTimings,
}

/// Writes `DIR/update-<n>/recomputation.{json,txt}` and the derivations of
/// the files the update added or modified (as `explain --dump` does).
fn dump_update(live: &Live, report: &UpdateReport, dir: &std::path::Path) -> std::io::Result<()> {
    let dir = dir.join(format!("update-{}", report.update));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join("recomputation.json"),
        serde_json::to_string_pretty(report).map_err(std::io::Error::other)? + "\n",
    )?;
    let mut text = Vec::new();
    print_files(&mut text, report)?;
    print_trace(&mut text, report)?;
    std::fs::write(dir.join("recomputation.txt"), text)?;
    for file in report.added.iter().chain(&report.modified) {
        live.read(|s| match s.explain_dump(Some(file)) {
            Ok(dump) => dump.write(&dir).map(drop),
            // Gone again since the update: nothing to explain.
            Err(_) => Ok(()),
        })?;
    }
    Ok(())
}

fn print_update(
    out: &mut impl Write,
    report: &UpdateReport,
    changes: &GraphChanges,
    trace: bool,
) -> std::io::Result<()> {
    print_files(out, report)?;
    if changes.relationships.is_empty() && changes.warnings.is_empty() {
        writeln!(out, "  no relationship or warning changed")?;
    }
    print_changes(out, "relationships", &changes.relationships, |e| {
        let symbol = e
            .target_symbol
            .as_deref()
            .map_or(String::new(), |s| format!("{s} "));
        let defined_in = match &e.defined_in {
            Some(file) if *file != e.target_file => format!(" (defined in {file})"),
            _ => String::new(),
        };
        format!(
            "{}:{}  {}  {symbol}-> {}{defined_in}",
            e.source_file,
            e.line_number,
            e.relationship_type.as_str(),
            e.target_file
        )
    })?;
    print_changes(out, "warnings", &changes.warnings, |w| {
        format!(
            "{}:{}  {}  {}",
            w.file,
            w.line,
            w.warning_type.as_str(),
            w.pattern
        )
    })?;
    if trace {
        print_trace(out, report)?;
    }
    Ok(())
}

/// `update N (trigger): added ..., modified ...`
fn print_files(out: &mut impl Write, r: &UpdateReport) -> std::io::Result<()> {
    let mut changes = Vec::new();
    for (label, files) in [
        ("added", &r.added),
        ("modified", &r.modified),
        ("removed", &r.removed),
    ] {
        if !files.is_empty() {
            changes.push(format!("{label} {}", files.join(", ")));
        }
    }
    if r.reloaded {
        changes.push("configuration changed: re-indexed".into());
    }
    writeln!(
        out,
        "update {} ({}): {}",
        r.update,
        r.trigger,
        changes.join("; ")
    )
}

/// `+ item` / `- item` lines, at most [`crate::service::changes::LISTED`] of
/// each, with
/// how many more there are.
fn print_changes<T>(
    out: &mut impl Write,
    what: &str,
    changes: &Changes<T>,
    line: impl Fn(&T) -> String,
) -> std::io::Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "  {what}: {} added, {} removed",
        changes.added_total, changes.removed_total
    )?;
    for (sign, items, total, verb) in [
        ('+', &changes.added, changes.added_total, "added"),
        ('-', &changes.removed, changes.removed_total, "removed"),
    ] {
        for item in items {
            writeln!(out, "  {sign} {}", line(item))?;
        }
        if total > items.len() {
            writeln!(out, "  ... and {} more {verb}", total - items.len())?;
        }
    }
    Ok(())
}

/// What the update re-ran and reused.
fn print_trace(out: &mut impl Write, r: &UpdateReport) -> std::io::Result<()> {
    writeln!(out, "  executed: {}", r.queries.executed.join(", "))?;
    let reused: Vec<String> = r
        .queries
        .reused
        .iter()
        .map(|(query, n)| format!("{query} x{n}"))
        .collect();
    writeln!(out, "  reused:   {}", reused.join(", "))?;
    let d = &r.durations;
    let datalog = if r.datalog_rerun {
        let stages: Vec<String> = r
            .queries
            .datalog_ms
            .iter()
            .map(|(stage, ms)| format!("{stage} {ms:.1} ms"))
            .collect();
        format!("re-ran: {}", stages.join(", "))
    } else {
        "not re-run".into()
    };
    writeln!(
        out,
        "  datalog {datalog}; total {:.1} ms (read {:.1}, parse {:.1}, analyze {:.1})",
        d.total_ms, d.read_ms, d.parse_ms, d.analyze_ms
    )
}

fn open(root: &std::path::Path) -> Result<Service, Failure> {
    let spinner = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(100));
        Some(bar)
    } else {
        None
    };
    let service = Service::open_with_progress(root, &|phase| {
        if let Some(bar) = &spinner {
            bar.set_message(phase.to_string());
        }
    });
    if let Some(bar) = spinner {
        bar.finish_and_clear();
    }
    let service = service?;
    if let Some(notice) = &service.warm_start().notice {
        eprintln!("xfile: {notice}");
    }
    Ok(service)
}

fn print_warnings(out: &mut impl Write, report: &WarningReport, json: bool) -> Result<(), Failure> {
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(report)?)?;
    } else {
        write!(out, "{}", text::warnings_summary(report, &report.warnings))?;
        write!(out, "{}", text::warning_list(&report.warnings))?;
        let notices = &report.notices;
        write!(out, "{}", text::notices(notices, notices.len()))?;
    }
    Ok(())
}

fn print_relationships(
    out: &mut impl Write,
    relationships: &[Relationship],
    json: bool,
) -> Result<(), Failure> {
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(relationships)?)?;
    } else {
        write!(out, "{}", text::relationships(relationships))?;
        writeln!(out, "{} relationships", relationships.len())?;
    }
    Ok(())
}

fn print_call_graph(
    out: &mut impl Write,
    graph: &crate::service::calls::CallGraph,
    json: bool,
) -> Result<(), Failure> {
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(graph)?)?;
    } else {
        write!(out, "{}", text::call_graph(graph))?;
    }
    Ok(())
}
