//! Webhooks and their delivery log (`webhooks`, `webhook_deliveries`).

use serde::Serialize;
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    board,
    events::{self, EventFilter, LogPosition},
};

/// A webhook as the API shows it (never its secret).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct WebhookView {
    /// Id.
    pub id: Uuid,
    /// Where deliveries go.
    pub url: String,
    /// Kinds delivered (`task.*` style prefixes allowed).
    pub events: Vec<String>,
    /// False once deleted.
    pub active: bool,
    /// For an agent's event subscription: the agent (deliveries go to its endpoint).
    pub agent_id: Option<String>,
    /// Only this mission's events.
    pub mission_id: Option<Uuid>,
    /// Only events about agents of this role.
    pub role: Option<String>,
    /// Who created it.
    pub created_by: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// Creates a hook that follows events from now on.
pub async fn create(
    pool: &PgPool,
    workspace_id: Uuid,
    url: &str,
    kinds: &[String],
    secret: &str,
    created_by: &str,
) -> sqlx::Result<WebhookView> {
    // Start at the read horizon: events already visible are history, not news.
    sqlx::query_as!(
        WebhookView,
        r#"INSERT INTO webhooks (id, workspace_id, url, event_kinds, secret, created_by, cursor_xid, cursor_id)
           VALUES ($1, $2, $3, $4, $5, $6,
                   (pg_snapshot_xmin(pg_current_snapshot())::text::bigint - 1)::text::xid8, 9223372036854775807)
           RETURNING id, url, event_kinds AS events, active, agent_id, mission_id, agent_role AS role, created_by, created_at"#,
        Uuid::now_v7(),
        workspace_id,
        url,
        kinds,
        secret,
        created_by
    )
    .fetch_one(pool)
    .await
}

/// What an agent subscribes to: events matching every topic given.
#[derive(Debug, Clone, Default)]
pub struct Topics {
    /// Only this mission's events.
    pub mission_id: Option<Uuid>,
    /// Only events about agents of this role.
    pub role: Option<String>,
    /// Only these kinds (`task.*` prefixes allowed; empty: every kind).
    pub kinds: Vec<String>,
}

/// Creates an agent's event subscription: a hook owned by the agent that
/// delivers to `{endpoint}/v1/events`, following events from now on.
pub async fn subscribe(
    pool: &PgPool,
    workspace_id: Uuid,
    agent_id: &str,
    topics: &Topics,
    secret: &str,
    created_by: &str,
) -> sqlx::Result<Option<WebhookView>> {
    sqlx::query_as!(
        WebhookView,
        r#"INSERT INTO webhooks (id, workspace_id, url, event_kinds, secret, created_by, cursor_xid, cursor_id,
                                 agent_id, mission_id, agent_role)
           SELECT $1, $2, a.endpoint_url || '/v1/events', $4, $5, $6,
                  (pg_snapshot_xmin(pg_current_snapshot())::text::bigint - 1)::text::xid8, 9223372036854775807,
                  a.agent_id, $7, $8
           FROM agents a WHERE a.workspace_id = $2 AND a.agent_id = $3
           RETURNING id, url, event_kinds AS events, active, agent_id, mission_id, agent_role AS role, created_by, created_at"#,
        Uuid::now_v7(),
        workspace_id,
        agent_id,
        &topics.kinds,
        secret,
        created_by,
        topics.mission_id,
        topics.role.as_deref()
    )
    .fetch_optional(pool)
    .await
}

