//! What the model is told about a task: who it is (its role, the
//! organisation's brief for this task, the role's prompt variant), how to
//! work (its tools, `finish`, the turn bound), the mission's goal, the task
//! with its criteria and inputs, what upstream tasks produced, the
//! blackboard snapshot and the feedback on a previous attempt, every quoted
//! part bounded.

use std::{borrow::Cow, collections::BTreeMap, path::Path};

use coordinator_llm::ChatMessage;
use coordinator_protocol::DispatchRequest;
use serde_json::Value;

use super::MAX_UPSTREAM_BYTES;

/// Most bytes of the success criteria, the inputs, the blackboard or the
/// feedback quoted to the model.
const MAX_FIELD_BYTES: usize = 16 * 1024;

/// Most bytes of one blackboard value quoted to the model.
const MAX_BLACKBOARD_VALUE_BYTES: usize = 2 * 1024;

/// Most bytes of one prompt variant.
const MAX_VARIANT_BYTES: usize = 16 * 1024;

/// The variant key used when neither the role nor the agent has one.
pub(super) const DEFAULT_VARIANT: &str = "default";

/// Extra system text per role (or per agent id, or `default`), from the
/// `--prompt-variants` file: how "a role may carry prompt variants".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct PromptVariants(BTreeMap<String, String>);

impl PromptVariants {
    /// Reads a JSON (`.json`) or TOML (any other name) file mapping a role
    /// name to extra system text.
    pub(super) fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--prompt-variants {}: {e}", path.display()))?;
        let is_json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        Self::parse(&text, is_json)
            .map_err(|e| format!("--prompt-variants {}: {e}", path.display()))
    }

    /// Parses the file's text: a flat map of names to strings.
    pub(super) fn parse(text: &str, is_json: bool) -> Result<Self, String> {
        let map: BTreeMap<String, String> = if is_json {
            serde_json::from_str(text).map_err(|e| format!("not a JSON object of strings: {e}"))?
        } else {
            toml::from_str(text).map_err(|e| format!("not a TOML table of strings: {e}"))?
        };
        if let Some((name, _)) = map.iter().find(|(_, v)| v.len() > MAX_VARIANT_BYTES) {
            return Err(format!(
                "the variant for '{name}' is longer than {MAX_VARIANT_BYTES} bytes"
            ));
        }
        Ok(PromptVariants(map))
    }

    /// The variant for this dispatch: its organisation role's, else its
    /// agent's, else the `default` one.
    pub(super) fn for_request(&self, req: &DispatchRequest) -> Option<&str> {
        let role = req.organisation.as_ref().map(|o| o.role.as_str());
        role.into_iter()
            .chain([req.agent_id.as_str(), DEFAULT_VARIANT])
            .find_map(|k| self.0.get(k))
            .map(String::as_str)
            .filter(|v| !v.trim().is_empty())
    }
}

/// How the model is asked to work, which shapes the instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Mode {
    /// The most model turns the attempt may take.
    pub max_turns: u32,
    /// Whether the coordinator's agent tools are offered (else `finish` only).
    pub coordinator_tools: bool,
}

/// The system prompt and the task as one user message.
pub(super) fn build_messages(
    req: &DispatchRequest,
    variant: Option<&str>,
    mode: Mode,
) -> Vec<ChatMessage> {
    vec![
        ChatMessage::system(system_prompt(req, variant, mode)),
        ChatMessage::user(task_prompt(req)),
    ]
}

/// Who the model is and how it works.
fn system_prompt(req: &DispatchRequest, variant: Option<&str>, mode: Mode) -> String {
    let mut system = format!(
        "You are agent `{agent}`, working on one task of a larger mission; other agents \
         handle the other tasks, so do only this one. Your result must satisfy every success \
         criterion given. Give the result itself, without preamble or remarks about yourself.",
        agent = req.agent_id
    );
    if let Some(org) = &req.organisation {
        system.push_str("\n\n");
        system.push_str(&org.brief());
    }
    if let Some(extra) = variant {
        system.push_str("\n\n");
        system.push_str(extra.trim());
    }
    system.push_str("\n\n# How to work\n");
    if mode.coordinator_tools {
        system.push_str(
            "You may call the tools offered to read and write the mission's shared state (its \
             blackboard), see your task, and add work you discover. ",
        );
    }
    system.push_str(&format!(
        "When the task is done, call `finish` with the result (`result`: text, or a JSON \
         object; `summary`: one optional line). If you cannot call tools, answer with the \
         result as plain text instead. You have at most {} turns; a tool call that fails \
         tells you why, and uses a turn.",
        mode.max_turns
    ));
    system
}

