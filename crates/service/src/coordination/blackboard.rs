//! The mission blackboard: state the agents of one mission share (seed 003's
//! `update_swarm_shared_state`). Keys are versioned; a write or delete may
//! name the version it read (compare-and-set), and a stale one is refused
//! with the current version, so two agents never overwrite each other
//! unknowingly. Every write and delete is an event in the same transaction.

use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use coordinator_core::{invalid::Invalid, text::Text};
use coordinator_protocol::agent_events::{BlackboardDeleted, BlackboardWritten};

use crate::{
    auth::Principal,
    domain::MissionStatus,
    store::{
        blackboard::{self as store, Entry},
        events::{self, WorkspaceEvent},
        missions,
    },
};

/// Largest value, in bytes of JSON.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
/// Longest key, in characters.
pub const MAX_KEY_CHARS: usize = 200;
/// Most keys a listing returns.
pub const MAX_LIST: i64 = 500;

/// Why a blackboard call failed.
#[derive(Debug, thiserror::Error)]
pub enum BlackboardError {
    /// A field of the request is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// No such mission in the workspace.
    #[error("no mission {0}")]
    UnknownMission(Uuid),
    /// The key does not exist (or was deleted).
    #[error("the blackboard of mission {mission} has no key '{key}'")]
    NoKey {
        /// The mission.
        mission: Uuid,
        /// The key.
        key: String,
    },
    /// The version named is not the key's version now.
    #[error(
        "'{key}' is at version {current}, not {expected}: read it again and retry with the new version"
    )]
    VersionConflict {
        /// The key.
        key: String,
        /// The version the caller named.
        expected: i64,
        /// The key's version now (0: absent).
        current: i64,
    },
    /// The mission has ended: its blackboard is read-only.
    #[error("mission {mission} is {status}: its blackboard can be read, not changed")]
    MissionFinished {
        /// The mission.
        mission: Uuid,
        /// Its status.
        status: String,
    },
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// A key: 1–200 characters without surrounding spaces or control characters.
pub const KEY: Text = Text::required(MAX_KEY_CHARS).trimmed().without_control();

/// Checks a key against [`KEY`].
pub fn validate_key(key: &str) -> Result<(), Invalid> {
    KEY.check("key", key)
}

/// Checks a value: any JSON but null, at most [`MAX_VALUE_BYTES`].
pub fn validate_value(value: &Value) -> Result<(), Invalid> {
    if value.is_null() {
        return Err(Invalid::new(
            "value",
            "value must not be null (blackboard_delete removes a key)",
        ));
    }
    if value.to_string().len() > MAX_VALUE_BYTES {
        return Err(Invalid::new(
            "value",
            format!("value must be at most {MAX_VALUE_BYTES} bytes of JSON"),
        ));
    }
    Ok(())
}

/// Checks an expected version: 0 (absent) or more.
fn validate_expected(expected: Option<i64>) -> Result<(), Invalid> {
    match expected {
        Some(v) if v < 0 => Err(Invalid::new(
            "expected_version",
            "expected_version must be 0 (the key must not exist) or a version read before",
        )),
        _ => Ok(()),
    }
}

/// The mission's status, or `UnknownMission`.
async fn mission_status(
    pool: &PgPool,
    who: &Principal,
    mission: Uuid,
) -> Result<MissionStatus, BlackboardError> {
    let row = missions::get(pool, who.workspace_id, mission)
        .await?
        .ok_or(BlackboardError::UnknownMission(mission))?;
    Ok(row.status.parse().unwrap_or(MissionStatus::Failed))
}

/// Refuses changes to a finished mission's blackboard.
async fn writable(pool: &PgPool, who: &Principal, mission: Uuid) -> Result<(), BlackboardError> {
    let status = mission_status(pool, who, mission).await?;
    if status.is_terminal() {
        return Err(BlackboardError::MissionFinished {
            mission,
            status: status.as_str().to_owned(),
        });
    }
    Ok(())
}

