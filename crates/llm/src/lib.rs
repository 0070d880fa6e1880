//! One client for OpenAI-compatible chat-completions APIs (OpenAI, llama.cpp's
//! server, vLLM, …), shared by the LLM planner and the LLM worker.
//!
//! - [`ChatClient`]: one call within a per-call timeout, its body read up to
//!   a cap, retries with backoff and jitter honouring `Retry-After`
//!   ([`retry_after`]), and the API key kept out of every error and `{:?}`.
//! - [`ChatRequest`], [`ChatMessage`], [`Completion`], [`Usage`]: the wire
//!   format and token accounting; [`parse_completion`] reads odd servers too.
//!   Function calling: `tools` and `tool_choice` ([`ToolChoice`]) on the
//!   request, the answer's [`ToolCall`]s (read leniently, so a malformed
//!   call reaches the caller to be reported back to the model), and
//!   assistant turns with tool calls and `tool` messages answering them
//!   ([`ChatMessage::assistant_calls`], [`ChatMessage::tool`]).
//! - [`CallError`]: why a call failed, classified (retryable or not, the
//!   server's `Retry-After`, a refused `response_format`).
//! - [`context`]: fitting a request into the model's context window (the
//!   size configured, reported by the server via
//!   [`ChatClient::discover_context`] or named by its error; a prompt's
//!   estimated tokens; the answer cap that is left).
//! - [`format`]: `response_format` bodies ([`WireFormat`]) and JSON whose keys
//!   keep their order, for schemas.
//!
//! Each caller keeps its own policy on top: the planner its `json_schema` →
//! `json_object` fallback, repair rounds and error codes; the worker its
//! mapping of outcomes to reports and its cost.

mod client;
pub mod context;
mod error;
pub mod format;
pub mod retry_after;
mod wire;

pub use client::{
    Call, ChatClient, ClientOptions, RetryPolicy, backoff, completions_url, redacted,
};
pub use error::{BODY_EXCERPT_CHARS, CallError, REDACTED, error_chain, excerpt, redact};
pub use format::{OrderedJson, WireFormat};
pub use wire::{
    ChatMessage, ChatRequest, Completion, MAX_TOOL_CALLS, Role, ToolCall, ToolChoice, Usage,
    json_kind, parse_completion, truncate_bytes,
};
