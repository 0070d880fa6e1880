//! Running workflows: start an instance, move it with commands (a task
//! done, a timer due, a message or signal, a person's answer, cancel), and
//! carry out what the pure runner says to do.
//!
//! Every command is one transaction: lock the instance row, apply the
//! command to its state with [`coordinator_bpmn::run::apply`], carry out the
//! effects (agent tasks become one-task missions created in the same
//! transaction; timers, message and signal subscriptions become rows of
//! `workflow_tokens`; thrown messages and signals go to the outbox), write
//! the state and commit. A command that does not fit the state changes
//! nothing, so a command delivered twice (a replica that crashed after
//! commit, two replicas racing) is applied once.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use coordinator_bpmn::{
    Definitions,
    run::{self, Command, Effect, Instance, InstanceStatus, RunError, Wait, Work},
    validate,
};
use coordinator_protocol::event_payloads as payloads;

use super::{
    WorkflowError,
    message_flows::{Sending, send_along_flows},
};
use crate::{
    auth::Principal,
    missions::{
        PlanningConfig,
        for_workflow::{self, WorkflowTask},
        planner,
    },
    planning::{AgentCapability, PlanSpec, TaskSpec},
    store::{
        event_notify::{self, Notifier},
        events::{self, WorkspaceEvent},
        workflow_instances::{self as store, InstanceRow, NewInstance, TokenRow},
        workflows,
    },
};

/// Most called processes nested in one another (a call cycle stops here).
const MAX_CALL_DEPTH: usize = 16;

/// What `POST /v1/workflows/{id}/instances` takes.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartInstance {
    /// The instance's variables (conditions read them; task outputs merge into them).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub variables: Option<Map<String, Value>>,
    /// The process to run (default: the executable one, or the only one with nodes).
    #[serde(default)]
    pub process_id: Option<String>,
    /// The start event (default: the none start event).
    #[serde(default)]
    pub start_event: Option<String>,
    /// Your key for the instance (an order number...); messages may correlate on it.
    #[serde(default)]
    #[schema(max_length = 200)]
    pub business_key: Option<String>,
    /// The version to run (default: the latest).
    #[serde(default)]
    #[schema(minimum = 1)]
    pub version: Option<i32>,
}

/// A task waiting for a person.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HumanTask {
    /// The token to complete.
    pub token: i64,
    /// The task's node.
    pub node_id: String,
    /// What the runner handed out (name, documentation, lane, form fields).
    #[schema(value_type = Object)]
    pub work: Value,
}

/// An instance as people and agents read it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct InstanceView {
    /// Its id.
    pub id: Uuid,
    /// The workflow.
    pub workflow_id: Uuid,
    /// The version it runs.
    pub version: i32,
    /// The process.
    pub process_id: String,
    /// `running`, `completed`, `terminated` or `failed`.
    pub status: String,
    /// Your key.
    pub business_key: Option<String>,
    /// The calling instance, for a called process.
    pub parent_id: Option<Uuid>,
    /// The process variables.
    #[schema(value_type = Object)]
    pub variables: Value,
    /// Where the tokens wait.
    pub tokens: Vec<TokenRow>,
    /// Nodes with a token.
    pub active: Vec<String>,
    /// Nodes completed at least once.
    pub completed: Vec<String>,
    /// Tokens stopped for a person: `{token, node, message}`.
    #[schema(value_type = Vec<Object>)]
    pub incidents: Vec<Value>,
    /// Tasks waiting for a person.
    pub human_tasks: Vec<HumanTask>,
    /// Every step: `{seq, token, scope, element, what}`.
    #[schema(value_type = Vec<Object>)]
    pub history: Value,
    /// When it started.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Last change.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// When it ended.
    #[serde(with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
}

/// What the runner is given besides the command: settings, the agents a
/// task's plan is validated against, who acts, and the clock.
pub struct RunContext<'a> {
    /// Planning settings (a task's mission plan is validated as any plan).
    pub planning: &'a PlanningConfig,
    /// The workspace's agents' capabilities.
    pub agents: Vec<AgentCapability>,
    /// Who acts (`admin:…`, `engine:…`).
    pub actor: String,
    /// Now.
    pub now: OffsetDateTime,
    /// Announces the commits' events afterwards (off NOTIFY's commit lock).
    pub notifier: Option<Notifier>,
}

