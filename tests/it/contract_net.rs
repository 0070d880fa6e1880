//! Contract net: tenders by the weighted formula, late proposals, fallback
//! to scoring, proposals from worker endpoints, and racing replicas.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::{
    governance::{dispatch_of, token},
    helpers::*,
};

async fn register(app: &TestApp, id: &str, url: &str) {
    let (status, body) = app
        .post(
            "/v1/agents",
            json!({"agent_id": id, "role": "designer", "skills": ["design"], "tools": [],
                   "endpoint_url": url, "max_concurrency": 4}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// A three-task mission, approved and running, whose `build` task (design)
/// is allocated by tender with `window_ms` (every task when `whole_mission`);
/// the two writing tasks go to `scribe`. Returns (mission id, build task id).
async fn tendered_mission(
    app: &TestApp,
    url: &str,
    window_ms: i64,
    whole_mission: bool,
) -> (String, String) {
    let (status, body) = app
        .post(
            "/v1/agents",
            json!({"agent_id": "scribe", "role": "writer", "skills": ["writing"], "tools": [],
                   "endpoint_url": url, "max_concurrency": 4}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let task = |id: &str, skill: &str| {
        json!({"id": id, "title": format!("Do {id}"), "task_type": skill,
               "required_skills": [skill], "estimated_cost": 0.01,
               "success_criteria": [{"description": "done", "must_pass": true}]})
    };
    let plan = json!({"tasks": [task("build", "design"), task("notes", "writing"), task("summary", "writing")]});
    let m = app
        .create_mission(json!({"goal": "Build a dashboard", "autonomy": "approve", "plan": plan}))
        .await;
    let id = m["id"].as_str().unwrap().to_owned();
    let build = m["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["key"] == "build")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    if whole_mission {
        let (status, body) = app
            .request(
                Method::PUT,
                &format!("/v1/missions/{id}/allocation"),
                Some(json!({"allocation": "tender", "tender_window_ms": window_ms})),
                Some(&app.token),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    } else {
        let (status, body) = app
            .post(
                "/v1/tenders",
                json!({"task_id": build, "window_ms": window_ms}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (status, body) = app
        .post(&format!("/v1/missions/{id}/approve"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    (id, build)
}

/// The build task's tender once it satisfies `pred`.
async fn tender_where(
    app: &TestApp,
    mission: &str,
    task: &str,
    what: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    wait_until(what, || async {
        let (_, list) = app.get(&format!("/v1/tenders?mission={mission}")).await;
        list["tenders"]
            .as_array()?
            .iter()
            .find(|t| t["task_id"] == task && pred(t))
            .cloned()
    })
    .await
}

/// Succeeds every task of the mission as the manual worker receives it.
async fn finish(app: &TestApp, worker: &ManualWorker, mission: &str) {
    let mut next = 1;
    loop {
        let (_, m) = app.get(&format!("/v1/missions/{mission}")).await;
        if ["completed", "awaiting_review"].contains(&m["status"].as_str().unwrap_or("")) {
            return;
        }
        if worker.count() >= next {
            let d = worker.dispatch(next).await;
            succeed(&app.http, &d, json!({"ok": true}), 0.01).await;
            next += 1;
        } else {
            wait_until("another dispatch or the end", || async {
                let (_, m) = app.get(&format!("/v1/missions/{mission}")).await;
                (worker.count() >= next
                    || ["completed", "awaiting_review"]
                        .contains(&m["status"].as_str().unwrap_or("")))
                .then_some(())
            })
            .await;
        }
    }
}

async fn count_messages(
    app: &TestApp,
    tender: &str,
    performative: &str,
    agent: Option<&str>,
) -> i64 {
    sqlx::query_scalar::<_, i64>(
        "SELECT count(*) FROM agent_messages m JOIN message_recipients r ON r.message_id = m.id
         WHERE m.conversation_id = $1::uuid AND m.performative = $2 AND ($3::text IS NULL OR r.agent_id = $3)",
    )
    .bind(tender)
    .bind(performative)
    .bind(agent)
    .fetch_one(&app.pool)
    .await
    .expect("count")
}

fn proposal(cap: f64, effort: f64, cost: f64, confidence: f64, conditions: &[&str]) -> Value {
    json!({"capability_match": cap, "estimated_effort": effort, "estimated_cost": cost,
           "confidence": confidence, "conditions": conditions})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_formula_picks_the_winner_and_every_proposer_is_told() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    for a in ["alpha", "bravo", "charlie"] {
        register(&app, a, &worker.url).await;
    }
    let (mission, build) = tendered_mission(&app, &worker.url, 60_000, false).await;
    let t = tender_where(&app, &mission, &build, "an open tender", |t| {
        t["status"] == "open"
    })
    .await;
    let tid = t["id"].as_str().unwrap().to_owned();
    assert_eq!(t["eligible_agents"], json!(["alpha", "bravo", "charlie"]));
    assert_eq!(count_messages(&app, &tid, "PROPOSE", None).await, 3);

    let path = format!("/v1/tenders/{tid}/proposals");
    // alpha: .8*.35 + (1-.5)*.25 + .8*.25 + (1/3)*.15 = 0.655
    // bravo: .5*.35 + (1-1)*.25 + .9*.25 + (1/2)*.15 = 0.475
    // charlie: 1*.35 + (1-0)*.25 + .5*.25 + 1*.15 = 0.875 — the winner, though last by name.
    let bids = [
        (
            "alpha",
            proposal(0.8, 15.0, 200.0, 0.8, &["db access", "review at 50%"]),
        ),
        ("bravo", proposal(0.5, 20.0, 300.0, 0.9, &["db access"])),
        ("charlie", proposal(1.0, 10.0, 100.0, 0.5, &[])),
    ];
    let alpha = token(&app, "agent", Some("alpha")).await;
    // An agent proposes only as itself.
    let mut forged = bids[1].1.clone();
    forged["agent_id"] = json!("bravo");
    let (status, _) = app
        .request(Method::POST, &path, Some(forged), Some(&alpha))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Bad input changes nothing.
    let (status, _) = app
        .request(
            Method::POST,
            &path,
            Some(proposal(0.5, 1.0, 1.0, 1.5, &[])),
            Some(&alpha),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    for (agent, bid) in &bids {
        let tok = token(&app, "agent", Some(agent)).await;
        let (status, body) = app
            .request(Method::POST, &path, Some(bid.clone()), Some(&tok))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        // The same proposal again is the same proposal.
        let (status, again) = app
            .request(Method::POST, &path, Some(bid.clone()), Some(&tok))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{again}");
        assert_eq!(again["id"], body["id"]);
    }
    // Everyone answered: the award does not wait for the deadline.
    let t = tender_where(&app, &mission, &build, "the award", |t| {
        t["status"] == "awarded"
    })
    .await;
    assert_eq!(t["winner_agent_id"], "charlie", "{t}");
    let ranking: Vec<(&str, f64)> = t["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["agent_id"].as_str().unwrap(),
                r["score"].as_f64().unwrap(),
            )
        })
        .collect();
    let expected = [("charlie", 0.875), ("alpha", 0.655), ("bravo", 0.475)];
    for ((a, s), (ea, es)) in ranking.iter().zip(expected) {
        assert_eq!(*a, ea);
        assert!((s - es).abs() < 1e-9, "{a}: {s} vs {es}");
    }
    assert_eq!(
        count_messages(&app, &tid, "ACCEPT", Some("charlie")).await,
        1
    );
    assert_eq!(count_messages(&app, &tid, "ACCEPT", None).await, 1);
    assert_eq!(count_messages(&app, &tid, "REJECT", Some("alpha")).await, 1);
    assert_eq!(count_messages(&app, &tid, "REJECT", Some("bravo")).await, 1);
    // The task runs on the winner.
    let d = dispatch_of(&worker, "build").await;
    assert_eq!(d.agent_id, "charlie");
    finish(&app, &worker, &mission).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_proposals_are_refused() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    register(&app, "alpha", &worker.url).await;
    register(&app, "bravo", &worker.url).await;
    let (_, task_id) = tendered_mission(&app, &worker.url, 300, false).await;
    let (_, list) = app.get("/v1/tenders").await;
    let t = list["tenders"][0].clone();
    assert_eq!(t["task_id"], task_id.as_str(), "{t}");
    // A second tender for the same task is refused.
    let (status, body) = app.post("/v1/tenders", json!({"task_id": task_id})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let deadline = time::OffsetDateTime::parse(
        t["deadline"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    wait_until("the deadline to pass", || async {
        (time::OffsetDateTime::now_utc() > deadline + time::Duration::milliseconds(50))
            .then_some(())
    })
    .await;
    let tok = token(&app, "agent", Some("alpha")).await;
    let (status, body) = app
        .request(
            Method::POST,
            &format!("/v1/tenders/{}/proposals", t["id"].as_str().unwrap()),
            Some(proposal(1.0, 1.0, 1.0, 1.0, &[])),
            Some(&tok),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "tender_closed");
    let (_, shown) = app
        .get(&format!("/v1/tenders/{}", t["id"].as_str().unwrap()))
        .await;
    assert_eq!(shown["proposals"], json!([]), "{shown}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_proposals_by_the_deadline_falls_back_to_scoring() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    register(&app, "alpha", &worker.url).await;
    register(&app, "bravo", &worker.url).await;
    let (mission, build) = tendered_mission(&app, &worker.url, 300, true).await;
    let t = tender_where(&app, &mission, &build, "the tender to close", |t| {
        t["status"] != "open"
    })
    .await;
    assert_eq!(t["status"], "no_proposals", "{t}");
    // Scoring chose an agent and the task still runs.
    let d = dispatch_of(&worker, "build").await;
    assert!(["alpha", "bravo"].contains(&d.agent_id.as_str()));
    finish(&app, &worker, &mission).await;
    let (_, page) = app
        .get(&format!("/v1/missions/{mission}/events?limit=1000"))
        .await;
    let kinds: Vec<&str> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"tender.opened") && kinds.contains(&"tender.no_proposals"),
        "{kinds:?}"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_answer_the_cfp_at_their_endpoint() {
    let app = spawn_app().await;
    let worker = spawn_worker(20).await;
    register(&app, "delta", &worker.url()).await;
    register(&app, "echo", &worker.url()).await;
    // A long window: only the workers' answers can close it early.
    let (mission, build) = tendered_mission(&app, &worker.url(), 600_000, false).await;
    let t = tender_where(&app, &mission, &build, "the award", |t| {
        t["status"] == "awarded"
    })
    .await;
    let via: Vec<&str> = t["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["via"].as_str().unwrap())
        .collect();
    assert_eq!(via, ["endpoint", "endpoint"], "{t}");
    // Equal proposals: the tie goes to the smallest agent id.
    assert_eq!(t["winner_agent_id"], "delta");
    assert!(worker.stats().cfps >= 2);
    app.wait_for_status(&mission, &["completed", "awaiting_review"])
        .await;
    assert_eq!(
        task(&app, &mission, "build").await["assigned_agent_id"],
        "delta"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_racing_the_award_make_one_award() {
    let db = fresh_database().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let other = IsolatedReplica::spawn(&db, test_settings()).await;
    let worker = ManualWorker::spawn().await;
    for a in ["alpha", "bravo", "charlie"] {
        register(&app, a, &worker.url).await;
    }
    let (mission, build) = tendered_mission(&app, &worker.url, 600_000, false).await;
    let t = tender_where(&app, &mission, &build, "an open tender", |t| {
        t["status"] == "open"
    })
    .await;
    let tid = t["id"].as_str().unwrap().to_owned();
    for (agent, bid) in [
        ("alpha", proposal(0.9, 5.0, 10.0, 0.9, &[])),
        ("bravo", proposal(0.7, 2.0, 5.0, 0.6, &["x"])),
    ] {
        let mut bid = bid;
        bid["agent_id"] = json!(agent);
        let (status, body) = app.post(&format!("/v1/tenders/{tid}/proposals"), bid).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    // Both replicas award at once.
    let award = |base: String| {
        let http = app.http.clone();
        let token = app.token.clone();
        let tid = tid.clone();
        async move {
            let resp = http
                .post(format!("{base}/v1/tenders/{tid}/award"))
                .bearer_auth(token)
                .send()
                .await
                .expect("award");
            let status = resp.status().as_u16();
            (status, resp.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (a, b) = tokio::join!(award(app.url.clone()), award(other.url.clone()));
    assert_eq!(a.0, 200, "{}", a.1);
    assert_eq!(b.0, 200, "{}", b.1);
    assert_eq!(a.1["winner_agent_id"], b.1["winner_agent_id"]);
    assert_eq!(count_messages(&app, &tid, "ACCEPT", None).await, 1);
    assert_eq!(count_messages(&app, &tid, "REJECT", None).await, 1);
    let awarded: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM orchestration_events WHERE kind = 'tender.awarded' AND payload->>'tender_id' = $1",
    )
    .bind(&tid)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(awarded, 1);
    let d = dispatch_of(&worker, "build").await;
    assert_eq!(Some(d.agent_id.as_str()), a.1["winner_agent_id"].as_str());
    other.kill();
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mission_created_for_tender_allocates_every_task_by_tender() {
    let app = spawn_app().await;
    let worker = spawn_worker(20).await;
    register(&app, "delta", &worker.url()).await;
    register(&app, "echo", &worker.url()).await;
    let task = |id: &str| {
        json!({"id": id, "title": format!("Do {id}"), "task_type": "design",
               "required_skills": ["design"], "estimated_cost": 0.01,
               "success_criteria": [{"description": "done", "must_pass": true}]})
    };
    let plan = json!({"tasks": [task("one"), task("two"), task("three")]});
    // Bad settings are refused and create nothing.
    for bad in [
        json!({"allocation": "auction"}),
        json!({"allocation": "tender", "tender_window_ms": 5}),
        json!({"tender_window_ms": 1000}),
    ] {
        let mut body = json!({"goal": "Design three screens", "plan": plan.clone()});
        body.as_object_mut()
            .unwrap()
            .extend(bad.as_object().unwrap().clone());
        let (s, b) = app.post("/v1/missions", body).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{b}");
    }
    let (_, list) = app.get("/v1/missions").await;
    assert!(list["missions"].as_array().unwrap().is_empty());

    let m = app
        .create_mission(
            json!({"goal": "Design three screens", "autonomy": "autonomous",
                               "plan": plan, "allocation": "tender", "tender_window_ms": 600000}),
        )
        .await;
    let id = m["id"].as_str().unwrap();
    app.wait_for_status(id, &["completed"]).await;
    // Every task was awarded through a tender answered at the workers' endpoint.
    let (_, tenders) = app.get(&format!("/v1/tenders?mission={id}")).await;
    let tenders = tenders["tenders"].as_array().unwrap().clone();
    assert_eq!(tenders.len(), 3, "{tenders:?}");
    assert!(
        tenders.iter().all(|t| t["status"] == "awarded"),
        "{tenders:?}"
    );
    app.stop().await;
}
