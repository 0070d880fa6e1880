//! Contract net use cases: open a tender for a task, collect proposals,
//! award (or fall back to scoring) when the window closes, and pin the task
//! to the winner. The award formula and the tender lifecycle are pure and
//! live in the core (`coordinator_core::contract_net`, re-exported here).

use coordinator_protocol::EventPayload;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use coordinator_core::{domain::UnknownValue, invalid::Invalid};

use super::{
    governance::TaskFacts,
    messages::{self, MessageError, Outgoing, Performative, Recipient},
};
use crate::{
    assignment::{self, TaskNeeds},
    auth::{Principal, Role},
    domain::TaskStatus,
    store::{
        agents,
        contract_net::{self as store, NewProposal, ProposalRow, TenderRow},
        events::{self, WorkspaceEvent},
        missions,
        tasks::{self, TaskRow},
    },
};

pub use coordinator_core::contract_net::*;

pub mod proposals;

pub use proposals::{propose, solicit, submit};

/// The tender's wire types: workers answer them, so they live in the protocol crate.
pub use coordinator_protocol::{CallForProposals, ProposalBody};

/// Why a contract-net use case failed.
#[derive(Debug, thiserror::Error)]
pub enum TenderError {
    /// A field of the request is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// A status that is not a tender status.
    #[error(transparent)]
    UnknownStatus(#[from] UnknownValue),
    /// The caller's role may not do this.
    #[error("{0}")]
    Forbidden(#[from] crate::auth::Forbidden),
    /// An agent token named another agent as the proposer.
    #[error("an agent token can only propose as itself")]
    NotYours,
    /// No such tender, task or mission in the workspace.
    #[error("no {what} {id}")]
    NotFound {
        /// `tender`, `task` or `mission`.
        what: &'static str,
        /// Its id.
        id: Uuid,
    },
    /// The task is past the point where it can be tendered.
    #[error("task '{key}' is {status}; only a pending or queued task can be tendered")]
    TaskStarted {
        /// The task's key.
        key: String,
        /// Its status.
        status: String,
    },
    /// The mission has ended.
    #[error("mission {mission_id} is {status}")]
    MissionOver {
        /// The mission.
        mission_id: Uuid,
        /// Its status.
        status: String,
    },
    /// The task already has an open tender.
    #[error("the task already has an open tender")]
    AlreadyOpen,
    /// Closing a tender that is closed.
    #[error("the tender is already closed")]
    AlreadyClosed,
    /// The tender changed between the read and the write.
    #[error("the tender changed meanwhile")]
    VersionConflict,
    /// No online agent can do the task.
    #[error("no online agent has the skills and tools the task needs")]
    NoEligibleAgents {
        /// The task's skills.
        required_skills: Vec<String>,
        /// The task's tools.
        required_tools: Vec<String>,
    },
    /// The agent already proposed other terms.
    #[error("agent '{agent_id}' already proposed differently")]
    ProposalExists {
        /// The proposer.
        agent_id: String,
        /// Its first proposal.
        proposal_id: Uuid,
    },
    /// A proposal after the tender closed or its deadline passed.
    #[error(
        "tender {tender_id} is {} (deadline {deadline}); late proposals are refused",
        lateness(.status)
    )]
    Closed {
        /// The tender.
        tender_id: Uuid,
        /// Its status.
        status: String,
        /// Its deadline (RFC 3339).
        deadline: String,
    },
    /// The agent was not called for proposals.
    #[error("agent '{agent_id}' was not called for proposals on this tender")]
    NotEligible {
        /// The proposer.
        agent_id: String,
        /// Who was called.
        eligible_agents: Vec<String>,
    },
    /// Sending a CFP, ACCEPT or REJECT failed.
    #[error(transparent)]
    Message(#[from] MessageError),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// How a tender that refuses proposals is described: an open one is late.
fn lateness(status: &str) -> &str {
    if status == "open" {
        "past its deadline"
    } else {
        status
    }
}

impl TenderError {
    /// Whether recording it again may work: the database failed (but did
    /// not refuse the text), not the proposal.
    fn is_transient(&self) -> bool {
        let db = match self {
            TenderError::Database(e) | TenderError::Message(MessageError::Database(e)) => e,
            TenderError::Message(MessageError::Unexpected(_)) => return true,
            _ => return false,
        };
        // NUL characters in text (22021) or jsonb (22P05) fail every time.
        !matches!(db, sqlx::Error::Database(d) if matches!(d.code().as_deref(), Some("22021" | "22P05")))
    }
}

/// Refuses unless the caller has one of `roles`.
fn require(who: &Principal, roles: &[Role]) -> Result<(), TenderError> {
    who.require(roles).map_err(TenderError::from)
}

/// The 404 for a tender.
fn no_tender(id: Uuid) -> TenderError {
    TenderError::NotFound { what: "tender", id }
}

// ---------------------------------------------------------------- use cases

/// A tender as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TenderView {
    /// Id.
    pub id: Uuid,
    /// Mission.
    pub mission_id: Uuid,
    /// Task.
    pub task_id: Uuid,
    /// Who opened it.
    pub initiator: String,
    /// The work.
    pub description: String,
    /// Skills filter.
    pub required_skills: Vec<String>,
    /// Agents the CFP went to.
    pub eligible_agents: Vec<String>,
    /// Proposals after this are refused.
    #[serde(with = "time::serde::rfc3339")]
    pub deadline: OffsetDateTime,
    /// `open`, `awarded` or `no_proposals`.
    pub status: TenderStatus,
    /// The winner.
    pub winner_agent_id: Option<String>,
    /// Scores at the award (or now, while open), best first.
    pub ranking: Vec<BidScore>,
    /// The proposals.
    pub proposals: Vec<ProposalView>,
    /// The award weights.
    pub criteria: Value,
    /// Write guard.
    pub version: i64,
    /// When it closed.
    #[serde(with = "time::serde::rfc3339::option")]
    pub closed_at: Option<OffsetDateTime>,
    /// Opened.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A proposal as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ProposalView {
    /// Id.
    pub id: Uuid,
    /// The tender.
    pub tender_id: Uuid,
    /// The proposer.
    pub agent_id: String,
    /// Capability match (capped by skill coverage).
    pub capability_match: f64,
    /// Required skills it has.
    pub matched_skills: Vec<String>,
    /// Extra skills.
    pub additional_skills: Vec<String>,
    /// Duration estimate.
    pub estimated_effort: f64,
    /// Cost estimate.
    pub estimated_cost: f64,
    /// Confidence.
    pub confidence: f64,
    /// Conditions.
    pub conditions: Vec<String>,
    /// `api` or `endpoint`.
    pub via: String,
    /// Received.
    #[serde(with = "time::serde::rfc3339")]
    pub submitted_at: OffsetDateTime,
}

impl ProposalRow {
    fn view(&self) -> ProposalView {
        ProposalView {
            id: self.id,
            tender_id: self.tender_id,
            agent_id: self.agent_id.clone(),
            capability_match: self.capability_match,
            matched_skills: self.matched_skills.clone(),
            additional_skills: self.additional_skills.clone(),
            estimated_effort: self.estimated_effort,
            estimated_cost: self.estimated_cost,
            confidence: self.confidence,
            conditions: self.conditions.clone(),
            via: self.via.clone(),
            submitted_at: self.submitted_at,
        }
    }

