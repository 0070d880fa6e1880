//! Performatives with effects: sending a message through [`speak`] does what
//! its speech act means, in the transaction that stores it.
//!
//! The rules are pure ([`coordinator_core::messages::effects`]): INFORM
//! revises each recipient's belief (a corroborating INFORM never lowers its
//! certainty), REQUEST and QUERY to one agent open a work item
//! (`agent_requests`), AGREE / REFUSE / CANCEL / FAILURE / an answering
//! INFORM settle it, and AGREE on a request within a mission adds the work as
//! a task under the requester's task, pinned to the agreeing agent. Messages
//! the coordinator sends itself (contract-net notices, handoffs, governance)
//! go through [`messages::send`] and have no such effects.

use serde::{Deserialize, Serialize};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use coordinator_core::planning::discovered::Placement;
use coordinator_protocol::agent_events::{
    RequestAgreed, RequestAnswered, RequestCancelled, RequestFailed, RequestOpened, RequestRefused,
    RequestSettled,
};

use super::messages::{
    self, Effect, InformedBelief, ItemStatus, MessageError, Outgoing, Recipient, WorkItem,
};
use crate::{
    auth::Principal,
    bdi::state::{self as bdi, BeliefWrite},
    missions::{PlanningConfig, discovered},
    store::{
        bdi as bdi_store,
        events::{self, WorkspaceEvent},
        messages::{self as store, MessageView, RecipientState, RequestView},
    },
};

/// A belief an INFORM revised.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BeliefEffect {
    /// The recipient whose belief it is.
    pub agent_id: String,
    /// The belief.
    pub belief_id: Uuid,
    /// Its subject.
    pub subject: String,
    /// `created`, `corroborated`, `revised`, `rejected` or `conflict`.
    pub outcome: String,
    /// Its certainty now.
    pub certainty: f64,
}

/// What sending the message did besides delivering it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Effects {
    /// Beliefs an INFORM revised, one per recipient.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub beliefs: Vec<BeliefEffect>,
    /// The request or query the message opened or settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<RequestView>,
    /// Key of the task an AGREE added to the mission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added_task: Option<String>,
}

/// A sent message, its recipients and its effects.
#[derive(Debug, Clone)]
pub struct Spoken {
    /// The message.
    pub message: MessageView,
    /// Each recipient and how far it got.
    pub recipients: Vec<RecipientState>,
    /// True when this was an idempotent resend (nothing happened again).
    pub replay: bool,
    /// What it did.
    pub effects: Effects,
}

/// Sends `m` for `who` with the effects of its performative, all in one
/// transaction (but the task an AGREE adds, below). A resend of an id
/// already sent returns the original and does nothing again.
///
/// AGREE within a mission runs [`discovered::add_tasks`], which replans in
/// its own transaction (pinning the new task to the agreeing agent before
/// anyone can claim it); the request row stays locked meanwhile (a racing
/// CANCEL waits and then finds it agreed), and if adding the task fails
/// nothing of the AGREE is written.
pub async fn speak(
    pool: &PgPool,
    planning: &PlanningConfig,
    who: &Principal,
    m: Outgoing,
) -> Result<Spoken, MessageError> {
    if let Some(id) = m.id
        && store::get(&mut *pool.acquire().await?, who.workspace_id, id)
            .await?
            .is_some()
    {
        let mut tx = pool.begin().await?;
        let message = messages::send(&mut tx, who.workspace_id, m).await?;
        let recipients = store::recipients(&mut tx, who.workspace_id, message.id).await?;
        tx.commit().await?;
        return Ok(Spoken {
            message,
            recipients,
            replay: true,
            effects: Effects::default(),
        });
    }
    // The envelope's own rules come first, as when sending without effects.
    messages::validate(&m)?;
    let ws = who.workspace_id;
    let mut tx = pool.begin().await?;
    if who.attempt.is_some() {
        // An attempt token may not reach into another mission through a task id.
        let linked = messages::resolve_linkage(&mut tx, ws, m.mission_id, m.task_id).await?;
        messages::confine(who, linked)?;
    }
    let replied = match m.reply_to {
        Some(id) => store::lock_request(&mut tx, ws, id)
            .await?
            .map(work_item)
            .transpose()?,
        None => None,
    };
    let planned = messages::effects(&m, replied.as_ref())?;
    let mut out = Effects::default();
    for e in &planned {
        if let Effect::AddTask {
            request_id,
            mission_id,
            anchor_task,
            task,
        } = e
        {
            messages::confine(who, Some(*mission_id))?;
            let agent = m.from_agent.clone().unwrap_or_default();
            let key = task.id.clone();
            let req = discovered::AddTasks {
                tasks: vec![(**task).clone()],
                placement: Placement::Child,
                reason: format!(
                    "agent '{agent}' agreed to request {request_id}: {}",
                    task.title
                ),
            };
            discovered::add_tasks(
                pool,
                planning,
                who,
                *mission_id,
                *anchor_task,
                req,
                Some(agent.as_str()),
            )
            .await
            .map_err(|e| MessageError::AddTask(Box::new(e)))?;
            out.added_task = Some(key);
        }
    }
    let sender = m.sender.clone();
    let addressee = match &m.to {
        Recipient::Agent(a) => Some(a.clone()),
        _ => None,
    };
    let message = messages::send(&mut tx, ws, m).await?;
    for e in planned {
        match e {
            Effect::ReviseBelief(b) => {
                out.beliefs = revise_beliefs(&mut tx, ws, &message, &b, &sender).await?;
            }
            Effect::Open(kind) => {
                let recipient = addressee.clone().unwrap_or_default();
                let r = store::insert_request(
                    &mut tx,
                    ws,
                    &message,
                    kind.as_str(),
                    &sender,
                    &recipient,
                )
                .await?;
                let payload = RequestOpened {
                    request_id: r.id,
                    kind: r.kind.clone(),
                    requester: r.requester.clone(),
                    recipient: r.recipient.clone(),
                    subject: r.subject.clone(),
                };
                record(&mut tx, ws, &r, &sender, &payload).await?;
                out.request = Some(r);
            }
            Effect::Close { id, status } => {
                let r = store::settle_request(
                    &mut tx,
                    ws,
                    id,
                    status.as_str(),
                    message.id,
                    out.added_task.as_deref(),
                )
                .await?;
                settled_event(&mut tx, ws, &r, status, message.id, &sender).await?;
                out.request = Some(r);
            }
            Effect::AddTask { .. } => {}
        }
    }
    let recipients = store::recipients(&mut tx, ws, message.id).await?;
    tx.commit().await?;
    Ok(Spoken {
        message,
        recipients,
        replay: false,
        effects: out,
    })
}

