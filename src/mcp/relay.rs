//! `xfile serve` in shared mode: finds the user's service of the root, or
//! starts it, and relays messages between stdin/stdout and its socket as
//! they are, so the client speaks to the service as it would to a server
//! of its own. It reads only what it needs to hand the session to
//! another service if this one goes away: how the session opened, and
//! which requests wait. When no service can be had (the runtime
//! directory is unsafe, the service does not come up), it serves
//! standalone and says why on stderr.

use std::io::{self, Read};

use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;

use super::rendezvous::{self, Place};
use super::shared::HELLO;
use super::tracing_to_stderr;

/// How long a session waits for a service to come up (it binds its socket
/// before it indexes, so this is process start-up, not indexing).
const START_WAIT: Duration = Duration::from_secs(10);
/// How long a service has to greet an accepted connection.
const HELLO_WAIT: Duration = Duration::from_secs(5);
/// Services started at most per session: one that loses the race for the
/// lock to a service that is leaving is started again.
const MAX_STARTS: usize = 3;
/// After the client closes its side: how long the service has to send
/// its last replies and write the session's record.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// Serves `root` (canonical) through its shared service until the client
/// closes stdin. A service that goes away meanwhile is replaced (a few
/// times at most; then the session ends with an error).
pub fn serve_shared(root: PathBuf, no_cache: bool) -> anyhow::Result<()> {
    tracing_to_stderr();
    let found = rendezvous::place(&root, no_cache)
        .and_then(|place| Ok((connect_or_start(&root, &place, no_cache)?, place)));
    let (stream, place) = match found {
        Ok(found) => found,
        Err(why) => {
            tracing::warn!(
                "cannot share a service for {}: {why}; serving standalone \
                 (pass --standalone to skip sharing)",
                root.display()
            );
            return super::serve(root, None);
        }
    };
    tracing::info!(
        socket = %place.socket.display(),
        "serving {} through the shared service (its log: {})",
        root.display(),
        place.log.display()
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(relay(stream, &root, &place, no_cache));
    // A blocking read of stdin cannot be cancelled: the process exits
    // without it.
    runtime.shutdown_background();
    outcome
}

/// A greeted connection to the service, starting it when none answers.
pub(super) fn connect_or_start(
    root: &Path,
    place: &Place,
    no_cache: bool,
) -> Result<UnixStream, String> {
    let deadline = Instant::now() + START_WAIT;
    let mut started: Option<Child> = None;
    let mut starts = 0;
    loop {
        let failure = match connect(place) {
            Ok(stream) => {
                if let Some(child) = started {
                    reap(child);
                }
                return Ok(stream);
            }
            Err(error) => error,
        };
        let running = match started.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        };
        if !running && starts < MAX_STARTS {
            started = Some(start(root, no_cache).map_err(|error| {
                format!("cannot start the service (xfile serve --service): {error}")
            })?);
            starts += 1;
        }
        if Instant::now() >= deadline {
            if let Some(child) = started {
                reap(child);
            }
            return Err(format!(
                "no service answered on {} within {} s ({failure}); its log is {}",
                place.socket.display(),
                START_WAIT.as_secs(),
                place.log.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Connects and reads the service's greeting.
fn connect(place: &Place) -> io::Result<UnixStream> {
    let mut stream = UnixStream::connect(&place.socket)?;
    stream.set_read_timeout(Some(HELLO_WAIT))?;
    let mut greeting = Vec::with_capacity(HELLO.len());
    let mut byte = [0u8];
    while greeting.len() < HELLO.len() && greeting.last() != Some(&b'\n') {
        if stream.read(&mut byte)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "the service closed the connection before greeting",
            ));
        }
        greeting.push(byte[0]);
    }
    if greeting != HELLO.as_bytes() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "something other than an xfile service answered",
        ));
    }
    stream.set_read_timeout(None)?;
    Ok(stream)
}

