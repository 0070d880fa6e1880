//! The escalation ladder: what happens to a task that failed every allowed
//! attempt.
//!
//! ```text
//! different agent → higher model tier → replan around the task → a person (awaiting_human) → mission failure
//! ```
//!
//! Each rung is taken at most once per task and only when it can help (there
//! is another capable agent, a capable agent of a higher tier, a planner that
//! can replan, a person allowed to act); otherwise the next rung is tried. An
//! optional task is dropped (skipped) instead of replanning or waiting for a
//! person: the mission can succeed without it.

use super::text_enum;

/// A rung of the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rung {
    /// Retry on a capable agent that has not failed this task.
    OtherAgent,
    /// Retry on a capable agent of a higher model tier than any tried.
    HigherTier,
    /// Replace the task and the work after it with a new plan.
    Replan,
    /// Wait for a person to complete, retry, skip or fail it.
    Human,
}

text_enum!(Rung {
    OtherAgent => "other_agent",
    HigherTier => "higher_tier",
    Replan => "replan",
    Human => "human",
});

/// What the ladder can do next, as far as the caller could find out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LadderState {
    /// The last rung this task reached, if any.
    pub reached: Option<Rung>,
    /// The mission can succeed without the task.
    pub optional: bool,
    /// A capable agent exists that has not failed the task.
    pub other_agent: bool,
    /// A capable agent exists of a higher tier than every agent tried.
    pub higher_tier: bool,
    /// A planner can replan the mission now (and the mission's replan budget is not spent).
    pub replan: bool,
    /// A person may be asked.
    pub human: bool,
}

/// The outcome of escalating once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escalation {
    /// Take this rung.
    Climb(Rung),
    /// Drop the optional task (it becomes `skipped`).
    DropOptional,
    /// Nothing left: the task fails, and with it the mission.
    Fail,
}

/// The next step of the ladder for a task that has just failed for good.
pub fn escalate(s: &LadderState) -> Escalation {
    let after = |r: Rung| s.reached.is_none_or(|reached| r > reached);
    if after(Rung::OtherAgent) && s.other_agent {
        return Escalation::Climb(Rung::OtherAgent);
    }
    if after(Rung::HigherTier) && s.higher_tier {
        return Escalation::Climb(Rung::HigherTier);
    }
    if s.optional {
        return Escalation::DropOptional;
    }
    if after(Rung::Replan) && s.replan {
        return Escalation::Climb(Rung::Replan);
    }
    if after(Rung::Human) && s.human {
        return Escalation::Climb(Rung::Human);
    }
    Escalation::Fail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(reached: Option<Rung>) -> LadderState {
        LadderState {
            reached,
            optional: false,
            other_agent: true,
            higher_tier: true,
            replan: true,
            human: true,
        }
    }

    #[test]
    fn climbs_in_order_when_everything_is_possible() {
        let mut reached = None;
        let mut steps = Vec::new();
        loop {
            match escalate(&all(reached)) {
                Escalation::Climb(r) => {
                    steps.push(r);
                    reached = Some(r);
                }
                other => {
                    assert_eq!(other, Escalation::Fail);
                    break;
                }
            }
        }
        assert_eq!(
            steps,
            [
                Rung::OtherAgent,
                Rung::HigherTier,
                Rung::Replan,
                Rung::Human
            ]
        );
    }

    #[test]
    fn skips_rungs_that_cannot_help() {
        let s = LadderState {
            other_agent: false,
            higher_tier: false,
            replan: false,
            ..all(None)
        };
        assert_eq!(escalate(&s), Escalation::Climb(Rung::Human));
        let s = LadderState {
            other_agent: false,
            ..all(None)
        };
        assert_eq!(escalate(&s), Escalation::Climb(Rung::HigherTier));
        let s = LadderState {
            human: false,
            ..all(Some(Rung::Replan))
        };
        assert_eq!(escalate(&s), Escalation::Fail);
    }

    #[test]
    fn never_goes_back_down() {
        // Another agent appearing later does not restart the ladder.
        assert_eq!(
            escalate(&all(Some(Rung::HigherTier))),
            Escalation::Climb(Rung::Replan)
        );
        assert_eq!(escalate(&all(Some(Rung::Human))), Escalation::Fail);
    }

    #[test]
    fn optional_tasks_are_dropped_instead_of_replanned() {
        let s = LadderState {
            optional: true,
            ..all(Some(Rung::HigherTier))
        };
        assert_eq!(escalate(&s), Escalation::DropOptional);
        let s = LadderState {
            optional: true,
            ..all(None)
        };
        assert_eq!(escalate(&s), Escalation::Climb(Rung::OtherAgent));
    }
}
