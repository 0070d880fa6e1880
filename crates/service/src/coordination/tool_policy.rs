//! Tool-use policies and the approvals a worker asks for before a guarded
//! tool call.
//!
//! A task declares its policy under `inputs.tool_policy` (see
//! [`ToolPolicy`]); the worker receives it in the dispatch payload. Before a
//! guarded call the worker asks `POST /v1/attempts/{id}/tool-approvals`, and
//! [`judge`] decides, in this order:
//!
//! 1. a tool outside `allowed_tools` is **denied**;
//! 2. a call that would take the attempt over a budget (seconds since
//!    dispatch, tokens, files changed, counted over the attempt's granted and
//!    pending requests) is **denied**: budgets are hard limits, like the
//!    governance thresholds, and no person can lift them for one call;
//! 3. a sensitive call (a path matching a protected glob, or a diff over
//!    `max_diff_lines`) **needs approval**, even when the policy auto-approves;
//! 4. otherwise the call is **auto-approved**, unless `auto_approve` is false.
//!
//! A request that needs approval is `pending` until a human or stakeholder
//! resolves it `approved` or `denied` (with a rationale), or until its
//! timeout, when it becomes `timed_out` and the policy's `on_timeout`
//! outcome (default: denied) applies. Timeouts are applied by the engine's
//! sweep within one reconcile period, and sooner when anyone reads or
//! resolves the request; both go through [`expire_overdue`], whose update is
//! guarded by `status = 'pending'` (rows locked with SKIP LOCKED), so a
//! request times out, with its one event, exactly once.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    auth::{Principal, Role, hash_token},
    domain::{IllegalTransition, text_enum},
    error::ApiError,
    store::{
        events::{self, NewEvent},
        missions,
        tool_approvals::{self as store, ApprovalRow, AttemptFacts},
    },
};

/// Event kinds written here.
pub mod kind {
    /// A worker asked to call a tool (payload: tool, verdict, reasons, status).
    pub const APPROVAL_REQUESTED: &str = "tool.approval_requested";
    /// A request was resolved: by the policy at once, by a person, or by its timeout.
    pub const APPROVAL_RESOLVED: &str = "tool.approval_resolved";
    /// A worker reports a tool call it made.
    pub const CALLED: &str = "tool.called";
}

/// Default seconds a request waits for a person (`--tool-approval-timeout-secs`).
pub const DEFAULT_TIMEOUT_SECS: u64 = 300;

/// A task's tool-use policy, declared as `inputs.tool_policy`. Every field
/// is optional: an empty policy allows every tool and auto-approves it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolPolicy {
    /// The tools the task may call (`null`: any tool; `[]`: none).
    #[serde(default)]
    pub allowed_tools: Option<Vec<String>>,
    /// True (default): allowed, in-budget, non-sensitive calls need no person.
    #[serde(default = "yes")]
    pub auto_approve: bool,
    /// Cumulative limits per attempt.
    #[serde(default)]
    pub budget: ToolBudget,
    /// Calls that always escalate to a person.
    #[serde(default)]
    pub sensitive: Sensitive,
    /// Seconds a request waits for a person (default: the service's setting).
    #[serde(default)]
    pub approval_timeout_secs: Option<u64>,
    /// What a timed-out request means: `denied` (default) or `approved`.
    #[serde(default)]
    pub on_timeout: Option<Outcome>,
}

impl Default for ToolPolicy {
    /// What a task without a policy gets: any tool, auto-approved.
    fn default() -> Self {
        ToolPolicy {
            allowed_tools: None,
            auto_approve: true,
            budget: ToolBudget::default(),
            sensitive: Sensitive::default(),
            approval_timeout_secs: None,
            on_timeout: None,
        }
    }
}

fn yes() -> bool {
    true
}

/// Budget limits of one attempt; `null` sets no limit.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolBudget {
    /// Seconds since dispatch after which no tool call is allowed.
    #[serde(default)]
    pub max_secs: Option<i64>,
    /// Tokens the attempt's tool calls may use in total.
    #[serde(default)]
    pub max_tokens: Option<i64>,
    /// Files the attempt's tool calls may change in total.
    #[serde(default)]
    pub max_files_changed: Option<i64>,
}

/// What makes a call sensitive.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Sensitive {
    /// Protected path globs (`*` within a segment, `**` across segments, `?` one character).
    #[serde(default)]
    pub paths: Vec<String>,
    /// A diff larger than this many lines escalates.
    #[serde(default)]
    pub max_diff_lines: Option<i64>,
}

