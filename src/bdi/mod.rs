//! BDI state per agent — beliefs, desires, goals, intentions — after the
//! seed specification (§5–§7, §16.4).
//!
//! - [`rules`]: the pure rules: belief revision, the desire priority
//!   formula, desire conflicts and the drop cascade, goal tiers, intention
//!   lifecycles and `intention_reconsider`, commitment strategies (and how
//!   missions map to them).

pub mod rules;
