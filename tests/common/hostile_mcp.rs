//! A generator of hostile MCP traffic: requests of
//! every method with arguments of every JSON type, notifications,
//! responses, batches, deep nesting, long strings, odd ids, lone
//! surrogates, and byte-level mutations of all of it (flips, cuts,
//! insertions, garbage, several messages on a line).

use fastrand::Rng;
use serde_json::{Value, json};

const METHODS: &[&str] = &[
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
    "ping",
    "completion/complete",
    "logging/setLevel",
    "initialize",
    "no/such/method",
    "",
];

const NOTIFICATIONS: &[&str] = &[
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "notifications/unknown",
];

/// What the generator knows of the server under test.
pub struct Target {
    pub tools: Vec<String>,
    pub files: Vec<String>,
}

pub struct Traffic<'a> {
    rng: Rng,
    target: &'a Target,
    next_id: u64,
    sent_ids: Vec<Value>,
}

impl<'a> Traffic<'a> {
    pub fn new(seed: u64, target: &'a Target) -> Self {
        Traffic {
            rng: Rng::with_seed(seed),
            target,
            next_id: 0,
            sent_ids: Vec::new(),
        }
    }

    /// One chunk of bytes to write (a newline is added after it; a
    /// mutation may put more newlines inside).
    pub fn next_chunk(&mut self) -> Vec<u8> {
        let message = match self.rng.u8(0..100) {
            0..=59 => self.request(),
            60..=69 => self.notification(),
            70..=74 => self.response(),
            75..=79 => Value::Array((0..self.rng.usize(0..4)).map(|_| self.request()).collect()),
            80..=84 => self.odd_value(4),
            _ => self.request(),
        };
        let mut bytes = message.to_string().into_bytes();
        match self.rng.u8(0..100) {
            0..=54 => {}
            55..=64 => self.flip(&mut bytes),
            65..=72 => {
                let at = self.rng.usize(0..=bytes.len());
                bytes.truncate(at);
            }
            73..=80 => self.insert(&mut bytes),
            81..=85 => {
                let more = self.request().to_string();
                bytes.extend_from_slice(more.as_bytes());
            }
            86..=90 => bytes.extend_from_slice(b" }]garbage\x00"),
            91..=94 => {
                let depth = self.rng.usize(100..3_000);
                bytes = self.deep(depth);
            }
            95..=97 => bytes = self.long_string_request(),
            _ => bytes = self.surrogate_request(),
        }
        bytes
    }

    fn id(&mut self) -> Value {
        self.next_id += 1;
        let id = match self.rng.u8(0..10) {
            0..=5 => json!(self.next_id),
            6..=7 => json!(format!("s-{}", self.next_id)),
            8 if !self.sent_ids.is_empty() => {
                // A reused id (maybe still in flight).
                self.sent_ids[self.rng.usize(0..self.sent_ids.len())].clone()
            }
            _ => json!(-(self.next_id as i64)),
        };
        self.sent_ids.push(id.clone());
        id
    }

    fn request(&mut self) -> Value {
        let method = METHODS[self.rng.usize(0..METHODS.len())];
        let params = match method {
            "tools/call" => self.tool_call(),
            "resources/read" => {
                json!({"uri": if self.rng.bool() { "xfile://relations".into() } else { self.odd_value(1) }})
            }
            _ if self.rng.u8(0..4) == 0 => self.odd_value(2),
            _ => json!({}),
        };
        let mut message = json!({"jsonrpc": "2.0", "id": self.id(), "method": method});
        if self.rng.u8(0..8) != 0 {
            message["params"] = params;
        }
        if self.rng.u8(0..30) == 0 {
            message["jsonrpc"] = self.odd_value(0);
        }
        if self.rng.u8(0..30) == 0 {
            message["id"] = self.odd_value(1);
        }
        message
    }

    fn tool_call(&mut self) -> Value {
        let tools = &self.target.tools;
        let name = match self.rng.u8(0..10) {
            0 => json!("no_such_tool"),
            1 => self.odd_value(0),
            _ => json!(tools[self.rng.usize(0..tools.len())]),
        };
        let mut arguments = serde_json::Map::new();
        for key in [
            "file_path",
            "symbol",
            "symbol_name",
            "query",
            "pattern",
            "limit",
            "depth",
            "cursor",
            "format",
            "detail",
            "start_line",
            "end_line",
            "session_id",
        ] {
            if self.rng.u8(0..4) == 0 {
                let value = match self.rng.u8(0..4) {
                    0 if !self.target.files.is_empty() => {
                        json!(self.target.files[self.rng.usize(0..self.target.files.len())])
                    }
                    1 => json!(self.rng.i64(-5..100_000)),
                    _ => self.odd_value(2),
                };
                arguments.insert(key.into(), value);
            }
        }
        json!({"name": name, "arguments": arguments})
    }

