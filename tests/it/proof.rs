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

use crate::helpers::*;

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
                let found = coordinator::audit::cap_violations(&pool).await.unwrap();
                violations.fetch_add(found as u64, Ordering::Relaxed);
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
    // The one auditor (`coordinator audit` runs the same code).
    let report = coordinator::audit::audit(&replicas[0].pool).await.unwrap();

    let stats = worker.stats();
    eprintln!(
        "seed={seed} outcomes={outcomes:?} worker={stats:?} sampled_cap_violations={}\n{}\n{}",
        violations.load(Ordering::Relaxed),
        report.summary(),
        report.figures()
    );
    assert_eq!(
        outcomes.values().sum::<usize>(),
        ids.len(),
        "every mission ends terminal"
    );
    assert_eq!(report.missions as usize, ids.len());
    assert_eq!(
        report.terminal, report.missions,
        "every mission ends terminal"
    );
    assert_eq!(report.doubled, 0, "no task succeeds twice");
    assert_eq!(report.doubled_events, 0, "no task has two success events");
    assert_eq!(report.stale_accepted, 0, "no stale report is accepted");
    assert_eq!(
        violations.load(Ordering::Relaxed),
        0,
        "no agent exceeds its cap"
    );
    assert_eq!(report.cap_violations, 0, "no agent exceeds its cap");
    assert_eq!(report.event_gaps, 0, "event logs are gap-free");
    assert_eq!(report.slots_held, 0, "every slot is released");
    assert!(report.mismatches.is_empty(), "{:#?}", report.mismatches);
    assert!(report.is_clean(), "{}", report.summary());
    // The faults really happened: duplicates and late answers were refused.
    assert!(stats.hung + stats.late > 0, "{stats:?}");
    assert!(stats.reports_refused > 0, "{stats:?}");
    assert_eq!(stats.duplicate_dispatches, 0);
    for app in replicas {
        app.stop().await;
    }
}
