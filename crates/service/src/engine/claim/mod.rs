//! Claiming, phase A of the tick: lock ready tasks, choose agents, take
//! their slots and create the attempts, in one transaction; the requests
//! are sent afterwards, outside it ([`super::dispatch::send`]).
//!
//! A claim never waits for another replica's claim: queue rows and their
//! missions are locked with `SKIP LOCKED` (missions `FOR NO KEY UPDATE`,
//! which foreign-key checks do not wait for), and the free agents are read
//! without locks. The concurrency cap is enforced at the end, just before
//! the writes, by one guarded increment per agent ([`agents::take_slots`]):
//! a task whose agent has no slot left by then stays queued for the next
//! claim. Agent rows another claim holds are skipped, not waited for
//! ([`agents::lock_unheld`]): their tasks stay queued too, and the claim
//! says it was contended so its dispatcher claims again shortly. Claims on
//! different replicas thus never queue on each other, nor hold missions
//! (which reports need) while waiting.

use std::collections::BTreeMap;

use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

mod request;
mod slots;

use request::dispatch_request;
use slots::take_slots;

use super::{EngineConfig, dispatch::Dispatch};
use crate::{
    assignment::{self, TaskNeeds},
    auth::{attempt_token, hash_token},
    coordination::{contract_net, governance, organisation::OrgSpec},
    domain::{TaskEvent, TaskStatus, budget},
    store::{
        agents, blackboard,
        events::{self, EventPayload, payloads},
        governance as store_governance, organisation as store_organisation,
        tasks::{self, Change},
    },
    worker::protocol::UpstreamOutput,
};

/// What the claim needs of a locked mission.
struct RunInfo {
    goal: String,
    priority: i32,
    budget_limit: Option<f64>,
    budget_spent: f64,
    budget_warned: bool,
}

/// Column arrays of a claim, for the set-based writes.
#[derive(Default)]
struct ClaimRows {
    attempt_ids: Vec<Uuid>,
    workspace_ids: Vec<Uuid>,
    run_ids: Vec<Uuid>,
    task_ids: Vec<Uuid>,
    versions: Vec<i64>,
    attempt_numbers: Vec<i32>,
    agent_ids: Vec<String>,
    worker_urls: Vec<String>,
    token_hashes: Vec<Vec<u8>>,
    purposes: Vec<String>,
    scores: Vec<f64>,
    details: Vec<serde_json::Value>,
    payloads: Vec<serde_json::Value>,
}

impl ClaimRows {
    fn with_capacity(n: usize) -> Self {
        ClaimRows {
            attempt_ids: Vec::with_capacity(n),
            task_ids: Vec::with_capacity(n),
            ..Default::default()
        }
    }
}

/// What a claim locked and read, once per batch: the missions, their
/// claimable tasks in queue order, the free agents, and the coordination
/// facts the per-task hooks need.
struct Locked {
    runs: BTreeMap<Uuid, RunInfo>,
    /// Estimated cost of the attempts each mission has in flight.
    in_flight: BTreeMap<Uuid, f64>,
    tasks: BTreeMap<Uuid, tasks::TaskRow>,
    /// Claimable task ids, in the queue's priority order.
    order: Vec<Uuid>,
    candidates: Vec<agents::Candidate>,
    coordination: Coordination,
}

/// The coordination layer's facts for a batch: governance profiles by
/// workspace, the tasks' governance and allocation facts, and organisation
/// specs by workspace.
struct Coordination {
    profiles: BTreeMap<Uuid, store_governance::ProfileRow>,
    facts: BTreeMap<Uuid, governance::TaskFacts>,
    org: BTreeMap<Uuid, OrgSpec>,
}

/// A task and the candidate (index into `Locked::candidates`) chosen for it.
type Chosen<'a> = (&'a tasks::TaskRow, usize, assignment::Score);

/// What one claim produced.
#[derive(Debug, Default)]
pub struct Claimed {
    /// The attempts created, ready to be sent.
    pub dispatches: Vec<Dispatch>,
    /// Whether tasks were left queued because another claim held or took
    /// their agents' slots at the same moment: claiming again shortly may
    /// take them.
    pub contended: bool,
}

