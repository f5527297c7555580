//! A raw JSON-RPC client for `xfile serve` over stdio. Each client has a
//! runtime directory of its own unless the test names one, so its session
//! goes through a shared service that no other test reaches.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

pub struct Client {
    child: Child,
    /// The client's own runtime directory; its services end with it,
    /// after the child (fields drop after `Drop::drop`).
    runtime: Option<super::runtime::Runtime>,
    /// Taken away by [`Client::disconnect`].
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

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
        let stdout = BufReader::new(child.stdout.take().unwrap());
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
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "server closed stdout"
            );
            let message: Value = serde_json::from_str(&line).expect("stdout carries only JSON-RPC");
            if message["id"] == json!(id) {
                return message;
            }
        }
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
