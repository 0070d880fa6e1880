//! Applying what happened to an attempt: a worker's report (callback or
//! inline answer), a failed dispatch, or an expired lease. One function, so
//! every path obeys the same rules: stale reports are refused, duplicates
//! have one effect, and the task, its event, its card, the agent's slot, the
//! mission's spend, promotions and mission completion all change in one
//! transaction under the mission's lock (shared with other reports that
//! arrived together: [`super::report_batch`]); the agent's slot is released
//! last, since the agent's row is the hottest one.

use std::time::Duration;

use serde_json::json;
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use serde_json::Value;

pub use super::task_outcome::ReportError;
use super::{
    EngineConfig, escalation,
    task_outcome::{Retry, RetryKind, retry},
};
use crate::{
    auth::hash_token,
    domain::{
        AttemptStatus, FailureKind, ReportDecision, ReportStatus, TaskEvent, TaskStatus,
        attempt::retry_delay, budget, decide_report,
    },
    missions::finish::{FinishError, finish_mission_if_done},
    store::{
        attempts,
        events::{self, WorkspaceEvent},
        missions::{self, MissionRow},
        tasks::{self, Change},
    },
    verification,
    worker::protocol::WorkerReport,
};
use coordinator_protocol::agent_events::AgentUnreachable;

/// Where a report comes from.
#[derive(Debug, Clone, Copy)]
pub enum Origin<'a> {
    /// A worker's callback, authenticated by the attempt's token.
    Worker {
        /// The bearer token presented.
        token: &'a str,
    },
    /// The worker answered the dispatch request with the result at once.
    Inline,
    /// The worker answered the dispatch request with something that is
    /// neither an acceptance nor a result.
    DispatchFailed,
    /// The dispatch request never reached the worker (connection refused,
    /// no answer in time, an address the egress policy refuses).
    Unreachable,
    /// Reconcile found the attempt's lease expired.
    LeaseExpired,
    /// Reconcile found the attempt's agent offline (it stopped heartbeating).
    AgentOffline,
    /// The worker answered the dispatch 429/503: requeue after `retry_after`,
    /// counting no failure.
    Busy {
        /// How long the worker asked us to wait.
        retry_after: Duration,
    },
}

impl Origin<'_> {
    /// A name for traces and logs (never the token).
    pub fn label(&self) -> &'static str {
        match self {
            Origin::Worker { .. } => "callback",
            Origin::Inline => "inline",
            Origin::DispatchFailed => "dispatch_failed",
            Origin::Unreachable => "unreachable",
            Origin::LeaseExpired => "lease_expired",
            Origin::AgentOffline => "agent_offline",
            Origin::Busy { .. } => "busy",
        }
    }
}

/// What applying a report did.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    /// The report changed the task to this status.
    Applied(TaskStatus),
    /// The same report was applied before; nothing changed.
    Duplicate,
}

/// Applies a report to an attempt (see the module docs): through the
/// replica's group commit ([`super::report_batch`]) when it has one, else
/// in a transaction of its own.
pub async fn apply_report(
    pool: &PgPool,
    cfg: &EngineConfig,
    attempt_id: Uuid,
    report: &WorkerReport,
    origin: Origin<'_>,
) -> Result<Applied, ReportError> {
    match &cfg.reports {
        Some(queue) => queue.submit(attempt_id, report, origin).await,
        None => apply_alone(pool, cfg, attempt_id, report, origin).await,
    }
}

/// Applies one report in a transaction of its own.
pub(super) async fn apply_alone(
    pool: &PgPool,
    cfg: &EngineConfig,
    attempt_id: Uuid,
    report: &WorkerReport,
    origin: Origin<'_>,
) -> Result<Applied, ReportError> {
    let mut tx = cfg.begin(pool).await?;
    let mut done = apply_in(&mut tx, cfg, attempt_id, report, origin).await?;
    release_agents(&mut tx, cfg, done.release.take().into_iter().collect()).await?;
    tx.commit().await?;
    cfg.committed();
    Ok(done.committed(cfg))
}

/// A report applied inside a transaction that has not committed yet.
pub(super) struct Done {
    applied: Applied,
    /// The agent's side, written last ([`release_agents`]).
    pub(super) release: Option<Release>,
    /// For the metrics, after the commit: tokens, cost, failure kind.
    figures: (i64, f64, Option<FailureKind>),
    /// Live attempts the mission's end cancelled, whose workers are told
    /// after the commit.
    cancelled: Vec<attempts::Cancelled>,
}

