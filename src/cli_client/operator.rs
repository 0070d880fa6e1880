//! The operator's everyday commands outside `mission …`: `inbox` (what
//! waits for a person), `task …` (settle one task of a mission),
//! `tool-approval …` and `decision …` (the requests agents raise).

use std::process::ExitCode;

use clap::Subcommand;
use serde_json::{Map, Value, json};

use super::{
    CliError, CliResult, ClientArgs, out, out_json, parse_json_flag, report,
    table::{Table, datetime, or_dash, truncate},
};
use crate::client::{AttentionItem, ResolveTask};

/// The operator's commands that are not about one mission as a whole.
#[derive(Debug, Subcommand)]
pub enum OperatorCommand {
    /// Everything in the workspace that waits for a person, oldest first,
    /// with the command that settles each.
    Inbox(InboxArgs),
    /// Settle one task of a mission: resolve, retry, skip, complete, fail or cancel it.
    Task(TaskArgs),
    /// Tool calls waiting for a person's yes or no: list, approve, deny, resolve.
    ToolApproval(ToolApprovalArgs),
    /// Blocker decisions agents raise: list, request, resolve (resolving takes a stakeholder token).
    Decision(DecisionArgs),
}

/// `coordinator inbox`.
#[derive(Debug, clap::Args)]
pub struct InboxArgs {
    /// Only what waits in this mission.
    #[arg(long, value_name = "MISSION_ID")]
    pub mission: Option<String>,
    /// Service and output.
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `coordinator task …`.
#[derive(Debug, clap::Args)]
pub struct TaskArgs {
    /// Service and output.
    #[command(flatten)]
    pub client: ClientArgs,
    /// Task command.
    #[command(subcommand)]
    pub command: TaskCommand,
}

/// Which task: the mission, then the task's key or id.
#[derive(Debug, clap::Args)]
pub struct TaskRef {
    /// Mission id.
    pub mission: String,
    /// Task key (as `mission show` lists it) or task id.
    pub task: String,
}

/// Task commands.
#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Settle a task that waits for a person (or the one failed task of a
    /// failed mission): complete, retry, skip or fail it.
    Resolve {
        /// The task.
        #[command(flatten)]
        task: TaskRef,
        /// What to do.
        #[arg(long, value_parser = ["complete", "retry", "skip", "fail"])]
        action: String,
        /// The result, as JSON (for `complete`; default `{}`).
        #[arg(long, value_name = "JSON")]
        output: Option<String>,
        /// Guidance for the next attempt (`retry`) or the reason (the others).
        #[arg(long)]
        feedback: Option<String>,
    },
    /// Run the task again (shortcut of `resolve --action retry`).
    Retry {
        /// The task.
        #[command(flatten)]
        task: TaskRef,
        /// Guidance for the next attempt.
        #[arg(long)]
        feedback: Option<String>,
    },
    /// Skip the task: what depends on it runs without its output.
    Skip {
        /// The task.
        #[command(flatten)]
        task: TaskRef,
        /// Why.
        #[arg(long)]
        feedback: Option<String>,
    },
    /// Complete the task with a result a person gives.
    Complete {
        /// The task.
        #[command(flatten)]
        task: TaskRef,
        /// The result, as JSON [default: {}].
        #[arg(long, value_name = "JSON")]
        output: Option<String>,
        /// A note.
        #[arg(long)]
        feedback: Option<String>,
    },
    /// Fail the task (the mission fails unless the task is optional).
    Fail {
        /// The task.
        #[command(flatten)]
        task: TaskRef,
        /// Why.
        #[arg(long)]
        feedback: Option<String>,
    },
    /// Cancel the task and what depends on it; the rest of the mission runs on.
    Cancel {
        /// The task.
        #[command(flatten)]
        task: TaskRef,
        /// Why (kept on the events).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Hand the task to another agent as a delegated work package.
    Delegate {
        /// The task.
        #[command(flatten)]
        task: TaskRef,
        /// The request body as JSON (see `POST /v1/missions/{id}/tasks/{task}/delegate`).
        #[arg(long, value_name = "JSON", default_value = "{}")]
        data: String,
    },
}

/// `coordinator tool-approval …`.
#[derive(Debug, clap::Args)]
pub struct ToolApprovalArgs {
    /// Service and output.
    #[command(flatten)]
    pub client: ClientArgs,
    /// Tool-approval command.
    #[command(subcommand)]
    pub command: ToolApprovalCommand,
}

/// Tool-approval commands.
#[derive(Debug, Subcommand)]
pub enum ToolApprovalCommand {
    /// List tool-approval requests, newest first.
    List {
        /// Only these: pending, approved, denied or timed_out.
        #[arg(long)]
        status: Option<String>,
    },
    /// Let the tool call go ahead.
    Approve {
        /// Tool-approval id.
        id: String,
        /// Why (logged).
        #[arg(long, default_value = "approved by an operator")]
        rationale: String,
    },
    /// Settle a tool call with an outcome (`approve` and `deny` are its shortcuts).
    Resolve {
        /// Tool-approval id.
        id: String,
        /// approved or denied.
        #[arg(long, value_parser = ["approved", "denied"])]
        outcome: String,
        /// Why (logged, and told to the agent).
        #[arg(long, default_value = "settled by an operator")]
        rationale: String,
    },
    /// Refuse the tool call.
    Deny {
        /// Tool-approval id.
        id: String,
        /// Why (logged, and told to the agent).
        #[arg(long)]
        rationale: String,
    },
}

/// `coordinator decision …`.
#[derive(Debug, clap::Args)]
pub struct DecisionArgs {
    /// Service and output.
    #[command(flatten)]
    pub client: ClientArgs,
    /// Decision command.
    #[command(subcommand)]
    pub command: DecisionCommand,
}

/// Decision commands.
#[derive(Debug, Subcommand)]
pub enum DecisionCommand {
    /// List decisions, newest first.
    List {
        /// Only these: pending, approved, rejected, deferred or modified.
        #[arg(long)]
        status: Option<String>,
    },
    /// Ask for a decision (`POST /v1/decisions`; the body as JSON, at least `description`).
    Request {
        /// The request body as JSON, e.g. `{"description": "Hire a translator", "agent_id": "writer"}`.
        #[arg(long, value_name = "JSON")]
        data: String,
    },
    /// Settle a decision (a stakeholder token).
    Resolve {
        /// Decision id.
        id: String,
        /// approved, rejected, deferred or modified.
        #[arg(long, value_parser = ["approved", "rejected", "deferred", "modified"])]
        outcome: String,
        /// Why.
        #[arg(long)]
        rationale: Option<String>,
        /// For approved or modified: the label of the option chosen.
        #[arg(long)]
        option: Option<String>,
        /// For modified: the changes as a JSON object.
        #[arg(long, value_name = "JSON")]
        modifications: Option<String>,
        /// Resolve only if the decision is still at this version.
        #[arg(long)]
        version: Option<i64>,
    },
}

/// Runs one of the [`OperatorCommand`]s.
pub async fn run(command: OperatorCommand) -> ExitCode {
    let (client, outcome) = match command {
        OperatorCommand::Inbox(a) => {
            let r = inbox(&a.client, a.mission.as_deref()).await;
            (a.client, r)
        }
        OperatorCommand::Task(a) => {
            let r = task(&a.client, a.command).await;
            (a.client, r)
        }
        OperatorCommand::ToolApproval(a) => {
            let r = tool_approval(&a.client, a.command).await;
            (a.client, r)
        }
        OperatorCommand::Decision(a) => {
            let r = decision(&a.client, a.command).await;
            (a.client, r)
        }
    };
    outcome.unwrap_or_else(|e| report(e, client.json))
}

/// `coordinator inbox`: a table of what waits, then the command for each.
async fn inbox(client: &ClientArgs, mission: Option<&str>) -> CliResult {
    let api = client.client()?;
    let attention = api.attention(mission).await?;
    if client.json {
        out_json(&attention)?;
        return Ok(ExitCode::SUCCESS);
    }
    if attention.items.is_empty() {
        eprintln!("nothing waits for a person");
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new(&["SINCE", "KIND", "MISSION", "TASK", "WHAT"]);
    for item in &attention.items {
        t.row(vec![
            datetime(item.since),
            item.kind.clone(),
            item.mission_title
                .as_deref()
                .map(|m| truncate(m, 30))
                .or_else(|| item.mission_id.map(|m| m.to_string()))
                .unwrap_or_else(|| "-".to_owned()),
            or_dash(item.task_key.as_deref()),
            truncate(&item.summary, 70),
        ]);
    }
    out(&t.render())?;
    out(&format!("\n{}", needs_you(&attention.items)))?;
    Ok(ExitCode::SUCCESS)
}

/// The "Needs you" lines: one per item, its summary and the command that settles it.
pub(super) fn needs_you(items: &[AttentionItem]) -> String {
    let mut text = String::new();
    for item in items {
        text.push_str(&format!("- {}\n", item.summary));
        if let Some(command) = item.command.as_deref().filter(|c| !c.is_empty()) {
            text.push_str(&format!("    $ {command}\n"));
        } else if !item.actions.is_empty() {
            text.push_str(&format!("    ({})\n", item.actions.join(" or ")));
        }
    }
    text
}

/// The `--output` of `resolve`/`complete`, as JSON.
fn output_arg(output: Option<&str>) -> Result<Option<Value>, CliError> {
    output.map(|o| parse_json_flag("--output", o)).transpose()
}

/// Runs a `task …` command.
async fn task(client: &ClientArgs, command: TaskCommand) -> CliResult {
    let api = client.client()?;
    let json = client.json;
    let (t, action, output, feedback) = match command {
        TaskCommand::Resolve {
            task,
            action,
            output,
            feedback,
        } => (task, action, output_arg(output.as_deref())?, feedback),
        TaskCommand::Retry { task, feedback } => (task, "retry".to_owned(), None, feedback),
        TaskCommand::Skip { task, feedback } => (task, "skip".to_owned(), None, feedback),
        TaskCommand::Fail { task, feedback } => (task, "fail".to_owned(), None, feedback),
        TaskCommand::Complete {
            task,
            output,
            feedback,
        } => (
            task,
            "complete".to_owned(),
            Some(output_arg(output.as_deref())?.unwrap_or_else(|| json!({}))),
            feedback,
        ),
        TaskCommand::Cancel { task, reason } => {
            let m = api
                .cancel_task(&task.mission, &task.task, reason.as_deref())
                .await?;
            task_line(json, &format!("task {} cancelled", task.task), &m)?;
            return Ok(ExitCode::SUCCESS);
        }
        TaskCommand::Delegate { task, data } => {
            let body = object_flag("--data", &data)?;
            let answer = api
                .call(
                    "POST",
                    &[
                        "v1",
                        "missions",
                        &task.mission,
                        "tasks",
                        &task.task,
                        "delegate",
                    ],
                    &[],
                    Some(&body),
                )
                .await?;
            return print_answer(json, &format!("task {} delegated", task.task), &answer);
        }
    };
    let req = ResolveTask {
        action: action.clone(),
        output,
        feedback,
    };
    let m = api.resolve_task(&t.mission, &t.task, &req).await?;
    let verb = match action.as_str() {
        "complete" => "completed",
        "retry" => "sent to run again",
        "skip" => "skipped",
        _ => "failed",
    };
    task_line(json, &format!("task {} {verb}", t.task), &m)?;
    Ok(ExitCode::SUCCESS)
}

/// After a task command: what happened, and where the mission stands (or the mission as JSON).
fn task_line(json: bool, what: &str, m: &crate::client::Mission) -> Result<(), CliError> {
    if json {
        return out_json(m);
    }
    out(&format!("{what}; mission {} is {}\n", m.id, m.status))
}

/// Runs a `tool-approval …` command.
async fn tool_approval(client: &ClientArgs, command: ToolApprovalCommand) -> CliResult {
    let api = client.client()?;
    let json = client.json;
    let (id, outcome, rationale) = match command {
        ToolApprovalCommand::List { status } => {
            let query: Vec<(&str, String)> = status.into_iter().map(|s| ("status", s)).collect();
            let list = api
                .call("GET", &["v1", "tool-approvals"], &query, None)
                .await?;
            return print_list(
                json,
                &list,
                "tool_approvals",
                &["id", "status", "tool", "agent_id", "mission_id"],
            );
        }
        ToolApprovalCommand::Approve { id, rationale } => (id, "approved", rationale),
        ToolApprovalCommand::Deny { id, rationale } => (id, "denied", rationale),
        ToolApprovalCommand::Resolve {
            id,
            outcome,
            rationale,
        } => {
            let outcome = if outcome == "approved" {
                "approved"
            } else {
                "denied"
            };
            (id, outcome, rationale)
        }
    };
    let body = json!({ "outcome": outcome, "rationale": rationale });
    let answer = api
        .call(
            "POST",
            &["v1", "tool-approvals", &id, "resolve"],
            &[],
            Some(&body),
        )
        .await?;
    print_answer(json, &format!("tool approval {id} {outcome}"), &answer)
}

/// Runs a `decision …` command.
async fn decision(client: &ClientArgs, command: DecisionCommand) -> CliResult {
    let api = client.client()?;
    let json = client.json;
    match command {
        DecisionCommand::List { status } => {
            let query: Vec<(&str, String)> = status.into_iter().map(|s| ("status", s)).collect();
            let list = api.call("GET", &["v1", "decisions"], &query, None).await?;
            print_list(
                json,
                &list,
                "decisions",
                &["id", "status", "requester", "description"],
            )
        }
        DecisionCommand::Request { data } => {
            let body = object_flag("--data", &data)?;
            let answer = api
                .call("POST", &["v1", "decisions"], &[], Some(&body))
                .await?;
            print_answer(json, "decision requested", &answer)
        }
        DecisionCommand::Resolve {
            id,
            outcome,
            rationale,
            option,
            modifications,
            version,
        } => {
            let mut body = Map::new();
            body.insert("outcome".into(), Value::String(outcome.clone()));
            if let Some(r) = rationale {
                body.insert("rationale".into(), Value::String(r));
            }
            if let Some(o) = option {
                body.insert("option".into(), Value::String(o));
            }
            if let Some(m) = modifications {
                body.insert("modifications".into(), object_flag("--modifications", &m)?);
            }
            if let Some(v) = version {
                body.insert("version".into(), v.into());
            }
            let answer = api
                .call(
                    "POST",
                    &["v1", "decisions", &id, "resolve"],
                    &[],
                    Some(&Value::Object(body)),
                )
                .await?;
            print_answer(json, &format!("decision {id} {outcome}"), &answer)
        }
    }
}

/// A flag that must hold a JSON object.
pub(super) fn object_flag(flag: &str, text: &str) -> Result<Value, CliError> {
    let value = parse_json_flag(flag, text)?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(CliError::Usage(format!("{flag} must be a JSON object")))
    }
}

/// Prints an answer: as JSON, or `what` with the id and status it names.
pub(super) fn print_answer(json: bool, what: &str, answer: &Value) -> CliResult {
    if json {
        out_json(answer)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut line = what.to_owned();
    let id = answer.get("id").and_then(Value::as_str);
    if let Some(id) = id.filter(|id| !what.contains(id)) {
        line.push_str(&format!(" ({id})"));
    }
    for key in ["status", "state", "outcome"] {
        if let Some(s) = answer.get(key).and_then(Value::as_str) {
            line.push_str(&format!("; {key} {s}"));
            break;
        }
    }
    out(&format!("{line}\n"))?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the array `key` of `list` as a table of `columns` (or all as JSON).
pub(super) fn print_list(json: bool, list: &Value, key: &str, columns: &[&str]) -> CliResult {
    if json {
        out_json(list)?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows = list.get(key).and_then(Value::as_array);
    let Some(rows) = rows.filter(|r| !r.is_empty()) else {
        eprintln!("none");
        return Ok(ExitCode::SUCCESS);
    };
    let headers: Vec<String> = columns.iter().map(|c| c.to_uppercase()).collect();
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut t = Table::new(&headers);
    for row in rows {
        t.row(
            columns
                .iter()
                .map(|c| match row.get(*c) {
                    Some(Value::String(s)) => truncate(s, 50),
                    None | Some(Value::Null) => "-".to_owned(),
                    Some(other) => truncate(&other.to_string(), 50),
                })
                .collect(),
        );
    }
    out(&t.render())?;
    Ok(ExitCode::SUCCESS)
}
