//! Decisions: request, list, read, resolve, and what a resolution does to its task and mission.

use super::*;

/// One option of a decision.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionOption {
    /// Short name (unique within the decision).
    pub label: String,
    /// What it means.
    #[serde(default)]
    pub description: String,
    /// `low`, `medium` or `high`.
    #[serde(default)]
    #[schema(schema_with = risk_levels)]
    pub risk_level: Option<String>,
}

/// `POST /v1/decisions` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    /// Client-chosen id, for idempotent retries.
    #[serde(default)]
    pub id: Option<Uuid>,
    /// The requesting agent (agent tokens: themselves, implied).
    #[serde(default)]
    pub agent_id: Option<String>,
    /// What is to be decided (1–2000 characters).
    #[schema(min_length = 1, max_length = 2000, pattern = r"\S")]
    pub description: String,
    /// The action's category (default `operational`).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 64, pattern = r"\S")]
    pub action_type: Option<String>,
    /// What the action would cost or hire.
    #[serde(
        default,
        deserialize_with = "coordinator_core::objects::optional_object"
    )]
    pub estimated_impact: Option<Impact>,
    /// Financial, strategic and risk notes (a JSON object).
    #[serde(default)]
    pub impact_analysis: Option<Value>,
    /// The choices (at most 10).
    #[serde(default)]
    pub options: Vec<DecisionOption>,
    /// The label of the option the requester recommends.
    #[serde(default)]
    pub recommended_option: Option<String>,
    /// Linked mission.
    #[serde(default)]
    pub mission_id: Option<Uuid>,
    /// The agent flags it as exceptional.
    #[serde(default)]
    pub exceptional: bool,
}

/// A decision as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DecisionView {
    /// Id.
    pub id: Uuid,
    /// Who asked (actor).
    pub requester: String,
    /// The requesting agent, if an agent asked.
    pub agent_id: Option<String>,
    /// Linked mission.
    pub mission_id: Option<Uuid>,
    /// Linked task (for a governance gate before dispatch).
    pub task_id: Option<Uuid>,
    /// Category judged.
    pub category: String,
    /// What is to be decided.
    pub description: String,
    /// Impact notes.
    pub impact_analysis: Value,
    /// Choices.
    pub options: Value,
    /// Recommended option's label.
    pub recommended_option: Option<String>,
    /// Cost at stake.
    pub estimated_cost: Option<f64>,
    /// Headcount at stake.
    pub headcount: Option<i32>,
    /// The check that sent it here.
    pub governance_check: Value,
    /// `pending`, `approved`, `rejected`, `deferred` or `modified`.
    pub status: DecisionStatus,
    /// Who resolved it.
    pub resolver: Option<String>,
    /// Why.
    pub rationale: Option<String>,
    /// Conditions attached.
    pub conditions: Value,
    /// Modifications (for `modified`).
    pub modifications: Value,
    /// When resolved.
    #[serde(with = "time::serde::rfc3339::option")]
    pub resolved_at: Option<OffsetDateTime>,
    /// When a deferred decision is checked again.
    #[serde(with = "time::serde::rfc3339::option")]
    pub recheck_at: Option<OffsetDateTime>,
    /// Re-checks so far.
    pub recheck_count: i32,
    /// Write guard.
    pub version: i64,
    /// Requested.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// `governance` (the gate, a request) or `blocker` (an agent blocked inside its task).
    pub topic: DecisionTopic,
    /// The option label the resolver chose (`approved`, `modified`).
    pub chosen_option: Option<String>,
}

impl DecisionRow {
    /// The parsed status.
    pub fn status(&self) -> DecisionStatus {
        self.status.parse().unwrap_or(DecisionStatus::Pending)
    }

    /// The API view.
    pub fn view(&self) -> DecisionView {
        DecisionView {
            id: self.id,
            requester: self.requester.clone(),
            agent_id: self.requester_agent_id.clone(),
            mission_id: self.mission_id,
            task_id: self.task_id,
            category: self.category.clone(),
            description: self.description.clone(),
            impact_analysis: self.impact_analysis.clone(),
            options: self.options.clone(),
            recommended_option: self.recommended_option.clone(),
            estimated_cost: self.estimated_cost,
            headcount: self.headcount,
            governance_check: self.governance_check.clone(),
            status: self.status(),
            resolver: self.resolver.clone(),
            rationale: self.rationale.clone(),
            conditions: self.conditions.clone(),
            modifications: self.modifications.clone(),
            resolved_at: self.resolved_at,
            recheck_at: self.recheck_at,
            recheck_count: self.recheck_count,
            version: self.version,
            created_at: self.created_at,
            topic: self.topic(),
            chosen_option: self.chosen_option.clone(),
        }
    }