impl ToolPolicy {
    /// The policy of a task, from its inputs: `Ok(None)` when it declares
    /// none, `Err` with the problem when `inputs.tool_policy` is malformed.
    pub fn of_inputs(inputs: &Value) -> Result<Option<ToolPolicy>, String> {
        match inputs.get("tool_policy") {
            None | Some(Value::Null) => Ok(None),
            Some(v) => serde_json::from_value(v.clone())
                .map(Some)
                .map_err(|e| format!("inputs.tool_policy is invalid: {e}")),
        }
    }
}

/// A tool call a worker wants to make.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCall {
    /// Tool name.
    pub tool: String,
    /// Paths it would touch.
    pub paths: Vec<String>,
    /// Lines of diff it would write.
    pub diff_lines: i64,
    /// Tokens it would use.
    pub tokens: i64,
    /// Files it would change.
    pub files_changed: i64,
}

/// What the attempt has already used (granted and pending requests).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// Seconds since dispatch.
    pub elapsed_secs: i64,
    /// Tokens.
    pub tokens: i64,
    /// Files changed.
    pub files_changed: i64,
}

/// The policy's verdict on a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Go ahead.
    AutoApproved,
    /// A person must approve it first; the reasons say why.
    NeedsApproval(Vec<String>),
    /// Refused; the reason says why.
    Denied(String),
}

impl Verdict {
    /// `auto_approved`, `needs_approval` or `denied`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::AutoApproved => "auto_approved",
            Verdict::NeedsApproval(_) => "needs_approval",
            Verdict::Denied(_) => "denied",
        }
    }

    /// The reasons, for the record.
    pub fn reasons(&self) -> Vec<String> {
        match self {
            Verdict::AutoApproved => vec!["within the tool policy".into()],
            Verdict::NeedsApproval(r) => r.clone(),
            Verdict::Denied(r) => vec![r.clone()],
        }
    }
}

/// Judges `call` against `policy`, given what the attempt has `used`.
pub fn judge(policy: &ToolPolicy, used: Usage, call: &ToolCall) -> Verdict {
    if let Some(allowed) = &policy.allowed_tools
        && !allowed.iter().any(|t| t.trim() == call.tool.trim())
    {
        return Verdict::Denied(format!(
            "tool '{}' is not in the allowed list [{}]",
            call.tool,
            allowed.join(", ")
        ));
    }
    let b = &policy.budget;
    if let Some(max) = b.max_secs
        && used.elapsed_secs > max
    {
        return Verdict::Denied(format!(
            "time budget exceeded: {} s since dispatch, limit {max} s",
            used.elapsed_secs
        ));
    }
    if let Some(max) = b.max_tokens
        && used.tokens + call.tokens > max
    {
        return Verdict::Denied(format!(
            "token budget exceeded: {} used + {} requested > {max}",
            used.tokens, call.tokens
        ));
    }
    if let Some(max) = b.max_files_changed
        && used.files_changed + call.files_changed > max
    {
        return Verdict::Denied(format!(
            "files-changed budget exceeded: {} changed + {} requested > {max}",
            used.files_changed, call.files_changed
        ));
    }
    let mut reasons = Vec::new();
    for path in &call.paths {
        if let Some(glob) = policy.sensitive.paths.iter().find(|g| glob_match(g, path)) {
            reasons.push(format!("path '{path}' matches protected pattern '{glob}'"));
        }
    }
    if let Some(max) = policy.sensitive.max_diff_lines
        && call.diff_lines > max
    {
        reasons.push(format!(
            "diff of {} lines is over the limit of {max}",
            call.diff_lines
        ));
    }
    if reasons.is_empty() && !policy.auto_approve {
        reasons.push("the policy requires approval for every tool call".into());
    }
    if reasons.is_empty() {
        Verdict::AutoApproved
    } else {
        Verdict::NeedsApproval(reasons)
    }
}

/// Whether `path` matches `glob`: `**` matches anything (including `/`),
/// `*` anything but `/`, `?` one character other than `/`.
pub fn glob_match(glob: &str, path: &str) -> bool {
    fn go(g: &[char], p: &[char]) -> bool {
        match g.first() {
            None => p.is_empty(),
            Some('*') if g.get(1) == Some(&'*') => {
                let rest = &g[2..];
                // `**/` also matches zero directories.
                if rest.first() == Some(&'/') && go(&rest[1..], p) {
                    return true;
                }
                (0..=p.len()).any(|i| go(rest, &p[i..]))
            }
            Some('*') => {
                let rest = &g[1..];
                for i in 0..=p.len() {
                    if go(rest, &p[i..]) {
                        return true;
                    }
                    if p.get(i) == Some(&'/') {
                        break;
                    }
                }
                false
            }
            Some('?') => p.first().is_some_and(|c| *c != '/') && go(&g[1..], &p[1..]),
            Some(c) => p.first() == Some(c) && go(&g[1..], &p[1..]),
        }
    }
    let g: Vec<char> = glob.chars().collect();
    let p: Vec<char> = path.trim_start_matches("./").chars().collect();
    go(&g, &p)
}

