//! The bodies of the BDI writes, shared by the REST routes and the agent
//! tools: enum-valued fields come as text and are parsed here, so an unknown
//! value (a strategy `reckless`) is an [`InvalidValue`] naming the choices.

use serde::Deserialize;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    rules::{CommitmentStrategy, PriorityInputs},
    state::{BeliefWrite, DesireCreate, GoalCreate, IntentionCreate},
};
use crate::domain::UnknownValue;

/// An enum-valued field whose value is not one of its choices.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {source}")]
pub struct InvalidValue {
    /// The field.
    pub field: &'static str,
    /// What was wrong, with the accepted values.
    pub source: UnknownValue,
}

/// Parses an enum value from text.
pub fn parse_value<T: std::str::FromStr<Err = UnknownValue>>(
    field: &'static str,
    s: &str,
) -> Result<T, InvalidValue> {
    s.parse().map_err(|source| InvalidValue { field, source })
}

/// `PUT /v1/agents/{agent_id}/beliefs` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutBelief {
    /// `environment`, `self`, `agent` or `case`.
    #[schema(value_type = coordinator_core::bdi::BeliefCategory)]
    pub category: String,
    /// What it is about (1–256 characters); one belief per (category, subject).
    pub subject: String,
    /// What the agent holds true (1–4000 characters).
    pub content: String,
    /// Certainty in [0, 1].
    #[schema(minimum = 0, maximum = 1)]
    pub certainty: f64,
    /// Why (logged with the revision; at most 1000 characters).
    #[serde(default)]
    pub reason: Option<String>,
}

impl PutBelief {
    /// The use case's input (an unknown category is a 422 naming the choices).
    pub fn input(self) -> Result<BeliefWrite, InvalidValue> {
        Ok(BeliefWrite {
            category: parse_value("category", &self.category)?,
            subject: self.subject,
            content: self.content,
            certainty: self.certainty,
            reason: self.reason.unwrap_or_default(),
        })
    }
}

/// `POST /v1/agents/{agent_id}/desires` body: the priority formula's components, each in [0, 1].
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateDesire {
    /// What is desired (1–4000 characters).
    pub description: String,
    /// `terminal` or `instrumental`.
    #[schema(value_type = coordinator_core::bdi::DesireKind)]
    pub kind: String,
    /// Weight 0.30.
    #[schema(minimum = 0, maximum = 1)]
    pub base_priority: f64,
    /// Weight 0.25.
    #[schema(minimum = 0, maximum = 1)]
    pub importance: f64,
    /// Weight 0.25.
    #[schema(minimum = 0, maximum = 1)]
    pub urgency: f64,
    /// Weight 0.15.
    #[schema(minimum = 0, maximum = 1)]
    pub strategic_alignment: f64,
    /// Weight 0.05 (default 1: all dependencies met).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1)]
    pub dependency_status: Option<f64>,
    /// For an instrumental desire: the active desires it serves (at least one).
    #[serde(default)]
    pub serves: Vec<Uuid>,
    /// Scarce resources it needs (resource conflicts).
    #[serde(default)]
    pub resources: Vec<String>,
    /// Strategic direction (strategy conflicts with a different one).
    #[serde(default)]
    pub strategy: Option<String>,
    /// Active desires its achievement rules out (goal conflicts).
    #[serde(default)]
    pub incompatible_with: Vec<Uuid>,
}

impl CreateDesire {
    /// The use case's input (an unknown kind is a 422 naming the choices;
    /// `dependency_status` defaults to 1: all dependencies met).
    pub fn input(self) -> Result<DesireCreate, InvalidValue> {
        Ok(DesireCreate {
            description: self.description,
            kind: parse_value("kind", &self.kind)?,
            inputs: PriorityInputs {
                base_priority: self.base_priority,
                importance: self.importance,
                urgency: self.urgency,
                strategic_alignment: self.strategic_alignment,
                dependency_status: self.dependency_status.unwrap_or(1.0),
            },
            serves: self.serves,
            resources: self.resources,
            strategy: self.strategy,
            incompatible_with: self.incompatible_with,
        })
    }
}

/// `POST /v1/agents/{agent_id}/goals` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateGoal {
    /// What to reach (1–4000 characters).
    pub description: String,
    /// `strategic`, `tactical` or `operational`.
    #[schema(value_type = coordinator_core::bdi::GoalTier)]
    pub tier: String,
    /// Parent goal of the same agent, at this tier or above.
    #[serde(default)]
    pub parent_goal_id: Option<Uuid>,
    /// The desire it realises.
    #[serde(default)]
    pub desire_id: Option<Uuid>,
    /// How to tell it is reached.
    #[serde(default)]
    pub success_criteria: Option<String>,
    /// Deadline (RFC 3339).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub deadline: Option<OffsetDateTime>,
}

impl CreateGoal {
    /// The use case's input (an unknown tier is a 422 naming the choices).
    pub fn input(self) -> Result<GoalCreate, InvalidValue> {
        Ok(GoalCreate {
            description: self.description,
            tier: parse_value("tier", &self.tier)?,
            parent_goal_id: self.parent_goal_id,
            desire_id: self.desire_id,
            success_criteria: self.success_criteria.unwrap_or_default(),
            deadline: self.deadline,
        })
    }
}

/// `POST /v1/agents/{agent_id}/intentions` body (`intention_commit`).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommitIntention {
    /// What is intended (1–4000 characters).
    pub description: String,
    /// `single-minded`, `open-minded` (default) or `cautious`.
    #[serde(default)]
    #[schema(value_type = Option<coordinator_core::bdi::CommitmentStrategy>)]
    pub strategy: Option<String>,
    /// The goal pursued.
    #[serde(default)]
    pub goal_id: Option<Uuid>,
    /// The active desire committed to: the intention takes its priority.
    #[serde(default)]
    pub desire_id: Option<Uuid>,
    /// Priority in [0, 1] when no desire is named (default 0.5).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1)]
    pub priority: Option<f64>,
}

impl CommitIntention {
    /// The use case's input (an unknown strategy is a 422 naming the
    /// choices; the default is open-minded, the seed's).
    pub fn input(self) -> Result<IntentionCreate, InvalidValue> {
        Ok(IntentionCreate {
            description: self.description,
            goal_id: self.goal_id,
            desire_id: self.desire_id,
            strategy: match &self.strategy {
                Some(s) => parse_value("strategy", s)?,
                None => CommitmentStrategy::OpenMinded,
            },
            priority: self.priority,
        })
    }
}
