//! The human workforce: contractors and trust, work packages and their
//! lifecycle, auto-matching, and a mission task delegated to a person.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

/// Registers a contractor; returns its id.
pub async fn contractor(app: &TestApp, name: &str, skills: &[&str]) -> String {
    let (s, c) = app
        .post(
            "/v1/contractors",
            json!({"name": name, "skills": skills, "hourly_rate": 85, "availability": "part-time",
                   "contact": format!("{name}@example.com")}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{c}");
    assert_eq!(c["trust_score"], 0.5);
    c["id"].as_str().unwrap().to_owned()
}

/// Creates a draft package; returns it.
async fn package(app: &TestApp, skills: &[&str]) -> Value {
    let (s, p) = app
        .post(
            "/v1/work-packages",
            json!({"title": "Dashboard", "description": "Build it", "required_skills": skills,
                   "priority": "high", "deadline": "2026-04-01", "budget": 15000}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{p}");
    assert_eq!(p["status"], "draft");
    p
}

async fn move_to(app: &TestApp, p: &Value, body: Value) -> (StatusCode, Value) {
    app.post(
        &format!("/v1/work-packages/{}/transition", p["id"].as_str().unwrap()),
        body,
    )
    .await
}

async fn get_package(app: &TestApp, p: &Value) -> Value {
    let (s, p) = app
        .get(&format!("/v1/work-packages/{}", p["id"].as_str().unwrap()))
        .await;
    assert_eq!(s, StatusCode::OK, "{p}");
    p
}

/// Runs a package from draft to completed with `rating`, assigned to `who`.
async fn complete_with(app: &TestApp, who: &str, skills: &[&str], rating: &str) -> Value {
    let p = package(app, skills).await;
    for body in [
        json!({"to": "open"}),
        json!({"to": "assigned", "contractor_id": who}),
        json!({"to": "in_progress", "progress": 10}),
        json!({"to": "review", "deliverable": {"url": "https://example.com/x"}}),
        json!({"to": "completed", "quality_rating": rating, "reason": "rated"}),
    ] {
        let (s, body) = move_to(app, &p, body).await;
        assert_eq!(s, StatusCode::OK, "{body}");
    }
    get_package(app, &p).await
}

async fn trust(app: &TestApp, id: &str) -> Value {
    let (s, c) = app.get(&format!("/v1/contractors/{id}")).await;
    assert_eq!(s, StatusCode::OK, "{c}");
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn package_lifecycle_refuses_illegal_moves_and_cancels_from_anywhere() {
    let app = spawn_app().await;
    let jane = contractor(&app, "jane", &["react", "typescript"]).await;
    let p = package(&app, &["react"]).await;

    // Skipping ahead is refused and changes nothing.
    let (s, body) = move_to(
        &app,
        &p,
        json!({"to": "completed", "quality_rating": "good"}),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "illegal_transition");
    assert_eq!(body["error"]["details"]["from"], "draft");
    assert_eq!(body["error"]["details"]["to"], "completed");
    let now = get_package(&app, &p).await;
    assert_eq!(now["status"], "draft");
    assert_eq!(now["version"], p["version"]);
    let (s, body) = move_to(&app, &p, json!({"to": "in_progress"})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    // Bad input is a 400: completion without a rating, an unknown status.
    let (s, body) = move_to(&app, &p, json!({"to": "completed"})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let (s, body) = move_to(&app, &p, json!({"to": "sideways"})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");

    // The seed's path, with a stale version refused on the way.
    let (s, opened) = move_to(&app, &p, json!({"to": "open", "version": p["version"]})).await;
    assert_eq!(s, StatusCode::OK, "{opened}");
    assert_eq!(opened["candidates"][0]["contractor_id"], jane.as_str());
    let (s, body) = move_to(&app, &p, json!({"to": "assigned", "version": p["version"]})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "version_conflict");
    assert_eq!(get_package(&app, &p).await["status"], "open");
    let (s, assigned) = app
        .post(
            &format!("/v1/work-packages/{}/assign", p["id"].as_str().unwrap()),
            json!({"version": opened["version"]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{assigned}");
    assert_eq!(assigned["status"], "assigned");
    assert_eq!(assigned["contractor_id"], jane.as_str());
    for to in ["in_progress", "review"] {
        let (s, body) = move_to(&app, &p, json!({"to": to})).await;
        assert_eq!(s, StatusCode::OK, "{body}");
    }
    let (s, body) = app
        .post(
            &format!("/v1/work-packages/{}/progress", p["id"].as_str().unwrap()),
            json!({"progress": 90, "note": "almost"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["notes"][0]["text"], "almost");
    let (s, done) = move_to(
        &app,
        &p,
        json!({"to": "completed", "quality_rating": "good"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{done}");
    assert_eq!(done["progress"], 100);
    let history: Vec<&str> = done["status_history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        history,
        [
            "draft",
            "open",
            "assigned",
            "in_progress",
            "review",
            "completed"
        ]
    );

    // Completed is final: reopening and cancelling are refused, nothing changes.
    for to in ["open", "cancelled", "review"] {
        let (s, body) = move_to(&app, &p, json!({"to": to})).await;
        assert_eq!(s, StatusCode::CONFLICT, "{to}: {body}");
        assert_eq!(body["error"]["code"], "illegal_transition");
        assert_eq!(body["error"]["details"]["from"], "completed");
    }
    let now = get_package(&app, &p).await;
    assert_eq!(now["version"], done["version"]);
    assert_eq!(now["status"], "completed");

    // Any status that is not final can be cancelled; cancelling twice is a no-op.
    let (draft, open, in_progress) = (
        package(&app, &["react"]).await,
        package(&app, &["react"]).await,
        package(&app, &["react"]).await,
    );
    move_to(&app, &open, json!({"to": "open"})).await;
    for body in [
        json!({"to": "open"}),
        json!({"to": "assigned"}),
        json!({"to": "in_progress"}),
    ] {
        let (s, b) = move_to(&app, &in_progress, body).await;
        assert_eq!(s, StatusCode::OK, "{b}");
    }
    for p in [&draft, &open, &in_progress] {
        let (s, cancelled) =
            move_to(&app, p, json!({"to": "cancelled", "reason": "scope cut"})).await;
        assert_eq!(s, StatusCode::OK, "{cancelled}");
        assert_eq!(cancelled["status"], "cancelled");
        let (s, again) = move_to(&app, p, json!({"to": "cancelled"})).await;
        assert_eq!(s, StatusCode::OK, "{again}");
        assert_eq!(again["version"], cancelled["version"]);
        let (s, body) = move_to(&app, p, json!({"to": "open"})).await;
        assert_eq!(s, StatusCode::CONFLICT, "{body}");
    }
    let (s, body) = app.get("/v1/work-packages?status=cancelled").await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["work_packages"].as_array().unwrap().len(), 3);

    // The transitions were logged as workspace events.
    let n: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM orchestration_events WHERE kind = 'work_package.status_changed'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(n, 5 + 1 + 3 + 3);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_matching_ranks_by_overlap_times_trust_and_excludes() {
    let app = spawn_app().await;
    let full = contractor(&app, "full", &["react", "typescript", "d3"]).await;
    let two = contractor(&app, "two", &["React", "typescript"]).await;
    let one = contractor(&app, "one", &["d3", "cooking"]).await;
    let distrusted = contractor(&app, "distrusted", &["react", "typescript", "d3"]).await;
    let away = contractor(&app, "away", &["react", "typescript", "d3"]).await;
    let _unrelated = contractor(&app, "unrelated", &["cooking"]).await;
    // `full` earned trust; `distrusted` lost it (below the 0.5 threshold).
    sqlx::query("UPDATE workforce_contractors SET trust_score = 0.8 WHERE id = $1::uuid")
        .bind(&full)
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE workforce_contractors SET trust_score = 0.4 WHERE id = $1::uuid")
        .bind(&distrusted)
        .execute(&app.pool)
        .await
        .unwrap();
    let (s, body) = app
        .request(
            reqwest::Method::PATCH,
            &format!("/v1/contractors/{away}"),
            Some(json!({"availability": "unavailable"})),
            Some(&app.token),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");

    let p = package(&app, &["react", "typescript", "d3"]).await;
    assert_eq!(p["candidates"], json!([]), "drafts are not matched");
    let (s, opened) = move_to(&app, &p, json!({"to": "open"})).await;
    assert_eq!(s, StatusCode::OK, "{opened}");
    let candidates = opened["candidates"].as_array().unwrap();
    let ids: Vec<&str> = candidates
        .iter()
        .map(|c| c["contractor_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [full.as_str(), two.as_str(), one.as_str()]);
    let scores: Vec<f64> = candidates
        .iter()
        .map(|c| c["score"].as_f64().unwrap())
        .collect();
    assert!((scores[0] - 0.8).abs() < 1e-6, "{scores:?}");
    assert!((scores[1] - 2.0 / 3.0 * 0.5).abs() < 1e-6, "{scores:?}");
    assert!((scores[2] - 1.0 / 3.0 * 0.5).abs() < 1e-6, "{scores:?}");
    // The event carries the candidates too.
    let logged: Value = sqlx::query_scalar(
        "SELECT payload FROM orchestration_events WHERE kind = 'work_package.status_changed' ORDER BY id DESC LIMIT 1",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(logged["candidates"], opened["candidates"]);

    // Assigning an unavailable contractor is refused; the default is the best one.
    let (s, body) = move_to(&app, &p, json!({"to": "assigned", "contractor_id": away})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "contractor_unavailable");
    let (s, body) = move_to(&app, &p, json!({"to": "assigned"})).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["contractor_id"], full.as_str());

    // Nobody matches: proposing nothing, and assigning needs a name.
    let lonely = package(&app, &["cobol"]).await;
    let (_, opened) = move_to(&app, &lonely, json!({"to": "open"})).await;
    assert_eq!(opened["candidates"], json!([]));
    let (s, body) = move_to(&app, &lonely, json!({"to": "assigned"})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "no_candidate");

    // The listing filters the same way.
    let (s, body) = app
        .get("/v1/contractors?skills=react,typescript&min_trust=0.5")
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let names: Vec<&str> = body["contractors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["full", "two", "away"]);
    let (_, body) = app.get("/v1/contractors?availability=unavailable").await;
    assert_eq!(body["contractors"].as_array().unwrap().len(), 1);
    let (s, body) = app.get("/v1/contractors?min_trust=2").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_moves_a_tenth_per_rating_clamped_with_history() {
    let app = spawn_app().await;
    let jane = contractor(&app, "jane", &["python"]).await;
    complete_with(&app, &jane, &["python"], "satisfactory").await;
    let last = complete_with(&app, &jane, &["python"], "excellent").await;
    let c = trust(&app, &jane).await;
    assert_eq!(c["trust_score"], 0.7, "0.5 + 0.1 + 0.1 is exactly 0.7: {c}");
    let history = c["trust_history"].as_array().unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(history[0]["previous_score"], 0.5);
    assert_eq!(history[0]["new_score"], 0.6);
    assert_eq!(history[0]["quality_rating"], "satisfactory");
    assert_eq!(history[1]["new_score"], 0.7);
    assert_eq!(history[1]["work_package_id"], last["id"]);
    assert_eq!(history[1]["reason"], "rated");

    // Completing again with the same rating is a no-op; another rating is refused.
    let (s, again) = move_to(
        &app,
        &last,
        json!({"to": "completed", "quality_rating": "excellent"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{again}");
    assert_eq!(again["version"], last["version"]);
    let (s, body) = move_to(
        &app,
        &last,
        json!({"to": "completed", "quality_rating": "poor"}),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "already_completed");
    assert_eq!(
        trust(&app, &jane).await["trust_history"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // Neutral changes nothing (but is recorded); the bounds hold.
    complete_with(&app, &jane, &["python"], "neutral").await;
    assert_eq!(trust(&app, &jane).await["trust_score"], 0.7);
    sqlx::query("UPDATE workforce_contractors SET trust_score = 0.95 WHERE id = $1::uuid")
        .bind(&jane)
        .execute(&app.pool)
        .await
        .unwrap();
    complete_with(&app, &jane, &["python"], "good").await;
    assert_eq!(trust(&app, &jane).await["trust_score"], 1.0);
    complete_with(&app, &jane, &["python"], "unsatisfactory").await;
    let c = trust(&app, &jane).await;
    assert_eq!(c["trust_score"], 0.9);
    let history = c["trust_history"].as_array().unwrap();
    assert_eq!(history.len(), 5);
    assert_eq!(history[3]["previous_score"], 0.95);
    assert_eq!(history[3]["new_score"], 1.0);
    let rows: i64 =
        sqlx::query_scalar("SELECT count(*) FROM trust_history WHERE contractor_id = $1::uuid")
            .bind(&jane)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(rows, 5);

    let bob = contractor(&app, "bob", &["python"]).await;
    sqlx::query("UPDATE workforce_contractors SET trust_score = 0.05 WHERE id = $1::uuid")
        .bind(&bob)
        .execute(&app.pool)
        .await
        .unwrap();
    complete_with(&app, &bob, &["python"], "poor").await;
    assert_eq!(trust(&app, &bob).await["trust_score"], 0.0);

    // A stale contractor update is refused and changes nothing.
    let c = trust(&app, &bob).await;
    let (s, body) = app
        .request(
            reqwest::Method::PATCH,
            &format!("/v1/contractors/{bob}"),
            Some(json!({"availability": "unavailable", "version": c["version"].as_i64().unwrap() - 1})),
            Some(&app.token),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "version_conflict");
    assert_eq!(trust(&app, &bob).await["availability"], "part-time");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegated_task_waits_for_its_package_and_the_mission_completes() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    let http = reqwest::Client::new();
    // One agent with one slot: of two ready roots, one runs and one waits in the queue.
    let jane = contractor(&app, "jane", &["research", "legal"]).await;
    let (id, first, running, waiting) = two_roots(&app, &worker).await;
    let id = id.as_str();

    // A running task cannot be delegated; a queued one can.
    let (s, body) = app
        .post(
            &format!("/v1/missions/{id}/tasks/{running}/delegate"),
            json!({}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "invalid_state");
    let (s, wp) = app
        .post(
            &format!("/v1/missions/{id}/tasks/{waiting}/delegate"),
            json!({"required_skills": ["legal"], "budget": 100}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{wp}");
    assert_eq!(wp["status"], "open");
    assert_eq!(wp["mission_id"], id);
    assert_eq!(wp["title"], format!("Step {waiting}"));
    assert_eq!(wp["candidates"][0]["contractor_id"], jane.as_str());
    let t = task(&app, id, waiting).await;
    assert_eq!(t["status"], "awaiting_human");
    assert_eq!(wp["task_id"], t["id"]);
    let (s, body) = app
        .post(
            &format!("/v1/missions/{id}/tasks/{waiting}/delegate"),
            json!({}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "already_delegated");

    // The agent's task finishes; the mission waits for the person.
    succeed(&http, &first, json!({"text": "agent work"}), 0.01).await;
    wait_task(&app, id, running, "succeeded").await;
    assert_eq!(task(&app, id, "c").await["status"], "pending");
    assert_eq!(worker.count(), 1, "nothing else is dispatched");
    let (_, mission) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(mission["status"], "executing");

    for body in [
        json!({"to": "assigned"}),
        json!({"to": "in_progress", "note": "started"}),
        json!({"to": "review", "deliverable": {"memo": "legal review done"}}),
    ] {
        let (s, b) = move_to(&app, &wp, body).await;
        assert_eq!(s, StatusCode::OK, "{b}");
    }
    // A stakeholder reviews and accepts it.
    let (s, stake) = app.post("/v1/tokens", json!({"role": "stakeholder"})).await;
    assert_eq!(s, StatusCode::CREATED, "{stake}");
    let stake = stake["token"].as_str().unwrap().to_owned();
    let (s, done) = app
        .request(
            reqwest::Method::POST,
            &format!(
                "/v1/work-packages/{}/transition",
                wp["id"].as_str().unwrap()
            ),
            Some(json!({"to": "completed", "quality_rating": "good", "reason": "solid memo"})),
            Some(&stake),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{done}");
    let t = task(&app, id, waiting).await;
    assert_eq!(t["status"], "succeeded");
    assert_eq!(t["output"]["deliverable"]["memo"], "legal review done");
    assert_eq!(t["output"]["work_package_id"], wp["id"]);
    assert_eq!(t["output"]["notes"][0]["text"], "started");
    assert_eq!(trust(&app, &jane).await["trust_score"], 0.6);

    // Dependents proceed and the mission completes.
    let last = worker.dispatch(2).await;
    assert_eq!(last.task.key, "c");
    succeed(&http, &last, json!({"text": "final"}), 0.01).await;
    app.wait_for_status(id, &["completed"]).await;
    let kinds: Vec<String> = sqlx::query_scalar(
        "SELECT kind FROM orchestration_events WHERE run_id = $1::uuid AND task_id = $2::uuid ORDER BY seq",
    )
    .bind(id)
    .bind(t["id"].as_str().unwrap())
    .fetch_all(&app.pool)
    .await
    .unwrap();
    for k in [
        "work_package.created",
        "task.awaiting_human",
        "work_package.status_changed",
        "task.resolved",
    ] {
        assert!(kinds.iter().any(|x| x == k), "{k} missing from {kinds:?}");
    }
    app.stop().await;
}

/// One agent with one slot on a manual worker, and a mission of two roots
/// and a join: one root runs, the other waits in the queue. Returns
/// (mission id, first dispatch, running key, waiting key).
async fn two_roots(
    app: &TestApp,
    worker: &ManualWorker,
) -> (
    String,
    coordinator::worker::protocol::DispatchRequest,
    &'static str,
    &'static str,
) {
    let (s, body) = app
        .post(
            "/v1/agents",
            json!({"agent_id": "solo", "role": "researcher", "skills": ["research"],
                   "endpoint_url": worker.url, "max_concurrency": 1}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    let task = |id: &str, deps: &[&str]| {
        json!({"id": id, "title": format!("Step {id}"), "task_type": "research",
               "required_skills": ["research"], "depends_on": deps,
               "success_criteria": [{"description": "done", "must_pass": true}],
               "estimated_cost": 0.01})
    };
    let m = app
        .create_mission(json!({"goal": "two roots", "autonomy": "autonomous",
                               "plan": {"tasks": [task("a", &[]), task("b", &[]), task("c", &["a", "b"])]}}))
        .await;
    let id = m["id"].as_str().unwrap().to_owned();
    let first = worker.dispatch(1).await;
    let (running, waiting) = if first.task.key == "a" {
        ("a", "b")
    } else {
        ("b", "a")
    };
    wait_task(app, &id, waiting, "queued").await;
    (id, first, running, waiting)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_delegated_package_returns_the_task_to_the_agents() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    let http = reqwest::Client::new();
    let (id, first, _, waiting) = two_roots(&app, &worker).await;
    let (s, wp) = app
        .post(
            &format!("/v1/missions/{id}/tasks/{waiting}/delegate"),
            json!({"open": false}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{wp}");
    assert_eq!(wp["status"], "draft");
    assert_eq!(task(&app, &id, waiting).await["status"], "awaiting_human");
    let (s, body) = move_to(
        &app,
        &wp,
        json!({"to": "cancelled", "reason": "agents will do it"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(task(&app, &id, waiting).await["status"], "queued");

    succeed(&http, &first, json!({"text": "one"}), 0.01).await;
    let second = worker.dispatch(2).await;
    assert_eq!(second.task.key, waiting);
    succeed(&http, &second, json!({"text": "two"}), 0.01).await;
    let third = worker.dispatch(3).await;
    assert_eq!(third.task.key, "c");
    succeed(&http, &third, json!({"text": "three"}), 0.01).await;
    app.wait_for_status(&id, &["completed"]).await;
    app.stop().await;
}