/// The stored request as the rules see it.
fn work_item(r: RequestView) -> Result<WorkItem, MessageError> {
    let bad = |e| MessageError::Unexpected(anyhow::anyhow!("stored request: {e}"));
    Ok(WorkItem {
        id: r.id,
        kind: r.kind.parse().map_err(bad)?,
        requester: r.requester,
        recipient: r.recipient,
        status: r.status.parse().map_err(bad)?,
        mission_id: r.mission_id,
        task_id: r.task_id,
        subject: r.subject,
        content: r.content,
    })
}

/// Each recipient of an INFORM revises its belief under the BDI revision
/// rule, with a corroborating INFORM never lowering the certainty held.
async fn revise_beliefs(
    conn: &mut PgConnection,
    ws: Uuid,
    message: &MessageView,
    b: &InformedBelief,
    actor: &str,
) -> Result<Vec<BeliefEffect>, MessageError> {
    let belief_error = |e| MessageError::Belief(Box::new(e));
    let mut out = Vec::new();
    for r in store::recipients(&mut *conn, ws, message.id).await? {
        let held = bdi_store::lock_belief_by_key(
            &mut *conn,
            ws,
            &r.agent_id,
            b.category.as_str(),
            &b.subject,
        )
        .await?;
        let certainty = messages::informed_certainty(
            held.as_ref().map(|h| (h.content.as_str(), h.certainty)),
            &b.content,
            b.certainty,
        );
        let write = BeliefWrite {
            category: b.category,
            subject: b.subject.clone(),
            content: b.content.clone(),
            certainty,
            reason: format!("INFORM {} from {actor}", message.id),
        };
        let (outcome, belief, _) = bdi::update_belief(&mut *conn, ws, &r.agent_id, write, actor)
            .await
            .map_err(belief_error)?;
        out.push(BeliefEffect {
            agent_id: r.agent_id,
            belief_id: belief.id,
            subject: belief.subject,
            outcome: outcome.as_str().to_owned(),
            certainty: belief.certainty,
        });
    }
    Ok(out)
}

/// The event of a request or query settled by message `by`.
async fn settled_event(
    conn: &mut PgConnection,
    ws: Uuid,
    r: &RequestView,
    status: ItemStatus,
    by: Uuid,
    actor: &str,
) -> sqlx::Result<()> {
    let settled = RequestSettled {
        request_id: r.id,
        kind: r.kind.clone(),
        requester: r.requester.clone(),
        recipient: r.recipient.clone(),
        message_id: by,
    };
    match status {
        ItemStatus::Agreed => {
            let p = RequestAgreed {
                settled,
                added_task: r.added_task.clone(),
            };
            record(conn, ws, r, actor, &p).await
        }
        ItemStatus::Refused => record(conn, ws, r, actor, &RequestRefused(settled)).await,
        ItemStatus::Cancelled => record(conn, ws, r, actor, &RequestCancelled(settled)).await,
        ItemStatus::Failed => record(conn, ws, r, actor, &RequestFailed(settled)).await,
        ItemStatus::Done | ItemStatus::Answered | ItemStatus::Open => {
            let p = RequestAnswered {
                settled,
                status: status.as_str().to_owned(),
            };
            record(conn, ws, r, actor, &p).await
        }
    }
}

async fn record<P: coordinator_protocol::EventPayload>(
    conn: &mut PgConnection,
    ws: Uuid,
    r: &RequestView,
    actor: &str,
    payload: &P,
) -> sqlx::Result<()> {
    events::record(
        conn,
        ws,
        WorkspaceEvent::new(r.mission_id, r.task_id, actor, payload),
    )
    .await
}

/// Requests and queries an agent was asked or asked, newest first.
pub async fn requests(
    pool: &PgPool,
    who: &Principal,
    agent_id: &str,
    status: Option<ItemStatus>,
    limit: i64,
) -> Result<Vec<RequestView>, MessageError> {
    let mut conn = pool.acquire().await?;
    Ok(store::requests_of(
        &mut conn,
        who.workspace_id,
        agent_id,
        status.map(ItemStatus::as_str),
        limit,
    )
    .await?)
}
