//! `xfile serve` in shared mode: finds the user's service of the root, or
//! starts it, and relays bytes between stdin/stdout and its socket
//! without reading them, so the client speaks to the service as it would
//! to a server of its own. When no service can be had (the runtime
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
/// closes stdin, or the service goes away (an error: the client sees the
/// server exit, and the next session starts a new service).
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
    let outcome = runtime.block_on(relay(stream, &place));
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

/// Copies stdin to the service and the service to stdout. When stdin
/// ends (or the process is asked to stop) the service is told by closing
/// the socket's writing side, and has [`CLOSE_WAIT`] to finish.
async fn relay(stream: UnixStream, place: &Place) -> anyhow::Result<()> {
    stream.set_nonblocking(true)?;
    let stream = tokio::net::UnixStream::from_std(stream)?;
    let (mut from_service, mut to_service) = stream.into_split();
    let mut upstream = tokio::spawn(async move {
        let mut stdin = tokio::io::stdin();
        tokio::select! {
            _ = tokio::io::copy(&mut stdin, &mut to_service) => {}
            () = crate::ops::terminated() => {}
        }
        let _ = to_service.shutdown().await;
    });
    let mut downstream = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        let copied = tokio::io::copy(&mut from_service, &mut stdout).await;
        let _ = stdout.flush().await;
        copied
    });
    tokio::select! {
        _ = &mut upstream => {
            if tokio::time::timeout(CLOSE_WAIT, &mut downstream).await.is_err() {
                tracing::warn!("the shared service did not close the session in time");
            }
            Ok(())
        }
        copied = &mut downstream => {
            let why = match copied {
                Ok(Ok(_)) => "the shared service closed the connection".to_string(),
                Ok(Err(error)) => format!("the connection to the shared service failed: {error}"),
                Err(error) => format!("relaying stopped: {error}"),
            };
            anyhow::bail!("{why}; its log is {}", place.log.display())
        }
    }
}