impl Done {
    /// What the caller answers once the transaction committed: records the
    /// metrics and tells the workers of cancelled attempts.
    pub(super) fn committed(self, cfg: &EngineConfig) -> Applied {
        if let Applied::Applied(status) = &self.applied {
            let (tokens, cost, kind) = self.figures;
            cfg.metrics.report_applied(tokens, cost, kind, *status);
            // A slot came free and work may be ready: this replica's own
            // engine claims it (no NOTIFY storm across replicas).
            if let Some(wake) = &cfg.local_wake {
                wake.notify_one();
            }
        }
        crate::worker::notify_cancelled(&cfg.worker_http, self.cancelled);
        self.applied
    }
}

impl Done {
    /// A success applied by a batch's set-wise pass ([`super::successes`]).
    pub(super) fn succeeded(
        release: Release,
        tokens: i64,
        cost: f64,
        cancelled: Vec<attempts::Cancelled>,
    ) -> Done {
        Done {
            applied: Applied::Applied(TaskStatus::Succeeded),
            release: Some(release),
            figures: (tokens, cost, None),
            cancelled,
        }
    }
}

/// What an attempt's end changes of its agent, applied by
/// [`release_agents`] as the transaction's last writes.
pub(super) struct Release {
    pub(super) workspace_id: Uuid,
    pub(super) agent_id: String,
    pub(super) task_type: String,
    pub(super) outcome: Option<bool>,
    pub(super) reach: attempts::Reach,
    pub(super) error: Option<String>,
}

/// Applies a report inside `tx` (which the caller commits), except the
/// agent's side, which it returns. Refusals (unknown attempt, bad token,
/// stale report) happen before anything is written.
#[tracing::instrument(
    name = "report.apply",
    skip_all,
    fields(
        attempt_id = %attempt_id,
        origin = origin.label(),
        reported = ?report.status,
        mission_id = tracing::field::Empty,
        task_id = tracing::field::Empty,
        attempt = tracing::field::Empty,
        agent_id = tracing::field::Empty,
    )
)]
pub(super) async fn apply_in(
    tx: &mut PgConnection,
    cfg: &EngineConfig,
    attempt_id: Uuid,
    report: &WorkerReport,
    origin: Origin<'_>,
) -> Result<Done, ReportError> {
    let Some(Locked {
        mut run,
        attempt,
        verifier,
        task,
        report_json,
    }) = lock_and_decide(&mut *tx, cfg, attempt_id, report, origin).await?
    else {
        return Ok(Done {
            applied: Applied::Duplicate,
            release: None,
            figures: (0, 0.0, None),
            cancelled: Vec::new(),
        });
    };
    let actor = match origin {
        Origin::Worker { .. } | Origin::Inline => format!("agent:{}", attempt.agent_id),
        Origin::DispatchFailed
        | Origin::Unreachable
        | Origin::LeaseExpired
        | Origin::AgentOffline
        | Origin::Busy { .. } => {
            format!("engine:{}", cfg.replica_id)
        }
    };
    let cost = if report.cost.is_finite() {
        report.cost.max(0.0)
    } else {
        0.0
    };
    let verifying = attempt.purpose == "verify";
    let next = judge(&task, verifying, verifier, report, origin, cfg);
    let ended = Ended {
        attempt: &attempt,
        task: &task,
        report,
        report_json: &report_json,
        origin,
        verifying,
        cost,
    };
    let (failure_kind, outcome) = settle_attempt(&mut *tx, &run, &ended, &next).await?;
    let spent_before = run.budget_spent;
    run.budget_spent += cost;
    let next = consult_on_redesign(&mut *tx, cfg, &run, next, &actor).await?;
    let new_status = advance_task(&mut *tx, cfg, &mut run, &ended, next, &actor).await?;
    if budget::crosses_warning(run.budget_limit, spent_before, run.budget_spent)
        && !run.budget_warned
    {
        budget_warning(&mut *tx, &mut run, &actor).await?;
    }
    let cancelled = if new_status.is_terminal() {
        finish_mission_if_done(&mut *tx, &mut run, &actor).await?
    } else {
        Vec::new()
    };
    Ok(Done {
        applied: Applied::Applied(new_status),
        release: Some(Release {
            workspace_id: attempt.workspace_id,
            agent_id: attempt.agent_id.clone(),
            task_type: task.task_type.clone(),
            outcome,
            reach: match origin {
                Origin::Worker { .. } | Origin::Inline | Origin::Busy { .. } => {
                    attempts::Reach::Answered
                }
                Origin::Unreachable => attempts::Reach::Unreachable,
                Origin::DispatchFailed | Origin::LeaseExpired | Origin::AgentOffline => {
                    attempts::Reach::Unknown
                }
            },
            error: report.error.clone(),
        }),
        figures: (report.tokens, cost, failure_kind),
        cancelled,
    })
}

