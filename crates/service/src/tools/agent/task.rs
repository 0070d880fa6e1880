//! The agent's own task: what it is working on, inside which mission.

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::{answer, attempt, body, me, mission_of, object, tool};
use crate::{
    auth::Principal,
    coordination::blackboard,
    error::ApiError,
    missions::{self, discovered},
    store::events,
    tools::{Group, Tool, ToolContext},
};

fn mission_arg() -> Value {
    json!({
        "type": "string",
        "format": "uuid",
        "description": "The mission (default: the mission of your current task; required with an agent token outside a task)."
    })
}

fn expected_arg(what: &str) -> Value {
    json!({
        "type": "integer",
        "minimum": 0,
        "description": format!("Compare-and-set: {what} only if the key is at this version (the version blackboard_read returned; 0 means the key must not exist). Omit to {what} unconditionally."),
    })
}

/// The tools of this group.
pub(super) fn tools() -> Vec<Tool> {
    vec![
        my_task_tool(),
        tool(
            Group::Task,
            "add_subtasks",
            "Add the work you discovered",
            "Add tasks you found necessary to your mission, around your current task: as \
             successors (they wait for your task; the default) or as children (they run now, and \
             whatever waits for your task waits for them too). Give each a fresh key; depends_on \
             may name existing tasks by key and the other new tasks. The plan is validated like \
             any plan (no cycles, skills some agent has, within the budget). In a mission that \
             needs approval, a person approves the change before the new tasks run.",
            object(
                json!({
                    "tasks": { "type": "array", "minItems": 1, "maxItems": 20, "items": crate::tools::catalogue::task_schema(), "description": "The new tasks." },
                    "placement": { "type": "string", "enum": ["successor", "child"], "description": "successor (default) or child." },
                    "reason": { "type": "string", "minLength": 1, "description": "Why this work is needed." },
                }),
                &["tasks", "reason"],
            ),
            false,
            add_subtasks,
        ),
        tool(
            Group::Task,
            "mission_events",
            "Follow the mission's events",
            "List the events of the mission after a sequence number (0: from the start), oldest \
             first: what other agents and people did (task transitions, blackboard writes, \
             messages, decisions). With wait_secs, waits up to that long for the first new one \
             (long-poll). Pass the last seq you saw as after to continue.",
            object(
                json!({
                    "after": { "type": "integer", "minimum": 0, "description": "Only events with a higher seq (default 0)." },
                    "kinds": { "type": "array", "items": { "type": "string" }, "description": "Only these kinds; a trailing * is a prefix (\"task.*\")." },
                    "wait_secs": { "type": "integer", "minimum": 0, "maximum": 25, "description": "Wait up to this long for a new event (default 0)." },
                    "limit": { "type": "integer", "minimum": 1, "maximum": 200, "description": "Most events (default 50)." },
                    "mission_id": mission_arg(),
                }),
                &[],
            ),
            true,
            mission_events,
        ),
        tool(
            Group::Task,
            "blackboard_read",
            "Read a blackboard key",
            "Read one key of the mission's blackboard, the state the mission's agents share: \
             its JSON value and its version (pass the version to blackboard_write as \
             expected_version to update it safely).",
            object(
                json!({
                    "key": { "type": "string", "minLength": 1, "maxLength": 200, "description": "The key, e.g. \"outline\" or \"research/sources\"." },
                    "mission_id": mission_arg(),
                }),
                &["key"],
            ),
            true,
            blackboard_read,
        ),
        tool(
            Group::Task,
            "blackboard_list",
            "List blackboard keys",
            "List the keys of the mission's blackboard (with their values and versions), \
             optionally only those starting with a prefix.",
            object(
                json!({
                    "prefix": { "type": "string", "description": "Only keys starting with this." },
                    "limit": { "type": "integer", "minimum": 1, "maximum": 500, "description": "Most keys to return (default 100)." },
                    "mission_id": mission_arg(),
                }),
                &[],
            ),
            true,
            blackboard_list,
        ),
        tool(
            Group::Task,
            "blackboard_write",
            "Write a blackboard key",
            "Write a JSON value under a key of the mission's blackboard, for the mission's other \
             agents to read. With expected_version it is a compare-and-set: if someone wrote the \
             key since you read it, the write is refused with the current version, and you should \
             read it again, merge, and retry.",
            object(
                json!({
                    "key": { "type": "string", "minLength": 1, "maxLength": 200, "description": "The key." },
                    "value": { "description": "Any JSON value but null (at most 64 KiB)." },
                    "expected_version": expected_arg("write"),
                    "mission_id": mission_arg(),
                }),
                &["key", "value"],
            ),
            false,
            blackboard_write,
        ),
        tool(
            Group::Task,
            "blackboard_delete",
            "Delete a blackboard key",
            "Delete a key of the mission's blackboard (with expected_version, only if nobody \
             changed it since you read it).",
            object(
                json!({
                    "key": { "type": "string", "minLength": 1, "maxLength": 200, "description": "The key." },
                    "expected_version": expected_arg("delete"),
                    "mission_id": mission_arg(),
                }),
                &["key"],
            ),
            false,
            blackboard_delete,
        ),
    ]
}

fn key_arg(args: &mut Map<String, Value>) -> Result<String, ApiError> {
    match args.remove("key") {
        Some(Value::String(k)) => Ok(k),
        _ => Err(ApiError::invalid("key", "key must be a string")),
    }
}

