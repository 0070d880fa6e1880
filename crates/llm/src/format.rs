//! `response_format`: the two shapes servers accept for structured answers,
//! JSON whose keys keep their order (for schemas), and how to tell that a
//! server refused the format asked for.

use serde::Serialize;
use serde_json::{Value, json};

/// JSON whose object keys serialize in the order given.
///
/// `serde_json::Value` sorts keys, but constrained decoders (llama.cpp grammars,
/// OpenAI structured output) generate fields in schema order, so a schema
/// decides the order in which a model writes an object's fields.
#[derive(Debug, Clone, PartialEq)]
pub enum OrderedJson {
    /// A value whose own key order does not matter.
    Leaf(Value),
    /// An object with its entries in this order.
    Object(Vec<(&'static str, OrderedJson)>),
}

impl Serialize for OrderedJson {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            OrderedJson::Leaf(value) => value.serialize(serializer),
            OrderedJson::Object(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

/// An ordered object from `(key, value)` pairs.
pub fn obj(entries: Vec<(&'static str, OrderedJson)>) -> OrderedJson {
    OrderedJson::Object(entries)
}

/// A leaf whose own key order does not matter.
pub fn leaf(value: Value) -> OrderedJson {
    OrderedJson::Leaf(value)
}

/// The `response_format` actually sent on one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    /// OpenAI structured output: `{"type":"json_schema","json_schema":{…}}`.
    JsonSchema,
    /// JSON mode plus a `schema` field, which llama.cpp turns into a grammar.
    JsonObject,
}

impl WireFormat {
    /// `json_schema` or `json_object`.
    pub fn as_str(self) -> &'static str {
        match self {
            WireFormat::JsonSchema => "json_schema",
            WireFormat::JsonObject => "json_object",
        }
    }

    /// The `response_format` value asking for JSON that follows `schema`
    /// (named `name` where the format names it).
    pub fn body(self, name: &'static str, schema: &OrderedJson) -> OrderedJson {
        match self {
            WireFormat::JsonSchema => obj(vec![
                ("type", leaf(json!("json_schema"))),
                (
                    "json_schema",
                    obj(vec![
                        ("name", leaf(json!(name))),
                        // Not strict: OpenAI's strict mode forbids minItems,
                        // maxItems and open objects, which schemas use.
                        ("strict", leaf(json!(false))),
                        ("schema", schema.clone()),
                    ]),
                ),
            ]),
            // llama.cpp compiles `schema` into a grammar; OpenAI ignores the extra field.
            WireFormat::JsonObject => obj(vec![
                ("type", leaf(json!("json_object"))),
                ("schema", schema.clone()),
            ]),
        }
    }
}

/// Whether an error answer says the server does not accept our `response_format`.
pub fn rejects_response_format(status: u16, body: &str) -> bool {
    // llama-cpp-python's server answers a json_schema response_format with a
    // 500 whose body names the field (seen with 0.3.36), so 5xx counts too
    // when the body says so; 429 is load, never a format problem.
    if !(status == 400 || status == 422 || status >= 500) {
        return false;
    }
    let body = body.to_ascii_lowercase();
    body.contains("response_format") || body.contains("json_schema")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_cpp_python_rejects_json_schema_with_a_500() {
        // The body llama-cpp-python 0.3.36 sends for response_format json_schema.
        let body = r#"{"error":{"message":"1 validation error:\n {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}","type":"internal_server_error"}}"#;
        assert!(rejects_response_format(500, body));
        assert!(rejects_response_format(
            400,
            "response_format json_schema not supported"
        ));
        assert!(!rejects_response_format(500, "out of memory"));
        assert!(!rejects_response_format(429, "response_format"));
        assert!(!rejects_response_format(401, "response_format"));
    }

    #[test]
    fn ordered_objects_keep_their_order_in_both_formats() {
        let schema = obj(vec![
            ("z", leaf(json!(1))),
            ("a", leaf(json!({"y": 1, "b": 2}))),
        ]);
        assert_eq!(
            serde_json::to_string(&WireFormat::JsonObject.body("plan", &schema)).unwrap(),
            r#"{"type":"json_object","schema":{"z":1,"a":{"b":2,"y":1}}}"#
        );
        let text = serde_json::to_string(&WireFormat::JsonSchema.body("plan", &schema)).unwrap();
        assert_eq!(
            text,
            r#"{"type":"json_schema","json_schema":{"name":"plan","strict":false,"schema":{"z":1,"a":{"b":2,"y":1}}}}"#
        );
    }
}