/// What a report is applied to, read under the mission's lock.
struct Locked {
    run: MissionRow,
    attempt: attempts::AttemptRow,
    /// Whether the attempt's agent is a verifier.
    verifier: bool,
    task: tasks::TaskRow,
    report_json: Value,
}

/// The attempt that ended, its task and its report, as the later phases
/// of [`apply_report`] need them.
struct Ended<'a> {
    attempt: &'a attempts::AttemptRow,
    task: &'a tasks::TaskRow,
    report: &'a WorkerReport,
    report_json: &'a Value,
    origin: Origin<'a>,
    verifying: bool,
    cost: f64,
}

/// Locks the mission (global lock order, found through the attempt), reads
/// the attempt and its task under that lock, checks the token, and decides
/// whether the report applies: `None` for a duplicate of the report already
/// applied, an error for a stale or unknown one.
async fn lock_and_decide(
    tx: &mut PgConnection,
    cfg: &EngineConfig,
    attempt_id: Uuid,
    report: &WorkerReport,
    origin: Origin<'_>,
) -> Result<Option<Locked>, ReportError> {
    let Some(run) = missions::lock_for_attempt(&mut *tx, attempt_id).await? else {
        return Err(ReportError::NotFound(attempt_id));
    };
    // Read under the mission lock: this is the state we decide on.
    let (attempt, verifier) = attempts::get_for_report(&mut *tx, attempt_id, &cfg.verifier_skill)
        .await?
        .ok_or(ReportError::NotFound(attempt_id))?;
    if let Origin::Worker { token } = origin
        && hash_token(token) != attempt.token_hash
    {
        return Err(ReportError::BadToken(attempt_id));
    }
    let task = tasks::get(&mut *tx, attempt.task_id).await?;
    let span = tracing::Span::current();
    span.record("mission_id", tracing::field::display(task.run_id));
    span.record("task_id", tracing::field::display(task.id));
    span.record("attempt", attempt.attempt_number);
    span.record("agent_id", attempt.agent_id.as_str());
    let report_json = serde_json::to_value(report).unwrap_or_default();
    let is_current =
        task.current_attempt_id == Some(attempt.id) && task.status() == TaskStatus::Running;
    match decide_report(
        attempt.status(),
        is_current,
        attempt.report.as_ref(),
        &report_json,
    ) {
        ReportDecision::Duplicate => Ok(None),
        ReportDecision::Stale => Err(ReportError::Stale {
            attempt: attempt.id,
            attempt_status: attempt.status,
            task_status: task.status,
        }),
        ReportDecision::Apply => Ok(Some(Locked {
            run,
            attempt,
            verifier,
            task,
            report_json,
        })),
    }
}

/// Ends the attempt as the judgement says (its status, failure kind, cost
/// and tokens) and adds its cost to the mission's spend. Returns the
/// failure kind recorded (for the metrics) and whether the work attempt
/// counts as a success or a failure of its agent ([`release_agent`]).
async fn settle_attempt(
    tx: &mut PgConnection,
    run: &MissionRow,
    e: &Ended<'_>,
    next: &Next,
) -> Result<(Option<FailureKind>, Option<bool>), ReportError> {
    let (attempt_status, failure_kind, attempt_error) = match next {
        Next::Deferred { .. } => (AttemptStatus::Cancelled, None, e.report.error.clone()),
        Next::Succeed { .. } | Next::Verify { .. } => (AttemptStatus::Succeeded, None, None),
        Next::Continue => (AttemptStatus::Continued, None, None),
        Next::Failure { kind, error, .. } => (
            if matches!(e.origin, Origin::LeaseExpired | Origin::AgentOffline) {
                AttemptStatus::Expired
            } else {
                AttemptStatus::Failed
            },
            Some(*kind),
            Some(error.clone()),
        ),
    };
    // Past success counts work attempts only, not verifiers' verdicts.
    let outcome = match next {
        _ if e.verifying => None,
        Next::Succeed { .. } | Next::Verify { .. } => Some(true),
        Next::Failure { .. } => Some(false),
        _ => None,
    };
    let ended = attempts::end(
        &mut *tx,
        attempts::Finish {
            status: attempt_status,
            failure_kind,
            report: Some(e.report_json),
            error: attempt_error.as_deref(),
            cost: e.cost,
            tokens: e.report.tokens.max(0),
        },
        e.attempt.id,
        run.id,
    )
    .await?;
    if !ended {
        return Err(ReportError::Race("attempt"));
    }
    Ok((failure_kind, outcome))
}

