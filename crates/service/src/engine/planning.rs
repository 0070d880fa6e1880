//! Phase 0 of the tick: missions waiting in `planning` for the LLM planner.
//!
//! A replica claims one such mission with a lease (`SKIP LOCKED`), calls the
//! model outside any transaction, then stores the plan only if it still holds
//! the lease. The model is shown the few methods closest to the goal as
//! examples. Transport failures are retried on a later tick (the lease runs
//! out) up to a limit, then fail the mission. A model that never produces a
//! valid plan (or whose context the request cannot fit) does not fail the
//! mission: it gets the generic method's plan, whose `plan.created` event
//! says why (`details.fallback`), and an `approve` mission waits for a person
//! as usual. No panic, no stuck mission.

use std::time::Duration;

use serde_json::json;
use sqlx::PgPool;
use tracing::Instrument;

use super::EngineConfig;
use crate::{
    domain::MissionEvent,
    missions::{PlanningConfig, install_plan, plan_ready, planner, replan},
    planning::{
        AgentCapability, PLANNER_GENERIC, PlanProvenance, PlanSpec, TaskSpec, ValidationContext,
        llm::{LlmError, LlmPlan, PlanRequest},
        validate_plan,
    },
    store::{
        agents, attempts,
        events::{self, NewEvent, payloads},
        missions, tasks,
    },
};

/// Provenance `planner` of plans made by the model.
pub const PLANNER_LLM: &str = "llm";

/// Plans one mission with the LLM if one waits; returns whether it did anything.
pub async fn plan_one(
    pool: &PgPool,
    cfg: &EngineConfig,
    planning: &PlanningConfig,
) -> anyhow::Result<bool> {
    let Some(llm) = planning.llm.clone() else {
        return Ok(false);
    };
    // The lease covers every retry and repair of one planning round, each
    // round's one smaller retry after a context-length error, and the
    // server's report of its context size.
    let lease =
        llm.config().timeout * (llm.config().max_retries + 2) * (llm.config().max_repairs + 1)
            + Duration::from_secs(35);
    let Some(claim) =
        missions::claim_for_planning(pool, &cfg.replica_id, lease.as_secs_f64()).await?
    else {
        return Ok(false);
    };
    let actor = format!("engine:{}", cfg.replica_id);
    let agents = planner::capabilities(pool, planning, claim.workspace_id).await?;
    let mut skills: Vec<String> = agents
        .iter()
        .flat_map(|a| a.skills.iter().cloned())
        .filter(|s| s != AgentCapability::ANY)
        .collect();
    skills.sort();
    skills.dedup();
    let (kept, previous) = {
        let mut conn = pool.acquire().await?;
        let kept = replan::kept_specs(&mut conn, claim.id)
            .await
            .map_err(api_error)?;
        let previous = missions::get_plan(pool, claim.workspace_id, claim.id, None)
            .await?
            .and_then(|p| serde_json::from_value::<PlanSpec>(p.spec).ok());
        (kept, previous)
    };
    let validate = |plan: &PlanSpec| {
        validate_plan(
            replan::union(&kept, plan.clone()),
            &ValidationContext {
                rules: &planning.rules,
                budget: claim.budget_limit,
                agents: &agents,
            },
        )
        .map(|_| ())
    };
    let library = planner::library(pool, planning, claim.workspace_id)
        .await
        .map_err(api_error)?;
    let methods = planner::method_hints(&library, planning, &claim.goal, &claim.constraints);
    let request = PlanRequest {
        goal: &claim.goal,
        constraints: &claim.constraints,
        feedback: claim.planning_feedback.as_deref(),
        previous_plan: previous.as_ref(),
        skills: &skills,
        min_tasks: planning.rules.min_tasks,
        max_tasks: planning.rules.max_tasks,
        methods: &methods,
    };
    let started = std::time::Instant::now();
    // A trace per planning round: the model calls (`llm_call`) are its children.
    let span = tracing::info_span!(
        parent: None,
        "planner",
        mission_id = %claim.id,
        workspace_id = %claim.workspace_id,
        planning_attempt = claim.planning_attempts,
        tokens = tracing::field::Empty,
    );
    let result = llm.plan(&request, &validate).instrument(span.clone()).await;
    let tokens = result
        .as_ref()
        .ok()
        .map(|p| p.prompt_tokens + p.completion_tokens);
    cfg.metrics.planner_call(started, tokens);
    if let Some(t) = tokens {
        span.record("tokens", t);
    }

    let mut tx = pool.begin().await?;
    let Some(mut run) = missions::lock(&mut tx, claim.workspace_id, claim.id).await? else {
        return Ok(true);
    };
    if !missions::holds_planning_lease(&mut tx, claim.id, &cfg.replica_id).await? {
        // Cancelled meanwhile, or another replica took over after our lease ran out.
        return Ok(true);
    }
    let ctx = ValidationContext {
        rules: &planning.rules,
        budget: claim.budget_limit,
        agents: &agents,
    };
    let cancelled = match result {
        Ok(planned) => {
            install_llm_plan(&mut tx, planning, &mut run, &kept, &ctx, planned, &actor).await?;
            Vec::new()
        }
        Err(e) if e.is_model_failure() => {
            let fallback = Fallback {
                kept: &kept,
                ctx: &ctx,
                generic: planner::generic_plan(&library, &claim.goal, &claim.constraints)
                    .map(|(name, d)| (name, d.plan))
                    .map_err(|e| e.to_string()),
            };
            match fall_back(&mut tx, planning, &mut run, &claim, &e, fallback, &actor).await? {
                None => Vec::new(),
                Some(why) => {
                    let e = FailedPlanning {
                        llm: e,
                        fallback: Some(why),
                    };
                    planning_failed(&mut tx, cfg, planning, &mut run, &claim, e, &actor).await?
                }
            }
        }
        Err(e) => {
            let e = FailedPlanning {
                llm: e,
                fallback: None,
            };
            planning_failed(&mut tx, cfg, planning, &mut run, &claim, e, &actor).await?
        }
    };
    tx.commit().await?;
    crate::worker::notify_cancelled(&cfg.worker_http, cancelled);
    Ok(true)
}

