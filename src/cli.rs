//! The `coordinator` command line: `serve`, `migrate`, `worker`, `demo`, `bench`,
//! `chaos`, `audit`, `token`, `config print`, and the client commands `mission`, `agent` and `workflow` (in
//! [`crate::cli_client`]). `serve` may also read a TOML file ([`crate::config`]).

use std::{
    ffi::OsString, net::SocketAddr, path::PathBuf, process::ExitCode, sync::OnceLock,
    time::Duration,
};

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod connections;
pub use connections::ConnectionArgs;

use crate::{
    api::{Application, Settings},
    auth::{self, Bootstrap, Role},
    cli_client::{self, AgentArgs, ClientArgs, MissionArgs},
    db::{Database, DatabaseArgs},
    demo::{self, DemoArgs},
    telemetry::LogFormat,
    worker::simulate::{SimulatedWorker, SimulationConfig},
};

/// Mission coordinator for LLM agents.
#[derive(Debug, Parser)]
#[command(name = "coordinator", version, about)]
pub struct Cli {
    /// Log filter (tracing syntax), e.g. `info` or `coordinator=debug` (default: info; warn for the demo).
    #[arg(long, global = true, env = "COORDINATOR_LOG")]
    pub log: Option<String>,
    /// Log format: `human` (readable lines) or `json` (one JSON object per line).
    #[arg(
        long,
        global = true,
        env = "COORDINATOR_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Human
    )]
    pub log_format: LogFormat,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the API and the tick loop.
    Serve(Box<ServeArgs>),
    /// Apply database migrations and exit.
    Migrate {
        /// Database.
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Run a reference worker.
    Worker(WorkerArgs),
    /// Run a self-contained demo: embedded database, service, simulated workers, one mission.
    Demo(DemoArgs),
    /// Benchmark the engine end to end (throughput, dispatch latency, step overhead).
    Bench(crate::bench::BenchArgs),
    /// Kill real replicas while workers misbehave, then audit every invariant.
    Chaos(crate::chaos::ChaosArgs),
    /// Hold real replicas under a steady, faulty load with event-stream
    /// subscribers; fail if memory or latency grows over the run.
    Soak(crate::soak::SoakArgs),
    /// Check a database's invariants (exit 1 if any is violated).
    Audit(AuditArgs),
    /// Missions on a running service: create, list, show, watch, edit, approve,
    /// review, pause, resume, continue, instruct, cancel, delete and more.
    Mission(MissionArgs),
    /// Agents on a running service: register, list, show, update, retire,
    /// heartbeat; messages (send, inbox, read, ack, thread); reservations
    /// (reserve, release, reservations); status.
    Agent(AgentArgs),
    /// BPMN workflows: import, version, validate, list, show, export, delete;
    /// instances: start, show, complete, fail, retry, set, cancel; messages and signals.
    Workflow(cli_client::WorkflowArgs),
    /// The operator's inbox and settling of tasks, tool approvals and decisions.
    #[command(flatten)]
    Operator(cli_client::OperatorCommand),
    /// Workspace plumbing: webhooks, org spec, tenders, workforce, board, handoffs, BDI.
    #[command(flatten)]
    Workspace(cli_client::WorkspaceCommand),
    /// Manage API tokens.
    Token {
        /// Token command.
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Inspect the configuration of `serve`.
    Config {
        /// Config command.
        #[command(subcommand)]
        command: ConfigCommand,
    },
}

/// `coordinator audit`.
#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    /// Database to audit (read only; no migrations are run).
    #[command(flatten)]
    pub db: DatabaseArgs,
}

/// `coordinator config …`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the effective `serve` configuration as TOML, each value with
    /// where it came from (flag, env, file, default); secrets masked.
    Print(Box<ServeArgs>),
}

/// `coordinator serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// TOML file of `serve` settings (keys: the long flags, e.g. `tick-ms = 200`); flags and env win over it.
    #[arg(long, env = "COORDINATOR_CONFIG")]
    pub config: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, env = "COORDINATOR_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Base URL workers use to call back (default: http://<listen>).
    #[arg(long, env = "COORDINATOR_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Admin token to create on a database with no token yet.
    #[arg(long, env = "COORDINATOR_BOOTSTRAP_TOKEN", hide_env_values = true)]
    pub bootstrap_token: Option<String>,
    /// Safety-net tick interval in milliseconds (the engine also wakes on NOTIFY).
    #[arg(long, env = "COORDINATOR_TICK_MS", default_value_t = 1000)]
    pub tick_ms: u64,
    /// Seconds an attempt may go without heartbeat or result before it is reclaimed.
    #[arg(long, env = "COORDINATOR_LEASE_SECS", default_value_t = 60)]
    pub lease_secs: u64,
    /// Failed attempts per task before it fails (continuations and busy workers do not count).
    #[arg(long, env = "COORDINATOR_MAX_ATTEMPTS", default_value_t = 3)]
    pub max_attempts: i32,
    /// Serve the API only; do not run the tick loop.
    #[arg(long)]
    pub no_engine: bool,
    /// Engine settings.
    #[command(flatten)]
    pub engine: EngineArgs,
    /// Planning settings.
    #[command(flatten)]
    pub planning: PlanningArgs,
    /// Event retention and webhook settings.
    #[command(flatten)]
    pub surfaces: SurfaceArgs,
    /// Database.
    #[command(flatten)]
    pub db: DatabaseArgs,
    /// Client connection timeouts and caps.
    #[command(flatten)]
    pub connections: ConnectionArgs,
}

