//! Agent registry use cases: register, change (`PATCH`), retire (`DELETE`)
//! and heartbeat. Registering and changing share one validation, so a value
//! accepted at registration is accepted by a change and nothing else is;
//! the rules of statuses and of who may change what are pure and live in
//! the core (`coordinator_core::agents`), re-exported here.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};
use sqlx::PgPool;

pub use coordinator_core::agents::*;
use coordinator_core::{invalid::Invalid, text::Text};
use coordinator_protocol::agent_events::{AgentRetired, AgentUpdated, FieldChange};

use crate::{
    auth::{Forbidden, Principal, Role},
    coordination::organisation::{self, OrganisationError},
    store::{
        agents::{self, AgentRow, Beat, NewAgent},
        events::{self, WorkspaceEvent},
        organisation as store_organisation,
    },
};

/// Why an agent registry use case refused or failed; nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// A request field is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The caller may not do this (to this agent, or to these fields).
    #[error(transparent)]
    Forbidden(#[from] Forbidden),
    /// No such agent in the workspace.
    #[error("no agent '{0}'")]
    NotFound(String),
    /// The id is taken.
    #[error("an agent with id '{0}' is already registered")]
    Exists(String),
    /// The organisation spec refuses the role (its cardinality is reached).
    #[error(transparent)]
    Organisation(#[from] OrganisationError),
    /// The `version` named is not the agent's.
    #[error("agent '{agent_id}' is at version {current}, not {expected}; read it again and retry")]
    VersionConflict {
        /// The agent.
        agent_id: String,
        /// The version the caller read.
        expected: i64,
        /// The version it is at.
        current: i64,
    },
    /// The agent is retired: it does not come back by itself.
    #[error("agent '{0}' is retired; only an operator can bring it back (PATCH its status)")]
    Retired(String),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// `POST /v1/agents` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterAgent {
    /// Unique id in the workspace: 1–128 letters, digits, `.`, `_`, `:` or `-`,
    /// starting with a letter or digit.
    pub agent_id: String,
    /// Role, free text of 1–64 characters (e.g. `researcher`).
    pub role: String,
    /// A name for people, 1–128 characters.
    #[serde(default)]
    pub display_name: Option<String>,
    /// Skills (at most 100, each 1–64 characters).
    #[serde(default)]
    pub skills: Vec<String>,
    /// Tools (at most 100, each 1–64 characters).
    #[serde(default)]
    pub tools: Vec<String>,
    /// Worker base URL (http or https); tasks are sent to `{endpoint_url}/v1/tasks`. No userinfo, query string or fragment; its address must be inside the service's agent networks (`--agent-networks`, loopback by default).
    pub endpoint_url: String,
    /// Most tasks at once.
    #[serde(default = "one")]
    #[schema(minimum = 1, maximum = 10000, default = 1)]
    pub max_concurrency: i32,
    /// Model name, if any.
    #[serde(default)]
    pub model: Option<String>,
    /// Model tier, 0–10 (higher is stronger; default 1).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 10)]
    pub model_tier: Option<i32>,
    /// Trust in [0, 1] (default 0.5).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1)]
    pub trust: Option<f64>,
    /// Cost per task, non-negative (default 0).
    #[serde(default)]
    #[schema(minimum = 0)]
    pub cost_per_task: Option<f64>,
    /// Promise a heartbeat at least this often; silent longer, the agent goes offline.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 86400)]
    pub heartbeat_timeout_secs: Option<i32>,
}

fn one() -> i32 {
    1
}

/// `PATCH /v1/agents/{agent_id}` body: the fields to change, each validated
/// as at registration; a field left out keeps its value, and `null` clears
/// `display_name`, `model` or `heartbeat_timeout_secs`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateAgent {
    /// The agent's version as read: the change applies only if it is still
    /// at it (409 `version_conflict` otherwise). Left out: no guard.
    #[serde(default)]
    pub version: Option<i64>,
    /// Role, 1–64 characters (the organisation spec's cardinality applies).
    #[serde(default)]
    pub role: Option<String>,
    /// A name for people, 1–128 characters; `null` clears it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub display_name: Option<Option<String>>,
    /// Skills (replaces the list).
    #[serde(default)]
    pub skills: Option<Vec<String>>,
    /// Tools (replaces the list).
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Worker base URL, under the same rules and egress policy as at registration.
    #[serde(default)]
    pub endpoint_url: Option<String>,
    /// Most tasks at once, 1–10000 (lowered below its live attempts, it takes nothing new until under it).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 10000)]
    pub max_concurrency: Option<i32>,
    /// Model name; `null` clears it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub model: Option<Option<String>>,
    /// Model tier, 0–10.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 10)]
    pub model_tier: Option<i32>,
    /// Trust in [0, 1].
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1)]
    pub trust: Option<f64>,
    /// Cost per task, non-negative.
    #[serde(default)]
    #[schema(minimum = 0)]
    pub cost_per_task: Option<f64>,
    /// Heartbeat promise in seconds, 1–86400; `null`: not monitored.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<i32>, minimum = 1, maximum = 86400)]
    pub heartbeat_timeout_secs: Option<Option<i32>>,
    /// `idle`, `working`, `blocked`, `done` or `offline` (no new work; a heartbeat brings it back). From `retired`, an operator's change of status brings the agent back; `retired` itself is set by `DELETE`.
    #[serde(default)]
    pub status: Option<AgentStatus>,
}

