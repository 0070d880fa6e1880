//! Team decision use cases: propose, vote, commit (on the last vote or when
//! the window closes), cancel, and the ADR recorded on the mission's log.
//! The rules (eligibility, plurality with the orchestrator tie-break, the
//! lifecycle) are pure and live in the core (`coordinator_core::team_decisions`,
//! re-exported here).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use coordinator_core::{domain::IllegalTransition, invalid::Invalid, text::Text};

use crate::{
    auth::{Principal, Role},
    store::{
        events::{self, NewEvent, payloads},
        missions,
        team_decisions::{self as store, Close, TeamDecisionRow},
    },
};

pub use coordinator_core::team_decisions::*;

/// Why a team decision use case failed.
#[derive(Debug, thiserror::Error)]
pub enum TeamDecisionError {
    /// A field of the request is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The caller's role may not do this.
    #[error("{0}")]
    Forbidden(#[from] crate::auth::Forbidden),
    /// No such mission or decision in the workspace.
    #[error("no {what} {id}")]
    NotFound {
        /// `mission` or `team decision`.
        what: &'static str,
        /// Its id.
        id: Uuid,
    },
    /// The client-chosen id names another decision.
    #[error("team decision {id} exists with other content")]
    IdReused {
        /// The id.
        id: Uuid,
    },
    /// Nobody could vote: the mission has no assigned agents yet.
    #[error("no agent is assigned to this mission's tasks yet; name eligible_agents")]
    NoEligibleAgents,
    /// Another writer got there first.
    #[error("{0}")]
    ConcurrentUpdate(&'static str),
    /// The decision's state does not allow it.
    #[error(transparent)]
    IllegalTransition(#[from] IllegalTransition),
    /// The voting agent is not among the eligible ones.
    #[error("agent '{agent_id}' is not eligible to vote on this decision")]
    NotEligible {
        /// The voter.
        agent_id: String,
    },
    /// Only a committed decision has an ADR.
    #[error("team decision {id} is {status}; only a committed one has an ADR")]
    NotCommitted {
        /// The decision.
        id: Uuid,
        /// Its status.
        status: String,
    },
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Refuses unless the caller has one of `roles`.
fn require(who: &Principal, roles: &[Role]) -> Result<(), TeamDecisionError> {
    who.require(roles).map_err(TeamDecisionError::from)
}

/// The 404 for a decision.
fn no_decision(id: Uuid) -> TeamDecisionError {
    TeamDecisionError::NotFound {
        what: "team decision",
        id,
    }
}

/// The 404 for a mission.
fn no_mission(id: Uuid) -> TeamDecisionError {
    TeamDecisionError::NotFound {
        what: "mission",
        id,
    }
}

/// `POST /v1/missions/{id}/team-decisions` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeRequest {
    /// Client-chosen id, for idempotent retries.
    #[serde(default)]
    pub id: Option<Uuid>,
    /// What is to be decided (1–500 characters).
    #[schema(min_length = 1, max_length = 500, pattern = r"\S")]
    pub topic: String,
    /// 2–10 options with unique labels.
    #[schema(min_items = 2, max_items = 10)]
    pub options: Vec<TeamOption>,
    /// Facts, links, measurements (at most 50 entries, each 1–2000 characters).
    #[serde(default)]
    #[schema(max_items = 50, min_length = 1, max_length = 2000)]
    pub evidence: Vec<String>,
    /// The proposer's recommendation (a label); it breaks ties.
    #[serde(default)]
    pub recommended_option: Option<String>,
    /// Who may vote (default: the agents assigned to the mission's tasks).
    #[serde(default)]
    #[schema(min_items = 1, max_items = 100)]
    pub eligible_agents: Option<Vec<String>>,
    /// Voting window in seconds (1–604800, default 300).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 604_800)]
    pub window_secs: Option<u64>,
    /// A (blocked) task of the mission that raises it.
    #[serde(default)]
    pub task_id: Option<Uuid>,
}

/// `POST /v1/team-decisions/{id}/votes` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VoteRequest {
    /// The option's label.
    pub option: String,
    /// Why (at most 2000 characters).
    #[serde(default)]
    pub rationale: Option<String>,
}

/// `POST /v1/team-decisions/{id}/cancel` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelRequest {
    /// Why (1–2000 characters).
    #[schema(min_length = 1, max_length = 2000, pattern = r"\S")]
    pub reason: String,
}

/// A vote as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct VoteView {
    /// Voter.
    pub agent_id: String,
    /// Option label.
    pub option: String,
    /// Why.
    pub rationale: Option<String>,
    /// When (last change).
    #[serde(with = "time::serde::rfc3339")]
    pub cast_at: OffsetDateTime,
}

