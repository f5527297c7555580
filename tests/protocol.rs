//! The protocol layer of `xfile serve` under hostile traffic: the server
//! stays up before and after the handshake whatever arrives, every request
//! with a readable id gets exactly one reply carrying it, with the right
//! JSON-RPC code, and a flood of heavy requests is served a few at a time.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::raw_mcp::Raw;
use serde_json::{Value, json};

fn sample() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/sample_project"
    ))
}

// Each message that once made `serve` exit before the handshake.
#[test]
fn the_server_stays_up_whatever_comes_before_the_handshake_f4() {
    let firsts: &[&[u8]] = &[
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
        br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        br#"{"jsonrpc":"2.0","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}"#,
        br#"{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"x"}}"#,
        b"not json at all",
        b"",
    ];
    for first in firsts {
        let mut server = Raw::start(sample());
        server.write(first);
        let reply = server.initialize(json!("init"));
        assert_eq!(
            reply["result"]["serverInfo"]["name"],
            "xfile",
            "after {}",
            String::from_utf8_lossy(first)
        );
        let tools = server.send_and_reply(json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}));
        assert!(
            tools["result"]["tools"]
                .as_array()
                .is_some_and(|t| !t.is_empty())
        );
    }
}

// An `initialize` rmcp cannot take (no params, params of the wrong
// shape) gets an error with its id, and a good one still follows.
#[test]
fn a_broken_initialize_gets_an_error_and_a_good_one_follows_f4() {
    let mut server = Raw::start(sample());
    let broken = server.send_and_reply(json!({"jsonrpc":"2.0","id":1,"method":"initialize"}));
    assert_eq!(broken["error"]["code"], -32602, "{broken}");
    let broken = server.send_and_reply(
        json!({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion": 5}}),
    );
    assert_eq!(broken["error"]["code"], -32602, "{broken}");
    let early = server.send_and_reply(json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}));
    assert!(early.get("error").is_some(), "{early}");
    let ping = server.send_and_reply(json!({"jsonrpc":"2.0","id":4,"method":"ping"}));
    assert_eq!(ping["result"], json!({}));
    let reply = server.initialize(json!(5));
    assert_eq!(reply["result"]["serverInfo"]["name"], "xfile");
}

/// Each malformed-frame class, with the code its reply must carry.
fn malformed_frames() -> Vec<(String, Vec<u8>, i64)> {
    let nested = format!(
        r#"{{"jsonrpc":"2.0","id":"nested","method":"tools/list","params":{{"x":{}0{}}}}}"#,
        "[".repeat(127),
        "]".repeat(127)
    );
    let mut huge = br#"{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"read_with_context","arguments":{"file_path":""#.to_vec();
    huge.resize(huge.len() + 17 * 1024 * 1024, b'a');
    huge.extend_from_slice(b"\"}}}");
    vec![
        (
            "trailing garbage".into(),
            br#"{"jsonrpc":"2.0","id":"trailing","method":"tools/list"} }}garbage"#.to_vec(),
            -32700,
        ),
        ("nesting of 127 levels".into(), nested.into_bytes(), -32700),
        (
            "non-UTF-8 bytes".into(),
            b"{\"jsonrpc\":\"2.0\",\"id\":\"bytes\",\"method\":\"tools/list\",\"params\":{\"x\":\"\xff\xfe\"}}".to_vec(),
            -32700,
        ),
        (
            "a lone surrogate".into(),
            br#"{"jsonrpc":"2.0","id":"surrogate","method":"tools/list","params":{"x":"\udc00"}}"#.to_vec(),
            -32700,
        ),
        ("a line over 16 MiB".into(), huge, -32600),
        (
            "tools/call without params".into(),
            br#"{"jsonrpc":"2.0","id":"noparams","method":"tools/call"}"#.to_vec(),
            -32602,
        ),
        (
            "params that are not an object".into(),
            br#"{"jsonrpc":"2.0","id":"badparams","method":"tools/call","params":"x"}"#.to_vec(),
            -32602,
        ),
        (
            "a wrong jsonrpc version".into(),
            br#"{"jsonrpc":"1.0","id":"version","method":"tools/list"}"#.to_vec(),
            -32600,
        ),
        (
            "a method that is not a string".into(),
            br#"{"jsonrpc":"2.0","id":"method","method":["tools/list"]}"#.to_vec(),
            -32600,
        ),
        (
            "an unknown method".into(),
            br#"{"jsonrpc":"2.0","id":"unknown","method":"no/such/method"}"#.to_vec(),
            -32601,
        ),
    ]
}

// Each class gets exactly one reply with its id; the server answers a
// good request afterwards.
#[test]
fn every_malformed_request_with_a_readable_id_gets_one_reply_with_it_f5() {
    let mut server = Raw::start(sample());
    server.initialize(json!(0));
    for (what, frame, code) in malformed_frames() {
        let id = frame_id(&frame);
        server.write(&frame);
        let reply = server.reply(&id);
        assert_eq!(reply["error"]["code"], code, "{what}: {reply}");
        assert!(
            reply.to_string().len() < 2_000,
            "{what}: the reply echoes the input"
        );
    }
    let ok = server.send_and_reply(json!({"jsonrpc":"2.0","id":"after","method":"tools/list"}));
    assert!(ok.get("result").is_some());
    // Exactly one reply each: nothing more arrives for any of them.
    let late = server.drain(Duration::from_millis(500));
    assert!(late.is_empty(), "{late:?}");
}

/// The id a test frame was written with (from its first bytes, which
/// every frame here keeps readable).
fn frame_id(frame: &[u8]) -> Value {
    let start = frame
        .windows(6)
        .position(|w| w == b"\"id\":\"")
        .expect("frame has a string id")
        + 6;
    let end = start
        + frame[start..]
            .iter()
            .position(|&b| b == b'"')
            .expect("closed");
    json!(String::from_utf8_lossy(&frame[start..end]))
}

// Two messages on one line are two requests, each answered; a reused
// id gets one reply per request, never a dropped one.
#[test]
fn two_messages_on_a_line_and_a_reused_id_each_get_their_reply_f5() {
    let mut server = Raw::start(sample());
    server.initialize(json!(0));
    server.write(
        br#"{"jsonrpc":"2.0","id":"a","method":"ping"}{"jsonrpc":"2.0","id":"b","method":"ping"}"#,
    );
    assert_eq!(server.reply(&json!("a"))["result"], json!({}));
    assert_eq!(server.reply(&json!("b"))["result"], json!({}));
    let read = json!({"jsonrpc":"2.0","id":"same","method":"tools/call",
        "params":{"name":"get_relationship_graph","arguments":{}}});
    server.write(format!("{read}\n{read}").as_bytes());
    let mut replies = vec![server.reply(&json!("same")), server.reply(&json!("same"))];
    replies.extend(server.drain(Duration::from_millis(500)));
    assert_eq!(replies.len(), 2, "{replies:?}");
}