/// Claims up to `cfg.batch_size` ready tasks (see [`claim`]) and returns
/// their dispatches.
pub async fn claim_batch(pool: &PgPool, cfg: &EngineConfig) -> anyhow::Result<Vec<Dispatch>> {
    Ok(claim(pool, cfg).await?.dispatches)
}

/// Claims up to `cfg.batch_size` ready tasks and creates their attempts, in
/// one transaction: lock, choose, take slots, write; then, committed, reads
/// what the requests carry (parents' outputs, blackboards) and builds them.
pub async fn claim(pool: &PgPool, cfg: &EngineConfig) -> anyhow::Result<Claimed> {
    let claimed_at = std::time::Instant::now();
    // One connection for the claim and the reads after its commit.
    let mut conn = pool.acquire().await?;
    let mut tx = cfg.begin_on(&mut conn).await?;
    let Some(mut locked) = lock_ready(&mut tx, cfg).await? else {
        return Ok(Claimed::default());
    };
    let actor = format!("engine:{}", cfg.replica_id);
    let ready: Vec<&tasks::TaskRow> = locked
        .order
        .iter()
        .filter_map(|id| locked.tasks.get(id))
        .collect();
    let (chosen, refused) = choose_agents(
        &mut tx,
        cfg,
        &actor,
        ready,
        &locked.runs,
        &mut locked.in_flight,
        &mut locked.candidates,
        &locked.coordination,
    )
    .await?;
    let slots::Taken {
        kept: chosen,
        dropped,
        contended,
    } = take_slots(&mut tx, chosen, &locked.candidates).await?;
    for task in refused {
        // A mission whose chosen task lost its slot counted that task's
        // estimate as in flight: its refusals are decided again next claim.
        if dropped.contains(&task.run_id) {
            continue;
        }
        if let Some(run) = locked.runs.get(&task.run_id) {
            refuse_over_budget(
                &mut tx,
                task,
                run.budget_limit,
                run.budget_spent,
                run.priority,
                &actor,
            )
            .await?;
        }
    }
    if chosen.is_empty() {
        tx.commit().await?;
        cfg.committed();
        return Ok(Claimed {
            dispatches: Vec::new(),
            contended,
        });
    }
    let (attempt_ids, tokens) =
        write_attempts(&mut tx, cfg, &actor, &chosen, &locked.candidates).await?;
    tx.commit().await?;
    cfg.committed();
    // What the requests carry is read after the commit, so the missions and
    // agents are not held for it: a parent's output no longer changes once
    // it succeeded, and a blackboard snapshot taken now is as current as
    // one taken inside. Should these reads fail, the attempts wait out
    // their lease, as after a crash between commit and send.
    let claimed_ids: Vec<Uuid> = chosen.iter().map(|(t, _, _)| t.id).collect();
    let upstream = upstream_outputs(&mut conn, &claimed_ids).await?;
    let boards = blackboards(&mut conn, &chosen).await?;
    drop(conn);
    let deadline = OffsetDateTime::now_utc() + cfg.lease;
    let dispatches = chosen
        .iter()
        .zip(tokens)
        .zip(attempt_ids)
        .map(|(((task, idx, _), token), attempt_id)| Dispatch {
            claimed_at,
            endpoint_url: locked.candidates[*idx].endpoint_url.clone(),
            request: dispatch_request(
                cfg,
                &locked,
                task,
                &locked.candidates[*idx],
                attempt_id,
                token,
                upstream.get(&task.id).cloned().unwrap_or_default(),
                blackboard::snapshot_for(
                    &boards,
                    task.run_id,
                    blackboard::declared_keys(&task.inputs).as_deref(),
                ),
                deadline,
            ),
        })
        .collect();
    Ok(Claimed {
        dispatches,
        contended,
    })
}

