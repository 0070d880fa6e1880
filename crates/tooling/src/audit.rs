//! The auditor: reads a whole database (every workspace) and checks the
//! invariants that must hold whatever crashed, hung or answered twice.
//!
//! - `doubled`: tasks with more than one succeeded attempt;
//! - `doubled_events`: tasks with more than one `task.succeeded` event;
//! - `stale_accepted`: succeeded attempts that are not their task's current
//!   attempt (a report that should have been refused was taken);
//! - `cap_violations`: agents with more live attempts than their cap;
//! - `event_gaps`: missions whose event `seq` is not exactly 1..n (event
//!   retention pruning a log shows up here too: audit before it runs);
//! - `replay_mismatches`: missions or tasks whose status replayed from the
//!   event log ([`crate::timeline::Replay`]) differs from the table, or task
//!   events whose named status contradicts their kind;
//! - `slots_held`: agent slots counted as held beyond the agent's live
//!   attempts (leaked slots; at rest, every held slot).
//!
//! Everything is read in one repeatable-read snapshot, so auditing a live
//! database compares events and tables as of one instant. `coordinator
//! audit` prints [`AuditReport::summary`] and [`AuditReport::figures`] and
//! exits 1 unless [`AuditReport::is_clean`].

use std::collections::BTreeMap;

use futures::TryStreamExt;
use serde_json::Value;
use sqlx::{PgPool, Postgres, Transaction};
use uuid::Uuid;

use crate::timeline::{Replay, task_status_of_kind};

/// Mission statuses that never change again.
pub const TERMINAL: [&str; 3] = ["completed", "failed", "cancelled"];

/// Mismatch descriptions kept in a report (the count is always exact).
const KEPT_MISMATCHES: usize = 20;

/// What the auditor found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditReport {
    /// Missions in the database.
    pub missions: i64,
    /// Missions in a terminal status.
    pub terminal: i64,
    /// Missions per status.
    pub by_status: BTreeMap<String, i64>,
    /// Tasks in the database.
    pub tasks: i64,
    /// Attempts in the database.
    pub attempts: i64,
    /// Attempts live (dispatching or running) right now.
    pub live_attempts: i64,
    /// Tasks with more than one succeeded attempt (must be 0).
    pub doubled: i64,
    /// Tasks with more than one `task.succeeded` event (must be 0).
    pub doubled_events: i64,
    /// Succeeded attempts that are not their task's current one (must be 0).
    pub stale_accepted: i64,
    /// Agents above their cap (must be 0).
    pub cap_violations: i64,
    /// Missions whose event log is not gap-free from 1 (must be 0).
    pub event_gaps: i64,
    /// Replay disagreements (must be 0).
    pub replay_mismatches: usize,
    /// The first few replay disagreements, described.
    pub mismatches: Vec<String>,
    /// Slots held beyond live attempts (must be 0).
    pub slots_held: i64,
}

impl AuditReport {
    /// The must-be-0 figures, by name.
    pub fn invariants(&self) -> [(&'static str, i64); 7] {
        [
            ("doubled", self.doubled),
            ("doubled_events", self.doubled_events),
            ("stale_accepted", self.stale_accepted),
            ("cap_violations", self.cap_violations),
            ("event_gaps", self.event_gaps),
            ("replay_mismatches", self.replay_mismatches as i64),
            ("slots_held", self.slots_held),
        ]
    }

    /// True when every must-be-0 figure is 0.
    pub fn is_clean(&self) -> bool {
        self.invariants().iter().all(|(_, n)| *n == 0)
    }

    /// Space-separated `key=value` figures (the last line of `audit`).
    pub fn figures(&self) -> String {
        let mut parts = vec![
            format!("missions={}", self.missions),
            format!("terminal={}", self.terminal),
        ];
        parts.extend(self.invariants().iter().map(|(k, v)| format!("{k}={v}")));
        parts.join(" ")
    }

    /// A human summary (several lines, no trailing newline).
    pub fn summary(&self) -> String {
        let statuses: Vec<String> = self
            .by_status
            .iter()
            .map(|(s, n)| format!("{s} {n}"))
            .collect();
        let mut out = vec![
            format!(
                "missions: {} ({} terminal{}{})",
                self.missions,
                self.terminal,
                if statuses.is_empty() { "" } else { "; " },
                statuses.join(", ")
            ),
            format!(
                "tasks: {}, attempts: {} ({} live)",
                self.tasks, self.attempts, self.live_attempts
            ),
        ];
        for (name, n) in self.invariants() {
            out.push(format!(
                "{:<18} {n:>6}  {}",
                name,
                if n == 0 { "ok" } else { "VIOLATED" }
            ));
        }
        for m in &self.mismatches {
            out.push(format!("  {m}"));
        }
        if self.replay_mismatches > self.mismatches.len() {
            out.push(format!(
                "  … and {} more",
                self.replay_mismatches - self.mismatches.len()
            ));
        }
        out.join("\n")
    }
}

/// One logged event, as the replay needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedEvent {
    /// The task it is about, if any.
    pub task_id: Option<Uuid>,
    /// Its kind, e.g. `task.succeeded`.
    pub kind: String,
    /// Its payload.
    pub payload: Value,
}

