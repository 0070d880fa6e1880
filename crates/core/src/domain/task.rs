//! The task lifecycle and the board column each status shows in.
//!
//! `pending` (waiting on dependencies) → `queued` (ready) → `running` (an
//! attempt is live) → `succeeded`; side paths `retry_wait`, `awaiting_human`,
//! `awaiting_approval`, `failed`, `cancelled`, `skipped`.

use super::{IllegalTransition, text_enum};

/// Where a task is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskStatus {
    /// Waiting on dependencies.
    Pending,
    /// Ready to be claimed.
    Queued,
    /// An attempt is live.
    Running,
    /// Done; immutable from now on.
    Succeeded,
    /// Waiting for a retry or continuation to become due.
    RetryWait,
    /// A person must complete, retry or skip it.
    AwaitingHuman,
    /// A governance gate must approve it before dispatch.
    AwaitingApproval,
    /// Failed for good.
    Failed,
    /// Stopped with its mission, or by a person.
    Cancelled,
    /// Deliberately not done.
    Skipped,
}

text_enum!(TaskStatus {
    Pending => "pending",
    Queued => "queued",
    Running => "running",
    Succeeded => "succeeded",
    RetryWait => "retry_wait",
    AwaitingHuman => "awaiting_human",
    AwaitingApproval => "awaiting_approval",
    Failed => "failed",
    Cancelled => "cancelled",
    Skipped => "skipped",
});

/// What can happen to a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskEvent {
    /// Every dependency succeeded (or was skipped).
    DependenciesMet,
    /// A dispatcher claimed it and created an attempt.
    Claimed,
    /// The live attempt succeeded.
    Succeeded,
    /// The live attempt failed (or asked to continue) and another try is allowed.
    ScheduleRetry,
    /// The live attempt failed and no try is left.
    FailedFinally,
    /// Escalated to a person.
    EscalateToHuman,
    /// A person or policy put it back in the ready queue.
    Requeue,
    /// A person completed it by hand.
    CompleteByHuman,
    /// A person or policy chose not to do it.
    Skip,
    /// Its mission (or a person) cancelled it.
    Cancel,
    /// The escalation ladder replaced it by a replan, or dropped it as optional.
    Supersede,
    /// A reviewer rejected the mission's results naming it (or a task upstream).
    Reopen,
    /// The governance gate holds it for a stakeholder's decision before dispatch.
    AwaitApproval,
    /// Its agent handed it to another agent: the live attempt ends (not a
    /// failure) and the task is ready again, for the receiving agent.
    HandOff,
    /// A person continued its failed mission: a task the failure cancelled
    /// waits on its dependencies again.
    Restore,
}

impl TaskEvent {
    fn name(self) -> &'static str {
        match self {
            TaskEvent::DependenciesMet => "queue",
            TaskEvent::Claimed => "claim",
            TaskEvent::Succeeded => "succeed",
            TaskEvent::ScheduleRetry => "retry",
            TaskEvent::FailedFinally => "fail",
            TaskEvent::EscalateToHuman => "escalate",
            TaskEvent::Requeue => "requeue",
            TaskEvent::CompleteByHuman => "complete",
            TaskEvent::Skip => "skip",
            TaskEvent::Cancel => "cancel",
            TaskEvent::Supersede => "supersede",
            TaskEvent::Reopen => "reopen",
            TaskEvent::AwaitApproval => "await_approval",
            TaskEvent::HandOff => "hand_off",
            TaskEvent::Restore => "restore",
        }
    }
}

/// A kanban column of the task bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BoardColumn {
    /// Not ready yet.
    Backlog,
    /// Ready, or waiting for a retry.
    Ready,
    /// An attempt is live.
    InProgress,
    /// A person must act.
    NeedsHuman,
    /// Waiting for result review.
    Review,
    /// Finished: succeeded or skipped.
    Done,
    /// Closed without success: failed or cancelled.
    Failed,
}

text_enum!(BoardColumn {
    Backlog => "backlog",
    Ready => "ready",
    InProgress => "in_progress",
    NeedsHuman => "needs_human",
    Review => "review",
    Done => "done",
    Failed => "failed",
});

