//! The catalogue: every tool's name, description for a model, argument
//! schema and roles, grouped by a mission's life.

use super::*;

fn mission_id_schema(what: &str) -> Value {
    json!({
        "type": "string",
        "format": "uuid",
        "description": format!("Id of the mission {what} (the mission_id create_mission or list_missions returned)."),
    })
}

fn plan_schema(what: &str) -> Value {
    json!({
        "type": "object",
        "description": what,
        "properties": {
            "tasks": {
                "type": "array",
                "description": "The tasks of the plan.",
                "items": task_schema(),
            }
        },
        "required": ["tasks"],
        "additionalProperties": false
    })
}

/// One task of a plan, as a model writes it.
pub(super) fn task_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": { "type": "string", "description": "Plan-local key, unique in the plan, e.g. \"research\"." },
            "title": { "type": "string", "description": "Short title." },
            "task_type": { "type": "string", "description": "Kind of work: research, writing, review, coding, analysis, planning, testing…" },
            "description": { "type": "string", "description": "Instructions for the agent doing it." },
            "required_skills": { "type": "array", "items": { "type": "string" }, "description": "Skills an agent needs, e.g. [\"research\"]." },
            "required_tools": { "type": "array", "items": { "type": "string" }, "description": "Tools an agent needs." },
            "depends_on": { "type": "array", "items": { "type": "string" }, "description": "Ids of the tasks that must finish first." },
            "success_criteria": {
                "type": "array",
                "description": "How the result is judged; at least one must have must_pass true.",
                "items": {
                    "type": "object",
                    "properties": {
                        "description": { "type": "string" },
                        "must_pass": { "type": "boolean" }
                    },
                    "required": ["description"],
                    "additionalProperties": false
                }
            },
            "estimated_cost": { "type": "number", "description": "Estimated cost in the budget unit." },
            "optional": { "type": "boolean", "description": "Whether the mission may succeed without it." },
            "inputs": { "type": "object", "description": "Free-form inputs for the task." }
        },
        "required": ["id", "title", "task_type"],
        "additionalProperties": false
    })
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// Every tool, in the order `/v1/tools` lists them: a mission's life from
/// start to lessons.
pub(super) fn build() -> Vec<Tool> {
    [
        starting_tools(),
        following_tools(),
        steering_tools(),
        editing_tools(),
        settling_tools(),
        pausing_tools(),
        deciding_tools(),
        learning_tools(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Tools that start a mission and settle its plan.
fn starting_tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "create_mission",
            title: "Create a mission",
            description: "Start a mission: the coordinator plans a graph of tasks for the goal and \
                runs them on its agents. With autonomy \"approve\" (the default) the plan waits for \
                approval (see approve_plan) and the results wait for review (see review_results); \
                with \"autonomous\" it starts at once and completes by itself. Returns the mission \
                id, its status, its tasks and what to do next.",
            parameters: object(
                json!({
                    "goal": { "type": "string", "minLength": 1, "description": "What the mission should achieve, in plain language." },
                    "autonomy": { "type": "string", "enum": ["approve", "autonomous"], "description": "approve (default): a person approves the plan and reviews the results. autonomous: runs without asking." },
                    "budget": { "type": "number", "minimum": 0, "description": "Spending limit for the whole mission (optional)." },
                    "priority": { "type": "integer", "minimum": -100, "maximum": 100, "description": "Dispatch priority, -100 to 100, higher first (default 0)." },
                    "constraints": { "type": "object", "description": "Free-form constraints as a JSON object (optional), e.g. {\"human_escalation\": true}." },
                    "plan": plan_schema("An explicit plan to run instead of letting the coordinator plan (optional; rarely needed).")
                }),
                &["goal"],
            ),
            roles: WRITERS,
            read_only: false,
            group: Group::Mission,
            kind: Kind::CreateMission,
        },
        Tool {
            name: "approve_plan",
            title: "Approve a mission's plan",
            description: "Approve the plan of a mission whose status is awaiting_approval; its tasks \
                start running. Show the plan to the user before approving. Optionally pin tasks to \
                agents.",
            parameters: object(
                json!({
                    "mission_id": mission_id_schema("to approve"),
                    "assignments": {
                        "type": "object",
                        "additionalProperties": { "type": "string" },
                        "description": "Optional: task key → agent id, to run those tasks on those agents."
                    }
                }),
                &["mission_id"],
            ),
            roles: APPROVERS,
            read_only: false,
            group: Group::Mission,
            kind: Kind::ApprovePlan,
        },
        Tool {
            name: "reject_plan",
            title: "Reject a mission's plan",
            description: "Reject the plan of a mission awaiting approval and get a new one: say what \
                is wrong in feedback (the planner uses it), or give a replacement plan.",
            parameters: object(
                json!({
                    "mission_id": mission_id_schema("whose plan to reject"),
                    "feedback": { "type": "string", "minLength": 1, "description": "What is wrong with the plan." },
                    "plan": plan_schema("A replacement plan (optional).")
                }),
                &["mission_id", "feedback"],
            ),
            roles: APPROVERS,
            read_only: false,
            group: Group::Mission,
            kind: Kind::RejectPlan,
        },
    ]
}

