//! Reading an agent's BDI state and judging it: its beliefs (`belief_get`),
//! its desires ranked by the priority formula (`desire_evaluate`), a goal's
//! standing (`goal_evaluate`), and every open intention reconsidered
//! (`intention_reconsider` over all of them).

use serde::Serialize;
use sqlx::PgConnection;
use uuid::Uuid;

use super::{
    rules::{
        self, BeliefCategory, CommitmentStrategy, GoalStatus, IntentionStatus, PriorityInputs,
        evaluation::{GoalEvaluation, GoalFacts, PursuitFact},
    },
    state::{BdiError, Reconsideration, reconsider_intention, require_agent},
};
use crate::store::bdi::{self as store, BeliefView, GoalView};

/// An agent's beliefs, optionally of one category or subject, by subject
/// (404 for an agent the workspace does not have).
pub async fn beliefs(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    category: Option<BeliefCategory>,
    subject: Option<&str>,
) -> Result<Vec<BeliefView>, BdiError> {
    require_agent(&mut *conn, workspace_id, agent_id).await?;
    Ok(store::list_beliefs(
        &mut *conn,
        workspace_id,
        agent_id,
        category.map(|c| c.as_str()),
        subject,
    )
    .await?)
}

/// One desire as `desire_evaluate` ranks it.
#[derive(Debug, Serialize)]
pub struct RankedDesire {
    /// 1 = the highest priority.
    pub rank: usize,
    /// The desire.
    pub desire_id: Uuid,
    /// What is desired.
    pub description: String,
    /// `terminal` or `instrumental`.
    pub kind: String,
    /// The formula's value now.
    pub priority: f64,
    /// Each component times its weight (they sum to `priority`).
    pub contributions: PriorityInputs,
    /// Desires it serves.
    pub serves: Vec<Uuid>,
    /// Scarce resources it needs.
    pub resources: Vec<String>,
}

/// The agent's active desires ranked by the seed's formula (§6.2), highest
/// first (ties: the older first). Nothing is written.
pub async fn rank_desires(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
) -> Result<Vec<RankedDesire>, BdiError> {
    require_agent(&mut *conn, workspace_id, agent_id).await?;
    let mut desires =
        store::list_desires(&mut *conn, workspace_id, agent_id, Some("active")).await?;
    let inputs = |d: &store::DesireView| PriorityInputs {
        base_priority: d.base_priority,
        importance: d.importance,
        urgency: d.urgency,
        strategic_alignment: d.strategic_alignment,
        dependency_status: d.dependency_status,
    };
    desires.sort_by(|a, b| {
        rules::desire_priority(&inputs(b))
            .total_cmp(&rules::desire_priority(&inputs(a)))
            .then(a.created_at.cmp(&b.created_at))
            .then(a.id.cmp(&b.id))
    });
    Ok(desires
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            let p = inputs(&d);
            RankedDesire {
                rank: i + 1,
                desire_id: d.id,
                priority: rules::desire_priority(&p).clamp(0.0, 1.0),
                contributions: PriorityInputs {
                    base_priority: p.base_priority * 0.30,
                    importance: p.importance * 0.25,
                    urgency: p.urgency * 0.25,
                    strategic_alignment: p.strategic_alignment * 0.15,
                    dependency_status: p.dependency_status * 0.05,
                },
                description: d.description,
                kind: d.kind,
                serves: d.serves,
                resources: d.resources,
            }
        })
        .collect())
}

/// `goal_evaluate`'s answer.
#[derive(Debug, Serialize)]
pub struct GoalReport {
    /// The goal.
    pub goal: GoalView,
    /// The verdict, progress and reasons.
    #[serde(flatten)]
    pub evaluation: GoalEvaluation,
    /// The intentions pursuing it.
    pub intentions: Vec<Uuid>,
    /// Its sub-goals.
    pub sub_goals: Vec<Uuid>,
}

/// Judges one of the agent's goals ([`rules::evaluation::evaluate_goal`])
/// from its deadline, the intentions pursuing it and its sub-goals. Nothing
/// is written.
pub async fn evaluate_goal(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    goal_id: Uuid,
) -> Result<GoalReport, BdiError> {
    require_agent(&mut *conn, workspace_id, agent_id).await?;
    let goals = store::list_goals(&mut *conn, workspace_id, agent_id).await?;
    let goal = goals
        .iter()
        .find(|g| g.id == goal_id)
        .cloned()
        .ok_or_else(|| BdiError::NotFound {
            what: "goal",
            id: goal_id,
            agent_id: agent_id.to_owned(),
        })?;
    let children: Vec<&GoalView> = goals
        .iter()
        .filter(|g| g.parent_goal_id == Some(goal_id))
        .collect();
    let pursuing: Vec<store::IntentionView> =
        store::list_intentions(&mut *conn, workspace_id, agent_id, None)
            .await?
            .into_iter()
            .filter(|i| i.goal_id == Some(goal_id))
            .collect();
    let mut intentions = Vec::with_capacity(pursuing.len());
    for i in &pursuing {
        let strategy: CommitmentStrategy = i.strategy.parse()?;
        let days = store::seconds_since(&mut *conn, i.last_progress_at).await? / 86_400.0;
        intentions.push(PursuitFact {
            status: i.status.parse()?,
            progress: i.progress,
            stalled: i.needs_reconsideration || rules::is_stale(strategy, days),
        });
    }
    let schedule_elapsed = match goal.deadline {
        Some(deadline) => {
            let since_created = store::seconds_since(&mut *conn, goal.created_at).await?;
            let span = (deadline - goal.created_at).as_seconds_f64();
            Some(if span <= 0.0 {
                1.0
            } else {
                since_created / span
            })
        }
        None => None,
    };
    let facts = GoalFacts {
        status: goal.status.parse()?,
        schedule_elapsed,
        intentions,
        children: children
            .iter()
            .map(|c| c.status.parse())
            .collect::<Result<Vec<GoalStatus>, _>>()?,
    };
    Ok(GoalReport {
        evaluation: rules::evaluation::evaluate_goal(&facts),
        intentions: pursuing.iter().map(|i| i.id).collect(),
        sub_goals: children.iter().map(|c| c.id).collect(),
        goal,
    })
}

/// `intention_reconsider` over every active or suspended intention of the
/// agent, oldest first; with `apply`, each verdict is applied.
pub async fn reconsider_all(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    apply: bool,
    actor: &str,
) -> Result<Vec<Reconsideration>, BdiError> {
    require_agent(&mut *conn, workspace_id, agent_id).await?;
    let open: Vec<Uuid> = store::list_intentions(&mut *conn, workspace_id, agent_id, None)
        .await?
        .into_iter()
        .filter(|i| {
            i.status == IntentionStatus::Active.as_str()
                || i.status == IntentionStatus::Suspended.as_str()
        })
        .map(|i| i.id)
        .collect();
    let mut out = Vec::with_capacity(open.len());
    for id in open {
        out.push(
            reconsider_intention(
                &mut *conn,
                workspace_id,
                agent_id,
                id,
                false,
                false,
                apply,
                actor,
            )
            .await?,
        );
    }
    Ok(out)
}
