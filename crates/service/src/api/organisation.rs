//! The workspace's organisation spec (MOISE+) under `/v1/org-spec`: upload,
//! read with staffing, remove, dry-run validation, and the per-agent
//! verdicts the scorer applies to a task.

use axum::{extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    AppState, doc,
    extract::{Json, Query},
};
use crate::{
    auth::{Principal, Role},
    coordination::organisation::{self, OrgSpec, SpecProblem, SpecView, Verdicts},
    error::{ApiError, ApiResult},
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(show, put, remove))
        .routes(routes!(validate))
        .routes(routes!(verdicts))
}

/// An upload: the spec document and, optionally, the version it replaces.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutSpec {
    /// The spec (see the `OrgSpec` schema); validated as a whole.
    #[schema(value_type = OrgSpec)]
    pub spec: Value,
    /// Replace only this version (0: only if there is none yet).
    pub version: Option<i64>,
}

/// The workspace's organisation spec with each role's staffing against its cardinality.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/org-spec",
    tag = "organisation",
    operation_id = "get_org_spec",
    responses(
        (status = 200, description = "The spec, its version and staffing", body = SpecView),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn show(State(state): State<AppState>, who: Principal) -> ApiResult<Json<SpecView>> {
    Ok(Json(
        organisation::show(&state.pool, who.workspace_id).await?,
    ))
}

/// Uploads (creates or replaces) the organisation spec. It is validated as a whole: any problem is a 422 listing every problem, and nothing changes. From the next claim on, the scorer never gives a task to a prohibited role and prefers obliged roles; registration and contractor hiring respect role cardinality.
///
/// Roles: admin, operator.
#[utoipa::path(
    put,
    path = "/v1/org-spec",
    tag = "organisation",
    operation_id = "put_org_spec",
    request_body = PutSpec,
    responses(
        (status = 200, description = "Stored", body = SpecView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 409, description = "`version` is not the stored one (`version_conflict`)", body = doc::ErrorBody),
        (status = 422, description = "The spec is not valid (`org_spec_invalid`; details list every problem with a code and path)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn put(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<PutSpec>,
) -> ApiResult<Json<SpecView>> {
    who.require(&[Role::Admin, Role::Operator])?;
    if req.version.is_some_and(|v| v < 0) {
        return Err(ApiError::invalid("version", "version must be 0 or more"));
    }
    Ok(Json(
        organisation::upload(&state.pool, &who, &req.spec, req.version).await?,
    ))
}

/// Removes the organisation spec: assignment is unconstrained by norms again.
///
/// Roles: admin, operator.
#[utoipa::path(
    delete,
    path = "/v1/org-spec",
    tag = "organisation",
    operation_id = "delete_org_spec",
    responses(
        (status = 204, description = "Removed"),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn remove(State(state): State<AppState>, who: Principal) -> ApiResult<StatusCode> {
    who.require(&[Role::Admin, Role::Operator])?;
    organisation::remove(&state.pool, &who).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The outcome of a dry-run validation.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Validation {
    /// True when the spec could be uploaded as it is.
    pub valid: bool,
    /// Every problem (empty when valid).
    pub problems: Vec<SpecProblem>,
}

/// Validates a spec without storing it: every problem, with a stable code and path.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    post,
    path = "/v1/org-spec/validate",
    tag = "organisation",
    operation_id = "validate_org_spec",
    request_body(content = OrgSpec, description = "The spec document"),
    responses(
        (status = 200, description = "Whether it is valid, and its problems", body = Validation),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
async fn validate(_who: Principal, Json(doc): Json<Value>) -> ApiResult<Json<Validation>> {
    // A spec is a JSON object; anything else is not a spec to judge.
    if !doc.is_object() {
        return Err(ApiError::invalid(
            "body",
            "send the spec document as a JSON object",
        ));
    }
    let problems = OrgSpec::parse(&doc).err().unwrap_or_default();
    Ok(Json(Validation {
        valid: problems.is_empty(),
        problems,
    }))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct VerdictParams {
    /// The task's type.
    #[param(min_length = 1, pattern = r"\S")]
    task_type: String,
    /// The task's key (goals may name keys as well as types).
    task_key: Option<String>,
}

/// What the spec says of every live agent for a task of this type (and key): the filter and preference the scorer applies, so an assignment can be explained.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/org-spec/verdicts",
    tag = "organisation",
    operation_id = "org_spec_verdicts",
    params(VerdictParams),
    responses(
        (status = 200, description = "The goals the task serves and each live agent's verdict", body = Verdicts),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn verdicts(
    State(state): State<AppState>,
    who: Principal,
    Query(p): Query<VerdictParams>,
) -> ApiResult<Json<Verdicts>> {
    if p.task_type.trim().is_empty() {
        return Err(ApiError::invalid(
            "task_type",
            "task_type must not be empty",
        ));
    }
    Ok(Json(
        organisation::verdicts(
            &state.pool,
            who.workspace_id,
            &p.task_type,
            p.task_key.as_deref().unwrap_or(""),
        )
        .await?,
    ))
}

// ---- How organisation spec errors reach the client: status, code and
// details of the one JSON error body.

use serde_json::json;

use crate::coordination::organisation::OrganisationError;

impl From<OrganisationError> for ApiError {
    fn from(e: OrganisationError) -> Self {
        let message = e.to_string();
        match e {
            OrganisationError::InvalidSpec(problems) => ApiError::Unprocessable {
                code: "org_spec_invalid",
                message,
                details: json!({ "problems": problems }),
            },
            OrganisationError::NoSpec => ApiError::NotFound(message),
            OrganisationError::VersionConflict { expected } => ApiError::Conflict {
                code: "version_conflict",
                message,
                details: json!({ "expected": expected }),
            },
            OrganisationError::RoleFull { role, live, max } => ApiError::Conflict {
                code: "role_full",
                message,
                details: json!({ "role": role, "live": live, "max": max }),
            },
            OrganisationError::Database(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::response::IntoResponse;

    use super::*;

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
    async fn organisation_errors_keep_their_status_code_and_details() {
        let (status, error) = rendered(
            OrganisationError::RoleFull {
                role: "qa".into(),
                live: 2,
                max: Some(2),
            }
            .into(),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(error["code"], "role_full");
        assert_eq!(
            error["details"],
            json!({ "role": "qa", "live": 2, "max": 2 })
        );
        assert_eq!(
            error["message"],
            "role 'qa' already has 2 live agent(s), the most the organisation spec allows"
        );
        let problems = OrgSpec::parse(&json!({ "roles": "none" })).expect_err("not a spec");
        let n = problems.len();
        let (status, error) = rendered(OrganisationError::InvalidSpec(problems).into()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(error["code"], "org_spec_invalid");
        assert_eq!(
            error["details"]["problems"].as_array().map(Vec::len),
            Some(n)
        );
        let (status, error) = rendered(OrganisationError::NoSpec.into()).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(error["message"], "this workspace has no organisation spec");
    }
}
