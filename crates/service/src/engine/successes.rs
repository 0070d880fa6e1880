//! The common case of a report batch, applied set-wise: attempts that
//! succeeded and end their tasks. The whole batch is read with three
//! statements (its missions locked in id order, its attempts, its tasks),
//! each report is decided by the same pure rules as alone
//! ([`reports::judge`], [`decide_report`]), and the successes are written
//! by a handful of statements for the whole batch
//! ([`transitions::succeed_many`], [`transitions::promote_after_many`]).
//!
//! A mission takes this path only when every report of it in the batch is
//! such a success; the others (failures, verifications, continuations,
//! refusals, duplicates, a budget warning to raise) are left to the
//! per-report path ([`reports::apply_in`]) in the same transaction, so the
//! two paths never touch the same mission.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use super::{
    EngineConfig,
    reports::{self, Done, Next, Origin, Release, ReportError},
};
use crate::{
    auth::hash_token,
    domain::{ReportDecision, TaskStatus, budget, decide_report},
    missions::finish::finish_mission_if_done,
    store::{
        attempts,
        events::{EventPayload, payloads},
        missions::{self, MissionRow},
        tasks,
        transitions::{self, Promotion, Success},
    },
    worker::protocol::WorkerReport,
};

/// One report of a batch, as the set-wise pass sees it.
pub(super) struct Incoming<'a> {
    /// The attempt reported on.
    pub(super) attempt_id: Uuid,
    /// The report.
    pub(super) report: &'a WorkerReport,
    /// Where it came from.
    pub(super) origin: Origin<'a>,
    /// The submitter's span (the report's span is its child).
    pub(super) span: &'a tracing::Span,
}

/// A success decided under the locks, waiting for its mission's verdict.
struct Candidate {
    index: usize,
    run_id: Uuid,
    success: Success,
    release: Release,
    tokens: i64,
    attempt_number: i32,
}

/// Applies the batch's successes (see the module docs) inside `tx` and
/// returns, per item, its [`Done`], or `None` for the items left to the
/// per-report path. An error may have written something: the caller rolls
/// the batch back.
pub(super) async fn apply(
    tx: &mut PgConnection,
    cfg: &EngineConfig,
    items: &[Incoming<'_>],
) -> Result<Vec<Option<Done>>, ReportError> {
    let mut out: Vec<Option<Done>> = (0..items.len()).map(|_| None).collect();
    let ids: Vec<Uuid> = items.iter().map(|i| i.attempt_id).collect();
    let runs: HashMap<Uuid, MissionRow> = missions::lock_for_attempts(&mut *tx, &ids)
        .await?
        .into_iter()
        .map(|r| (r.id, r))
        .collect();
    let found = attempts::get_for_reports(&mut *tx, &ids, &cfg.verifier_skill).await?;
    let task_ids: Vec<Uuid> = found.iter().map(|(a, _)| a.task_id).collect();
    let tasks: HashMap<Uuid, tasks::TaskRow> = tasks::get_many(&mut *tx, &task_ids)
        .await?
        .into_iter()
        .map(|t| (t.id, t))
        .collect();
    let found: HashMap<Uuid, (attempts::AttemptRow, bool)> =
        found.into_iter().map(|(a, v)| (a.id, (a, v))).collect();

    let mut seen = HashSet::new();
    let mut slow_runs = HashSet::new();
    let mut candidates = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let first = seen.insert(item.attempt_id);
        let Some((attempt, verifier)) = found.get(&item.attempt_id) else {
            continue;
        };
        let candidate = tasks.get(&attempt.task_id).and_then(|task| {
            // A second report of the same attempt is decided after the first.
            let decided = first
                .then(|| decide(cfg, item, attempt, *verifier, task))
                .flatten();
            decided.map(|(output, verification)| (task, output, verification))
        });
        let Some((task, output, verification)) = candidate else {
            slow_runs.insert(attempt.run_id);
            continue;
        };
        let cost = if item.report.cost.is_finite() {
            item.report.cost.max(0.0)
        } else {
            0.0
        };
        let verifying = attempt.purpose == "verify";
        let payload = payloads::TaskSucceeded {
            key: task.task_key.clone(),
            attempt: task.attempt_count,
            cost,
            tokens: item.report.tokens,
            verification,
        };
        let (_, mut payload) = payload.to_event();
        if let Value::Object(m) = &mut payload {
            m.insert("status".into(), TaskStatus::Succeeded.as_str().into());
        }
        candidates.push(Candidate {
            index,
            run_id: attempt.run_id,
            success: Success {
                attempt_id: attempt.id,
                task_id: task.id,
                task_version: task.version,
                output,
                report: serde_json::to_value(item.report).unwrap_or_default(),
                cost,
                tokens: item.report.tokens.max(0),
                payload,
                actor: format!("agent:{}", attempt.agent_id),
            },
            release: Release {
                workspace_id: attempt.workspace_id,
                agent_id: attempt.agent_id.clone(),
                task_type: task.task_type.clone(),
                // Past success counts work attempts only, not verifiers' verdicts.
                outcome: (!verifying).then_some(true),
                reach: attempts::Reach::Answered,
                error: item.report.error.clone(),
            },
            tokens: item.report.tokens,
            attempt_number: attempt.attempt_number,
        });
    }
    slow_runs.extend(warned_runs(&runs, &candidates));
    candidates.retain(|c| !slow_runs.contains(&c.run_id) && runs.contains_key(&c.run_id));
    if candidates.is_empty() {
        return Ok(out);
    }

    let successes: Vec<Success> = candidates.iter().map(|c| c.success.clone()).collect();
    let (ended, moved) = transitions::succeed_many(&mut *tx, &successes).await?;
    if ended != moved || moved != successes.len() as i64 {
        return Err(ReportError::Race("batched successes"));
    }
    // Each mission's last success names the actor of its promotions.
    let mut promotions: BTreeMap<Uuid, Promotion> = BTreeMap::new();
    for c in &candidates {
        let run = &runs[&c.run_id];
        promotions.insert(
            run.id,
            Promotion {
                run_id: run.id,
                workspace_id: run.workspace_id,
                priority: run.priority,
                actor: c.success.actor.clone(),
            },
        );
    }
    let promotions: Vec<Promotion> = promotions.into_values().collect();
    let done_tasks: Vec<Uuid> = successes.iter().map(|s| s.task_id).collect();
    transitions::promote_after_many(&mut *tx, &promotions, &done_tasks).await?;
    let run_ids: Vec<Uuid> = promotions.iter().map(|p| p.run_id).collect();
    let counts = transitions::open_and_failed_many(&mut *tx, &run_ids).await?;
    let mut cancelled: HashMap<Uuid, Vec<attempts::Cancelled>> = HashMap::new();
    for p in &promotions {
        let (open, failed) = counts.get(&p.run_id).copied().unwrap_or((0, 0));
        if open == 0 || failed > 0 {
            let mut run = runs[&p.run_id].clone();
            let live = finish_mission_if_done(&mut *tx, &mut run, &p.actor).await?;
            cancelled.insert(p.run_id, live);
        }
    }
    for c in candidates {
        record_span(&items[c.index], &c);
        let live = cancelled.remove(&c.run_id).unwrap_or_default();
        out[c.index] = Some(Done::succeeded(c.release, c.tokens, c.success.cost, live));
    }
    Ok(out)
}