/// Replays one mission's events (in `seq` order) and compares the result
/// with the tables: the mission's `status` and each task's `(id, status)`.
/// A task with no event is expected `pending`. Returns one description per
/// disagreement (empty when the log explains the tables exactly).
pub fn replay_mismatches(
    mission: Uuid,
    status: &str,
    events: &[LoggedEvent],
    tasks: &[(Uuid, String)],
) -> Vec<String> {
    let mut out = Vec::new();
    let mut replay = Replay::new();
    for e in events {
        // A task event names its new status; where its kind implies one too,
        // they must agree.
        if let (Some(named), Some(implied)) =
            (e.payload["status"].as_str(), task_status_of_kind(&e.kind))
            && e.kind.starts_with("task.")
            && named != implied
        {
            out.push(format!(
                "mission {mission}: event {} names status {named}, its kind says {implied}",
                e.kind
            ));
        }
        replay.apply(&e.kind, e.task_id, &e.payload);
    }
    if replay.mission_status != status {
        out.push(format!(
            "mission {mission}: replay says {}, table says {status}",
            replay.mission_status
        ));
    }
    for (task, actual) in tasks {
        let replayed = replay
            .tasks
            .get(task)
            .map(String::as_str)
            .unwrap_or("pending");
        if replayed != actual {
            out.push(format!(
                "task {task} of mission {mission}: replay says {replayed}, table says {actual}"
            ));
        }
    }
    out
}

/// Agents with more live attempts than their cap right now.
pub async fn cap_violations(pool: &PgPool) -> sqlx::Result<i64> {
    sqlx::query_scalar(CAP_VIOLATIONS).fetch_one(pool).await
}

const CAP_VIOLATIONS: &str = "SELECT count(*) FROM (
         SELECT a.workspace_id, a.agent_id, count(*) AS live, max(g.max_concurrency) AS cap
         FROM task_attempts a
         JOIN agents g ON g.workspace_id = a.workspace_id AND g.agent_id = a.agent_id
         WHERE a.status IN ('dispatching', 'running')
         GROUP BY a.workspace_id, a.agent_id) x
     WHERE live > cap";

async fn count(tx: &mut Transaction<'_, Postgres>, sql: &'static str) -> sqlx::Result<i64> {
    sqlx::query_scalar(sql).fetch_one(&mut **tx).await
}

