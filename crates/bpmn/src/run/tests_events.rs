//! Tests of events: timers, messages, signals, links, terminate and error
//! ends, boundary events, event gateways and event subprocesses.

use serde_json::json;
use time::Duration;

use super::tests::{
    T0, at, begin, defs, end_ev, gw, has_incident, node, start_ev, started, sub, task,
};
use super::*;
use crate::model::{
    Attribute, ErrorDef, GatewayKind, MessageDef, Node, NodeKind, Preserved, TaskKind, TimerDef,
    Trigger,
};

fn timer(duration: &str) -> Trigger {
    Trigger::Timer {
        id: None,
        timer: TimerDef {
            duration: Some(duration.into()),
            ..TimerDef::default()
        },
        extras: Preserved::default(),
    }
}

#[test]
fn a_timer_written_as_an_expression_is_evaluated() {
    let d = defs(
        vec![start_ev("s"), catch("w", timer("${delay}")), task("t")],
        &["s->w", "w->t"],
    );
    let (_, eff) = begin(&d, json!({ "delay": "PT2H" }));
    assert_eq!(timers(&eff)[0].1, T0 + Duration::hours(2));
    let (_, eff) = begin(&d, json!({ "delay": 7 }));
    assert!(has_incident(&eff));
}

fn cycle(text: &str) -> Trigger {
    Trigger::Timer {
        id: None,
        timer: TimerDef {
            cycle: Some(text.into()),
            ..TimerDef::default()
        },
        extras: Preserved::default(),
    }
}

fn message(r: &str) -> Trigger {
    Trigger::Message {
        id: None,
        message_ref: Some(r.into()),
        extras: Preserved::default(),
    }
}

fn signal(r: &str) -> Trigger {
    Trigger::Signal {
        id: None,
        signal_ref: Some(r.into()),
        extras: Preserved::default(),
    }
}

fn error(r: Option<&str>) -> Trigger {
    Trigger::Error {
        id: None,
        error_ref: r.map(str::to_owned),
        extras: Preserved::default(),
    }
}

fn catch(id: &str, trigger: Trigger) -> Node {
    node(id, NodeKind::IntermediateCatch { trigger })
}

fn throw(id: &str, result: Trigger) -> Node {
    node(id, NodeKind::IntermediateThrow { result })
}

fn end_with(id: &str, result: Trigger) -> Node {
    node(id, NodeKind::EndEvent { result })
}

fn boundary(id: &str, on: &str, cancel_activity: bool, trigger: Trigger) -> Node {
    node(
        id,
        NodeKind::Boundary {
            attached_to: on.into(),
            cancel_activity,
            trigger,
        },
    )
}

fn timers(effects: &[Effect]) -> Vec<(u64, time::OffsetDateTime)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::ScheduleTimer { token, due } => Some((*token, *due)),
            _ => None,
        })
        .collect()
}

// ---- catching ----------------------------------------------------------

#[test]
fn a_timer_catch_waits_from_now() {
    let d = defs(
        vec![start_ev("s"), catch("w", timer("PT5M")), task("t")],
        &["s->w", "w->t"],
    );
    let (mut inst, eff) = begin(&d, json!({}));
    let token = at(&inst, "w");
    assert_eq!(
        eff,
        vec![Effect::ScheduleTimer {
            token,
            due: T0 + Duration::minutes(5)
        }]
    );
    // The state, timers included, is stored as JSON.
    let text = serde_json::to_string(&inst).unwrap();
    assert!(text.contains("2025-01-01T00:05:00Z"), "{text}");
    assert_eq!(serde_json::from_str::<Instance>(&text).unwrap(), inst);
    let before = inst.clone();
    let early = apply(
        &d,
        &mut inst,
        Command::TimerDue { token },
        T0 + Duration::minutes(4),
    );
    assert!(matches!(early, Err(RunError::NotDue { .. })));
    assert_eq!(inst, before);
    let eff = apply(
        &d,
        &mut inst,
        Command::TimerDue { token },
        T0 + Duration::minutes(5),
    )
    .unwrap();
    assert_eq!(started(&eff), vec!["t"]);
}

