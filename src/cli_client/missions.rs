//! `coordinator mission create|list|show|edit|delete|approve|cancel|review|watch`
//! (the later actions are in [`super::mission_actions`]).

use std::{collections::BTreeMap, path::PathBuf, process::ExitCode};

use clap::Subcommand;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::{
    CliError, CliResult, ClientArgs,
    mission_actions::{self, ActionCommand},
    mission_view::mission_text,
    out, out_json, parse_json_flag, status_line,
    table::{Table, datetime, truncate},
    watch,
};
use crate::client::{MissionFilter, MissionSummary, Review};

/// `coordinator mission …`: missions on a running service.
#[derive(Debug, clap::Args)]
pub struct MissionArgs {
    /// Service and output.
    #[command(flatten)]
    pub client: ClientArgs,
    /// Mission command.
    #[command(subcommand)]
    pub command: MissionCommand,
}

/// Mission commands.
#[derive(Debug, Subcommand)]
pub enum MissionCommand {
    /// Create a mission from a goal (or a mission JSON file) and show its plan.
    Create(CreateArgs),
    /// List missions, newest first.
    List {
        /// Only missions in this status (e.g. executing, awaiting_approval, completed).
        #[arg(long)]
        status: Option<String>,
        /// Missions per page (1–500).
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Continue after this mission (the `next_cursor` of the previous page).
        #[arg(long)]
        cursor: Option<Uuid>,
        /// Also list archived missions.
        #[arg(long)]
        archived: bool,
    },
    /// Show a mission: status, progress, budget and its tasks.
    Show {
        /// Mission id.
        id: String,
    },
    /// Change a mission's title, priority, budget, deadline or labels (a
    /// finished mission takes only a title or labels).
    Edit(EditArgs),
    /// Delete a finished mission with its tasks, attempts and events, or
    /// archive it (kept, but out of `mission list`).
    Delete {
        /// Mission id.
        id: String,
        /// Archive instead of deleting.
        #[arg(long)]
        archive: bool,
    },
    /// Approve a mission's plan so its tasks start.
    Approve {
        /// Mission id.
        id: String,
        /// Run a task on a given agent: `TASK_KEY=AGENT_ID` (repeatable).
        #[arg(long = "assign", value_name = "TASK_KEY=AGENT_ID", value_parser = parse_assignment)]
        assignments: Vec<(String, String)>,
    },
    /// Cancel a mission: open tasks and live attempts stop.
    Cancel {
        /// Mission id.
        id: String,
    },
    /// Accept or reject the results of a mission awaiting review.
    #[command(group(clap::ArgGroup::new("decision").required(true).args(["accept", "reject"])))]
    Review {
        /// Mission id.
        id: String,
        /// Accept the results: the mission completes.
        #[arg(long)]
        accept: bool,
        /// Reject the results: the named tasks (and what follows them) run again.
        #[arg(long, requires = "tasks")]
        reject: bool,
        /// Why (given to the agents that redo the work).
        #[arg(long)]
        feedback: Option<String>,
        /// Task key to redo (repeatable, or comma-separated).
        #[arg(long = "task", value_delimiter = ',', value_name = "TASK_KEY")]
        tasks: Vec<String>,
    },
    /// Follow a mission's events live until it ends: exit 0 when it
    /// completes, 3 when it fails or is cancelled.
    Watch {
        /// Mission id.
        id: String,
        /// Start after this event `seq` (0: replay the whole log first).
        #[arg(long, default_value_t = 0)]
        after: i64,
    },
    /// The actions on a mission after it was created.
    #[command(flatten)]
    Action(ActionCommand),
}

