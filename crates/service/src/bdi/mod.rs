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
//!
//! See `docs/bdi.md` for the formulas, endpoints and examples.

pub mod missions;
/// The pure rules live in the core crate.
pub use coordinator_core::bdi as rules;
pub mod runtime;
pub mod state;