/// Installs a plan the model made (validated once more against the kept
/// tasks) and makes the mission ready, in the caller's transaction.
async fn install_llm_plan(
    conn: &mut sqlx::PgConnection,
    planning: &PlanningConfig,
    run: &mut missions::MissionRow,
    kept: &[TaskSpec],
    ctx: &ValidationContext<'_>,
    planned: LlmPlan,
    actor: &str,
) -> anyhow::Result<()> {
    let validated = validate_plan(replan::union(kept, planned.plan.clone()), ctx)
        .map_err(|p| anyhow::anyhow!("plan changed validity: {p:?}"))?;
    let usage = json!({
        "model": planned.model, "prompt_tokens": planned.prompt_tokens,
        "completion_tokens": planned.completion_tokens, "latency_ms": planned.latency_ms,
        "calls": planned.calls, "repairs": planned.repairs,
        "response_format": planned.response_format,
    });
    log_call(
        &mut *conn,
        run,
        actor,
        payloads::PlanLlmCall {
            outcome: "plan".into(),
            usage: Some(usage.clone()),
            code: None,
            error: None,
            attempt: None,
        },
    )
    .await?;
    tasks::remove_unstarted(&mut *conn, run.id).await?;
    let provenance = PlanProvenance {
        planner: PLANNER_LLM,
        template: None,
        match_outcome: None,
        reason: format!(
            "no method matched; planned by model {} in {} call(s) with {} repair(s)",
            planned.model, planned.calls, planned.repairs
        ),
    };
    install_plan(
        &mut *conn,
        planning,
        run,
        &validated,
        &provenance,
        &json!({ "llm": usage }),
        actor,
    )
    .await
    .map_err(api_error)?;
    plan_ready(&mut *conn, run, actor)
        .await
        .map_err(api_error)?;
    Ok(())
}

/// What the generic fallback needs: the tasks a replan keeps, the
/// validation context, and the generic method's plan (or why there is none).
struct Fallback<'a> {
    kept: &'a [TaskSpec],
    ctx: &'a ValidationContext<'a>,
    generic: Result<(String, PlanSpec), String>,
}

