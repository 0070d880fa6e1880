//! Tests of the runner: a tiny builder, gateways, activities, subprocesses,
//! multi-instance, scripts, errors that change nothing, random DAGs.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::macros::datetime;

use super::*;
use crate::model::{
    Attribute, Definitions, GatewayKind, Lane, LaneSet, Loop, Node, NodeKind, Preserved, Process,
    SequenceFlow, TaskKind, Trigger,
};

pub(super) const T0: OffsetDateTime = datetime!(2025-01-01 00:00 UTC);

// ---- builder -----------------------------------------------------------

pub(super) fn node(id: &str, kind: NodeKind) -> Node {
    Node::new(id, kind)
}

pub(super) fn start_ev(id: &str) -> Node {
    node(
        id,
        NodeKind::StartEvent {
            trigger: Trigger::None,
            interrupting: true,
        },
    )
}

pub(super) fn end_ev(id: &str) -> Node {
    node(
        id,
        NodeKind::EndEvent {
            result: Trigger::None,
        },
    )
}

pub(super) fn task(id: &str) -> Node {
    node(
        id,
        NodeKind::Task {
            task: TaskKind::Service,
            loop_: None,
        },
    )
}

pub(super) fn user(id: &str) -> Node {
    node(
        id,
        NodeKind::Task {
            task: TaskKind::User,
            loop_: None,
        },
    )
}

pub(super) fn gw(id: &str, gateway: GatewayKind) -> Node {
    node(id, NodeKind::Gateway { gateway })
}

pub(super) fn sub(id: &str, nodes: Vec<Node>, flows: &[&str]) -> Node {
    node(
        id,
        NodeKind::SubProcess {
            triggered_by_event: false,
            loop_: None,
            lane_sets: Vec::new(),
            nodes,
            flows: flows_of(flows),
            data: Vec::new(),
            artifacts: Vec::new(),
        },
    )
}

/// A multi-instance version of an activity node.
pub(super) fn multi(
    mut n: Node,
    sequential: bool,
    collection: Option<&str>,
    cardinality: Option<&str>,
    completion: Option<&str>,
) -> Node {
    let l = Loop::MultiInstance {
        id: None,
        sequential,
        collection: collection.map(str::to_owned),
        element_variable: collection.map(|_| "item".to_owned()),
        loop_data_input_ref: None,
        cardinality: cardinality.map(str::to_owned),
        cardinality_attributes: Vec::new(),
        completion_condition: completion.map(str::to_owned),
        completion_condition_attributes: Vec::new(),
        extras: Preserved::default(),
    };
    match &mut n.kind {
        NodeKind::Task { loop_, .. }
        | NodeKind::SubProcess { loop_, .. }
        | NodeKind::CallActivity { loop_, .. } => *loop_ = Some(l),
        _ => panic!("not an activity"),
    }
    n
}

/// Flows written `a->b`, `a->b: condition`; the id is `a_b`.
pub(super) fn flows_of(specs: &[&str]) -> Vec<SequenceFlow> {
    specs
        .iter()
        .map(|spec| {
            let (path, cond) = match spec.split_once(':') {
                Some((p, c)) => (p, Some(c.trim().to_owned())),
                None => (*spec, None),
            };
            let (s, t) = path.split_once("->").expect("a->b");
            let (s, t) = (s.trim(), t.trim());
            SequenceFlow {
                id: format!("{s}_{t}"),
                name: None,
                source: s.to_owned(),
                target: t.to_owned(),
                condition: cond,
                condition_attributes: Vec::new(),
                documentation: None,
                extras: Preserved::default(),
            }
        })
        .collect()
}

pub(super) fn defs(nodes: Vec<Node>, flows: &[&str]) -> Definitions {
    let mut p = Process::new("p");
    p.nodes = nodes;
    p.flows = flows_of(flows);
    Definitions {
        processes: vec![p],
        ..Definitions::default()
    }
}

pub(super) fn with_default(mut n: Node, flow: &str) -> Node {
    n.default_flow = Some(flow.to_owned());
    n
}