impl<'a> RunContext<'a> {
    /// The context for `workspace_id`'s instances.
    pub async fn load(
        pool: &PgPool,
        planning: &'a PlanningConfig,
        workspace_id: Uuid,
        actor: String,
        notifier: Option<&Notifier>,
    ) -> Result<RunContext<'a>, WorkflowError> {
        let agents = planner::capabilities(pool, planning, workspace_id)
            .await
            .map_err(|e| WorkflowError::Run(e.to_string()))?;
        Ok(RunContext {
            planning,
            agents,
            actor,
            now: OffsetDateTime::now_utc(),
            notifier: notifier.cloned(),
        })
    }

    /// Begins one of the workflow's transactions: its event writes are
    /// announced by [`RunContext::committed`] after the commit, so workflow
    /// commits do not queue on NOTIFY's database-wide lock.
    pub async fn begin(
        &self,
        pool: &PgPool,
    ) -> sqlx::Result<sqlx::Transaction<'static, sqlx::Postgres>> {
        event_notify::begin(pool, self.notifier.as_ref()).await
    }

    /// After the commit of a transaction from [`RunContext::begin`]: its
    /// events are announced, and the dispatcher looks for tasks it made ready.
    pub fn committed(&self) {
        if let Some(n) = &self.notifier {
            n.committed();
            n.work_ready();
        }
    }
}

/// Starts an instance of a workflow's version (the latest by default),
/// freezing that version. A version with validation errors is refused
/// (422 `invalid_workflow`, with the report).
pub async fn start(
    pool: &PgPool,
    planning: &PlanningConfig,
    notifier: Option<&Notifier>,
    who: &Principal,
    workflow_id: Uuid,
    req: StartInstance,
) -> Result<InstanceView, WorkflowError> {
    let cx = RunContext::load(pool, planning, who.workspace_id, who.actor(), notifier).await?;
    let mut tx = cx.begin(pool).await?;
    let id = start_in(
        &mut tx,
        &cx,
        who.workspace_id,
        workflow_id,
        req,
        Some(who.token_id),
    )
    .await?;
    tx.commit().await?;
    cx.committed();
    show(pool, who.workspace_id, id).await
}

/// [`start`] inside the caller's transaction, for `cx.actor` (a person's
/// request, a message that starts a process, a timer start event); the
/// instance's id.
pub async fn start_in(
    tx: &mut PgConnection,
    cx: &RunContext<'_>,
    workspace_id: Uuid,
    workflow_id: Uuid,
    req: StartInstance,
    created_token: Option<Uuid>,
) -> Result<Uuid, WorkflowError> {
    if let Some(k) = &req.business_key {
        coordinator_core::text::Text::required(200).check("business_key", k)?;
    }
    let workflow = workflows::lock_shared(tx, workspace_id, workflow_id)
        .await?
        .ok_or_else(|| WorkflowError::NotFound(format!("no workflow {workflow_id}")))?;
    let version = req.version.unwrap_or(workflow.latest_version);
    let row = workflows::version(tx, workflow_id, version)
        .await?
        .ok_or_else(|| {
            WorkflowError::NotFound(format!("workflow {workflow_id} has no version {version}"))
        })?;
    let defs: Definitions = serde_json::from_value(row.model)?;
    let report = validate::validate(&defs);
    if !report.valid {
        return Err(WorkflowError::NotRunnable(serde_json::to_value(report)?));
    }
    let process = req.process_id.clone().or_else(|| runnable_process(&defs));
    let (inst, effects) = run::start(
        &defs,
        process.as_deref(),
        req.start_event.as_deref(),
        req.variables.unwrap_or_default(),
        cx.now,
    )
    .map_err(|e| WorkflowError::Refused(e.to_string()))?;
    let id = Uuid::now_v7();
    let started = Started {
        workspace_id,
        workflow_id,
        version,
        business_key: req.business_key.as_deref(),
        parent: None,
        created_by: &cx.actor,
        created_token,
    };
    create(tx, cx, &defs, id, &started, inst, effects, 0).await?;
    Ok(id)
}