/// Locks the ready part of the queue and its missions (skipping whatever
/// another transaction holds), then the free agents of those workspaces,
/// and reads what the choice needs. `None` when nothing is ready.
async fn lock_ready(tx: &mut PgConnection, cfg: &EngineConfig) -> anyhow::Result<Option<Locked>> {
    // Look a little past the batch so tasks nobody can take right now do not
    // block those behind them.
    let window = (cfg.batch_size * 4) as i64;
    // Queue rows and their missions are locked together and both skipped
    // when locked: a claim never waits for anyone, so a mission busy with a
    // report (or a cancel) is simply left for the next claim, which its
    // commit's NOTIFY triggers.
    let queued = sqlx::query!(
        r#"SELECT q.task_id, q.run_id, r.workspace_id, r.goal, r.priority AS run_priority,
                  r.budget_limit, r.budget_spent, r.budget_warned
           FROM task_queue q
           JOIN orchestration_runs r ON r.id = q.run_id
           WHERE q.ready_at <= now() AND r.status = 'executing'
           ORDER BY q.priority DESC, q.ready_at, q.task_id
           LIMIT $1
           FOR UPDATE OF q SKIP LOCKED
           FOR NO KEY UPDATE OF r SKIP LOCKED"#,
        window
    )
    .fetch_all(&mut *tx)
    .await?;
    if queued.is_empty() {
        return Ok(None);
    }
    let runs: BTreeMap<Uuid, RunInfo> = queued
        .iter()
        .map(|q| {
            (
                q.run_id,
                RunInfo {
                    goal: q.goal.clone(),
                    priority: q.run_priority,
                    budget_limit: q.budget_limit,
                    budget_spent: q.budget_spent,
                    budget_warned: q.budget_warned,
                },
            )
        })
        .collect();
    let run_ids: Vec<Uuid> = runs.keys().copied().collect();
    // Budget admission counts the estimates of attempts already in flight
    // (read after the locks, so it is current).
    let in_flight: BTreeMap<Uuid, f64> = if runs.values().any(|r| r.budget_limit.is_some()) {
        sqlx::query!(
            r#"SELECT run_id, sum(estimated_cost) AS "cost!" FROM orchestration_tasks
               WHERE run_id = ANY($1) AND status = 'running' GROUP BY run_id"#,
            &run_ids
        )
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .map(|r| (r.run_id, r.cost))
        .collect()
    } else {
        BTreeMap::new()
    };
    let task_ids: Vec<Uuid> = queued.iter().map(|q| q.task_id).collect();
    let tasks: BTreeMap<Uuid, tasks::TaskRow> = tasks::get_many(&mut *tx, &task_ids)
        .await?
        .into_iter()
        .map(|t| (t.id, t))
        .collect();
    // Keep the queue's priority order.
    let order: Vec<Uuid> = queued
        .iter()
        .filter_map(|q| tasks.get(&q.task_id))
        .filter(|t| runs.contains_key(&t.run_id))
        .filter(|t| t.status().next(TaskEvent::Claimed).is_ok())
        .map(|t| t.id)
        .collect();
    let mut workspaces: Vec<Uuid> = order
        .iter()
        .filter_map(|id| tasks.get(id))
        .map(|t| t.workspace_id)
        .collect();
    workspaces.sort();
    workspaces.dedup();
    let candidates = agents::free_candidates(&mut *tx, &workspaces, &run_ids).await?;
    // Coordination layer: governance profiles and the tasks' governance and
    // allocation facts, read once per batch for the hooks in the choice.
    let profiles = store_governance::profiles_for(&mut *tx, &workspaces).await?;
    let facts = store_governance::task_facts(&mut *tx, &task_ids).await?;
    // Organisation specs: their norms mark each candidate per task.
    let org = store_organisation::specs_for(&mut *tx, &workspaces).await?;
    Ok(Some(Locked {
        runs,
        in_flight,
        tasks,
        order,
        candidates,
        coordination: Coordination {
            profiles,
            facts,
            org,
        },
    }))
}

