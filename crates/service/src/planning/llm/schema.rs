//! The plan's JSON Schema, sent as `response_format` so a constrained
//! decoder can only write a well-formed plan: task fields in writing order,
//! and narrowed to the request's task count and skill vocabulary.

use coordinator_llm::format::{OrderedJson, leaf, obj};
use serde_json::{Value, json};

use super::PlanRequest;

/// Fields of a task in the order a model should write them.
const TASK_FIELDS: [&str; 11] = [
    "id",
    "title",
    "task_type",
    "description",
    "required_skills",
    "required_tools",
    "depends_on",
    "success_criteria",
    "estimated_cost",
    "optional",
    "inputs",
];

/// The plan schema, optionally narrowed to a task count and a skill vocabulary.
///
/// `skills`: `None` allows any strings, `Some(&[])` forces an empty list, and a
/// non-empty list becomes an `enum` so a constrained model can only pick skills
/// that some agent has.
fn schema(
    min_tasks: Option<usize>,
    max_tasks: Option<usize>,
    skills: Option<&[&str]>,
) -> OrderedJson {
    let strings = || leaf(json!({ "type": "array", "items": { "type": "string" } }));
    let required_skills = match skills {
        None => strings(),
        Some([]) => leaf(json!({ "type": "array", "maxItems": 0 })),
        Some(list) => leaf(json!({ "type": "array", "items": { "type": "string", "enum": list } })),
    };
    let criterion = obj(vec![
        ("type", leaf(json!("object"))),
        (
            "properties",
            obj(vec![
                ("description", leaf(json!({ "type": "string" }))),
                ("must_pass", leaf(json!({ "type": "boolean" }))),
            ]),
        ),
        ("required", leaf(json!(["description", "must_pass"]))),
        ("additionalProperties", leaf(json!(false))),
    ]);
    let task = obj(vec![
        ("type", leaf(json!("object"))),
        (
            "properties",
            obj(vec![
                (
                    "id",
                    leaf(json!({ "type": "string", "description": "unique snake_case key" })),
                ),
                ("title", leaf(json!({ "type": "string" }))),
                (
                    "task_type",
                    leaf(json!({
                        "type": "string",
                        "description": "research, writing, review, coding or analysis"
                    })),
                ),
                ("description", leaf(json!({ "type": "string" }))),
                ("required_skills", required_skills),
                ("required_tools", strings()),
                ("depends_on", strings()),
                (
                    "success_criteria",
                    obj(vec![
                        ("type", leaf(json!("array"))),
                        ("items", criterion),
                        ("minItems", leaf(json!(1))),
                    ]),
                ),
                (
                    "estimated_cost",
                    leaf(json!({ "type": "number", "minimum": 0 })),
                ),
                ("optional", leaf(json!({ "type": "boolean" }))),
                ("inputs", leaf(json!({ "type": "object" }))),
            ]),
        ),
        // Every field is required so a grammar-constrained model always writes a whole task.
        ("required", leaf(json!(TASK_FIELDS))),
        ("additionalProperties", leaf(json!(false))),
    ]);
    let mut tasks = vec![("type", leaf(json!("array"))), ("items", task)];
    if let Some(min) = min_tasks {
        tasks.push(("minItems", leaf(json!(min))));
    }
    if let Some(max) = max_tasks {
        tasks.push(("maxItems", leaf(json!(max))));
    }
    obj(vec![
        ("type", leaf(json!("object"))),
        ("properties", obj(vec![("tasks", obj(tasks))])),
        ("required", leaf(json!(["tasks"]))),
        ("additionalProperties", leaf(json!(false))),
    ])
}

/// JSON Schema of the plan format (`{"tasks": [...]}`), for `response_format`.
///
/// As a `Value` its keys come out sorted; requests send the same schema with the
/// task fields in writing order.
pub fn plan_json_schema() -> Value {
    // Cannot fail: every key is a string and every leaf is already a `Value`.
    serde_json::to_value(schema(None, None, None)).expect("the plan schema is plain JSON")
}

/// The schema narrowed to this request's task count and skill vocabulary.
pub(super) fn request_schema(request: &PlanRequest<'_>) -> OrderedJson {
    let sane = request.min_tasks <= request.max_tasks;
    let min = (sane && request.min_tasks > 0).then_some(request.min_tasks);
    let max = (sane && request.max_tasks > 0).then_some(request.max_tasks);
    let skills = skill_list(request.skills);
    schema(min, max, Some(&skills))
}

/// The skill vocabulary, trimmed, without blanks or duplicates, in the caller's order.
pub(super) fn skill_list(skills: &[String]) -> Vec<&str> {
    let mut seen = std::collections::HashSet::new();
    skills
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty() && seen.insert(s.to_lowercase()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planning::spec::TaskSpec;

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
    fn schema_is_narrowed_to_the_request() {
        let schema = plan_json_schema();
        assert_eq!(schema["required"], json!(["tasks"]));
        let request = PlanRequest {
            min_tasks: 2,
            max_tasks: 5,
            ..PlanRequest::new("g")
        };
        // Sent with task fields in writing order, not serde_json's sorted order.
        let text = serde_json::to_string(&request_schema(&request)).unwrap();
        let at = |key: &str| text.find(&format!("\"{key}\":")).unwrap();
        assert!(
            at("id") < at("title") && at("title") < at("depends_on"),
            "{text}"
        );
        assert!(at("depends_on") < at("success_criteria") && at("success_criteria") < at("inputs"));
        let narrowed: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(narrowed["properties"]["tasks"]["minItems"], 2);
        assert_eq!(narrowed["properties"]["tasks"]["maxItems"], 5);
        assert_eq!(
            narrowed["properties"]["tasks"]["items"]["properties"]["required_skills"]["maxItems"],
            0
        );
        // Every field of the schema is one TaskSpec accepts.
        let fields: Vec<&String> = schema["properties"]["tasks"]["items"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        let mut sample = serde_json::Map::new();
        for f in fields {
            sample.insert(f.clone(), task_json("a", &[])[f].clone());
        }
        serde_json::from_value::<TaskSpec>(Value::Object(sample)).unwrap();
    }
}
