//! Authoring: the edits people and agents make to a workflow (seed 000 §20,
//! tools 23–26: add a node, remove a node, connect two nodes, add a lane),
//! each checked whole before anything changes, so a refused edit leaves the
//! model as it was. Lanes carry the organisation role whose agents do their
//! tasks as a `coordinator:role` attribute, which export writes and import
//! reads back.

use serde::{Deserialize, Serialize};

use crate::{
    expr,
    model::{
        Attribute, Definitions, GatewayKind, LaneSet, MessageDef, Node, NodeKind, Preserved,
        Process, SequenceFlow, SignalDef, TaskKind, TimerDef, Trigger,
    },
};

pub use crate::model::COORDINATOR_NS;
/// The prefix export gives [`COORDINATOR_NS`].
pub const COORDINATOR_PREFIX: &str = "coordinator";

/// Longest id an edit accepts.
pub const MAX_ID: usize = 128;
/// Longest node name an edit accepts.
pub const MAX_NAME: usize = 500;

/// The node types an edit adds (BPMN element names; the seed's
/// `timerEvent`, `messageEvent`, `signalEvent` and `errorEvent` are
/// intermediate catch events, and an error end event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum NodeType {
    /// A none start event.
    StartEvent,
    /// A none end event.
    EndEvent,
    /// An end event that ends the whole instance.
    TerminateEndEvent,
    /// An end event that throws an error (`definition`: the error code).
    ErrorEvent,
    /// An intermediate timer (`definition`: ISO 8601 duration `PT5M`, date or cycle `R3/PT1H`).
    TimerEvent,
    /// An intermediate message catch (`definition`: the message name).
    MessageEvent,
    /// An intermediate signal catch (`definition`: the signal name).
    SignalEvent,
    /// An abstract task (an agent does it).
    Task,
    /// A task for a person.
    UserTask,
    /// A task done by hand, outside any system.
    ManualTask,
    /// A task for an agent.
    ServiceTask,
    /// A task that sends a message (`definition`: the message name).
    SendTask,
    /// A task that waits for a message (`definition`: the message name).
    ReceiveTask,
    /// `name = expression` in the condition language (`definition`).
    ScriptTask,
    /// A rule evaluation, done by an agent.
    BusinessRuleTask,
    /// One way out, by condition.
    ExclusiveGateway,
    /// Every way out; joins wait for all.
    ParallelGateway,
    /// Every way out whose condition holds; joins wait for those.
    InclusiveGateway,
    /// The first event to happen decides.
    EventBasedGateway,
    /// An embedded subprocess (empty; it completes at once until filled by import).
    SubProcess,
    /// A call of another process (`definition`: its process id).
    CallActivity,
}

impl NodeType {
    /// Every type, in the order tools list them.
    pub const ALL: &[NodeType] = &[
        NodeType::StartEvent,
        NodeType::EndEvent,
        NodeType::TerminateEndEvent,
        NodeType::ErrorEvent,
        NodeType::TimerEvent,
        NodeType::MessageEvent,
        NodeType::SignalEvent,
        NodeType::Task,
        NodeType::UserTask,
        NodeType::ManualTask,
        NodeType::ServiceTask,
        NodeType::SendTask,
        NodeType::ReceiveTask,
        NodeType::ScriptTask,
        NodeType::BusinessRuleTask,
        NodeType::ExclusiveGateway,
        NodeType::ParallelGateway,
        NodeType::InclusiveGateway,
        NodeType::EventBasedGateway,
        NodeType::SubProcess,
        NodeType::CallActivity,
    ];

    /// Its name in requests.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeType::StartEvent => "startEvent",
            NodeType::EndEvent => "endEvent",
            NodeType::TerminateEndEvent => "terminateEndEvent",
            NodeType::ErrorEvent => "errorEvent",
            NodeType::TimerEvent => "timerEvent",
            NodeType::MessageEvent => "messageEvent",
            NodeType::SignalEvent => "signalEvent",
            NodeType::Task => "task",
            NodeType::UserTask => "userTask",
            NodeType::ManualTask => "manualTask",
            NodeType::ServiceTask => "serviceTask",
            NodeType::SendTask => "sendTask",
            NodeType::ReceiveTask => "receiveTask",
            NodeType::ScriptTask => "scriptTask",
            NodeType::BusinessRuleTask => "businessRuleTask",
            NodeType::ExclusiveGateway => "exclusiveGateway",
            NodeType::ParallelGateway => "parallelGateway",
            NodeType::InclusiveGateway => "inclusiveGateway",
            NodeType::EventBasedGateway => "eventBasedGateway",
            NodeType::SubProcess => "subProcess",
            NodeType::CallActivity => "callActivity",
        }
    }

    /// Whether the type reads `definition`, and what it means there.
    pub fn definition(self) -> Option<&'static str> {
        match self {
            NodeType::ErrorEvent => Some("the error code"),
            NodeType::TimerEvent => Some("an ISO 8601 duration, date or cycle"),
            NodeType::MessageEvent | NodeType::SendTask | NodeType::ReceiveTask => {
                Some("the message name")
            }
            NodeType::SignalEvent => Some("the signal name"),
            NodeType::ScriptTask => Some("`name = expression`"),
            NodeType::CallActivity => Some("the called process id"),
            _ => None,
        }
    }
}