#[test]
fn timer_definitions_date_cycle_and_empty() {
    let date = Trigger::Timer {
        id: None,
        timer: TimerDef {
            date: Some("2025-02-01T00:00:00Z".into()),
            ..TimerDef::default()
        },
        extras: Preserved::default(),
    };
    let d = defs(vec![start_ev("s"), catch("w", date)], &["s->w"]);
    let (_, eff) = begin(&d, json!({}));
    assert_eq!(
        timers(&eff)[0].1,
        time::macros::datetime!(2025-02-01 00:00 UTC)
    );
    let d = defs(
        vec![start_ev("s"), catch("w", cycle("R3/PT10S"))],
        &["s->w"],
    );
    let (_, eff) = begin(&d, json!({}));
    assert_eq!(timers(&eff)[0].1, T0 + Duration::seconds(10));
    let empty = Trigger::Timer {
        id: None,
        timer: TimerDef::default(),
        extras: Preserved::default(),
    };
    let d = defs(vec![start_ev("s"), catch("w", empty)], &["s->w"]);
    let (inst, eff) = begin(&d, json!({}));
    assert!(has_incident(&eff));
    assert_eq!(inst.status, InstanceStatus::Failed);
}

fn with_messages(mut d: Definitions) -> Definitions {
    d.messages.push(MessageDef {
        id: "M".into(),
        name: Some("order-paid".into()),
        extras: Preserved::default(),
    });
    d
}

#[test]
fn a_message_catch_correlates() {
    let mut c = catch("w", message("M"));
    c.extras.attributes.push(Attribute::qualified(
        "urn:z",
        "z",
        "correlationKey",
        "= orderId",
    ));
    let d = with_messages(defs(vec![start_ev("s"), c, task("t")], &["s->w", "w->t"]));
    let (mut inst, eff) = begin(&d, json!({ "orderId": 42 }));
    let token = at(&inst, "w");
    assert_eq!(
        eff,
        vec![Effect::Subscribe {
            token,
            message: "order-paid".into(),
            correlation: Some("42".into())
        }]
    );
    let wrong = Command::Message {
        name: "order-paid".into(),
        correlation: Some("41".into()),
        payload: json!({}),
    };
    assert!(matches!(
        apply(&d, &mut inst, wrong, T0),
        Err(RunError::NoSubscriber(_))
    ));
    let right = Command::Message {
        name: "order-paid".into(),
        correlation: Some("42".into()),
        payload: json!({ "amount": 10 }),
    };
    let eff = apply(&d, &mut inst, right, T0).unwrap();
    assert_eq!(started(&eff), vec!["t"]);
    assert_eq!(inst.variables["amount"], json!(10));
}

#[test]
fn a_receive_task_waits_for_its_message() {
    let recv = node(
        "r",
        NodeKind::Task {
            task: TaskKind::Receive {
                message_ref: Some("M".into()),
            },
            loop_: None,
        },
    );
    let d = with_messages(defs(
        vec![start_ev("s"), recv, task("t")],
        &["s->r", "r->t"],
    ));
    let (mut inst, eff) = begin(&d, json!({}));
    assert!(
        matches!(&eff[0], Effect::Subscribe { message, correlation: None, .. } if message == "order-paid")
    );
    let eff = apply(
        &d,
        &mut inst,
        Command::Message {
            name: "order-paid".into(),
            correlation: None,
            payload: json!("paid"),
        },
        T0,
    )
    .unwrap();
    assert_eq!(started(&eff), vec!["t"]);
    assert_eq!(inst.variables["r"], json!("paid"));
}

#[test]
fn signals_reach_this_instance_at_once_and_others_by_broadcast() {
    let d = defs(
        vec![
            start_ev("s"),
            gw("f", GatewayKind::Parallel),
            catch("c", signal("go")),
            task("t"),
            throw("th", signal("go")),
            end_ev("e"),
        ],
        &["s->f", "f->c", "f->th", "c->t", "th->e"],
    );
    let (inst, eff) = begin(&d, json!({}));
    assert!(
        eff.iter()
            .any(|e| matches!(e, Effect::SubscribeSignal { signal, .. } if signal == "go"))
    );
    assert!(
        eff.iter()
            .any(|e| matches!(e, Effect::BroadcastSignal { name, .. } if name == "go"))
    );
    assert_eq!(started(&eff), vec!["t"]);
    assert_eq!(inst.tokens.len(), 1);
    // From outside: every listener gets it; nobody listening is no error.
    let d = defs(
        vec![start_ev("s"), catch("c", signal("go")), task("t")],
        &["s->c", "c->t"],
    );
    let (mut inst, _) = begin(&d, json!({}));
    let cmd = |name: &str| Command::Signal {
        name: name.into(),
        payload: json!({ "why": "x" }),
    };
    assert_eq!(apply(&d, &mut inst, cmd("other"), T0), Ok(vec![]));
    let eff = apply(&d, &mut inst, cmd("go"), T0).unwrap();
    assert_eq!(started(&eff), vec!["t"]);
    assert_eq!(inst.variables["why"], json!("x"));
}

