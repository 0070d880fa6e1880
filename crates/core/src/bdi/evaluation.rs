//! `goal_evaluate` (seed §20.8 tool 39): how a goal stands — `on_track`,
//! `at_risk`, `blocked`, `completed` or `failed` — from its status, its
//! deadline, the intentions pursuing it and its sub-goals.

use serde::Serialize;

use super::{GoalStatus, IntentionStatus};
use crate::domain::text_enum;

/// How a goal stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GoalHealth {
    /// Progressing as its schedule needs.
    OnTrack,
    /// Behind, stalled, or pursued by nobody.
    AtRisk,
    /// Nothing pursuing it can move: its intentions are suspended or dropped.
    Blocked,
    /// Achieved.
    Completed,
    /// Abandoned, or its deadline passed unachieved.
    Failed,
}

text_enum!(GoalHealth {
    OnTrack => "on_track",
    AtRisk => "at_risk",
    Blocked => "blocked",
    Completed => "completed",
    Failed => "failed",
});

/// An intention pursuing the goal, as the evaluation needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PursuitFact {
    /// Its status.
    pub status: IntentionStatus,
    /// Fraction done.
    pub progress: f64,
    /// Stalled past its strategy's threshold (marked by maintenance, or
    /// found stale now).
    pub stalled: bool,
}

/// What `goal_evaluate` looks at.
#[derive(Debug, Clone, PartialEq)]
pub struct GoalFacts {
    /// The goal's status.
    pub status: GoalStatus,
    /// Share of the time from creation to deadline already gone (1 or more:
    /// the deadline passed); `None` without a deadline.
    pub schedule_elapsed: Option<f64>,
    /// The intentions pursuing it (any status).
    pub intentions: Vec<PursuitFact>,
    /// Its sub-goals' statuses.
    pub children: Vec<GoalStatus>,
}

/// The verdict with its numbers and reasons.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GoalEvaluation {
    /// The verdict.
    pub status: GoalHealth,
    /// Estimated fraction done, in [0, 1].
    pub progress: f64,
    /// The fraction the schedule expects by now (with a deadline).
    pub expected_progress: Option<f64>,
    /// Why, one line per finding.
    pub reasons: Vec<String>,
}

/// How far progress may trail the schedule before the goal is at risk.
pub const SCHEDULE_MARGIN: f64 = 0.25;

/// The goal's progress: the mean progress of the intentions pursuing it
/// that were not dropped (an achieved one counts 1); without any, the share
/// of its sub-goals achieved (abandoned ones do not count); else 0.
pub fn goal_progress(f: &GoalFacts) -> f64 {
    let live: Vec<f64> = f
        .intentions
        .iter()
        .filter(|i| i.status != IntentionStatus::Dropped)
        .map(|i| {
            if i.status == IntentionStatus::Achieved {
                1.0
            } else {
                i.progress
            }
        })
        .collect();
    if !live.is_empty() {
        return (live.iter().sum::<f64>() / live.len() as f64).clamp(0.0, 1.0);
    }
    let counted: Vec<&GoalStatus> = f
        .children
        .iter()
        .filter(|c| **c != GoalStatus::Abandoned)
        .collect();
    if counted.is_empty() {
        return 0.0;
    }
    let done = counted
        .iter()
        .filter(|c| ***c == GoalStatus::Achieved)
        .count();
    done as f64 / counted.len() as f64
}

