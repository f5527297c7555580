//! The wire in front of rmcp: reads stdin line by line, answers every
//! malformed message itself and hands rmcp only messages it can decode.
//!
//! rmcp's stdio transport skips unparsable lines without a reply, answers
//! an undecodable message with an error that has no `id`, exits when the
//! first message is not `initialize` (a notification, a stray response,
//! an `initialize` without an id) and drops the reply of the first of two
//! requests sharing an id. A client waiting on any of those hangs. Here:
//! - every request with a readable id gets exactly one reply carrying it:
//!   -32700 for a line that is not JSON (the id read from its bytes when it
//!   can be), -32600 for an invalid message, -32602 for a known method's
//!   missing or malformed params, and an error for an id already in flight;
//! - a line is at most [`MAX_LINE`] bytes; the rest of a longer one is
//!   discarded as it arrives, so a flood costs no memory;
//! - before the handshake only requests reach rmcp, and a handshake that
//!   fails leaves the wire waiting for the next `initialize`;
//! - a `notifications/cancelled` frees its id (rmcp sends no reply then).
//!
//! Backpressure: a bounded queue each way, so a client that writes faster
//! than requests are served, or does not read its replies, stalls reading
//! instead of growing memory.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::errors::QUOTED_CHARS;
use crate::service::text::shortened;

/// The longest message read whole (as rmcp's own limit); a longer line is
/// refused with the id its first bytes show.
pub(crate) const MAX_LINE: usize = 16 * 1024 * 1024;
/// How much of an over-long line is kept to find its id.
const KEPT_PREFIX: usize = 64 * 1024;
/// Messages waiting for rmcp, and lines waiting for stdout.
const QUEUE: usize = 256;

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

/// Requests whose params are required by the protocol: without them rmcp
/// would decode the request as an unknown method (-32601).
const NEEDS_PARAMS: &[&str] = &[
    "initialize",
    "tools/call",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
];

/// What the reading side decided about one message.
#[derive(Debug)]
enum Verdict {
    /// For rmcp.
    Forward(Box<ClientJsonRpcMessage>),
    /// A reply of ours, one JSON-RPC line.
    Reply(String),
    /// Nothing to answer (a notification or response that cannot be used).
    Drop(&'static str),
}

#[derive(Default)]
struct State {
    /// An `initialize` went to rmcp: from then on rmcp takes every kind of
    /// message.
    initializing: bool,
    /// Ids (as JSON text) of requests rmcp has not answered yet.
    in_flight: HashSet<String>,
}

struct Shared {
    incoming: tokio::sync::Mutex<mpsc::Receiver<ClientJsonRpcMessage>>,
    out: mpsc::Sender<String>,
    state: Mutex<State>,
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The framing between a client's byte streams and rmcp sessions.
pub(crate) struct Wire {
    shared: Arc<Shared>,
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl Wire {
    /// Over the process's stdin and stdout.
    pub(crate) fn stdio() -> Wire {
        Wire::over(tokio::io::stdin(), tokio::io::stdout())
    }

    pub(crate) fn over<R, W>(input: R, output: W) -> Wire
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (to_rmcp, incoming) = mpsc::channel(QUEUE);
        let (out, lines) = mpsc::channel(QUEUE);
        let shared = Arc::new(Shared {
            incoming: tokio::sync::Mutex::new(incoming),
            out,
            state: Mutex::new(State::default()),
        });
        let reader = tokio::spawn(read(input, shared.clone(), to_rmcp));
        let writer = tokio::spawn(write(output, lines));
        Wire {
            shared,
            reader,
            writer,
        }
    }

    /// A transport for one rmcp session over this wire.
    pub(crate) fn link(&self) -> Link {
        Link(self.shared.clone())
    }

    /// After a failed handshake: the next session starts from scratch.
    pub(crate) fn restart(&self) {
        *self.shared.state() = State::default();
    }

    /// Whether the client closed its side (no session can follow).
    pub(crate) fn input_ended(&self) -> bool {
        self.reader.is_finished()
    }

