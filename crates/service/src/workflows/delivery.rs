//! Messages and signals for running workflows: a message goes to the first
//! instance of the workspace whose token waits for it (name and, when the
//! token declares one, correlation key); a signal to every instance waiting
//! for it. Each delivery is one instance command in its own transaction.

use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use coordinator_bpmn::run::Command;
use coordinator_core::invalid::Invalid;

use super::{
    WorkflowError,
    instances::{RunContext, command_in, start_in},
};
use crate::{
    auth::Principal,
    missions::PlanningConfig,
    store::{event_notify::Notifier, workflow_instances as store},
};

/// Delivers a message to the first instance of the workspace whose token
/// waits for it with this correlation key (a token with no key takes any),
/// else starts an instance of the newest workflow with a message start
/// event for it (the correlation key becomes its business key); the
/// instance's id, or `None` when nothing takes it.
pub async fn correlate(
    pool: &PgPool,
    planning: &PlanningConfig,
    notifier: Option<&Notifier>,
    who: &Principal,
    name: &str,
    correlation: Option<&str>,
    payload: Value,
) -> Result<Option<Uuid>, WorkflowError> {
    if name.trim().is_empty() {
        return Err(Invalid::new("name", "name must not be blank").into());
    }
    let cx = RunContext::load(pool, planning, who.workspace_id, who.actor(), notifier).await?;
    let delivered = deliver_message(
        pool,
        &cx,
        who.workspace_id,
        name,
        correlation,
        payload.clone(),
    )
    .await?;
    if delivered.is_some() {
        return Ok(delivered);
    }
    // Nobody waits: a process that a message of this name starts takes it.
    let mut tx = cx.begin(pool).await?;
    let started = start_by_message(
        &mut tx,
        &cx,
        who.workspace_id,
        name,
        correlation,
        payload,
        Some(who.token_id),
    )
    .await?;
    tx.commit().await?;
    cx.committed();
    Ok(started)
}

/// Starts, inside `tx`, an instance of the newest workflow of the workspace
/// with a message start event for message `name`: the correlation key
/// becomes its business key, an object payload its variables (another
/// payload the variable `message`); `None` when no process starts so.
pub(crate) async fn start_by_message(
    tx: &mut sqlx::PgConnection,
    cx: &RunContext<'_>,
    workspace_id: Uuid,
    name: &str,
    correlation: Option<&str>,
    payload: Value,
    created_token: Option<Uuid>,
) -> Result<Option<Uuid>, WorkflowError> {
    let Some((workflow_id, process_id, start_event)) =
        message_start(&mut *tx, workspace_id, name).await?
    else {
        return Ok(None);
    };
    let variables = match payload {
        Value::Object(map) => Some(map),
        Value::Null => None,
        other => Some(serde_json::Map::from_iter([("message".to_owned(), other)])),
    };
    let req = super::instances::StartInstance {
        variables,
        process_id: Some(process_id),
        start_event: Some(start_event),
        business_key: correlation.map(str::to_owned),
        version: None,
    };
    let id = start_in(tx, cx, workspace_id, workflow_id, req, created_token).await?;
    Ok(Some(id))
}

/// The workspace's newest workflow whose latest version has a message start
/// event for message `name` (a top-level start of one of its processes):
/// (workflow, process, start event).
async fn message_start(
    conn: &mut sqlx::PgConnection,
    workspace_id: Uuid,
    name: &str,
) -> Result<Option<(Uuid, String, String)>, WorkflowError> {
    let candidates = crate::store::workflows::with_message(conn, workspace_id, name).await?;
    for (workflow_id, model) in candidates {
        let defs: coordinator_bpmn::Definitions = serde_json::from_value(model)?;
        let ids: Vec<&str> = defs
            .messages
            .iter()
            .filter(|m| m.name.as_deref() == Some(name))
            .map(|m| m.id.as_str())
            .collect();
        for p in &defs.processes {
            for n in &p.nodes {
                if let coordinator_bpmn::NodeKind::StartEvent {
                    trigger:
                        coordinator_bpmn::Trigger::Message {
                            message_ref: Some(r),
                            ..
                        },
                    ..
                } = &n.kind
                    && ids.contains(&r.as_str())
                {
                    return Ok(Some((workflow_id, p.id.clone(), n.id.clone())));
                }
            }
        }
    }
    Ok(None)
}

pub(crate) async fn deliver_message(
    pool: &PgPool,
    cx: &RunContext<'_>,
    workspace_id: Uuid,
    name: &str,
    correlation: Option<&str>,
    payload: Value,
) -> Result<Option<Uuid>, WorkflowError> {
    let mut conn = pool.acquire().await?;
    let waiters = store::message_waiters(&mut conn, workspace_id, name).await?;
    drop(conn);
    for (instance, key) in waiters {
        if key.is_some() && key.as_deref() != correlation {
            continue;
        }
        let mut tx = cx.begin(pool).await?;
        let cmd = Command::Message {
            name: name.to_owned(),
            correlation: correlation.map(str::to_owned),
            payload: payload.clone(),
        };
        match command_in(&mut tx, cx, Some(workspace_id), instance, cmd, false).await {
            Ok(_) => {
                tx.commit().await?;
                cx.committed();
                return Ok(Some(instance));
            }
            // Taken meanwhile by another delivery: try the next.
            Err(WorkflowError::Refused(_)) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// Broadcasts a signal to every instance of the workspace waiting for it;
/// how many took it.
pub async fn broadcast(
    pool: &PgPool,
    planning: &PlanningConfig,
    notifier: Option<&Notifier>,
    who: &Principal,
    name: &str,
    payload: Value,
) -> Result<usize, WorkflowError> {
    if name.trim().is_empty() {
        return Err(Invalid::new("name", "name must not be blank").into());
    }
    let cx = RunContext::load(pool, planning, who.workspace_id, who.actor(), notifier).await?;
    deliver_signal(pool, &cx, who.workspace_id, name, payload, None).await
}

pub(crate) async fn deliver_signal(
    pool: &PgPool,
    cx: &RunContext<'_>,
    workspace_id: Uuid,
    name: &str,
    payload: Value,
    except: Option<Uuid>,
) -> Result<usize, WorkflowError> {
    let mut conn = pool.acquire().await?;
    let waiters = store::signal_waiters(&mut conn, workspace_id, name).await?;
    drop(conn);
    let mut n = 0;
    for instance in waiters.into_iter().filter(|i| Some(*i) != except) {
        let mut tx = cx.begin(pool).await?;
        let cmd = Command::Signal {
            name: name.to_owned(),
            payload: payload.clone(),
        };
        match command_in(&mut tx, cx, Some(workspace_id), instance, cmd, false).await {
            Ok(_) => {
                tx.commit().await?;
                cx.committed();
                n += 1;
            }
            Err(WorkflowError::Refused(_)) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