/// Evaluates a goal. In order, the first that applies decides:
/// 1. achieved → `completed`; abandoned → `failed`;
/// 2. the deadline passed → `failed`;
/// 3. intentions pursue it but none is active (suspended or dropped) → `blocked`;
/// 4. nothing pursues it (no intention, no active sub-goal) → `at_risk`;
/// 5. a sub-goal was abandoned, an active intention stalled, or progress
///    trails the schedule by more than [`SCHEDULE_MARGIN`] → `at_risk`
///    (every such reason is listed);
/// 6. otherwise `on_track`.
pub fn evaluate_goal(f: &GoalFacts) -> GoalEvaluation {
    let progress = goal_progress(f);
    let expected = f.schedule_elapsed.map(|e| e.clamp(0.0, 1.0));
    let verdict = |status, reasons: Vec<String>| GoalEvaluation {
        status,
        progress,
        expected_progress: expected,
        reasons,
    };
    match f.status {
        GoalStatus::Achieved => {
            return GoalEvaluation {
                progress: 1.0,
                ..verdict(GoalHealth::Completed, vec!["the goal is achieved".into()])
            };
        }
        GoalStatus::Abandoned => {
            return verdict(GoalHealth::Failed, vec!["the goal was abandoned".into()]);
        }
        GoalStatus::Active => {}
    }
    if f.schedule_elapsed.is_some_and(|e| e >= 1.0) {
        return verdict(
            GoalHealth::Failed,
            vec![format!(
                "the deadline passed with the goal not achieved ({:.0} % done)",
                progress * 100.0
            )],
        );
    }
    let active: Vec<&PursuitFact> = f
        .intentions
        .iter()
        .filter(|i| i.status == IntentionStatus::Active)
        .collect();
    let open = f
        .intentions
        .iter()
        .filter(|i| i.status != IntentionStatus::Achieved)
        .count();
    if active.is_empty() && open > 0 && open == f.intentions.len() {
        let suspended = f
            .intentions
            .iter()
            .filter(|i| i.status == IntentionStatus::Suspended)
            .count();
        return verdict(
            GoalHealth::Blocked,
            vec![format!(
                "no intention pursuing it is active ({suspended} suspended, {} dropped)",
                open - suspended
            )],
        );
    }
    let active_children = f.children.contains(&GoalStatus::Active);
    if f.intentions.is_empty() && !active_children {
        return verdict(
            GoalHealth::AtRisk,
            vec!["nothing pursues it: commit an intention to it (intention_commit)".into()],
        );
    }
    let mut reasons = Vec::new();
    let abandoned = f
        .children
        .iter()
        .filter(|c| **c == GoalStatus::Abandoned)
        .count();
    if abandoned > 0 {
        reasons.push(format!("{abandoned} of its sub-goals were abandoned"));
    }
    let stalled = active.iter().filter(|i| i.stalled).count();
    if stalled > 0 {
        reasons.push(format!(
            "{stalled} of its active intentions stalled past their strategy's threshold"
        ));
    }
    if let Some(e) = expected
        && progress + SCHEDULE_MARGIN < e
    {
        reasons.push(format!(
            "{:.0} % done with {:.0} % of the time to the deadline gone",
            progress * 100.0,
            e * 100.0
        ));
    }
    if reasons.is_empty() {
        let why = match expected {
            Some(e) => format!(
                "{:.0} % done with {:.0} % of the time to the deadline gone",
                progress * 100.0,
                e * 100.0
            ),
            None => format!(
                "{:.0} % done, no deadline, nothing stalled",
                progress * 100.0
            ),
        };
        return verdict(GoalHealth::OnTrack, vec![why]);
    }
    verdict(GoalHealth::AtRisk, reasons)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pursuit(status: IntentionStatus, progress: f64, stalled: bool) -> PursuitFact {
        PursuitFact {
            status,
            progress,
            stalled,
        }
    }

    fn facts(intentions: Vec<PursuitFact>, elapsed: Option<f64>) -> GoalFacts {
        GoalFacts {
            status: GoalStatus::Active,
            schedule_elapsed: elapsed,
            intentions,
            children: vec![],
        }
    }

    #[test]
    fn final_statuses_and_deadlines_decide_first() {
        let mut f = facts(vec![], None);
        f.status = GoalStatus::Achieved;
        let e = evaluate_goal(&f);
        assert_eq!(e.status, GoalHealth::Completed);
        assert!((e.progress - 1.0).abs() < 1e-12);
        f.status = GoalStatus::Abandoned;
        assert_eq!(evaluate_goal(&f).status, GoalHealth::Failed);
        let f = facts(
            vec![pursuit(IntentionStatus::Active, 0.9, false)],
            Some(1.2),
        );
        let e = evaluate_goal(&f);
        assert_eq!(e.status, GoalHealth::Failed);
        assert_eq!(e.expected_progress, Some(1.0));
    }

    #[test]
    fn blocked_when_nothing_pursuing_it_is_active() {
        let f = facts(
            vec![
                pursuit(IntentionStatus::Suspended, 0.4, false),
                pursuit(IntentionStatus::Dropped, 0.1, false),
            ],
            None,
        );
        let e = evaluate_goal(&f);
        assert_eq!(e.status, GoalHealth::Blocked);
        assert!(e.reasons[0].contains("1 suspended, 1 dropped"));
        // The dropped one does not count towards progress.
        assert!((e.progress - 0.4).abs() < 1e-12);
    }

    #[test]
    fn at_risk_when_unpursued_stalled_or_behind_schedule() {
        assert_eq!(
            evaluate_goal(&facts(vec![], None)).status,
            GoalHealth::AtRisk
        );
        let e = evaluate_goal(&facts(
            vec![pursuit(IntentionStatus::Active, 0.5, true)],
            None,
        ));
        assert_eq!(e.status, GoalHealth::AtRisk);
        assert!(e.reasons[0].contains("stalled"));
        // 0.2 done, 0.5 gone: 0.2 + 0.25 < 0.5.
        let e = evaluate_goal(&facts(
            vec![pursuit(IntentionStatus::Active, 0.2, false)],
            Some(0.5),
        ));
        assert_eq!(e.status, GoalHealth::AtRisk);
        // 0.3 done, 0.5 gone: within the margin.
        let e = evaluate_goal(&facts(
            vec![pursuit(IntentionStatus::Active, 0.3, false)],
            Some(0.5),
        ));
        assert_eq!(e.status, GoalHealth::OnTrack);
        assert_eq!(e.expected_progress, Some(0.5));
    }

    #[test]
    fn sub_goals_count_when_no_intention_pursues_it() {
        let mut f = facts(vec![], None);
        f.children = vec![
            GoalStatus::Achieved,
            GoalStatus::Active,
            GoalStatus::Abandoned,
        ];
        let e = evaluate_goal(&f);
        assert!((e.progress - 0.5).abs() < 1e-12);
        assert_eq!(e.status, GoalHealth::AtRisk, "a sub-goal was abandoned");
        f.children = vec![GoalStatus::Achieved, GoalStatus::Active];
        assert_eq!(evaluate_goal(&f).status, GoalHealth::OnTrack);
        // An achieved intention counts as done.
        let f = facts(
            vec![
                pursuit(IntentionStatus::Achieved, 0.2, false),
                pursuit(IntentionStatus::Active, 0.0, false),
            ],
            None,
        );
        assert!((goal_progress(&f) - 0.5).abs() < 1e-12);
    }
}
