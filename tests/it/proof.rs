//! Three replicas against one database while workers fail, hang, answer
//! twice and answer late; then an auditor checks every invariant from the
//! database alone.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use coordinator::worker::simulate::{SimulatedWorker, SimulationConfig};
use serde_json::json;
use sqlx::PgPool;

use crate::helpers::*;

/// Live attempts above an agent's cap right now (must always be 0).
async fn cap_violations(pool: &PgPool) -> i64 {
    let (n,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM (
             SELECT a.workspace_id, a.agent_id, count(*) AS live, max(g.max_concurrency) AS cap
             FROM task_attempts a
             JOIN agents g ON g.workspace_id = a.workspace_id AND g.agent_id = a.agent_id
             WHERE a.status IN ('dispatching', 'running')
             GROUP BY a.workspace_id, a.agent_id) x
         WHERE live > cap",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_with_faulty_workers_keep_every_invariant() {
    let db = fresh_database().await;
    let mut settings = test_settings();
    settings.engine.lease = Duration::from_millis(1500);
    let replicas = [
        spawn_app_on(&db, settings.clone()).await,
        spawn_app_on(&db, settings.clone()).await,
        spawn_app_on(&db, settings).await,
    ];
    let seed = 42;
    let worker = SimulatedWorker::spawn(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        SimulationConfig {
            latency_ms: 20,
            jitter_ms: 40,
            failure_rate: 0.10,
            hang_rate: 0.05,
            duplicate_rate: 0.05,
            late_rate: 0.05,
            late_ms: 2500,
            seed,
            ..SimulationConfig::default()
        },
    )
    .await
    .unwrap();
    replicas[0].register_fleet(&worker.url(), 2).await;

    // Sample the cap invariant all along the run.
    let stop = Arc::new(AtomicBool::new(false));
    let violations = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (pool, stop, violations) = (replicas[0].pool.clone(), stop.clone(), violations.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                violations.fetch_add(cap_violations(&pool).await as u64, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };

    let goals = [
        "Research the state of solid-state batteries and write a report",
        "Implement rate limiting in the API and get it reviewed",
        "Evaluate three CRM vendors and recommend one",
        "Write a postmortem for yesterday's database outage",
    ];
    let mut ids = Vec::new();
    for i in 0..16 {
        let app = &replicas[i % 3];
        let m = app
            // No person watches this run: the ladder ends in mission failure.
            .create_mission(
                json!({"goal": goals[i % goals.len()], "autonomy": "autonomous",
                                   "constraints": {"human_escalation": false}}),
            )
            .await;
        ids.push(m["id"].as_str().unwrap().to_owned());
    }
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for id in &ids {
        let m = replicas[1]
            .wait_for_status_within(
                id,
                &["completed", "failed", "cancelled"],
                Duration::from_secs(120),
            )
            .await;
        *outcomes
            .entry(m["status"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    stop.store(true, Ordering::Relaxed);
    sampler.await.unwrap();
    let pool = &replicas[0].pool;

    // No task succeeded twice; every success is the task's current attempt.
    let (doubled,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM (SELECT task_id FROM task_attempts WHERE status = 'succeeded'
                               GROUP BY task_id HAVING count(*) > 1) x",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    let (stale_accepted,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM task_attempts a JOIN orchestration_tasks t ON t.id = a.task_id
         WHERE a.status = 'succeeded' AND t.current_attempt_id <> a.id",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    let (success_events,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM (SELECT task_id FROM orchestration_events WHERE kind = 'task.succeeded'
                               GROUP BY task_id HAVING count(*) > 1) x",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    // Event logs are gap-free per mission.
    let (gaps,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM (SELECT run_id, count(*) AS n, max(seq) AS top, min(seq) AS low
                               FROM orchestration_events WHERE run_id IS NOT NULL GROUP BY run_id) x
         WHERE n <> top OR low <> 1",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    // Every slot was given back.
    let (held,): (i64,) =
        sqlx::query_as("SELECT coalesce(sum(running_count), 0)::bigint FROM agents")
            .fetch_one(pool)
            .await
            .unwrap();

    // Replaying each mission's events gives its final state.
    let mut mismatches = Vec::new();
    let runs: Vec<(uuid::Uuid, String)> =
        sqlx::query_as("SELECT id, status FROM orchestration_runs")
            .fetch_all(pool)
            .await
            .unwrap();
    for (run, status) in &runs {
        let events: Vec<(Option<uuid::Uuid>, String, serde_json::Value)> = sqlx::query_as(
            "SELECT task_id, kind, payload FROM orchestration_events WHERE run_id = $1 ORDER BY seq",
        )
        .bind(run)
        .fetch_all(pool)
        .await
        .unwrap();
        let mut mission = "planning".to_owned();
        let mut tasks: BTreeMap<uuid::Uuid, String> = BTreeMap::new();
        for (task, kind, payload) in &events {
            if kind == "mission.status_changed" {
                mission = payload["to"].as_str().unwrap_or("").to_owned();
            }
            // Every task transition names its new status; the kind mapping
            // double-checks the common ones.
            let named = payload["status"].as_str();
            if let (Some(n), Some(k)) = (named, coordinator::timeline::task_status_of_kind(kind)) {
                assert_eq!(n, k, "event {kind} names status {n}");
            }
            if let (Some(task), Some(s)) = (
                task,
                named.or(coordinator::timeline::task_status_of_kind(kind)),
            ) {
                tasks.insert(*task, s.to_owned());
            }
        }
        if &mission != status {
            mismatches.push(format!("mission {run}: replay {mission}, table {status}"));
        }
        let actual: Vec<(uuid::Uuid, String)> =
            sqlx::query_as("SELECT id, status FROM orchestration_tasks WHERE run_id = $1")
                .bind(run)
                .fetch_all(pool)
                .await
                .unwrap();
        for (task, status) in actual {
            let replayed = tasks.get(&task).map(String::as_str).unwrap_or("pending");
            if replayed != status {
                mismatches.push(format!("task {task}: replay {replayed}, table {status}"));
            }
        }
    }

    let stats = worker.stats();
    eprintln!(
        "seed={seed} missions={} outcomes={outcomes:?} worker={stats:?} doubled={doubled} \
         stale_accepted={stale_accepted} cap_violations={} event_gaps={gaps} replay_mismatches={}",
        ids.len(),
        violations.load(Ordering::Relaxed),
        mismatches.len()
    );
    assert_eq!(
        outcomes.values().sum::<usize>(),
        ids.len(),
        "every mission ends terminal"
    );
    assert_eq!(doubled, 0, "no task succeeds twice");
    assert_eq!(success_events, 0, "no task has two success events");
    assert_eq!(stale_accepted, 0, "no stale report is accepted");
    assert_eq!(
        violations.load(Ordering::Relaxed),
        0,
        "no agent exceeds its cap"
    );
    assert_eq!(gaps, 0, "event logs are gap-free");
    assert_eq!(held, 0, "every slot is released");
    assert!(mismatches.is_empty(), "{mismatches:#?}");
    // The faults really happened: duplicates and late answers were refused.
    assert!(stats.hung + stats.late > 0, "{stats:?}");
    assert!(stats.reports_refused > 0, "{stats:?}");
    assert_eq!(stats.duplicate_dispatches, 0);
    for app in replicas {
        app.stop().await;
    }
}
