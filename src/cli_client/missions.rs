//! `coordinator mission create|list|show|edit|delete|approve|cancel|review|watch`
//! (the later actions are in [`super::mission_actions`]).

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    path::PathBuf,
    process::ExitCode,
};

use clap::Subcommand;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::{
    CliError, CliResult, ClientArgs, EXIT_MISSION_FAILED,
    mission_actions::{self, ActionCommand},
    operator::needs_you,
    out, out_json, parse_json_flag, status_line,
    table::{Table, clock, datetime, fields, gauge, money, or_dash, truncate},
};
use crate::client::{
    Client, Event, Mission, MissionFilter, MissionSummary, Review, is_terminal_status,
    sse::ReconnectPolicy,
};

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
        MissionCommand::Watch { id, after } => return watch(&api, &id, after, json).await,
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

/// The progress by outcome: "4 of 11 done · 2 failed · 5 cancelled"; the
/// percentage is of what succeeded, so a failed mission never shows 100 %.
fn progress_text(m: &Mission) -> String {
    let p = m.progress.outcomes();
    let mut text = format!(
        "{} {} of {} done ({}%)",
        gauge(p.done, p.total, 20),
        p.done,
        p.total,
        p.percent
    );
    for (n, what) in [
        (p.failed, "failed"),
        (p.cancelled, "cancelled"),
        (p.skipped, "skipped"),
        (p.waiting, "waiting for a person"),
        (p.remaining, "to go"),
    ] {
        if n > 0 {
            text.push_str(&format!(" · {n} {what}"));
        }
    }
    text
}

fn mission_text(m: &Mission) -> String {
    let budget = match m.budget.limit {
        Some(limit) => format!("{} spent of {}", money(m.budget.spent), money(limit)),
        None => format!("{} spent (no limit)", money(m.budget.spent)),
    };
    let mut text = fields(&[
        ("mission", m.id.to_string()),
        ("title", m.title.clone().unwrap_or_default()),
        ("goal", m.goal.clone()),
        ("status", format!("{} ({} mode)", m.status, m.autonomy)),
        ("labels", m.labels.join(", ")),
        (
            "plan",
            format!(
                "version {} by the {} planner",
                m.plan_version,
                or_dash(m.planner.as_deref())
            ),
        ),
        ("progress", progress_text(m)),
        ("budget", budget),
        (
            "deadline",
            m.deadline.map(|t| datetime(Some(t))).unwrap_or_default(),
        ),
        ("critical", m.critical_path.join(" → ")),
        ("created", datetime(m.created_at)),
        (
            "started",
            m.started_at.map(|t| datetime(Some(t))).unwrap_or_default(),
        ),
        (
            "finished",
            m.finished_at.map(|t| datetime(Some(t))).unwrap_or_default(),
        ),
        ("detail", m.status_detail.clone().unwrap_or_default()),
        ("failure", m.failure_reason.clone().unwrap_or_default()),
        (
            "archived",
            m.archived_at.map(|t| datetime(Some(t))).unwrap_or_default(),
        ),
    ]);
    if !m.attention.is_empty() {
        text.push_str("\nNeeds you:\n");
        text.push_str(&needs_you(&m.attention));
    }
    if !m.tasks.is_empty() {
        let mut t = Table::new(&[
            "KEY",
            "TITLE",
            "STATUS",
            "AGENT",
            "ATTEMPTS",
            "COST",
            "LAST ERROR",
        ]);
        for task in &m.tasks {
            t.row(vec![
                task.key.clone(),
                truncate(&task.title, 40),
                task.status.clone(),
                or_dash(task.assigned_agent_id.as_deref()),
                task.attempts.to_string(),
                money(task.actual_cost),
                or_dash(
                    task.last_error
                        .as_deref()
                        .map(|e| truncate(e, 50))
                        .as_deref(),
                ),
            ]);
        }
        text.push('\n');
        text.push_str(&t.render());
    }
    text
}

/// Task kinds after which the progress may have moved.
const PROGRESS_KINDS: &[&str] = &[
    "task.succeeded",
    "task.failed",
    "task.skipped",
    "task.cancelled",
    "task.resolved",
    "task.reopened",
    "plan.created",
    "plan.replaced",
];

/// Kinds after which something may wait for a person.
const ATTENTION_KINDS: &[&str] = &[
    "task.awaiting_human",
    "task.awaiting_approval",
    "task.budget_refused",
    "decision.requested",
    "decision.rechecked",
    "tool.approval_requested",
    "mission.budget_warning",
];

/// What `watch` knows about the mission's tasks.
struct Follow {
    mission: Mission,
    /// Task id → title.
    titles: HashMap<Uuid, String>,
    /// Task id → agent of its latest dispatch.
    agents: HashMap<Uuid, String>,
    /// The last progress printed.
    shown: Option<(usize, usize)>,
    /// A refresh failed (and was reported) already.
    refresh_failed: bool,
    /// The waits whose command was printed already.
    hinted: HashSet<String>,
}

