//! The chat-completions wire format: the request body and the parts of the
//! response callers use.

use serde::Serialize;
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
}

/// One chat message as sent to the server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: String,
}

impl ChatMessage {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::System,
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::User,
            content: content.into(),
        }
    }

    /// An assistant message (a previous answer).
    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::Assistant,
            content: content.into(),
        }
    }
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
        finish_reason,
        model,
        usage: usage(envelope.get("usage")),
    })
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
        };
        assert_eq!(
            serde_json::to_string(&body).unwrap(),
            r#"{"model":"m","messages":[{"role":"system","content":"s"},{"role":"assistant","content":"a"}],"temperature":0.2}"#
        );
    }
}
