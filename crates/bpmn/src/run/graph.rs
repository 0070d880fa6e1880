//! An index over one process, built per call: every node (nested ones too)
//! with its flows, boundary events and container, so the runner looks
//! things up by id without walking the model each time.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::model::{
    Definitions, GatewayKind, Lane, LaneSet, Node, NodeKind, Process, SequenceFlow, TaskKind,
    Trigger,
};

/// A node with what the runner needs around it.
pub(super) struct Entry<'a> {
    /// The node.
    pub node: &'a Node,
    /// The subprocess holding it; `None` at the top level.
    pub container: Option<&'a str>,
    /// Flows leaving it, in document order.
    pub outgoing: Vec<&'a SequenceFlow>,
    /// Flows entering it, in document order.
    pub incoming: Vec<&'a SequenceFlow>,
    /// Boundary events attached to it, in document order.
    pub boundaries: Vec<&'a Node>,
}

/// The index of one process within its definitions.
pub(super) struct Graph<'a> {
    /// The definitions (messages, signals, errors).
    pub defs: &'a Definitions,
    /// The process.
    pub process: &'a Process,
    nodes: HashMap<&'a str, Entry<'a>>,
    /// Nodes of each container (`None` is the top level), in document order.
    containers: HashMap<Option<&'a str>, &'a [Node]>,
}

impl<'a> Graph<'a> {
    /// Indexes the process.
    pub fn new(defs: &'a Definitions, process: &'a Process) -> Self {
        let mut g = Graph {
            defs,
            process,
            nodes: HashMap::new(),
            containers: HashMap::new(),
        };
        g.add(None, &process.nodes, &process.flows);
        g
    }

    fn add(&mut self, container: Option<&'a str>, nodes: &'a [Node], flows: &'a [SequenceFlow]) {
        self.containers.insert(container, nodes);
        for node in nodes {
            self.nodes.insert(
                &node.id,
                Entry {
                    node,
                    container,
                    outgoing: flows.iter().filter(|f| f.source == node.id).collect(),
                    incoming: flows.iter().filter(|f| f.target == node.id).collect(),
                    boundaries: nodes
                        .iter()
                        .filter(|b| {
                            matches!(&b.kind, NodeKind::Boundary { attached_to, .. } if *attached_to == node.id)
                        })
                        .collect(),
                },
            );
            if let NodeKind::SubProcess { nodes, flows, .. } = &node.kind {
                self.add(Some(&node.id), nodes, flows);
            }
        }
    }