/// Event retention and outbound webhooks.
#[derive(Debug, Clone, clap::Args)]
pub struct SurfaceArgs {
    /// Delete events (and finished webhook deliveries) older than this many hours; 0 keeps them forever.
    #[arg(
        long,
        env = "COORDINATOR_EVENT_RETENTION_HOURS",
        default_value_t = 720.0
    )]
    pub event_retention_hours: f64,
    /// Seconds between retention runs (one replica at a time runs it).
    #[arg(
        long,
        env = "COORDINATOR_RETENTION_INTERVAL_SECS",
        default_value_t = 600
    )]
    pub retention_interval_secs: u32,
    /// Seconds between BDI maintenance cycles (intention pruning, desire re-sorting, belief conflicts; one replica at a time runs it).
    #[arg(long, env = "COORDINATOR_BDI_INTERVAL_SECS", default_value_t = 1800)]
    pub bdi_interval_secs: u32,
    /// First webhook retry delay in milliseconds (doubles per failure, capped at 10 minutes).
    #[arg(
        long,
        env = "COORDINATOR_WEBHOOK_RETRY_BASE_MS",
        default_value_t = 2000
    )]
    pub webhook_retry_base_ms: u64,
    /// Tries before a webhook delivery is marked failed.
    #[arg(long, env = "COORDINATOR_WEBHOOK_MAX_ATTEMPTS", default_value_t = 8)]
    pub webhook_max_attempts: i32,
    /// Sustained API requests per second per token (per client IP without one), per replica; 0 disables rate limiting.
    #[arg(long, env = "COORDINATOR_RATE_LIMIT_PER_SEC", default_value_t = crate::api::rate_limit::DEFAULT_PER_SEC)]
    pub rate_limit_per_sec: f64,
    /// Requests a token (or client IP) may send back to back before the per-second rate applies; 0 disables rate limiting.
    #[arg(long, env = "COORDINATOR_RATE_LIMIT_BURST", default_value_t = crate::api::rate_limit::DEFAULT_BURST)]
    pub rate_limit_burst: u32,
    /// Also serve `/metrics` on this address, without a token (on the API port it needs an admin token); e.g. `0.0.0.0:9090` for a scraper.
    #[arg(long, env = "COORDINATOR_METRICS_LISTEN")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Include metric series labelled by workspace and agent (the deepest inboxes); off by default, since they name tenants and agents.
    #[arg(long, env = "COORDINATOR_METRICS_AGENT_LABELS")]
    pub metrics_agent_labels: bool,
    /// Networks agent endpoints may be in (comma-separated CIDRs; a deployment lists its pod network). Link-local needs a listed link-local range, the metadata address 169.254.169.254 needs itself listed.
    #[arg(
        long,
        env = "COORDINATOR_AGENT_NETWORKS",
        default_value = "127.0.0.0/8,::1/128",
        value_parser = networks_arg
    )]
    pub agent_networks: String,
    /// Networks webhooks may reach besides public addresses (comma-separated CIDRs; default none).
    #[arg(
        long,
        env = "COORDINATOR_WEBHOOK_NETWORKS",
        default_value = "",
        value_parser = networks_arg
    )]
    pub webhook_networks: String,
}

/// Checks a CIDR list flag (kept as text so `config print` shows it as typed).
fn networks_arg(text: &str) -> Result<String, String> {
    crate::egress::parse_networks(text).map(|_| text.to_owned())
}