    /// Lets the replies already queued reach the client (bounded wait).
    pub(crate) async fn finish(self) {
        let Wire {
            shared,
            reader,
            writer,
        } = self;
        // The writer ends once every sender is gone: ours, the reader's
        // and the (finished) session's.
        reader.abort();
        drop(shared);
        let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
    }
}

/// One rmcp session's transport: messages from the shared reader, replies
/// to the shared writer.
pub(crate) struct Link(Arc<Shared>);

impl Transport<RoleServer> for Link {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let shared = self.0.clone();
        async move {
            let answered = match &item {
                JsonRpcMessage::Response(response) => Some(&response.id),
                JsonRpcMessage::Error(error) => error.id.as_ref(),
                _ => None,
            };
            if let Some(id) = answered {
                let key = serde_json::to_string(id).map_err(std::io::Error::other)?;
                shared.state().in_flight.remove(&key);
            }
            let line = serde_json::to_string(&item).map_err(std::io::Error::other)?;
            shared
                .out
                .send(line)
                .await
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientJsonRpcMessage>> + Send {
        let shared = self.0.clone();
        async move { shared.incoming.lock().await.recv().await }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Reads lines until the client closes its side, judging each message.
async fn read<R: AsyncRead + Unpin>(
    input: R,
    shared: Arc<Shared>,
    to_rmcp: mpsc::Sender<ClientJsonRpcMessage>,
) {
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        let complete = match next_line(&mut input, &mut line).await {
            Ok(Some(complete)) => complete,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(%error, "reading the client's messages failed");
                return;
            }
        };
        let verdicts = if complete {
            let mut state = shared.state();
            judge_line(&line, &mut state)
        } else {
            vec![Verdict::Reply(error_reply(
                readable_id(&line).as_ref(),
                INVALID_REQUEST,
                "message over 16 MiB: send smaller requests",
            ))]
        };
        for verdict in verdicts {
            let delivered = match verdict {
                Verdict::Forward(message) => to_rmcp.send(*message).await.is_ok(),
                Verdict::Reply(reply) => shared.out.send(reply).await.is_ok(),
                Verdict::Drop(why) => {
                    tracing::debug!(why, "message from the client dropped");
                    true
                }
            };
            if !delivered {
                return;
            }
        }
    }
}

/// Reads one line into `line` (without its end): `Some(true)` when whole,
/// `Some(false)` when longer than [`MAX_LINE`] (only its start kept, the
/// rest consumed), `None` at the end of input.
async fn next_line<R: AsyncRead + Unpin>(
    input: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    line.clear();
    let mut too_long = false;
    let mut seen = 0usize;
    loop {
        let chunk = input.fill_buf().await?;
        if chunk.is_empty() {
            return Ok((seen > 0).then_some(!too_long));
        }
        let end = chunk.iter().position(|&b| b == b'\n');
        let part = &chunk[..end.unwrap_or(chunk.len())];
        seen += part.len();
        if !too_long {
            let room = MAX_LINE - line.len();
            if part.len() > room {
                too_long = true;
                line.extend_from_slice(&part[..room]);
                line.truncate(KEPT_PREFIX);
            } else {
                line.extend_from_slice(part);
            }
        }
        let used = part.len() + usize::from(end.is_some());
        input.consume(used);
        if end.is_some() {
            return Ok(Some(!too_long));
        }
    }
}

/// Writes replies one per line, flushing when none is waiting.
async fn write<W: AsyncWrite + Unpin>(mut output: W, mut lines: mpsc::Receiver<String>) {
    while let Some(line) = lines.recv().await {
        let mut written = output.write_all(line.as_bytes()).await;
        if written.is_ok() {
            written = output.write_all(b"\n").await;
        }
        if written.is_ok() && lines.is_empty() {
            written = output.flush().await;
        }
        if let Err(error) = written {
            tracing::warn!(%error, "writing to the client failed");
            return;
        }
    }
    let _ = output.flush().await;
}

/// Judges one line: one verdict per message on it (a client may put
/// several on a line), or one parse error for the whole line.
fn judge_line(line: &[u8], state: &mut State) -> Vec<Verdict> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Vec::new();
    }
    let mut values = Vec::new();
    for value in serde_json::Deserializer::from_slice(line).into_iter::<Value>() {
        match value {
            Ok(value) => values.push(value),
            Err(error) => {
                let message = format!(
                    "parse error: {}",
                    shortened(&error.to_string(), QUOTED_CHARS)
                );
                return vec![Verdict::Reply(error_reply(
                    readable_id(line).as_ref(),
                    PARSE_ERROR,
                    &message,
                ))];
            }
        }
    }
    values.into_iter().map(|v| judge(v, state)).collect()
}

/// Judges one parsed message.
fn judge(value: Value, state: &mut State) -> Verdict {
    let object = match value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return Verdict::Reply(error_reply(
                None,
                INVALID_REQUEST,
                "batches are not supported: send one message per line",
            ));
        }
        _ => {
            return Verdict::Reply(error_reply(
                None,
                INVALID_REQUEST,
                "a message is a JSON object",
            ));
        }
    };
    let id = object
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .cloned();
    let invalid =
        |message: &str| Verdict::Reply(error_reply(id.as_ref(), INVALID_REQUEST, message));
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid("\"jsonrpc\" must be \"2.0\"");
    }
    if object.contains_key("id") && id.is_none() {
        return invalid("\"id\" must be a string or an integer");
    }
    let method = match object.get("method") {
        Some(Value::String(method)) => Some(method.clone()),
        Some(_) => return invalid("\"method\" must be a string"),
        None => None,
    };
    match (method, id.clone()) {
        (Some(method), Some(id)) => judge_request(object, &method, id, state),
        (Some(method), None) => judge_notification(object, &method, state),
        (None, Some(_)) if !object.contains_key("result") && !object.contains_key("error") => {
            invalid("a message with an id needs \"method\", \"result\" or \"error\"")
        }
        (None, _) if !state.initializing => Verdict::Drop("a response before the handshake"),
        (None, _) => match decode(object) {
            Ok(message) => Verdict::Forward(message),
            Err(_) => Verdict::Drop("a response that does not decode"),
        },
    }
}