    /// The parsed topic.
    pub fn topic(&self) -> DecisionTopic {
        self.topic.parse().unwrap_or(DecisionTopic::Governance)
    }
}

/// A decision under review, with the governance context (seed §11.5).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DecisionReview {
    /// The decision.
    #[serde(flatten)]
    pub decision: DecisionView,
    /// Seconds since it was requested.
    pub age_secs: i64,
    /// The same for people (`3 h 5 min`).
    pub age: String,
    /// The recommended option as the options state it (label, description, risk level).
    pub recommended: Option<Value>,
    /// Thresholds, risk tolerance and the recommendation of the current profile.
    pub governance: Value,
}

pub(crate) fn review(
    d: &DecisionRow,
    profile: Option<&ProfileRow>,
    now: OffsetDateTime,
) -> DecisionReview {
    let rules = profile.map(|p| p.rules());
    let checked = check(rules.as_ref(), &stored_action(d));
    let recommended = match (&d.recommended_option, checked.requires_approval) {
        (Some(opt), _) => format!("requester recommends '{opt}'"),
        (None, false) => "the current profile would not require approval: approve".into(),
        (None, true) => "review against the threshold shown".into(),
    };
    let age_secs = (now - d.created_at).whole_seconds().max(0);
    DecisionReview {
        decision: d.view(),
        age_secs,
        age: age_words(age_secs),
        recommended: recommended_option(d),
        governance: json!({
            "stakeholder_id": profile.map(|p| p.stakeholder_id.clone()),
            "decision_style": rules.as_ref().map(|r| r.decision_style),
            "risk_tolerance": rules.as_ref().map(|r| r.risk_tolerance),
            "risk_modifier": rules.as_ref().map(|r| r.risk_tolerance.modifier()),
            "approval_thresholds": profile.map(|p| p.view().approval_thresholds),
            "relevant_threshold": checked.relevant_threshold,
            "requires_approval_now": checked.requires_approval,
            "reason": checked.reason,
            "recommended_action": recommended,
        }),
    }
}

/// The recommended option as stated among the options (label, description,
/// risk level), or just its label when the options do not list it.
fn recommended_option(d: &DecisionRow) -> Option<Value> {
    let label = d.recommended_option.as_deref()?;
    let listed = d
        .options
        .as_array()
        .and_then(|o| o.iter().find(|o| o["label"].as_str() == Some(label)))
        .cloned();
    Some(listed.unwrap_or_else(|| json!({ "label": label })))
}

/// An age for people: `45 s`, `12 min`, `3 h 5 min`, `2 d 4 h`.
pub fn age_words(secs: i64) -> String {
    let (d, h, m) = (secs / 86_400, secs % 86_400 / 3_600, secs % 3_600 / 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{secs} s"),
        (0, 0, m) => format!("{m} min"),
        (0, h, 0) => format!("{h} h"),
        (0, h, m) => format!("{h} h {m} min"),
        (d, 0, _) => format!("{d} d"),
        (d, h, _) => format!("{d} d {h} h"),
    }
}

/// How many decisions of the workspace have each status (all of them, not
/// only the page shown).
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DecisionTotals {
    /// Every decision.
    pub total: i64,
    /// Waiting for a stakeholder.
    pub pending: i64,
    /// Resolved `approved`.
    pub approved: i64,
    /// Resolved `rejected`.
    pub rejected: i64,
    /// Resolved `modified`.
    pub modified: i64,
    /// Put off, to be checked again.
    pub deferred: i64,
}

impl DecisionTotals {
    fn from_counts(counts: &[(String, i64)]) -> DecisionTotals {
        let mut t = DecisionTotals::default();
        for (status, n) in counts {
            t.total += n;
            match status.as_str() {
                "pending" => t.pending += n,
                "approved" => t.approved += n,
                "rejected" => t.rejected += n,
                "modified" => t.modified += n,
                "deferred" => t.deferred += n,
                _ => {}
            }
        }
        t
    }
}