/// A team decision as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TeamDecisionView {
    /// Id.
    pub id: Uuid,
    /// Mission.
    pub mission_id: Uuid,
    /// The task that raised it.
    pub task_id: Option<Uuid>,
    /// Who proposed it.
    pub proposer: String,
    /// What is decided.
    pub topic: String,
    /// Options.
    pub options: Vec<TeamOption>,
    /// Evidence.
    pub evidence: Vec<String>,
    /// The proposer's recommendation.
    pub recommended_option: Option<String>,
    /// Who may vote.
    pub eligible_agents: Vec<String>,
    /// When voting ends.
    #[serde(with = "time::serde::rfc3339")]
    pub closes_at: OffsetDateTime,
    /// `open`, `committed` or `cancelled`.
    pub status: TeamDecisionStatus,
    /// Votes so far.
    pub votes: Vec<VoteView>,
    /// The chosen option (committed).
    pub committed_option: Option<String>,
    /// Whether the orchestrator broke a tie.
    pub tie_broken: bool,
    /// Votes per option at commit.
    pub tally: Value,
    /// Why it closed so.
    pub rationale: Option<String>,
    /// Who closed it.
    pub closed_by: Option<String>,
    /// When.
    #[serde(with = "time::serde::rfc3339::option")]
    pub closed_at: Option<OffsetDateTime>,
    /// Write guard.
    pub version: i64,
    /// Proposed.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl TeamDecisionRow {
    /// The parsed status.
    pub fn status(&self) -> TeamDecisionStatus {
        self.status.parse().unwrap_or(TeamDecisionStatus::Open)
    }

    fn options(&self) -> Vec<TeamOption> {
        serde_json::from_value(self.options.clone()).unwrap_or_default()
    }

    /// The API view, with its votes.
    pub fn view(&self, votes: &[VoteRow]) -> TeamDecisionView {
        TeamDecisionView {
            id: self.id,
            mission_id: self.mission_id,
            task_id: self.task_id,
            proposer: self.proposer.clone(),
            topic: self.topic.clone(),
            options: self.options(),
            evidence: self.evidence.clone(),
            recommended_option: self.recommended_option.clone(),
            eligible_agents: self.eligible.clone(),
            closes_at: self.closes_at,
            status: self.status(),
            votes: votes
                .iter()
                .map(|v| VoteView {
                    agent_id: v.agent_id.clone(),
                    option: v.option.clone(),
                    rationale: v.rationale.clone(),
                    cast_at: v.cast_at,
                })
                .collect(),
            committed_option: self.committed_option.clone(),
            tie_broken: self.tie_broken,
            tally: self.tally.clone(),
            rationale: self.rationale.clone(),
            closed_by: self.closed_by.clone(),
            closed_at: self.closed_at,
            version: self.version,
            created_at: self.created_at,
        }
    }
}

/// What a team decision is about.
pub const TOPIC: Text = Text::required(500);
/// An option's label (and a vote's choice of one).
pub const LABEL: Text = Text::required(200);
/// An option's description.
pub const OPTION_DESCRIPTION: Text = Text::optional(2000);
/// One piece of evidence.
pub const EVIDENCE: Text = Text::required(2000);
/// How many pieces of evidence a proposal may carry.
pub const MAX_EVIDENCE: usize = 50;
/// Why a vote or a cancellation.
pub const REASON: Text = Text::required(2000);
/// A vote's rationale.
pub const RATIONALE: Text = Text::optional(2000);

