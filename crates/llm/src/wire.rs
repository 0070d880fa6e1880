//! The chat-completions wire format: the request body and the parts of the
//! response callers use.

use serde::{Serialize, ser::SerializeStruct};
use serde_json::Value;

use crate::{error::excerpt, format::OrderedJson};

/// Who speaks a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions to the model.
    System,
    /// The user's turn.
    User,
    /// The model's earlier answer, sent back in a conversation.
    Assistant,
    /// The result of one of the model's tool calls.
    Tool,
}

/// One function call the model asked for, as the server sent it (read
/// leniently: see [`parse_completion`]) and as it is sent back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The call's id, which its `tool` message answers (made up as
    /// `call_<index>` when the server sent none).
    pub id: String,
    /// The function's name (empty when the server sent none).
    pub name: String,
    /// The arguments as the model wrote them: JSON text, perhaps malformed.
    pub arguments: String,
}

impl Serialize for ToolCall {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut call = s.serialize_struct("ToolCall", 3)?;
        call.serialize_field("id", &self.id)?;
        call.serialize_field("type", "function")?;
        call.serialize_field(
            "function",
            &serde_json::json!({"name": self.name, "arguments": self.arguments}),
        )?;
        call.end()
    }
}

/// One chat message as sent to the server.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said (sent as `null` for an assistant turn that only calls tools).
    pub content: String,
    /// The tool calls of an assistant turn (not sent when empty).
    pub tool_calls: Vec<ToolCall>,
    /// The call a `tool` message answers (not sent when `None`).
    pub tool_call_id: Option<String>,
}

impl Serialize for ChatMessage {
    // Hand-written: OpenAI wants `content: null`, not "", beside tool calls,
    // and no `tool_calls` / `tool_call_id` keys where they do not apply.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let fields =
            2 + usize::from(!self.tool_calls.is_empty()) + usize::from(self.tool_call_id.is_some());
        let mut m = s.serialize_struct("ChatMessage", fields)?;
        m.serialize_field("role", &self.role)?;
        if self.content.is_empty() && !self.tool_calls.is_empty() {
            m.serialize_field("content", &Option::<&str>::None)?;
        } else {
            m.serialize_field("content", &self.content)?;
        }
        if !self.tool_calls.is_empty() {
            m.serialize_field("tool_calls", &self.tool_calls)?;
        }
        if let Some(id) = &self.tool_call_id {
            m.serialize_field("tool_call_id", id)?;
        }
        m.end()
    }
}

impl ChatMessage {
    fn new(role: Role, content: String) -> Self {
        ChatMessage {
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content.into())
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content.into())
    }

    /// An assistant message (a previous answer).
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content.into())
    }

    /// An assistant turn that called tools, sent back so their results can follow it.
    pub fn assistant_calls(content: Option<String>, calls: Vec<ToolCall>) -> Self {
        ChatMessage {
            tool_calls: calls,
            ..Self::new(Role::Assistant, content.unwrap_or_default())
        }
    }

    /// The result (or error text) of the tool call `call_id`.
    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage {
            tool_call_id: Some(call_id.into()),
            ..Self::new(Role::Tool, content.into())
        }
    }
}

/// Whether and how the model should call tools (`tool_choice`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    /// The model decides (the servers' default when tools are given).
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
}

/// The chat-completions request body; fields serialize in this order.
#[derive(Debug, Serialize)]
pub struct ChatRequest<'a> {
    /// Model name.
    pub model: &'a str,
    /// The conversation so far.
    pub messages: &'a [ChatMessage],
    /// Sampling temperature.
    pub temperature: f64,
    /// Cap on tokens per answer; not sent when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// `response_format` (see [`crate::WireFormat::body`]); not sent when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<&'a OrderedJson>,
    /// The functions the model may call, in OpenAI form
    /// (`{"type": "function", "function": {name, description, parameters}}`);
    /// not sent when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<&'a [Value]>,
    /// `tool_choice`; not sent when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

/// Tokens the server says a call used (0 where it said nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Tokens of the prompt.
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub completion_tokens: u64,
}

impl Usage {
    /// Adds `other`, saturating: a lying server must not wrap the sum.
    pub fn add(&mut self, other: Usage) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
    }

    /// Prompt and completion tokens together.
    pub fn total(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }
}