/// Gives the agents their slots back and counts the outcomes for them, as
/// the transaction's last writes. Attempts whose worker answered (the
/// common case) go, all in one statement, to the agents' pending returns,
/// which lock nothing shared: the agent rows are hot (every claim takes
/// slots there) and are folded by the next claim instead. The others (a
/// worker that could not be reached, an outcome unknown) update their
/// agent's row at once, in agent key order (the global lock order), since
/// they may make the agent unreachable. Without a local engine (an
/// API-only replica), the first release queues the NOTIFY that wakes the
/// other replicas' dispatchers at commit.
pub(super) async fn release_agents(
    tx: &mut PgConnection,
    cfg: &EngineConfig,
    mut releases: Vec<Release>,
) -> Result<(), ReportError> {
    releases.sort_by(|a, b| (a.workspace_id, &a.agent_id).cmp(&(b.workspace_id, &b.agent_id)));
    let (answered, others): (Vec<Release>, Vec<Release>) = releases
        .into_iter()
        .partition(|r| r.reach == attempts::Reach::Answered);
    if !answered.is_empty() {
        let (agents, tallies) = tally_answered(&answered);
        attempts::release_answered(&mut *tx, &agents, &tallies, cfg.local_wake.is_none()).await?;
    }
    for r in others {
        let made_unreachable = attempts::release(
            &mut *tx,
            attempts::Settle {
                workspace_id: r.workspace_id,
                agent_id: &r.agent_id,
                task_type: &r.task_type,
                outcome: r.outcome,
                reach: r.reach,
                unreachable_after: cfg.unreachable_after,
            },
            cfg.local_wake.is_none(),
        )
        .await?;
        if let Some(failures) = made_unreachable {
            tracing::warn!(agent_id = %r.agent_id, failures, "agent unreachable: no work until it heartbeats");
            events::record(
                &mut *tx,
                r.workspace_id,
                WorkspaceEvent::new(
                    None,
                    None,
                    &format!("engine:{}", cfg.replica_id),
                    &AgentUnreachable {
                        agent_id: r.agent_id.clone(),
                        failures,
                        error: r.error.clone().unwrap_or_default(),
                    },
                ),
            )
            .await?;
        }
    }
    Ok(())
}

/// Answered releases (sorted by agent key) summed per agent, and their
/// outcomes per agent and task type.
fn tally_answered(releases: &[Release]) -> (Vec<attempts::Answered>, Vec<attempts::Tally>) {
    let mut agents: Vec<attempts::Answered> = Vec::new();
    let mut tallies: std::collections::BTreeMap<(Uuid, &str, &str), (i32, i32)> =
        std::collections::BTreeMap::new();
    for r in releases {
        match agents.last_mut() {
            Some(a) if a.workspace_id == r.workspace_id && a.agent_id == r.agent_id => a.slots += 1,
            _ => agents.push(attempts::Answered {
                workspace_id: r.workspace_id,
                agent_id: r.agent_id.clone(),
                slots: 1,
            }),
        }
        if let Some(ok) = r.outcome {
            let t = tallies
                .entry((r.workspace_id, &r.agent_id, &r.task_type))
                .or_default();
            if ok {
                t.0 += 1;
            } else {
                t.1 += 1;
            }
        }
    }
    let tallies = tallies
        .into_iter()
        .map(
            |((workspace_id, agent_id, task_type), (succeeded, failed))| attempts::Tally {
                workspace_id,
                agent_id: agent_id.to_owned(),
                task_type: task_type.to_owned(),
                succeeded,
                failed,
            },
        )
        .collect();
    (agents, tallies)
}