/// Audits the whole database in one consistent snapshot.
pub async fn audit(pool: &PgPool) -> anyhow::Result<AuditReport> {
    let mut tx = pool.begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .execute(&mut *tx)
        .await?;
    let mut r = AuditReport::default();

    let statuses: Vec<(String, i64)> =
        sqlx::query_as("SELECT status, count(*) FROM orchestration_runs GROUP BY status")
            .fetch_all(&mut *tx)
            .await?;
    for (status, n) in statuses {
        r.missions += n;
        if TERMINAL.contains(&status.as_str()) {
            r.terminal += n;
        }
        r.by_status.insert(status, n);
    }
    r.tasks = count(&mut tx, "SELECT count(*) FROM orchestration_tasks").await?;
    r.attempts = count(&mut tx, "SELECT count(*) FROM task_attempts").await?;
    r.live_attempts = count(
        &mut tx,
        "SELECT count(*) FROM task_attempts WHERE status IN ('dispatching', 'running')",
    )
    .await?;
    r.doubled = count(
        &mut tx,
        "SELECT count(*) FROM (SELECT task_id FROM task_attempts WHERE status = 'succeeded'
                               GROUP BY task_id HAVING count(*) > 1) x",
    )
    .await?;
    r.doubled_events = count(
        &mut tx,
        "SELECT count(*) FROM (SELECT task_id FROM orchestration_events
                               WHERE kind = 'task.succeeded' AND task_id IS NOT NULL
                               GROUP BY task_id HAVING count(*) > 1) x",
    )
    .await?;
    r.stale_accepted = count(
        &mut tx,
        "SELECT count(*) FROM task_attempts a JOIN orchestration_tasks t ON t.id = a.task_id
         WHERE a.status = 'succeeded' AND t.current_attempt_id IS DISTINCT FROM a.id",
    )
    .await?;
    r.cap_violations = count(&mut tx, CAP_VIOLATIONS).await?;
    r.event_gaps = count(
        &mut tx,
        "SELECT count(*) FROM (SELECT run_id, count(*) AS n, max(seq) AS top, min(seq) AS low
                               FROM orchestration_events WHERE run_id IS NOT NULL GROUP BY run_id) x
         WHERE n <> top OR low <> 1",
    )
    .await?;
    r.slots_held = count(
        &mut tx,
        "SELECT coalesce(sum(greatest(g.running_count - agent_pending_slots(g.workspace_id, g.agent_id)
                                      - coalesce(l.live, 0), 0)), 0)::bigint
         FROM agents g
         LEFT JOIN (SELECT workspace_id, agent_id, count(*) AS live FROM task_attempts
                    WHERE status IN ('dispatching', 'running')
                    GROUP BY workspace_id, agent_id) l
           ON l.workspace_id = g.workspace_id AND l.agent_id = g.agent_id",
    )
    .await?;

    // Replay: every mission's tasks, then its events, one mission at a time
    // in id order (two streams merged, so memory holds one mission).
    let runs: Vec<(Uuid, String)> =
        sqlx::query_as("SELECT id, status FROM orchestration_runs ORDER BY id")
            .fetch_all(&mut *tx)
            .await?;
    let mut tasks: BTreeMap<Uuid, Vec<(Uuid, String)>> = BTreeMap::new();
    {
        let mut rows = sqlx::query_as::<_, (Uuid, Uuid, String)>(
            "SELECT run_id, id, status FROM orchestration_tasks",
        )
        .fetch(&mut *tx);
        while let Some((run, id, status)) = rows.try_next().await? {
            tasks.entry(run).or_default().push((id, status));
        }
    }
    let mut events = sqlx::query_as::<_, (Uuid, Option<Uuid>, String, Value)>(
        "SELECT run_id, task_id, kind, payload FROM orchestration_events
         WHERE run_id IS NOT NULL ORDER BY run_id, seq",
    )
    .fetch(&mut *tx);
    let mut pending = events.try_next().await?;
    for (run, status) in &runs {
        let mut log = Vec::new();
        while let Some((event_run, task_id, kind, payload)) = &pending {
            if event_run != run {
                break;
            }
            log.push(LoggedEvent {
                task_id: *task_id,
                kind: kind.clone(),
                payload: payload.clone(),
            });
            pending = events.try_next().await?;
        }
        let found = replay_mismatches(
            *run,
            status,
            &log,
            tasks.get(run).map(Vec::as_slice).unwrap_or(&[]),
        );
        r.replay_mismatches += found.len();
        let room = KEPT_MISMATCHES.saturating_sub(r.mismatches.len());
        r.mismatches.extend(found.into_iter().take(room));
    }
    drop(events);
    tx.rollback().await?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ev(task: Option<Uuid>, kind: &str, payload: Value) -> LoggedEvent {
        LoggedEvent {
            task_id: task,
            kind: kind.into(),
            payload,
        }
    }

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn log_of_a_completed_mission() -> Vec<LoggedEvent> {
        vec![
            ev(
                None,
                "mission.status_changed",
                json!({"from": "planning", "to": "executing"}),
            ),
            ev(Some(id(1)), "task.queued", json!({})),
            ev(Some(id(1)), "task.dispatched", json!({})),
            ev(
                Some(id(1)),
                "task.retry_scheduled",
                json!({"status": "retry_wait"}),
            ),
            ev(Some(id(1)), "task.dispatched", json!({"status": "running"})),
            ev(Some(id(1)), "task.succeeded", json!({})),
            ev(Some(id(2)), "task.skipped", json!({})),
            ev(
                None,
                "mission.status_changed",
                json!({"from": "executing", "to": "completed"}),
            ),
        ]
    }

    #[test]
    fn a_log_that_explains_the_tables_has_no_mismatch() {
        let tasks = vec![
            (id(1), "succeeded".to_owned()),
            (id(2), "skipped".to_owned()),
            (id(3), "pending".to_owned()),
        ];
        let found = replay_mismatches(id(9), "completed", &log_of_a_completed_mission(), &tasks);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_table_ahead_of_its_log_is_a_mismatch() {
        // Task 3 has no event, so replay says pending; mission table says failed.
        let tasks = vec![
            (id(1), "succeeded".to_owned()),
            (id(2), "skipped".to_owned()),
            (id(3), "running".to_owned()),
        ];
        let found = replay_mismatches(id(9), "failed", &log_of_a_completed_mission(), &tasks);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("replay says completed, table says failed"));
        assert!(found[1].contains("replay says pending, table says running"));
    }

    #[test]
    fn an_event_whose_named_status_contradicts_its_kind_is_a_mismatch() {
        let mut log = log_of_a_completed_mission();
        log.push(ev(
            Some(id(1)),
            "task.failed",
            json!({"status": "succeeded"}),
        ));
        let found = replay_mismatches(id(9), "completed", &log, &[(id(1), "succeeded".into())]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("task.failed names status succeeded"));
    }

    #[test]
    fn an_empty_log_replays_to_planning() {
        assert!(replay_mismatches(id(9), "planning", &[], &[]).is_empty());
        assert_eq!(replay_mismatches(id(9), "executing", &[], &[]).len(), 1);
    }

    #[test]
    fn figures_and_cleanliness() {
        let mut r = AuditReport {
            missions: 3,
            terminal: 2,
            ..AuditReport::default()
        };
        assert!(r.is_clean());
        assert_eq!(
            r.figures(),
            "missions=3 terminal=2 doubled=0 doubled_events=0 stale_accepted=0 \
             cap_violations=0 event_gaps=0 replay_mismatches=0 slots_held=0"
        );
        r.doubled = 1;
        assert!(!r.is_clean());
        assert!(r.figures().contains(" doubled=1 "));
        assert!(r.summary().contains("VIOLATED"));
    }
}