/// The mission, the task and everything known about it.
fn task_prompt(req: &DispatchRequest) -> String {
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
    if !req.blackboard.is_empty() {
        user.push_str("\n\n## The mission's blackboard (shared state) when the task started\n");
        let lines: Vec<String> = req
            .blackboard
            .iter()
            .map(|(key, entry)| {
                let value = entry.value.to_string();
                format!(
                    "- `{key}` (version {}): {}",
                    entry.version,
                    truncate(&value, MAX_BLACKBOARD_VALUE_BYTES)
                )
            })
            .collect();
        user.push_str(&truncate(&lines.join("\n"), MAX_FIELD_BYTES));
    }
    if let Some(feedback) = req.feedback.as_deref().filter(|f| !f.trim().is_empty()) {
        // Feedback is a rejected attempt's reasons, a handoff's context or a
        // blocker's decision: the same heading fits all three.
        user.push_str("\n\n## Feedback from before this attempt\n");
        user.push_str(
            "A previous attempt was rejected, the task was handed to you, or a person decided \
             on a blocker. Take this into account:\n",
        );
        user.push_str(&truncate(feedback.trim(), MAX_FIELD_BYTES));
    }
    user
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
pub(super) fn truncate(text: &str, max: usize) -> Cow<'_, str> {
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

    const MODE: Mode = Mode {
        max_turns: 10,
        coordinator_tools: true,
    };

    #[test]
    fn upstream_outputs_are_truncated() {
        let mut req = crate::test_support::dispatch("http://coordinator.invalid");
        req.upstream[0].output = Some(json!("é".repeat(10_000)));
        let messages = build_messages(&req, None, MODE);
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
        let messages = build_messages(&req, None, MODE);
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
        let user = &build_messages(&bare, None, MODE)[1].content;
        assert!(user.contains("(none stated: do the task as described)"));
        assert!(!user.contains("## Inputs") && !user.contains("## Feedback"));
    }

    #[test]
    fn role_variant_organisation_and_blackboard_shape_the_prompt() {
        let mut req = crate::test_support::dispatch("http://coordinator.invalid");
        req.organisation = Some(
            serde_json::from_value(json!({
                "role": "editor", "verdict": "obliged", "goals": ["publish"],
                "norms": [], "links": [],
                "spec": {"name": "newsroom", "roles": [{"id": "editor"}]}
            }))
            .unwrap(),
        );
        req.blackboard.insert(
            "outline".into(),
            coordinator_protocol::BlackboardValue {
                value: json!({"sections": ["intro", "how"]}),
                version: 3,
            },
        );
        let variants = PromptVariants::parse(
            "editor = \"Write in plain English.\"\nwriter-1 = \"unused\"\ndefault = \"x\"",
            false,
        )
        .unwrap();
        let variant = variants.for_request(&req);
        assert_eq!(variant, Some("Write in plain English."));
        let messages = build_messages(&req, variant, MODE);
        let system = &messages[0].content;
        for part in [
            "writer-1",
            "act as role `editor`",
            "newsroom",
            "Write in plain English.",
            "call `finish`",
            "at most 10 turns",
            "blackboard",
        ] {
            assert!(system.contains(part), "{part} missing from {system}");
        }
        let user = &messages[1].content;
        assert!(
            user.contains("- `outline` (version 3): {\"sections\":[\"intro\",\"how\"]}"),
            "{user}"
        );

        // No role variant: the agent's, then the default; blank ones count as none.
        req.organisation = None;
        assert_eq!(variants.for_request(&req), Some("unused"));
        req.agent_id = "other".into();
        assert_eq!(variants.for_request(&req), Some("x"));
        let json = PromptVariants::parse(r#"{"default": "  "}"#, true).unwrap();
        assert_eq!(json.for_request(&req), None);
        let offline = build_messages(
            &req,
            None,
            Mode {
                max_turns: 3,
                coordinator_tools: false,
            },
        );
        assert!(
            !offline[0].content.contains("blackboard"),
            "{}",
            offline[0].content
        );
        assert!(offline[0].content.contains("at most 3 turns"));
    }

    #[test]
    fn bad_variant_files_are_refused() {
        assert!(PromptVariants::parse("[1, 2]", true).is_err());
        assert!(PromptVariants::parse("editor = 3", false).is_err());
        let long = format!("{{\"editor\": \"{}\"}}", "x".repeat(MAX_VARIANT_BYTES + 1));
        let err = PromptVariants::parse(&long, true).unwrap_err();
        assert!(err.contains("'editor'"), "{err}");
        assert!(PromptVariants::load(Path::new("/nonexistent/variants.toml")).is_err());
    }
}