impl SurfaceArgs {
    /// Applies these settings to `settings`.
    pub fn apply(&self, settings: &mut Settings) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.event_retention_hours.is_finite() && self.event_retention_hours >= 0.0,
            "--event-retention-hours must be 0 (keep forever) or more"
        );
        anyhow::ensure!(
            self.retention_interval_secs >= 1,
            "--retention-interval-secs must be at least 1"
        );
        anyhow::ensure!(
            self.bdi_interval_secs >= 1,
            "--bdi-interval-secs must be at least 1"
        );
        settings.bdi_interval_secs = self.bdi_interval_secs;
        anyhow::ensure!(
            self.webhook_retry_base_ms >= 1 && self.webhook_max_attempts >= 1,
            "--webhook-retry-base-ms and --webhook-max-attempts must be at least 1"
        );
        settings.retention = crate::retention::RetentionConfig {
            max_age: (self.event_retention_hours > 0.0)
                .then(|| Duration::from_secs_f64(self.event_retention_hours * 3600.0)),
            every_secs: self.retention_interval_secs,
        };
        settings.webhook_retry = crate::webhooks::RetryPolicy {
            base: Duration::from_millis(self.webhook_retry_base_ms),
            max_attempts: self.webhook_max_attempts,
            ..crate::webhooks::RetryPolicy::default()
        };
        anyhow::ensure!(
            self.rate_limit_per_sec.is_finite() && self.rate_limit_per_sec >= 0.0,
            "--rate-limit-per-sec must be 0 (no limit) or more"
        );
        settings.rate_limit = crate::api::rate_limit::RateLimit {
            per_sec: self.rate_limit_per_sec,
            burst: self.rate_limit_burst,
        };
        settings.metrics_listen = self.metrics_listen;
        settings.metrics_agent_labels = self.metrics_agent_labels;
        settings.egress.agent_networks = crate::egress::parse_networks(&self.agent_networks)
            .map_err(|e| anyhow::anyhow!("--agent-networks: {e}"))?;
        settings.egress.webhook_networks = crate::egress::parse_networks(&self.webhook_networks)
            .map_err(|e| anyhow::anyhow!("--webhook-networks: {e}"))?;
        Ok(())
    }
}

/// Engine settings of `serve` (retries, scoring, verification).
#[derive(Debug, Clone, clap::Args)]
pub struct EngineArgs {
    /// First retry delay after a failure, in milliseconds (doubles per failure, with jitter).
    #[arg(long, env = "COORDINATOR_RETRY_BASE_MS", default_value_t = 1000)]
    pub retry_base_ms: u64,
    /// Longest retry delay, in milliseconds.
    #[arg(long, env = "COORDINATOR_RETRY_CAP_MS", default_value_t = 60_000)]
    pub retry_cap_ms: u64,
    /// Continuations a task may ask for before `continue` counts as a failure.
    #[arg(long, env = "COORDINATOR_MAX_CONTINUATIONS", default_value_t = 10)]
    pub max_continuations: i32,
    /// Tasks claimed per transaction.
    #[arg(long, env = "COORDINATOR_BATCH_SIZE", default_value_t = 32)]
    pub batch_size: usize,
    /// Scorer weights, e.g. `fit=0.35,trust=0.2,capacity=0.15,cost=0.1,past=0.2` (unnamed parts keep their default).
    #[arg(long, env = "COORDINATOR_SCORE_WEIGHTS", default_value = "")]
    pub score_weights: String,
    /// Agents with this skill verify `must_pass` criteria that have no deterministic check.
    #[arg(
        long,
        env = "COORDINATOR_VERIFIER_SKILL",
        default_value = "verification"
    )]
    pub verifier_skill: String,
    /// Worker URL that runs contractors: mission-scoped agents hired for tasks no roster agent can take.
    #[arg(long, env = "COORDINATOR_CONTRACTOR_URL")]
    pub contractor_url: Option<String>,
    /// Also hire a contractor when the best roster agent's score is below this (0–1).
    #[arg(long, env = "COORDINATOR_CONTRACTOR_THRESHOLD", default_value_t = 0.0)]
    pub contractor_threshold: f64,
    /// Concurrency cap of each contractor.
    #[arg(long, env = "COORDINATOR_CONTRACTOR_CONCURRENCY", default_value_t = 4)]
    pub contractor_concurrency: i32,
    /// Dispatches in a row that may fail to reach an agent's endpoint
    /// (refused, timed out) before the agent is marked `unreachable` and gets
    /// no work until it heartbeats or an operator sets its status.
    #[arg(long, env = "COORDINATOR_UNREACHABLE_AFTER", default_value_t = 3)]
    pub unreachable_after: i32,
    /// Seconds between probes of an unreachable agent's endpoint (a GET of
    /// its base URL; any HTTP answer brings the agent back).
    #[arg(long, env = "COORDINATOR_PROBE_INTERVAL_SECS", default_value_t = 30)]
    pub probe_interval_secs: u64,
    /// Seconds a tool-approval request waits for a person before it times out
    /// to its policy's default outcome (tasks may set their own).
    #[arg(long, env = "COORDINATOR_TOOL_APPROVAL_TIMEOUT_SECS", default_value_t = crate::coordination::tool_policy::DEFAULT_TIMEOUT_SECS)]
    pub tool_approval_timeout_secs: u64,
    /// On SIGTERM/SIGINT: seconds in-flight dispatches and HTTP requests get
    /// to finish before they are cut off and their leases released.
    #[arg(long, env = "COORDINATOR_SHUTDOWN_GRACE_SECS", default_value_t = 10)]
    pub shutdown_grace_secs: u64,
    /// Most worker reports applied in one transaction (group commit: reports
    /// that arrive together share one commit); 1 applies each alone.
    #[arg(long, env = "COORDINATOR_REPORT_BATCH", default_value_t = 32)]
    pub report_batch: usize,
    /// Milliseconds a batch of reports that already has more than one waits
    /// for more before its commit (a lone report never waits); 0: never.
    #[arg(long, env = "COORDINATOR_REPORT_LINGER_MS", default_value_t = 3.0)]
    pub report_linger_ms: f64,
}