pub(super) fn vars(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

pub(super) fn begin(d: &Definitions, v: Value) -> (Instance, Vec<Effect>) {
    start(d, None, None, vars(v), T0).expect("starts")
}

/// The token at `node` (not a listener), one waiting for outside input
/// first (an instance rather than its multi-instance body).
pub(super) fn at(inst: &Instance, node: &str) -> u64 {
    let here = || {
        inst.tokens
            .iter()
            .filter(|t| t.node == node && t.attached.is_none())
    };
    here()
        .find(|t| t.wait.is_active())
        .or_else(|| here().next())
        .unwrap_or_else(|| panic!("no token at {node}: {:?}", inst.tokens))
        .id
}

pub(super) fn complete(
    d: &Definitions,
    inst: &mut Instance,
    node: &str,
    output: Value,
) -> Vec<Effect> {
    let token = at(inst, node);
    apply(d, inst, Command::Complete { token, output }, T0).expect("completes")
}

pub(super) fn started(effects: &[Effect]) -> Vec<&str> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::StartWork { node, .. } => Some(node.as_str()),
            _ => None,
        })
        .collect()
}

pub(super) fn has_incident(effects: &[Effect]) -> bool {
    effects.iter().any(|e| matches!(e, Effect::Incident { .. }))
}

// ---- gateways ----------------------------------------------------------

fn exclusive() -> Definitions {
    defs(
        vec![
            start_ev("s"),
            with_default(gw("x", GatewayKind::Exclusive), "x_c"),
            task("a"),
            task("b"),
            task("c"),
            end_ev("e"),
        ],
        &[
            "s->x",
            "x->a: n > 5",
            "x->b: n > 0",
            "x->c",
            "a->e",
            "b->e",
            "c->e",
        ],
    )
}

#[test]
fn exclusive_takes_the_first_true_condition_then_the_default() {
    let d = exclusive();
    for (n, want) in [(10, "a"), (1, "b"), (-1, "c")] {
        let (inst, eff) = begin(&d, json!({ "n": n }));
        assert_eq!(started(&eff), vec![want], "n = {n}");
        assert_eq!(inst.status, InstanceStatus::Running);
    }
}

#[test]
fn exclusive_without_match_is_an_incident_fixed_by_retry() {
    let d = defs(
        vec![
            start_ev("s"),
            gw("x", GatewayKind::Exclusive),
            task("a"),
            end_ev("e"),
        ],
        &["s->x", "x->a: n > 5", "a->e"],
    );
    let (mut inst, eff) = begin(&d, json!({ "n": 1 }));
    assert!(has_incident(&eff));
    assert_eq!(inst.status, InstanceStatus::Failed);
    let token = at(&inst, "x");
    assert_eq!(inst.incidents().len(), 1);
    // A failed instance takes fixes only.
    let before = inst.clone();
    let err = apply(
        &d,
        &mut inst,
        Command::Signal {
            name: "s".into(),
            payload: Value::Null,
        },
        T0,
    );
    assert_eq!(err, Err(RunError::NotRunning(InstanceStatus::Failed)));
    assert_eq!(inst, before);
    let variables = vars(json!({ "n": 7 }));
    apply(&d, &mut inst, Command::SetVariables { variables }, T0).unwrap();
    let eff = apply(&d, &mut inst, Command::Retry { token }, T0).unwrap();
    assert_eq!(started(&eff), vec!["a"]);
    assert_eq!(inst.status, InstanceStatus::Running);
}

#[test]
fn a_condition_that_does_not_evaluate_is_an_incident() {
    let d = exclusive();
    let (inst, eff) = begin(&d, json!({}));
    let Some(Effect::Incident { node, message, .. }) =
        eff.iter().find(|e| matches!(e, Effect::Incident { .. }))
    else {
        panic!("no incident: {eff:?}");
    };
    assert_eq!(node, "x");
    assert!(message.contains("unknown variable 'n'"), "{message}");
    assert_eq!(inst.status, InstanceStatus::Failed);
}

#[test]
fn parallel_forks_and_joins() {
    let d = defs(
        vec![
            start_ev("s"),
            gw("f", GatewayKind::Parallel),
            task("a"),
            task("b"),
            gw("j", GatewayKind::Parallel),
            task("c"),
            end_ev("e"),
        ],
        &["s->f", "f->a", "f->b", "a->j", "b->j", "j->c", "c->e"],
    );
    let (mut inst, eff) = begin(&d, json!({}));
    assert_eq!(started(&eff), vec!["a", "b"]);
    let eff = complete(&d, &mut inst, "b", json!({ "from_b": 1 }));
    assert!(started(&eff).is_empty());
    assert!(matches!(
        inst.tokens.iter().find(|t| t.node == "j").unwrap().wait,
        Wait::Join { .. }
    ));
    let eff = complete(&d, &mut inst, "a", json!({}));
    assert_eq!(started(&eff), vec!["c"]);
    assert_eq!(inst.tokens.len(), 1);
    let eff = complete(&d, &mut inst, "c", json!({}));
    assert_eq!(eff, vec![Effect::Completed]);
    assert_eq!(inst.status, InstanceStatus::Completed);
    assert!(inst.tokens.is_empty());
    assert_eq!(
        inst.completed_nodes(),
        vec!["s", "f", "b", "a", "j", "c", "e"]
    );
    assert_eq!(inst.variables["from_b"], json!(1));
}

