//! Editing and removing missions: `PATCH` and `DELETE /v1/missions/{id}`,
//! and the `update_mission` and `delete_mission` tools.
//!
//! The rules (what may change, and when) are the core's
//! ([`coordinator_core::domain::mission_edit`]); this module reads and
//! locks the mission, applies them, and writes the change with its event in
//! one transaction.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use serde_json::json;

use super::{MissionError, MissionView, StaleMission, check_version, human, view};
use crate::{
    auth::Principal,
    domain::{
        MissionStatus, budget,
        mission_edit::{self, Edit, EditField, EditRefusal, Editable},
    },
    store::{
        events::{self, NewEvent, WorkspaceEvent, payloads},
        missions::{self, MissionFields, MissionRow},
        tasks,
    },
};
use coordinator_core::invalid::Invalid;
use coordinator_protocol::agent_events::FieldChange;

/// Why editing or removing a mission was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// A request field is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// No such mission in the workspace.
    #[error("no mission {0}")]
    NotFound(Uuid),
    /// The mission is no longer at the version the caller read.
    #[error(transparent)]
    VersionConflict(#[from] StaleMission),
    /// The mission is finished and the edit would change what steers work.
    #[error(
        "mission {mission_id} is {status}: its {} can no longer change (a finished mission takes only a new title or labels)",
        fields.join(", ")
    )]
    Finished {
        /// The mission.
        mission_id: Uuid,
        /// Its status.
        status: MissionStatus,
        /// The refused fields.
        fields: Vec<&'static str>,
    },
    /// The new budget limit is below the spend.
    #[error("a budget of {limit} is below the {spent} mission {mission_id} already spent")]
    BudgetBelowSpent {
        /// The mission.
        mission_id: Uuid,
        /// The limit asked for.
        limit: f64,
        /// Spent so far.
        spent: f64,
    },
    /// Only a finished mission can be deleted or archived.
    #[error(
        "mission {mission_id} is {status}, not finished: cancel it first (POST /v1/missions/{mission_id}/cancel), then delete it"
    )]
    NotFinished {
        /// The mission.
        mission_id: Uuid,
        /// Its status.
        status: MissionStatus,
    },
    /// The mission changed between reading and writing it.
    #[error("the mission changed while this request ran; retry")]
    Concurrent,
    /// Reading the mission back failed.
    #[error(transparent)]
    Mission(#[from] MissionError),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// `PATCH /v1/missions/{id}` body: the fields to change; a field left out
/// keeps its value, and `null` clears `title`, `budget` or `deadline`.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateMission {
    /// The mission's `version` as read: the change applies only if it is
    /// still at it (409 `version_conflict` otherwise). Left out: no guard.
    #[serde(default)]
    pub version: Option<i64>,
    /// A short name, one line of 1–200 characters; `null` removes it (the goal names the mission again).
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, max_length = 200)]
    pub title: Option<Option<String>>,
    /// Dispatch priority, -100–100 (higher first); queued tasks take it at once. Not on a finished mission.
    #[serde(default)]
    #[schema(minimum = -100, maximum = 100)]
    pub priority: Option<i32>,
    /// Spending limit, not below what is already spent (422 `budget_below_spent`); `null` removes the limit. Not on a finished mission.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<f64>, minimum = 0, maximum = 1_000_000_000)]
    pub budget: Option<Option<f64>>,
    /// When the mission should be done (RFC 3339, in the future; informative); `null` clears it. Not on a finished mission.
    #[serde(default, deserialize_with = "present_time")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub deadline: Option<Option<OffsetDateTime>>,
    /// Labels, replacing the list: at most 20 slugs of 1–64 characters (letters, digits, `-`, `_`, `.`; case folded); `[]` clears them.
    #[serde(default)]
    pub labels: Option<Vec<String>>,
}

/// A field that is present in the body, even as `null` (`Some(None)`).
fn present<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// [`present`] for an RFC 3339 time.
fn present_time<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<OffsetDateTime>>, D::Error> {
    time::serde::rfc3339::option::deserialize(d).map(Some)
}

/// The editable fields of a mission row.
fn editable(run: &MissionRow) -> Editable {
    Editable {
        title: run.title.clone(),
        priority: run.priority,
        budget_limit: run.budget_limit,
        deadline: run.deadline,
        labels: run.labels.clone(),
    }
}

fn refusal(mission_id: Uuid, e: EditRefusal) -> EditError {
    match e {
        EditRefusal::Invalid(e) => e.into(),
        EditRefusal::Finished { status, fields } => EditError::Finished {
            mission_id,
            status,
            fields: fields.into_iter().map(EditField::as_str).collect(),
        },
        EditRefusal::BudgetBelowSpent { limit, spent } => EditError::BudgetBelowSpent {
            mission_id,
            limit,
            spent,
        },
    }
}

async fn locked(
    tx: &mut sqlx::PgConnection,
    who: &Principal,
    id: Uuid,
) -> Result<MissionRow, EditError> {
    missions::lock(tx, who.workspace_id, id)
        .await?
        .ok_or(EditError::NotFound(id))
}