impl EngineArgs {
    /// Applies these settings to `cfg`.
    pub fn apply(&self, cfg: &mut crate::engine::EngineConfig) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.retry_base_ms >= 1 && self.retry_base_ms <= self.retry_cap_ms,
            "--retry-base-ms must be at least 1 and at most --retry-cap-ms"
        );
        anyhow::ensure!(
            (1..=1000).contains(&self.batch_size),
            "--batch-size must be between 1 and 1000"
        );
        anyhow::ensure!(
            !self.verifier_skill.trim().is_empty(),
            "--verifier-skill must not be empty"
        );
        anyhow::ensure!(
            self.shutdown_grace_secs <= 3600,
            "--shutdown-grace-secs must be at most 3600"
        );
        cfg.shutdown_grace = Duration::from_secs(self.shutdown_grace_secs);
        cfg.retry_base = Duration::from_millis(self.retry_base_ms);
        cfg.retry_cap = Duration::from_millis(self.retry_cap_ms);
        cfg.max_continuations = self.max_continuations.max(0);
        cfg.batch_size = self.batch_size;
        cfg.weights = crate::assignment::ScoreWeights::parse(&self.score_weights)
            .map_err(|e| anyhow::anyhow!("--score-weights: {e}"))?;
        cfg.verifier_skill = self.verifier_skill.trim().to_owned();
        anyhow::ensure!(
            (0.0..=1.0).contains(&self.contractor_threshold),
            "--contractor-threshold must be between 0 and 1"
        );
        anyhow::ensure!(
            (1..=10_000).contains(&self.contractor_concurrency),
            "--contractor-concurrency must be between 1 and 10000"
        );
        if let Some(url) = &self.contractor_url {
            let parsed = reqwest::Url::parse(url)
                .map_err(|e| anyhow::anyhow!("--contractor-url is not a URL: {e}"))?;
            anyhow::ensure!(
                matches!(parsed.scheme(), "http" | "https"),
                "--contractor-url must be an http(s) URL"
            );
            cfg.contractor_url = Some(url.trim_end_matches('/').to_owned());
        }
        cfg.contractor_threshold = self.contractor_threshold;
        cfg.contractor_concurrency = self.contractor_concurrency;
        anyhow::ensure!(
            (1..=1000).contains(&self.unreachable_after),
            "--unreachable-after must be between 1 and 1000"
        );
        cfg.unreachable_after = self.unreachable_after;
        anyhow::ensure!(
            (1..=86_400).contains(&self.probe_interval_secs),
            "--probe-interval-secs must be between 1 and 86400"
        );
        cfg.probe_interval = std::time::Duration::from_secs(self.probe_interval_secs);
        anyhow::ensure!(
            (1..=7 * 24 * 3600).contains(&self.tool_approval_timeout_secs),
            "--tool-approval-timeout-secs must be between 1 and 604800"
        );
        cfg.tool_approval_timeout = Duration::from_secs(self.tool_approval_timeout_secs);
        anyhow::ensure!(
            (1..=1000).contains(&self.report_batch),
            "--report-batch must be between 1 and 1000"
        );
        cfg.report_batch = self.report_batch;
        anyhow::ensure!(
            (0.0..=100.0).contains(&self.report_linger_ms),
            "--report-linger-ms must be between 0 and 100"
        );
        cfg.report_linger = Duration::from_secs_f64(self.report_linger_ms / 1000.0);
        Ok(())
    }
}

