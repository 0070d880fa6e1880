//! The reference workers shipped with the coordinator, outside the service:
//! they speak the worker protocol (`coordinator-protocol`) over HTTP and
//! never depend on `coordinator-service`.
//!
//! - [`harness`]: the protocol's server side, shared by both workers
//!   (routes, accept and cancel, in-flight bookkeeping, heartbeats, result
//!   delivery with retries, stats); a worker only says how to do a task.
//! - [`simulate`]: `coordinator worker --simulate`, no real work,
//!   deterministic latency and faults.
//! - [`llm`]: `coordinator worker --llm-url …`, each task a bounded
//!   function-calling loop with an OpenAI-compatible chat-completions API
//!   (`coordinator-llm`) over the attempt's agent tools and `finish`.

pub mod harness;
pub mod llm;
pub mod simulate;

#[cfg(test)]
mod test_support;
