//! Unit tests of `organisation`.

use serde_json::json;

use super::*;

fn analysis() -> Value {
    // The seed's DataAnalysisTeam, plus a specialised role and a closed goal.
    json!({
        "name": "DataAnalysisTeam",
        "roles": [
            {"id": "leader", "cardinality": {"min": 1, "max": 1}},
            {"id": "data_analyst", "cardinality": {"min": 2, "max": 4}},
            {"id": "junior_analyst", "extends": "data_analyst"},
            {"id": "ml_engineer", "cardinality": {"min": 1, "max": 2}},
            {"id": "reporter", "cardinality": {"max": 1}}
        ],
        "groups": [{"id": "research", "roles": ["leader", "data_analyst", "ml_engineer", "reporter"]}],
        "links": [
            {"from": "leader", "to": "data_analyst", "kind": "authority"},
            {"from": "data_analyst", "to": "reporter", "kind": "communication"}
        ],
        "missions": [{"id": "m1", "goals": [
            {"id": "g1", "plan": ["analyze_trends", "identify_patterns"]},
            {"id": "g2", "plan": ["train_model"]},
            {"id": "g3", "plan": ["create_visuals", "summary"]}
        ]}],
        "norms": [
            {"id": "n1", "role": "leader", "modality": "obligation", "target": "g1"},
            {"id": "n2", "role": "data_analyst", "modality": "permission", "target": "g1"},
            {"id": "n3", "role": "ml_engineer", "modality": "obligation", "target": "g2"},
            {"id": "n4", "role": "reporter", "modality": "obligation", "target": "g3"},
            {"id": "n5", "role": "junior_analyst", "modality": "prohibition", "target": "g1"},
            {"id": "n6", "role": "data_analyst", "modality": "prohibition", "target": "g2"}
        ]
    })
}

fn spec() -> OrgSpec {
    OrgSpec::parse(&analysis()).expect("valid spec")
}

fn codes(doc: Value) -> Vec<&'static str> {
    OrgSpec::parse(&doc)
        .expect_err("must be invalid")
        .iter()
        .map(|p| p.code)
        .collect()
}

#[test]
fn the_seed_team_is_valid_and_round_trips() {
    let s = spec();
    let again = OrgSpec::parse(&serde_json::to_value(&s).expect("serialises")).expect("valid");
    assert_eq!(s, again);
}

#[test]
fn verdicts_follow_norms_inheritance_and_precedence() {
    let s = spec();
    // Obliged and permitted by their own norms.
    assert_eq!(
        s.verdict("leader", "analyze_trends", "t1"),
        Deontic::Obliged
    );
    assert_eq!(
        s.verdict("data_analyst", "identify_patterns", "t1"),
        Deontic::Permitted
    );
    // The junior inherits permission on g1 but its own prohibition wins.
    assert_eq!(
        s.verdict("junior_analyst", "analyze_trends", "t1"),
        Deontic::Prohibited
    );
    // ...and inherits its parent's prohibition on g2.
    assert_eq!(
        s.verdict("junior_analyst", "train_model", "t1"),
        Deontic::Prohibited
    );
    // Matched by key as well as type, case-insensitively.
    assert_eq!(
        s.verdict("REPORTER", "writing", "Summary"),
        Deontic::Obliged
    );
    // No norm on a covered task: the open default.
    assert_eq!(s.verdict("leader", "train_model", "t"), Deontic::Permitted);
    // Roles the spec does not know get the default too.
    assert_eq!(s.verdict("intern", "train_model", "t"), Deontic::Permitted);
    // Work no goal covers is unconstrained.
    assert_eq!(
        s.verdict("junior_analyst", "coding", "t"),
        Deontic::Unconstrained
    );
}

#[test]
fn a_closed_spec_prohibits_roles_no_norm_names() {
    let mut doc = analysis();
    doc["default_modality"] = json!("prohibition");
    let s = OrgSpec::parse(&doc).expect("valid");
    assert_eq!(s.verdict("leader", "train_model", "t"), Deontic::Prohibited);
    assert_eq!(s.verdict("intern", "train_model", "t"), Deontic::Prohibited);
    assert_eq!(
        s.verdict("ml_engineer", "train_model", "t"),
        Deontic::Obliged
    );
    assert_eq!(s.verdict("intern", "coding", "t"), Deontic::Unconstrained);
}

#[test]
fn a_norm_on_a_mission_covers_all_its_goals() {
    let mut doc = analysis();
    doc["norms"] =
        json!([{"id": "all", "role": "reporter", "modality": "prohibition", "target": "m1"}]);
    let s = OrgSpec::parse(&doc).expect("valid");
    for t in ["analyze_trends", "train_model", "create_visuals"] {
        assert_eq!(s.verdict("reporter", t, "k"), Deontic::Prohibited, "{t}");
    }
}

