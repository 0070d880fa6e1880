//! Plan data types: what a planner produces and what a user may submit.
//!
//! Unknown fields are rejected (`deny_unknown_fields`) so that a typo such as
//! `depend_on` in a hand-written plan is reported instead of silently ignored.

use serde::{Deserialize, Serialize};

/// A task's success criterion: defined with the checks that judge it.
pub use crate::verification::Criterion;

/// A plan: the tasks of a mission and their dependencies, as submitted or produced by a planner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanSpec {
    /// The tasks, in the author's order; validation keeps this order where dependencies allow.
    pub tasks: Vec<TaskSpec>,
}

/// One task of a plan, keyed by a plan-local id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// Plan-local key such as `"research"`; unique within the plan.
    pub id: String,
    /// Short human-readable title.
    pub title: String,
    /// Kind of work, e.g. `"research"`, `"writing"`, `"review"`, `"coding"`, `"analysis"`.
    pub task_type: String,
    /// Instructions for the agent doing the task.
    #[serde(default)]
    pub description: String,
    /// Skills an agent needs for this task (compared case-insensitively).
    #[serde(default)]
    pub required_skills: Vec<String>,
    /// Tools an agent needs for this task (compared exactly).
    #[serde(default)]
    pub required_tools: Vec<String>,
    /// Ids of tasks that must finish before this one starts.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// How the result is judged; at least one criterion must be `must_pass`.
    #[serde(default)]
    pub success_criteria: Vec<Criterion>,
    /// Estimated cost in the mission's budget unit; finite and non-negative.
    #[serde(default)]
    pub estimated_cost: f64,
    /// Whether the mission may succeed without this task.
    #[serde(default)]
    pub optional: bool,
    /// Free-form task inputs; must be a JSON object.
    #[serde(default = "empty_object")]
    pub inputs: serde_json::Value,
}

/// Default for `TaskSpec::inputs`: an empty object, so omitted inputs are still valid.
fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn minimal_task_gets_defaults() {
        let plan: PlanSpec = serde_json::from_value(json!({
            "tasks": [{ "id": "a", "title": "A", "task_type": "research" }]
        }))
        .unwrap();
        let task = &plan.tasks[0];
        assert_eq!(task.description, "");
        assert!(task.required_skills.is_empty());
        assert!(task.required_tools.is_empty());
        assert!(task.depends_on.is_empty());
        assert!(task.success_criteria.is_empty());
        assert_eq!(task.estimated_cost, 0.0);
        assert!(!task.optional);
        assert_eq!(task.inputs, json!({}));
    }

    #[test]
    fn criterion_must_pass_defaults_to_false() {
        let c: Criterion = serde_json::from_value(json!({ "description": "x" })).unwrap();
        assert!(!c.must_pass);
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let typo_in_task = json!({
            "tasks": [{ "id": "a", "title": "A", "task_type": "t", "depend_on": ["b"] }]
        });
        let err = serde_json::from_value::<PlanSpec>(typo_in_task).unwrap_err();
        assert!(err.to_string().contains("depend_on"), "{err}");

        let typo_in_plan = json!({ "tasks": [], "task": [] });
        assert!(serde_json::from_value::<PlanSpec>(typo_in_plan).is_err());

        let typo_in_criterion = json!({ "description": "x", "mustpass": true });
        assert!(serde_json::from_value::<Criterion>(typo_in_criterion).is_err());
    }

    #[test]
    fn round_trips_through_json() {
        let plan = PlanSpec {
            tasks: vec![TaskSpec {
                id: "a".into(),
                title: "A".into(),
                task_type: "coding".into(),
                description: "do it".into(),
                required_skills: vec!["coding".into()],
                required_tools: vec!["git".into()],
                depends_on: vec![],
                success_criteria: vec![Criterion {
                    description: "compiles".into(),
                    must_pass: true,
                    check: None,
                }],
                estimated_cost: 0.1,
                optional: true,
                inputs: json!({ "repo": "x" }),
            }],
        };
        let text = serde_json::to_string(&plan).unwrap();
        let back: PlanSpec = serde_json::from_str(&text).unwrap();
        assert_eq!(back, plan);
    }
}
