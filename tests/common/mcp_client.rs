//! A raw JSON-RPC client for `xfile serve` over stdio. Each client has a
//! runtime directory of its own unless the test names one, so its session
//! goes through a shared service that no other test reaches.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::{Value, json};

pub struct Client {
    child: Child,
    /// The client's own runtime directory; its services end with it,
    /// after the child (fields drop after `Drop::drop`).
    runtime: Option<super::runtime::Runtime>,
    /// Taken away by [`Client::disconnect`].
    stdin: Option<ChildStdin>,
    /// The server's stdout, line by line, from a reader thread: a server
    /// that hangs fails the test after [`HANG`] instead of hanging it.
    stdout: Receiver<String>,
    next_id: u64,
}

/// How long a request may go unanswered before the test calls it a hang:
/// far beyond any answer on a loaded machine, well within CI's limit.
const HANG: Duration = Duration::from_secs(300);

impl Client {
    pub fn start(root: &Path) -> Client {
        Self::start_with_env(root, &[])
    }

    /// Starts the server with extra environment variables.
    pub fn start_with_env(root: &Path, env: &[(&str, &str)]) -> Client {
        let root = root.to_str().expect("UTF-8 test path");
        Self::serve(&["--root", root], env)
    }

    /// Starts `xfile serve ARGS` with extra environment variables.
    pub fn serve(args: &[&str], env: &[(&str, &str)]) -> Client {
        Self::serve_logging(args, env, Stdio::null())
    }

    /// [`Client::serve`], the server's log going to `stderr`.
    pub fn serve_logging(args: &[&str], env: &[(&str, &str)], stderr: Stdio) -> Client {
        let runtime = (!env.iter().any(|(k, _)| *k == "XFILE_RUNTIME_DIR"))
            .then(super::runtime::Runtime::new);
        let mut command = Command::new(env!("CARGO_BIN_EXE_xfile"));
        if let Some(runtime) = &runtime {
            command.envs(runtime.env());
        }
        let mut child = command
            .arg("serve")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .envs(env.iter().copied())
            .spawn()
            .expect("server starts");
        let stdin = child.stdin.take();
        let (lines, stdout) = std::sync::mpsc::channel();
        let mut reader = BufReader::new(child.stdout.take().expect("piped stdout"));
        std::thread::spawn(move || {
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(n) if n > 0 && lines.send(line).is_ok() => {}
                    _ => return,
                }
            }
        });
        let mut client = Client {
            child,
            runtime,
            stdin,
            stdout,
            next_id: 0,
        };
        let init = client.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "xfile");
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("connected");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let line = self.request_line(method, params);
        self.request_in_pieces(&[line.as_bytes()], |_| {})
    }

    /// The next request's line (with its newline), for
    /// [`Client::request_in_pieces`].
    pub fn request_line(&mut self, method: &str, params: Value) -> String {
        self.next_id += 1;
        let id = self.next_id;
        format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
    }

    /// Writes a request's line in `pieces`, calling `between` with the
    /// client after each but the last, and returns its answer.
    pub fn request_in_pieces(
        &mut self,
        pieces: &[&[u8]],
        mut between: impl FnMut(&Client),
    ) -> Value {
        let id = self.next_id;
        for (i, piece) in pieces.iter().enumerate() {
            let stdin = self.stdin.as_mut().expect("connected");
            stdin.write_all(piece).expect("the server reads");
            stdin.flush().expect("the server reads");
            if i + 1 < pieces.len() {
                between(self);
            }
        }
        loop {
            let line = match self.stdout.recv_timeout(HANG) {
                Ok(line) => line,
                Err(RecvTimeoutError::Disconnected) => panic!("server closed stdout"),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no answer to request {id} within {HANG:?}: the server hangs")
                }
            };
            let message: Value = serde_json::from_str(&line).expect("stdout carries only JSON-RPC");
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// Waits until the server has read everything written to its stdin.
    pub fn wait_until_stdin_read(&self) {
        use std::os::fd::AsRawFd;
        let stdin = self.stdin.as_ref().expect("connected");
        super::wait_until("the server has read its stdin", || {
            let mut unread: libc::c_int = 0;
            // SAFETY: FIONREAD on the pipe's fd writes one int.
            let asked = unsafe { libc::ioctl(stdin.as_raw_fd(), libc::FIONREAD, &mut unread) };
            asked == 0 && unread == 0
        });
    }

    /// Calls a tool; returns (is_error, text of the first content block).
    pub fn call(&mut self, tool: &str, arguments: Value) -> (bool, String) {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let result = &response["result"];
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        (result["isError"] == json!(true), text)
    }
}

impl Client {
    /// Closes the connection as a client that goes away does, and waits
    /// for the server to exit.
    pub fn disconnect(&mut self) -> std::process::ExitStatus {
        self.stdin = None;
        self.child.wait().unwrap()
    }

    /// The server's process id (to signal it): the relay's, in shared mode.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The client's own runtime directory, if the test did not name one.
    pub fn runtime(&self) -> Option<&super::runtime::Runtime> {
        self.runtime.as_ref()
    }

    /// Waits for the server to exit.
    pub fn wait(&mut self) -> std::process::ExitStatus {
        self.child.wait().unwrap()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
