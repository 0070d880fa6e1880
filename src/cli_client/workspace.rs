//! The operator's workspace plumbing: webhooks, the organisation spec,
//! tenders, team decisions, contractors and work packages, board moves,
//! handoffs and BDI state. Each command is one REST call ([`Call`]); the
//! less common bodies are given whole with `--data JSON` (`@FILE` reads a
//! file, `-` stdin), the everyday fields as flags.

use std::process::ExitCode;

use clap::Subcommand;
use serde_json::{Map, Value, json};

use super::{CliError, CliResult, ClientArgs, operator::print_answer, parse_json_flag, report};

/// One REST call: method, path segments, query and body.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// HTTP method.
    pub method: &'static str,
    /// Path segments, e.g. `["v1", "webhooks", "<id>"]`.
    pub path: Vec<String>,
    /// Query pairs.
    pub query: Vec<(&'static str, String)>,
    /// JSON body, if any.
    pub body: Option<Value>,
    /// What to say when it worked (table mode).
    pub done: String,
}

impl Call {
    fn new(method: &'static str, path: &[&str], body: Option<Value>, done: &str) -> Call {
        Call {
            method,
            path: path.iter().map(|s| (*s).to_owned()).collect(),
            query: Vec::new(),
            body,
            done: done.to_owned(),
        }
    }
}

