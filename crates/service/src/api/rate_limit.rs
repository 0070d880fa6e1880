//! Per-credential rate limits on the API: a token bucket per API token (by
//! token id, charged once the token is authenticated) and per client IP for
//! requests that carry no valid token.
//!
//! Buckets live in this process's memory: with N replicas behind a load
//! balancer a credential gets up to N× the configured rate. Health probes,
//! `/metrics` and worker callbacks (`/v1/attempts/…`, authenticated by a
//! per-attempt token and paced by the engine's own dispatches) are exempt so
//! a busy client can never starve liveness checks or result reporting.

use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    sync::Mutex,
    time::{Duration, Instant},
};

use axum::{
    extract::{ConnectInfo, Request, State},
    http::header,
    middleware::Next,
    response::{IntoResponse, Response},
};
use uuid::Uuid;

use super::AppState;
use crate::error::ApiError;

/// Default sustained requests per second per credential.
pub const DEFAULT_PER_SEC: f64 = 50.0;
/// Default burst (bucket size) per credential.
pub const DEFAULT_BURST: u32 = 100;

/// Buckets are pruned once the map holds this many (full buckets only).
const PRUNE_AT: usize = 10_000;

/// How fast and how far each credential may go; `per_sec == 0` disables.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Tokens added per second.
    pub per_sec: f64,
    /// Bucket size: requests allowed back to back after a quiet spell.
    pub burst: u32,
}

impl RateLimit {
    /// No limit at all.
    pub const DISABLED: RateLimit = RateLimit {
        per_sec: 0.0,
        burst: 0,
    };

    /// Whether requests are limited at all.
    pub fn enabled(&self) -> bool {
        self.per_sec > 0.0 && self.burst > 0
    }
}

/// Who a bucket belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    /// An authenticated API token.
    Token(Uuid),
    /// A client without a valid token.
    Ip(IpAddr),
}

/// One credential's bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// A full bucket at `now`.
    pub fn full(limit: RateLimit, now: Instant) -> Bucket {
        Bucket {
            tokens: f64::from(limit.burst),
            at: now,
        }
    }

    /// Takes one token at `now`; on refusal, how long until one is there.
    pub fn take(&mut self, limit: RateLimit, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * limit.per_sec).min(f64::from(limit.burst));
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - self.tokens) / limit.per_sec))
        }
    }

    /// Whether it would be full at `now` (so forgetting it changes nothing).
    fn is_full(&self, limit: RateLimit, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens + elapsed * limit.per_sec >= f64::from(limit.burst)
    }
}

/// Whole seconds for `Retry-After`: rounded up, at least 1 (a client told
/// `0` would retry at once and be refused again).
pub fn retry_after_secs(wait: Duration) -> u64 {
    (wait.as_secs_f64().ceil() as u64).max(1)
}

/// The buckets of one process.
#[derive(Debug)]
pub struct RateLimiter {
    limit: RateLimit,
    buckets: Mutex<HashMap<Key, Bucket>>,
}

impl RateLimiter {
    /// A limiter applying `limit` to every key.
    pub fn new(limit: RateLimit) -> RateLimiter {
        RateLimiter {
            limit,
            buckets: Mutex::default(),
        }
    }

    /// Charges one request to `key` at `now`; on refusal, the wait.
    pub fn check_at(&self, key: Key, now: Instant) -> Result<(), Duration> {
        if !self.limit.enabled() {
            return Ok(());
        }
        let limit = self.limit;
        // A poisoned lock only means another request panicked mid-update;
        // the map of plain numbers is still usable.
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= PRUNE_AT {
            // Full buckets carry no state: dropping them bounds memory when
            // many clients (or made-up keys) come and go.
            buckets.retain(|_, b| !b.is_full(limit, now));
        }
        buckets
            .entry(key)
            .or_insert_with(|| Bucket::full(limit, now))
            .take(limit, now)
    }

    /// Charges one request to `key` now; 429 `rate_limited` when over.
    pub fn check(&self, key: Key) -> Result<(), ApiError> {
        self.check_at(key, Instant::now())
            .map_err(|wait| ApiError::RateLimited {
                retry_after_secs: retry_after_secs(wait),
            })
    }

