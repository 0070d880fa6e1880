//! Reading a model's answer: the JSON in it (fences and prose around it
//! tolerated), then the plan, with one problem per thing wrong, each naming
//! its task, so the repair request can say exactly what to fix.

use coordinator_llm::{json_kind, truncate_bytes};
use serde_json::Value;

use super::codes;
use crate::planning::{
    spec::{PlanSpec, TaskSpec},
    validate::PlanProblem,
};

/// Most candidate start positions tried when digging a JSON value out of prose.
const MAX_JSON_CANDIDATES: usize = 8;

/// Parses a model's answer into a plan, or lists everything wrong with it.
pub(super) fn parse_plan(content: &str) -> Result<PlanSpec, Vec<PlanProblem>> {
    if content.trim().is_empty() {
        return Err(vec![problem(
            codes::EMPTY_ANSWER,
            "the answer was empty; reply with the plan as a JSON object".to_owned(),
            None,
        )]);
    }
    let value = extract_json(content).map_err(|e| {
        vec![problem(
            codes::NOT_JSON,
            format!(
                "the answer is not valid JSON ({e}); reply with only a JSON object \
                 of the form {{\"tasks\": [...]}}"
            ),
            None,
        )]
    })?;

    let mut problems = Vec::new();
    let tasks = match value {
        Value::Array(tasks) => tasks,
        Value::Object(mut object) => match object.remove("tasks") {
            Some(Value::Array(tasks)) => {
                for key in object.keys().take(10) {
                    problems.push(problem(
                        codes::UNKNOWN_FIELD,
                        format!(
                            "unknown top-level field `{}`; the plan object has only `tasks`",
                            truncate_bytes(key, 60)
                        ),
                        None,
                    ));
                }
                tasks
            }
            Some(other) => {
                return Err(vec![problem(
                    codes::WRONG_SHAPE,
                    format!("`tasks` must be an array, not {}", json_kind(&other)),
                    None,
                )]);
            }
            None => {
                let keys: Vec<&str> = object
                    .keys()
                    .take(10)
                    .map(|k| truncate_bytes(k, 60))
                    .collect();
                let hint = if object.contains_key("id") {
                    "it looks like a single task; put every task in the `tasks` array"
                } else {
                    "the plan must be an object with a `tasks` array"
                };
                return Err(vec![problem(
                    codes::WRONG_SHAPE,
                    format!(
                        "expected {{\"tasks\": [...]}} but the object has fields [{}]; {hint}",
                        keys.join(", ")
                    ),
                    None,
                )]);
            }
        },
        other => {
            return Err(vec![problem(
                codes::WRONG_SHAPE,
                format!(
                    "expected {{\"tasks\": [...]}} but the answer is {}",
                    json_kind(&other)
                ),
                None,
            )]);
        }
    };

    // Tasks are parsed one by one so each problem names its task.
    let mut parsed = Vec::with_capacity(tasks.len());
    for (i, task) in tasks.into_iter().enumerate() {
        let id = task
            .get("id")
            .and_then(Value::as_str)
            .map(|id| truncate_bytes(id, 100).to_owned());
        let label = match &id {
            Some(id) => format!("task #{} ('{id}')", i + 1),
            None => format!("task #{}", i + 1),
        };
        if !task.is_object() {
            problems.push(problem(
                codes::INVALID_TASK,
                format!("{label} must be an object, not {}", json_kind(&task)),
                id,
            ));
            continue;
        }
        match serde_json::from_value::<TaskSpec>(task) {
            Ok(task) => parsed.push(task),
            Err(e) => {
                let text = e.to_string();
                let code = if text.starts_with("unknown field") {
                    codes::UNKNOWN_FIELD
                } else {
                    codes::INVALID_TASK
                };
                problems.push(problem(code, format!("{label}: {text}"), id));
            }
        }
    }
    if problems.is_empty() {
        Ok(PlanSpec { tasks: parsed })
    } else {
        Err(problems)
    }
}

/// Finds the JSON object or array in an answer that may have fences or prose around it.
fn extract_json(content: &str) -> Result<Value, String> {
    let text = content.trim();
    let first_error = match serde_json::from_str::<Value>(text) {
        Ok(value) => return Ok(value),
        Err(e) => e.to_string(),
    };
    let mut scopes = Vec::with_capacity(2);
    if let Some(inner) = fenced_block(text) {
        scopes.push(inner.trim());
    }
    scopes.push(text);
    for scope in scopes {
        // Try each `{` or `[` in turn; trailing prose after a complete value is ignored.
        // A later candidate must look like a plan: in a broken answer such as
        // `{"tasks":[{"depends_on":[],"desc` the inner `[]` parses but is not the plan.
        let starts = scope
            .char_indices()
            .filter(|(_, c)| *c == '{' || *c == '[')
            .map(|(i, _)| i)
            .take(MAX_JSON_CANDIDATES);
        for (n, start) in starts.enumerate() {
            let mut values =
                serde_json::Deserializer::from_str(&scope[start..]).into_iter::<Value>();
            if let Some(Ok(value)) = values.next()
                && (n == 0 || looks_like_plan(&value))
            {
                return Ok(value);
            }
        }
    }
    Err(first_error)
}

