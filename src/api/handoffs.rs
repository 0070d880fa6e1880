//! `/v1` routes of handoffs.

use axum::Router;

use super::AppState;

/// Routes of this resource.
pub fn router() -> Router<AppState> {
    Router::new()
}
