//! What the model is told: the plan format and its rules (system), the goal
//! with its constraints, the plan under revision and feedback (user), and
//! the problems with its last answer (repair).

use serde_json::Value;

use super::PlanRequest;
use super::schema::skill_list;
use crate::planning::validate::PlanProblem;

/// Most problems listed in one repair request; the rest are summarised as a count.
const MAX_LISTED_PROBLEMS: usize = 40;

/// Explains the plan format and the rules a plan must follow.
pub(super) fn system_prompt(request: &PlanRequest<'_>) -> String {
    let skills = skill_list(request.skills);
    let skills_rule = if skills.is_empty() {
        "No skill list was given: leave required_skills empty [].".to_owned()
    } else {
        format!(
            "required_skills may contain only these skills: {}.",
            serde_json::to_string(&skills).unwrap_or_default()
        )
    };
    let count_rule = if request.min_tasks == request.max_tasks {
        format!("The plan has exactly {} tasks.", request.min_tasks)
    } else {
        format!(
            "The plan has between {} and {} tasks; simple goals need few tasks.",
            request.min_tasks, request.max_tasks
        )
    };
    format!(
        r#"You are the planner of a mission coordinator that hands tasks to AI agents. Break the user's goal into tasks that form a dependency graph.

Answer with one JSON object and nothing else: no prose, no Markdown. The shape:
{{"tasks": [{{"id": "gather_sources", "title": "Gather sources", "task_type": "research", "description": "Find and summarise ...", "required_skills": [], "required_tools": [], "depends_on": [], "success_criteria": [{{"description": "At least five relevant sources are listed", "must_pass": true}}], "estimated_cost": 0.1, "optional": false, "inputs": {{}}}}]}}

Task fields (use no others):
- id: unique snake_case key (lowercase letters, digits, underscores), e.g. "draft_report".
- title: short human-readable title.
- task_type: research, writing, review, coding or analysis.
- description: clear instructions for the agent doing the task.
- required_skills: skills the agent needs.
- required_tools: tools the agent needs; leave empty [] unless the constraints name tools.
- depends_on: ids of the tasks that must finish before this one starts.
- success_criteria: how the result is judged, as {{"description": ..., "must_pass": true or false}}.
- estimated_cost: non-negative number in the budget's unit.
- optional: true only if the mission can succeed without this task.
- inputs: a JSON object with task inputs, {{}} if none.

Rules:
1. {count_rule}
2. Task ids are unique and snake_case.
3. depends_on names only ids of other tasks in the plan, and there are no cycles: a task never depends on itself, directly or through other tasks.
4. At least one task has an empty depends_on; it is where the work starts.
5. Every task has at least one success criterion with "must_pass": true.
6. {skills_rule}
7. Tasks that do not need each other's results do not depend on each other, so they can run in parallel.
8. If the constraints give a budget, the estimated costs sum to less than it."#
    )
}

/// States the goal, constraints, plan under revision and feedback, and
/// shows the first `methods` of the request's closest methods as examples.
pub(super) fn user_prompt(request: &PlanRequest<'_>, methods: usize) -> String {
    let mut text = format!("Goal:\n{}\n", request.goal.trim());
    let has_constraints = match request.constraints {
        Value::Null => false,
        Value::Object(map) => !map.is_empty(),
        _ => true,
    };
    if has_constraints {
        text.push_str("\nConstraints (JSON):\n");
        text.push_str(&serde_json::to_string_pretty(request.constraints).unwrap_or_default());
        text.push('\n');
    }
    if let Some(previous) = request.previous_plan {
        text.push_str("\nCurrent plan (JSON):\n");
        text.push_str(&serde_json::to_string(previous).unwrap_or_default());
        text.push_str(
            "\nRevise this plan. Return the complete revised plan: keep the tasks that still \
             fit, with their ids unchanged, and change, remove or add tasks as needed.\n",
        );
    }
    let shown = &request.methods[..methods.min(request.methods.len())];
    if !shown.is_empty() {
        text.push_str(
            "\nMethods this coordinator uses for similar goals (adapt one if it fits; \
             they are examples, not rules):\n",
        );
        for m in shown {
            text.push_str(&format!("- {}: {}\n", m.name, m.outline));
        }
    }
    if let Some(feedback) = request.feedback.map(str::trim).filter(|f| !f.is_empty()) {
        text.push_str("\nFeedback and instructions:\n");
        text.push_str(feedback);
        text.push('\n');
    }
    text.push_str("\nReply with the plan as one JSON object {\"tasks\": [...]}.");
    text
}

/// Lists the problems with the last answer and asks for a full corrected plan.
pub(super) fn repair_prompt(problems: &[PlanProblem]) -> String {
    let mut text = String::from("Your plan was rejected. Problems:\n");
    for p in problems.iter().take(MAX_LISTED_PROBLEMS) {
        text.push_str(&format!("- [{}] {}\n", p.code, p.message));
    }
    if problems.len() > MAX_LISTED_PROBLEMS {
        text.push_str(&format!(
            "- and {} more problems\n",
            problems.len() - MAX_LISTED_PROBLEMS
        ));
    }
    text.push_str(
        "Fix every problem and reply with the complete corrected plan as one JSON object \
         {\"tasks\": [...]}, with no other text.",
    );
    text
}