impl TaskStatus {
    /// True once the task can never change again (completed tasks are immutable).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Succeeded
                | TaskStatus::Failed
                | TaskStatus::Cancelled
                | TaskStatus::Skipped
        )
    }

    /// True if dependents may proceed past this task.
    pub fn satisfies_dependents(self) -> bool {
        matches!(self, TaskStatus::Succeeded | TaskStatus::Skipped)
    }

    /// The column its board card belongs in.
    pub fn board_column(self) -> BoardColumn {
        match self {
            TaskStatus::Pending => BoardColumn::Backlog,
            TaskStatus::Queued | TaskStatus::RetryWait => BoardColumn::Ready,
            TaskStatus::Running => BoardColumn::InProgress,
            TaskStatus::AwaitingHuman | TaskStatus::AwaitingApproval => BoardColumn::NeedsHuman,
            TaskStatus::Succeeded | TaskStatus::Skipped => BoardColumn::Done,
            TaskStatus::Failed | TaskStatus::Cancelled => BoardColumn::Failed,
        }
    }

    /// The status after `event`, or why it cannot happen.
    pub fn next(self, event: TaskEvent) -> Result<TaskStatus, IllegalTransition> {
        use TaskEvent as E;
        use TaskStatus as S;
        let next = match (self, event) {
            (S::Pending, E::DependenciesMet) => S::Queued,
            (S::Queued | S::RetryWait, E::Claimed) => S::Running,
            (S::Running, E::Succeeded) => S::Succeeded,
            (S::Running, E::ScheduleRetry) => S::RetryWait,
            (S::Running | S::AwaitingHuman, E::FailedFinally) => S::Failed,
            (S::Running, E::Supersede) => S::Skipped,
            // The one way out of a terminal status: a person rejecting the
            // results in review. The earlier result stays on its attempt.
            (S::Succeeded, E::Reopen) => S::Pending,
            // From the queue when admission refuses it (budget).
            (S::Running | S::Queued | S::RetryWait, E::EscalateToHuman) => S::AwaitingHuman,
            // The governance gate, just before a claim.
            (S::Queued | S::RetryWait, E::AwaitApproval) => S::AwaitingApproval,
            (S::AwaitingHuman | S::AwaitingApproval, E::Requeue) => S::Queued,
            // A person continuing a failed mission retries or skips its
            // failed tasks, and brings back what the failure cancelled.
            (S::Failed, E::Requeue) => S::Queued,
            (S::Failed, E::Skip) => S::Skipped,
            (S::Cancelled, E::Restore) => S::Pending,
            // An agent hands its task to another agent from inside its attempt.
            (S::Running, E::HandOff) => S::Queued,
            (S::AwaitingHuman, E::CompleteByHuman) => S::Succeeded,
            (
                S::Pending | S::Queued | S::RetryWait | S::AwaitingHuman | S::AwaitingApproval,
                E::Skip,
            ) => S::Skipped,
            (s, E::Cancel) if !s.is_terminal() => S::Cancelled,
            _ => {
                return Err(IllegalTransition {
                    entity: "task",
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

    const EVENTS: [TaskEvent; 15] = [
        TaskEvent::DependenciesMet,
        TaskEvent::Claimed,
        TaskEvent::Succeeded,
        TaskEvent::ScheduleRetry,
        TaskEvent::FailedFinally,
        TaskEvent::EscalateToHuman,
        TaskEvent::Requeue,
        TaskEvent::CompleteByHuman,
        TaskEvent::Skip,
        TaskEvent::Cancel,
        TaskEvent::Supersede,
        TaskEvent::Reopen,
        TaskEvent::AwaitApproval,
        TaskEvent::HandOff,
        TaskEvent::Restore,
    ];

    #[test]
    fn happy_path() {
        let s = TaskStatus::Pending
            .next(TaskEvent::DependenciesMet)
            .unwrap()
            .next(TaskEvent::Claimed)
            .unwrap()
            .next(TaskEvent::Succeeded)
            .unwrap();
        assert_eq!(s, TaskStatus::Succeeded);
    }

    #[test]
    fn retry_path_goes_back_through_claim() {
        let s = TaskStatus::Running.next(TaskEvent::ScheduleRetry).unwrap();
        assert_eq!(s, TaskStatus::RetryWait);
        assert_eq!(s.next(TaskEvent::Claimed).unwrap(), TaskStatus::Running);
        assert!(s.next(TaskEvent::Succeeded).is_err());
    }

    #[test]
    fn terminal_tasks_are_immutable() {
        // The ways out a person takes: reject results, continue a failed mission.
        let by_a_person = [
            (TaskStatus::Succeeded, TaskEvent::Reopen),
            (TaskStatus::Failed, TaskEvent::Requeue),
            (TaskStatus::Failed, TaskEvent::Skip),
            (TaskStatus::Cancelled, TaskEvent::Restore),
        ];
        for s in TaskStatus::ALL.iter().filter(|s| s.is_terminal()) {
            for e in EVENTS {
                if by_a_person.contains(&(*s, e)) {
                    continue;
                }
                assert!(s.next(e).is_err(), "{s} accepted {e:?}");
            }
        }
        assert_eq!(
            TaskStatus::Succeeded.next(TaskEvent::Reopen).unwrap(),
            TaskStatus::Pending
        );
        assert!(TaskStatus::Failed.next(TaskEvent::Reopen).is_err());
    }

    #[test]
    fn only_a_running_task_can_succeed_from_a_report() {
        for s in TaskStatus::ALL {
            assert_eq!(
                s.next(TaskEvent::Succeeded).is_ok(),
                *s == TaskStatus::Running
            );
        }
    }

    #[test]
    fn human_can_settle_an_escalated_task_every_way() {
        let s = TaskStatus::Running
            .next(TaskEvent::EscalateToHuman)
            .unwrap();
        assert_eq!(s, TaskStatus::AwaitingHuman);
        assert_eq!(
            s.next(TaskEvent::CompleteByHuman).unwrap(),
            TaskStatus::Succeeded
        );
        assert_eq!(s.next(TaskEvent::Requeue).unwrap(), TaskStatus::Queued);
        assert_eq!(s.next(TaskEvent::Skip).unwrap(), TaskStatus::Skipped);
        assert_eq!(
            s.next(TaskEvent::FailedFinally).unwrap(),
            TaskStatus::Failed
        );
        // Only an escalated task can be completed by hand.
        assert!(TaskStatus::Queued.next(TaskEvent::CompleteByHuman).is_err());
    }

    #[test]
    fn only_a_running_task_is_superseded() {
        for s in TaskStatus::ALL {
            assert_eq!(
                s.next(TaskEvent::Supersede).is_ok(),
                *s == TaskStatus::Running,
                "{s}"
            );
        }
    }

    #[test]
    fn governance_gate_holds_ready_tasks_only() {
        for s in TaskStatus::ALL {
            let ok = matches!(s, TaskStatus::Queued | TaskStatus::RetryWait);
            assert_eq!(s.next(TaskEvent::AwaitApproval).is_ok(), ok, "{s}");
        }
        let held = TaskStatus::Queued.next(TaskEvent::AwaitApproval).unwrap();
        assert_eq!(held.next(TaskEvent::Requeue).unwrap(), TaskStatus::Queued);
        assert_eq!(held.next(TaskEvent::Skip).unwrap(), TaskStatus::Skipped);
    }

    #[test]
    fn a_pending_task_cannot_be_claimed() {
        assert!(TaskStatus::Pending.next(TaskEvent::Claimed).is_err());
    }

    #[test]
    fn board_columns() {
        assert_eq!(TaskStatus::Pending.board_column(), BoardColumn::Backlog);
        assert_eq!(TaskStatus::RetryWait.board_column(), BoardColumn::Ready);
        assert_eq!(TaskStatus::Running.board_column(), BoardColumn::InProgress);
        assert_eq!(
            TaskStatus::AwaitingHuman.board_column(),
            BoardColumn::NeedsHuman
        );
        assert_eq!(TaskStatus::Skipped.board_column(), BoardColumn::Done);
        assert_eq!(TaskStatus::Cancelled.board_column(), BoardColumn::Failed);
    }

    /// The lifecycle as documented in the module header and `docs/architecture.md`,
    /// written out pair by pair (independently of `next`'s patterns).
    const TABLE: [(TaskStatus, TaskEvent, TaskStatus); 32] = {
        use TaskEvent as E;
        use TaskStatus as S;
        [
            (S::Pending, E::DependenciesMet, S::Queued),
            (S::Queued, E::Claimed, S::Running),
            (S::RetryWait, E::Claimed, S::Running),
            (S::Running, E::Succeeded, S::Succeeded),
            (S::Running, E::ScheduleRetry, S::RetryWait),
            (S::Running, E::FailedFinally, S::Failed),
            (S::AwaitingHuman, E::FailedFinally, S::Failed),
            (S::Running, E::Supersede, S::Skipped),
            (S::Succeeded, E::Reopen, S::Pending),
            (S::Running, E::EscalateToHuman, S::AwaitingHuman),
            (S::Queued, E::EscalateToHuman, S::AwaitingHuman),
            (S::RetryWait, E::EscalateToHuman, S::AwaitingHuman),
            (S::Queued, E::AwaitApproval, S::AwaitingApproval),
            (S::RetryWait, E::AwaitApproval, S::AwaitingApproval),
            (S::AwaitingHuman, E::Requeue, S::Queued),
            (S::AwaitingApproval, E::Requeue, S::Queued),
            (S::Running, E::HandOff, S::Queued),
            (S::AwaitingHuman, E::CompleteByHuman, S::Succeeded),
            (S::Pending, E::Skip, S::Skipped),
            (S::Queued, E::Skip, S::Skipped),
            (S::RetryWait, E::Skip, S::Skipped),
            (S::AwaitingHuman, E::Skip, S::Skipped),
            (S::AwaitingApproval, E::Skip, S::Skipped),
            (S::Pending, E::Cancel, S::Cancelled),
            (S::Queued, E::Cancel, S::Cancelled),
            (S::Running, E::Cancel, S::Cancelled),
            (S::RetryWait, E::Cancel, S::Cancelled),
            (S::AwaitingHuman, E::Cancel, S::Cancelled),
            (S::AwaitingApproval, E::Cancel, S::Cancelled),
            (S::Failed, E::Requeue, S::Queued),
            (S::Failed, E::Skip, S::Skipped),
            (S::Cancelled, E::Restore, S::Pending),
        ]
    };

    fn documented(from: TaskStatus, event: TaskEvent) -> Option<TaskStatus> {
        TABLE
            .iter()
            .find(|(f, e, _)| *f == from && *e == event)
            .map(|(_, _, to)| *to)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Random event sequences from any status: every accepted transition
        /// is in the table (to the documented status), every refused one is not,
        /// and a refusal names the task lifecycle and the status it was in.
        #[test]
        fn random_event_sequences_follow_the_table(
            start in 0..TaskStatus::ALL.len(),
            events in proptest::collection::vec(0..EVENTS.len(), 0..64),
        ) {
            let mut s = TaskStatus::ALL[start];
            for e in events.into_iter().map(|i| EVENTS[i]) {
                match (s.next(e), documented(s, e)) {
                    (Ok(next), Some(expected)) => {
                        proptest::prop_assert_eq!(next, expected);
                        s = next;
                    }
                    (Err(err), None) => {
                        proptest::prop_assert_eq!(err.entity, "task");
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
    fn every_status_is_reachable_from_pending_through_the_table() {
        // Guards the table itself: a typo that orphans a status shows here.
        let mut seen = vec![TaskStatus::Pending];
        let mut i = 0;
        while i < seen.len() {
            for (f, _, to) in TABLE {
                if f == seen[i] && !seen.contains(&to) {
                    seen.push(to);
                }
            }
            i += 1;
        }
        assert_eq!(seen.len(), TaskStatus::ALL.len(), "{seen:?}");
    }

    #[test]
    fn dependents_proceed_past_succeeded_and_skipped_only() {
        let ok: Vec<_> = TaskStatus::ALL
            .iter()
            .filter(|s| s.satisfies_dependents())
            .collect();
        assert_eq!(ok, [&TaskStatus::Succeeded, &TaskStatus::Skipped]);
    }
}