/// Starts `xfile serve --service` for the root, detached: a session of
/// its own (no terminal's signals reach it), no stdio, working in `/`.
fn start(root: &Path, no_cache: bool) -> io::Result<Child> {
    let mut command = Command::new(std::env::current_exe()?);
    command
        .args(["serve", "--service", "--root"])
        .arg(root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .current_dir("/");
    if no_cache {
        command.arg("--no-cache");
    }
    // SAFETY: setsid is async-signal-safe and touches no memory of the
    // parent, as a function run between fork and exec must.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.spawn()
}

/// Waits for a started service on a thread of its own, so one that exits
/// while this session runs leaves no zombie behind.
fn reap(mut child: Child) {
    std::thread::spawn(move || child.wait());
}

/// Client lines inspected whole at most: a longer one (which the service
/// refuses anyway) is passed on in pieces, unread.
const INSPECTED_LINE: u64 = 1 << 20;
/// Services replaced at most in one session: a service that dies at once
/// every time is not started again and again.
const MAX_REPLACED: usize = 3;
/// The id of the `initialize` replayed to a replacement service; its
/// answer is the relay's, not the client's.
const REPLAYED_ID: &str = "xfile-relay-initialize";

/// What the relay must know of the session to hand it to another service:
/// how the client opened it, and which requests wait for an answer.
#[derive(Default)]
struct Session {
    initialize: Option<serde_json::Value>,
    initialized: Option<Vec<u8>>,
    /// The ids of requests sent and not answered yet, as JSON text.
    waiting: std::collections::BTreeSet<String>,
}

/// The fields of a JSON-RPC message the relay looks at.
#[derive(serde::Deserialize)]
struct Head {
    id: Option<serde_json::Value>,
    method: Option<String>,
}

impl Session {
    /// Notes what a whole client line says: the session's opening, a
    /// request now waiting.
    fn client_line(&mut self, line: &[u8]) {
        let Ok(head) = serde_json::from_slice::<Head>(line) else {
            return;
        };
        match (head.method.as_deref(), head.id) {
            (Some("initialize"), Some(_)) => {
                self.initialize = serde_json::from_slice(line).ok();
            }
            (Some("notifications/initialized"), None) => self.initialized = Some(line.to_vec()),
            (Some(_), Some(id)) => {
                self.waiting.insert(id.to_string());
            }
            _ => {}
        }
    }

    /// Whether a service line is for the client (not the answer to the
    /// replayed `initialize`), noting the request it answers.
    fn service_line(&mut self, line: &[u8]) -> bool {
        let Ok(head) = serde_json::from_slice::<Head>(line) else {
            return true;
        };
        match (head.method, head.id) {
            (None, Some(id)) if id.as_str() == Some(REPLAYED_ID) => false,
            (None, Some(id)) => {
                self.waiting.remove(&id.to_string());
                true
            }
            _ => true,
        }
    }
}

/// What the client sent, as read: a whole line, or a piece of one longer
/// than [`INSPECTED_LINE`].
struct Piece {
    bytes: Vec<u8>,
    /// Whether it begins a message (the previous piece ended a line), so
    /// that only a line read from its start is looked at.
    starts_message: bool,
}

/// Reads stdin into `pieces` until it ends (the channel then closes) or
/// the relay is gone.
async fn read_client(pieces: tokio::sync::mpsc::Sender<Piece>) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut starts_message = true;
    loop {
        let mut bytes = Vec::new();
        match (&mut stdin)
            .take(INSPECTED_LINE)
            .read_until(b'\n', &mut bytes)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let ends_line = bytes.last() == Some(&b'\n');
        if pieces
            .send(Piece {
                bytes,
                starts_message,
            })
            .await
            .is_err()
        {
            return;
        }
        starts_message = ends_line;
    }
}

