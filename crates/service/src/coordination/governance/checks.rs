//! Checking an action against the profile without recording anything.

use super::*;

/// `POST /v1/governance/check` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckRequest {
    /// The action's category: `budget`, `hiring`, `strategy`, `operational` or a custom one.
    #[schema(min_length = 1, max_length = 64, pattern = r"\S")]
    pub action_type: String,
    /// Free-form details of the action (kept for the decision, not judged).
    #[serde(default)]
    pub action_details: Option<Value>,
    /// What the action would cost or hire.
    #[serde(
        default,
        deserialize_with = "coordinator_core::objects::optional_object"
    )]
    pub estimated_impact: Option<Impact>,
    /// The agent flags the action as exceptional.
    #[serde(default)]
    pub exceptional: bool,
}

/// The measurable impact of an action.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Impact {
    /// Cost, non-negative.
    #[serde(default)]
    pub estimated_cost: Option<f64>,
    /// People hired, non-negative.
    #[serde(default)]
    pub headcount: Option<i64>,
}

pub(crate) fn action_of(
    action_type: &str,
    impact: Option<&Impact>,
    exceptional: bool,
) -> Result<Action, Invalid> {
    check_len("action_type", action_type, 64)?;
    let impact = impact.cloned().unwrap_or_default();
    if let Some(c) = impact.estimated_cost {
        check_amount("estimated_impact.estimated_cost", c)?;
    }
    if impact.headcount.is_some_and(|h| h < 0) {
        return Err(Invalid::new(
            "estimated_impact.headcount",
            "headcount must be non-negative",
        ));
    }
    Ok(Action {
        category: action_type.to_owned(),
        estimated_cost: impact.estimated_cost,
        headcount: impact.headcount,
        exceptional,
    })
}

/// Runs the governance check against the workspace's profile (writes nothing).
pub async fn check_action(
    pool: &PgPool,
    who: &Principal,
    req: CheckRequest,
) -> Result<CheckResult, GovernanceError> {
    let action = action_of(
        &req.action_type,
        req.estimated_impact.as_ref(),
        req.exceptional,
    )?;
    let mut conn = pool.acquire().await?;
    let profile = store::profile(&mut conn, who.workspace_id).await?;
    Ok(check(profile.map(|p| p.rules()).as_ref(), &action))
}
