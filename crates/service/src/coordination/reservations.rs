//! Advisory reservations of a work surface: a scope pattern held by one
//! agent for a time (RFC-001 §6).
//!
//! Scopes are patterns where `*` matches any run of characters (slashes
//! included) and `?` one character, e.g. `src/api/*` or `kanban-surface`.
//! Two scopes conflict when some name matches both. An active reservation
//! past its `expires_at` is stale: the next reservation of an overlapping
//! scope takes it over (it becomes `expired`), and the reconcile sweep marks
//! the rest.

use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

use coordinator_core::{invalid::Invalid, text::Text};

use super::messages::LinkageError;
use crate::store::{
    events::{self, EventPayload, WorkspaceEvent, payloads},
    reservations::{self as store, ReservationView},
};

pub use coordinator_core::reservations::*;

/// Why reserving or releasing a scope failed.
#[derive(Debug, thiserror::Error)]
pub enum ReservationError {
    /// A field of the request is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The holder is not a registered agent.
    #[error("no agent '{agent_id}' is registered")]
    UnknownAgent {
        /// The named agent.
        agent_id: String,
    },
    /// The linked mission or task is wrong.
    #[error(transparent)]
    Linkage(#[from] LinkageError),
    /// Another agent holds an overlapping scope that has not expired.
    #[error(
        "'{scope}' overlaps '{}', reserved by '{}' until {}",
        .held.scope,
        .held.agent_id,
        rfc3339(.held.expires_at).unwrap_or_default()
    )]
    Overlaps {
        /// The scope asked for.
        scope: String,
        /// The reservation in the way.
        held: Box<ReservationView>,
    },
    /// No such reservation in the workspace.
    #[error("no reservation {id}")]
    NotFound {
        /// The reservation.
        id: Uuid,
    },
    /// An agent may release only its own reservation.
    #[error(
        "reservation {id} is held by '{holder}'; only its holder (or an operator) may release it"
    )]
    NotYours {
        /// The reservation.
        id: Uuid,
        /// Its holder.
        holder: String,
    },
    /// The reservation is released or expired already.
    #[error("reservation {id} is {state}, not active")]
    NotActive {
        /// The reservation.
        id: Uuid,
        /// Its state.
        state: String,
    },
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// An instant as RFC 3339 (`None` if it cannot be formatted).
pub fn rfc3339(t: OffsetDateTime) -> Option<String> {
    t.format(&time::format_description::well_known::Rfc3339)
        .ok()
}

/// A scope: 1–256 characters, not blank, no control characters.
pub const SCOPE: Text = Text::required(256).without_control();

/// A reservation's note.
pub const NOTE: Text = Text::optional(1000);

/// Checks a scope against [`SCOPE`].
pub fn validate_scope(scope: &str) -> Result<(), Invalid> {
    SCOPE.check("scope", scope)
}

/// What [`reserve`] did.
#[derive(Debug, Clone)]
pub enum Reserved {
    /// A new reservation.
    Created(ReservationView),
    /// The agent already held this exact scope: its TTL was extended.
    Renewed(ReservationView),
}

/// Reserves a scope for an agent. Serialises on the workspace so two
/// overlapping reservations can never both be granted; a stale overlapping
/// reservation is marked `expired` and taken over; a live one held by
/// another agent is a 409 `reservation_conflict` naming the holder.
pub async fn reserve(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    r: Reserve,
    actor: &str,
) -> Result<Reserved, ReservationError> {
    validate_scope(&r.scope)?;
    if !(1..=MAX_TTL_SECS).contains(&r.ttl_secs) {
        return Err(Invalid::new(
            "ttl_secs",
            format!("ttl_secs must be between 1 and {MAX_TTL_SECS}"),
        )
        .into());
    }
    NOTE.check("note", &r.note)?;
    if !crate::store::messages::agent_exists(&mut *conn, workspace_id, &r.agent_id).await? {
        return Err(ReservationError::UnknownAgent {
            agent_id: r.agent_id,
        });
    }
    let mission_id =
        super::messages::resolve_linkage(&mut *conn, workspace_id, r.mission_id, r.task_id).await?;
    store::lock_workspace(&mut *conn, workspace_id).await?;
    let now = store::now(&mut *conn).await?;
    let active = store::active(&mut *conn, workspace_id).await?;
    let overlapping: Vec<&ReservationView> = active
        .iter()
        .filter(|h| scopes_overlap(&h.scope, &r.scope))
        .collect();
    if let Some(own) = overlapping
        .iter()
        .find(|h| h.agent_id == r.agent_id && h.scope == r.scope && h.expires_at > now)
    {
        let renewed = store::renew(&mut *conn, workspace_id, own.id, r.ttl_secs).await?;
        let event = payloads::ReservationCreated {
            reservation: fields(&renewed),
            renewed: true,
        };
        record(&mut *conn, workspace_id, &renewed, actor, &event).await?;
        return Ok(Reserved::Renewed(renewed));
    }
    if let Some(holder) = overlapping
        .iter()
        .find(|h| h.agent_id != r.agent_id && h.expires_at > now)
    {
        return Err(ReservationError::Overlaps {
            scope: r.scope,
            held: Box::new((*holder).clone()),
        });
    }
    let id = Uuid::new_v4();
    let stale: Vec<&ReservationView> = overlapping
        .into_iter()
        .filter(|h| h.expires_at <= now)
        .collect();
    let created = store::insert(&mut *conn, workspace_id, id, &r, mission_id).await?;
    for s in stale {
        let expired = store::expire(&mut *conn, workspace_id, s.id, Some(id)).await?;
        let event = payloads::ReservationExpired {
            reservation: fields(&expired),
            taken_over_by: Some(id),
            by_agent: Some(r.agent_id.clone()),
            swept: None,
        };
        record(&mut *conn, workspace_id, &expired, actor, &event).await?;
    }
    let event = payloads::ReservationCreated {
        reservation: fields(&created),
        renewed: false,
    };
    record(&mut *conn, workspace_id, &created, actor, &event).await?;
    Ok(Reserved::Created(created))
}

