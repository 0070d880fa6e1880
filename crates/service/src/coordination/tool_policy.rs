//! Tool approval use cases: a worker asks before a guarded call, a person
//! (or the policy, or the timeout) resolves, and the worker reports the calls
//! it made. The policy and its verdicts are pure and live in the core
//! (`coordinator_core::tool_policy`, re-exported here).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

pub use coordinator_core::tool_policy::*;

use coordinator_core::{domain::IllegalTransition, invalid::Invalid, text::Text};

use crate::{
    auth::{Principal, Role, hash_token},
    store::{
        events::{self, NewEvent, payloads},
        missions,
        tool_approvals::{self as store, ApprovalRow, AttemptFacts},
    },
};

/// Why a tool approval use case failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolApprovalError {
    /// A field of the request is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The caller's role may not resolve approvals.
    #[error("{0}")]
    Forbidden(#[from] crate::auth::Forbidden),
    /// No such attempt.
    #[error("no attempt {attempt_id}")]
    NoAttempt {
        /// The attempt.
        attempt_id: Uuid,
    },
    /// The bearer token is not the attempt's own.
    #[error("the token is not attempt {attempt_id}'s")]
    WrongToken {
        /// The attempt.
        attempt_id: Uuid,
    },
    /// The attempt has ended: its worker must stop.
    #[error("attempt {attempt_id} is no longer live; stop working on it")]
    StaleAttempt {
        /// The attempt.
        attempt_id: Uuid,
    },
    /// The client-chosen id names another request.
    #[error("tool approval {id} exists with other content")]
    IdReused {
        /// The id.
        id: Uuid,
    },
    /// The id was taken by a concurrent request.
    #[error("the approval id was just taken")]
    IdTaken,
    /// No such request in the workspace.
    #[error("no tool approval {id}")]
    NotFound {
        /// The request.
        id: Uuid,
    },
    /// The attempt asked no such request.
    #[error("attempt {attempt_id} has no tool approval {id}")]
    NotOfAttempt {
        /// The attempt.
        attempt_id: Uuid,
        /// The request.
        id: Uuid,
    },
    /// Resolving a request another way than it was resolved.
    #[error("{refused}")]
    AlreadyResolved {
        /// What the lifecycle refused.
        refused: IllegalTransition,
        /// The request's status.
        status: String,
        /// Who resolved it.
        resolver: Option<String>,
    },
    /// A concurrent resolver (or the timeout) won.
    #[error("tool approval {id} was resolved meanwhile; reload it")]
    ResolvedMeanwhile {
        /// The request.
        id: Uuid,
    },
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

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
    #[schema(min_length = 1, max_length = 4000, pattern = r"\S")]
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
    #[serde(default = "crate::coordination::tool_policy::yes")]
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
    NewEvent::new(
        row.run_id,
        Some(row.task_id),
        Some(row.attempt_id),
        actor,
        &payloads::ToolApprovalResolved {
            approval_id: row.id,
            agent_id: row.agent_id.clone(),
            tool: row.tool.clone(),
            approval_status: row.status.clone(),
            granted: row.status().granted(row.timeout_outcome()),
            resolver: row.resolver.clone(),
            rationale: row.rationale.clone(),
        },
    )
}

/// Loads the attempt and checks the bearer token is its own (`None`: the
/// caller was authenticated by this attempt's token already).
async fn authenticate(
    conn: &mut sqlx::PgConnection,
    attempt_id: Uuid,
    token: Option<&str>,
) -> Result<AttemptFacts, ToolApprovalError> {
    let facts = store::attempt_facts(conn, attempt_id)
        .await?
        .ok_or(ToolApprovalError::NoAttempt { attempt_id })?;
    if token.is_some_and(|token| facts.token_hash != hash_token(token)) {
        return Err(ToolApprovalError::WrongToken { attempt_id });
    }
    Ok(facts)
}

fn is_live(status: &str) -> bool {
    matches!(status, "dispatching" | "running")
}

/// A tool's name.
pub const TOOL: Text = Text::required(128);
/// A path a tool call touches.
pub const PATH: Text = Text::required(1024);
/// How many paths one approval request may name.
pub const MAX_PATHS: usize = 200;
/// Why a person approved or denied.
pub const RATIONALE: Text = Text::required(4000);

fn validate(req: &ApprovalRequest) -> Result<(), Invalid> {
    TOOL.check("tool", &req.tool)?;
    if req.paths.len() > MAX_PATHS {
        return Err(Invalid::new("paths", format!("at most {MAX_PATHS} paths")));
    }
    PATH.check_each("paths", &req.paths)?;
    for (field, v) in [
        ("diff_lines", req.diff_lines),
        ("tokens", req.tokens),
        ("files_changed", req.files_changed),
    ] {
        if v < 0 {
            return Err(Invalid::new(field, format!("{field} must not be negative")));
        }
    }
    if req.arguments.as_ref().is_some_and(|a| !a.is_object()) {
        return Err(Invalid::new("arguments", "arguments must be a JSON object"));
    }
    Ok(())
}