/// A chat completion, reduced to what callers use.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The answer's text; `None` when the server sent none at all (a null
    /// content, e.g. with only a refusal or tool calls). Each caller decides
    /// what that means.
    pub content: Option<String>,
    /// The tool calls of the answer, in order (empty when it made none).
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped (`stop`, `length`, …), at most 64 bytes.
    pub finish_reason: Option<String>,
    /// Model name reported by the server, at most 200 bytes.
    pub model: Option<String>,
    /// What the call used.
    pub usage: Usage,
}

impl Completion {
    /// Whether the model stopped at its token limit, so the answer is cut off.
    pub fn truncated(&self) -> bool {
        self.finish_reason.as_deref() == Some("length")
    }
}

/// Extracts content, finish reason, model and usage from a chat-completion body.
pub fn parse_completion(bytes: &[u8]) -> Result<Completion, String> {
    let envelope: Value = serde_json::from_slice(bytes).map_err(|e| {
        format!(
            "body is not JSON ({e}): {}",
            excerpt(&String::from_utf8_lossy(&bytes[..bytes.len().min(200)]))
        )
    })?;
    let choice = envelope
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or("no choices[0] in the response")?;
    let content = match choice.get("message").and_then(|m| m.get("content")) {
        Some(Value::String(text)) => Some(text.clone()),
        // Some servers send content as a list of typed parts.
        Some(Value::Array(parts)) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
        ),
        Some(Value::Null) | None => None,
        Some(other) => {
            return Err(format!(
                "choices[0].message.content is not text but {}",
                json_kind(other)
            ));
        }
    };
    let tool_calls = tool_calls(choice.get("message").and_then(|m| m.get("tool_calls")));
    let finish_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(|r| truncate_bytes(r, 64).to_owned());
    let model = envelope
        .get("model")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(|m| truncate_bytes(m, 200).to_owned());
    Ok(Completion {
        content,
        tool_calls,
        finish_reason,
        model,
        usage: usage(envelope.get("usage")),
    })
}

/// Most tool calls read from one answer; the rest are dropped (a turn that
/// asks for more is a model gone astray, and each call costs a request).
pub const MAX_TOOL_CALLS: usize = 32;

/// The answer's tool calls, read leniently so the caller can tell the model
/// what was wrong with a call instead of failing the whole answer: a missing
/// id is made up, a missing name left empty, arguments given as an object
/// (some servers do) written back as JSON text, and entries that are not
/// objects skipped.
fn tool_calls(calls: Option<&Value>) -> Vec<ToolCall> {
    let Some(Value::Array(calls)) = calls else {
        return Vec::new();
    };
    calls
        .iter()
        .filter(|c| c.is_object())
        .take(MAX_TOOL_CALLS)
        .enumerate()
        .map(|(i, call)| {
            let function = call.get("function");
            let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
            let arguments = match function.and_then(|f| f.get("arguments")) {
                Some(Value::String(a)) => a.clone(),
                None | Some(Value::Null) => String::new(),
                Some(other) => other.to_string(),
            };
            ToolCall {
                id: text(call.get("id"))
                    .filter(|id| !id.trim().is_empty())
                    .map_or_else(
                        || format!("call_{i}"),
                        |id| truncate_bytes(&id, 200).to_owned(),
                    ),
                name: text(function.and_then(|f| f.get("name")))
                    .map(|n| truncate_bytes(n.trim(), 200).to_owned())
                    .unwrap_or_default(),
                arguments,
            }
        })
        .collect()
}

