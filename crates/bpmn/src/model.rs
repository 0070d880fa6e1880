//! The semantic model of a BPMN 2.0 definitions document.
//!
//! What the engine and agents need is interpreted into typed fields; the rest
//! (vendor attributes, `extensionElements`, elements the model has no type
//! for, the diagram) is kept verbatim in [`Preserved`] and element trees so
//! an export writes it back. Serialised as JSON, this is what the service
//! stores and `workflow_inspect` shows. Incoming and outgoing flows are not
//! stored on nodes: they follow from the flows.

use serde::{Deserialize, Serialize};

pub use crate::xml::tree::{Attribute, Content, Element, NsStr};

mod query;
mod routes;

pub use query::{NodeAt, Scope, ScopeMut};
pub use routes::MessageRoute;

/// The namespace of this service's own BPMN attributes.
pub const COORDINATOR_NS: &str = "https://coordinator.dev/schema/bpmn/1.0";

/// A name as one line: its words joined by single spaces (names in
/// diagrams often hold line breaks).
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Serde helper: skip `false`.
fn is_false(b: &bool) -> bool {
    !*b
}

/// Serde helper: `true` when absent.
fn yes() -> bool {
    true
}

/// Serde helper: skip `true`.
fn is_true(b: &bool) -> bool {
    *b
}

/// What an element carries that the model does not interpret, kept in
/// document order so an export writes it back where it was.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Preserved {
    /// Attributes not interpreted (vendor ones with their namespace).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<Attribute>,
    /// Children that come first (`extensionElements`, extra `documentation`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leading: Vec<Element>,
    /// Other children found before the interpreted content.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Element>,
    /// Children found after the interpreted content.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trailing: Vec<Element>,
}

impl Preserved {
    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.attributes.is_empty()
            && self.leading.is_empty()
            && self.children.is_empty()
            && self.trailing.is_empty()
    }

    /// The value of the kept attribute `name` in namespace `ns`.
    pub fn attribute(&self, ns: Option<&str>, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|a| a.is(ns, name))
            .map(|a| a.value.as_str())
    }

    /// Every kept child element, in the order they are written.
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.leading
            .iter()
            .chain(&self.children)
            .chain(&self.trailing)
    }

    /// The kept `extensionElements`, if any.
    pub fn extension_elements(&self) -> Option<&Element> {
        self.elements()
            .find(|e| e.bpmn_name() == Some("extensionElements"))
    }
}

/// A namespace the source declared on its root that no element or attribute
/// name uses with that prefix, kept so that QName values using the prefix
/// (`xsd:string`, `tns:Message_1`) stay resolvable. (Namespaces names use
/// are declared again from the names.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Namespace {
    /// The prefix.
    pub prefix: String,
    /// The namespace URI.
    pub uri: String,
}

/// A BPMN `definitions` document.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Definitions {
    /// The `id` attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The `name` attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The `targetNamespace` attribute (required by the schema).
    #[serde(default)]
    pub target_namespace: String,
    /// The tool that wrote the document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exporter: Option<String>,
    /// The version of that tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exporter_version: Option<String>,
    /// Root namespace declarations names do not account for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<Namespace>,
    /// The processes.
    #[serde(default)]
    pub processes: Vec<Process>,
    /// The collaborations (pools and message flows).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collaborations: Vec<Collaboration>,
    /// Message definitions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<MessageDef>,
    /// Signal definitions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signals: Vec<SignalDef>,
    /// Error definitions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ErrorDef>,
    /// Escalation definitions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalations: Vec<EscalationDef>,
    /// Data stores.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data_stores: Vec<DataStoreDef>,
    /// Root elements the model has no type for (`itemDefinition`,
    /// `globalTask`, `category`, `resource`, choreographies...), verbatim.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub root_elements: Vec<Element>,
    /// The `bpmndi:BPMNDiagram` elements, verbatim.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagrams: Vec<Element>,
    /// Everything else on `definitions`.
    #[serde(default, skip_serializing_if = "Preserved::is_empty")]
    pub extras: Preserved,
}

/// A `message` root element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageDef {
    /// Its id.
    pub id: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What is not interpreted.
    #[serde(default, skip_serializing_if = "Preserved::is_empty")]
    pub extras: Preserved,
}

/// A `signal` root element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignalDef {
    /// Its id.
    pub id: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What is not interpreted.
    #[serde(default, skip_serializing_if = "Preserved::is_empty")]
    pub extras: Preserved,
}

/// An `error` root element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorDef {
    /// Its id.
    pub id: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The `errorCode` a thrower and a catcher match on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// What is not interpreted.
    #[serde(default, skip_serializing_if = "Preserved::is_empty")]
    pub extras: Preserved,
}

