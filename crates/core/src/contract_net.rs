//! Contract net (seed §10): allocating a task by tender instead of scoring.
//!
//! The coordinator issues a call for proposals (CFP) to the eligible agents
//! (online roster agents whose skills and tools cover the task) with a
//! deadline: a PROPOSE notice in each inbox, and `POST {endpoint}/v1/cfp` to
//! each agent's worker. Agents answer with a proposal through the API or
//! their worker's answer. When the deadline passes, or every eligible agent
//! has answered, the best proposal wins:
//!
//! ```text
//! score = capability_match * 0.35 + (1 - normalized_effort) * 0.25
//!       + confidence * 0.25 + conditions_feasibility * 0.15
//! ```
//!
//! * `capability_match` is what the agent claims, capped by the share of the
//!   required skills its registration covers (an agent cannot overclaim).
//! * `normalized_effort` is the mean of the min–max normalised duration and
//!   cost over the tender's proposals (0 for the smallest, 1 for the
//!   largest; 0 when all are equal, so a single proposal gets 0).
//! * `conditions_feasibility` is `1 / (1 + number of conditions)`: 1.0 with
//!   none, 0.5 with one, 0.33 with two: every condition is a risk.
//!
//! Ties go to the smallest `agent_id`. The winner gets ACCEPT, the others
//! REJECT (messages in the award's transaction), and the task is pinned to
//! the winner. No proposal by the deadline: the tender closes as
//! `no_proposals` and the task falls back to scoring. Proposals after the
//! deadline are refused (409 `tender_closed`).

use serde::{Deserialize, Serialize};

use crate::{domain::text_enum, invalid::Invalid};

/// Weight of the capability match.
pub const W_CAPABILITY: f64 = 0.35;
/// Weight of `1 - normalized_effort`.
pub const W_EFFORT: f64 = 0.25;
/// Weight of the confidence.
pub const W_CONFIDENCE: f64 = 0.25;
/// Weight of the conditions' feasibility.
pub const W_CONDITIONS: f64 = 0.15;

/// Where a tender is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TenderStatus {
    /// Taking proposals until the deadline.
    Open,
    /// A winner was chosen (final).
    Awarded,
    /// Nobody proposed: scoring decides (final).
    NoProposals,
}

text_enum!(TenderStatus {
    Open => "open",
    Awarded => "awarded",
    NoProposals => "no_proposals",
});

impl TenderStatus {
    /// The status a closing tender takes.
    pub fn close(self, has_proposals: bool) -> Option<TenderStatus> {
        match self {
            TenderStatus::Open if has_proposals => Some(TenderStatus::Awarded),
            TenderStatus::Open => Some(TenderStatus::NoProposals),
            _ => None,
        }
    }
}

/// One proposal as the award formula sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Bid {
    /// The proposer.
    pub agent_id: String,
    /// In [0, 1], already capped by skill coverage.
    pub capability_match: f64,
    /// Duration estimate (any unit, the same for all).
    pub estimated_effort: f64,
    /// Cost estimate.
    pub estimated_cost: f64,
    /// In [0, 1].
    pub confidence: f64,
    /// How many conditions it attaches.
    pub conditions: usize,
}

/// A bid's score and its parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BidScore {
    /// The proposer.
    pub agent_id: String,
    /// The weighted total.
    pub score: f64,
    /// Capability match used.
    pub capability_match: f64,
    /// Effort normalised over the tender (0 best, 1 worst).
    pub normalized_effort: f64,
    /// Confidence used.
    pub confidence: f64,
    /// `1 / (1 + conditions)`.
    pub conditions_feasibility: f64,
}

/// `1 / (1 + n)`: every condition makes a proposal harder to rely on.
pub fn conditions_feasibility(n: usize) -> f64 {
    1.0 / (1.0 + n as f64)
}

fn min_max(x: f64, lo: f64, hi: f64) -> f64 {
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        0.0
    } else {
        ((x - lo) / (hi - lo)).clamp(0.0, 1.0)
    }
}

/// Scores every bid, best first (ties by `agent_id`).
pub fn rank(bids: &[Bid]) -> Vec<BidScore> {
    let range = |f: fn(&Bid) -> f64| {
        bids.iter()
            .map(f)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    };
    let (e_lo, e_hi) = range(|b| b.estimated_effort);
    let (c_lo, c_hi) = range(|b| b.estimated_cost);
    let mut scored: Vec<BidScore> = bids
        .iter()
        .map(|b| {
            let normalized_effort = (min_max(b.estimated_effort, e_lo, e_hi)
                + min_max(b.estimated_cost, c_lo, c_hi))
                / 2.0;
            let cap = b.capability_match.clamp(0.0, 1.0);
            let conf = b.confidence.clamp(0.0, 1.0);
            let feas = conditions_feasibility(b.conditions);
            BidScore {
                agent_id: b.agent_id.clone(),
                score: cap * W_CAPABILITY
                    + (1.0 - normalized_effort) * W_EFFORT
                    + conf * W_CONFIDENCE
                    + feas * W_CONDITIONS,
                capability_match: cap,
                normalized_effort,
                confidence: conf,
                conditions_feasibility: feas,
            }
        })
        .collect();
    scored.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.agent_id.cmp(&b.agent_id))
    });
    scored
}

