//! The operator and agent commands of `coordinator`: `mission …`, `agent …`
//! and the API form of `token create`, talking to a running service through
//! [`crate::client`]. Tables by default, `--json` for scripts.
//!
//! Exit codes: 0 done, 1 the service refused (its code and message are
//! printed) or could not be reached, 2 usage (clap's own errors, a missing
//! token, bad JSON in a flag), 3 a watched mission failed or was cancelled.

mod agents;
mod coordination;
mod mission_actions;
mod mission_view;
mod missions;
mod operator;
pub mod routes;
pub mod table;
mod watch;
mod workflows;
mod workspace;

use std::{
    io::{self, Write},
    process::ExitCode,
    time::Duration,
};

use serde::Serialize;
use serde_json::Value;

#[cfg(test)]
pub(crate) use self::workspace::call as workspace_call;
pub use self::{
    agents::{AgentArgs, AgentCommand},
    mission_actions::ActionCommand,
    missions::{MissionArgs, MissionCommand},
    operator::{OperatorCommand, run as operator},
    workflows::{WorkflowArgs, WorkflowCommand, run as workflow},
    workspace::{Call, WorkspaceCommand, run as workspace},
};
use crate::client::{Client, ClientError, CreateToken, DEFAULT_URL};

/// Exit code: the service refused, or could not be reached.
pub const EXIT_REFUSED: u8 = 1;
/// Exit code: the command line is wrong (as clap uses).
pub const EXIT_USAGE: u8 = 2;
/// Exit code: the watched mission failed or was cancelled.
pub const EXIT_MISSION_FAILED: u8 = 3;

/// Where the service is and how to talk to it (global to the client commands).
#[derive(Debug, Clone, clap::Args)]
pub struct ClientArgs {
    /// Base URL of the coordinator API [default: http://127.0.0.1:8080].
    #[arg(long, global = true, env = "COORDINATOR_URL", value_name = "URL")]
    pub url: Option<String>,
    /// API token, sent as `Authorization: Bearer <token>`.
    #[arg(
        long,
        global = true,
        env = "COORDINATOR_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,
    /// Print JSON instead of tables (watch: one event per line).
    #[arg(long, global = true)]
    pub json: bool,
    /// Seconds one API call may take (a live `watch` is not limited).
    #[arg(
        long,
        global = true,
        env = "COORDINATOR_TIMEOUT_SECS",
        default_value_t = 120,
        value_name = "SECS"
    )]
    pub timeout_secs: u64,
}

impl ClientArgs {
    /// Whether the user pointed at a service (flag or environment).
    pub fn is_set(&self) -> bool {
        self.url.is_some() || self.token.is_some()
    }

    /// The client, or a usage error when there is no token.
    fn client(&self) -> Result<Client, CliError> {
        if self.token.as_deref().is_none_or(|t| t.trim().is_empty()) {
            return Err(CliError::Usage(
                "no API token: pass --token TOKEN or set COORDINATOR_TOKEN \
                 (the service prints an admin token on first start; \
                 `coordinator token create` makes more)"
                    .to_owned(),
            ));
        }
        let url = self.url.as_deref().unwrap_or(DEFAULT_URL);
        let client = Client::new(url, self.token.clone()).map_err(|e| match e {
            ClientError::Config(m) => CliError::Usage(format!("--url: {m}")),
            other => CliError::Client(other),
        })?;
        Ok(client.with_timeout(Duration::from_secs(self.timeout_secs.max(1))))
    }
}

/// Why a client command stopped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// The command line cannot work.
    #[error("{0}")]
    Usage(String),
    /// The service refused or could not be reached.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// Something else went wrong on the way (e.g. a stream ended early).
    #[error("{0}")]
    Failed(String),
    /// Writing the output failed.
    #[error("writing output: {0}")]
    Output(#[from] io::Error),
}

type CliResult = Result<ExitCode, CliError>;

/// Longest `details` printed under a refusal in table mode (longer ones,
/// such as a plan's problems, repeat the message; `--json` shows them).
const SHORT_DETAILS: usize = 200;

