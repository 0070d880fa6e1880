//! The model to an element tree in the BPMN model namespace, kept parts
//! back in their places: documentation, leading kept children, incoming and
//! outgoing, other kept children, the interpreted content, trailing ones.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::model::*;

use super::{BPMN_MODEL_NS, CAMUNDA_NS, XSI_NS};

/// Puts an element together: interpreted attributes are already on `el`.
fn assemble(
    mut el: Element,
    documentation: Option<&str>,
    extras: &Preserved,
    before: Vec<Element>,
    content: Vec<Element>,
) -> Element {
    el.attributes.extend(extras.attributes.iter().cloned());
    let mut push = |child: Element| el.children.push(Content::Element(child));
    if let Some(doc) = documentation {
        push(text_element("documentation", doc));
    }
    extras.leading.iter().cloned().for_each(&mut push);
    before.into_iter().for_each(&mut push);
    extras.children.iter().cloned().for_each(&mut push);
    content.into_iter().for_each(&mut push);
    extras.trailing.iter().cloned().for_each(&mut push);
    el
}

/// `<bpmn:name>text</bpmn:name>` (empty text: an empty element).
fn text_element(name: &str, text: &str) -> Element {
    let el = Element::bpmn(name);
    if text.is_empty() {
        el
    } else {
        el.with_text(text)
    }
}

/// An expression element; `xsi:type="bpmn:tFormalExpression"` is written
/// unless the attributes carry their own type.
fn expression(name: &str, text: &str, attrs: &[Attribute]) -> Element {
    let mut el = text_element(name, text);
    if !attrs.iter().any(|a| a.is(Some(XSI_NS), "type")) {
        el.attributes.push(Attribute {
            ns: Some(Cow::Borrowed(XSI_NS)),
            prefix: Some(Cow::Borrowed("xsi")),
            name: "type".into(),
            value: "tFormalExpression".into(),
            value_ns: Some(Cow::Borrowed(BPMN_MODEL_NS)),
        });
    }
    el.attributes.extend(attrs.iter().cloned());
    el
}

/// A BPMN element with its id and name.
fn named(name: &str, id: Option<&str>, display: Option<&str>) -> Element {
    Element::bpmn(name)
        .with_opt_attr("id", id)
        .with_opt_attr("name", display)
}

