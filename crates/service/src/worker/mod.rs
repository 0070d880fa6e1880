//! Workers: the protocol the coordinator speaks with them, and the reference
//! workers shipped with the service: `coordinator worker --simulate` (no real
//! work, deterministic latency and faults) and `coordinator worker --llm-url …`
//! (each task becomes a call to an OpenAI-compatible chat-completions API).

pub mod llm;
pub mod protocol;
pub mod simulate;
