//! `bdi_cycle` (seed §5, §20.8 tool 41): one cycle of one agent's BDI loop,
//! as far as the service supports it today.
//!
//! What runs is the maintenance of [`super::runtime`] scoped to the agent —
//! PERCEIVE as belief conflict detection over its beliefs, DELIBERATE as
//! pruning its stalled intentions, re-ranking its desires by the formula and
//! reconsidering each open intention (recommendations, not applied) — and the
//! audit record (§5.7), which says that PLAN, ACT and LEARN did not run:
//! the service holds no agent plans to execute yet (issue 22 makes the cycle
//! live). Changes are the maintenance job's own (stale marks, ranks,
//! conflict reports) with their events.

use serde::Serialize;
use serde_json::{Value, json};
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    evaluate::{rank_desires, reconsider_all},
    runtime::maintain,
    state::{BdiError, require_agent},
};
use crate::store::bdi::{self as store, CycleCounts};

/// The `replica` an agent's own cycle is recorded under: the agent ran it
/// through its tool, not a replica's schedule.
pub const AGENT_CYCLE_REPLICA: &str = "bdi_cycle";

/// Desires the audit record lists (seed §5.7: "top 3 by priority").
const TOP_DESIRES: usize = 3;

/// Why the phases that did not run did not.
const NOT_LIVE: &str = "not run: the service keeps no agent plans to generate, execute or learn from yet (issue 22 makes the cycle live)";

/// An agent's cycle: its audit record.
#[derive(Debug, Serialize)]
pub struct AgentCycle {
    /// The audit record's id (a row of the cycle log).
    pub cycle_id: i64,
    /// The agent.
    pub agent_id: String,
    /// When it started.
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: OffsetDateTime,
    /// Milliseconds it took.
    pub duration_ms: i64,
    /// Per phase: whether it ran and what it did.
    pub phases: Value,
}

fn counts_json(c: &CycleCounts) -> Value {
    json!({
        "intentions_pruned": c.intentions_pruned,
        "desires_resorted": c.desires_resorted,
        "beliefs_scanned": c.beliefs_scanned,
        "conflicts_found": c.conflicts_found,
    })
}

/// Runs one cycle for `agent_id` and writes its audit record.
pub async fn run_for_agent(
    pool: &PgPool,
    workspace_id: Uuid,
    agent_id: &str,
    actor: &str,
) -> Result<AgentCycle, BdiError> {
    let started = OffsetDateTime::now_utc();
    {
        let mut conn = pool.acquire().await?;
        require_agent(&mut conn, workspace_id, agent_id).await?;
    }
    let counts = maintain(pool, store::Scope::Agent(workspace_id, agent_id), actor).await?;
    let mut tx = pool.begin().await?;
    let beliefs = store::list_beliefs(&mut tx, workspace_id, agent_id, None, None).await?;
    let mut by_category = serde_json::Map::new();
    for b in &beliefs {
        let n = by_category
            .get(&b.category)
            .and_then(Value::as_i64)
            .unwrap_or(0);
        by_category.insert(b.category.clone(), json!(n + 1));
    }
    let ranked = rank_desires(&mut tx, workspace_id, agent_id).await?;
    let top: Vec<Value> = ranked
        .iter()
        .take(TOP_DESIRES)
        .map(|d| json!({ "desire_id": d.desire_id, "description": d.description, "priority": d.priority }))
        .collect();
    let reconsidered = reconsider_all(&mut tx, workspace_id, agent_id, false, actor).await?;
    let recommendations: Vec<Value> = reconsidered
        .iter()
        .map(|r| json!({ "intention_id": r.intention.id, "verdict": r.verdict, "reasons": r.reasons }))
        .collect();
    let phases = json!({
        "perceive": {
            "ran": true,
            "did": "compared your beliefs for conflicts (same subject, both certainties above 0.7, contradictory content)",
            "beliefs_held": beliefs.len(),
            "beliefs_by_category": by_category,
            "beliefs_compared": counts.beliefs_scanned,
            "conflicts_found": counts.conflicts_found,
            "beliefs_updated": 0,
        },
        "deliberate": {
            "ran": true,
            "did": "marked stalled intentions, re-ranked your active desires by the priority formula, reconsidered each open intention (recommendations only)",
            "intentions_marked_stale": counts.intentions_pruned,
            "desires_evaluated": ranked.len(),
            "desires_reranked": counts.desires_resorted,
            "top_desires": top,
            "recommendations": recommendations,
        },
        "plan": { "ran": false, "why": NOT_LIVE },
        "act": { "ran": false, "why": NOT_LIVE, "actions_taken": 0 },
        "learn": { "ran": false, "why": NOT_LIVE, "lessons_recorded": 0 },
        "counts": counts_json(&counts),
    });
    let cycle_id = store::insert_agent_cycle(
        &mut tx,
        started,
        AGENT_CYCLE_REPLICA,
        (workspace_id, agent_id),
        counts,
        &phases,
    )
    .await?;
    store::attribute_conflicts(
        &mut tx,
        cycle_id,
        started,
        store::Scope::Agent(workspace_id, agent_id),
    )
    .await?;
    tx.commit().await?;
    let duration_ms = (OffsetDateTime::now_utc() - started).whole_milliseconds();
    Ok(AgentCycle {
        cycle_id,
        agent_id: agent_id.to_owned(),
        started_at: started,
        duration_ms: i64::try_from(duration_ms).unwrap_or(i64::MAX),
        phases,
    })
}
