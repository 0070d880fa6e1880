//! Exports and roundtrips of the BPMN MIWG reference models written by other
//! tools (tests/miwg-tools, CC BY 3.0, see its README): every file imports,
//! round trips through export, exports stably, validates without panicking
//! and has the semantic shape of the reference model of its test case. Ids,
//! whitespace of names, namespaces and element order differ between tools
//! and are not compared.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use coordinator_bpmn::validate::validate;
use coordinator_bpmn::*;

/// Files the importer refuses, with the reason: (path under tests/miwg-tools,
/// why). Empty: every tool wrote a document the importer accepts.
const REFUSED: &[(&str, &str)] = &[];

/// Files whose shape legitimately differs from the reference model: (path
/// under tests/miwg-tools, the difference as `compare` reports it, why).
const SHAPE_EXCEPTIONS: &[(&str, &[&str], &str)] = &[
    (
        "bpmn.io (Cawemo, Camunda Modeler) 1.12.0/A.4.0-export.bpmn",
        &["flows-1"],
        "an export test (redrawn from the reference picture): the sequence flow \
         from Task 3 to Expanded Sub-Process 1 was not drawn, the sub-process \
         has no incoming flow",
    ),
    (
        "Trisotech Workflow Modeler 12.13.0/A.3.0-export.bpmn",
        &[
            "+intermediateCatchEvent/escalation",
            "-boundaryEvent/escalation",
        ],
        "the tool wrote the interrupting escalation boundary event drawn on the \
     sub-process border as a free intermediateCatchEvent (no attachedToRef)",
    ),
    (
        "bpmn.io (Cawemo, Camunda Modeler) 1.12.0/B.1.0-export.bpmn",
        &[
            "+subProcess",
            "-callActivity",
            "-endEvent",
            "-serviceTask",
            "-startEvent/message",
            "flows-2",
            "processes-2",
        ],
        "an export test (redrawn from the reference picture): Call Activity - \
         Expanded was drawn as an expanded subProcess holding its start, task \
         and end event instead of a callActivity calling a process, Service \
         Task 3 as a plain task, and no called process was written (neither \
         that one nor the one of Call Activity Collapsed, whose Start Event \
         None 3, Abstract Task 8, End Event None 4 and 2 flows are missing)",
    ),
    (
        "MID Innovator 15.1.1.11026/B.1.0-export.bpmn",
        &["+receiveTask", "+sendTask", "-serviceTask", "-task"],
        "the tool typed the ends of the message flows: Abstract Task 1 (source \
         of Message Flow 1) is a sendTask and Service Task 3 (target of Message \
         Flow 2) a receiveTask, each with a messageRef",
    ),
    (
        "SAP Signavio Process Manager 19.9.0/B.1.0-export.bpmn",
        &[
            "-endEvent",
            "-endEvent",
            "-startEvent",
            "-startEvent",
            "-task",
            "-task",
            "flows-3",
            "processes-2",
        ],
        "an export test: the processes called by Call Activity Collapsed \
         (calledElement=\"\") and Call Activity - Expanded (no calledElement) \
         were not written (their start, task and end events and 4 flows are \
         missing); a node-less process holds 2 sequence flows whose sourceRef \
         and targetRef name no element; the flow from Collapsed Sub-Process to \
         Sub Process - Expanded was not drawn",
    ),
    (
        "Trisotech Workflow Modeler 12.13.0/B.1.0-export.bpmn",
        &[
            "-endEvent",
            "-startEvent",
            "-task",
            "flows-3",
            "processes-1",
        ],
        "an export test: the process called by Call Activity Collapsed was not \
         written (calledElementType=\"process\", no calledElement), so Start \
         Event None 3, Abstract Task 8, End Event None 4 and their 2 flows are \
         missing; the flow from Parallel Gateway Divergence to User Task 5 was \
         not drawn (User Task 5 has no incoming flow)",
    ),
];

/// The semantic shape compared with the reference model.
#[derive(Debug, PartialEq, Eq)]
struct Shape {
    /// Processes that have at least one flow node.
    processes: usize,
    /// Element name of every flow node (nested ones included) → count.
    elements: BTreeMap<String, usize>,
    /// Sequence flows, nested ones included.
    flows: usize,
}