/// The share of `required` skills that `skills` covers (1.0 when none are required).
pub fn skill_coverage(required: &[String], skills: &[String]) -> f64 {
    if required.is_empty() {
        return 1.0;
    }
    let covered = required.iter().filter(|r| skills.contains(r)).count();
    covered as f64 / required.len() as f64
}

/// Shortest tender window, in milliseconds.
pub const MIN_WINDOW_MS: i32 = 100;
/// Longest tender window (a day), in milliseconds.
pub const MAX_WINDOW_MS: i32 = 86_400_000;

/// How a mission's tasks get their agent: the deterministic scorer, or a
/// call for proposals per task.
pub const ALLOCATIONS: [&str; 2] = ["score", "tender"];

/// The schema of an allocation field: one of [`ALLOCATIONS`].
pub fn allocation_schema() -> utoipa::openapi::Object {
    crate::domain::string_enum(&ALLOCATIONS)
}

/// Checks a mission's allocation setting: `score` or `tender`, and the
/// tender window when one is given.
pub fn check_allocation(allocation: &str, window_ms: Option<i32>) -> Result<(), Invalid> {
    if !ALLOCATIONS.contains(&allocation) {
        return Err(Invalid::new(
            "allocation",
            "allocation must be 'score' or 'tender'",
        ));
    }
    if let Some(ms) = window_ms {
        // Missions and their allocation setting call it `tender_window_ms`.
        check_window(ms).map_err(|e| Invalid::new("tender_window_ms", e.message))?;
    }
    Ok(())
}

/// Checks a tender window: 100 ms to a day.
pub fn check_window(ms: i32) -> Result<(), Invalid> {
    if !(MIN_WINDOW_MS..=MAX_WINDOW_MS).contains(&ms) {
        return Err(Invalid::new(
            "window_ms",
            "the tender window must be between 100 and 86400000 ms",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bid(id: &str, cap: f64, effort: f64, cost: f64, conf: f64, conditions: usize) -> Bid {
        Bid {
            agent_id: id.into(),
            capability_match: cap,
            estimated_effort: effort,
            estimated_cost: cost,
            confidence: conf,
            conditions,
        }
    }

    #[test]
    fn formula_weights_and_normalisation() {
        let ranked = rank(&[
            bid("a", 1.0, 10.0, 100.0, 0.5, 0),
            bid("b", 0.5, 20.0, 300.0, 0.9, 1),
            bid("c", 0.8, 15.0, 200.0, 0.8, 2),
        ]);
        let get = |id: &str| ranked.iter().find(|s| s.agent_id == id).unwrap().clone();
        // a: 1*.35 + (1-0)*.25 + .5*.25 + 1*.15 = 0.875
        assert!((get("a").score - 0.875).abs() < 1e-9);
        // b: .5*.35 + (1-1)*.25 + .9*.25 + .5*.15 = 0.475
        assert!((get("b").score - 0.475).abs() < 1e-9);
        // c: .8*.35 + (1-.5)*.25 + .8*.25 + (1/3)*.15 = 0.655
        assert!((get("c").score - 0.655).abs() < 1e-9);
        assert_eq!(ranked[0].agent_id, "a");
        assert!((W_CAPABILITY + W_EFFORT + W_CONFIDENCE + W_CONDITIONS - 1.0).abs() < 1e-12);
    }

    #[test]
    fn single_proposal_has_zero_effort_and_ties_break_by_agent() {
        let one = rank(&[bid("x", 1.0, 50.0, 5000.0, 1.0, 0)]);
        assert_eq!(one[0].normalized_effort, 0.0);
        assert!((one[0].score - 1.0).abs() < 1e-9);
        let tie = rank(&[
            bid("zed", 0.5, 1.0, 1.0, 0.5, 0),
            bid("amy", 0.5, 1.0, 1.0, 0.5, 0),
        ]);
        assert_eq!(tie[0].agent_id, "amy");
        assert!(rank(&[]).is_empty());
    }

    #[test]
    fn conditions_and_coverage() {
        assert_eq!(conditions_feasibility(0), 1.0);
        assert_eq!(conditions_feasibility(1), 0.5);
        assert!(conditions_feasibility(3) < conditions_feasibility(2));
        let req = vec!["a".to_string(), "b".to_string()];
        assert_eq!(skill_coverage(&req, &["a".into()]), 0.5);
        assert_eq!(skill_coverage(&[], &[]), 1.0);
    }

    #[test]
    fn tender_lifecycle() {
        assert_eq!(TenderStatus::Open.close(true), Some(TenderStatus::Awarded));
        assert_eq!(
            TenderStatus::Open.close(false),
            Some(TenderStatus::NoProposals)
        );
        assert_eq!(TenderStatus::Awarded.close(true), None);
        assert_eq!(TenderStatus::NoProposals.close(true), None);
    }

    #[test]
    fn allocation_settings() {
        assert!(check_allocation("score", None).is_ok());
        assert!(check_allocation("tender", Some(100)).is_ok());
        assert!(check_allocation("tender", Some(MAX_WINDOW_MS)).is_ok());
        assert_eq!(
            check_allocation("auction", None).map_err(|e| e.field),
            Err("allocation".to_owned())
        );
        assert_eq!(
            check_allocation("tender", Some(99)).map_err(|e| e.field),
            Err("tender_window_ms".to_owned())
        );
        assert!(check_window(MAX_WINDOW_MS + 1).is_err());
    }
}
