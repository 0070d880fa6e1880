//! Mission coordinator for LLM agents: the `coordinator` command and one
//! facade over the workspace's crates, so tools and tests can say
//! `coordinator::api` whichever crate a module lives in.
//!
//! The crates, from the bottom up (`docs/architecture.md` has the map and the
//! rule of which may import which):
//! - `coordinator-core`: the pure domain ([`domain`], [`planning`] without its
//!   LLM client, [`verification`], the BDI rules).
//! - `coordinator-protocol`: the worker protocol's wire types
//!   ([`worker::protocol`]); `coordinator-llm`: the one chat-completions
//!   client of the planner and the LLM worker.
//! - `coordinator-service`: store, engine, API and coordination use cases —
//!   everything a replica runs.
//! - `coordinator-workers`: the reference workers ([`worker::simulate`],
//!   [`worker::llm`]) on one protocol harness.
//! - `coordinator-client`: [`client`] (REST/SSE).
//! - `coordinator-tooling`: [`bench`], [`chaos`], [`audit`] and [`demo`].
//! - this crate: [`cli`] (the command line), [`cli_client`] (its `mission`,
//!   `agent` and `token` commands) and [`config`] (its TOML file).

pub use coordinator_client::client;
pub use coordinator_service::*;

/// Workers: the protocol (the service's [`protocol`](worker::protocol)) and
/// the reference workers from `coordinator-workers`, under their old paths.
pub mod worker {
    pub use coordinator_service::worker::*;
    pub use coordinator_workers::{harness, llm, simulate};
}
pub use coordinator_tooling::{audit, bench, chaos, demo, soak};

pub mod cli;
pub mod cli_client;
pub mod config;