#[test]
fn a_link_throw_jumps_to_its_catch() {
    let link = |name: &str| Trigger::Link {
        id: None,
        name: Some(name.into()),
        extras: Preserved::default(),
    };
    let d = defs(
        vec![
            start_ev("s"),
            throw("lt", link("L")),
            catch("lc", link("L")),
            task("t"),
        ],
        &["s->lt", "lc->t"],
    );
    let (inst, eff) = begin(&d, json!({}));
    assert_eq!(started(&eff), vec!["t"]);
    assert_eq!(inst.completed_nodes(), vec!["s", "lt", "lc"]);
}

// ---- ends --------------------------------------------------------------

#[test]
fn a_terminate_end_cancels_all_work() {
    let term = Trigger::Terminate {
        id: None,
        extras: Preserved::default(),
    };
    let d = defs(
        vec![
            start_ev("s"),
            gw("f", GatewayKind::Parallel),
            task("a"),
            boundary("bt", "a", true, timer("PT1H")),
            task("b"),
            end_with("x", term.clone()),
        ],
        &["s->f", "f->a", "f->b", "b->x"],
    );
    let (mut inst, eff) = begin(&d, json!({}));
    let a = at(&inst, "a");
    let bt = timers(&eff)[0].0;
    let eff = super::tests::complete(&d, &mut inst, "b", json!({}));
    assert_eq!(
        eff,
        vec![
            Effect::CancelWork { token: a },
            Effect::CancelTimer { token: bt },
            Effect::Completed
        ]
    );
    assert_eq!(inst.status, InstanceStatus::Completed);
    assert!(inst.tokens.is_empty());
    // In a subprocess it ends the subprocess only.
    let inner = sub(
        "sp",
        vec![
            start_ev("is"),
            gw("f", GatewayKind::Parallel),
            task("a"),
            end_with("x", term),
        ],
        &["is->f", "f->a", "f->x"],
    );
    let d = defs(
        vec![start_ev("s"), inner, task("after")],
        &["s->sp", "sp->after"],
    );
    let (_, eff) = begin(&d, json!({}));
    assert_eq!(started(&eff), vec!["a", "after"]);
    assert!(eff.iter().any(|e| matches!(e, Effect::CancelWork { .. })));
}

#[test]
fn a_message_end_sends() {
    let d = with_messages(defs(
        vec![start_ev("s"), end_with("e", message("M"))],
        &["s->e"],
    ));
    let (inst, eff) = begin(&d, json!({ "k": 1 }));
    assert_eq!(
        eff,
        vec![
            Effect::SendMessage {
                token: 2,
                from_node: "e".into(),
                message_ref: Some("M".into()),
                message: Some("order-paid".into()),
                payload: json!({ "k": 1 })
            },
            Effect::Completed
        ]
    );
    assert_eq!(inst.status, InstanceStatus::Completed);
}

fn with_errors(mut d: Definitions) -> Definitions {
    for (id, code) in [("E1", "late"), ("E2", "broken")] {
        d.errors.push(ErrorDef {
            id: id.into(),
            name: None,
            error_code: Some(code.into()),
            extras: Preserved::default(),
        });
    }
    d
}