/// The pure choice, in queue order, with loads and in-flight spend updated
/// as it goes; the coordination hooks (governance gate, tenders) and
/// contractor hiring write in the claim's transaction. Returns the chosen
/// tasks and those budget admission refused.
#[allow(clippy::too_many_arguments)]
async fn choose_agents<'a>(
    tx: &mut PgConnection,
    cfg: &EngineConfig,
    actor: &str,
    ready: Vec<&'a tasks::TaskRow>,
    runs: &BTreeMap<Uuid, RunInfo>,
    in_flight: &mut BTreeMap<Uuid, f64>,
    candidates: &mut Vec<agents::Candidate>,
    coordination: &Coordination,
) -> anyhow::Result<(Vec<Chosen<'a>>, Vec<&'a tasks::TaskRow>)> {
    let Coordination {
        profiles,
        facts,
        org,
    } = coordination;
    let verifier_skills = vec![cfg.verifier_skill.clone()];
    let mut chosen: Vec<Chosen<'a>> = Vec::new();
    let mut refused: Vec<&tasks::TaskRow> = Vec::new();
    for task in ready {
        if chosen.len() == cfg.batch_size {
            break;
        }
        let Some(run) = runs.get(&task.run_id) else {
            continue;
        };
        // Coordination hooks, before admission and scoring (verification
        // runs are exempt): the governance gate may hold the task for a
        // decision; tender allocation may hold it for proposals, or pin it
        // to the winner once awarded.
        let mut tender_pin: Option<String> = None;
        if !task.verify_pending
            && let Some(f) = facts.get(&task.id)
        {
            if let Some(profile) = profiles.get(&task.workspace_id)
                && governance::gate_task(&mut *tx, profile, f, task, actor).await?
            {
                continue;
            }
            match contract_net::allocate(&mut *tx, f, task, actor).await? {
                contract_net::Allocation::Hold => continue,
                contract_net::Allocation::Pinned(agent) => tender_pin = Some(agent),
                contract_net::Allocation::Score => {}
            }
        }
        // Verification is cheap next to the work; admission judges the work.
        let estimate = if task.verify_pending {
            0.0
        } else {
            task.estimated_cost
        };
        let spend = budget::Spend {
            spent: run.budget_spent,
            in_flight: in_flight.get(&task.run_id).copied().unwrap_or(0.0),
        };
        if !budget::admit(run.budget_limit, spend, estimate) {
            refused.push(task);
            continue;
        }
        let needs = if task.verify_pending {
            TaskNeeds {
                task_type: "verification",
                ..TaskNeeds::of(&verifier_skills, &[])
            }
        } else {
            TaskNeeds {
                required_skills: &task.required_skills,
                required_tools: &task.required_tools,
                task_type: &task.task_type,
                excluded: &task.excluded_agents,
                min_tier: task.min_model_tier,
            }
        };
        let spec = org.get(&task.workspace_id);
        let weights = if run.budget_warned {
            cfg.weights.budget_saver()
        } else {
            cfg.weights
        };
        let pool_idx = candidate_pool(candidates, task, tender_pin.as_deref());
        let mut profiles: Vec<_> = pool_idx
            .iter()
            .map(|i| candidates[*i].profile.clone())
            .collect();
        apply_norms(spec, needs.task_type, &task.task_key, &mut profiles);
        apply_lane_role(&task.inputs, &mut profiles);
        let mut picked = assignment::choose(needs, &profiles, &weights)
            .map(|(pick, score)| (pool_idx[pick], score));
        // Hire only when nobody (roster or this mission's contractors) could
        // do it even when idle, or the roster's best is below the threshold.
        let weak_pick = match picked {
            None => true,
            Some((idx, s)) => {
                candidates[idx].mission_id.is_none() && s.total < cfg.contractor_threshold
            }
        };
        if task.pinned_agent_id.is_none() && tender_pin.is_none() && weak_pick {
            let hire = Hiring {
                cfg,
                actor,
                task,
                needs,
                weights: &weights,
                spec,
            };
            if let Some(hired) = hire_contractor(&mut *tx, hire, candidates).await? {
                picked = Some(hired);
            }
        }
        if let Some((idx, score)) = picked {
            candidates[idx].profile.running += 1;
            *in_flight.entry(task.run_id).or_default() += estimate;
            chosen.push((task, idx, score));
        }
    }
    Ok((chosen, refused))
}

