//! How the mission use cases' errors become HTTP answers: one status and
//! one stable code per refusal, for every `/v1/missions` route and tool.

use serde_json::{Value, json};

use crate::error::ApiError;

impl From<crate::missions::MissionError> for ApiError {
    fn from(e: crate::missions::MissionError) -> Self {
        use crate::missions::MissionError as E;
        let message = e.to_string();
        match e {
            E::Invalid(e) => e.into(),
            E::NotFound(_) => ApiError::NotFound(message),
            E::Plan(e) => e.into(),
            E::IllegalTransition(e) => e.into(),
            E::Concurrent => ApiError::conflict("concurrent_update", message),
            E::InvalidAssignments(problems) => ApiError::Unprocessable {
                code: "invalid_assignments",
                message,
                details: json!({ "problems": problems }),
            },
            E::Review(e) => (*e).into(),
            E::Database(e) => e.into(),
            E::Unexpected(e) => ApiError::Unexpected(e),
        }
    }
}

impl From<crate::missions::StaleMission> for ApiError {
    fn from(e: crate::missions::StaleMission) -> Self {
        ApiError::Conflict {
            code: "version_conflict",
            message: e.to_string(),
            details: json!({ "mission_id": e.mission_id, "expected": e.expected, "current": e.current }),
        }
    }
}

impl From<crate::missions::edit::EditError> for ApiError {
    fn from(e: crate::missions::edit::EditError) -> Self {
        use crate::missions::edit::EditError as E;
        let message = e.to_string();
        match e {
            E::Invalid(e) => e.into(),
            E::NotFound(_) => ApiError::NotFound(message),
            E::VersionConflict(stale) => stale.into(),
            E::Finished {
                mission_id,
                status,
                fields,
            } => ApiError::Conflict {
                code: "invalid_state",
                message,
                details: json!({ "mission_id": mission_id, "status": status.as_str(), "fields": fields }),
            },
            E::NotFinished { mission_id, status } => ApiError::Conflict {
                code: "invalid_state",
                message,
                details: json!({ "mission_id": mission_id, "status": status.as_str() }),
            },
            E::BudgetBelowSpent {
                mission_id,
                limit,
                spent,
            } => ApiError::Unprocessable {
                code: "budget_below_spent",
                message,
                details: json!({ "mission_id": mission_id, "budget": limit, "spent": spent }),
            },
            E::Concurrent => ApiError::conflict("concurrent_update", message),
            E::Mission(e) => e.into(),
            E::Database(e) => e.into(),
        }
    }
}

impl From<crate::missions::planner::PlanningError> for ApiError {
    fn from(e: crate::missions::planner::PlanningError) -> Self {
        use crate::missions::planner::PlanningError as E;
        let message = e.to_string();
        match e {
            E::Invalid {
                planner,
                problems,
                budget_advice,
            } => {
                let mut details = json!({ "planner": planner, "problems": problems });
                if let Some(advice) = budget_advice {
                    details["budget"] = advice;
                }
                ApiError::Unprocessable {
                    code: "plan_invalid",
                    message,
                    details,
                }
            }
            E::Decomposition { info, .. } => ApiError::Unprocessable {
                code: "plan_decomposition_failed",
                message,
                details: info,
            },
            E::NoAlternative { tried } => ApiError::Unprocessable {
                code: "no_alternative_plan",
                message,
                details: json!({ "tried": tried }),
            },
            E::Database(e) => e.into(),
            E::Unexpected(e) => ApiError::Unexpected(e),
        }
    }
}

impl From<crate::missions::human::HumanActionError> for ApiError {
    fn from(e: crate::missions::human::HumanActionError) -> Self {
        use crate::missions::human::HumanActionError as E;
        let message = e.to_string();
        match e {
            E::Invalid(e) => e.into(),
            E::TaskNotFound { .. } => ApiError::NotFound(message),
            E::WrongState(_) => ApiError::conflict("invalid_state", message),
            E::InvalidTasks(problems) => ApiError::Unprocessable {
                code: "invalid_tasks",
                message,
                details: json!({ "problems": problems }),
            },
            E::TaskChanged | E::ReopenRaced => ApiError::conflict("conflict", message),
            E::VersionConflict(stale) => stale.into(),
            E::IllegalTransition(e) => e.into(),
            E::Mission(e) => e.into(),
            E::Database(e) => e.into(),
            E::Unexpected(e) => ApiError::Unexpected(e),
        }
    }
}

