//! Unit tests of `htn`.

use super::*;
use serde_json::json;

/// A primitive subtask with a must-pass criterion.
fn prim(id: &str, deps: &[&str]) -> Subtask {
    Subtask::Primitive(TaskSpec {
        id: id.to_owned(),
        title: format!("{id}: {{goal}}"),
        task_type: "research".to_owned(),
        description: String::new(),
        required_skills: vec!["research".to_owned()],
        required_tools: vec![],
        depends_on: deps.iter().map(|d| (*d).to_owned()).collect(),
        success_criteria: vec![],
        estimated_cost: 0.01,
        optional: false,
        inputs: json!({}),
    })
}

fn compound(id: &str, task: &str, deps: &[&str]) -> Subtask {
    Subtask::Compound(CompoundRef {
        id: id.to_owned(),
        compound: task.to_owned(),
        depends_on: deps.iter().map(|d| (*d).to_owned()).collect(),
    })
}

fn method(name: &str, task: &str, subtasks: Vec<Subtask>) -> Method {
    Method {
        name: name.to_owned(),
        task: task.to_owned(),
        description: format!("{name} method"),
        keywords: vec![],
        conditions: vec![],
        subtasks,
    }
}

fn when(mut m: Method, conditions: Value) -> Method {
    m.conditions = serde_json::from_value(conditions).unwrap();
    m
}

/// `(id, depends_on)` of every task, in plan order.
fn edges(d: &Decomposition) -> Vec<(String, Vec<String>)> {
    d.plan
        .tasks
        .iter()
        .map(|t| (t.id.clone(), t.depends_on.clone()))
        .collect()
}

fn e(id: &str, deps: &[&str]) -> (String, Vec<String>) {
    (
        id.to_owned(),
        deps.iter().map(|d| (*d).to_owned()).collect(),
    )
}

/// mission: a -> mid(compound) -> z; mid: two parallel entries, an inner compound, one exit.
fn tiny_library() -> Vec<Method> {
    vec![
        method(
            "root",
            MISSION_TASK,
            vec![
                prim("a", &[]),
                compound("mid", "middle", &["a"]),
                prim("z", &["mid"]),
            ],
        ),
        method(
            "middle-1",
            "middle",
            vec![
                prim("p", &[]),
                prim("q", &[]),
                compound("inner", "leaf_pair", &["p"]),
                prim("join", &["inner", "q"]),
            ],
        ),
        method(
            "leaf-pair-1",
            "leaf_pair",
            vec![prim("x", &[]), prim("y", &[]), prim("w", &["x"])],
        ),
    ]
}

#[test]
fn nested_ids_are_prefixed_and_dependencies_rewired() {
    let lib = tiny_library();
    let d = decompose(&lib, &lib[0], "G", &json!({})).unwrap();
    assert_eq!(
        edges(&d),
        vec![
            e("a", &[]),
            e("mid.p", &["a"]),
            e("mid.q", &["a"]),
            // Entry leaves of `inner` inherit its dependency on `p`.
            e("mid.inner.x", &["mid.p"]),
            e("mid.inner.y", &["mid.p"]),
            e("mid.inner.w", &["mid.inner.x"]),
            // Depending on `inner` means waiting for its exits `y` and `w`.
            e("mid.join", &["mid.inner.y", "mid.inner.w", "mid.q"]),
            // `mid`'s only exit is `join`.
            e("z", &["mid.join"]),
        ]
    );
    assert_eq!(d.plan.tasks[0].title, "a: G");
    assert_eq!(d.trace.depth, 2);
    assert_eq!(d.trace.task_count, 8);
    let expansions: Vec<String> = d.trace.expansions.iter().map(|x| x.to_string()).collect();
    assert_eq!(
        expansions,
        [
            "mid = middle via middle-1",
            "mid.inner = leaf_pair via leaf-pair-1"
        ]
    );
}

