//! Organisation spec use cases: show, upload and remove a workspace's spec,
//! admit agents to roles within their cardinality, and the scorer's verdicts
//! for a task. The spec itself and its rules are pure and live in the core
//! (`coordinator_core::organisation`), re-exported here.

use serde::Serialize;
use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

pub use coordinator_core::organisation::*;

use crate::{
    auth::Principal,
    store::{
        agents::LadderAgent,
        events::{self, WorkspaceEvent},
        organisation::{self as store, SpecRow},
        tasks::TaskRow,
    },
};

/// The stored spec and how the workspace's agents staff it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SpecView {
    /// The spec, version and author.
    #[serde(flatten)]
    pub row: SpecRow,
    /// Every role's staffing, in spec order.
    pub staffing: Vec<Staffing>,
}

/// Why an organisation spec use case failed.
#[derive(Debug, thiserror::Error)]
pub enum OrganisationError {
    /// The uploaded spec has problems (every one of them).
    #[error("{}", spec_problems(.0))]
    InvalidSpec(Vec<SpecProblem>),
    /// The workspace has no spec.
    #[error("this workspace has no organisation spec")]
    NoSpec,
    /// The `version` guard did not match the stored spec.
    #[error(
        "the organisation spec changed since you read it (or does not exist); read it again and retry"
    )]
    VersionConflict {
        /// The version the client expected.
        expected: Option<i64>,
    },
    /// The spec caps the role and it is full.
    #[error(
        "role '{role}' already has {live} live agent(s), the most the organisation spec allows"
    )]
    RoleFull {
        /// The role.
        role: String,
        /// Its live agents.
        live: i64,
        /// The spec's cap.
        max: Option<u32>,
    },
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// The summary of a spec's problems, for people.
fn spec_problems(problems: &[SpecProblem]) -> String {
    format!(
        "the organisation spec is not valid ({} problem{}): {}",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" },
        problems
            .iter()
            .map(|p| p.message.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    )
}

/// The workspace's spec with its staffing; 404 without one.
pub async fn show(pool: &PgPool, workspace_id: Uuid) -> Result<SpecView, OrganisationError> {
    let mut conn = pool.acquire().await?;
    let row = store::get(&mut conn, workspace_id)
        .await?
        .ok_or(OrganisationError::NoSpec)?;
    let live = store::live_roles(&mut conn, workspace_id).await?;
    Ok(SpecView {
        staffing: staffing(&row.spec, &live),
        row,
    })
}

/// Validates and stores a spec (replacing any), guarded by `version` when
/// given (0: only if none exists); logs `org_spec.updated`.
pub async fn upload(
    pool: &PgPool,
    who: &Principal,
    doc: &Value,
    version: Option<i64>,
) -> Result<SpecView, OrganisationError> {
    let spec = OrgSpec::parse(doc).map_err(OrganisationError::InvalidSpec)?;
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let new_version = store::put(&mut tx, who.workspace_id, &spec, version, &actor)
        .await?
        .ok_or(OrganisationError::VersionConflict { expected: version })?;
    events::record(
        &mut tx,
        who.workspace_id,
        WorkspaceEvent::new(
            None,
            None,
            &actor,
            &events::payloads::OrgSpecUpdated {
                version: new_version,
                name: spec.name.clone(),
                roles: spec.roles.len(),
                norms: spec.norms.len(),
                default_modality: spec.default_modality,
            },
        ),
    )
    .await?;
    tx.commit().await?;
    show(pool, who.workspace_id).await
}

/// Removes the spec; 404 if there was none.
pub async fn remove(pool: &PgPool, who: &Principal) -> Result<(), OrganisationError> {
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    if !store::delete(&mut tx, who.workspace_id).await? {
        return Err(OrganisationError::NoSpec);
    }
    events::record(
        &mut tx,
        who.workspace_id,
        WorkspaceEvent::new(None, None, &actor, &events::payloads::OrgSpecRemoved {}),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Refuses (409 `role_full`) to add one more live agent to `role` when the
/// spec caps it and the cap is reached. Takes the workspace's role lock,
/// held until the caller's transaction ends, so two registrations cannot
/// both take the last place.
pub async fn admit_role(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    role: &str,
) -> Result<(), OrganisationError> {
    store::lock_roles(conn, workspace_id).await?;
    let Some(row) = store::get(conn, workspace_id).await? else {
        return Ok(());
    };
    let live = store::live_roles(conn, workspace_id).await?;
    let n = live.get(&key(role)).copied().unwrap_or(0);
    if row.spec.room_for(role, n) {
        return Ok(());
    }
    Err(OrganisationError::RoleFull {
        role: role.to_owned(),
        live: n,
        max: row.spec.role(role).and_then(|r| r.cardinality.max),
    })
}

/// The agents whose role the workspace's spec does not prohibit from a task
/// (all of them without a spec): who a tender may call and the escalation
/// ladder may count on, in step with the scorer.
pub async fn not_prohibited(
    conn: &mut PgConnection,
    task: &TaskRow,
    agents: Vec<LadderAgent>,
) -> sqlx::Result<Vec<LadderAgent>> {
    let Some(row) = store::get(conn, task.workspace_id).await? else {
        return Ok(agents);
    };
    Ok(agents
        .into_iter()
        .filter(|a| {
            row.spec.verdict(&a.role, &task.task_type, &task.task_key) != Deontic::Prohibited
        })
        .collect())
}

/// One agent's verdict for a task, as [`verdicts`] reports it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AgentVerdict {
    /// Agent.
    pub agent_id: String,
    /// Its role.
    pub role: String,
    /// What the spec says of it for the task.
    pub verdict: Deontic,
}

/// What the spec says of every live agent for a task of this type and key
/// (the scorer's view, so an assignment can be explained).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Verdicts {
    /// Goals of the spec the task serves (none: unconstrained).
    pub goals: Vec<String>,
    /// Live agents, by id.
    pub agents: Vec<AgentVerdict>,
}

/// See [`Verdicts`]; 404 without a spec.
pub async fn verdicts(
    pool: &PgPool,
    workspace_id: Uuid,
    task_type: &str,
    task_key: &str,
) -> Result<Verdicts, OrganisationError> {
    let mut conn = pool.acquire().await?;
    let row = store::get(&mut conn, workspace_id)
        .await?
        .ok_or(OrganisationError::NoSpec)?;
    let agents = store::live_agents(&mut conn, workspace_id).await?;
    Ok(Verdicts {
        goals: row.spec.goals_for(task_type, task_key),
        agents: agents
            .into_iter()
            .map(|(agent_id, role)| AgentVerdict {
                verdict: row.spec.verdict(&role, task_type, task_key),
                agent_id,
                role,
            })
            .collect(),
    })
}
