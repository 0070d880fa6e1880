//! What `/mcp` checks before rmcp reads a POST.
//!
//! rmcp answers a body it cannot read as one JSON-RPC message (not JSON, a
//! batch, a null or fractional `id`, `"jsonrpc": "1.0"`, a `method` that is
//! not a string) with a plain-text `415 Unsupported Media Type`, and a method
//! this server serves whose `params` do not fit (`tools/call` without a
//! `name`) with `-32601 method not found`. A client cannot tell either from
//! a transport fault, so such bodies get the JSON-RPC 2.0 error here: `-32700`
//! (parse error) or `-32600` (invalid request) with HTTP 400, `-32602`
//! (invalid params) in a 200 like every other in-band error, each echoing
//! the request's `id` when it has a usable one (`null` otherwise). A
//! notification (no `id`) is never answered with a body, not even an error:
//! 202 as rmcp gives.
//!
//! The body is read here under the same limit as rmcp's: beyond it a 413,
//! and a body that stops arriving (the body timeout, or the client went
//! away) a 400, both with the JSON error body of the REST routes; rmcp
//! answered the latter with a 500.

use axum::{
    body::{Body, Bytes},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
};
use futures::StreamExt;
use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, InitializeRequestParams,
    PaginatedRequestParams,
};
use serde_json::{Map, Value, json};

use crate::error::ApiError;

/// JSON-RPC 2.0: the body is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0: JSON, but not a request object.
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC 2.0: the method's params do not fit it.
const INVALID_PARAMS: i64 = -32602;

/// Whether rmcp reads this request's body at all: it first wants an
/// `Accept` of both `application/json` and `text/event-stream`, then a JSON
/// `Content-Type`. Other requests go to rmcp unread, for its 406 or 415.
pub fn reads_body(headers: &HeaderMap) -> bool {
    let accepted: Vec<String> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(essence)
        .collect();
    let json_body = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| essence(ct) == "application/json");
    accepted.iter().any(|a| a == "application/json")
        && accepted.iter().any(|a| a == "text/event-stream")
        && json_body
}

/// A media type without its parameters, lower case.
fn essence(media_type: &str) -> String {
    media_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The body, at most `limit` bytes: a 413 beyond, a 400 when it cannot be
/// read to its end (the REST routes' answers to both).
pub async fn read_body(body: Body, limit: usize) -> Result<Bytes, Response> {
    let mut data = body.into_data_stream();
    let mut buf = Vec::new();
    while let Some(chunk) = data.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::BadRequest {
                code: "invalid_json",
                message: format!("the request body could not be read: {e}"),
                details: Value::Null,
            }
            .into_response()
        })?;
        if buf.len() + chunk.len() > limit {
            return Err(
                ApiError::PayloadTooLarge("the request body is too large".into()).into_response(),
            );
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(buf))
}

/// The answer to a body that is not one JSON-RPC 2.0 message this server
/// can route as it says, or None to hand it to rmcp.
pub fn refusal(bytes: &[u8]) -> Option<Response> {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            return Some(error(
                StatusCode::BAD_REQUEST,
                Value::Null,
                PARSE_ERROR,
                format!("parse error: the body is not JSON ({e})"),
            ));
        }
    };
    let message = match value {
        Value::Object(m) => m,
        Value::Array(_) => {
            return Some(invalid(
                Value::Null,
                "batches are not supported: send one JSON-RPC message per POST",
            ));
        }
        _ => return Some(invalid(Value::Null, "a JSON-RPC message is a JSON object")),
    };
    let id = match message.get("id") {
        None => None,
        Some(id @ Value::String(_)) => Some(id.clone()),
        Some(Value::Number(n)) if n.is_i64() => Some(Value::Number(n.clone())),
        Some(_) => {
            return Some(invalid(
                Value::Null,
                "id must be a string or an integer (MCP does not allow a null id)",
            ));
        }
    };
    let echo = id.clone().unwrap_or(Value::Null);
    if message.get("jsonrpc") != Some(&json!("2.0")) {
        return Some(invalid(echo, "jsonrpc must be \"2.0\""));
    }
    let method = match message.get("method") {
        Some(Value::String(m)) => m.clone(),
        Some(_) => return Some(invalid(echo, "method must be a string")),
        None if message.contains_key("result") || message.contains_key("error") => {
            return Some(invalid(
                echo,
                "this server sends no requests, so it takes no responses",
            ));
        }
        None => return Some(invalid(echo, "a request needs a method")),
    };
    routed(bytes, &message, &method, id)
}

