//! `coordinator agent register|list|show|heartbeat`, and the coordination
//! commands of [`super::coordination`].

use std::process::ExitCode;

use clap::Subcommand;

use super::{
    CliResult, ClientArgs,
    coordination::{self, ReserveArgs, SendArgs},
    out, out_json,
    table::{Table, datetime, fields, or_dash, truncate},
};
use crate::client::{Agent, RegisterAgent};

/// `coordinator agent …`: the agent registry of a running service.
#[derive(Debug, clap::Args)]
pub struct AgentArgs {
    /// Service and output.
    #[command(flatten)]
    pub client: ClientArgs,
    /// Agent command.
    #[command(subcommand)]
    pub command: AgentCommand,
}

/// Agent commands.
#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Register an agent that a worker serves at an endpoint.
    Register(RegisterArgs),
    /// List the registered agents with their live load and status.
    List,
    /// Show one agent.
    Show {
        /// Agent id.
        agent_id: String,
    },
    /// Change an agent in place (only the options given; validated as at registration).
    Update(UpdateArgs),
    /// Retire an agent: kept with its history, given no new work; its live attempts finish.
    Retire {
        /// Agent id.
        agent_id: String,
    },
    /// Report that an agent is alive (an offline agent comes back; a retired one does not).
    Heartbeat {
        /// Agent id.
        agent_id: String,
        /// Report a state too: idle, working, blocked or done.
        #[arg(long)]
        status: Option<String>,
    },
    /// Send an ACL message to an agent, a role (`role:<role>`) or everyone (`all`).
    Send(SendArgs),
    /// List an agent's inbox.
    Inbox {
        /// Agent id.
        agent_id: String,
        /// Only unread, read or acked messages.
        #[arg(long)]
        state: Option<String>,
        /// Only messages awaiting this agent's ack.
        #[arg(long)]
        unacked: bool,
    },
    /// Mark a message read.
    Read {
        /// Agent id (whose inbox).
        agent_id: String,
        /// Message id.
        message_id: String,
    },
    /// Acknowledge a message (BLOCKED and HANDOFF need it).
    Ack {
        /// Agent id (whose inbox).
        agent_id: String,
        /// Message id.
        message_id: String,
    },
    /// Show a conversation as a reply tree.
    Thread {
        /// Conversation id.
        conversation_id: String,
    },
    /// Reserve a scope (advisory, with a TTL).
    Reserve(ReserveArgs),
    /// Release a reservation.
    Release {
        /// Reservation id.
        reservation_id: String,
    },
    /// List reservations (who holds what, until when).
    Reservations {
        /// Only active, released or expired ones.
        #[arg(long)]
        state: Option<String>,
        /// Only this holder's.
        #[arg(long)]
        agent: Option<String>,
        /// Only those overlapping this scope.
        #[arg(long)]
        scope: Option<String>,
    },
    /// An agent's unified status: tasks held, unread and un-acked messages, reservations.
    Status {
        /// Agent id.
        agent_id: String,
    },
}

/// `coordinator agent register`.
#[derive(Debug, clap::Args)]
pub struct RegisterArgs {
    /// Agent id: letters, digits, '.', '_', ':' or '-'.
    pub agent_id: String,
    /// Worker base URL the coordinator dispatches to (`POST {URL}/v1/tasks`).
    #[arg(long, value_name = "URL")]
    pub endpoint: String,
    /// Role, free text [default: the agent id].
    #[arg(long)]
    pub role: Option<String>,
    /// Skills, comma-separated (e.g. `research,analysis`).
    #[arg(long, value_delimiter = ',', value_name = "SKILL,…")]
    pub skills: Vec<String>,
    /// Tools, comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "TOOL,…")]
    pub tools: Vec<String>,
    /// Attempts it may run at once.
    #[arg(long, default_value_t = 1)]
    pub max_concurrency: i32,
    /// Model name.
    #[arg(long)]
    pub model: Option<String>,
    /// Model tier, 0–10 (higher is stronger; the service defaults to 1).
    #[arg(long)]
    pub model_tier: Option<i32>,
    /// Trust, 0–1 (the service defaults to 0.5).
    #[arg(long)]
    pub trust: Option<f64>,
    /// Cost of one task.
    #[arg(long)]
    pub cost_per_task: Option<f64>,
    /// Promise a heartbeat at least this often; silent longer, the agent goes offline.
    #[arg(long, value_name = "SECS")]
    pub heartbeat_timeout_secs: Option<i32>,
}

