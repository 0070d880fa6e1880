//! `serve`'s client connection settings.

use std::time::Duration;

use crate::api::Settings;

/// Client connection timeouts and caps (see docs/security.md, "Connection limits").
#[derive(Debug, Clone, clap::Args)]
pub struct ConnectionArgs {
    /// Seconds a client has, from connecting (or from the first byte of a later request), to send a whole request head.
    #[arg(long, env = "COORDINATOR_HEADER_READ_TIMEOUT_SECS", default_value_t = crate::api::connections::DEFAULT_HEADER_READ_TIMEOUT.as_secs())]
    pub header_read_timeout_secs: u64,
    /// Longest pause, in seconds, between two pieces of a request body (the request then fails).
    #[arg(long, env = "COORDINATOR_REQUEST_BODY_TIMEOUT_SECS", default_value_t = crate::api::connections::DEFAULT_BODY_TIMEOUT.as_secs())]
    pub request_body_timeout_secs: u64,
    /// Seconds a kept-alive connection with no request in flight may stay silent (SSE streams are never idle).
    #[arg(long, env = "COORDINATOR_IDLE_TIMEOUT_SECS", default_value_t = crate::api::connections::DEFAULT_IDLE_TIMEOUT.as_secs())]
    pub idle_timeout_secs: u64,
    /// Open client connections overall (lowered at start to fit the open-file limit); more are closed at once.
    #[arg(long, env = "COORDINATOR_MAX_CONNECTIONS", default_value_t = crate::api::connections::DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// Open client connections per client IP address; more are closed at once.
    #[arg(long, env = "COORDINATOR_MAX_CONNECTIONS_PER_IP", default_value_t = crate::api::connections::DEFAULT_MAX_CONNECTIONS_PER_IP)]
    pub max_connections_per_ip: usize,
    /// Seconds a request may take, from its head to its answer, before it is answered 503 (`unavailable`); event streams are exempt once they have started.
    #[arg(long, env = "COORDINATOR_REQUEST_TIMEOUT_SECS", default_value_t = crate::api::connections::DEFAULT_REQUEST_TIMEOUT.as_secs())]
    pub request_timeout_secs: u64,
}

impl ConnectionArgs {
    /// Applies these settings to `settings`.
    pub fn apply(&self, settings: &mut Settings) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.header_read_timeout_secs >= 1
                && self.request_body_timeout_secs >= 1
                && self.idle_timeout_secs >= 1
                && self.request_timeout_secs >= 1,
            "--header-read-timeout-secs, --request-body-timeout-secs, --idle-timeout-secs and \
             --request-timeout-secs must be at least 1"
        );
        anyhow::ensure!(
            self.max_connections >= 1 && self.max_connections_per_ip >= 1,
            "--max-connections and --max-connections-per-ip must be at least 1"
        );
        settings.connections = crate::api::connections::ConnectionLimits {
            header_read_timeout: Duration::from_secs(self.header_read_timeout_secs),
            body_timeout: Duration::from_secs(self.request_body_timeout_secs),
            idle_timeout: Duration::from_secs(self.idle_timeout_secs),
            max_connections: self.max_connections,
            max_connections_per_ip: self.max_connections_per_ip,
            request_timeout: Duration::from_secs(self.request_timeout_secs),
        };
        Ok(())
    }
}
