//! The element tree of a document to the model. Whatever an element carries
//! that the model does not interpret is moved, not copied, into `extras`.

use std::collections::HashSet;

use crate::model::*;

use super::parse::{Document, line_col};
use super::read_node::node;
use super::tree::canonical_prefix;
use super::{BPMN_MODEL_NS, BPMNDI_NS, ImportError, XML_NS, XSI_NS};

/// Flow nodes the model types.
const NODES: &[&str] = &[
    "startEvent",
    "endEvent",
    "intermediateCatchEvent",
    "intermediateThrowEvent",
    "boundaryEvent",
    "task",
    "userTask",
    "manualTask",
    "serviceTask",
    "sendTask",
    "receiveTask",
    "scriptTask",
    "businessRuleTask",
    "subProcess",
    "callActivity",
    "exclusiveGateway",
    "inclusiveGateway",
    "parallelGateway",
    "eventBasedGateway",
    "complexGateway",
];

/// Flow nodes the model keeps whole as [`NodeKind::Unsupported`].
pub(super) const UNSUPPORTED_NODES: &[&str] = &[
    "transaction",
    "adHocSubProcess",
    "callChoreography",
    "choreographyTask",
    "subChoreography",
    "implicitThrowEvent",
];

/// Children written before everything else, whatever their position.
const LEADING: &[&str] = &[
    "documentation",
    "extensionElements",
    "auditing",
    "monitoring",
    "categoryValueRef",
    "import",
    "extension",
];

/// The document's text, for positions in errors.
#[derive(Clone, Copy)]
pub(super) struct Cx<'t> {
    text: &'t str,
}

impl Cx<'_> {
    fn missing(self, el_name: &str, offset: usize, attribute: &str) -> ImportError {
        let (line, column) = line_col(self.text, offset);
        ImportError::MissingAttribute {
            element: el_name.to_owned(),
            attribute: attribute.to_owned(),
            line,
            column,
        }
    }
}

/// The attributes of one element, taken one by one as they are interpreted.
pub(super) struct Attrs(pub(super) Vec<Attribute>);

impl Attrs {
    /// Removes and returns the unqualified attribute `name`.
    pub(super) fn take(&mut self, name: &str) -> Option<String> {
        let at = self.0.iter().position(|a| a.is(None, name))?;
        Some(self.0.remove(at).value)
    }

    /// Removes and returns a boolean; a value that is not one stays kept.
    pub(super) fn take_bool(&mut self, name: &str) -> Option<bool> {
        let at = self.0.iter().position(|a| a.is(None, name))?;
        let value = match self.0[at].value.trim() {
            "true" | "1" => true,
            "false" | "0" => false,
            _ => return None,
        };
        self.0.remove(at);
        Some(value)
    }
}

/// What became of one child element.
pub(super) enum Step {
    /// Not interpreted: kept in `extras`.
    Keep(Element),
    /// Interpreted content: later kept children are trailing.
    Content,
    /// Interpreted, but content may still follow in the same position.
    Taken,
}

impl From<Option<Element>> for Step {
    fn from(el: Option<Element>) -> Self {
        el.map_or(Step::Content, Step::Keep)
    }
}

/// Sorts the children of one element: kept ones go to `extras` by position.
#[derive(Default)]
pub(super) struct Kept {
    pub(super) extras: Preserved,
    pub(super) documentation: Option<String>,
    after_content: bool,
}

impl Kept {
    pub(super) fn new(attrs: Attrs) -> Self {
        Self {
            extras: Preserved {
                attributes: attrs.0,
                ..Preserved::default()
            },
            ..Self::default()
        }
    }

    /// Interpreted content was met: what follows is trailing.
    fn content(&mut self) {
        self.after_content = true;
    }

    fn keep(&mut self, el: Element) {
        if el.bpmn_name().is_some_and(|n| LEADING.contains(&n)) {
            self.extras.leading.push(el);
        } else if self.after_content {
            self.extras.trailing.push(el);
        } else {
            self.extras.children.push(el);
        }
    }

    /// Sorts `children`: documentation first, `interpret` for the rest
    /// (which says what became of each).
    pub(super) fn sort(
        &mut self,
        children: Vec<Content>,
        with_documentation: bool,
        mut interpret: impl FnMut(Element) -> Result<Step, ImportError>,
    ) -> Result<(), ImportError> {
        for el in elements(children) {
            let plain_doc = with_documentation
                && self.documentation.is_none()
                && el.bpmn_name() == Some("documentation")
                && el.attributes.is_empty();
            if plain_doc && let Some(text) = el.text_only() {
                self.documentation = Some(text);
                continue;
            }
            match interpret(el)? {
                Step::Keep(el) => self.keep(el),
                Step::Content => self.content(),
                Step::Taken => {}
            }
        }
        Ok(())
    }
}