/// A field that is present in the body, even as `null` (`Some(None)`).
fn present<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

impl UpdateAgent {
    /// The fields the request changes (whatever their values).
    pub fn fields(&self) -> Vec<AgentField> {
        let mut out = Vec::new();
        let mut add = |given: bool, f: AgentField| {
            if given {
                out.push(f);
            }
        };
        add(self.role.is_some(), AgentField::Role);
        add(self.display_name.is_some(), AgentField::DisplayName);
        add(self.skills.is_some(), AgentField::Skills);
        add(self.tools.is_some(), AgentField::Tools);
        add(self.endpoint_url.is_some(), AgentField::EndpointUrl);
        add(self.max_concurrency.is_some(), AgentField::MaxConcurrency);
        add(self.model.is_some(), AgentField::Model);
        add(self.model_tier.is_some(), AgentField::ModelTier);
        add(self.trust.is_some(), AgentField::Trust);
        add(self.cost_per_task.is_some(), AgentField::CostPerTask);
        add(
            self.heartbeat_timeout_secs.is_some(),
            AgentField::HeartbeatTimeoutSecs,
        );
        add(self.status.is_some(), AgentField::Status);
        out
    }
}

fn valid_agent_id(id: &str) -> bool {
    let mut chars = id.chars();
    id.len() <= 128
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
}

/// An agent id: 1–128 letters, digits, `.`, `_`, `:` or `-`, starting with a letter or digit.
pub const AGENT_ID_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$";
/// An http(s) base URL the document promises to parse: a host name of
/// letters, digits and `-`, an optional port, a plain path. (Addresses the
/// egress policy refuses answer 422 `url_refused`.)
pub const ENDPOINT_PATTERN: &str = "^[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z][A-Za-z0-9-]*(\\.[A-Za-z][A-Za-z0-9-]*)*(:[1-9][0-9]{0,3})?(/[A-Za-z0-9._~-]*)*$";

/// An agent's role.
pub const ROLE: Text = Text::required(64);
/// An agent's name for people.
pub const DISPLAY_NAME: Text = Text::required(128);
/// One skill or tool name.
pub const NAME: Text = Text::required(64);
/// How many skills (or tools) an agent may list.
pub const MAX_NAMES: usize = 100;

fn check_role(role: &str) -> Result<&str, Invalid> {
    ROLE.check("role", role)?;
    Ok(role.trim())
}