/// A worker asks whether it may make a tool call. The task's policy judges
/// it at once; `created` is false for an idempotent retry of the same id.
/// `token` is the attempt's bearer token (`None` when the caller already
/// authenticated with it, as an agent tool call has).
pub async fn request_approval(
    pool: &PgPool,
    default_timeout_secs: u64,
    attempt_id: Uuid,
    token: Option<&str>,
    req: ApprovalRequest,
) -> Result<(ApprovalView, bool), ToolApprovalError> {
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
            Err(ToolApprovalError::IdReused { id })
        };
    }
    if !is_live(&facts.status) {
        return Err(ToolApprovalError::StaleAttempt { attempt_id });
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
    .ok_or(ToolApprovalError::IdTaken)?;
    let actor = format!("agent:{}", facts.agent_id);
    events::append(
        &mut tx,
        facts.workspace_id,
        NewEvent::new(
            facts.run_id,
            Some(facts.task_id),
            Some(attempt_id),
            &actor,
            &payloads::ToolApprovalRequested {
                approval_id: row.id,
                agent_id: row.agent_id.clone(),
                tool: row.tool.clone(),
                paths: row.paths.clone(),
                diff_lines: row.diff_lines,
                tokens: row.tokens,
                files_changed: row.files_changed,
                verdict: row.verdict.clone(),
                reasons: row.reasons.clone(),
                approval_status: row.status.clone(),
            },
        ),
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
) -> Result<usize, ToolApprovalError> {
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
) -> Result<ApprovalView, ToolApprovalError> {
    let facts = {
        let mut conn = pool.acquire().await?;
        authenticate(&mut conn, attempt_id, Some(token)).await?
    };
    expire_overdue(pool, facts.workspace_id, Some(id)).await?;
    let mut conn = pool.acquire().await?;
    store::get(&mut conn, Some(facts.workspace_id), id)
        .await?
        .filter(|r| r.attempt_id == attempt_id)
        .map(|r| r.view())
        .ok_or(ToolApprovalError::NotOfAttempt { attempt_id, id })
}

/// A worker reports a tool call it made (for the timeline).
pub async fn report_call(
    pool: &PgPool,
    attempt_id: Uuid,
    token: &str,
    req: ToolCallReport,
) -> Result<(), ToolApprovalError> {
    TOOL.check("tool", &req.tool)?;
    if req
        .summary
        .as_ref()
        .is_some_and(|s| s.chars().count() > 2000)
    {
        return Err(Invalid::new("summary", "summary must be at most 2000 characters").into());
    }
    if req.duration_ms.is_some_and(|d| d < 0) {
        return Err(Invalid::new("duration_ms", "duration_ms must not be negative").into());
    }
    let mut tx = pool.begin().await?;
    missions::lock_for_attempt(&mut tx, attempt_id).await?;
    let facts = authenticate(&mut tx, attempt_id, Some(token)).await?;
    if !is_live(&facts.status) {
        return Err(ToolApprovalError::StaleAttempt { attempt_id });
    }
    if let Some(a) = req.approval_id {
        let row = store::get(&mut tx, Some(facts.workspace_id), a).await?;
        if row.is_none_or(|r| r.attempt_id != attempt_id) {
            return Err(Invalid::new(
                "approval_id",
                format!("attempt {attempt_id} has no tool approval {a}"),
            )
            .into());
        }
    }
    let actor = format!("agent:{}", facts.agent_id);
    events::append(
        &mut tx,
        facts.workspace_id,
        NewEvent::new(
            facts.run_id,
            Some(facts.task_id),
            Some(attempt_id),
            &actor,
            &payloads::ToolCalled {
                agent_id: facts.agent_id.clone(),
                tool: req.tool.trim().to_owned(),
                approval_id: req.approval_id,
                ok: req.ok,
                summary: req.summary,
                duration_ms: req.duration_ms,
            },
        ),
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
) -> Result<Vec<ApprovalView>, ToolApprovalError> {
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
pub async fn get(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
) -> Result<ApprovalView, ToolApprovalError> {
    expire_overdue(pool, who.workspace_id, Some(id)).await?;
    let mut conn = pool.acquire().await?;
    store::get(&mut conn, Some(who.workspace_id), id)
        .await?
        .map(|r| r.view())
        .ok_or(ToolApprovalError::NotFound { id })
}

/// A human or stakeholder approves or denies a pending request, with a
/// rationale. The same outcome twice is a no-op; anything else on a
/// resolved (or timed-out) request is 409.
pub async fn resolve(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    req: ResolveApproval,
) -> Result<ApprovalView, ToolApprovalError> {
    who.require(RESOLVERS).map_err(ToolApprovalError::from)?;
    RATIONALE.check("rationale", &req.rationale)?;
    expire_overdue(pool, who.workspace_id, Some(id)).await?;
    let mut tx = pool.begin().await?;
    let current = store::get(&mut tx, Some(who.workspace_id), id)
        .await?
        .ok_or(ToolApprovalError::NotFound { id })?;
    let to = match current.status().resolve(req.outcome) {
        Ok(Resolution::AlreadyDone) => return Ok(current.view()),
        Ok(Resolution::Apply(to)) => to,
        Err(refused) => {
            return Err(ToolApprovalError::AlreadyResolved {
                refused,
                status: current.status,
                resolver: current.resolver,
            });
        }
    };
    let actor = who.actor();
    // Guarded by `status = 'pending'`: a concurrent resolver or the timeout
    // may have won since the read above.
    let Some(row) = store::resolve(&mut tx, id, to.as_str(), &actor, req.rationale.trim()).await?
    else {
        return Err(ToolApprovalError::ResolvedMeanwhile { id });
    };
    events::append(&mut tx, who.workspace_id, resolved_event(&row, &actor)).await?;
    tx.commit().await?;
    Ok(row.view())
}