#[test]
fn compound_with_several_exits_and_forward_reference() {
    // `b` depends on a compound declared after it; both exits of `c` count.
    let lib = vec![
        method(
            "root",
            MISSION_TASK,
            vec![prim("b", &["c"]), compound("c", "two", &[])],
        ),
        method("two-1", "two", vec![prim("l", &[]), prim("r", &[])]),
    ];
    let d = decompose(&lib, &lib[0], "G", &json!({})).unwrap();
    assert_eq!(
        edges(&d),
        vec![e("b", &["c.l", "c.r"]), e("c.l", &[]), e("c.r", &[])]
    );
}

#[test]
fn conditions_select_the_first_applicable_method() {
    let mut lib = tiny_library();
    lib.insert(
        1,
        when(
            method("middle-deep", "middle", vec![prim("deep", &[])]),
            json!([{ "key": "depth", "equals": "deep" }, { "key": "owner", "exists": true }]),
        ),
    );
    let ids = |c: Value| -> Vec<String> {
        let d = decompose(&lib, &lib[0], "G", &c).unwrap();
        d.plan.tasks.into_iter().map(|t| t.id).collect()
    };
    assert_eq!(
        ids(json!({ "depth": " DEEP ", "owner": "ann" })),
        ["a", "mid.deep", "z"]
    );
    // One condition failing is enough to skip the method.
    assert_eq!(ids(json!({ "depth": "deep" })).len(), 8);
    assert_eq!(ids(json!({ "depth": "shallow", "owner": "ann" })).len(), 8);
    assert_eq!(ids(json!(null)).len(), 8);
}

#[test]
fn condition_semantics() {
    let c = |v: Value| -> Condition { serde_json::from_value(v).unwrap() };
    let constraints = json!({ "n": 3, "s": "Software", "nothing": null, "b": true });
    assert!(c(json!({ "key": "n", "equals": 3.0 })).holds(&constraints));
    assert!(c(json!({ "key": "s", "equals": "software" })).holds(&constraints));
    assert!(!c(json!({ "key": "s", "equals": "hardware" })).holds(&constraints));
    assert!(c(json!({ "key": "b", "equals": true })).holds(&constraints));
    assert!(c(json!({ "key": "s", "exists": true })).holds(&constraints));
    assert!(c(json!({ "key": "nothing", "exists": false })).holds(&constraints));
    assert!(c(json!({ "key": "missing", "exists": false })).holds(&constraints));
    assert!(!c(json!({ "key": "missing", "exists": true })).holds(&constraints));
    assert!(c(json!({ "key": "s" })).holds(&constraints));
    assert!(!c(json!({ "key": "missing" })).holds(&constraints));
    assert!(!c(json!({ "key": "s", "equals": "software", "exists": false })).holds(&constraints));
    assert!(!c(json!({ "key": "s" })).holds(&json!("not an object")));
    assert!(serde_json::from_value::<Condition>(json!({ "key": "s", "equal": 1 })).is_err());
}

#[test]
fn root_method_conditions_are_checked() {
    let lib = vec![when(
        method("root", MISSION_TASK, vec![prim("a", &[])]),
        json!([{ "key": "domain", "equals": "software" }]),
    )];
    let err = decompose(&lib, &lib[0], "G", &json!({})).unwrap_err();
    assert_eq!(err.code(), codes::METHOD_NOT_APPLICABLE);
    assert!(decompose(&lib, &lib[0], "G", &json!({ "domain": "software" })).is_ok());
}

#[test]
fn self_recursion_names_the_chain() {
    let lib = vec![
        method(
            "root",
            MISSION_TASK,
            vec![prim("a", &[]), compound("review", "review_cycle", &["a"])],
        ),
        method(
            "review-1",
            "review_cycle",
            vec![prim("check", &[]), compound("fix", "rework", &["check"])],
        ),
        method(
            "rework-1",
            "rework",
            vec![
                prim("edit", &[]),
                compound("again", "review_cycle", &["edit"]),
            ],
        ),
    ];
    let err = decompose(&lib, &lib[0], "G", &json!({})).unwrap_err();
    assert_eq!(
        err,
        DecompositionError::Recursion {
            chain: vec![
                "review_cycle".into(),
                "rework".into(),
                "review_cycle".into()
            ]
        }
    );
    assert_eq!(err.code(), "recursive_decomposition");
    assert!(
        err.to_string()
            .contains("review_cycle -> rework -> review_cycle"),
        "{err}"
    );
    // A method that reaches `mission` again is recursion too.
    let lib = vec![method(
        "root",
        MISSION_TASK,
        vec![compound("again", MISSION_TASK, &[])],
    )];
    let err = decompose(&lib, &lib[0], "G", &json!({})).unwrap_err();
    assert!(err.to_string().contains("mission -> mission"), "{err}");
}

