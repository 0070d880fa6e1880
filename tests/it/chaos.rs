//! `coordinator chaos` and `coordinator audit` as real processes: the CI
//! chaos smoke run (three replicas, kills, faulty workers) and an auditor
//! that fails on a database where a task succeeded twice.

use std::{collections::BTreeMap, process::Stdio, time::Duration};

use serde_json::json;
use tokio::process::Command;

use crate::helpers::{chain_plan, fresh_database, spawn_app_on, spawn_worker, test_settings};

/// What a finished `coordinator` command printed.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The last line's `key=value` figures.
    pub fn figures(&self) -> BTreeMap<String, String> {
        let last = self.stdout.lines().last().unwrap_or_default();
        last.split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    /// One figure of the last line, as a number.
    #[track_caller]
    pub fn figure(&self, key: &str) -> i64 {
        let figures = self.figures();
        figures
            .get(key)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no figure {key} in the last line:\n{}", self.stdout))
    }
}

/// The figures of a chaos run that must be 0 whatever else happened.
pub const MUST_BE_ZERO: [&str; 8] = [
    "doubled",
    "doubled_events",
    "stale_accepted",
    "cap_violations",
    "event_gaps",
    "replay_mismatches",
    "slots_held",
    "duplicate_missions",
];

/// Runs the binary with `args` and no ambient configuration; at most `limit`.
pub async fn coordinator(args: &[&str], limit: Duration) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_coordinator"));
    for var in ["DATABASE_URL", "COORDINATOR_LOG", "RUST_LOG"] {
        cmd.env_remove(var);
    }
    let child = cmd
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn coordinator");
    let out = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .expect("the command finished in time")
        .expect("the command ran");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The CI smoke run: 30 s of chaos against the test server (in a database
/// of its own), then the auditor on the kept database agrees.
#[tokio::test]
async fn a_short_chaos_run_keeps_every_invariant() {
    let server = fresh_database().await;
    let run = coordinator(
        &[
            "chaos",
            "--database-url",
            &server,
            "--duration-secs",
            "30",
            "--replicas",
            "3",
            "--missions",
            "20",
            "--kill-every-secs",
            "10",
            "--seed",
            "8",
            "--keep",
        ],
        Duration::from_secs(240),
    )
    .await;
    let context = format!("stdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    assert_eq!(run.code, 0, "{context}");
    assert_eq!(run.figure("seed"), 8, "{context}");
    assert_eq!(run.figure("missions"), 20, "{context}");
    assert_eq!(run.figure("terminal"), 20, "{context}");
    assert!(run.figure("kills") >= 1, "{context}");
    assert_eq!(run.figure("pg_restarts"), 0, "{context}");
    for zero in MUST_BE_ZERO {
        assert_eq!(run.figure(zero), 0, "{zero}: {context}");
    }
    // The faults really happened.
    assert!(run.figure("worker_faults") > 0, "{context}");
    assert!(run.figure("attempts") > run.figure("tasks"), "{context}");

    // The database was kept: the auditor, run on its own, agrees.
    let kept = run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("chaos: kept the database "))
        .unwrap_or_else(|| panic!("no kept database named: {context}"))
        .to_owned();
    let audit = coordinator(&["audit", "--database-url", &kept], Duration::from_secs(60)).await;
    assert_eq!(audit.code, 0, "{}\n{}", audit.stdout, audit.stderr);
    assert_eq!(audit.figure("missions"), 20);
    assert_eq!(audit.figure("terminal"), 20);
    assert_eq!(audit.figure("doubled"), 0);
}

/// The auditor passes a healthy database and fails one where a task has
/// two succeeded attempts (exit 1, `doubled=1`): it can fail.
#[tokio::test]
async fn the_auditor_fails_a_task_that_succeeded_twice() {
    let db = fresh_database().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 2).await;
    let m = app
        .create_mission(json!({"goal": "Audit me", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().expect("mission id").to_owned();
    app.wait_for_status(&id, &["completed"]).await;
    let pool = app.pool.clone();
    app.stop().await;

    let clean = coordinator(&["audit", "--database-url", &db], Duration::from_secs(60)).await;
    assert_eq!(clean.code, 0, "{}\n{}", clean.stdout, clean.stderr);
    assert_eq!(
        clean.stdout.lines().last(),
        Some(
            "missions=1 terminal=1 doubled=0 doubled_events=0 stale_accepted=0 \
             cap_violations=0 event_gaps=0 replay_mismatches=0 slots_held=0"
        ),
        "{}",
        clean.stdout
    );

    // A second succeeded attempt of one task, as a double-accepted report
    // would leave it.
    sqlx::raw_sql(
        "CREATE TEMP TABLE copy AS SELECT * FROM task_attempts WHERE status = 'succeeded' LIMIT 1;
         UPDATE copy SET id = gen_random_uuid(), attempt_number = attempt_number + 100;
         INSERT INTO task_attempts SELECT * FROM copy;",
    )
    .execute(&pool)
    .await
    .expect("insert a second success");
    pool.close().await;

    let dirty = coordinator(&["audit", "--database-url", &db], Duration::from_secs(60)).await;
    assert_eq!(dirty.code, 1, "{}\n{}", dirty.stdout, dirty.stderr);
    assert_eq!(dirty.figure("doubled"), 1, "{}", dirty.stdout);
    // The copy is not the task's current attempt either.
    assert_eq!(dirty.figure("stale_accepted"), 1, "{}", dirty.stdout);
    assert_eq!(dirty.figure("missions"), 1);
    assert!(dirty.stdout.contains("VIOLATED"), "{}", dirty.stdout);
}
