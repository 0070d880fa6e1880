//! SQL of the mission blackboard (`mission_blackboard`).

use serde::Serialize;
use serde_json::Value;
use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

/// One key of a blackboard, as stored and shown. A deleted key is a
/// tombstone: `value` is null and `version` keeps counting.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = BlackboardEntry)]
pub struct Entry {
    /// The key.
    pub key: String,
    /// The value (null once deleted).
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

/// One key as a claim batch reads it for its dispatches.
#[derive(Debug, Clone)]
pub struct SnapshotRow {
    /// The mission.
    pub run_id: Uuid,
    /// The key.
    pub key: String,
    /// Its value.
    pub value: Value,
    /// Its version.
    pub version: i64,
    /// Among the mission's `recent` most recently written keys.
    pub recent: bool,
}

/// The blackboards of `run_ids` for a batch of dispatches, in one round
/// trip: each mission's `recent` most recently written live keys, plus any
/// of `declared` (the keys the batch's tasks ask for), newest first.
pub async fn snapshots(
    conn: &mut PgConnection,
    run_ids: &[Uuid],
    declared: &[String],
    recent: i64,
) -> sqlx::Result<Vec<SnapshotRow>> {
    sqlx::query_as!(
        SnapshotRow,
        r#"SELECT run_id AS "run_id!", key AS "key!", value AS "value!", version AS "version!",
                  (n <= $3) AS "recent!"
           FROM (SELECT run_id, key, value, version, updated_at,
                        row_number() OVER (PARTITION BY run_id ORDER BY updated_at DESC, key) AS n
                 FROM mission_blackboard
                 WHERE run_id = ANY($1) AND value IS NOT NULL) s
           WHERE n <= $3 OR key = ANY($2)
           ORDER BY run_id, updated_at DESC, key"#,
        run_ids,
        declared,
        recent
    )
    .fetch_all(conn)
    .await
}

/// Most bytes of JSON values one dispatch's snapshot carries; keys past it
/// are left for the `blackboard_*` tools.
pub const SNAPSHOT_MAX_BYTES: usize = 64 * 1024;

/// The keys a task declares in `inputs.blackboard_keys`, if any.
pub fn declared_keys(inputs: &Value) -> Option<Vec<String>> {
    let keys: Vec<String> = inputs
        .get("blackboard_keys")?
        .as_array()?
        .iter()
        .filter_map(|k| k.as_str().map(str::to_owned))
        .collect();
    (!keys.is_empty()).then_some(keys)
}

/// One dispatch's snapshot out of a batch's `rows`: the declared keys, or
/// else the mission's recent ones, newest first, within
/// [`SNAPSHOT_MAX_BYTES`].
pub fn snapshot_for(
    rows: &[SnapshotRow],
    run_id: Uuid,
    declared: Option<&[String]>,
) -> std::collections::BTreeMap<String, coordinator_protocol::BlackboardValue> {
    let mut out = std::collections::BTreeMap::new();
    let mut bytes = 0;
    for r in rows.iter().filter(|r| r.run_id == run_id) {
        let wanted = match declared {
            Some(keys) => keys.contains(&r.key),
            None => r.recent,
        };
        if !wanted {
            continue;
        }
        bytes += r.key.len() + r.value.to_string().len();
        if bytes > SNAPSHOT_MAX_BYTES {
            break;
        }
        out.insert(
            r.key.clone(),
            coordinator_protocol::BlackboardValue {
                value: r.value.clone(),
                version: r.version,
            },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(run: Uuid, key: &str, recent: bool) -> SnapshotRow {
        SnapshotRow {
            run_id: run,
            key: key.into(),
            value: json!(key),
            version: 1,
            recent,
        }
    }

    #[test]
    fn a_snapshot_holds_declared_keys_or_recent_ones_of_its_mission() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let rows = [row(a, "x", true), row(a, "y", false), row(b, "z", true)];
        let recent = snapshot_for(&rows, a, None);
        assert_eq!(recent.keys().collect::<Vec<_>>(), ["x"]);
        let declared = ["y".to_owned()];
        let chosen = snapshot_for(&rows, a, Some(&declared));
        assert_eq!(chosen.keys().collect::<Vec<_>>(), ["y"]);
        assert!(snapshot_for(&rows, Uuid::nil(), None).is_empty());
        assert_eq!(
            declared_keys(&json!({"blackboard_keys": ["k", 3]})),
            Some(vec!["k".to_owned()])
        );
        assert_eq!(declared_keys(&json!({})), None);
    }

    #[test]
    fn a_snapshot_stops_at_its_byte_budget() {
        let a = Uuid::now_v7();
        let big = |k: &str| SnapshotRow {
            value: json!("v".repeat(SNAPSHOT_MAX_BYTES / 2)),
            ..row(a, k, true)
        };
        let rows = [big("1"), big("2"), big("3")];
        assert_eq!(snapshot_for(&rows, a, None).len(), 1);
    }
}
