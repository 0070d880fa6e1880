//! The append-only event log (`orchestration_events`).
//!
//! Mission events get a gap-free per-mission `seq`, allocated by bumping the
//! run's `event_seq` in the same statement: that takes the run's row lock, so
//! a mission's events are numbered in commit order. Event kinds are
//! [`EventKind`] (in `coordinator-protocol`), catalogued in `docs/events.md`.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

pub use coordinator_protocol::{EventKind, EventPayload, event_payloads as payloads};

/// An event about to be written.
#[derive(Debug)]
pub struct NewEvent<'a> {
    /// The mission.
    pub run_id: Uuid,
    /// The task, if it is about one.
    pub task_id: Option<Uuid>,
    /// The attempt, if it is about one.
    pub attempt_id: Option<Uuid>,
    /// What happened.
    pub kind: EventKind,
    /// Who caused it (`engine:<replica>`, `admin:…`, `agent:…`).
    pub actor: &'a str,
    /// Details.
    pub payload: Value,
}

impl<'a> NewEvent<'a> {
    /// An event with a typed payload, written under the payload's kind.
    pub fn new<P: EventPayload>(
        run_id: Uuid,
        task_id: Option<Uuid>,
        attempt_id: Option<Uuid>,
        actor: &'a str,
        payload: &P,
    ) -> Self {
        let (kind, payload) = payload.to_event();
        NewEvent {
            run_id,
            task_id,
            attempt_id,
            kind,
            actor,
            payload,
        }
    }
}

/// Appends a mission event; returns its per-mission sequence number.
pub async fn append(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    ev: NewEvent<'_>,
) -> sqlx::Result<i64> {
    sqlx::query_scalar!(
        r#"WITH s AS (
               UPDATE orchestration_runs SET event_seq = event_seq + 1
               WHERE id = $2 AND workspace_id = $1
               RETURNING event_seq
           )
           INSERT INTO orchestration_events (workspace_id, run_id, seq, task_id, attempt_id, kind, actor, payload)
           SELECT $1, $2, s.event_seq, $3, $4, $5, $6, $7 FROM s
           RETURNING seq AS "seq!""#,
        workspace_id,
        ev.run_id,
        ev.task_id,
        ev.attempt_id,
        ev.kind.as_str(),
        ev.actor,
        ev.payload
    )
    .fetch_one(conn)
    .await
}

/// An event of the workspace that may or may not belong to a mission
/// (messages, reservations, decisions, contractors…).
#[derive(Debug)]
pub struct WorkspaceEvent<'a> {
    /// The mission, if it is about one (then it also gets a `seq`).
    pub mission_id: Option<Uuid>,
    /// The task, if it is about one.
    pub task_id: Option<Uuid>,
    /// What happened.
    pub kind: EventKind,
    /// Who caused it.
    pub actor: &'a str,
    /// Details.
    pub payload: Value,
}

impl<'a> WorkspaceEvent<'a> {
    /// An event with a typed payload, written under the payload's kind.
    pub fn new<P: EventPayload>(
        mission_id: Option<Uuid>,
        task_id: Option<Uuid>,
        actor: &'a str,
        payload: &P,
    ) -> Self {
        let (kind, payload) = payload.to_event();
        WorkspaceEvent {
            mission_id,
            task_id,
            kind,
            actor,
            payload,
        }
    }
}