/// The child elements; text between them is formatting in BPMN elements.
fn elements(children: Vec<Content>) -> impl Iterator<Item = Element> {
    children.into_iter().filter_map(|c| match c {
        Content::Element(e) => Some(e),
        _ => None,
    })
}

/// The text of an expression element and its attributes less the implied
/// `xsi:type="tFormalExpression"`; the element back if it holds elements.
pub(super) fn expression(el: Element) -> Result<(String, Vec<Attribute>), Box<Element>> {
    let Some(text) = el.text_only() else {
        return Err(Box::new(el));
    };
    let attrs = el
        .attributes
        .into_iter()
        .filter(|a| {
            !(a.is(Some(XSI_NS), "type")
                && a.value == "tFormalExpression"
                && a.value_ns.as_deref() == Some(BPMN_MODEL_NS))
        })
        .collect();
    Ok((text, attrs))
}

/// The model of a parsed document.
pub(crate) fn definitions(doc: Document) -> Result<Definitions, ImportError> {
    let cx = Cx { text: &doc.text };
    let root = doc.root;
    if !root.is(BPMN_MODEL_NS, "definitions") {
        let found = match &root.ns {
            Some(ns) => format!("{{{ns}}}{}", root.name),
            None => root.name.clone(),
        };
        return Err(ImportError::NotBpmn { found });
    }
    // Declarations that names use as declared are written again from the
    // names; the others (aliases, prefixes of QName values) are kept.
    let mut used: HashSet<(&str, &str)> = HashSet::new();
    root.walk(&mut |e| {
        let names = std::iter::once((&e.ns, &e.prefix))
            .chain(e.attributes.iter().map(|a| (&a.ns, &a.prefix)));
        for (ns, prefix) in names {
            if let (Some(ns), Some(prefix)) = (ns, prefix) {
                used.insert((ns, prefix));
            }
        }
    });
    let namespaces = doc
        .declarations
        .into_iter()
        .filter_map(|(prefix, uri)| {
            Some(Namespace {
                prefix: prefix?,
                uri,
            })
        })
        .filter(|ns| canonical_prefix(&ns.uri).is_none() && ns.uri != XML_NS)
        .filter(|ns| !used.contains(&(ns.uri.as_str(), ns.prefix.as_str())))
        .collect();
    drop(used);
    let mut attrs = Attrs(root.attributes);
    let mut defs = Definitions {
        id: attrs.take("id"),
        name: attrs.take("name"),
        target_namespace: attrs.take("targetNamespace").unwrap_or_default(),
        exporter: attrs.take("exporter"),
        exporter_version: attrs.take("exporterVersion"),
        ..Definitions::default()
    };
    defs.namespaces = namespaces;
    let mut kept = Kept::new(attrs);
    for el in elements(root.children) {
        if el.is(BPMNDI_NS, "BPMNDiagram") {
            defs.diagrams.push(el);
            continue;
        }
        let Some(name) = el.bpmn_name() else {
            kept.extras.children.push(el);
            continue;
        };
        match name {
            "process" => defs.processes.push(process(el, cx)?),
            "collaboration" => defs.collaborations.push(collaboration(el, cx)?),
            "message" => {
                let (id, name, _, extras) = root_def(el, cx, None)?;
                defs.messages.push(MessageDef { id, name, extras });
            }
            "signal" => {
                let (id, name, _, extras) = root_def(el, cx, None)?;
                defs.signals.push(SignalDef { id, name, extras });
            }
            "dataStore" => {
                let (id, name, _, extras) = root_def(el, cx, None)?;
                defs.data_stores.push(DataStoreDef { id, name, extras });
            }
            "error" => {
                let (id, name, error_code, extras) = root_def(el, cx, Some("errorCode"))?;
                defs.errors.push(ErrorDef {
                    id,
                    name,
                    error_code,
                    extras,
                });
            }
            "escalation" => {
                let (id, name, escalation_code, extras) = root_def(el, cx, Some("escalationCode"))?;
                defs.escalations.push(EscalationDef {
                    id,
                    name,
                    escalation_code,
                    extras,
                });
            }
            "relationship" => kept.extras.trailing.push(el),
            n if LEADING.contains(&n) => kept.extras.leading.push(el),
            _ => defs.root_elements.push(el),
        }
    }
    defs.extras = kept.extras;
    Ok(defs)
}

