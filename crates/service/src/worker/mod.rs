//! Workers, as the service sees them: the protocol it speaks with them.
//!
//! The wire types live in `coordinator-protocol` (re-exported here as
//! [`protocol`], so `crate::worker::protocol::…` paths keep working); the
//! reference workers (`coordinator worker --simulate` and `--llm-url …`) live
//! in `coordinator-workers`, which does not depend on the service.

pub use coordinator_protocol as protocol;