/// The process a start without `process_id` runs: the executable one, else
/// the only one with nodes (MIWG models mark none executable).
fn runnable_process(defs: &Definitions) -> Option<String> {
    let with_nodes: Vec<_> = defs
        .processes
        .iter()
        .filter(|p| !p.nodes.is_empty())
        .collect();
    with_nodes
        .iter()
        .find(|p| p.is_executable == Some(true))
        .or(if with_nodes.len() == 1 {
            with_nodes.first()
        } else {
            None
        })
        .map(|p| p.id.clone())
}

/// Where an instance comes from.
struct Started<'a> {
    workspace_id: Uuid,
    workflow_id: Uuid,
    version: i32,
    business_key: Option<&'a str>,
    parent: Option<(Uuid, i64)>,
    created_by: &'a str,
    created_token: Option<Uuid>,
}

/// Stores a started instance and carries out its first effects.
#[allow(clippy::too_many_arguments)]
async fn create(
    tx: &mut PgConnection,
    cx: &RunContext<'_>,
    defs: &Definitions,
    id: Uuid,
    started: &Started<'_>,
    mut inst: Instance,
    effects: Vec<Effect>,
    depth: usize,
) -> Result<(), WorkflowError> {
    let state = serde_json::to_value(&inst)?;
    store::insert(
        tx,
        started.workspace_id,
        &NewInstance {
            id,
            workflow_id: started.workflow_id,
            version: started.version,
            process_id: &inst.process_id,
            status: "running",
            state: &state,
            work: &json!({}),
            business_key: started.business_key,
            parent: started.parent,
            created_by: started.created_by,
            created_token: started.created_token,
        },
    )
    .await?;
    let row = store::lock(tx, Some(started.workspace_id), id, false)
        .await?
        .ok_or_else(|| WorkflowError::NotFound(format!("no instance {id}")))?;
    let mut work = Map::new();
    carry_out(tx, cx, defs, &row, &mut inst, &mut work, effects, depth).await?;
    persist(tx, &row, &inst, &work).await?;
    let started = payloads::WorkflowStarted {
        snapshot: snapshot(&row, &inst),
        parent_id: row.parent_id,
    };
    record(tx, &row, &cx.actor, &started).await?;
    ended(tx, cx, &row, &inst).await
}

/// Where the instance stands, as its events carry it.
fn snapshot(row: &InstanceRow, inst: &Instance) -> payloads::WorkflowSnapshot {
    payloads::WorkflowSnapshot {
        instance_id: row.id,
        workflow_id: row.workflow_id,
        version: row.version,
        process_id: row.process_id.clone(),
        status: status_of(inst.status).to_owned(),
        active: inst.active_nodes().into_iter().map(str::to_owned).collect(),
        completed: inst.completed_nodes().into_iter().map(str::to_owned).collect(),
        incidents: inst
            .incidents()
            .into_iter()
            .map(|(token, node, message)| json!({ "token": token, "node": node, "message": message }))
            .collect(),
    }
}

/// Writes a workspace event in the instance's transaction.
async fn record<P: coordinator_protocol::event_payloads::EventPayload>(
    tx: &mut PgConnection,
    row: &InstanceRow,
    actor: &str,
    payload: &P,
) -> Result<(), WorkflowError> {
    events::record(
        tx,
        row.workspace_id,
        WorkspaceEvent::new(None, None, actor, payload),
    )
    .await?;
    Ok(())
}

/// `workflow.ended`, when the instance is no longer running.
async fn ended(
    tx: &mut PgConnection,
    cx: &RunContext<'_>,
    row: &InstanceRow,
    inst: &Instance,
) -> Result<(), WorkflowError> {
    if inst.status == InstanceStatus::Running {
        return Ok(());
    }
    let payload = payloads::WorkflowEnded {
        snapshot: snapshot(row, inst),
    };
    record(tx, row, &cx.actor, &payload).await
}

/// A command's name in `workflow.advanced`.
fn command_name(cmd: &Command) -> &'static str {
    match cmd {
        Command::Complete { .. } => "complete",
        Command::Fail { .. } => "fail",
        Command::TimerDue { .. } => "timer_due",
        Command::Message { .. } => "message",
        Command::Signal { .. } => "signal",
        Command::SetVariables { .. } => "set_variables",
        Command::Retry { .. } => "retry",
        Command::Cancel => "cancel",
    }
}