#[test]
fn an_activity_with_plain_flows_forks_and_conditional_flows_choose() {
    let d = defs(
        vec![
            start_ev("s"),
            with_default(task("t"), "t_d"),
            task("a"),
            task("b"),
            task("c"),
            task("d"),
        ],
        &["s->t", "t->a", "t->b: ok", "t->c: !ok", "t->d"],
    );
    let (mut inst, _) = begin(&d, json!({}));
    let eff = complete(&d, &mut inst, "t", json!({ "ok": true }));
    assert_eq!(started(&eff), vec!["a", "b"]);
    // Only conditional flows, none holding: the default.
    let d = defs(
        vec![
            start_ev("s"),
            with_default(task("t"), "t_d"),
            task("c"),
            task("d"),
        ],
        &["s->t", "t->c: ok", "t->d"],
    );
    let (mut inst, _) = begin(&d, json!({}));
    let eff = complete(&d, &mut inst, "t", json!({ "ok": false }));
    assert_eq!(started(&eff), vec!["d"]);
}

fn inclusive() -> Definitions {
    defs(
        vec![
            start_ev("s"),
            with_default(gw("i", GatewayKind::Inclusive), "i_d"),
            task("a"),
            task("b"),
            task("c"),
            task("d"),
            task("a2"),
            gw("j", GatewayKind::Inclusive),
            task("after"),
        ],
        &[
            "s->i",
            "i->a: n > 0",
            "i->b: n > 5",
            "i->c: n > 100",
            "i->d",
            "a->a2",
            "a2->j",
            "b->j",
            "c->j",
            "d->j",
            "j->after",
        ],
    )
}

#[test]
fn inclusive_join_waits_only_for_activated_branches() {
    let d = inclusive();
    let (mut inst, eff) = begin(&d, json!({ "n": 10 }));
    assert_eq!(started(&eff), vec!["a", "b"]);
    // b arrives first; a's branch can still reach the join.
    let eff = complete(&d, &mut inst, "b", json!({}));
    assert!(started(&eff).is_empty());
    let eff = complete(&d, &mut inst, "a", json!({}));
    assert_eq!(started(&eff), vec!["a2"]);
    let eff = complete(&d, &mut inst, "a2", json!({}));
    assert_eq!(started(&eff), vec!["after"]);
    assert_eq!(inst.tokens.len(), 1);
    // One branch: the join passes at once.
    let (mut inst, eff) = begin(&d, json!({ "n": 1 }));
    assert_eq!(started(&eff), vec!["a"]);
    complete(&d, &mut inst, "a", json!({}));
    let eff = complete(&d, &mut inst, "a2", json!({}));
    assert_eq!(started(&eff), vec!["after"]);
    // None holds: the default.
    let (_, eff) = begin(&d, json!({ "n": 0 }));
    assert_eq!(started(&eff), vec!["d"]);
}

#[test]
fn a_parallel_join_that_can_never_fire_is_a_deadlock_incident() {
    let d = defs(
        vec![
            start_ev("s"),
            gw("x", GatewayKind::Exclusive),
            task("a"),
            task("b"),
            gw("j", GatewayKind::Parallel),
            task("after"),
        ],
        &["s->x", "x->a: go", "x->b: !go", "a->j", "b->j", "j->after"],
    );
    let (mut inst, _) = begin(&d, json!({ "go": true }));
    let eff = complete(&d, &mut inst, "a", json!({}));
    assert!(has_incident(&eff), "{eff:?}");
    assert_eq!(inst.status, InstanceStatus::Failed);
    let token = at(&inst, "j");
    let eff = apply(&d, &mut inst, Command::Retry { token }, T0).unwrap();
    assert_eq!(started(&eff), vec!["after"]);
}

