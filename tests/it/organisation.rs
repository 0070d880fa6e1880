//! Organisation specs: validated on upload (invalid ones change nothing),
//! enforced by the scorer (a prohibited role never gets the task, an obliged
//! one wins over better-scoring agents), carried to workers in the dispatch,
//! and role cardinality respected by registration and contractor hiring.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::{governance::token, helpers::*};

fn agent(id: &str, role: &str, trust: f64, endpoint: &str) -> Value {
    json!({"agent_id": id, "role": role, "skills": ["research"], "tools": [],
           "endpoint_url": endpoint, "max_concurrency": 2, "trust": trust})
}

async fn register(app: &TestApp, body: Value) -> (StatusCode, Value) {
    app.post("/v1/agents", body).await
}

async fn put_spec(app: &TestApp, spec: Value, version: Option<i64>) -> (StatusCode, Value) {
    let mut body = json!({ "spec": spec });
    if let Some(v) = version {
        body["version"] = json!(v);
    }
    app.request(Method::PUT, "/v1/org-spec", Some(body), Some(&app.token))
        .await
}

/// Research is goal `g_research`; juniors must not do it.
fn spec(extra_norms: Value) -> Value {
    let mut norms = vec![
        json!({"id": "no-juniors", "role": "junior", "modality": "prohibition", "target": "g_research"}),
    ];
    norms.extend(extra_norms.as_array().cloned().unwrap_or_default());
    json!({
        "name": "research-team",
        "roles": [
            {"id": "lead", "cardinality": {"min": 1, "max": 1}},
            {"id": "senior"},
            {"id": "junior", "cardinality": {"max": 2}}
        ],
        "groups": [{"id": "team", "roles": ["lead", "senior", "junior"]}],
        "links": [{"from": "lead", "to": "senior", "kind": "authority"}],
        "missions": [{"id": "m_study", "goals": [{"id": "g_research", "plan": ["research"]}]}],
        "norms": norms
    })
}

/// A mission of three tasks (`(key, type, skill)`), chained or side by side.
fn mission(goal: &str, tasks: &[(&str, &str, &str)], chained: bool) -> Value {
    let tasks: Vec<Value> = tasks
        .iter()
        .enumerate()
        .map(|(i, (key, task_type, skill))| {
            let deps: Vec<&str> = if chained && i > 0 {
                vec![tasks[i - 1].0]
            } else {
                vec![]
            };
            json!({"id": key, "title": format!("Do {key}"), "task_type": task_type,
                   "required_skills": [skill], "depends_on": deps,
                   "success_criteria": [{"description": "done", "must_pass": true}],
                   "estimated_cost": 0.01})
        })
        .collect();
    json!({"goal": goal, "autonomy": "autonomous", "plan": {"tasks": tasks}})
}

const STUDIES: [(&str, &str, &str); 3] = [
    ("s1", "research", "research"),
    ("s2", "research", "research"),
    ("s3", "research", "research"),
];

