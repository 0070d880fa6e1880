//! Blockers (seed 004: "if blocked → raise Decision(topic=blocker), suggest
//! options"): an agent stuck inside its task asks a stakeholder to choose.
//! The decision joins the queue with `topic: blocker` and the task; the
//! agent's attempt ends without counting as a failure and the task waits in
//! `awaiting_human`. Resolving it (`approved`/`modified` with the chosen
//! option, or `rejected`) puts the task back in the queue, preferring the
//! agent that raised it, with the outcome as its next dispatch's
//! `feedback`; `deferred` keeps it waiting (a deferred blocker always comes
//! back to `pending`, whatever the profile says). A person may also settle
//! the waiting task directly (`resolve_task`); the decision then stands alone.

use super::*;

use crate::{
    auth::AttemptScope,
    missions::human::{self, HumanAction, HumanActionError},
    store::handoffs as handoff_store,
};

/// `raise_blocker`: what the blocked agent asks a stakeholder to decide.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BlockerRequest {
    /// What blocks the task and needs deciding (1–2000 characters).
    pub description: String,
    /// The choices the agent sees (1–10, distinct labels).
    pub options: Vec<DecisionOption>,
    /// The label of the option the agent recommends.
    #[serde(default)]
    pub recommended_option: Option<String>,
    /// Financial, strategic and risk notes (a JSON object).
    #[serde(default)]
    pub impact_analysis: Option<Value>,
}

/// Raises a blocker from inside the caller's task (see the module doc), in
/// one transaction under the mission's lock: the decision and its
/// `decision.requested` event, the attempt's end and the task's move to
/// `awaiting_human` with its event.
pub async fn raise_blocker(
    pool: &PgPool,
    who: &Principal,
    scope: AttemptScope,
    req: BlockerRequest,
) -> Result<DecisionView, GovernanceError> {
    GovernanceError::require(who, &[Role::Agent])?;
    let agent = who.agent_id.clone().ok_or_else(|| {
        GovernanceError::Forbidden("only an agent's attempt token can raise a blocker".into())
    })?;
    check_len("description", &req.description, 2000)?;
    if req.options.is_empty() {
        return Err(Invalid::new("options", "a blocker needs at least one option").into());
    }
    check_options(&req.options, req.recommended_option.as_deref())?;
    let impact = impact_of(req.impact_analysis.as_ref())?;
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let (run, t) = human::lock_task(&mut tx, who.workspace_id, scope.task_id)
        .await
        .map_err(boxed)?
        .ok_or(GovernanceError::UnknownMission(scope.mission_id))?;
    if t.status() != TaskStatus::Running {
        return Err(GovernanceError::NotRunning {
            key: t.task_key.clone(),
            status: t.status.clone(),
        });
    }
    let checked = json!({
        "requires_approval": true,
        "reason": "the agent is blocked inside its task and asks a stakeholder to choose",
        "topic": DecisionTopic::Blocker,
    });
    let row = store::insert_decision(
        &mut tx,
        NewDecision {
            id: Uuid::new_v4(),
            workspace_id: who.workspace_id,
            requester: &actor,
            requester_agent_id: Some(&agent),
            mission_id: Some(run.id),
            task_id: Some(t.id),
            category: OPERATIONAL,
            description: req.description.trim(),
            impact_analysis: &impact,
            options: &serde_json::to_value(&req.options).unwrap_or(json!([])),
            recommended_option: req.recommended_option.as_deref(),
            estimated_cost: None,
            headcount: None,
            governance_check: &checked,
            topic: DecisionTopic::Blocker.as_str(),
        },
    )
    .await?
    .ok_or(GovernanceError::DecisionExists)?;
    let why = format!("blocked: waits for decision {}", row.id);
    let ended = handoff_store::end_attempt(&mut tx, t.id, scope.attempt_id, &why)
        .await?
        .ok_or(GovernanceError::StaleAttempt {
            attempt_id: scope.attempt_id,
        })?;
    crate::store::agents::release_slot(&mut tx, run.workspace_id, &ended).await?;
    let payload = events::payloads::TaskAwaitingHuman {
        reason: Some(format!("blocked: {}", req.description.trim())),
        via: Some(json!({ "decision_id": row.id, "topic": DecisionTopic::Blocker })),
        ..Default::default()
    };
    // The attempt has ended already, so this only moves the task.
    human::hand_to_person(&mut tx, &run, &t, &actor, payload)
        .await
        .map_err(boxed)?;
    decision_event(&mut tx, &row, payloads::DecisionRequested, &actor).await?;
    tx.commit().await?;
    Ok(row.view())
}

fn boxed(e: HumanActionError) -> GovernanceError {
    GovernanceError::TaskMove(Box::new(e))
}

/// A resolved blocker moves its task (which the caller's transaction has
/// locked with its mission): any final outcome queues it again with the
/// outcome as feedback, preferring the agent that raised it; `deferred`
/// leaves it waiting. A task no longer waiting (a person settled it, or the
/// mission ended) is left alone.
pub(crate) async fn unblock(
    conn: &mut PgConnection,
    run: &mut MissionRow,
    d: &DecisionRow,
    t: &TaskRow,
    actor: &str,
) -> Result<(), GovernanceError> {
    let status = d.status();
    if t.status() != TaskStatus::AwaitingHuman
        || t.workspace_id != d.workspace_id
        || !status.is_final()
        || run.status().is_terminal()
    {
        return Ok(());
    }
    let conditions: Vec<String> = serde_json::from_value(d.conditions.clone()).unwrap_or_default();
    let feedback: String = blocker_feedback(
        &d.description,
        status,
        d.chosen_option.as_deref(),
        d.rationale.as_deref(),
        &conditions,
    )
    .chars()
    .take(crate::missions::replan::MAX_FEEDBACK_CHARS)
    .collect();
    let settlement = human::Settlement {
        action: HumanAction::Retry,
        output: None,
        feedback: Some(feedback),
        via: Some(json!({ "decision_id": d.id, "topic": DecisionTopic::Blocker })),
    };
    human::settle(conn, run, t, settlement, actor)
        .await
        .map_err(boxed)?;
    if let Some(agent) = &d.requester_agent_id {
        handoff_store::hint_agent(conn, t.id, agent).await?;
    }
    missions::notify_wake(conn).await?;
    Ok(())
}