/// An agent's subscriptions, newest first.
pub async fn subscriptions(
    pool: &PgPool,
    workspace_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<Vec<WebhookView>> {
    sqlx::query_as!(
        WebhookView,
        r#"SELECT id, url, event_kinds AS events, active, agent_id, mission_id, agent_role AS role, created_by, created_at
           FROM webhooks WHERE workspace_id = $1 AND agent_id = $2 ORDER BY created_at DESC"#,
        workspace_id,
        agent_id
    )
    .fetch_all(pool)
    .await
}

/// The workspace's hooks, newest first.
pub async fn list(pool: &PgPool, workspace_id: Uuid) -> sqlx::Result<Vec<WebhookView>> {
    sqlx::query_as!(
        WebhookView,
        r#"SELECT id, url, event_kinds AS events, active, agent_id, mission_id, agent_role AS role, created_by, created_at
           FROM webhooks WHERE workspace_id = $1 ORDER BY created_at DESC"#,
        workspace_id
    )
    .fetch_all(pool)
    .await
}

/// One hook.
pub async fn get(pool: &PgPool, workspace_id: Uuid, id: Uuid) -> sqlx::Result<Option<WebhookView>> {
    sqlx::query_as!(
        WebhookView,
        r#"SELECT id, url, event_kinds AS events, active, agent_id, mission_id, agent_role AS role, created_by, created_at
           FROM webhooks WHERE workspace_id = $1 AND id = $2"#,
        workspace_id,
        id
    )
    .fetch_optional(pool)
    .await
}

/// Stops a hook (its pending deliveries are dropped; the log stays). False if unknown.
pub async fn deactivate(pool: &PgPool, workspace_id: Uuid, id: Uuid) -> sqlx::Result<bool> {
    let mut tx = pool.begin().await?;
    let found = sqlx::query!(
        "UPDATE webhooks SET active = false WHERE workspace_id = $1 AND id = $2",
        workspace_id,
        id
    )
    .execute(&mut *tx)
    .await?
    .rows_affected()
        > 0;
    sqlx::query!(
        "UPDATE webhook_deliveries SET status = 'failed', last_error = 'webhook deleted'
         WHERE webhook_id = $1 AND status = 'pending'",
        id
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(found)
}

/// A delivery as the log shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DeliveryView {
    /// Delivery id (also sent as a header; stable across retries).
    pub id: i64,
    /// The event delivered.
    pub event_id: i64,
    /// Its kind.
    pub event_kind: String,
    /// `pending`, `delivered` or `failed`.
    #[schema(value_type = DeliveryStatus)]
    pub status: String,
    /// Tries so far.
    pub attempts: i32,
    /// HTTP status of the last try, if it got one.
    pub last_status: Option<i32>,
    /// Why the last try failed.
    pub last_error: Option<String>,
    /// When the next try is due (pending only).
    #[serde(with = "time::serde::rfc3339")]
    pub next_attempt_at: OffsetDateTime,
    /// When it was queued.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// When the receiver accepted it.
    #[serde(with = "time::serde::rfc3339::option")]
    pub delivered_at: Option<OffsetDateTime>,
}

/// A hook's deliveries, newest first.
pub async fn deliveries(
    pool: &PgPool,
    webhook_id: Uuid,
    limit: i64,
) -> sqlx::Result<Vec<DeliveryView>> {
    sqlx::query_as!(
        DeliveryView,
        r#"SELECT id, event_id, event_kind, status, attempts, last_status, last_error,
                  next_attempt_at, created_at, delivered_at
           FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY id DESC LIMIT $2"#,
        webhook_id,
        limit
    )
    .fetch_all(pool)
    .await
}

/// Moves every active hook's cursor over newly visible events, queueing a
/// delivery for each one it wants; returns how many were queued. Hooks are
/// locked `SKIP LOCKED`, so replicas share the work and never queue twice.
pub async fn fan_out(pool: &PgPool, scan: i64) -> sqlx::Result<usize> {
    let mut tx = pool.begin().await?;
    let hooks = sqlx::query!(
        r#"SELECT id, workspace_id, event_kinds, cursor_xid::text AS "cursor_xid!", cursor_id,
                  mission_id, agent_role
           FROM webhooks WHERE active
           ORDER BY id LIMIT 100
           FOR UPDATE SKIP LOCKED"#
    )
    .fetch_all(&mut *tx)
    .await?;
    let mut queued = 0;
    for h in hooks {
        let after = LogPosition {
            xid: h.cursor_xid.parse().unwrap_or(0),
            id: h.cursor_id,
        };
        let filter = EventFilter {
            kinds: h.event_kinds,
            mission_id: h.mission_id,
            agent_role: h.agent_role,
            ..EventFilter::default()
        };
        let (page, reached) =
            events::list_for_workspace(&mut *tx, h.workspace_id, after, &filter, scan, usize::MAX)
                .await?;
        if reached == after {
            continue;
        }
        let task_ids: Vec<Uuid> = page.iter().filter_map(|e| e.event.task_id).collect();
        let cards = board::by_ids(&mut *tx, h.workspace_id, &[], &task_ids).await?;
        let mut ids = Vec::with_capacity(page.len());
        let mut kinds = Vec::with_capacity(page.len());
        let mut bodies = Vec::with_capacity(page.len());
        for e in page {
            let card = e
                .event
                .task_id
                .and_then(|t| cards.iter().find(|c| c.task_id == Some(t)));
            ids.push(e.event.id);
            kinds.push(e.event.kind.clone());
            bodies.push(json!({ "webhook_id": h.id, "event": e.event, "card": card }));
        }
        queued += sqlx::query!(
            "INSERT INTO webhook_deliveries (webhook_id, event_id, event_kind, body)
             SELECT $1, * FROM UNNEST($2::bigint[], $3::text[], $4::jsonb[])
             ON CONFLICT (webhook_id, event_id) DO NOTHING",
            h.id,
            &ids,
            &kinds,
            &bodies as &[Value]
        )
        .execute(&mut *tx)
        .await?
        .rows_affected() as usize;
        sqlx::query!(
            "UPDATE webhooks SET cursor_xid = $2::text::xid8, cursor_id = $3 WHERE id = $1",
            h.id,
            reached.xid.to_string(),
            reached.id
        )
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(queued)
}

/// A delivery claimed for sending.
#[derive(Debug, Clone)]
pub struct DueDelivery {
    /// Delivery id.
    pub id: i64,
    /// Where to.
    pub url: String,
    /// Signing secret.
    pub secret: String,
    /// Event kind (a header).
    pub event_kind: String,
    /// What to send.
    pub body: Value,
    /// Tries before this one.
    pub attempts: i32,
}

/// Claims up to `limit` due deliveries, leasing them for `lease_secs` so no
/// other replica sends them meanwhile.
pub async fn claim_due(
    pool: &PgPool,
    limit: i64,
    lease_secs: f64,
) -> sqlx::Result<Vec<DueDelivery>> {
    sqlx::query_as!(
        DueDelivery,
        r#"UPDATE webhook_deliveries d
           SET next_attempt_at = now() + make_interval(secs => $2)
           FROM webhooks w
           WHERE w.id = d.webhook_id AND w.active AND d.id IN (
               SELECT id FROM webhook_deliveries
               WHERE status = 'pending' AND next_attempt_at <= now()
               ORDER BY id LIMIT $1
               FOR UPDATE SKIP LOCKED)
           RETURNING d.id, w.url, w.secret, d.event_kind, d.body, d.attempts"#,
        limit,
        lease_secs
    )
    .fetch_all(pool)
    .await
}

/// Records a try: delivered, retry after `retry_in_secs`, or (None) failed for good.
pub async fn record_try(
    pool: &PgPool,
    id: i64,
    delivered: bool,
    http_status: Option<i32>,
    error: Option<&str>,
    retry_in_secs: Option<f64>,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = $2, last_error = $3,
                status = CASE WHEN $4 THEN 'delivered' WHEN $5::float8 IS NULL THEN 'failed' ELSE 'pending' END,
                delivered_at = CASE WHEN $4 THEN now() END,
                next_attempt_at = CASE WHEN $5::float8 IS NULL THEN next_attempt_at
                                       ELSE now() + make_interval(secs => $5) END
         WHERE id = $1",
        id,
        http_status,
        error,
        delivered,
        retry_in_secs
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Deletes up to `limit` finished deliveries older than `cutoff`.
pub async fn prune_deliveries(
    conn: &mut PgConnection,
    cutoff: OffsetDateTime,
    limit: i64,
) -> sqlx::Result<u64> {
    let done = sqlx::query!(
        "DELETE FROM webhook_deliveries WHERE id IN (
             SELECT id FROM webhook_deliveries WHERE created_at < $1 AND status <> 'pending' LIMIT $2)",
        cutoff,
        limit
    )
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}

/// Where a webhook delivery stands (the OpenAPI schema of `status`).
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// Not accepted yet; tried again at `next_attempt_at`.
    Pending,
    /// The receiver accepted it (2xx).
    Delivered,
    /// Given up on (retries exhausted, or the webhook was deleted).
    Failed,
}