fn check_display_name(name: Option<&str>) -> Result<(), Invalid> {
    name.map_or(Ok(()), |n| DISPLAY_NAME.check("display_name", n))
}

fn check_names(field: &str, names: &[String]) -> Result<(), Invalid> {
    if names.len() > MAX_NAMES {
        return Err(Invalid::new(field, format!("at most {MAX_NAMES} {field}")));
    }
    NAME.check_each(field, names)
}

fn check_concurrency(n: i32) -> Result<(), Invalid> {
    if !(1..=10_000).contains(&n) {
        return Err(Invalid::new(
            "max_concurrency",
            "max_concurrency must be between 1 and 10000",
        ));
    }
    Ok(())
}

fn check_tier(tier: i32) -> Result<(), Invalid> {
    if !(0..=10).contains(&tier) {
        return Err(Invalid::new(
            "model_tier",
            "model_tier must be between 0 and 10",
        ));
    }
    Ok(())
}

fn check_trust(trust: f64) -> Result<(), Invalid> {
    if !(0.0..=1.0).contains(&trust) {
        return Err(Invalid::new("trust", "trust must be between 0 and 1"));
    }
    Ok(())
}

fn check_cost(cost: f64) -> Result<(), Invalid> {
    if !cost.is_finite() || cost < 0.0 {
        return Err(Invalid::new(
            "cost_per_task",
            "cost_per_task must be a non-negative number",
        ));
    }
    Ok(())
}

fn check_heartbeat(secs: Option<i32>) -> Result<(), Invalid> {
    if let Some(t) = secs
        && !(1..=86_400).contains(&t)
    {
        return Err(Invalid::new(
            "heartbeat_timeout_secs",
            "heartbeat_timeout_secs must be between 1 and 86400",
        ));
    }
    Ok(())
}

