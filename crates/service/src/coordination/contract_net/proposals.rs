//! Proposals to a tender: checking them, submitting them (through the API
//! or from a worker's answer to a call for proposals), and asking the
//! workers of newly opened tenders for theirs.

use super::*;

/// A condition a proposal attaches.
pub const CONDITION: coordinator_core::text::Text = coordinator_core::text::Text::required(500);
/// Most conditions on one proposal.
pub const MAX_CONDITIONS: usize = 20;

fn check_proposal(p: &ProposalBody) -> Result<(), Invalid> {
    let unit = |field: &str, v: f64| {
        if !(0.0..=1.0).contains(&v) {
            return Err(Invalid::new(
                field,
                format!("{field} must be between 0 and 1"),
            ));
        }
        Ok(())
    };
    let amount = |field: &str, v: f64| {
        if !v.is_finite() || v < 0.0 {
            return Err(Invalid::new(
                field,
                format!("{field} must be a non-negative number"),
            ));
        }
        Ok(())
    };
    if let Some(c) = p.capability_match {
        unit("capability_match", c)?;
    }
    unit("confidence", p.confidence)?;
    amount("estimated_effort", p.estimated_effort)?;
    amount("estimated_cost", p.estimated_cost)?;
    if p.conditions.len() > MAX_CONDITIONS {
        return Err(Invalid::new(
            "conditions",
            format!("at most {MAX_CONDITIONS} conditions"),
        ));
    }
    CONDITION.check_each("conditions", &p.conditions)?;
    for (field, list) in [
        ("matched_skills", &p.matched_skills),
        ("additional_skills", &p.additional_skills),
    ] {
        if list.len() > 100 || list.iter().any(|s| s.trim().is_empty() || s.len() > 64) {
            return Err(Invalid::new(
                field,
                format!("{field}: at most 100 names of 1–64 characters"),
            ));
        }
    }
    Ok(())
}

/// Submits a proposal through the API: an agent token proposes as itself;
/// admin, operator and worker tokens name the agent.
pub async fn propose(
    pool: &PgPool,
    who: &Principal,
    tender_id: Uuid,
    body: ProposalBody,
) -> Result<ProposalView, TenderError> {
    require(
        who,
        &[Role::Admin, Role::Operator, Role::Worker, Role::Agent],
    )?;
    let agent_id = match (&who.agent_id, &body.agent_id) {
        (Some(me), Some(named)) if me != named => {
            return Err(TenderError::NotYours);
        }
        (Some(me), _) => me.clone(),
        (None, Some(named)) => named.clone(),
        (None, None) => {
            // Required of every caller but an agent (who proposes for itself).
            return Err(Invalid::unprocessable(
                "agent_required",
                "agent_id",
                "agent_id is required unless the token is an agent's",
            )
            .into());
        }
    };
    submit(
        pool,
        who.workspace_id,
        tender_id,
        &agent_id,
        body,
        "api",
        &who.actor(),
    )
    .await
}

