use super::*;
use crate::{export, import, validate::validate};

fn add(d: &mut Definitions, id: &str, t: NodeType) -> Result<(), EditError> {
    apply(
        d,
        Edit::AddNode {
            process: None,
            id: id.into(),
            node_type: t,
            name: id.into(),
            description: None,
            lane: None,
            definition: None,
        },
    )
}

fn link(d: &mut Definitions, id: &str, s: &str, t: &str, c: Option<&str>) -> Result<(), EditError> {
    apply(
        d,
        Edit::Connect {
            id: Some(id.into()),
            source: s.into(),
            target: t.into(),
            condition: c.map(str::to_owned),
            name: None,
        },
    )
}

fn approval() -> Definitions {
    let mut d = empty("Process_1", "Approval");
    for (id, t) in [
        ("s", NodeType::StartEvent),
        ("review", NodeType::UserTask),
        ("g", NodeType::ExclusiveGateway),
        ("pay", NodeType::ServiceTask),
        ("e", NodeType::EndEvent),
    ] {
        add(&mut d, id, t).expect("add");
    }
    link(&mut d, "f1", "s", "review", None).expect("f1");
    link(&mut d, "f2", "review", "g", None).expect("f2");
    link(&mut d, "f3", "g", "pay", Some("${approved}")).expect("f3");
    link(&mut d, "f4", "g", "e", Some("${!approved}")).expect("f4");
    link(&mut d, "f5", "pay", "e", None).expect("f5");
    d
}

#[test]
fn a_process_built_by_edits_validates_and_survives_export() {
    let d = approval();
    let r = validate(&d);
    assert!(r.valid, "{r:?}");
    let again = import(export(&d).as_bytes()).expect("the export imports");
    assert_eq!(again, d, "export then import is the same model");
}

#[test]
fn refused_edits_change_nothing() {
    let mut d = approval();
    let before = d.clone();
    let refusals = [
        add(&mut d, "review", NodeType::Task).map(|_| ()),
        add(&mut d, "9bad", NodeType::Task),
        add(&mut d, "has space", NodeType::Task),
        link(&mut d, "fx", "ghost", "e", None),
        link(&mut d, "fx", "e", "s", None),
        link(&mut d, "fx", "pay", "s", None),
        link(&mut d, "fx", "g", "pay", Some("${approved ==")),
        link(&mut d, "f1", "g", "pay", None),
        apply(&mut d, Edit::RemoveNode { id: "ghost".into() }),
        apply(
            &mut d,
            Edit::AddNode {
                process: Some("nope".into()),
                id: "x".into(),
                node_type: NodeType::Task,
                name: "x".into(),
                description: None,
                lane: None,
                definition: None,
            },
        ),
        apply(
            &mut d,
            Edit::AddNode {
                process: None,
                id: "x".into(),
                node_type: NodeType::TimerEvent,
                name: "x".into(),
                description: None,
                lane: None,
                definition: None,
            },
        ),
        apply(
            &mut d,
            Edit::AddNode {
                process: None,
                id: "x".into(),
                node_type: NodeType::ScriptTask,
                name: "x".into(),
                description: None,
                lane: None,
                definition: Some("os.system('x')".into()),
            },
        ),
    ];
    for (i, r) in refusals.iter().enumerate() {
        assert!(r.is_err(), "refusal {i} was accepted");
    }
    assert_eq!(d, before);
    assert_eq!(
        add(&mut d, "review", NodeType::Task).map_err(|e| e.code()),
        Err("duplicate_element")
    );
    assert_eq!(
        link(&mut d, "fx", "ghost", "e", None).map_err(|e| (e.code(), e.field())),
        Err(("unknown_element", "source"))
    );
}

#[test]
fn removing_a_node_takes_its_flows_boundaries_and_lane_entries() {
    let mut d = approval();
    apply(
        &mut d,
        Edit::AddLane {
            pool: None,
            id: None,
            name: "Finance".into(),
            role: "cfo".into(),
        },
    )
    .expect("lane");
    apply(
        &mut d,
        Edit::AddNode {
            process: None,
            id: "audit".into(),
            node_type: NodeType::ServiceTask,
            name: "Audit".into(),
            description: None,
            lane: Some("Finance".into()),
            definition: None,
        },
    )
    .expect("in the lane");
    let p = &d.processes[0];
    assert_eq!(
        p.lane_of("audit").map(|l| l.id.as_str()),
        Some("Lane_Finance")
    );
    assert_eq!(
        p.lane_of("audit").and_then(crate::model::Lane::role),
        Some("cfo".into())
    );
    apply(&mut d, Edit::RemoveNode { id: "g".into() }).expect("remove");
    apply(&mut d, Edit::RemoveNode { id: "audit".into() }).expect("remove");
    let p = &d.processes[0];
    assert!(p.node("g").is_none());
    assert!(
        p.flows.iter().all(|f| f.source != "g" && f.target != "g"),
        "{:?}",
        p.flows
    );
    assert!(p.lanes()[0].flow_node_refs.is_empty());
}

#[test]
fn lanes_keep_their_role_through_export_and_import() {
    let mut d = approval();
    apply(
        &mut d,
        Edit::AddLane {
            pool: None,
            id: None,
            name: "Legal team".into(),
            role: "legal".into(),
        },
    )
    .expect("lane");
    let xml = export(&d);
    assert!(xml.contains("coordinator:role=\"legal\""), "{xml}");
    let again = import(xml.as_bytes()).expect("import");
    let lane = again.processes[0].lanes()[0].clone();
    assert_eq!(lane.role(), Some("legal".into()));
}

#[test]
fn definitions_declare_messages_signals_errors_and_timers() {
    let mut d = approval();
    for (id, t, def) in [
        ("wait", NodeType::TimerEvent, "PT5M"),
        ("ask", NodeType::SendTask, "Invoice"),
        ("hear", NodeType::MessageEvent, "Invoice"),
        ("flag", NodeType::SignalEvent, "Stop"),
        ("oops", NodeType::ErrorEvent, "E42"),
        ("calc", NodeType::ScriptTask, "total = amount * 2"),
        ("sub", NodeType::CallActivity, "Other_Process"),
    ] {
        apply(
            &mut d,
            Edit::AddNode {
                process: None,
                id: id.into(),
                node_type: t,
                name: id.into(),
                description: None,
                lane: None,
                definition: Some(def.into()),
            },
        )
        .unwrap_or_else(|e| panic!("{id}: {e}"));
    }
    assert_eq!(d.messages.len(), 1, "one message, declared once");
    assert_eq!(d.signals.len(), 1);
    assert_eq!(d.errors[0].error_code.as_deref(), Some("E42"));
    let again = import(export(&d).as_bytes()).expect("import");
    assert_eq!(again, d);
}