/// `coordinator mission create`.
#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// What to achieve (optional with --file when the file has a goal).
    pub goal: Option<String>,
    /// A mission as JSON (`goal`, `autonomy`, `budget`, `constraints`,
    /// `priority`, `plan`); `-` reads stdin. Flags override its fields.
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// `approve` (a person approves the plan, then reviews the results) or
    /// `autonomous` [service default: approve].
    #[arg(long, value_parser = ["approve", "autonomous"])]
    pub autonomy: Option<String>,
    /// Spending limit of the whole mission.
    #[arg(long)]
    pub budget: Option<f64>,
    /// Constraints as a JSON object, e.g. `{"depth": "deep"}`.
    #[arg(long, value_name = "JSON")]
    pub constraints: Option<String>,
    /// Dispatch priority, -100–100 (higher first).
    #[arg(long, allow_negative_numbers = true)]
    pub priority: Option<i32>,
}

/// `coordinator mission edit`: each flag given is one field of the change.
#[derive(Debug, clap::Args)]
#[command(group(
    clap::ArgGroup::new("change")
        .required(true)
        .multiple(true)
        .args(["title", "no_title", "priority", "budget", "no_budget", "deadline", "no_deadline", "labels", "no_labels"])
))]
pub struct EditArgs {
    /// Mission id.
    pub id: String,
    /// A short name shown instead of the goal (one line, 1–200 characters).
    #[arg(long, conflicts_with = "no_title")]
    pub title: Option<String>,
    /// Remove the title (the goal names the mission again).
    #[arg(long)]
    pub no_title: bool,
    /// Dispatch priority, -100–100 (higher first); queued tasks take it at once.
    #[arg(long, allow_negative_numbers = true)]
    pub priority: Option<i32>,
    /// Spending limit of the whole mission (not below what it already spent).
    #[arg(long, conflicts_with = "no_budget")]
    pub budget: Option<f64>,
    /// Remove the spending limit.
    #[arg(long)]
    pub no_budget: bool,
    /// When it should be done, RFC 3339 (e.g. 2027-01-31T17:00:00Z).
    #[arg(long, conflicts_with = "no_deadline")]
    pub deadline: Option<String>,
    /// Remove the deadline.
    #[arg(long)]
    pub no_deadline: bool,
    /// A label (repeatable, or comma-separated); the labels given replace the mission's.
    #[arg(long = "label", value_delimiter = ',', value_name = "LABEL")]
    pub labels: Vec<String>,
    /// Remove every label.
    #[arg(long, conflicts_with = "labels")]
    pub no_labels: bool,
    /// Change only if the mission is still at this version (as `mission show --json` reads it).
    #[arg(long)]
    pub version: Option<i64>,
}

/// The `PATCH /v1/missions/{id}` body of `mission edit`.
fn edit_body(e: &EditArgs) -> Value {
    let mut body = Map::new();
    let mut set = |name: &str, value: Option<Value>, clear: bool| {
        if let Some(v) = value {
            body.insert(name.to_owned(), v);
        } else if clear {
            body.insert(name.to_owned(), Value::Null);
        }
    };
    set("title", e.title.clone().map(Value::from), e.no_title);
    set("priority", e.priority.map(Value::from), false);
    set("budget", e.budget.map(Value::from), e.no_budget);
    set(
        "deadline",
        e.deadline.clone().map(Value::from),
        e.no_deadline,
    );
    let labels = (!e.labels.is_empty() || e.no_labels).then(|| json!(e.labels));
    set("labels", labels, false);
    set("version", e.version.map(Value::from), false);
    Value::Object(body)
}

fn parse_assignment(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, a)) if !k.trim().is_empty() && !a.trim().is_empty() => {
            Ok((k.trim().to_owned(), a.trim().to_owned()))
        }
        _ => Err(format!("expected TASK_KEY=AGENT_ID, got '{s}'")),
    }
}

