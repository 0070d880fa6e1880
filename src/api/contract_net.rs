//! `/v1` routes of contract net.

use axum::Router;

use super::AppState;

/// Routes of this resource.
pub fn router() -> Router<AppState> {
    Router::new()
}
