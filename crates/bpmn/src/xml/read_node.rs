//! The content of a process or subprocess (flow nodes with their event
//! definitions and loop characteristics, lanes, sequence flows, data,
//! artifacts) from the element tree. Recursive: a subprocess holds a scope.

use crate::model::*;

use super::read_kit::{
    Attrs, Cx, Kept, NODES, Step, UNSUPPORTED_NODES, expression, id_of, required,
};
use super::{CAMUNDA_NS, ImportError};

/// Event definitions the model types.
const EVENT_DEFINITIONS: &[&str] = &[
    "messageEventDefinition",
    "timerEventDefinition",
    "signalEventDefinition",
    "errorEventDefinition",
    "escalationEventDefinition",
    "terminateEventDefinition",
    "conditionalEventDefinition",
    "linkEventDefinition",
    "compensateEventDefinition",
    "cancelEventDefinition",
];

pub(super) fn node(el: Element, cx: Cx<'_>) -> Result<Node, ImportError> {
    let Element {
        name: local,
        attributes,
        mut children,
        offset,
        ..
    } = el;
    // Incoming and outgoing follow from the flows; the export writes them.
    children.retain(|c| {
        !matches!(c, Content::Element(e) if matches!(e.bpmn_name(), Some("incoming" | "outgoing")))
    });
    let mut attrs = Attrs(attributes);
    let id = id_of(&mut attrs, &local, offset, cx)?;
    let name = attrs.take("name");
    let gateway = gateway_kind(&local);
    let unsupported = UNSUPPORTED_NODES.contains(&local.as_str());
    let is_event = local.ends_with("Event") && !unsupported;
    let takes_default = !unsupported
        && !is_event
        && !matches!(
            gateway,
            Some(GatewayKind::Parallel | GatewayKind::EventBased)
        );
    let default_flow = if takes_default {
        attrs.take("default")
    } else {
        None
    };
    let (kind, kept) = if unsupported {
        let mut kept = Kept::new(attrs);
        kept.sort(children, true, |child| Ok(Step::Keep(child)))?;
        (NodeKind::Unsupported { element: local }, kept)
    } else if let Some(gateway) = gateway {
        let mut kept = Kept::new(attrs);
        kept.sort(children, true, |child| Ok(Step::Keep(child)))?;
        (NodeKind::Gateway { gateway }, kept)
    } else if is_event {
        event(&local, attrs, children, offset, cx)?
    } else {
        activity(&local, attrs, children, cx)?
    };
    Ok(Node {
        id,
        name,
        kind,
        default_flow,
        documentation: kept.documentation,
        extras: kept.extras,
    })
}

fn gateway_kind(local: &str) -> Option<GatewayKind> {
    Some(match local {
        "exclusiveGateway" => GatewayKind::Exclusive,
        "inclusiveGateway" => GatewayKind::Inclusive,
        "parallelGateway" => GatewayKind::Parallel,
        "eventBasedGateway" => GatewayKind::EventBased,
        "complexGateway" => GatewayKind::Complex,
        _ => return None,
    })
}

fn event(
    local: &str,
    mut attrs: Attrs,
    children: Vec<Content>,
    offset: usize,
    cx: Cx<'_>,
) -> Result<(NodeKind, Kept), ImportError> {
    let interrupting = attrs.take_bool("isInterrupting").unwrap_or(true);
    let attached = if local == "boundaryEvent" {
        let to = required(&mut attrs, "attachedToRef", local, offset, cx)?;
        Some((to, attrs.take_bool("cancelActivity").unwrap_or(true)))
    } else {
        None
    };
    let mut definitions = Vec::new();
    let mut kept = Kept::new(attrs);
    kept.sort(children, true, |child| match event_definition(child)? {
        Ok(trigger) => {
            definitions.push(trigger);
            Ok(Step::Content)
        }
        Err(child) => Ok(Step::Keep(child)),
    })?;
    let trigger = match definitions.len() {
        0 => Trigger::None,
        1 => definitions.remove(0),
        _ => Trigger::Multiple { definitions },
    };
    let kind = match (local, attached) {
        ("startEvent", _) => NodeKind::StartEvent {
            trigger,
            interrupting,
        },
        ("endEvent", _) => NodeKind::EndEvent { result: trigger },
        ("intermediateThrowEvent", _) => NodeKind::IntermediateThrow { result: trigger },
        (_, Some((attached_to, cancel_activity))) => NodeKind::Boundary {
            attached_to,
            cancel_activity,
            trigger,
        },
        _ => NodeKind::IntermediateCatch { trigger },
    };
    Ok((kind, kept))
}