/// Where a tool-approval request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalStatus {
    /// Waiting for a person.
    Pending,
    /// The call may go ahead (final).
    Approved,
    /// The call must not be made (final).
    Denied,
    /// Nobody decided in time; the timeout outcome applies (final).
    TimedOut,
}

text_enum!(ApprovalStatus {
    Pending => "pending",
    Approved => "approved",
    Denied => "denied",
    TimedOut => "timed_out",
});

/// How a person resolves a request (also a policy's timeout outcome).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Go ahead.
    Approved,
    /// Do not.
    Denied,
}

text_enum!(Outcome {
    Approved => "approved",
    Denied => "denied",
});

impl Outcome {
    /// The status it leaves a request in.
    pub fn status(self) -> ApprovalStatus {
        match self {
            Outcome::Approved => ApprovalStatus::Approved,
            Outcome::Denied => ApprovalStatus::Denied,
        }
    }
}

/// What resolving does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Move to this status.
    Apply(ApprovalStatus),
    /// Already resolved this way: nothing changes (an idempotent retry).
    AlreadyDone,
}

impl ApprovalStatus {
    /// A person resolves: a pending request takes either outcome; the same
    /// outcome again changes nothing; anything else is refused.
    pub fn resolve(self, outcome: Outcome) -> Result<Resolution, IllegalTransition> {
        match self {
            ApprovalStatus::Pending => Ok(Resolution::Apply(outcome.status())),
            s if s == outcome.status() => Ok(Resolution::AlreadyDone),
            s => Err(IllegalTransition {
                entity: "tool_approval",
                from: s.as_str(),
                event: outcome.as_str(),
            }),
        }
    }

    /// The timeout passes: only a pending request times out.
    pub fn time_out(self) -> Result<ApprovalStatus, IllegalTransition> {
        match self {
            ApprovalStatus::Pending => Ok(ApprovalStatus::TimedOut),
            s => Err(IllegalTransition {
                entity: "tool_approval",
                from: s.as_str(),
                event: "time_out",
            }),
        }
    }

    /// Whether the worker may make the call: `None` while pending.
    pub fn granted(self, timeout_outcome: Outcome) -> Option<bool> {
        match self {
            ApprovalStatus::Pending => None,
            ApprovalStatus::Approved => Some(true),
            ApprovalStatus::Denied => Some(false),
            ApprovalStatus::TimedOut => Some(timeout_outcome == Outcome::Approved),
        }
    }
}

// ---------------------------------------------------------------- use cases

/// `POST /v1/attempts/{id}/tool-approvals` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRequest {
    /// Client-chosen id, for idempotent retries.
    #[serde(default)]
    pub id: Option<Uuid>,
    /// The tool to call (1–128 characters).
    pub tool: String,
    /// Its arguments (a JSON object, kept for the reviewer).
    #[serde(default)]
    pub arguments: Option<Value>,
    /// Paths the call would touch (at most 200).
    #[serde(default)]
    pub paths: Vec<String>,
    /// Lines of diff it would write.
    #[serde(default)]
    pub diff_lines: i64,
    /// Tokens it would use.
    #[serde(default)]
    pub tokens: i64,
    /// Files it would change.
    #[serde(default)]
    pub files_changed: i64,
}

/// `POST /v1/tool-approvals/{id}/resolve` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveApproval {
    /// `approved` or `denied`.
    pub outcome: Outcome,
    /// Why (1–4000 characters; logged).
    pub rationale: String,
}

/// `POST /v1/attempts/{id}/tool-calls` body: a call the worker made.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallReport {
    /// The tool called.
    pub tool: String,
    /// The approval it was made under, if one was asked.
    #[serde(default)]
    pub approval_id: Option<Uuid>,
    /// Whether it worked.
    #[serde(default = "yes")]
    pub ok: bool,
    /// A short note (at most 2000 characters).
    #[serde(default)]
    pub summary: Option<String>,
    /// How long it took.
    #[serde(default)]
    pub duration_ms: Option<i64>,
}

