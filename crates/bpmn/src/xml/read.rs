//! The element tree of a document to the model. Whatever an element carries
//! that the model does not interpret is moved, not copied, into `extras`.

use std::collections::HashSet;

use crate::model::*;

use super::parse::Document;
use super::read_kit::{Attrs, Cx, Kept, LEADING, Step, elements, id_of, required};
use super::read_node::{Flows, artifact};
use super::tree::canonical_prefix;
use super::{BPMN_MODEL_NS, BPMNDI_NS, ImportError, XML_NS};

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
    super::read_node::resolve_definition_refs(&mut defs)?;
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
