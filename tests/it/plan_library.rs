//! The plan library: finished missions become cases, search ranks them, and
//! the planner reuses similar successes and avoids the shapes of similar failures.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

/// Answers every dispatch of `worker`: the first `failures` fail with
/// `error`, the rest succeed; returns the mission's terminal status.
async fn drive(
    app: &TestApp,
    worker: &ManualWorker,
    id: &str,
    failures: usize,
    error: &str,
) -> String {
    let next = Arc::new(AtomicUsize::new(1));
    let http = reqwest::Client::new();
    wait_until(&format!("mission {id} to finish"), || {
        let next = next.clone();
        let http = http.clone();
        async move {
            let n = next.load(Ordering::SeqCst);
            if worker.count() >= n {
                let d = worker.dispatch(n).await;
                if n <= failures {
                    fail(&http, &d, error).await;
                } else {
                    succeed(&http, &d, json!({"text": "done"}), 0.01).await;
                }
                next.store(n + 1, Ordering::SeqCst);
                return None;
            }
            let (_, m) = app.get(&format!("/v1/missions/{id}")).await;
            let status = m["status"].as_str().unwrap_or("").to_owned();
            ["completed", "failed", "cancelled"]
                .contains(&status.as_str())
                .then_some(status)
        }
    })
    .await
}

/// The payload of the mission's latest `plan.created` event.
async fn plan_created(app: &TestApp, id: &str) -> Value {
    let (_, page) = app.get(&format!("/v1/missions/{id}/events")).await;
    page["events"]
        .as_array()
        .expect("events")
        .iter()
        .rev()
        .find(|e| e["kind"] == "plan.created")
        .map(|e| e["payload"].clone())
        .unwrap_or_else(|| panic!("no plan.created in {page}"))
}

fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_mission_is_a_case_that_search_finds_and_the_planner_reuses() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 2).await;

    // One flaky attempt, then success: a success case with a lesson.
    let goal = "Research the state of solid-state batteries and write a report";
    let constraints = json!({"team": "storage"});
    let m = app
        .create_mission(json!({"goal": goal, "autonomy": "autonomous", "constraints": constraints}))
        .await;
    assert_eq!(m["planner"], "template");
    let source_id = m["id"].as_str().unwrap().to_owned();
    assert_eq!(
        drive(&app, &worker, &source_id, 1, "flaky source").await,
        "completed"
    );

    // An unrelated mission that also completed.
    let before = worker.count();
    let unrelated = app
        .create_mission(json!({"goal": "Plan my sister's wedding", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let unrelated_id = unrelated["id"].as_str().unwrap().to_owned();
    let http = reqwest::Client::new();
    for n in before + 1..=before + 3 {
        let d = worker.dispatch(n).await;
        succeed(&http, &d, json!("ok"), 0.0).await;
    }
    app.wait_for_status(&unrelated_id, &["completed"]).await;

    // Search: the similar case first, with its score, lessons and outcome.
    let near = "Research the state of solid-state batteries and write a short report";
    let (status, found) = app
        .get(&format!("/v1/plan-library/search?goal={}", urlencode(near)))
        .await;
    assert_eq!(status, StatusCode::OK, "{found}");
    let hits = found["cases"].as_array().unwrap();
    assert_eq!(hits.len(), 2, "{found}");
    assert_eq!(hits[0]["mission_id"], source_id.as_str());
    assert_eq!(hits[1]["mission_id"], unrelated_id.as_str());
    let top = hits[0]["score"].as_f64().unwrap();
    // Goal alone (no context given). The goal's tokens are research, stat (twice:
    // "state", "solid-state"), solid, battery, writ, report; the query adds short.
    // With w = (1 + ln 2)², cos = (5 + w) / sqrt((5 + w)(6 + w)).
    let w = (1.0 + 2f64.ln()).powi(2);
    let goal_cos = ((5.0 + w) / (6.0 + w)).sqrt();
    assert!((top - goal_cos).abs() < 1e-9, "{top}");
    assert!(hits[1]["score"].as_f64().unwrap() < top);
    assert_eq!(hits[0]["success"], true);
    assert_eq!(hits[0]["planner"], "template");
    assert_eq!(hits[0]["outcome"]["status"], "completed");
    let lessons: Vec<&str> = hits[0]["lessons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        lessons
            .iter()
            .any(|l| l.contains("needed 2 attempts") && l.contains("flaky source")),
        "{lessons:?}"
    );
    let case_id = hits[0]["id"].as_str().unwrap().to_owned();
    let (status, case) = app.get(&format!("/v1/plan-library/cases/{case_id}")).await;
    assert_eq!(status, StatusCode::OK, "{case}");
    assert_eq!(case["goal"], goal);
    assert_eq!(case["context"]["autonomy"], "autonomous");
    assert!(case["plan"]["tasks"].as_array().unwrap().len() >= 3);
    // Filters and limits.
    let (_, failures) = app
        .get(&format!(
            "/v1/plan-library/search?goal={}&outcome=failure",
            urlencode(near)
        ))
        .await;
    assert_eq!(failures["cases"], json!([]));
    let (_, one) = app
        .get(&format!(
            "/v1/plan-library/search?goal={}&limit=1",
            urlencode(near)
        ))
        .await;
    assert_eq!(one["cases"].as_array().unwrap().len(), 1);

    // A near-identical goal is planned from the case.
    let m2 = app
        .create_mission(json!({"goal": near, "autonomy": "approve", "constraints": constraints}))
        .await;
    assert_eq!(m2["planner"], "case", "{m2}");
    let id2 = m2["id"].as_str().unwrap();
    let created = plan_created(&app, id2).await;
    assert_eq!(created["provenance"]["planner"], "case");
    assert_eq!(
        created["provenance"]["template"],
        format!("case:{case_id}").as_str()
    );
    assert_eq!(created["details"]["source_case"], case_id.as_str());
    let similarity = created["details"]["similarity"].as_f64().unwrap();
    // Context pairs: constraints.team shared, autonomy differs: overlap 1/3.
    assert!(
        (similarity - (0.8 * goal_cos + 0.2 / 3.0)).abs() < 1e-9,
        "{similarity}"
    );
    assert_eq!(created["details"]["negative_cases"], json!([]));
    // The plan is the case's, adapted to the new goal.
    let (_, plan) = app.get(&format!("/v1/missions/{id2}/plan")).await;
    // Titles no longer carry the goal; the descriptions do.
    let texts: Vec<&str> = plan["spec"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["description"].as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), case["plan"]["tasks"].as_array().unwrap().len());
    assert!(texts.iter().any(|t| t.contains(near)), "{texts:?}");
    assert!(texts.iter().all(|t| !t.contains(goal)), "{texts:?}");

    // Rejecting it does not offer the same case again.
    let (status, replanned) = app
        .post(
            &format!("/v1/missions/{id2}/reject-plan"),
            json!({"feedback": "try something else"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{replanned}");
    assert_ne!(replanned["planner"], "case", "{replanned}");

    // Bad input.
    for (query, code) in [
        ("", "goal_required"),
        ("goal=%20", "goal_required"),
        ("goal=x&limit=0", "invalid_limit"),
        ("goal=x&limit=abc", "invalid_limit"),
        ("goal=x&limit=101", "invalid_limit"),
        ("goal=x&context=%5B1%5D", "invalid_context"),
    ] {
        let (status, body) = app.get(&format!("/v1/plan-library/search?{query}")).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{query}: {body}");
        assert_eq!(error_code(&body), code, "{query}: {body}");
    }

    // Another workspace sees none of it.
    let other = other_workspace_token(&app).await;
    let (status, body) = app
        .request(
            Method::GET,
            &format!("/v1/plan-library/cases/{case_id}"),
            None,
            Some(&other),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = app
        .request(
            Method::GET,
            &format!("/v1/plan-library/search?goal={}", urlencode(goal)),
            None,
            Some(&other),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["cases"], json!([]));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_mission_is_a_negative_case_whose_structure_the_planner_avoids() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;

    // No person on the ladder: a task that keeps failing fails the mission.
    let constraints = json!({"human_escalation": false});
    let goal = "Research the history of vinyl records and write a report";
    let m = app
        .create_mission(json!({"goal": goal, "autonomy": "autonomous", "constraints": constraints}))
        .await;
    assert_eq!(m["planner"], "template");
    let id = m["id"].as_str().unwrap().to_owned();
    let (_, failed_plan) = app.get(&format!("/v1/missions/{id}/plan")).await;
    let method = failed_plan["provenance"]["template"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        drive(&app, &worker, &id, usize::MAX, "archive offline").await,
        "failed"
    );

    let (status, found) = app
        .get(&format!(
            "/v1/plan-library/search?goal={}&outcome=failure&context={}",
            urlencode(goal),
            urlencode(&json!({"constraints": constraints, "autonomy": "autonomous"}).to_string())
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{found}");
    let negative = &found["cases"][0];
    assert_eq!(negative["mission_id"], id.as_str(), "{found}");
    assert_eq!(negative["success"], false);
    assert_eq!(negative["template"], method.as_str());
    assert!(
        (negative["score"].as_f64().unwrap() - 1.0).abs() < 1e-9,
        "{negative}"
    );
    assert_eq!(negative["outcome"]["status"], "failed");
    assert!(negative["outcome"]["tasks_failed"].as_u64().unwrap() >= 1);
    let lessons = negative["lessons"].to_string();
    assert!(
        lessons.contains("failed after") && lessons.contains("archive offline"),
        "{lessons}"
    );
    let negative_id = negative["id"].as_str().unwrap().to_owned();
    // Success-only search leaves it out.
    let (_, successes) = app
        .get(&format!(
            "/v1/plan-library/search?goal={}&outcome=success",
            urlencode(goal)
        ))
        .await;
    assert_eq!(successes["cases"], json!([]));

    // A similar goal in the same context: the method that failed is skipped.
    let near = "Research the history of vinyl records and write a short report";
    let m2 = app
        .create_mission(json!({"goal": near, "autonomy": "autonomous", "constraints": constraints}))
        .await;
    let id2 = m2["id"].as_str().unwrap();
    assert_ne!(m2["planner"], "case");
    let created = plan_created(&app, id2).await;
    assert_ne!(
        created["provenance"]["template"],
        method.as_str(),
        "{created}"
    );
    let consulted = created["details"]["negative_cases"].as_array().unwrap();
    assert_eq!(consulted.len(), 1, "{created}");
    assert_eq!(consulted[0]["case_id"], negative_id.as_str());
    assert!(consulted[0]["score"].as_f64().unwrap() >= 0.75);
    assert_eq!(
        created["details"]["avoided_methods"][0]["template"],
        method.as_str()
    );
    assert_eq!(
        created["details"]["avoided_methods"][0]["negative_case"],
        negative_id.as_str()
    );
    let reason = created["provenance"]["reason"].as_str().unwrap();
    assert!(reason.contains(&negative_id), "{reason}");

    // A different context (no constraints, approve mode) is below the
    // threshold: the method is used again.
    let m3 = app
        .create_mission(json!({"goal": near, "autonomy": "approve"}))
        .await;
    let created = plan_created(&app, m3["id"].as_str().unwrap()).await;
    assert_eq!(
        created["provenance"]["template"],
        method.as_str(),
        "{created}"
    );
    app.stop().await;
}

/// Percent-encodes a query value.
fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
