//! The shapes an agent's planning tools answer with (seed §5.4, §8): a plan
//! as ordered phases of steps with its risks and decision points, an HTN
//! decomposition as ordered subtasks with preconditions and effects, and the
//! state of a plan step (§8.5).
//!
//! Pure: the service plans (`missions::planner`, `planning::htn`) and these
//! functions only describe the result, so the descriptions are testable
//! without a database.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use crate::domain::text_enum;
use crate::planning::{Condition, PlanSpec, TaskSpec};

/// A plan step's state (seed §8.5): `pending` → `executing` → `completed` | `failed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    Executing,
    /// Done.
    Completed,
    /// Could not be done.
    Failed,
}

text_enum!(StepStatus {
    Pending => "pending",
    Executing => "executing",
    Completed => "completed",
    Failed => "failed",
});

impl StepStatus {
    /// Whether reporting this is progress on the intention (and so restarts
    /// its stall clock): working on or finishing a step is; a failed or a
    /// not-yet-started step is not, so a plan that keeps failing still
    /// stalls and gets reconsidered.
    pub fn is_progress(self) -> bool {
        matches!(self, StepStatus::Executing | StepStatus::Completed)
    }
}

/// How bad a risk would be (seed §8.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Impact {
    /// Easily worked around.
    Low,
    /// A delay or extra cost; the plan needs adjusting.
    Medium,
    /// Timeline or budget badly hit; may need replanning.
    High,
    /// Threatens the plan; escalate.
    Critical,
}

text_enum!(Impact as "RiskImpact", {
    Low => "low",
    Medium => "medium",
    High => "high",
    Critical => "critical",
});

/// One step of an outlined plan (seed §5.4 "Plan structure").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// The task's plan-local id.
    pub id: String,
    /// Short title.
    pub title: String,
    /// Instructions.
    pub description: String,
    /// Kind of work (`research`, `writing`, …).
    pub task_type: String,
    /// Always `primitive`: compound tasks are decomposed before a plan is outlined.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Steps that must finish first.
    pub dependencies: Vec<String>,
    /// Skills it needs.
    pub required_skills: Vec<String>,
    /// Estimated cost in the budget's unit.
    pub estimated_cost: f64,
    /// Whether the plan succeeds without it.
    pub optional: bool,
    /// On the most expensive dependency chain.
    pub on_critical_path: bool,
    /// `pending`: an outlined plan has not started.
    pub status: StepStatus,
}

/// Steps that can run together once the earlier phases are done.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Phase {
    /// 1 for the steps with no dependencies.
    pub phase: usize,
    /// Its steps, in the plan's order.
    pub steps: Vec<Step>,
    /// Sum of its steps' estimates.
    pub estimated_cost: f64,
}

/// A risk of the plan (seed §8.6).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Risk {
    /// What could go wrong.
    pub description: String,
    /// How bad it would be.
    pub impact: Impact,
    /// Rough chance in [0, 1] (a heuristic; see each rule in [`outline`]).
    pub likelihood: f64,
    /// What to do about it.
    pub mitigation: String,
    /// Steps it concerns.
    pub affected_steps: Vec<String>,
}

/// A point where the plan waits on a judgement (seed §5.4 "Decision Points").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecisionPoint {
    /// The step whose verdict decides.
    pub step: String,
    /// What is decided.
    pub condition: String,
    /// The steps that go ahead when it passes.
    pub branches: Vec<String>,
}

/// A failed case similar to the plan, for the risk assessment.
#[derive(Debug, Clone, PartialEq)]
pub struct SimilarFailure {
    /// The case's id, as text.
    pub case_id: String,
    /// Its similarity to the goal, in [0, 1].
    pub similarity: f64,
}

/// A plan as phases, risks and decision points.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanOutline {
    /// Phases in order.
    pub phases: Vec<Phase>,
    /// Risks, the worst first.
    pub risks: Vec<Risk>,
    /// Review steps that gate what follows.
    pub decision_points: Vec<DecisionPoint>,
    /// The most expensive dependency chain.
    pub critical_path: Vec<String>,
    /// Sum of every step's estimate.
    pub total_estimated_cost: f64,
}