fn judge_request(
    object: serde_json::Map<String, Value>,
    method: &str,
    id: Value,
    state: &mut State,
) -> Verdict {
    let key = id.to_string();
    if state.in_flight.contains(&key) {
        return Verdict::Reply(error_reply(
            Some(&id),
            INVALID_REQUEST,
            "a request with this id is still in progress: use a new id",
        ));
    }
    let params_ok = match object.get("params") {
        None => !NEEDS_PARAMS.contains(&method),
        Some(Value::Object(_)) => true,
        Some(_) => false,
    };
    if !params_ok {
        let message = format!(
            "{} needs \"params\", an object",
            shortened(method, QUOTED_CHARS)
        );
        return Verdict::Reply(error_reply(Some(&id), INVALID_PARAMS, &message));
    }
    match decode(object) {
        Ok(message) => {
            if method == "initialize" {
                state.initializing = true;
            }
            state.in_flight.insert(key);
            Verdict::Forward(message)
        }
        Err(error) => {
            let code = if id.is_number() && id.as_i64().is_none() {
                INVALID_REQUEST
            } else {
                INVALID_PARAMS
            };
            let message = format!(
                "invalid {}: {}",
                shortened(method, QUOTED_CHARS),
                shortened(&error, QUOTED_CHARS)
            );
            Verdict::Reply(error_reply(Some(&id), code, &message))
        }
    }
}