/// A well-formed message: what rmcp would make of it, where that is wrong.
fn routed(
    bytes: &[u8],
    message: &Map<String, Value>,
    method: &str,
    id: Option<Value>,
) -> Option<Response> {
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let structured = matches!(params, Value::Null | Value::Object(_) | Value::Array(_));
    let readable = serde_json::from_slice::<ClientJsonRpcMessage>(bytes);
    let Some(id) = id else {
        // A notification is never answered with a body: rmcp gives 202 to
        // what it reads, and what it cannot read gets the same here.
        return (!structured || readable.is_err()).then(|| StatusCode::ACCEPTED.into_response());
    };
    if !structured {
        return Some(invalid(id, "params must be an object"));
    }
    if !SERVED.contains(&method) {
        // rmcp answers -32601 to what it reads.
        return readable.err().map(|e| invalid(id, &e.to_string()));
    }
    // A served method rmcp could not read falls back to a custom request,
    // which it answers "method not found".
    let unread = match &readable {
        Ok(ClientJsonRpcMessage::Request(r)) => {
            matches!(r.request, ClientRequest::CustomRequest(_))
        }
        Ok(_) => false,
        Err(_) => true,
    };
    unread.then(|| {
        error(
            StatusCode::OK,
            id,
            INVALID_PARAMS,
            format!(
                "invalid params for {method}: {}",
                params_error(method, &params)
            ),
        )
    })
}

/// The methods this server answers (rmcp answers the rest -32601).
const SERVED: &[&str] = &["initialize", "ping", "tools/list", "tools/call"];

/// Why `params` do not fit a served `method`, in serde's words.
fn params_error(method: &str, params: &Value) -> String {
    let outcome = match method {
        "initialize" => serde_json::from_value::<InitializeRequestParams>(params.clone()).map(drop),
        "tools/call" => serde_json::from_value::<CallToolRequestParams>(params.clone()).map(drop),
        "tools/list" => {
            serde_json::from_value::<Option<PaginatedRequestParams>>(params.clone()).map(drop)
        }
        _ => Ok(()),
    };
    match outcome {
        Err(e) => e.to_string(),
        Ok(()) => "params must be an object of the method's fields".into(),
    }
}

/// A `-32600 invalid request` with HTTP 400.
fn invalid(id: Value, message: &str) -> Response {
    error(StatusCode::BAD_REQUEST, id, INVALID_REQUEST, message.into())
}

/// A JSON-RPC 2.0 error response.
fn error(status: StatusCode, id: Value, code: i64, message: String) -> Response {
    let body = json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    (status, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn code_of(bytes: &str) -> Option<(u16, i64, Value)> {
        let response = refusal(bytes.as_bytes())?;
        let status = response.status().as_u16();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .unwrap_or(Value::Null);
        Some((
            status,
            body["error"]["code"].as_i64().unwrap_or(0),
            body["id"].clone(),
        ))
    }

    #[tokio::test]
    async fn malformed_messages_get_the_standard_codes() {
        assert_eq!(
            code_of("{\"jsonrpc\"").await,
            Some((400, PARSE_ERROR, Value::Null))
        );
        assert_eq!(
            code_of("[]").await,
            Some((400, INVALID_REQUEST, Value::Null))
        );
        assert_eq!(
            code_of(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#).await,
            Some((400, INVALID_REQUEST, json!(7)))
        );
        assert_eq!(
            code_of(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#).await,
            Some((400, INVALID_REQUEST, Value::Null))
        );
        assert_eq!(
            code_of(r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{}}"#).await,
            Some((200, INVALID_PARAMS, json!("a")))
        );
        assert_eq!(
            code_of(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":[1]}"#).await,
            Some((200, INVALID_PARAMS, json!(3)))
        );
        // Fine as they are: rmcp answers them.
        assert_eq!(
            code_of(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).await,
            None
        );
        assert_eq!(
            code_of(r#"{"jsonrpc":"2.0","id":1,"method":"nope"}"#).await,
            None
        );
        assert_eq!(
            code_of(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await,
            None
        );
    }
}