/// Missions are intentions: a verifier finding the task's design wrong is
/// an explicit replanning trigger, consulted (and logged) only when the
/// mission could replan at all; otherwise it is an ordinary failure.
async fn consult_on_redesign(
    tx: &mut PgConnection,
    cfg: &EngineConfig,
    run: &MissionRow,
    next: Next,
    actor: &str,
) -> Result<Next, ReportError> {
    Ok(match next {
        Next::Failure {
            kind,
            error,
            feedback,
            verdict,
            redesign: true,
        } => {
            let redesign = escalation::may_replan(cfg, run)
                && crate::missions::commitment::consult(
                    &mut *tx,
                    run,
                    coordinator_core::bdi::MissionTrigger::VerifierRejectedDesign,
                    actor,
                )
                .await?;
            Next::Failure {
                kind,
                error,
                feedback,
                verdict,
                redesign,
            }
        }
        other => other,
    })
}

/// Moves the task on as the judgement says: retry later (deferred, to be
/// verified, continued), succeed (and promote its dependents), or fail
/// ([`fail_task`]). Returns the task's new status.
async fn advance_task(
    tx: &mut PgConnection,
    cfg: &EngineConfig,
    run: &mut MissionRow,
    e: &Ended<'_>,
    next: Next,
    actor: &str,
) -> Result<TaskStatus, ReportError> {
    let (task, attempt, cost) = (e.task, e.attempt, e.cost);
    Ok(match next {
        Next::Deferred { retry_after } => {
            let due = OffsetDateTime::now_utc() + retry_after;
            let r = Retry::new(RetryKind::Deferred, due, cost, e.report.error.clone());
            retry(&mut *tx, task, run, attempt.id, r, actor).await?;
            TaskStatus::RetryWait
        }
        Next::Succeed {
            output,
            verification,
        } => {
            succeed(
                &mut *tx,
                task,
                attempt.id,
                output,
                verification,
                e.report.tokens,
                cost,
                actor,
            )
            .await?;
            tasks::promote_ready(
                &mut *tx,
                run.workspace_id,
                run.id,
                Some(task.id),
                run.priority,
                actor,
            )
            .await?;
            TaskStatus::Succeeded
        }
        Next::Verify { output, unchecked } => {
            let due = OffsetDateTime::now_utc();
            let mut r = Retry::new(RetryKind::Verify, due, cost, None);
            r.candidate = Some(output);
            r.detail = json!({ "unchecked": unchecked });
            retry(&mut *tx, task, run, attempt.id, r, actor).await?;
            TaskStatus::RetryWait
        }
        Next::Continue => {
            let due = OffsetDateTime::now_utc() + cfg.continuation_delay;
            let mut r = Retry::new(RetryKind::Continuation, due, cost, None);
            r.continue_agent = Some(attempt.agent_id.clone());
            retry(&mut *tx, task, run, attempt.id, r, actor).await?;
            TaskStatus::RetryWait
        }
        Next::Failure {
            kind,
            error,
            feedback,
            verdict,
            redesign,
        } => {
            if let Some(v) = &verdict {
                record_verification_failure(&mut *tx, task, attempt.id, v, actor).await?;
            }
            let failed = escalation::Failed {
                attempt_id: attempt.id,
                kind,
                error,
                feedback,
                cost,
            };
            fail_task(&mut *tx, cfg, run, e, failed, redesign, actor).await?
        }
    })
}