/// The model gave no plan it could: installs the generic method's plan
/// instead, after the `plan.llm_call` error, with a `plan.created` whose
/// provenance and `details.fallback` say so and why. Returns why it could
/// not (the generic plan does not validate here), leaving the mission as it
/// was for [`planning_failed`].
async fn fall_back(
    conn: &mut sqlx::PgConnection,
    planning: &PlanningConfig,
    run: &mut missions::MissionRow,
    claim: &missions::PlanningClaim,
    e: &LlmError,
    fallback: Fallback<'_>,
    actor: &str,
) -> anyhow::Result<Option<String>> {
    let (method, plan) = match fallback.generic {
        Ok(generic) => generic,
        Err(why) => return Ok(Some(why)),
    };
    let validated = match validate_plan(replan::union(fallback.kept, plan), fallback.ctx) {
        Ok(validated) => validated,
        Err(problems) => {
            let listed: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
            return Ok(Some(format!(
                "the generic method's plan is not valid here either: {}",
                listed.join("; ")
            )));
        }
    };
    log_call(&mut *conn, run, actor, error_call(e, claim)).await?;
    tracing::warn!(mission = %run.id, error = %e, "LLM planning gave no plan; falling back to the generic method");
    tasks::remove_unstarted(&mut *conn, run.id).await?;
    let provenance = PlanProvenance {
        planner: PLANNER_GENERIC,
        template: Some(method.clone()),
        match_outcome: None,
        reason: format!(
            "no method matched and the LLM planner gave no usable plan ({}: {e}); fell back to the generic research → draft → review method",
            e.code()
        ),
    };
    let details = json!({
        "fallback": {"from": PLANNER_LLM, "to": method, "code": e.code(), "reason": e.to_string()},
    });
    install_plan(
        &mut *conn,
        planning,
        run,
        &validated,
        &provenance,
        &details,
        actor,
    )
    .await
    .map_err(api_error)?;
    plan_ready(&mut *conn, run, actor)
        .await
        .map_err(api_error)?;
    Ok(None)
}

/// The `plan.llm_call` of a failed planning round.
fn error_call(e: &LlmError, claim: &missions::PlanningClaim) -> payloads::PlanLlmCall {
    payloads::PlanLlmCall {
        outcome: "error".into(),
        usage: None,
        code: Some(e.code().to_owned()),
        error: Some(e.to_string()),
        attempt: Some(claim.planning_attempts),
    }
}

/// Why a planning round failed: the model's error, and why the generic
/// fallback could not be used when it was tried.
struct FailedPlanning {
    llm: LlmError,
    fallback: Option<String>,
}

/// Records a failed planning round: gives the lease back for a retry when
/// the failure may pass, or fails the mission (cancelling what it started);
/// returns the attempts to tell their workers about.
async fn planning_failed(
    conn: &mut sqlx::PgConnection,
    cfg: &EngineConfig,
    planning: &PlanningConfig,
    run: &mut missions::MissionRow,
    claim: &missions::PlanningClaim,
    failed: FailedPlanning,
    actor: &str,
) -> anyhow::Result<Vec<attempts::Cancelled>> {
    let FailedPlanning { llm: e, fallback } = failed;
    let retryable = matches!(
        e,
        LlmError::Timeout { .. }
            | LlmError::Transport(_)
            | LlmError::Http {
                status: 429 | 500..=599,
                ..
            }
    );
    let problems = match &e {
        LlmError::InvalidPlan { problems, .. } => json!(problems),
        _ => json!([]),
    };
    log_call(&mut *conn, run, actor, error_call(&e, claim)).await?;
    if retryable && claim.planning_attempts < planning.max_planning_attempts {
        tracing::warn!(mission = %run.id, error = %e, "LLM planning failed; will retry");
        missions::release_planning_lease(
            &mut *conn,
            run.id,
            cfg.retry_base.max(Duration::from_secs(1)),
        )
        .await?;
    } else {
        let reason = match &fallback {
            None => format!("planning failed: {e}"),
            Some(why) => format!("planning failed: {e}; no generic fallback: {why}"),
        };
        events::append(
            &mut *conn,
            run.workspace_id,
            NewEvent::new(
                run.id,
                None,
                None,
                actor,
                &payloads::PlanFailed {
                    code: e.code().to_owned(),
                    reason: reason.clone(),
                    problems: problems.clone(),
                },
            ),
        )
        .await?;
        tasks::cancel_all_open(
            &mut *conn,
            run.workspace_id,
            run.id,
            actor,
            "planning failed",
        )
        .await?;
        let live = attempts::cancel_live(&mut *conn, run.id, None).await?;
        for a in &live {
            agents::release_slot(&mut *conn, run.workspace_id, &a.agent_id).await?;
        }
        missions::transition(&mut *conn, run, MissionEvent::Fail, actor, Some(&reason))
            .await
            .map_err(|e| anyhow::anyhow!("failing mission after planning error: {e}"))?;
        return Ok(live);
    }
    Ok(Vec::new())
}

async fn log_call(
    tx: &mut sqlx::PgConnection,
    run: &missions::MissionRow,
    actor: &str,
    payload: payloads::PlanLlmCall,
) -> sqlx::Result<i64> {
    events::append(
        tx,
        run.workspace_id,
        NewEvent::new(run.id, None, None, actor, &payload),
    )
    .await
}

fn api_error(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}