fn validate(req: &ProposeRequest) -> Result<(), Invalid> {
    TOPIC.check("topic", &req.topic)?;
    if !(2..=10).contains(&req.options.len()) {
        return Err(Invalid::new("options", "give 2–10 options"));
    }
    let mut labels = std::collections::BTreeSet::new();
    for o in &req.options {
        LABEL.check("options.label", &o.label)?;
        OPTION_DESCRIPTION.check("options.description", &o.description)?;
        if !labels.insert(o.label.trim()) {
            return Err(Invalid::unprocessable(
                "duplicate_option",
                "options.label",
                format!("option '{}' is listed twice", o.label),
            ));
        }
    }
    if req.evidence.len() > MAX_EVIDENCE {
        return Err(Invalid::new(
            "evidence",
            format!("at most {MAX_EVIDENCE} pieces of evidence"),
        ));
    }
    EVIDENCE.check_each("evidence", &req.evidence)?;
    if let Some(r) = &req.recommended_option
        && !req.options.iter().any(|o| o.label.trim() == r.trim())
    {
        return Err(Invalid::unprocessable(
            "unknown_option",
            "recommended_option",
            "recommended_option must be the label of one of the options",
        ));
    }
    if let Some(w) = req.window_secs
        && !(1..=7 * 24 * 3600).contains(&w)
    {
        return Err(Invalid::new(
            "window_secs",
            "window_secs must be between 1 and 604800",
        ));
    }
    if let Some(e) = &req.eligible_agents
        && (e.is_empty() || e.len() > 100)
    {
        return Err(Invalid::new(
            "eligible_agents",
            "eligible_agents must name 1–100 agents",
        ));
    }
    Ok(())
}

/// Puts a decision to the team.
pub async fn propose(
    pool: &PgPool,
    who: &Principal,
    mission_id: Uuid,
    req: ProposeRequest,
) -> Result<(TeamDecisionView, bool), TeamDecisionError> {
    require(who, &[Role::Admin, Role::Operator, Role::Agent])?;
    validate(&req)?;
    let mut tx = pool.begin().await?;
    missions::lock(&mut tx, who.workspace_id, mission_id)
        .await?
        .ok_or_else(|| no_mission(mission_id))?;
    let id = req.id.unwrap_or_else(Uuid::new_v4);
    if let Some(existing) = store::get(&mut tx, who.workspace_id, id, false).await? {
        if existing.mission_id == mission_id && existing.topic == req.topic.trim() {
            let votes = store::votes(&mut tx, id).await?;
            return Ok((existing.view(&votes), false));
        }
        return Err(TeamDecisionError::IdReused { id });
    }
    if let Some(t) = req.task_id
        && !store::task_in_mission(&mut tx, mission_id, t).await?
    {
        return Err(Invalid::unprocessable(
            "unknown_task",
            "task_id",
            format!("task {t} is not a task of mission {mission_id}"),
        )
        .into());
    }
    let mut eligible = match &req.eligible_agents {
        Some(e) => e.iter().map(|a| a.trim().to_owned()).collect(),
        None => store::mission_agents(&mut tx, who.workspace_id, mission_id).await?,
    };
    eligible.sort();
    eligible.dedup();
    if eligible.is_empty() {
        return Err(TeamDecisionError::NoEligibleAgents);
    }
    let options: Vec<TeamOption> = req
        .options
        .iter()
        .map(|o| TeamOption {
            label: o.label.trim().to_owned(),
            description: o.description.trim().to_owned(),
        })
        .collect();
    let options_json = serde_json::to_value(&options).unwrap_or_default();
    let actor = who.actor();
    let recommended = req.recommended_option.as_deref().map(str::trim);
    let row = store::insert(
        &mut tx,
        store::NewTeamDecision {
            id,
            workspace_id: who.workspace_id,
            mission_id,
            task_id: req.task_id,
            proposer: &actor,
            topic: req.topic.trim(),
            options: &options_json,
            evidence: &req.evidence,
            recommended_option: recommended,
            eligible: &eligible,
            window_secs: req.window_secs.unwrap_or(300) as f64,
        },
    )
    .await?
    .ok_or(TeamDecisionError::ConcurrentUpdate("the id was just taken"))?;
    events::append(
        &mut tx,
        who.workspace_id,
        NewEvent::new(
            mission_id,
            req.task_id,
            None,
            &actor,
            &payloads::TeamDecisionProposed {
                team_decision_id: id,
                topic: row.topic.clone(),
                options,
                evidence: row.evidence.clone(),
                recommended_option: row.recommended_option.clone(),
                eligible_agents: row.eligible.clone(),
                closes_at: row.closes_at.unix_timestamp(),
            },
        ),
    )
    .await?;
    tx.commit().await?;
    Ok((row.view(&[]), true))
}

