//! Deterministic agent choice: a pure function of (task, agents, loads).
//!
//! Hard filters first: the agent is online (the caller passes only online
//! agents), has every required skill and tool (case-insensitively), a free
//! slot, a model tier of at least the task's minimum, and has not been
//! excluded from the task by the escalation ladder. Then a weighted score:
//!
//! ```text
//! score = w_fit·fit + w_trust·trust + w_capacity·(1 − running/max)
//!       + w_cost·1/(1 + cost_per_task) + w_past·(s + 1)/(s + f + 2)
//! fit   = |required skills| / |agent skills|   (1 when the task needs none or the agent lists none)
//! s, f  = the agent's succeeded and failed attempts on this task type
//! ```
//!
//! A workspace's organisation spec adds two rules, decided per task by the
//! caller (the service's organisation use cases) and carried in
//! [`AgentProfile::deontic`]: a prohibited agent is filtered out like an
//! incapable one, and when any eligible agent is obliged, only obliged agents
//! compete (an obligation outranks any score difference).
//!
//! `fit` prefers specialists over generalists, so broad agents stay free for
//! work only they can do. Past success is Laplace-smoothed: an agent with no
//! history scores 0.5, as trust does by default. The weights are
//! configuration (`--score-weights`); the total is divided by their sum, so
//! it stays in `[0, 1]`. Ties break by `agent_id`, so the same inputs always
//! give the same choice, whatever order the agents come in.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::organisation::Deontic;

/// What the scorer needs to know about an agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentProfile {
    /// Stable id; the tie-breaker.
    pub agent_id: String,
    /// Skills it has.
    pub skills: Vec<String>,
    /// Tools it can use.
    pub tools: Vec<String>,
    /// Trust in `[0, 1]`.
    pub trust: f64,
    /// Cost per task in the budget's currency.
    pub cost_per_task: f64,
    /// Concurrency cap.
    pub max_concurrency: i32,
    /// Live attempts right now.
    pub running: i32,
    /// Model tier (higher is more capable).
    pub model_tier: i32,
    /// Past attempts per task type: (succeeded, failed).
    pub history: BTreeMap<String, (i64, i64)>,
    /// The organisation role it plays.
    pub role: String,
    /// What the organisation spec says of it for the task being scored.
    pub deontic: Deontic,
}

/// What a task needs.
#[derive(Debug, Clone, Copy)]
pub struct TaskNeeds<'a> {
    /// Skills the agent must have.
    pub required_skills: &'a [String],
    /// Tools the agent must have.
    pub required_tools: &'a [String],
    /// Kind of work (for past success).
    pub task_type: &'a str,
    /// Agents that may not take it (they failed it for good).
    pub excluded: &'a [String],
    /// Lowest model tier allowed.
    pub min_tier: i32,
}

impl<'a> TaskNeeds<'a> {
    /// Needs of skills and tools only (no type, exclusions or tier).
    pub fn of(required_skills: &'a [String], required_tools: &'a [String]) -> Self {
        TaskNeeds {
            required_skills,
            required_tools,
            task_type: "",
            excluded: &[],
            min_tier: 0,
        }
    }
}

/// Weights of the score's parts (non-negative, not all zero).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScoreWeights {
    /// Specialisation.
    pub fit: f64,
    /// Trust.
    pub trust: f64,
    /// Free capacity.
    pub capacity: f64,
    /// Cheapness.
    pub cost: f64,
    /// Past success on the task type.
    pub past: f64,
}

impl Default for ScoreWeights {
    fn default() -> Self {
        ScoreWeights {
            fit: 0.35,
            trust: 0.2,
            capacity: 0.15,
            cost: 0.1,
            past: 0.2,
        }
    }
}

impl ScoreWeights {
    /// The weights a mission uses once its budget warning fired: cheapness
    /// counts three times as much, so cheaper agents (and tiers) win ties of
    /// capability.
    pub fn budget_saver(self) -> ScoreWeights {
        ScoreWeights {
            cost: self.cost * 3.0,
            ..self
        }
    }

    /// Parses `fit=0.35,trust=0.2,...`; unnamed parts keep their default.
    pub fn parse(text: &str) -> Result<ScoreWeights, String> {
        let mut w = ScoreWeights::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = part
                .split_once('=')
                .ok_or_else(|| format!("'{part}' is not name=value"))?;
            let value: f64 = value
                .trim()
                .parse()
                .map_err(|_| format!("'{value}' is not a number"))?;
            if !value.is_finite() || value < 0.0 {
                return Err(format!("weight {name} must be a non-negative number"));
            }
            match name.trim() {
                "fit" => w.fit = value,
                "trust" => w.trust = value,
                "capacity" => w.capacity = value,
                "cost" => w.cost = value,
                "past" => w.past = value,
                other => {
                    return Err(format!(
                        "unknown weight '{other}' (expected fit, trust, capacity, cost, past)"
                    ));
                }
            }
        }
        if w.sum() <= 0.0 {
            return Err("at least one weight must be positive".into());
        }
        Ok(w)
    }

    fn sum(&self) -> f64 {
        self.fit + self.trust + self.capacity + self.cost + self.past
    }
}