#[test]
fn a_loop_that_never_waits_stops_at_an_incident() {
    let d = defs(
        vec![
            start_ev("s"),
            gw("x", GatewayKind::Exclusive),
            gw("y", GatewayKind::Exclusive),
        ],
        &["s->x", "x->y", "y->x"],
    );
    let (inst, eff) = begin(&d, json!({}));
    assert!(has_incident(&eff));
    assert_eq!(inst.status, InstanceStatus::Failed);
    assert!(inst.incidents()[0].2.contains("steps without waiting"));
}

// ---- activities --------------------------------------------------------

#[test]
fn tasks_go_to_agents_and_people_by_lane() {
    let mut lane = Lane {
        id: "L1".into(),
        name: Some("Reviewers".into()),
        flow_node_refs: vec!["u".into()],
        child_lane_set: None,
        extras: Preserved::default(),
    };
    lane.extras.attributes.push(Attribute::qualified(
        crate::model::COORDINATOR_NS,
        "coordinator",
        "role",
        "reviewer",
    ));
    let mut d = defs(vec![start_ev("s"), user("u"), task("t")], &["s->u", "u->t"]);
    d.processes[0].lane_sets.push(LaneSet {
        id: None,
        name: None,
        lanes: vec![lane],
        extras: Preserved::default(),
    });
    let (mut inst, eff) = begin(&d, json!({ "k": 1 }));
    let Some(Effect::StartWork { work, inputs, .. }) = eff.first() else {
        panic!("{eff:?}")
    };
    assert_eq!(
        work,
        &Work::Human {
            lane: Some("Reviewers".into()),
            role: Some("reviewer".into()),
            task_kind: "user".into(),
            form_fields: Vec::new()
        }
    );
    assert_eq!(inputs, &json!({ "k": 1 }));
    // A non-object output goes under the task's id.
    let eff = complete(&d, &mut inst, "u", json!("approved"));
    assert_eq!(inst.variables["u"], json!("approved"));
    let Some(Effect::StartWork { work, .. }) = eff.first() else {
        panic!("{eff:?}")
    };
    assert!(
        matches!(work, Work::Agent { lane: None, role: None, task_kind } if task_kind == "service")
    );
}

fn script(id: &str, text: &str) -> Node {
    node(
        id,
        NodeKind::Task {
            task: TaskKind::Script {
                format: Some("python".into()),
                script: Some(text.into()),
            },
            loop_: None,
        },
    )
}

#[test]
fn script_tasks_run_assignments_only() {
    let d = defs(
        vec![
            start_ev("s"),
            script("sc", "# doubles\ny = x * 2\nz = y + 1;\n"),
            task("t"),
        ],
        &["s->sc", "sc->t"],
    );
    let (inst, eff) = begin(&d, json!({ "x": 4 }));
    assert_eq!(started(&eff), vec!["t"]);
    assert_eq!(inst.variables["y"], json!(8));
    assert_eq!(inst.variables["z"], json!(9));
    for bad in [
        "import os",
        "x == 1",
        "os.system('rm -rf /')",
        "y = ",
        "f(x)",
        "1 = x",
    ] {
        let d = defs(
            vec![start_ev("s"), script("sc", bad), task("t")],
            &["s->sc", "sc->t"],
        );
        let (inst, eff) = begin(&d, json!({ "x": 1 }));
        assert!(has_incident(&eff), "{bad}");
        assert!(started(&eff).is_empty(), "{bad}");
        assert!(inst.variables.get("os").is_none());
    }
}

#[test]
fn a_send_task_is_worked_then_sends() {
    let d = defs(
        vec![
            start_ev("s"),
            node(
                "snd",
                NodeKind::Task {
                    task: TaskKind::Send {
                        message_ref: Some("M".into()),
                    },
                    loop_: None,
                },
            ),
        ],
        &["s->snd"],
    );
    let (mut inst, eff) = begin(&d, json!({}));
    let Effect::StartWork {
        token,
        work: Work::Agent { task_kind, .. },
        ..
    } = &eff[0]
    else {
        panic!("{eff:?}")
    };
    assert_eq!(task_kind, "send");
    let token = *token;
    let eff = complete(&d, &mut inst, "snd", json!({ "text": "hi" }));
    assert_eq!(
        eff,
        vec![
            Effect::SendMessage {
                token,
                from_node: "snd".into(),
                message_ref: Some("M".into()),
                message: Some("M".into()),
                payload: json!({ "text": "hi" })
            },
            Effect::Completed
        ]
    );
}