/// Applies `cmd` to the instance `id` (of `workspace_id`, or any with
/// `None`) and carries out its effects, all in `tx`. `Ok(None)` when the
/// row is locked by another transaction and `skip_locked` is set.
pub(crate) async fn command_in(
    tx: &mut PgConnection,
    cx: &RunContext<'_>,
    workspace_id: Option<Uuid>,
    id: Uuid,
    cmd: Command,
    skip_locked: bool,
) -> Result<Option<()>, WorkflowError> {
    let Some(row) = store::lock(tx, workspace_id, id, skip_locked).await? else {
        return if skip_locked {
            Ok(None)
        } else {
            Err(WorkflowError::NotFound(format!(
                "no workflow instance {id}"
            )))
        };
    };
    let defs = definitions(tx, &row).await?;
    let mut inst: Instance = serde_json::from_value(row.state.clone())?;
    let mut work = row.work.as_object().cloned().unwrap_or_default();
    let command = command_name(&cmd);
    let effects = run::apply(&defs, &mut inst, cmd, cx.now).map_err(refused)?;
    carry_out(tx, cx, &defs, &row, &mut inst, &mut work, effects, 0).await?;
    persist(tx, &row, &inst, &work).await?;
    let advanced = payloads::WorkflowAdvanced {
        snapshot: snapshot(&row, &inst),
        command: command.to_owned(),
    };
    record(tx, &row, &cx.actor, &advanced).await?;
    ended(tx, cx, &row, &inst).await?;
    Ok(Some(()))
}

/// Applies one command in a transaction of its own and answers the view.
pub async fn command(
    pool: &PgPool,
    planning: &PlanningConfig,
    notifier: Option<&Notifier>,
    who: &Principal,
    id: Uuid,
    cmd: Command,
) -> Result<InstanceView, WorkflowError> {
    let cx = RunContext::load(pool, planning, who.workspace_id, who.actor(), notifier).await?;
    let mut tx = cx.begin(pool).await?;
    command_in(&mut tx, &cx, Some(who.workspace_id), id, cmd, false).await?;
    tx.commit().await?;
    cx.committed();
    show(pool, who.workspace_id, id).await
}

fn refused(e: RunError) -> WorkflowError {
    WorkflowError::Refused(e.to_string())
}

async fn definitions(
    tx: &mut PgConnection,
    row: &InstanceRow,
) -> Result<Definitions, WorkflowError> {
    let v = workflows::version(tx, row.workflow_id, row.version)
        .await?
        .ok_or_else(|| WorkflowError::NotFound(format!("workflow {} is gone", row.workflow_id)))?;
    Ok(serde_json::from_value(v.model)?)
}