pub(crate) fn stored_action(d: &DecisionRow) -> Action {
    Action {
        category: d.category.clone(),
        estimated_cost: d.estimated_cost,
        headcount: d.headcount.map(i64::from),
        exceptional: d
            .governance_check
            .get("exceptional")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    }
}

/// Puts a decision in the queue (seed §11.4).
pub async fn request_decision(
    pool: &PgPool,
    who: &Principal,
    req: DecisionRequest,
) -> Result<DecisionView, GovernanceError> {
    GovernanceError::require(who, &[Role::Admin, Role::Operator, Role::Agent])?;
    check_len("description", &req.description, 2000)?;
    let action = action_of(
        req.action_type.as_deref().unwrap_or(OPERATIONAL),
        req.estimated_impact.as_ref(),
        req.exceptional,
    )?;
    check_options(&req.options, req.recommended_option.as_deref())?;
    let impact = impact_of(req.impact_analysis.as_ref())?;
    let agent_id = match (&who.agent_id, &req.agent_id) {
        (Some(me), Some(named)) if me != named => {
            return Err(GovernanceError::Forbidden(
                "an agent token can only request decisions as itself".into(),
            ));
        }
        (Some(me), _) => Some(me.clone()),
        (None, named) => named.clone(),
    };
    let id = req.id.unwrap_or_else(Uuid::new_v4);
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    if let Some(existing) = store::get_decision(&mut tx, who.workspace_id, id).await? {
        return if existing.description == req.description && existing.requester_agent_id == agent_id
        {
            Ok(existing.view())
        } else {
            Err(GovernanceError::DecisionIdReused(id))
        };
    }
    if let Some(a) = &agent_id
        && !crate::store::messages::agent_exists(&mut tx, who.workspace_id, a).await?
    {
        return Err(GovernanceError::UnknownAgent(a.clone()));
    }
    if let Some(m) = req.mission_id
        && !crate::store::messages::mission_exists(&mut tx, who.workspace_id, m).await?
    {
        return Err(GovernanceError::UnknownMission(m));
    }
    let profile = store::profile(&mut tx, who.workspace_id).await?;
    let mut checked = serde_json::to_value(check(profile.map(|p| p.rules()).as_ref(), &action))
        .unwrap_or_default();
    checked["exceptional"] = json!(action.exceptional);
    let options = serde_json::to_value(&req.options).unwrap_or(json!([]));
    let row = store::insert_decision(
        &mut tx,
        NewDecision {
            id,
            workspace_id: who.workspace_id,
            requester: &actor,
            requester_agent_id: agent_id.as_deref(),
            mission_id: req.mission_id,
            task_id: None,
            category: &normalize_category(&action.category),
            description: &req.description,
            impact_analysis: &impact,
            options: &options,
            recommended_option: req.recommended_option.as_deref(),
            estimated_cost: action.estimated_cost,
            headcount: action
                .headcount
                .map(|h| i32::try_from(h).unwrap_or(i32::MAX)),
            governance_check: &checked,
            topic: DecisionTopic::Governance.as_str(),
        },
    )
    .await
    // A client-chosen id another workspace already uses (ours was found above).
    .map_err(|e| match e {
        sqlx::Error::Database(d) if d.constraint() == Some("governance_decisions_pkey") => {
            GovernanceError::DecisionIdReused(id)
        }
        e => e.into(),
    })?
    .ok_or(GovernanceError::DecisionExists)?;
    decision_event(&mut tx, &row, payloads::DecisionRequested, &actor).await?;
    tx.commit().await?;
    Ok(row.view())
}

/// An option's label.
pub const OPTION_LABEL: coordinator_core::text::Text = coordinator_core::text::Text::required(200);
/// An option's description.
pub const OPTION_DESCRIPTION: coordinator_core::text::Text =
    coordinator_core::text::Text::optional(2000);
/// Most options of one decision.
pub const MAX_OPTIONS: usize = 10;

/// The risk levels an option may carry.
pub const RISK_LEVELS: [&str; 3] = ["low", "medium", "high"];

/// The schema of [`DecisionOption::risk_level`].
fn risk_levels() -> utoipa::openapi::Object {
    coordinator_core::domain::string_enum(&RISK_LEVELS)
}

