//! Tests of multi-instance activities, and of whole models imported from
//! BPMN XML.

use serde_json::{Value, json};
use time::Duration;

use super::tests::{T0, begin, defs, has_incident, multi, start_ev, started, sub, task, vars};
use super::*;

// ---- multi-instance ----------------------------------------------------

fn inputs_of(e: &Effect) -> &Value {
    match e {
        Effect::StartWork { inputs, .. } => inputs,
        _ => panic!("{e:?}"),
    }
}

#[test]
fn parallel_multi_instance_collects_results_in_instance_order() {
    let d = defs(
        vec![
            start_ev("s"),
            multi(task("m"), false, Some("items"), None, None),
            task("after"),
        ],
        &["s->m", "m->after"],
    );
    let (mut inst, eff) = begin(&d, json!({ "items": ["x", "y", "z"] }));
    assert_eq!(started(&eff), vec!["m", "m", "m"]);
    assert_eq!(inputs_of(&eff[1])["item"], json!("y"));
    assert_eq!(inputs_of(&eff[1])["loopCounter"], json!(1));
    let ids: Vec<u64> = inst
        .tokens
        .iter()
        .filter(|t| t.instance.is_some())
        .map(|t| t.id)
        .collect();
    assert_eq!(ids.len(), 3);
    for (i, token) in [(2, ids[2]), (0, ids[0]), (1, ids[1])] {
        let eff = apply(
            &d,
            &mut inst,
            Command::Complete {
                token,
                output: json!({ "r": i }),
            },
            T0,
        )
        .unwrap();
        if i == 1 {
            assert_eq!(started(&eff), vec!["after"]);
        } else {
            assert!(started(&eff).is_empty());
        }
    }
    assert_eq!(
        inst.variables["m_results"],
        json!([{ "r": 0 }, { "r": 1 }, { "r": 2 }])
    );
    // As in Camunda, the process sees the last output written.
    assert_eq!(inst.variables["r"], json!(1));
    assert!(inst.scopes.is_empty());
}

#[test]
fn sequential_multi_instance_runs_one_at_a_time() {
    let d = defs(
        vec![
            start_ev("s"),
            multi(task("m"), true, None, Some("k + 1"), None),
            task("after"),
        ],
        &["s->m", "m->after"],
    );
    let (mut inst, eff) = begin(&d, json!({ "k": 2 }));
    assert_eq!(started(&eff), vec!["m"]);
    for i in 0..3u64 {
        let t = inst.tokens.iter().find(|t| t.instance.is_some()).unwrap();
        assert_eq!(t.instance, Some(i));
        let token = t.id;
        let eff = apply(
            &d,
            &mut inst,
            Command::Complete {
                token,
                output: json!(i),
            },
            T0,
        )
        .unwrap();
        let want: Vec<&str> = if i < 2 { vec!["m"] } else { vec!["after"] };
        assert_eq!(started(&eff), want);
    }
    assert_eq!(inst.variables["m_results"], json!([0, 1, 2]));
}

#[test]
fn a_completion_condition_ends_the_instances_early() {
    let d = defs(
        vec![
            start_ev("s"),
            multi(
                task("m"),
                false,
                None,
                Some("3"),
                Some("nrOfCompletedInstances >= 2 || veto"),
            ),
            task("after"),
        ],
        &["s->m", "m->after"],
    );
    let (mut inst, _) = begin(&d, json!({ "veto": false }));
    let ids: Vec<u64> = inst
        .tokens
        .iter()
        .filter(|t| t.instance.is_some())
        .map(|t| t.id)
        .collect();
    apply(
        &d,
        &mut inst,
        Command::Complete {
            token: ids[0],
            output: json!("a"),
        },
        T0,
    )
    .unwrap();
    let eff = apply(
        &d,
        &mut inst,
        Command::Complete {
            token: ids[2],
            output: json!("c"),
        },
        T0,
    )
    .unwrap();
    assert!(
        eff.contains(&Effect::CancelWork { token: ids[1] }),
        "{eff:?}"
    );
    assert_eq!(started(&eff), vec!["after"]);
    assert_eq!(inst.variables["m_results"], json!(["a", null, "c"]));
    // The output of the instance is read by the condition.
    let (mut inst, _) = begin(&d, json!({ "veto": false }));
    let first = inst
        .tokens
        .iter()
        .find(|t| t.instance.is_some())
        .unwrap()
        .id;
    let eff = apply(
        &d,
        &mut inst,
        Command::Complete {
            token: first,
            output: json!({ "veto": true }),
        },
        T0,
    )
    .unwrap();
    assert_eq!(started(&eff), vec!["after"]);
}