/// Keeps every attribute and child of an element that was interpreted by
/// name alone.
fn keep_all(attrs: Attrs, children: Vec<Content>) -> Result<Preserved, ImportError> {
    let mut kept = Kept::new(attrs);
    kept.sort(children, false, |child| Ok(Step::Keep(child)))?;
    Ok(kept.extras)
}

/// Events whose definitions are written once at the root and named with
/// `eventDefinitionRef` (MID Innovator does) get those definitions as their
/// trigger. The references stay kept as they were, and export writes them
/// instead of inline definitions, so the document round-trips.
pub(super) fn resolve_definition_refs(defs: &mut Definitions) -> Result<(), ImportError> {
    let mut resolved: Vec<(usize, String, Trigger)> = Vec::new();
    for (pi, p) in defs.processes.iter().enumerate() {
        for at in p.all_nodes() {
            let refs = at.node.event_definition_refs();
            if refs.is_empty() || at.node.kind.trigger() != Some(&Trigger::None) {
                continue;
            }
            let mut found = Vec::new();
            for r in &refs {
                let Some(el) = defs.root_element(r) else {
                    continue;
                };
                if let Ok(t) = event_definition(el.clone())? {
                    found.push(t);
                }
            }
            let trigger = match found.len() {
                0 => continue,
                1 => found.remove(0),
                _ => Trigger::Multiple { definitions: found },
            };
            resolved.push((pi, at.node.id.clone(), trigger));
        }
    }
    for (pi, id, trigger) in resolved {
        if let Some(t) = defs.processes[pi]
            .node_mut(&id)
            .and_then(|n| n.kind.trigger_mut())
        {
            *t = trigger;
        }
    }
    Ok(())
}

/// An event definition, or the element back if it is none the model types.
fn event_definition(el: Element) -> Result<Result<Trigger, Element>, ImportError> {
    let local = match el.bpmn_name() {
        Some(n) if EVENT_DEFINITIONS.contains(&n) => n.to_owned(),
        _ => return Ok(Err(el)),
    };
    let mut attrs = Attrs(el.attributes);
    let id = attrs.take("id");
    let trigger = match local.as_str() {
        "messageEventDefinition" => Trigger::Message {
            id,
            message_ref: attrs.take("messageRef"),
            extras: keep_all(attrs, el.children)?,
        },
        "timerEventDefinition" => timer(id, attrs, el.children)?,
        "signalEventDefinition" => Trigger::Signal {
            id,
            signal_ref: attrs.take("signalRef"),
            extras: keep_all(attrs, el.children)?,
        },
        "errorEventDefinition" => Trigger::Error {
            id,
            error_ref: attrs.take("errorRef"),
            extras: keep_all(attrs, el.children)?,
        },
        "escalationEventDefinition" => Trigger::Escalation {
            id,
            escalation_ref: attrs.take("escalationRef"),
            extras: keep_all(attrs, el.children)?,
        },
        "terminateEventDefinition" => Trigger::Terminate {
            id,
            extras: keep_all(attrs, el.children)?,
        },
        "conditionalEventDefinition" => {
            let mut condition = None;
            let mut condition_attributes = Vec::new();
            let mut kept = Kept::new(attrs);
            kept.sort(el.children, false, |child| {
                if child.bpmn_name() != Some("condition") || condition.is_some() {
                    return Ok(Step::Keep(child));
                }
                Ok(match expression(child) {
                    Ok((text, attrs)) => {
                        condition = Some(text);
                        condition_attributes = attrs;
                        Step::Content
                    }
                    Err(child) => Step::Keep(*child),
                })
            })?;
            Trigger::Conditional {
                id,
                condition,
                condition_attributes,
                extras: kept.extras,
            }
        }
        "linkEventDefinition" => Trigger::Link {
            id,
            name: attrs.take("name"),
            extras: keep_all(attrs, el.children)?,
        },
        "compensateEventDefinition" => Trigger::Compensation {
            id,
            activity_ref: attrs.take("activityRef"),
            extras: keep_all(attrs, el.children)?,
        },
        _ => Trigger::Cancel {
            id,
            extras: keep_all(attrs, el.children)?,
        },
    };
    Ok(Ok(trigger))
}

