//! Shared parts of the OpenAPI document that every slice's operations
//! refer to: the one error body and the standard error responses. Slices
//! import this module; nothing here imports a slice, so the document has no
//! import circle.

use serde_json::Value;
use utoipa::{ToResponse, ToSchema};

/// Every error response: `{"error": {"code", "message", "details"}}`.
#[derive(ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(ToSchema)]
pub struct ErrorDetail {
    /// Stable machine-readable code, e.g. `invalid_request`, `not_found`, `invalid_state`.
    pub code: String,
    /// What is wrong, for a person.
    pub message: String,
    /// Structured detail (the offending field, every problem found…), or null.
    pub details: Value,
}

/// The request is malformed: bad JSON, a missing or invalid field (`details.field`
/// names it), a malformed path or query parameter.
#[derive(ToResponse)]
pub struct BadRequest(pub ErrorBody);

/// No valid bearer token (`unauthorized`).
#[derive(ToResponse)]
pub struct Unauthorized(pub ErrorBody);

/// The token's role may not do this (`forbidden`).
#[derive(ToResponse)]
pub struct Forbidden(pub ErrorBody);

/// No such thing in this workspace (`not_found`).
#[derive(ToResponse)]
pub struct NotFound(pub ErrorBody);

/// Well-formed but invalid, e.g. a plan that fails validation; `details` lists every problem.
#[derive(ToResponse)]
pub struct Unprocessable(pub ErrorBody);

/// `GET /healthz` and `GET /readyz` answer.
#[derive(ToSchema)]
pub struct Health {
    /// `ok` (alive) or `ready` (the database answers).
    pub status: String,
}