/// The candidates a task may go to: its workspace's roster and its own
/// mission's contractors, narrowed to one agent when the task is pinned
/// (at approval), awarded by tender, or a continuation going back to the
/// agent that asked for it while that agent has a free slot. Verification
/// runs take any of them.
fn candidate_pool(
    candidates: &[agents::Candidate],
    task: &tasks::TaskRow,
    tender_pin: Option<&str>,
) -> Vec<usize> {
    let continuing = task.continue_agent_id.as_deref().filter(|a| {
        candidates
            .iter()
            .any(|c| c.workspace_id == task.workspace_id && c.profile.agent_id == *a)
    });
    (0..candidates.len())
        .filter(|i| candidates[*i].workspace_id == task.workspace_id)
        .filter(|i| candidates[*i].mission_id.is_none_or(|m| m == task.run_id))
        .filter(|i| {
            task.verify_pending
                || tender_pin
                    .or(task.pinned_agent_id.as_deref())
                    .or(continuing)
                    .is_none_or(|pin| pin == candidates[*i].profile.agent_id)
        })
        .collect()
}

/// What hiring a contractor for one task needs to know.
struct Hiring<'a> {
    cfg: &'a EngineConfig,
    actor: &'a str,
    task: &'a tasks::TaskRow,
    needs: TaskNeeds<'a>,
    weights: &'a assignment::ScoreWeights,
    spec: Option<&'a OrgSpec>,
}

/// Hires a contractor for the task when one is configured, the roster falls
/// short and the spec has a role with room: adds it to the candidates and
/// returns its index and score (`None`: no hire this claim).
async fn hire_contractor(
    tx: &mut PgConnection,
    h: Hiring<'_>,
    candidates: &mut Vec<agents::Candidate>,
) -> anyhow::Result<Option<(usize, assignment::Score)>> {
    let (cfg, task, needs) = (h.cfg, h.task, h.needs);
    let Some(url) = &cfg.contractor_url else {
        return Ok(None);
    };
    if !roster_falls_short(&mut *tx, cfg, needs, task, h.weights, h.spec).await? {
        return Ok(None);
    }
    let Some(role) = contractor_role(&mut *tx, h.spec, needs.task_type, task).await? else {
        return Ok(None);
    };
    let hired = agents::hire_contractor(
        &mut *tx,
        agents::Hire {
            workspace_id: task.workspace_id,
            mission_id: task.run_id,
            skills: needs.required_skills,
            tools: needs.required_tools,
            endpoint_url: url,
            max_concurrency: cfg.contractor_concurrency,
            model_tier: task.min_model_tier.max(1),
            role: &role,
        },
    )
    .await?;
    events::append(
        &mut *tx,
        task.workspace_id,
        events::NewEvent::new(
            task.run_id,
            Some(task.id),
            None,
            h.actor,
            &payloads::ContractorHired {
                key: task.task_key.clone(),
                agent_id: hired.profile.agent_id.clone(),
                skills: hired.profile.skills.clone(),
                tools: hired.profile.tools.clone(),
                threshold: cfg.contractor_threshold,
                role: role.clone(),
            },
        ),
    )
    .await?;
    candidates.push(hired);
    let idx = candidates.len() - 1;
    let mut profile = candidates[idx].profile.clone();
    apply_norms(
        h.spec,
        needs.task_type,
        &task.task_key,
        std::slice::from_mut(&mut profile),
    );
    Ok(assignment::score(needs, &profile, h.weights).map(|s| (idx, s)))
}