pub(super) async fn run(args: MissionArgs) -> CliResult {
    let json = args.client.json;
    let api = args.client.client()?;
    match args.command {
        MissionCommand::Create(c) => {
            let body = create_body(c)?;
            let mission = api.create_mission(&body).await?;
            if json {
                out_json(&mission)?;
            } else {
                out(&mission_text(&mission))?;
                if mission.status == "awaiting_approval" {
                    eprintln!(
                        "\nthe plan awaits approval: coordinator mission approve {}",
                        mission.id
                    );
                }
            }
        }
        MissionCommand::List {
            status,
            limit,
            cursor,
            archived,
        } => {
            let filter = MissionFilter {
                status,
                limit: Some(limit),
                cursor,
                archived,
            };
            let page = api.missions(&filter).await?;
            if json {
                out_json(&page)?;
            } else {
                if page.missions.is_empty() {
                    eprintln!("no missions");
                } else {
                    out(&mission_table(&page.missions).render())?;
                }
                if let Some(next) = page.next_cursor {
                    eprintln!("more: {}", more_hint(&filter, next));
                }
            }
        }
        MissionCommand::Show { id } => {
            let mission = api.mission(&id).await?;
            if json {
                out_json(&mission)?;
            } else {
                out(&mission_text(&mission))?;
            }
        }
        MissionCommand::Edit(e) => {
            let mission = api.update_mission(&e.id, &edit_body(&e)).await?;
            if json {
                out_json(&mission)?;
            } else {
                out(&format!(
                    "mission {} updated; version {}\n",
                    mission.id, mission.version
                ))?;
            }
        }
        MissionCommand::Delete { id, archive } => match api.delete_mission(&id, archive).await? {
            Some(mission) => status_line(json, "archived", &mission)?,
            None if json => out_json(&json!({ "mission_id": id, "deleted": true }))?,
            None => out(&format!("mission {id} deleted\n"))?,
        },
        MissionCommand::Approve { id, assignments } => {
            let pins: BTreeMap<String, String> = assignments.into_iter().collect();
            let mission = api.approve_mission(&id, &pins).await?;
            status_line(json, "approved", &mission)?;
        }
        MissionCommand::Cancel { id } => {
            let mission = api.cancel_mission(&id).await?;
            status_line(json, "cancelled", &mission)?;
        }
        MissionCommand::Review {
            id,
            accept,
            reject: _,
            feedback,
            tasks,
        } => {
            let review = Review {
                decision: if accept { "accept" } else { "reject" }.to_owned(),
                feedback,
                tasks: if accept { Vec::new() } else { tasks },
            };
            let mission = api.review_mission(&id, &review).await?;
            let verb = if accept { "accepted" } else { "rejected" };
            status_line(json, verb, &mission)?;
        }
        MissionCommand::Watch { id, after } => return watch::watch(&api, &id, after, json).await,
        MissionCommand::Action(action) => return mission_actions::run(&api, action, json).await,
    }
    Ok(ExitCode::SUCCESS)
}

/// The `POST /v1/missions` body: the file (if any), then the flags.
fn create_body(c: CreateArgs) -> Result<Value, CliError> {
    let mut body = match &c.file {
        None => Map::new(),
        Some(path) => {
            let text = if path.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())
            } else {
                std::fs::read_to_string(path)
            }
            .map_err(|e| CliError::Usage(format!("--file {}: {e}", path.display())))?;
            match parse_json_flag("--file", &text)? {
                Value::Object(m) => m,
                _ => {
                    return Err(CliError::Usage(
                        "--file must hold a JSON object (a mission)".to_owned(),
                    ));
                }
            }
        }
    };
    if let Some(goal) = c.goal {
        body.insert("goal".into(), Value::String(goal));
    }
    if !body.contains_key("goal") {
        return Err(CliError::Usage(
            "a goal is required: coordinator mission create \"GOAL\" (or a --file with a goal)"
                .to_owned(),
        ));
    }
    if let Some(a) = c.autonomy {
        body.insert("autonomy".into(), Value::String(a));
    }
    if let Some(b) = c.budget {
        body.insert("budget".into(), b.into());
    }
    if let Some(p) = c.priority {
        body.insert("priority".into(), p.into());
    }
    if let Some(text) = c.constraints {
        let constraints = parse_json_flag("--constraints", &text)?;
        if !constraints.is_object() {
            return Err(CliError::Usage(
                "--constraints must be a JSON object, e.g. '{\"depth\": \"deep\"}'".to_owned(),
            ));
        }
        body.insert("constraints".into(), constraints);
    }
    Ok(Value::Object(body))
}

