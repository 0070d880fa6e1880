//! SQL of organisation specs: one validated spec per workspace, the live
//! role counts cardinality is judged on, and the per-workspace lock that
//! makes "count, then add an agent" race-free.

use std::collections::BTreeMap;

use serde::Serialize;
use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

use coordinator_core::organisation::OrgSpec;

/// A stored spec.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SpecRow {
    /// The spec.
    pub spec: OrgSpec,
    /// Optimistic version.
    pub version: i64,
    /// Who uploaded it.
    pub updated_by: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// The workspace's spec, if any. A stored document that no longer parses
/// (it was validated on upload, so only a code change can cause that) reads
/// as none rather than stopping the engine.
pub async fn get(conn: &mut PgConnection, workspace_id: Uuid) -> sqlx::Result<Option<SpecRow>> {
    let row = sqlx::query!(
        "SELECT spec, version, updated_by, updated_at FROM org_specs WHERE workspace_id = $1",
        workspace_id
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.and_then(|r| {
        Some(SpecRow {
            spec: parse_stored(workspace_id, r.spec)?,
            version: r.version,
            updated_by: r.updated_by,
            updated_at: r.updated_at,
        })
    }))
}

fn parse_stored(workspace_id: Uuid, doc: serde_json::Value) -> Option<OrgSpec> {
    match serde_json::from_value(doc) {
        Ok(spec) => Some(spec),
        Err(e) => {
            tracing::warn!(workspace = %workspace_id, error = %e, "stored organisation spec does not parse; ignored");
            None
        }
    }
}

/// The specs of several workspaces (the engine's claim batch), by workspace.
pub async fn specs_for(
    conn: &mut PgConnection,
    workspaces: &[Uuid],
) -> sqlx::Result<BTreeMap<Uuid, OrgSpec>> {
    let rows = sqlx::query!(
        "SELECT workspace_id, spec FROM org_specs WHERE workspace_id = ANY($1)",
        workspaces
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|r| Some((r.workspace_id, parse_stored(r.workspace_id, r.spec)?)))
        .collect())
}

/// Creates or replaces the spec. With `expected`, only if the stored
/// version is that one (0: only if there is none). Returns the new version,
/// or `None` when the expectation failed.
pub async fn put(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    spec: &OrgSpec,
    expected: Option<i64>,
    actor: &str,
) -> sqlx::Result<Option<i64>> {
    let doc = serde_json::to_value(spec).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    match expected {
        // Only if there is none yet.
        Some(0) => {
            sqlx::query_scalar!(
                "INSERT INTO org_specs (workspace_id, spec, updated_by) VALUES ($1, $2, $3)
                 ON CONFLICT (workspace_id) DO NOTHING RETURNING version",
                workspace_id,
                doc,
                actor
            )
            .fetch_optional(conn)
            .await
        }
        // Only if the stored one is that version.
        Some(v) => {
            sqlx::query_scalar!(
                "UPDATE org_specs SET spec = $2, updated_by = $3, version = version + 1, updated_at = now()
                 WHERE workspace_id = $1 AND version = $4 RETURNING version",
                workspace_id,
                doc,
                actor,
                v
            )
            .fetch_optional(conn)
            .await
        }
        None => sqlx::query_scalar!(
            "INSERT INTO org_specs (workspace_id, spec, updated_by) VALUES ($1, $2, $3)
             ON CONFLICT (workspace_id) DO UPDATE
             SET spec = EXCLUDED.spec, updated_by = EXCLUDED.updated_by,
                 version = org_specs.version + 1, updated_at = now()
             RETURNING version",
            workspace_id,
            doc,
            actor
        )
        .fetch_optional(conn)
        .await,
    }
}

/// Removes the spec; true if there was one.
pub async fn delete(conn: &mut PgConnection, workspace_id: Uuid) -> sqlx::Result<bool> {
    let r = sqlx::query!(
        "DELETE FROM org_specs WHERE workspace_id = $1",
        workspace_id
    )
    .execute(conn)
    .await?;
    Ok(r.rows_affected() > 0)
}

/// Live (neither offline nor retired) agents per role, roles in lower case.
pub async fn live_roles(
    conn: &mut PgConnection,
    workspace_id: Uuid,
) -> sqlx::Result<BTreeMap<String, i64>> {
    let rows = sqlx::query!(
        r#"SELECT lower(role) AS "role!", count(*) AS "n!" FROM agents
           WHERE workspace_id = $1 AND status NOT IN ('offline', 'unreachable', 'retired') GROUP BY lower(role)"#,
        workspace_id
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.role, r.n)).collect())
}

/// Serialises adding agents to a workspace's roles (registration waits).
pub async fn lock_roles(conn: &mut PgConnection, workspace_id: Uuid) -> sqlx::Result<()> {
    // Namespaced so it cannot collide with other advisory locks.
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(hashtextextended('org-roles:' || $1::text, 0))",
        workspace_id.to_string()
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Like [`lock_roles`] without waiting (the engine's claim never waits):
/// false when someone else holds it.
pub async fn try_lock_roles(conn: &mut PgConnection, workspace_id: Uuid) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT pg_try_advisory_xact_lock(hashtextextended('org-roles:' || $1::text, 0)) AS "ok!""#,
        workspace_id.to_string()
    )
    .fetch_one(conn)
    .await
}

/// Live agents of a workspace as (agent id, role), by id.
pub async fn live_agents(
    conn: &mut PgConnection,
    workspace_id: Uuid,
) -> sqlx::Result<Vec<(String, String)>> {
    let rows = sqlx::query!(
        "SELECT agent_id, role FROM agents
         WHERE workspace_id = $1 AND status NOT IN ('offline', 'unreachable', 'retired') ORDER BY agent_id",
        workspace_id
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.agent_id, r.role)).collect())
}
