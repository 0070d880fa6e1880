//! Handing a task from one agent to another (seed 004: "handoff allowed if a
//! better owner is available"): who may receive it. The receiver is named
//! (`to_agent`) or chosen by the assignment scorer among the agents of a
//! role (`to_role`); either way it must be someone else, online, able to do
//! the task and not prohibited from it by the organisation spec — the same
//! filters the dispatcher applies, so a task is never pinned to an agent the
//! dispatcher would refuse to give it to.

use crate::{
    assignment::{self, AgentProfile, ScoreWeights, TaskNeeds},
    organisation::Deontic,
};

/// An agent that might receive a task, as the scorer sees it.
#[derive(Debug, Clone)]
pub struct Prospect {
    /// The scorer's view (its `deontic` already set for the task).
    pub profile: AgentProfile,
    /// False for offline (or retired) agents.
    pub online: bool,
}

/// Who the task goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    /// This agent.
    Agent(&'a str),
    /// The best-scoring agent playing this role.
    Role(&'a str),
}

/// Why a handoff cannot go where it was asked to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The agent named itself.
    #[error("an agent cannot hand its task to itself ('{0}')")]
    ToSelf(String),
    /// No such agent (in this workspace, for this mission).
    #[error("no agent '{0}' can receive tasks of this mission")]
    UnknownAgent(String),
    /// The agent is offline or retired.
    #[error("agent '{0}' is offline")]
    Offline(String),
    /// The organisation spec prohibits the agent's role from the task.
    #[error("the organisation spec prohibits agent '{agent}' (role '{role}') from this task")]
    Prohibited {
        /// The agent.
        agent: String,
        /// Its role.
        role: String,
    },
    /// The agent lacks the skills, tools or model tier, or failed the task for good.
    #[error(
        "agent '{0}' cannot take this task (skills, tools or model tier, or it failed the task before)"
    )]
    Unable(String),
    /// Nobody else in the role can take the task.
    #[error("no other online agent in role '{0}' can take this task")]
    NoneInRole(String),
}

/// The receiver of a task `from` hands off, with its score (for the record).
pub fn choose_receiver(
    from: &str,
    target: Target<'_>,
    prospects: &[Prospect],
    needs: TaskNeeds<'_>,
    weights: &ScoreWeights,
) -> Result<(String, f64), Refusal> {
    match target {
        Target::Agent(id) => {
            if id == from {
                return Err(Refusal::ToSelf(id.to_owned()));
            }
            let p = prospects
                .iter()
                .find(|p| p.profile.agent_id == id)
                .ok_or_else(|| Refusal::UnknownAgent(id.to_owned()))?;
            if !p.online {
                return Err(Refusal::Offline(id.to_owned()));
            }
            if p.profile.deontic == Deontic::Prohibited {
                return Err(Refusal::Prohibited {
                    agent: id.to_owned(),
                    role: p.profile.role.clone(),
                });
            }
            assignment::score(needs, &idle_enough(&p.profile), weights)
                .map(|s| (id.to_owned(), s.total))
                .ok_or_else(|| Refusal::Unable(id.to_owned()))
        }
        Target::Role(role) => {
            let pool: Vec<AgentProfile> = prospects
                .iter()
                .filter(|p| p.online && p.profile.agent_id != from)
                .filter(|p| p.profile.role.eq_ignore_ascii_case(role))
                .map(|p| idle_enough(&p.profile))
                .collect();
            assignment::choose(needs, &pool, weights)
                .map(|(i, s)| (pool[i].agent_id.clone(), s.total))
                .ok_or_else(|| Refusal::NoneInRole(role.to_owned()))
        }
    }
}

/// A busy agent may still receive a task (it waits in the queue for a free
/// slot), so a full agent counts as one slot short of full: it scores lower
/// on capacity instead of not at all.
fn idle_enough(p: &AgentProfile) -> AgentProfile {
    let mut p = p.clone();
    p.running = p.running.min(p.max_concurrency.max(1) - 1);
    p
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn prospect(id: &str, role: &str, skills: &[&str], trust: f64) -> Prospect {
        Prospect {
            profile: AgentProfile {
                agent_id: id.into(),
                skills: skills.iter().map(|s| s.to_string()).collect(),
                tools: vec![],
                trust,
                cost_per_task: 0.0,
                max_concurrency: 1,
                running: 0,
                model_tier: 1,
                history: BTreeMap::new(),
                role: role.into(),
                deontic: Deontic::Unconstrained,
            },
            online: true,
        }
    }

    fn team() -> Vec<Prospect> {
        let mut offline = prospect("dora", "writer", &["writing"], 0.9);
        offline.online = false;
        let mut banned = prospect("eve", "editor", &["writing"], 0.9);
        banned.profile.deontic = Deontic::Prohibited;
        let mut busy = prospect("bob", "writer", &["writing"], 0.8);
        busy.profile.running = 1;
        vec![
            prospect("ann", "writer", &["writing"], 0.5),
            busy,
            prospect("cid", "researcher", &["research"], 0.9),
            offline,
            banned,
        ]
    }

    fn choose(target: Target<'_>) -> Result<(String, f64), Refusal> {
        let skills = vec!["writing".to_owned()];
        let needs = TaskNeeds::of(&skills, &[]);
        choose_receiver("ann", target, &team(), needs, &ScoreWeights::default())
    }

    #[test]
    fn a_named_agent_must_be_another_able_online_permitted_agent() {
        assert_eq!(
            choose(Target::Agent("ann")),
            Err(Refusal::ToSelf("ann".into()))
        );
        assert_eq!(
            choose(Target::Agent("zed")),
            Err(Refusal::UnknownAgent("zed".into()))
        );
        assert_eq!(
            choose(Target::Agent("dora")),
            Err(Refusal::Offline("dora".into()))
        );
        assert!(matches!(
            choose(Target::Agent("eve")),
            Err(Refusal::Prohibited { .. })
        ));
        assert_eq!(
            choose(Target::Agent("cid")),
            Err(Refusal::Unable("cid".into()))
        );
        // Busy is fine: the task waits for its slot.
        assert_eq!(choose(Target::Agent("bob")).unwrap().0, "bob");
    }

    #[test]
    fn a_role_gets_its_best_other_online_agent() {
        // ann is the caller; dora is offline: bob is the writer left.
        assert_eq!(choose(Target::Role("Writer")).unwrap().0, "bob");
        assert_eq!(
            choose(Target::Role("editor")),
            Err(Refusal::NoneInRole("editor".into()))
        );
        assert_eq!(
            choose(Target::Role("researcher")),
            Err(Refusal::NoneInRole("researcher".into()))
        );
    }
}
