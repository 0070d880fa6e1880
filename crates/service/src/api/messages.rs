//! `/v1/messages`, agent inboxes and conversations: FIPA-style ACL messages
//! between agents (and from the coordinator or people to agents).

use axum::{extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Path, Query},
    page::Limit,
};
use crate::{
    auth::Principal,
    coordination::{
        messages::{self, InboxAction, InboxState, SendMessage, ThreadNode},
        performatives::{self, Effects},
    },
    error::{ApiError, ApiResult},
    store::messages::{self as store, InboxEntry, InboxFilter, MessageView, RecipientState},
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(send))
        .routes(routes!(show))
        .routes(routes!(conversation))
        .routes(routes!(inbox))
        .routes(routes!(read))
        .routes(routes!(ack))
}

/// A message with its recipients.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SentMessage {
    /// The message.
    #[serde(flatten)]
    pub message: MessageView,
    /// Each recipient and how far it got.
    pub recipients: Vec<RecipientState>,
    /// What the performative did: beliefs revised, the request or query opened or settled, the task added.
    #[serde(default)]
    pub effects: Effects,
}

/// Sends a message to an agent, a role or everyone. It lands in each recipient's inbox and is pushed to the recipient's worker endpoint (`POST {endpoint_url}/v1/messages`, retried). Its performative has effects: an INFORM about a `content.subject` revises each recipient's belief; a REQUEST or QUERY to one agent opens a request it must answer (AGREE / REFUSE, INFORM / FAILURE; CANCEL by the requester); AGREE on a request linked to a task adds the work to that mission.
///
/// Roles: admin, operator, stakeholder, worker, or an agent sending as itself (403 answering a request addressed to another agent, or cancelling another's).
#[utoipa::path(
    post,
    path = "/v1/messages",
    tag = "messages",
    operation_id = "send_message",
    request_body = SendMessage,
    responses(
        (status = 201, description = "Sent", body = SentMessage),
        (status = 200, description = "Already sent with this id and content (idempotent retry)", body = SentMessage),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 409, description = "The id was used for a different message (`message_id_reused`), or the request or query answered is no longer in a state the performative answers (`request_settled`), or the mission cannot take an agreed request's task", body = doc::ErrorBody),
        (status = 422, description = "Unknown sender, recipient, reply, mission or task (`unknown_sender`, `unknown_recipient`, `no_recipients`, `unknown_reply_to`, `unknown_mission`, `unknown_task`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn send(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<SendMessage>,
) -> ApiResult<(StatusCode, Json<SentMessage>)> {
    let out = messages::compose(&who, req)?;
    let spoken = performatives::speak(&state.pool, &state.planning, &who, out).await?;
    let status = if spoken.replay {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((
        status,
        Json(SentMessage {
            message: spoken.message,
            recipients: spoken.recipients,
            effects: spoken.effects,
        }),
    ))
}

/// Shows one message and the state of each recipient.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/messages/{id}",
    tag = "messages",
    operation_id = "get_message",
    params(("id" = Uuid, Path, description = "Message id")),
    responses(
        (status = 200, description = "The message", body = SentMessage),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn show(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<SentMessage>> {
    let mut conn = state.pool.acquire().await?;
    let message = store::get(&mut conn, who.workspace_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no message {id}")))?;
    let recipients = store::recipients(&mut conn, who.workspace_id, id).await?;
    Ok(Json(SentMessage {
        message,
        recipients,
        effects: Effects::default(),
    }))
}

/// A conversation as a reply tree.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Conversation {
    /// The conversation.
    pub conversation_id: Uuid,
    /// How many messages it has (at most 2000 are shown).
    pub message_count: usize,
    /// Messages that answer nothing in the conversation, each with its replies, oldest first.
    pub threads: Vec<ThreadNode>,
}

/// Reconstructs a conversation: every message with this `conversation_id`, as a reply tree built from `reply_to`.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/conversations/{id}",
    tag = "messages",
    operation_id = "get_conversation",
    params(("id" = Uuid, Path, description = "Conversation id")),
    responses(
        (status = 200, description = "The reply tree", body = Conversation),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn conversation(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<Conversation>> {
    let (message_count, threads) = messages::conversation(&state.pool, &who, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no conversation {id}")))?;
    Ok(Json(Conversation {
        conversation_id: id,
        message_count,
        threads,
    }))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct InboxParams {
    /// Only entries in this state.
    #[param(inline)]
    state: Option<InboxState>,
    /// Only messages that need an ack and have none yet.
    #[serde(default)]
    unacked: bool,
    /// Only messages of this conversation.
    conversation: Option<Uuid>,
    /// Most entries (1–500, default 100).
    #[serde(default)]
    #[param(inline)]
    limit: Limit<100, 500>,
}

/// An inbox page.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Inbox {
    /// The agent.
    pub agent_id: String,
    /// Counts over the whole inbox.
    pub counts: store::InboxCounts,
    /// Entries matching the filter, oldest first.
    pub messages: Vec<InboxEntry>,
}

/// An agent's inbox: what was sent to it (directly or by broadcast) and how far it got with each.
///
/// Roles: admin, operator, stakeholder, worker, or the agent's own token.
#[utoipa::path(
    get,
    path = "/v1/agents/{agent_id}/inbox",
    tag = "messages",
    operation_id = "get_inbox",
    params(("agent_id" = String, Path, description = "Agent id"), InboxParams),
    responses(
        (status = 200, description = "The inbox", body = Inbox),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn inbox(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
    Query(p): Query<InboxParams>,
) -> ApiResult<Json<Inbox>> {
    let limit = p.limit.get()?;
    let filter = InboxFilter {
        state: p.state.map(|s| s.as_str().to_owned()),
        unacked: p.unacked,
        conversation_id: p.conversation,
    };
    let (counts, messages) = messages::inbox(&state.pool, &who, &agent_id, &filter, limit).await?;
    Ok(Json(Inbox {
        agent_id,
        counts,
        messages,
    }))
}

/// Marks a message of the agent's inbox read (reading again changes nothing).
///
/// Roles: admin, operator, or the agent's own token.
#[utoipa::path(
    post,
    path = "/v1/agents/{agent_id}/inbox/{message_id}/read",
    tag = "messages",
    operation_id = "read_message",
    params(
        ("agent_id" = String, Path, description = "Agent id"),
        ("message_id" = Uuid, Path, description = "Message id")
    ),
    responses(
        (status = 200, description = "The inbox entry", body = InboxEntry),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, description = "The message is not in this agent's inbox (`not_found`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn read(
    state: State<AppState>,
    who: Principal,
    Path((agent_id, message_id)): Path<(String, Uuid)>,
) -> ApiResult<Json<InboxEntry>> {
    mark(state, who, agent_id, message_id, InboxAction::Read).await
}

/// Acknowledges a message of the agent's inbox (required for `BLOCKED` and `HANDOFF`, allowed for any). An ack is terminal: acking again is a 409.
///
/// Roles: admin, operator, or the agent's own token.
#[utoipa::path(
    post,
    path = "/v1/agents/{agent_id}/inbox/{message_id}/ack",
    tag = "messages",
    operation_id = "ack_message",
    params(
        ("agent_id" = String, Path, description = "Agent id"),
        ("message_id" = Uuid, Path, description = "Message id")
    ),
    responses(
        (status = 200, description = "The inbox entry, now acked", body = InboxEntry),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, description = "The message is not in this agent's inbox (`not_found`)", body = doc::ErrorBody),
        (status = 409, description = "Already acknowledged (`already_acked`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn ack(
    state: State<AppState>,
    who: Principal,
    Path((agent_id, message_id)): Path<(String, Uuid)>,
) -> ApiResult<Json<InboxEntry>> {
    mark(state, who, agent_id, message_id, InboxAction::Ack).await
}

async fn mark(
    State(state): State<AppState>,
    who: Principal,
    agent_id: String,
    message_id: Uuid,
    action: InboxAction,
) -> ApiResult<Json<InboxEntry>> {
    let entry = messages::mark_entry(&state.pool, &who, &agent_id, message_id, action).await?;
    Ok(Json(entry))
}

// ---- How messaging's errors reach the client: status, code and details
// of the one JSON error body.

use serde_json::json;

use crate::coordination::messages::{LinkageError, MessageError, ProtocolError};

impl From<MessageError> for ApiError {
    fn from(e: MessageError) -> Self {
        let message = e.to_string();
        let unprocessable = |code, details| ApiError::Unprocessable {
            code,
            message: message.clone(),
            details,
        };
        match e {
            MessageError::Invalid(e) => e.into(),
            MessageError::IdReused { id } | MessageError::SentConcurrently { id } => {
                ApiError::Conflict {
                    code: "message_id_reused",
                    message,
                    details: json!({ "id": id }),
                }
            }
            MessageError::UnknownSender { from } => {
                unprocessable("unknown_sender", json!({ "from": from }))
            }
            MessageError::UnknownRecipient { to } => {
                unprocessable("unknown_recipient", json!({ "to": to }))
            }
            MessageError::NoRecipients { to } => {
                unprocessable("no_recipients", json!({ "to": to }))
            }
            MessageError::UnknownReplyTo { reply_to } => {
                unprocessable("unknown_reply_to", json!({ "reply_to": reply_to }))
            }
            MessageError::Linkage(e) => e.into(),
            MessageError::NotInInbox { .. } | MessageError::NoAgent { .. } => {
                ApiError::NotFound(message)
            }
            MessageError::AlreadyAcked {
                message_id,
                agent_id,
                state,
            } => ApiError::Conflict {
                code: "already_acked",
                message,
                details: json!({ "message_id": message_id, "agent_id": agent_id, "state": state }),
            },
            MessageError::Forbidden(e) => e.into(),
            MessageError::Protocol(e) => protocol_error(e),
            MessageError::Belief(e) => (*e).into(),
            MessageError::AddTask(e) => (*e).into(),
            MessageError::Database(e) => e.into(),
            MessageError::Unexpected(e) => ApiError::Unexpected(e),
        }
    }
}

/// A message that breaks its conversation's protocol: a wrong field is a
/// 400, answering someone else's request a 403, a settled request a 409.
fn protocol_error(e: ProtocolError) -> ApiError {
    let message = e.to_string();
    match e {
        ProtocolError::Invalid(e) => e.into(),
        ProtocolError::NotAddressee { .. } | ProtocolError::NotRequester { .. } => {
            ApiError::Forbidden(message)
        }
        ProtocolError::WrongState {
            id, kind, status, ..
        } => ApiError::Conflict {
            code: "request_settled",
            message,
            details: json!({ "request_id": id, "kind": kind, "status": status }),
        },
    }
}

impl From<LinkageError> for ApiError {
    fn from(e: LinkageError) -> Self {
        let message = e.to_string();
        match e {
            LinkageError::UnknownTask { task_id } => ApiError::Unprocessable {
                code: "unknown_task",
                message,
                details: json!({ "task_id": task_id }),
            },
            LinkageError::UnknownMission { mission_id } => ApiError::Unprocessable {
                code: "unknown_mission",
                message,
                details: json!({ "mission_id": mission_id }),
            },
            LinkageError::Invalid(e) => e.into(),
            LinkageError::Database(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::response::IntoResponse;
    use serde_json::Value;
    use uuid::Uuid;

    use super::*;
    use coordinator_core::invalid::Invalid;

    /// The status and the body's `error` object a client gets for `e`.
    async fn rendered(e: ApiError) -> (StatusCode, Value) {
        let response = e.into_response();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("an error body is small");
        let body: Value = serde_json::from_slice(&body).expect("an error body is JSON");
        (status, body["error"].clone())
    }

    #[tokio::test]
    async fn message_errors_keep_their_status_code_and_details() {
        let id = Uuid::nil();
        let (status, error) = rendered(MessageError::IdReused { id }.into()).await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(error["code"], "message_id_reused");
        assert_eq!(error["details"], json!({ "id": id }));
        assert_eq!(
            error["message"],
            format!("message {id} was already sent with different content")
        );
        let (status, error) =
            rendered(MessageError::UnknownRecipient { to: "bob".into() }.into()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(error["code"], "unknown_recipient");
        assert_eq!(error["details"], json!({ "to": "bob" }));
        let (status, error) = rendered(
            MessageError::NotInInbox {
                message_id: id,
                agent_id: "bob".into(),
            }
            .into(),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(error["code"], "not_found");
    }

    #[tokio::test]
    async fn linkage_errors_keep_their_status_code_and_details() {
        let id = Uuid::nil();
        let (status, error) =
            rendered(LinkageError::UnknownMission { mission_id: id }.into()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(error["code"], "unknown_mission");
        assert_eq!(error["details"], json!({ "mission_id": id }));
        let invalid = Invalid::new("mission_id", "task_id belongs to another mission");
        let (status, error) = rendered(LinkageError::Invalid(invalid).into()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(error["code"], "invalid_request");
        assert_eq!(error["details"], json!({ "field": "mission_id" }));
        assert_eq!(error["message"], "task_id belongs to another mission");
    }
}
