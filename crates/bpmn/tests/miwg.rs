//! The BPMN MIWG reference models (tests/miwg, CC BY 3.0, see its README)
//! and fixtures imitating other tools' exports: concrete facts per model,
//! round trips through export, stable export, ids that survive.

use std::collections::BTreeSet;

use coordinator_bpmn::*;
use quick_xml::XmlVersion;
use quick_xml::events::Event;
use quick_xml::reader::Reader;

const MIWG: &[&str] = &["A.1.0", "A.2.0", "A.3.0", "A.4.0", "B.1.0", "C.1.0"];
const FIXTURES: &[&str] = &["camunda", "bpmnio", "bom_crlf"];

fn read(path: &str) -> Vec<u8> {
    let path = format!("{}/tests/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn miwg(name: &str) -> Definitions {
    import(&read(&format!("miwg/{name}.bpmn"))).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn fixture(name: &str) -> Definitions {
    import(&read(&format!("fixtures/{name}.bpmn"))).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Every source file: MIWG models and fixtures.
fn sources() -> Vec<(String, Vec<u8>)> {
    let miwg = MIWG
        .iter()
        .map(|n| (n.to_string(), read(&format!("miwg/{n}.bpmn"))));
    let fixtures = FIXTURES
        .iter()
        .map(|n| (n.to_string(), read(&format!("fixtures/{n}.bpmn"))));
    miwg.chain(fixtures).collect()
}

/// Every node of every process, nested ones included.
fn nodes(defs: &Definitions) -> Vec<&Node> {
    defs.processes
        .iter()
        .flat_map(|p| p.all_nodes())
        .map(|at| at.node)
        .collect()
}

fn count(defs: &Definitions, pred: impl Fn(&Node) -> bool) -> usize {
    nodes(defs).into_iter().filter(|n| pred(n)).count()
}

fn flows(defs: &Definitions) -> usize {
    defs.processes
        .iter()
        .map(|p| {
            p.flows.len()
                + p.all_nodes()
                    .iter()
                    .filter_map(|at| at.node.scope())
                    .map(|s| s.flows.len())
                    .sum::<usize>()
        })
        .sum()
}

/// (ids of elements, `bpmnElement` references) in a document, read with
/// quick-xml directly rather than through the importer.
fn ids_and_refs(xml: &[u8]) -> (BTreeSet<String>, BTreeSet<String>) {
    // The sources are ASCII or UTF-8 apart from the declared encoding.
    let text =
        String::from_utf8_lossy(xml.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(xml)).into_owned();
    let mut reader = Reader::from_str(&text);
    let (mut ids, mut refs) = (BTreeSet::new(), BTreeSet::new());
    loop {
        match reader.read_event().expect("well-formed") {
            Event::Start(e) | Event::Empty(e) => {
                for a in e.attributes().flatten() {
                    let value = a
                        .normalized_value(XmlVersion::Implicit1_0)
                        .expect("value")
                        .into_owned();
                    match a.key.local_name().as_ref() {
                        "id" => ids.insert(value),
                        "bpmnElement" => refs.insert(value),
                        _ => false,
                    };
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    (ids, refs)
}

#[test]
fn every_source_round_trips_to_the_same_model_and_exports_stably() {
    for (name, xml) in sources() {
        let first = import(&xml).unwrap_or_else(|e| panic!("{name}: {e}"));
        let exported = export(&first);
        let second =
            import(exported.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}\n{exported}"));
        assert_eq!(
            second, first,
            "{name}: import(export(import(x))) == import(x)"
        );
        assert_eq!(export(&second), exported, "{name}: export is stable");
        assert_eq!(export(&first), exported, "{name}: export is deterministic");
    }
}

#[test]
fn ids_and_diagram_references_of_every_source_survive_the_export() {
    for (name, xml) in sources() {
        let defs = import(&xml).unwrap_or_else(|e| panic!("{name}: {e}"));
        let exported = export(&defs);
        let (ids, refs) = ids_and_refs(&xml);
        let (out_ids, out_refs) = ids_and_refs(exported.as_bytes());
        let lost: Vec<_> = ids.difference(&out_ids).collect();
        assert!(lost.is_empty(), "{name}: ids lost: {lost:?}");
        let lost: Vec<_> = refs.difference(&out_refs).collect();
        assert!(
            lost.is_empty(),
            "{name}: bpmnElement references lost: {lost:?}"
        );
        // Nothing the export refers to from the diagram is missing.
        let dangling: Vec<_> = out_refs.difference(&out_ids).collect();
        assert!(
            dangling.is_empty(),
            "{name}: dangling bpmnElement: {dangling:?}"
        );
    }
}

#[test]
fn every_source_survives_json() {
    for (name, xml) in sources() {
        let defs = import(&xml).unwrap_or_else(|e| panic!("{name}: {e}"));
        let json = serde_json::to_string(&defs).expect("serialises");
        let back: Definitions = serde_json::from_str(&json).expect("deserialises");
        assert_eq!(back, defs, "{name}: JSON round trip");
        assert_eq!(export(&back), export(&defs), "{name}");
    }
}

#[test]
fn a_1_0_is_a_sequence_of_three_tasks() {
    let d = miwg("A.1.0");
    assert_eq!(d.name.as_deref(), Some("A.1.0"));
    assert_eq!(d.processes.len(), 1);
    let p = &d.processes[0];
    assert_eq!(p.id, "WFP-6-");
    assert_eq!(p.is_executable, Some(false));
    assert_eq!(p.nodes.len(), 5);
    assert_eq!(p.flows.len(), 4);
    let names: Vec<_> = p.nodes.iter().filter_map(|n| n.name.as_deref()).collect();
    assert_eq!(
        names,
        ["Start Event", "Task 1", "Task 2", "Task 3", "End Event"]
    );
    let start = &p.nodes[0];
    assert!(matches!(
        start.kind,
        NodeKind::StartEvent {
            trigger: Trigger::None,
            interrupting: true
        }
    ));
    let out = p.outgoing(&start.id);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].target, p.nodes[1].id);
    // Trisotech's attributes are kept, not interpreted.
    assert_eq!(
        p.nodes[1].extras.attribute(None, "startQuantity"),
        Some("1")
    );
    assert_eq!(d.diagrams.len(), 1);
}

#[test]
fn a_2_0_splits_and_merges_with_exclusive_gateways() {
    let d = miwg("A.2.0");
    let gateways = count(&d, |n| n.gateway() == Some(GatewayKind::Exclusive));
    assert_eq!(gateways, 2);
    assert_eq!(flows(&d), 9);
    assert_eq!(
        count(&d, |n| matches!(
            n.kind,
            NodeKind::Task {
                task: TaskKind::Task,
                ..
            }
        )),
        4
    );
    let p = &d.processes[0];
    let split = p
        .nodes
        .iter()
        .find(|n| n.name.as_deref() == Some("Gateway\n(Split Flow)"))
        .expect("the split, its name with a line break");
    assert_eq!(p.outgoing(&split.id).len(), 3);
    assert!(p.flows.iter().all(|f| f.condition.is_none()));
    assert!(split.default_flow.is_none());
    let end = p
        .nodes
        .iter()
        .find(|n| matches!(n.kind, NodeKind::EndEvent { .. }))
        .expect("end");
    assert_eq!(p.incoming(&end.id).len(), 2);
}

#[test]
fn a_3_0_has_an_empty_subprocess_with_two_boundary_events() {
    let d = miwg("A.3.0");
    let p = &d.processes[0];
    let sub = p
        .nodes
        .iter()
        .find(|n| matches!(n.kind, NodeKind::SubProcess { .. }))
        .expect("a subprocess");
    assert_eq!(sub.name.as_deref(), Some("Collapsed\nSub-Process"));
    let scope = sub.scope().expect("a scope");
    assert!(scope.nodes.is_empty() && scope.flows.is_empty(), "empty");
    let boundaries: Vec<_> = p
        .nodes
        .iter()
        .filter_map(|n| match &n.kind {
            NodeKind::Boundary {
                attached_to,
                cancel_activity,
                trigger,
            } => Some((
                attached_to.as_str(),
                *cancel_activity,
                trigger.element_name(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        boundaries,
        [
            (sub.id.as_str(), false, Some("messageEventDefinition")),
            (sub.id.as_str(), true, Some("escalationEventDefinition")),
        ]
    );
    assert_eq!(
        count(&d, |n| matches!(n.kind, NodeKind::EndEvent { .. })),
        2
    );
    assert_eq!(flows(&d), 8);
}

#[test]
fn a_4_0_has_two_processes_a_pool_lanes_and_message_flows() {
    let d = miwg("A.4.0");
    assert_eq!(d.processes.len(), 2);
    assert_eq!(d.collaborations.len(), 1);
    let c = &d.collaborations[0];
    assert_eq!(c.participants.len(), 1);
    assert_eq!(c.participants[0].name.as_deref(), Some("Pool"));
    assert_eq!(c.participants[0].process_ref.as_deref(), Some("WFP-6-1"));
    assert_eq!(c.message_flows.len(), 2);
    assert_eq!(
        d.participant_of("WFP-6-1").map(|p| p.id.as_str()),
        Some(c.participants[0].id.as_str())
    );
    assert!(d.participant_of("WFP-6-2").is_none(), "not bound to a pool");
    let p2 = d.process("WFP-6-2").expect("WFP-6-2");
    let lanes: Vec<_> = p2
        .lanes()
        .iter()
        .filter_map(|l| l.name.as_deref())
        .collect();
    assert_eq!(lanes, ["Lane 1", "Lane 2"]);
    assert_eq!(flows(&d), 13);
    let subs: Vec<_> = p2.nodes.iter().filter_map(|n| n.scope()).collect();
    assert_eq!(subs.len(), 2);
    for s in subs {
        assert_eq!(s.nodes.len(), 3, "start, task, end");
        assert_eq!(s.flows.len(), 2);
    }
    // Task 3 splits without a gateway.
    let task3 = p2
        .nodes
        .iter()
        .find(|n| n.name.as_deref() == Some("Task 3"))
        .expect("Task 3");
    assert_eq!(p2.outgoing(&task3.id).len(), 2);
    // A nested node is found with its path.
    let found = p2
        .node("_09532ad3-e571-4214-b580-7bebf4bb68b1")
        .expect("Task 4");
    assert_eq!(found.node.name.as_deref(), Some("Task 4"));
    assert_eq!(found.path.len(), 1);
    assert_eq!(
        count(&d, |n| matches!(n.kind, NodeKind::EndEvent { .. })),
        5
    );
    assert_eq!(
        count(&d, |n| matches!(n.kind, NodeKind::StartEvent { .. })),
        4
    );
    // Every lane reference names a node of the process.
    for lane in p2.lanes() {
        for r in &lane.flow_node_refs {
            assert!(p2.node(r).is_some(), "{r}");
        }
    }
}

#[test]
fn b_1_0_has_call_activities_data_and_a_timer_with_an_empty_date() {
    let d = miwg("B.1.0");
    assert_eq!(d.processes.len(), 4);
    let called: Vec<_> = nodes(&d)
        .into_iter()
        .filter_map(|n| match &n.kind {
            NodeKind::CallActivity { called_element, .. } => Some(called_element.as_deref()),
            _ => None,
        })
        .collect();
    assert_eq!(called.len(), 3);
    assert!(called.contains(&Some("global-task")));
    // The global task is not a process but is kept, with its id.
    assert!(d.process("global-task").is_none());
    let global = d.root_element("global-task").expect("kept");
    assert_eq!(global.name, "globalTask");
    for c in called.iter().flatten().filter(|c| **c != "global-task") {
        assert!(d.process(c).is_some(), "{c} is a process of the file");
    }
    let timer = nodes(&d)
        .into_iter()
        .find_map(|n| match &n.kind {
            NodeKind::StartEvent {
                trigger: Trigger::Timer { timer, .. },
                ..
            } => Some(timer.clone()),
            _ => None,
        })
        .expect("a timer start");
    assert_eq!(timer.date.as_deref(), Some(""), "present and empty");
    assert!(timer.duration.is_none() && timer.cycle.is_none());
    assert_eq!(
        count(&d, |n| n.gateway() == Some(GatewayKind::Exclusive)),
        4
    );
    assert_eq!(count(&d, |n| n.gateway() == Some(GatewayKind::Parallel)), 1);
    assert_eq!(
        count(&d, |n| matches!(
            n.kind,
            NodeKind::Task {
                task: TaskKind::User,
                ..
            }
        )),
        2
    );
    assert_eq!(
        count(&d, |n| matches!(
            n.kind,
            NodeKind::Task {
                task: TaskKind::Service,
                ..
            }
        )),
        2
    );
    assert_eq!(
        count(&d, |n| matches!(
            n.kind,
            NodeKind::EndEvent {
                result: Trigger::Terminate { .. }
            }
        )),
        1
    );
    let message_end = nodes(&d)
        .into_iter()
        .find_map(|n| match &n.kind {
            NodeKind::EndEvent {
                result: Trigger::Message { message_ref, .. },
            } => message_ref.clone(),
            _ => None,
        })
        .expect("a message end");
    assert!(
        d.messages
            .iter()
            .any(|m| m.id == message_end && m.name.is_none())
    );
    assert_eq!(flows(&d), 26);
    let p = d.process("WFP-6-2").expect("the pool's process");
    let kinds: Vec<_> = p.data.iter().map(|e| &e.kind).collect();
    assert!(matches!(
        kinds[..],
        [
            DataKind::Object { .. },
            DataKind::ObjectReference { .. },
            DataKind::StoreReference { .. }
        ]
    ));
    assert_eq!(d.data_stores.len(), 1);
    assert!(p.artifacts.iter().any(|a| matches!(&a.kind, ArtifactKind::TextAnnotation { text: Some(t) } if t == "Text Annotation")));
    assert!(
        p.artifacts
            .iter()
            .any(|a| matches!(a.kind, ArtifactKind::Association { .. }))
    );
    let c = &d.collaborations[0];
    assert_eq!(c.participants.len(), 2);
    assert_eq!(c.message_flows.len(), 2);
    assert!(
        c.artifacts
            .iter()
            .any(|a| matches!(a.kind, ArtifactKind::Group { .. }))
    );
    // The service task's data associations are kept in place, not lost.
    let service = p
        .node("_fea1c5af-6c76-403f-809e-26d476d92741")
        .expect("Service Task 7")
        .node;
    let kept: Vec<_> = service
        .extras
        .children
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(
        kept,
        [
            "ioSpecification",
            "dataInputAssociation",
            "dataOutputAssociation"
        ]
    );
}

#[test]
fn c_1_0_is_an_executable_invoice_approval_with_conditions_and_lanes() {
    let d = miwg("C.1.0");
    assert_eq!(
        d.exporter.as_deref(),
        Some("Signavio Process Editor, http://www.signavio.com")
    );
    let p = d
        .process("bpmn-miwg-test-case-c.1.0")
        .expect("the engine process");
    assert_eq!(p.is_executable, Some(true));
    assert_eq!(p.name.as_deref(), Some("BPMN MIWG Test Case C.1.0"));
    let executable: Vec<_> = d
        .processes
        .iter()
        .filter(|p| p.is_executable == Some(true))
        .collect();
    assert_eq!(executable.len(), 1);
    let conditions: BTreeSet<_> = p
        .flows
        .iter()
        .filter_map(|f| f.condition.as_deref())
        .collect();
    let want: BTreeSet<_> = [
        "${approved}",
        "${!approved}",
        "${clarified == 'yes'}",
        "${clarified == 'no'}",
    ]
    .into();
    assert_eq!(conditions, want);
    let lanes: Vec<_> = p.lanes().iter().filter_map(|l| l.name.as_deref()).collect();
    assert_eq!(lanes, ["Approver", "Team Assistant", "Accountant"]);
    assert_eq!(
        p.lane_of("approveInvoice").map(|l| l.id.as_str()),
        Some("Approver")
    );
    assert_eq!(
        count(&d, |n| n.gateway() == Some(GatewayKind::EventBased)),
        1
    );
    assert_eq!(
        count(&d, |n| n.gateway() == Some(GatewayKind::Exclusive)),
        2
    );
    assert_eq!(
        count(&d, |n| matches!(
            n.kind,
            NodeKind::Task {
                task: TaskKind::User,
                ..
            }
        )),
        4
    );
    let timers: Vec<_> = nodes(&d)
        .into_iter()
        .filter_map(|n| match &n.kind {
            NodeKind::IntermediateCatch {
                trigger: Trigger::Timer { timer, id, .. },
            } => Some((timer.clone(), id.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(timers.len(), 1);
    assert_eq!(
        timers[0].0,
        TimerDef::default(),
        "the timer definition is empty"
    );
    assert_eq!(
        timers[0].1.as_deref(),
        Some("sid-6517379a-613c-497d-81cc-b710878d9ebb")
    );
    assert_eq!(
        count(&d, |n| matches!(
            n.kind,
            NodeKind::StartEvent {
                trigger: Trigger::Message { .. },
                ..
            }
        )),
        2
    );
    let c = &d.collaborations[0];
    assert_eq!(c.participants.len(), 2);
    assert_eq!(c.message_flows.len(), 5);
    assert_eq!(flows(&d), 20);
    // Non-ASCII and line breaks in names.
    assert!(
        nodes(&d)
            .iter()
            .any(|n| n.name.as_deref() == Some("Rechnung klären"))
    );
    assert!(
        nodes(&d)
            .iter()
            .any(|n| n.name.as_deref() == Some("Invoice\napproved?"))
    );
    // Vendor attributes keep their namespace (camunda: is Activiti's here).
    let approve = p.node("approveInvoice").expect("approveInvoice").node;
    assert_eq!(
        approve
            .extras
            .attribute(Some("http://activiti.org/bpmn"), "assignee"),
        Some("${approver}")
    );
    assert!(approve.extras.extension_elements().is_some());
    assert_eq!(approve.extras.children[0].name, "potentialOwner");
    // Condition ids are kept with the condition.
    let approved = p.flow("invoiceApproved").expect("invoiceApproved");
    assert_eq!(
        approved.condition_attributes[0].value,
        "sid-0ed8a0cb-f28a-4689-bbd8-77dafd0ccfa0"
    );
    assert_eq!(
        d.root_elements
            .iter()
            .filter(|e| e.name == "resource")
            .count(),
        3
    );
}

#[test]
fn the_camunda_fixture_reads_camunda_extensions_and_expressions() {
    let d = fixture("camunda");
    assert_eq!(d.exporter.as_deref(), Some("Camunda Modeler"));
    let p = d.process("invoice_approval").expect("process");
    let approve = p.node("Activity_approve").expect("approve").node;
    assert_eq!(
        approve.documentation.as_deref(),
        Some("Check amount & supplier.")
    );
    let camunda = Some("http://camunda.org/schema/1.0/bpmn");
    assert_eq!(
        approve.extras.attribute(camunda, "assignee"),
        Some("${approver}")
    );
    match approve.kind.loop_characteristics() {
        Some(Loop::MultiInstance {
            sequential,
            collection,
            element_variable,
            completion_condition,
            completion_condition_attributes,
            ..
        }) => {
            assert!(sequential);
            assert_eq!(collection.as_deref(), Some("${approvers}"));
            assert_eq!(element_variable.as_deref(), Some("approver"));
            assert_eq!(
                completion_condition.as_deref(),
                Some("${nrOfCompletedInstances == 1}")
            );
            assert!(
                completion_condition_attributes.is_empty(),
                "the formal type is implied"
            );
        }
        other => panic!("{other:?}"),
    }
    let gateway = p.node("Gateway_approved").expect("gateway").node;
    assert_eq!(gateway.default_flow.as_deref(), Some("Flow_no"));
    assert_eq!(
        p.flow("Flow_yes").and_then(|f| f.condition.as_deref()),
        Some("${approved}")
    );
    let log = p.node("Activity_log").expect("log").node;
    assert_eq!(
        log.kind,
        NodeKind::Task {
            task: TaskKind::Script {
                format: Some("javascript".into()),
                script: Some("if (amount < 10) { print('small'); }".into())
            },
            loop_: None,
        }
    );
    let reminder = p.node("Event_reminder").expect("reminder").node;
    match &reminder.kind {
        NodeKind::Boundary {
            attached_to,
            cancel_activity: false,
            trigger: Trigger::Timer { timer, .. },
        } => {
            assert_eq!(attached_to, "Activity_approve");
            assert_eq!(timer.duration.as_deref(), Some("P2D"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(d.errors[0].error_code.as_deref(), Some("REJECTED"));
    assert_eq!(d.signals[0].name.as_deref(), Some("reminder"));
    let modeler = d.extras.attribute(
        Some("http://camunda.org/schema/modeler/1.0"),
        "executionPlatform",
    );
    assert_eq!(modeler, Some("Camunda Platform"));
    // The export writes what Camunda Modeler writes.
    let xml = export(&d);
    assert!(xml.contains(r#"<bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">${approved}</bpmn:conditionExpression>"#), "{xml}");
    assert!(xml.contains(r#"camunda:collection="${approvers}""#));
    assert!(xml.contains(r#"<camunda:property name="priority" value="high"/>"#));
    assert!(xml.contains("if (amount &lt; 10)"));
}

#[test]
fn the_bpmn_io_fixture_reads_a_default_namespace_and_flows_before_nodes() {
    let d = fixture("bpmnio");
    let p = d.process("sid-process").expect("process");
    assert_eq!(
        p.documentation, None,
        "an attributed documentation is kept whole"
    );
    assert_eq!(p.extras.leading[0].name, "documentation");
    assert_eq!(p.flows.len(), 8);
    assert_eq!(p.nodes.len(), 8);
    let f4 = p.flow("sid-f4").expect("f4");
    assert_eq!(
        f4.condition.as_deref(),
        Some("total > 0 && paid"),
        "CDATA read"
    );
    let f3 = p.flow("sid-f3").expect("f3");
    assert_eq!(f3.condition_attributes[0].name, "language");
    let tx = p.node("sid-tx").expect("the transaction").node;
    assert_eq!(
        tx.kind,
        NodeKind::Unsupported {
            element: "transaction".into()
        }
    );
    assert_eq!(tx.extras.children[0].id(), Some("sid-tx-start"));
    let ship = p.node("sid-ship").expect("ship").node;
    assert!(
        matches!(ship.kind.loop_characteristics(), Some(Loop::Standard { condition: Some(c), .. }) if c == "notPacked")
    );
    assert_eq!(
        ship.scope().map(|s| (s.nodes.len(), s.flows.len())),
        Some((3, 2))
    );
    let bill = p.node("sid-bill").expect("bill").node;
    assert_eq!(
        bill.kind,
        NodeKind::Task {
            task: TaskKind::Send {
                message_ref: Some("sid-msg-bill".into())
            },
            loop_: None
        }
    );
    assert_eq!(
        count(&d, |n| n.gateway() == Some(GatewayKind::Inclusive)),
        2
    );
    assert_eq!(
        d.namespaces
            .iter()
            .map(|n| n.prefix.as_str())
            .collect::<Vec<_>>(),
        ["xsd"],
        "kept for structureRef"
    );
    let xml = export(&d);
    assert!(xml.contains(r#"xmlns:xsd="http://www.w3.org/2001/XMLSchema""#));
    assert!(xml.contains(r#"structureRef="xsd:string""#));
    assert!(xml.contains("<![CDATA[Orders: <receive>, check & ship.]]>"));
    assert!(xml.contains(r#"name="Order&#10;received""#));
}

#[test]
fn the_bom_fixture_reads_utf8_with_a_bom_and_crlf_and_gets_a_diagram() {
    let d = fixture("bom_crlf");
    let p = d.process("rechnungspruefung").expect("the process");
    assert_eq!(p.name.as_deref(), Some("Rechnungsprüfung"));
    assert_eq!(
        p.documentation.as_deref(),
        Some("Zeile eins\nZeile zwei – mit „Anführungszeichen“"),
        "CRLF read as LF"
    );
    assert!(d.diagrams.is_empty());
    assert_eq!(
        count(&d, |n| n.gateway() == Some(GatewayKind::EventBased)),
        1
    );
    let done = p.node("_done").expect("end").node;
    assert_eq!(
        done.kind.trigger().map(|t| t.definitions().len()),
        Some(2),
        "multiple"
    );
    let cond = p.node("_answer").expect("answer").node;
    assert!(
        matches!(cond.kind.trigger(), Some(Trigger::Conditional { condition: Some(c), .. }) if c == "approved != null")
    );
    let xml = export(&d);
    for node in p.all_nodes() {
        assert!(
            xml.contains(&format!(r#"bpmnElement="{}""#, node.node.id)),
            "{} laid out",
            node.node.id
        );
    }
    for flow in &p.flows {
        assert!(
            xml.contains(&format!(r#"bpmnElement="{}""#, flow.id)),
            "{} laid out",
            flow.id
        );
    }
    // The generated diagram is not part of the model read back.
    assert_eq!(
        import(xml.as_bytes()).expect("again").diagrams,
        Vec::<Element>::new()
    );
}

/// An A.1.0 with a task added after the last one, as an editor would.
fn a_1_0_with_a_new_task() -> Definitions {
    let mut d = miwg("A.1.0");
    let p = &mut d.processes[0];
    let end = p
        .nodes
        .iter()
        .find(|n| matches!(n.kind, NodeKind::EndEvent { .. }))
        .expect("end")
        .id
        .clone();
    let mut task = Node::new(
        "review",
        NodeKind::Task {
            task: TaskKind::User,
            loop_: None,
        },
    );
    task.name = Some("Review".into());
    p.nodes.push(task);
    p.nodes.push(Node::new(
        "review_gate",
        NodeKind::Gateway {
            gateway: GatewayKind::Exclusive,
        },
    ));
    p.flows.push(SequenceFlow {
        id: "to_review".into(),
        name: None,
        source: end,
        target: "review".into(),
        condition: None,
        condition_attributes: vec![],
        documentation: None,
        extras: Preserved::default(),
    });
    d
}

/// The bounds of the shape of `element` in `xml`, parsed crudely.
fn bounds_of(xml: &str, element: &str) -> [f64; 4] {
    let at = xml
        .find(&format!(r#"bpmnElement="{element}""#))
        .expect("a shape");
    let rest = &xml[at..];
    let b = &rest[rest.find("Bounds").expect("bounds")..];
    let b = &b[..b.find("/>").expect("end")];
    let get = |k: &str| {
        let s = &b[b.find(&format!(" {k}=\"")).expect(k) + k.len() + 3..];
        s[..s.find('"').expect("quote")]
            .parse::<f64>()
            .expect("number")
    };
    [get("x"), get("y"), get("width"), get("height")]
}

#[test]
fn new_nodes_and_flows_are_laid_out_right_of_the_existing_shapes() {
    let d = a_1_0_with_a_new_task();
    let xml = export(&d);
    // The right-most shape of A.1.0 is the end event at x 648, width 32.
    let [x, y, w, h] = bounds_of(&xml, "review");
    assert_eq!((w, h), (100.0, 80.0));
    assert!(x >= 680.0, "{x}");
    assert_eq!(y + h / 2.0, 335.0 + 16.0, "centred on the right-most shape");
    let [gx, _, gw, gh] = bounds_of(&xml, "review_gate");
    assert_eq!((gw, gh), (50.0, 50.0));
    assert!(gx >= x + w, "one row");
    let edge = &xml[xml.find(r#"bpmnElement="to_review""#).expect("an edge")..];
    let edge = &edge[..edge.find("</bpmndi:BPMNEdge>").expect("end")];
    assert_eq!(edge.matches("waypoint").count(), 2);
    // Reading the export back gives the edited model, and exporting that
    // gives the same text.
    let back = import(xml.as_bytes()).expect("imports");
    assert_eq!(back, d);
    assert_eq!(export(&back), xml);
}

#[test]
fn a_model_built_from_nothing_exports_with_a_diagram_and_reads_back_equal() {
    let mut p = Process::new("expense");
    p.is_executable = Some(true);
    let kinds = [
        (
            "start",
            NodeKind::StartEvent {
                trigger: Trigger::None,
                interrupting: true,
            },
        ),
        (
            "check",
            NodeKind::Task {
                task: TaskKind::User,
                loop_: None,
            },
        ),
        (
            "big",
            NodeKind::Gateway {
                gateway: GatewayKind::Exclusive,
            },
        ),
        (
            "end",
            NodeKind::EndEvent {
                result: Trigger::None,
            },
        ),
    ];
    for (id, kind) in kinds {
        p.nodes.push(Node::new(id, kind));
    }
    for (id, s, t, c) in [
        ("f1", "start", "check", None),
        ("f2", "check", "big", None),
        ("f3", "big", "end", Some("${amount > 1000}")),
    ] {
        p.flows.push(SequenceFlow {
            id: id.into(),
            name: None,
            source: s.into(),
            target: t.into(),
            condition: c.map(str::to_owned),
            condition_attributes: vec![],
            documentation: None,
            extras: Preserved::default(),
        });
    }
    p.lane_sets.push(LaneSet {
        id: Some("lanes".into()),
        name: None,
        lanes: vec![Lane {
            id: "finance".into(),
            name: Some("Finance".into()),
            flow_node_refs: vec!["check".into()],
            child_lane_set: None,
            extras: Preserved {
                attributes: vec![Attribute::qualified(
                    "urn:example:coordinator",
                    "coordinator",
                    "role",
                    "cfo",
                )],
                ..Preserved::default()
            },
        }],
        extras: Preserved::default(),
    });
    let d = Definitions {
        id: Some("defs".into()),
        target_namespace: "urn:example".into(),
        processes: vec![p],
        ..Definitions::default()
    };
    let xml = export(&d);
    for id in ["start", "check", "big", "end", "f1", "f2", "f3"] {
        assert!(xml.contains(&format!(r#"bpmnElement="{id}""#)), "{id}");
    }
    assert!(xml.contains("${amount &gt; 1000}"));
    assert!(xml.contains(r#"coordinator:role="cfo""#));
    let back = import(xml.as_bytes()).expect("imports");
    assert_eq!(back, d, "the generated diagram is recognised");
    assert_eq!(export(&back), xml);
}

#[test]
fn a_diagram_moved_by_a_person_is_kept() {
    let d = a_1_0_with_a_new_task();
    let xml = export(&d);
    let [x, ..] = bounds_of(&xml, "review");
    let moved = xml.replacen(&format!(r#"x="{x}""#), r#"x="900""#, 1);
    assert_ne!(moved, xml);
    let back = import(moved.as_bytes()).expect("imports");
    assert_ne!(back.diagrams, d.diagrams, "the moved shape is kept");
    assert!(export(&back).contains(r#"x="900""#));
}
