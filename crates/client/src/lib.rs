//! The typed REST/SSE client of the coordinator's API ([`client`]), with no
//! dependency on the service: workers, tools and the CLI use it.

pub mod client;