/// A decision's options: at most 10, labels 1–200 characters and distinct,
/// descriptions at most 2000; the recommended one among them.
pub(crate) fn check_options(
    options: &[DecisionOption],
    recommended: Option<&str>,
) -> Result<(), Invalid> {
    if options.len() > MAX_OPTIONS {
        return Err(Invalid::new(
            "options",
            format!("at most {MAX_OPTIONS} options"),
        ));
    }
    for (i, o) in options.iter().enumerate() {
        OPTION_LABEL.check("options.label", &o.label)?;
        if options[..i].iter().any(|p| p.label == o.label) {
            return Err(Invalid::unprocessable(
                "duplicate_option",
                "options.label",
                format!("option labels must differ ('{}' is repeated)", o.label),
            ));
        }
        OPTION_DESCRIPTION.check("options.description", &o.description)?;
        if let Some(r) = &o.risk_level
            && !RISK_LEVELS.contains(&r.as_str())
        {
            return Err(Invalid::new(
                "options.risk_level",
                format!("risk_level must be low, medium or high, not '{r}'"),
            ));
        }
    }
    if let Some(r) = recommended
        && !options.iter().any(|o| o.label == r)
    {
        return Err(Invalid::unprocessable(
            "unknown_option",
            "recommended_option",
            "recommended_option must be the label of one of the options",
        ));
    }
    Ok(())
}

/// The impact notes: a JSON object (default empty).
pub(crate) fn impact_of(impact: Option<&Value>) -> Result<Value, Invalid> {
    let impact = impact.cloned().unwrap_or(json!({}));
    if !impact.is_object() {
        return Err(Invalid::new(
            "impact_analysis",
            "impact_analysis must be a JSON object",
        ));
    }
    Ok(impact)
}

/// Writes a `decision.*` event carrying the decision as it is now; `kind`
/// wraps the snapshot in its kind's payload (`payloads::DecisionResolved`…).
pub(crate) async fn decision_event<P: EventPayload>(
    conn: &mut PgConnection,
    d: &DecisionRow,
    kind: fn(payloads::DecisionSnapshot) -> P,
    actor: &str,
) -> sqlx::Result<()> {
    let snapshot = payloads::DecisionSnapshot {
        decision_id: d.id,
        status: d.status.clone(),
        category: d.category.clone(),
        agent_id: d.requester_agent_id.clone(),
        description: d.description.clone(),
        governance_check: d.governance_check.clone(),
        resolver: d.resolver.clone(),
        rationale: d.rationale.clone(),
        conditions: d.conditions.clone(),
        modifications: d.modifications.clone(),
        recheck_at: d.recheck_at,
    };
    events::record(
        conn,
        d.workspace_id,
        WorkspaceEvent::new(d.mission_id, d.task_id, actor, &kind(snapshot)),
    )
    .await
}

/// The decision queue, optionally of one status, newest first, with the
/// governance context of the current profile.
pub async fn list_decisions(
    pool: &PgPool,
    who: &Principal,
    status: Option<&str>,
    limit: i64,
) -> Result<(Vec<DecisionReview>, DecisionTotals), GovernanceError> {
    let status = status
        .map(|s| s.parse::<DecisionStatus>())
        .transpose()?
        .map(|s| s.as_str());
    let mut conn = pool.acquire().await?;
    let profile = store::profile(&mut conn, who.workspace_id).await?;
    let rows = store::list_decisions(&mut conn, who.workspace_id, status, limit).await?;
    let totals =
        DecisionTotals::from_counts(&store::decision_totals(&mut conn, who.workspace_id).await?);
    let now = OffsetDateTime::now_utc();
    Ok((
        rows.iter()
            .map(|d| review(d, profile.as_ref(), now))
            .collect(),
        totals,
    ))
}

/// One decision with its governance context.
pub async fn get_decision(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
) -> Result<DecisionReview, GovernanceError> {
    let mut conn = pool.acquire().await?;
    let d = store::get_decision(&mut conn, who.workspace_id, id)
        .await?
        .ok_or(GovernanceError::DecisionNotFound(id))?;
    let profile = store::profile(&mut conn, who.workspace_id).await?;
    Ok(review(&d, profile.as_ref(), OffsetDateTime::now_utc()))
}

