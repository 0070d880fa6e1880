//! Timer start events: the clock starts instances, each occurrence once
//! across replicas; a new version replaces the schedule, an unchanged
//! definition keeps its due time, deleting the workflow drops it.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

/// A document whose process `p` a timer start event `tick` starts.
fn timed(timer: &str) -> Vec<u8> {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="t">
        <process id="p" isExecutable="true">
        <startEvent id="tick"><timerEventDefinition>{timer}</timerEventDefinition></startEvent>
        <endEvent id="e"/><sequenceFlow id="f" sourceRef="tick" targetRef="e"/></process></definitions>"#
    )
    .into_bytes()
}

async fn schedule_rows(app: &TestApp, workflow: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM workflow_timer_starts WHERE workflow_id = $1::uuid")
        .bind(workflow)
        .fetch_one(&app.pool)
        .await
        .expect("count")
}

async fn instances_of(app: &TestApp, workflow: &str) -> Vec<Value> {
    let (status, list) = app
        .get(&format!("/v1/workflows/{workflow}/instances?limit=100"))
        .await;
    assert_eq!(status, StatusCode::OK, "{list}");
    list["instances"].as_array().cloned().unwrap_or_default()
}

/// Two replicas tick over one cycle of three and one past date: the cycle
/// starts three instances and the date one, none twice, and then the
/// schedule is spent.
#[tokio::test]
async fn timer_start_events_start_each_occurrence_once_across_replicas() {
    let apps = spawn_replicas(2).await;
    let cycle = import_workflow(&apps[0], timed("<timeCycle>R3/PT1S</timeCycle>")).await;
    let date = import_workflow(&apps[1], timed("<timeDate>2020-01-01T00:00:00Z</timeDate>")).await;
    let (cycle_id, date_id) = (
        cycle["id"].as_str().expect("id").to_owned(),
        date["id"].as_str().expect("id").to_owned(),
    );
    let starts = &cycle["timer_starts"];
    assert_eq!(starts.as_array().map(Vec::len), Some(1), "{cycle}");
    assert_eq!(starts[0]["start_event"], "tick");
    assert_eq!(starts[0]["kind"], "timeCycle");
    assert_eq!(starts[0]["definition"], "R3/PT1S");
    assert_eq!(starts[0]["fired"], 0);
    assert!(starts[0]["due_at"].is_string(), "{starts}");

    for (id, n) in [(&cycle_id, 3), (&date_id, 1)] {
        wait_until_within(
            "the schedule to be spent",
            Duration::from_secs(30),
            || async { (schedule_rows(&apps[0], id).await == 0).then_some(()) },
        )
        .await;
        // The row is deleted in the transaction that starts the last
        // occurrence's instance: nothing can start after this.
        let started = instances_of(&apps[0], id).await;
        assert_eq!(started.len(), n, "{started:?}");
        for i in &started {
            assert_eq!(i["status"], "completed", "{i}");
            assert_eq!(i["process_id"], "p", "{i}");
        }
    }
    for app in apps {
        app.stop().await;
    }
}

/// Editing another node keeps the timer's due time; a new definition
/// reschedules it; a version without timer starts has no schedule; a
/// version that cannot run has none either; deleting the workflow drops it.
#[tokio::test]
async fn a_new_version_replaces_the_schedule_and_an_unchanged_timer_keeps_its_due_time() {
    let app = spawn_app().await;
    let w = import_workflow(&app, timed("<timeCycle>R/PT1H</timeCycle>")).await;
    let id = w["id"].as_str().expect("id").to_owned();
    let due = w["timer_starts"][0]["due_at"].clone();
    assert!(due.is_string(), "{w}");

    let (status, edited) = app
        .post(
            &format!("/v1/workflows/{id}/nodes"),
            json!({ "id": "note", "type": "userTask", "name": "A note", "process_id": "p" }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{edited}");
    assert_eq!(edited["timer_starts"][0]["due_at"], due, "{edited}");

    let import = |xml: Vec<u8>| import_workflow_version(&app, &id, xml);
    let v = import(timed("<timeCycle>R/PT2H</timeCycle>")).await;
    assert_eq!(v["timer_starts"][0]["definition"], "R/PT2H", "{v}");
    assert_ne!(v["timer_starts"][0]["due_at"], due, "{v}");
    assert_eq!(v["timer_starts"][0]["version"], v["version"], "{v}");

    // A timer start on a flow to nowhere: the version cannot run.
    let broken = import(
        br#"<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="t">
        <process id="p" isExecutable="true"><startEvent id="tick"><timerEventDefinition><timeCycle>R/PT1H</timeCycle></timerEventDefinition></startEvent>
        <sequenceFlow id="f" sourceRef="tick" targetRef="nowhere"/></process></definitions>"#
            .to_vec(),
    )
    .await;
    assert_eq!(broken["validation"]["valid"], false, "{broken}");
    assert_eq!(broken["timer_starts"], json!([]), "{broken}");
    assert_eq!(schedule_rows(&app, &id).await, 0);

    import(timed("<timeDuration>PT1H</timeDuration>")).await;
    assert_eq!(schedule_rows(&app, &id).await, 1);
    let (status, _) = app
        .request(
            reqwest::Method::DELETE,
            &format!("/v1/workflows/{id}"),
            None,
            Some(&app.token),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(schedule_rows(&app, &id).await, 0);
    app.stop().await;
}
