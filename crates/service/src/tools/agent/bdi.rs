//! The agent's own BDI state as tools (seed §20.7 desires, §20.8 beliefs,
//! goals, intentions and the cycle). Each acts on the caller's state only
//! (`agent_id`, when given, must name the caller) and runs the use cases of
//! the REST routes under `/v1/agents/{agent_id}/…`, with the same request
//! bodies where a route exists.

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::{
    acting_as, answer, body, object,
    planning::{agent_arg, text},
    required_uuid, tool, uuid_arg,
};
use crate::{
    auth::Principal,
    bdi::{
        cycle, evaluate,
        requests::{CommitIntention, CreateDesire, CreateGoal, PutBelief},
        state,
    },
    error::ApiError,
    store::bdi as store,
    tools::{Group, Tool, ToolContext},
};

/// Most revisions `belief_update` shows with its answer (the newest).
const REVISIONS_SHOWN: usize = 20;

fn unit(description: &str) -> Value {
    json!({ "type": "number", "minimum": 0, "maximum": 1, "description": description })
}

fn ids(description: &str) -> Value {
    json!({ "type": "array", "items": { "type": "string" }, "description": description })
}

/// Moves an argument to the name the REST body uses for it.
fn rename(args: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(v) = args.remove(from) {
        args.insert(to.to_owned(), v);
    }
}

/// The tools of both groups: desires (§20.7) and beliefs, goals, intentions, the cycle (§20.8).
pub(super) fn tools() -> Vec<Tool> {
    let mut all = desire_tools();
    all.extend(bdi_tools());
    all
}

fn desire_tools() -> Vec<Tool> {
    vec![
        tool(
            Group::Desire,
            "desire_create",
            "Add a desire",
            "Add a desire of yours. Its priority is 0.30·base_priority + 0.25·importance + \
             0.25·urgency + 0.15·strategic_alignment + 0.05·dependency_status. An instrumental \
             desire names the active desires it serves. Conflicts with your active desires \
             (same scarce resource, incompatible_with, a different strategy) are reported, not \
             refused: drop or reformulate one.",
            object(
                json!({
                    "description": { "type": "string", "minLength": 1, "description": "What you desire." },
                    "type": { "type": "string", "enum": ["terminal", "instrumental"], "description": "terminal (an end in itself) or instrumental (a means to others)." },
                    "base_priority": unit("Intrinsic importance (weight 0.30)."),
                    "importance": unit("How much achieving it matters (weight 0.25)."),
                    "urgency": unit("Time sensitivity (weight 0.25)."),
                    "strategic_alignment": unit("Fit with the strategic direction (weight 0.15)."),
                    "dependency_status": unit("1 when all its dependencies are met (weight 0.05; default 1)."),
                    "serves": ids("For an instrumental desire: the ids of the active desires it serves."),
                    "resources": { "type": "array", "items": { "type": "string" }, "description": "Scarce resources it needs (budget, personnel, …)." },
                    "strategy": { "type": "string", "description": "The strategic direction it pulls towards." },
                    "incompatible_with": ids("Ids of active desires that achieving this one rules out."),
                    "agent_id": agent_arg(),
                }),
                &[
                    "description",
                    "type",
                    "base_priority",
                    "importance",
                    "urgency",
                    "strategic_alignment",
                ],
            ),
            false,
            desire_create,
        ),
        tool(
            Group::Desire,
            "desire_evaluate",
            "Rank my desires",
            "Rank your active desires by the priority formula, highest first, with each \
             component's weighted contribution. Changes nothing.",
            object(json!({ "agent_id": agent_arg() }), &[]),
            true,
            desire_evaluate,
        ),
        tool(
            Group::Desire,
            "desire_drop",
            "Drop a desire",
            "Drop one of your active desires with the reason. Instrumental desires left serving \
             only dropped desires are dropped with it (the cascade); the drop record lists them.",
            object(
                json!({
                    "desire_id": { "type": "string", "format": "uuid", "description": "The desire." },
                    "reason": { "type": "string", "minLength": 1, "description": "Why." },
                    "version": { "type": "integer", "minimum": 1, "description": "The version you read (refused if it changed since)." },
                    "agent_id": agent_arg(),
                }),
                &["desire_id", "reason"],
            ),
            false,
            desire_drop,
        ),
        tool(
            Group::Desire,
            "intention_reconsider",
            "Reconsider my intentions",
            "Recommend keep, suspend or drop for each of your active and suspended intentions \
             (or only intention_id), by its commitment strategy: stalled past 7 days \
             (open-minded) or 3 (cautious) → suspend; a competing desire above priority × 1.3 \
             (open-minded) or × 1.1 (cautious) → drop; single-minded keeps unless impossible. \
             With apply, each verdict is carried out.",
            object(
                json!({
                    "intention_id": { "type": "string", "format": "uuid", "description": "Only this intention (default: all open ones)." },
                    "impossible": { "type": "boolean", "description": "With intention_id: your beliefs show it cannot be achieved." },
                    "blocked": { "type": "boolean", "description": "With intention_id: an external blocker or a resource conflict holds it." },
                    "apply": { "type": "boolean", "description": "Carry out the verdicts (default false: only recommend)." },
                    "agent_id": agent_arg(),
                }),
                &[],
            ),
            false,
            intention_reconsider,
        ),
    ]
}

