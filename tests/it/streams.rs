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
    let mut req = app
        .http
        .get(format!("{}/v1/missions/{id}/events", app.url))
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