/// Releases an active reservation; `holder` (when an agent token asks) must
/// be its agent. Releasing one that is not active is a 409 naming its state.
pub async fn release(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    holder: Option<&str>,
    actor: &str,
) -> Result<ReservationView, ReservationError> {
    let r = store::lock(&mut *conn, workspace_id, id)
        .await?
        .ok_or(ReservationError::NotFound { id })?;
    if holder.is_some_and(|h| h != r.agent_id) {
        return Err(ReservationError::NotYours {
            id,
            holder: r.agent_id,
        });
    }
    if r.state != ReservationState::Active.as_str() {
        return Err(ReservationError::NotActive { id, state: r.state });
    }
    let released = store::release(&mut *conn, workspace_id, id).await?;
    let event = payloads::ReservationReleased {
        reservation: fields(&released),
    };
    record(&mut *conn, workspace_id, &released, actor, &event).await?;
    Ok(released)
}

/// Marks every active reservation past its TTL `expired` (the sweep); returns how many.
pub async fn expire_stale(conn: &mut PgConnection, actor: &str) -> sqlx::Result<usize> {
    let expired = store::expire_due(&mut *conn).await?;
    for r in &expired {
        let event = payloads::ReservationExpired {
            reservation: fields(r),
            taken_over_by: None,
            by_agent: None,
            swept: Some(true),
        };
        record(&mut *conn, r.workspace_id, r, actor, &event).await?;
    }
    Ok(expired.len())
}

/// The reservation as its events name it.
fn fields(r: &ReservationView) -> payloads::ReservationFields {
    payloads::ReservationFields {
        reservation_id: r.id,
        scope: r.scope.clone(),
        agent_id: r.agent_id.clone(),
        state: r.state.clone(),
        expires_at: rfc3339(r.expires_at),
    }
}

/// Writes a `reservation.*` event, on the reservation's mission when it has one.
async fn record<P: EventPayload>(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    r: &ReservationView,
    actor: &str,
    payload: &P,
) -> sqlx::Result<()> {
    events::record(
        conn,
        workspace_id,
        WorkspaceEvent::new(r.mission_id, r.task_id, actor, payload),
    )
    .await
}

/// Seconds until `expires_at` (negative once past), for status views.
pub fn seconds_left(expires_at: OffsetDateTime, now: OffsetDateTime) -> i64 {
    (expires_at - now).whole_seconds()
}

#[cfg(test)]
mod tests {
    use super::scopes_overlap;

    #[test]
    fn overlap() {
        assert!(scopes_overlap("kanban-surface", "kanban-surface"));
        assert!(!scopes_overlap("kanban-surface", "graph-surface"));
        assert!(scopes_overlap("src/api/*", "src/api/mod.rs"));
        assert!(scopes_overlap("src/api/mod.rs", "src/api/*"));
        assert!(scopes_overlap("src/*", "src/api/*"));
        assert!(scopes_overlap("src/*/mod.rs", "src/api/*"));
        assert!(!scopes_overlap("src/api/*", "src/web/*"));
        assert!(!scopes_overlap("src/api/*.rs", "src/api/*.js"));
        assert!(scopes_overlap("*", "anything"));
        assert!(scopes_overlap("a?c", "abc"));
        assert!(!scopes_overlap("a?c", "ac"));
        assert!(scopes_overlap("*.rs", "src/*"));
        assert!(!scopes_overlap("src", "src/api"));
        assert!(scopes_overlap("**", "*"));
    }
}
