//! `GET /v1/attention`: what waits for a person, workspace-wide or for one
//! mission (see [`crate::missions::attention`]).

use axum::extract::State;
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Query},
};
use crate::{
    auth::Principal,
    error::ApiResult,
    missions::attention::{self, AttentionList},
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Only what waits in this mission.
    mission_id: Option<Uuid>,
}

/// Lists everything that waits for a person, oldest first: plans to
/// approve, results to review, tasks handed to a person or refused by the
/// budget, pending decisions and tool calls, each with the verbs that settle
/// it and the CLI command to run.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/attention",
    tag = "missions",
    operation_id = "list_attention",
    params(ListParams),
    responses(
        (status = 200, description = "What waits (at most 500 items)", body = AttentionList),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
async fn list(
    State(state): State<AppState>,
    who: Principal,
    Query(p): Query<ListParams>,
) -> ApiResult<Json<AttentionList>> {
    let items = attention::list(&state.pool, who.workspace_id, p.mission_id).await?;
    Ok(Json(AttentionList { items }))
}
