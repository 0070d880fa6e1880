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
    instances::{RunContext, command_in},
};
use crate::{auth::Principal, missions::PlanningConfig, store::workflow_instances as store};

/// Delivers a message to the first instance of the workspace whose token
/// waits for it with this correlation key (a token with no key takes any);
/// the instance's id, or `None` when nobody waits.
pub async fn correlate(
    pool: &PgPool,
    planning: &PlanningConfig,
    who: &Principal,
    name: &str,
    correlation: Option<&str>,
    payload: Value,
) -> Result<Option<Uuid>, WorkflowError> {
    if name.trim().is_empty() {
        return Err(Invalid::new("name", "name must not be blank").into());
    }
    let cx = RunContext::load(pool, planning, who.workspace_id, who.actor()).await?;
    deliver_message(pool, &cx, who.workspace_id, name, correlation, payload).await
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
        let mut tx = pool.begin().await?;
        let cmd = Command::Message {
            name: name.to_owned(),
            correlation: correlation.map(str::to_owned),
            payload: payload.clone(),
        };
        match command_in(&mut tx, cx, Some(workspace_id), instance, cmd, false).await {
            Ok(_) => {
                tx.commit().await?;
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
    who: &Principal,
    name: &str,
    payload: Value,
) -> Result<usize, WorkflowError> {
    if name.trim().is_empty() {
        return Err(Invalid::new("name", "name must not be blank").into());
    }
    let cx = RunContext::load(pool, planning, who.workspace_id, who.actor()).await?;
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
        let mut tx = pool.begin().await?;
        let cmd = Command::Signal {
            name: name.to_owned(),
            payload: payload.clone(),
        };
        match command_in(&mut tx, cx, Some(workspace_id), instance, cmd, false).await {
            Ok(_) => {
                tx.commit().await?;
                n += 1;
            }
            Err(WorkflowError::Refused(_)) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