fn expected(args: &Map<String, Value>) -> Option<i64> {
    args.get("expected_version").and_then(Value::as_i64)
}

fn blackboard_read<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let mission = mission_of(who, &mut args)?;
        let key = key_arg(&mut args)?;
        let entry = blackboard::read(cx.pool, who, mission, &key).await?;
        answer(&entry)
    })
}

fn blackboard_list<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let mission = mission_of(who, &mut args)?;
        let prefix = args.get("prefix").and_then(Value::as_str).unwrap_or("");
        let limit = args.get("limit").and_then(Value::as_i64).unwrap_or(100);
        let entries = blackboard::list(cx.pool, who, mission, prefix, limit).await?;
        Ok(json!({ "mission_id": mission, "count": entries.len(), "keys": entries }))
    })
}

fn blackboard_write<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let mission = mission_of(who, &mut args)?;
        let key = key_arg(&mut args)?;
        // The registry drops null arguments, so a missing value is also a null one.
        let value = args.remove("value").unwrap_or(Value::Null);
        let entry = blackboard::write(cx.pool, who, mission, &key, value, expected(&args)).await?;
        answer(&entry)
    })
}

fn blackboard_delete<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let mission = mission_of(who, &mut args)?;
        let key = key_arg(&mut args)?;
        let entry = blackboard::delete(cx.pool, who, mission, &key, expected(&args)).await?;
        answer(&entry)
    })
}

fn add_subtasks<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let scope = attempt(who)?;
        let req: discovered::AddTasks = body(args)?;
        let view = discovered::add_tasks(
            cx.pool,
            cx.planning,
            who,
            scope.mission_id,
            scope.task_id,
            req,
            None,
        )
        .await?;
        let mut result = crate::tools::mission_result(&view, false);
        result["next_step"] = json!(if view.status == "awaiting_approval" {
            "The change waits for a person's approval; carry on with your task."
        } else {
            "The new tasks are in the plan; carry on with your task."
        });
        Ok(result)
    })
}

fn mission_events<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let mission = mission_of(who, &mut args)?;
        // One row says the mission is the caller's; the full view is not needed.
        crate::store::missions::get(cx.pool, who.workspace_id, mission)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("no mission {mission}")))?;
        let after = args.get("after").and_then(Value::as_i64).unwrap_or(0);
        let limit = args.get("limit").and_then(Value::as_i64).unwrap_or(50);
        let wait = args
            .get("wait_secs")
            .and_then(Value::as_u64)
            .unwrap_or(0)
            .min(25);
        let kinds: Vec<String> = args
            .get("kinds")
            .and_then(Value::as_array)
            .map(|k| {
                k.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let wanted = |kind: &str| {
            kinds.is_empty()
                || kinds.iter().any(|k| match k.strip_suffix('*') {
                    Some(prefix) => kind.starts_with(prefix),
                    None => kind == k,
                })
        };
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(wait);
        let mut wake = cx.wake.clone();
        wake.borrow_and_update();
        let mut cursor = after;
        loop {
            let page =
                events::list_for_mission(cx.pool, who.workspace_id, mission, cursor, limit).await?;
            let last = page.last().and_then(|e| e.seq);
            let found: Vec<_> = page.into_iter().filter(|e| wanted(&e.kind)).collect();
            if let Some(seq) = last {
                cursor = seq;
            }
            if !found.is_empty() {
                return Ok(json!({ "mission_id": mission, "events": found, "next_after": cursor }));
            }
            // A page of other kinds moves the cursor on without waiting.
            if last.is_some() {
                continue;
            }
            let woken = wait > 0
                && matches!(
                    tokio::time::timeout_at(deadline, wake.changed()).await,
                    Ok(Ok(()))
                );
            if !woken {
                return Ok(json!({ "mission_id": mission, "events": [], "next_after": cursor }));
            }
        }
    })
}

fn my_task_tool() -> Tool {
    tool(
        Group::Task,
        "my_task",
        "Show my current task",
        "Show the task this attempt works on: its key, title, instructions, success criteria, \
         the mission's goal, and the outputs of the tasks it depends on. Call it first when a \
         dispatch gives you only ids.",
        object(json!({}), &[]),
        true,
        my_task,
    )
}

fn my_task<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    _args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let scope = attempt(who)?;
        let agent = me(who)?;
        let mission = missions::view(cx.pool, who.workspace_id, scope.mission_id).await?;
        let task = mission
            .tasks
            .iter()
            .find(|t| t.id == scope.task_id)
            .ok_or_else(|| ApiError::NotFound(format!("no task {}", scope.task_id)))?;
        let upstream: Vec<Value> = mission
            .tasks
            .iter()
            .filter(|t| task.depends_on.contains(&t.id))
            .map(|t| json!({ "key": t.key, "title": t.title, "status": t.status, "output": t.output }))
            .collect();
        Ok(json!({
            "agent_id": agent,
            "attempt_id": scope.attempt_id,
            "mission_id": mission.id,
            "goal": mission.goal,
            "task": {
                "id": task.id,
                "key": task.key,
                "title": task.title,
                "task_type": task.task_type,
                "description": task.description,
                "status": task.status,
                "success_criteria": task.success_criteria,
                "attempt": task.attempts,
                "last_error": task.last_error,
            },
            "upstream": upstream,
        }))
    })
}