/// `coordinator agent update`.
#[derive(Debug, clap::Args)]
pub struct UpdateArgs {
    /// Agent id.
    pub agent_id: String,
    /// Change it only if it is still at this version (as `show` printed it).
    #[arg(long = "if-version", value_name = "VERSION")]
    pub version: Option<i64>,
    /// Role.
    #[arg(long)]
    pub role: Option<String>,
    /// A name for people (an empty string clears it).
    #[arg(long)]
    pub display_name: Option<String>,
    /// Skills, comma-separated (replaces the list).
    #[arg(long, value_delimiter = ',', value_name = "SKILL,…")]
    pub skills: Option<Vec<String>>,
    /// Tools, comma-separated (replaces the list).
    #[arg(long, value_delimiter = ',', value_name = "TOOL,…")]
    pub tools: Option<Vec<String>>,
    /// Worker base URL.
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Attempts it may run at once.
    #[arg(long)]
    pub max_concurrency: Option<i32>,
    /// Model tier, 0–10.
    #[arg(long)]
    pub model_tier: Option<i32>,
    /// Trust, 0–1.
    #[arg(long)]
    pub trust: Option<f64>,
    /// Cost of one task.
    #[arg(long)]
    pub cost_per_task: Option<f64>,
    /// Status: idle, working, blocked, done or offline (from retired: brings it back).
    #[arg(long)]
    pub status: Option<String>,
}

impl UpdateArgs {
    /// The `PATCH` body: only the options given.
    fn body(self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        let mut put = |k: &str, v: Option<serde_json::Value>| {
            if let Some(v) = v {
                m.insert(k.to_owned(), v);
            }
        };
        let names = |v: Vec<String>| v.into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>();
        put("version", self.version.map(Into::into));
        put("role", self.role.map(Into::into));
        put(
            "display_name",
            self.display_name.map(|n| {
                if n.is_empty() {
                    serde_json::Value::Null
                } else {
                    n.into()
                }
            }),
        );
        put("skills", self.skills.map(|v| names(v).into()));
        put("tools", self.tools.map(|v| names(v).into()));
        put("endpoint_url", self.endpoint.map(Into::into));
        put("max_concurrency", self.max_concurrency.map(Into::into));
        put("model_tier", self.model_tier.map(Into::into));
        put("trust", self.trust.map(Into::into));
        put("cost_per_task", self.cost_per_task.map(Into::into));
        put("status", self.status.map(Into::into));
        serde_json::Value::Object(m)
    }
}