/// Carries out the runner's effects for the instance `row`.
#[allow(clippy::too_many_arguments)]
async fn carry_out(
    tx: &mut PgConnection,
    cx: &RunContext<'_>,
    defs: &Definitions,
    row: &InstanceRow,
    inst: &mut Instance,
    work: &mut Map<String, Value>,
    effects: Vec<Effect>,
    depth: usize,
) -> Result<(), WorkflowError> {
    let mut queue: std::collections::VecDeque<Effect> = effects.into();
    while let Some(effect) = queue.pop_front() {
        match effect {
            Effect::StartWork {
                token,
                node,
                name,
                documentation,
                work: who,
                inputs,
            } => {
                let entry = match &who {
                    Work::Agent {
                        role,
                        lane,
                        task_kind,
                    } => {
                        let mission = agent_mission(
                            tx,
                            cx,
                            row,
                            token,
                            &node,
                            name.as_deref(),
                            documentation.as_deref(),
                            role.as_deref(),
                            lane.as_deref(),
                            task_kind,
                            inputs,
                        )
                        .await?;
                        json!({ "mission_id": mission })
                    }
                    Work::Human { .. } => json!({
                        "human": { "name": name, "documentation": documentation, "work": who }
                    }),
                };
                work.insert(token.to_string(), entry);
            }
            Effect::CancelWork { token } => {
                // An agent task's mission is cancelled with it, in this
                // transaction; a person's task simply stops waiting.
                let mission = work.remove(&token.to_string()).and_then(|w| {
                    w["mission_id"]
                        .as_str()
                        .and_then(|m| m.parse::<Uuid>().ok())
                });
                if let Some(mission) = mission {
                    for_workflow::cancel_in(tx, row.workspace_id, mission, &cx.actor)
                        .await
                        .map_err(|e| WorkflowError::Run(e.to_string()))?;
                }
            }
            Effect::SendMessage {
                token,
                from_node,
                message,
                message_ref,
                payload,
            } => {
                let name = message.or(message_ref).unwrap_or_default();
                let sending = Sending {
                    token,
                    from_node: &from_node,
                    message: &name,
                    payload: &payload,
                };
                send_along_flows(tx, defs, row, work, sending).await?;
                // A thrown message correlates by the sending instance's
                // business key (an instance it starts inherits the key).
                let key = row.business_key.as_deref();
                store::push_outbox(
                    tx,
                    row.workspace_id,
                    "message",
                    &name,
                    key,
                    &payload,
                    row.id,
                )
                .await?;
            }
            Effect::BroadcastSignal { name, payload, .. } => {
                store::push_outbox(
                    tx,
                    row.workspace_id,
                    "signal",
                    &name,
                    None,
                    &payload,
                    row.id,
                )
                .await?;
            }
            Effect::CallProcess {
                token,
                called_element,
                variables,
                ..
            } => {
                let more = call(
                    tx,
                    cx,
                    defs,
                    row,
                    inst,
                    token,
                    &called_element,
                    variables,
                    depth,
                )
                .await?;
                queue.extend(more);
            }
            Effect::CancelProcess { token } => {
                if let Some(child) = store::child_of(tx, row.id, token as i64).await? {
                    Box::pin(command_in(tx, cx, None, child, Command::Cancel, false)).await?;
                }
            }
            Effect::ScheduleTimer { .. }
            | Effect::CancelTimer { .. }
            | Effect::Subscribe { .. }
            | Effect::SubscribeSignal { .. }
            | Effect::Unsubscribe { .. }
            | Effect::Completed
            | Effect::Terminated
            | Effect::Incident { .. } => {
                // The tokens' projection (written from the state) carries
                // timers and subscriptions; the status carries the end.
            }
        }
    }
    Ok(())
}

/// Starts a called process as a child instance: a process of the same
/// document, else one of another stored workflow of the workspace (its
/// latest version, which the call freezes); when none can be found the
/// call fails (an error boundary catches it, else an incident).
#[allow(clippy::too_many_arguments)]
async fn call(
    tx: &mut PgConnection,
    cx: &RunContext<'_>,
    defs: &Definitions,
    row: &InstanceRow,
    inst: &mut Instance,
    token: u64,
    called: &str,
    variables: Value,
    depth: usize,
) -> Result<Vec<Effect>, WorkflowError> {
    let vars = variables.as_object().cloned().unwrap_or_default();
    // The called process: one of this document, else the latest version of
    // the workspace's newest workflow that has a process of that id.
    let target = if depth >= MAX_CALL_DEPTH {
        Err(format!("calls nested deeper than {MAX_CALL_DEPTH}"))
    } else if defs.process(called).is_some() {
        Ok(None)
    } else {
        match workflows::find_process(tx, row.workspace_id, called).await? {
            Some((workflow_id, version, model)) => {
                let other: Definitions = serde_json::from_value(model)?;
                Ok(Some((workflow_id, version, other)))
            }
            None => Err(format!(
                "no process '{called}' in this workflow or any other of the workspace"
            )),
        }
    };
    let started = target.and_then(|t| {
        let (workflow_id, version, child_defs) = match t {
            Some((w, v, d)) => (w, v, std::borrow::Cow::Owned(d)),
            None => (
                row.workflow_id,
                row.version,
                std::borrow::Cow::Borrowed(defs),
            ),
        };
        run::start(&child_defs, Some(called), None, vars, cx.now)
            .map(|(child, effects)| (workflow_id, version, child_defs, child, effects))
            .map_err(|e| e.to_string())
    });
    match started {
        Ok((workflow_id, version, child_defs, child, effects)) => {
            // The called workflow is held against edits as a start holds
            // its own; the child instance then freezes its version.
            if workflow_id != row.workflow_id {
                workflows::lock_shared(tx, row.workspace_id, workflow_id).await?;
            }
            let id = Uuid::now_v7();
            let s = Started {
                workspace_id: row.workspace_id,
                workflow_id,
                version,
                business_key: row.business_key.as_deref(),
                parent: Some((row.id, token as i64)),
                created_by: &cx.actor,
                created_token: row.created_token,
            };
            Box::pin(create(
                tx,
                cx,
                &child_defs,
                id,
                &s,
                child,
                effects,
                depth + 1,
            ))
            .await?;
            Ok(Vec::new())
        }
        Err(message) => run::apply(
            defs,
            inst,
            Command::Fail {
                token,
                error_code: None,
                message,
            },
            cx.now,
        )
        .map_err(refused),
    }
}