#[test]
fn multi_instance_subprocess_instances_keep_their_own_variables() {
    let body = sub("sp", vec![start_ev("is"), task("it")], &["is->it"]);
    let d = defs(
        vec![
            start_ev("s"),
            multi(body, false, Some("items"), None, None),
            task("after"),
        ],
        &["s->sp", "sp->after"],
    );
    let (mut inst, eff) = begin(&d, json!({ "items": [10, 20] }));
    assert_eq!(started(&eff), vec!["it", "it"]);
    assert_eq!(inputs_of(&eff[1])["item"], json!(20));
    let ids: Vec<u64> = inst
        .tokens
        .iter()
        .filter(|t| t.node == "it")
        .map(|t| t.id)
        .collect();
    apply(
        &d,
        &mut inst,
        Command::Complete {
            token: ids[1],
            output: json!({ "got": 2 }),
        },
        T0,
    )
    .unwrap();
    let eff = apply(
        &d,
        &mut inst,
        Command::Complete {
            token: ids[0],
            output: json!({ "got": 1 }),
        },
        T0,
    )
    .unwrap();
    assert_eq!(started(&eff), vec!["after"]);
    assert_eq!(
        inst.variables["sp_results"],
        json!([{ "got": 1 }, { "got": 2 }])
    );
    assert_eq!(inst.variables["got"], json!(1));
}

#[test]
fn an_empty_collection_completes_at_once_and_a_bad_one_is_an_incident() {
    let d = defs(
        vec![
            start_ev("s"),
            multi(task("m"), false, Some("items"), None, None),
            task("after"),
        ],
        &["s->m", "m->after"],
    );
    let (inst, eff) = begin(&d, json!({ "items": [] }));
    assert_eq!(started(&eff), vec!["after"]);
    assert_eq!(inst.variables["m_results"], json!([]));
    let (_, eff) = begin(&d, json!({ "items": 3 }));
    assert!(has_incident(&eff));
}

// ---- imported models ---------------------------------------------------

fn timers(effects: &[Effect]) -> Vec<(u64, time::OffsetDateTime)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::ScheduleTimer { token, due } => Some((*token, *due)),
            _ => None,
        })
        .collect()
}

/// The Camunda Modeler fixture: a sequential multi-instance user task with
/// a reminder timer, an exclusive gateway on `${approved}`, a JavaScript
/// script task and an error end event.
fn camunda() -> Definitions {
    crate::import(include_bytes!("../../tests/fixtures/camunda.bpmn")).expect("imports")
}

#[test]
fn the_camunda_fixture_runs_to_its_script_task() {
    let d = camunda();
    let v = vars(json!({ "approvers": ["ann", "bob"], "amount": 5 }));
    let (mut inst, eff) = start(&d, None, None, v, T0).unwrap();
    assert_eq!(started(&eff), vec!["Activity_approve"]);
    // The body arms the reminder, then the first instance is handed out.
    assert!(matches!(eff[0], Effect::ScheduleTimer { .. }));
    assert_eq!(inputs_of(&eff[1])["approver"], json!("ann"));
    assert!(
        matches!(&eff[1], Effect::StartWork { work: Work::Human { task_kind, .. }, .. } if task_kind == "user")
    );
    let (reminder, due) = timers(&eff)[0];
    assert_eq!(due, T0 + Duration::days(2));
    // The reminder does not interrupt; its signal goes out.
    let eff = apply(&d, &mut inst, Command::TimerDue { token: reminder }, due).unwrap();
    assert!(
        eff.iter()
            .any(|e| matches!(e, Effect::BroadcastSignal { name, .. } if name == "reminder"))
    );
    assert!(started(&eff).is_empty());
    // One approval is enough (completion condition); bob is never asked.
    let eff = super::tests::complete(
        &d,
        &mut inst,
        "Activity_approve",
        json!({ "approved": true }),
    );
    assert_eq!(started(&eff), vec!["Activity_pay"]);
    assert_eq!(
        inst.variables["Activity_approve_results"],
        json!([{ "approved": true }, null])
    );
    // The JavaScript log script is refused, not run.
    let eff = super::tests::complete(&d, &mut inst, "Activity_pay", json!({}));
    assert!(has_incident(&eff));
    assert_eq!(inst.incidents()[0].1, "Activity_log");
    assert_eq!(inst.status, InstanceStatus::Failed);
}

#[test]
fn the_camunda_fixture_rejection_is_an_unhandled_error() {
    let d = camunda();
    let v = vars(json!({ "approvers": ["ann"], "amount": 5 }));
    let (mut inst, eff) = start(&d, None, None, v, T0).unwrap();
    let (reminder, _) = timers(&eff)[0];
    let eff = super::tests::complete(
        &d,
        &mut inst,
        "Activity_approve",
        json!({ "approved": false }),
    );
    // Leaving the activity disarms its reminder.
    assert_eq!(eff[0], Effect::CancelTimer { token: reminder });
    assert!(has_incident(&eff));
    let (_, node, message) = inst.incidents()[0];
    assert_eq!(node, "Event_rejected");
    assert!(message.contains("REJECTED"), "{message}");
}