/// `POST /v1/decisions/{id}/resolve` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ResolveDecisionRequest)]
pub struct ResolveRequest {
    /// `approved`, `rejected`, `deferred` or `modified`.
    pub outcome: Outcome,
    /// Why (at most 4000 characters).
    #[serde(default)]
    pub rationale: Option<String>,
    /// Conditions attached (at most 20, each 1–500 characters).
    #[serde(default)]
    pub conditions: Vec<String>,
    /// For `modified` only: a non-empty JSON object; for a mission task its
    /// keys are merged into the task's inputs before dispatch.
    #[serde(default)]
    pub modifications: Option<Value>,
    /// For `deferred` only: check again after this many milliseconds
    /// (100 ms – 30 days; default one hour).
    #[serde(default)]
    pub recheck_after_ms: Option<i64>,
    /// The decision version being resolved (409 `version_conflict` if stale).
    #[serde(default)]
    pub version: Option<i64>,
    /// For `approved` or `modified`: the label of the option chosen (default:
    /// the recommended one). A blocked agent's next dispatch names it.
    #[serde(default)]
    pub option: Option<String>,
}

/// What a resolution sets.
pub(crate) struct Settlement<'a> {
    pub(crate) outcome: Outcome,
    pub(crate) rationale: Option<&'a str>,
    pub(crate) conditions: Value,
    pub(crate) modifications: Value,
    pub(crate) recheck_at: Option<OffsetDateTime>,
    pub(crate) chosen_option: Option<String>,
}

pub(crate) const DEFAULT_RECHECK_MS: i64 = 3_600_000;

/// Resolves a decision (stakeholder tokens only); for a gated mission task
/// also moves the task; the requesting agent gets an INFORM. Resolving again
/// with the same outcome returns the decision unchanged; a different outcome
/// on a final decision is 409.
pub async fn resolve(
    pool: &PgPool,
    replan_with_llm: bool,
    who: &Principal,
    id: Uuid,
    req: ResolveRequest,
) -> Result<DecisionView, GovernanceError> {
    GovernanceError::require(who, &[Role::Stakeholder])?;
    if req
        .rationale
        .as_ref()
        .is_some_and(|r| r.chars().count() > 4000)
    {
        return Err(Invalid::new("rationale", "rationale must be at most 4000 characters").into());
    }
    if req.conditions.len() > 20 {
        return Err(Invalid::new("conditions", "at most 20 conditions").into());
    }
    for c in &req.conditions {
        check_len("conditions", c, 500)?;
    }
    let modifications = match (req.outcome, &req.modifications) {
        (Outcome::Modified, Some(Value::Object(m))) if !m.is_empty() => Value::Object(m.clone()),
        (Outcome::Modified, _) => {
            return Err(Invalid::new(
                "modifications",
                "a 'modified' outcome needs modifications: a non-empty JSON object",
            )
            .into());
        }
        (_, Some(_)) => {
            return Err(Invalid::new(
                "modifications",
                "modifications are only taken with outcome 'modified'",
            )
            .into());
        }
        (_, None) => json!({}),
    };
    let recheck_at = match (req.outcome, req.recheck_after_ms) {
        (Outcome::Deferred, ms) => {
            let ms = ms.unwrap_or(DEFAULT_RECHECK_MS);
            if !(100..=30 * 86_400_000).contains(&ms) {
                return Err(Invalid::new(
                    "recheck_after_ms",
                    "recheck_after_ms must be between 100 and 2592000000",
                )
                .into());
            }
            Some(OffsetDateTime::now_utc() + time::Duration::milliseconds(ms))
        }
        (_, Some(_)) => {
            return Err(Invalid::new(
                "recheck_after_ms",
                "recheck_after_ms is only taken with outcome 'deferred'",
            )
            .into());
        }
        (_, None) => None,
    };
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let mission = store::decision_mission(&mut tx, who.workspace_id, id)
        .await?
        .ok_or(GovernanceError::DecisionNotFound(id))?;
    // Lock order: the mission first (as dispatch does), then the decision.
    let mut run = match mission {
        Some(m) => missions::lock(&mut tx, who.workspace_id, m).await?,
        None => None,
    };
    let d = store::lock_decision(&mut tx, who.workspace_id, id)
        .await?
        .ok_or(GovernanceError::DecisionNotFound(id))?;
    let step =
        d.status()
            .resolve(req.outcome)
            .map_err(|transition| GovernanceError::AlreadyResolved {
                id,
                status: d.status.clone(),
                requested: req.outcome,
                transition,
            })?;
    if step == Resolution::AlreadyDone {
        return Ok(d.view());
    }
    if let Some(v) = req.version
        && v != d.version
    {
        return Err(version_conflict("decision", Some(d.version)));
    }
    let labels: Vec<&str> = d
        .options
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["label"].as_str())
        .collect();
    let chosen = chosen_option(
        req.outcome,
        req.option.as_deref(),
        d.recommended_option.as_deref(),
        &labels,
    )?;
    let d = settle(
        &mut tx,
        run.as_mut(),
        &d,
        Settlement {
            outcome: req.outcome,
            rationale: req.rationale.as_deref(),
            conditions: json!(req.conditions),
            modifications,
            recheck_at,
            chosen_option: chosen,
        },
        &actor,
        replan_with_llm,
    )
    .await?;
    tx.commit().await?;
    Ok(d.view())
}

