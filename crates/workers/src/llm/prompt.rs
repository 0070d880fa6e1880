//! What the model is told about a task: who it is, the mission's goal, the
//! task with its criteria and inputs, what upstream tasks produced and the
//! feedback on a previous attempt, every quoted part bounded.

use std::borrow::Cow;

use coordinator_llm::ChatMessage;
use coordinator_protocol::DispatchRequest;
use serde_json::Value;

use super::MAX_UPSTREAM_BYTES;

/// Most bytes of the success criteria, the inputs or the feedback quoted to the model.
const MAX_FIELD_BYTES: usize = 16 * 1024;

/// The system prompt and the task as one user message.
pub(super) fn build_messages(req: &DispatchRequest) -> Vec<ChatMessage> {
    let system = format!(
        "You are agent `{agent}`, working on one task of a larger mission; other agents \
         handle the other tasks, so do only this one. Your answer is the task's result and \
         must satisfy every success criterion given. Answer concisely: give the result \
         itself, without preamble or remarks about yourself.",
        agent = req.agent_id
    );
    let system = match &req.organisation {
        Some(org) => format!("{system}\n\n{}", org.brief()),
        None => system,
    };
    let task = &req.task;
    let mut user = String::new();
    user.push_str("# Mission goal\n");
    user.push_str(req.goal.trim());
    user.push_str(&format!("\n\n# Your task: {}\n", task.title.trim()));
    user.push_str(&format!("Type: {}\n", task.task_type));
    user.push_str(&format!("Key: {}\n", task.key));
    if req.attempt_number > 1 {
        user.push_str(&format!("Attempt: {}\n", req.attempt_number));
    }
    user.push_str("\n## Description\n");
    user.push_str(task.description.trim());
    user.push_str("\n\n## Success criteria\n");
    user.push_str(&truncate(
        &render_criteria(&task.success_criteria),
        MAX_FIELD_BYTES,
    ));
    if !is_empty_value(&task.inputs) {
        user.push_str("\n\n## Inputs\n");
        user.push_str(&truncate(&render_value(&task.inputs), MAX_FIELD_BYTES));
    }
    if !req.upstream.is_empty() {
        user.push_str("\n\n## Outputs of the tasks this one builds on");
        for up in &req.upstream {
            user.push_str(&format!("\n\n### {} (`{}`)\n", up.title.trim(), up.key));
            match &up.output {
                Some(output) => {
                    user.push_str(&truncate(&render_value(output), MAX_UPSTREAM_BYTES));
                }
                None => user.push_str("(no output)"),
            }
        }
    }
    if let Some(feedback) = req.feedback.as_deref().filter(|f| !f.trim().is_empty()) {
        user.push_str("\n\n## Feedback on the previous attempt\n");
        user.push_str("The previous attempt was not accepted. Address this feedback:\n");
        user.push_str(&truncate(feedback.trim(), MAX_FIELD_BYTES));
    }
    vec![ChatMessage::system(system), ChatMessage::user(user)]
}

fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// Success criteria as text: a list as bullets, text as is, anything else as JSON.
fn render_criteria(criteria: &Value) -> String {
    if is_empty_value(criteria) {
        return "(none stated: do the task as described)".to_owned();
    }
    match criteria {
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => format!("- {s}"),
                other => format!("- {other}"),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => render_value(other),
    }
}

/// A JSON value as text for the model: strings bare, a worker output's `text`
/// bare, everything else as pretty JSON.
fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Object(o) if o.get("text").is_some_and(Value::is_string) => o
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
    }
}

/// At most `max` bytes of `text`, cut at a character boundary, saying it was cut.
fn truncate(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!(
        "{}\n… [truncated: {} of {} bytes shown]",
        &text[..end],
        end,
        text.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use coordinator_llm::Role;
    use serde_json::json;

    #[test]
    fn upstream_outputs_are_truncated() {
        let mut req = crate::test_support::dispatch("http://coordinator.invalid");
        req.upstream[0].output = Some(json!("é".repeat(10_000)));
        let messages = build_messages(&req);
        assert_eq!(messages[0].role, Role::System);
        let user = &messages[1].content;
        assert!(
            user.contains("[truncated: 4096 of 20000 bytes shown]"),
            "{user}"
        );
        assert!(user.len() < 8 * 1024);
    }

    #[test]
    fn the_task_and_its_context_are_all_in_the_prompt() {
        let req = crate::test_support::dispatch("http://coordinator.invalid");
        let messages = build_messages(&req);
        assert!(messages[0].content.contains("writer-1"));
        let user = &messages[1].content;
        for part in [
            "Publish a short guide to composting at home",
            "Draft the guide",
            "Attempt: 2",
            "- under 250 words",
            "apartment dwellers",
            "balance browns and greens 3:1",
            "keep it tight",
        ] {
            assert!(user.contains(part), "{part} missing from {user}");
        }
        let mut bare = req.clone();
        bare.task.success_criteria = Value::Null;
        bare.task.inputs = json!({});
        bare.feedback = Some("  ".into());
        let user = &build_messages(&bare)[1].content;
        assert!(user.contains("(none stated: do the task as described)"));
        assert!(!user.contains("## Inputs") && !user.contains("## Feedback"));
    }
}
