//! The agent tools as the worker reaches them: the list an attempt may call
//! (`GET {tools_url}` with the attempt token) and one call
//! (`POST {tools_url}/{name}` with the arguments object), plus the worker's
//! own `finish` tool. Every answer is read up to a cap and turned into text
//! for the model; only a `409` (the attempt is no longer live) stops the
//! attempt.

use std::time::Duration;

use coordinator_llm::error_chain;
use coordinator_protocol::Callback;
use reqwest::StatusCode;
use serde_json::{Map, Value, json};

use super::prompt::truncate;
use crate::harness;

/// The worker's own tool that ends an attempt with its result.
pub(super) const FINISH: &str = "finish";

/// Most bytes of one tool's result (or error) fed back to the model.
pub(super) const MAX_TOOL_RESULT_BYTES: usize = 8 * 1024;

/// Most bytes read of one answer from the coordinator's tool routes.
const MAX_TOOL_BODY_BYTES: usize = 1 << 20;

/// Most tools taken from the coordinator's list.
const MAX_TOOLS: usize = 128;

/// Limit of one tool call or of fetching the list.
pub(super) const TOOL_TIMEOUT: Duration = Duration::from_secs(30);

/// The `finish` tool in OpenAI function form.
pub(super) fn finish_tool() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": FINISH,
            "description": "End your task with its result. Call it once, when the task is done; \
                            the result is what the task's success criteria are checked against.",
            "parameters": {
                "type": "object",
                "properties": {
                    "result": {"description": "The task's result: text, or a JSON object."},
                    "summary": {"type": "string", "description": "One line on what you did (optional)."}
                },
                "required": ["result"],
                "additionalProperties": false
            }
        }
    })
}

/// The name of a tool in OpenAI function form, if it has one.
pub(super) fn name_of(tool: &Value) -> Option<&str> {
    tool.get("function")?
        .get("name")?
        .as_str()
        .filter(|n| !n.is_empty())
}

/// The tools the attempt may call, from `GET {tools_url}`: every entry of
/// `tools` that is a named function (a `finish` of the coordinator's is
/// dropped: the worker's own ends the attempt).
pub(super) async fn list(
    http: &reqwest::Client,
    callback: &Callback,
) -> Result<Vec<Value>, String> {
    let Some(url) = &callback.tools_url else {
        return Ok(Vec::new());
    };
    let resp = harness::authorize(callback, http.get(url))
        .timeout(TOOL_TIMEOUT)
        .send()
        .await
        .map_err(|e| error_chain(&e))?;
    let status = resp.status();
    let (body, complete) = read_capped(resp).await?;
    if !status.is_success() {
        return Err(format!(
            "HTTP {status}: {}",
            coordinator_llm::excerpt(&body)
        ));
    }
    if !complete {
        return Err(format!(
            "the list is larger than {MAX_TOOL_BODY_BYTES} bytes"
        ));
    }
    let parsed: Value =
        serde_json::from_str(&body).map_err(|e| format!("the list is not JSON: {e}"))?;
    let tools = parsed
        .get("tools")
        .and_then(Value::as_array)
        .ok_or("the answer has no `tools` array")?;
    Ok(tools
        .iter()
        .filter(|t| t.get("type").and_then(Value::as_str) == Some("function"))
        .filter(|t| name_of(t).is_some_and(|n| n != FINISH))
        .take(MAX_TOOLS)
        .cloned()
        .collect())
}

/// How one call of a coordinator tool went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Called {
    /// It ran: its `result`, as JSON text (capped).
    Ok(String),
    /// It did not run (refused, or unreachable): why, for the model (capped).
    Failed(String),
    /// `409`: the attempt is no longer live; stop and report nothing.
    Stale,
    /// It ran and ended the attempt (`attempt_ended: true`: the task was
    /// handed over, or waits for a blocker's decision); stop and report nothing.
    Ended,
}

/// Calls tool `name` with `args` at `POST {tools_url}/{name}`.
pub(super) async fn call(
    http: &reqwest::Client,
    callback: &Callback,
    name: &str,
    args: &Map<String, Value>,
) -> Called {
    let Some(base) = &callback.tools_url else {
        return Called::Failed(format!("tool `{name}` cannot be called: no tools_url"));
    };
    let mut url = match reqwest::Url::parse(base) {
        Ok(url) => url,
        Err(e) => return Called::Failed(format!("tools_url is not a URL: {e}")),
    };
    // The name becomes one escaped path segment, whatever the model wrote.
    match url.path_segments_mut() {
        Ok(mut path) => {
            path.pop_if_empty().push(name);
        }
        Err(()) => return Called::Failed("tools_url cannot take a tool name".into()),
    }
    let sent = harness::authorize(callback, http.post(url))
        .timeout(TOOL_TIMEOUT)
        .json(args)
        .send()
        .await;
    let resp = match sent {
        Ok(resp) => resp,
        Err(e) => return Called::Failed(format!("the tool call failed: {}", error_chain(&e))),
    };
    let status = resp.status();
    if status == StatusCode::CONFLICT {
        return Called::Stale;
    }
    let body = match read_capped(resp).await {
        Ok((body, _)) => body,
        Err(why) => return Called::Failed(format!("the tool call failed: {why}")),
    };
    answer_text(status, &body)
}