/// The output and verification record of a report that ends its task
/// succeeded, decided as the per-report path would; `None` for any other
/// report (left to that path).
fn decide(
    cfg: &EngineConfig,
    item: &Incoming<'_>,
    attempt: &attempts::AttemptRow,
    verifier: bool,
    task: &tasks::TaskRow,
) -> Option<(Option<Value>, Value)> {
    match item.origin {
        Origin::Worker { token } if hash_token(token) == attempt.token_hash => {}
        Origin::Inline => {}
        _ => return None,
    }
    let is_current =
        task.current_attempt_id == Some(attempt.id) && task.status() == TaskStatus::Running;
    let report_json = serde_json::to_value(item.report).ok()?;
    let decision = decide_report(
        attempt.status(),
        is_current,
        attempt.report.as_ref(),
        &report_json,
    );
    if decision != ReportDecision::Apply {
        return None;
    }
    let verifying = attempt.purpose == "verify";
    match reports::judge(task, verifying, verifier, item.report, item.origin, cfg) {
        Next::Succeed {
            output,
            verification,
        } => Some((output, verification)),
        _ => None,
    }
}

/// Missions whose spend this batch would carry past the warning line:
/// the per-report path raises the warning, so they take it.
fn warned_runs(runs: &HashMap<Uuid, MissionRow>, candidates: &[Candidate]) -> Vec<Uuid> {
    let mut cost: HashMap<Uuid, f64> = HashMap::new();
    for c in candidates {
        *cost.entry(c.run_id).or_default() += c.success.cost;
    }
    cost.into_iter()
        .filter(|(id, added)| {
            runs.get(id).is_some_and(|r| {
                !r.budget_warned
                    && budget::crosses_warning(
                        r.budget_limit,
                        r.budget_spent,
                        r.budget_spent + added,
                    )
            })
        })
        .map(|(id, _)| id)
        .collect()
}

/// A `report.apply` span for a report applied set-wise, under its
/// submitter's span, as the per-report path records one.
fn record_span(item: &Incoming<'_>, c: &Candidate) {
    let _span = tracing::info_span!(
        parent: item.span,
        "report.apply",
        attempt_id = %item.attempt_id,
        origin = item.origin.label(),
        reported = ?item.report.status,
        mission_id = %c.run_id,
        task_id = %c.success.task_id,
        attempt = c.attempt_number,
        agent_id = c.release.agent_id.as_str(),
        batched = true,
    );
}
