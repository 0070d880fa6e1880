//! The agent registry's rules: an agent's statuses and which of them take
//! work, who may change what about an agent, and why a pin to an agent
//! cannot be honoured.
//!
//! An agent is `idle`, `working`, `blocked` or `done` (what it reports, or
//! what the engine sets as attempts start and end), `offline` (the
//! coordinator's verdict on a silent agent, or an operator's; its next
//! heartbeat brings it back) or `retired` (an operator's `DELETE`: history
//! kept, no new work, and no heartbeat brings it back — only an operator's
//! `PATCH` of its status does).

use crate::text_enum;

/// Where an agent is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgentStatus {
    /// Free (no live attempt).
    Idle,
    /// Holding live attempts.
    Working,
    /// Reports itself blocked (informational: it still takes work).
    Blocked,
    /// Reports itself done (informational: it still takes work).
    Done,
    /// Gone quiet, or taken out of rotation; its next heartbeat brings it back.
    Offline,
    /// Its endpoint could not be reached for several dispatches in a row;
    /// its next heartbeat (or an operator) brings it back.
    Unreachable,
    /// Retired by an operator: kept for history, never given work again.
    Retired,
}

text_enum!(AgentStatus as "AgentState", {
    Idle => "idle",
    Working => "working",
    Blocked => "blocked",
    Done => "done",
    Offline => "offline",
    Unreachable => "unreachable",
    Retired => "retired",
});

impl AgentStatus {
    /// Whether the scorer, the ladder and plan validation may count on it.
    pub fn takes_work(self) -> bool {
        !matches!(
            self,
            AgentStatus::Offline | AgentStatus::Unreachable | AgentStatus::Retired
        )
    }

    /// Whether an agent may report this status in a heartbeat (`offline` is
    /// the coordinator's verdict, `retired` an operator's).
    pub fn reportable(self) -> bool {
        matches!(
            self,
            AgentStatus::Idle | AgentStatus::Working | AgentStatus::Blocked | AgentStatus::Done
        )
    }
}

/// Who is changing an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Editor {
    /// The agent itself (its own agent token).
    SelfAgent,
    /// An admin or operator.
    Operator,
}

/// A field of an agent that `PATCH /v1/agents/{id}` may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AgentField {
    /// Organisation role.
    Role,
    /// Name for people.
    DisplayName,
    /// Skills.
    Skills,
    /// Tools.
    Tools,
    /// Worker base URL.
    EndpointUrl,
    /// Concurrency cap.
    MaxConcurrency,
    /// Model name.
    Model,
    /// Model tier.
    ModelTier,
    /// Trust.
    Trust,
    /// Cost per task.
    CostPerTask,
    /// Heartbeat promise.
    HeartbeatTimeoutSecs,
    /// Status.
    Status,
}

text_enum!(AgentField {
    Role => "role",
    DisplayName => "display_name",
    Skills => "skills",
    Tools => "tools",
    EndpointUrl => "endpoint_url",
    MaxConcurrency => "max_concurrency",
    Model => "model",
    ModelTier => "model_tier",
    Trust => "trust",
    CostPerTask => "cost_per_task",
    HeartbeatTimeoutSecs => "heartbeat_timeout_secs",
    Status => "status",
});

impl AgentField {
    /// Whether an agent may change this about itself. Only what does not
    /// win it work or reach: its name, its capacity and its status. Its role
    /// (the organisation's norms follow it), skills, tools, tier, trust and
    /// cost (the scorer's inputs), its endpoint (where its tasks and their
    /// tokens are sent) and its heartbeat promise (how it is watched) are an
    /// operator's to change.
    pub fn self_editable(self) -> bool {
        matches!(
            self,
            AgentField::DisplayName | AgentField::MaxConcurrency | AgentField::Status
        )
    }
}

/// Why a status change is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatusRefusal {
    /// Retirement has its own request, which writes its own event.
    #[error("status 'retired' is set by DELETE /v1/agents/{{id}}, not by PATCH")]
    RetireByDelete,
    /// Only an operator brings a retired agent back.
    #[error("a retired agent cannot bring itself back; an operator may, by PATCHing its status")]
    SelfUnretire,
}

/// Whether `editor` may move an agent from `from` to `to` by `PATCH`.
pub fn patch_status(
    from: AgentStatus,
    to: AgentStatus,
    editor: Editor,
) -> Result<(), StatusRefusal> {
    if to == AgentStatus::Retired && from != AgentStatus::Retired {
        return Err(StatusRefusal::RetireByDelete);
    }
    if from == AgentStatus::Retired && to != AgentStatus::Retired && editor == Editor::SelfAgent {
        return Err(StatusRefusal::SelfUnretire);
    }
    Ok(())
}