pub(super) async fn run(args: AgentArgs) -> CliResult {
    let json = args.client.json;
    let api = args.client.client()?;
    match args.command {
        AgentCommand::Register(r) => {
            let skills = r.skills.into_iter().filter(|s| !s.is_empty()).collect();
            let tools = r.tools.into_iter().filter(|s| !s.is_empty()).collect();
            let agent = api
                .register_agent(&RegisterAgent {
                    role: r.role.unwrap_or_else(|| r.agent_id.clone()),
                    agent_id: r.agent_id,
                    skills,
                    tools,
                    endpoint_url: r.endpoint,
                    max_concurrency: r.max_concurrency,
                    model: r.model,
                    model_tier: r.model_tier,
                    trust: r.trust,
                    cost_per_task: r.cost_per_task,
                    heartbeat_timeout_secs: r.heartbeat_timeout_secs,
                })
                .await?;
            if json {
                out_json(&agent)?;
            } else {
                out(&format!(
                    "registered agent {} ({}) at {}\n",
                    agent.agent_id, agent.role, agent.endpoint_url
                ))?;
            }
        }
        AgentCommand::List => {
            let agents = api.agents().await?;
            if json {
                out_json(&agents)?;
            } else if agents.is_empty() {
                eprintln!("no agents registered");
            } else {
                out(&agent_table(&agents).render())?;
            }
        }
        AgentCommand::Show { agent_id } => {
            let agent = api.agent(&agent_id).await?;
            if json {
                out_json(&agent)?;
            } else {
                out(&agent_fields(&agent))?;
            }
        }
        AgentCommand::Send(a) => return coordination::send(&api, a, json).await,
        AgentCommand::Inbox {
            agent_id,
            state,
            unacked,
        } => return coordination::inbox(&api, &agent_id, state, unacked, json).await,
        AgentCommand::Read {
            agent_id,
            message_id,
        } => return coordination::mark(&api, &agent_id, &message_id, "read", json).await,
        AgentCommand::Ack {
            agent_id,
            message_id,
        } => return coordination::mark(&api, &agent_id, &message_id, "ack", json).await,
        AgentCommand::Thread { conversation_id } => {
            return coordination::thread(&api, &conversation_id, json).await;
        }
        AgentCommand::Reserve(a) => return coordination::reserve(&api, a, json).await,
        AgentCommand::Release { reservation_id } => {
            return coordination::release(&api, &reservation_id, json).await;
        }
        AgentCommand::Reservations {
            state,
            agent,
            scope,
        } => {
            let q = [("state", state), ("agent", agent), ("scope", scope)]
                .into_iter()
                .filter_map(|(k, v)| v.map(|v| (k, v)))
                .collect();
            return coordination::reservations(&api, q, json).await;
        }
        AgentCommand::Status { agent_id } => {
            return coordination::status(&api, &agent_id, json).await;
        }
        AgentCommand::Update(u) => {
            let agent_id = u.agent_id.clone();
            let agent = api.update_agent(&agent_id, &u.body()).await?;
            if json {
                out_json(&agent)?;
            } else {
                out(&agent_fields(&agent))?;
            }
        }
        AgentCommand::Retire { agent_id } => {
            let agent = api.retire_agent(&agent_id).await?;
            if json {
                out_json(&agent)?;
            } else {
                out(&format!(
                    "retired agent {} (it held {} live attempt(s); they finish)\n",
                    agent.agent_id, agent.running_count
                ))?;
            }
        }
        AgentCommand::Heartbeat { agent_id, status } => {
            api.agent_heartbeat(&agent_id, status.as_deref()).await?;
            let agent = api.agent(&agent_id).await?;
            if json {
                out_json(&agent)?;
            } else {
                out(&format!(
                    "heartbeat recorded: agent {} is {} (last seen {})\n",
                    agent.agent_id,
                    agent.status,
                    datetime(agent.last_seen_at)
                ))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn agent_table(agents: &[Agent]) -> Table {
    let mut t = Table::new(&[
        "ID",
        "ROLE",
        "KIND",
        "STATUS",
        "LOAD",
        "SKILLS",
        "ENDPOINT",
        "LAST SEEN",
    ]);
    for a in agents {
        t.row(vec![
            a.agent_id.clone(),
            truncate(&a.role, 20),
            a.kind.clone(),
            a.status.clone(),
            format!("{}/{}", a.running_count, a.max_concurrency),
            truncate(&a.skills.join(","), 40),
            a.endpoint_url.clone(),
            datetime(a.last_seen_at),
        ]);
    }
    t
}

fn agent_fields(a: &Agent) -> String {
    let list = |v: &[String]| {
        if v.is_empty() {
            "-".to_owned()
        } else {
            v.join(", ")
        }
    };
    fields(&[
        ("agent", a.agent_id.clone()),
        ("role", a.role.clone()),
        ("kind", a.kind.clone()),
        ("status", a.status.clone()),
        (
            "load",
            format!("{} of {} running", a.running_count, a.max_concurrency),
        ),
        ("skills", list(&a.skills)),
        ("tools", list(&a.tools)),
        (
            "model",
            format!("{} (tier {})", or_dash(a.model.as_deref()), a.model_tier),
        ),
        ("trust", format!("{:.2}", a.trust)),
        ("cost", format!("{:.2} per task", a.cost_per_task)),
        ("endpoint", a.endpoint_url.clone()),
        (
            "heartbeat",
            a.heartbeat_timeout_secs
                .map(|s| format!("every {s} s at most"))
                .unwrap_or_else(|| "not monitored".to_owned()),
        ),
        ("last seen", datetime(a.last_seen_at)),
        ("registered", datetime(a.created_at)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_rows() {
        let agent = Agent {
            agent_id: "researcher".into(),
            role: "researcher".into(),
            kind: "roster".into(),
            skills: vec!["research".into(), "analysis".into()],
            endpoint_url: "http://127.0.0.1:8091".into(),
            max_concurrency: 2,
            running_count: 1,
            status: "working".into(),
            ..Agent::default()
        };
        let text = agent_table(std::slice::from_ref(&agent)).render();
        let mut lines = text.lines();
        assert!(
            lines
                .next()
                .expect("header")
                .starts_with("ID          ROLE")
        );
        let row = lines.next().expect("row");
        assert!(row.starts_with("researcher  researcher  roster  working  1/2"));
        assert!(row.contains("research,analysis  http://127.0.0.1:8091  -"));
        let shown = agent_fields(&agent);
        assert!(shown.contains("load        1 of 2 running\n"), "{shown}");
        assert!(shown.contains("tools       -\n"), "{shown}");
    }
}