impl From<crate::missions::replan::ReplanError> for ApiError {
    fn from(e: crate::missions::replan::ReplanError) -> Self {
        use crate::missions::replan::ReplanError as E;
        let message = e.to_string();
        match e {
            E::Invalid(e) => e.into(),
            E::NotFound(_) | E::NoPlanVersion { .. } => ApiError::NotFound(message),
            E::WrongState(_) => ApiError::conflict("invalid_state", message),
            E::NeedsLlm => ApiError::Unprocessable {
                code: "replan_needs_llm",
                message,
                details: Value::Null,
            },
            E::RoutineExists(name) => ApiError::Conflict {
                code: "routine_exists",
                message,
                details: json!({ "name": name }),
            },
            E::Plan(e) => e.into(),
            E::Mission(e) => e.into(),
            E::Database(e) => e.into(),
            E::Unexpected(e) => ApiError::Unexpected(e),
        }
    }
}

#[cfg(test)]
mod error_tests {
    use axum::{http::StatusCode, response::IntoResponse};
    use uuid::Uuid;

    use super::ApiError;
    use crate::missions::{
        MissionError, human::HumanActionError, planner::PlanningError, replan::ReplanError,
    };

    async fn status_and_code(e: impl Into<ApiError>) -> (StatusCode, String) {
        let r = e.into().into_response();
        let status = r.status();
        let body = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        (status, v["error"]["code"].as_str().unwrap().to_owned())
    }

    fn expect(status: StatusCode, code: &str) -> (StatusCode, String) {
        (status, code.to_owned())
    }

    #[tokio::test]
    async fn mission_errors_keep_their_status_and_code() {
        assert_eq!(
            status_and_code(MissionError::NotFound(Uuid::nil())).await,
            expect(StatusCode::NOT_FOUND, "not_found")
        );
        assert_eq!(
            status_and_code(MissionError::Concurrent).await,
            expect(StatusCode::CONFLICT, "concurrent_update")
        );
        assert_eq!(
            status_and_code(MissionError::InvalidAssignments(Vec::new())).await,
            expect(StatusCode::UNPROCESSABLE_ENTITY, "invalid_assignments")
        );
    }

    #[tokio::test]
    async fn planning_errors_keep_their_status_and_code() {
        assert_eq!(
            status_and_code(PlanningError::Invalid {
                planner: "explicit".into(),
                problems: vec![],
                budget_advice: None,
            })
            .await,
            expect(StatusCode::UNPROCESSABLE_ENTITY, "plan_invalid")
        );
        assert_eq!(
            status_and_code(PlanningError::NoAlternative { tried: vec![] }).await,
            expect(StatusCode::UNPROCESSABLE_ENTITY, "no_alternative_plan")
        );
    }

    #[tokio::test]
    async fn human_action_errors_keep_their_status_and_code() {
        assert_eq!(
            status_and_code(HumanActionError::WrongState("x".into())).await,
            expect(StatusCode::CONFLICT, "invalid_state")
        );
        assert_eq!(
            status_and_code(HumanActionError::TaskChanged).await,
            expect(StatusCode::CONFLICT, "conflict")
        );
        assert_eq!(
            status_and_code(HumanActionError::TaskNotFound {
                mission: Uuid::nil(),
                task: "t".into()
            })
            .await,
            expect(StatusCode::NOT_FOUND, "not_found")
        );
    }

    #[tokio::test]
    async fn edit_errors_keep_their_status_and_code() {
        use crate::{domain::MissionStatus, missions::edit::EditError};
        let id = Uuid::nil();
        assert_eq!(
            status_and_code(EditError::VersionConflict(crate::missions::StaleMission {
                mission_id: id,
                expected: 1,
                current: 2
            }))
            .await,
            expect(StatusCode::CONFLICT, "version_conflict")
        );
        assert_eq!(
            status_and_code(EditError::Finished {
                mission_id: id,
                status: MissionStatus::Completed,
                fields: vec!["priority"]
            })
            .await,
            expect(StatusCode::CONFLICT, "invalid_state")
        );
        assert_eq!(
            status_and_code(EditError::NotFinished {
                mission_id: id,
                status: MissionStatus::Executing
            })
            .await,
            expect(StatusCode::CONFLICT, "invalid_state")
        );
        assert_eq!(
            status_and_code(EditError::BudgetBelowSpent {
                mission_id: id,
                limit: 1.0,
                spent: 2.0
            })
            .await,
            expect(StatusCode::UNPROCESSABLE_ENTITY, "budget_below_spent")
        );
        assert_eq!(
            status_and_code(EditError::NotFound(id)).await,
            expect(StatusCode::NOT_FOUND, "not_found")
        );
    }

    #[tokio::test]
    async fn replan_errors_keep_their_status_and_code() {
        assert_eq!(
            status_and_code(ReplanError::NeedsLlm).await,
            expect(StatusCode::UNPROCESSABLE_ENTITY, "replan_needs_llm")
        );
        assert_eq!(
            status_and_code(ReplanError::RoutineExists("r".into())).await,
            expect(StatusCode::CONFLICT, "routine_exists")
        );
    }
}