/// The `usage` object's token counts.
fn usage(usage: Option<&Value>) -> Usage {
    let tokens = |field: &str| {
        usage
            .and_then(|u| u.get(field))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let (mut prompt_tokens, completion_tokens) =
        (tokens("prompt_tokens"), tokens("completion_tokens"));
    if prompt_tokens == 0 && completion_tokens == 0 {
        // Some servers report only the total; count it rather than nothing.
        prompt_tokens = tokens("total_tokens");
    }
    Usage {
        prompt_tokens,
        completion_tokens,
    }
}

/// A one-word description of a JSON value, for error and problem messages.
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
pub fn truncate_bytes(s: &str, max: usize) -> &str {
    &s[..s.floor_char_boundary(max)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn completion_parsing_tolerates_odd_servers() {
        let parts = json!({"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"text": "b"}]}}]});
        let done = parse_completion(parts.to_string().as_bytes()).unwrap();
        assert_eq!(done.content.as_deref(), Some("ab"));
        assert_eq!(done.usage, Usage::default());
        let null = json!({"choices": [{"message": {"content": null}, "finish_reason": "length"}], "usage": {"total_tokens": 9}});
        let done = parse_completion(null.to_string().as_bytes()).unwrap();
        assert_eq!(done.content, None);
        assert!(done.truncated());
        assert_eq!(done.usage.prompt_tokens, 9);
        assert!(parse_completion(b"{}").is_err());
        assert!(parse_completion(b"\xff\xfe").is_err());
        let number = json!({"choices": [{"message": {"content": 7}}]});
        let err = parse_completion(number.to_string().as_bytes()).unwrap_err();
        assert!(err.ends_with("is not text but a number"), "{err}");
    }

    #[test]
    fn model_and_usage_are_read_and_bounded() {
        let body = json!({
            "model": format!("  {}  ", "m".repeat(300)),
            "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
        });
        let done = parse_completion(body.to_string().as_bytes()).unwrap();
        assert_eq!(done.model.as_deref().map(str::len), Some(200));
        assert_eq!(done.finish_reason.as_deref(), Some("stop"));
        assert!(!done.truncated());
        assert_eq!(done.usage.total(), 150);
        let mut sum = done.usage;
        sum.add(Usage {
            prompt_tokens: u64::MAX,
            completion_tokens: 1,
        });
        assert_eq!((sum.prompt_tokens, sum.completion_tokens), (u64::MAX, 31));
    }

    #[test]
    fn messages_serialize_with_lowercase_roles() {
        let messages = [ChatMessage::system("s"), ChatMessage::assistant("a")];
        let body = ChatRequest {
            model: "m",
            messages: &messages,
            temperature: 0.2,
            max_tokens: None,
            response_format: None,
            tools: None,
            tool_choice: None,
        };
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            r#"{"model":"m","messages":[{"role":"system","content":"s"},{"role":"assistant","content":"a"}],"temperature":0.2}"#
        );
    }
    #[test]
    fn tool_calls_are_read_leniently() {
        let body = json!({"choices": [{"message": {"content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "my_task", "arguments": "{}"}},
            {"type": "function", "function": {"name": " blackboard_write ", "arguments": {"key": "k"}}},
            {"id": "c3", "function": {"arguments": "{not json"}},
            "garbage",
            {"id": "", "function": {"name": "finish"}}
        ]}, "finish_reason": "tool_calls"}]});
        let done = parse_completion(body.to_string().as_bytes()).unwrap();
        assert_eq!(done.content, None);
        let calls = &done.tool_calls;
        assert_eq!(calls.len(), 4, "{calls:?}");
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("c1", "my_task")
        );
        assert_eq!(calls[1].id, "call_1");
        assert_eq!(calls[1].name, "blackboard_write");
        assert_eq!(calls[1].arguments, r#"{"key":"k"}"#);
        assert_eq!(
            (calls[2].name.as_str(), calls[2].arguments.as_str()),
            ("", "{not json")
        );
        assert_eq!(
            (calls[3].id.as_str(), calls[3].arguments.as_str()),
            ("call_3", "")
        );
        let many: Vec<Value> = (0..100)
            .map(|i| json!({"id": format!("c{i}"), "function": {"name": "x", "arguments": "{}"}}))
            .collect();
        let body = json!({"choices": [{"message": {"tool_calls": many}}]});
        let done = parse_completion(body.to_string().as_bytes()).unwrap();
        assert_eq!(done.tool_calls.len(), MAX_TOOL_CALLS);
        let odd = json!({"choices": [{"message": {"content": "hi", "tool_calls": "nope"}}]});
        assert!(
            parse_completion(odd.to_string().as_bytes())
                .unwrap()
                .tool_calls
                .is_empty()
        );
    }

    #[test]
    fn tool_turns_serialize_as_openai_expects() {
        let call = ToolCall {
            id: "c1".into(),
            name: "my_task".into(),
            arguments: "{}".into(),
        };
        let messages = [
            ChatMessage::assistant_calls(None, vec![call]),
            ChatMessage::tool("c1", "{\"ok\":true}"),
        ];
        let tools = [json!({"type": "function", "function": {"name": "my_task"}})];
        let body = ChatRequest {
            model: "m",
            messages: &messages,
            temperature: 0.2,
            max_tokens: None,
            response_format: None,
            tools: Some(&tools),
            tool_choice: Some(ToolChoice::Auto),
        };
        let sent: Value = serde_json::to_value(&body).unwrap();
        assert_eq!(
            sent["messages"],
            json!([
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "my_task", "arguments": "{}"}}
                ]},
                {"role": "tool", "content": "{\"ok\":true}", "tool_call_id": "c1"}
            ])
        );
        assert_eq!(sent["tools"][0]["function"]["name"], "my_task");
        assert_eq!(sent["tool_choice"], "auto");
    }
}
