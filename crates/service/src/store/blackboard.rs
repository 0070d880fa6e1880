//! SQL of the mission blackboard (`mission_blackboard`).

use serde::Serialize;
use serde_json::Value;
use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

/// One key of a blackboard, as stored and shown. A deleted key is a
/// tombstone: `value` is null and `version` keeps counting.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Entry {
    /// The key.
    pub key: String,
    /// The value (null once deleted).
    #[schema(value_type = Object)]
    pub value: Option<Value>,
    /// Bumped by every write and delete; what a compare-and-set names.
    pub version: i64,
    /// Who wrote it last (`agent:<id>`, `<role>:<token id>`).
    pub updated_by: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// One key, tombstone included.
pub async fn get(conn: &mut PgConnection, run_id: Uuid, key: &str) -> sqlx::Result<Option<Entry>> {
    sqlx::query_as!(
        Entry,
        "SELECT key, value, version, updated_by, updated_at
         FROM mission_blackboard WHERE run_id = $1 AND key = $2",
        run_id,
        key
    )
    .fetch_optional(conn)
    .await
}

/// The live keys whose names start with `prefix`, by name, at most `limit`.
pub async fn list(
    conn: &mut PgConnection,
    run_id: Uuid,
    prefix: &str,
    limit: i64,
) -> sqlx::Result<Vec<Entry>> {
    sqlx::query_as!(
        Entry,
        "SELECT key, value, version, updated_by, updated_at
         FROM mission_blackboard
         WHERE run_id = $1 AND value IS NOT NULL AND starts_with(key, $2)
         ORDER BY key LIMIT $3",
        run_id,
        prefix,
        limit
    )
    .fetch_all(conn)
    .await
}

/// Writes `value` under `key`. With `expected`, only if the key's version is
/// that (0: the key does not exist); `None` when the version did not match.
pub async fn put(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    run_id: Uuid,
    key: &str,
    value: &Value,
    expected: Option<i64>,
    actor: &str,
) -> sqlx::Result<Option<Entry>> {
    match expected {
        None => {
            sqlx::query_as!(
            Entry,
            "INSERT INTO mission_blackboard (run_id, key, workspace_id, value, version, updated_by)
             VALUES ($1, $2, $3, $4, 1, $5)
             ON CONFLICT (run_id, key) DO UPDATE
                SET value = EXCLUDED.value, version = mission_blackboard.version + 1,
                    updated_by = EXCLUDED.updated_by, updated_at = now()
             RETURNING key, value, version, updated_by, updated_at",
            run_id,
            key,
            workspace_id,
            value,
            actor
        )
            .fetch_optional(conn)
            .await
        }
        Some(0) => {
            sqlx::query_as!(
            Entry,
            "INSERT INTO mission_blackboard (run_id, key, workspace_id, value, version, updated_by)
             VALUES ($1, $2, $3, $4, 1, $5)
             ON CONFLICT (run_id, key) DO NOTHING
             RETURNING key, value, version, updated_by, updated_at",
            run_id,
            key,
            workspace_id,
            value,
            actor
        )
            .fetch_optional(conn)
            .await
        }
        Some(version) => {
            sqlx::query_as!(
                Entry,
                "UPDATE mission_blackboard
             SET value = $3, version = version + 1, updated_by = $5, updated_at = now()
             WHERE run_id = $1 AND key = $2 AND version = $4
             RETURNING key, value, version, updated_by, updated_at",
                run_id,
                key,
                value,
                version,
                actor
            )
            .fetch_optional(conn)
            .await
        }
    }
}

/// Deletes `key` (leaves a tombstone), with `expected` as in [`put`];
/// `None` when there was no live key or the version did not match.
pub async fn delete(
    conn: &mut PgConnection,
    run_id: Uuid,
    key: &str,
    expected: Option<i64>,
    actor: &str,
) -> sqlx::Result<Option<Entry>> {
    sqlx::query_as!(
        Entry,
        "UPDATE mission_blackboard
         SET value = NULL, version = version + 1, updated_by = $4, updated_at = now()
         WHERE run_id = $1 AND key = $2 AND value IS NOT NULL
           AND ($3::bigint IS NULL OR version = $3)
         RETURNING key, value, version, updated_by, updated_at",
        run_id,
        key,
        expected,
        actor
    )
    .fetch_optional(conn)
    .await
}

/// The live keys and values of a mission, for a dispatch: at most `limit`
/// keys, newest writes first.
pub async fn snapshot(
    conn: &mut PgConnection,
    run_id: Uuid,
    keys: Option<&[String]>,
    limit: i64,
) -> sqlx::Result<Vec<(String, Value, i64)>> {
    let rows = sqlx::query!(
        r#"SELECT key, value AS "value!", version FROM mission_blackboard
           WHERE run_id = $1 AND value IS NOT NULL
             AND ($2::text[] IS NULL OR key = ANY($2))
           ORDER BY updated_at DESC LIMIT $3"#,
        run_id,
        keys,
        limit
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.key, r.value, r.version))
        .collect())
}
