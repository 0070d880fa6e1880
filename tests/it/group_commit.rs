//! Group commit of reports: reports applied together share one transaction
//! and keep their own answers; replicas applying batches at once keep every
//! invariant the chaos auditor checks.

use axum::http::StatusCode;
use serde_json::json;

use coordinator::{
    domain::{ReportStatus, TaskStatus},
    engine::{
        EngineConfig,
        report_batch::apply_together,
        reports::{Applied, Origin, ReportError},
    },
    worker::protocol::WorkerReport,
};

use crate::helpers::*;

fn succeeded() -> WorkerReport {
    WorkerReport {
        status: ReportStatus::Succeeded,
        output: Some(json!({"answer": 42})),
        error: None,
        failure_kind: None,
        cost: 0.0,
        tokens: 3,
        retry_after_secs: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_applied_together_share_one_commit_and_keep_their_own_answers() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    register_solo(&app, &worker.url, 8).await;
    let m = app
        .create_mission(
            json!({"goal": "batch", "autonomy": "autonomous", "plan": parallel_plan(4)}),
        )
        .await;
    let mission = m["id"].as_str().unwrap().to_owned();
    let mut d = Vec::new();
    for n in 1..=4 {
        d.push(worker.dispatch(n).await);
    }
    let cfg = EngineConfig::new(app.url.clone());
    let token = |i: usize| d[i].callback.token.clone();
    let (t0, t1, t3) = (token(0), token(1), token(3));
    let wrong = token(0);
    let answers = apply_together(
        &app.pool,
        &cfg,
        vec![
            (d[0].attempt_id, succeeded(), Origin::Worker { token: &t0 }),
            (d[1].attempt_id, succeeded(), Origin::Worker { token: &t1 }),
            // Another attempt's token: refused, and the batch goes on.
            (
                d[2].attempt_id,
                succeeded(),
                Origin::Worker { token: &wrong },
            ),
            (d[3].attempt_id, succeeded(), Origin::Worker { token: &t3 }),
            // The same report twice in one batch has one effect.
            (d[0].attempt_id, succeeded(), Origin::Worker { token: &t0 }),
        ],
    )
    .await;
    assert!(
        matches!(answers[0], Ok(Applied::Applied(TaskStatus::Succeeded))),
        "{answers:?}"
    );
    assert!(
        matches!(answers[1], Ok(Applied::Applied(TaskStatus::Succeeded))),
        "{answers:?}"
    );
    assert!(
        matches!(answers[2], Err(ReportError::BadToken(_))),
        "{answers:?}"
    );
    assert!(
        matches!(answers[3], Ok(Applied::Applied(TaskStatus::Succeeded))),
        "{answers:?}"
    );
    assert!(matches!(answers[4], Ok(Applied::Duplicate)), "{answers:?}");

    // One transaction wrote the three tasks, their attempts and the slots.
    let done = [d[0].task_id, d[1].task_id, d[3].task_id];
    let (writers, succeeded_events): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(DISTINCT xmin::text) FROM orchestration_tasks WHERE id = ANY($1)),
                (SELECT count(*) FROM orchestration_events WHERE kind = 'task.succeeded' AND task_id = ANY($1))",
    )
    .bind(&done[..])
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        writers, 1,
        "the batch's tasks were not written by one transaction"
    );
    assert_eq!(succeeded_events, 3);
    let refused: String =
        sqlx::query_scalar("SELECT status FROM orchestration_tasks WHERE id = $1")
            .bind(d[2].task_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(refused, "running", "the refused report changed its task");
    // The slots came back through the agent's pending returns, without
    // touching its row; a fold (the next claim, or the tick) applies them.
    let (row, pending) = solo_row_and_pending(&app).await;
    assert_eq!(row - pending, 1, "three slots given back, one still held");
    let (_, agent) = app.get("/v1/agents/solo").await;
    assert_eq!(
        agent["running_count"], 1,
        "the agent's view counts what is pending"
    );
    coordinator::store::agents::fold_returns(&app.pool)
        .await
        .unwrap();
    assert_eq!(
        solo_row_and_pending(&app).await,
        (1, 0),
        "folded into the agent's row"
    );

    // The refused one, reported properly, finishes the mission.
    let http = reqwest::Client::new();
    let (s, r) = report(
        &http,
        &d[2],
        &d[2].callback.token.clone(),
        json!({"status": "succeeded"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let m = app
        .wait_for_status(&mission, &["completed", "failed"])
        .await;
    assert_eq!(m["status"], "completed", "{m}");
    app.stop().await;
}

/// Two parents and a child that needs both: `a`, `b` → `c`.
fn fan_in_plan() -> serde_json::Value {
    let task = |id: &str, deps: &[&str]| {
        json!({"id": id, "title": format!("Step {id}"), "task_type": "research",
               "required_skills": ["research"], "depends_on": deps,
               "success_criteria": [{"description": "done", "must_pass": true}],
               "estimated_cost": 0.01})
    };
    json!({"tasks": [task("a", &[]), task("b", &[]), task("c", &["a", "b"])]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn successes_of_several_missions_are_applied_set_wise_and_keep_every_rule() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    register_solo(&app, &worker.url, 8).await;
    let mut missions = Vec::new();
    for i in 0..2 {
        let m = app
            .create_mission(
                json!({"goal": format!("fan in {i}"), "autonomy": "autonomous", "plan": fan_in_plan()}),
            )
            .await;
        missions.push(m["id"].as_str().unwrap().to_owned());
    }
    // Both parents of both missions are at the worker.
    let mut d = Vec::new();
    for n in 1..=4 {
        d.push(worker.dispatch(n).await);
    }
    let cfg = EngineConfig::new(app.url.clone());
    let tokens: Vec<String> = d.iter().map(|x| x.callback.token.clone()).collect();
    let answers = apply_together(
        &app.pool,
        &cfg,
        d.iter()
            .zip(&tokens)
            .map(|(x, t)| (x.attempt_id, succeeded(), Origin::Worker { token: t }))
            .collect(),
    )
    .await;
    for a in &answers {
        assert!(
            matches!(a, Ok(Applied::Applied(TaskStatus::Succeeded))),
            "{answers:?}"
        );
    }
    let parents: Vec<uuid::Uuid> = d.iter().map(|x| x.task_id).collect();
    let (writers, ended, outputs): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(DISTINCT xmin::text) FROM orchestration_tasks WHERE id = ANY($1)),
                (SELECT count(*) FROM task_attempts WHERE task_id = ANY($1) AND status = 'succeeded'
                    AND report IS NOT NULL AND tokens = 3 AND finished_at IS NOT NULL),
                (SELECT count(*) FROM orchestration_tasks WHERE id = ANY($1)
                    AND status = 'succeeded' AND output = '{\"answer\": 42}'::jsonb)",
    )
    .bind(&parents[..])
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(writers, 1, "the four successes were not one transaction");
    assert_eq!(ended, 4, "every attempt ended with its report");
    assert_eq!(outputs, 4, "every task succeeded with its output");
    for id in &missions {
        // Each child was promoted once although both its parents ended in
        // the same statement, and each mission's events stay gapless.
        let (queued, child_events, events, max_seq, cards): (i64, i64, i64, i64, i64) =
            sqlx::query_as(
                "SELECT (SELECT count(*) FROM orchestration_tasks WHERE run_id = $1 AND task_key = 'c'
                            AND status IN ('queued', 'running')),
                        (SELECT count(*) FROM orchestration_events e JOIN orchestration_tasks t ON t.id = e.task_id
                            WHERE e.run_id = $1 AND t.task_key = 'c' AND e.kind = 'task.queued'),
                        (SELECT count(*) FROM orchestration_events WHERE run_id = $1),
                        (SELECT max(seq) FROM orchestration_events WHERE run_id = $1),
                        (SELECT count(*) FROM board_tasks b JOIN orchestration_tasks t ON t.id = b.source_id
                            WHERE t.run_id = $1 AND t.status = 'succeeded' AND b.column_name = 'done')",
            )
            .bind(uuid::Uuid::parse_str(id).unwrap())
            .fetch_one(&app.pool)
            .await
            .unwrap();
        assert_eq!(queued, 1, "mission {id}: the child was not promoted");
        assert_eq!(child_events, 1, "mission {id}: the child was queued twice");
        assert_eq!(events, max_seq, "mission {id}: a gap in the event sequence");
        assert_eq!(cards, 2, "mission {id}: the parents' cards did not move");
    }
    coordinator::store::agents::fold_returns(&app.pool)
        .await
        .unwrap();
    let (held, wins): (i32, i64) = sqlx::query_as(
        "SELECT (SELECT running_count - agent_pending_slots(workspace_id, agent_id)
                 FROM agents WHERE agent_id = 'solo'),
                (SELECT succeeded FROM agent_task_stats WHERE agent_id = 'solo' AND task_type = 'research')",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    // The children may already have been claimed by the engine.
    assert!(held <= 2, "four slots were not given back: {held} held");
    assert_eq!(wins, 4, "the agent's past success missed some");
    // The children, reported, finish both missions.
    let http = reqwest::Client::new();
    for n in 5..=6 {
        let c = worker.dispatch(n).await;
        let (s, r) = report(
            &http,
            &c,
            &c.callback.token.clone(),
            json!({"status": "succeeded"}),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{r}");
    }
    for id in &missions {
        let m = app.wait_for_status(id, &["completed", "failed"]).await;
        assert_eq!(m["status"], "completed", "{m}");
    }
    let report = coordinator::audit::audit(&app.pool).await.unwrap();
    assert!(report.is_clean(), "{}", report.summary());
    app.stop().await;
}

/// `n` replicas, workers that call back (so reports go through each
/// replica's group commit, several committers at once), many missions: the
/// auditor finds nothing doubled, lost, stale, over cap or out of sequence.
async fn replicas_applying_batches_keep_every_invariant(n: usize) {
    let apps = spawn_replicas(n).await;
    let worker = spawn_worker(2).await;
    apps[0].register_fleet(&worker.url(), 4).await;
    let plan = parallel_plan(4);
    let mut ids = Vec::new();
    for i in 0..24 {
        let m = apps[i % n]
            .create_mission(
                json!({"goal": format!("fan {i}"), "autonomy": "autonomous", "plan": plan}),
            )
            .await;
        ids.push(m["id"].as_str().unwrap().to_owned());
    }
    for id in &ids {
        let m = apps[0].wait_for_status(id, &["completed", "failed"]).await;
        assert_eq!(m["status"], "completed", "{m}");
    }
    assert_eq!(worker.stats().duplicate_dispatches, 0);
    let report = coordinator::audit::audit(&apps[0].pool).await.unwrap();
    assert!(report.is_clean(), "{}", report.summary());
    assert_eq!(report.attempts, report.tasks, "one attempt per task");
    for app in apps {
        app.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_applying_report_batches_keep_every_invariant() {
    replicas_applying_batches_keep_every_invariant(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_applying_report_batches_keep_every_invariant() {
    replicas_applying_batches_keep_every_invariant(3).await;
}

/// The group commit's linger only holds a batch that already has company:
/// a lone report is applied at once even with a long linger.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_report_never_waits_for_the_linger() {
    use coordinator::engine::report_batch::ReportQueue;
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    register_solo(&app, &worker.url, 8).await;
    app.create_mission(json!({"goal": "lone", "autonomy": "autonomous", "plan": parallel_plan(3)}))
        .await;
    let d = worker.dispatch(1).await;
    let mut cfg = EngineConfig::new(app.url.clone());
    cfg.report_linger = std::time::Duration::from_secs(60);
    let queue = ReportQueue::start(app.pool.clone(), cfg, 32);
    let token = d.callback.token.clone();
    let answer = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        queue.submit(d.attempt_id, &succeeded(), Origin::Worker { token: &token }),
    )
    .await
    .expect("a lone report waited for the linger");
    assert!(
        matches!(answer, Ok(Applied::Applied(TaskStatus::Succeeded))),
        "{answer:?}"
    );
    app.stop().await;
}