impl Follow {
    fn new(mission: Mission) -> Follow {
        let mut f = Follow {
            mission: Mission::default(),
            titles: HashMap::new(),
            agents: HashMap::new(),
            shown: None,
            refresh_failed: false,
            hinted: HashSet::new(),
        };
        f.update(mission);
        f
    }

    fn update(&mut self, mission: Mission) {
        for t in &mission.tasks {
            self.titles.insert(t.id, t.title.clone());
            if let Some(a) = &t.assigned_agent_id {
                self.agents.entry(t.id).or_insert_with(|| a.clone());
            }
        }
        self.mission = mission;
    }

    /// Re-reads the mission; a failure only costs the progress line (the
    /// events keep coming), so it is reported once and otherwise ignored.
    async fn refresh(&mut self, api: &Client, id: &str) -> bool {
        match api.mission(id).await {
            Ok(m) => {
                self.update(m);
                true
            }
            Err(e) => {
                if !std::mem::replace(&mut self.refresh_failed, true) {
                    eprintln!("warning: could not read the mission for progress: {e}");
                }
                false
            }
        }
    }

    /// The command lines for what waits for a person now and was not
    /// shown yet: the mission's attention items, or (from a service that
    /// lists none) the task that `ev` left waiting.
    fn hints(&mut self, ev: &Event) -> Vec<String> {
        let mut lines = Vec::new();
        for item in &self.mission.attention {
            let key = format!(
                "{}:{}",
                item.kind,
                item.id
                    .or(item.task_id)
                    .map(|u| u.to_string())
                    .unwrap_or_default()
            );
            let command = item.command.as_deref().unwrap_or_default();
            if !command.is_empty() && self.hinted.insert(key) {
                lines.push(format!("{}: {command}", item.summary));
            }
        }
        if !self.mission.attention.is_empty() {
            return lines;
        }
        let waiting = ev.task_id.and_then(|id| {
            self.mission
                .tasks
                .iter()
                .find(|t| t.id == id && t.status == "awaiting_human")
        });
        if let Some(task) = waiting
            && self.hinted.insert(format!("task:{}", task.id))
        {
            let mission = self.mission.id;
            let key = &task.key;
            let why = if ev.kind == "task.budget_refused" {
                format!(
                    "the budget refused task {key}: raise it with coordinator mission edit {mission} --budget N, or"
                )
            } else {
                format!("task {key} waits for a person:")
            };
            lines.push(format!(
                "{why} coordinator task resolve {mission} {key} --action complete|retry|skip|fail"
            ));
        }
        lines
    }

    /// The progress line, if it changed since the last one printed.
    fn progress_line(&mut self) -> Option<String> {
        let now = (self.mission.progress.finished, self.mission.progress.total);
        if self.shown == Some(now) {
            return None;
        }
        self.shown = Some(now);
        Some(format!(
            "{}  progress {}\n",
            " ".repeat(8),
            progress_text(&self.mission)
        ))
    }

    /// One line for `ev`: time, kind, task title, and what the payload says.
    fn line(&mut self, ev: &Event) -> String {
        let p = &ev.payload;
        let s = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
        let task = ev.task_id.map(|id| {
            self.titles
                .get(&id)
                .cloned()
                .unwrap_or_else(|| s("key").to_owned())
        });
        if let (Some(id), "task.dispatched") = (ev.task_id, ev.kind.as_str())
            && !s("agent_id").is_empty()
        {
            self.agents.insert(id, s("agent_id").to_owned());
        }
        let agent = ev
            .task_id
            .and_then(|id| self.agents.get(&id))
            .cloned()
            .unwrap_or_else(|| "?".to_owned());
        let detail = match ev.kind.as_str() {
            "mission.created" => truncate(s("goal"), 60),
            "mission.status_changed" => {
                let reason = s("reason");
                if reason.is_empty() {
                    format!("{} → {}", s("from"), s("to"))
                } else {
                    format!("{} → {}: {}", s("from"), s("to"), truncate(reason, 60))
                }
            }
            "plan.created" => format!(
                "version {}: {} tasks by the {} planner",
                p.get("plan_version").unwrap_or(&Value::Null),
                // A count (or, in older logs, the task list).
                p.get("tasks")
                    .and_then(|t| t.as_u64().or_else(|| t.as_array().map(|a| a.len() as u64)))
                    .unwrap_or(0),
                p.pointer("/provenance/planner")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
            ),
            "task.dispatched" => format!(
                "→ {agent} (attempt {})",
                p.get("attempt").unwrap_or(&Value::Null)
            ),
            "task.succeeded" => format!("by {agent}"),
            "task.retry_scheduled" => format!(
                "attempt {} by {agent} failed: {}",
                p.get("attempt").unwrap_or(&Value::Null),
                truncate(s("error"), 60)
            ),
            "task.failed" | "task.awaiting_human" => truncate(s("error"), 70),
            "task.escalated" => format!("rung {}", s("rung")),
            "task.skipped" | "task.cancelled" | "task.deferred" => truncate(s("reason"), 70),
            "task.resolved" => s("action").to_owned(),
            _ => String::new(),
        };
        let mut line = match task {
            Some(title) => format!(
                "{}  {:<24}  {:<36}  {detail}",
                clock(ev.created_at),
                ev.kind,
                truncate(&title, 36)
            ),
            None => format!("{}  {:<24}  {detail}", clock(ev.created_at), ev.kind),
        };
        line.truncate(line.trim_end().len());
        line.push('\n');
        line
    }
}

