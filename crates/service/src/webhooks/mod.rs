//! Outbound webhooks: an external tool (a kanban board, a chat bot) follows
//! the workspace's card changes.
//!
//! Each hook keeps a cursor into the commit-ordered event log; the pump
//! ([`deliver`]) turns new matching events into delivery rows (the delivery
//! log) and POSTs them, signed with the hook's secret, retrying with
//! exponential backoff. Everything is in PostgreSQL, so any replica can pump
//! and nothing is lost when one dies. This module is the pure part: request
//! validation, signatures and backoff.

pub mod deliver;

use std::time::Duration;

use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;

use coordinator_core::invalid::Invalid;

/// Header with `sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">`.
pub const SIGNATURE_HEADER: &str = "x-coordinator-signature";
/// Header with the Unix time the signature covers (replay protection for receivers).
pub const TIMESTAMP_HEADER: &str = "x-coordinator-timestamp";
/// Header with the event kind.
pub const EVENT_HEADER: &str = "x-coordinator-event";
/// Header with the delivery id (stable across retries: receivers dedupe on it).
pub const DELIVERY_HEADER: &str = "x-coordinator-delivery";

/// Kinds delivered when a hook names none: every card change.
pub const DEFAULT_KINDS: &[&str] = &["task.*"];

/// `POST /v1/webhooks` body.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhook {
    /// Where to POST deliveries (http or https, no userinfo); public addresses only unless the service lists more (`--webhook-networks`). Redirects are not followed.
    #[schema(max_length = 2048, pattern = "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#@]+")]
    pub url: String,
    /// Event kinds to deliver (`task.*` style prefixes allowed); empty or absent: `task.*`.
    #[serde(default)]
    pub events: Vec<String>,
    /// Shared secret for the HMAC signature (16 to 256 characters).
    #[schema(min_length = 16, max_length = 256)]
    pub secret: String,
}

impl CreateWebhook {
    /// Checks the request; returns the kinds to store.
    pub fn validate(&self) -> Result<Vec<String>, Invalid> {
        let url = reqwest::Url::parse(&self.url)
            .map_err(|e| Invalid::new("url", format!("not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(Invalid::new(
                "url",
                "url must be an http or https URL with a host",
            ));
        }
        if self.url.len() > 2048 {
            return Err(Invalid::new("url", "url must be at most 2048 characters"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Invalid::new(
                "url",
                "url must not carry credentials (user:pass@); receivers check the signature header",
            ));
        }
        let n = self.secret.chars().count();
        if !(16..=256).contains(&n) {
            return Err(Invalid::new(
                "secret",
                "secret must be 16 to 256 characters",
            ));
        }
        if self.events.len() > 64 {
            return Err(Invalid::new("events", "at most 64 event kinds"));
        }
        for k in &self.events {
            if let Some(problem) = crate::store::events::kind_pattern_problem(k) {
                return Err(Invalid::new("events", problem));
            }
        }
        Ok(if self.events.is_empty() {
            DEFAULT_KINDS.iter().map(|k| (*k).to_owned()).collect()
        } else {
            self.events.clone()
        })
    }
}

/// The signature header value for `body` sent at `timestamp`.
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    // HMAC takes keys of any length, so this cannot fail.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// How retries are spaced and when a delivery gives up.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Wait after the first failure; doubles each time.
    pub base: Duration,
    /// Longest wait.
    pub cap: Duration,
    /// Tries before a delivery is marked failed.
    pub max_attempts: i32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            base: Duration::from_secs(2),
            cap: Duration::from_secs(600),
            max_attempts: 8,
        }
    }
}

impl RetryPolicy {
    /// The wait after `attempts` failed tries, or `None` to give up.
    pub fn next_wait(&self, attempts: i32) -> Option<Duration> {
        if attempts >= self.max_attempts {
            return None;
        }
        let shift = attempts.clamp(1, 30) as u32 - 1;
        Some(self.base.saturating_mul(1u32 << shift).min(self.cap))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_is_hmac_sha256_of_timestamp_dot_body() {
        // python3 -c 'import hmac,hashlib;print(hmac.new(b"0123456789abcdef", b"1700000000.{\"a\":1}", hashlib.sha256).hexdigest())'
        assert_eq!(
            sign("0123456789abcdef", 1_700_000_000, br#"{"a":1}"#),
            "sha256=9eb18f493f8ec135d9eb2dad817c369bb4e9cbfa818657897a7437c1cd8c3a23"
        );
        assert_ne!(
            sign("0123456789abcdef", 1_700_000_001, br#"{"a":1}"#),
            sign("0123456789abcdef", 1_700_000_000, br#"{"a":1}"#)
        );
    }

    #[test]
    fn backoff_doubles_to_the_cap_then_gives_up() {
        let p = RetryPolicy {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(5),
            max_attempts: 5,
        };
        let waits: Vec<_> = (1..=5).map(|n| p.next_wait(n)).collect();
        assert_eq!(
            waits,
            vec![
                Some(Duration::from_secs(1)),
                Some(Duration::from_secs(2)),
                Some(Duration::from_secs(4)),
                Some(Duration::from_secs(5)),
                None
            ]
        );
    }

    fn req(url: &str, events: &[&str], secret: &str) -> CreateWebhook {
        CreateWebhook {
            url: url.into(),
            events: events.iter().map(|e| (*e).to_owned()).collect(),
            secret: secret.into(),
        }
    }

    #[test]
    fn validation_names_the_bad_field() {
        let ok = req("https://example.com/hook", &[], "0123456789abcdef");
        assert_eq!(
            ok.validate().map_err(|e| e.to_string()),
            Ok(vec!["task.*".to_owned()])
        );
        for (bad, field) in [
            (req("ftp://example.com", &[], "0123456789abcdef"), "url"),
            (req("not a url", &[], "0123456789abcdef"), "url"),
            (
                req("https://u:p@example.com", &[], "0123456789abcdef"),
                "url",
            ),
            (req("https://example.com", &[], "short"), "secret"),
            (
                req("https://example.com", &["Task!"], "0123456789abcdef"),
                "events",
            ),
        ] {
            match bad.validate() {
                Err(e) => assert_eq!(e.field, field),
                other => panic!("{field}: expected a 400, got {other:?}"),
            }
        }
    }
}