fn bdi_tools() -> Vec<Tool> {
    vec![
        tool(
            Group::Bdi,
            "belief_get",
            "Read my beliefs",
            "Your beliefs with their certainty, optionally of one category or subject.",
            object(
                json!({
                    "category": { "type": "string", "enum": ["environment", "self", "agent", "case"], "description": "Only this category." },
                    "subject": { "type": "string", "description": "Only this subject." },
                    "agent_id": agent_arg(),
                }),
                &[],
            ),
            true,
            belief_get,
        ),
        tool(
            Group::Bdi,
            "belief_update",
            "Update a belief",
            "Record what you hold true about a subject, with a certainty. The same content \
             again corroborates it (certainty becomes the higher of the two, never lower); \
             different content replaces it only with higher certainty, is rejected with lower, \
             and is flagged as a conflict with equal. Every write is logged; the answer shows \
             the belief's revision log.",
            object(
                json!({
                    "category": { "type": "string", "enum": ["environment", "self", "agent", "case"], "description": "environment, self, agent or case." },
                    "subject": { "type": "string", "minLength": 1, "description": "What it is about (one belief per category and subject)." },
                    "content": { "type": "string", "minLength": 1, "description": "What you hold true." },
                    "certainty": unit("How sure you are."),
                    "reason": { "type": "string", "description": "Why (logged with the revision)." },
                    "agent_id": agent_arg(),
                }),
                &["category", "subject", "content", "certainty"],
            ),
            false,
            belief_update,
        ),
        tool(
            Group::Bdi,
            "goal_create",
            "Adopt a goal",
            "Adopt a goal at a tier (strategic → tactical → operational), optionally under a \
             parent goal of yours at its tier or above, and realising one of your desires.",
            object(
                json!({
                    "description": { "type": "string", "minLength": 1, "description": "What to reach." },
                    "tier": { "type": "string", "enum": ["strategic", "tactical", "operational"], "description": "strategic, tactical or operational." },
                    "success_criteria": { "type": "string", "description": "How to tell it is reached." },
                    "deadline": { "type": "string", "description": "RFC 3339, e.g. 2027-03-31T00:00:00Z." },
                    "parent_goal": { "type": "string", "format": "uuid", "description": "The parent goal's id." },
                    "desire_id": { "type": "string", "format": "uuid", "description": "The desire it realises." },
                    "agent_id": agent_arg(),
                }),
                &["description", "tier"],
            ),
            false,
            goal_create,
        ),
        tool(
            Group::Bdi,
            "goal_evaluate",
            "Evaluate a goal",
            "How one of your goals stands: on_track, at_risk (nothing pursues it, an intention \
             stalled, a sub-goal abandoned, or progress trails the deadline by over 25 points), \
             blocked (its intentions are all suspended or dropped), completed or failed \
             (abandoned, or the deadline passed), with progress and the reasons.",
            object(
                json!({
                    "goal_id": { "type": "string", "format": "uuid", "description": "The goal." },
                    "agent_id": agent_arg(),
                }),
                &["goal_id"],
            ),
            true,
            goal_evaluate,
        ),
        tool(
            Group::Bdi,
            "intention_commit",
            "Commit to an intention",
            "Commit to pursuing something, with a commitment strategy: single-minded (until \
             achieved or impossible), open-minded (the default) or cautious. Linked to one of \
             your active desires it takes that desire's priority; linked to a goal it counts \
             towards goal_evaluate.",
            object(
                json!({
                    "description": { "type": "string", "minLength": 1, "description": "What you intend to do." },
                    "goal_id": { "type": "string", "format": "uuid", "description": "The goal it pursues." },
                    "desire_id": { "type": "string", "format": "uuid", "description": "The active desire it commits to." },
                    "commitment_strategy": { "type": "string", "enum": ["single-minded", "open-minded", "cautious"], "description": "How readily it may be abandoned." },
                    "priority": unit("Its priority when no desire is named (default 0.5)."),
                    "agent_id": agent_arg(),
                }),
                &["description"],
            ),
            false,
            intention_commit,
        ),
        tool(
            Group::Bdi,
            "bdi_cycle",
            "Run my BDI cycle",
            "Run one BDI cycle for yourself and get its audit record. Today only the maintenance \
             part runs: PERCEIVE compares your beliefs for conflicts; DELIBERATE marks stalled \
             intentions, re-ranks your desires and recommends keep/suspend/drop per intention \
             (not applied). PLAN, ACT and LEARN do not run yet (the record says so): plan with \
             plan_generate and report steps with plan_execute_step yourself.",
            object(json!({ "agent_id": agent_arg() }), &[]),
            false,
            bdi_cycle,
        ),
    ]
}