    fn bid(&self) -> Bid {
        Bid {
            agent_id: self.agent_id.clone(),
            capability_match: self.capability_match,
            estimated_effort: self.estimated_effort,
            estimated_cost: self.estimated_cost,
            confidence: self.confidence,
            conditions: self.conditions.len(),
        }
    }
}

fn criteria() -> Value {
    json!({ "weights": {
        "capability_match": W_CAPABILITY, "estimated_effort": W_EFFORT,
        "confidence": W_CONFIDENCE, "conditions": W_CONDITIONS,
    }})
}

fn view(t: &TenderRow, proposals: &[ProposalRow]) -> TenderView {
    let bids: Vec<Bid> = proposals.iter().map(ProposalRow::bid).collect();
    TenderView {
        id: t.id,
        mission_id: t.mission_id,
        task_id: t.task_id,
        initiator: t.initiator.clone(),
        description: t.description.clone(),
        required_skills: t.required_skills.clone(),
        eligible_agents: t.eligible_agents.clone(),
        deadline: t.deadline,
        status: t.status.parse().unwrap_or(TenderStatus::Open),
        winner_agent_id: t.winner_agent_id.clone(),
        ranking: rank(&bids),
        proposals: proposals.iter().map(ProposalRow::view).collect(),
        criteria: criteria(),
        version: t.version,
        closed_at: t.closed_at,
        created_at: t.created_at,
    }
}

/// Opens a tender for `task` in the caller's transaction: PROPOSE notices to
/// every eligible agent, the event, and the task's queue entry pushed to the
/// deadline. `None` when no agent is eligible (scoring decides at once).
async fn open(
    conn: &mut PgConnection,
    task: &TaskRow,
    window_ms: i32,
    initiator: &str,
) -> Result<Option<TenderRow>, TenderError> {
    let needs = TaskNeeds {
        excluded: &task.excluded_agents,
        ..TaskNeeds::of(&task.required_skills, &task.required_tools)
    };
    let online = agents::online(conn, task.workspace_id).await?;
    let eligible: Vec<String> = super::organisation::not_prohibited(conn, task, online)
        .await?
        .into_iter()
        .filter(|a| {
            assignment::capable(needs, &a.skills, &a.tools)
                && !task.excluded_agents.contains(&a.agent_id)
                && a.model_tier >= task.min_model_tier
        })
        .map(|a| a.agent_id)
        .collect();
    if eligible.is_empty() {
        return Ok(None);
    }
    let description = if task.description.trim().is_empty() {
        task.title.clone()
    } else {
        format!("{}: {}", task.title, task.description)
    };
    let t = store::insert_tender(
        conn,
        store::NewTender {
            id: Uuid::new_v4(),
            workspace_id: task.workspace_id,
            mission_id: task.run_id,
            task_id: task.id,
            initiator,
            description: &description,
            required_skills: &task.required_skills,
            eligible_agents: &eligible,
            window_ms,
        },
    )
    .await?
    .ok_or(TenderError::AlreadyOpen)?;
    let deadline = t
        .deadline
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    for agent in &eligible {
        messages::send(
            conn,
            t.workspace_id,
            Outgoing {
                id: None,
                from_agent: None,
                sender: initiator.to_owned(),
                to: Recipient::Agent(agent.clone()),
                performative: Performative::Propose,
                category: None,
                conversation_id: Some(t.id),
                reply_to: None,
                mission_id: Some(t.mission_id),
                task_id: Some(t.task_id),
                subject: format!("Call for proposals: task '{}'", task.task_key),
                content: json!({
                    "cfp_id": t.id, "tender_id": t.id, "task": cfp_task(task), "deadline": deadline,
                    "criteria": criteria(), "propose_url": format!("/v1/tenders/{}/proposals", t.id),
                }),
            },
        )
        .await?;
    }
    store::push_queue_entry(conn, task.id, Some(t.deadline)).await?;
    events::record(
        conn,
        t.workspace_id,
        WorkspaceEvent::new(
            Some(t.mission_id),
            Some(t.task_id),
            initiator,
            &events::payloads::TenderOpened {
                key: task.task_key.clone(),
                tender_id: t.id,
                eligible_agents: eligible.clone(),
                deadline: deadline.clone(),
            },
        ),
    )
    .await?;
    Ok(Some(t))
}

fn cfp_task(task: &TaskRow) -> Value {
    json!({
        "key": task.task_key, "title": task.title, "description": task.description,
        "task_type": task.task_type, "required_skills": task.required_skills,
        "required_tools": task.required_tools, "estimated_cost": task.estimated_cost,
    })
}

/// Closes an open tender (locked by the caller, who also holds its mission):
/// award to the best proposal (pinning the task, ACCEPT and REJECT
/// messages) or `no_proposals`. Returns the closed row.
async fn close(
    conn: &mut PgConnection,
    t: &TenderRow,
    actor: &str,
) -> Result<TenderRow, TenderError> {
    let proposals = store::proposals(conn, t.workspace_id, t.id).await?;
    let bids: Vec<Bid> = proposals.iter().map(ProposalRow::bid).collect();
    let ranking = rank(&bids);
    let status = t
        .status
        .parse::<TenderStatus>()?
        .close(!ranking.is_empty())
        .ok_or(TenderError::AlreadyClosed)?;
    let winner = ranking.first().map(|w| w.agent_id.clone());
    let winning = winner
        .as_ref()
        .and_then(|w| proposals.iter().find(|p| &p.agent_id == w))
        .map(|p| p.id);
    let details = json!({ "ranking": ranking, "criteria": criteria() });
    let closed = store::close_tender(
        conn,
        store::Close {
            workspace_id: t.workspace_id,
            id: t.id,
            version: t.version,
            status: status.as_str(),
            winner: winner.as_deref(),
            winning_proposal: winning,
            details: &details,
            actor,
        },
    )
    .await?
    .ok_or(TenderError::VersionConflict)?;
    if let Some(w) = &winner {
        store::pin_task(conn, t.workspace_id, t.task_id, w).await?;
        for s in &ranking {
            let won = &s.agent_id == w;
            messages::send(
                conn,
                t.workspace_id,
                Outgoing {
                    id: None,
                    from_agent: None,
                    sender: actor.to_owned(),
                    to: Recipient::Agent(s.agent_id.clone()),
                    performative: if won {
                        Performative::Accept
                    } else {
                        Performative::Reject
                    },
                    category: None,
                    conversation_id: Some(t.id),
                    reply_to: None,
                    mission_id: Some(t.mission_id),
                    task_id: Some(t.task_id),
                    subject: if won {
                        "Your proposal won the tender".into()
                    } else {
                        "Your proposal was not selected".into()
                    },
                    content: json!({ "tender_id": t.id, "winner": w, "score": s.score, "ranking": ranking }),
                },
            )
            .await?;
        }
    }
    let (kind, payload) = if winner.is_some() {
        events::payloads::TenderAwarded {
            tender_id: t.id,
            agent_id: winner,
            ranking: json!(ranking),
            proposals: proposals.len(),
        }
        .to_event()
    } else {
        events::payloads::TenderNoProposals {
            tender_id: t.id,
            agent_id: winner,
            ranking: json!(ranking),
            proposals: proposals.len(),
        }
        .to_event()
    };
    events::record(
        conn,
        t.workspace_id,
        WorkspaceEvent {
            mission_id: Some(t.mission_id),
            task_id: Some(t.task_id),
            kind,
            actor,
            payload,
        },
    )
    .await?;
    Ok(closed)
}

/// What the dispatcher does with a ready task after the tender hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allocation {
    /// Score as usual.
    Score,
    /// A tender is open: leave the task until its deadline.
    Hold,
    /// A tender was just awarded: run it on this agent.
    Pinned(String),
}

