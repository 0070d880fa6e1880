//! What a mission's tasks came to, in counts and in words for people: how
//! many succeeded, failed, were cancelled or skipped, wait for a person or
//! are still to do. The percentage counts only what succeeded, so a failed
//! mission never reads "100 %".

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{MissionStatus, TaskStatus};
use crate::numbers::count;

/// Task counts of one mission, by outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Progress {
    /// All tasks.
    pub total: usize,
    /// Tasks in a terminal status (succeeded, failed, cancelled or skipped).
    pub finished: usize,
    /// Percent of all tasks that succeeded (floor): only success counts as done.
    pub percent: u32,
    /// Succeeded.
    pub done: usize,
    /// Failed for good.
    pub failed: usize,
    /// Cancelled (by a person, or with the mission or a task upstream).
    pub cancelled: usize,
    /// Deliberately not done.
    pub skipped: usize,
    /// Waiting for a person (`awaiting_human`, `awaiting_approval`).
    pub waiting: usize,
    /// Still to do: pending, queued, running or waiting for a retry.
    pub remaining: usize,
    /// Count per status (only statuses present).
    pub by_status: BTreeMap<String, usize>,
}

impl Progress {
    /// Counts `statuses`.
    pub fn tally(statuses: impl IntoIterator<Item = TaskStatus>) -> Progress {
        let mut p = Progress::default();
        for s in statuses {
            p.total += 1;
            *p.by_status.entry(s.as_str().to_owned()).or_default() += 1;
            if s.is_terminal() {
                p.finished += 1;
            }
            match s {
                TaskStatus::Succeeded => p.done += 1,
                TaskStatus::Failed => p.failed += 1,
                TaskStatus::Cancelled => p.cancelled += 1,
                TaskStatus::Skipped => p.skipped += 1,
                TaskStatus::AwaitingHuman | TaskStatus::AwaitingApproval => p.waiting += 1,
                TaskStatus::Pending
                | TaskStatus::Queued
                | TaskStatus::Running
                | TaskStatus::RetryWait => p.remaining += 1,
            }
        }
        p.percent = (p.done * 100).checked_div(p.total).unwrap_or(0) as u32;
        p
    }

    /// One line for people: `4 of 11 done · 2 failed · 5 cancelled`, naming
    /// only the outcomes present.
    pub fn line(&self) -> String {
        let mut parts = vec![format!("{} of {} done", self.done, self.total)];
        for (n, word) in [
            (self.failed, "failed"),
            (self.cancelled, "cancelled"),
            (self.skipped, "skipped"),
            (self.waiting, "waiting for a person"),
            (self.remaining, "to do"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {word}"));
            }
        }
        parts.join(" · ")
    }

    /// What did not get done although the mission ended: `1 task was
    /// cancelled and 5 skipped`; `None` when every task succeeded.
    pub fn left_undone(&self) -> Option<String> {
        let mut parts = Vec::new();
        if self.failed > 0 {
            parts.push(format!("{} failed", count(self.failed, "task", "tasks")));
        }
        if self.cancelled > 0 {
            parts.push(format!(
                "{} cancelled",
                count(self.cancelled, "task was", "tasks were")
            ));
        }
        if self.skipped > 0 {
            parts.push(format!("{} skipped", self.skipped));
        }
        match parts.len() {
            0 => None,
            1 => parts.pop(),
            _ => {
                let last = parts.pop().unwrap_or_default();
                Some(format!("{} and {last}", parts.join(", ")))
            }
        }
        .map(|s| {
            // "1 task was cancelled and 5 skipped" reads well; a lone
            // "5 skipped" needs its noun.
            if self.failed == 0 && self.cancelled == 0 {
                format!("{} skipped", count(self.skipped, "task was", "tasks were"))
            } else {
                s
            }
        })
    }
}

/// One task that failed for good, as the failure reason names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedTask {
    /// Plan-local key.
    pub key: String,
    /// Attempts it had.
    pub attempts: i32,
    /// Its last error, if one was recorded.
    pub last_error: Option<String>,
}

/// Longest error quoted in a failure reason, in characters.
const MAX_QUOTED_ERROR_CHARS: usize = 300;

/// Why a mission failed, naming the task(s) and their last error:
/// `task 'draft' failed after 3 attempts (last error: timeout)`.
pub fn failure_reason(failed: &[FailedTask]) -> String {
    let one = |t: &FailedTask| {
        let mut s = format!(
            "'{}' failed after {}",
            t.key,
            count(t.attempts.max(0) as usize, "attempt", "attempts")
        );
        if let Some(e) = t.last_error.as_deref().filter(|e| !e.trim().is_empty()) {
            let mut quoted: String = e.trim().chars().take(MAX_QUOTED_ERROR_CHARS).collect();
            if e.trim().chars().count() > MAX_QUOTED_ERROR_CHARS {
                quoted.push('…');
            }
            s.push_str(&format!(" (last error: {quoted})"));
        }
        s
    };
    match failed {
        [] => "a task failed after every allowed attempt".to_owned(),
        [t] => format!("task {}", one(t)),
        many => format!(
            "{} failed: {}",
            count(many.len(), "task", "tasks"),
            many.iter().map(one).collect::<Vec<_>>().join("; ")
        ),
    }
}

