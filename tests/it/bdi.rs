//! BDI state per agent over REST (beliefs, desires, goals, intentions), the
//! maintenance job with two replicas, and missions as intentions.

use std::time::Duration;

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::{Connection, PgConnection};

use crate::helpers::*;

async fn register(app: &TestApp, id: &str) {
    let (s, b) = app
        .post(
            "/v1/agents",
            json!({"agent_id": id, "role": "cfo", "skills": ["research"], "endpoint_url": "http://127.0.0.1:9"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
}

async fn agent_token(app: &TestApp, agent: &str) -> String {
    let (s, b) = app
        .post("/v1/tokens", json!({"role": "agent", "agent_id": agent}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    b["token"].as_str().expect("token").to_owned()
}

async fn put(app: &TestApp, path: &str, body: Value) -> (StatusCode, Value) {
    app.request(Method::PUT, path, Some(body), Some(&app.token))
        .await
}

async fn count(app: &TestApp, table: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
        .fetch_one(&app.pool)
        .await
        .expect("count")
}

fn close(v: &Value, want: f64) -> bool {
    v.as_f64().is_some_and(|x| (x - want).abs() < 1e-9)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beliefs_follow_the_revision_rule_log_every_write_and_refuse_bad_values() {
    let app = spawn_app().await;
    register(&app, "cfo").await;
    register(&app, "cto").await;
    let path = "/v1/agents/cfo/beliefs";
    let belief = |content: &str, certainty: f64| {
        json!({"category": "environment", "subject": "market", "content": content,
               "certainty": certainty, "reason": "report"})
    };

    let (s, b) = put(&app, path, belief("growing 15% YoY", 0.6)).await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    assert_eq!(b["outcome"], "created");
    let id = b["belief"]["id"].as_str().unwrap().to_owned();
    // Higher certainty, contradicting: it wins.
    let (s, b) = put(&app, path, belief("contracting", 0.8)).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["outcome"], "revised");
    assert_eq!(b["belief"]["content"], "contracting");
    // Lower certainty, contradicting: the belief is retained.
    let (_, b) = put(&app, path, belief("growing", 0.5)).await;
    assert_eq!(b["outcome"], "rejected");
    assert_eq!(b["belief"]["content"], "contracting");
    assert!(close(&b["belief"]["certainty"], 0.8));
    // Equal certainty, contradicting: retained and flagged.
    let (_, b) = put(&app, path, belief("flat", 0.8)).await;
    assert_eq!(b["outcome"], "conflict");
    assert_eq!(b["belief"]["content"], "contracting");
    assert_eq!(b["belief"]["conflict"], true);
    // Same content: corroborated, certainty re-estimated.
    let (_, b) = put(&app, path, belief("Contracting", 0.9)).await;
    assert_eq!(b["outcome"], "corroborated");
    assert!(close(&b["belief"]["certainty"], 0.9));

    let (s, log) = app
        .get(&format!("/v1/agents/cfo/beliefs/{id}/revisions"))
        .await;
    assert_eq!(s, StatusCode::OK, "{log}");
    let outcomes: Vec<&str> = log["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        ["created", "revised", "rejected", "conflict", "corroborated"]
    );
    assert_eq!(log["revisions"][1]["old_content"], "growing 15% YoY");

    // Bad values: 422 and nothing changes.
    let before = count(&app, "bdi_belief_revisions").await;
    let (s, b) = put(&app, path, belief("x", 1.4)).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    assert_eq!(b["error"]["code"], "invalid_value");
    let (s, b) = put(
        &app,
        path,
        json!({"category": "rumour", "subject": "s", "content": "c", "certainty": 0.5}),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    assert_eq!(count(&app, "bdi_belief_revisions").await, before);
    // Unknown agent: 404. Another agent's token: 403.
    let (s, _) = put(&app, "/v1/agents/nobody/beliefs", belief("x", 0.5)).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let cto = agent_token(&app, "cto").await;
    let (s, _) = app
        .request(Method::PUT, path, Some(belief("x", 0.99)), Some(&cto))
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = app
        .request(
            Method::PUT,
            "/v1/agents/cto/beliefs",
            Some(belief("x", 0.5)),
            Some(&cto),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED);
    let (_, list) = app.get("/v1/agents/cfo/beliefs?category=environment").await;
    assert_eq!(list["beliefs"].as_array().unwrap().len(), 1);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn desires_get_the_formula_priority_report_conflicts_and_drop_with_cascade() {
    let app = spawn_app().await;
    register(&app, "cfo").await;
    let path = "/v1/agents/cfo/desires";
    let desire = |kind: &str, serves: Vec<&str>, resources: Vec<&str>| {
        json!({"description": "d", "kind": kind, "base_priority": 0.8, "importance": 0.6,
               "urgency": 0.4, "strategic_alignment": 1.0, "dependency_status": 0.5,
               "serves": serves, "resources": resources})
    };
    let (s, t1) = app
        .post(path, desire("terminal", vec![], vec!["budget"]))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{t1}");
    // 0.8·0.30 + 0.6·0.25 + 0.4·0.25 + 1.0·0.15 + 0.5·0.05 = 0.665
    assert!(close(&t1["desire"]["priority"], 0.665), "{t1}");
    assert_eq!(t1["conflicts"], json!([]));
    let t1 = t1["desire"]["id"].as_str().unwrap().to_owned();
    // A shared scarce resource is a reported conflict.
    let (_, t2) = app
        .post(path, desire("terminal", vec![], vec!["Budget"]))
        .await;
    assert_eq!(t2["conflicts"][0]["kind"], "resource", "{t2}");
    assert_eq!(t2["conflicts"][0]["desire_id"], t1.as_str());
    let t2 = t2["desire"]["id"].as_str().unwrap().to_owned();
    let (_, i1) = app
        .post(path, desire("instrumental", vec![&t1], vec![]))
        .await;
    let i1 = i1["desire"]["id"].as_str().unwrap().to_owned();
    let (_, i2) = app
        .post(path, desire("instrumental", vec![&t1, &t2], vec![]))
        .await;
    let i2 = i2["desire"]["id"].as_str().unwrap().to_owned();

    // Invalid input: 422, nothing written.
    let before = count(&app, "bdi_desires").await;
    let mut bad = desire("terminal", vec![], vec![]);
    bad["urgency"] = json!(1.4);
    let (s, b) = app.post(path, bad).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    assert_eq!(b["error"]["details"]["field"], "urgency");
    let (s, _) = app.post(path, desire("whim", vec![], vec![])).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    let (s, _) = app.post(path, desire("instrumental", vec![], vec![])).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(count(&app, "bdi_desires").await, before);

    // A stale version is a 409 and drops nothing.
    let (s, b) = app
        .post(
            &format!("{path}/{t1}/drop"),
            json!({"reason": "declining segment", "version": 7}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["error"]["code"], "version_conflict");
    // Dropping T1 cascades to I1 (serves only T1), not I2 (also serves T2).
    let (s, rec) = app
        .post(
            &format!("{path}/{t1}/drop"),
            json!({"reason": "declining segment", "version": 1}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{rec}");
    assert_eq!(rec["cascaded_drops"], json!([i1]));
    let mut affected: Vec<String> = rec["related_desires_affected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    affected.sort();
    let mut want = vec![i1.clone(), i2.clone()];
    want.sort();
    assert_eq!(affected, want);
    let (_, d) = app.get(&format!("{path}/{i1}")).await;
    assert_eq!(d["desire"]["status"], "dropped");
    assert_eq!(d["drop_record"]["cascade_of"], t1.as_str());
    let (_, d) = app.get(&format!("{path}/{i2}")).await;
    assert_eq!(d["desire"]["status"], "active");
    // Dropping again: 409.
    let (s, b) = app
        .post(&format!("{path}/{t1}/drop"), json!({"reason": "again"}))
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(b["error"]["code"], "invalid_state");
    let (_, active) = app.get(&format!("{path}?status=active")).await;
    assert_eq!(active["desires"].as_array().unwrap().len(), 2);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goals_and_intentions_follow_their_lifecycles_and_reconsideration_thresholds() {
    let app = spawn_app().await;
    register(&app, "coo").await;
    // Goals: tiers nest downwards only.
    let goals = "/v1/agents/coo/goals";
    let (s, g) = app
        .post(
            goals,
            json!({"description": "lead the segment", "tier": "strategic"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{g}");
    let g = g["id"].as_str().unwrap().to_owned();
    let (s, child) = app
        .post(
            goals,
            json!({"description": "launch", "tier": "tactical", "parent_goal_id": g}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{child}");
    let child = child["id"].as_str().unwrap().to_owned();
    let (s, b) = app
        .post(
            goals,
            json!({"description": "x", "tier": "strategic", "parent_goal_id": child}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    assert_eq!(b["error"]["code"], "invalid_tier");
    let (s, _) = app
        .post(goals, json!({"description": "x", "tier": "epic"}))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    let (s, _) = app
        .post(
            &format!("{goals}/{child}/status"),
            json!({"status": "achieved", "version": 1}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let (s, b) = app
        .post(
            &format!("{goals}/{child}/status"),
            json!({"status": "abandoned"}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["error"]["code"], "invalid_state");

    // Intentions.
    let path = "/v1/agents/coo/intentions";
    let (s, b) = app
        .post(path, json!({"description": "x", "strategy": "reckless"}))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    assert_eq!(b["error"]["code"], "invalid_value");
    let (s, _) = app
        .post(path, json!({"description": "x", "priority": 1.4}))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(count(&app, "bdi_intentions").await, 0);
    let (s, open) = app
        .post(
            path,
            json!({"description": "expand", "priority": 0.5, "goal_id": g}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{open}");
    assert_eq!(open["strategy"], "open-minded");
    let open = open["id"].as_str().unwrap().to_owned();
    let (_, cautious) = app
        .post(
            path,
            json!({"description": "hire", "priority": 0.5, "strategy": "cautious"}),
        )
        .await;
    let cautious = cautious["id"].as_str().unwrap().to_owned();
    let (_, single) = app
        .post(
            path,
            json!({"description": "comply", "priority": 0.5, "strategy": "single-minded"}),
        )
        .await;
    let single = single["id"].as_str().unwrap().to_owned();
    let reconsider = |id: &str, body: Value| {
        let app = &app;
        let url = format!("{path}/{id}/reconsider");
        async move { app.post(&url, body).await }
    };
    let (s, r) = reconsider(&open, json!({})).await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["verdict"], "keep");
    // A competing desire with priority 0.6: above 0.5 × 1.1 (cautious) but
    // not above 0.5 × 1.3 (open-minded).
    let (s, d) = app
        .post(
            "/v1/agents/coo/desires",
            json!({"description": "d", "kind": "terminal", "base_priority": 0.6, "importance": 0.6,
                   "urgency": 0.6, "strategic_alignment": 0.6, "dependency_status": 0.6}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{d}");
    assert!(close(&d["desire"]["priority"], 0.6));
    assert_eq!(reconsider(&open, json!({})).await.1["verdict"], "keep");
    assert_eq!(reconsider(&cautious, json!({})).await.1["verdict"], "drop");
    assert_eq!(reconsider(&single, json!({})).await.1["verdict"], "keep");
    assert_eq!(
        reconsider(&single, json!({"impossible": true})).await.1["verdict"],
        "drop"
    );
    // Stalled 4 days: past cautious's 3, not open-minded's 7.
    sqlx::query("UPDATE bdi_intentions SET last_progress_at = now() - interval '4 days'")
        .execute(&app.pool)
        .await
        .unwrap();
    let (_, r) = reconsider(&open, json!({})).await;
    assert_eq!(r["verdict"], "keep", "{r}");
    // Blocked: suspend, and apply it.
    let (_, r) = reconsider(&open, json!({"blocked": true, "apply": true})).await;
    assert_eq!(r["verdict"], "suspend");
    assert_eq!(r["applied"], true);
    assert_eq!(r["intention"]["status"], "suspended");
    // Illegal transitions: suspended → achieved; dropped → active.
    let (s, b) = app
        .post(
            &format!("{path}/{open}/status"),
            json!({"status": "achieved"}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["error"]["code"], "invalid_state");
    let (s, _) = app
        .post(
            &format!("{path}/{open}/status"),
            json!({"status": "dropped"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = app
        .post(
            &format!("{path}/{open}/status"),
            json!({"status": "active"}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    let (s, _) = reconsider(&open, json!({})).await;
    assert_eq!(s, StatusCode::CONFLICT);
    // Progress: [0, 1] only; restarts the stall clock; stale version 409.
    let (s, _) = app
        .post(
            &format!("{path}/{single}/progress"),
            json!({"progress": 1.4}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    let (s, b) = app
        .post(
            &format!("{path}/{single}/progress"),
            json!({"progress": 0.4, "version": 99}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert_eq!(b["error"]["code"], "version_conflict");
    let (s, p) = app
        .post(
            &format!("{path}/{single}/progress"),
            json!({"progress": 0.4}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{p}");
    assert!(close(&p["progress"], 0.4));
    app.stop().await;
}

/// Both replicas schedule the job every second; an advisory lock held by the
/// test keeps either from running a cycle; once released, cycles run, and
/// never two at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintenance_runs_on_exactly_one_replica_at_a_time() {
    let db = fresh_database().await;
    let mut a_settings = test_settings();
    a_settings.engine.replica_id = "replica-a".into();
    a_settings.bdi_interval_secs = 1;
    let a = spawn_app_on(&db, a_settings).await;
    let mut b_settings = test_settings();
    b_settings.engine.replica_id = "replica-b".into();
    b_settings.bdi_interval_secs = 1;
    let b = spawn_app_on(&db, b_settings).await;
    register(&a, "cfo").await;

    // Two contradicting high-certainty beliefs on one subject, one below 0.7.
    for (cat, content, c) in [
        ("environment", "market growing", 0.8),
        ("case", "market contracting", 0.75),
        ("agent", "market flat", 0.7),
    ] {
        let (s, body) = put(
            &a,
            "/v1/agents/cfo/beliefs",
            json!({"category": cat, "subject": "market", "content": content, "certainty": c}),
        )
        .await;
        assert_eq!(s, StatusCode::CREATED, "{body}");
    }
    // A cautious intention stalled 4 days, an open-minded one 4 days (not stale).
    for strategy in ["cautious", "open-minded"] {
        let (s, body) = a
            .post(
                "/v1/agents/cfo/intentions",
                json!({"description": strategy, "strategy": strategy}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{body}");
    }
    sqlx::query("UPDATE bdi_intentions SET last_progress_at = now() - interval '4 days'")
        .execute(&a.pool)
        .await
        .unwrap();

    // Hold the job's lock: neither replica may run a cycle.
    let mut holder = PgConnection::connect(&db).await.unwrap();
    let held: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(coordinator::bdi::runtime::LOCK_KEY)
        .fetch_one(&mut holder)
        .await
        .unwrap();
    assert!(held);
    // Scheduled cycles may have run during the setup above (the job starts
    // with the replicas and the setup can outlast a second on a loaded
    // machine); none runs while the lock is held.
    let before = count(&a, "bdi_cycles").await;
    for app in [&a, &b] {
        let (s, body) = app.post("/v1/bdi/maintenance", json!({})).await;
        assert_eq!(s, StatusCode::CONFLICT, "{body}");
        assert_eq!(body["error"]["code"], "maintenance_running");
    }
    // Both schedulers have ticked at least once while the lock was held
    // (the job runs every second); still no cycle.
    let held_since = tokio::time::Instant::now();
    wait_until_within("two scheduler ticks", Duration::from_secs(10), || async {
        (held_since.elapsed() > Duration::from_millis(2500)).then_some(())
    })
    .await;
    assert_eq!(count(&a, "bdi_cycles").await, before);
    sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(coordinator::bdi::runtime::LOCK_KEY)
        .execute(&mut holder)
        .await
        .unwrap();

    // Released: cycles run (scheduled ones, and one on demand).
    wait_until("three more cycles", || async {
        (count(&a, "bdi_cycles").await >= before + 3).then_some(())
    })
    .await;
    let cycles: Vec<(time::OffsetDateTime, time::OffsetDateTime, String)> = sqlx::query_as(
        "SELECT started_at, finished_at, replica FROM bdi_cycles ORDER BY started_at",
    )
    .fetch_all(&a.pool)
    .await
    .unwrap();
    for w in cycles.windows(2) {
        assert!(
            w[1].0 >= w[0].1,
            "cycles overlap: {:?} started before {:?} finished",
            w[1],
            w[0]
        );
    }

    // What the cycles did: one conflict report (the 0.7 belief is not
    // compared), the cautious intention marked, desires ranked.
    let (s, report) = b.get("/v1/bdi/conflicts").await;
    assert_eq!(s, StatusCode::OK, "{report}");
    let conflicts = report["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 1, "{report}");
    assert_eq!(conflicts[0]["subject"], "market");
    let (_, none) = b.get("/v1/bdi/conflicts?day=2020-01-01").await;
    assert_eq!(none["conflicts"], json!([]));
    let (s, _) = b.get("/v1/bdi/conflicts?day=yesterday").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (_, its) = a.get("/v1/agents/cfo/intentions").await;
    let marked: Vec<(&str, bool)> = its["intentions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["strategy"].as_str().unwrap(),
                i["needs_reconsideration"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(marked, [("cautious", true), ("open-minded", false)]);
    let (s, status) = a.get("/v1/bdi/maintenance").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(status["interval_secs"], 1);
    assert!(status["last_cycle"]["id"].is_i64(), "{status}");
    let pruned: i64 = sqlx::query_scalar("SELECT sum(intentions_pruned)::bigint FROM bdi_cycles")
        .fetch_one(&a.pool)
        .await
        .unwrap();
    assert_eq!(pruned, 1);
    a.stop().await;
    b.stop().await;
}

/// The job's cycle and its status are a workspace's own: a cycle run in one
/// workspace leaves another's intentions alone, and each workspace sees only
/// its own record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintenance_and_its_status_belong_to_the_callers_workspace() {
    let app = spawn_app().await;
    let other = other_workspace_token(&app).await;
    let as_other = |method: Method, path: &'static str, body: Option<Value>| {
        let (app, other) = (&app, other.clone());
        async move { app.request(method, path, body, Some(&other)).await }
    };
    // The same agent id in both workspaces, each with a cautious intention.
    register(&app, "cfo").await;
    let agent = json!({"agent_id": "cfo", "role": "cfo", "skills": ["research"],
                       "endpoint_url": "http://127.0.0.1:9"});
    let (s, b) = as_other(Method::POST, "/v1/agents", Some(agent)).await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    let intention = json!({"description": "stalled", "strategy": "cautious"});
    let (s, b) = app
        .post("/v1/agents/cfo/intentions", intention.clone())
        .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    let (s, b) = as_other(Method::POST, "/v1/agents/cfo/intentions", Some(intention)).await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    sqlx::query("UPDATE bdi_intentions SET last_progress_at = now() - interval '4 days'")
        .execute(&app.pool)
        .await
        .unwrap();
    let marked = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM bdi_intentions WHERE needs_reconsideration",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap()
    };

    let (s, mine) = app.post("/v1/bdi/maintenance", json!({})).await;
    assert_eq!(s, StatusCode::OK, "{mine}");
    assert_eq!(mine["intentions_pruned"], 1, "{mine}");
    assert_eq!(
        marked().await,
        1,
        "the other workspace's intention was touched"
    );
    let (_, status) = as_other(Method::GET, "/v1/bdi/maintenance", None).await;
    assert!(status["last_cycle"].is_null(), "{status}");
    let (_, status) = app.get("/v1/bdi/maintenance").await;
    assert_eq!(status["last_cycle"]["id"], mine["id"], "{status}");

    let (s, theirs) = as_other(Method::POST, "/v1/bdi/maintenance", Some(json!({}))).await;
    assert_eq!(s, StatusCode::OK, "{theirs}");
    assert_eq!(theirs["intentions_pruned"], 1, "{theirs}");
    assert_eq!(marked().await, 2);
    let (_, status) = as_other(Method::GET, "/v1/bdi/maintenance", None).await;
    assert_eq!(status["last_cycle"]["id"], theirs["id"], "{status}");
    let (_, status) = app.get("/v1/bdi/maintenance").await;
    assert_eq!(status["last_cycle"]["id"], mine["id"], "{status}");
    let unscoped: i64 =
        sqlx::query_scalar("SELECT count(*) FROM bdi_cycles WHERE workspace_id IS NULL")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(unscoped, 0);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missions_are_intentions_whose_triggers_consult_the_strategy() {
    let app = spawn_app().await;
    app.register_fleet("http://127.0.0.1:9", 2).await;
    let m = app
        .create_mission(json!({
            "goal": "Research the state of solid-state batteries and write a report",
            "autonomy": "approve"
        }))
        .await;
    let id = m["id"].as_str().unwrap();
    let path = format!("/v1/missions/{id}/commitment");
    let (s, c) = app.get(&path).await;
    assert_eq!(s, StatusCode::OK, "{c}");
    assert_eq!(c["strategy"], "cautious");
    assert_eq!(c["explicit"], false);
    let (s, b) = put(&app, &path, json!({"strategy": "reckless"})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    let (s, c) = put(&app, &path, json!({"strategy": "single-minded"})).await;
    assert_eq!(s, StatusCode::OK, "{c}");
    assert_eq!(c["strategy"], "single-minded");
    assert_eq!(c["explicit"], true);

    // New instructions are an explicit trigger: logged with the strategy.
    let (s, body) = app
        .post(
            &format!("/v1/missions/{id}/instructions"),
            json!({"instructions": "focus on cost"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let (_, page) = app.get(&format!("/v1/missions/{id}/events")).await;
    let reconsidered: Vec<&Value> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "mission.reconsidered")
        .collect();
    assert_eq!(reconsidered.len(), 1, "{page}");
    assert_eq!(reconsidered[0]["payload"]["trigger"], "instructions");
    assert_eq!(reconsidered[0]["payload"]["strategy"], "single-minded");
    assert_eq!(reconsidered[0]["payload"]["verdict"], "drop");

    let (s, c) = put(&app, &path, json!({"strategy": null})).await;
    assert_eq!(s, StatusCode::OK, "{c}");
    assert_eq!(c["strategy"], "cautious");
    let (s, _) = app
        .get("/v1/missions/00000000-0000-0000-0000-000000000000/commitment")
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    app.stop().await;
}

/// A single-minded mission keeps its plan through the budget warning: the
/// optional task is not dropped, and the verdict is logged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_minded_mission_keeps_optional_work_through_the_budget_warning() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let mut plan = chain_plan();
    // a → b, a → c (optional).
    plan["tasks"][2]["depends_on"] = json!(["a"]);
    plan["tasks"][2]["optional"] = json!(true);
    let m = app
        .create_mission(
            json!({"goal": "chain", "autonomy": "autonomous", "plan": plan, "budget": 0.03}),
        )
        .await;
    let id = m["id"].as_str().unwrap();
    let (s, c) = put(
        &app,
        &format!("/v1/missions/{id}/commitment"),
        json!({"strategy": "single-minded"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{c}");
    let http = reqwest::Client::new();
    let a = worker.dispatch(1).await;
    // 0.025 of 0.03 spent: past the 80 % warning.
    succeed(&http, &a, json!("a"), 0.025).await;
    let payloads = |kind: &'static str| {
        let pool = app.pool.clone();
        let id = id.to_owned();
        async move {
            sqlx::query_scalar::<_, Value>(
                "SELECT payload FROM orchestration_events WHERE run_id = $1::uuid AND kind = $2 ORDER BY seq",
            )
            .bind(id)
            .bind(kind)
            .fetch_all(&pool)
            .await
            .unwrap()
        }
    };
    let warning = wait_until("the budget warning", || async {
        let w = payloads("mission.budget_warning").await;
        (!w.is_empty()).then_some(w)
    })
    .await;
    assert_eq!(warning[0]["optional_tasks_dropped"], 0, "{warning:?}");
    let reconsidered = payloads("mission.reconsidered").await;
    assert_eq!(reconsidered.len(), 1, "{reconsidered:?}");
    assert_eq!(reconsidered[0]["trigger"], "budget_warning");
    assert_eq!(reconsidered[0]["strategy"], "single-minded");
    assert_eq!(reconsidered[0]["verdict"], "keep");
    // c may still be skipped later for another reason (an optional task the
    // budget cannot admit), but never by the warning.
    let by_warning = payloads("task.skipped")
        .await
        .into_iter()
        .filter(|p| {
            p["reason"]
                .as_str()
                .unwrap_or("")
                .contains("budget above 80")
        })
        .count();
    assert_eq!(by_warning, 0);
    app.stop().await;
}