fn timer(id: Option<String>, attrs: Attrs, children: Vec<Content>) -> Result<Trigger, ImportError> {
    let mut timer = TimerDef::default();
    let mut kept = Kept::new(attrs);
    kept.sort(children, false, |child| {
        let slot = match child.bpmn_name() {
            Some("timeDate") if timer.date.is_none() => &mut timer.date,
            Some("timeDuration") if timer.duration.is_none() => &mut timer.duration,
            Some("timeCycle") if timer.cycle.is_none() => &mut timer.cycle,
            _ => return Ok(Step::Keep(child)),
        };
        Ok(match expression(child) {
            Ok((text, attrs)) => {
                *slot = Some(text);
                if timer.attributes.is_empty() {
                    timer.attributes = attrs;
                }
                Step::Content
            }
            Err(child) => Step::Keep(*child),
        })
    })?;
    Ok(Trigger::Timer {
        id,
        timer,
        extras: kept.extras,
    })
}

fn activity(
    local: &str,
    mut attrs: Attrs,
    children: Vec<Content>,
    cx: Cx<'_>,
) -> Result<(NodeKind, Kept), ImportError> {
    let mut task = match local {
        "userTask" => TaskKind::User,
        "manualTask" => TaskKind::Manual,
        "serviceTask" => TaskKind::Service,
        "sendTask" => TaskKind::Send {
            message_ref: attrs.take("messageRef"),
        },
        "receiveTask" => TaskKind::Receive {
            message_ref: attrs.take("messageRef"),
        },
        "scriptTask" => TaskKind::Script {
            format: attrs.take("scriptFormat"),
            script: None,
        },
        "businessRuleTask" => TaskKind::BusinessRule,
        _ => TaskKind::Task,
    };
    let triggered_by_event =
        local == "subProcess" && attrs.take_bool("triggeredByEvent").unwrap_or(false);
    let called_element = if local == "callActivity" {
        attrs.take("calledElement")
    } else {
        None
    };
    let mut loop_ = None;
    let mut script_text = None;
    let mut flows = Flows::default();
    let mut kept = Kept::new(attrs);
    kept.sort(children, true, |child| {
        let name = child.bpmn_name();
        if matches!(
            name,
            Some("standardLoopCharacteristics" | "multiInstanceLoopCharacteristics")
        ) && loop_.is_none()
        {
            return Ok(match loop_characteristics(child)? {
                Ok(l) => {
                    loop_ = Some(l);
                    Step::Content
                }
                Err(child) => Step::Keep(child),
            });
        }
        let script = name == Some("script") && child.attributes.is_empty();
        if local == "scriptTask" && script && script_text.is_none() {
            return Ok(match child.text_only() {
                Some(text) => {
                    script_text = Some(text);
                    Step::Content
                }
                None => Step::Keep(child),
            });
        }
        if local == "subProcess" {
            return flows.take(child, cx).map(Step::from);
        }
        Ok(Step::Keep(child))
    })?;
    if let TaskKind::Script { script, .. } = &mut task {
        *script = script_text;
    }
    let kind = match local {
        "subProcess" => NodeKind::SubProcess {
            triggered_by_event,
            loop_,
            lane_sets: flows.lane_sets,
            nodes: flows.nodes,
            flows: flows.flows,
            data: flows.data,
            artifacts: flows.artifacts,
        },
        "callActivity" => NodeKind::CallActivity {
            called_element,
            loop_,
        },
        _ => NodeKind::Task { task, loop_ },
    };
    Ok((kind, kept))
}

