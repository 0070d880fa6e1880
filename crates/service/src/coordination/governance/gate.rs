//! The dispatcher's hooks: the governance gate before a task is dispatched, and the re-check of deferred decisions.

use super::*;

/// The governance gate before dispatch: a task the profile requires approval
/// for moves to `awaiting_approval`, out of the queue, with a decision in the
/// queue. Returns true when it was held. Runs in the claim's transaction,
/// which holds the task's queue row and its mission.
pub async fn gate_task(
    conn: &mut PgConnection,
    profile: &ProfileRow,
    facts: &TaskFacts,
    task: &TaskRow,
    actor: &str,
) -> anyhow::Result<bool> {
    if facts.approved_by_decision.is_some() {
        return Ok(false);
    }
    let action = Action {
        category: facts
            .action_category
            .clone()
            .unwrap_or_else(|| OPERATIONAL.into()),
        estimated_cost: Some(task.estimated_cost),
        headcount: facts.headcount,
        exceptional: facts.exceptional,
    };
    let result = check(Some(&profile.rules()), &action);
    if !result.requires_approval {
        return Ok(false);
    }
    let next = task.status().next(TaskEvent::AwaitApproval)?;
    let mut checked = serde_json::to_value(&result).unwrap_or_default();
    checked["exceptional"] = json!(action.exceptional);
    let decision = store::insert_decision(
        conn,
        NewDecision {
            id: Uuid::new_v4(),
            workspace_id: task.workspace_id,
            requester: actor,
            requester_agent_id: None,
            mission_id: Some(task.run_id),
            task_id: Some(task.id),
            category: &result.category,
            description: &format!(
                "Dispatch task '{}' ({}): {}",
                task.task_key, task.title, result.reason
            ),
            impact_analysis: &json!({ "financial": format!("estimated cost {}", coordinator_core::numbers::human(task.estimated_cost)) }),
            options: &json!([
                {"label": "Approve", "description": "Dispatch the task as planned"},
                {"label": "Reject", "description": "Skip the task and replan around it"},
            ]),
            recommended_option: None,
            estimated_cost: Some(task.estimated_cost),
            headcount: facts
                .headcount
                .map(|h| i32::try_from(h).unwrap_or(i32::MAX)),
            governance_check: &checked,
            topic: DecisionTopic::Governance.as_str(),
        },
    )
    .await?;
    let Some(decision) = decision else {
        // Another claim gated it already (unique open decision per task).
        return Ok(true);
    };
    anyhow::ensure!(
        store::hold_task(conn, task).await?,
        "task {} changed while claimed",
        task.id
    );
    tasks::record(
        conn,
        Change::event(
            task,
            next,
            actor,
            None,
            &events::payloads::TaskAwaitingApproval {
                key: task.task_key.clone(),
                decision_id: decision.id,
                reason: result.reason.clone(),
                relevant_threshold: result.relevant_threshold.clone(),
            },
        ),
    )
    .await?;
    decision_event(conn, &decision, payloads::DecisionRequested, actor).await?;
    Ok(true)
}

/// Re-checks deferred decisions that are due, oldest first: each goes back
/// to `pending` with a fresh check, or is approved when the current profile
/// no longer requires approval. Returns how many were re-checked.
pub async fn recheck_deferred(pool: &PgPool, actor: &str) -> anyhow::Result<usize> {
    let due = store::due_rechecks(pool, 32).await?;
    let mut done = 0;
    for (workspace_id, id, mission_id) in due {
        let mut tx = pool.begin().await?;
        let mut run = match mission_id {
            Some(m) => missions::lock(&mut tx, workspace_id, m).await?,
            None => None,
        };
        let Some(d) = store::lock_due_decision(&mut tx, workspace_id, id).await? else {
            continue;
        };
        let profile = store::profile(&mut tx, workspace_id).await?;
        let mut result = check(profile.map(|p| p.rules()).as_ref(), &stored_action(&d));
        // A blocker waits for a person whatever the profile says.
        result.requires_approval |= d.topic == DecisionTopic::Blocker.as_str();
        if result.requires_approval {
            let next = d.status().recheck()?;
            let mut checked = serde_json::to_value(&result).unwrap_or_default();
            checked["exceptional"] = d
                .governance_check
                .get("exceptional")
                .cloned()
                .unwrap_or(json!(false));
            let row = store::reopen_decision(&mut tx, &d, next.as_str(), &checked)
                .await?
                .ok_or_else(|| anyhow::anyhow!("decision {id} changed while locked"))?;
            decision_event(&mut tx, &row, payloads::DecisionRechecked, actor).await?;
        } else {
            let reason = format!("re-checked: {}", result.reason);
            settle(
                &mut tx,
                run.as_mut(),
                &d,
                Settlement {
                    outcome: Outcome::Approved,
                    rationale: Some(&reason),
                    conditions: json!([]),
                    modifications: json!({}),
                    recheck_at: None,
                    chosen_option: d.recommended_option.clone(),
                },
                actor,
                false,
            )
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        tx.commit().await?;
        done += 1;
    }
    Ok(done)
}