/// Planning settings of `serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct PlanningArgs {
    /// Minimum similarity (0–1) for a method to be chosen for a goal.
    #[arg(long, env = "COORDINATOR_MATCH_THRESHOLD", default_value_t = crate::planning::DEFAULT_MATCH_THRESHOLD)]
    pub match_threshold: f64,
    /// Minimum similarity (0–1) for a plan-library case to be reused, or, if it failed, avoided.
    #[arg(long, env = "COORDINATOR_CASE_THRESHOLD", default_value_t = crate::planning::cases::DEFAULT_CASE_THRESHOLD)]
    pub case_threshold: f64,
    /// Fewest tasks a plan may have.
    #[arg(long, env = "COORDINATOR_MIN_TASKS", default_value_t = 3)]
    pub min_tasks: usize,
    /// Most tasks a plan may have.
    #[arg(long, env = "COORDINATOR_MAX_TASKS", default_value_t = 20)]
    pub max_tasks: usize,
    /// OpenAI-compatible API root (e.g. http://127.0.0.1:8000/v1) for planning goals no method matches.
    #[arg(long, env = "COORDINATOR_LLM_BASE_URL")]
    pub llm_base_url: Option<String>,
    /// Model name for the LLM planner.
    #[arg(long, env = "COORDINATOR_LLM_MODEL", default_value = "gpt-4o-mini")]
    pub llm_model: String,
    /// API key for the LLM planner (sent as a bearer token).
    #[arg(long, env = "COORDINATOR_LLM_API_KEY", hide_env_values = true)]
    pub llm_api_key: Option<String>,
    /// `auto` (json_schema, falling back to json_object), `json_schema` or `json_object`.
    #[arg(long, env = "COORDINATOR_LLM_RESPONSE_FORMAT", default_value = "auto")]
    pub llm_response_format: crate::planning::llm::ResponseFormat,
    /// Timeout of one LLM call, in seconds.
    #[arg(long, env = "COORDINATOR_LLM_TIMEOUT_SECS", default_value_t = 60)]
    pub llm_timeout_secs: u64,
    /// Times an invalid plan is sent back to the model for repair.
    #[arg(long, env = "COORDINATOR_LLM_MAX_REPAIRS", default_value_t = 2)]
    pub llm_max_repairs: u32,
    /// Most tokens per model answer (lowered to what the model's context leaves).
    #[arg(long, env = "COORDINATOR_LLM_MAX_TOKENS", default_value_t = 4096)]
    pub llm_max_tokens: u32,
    /// The model's context size in tokens; without it the server is asked
    /// (llama.cpp's /props, vLLM's /v1/models) or its first context-length error says.
    #[arg(long, env = "COORDINATOR_LLM_CONTEXT_TOKENS")]
    pub llm_context_tokens: Option<u32>,
}

impl PlanningArgs {
    /// Applies these settings to `cfg`, building the LLM planner if configured.
    pub fn apply(&self, cfg: &mut crate::missions::PlanningConfig) -> anyhow::Result<()> {
        anyhow::ensure!(
            (0.0..=1.0).contains(&self.match_threshold),
            "--match-threshold must be between 0 and 1"
        );
        anyhow::ensure!(
            (0.0..=1.0).contains(&self.case_threshold),
            "--case-threshold must be between 0 and 1"
        );
        anyhow::ensure!(
            1 <= self.min_tasks && self.min_tasks <= self.max_tasks,
            "--min-tasks must be at least 1 and at most --max-tasks"
        );
        cfg.match_threshold = self.match_threshold;
        cfg.case_threshold = self.case_threshold;
        cfg.rules.min_tasks = self.min_tasks;
        cfg.rules.max_tasks = self.max_tasks;
        if let Some(base_url) = &self.llm_base_url {
            let mut llm =
                crate::planning::llm::LlmConfig::new(base_url.clone(), self.llm_model.clone());
            llm.api_key = self.llm_api_key.clone();
            llm.response_format = self.llm_response_format;
            llm.timeout = Duration::from_secs(self.llm_timeout_secs.max(1));
            llm.max_repairs = self.llm_max_repairs;
            llm.max_tokens = Some(self.llm_max_tokens.max(64));
            anyhow::ensure!(
                self.llm_context_tokens.is_none_or(|n| n >= 512),
                "--llm-context-tokens must be at least 512"
            );
            llm.context_tokens = self.llm_context_tokens;
            let planner = crate::planning::llm::LlmPlanner::new(llm)
                .map_err(|e| anyhow::anyhow!("LLM planner: {e}"))?;
            cfg.llm = Some(std::sync::Arc::new(planner));
        }
        Ok(())
    }
}

/// `coordinator worker`: `--simulate`, or `--llm-url URL --model NAME`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["simulate", "llm_url"])))]
pub struct WorkerArgs {
    /// Simulate work (deterministic latency and faults; see the simulation flags).
    #[arg(long, conflicts_with = "llm_url")]
    pub simulate: bool,
    /// Address to listen on.
    #[arg(long, env = "WORKER_LISTEN", default_value = "127.0.0.1:8091")]
    pub listen: SocketAddr,
    /// Simulation settings.
    #[command(flatten)]
    pub sim: SimulationConfig,
    /// LLM settings: each task becomes a bounded agent loop of chat-completions calls.
    #[command(flatten)]
    pub llm: Option<crate::worker::llm::LlmWorkerConfig>,
}

/// `coordinator token …`.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create an API token (printed once): through the API (`POST /v1/tokens`,
    /// admin token) when `--url` or `--token` is given (or COORDINATOR_URL /
    /// COORDINATOR_TOKEN is set), otherwise directly in the database.
    Create(TokenCreateArgs),
    /// Create an API token (printed once) directly in the database, whatever
    /// COORDINATOR_URL / COORDINATOR_TOKEN say: for bootstrapping.
    Bootstrap(TokenArgs),
    /// List the workspace's tokens through the API (`GET /v1/tokens`, admin
    /// token): id, role, name, agent, created, last used, expiry; never a secret.
    List(TokenListArgs),
    /// Revoke a token through the API (`DELETE /v1/tokens/{id}`, admin
    /// token): it gets 401 at once and its open event streams end within seconds.
    Revoke(TokenRevokeArgs),
}

