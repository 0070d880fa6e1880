//! Lookups over the model: scopes (a process or subprocess body), nodes
//! found with their path, element names, ids.

use super::*;

/// The content of a process or of an embedded subprocess.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// Lanes.
    pub lane_sets: &'a [LaneSet],
    /// Nodes.
    pub nodes: &'a [Node],
    /// Sequence flows.
    pub flows: &'a [SequenceFlow],
    /// Data elements.
    pub data: &'a [DataElement],
    /// Artifacts.
    pub artifacts: &'a [Artifact],
}

/// The content of a process or subprocess, for editing.
#[derive(Debug)]
pub struct ScopeMut<'a> {
    /// Lanes.
    pub lane_sets: &'a mut Vec<LaneSet>,
    /// Nodes.
    pub nodes: &'a mut Vec<Node>,
    /// Sequence flows.
    pub flows: &'a mut Vec<SequenceFlow>,
    /// Data elements.
    pub data: &'a mut Vec<DataElement>,
    /// Artifacts.
    pub artifacts: &'a mut Vec<Artifact>,
}

/// A node found in a process: the ids of the subprocesses around it
/// (outermost first; empty at the top level) and the scope holding it.
#[derive(Debug, Clone)]
pub struct NodeAt<'a> {
    /// Ids of the enclosing subprocesses.
    pub path: Vec<&'a str>,
    /// The node.
    pub node: &'a Node,
    /// The scope the node and its flows are in.
    pub scope: Scope<'a>,
}

impl<'a> Scope<'a> {
    /// The node `id` directly in this scope.
    pub fn node(&self, id: &str) -> Option<&'a Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// Flows leaving `node_id`, in document order.
    pub fn outgoing(&self, node_id: &str) -> Vec<&'a SequenceFlow> {
        self.flows.iter().filter(|f| f.source == node_id).collect()
    }

    /// Flows entering `node_id`, in document order.
    pub fn incoming(&self, node_id: &str) -> Vec<&'a SequenceFlow> {
        self.flows.iter().filter(|f| f.target == node_id).collect()
    }

    /// Finds `id` here or in a nested subprocess; `path` is the way so far.
    fn find(self, id: &str, path: &mut Vec<&'a str>) -> Option<NodeAt<'a>> {
        if let Some(node) = self.node(id) {
            return Some(NodeAt {
                path: path.clone(),
                node,
                scope: self,
            });
        }
        for n in self.nodes {
            if let Some(inner) = n.scope() {
                path.push(&n.id);
                if let Some(found) = inner.find(id, path) {
                    return Some(found);
                }
                path.pop();
            }
        }
        None
    }

    /// Every node here and nested, depth first, in document order.
    fn collect(self, path: &mut Vec<&'a str>, out: &mut Vec<NodeAt<'a>>) {
        for n in self.nodes {
            out.push(NodeAt {
                path: path.clone(),
                node: n,
                scope: self,
            });
            if let Some(inner) = n.scope() {
                path.push(&n.id);
                inner.collect(path, out);
                path.pop();
            }
        }
    }
}