fn loop_characteristics(el: Element) -> Result<Result<Loop, Element>, ImportError> {
    let mut attrs = Attrs(el.attributes);
    let id = attrs.take("id");
    if el.name == "standardLoopCharacteristics" {
        let mut condition = None;
        let mut condition_attributes = Vec::new();
        let mut kept = Kept::new(attrs);
        kept.sort(el.children, false, |child| {
            if child.bpmn_name() != Some("loopCondition") || condition.is_some() {
                return Ok(Step::Keep(child));
            }
            Ok(match expression(child) {
                Ok((text, attrs)) => {
                    condition = Some(text);
                    condition_attributes = attrs;
                    Step::Content
                }
                Err(child) => Step::Keep(*child),
            })
        })?;
        return Ok(Ok(Loop::Standard {
            id,
            condition,
            condition_attributes,
            extras: kept.extras,
        }));
    }
    let sequential = attrs.take_bool("isSequential").unwrap_or(false);
    let mut take_camunda = |name: &str| {
        let at = attrs.0.iter().position(|a| a.is(Some(CAMUNDA_NS), name))?;
        Some(attrs.0.remove(at).value)
    };
    let collection = take_camunda("collection");
    let element_variable = take_camunda("elementVariable");
    let mut cardinality = None;
    let mut input_ref = None;
    let mut completion = None;
    let mut kept = Kept::new(attrs);
    kept.sort(el.children, false, |child| {
        // Cardinality and input come before the data items, the completion
        // condition after: only the latter makes what follows trailing.
        let (slot, step) = match child.bpmn_name() {
            Some("loopCardinality") if cardinality.is_none() => (&mut cardinality, Step::Taken),
            Some("completionCondition") if completion.is_none() => (&mut completion, Step::Content),
            Some("loopDataInputRef") if input_ref.is_none() => {
                return Ok(match child.text_only() {
                    Some(text) => {
                        input_ref = Some(text.trim().to_owned());
                        Step::Taken
                    }
                    None => Step::Keep(child),
                });
            }
            _ => return Ok(Step::Keep(child)),
        };
        Ok(match expression(child) {
            Ok(found) => {
                *slot = Some(found);
                step
            }
            Err(child) => Step::Keep(*child),
        })
    })?;
    let (cardinality, cardinality_attributes) = cardinality.unzip();
    let (completion_condition, completion_condition_attributes) = completion.unzip();
    Ok(Ok(Loop::MultiInstance {
        id,
        sequential,
        collection,
        element_variable,
        loop_data_input_ref: input_ref,
        cardinality,
        cardinality_attributes: cardinality_attributes.unwrap_or_default(),
        completion_condition,
        completion_condition_attributes: completion_condition_attributes.unwrap_or_default(),
        extras: kept.extras,
    }))
}

/// The content of a process or an embedded subprocess.
#[derive(Default)]
pub(super) struct Flows {
    pub(super) lane_sets: Vec<LaneSet>,
    pub(super) nodes: Vec<Node>,
    pub(super) flows: Vec<SequenceFlow>,
    pub(super) data: Vec<DataElement>,
    pub(super) artifacts: Vec<Artifact>,
}

impl Flows {
    /// Takes `el` if it is content of a process; gives it back otherwise.
    pub(super) fn take(&mut self, el: Element, cx: Cx<'_>) -> Result<Option<Element>, ImportError> {
        let Some(name) = el.bpmn_name() else {
            return Ok(Some(el));
        };
        match name {
            "laneSet" => self.lane_sets.push(lane_set(el, cx)?),
            "sequenceFlow" => self.flows.push(sequence_flow(el, cx)?),
            "dataObject" | "dataObjectReference" | "dataStoreReference" => {
                self.data.push(data_element(el, cx)?);
            }
            "textAnnotation" | "association" | "group" => self.artifacts.push(artifact(el, cx)?),
            n if NODES.contains(&n) || UNSUPPORTED_NODES.contains(&n) => {
                self.nodes.push(node(el, cx)?);
            }
            _ => return Ok(Some(el)),
        }
        Ok(None)
    }
}

fn lane_set(el: Element, cx: Cx<'_>) -> Result<LaneSet, ImportError> {
    let mut attrs = Attrs(el.attributes);
    let id = attrs.take("id");
    let name = attrs.take("name");
    let mut lanes = Vec::new();
    let mut kept = Kept::new(attrs);
    kept.sort(el.children, false, |child| {
        if child.bpmn_name() != Some("lane") {
            return Ok(Step::Keep(child));
        }
        lanes.push(lane(child, cx)?);
        Ok(Step::Content)
    })?;
    Ok(LaneSet {
        id,
        name,
        lanes,
        extras: kept.extras,
    })
}

