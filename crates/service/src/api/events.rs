//! `/v1/events`: the workspace's event log, as JSON pages or a live SSE
//! stream, filterable by mission, kind, agent and agent role.

use axum::{
    extract::State,
    http::HeaderMap,
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use serde_json::json;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Query},
    page::Limit,
    stream,
};
use crate::{
    auth::Principal,
    error::{ApiError, ApiResult},
    store::events::{self, EventFilter, LogPosition},
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list))
}

/// Events examined per JSON page (a page may return fewer when filtered).
const SCAN: i64 = 2000;

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct Params {
    /// Only events after this event id (the SSE id of this stream; the `next_after` of the previous page). Pages without it start at the oldest event kept; a stream without it (or `Last-Event-ID`) starts from now, and `after=0` replays the whole log.
    #[param(minimum = 0)]
    after: Option<i64>,
    /// Only this mission's events.
    mission: Option<Uuid>,
    /// Comma-separated kinds, e.g. `task.succeeded,mission.completed`; a trailing `*` matches a prefix (`task.*`).
    kind: Option<String>,
    /// Only events about this agent.
    #[param(min_length = 1, max_length = 128)]
    agent: Option<String>,
    /// Only events about an agent of this role.
    #[param(min_length = 1, max_length = 64)]
    role: Option<String>,
    /// Page size, 1–1000 (default 500; JSON pages only).
    #[serde(default)]
    #[param(inline)]
    limit: Limit<500, 1000>,
}

impl Params {
    fn filter(&self) -> ApiResult<EventFilter> {
        let kinds = match &self.kind {
            None => Vec::new(),
            Some(list) => list
                .split(',')
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .map(|k| match events::kind_pattern_problem(k) {
                    None => Ok(k.to_owned()),
                    // Not even shaped like a kind: the document's pattern says so.
                    Some(problem)
                        if !k
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || matches!(c, '_' | '.' | '*')) =>
                    {
                        Err(ApiError::invalid("kind", problem))
                    }
                    // Well-formed (the document's pattern), but no kind of the log: 422.
                    Some(problem) => Err(ApiError::Unprocessable {
                        code: "unknown_event_kind",
                        message: problem,
                        details: serde_json::json!({ "field": "kind" }),
                    }),
                })
                .collect::<ApiResult<Vec<_>>>()?,
        };
        if let Some(agent) = &self.agent
            && (agent.is_empty() || agent.len() > 128)
        {
            return Err(ApiError::invalid(
                "agent",
                "agent must be an agent id (1 to 128 characters)",
            ));
        }
        if let Some(role) = &self.role
            && (role.is_empty() || role.len() > 64)
        {
            return Err(ApiError::invalid("role", "role must be 1 to 64 characters"));
        }
        Ok(EventFilter {
            mission_id: self.mission,
            kinds,
            agent_id: self.agent.clone(),
            agent_role: self.role.clone(),
        })
    }
}

/// The workspace's event log in commit order, filtered: a JSON page, or a live Server-Sent Events stream with `Accept: text/event-stream`.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/events",
    tag = "events",
    operation_id = "list_events",
    params(Params, ("Last-Event-ID" = Option<i64>, Header, description = "Streams only: resume after this event id (takes precedence over `after`)")),
    responses(
        (status = 200, description = "A page of events (JSON), or with `Accept: text/event-stream` a stream that never ends on its own: each event's `id` is its event `id` (not `seq`), `event` its `kind`, `data` the event as in a page (`EventView`); comments keep the connection alive every 15 s.", content(
            (WorkspaceEventPage = "application/json"),
            (String = "text/event-stream", example = "id: 42\nevent: task.succeeded\ndata: {\"id\":42,\"seq\":7,\"kind\":\"task.succeeded\",...}\n\n")
        )),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
async fn list(
    State(state): State<AppState>,
    who: Principal,
    Query(p): Query<Params>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let mut filter = p.filter()?;
    // An attempt token reads its own mission's events only, page or stream.
    stream::confine_to_attempt(&who, &mut filter)?;
    let limit = p.limit.get()?;
    if p.after.is_some_and(|a| a < 0) {
        return Err(ApiError::invalid(
            "after",
            "after must be an event id (>= 0)",
        ));
    }
    // Checked for pages too, where it is ignored: a malformed header is 400 either way.
    let resume = stream::last_event_id(&headers)?;
    if stream::wants_stream(&headers) {
        // A stream without a cursor starts from now: replaying the whole log
        // to every new subscriber is what `after=0` is for.
        let after = match resume.or(p.after) {
            Some(id) => resolve(&state, &who, id).await?,
            None => events::tail(&state.pool, who.workspace_id).await?,
        };
        return Ok(stream::workspace_events(
            state.pool.clone(),
            who.clone(),
            after,
            filter,
            state.wake.clone(),
            state.stop.clone(),
        )
        .into_response());
    }
    let resume = p.after;
    let after = resolve(&state, &who, resume.unwrap_or(0)).await?;
    let (page, reached) = events::list_for_workspace(
        &state.pool,
        who.workspace_id,
        after,
        &filter,
        SCAN,
        limit as usize,
    )
    .await?;
    // The cursor moves over filtered-out events too; it is an event id like the rest.
    let next_after = if reached == after {
        resume.unwrap_or(0)
    } else {
        reached.id
    };
    let events: Vec<_> = page.into_iter().map(|e| e.event).collect();
    Ok(Json(json!({ "events": events, "next_after": next_after })).into_response())
}

/// Where to resume after event `id` (0: from the start).
async fn resolve(state: &AppState, who: &Principal, id: i64) -> ApiResult<LogPosition> {
    if id == 0 {
        return Ok(LogPosition::default());
    }
    match events::position_of(&state.pool, who.workspace_id, id).await? {
        Some(p) => Ok(p),
        // Pruned (or never ours): carry on from the oldest event still kept after it.
        None => Ok(events::position_after_pruned(&state.pool, who.workspace_id, id).await?),
    }
}

/// `GET /v1/events` answer (JSON): one page, in commit order.
#[derive(utoipa::ToSchema)]
pub struct WorkspaceEventPage {
    /// Matching events after `after`.
    pub events: Vec<crate::store::events::EventView>,
    /// Pass as `after` for the next page: an event `id` (it moves past filtered-out events too).
    pub next_after: i64,
}