/// What a tool route's answer tells the model.
pub(super) fn answer_text(status: StatusCode, body: &str) -> Called {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    if status.is_success() {
        return match parsed.as_ref().and_then(|v| v.get("result")) {
            Some(result) if result.get("attempt_ended") == Some(&Value::Bool(true)) => {
                Called::Ended
            }
            Some(result) => Called::Ok(cap(&result.to_string())),
            None => Called::Failed(format!(
                "the tool answered HTTP {status} without a result: {}",
                cap(body)
            )),
        };
    }
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let field = |k: &str| error.and_then(|e| e.get(k));
    let text = match (field("code").and_then(Value::as_str), field("message")) {
        (code, Some(Value::String(message))) => {
            let mut text = format!(
                "error (HTTP {}{}): {message}",
                status.as_u16(),
                code.map(|c| format!(" {c}")).unwrap_or_default()
            );
            if let Some(details) = field("details").filter(|d| !d.is_null()) {
                text.push_str(&format!("\ndetails: {details}"));
            }
            text
        }
        _ => format!("error (HTTP {status}): {}", coordinator_llm::excerpt(body)),
    };
    Called::Failed(cap(&text))
}

/// `text` cut to [`MAX_TOOL_RESULT_BYTES`], saying so when cut.
pub(super) fn cap(text: &str) -> String {
    truncate(text, MAX_TOOL_RESULT_BYTES).into_owned()
}

/// Reads at most [`MAX_TOOL_BODY_BYTES`] of the body as text; the flag says
/// whether it ended within the cap.
async fn read_capped(mut resp: reqwest::Response) -> Result<(String, bool), String> {
    let mut bytes = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| error_chain(&e))? {
        let room = MAX_TOOL_BODY_BYTES.saturating_sub(bytes.len());
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok((String::from_utf8_lossy(&bytes).into_owned(), false));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok((String::from_utf8_lossy(&bytes).into_owned(), true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_that_ends_the_attempt_stops_the_loop() {
        assert_eq!(
            answer_text(
                StatusCode::OK,
                r#"{"result": {"handoff_id": "h", "attempt_ended": true}}"#
            ),
            Called::Ended
        );
        // Only a literal `true` ends it.
        assert!(matches!(
            answer_text(StatusCode::OK, r#"{"result": {"attempt_ended": "yes"}}"#),
            Called::Ok(_)
        ));
    }

    #[test]
    fn answers_become_text_for_the_model() {
        assert_eq!(
            answer_text(StatusCode::OK, r#"{"result": {"key": "k", "version": 1}}"#),
            Called::Ok(r#"{"key":"k","version":1}"#.into())
        );
        let refused = answer_text(
            StatusCode::FORBIDDEN,
            r#"{"error": {"code": "forbidden", "message": "not yours", "details": {"field": "from"}}}"#,
        );
        assert_eq!(
            refused,
            Called::Failed(
                "error (HTTP 403 forbidden): not yours\ndetails: {\"field\":\"from\"}".into()
            )
        );
        let Called::Failed(odd) = answer_text(StatusCode::BAD_GATEWAY, "<html>\n</html>") else {
            panic!("a failure expected");
        };
        assert_eq!(odd, "error (HTTP 502 Bad Gateway): <html> </html>");
        assert!(matches!(
            answer_text(StatusCode::OK, "{}"),
            Called::Failed(_)
        ));
        let Called::Ok(big) = answer_text(
            StatusCode::OK,
            &json!({"result": "x".repeat(3 * MAX_TOOL_RESULT_BYTES)}).to_string(),
        ) else {
            panic!("a result expected");
        };
        assert!(big.len() < MAX_TOOL_RESULT_BYTES + 100, "{}", big.len());
        assert!(
            big.contains("[truncated: 8192 of"),
            "{}",
            &big[big.len() - 80..]
        );
    }

    #[test]
    fn the_finish_tool_is_a_named_function() {
        let finish = finish_tool();
        assert_eq!(name_of(&finish), Some(FINISH));
        assert_eq!(
            finish["function"]["parameters"]["required"],
            json!(["result"])
        );
        assert_eq!(name_of(&json!({"function": {"name": ""}})), None);
    }
}