/// Reads a file under tests/.
fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The tests/ directory of the crate.
fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// Every tool file: (path relative to tests/miwg-tools, test case such as `A.1.0`).
fn tool_files() -> Vec<(String, String)> {
    let root = tests_dir().join("miwg-tools");
    let mut files = Vec::new();
    for tool in std::fs::read_dir(&root).expect("tests/miwg-tools") {
        let tool = tool.expect("entry").path();
        if !tool.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&tool).expect("tool folder") {
            let file = file.expect("entry").path();
            let name = file
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned();
            if !name.ends_with(".bpmn") {
                continue;
            }
            let case = name.split('-').next().expect("case").to_string();
            let rel = file.strip_prefix(&root).expect("under root");
            files.push((rel.to_string_lossy().into_owned(), case));
        }
    }
    files.sort();
    files
}

/// Imports a file under tests/miwg-tools.
fn import_tool_file(rel: &str) -> Result<Definitions, ImportError> {
    import(&read(&tests_dir().join("miwg-tools").join(rel)))
}

/// The shape of a model.
fn shape(defs: &Definitions) -> Shape {
    let mut elements = BTreeMap::new();
    let mut processes = 0;
    for p in &defs.processes {
        let nodes = p.all_nodes();
        if !nodes.is_empty() {
            processes += 1;
        }
        for at in nodes {
            // An event counts with what it catches or throws, so a tool's
            // definition the importer lost shows as a difference.
            let trigger = at
                .node
                .kind
                .trigger()
                .and_then(|t| t.element_name())
                .map(|d| format!("/{}", d.trim_end_matches("EventDefinition")))
                .unwrap_or_default();
            *elements
                .entry(format!("{}{trigger}", at.node.kind.element_name()))
                .or_insert(0) += 1;
        }
    }
    Shape {
        processes,
        elements,
        flows: counts(defs).flows,
    }
}

/// The difference of `actual` from `reference`, sorted: `+name`/`-name` per
/// extra or missing node, `processes±n`, `flows±n`.
fn compare(actual: &Shape, reference: &Shape) -> Vec<String> {
    let mut diff = Vec::new();
    let names: std::collections::BTreeSet<_> = actual
        .elements
        .keys()
        .chain(reference.elements.keys())
        .collect();
    for name in names {
        let a = actual.elements.get(name).copied().unwrap_or(0);
        let r = reference.elements.get(name).copied().unwrap_or(0);
        for _ in r..a {
            diff.push(format!("+{name}"));
        }
        for _ in a..r {
            diff.push(format!("-{name}"));
        }
    }
    if actual.processes != reference.processes {
        let d = actual.processes as i64 - reference.processes as i64;
        diff.push(format!("processes{d:+}"));
    }
    if actual.flows != reference.flows {
        diff.push(format!(
            "flows{:+}",
            actual.flows as i64 - reference.flows as i64
        ));
    }
    diff.sort();
    diff
}

/// The reference model of a test case, imported from tests/miwg.
fn reference(case: &str) -> Definitions {
    let xml = read(&tests_dir().join("miwg").join(format!("{case}.bpmn")));
    import(&xml).unwrap_or_else(|e| panic!("reference {case}: {e}"))
}

#[test]
fn the_tool_files_come_from_several_tools_and_each_has_a_reference_model() {
    let files = tool_files();
    assert!(files.len() >= 9, "{} files", files.len());
    let tools: std::collections::BTreeSet<_> = files
        .iter()
        .map(|(rel, _)| rel.split('/').next().unwrap_or(""))
        .collect();
    assert!(tools.len() >= 5, "tools: {tools:?}");
    for (rel, case) in &files {
        let path = tests_dir().join("miwg").join(format!("{case}.bpmn"));
        assert!(path.exists(), "{rel}: no reference model {case}");
    }
    for (listed, _) in REFUSED {
        assert!(
            files.iter().any(|(rel, _)| rel == listed),
            "{listed} is not there"
        );
    }
    for (listed, ..) in SHAPE_EXCEPTIONS {
        assert!(
            files.iter().any(|(rel, _)| rel == listed),
            "{listed} is not there"
        );
    }
}