/// Writes the whole batch in one statement: attempts (each with a fresh
/// token, stored hashed), tasks moved to `running` with a lease (version
/// guarded), queue rows deleted, cards moved, and `task.dispatched` events
/// with each mission's next sequence numbers. Returns the attempt ids and
/// the tokens, in `chosen` order.
async fn write_attempts(
    tx: &mut PgConnection,
    cfg: &EngineConfig,
    actor: &str,
    chosen: &[Chosen<'_>],
    candidates: &[agents::Candidate],
) -> anyhow::Result<(Vec<Uuid>, Vec<String>)> {
    let n = chosen.len();
    let mut rows = ClaimRows::with_capacity(n);
    let mut tokens = Vec::with_capacity(n);
    for (task, idx, score) in chosen {
        let agent = &candidates[*idx];
        let attempt_id = Uuid::now_v7();
        let token = attempt_token(attempt_id);
        let purpose = if task.verify_pending {
            "verify"
        } else {
            "work"
        };
        rows.attempt_ids.push(attempt_id);
        rows.workspace_ids.push(task.workspace_id);
        rows.run_ids.push(task.run_id);
        rows.task_ids.push(task.id);
        rows.versions.push(task.version);
        rows.attempt_numbers.push(task.attempt_count + 1);
        rows.agent_ids.push(agent.profile.agent_id.clone());
        rows.worker_urls.push(agent.endpoint_url.clone());
        rows.token_hashes.push(hash_token(&token));
        rows.purposes.push(purpose.to_owned());
        rows.scores.push(score.total);
        rows.details
            .push(serde_json::to_value(score).unwrap_or_default());
        rows.payloads.push(
            payloads::TaskDispatched {
                key: task.task_key.clone(),
                agent_id: agent.profile.agent_id.clone(),
                attempt: task.attempt_count + 1,
                score: serde_json::to_value(score).unwrap_or_default(),
                purpose: purpose.to_owned(),
                status: TaskStatus::Running,
            }
            .to_event()
            .1,
        );
        tokens.push(token);
    }
    // One statement writes the whole batch: attempts, tasks (version
    // guarded), queue rows, cards, and events with each mission's next
    // sequence numbers.
    let updated = sqlx::query_scalar!(
        r#"WITH input AS (
               SELECT * FROM UNNEST($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::int[],
                                    $6::text[], $7::text[], $8::bytea[], $9::text[], $10::bigint[],
                                    $11::float8[], $12::jsonb[], $13::jsonb[])
                   WITH ORDINALITY
                   AS u(attempt_id, workspace_id, run_id, task_id, attempt_number, agent_id,
                        worker_url, token_hash, purpose, version, score, details, payload, ord)
           ),
           attempts AS (
               INSERT INTO task_attempts (id, workspace_id, run_id, task_id, attempt_number, agent_id,
                                          worker_url, token_hash, status, dispatched_by, purpose)
               SELECT attempt_id, workspace_id, run_id, task_id, attempt_number, agent_id,
                      worker_url, token_hash, 'dispatching', $14, purpose
               FROM input
           ),
           tasks AS (
               UPDATE orchestration_tasks t
               SET status = 'running', assigned_agent_id = i.agent_id, assignment_score = i.score,
                   assignment_details = i.details, attempt_count = t.attempt_count + 1,
                   current_attempt_id = i.attempt_id, lease_owner = $14,
                   lease_expires_at = now() + make_interval(secs => $15), next_attempt_at = NULL,
                   continue_agent_id = NULL, progress_checked_at = NULL,
                   started_at = COALESCE(t.started_at, now()), version = t.version + 1, updated_at = now()
               FROM input i
               WHERE t.id = i.task_id AND t.version = i.version
               RETURNING t.id, t.assigned_agent_id, t.attempt_count, t.actual_cost
           ),
           dequeued AS (
               DELETE FROM task_queue WHERE task_id IN (SELECT task_id FROM input)
           ),
           cards AS (
               UPDATE board_tasks b SET column_name = $16, assignee = t.assigned_agent_id,
                      attempt_number = t.attempt_count, cost = t.actual_cost,
                      version = b.version + 1, updated_at = now()
               FROM tasks t
               WHERE b.source_type = 'orchestration' AND b.source_id = t.id
           ),
           counts AS (SELECT run_id, count(*) AS n FROM input GROUP BY run_id),
           bumped AS (
               UPDATE orchestration_runs r SET event_seq = r.event_seq + c.n
               FROM counts c WHERE r.id = c.run_id
               RETURNING r.id, r.event_seq - c.n AS base
           ),
           events AS (
               INSERT INTO orchestration_events (workspace_id, run_id, seq, task_id, attempt_id, kind, actor, payload)
               SELECT i.workspace_id, i.run_id,
                      b.base + row_number() OVER (PARTITION BY i.run_id ORDER BY i.ord),
                      i.task_id, i.attempt_id, $17, $18, i.payload
               FROM input i JOIN bumped b ON b.id = i.run_id
           )
           SELECT count(*) AS "n!" FROM tasks"#,
        &rows.attempt_ids,
        &rows.workspace_ids,
        &rows.run_ids,
        &rows.task_ids,
        &rows.attempt_numbers,
        &rows.agent_ids,
        &rows.worker_urls,
        &rows.token_hashes,
        &rows.purposes,
        &rows.versions,
        &rows.scores,
        &rows.details,
        &rows.payloads,
        cfg.replica_id,
        cfg.lease.as_secs_f64(),
        TaskStatus::Running.board_column().as_str(),
        <payloads::TaskDispatched as EventPayload>::KIND.as_str(),
        actor
    )
    .fetch_one(&mut *tx)
    .await?;
    // Cannot happen under the mission locks; if it does, nothing commits.
    anyhow::ensure!(updated == n as i64, "tasks changed while claimed");
    Ok((rows.attempt_ids, tokens))
}