fn desire_create<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let agent = acting_as(who, &mut args, "agent_id")?;
        rename(&mut args, "type", "kind");
        let input = body::<CreateDesire>(args)?.input()?;
        let mut tx = cx.pool.begin().await?;
        let (desire, conflicts) =
            state::create_desire(&mut tx, who.workspace_id, &agent, input, &who.actor()).await?;
        tx.commit().await?;
        Ok(json!({
            "desire_id": desire.id,
            "priority": desire.priority,
            "conflicts": conflicts,
            "desire": desire,
        }))
    })
}

fn desire_evaluate<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let agent = acting_as(who, &mut args, "agent_id")?;
        let mut conn = cx.pool.acquire().await?;
        let ranked = evaluate::rank_desires(&mut conn, who.workspace_id, &agent).await?;
        Ok(json!({ "agent_id": agent, "count": ranked.len(), "desires": ranked }))
    })
}

fn desire_drop<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let agent = acting_as(who, &mut args, "agent_id")?;
        let desire_id = required_uuid(&mut args, "desire_id")?;
        let reason = text(&mut args, "reason")?;
        let version = args.get("version").and_then(Value::as_i64);
        let mut tx = cx.pool.begin().await?;
        let record = state::drop_desire(
            &mut tx,
            who.workspace_id,
            &agent,
            desire_id,
            &reason,
            version,
            &who.actor(),
        )
        .await?;
        tx.commit().await?;
        answer(&record)
    })
}

