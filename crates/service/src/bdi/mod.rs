//! BDI state per agent — beliefs, desires, goals, intentions — and the BDI
//! maintenance runtime, after the seed specification (§5–§7, §16.4).
//!
//! - [`rules`]: the pure rules: belief revision, the desire priority
//!   formula, desire conflicts and the drop cascade, goal tiers, intention
//!   lifecycles and `intention_reconsider`, commitment strategies (and how
//!   missions map to them).
//! - [`state`]: use cases, one transaction each, with their events.
//! - [`missions`]: missions as intentions: a mission's commitment strategy
//!   and the `mission.reconsidered` event its replanning triggers write.
//! - [`runtime`]: the scheduled maintenance cycle (one replica at a time).
//! - [`evaluate`]: reading and judging an agent's state (beliefs, ranked
//!   desires, a goal's standing, every intention reconsidered).
//! - [`steps`]: a step of an intention's plan reported (`plan_execute_step`).
//! - [`cycle`]: one agent's BDI cycle (`bdi_cycle`), with its audit record.
//! - [`requests`]: the bodies of the BDI writes (REST and tools).
//! - [`plans`]: an agent's plans without a mission (`plan_generate`,
//!   `htn_decompose`).
//!
//! See `docs/bdi.md` for the formulas, endpoints and examples.

pub mod cycle;
pub mod evaluate;
pub mod missions;
pub mod plans;
pub mod requests;
/// The pure rules live in the core crate.
pub use coordinator_core::bdi as rules;
pub mod runtime;
pub mod state;
pub mod steps;