/// `coordinator token list`.
#[derive(Debug, clap::Args)]
pub struct TokenListArgs {
    /// Also list revoked tokens.
    #[arg(long)]
    pub include_revoked: bool,
    /// The service to ask.
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `coordinator token revoke`.
#[derive(Debug, clap::Args)]
pub struct TokenRevokeArgs {
    /// Id of the token to revoke (`coordinator token list` shows it).
    pub id: String,
    /// The service to ask.
    #[command(flatten)]
    pub client: ClientArgs,
}

/// Parses `--expires-in`: a number of seconds, or a number with a unit
/// (`s`, `m`, `h`, `d`), e.g. `90d`.
fn parse_expires_in(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a duration like 3600, 90m, 12h or 30d"))?;
    let scale = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("'{text}': the unit must be s, m, h or d")),
    };
    // The API's bound too: at most ten years (10 × 366 days).
    n.checked_mul(scale)
        .filter(|s| (1..=316_224_000).contains(s))
        .ok_or_else(|| format!("'{text}' must be a positive duration of at most ten years"))
}

/// What a new token is.
#[derive(Debug, clap::Args)]
pub struct TokenArgs {
    /// admin, operator, stakeholder, agent or worker.
    #[arg(long)]
    pub role: Role,
    /// A label for the token.
    #[arg(long)]
    pub name: Option<String>,
    /// For role agent: the agent it acts as.
    #[arg(long)]
    pub agent_id: Option<String>,
    /// The token stops working after this long: seconds, or with a unit
    /// (`90m`, `12h`, `30d`; at most ten years) [default: never].
    #[arg(long, value_parser = parse_expires_in, value_name = "DURATION")]
    pub expires_in: Option<u64>,
    /// Workspace name, created if missing (database form only; the API uses
    /// the admin token's workspace) [default: default].
    #[arg(long)]
    pub workspace: Option<String>,
    /// Database (database form only).
    #[command(flatten)]
    pub db: DatabaseArgs,
}

/// `coordinator token create`.
#[derive(Debug, clap::Args)]
pub struct TokenCreateArgs {
    /// The token.
    #[command(flatten)]
    pub token: TokenArgs,
    /// The service to ask (API form).
    #[command(flatten)]
    pub client: ClientArgs,
}

/// The subcommands whose arguments are those of `serve`, so a config file applies to them.
const SERVE_LIKE: [&[&str]; 2] = [&["serve"], &["config", "print"]];

/// The log format chosen at start (read by [`say`]).
static LOG_FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// Parses the command line, runs it, and maps errors to exit code 1.
pub async fn main() -> ExitCode {
    let (cli, printed) = match parse(std::env::args_os().collect()) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    if let Some(text) = printed {
        print!("{text}");
        return ExitCode::SUCCESS;
    }
    let default = match cli.command {
        // The demo and the benchmark print their own output; logs would drown it.
        Command::Demo(_) | Command::Bench(_) | Command::Audit(_) => "warn",
        // Refused and retried worker callbacks are the point of a chaos run.
        // (The soak's per-window figures are one slow query by design.)
        Command::Chaos(_) | Command::Soak(_) => "warn,coordinator_workers=error,sqlx::query=error",
        // Client commands print their own output; a failure is one error line.
        Command::Mission(_)
        | Command::Agent(_)
        | Command::Workflow(_)
        | Command::Operator(_)
        | Command::Workspace(_) => "warn",
        _ => "info",
    };
    let _ = LOG_FORMAT.set(cli.log_format);
    let telemetry = crate::telemetry::init(cli.log.as_deref().unwrap_or(default), cli.log_format);
    let outcome = run(cli.command).await;
    // Spans of the last moments (shutdown included) reach the collector.
    telemetry.shutdown().await;
    match outcome {
        Ok(code) => code,
        Err(e) => {
            if cli.log_format == LogFormat::Json {
                tracing::error!("{e:#}");
            } else {
                eprintln!("error: {e:#}");
            }
            ExitCode::FAILURE
        }
    }
}