    fn notification(&mut self) -> Value {
        let method = NOTIFICATIONS[self.rng.usize(0..NOTIFICATIONS.len())];
        let params = if method == "notifications/cancelled" && !self.sent_ids.is_empty() {
            let id = self.sent_ids[self.rng.usize(0..self.sent_ids.len())].clone();
            json!({"requestId": id, "reason": "fuzz"})
        } else {
            self.odd_value(2)
        };
        json!({"jsonrpc": "2.0", "method": method, "params": params})
    }

    fn response(&mut self) -> Value {
        let id = self.odd_value(0);
        if self.rng.bool() {
            json!({"jsonrpc": "2.0", "id": id, "result": self.odd_value(2)})
        } else {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": self.rng.i32(..), "message": "x"}})
        }
    }

    /// A value of any JSON type, nested up to `depth`.
    fn odd_value(&mut self, depth: usize) -> Value {
        match self.rng.u8(0..if depth == 0 { 7 } else { 9 }) {
            0 => Value::Null,
            1 => json!(self.rng.bool()),
            2 => json!(self.rng.i64(..)),
            3 => json!(self.rng.f64() * 1e300),
            4 => json!(""),
            5 => json!("../../../etc/passwd"),
            6 => json!("x".repeat(self.rng.usize(0..300))),
            7 => Value::Array(
                (0..self.rng.usize(0..4))
                    .map(|_| self.odd_value(depth - 1))
                    .collect(),
            ),
            _ => {
                let mut map = serde_json::Map::new();
                for i in 0..self.rng.usize(0..4) {
                    map.insert(format!("k{i}"), self.odd_value(depth - 1));
                }
                Value::Object(map)
            }
        }
    }

    fn flip(&mut self, bytes: &mut [u8]) {
        for _ in 0..self.rng.usize(1..4) {
            if bytes.is_empty() {
                return;
            }
            let at = self.rng.usize(0..bytes.len());
            bytes[at] = self.rng.u8(..);
        }
    }

    fn insert(&mut self, bytes: &mut Vec<u8>) {
        const PIECES: &[&[u8]] = &[
            b"\xff",
            b"\x00",
            b"\"",
            b"{",
            b"]",
            b"\\u",
            b"\r",
            b"\n",
            b"\xed\xa0\x80",
            b",,",
        ];
        let at = self.rng.usize(0..=bytes.len());
        let piece = PIECES[self.rng.usize(0..PIECES.len())];
        bytes.splice(at..at, piece.iter().copied());
    }

    /// A request whose params nest `depth` levels (objects or arrays).
    fn deep(&mut self, depth: usize) -> Vec<u8> {
        let (open, close) = if self.rng.bool() {
            ("[".repeat(depth), "]".repeat(depth))
        } else {
            ("{\"a\":".repeat(depth), "}".repeat(depth))
        };
        let id = self.id();
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{"x":{open}1{close}}}}}"#
        )
        .into_bytes()
    }

    fn long_string_request(&mut self) -> Vec<u8> {
        let long = "a".repeat(self.rng.usize(10_000..2_000_000));
        let id = self.id();
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "read_with_context", "arguments": {"file_path": long}}})
        .to_string()
        .into_bytes()
    }

    fn surrogate_request(&mut self) -> Vec<u8> {
        let id = self.id();
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"get_symbol","arguments":{{"symbol":"\ud83d"}}}}}}"#)
            .into_bytes()
    }
}

/// The requests on a line that must each get exactly one reply: the line
/// parses (as the test reads it, independently of the server) into JSON
/// objects with `"jsonrpc": "2.0"`, a string `method` and an integer or
/// string id. Their ids, one entry per request.
pub fn requests_owed(line: &[u8]) -> Vec<Value> {
    let mut owed = Vec::new();
    for value in serde_json::Deserializer::from_slice(line).into_iter::<Value>() {
        let Ok(value) = value else {
            return Vec::new();
        };
        let is_request = value.get("jsonrpc") == Some(&json!("2.0"))
            && value.get("method").is_some_and(Value::is_string);
        match value.get("id") {
            Some(id) if is_request && (id.is_string() || id.is_i64()) => owed.push(id.clone()),
            _ => {}
        }
    }
    owed
}