/// Checks an agent's base URL against its shape rules and the agent egress
/// policy (names are resolved now; again at every call); returns it as
/// stored (no trailing slash).
async fn check_endpoint(http: &crate::egress::Client, raw: &str) -> Result<String, Invalid> {
    const FIELD: &str = "endpoint_url";
    let url = reqwest::Url::parse(raw)
        .map_err(|e| Invalid::new(FIELD, format!("endpoint_url is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(Invalid::new(
            FIELD,
            "endpoint_url must be an http(s) URL with a host",
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Invalid::new(
            FIELD,
            "endpoint_url must not carry credentials (user:pass@); workers authenticate the service by the callback token",
        ));
    }
    // The service appends its own routes (`/v1/tasks`, …) to the base URL: a
    // query or fragment would swallow them and aim the call elsewhere.
    if url.query().is_some() {
        return Err(Invalid::new(
            FIELD,
            "endpoint_url must not have a query string: the service appends its own routes (/v1/tasks, …) to the base URL",
        ));
    }
    if url.fragment().is_some() {
        return Err(Invalid::new(
            FIELD,
            "endpoint_url must not have a fragment (#…): the service appends its own routes (/v1/tasks, …) to the base URL",
        ));
    }
    http.policy()
        .admit(&url)
        .await
        // Well-formed, but this deployment's policy refuses the address: 422.
        .map_err(|why| {
            Invalid::unprocessable("url_refused", FIELD, format!("endpoint_url refused: {why}"))
        })?;
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// Registers an agent (admin, operator or worker tokens).
pub async fn register(
    pool: &PgPool,
    http: &crate::egress::Client,
    who: &Principal,
    req: RegisterAgent,
) -> Result<AgentRow, AgentError> {
    who.require(&[Role::Admin, Role::Operator, Role::Worker])?;
    if !valid_agent_id(&req.agent_id) {
        return Err(Invalid::new(
            "agent_id",
            "agent_id must be 1–128 characters: letters, digits, '.', '_', ':' or '-', starting with a letter or digit",
        )
        .into());
    }
    let role = check_role(&req.role)?;
    check_display_name(req.display_name.as_deref())?;
    check_names("skills", &req.skills)?;
    check_names("tools", &req.tools)?;
    let endpoint = check_endpoint(http, &req.endpoint_url).await?;
    check_concurrency(req.max_concurrency)?;
    let tier = req.model_tier.unwrap_or(1);
    check_tier(tier)?;
    let trust = req.trust.unwrap_or(0.5);
    check_trust(trust)?;
    let cost = req.cost_per_task.unwrap_or(0.0);
    check_cost(cost)?;
    check_heartbeat(req.heartbeat_timeout_secs)?;
    // The organisation spec may cap the role; the check and the insert share
    // the workspace's role lock.
    let mut tx = pool.begin().await?;
    organisation::admit_role(&mut tx, who.workspace_id, role).await?;
    let row = agents::insert(
        &mut tx,
        who.workspace_id,
        NewAgent {
            agent_id: &req.agent_id,
            role,
            display_name: req.display_name.as_deref().map(str::trim),
            skills: &req.skills,
            tools: &req.tools,
            model: req.model.as_deref(),
            model_tier: tier,
            endpoint_url: &endpoint,
            max_concurrency: req.max_concurrency,
            trust,
            cost_per_task: cost,
            heartbeat_timeout_secs: req.heartbeat_timeout_secs,
        },
    )
    .await?
    .ok_or_else(|| AgentError::Exists(req.agent_id.clone()))?;
    tx.commit().await?;
    Ok(row)
}

/// Who is changing the agent: an admin or operator changes anything; an
/// agent token only its own agent, and only what [`AgentField::self_editable`]
/// allows; nobody else changes agents.
fn editor(who: &Principal, agent_id: &str, fields: &[AgentField]) -> Result<Editor, Forbidden> {
    if who.role != Role::Agent {
        who.require(&[Role::Admin, Role::Operator])?;
        return Ok(Editor::Operator);
    }
    who.require_self_or(agent_id, &[])?;
    let theirs: Vec<&str> = fields
        .iter()
        .filter(|f| !f.self_editable())
        .map(|f| f.as_str())
        .collect();
    if !theirs.is_empty() {
        return Err(Forbidden(format!(
            "an agent may change only its display_name, max_concurrency and status; {} {} an operator's to change",
            theirs.join(", "),
            if theirs.len() == 1 { "is" } else { "are" }
        )));
    }
    Ok(Editor::SelfAgent)
}

/// The request applied to `current`, every given field validated as at
/// registration. The endpoint is checked against the egress policy.
async fn apply(
    http: &crate::egress::Client,
    current: &AgentRow,
    req: &UpdateAgent,
) -> Result<AgentRow, Invalid> {
    let mut to = current.clone();
    if let Some(role) = &req.role {
        to.role = check_role(role)?.to_owned();
    }
    if let Some(name) = &req.display_name {
        check_display_name(name.as_deref())?;
        to.display_name = name.as_deref().map(|n| n.trim().to_owned());
    }
    if let Some(skills) = &req.skills {
        check_names("skills", skills)?;
        to.skills = skills.clone();
    }
    if let Some(tools) = &req.tools {
        check_names("tools", tools)?;
        to.tools = tools.clone();
    }
    if let Some(n) = req.max_concurrency {
        check_concurrency(n)?;
        to.max_concurrency = n;
    }
    if let Some(model) = &req.model {
        to.model = model.clone();
    }
    if let Some(tier) = req.model_tier {
        check_tier(tier)?;
        to.model_tier = tier;
    }
    if let Some(trust) = req.trust {
        check_trust(trust)?;
        to.trust = trust;
    }
    if let Some(cost) = req.cost_per_task {
        check_cost(cost)?;
        to.cost_per_task = cost;
    }
    if let Some(secs) = req.heartbeat_timeout_secs {
        check_heartbeat(secs)?;
        to.heartbeat_timeout_secs = secs;
    }
    if let Some(status) = req.status {
        to.status = status.as_str().to_owned();
    }
    // Last: it may resolve a name, so only a request valid otherwise pays for it.
    if let Some(url) = &req.endpoint_url {
        to.endpoint_url = check_endpoint(http, url).await?;
    }
    Ok(to)
}

/// Each field that differs between `from` and `to`, with both values.
fn changes(from: &AgentRow, to: &AgentRow) -> BTreeMap<String, FieldChange> {
    let mut out = BTreeMap::new();
    let mut cmp = |field: AgentField, a: Value, b: Value| {
        if a != b {
            out.insert(field.as_str().to_owned(), FieldChange { from: a, to: b });
        }
    };
    cmp(AgentField::Role, json!(from.role), json!(to.role));
    cmp(
        AgentField::DisplayName,
        json!(from.display_name),
        json!(to.display_name),
    );
    cmp(AgentField::Skills, json!(from.skills), json!(to.skills));
    cmp(AgentField::Tools, json!(from.tools), json!(to.tools));
    cmp(
        AgentField::EndpointUrl,
        json!(from.endpoint_url),
        json!(to.endpoint_url),
    );
    cmp(
        AgentField::MaxConcurrency,
        json!(from.max_concurrency),
        json!(to.max_concurrency),
    );
    cmp(AgentField::Model, json!(from.model), json!(to.model));
    cmp(
        AgentField::ModelTier,
        json!(from.model_tier),
        json!(to.model_tier),
    );
    cmp(AgentField::Trust, json!(from.trust), json!(to.trust));
    cmp(
        AgentField::CostPerTask,
        json!(from.cost_per_task),
        json!(to.cost_per_task),
    );
    cmp(
        AgentField::HeartbeatTimeoutSecs,
        json!(from.heartbeat_timeout_secs),
        json!(to.heartbeat_timeout_secs),
    );
    cmp(AgentField::Status, json!(from.status), json!(to.status));
    out
}

fn status_of(row: &AgentRow) -> AgentStatus {
    // The column's CHECK admits only these values; an unknown one would be
    // a newer replica's, and treating it as offline takes no liberties.
    row.status.parse().unwrap_or(AgentStatus::Offline)
}

/// Changes an agent in place (see [`UpdateAgent`]): validated as at
/// registration, guarded by `version` when given, the role's cardinality
/// checked when the agent joins a role or comes back to work, and an
/// `agent.updated` event naming each changed field. A request that changes
/// nothing writes nothing.
pub async fn update(
    pool: &PgPool,
    http: &crate::egress::Client,
    who: &Principal,
    agent_id: &str,
    req: UpdateAgent,
) -> Result<AgentRow, AgentError> {
    let fields = req.fields();
    // An empty PATCH is a no-op that answers the agent as it is (RFC 7396).
    let editor = editor(who, agent_id, &fields)?;
    let mut tx = pool.begin().await?;
    // Role and status changes join or leave a role: take the workspace's
    // role lock before the agent's row, in registration's order.
    if req.role.is_some() || req.status.is_some() {
        store_organisation::lock_roles(&mut tx, who.workspace_id).await?;
    }
    let current = agents::lock(&mut tx, who.workspace_id, agent_id)
        .await?
        .ok_or_else(|| AgentError::NotFound(agent_id.to_owned()))?;
    if let Some(expected) = req.version
        && expected != current.version
    {
        return Err(AgentError::VersionConflict {
            agent_id: agent_id.to_owned(),
            expected,
            current: current.version,
        });
    }
    let to = apply(http, &current, &req).await?;
    let (from_status, to_status) = (status_of(&current), status_of(&to));
    patch_status(from_status, to_status, editor).map_err(|e| match e {
        StatusRefusal::RetireByDelete => AgentError::Invalid(Invalid::new("status", e.to_string())),
        StatusRefusal::SelfUnretire => AgentError::Retired(agent_id.to_owned()),
    })?;
    let diff = changes(&current, &to);
    if diff.is_empty() {
        return Ok(current);
    }
    let joins_role = organisation::key(&to.role) != organisation::key(&current.role)
        || !from_status.takes_work();
    if to_status.takes_work() && joins_role {
        organisation::admit_role(&mut tx, who.workspace_id, &to.role).await?;
    }
    let row = agents::update(&mut tx, who.workspace_id, &to).await?;
    events::record(
        &mut tx,
        who.workspace_id,
        WorkspaceEvent::new(
            None,
            None,
            &who.actor(),
            &AgentUpdated {
                agent_id: row.agent_id.clone(),
                version: row.version,
                changes: diff,
            },
        ),
    )
    .await?;
    tx.commit().await?;
    Ok(row)
}

/// Retires an agent (admin or operator): kept with its history, given no
/// new work (the scorer, the ladder, tenders and plan validation skip it),
/// its live attempts left to finish or time out and move on, its waiting
/// pinned tasks handed to the escalation ladder by the engine's next sweep,
/// and its heartbeats refused. Retiring a retired agent changes nothing.
pub async fn retire(
    pool: &PgPool,
    who: &Principal,
    agent_id: &str,
) -> Result<AgentRow, AgentError> {
    who.require(&[Role::Admin, Role::Operator])?;
    let mut tx = pool.begin().await?;
    let current = agents::lock(&mut tx, who.workspace_id, agent_id)
        .await?
        .ok_or_else(|| AgentError::NotFound(agent_id.to_owned()))?;
    if status_of(&current) == AgentStatus::Retired {
        return Ok(current);
    }
    let live = agents::live_attempts(&mut tx, who.workspace_id, agent_id).await?;
    let row = agents::retire(&mut tx, who.workspace_id, agent_id).await?;
    events::record(
        &mut tx,
        who.workspace_id,
        WorkspaceEvent::new(
            None,
            None,
            &who.actor(),
            &AgentRetired {
                agent_id: row.agent_id.clone(),
                version: row.version,
                previous_status: current.status,
                live_attempts: live,
            },
        ),
    )
    .await?;
    tx.commit().await?;
    Ok(row)
}

/// Records that the agent is alive, with the status it reports (`idle`,
/// `working`, `blocked` or `done`) if any; refused for a retired agent.
pub async fn heartbeat(
    pool: &PgPool,
    who: &Principal,
    agent_id: &str,
    status: Option<&str>,
) -> Result<(), AgentError> {
    who.require_self_or(agent_id, &[Role::Admin, Role::Operator, Role::Worker])?;
    if let Some(s) = status
        && !s.parse::<AgentStatus>().is_ok_and(AgentStatus::reportable)
    {
        return Err(Invalid::new(
            "status",
            "status must be one of idle, working, blocked, done",
        )
        .into());
    }
    match agents::heartbeat(pool, who.workspace_id, agent_id, status).await? {
        Beat::Recorded => Ok(()),
        Beat::NoSuchAgent => Err(AgentError::NotFound(agent_id.to_owned())),
        Beat::Retired => Err(AgentError::Retired(agent_id.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_ids() {
        assert!(valid_agent_id("researcher-1"));
        assert!(valid_agent_id("team.a:writer_2"));
        assert!(!valid_agent_id(""));
        assert!(!valid_agent_id("-lead"));
        assert!(!valid_agent_id("has space"));
        assert!(!valid_agent_id(&"a".repeat(129)));
    }

    #[test]
    fn a_patch_tells_absent_from_null() {
        let req: UpdateAgent =
            serde_json::from_value(json!({"display_name": null, "max_concurrency": 3}))
                .expect("parses");
        assert_eq!(req.display_name, Some(None));
        assert_eq!(req.model, None);
        assert_eq!(
            req.fields(),
            [AgentField::DisplayName, AgentField::MaxConcurrency]
        );
        assert!(serde_json::from_value::<UpdateAgent>(json!({"agent_id": "x"})).is_err());
        assert!(serde_json::from_value::<UpdateAgent>(json!({"status": "asleep"})).is_err());
    }
}
