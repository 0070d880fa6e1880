//! SQL, one module per aggregate. Functions take a connection (usually a
//! transaction) so the transaction boundary is visible at the call site.
//!
//! Lock order, everywhere: task_queue rows (SKIP LOCKED, never waits) →
//! missions (by id) → agents (by key). Report handling, claims, cancels and
//! reconcile all follow it, so replicas cannot deadlock each other.

pub mod agents;
pub mod attempts;
pub mod attention;
pub mod bdi;
pub mod blackboard;
pub mod board;
pub mod contract_net;
pub mod event_notify;
pub mod events;
pub mod governance;
pub mod handoffs;
pub mod messages;
pub mod metrics;
pub mod mission_row;
pub mod missions;
pub mod organisation;
pub mod plan_cases;
pub mod reservations;
pub mod tasks;
pub mod team_decisions;
pub mod templates;
pub mod tool_approvals;
pub mod transitions;
pub mod webhooks;
pub mod workflow_instances;
pub mod workflow_timer_starts;
pub mod workflows;
pub mod workforce;
