//! Use cases of BDI state: each takes a transaction, applies a rule from
//! [`super::rules`], writes the rows and their workspace event together.
//! Bad input is refused before anything is written.

use sqlx::PgConnection;
use uuid::Uuid;

use super::rules::{
    self, BeliefCategory, BeliefOutcome, CommitmentStrategy, DesireConflict, DesireKind,
    DesireLink, DesireProfile, GoalStatus, GoalTier, IntentionStatus, PriorityInputs,
    ReconsiderInputs, Verdict,
};
use crate::{
    domain::{IllegalTransition, UnknownValue},
    store::{
        bdi::{
            self as store, BeliefView, DesireView, DropRecord, GoalView, IntentionView, NewDesire,
            NewGoal, NewIntention, NewRevision, RevisionView,
        },
        events::{self, EventPayload, WorkspaceEvent, payloads},
    },
};

use coordinator_core::{invalid::Invalid, text::Text};

/// Why a BDI use case (beliefs, desires, goals, intentions, missions as
/// intentions) refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum BdiError {
    /// A request field is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// A number that must lie in [0, 1] does not.
    #[error("{field} must be a number in [0, 1], not {value}")]
    OutOfRange {
        /// The field.
        field: String,
        /// What was given.
        value: f64,
    },
    /// A desire's kind and the desires it serves disagree.
    #[error("{0}")]
    InvalidDesire(&'static str),
    /// A named desire is not one of the agent's (active) desires.
    #[error("{why}")]
    UnknownDesire {
        /// The desire named.
        desire_id: Uuid,
        /// What is wrong with it.
        why: String,
    },
    /// A named goal is not one of the agent's goals.
    #[error("{field} {goal_id} is not a goal of '{agent_id}'")]
    UnknownGoal {
        /// `parent_goal_id` or `goal_id`.
        field: &'static str,
        /// The goal named.
        goal_id: Uuid,
        /// The agent.
        agent_id: String,
    },
    /// A goal's tier cannot sit under its parent's.
    #[error(
        "a {tier} goal cannot sit under a {parent_tier} goal (strategic → tactical → operational)"
    )]
    InvalidTier {
        /// The new goal's tier.
        tier: GoalTier,
        /// The parent's tier.
        parent_tier: GoalTier,
    },
    /// The agent is not registered.
    #[error("no agent '{0}'")]
    UnknownAgent(String),
    /// The agent has no such desire, goal or intention.
    #[error("no {what} {id} of '{agent_id}'")]
    NotFound {
        /// `desire`, `goal` or `intention`.
        what: &'static str,
        /// Its id.
        id: Uuid,
        /// The agent.
        agent_id: String,
    },
    /// The row changed since the version the caller read.
    #[error("{what} {id} changed meanwhile (now version {current}); reload and retry")]
    Stale {
        /// `desire`, `goal` or `intention`.
        what: &'static str,
        /// Its id.
        id: Uuid,
        /// The version there is now.
        current: i64,
    },
    /// A desire or intention is not in a status that allows the change.
    #[error("{message}")]
    WrongState {
        /// `desire` or `intention`.
        entity: &'static str,
        /// Its status.
        status: String,
        /// What is refused.
        message: String,
    },
    /// A goal named as parent or target is not active.
    #[error("{}goal {id} is {status}", if *.parent { "parent " } else { "" })]
    InactiveGoal {
        /// Whether it was named as the parent.
        parent: bool,
        /// The goal.
        id: Uuid,
        /// Its status.
        status: String,
    },
    /// A stored value is not one this build knows.
    #[error(transparent)]
    UnknownValue(#[from] UnknownValue),
    /// The lifecycle refuses the move.
    #[error(transparent)]
    IllegalTransition(#[from] IllegalTransition),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// Anything else.
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// A 422 `invalid_value` for a number outside [0, 1].
pub fn out_of_range(field: &str, value: f64) -> BdiError {
    BdiError::OutOfRange {
        field: field.to_owned(),
        value,
    }
}

/// A belief's subject.
pub const SUBJECT: Text = Text::required(256);
/// A belief's content.
pub const CONTENT: Text = Text::required(4000);
/// Why a belief changed.
pub const BELIEF_REASON: Text = Text::optional(1000);
/// A desire's, goal's or intention's description.
pub const DESCRIPTION: Text = Text::required(4000);
/// A desire's strategy.
pub const STRATEGY: Text = Text::required(200);
/// A desire's resources.
pub const RESOURCE: Text = Text::required(200);
/// How many resources a desire may name.
pub const MAX_RESOURCES: usize = 50;
/// What reaching a goal means.
pub const SUCCESS_CRITERIA: Text = Text::optional(4000);
/// Why a desire is dropped.
pub const REASON: Text = Text::required(1000);

fn stale(what: &'static str, id: Uuid, current: i64) -> BdiError {
    BdiError::Stale { what, id, current }
}

/// Refuses a caller-supplied version that is not the current one.
fn check_version(
    what: &'static str,
    id: Uuid,
    current: i64,
    given: Option<i64>,
) -> Result<(), BdiError> {
    match given {
        Some(v) if v != current => Err(stale(what, id, current)),
        _ => Ok(()),
    }
}

/// 404 unless the agent is registered in the workspace.
pub async fn require_agent(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
) -> Result<(), BdiError> {
    if crate::store::messages::agent_exists(&mut *conn, workspace_id, agent_id).await? {
        Ok(())
    } else {
        Err(BdiError::UnknownAgent(agent_id.to_owned()))
    }
}

async fn record<P: EventPayload>(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    actor: &str,
    payload: &P,
) -> sqlx::Result<()> {
    events::record(
        conn,
        workspace_id,
        WorkspaceEvent::new(None, None, actor, payload),
    )
    .await
}

// ---------------------------------------------------------------- beliefs

/// A belief write.
#[derive(Debug, Clone)]
pub struct BeliefWrite {
    /// Category.
    pub category: BeliefCategory,
    /// Subject (1–256 characters).
    pub subject: String,
    /// Content (1–4000 characters).
    pub content: String,
    /// Certainty in [0, 1].
    pub certainty: f64,
    /// Why (at most 1000 characters).
    pub reason: String,
}

/// Writes a belief under the seed's revision rule ([`rules::revise`]: a
/// contradiction wins only with higher certainty, a corroboration never
/// lowers certainty) and logs the revision, whatever its outcome.
pub async fn update_belief(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    w: BeliefWrite,
    actor: &str,
) -> Result<(BeliefOutcome, BeliefView, RevisionView), BdiError> {
    if !rules::unit_interval(w.certainty) {
        return Err(out_of_range("certainty", w.certainty));
    }
    SUBJECT.check("subject", &w.subject)?;
    CONTENT.check("content", &w.content)?;
    BELIEF_REASON.check("reason", &w.reason)?;
    require_agent(&mut *conn, workspace_id, agent_id).await?;
    let category = w.category.as_str();
    let mut existing =
        store::lock_belief_by_key(&mut *conn, workspace_id, agent_id, category, &w.subject).await?;
    if existing.is_none() {
        match store::insert_belief(
            &mut *conn,
            workspace_id,
            agent_id,
            category,
            &w.subject,
            &w.content,
            w.certainty,
        )
        .await?
        {
            Some(created) => {
                let rev = store::insert_revision(
                    &mut *conn,
                    workspace_id,
                    NewRevision {
                        belief_id: created.id,
                        outcome: BeliefOutcome::Created.as_str(),
                        old: None,
                        new_content: &w.content,
                        new_certainty: w.certainty,
                        reason: &w.reason,
                        actor,
                    },
                )
                .await?;
                record_belief(
                    &mut *conn,
                    workspace_id,
                    &created,
                    BeliefOutcome::Created,
                    actor,
                )
                .await?;
                return Ok((BeliefOutcome::Created, created, rev));
            }
            // Someone inserted it meanwhile: revise theirs.
            None => {
                existing = store::lock_belief_by_key(
                    &mut *conn,
                    workspace_id,
                    agent_id,
                    category,
                    &w.subject,
                )
                .await?;
            }
        }
    }
    let Some(old) = existing else {
        return Err(BdiError::Unexpected(anyhow::anyhow!(
            "belief vanished between insert and lock"
        )));
    };
    let held = rules::HeldBelief {
        content: &old.content,
        certainty: old.certainty,
        conflict: old.conflict,
    };
    let rules::Revision { outcome, belief } = rules::revise(Some(held), &w.content, w.certainty);
    let updated = store::update_belief(
        &mut *conn,
        workspace_id,
        old.id,
        old.version,
        belief.content,
        belief.certainty,
        belief.conflict,
    )
    .await?
    .ok_or_else(|| stale("belief", old.id, old.version))?;
    let rev = store::insert_revision(
        &mut *conn,
        workspace_id,
        NewRevision {
            belief_id: old.id,
            outcome: outcome.as_str(),
            old: Some((&old.content, old.certainty)),
            new_content: &w.content,
            new_certainty: w.certainty,
            reason: &w.reason,
            actor,
        },
    )
    .await?;
    record_belief(&mut *conn, workspace_id, &updated, outcome, actor).await?;
    Ok((outcome, updated, rev))
}

async fn record_belief(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    b: &BeliefView,
    outcome: BeliefOutcome,
    actor: &str,
) -> sqlx::Result<()> {
    let event = payloads::BdiBeliefRevised {
        agent_id: b.agent_id.clone(),
        belief_id: b.id,
        category: b.category.clone(),
        subject: b.subject.clone(),
        outcome,
        certainty: b.certainty,
        conflict: b.conflict,
    };
    record(conn, workspace_id, actor, &event).await
}

// ---------------------------------------------------------------- desires

/// A new desire.
#[derive(Debug, Clone)]
pub struct DesireCreate {
    /// What (1–4000 characters).
    pub description: String,
    /// Terminal or instrumental.
    pub kind: DesireKind,
    /// Formula components.
    pub inputs: PriorityInputs,
    /// Desires served (instrumental only, at least one).
    pub serves: Vec<Uuid>,
    /// Scarce resources.
    pub resources: Vec<String>,
    /// Strategic direction.
    pub strategy: Option<String>,
    /// Desires it rules out.
    pub incompatible_with: Vec<Uuid>,
}

/// Creates a desire with its formula priority and reports its conflicts
/// with the agent's active desires (seed §6.3).
pub async fn create_desire(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    d: DesireCreate,
    actor: &str,
) -> Result<(DesireView, Vec<DesireConflict>), BdiError> {
    if let Some((field, v)) = d.inputs.invalid_component() {
        return Err(out_of_range(field, v));
    }
    DESCRIPTION.check("description", &d.description)?;
    if d.resources.len() > MAX_RESOURCES {
        return Err(Invalid::new("resources", format!("at most {MAX_RESOURCES} resources")).into());
    }
    RESOURCE.check_each("resources", &d.resources)?;
    if let Some(s) = &d.strategy {
        STRATEGY.check("strategy", s)?;
    }
    match d.kind {
        DesireKind::Terminal if !d.serves.is_empty() => {
            return Err(BdiError::InvalidDesire(
                "a terminal desire serves no other desire; make it instrumental",
            ));
        }
        DesireKind::Instrumental if d.serves.is_empty() => {
            return Err(BdiError::InvalidDesire(
                "an instrumental desire must name the desires it serves",
            ));
        }
        _ => {}
    }
    require_agent(&mut *conn, workspace_id, agent_id).await?;
    let all = store::lock_desires(&mut *conn, workspace_id, agent_id).await?;
    for s in d.serves.iter().chain(&d.incompatible_with) {
        if !all.iter().any(|e| e.id == *s && e.status == "active") {
            return Err(BdiError::UnknownDesire {
                desire_id: *s,
                why: format!("{s} is not an active desire of '{agent_id}'"),
            });
        }
    }
    let id = Uuid::new_v4();
    let profile = |e: &DesireView| DesireProfile {
        id: e.id,
        resources: e.resources.clone(),
        strategy: e.strategy.clone(),
        incompatible_with: e.incompatible_with.clone(),
    };
    let existing: Vec<DesireProfile> = all
        .iter()
        .filter(|e| e.status == "active")
        .map(profile)
        .collect();
    let conflicts = rules::desire_conflicts(
        &DesireProfile {
            id,
            resources: d.resources.clone(),
            strategy: d.strategy.clone(),
            incompatible_with: d.incompatible_with.clone(),
        },
        &existing,
    );
    let priority = rules::desire_priority(&d.inputs).clamp(0.0, 1.0);
    let created = store::insert_desire(
        &mut *conn,
        workspace_id,
        NewDesire {
            id,
            agent_id,
            description: &d.description,
            kind: d.kind.as_str(),
            inputs: d.inputs,
            priority,
            serves: &d.serves,
            resources: &d.resources,
            strategy: d.strategy.as_deref(),
            incompatible_with: &d.incompatible_with,
        },
    )
    .await?;
    let event = payloads::BdiDesireCreated {
        agent_id: agent_id.to_owned(),
        desire_id: id,
        kind: d.kind,
        priority,
        conflicts: conflicts.clone(),
    };
    record(&mut *conn, workspace_id, actor, &event).await?;
    Ok((created, conflicts))
}

/// Drops an active desire and cascades (seed §6.4, [`rules::drop_cascade`]);
/// every dropped desire gets its drop record. Returns the direct one's.
pub async fn drop_desire(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    desire_id: Uuid,
    reason: &str,
    version: Option<i64>,
    actor: &str,
) -> Result<DropRecord, BdiError> {
    REASON.check("reason", reason)?;
    require_agent(&mut *conn, workspace_id, agent_id).await?;
    let all = store::lock_desires(&mut *conn, workspace_id, agent_id).await?;
    let Some(target) = all.iter().find(|d| d.id == desire_id) else {
        return Err(BdiError::NotFound {
            what: "desire",
            id: desire_id,
            agent_id: agent_id.to_owned(),
        });
    };
    check_version("desire", desire_id, target.version, version)?;
    if target.status != "active" {
        return Err(BdiError::WrongState {
            entity: "desire",
            status: target.status.clone(),
            message: format!("desire {desire_id} is already {}", target.status),
        });
    }
    let links: Vec<DesireLink> = all
        .iter()
        .map(|d| DesireLink {
            id: d.id,
            kind: d.kind.parse().unwrap_or(DesireKind::Terminal),
            active: d.status == "active",
            serves: d.serves.clone(),
        })
        .collect();
    let plan = rules::drop_cascade(desire_id, &links);
    let version_of = |id: Uuid| all.iter().find(|d| d.id == id).map_or(0, |d| d.version);
    if !store::drop_desire(&mut *conn, workspace_id, desire_id, target.version).await? {
        return Err(stale("desire", desire_id, target.version));
    }
    let direct = store::insert_drop(
        &mut *conn,
        workspace_id,
        &DropRecord {
            desire_id,
            dropped_at: time::OffsetDateTime::now_utc(),
            reason: reason.to_owned(),
            related_desires_affected: plan.affected.clone(),
            cascaded_drops: plan.cascaded.clone(),
            cascade_of: None,
        },
        actor,
    )
    .await?;
    for c in &plan.cascaded {
        if !store::drop_desire(&mut *conn, workspace_id, *c, version_of(*c)).await? {
            return Err(stale("desire", *c, version_of(*c)));
        }
        store::insert_drop(
            &mut *conn,
            workspace_id,
            &DropRecord {
                desire_id: *c,
                dropped_at: time::OffsetDateTime::now_utc(),
                reason: format!("cascade: every desire it served was dropped ({reason})"),
                related_desires_affected: vec![],
                cascaded_drops: vec![],
                cascade_of: Some(desire_id),
            },
            actor,
        )
        .await?;
    }
    let event = payloads::BdiDesireDropped {
        agent_id: agent_id.to_owned(),
        desire_id,
        reason: reason.to_owned(),
        related_desires_affected: plan.affected,
        cascaded_drops: plan.cascaded,
    };
    record(&mut *conn, workspace_id, actor, &event).await?;
    Ok(direct)
}

// ---------------------------------------------------------------- goals

/// A new goal.
#[derive(Debug, Clone)]
pub struct GoalCreate {
    /// What.
    pub description: String,
    /// Tier.
    pub tier: GoalTier,
    /// Parent (same agent, same tier or higher).
    pub parent_goal_id: Option<Uuid>,
    /// Desire it realises.
    pub desire_id: Option<Uuid>,
    /// Criteria.
    pub success_criteria: String,
    /// Deadline.
    pub deadline: Option<time::OffsetDateTime>,
}

/// Creates a goal; its parent must be the agent's, active, and at its tier or above.
pub async fn create_goal(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    g: GoalCreate,
    actor: &str,
) -> Result<GoalView, BdiError> {
    DESCRIPTION.check("description", &g.description)?;
    SUCCESS_CRITERIA.check("success_criteria", &g.success_criteria)?;
    require_agent(&mut *conn, workspace_id, agent_id).await?;
    if let Some(p) = g.parent_goal_id {
        let parent = store::lock_goal(&mut *conn, workspace_id, agent_id, p)
            .await?
            .ok_or_else(|| BdiError::UnknownGoal {
                field: "parent_goal_id",
                goal_id: p,
                agent_id: agent_id.to_owned(),
            })?;
        let parent_tier: GoalTier = parent.tier.parse()?;
        if !rules::tier_fits_parent(g.tier, parent_tier) {
            return Err(BdiError::InvalidTier {
                tier: g.tier,
                parent_tier,
            });
        }
        if parent.status != GoalStatus::Active.as_str() {
            return Err(BdiError::InactiveGoal {
                parent: true,
                id: p,
                status: parent.status.clone(),
            });
        }
    }
    if let Some(d) = g.desire_id {
        let desires = store::list_desires(&mut *conn, workspace_id, agent_id, None).await?;
        if !desires.iter().any(|x| x.id == d) {
            return Err(BdiError::UnknownDesire {
                desire_id: d,
                why: format!("desire_id {d} is not a desire of '{agent_id}'"),
            });
        }
    }
    let goal = store::insert_goal(
        &mut *conn,
        workspace_id,
        NewGoal {
            agent_id,
            description: &g.description,
            tier: g.tier.as_str(),
            parent_goal_id: g.parent_goal_id,
            desire_id: g.desire_id,
            success_criteria: &g.success_criteria,
            deadline: g.deadline,
        },
    )
    .await?;
    let event = payloads::BdiGoalCreated {
        agent_id: agent_id.to_owned(),
        goal_id: goal.id,
        tier: g.tier,
        parent_goal_id: goal.parent_goal_id,
    };
    record(&mut *conn, workspace_id, actor, &event).await?;
    Ok(goal)
}

/// Moves a goal along its lifecycle ([`rules::goal_next`]).
pub async fn set_goal_status(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    id: Uuid,
    to: GoalStatus,
    version: Option<i64>,
    actor: &str,
) -> Result<GoalView, BdiError> {
    let g = store::lock_goal(&mut *conn, workspace_id, agent_id, id)
        .await?
        .ok_or_else(|| BdiError::NotFound {
            what: "goal",
            id,
            agent_id: agent_id.to_owned(),
        })?;
    check_version("goal", id, g.version, version)?;
    let from: GoalStatus = g.status.parse()?;
    let to = rules::goal_next(from, to)?;
    let moved = store::set_goal_status(&mut *conn, workspace_id, id, g.version, to.as_str())
        .await?
        .ok_or_else(|| stale("goal", id, g.version))?;
    let event = payloads::BdiGoalUpdated {
        agent_id: agent_id.to_owned(),
        goal_id: id,
        from,
        to,
    };
    record(&mut *conn, workspace_id, actor, &event).await?;
    Ok(moved)
}

// ---------------------------------------------------------------- intentions

/// A commitment (seed §7.1 `intention_commit`).
#[derive(Debug, Clone)]
pub struct IntentionCreate {
    /// What.
    pub description: String,
    /// Goal pursued.
    pub goal_id: Option<Uuid>,
    /// Desire committed to (its priority becomes the intention's).
    pub desire_id: Option<Uuid>,
    /// Strategy (default open-minded, the seed's default).
    pub strategy: CommitmentStrategy,
    /// Priority when no desire is linked.
    pub priority: Option<f64>,
}

/// Commits to an intention. Its priority is the linked desire's, else the
/// given one, else 0.5.
pub async fn commit_intention(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    i: IntentionCreate,
    actor: &str,
) -> Result<IntentionView, BdiError> {
    DESCRIPTION.check("description", &i.description)?;
    if let Some(p) = i.priority
        && !rules::unit_interval(p)
    {
        return Err(out_of_range("priority", p));
    }
    require_agent(&mut *conn, workspace_id, agent_id).await?;
    let mut priority = i.priority.unwrap_or(0.5);
    if let Some(d) = i.desire_id {
        let desires = store::list_desires(&mut *conn, workspace_id, agent_id, None).await?;
        let desire = desires
            .iter()
            .find(|x| x.id == d && x.status == "active")
            .ok_or_else(|| BdiError::UnknownDesire {
                desire_id: d,
                why: format!("desire_id {d} is not an active desire of '{agent_id}'"),
            })?;
        priority = desire.priority;
    }
    if let Some(g) = i.goal_id {
        let goal = store::lock_goal(&mut *conn, workspace_id, agent_id, g)
            .await?
            .ok_or_else(|| BdiError::UnknownGoal {
                field: "goal_id",
                goal_id: g,
                agent_id: agent_id.to_owned(),
            })?;
        if goal.status != GoalStatus::Active.as_str() {
            return Err(BdiError::InactiveGoal {
                parent: false,
                id: g,
                status: goal.status.clone(),
            });
        }
    }
    let it = store::insert_intention(
        &mut *conn,
        workspace_id,
        NewIntention {
            agent_id,
            description: &i.description,
            goal_id: i.goal_id,
            desire_id: i.desire_id,
            strategy: i.strategy.as_str(),
            priority,
        },
    )
    .await?;
    let event = payloads::BdiIntentionCommitted {
        agent_id: agent_id.to_owned(),
        intention_id: it.id,
        strategy: i.strategy,
        priority: it.priority,
    };
    record(&mut *conn, workspace_id, actor, &event).await?;
    Ok(it)
}

/// One of the agent's intentions, locked (404 when it has no such one).
pub(crate) async fn lock_intention(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    id: Uuid,
) -> Result<IntentionView, BdiError> {
    store::lock_intention(&mut *conn, workspace_id, agent_id, id)
        .await?
        .ok_or_else(|| BdiError::NotFound {
            what: "intention",
            id,
            agent_id: agent_id.to_owned(),
        })
}

/// Moves an intention along its lifecycle ([`rules::intention_next`]).
pub async fn set_intention_status(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    id: Uuid,
    to: IntentionStatus,
    version: Option<i64>,
    actor: &str,
) -> Result<IntentionView, BdiError> {
    let it = lock_intention(&mut *conn, workspace_id, agent_id, id).await?;
    check_version("intention", id, it.version, version)?;
    let from: IntentionStatus = it.status.parse()?;
    let to = rules::intention_next(from, to)?;
    let moved = store::set_intention_status(&mut *conn, workspace_id, id, it.version, to.as_str())
        .await?
        .ok_or_else(|| stale("intention", id, it.version))?;
    let event = payloads::BdiIntentionUpdated {
        agent_id: agent_id.to_owned(),
        intention_id: id,
        from: Some(from),
        to: Some(to),
        progress: None,
    };
    record(&mut *conn, workspace_id, actor, &event).await?;
    Ok(moved)
}

/// Records progress on an active intention (restarts its stall clock).
pub async fn record_progress(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    id: Uuid,
    progress: f64,
    version: Option<i64>,
    actor: &str,
) -> Result<IntentionView, BdiError> {
    if !rules::unit_interval(progress) {
        return Err(out_of_range("progress", progress));
    }
    let it = lock_intention(&mut *conn, workspace_id, agent_id, id).await?;
    check_version("intention", id, it.version, version)?;
    if it.status != IntentionStatus::Active.as_str() {
        return Err(BdiError::WrongState {
            entity: "intention",
            status: it.status.clone(),
            message: format!(
                "intention {id} is {}; only an active one makes progress",
                it.status
            ),
        });
    }
    let moved = store::set_progress(&mut *conn, workspace_id, id, it.version, progress)
        .await?
        .ok_or_else(|| stale("intention", id, it.version))?;
    let event = payloads::BdiIntentionUpdated {
        agent_id: agent_id.to_owned(),
        intention_id: id,
        from: None,
        to: None,
        progress: Some(progress),
    };
    record(&mut *conn, workspace_id, actor, &event).await?;
    Ok(moved)
}

/// What `intention_reconsider` answered.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct Reconsideration {
    /// `keep`, `suspend` or `drop`.
    pub verdict: Verdict,
    /// Why.
    pub reasons: Vec<String>,
    /// The strategy's stall threshold in days (none for single-minded).
    pub stall_days: Option<f64>,
    /// The strategy's priority factor (none for single-minded).
    pub priority_factor: Option<f64>,
    /// Days since the last progress update.
    pub days_since_progress: f64,
    /// The best competing active desire's priority.
    pub best_competing_priority: Option<f64>,
    /// Whether the verdict was applied to the intention.
    pub applied: bool,
    /// The intention (after applying, when applied).
    pub intention: IntentionView,
}

/// `intention_reconsider` (seed §7.3) on one active or suspended intention:
/// compares it with the agent's other active desires and its stall time
/// ([`rules::reconsider`]); with `apply`, suspends or drops it accordingly.
#[allow(clippy::too_many_arguments)]
pub async fn reconsider_intention(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    id: Uuid,
    impossible: bool,
    blocked: bool,
    apply: bool,
    actor: &str,
) -> Result<Reconsideration, BdiError> {
    let it = lock_intention(&mut *conn, workspace_id, agent_id, id).await?;
    let status: IntentionStatus = it.status.parse()?;
    if !matches!(status, IntentionStatus::Active | IntentionStatus::Suspended) {
        return Err(BdiError::WrongState {
            entity: "intention",
            status: it.status.clone(),
            message: format!("intention {id} is {}; nothing to reconsider", it.status),
        });
    }
    let strategy: CommitmentStrategy = it.strategy.parse()?;
    let desires = store::list_desires(&mut *conn, workspace_id, agent_id, Some("active")).await?;
    let best = desires
        .iter()
        .filter(|d| Some(d.id) != it.desire_id)
        .map(|d| d.priority)
        .fold(None, |acc: Option<f64>, p| {
            Some(acc.map_or(p, |a| a.max(p)))
        });
    let days = store::seconds_since(&mut *conn, it.last_progress_at).await? / 86_400.0;
    let (verdict, reasons) = rules::reconsider(&ReconsiderInputs {
        strategy,
        priority: it.priority,
        days_since_progress: days,
        best_competing_priority: best,
        impossible,
        blocked,
    });
    let target = match verdict {
        Verdict::Keep => None,
        Verdict::Suspend if status == IntentionStatus::Suspended => None,
        Verdict::Suspend => Some(IntentionStatus::Suspended),
        Verdict::Drop => Some(IntentionStatus::Dropped),
    };
    let (applied, intention) = match (apply, target) {
        (true, Some(to)) => {
            let to = rules::intention_next(status, to)?;
            let moved =
                store::set_intention_status(&mut *conn, workspace_id, id, it.version, to.as_str())
                    .await?
                    .ok_or_else(|| stale("intention", id, it.version))?;
            (true, moved)
        }
        _ => (false, it),
    };
    let event = payloads::BdiIntentionReconsidered {
        agent_id: agent_id.to_owned(),
        intention_id: id,
        strategy,
        verdict,
        reasons: reasons.clone(),
        applied,
    };
    record(&mut *conn, workspace_id, actor, &event).await?;
    Ok(Reconsideration {
        verdict,
        reasons,
        stall_days: strategy.stall_days(),
        priority_factor: strategy.priority_factor(),
        days_since_progress: days,
        best_competing_priority: best,
        applied,
        intention,
    })
}