#[test]
fn an_embedded_subprocess_runs_in_its_scope() {
    let inner = sub(
        "sp",
        vec![start_ev("is"), task("it"), end_ev("ie")],
        &["is->it", "it->ie"],
    );
    let d = defs(
        vec![start_ev("s"), inner, task("after"), end_ev("e")],
        &["s->sp", "sp->after", "after->e"],
    );
    let (mut inst, eff) = begin(&d, json!({}));
    assert_eq!(started(&eff), vec!["it"]);
    assert_eq!(inst.scopes.len(), 1);
    let it = inst.tokens.iter().find(|t| t.node == "it").unwrap();
    assert_eq!(it.scope, inst.scopes[0].id);
    let eff = complete(&d, &mut inst, "it", json!({ "v": 1 }));
    assert_eq!(started(&eff), vec!["after"]);
    assert!(inst.scopes.is_empty());
    assert_eq!(inst.variables["v"], json!(1));
    complete(&d, &mut inst, "after", json!({}));
    assert_eq!(
        inst.completed_nodes(),
        vec!["s", "is", "it", "ie", "sp", "after", "e"]
    );
}

#[test]
fn an_empty_subprocess_completes_at_once() {
    let d = defs(
        vec![start_ev("s"), sub("sp", vec![], &[]), task("after")],
        &["s->sp", "sp->after"],
    );
    let (inst, eff) = begin(&d, json!({}));
    assert_eq!(started(&eff), vec!["after"]);
    assert_eq!(inst.completed_nodes(), vec!["s", "sp"]);
}

#[test]
fn a_call_activity_waits_for_the_child() {
    let call = node(
        "c",
        NodeKind::CallActivity {
            called_element: Some("child".into()),
            loop_: None,
        },
    );
    let d = defs(
        vec![start_ev("s"), call, task("after")],
        &["s->c", "c->after"],
    );
    let (mut inst, eff) = begin(&d, json!({ "a": 1 }));
    assert_eq!(
        eff,
        vec![Effect::CallProcess {
            token: at(&inst, "c"),
            node: "c".into(),
            called_element: "child".into(),
            variables: json!({ "a": 1 })
        }]
    );
    assert_eq!(inst.tokens[0].wait, Wait::Called);
    let eff = complete(&d, &mut inst, "c", json!({ "b": 2 }));
    assert_eq!(started(&eff), vec!["after"]);
    assert_eq!(inst.variables["b"], json!(2));
}

// ---- commands that do not fit ------------------------------------------

#[test]
fn a_command_that_does_not_fit_changes_nothing() {
    let d = defs(
        vec![start_ev("s"), task("t"), end_ev("e")],
        &["s->t", "t->e"],
    );
    let (mut inst, _) = begin(&d, json!({}));
    let before = inst.clone();
    let token = at(&inst, "t");
    let cases = [
        Command::Complete {
            token: 999,
            output: json!({}),
        },
        Command::TimerDue { token },
        Command::Retry { token },
        Command::Message {
            name: "nobody".into(),
            correlation: None,
            payload: json!({}),
        },
    ];
    for cmd in cases {
        assert!(apply(&d, &mut inst, cmd.clone(), T0).is_err(), "{cmd:?}");
        assert_eq!(inst, before, "{cmd:?}");
    }
    complete(&d, &mut inst, "t", json!({}));
    assert_eq!(inst.status, InstanceStatus::Completed);
    let done = inst.clone();
    assert_eq!(
        apply(&d, &mut inst, Command::Cancel, T0),
        Err(RunError::NotRunning(InstanceStatus::Completed))
    );
    assert_eq!(inst, done);
}

#[test]
fn start_checks_its_arguments() {
    let d = defs(vec![start_ev("s"), task("t")], &["s->t"]);
    assert_eq!(
        start(&d, Some("nope"), None, Map::new(), T0).unwrap_err(),
        RunError::UnknownProcess("nope".into())
    );
    assert_eq!(
        start(&d, None, Some("t"), Map::new(), T0).unwrap_err(),
        RunError::UnknownStartEvent("t".into())
    );
    // Without a start event, nodes without incoming flow start.
    let d = defs(vec![task("a"), task("b")], &["a->b"]);
    let (_, eff) = begin(&d, json!({}));
    assert_eq!(started(&eff), vec!["a"]);
}