/// Whether a value found in prose is plausibly the plan rather than a fragment of it.
fn looks_like_plan(value: &Value) -> bool {
    match value {
        Value::Object(object) => object.contains_key("tasks"),
        Value::Array(items) => items.first().is_some_and(Value::is_object),
        _ => false,
    }
}

/// The body of the first Markdown code fence, or everything after an unclosed one.
fn fenced_block(text: &str) -> Option<&str> {
    let open = text.find("```")?;
    let after = &text[open + 3..];
    // Skip the info string such as `json`.
    let body = match after.find('\n') {
        Some(newline) => &after[newline + 1..],
        None => after,
    };
    Some(match body.find("```") {
        Some(close) => &body[..close],
        None => body,
    })
}

/// Builds a problem; `PlanProblem`'s own constructors are private to the validator.
pub(super) fn problem(code: &'static str, message: String, task_id: Option<String>) -> PlanProblem {
    PlanProblem {
        code,
        message,
        task_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task_json(id: &str, deps: &[&str]) -> Value {
        json!({
            "id": id,
            "title": format!("Task {id}"),
            "task_type": "research",
            "description": "do it",
            "required_skills": ["research"],
            "required_tools": [],
            "depends_on": deps,
            "success_criteria": [{ "description": "done", "must_pass": true }],
            "estimated_cost": 0.1,
            "optional": false,
            "inputs": {}
        })
    }

    #[test]
    fn parse_accepts_bare_array_and_reports_unknown_fields() {
        let bare = json!([task_json("a", &[])]).to_string();
        assert_eq!(parse_plan(&bare).unwrap().tasks[0].id, "a");

        let mut typo = task_json("a", &[]);
        typo["deps"] = json!(["b"]);
        let problems =
            parse_plan(&json!({ "tasks": [typo, 7], "notes": "x" }).to_string()).unwrap_err();
        let codes_seen: Vec<&str> = problems.iter().map(|p| p.code).collect();
        assert_eq!(
            codes_seen,
            [
                codes::UNKNOWN_FIELD,
                codes::UNKNOWN_FIELD,
                codes::INVALID_TASK
            ]
        );
        assert!(problems[1].message.contains("task #1 ('a')"));
        assert!(problems[1].message.contains("deps"));
        assert_eq!(problems[1].task_id.as_deref(), Some("a"));

        let single = task_json("a", &[]).to_string();
        let problems = parse_plan(&single).unwrap_err();
        assert_eq!(problems[0].code, codes::WRONG_SHAPE);
        assert!(problems[0].message.contains("single task"));

        for (answer, code) in [
            ("   ", codes::EMPTY_ANSWER),
            ("\"just a string\"", codes::WRONG_SHAPE),
            ("{\"tasks\": {}}", codes::WRONG_SHAPE),
            ("no json here", codes::NOT_JSON),
        ] {
            assert_eq!(parse_plan(answer).unwrap_err()[0].code, code, "{answer}");
        }
    }

    #[test]
    fn extract_json_handles_fences_prose_and_garbage() {
        let v = json!({ "tasks": [] });
        for text in [
            "{\"tasks\": []}",
            "```json\n{\"tasks\": []}\n```",
            "```\n{\"tasks\": []}",
            "Plan: {\"tasks\": []} hope this helps {",
            "{oops} and then {\"tasks\": []}",
            "[oops] and then {\"tasks\": []}",
        ] {
            assert_eq!(extract_json(text).unwrap(), v, "{text}");
        }
        assert!(extract_json("{{{{[[[[").is_err());
        assert!(extract_json(&"[".repeat(100_000)).is_err());
        assert!(extract_json(&"{\"a\":".repeat(10_000)).is_err());
        // A cut-off answer does not yield one of its inner fragments.
        assert!(extract_json("{\"tasks\":[{\"depends_on\":[],\"desc").is_err());
        assert_eq!(extract_json("Note [1]: x").unwrap(), json!([1]));
        assert!(extract_json("```").is_err());
        assert!(extract_json("é```é").is_err());
    }
}
