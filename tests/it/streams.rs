//! Live event streams (Server-Sent Events) over real HTTP.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

/// One parsed SSE event: (id, event, data).
type SseEvent = (Option<String>, Option<String>, Value);

/// Opens the mission's stream (optionally resuming) and reads events until
/// `done` says stop, within 30 s.
async fn read_stream(
    app: &TestApp,
    id: &str,
    last_event_id: Option<&str>,
    done: impl Fn(&[SseEvent]) -> bool,
) -> Vec<SseEvent> {
    read_path(
        app,
        &format!("/v1/missions/{id}/events"),
        last_event_id,
        done,
    )
    .await
}

/// Opens the stream at `path` and reads events until `done` says stop, within 30 s.
async fn read_path(
    app: &TestApp,
    path: &str,
    last_event_id: Option<&str>,
    done: impl Fn(&[SseEvent]) -> bool,
) -> Vec<SseEvent> {
    let mut req = app
        .http
        .get(format!("{}{path}", app.url))
        .bearer_auth(&app.token)
        .header("accept", "text/event-stream");
    if let Some(l) = last_event_id {
        req = req.header("last-event-id", l);
    }
    let mut resp = req.send().await.expect("stream");
    assert_eq!(resp.status().as_u16(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut buf = String::new();
    let mut events = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        while !done(&events) {
            let chunk = resp.chunk().await.expect("chunk").expect("stream ended");
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let block: String = buf.drain(..end + 2).collect();
                let (mut id, mut event, mut data) = (None, None, String::new());
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("event:") {
                        event = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                // Keep-alive comments carry no data.
                if !data.is_empty() {
                    events.push((id, event, serde_json::from_str(&data).expect("json data")));
                }
            }
        }
    })
    .await
    .expect("the stream delivered what was expected within 30 s");
    events
}

