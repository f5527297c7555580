//! `xfile serve` spoken to in raw bytes, for hostile traffic: nothing is
//! assumed about what the server sends except that each line is JSON.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A server spoken to in raw bytes; its stdout read line by line on a
/// thread, every line required to be JSON.
pub struct Raw {
    child: Child,
    /// Its own runtime directory (see `mcp_client`); dropped after the child.
    _runtime: super::runtime::Runtime,
    stdin: Option<ChildStdin>,
    lines: Receiver<Result<Value, String>>,
    /// Messages read while waiting for another reply.
    pending: Vec<Value>,
}

impl Raw {
    pub fn start(root: &Path) -> Raw {
        let runtime = super::runtime::Runtime::new();
        let mut child = Command::new(env!("CARGO_BIN_EXE_xfile"))
            .envs(runtime.env())
            .args(["serve", "--root"])
            .arg(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("server starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { return };
                let parsed = serde_json::from_str::<Value>(&line).map_err(|_| line);
                if send.send(parsed).is_err() {
                    return;
                }
            }
        });
        Raw {
            child,
            _runtime: runtime,
            stdin,
            lines,
            pending: Vec::new(),
        }
    }

    pub fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("connected");
        stdin.write_all(bytes).expect("server reads");
        stdin.write_all(b"\n").expect("server reads");
        stdin.flush().expect("server reads");
    }

    pub fn send(&mut self, message: &Value) {
        self.write(message.to_string().as_bytes());
    }

    /// The message that answers `id`, from those already read or the next
    /// ones (others are kept for [`Raw::drain`]); panics on a line that is
    /// not JSON, on the server's exit, or after a minute.
    pub fn reply(&mut self, id: &Value) -> Value {
        if let Some(at) = self.pending.iter().position(|m| m.get("id") == Some(id)) {
            return self.pending.remove(at);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(Ok(message)) if message.get("id") == Some(id) => return message,
                Ok(Ok(other)) => self.pending.push(other),
                Ok(Err(line)) => panic!("stdout carried a line that is not JSON: {line:.200}"),
                Err(_) => panic!(
                    "no reply to id {id} within a minute (server alive: {})",
                    self.alive()
                ),
            }
        }
    }

    /// Every message that arrives within `wait`.
    pub fn drain(&mut self, wait: Duration) -> Vec<Value> {
        let mut got = std::mem::take(&mut self.pending);
        while let Ok(line) = self.lines.recv_timeout(wait) {
            got.push(line.unwrap_or_else(|l| panic!("not JSON: {l:.200}")));
        }
        got
    }

    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn initialize(&mut self, id: Value) -> Value {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "protocol-test", "version": "0"}}}),
        );
        let reply = self.reply(&id);
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        reply
    }

    pub fn send_and_reply(&mut self, message: Value) -> Value {
        self.send(&message);
        self.reply(&message["id"])
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