/// A score and its parts, stored on the task so a choice can be explained.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Score {
    /// The weighted total.
    pub total: f64,
    /// Specialisation part, before weighting.
    pub fit: f64,
    /// Trust part.
    pub trust: f64,
    /// Free-capacity part.
    pub capacity: f64,
    /// Cheapness part.
    pub cost: f64,
    /// Past-success part.
    pub past: f64,
}

fn covers(have: &[String], need: &[String]) -> bool {
    need.iter()
        .all(|n| have.iter().any(|h| h.eq_ignore_ascii_case(n)))
}

/// True if the agent could ever take the task (skills and tools), ignoring load.
pub fn capable(task: TaskNeeds<'_>, agent_skills: &[String], agent_tools: &[String]) -> bool {
    covers(agent_skills, task.required_skills) && covers(agent_tools, task.required_tools)
}

/// The score of one agent for one task, or `None` if a hard filter rules it out.
pub fn score(task: TaskNeeds<'_>, agent: &AgentProfile, w: &ScoreWeights) -> Option<Score> {
    if agent.running >= agent.max_concurrency
        || agent.model_tier < task.min_tier
        || task.excluded.contains(&agent.agent_id)
        || agent.deontic == Deontic::Prohibited
        || !capable(task, &agent.skills, &agent.tools)
    {
        return None;
    }
    let fit = if task.required_skills.is_empty() || agent.skills.is_empty() {
        1.0
    } else {
        (task.required_skills.len() as f64 / agent.skills.len() as f64).min(1.0)
    };
    let trust = agent.trust.clamp(0.0, 1.0);
    let capacity = 1.0 - f64::from(agent.running) / f64::from(agent.max_concurrency.max(1));
    let cost = 1.0 / (1.0 + agent.cost_per_task.max(0.0));
    let (s, f) = agent.history.get(task.task_type).copied().unwrap_or((0, 0));
    let past = (s.max(0) as f64 + 1.0) / ((s.max(0) + f.max(0)) as f64 + 2.0);
    let sum = w.sum();
    let sum = if sum > 0.0 { sum } else { 1.0 };
    let total =
        (w.fit * fit + w.trust * trust + w.capacity * capacity + w.cost * cost + w.past * past)
            / sum;
    Some(Score {
        total,
        fit,
        trust,
        capacity,
        cost,
        past,
    })
}

