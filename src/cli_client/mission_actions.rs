//! `coordinator mission pause|resume|continue|reject-plan|instruct|
//! save-as-routine|commitment|allocation|blackboard-set|blackboard-delete`:
//! the operator's actions on a mission after it was created.

use std::process::ExitCode;

use clap::Subcommand;
use serde_json::{Map, Value, json};

use super::{CliError, CliResult, operator::print_answer, out, parse_json_flag, status_line};
use crate::client::{Client, ContinueMission};

/// Mission actions (flattened into `coordinator mission …`).
#[derive(Debug, Subcommand)]
pub enum ActionCommand {
    /// Pause a mission: running attempts finish, nothing new starts until `resume`.
    Pause {
        /// Mission id.
        id: String,
    },
    /// Resume a paused mission.
    Resume {
        /// Mission id.
        id: String,
    },
    /// Continue a failed mission: retry or skip each failed task (every one
    /// must be named); the tasks its failure cancelled come back.
    #[command(group(clap::ArgGroup::new("what").required(true).multiple(true).args(["retry", "skip"])))]
    Continue {
        /// Mission id.
        id: String,
        /// Failed task to run again: key or id (repeatable, or comma-separated).
        #[arg(long, value_delimiter = ',', value_name = "TASK")]
        retry: Vec<String>,
        /// Failed task to skip: key or id (repeatable, or comma-separated).
        #[arg(long, value_delimiter = ',', value_name = "TASK")]
        skip: Vec<String>,
        /// Guidance for the next attempts.
        #[arg(long)]
        feedback: Option<String>,
        /// Continue only if the mission is still at this version.
        #[arg(long)]
        version: Option<i64>,
    },
    /// Reject a plan awaiting approval: the planner plans again with your
    /// feedback (or the plan in --plan replaces it).
    RejectPlan {
        /// Mission id.
        id: String,
        /// What is wrong with the plan.
        #[arg(long)]
        feedback: String,
        /// A replacement plan as a JSON file (`-`: stdin).
        #[arg(long, value_name = "PATH")]
        plan: Option<String>,
    },
    /// Tell a running mission what should change: the work not started yet is planned again.
    Instruct {
        /// Mission id.
        id: String,
        /// What should change.
        instructions: String,
        /// The new plan for the work not started yet, as a JSON file (`-`: stdin).
        #[arg(long, value_name = "PATH")]
        plan: Option<String>,
    },
    /// Keep a completed mission's plan as a routine that later goals reuse.
    SaveAsRoutine {
        /// Mission id.
        id: String,
        /// Name of the routine [default: derived from the goal].
        #[arg(long)]
        name: Option<String>,
    },
    /// Set a mission's commitment strategy (BDI).
    Commitment {
        /// Mission id.
        id: String,
        /// single-minded, open-minded or cautious.
        #[arg(long, value_parser = ["single-minded", "open-minded", "cautious"], conflicts_with = "derive")]
        strategy: Option<String>,
        /// Derive it from the mission's autonomy again.
        #[arg(long)]
        derive: bool,
    },
    /// Choose how a mission's tasks are allocated: by score, or by tender.
    Allocation {
        /// Mission id.
        id: String,
        /// score or tender.
        #[arg(long, value_parser = ["score", "tender"])]
        mode: String,
        /// Proposal window of its tenders, in milliseconds.
        #[arg(long)]
        tender_window_ms: Option<i32>,
    },
    /// Write a key of a mission's blackboard.
    BlackboardSet {
        /// Mission id.
        id: String,
        /// Key.
        key: String,
        /// The value, as JSON.
        #[arg(long, value_name = "JSON")]
        value: String,
        /// Write only if the key is at this version (0: it must not exist).
        #[arg(long)]
        expected_version: Option<i64>,
    },
    /// Delete a key of a mission's blackboard.
    BlackboardDelete {
        /// Mission id.
        id: String,
        /// Key.
        key: String,
        /// Delete only if the key is at this version.
        #[arg(long)]
        expected_version: Option<i64>,
    },
}