/// The contract-net hook of a claim: a task allocated by tender opens a CFP
/// the first time it is ready, waits while it is open, and is awarded (or
/// falls back to scoring) when the deadline passes or every eligible agent
/// has answered. Runs in the claim's transaction (queue row and mission held).
pub async fn allocate(
    conn: &mut PgConnection,
    facts: &TaskFacts,
    task: &TaskRow,
    actor: &str,
) -> anyhow::Result<Allocation> {
    if facts.allocation != "tender" {
        return Ok(Allocation::Score);
    }
    let Some(t) = store::lock_latest_for_task(conn, task.workspace_id, task.id).await? else {
        return Ok(
            match open(conn, task, facts.tender_window_ms, actor).await? {
                Some(_) => Allocation::Hold,
                None => Allocation::Score,
            },
        );
    };
    if t.status != TenderStatus::Open.as_str() {
        // Awarded: the pin is on the task; no proposals: scoring.
        return Ok(Allocation::Score);
    }
    let answered = store::proposals(conn, t.workspace_id, t.id).await?.len();
    if !t.past_deadline && answered < t.eligible_agents.len() {
        store::push_queue_entry(conn, task.id, Some(t.deadline)).await?;
        return Ok(Allocation::Hold);
    }
    let closed = close(conn, &t, actor).await?;
    Ok(match closed.winner_agent_id {
        Some(w) => Allocation::Pinned(w),
        None => Allocation::Score,
    })
}