/// Follows the mission's SSE stream until the mission ends.
async fn watch(api: &Client, id: &str, after: i64, json: bool) -> CliResult {
    let mission = api.mission(id).await?;
    let mut follow = Follow::new(mission);
    if !json {
        out(&format!(
            "mission {}: {}\nstatus {}\n",
            follow.mission.id,
            truncate(&follow.mission.goal, 70),
            follow.mission.status
        ))?;
        if let Some(line) = follow.progress_line() {
            out(&line)?;
        }
    }
    let mut stream = api.mission_events(id, after.max(0), ReconnectPolicy::default());
    while let Some(next) = stream.next().await {
        let sse = next?;
        let ev: Event = match serde_json::from_str(&sse.data) {
            Ok(ev) => ev,
            Err(e) => {
                eprintln!("warning: skipped an event that is not JSON ({e})");
                continue;
            }
        };
        if json {
            out(&format!("{}\n", sse.data.trim()))?;
        } else {
            if ev.task_id.is_some_and(|t| !follow.titles.contains_key(&t)) {
                // A replan added tasks since we last looked.
                follow.refresh(api, id).await;
            }
            out(&follow.line(&ev))?;
            if ATTENTION_KINDS.contains(&ev.kind.as_str()) && follow.refresh(api, id).await {
                for hint in follow.hints(&ev) {
                    eprintln!("{hint}");
                }
            }
            if PROGRESS_KINDS.contains(&ev.kind.as_str())
                && follow.refresh(api, id).await
                && let Some(line) = follow.progress_line()
            {
                out(&line)?;
            }
        }
        if ev.kind != "mission.status_changed" {
            continue;
        }
        let to = ev.payload.get("to").and_then(Value::as_str).unwrap_or("");
        if is_terminal_status(to) {
            // The event is the truth; the mission adds the failure reason if we can read it.
            follow.refresh(api, id).await;
            let reason = follow.mission.failure_reason.clone().or_else(|| {
                ev.payload
                    .get("reason")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
            return Ok(finish(id, to, reason.as_deref(), json));
        }
        // Only a wait that is still on (not one replayed from the log) needs a person.
        if !json && follow.refresh(api, id).await && follow.mission.status == to {
            match to {
                "awaiting_approval" => {
                    eprintln!("the plan awaits approval: coordinator mission approve {id}")
                }
                "awaiting_review" => {
                    eprintln!("the results await review: coordinator mission review {id} --accept")
                }
                _ => {}
            }
        }
    }
    // The service ended the stream for good (204): report where things are.
    let mission = api.mission(id).await?;
    if mission.is_terminal() {
        return Ok(finish(
            id,
            &mission.status,
            mission.failure_reason.as_deref(),
            json,
        ));
    }
    Err(CliError::Failed(format!(
        "the event stream ended while the mission is {}",
        mission.status
    )))
}

/// Reports how the mission ended; 0 if it completed.
fn finish(id: &str, status: &str, reason: Option<&str>, json: bool) -> ExitCode {
    if status == "completed" {
        if !json {
            eprintln!("mission {id} completed");
        }
        return ExitCode::SUCCESS;
    }
    match reason {
        Some(r) if !r.is_empty() => eprintln!("mission {id} {status}: {r}"),
        _ => eprintln!("mission {id} {status}"),
    }
    if status == "failed" && !json {
        eprintln!(
            "to go on, retry or skip each failed task: coordinator mission continue {id} --retry TASK_KEY"
        );
    }
    ExitCode::from(EXIT_MISSION_FAILED)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn mission() -> Mission {
        let task_id = Uuid::from_u128(7);
        serde_json::from_value(json!({
            "id": Uuid::from_u128(1), "goal": "Write a report", "autonomy": "approve",
            "status": "executing", "plan_version": 1, "planner": "template",
            "budget": {"limit": 5.0, "spent": 1.5},
            "progress": {"total": 4, "finished": 1, "done": 1, "remaining": 3, "percent": 25,
                         "by_status": {}},
            "critical_path": ["scope", "draft"],
            "tasks": [{"id": task_id, "key": "scope", "title": "Scope the report",
                       "status": "succeeded", "assigned_agent_id": "planner", "attempts": 1,
                       "actual_cost": 0.5}],
            "created_at": "2025-06-01T12:00:00Z"
        }))
        .expect("mission")
    }

    #[test]
    fn a_mission_as_text() {
        let text = mission_text(&mission());
        assert!(
            text.contains("status    executing (approve mode)\n"),
            "{text}"
        );
        assert!(text.contains("budget    1.50 spent of 5.00\n"), "{text}");
        assert!(text.contains("critical  scope → draft\n"), "{text}");
        assert!(text.contains("1 of 4 done (25%) · 3 to go"), "{text}");
        assert!(!text.contains("finished"), "{text}");
        assert!(
            text.contains("scope  Scope the report  succeeded  planner  1         0.50"),
            "{text}"
        );
    }

    #[test]
    fn watch_lines_name_the_task_and_agent() {
        let mut f = Follow::new(mission());
        let task = Some(Uuid::from_u128(7));
        let ev = |kind: &str, payload: Value| Event {
            kind: kind.into(),
            task_id: task,
            payload,
            created_at: Some(time::macros::datetime!(2025-06-01 12:00:05 UTC)),
            ..Event::default()
        };
        let line = f.line(&ev(
            "task.dispatched",
            json!({"key": "scope", "agent_id": "writer", "attempt": 2}),
        ));
        assert_eq!(
            line,
            format!(
                "12:00:05  task.dispatched           {:<36}  → writer (attempt 2)\n",
                "Scope the report"
            )
        );
        let line = f.line(&ev("task.succeeded", json!({"key": "scope"})));
        assert!(line.ends_with("by writer\n"), "{line}");
        let mut status = ev(
            "mission.status_changed",
            json!({"from": "executing", "to": "completed"}),
        );
        status.task_id = None;
        let line = f.line(&status);
        assert!(line.contains("mission.status_changed"), "{line}");
        assert_eq!(
            line,
            "12:00:05  mission.status_changed    executing → completed\n"
        );
        let mut plan = ev(
            "plan.created",
            json!({"plan_version": 1, "tasks": 4,
            "provenance": {"planner": "template"}}),
        );
        plan.task_id = None;
        assert!(
            f.line(&plan)
                .ends_with("version 1: 4 tasks by the template planner\n")
        );
        assert!(f.progress_line().is_some());
        assert!(
            f.progress_line().is_none(),
            "unchanged progress is not repeated"
        );
    }

    #[test]
    fn a_failed_mission_never_shows_100_percent() {
        let mut m = mission();
        m.status = "failed".into();
        m.progress = serde_json::from_value(json!({
            "total": 11, "finished": 11, "percent": 36, "done": 4, "failed": 2,
            "cancelled": 5, "skipped": 0, "waiting": 0, "remaining": 0, "by_status": {}
        }))
        .expect("progress");
        let text = progress_text(&m);
        assert!(
            text.ends_with("4 of 11 done (36%) · 2 failed · 5 cancelled"),
            "{text}"
        );
        // From a service that sends only the counts by status, the same.
        m.progress = serde_json::from_value(json!({
            "total": 11, "finished": 11, "percent": 100,
            "by_status": {"succeeded": 4, "failed": 2, "cancelled": 5}
        }))
        .expect("progress");
        assert_eq!(progress_text(&m), text);
    }

    #[test]
    fn watch_prints_the_command_for_what_waits() {
        let mut m = mission();
        m.tasks[0].status = "awaiting_human".into();
        let mut f = Follow::new(m.clone());
        let ev = Event {
            kind: "task.awaiting_human".into(),
            task_id: Some(Uuid::from_u128(7)),
            ..Event::default()
        };
        let hints = f.hints(&ev);
        assert_eq!(hints.len(), 1, "{hints:?}");
        assert!(
            hints[0]
                .contains("coordinator task resolve 00000000-0000-0000-0000-000000000001 scope"),
            "{hints:?}"
        );
        assert!(f.hints(&ev).is_empty(), "shown once");
        // The service's own attention items win, each shown once.
        m.attention = vec![
            serde_json::from_value(json!({
                "kind": "budget", "task_id": Uuid::from_u128(7),
                "summary": "the budget refused task scope",
                "command": "coordinator mission edit 1 --budget 9"
            }))
            .expect("item"),
        ];
        let mut f = Follow::new(m);
        let hints = f.hints(&ev);
        assert_eq!(
            hints,
            ["the budget refused task scope: coordinator mission edit 1 --budget 9"]
        );
        assert!(f.hints(&ev).is_empty());
    }

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