/// Appends an event to the workspace log: a mission event (with its `seq`)
/// when it names a mission, otherwise a workspace event without one.
pub async fn record(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    ev: WorkspaceEvent<'_>,
) -> sqlx::Result<()> {
    if let Some(run_id) = ev.mission_id {
        append(
            conn,
            workspace_id,
            NewEvent {
                run_id,
                task_id: ev.task_id,
                attempt_id: None,
                kind: ev.kind,
                actor: ev.actor,
                payload: ev.payload,
            },
        )
        .await?;
        return Ok(());
    }
    sqlx::query!(
        "INSERT INTO orchestration_events (workspace_id, task_id, kind, actor, payload)
         VALUES ($1, $2, $3, $4, $5)",
        workspace_id,
        ev.task_id,
        ev.kind.as_str(),
        ev.actor,
        ev.payload
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// An event as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct EventView {
    /// Global id (also the SSE id).
    pub id: i64,
    /// Gap-free position within the mission (`None` for a workspace event
    /// that belongs to no mission, such as a reservation or a message).
    pub seq: Option<i64>,
    /// The mission, if any.
    pub mission_id: Option<Uuid>,
    /// The task, if any.
    pub task_id: Option<Uuid>,
    /// The attempt, if any.
    pub attempt_id: Option<Uuid>,
    /// What happened.
    pub kind: String,
    /// Who caused it.
    pub actor: String,
    /// Details.
    pub payload: Value,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A mission's events with `seq > after`, oldest first.
pub async fn list_for_mission(
    pool: &PgPool,
    workspace_id: Uuid,
    run_id: Uuid,
    after: i64,
    limit: i64,
) -> sqlx::Result<Vec<EventView>> {
    sqlx::query_as!(
        EventView,
        r#"SELECT id, seq, run_id AS mission_id, task_id, attempt_id, kind, actor, payload, created_at
           FROM orchestration_events
           WHERE workspace_id = $1 AND run_id = $2 AND seq > $3
           ORDER BY seq
           LIMIT $4"#,
        workspace_id,
        run_id,
        after,
        limit
    )
    .fetch_all(pool)
    .await
}

/// A position in the workspace's commit-ordered event log: the writing
/// transaction's id and the event id. Everything at or before it has been seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogPosition {
    /// Transaction id (`xid8`) of the last event seen.
    pub xid: i64,
    /// Id of the last event seen.
    pub id: i64,
}

/// Whether `k` names an event kind, or a kind prefix ending in `*` (`task.*`):
/// what readers and webhooks may filter on.
pub fn is_kind_pattern(k: &str) -> bool {
    kind_pattern_problem(k).is_none()
}

/// Why `k` is not a kind (or `prefix*`) that names an event kind of the
/// catalogue, in words that list what is allowed; `None` when it is one.
pub fn kind_pattern_problem(k: &str) -> Option<String> {
    use coordinator_protocol::events::EventKind;
    let name = k.strip_suffix('*').unwrap_or(k);
    let matches = if k.ends_with('*') {
        EventKind::ALL.iter().any(|e| e.as_str().starts_with(name))
    } else {
        EventKind::parse(k).is_some()
    };
    if !k.is_empty() && name.len() <= 64 && matches {
        return None;
    }
    let mut prefixes: Vec<&str> = EventKind::ALL
        .iter()
        .filter_map(|e| e.as_str().split_once('.').map(|(p, _)| p))
        .collect();
    prefixes.sort_unstable();
    prefixes.dedup();
    let prefixes: Vec<String> = prefixes.iter().map(|p| format!("{p}.*")).collect();
    Some(format!(
        "'{k}' is not an event kind; expected a kind of docs/events.md (e.g. task.succeeded) \
         or a prefix: {}",
        prefixes.join(", ")
    ))
}

/// Which workspace events a reader wants.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// Only this mission's.
    pub mission_id: Option<Uuid>,
    /// Only these kinds (empty: all). A trailing `*` matches a prefix, e.g. `task.*`.
    pub kinds: Vec<String>,
    /// Only events about this agent (its attempts, or naming it).
    pub agent_id: Option<String>,
    /// Only events about an agent of this role (its attempts, or naming it).
    pub agent_role: Option<String>,
}

impl EventFilter {
    /// Kinds split into exact names and `prefix.` patterns, as the query takes them.
    fn kind_parts(&self) -> (Vec<String>, Vec<String>) {
        let (prefixes, exact): (Vec<&String>, Vec<&String>) =
            self.kinds.iter().partition(|k| k.ends_with('*'));
        (
            exact.into_iter().cloned().collect(),
            prefixes
                .into_iter()
                .map(|p| p.trim_end_matches('*').to_owned())
                .collect(),
        )
    }
}

/// A workspace event with its log position.
#[derive(Debug, Clone)]
pub struct LoggedEvent {
    /// Where it sits in the commit-ordered log.
    pub position: LogPosition,
    /// The event.
    pub event: EventView,
}

/// Events of the workspace after `after`, in commit order, that match
/// `filter`; only events of transactions older than every transaction still
/// running are returned, so later reads never find one behind the cursor.
/// At most `scan` events are examined and `limit` returned. Also returns the
/// position read up to, which moves past events the filter skipped, so a
/// rare filter does not rescan them.
pub async fn list_for_workspace(
    db: impl sqlx::PgExecutor<'_>,
    workspace_id: Uuid,
    after: LogPosition,
    filter: &EventFilter,
    scan: i64,
    limit: usize,
) -> sqlx::Result<(Vec<LoggedEvent>, LogPosition)> {
    let (exact, prefixes) = filter.kind_parts();
    let any_kind = filter.kinds.is_empty();
    // Scan a bounded window of the log and filter it here in SQL, so the
    // cursor can advance over non-matching events by the window's end.
    let rows = sqlx::query!(
        r#"WITH horizon AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
           window_ AS (
               SELECT e.id, e.xid
               FROM orchestration_events e, horizon h
               WHERE e.workspace_id = $1
                 AND (e.xid, e.id) > ($2::text::xid8, $3::bigint)
                 AND e.xid < h.xmin
               ORDER BY e.xid, e.id
               LIMIT $4
           )
           SELECT e.id, e.xid::text AS "xid!", e.seq, e.run_id, e.task_id, e.attempt_id, e.kind,
                  e.actor, e.payload, e.created_at,
                  -- Events without a mission or an agent compare as NULL, not false.
                  COALESCE((e.run_id = $5 OR $5::uuid IS NULL)
                   AND ($6 OR e.kind = ANY($7) OR EXISTS (SELECT 1 FROM unnest($8::text[]) p WHERE starts_with(e.kind, p)))
                   AND ($9::text IS NULL OR e.payload->>'agent_id' = $9
                        OR EXISTS (SELECT 1 FROM task_attempts a WHERE a.id = e.attempt_id AND a.agent_id = $9))
                   AND ($10::text IS NULL OR EXISTS (
                        SELECT 1 FROM agents ag
                        WHERE ag.workspace_id = e.workspace_id AND ag.role = $10
                          AND (ag.agent_id = e.payload->>'agent_id'
                               OR ag.agent_id = (SELECT a.agent_id FROM task_attempts a WHERE a.id = e.attempt_id))))
                  , false) AS "wanted!"
           FROM window_ w JOIN orchestration_events e ON e.id = w.id
           ORDER BY w.xid, w.id"#,
        workspace_id,
        after.xid.to_string(),
        after.id,
        scan,
        filter.mission_id,
        any_kind,
        &exact,
        &prefixes,
        filter.agent_id.as_deref(),
        filter.agent_role.as_deref(),
    )
    .fetch_all(db)
    .await?;
    let mut reached = after;
    let mut out = Vec::new();
    for r in rows {
        if out.len() == limit {
            break;
        }
        let position = LogPosition {
            xid: r.xid.parse().unwrap_or(reached.xid),
            id: r.id,
        };
        reached = position;
        if r.wanted {
            out.push(LoggedEvent {
                position,
                event: EventView {
                    id: r.id,
                    seq: r.seq,
                    mission_id: r.run_id,
                    task_id: r.task_id,
                    attempt_id: r.attempt_id,
                    kind: r.kind,
                    actor: r.actor,
                    payload: r.payload,
                    created_at: r.created_at,
                },
            });
        }
    }
    Ok((out, reached))
}