impl Process {
    /// An empty process.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            name: None,
            is_executable: None,
            documentation: None,
            lane_sets: Vec::new(),
            nodes: Vec::new(),
            flows: Vec::new(),
            data: Vec::new(),
            artifacts: Vec::new(),
            extras: Preserved::default(),
        }
    }

    /// The top-level content.
    pub fn scope(&self) -> Scope<'_> {
        Scope {
            lane_sets: &self.lane_sets,
            nodes: &self.nodes,
            flows: &self.flows,
            data: &self.data,
            artifacts: &self.artifacts,
        }
    }

    /// The top-level content, for editing.
    pub fn scope_mut(&mut self) -> ScopeMut<'_> {
        ScopeMut {
            lane_sets: &mut self.lane_sets,
            nodes: &mut self.nodes,
            flows: &mut self.flows,
            data: &mut self.data,
            artifacts: &mut self.artifacts,
        }
    }

    /// The content of the subprocess reached by `path` (ids, outermost
    /// first; empty for the top level), for editing.
    pub fn scope_at_mut(&mut self, path: &[&str]) -> Option<ScopeMut<'_>> {
        let mut scope = self.scope_mut();
        for id in path {
            let node = scope.nodes.iter_mut().find(|n| n.id == *id)?;
            scope = node.scope_mut()?;
        }
        Some(scope)
    }

    /// The node `id`, searching embedded subprocesses too.
    pub fn node(&self, id: &str) -> Option<NodeAt<'_>> {
        self.scope().find(id, &mut Vec::new())
    }

    /// The node `id` for editing, searching embedded subprocesses too.
    pub fn node_mut(&mut self, id: &str) -> Option<&mut Node> {
        fn find<'n>(nodes: &'n mut [Node], id: &str) -> Option<&'n mut Node> {
            let at = nodes.iter().position(|n| n.id == id);
            if let Some(at) = at {
                return nodes.get_mut(at);
            }
            nodes
                .iter_mut()
                .filter_map(|n| n.scope_mut())
                .find_map(|s| find(s.nodes, id))
        }
        find(&mut self.nodes, id)
    }

    /// Every node, nested ones included, depth first.
    pub fn all_nodes(&self) -> Vec<NodeAt<'_>> {
        let mut out = Vec::new();
        self.scope().collect(&mut Vec::new(), &mut out);
        out
    }

    /// The sequence flow `id`, searching embedded subprocesses too.
    pub fn flow(&self, id: &str) -> Option<&SequenceFlow> {
        self.flows.iter().find(|f| f.id == id).or_else(|| {
            self.all_nodes()
                .into_iter()
                .filter_map(|at| at.node.scope())
                .find_map(|s| s.flows.iter().find(|f| f.id == id))
        })
    }

    /// Flows leaving the node `id` (in the scope that holds it).
    pub fn outgoing(&self, node_id: &str) -> Vec<&SequenceFlow> {
        self.node(node_id)
            .map(|at| at.scope.outgoing(node_id))
            .unwrap_or_default()
    }

    /// Flows entering the node `id` (in the scope that holds it).
    pub fn incoming(&self, node_id: &str) -> Vec<&SequenceFlow> {
        self.node(node_id)
            .map(|at| at.scope.incoming(node_id))
            .unwrap_or_default()
    }

    /// Every lane, nested ones included, depth first.
    pub fn lanes(&self) -> Vec<&Lane> {
        fn walk<'l>(set: &'l LaneSet, out: &mut Vec<&'l Lane>) {
            for lane in &set.lanes {
                out.push(lane);
                if let Some(child) = &lane.child_lane_set {
                    walk(child, out);
                }
            }
        }
        let mut out = Vec::new();
        self.lane_sets.iter().for_each(|s| walk(s, &mut out));
        out
    }

    /// The innermost lane listing the node `id`.
    pub fn lane_of(&self, node_id: &str) -> Option<&Lane> {
        self.lanes()
            .into_iter()
            .rev()
            .find(|l| l.flow_node_refs.iter().any(|r| r == node_id))
    }
}

impl Node {
    /// A node with no name and nothing kept.
    pub fn new(id: impl Into<String>, kind: NodeKind) -> Self {
        Self {
            id: id.into(),
            name: None,
            kind,
            default_flow: None,
            documentation: None,
            extras: Preserved::default(),
        }
    }

    /// The content of an embedded subprocess.
    pub fn scope(&self) -> Option<Scope<'_>> {
        match &self.kind {
            NodeKind::SubProcess {
                lane_sets,
                nodes,
                flows,
                data,
                artifacts,
                ..
            } => Some(Scope {
                lane_sets,
                nodes,
                flows,
                data,
                artifacts,
            }),
            _ => None,
        }
    }

    /// The content of an embedded subprocess, for editing.
    pub fn scope_mut(&mut self) -> Option<ScopeMut<'_>> {
        match &mut self.kind {
            NodeKind::SubProcess {
                lane_sets,
                nodes,
                flows,
                data,
                artifacts,
                ..
            } => Some(ScopeMut {
                lane_sets,
                nodes,
                flows,
                data,
                artifacts,
            }),
            _ => None,
        }
    }

    /// The root event definitions the node names with kept
    /// `eventDefinitionRef` children (a QName's prefix dropped).
    pub fn event_definition_refs(&self) -> Vec<String> {
        self.extras
            .elements()
            .filter(|e| e.bpmn_name() == Some("eventDefinitionRef"))
            .filter_map(|e| e.text_only())
            .map(|t| {
                let t = t.trim();
                t.rsplit_once(':').map_or(t, |(_, local)| local).to_owned()
            })
            .filter(|t| !t.is_empty())
            .collect()
    }

    /// Whether the node is an event.
    pub fn is_event(&self) -> bool {
        self.kind.trigger().is_some()
    }

    /// Whether the node is an activity (task, subprocess, call activity).
    pub fn is_activity(&self) -> bool {
        matches!(
            self.kind,
            NodeKind::Task { .. } | NodeKind::SubProcess { .. } | NodeKind::CallActivity { .. }
        )
    }

    /// The gateway kind, if the node is a gateway.
    pub fn gateway(&self) -> Option<GatewayKind> {
        match self.kind {
            NodeKind::Gateway { gateway } => Some(gateway),
            _ => None,
        }
    }
}