/// `POST /v1/tenders` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenTender {
    /// The task to allocate by tender (pending or queued, not started).
    pub task_id: Uuid,
    /// Proposal window in milliseconds (100 ms – 1 day; default: the mission's).
    #[serde(default)]
    #[schema(minimum = 100, maximum = 86_400_000)]
    pub window_ms: Option<i32>,
}

/// Opens a tender for a task now (its allocation becomes `tender`).
pub async fn open_for_task(
    pool: &PgPool,
    who: &Principal,
    req: OpenTender,
) -> Result<TenderView, TenderError> {
    require(who, &[Role::Admin, Role::Operator])?;
    open_tender(pool, who, req, None).await
}

/// An agent opens a tender (it is the initiator, `agent:<id>`) for a
/// pending or queued task of the mission it works in: the mission of its
/// attempt token, which the task must belong to.
pub async fn open_for_own_mission(
    pool: &PgPool,
    who: &Principal,
    req: OpenTender,
) -> Result<TenderView, TenderError> {
    require(who, &[Role::Agent])?;
    let scope = who.attempt.ok_or_else(|| {
        crate::auth::Forbidden::from(
            "an agent opens tenders for tasks of the mission it works in: use the attempt token of a dispatch",
        )
    })?;
    open_tender(pool, who, req, Some(scope.mission_id)).await
}

