//! The HTTP side's connections: at most
//! [`Limits::connections`] at once (one more is answered 503 and closed at
//! once, so file descriptors never run out), and none is kept by a client
//! that stops sending or reading: a request's head must arrive within
//! [`Limits::idle`] of the connection opening or of the previous answer
//! (which also ends idle keep-alive connections), and an answer that the
//! client has not taken a byte of for as long is abandoned.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Sleep;

use crate::ops::metrics;

/// How long a client may stay silent, by default.
const IDLE: Duration = Duration::from_secs(10);
/// Connections served at once, by default: a browser opens six at most.
const CONNECTIONS: usize = 64;
/// The environment variables that change them (a test's short timeout).
pub(super) const IDLE_VAR: &str = "XFILE_HTTP_IDLE_TIMEOUT_MS";
pub(super) const CONNECTIONS_VAR: &str = "XFILE_HTTP_MAX_CONNECTIONS";

/// What one client may take of the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Limits {
    /// Silence allowed: to send a request's head, or to take an answer.
    pub idle: Duration,
    /// Connections served at once.
    pub connections: usize,
}

impl Limits {
    /// The defaults, or what [`IDLE_VAR`] and [`CONNECTIONS_VAR`] say
    /// (a value that is no positive number is ignored, with a warning).
    pub fn from_env() -> Limits {
        let positive = |name: &str| -> Option<u64> {
            let value = std::env::var(name).ok()?;
            match value.trim().parse::<u64>() {
                Ok(n) if n > 0 => Some(n),
                _ => {
                    eprintln!("xfile: warning: {name}={value:?} is no positive number; ignored");
                    None
                }
            }
        };
        Limits {
            idle: positive(IDLE_VAR).map_or(IDLE, Duration::from_millis),
            connections: positive(CONNECTIONS_VAR)
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(CONNECTIONS),
        }
    }
}

/// Serves `app` on `listener` until the process ends.
pub(super) async fn serve(listener: TcpListener, app: Router, limits: Limits) {
    let permits = Arc::new(Semaphore::new(limits.connections));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of file descriptors, most likely: wait for some to
                // be closed rather than spin.
                metrics::global().record_error("http");
                tracing::warn!("the HTTP side cannot accept a connection: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            refuse(&stream);
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.idle)
                .keep_alive(true);
            let io = TokioIo::new(Stalling::new(stream, limits.idle));
            if let Err(error) = builder.serve_connection(io, service).await {
                tracing::debug!("HTTP connection ended: {error}");
            }
            drop(permit);
        });
    }
}

/// A connection over the limit: told so, if its buffer takes it, and
/// closed without waiting.
fn refuse(stream: &TcpStream) {
    const WHY: &str = "too many connections; try again later\n";
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\nretry-after: 1\r\n\r\n{WHY}",
        WHY.len()
    );
    let _ = stream.try_write(answer.as_bytes());
}

/// A stream whose writes fail once the peer has taken nothing for `limit`
/// (a client that asks and never reads holds no connection for long).
struct Stalling {
    stream: TcpStream,
    limit: Duration,
    /// Set while a write waits for room.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl Stalling {
    fn new(stream: TcpStream, limit: Duration) -> Stalling {
        Stalling {
            stream,
            limit,
            stalled: None,
        }
    }

    /// After a write that found no room: an error once that has lasted
    /// `limit`, else pending.
    fn waited<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let limit = self.limit;
        let sleep = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client took no part of the answer in time",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progressed<T>(
        &mut self,
        done: Poll<io::Result<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        match done {
            Poll::Pending => self.waited(cx),
            ready => {
                self.stalled = None;
                ready
            }
        }
    }
}

impl AsyncRead for Stalling {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Stalling {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let done = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.progressed(done, cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let done = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.progressed(done, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let done = Pin::new(&mut this.stream).poll_flush(cx);
        this.progressed(done, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
