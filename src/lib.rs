//! Mission coordinator for LLM agents: the `coordinator` command and one
//! facade over the workspace's crates, so tools and tests can say
//! `coordinator::api` whichever crate a module lives in.
//!
//! The crates, from the bottom up (`docs/architecture.md` has the map and the
//! rule of which may import which):
//! - `coordinator-core`: the pure domain ([`domain`], [`planning`] without its
//!   LLM client, [`verification`], the BDI rules).
//! - `coordinator-service`: store, engine, API, coordination use cases and the
//!   reference workers — everything a replica runs.
//! - `coordinator-client`: [`client`] (REST/SSE).
//! - `coordinator-tooling`: [`bench`], [`chaos`], [`audit`] and [`demo`].
//! - this crate: [`cli`] (the command line), [`cli_client`] (its `mission`,
//!   `agent` and `token` commands) and [`config`] (its TOML file).

pub use coordinator_client::client;
pub use coordinator_service::*;
pub use coordinator_tooling::{audit, bench, chaos, demo};

pub mod cli;
pub mod cli_client;
pub mod config;
