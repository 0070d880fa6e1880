//! Database failover: a private primary and a streaming standby from the
//! local PostgreSQL binaries, a multi-host `DATABASE_URL`, and the primary
//! SIGKILLed. The pool picks the writable server of the list and follows a
//! promotion on its own; whole chaos runs show that missions survive it,
//! that synchronous replication loses nothing acknowledged, and that
//! asynchronous replication loses exactly the commits the standby missed.

use std::time::{Duration, Instant};

use coordinator::{
    chaos::failover::{Pair, Replication, multi_host},
    db,
};
use sqlx::{PgPool, postgres::PgConnectOptions};

use crate::chaos::{MUST_BE_ZERO, Run, coordinator};

fn port(url: &str) -> i32 {
    i32::from(url.parse::<PgConnectOptions>().expect("url").get_port())
}

/// (port, in recovery) of the server behind a new statement on `pool`.
async fn server_of(pool: &PgPool) -> sqlx::Result<(i32, bool)> {
    sqlx::query_as("SELECT inet_server_port(), pg_is_in_recovery()")
        .fetch_one(pool)
        .await
}

#[tokio::test]
async fn a_pool_given_both_servers_uses_the_writable_one_and_follows_a_promotion() {
    let dir = std::env::temp_dir().join(format!("coordinator-failover-{}", uuid::Uuid::new_v4()));
    let mut pair = Pair::start(&dir, Replication::Async)
        .await
        .expect("primary and standby");
    let primary = pair.primary_url().expect("primary").to_owned();
    let standby = pair.standby_url().to_owned();
    // The standby first: read-write (the default for a list) skips it.
    let list = multi_host(&standby, &primary).expect("url");
    let pool = db::connect(&list, 4).await.expect("pool");
    assert_eq!(
        server_of(&pool).await.expect("query"),
        (port(&primary), false)
    );
    // `any` takes the first server that answers, the standby.
    let any = db::connect(&list.replace("read-write", "any"), 1)
        .await
        .expect("pool");
    assert_eq!(
        server_of(&any).await.expect("query"),
        (port(&standby), true)
    );
    any.close().await;

    let switches = db::PRIMARY_SWITCHES.load(std::sync::atomic::Ordering::Relaxed);
    pair.fail_over(Duration::ZERO).await.expect("fail over");
    // The pool moves to the promoted standby by itself, and writes there.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok((p, false)) = server_of(&pool).await
            && p == port(&standby)
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the pool did not follow the promotion"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    sqlx::query("CREATE TABLE written_after_failover (x int)")
        .execute(&pool)
        .await
        .expect("a write on the new primary");
    assert!(db::PRIMARY_SWITCHES.load(std::sync::atomic::Ordering::Relaxed) > switches);
    pool.close().await;
    pair.stop().await.expect("stop");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A chaos run of two replicas on a multi-host URL whose primary is killed
/// halfway, after its WAL senders were held for 1.5 s (the standby behind).
async fn failover_run(replication: &str, seed: &str) -> (Run, String) {
    let run = coordinator(
        &[
            "chaos",
            "--failover",
            replication,
            "--standby-lag-ms",
            "1500",
            "--duration-secs",
            "30",
            "--replicas",
            "2",
            "--missions",
            "30",
            "--kill-every-secs",
            "10",
            "--seed",
            seed,
        ],
        Duration::from_secs(300),
    )
    .await;
    let context = format!("stdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    assert_eq!(run.code, 0, "{context}");
    assert_eq!(run.figure("failovers"), 1, "{context}");
    assert_eq!(run.figure("missions"), 30, "{context}");
    assert!(run.figure("kills") >= 1, "{context}");
    for zero in MUST_BE_ZERO {
        assert_eq!(run.figure(zero), 0, "{zero}: {context}");
    }
    // Every mission the new primary has ended, and work resumed on it
    // before the drain.
    assert_eq!(
        run.figure("terminal") + run.figure("lost_missions"),
        30,
        "{context}"
    );
    assert!(run.figure("resumed_ms") > 0, "{context}");
    (run, context)
}

#[tokio::test]
async fn with_a_synchronous_standby_a_failover_loses_nothing_acknowledged() {
    let (run, context) = failover_run("sync", "11").await;
    assert_eq!(run.figure("lost_missions"), 0, "{context}");
    assert_eq!(run.figure("terminal"), 30, "{context}");
}

#[tokio::test]
async fn with_an_asynchronous_standby_a_failover_loses_what_it_missed_and_nothing_else() {
    let (run, context) = failover_run("async", "11").await;
    // Missions are fed every 2/3 s, so the 1.5 s the standby missed
    // hold acknowledged ones: the run sees them gone, and passes anyway.
    assert!(run.figure("lost_missions") >= 1, "{context}");
    assert!(
        run.stdout.contains("allowed: asynchronous replication"),
        "{context}"
    );
}