/// Declares a command group: the service's address plus its subcommands.
macro_rules! group {
    ($(#[$doc:meta])* $name:ident, $command:ty) => {
        $(#[$doc])*
        #[derive(Debug, clap::Args)]
        pub struct $name {
            /// Service and output.
            #[command(flatten)]
            pub client: ClientArgs,
            /// What to do.
            #[command(subcommand)]
            pub command: $command,
        }
    };
}

group!(
    /// `coordinator webhook …`.
    WebhookArgs,
    WebhookCommand
);
group!(
    /// `coordinator org …`.
    OrgArgs,
    OrgCommand
);
group!(
    /// `coordinator tender …`.
    TenderArgs,
    TenderCommand
);
group!(
    /// `coordinator team-decision …`.
    TeamDecisionArgs,
    TeamDecisionCommand
);
group!(
    /// `coordinator workforce …`.
    WorkforceArgs,
    WorkforceCommand
);
group!(
    /// `coordinator board …`.
    BoardArgs,
    BoardCommand
);
group!(
    /// `coordinator handoff …`.
    HandoffArgs,
    HandoffCommand
);
group!(
    /// `coordinator bdi …`.
    BdiArgs,
    BdiCommand
);

/// The workspace plumbing command groups.
#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// Outbound webhooks: create, delete.
    Webhook(WebhookArgs),
    /// The workspace's organisation spec: put, delete, validate.
    Org(OrgArgs),
    /// Contract-net tenders: open one for a task, award it.
    Tender(TenderArgs),
    /// Team decisions (agents vote): propose, cancel.
    TeamDecision(TeamDecisionArgs),
    /// Contractors and work packages.
    Workforce(WorkforceArgs),
    /// The board: move a card (complete or retry the task behind it).
    Board(BoardArgs),
    /// Hand a task over between agents and people.
    Handoff(HandoffArgs),
    /// BDI state of agents: beliefs, desires, goals, intentions, maintenance.
    Bdi(BdiArgs),
}

/// A request body given whole.
#[derive(Debug, Clone, clap::Args)]
pub struct Data {
    /// The request body: JSON, `@FILE` or `-` (stdin).
    #[arg(long, value_name = "JSON")]
    pub data: String,
}

/// Webhook commands.
#[derive(Debug, Subcommand)]
pub enum WebhookCommand {
    /// Deliver events to a URL, signed with a shared secret.
    Create {
        /// Where to POST deliveries.
        #[arg(long)]
        url: String,
        /// Event kinds (repeatable or comma-separated; `task.*` prefixes allowed) [default: task.*].
        #[arg(long = "event", value_delimiter = ',', value_name = "KIND")]
        events: Vec<String>,
        /// Shared secret for the HMAC signature (16 to 256 characters).
        #[arg(long, env = "COORDINATOR_WEBHOOK_SECRET", hide_env_values = true)]
        secret: String,
    },
    /// Stop delivering to a webhook.
    Delete {
        /// Webhook id.
        id: String,
    },
}

/// Organisation spec commands.
#[derive(Debug, Subcommand)]
pub enum OrgCommand {
    /// Replace the spec with a JSON file (`-`: stdin).
    Put {
        /// The spec document.
        file: String,
        /// Replace only this version (0: only if there is none yet).
        #[arg(long)]
        version: Option<i64>,
    },
    /// Remove the spec.
    Delete,
    /// Check a spec without storing it.
    Validate {
        /// The spec document.
        file: String,
    },
}

/// Tender commands.
#[derive(Debug, Subcommand)]
pub enum TenderCommand {
    /// Open a tender for a task that has not started.
    Open {
        /// Task id.
        #[arg(long)]
        task: String,
        /// Proposal window in milliseconds.
        #[arg(long)]
        window_ms: Option<i32>,
    },
    /// Award a tender to its best proposal now.
    Award {
        /// Tender id.
        id: String,
    },
}

/// Team decision commands.
#[derive(Debug, Subcommand)]
pub enum TeamDecisionCommand {
    /// Put a question to a mission's agents (body: `topic`, `options`, …).
    Propose {
        /// Mission id.
        mission: String,
        /// The proposal.
        #[command(flatten)]
        data: Data,
    },
    /// Withdraw a team decision.
    Cancel {
        /// Team decision id.
        id: String,
        /// Why.
        #[arg(long)]
        reason: String,
    },
}

/// Workforce commands.
#[derive(Debug, Subcommand)]
pub enum WorkforceCommand {
    /// Add a contractor (body as `POST /v1/contractors`).
    AddContractor(Data),
    /// Change a contractor.
    UpdateContractor {
        /// Contractor id.
        id: String,
        /// The changes.
        #[command(flatten)]
        data: Data,
    },
    /// Record a contractor's trust outcome.
    Trust {
        /// Contractor id.
        id: String,
        /// The outcome.
        #[command(flatten)]
        data: Data,
    },
    /// Create a work package.
    CreatePackage(Data),
    /// Move a work package to another state.
    Transition {
        /// Work package id.
        id: String,
        /// The transition.
        #[command(flatten)]
        data: Data,
    },
    /// Assign a work package.
    Assign {
        /// Work package id.
        id: String,
        /// The assignment.
        #[command(flatten)]
        data: Data,
    },
    /// Report a work package's progress.
    Progress {
        /// Work package id.
        id: String,
        /// The progress.
        #[command(flatten)]
        data: Data,
    },
}

/// Board commands.
#[derive(Debug, Subcommand)]
pub enum BoardCommand {
    /// Move a card: from `needs_human`, `done` completes the task and `ready` retries it.
    Move {
        /// Card (task) id.
        card: String,
        /// Target column.
        #[arg(long)]
        to: String,
        /// The card version you saw.
        #[arg(long)]
        version: Option<i64>,
        /// The result, as JSON (moving to `done`).
        #[arg(long, value_name = "JSON")]
        output: Option<String>,
        /// Guidance for the retry, or a note.
        #[arg(long)]
        feedback: Option<String>,
    },
}

/// Handoff commands.
#[derive(Debug, Subcommand)]
pub enum HandoffCommand {
    /// Hand a task over (body: `direction`, `to`, `task_id`, `context_summary`, …).
    Create(Data),
}

/// BDI commands (an agent's mental state; agents keep most of it themselves).
#[derive(Debug, Subcommand)]
pub enum BdiCommand {
    /// Set a belief of an agent.
    Belief {
        /// Agent id.
        agent: String,
        /// The belief.
        #[command(flatten)]
        data: Data,
    },
    /// Give an agent a desire.
    Desire {
        /// Agent id.
        agent: String,
        /// The desire.
        #[command(flatten)]
        data: Data,
    },
    /// Drop a desire.
    DropDesire {
        /// Agent id.
        agent: String,
        /// Desire id.
        desire: String,
        /// Why.
        #[command(flatten)]
        data: Data,
    },
    /// Give an agent a goal.
    Goal {
        /// Agent id.
        agent: String,
        /// The goal.
        #[command(flatten)]
        data: Data,
    },
    /// Change a goal's status.
    GoalStatus {
        /// Agent id.
        agent: String,
        /// Goal id.
        goal: String,
        /// The status.
        #[command(flatten)]
        data: Data,
    },
    /// Commit an agent to an intention.
    Intend {
        /// Agent id.
        agent: String,
        /// The intention.
        #[command(flatten)]
        data: Data,
    },
    /// Change an intention's status.
    IntentionStatus {
        /// Agent id.
        agent: String,
        /// Intention id.
        intention: String,
        /// The status.
        #[command(flatten)]
        data: Data,
    },
    /// Report an intention's progress.
    IntentionProgress {
        /// Agent id.
        agent: String,
        /// Intention id.
        intention: String,
        /// The progress.
        #[command(flatten)]
        data: Data,
    },
    /// Ask an agent to reconsider an intention.
    Reconsider {
        /// Agent id.
        agent: String,
        /// Intention id.
        intention: String,
        /// Why.
        #[command(flatten)]
        data: Data,
    },
    /// Run a BDI maintenance cycle now (it also runs on its own timer).
    Maintenance,
}

/// Reads a `--data` value: JSON, `@FILE` or `-` (stdin).
fn read_data(flag: &str, text: &str) -> Result<Value, CliError> {
    let text = match text {
        "-" => std::io::read_to_string(std::io::stdin())
            .map_err(|e| CliError::Usage(format!("{flag} -: {e}")))?,
        t if t.starts_with('@') => std::fs::read_to_string(&t[1..])
            .map_err(|e| CliError::Usage(format!("{flag} {t}: {e}")))?,
        t => t.to_owned(),
    };
    parse_json_flag(flag, &text)
}

fn data(d: &Data) -> Result<Option<Value>, CliError> {
    read_data("--data", &d.data).map(Some)
}

/// The REST call a workspace command makes.
pub(crate) fn call(command: &WorkspaceCommand) -> Result<Call, CliError> {
    Ok(match command {
        WorkspaceCommand::Webhook(a) => webhook(&a.command),
        WorkspaceCommand::Org(a) => org(&a.command)?,
        WorkspaceCommand::Tender(a) => match &a.command {
            TenderCommand::Open { task, window_ms } => {
                let mut body = json!({ "task_id": task });
                if let Some(w) = window_ms {
                    body["window_ms"] = json!(w);
                }
                Call::new("POST", &["v1", "tenders"], Some(body), "tender opened")
            }
            TenderCommand::Award { id } => Call::new(
                "POST",
                &["v1", "tenders", id, "award"],
                None,
                "tender awarded",
            ),
        },
        WorkspaceCommand::TeamDecision(a) => match &a.command {
            TeamDecisionCommand::Propose { mission, data: d } => Call::new(
                "POST",
                &["v1", "missions", mission, "team-decisions"],
                data(d)?,
                "team decision proposed",
            ),
            TeamDecisionCommand::Cancel { id, reason } => Call::new(
                "POST",
                &["v1", "team-decisions", id, "cancel"],
                Some(json!({ "reason": reason })),
                "team decision cancelled",
            ),
        },
        WorkspaceCommand::Workforce(a) => workforce(&a.command)?,
        WorkspaceCommand::Board(a) => match &a.command {
            BoardCommand::Move {
                card,
                to,
                version,
                output,
                feedback,
            } => {
                let mut body = Map::new();
                body.insert("to".into(), json!(to));
                if let Some(v) = version {
                    body.insert("version".into(), json!(v));
                }
                if let Some(o) = output {
                    body.insert("output".into(), parse_json_flag("--output", o)?);
                }
                if let Some(f) = feedback {
                    body.insert("feedback".into(), json!(f));
                }
                Call::new(
                    "POST",
                    &["v1", "board", "cards", card, "move"],
                    Some(Value::Object(body)),
                    &format!("card moved to {to}"),
                )
            }
        },
        WorkspaceCommand::Handoff(a) => match &a.command {
            HandoffCommand::Create(d) => {
                Call::new("POST", &["v1", "handoffs"], data(d)?, "handoff created")
            }
        },
        WorkspaceCommand::Bdi(a) => bdi(&a.command)?,
    })
}

fn webhook(command: &WebhookCommand) -> Call {
    match command {
        WebhookCommand::Create {
            url,
            events,
            secret,
        } => Call::new(
            "POST",
            &["v1", "webhooks"],
            Some(json!({ "url": url, "events": events, "secret": secret })),
            "webhook created",
        ),
        WebhookCommand::Delete { id } => Call::new(
            "DELETE",
            &["v1", "webhooks", id],
            None,
            &format!("webhook {id} deleted"),
        ),
    }
}

fn org(command: &OrgCommand) -> Result<Call, CliError> {
    let file = |path: &str| {
        let text = if path == "-" {
            "-".to_owned()
        } else {
            format!("@{path}")
        };
        read_data("the spec file", &text)
    };
    Ok(match command {
        OrgCommand::Put {
            file: path,
            version,
        } => Call::new(
            "PUT",
            &["v1", "org-spec"],
            Some(json!({ "spec": file(path)?, "version": version })),
            "organisation spec stored",
        ),
        OrgCommand::Delete => Call::new(
            "DELETE",
            &["v1", "org-spec"],
            None,
            "organisation spec removed",
        ),
        OrgCommand::Validate { file: path } => Call::new(
            "POST",
            &["v1", "org-spec", "validate"],
            Some(file(path)?),
            "organisation spec checked",
        ),
    })
}

fn workforce(command: &WorkforceCommand) -> Result<Call, CliError> {
    let post = |path: &[&str], d: &Data, done: &str| -> Result<Call, CliError> {
        Ok(Call::new("POST", path, data(d)?, done))
    };
    match command {
        WorkforceCommand::AddContractor(d) => post(&["v1", "contractors"], d, "contractor added"),
        WorkforceCommand::UpdateContractor { id, data: d } => Ok(Call::new(
            "PATCH",
            &["v1", "contractors", id],
            data(d)?,
            "contractor updated",
        )),
        WorkforceCommand::Trust { id, data: d } => post(
            &["v1", "contractors", id, "trust"],
            d,
            "contractor trust recorded",
        ),
        WorkforceCommand::CreatePackage(d) => {
            post(&["v1", "work-packages"], d, "work package created")
        }
        WorkforceCommand::Transition { id, data: d } => post(
            &["v1", "work-packages", id, "transition"],
            d,
            "work package moved",
        ),
        WorkforceCommand::Assign { id, data: d } => post(
            &["v1", "work-packages", id, "assign"],
            d,
            "work package assigned",
        ),
        WorkforceCommand::Progress { id, data: d } => post(
            &["v1", "work-packages", id, "progress"],
            d,
            "work package progress recorded",
        ),
    }
}

fn bdi(command: &BdiCommand) -> Result<Call, CliError> {
    let agent = |a: &str, rest: &[&str], d: &Data, method: &'static str, done: &str| {
        let mut path = vec!["v1", "agents", a];
        path.extend_from_slice(rest);
        Ok::<_, CliError>(Call::new(method, &path, data(d)?, done))
    };
    match command {
        BdiCommand::Belief { agent: a, data: d } => agent(a, &["beliefs"], d, "PUT", "belief set"),
        BdiCommand::Desire { agent: a, data: d } => {
            agent(a, &["desires"], d, "POST", "desire added")
        }
        BdiCommand::DropDesire {
            agent: a,
            desire,
            data: d,
        } => agent(a, &["desires", desire, "drop"], d, "POST", "desire dropped"),
        BdiCommand::Goal { agent: a, data: d } => agent(a, &["goals"], d, "POST", "goal added"),
        BdiCommand::GoalStatus {
            agent: a,
            goal,
            data: d,
        } => agent(a, &["goals", goal, "status"], d, "POST", "goal changed"),
        BdiCommand::Intend { agent: a, data: d } => {
            agent(a, &["intentions"], d, "POST", "intention committed")
        }
        BdiCommand::IntentionStatus {
            agent: a,
            intention,
            data: d,
        } => agent(
            a,
            &["intentions", intention, "status"],
            d,
            "POST",
            "intention changed",
        ),
        BdiCommand::IntentionProgress {
            agent: a,
            intention,
            data: d,
        } => agent(
            a,
            &["intentions", intention, "progress"],
            d,
            "POST",
            "intention progress recorded",
        ),
        BdiCommand::Reconsider {
            agent: a,
            intention,
            data: d,
        } => agent(
            a,
            &["intentions", intention, "reconsider"],
            d,
            "POST",
            "intention reconsidered",
        ),
        BdiCommand::Maintenance => Ok(Call::new(
            "POST",
            &["v1", "bdi", "maintenance"],
            None,
            "BDI maintenance ran",
        )),
    }
}

/// The client arguments of a workspace command.
fn client_of(command: &WorkspaceCommand) -> &ClientArgs {
    match command {
        WorkspaceCommand::Webhook(a) => &a.client,
        WorkspaceCommand::Org(a) => &a.client,
        WorkspaceCommand::Tender(a) => &a.client,
        WorkspaceCommand::TeamDecision(a) => &a.client,
        WorkspaceCommand::Workforce(a) => &a.client,
        WorkspaceCommand::Board(a) => &a.client,
        WorkspaceCommand::Handoff(a) => &a.client,
        WorkspaceCommand::Bdi(a) => &a.client,
    }
}

/// Runs a workspace command: its one call, then its answer.
pub async fn run(command: WorkspaceCommand) -> ExitCode {
    let client = client_of(&command).clone();
    let run = async {
        let c = call(&command)?;
        let api = client.client()?;
        let path: Vec<&str> = c.path.iter().map(String::as_str).collect();
        let answer = api.call(c.method, &path, &c.query, c.body.as_ref()).await?;
        print_answer(client.json, &c.done, &answer)
    };
    let outcome: CliResult = run.await;
    outcome.unwrap_or_else(|e| report(e, client.json))
}