/// Reads a plan file (`-`: stdin) into JSON.
fn plan_file(path: &str) -> Result<Value, CliError> {
    let text = if path == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(path)
    }
    .map_err(|e| CliError::Usage(format!("--plan {path}: {e}")))?;
    parse_json_flag("--plan", &text)
}

/// A body with a text field and an optional plan.
fn with_plan(field: &str, text: String, plan: Option<&str>) -> Result<Value, CliError> {
    let mut body = Map::new();
    body.insert(field.to_owned(), Value::String(text));
    if let Some(p) = plan {
        body.insert("plan".to_owned(), plan_file(p)?);
    }
    Ok(Value::Object(body))
}

/// Runs a mission action.
pub(super) async fn run(api: &Client, command: ActionCommand, json: bool) -> CliResult {
    match command {
        ActionCommand::Pause { id } => status_line(json, "paused", &api.pause_mission(&id).await?)?,
        ActionCommand::Resume { id } => {
            status_line(json, "resumed", &api.resume_mission(&id).await?)?
        }
        ActionCommand::Continue {
            id,
            retry,
            skip,
            feedback,
            version,
        } => {
            let req = ContinueMission {
                retry,
                skip,
                feedback,
                version,
            };
            let m = api.continue_mission(&id, &req).await?;
            status_line(json, "continued", &m)?;
        }
        ActionCommand::RejectPlan { id, feedback, plan } => {
            let body = with_plan("feedback", feedback, plan.as_deref())?;
            let m = api.reject_plan(&id, &body).await?;
            status_line(json, "plan rejected", &m)?;
            if !json && m.status == "awaiting_approval" {
                eprintln!("the new plan awaits approval: coordinator mission approve {id}");
            }
        }
        ActionCommand::Instruct {
            id,
            instructions,
            plan,
        } => {
            let body = with_plan("instructions", instructions, plan.as_deref())?;
            let m = api.instruct_mission(&id, &body).await?;
            status_line(json, "instructed", &m)?;
        }
        ActionCommand::SaveAsRoutine { id, name } => {
            let body = json!({ "name": name });
            let answer = api
                .call(
                    "POST",
                    &["v1", "missions", &id, "save-as-routine"],
                    &[],
                    Some(&body),
                )
                .await?;
            return print_answer(json, "saved as a routine", &answer);
        }
        ActionCommand::Commitment {
            id,
            strategy,
            derive: _,
        } => {
            let body = json!({ "strategy": strategy });
            let answer = api
                .call(
                    "PUT",
                    &["v1", "missions", &id, "commitment"],
                    &[],
                    Some(&body),
                )
                .await?;
            return print_answer(json, "commitment set", &answer);
        }
        ActionCommand::Allocation {
            id,
            mode,
            tender_window_ms,
        } => {
            let body = json!({ "allocation": mode, "tender_window_ms": tender_window_ms });
            let answer = api
                .call(
                    "PUT",
                    &["v1", "missions", &id, "allocation"],
                    &[],
                    Some(&body),
                )
                .await?;
            return print_answer(json, &format!("allocation set to {mode}"), &answer);
        }
        ActionCommand::BlackboardSet {
            id,
            key,
            value,
            expected_version,
        } => {
            let body = json!({
                "value": parse_json_flag("--value", &value)?,
                "expected_version": expected_version,
            });
            let answer = api
                .call(
                    "PUT",
                    &["v1", "missions", &id, "blackboard", &key],
                    &[],
                    Some(&body),
                )
                .await?;
            return print_answer(json, &format!("{key} written"), &answer);
        }
        ActionCommand::BlackboardDelete {
            id,
            key,
            expected_version,
        } => {
            let query: Vec<(&str, String)> = expected_version
                .map(|v| vec![("expected_version", v.to_string())])
                .unwrap_or_default();
            api.call(
                "DELETE",
                &["v1", "missions", &id, "blackboard", &key],
                &query,
                None,
            )
            .await?;
            if !json {
                out(&format!("{key} deleted\n"))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
