//! Reservations as agent tools: an agent reserves a work surface (a scope
//! pattern) for a while, so others know to keep off, and releases it.

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::{answer, me, object, required_uuid, tool};
use crate::{
    auth::Principal,
    coordination::reservations::{self, DEFAULT_TTL_SECS, Reserve, Reserved},
    error::ApiError,
    tools::{Group, Tool, ToolContext},
};

/// The tools of this group.
pub(super) fn tools() -> Vec<Tool> {
    vec![
        tool(
            Group::Task,
            "reserve_scope",
            "Reserve a work surface",
            "Reserve a scope (a name or a pattern: `*` any run of characters, `?` one; e.g. \
             `src/api/*` or `customer-db`) so other agents know you are working on it. An \
             overlapping scope held by another agent is refused with the holder's name and \
             expiry; reserving your own scope again renews it. With an attempt token it is \
             linked to your task.",
            object(
                json!({
                    "scope": { "type": "string", "minLength": 1, "maxLength": 256, "description": "What to reserve." },
                    "ttl_secs": { "type": "integer", "minimum": 1, "maximum": 604800, "description": "Seconds to hold it (default 900)." },
                    "note": { "type": "string", "description": "Why (at most 1000 bytes)." },
                }),
                &["scope"],
            ),
            false,
            reserve_scope,
        ),
        tool(
            Group::Task,
            "release_scope",
            "Release a reservation",
            "Release a reservation you hold, by the reservation_id reserve_scope returned.",
            object(
                json!({
                    "reservation_id": { "type": "string", "format": "uuid", "description": "The reservation." },
                }),
                &["reservation_id"],
            ),
            false,
            release_scope,
        ),
    ]
}

fn reserve_scope<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let text = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_owned);
        let r = Reserve {
            scope: text("scope").unwrap_or_default(),
            agent_id: me(who)?.to_owned(),
            ttl_secs: args
                .get("ttl_secs")
                .and_then(Value::as_i64)
                .unwrap_or(DEFAULT_TTL_SECS),
            mission_id: who.attempt.map(|a| a.mission_id),
            task_id: who.attempt.map(|a| a.task_id),
            note: text("note").unwrap_or_default(),
        };
        let mut tx = cx.pool.begin().await?;
        let done = reservations::reserve(&mut tx, who.workspace_id, r, &who.actor()).await?;
        tx.commit().await?;
        let (renewed, view) = match done {
            Reserved::Created(v) => (false, v),
            Reserved::Renewed(v) => (true, v),
        };
        let mut out = answer(&view)?;
        out["reservation_id"] = json!(view.id);
        out["renewed"] = json!(renewed);
        Ok(out)
    })
}

fn release_scope<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let id = required_uuid(&mut args, "reservation_id")?;
        let holder = me(who)?;
        let mut tx = cx.pool.begin().await?;
        let view = reservations::release(&mut tx, who.workspace_id, id, Some(holder), &who.actor())
            .await?;
        tx.commit().await?;
        answer(&view)
    })
}