/// Why a task cannot be pinned to an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PinRefusal {
    /// No such agent in the workspace.
    UnknownAgent,
    /// The agent is retired.
    Retired,
    /// The agent is offline.
    Offline,
    /// The agent's endpoint cannot be reached.
    Unreachable,
    /// The organisation spec prohibits the agent's role from the task.
    Prohibited,
    /// The agent lacks the skills or tools the task needs.
    Incapable,
}

text_enum!(PinRefusal {
    UnknownAgent => "unknown_agent",
    Retired => "retired",
    Offline => "offline",
    Unreachable => "unreachable",
    Prohibited => "prohibited",
    Incapable => "incapable",
});

/// What is known of a pinned agent, for [`pin_refusal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinTarget {
    /// Its status.
    pub status: AgentStatus,
    /// The organisation spec prohibits its role from the task.
    pub prohibited: bool,
    /// It has the skills and tools the task needs.
    pub capable: bool,
}

/// Why a task cannot go to this agent (`None`: it can). The first reason
/// that applies, most permanent first, so the answer names what a person
/// must change.
pub fn pin_refusal(target: Option<PinTarget>) -> Option<PinRefusal> {
    let Some(t) = target else {
        return Some(PinRefusal::UnknownAgent);
    };
    match t.status {
        AgentStatus::Retired => Some(PinRefusal::Retired),
        _ if t.prohibited => Some(PinRefusal::Prohibited),
        _ if !t.capable => Some(PinRefusal::Incapable),
        AgentStatus::Offline => Some(PinRefusal::Offline),
        AgentStatus::Unreachable => Some(PinRefusal::Unreachable),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_offline_unreachable_and_retired_agents_take_no_work() {
        for s in AgentStatus::ALL {
            assert_eq!(
                s.takes_work(),
                !matches!(
                    s,
                    AgentStatus::Offline | AgentStatus::Unreachable | AgentStatus::Retired
                ),
                "{s}"
            );
        }
        let reportable: Vec<_> = AgentStatus::ALL
            .iter()
            .filter(|s| s.reportable())
            .map(|s| s.as_str())
            .collect();
        assert_eq!(reportable, ["idle", "working", "blocked", "done"]);
    }

    #[test]
    fn retirement_is_a_delete_and_only_an_operator_undoes_it() {
        use AgentStatus as S;
        assert_eq!(
            patch_status(S::Idle, S::Retired, Editor::Operator),
            Err(StatusRefusal::RetireByDelete)
        );
        assert_eq!(
            patch_status(S::Retired, S::Idle, Editor::SelfAgent),
            Err(StatusRefusal::SelfUnretire)
        );
        assert_eq!(patch_status(S::Retired, S::Idle, Editor::Operator), Ok(()));
        // Staying retired is no change at all.
        assert_eq!(
            patch_status(S::Retired, S::Retired, Editor::SelfAgent),
            Ok(())
        );
        for to in [S::Idle, S::Working, S::Blocked, S::Done, S::Offline] {
            assert_eq!(patch_status(S::Offline, to, Editor::SelfAgent), Ok(()));
        }
    }

    #[test]
    fn an_agent_edits_only_what_wins_it_no_work() {
        let own: Vec<_> = AgentField::ALL
            .iter()
            .filter(|f| f.self_editable())
            .map(|f| f.as_str())
            .collect();
        assert_eq!(own, ["display_name", "max_concurrency", "status"]);
    }

    #[test]
    fn a_pin_names_the_most_permanent_reason() {
        let ok = PinTarget {
            status: AgentStatus::Idle,
            prohibited: false,
            capable: true,
        };
        assert_eq!(pin_refusal(Some(ok)), None);
        assert_eq!(pin_refusal(None), Some(PinRefusal::UnknownAgent));
        let retired = PinTarget {
            status: AgentStatus::Retired,
            prohibited: true,
            capable: false,
        };
        assert_eq!(pin_refusal(Some(retired)), Some(PinRefusal::Retired));
        let prohibited_offline = PinTarget {
            status: AgentStatus::Offline,
            prohibited: true,
            ..ok
        };
        assert_eq!(
            pin_refusal(Some(prohibited_offline)),
            Some(PinRefusal::Prohibited)
        );
        let incapable = PinTarget {
            capable: false,
            ..ok
        };
        assert_eq!(pin_refusal(Some(incapable)), Some(PinRefusal::Incapable));
        let offline = PinTarget {
            status: AgentStatus::Offline,
            ..ok
        };
        assert_eq!(pin_refusal(Some(offline)), Some(PinRefusal::Offline));
        // Busy or blocked agents still take pinned work.
        for status in [
            AgentStatus::Working,
            AgentStatus::Blocked,
            AgentStatus::Done,
        ] {
            assert_eq!(pin_refusal(Some(PinTarget { status, ..ok })), None);
        }
    }
}