/// Takes dispatches `from..=to` off the worker, answers them, returns their agents.
async fn run_through(app: &TestApp, worker: &ManualWorker, from: usize, to: usize) -> Vec<String> {
    let mut agents = Vec::new();
    for n in from..=to {
        let d = worker.dispatch(n).await;
        agents.push(d.agent_id.clone());
        succeed(&app.http, &d, json!("done"), 0.0).await;
    }
    agents
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn specs_are_validated_on_upload_and_invalid_ones_change_nothing() {
    let app = spawn_app().await;
    let (s, body) = app.get("/v1/org-spec").await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{body}");

    // Every problem at once, with codes and paths; nothing stored.
    let mut bad = spec(json!([
        {"id": "n2", "role": "ghost", "modality": "permission", "target": "g_research"},
        {"id": "n3", "role": "senior", "modality": "obligation", "target": "nowhere"}
    ]));
    bad["roles"][0]["cardinality"] = json!({"min": 3, "max": 1});
    let (s, body) = put_spec(&app, bad.clone(), None).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "org_spec_invalid");
    let mut codes: Vec<&str> = body["error"]["details"]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["code"].as_str().unwrap())
        .collect();
    codes.sort();
    assert_eq!(
        codes,
        ["cardinality_invalid", "unknown_role", "unknown_target"]
    );
    // An unknown modality is a 422 too, not a 400 or 500.
    let mut odd = spec(json!([]));
    odd["norms"][0]["modality"] = json!("maybe");
    let (s, body) = put_spec(&app, odd, None).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(
        body["error"]["details"]["problems"][0]["code"],
        "spec_malformed"
    );
    let (s, _) = app.get("/v1/org-spec").await;
    assert_eq!(s, StatusCode::NOT_FOUND, "invalid uploads stored nothing");

    // Dry run says the same without storing.
    let (s, v) = app.post("/v1/org-spec/validate", bad).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["valid"], false);
    assert_eq!(v["problems"].as_array().unwrap().len(), 3);

    // Only admins and operators upload.
    let stakeholder = token(&app, "stakeholder", None).await;
    let (s, _) = app
        .request(
            Method::PUT,
            "/v1/org-spec",
            Some(json!({"spec": spec(json!([]))})),
            Some(&stakeholder),
        )
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);

    // A valid one is stored, versioned, and shows staffing.
    let (s, stored) = put_spec(&app, spec(json!([])), Some(0)).await;
    assert_eq!(s, StatusCode::OK, "{stored}");
    assert_eq!(stored["version"], 1);
    assert_eq!(stored["spec"]["name"], "research-team");
    assert_eq!(stored["staffing"][0]["role"], "lead");
    assert_eq!(stored["staffing"][0]["status"], "understaffed");
    // Optimistic versions: 0 means "only if none", a stale one conflicts.
    let (s, body) = put_spec(&app, spec(json!([])), Some(0)).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    let (s, body) = put_spec(&app, spec(json!([])), Some(1)).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["version"], 2);
    let (s, body) = put_spec(&app, spec(json!([])), Some(1)).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "version_conflict");

    // Uploads are in the workspace's event log (pages follow the
    // commit-ordered cursor, so the newest may show a moment later).
    wait_until("two org_spec.updated events", || async {
        let (s, page) = app.get("/v1/events?kind=org_spec.*").await;
        assert_eq!(s, StatusCode::OK, "{page}");
        (page["events"].as_array().map(Vec::len) == Some(2)).then_some(())
    })
    .await;

    // Removal.
    let (s, _) = app
        .request(Method::DELETE, "/v1/org-spec", None, Some(&app.token))
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (s, _) = app
        .request(Method::DELETE, "/v1/org-spec", None, Some(&app.token))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scorer_never_picks_a_prohibited_role_and_prefers_an_obliged_one() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    // Without a spec the junior (full trust) would win every time.
    for (id, role, trust) in [
        ("a-junior", "junior", 1.0),
        ("b-senior", "senior", 0.1),
        ("c-lead", "lead", 0.5),
    ] {
        let (s, b) = register(&app, agent(id, role, trust, &worker.url)).await;
        assert_eq!(s, StatusCode::CREATED, "{b}");
    }
    let (s, b) = put_spec(&app, spec(json!([])), None).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    let (s, v) = app
        .get("/v1/org-spec/verdicts?task_type=research&task_key=study")
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["goals"], json!(["g_research"]));
    let verdicts: Vec<(&str, &str)> = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["agent_id"].as_str().unwrap(),
                a["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("a-junior", "prohibited"),
            ("b-senior", "permitted"),
            ("c-lead", "permitted")
        ]
    );

    // Prohibited: the junior is skipped; the best permitted agent wins.
    let m1 = app
        .create_mission(mission("first study", &STUDIES, true))
        .await;
    let d1 = worker.dispatch(1).await;
    assert_eq!(d1.agent_id, "c-lead");
    // The worker is told the organisation as it bears on it.
    let org = serde_json::to_value(d1.organisation.as_ref().expect("organisation")).unwrap();
    assert_eq!(org["role"], "lead");
    assert_eq!(org["verdict"], "permitted");
    assert_eq!(org["goals"], json!(["g_research"]));
    assert_eq!(org["links"][0]["kind"], "authority");
    assert_eq!(org["spec"]["name"], "research-team");
    succeed(&app.http, &d1, json!("done"), 0.0).await;
    assert_eq!(run_through(&app, &worker, 2, 3).await, ["c-lead", "c-lead"]);
    app.wait_for_status(m1["id"].as_str().unwrap(), &["completed"])
        .await;

    // Obliged: the senior wins although it scores lowest.
    let (s, b) = put_spec(
        &app,
        spec(json!([{"id": "seniors-must", "role": "senior", "modality": "obligation", "target": "m_study"}])),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    let m2 = app
        .create_mission(mission("second study", &STUDIES, true))
        .await;
    let d4 = worker.dispatch(4).await;
    assert_eq!(d4.agent_id, "b-senior");
    assert_eq!(
        serde_json::to_value(&d4.organisation).unwrap()["verdict"],
        "obliged"
    );
    succeed(&app.http, &d4, json!("done"), 0.0).await;
    assert_eq!(
        run_through(&app, &worker, 5, 6).await,
        ["b-senior", "b-senior"]
    );
    app.wait_for_status(m2["id"].as_str().unwrap(), &["completed"])
        .await;
    // Three at once: the senior's two slots fill, the third goes to the
    // best permitted agent — never to the junior.
    let m3 = app
        .create_mission(mission("third study", &STUDIES, false))
        .await;
    let mut got = run_through(&app, &worker, 7, 9).await;
    got.sort();
    assert_eq!(got, ["b-senior", "b-senior", "c-lead"]);
    app.wait_for_status(m3["id"].as_str().unwrap(), &["completed"])
        .await;
    let (junior,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM task_attempts WHERE agent_id = 'a-junior'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(junior, 0, "a prohibited role never got a task");

    // Without the spec the junior is back in front (the norms did the work).
    let (s, _) = app
        .request(Method::DELETE, "/v1/org-spec", None, Some(&app.token))
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    app.create_mission(mission("fourth study", &STUDIES, true))
        .await;
    let d10 = worker.dispatch(10).await;
    assert_eq!(d10.agent_id, "a-junior");
    assert!(d10.organisation.is_none());
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cardinality_caps_registration_and_contractor_hiring() {
    let worker = ManualWorker::spawn().await;
    let mut settings = test_settings();
    settings.engine.contractor_url = Some(worker.url.clone());
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let (s, b) = put_spec(
        &app,
        json!({
            "roles": [
                {"id": "researcher", "cardinality": {"max": 1}},
                {"id": "translator", "cardinality": {"max": 1}},
                {"id": "contractor", "cardinality": {"max": 0}}
            ],
            "missions": [{"id": "m", "goals": [{"id": "g_translate", "plan": ["translation"]}]}],
            "norms": [{"id": "n", "role": "translator", "modality": "obligation", "target": "g_translate"}]
        }),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    // Registration: one researcher, not two.
    let (s, b) = register(&app, agent("r1", "researcher", 0.5, &worker.url)).await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    let (s, b) = register(&app, agent("r2", "Researcher", 0.5, &worker.url)).await;
    assert_eq!(s, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["error"]["code"], "role_full");
    assert_eq!(b["error"]["details"]["max"], 1);
    let (s, _) = app.get("/v1/agents/r2").await;
    assert_eq!(
        s,
        StatusCode::NOT_FOUND,
        "a refused registration adds nobody"
    );

    // Nobody translates: the first mission hires a contractor into the
    // obliged role, which fills it. (r1 takes the research.)
    let work = [
        ("t", "translation", "translation"),
        ("ra", "research", "research"),
        ("rb", "research", "research"),
    ];
    let m1 = app.create_mission(mission("first", &work, false)).await;
    let mut first = Vec::new();
    for n in 1..=3 {
        first.push(worker.dispatch(n).await);
    }
    let t1 = first
        .iter()
        .find(|d| d.task.key == "t")
        .expect("t dispatched");
    assert!(t1.agent_id.starts_with("contractor-"), "{}", t1.agent_id);
    let (_, hired) = app.get(&format!("/v1/agents/{}", t1.agent_id)).await;
    assert_eq!(hired["role"], "translator", "hired into the obliged role");
    for d in first.iter().filter(|d| d.task.key != "t") {
        assert_eq!(d.agent_id, "r1");
        succeed(&app.http, d, json!("done"), 0.0).await;
    }

    // A second mission cannot hire while the translator role is full (and
    // the fallback `contractor` role is capped at 0); its research tasks,
    // claimed alongside, show the claims looked at it.
    let m2 = app.create_mission(mission("second", &work, false)).await;
    for n in 4..=5 {
        let d = worker.dispatch(n).await;
        assert_ne!(d.task.key, "t", "no translator could be hired");
        succeed(&app.http, &d, json!("done"), 0.0).await;
    }
    let m2_id = m2["id"].as_str().unwrap();
    wait_task(&app, m2_id, "ra", "succeeded").await;
    wait_task(&app, m2_id, "rb", "succeeded").await;
    assert_eq!(worker.count(), 5, "no second translator was hired");
    let (live,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM agents WHERE role = 'translator' AND status <> 'offline'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(live, 1);

    // The first mission ends, its contractor retires, the role has room:
    // the second mission hires.
    succeed(&app.http, t1, json!("done"), 0.0).await;
    app.wait_for_status(m1["id"].as_str().unwrap(), &["completed"])
        .await;
    let t2 = worker.dispatch(6).await;
    assert_eq!(t2.task.key, "t");
    assert_ne!(t2.agent_id, t1.agent_id);
    succeed(&app.http, &t2, json!("done"), 0.0).await;
    app.wait_for_status(m2_id, &["completed"]).await;
    // Never two live translators: the second hire came after the retirement.
    let order: Vec<String> = sqlx::query_scalar(
        "SELECT kind FROM orchestration_events
         WHERE kind IN ('agent.contractor_hired', 'agent.contractors_retired') ORDER BY id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        order,
        [
            "agent.contractor_hired",
            "agent.contractors_retired",
            "agent.contractor_hired",
            "agent.contractors_retired"
        ]
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenders_call_only_roles_the_spec_does_not_prohibit() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    for (id, role) in [
        ("a-junior", "junior"),
        ("b-senior", "senior"),
        ("c-lead", "lead"),
    ] {
        let (s, b) = register(&app, agent(id, role, 0.5, &worker.url)).await;
        assert_eq!(s, StatusCode::CREATED, "{b}");
    }
    let (s, b) = put_spec(&app, spec(json!([])), None).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    let mut body = mission("tendered study", &STUDIES, true);
    body["allocation"] = json!("tender");
    body["tender_window_ms"] = json!(600_000);
    let m = app.create_mission(body).await;
    let id = m["id"].as_str().unwrap().to_owned();
    let tender = wait_until("a tender for the first study", || async {
        let (_, page) = app.get(&format!("/v1/tenders?mission={id}")).await;
        page["tenders"].as_array().and_then(|t| t.first().cloned())
    })
    .await;
    assert_eq!(tender["eligible_agents"], json!(["b-senior", "c-lead"]));
    app.stop().await;
}