/// A failed attempt: replan around a task whose design the verifier
/// rejected; retry with backoff while attempts remain (only failures count
/// against `max_attempts`: continuations and deferrals by a busy worker do
/// not); otherwise climb the escalation ladder.
async fn fail_task(
    tx: &mut PgConnection,
    cfg: &EngineConfig,
    run: &mut MissionRow,
    e: &Ended<'_>,
    failed: escalation::Failed,
    redesign: bool,
    actor: &str,
) -> Result<TaskStatus, ReportError> {
    let task = e.task;
    if redesign {
        let why = failed
            .feedback
            .clone()
            .unwrap_or_else(|| failed.error.clone());
        let text = format!(
            "The verifier found the design of task '{}' ({}) wrong: {why}. \
             Replan the remaining work around it: do not depend on '{}'; if its purpose is still needed, \
             reach it with differently designed tasks.",
            task.task_key, task.title, task.task_key
        );
        return escalation::replan_around_task(&mut *tx, run, task, failed, &text, actor).await;
    }
    if task.failure_count + 1 < task.max_attempts {
        let failures = (task.failure_count + 1) as u32;
        let jitter = (e.attempt.id.as_u128() % 1000) as f64 / 1000.0;
        // A provider's Retry-After (relayed by the worker) is a floor,
        // capped at an hour so a bad header cannot park a task for good.
        let floor = e
            .report
            .retry_after_secs
            .map(|s| Duration::from_secs(s.min(3600)))
            .unwrap_or_default();
        let delay = retry_delay(failures, cfg.retry_base, cfg.retry_cap, jitter).max(floor);
        let due = OffsetDateTime::now_utc() + delay;
        let mut r = Retry::new(RetryKind::Failure, due, e.cost, Some(failed.error));
        r.failure_kind = Some(failed.kind);
        r.feedback = failed.feedback;
        retry(&mut *tx, task, run, e.attempt.id, r, actor).await?;
        return Ok(TaskStatus::RetryWait);
    }
    escalation::escalate_task(&mut *tx, cfg, run, task, failed, actor).await
}

/// What a report means for its task.
pub(super) enum Next {
    /// A busy worker: try again after its Retry-After, no failure counted.
    Deferred { retry_after: Duration },
    /// The task is done with this output.
    Succeed {
        output: Option<Value>,
        verification: Value,
    },
    /// The result needs a verifier agent's verdict first.
    Verify {
        output: Value,
        unchecked: Vec<String>,
    },
    /// Same agent again shortly, no failure counted.
    Continue,
    /// The attempt failed (or its result did not pass verification).
    Failure {
        kind: FailureKind,
        error: String,
        feedback: Option<String>,
        verdict: Option<Value>,
        /// The verifier says the task's design is wrong: a replanning
        /// trigger rather than a retry (when the mission may replan).
        redesign: bool,
    },
}

/// Judges a report: deterministic `must_pass` checks on a result, a
/// verifier's verdict, continuation limits.
pub(super) fn judge(
    task: &tasks::TaskRow,
    verifying: bool,
    verifier: bool,
    report: &WorkerReport,
    origin: Origin<'_>,
    cfg: &EngineConfig,
) -> Next {
    if let Origin::Busy { retry_after } = origin {
        return Next::Deferred { retry_after };
    }
    let failure = |kind, error: String| Next::Failure {
        kind,
        error,
        feedback: None,
        verdict: None,
        redesign: false,
    };
    let default_kind = match origin {
        Origin::LeaseExpired
        | Origin::AgentOffline
        | Origin::DispatchFailed
        | Origin::Unreachable => FailureKind::Infrastructure,
        _ => report.failure_kind.unwrap_or(FailureKind::Quality),
    };
    match report.status {
        ReportStatus::Succeeded if verifying => match verification::parse_verdict(
            report.output.as_ref(),
        ) {
            Some((true, reasons)) => Next::Succeed {
                output: task.candidate_output.clone(),
                verification: json!({ "verifier": "agent", "passed": true, "reasons": reasons }),
            },
            Some((false, reasons)) => {
                let v = verification::Verdict {
                    failed: reasons,
                    ..Default::default()
                };
                let redesign = verification::design_flawed(report.output.as_ref());
                Next::Failure {
                    kind: FailureKind::Quality,
                    error: if redesign {
                        "the verifier found the task's design wrong".into()
                    } else {
                        "the verifier rejected the result".into()
                    },
                    feedback: Some(v.feedback()),
                    verdict: Some(
                        json!({ "verifier": "agent", "failed": v.failed, "design_flawed": redesign }),
                    ),
                    redesign,
                }
            }
            None => failure(
                FailureKind::Infrastructure,
                "the verifier answered without a verdict ({\"passed\": bool, \"reasons\": [...]})"
                    .into(),
            ),
        },
        ReportStatus::Succeeded => {
            let v = verification::verify(&task.criteria(), report.output.as_ref());
            if !v.ok() {
                Next::Failure {
                    kind: FailureKind::Quality,
                    error: format!("{} must_pass check(s) failed", v.failed.len()),
                    feedback: Some(v.feedback()),
                    verdict: Some(serde_json::to_value(&v).unwrap_or_default()),
                    redesign: false,
                }
            } else if !v.unchecked.is_empty() && verifier {
                Next::Verify {
                    output: report.output.clone().unwrap_or(Value::Null),
                    unchecked: v.unchecked,
                }
            } else {
                Next::Succeed {
                    output: report.output.clone(),
                    verification: serde_json::to_value(&v).unwrap_or_default(),
                }
            }
        }
        ReportStatus::Continue if task.continuation_count < cfg.max_continuations => Next::Continue,
        ReportStatus::Continue => failure(
            FailureKind::Quality,
            format!(
                "the worker asked to continue more than {} times",
                cfg.max_continuations
            ),
        ),
        ReportStatus::Failed => failure(
            default_kind,
            report
                .error
                .clone()
                .unwrap_or_else(|| "the worker reported failure".into()),
        ),
    }
}