/// An `escalation` root element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EscalationDef {
    /// Its id.
    pub id: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The `escalationCode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation_code: Option<String>,
    /// What is not interpreted.
    #[serde(default, skip_serializing_if = "Preserved::is_empty")]
    pub extras: Preserved,
}

/// A `dataStore` root element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataStoreDef {
    /// Its id.
    pub id: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What is not interpreted (capacity, item subject...).
    #[serde(default, skip_serializing_if = "Preserved::is_empty")]
    pub extras: Preserved,
}

/// A `process`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Process {
    /// Its id.
    pub id: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `isExecutable`, when the document says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_executable: Option<bool>,
    /// The first plain `documentation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation: Option<String>,
    /// Lanes, in their lane sets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lane_sets: Vec<LaneSet>,
    /// Flow nodes (events, activities, gateways) at the top level.
    #[serde(default)]
    pub nodes: Vec<Node>,
    /// Sequence flows between the top-level nodes.
    #[serde(default)]
    pub flows: Vec<SequenceFlow>,
    /// Data objects and data object/store references.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data: Vec<DataElement>,
    /// Text annotations, associations, groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// What is not interpreted.
    #[serde(default, skip_serializing_if = "Preserved::is_empty")]
    pub extras: Preserved,
}

/// A `laneSet`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneSet {
    /// Its id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The lanes.
    #[serde(default)]
    pub lanes: Vec<Lane>,
    /// What is not interpreted.
    #[serde(default, skip_serializing_if = "Preserved::is_empty")]
    pub extras: Preserved,
}

/// A `lane`: the nodes one role performs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lane {
    /// Its id.
    pub id: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Ids of the nodes in the lane.
    #[serde(default)]
    pub flow_node_refs: Vec<String>,
    /// Nested lanes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_lane_set: Option<Box<LaneSet>>,
    /// What is not interpreted.
    #[serde(default, skip_serializing_if = "Preserved::is_empty")]
    pub extras: Preserved,
}

/// A flow node: an event, an activity or a gateway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Its id.
    pub id: String,
    /// Its name (may hold line breaks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What it is.
    pub kind: NodeKind,
    /// The `default` flow of a gateway or activity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_flow: Option<String>,
    /// The first plain `documentation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation: Option<String>,
    /// What is not interpreted.
    #[serde(default, skip_serializing_if = "Preserved::is_empty")]
    pub extras: Preserved,
}

/// The kinds of flow node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum NodeKind {
    /// `startEvent`.
    StartEvent {
        /// What starts it.
        trigger: Trigger,
        /// `isInterrupting` (event subprocesses).
        #[serde(default = "yes", skip_serializing_if = "is_true")]
        interrupting: bool,
    },
    /// `endEvent`.
    EndEvent {
        /// What it throws.
        result: Trigger,
    },
    /// `intermediateCatchEvent`.
    IntermediateCatch {
        /// What it waits for.
        trigger: Trigger,
    },
    /// `intermediateThrowEvent`.
    IntermediateThrow {
        /// What it throws.
        result: Trigger,
    },
    /// `boundaryEvent`.
    Boundary {
        /// The activity it is attached to.
        attached_to: String,
        /// `cancelActivity`: whether it interrupts the activity.
        #[serde(default = "yes")]
        cancel_activity: bool,
        /// What it catches.
        trigger: Trigger,
    },
    /// A task of any type.
    Task {
        /// Which task.
        task: TaskKind,
        /// Loop or multi-instance characteristics.
        #[serde(rename = "loop", default, skip_serializing_if = "Option::is_none")]
        loop_: Option<Loop>,
    },
    /// An embedded `subProcess` (an event subprocess when triggered by event).
    SubProcess {
        /// `triggeredByEvent`.
        #[serde(default, skip_serializing_if = "is_false")]
        triggered_by_event: bool,
        /// Loop or multi-instance characteristics.
        #[serde(rename = "loop", default, skip_serializing_if = "Option::is_none")]
        loop_: Option<Loop>,
        /// Lanes inside it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        lane_sets: Vec<LaneSet>,
        /// Its nodes.
        #[serde(default)]
        nodes: Vec<Node>,
        /// Its flows.
        #[serde(default)]
        flows: Vec<SequenceFlow>,
        /// Its data elements.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        data: Vec<DataElement>,
        /// Its artifacts.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        artifacts: Vec<Artifact>,
    },
    /// `callActivity`.
    CallActivity {
        /// The process or global task called (may be absent from the file).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        called_element: Option<String>,
        /// Loop or multi-instance characteristics.
        #[serde(rename = "loop", default, skip_serializing_if = "Option::is_none")]
        loop_: Option<Loop>,
    },
    /// A gateway.
    Gateway {
        /// Which gateway.
        gateway: GatewayKind,
    },
    /// A flow element in the BPMN namespace the model has no type for
    /// (`transaction`, `adHocSubProcess`, choreography activities...): kept
    /// whole in `extras` so validation can name it and export writes it.
    Unsupported {
        /// Its local element name.
        element: String,
    },
}

