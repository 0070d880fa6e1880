//! Team decisions: proposing (default electorate: the mission's assigned
//! agents), voting as oneself, changing a vote, committing on the last vote
//! or when the window closes, the orchestrator's tie-break, the ADR, and the
//! lifecycle's refusals.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::{governance::token, helpers::*};

async fn as_token(
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<Value>,
    token: &str,
) -> (StatusCode, Value) {
    app.request(method, path, body, Some(token)).await
}

async fn vote(app: &TestApp, id: &str, token: &str, option: &str) -> (StatusCode, Value) {
    as_token(
        app,
        Method::POST,
        &format!("/v1/team-decisions/{id}/votes"),
        Some(json!({"option": option, "rationale": format!("I prefer {option}")})),
        token,
    )
    .await
}

/// A running chain mission (task `a` dispatched); returns (mission id, task id, agent).
async fn running_mission(app: &TestApp, worker: &ManualWorker) -> (String, String, String) {
    app.register_fleet(&worker.url, 1).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let d = worker.dispatch(1).await;
    (
        m["id"].as_str().unwrap().to_owned(),
        d.task_id.to_string(),
        d.agent_id,
    )
}

fn options() -> Value {
    json!([{"label": "a", "description": "keep going"}, {"label": "b"}, {"label": "c"}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_task_raises_a_decision_the_team_votes_and_the_adr_records_it() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    let (mission, task, assigned) = running_mission(&app, &worker).await;
    let path = format!("/v1/missions/{mission}/team-decisions");

    // By default the agents assigned in the mission may vote.
    let me = token(&app, "agent", Some(&assigned)).await;
    let (s, d) = as_token(
        &app,
        Method::POST,
        &path,
        Some(json!({"topic": "Which source?", "options": options(), "task_id": task})),
        &me,
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{d}");
    assert_eq!(d["eligible_agents"], json!([assigned]));
    assert_eq!(d["task_id"], task.as_str());
    assert_eq!(d["status"], "open");
    // Its proposer withdraws it; closed decisions refuse everything.
    let id = d["id"].as_str().unwrap();
    let cancel = format!("/v1/team-decisions/{id}/cancel");
    let (s, c) = as_token(
        &app,
        Method::POST,
        &cancel,
        Some(json!({"reason": "moot"})),
        &me,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{c}");
    assert_eq!(c["status"], "cancelled");
    let (s, _) = as_token(
        &app,
        Method::POST,
        &cancel,
        Some(json!({"reason": "again"})),
        &me,
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT);
    let (s, e) = vote(&app, id, &me, "a").await;
    assert_eq!(s, StatusCode::CONFLICT, "{e}");
    let (s, _) = app.get(&format!("/v1/team-decisions/{id}/adr")).await;
    assert_eq!(s, StatusCode::CONFLICT);

    // Bad proposals change nothing.
    for bad in [
        json!({"topic": "x", "options": [{"label": "only"}]}),
        json!({"topic": "x", "options": [{"label": "a"}, {"label": "a"}]}),
        json!({"topic": "x", "options": options(), "recommended_option": "z"}),
        json!({"topic": " ", "options": options()}),
        json!({"topic": "x", "options": options(), "task_id": uuid::Uuid::new_v4()}),
    ] {
        // Rules between parts of the body (a repeated label, a recommendation
        // naming no option) are 422; the rest break the schema: 400.
        let semantic = bad.get("recommended_option").is_some()
            || bad.get("task_id").is_some()
            || bad["options"]
                .as_array()
                .is_some_and(|o| o.len() == 2 && o[0] == o[1]);
        let (s, e) = app.post(&path, bad.clone()).await;
        let expected = if semantic {
            StatusCode::UNPROCESSABLE_ENTITY
        } else {
            StatusCode::BAD_REQUEST
        };
        assert_eq!(s, expected, "{bad}: {e}");
    }

    // Three named voters; the proposer recommends c.
    let (s, d) = app
        .post(
            &path,
            json!({"topic": "Which cache?", "options": options(), "recommended_option": "c",
                   "evidence": ["hit rate 91 %", "p99 4 ms"],
                   "eligible_agents": ["planner", "researcher", "writer"], "window_secs": 300}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{d}");
    let id = d["id"].as_str().unwrap().to_owned();
    let planner = token(&app, "agent", Some("planner")).await;
    let researcher = token(&app, "agent", Some("researcher")).await;
    let writer = token(&app, "agent", Some("writer")).await;
    let engineer = token(&app, "agent", Some("engineer")).await;

    // Only eligible agents, as themselves, for a listed option.
    let (s, _) = vote(&app, &id, &engineer, "a").await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = vote(&app, &id, &app.token, "a").await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = vote(&app, &id, &planner, "z").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);

    // The writer changes its mind: the last vote counts.
    let (s, v) = vote(&app, &id, &writer, "a").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (_, v) = vote(&app, &id, &writer, "c").await;
    assert_eq!(v["votes"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["status"], "open");
    let (_, v) = vote(&app, &id, &planner, "a").await;
    assert_eq!(v["status"], "open");
    // The last eligible vote commits: a, b, c one each, the tie goes to the recommendation.
    let (s, done) = vote(&app, &id, &researcher, "b").await;
    assert_eq!(s, StatusCode::OK, "{done}");
    assert_eq!(done["status"], "committed");
    assert_eq!(done["committed_option"], "c");
    assert_eq!(done["tie_broken"], true);
    assert_eq!(done["tally"], json!({"a": 1, "b": 1, "c": 1}));
    assert_eq!(done["rationale"], "every eligible agent voted");
    let (s, _) = vote(&app, &id, &researcher, "a").await;
    assert_eq!(s, StatusCode::CONFLICT);

    // The ADR is markdown rendered from the record, also on the mission's log.
    let resp = app
        .http
        .get(format!("{}/v1/team-decisions/{id}/adr", app.url))
        .bearer_auth(&app.token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/markdown")
    );
    let adr = resp.text().await.unwrap();
    assert!(adr.starts_with("# ADR: Which cache?\n"), "{adr}");
    assert!(adr.contains("- hit rate 91 %\n"), "{adr}");
    assert!(adr.contains("| writer | c | I prefer c |"), "{adr}");
    assert!(
        adr.contains("Chosen: **c**, with 1 of 3 eligible votes (3 cast)"),
        "{adr}"
    );
    assert!(
        adr.contains("the proposer's recommended option among the tied"),
        "{adr}"
    );
    let (_, page) = app
        .get(&format!("/v1/missions/{mission}/events?limit=500"))
        .await;
    let committed: Vec<&Value> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "team_decision.committed")
        .collect();
    assert_eq!(committed.len(), 1);
    assert_eq!(committed[0]["payload"]["adr"], adr.as_str());
    let kinds: Vec<&str> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .filter(|k| k.starts_with("team_decision."))
        .collect();
    assert_eq!(
        kinds,
        vec![
            "team_decision.proposed",
            "team_decision.cancelled",
            "team_decision.proposed",
            "team_decision.voted",
            "team_decision.voted",
            "team_decision.voted",
            "team_decision.voted",
            "team_decision.committed",
        ]
    );
    let (_, list) = app.get(&path).await;
    assert_eq!(list["team_decisions"].as_array().unwrap().len(), 2);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_commits_when_its_window_closes() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    let (mission, _, _) = running_mission(&app, &worker).await;
    let (s, d) = app
        .post(
            &format!("/v1/missions/{mission}/team-decisions"),
            json!({"topic": "Ship it?", "options": [{"label": "yes"}, {"label": "no"}],
                   "eligible_agents": ["planner", "researcher"], "window_secs": 1}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{d}");
    let id = d["id"].as_str().unwrap().to_owned();
    let planner = token(&app, "agent", Some("planner")).await;
    let (s, _) = vote(&app, &id, &planner, "no").await;
    assert_eq!(s, StatusCode::OK);
    let done = wait_until("the window to close", || async {
        let (_, d) = app.get(&format!("/v1/team-decisions/{id}")).await;
        (d["status"] == "committed").then_some(d)
    })
    .await;
    assert_eq!(done["committed_option"], "no");
    assert_eq!(done["tie_broken"], false);
    assert_eq!(done["rationale"], "the voting window closed");
    assert_eq!(done["closed_by"], "orchestrator");
    // Too late to vote.
    let researcher = token(&app, "agent", Some("researcher")).await;
    let (s, e) = vote(&app, &id, &researcher, "yes").await;
    assert_eq!(s, StatusCode::CONFLICT, "{e}");
    assert_eq!(e["error"]["code"], "invalid_state");
    app.stop().await;
}