async fn record_verification_failure(
    conn: &mut PgConnection,
    task: &tasks::TaskRow,
    attempt_id: Uuid,
    verdict: &Value,
    actor: &str,
) -> Result<(), ReportError> {
    events::append(
        conn,
        task.workspace_id,
        events::NewEvent::new(
            task.run_id,
            Some(task.id),
            Some(attempt_id),
            actor,
            &events::payloads::TaskVerificationFailed {
                key: task.task_key.clone(),
                verdict: verdict.clone(),
            },
        ),
    )
    .await?;
    Ok(())
}

/// Spend crossed 80 %: warn once, drop the optional work not started, and
/// let dispatch prefer cheaper agents for the rest of the mission.
async fn budget_warning(
    conn: &mut PgConnection,
    run: &mut MissionRow,
    actor: &str,
) -> Result<(), ReportError> {
    sqlx::query!(
        "UPDATE orchestration_runs SET budget_warned = true WHERE id = $1",
        run.id
    )
    .execute(&mut *conn)
    .await?;
    run.budget_warned = true;
    // Missions are intentions: a single-minded mission keeps its plan
    // (optional work included) through the budget warning.
    let reconsider = crate::missions::commitment::consult(
        conn,
        run,
        coordinator_core::bdi::MissionTrigger::BudgetWarning,
        actor,
    )
    .await?;
    let dropped = if reconsider {
        tasks::skip_unstarted_optional(
            conn,
            run.workspace_id,
            run.id,
            actor,
            "budget above 80 %: optional work dropped",
        )
        .await?
    } else {
        0
    };
    events::append(
        conn,
        run.workspace_id,
        events::NewEvent::new(
            run.id,
            None,
            None,
            actor,
            &events::payloads::MissionBudgetWarning {
                limit: run.budget_limit,
                spent: run.budget_spent,
                share: budget::WARNING_SHARE,
                optional_tasks_dropped: dropped,
                prefer: "cheaper agents".into(),
            },
        ),
    )
    .await?;
    if dropped > 0 {
        tasks::promote_ready(conn, run.workspace_id, run.id, None, run.priority, actor).await?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn succeed(
    conn: &mut PgConnection,
    task: &tasks::TaskRow,
    attempt_id: Uuid,
    output: Option<Value>,
    verification: Value,
    tokens: i64,
    cost: f64,
    actor: &str,
) -> Result<(), ReportError> {
    let to = task
        .status()
        .next(TaskEvent::Succeeded)
        .map_err(|_| ReportError::Race("task status"))?;
    let r = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = 'succeeded', output = $3, actual_cost = actual_cost + $4, lease_owner = NULL,
             lease_expires_at = NULL, verify_pending = false, candidate_output = NULL,
             finished_at = now(), version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $2",
        task.id,
        task.version,
        output,
        cost
    )
    .execute(&mut *conn)
    .await?;
    if r.rows_affected() != 1 {
        return Err(ReportError::Race("task version"));
    }
    tasks::record(
        conn,
        Change::event(
            task,
            to,
            actor,
            Some(attempt_id),
            &events::payloads::TaskSucceeded {
                key: task.task_key.clone(),
                attempt: task.attempt_count,
                cost,
                tokens,
                verification,
            },
        ),
    )
    .await?;
    Ok(())
}

/// The continuation delay default.
pub const DEFAULT_CONTINUATION_DELAY: Duration = Duration::from_secs(1);

/// A mission that could not be finished, as a report error: the database
/// failed, or the guarded mission write lost a race.
impl From<FinishError> for ReportError {
    fn from(e: FinishError) -> Self {
        match e {
            FinishError::Db(e) => ReportError::Db(e),
            FinishError::Race => ReportError::Race("mission"),
        }
    }
}
