//! Operations: what whoever runs xfile uses to see what it does and to set
//! it up, beside the agent's tools. Session metrics and their analysis,
//! the process's counters for `/metrics`, `doctor` and
//! `setup`. An adapter layer like `cli` and `mcp`: it uses the service,
//! the service knows nothing of it.

pub mod analyze;
pub mod doctor;
pub mod logs;
pub mod metrics;
pub mod session;
pub mod setup;
pub mod stats;

use std::path::PathBuf;
use std::sync::Arc;

use crate::service::live::Live;

/// Writes `session`'s metrics record of each served project whose index
/// is ready (a project still indexing did nothing to report), off the
/// async workers.
pub async fn end_sessions(
    session: metrics::SessionId,
    projects: Vec<(String, PathBuf, Arc<Live>)>,
) {
    let written = tokio::task::spawn_blocking(move || {
        for (name, root, live) in projects {
            let log = metrics::global().take_session(session, &root);
            let record = live.read(|s| session::record(&name, s, &log));
            if let Err(error) = session::append(&root, &record) {
                // Logged, never fatal.
                metrics::global().record_error("metrics_write");
                tracing::warn!("cannot write the session metrics of {name}: {error}");
            }
        }
    })
    .await;
    if let Err(error) = written {
        tracing::warn!("writing the session metrics stopped: {error}");
    }
}

/// Resolves when the process is asked to stop (SIGTERM or Ctrl-C), so a
/// server being shut down still ends its sessions.
pub async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