fn completed(events: &[SseEvent]) -> bool {
    events.iter().any(|(_, kind, data)| {
        kind.as_deref() == Some("mission.status_changed") && data["payload"]["to"] == "completed"
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mission_stream_delivers_every_event_in_order_and_resumes_exactly() {
    let app = std::sync::Arc::new(spawn_app().await);
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 2).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap().to_owned();
    // Live: the stream is open while the mission is driven step by step.
    let reader = {
        let (app, id) = (app.clone(), id.clone());
        tokio::spawn(async move { read_stream(&app, &id, None, completed).await })
    };
    let http = reqwest::Client::new();
    for n in 1..=3 {
        let d = worker.dispatch(n).await;
        let (s, _) = report(
            &http,
            &d,
            &d.callback.token,
            json!({"status": "succeeded", "output": n}),
        )
        .await;
        assert_eq!(s, StatusCode::OK);
    }
    let live = reader.await.expect("reader");
    let ids: Vec<i64> = live
        .iter()
        .map(|(i, _, _)| i.as_deref().unwrap().parse().unwrap())
        .collect();
    let expected: Vec<i64> = (1..=ids.len() as i64).collect();
    assert_eq!(ids, expected, "gap-free, in order, nothing repeated");
    // The stream and the JSON page agree event for event.
    let (_, page) = app.get(&format!("/v1/missions/{id}/events")).await;
    let page_kinds: Vec<&str> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .take(ids.len())
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    let live_kinds: Vec<&str> = live.iter().map(|(_, k, _)| k.as_deref().unwrap()).collect();
    assert_eq!(page_kinds, live_kinds);
    for (i, kind, data) in &live {
        assert_eq!(data["seq"].to_string(), *i.as_ref().unwrap());
        assert_eq!(data["kind"].as_str(), kind.as_deref());
    }

    // Resume: Last-Event-ID n gives exactly the events after n.
    let n = ids.len() as i64;
    let resumed = read_stream(&app, &id, Some(&(n - 3).to_string()), |e| e.len() >= 3).await;
    let resumed_ids: Vec<String> = resumed.iter().map(|(i, _, _)| i.clone().unwrap()).collect();
    assert_eq!(
        resumed_ids,
        [(n - 2).to_string(), (n - 1).to_string(), n.to_string()]
    );

    // Bad resumption points and unknown missions are refused.
    let (s, body) = app
        .request(
            reqwest::Method::GET,
            &format!("/v1/missions/{id}/events"),
            None,
            Some(&app.token),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let resp = app
        .http
        .get(format!("{}/v1/missions/{id}/events", app.url))
        .bearer_auth(&app.token)
        .header("accept", "text/event-stream")
        .header("last-event-id", "yesterday")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let resp = app
        .http
        .get(format!(
            "{}/v1/missions/{}/events",
            app.url,
            uuid::Uuid::nil()
        ))
        .bearer_auth(&app.token)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
}

/// Every event id of the workspace in the database.
async fn all_event_ids(app: &TestApp) -> Vec<i64> {
    sqlx::query_scalar("SELECT id FROM orchestration_events ORDER BY id")
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

fn ids_of(events: &[SseEvent]) -> Vec<i64> {
    events
        .iter()
        .map(|(i, _, _)| i.as_deref().unwrap().parse().unwrap())
        .collect()
}

fn sorted(mut v: Vec<i64>) -> Vec<i64> {
    v.sort_unstable();
    v
}

/// Missions that finish on their own: simulated workers, two replicas
/// writing events concurrently.
async fn busy_workspace(
    missions: usize,
) -> (
    std::sync::Arc<TestApp>,
    TestApp,
    Vec<String>,
    coordinator::worker::simulate::SimulatedWorker,
) {
    let db = fresh_database().await;
    let app = std::sync::Arc::new(spawn_app_on(&db, test_settings()).await);
    let second = spawn_app_on(&db, test_settings()).await;
    let worker = spawn_worker(5).await;
    app.register_fleet(&worker.url(), 8).await;
    let mut ids = Vec::new();
    for n in 0..missions {
        let m = app
            .create_mission(json!({"goal": format!("chain {n}"), "autonomy": "autonomous", "plan": chain_plan()}))
            .await;
        ids.push(m["id"].as_str().unwrap().to_owned());
    }
    (app, second, ids, worker)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workspace_stream_delivers_every_event_once_while_two_replicas_write() {
    let (app, second, ids, _worker) = busy_workspace(6).await;
    // Read live from the start while both replicas run the missions; stop
    // half-way and resume from the last id seen, then read to the end.
    let first = read_path(&app, "/v1/events?after=0", None, |e| e.len() >= 20).await;
    let last = first.last().unwrap().0.clone().unwrap();
    for id in &ids {
        app.wait_for_status(id, &["completed"]).await;
    }
    let total = all_event_ids(&app).await.len();
    let rest = read_path(&app, "/v1/events", Some(&last), |e| {
        first.len() + e.len() >= total
    })
    .await;
    let mut seen = ids_of(&first);
    seen.extend(ids_of(&rest));
    let unique: std::collections::HashSet<i64> = seen.iter().copied().collect();
    assert_eq!(unique.len(), seen.len(), "no event twice");
    assert_eq!(sorted(seen), all_event_ids(&app).await, "no event lost");
    // Within a mission, the workspace stream keeps the mission's order.
    for id in &ids {
        let seqs: Vec<i64> = first
            .iter()
            .chain(rest.iter())
            .filter(|(_, _, d)| d["mission_id"] == id.as_str())
            .map(|(_, _, d)| d["seq"].as_i64().unwrap())
            .collect();
        assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>());
    }
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspace_event_pages_filter_by_mission_kind_and_agent() {
    let (app, second, ids, _worker) = busy_workspace(2).await;
    for id in &ids {
        app.wait_for_status(id, &["completed"]).await;
    }
    second.stop().await;
    // Paging with a small limit walks every event exactly once.
    let mut after = 0;
    let mut seen = Vec::new();
    loop {
        let (s, page) = app.get(&format!("/v1/events?limit=7&after={after}")).await;
        assert_eq!(s, StatusCode::OK, "{page}");
        let events = page["events"].as_array().unwrap();
        if events.is_empty() {
            break;
        }
        seen.extend(events.iter().map(|e| e["id"].as_i64().unwrap()));
        after = page["next_after"].as_i64().unwrap();
    }
    let unique: std::collections::HashSet<i64> = seen.iter().copied().collect();
    assert_eq!(unique.len(), seen.len());
    assert_eq!(sorted(seen), all_event_ids(&app).await);

    let (_, one) = app.get(&format!("/v1/events?mission={}", ids[0])).await;
    let one = one["events"].as_array().unwrap();
    assert!(!one.is_empty());
    assert!(one.iter().all(|e| e["mission_id"] == ids[0].as_str()));

    let (_, tasks) = app.get("/v1/events?kind=task.*,mission.created").await;
    let tasks = tasks["events"].as_array().unwrap();
    assert!(tasks.iter().any(|e| e["kind"] == "mission.created"));
    assert!(tasks.iter().any(|e| e["kind"] == "task.succeeded"));
    assert!(tasks.iter().all(|e| {
        let k = e["kind"].as_str().unwrap();
        k.starts_with("task.") || k == "mission.created"
    }));

    let agent: String = sqlx::query_scalar("SELECT agent_id FROM task_attempts LIMIT 1")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let (_, mine) = app
        .get(&format!("/v1/events?agent={agent}&kind=task.succeeded"))
        .await;
    let mine = mine["events"].as_array().unwrap();
    let expected: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM orchestration_events e JOIN task_attempts a ON a.id = e.attempt_id
         WHERE e.kind = 'task.succeeded' AND a.agent_id = $1",
    )
    .bind(&agent)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(expected > 0);
    assert_eq!(mine.len() as i64, expected);

    for bad in [
        "kind=Task!",
        "limit=0",
        "after=-1",
        "mission=nope",
        "colour=red",
    ] {
        let (s, body) = app.get(&format!("/v1/events?{bad}")).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert!(body["error"]["code"].is_string());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_prunes_old_events_on_one_replica_at_a_time() {
    use coordinator::retention::{self, PruneOutcome};
    let (app, second, ids, _worker) = busy_workspace(1).await;
    app.wait_for_status(&ids[0], &["completed"]).await;
    second.stop().await;
    let before = all_event_ids(&app).await;
    // Age half of the events by two days.
    let old: Vec<i64> = before[..before.len() / 2].to_vec();
    sqlx::query(
        "UPDATE orchestration_events SET created_at = now() - interval '2 days' WHERE id = ANY($1)",
    )
    .bind(&old)
    .execute(&app.pool)
    .await
    .unwrap();
    // While another session holds the job's lock, a run does nothing.
    let mut holder = app.pool.acquire().await.unwrap();
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(retention::LOCK_KEY)
        .execute(&mut *holder)
        .await
        .unwrap();
    let day = Duration::from_secs(24 * 3600);
    assert_eq!(
        retention::prune_once(&app.pool, day).await.unwrap(),
        PruneOutcome::Busy
    );
    assert_eq!(all_event_ids(&app).await, before);
    sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(retention::LOCK_KEY)
        .execute(&mut *holder)
        .await
        .unwrap();
    drop(holder);
    let outcome = retention::prune_once(&app.pool, day).await.unwrap();
    assert_eq!(
        outcome,
        PruneOutcome::Pruned {
            events: old.len() as u64,
            deliveries: 0
        }
    );
    assert_eq!(
        all_event_ids(&app).await,
        before[before.len() / 2..].to_vec()
    );
    // A stream resuming from a pruned event carries on with what is kept.
    let kept = before.len() - old.len();
    let resumed = read_path(&app, "/v1/events", Some(&old[0].to_string()), |e| {
        e.len() >= kept
    })
    .await;
    assert_eq!(ids_of(&resumed), before[before.len() / 2..].to_vec());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scheduled_retention_job_runs_on_its_own() {
    let db = fresh_database().await;
    let mut settings = test_settings();
    settings.retention = coordinator::retention::RetentionConfig {
        max_age: Some(Duration::from_secs(3600)),
        every_secs: 1,
    };
    let app = spawn_app_on(&db, settings).await;
    // Nothing is dispatched while the plan awaits approval.
    app.register_fleet("http://127.0.0.1:9", 1).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "approve", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    sqlx::query("UPDATE orchestration_events SET created_at = now() - interval '2 hours' WHERE run_id = $1::uuid")
        .bind(id)
        .execute(&app.pool)
        .await
        .unwrap();
    wait_until("old events to be pruned", || async {
        all_event_ids(&app).await.is_empty().then_some(())
    })
    .await;
}

/// A TCP proxy to `upstream` that cuts each of the first `cuts` connections
/// after `bytes` bytes of response, like a flaky network or load balancer.
async fn cutting_proxy(upstream: std::net::SocketAddr, cuts: usize, bytes: usize) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut n = 0;
        while let Ok((client, _)) = listener.accept().await {
            n += 1;
            let limit = (n <= cuts).then_some(bytes);
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let up = tokio::spawn(async move { tokio::io::copy(&mut cr, &mut sw).await });
                let mut sent = 0;
                let mut buf = vec![0u8; 512];
                while let Ok(k) = sr.read(&mut buf).await {
                    if k == 0 {
                        break;
                    }
                    let k = limit.map_or(k, |l| k.min(l - sent));
                    if cw.write_all(&buf[..k]).await.is_err() {
                        break;
                    }
                    sent += k;
                    if limit.is_some_and(|l| sent >= l) {
                        break;
                    }
                }
                up.abort();
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_eventsource_client_reconnects_and_resumes_without_loss_or_repeats() {
    let Some(js) = crate::peers::js_dir() else {
        return;
    };
    let (app, second, ids, _worker) = busy_workspace(2).await;
    for id in &ids {
        app.wait_for_status(id, &["completed"]).await;
    }
    second.stop().await;
    let all = all_event_ids(&app).await;
    let kinds: Vec<String> = sqlx::query_scalar("SELECT DISTINCT kind FROM orchestration_events")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    let upstream: std::net::SocketAddr = app.url.trim_start_matches("http://").parse().unwrap();
    // Cut the first three connections part-way through an event.
    let proxy = cutting_proxy(upstream, 3, 2500).await;
    let out = tokio::process::Command::new("node")
        .arg(js.join("follow-events.mjs"))
        // The whole log from the start (a stream without a cursor starts
        // from now); reconnects resume from Last-Event-ID, which wins.
        .arg(format!("{proxy}/v1/events?after=0"))
        .arg(&app.token)
        .arg(all.len().to_string())
        .arg(kinds.join(","))
        .output()
        .await
        .expect("run node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "node failed: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(stdout.trim()).expect("json report");
    let got: Vec<i64> = report["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert!(
        report["opens"].as_i64().unwrap() >= 4,
        "it reconnected: {report}"
    );
    let unique: std::collections::HashSet<i64> = got.iter().copied().collect();
    assert_eq!(unique.len(), got.len(), "nothing repeated: {report}");
    assert_eq!(sorted(got), all, "nothing lost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_ends_open_streams_instead_of_waiting_on_them() {
    let app = spawn_app().await;
    let mut resp = app
        .http
        .get(format!("{}/v1/events", app.url))
        .bearer_auth(&app.token)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    // The greeting arrives, so the stream is open.
    let first = resp.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("retry: 1000"));
    tokio::time::timeout(Duration::from_secs(10), app.stop())
        .await
        .expect("the service stopped with a stream open");
    // The stream ended cleanly rather than hanging.
    let rest = tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(Some(_)) = resp.chunk().await {}
    })
    .await;
    assert!(rest.is_ok(), "the stream ended");
}

/// A workspace stream opened without a cursor starts from now: a new
/// subscriber does not download the whole log (`after=0` asks for that).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_stream_without_a_cursor_starts_from_now() {
    let app = spawn_app().await;
    // Agents make the plans assignable; nothing is dispatched (approve mode).
    app.register_fleet("http://127.0.0.1:9", 1).await;
    app.create_mission(json!({"goal": "history", "autonomy": "approve", "plan": chain_plan()}))
        .await;
    let history = all_event_ids(&app).await;
    assert!(!history.is_empty());
    let mut resp = app
        .http
        .get(format!("{}/v1/events", app.url))
        .bearer_auth(&app.token)
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("stream");
    assert_eq!(resp.status().as_u16(), 200);
    // The stream's start was fixed before its headers came back.
    app.create_mission(json!({"goal": "news", "autonomy": "approve", "plan": chain_plan()}))
        .await;
    let mut buf = String::new();
    let first = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let chunk = resp.chunk().await.expect("chunk").expect("stream ended");
            buf.push_str(&String::from_utf8_lossy(&chunk));
            if let Some(end) = buf.find("\n\n") {
                let block: String = buf.drain(..end + 2).collect();
                if let Some(data) = block.lines().find_map(|l| l.strip_prefix("data:")) {
                    return serde_json::from_str::<Value>(data.trim()).expect("event json");
                }
            }
        }
    })
    .await
    .expect("an event within 20 s");
    let id = first["id"].as_i64().expect("id");
    assert!(
        id > *history.iter().max().expect("history"),
        "the first event streamed is new, not history: {first}"
    );
    assert_eq!(first["kind"], "mission.created", "{first}");
    assert_eq!(first["payload"]["goal"], "news", "{first}");
    app.stop().await;
}
