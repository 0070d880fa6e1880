//! The relational coordination layer around missions: agent messages,
//! reservations, contract-net tenders, governance decisions, the workforce
//! of human contractors, and agent ⇄ human handoffs.
//!
//! Each module holds the pure rules of its concept (lifecycles, formulas,
//! validation) and the use cases that apply them in one transaction; the SQL
//! sits in the matching [`crate::store`] module, the HTTP handlers in
//! [`crate::api`].

pub mod agents;
pub mod blackboard;
pub mod contract_net;
pub mod governance;
pub mod handoffs;
pub mod messages;
pub mod organisation;
pub mod performatives;
pub mod reservations;
pub mod team_decisions;
pub mod tool_access;
pub mod tool_policy;
pub mod workforce;