/// Opens a tender for `req.task_id`, which must belong to `within` when given.
async fn open_tender(
    pool: &PgPool,
    who: &Principal,
    req: OpenTender,
    within: Option<Uuid>,
) -> Result<TenderView, TenderError> {
    if let Some(ms) = req.window_ms {
        check_window(ms)?;
    }
    let actor = who.actor();
    let no_task = || TenderError::NotFound {
        what: "task",
        id: req.task_id,
    };
    let mut tx = pool.begin().await?;
    let mission = crate::store::messages::task_mission(&mut tx, who.workspace_id, req.task_id)
        .await?
        .ok_or_else(no_task)?;
    if within.is_some_and(|m| m != mission) {
        return Err(crate::auth::Forbidden(format!(
            "task {} is not in mission {}, the one this token works in",
            req.task_id,
            within.unwrap_or_default()
        ))
        .into());
    }
    let run = missions::lock(&mut tx, who.workspace_id, mission)
        .await?
        .ok_or_else(no_task)?;
    let task = tasks::get(&mut tx, req.task_id).await?;
    if !matches!(task.status(), TaskStatus::Pending | TaskStatus::Queued) {
        return Err(TenderError::TaskStarted {
            key: task.task_key,
            status: task.status,
        });
    }
    if store::lock_latest_for_task(&mut tx, who.workspace_id, task.id)
        .await?
        .is_some_and(|t| t.status == TenderStatus::Open.as_str())
    {
        return Err(TenderError::AlreadyOpen);
    }
    let window = match req.window_ms {
        Some(ms) => ms,
        None => store::mission_window(&mut tx, who.workspace_id, run.id).await?,
    };
    store::set_task_allocation(&mut tx, who.workspace_id, task.id).await?;
    let t = open(&mut tx, &task, window, &actor).await?.ok_or_else(|| {
        TenderError::NoEligibleAgents {
            required_skills: task.required_skills.clone(),
            required_tools: task.required_tools.clone(),
        }
    })?;
    tx.commit().await?;
    Ok(view(&t, &[]))
}

/// One tender with its proposals and ranking.
pub async fn get(pool: &PgPool, who: &Principal, id: Uuid) -> Result<TenderView, TenderError> {
    let mut conn = pool.acquire().await?;
    let t = store::get_tender(&mut conn, who.workspace_id, id)
        .await?
        .ok_or_else(|| no_tender(id))?;
    let proposals = store::proposals(&mut conn, who.workspace_id, id).await?;
    Ok(view(&t, &proposals))
}

/// Tenders of the workspace, newest first.
pub async fn list(
    pool: &PgPool,
    who: &Principal,
    mission_id: Option<Uuid>,
    status: Option<&str>,
) -> Result<Vec<TenderView>, TenderError> {
    let status = status
        .map(|s| s.parse::<TenderStatus>())
        .transpose()?
        .map(|s| s.as_str());
    let mut conn = pool.acquire().await?;
    let rows = store::list_tenders(&mut conn, who.workspace_id, mission_id, status, 200).await?;
    let mut out = Vec::with_capacity(rows.len());
    for t in rows {
        let proposals = store::proposals(&mut conn, who.workspace_id, t.id).await?;
        out.push(view(&t, &proposals));
    }
    Ok(out)
}

/// Awards an open tender now (or closes it as `no_proposals`); awarding an
/// already closed tender returns it unchanged.
pub async fn award(pool: &PgPool, who: &Principal, id: Uuid) -> Result<TenderView, TenderError> {
    require(who, &[Role::Admin, Role::Operator])?;
    award_tender(pool, who, id).await
}

