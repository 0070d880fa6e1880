//! What moves running workflows between requests, on every replica's tick:
//! due timers, agent tasks whose missions ended, called processes that
//! ended, thrown messages and signals waiting in the outbox, and timer
//! start events due to start an instance.
//!
//! Each item is one transaction that takes its instance with SKIP LOCKED
//! (another replica moving it is left alone; the item is seen again next
//! tick if still due) and applies one command, which the runner refuses if
//! the token no longer waits for it: so a timer fires once and a task's
//! outcome is taken once, however many replicas pump.

use std::collections::HashMap;

use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use coordinator_bpmn::run::{Command, Instance};

use super::{
    WorkflowError,
    delivery::{deliver_message, deliver_signal, start_by_message},
    instances::{RunContext, command_in},
    timer_starts,
};
use crate::{
    missions::PlanningConfig,
    store::{
        event_notify::Notifier, workflow_instances as store, workflow_timer_starts as timer_store,
    },
};

/// Items of each kind looked at per pass.
const BATCH: i64 = 64;

/// Passes per tick while a pass finds a full batch (a backlog drains in one
/// tick, not one batch a second).
const MAX_PASSES: usize = 16;

/// What a pass works with: the database, the settings, who acts, and each
/// workspace's run context, loaded once.
struct Pump<'p> {
    pool: &'p PgPool,
    planning: &'p PlanningConfig,
    notifier: Option<&'p Notifier>,
    actor: &'p str,
    contexts: HashMap<Uuid, RunContext<'p>>,
}

/// What a run of the pump did and left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pumped {
    /// Commands applied (and messages, signals and timer starts handled).
    pub applied: usize,
    /// Some token still waits for an agent task's mission: the engine runs
    /// the pump on its wake-ups too (a report that ends such a mission wakes
    /// it), not only on the interval, so the instance moves on at once.
    pub agent_work_out: bool,
}

/// Moves what is due.
pub async fn run(
    pool: &PgPool,
    planning: &PlanningConfig,
    notifier: Option<&Notifier>,
    actor: &str,
) -> Result<Pumped, WorkflowError> {
    let mut pump = Pump {
        pool,
        planning,
        notifier,
        actor,
        contexts: HashMap::new(),
    };
    let mut applied = 0;
    for _ in 0..MAX_PASSES {
        let (n, full) = pump.pass().await?;
        applied += n;
        if !full {
            break;
        }
    }
    let mut conn = pool.acquire().await?;
    let agent_work_out = store::agent_work_out(&mut conn).await?;
    Ok(Pumped {
        applied,
        agent_work_out,
    })
}

impl<'p> Pump<'p> {
    /// One pass: (commands applied, whether some kind filled its batch).
    async fn pass(&mut self) -> Result<(usize, bool), WorkflowError> {
        let mut applied = 0;
        let mut conn = self.pool.acquire().await?;
        let now = time::OffsetDateTime::now_utc();
        let timers = store::due_timers(&mut conn, now, BATCH).await?;
        let work = store::finished_work(&mut conn, BATCH).await?;
        let children = store::finished_children(&mut conn, BATCH).await?;
        drop(conn);
        let full = [timers.len(), work.len(), children.len()]
            .iter()
            .any(|n| *n as i64 >= BATCH);
        for (ws, instance, token) in timers {
            let cmd = Command::TimerDue {
                token: token as u64,
            };
            applied += self.apply(ws, instance, cmd).await?;
        }
        for w in work {
            let cmd = if w.status == "completed" {
                Command::Complete {
                    token: w.token as u64,
                    output: w.output.unwrap_or(Value::Null),
                }
            } else {
                Command::Fail {
                    token: w.token as u64,
                    error_code: None,
                    message: w
                        .failure_reason
                        .unwrap_or_else(|| format!("the task's mission was {}", w.status)),
                }
            };
            applied += self.apply(w.workspace_id, w.instance_id, cmd).await?;
        }
        for (ws, parent, token, status, state) in children {
            let cmd = if status == "completed" {
                let child: Instance = serde_json::from_value(state)?;
                Command::Complete {
                    token: token as u64,
                    output: Value::Object(child.variables),
                }
            } else {
                Command::Fail {
                    token: token as u64,
                    error_code: None,
                    message: format!("the called process was {status}"),
                }
            };
            applied += self.apply(ws, parent, cmd).await?;
        }
        let (sent, more) = self.outbox().await?;
        let (started, more_starts) = self.timer_starts().await?;
        Ok((applied + sent + started, full || more || more_starts))
    }