/// Changes a mission's title, priority, budget limit, deadline or labels
/// (see [`UpdateMission`]): checked before the mission is read, guarded by
/// `version` when given, refused for what a finished mission no longer
/// takes, and written with one `mission.updated` event naming each changed
/// field; queued tasks take a new priority in the same transaction. A
/// request that changes nothing writes nothing.
pub async fn update(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    req: UpdateMission,
) -> Result<MissionView, EditError> {
    let edit = mission_edit::check(Edit {
        title: req.title,
        priority: req.priority,
        budget_limit: req.budget,
        deadline: req.deadline,
        labels: req.labels,
    })?;
    let mut tx = pool.begin().await?;
    let run = locked(&mut tx, who, id).await?;
    check_version(&run, req.version)?;
    let from = editable(&run);
    let to = mission_edit::apply(
        &from,
        run.status(),
        run.budget_spent,
        &edit,
        OffsetDateTime::now_utc(),
    )
    .map_err(|e| refusal(id, e))?;
    let changes = mission_edit::changes(&from, &to);
    if changes.is_empty() {
        drop(tx);
        return Ok(view(pool, who.workspace_id, id).await?);
    }
    let fields = MissionFields {
        title: to.title.as_deref(),
        priority: to.priority,
        budget_limit: to.budget_limit,
        deadline: to.deadline,
        labels: &to.labels,
    };
    let version = missions::update_fields(&mut tx, &run, &fields)
        .await?
        .ok_or(EditError::Concurrent)?;
    let changes = changes
        .into_iter()
        .map(|(field, from, to)| (field.as_str().to_owned(), FieldChange { from, to }))
        .collect();
    let actor = who.actor();
    let updated = payloads::MissionUpdated { version, changes };
    events::append(
        &mut tx,
        who.workspace_id,
        NewEvent::new(id, None, None, &actor, &updated),
    )
    .await?;
    if to.budget_limit != from.budget_limit {
        let mut run = run;
        run.budget_limit = to.budget_limit;
        readmit_refused(&mut tx, &mut run, &actor).await?;
    }
    tx.commit().await?;
    Ok(view(pool, who.workspace_id, id).await?)
}

/// A raised budget takes back the tasks the old one refused (those waiting
/// for a person after `task.budget_refused`) whose estimate now fits what
/// is left: they go back to the queue, and admission checks them again.
async fn readmit_refused(
    tx: &mut sqlx::PgConnection,
    run: &mut MissionRow,
    actor: &str,
) -> Result<(), EditError> {
    let refused = tasks::budget_refused(&mut *tx, run.id).await?;
    for t in refused {
        if !budget::admit(
            run.budget_limit,
            budget::Spend {
                spent: run.budget_spent,
                in_flight: 0.0,
            },
            t.estimated_cost,
        ) {
            continue;
        }
        let s = human::Settlement {
            action: human::HumanAction::Retry,
            output: None,
            feedback: None,
            via: Some(json!({ "budget_raised": run.budget_limit })),
        };
        human::settle(&mut *tx, run, &t, s, actor)
            .await
            .map_err(|e| EditError::Mission(MissionError::Unexpected(anyhow::anyhow!("{e}"))))?;
    }
    Ok(())
}

/// What removing a mission did.
#[derive(Debug)]
pub enum Removal {
    /// The mission and what hung off it are gone.
    Deleted,
    /// The mission stays, archived (left out of the list).
    Archived(Box<MissionView>),
}

/// Removes a finished mission (completed, failed or cancelled; a live one
/// must be cancelled first). By default it is deleted with everything that
/// hangs off it (see [`missions::delete`]), and a `mission.deleted`
/// workspace event, which the cascade does not reach, says so; with
/// `archive` it stays with its history but leaves the list, with a
/// `mission.updated` event (archiving an archived mission changes nothing).
pub async fn remove(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    archive: bool,
) -> Result<Removal, EditError> {
    let mut tx = pool.begin().await?;
    let run = locked(&mut tx, who, id).await?;
    let status = run.status();
    if !status.is_terminal() {
        return Err(EditError::NotFinished {
            mission_id: id,
            status,
        });
    }
    let actor = who.actor();
    if archive {
        if run.archived_at.is_none() {
            let (version, at) = missions::archive(&mut tx, &run)
                .await?
                .ok_or(EditError::Concurrent)?;
            let change = FieldChange {
                from: serde_json::Value::Null,
                to: mission_edit::time_value(Some(at)),
            };
            let updated = payloads::MissionUpdated {
                version,
                changes: BTreeMap::from([(EditField::ArchivedAt.as_str().to_owned(), change)]),
            };
            events::append(
                &mut tx,
                who.workspace_id,
                NewEvent::new(id, None, None, &actor, &updated),
            )
            .await?;
            tx.commit().await?;
        }
        let view = view(pool, who.workspace_id, id).await?;
        return Ok(Removal::Archived(Box::new(view)));
    }
    // Written before the delete and without the mission as its run, so the
    // cascade that takes the mission's own log leaves it.
    let deleted = payloads::MissionDeleted {
        mission_id: id,
        goal: run.goal.clone(),
        title: run.title.clone(),
        status,
    };
    events::record(
        &mut tx,
        who.workspace_id,
        WorkspaceEvent::new(None, None, &actor, &deleted),
    )
    .await?;
    if !missions::delete(&mut tx, who.workspace_id, id).await? {
        return Err(EditError::Concurrent);
    }
    tx.commit().await?;
    Ok(Removal::Deleted)
}