/// The command that lists the next page: the same filters, the next cursor.
fn more_hint(filter: &MissionFilter, next: Uuid) -> String {
    let mut line = "coordinator mission list".to_owned();
    if let Some(s) = &filter.status {
        line.push_str(&format!(" --status {s}"));
    }
    if let Some(l) = filter.limit {
        line.push_str(&format!(" --limit {l}"));
    }
    if filter.archived {
        line.push_str(" --archived");
    }
    line.push_str(&format!(" --cursor {next}"));
    line
}

fn mission_table(missions: &[MissionSummary]) -> Table {
    let mut t = Table::new(&["ID", "STATUS", "AUTONOMY", "CREATED", "GOAL"]);
    for m in missions {
        // The title is the short name people gave it; the goal otherwise.
        let name = m.title.as_deref().unwrap_or(&m.goal);
        t.row(vec![
            m.id.to_string(),
            m.status.clone(),
            m.autonomy.clone(),
            datetime(m.created_at),
            truncate(name, 60),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_more_hint_keeps_every_filter() {
        let next = Uuid::from_u128(9);
        let filter = MissionFilter {
            status: Some("failed".into()),
            limit: Some(5),
            cursor: Some(Uuid::from_u128(3)),
            archived: true,
        };
        assert_eq!(
            more_hint(&filter, next),
            format!(
                "coordinator mission list --status failed --limit 5 --archived --cursor {next}"
            )
        );
    }

    #[test]
    fn create_bodies() {
        let args = |goal: Option<&str>| CreateArgs {
            goal: goal.map(str::to_owned),
            file: None,
            autonomy: Some("autonomous".into()),
            budget: Some(3.0),
            constraints: Some(r#"{"depth": "deep"}"#.into()),
            priority: Some(-5),
        };
        assert_eq!(
            create_body(args(Some("Do it"))).expect("body"),
            json!({"goal": "Do it", "autonomy": "autonomous", "budget": 3.0,
                   "constraints": {"depth": "deep"}, "priority": -5})
        );
        assert!(matches!(create_body(args(None)), Err(CliError::Usage(_))));
        let mut bad = args(Some("x"));
        bad.constraints = Some("[1]".into());
        assert!(matches!(create_body(bad), Err(CliError::Usage(_))));
        let mut bad = args(Some("x"));
        bad.constraints = Some("{oops".into());
        assert!(matches!(create_body(bad), Err(CliError::Usage(m)) if m.contains("--constraints")));
    }

    #[test]
    fn a_mission_file_with_flags_on_top() {
        let path = std::env::temp_dir().join(format!("mission-{}.json", Uuid::new_v4()));
        std::fs::write(
            &path,
            r#"{"goal": "From the file", "budget": 1, "plan": {"tasks": []}}"#,
        )
        .expect("write");
        let args = |goal: Option<&str>| CreateArgs {
            goal: goal.map(str::to_owned),
            file: Some(path.clone()),
            autonomy: None,
            budget: Some(2.0),
            constraints: None,
            priority: None,
        };
        assert_eq!(
            create_body(args(None)).expect("body"),
            json!({"goal": "From the file", "budget": 2.0, "plan": {"tasks": []}})
        );
        assert_eq!(
            create_body(args(Some("Flag"))).expect("body")["goal"],
            "Flag"
        );
        std::fs::write(&path, "[1, 2]").expect("write");
        assert!(matches!(create_body(args(None)), Err(CliError::Usage(m)) if m.contains("object")));
        std::fs::remove_file(&path).expect("remove");
        assert!(matches!(create_body(args(None)), Err(CliError::Usage(m)) if m.contains("--file")));
    }

    #[test]
    fn assignments() {
        assert_eq!(
            parse_assignment("draft = writer"),
            Ok(("draft".into(), "writer".into()))
        );
        assert!(parse_assignment("draft").is_err());
        assert!(parse_assignment("=writer").is_err());
    }
}