/// Tools that follow missions.
fn following_tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "mission_status",
            title: "Show a mission",
            description: "Show where a mission is: its status, progress (task counts by state), \
                each task's state and agent, and what to do next. Call it repeatedly to follow a \
                running mission; set include_outputs to read the tasks' results.",
            parameters: object(
                json!({
                    "mission_id": mission_id_schema("to show"),
                    "include_outputs": { "type": "boolean", "description": "Include each finished task's output (default false)." }
                }),
                &["mission_id"],
            ),
            roles: READERS,
            read_only: true,
            group: Group::Mission,
            kind: Kind::MissionStatus,
        },
        Tool {
            name: "list_missions",
            title: "List missions",
            description: "List missions, newest first, optionally only those with one status. \
                Returns ids, goals and statuses; use mission_status for details.",
            parameters: object(
                json!({
                    "status": {
                        "type": "string",
                        "enum": MissionStatus::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                        "description": "Only missions with this status (optional)."
                    },
                    "limit": { "type": "integer", "minimum": 1, "maximum": 100, "description": "How many to return (default 20)." },
                    "cursor": { "type": "string", "format": "uuid", "description": "The next_cursor of the previous page, to see older missions." }
                }),
                &[],
            ),
            roles: READERS,
            read_only: true,
            group: Group::Mission,
            kind: Kind::ListMissions,
        },
    ]
}

/// Tools that stop or redirect a running mission.
fn steering_tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "cancel_mission",
            title: "Cancel a mission",
            description: "Cancel a mission that has not finished: open tasks are cancelled and running \
                work is stopped. This cannot be undone; confirm with the user first.",
            parameters: object(
                json!({ "mission_id": mission_id_schema("to cancel") }),
                &["mission_id"],
            ),
            roles: WRITERS,
            read_only: false,
            group: Group::Mission,
            kind: Kind::CancelMission,
        },
        Tool {
            name: "send_instructions",
            title: "Send new instructions",
            description: "Change course: before approval this replans like reject_plan; while the \
                mission runs (or is paused), the work not started yet is planned again around what \
                is done or running. Optionally give the new plan for that work yourself.",
            parameters: object(
                json!({
                    "mission_id": mission_id_schema("to instruct"),
                    "instructions": { "type": "string", "minLength": 1, "description": "What should change." },
                    "plan": plan_schema("A new plan for the work not started yet (optional; may depend on kept tasks by key).")
                }),
                &["mission_id", "instructions"],
            ),
            roles: WRITERS,
            read_only: false,
            group: Group::Mission,
            kind: Kind::SendInstructions,
        },
    ]
}