/// One edit.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    /// Adds a node at the top level of a process.
    AddNode {
        /// The process (default: the first executable one, else the first).
        process: Option<String>,
        /// The new node's id.
        id: String,
        /// What it is.
        node_type: NodeType,
        /// Its label.
        name: String,
        /// Documentation.
        description: Option<String>,
        /// A lane (id or name) to put it in.
        lane: Option<String>,
        /// What the type reads ([`NodeType::definition`]).
        definition: Option<String>,
    },
    /// Removes a node with its flows, boundary events and lane entries.
    RemoveNode {
        /// The node's id.
        id: String,
    },
    /// Connects two nodes of one scope with a sequence flow.
    Connect {
        /// The flow's id (default: made from source and target).
        id: Option<String>,
        /// Where it leaves.
        source: String,
        /// Where it enters.
        target: String,
        /// A condition in the condition language.
        condition: Option<String>,
        /// Its label.
        name: Option<String>,
    },
    /// Adds a lane mapped to an organisation role.
    AddLane {
        /// A pool (participant) or process id (default: as for nodes).
        pool: Option<String>,
        /// The lane's id (default: made from its name).
        id: Option<String>,
        /// Its label.
        name: String,
        /// The role whose agents do its tasks.
        role: String,
    },
}

/// Why an edit was refused (nothing changed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The workflow moved on since the version the caller read.
    #[error("the workflow is at version {latest}, not {expected}: read it again")]
    Stale {
        /// The version the caller named.
        expected: i32,
        /// The latest version.
        latest: i32,
    },
    /// The id is already used in the document.
    #[error("'{0}' is already used in this workflow; ids are unique in a document")]
    DuplicateId(String),
    /// The id is not an XML name.
    #[error(
        "'{0}' is not a usable id: 1–128 characters, a letter or _ first, then letters, digits, _ . -"
    )]
    BadId(String),
    /// A name or text is too long or blank.
    #[error("{field} {message}")]
    BadText {
        /// Which field.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// No such process or pool.
    #[error("no process or pool '{0}' in this workflow")]
    UnknownProcess(String),
    /// The document has no process to edit.
    #[error("this workflow has no process")]
    NoProcess,
    /// No such node.
    #[error("no node '{id}' in this workflow")]
    UnknownNode {
        /// The field that named it.
        field: &'static str,
        /// The id.
        id: String,
    },
    /// No such lane.
    #[error("no lane '{0}' in the process")]
    UnknownLane(String),
    /// Source and target are in different processes or subprocesses.
    #[error(
        "'{source_id}' and '{target}' are not in the same process or subprocess: a sequence flow stays inside one"
    )]
    CrossScope {
        /// The source id.
        source_id: String,
        /// The target id.
        target: String,
    },
    /// A flow into a start event, out of an end event, or into a boundary event.
    #[error("{0}")]
    BadEnd(String),
    /// The condition does not read.
    #[error("the condition does not read: {0}")]
    BadCondition(String),
    /// `definition` is missing, not wanted, or does not read.
    #[error("{0}")]
    BadDefinition(String),
}

