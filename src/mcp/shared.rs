//! The shared service of one project root (`xfile serve --service`,
//! started by `xfile serve`): one index, watched, for every session of the
//! user on that root. It listens on the root's socket (`rendezvous`),
//! admits connections from the same user only, and runs one MCP session
//! per connection over the same `Projects`, each with its own session
//! state (what it read, for ranking and its metrics record). It leaves
//! after `service_idle_seconds` with no client, removing its socket, lock
//! and pid file (the log stays, for a look at what it did).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::rendezvous::{self, Lock, Place};
use super::{XfileServer, session, tracing_to_stderr, wire};
use crate::ops::metrics::{self, PROCESS_SESSION};
use crate::workspace::config::Config;

/// What a service says first on a connection it admits: the relay knows
/// then that a session begins (a connection refused or dropped as the
/// service leaves sends nothing).
pub(crate) const HELLO: &str = concat!("xfile-service ", env!("CARGO_PKG_VERSION"), "\n");

/// Overrides `service_idle_seconds` (tests, scripts).
pub(crate) const IDLE_ENV: &str = "XFILE_SERVICE_IDLE_SECONDS";

/// How long the sessions still open get to end when the service stops.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// Runs the service of `root` (canonical) until it has had no client for
/// its idle time or is asked to stop. Returns at once when another
/// service of the root holds the lock.
pub fn serve_service(root: PathBuf, no_cache: bool) -> anyhow::Result<()> {
    let place = rendezvous::place(&root, no_cache).map_err(anyhow::Error::msg)?;
    let Some(lock) = Lock::take(&place.lock)? else {
        return Ok(());
    };
    log_to(&place.log);
    tracing_to_stderr();
    // Sessions are the connections': nothing is the process's own.
    metrics::global().close_session(PROCESS_SESSION);
    let outcome = run_service(root, &place, lock);
    if let Err(error) = &outcome {
        tracing::error!("the shared service stopped: {error:#}");
    }
    outcome
}

/// The service's log is started again (the last one kept as `.old`) once
/// past this size, checked at each new connection: the runtime directory
/// is often in memory, and a service may run for days.
const LOG_BYTES: u64 = 8 * 1024 * 1024;

/// Starts the log again if it has grown past [`LOG_BYTES`].
fn rotate_log(path: &Path) {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.len() > LOG_BYTES) {
        log_to(path);
    }
}

/// Sends this process's stderr (the log, panics) to the service's log.
fn log_to(path: &Path) {
    use std::os::fd::AsRawFd;
    match rendezvous::open_log(path) {
        // SAFETY: dup2 onto stderr with a descriptor we own; `file` stays
        // open until the call returns.
        Ok(file) => unsafe {
            libc::dup2(file.as_raw_fd(), libc::STDERR_FILENO);
        },
        Err(error) => eprintln!("cannot open the log {}: {error}", path.display()),
    }
}

/// The idle time: the environment's override, else the root's
/// configuration.
fn idle_time(root: &Path) -> Duration {
    let configured = Config::load(root).0.service_idle_seconds;
    let seconds = match std::env::var(IDLE_ENV)
        .ok()
        .map(|v| v.trim().parse::<u64>())
    {
        None => configured,
        Some(Ok(seconds)) if seconds > 0 => seconds,
        Some(_) => {
            tracing::warn!("{IDLE_ENV} is not a whole number above 0; using {configured}");
            configured
        }
    };
    Duration::from_secs(seconds)
}

fn run_service(root: PathBuf, place: &Place, lock: Lock) -> anyhow::Result<()> {
    let mut lock = Some(lock);
    let outcome = serve_socket(root, place, &mut lock);
    // Whatever stopped the service, the root is free for the next one.
    if let Some(lock) = lock {
        lock.remove();
    }
    outcome
}