#[test]
fn depth_limit_is_enforced() {
    // level0 -> level1 -> ... each a distinct compound task, so no recursion.
    let chain_of = |levels: usize| -> Vec<Method> {
        let mut lib = vec![method(
            "root",
            MISSION_TASK,
            vec![compound("n", "level1", &[])],
        )];
        for i in 1..=levels {
            let next = if i == levels {
                prim("leaf", &[])
            } else {
                compound("n", &format!("level{}", i + 1), &[])
            };
            lib.push(method(&format!("m{i}"), &format!("level{i}"), vec![next]));
        }
        lib
    };
    let ok = chain_of(MAX_DECOMPOSITION_DEPTH);
    let d = decompose(&ok, &ok[0], "G", &json!({})).unwrap();
    assert_eq!(d.trace.depth, MAX_DECOMPOSITION_DEPTH);
    assert_eq!(d.plan.tasks[0].id, "n.n.n.n.n.n.n.n.leaf");

    let too_deep = chain_of(MAX_DECOMPOSITION_DEPTH + 1);
    let err = decompose(&too_deep, &too_deep[0], "G", &json!({})).unwrap_err();
    assert_eq!(err.code(), codes::DEPTH_EXCEEDED);
    assert!(
        err.to_string()
            .contains("mission -> level1 -> level2 -> level3 -> level4 -> level5 -> level6 -> level7 -> level8 -> level9"),
        "{err}"
    );
}

#[test]
fn missing_method_is_named() {
    let lib = vec![method(
        "root",
        MISSION_TASK,
        vec![prim("a", &[]), compound("b", "nowhere", &["a"])],
    )];
    let err = decompose(&lib, &lib[0], "G", &json!({})).unwrap_err();
    assert_eq!(
        err,
        DecompositionError::NoApplicableMethod {
            task: "nowhere".into(),
            subtask: "b".into(),
            candidates: 0
        }
    );
    assert!(err.to_string().contains("'nowhere'"), "{err}");

    // Methods exist but none applies: the message says so.
    let mut lib = tiny_library();
    lib[1] = when(lib[1].clone(), json!([{ "key": "x", "exists": true }]));
    let err = decompose(&lib, &lib[0], "G", &json!({})).unwrap_err();
    assert_eq!(err.code(), codes::NO_APPLICABLE_METHOD);
    assert!(err.to_string().contains("none of its 1 methods"), "{err}");
}

#[test]
fn malformed_methods_are_reported() {
    let dup = vec![method(
        "root",
        MISSION_TASK,
        vec![prim("a", &[]), compound("a", "x", &[])],
    )];
    let err = decompose(&dup, &dup[0], "G", &json!({})).unwrap_err();
    assert_eq!(err.code(), codes::DUPLICATE_SUBTASK);

    let unknown = vec![method("root", MISSION_TASK, vec![prim("a", &["ghost"])])];
    let err = decompose(&unknown, &unknown[0], "G", &json!({})).unwrap_err();
    assert_eq!(err.code(), codes::UNKNOWN_SIBLING);
    assert!(err.to_string().contains("'ghost'"), "{err}");

    let empty = vec![method("root", MISSION_TASK, vec![])];
    let err = decompose(&empty, &empty[0], "G", &json!({})).unwrap_err();
    assert_eq!(err.code(), codes::EMPTY_METHOD);

    // A dotted sibling id can collide with a prefixed leaf id.
    let clash = vec![
        method(
            "root",
            MISSION_TASK,
            vec![prim("b.x", &[]), compound("b", "bee", &[])],
        ),
        method("bee-1", "bee", vec![prim("x", &[])]),
    ];
    let err = decompose(&clash, &clash[0], "G", &json!({})).unwrap_err();
    assert_eq!(err.code(), codes::DUPLICATE_TASK_ID);
}

