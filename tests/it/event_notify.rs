//! Event-log wake-ups without NOTIFY's commit lock: the engine's claims and
//! reports begin deferred (the trigger stays quiet) and their replica's
//! notifier announces them after the commit; every other writer of events
//! still notifies from the trigger.

use std::time::Duration;

use serde_json::json;
use sqlx::{Connection, PgConnection, postgres::PgListener};

use uuid::Uuid;

use coordinator::store::{
    event_notify::{DEFERRED_BEGIN, DEFERRED_PAYLOAD, Notifier},
    events::{self, EventKind, NewEvent},
};

use crate::helpers::*;

const CHANNEL: &str = "coordinator_events";

/// The next notification's payload on `l`, within 10 s.
async fn next(l: &mut PgListener) -> String {
    tokio::time::timeout(Duration::from_secs(10), l.recv())
        .await
        .expect("a notification within 10 s")
        .expect("the listener's connection")
        .payload()
        .to_owned()
}

/// Appends one event to `run_id` on `conn`, in a transaction begun with `begin`.
async fn append_in(conn: &mut PgConnection, begin: &'static str, ws: Uuid, run_id: Uuid) {
    let mut tx = conn.begin_with(begin).await.expect("begin");
    let ev = NewEvent {
        run_id,
        task_id: None,
        attempt_id: None,
        kind: EventKind::MissionCreated,
        actor: "test",
        payload: json!({}),
    };
    events::append(&mut tx, ws, ev).await.expect("append");
    tx.commit().await.expect("commit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_transaction_does_not_notify_and_a_plain_one_still_does() {
    let app = spawn_app().await;
    app.register_fleet("http://127.0.0.1:9", 1).await;
    // Waits for approval: nothing in the service writes events meanwhile.
    let m = app
        .create_mission(json!({"goal": "quiet", "plan": parallel_plan(3)}))
        .await;
    let run_id: Uuid = m["id"].as_str().unwrap().parse().unwrap();
    let ws: Uuid = sqlx::query_scalar("SELECT workspace_id FROM orchestration_runs WHERE id = $1")
        .bind(run_id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let mut l = PgListener::connect_with(&app.pool).await.unwrap();
    l.listen(CHANNEL).await.unwrap();
    // One connection for both: the deferral is transaction-local.
    let mut conn = app.pool.acquire().await.unwrap();
    append_in(&mut conn, DEFERRED_BEGIN, ws, run_id).await;
    // Notifications arrive in commit order: had the deferred commit
    // notified, its notification would come before this sentinel.
    sqlx::query("SELECT pg_notify($1, 'sentinel')")
        .bind(CHANNEL)
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(next(&mut l).await, "sentinel");
    append_in(&mut conn, "BEGIN", ws, run_id).await;
    assert_eq!(
        next(&mut l).await,
        "",
        "the trigger notifies a plain writer's commit, on the same connection too"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_notifier_coalesces_pokes_and_stops_with_its_last_handle() {
    let app = spawn_app().await;
    let mut l = PgListener::connect_with(&app.pool).await.unwrap();
    l.listen(CHANNEL).await.unwrap();
    let notifier = Notifier::start(&app.pool, None);
    for _ in 0..100 {
        notifier.committed();
    }
    assert_eq!(next(&mut l).await, DEFERRED_PAYLOAD);
    // A hundred pokes while at most one was owed: a few notifications, not
    // a hundred. Whatever the notifier sent came before the sentinel.
    sqlx::query("SELECT pg_notify($1, 'sentinel')")
        .bind(CHANNEL)
        .execute(&app.pool)
        .await
        .unwrap();
    let mut sent = 1;
    loop {
        match next(&mut l).await.as_str() {
            "sentinel" => break,
            p => {
                assert_eq!(p, DEFERRED_PAYLOAD);
                sent += 1;
            }
        }
    }
    assert!(sent <= 3, "{sent} notifications for 100 pokes");
    // Dropping the last handle ends the task and closes its connection.
    let notifiers = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database()
               AND query LIKE 'SELECT pg_notify(''coordinator_events'', $1)%'",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap()
    };
    let before = notifiers().await;
    assert!(before >= 1, "the notifier's session is seen");
    drop(notifier);
    wait_until("the notifier's connection is closed", || async {
        (notifiers().await == before - 1).then_some(())
    })
    .await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engines_claims_and_reports_are_announced_after_their_commit() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    register_solo(&app, &worker.url, 4).await;
    let mut l = PgListener::connect_with(&app.pool).await.unwrap();
    l.listen(CHANNEL).await.unwrap();
    app.create_mission(
        json!({"goal": "announce", "autonomy": "autonomous", "plan": parallel_plan(3)}),
    )
    .await;
    let d = worker.dispatch(1).await;
    // The claim wrote `task.dispatched` deferred: its replica's notifier
    // announced it (the creation's own commit notified from the trigger).
    while next(&mut l).await != DEFERRED_PAYLOAD {}
    succeed(&app.http, &d, json!({"answer": 1}), 0.0).await;
    // The report's batch, too, once its answer is out.
    while next(&mut l).await != DEFERRED_PAYLOAD {}
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_announced_after_its_commit_still_wakes_the_dispatcher_at_once() {
    // The tick is a minute away: only a wake-up can dispatch in time.
    let mut settings = test_settings();
    settings.engine.tick_interval = Duration::from_secs(60);
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 4).await;
    let m = app
        .create_mission(json!({"goal": "approve me", "plan": parallel_plan(3)}))
        .await;
    let id = m["id"].as_str().unwrap();
    let mut l = PgListener::connect_with(&app.pool).await.unwrap();
    l.listen("coordinator_wake").await.unwrap();
    let (status, body) = app
        .post(&format!("/v1/missions/{id}/approve"), json!({}))
        .await;
    assert_eq!(status, axum::http::StatusCode::OK, "{body}");
    // Sent by the notifier after the commit: the approval was deferred.
    tokio::time::timeout(Duration::from_secs(10), l.recv())
        .await
        .expect("a wake-up within 10 s")
        .unwrap();
    worker.dispatch_within(1, Duration::from_secs(10)).await;
    app.stop().await;
}

/// A stopped service leaves no session of its own behind: its event-log
/// listener closes once the service's state is gone (before, it listened
/// for the life of the process, which in-process replicas of the bench and
/// the tests kept piling up).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_service_closes_its_event_listener() {
    let db = fresh_database().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let observer = app.pool.clone();
    let listening = || {
        let pool = observer.clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND query = 'LISTEN \"coordinator_events\"'",
            )
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    wait_until("the service to listen for events", || async {
        (listening().await == 1).then_some(())
    })
    .await;
    app.stop().await;
    wait_until("the stopped service's listener to close", || async {
        (listening().await == 0).then_some(())
    })
    .await;
}
