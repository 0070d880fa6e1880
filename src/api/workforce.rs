//! `/v1` routes of workforce.

use axum::Router;

use super::AppState;

/// Routes of this resource.
pub fn router() -> Router<AppState> {
    Router::new()
}