/// The task types.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TaskKind {
    /// An abstract `task`.
    Task,
    /// `userTask`.
    User,
    /// `manualTask`.
    Manual,
    /// `serviceTask`.
    Service,
    /// `sendTask`.
    Send {
        /// The message sent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_ref: Option<String>,
    },
    /// `receiveTask`.
    Receive {
        /// The message waited for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_ref: Option<String>,
    },
    /// `scriptTask`.
    Script {
        /// `scriptFormat`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        format: Option<String>,
        /// The `script` text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        script: Option<String>,
    },
    /// `businessRuleTask`.
    BusinessRule,
}

/// The gateway types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GatewayKind {
    /// `exclusiveGateway`: one branch.
    Exclusive,
    /// `inclusiveGateway`: every branch whose condition holds.
    Inclusive,
    /// `parallelGateway`: all branches.
    Parallel,
    /// `eventBasedGateway`: the first event to happen.
    EventBased,
    /// `complexGateway` (its activation condition stays in `extras`).
    Complex,
}

/// What an event catches or throws: its event definition(s). Each
/// definition keeps its own id and uninterpreted parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Trigger {
    /// No event definition.
    None,
    /// `messageEventDefinition`.
    Message {
        /// Its id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_ref: Option<String>,
        /// What is not interpreted.
        #[serde(default, skip_serializing_if = "Preserved::is_empty")]
        extras: Preserved,
    },
    /// `timerEventDefinition`.
    Timer {
        /// Its id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The time expression (any part may be missing or empty).
        timer: TimerDef,
        /// What is not interpreted.
        #[serde(default, skip_serializing_if = "Preserved::is_empty")]
        extras: Preserved,
    },
    /// `signalEventDefinition`.
    Signal {
        /// Its id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The signal.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signal_ref: Option<String>,
        /// What is not interpreted.
        #[serde(default, skip_serializing_if = "Preserved::is_empty")]
        extras: Preserved,
    },
    /// `errorEventDefinition`.
    Error {
        /// Its id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The error.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_ref: Option<String>,
        /// What is not interpreted.
        #[serde(default, skip_serializing_if = "Preserved::is_empty")]
        extras: Preserved,
    },
    /// `escalationEventDefinition`.
    Escalation {
        /// Its id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The escalation.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        escalation_ref: Option<String>,
        /// What is not interpreted.
        #[serde(default, skip_serializing_if = "Preserved::is_empty")]
        extras: Preserved,
    },
    /// `terminateEventDefinition`.
    Terminate {
        /// Its id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// What is not interpreted.
        #[serde(default, skip_serializing_if = "Preserved::is_empty")]
        extras: Preserved,
    },
    /// `conditionalEventDefinition`.
    Conditional {
        /// Its id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The text of its `condition`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        condition: Option<String>,
        /// Attributes of the `condition` element (`language`...).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        condition_attributes: Vec<Attribute>,
        /// What is not interpreted.
        #[serde(default, skip_serializing_if = "Preserved::is_empty")]
        extras: Preserved,
    },
    /// `linkEventDefinition`.
    Link {
        /// Its id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The link name throw and catch match on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// What is not interpreted.
        #[serde(default, skip_serializing_if = "Preserved::is_empty")]
        extras: Preserved,
    },
    /// `compensateEventDefinition`.
    Compensation {
        /// Its id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The activity to compensate.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        activity_ref: Option<String>,
        /// What is not interpreted.
        #[serde(default, skip_serializing_if = "Preserved::is_empty")]
        extras: Preserved,
    },
    /// `cancelEventDefinition`.
    Cancel {
        /// Its id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// What is not interpreted.
        #[serde(default, skip_serializing_if = "Preserved::is_empty")]
        extras: Preserved,
    },
    /// Several event definitions on one event, in document order.
    Multiple {
        /// The definitions.
        definitions: Vec<Trigger>,
    },
}

/// A timer's expression: `timeDate`, `timeDuration` or `timeCycle` text, any
/// of them missing, or present and empty.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TimerDef {
    /// `timeDate` (ISO 8601 date-time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// `timeDuration` (ISO 8601 duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// `timeCycle` (ISO 8601 repeating interval or cron).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle: Option<String>,
    /// Attributes of the expression element (`id`, `language`...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<Attribute>,
}