    /// Starts the instances timer start events owe: (started, whether more
    /// are due). Each occurrence is taken with SKIP LOCKED by the
    /// transaction that starts its instance and schedules the next one.
    async fn timer_starts(&mut self) -> Result<(usize, bool), WorkflowError> {
        let pool = self.pool;
        let mut n = 0;
        for _ in 0..BATCH {
            let now = time::OffsetDateTime::now_utc();
            let mut tx = pool.begin().await?;
            let Some(row) = timer_store::take_due(&mut tx, now).await? else {
                return Ok((n, false));
            };
            let cx = self.context(row.workspace_id).await?;
            let started = timer_starts::fire(&mut tx, cx, &row, now).await?;
            tx.commit().await?;
            cx.committed();
            n += usize::from(started);
        }
        Ok((n, true))
    }

    /// The context of `ws`'s instances, loaded once per tick.
    async fn context(&mut self, ws: Uuid) -> Result<&RunContext<'p>, WorkflowError> {
        if let std::collections::hash_map::Entry::Vacant(slot) = self.contexts.entry(ws) {
            let cx = RunContext::load(
                self.pool,
                self.planning,
                ws,
                self.actor.to_owned(),
                self.notifier,
            )
            .await?;
            slot.insert(cx);
        }
        self.contexts
            .get(&ws)
            .ok_or_else(|| WorkflowError::Run("context vanished".into()))
    }

    /// Applies one command in its own transaction; 1 if it applied, 0 if the
    /// instance was busy or the command no longer fits.
    async fn apply(
        &mut self,
        ws: Uuid,
        instance: Uuid,
        cmd: Command,
    ) -> Result<usize, WorkflowError> {
        let pool = self.pool;
        let cx = self.context(ws).await?;
        let mut tx = cx.begin(pool).await?;
        match command_in(&mut tx, cx, Some(ws), instance, cmd, true).await {
            Ok(Some(())) => {
                tx.commit().await?;
                cx.committed();
                Ok(1)
            }
            Ok(None) | Err(WorkflowError::Refused(_)) => Ok(0),
            Err(e) => {
                tracing::warn!(instance = %instance, error = %e, "a workflow command failed; retried next tick");
                Ok(0)
            }
        }
    }

    /// Delivers thrown messages and signals, each taken from the outbox by
    /// the transaction that delivers it: (delivered, whether more wait).
    async fn outbox(&mut self) -> Result<(usize, bool), WorkflowError> {
        let pool = self.pool;
        let mut n = 0;
        for _ in 0..BATCH {
            let mut tx = pool.begin().await?;
            let Some(item) = store::take_outbox(&mut tx).await? else {
                return Ok((n, false));
            };
            let cx = self.context(item.workspace_id).await?;
            // Delivered in transactions of their own: a message or signal
            // thrown is delivered at least once to instances waiting when it
            // is taken.
            if item.kind == "message" {
                let delivered = deliver_message(
                    pool,
                    cx,
                    item.workspace_id,
                    &item.name,
                    item.correlation.as_deref(),
                    item.payload.clone(),
                )
                .await?;
                // Nobody waits: a process a message of this name starts is
                // started in the transaction that takes the item, so once.
                // One that cannot start (an invalid version) drops the
                // message, in a savepoint, rather than block the outbox.
                if delivered.is_none() {
                    let mut sp = sqlx::Connection::begin(&mut *tx).await?;
                    let started = start_by_message(
                        &mut sp,
                        cx,
                        item.workspace_id,
                        &item.name,
                        item.correlation.as_deref(),
                        item.payload.clone(),
                        None,
                    )
                    .await;
                    match started {
                        Ok(_) => sp.commit().await?,
                        Err(WorkflowError::Db(e)) => return Err(e.into()),
                        Err(e) => {
                            sp.rollback().await?;
                            tracing::warn!(message = %item.name, error = %e, "a thrown message could not start its process; dropped");
                        }
                    }
                }
            } else {
                deliver_signal(
                    pool,
                    cx,
                    item.workspace_id,
                    &item.name,
                    item.payload.clone(),
                    item.from_instance,
                )
                .await?;
            }
            tx.commit().await?;
            n += 1;
        }
        Ok((n, true))
    }
}