/// One sentence on where a mission stands, for people: what it came to
/// when it ended, what is left while it runs.
pub fn status_detail(
    status: MissionStatus,
    p: &Progress,
    failure_reason: Option<&str>,
) -> Option<String> {
    match status {
        MissionStatus::Completed => Some(match p.left_undone() {
            Some(undone) => format!("completed, but {undone}"),
            None => format!("completed: {}", count(p.done, "task done", "tasks done")),
        }),
        MissionStatus::Failed => {
            let mut s = format!("failed: {}", failure_reason.unwrap_or("a task failed"));
            if p.cancelled > 0 {
                s.push_str(&format!(
                    "; {} cancelled with it",
                    count(p.cancelled, "task was", "tasks were")
                ));
            }
            Some(s)
        }
        MissionStatus::Cancelled => Some(format!(
            "cancelled with {} of {} tasks done",
            p.done, p.total
        )),
        MissionStatus::Executing | MissionStatus::Paused | MissionStatus::AwaitingReview => {
            Some(p.line())
        }
        MissionStatus::Planning | MissionStatus::AwaitingApproval => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TaskStatus as S;

    fn tally(v: &[TaskStatus]) -> Progress {
        Progress::tally(v.iter().copied())
    }

    #[test]
    fn a_failed_mission_never_reads_one_hundred_percent() {
        let p = tally(&[S::Succeeded, S::Succeeded, S::Failed, S::Cancelled]);
        assert_eq!(p.finished, 4);
        assert_eq!(p.percent, 50);
        assert_eq!(p.line(), "2 of 4 done · 1 failed · 1 cancelled");
        assert_eq!((p.done, p.failed, p.cancelled), (2, 1, 1));
    }

    #[test]
    fn every_status_is_counted_once() {
        let p = Progress::tally(S::ALL.iter().copied());
        assert_eq!(p.total, S::ALL.len());
        assert_eq!(
            p.done + p.failed + p.cancelled + p.skipped + p.waiting + p.remaining,
            p.total
        );
        assert_eq!(p.by_status.values().sum::<usize>(), p.total);
    }

    #[test]
    fn an_empty_plan_is_zero_percent() {
        assert_eq!(tally(&[]).percent, 0);
    }

    #[test]
    fn a_completed_mission_says_what_was_left_undone() {
        let p = tally(&[S::Succeeded, S::Cancelled, S::Skipped, S::Skipped]);
        assert_eq!(
            status_detail(MissionStatus::Completed, &p, None).unwrap(),
            "completed, but 1 task was cancelled and 2 skipped"
        );
        let p = tally(&[S::Succeeded, S::Skipped]);
        assert_eq!(
            status_detail(MissionStatus::Completed, &p, None).unwrap(),
            "completed, but 1 task was skipped"
        );
        let p = tally(&[S::Succeeded, S::Succeeded]);
        assert_eq!(
            status_detail(MissionStatus::Completed, &p, None).unwrap(),
            "completed: 2 tasks done"
        );
    }

    #[test]
    fn failure_reasons_name_the_task_and_its_last_error() {
        let t = |key: &str, attempts, e: Option<&str>| FailedTask {
            key: key.into(),
            attempts,
            last_error: e.map(str::to_owned),
        };
        assert_eq!(
            failure_reason(&[t("draft", 3, Some("model timed out"))]),
            "task 'draft' failed after 3 attempts (last error: model timed out)"
        );
        assert_eq!(
            failure_reason(&[t("a", 1, None), t("b", 2, Some(" x "))]),
            "2 tasks failed: 'a' failed after 1 attempt; 'b' failed after 2 attempts (last error: x)"
        );
        let long = "e".repeat(1000);
        assert!(failure_reason(&[t("a", 1, Some(&long))]).ends_with("…)"));
        let p = tally(&[S::Failed, S::Cancelled, S::Cancelled]);
        assert_eq!(
            status_detail(MissionStatus::Failed, &p, Some("task 'a' failed")).unwrap(),
            "failed: task 'a' failed; 2 tasks were cancelled with it"
        );
    }

    #[test]
    fn a_running_mission_says_what_waits_for_a_person() {
        let p = tally(&[S::Succeeded, S::AwaitingHuman, S::Pending]);
        assert_eq!(
            status_detail(MissionStatus::Executing, &p, None).unwrap(),
            "1 of 3 done · 1 waiting for a person · 1 to do"
        );
    }
}