#[test]
fn fan_out_is_bounded() {
    // Each level has 8 copies of the next: 8^4 = 4096 leaves, over the limit.
    let mut lib = vec![];
    for level in 0..4 {
        let task = if level == 0 {
            MISSION_TASK.to_owned()
        } else {
            format!("l{level}")
        };
        let subs = (0..8)
            .map(|i| compound(&format!("c{i}"), &format!("l{}", level + 1), &[]))
            .collect();
        lib.push(method(&format!("m{level}"), &task, subs));
    }
    lib.push(method("m4", "l4", vec![prim("leaf", &[])]));
    let err = decompose(&lib, &lib[0], "G", &json!({})).unwrap_err();
    assert_eq!(
        err,
        DecompositionError::TooManyTasks {
            limit: MAX_EXPANDED_TASKS
        }
    );
}

#[test]
fn errors_serialize_as_code_and_message() {
    let err = DecompositionError::MethodNotFound { name: "x".into() };
    assert_eq!(
        serde_json::to_value(&err).unwrap(),
        json!({ "code": "method_not_found", "message": "no method named 'x'" })
    );
}

#[test]
fn placeholders_fill_known_names_once() {
    let p = Placeholders::new(
        "Ship {audience} v2",
        &json!({ "audience": "  CTOs\n at startups ", "n": 3, "flag": true, "goal": "ignored" }),
    );
    assert_eq!(
        p.fill("{goal} for {audience} ({n}) {flag} {unknown} {} {a b} {goal"),
        "Ship {audience} v2 for CTOs at startups (3) {flag} {unknown} {} {a b} {goal"
    );
    assert_eq!(p.fill("é{goal}é"), "éShip {audience} v2é");
    let long = "é".repeat(500);
    let filled = Placeholders::new(&long, &json!({})).fill("{goal}");
    assert_eq!(filled.chars().count(), MAX_INSERTED_CHARS);
    assert!(filled.ends_with('…'));
}

proptest::proptest! {
    /// Filling never panics (byte slicing stays on char boundaries) and leaves brace-free text alone.
    #[test]
    fn fill_is_total_and_identity_without_braces(text in "\\PC{0,60}", goal in "\\PC{0,20}") {
        let p = Placeholders::new(&goal, &json!({ "k": "v" }));
        let filled = p.fill(&text);
        if !text.contains('{') {
            proptest::prop_assert_eq!(filled, text);
        }
    }
}

#[test]
fn subtasks_parse_by_shape_with_clear_errors() {
    let sub: Subtask =
        serde_json::from_value(json!({ "id": "r", "compound": "review_cycle" })).unwrap();
    assert_eq!(sub, compound("r", "review_cycle", &[]));
    let sub: Subtask =
        serde_json::from_value(json!({ "id": "a", "title": "A", "task_type": "t" })).unwrap();
    assert!(matches!(sub, Subtask::Primitive(_)));
    let err = serde_json::from_value::<Subtask>(
        json!({ "id": "a", "title": "A", "task_type": "t", "depend_on": [] }),
    )
    .unwrap_err();
    assert!(err.to_string().contains("depend_on"), "{err}");
    let err = serde_json::from_value::<Subtask>(
        json!({ "id": "r", "compound": "x", "title": "not allowed" }),
    )
    .unwrap_err();
    assert!(err.to_string().contains("title"), "{err}");
    // Serialization is the inverse.
    for s in [compound("r", "x", &["a"]), prim("a", &["b"])] {
        let back: Subtask = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }
}

#[test]
fn decomposition_is_deterministic() {
    let lib = tiny_library();
    let a = decompose(&lib, &lib[0], "G", &json!({ "x": "y" })).unwrap();
    let b = decompose(&lib, &lib[0], "G", &json!({ "x": "y" })).unwrap();
    assert_eq!(a, b);
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
}