/// Commits `row` (locked, open) with its current votes; writes the ADR and
/// the event. `None` when another writer closed it first.
async fn commit_locked(
    conn: &mut PgConnection,
    row: &TeamDecisionRow,
    votes: &[VoteRow],
    closed_by: &str,
    because: &str,
) -> Result<Option<TeamDecisionRow>, TeamDecisionError> {
    row.status().next(TeamDecisionEvent::Commit)?;
    let options = row.options();
    let pairs: Vec<(String, String)> = votes
        .iter()
        .map(|v| (v.agent_id.clone(), v.option.clone()))
        .collect();
    let c = count(&options, &pairs, row.recommended_option.as_deref());
    let now = OffsetDateTime::now_utc();
    let adr = render_adr(&AdrInput {
        id: row.id,
        topic: &row.topic,
        mission_id: row.mission_id,
        task_id: row.task_id,
        proposer: &row.proposer,
        options: &options,
        evidence: &row.evidence,
        recommended: row.recommended_option.as_deref(),
        eligible: &row.eligible,
        votes,
        count: &c,
        committed_at: now,
        closed_because: because,
    });
    let tally = serde_json::to_value(&c.tally).unwrap_or_default();
    let Some(done) = store::close(
        conn,
        row.id,
        row.version,
        Close {
            status: TeamDecisionStatus::Committed.as_str(),
            committed_option: Some(&c.chosen),
            tie_broken: c.tie_broken,
            tally: &tally,
            rationale: because,
            adr: Some(&adr),
            closed_by,
            closed_at: now,
        },
    )
    .await?
    else {
        return Ok(None);
    };
    events::append(
        conn,
        row.workspace_id,
        NewEvent::new(
            row.mission_id,
            row.task_id,
            None,
            closed_by,
            &payloads::TeamDecisionCommitted {
                team_decision_id: row.id,
                topic: row.topic.clone(),
                committed_option: c.chosen,
                tie_broken: c.tie_broken,
                tally: c.tally,
                adr,
            },
        ),
    )
    .await?;
    Ok(Some(done))
}

/// Commits the decision if it is open and its window has closed; true when
/// this call committed it. Readers and the engine's sweep both come here, so
/// a decision settles the same way whoever notices first; the row lock and
/// the `version` guard let only one of them write the commit.
pub async fn settle_if_due(
    pool: &PgPool,
    workspace_id: Uuid,
    id: Uuid,
) -> Result<bool, TeamDecisionError> {
    let mut tx = pool.begin().await?;
    let Some(peek) = store::get(&mut tx, workspace_id, id, false).await? else {
        return Ok(false);
    };
    if peek.status() != TeamDecisionStatus::Open || !store::window_closed(&mut tx, id).await? {
        return Ok(false);
    }
    // Lock order: mission, then decision (as the vote path).
    missions::lock(&mut tx, workspace_id, peek.mission_id).await?;
    let Some(row) = store::get(&mut tx, workspace_id, id, true).await? else {
        return Ok(false);
    };
    if row.status() != TeamDecisionStatus::Open {
        return Ok(false);
    }
    let votes = store::votes(&mut tx, id).await?;
    let committed = commit_locked(
        &mut tx,
        &row,
        &votes,
        "orchestrator",
        "the voting window closed",
    )
    .await?
    .is_some();
    tx.commit().await?;
    Ok(committed)
}

/// One decision, with its votes (an overdue one is committed first).
pub async fn get(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
) -> Result<TeamDecisionView, TeamDecisionError> {
    settle_if_due(pool, who.workspace_id, id).await?;
    let mut conn = pool.acquire().await?;
    let row = store::get(&mut conn, who.workspace_id, id, false)
        .await?
        .ok_or_else(|| no_decision(id))?;
    let votes = store::votes(&mut conn, id).await?;
    Ok(row.view(&votes))
}

/// The ADR of a committed decision (409 while open or when cancelled).
pub async fn adr(pool: &PgPool, who: &Principal, id: Uuid) -> Result<String, TeamDecisionError> {
    settle_if_due(pool, who.workspace_id, id).await?;
    let mut conn = pool.acquire().await?;
    let row = store::get(&mut conn, who.workspace_id, id, false)
        .await?
        .ok_or_else(|| no_decision(id))?;
    row.adr.ok_or(TeamDecisionError::NotCommitted {
        id,
        status: row.status,
    })
}

/// A mission's decisions, oldest first (overdue ones are committed first).
pub async fn list(
    pool: &PgPool,
    who: &Principal,
    mission_id: Uuid,
) -> Result<Vec<TeamDecisionView>, TeamDecisionError> {
    let overdue = {
        let mut conn = pool.acquire().await?;
        missions::get(pool, who.workspace_id, mission_id)
            .await?
            .ok_or_else(|| no_mission(mission_id))?;
        store::overdue(&mut conn, who.workspace_id, mission_id).await?
    };
    for id in overdue {
        settle_if_due(pool, who.workspace_id, id).await?;
    }
    let mut conn = pool.acquire().await?;
    let rows = store::list_for_mission(&mut conn, who.workspace_id, mission_id).await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let votes = store::votes(&mut conn, r.id).await?;
        out.push(r.view(&votes));
    }
    Ok(out)
}