fn lane(el: Element, cx: Cx<'_>) -> Result<Lane, ImportError> {
    let mut attrs = Attrs(el.attributes);
    let id = id_of(&mut attrs, &el.name, el.offset, cx)?;
    let name = attrs.take("name");
    let mut refs = Vec::new();
    let mut child_lane_set = None;
    let mut kept = Kept::new(attrs);
    kept.sort(el.children, false, |child| {
        match child.bpmn_name() {
            Some("flowNodeRef") => match child.text_only() {
                Some(text) => refs.push(text.trim().to_owned()),
                None => return Ok(Step::Keep(child)),
            },
            Some("childLaneSet") if child_lane_set.is_none() => {
                child_lane_set = Some(Box::new(lane_set(child, cx)?));
            }
            _ => return Ok(Step::Keep(child)),
        }
        Ok(Step::Content)
    })?;
    Ok(Lane {
        id,
        name,
        flow_node_refs: refs,
        child_lane_set,
        extras: kept.extras,
    })
}

fn sequence_flow(el: Element, cx: Cx<'_>) -> Result<SequenceFlow, ImportError> {
    let mut attrs = Attrs(el.attributes);
    let id = id_of(&mut attrs, &el.name, el.offset, cx)?;
    let name = attrs.take("name");
    let source = required(&mut attrs, "sourceRef", &el.name, el.offset, cx)?;
    let target = required(&mut attrs, "targetRef", &el.name, el.offset, cx)?;
    let mut condition = None;
    let mut condition_attributes = Vec::new();
    let mut kept = Kept::new(attrs);
    kept.sort(el.children, true, |child| {
        if child.bpmn_name() != Some("conditionExpression") || condition.is_some() {
            return Ok(Step::Keep(child));
        }
        match expression(child) {
            Ok((text, attrs)) => {
                condition = Some(text);
                condition_attributes = attrs;
                Ok(Step::Content)
            }
            Err(child) => Ok(Step::Keep(*child)),
        }
    })?;
    Ok(SequenceFlow {
        id,
        name,
        source,
        target,
        condition,
        condition_attributes,
        documentation: kept.documentation,
        extras: kept.extras,
    })
}

fn data_element(el: Element, cx: Cx<'_>) -> Result<DataElement, ImportError> {
    let mut attrs = Attrs(el.attributes);
    let id = id_of(&mut attrs, &el.name, el.offset, cx)?;
    let name = attrs.take("name");
    let kind = match el.name.as_str() {
        "dataObject" => DataKind::Object {
            is_collection: attrs.take_bool("isCollection").unwrap_or(false),
        },
        "dataObjectReference" => DataKind::ObjectReference {
            data_object_ref: attrs.take("dataObjectRef"),
        },
        _ => DataKind::StoreReference {
            data_store_ref: attrs.take("dataStoreRef"),
        },
    };
    let mut kept = Kept::new(attrs);
    kept.sort(el.children, false, |child| Ok(Step::Keep(child)))?;
    Ok(DataElement {
        id,
        name,
        kind,
        extras: kept.extras,
    })
}

pub(super) fn artifact(el: Element, cx: Cx<'_>) -> Result<Artifact, ImportError> {
    let mut attrs = Attrs(el.attributes);
    let id = id_of(&mut attrs, &el.name, el.offset, cx)?;
    let mut text = None;
    let kind = match el.name.as_str() {
        "textAnnotation" => ArtifactKind::TextAnnotation { text: None },
        "association" => ArtifactKind::Association {
            source: required(&mut attrs, "sourceRef", &el.name, el.offset, cx)?,
            target: required(&mut attrs, "targetRef", &el.name, el.offset, cx)?,
            direction: attrs.take("associationDirection"),
        },
        _ => ArtifactKind::Group {
            category_value_ref: attrs.take("categoryValueRef"),
        },
    };
    let annotation = matches!(kind, ArtifactKind::TextAnnotation { .. });
    let mut kept = Kept::new(attrs);
    kept.sort(el.children, false, |child| {
        if !annotation
            || text.is_some()
            || child.bpmn_name() != Some("text")
            || !child.attributes.is_empty()
        {
            return Ok(Step::Keep(child));
        }
        match child.text_only() {
            Some(t) => {
                text = Some(t);
                Ok(Step::Content)
            }
            None => Ok(Step::Keep(child)),
        }
    })?;
    let kind = match kind {
        ArtifactKind::TextAnnotation { .. } => ArtifactKind::TextAnnotation { text },
        other => other,
    };
    Ok(Artifact {
        id,
        kind,
        extras: kept.extras,
    })
}