#[test]
fn cancel_terminates_everything() {
    let d = defs(
        vec![
            start_ev("s"),
            gw("f", GatewayKind::Parallel),
            task("a"),
            sub("sp", vec![start_ev("is"), task("it")], &["is->it"]),
        ],
        &["s->f", "f->a", "f->sp"],
    );
    let (mut inst, _) = begin(&d, json!({}));
    let (a, it) = (at(&inst, "a"), at(&inst, "it"));
    let eff = apply(&d, &mut inst, Command::Cancel, T0).unwrap();
    assert!(eff.contains(&Effect::CancelWork { token: a }));
    assert!(eff.contains(&Effect::CancelWork { token: it }));
    assert_eq!(eff.last(), Some(&Effect::Terminated));
    assert_eq!(inst.status, InstanceStatus::Terminated);
    assert!(inst.tokens.is_empty() && inst.scopes.is_empty());
}

#[test]
fn state_round_trips_through_json() {
    let d = defs(
        vec![
            start_ev("s"),
            multi(task("m"), false, Some("items"), None, None),
        ],
        &["s->m"],
    );
    let (inst, _) = begin(&d, json!({ "items": [1, 2] }));
    let text = serde_json::to_string(&inst).unwrap();
    let back: Instance = serde_json::from_str(&text).unwrap();
    assert_eq!(back, inst);
}

// ---- random DAGs -------------------------------------------------------

/// A random DAG process: tasks (plain, script, multi-instance), gateways
/// of every kind and end events; flows go from lower to higher index,
/// some conditional on `n`.
fn random_dag(seed: u64) -> Definitions {
    let mut r = seed | 1;
    let mut next = move |m: u64| {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        r % m.max(1)
    };
    let size = 3 + next(8) as usize;
    let mut nodes = vec![start_ev("n0")];
    for i in 1..size {
        let id = format!("n{i}");
        nodes.push(match next(9) {
            0 => gw(&id, GatewayKind::Exclusive),
            1 => gw(&id, GatewayKind::Parallel),
            2 => gw(&id, GatewayKind::Inclusive),
            3 => end_ev(&id),
            4 => script(&id, "n = n + 1"),
            5 => multi(task(&id), next(2) == 0, None, Some("n"), None),
            _ => task(&id),
        });
    }
    let mut specs = Vec::new();
    for (i, n) in nodes.iter().enumerate().take(size - 1) {
        if matches!(n.kind, NodeKind::EndEvent { .. }) {
            continue;
        }
        let fan = 1 + next(3);
        for _ in 0..fan {
            let j = i + 1 + next((size - i - 1) as u64) as usize;
            let spec = match next(3) {
                0 => format!("n{i}->n{j}: n > {}", next(4)),
                _ => format!("n{i}->n{j}"),
            };
            if !specs
                .iter()
                .any(|s: &String| s.split(':').next() == spec.split(':').next())
            {
                specs.push(spec);
            }
        }
    }
    let refs: Vec<&str> = specs.iter().map(String::as_str).collect();
    defs(nodes, &refs)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_completions_end_cleanly(seed in any::<u64>(), n in 0i64..5, picks in proptest::collection::vec(any::<u8>(), 64)) {
        let d = random_dag(seed);
        let (mut inst, _) = begin(&d, json!({ "n": n }));
        for pick in picks {
            let work: Vec<u64> = inst.tokens.iter().filter(|t| t.wait == Wait::Work).map(|t| t.id).collect();
            if work.is_empty() {
                break;
            }
            let token = work[pick as usize % work.len()];
            let output = json!({ "n": i64::from(pick % 5) });
            let applied = apply(&d, &mut inst, Command::Complete { token, output }, T0);
            prop_assert!(applied.is_ok());
        }
        if inst.tokens.iter().any(|t| t.wait == Wait::Work) {
            return Ok(()); // ran out of picks
        }
        match inst.status {
            InstanceStatus::Completed => prop_assert!(inst.tokens.is_empty() && inst.scopes.is_empty()),
            InstanceStatus::Failed => {
                prop_assert!(!inst.incidents().is_empty());
                prop_assert!(!inst.tokens.iter().any(|t| t.wait.is_active()));
            }
            other => prop_assert!(false, "ended {:?} with {:?}", other, inst.tokens),
        }
        let seqs: Vec<u64> = inst.history.iter().map(|s| s.seq).collect();
        prop_assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    }
}

// ---- routes: splits drawn without conditions ------------------------------