#[test]
fn every_tool_file_imports_or_is_refused_as_listed() {
    for (rel, _) in tool_files() {
        let refused = REFUSED.iter().find(|(listed, _)| *listed == rel);
        match (import_tool_file(&rel), refused) {
            (Ok(_), None) => {}
            (Err(e), Some((_, why))) => {
                assert!(
                    !e.to_string().is_empty(),
                    "{rel}: refused ({why}) without a message"
                );
            }
            (Ok(_), Some((_, why))) => panic!("{rel}: listed as refused ({why}) but imports"),
            (Err(e), None) => panic!("{rel}: {e}"),
        }
    }
}

#[test]
fn every_tool_file_round_trips_to_the_same_model_and_exports_stably() {
    for (rel, _) in tool_files() {
        let Ok(first) = import_tool_file(&rel) else {
            continue;
        };
        let exported = export(&first);
        let second =
            import(exported.as_bytes()).unwrap_or_else(|e| panic!("{rel}: {e}\n{exported}"));
        assert_eq!(
            second, first,
            "{rel}: import(export(import(x))) == import(x)"
        );
        assert_eq!(export(&second), exported, "{rel}: export is stable");
        assert_eq!(export(&first), exported, "{rel}: export is deterministic");
    }
}

#[test]
fn validation_of_every_tool_file_runs() {
    for (rel, _) in tool_files() {
        let Ok(defs) = import_tool_file(&rel) else {
            continue;
        };
        let report = validate(&defs);
        assert_eq!(report.valid, report.errors.is_empty(), "{rel}: {report:?}");
    }
}

#[test]
fn every_tool_file_has_the_shape_of_its_reference_model_or_a_listed_difference() {
    let mut failures = Vec::new();
    for (rel, case) in tool_files() {
        let Ok(defs) = import_tool_file(&rel) else {
            continue;
        };
        let diff = compare(&shape(&defs), &shape(&reference(&case)));
        let expected: Vec<String> = SHAPE_EXCEPTIONS
            .iter()
            .find(|(listed, ..)| *listed == rel)
            .map(|(_, d, _)| d.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default();
        if diff != expected {
            failures.push(format!("{rel}: difference {diff:?}, listed {expected:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// MID Innovator writes event definitions once at the root and names them
/// from each event with `eventDefinitionRef`: the events get those
/// definitions (the "7 days" catch is a timer, "Invoice received" a message
/// start), and export writes the references back rather than copies.
#[test]
fn events_naming_root_definitions_get_them_and_export_keeps_the_references() {
    let rel = "MID Innovator 15.1.1.11026/C.1.0-export.bpmn";
    let defs = import_tool_file(rel).expect("imports");
    let (_, at) = defs
        .find_node("sid-0E349B8B-14A7-4565-988A-38F3A9B624D2")
        .expect("the 7 days catch");
    assert!(
        matches!(at.node.kind.trigger(), Some(Trigger::Timer { .. })),
        "{:?}",
        at.node.kind
    );
    let (_, at) = defs
        .find_node("sid-36EA43D1-0FE6-4197-AC57-7A43785B784B")
        .expect("the invoice start");
    assert!(
        matches!(at.node.kind.trigger(), Some(Trigger::Message { .. })),
        "{:?}",
        at.node.kind
    );
    let xml = export(&defs);
    let inline = xml.matches("EventDefinition ").count() + xml.matches("EventDefinition>").count();
    let source = String::from_utf8(read(&tests_dir().join("miwg-tools").join(rel))).expect("utf-8");
    let inline_before =
        source.matches("EventDefinition ").count() + source.matches("EventDefinition>").count();
    assert_eq!(inline, inline_before, "no definition was copied inline");
    assert_eq!(
        xml.matches("eventDefinitionRef>").count(),
        source.matches("eventDefinitionRef>").count()
    );
}