/// An agent awards a tender it initiated (see [`award`]): the award follows
/// the scores, so `expected` (the proposal the agent means to award), when
/// given, must be the best-ranked one.
pub async fn award_own(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    expected: Option<Uuid>,
) -> Result<TenderView, TenderError> {
    require(who, &[Role::Agent])?;
    let current = get(pool, who, id).await?;
    if current.initiator != who.actor() {
        return Err(crate::auth::Forbidden(format!(
            "only the tender's initiator ('{}') may award it",
            current.initiator
        ))
        .into());
    }
    if let Some(p) = expected
        && current.status == TenderStatus::Open
    {
        let best = current
            .ranking
            .first()
            .and_then(|b| current.proposals.iter().find(|x| x.agent_id == b.agent_id));
        match best {
            Some(b) if b.id == p => {}
            Some(b) => {
                return Err(Invalid::new(
                    "winning_proposal_id",
                    format!(
                        "the award follows the scores: the best proposal is {} (by '{}')",
                        b.id, b.agent_id
                    ),
                )
                .into());
            }
            None => {
                return Err(Invalid::new(
                    "winning_proposal_id",
                    "the tender has no proposals to award",
                )
                .into());
            }
        }
    }
    award_tender(pool, who, id).await
}

async fn award_tender(pool: &PgPool, who: &Principal, id: Uuid) -> Result<TenderView, TenderError> {
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let peek = store::get_tender(&mut tx, who.workspace_id, id)
        .await?
        .ok_or_else(|| no_tender(id))?;
    // Lock order: the mission, then the tender (as dispatch does).
    missions::lock(&mut tx, who.workspace_id, peek.mission_id).await?;
    let t = store::lock_tender(&mut tx, who.workspace_id, id)
        .await?
        .ok_or_else(|| no_tender(id))?;
    let t = if t.status == TenderStatus::Open.as_str() {
        let closed = close(&mut tx, &t, &actor).await?;
        store::wake_queue_entry(&mut tx, t.task_id).await?;
        missions::notify_wake(&mut tx).await?;
        closed
    } else {
        t
    };
    let proposals = store::proposals(&mut tx, who.workspace_id, id).await?;
    tx.commit().await?;
    Ok(view(&t, &proposals))
}

/// `PUT /v1/missions/{id}/allocation` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AllocationRequest {
    /// `score` (default of every mission) or `tender`.
    #[schema(schema_with = coordinator_core::contract_net::allocation_schema)]
    pub allocation: String,
    /// Proposal window of its tenders, 100 ms – 1 day (default 30 s).
    #[serde(default)]
    #[schema(minimum = 100, maximum = 86_400_000)]
    pub tender_window_ms: Option<i32>,
}

/// A mission's allocation setting.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AllocationView {
    /// The mission.
    pub mission_id: Uuid,
    /// `score` or `tender`.
    pub allocation: String,
    /// Proposal window of its tenders.
    pub tender_window_ms: i32,
}

/// Sets how a mission's tasks are allocated (tasks already tendered keep theirs).
pub async fn set_allocation(
    pool: &PgPool,
    who: &Principal,
    mission_id: Uuid,
    req: AllocationRequest,
) -> Result<AllocationView, TenderError> {
    require(who, &[Role::Admin, Role::Operator])?;
    check_allocation(&req.allocation, req.tender_window_ms)?;
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let run = missions::lock(&mut tx, who.workspace_id, mission_id)
        .await?
        .ok_or(TenderError::NotFound {
            what: "mission",
            id: mission_id,
        })?;
    if run.status().is_terminal() {
        return Err(TenderError::MissionOver {
            mission_id,
            status: run.status,
        });
    }
    let window = store::set_mission_allocation(
        &mut tx,
        who.workspace_id,
        mission_id,
        &req.allocation,
        req.tender_window_ms,
    )
    .await?;
    events::record(
        &mut tx,
        who.workspace_id,
        WorkspaceEvent::new(
            Some(mission_id),
            None,
            &actor,
            &events::payloads::MissionAllocationChanged {
                allocation: req.allocation.clone(),
                tender_window_ms: window,
            },
        ),
    )
    .await?;
    tx.commit().await?;
    Ok(AllocationView {
        mission_id,
        allocation: req.allocation,
        tender_window_ms: window,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_database_failures_are_retried() {
        assert!(TenderError::Database(sqlx::Error::PoolTimedOut).is_transient());
        assert!(TenderError::Database(sqlx::Error::RowNotFound).is_transient());
        assert!(!TenderError::NotYours.is_transient());
        assert!(!TenderError::Invalid(Invalid::new("confidence", "out of range")).is_transient());
        let late = TenderError::Closed {
            tender_id: Uuid::nil(),
            status: "awarded".into(),
            deadline: String::new(),
        };
        assert!(!late.is_transient());
        assert!(late.to_string().contains("is awarded (deadline"));
    }
}