/// Prints `e` the way a person (or, with `json`, a script) can act on it,
/// and picks the exit code.
fn report(e: CliError, json: bool) -> ExitCode {
    match e {
        CliError::Usage(m) => {
            eprintln!("error: {m}");
            ExitCode::from(EXIT_USAGE)
        }
        CliError::Client(ClientError::Api {
            status,
            code,
            message,
            details,
        }) => {
            if json {
                // The service's own error body, for scripts.
                let body = serde_json::json!({
                    "error": {"code": code, "message": message, "details": details},
                    "status": status,
                });
                eprintln!("{body}");
                return ExitCode::from(EXIT_REFUSED);
            }
            eprintln!("error: {code} (HTTP {status}): {message}");
            let shown = details.to_string();
            let empty = details.is_null() || details.as_object().is_some_and(|m| m.is_empty());
            if !empty && shown.len() <= SHORT_DETAILS {
                eprintln!("details: {shown}");
            }
            ExitCode::from(EXIT_REFUSED)
        }
        CliError::Client(other) => {
            eprintln!("error: {other}");
            ExitCode::from(EXIT_REFUSED)
        }
        CliError::Failed(m) => {
            eprintln!("error: {m}");
            ExitCode::from(EXIT_REFUSED)
        }
        // Output piped into `head` and closed: not worth an error.
        CliError::Output(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        CliError::Output(e) => {
            eprintln!("error: writing output: {e}");
            ExitCode::from(EXIT_REFUSED)
        }
    }
}

/// Writes `text` to stdout as is.
fn out(text: &str) -> Result<(), CliError> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// Writes `value` to stdout as pretty JSON.
fn out_json<T: Serialize>(value: &T) -> Result<(), CliError> {
    let text =
        serde_json::to_string_pretty(value).map_err(|e| CliError::Output(io::Error::other(e)))?;
    out(&format!("{text}\n"))
}

/// Runs `coordinator mission …`.
pub async fn mission(args: MissionArgs) -> ExitCode {
    let json = args.client.json;
    missions::run(args)
        .await
        .unwrap_or_else(|e| report(e, json))
}

/// Runs `coordinator agent …`.
pub async fn agent(args: AgentArgs) -> ExitCode {
    let json = args.client.json;
    agents::run(args).await.unwrap_or_else(|e| report(e, json))
}

/// `coordinator token create` through the API (`POST /v1/tokens`, admin
/// token): prints the new secret on stdout (or the answer with `--json`).
pub async fn create_token(
    client: &ClientArgs,
    role: &str,
    name: Option<String>,
    agent_id: Option<String>,
    expires_in_secs: Option<u64>,
) -> ExitCode {
    let run = async {
        let api = client.client()?;
        let created = api
            .create_token(&CreateToken {
                role: role.to_owned(),
                name,
                agent_id,
                expires_in_secs,
            })
            .await?;
        if client.json {
            out_json(&created)?;
        } else {
            out(&format!("{}\n", created.token))?;
            eprintln!(
                "created token {} ('{}') with role {} through {} (shown only once)",
                created.id,
                created.name,
                created.role,
                api.base_url()
            );
        }
        Ok(ExitCode::SUCCESS)
    };
    run.await.unwrap_or_else(|e| report(e, client.json))
}

/// `coordinator token list` (`GET /v1/tokens`, admin token): a table of the
/// workspace's tokens, or `--json`; never a secret.
pub async fn list_tokens(client: &ClientArgs, include_revoked: bool) -> ExitCode {
    let run = async {
        let api = client.client()?;
        let tokens = api.tokens(include_revoked).await?;
        if client.json {
            out_json(&tokens)?;
        } else if tokens.is_empty() {
            eprintln!("no tokens");
        } else {
            let mut t = table::Table::new(&[
                "ID",
                "ROLE",
                "NAME",
                "AGENT",
                "CREATED",
                "LAST USED",
                "EXPIRES",
                "REVOKED",
            ]);
            for tok in &tokens {
                t.row(vec![
                    tok.id.to_string(),
                    tok.role.clone(),
                    table::truncate(&tok.name, 40),
                    table::or_dash(tok.agent_id.as_deref()),
                    table::datetime(tok.created_at),
                    table::datetime(tok.last_used_at),
                    table::datetime(tok.expires_at),
                    table::datetime(tok.revoked_at),
                ]);
            }
            out(&t.render())?;
        }
        Ok(ExitCode::SUCCESS)
    };
    run.await.unwrap_or_else(|e| report(e, client.json))
}

/// `coordinator token revoke ID` (`DELETE /v1/tokens/{id}`, admin token).
pub async fn revoke_token(client: &ClientArgs, id: &str) -> ExitCode {
    let run = async {
        let api = client.client()?;
        api.revoke_token(id).await?;
        if client.json {
            out_json(&serde_json::json!({ "id": id, "revoked": true }))?;
        } else {
            eprintln!("revoked token {id}: it gets 401 from now on");
        }
        Ok(ExitCode::SUCCESS)
    };
    run.await.unwrap_or_else(|e| report(e, client.json))
}

/// Parses a JSON flag value, naming the flag when it is not JSON.
fn parse_json_flag(flag: &str, text: &str) -> Result<Value, CliError> {
    serde_json::from_str(text)
        .map_err(|e| CliError::Usage(format!("{flag} is not valid JSON: {e}")))
}

/// What an action did to a mission: the mission as JSON, or one line.
fn status_line(json: bool, verb: &str, m: &crate::client::Mission) -> Result<(), CliError> {
    if json {
        out_json(m)
    } else {
        out(&format!("mission {} {verb}; status {}\n", m.id, m.status))
    }
}