impl EditError {
    /// The stable code the API answers with.
    pub fn code(&self) -> &'static str {
        match self {
            EditError::Stale { .. } => "version_conflict",
            EditError::DuplicateId(_) => "duplicate_element",
            EditError::BadId(_) | EditError::BadText { .. } => "invalid_request",
            EditError::UnknownProcess(_) | EditError::NoProcess => "unknown_process",
            EditError::UnknownNode { .. } => "unknown_element",
            EditError::UnknownLane(_) => "unknown_lane",
            EditError::CrossScope { .. } => "cross_scope_flow",
            EditError::BadEnd(_) => "invalid_flow",
            EditError::BadCondition(_) => "invalid_condition",
            EditError::BadDefinition(_) => "invalid_definition",
        }
    }

    /// The request field at fault.
    pub fn field(&self) -> &'static str {
        match self {
            EditError::Stale { .. } => "version",
            EditError::DuplicateId(_) | EditError::BadId(_) => "id",
            EditError::BadText { field, .. } => field,
            EditError::UnknownProcess(_) | EditError::NoProcess => "process_id",
            EditError::UnknownNode { field, .. } => field,
            EditError::UnknownLane(_) => "lane",
            EditError::CrossScope { .. } | EditError::BadEnd(_) => "target",
            EditError::BadCondition(_) => "condition",
            EditError::BadDefinition(_) => "definition",
        }
    }
}

/// A definitions document with one empty executable process.
pub fn empty(process_id: &str, name: &str) -> Definitions {
    let mut process = Process::new(process_id);
    process.name = Some(name.to_owned());
    process.is_executable = Some(true);
    Definitions {
        id: Some(format!("Definitions_{process_id}")),
        target_namespace: "https://coordinator.dev/workflows".into(),
        exporter: Some("coordinator".into()),
        processes: vec![process],
        ..Definitions::default()
    }
}

/// The id a lane named `name` gets when none is given.
pub fn lane_id(name: &str) -> String {
    let body: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(MAX_ID - 5)
        .collect();
    format!("Lane_{body}")
}

/// Applies `edit`, or changes nothing and says why.
pub fn apply(defs: &mut Definitions, edit: Edit) -> Result<(), EditError> {
    match edit {
        Edit::AddNode {
            process,
            id,
            node_type,
            name,
            description,
            lane,
            definition,
        } => {
            check_id(defs, &id)?;
            check_text("name", &name, MAX_NAME, false)?;
            if let Some(d) = &description {
                check_text("description", d, 4000, false)?;
            }
            let p = process_index(defs, process.as_deref())?;
            let lane_at = match &lane {
                Some(l) => Some(find_lane(&defs.processes[p], l)?),
                None => None,
            };
            let kind = node_kind(defs, node_type, definition.as_deref())?;
            let mut node = Node::new(&id, kind);
            node.name = Some(name);
            node.documentation = description;
            let process = &mut defs.processes[p];
            process.nodes.push(node);
            if let Some(path) = lane_at
                && let Some(l) = lane_at_path_mut(process, &path)
            {
                l.flow_node_refs.push(id);
            }
            Ok(())
        }
        Edit::RemoveNode { id } => remove_node(defs, &id),
        Edit::Connect {
            id,
            source,
            target,
            condition,
            name,
        } => connect(defs, id, source, target, condition, name),
        Edit::AddLane {
            pool,
            id,
            name,
            role,
        } => add_lane(defs, pool, id, name, role),
    }
}

fn check_id(defs: &Definitions, id: &str) -> Result<(), EditError> {
    let mut chars = id.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if !first_ok || !rest_ok || id.chars().count() > MAX_ID {
        return Err(EditError::BadId(id.to_owned()));
    }
    if defs.contains_id(id) {
        return Err(EditError::DuplicateId(id.to_owned()));
    }
    Ok(())
}

fn check_text(
    field: &'static str,
    text: &str,
    max: usize,
    required: bool,
) -> Result<(), EditError> {
    if required && text.trim().is_empty() {
        return Err(EditError::BadText {
            field,
            message: "must not be blank".into(),
        });
    }
    if text.chars().count() > max {
        return Err(EditError::BadText {
            field,
            message: format!("must be at most {max} characters"),
        });
    }
    Ok(())
}

/// The process an edit names (a process id or a pool's id), else the first
/// executable process, else the first.
fn process_index(defs: &Definitions, named: Option<&str>) -> Result<usize, EditError> {
    match named {
        Some(name) => {
            let process_id = defs
                .collaborations
                .iter()
                .flat_map(|c| &c.participants)
                .find(|p| p.id == name)
                .and_then(|p| p.process_ref.clone())
                .unwrap_or_else(|| name.to_owned());
            defs.processes
                .iter()
                .position(|p| p.id == process_id)
                .ok_or_else(|| EditError::UnknownProcess(name.to_owned()))
        }
        None => defs
            .processes
            .iter()
            .position(|p| p.is_executable == Some(true))
            .or(if defs.processes.is_empty() {
                None
            } else {
                Some(0)
            })
            .ok_or(EditError::NoProcess),
    }
}