/// One key. A missing key is `NoKey`; a deleted one too (its tombstone's
/// version is in `current` of a later conflict).
pub async fn read(
    pool: &PgPool,
    who: &Principal,
    mission: Uuid,
    key: &str,
) -> Result<Entry, BlackboardError> {
    validate_key(key)?;
    mission_status(pool, who, mission).await?;
    let mut conn = pool.acquire().await?;
    store::get(&mut conn, mission, key)
        .await?
        .filter(|e| e.value.is_some())
        .ok_or_else(|| BlackboardError::NoKey {
            mission,
            key: key.to_owned(),
        })
}

/// The live keys starting with `prefix`, by name.
pub async fn list(
    pool: &PgPool,
    who: &Principal,
    mission: Uuid,
    prefix: &str,
    limit: i64,
) -> Result<Vec<Entry>, BlackboardError> {
    mission_status(pool, who, mission).await?;
    let mut conn = pool.acquire().await?;
    Ok(store::list(&mut conn, mission, prefix, limit.clamp(1, MAX_LIST)).await?)
}

/// Writes a key (a compare-and-set when `expected` is given) and records
/// `blackboard.written`.
pub async fn write(
    pool: &PgPool,
    who: &Principal,
    mission: Uuid,
    key: &str,
    value: Value,
    expected: Option<i64>,
) -> Result<Entry, BlackboardError> {
    validate_key(key)?;
    validate_value(&value)?;
    validate_expected(expected)?;
    writable(pool, who, mission).await?;
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let Some(entry) = store::put(
        &mut tx,
        who.workspace_id,
        mission,
        key,
        &value,
        expected,
        &actor,
    )
    .await?
    else {
        let current = store::get(&mut tx, mission, key)
            .await?
            .map_or(0, |e| e.version);
        return Err(BlackboardError::VersionConflict {
            key: key.to_owned(),
            expected: expected.unwrap_or_default(),
            current,
        });
    };
    let payload = BlackboardWritten {
        key: key.to_owned(),
        version: entry.version,
        value,
        expected_version: expected,
    };
    let task = who.attempt.map(|a| a.task_id);
    events::record(
        &mut tx,
        who.workspace_id,
        WorkspaceEvent::new(Some(mission), task, &actor, &payload),
    )
    .await?;
    tx.commit().await?;
    Ok(entry)
}

/// Deletes a key (a compare-and-set when `expected` is given) and records
/// `blackboard.deleted`.
pub async fn delete(
    pool: &PgPool,
    who: &Principal,
    mission: Uuid,
    key: &str,
    expected: Option<i64>,
) -> Result<Entry, BlackboardError> {
    validate_key(key)?;
    validate_expected(expected)?;
    writable(pool, who, mission).await?;
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let Some(entry) = store::delete(&mut tx, mission, key, expected, &actor).await? else {
        let current = store::get(&mut tx, mission, key).await?;
        return Err(match (current, expected) {
            (Some(e), Some(expected)) if e.value.is_some() => BlackboardError::VersionConflict {
                key: key.to_owned(),
                expected,
                current: e.version,
            },
            _ => BlackboardError::NoKey {
                mission,
                key: key.to_owned(),
            },
        });
    };
    let payload = BlackboardDeleted {
        key: key.to_owned(),
        version: entry.version,
        expected_version: expected,
    };
    let task = who.attempt.map(|a| a.task_id);
    events::record(
        &mut tx,
        who.workspace_id,
        WorkspaceEvent::new(Some(mission), task, &actor, &payload),
    )
    .await?;
    tx.commit().await?;
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_checked() {
        assert!(validate_key("plan/outline").is_ok());
        assert!(validate_key("").is_err());
        assert!(validate_key(" padded").is_err());
        assert!(validate_key("a\nb").is_err());
        assert!(validate_key(&"k".repeat(MAX_KEY_CHARS)).is_ok());
        assert!(validate_key(&"k".repeat(MAX_KEY_CHARS + 1)).is_err());
    }

    #[test]
    fn values_are_checked() {
        assert!(validate_value(&json!({"a": 1})).is_ok());
        assert!(validate_value(&json!(3)).is_ok());
        assert!(validate_value(&Value::Null).is_err());
        assert!(validate_value(&json!("x".repeat(MAX_VALUE_BYTES))).is_err());
        assert!(validate_expected(Some(-1)).is_err());
        assert!(validate_expected(Some(0)).is_ok());
    }
}