/// An eligible agent votes as itself (or changes its vote). When every
/// eligible agent has voted, the decision commits in the same transaction.
pub async fn vote(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    req: VoteRequest,
) -> Result<TeamDecisionView, TeamDecisionError> {
    require(who, &[Role::Agent])?;
    let agent = who.agent_id.clone().unwrap_or_default();
    LABEL.check("option", &req.option)?;
    if let Some(r) = &req.rationale {
        RATIONALE.check("rationale", r)?;
    }
    settle_if_due(pool, who.workspace_id, id).await?;
    let mut tx = pool.begin().await?;
    let peek = store::get(&mut tx, who.workspace_id, id, false)
        .await?
        .ok_or_else(|| no_decision(id))?;
    missions::lock(&mut tx, who.workspace_id, peek.mission_id).await?;
    let row = store::get(&mut tx, who.workspace_id, id, true)
        .await?
        .ok_or_else(|| no_decision(id))?;
    row.status().next(TeamDecisionEvent::Vote)?;
    if !row.eligible.contains(&agent) {
        return Err(TeamDecisionError::NotEligible { agent_id: agent });
    }
    let option = req.option.trim();
    if !row.options().iter().any(|o| o.label == option) {
        return Err(Invalid::new("option", format!("'{option}' is not one of the options")).into());
    }
    store::upsert_vote(&mut tx, id, &agent, option, req.rationale.as_deref()).await?;
    let actor = who.actor();
    events::append(
        &mut tx,
        who.workspace_id,
        NewEvent::new(
            row.mission_id,
            row.task_id,
            None,
            &actor,
            &payloads::TeamDecisionVoted {
                team_decision_id: id,
                agent_id: agent.clone(),
                option: option.to_owned(),
                rationale: req.rationale.clone(),
            },
        ),
    )
    .await?;
    let votes = store::votes(&mut tx, id).await?;
    let row = if row
        .eligible
        .iter()
        .all(|e| votes.iter().any(|v| &v.agent_id == e))
    {
        commit_locked(
            &mut tx,
            &row,
            &votes,
            "orchestrator",
            "every eligible agent voted",
        )
        .await?
        .ok_or(TeamDecisionError::ConcurrentUpdate(
            "the decision changed meanwhile",
        ))?
    } else {
        row
    };
    tx.commit().await?;
    Ok(row.view(&votes))
}

/// Withdraws an open decision (its proposer, an admin or an operator).
pub async fn cancel(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    req: CancelRequest,
) -> Result<TeamDecisionView, TeamDecisionError> {
    REASON.check("reason", &req.reason)?;
    settle_if_due(pool, who.workspace_id, id).await?;
    let mut tx = pool.begin().await?;
    let peek = store::get(&mut tx, who.workspace_id, id, false)
        .await?
        .ok_or_else(|| no_decision(id))?;
    let actor = who.actor();
    if peek.proposer != actor {
        require(who, &[Role::Admin, Role::Operator])?;
    }
    missions::lock(&mut tx, who.workspace_id, peek.mission_id).await?;
    let row = store::get(&mut tx, who.workspace_id, id, true)
        .await?
        .ok_or_else(|| no_decision(id))?;
    row.status().next(TeamDecisionEvent::Cancel)?;
    let done = store::close(
        &mut tx,
        id,
        row.version,
        Close {
            status: TeamDecisionStatus::Cancelled.as_str(),
            committed_option: None,
            tie_broken: false,
            tally: &json!({}),
            rationale: req.reason.trim(),
            adr: None,
            closed_by: &actor,
            closed_at: OffsetDateTime::now_utc(),
        },
    )
    .await?
    .ok_or(TeamDecisionError::ConcurrentUpdate(
        "the decision changed meanwhile",
    ))?;
    events::append(
        &mut tx,
        who.workspace_id,
        NewEvent::new(
            row.mission_id,
            row.task_id,
            None,
            &actor,
            &payloads::TeamDecisionCancelled {
                team_decision_id: id,
                reason: req.reason.trim().to_owned(),
            },
        ),
    )
    .await?;
    let votes = store::votes(&mut tx, id).await?;
    tx.commit().await?;
    Ok(done.view(&votes))
}
