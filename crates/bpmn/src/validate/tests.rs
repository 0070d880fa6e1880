use super::*;
use crate::import;

/// A definitions document around `body` (the BPMN namespace as default).
fn doc(body: &str) -> Definitions {
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="t">{body}</definitions>"#
    );
    import(xml.as_bytes()).expect("the test document imports")
}

fn codes(findings: &[Finding]) -> Vec<(&'static str, Option<&str>)> {
    findings
        .iter()
        .map(|f| (f.code, f.element.as_deref()))
        .collect()
}

fn miwg(name: &str) -> Definitions {
    let path = format!("{}/tests/miwg/{name}.bpmn", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).expect("MIWG model");
    import(&bytes).expect("MIWG model imports")
}

#[test]
fn a_straight_process_is_valid() {
    let d = doc(r#"<process id="p" isExecutable="true">
        <startEvent id="s"/><task id="t"/><endEvent id="e"/>
        <sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
        <sequenceFlow id="f2" sourceRef="t" targetRef="e"/></process>"#);
    let r = validate(&d);
    assert!(r.valid, "{r:?}");
    assert!(r.warnings.is_empty(), "{r:?}");
    assert_eq!(counts(&d), Counts { nodes: 3, flows: 2 });
}

#[test]
fn missing_start_and_end_and_unknown_flow_ends_are_errors_with_ids() {
    let d = doc(r#"<process id="p"><task id="t"/>
        <sequenceFlow id="f" sourceRef="t" targetRef="ghost"/></process>"#);
    let r = validate(&d);
    assert!(!r.valid);
    let errors = codes(&r.errors);
    assert!(
        errors.contains(&("missing_start_event", Some("p"))),
        "{errors:?}"
    );
    assert!(
        errors.contains(&("missing_end_event", Some("p"))),
        "{errors:?}"
    );
    assert!(
        errors.contains(&("unknown_flow_node", Some("f"))),
        "{errors:?}"
    );
}

#[test]
fn an_empty_document_has_nothing_to_run() {
    let r = validate(&crate::edit::empty("p", "x"));
    assert!(!r.valid);
    assert_eq!(codes(&r.errors)[0], ("nothing_to_run", None));
}

#[test]
fn unreachable_dead_end_and_orphan_nodes_are_warnings() {
    let d = doc(
        r#"<process id="p"><startEvent id="s"/><task id="a"/><task id="lost"/>
        <task id="alone"/><endEvent id="e"/>
        <sequenceFlow id="f1" sourceRef="s" targetRef="a"/>
        <sequenceFlow id="f2" sourceRef="s" targetRef="e"/>
        <sequenceFlow id="f3" sourceRef="lost" targetRef="e"/></process>"#,
    );
    let r = validate(&d);
    assert!(r.valid, "{r:?}");
    let w = codes(&r.warnings);
    assert!(w.contains(&("dead_end", Some("a"))), "{w:?}");
    assert!(w.contains(&("unreachable_node", Some("lost"))), "{w:?}");
    assert!(w.contains(&("unreachable_node", Some("alone"))), "{w:?}");
}

#[test]
fn gateways_without_conditions_or_default_are_named() {
    let d = doc(r#"<process id="p"><startEvent id="s"/>
        <exclusiveGateway id="g"/><exclusiveGateway id="h" default="h2"/>
        <endEvent id="e1"/><endEvent id="e2"/>
        <sequenceFlow id="f0" sourceRef="s" targetRef="g"/>
        <sequenceFlow id="g1" sourceRef="g" targetRef="h"><conditionExpression>${ok}</conditionExpression></sequenceFlow>
        <sequenceFlow id="g2" sourceRef="g" targetRef="e1"><conditionExpression>${!ok}</conditionExpression></sequenceFlow>
        <sequenceFlow id="h1" sourceRef="h" targetRef="e1"/>
        <sequenceFlow id="h2" sourceRef="h" targetRef="e2"/></process>"#);
    let r = validate(&d);
    assert!(r.valid, "{r:?}");
    let w = codes(&r.warnings);
    assert!(w.contains(&("no_default_flow", Some("g"))), "{w:?}");
    assert!(w.contains(&("condition_missing", Some("h1"))), "{w:?}");
    assert!(
        !w.iter().any(|(_, e)| *e == Some("h2")),
        "the default needs no condition: {w:?}"
    );
}

#[test]
fn bad_conditions_scripts_and_unsupported_elements_are_errors() {
    let d = doc(r#"<process id="p"><startEvent id="s"/>
        <exclusiveGateway id="g" default="nope"/><scriptTask id="js" scriptFormat="javascript"><script>rm()</script></scriptTask>
        <scriptTask id="ok"><script>total = amount * 2</script></scriptTask>
        <complexGateway id="cx"/><transaction id="tx"/><endEvent id="e"/>
        <sequenceFlow id="f0" sourceRef="s" targetRef="g"/>
        <sequenceFlow id="f1" sourceRef="g" targetRef="js"><conditionExpression>${amount &gt;</conditionExpression></sequenceFlow>
        <sequenceFlow id="f2" sourceRef="js" targetRef="ok"/>
        <sequenceFlow id="f3" sourceRef="ok" targetRef="cx"/>
        <sequenceFlow id="f4" sourceRef="cx" targetRef="tx"/>
        <sequenceFlow id="f5" sourceRef="tx" targetRef="e"/></process>"#);
    let r = validate(&d);
    let e = codes(&r.errors);
    assert!(e.contains(&("invalid_condition", Some("f1"))), "{e:?}");
    assert!(e.contains(&("invalid_default_flow", Some("g"))), "{e:?}");
    assert!(e.contains(&("script_refused", Some("js"))), "{e:?}");
    assert!(!e.iter().any(|(_, id)| *id == Some("ok")), "{e:?}");
    assert!(e.contains(&("unsupported_element", Some("cx"))), "{e:?}");
    assert!(e.contains(&("unsupported_element", Some("tx"))), "{e:?}");
}

#[test]
fn boundary_events_and_flows_into_starts_are_checked() {
    let d = doc(
        r#"<process id="p"><startEvent id="s"/><task id="t"/><endEvent id="e"/>
        <boundaryEvent id="b" attachedToRef="nothing"><timerEventDefinition/></boundaryEvent>
        <sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
        <sequenceFlow id="f2" sourceRef="t" targetRef="e"/>
        <sequenceFlow id="f3" sourceRef="t" targetRef="s"/></process>"#,
    );
    let r = validate(&d);
    let e = codes(&r.errors);
    assert!(
        e.contains(&("boundary_attached_to_unknown", Some("b"))),
        "{e:?}"
    );
    assert!(e.contains(&("start_has_incoming", Some("s"))), "{e:?}");
    assert!(
        codes(&r.warnings).contains(&("empty_timer", Some("b"))),
        "{r:?}"
    );
}

#[test]
fn multi_instance_needs_an_input() {
    let d = doc(r#"<process id="p"><startEvent id="s"/>
        <task id="t"><multiInstanceLoopCharacteristics/></task><endEvent id="e"/>
        <sequenceFlow id="f1" sourceRef="s" targetRef="t"/>
        <sequenceFlow id="f2" sourceRef="t" targetRef="e"/></process>"#);
    let r = validate(&d);
    let e = codes(&r.errors);
    assert!(
        e.contains(&("multi_instance_without_input", Some("t"))),
        "{e:?}"
    );
}

#[test]
fn script_assignments_are_the_only_scripts() {
    assert!(script_assignment("total = amount * 2").is_some());
    assert!(script_assignment("approved = true").is_some());
    for bad in ["print('x')", "= 3", "a == b", "1x = 2", "x = (", ""] {
        assert!(script_assignment(bad).is_none(), "{bad}");
    }
}

/// What the MIWG reference models, drawn for interchange, are told.
#[test]
fn the_miwg_models_are_told_what_is_unclear_and_all_but_none_run() {
    for name in ["A.1.0", "A.2.0", "A.3.0", "A.4.0", "C.1.0"] {
        let r = validate(&miwg(name));
        assert!(r.valid, "{name}: {:?}", r.errors);
    }
    // A.2.0's split carries no conditions: each branch is named.
    let r = validate(&miwg("A.2.0"));
    let w = codes(&r.warnings);
    assert!(w.iter().any(|(c, _)| *c == "condition_missing"), "{w:?}");
    // A.3.0's subprocess is empty.
    let r = validate(&miwg("A.3.0"));
    let w = codes(&r.warnings);
    assert!(w.iter().any(|(c, _)| *c == "empty_subprocess"), "{w:?}");
    // B.1.0 calls a global task that is not in the file, and has an empty timer.
    let r = validate(&miwg("B.1.0"));
    let w = codes(&r.warnings);
    assert!(
        w.iter()
            .any(|(c, _)| *c == "called_element_not_in_document"),
        "{w:?}"
    );
    assert!(w.iter().any(|(c, _)| *c == "empty_timer"), "{w:?}");
}

#[test]
fn flows_of_a_process_without_nodes_are_named_and_a_blank_call_names_nothing() {
    let d = doc(r#"<process id="black_box">
        <sequenceFlow id="junk" sourceRef="a" targetRef="b"/></process>
        <process id="p"><startEvent id="s"/><callActivity id="c" calledElement=" "/><endEvent id="e"/>
        <sequenceFlow id="f1" sourceRef="s" targetRef="c"/>
        <sequenceFlow id="f2" sourceRef="c" targetRef="e"/></process>"#);
    let r = validate(&d);
    let warnings = codes(&r.warnings);
    assert!(
        warnings.contains(&("unknown_flow_node", Some("junk"))),
        "{warnings:?}"
    );
    let errors = codes(&r.errors);
    assert!(
        errors.contains(&("missing_called_element", Some("c"))),
        "{errors:?}"
    );
}