/// Parses `args`, with the values of `--config FILE` as defaults of the
/// `serve` flags; also returns the text of `config print` if that was asked.
/// A bad file is exit code 2, like a bad flag.
fn parse(args: Vec<OsString>) -> Result<(Cli, Option<String>), ExitCode> {
    let declared = Cli::command();
    let mut cmd = declared.clone();
    // A first pass finds the subcommand and `--config` (flag or env); the
    // file cannot change what that pass sees, since it only sets defaults.
    let first = cmd
        .clone()
        .try_get_matches_from(&args)
        .unwrap_or_else(|e| e.exit());
    let serve_like = SERVE_LIKE.into_iter().find_map(|path| {
        let mut m = &first;
        for name in path {
            m = m.subcommand_matches(name)?;
        }
        Some((path, m.get_one::<PathBuf>("config").cloned()))
    });
    let mut file = None;
    if let Some((path, Some(config))) = &serve_like {
        let sub = subcommand(&cmd, path);
        match crate::config::ConfigFile::load(config, sub) {
            Ok(f) => {
                cmd = f.apply(cmd, path);
                file = Some(f);
            }
            Err(message) => {
                eprintln!("error: {message}");
                return Err(ExitCode::from(crate::config::EXIT_BAD_CONFIG));
            }
        }
    }
    let matches = cmd
        .clone()
        .try_get_matches_from(&args)
        .unwrap_or_else(|e| e.exit());
    let printed = match serve_like {
        Some((path @ ["config", "print"], _)) => {
            let sub_matches = path
                .iter()
                .try_fold(&matches, |m, name| m.subcommand_matches(name));
            // The declared command keeps the flags in `--help` order (changing a
            // default moves an argument to the end).
            sub_matches
                .map(|m| crate::config::render(subcommand(&declared, path), m, file.as_ref()))
        }
        _ => None,
    };
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut cmd).exit());
    Ok((cli, printed))
}

/// The subcommand of `cmd` at `path` (`cmd` itself for an empty path).
fn subcommand<'a>(cmd: &'a clap::Command, path: &[&str]) -> &'a clap::Command {
    path.iter()
        .try_fold(cmd, |c, name| c.find_subcommand(name))
        .unwrap_or(cmd)
}

/// Reports a step of a command: a log event with `--log-format json` (so
/// stderr stays one JSON object per line), a plain line otherwise.
fn say(message: &str) {
    if LOG_FORMAT.get() == Some(&LogFormat::Json) {
        tracing::info!("{message}");
    } else {
        eprintln!("{message}");
    }
}

async fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Serve(args) => serve(*args).await.map(|()| ExitCode::SUCCESS),
        Command::Migrate { db } => {
            let db = Database::open(&db).await?;
            say("migrations applied");
            db.close().await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Worker(args) => {
            if let Some(llm) = args.llm.clone().filter(|_| !args.simulate) {
                let worker = crate::worker::llm::LlmWorker::spawn(args.listen, llm.clone()).await?;
                say(&format!(
                    "LLM worker listening on {} (model {} at {})",
                    worker.url(),
                    llm.model,
                    llm.llm_url
                ));
                tokio::select! {
                    r = worker.wait() => r?,
                    () = shutdown_signal() => {}
                }
                return Ok(ExitCode::SUCCESS);
            }
            anyhow::ensure!(
                args.simulate,
                "choose a worker mode: --simulate, or --llm-url URL --model NAME"
            );
            let worker = SimulatedWorker::spawn(args.listen, args.sim.clone()).await?;
            say(&format!(
                "simulated worker listening on {} (latency {} ms, failure rate {})",
                worker.url(),
                args.sim.latency_ms,
                args.sim.failure_rate
            ));
            tokio::select! {
                r = worker.wait() => r?,
                () = shutdown_signal() => {}
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo(args) => demo::run(args).await,
        Command::Bench(args) => crate::bench::run(args).await.map(|()| ExitCode::SUCCESS),
        Command::Chaos(args) => crate::chaos::run(args).await,
        Command::Soak(args) => crate::soak::run(args).await,
        Command::Audit(args) => audit(args).await,
        Command::Mission(args) => Ok(cli_client::mission(args).await),
        Command::Agent(args) => Ok(cli_client::agent(args).await),
        Command::Workflow(args) => Ok(cli_client::workflow(args).await),
        Command::Operator(command) => Ok(cli_client::operator(command).await),
        Command::Workspace(command) => Ok(cli_client::workspace(command).await),
        Command::Token { command } => token(command).await,
        // Printed by `main` before logging starts: it needs the parsed sources.
        Command::Config { .. } => Ok(ExitCode::SUCCESS),
    }
}

/// Audits the database read-only: summary, then the `key=value` line; exit
/// 1 when an invariant is violated (scripts rely on this contract).
async fn audit(args: AuditArgs) -> anyhow::Result<ExitCode> {
    let (url, embedded) = match &args.db.database_url {
        Some(url) => (url.clone(), None),
        None => {
            let pg = crate::local_postgres::LocalPostgres::start(&args.db.data_dir).await?;
            (pg.url().to_owned(), Some(pg))
        }
    };
    let pool = crate::db::connect(&url, 2).await?;
    let report = crate::audit::audit(&pool).await;
    pool.close().await;
    if let Some(pg) = embedded {
        pg.stop().await?;
    }
    let report = report?;
    println!("{}", report.summary());
    println!("{}", report.figures());
    Ok(if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    // Before the database starts, so a weak admin secret fails fast.
    auth::check_bootstrap(
        args.bootstrap_token
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty()),
    )?;
    let db = Database::open(&args.db).await?;
    match auth::ensure_bootstrap(&db.pool, args.bootstrap_token.as_deref()).await? {
        Bootstrap::Generated(token) => {
            say(&format!(
                "\nFirst start: created the admin token of workspace '{}'. It is shown only once:\n\n    {token}\n\nUse it as 'Authorization: Bearer <token>'.\n",
                auth::DEFAULT_WORKSPACE
            ));
        }
        Bootstrap::FromEnvironment => {
            say("First start: COORDINATOR_BOOTSTRAP_TOKEN is now the admin token");
        }
        Bootstrap::AlreadyDone => {}
    }
    let mut settings = Settings::new(args.listen);
    settings.public_url = args.public_url;
    settings.engine.tick_interval = Duration::from_millis(args.tick_ms.max(10));
    settings.engine.lease = Duration::from_secs(args.lease_secs.max(1));
    settings.planning.max_attempts = args.max_attempts.max(1);
    args.engine.apply(&mut settings.engine)?;
    args.planning.apply(&mut settings.planning)?;
    args.surfaces.apply(&mut settings)?;
    args.connections.apply(&mut settings)?;
    if let Some(url) = &args.planning.llm_base_url {
        say(&format!(
            "LLM planner: {url} (model {})",
            args.planning.llm_model
        ));
    }
    settings.run_engine = !args.no_engine;
    let app = Application::build(db.pool.clone(), settings).await?;
    say(&format!("coordinator listening on {}", app.url()));
    app.run_until_stopped(shutdown_signal()).await?;
    db.close().await?;
    say("coordinator stopped");
    Ok(())
}

async fn token(command: TokenCommand) -> anyhow::Result<ExitCode> {
    let args = match command {
        TokenCommand::Create(TokenCreateArgs { token, client }) if client.is_set() => {
            anyhow::ensure!(
                token.workspace.is_none(),
                "--workspace applies to the database form: through the API the token \
                 belongs to the admin token's workspace (use `coordinator token bootstrap`)"
            );
            return Ok(cli_client::create_token(
                &client,
                &token.role.to_string(),
                token.name,
                token.agent_id,
                token.expires_in,
            )
            .await);
        }
        TokenCommand::List(TokenListArgs {
            include_revoked,
            client,
        }) => return Ok(cli_client::list_tokens(&client, include_revoked).await),
        TokenCommand::Revoke(TokenRevokeArgs { id, client }) => {
            return Ok(cli_client::revoke_token(&client, &id).await);
        }
        TokenCommand::Create(TokenCreateArgs { token, .. }) | TokenCommand::Bootstrap(token) => {
            token
        }
    };
    let TokenArgs {
        role,
        name,
        agent_id,
        expires_in,
        workspace,
        db,
    } = args;
    let workspace = workspace.unwrap_or_else(|| auth::DEFAULT_WORKSPACE.to_owned());
    anyhow::ensure!(
        (role == Role::Agent) == agent_id.is_some(),
        "--agent-id is required for role agent, and only for it"
    );
    let name = name.unwrap_or_else(|| format!("{role} token"));
    anyhow::ensure!(
        !name.trim().is_empty() && name.chars().count() <= 128,
        "--name must be 1 to 128 characters"
    );
    let used = token_database(&db)?;
    let db = Database::open(&db).await?;
    let mut conn = db.pool.acquire().await?;
    let ws = auth::workspace_by_name(&mut conn, &workspace).await?;
    let secret = auth::generate_token();
    let expires_at =
        expires_in.map(|secs| time::OffsetDateTime::now_utc() + Duration::from_secs(secs));
    auth::insert_token_until(
        &mut conn,
        ws,
        role,
        &name,
        agent_id.as_deref(),
        &secret,
        expires_at,
    )
    .await?;
    drop(conn);
    db.close().await?;
    println!("{secret}");
    eprintln!(
        "created a token with role {role} in workspace '{workspace}' of {used} (shown only once)"
    );
    Ok(ExitCode::SUCCESS)
}

/// The database a token command writes into, in words; never a new one: a
/// token in a database no service reads is refused with 401 (use `--url`).
fn token_database(db: &DatabaseArgs) -> anyhow::Result<String> {
    if let Some(url) = &db.database_url {
        // No password in the output: keep what follows the credentials.
        let shown = url.rsplit_once('@').map_or(url.as_str(), |(_, host)| host);
        return Ok(format!("the database at {shown}"));
    }
    anyhow::ensure!(
        crate::local_postgres::LocalPostgres::exists(&db.data_dir),
        "no database in {}: token commands never create one. Ask the running service \
         (--url URL --token ADMIN_TOKEN), or name its database (--database-url URL, \
         DATABASE_URL, or --data-dir DIR of the private one `serve` started)",
        db.data_dir.display()
    );
    Ok(format!("the private database in {}", db.data_dir.display()))
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

/// The `bench` subcommand as the command line parses it.
#[cfg(test)]
mod bench_command_tests;

#[cfg(test)]
mod worker_command_tests;
