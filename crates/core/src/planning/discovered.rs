//! Discovered work (seed 003 `manage_subtasks`): an agent adds tasks to its
//! mission while it works. Pure: the current plan, the agent's task and the
//! new tasks in; the extended plan out, which then goes through the same
//! validation and installation as any replan.

use serde::{Deserialize, Serialize};

use super::spec::{PlanSpec, TaskSpec};
use crate::invalid::Invalid;

/// Most tasks one call may add.
pub const MAX_DISCOVERED: usize = 20;

/// Where new tasks go relative to the agent's current task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// After it: a new task that names no dependency waits for the current task.
    #[default]
    Successor,
    /// Beside it: new tasks run now, and whatever waits for the current task
    /// also waits for them (they are part of its work).
    Child,
}

/// The plan with `new` tasks added around the task keyed `anchor`.
/// `current` is every task of the mission now (finished, running and not
/// started) with its dependencies by key. New keys must be fresh; a new
/// task's `depends_on` may name existing tasks and other new ones.
pub fn extend(
    current: &[TaskSpec],
    anchor: &str,
    new: Vec<TaskSpec>,
    placement: Placement,
) -> Result<PlanSpec, Invalid> {
    if new.is_empty() {
        return Err(Invalid::new("tasks", "tasks must name at least one task"));
    }
    if new.len() > MAX_DISCOVERED {
        return Err(Invalid::new(
            "tasks",
            format!("at most {MAX_DISCOVERED} tasks can be added at once"),
        ));
    }
    if !current.iter().any(|t| t.id == anchor) {
        return Err(Invalid::new(
            "task",
            format!("the mission has no task '{anchor}'"),
        ));
    }
    for (i, t) in new.iter().enumerate() {
        if current.iter().any(|c| c.id == t.id) || new[..i].iter().any(|o| o.id == t.id) {
            return Err(Invalid::new(
                "tasks",
                format!("task key '{}' is taken; choose a new key", t.id),
            ));
        }
    }
    let new_keys: Vec<String> = new.iter().map(|t| t.id.clone()).collect();
    let mut tasks: Vec<TaskSpec> = current.to_vec();
    if placement == Placement::Child {
        for t in tasks
            .iter_mut()
            .filter(|t| t.depends_on.iter().any(|d| d == anchor))
        {
            t.depends_on.extend(new_keys.iter().cloned());
        }
    }
    tasks.extend(new.into_iter().map(|mut t| {
        if placement == Placement::Successor && t.depends_on.is_empty() {
            t.depends_on.push(anchor.to_owned());
        }
        t
    }));
    Ok(PlanSpec { tasks })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(id: &str, deps: &[&str]) -> TaskSpec {
        TaskSpec {
            id: id.into(),
            title: id.into(),
            task_type: "writing".into(),
            description: String::new(),
            required_skills: vec![],
            required_tools: vec![],
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
            success_criteria: vec![],
            estimated_cost: 0.0,
            optional: false,
            inputs: serde_json::json!({}),
        }
    }

    fn deps<'a>(plan: &'a PlanSpec, id: &str) -> Vec<&'a str> {
        let t = plan.tasks.iter().find(|t| t.id == id).expect("task");
        t.depends_on.iter().map(String::as_str).collect()
    }

    #[test]
    fn successors_wait_for_the_current_task() {
        let current = [spec("a", &[]), spec("b", &["a"])];
        let plan = extend(
            &current,
            "a",
            vec![spec("x", &[]), spec("y", &["x"])],
            Placement::Successor,
        )
        .expect("extended");
        assert_eq!(deps(&plan, "x"), ["a"]);
        assert_eq!(deps(&plan, "y"), ["x"]);
        assert_eq!(deps(&plan, "b"), ["a"], "existing tasks are untouched");
        assert_eq!(plan.tasks.len(), 4);
    }

    #[test]
    fn children_hold_back_what_waits_for_the_current_task() {
        let current = [spec("a", &[]), spec("b", &["a"]), spec("c", &[])];
        let plan = extend(&current, "a", vec![spec("x", &[])], Placement::Child).expect("extended");
        assert!(
            deps(&plan, "x").is_empty(),
            "a child runs beside its parent"
        );
        assert_eq!(deps(&plan, "b"), ["a", "x"]);
        assert!(deps(&plan, "c").is_empty());
    }

    #[test]
    fn keys_must_be_fresh_and_the_anchor_known() {
        let current = [spec("a", &[])];
        let e =
            extend(&current, "a", vec![spec("a", &[])], Placement::Successor).expect_err("taken");
        assert!(e.message.contains("taken"), "{}", e.message);
        let e = extend(
            &current,
            "a",
            vec![spec("x", &[]), spec("x", &[])],
            Placement::Successor,
        )
        .expect_err("duplicate");
        assert!(e.message.contains("taken"), "{}", e.message);
        assert!(extend(&current, "zz", vec![spec("x", &[])], Placement::Successor).is_err());
        assert!(extend(&current, "a", vec![], Placement::Successor).is_err());
        let many = (0..=MAX_DISCOVERED)
            .map(|i| spec(&format!("t{i}"), &[]))
            .collect();
        assert!(extend(&current, "a", many, Placement::Successor).is_err());
    }
}