/// Tools that change a mission's details, and remove a finished one.
fn editing_tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "update_mission",
            title: "Edit a mission",
            description: "Change a mission's title (a short name shown instead of the goal), priority, \
                budget limit, deadline or labels; give only what changes. A finished mission \
                (completed, failed, cancelled) takes only a new title or labels. A budget below what \
                the mission already spent is refused. Pass the version mission_status returned to \
                refuse the change if someone changed the mission since. To remove the title, budget \
                limit or deadline, name it in clear.",
            parameters: object(
                json!({
                    "mission_id": mission_id_schema("to edit"),
                    "version": { "type": "integer", "description": "The mission's version as you read it (optional): a stale one is refused with version_conflict." },
                    "title": { "type": "string", "minLength": 1, "description": "Short name, one line of at most 200 characters." },
                    "priority": { "type": "integer", "minimum": -100, "maximum": 100, "description": "Dispatch priority, -100 to 100, higher first; queued tasks take it at once." },
                    "budget": { "type": "number", "minimum": 0, "description": "New spending limit for the whole mission, not below what it already spent." },
                    "deadline": { "type": "string", "format": "date-time", "description": "When it should be done, RFC 3339 (e.g. 2027-01-31T17:00:00Z), in the future." },
                    "labels": { "type": "array", "items": { "type": "string" }, "description": "Labels replacing the current ones: up to 20 slugs such as \"q4\" or \"customer-x\"; [] removes them all." },
                    "clear": { "type": "array", "items": { "type": "string", "enum": ["title", "budget", "deadline"] }, "description": "Fields to remove: title, budget (no limit) or deadline." }
                }),
                &["mission_id"],
            ),
            roles: WRITERS,
            read_only: false,
            group: Group::Mission,
            kind: Kind::UpdateMission,
        },
        Tool {
            name: "delete_mission",
            title: "Delete a finished mission",
            description: "Delete a finished mission (completed, failed or cancelled; cancel_mission a \
                live one first) with its tasks, attempts and events, or with archive true keep it but \
                hide it from list_missions. Deleting cannot be undone; confirm with the user first.",
            parameters: object(
                json!({
                    "mission_id": mission_id_schema("to delete"),
                    "archive": { "type": "boolean", "description": "Archive instead of deleting: the mission and its history stay, out of the list (default false)." }
                }),
                &["mission_id"],
            ),
            roles: WRITERS,
            read_only: false,
            group: Group::Mission,
            kind: Kind::DeleteMission,
        },
    ]
}

/// Tools that judge results and settle stuck tasks.
fn settling_tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "review_results",
            title: "Review a mission's results",
            description: "Accept or reject the results of a mission whose status is awaiting_review \
                (approve mode). accept completes the mission; reject (with feedback) redoes the \
                tasks named in tasks, or all of them, and their dependents.",
            parameters: object(
                json!({
                    "mission_id": mission_id_schema("to review"),
                    "decision": { "type": "string", "enum": ["accept", "reject"], "description": "accept or reject." },
                    "feedback": { "type": "string", "description": "Why; required to reject." },
                    "tasks": { "type": "array", "items": { "type": "string" }, "description": "With reject: keys of the tasks to redo." }
                }),
                &["mission_id", "decision"],
            ),
            roles: APPROVERS,
            read_only: false,
            group: Group::Mission,
            kind: Kind::ReviewResults,
        },
        Tool {
            name: "resolve_task",
            title: "Resolve a task waiting for a person",
            description: "Settle a task whose status is awaiting_human (its agents could not finish \
                it): complete it with an output you supply, retry it (with guidance in feedback), \
                skip it (dependents proceed without it), or fail it.",
            parameters: object(
                json!({
                    "mission_id": mission_id_schema("the task belongs to"),
                    "task": { "type": "string", "minLength": 1, "description": "The task's key (or id)." },
                    "action": { "type": "string", "enum": ["complete", "retry", "skip", "fail"], "description": "What to do with the task." },
                    "output": { "description": "With complete: the task's result (any JSON)." },
                    "feedback": { "type": "string", "description": "Guidance for the retry, or the reason." }
                }),
                &["mission_id", "task", "action"],
            ),
            roles: APPROVERS,
            read_only: false,
            group: Group::Mission,
            kind: Kind::ResolveTask,
        },
    ]
}

/// Tools that pause and resume a mission.
fn pausing_tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "pause_mission",
            title: "Pause a mission",
            description: "Pause a running mission: nothing new is dispatched; work already running \
                finishes. resume_mission continues it.",
            parameters: object(
                json!({ "mission_id": mission_id_schema("to pause") }),
                &["mission_id"],
            ),
            roles: WRITERS,
            read_only: false,
            group: Group::Mission,
            kind: Kind::PauseMission,
        },
        Tool {
            name: "resume_mission",
            title: "Resume a mission",
            description: "Resume a paused mission: ready tasks are dispatched again.",
            parameters: object(
                json!({ "mission_id": mission_id_schema("to resume") }),
                &["mission_id"],
            ),
            roles: WRITERS,
            read_only: false,
            group: Group::Mission,
            kind: Kind::ResumeMission,
        },
        Tool {
            name: "continue_mission",
            title: "Continue a failed mission",
            description: "Continue a failed mission where it stopped: name every failed task in \
                retry (a fresh set of attempts, with optional feedback) or skip (do without \
                it); the tasks the failure cancelled come back and what succeeded stays.",
            parameters: object(
                json!({
                    "mission_id": mission_id_schema("to continue"),
                    "retry": { "type": "array", "items": { "type": "string" }, "maxItems": 500,
                               "description": "Keys (or ids) of failed tasks to run again." },
                    "skip": { "type": "array", "items": { "type": "string" }, "maxItems": 500,
                              "description": "Keys (or ids) of failed tasks to do without." },
                    "feedback": { "type": "string", "maxLength": 4000,
                                  "description": "Guidance for the retried tasks' next attempts." },
                    "version": { "type": "integer",
                                 "description": "The mission's version as read: refused if it changed since." },
                }),
                &["mission_id"],
            ),
            roles: WRITERS,
            read_only: false,
            group: Group::Mission,
            kind: Kind::ContinueMission,
        },
    ]
}