    /// The node `id` with its surroundings.
    pub fn entry(&self, id: &str) -> Option<&Entry<'a>> {
        self.nodes.get(id)
    }

    /// The node `id`, at any depth.
    pub fn node(&self, id: &str) -> Option<&'a Node> {
        self.nodes.get(id).map(|e| e.node)
    }

    /// Flows leaving the node, in document order.
    pub fn outgoing(&self, id: &str) -> &[&'a SequenceFlow] {
        self.nodes.get(id).map_or(&[], |e| e.outgoing.as_slice())
    }

    /// How many flows enter the node.
    pub fn incoming_count(&self, id: &str) -> usize {
        self.nodes.get(id).map_or(0, |e| e.incoming.len())
    }

    /// Boundary events attached to the node.
    pub fn boundaries(&self, id: &str) -> &[&'a Node] {
        self.nodes.get(id).map_or(&[], |e| e.boundaries.as_slice())
    }

    /// The nodes of a container (`None`: the process's top level).
    pub fn container_nodes(&self, container: Option<&str>) -> &'a [Node] {
        self.containers.get(&container).copied().unwrap_or(&[])
    }

    /// Where a scope's tokens start: its none start events, or, when the
    /// container has no start event at all, every node without incoming flow
    /// (BPMN's implicit start). Empty when only triggered starts exist.
    pub fn start_nodes(&self, container: Option<&str>) -> Vec<&'a Node> {
        let nodes = self.container_nodes(container);
        let none_starts: Vec<&Node> = nodes
            .iter()
            .filter(|n| {
                matches!(
                    n.kind,
                    NodeKind::StartEvent {
                        trigger: Trigger::None,
                        ..
                    }
                )
            })
            .collect();
        if !none_starts.is_empty() {
            return none_starts;
        }
        if nodes
            .iter()
            .any(|n| matches!(n.kind, NodeKind::StartEvent { .. }))
        {
            return Vec::new();
        }
        nodes
            .iter()
            .filter(|n| self.incoming_count(&n.id) == 0 && implicit_start(n))
            .collect()
    }

    /// Event subprocesses directly in a container, in document order.
    pub fn event_subprocesses(&self, container: Option<&str>) -> Vec<&'a Node> {
        self.container_nodes(container)
            .iter()
            .filter(|n| {
                matches!(
                    n.kind,
                    NodeKind::SubProcess {
                        triggered_by_event: true,
                        ..
                    }
                )
            })
            .collect()
    }

    /// The catch link event named `name` in the container of `from`.
    pub fn link_target(&self, from: &str, name: &str) -> Option<&'a Node> {
        let container = self.nodes.get(from)?.container;
        self.container_nodes(container)
            .iter()
            .find(|n| match &n.kind {
                NodeKind::IntermediateCatch {
                    trigger: Trigger::Link { name: Some(n), .. },
                } => n == name,
                _ => false,
            })
    }

    /// Whether a token at `from` can still get to `to` along sequence flows
    /// (leaving activities through their boundary events too).
    pub fn can_reach(&self, from: &str, to: &str) -> bool {
        let mut seen: HashSet<&str> = HashSet::new();
        let mut queue: VecDeque<&str> = VecDeque::from([from]);
        while let Some(id) = queue.pop_front() {
            if id == to {
                return true;
            }
            if !seen.insert(id) {
                continue;
            }
            if let Some(e) = self.nodes.get(id) {
                queue.extend(e.outgoing.iter().map(|f| f.target.as_str()));
                queue.extend(e.boundaries.iter().map(|b| b.id.as_str()));
            }
        }
        false
    }

    /// The innermost lane listing the node, looking through the lanes of
    /// its subprocesses and then at the lane of each enclosing subprocess.
    pub fn lane_of(&self, id: &str) -> Option<&'a Lane> {
        let mut current = id;
        loop {
            let entry = self.nodes.get(current)?;
            let sets: &'a [LaneSet] = match entry.container {
                None => &self.process.lane_sets,
                Some(sub) => match &self.nodes.get(sub)?.node.kind {
                    NodeKind::SubProcess { lane_sets, .. } => lane_sets,
                    _ => &[],
                },
            };
            if let Some(lane) = innermost_lane(sets, current) {
                return Some(lane);
            }
            current = entry.container?;
        }
    }

    /// A message's name (its id when it has none or is not declared).
    pub fn message_name(&self, message_ref: &str) -> String {
        self.defs
            .messages
            .iter()
            .find(|m| m.id == message_ref)
            .and_then(|m| m.name.clone())
            .unwrap_or_else(|| message_ref.to_owned())
    }

    /// A signal's name (its id when it has none or is not declared).
    pub fn signal_name(&self, signal_ref: &str) -> String {
        self.defs
            .signals
            .iter()
            .find(|s| s.id == signal_ref)
            .and_then(|s| s.name.clone())
            .unwrap_or_else(|| signal_ref.to_owned())
    }

    /// An error's code: its `errorCode`, else its id.
    pub fn error_code(&self, error_ref: &str) -> String {
        self.defs
            .errors
            .iter()
            .find(|e| e.id == error_ref)
            .and_then(|e| e.error_code.clone())
            .unwrap_or_else(|| error_ref.to_owned())
    }

    /// Whether the node is an inclusive gateway.
    pub fn is_inclusive(&self, id: &str) -> bool {
        self.node(id)
            .is_some_and(|n| n.gateway() == Some(GatewayKind::Inclusive))
    }
}

/// Whether a node without incoming flow starts its scope implicitly.
fn implicit_start(n: &Node) -> bool {
    match &n.kind {
        NodeKind::Boundary { .. } | NodeKind::StartEvent { .. } => false,
        NodeKind::SubProcess {
            triggered_by_event, ..
        } => !triggered_by_event,
        NodeKind::IntermediateCatch {
            trigger: Trigger::Link { .. },
        } => false,
        // Compensation handlers run only when compensation is thrown.
        _ => n.extras.attribute(None, "isForCompensation") != Some("true"),
    }
}

fn innermost_lane<'a>(sets: &'a [LaneSet], id: &str) -> Option<&'a Lane> {
    for set in sets {
        for lane in &set.lanes {
            if let Some(child) = &lane.child_lane_set
                && let Some(inner) = innermost_lane(std::slice::from_ref(child.as_ref()), id)
            {
                return Some(inner);
            }
            if lane.flow_node_refs.iter().any(|r| r == id) {
                return Some(lane);
            }
        }
    }
    None
}

/// Whether an event gateway may wait on this node after it.
pub(super) fn is_gateway_option(n: &Node) -> bool {
    match &n.kind {
        NodeKind::IntermediateCatch { trigger } => matches!(
            trigger,
            Trigger::Timer { .. } | Trigger::Message { .. } | Trigger::Signal { .. }
        ),
        NodeKind::Task {
            task: TaskKind::Receive { .. },
            loop_: None,
        } => true,
        _ => false,
    }
}
