//! Mission coordinator for LLM agents.
//!
//! Users give it a goal; it plans a dependency graph of tasks, assigns agents
//! deterministically, dispatches work over HTTP to workers, reconciles what
//! comes back, and involves people for approvals. PostgreSQL is the single
//! source of truth, so any number of replicas can run side by side.
//!
//! Where things live:
//! - [`domain`]: pure lifecycles (mission, task, attempt) and report rules.
//! - [`planning`]: pure plan types, the template library and DAG validation.
//! - [`assignment`]: the pure, deterministic agent scorer.
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
//! - [`worker`]: the worker protocol and the simulated reference worker.
//! - [`auth`]: bearer tokens and roles; [`retry_after`]: reading `Retry-After`.
//! - [`telemetry`]: logs, OTLP trace export, `traceparent` propagation.
//! - [`db`] and [`local_postgres`]: connecting, migrations, the private PostgreSQL.
//! - [`chaos`] and [`audit`]: the chaos run (real replicas killed while
//!   workers misbehave) and the auditor of a database's invariants.
//! - [`cli`], [`demo`] and [`bench`]: the `coordinator` command ([`config`]: its TOML file); [`cli_client`]:
//!   its `mission`, `agent` and `token` commands, over [`client`] (the REST/SSE client).

pub mod api;
pub mod assignment;
pub mod audit;
pub mod auth;
pub mod bdi;
pub mod bench;
pub mod board;
pub mod chaos;
pub mod cli;
pub mod cli_client;
pub mod client;
pub mod config;
pub mod coordination;
pub mod db;
pub mod demo;
pub mod domain;
pub mod engine;
pub mod error;
pub mod local_postgres;
pub mod metrics;
pub mod missions;
pub mod planning;
pub mod retention;
pub mod retry_after;
pub mod store;
pub mod telemetry;
pub mod timeline;
pub mod tools;
pub mod verification;
pub mod webhooks;
pub mod worker;
