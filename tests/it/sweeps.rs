//! The engine's settling sweeps: a tool approval nobody answers times out
//! to its policy's default, and a team decision whose window closed is
//! committed, with no API read of either; checked in the database itself.
//! Replicas racing the same sweep settle each item exactly once.

use std::{sync::Arc, time::Duration};

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use coordinator::{
    engine::reconcile::{close_voting_windows, settle_overdue_approvals},
    worker::protocol::DispatchRequest,
};

use crate::helpers::*;

/// Starts a chain mission whose first task needs a person for every tool
/// call, times out after one second, and grants on timeout; returns
/// (mission id, the first dispatch).
async fn guarded_mission(app: &TestApp, worker: &ManualWorker) -> (String, DispatchRequest) {
    app.register_fleet(&worker.url, 1).await;
    let mut plan = chain_plan();
    plan["tasks"][0]["inputs"] = json!({"tool_policy": {
        "auto_approve": false, "approval_timeout_secs": 1, "on_timeout": "approved"}});
    let m = app
        .create_mission(json!({"goal": "sweeps", "autonomy": "autonomous", "plan": plan}))
        .await;
    (
        m["id"].as_str().unwrap().to_owned(),
        worker.dispatch(1).await,
    )
}

/// Asks for a tool approval as the worker; returns its id (the request is pending).
async fn ask(app: &TestApp, d: &DispatchRequest, tool: &str) -> Uuid {
    let (s, body) = app
        .request(
            Method::POST,
            &format!("/v1/attempts/{}/tool-approvals", d.attempt_id),
            Some(json!({"tool": tool})),
            Some(&d.callback.token),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    assert_eq!(body["status"], "pending", "{body}");
    body["id"].as_str().unwrap().parse().unwrap()
}

/// Proposes a team decision with a one-second window; returns its id.
async fn propose(app: &TestApp, mission: &str, topic: &str) -> Uuid {
    let (s, d) = app
        .post(
            &format!("/v1/missions/{mission}/team-decisions"),
            json!({"topic": topic, "options": [{"label": "yes"}, {"label": "no"}],
                   "recommended_option": "no",
                   "eligible_agents": ["planner", "researcher"], "window_secs": 1}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{d}");
    d["id"].as_str().unwrap().parse().unwrap()
}

/// The status of a tool approval, read from the table (not through the API,
/// whose reads would settle it themselves).
async fn approval_status(pool: &PgPool, id: Uuid) -> String {
    sqlx::query_scalar::<_, String>("SELECT status FROM tool_approval_requests WHERE id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .expect("approval row")
}

/// The status of a team decision, read from the table.
async fn decision_status(pool: &PgPool, id: Uuid) -> String {
    sqlx::query_scalar::<_, String>("SELECT status FROM team_decisions WHERE id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .expect("decision row")
}

/// The events of `kind` whose payload names `id` under `field`.
async fn events_about(pool: &PgPool, kind: &str, field: &str, id: Uuid) -> Vec<(String, Value)> {
    sqlx::query_as::<_, (String, Value)>(
        "SELECT actor, payload FROM orchestration_events
         WHERE kind = $1 AND payload ->> $2 = $3 ORDER BY id",
    )
    .bind(kind)
    .bind(field)
    .bind(id.to_string())
    .fetch_all(pool)
    .await
    .expect("events")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_tool_approval_times_out_to_its_default_without_any_read() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    let (_, d) = guarded_mission(&app, &worker).await;
    let id = ask(&app, &d, "write_file").await;

    // Nobody polls, lists or resolves it: only the engine can settle it.
    wait_until("the sweep to time the request out", || async {
        (approval_status(&app.pool, id).await != "pending").then_some(())
    })
    .await;
    let (status, resolver, rationale, outcome): (String, String, String, String) = sqlx::query_as(
        "SELECT status, resolver, rationale, timeout_outcome
             FROM tool_approval_requests WHERE id = $1",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .expect("row");
    assert_eq!(status, "timed_out");
    assert_eq!(resolver, "timeout");
    assert_eq!(outcome, "approved");
    assert_eq!(
        rationale,
        "no decision before the timeout; the default outcome applies: approved"
    );
    // One resolution, as the read path writes it: the default (approved) granted.
    let events = events_about(&app.pool, "tool.approval_resolved", "approval_id", id).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let (actor, payload) = &events[0];
    assert_eq!(actor, "timeout");
    assert_eq!(payload["approval_status"], "timed_out", "{payload}");
    assert_eq!(payload["granted"], true, "{payload}");
    // The worker's next poll sees the same settled request.
    let (s, polled) = app
        .request(
            Method::GET,
            &format!("/v1/attempts/{}/tool-approvals/{id}", d.attempt_id),
            None,
            Some(&d.callback.token),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{polled}");
    assert_eq!(polled["status"], "timed_out");
    assert_eq!(polled["granted"], true);
    assert_eq!(
        events_about(&app.pool, "tool.approval_resolved", "approval_id", id)
            .await
            .len(),
        1
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_decision_commits_when_its_window_closes_without_any_read() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    let (mission, _) = guarded_mission(&app, &worker).await;
    let id = propose(&app, &mission, "Ship it?").await;

    wait_until("the sweep to commit the decision", || async {
        (decision_status(&app.pool, id).await != "open").then_some(())
    })
    .await;
    let (status, option, tie_broken, closed_by, rationale): (
        String,
        Option<String>,
        bool,
        String,
        String,
    ) = sqlx::query_as(
        "SELECT status, committed_option, tie_broken, closed_by, rationale
         FROM team_decisions WHERE id = $1",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .expect("row");
    assert_eq!(status, "committed");
    // No votes: a tie of every option, broken for the recommendation.
    assert_eq!(option.as_deref(), Some("no"));
    assert!(tie_broken);
    assert_eq!(closed_by, "orchestrator");
    assert_eq!(rationale, "the voting window closed");
    let events = events_about(&app.pool, "team_decision.committed", "team_decision_id", id).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].0, "orchestrator");
    assert_eq!(events[0].1["committed_option"], "no");
    assert!(
        events[0].1["adr"]
            .as_str()
            .is_some_and(|a| a.contains("Ship it?")),
        "{}",
        events[0].1
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_racing_the_sweeps_settle_each_item_exactly_once() {
    let db = fresh_database().await;
    let a = spawn_app_on(&db, test_settings()).await;
    let b = spawn_app_on(&db, test_settings()).await;
    let worker = ManualWorker::spawn().await;
    let (mission, d) = guarded_mission(&a, &worker).await;
    let mut approvals = Vec::new();
    let mut decisions = Vec::new();
    for i in 0..6 {
        approvals.push(ask(&a, &d, &format!("tool_{i}")).await);
        decisions.push(propose(&b, &mission, &format!("Question {i}?")).await);
    }
    // Beside the two replicas' engines, four more sweepers start together
    // and keep sweeping until everything is settled.
    let pool = a.pool.clone();
    let gate = Arc::new(tokio::sync::Barrier::new(4));
    let mut racers = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let (pool, gate) = (pool.clone(), gate.clone());
        let (approvals, decisions) = (approvals.clone(), decisions.clone());
        racers.spawn(async move {
            gate.wait().await;
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            loop {
                let (t, c) =
                    tokio::join!(settle_overdue_approvals(&pool), close_voting_windows(&pool));
                t.expect("approval sweep");
                c.expect("window sweep");
                let mut open = 0;
                for id in &approvals {
                    open += usize::from(approval_status(&pool, *id).await == "pending");
                }
                for id in &decisions {
                    open += usize::from(decision_status(&pool, *id).await == "open");
                }
                if open == 0 {
                    return;
                }
                assert!(tokio::time::Instant::now() < deadline, "{open} still open");
                // Between rounds only: the items are due after one second.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
    }
    while let Some(r) = racers.join_next().await {
        r.expect("racer");
    }
    for id in &approvals {
        assert_eq!(approval_status(&pool, *id).await, "timed_out");
        let events = events_about(&pool, "tool.approval_resolved", "approval_id", *id).await;
        assert_eq!(events.len(), 1, "approval {id}: {events:?}");
    }
    for id in &decisions {
        assert_eq!(decision_status(&pool, *id).await, "committed");
        let events = events_about(&pool, "team_decision.committed", "team_decision_id", *id).await;
        assert_eq!(events.len(), 1, "decision {id}: {events:?}");
    }
    b.stop().await;
    a.stop().await;
}
