//! Fitting a request into the model's context window: how big the server's
//! context is (configured, reported by the server, or named by its error),
//! an estimate of a prompt's tokens, and the answer cap that leaves room for
//! both.
//!
//! The estimate is deliberately pessimistic. No tokenizer is at hand (each
//! model has its own), so a prompt is counted as its UTF-8 bytes divided by
//! 3.5, rounded up, plus [`MESSAGE_OVERHEAD_TOKENS`] per message for the chat
//! template's role markers. English prose runs at about 4 bytes per token on
//! the common BPE vocabularies and JSON at about 3, so bytes / 3.5 is close
//! for a mixed prompt; [`margin`] then keeps a tenth of the estimate (and at
//! least [`MIN_MARGIN_TOKENS`]) free for the error in it.

use serde_json::Value;

use crate::{error::CallError, wire::ChatMessage};

/// Tokens a chat template adds around each message (role markers, separators).
pub const MESSAGE_OVERHEAD_TOKENS: u32 = 8;

/// Smallest safety margin kept between the estimated prompt plus the answer
/// cap and the context size.
pub const MIN_MARGIN_TOKENS: u32 = 32;

/// Estimated tokens of `text`: its UTF-8 bytes / 3.5, rounded up.
pub fn estimate_tokens(text: &str) -> u32 {
    // bytes * 2 / 7 == bytes / 3.5, in integers, rounded up.
    let bytes = u64::try_from(text.len()).unwrap_or(u64::MAX);
    let tokens = bytes.saturating_mul(2).div_ceil(7);
    u32::try_from(tokens).unwrap_or(u32::MAX)
}

/// Estimated prompt tokens of a conversation and the tools offered with it
/// (chat templates render the tools' JSON into the prompt).
pub fn estimate_prompt(messages: &[ChatMessage], tools: Option<&[Value]>) -> u32 {
    let mut total = 0u32;
    for m in messages {
        total = total
            .saturating_add(MESSAGE_OVERHEAD_TOKENS)
            .saturating_add(estimate_tokens(&m.content));
        for call in &m.tool_calls {
            total = total
                .saturating_add(estimate_tokens(&call.name))
                .saturating_add(estimate_tokens(&call.arguments));
        }
    }
    for tool in tools.unwrap_or_default() {
        total = total.saturating_add(estimate_tokens(&tool.to_string()));
    }
    total
}

/// Tokens kept free for the estimate's error: a tenth of it, at least
/// [`MIN_MARGIN_TOKENS`].
pub fn margin(prompt_estimate: u32) -> u32 {
    (prompt_estimate / 10).max(MIN_MARGIN_TOKENS)
}

/// The answer cap for a prompt of `prompt_estimate` tokens in a context of
/// `context` tokens: what is left after the prompt and the [`margin`],
/// never more than `cap`. `None` when less than `min_answer` is left, i.e.
/// the prompt itself must shrink.
pub fn answer_budget(
    context: u32,
    prompt_estimate: u32,
    cap: Option<u32>,
    min_answer: u32,
) -> Option<u32> {
    let left = context
        .saturating_sub(prompt_estimate)
        .saturating_sub(margin(prompt_estimate));
    let budget = cap.map_or(left, |cap| cap.min(left));
    (budget >= min_answer.max(1)).then_some(budget)
}

/// Whether a server's refusal is about the request not fitting its context:
/// a 400 or 413 whose body speaks of the context length, window or size
/// (OpenAI, vLLM and llama-cpp-python: "maximum context length is N
/// tokens"; llama.cpp's server: "exceeds the available context size").
pub fn is_context_error(err: &CallError) -> bool {
    match err {
        CallError::Status { status, body, .. } => {
            matches!(status.as_u16(), 400 | 413) && mentions_context(body)
        }
        _ => false,
    }
}