impl NodeKind {
    /// The BPMN element name (`userTask`, `exclusiveGateway`...).
    pub fn element_name(&self) -> &str {
        match self {
            Self::StartEvent { .. } => "startEvent",
            Self::EndEvent { .. } => "endEvent",
            Self::IntermediateCatch { .. } => "intermediateCatchEvent",
            Self::IntermediateThrow { .. } => "intermediateThrowEvent",
            Self::Boundary { .. } => "boundaryEvent",
            Self::Task { task, .. } => match task {
                TaskKind::Task => "task",
                TaskKind::User => "userTask",
                TaskKind::Manual => "manualTask",
                TaskKind::Service => "serviceTask",
                TaskKind::Send { .. } => "sendTask",
                TaskKind::Receive { .. } => "receiveTask",
                TaskKind::Script { .. } => "scriptTask",
                TaskKind::BusinessRule => "businessRuleTask",
            },
            Self::SubProcess { .. } => "subProcess",
            Self::CallActivity { .. } => "callActivity",
            Self::Gateway { gateway } => match gateway {
                GatewayKind::Exclusive => "exclusiveGateway",
                GatewayKind::Inclusive => "inclusiveGateway",
                GatewayKind::Parallel => "parallelGateway",
                GatewayKind::EventBased => "eventBasedGateway",
                GatewayKind::Complex => "complexGateway",
            },
            Self::Unsupported { element } => element,
        }
    }

    /// What an event catches or throws; `None` for other nodes.
    pub fn trigger(&self) -> Option<&Trigger> {
        match self {
            Self::StartEvent { trigger, .. }
            | Self::IntermediateCatch { trigger }
            | Self::Boundary { trigger, .. } => Some(trigger),
            Self::EndEvent { result } | Self::IntermediateThrow { result } => Some(result),
            _ => None,
        }
    }

    /// What an event catches or throws, for editing; `None` for other nodes.
    pub fn trigger_mut(&mut self) -> Option<&mut Trigger> {
        match self {
            Self::StartEvent { trigger, .. }
            | Self::IntermediateCatch { trigger }
            | Self::Boundary { trigger, .. } => Some(trigger),
            Self::EndEvent { result } | Self::IntermediateThrow { result } => Some(result),
            _ => None,
        }
    }

    /// The loop characteristics of an activity.
    pub fn loop_characteristics(&self) -> Option<&Loop> {
        match self {
            Self::Task { loop_, .. }
            | Self::SubProcess { loop_, .. }
            | Self::CallActivity { loop_, .. } => loop_.as_ref(),
            _ => None,
        }
    }
}

impl Trigger {
    /// The event definition's element name; `None` for none or multiple.
    pub fn element_name(&self) -> Option<&'static str> {
        Some(match self {
            Self::None | Self::Multiple { .. } => return None,
            Self::Message { .. } => "messageEventDefinition",
            Self::Timer { .. } => "timerEventDefinition",
            Self::Signal { .. } => "signalEventDefinition",
            Self::Error { .. } => "errorEventDefinition",
            Self::Escalation { .. } => "escalationEventDefinition",
            Self::Terminate { .. } => "terminateEventDefinition",
            Self::Conditional { .. } => "conditionalEventDefinition",
            Self::Link { .. } => "linkEventDefinition",
            Self::Compensation { .. } => "compensateEventDefinition",
            Self::Cancel { .. } => "cancelEventDefinition",
        })
    }

    /// The definitions: none, this one, or the list of a multiple trigger.
    pub fn definitions(&self) -> Vec<&Trigger> {
        match self {
            Self::None => Vec::new(),
            Self::Multiple { definitions } => definitions.iter().collect(),
            one => vec![one],
        }
    }
}

impl Definitions {
    /// The process `id`.
    pub fn process(&self, id: &str) -> Option<&Process> {
        self.processes.iter().find(|p| p.id == id)
    }

    /// The process `id`, for editing.
    pub fn process_mut(&mut self, id: &str) -> Option<&mut Process> {
        self.processes.iter_mut().find(|p| p.id == id)
    }

    /// The collaboration `id`.
    pub fn collaboration(&self, id: &str) -> Option<&Collaboration> {
        self.collaborations.iter().find(|c| c.id == id)
    }

    /// The pool holding the process `process_id`.
    pub fn participant_of(&self, process_id: &str) -> Option<&Participant> {
        self.collaborations
            .iter()
            .flat_map(|c| &c.participants)
            .find(|p| p.process_ref.as_deref() == Some(process_id))
    }

    /// The node `id` in whichever process holds it.
    pub fn find_node(&self, id: &str) -> Option<(&Process, NodeAt<'_>)> {
        self.processes
            .iter()
            .find_map(|p| p.node(id).map(|at| (p, at)))
    }

    /// The root element the model does not type with this `id`
    /// (a `globalTask` a call activity calls, an `itemDefinition`...).
    pub fn root_element(&self, id: &str) -> Option<&Element> {
        self.root_elements.iter().find(|e| e.id() == Some(id))
    }

    /// Every id in the document, kept parts and diagram included, in
    /// document order (an id listed twice is a duplicate).
    pub fn ids(&self) -> Vec<String> {
        crate::xml::ids_in_order(self)
    }

    /// Whether `id` is used anywhere in the document.
    pub fn contains_id(&self, id: &str) -> bool {
        self.ids().iter().any(|i| i == id)
    }
}