/// Relays between stdin/stdout and the service, one line (one JSON-RPC
/// message) at a time. When the service goes away while the client is
/// still there, another is found or started and given the session's
/// `initialize` again; requests it had not answered get an error saying to
/// ask again. When stdin ends (or the process is asked to stop) the
/// service is told by closing the socket's writing side, and has
/// [`CLOSE_WAIT`] to finish.
async fn relay(
    stream: UnixStream,
    root: &Path,
    place: &Place,
    no_cache: bool,
) -> anyhow::Result<()> {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let session = std::sync::Arc::new(tokio::sync::Mutex::new(Session::default()));
    // Client lines come through a channel from a task of their own: a
    // read cut short when the service goes away would lose what it had
    // read of a line, and the request in it would never be answered.
    let (pieces, mut from_client) = tokio::sync::mpsc::channel(1);
    tokio::spawn(read_client(pieces));
    let mut stdout = tokio::io::stdout();
    let mut stream = stream;
    let mut replaced = 0;
    let mut replay: Option<Vec<Vec<u8>>> = None;
    loop {
        stream.set_nonblocking(true)?;
        let connection = tokio::net::UnixStream::from_std(stream)?;
        let (from_service, mut to_service) = connection.into_split();
        for line in replay.take().unwrap_or_default() {
            to_service.write_all(&line).await?;
        }
        let reading = session.clone();
        let mut downstream = tokio::spawn(async move {
            let mut from_service = BufReader::new(from_service);
            let mut line = Vec::new();
            loop {
                line.clear();
                match from_service.read_until(b'\n', &mut line).await {
                    Ok(0) => return (stdout, Ok(())),
                    Ok(_) => {}
                    Err(error) => return (stdout, Err(error)),
                }
                if reading.lock().await.service_line(&line) {
                    if let Err(error) = stdout.write_all(&line).await {
                        return (stdout, Err(error));
                    }
                    let _ = stdout.flush().await;
                }
            }
        });
        let lost = loop {
            tokio::select! {
                piece = from_client.recv() => {
                    let Some(piece) = piece else {
                        let _ = to_service.shutdown().await;
                        if tokio::time::timeout(CLOSE_WAIT, &mut downstream).await.is_err() {
                            tracing::warn!("the shared service did not close the session in time");
                        }
                        return Ok(());
                    };
                    if piece.starts_message {
                        session.lock().await.client_line(&piece.bytes);
                    }
                    if to_service.write_all(&piece.bytes).await.is_err() {
                        break (&mut downstream).await.ok();
                    }
                }
                ended = &mut downstream => break ended.ok(),
                () = crate::ops::terminated() => {
                    let _ = to_service.shutdown().await;
                    let _ = tokio::time::timeout(CLOSE_WAIT, &mut downstream).await;
                    return Ok(());
                }
            }
        };
        let Some((given_back, _)) = lost else {
            anyhow::bail!(
                "relaying stopped; the service's log is {}",
                place.log.display()
            );
        };
        stdout = given_back;
        replaced += 1;
        if replaced > MAX_REPLACED {
            anyhow::bail!(
                "the shared service went away {MAX_REPLACED} times; its log is {}",
                place.log.display()
            );
        }
        tracing::warn!("the shared service went away; starting another");
        let mut held = session.lock().await;
        let waiting = std::mem::take(&mut held.waiting);
        for id in waiting {
            let error = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":-32603,\
                 \"message\":\"the shared service restarted before answering; ask again\"}}}}\n"
            );
            stdout.write_all(error.as_bytes()).await?;
        }
        stdout.flush().await?;
        let mut lines = Vec::new();
        if let Some(mut initialize) = held.initialize.clone() {
            initialize["id"] = serde_json::Value::from(REPLAYED_ID);
            lines.push(format!("{initialize}\n").into_bytes());
        }
        if let Some(initialized) = held.initialized.clone() {
            lines.push(initialized);
        }
        drop(held);
        replay = Some(lines);
        let (root, place_again, no_cache) = (root.to_path_buf(), place.clone(), no_cache);
        stream =
            tokio::task::spawn_blocking(move || connect_or_start(&root, &place_again, no_cache))
                .await?
                .map_err(|why| anyhow::anyhow!("{why}"))?;
    }
}