#[test]
fn route_variables_choose_among_unconditioned_flows_by_id_or_name() {
    let d = defs(
        vec![
            start_ev("s"),
            gw("x", GatewayKind::Exclusive),
            task("a"),
            task("b"),
            end_ev("e"),
        ],
        &["s->x", "x->a", "x->b", "a->e", "b->e"],
    );
    // Without a route the first unconditioned flow is taken.
    let (_, eff) = begin(&d, json!({}));
    assert_eq!(started(&eff), ["a"]);
    let to_b = d.processes[0]
        .flows
        .iter()
        .find(|f| f.target == "b")
        .map(|f| f.id.clone())
        .expect("x->b");
    let (_, eff) = begin(&d, json!({ "route": { "x": to_b } }));
    assert_eq!(started(&eff), ["b"]);
    // By name, its line breaks as spaces.
    let mut named = d.clone();
    for f in &mut named.processes[0].flows {
        if f.target == "b" {
            f.name = Some("the\nother way".into());
        }
    }
    let (_, eff) = begin(&named, json!({ "route": { "x": "the other way" } }));
    assert_eq!(started(&eff), ["b"]);
    // A route naming no flow leaves nothing to take: an incident.
    let (inst, eff) = begin(&d, json!({ "route": { "x": "nowhere" } }));
    assert!(has_incident(&eff), "{eff:?}");
    assert_eq!(inst.status, InstanceStatus::Failed);
}

#[test]
fn an_inclusive_route_takes_every_flow_it_lists() {
    let d = defs(
        vec![
            start_ev("s"),
            gw("o", GatewayKind::Inclusive),
            task("a"),
            task("b"),
            task("c"),
            end_ev("e"),
        ],
        &["s->o", "o->a", "o->b", "o->c", "a->e", "b->e", "c->e"],
    );
    let ids: Vec<String> = d.processes[0]
        .flows
        .iter()
        .filter(|f| f.source == "o" && f.target != "b")
        .map(|f| f.id.clone())
        .collect();
    let (_, eff) = begin(&d, json!({ "route": { "o": ids } }));
    assert_eq!(started(&eff), ["a", "c"]);
}

// ---- models drawn for interchange ------------------------------------------

/// A catch with no message definition waits for the message its label
/// names; an event gateway leaves out an option it cannot arm (a timer with
/// no definition) and waits on the others (MIWG C.1.0).
#[test]
fn unnamed_catches_wait_for_their_label_and_gateways_skip_unarmable_options() {
    let xml = r#"<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="t">
      <process id="p"><startEvent id="s"/><eventBasedGateway id="g"/>
      <intermediateCatchEvent id="m" name="Invoice&#10;received"><messageEventDefinition/></intermediateCatchEvent>
      <intermediateCatchEvent id="t" name="7 days"><timerEventDefinition/></intermediateCatchEvent>
      <endEvent id="e1"/><endEvent id="e2"/>
      <sequenceFlow id="f0" sourceRef="s" targetRef="g"/>
      <sequenceFlow id="f1" sourceRef="g" targetRef="m"/><sequenceFlow id="f2" sourceRef="g" targetRef="t"/>
      <sequenceFlow id="f3" sourceRef="m" targetRef="e1"/><sequenceFlow id="f4" sourceRef="t" targetRef="e2"/>
      </process></definitions>"#;
    let d = crate::import(xml.as_bytes()).expect("imports");
    let (mut inst, eff) = begin(&d, json!({}));
    assert!(!has_incident(&eff), "{eff:?}");
    assert!(
        eff.iter().any(
            |e| matches!(e, Effect::Subscribe { message, .. } if message == "Invoice received")
        ),
        "{eff:?}"
    );
    apply(
        &d,
        &mut inst,
        Command::Message {
            name: "Invoice received".into(),
            correlation: None,
            payload: Value::Null,
        },
        T0,
    )
    .expect("delivered");
    assert_eq!(inst.status, InstanceStatus::Completed);
    assert!(inst.completed_nodes().contains(&"e1"));
    // With no option it can arm, the gateway is an incident naming why.
    let only_timer = xml.replace(r#"<sequenceFlow id="f1" sourceRef="g" targetRef="m"/>"#, "");
    let d = crate::import(only_timer.as_bytes()).expect("imports");
    let (_, eff) = begin(&d, json!({}));
    assert!(has_incident(&eff), "{eff:?}");
}
