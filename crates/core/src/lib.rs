//! The coordinator's pure domain: no I/O, no async, no database.
//!
//! Nothing in this crate's dependency tree may be sqlx, axum, reqwest, tokio
//! or hyper (`tests/it/layers.rs` checks it), so every rule here is tested
//! without a server and cannot grow one by accident.
//!
//! - [`domain`]: mission, task and attempt lifecycles (`next(event)`), report
//!   decisions, retry backoff, escalation, budgets.
//! - [`planning`]: plan types, the HTN method library and TF-IDF matching,
//!   decomposition, DAG validation, the plan library's case similarity.
//! - [`verification`]: the checks a task's output must pass and their verdicts.
//! - [`assignment`]: the deterministic agent scorer.
//! - [`agents`]: agent statuses, who may change what about an agent, and
//!   why a pin to an agent cannot be honoured.
//! - [`organisation`]: MOISE+ organisation specs: validation, deontic
//!   verdicts, cardinality, the context a worker is sent.
//! - [`tool_policy`]: a task's tool-use policy, the verdict on one call, and
//!   the approval lifecycle.
//! - [`contract_net`]: tender states and the award formula.
//! - [`governance`]: decision styles, risk modifiers, thresholds, the check
//!   of an action and the decision lifecycle.
//! - [`messages`]: the agent message envelope and the inbox lifecycle.
//! - [`reservations`]: scope reservations: states and overlap.
//! - [`workforce`]: the work-package lifecycle, the trust formula and
//!   contractor auto-matching.
//! - [`invalid`]: the field error every use case's error enum shares.
//! - [`objects`]: nested structs read from JSON objects only.
//! - [`text`]: rules for text fields, shared by the checks and the API document.
//! - [`bdi`]: the BDI formulas: belief revision, desire priority and
//!   conflicts, goal tiers, intention lifecycles, commitment strategies.

pub mod agents;
pub mod assignment;
pub mod bdi;
pub mod contract_net;
pub mod domain;
pub mod governance;
pub mod handoffs;
pub mod invalid;
pub mod messages;
pub mod numbers;
pub mod objects;
pub mod organisation;
pub mod paging;
pub mod planning;
pub mod reservations;
pub mod team_decisions;
pub mod text;
pub mod tool_policy;
pub mod verification;
pub mod workforce;