/// The one-task mission that does an agent task; its id.
#[allow(clippy::too_many_arguments)]
async fn agent_mission(
    tx: &mut PgConnection,
    cx: &RunContext<'_>,
    row: &InstanceRow,
    token: u64,
    node: &str,
    name: Option<&str>,
    documentation: Option<&str>,
    role: Option<&str>,
    lane: Option<&str>,
    task_kind: &str,
    inputs: Value,
) -> Result<Uuid, WorkflowError> {
    let title: String = name
        .map(coordinator_bpmn::one_line)
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| node.to_owned());
    let key: String = node
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let task: TaskSpec = serde_json::from_value(json!({
        "id": if key.is_empty() { "task".to_owned() } else { key },
        "title": title.chars().take(200).collect::<String>(),
        "task_type": task_kind,
        "description": documentation.unwrap_or(""),
        "inputs": {
            "variables": inputs,
            "workflow": {
                "instance_id": row.id, "workflow_id": row.workflow_id, "version": row.version,
                "node": node, "token": token, "role": role, "lane": lane,
            }
        },
        "success_criteria": [{ "description": "the task is done", "must_pass": true }],
    }))?;
    let goal = format!("{title} (workflow task {node})");
    let constraints = json!({});
    let id = for_workflow::create_in(
        tx,
        cx.planning,
        &cx.agents,
        WorkflowTask {
            workspace_id: row.workspace_id,
            created_by: row.created_token.unwrap_or_default(),
            actor: &format!("workflow:{}", row.id),
            goal: &goal,
            plan: PlanSpec { tasks: vec![task] },
            constraints: &constraints,
        },
    )
    .await
    .map_err(|e| WorkflowError::Run(e.to_string()))?;
    Ok(id)
}

/// Writes the state and the tokens' projection.
async fn persist(
    tx: &mut PgConnection,
    row: &InstanceRow,
    inst: &Instance,
    work: &Map<String, Value>,
) -> Result<(), WorkflowError> {
    // Work no token waits for any more is forgotten.
    let waiting: Vec<String> = inst
        .tokens
        .iter()
        .filter(|t| t.wait == Wait::Work)
        .map(|t| t.id.to_string())
        .collect();
    let work: Map<String, Value> = work
        .iter()
        .filter(|(k, _)| waiting.contains(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let tokens = project(inst, &work);
    store::replace_tokens(tx, row.id, row.workspace_id, &tokens).await?;
    store::save(
        tx,
        row.id,
        status_of(inst.status),
        &serde_json::to_value(inst)?,
        &Value::Object(work),
    )
    .await?;
    Ok(())
}

fn status_of(s: InstanceStatus) -> &'static str {
    match s {
        InstanceStatus::Running => "running",
        InstanceStatus::Completed => "completed",
        InstanceStatus::Terminated => "terminated",
        _ => "failed",
    }
}

/// Where each token waits, as rows.
fn project(inst: &Instance, work: &Map<String, Value>) -> Vec<TokenRow> {
    if inst.status != InstanceStatus::Running {
        return Vec::new();
    }
    inst.tokens
        .iter()
        .map(|t| {
            let mut row = TokenRow {
                token: t.id as i64,
                node_id: t.node.clone(),
                wait: wait_name(&t.wait).to_owned(),
                due_at: None,
                message_name: None,
                correlation: None,
                signal_name: None,
                mission_id: None,
            };
            match &t.wait {
                Wait::Timer { due, .. } => row.due_at = Some(*due),
                Wait::Message { name, correlation } => {
                    row.message_name = Some(name.clone());
                    row.correlation = correlation.clone();
                }
                Wait::Signal { name } => row.signal_name = Some(name.clone()),
                Wait::Work => {
                    row.mission_id = work
                        .get(&t.id.to_string())
                        .and_then(|w| w["mission_id"].as_str())
                        .and_then(|s| s.parse().ok());
                }
                _ => {}
            }
            row
        })
        .collect()
}

fn wait_name(w: &Wait) -> &'static str {
    match w {
        Wait::Ready => "ready",
        Wait::Work => "work",
        Wait::Timer { .. } => "timer",
        Wait::Message { .. } => "message",
        Wait::Signal { .. } => "signal",
        Wait::EventGateway { .. } => "event_gateway",
        Wait::Join { .. } => "join",
        Wait::Called => "called",
        Wait::SubProcess { .. } => "subprocess",
        Wait::MultiInstance { .. } => "multi_instance",
        Wait::Incident { .. } => "incident",
    }
}