/// Share of the budget above which the estimate is a risk (the engine warns at 80 %).
pub const BUDGET_RISK_SHARE: f64 = 0.8;

/// Dependency levels: a task's level is one more than its deepest
/// dependency's (0 without dependencies). Unknown dependencies count as
/// met; a cycle (which validation refuses) is broken at the task listed last.
pub fn levels(plan: &PlanSpec) -> Vec<usize> {
    let index: HashMap<&str, usize> = plan
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    let mut level: Vec<Option<usize>> = vec![None; plan.tasks.len()];
    // Each pass settles every task whose dependencies are settled; a plan of
    // n tasks needs at most n passes.
    for _ in 0..=plan.tasks.len() {
        let mut changed = false;
        for (i, t) in plan.tasks.iter().enumerate() {
            if level[i].is_some() {
                continue;
            }
            let deps: Option<Vec<usize>> = t
                .depends_on
                .iter()
                .filter_map(|d| index.get(d.as_str()))
                .map(|&j| level[j])
                .collect();
            if let Some(deps) = deps {
                level[i] = Some(deps.into_iter().max().map_or(0, |m| m + 1));
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let deepest = level.iter().flatten().max().copied().unwrap_or(0);
    level
        .into_iter()
        .map(|l| l.unwrap_or(deepest + 1))
        .collect()
}

/// The tasks in execution order: by level, then as listed.
pub fn execution_order(plan: &PlanSpec) -> Vec<&TaskSpec> {
    let lv = levels(plan);
    let mut order: Vec<(usize, usize)> = lv.into_iter().enumerate().map(|(i, l)| (l, i)).collect();
    order.sort();
    order.into_iter().map(|(_, i)| &plan.tasks[i]).collect()
}

/// The ids of the tasks that depend on `id` directly.
fn dependents<'a>(plan: &'a PlanSpec, id: &str) -> Vec<&'a str> {
    plan.tasks
        .iter()
        .filter(|t| t.depends_on.iter().any(|d| d == id))
        .map(|t| t.id.as_str())
        .collect()
}

/// How many tasks wait for `id`, directly or not.
fn downstream(plan: &PlanSpec, id: &str) -> usize {
    let mut seen = BTreeSet::new();
    let mut todo = vec![id.to_owned()];
    while let Some(next) = todo.pop() {
        for d in dependents(plan, &next) {
            if seen.insert(d.to_owned()) {
                todo.push(d.to_owned());
            }
        }
    }
    seen.len()
}

fn is_review(t: &TaskSpec) -> bool {
    let kind = t.task_type.to_lowercase();
    ["review", "approval", "gate", "verification"]
        .iter()
        .any(|k| kind.contains(k))
}

/// Outlines a (validated) plan: phases by dependency level, the steps on the
/// critical path, review steps as decision points, and the risks these rules find:
///
/// - **budget**: the estimate takes at least 80 % of `budget` — high (critical
///   at 100 % or more), likelihood the share (capped at 1);
/// - **bottleneck**: a step that at least half of the other steps (and at
///   least two) wait for — high, likelihood the share of steps waiting;
/// - **no parallelism**: three or more steps, all on one chain — medium,
///   likelihood 0.1 per step (capped at 0.9): every delay delays the end;
/// - **similar failure**: each similar failed case of the plan library —
///   high, likelihood its similarity.
pub fn outline(
    plan: &PlanSpec,
    critical_path: &[String],
    budget: Option<f64>,
    failures: &[SimilarFailure],
) -> PlanOutline {
    let lv = levels(plan);
    let total: f64 = plan.tasks.iter().map(|t| t.estimated_cost).sum();
    let mut phases: Vec<Phase> = Vec::new();
    for (i, t) in plan.tasks.iter().enumerate() {
        let n = lv[i];
        while phases.len() <= n {
            phases.push(Phase {
                phase: phases.len() + 1,
                steps: Vec::new(),
                estimated_cost: 0.0,
            });
        }
        phases[n].estimated_cost += t.estimated_cost;
        phases[n].steps.push(Step {
            id: t.id.clone(),
            title: t.title.clone(),
            description: t.description.clone(),
            task_type: t.task_type.clone(),
            kind: "primitive",
            dependencies: t.depends_on.clone(),
            required_skills: t.required_skills.clone(),
            estimated_cost: t.estimated_cost,
            optional: t.optional,
            on_critical_path: critical_path.contains(&t.id),
            status: StepStatus::Pending,
        });
    }
    phases.retain(|p| !p.steps.is_empty());
    for (i, p) in phases.iter_mut().enumerate() {
        p.phase = i + 1;
    }
    let decision_points = plan
        .tasks
        .iter()
        .filter(|t| is_review(t))
        .map(|t| DecisionPoint {
            step: t.id.clone(),
            condition: if t.depends_on.is_empty() {
                format!("`{}` passes", t.id)
            } else {
                format!("the work of {} passes `{}`", quoted(&t.depends_on), t.id)
            },
            branches: dependents(plan, &t.id)
                .into_iter()
                .map(str::to_owned)
                .collect(),
        })
        .collect();
    let mut risks = risks(plan, critical_path, total, budget, failures);
    risks.sort_by(|a, b| {
        b.impact
            .cmp(&a.impact)
            .then(b.likelihood.total_cmp(&a.likelihood))
    });
    PlanOutline {
        phases,
        risks,
        decision_points,
        critical_path: critical_path.to_vec(),
        total_estimated_cost: total,
    }
}

fn risks(
    plan: &PlanSpec,
    critical_path: &[String],
    total: f64,
    budget: Option<f64>,
    failures: &[SimilarFailure],
) -> Vec<Risk> {
    let mut risks = Vec::new();
    let n = plan.tasks.len();
    if let Some(b) = budget.filter(|b| *b > 0.0) {
        let share = total / b;
        if share >= BUDGET_RISK_SHARE {
            risks.push(Risk {
                description: format!(
                    "the estimate ({total:.2}) takes {:.0} % of the budget ({b:.2}): a retry or two would exceed it",
                    share * 100.0
                ),
                impact: if share >= 1.0 {
                    Impact::Critical
                } else {
                    Impact::High
                },
                likelihood: share.min(1.0),
                mitigation: "mark nice-to-have steps optional, choose cheaper steps, or raise the budget"
                    .into(),
                affected_steps: critical_path.to_vec(),
            });
        }
    }
    for t in &plan.tasks {
        let waiting = downstream(plan, &t.id);
        if n > 2 && waiting >= 2 && waiting * 2 >= n - 1 {
            risks.push(Risk {
                description: format!(
                    "`{}` is a bottleneck: {waiting} of the other {} steps wait for it",
                    t.id,
                    n - 1
                ),
                impact: Impact::High,
                likelihood: waiting as f64 / (n - 1) as f64,
                mitigation: format!(
                    "give `{}` precise success criteria and start it first; prepare a fallback if it fails",
                    t.id
                ),
                affected_steps: vec![t.id.clone()],
            });
        }
    }
    if n >= 3 && critical_path.len() == n {
        risks.push(Risk {
            description: "no step runs in parallel: any delay delays the whole plan".into(),
            impact: Impact::Medium,
            likelihood: (0.1 * n as f64).min(0.9),
            mitigation: "split independent work into steps that can run side by side".into(),
            affected_steps: critical_path.to_vec(),
        });
    }
    for f in failures {
        risks.push(Risk {
            description: format!(
                "a similar plan failed before (plan-library case {}, similarity {:.2})",
                f.case_id, f.similarity
            ),
            impact: Impact::High,
            likelihood: f.similarity.clamp(0.0, 1.0),
            mitigation: "read that case's lessons (plan_library_search) and change what made it fail"
                .into(),
            affected_steps: Vec::new(),
        });
    }
    risks
}

fn quoted(ids: &[String]) -> String {
    ids.iter()
        .map(|d| format!("`{d}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One subtask of an HTN decomposition, as `htn_decompose` answers (seed §8.2).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HtnSubtask {
    /// 1-based position in execution order.
    pub order: usize,
    /// Plan-local id (nested ids are prefixed: `review.critique`).
    pub id: String,
    /// Title.
    pub title: String,
    /// Instructions.
    pub description: String,
    /// Kind of work.
    pub task_type: String,
    /// Always `primitive`: decomposition runs until every leaf is.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Subtasks that must finish first.
    pub depends_on: Vec<String>,
    /// What must be true before it runs.
    pub preconditions: Vec<String>,
    /// What is true after it ran.
    pub effects: Vec<String>,
    /// Skills it needs.
    pub required_skills: Vec<String>,
    /// Estimated cost.
    pub estimated_cost: f64,
}

/// A method condition in words.
pub fn describe_condition(c: &Condition) -> String {
    match (&c.equals, c.exists) {
        (Some(v), _) => format!("`{}` is {v}", c.key),
        (None, Some(false)) => format!("`{}` is not set", c.key),
        _ => format!("`{}` is set", c.key),
    }
}

/// A decomposed plan as ordered subtasks with preconditions and effects.
///
/// Preconditions: each dependency completed, an agent with each required
/// skill, and (for the subtasks that start the plan) the root method's
/// conditions on the current state. Effects: the subtask is completed and
/// its output is available to the subtasks that wait for it (or, for a
/// last subtask, part of the result).
pub fn htn_subtasks(plan: &PlanSpec, method_conditions: &[Condition]) -> Vec<HtnSubtask> {
    execution_order(plan)
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let mut pre: Vec<String> = t
                .depends_on
                .iter()
                .map(|d| format!("`{d}` is completed"))
                .collect();
            if t.depends_on.is_empty() {
                pre.extend(method_conditions.iter().map(describe_condition));
            }
            pre.extend(
                t.required_skills
                    .iter()
                    .map(|s| format!("an agent with skill `{s}` is available")),
            );
            let next = dependents(plan, &t.id);
            let mut effects = vec![format!("`{}` is completed", t.id)];
            effects.push(if next.is_empty() {
                format!("its {} output is part of the result", t.task_type)
            } else {
                format!(
                    "its {} output is available to {}",
                    t.task_type,
                    next.iter()
                        .map(|d| format!("`{d}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            });
            HtnSubtask {
                order: i + 1,
                id: t.id.clone(),
                title: t.title.clone(),
                description: t.description.clone(),
                task_type: t.task_type.clone(),
                kind: "primitive",
                depends_on: t.depends_on.clone(),
                preconditions: pre,
                effects,
                required_skills: t.required_skills.clone(),
                estimated_cost: t.estimated_cost,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan(tasks: serde_json::Value) -> PlanSpec {
        serde_json::from_value(json!({ "tasks": tasks })).unwrap()
    }

    fn chain() -> PlanSpec {
        plan(json!([
            {"id": "draft", "title": "D", "task_type": "writing", "depends_on": ["research"], "estimated_cost": 0.3},
            {"id": "research", "title": "R", "task_type": "research", "required_skills": ["research"], "estimated_cost": 0.2},
            {"id": "review", "title": "V", "task_type": "review", "depends_on": ["draft"], "estimated_cost": 0.1},
        ]))
    }

    #[test]
    fn steps_are_phased_by_dependency_level() {
        let p = plan(json!([
            {"id": "a", "title": "A", "task_type": "research", "estimated_cost": 1.0},
            {"id": "b", "title": "B", "task_type": "research", "estimated_cost": 2.0},
            {"id": "c", "title": "C", "task_type": "writing", "depends_on": ["a", "b"]},
            {"id": "d", "title": "D", "task_type": "writing", "depends_on": ["a"]},
        ]));
        assert_eq!(levels(&p), vec![0, 0, 1, 1]);
        let o = outline(&p, &["b".into(), "c".into()], None, &[]);
        assert_eq!(o.phases.len(), 2);
        assert_eq!(o.phases[0].phase, 1);
        assert_eq!(o.phases[0].steps.len(), 2);
        assert!((o.phases[0].estimated_cost - 3.0).abs() < 1e-12);
        assert!(o.phases[0].steps[1].on_critical_path);
        assert!(!o.phases[0].steps[0].on_critical_path);
        assert_eq!(o.phases[1].steps[0].status, StepStatus::Pending);
        assert!((o.total_estimated_cost - 3.0).abs() < 1e-12);
        // a waits for nobody but two wait for it: of 3 others, 2 >= half.
        assert!(o.risks.iter().any(|r| r.affected_steps == ["a"]));
    }

    #[test]
    fn a_chain_has_its_risks_and_review_decision_point() {
        let p = chain();
        let order: Vec<&str> = execution_order(&p).iter().map(|t| t.id.as_str()).collect();
        assert_eq!(order, ["research", "draft", "review"]);
        let path = vec!["research".to_owned(), "draft".into(), "review".into()];
        let failures = [SimilarFailure {
            case_id: "c1".into(),
            similarity: 0.8,
        }];
        let o = outline(&p, &path, Some(0.5), &failures);
        let impacts: Vec<Impact> = o.risks.iter().map(|r| r.impact).collect();
        // 0.6 of 0.5 is 120 %: critical; then the failure (0.8) and the
        // bottleneck (research: 2 of 2 wait, 1.0) are high; the chain medium.
        assert_eq!(impacts[0], Impact::Critical);
        assert_eq!(impacts.last(), Some(&Impact::Medium));
        assert!((o.risks[0].likelihood - 1.0).abs() < 1e-12);
        assert!(o.risks.iter().any(|r| r.description.contains("case c1")));
        let chain_risk = o.risks.last().unwrap();
        assert!((chain_risk.likelihood - 0.3).abs() < 1e-12);
        assert_eq!(o.decision_points.len(), 1);
        assert_eq!(o.decision_points[0].step, "review");
        assert!(o.decision_points[0].branches.is_empty());
        // Under 80 % of the budget: no budget risk.
        let o = outline(&p, &path, Some(10.0), &[]);
        assert!(o.risks.iter().all(|r| !r.description.contains("budget")));
    }

    #[test]
    fn htn_subtasks_carry_preconditions_and_effects_in_order() {
        let conditions = vec![Condition {
            key: "review".into(),
            equals: Some(json!("light")),
            exists: None,
        }];
        let subtasks = htn_subtasks(&chain(), &conditions);
        let ids: Vec<&str> = subtasks.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["research", "draft", "review"]);
        assert_eq!(subtasks[0].order, 1);
        assert_eq!(
            subtasks[0].preconditions,
            [
                "`review` is \"light\"",
                "an agent with skill `research` is available"
            ]
        );
        assert_eq!(subtasks[1].preconditions, ["`research` is completed"]);
        assert_eq!(
            subtasks[1].effects,
            [
                "`draft` is completed",
                "its writing output is available to `review`"
            ]
        );
        assert_eq!(
            subtasks[2].effects[1],
            "its review output is part of the result"
        );
    }

    #[test]
    fn conditions_read_as_words_and_steps_know_progress() {
        let c = |equals, exists| Condition {
            key: "k".into(),
            equals,
            exists,
        };
        assert_eq!(describe_condition(&c(None, None)), "`k` is set");
        assert_eq!(describe_condition(&c(None, Some(false))), "`k` is not set");
        assert_eq!(describe_condition(&c(Some(json!(3)), None)), "`k` is 3");
        assert!(StepStatus::Completed.is_progress() && StepStatus::Executing.is_progress());
        assert!(!StepStatus::Failed.is_progress() && !StepStatus::Pending.is_progress());
        assert_eq!(
            "failed".parse::<StepStatus>().ok(),
            Some(StepStatus::Failed)
        );
    }

    #[test]
    fn a_cycle_does_not_hang_levels() {
        let p = plan(json!([
            {"id": "a", "title": "A", "task_type": "t", "depends_on": ["b"]},
            {"id": "b", "title": "B", "task_type": "t", "depends_on": ["a"]},
            {"id": "c", "title": "C", "task_type": "t"},
        ]));
        assert_eq!(levels(&p), vec![1, 1, 0]);
    }
}