/// Writes a resolution: the decision row (version guarded), its event, the
/// gated task's move, and the INFORM to the requesting agent.
pub(crate) async fn settle(
    conn: &mut PgConnection,
    run: Option<&mut MissionRow>,
    d: &DecisionRow,
    s: Settlement<'_>,
    actor: &str,
    replan_with_llm: bool,
) -> Result<DecisionRow, GovernanceError> {
    let status = s.outcome.status();
    let row = store::resolve_decision(
        conn,
        store::Resolve {
            workspace_id: d.workspace_id,
            id: d.id,
            version: d.version,
            status: status.as_str(),
            resolver: actor,
            rationale: s.rationale,
            conditions: &s.conditions,
            modifications: &s.modifications,
            recheck_at: s.recheck_at,
            chosen_option: s.chosen_option.as_deref(),
        },
    )
    .await?
    .ok_or_else(|| version_conflict("decision", Some(d.version)))?;
    decision_event(conn, &row, payloads::DecisionResolved, actor).await?;
    if let (Some(task_id), Some(run)) = (row.task_id, run) {
        apply_to_task(conn, run, &row, task_id, actor, replan_with_llm).await?;
    }
    if let Some(agent) = &row.requester_agent_id {
        messages::send(
            conn,
            row.workspace_id,
            Outgoing {
                id: None,
                from_agent: None,
                sender: actor.to_owned(),
                to: Recipient::Agent(agent.clone()),
                performative: Performative::Inform,
                category: (row.mission_id.is_some() || row.task_id.is_some())
                    .then_some(Category::Decision),
                conversation_id: None,
                reply_to: None,
                mission_id: row.mission_id,
                task_id: row.task_id,
                subject: format!("Decision {}: {}", row.id, row.status),
                content: json!({
                    "decision_id": row.id, "outcome": row.status, "resolver": row.resolver,
                    "rationale": row.rationale, "conditions": row.conditions,
                    "modified_options": row.modifications, "chosen_option": row.chosen_option,
                    "resolved_at": row.resolved_at
                        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok()),
                    "recheck_at": row.recheck_at
                        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok()),
                }),
            },
        )
        .await?;
    }
    Ok(row)
}

/// Moves the task a decision gates: approved/modified → queued (modified
/// with the modifications merged into its inputs), rejected → skipped and a
/// replan trigger, deferred → stays waiting.
pub(crate) async fn apply_to_task(
    conn: &mut PgConnection,
    run: &mut MissionRow,
    d: &DecisionRow,
    task_id: Uuid,
    actor: &str,
    replan_with_llm: bool,
) -> Result<(), GovernanceError> {
    let t = tasks::get(conn, task_id).await?;
    if d.topic() == DecisionTopic::Blocker {
        return unblock(conn, run, d, &t, actor).await;
    }
    if t.status() != TaskStatus::AwaitingApproval || t.workspace_id != d.workspace_id {
        // Cancelled with its mission meanwhile: the decision stands alone.
        return Ok(());
    }
    match d.status() {
        DecisionStatus::Approved | DecisionStatus::Modified => {
            let to = t.status().next(TaskEvent::Requeue)?;
            let governance = json!({
                "decision_id": d.id, "outcome": d.status, "conditions": d.conditions,
                "rationale": d.rationale,
            });
            if !store::release_task(conn, &t, d.id, &d.modifications, &governance).await? {
                return Err(GovernanceError::TaskChanged);
            }
            tasks::enqueue(
                conn,
                run.workspace_id,
                run.id,
                t.id,
                run.priority,
                OffsetDateTime::now_utc(),
            )
            .await?;
            tasks::record(
                conn,
                Change::event(
                    &t,
                    to,
                    actor,
                    None,
                    &events::payloads::TaskApproved {
                        key: t.task_key.clone(),
                        decision_id: d.id,
                        outcome: d.status.clone(),
                        modifications: d.modifications.clone(),
                    },
                ),
            )
            .await?;
            missions::notify_wake(conn).await?;
        }
        DecisionStatus::Rejected => {
            let to = t.status().next(TaskEvent::Skip)?;
            let reason = format!(
                "governance decision {} rejected it: {}",
                d.id,
                d.rationale.as_deref().unwrap_or("no rationale given")
            );
            if !store::skip_task(conn, &t, &reason).await? {
                return Err(GovernanceError::TaskChanged);
            }
            tasks::record(
                conn,
                Change::event(
                    &t,
                    to,
                    actor,
                    None,
                    &events::payloads::TaskSkipped {
                        key: t.task_key.clone(),
                        reason: reason.clone(),
                        error: None,
                        decision_id: Some(d.id),
                    },
                ),
            )
            .await?;
            replan_trigger(conn, run, &t, d, &reason, actor, replan_with_llm).await?;
        }
        DecisionStatus::Deferred | DecisionStatus::Pending => {}
    }
    Ok(())
}