/// Tools that answer the decisions and tool approvals waiting for a person.
fn deciding_tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "resolve_decision",
            title: "Resolve a governance decision",
            description: "Resolve a decision waiting in the governance queue (GET /v1/decisions?status=pending \
                lists them): approved (proceed as proposed), rejected (deny; a gated mission task is \
                skipped and the mission replans around it), deferred (check again later), or modified \
                (approve with modifications, merged into a gated task's inputs). The requesting agent \
                is told by an INFORM message. Stakeholder tokens only.",
            parameters: object(
                json!({
                    "decision_id": { "type": "string", "format": "uuid", "description": "The decision to resolve." },
                    "outcome": { "type": "string", "enum": ["approved", "rejected", "deferred", "modified"], "description": "The resolution." },
                    "rationale": { "type": "string", "description": "Why (at most 4000 characters)." },
                    "conditions": { "type": "array", "items": { "type": "string" }, "description": "Conditions attached to the resolution." },
                    "modifications": { "type": "object", "description": "With modified: what changes (a non-empty JSON object)." },
                    "recheck_after_ms": { "type": "integer", "description": "With deferred: check again after this many milliseconds (default one hour)." },
                    "version": { "type": "integer", "description": "The decision version you saw; a stale one is refused." }
                }),
                &["decision_id", "outcome"],
            ),
            roles: DECIDERS,
            read_only: false,
            group: Group::Mission,
            kind: Kind::ResolveDecision,
        },
        Tool {
            name: "resolve_tool_approval",
            title: "Approve or deny a tool call",
            description: "Resolve a worker's request to call a tool that its task's tool policy escalated \
                (a protected path, a large diff, or a policy that approves nothing by itself); \
                GET /v1/tool-approvals?status=pending lists them. approved lets the worker make the \
                call, denied forbids it; the rationale is logged on the mission's timeline. A request \
                nobody resolves in time times out to its policy's default (denied unless the policy \
                says otherwise) and can no longer be resolved.",
            parameters: object(
                json!({
                    "approval_id": { "type": "string", "format": "uuid", "description": "The tool-approval request to resolve." },
                    "outcome": { "type": "string", "enum": ["approved", "denied"], "description": "The resolution." },
                    "rationale": { "type": "string", "description": "Why (1–4000 characters; logged)." }
                }),
                &["approval_id", "outcome", "rationale"],
            ),
            roles: tool_policy::RESOLVERS,
            read_only: false,
            group: Group::Mission,
            kind: Kind::ResolveToolApproval,
        },
    ]
}

/// Tools that search what earlier missions taught.
fn learning_tools() -> Vec<Tool> {
    vec![Tool {
        name: "search_plan_library",
        title: "Search the plan library",
        description: "Find finished missions similar to a goal: each case has a similarity score \
                (0–1), whether the mission completed or failed, and the lessons learned from it \
                (tasks that failed and why, retries, cost overruns). Use it before create_mission to \
                see how similar work went.",
        parameters: object(
            json!({
                "goal": { "type": "string", "minLength": 1, "description": "The goal to find similar cases for." },
                "outcome": { "type": "string", "enum": ["success", "failure", "any"], "description": "Only completed (success) or failed (failure) missions; any (default)." },
                "limit": { "type": "integer", "minimum": 1, "maximum": 100, "description": "Most cases to return (default 5)." }
            }),
            &["goal"],
        ),
        roles: READERS,
        read_only: true,
        group: Group::Mission,
        kind: Kind::SearchPlanLibrary,
    }]
}

/// Only stakeholders resolve governance decisions.
const DECIDERS: &[Role] = &[Role::Stakeholder];