/// The log position of event `id` in the workspace, to resume after it.
/// `None` when it does not exist (never did, or was pruned).
pub async fn position_of(
    pool: &PgPool,
    workspace_id: Uuid,
    id: i64,
) -> sqlx::Result<Option<LogPosition>> {
    let xid = sqlx::query_scalar!(
        r#"SELECT xid::text AS "xid!" FROM orchestration_events WHERE workspace_id = $1 AND id = $2"#,
        workspace_id,
        id
    )
    .fetch_optional(pool)
    .await?;
    Ok(xid
        .and_then(|x| x.parse().ok())
        .map(|xid| LogPosition { xid, id }))
}

/// The end of the workspace's log as a reader sees it now: its newest
/// event, once every transaction older than that event has ended (the
/// readers' horizon has passed it), so nothing can still commit before it.
/// A stream that starts here gets exactly what commits next. While an older
/// transaction runs (another workspace's bulk write, say) this waits for it
/// up to [`TAIL_WAIT`], then starts at the horizon: the events committed
/// since the oldest running transaction began are sent too, never the whole log.
pub async fn tail(pool: &PgPool, workspace_id: Uuid) -> sqlx::Result<LogPosition> {
    let newest: Option<(String, i64)> = sqlx::query_as(
        "SELECT xid::text, id FROM orchestration_events
         WHERE workspace_id = $1 ORDER BY xid DESC, id DESC LIMIT 1",
    )
    .bind(workspace_id)
    .fetch_optional(pool)
    .await?;
    let Some(newest) = newest.and_then(|(x, id)| x.parse().ok().map(|xid| LogPosition { xid, id }))
    else {
        return Ok(LogPosition::default());
    };
    let deadline = tokio::time::Instant::now() + TAIL_WAIT;
    loop {
        let horizon: i64 =
            sqlx::query_scalar("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
                .fetch_one(pool)
                .await?;
        if horizon > newest.xid {
            return Ok(newest);
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(LogPosition {
                xid: horizon - 1,
                id: i64::MAX,
            });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// How long [`tail`] waits for older transactions to end.
pub const TAIL_WAIT: Duration = Duration::from_secs(3);

/// The position just before the oldest retained event with an id above
/// `id`: where a reader resumes when the event it last saw has been pruned
/// (or was never the workspace's); the tail when none is newer.
pub async fn position_after_pruned(
    pool: &PgPool,
    workspace_id: Uuid,
    id: i64,
) -> sqlx::Result<LogPosition> {
    let xid = sqlx::query_scalar!(
        r#"SELECT min(xid::text::bigint) AS "xid" FROM orchestration_events WHERE workspace_id = $1 AND id > $2"#,
        workspace_id,
        id
    )
    .fetch_one(pool)
    .await?;
    match xid {
        // Everything of that transaction (and later) is still to be read.
        Some(x) => Ok(LogPosition {
            xid: x - 1,
            id: i64::MAX,
        }),
        // Nothing kept is newer (a cursor past the newest event): from now
        // on, never the whole log again.
        None => tail(pool, workspace_id).await,
    }
}

/// Deletes up to `limit` events older than `cutoff`; returns how many.
pub async fn prune_older_than(
    conn: &mut PgConnection,
    cutoff: OffsetDateTime,
    limit: i64,
) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        "DELETE FROM orchestration_events WHERE id IN (
             SELECT id FROM orchestration_events WHERE created_at < $1 LIMIT $2)",
        cutoff,
        limit
    )
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}