#[test]
fn an_error_end_is_caught_by_the_subprocess_boundary() {
    let inner = sub(
        "sp",
        vec![
            start_ev("is"),
            task("it"),
            end_with("ee", error(Some("E1"))),
        ],
        &["is->it", "it->ee"],
    );
    let mut b = boundary("be", "sp", true, error(Some("E1")));
    b.extras.attributes.push(Attribute::qualified(
        "urn:c",
        "camunda",
        "errorCodeVariable",
        "code",
    ));
    let d = with_errors(defs(
        vec![start_ev("s"), inner, b, task("handler"), task("after")],
        &["s->sp", "be->handler", "sp->after"],
    ));
    let (mut inst, _) = begin(&d, json!({}));
    let eff = super::tests::complete(&d, &mut inst, "it", json!({}));
    assert_eq!(started(&eff), vec!["handler"]);
    assert!(inst.scopes.is_empty());
    assert_eq!(inst.variables["code"], json!("late"));
    let steps: Vec<(&str, StepKind)> = inst
        .history
        .iter()
        .map(|s| (s.element.as_str(), s.what))
        .collect();
    assert!(steps.contains(&("sp", StepKind::Cancelled)));
    assert!(steps.contains(&("be", StepKind::Completed)));
    // Another code is not caught: an incident.
    let inner = sub(
        "sp",
        vec![start_ev("is"), end_with("ee", error(Some("E2")))],
        &["is->ee"],
    );
    let d = with_errors(defs(
        vec![
            start_ev("s"),
            inner,
            boundary("be", "sp", true, error(Some("E1"))),
            task("h"),
        ],
        &["s->sp", "be->h"],
    ));
    let (inst, eff) = begin(&d, json!({}));
    assert!(has_incident(&eff));
    assert_eq!(inst.status, InstanceStatus::Failed);
}

#[test]
fn a_failed_task_throws_to_its_boundaries() {
    let d = with_errors(defs(
        vec![
            start_ev("s"),
            task("t"),
            boundary("b1", "t", true, error(Some("E2"))),
            boundary("ball", "t", true, error(None)),
            task("fix"),
            task("other"),
        ],
        &["s->t", "b1->fix", "ball->other"],
    ));
    for (code, want) in [
        (Some("broken"), "fix"),
        (Some("zzz"), "other"),
        (None, "other"),
    ] {
        let (mut inst, _) = begin(&d, json!({}));
        let cmd = Command::Fail {
            token: at(&inst, "t"),
            error_code: code.map(str::to_owned),
            message: "no".into(),
        };
        let eff = apply(&d, &mut inst, cmd, T0).unwrap();
        assert_eq!(started(&eff), vec![want], "{code:?}");
    }
    // No boundary: an incident; retrying hands the work out again.
    let d = defs(vec![start_ev("s"), task("t")], &["s->t"]);
    let (mut inst, _) = begin(&d, json!({}));
    let token = at(&inst, "t");
    let eff = apply(
        &d,
        &mut inst,
        Command::Fail {
            token,
            error_code: None,
            message: "boom".into(),
        },
        T0,
    )
    .unwrap();
    assert!(has_incident(&eff));
    assert_eq!(inst.status, InstanceStatus::Failed);
    let eff = apply(&d, &mut inst, Command::Retry { token }, T0).unwrap();
    assert_eq!(started(&eff), vec!["t"]);
    assert_ne!(at(&inst, "t"), token);
}

// ---- boundaries --------------------------------------------------------

#[test]
fn an_interrupting_boundary_timer_cancels_the_task() {
    let d = defs(
        vec![
            start_ev("s"),
            task("a"),
            boundary("bt", "a", true, timer("PT1H")),
            task("late"),
            task("next"),
        ],
        &["s->a", "bt->late", "a->next"],
    );
    let (mut inst, eff) = begin(&d, json!({}));
    let a = at(&inst, "a");
    let (bt, due) = timers(&eff)[0];
    assert_eq!(due, T0 + Duration::hours(1));
    let mut fired = inst.clone();
    let eff = apply(&d, &mut fired, Command::TimerDue { token: bt }, due).unwrap();
    assert_eq!(eff[0], Effect::CancelWork { token: a });
    assert_eq!(started(&eff), vec!["late"]);
    assert_eq!(fired.tokens.len(), 1);
    // Completing first disarms the timer.
    let eff = super::tests::complete(&d, &mut inst, "a", json!({}));
    assert_eq!(eff[0], Effect::CancelTimer { token: bt });
    assert_eq!(started(&eff), vec!["next"]);
}

