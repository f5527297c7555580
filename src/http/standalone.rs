//! `xfile dashboard`: the HTTP side for one project without an MCP
//! server: indexed in the background, then watched, until interrupted.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::{ProjectState, Source};
use crate::ops::metrics;
use crate::service::live::Live;
use crate::watch::{self, Watch};

struct Standalone {
    name: String,
    root: PathBuf,
    /// The index once built, or why it failed.
    index: Mutex<Option<Result<Arc<Live>, String>>>,
    watch: Mutex<Option<Watch>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Source for Standalone {
    fn projects(&self) -> Vec<ProjectState> {
        let index = lock(&self.index).clone();
        vec![ProjectState {
            name: self.name.clone(),
            root: self.root.clone(),
            live: index.as_ref().and_then(|i| i.as_ref().ok()).cloned(),
            failure: index.and_then(Result::err),
            watcher: lock(&self.watch).as_ref().map(Watch::status),
        }]
    }
}

impl Standalone {
    /// Indexes, then watches, on a thread of its own.
    fn start(self: &Arc<Self>) {
        let this = self.clone();
        std::thread::spawn(move || {
            let opened = Live::open(&this.root);
            let live = match opened {
                Ok(live) => live,
                Err(error) => {
                    tracing::error!("indexing failed: {error}");
                    *lock(&this.index) = Some(Err(error.to_string()));
                    return;
                }
            };
            *lock(&this.index) = Some(Ok(live.clone()));
            let root = this.root.clone();
            let watcher = Watch::start(live, watch::Options::default(), move |report| {
                metrics::global().record_update(&root, report);
            });
            *lock(&this.watch) = Some(watcher);
        });
    }
}

/// Serves the dashboard, `/metrics` and `/health` of the project at `root`
/// (canonical) until the process is stopped.
pub fn dashboard(root: PathBuf, addr: Option<SocketAddr>) -> anyhow::Result<()> {
    crate::mcp::tracing_to_stderr();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "root".to_string());
        let project = Arc::new(Standalone {
            name,
            root,
            index: Mutex::new(None),
            watch: Mutex::new(None),
        });
        project.start();
        super::spawn(addr, project).await?;
        crate::ops::terminated().await;
        Ok(())
    })
}
