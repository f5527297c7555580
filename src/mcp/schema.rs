//! The schemas in the tool list that are not schemars' output as it is:
//! input schemas made portable, the session argument of a server of
//! registered projects, and the graph tool's output shape. Every client
//! reads them in full, and some refuse what they do not expect, so they
//! carry no more than a client needs.

use std::sync::Arc;

use rmcp::model::JsonObject;

/// Makes a generated input schema portable: an optional field is simply
/// optional (no `["integer", "null"]` type arrays, which strict clients
/// reject), and keywords no client needs (`$schema`, the Rust type's
/// `title`, integer `format`s like `uint32`, a `minimum` of 0, a `default`
/// of false) are dropped to save tokens.
pub(crate) fn portable_schema(schema: &mut JsonObject) {
    schema.remove("$schema");
    schema.remove("title");
    portable_value(schema);
}

fn portable_value(schema: &mut JsonObject) {
    if let Some(serde_json::Value::Array(types)) = schema.get("type") {
        let kept: Vec<serde_json::Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        let single = match kept.as_slice() {
            [one] => one.clone(),
            _ => serde_json::Value::Array(kept),
        };
        schema.insert("type".into(), single);
    }
    // An optional flag is false unless given: saying so costs tokens.
    if schema.get("default") == Some(&serde_json::Value::Bool(false)) {
        schema.remove("default");
    }
    if schema.get("type").and_then(|t| t.as_str()) == Some("integer") {
        schema.remove("format");
        // Unsigned is said by the type; a negative number is refused anyway.
        if schema.get("minimum") == Some(&serde_json::json!(0)) {
            schema.remove("minimum");
        }
    }
    for value in schema.values_mut() {
        match value {
            serde_json::Value::Object(inner) => portable_value(inner),
            serde_json::Value::Array(items) => {
                for item in items.iter_mut().filter_map(|i| i.as_object_mut()) {
                    portable_value(item);
                }
            }
            _ => {}
        }
    }
}

/// Adds the optional `session_id` argument a server of registered
/// projects takes on every tool (the server reads it before the tool).
pub(crate) fn with_session_argument(schema: &mut JsonObject) {
    if let Some(serde_json::Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert(
            "session_id".into(),
            serde_json::json!({"type": "string", "description": "From create_session."}),
        );
    }
}

/// The shape of `get_relationship_graph` answers: the summary's counts, or
/// one page of a list. Kept shallow on purpose: the item shapes are the
/// export's (README), and a full schema would cost more tokens in every
/// tool list than the answers it describes.
pub(crate) fn graph_output_schema() -> Arc<JsonObject> {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "files": {"type": "integer"},
            "items": {"type": "array"},
            "total": {"type": "integer"},
            "next_cursor": {"type": "string"}
        }
    });
    match schema {
        serde_json::Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}