#[test]
fn a_non_interrupting_timer_cycle_fires_and_rearms() {
    let d = defs(
        vec![
            start_ev("s"),
            task("a"),
            boundary("bt", "a", false, cycle("R2/PT10M")),
            task("remind"),
            task("next"),
        ],
        &["s->a", "bt->remind", "a->next"],
    );
    let (mut inst, eff) = begin(&d, json!({}));
    let (bt, due) = timers(&eff)[0];
    let eff = apply(&d, &mut inst, Command::TimerDue { token: bt }, due).unwrap();
    assert_eq!(started(&eff), vec!["remind"]);
    assert_eq!(timers(&eff), vec![(bt, due + Duration::minutes(10))]);
    let eff = apply(
        &d,
        &mut inst,
        Command::TimerDue { token: bt },
        due + Duration::minutes(10),
    )
    .unwrap();
    assert_eq!(started(&eff), vec!["remind"]);
    assert!(timers(&eff).is_empty(), "R2: no third time");
    assert!(inst.tokens.iter().all(|t| t.attached.is_none()));
    let eff = super::tests::complete(&d, &mut inst, "a", json!({}));
    assert_eq!(started(&eff), vec!["next"]);
}

#[test]
fn a_non_interrupting_message_boundary_keeps_listening() {
    let d = with_messages(defs(
        vec![
            start_ev("s"),
            task("a"),
            boundary("bm", "a", false, message("M")),
            task("note"),
        ],
        &["s->a", "bm->note"],
    ));
    let (mut inst, _) = begin(&d, json!({}));
    let msg = Command::Message {
        name: "order-paid".into(),
        correlation: None,
        payload: json!({}),
    };
    for _ in 0..2 {
        let eff = apply(&d, &mut inst, msg.clone(), T0).unwrap();
        assert_eq!(started(&eff), vec!["note"]);
        assert!(eff.iter().any(|e| matches!(e, Effect::Subscribe { .. })));
    }
    let a = at(&inst, "a");
    let eff = super::tests::complete(&d, &mut inst, "a", json!({}));
    assert!(
        eff.iter().any(|e| matches!(e, Effect::Unsubscribe { .. })),
        "{eff:?}"
    );
    assert!(
        inst.tokens
            .iter()
            .all(|t| t.id != a && t.attached.is_none())
    );
}

#[test]
fn a_boundary_on_a_subprocess_cancels_its_inside() {
    let inner = sub("sp", vec![start_ev("is"), task("it")], &["is->it"]);
    let d = defs(
        vec![
            start_ev("s"),
            inner,
            boundary("bt", "sp", true, timer("PT1M")),
            task("late"),
        ],
        &["s->sp", "bt->late"],
    );
    let (mut inst, eff) = begin(&d, json!({}));
    let it = at(&inst, "it");
    let (bt, due) = timers(&eff)[0];
    let eff = apply(&d, &mut inst, Command::TimerDue { token: bt }, due).unwrap();
    assert!(eff.contains(&Effect::CancelWork { token: it }));
    assert_eq!(started(&eff), vec!["late"]);
    assert!(inst.scopes.is_empty());
}

// ---- event gateway -----------------------------------------------------

fn event_gateway() -> Definitions {
    with_messages(defs(
        vec![
            start_ev("s"),
            gw("g", GatewayKind::EventBased),
            catch("m", message("M")),
            catch("w", timer("PT1H")),
            task("paid"),
            task("late"),
        ],
        &["s->g", "g->m", "g->w", "m->paid", "w->late"],
    ))
}

#[test]
fn an_event_gateway_takes_the_first_event() {
    let d = event_gateway();
    let (inst, eff) = begin(&d, json!({}));
    assert!(matches!(eff[0], Effect::Subscribe { .. }));
    let (w, due) = timers(&eff)[0];
    // The message wins: the timer goes.
    let mut by_message = inst.clone();
    let msg = Command::Message {
        name: "order-paid".into(),
        correlation: None,
        payload: json!({}),
    };
    let eff = apply(&d, &mut by_message, msg, T0).unwrap();
    assert_eq!(eff[0], Effect::CancelTimer { token: w });
    assert_eq!(started(&eff), vec!["paid"]);
    assert_eq!(by_message.tokens.len(), 1);
    assert_eq!(by_message.completed_nodes(), vec!["s", "g", "m"]);
    // The timer wins: the subscription goes.
    let mut by_timer = inst;
    let eff = apply(&d, &mut by_timer, Command::TimerDue { token: w }, due).unwrap();
    assert!(matches!(eff[0], Effect::Unsubscribe { .. }));
    assert_eq!(started(&eff), vec!["late"]);
    assert_eq!(by_timer.tokens.len(), 1);
}

#[test]
fn an_event_gateway_before_a_task_is_an_incident() {
    let d = defs(
        vec![start_ev("s"), gw("g", GatewayKind::EventBased), task("t")],
        &["s->g", "g->t"],
    );
    let (_, eff) = begin(&d, json!({}));
    assert!(has_incident(&eff));
}

