//! Typed payloads of the event log. Each type names its [`EventKind`]
//! ([`EventPayload::KIND`]), so the service cannot write a payload under the
//! wrong kind, and a test checks each type's fields against the catalogue's
//! list for its kind. Field names and nulls are exactly what the log has
//! always held; fields absent in some cases are skipped when `None`.
//!
//! - [`missions`]: missions, plans, routines, tasks and attempts, the
//!   governance events that move tasks and missions, the contract net and
//!   the organisation spec.
//! - [`coordination`]: the governance profile and decisions, the workforce
//!   (contractors, work packages, handoffs), messages, reservations, team
//!   decisions and tools.
//! - [`bdi`]: agents' beliefs, desires, goals and intentions, and missions
//!   as intentions.
//! - [`workflows`]: running BPMN workflow instances.
//!
//! Every type is re-exported here (`event_payloads::TaskQueued`).

use serde::Serialize;
use serde_json::Value;

use crate::events::EventKind;

/// A payload of one event kind.
pub trait EventPayload: Serialize {
    /// The kind this payload is written under.
    const KIND: EventKind;

    /// The kind and the payload as JSON, as the log stores them.
    fn to_event(&self) -> (EventKind, Value) {
        // Serialising these structs (string keys, no fallible fields) cannot fail.
        (
            Self::KIND,
            serde_json::to_value(self).unwrap_or(Value::Null),
        )
    }
}

/// Implements [`EventPayload`] for each `Type => Kind` pair.
macro_rules! payload_kind {
    ($($ty:ident => $kind:ident),* $(,)?) => {
        $(impl $crate::event_payloads::EventPayload for $ty {
            const KIND: $crate::events::EventKind = $crate::events::EventKind::$kind;
        })*
    };
}

pub mod bdi;
pub mod coordination;
pub mod missions;
pub mod workflows;

pub use bdi::*;
pub use coordination::*;
pub use missions::*;
pub use workflows::*;

#[cfg(test)]
mod tests;
