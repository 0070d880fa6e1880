//! Attempts (one per dispatch) and how a worker's report is judged.

use std::time::Duration;

use super::text_enum;

/// Where one dispatch of a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttemptStatus {
    /// Claimed and leased; the request to the worker is being sent.
    Dispatching,
    /// The worker has it.
    Running,
    /// The worker reported success.
    Succeeded,
    /// The worker (or the transport) reported failure.
    Failed,
    /// The worker ended cleanly but asked to continue in a new attempt.
    Continued,
    /// Its task or mission was cancelled.
    Cancelled,
    /// Its lease ran out with no report.
    Expired,
}

text_enum!(AttemptStatus {
    Dispatching => "dispatching",
    Running => "running",
    Succeeded => "succeeded",
    Failed => "failed",
    Continued => "continued",
    Cancelled => "cancelled",
    Expired => "expired",
});

impl AttemptStatus {
    /// True while a worker may still report on it.
    pub fn is_live(self) -> bool {
        matches!(self, AttemptStatus::Dispatching | AttemptStatus::Running)
    }
}

/// What a worker says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReportStatus {
    /// The task is done; `output` holds the result.
    Succeeded,
    /// The task could not be done.
    Failed,
    /// The worker ended cleanly but is not finished: dispatch again.
    Continue,
}

text_enum!(ReportStatus {
    Succeeded => "succeeded",
    Failed => "failed",
    Continue => "continue",
});

/// Why an attempt failed: the transport and the machinery, or the work itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// Unreachable worker, timeout, expired lease, provider error.
    Infrastructure,
    /// The worker ran but the result was not good enough.
    Quality,
}

text_enum!(FailureKind {
    Infrastructure => "infrastructure",
    Quality => "quality",
});

/// What to do with a report on an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportDecision {
    /// A live, current attempt: apply it.
    Apply,
    /// The same report was already applied: answer as before, change nothing.
    Duplicate,
    /// The attempt is no longer the one that counts: refuse, change nothing.
    Stale,
}

/// Judges a report: `stored` is the report already recorded on the attempt
/// (if it finished), `is_current` whether the task still points at it.
pub fn decide_report(
    status: AttemptStatus,
    is_current: bool,
    stored: Option<&serde_json::Value>,
    incoming: &serde_json::Value,
) -> ReportDecision {
    if status.is_live() {
        return if is_current {
            ReportDecision::Apply
        } else {
            ReportDecision::Stale
        };
    }
    match stored {
        Some(previous) if previous == incoming => ReportDecision::Duplicate,
        _ => ReportDecision::Stale,
    }
}

/// Exponential backoff with "full jitter" for the retry after failure number
/// `failures` (1-based): a delay in `[base·2^(n-1) / 2, base·2^(n-1)]`, capped.
/// `jitter` in `[0, 1)` makes it deterministic for tests.
pub fn retry_delay(failures: u32, base: Duration, cap: Duration, jitter: f64) -> Duration {
    let exp = failures.saturating_sub(1).min(20);
    let full = base.saturating_mul(1u32 << exp).min(cap);
    let jitter = jitter.clamp(0.0, 1.0);
    // Keep at least half the delay so retries never stampede back at once.
    full.mul_f64(0.5 + 0.5 * jitter)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn live_current_attempt_applies() {
        let r = json!({"status": "succeeded"});
        assert_eq!(
            decide_report(AttemptStatus::Running, true, None, &r),
            ReportDecision::Apply
        );
        assert_eq!(
            decide_report(AttemptStatus::Dispatching, true, None, &r),
            ReportDecision::Apply
        );
    }

    #[test]
    fn same_report_twice_is_a_duplicate() {
        let r = json!({"status": "succeeded", "output": {"x": 1}});
        assert_eq!(
            decide_report(AttemptStatus::Succeeded, true, Some(&r), &r),
            ReportDecision::Duplicate
        );
    }

    #[test]
    fn different_report_on_finished_attempt_is_stale() {
        let first = json!({"status": "succeeded"});
        let second = json!({"status": "failed"});
        assert_eq!(
            decide_report(AttemptStatus::Succeeded, true, Some(&first), &second),
            ReportDecision::Stale
        );
    }

    #[test]
    fn expired_or_superseded_attempts_are_stale() {
        let r = json!({"status": "succeeded"});
        assert_eq!(
            decide_report(AttemptStatus::Expired, false, None, &r),
            ReportDecision::Stale
        );
        assert_eq!(
            decide_report(AttemptStatus::Running, false, None, &r),
            ReportDecision::Stale
        );
        assert_eq!(
            decide_report(AttemptStatus::Cancelled, true, None, &r),
            ReportDecision::Stale
        );
    }

    #[test]
    fn backoff_grows_and_caps() {
        let base = Duration::from_millis(500);
        let cap = Duration::from_secs(10);
        assert_eq!(retry_delay(1, base, cap, 1.0), Duration::from_millis(500));
        assert_eq!(retry_delay(1, base, cap, 0.0), Duration::from_millis(250));
        assert_eq!(retry_delay(3, base, cap, 1.0), Duration::from_secs(2));
        assert_eq!(retry_delay(30, base, cap, 1.0), cap);
        assert!(retry_delay(2, base, cap, 0.3) < retry_delay(2, base, cap, 0.9));
    }
}