fn bool_str(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

/// The semantic tree of a document, with `diagrams` as its diagrams.
pub(crate) fn definitions(defs: &Definitions, diagrams: Vec<Element>) -> Element {
    let root = named("definitions", defs.id.as_deref(), defs.name.as_deref())
        .with_attr("targetNamespace", defs.target_namespace.as_str())
        .with_opt_attr("exporter", defs.exporter.as_deref())
        .with_opt_attr("exporterVersion", defs.exporter_version.as_deref());
    let mut content: Vec<Element> = defs.root_elements.clone();
    let simple = |kind: &str, id: &str, name: Option<&str>, extras: &Preserved| {
        assemble(named(kind, Some(id), name), None, extras, vec![], vec![])
    };
    for m in &defs.messages {
        content.push(simple("message", &m.id, m.name.as_deref(), &m.extras));
    }
    for s in &defs.signals {
        content.push(simple("signal", &s.id, s.name.as_deref(), &s.extras));
    }
    for e in &defs.errors {
        let el = named("error", Some(&e.id), e.name.as_deref())
            .with_opt_attr("errorCode", e.error_code.as_deref());
        content.push(assemble(el, None, &e.extras, vec![], vec![]));
    }
    for e in &defs.escalations {
        let el = named("escalation", Some(&e.id), e.name.as_deref())
            .with_opt_attr("escalationCode", e.escalation_code.as_deref());
        content.push(assemble(el, None, &e.extras, vec![], vec![]));
    }
    for d in &defs.data_stores {
        content.push(simple("dataStore", &d.id, d.name.as_deref(), &d.extras));
    }
    content.extend(defs.collaborations.iter().map(collaboration));
    content.extend(defs.processes.iter().map(process));
    content.extend(diagrams);
    assemble(root, None, &defs.extras, vec![], content)
}

fn collaboration(c: &Collaboration) -> Element {
    let mut content = Vec::new();
    for p in &c.participants {
        let el = named("participant", Some(&p.id), p.name.as_deref())
            .with_opt_attr("processRef", p.process_ref.as_deref());
        content.push(assemble(el, None, &p.extras, vec![], vec![]));
    }
    for m in &c.message_flows {
        let el = named("messageFlow", Some(&m.id), m.name.as_deref())
            .with_attr("sourceRef", m.source.as_str())
            .with_attr("targetRef", m.target.as_str())
            .with_opt_attr("messageRef", m.message_ref.as_deref());
        content.push(assemble(el, None, &m.extras, vec![], vec![]));
    }
    content.extend(c.artifacts.iter().map(artifact));
    assemble(
        named("collaboration", Some(&c.id), c.name.as_deref()),
        None,
        &c.extras,
        vec![],
        content,
    )
}

fn process(p: &Process) -> Element {
    let el = named("process", Some(&p.id), p.name.as_deref())
        .with_opt_attr("isExecutable", p.is_executable.map(bool_str));
    let content = flow_content(&p.lane_sets, &p.nodes, &p.flows, &p.data, &p.artifacts);
    assemble(el, p.documentation.as_deref(), &p.extras, vec![], content)
}

/// The content of a process or subprocess: lanes, data, nodes, flows,
/// artifacts.
fn flow_content(
    lane_sets: &[LaneSet],
    nodes: &[Node],
    flows: &[SequenceFlow],
    data: &[DataElement],
    artifacts: &[Artifact],
) -> Vec<Element> {
    let mut io: HashMap<&str, (Vec<&str>, Vec<&str>)> = HashMap::new();
    for f in flows {
        io.entry(f.target.as_str()).or_default().0.push(&f.id);
        io.entry(f.source.as_str()).or_default().1.push(&f.id);
    }
    let mut out: Vec<Element> = lane_sets.iter().map(|ls| lane_set(ls, "laneSet")).collect();
    out.extend(data.iter().map(data_element));
    for n in nodes {
        let (incoming, outgoing) = io.get(n.id.as_str()).cloned().unwrap_or_default();
        let mut refs: Vec<Element> = Vec::new();
        refs.extend(incoming.iter().map(|id| text_element("incoming", id)));
        refs.extend(outgoing.iter().map(|id| text_element("outgoing", id)));
        out.push(node(n, refs));
    }
    out.extend(flows.iter().map(sequence_flow));
    out.extend(artifacts.iter().map(artifact));
    out
}

fn lane_set(ls: &LaneSet, tag: &str) -> Element {
    let content = ls.lanes.iter().map(lane).collect();
    assemble(
        named(tag, ls.id.as_deref(), ls.name.as_deref()),
        None,
        &ls.extras,
        vec![],
        content,
    )
}

fn lane(l: &Lane) -> Element {
    let mut content: Vec<Element> = l
        .flow_node_refs
        .iter()
        .map(|r| text_element("flowNodeRef", r))
        .collect();
    if let Some(child) = &l.child_lane_set {
        content.push(lane_set(child, "childLaneSet"));
    }
    assemble(
        named("lane", Some(&l.id), l.name.as_deref()),
        None,
        &l.extras,
        vec![],
        content,
    )
}

fn sequence_flow(f: &SequenceFlow) -> Element {
    let el = named("sequenceFlow", Some(&f.id), f.name.as_deref())
        .with_attr("sourceRef", f.source.as_str())
        .with_attr("targetRef", f.target.as_str());
    let content = f
        .condition
        .as_deref()
        .map(|c| expression("conditionExpression", c, &f.condition_attributes))
        .into_iter()
        .collect();
    assemble(el, f.documentation.as_deref(), &f.extras, vec![], content)
}

fn data_element(d: &DataElement) -> Element {
    let el = match &d.kind {
        DataKind::Object { is_collection } => {
            let el = named("dataObject", Some(&d.id), d.name.as_deref());
            if *is_collection {
                el.with_attr("isCollection", "true")
            } else {
                el
            }
        }
        DataKind::ObjectReference { data_object_ref } => {
            named("dataObjectReference", Some(&d.id), d.name.as_deref())
                .with_opt_attr("dataObjectRef", data_object_ref.as_deref())
        }
        DataKind::StoreReference { data_store_ref } => {
            named("dataStoreReference", Some(&d.id), d.name.as_deref())
                .with_opt_attr("dataStoreRef", data_store_ref.as_deref())
        }
    };
    assemble(el, None, &d.extras, vec![], vec![])
}

fn artifact(a: &Artifact) -> Element {
    let id = Some(a.id.as_str());
    let (el, content) = match &a.kind {
        ArtifactKind::TextAnnotation { text } => (
            named("textAnnotation", id, None),
            text.as_deref()
                .map(|t| text_element("text", t))
                .into_iter()
                .collect(),
        ),
        ArtifactKind::Association {
            source,
            target,
            direction,
        } => (
            named("association", id, None)
                .with_attr("sourceRef", source.as_str())
                .with_attr("targetRef", target.as_str())
                .with_opt_attr("associationDirection", direction.as_deref()),
            vec![],
        ),
        ArtifactKind::Group { category_value_ref } => (
            named("group", id, None)
                .with_opt_attr("categoryValueRef", category_value_ref.as_deref()),
            vec![],
        ),
    };
    assemble(el, None, &a.extras, vec![], content)
}

/// A flow node; `refs` are its incoming and outgoing elements.
fn node(n: &Node, refs: Vec<Element>) -> Element {
    let mut el = named(n.kind.element_name(), Some(&n.id), n.name.as_deref());
    let mut content = Vec::new();
    // An event that names root definitions (kept `eventDefinitionRef`s)
    // writes the references back, not copies of the definitions.
    let by_reference = !n.event_definition_refs().is_empty();
    let trigger_elements = |t: &Trigger| {
        if by_reference {
            Vec::new()
        } else {
            trigger_elements(t)
        }
    };
    match &n.kind {
        NodeKind::StartEvent {
            trigger,
            interrupting,
        } => {
            if !interrupting {
                el = el.with_attr("isInterrupting", "false");
            }
            content = trigger_elements(trigger);
        }
        NodeKind::EndEvent { result: trigger }
        | NodeKind::IntermediateCatch { trigger }
        | NodeKind::IntermediateThrow { result: trigger } => content = trigger_elements(trigger),
        NodeKind::Boundary {
            attached_to,
            cancel_activity,
            trigger,
        } => {
            el = el.with_attr("attachedToRef", attached_to.as_str());
            if !cancel_activity {
                el = el.with_attr("cancelActivity", "false");
            }
            content = trigger_elements(trigger);
        }
        NodeKind::Task { task, loop_ } => {
            match task {
                TaskKind::Send { message_ref } | TaskKind::Receive { message_ref } => {
                    el = el.with_opt_attr("messageRef", message_ref.as_deref());
                }
                TaskKind::Script { format, .. } => {
                    el = el.with_opt_attr("scriptFormat", format.as_deref());
                }
                _ => {}
            }
            content.extend(loop_.as_ref().map(loop_element));
            if let TaskKind::Script {
                script: Some(s), ..
            } = task
            {
                content.push(text_element("script", s));
            }
        }
        NodeKind::SubProcess {
            triggered_by_event,
            loop_,
            lane_sets,
            nodes,
            flows,
            data,
            artifacts,
        } => {
            if *triggered_by_event {
                el = el.with_attr("triggeredByEvent", "true");
            }
            content.extend(loop_.as_ref().map(loop_element));
            content.extend(flow_content(lane_sets, nodes, flows, data, artifacts));
        }
        NodeKind::CallActivity {
            called_element,
            loop_,
        } => {
            el = el.with_opt_attr("calledElement", called_element.as_deref());
            content.extend(loop_.as_ref().map(loop_element));
        }
        NodeKind::Gateway { .. } | NodeKind::Unsupported { .. } => {}
    }
    el = el.with_opt_attr("default", n.default_flow.as_deref());
    assemble(el, n.documentation.as_deref(), &n.extras, refs, content)
}

/// The event definition elements of a trigger.
fn trigger_elements(t: &Trigger) -> Vec<Element> {
    let (id, extras, el) = match t {
        Trigger::None => return vec![],
        Trigger::Multiple { definitions } => {
            return definitions.iter().flat_map(trigger_elements).collect();
        }
        Trigger::Message {
            id,
            message_ref,
            extras,
        } => (
            id,
            extras,
            def(t).with_opt_attr("messageRef", message_ref.as_deref()),
        ),
        Trigger::Signal {
            id,
            signal_ref,
            extras,
        } => (
            id,
            extras,
            def(t).with_opt_attr("signalRef", signal_ref.as_deref()),
        ),
        Trigger::Error {
            id,
            error_ref,
            extras,
        } => (
            id,
            extras,
            def(t).with_opt_attr("errorRef", error_ref.as_deref()),
        ),
        Trigger::Escalation {
            id,
            escalation_ref,
            extras,
        } => (
            id,
            extras,
            def(t).with_opt_attr("escalationRef", escalation_ref.as_deref()),
        ),
        Trigger::Link { id, name, extras } => {
            (id, extras, def(t).with_opt_attr("name", name.as_deref()))
        }
        Trigger::Compensation {
            id,
            activity_ref,
            extras,
        } => (
            id,
            extras,
            def(t).with_opt_attr("activityRef", activity_ref.as_deref()),
        ),
        Trigger::Terminate { id, extras } | Trigger::Cancel { id, extras } => (id, extras, def(t)),
        Trigger::Timer { id, timer, extras } => {
            let mut content = Vec::new();
            let parts = [
                ("timeDate", &timer.date),
                ("timeDuration", &timer.duration),
                ("timeCycle", &timer.cycle),
            ];
            for (name, text) in parts {
                if let Some(text) = text {
                    content.push(expression(name, text, &timer.attributes));
                }
            }
            let el = def(t).with_opt_attr("id", id.as_deref());
            return vec![assemble(el, None, extras, vec![], content)];
        }
        Trigger::Conditional {
            id,
            condition,
            condition_attributes,
            extras,
        } => {
            let content = condition
                .as_deref()
                .map(|c| expression("condition", c, condition_attributes))
                .into_iter()
                .collect();
            let el = def(t).with_opt_attr("id", id.as_deref());
            return vec![assemble(el, None, extras, vec![], content)];
        }
    };
    // The id goes first, as in the source.
    let mut el = el;
    if let Some(id) = id {
        el.attributes.insert(0, Attribute::new("id", id.as_str()));
    }
    vec![assemble(el, None, extras, vec![], vec![])]
}

/// An empty event definition element for `t`.
fn def(t: &Trigger) -> Element {
    Element::bpmn(t.element_name().unwrap_or("eventDefinition"))
}

fn loop_element(l: &Loop) -> Element {
    match l {
        Loop::Standard {
            id,
            condition,
            condition_attributes,
            extras,
        } => {
            let el =
                Element::bpmn("standardLoopCharacteristics").with_opt_attr("id", id.as_deref());
            let content = condition
                .as_deref()
                .map(|c| expression("loopCondition", c, condition_attributes))
                .into_iter()
                .collect();
            assemble(el, None, extras, vec![], content)
        }
        Loop::MultiInstance {
            id,
            sequential,
            collection,
            element_variable,
            loop_data_input_ref,
            cardinality,
            cardinality_attributes,
            completion_condition,
            completion_condition_attributes,
            extras,
        } => {
            let mut el = Element::bpmn("multiInstanceLoopCharacteristics")
                .with_opt_attr("id", id.as_deref());
            if *sequential {
                el = el.with_attr("isSequential", "true");
            }
            for (name, value) in [
                ("collection", collection),
                ("elementVariable", element_variable),
            ] {
                if let Some(v) = value {
                    el.attributes.push(Attribute::qualified(
                        CAMUNDA_NS,
                        "camunda",
                        name,
                        v.as_str(),
                    ));
                }
            }
            let mut before = Vec::new();
            if let Some(c) = cardinality {
                before.push(expression("loopCardinality", c, cardinality_attributes));
            }
            if let Some(r) = loop_data_input_ref {
                before.push(text_element("loopDataInputRef", r));
            }
            let content = completion_condition
                .as_deref()
                .map(|c| expression("completionCondition", c, completion_condition_attributes))
                .into_iter()
                .collect();
            assemble(el, None, extras, before, content)
        }
    }
}
