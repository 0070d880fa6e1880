//! A budget too small for a plan: what the cheapest version of the plan
//! needs (every optional task dropped), and the plan trimmed to fit a
//! budget by dropping optional tasks, most expensive first. Pure; the
//! trimmed plan still goes through validation.

use super::spec::PlanSpec;

/// How a plan relates to a budget it exceeds.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetFit {
    /// What the whole plan is estimated to cost.
    pub plan_cost: f64,
    /// The smallest budget the plan can run on: its required tasks' cost.
    pub minimum_budget: f64,
    /// The plan without enough optional tasks to fit the budget, and the
    /// keys dropped; `None` when even the required tasks exceed it.
    pub trimmed: Option<(PlanSpec, Vec<String>)>,
}

/// What a plan is estimated to cost (negative estimates count as zero).
pub fn cost(plan: &PlanSpec) -> f64 {
    plan.tasks.iter().map(|t| t.estimated_cost.max(0.0)).sum()
}

/// Fits `plan` to `budget` by dropping optional tasks, the most expensive
/// first (ties: the later in the plan). A task that depended on a dropped
/// one waits for that task's own dependencies instead, so the order of what
/// remains is kept.
pub fn fit_to_budget(plan: &PlanSpec, budget: f64) -> BudgetFit {
    let plan_cost = cost(plan);
    let minimum_budget: f64 = plan
        .tasks
        .iter()
        .filter(|t| !t.optional)
        .map(|t| t.estimated_cost.max(0.0))
        .sum();
    if minimum_budget > budget {
        return BudgetFit {
            plan_cost,
            minimum_budget,
            trimmed: None,
        };
    }
    let mut optional: Vec<usize> = (0..plan.tasks.len())
        .filter(|&i| plan.tasks[i].optional)
        .collect();
    optional.sort_by(|&a, &b| {
        plan.tasks[b]
            .estimated_cost
            .total_cmp(&plan.tasks[a].estimated_cost)
            .then(b.cmp(&a))
    });
    let mut trimmed = plan.clone();
    let mut dropped = Vec::new();
    for i in optional {
        if cost(&trimmed) <= budget {
            break;
        }
        let key = plan.tasks[i].id.clone();
        trimmed = without(&trimmed, &key);
        dropped.push(key);
    }
    BudgetFit {
        plan_cost,
        minimum_budget,
        trimmed: Some((trimmed, dropped)),
    }
}

/// `plan` without task `key`; its dependents inherit its dependencies.
fn without(plan: &PlanSpec, key: &str) -> PlanSpec {
    let inherited: Vec<String> = plan
        .tasks
        .iter()
        .find(|t| t.id == key)
        .map(|t| t.depends_on.clone())
        .unwrap_or_default();
    let tasks = plan
        .tasks
        .iter()
        .filter(|t| t.id != key)
        .map(|t| {
            let mut t = t.clone();
            if t.depends_on.iter().any(|d| d == key) {
                let mut deps: Vec<String> =
                    t.depends_on.iter().filter(|d| *d != key).cloned().collect();
                for d in &inherited {
                    if !deps.contains(d) {
                        deps.push(d.clone());
                    }
                }
                t.depends_on = deps;
            }
            t
        })
        .collect();
    PlanSpec { tasks }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn plan() -> PlanSpec {
        let t = |id: &str, deps: &[&str], cost: f64, optional: bool| {
            json!({"id": id, "title": id, "task_type": "research", "depends_on": deps,
                   "estimated_cost": cost, "optional": optional})
        };
        serde_json::from_value(json!({"tasks": [
            t("research", &[], 1.0, false),
            t("deep_dive", &["research"], 3.0, true),
            t("extra_review", &["deep_dive"], 2.0, true),
            t("draft", &["deep_dive"], 1.5, false),
        ]}))
        .expect("plan")
    }

    #[test]
    fn optional_tasks_go_most_expensive_first_until_it_fits() {
        let fit = fit_to_budget(&plan(), 5.0);
        assert_eq!(fit.plan_cost, 7.5);
        assert_eq!(fit.minimum_budget, 2.5);
        let (trimmed, dropped) = fit.trimmed.expect("fits");
        assert_eq!(dropped, ["deep_dive"]);
        let keys: Vec<&str> = trimmed.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(keys, ["research", "extra_review", "draft"]);
        // Who waited for deep_dive now waits for what it waited for.
        assert_eq!(trimmed.tasks[1].depends_on, ["research"]);
        assert_eq!(trimmed.tasks[2].depends_on, ["research"]);
        assert!(cost(&trimmed) <= 5.0);
    }

    #[test]
    fn only_as_many_as_needed_are_dropped() {
        let (_, dropped) = fit_to_budget(&plan(), 7.5).trimmed.expect("fits");
        assert!(dropped.is_empty());
        let (_, dropped) = fit_to_budget(&plan(), 2.5).trimmed.expect("fits");
        assert_eq!(dropped, ["deep_dive", "extra_review"]);
    }

    #[test]
    fn required_work_over_the_budget_cannot_fit() {
        let fit = fit_to_budget(&plan(), 2.0);
        assert_eq!(fit.minimum_budget, 2.5);
        assert_eq!(fit.trimmed, None);
    }
}