/// Whether an error text is about the context being too small.
fn mentions_context(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    [
        "context length",
        "context window",
        "context size",
        "context_length_exceeded",
        "exceed_context_size",
        "n_ctx",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// The context size an error text names: "maximum context length is N
/// tokens" (OpenAI, vLLM, llama-cpp-python), "context window of N"
/// (llama-cpp-python's own), or a JSON field `"n_ctx": N` (llama.cpp).
pub fn context_limit_in(text: &str) -> Option<u32> {
    let lower = text.to_ascii_lowercase();
    [
        "maximum context length is",
        "context window of",
        "\"n_ctx\":",
    ]
    .iter()
    .find_map(|marker| number_after(&lower, marker))
    .filter(|n| *n > 0)
}

/// The first whole number after `marker` in `text` (spaces allowed between).
fn number_after(text: &str, marker: &str) -> Option<u32> {
    let start = text.find(marker)? + marker.len();
    let digits: String = text[start..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The context size in a llama.cpp server's `GET /props` answer
/// (`default_generation_settings.n_ctx`, or a top-level `n_ctx`).
pub fn context_from_props(props: &Value) -> Option<u32> {
    props
        .pointer("/default_generation_settings/n_ctx")
        .or_else(|| props.get("n_ctx"))
        .and_then(positive)
}

/// The context size a `GET /v1/models` answer gives for `model` (vLLM's
/// `max_model_len`), or for its only model when none has that id.
/// llama-cpp-python reports none, and llama.cpp's `meta.n_ctx_train` is the
/// training context, not the one the server allocated, so it is not read.
pub fn context_from_models(models: &Value, model: &str) -> Option<u32> {
    let list = models.get("data")?.as_array()?;
    let entry = list
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (list.len() == 1).then(|| &list[0]))?;
    entry.get("max_model_len").and_then(positive)
}

/// A positive integer that fits a `u32`.
fn positive(v: &Value) -> Option<u32> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n > 0)
}

#[cfg(test)]
mod tests {
    use reqwest::StatusCode;
    use serde_json::json;

    use super::*;

    const LLAMA_CPP_PYTHON: &str = r#"{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 8399 tokens (4303 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;

    fn status(code: u16, body: &str) -> CallError {
        CallError::Status {
            status: StatusCode::from_u16(code).unwrap(),
            retry_after: None,
            body: body.into(),
        }
    }

    #[test]
    fn tokens_are_bytes_over_three_and_a_half_rounded_up() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("a"), 1);
        assert_eq!(estimate_tokens(&"x".repeat(7)), 2);
        assert_eq!(estimate_tokens(&"x".repeat(8)), 3);
        assert_eq!(estimate_tokens(&"x".repeat(3500)), 1000);
        // Bytes, not characters: "é" is two.
        assert_eq!(estimate_tokens(&"é".repeat(7)), 4);
    }

    #[test]
    fn a_prompt_counts_messages_their_overhead_calls_and_tools() {
        let messages = [
            ChatMessage::system("x".repeat(35)),
            ChatMessage::user("x".repeat(70)),
        ];
        assert_eq!(estimate_prompt(&messages, None), 10 + 20 + 2 * 8);
        let tools = [json!({"name": "x".repeat(27)})];
        // `{"name":"` + 27 + `"}` = 38 bytes → 11 tokens.
        assert_eq!(estimate_prompt(&messages, Some(&tools)), 46 + 11);
        let call = ChatMessage::assistant_calls(
            None,
            vec![crate::ToolCall {
                id: "c".into(),
                name: "abcdefg".into(),
                arguments: "{}".into(),
            }],
        );
        assert_eq!(estimate_prompt(&[call], None), 8 + 2 + 1);
    }

    #[test]
    fn the_answer_gets_what_the_prompt_and_margin_leave_up_to_the_cap() {
        assert_eq!(margin(100), MIN_MARGIN_TOKENS);
        assert_eq!(margin(1000), 100);
        // 4096 - 1000 - 100 = 2996, under the cap of 4096.
        assert_eq!(answer_budget(4096, 1000, Some(4096), 256), Some(2996));
        assert_eq!(answer_budget(4096, 1000, Some(600), 256), Some(600));
        assert_eq!(answer_budget(4096, 1000, None, 256), Some(2996));
        // Too little left: the prompt must shrink.
        assert_eq!(answer_budget(4096, 3700, Some(4096), 256), None);
        assert_eq!(answer_budget(4096, 5000, Some(4096), 1), None);
        assert_eq!(answer_budget(0, 0, None, 0), None);
    }

    #[test]
    fn context_errors_are_recognised_by_their_text() {
        assert!(is_context_error(&status(400, LLAMA_CPP_PYTHON)));
        assert!(is_context_error(&status(
            400,
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}"#
        )));
        assert!(!is_context_error(&status(400, "bad model name")));
        assert!(!is_context_error(&status(500, LLAMA_CPP_PYTHON)));
        assert!(!is_context_error(&CallError::Transport(
            "context length".into()
        )));
    }

    #[test]
    fn the_limit_an_error_names_is_read() {
        assert_eq!(context_limit_in(LLAMA_CPP_PYTHON), Some(4096));
        assert_eq!(
            context_limit_in("Requested tokens (5000) exceed context window of 2048"),
            Some(2048)
        );
        assert_eq!(
            context_limit_in(r#"{"n_prompt_tokens":5000,"n_ctx": 8192}"#),
            Some(8192)
        );
        assert_eq!(context_limit_in("maximum context length is  tokens"), None);
        assert_eq!(context_limit_in("maximum context length is 0 tokens"), None);
        assert_eq!(
            context_limit_in("maximum context length is 99999999999 tokens"),
            None
        );
        assert_eq!(context_limit_in("nothing here"), None);
    }

    #[test]
    fn servers_report_their_context_where_they_can() {
        let props = json!({"default_generation_settings": {"n_ctx": 4096}});
        assert_eq!(context_from_props(&props), Some(4096));
        assert_eq!(context_from_props(&json!({"n_ctx": 2048})), Some(2048));
        assert_eq!(context_from_props(&json!({"n_ctx": -1})), None);
        assert_eq!(context_from_props(&json!([])), None);
        let vllm = json!({"data": [{"id": "a"}, {"id": "m", "max_model_len": 32768}]});
        assert_eq!(context_from_models(&vllm, "m"), Some(32768));
        assert_eq!(context_from_models(&vllm, "other"), None);
        let single = json!({"data": [{"id": "x.gguf", "max_model_len": 4096}]});
        assert_eq!(context_from_models(&single, "smollm2"), Some(4096));
        let llama = json!({"data": [{"id": "x.gguf", "meta": {"n_ctx_train": 8192}}]});
        assert_eq!(context_from_models(&llama, "x.gguf"), None);
        // llama-cpp-python says nothing about its context.
        let silent = json!({"object": "list", "data": [{"id": "smollm2", "object": "model"}]});
        assert_eq!(context_from_models(&silent, "smollm2"), None);
    }
}