/// A tool-approval request as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ApprovalView {
    /// Id: poll and resolve by it.
    pub id: Uuid,
    /// Mission.
    pub mission_id: Uuid,
    /// Task.
    pub task_id: Uuid,
    /// Attempt that asked.
    pub attempt_id: Uuid,
    /// Its agent.
    pub agent_id: String,
    /// Tool.
    pub tool: String,
    /// Arguments.
    pub arguments: Value,
    /// Paths it would touch.
    pub paths: Vec<String>,
    /// Diff lines.
    pub diff_lines: i64,
    /// Tokens.
    pub tokens: i64,
    /// Files changed.
    pub files_changed: i64,
    /// The policy's verdict: `auto_approved`, `needs_approval` or `denied`.
    pub verdict: String,
    /// Why.
    pub reasons: Vec<String>,
    /// `pending`, `approved`, `denied` or `timed_out`.
    pub status: ApprovalStatus,
    /// Whether the call may be made (`null` while pending).
    pub granted: Option<bool>,
    /// What a timeout means.
    pub timeout_outcome: Outcome,
    /// When a pending request times out.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// `policy`, `timeout`, or who resolved it.
    pub resolver: Option<String>,
    /// Why.
    pub rationale: Option<String>,
    /// When resolved.
    #[serde(with = "time::serde::rfc3339::option")]
    pub resolved_at: Option<OffsetDateTime>,
    /// When asked.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl ApprovalRow {
    /// The parsed status.
    pub fn status(&self) -> ApprovalStatus {
        self.status.parse().unwrap_or(ApprovalStatus::Pending)
    }

    fn timeout_outcome(&self) -> Outcome {
        self.timeout_outcome.parse().unwrap_or(Outcome::Denied)
    }

    /// The API view.
    pub fn view(&self) -> ApprovalView {
        ApprovalView {
            id: self.id,
            mission_id: self.run_id,
            task_id: self.task_id,
            attempt_id: self.attempt_id,
            agent_id: self.agent_id.clone(),
            tool: self.tool.clone(),
            arguments: self.arguments.clone(),
            paths: self.paths.clone(),
            diff_lines: self.diff_lines,
            tokens: self.tokens,
            files_changed: self.files_changed,
            verdict: self.verdict.clone(),
            reasons: self.reasons.clone(),
            status: self.status(),
            granted: self.status().granted(self.timeout_outcome()),
            timeout_outcome: self.timeout_outcome(),
            expires_at: self.expires_at,
            resolver: self.resolver.clone(),
            rationale: self.rationale.clone(),
            resolved_at: self.resolved_at,
            created_at: self.created_at,
        }
    }
}

fn resolved_event<'a>(row: &ApprovalRow, actor: &'a str) -> NewEvent<'a> {
    NewEvent {
        run_id: row.run_id,
        task_id: Some(row.task_id),
        attempt_id: Some(row.attempt_id),
        kind: kind::APPROVAL_RESOLVED,
        actor,
        payload: json!({
            "approval_id": row.id, "agent_id": row.agent_id, "tool": row.tool,
            "approval_status": row.status, "granted": row.status().granted(row.timeout_outcome()),
            "resolver": row.resolver, "rationale": row.rationale,
        }),
    }
}