/// A simple root element: id, name, the attribute `code` if asked, the
/// rest kept.
type RootDef = (String, Option<String>, Option<String>, Preserved);

fn root_def(el: Element, cx: Cx<'_>, code: Option<&str>) -> Result<RootDef, ImportError> {
    let mut attrs = Attrs(el.attributes);
    let id = attrs
        .take("id")
        .ok_or_else(|| cx.missing(&el.name, el.offset, "id"))?;
    let name = attrs.take("name");
    let code = code.and_then(|c| attrs.take(c));
    let mut kept = Kept::new(attrs);
    kept.sort(el.children, false, |el| Ok(Step::Keep(el)))?;
    Ok((id, name, code, kept.extras))
}

/// Takes the required `id`.
pub(super) fn id_of(
    attrs: &mut Attrs,
    el_name: &str,
    offset: usize,
    cx: Cx<'_>,
) -> Result<String, ImportError> {
    attrs
        .take("id")
        .ok_or_else(|| cx.missing(el_name, offset, "id"))
}

/// Takes a required reference attribute.
pub(super) fn required(
    attrs: &mut Attrs,
    attr: &str,
    el_name: &str,
    offset: usize,
    cx: Cx<'_>,
) -> Result<String, ImportError> {
    attrs
        .take(attr)
        .ok_or_else(|| cx.missing(el_name, offset, attr))
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

fn process(el: Element, cx: Cx<'_>) -> Result<Process, ImportError> {
    let mut attrs = Attrs(el.attributes);
    let id = id_of(&mut attrs, &el.name, el.offset, cx)?;
    let name = attrs.take("name");
    let is_executable = attrs.take_bool("isExecutable");
    let mut flows = Flows::default();
    let mut kept = Kept::new(attrs);
    kept.sort(el.children, true, |child| {
        flows.take(child, cx).map(Step::from)
    })?;
    Ok(Process {
        id,
        name,
        is_executable,
        documentation: kept.documentation,
        lane_sets: flows.lane_sets,
        nodes: flows.nodes,
        flows: flows.flows,
        data: flows.data,
        artifacts: flows.artifacts,
        extras: kept.extras,
    })
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

fn artifact(el: Element, cx: Cx<'_>) -> Result<Artifact, ImportError> {
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

fn collaboration(el: Element, cx: Cx<'_>) -> Result<Collaboration, ImportError> {
    let mut attrs = Attrs(el.attributes);
    let id = id_of(&mut attrs, &el.name, el.offset, cx)?;
    let name = attrs.take("name");
    let mut participants = Vec::new();
    let mut message_flows = Vec::new();
    let mut artifacts = Vec::new();
    let mut kept = Kept::new(attrs);
    kept.sort(el.children, false, |child| {
        match child.bpmn_name() {
            Some("participant") => participants.push(participant(child, cx)?),
            Some("messageFlow") => message_flows.push(message_flow(child, cx)?),
            Some("textAnnotation" | "association" | "group") => {
                artifacts.push(artifact(child, cx)?)
            }
            _ => return Ok(Step::Keep(child)),
        }
        Ok(Step::Content)
    })?;
    Ok(Collaboration {
        id,
        name,
        participants,
        message_flows,
        artifacts,
        extras: kept.extras,
    })
}

fn participant(el: Element, cx: Cx<'_>) -> Result<Participant, ImportError> {
    let mut attrs = Attrs(el.attributes);
    let id = id_of(&mut attrs, &el.name, el.offset, cx)?;
    let name = attrs.take("name");
    let process_ref = attrs.take("processRef");
    let mut kept = Kept::new(attrs);
    kept.sort(el.children, false, |child| Ok(Step::Keep(child)))?;
    Ok(Participant {
        id,
        name,
        process_ref,
        extras: kept.extras,
    })
}

fn message_flow(el: Element, cx: Cx<'_>) -> Result<MessageFlow, ImportError> {
    let mut attrs = Attrs(el.attributes);
    let id = id_of(&mut attrs, &el.name, el.offset, cx)?;
    let name = attrs.take("name");
    let source = required(&mut attrs, "sourceRef", &el.name, el.offset, cx)?;
    let target = required(&mut attrs, "targetRef", &el.name, el.offset, cx)?;
    let message_ref = attrs.take("messageRef");
    let mut kept = Kept::new(attrs);
    kept.sort(el.children, false, |child| Ok(Step::Keep(child)))?;
    Ok(MessageFlow {
        id,
        name,
        source,
        target,
        message_ref,
        extras: kept.extras,
    })
}