fn serve_socket(root: PathBuf, place: &Place, lock: &mut Option<Lock>) -> anyhow::Result<()> {
    rendezvous::clear_socket(&place.socket).map_err(anyhow::Error::msg)?;
    let idle = idle_time(&root);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(async {
        let listener = UnixListener::bind(&place.socket)?;
        std::fs::set_permissions(&place.socket, std::fs::Permissions::from_mode(0o600))?;
        let bound = std::fs::symlink_metadata(&place.socket)?;
        rendezvous::write_pid(&place.pid)?;
        tracing::info!(
            root = %root.display(),
            socket = %place.socket.display(),
            idle_seconds = idle.as_secs(),
            "xfile shared service starting"
        );
        let server = XfileServer::new(root);
        server.start_indexing();
        let stop = CancellationToken::new();
        let mut sessions = tokio::task::JoinSet::new();
        let why = accept(&listener, &server, idle, &stop, &mut sessions, &place.log).await;
        tracing::info!("the shared service leaves: {why}");
        // New clients start another service from here on: its socket
        // gone, the lock free, while this one ends the sessions it has.
        if std::fs::symlink_metadata(&place.socket)
            .is_ok_and(|now| now.dev() == bound.dev() && now.ino() == bound.ino())
        {
            let _ = std::fs::remove_file(&place.socket);
        }
        drop(listener);
        if let Some(lock) = lock.take() {
            lock.remove();
        }
        stop.cancel();
        let _ = tokio::time::timeout(CLOSE_WAIT, async {
            while sessions.join_next().await.is_some() {}
        })
        .await;
        anyhow::Ok(())
    });
    remove_own_pid(&place.pid);
    // Work running ahead (hot spots, blames) is not waited for.
    runtime.shutdown_background();
    outcome
}

/// Removes the pid file if it still names this process (a service that
/// started after this one left may have written its own).
fn remove_own_pid(path: &Path) {
    let own = std::process::id().to_string();
    if std::fs::read_to_string(path).is_ok_and(|text| text.trim() == own) {
        let _ = rendezvous::remove_if_present(path);
    }
}

/// Accepts connections, each a session in `sessions` ended by `stop`,
/// until the service has been idle for `idle` or is asked to stop; says
/// why it stopped.
async fn accept(
    listener: &UnixListener,
    server: &XfileServer,
    idle: Duration,
    stop: &CancellationToken,
    sessions: &mut tokio::task::JoinSet<()>,
    log: &Path,
) -> &'static str {
    let (clients, mut count) = watch::channel(0usize);
    let clients = Arc::new(clients);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    if !admitted(&stream) {
                        continue;
                    }
                    rotate_log(log);
                    let client = Client::counted(&clients);
                    sessions.spawn(connection(server.clone(), stream, stop.clone(), client));
                }
                Err(error) => {
                    // Out of descriptors, say: wait rather than spin.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            () = idle_for(&mut count, idle) => return "no client for the idle time",
            () = crate::ops::terminated() => return "asked to stop",
            Some(_) = sessions.join_next(), if !sessions.is_empty() => {}
        }
    }
}

/// Whether the peer runs as this user: another user never gets a session,
/// whatever the socket's permissions.
fn admitted(stream: &UnixStream) -> bool {
    let own = rendezvous::effective_uid();
    match stream.peer_cred() {
        Ok(peer) if peer.uid() == own => true,
        Ok(peer) => {
            tracing::warn!(uid = peer.uid(), "refused a connection from another user");
            false
        }
        Err(error) => {
            tracing::warn!(%error, "refused a connection whose user is unknown");
            false
        }
    }
}

/// Resolves once no client has been connected for `idle`.
async fn idle_for(count: &mut watch::Receiver<usize>, idle: Duration) {
    loop {
        if count.wait_for(|n| *n == 0).await.is_err() {
            return std::future::pending().await;
        }
        if tokio::time::timeout(idle, count.wait_for(|n| *n > 0))
            .await
            .is_err()
        {
            return;
        }
    }
}

/// A connected client, counted while it lives.
struct Client(Arc<watch::Sender<usize>>);

impl Client {
    fn counted(clients: &Arc<watch::Sender<usize>>) -> Client {
        clients.send_modify(|n| *n += 1);
        Client(clients.clone())
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// One client's MCP session, until it closes its side or the service
/// stops. Its metrics record is written before the connection closes, so
/// a client that sees the end can read it.
async fn connection(
    server: XfileServer,
    mut stream: UnixStream,
    stop: CancellationToken,
    _client: Client,
) {
    if let Err(error) = stream.write_all(HELLO.as_bytes()).await {
        tracing::debug!(%error, "a client left before its session began");
        return;
    }
    let id = metrics::global().begin_session();
    let server = server.in_session(id);
    let projects = server.projects.clone();
    let (read, write) = stream.into_split();
    let wire = wire::Wire::over(read, write);
    let ended = tokio::select! {
        ended = session(server, &wire) => ended,
        () = stop.cancelled() => Ok(None),
    };
    let client = match ended {
        Ok(client) => client,
        Err(error) => {
            tracing::warn!(session = id, "a session ended with an error: {error}");
            None
        }
    };
    // A hook's call is one question of the agent's session, not a session
    // of its own: it leaves no record to skew the sessions' statistics.
    if client.as_deref() != Some(super::hook::CLIENT_NAME) {
        projects.end_session(id).await;
    }
    metrics::global().close_session(id);
    wire.finish().await;
}