fn intention_reconsider<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let agent = acting_as(who, &mut args, "agent_id")?;
        let flag = |f: &str| args.get(f).and_then(Value::as_bool).unwrap_or(false);
        let (impossible, blocked, apply) = (flag("impossible"), flag("blocked"), flag("apply"));
        let one = uuid_arg(&mut args, "intention_id")?;
        let mut tx = cx.pool.begin().await?;
        let verdicts = match one {
            Some(id) => vec![
                state::reconsider_intention(
                    &mut tx,
                    who.workspace_id,
                    &agent,
                    id,
                    impossible,
                    blocked,
                    apply,
                    &who.actor(),
                )
                .await?,
            ],
            None if impossible || blocked => {
                return Err(ApiError::invalid(
                    if impossible { "impossible" } else { "blocked" },
                    "impossible and blocked are about one intention: give intention_id",
                ));
            }
            None => {
                evaluate::reconsider_all(&mut tx, who.workspace_id, &agent, apply, &who.actor())
                    .await?
            }
        };
        tx.commit().await?;
        Ok(json!({ "count": verdicts.len(), "applied": apply, "recommendations": verdicts }))
    })
}

fn belief_get<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let agent = acting_as(who, &mut args, "agent_id")?;
        let category = args
            .get("category")
            .and_then(Value::as_str)
            .map(str::parse)
            .transpose()?;
        let subject = args.get("subject").and_then(Value::as_str);
        let mut conn = cx.pool.acquire().await?;
        let beliefs =
            evaluate::beliefs(&mut conn, who.workspace_id, &agent, category, subject).await?;
        Ok(json!({ "agent_id": agent, "count": beliefs.len(), "beliefs": beliefs }))
    })
}

fn belief_update<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let agent = acting_as(who, &mut args, "agent_id")?;
        let input = body::<PutBelief>(args)?.input()?;
        let mut tx = cx.pool.begin().await?;
        let (outcome, belief, revision) =
            state::update_belief(&mut tx, who.workspace_id, &agent, input, &who.actor()).await?;
        let mut log = store::revisions(&mut tx, who.workspace_id, &agent, belief.id)
            .await?
            .unwrap_or_default();
        tx.commit().await?;
        let skip = log.len().saturating_sub(REVISIONS_SHOWN);
        log.drain(..skip);
        Ok(json!({
            "outcome": outcome,
            "belief": belief,
            "revision": revision,
            "revision_log": log,
        }))
    })
}

fn goal_create<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let agent = acting_as(who, &mut args, "agent_id")?;
        rename(&mut args, "parent_goal", "parent_goal_id");
        let input = body::<CreateGoal>(args)?.input()?;
        let mut tx = cx.pool.begin().await?;
        let goal =
            state::create_goal(&mut tx, who.workspace_id, &agent, input, &who.actor()).await?;
        tx.commit().await?;
        Ok(json!({ "goal_id": goal.id, "goal": goal }))
    })
}

fn goal_evaluate<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let agent = acting_as(who, &mut args, "agent_id")?;
        let goal_id = required_uuid(&mut args, "goal_id")?;
        let mut conn = cx.pool.acquire().await?;
        let report = evaluate::evaluate_goal(&mut conn, who.workspace_id, &agent, goal_id).await?;
        answer(&report)
    })
}

fn intention_commit<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let agent = acting_as(who, &mut args, "agent_id")?;
        rename(&mut args, "commitment_strategy", "strategy");
        let input = body::<CommitIntention>(args)?.input()?;
        let mut tx = cx.pool.begin().await?;
        let it =
            state::commit_intention(&mut tx, who.workspace_id, &agent, input, &who.actor()).await?;
        tx.commit().await?;
        Ok(json!({ "intention_id": it.id, "intention": it }))
    })
}

fn bdi_cycle<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let agent = acting_as(who, &mut args, "agent_id")?;
        let record = cycle::run_for_agent(cx.pool, who.workspace_id, &agent, &who.actor()).await?;
        answer(&record)
    })
}