/// Loop characteristics of an activity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Loop {
    /// `standardLoopCharacteristics`: repeat while a condition holds.
    Standard {
        /// Its id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The text of `loopCondition`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        condition: Option<String>,
        /// Attributes of `loopCondition`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        condition_attributes: Vec<Attribute>,
        /// What is not interpreted (`testBefore`, `loopMaximum`...).
        #[serde(default, skip_serializing_if = "Preserved::is_empty")]
        extras: Preserved,
    },
    /// `multiInstanceLoopCharacteristics`: one instance per item or count.
    MultiInstance {
        /// Its id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// `isSequential`.
        #[serde(default)]
        sequential: bool,
        /// The collection to iterate (`camunda:collection`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        collection: Option<String>,
        /// The variable holding one item (`camunda:elementVariable`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        element_variable: Option<String>,
        /// The standard `loopDataInputRef` (the collection, BPMN style).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        loop_data_input_ref: Option<String>,
        /// The text of `loopCardinality`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cardinality: Option<String>,
        /// Attributes of `loopCardinality`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        cardinality_attributes: Vec<Attribute>,
        /// The text of `completionCondition`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        completion_condition: Option<String>,
        /// Attributes of `completionCondition`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        completion_condition_attributes: Vec<Attribute>,
        /// What is not interpreted (`inputDataItem`...).
        #[serde(default, skip_serializing_if = "Preserved::is_empty")]
        extras: Preserved,
    },
}

/// A `sequenceFlow`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequenceFlow {
    /// Its id.
    pub id: String,
    /// Its name (often the answer a gateway branch stands for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The source node's id.
    pub source: String,
    /// The target node's id.
    pub target: String,
    /// The text of `conditionExpression`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// Attributes of `conditionExpression` other than the implied
    /// `xsi:type="tFormalExpression"` (`language`, `id`...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub condition_attributes: Vec<Attribute>,
    /// The first plain `documentation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation: Option<String>,
    /// What is not interpreted.
    #[serde(default, skip_serializing_if = "Preserved::is_empty")]
    pub extras: Preserved,
}

/// A data object or a reference to one or to a data store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataElement {
    /// Its id.
    pub id: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Which one.
    pub kind: DataKind,
    /// What is not interpreted.
    #[serde(default, skip_serializing_if = "Preserved::is_empty")]
    pub extras: Preserved,
}

/// The kinds of data element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum DataKind {
    /// `dataObject`.
    Object {
        /// `isCollection`.
        #[serde(default, skip_serializing_if = "is_false")]
        is_collection: bool,
    },
    /// `dataObjectReference`.
    ObjectReference {
        /// The data object.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data_object_ref: Option<String>,
    },
    /// `dataStoreReference`.
    StoreReference {
        /// The data store.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data_store_ref: Option<String>,
    },
}

/// An artifact: annotation, association or group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Artifact {
    /// Its id.
    pub id: String,
    /// Which one.
    pub kind: ArtifactKind,
    /// What is not interpreted.
    #[serde(default, skip_serializing_if = "Preserved::is_empty")]
    pub extras: Preserved,
}

/// The kinds of artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ArtifactKind {
    /// `textAnnotation`.
    TextAnnotation {
        /// Its `text`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// `association` (annotation or data links).
    Association {
        /// `sourceRef`.
        source: String,
        /// `targetRef`.
        target: String,
        /// `associationDirection`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        direction: Option<String>,
    },
    /// `group`.
    Group {
        /// `categoryValueRef`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        category_value_ref: Option<String>,
    },
}

/// A `collaboration`: pools and the message flows between them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Collaboration {
    /// Its id.
    pub id: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The pools.
    #[serde(default)]
    pub participants: Vec<Participant>,
    /// Message flows between pools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub message_flows: Vec<MessageFlow>,
    /// Artifacts drawn on the collaboration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// What is not interpreted.
    #[serde(default, skip_serializing_if = "Preserved::is_empty")]
    pub extras: Preserved,
}

/// A `participant` (a pool).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Participant {
    /// Its id.
    pub id: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The process in the pool (none for a black-box pool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_ref: Option<String>,
    /// What is not interpreted.
    #[serde(default, skip_serializing_if = "Preserved::is_empty")]
    pub extras: Preserved,
}

/// A `messageFlow` between pools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageFlow {
    /// Its id.
    pub id: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The sending element's id.
    pub source: String,
    /// The receiving element's id.
    pub target: String,
    /// The message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_ref: Option<String>,
    /// What is not interpreted.
    #[serde(default, skip_serializing_if = "Preserved::is_empty")]
    pub extras: Preserved,
}