/// True if no online roster agent could take the task even when idle, or the
/// best one would score below the contractor threshold.
async fn roster_falls_short(
    conn: &mut sqlx::PgConnection,
    cfg: &EngineConfig,
    needs: TaskNeeds<'_>,
    task: &tasks::TaskRow,
    weights: &assignment::ScoreWeights,
    spec: Option<&OrgSpec>,
) -> anyhow::Result<bool> {
    let (contractors, roster): (Vec<_>, Vec<_>) =
        agents::roster_profiles(conn, task.workspace_id, task.run_id)
            .await?
            .into_iter()
            .partition(|(_, contractor)| *contractor);
    // A contractor of this mission that can do it (busy now) will be free soon.
    let mut contractors: Vec<_> = contractors.into_iter().map(|(p, _)| p).collect();
    apply_norms(spec, needs.task_type, &task.task_key, &mut contractors);
    if assignment::choose(needs, &contractors, weights).is_some() {
        return Ok(false);
    }
    let mut roster: Vec<_> = roster.into_iter().map(|(p, _)| p).collect();
    apply_norms(spec, needs.task_type, &task.task_key, &mut roster);
    Ok(match assignment::choose(needs, &roster, weights) {
        None => true,
        Some((_, best)) => best.total < cfg.contractor_threshold,
    })
}

/// Marks each profile with what the organisation spec says of its role for
/// this task (unconstrained without a spec).
fn apply_norms(
    spec: Option<&OrgSpec>,
    task_type: &str,
    task_key: &str,
    profiles: &mut [assignment::AgentProfile],
) {
    if let Some(spec) = spec {
        for p in profiles {
            p.deontic = spec.verdict(&p.role, task_type, task_key);
        }
    }
}

/// A workflow task's lane names an organisation role (`inputs.workflow.role`,
/// see `docs/workflows.md`): agents playing it are obliged, so one of them
/// takes the task whenever one can, and another agent only when none can.
/// The organisation spec's prohibitions still hold.
fn apply_lane_role(inputs: &serde_json::Value, profiles: &mut [assignment::AgentProfile]) {
    let Some(role) = inputs.pointer("/workflow/role").and_then(|r| r.as_str()) else {
        return;
    };
    for p in profiles {
        if p.role.eq_ignore_ascii_case(role)
            && p.deontic != coordinator_core::organisation::Deontic::Prohibited
        {
            p.deontic = coordinator_core::organisation::Deontic::Obliged;
        }
    }
}

/// The role a contractor for this task is hired into: `contractor` without
/// a spec; with one, a role the spec allows that is below its maximum,
/// counted under the workspace's role lock. `None` (no hire this claim) when
/// no role has room or another transaction is adding an agent right now.
async fn contractor_role(
    conn: &mut sqlx::PgConnection,
    spec: Option<&OrgSpec>,
    task_type: &str,
    task: &tasks::TaskRow,
) -> anyhow::Result<Option<String>> {
    let Some(spec) = spec else {
        return Ok(Some("contractor".to_owned()));
    };
    if !store_organisation::try_lock_roles(conn, task.workspace_id).await? {
        return Ok(None);
    }
    let live = store_organisation::live_roles(conn, task.workspace_id).await?;
    Ok(spec.contractor_role(task_type, &task.task_key, &live))
}