/// Loads the attempt and checks the bearer token is its own.
async fn authenticate(
    conn: &mut sqlx::PgConnection,
    attempt_id: Uuid,
    token: &str,
) -> Result<AttemptFacts, ApiError> {
    let facts = store::attempt_facts(conn, attempt_id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no attempt {attempt_id}")))?;
    if facts.token_hash != hash_token(token) {
        return Err(ApiError::Unauthorized(format!(
            "the token is not attempt {attempt_id}'s"
        )));
    }
    Ok(facts)
}

fn is_live(status: &str) -> bool {
    matches!(status, "dispatching" | "running")
}

fn stale(attempt_id: Uuid) -> ApiError {
    ApiError::conflict(
        "stale_attempt",
        format!("attempt {attempt_id} is no longer live; stop working on it"),
    )
}

fn check_text(field: &str, s: &str, max: usize) -> Result<(), ApiError> {
    if s.trim().is_empty() || s.chars().count() > max {
        return Err(ApiError::invalid(
            field,
            format!("{field} must be 1–{max} characters"),
        ));
    }
    Ok(())
}

fn validate(req: &ApprovalRequest) -> Result<(), ApiError> {
    check_text("tool", &req.tool, 128)?;
    if req.paths.len() > 200 {
        return Err(ApiError::invalid("paths", "at most 200 paths"));
    }
    for p in &req.paths {
        check_text("paths", p, 1024)?;
    }
    for (field, v) in [
        ("diff_lines", req.diff_lines),
        ("tokens", req.tokens),
        ("files_changed", req.files_changed),
    ] {
        if v < 0 {
            return Err(ApiError::invalid(
                field,
                format!("{field} must not be negative"),
            ));
        }
    }
    if req.arguments.as_ref().is_some_and(|a| !a.is_object()) {
        return Err(ApiError::invalid(
            "arguments",
            "arguments must be a JSON object",
        ));
    }
    Ok(())
}

/// A worker asks whether it may make a tool call. The task's policy judges
/// it at once; `created` is false for an idempotent retry of the same id.
pub async fn request_approval(
    pool: &PgPool,
    default_timeout_secs: u64,
    attempt_id: Uuid,
    token: &str,
    req: ApprovalRequest,
) -> Result<(ApprovalView, bool), ApiError> {
    validate(&req)?;
    let mut tx = pool.begin().await?;
    // The mission's lock serializes this attempt's requests, so two calls at
    // once cannot both fit in the last of a budget.
    missions::lock_for_attempt(&mut tx, attempt_id).await?;
    let facts = authenticate(&mut tx, attempt_id, token).await?;
    let id = req.id.unwrap_or_else(Uuid::new_v4);
    if let Some(existing) = store::get(&mut tx, Some(facts.workspace_id), id).await? {
        return if existing.attempt_id == attempt_id && existing.tool == req.tool.trim() {
            Ok((existing.view(), false))
        } else {
            Err(ApiError::conflict(
                "approval_id_reused",
                format!("tool approval {id} exists with other content"),
            ))
        };
    }
    if !is_live(&facts.status) {
        return Err(stale(attempt_id));
    }
    let call = ToolCall {
        tool: req.tool.trim().to_owned(),
        paths: req.paths.clone(),
        diff_lines: req.diff_lines,
        tokens: req.tokens,
        files_changed: req.files_changed,
    };
    let (policy, verdict) = match ToolPolicy::of_inputs(&facts.inputs) {
        Ok(p) => {
            let policy = p.unwrap_or_default();
            let (tokens, files) = store::attempt_usage(&mut tx, attempt_id).await?;
            let used = Usage {
                elapsed_secs: facts.elapsed_secs,
                tokens,
                files_changed: files,
            };
            let v = judge(&policy, used, &call);
            (policy, v)
        }
        // A malformed policy allows nothing rather than everything.
        Err(problem) => (ToolPolicy::default(), Verdict::Denied(problem)),
    };
    let status = match verdict {
        Verdict::AutoApproved => ApprovalStatus::Approved,
        Verdict::NeedsApproval(_) => ApprovalStatus::Pending,
        Verdict::Denied(_) => ApprovalStatus::Denied,
    };
    let reasons = verdict.reasons();
    let settled_by_policy = status != ApprovalStatus::Pending;
    let rationale = reasons.join("; ");
    let arguments = req.arguments.clone().unwrap_or(json!({}));
    let timeout_secs = policy
        .approval_timeout_secs
        .unwrap_or(default_timeout_secs)
        .clamp(1, 7 * 24 * 3600);
    let row = store::insert(
        &mut tx,
        store::NewApproval {
            id,
            attempt: &facts,
            attempt_id,
            tool: &call.tool,
            arguments: &arguments,
            paths: &call.paths,
            diff_lines: call.diff_lines,
            tokens: call.tokens,
            files_changed: call.files_changed,
            verdict: verdict.as_str(),
            reasons: &reasons,
            status: status.as_str(),
            timeout_outcome: policy.on_timeout.unwrap_or(Outcome::Denied).as_str(),
            timeout_secs: timeout_secs as f64,
            resolver: settled_by_policy.then_some("policy"),
            rationale: settled_by_policy.then_some(rationale.as_str()),
        },
    )
    .await?
    .ok_or_else(|| ApiError::conflict("concurrent_update", "the approval id was just taken"))?;
    let actor = format!("agent:{}", facts.agent_id);
    events::append(
        &mut tx,
        facts.workspace_id,
        NewEvent {
            run_id: facts.run_id,
            task_id: Some(facts.task_id),
            attempt_id: Some(attempt_id),
            kind: kind::APPROVAL_REQUESTED,
            actor: &actor,
            payload: json!({
                "approval_id": row.id, "agent_id": row.agent_id, "tool": row.tool,
                "paths": row.paths, "diff_lines": row.diff_lines, "tokens": row.tokens,
                "files_changed": row.files_changed, "verdict": row.verdict,
                "reasons": row.reasons, "approval_status": row.status,
            }),
        },
    )
    .await?;
    if settled_by_policy {
        events::append(&mut tx, facts.workspace_id, resolved_event(&row, "policy")).await?;
    }
    tx.commit().await?;
    Ok((row.view(), true))
}

/// Marks overdue pending requests of the workspace (or just `only`)
/// `timed_out`, each with its event; returns how many.
pub async fn expire_overdue(
    pool: &PgPool,
    workspace_id: Uuid,
    only: Option<Uuid>,
) -> Result<usize, ApiError> {
    let mut tx = pool.begin().await?;
    let rows = store::expire_overdue(&mut tx, workspace_id, only, 100).await?;
    for row in &rows {
        events::append(&mut tx, workspace_id, resolved_event(row, "timeout")).await?;
    }
    tx.commit().await?;
    Ok(rows.len())
}

/// The worker polls its request for the verdict (attempt-token auth).
pub async fn poll(
    pool: &PgPool,
    attempt_id: Uuid,
    token: &str,
    id: Uuid,
) -> Result<ApprovalView, ApiError> {
    let facts = {
        let mut conn = pool.acquire().await?;
        authenticate(&mut conn, attempt_id, token).await?
    };
    expire_overdue(pool, facts.workspace_id, Some(id)).await?;
    let mut conn = pool.acquire().await?;
    store::get(&mut conn, Some(facts.workspace_id), id)
        .await?
        .filter(|r| r.attempt_id == attempt_id)
        .map(|r| r.view())
        .ok_or_else(|| {
            ApiError::NotFound(format!("attempt {attempt_id} has no tool approval {id}"))
        })
}

/// A worker reports a tool call it made (for the timeline).
pub async fn report_call(
    pool: &PgPool,
    attempt_id: Uuid,
    token: &str,
    req: ToolCallReport,
) -> Result<(), ApiError> {
    check_text("tool", &req.tool, 128)?;
    if req
        .summary
        .as_ref()
        .is_some_and(|s| s.chars().count() > 2000)
    {
        return Err(ApiError::invalid(
            "summary",
            "summary must be at most 2000 characters",
        ));
    }
    if req.duration_ms.is_some_and(|d| d < 0) {
        return Err(ApiError::invalid(
            "duration_ms",
            "duration_ms must not be negative",
        ));
    }
    let mut tx = pool.begin().await?;
    missions::lock_for_attempt(&mut tx, attempt_id).await?;
    let facts = authenticate(&mut tx, attempt_id, token).await?;
    if !is_live(&facts.status) {
        return Err(stale(attempt_id));
    }
    if let Some(a) = req.approval_id {
        let row = store::get(&mut tx, Some(facts.workspace_id), a).await?;
        if row.is_none_or(|r| r.attempt_id != attempt_id) {
            return Err(ApiError::invalid(
                "approval_id",
                format!("attempt {attempt_id} has no tool approval {a}"),
            ));
        }
    }
    let actor = format!("agent:{}", facts.agent_id);
    events::append(
        &mut tx,
        facts.workspace_id,
        NewEvent {
            run_id: facts.run_id,
            task_id: Some(facts.task_id),
            attempt_id: Some(attempt_id),
            kind: kind::CALLED,
            actor: &actor,
            payload: json!({
                "agent_id": facts.agent_id, "tool": req.tool.trim(), "approval_id": req.approval_id,
                "ok": req.ok, "summary": req.summary, "duration_ms": req.duration_ms,
            }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Roles that resolve tool approvals.
pub const RESOLVERS: &[Role] = &[Role::Admin, Role::Operator, Role::Stakeholder];

/// The workspace's requests, newest first (overdue ones time out first).
pub async fn list(
    pool: &PgPool,
    who: &Principal,
    status: Option<ApprovalStatus>,
    limit: i64,
) -> Result<Vec<ApprovalView>, ApiError> {
    expire_overdue(pool, who.workspace_id, None).await?;
    let mut conn = pool.acquire().await?;
    Ok(store::list(
        &mut conn,
        who.workspace_id,
        status.map(|s| s.as_str()),
        limit,
    )
    .await?
    .iter()
    .map(ApprovalRow::view)
    .collect())
}

/// One request of the workspace.
pub async fn get(pool: &PgPool, who: &Principal, id: Uuid) -> Result<ApprovalView, ApiError> {
    expire_overdue(pool, who.workspace_id, Some(id)).await?;
    let mut conn = pool.acquire().await?;
    store::get(&mut conn, Some(who.workspace_id), id)
        .await?
        .map(|r| r.view())
        .ok_or_else(|| ApiError::NotFound(format!("no tool approval {id}")))
}

/// A human or stakeholder approves or denies a pending request, with a
/// rationale. The same outcome twice is a no-op; anything else on a
/// resolved (or timed-out) request is 409.
pub async fn resolve(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    req: ResolveApproval,
) -> Result<ApprovalView, ApiError> {
    who.require(RESOLVERS)?;
    check_text("rationale", &req.rationale, 4000)?;
    expire_overdue(pool, who.workspace_id, Some(id)).await?;
    let mut tx = pool.begin().await?;
    let current = store::get(&mut tx, Some(who.workspace_id), id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no tool approval {id}")))?;
    let to = match current.status().resolve(req.outcome) {
        Ok(Resolution::AlreadyDone) => return Ok(current.view()),
        Ok(Resolution::Apply(to)) => to,
        Err(e) => {
            return Err(ApiError::Conflict {
                code: "approval_already_resolved",
                message: format!("{e}"),
                details: json!({ "status": current.status, "resolver": current.resolver }),
            });
        }
    };
    let actor = who.actor();
    // Guarded by `status = 'pending'`: a concurrent resolver or the timeout
    // may have won since the read above.
    let Some(row) = store::resolve(&mut tx, id, to.as_str(), &actor, req.rationale.trim()).await?
    else {
        return Err(ApiError::conflict(
            "concurrent_update",
            format!("tool approval {id} was resolved meanwhile; reload it"),
        ));
    };
    events::append(&mut tx, who.workspace_id, resolved_event(&row, &actor)).await?;
    tx.commit().await?;
    Ok(row.view())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str) -> ToolCall {
        ToolCall {
            tool: tool.into(),
            ..ToolCall::default()
        }
    }

    fn policy(v: Value) -> ToolPolicy {
        ToolPolicy::of_inputs(&json!({ "tool_policy": v }))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn an_empty_policy_auto_approves_any_tool() {
        assert_eq!(policy(json!({})), ToolPolicy::default());
        assert_eq!(
            judge(&ToolPolicy::default(), Usage::default(), &call("shell")),
            Verdict::AutoApproved
        );
        assert_eq!(
            judge(&policy(json!({})), Usage::default(), &call("shell")),
            Verdict::AutoApproved
        );
        assert_eq!(ToolPolicy::of_inputs(&json!({})), Ok(None));
    }

    #[test]
    fn a_tool_outside_the_allowed_list_is_denied_even_when_auto_approving() {
        let p = policy(json!({"allowed_tools": ["read_file", "search"]}));
        assert_eq!(
            judge(&p, Usage::default(), &call("search")),
            Verdict::AutoApproved
        );
        let v = judge(&p, Usage::default(), &call("shell"));
        assert_eq!(
            v,
            Verdict::Denied("tool 'shell' is not in the allowed list [read_file, search]".into())
        );
        let none = policy(json!({"allowed_tools": []}));
        assert!(matches!(
            judge(&none, Usage::default(), &call("search")),
            Verdict::Denied(_)
        ));
    }

    #[test]
    fn budgets_are_cumulative_per_attempt_and_hard_limits() {
        let p =
            policy(json!({"budget": {"max_tokens": 1000, "max_files_changed": 3, "max_secs": 60}}));
        let used = Usage {
            elapsed_secs: 10,
            tokens: 600,
            files_changed: 2,
        };
        let mut c = call("edit");
        c.tokens = 400; // 600 + 400 = 1000: exactly at the limit is fine
        c.files_changed = 1; // 2 + 1 = 3
        assert_eq!(judge(&p, used, &c), Verdict::AutoApproved);
        c.tokens = 401;
        assert_eq!(
            judge(&p, used, &c),
            Verdict::Denied("token budget exceeded: 600 used + 401 requested > 1000".into())
        );
        c.tokens = 0;
        c.files_changed = 2;
        assert_eq!(
            judge(&p, used, &c),
            Verdict::Denied("files-changed budget exceeded: 2 changed + 2 requested > 3".into())
        );
        let late = Usage {
            elapsed_secs: 61,
            ..used
        };
        assert_eq!(
            judge(&p, late, &call("edit")),
            Verdict::Denied("time budget exceeded: 61 s since dispatch, limit 60 s".into())
        );
        // A budget denial wins over a sensitive path: no person can lift it.
        let both = policy(json!({"budget": {"max_tokens": 1}, "sensitive": {"paths": ["**"]}}));
        let mut c = call("edit");
        c.tokens = 2;
        c.paths = vec!["a".into()];
        assert!(matches!(
            judge(&both, Usage::default(), &c),
            Verdict::Denied(_)
        ));
    }

    #[test]
    fn sensitive_calls_always_escalate_with_every_reason() {
        let p = policy(json!({"auto_approve": true,
            "sensitive": {"paths": ["migrations/**", "*.env", ".github/*"], "max_diff_lines": 200}}));
        let mut c = call("write_file");
        c.paths = vec![
            "src/main.rs".into(),
            "migrations/2026/x.sql".into(),
            "prod.env".into(),
        ];
        c.diff_lines = 201;
        assert_eq!(
            judge(&p, Usage::default(), &c),
            Verdict::NeedsApproval(vec![
                "path 'migrations/2026/x.sql' matches protected pattern 'migrations/**'".into(),
                "path 'prod.env' matches protected pattern '*.env'".into(),
                "diff of 201 lines is over the limit of 200".into(),
            ])
        );
        c.paths = vec!["src/main.rs".into(), "config/prod.env".into()];
        c.diff_lines = 200; // at the limit: not over
        assert_eq!(judge(&p, Usage::default(), &c), Verdict::AutoApproved);
    }

    #[test]
    fn without_auto_approve_every_allowed_call_needs_a_person() {
        let p = policy(json!({"auto_approve": false}));
        assert_eq!(
            judge(&p, Usage::default(), &call("search")),
            Verdict::NeedsApproval(vec![
                "the policy requires approval for every tool call".into()
            ])
        );
    }

    #[test]
    fn globs_match_segments_and_trees() {
        assert!(glob_match("src/*.rs", "src/main.rs"));
        assert!(!glob_match("src/*.rs", "src/api/mod.rs"));
        assert!(glob_match("src/**/*.rs", "src/api/mod.rs"));
        assert!(glob_match("src/**/*.rs", "src/main.rs"));
        assert!(glob_match("**/secrets/**", "a/b/secrets/key.pem"));
        assert!(glob_match("?.txt", "a.txt"));
        assert!(!glob_match("?.txt", "ab.txt"));
        assert!(glob_match("Cargo.toml", "./Cargo.toml"));
        assert!(!glob_match("Cargo.toml", "Cargo.lock"));
    }

    #[test]
    fn a_malformed_policy_is_reported_not_ignored() {
        let e = ToolPolicy::of_inputs(&json!({"tool_policy": {"allowed": ["x"]}})).unwrap_err();
        assert!(e.contains("inputs.tool_policy is invalid"), "{e}");
        let e = ToolPolicy::of_inputs(&json!({"tool_policy": {"on_timeout": "maybe"}}));
        assert!(e.is_err());
    }

    #[test]
    fn the_approval_lifecycle_refuses_illegal_transitions() {
        use ApprovalStatus::*;
        assert_eq!(
            Pending.resolve(Outcome::Approved),
            Ok(Resolution::Apply(Approved))
        );
        assert_eq!(
            Pending.resolve(Outcome::Denied),
            Ok(Resolution::Apply(Denied))
        );
        assert_eq!(
            Approved.resolve(Outcome::Approved),
            Ok(Resolution::AlreadyDone)
        );
        assert_eq!(Denied.resolve(Outcome::Denied), Ok(Resolution::AlreadyDone));
        assert!(Approved.resolve(Outcome::Denied).is_err());
        assert!(Denied.resolve(Outcome::Approved).is_err());
        assert!(TimedOut.resolve(Outcome::Approved).is_err());
        assert!(TimedOut.resolve(Outcome::Denied).is_err());
        assert_eq!(Pending.time_out(), Ok(TimedOut));
        for s in [Approved, Denied, TimedOut] {
            assert!(s.time_out().is_err(), "{s}");
        }
    }

    #[test]
    fn a_timed_out_request_grants_what_the_policy_says() {
        use ApprovalStatus::*;
        assert_eq!(Pending.granted(Outcome::Denied), None);
        assert_eq!(Approved.granted(Outcome::Denied), Some(true));
        assert_eq!(Denied.granted(Outcome::Approved), Some(false));
        assert_eq!(TimedOut.granted(Outcome::Denied), Some(false));
        assert_eq!(TimedOut.granted(Outcome::Approved), Some(true));
    }
}
