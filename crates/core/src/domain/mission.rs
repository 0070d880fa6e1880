//! The mission lifecycle.
//!
//! ```text
//! planning → awaiting_approval (approve mode) → executing → awaiting_review (approve mode) → completed
//!     ↘ failed            ↘ cancelled (from any non-terminal)        paused ⇄ executing
//! ```

use super::{IllegalTransition, text_enum};

/// Where a mission is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MissionStatus {
    /// The plan is being made.
    Planning,
    /// Approve mode: the plan waits for a person.
    AwaitingApproval,
    /// Tasks are being dispatched.
    Executing,
    /// Approve mode: results wait for a person.
    AwaitingReview,
    /// No new dispatches; live attempts finish.
    Paused,
    /// Every required task succeeded (and was accepted).
    Completed,
    /// The mission cannot finish.
    Failed,
    /// Stopped by a person.
    Cancelled,
}

text_enum!(MissionStatus {
    Planning => "planning",
    AwaitingApproval => "awaiting_approval",
    Executing => "executing",
    AwaitingReview => "awaiting_review",
    Paused => "paused",
    Completed => "completed",
    Failed => "failed",
    Cancelled => "cancelled",
});

/// How much a mission may do without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Autonomy {
    /// A person approves the plan (and reviews results) before work proceeds.
    Approve,
    /// The plan starts as soon as it is made.
    Autonomous,
}

text_enum!(Autonomy {
    Approve => "approve",
    Autonomous => "autonomous",
});

/// What can happen to a mission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissionEvent {
    /// A valid plan was stored.
    PlanReady(Autonomy),
    /// A person approved the plan.
    Approve,
    /// The plan must be made again (rejected plan, new instructions, a trigger).
    Replan,
    /// Every task is terminal and none that matters failed.
    AllTasksDone(Autonomy),
    /// A person accepted the results.
    AcceptResults,
    /// A person sent the results back for more work.
    RejectResults,
    /// A required task failed for good, or planning failed.
    Fail,
    /// A person cancelled it.
    Cancel,
    /// A person paused it.
    Pause,
    /// A person resumed it.
    Resume,
    /// A person continues a failed mission: its failed tasks are retried or
    /// skipped and the tasks its failure cancelled come back.
    Continue,
}

impl MissionEvent {
    fn name(self) -> &'static str {
        match self {
            MissionEvent::PlanReady(_) => "start with a plan",
            MissionEvent::Approve => "approve",
            MissionEvent::Replan => "replan",
            MissionEvent::AllTasksDone(_) => "finish",
            MissionEvent::AcceptResults => "accept the results of",
            MissionEvent::RejectResults => "reject the results of",
            MissionEvent::Fail => "fail",
            MissionEvent::Cancel => "cancel",
            MissionEvent::Pause => "pause",
            MissionEvent::Resume => "resume",
            MissionEvent::Continue => "continue",
        }
    }
}