/// Admission refused a task: an optional one is skipped, a required one
/// waits for a person (who may complete, skip or fail it).
async fn refuse_over_budget(
    conn: &mut sqlx::PgConnection,
    task: &tasks::TaskRow,
    limit: Option<f64>,
    spent: f64,
    priority: i32,
    actor: &str,
) -> anyhow::Result<()> {
    let (event, to) = if task.optional {
        (TaskEvent::Skip, "skipped")
    } else {
        (TaskEvent::EscalateToHuman, "awaiting_human")
    };
    let next = task.status().next(event)?;
    use coordinator_core::numbers::human;
    let reason = format!(
        "starting it (estimated {}) would exceed the budget ({} of {} spent or committed)",
        human(task.estimated_cost),
        human(spent),
        human(limit.unwrap_or(0.0))
    );
    let updated = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = $3, last_error = $4,
             escalation_step = CASE WHEN $3 = 'awaiting_human' THEN 'human' ELSE escalation_step END,
             finished_at = CASE WHEN $3 = 'skipped' THEN now() ELSE finished_at END,
             version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $2",
        task.id,
        task.version,
        to,
        reason
    )
    .execute(&mut *conn)
    .await?;
    anyhow::ensure!(
        updated.rows_affected() == 1,
        "task {} changed while claimed",
        task.id
    );
    sqlx::query!("DELETE FROM task_queue WHERE task_id = $1", task.id)
        .execute(&mut *conn)
        .await?;
    tasks::record(
        conn,
        Change::event(
            task,
            next,
            actor,
            None,
            &payloads::TaskBudgetRefused {
                key: task.task_key.clone(),
                estimated_cost: task.estimated_cost,
                limit,
                spent,
                then: to.to_owned(),
                reason: reason.to_owned(),
            },
        ),
    )
    .await?;
    if next == TaskStatus::Skipped {
        tasks::promote_ready(
            conn,
            task.workspace_id,
            task.run_id,
            Some(task.id),
            priority,
            actor,
        )
        .await?;
    }
    Ok(())
}

/// The blackboard rows the batch's dispatches carry, in one round trip.
async fn blackboards(
    conn: &mut sqlx::PgConnection,
    chosen: &[Chosen<'_>],
) -> sqlx::Result<Vec<blackboard::SnapshotRow>> {
    let mut runs: Vec<Uuid> = chosen.iter().map(|(t, _, _)| t.run_id).collect();
    runs.sort_unstable();
    runs.dedup();
    let declared: Vec<String> = chosen
        .iter()
        .filter_map(|(t, _, _)| blackboard::declared_keys(&t.inputs))
        .flatten()
        .collect();
    let recent = coordinator_protocol::BLACKBOARD_SNAPSHOT_KEYS as i64;
    blackboard::snapshots(conn, &runs, &declared, recent).await
}

async fn upstream_outputs(
    conn: &mut sqlx::PgConnection,
    task_ids: &[Uuid],
) -> sqlx::Result<BTreeMap<Uuid, Vec<UpstreamOutput>>> {
    let rows = sqlx::query!(
        "SELECT d.task_id, p.id, p.task_key, p.title, p.output
         FROM orchestration_task_dependencies d
         JOIN orchestration_tasks p ON p.id = d.depends_on_task_id
         WHERE d.task_id = ANY($1)
         ORDER BY d.task_id, p.task_order",
        task_ids
    )
    .fetch_all(conn)
    .await?;
    let mut map: BTreeMap<Uuid, Vec<UpstreamOutput>> = BTreeMap::new();
    for r in rows {
        map.entry(r.task_id).or_default().push(UpstreamOutput {
            task_id: r.id,
            key: r.task_key,
            title: r.title,
            output: r.output,
        });
    }
    Ok(map)
}