/// The instance as people and agents read it.
pub async fn show(
    pool: &PgPool,
    workspace_id: Uuid,
    id: Uuid,
) -> Result<InstanceView, WorkflowError> {
    let mut conn = pool.acquire().await?;
    let row = store::get(&mut conn, workspace_id, id)
        .await?
        .ok_or_else(|| WorkflowError::NotFound(format!("no workflow instance {id}")))?;
    let tokens = store::tokens(&mut conn, id).await?;
    view(row, tokens)
}

fn view(row: InstanceRow, tokens: Vec<TokenRow>) -> Result<InstanceView, WorkflowError> {
    let inst: Instance = serde_json::from_value(row.state.clone())?;
    let where_ = snapshot(&row, &inst);
    let human_tasks = row
        .work
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            let token: i64 = k.parse().ok()?;
            let node_id = tokens.iter().find(|t| t.token == token)?.node_id.clone();
            Some(HumanTask {
                token,
                node_id,
                work: v.get("human")?.clone(),
            })
        })
        .collect();
    Ok(InstanceView {
        id: row.id,
        workflow_id: row.workflow_id,
        version: row.version,
        process_id: row.process_id,
        status: row.status,
        business_key: row.business_key,
        parent_id: row.parent_id,
        variables: Value::Object(inst.variables.clone()),
        active: where_.active,
        completed: where_.completed,
        incidents: where_.incidents,
        human_tasks,
        history: serde_json::to_value(&inst.history)?,
        tokens,
        created_at: row.created_at,
        updated_at: row.updated_at,
        finished_at: row.finished_at,
    })
}

/// A page of instances.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct InstanceList {
    /// Newest first (without history).
    #[schema(value_type = Vec<Object>)]
    pub instances: Vec<Value>,
    /// Pass as `cursor` for the next page; absent on the last.
    pub next_cursor: Option<Uuid>,
}

/// A page of a workflow's instances.
pub async fn list(
    pool: &PgPool,
    workspace_id: Uuid,
    workflow_id: Option<Uuid>,
    cursor: Option<Uuid>,
    limit: i64,
) -> Result<InstanceList, WorkflowError> {
    let mut conn = pool.acquire().await?;
    if let Some(w) = workflow_id {
        workflows::get(&mut conn, workspace_id, w)
            .await?
            .ok_or_else(|| WorkflowError::NotFound(format!("no workflow {w}")))?;
    }
    let rows = store::list(
        &mut conn,
        workspace_id,
        workflow_id,
        cursor,
        coordinator_core::paging::probe(limit),
    )
    .await?;
    let (rows, next_cursor) = coordinator_core::paging::split(rows, limit, |r| r.id);
    let instances = rows
        .into_iter()
        .map(|r| {
            json!({
                "id": r.id, "workflow_id": r.workflow_id, "version": r.version,
                "process_id": r.process_id, "status": r.status, "business_key": r.business_key,
                "parent_id": r.parent_id,
                "created_at": r.created_at.unix_timestamp(), "finished_at": r.finished_at.map(|f| f.unix_timestamp()),
            })
        })
        .collect();
    Ok(InstanceList {
        instances,
        next_cursor,
    })
}