/// A rejected task is a replan trigger (BDI: only explicit triggers remake a
/// plan). The trigger is always recorded; with an LLM planner the remaining
/// work is planned again around the rejected task, otherwise dependents go
/// on without it and the mission finishes as usual.
pub(crate) async fn replan_trigger(
    conn: &mut PgConnection,
    run: &mut MissionRow,
    t: &TaskRow,
    d: &DecisionRow,
    reason: &str,
    actor: &str,
    replan_with_llm: bool,
) -> Result<(), GovernanceError> {
    let replanning = replan_with_llm && run.status == "executing";
    events::append(
        conn,
        run.workspace_id,
        events::NewEvent::new(
            run.id,
            Some(t.id),
            None,
            actor,
            &events::payloads::MissionReplanTriggered {
                key: t.task_key.clone(),
                decision_id: d.id,
                reason: reason.to_owned(),
                trigger: "governance_rejected".into(),
                replanning,
            },
        ),
    )
    .await?;
    if replanning {
        // Missions are intentions: logged with the strategy's verdict (a
        // person's rejection outranks every commitment).
        crate::missions::commitment::consult(
            conn,
            run,
            coordinator_core::bdi::MissionTrigger::GovernanceRejected,
            actor,
        )
        .await?;
        let feedback = format!(
            "A stakeholder rejected task '{}' ({}): {}. Replan the remaining work without it.",
            t.task_key,
            t.title,
            d.rationale.as_deref().unwrap_or("no rationale given")
        );
        return crate::missions::replan::replan_around(conn, run, &feedback, actor)
            .await
            .map_err(|e| GovernanceError::Replan(Box::new(e)));
    }
    tasks::promote_ready(
        conn,
        run.workspace_id,
        run.id,
        Some(t.id),
        run.priority,
        actor,
    )
    .await?;
    crate::missions::finish::finish_mission_if_done(conn, run, actor)
        .await
        .map_err(|e| GovernanceError::Unexpected(anyhow::anyhow!("{e}")))?;
    missions::notify_wake(conn).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{DecisionTotals, age_words};

    #[test]
    fn ages_read_in_the_largest_units() {
        assert_eq!(age_words(0), "0 s");
        assert_eq!(age_words(45), "45 s");
        assert_eq!(age_words(12 * 60 + 5), "12 min");
        assert_eq!(age_words(3 * 3600), "3 h");
        assert_eq!(age_words(3 * 3600 + 5 * 60), "3 h 5 min");
        assert_eq!(age_words(2 * 86_400 + 4 * 3600 + 59), "2 d 4 h");
        assert_eq!(age_words(86_400 + 30), "1 d");
    }

    #[test]
    fn totals_add_up_by_status() {
        let t = DecisionTotals::from_counts(&[
            ("pending".into(), 3),
            ("approved".into(), 2),
            ("deferred".into(), 1),
        ]);
        assert_eq!(
            (t.total, t.pending, t.approved, t.deferred, t.rejected),
            (6, 3, 2, 1, 0)
        );
    }
}
