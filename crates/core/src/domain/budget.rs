//! Mission budgets: admission before dispatch and the 80 % warning.
//!
//! Spend is what workers reported; a dispatch also commits the estimated cost
//! of the attempts already in flight, so that several tasks dispatched at
//! once cannot together overrun the budget.

/// Share of the budget at which the warning (and its replan trigger) fires.
pub const WARNING_SHARE: f64 = 0.8;

/// Money already spent or committed to live attempts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spend {
    /// Reported by finished attempts.
    pub spent: f64,
    /// Estimated cost of attempts still running.
    pub in_flight: f64,
}

/// True if a task of `estimate` may start under `limit` (no limit: always).
pub fn admit(limit: Option<f64>, spend: Spend, estimate: f64) -> bool {
    match limit {
        None => true,
        Some(limit) => {
            let estimate = if estimate.is_finite() {
                estimate.max(0.0)
            } else {
                0.0
            };
            // A little slack so float noise never refuses an exact fit.
            spend.spent + spend.in_flight + estimate <= limit * (1.0 + 1e-9)
        }
    }
}

/// True if spend moved from below to at-or-above the warning share.
pub fn crosses_warning(limit: Option<f64>, before: f64, after: f64) -> bool {
    match limit {
        Some(limit) if limit > 0.0 => {
            let line = limit * WARNING_SHARE;
            before < line && after >= line
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spend(spent: f64, in_flight: f64) -> Spend {
        Spend { spent, in_flight }
    }

    #[test]
    fn no_limit_admits_everything() {
        assert!(admit(None, spend(1e9, 1e9), 1e9));
    }

    #[test]
    fn admission_counts_spend_and_work_in_flight() {
        assert!(admit(Some(1.0), spend(0.5, 0.2), 0.3));
        assert!(!admit(Some(1.0), spend(0.5, 0.2), 0.31));
        assert!(!admit(Some(1.0), spend(1.0, 0.0), 0.01));
        // A free task still fits a spent budget.
        assert!(admit(Some(1.0), spend(1.0, 0.0), 0.0));
        // Garbage estimates count as free rather than blocking forever.
        assert!(admit(Some(1.0), spend(0.0, 0.0), f64::NAN));
    }

    #[test]
    fn warning_fires_once_on_the_crossing() {
        assert!(crosses_warning(Some(10.0), 7.9, 8.0));
        assert!(crosses_warning(Some(10.0), 0.0, 12.0));
        assert!(!crosses_warning(Some(10.0), 8.0, 9.0));
        assert!(!crosses_warning(Some(10.0), 1.0, 2.0));
        assert!(!crosses_warning(None, 0.0, 100.0));
        assert!(!crosses_warning(Some(0.0), 0.0, 0.0));
    }
}