/// The way to a lane matching `key` (id, else name): indexes of the lane
/// set and of the lane at each level.
fn find_lane(p: &Process, key: &str) -> Result<Vec<(usize, usize)>, EditError> {
    fn walk(sets: &[LaneSet], key: &str, by_name: bool, path: &mut Vec<(usize, usize)>) -> bool {
        for (si, set) in sets.iter().enumerate() {
            for (li, lane) in set.lanes.iter().enumerate() {
                path.push((si, li));
                let hit = if by_name {
                    lane.name.as_deref().map(str::trim) == Some(key.trim())
                } else {
                    lane.id == key
                };
                if hit {
                    return true;
                }
                if let Some(child) = &lane.child_lane_set
                    && walk(std::slice::from_ref(child.as_ref()), key, by_name, path)
                {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    for by_name in [false, true] {
        let mut path = Vec::new();
        if walk(&p.lane_sets, key, by_name, &mut path) {
            return Ok(path);
        }
    }
    Err(EditError::UnknownLane(key.to_owned()))
}

fn lane_at_path_mut<'p>(
    p: &'p mut Process,
    path: &[(usize, usize)],
) -> Option<&'p mut crate::model::Lane> {
    let ((si, li), rest) = path.split_first()?;
    let mut lane = p.lane_sets.get_mut(*si)?.lanes.get_mut(*li)?;
    for (_, li) in rest {
        lane = lane.child_lane_set.as_mut()?.lanes.get_mut(*li)?;
    }
    Some(lane)
}

fn node_kind(
    defs: &mut Definitions,
    t: NodeType,
    definition: Option<&str>,
) -> Result<NodeKind, EditError> {
    let definition = definition.map(str::trim).filter(|d| !d.is_empty());
    let needed = || {
        definition.ok_or_else(|| {
            EditError::BadDefinition(format!(
                "a {} needs `definition`: {}",
                t.as_str(),
                t.definition().unwrap_or("")
            ))
        })
    };
    if t.definition().is_none() && definition.is_some() {
        return Err(EditError::BadDefinition(format!(
            "a {} takes no `definition`",
            t.as_str()
        )));
    }
    let task = |task| NodeKind::Task { task, loop_: None };
    let gateway = |gateway| NodeKind::Gateway { gateway };
    Ok(match t {
        NodeType::StartEvent => NodeKind::StartEvent {
            trigger: Trigger::None,
            interrupting: true,
        },
        NodeType::EndEvent => NodeKind::EndEvent {
            result: Trigger::None,
        },
        NodeType::TerminateEndEvent => NodeKind::EndEvent {
            result: Trigger::Terminate {
                id: None,
                extras: Preserved::default(),
            },
        },
        NodeType::ErrorEvent => {
            let code = needed()?;
            NodeKind::EndEvent {
                result: Trigger::Error {
                    id: None,
                    error_ref: Some(error_ref(defs, code)),
                    extras: Preserved::default(),
                },
            }
        }
        NodeType::TimerEvent => NodeKind::IntermediateCatch {
            trigger: Trigger::Timer {
                id: None,
                timer: timer(needed()?),
                extras: Preserved::default(),
            },
        },
        NodeType::MessageEvent => NodeKind::IntermediateCatch {
            trigger: Trigger::Message {
                id: None,
                message_ref: Some(message_ref(defs, needed()?)),
                extras: Preserved::default(),
            },
        },
        NodeType::SignalEvent => NodeKind::IntermediateCatch {
            trigger: Trigger::Signal {
                id: None,
                signal_ref: Some(signal_ref(defs, needed()?)),
                extras: Preserved::default(),
            },
        },
        NodeType::Task => task(TaskKind::Task),
        NodeType::UserTask => task(TaskKind::User),
        NodeType::ManualTask => task(TaskKind::Manual),
        NodeType::ServiceTask => task(TaskKind::Service),
        NodeType::BusinessRuleTask => task(TaskKind::BusinessRule),
        NodeType::SendTask => task(TaskKind::Send {
            message_ref: Some(message_ref(defs, needed()?)),
        }),
        NodeType::ReceiveTask => task(TaskKind::Receive {
            message_ref: Some(message_ref(defs, needed()?)),
        }),
        NodeType::ScriptTask => {
            let script = needed()?;
            if crate::validate::script_assignment(script).is_none() {
                return Err(EditError::BadDefinition(
                    "a script task's definition is `name = expression` in the condition language"
                        .into(),
                ));
            }
            task(TaskKind::Script {
                format: Some("coordinator-expression".into()),
                script: Some(script.to_owned()),
            })
        }
        NodeType::ExclusiveGateway => gateway(GatewayKind::Exclusive),
        NodeType::ParallelGateway => gateway(GatewayKind::Parallel),
        NodeType::InclusiveGateway => gateway(GatewayKind::Inclusive),
        NodeType::EventBasedGateway => gateway(GatewayKind::EventBased),
        NodeType::SubProcess => NodeKind::SubProcess {
            triggered_by_event: false,
            loop_: None,
            lane_sets: Vec::new(),
            nodes: Vec::new(),
            flows: Vec::new(),
            data: Vec::new(),
            artifacts: Vec::new(),
        },
        NodeType::CallActivity => NodeKind::CallActivity {
            called_element: Some(needed()?.to_owned()),
            loop_: None,
        },
    })
}

/// `P…` is a duration, `R…` a cycle, anything else a date.
fn timer(text: &str) -> TimerDef {
    let mut t = TimerDef {
        date: None,
        duration: None,
        cycle: None,
        attributes: Vec::new(),
    };
    match text.chars().next() {
        Some('P') => t.duration = Some(text.to_owned()),
        Some('R') => t.cycle = Some(text.to_owned()),
        _ => t.date = Some(text.to_owned()),
    }
    t
}

/// The id of the message named `name`, declared if new.
fn message_ref(defs: &mut Definitions, name: &str) -> String {
    if let Some(m) = defs
        .messages
        .iter()
        .find(|m| m.name.as_deref() == Some(name))
    {
        return m.id.clone();
    }
    let id = fresh(defs, &format!("Message_{}", slug(name)));
    defs.messages.push(MessageDef {
        id: id.clone(),
        name: Some(name.to_owned()),
        extras: Preserved::default(),
    });
    id
}

fn signal_ref(defs: &mut Definitions, name: &str) -> String {
    if let Some(s) = defs
        .signals
        .iter()
        .find(|s| s.name.as_deref() == Some(name))
    {
        return s.id.clone();
    }
    let id = fresh(defs, &format!("Signal_{}", slug(name)));
    defs.signals.push(SignalDef {
        id: id.clone(),
        name: Some(name.to_owned()),
        extras: Preserved::default(),
    });
    id
}

fn error_ref(defs: &mut Definitions, code: &str) -> String {
    if let Some(e) = defs
        .errors
        .iter()
        .find(|e| e.error_code.as_deref() == Some(code))
    {
        return e.id.clone();
    }
    let id = fresh(defs, &format!("Error_{}", slug(code)));
    defs.errors.push(crate::model::ErrorDef {
        id: id.clone(),
        name: Some(code.to_owned()),
        error_code: Some(code.to_owned()),
        extras: Preserved::default(),
    });
    id
}

fn slug(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(64)
        .collect()
}

/// `base`, or `base_2`, `base_3`… whichever is not used yet.
fn fresh(defs: &Definitions, base: &str) -> String {
    let ids = defs.ids();
    let taken = |id: &str| ids.iter().any(|i| i == id);
    if !taken(base) {
        return base.to_owned();
    }
    (2..)
        .map(|n| format!("{base}_{n}"))
        .find(|id| !taken(id))
        .unwrap_or_else(|| base.to_owned())
}

fn remove_node(defs: &mut Definitions, id: &str) -> Result<(), EditError> {
    let (p, path) = {
        let (process, at) = defs.find_node(id).ok_or_else(|| EditError::UnknownNode {
            field: "element_id",
            id: id.to_owned(),
        })?;
        let p = defs
            .processes
            .iter()
            .position(|x| x.id == process.id)
            .unwrap_or(0);
        (
            p,
            at.path.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(),
        )
    };
    let path_refs: Vec<&str> = path.iter().map(String::as_str).collect();
    let process = &mut defs.processes[p];
    let mut gone: Vec<String> = vec![id.to_owned()];
    if let Some(scope) = process.scope_at_mut(&path_refs) {
        // Boundary events of the node go with it.
        gone.extend(
            scope
                .nodes
                .iter()
                .filter(|n| matches!(&n.kind, NodeKind::Boundary { attached_to, .. } if attached_to == id))
                .map(|n| n.id.clone()),
        );
        scope.nodes.retain(|n| !gone.contains(&n.id));
        let flows: Vec<String> = scope
            .flows
            .iter()
            .filter(|f| gone.contains(&f.source) || gone.contains(&f.target))
            .map(|f| f.id.clone())
            .collect();
        scope.flows.retain(|f| !flows.contains(&f.id));
        for n in scope.nodes.iter_mut() {
            if n.default_flow.as_ref().is_some_and(|d| flows.contains(d)) {
                n.default_flow = None;
            }
        }
    }
    fn unlist(sets: &mut [LaneSet], gone: &[String]) {
        for set in sets {
            for lane in &mut set.lanes {
                lane.flow_node_refs.retain(|r| !gone.contains(r));
                if let Some(child) = lane.child_lane_set.as_mut() {
                    unlist(std::slice::from_mut(child.as_mut()), gone);
                }
            }
        }
    }
    unlist(&mut process.lane_sets, &gone);
    for c in &mut defs.collaborations {
        c.message_flows
            .retain(|m| !gone.contains(&m.source) && !gone.contains(&m.target));
    }
    Ok(())
}

fn connect(
    defs: &mut Definitions,
    id: Option<String>,
    source: String,
    target: String,
    condition: Option<String>,
    name: Option<String>,
) -> Result<(), EditError> {
    let unknown = |field: &'static str, id: &str| EditError::UnknownNode {
        field,
        id: id.to_owned(),
    };
    let (sp, s_at) = defs
        .find_node(&source)
        .ok_or_else(|| unknown("source", &source))?;
    let (tp, t_at) = defs
        .find_node(&target)
        .ok_or_else(|| unknown("target", &target))?;
    if sp.id != tp.id || s_at.path != t_at.path {
        return Err(EditError::CrossScope {
            source_id: source,
            target,
        });
    }
    match (&s_at.node.kind, &t_at.node.kind) {
        (NodeKind::EndEvent { .. }, _) => {
            return Err(EditError::BadEnd(format!(
                "'{source}' is an end event: no flow leaves it"
            )));
        }
        (_, NodeKind::StartEvent { .. }) => {
            return Err(EditError::BadEnd(format!(
                "'{target}' is a start event: no flow enters it"
            )));
        }
        (_, NodeKind::Boundary { .. }) => {
            return Err(EditError::BadEnd(format!(
                "'{target}' is a boundary event: no flow enters it"
            )));
        }
        _ => {}
    }
    if let Some(c) = &condition {
        expr::parse(c).map_err(|e| EditError::BadCondition(e.to_string()))?;
    }
    if let Some(n) = &name {
        check_text("name", n, MAX_NAME, false)?;
    }
    let id = match id {
        Some(id) => {
            check_id(defs, &id)?;
            id
        }
        None => fresh(defs, &format!("Flow_{}_{}", slug(&source), slug(&target))),
    };
    let p = defs
        .processes
        .iter()
        .position(|x| x.id == sp.id)
        .unwrap_or(0);
    let path: Vec<String> = s_at.path.iter().map(|s| (*s).to_owned()).collect();
    let path_refs: Vec<&str> = path.iter().map(String::as_str).collect();
    if let Some(scope) = defs.processes[p].scope_at_mut(&path_refs) {
        scope.flows.push(SequenceFlow {
            id,
            name,
            source,
            target,
            condition,
            condition_attributes: Vec::new(),
            documentation: None,
            extras: Preserved::default(),
        });
    }
    Ok(())
}

fn add_lane(
    defs: &mut Definitions,
    pool: Option<String>,
    id: Option<String>,
    name: String,
    role: String,
) -> Result<(), EditError> {
    check_text("name", &name, 200, true)?;
    check_text("role", &role, 128, true)?;
    let id = id.unwrap_or_else(|| lane_id(&name));
    check_id(defs, &id)?;
    let p = process_index(defs, pool.as_deref())?;
    let process = &mut defs.processes[p];
    if process.lane_sets.is_empty() {
        process.lane_sets.push(LaneSet {
            id: Some(format!("LaneSet_{}", process.id)),
            name: None,
            lanes: Vec::new(),
            extras: Preserved::default(),
        });
    }
    let mut extras = Preserved::default();
    extras.attributes.push(Attribute::qualified(
        COORDINATOR_NS,
        COORDINATOR_PREFIX,
        "role",
        role.trim(),
    ));
    process.lane_sets[0].lanes.push(crate::model::Lane {
        id,
        name: Some(name),
        flow_node_refs: Vec::new(),
        child_lane_set: None,
        extras,
    });
    Ok(())
}

#[cfg(test)]
mod tests;