impl MissionStatus {
    /// True once the mission has ended: nothing moves it on its own (only a
    /// person can continue a failed one).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            MissionStatus::Completed | MissionStatus::Failed | MissionStatus::Cancelled
        )
    }

    /// The status after `event`, or why it cannot happen.
    pub fn next(self, event: MissionEvent) -> Result<MissionStatus, IllegalTransition> {
        use MissionEvent as E;
        use MissionStatus as S;
        let next = match (self, event) {
            (S::Planning, E::PlanReady(Autonomy::Approve)) => S::AwaitingApproval,
            (S::Planning, E::PlanReady(Autonomy::Autonomous)) => S::Executing,
            (S::AwaitingApproval, E::Approve) => S::Executing,
            // Completed tasks stay; only the rest of the plan is made again.
            (S::AwaitingApproval | S::Executing | S::Paused, E::Replan) => S::Planning,
            (S::Executing, E::AllTasksDone(Autonomy::Approve)) => S::AwaitingReview,
            (S::Executing, E::AllTasksDone(Autonomy::Autonomous)) => S::Completed,
            (S::AwaitingReview, E::AcceptResults) => S::Completed,
            (S::AwaitingReview, E::RejectResults) => S::Executing,
            (S::Executing, E::Pause) => S::Paused,
            (S::Paused, E::Resume) => S::Executing,
            // The one way out of a terminal mission status: a person takes
            // over where the escalation ladder gave up.
            (S::Failed, E::Continue) => S::Executing,
            (S::Planning | S::Executing | S::Paused, E::Fail) => S::Failed,
            (s, E::Cancel) if !s.is_terminal() => S::Cancelled,
            _ => {
                return Err(IllegalTransition {
                    entity: "mission",
                    from: self.as_str(),
                    event: event.name(),
                });
            }
        };
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approve_mode_waits_for_approval_then_review() {
        let s = MissionStatus::Planning
            .next(MissionEvent::PlanReady(Autonomy::Approve))
            .unwrap();
        assert_eq!(s, MissionStatus::AwaitingApproval);
        let s = s.next(MissionEvent::Approve).unwrap();
        assert_eq!(s, MissionStatus::Executing);
        let s = s
            .next(MissionEvent::AllTasksDone(Autonomy::Approve))
            .unwrap();
        assert_eq!(s, MissionStatus::AwaitingReview);
        assert_eq!(
            s.next(MissionEvent::AcceptResults).unwrap(),
            MissionStatus::Completed
        );
    }

    #[test]
    fn autonomous_mode_runs_straight_through() {
        let s = MissionStatus::Planning
            .next(MissionEvent::PlanReady(Autonomy::Autonomous))
            .unwrap();
        assert_eq!(s, MissionStatus::Executing);
        assert_eq!(
            s.next(MissionEvent::AllTasksDone(Autonomy::Autonomous))
                .unwrap(),
            MissionStatus::Completed
        );
    }

    #[test]
    fn terminal_missions_refuse_everything() {
        for terminal in [
            MissionStatus::Completed,
            MissionStatus::Failed,
            MissionStatus::Cancelled,
        ] {
            for event in [
                MissionEvent::Approve,
                MissionEvent::Cancel,
                MissionEvent::Fail,
                MissionEvent::Pause,
                MissionEvent::Resume,
                MissionEvent::AcceptResults,
            ] {
                let err = terminal.next(event).unwrap_err();
                assert_eq!(err.from, terminal.as_str());
            }
        }
    }

    #[test]
    fn only_a_failed_mission_can_be_continued() {
        for s in MissionStatus::ALL {
            let r = s.next(MissionEvent::Continue);
            assert_eq!(r.is_ok(), *s == MissionStatus::Failed, "{s}");
        }
        assert_eq!(
            MissionStatus::Failed.next(MissionEvent::Continue).unwrap(),
            MissionStatus::Executing
        );
    }

    #[test]
    fn approve_only_from_awaiting_approval() {
        for s in MissionStatus::ALL {
            let r = s.next(MissionEvent::Approve);
            assert_eq!(r.is_ok(), *s == MissionStatus::AwaitingApproval, "{s}");
        }
    }

    #[test]
    fn replanning_returns_to_planning_only_from_live_plans() {
        for s in MissionStatus::ALL {
            let ok = matches!(
                s,
                MissionStatus::AwaitingApproval | MissionStatus::Executing | MissionStatus::Paused
            );
            assert_eq!(s.next(MissionEvent::Replan).is_ok(), ok, "{s}");
        }
        assert!(MissionStatus::Planning.next(MissionEvent::Replan).is_err());
    }

    #[test]
    fn cancel_from_any_live_state() {
        for s in MissionStatus::ALL.iter().filter(|s| !s.is_terminal()) {
            assert_eq!(
                s.next(MissionEvent::Cancel).unwrap(),
                MissionStatus::Cancelled
            );
        }
    }

    #[test]
    fn pause_and_resume() {
        let p = MissionStatus::Executing.next(MissionEvent::Pause).unwrap();
        assert_eq!(p, MissionStatus::Paused);
        assert!(p.next(MissionEvent::Pause).is_err());
        assert_eq!(
            p.next(MissionEvent::Resume).unwrap(),
            MissionStatus::Executing
        );
    }

    const EVENTS: [MissionEvent; 12] = [
        MissionEvent::PlanReady(Autonomy::Approve),
        MissionEvent::PlanReady(Autonomy::Autonomous),
        MissionEvent::Approve,
        MissionEvent::Replan,
        MissionEvent::AllTasksDone(Autonomy::Approve),
        MissionEvent::AllTasksDone(Autonomy::Autonomous),
        MissionEvent::AcceptResults,
        MissionEvent::RejectResults,
        MissionEvent::Fail,
        MissionEvent::Cancel,
        MissionEvent::Pause,
        MissionEvent::Resume,
    ];

    /// The lifecycle of the module header, pair by pair (independently of `next`'s patterns).
    const TABLE: [(MissionStatus, MissionEvent, MissionStatus); 20] = {
        use Autonomy::{Approve as Ap, Autonomous as Au};
        use MissionEvent as E;
        use MissionStatus as S;
        [
            (S::Planning, E::PlanReady(Ap), S::AwaitingApproval),
            (S::Planning, E::PlanReady(Au), S::Executing),
            (S::AwaitingApproval, E::Approve, S::Executing),
            (S::AwaitingApproval, E::Replan, S::Planning),
            (S::Executing, E::Replan, S::Planning),
            (S::Paused, E::Replan, S::Planning),
            (S::Executing, E::AllTasksDone(Ap), S::AwaitingReview),
            (S::Executing, E::AllTasksDone(Au), S::Completed),
            (S::AwaitingReview, E::AcceptResults, S::Completed),
            (S::AwaitingReview, E::RejectResults, S::Executing),
            (S::Executing, E::Pause, S::Paused),
            (S::Paused, E::Resume, S::Executing),
            (S::Planning, E::Fail, S::Failed),
            (S::Executing, E::Fail, S::Failed),
            (S::Paused, E::Fail, S::Failed),
            (S::Planning, E::Cancel, S::Cancelled),
            (S::AwaitingApproval, E::Cancel, S::Cancelled),
            (S::Executing, E::Cancel, S::Cancelled),
            (S::AwaitingReview, E::Cancel, S::Cancelled),
            (S::Paused, E::Cancel, S::Cancelled),
        ]
    };

    fn documented(from: MissionStatus, event: MissionEvent) -> Option<MissionStatus> {
        TABLE
            .iter()
            .find(|(f, e, _)| *f == from && *e == event)
            .map(|(_, _, to)| *to)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Random event sequences from any status: accepted exactly when the
        /// table has the pair, to the status it says; terminal statuses never move.
        #[test]
        fn random_event_sequences_follow_the_table(
            start in 0..MissionStatus::ALL.len(),
            events in proptest::collection::vec(0..EVENTS.len(), 0..64),
        ) {
            let mut s = MissionStatus::ALL[start];
            for e in events.into_iter().map(|i| EVENTS[i]) {
                match (s.next(e), documented(s, e)) {
                    (Ok(next), Some(expected)) => {
                        proptest::prop_assert!(!s.is_terminal(), "{s} moved on {e:?}");
                        proptest::prop_assert_eq!(next, expected);
                        s = next;
                    }
                    (Err(err), None) => {
                        proptest::prop_assert_eq!(err.entity, "mission");
                        proptest::prop_assert_eq!(err.from, s.as_str());
                    }
                    (got, expected) => {
                        proptest::prop_assert!(false, "{s} on {e:?}: got {got:?}, table says {expected:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn text_round_trip_and_unknown_values() {
        for s in MissionStatus::ALL {
            assert_eq!(s.as_str().parse::<MissionStatus>().unwrap(), *s);
        }
        let err = "done".parse::<MissionStatus>().unwrap_err();
        assert!(err.to_string().contains("expected one of"));
        assert_eq!("approve".parse::<Autonomy>().unwrap(), Autonomy::Approve);
        assert!("manual".parse::<Autonomy>().is_err());
    }
}