    /// Buckets held (for tests of pruning).
    pub fn len(&self) -> usize {
        self.buckets.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether no bucket is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Paths never limited: probes, the scrape and worker callbacks.
pub fn is_exempt(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/metrics") || path.starts_with("/v1/attempts/")
}

/// The client address of a request (`None` when served without connect info).
pub fn client_ip<B>(req: &axum::http::Request<B>) -> Option<IpAddr> {
    req.extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip())
}

/// Middleware: requests without an `Authorization` header are charged to
/// their client IP. Requests with one are charged to their token once it is
/// authenticated (see the `Principal` extractor), or to the IP if it is not.
pub async fn limit_anonymous(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if !is_exempt(req.uri().path())
        && !req.headers().contains_key(header::AUTHORIZATION)
        && let Some(ip) = client_ip(&req)
        && let Err(e) = state.limiter.check(Key::Ip(ip))
    {
        return e.into_response();
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: RateLimit = RateLimit {
        per_sec: 2.0,
        burst: 3,
    };

    #[test]
    fn a_bucket_allows_the_burst_then_refills_at_the_rate() {
        let t0 = Instant::now();
        let mut b = Bucket::full(LIMIT, t0);
        for _ in 0..3 {
            assert_eq!(b.take(LIMIT, t0), Ok(()));
        }
        // Empty: one token takes 1 / 2 per sec = 0.5 s.
        assert_eq!(b.take(LIMIT, t0), Err(Duration::from_millis(500)));
        // 0.25 s later half a token is back; the other half takes 0.25 s.
        assert_eq!(
            b.take(LIMIT, t0 + Duration::from_millis(250)),
            Err(Duration::from_millis(250))
        );
        assert_eq!(b.take(LIMIT, t0 + Duration::from_millis(500)), Ok(()));
        // A long pause refills only up to the burst.
        let later = t0 + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(b.take(LIMIT, later), Ok(()));
        }
        assert!(b.take(LIMIT, later).is_err());
    }

    #[test]
    fn retry_after_is_whole_seconds_and_never_zero() {
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(500)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1001)), 2);
        assert_eq!(retry_after_secs(Duration::from_secs(3)), 3);
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
    }

    #[test]
    fn keys_have_separate_buckets_and_zero_disables() {
        let t0 = Instant::now();
        let limiter = RateLimiter::new(RateLimit {
            per_sec: 1.0,
            burst: 1,
        });
        let a = Key::Token(Uuid::from_u128(1));
        let b = Key::Token(Uuid::from_u128(2));
        let ip = Key::Ip(IpAddr::from([127, 0, 0, 1]));
        assert!(limiter.check_at(a, t0).is_ok());
        assert_eq!(limiter.check_at(a, t0), Err(Duration::from_secs(1)));
        assert!(limiter.check_at(b, t0).is_ok());
        assert!(limiter.check_at(ip, t0).is_ok());
        assert!(limiter.check_at(a, t0 + Duration::from_secs(1)).is_ok());

        let off = RateLimiter::new(RateLimit::DISABLED);
        for _ in 0..1000 {
            assert!(off.check_at(a, t0).is_ok());
        }
        assert!(off.is_empty(), "a disabled limiter keeps no state");
        let no_rate = RateLimiter::new(RateLimit {
            per_sec: 0.0,
            burst: 10,
        });
        assert!(!no_rate.limit.enabled());
    }

    #[test]
    fn full_buckets_are_pruned_when_the_map_is_large() {
        let t0 = Instant::now();
        let limiter = RateLimiter::new(LIMIT);
        for i in 0..PRUNE_AT as u128 {
            limiter
                .check_at(Key::Token(Uuid::from_u128(i)), t0)
                .expect("first request passes");
        }
        assert_eq!(limiter.len(), PRUNE_AT);
        // 0.5 s later each bucket has 2 + 1 = 3 tokens again (full): all go,
        // only the new key's bucket stays.
        let later = t0 + Duration::from_millis(500);
        let new = Key::Token(Uuid::from_u128(u128::MAX));
        assert!(limiter.check_at(new, later).is_ok());
        assert_eq!(limiter.len(), 1);
    }

    #[test]
    fn probes_and_callbacks_are_exempt() {
        for p in [
            "/healthz",
            "/readyz",
            "/metrics",
            "/v1/attempts/x/result",
            "/v1/attempts/x/heartbeat",
        ] {
            assert!(is_exempt(p), "{p}");
        }
        for p in ["/v1/missions", "/openapi.json", "/", "/healthz/x"] {
            assert!(!is_exempt(p), "{p}");
        }
    }
}
