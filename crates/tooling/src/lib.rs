//! Tools around the service, kept out of its library:
//! - [`bench`]: `coordinator bench`, the engine benchmark and the suite's report.
//! - [`chaos`]: `coordinator chaos`, real replicas killed while workers misbehave.
//! - [`soak`]: `coordinator soak`, real replicas under a long faulty load, watched for growth.
//! - [`audit`]: `coordinator audit`, the read-only check of a database's invariants.
//! - [`demo`]: `coordinator demo`, the embedded one-mission demo.

// The service's modules (and the workers), so that paths read
// `crate::api::…` and `crate::worker::simulate::…` as they did when the
// tooling lived inside the service.
use coordinator_client::client;
#[cfg(test)]
use coordinator_service::planning;
use coordinator_service::{api, auth, db, engine, local_postgres, missions, timeline};
use coordinator_workers as worker;

pub mod audit;
pub mod bench;
pub mod chaos;
pub mod demo;
pub mod soak;
