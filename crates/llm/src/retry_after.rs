//! `Retry-After`, read one way everywhere: worker answers to dispatches,
//! LLM providers answering the planner and the LLM worker. Each caller applies
//! its own bounds on top.

use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};
use time::OffsetDateTime;

/// Longest wait taken from any `Retry-After`; longer values are capped.
pub const MAX: Duration = Duration::from_secs(3600);

/// How long the server asked to wait, from its `Retry-After` header:
/// delta-seconds (fractions rounded up) or an HTTP date, capped at [`MAX`];
/// `None` when absent or unreadable.
pub fn from_headers(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?;
    parse(value, OffsetDateTime::now_utc())
}

fn parse(value: &str, now: OffsetDateTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs).min(MAX));
    }
    if let Ok(secs) = value.parse::<f64>() {
        // Not RFC 9110, but some providers send fractions; never wait less than asked.
        if secs.is_finite() && secs >= 0.0 {
            return Some(Duration::from_secs_f64(secs.ceil().min(MAX.as_secs_f64())));
        }
        return None;
    }
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    let at = time::PrimitiveDateTime::parse(value, format)
        .ok()?
        .assume_utc();
    let wait = at - now;
    Some(if wait.is_negative() {
        Duration::ZERO
    } else {
        Duration::try_from(wait).unwrap_or(MAX).min(MAX)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = time::macros::datetime!(2024-05-01 12:00:00 UTC);
        assert_eq!(parse(" 7 ", now), Some(Duration::from_secs(7)));
        assert_eq!(parse("1.2", now), Some(Duration::from_secs(2)));
        assert_eq!(parse("999999", now), Some(MAX));
        assert_eq!(
            parse("Wed, 01 May 2024 12:00:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse("Wed, 01 May 2024 11:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse("-3", now), None);
        assert_eq!(parse("soon", now), None);
        let mut headers = HeaderMap::new();
        assert_eq!(from_headers(&headers), None);
        headers.insert(RETRY_AFTER, "12".parse().unwrap());
        assert_eq!(from_headers(&headers), Some(Duration::from_secs(12)));
    }
}