/// The best agent for the task (index into `agents`) and its score: an
/// obliged agent before any other, then the highest score.
pub fn choose(
    task: TaskNeeds<'_>,
    agents: &[AgentProfile],
    w: &ScoreWeights,
) -> Option<(usize, Score)> {
    agents
        .iter()
        .enumerate()
        .filter_map(|(i, a)| score(task, a, w).map(|s| (i, s)))
        .max_by(|(ia, sa), (ib, sb)| {
            let obliged = |i: &usize| agents[*i].deontic == Deontic::Obliged;
            obliged(ia)
                .cmp(&obliged(ib))
                .then_with(|| sa.total.total_cmp(&sb.total))
                // Reverse so that the smaller agent_id wins a tie under max_by.
                .then_with(|| agents[*ib].agent_id.cmp(&agents[*ia].agent_id))
        })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn agent(id: &str, skills: &[&str], running: i32) -> AgentProfile {
        AgentProfile {
            agent_id: id.into(),
            skills: skills.iter().map(|s| s.to_string()).collect(),
            tools: vec![],
            trust: 0.5,
            cost_per_task: 0.0,
            max_concurrency: 2,
            running,
            model_tier: 1,
            history: BTreeMap::new(),
            role: "analyst".into(),
            deontic: Deontic::Unconstrained,
        }
    }

    fn needs(skills: &[String]) -> TaskNeeds<'_> {
        TaskNeeds {
            required_skills: skills,
            required_tools: &[],
            task_type: "research",
            excluded: &[],
            min_tier: 0,
        }
    }

    #[test]
    fn hard_filters() {
        let skills = vec!["Research".to_string()];
        let w = ScoreWeights::default();
        assert!(score(needs(&skills), &agent("a", &["research"], 0), &w).is_some());
        assert!(score(needs(&skills), &agent("a", &["writing"], 0), &w).is_none());
        assert!(score(needs(&skills), &agent("a", &["research"], 2), &w).is_none());
        let tools = vec!["browser".to_string()];
        let t = TaskNeeds {
            required_tools: &tools,
            ..needs(&[])
        };
        assert!(score(t, &agent("a", &[], 0), &w).is_none());
        let excluded = vec!["a".to_string()];
        let t = TaskNeeds {
            excluded: &excluded,
            ..needs(&skills)
        };
        assert!(score(t, &agent("a", &["research"], 0), &w).is_none());
        assert!(score(t, &agent("b", &["research"], 0), &w).is_some());
        let t = TaskNeeds {
            min_tier: 2,
            ..needs(&skills)
        };
        assert!(score(t, &agent("a", &["research"], 0), &w).is_none());
        let mut strong = agent("a", &["research"], 0);
        strong.model_tier = 2;
        assert!(score(t, &strong, &w).is_some());
    }

    #[test]
    fn past_success_on_the_task_type_counts() {
        let skills = vec!["research".to_string()];
        let w = ScoreWeights::default();
        let mut good = agent("z-good", &["research"], 0);
        good.history.insert("research".into(), (9, 1));
        let mut bad = agent("a-bad", &["research"], 0);
        bad.history.insert("research".into(), (1, 9));
        // History on another task type does not count.
        bad.history.insert("writing".into(), (100, 0));
        let agents = [bad, good];
        assert_eq!(choose(needs(&skills), &agents, &w).unwrap().0, 1);
        let s = score(needs(&skills), &agents[1], &w).unwrap();
        assert!((s.past - 10.0 / 12.0).abs() < 1e-12);
    }

    #[test]
    fn weights_parse_and_refuse_nonsense() {
        let w = ScoreWeights::parse("fit=1, past=0").unwrap();
        assert_eq!(w.fit, 1.0);
        assert_eq!(w.past, 0.0);
        assert_eq!(w.trust, ScoreWeights::default().trust);
        assert!(ScoreWeights::parse("speed=1").is_err());
        assert!(ScoreWeights::parse("fit=-1").is_err());
        assert!(ScoreWeights::parse("fit").is_err());
        assert!(ScoreWeights::parse("fit=0,trust=0,capacity=0,cost=0,past=0").is_err());
    }

    #[test]
    fn specialists_and_free_agents_win() {
        let skills = vec!["research".to_string()];
        let w = ScoreWeights::default();
        let agents = [
            agent("generalist", &["research", "writing", "review"], 0),
            agent("specialist", &["research"], 0),
        ];
        assert_eq!(choose(needs(&skills), &agents, &w).unwrap().0, 1);
        let agents = [
            agent("busy", &["research"], 1),
            agent("free", &["research"], 0),
        ];
        assert_eq!(choose(needs(&skills), &agents, &w).unwrap().0, 1);
    }

    #[test]
    fn ties_break_by_agent_id() {
        let skills = vec!["research".to_string()];
        let w = ScoreWeights::default();
        let agents = [agent("b", &["research"], 0), agent("a", &["research"], 0)];
        assert_eq!(choose(needs(&skills), &agents, &w).unwrap().0, 1);
    }

    #[test]
    fn hand_computed_score() {
        let skills = vec!["research".to_string()];
        let mut a = agent("a", &["research", "writing"], 1);
        a.trust = 0.8;
        a.cost_per_task = 1.0;
        let s = score(needs(&skills), &a, &ScoreWeights::default()).unwrap();
        // 0.35·0.5 + 0.2·0.8 + 0.15·0.5 + 0.1·0.5 + 0.2·0.5 = 0.56 (weights sum to 1)
        assert!((s.total - 0.56).abs() < 1e-12, "{}", s.total);
    }

    #[test]
    fn prohibited_agents_never_win_and_obliged_ones_always_do() {
        let skills = vec!["research".to_string()];
        let w = ScoreWeights::default();
        let mut best = agent("best", &["research"], 0);
        best.trust = 1.0;
        let mut weak = agent("weak", &["research", "writing", "review"], 1);
        weak.trust = 0.0;
        // Unconstrained: the specialist with full trust wins.
        let agents = [best.clone(), weak.clone()];
        assert_eq!(choose(needs(&skills), &agents, &w).unwrap().0, 0);
        // Prohibited: filtered out, whatever its score.
        best.deontic = Deontic::Prohibited;
        assert!(score(needs(&skills), &best, &w).is_none());
        let agents = [best.clone(), weak.clone()];
        assert_eq!(choose(needs(&skills), &agents, &w).unwrap().0, 1);
        // Obliged beats a far better permitted agent.
        best.deontic = Deontic::Permitted;
        weak.deontic = Deontic::Obliged;
        let agents = [best.clone(), weak.clone()];
        assert_eq!(choose(needs(&skills), &agents, &w).unwrap().0, 1);
        // ...but not when it cannot take the task (no slot): then the rest compete.
        weak.running = weak.max_concurrency;
        let agents = [best, weak];
        assert_eq!(choose(needs(&skills), &agents, &w).unwrap().0, 0);
    }

    /// Agents from generated (skills, running, trust, verdict) tuples.
    fn pool_of(specs: &[(u8, i32, u8, u8)]) -> Vec<AgentProfile> {
        let skills = ["research", "writing", "review", "coding"];
        let verdicts = [
            Deontic::Unconstrained,
            Deontic::Permitted,
            Deontic::Obliged,
            Deontic::Prohibited,
        ];
        specs
            .iter()
            .enumerate()
            .map(|(i, (k, running, trust, d))| {
                let mut a = agent(&format!("agent-{i:02}"), &skills[..=*k as usize], *running);
                a.trust = f64::from(*trust) / 10.0;
                a.deontic = verdicts[*d as usize];
                a
            })
            .collect()
    }

    proptest! {
        #[test]
        fn norms_hold_for_any_pool(
            specs in prop::collection::vec((0u8..4, 0i32..3, 0u8..10, 0u8..4), 1..12),
        ) {
            let agents = pool_of(&specs);
            let skills = vec!["research".to_string()];
            let w = ScoreWeights::default();
            let eligible: Vec<&AgentProfile> =
                agents.iter().filter(|a| score(needs(&skills), a, &w).is_some()).collect();
            match choose(needs(&skills), &agents, &w) {
                Some((i, _)) => {
                    prop_assert_ne!(agents[i].deontic, Deontic::Prohibited);
                    if eligible.iter().any(|a| a.deontic == Deontic::Obliged) {
                        prop_assert_eq!(agents[i].deontic, Deontic::Obliged);
                    }
                }
                None => prop_assert!(eligible.is_empty()),
            }
        }

        /// Deterministic and order-independent under any permutation: the
        /// same pool in a shuffled order, scored twice, yields the same agent
        /// with bit-identical scores, and that agent is the oracle's best
        /// (obliged first, then highest total, then smallest id).
        #[test]
        fn choice_is_deterministic_under_any_permutation(
            (specs, order) in prop::collection::vec((0u8..4, 0i32..3, 0u8..10, 0u8..4), 1..12)
                .prop_flat_map(|specs| {
                    let order: Vec<usize> = (0..specs.len()).collect();
                    (Just(specs), Just(order).prop_shuffle())
                }),
            cost in 0u8..5,
        ) {
            let mut agents = pool_of(&specs);
            for (i, a) in agents.iter_mut().enumerate() {
                a.cost_per_task = f64::from(cost) * (i % 3) as f64 / 10.0;
                a.history.insert("research".into(), (i as i64 % 4, i as i64 % 3));
            }
            let shuffled: Vec<AgentProfile> = order.iter().map(|&i| agents[i].clone()).collect();
            let skills = vec!["research".to_string()];
            let w = ScoreWeights::default();
            let pick = |pool: &[AgentProfile]| {
                choose(needs(&skills), pool, &w).map(|(i, s)| (pool[i].agent_id.clone(), s.total.to_bits()))
            };
            let first = pick(&agents);
            prop_assert_eq!(&first, &pick(&agents));
            prop_assert_eq!(&first, &pick(&shuffled));
            for a in &agents {
                let once = score(needs(&skills), a, &w).map(|s| s.total.to_bits());
                prop_assert_eq!(once, score(needs(&skills), a, &w).map(|s| s.total.to_bits()));
            }
            // The oracle: sort every eligible agent by the documented order.
            let mut ranked: Vec<(bool, f64, &str)> = agents
                .iter()
                .filter_map(|a| {
                    score(needs(&skills), a, &w)
                        .map(|s| (a.deontic == Deontic::Obliged, s.total, a.agent_id.as_str()))
                })
                .collect();
            ranked.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(b.2)));
            prop_assert_eq!(first.map(|(id, _)| id), ranked.first().map(|r| r.2.to_owned()));
        }

        #[test]
        fn choice_does_not_depend_on_order(
            specs in prop::collection::vec((0u8..4, 0i32..3, 0u8..10, 0u8..4), 1..12),
            rotate in 0usize..12,
        ) {
            let agents = pool_of(&specs);
            let skills = vec!["research".to_string()];
            let w = ScoreWeights::default();
            let first = choose(needs(&skills), &agents, &w).map(|(i, _)| agents[i].agent_id.clone());
            let mut rotated = agents.clone();
            let by = rotate % rotated.len();
            rotated.rotate_left(by);
            rotated.reverse();
            let second = choose(needs(&skills), &rotated, &w).map(|(i, _)| rotated[i].agent_id.clone());
            prop_assert_eq!(first, second);
        }
    }
}