#[test]
fn every_problem_is_reported_with_its_code() {
    let doc = json!({
        "roles": [
            {"id": "a", "cardinality": {"min": 3, "max": 1}},
            {"id": "A"},
            {"id": "b", "extends": "c"},
            {"id": "c", "extends": "b"},
            {"id": "bad id"}
        ],
        "groups": [
            {"id": "g", "roles": ["nobody"], "subgroups": ["h"]},
            {"id": "h", "subgroups": ["g", "missing"]}
        ],
        "links": [{"from": "a", "to": "ghost", "kind": "authority"}],
        "missions": [
            {"id": "m", "goals": [{"id": "x", "plan": []}]},
            {"id": "empty", "goals": []}
        ],
        "norms": [
            {"id": "n1", "role": "a", "modality": "obligation", "target": "x"},
            {"id": "n2", "role": "a", "modality": "prohibition", "target": "m"},
            {"id": "n3", "role": "zed", "modality": "permission", "target": "nowhere"}
        ]
    });
    let mut got = codes(doc);
    got.sort();
    got.dedup();
    assert_eq!(
        got,
        vec![
            "cardinality_invalid",
            "duplicate_id",
            "empty_mission",
            "empty_plan",
            "group_cycle",
            "invalid_id",
            "norm_conflict",
            "role_cycle",
            "unknown_group",
            "unknown_role",
            "unknown_target",
        ]
    );
}

#[test]
fn malformed_documents_are_refused_whole() {
    assert_eq!(
        codes(
            json!({"roles": [{"id": "a"}], "norms": [{"id": "n", "role": "a", "modality": "maybe", "target": "x"}]})
        ),
        vec!["spec_malformed"]
    );
    assert_eq!(
        codes(json!({"roles": [], "extra": 1})),
        vec!["spec_malformed"]
    );
    assert_eq!(codes(json!({"roles": []})), vec!["no_roles"]);
    let big = json!({"roles": [{"id": "a", "description": "x".repeat(MAX_SPEC_BYTES)}]});
    assert_eq!(codes(big), vec!["spec_too_large"]);
}

#[test]
fn cardinality_decides_room_and_staffing() {
    let s = spec();
    assert!(s.room_for("leader", 0));
    assert!(!s.room_for("Leader", 1));
    assert!(s.room_for("junior_analyst", 1_000), "no max: unbounded");
    assert!(s.room_for("undefined", 1_000));
    let live = BTreeMap::from([("leader".to_owned(), 2), ("data_analyst".to_owned(), 1)]);
    assert_eq!(
        s.understaffed(&live),
        vec![("data_analyst".into(), 1, 2), ("ml_engineer".into(), 0, 1)]
    );
    assert_eq!(s.overstaffed(&live), vec![("leader".into(), 2, 1)]);
}

#[test]
fn contractors_are_hired_into_an_allowed_role_with_room() {
    let s = spec();
    let none = BTreeMap::new();
    // g2: ml_engineer is obliged and has room.
    assert_eq!(
        s.contractor_role("train_model", "k", &none).as_deref(),
        Some("ml_engineer")
    );
    // Full: next the permitted roles in spec order (leader has no norm on g2,
    // so the open default permits it), skipping full ones.
    let full = BTreeMap::from([("ml_engineer".to_owned(), 2), ("leader".to_owned(), 1)]);
    assert_eq!(
        s.contractor_role("train_model", "k", &full).as_deref(),
        Some("reporter")
    );
    // Closed spec with every allowed role full: no hire.
    let mut doc = analysis();
    doc["default_modality"] = json!("prohibition");
    let closed = OrgSpec::parse(&doc).expect("valid");
    assert_eq!(closed.contractor_role("train_model", "k", &full), None);
    // Uncovered work: any role with room; the default contractor role.
    let mut doc = analysis();
    doc["roles"] = json!([{"id": "contractor", "cardinality": {"max": 1}}]);
    doc["norms"] = json!([]);
    doc["groups"] = json!([]);
    doc["links"] = json!([]);
    let only = OrgSpec::parse(&doc).expect("valid");
    assert_eq!(
        only.contractor_role("coding", "k", &none).as_deref(),
        Some("contractor")
    );
    let one = BTreeMap::from([("contractor".to_owned(), 1)]);
    assert_eq!(
        only.contractor_role("coding", "k", &one),
        None,
        "at its max"
    );
}

#[test]
fn workers_get_the_norms_and_links_of_their_role() {
    let s = spec();
    let ctx = s.context_for("junior_analyst", "analyze_trends", "k");
    assert_eq!(ctx.verdict, Deontic::Prohibited);
    assert_eq!(ctx.goals, vec!["g1".to_owned()]);
    let ids: Vec<&str> = ctx.norms.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(ids, vec!["n2", "n5"]);
    assert_eq!(ctx.links.len(), 2, "both links touch data_analyst");
    assert_eq!(
        ctx.brief(),
        "Organisation `DataAnalysisTeam`: you act as role `junior_analyst`; you are prohibited from this task; report a failure. The task serves goal(s) g1.\n\
         Norm n2: data_analyst permitted g1.\n\
         Norm n5: junior_analyst prohibited g1.\n\
         Link: leader has authority over data_analyst.\n\
         Link: data_analyst communicates with reporter."
    );
}