fn judge_notification(
    object: serde_json::Map<String, Value>,
    method: &str,
    state: &mut State,
) -> Verdict {
    if !state.initializing {
        return Verdict::Drop("a notification before the handshake");
    }
    if method == "notifications/cancelled" {
        // rmcp sends nothing for a cancelled request: its id is free again.
        if let Some(id) = object
            .get("params")
            .and_then(|p| p.get("requestId"))
            .filter(|id| id.is_string() || id.is_number())
        {
            state.in_flight.remove(&id.to_string());
        }
    }
    match decode(object) {
        Ok(message) => Verdict::Forward(message),
        Err(_) => Verdict::Drop("a notification that does not decode"),
    }
}

fn decode(object: serde_json::Map<String, Value>) -> Result<Box<ClientJsonRpcMessage>, String> {
    serde_json::from_value(Value::Object(object))
        .map(Box::new)
        .map_err(|e| e.to_string())
}

/// A JSON-RPC error line; the id is left out when unreadable, as the
/// protocol asks.
fn error_reply(id: Option<&Value>, code: i64, message: &str) -> String {
    let mut reply = json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}});
    if let Some(id) = id {
        reply["id"] = id.clone();
    }
    reply.to_string()
}

/// The top-level `"id"` of a message that does not parse, when its bytes
/// show one: a string or a number following the key at the first level
/// of braces. One pass, no recursion, whatever the nesting.
fn readable_id(bytes: &[u8]) -> Option<Value> {
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let end = string_end(bytes, i)?;
                if depth == 1 && &bytes[i..end] == b"\"id\"" {
                    let colon = skip_space(bytes, end);
                    if bytes.get(colon) == Some(&b':') {
                        return value_at(bytes, skip_space(bytes, colon + 1));
                    }
                }
                i = end;
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

/// The index after the closing quote of the string opening at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

fn skip_space(bytes: &[u8], mut i: usize) -> usize {
    while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

fn value_at(bytes: &[u8], start: usize) -> Option<Value> {
    match bytes.get(start)? {
        b'"' => {
            let end = string_end(bytes, start)?;
            serde_json::from_slice::<String>(&bytes[start..end])
                .ok()
                .map(Value::String)
        }
        b'-' | b'0'..=b'9' => {
            let len = bytes[start..]
                .iter()
                .take_while(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
                .count();
            serde_json::from_slice::<serde_json::Number>(&bytes[start..start + len])
                .ok()
                .map(Value::Number)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replies(line: &[u8], state: &mut State) -> Vec<Value> {
        judge_line(line, state)
            .into_iter()
            .filter_map(|v| match v {
                Verdict::Reply(r) => serde_json::from_str(&r).ok(),
                _ => None,
            })
            .collect()
    }

    fn initialized() -> State {
        State {
            initializing: true,
            ..State::default()
        }
    }

    #[test]
    fn a_readable_id_is_found_at_the_top_level_only() {
        assert_eq!(
            readable_id(br#"{"a":{"id":1},"id":"x" garbage"#),
            Some(json!("x"))
        );
        assert_eq!(readable_id(br#"{"params":{"id":1}} {"#), None);
        assert_eq!(readable_id(br#"{"id": -12, "method": "#), Some(json!(-12)));
        assert_eq!(readable_id(br#"{"s":"\"id\":3","id":4"#), Some(json!(4)));
        let deep = format!(
            r#"{{"id":7,"p":{}{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(readable_id(deep.as_bytes()), Some(json!(7)));
    }

    // Each malformed-frame class gets a reply with its id.
    #[test]
    fn malformed_lines_get_a_parse_error_with_their_id() {
        let mut state = initialized();
        let nested = format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"ping","params":{{"a":{}1{}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let cases: Vec<Vec<u8>> = vec![
            br#"{"jsonrpc":"2.0","id":5,"method":"ping"} trailing"#.to_vec(),
            nested.into_bytes(),
            b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"p\xffing\"}".to_vec(),
            br#"{"jsonrpc":"2.0","id":5,"method":"\ud800"}"#.to_vec(),
        ];
        for case in cases {
            let got = replies(&case, &mut state);
            assert_eq!(got.len(), 1, "{}", String::from_utf8_lossy(&case));
            assert_eq!(got[0]["id"], json!(5));
            assert_eq!(got[0]["error"]["code"], json!(PARSE_ERROR));
        }
        let none = replies(b"{not json", &mut state);
        assert!(none[0].get("id").is_none());
    }

    #[test]
    fn two_messages_on_a_line_are_two_messages() {
        let mut state = initialized();
        let verdicts = judge_line(
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
            &mut state,
        );
        assert_eq!(verdicts.len(), 2);
        assert!(verdicts.iter().all(|v| matches!(v, Verdict::Forward(_))));
    }

    #[test]
    fn a_duplicate_in_flight_id_is_refused_until_answered_or_cancelled() {
        let mut state = initialized();
        let ping = br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#;
        assert!(matches!(
            judge_line(ping, &mut state)[0],
            Verdict::Forward(_)
        ));
        let again = replies(ping, &mut state);
        assert_eq!(again[0]["id"], json!("a"));
        assert_eq!(again[0]["error"]["code"], json!(INVALID_REQUEST));
        let cancel =
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}"#;
        assert!(matches!(
            judge_line(cancel, &mut state)[0],
            Verdict::Forward(_)
        ));
        assert!(matches!(
            judge_line(ping, &mut state)[0],
            Verdict::Forward(_)
        ));
    }

    #[test]
    fn invalid_messages_get_the_right_codes() {
        let mut state = initialized();
        let cases: &[(&[u8], Value, i64)] = &[
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
                json!(1),
                INVALID_PARAMS,
            ),
            (
                br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":[1]}"#,
                json!(2),
                INVALID_PARAMS,
            ),
            (
                br#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
                json!(3),
                INVALID_REQUEST,
            ),
            (
                br#"{"jsonrpc":"2.0","id":4,"method":7}"#,
                json!(4),
                INVALID_REQUEST,
            ),
            (
                br#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
                json!(1.5),
                INVALID_REQUEST,
            ),
            (br#"{"jsonrpc":"2.0","id":6}"#, json!(6), INVALID_REQUEST),
            (
                br#"[{"jsonrpc":"2.0","id":7,"method":"ping"}]"#,
                Value::Null,
                INVALID_REQUEST,
            ),
        ];
        for (line, id, code) in cases {
            let got = replies(line, &mut state);
            assert_eq!(got.len(), 1, "{}", String::from_utf8_lossy(line));
            assert_eq!(got[0].get("id").cloned().unwrap_or(Value::Null), *id);
            assert_eq!(got[0]["error"]["code"], json!(code));
        }
    }

    // What rmcp would exit on never reaches it before the handshake.
    #[test]
    fn before_the_handshake_only_requests_go_through() {
        let mut state = State::default();
        for line in [
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.as_slice(),
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            br#"{"jsonrpc":"2.0","id":9,"result":{}}"#,
            br#"{"jsonrpc":"2.0","method":"initialize","params":{}}"#,
        ] {
            assert!(matches!(judge_line(line, &mut state)[0], Verdict::Drop(_)));
        }
        assert!(!state.initializing);
    }

    #[tokio::test]
    async fn an_over_long_line_is_refused_and_the_next_one_read() {
        let mut data = br#"{"jsonrpc":"2.0","id":42,"method":"ping","params":{"x":""#.to_vec();
        data.resize(MAX_LINE + 10, b'a');
        data.extend_from_slice(b"\"}}\nnext\n");
        let mut input = BufReader::new(data.as_slice());
        let mut line = Vec::new();
        assert_eq!(
            next_line(&mut input, &mut line).await.ok(),
            Some(Some(false))
        );
        assert_eq!(readable_id(&line), Some(json!(42)));
        assert!(line.len() <= KEPT_PREFIX);
        assert_eq!(
            next_line(&mut input, &mut line).await.ok(),
            Some(Some(true))
        );
        assert_eq!(line, b"next");
        assert_eq!(next_line(&mut input, &mut line).await.ok(), Some(None));
    }
}