// ---- event subprocesses ------------------------------------------------

fn event_sub(id: &str, start: Node, rest: Vec<Node>, flows: &[&str]) -> Node {
    let mut n = sub(id, [vec![start], rest].concat(), flows);
    if let NodeKind::SubProcess {
        triggered_by_event, ..
    } = &mut n.kind
    {
        *triggered_by_event = true;
    }
    n
}

fn start_on(id: &str, trigger: Trigger, interrupting: bool) -> Node {
    node(
        id,
        NodeKind::StartEvent {
            trigger,
            interrupting,
        },
    )
}

#[test]
fn an_error_event_subprocess_catches_a_failure() {
    let esp = event_sub(
        "esp",
        start_on("es", error(None), true),
        vec![task("cleanup")],
        &["es->cleanup"],
    );
    let d = defs(vec![start_ev("s"), task("t"), esp], &["s->t"]);
    let (mut inst, _) = begin(&d, json!({}));
    let token = at(&inst, "t");
    let eff = apply(
        &d,
        &mut inst,
        Command::Fail {
            token,
            error_code: Some("x".into()),
            message: "no".into(),
        },
        T0,
    )
    .unwrap();
    assert_eq!(started(&eff), vec!["cleanup"]);
    let eff = super::tests::complete(&d, &mut inst, "cleanup", json!({}));
    assert_eq!(eff, vec![Effect::Completed]);
}

#[test]
fn a_non_interrupting_message_event_subprocess_runs_alongside() {
    let esp = event_sub(
        "esp",
        start_on("es", message("M"), false),
        vec![task("extra")],
        &["es->extra"],
    );
    let d = with_messages(defs(vec![start_ev("s"), task("t"), esp], &["s->t"]));
    let (mut inst, eff) = begin(&d, json!({}));
    assert!(matches!(eff[0], Effect::Subscribe { .. }));
    let msg = Command::Message {
        name: "order-paid".into(),
        correlation: None,
        payload: json!({ "m": 1 }),
    };
    let eff = apply(&d, &mut inst, msg, T0).unwrap();
    assert_eq!(started(&eff), vec!["extra"]);
    assert!(
        eff.iter().any(|e| matches!(e, Effect::Subscribe { .. })),
        "listens again"
    );
    super::tests::complete(&d, &mut inst, "t", json!({}));
    assert_eq!(
        inst.status,
        InstanceStatus::Running,
        "waits for the event subprocess"
    );
    let eff = super::tests::complete(&d, &mut inst, "extra", json!({}));
    assert!(eff.iter().any(|e| matches!(e, Effect::Unsubscribe { .. })));
    assert_eq!(eff.last(), Some(&Effect::Completed));
    assert_eq!(inst.variables["m"], json!(1));
}

#[test]
fn an_interrupting_timer_event_subprocess_replaces_the_flow() {
    let esp = event_sub(
        "esp",
        start_on("es", timer("PT1M"), true),
        vec![task("timeout")],
        &["es->timeout"],
    );
    let d = defs(vec![start_ev("s"), task("t"), esp], &["s->t"]);
    let (mut inst, eff) = begin(&d, json!({}));
    let t = at(&inst, "t");
    let (es, due) = timers(&eff)[0];
    let eff = apply(&d, &mut inst, Command::TimerDue { token: es }, due).unwrap();
    assert_eq!(eff[0], Effect::CancelWork { token: t });
    assert_eq!(started(&eff), vec!["timeout"]);
}

#[test]
fn an_error_inside_an_error_handler_is_not_caught_by_itself() {
    let esp = event_sub(
        "esp",
        start_on("es", error(None), true),
        vec![end_with("again", error(None))],
        &["es->again"],
    );
    let d = defs(vec![start_ev("s"), task("t"), esp], &["s->t"]);
    let (mut inst, _) = begin(&d, json!({}));
    let token = at(&inst, "t");
    let fail = Command::Fail {
        token,
        error_code: None,
        message: "no".into(),
    };
    let eff = apply(&d, &mut inst, fail, T0).unwrap();
    assert!(has_incident(&eff));
    assert_eq!(inst.incidents()[0].1, "again");
    assert_eq!(inst.status, InstanceStatus::Failed);
}