/// Records a proposal: refused when the tender is closed or its deadline
/// passed (409 `tender_closed`), or the agent was not asked (422
/// `not_eligible`). The same proposal twice is one proposal. When every
/// eligible agent has answered, the award is due at once.
pub async fn submit(
    pool: &PgPool,
    workspace_id: Uuid,
    tender_id: Uuid,
    agent_id: &str,
    body: ProposalBody,
    via: &str,
    actor: &str,
) -> Result<ProposalView, TenderError> {
    check_proposal(&body)?;
    let mut tx = pool.begin().await?;
    // Lock order: the mission, its agents, then the tender — as a claim takes
    // them. The proposal's event bumps the mission's sequence (a mission row
    // lock), so taking the mission last would deadlock with a claim holding
    // the mission and waiting for this agent, and lose the proposal.
    let peek = store::get_tender(&mut tx, workspace_id, tender_id)
        .await?
        .ok_or_else(|| no_tender(tender_id))?;
    missions::lock(&mut tx, workspace_id, peek.mission_id).await?;
    let skills = store::lock_agent_skills(&mut tx, workspace_id, agent_id).await?;
    let t = store::lock_tender(&mut tx, workspace_id, tender_id)
        .await?
        .ok_or_else(|| no_tender(tender_id))?;
    if let Some(existing) = store::proposal_of(&mut tx, workspace_id, tender_id, agent_id).await? {
        let same = existing.estimated_effort == body.estimated_effort
            && existing.estimated_cost == body.estimated_cost
            && existing.confidence == body.confidence
            && existing.conditions == body.conditions;
        return if same {
            Ok(existing.view())
        } else {
            Err(TenderError::ProposalExists {
                agent_id: agent_id.to_owned(),
                proposal_id: existing.id,
            })
        };
    }
    if t.status != TenderStatus::Open.as_str() || t.past_deadline {
        let deadline = t
            .deadline
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        return Err(TenderError::Closed {
            tender_id,
            status: t.status,
            deadline,
        });
    }
    if !t.eligible_agents.iter().any(|a| a == agent_id) {
        return Err(TenderError::NotEligible {
            agent_id: agent_id.to_owned(),
            eligible_agents: t.eligible_agents,
        });
    }
    let skills = skills.unwrap_or_default();
    let coverage = skill_coverage(&t.required_skills, &skills);
    let capability = body.capability_match.unwrap_or(coverage).min(coverage);
    let row = store::insert_proposal(
        &mut tx,
        NewProposal {
            id: Uuid::new_v4(),
            tender_id,
            workspace_id,
            agent_id,
            capability_match: capability,
            matched_skills: &body.matched_skills,
            additional_skills: &body.additional_skills,
            estimated_effort: body.estimated_effort,
            estimated_cost: body.estimated_cost,
            confidence: body.confidence,
            conditions: &body.conditions,
            via,
            submitted_by: actor,
        },
    )
    .await?;
    events::record(
        &mut tx,
        workspace_id,
        WorkspaceEvent::new(
            Some(t.mission_id),
            Some(t.task_id),
            actor,
            &events::payloads::TenderProposalReceived {
                tender_id: t.id,
                proposal_id: row.id,
                agent_id: agent_id.to_owned(),
                via: via.to_owned(),
            },
        ),
    )
    .await?;
    let answered = store::proposals(&mut tx, workspace_id, tender_id)
        .await?
        .len();
    if answered >= t.eligible_agents.len() {
        // Everyone answered: the award need not wait for the deadline.
        store::wake_queue_entry(&mut tx, t.task_id).await?;
        missions::notify_wake(&mut tx).await?;
    }
    tx.commit().await?;
    Ok(row.view())
}

/// Asks the workers of newly opened tenders' eligible agents for proposals
/// (`POST {endpoint}/v1/cfp`), in the background: each tender is claimed once
/// (`solicited_at`), answers become proposals `via: endpoint`, and a worker
/// that does not speak the CFP protocol is simply not heard from (its agent
/// can still propose through the API). Returns tenders solicited.
pub async fn solicit(
    pool: &PgPool,
    http: &crate::egress::Client,
    timeout: std::time::Duration,
) -> anyhow::Result<usize> {
    let due = store::claim_unsolicited(pool, 16).await?;
    let n = due.len();
    for s in due {
        let criteria = criteria();
        for (agent_id, endpoint) in s.endpoints {
            let (pool, http) = (pool.clone(), http.clone());
            let cfp = CallForProposals {
                tender_id: s.tender_id,
                agent_id: agent_id.clone(),
                mission_id: s.mission_id,
                task_id: s.task_id,
                task: s.task.clone(),
                deadline: s.deadline,
                criteria: criteria.clone(),
            };
            let workspace_id = s.workspace_id;
            tokio::spawn(async move {
                let url = format!("{}/v1/cfp", endpoint.trim_end_matches('/'));
                let answer = http.post(&url).timeout(timeout).json(&cfp).send().await;
                let body = match answer {
                    Ok(r) if r.status() == reqwest::StatusCode::OK => {
                        r.json::<ProposalBody>().await
                    }
                    Ok(r) => {
                        tracing::debug!(%url, status = %r.status(), "no proposal from the worker");
                        return;
                    }
                    Err(e) => {
                        tracing::debug!(%url, error = %e, "CFP to the worker failed");
                        return;
                    }
                };
                let body = match body {
                    Ok(b) => b,
                    Err(e) => {
                        tracing::debug!(%url, error = %e, "the worker's proposal is not valid JSON");
                        return;
                    }
                };
                if body.agent_id.as_ref().is_some_and(|a| a != &agent_id) {
                    tracing::debug!(%url, "the worker proposed for another agent; ignored");
                    return;
                }
                let actor = format!("agent:{agent_id}");
                // A database hiccup (a deadlock victim, a lost connection) must
                // not lose the worker's answer: retry those, not refusals.
                for attempt in 1..=3 {
                    match submit(
                        &pool,
                        workspace_id,
                        cfp.tender_id,
                        &agent_id,
                        body.clone(),
                        "endpoint",
                        &actor,
                    )
                    .await
                    {
                        Ok(_) => break,
                        Err(e) if attempt < 3 && e.is_transient() => {
                            tracing::warn!(%url, error = %e, attempt, "recording the worker's proposal failed; retrying");
                        }
                        Err(e) => {
                            tracing::warn!(%url, error = %e, "the worker's proposal was refused");
                            break;
                        }
                    }
                }
            });
        }
    }
    Ok(n)
}
