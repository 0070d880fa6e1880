//! The coordinator service: store, engine, HTTP API and MCP, and the
//! coordination use cases around missions, over the pure core
//! (`coordinator_core`, re-exported here as [`domain`], [`planning`] and
//! [`verification`]).
//!
//! Users give it a goal; it plans a dependency graph of tasks, assigns agents
//! deterministically, dispatches work over HTTP to workers, reconciles what
//! comes back, and involves people for approvals. PostgreSQL is the single
//! source of truth, so any number of replicas can run side by side.
//!
//! Where things live:
//! - [`domain`], [`planning`], [`verification`], [`assignment`] (the
//!   deterministic agent scorer): the pure core; [`planning::llm`] adds the
//!   LLM planner client.
//! - [`store`]: SQL, one module per aggregate (missions, tasks, attempts, agents, events).
//! - [`missions`]: mission use cases (create, approve, cancel, review, view).
//! - [`coordination`]: messages, reservations, contract net, governance,
//!   workforce and handoffs around missions.
//! - [`bdi`]: BDI state per agent (beliefs, desires, goals, intentions), missions
//!   as intentions, and the scheduled BDI maintenance job.
//! - [`engine`]: the tick — dispatch (claim, assign, send) and reconcile (leases, sweeps).
//! - [`api`]: HTTP handlers (thin), extractors, [`api::Application`].
//! - [`timeline`]: the mission timeline and snapshots, pure projections of its event log.
//! - [`tools`]: the chat tools, served as function-calling schemas and over MCP.
//! - [`worker`]: the worker protocol (`coordinator-protocol`); the reference
//!   workers (simulated and LLM) are in `coordinator-workers`.
//! - [`auth`]: bearer tokens and roles; [`retry_after`]: reading `Retry-After`.
//! - [`telemetry`]: logs, OTLP trace export, `traceparent` propagation.
//! - [`db`] and [`local_postgres`]: connecting, migrations, the private PostgreSQL.

pub use coordinator_core::{assignment, domain, verification};
/// `Retry-After`, read one way everywhere (`coordinator-llm` holds it).
pub use coordinator_llm::retry_after;

/// Plans: the pure core's planning, plus the LLM planner client.
pub mod planning {
    pub use coordinator_core::planning::*;
    pub mod llm;
}

pub mod api;
pub mod auth;
pub mod bdi;
pub mod board;
pub mod coordination;
pub mod db;
pub mod egress;
pub mod engine;
pub mod error;
pub mod local_postgres;
pub mod metrics;
pub mod missions;
pub mod retention;
pub mod store;
pub mod telemetry;
pub mod timeline;
pub mod tools;
pub mod webhooks;
pub mod worker;
pub mod workflows;
