//! Running BPMN workflows on the engine: every process of the MIWG models
//! runs to an end with simulated workers; timers survive a replica restart;
//! two replicas racing over one instance apply each outcome once; messages,
//! signals, lanes and roles, call activities and boundary timers.

use std::time::Duration;

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

const BPMN: &str = "http://www.omg.org/spec/BPMN/20100524/MODEL";

fn miwg(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/crates/bpmn/tests/miwg/{name}.bpmn",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A definitions document around `body`.
fn doc(body: &str) -> Vec<u8> {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><definitions xmlns="{BPMN}" xmlns:c="https://coordinator.dev/schema/bpmn/1.0" id="d" targetNamespace="t">{body}</definitions>"#
    )
    .into_bytes()
}

async fn start(app: &TestApp, workflow: &str, body: Value) -> Value {
    let (status, inst) = app
        .post(&format!("/v1/workflows/{workflow}/instances"), body)
        .await;
    assert_eq!(status, StatusCode::CREATED, "{inst}");
    inst
}

/// Waits for the instance to end, completing every task that waits for a
/// person with `output` and sending every message a token waits for (as
/// the other party would) on the way; returns the ended instance.
async fn drive(app: &TestApp, id: &str, output: Value) -> Value {
    wait_until_within(
        &format!("instance {id} to end"),
        Duration::from_secs(60),
        || {
            let output = output.clone();
            async move {
                let (_, inst) = app.get(&format!("/v1/workflow-instances/{id}")).await;
                if inst["status"] != "running" {
                    return Some(inst);
                }
                for t in inst["tokens"].as_array().into_iter().flatten() {
                    if let Some(name) = t["message_name"].as_str() {
                        app.post(
                            "/v1/workflow-messages",
                            json!({ "name": name, "correlation_key": t["correlation"] }),
                        )
                        .await;
                    }
                }
                for t in inst["human_tasks"].as_array().into_iter().flatten() {
                    let token = t["token"].as_i64().expect("token");
                    app.post(
                        &format!("/v1/workflow-instances/{id}/tokens/{token}/complete"),
                        json!({ "output": output }),
                    )
                    .await;
                }
                None
            }
        },
    )
    .await
}

/// Each process with nodes of each MIWG model, started at its first start
/// event, runs to completion with simulated agents and people answering.
#[tokio::test]
async fn every_process_of_the_miwg_models_runs_to_an_end() {
    let app = spawn_app().await;
    let worker = spawn_worker(0).await;
    app.register_fleet(&worker.url(), 8).await;
    for name in ["A.1.0", "A.2.0", "A.3.0", "A.4.0", "B.1.0", "C.1.0"] {
        let w = import_workflow(&app, miwg(name)).await;
        let id = w["id"].as_str().expect("id");
        for p in w["model"]["processes"].as_array().expect("processes") {
            let Some(start_event) = p["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|n| {
                    n["kind"]["type"] == "start_event" && n["kind"]["trigger"]["type"] != "timer"
                })
                .and_then(|n| n["id"].as_str())
            else {
                continue;
            };
            let inst = start(
                &app,
                id,
                json!({
                    "process_id": p["id"],
                    "start_event": start_event,
                    "variables": { "approved": true, "clarified": "yes" },
                }),
            )
            .await;
            let iid = inst["id"].as_str().expect("instance id");
            let done = drive(&app, iid, json!({})).await;
            assert_eq!(done["status"], "completed", "{name} {}: {}", p["id"], done);
            assert!(
                done["tokens"].as_array().is_some_and(Vec::is_empty),
                "{done}"
            );
        }
    }
    app.stop().await;
}

/// An exclusive split drawn without conditions takes the flow the variable
/// `route.<gateway>` names (A.2.0's three branches).
#[tokio::test]
async fn a_route_variable_chooses_the_branch_of_a_split_without_conditions() {
    let app = spawn_app().await;
    let worker = spawn_worker(0).await;
    app.register_fleet(&worker.url(), 8).await;
    let w = import_workflow(&app, miwg("A.2.0")).await;
    let id = w["id"].as_str().expect("id");
    let process = &w["model"]["processes"][0];
    let split = process["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .find(|n| {
            n["kind"]["type"] == "gateway"
                && n["name"].as_str().is_some_and(|s| s.contains("Split"))
        })
        .expect("the split");
    let split_id = split["id"].as_str().expect("id");
    let flows: Vec<&Value> = process["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .filter(|f| f["source"] == split_id)
        .collect();
    assert_eq!(flows.len(), 3);
    for f in flows {
        let inst = start(
            &app,
            id,
            json!({ "variables": { "route": { split_id: f["id"] } } }),
        )
        .await;
        let done = drive(&app, inst["id"].as_str().expect("id"), json!({})).await;
        assert_eq!(done["status"], "completed", "{done}");
        let target = f["target"].as_str().expect("target");
        assert!(
            done["completed"]
                .as_array()
                .expect("completed")
                .iter()
                .any(|n| n == target),
            "the route to {target} was taken: {}",
            done["completed"]
        );
    }
    app.stop().await;
}

fn timer_model(duration: &str) -> Vec<u8> {
    doc(&format!(
        r#"<process id="p" isExecutable="true"><startEvent id="s"/>
        <intermediateCatchEvent id="wait"><timerEventDefinition><timeDuration>{duration}</timeDuration></timerEventDefinition></intermediateCatchEvent>
        <endEvent id="e"/>
        <sequenceFlow id="f1" sourceRef="s" targetRef="wait"/>
        <sequenceFlow id="f2" sourceRef="wait" targetRef="e"/></process>"#
    ))
}

/// A timer set by one replica fires once, on another, after the first stopped.
#[tokio::test]
async fn a_timer_survives_a_replica_restart_and_fires_once() {
    let db = fresh_database().await;
    let first = spawn_app_on(&db, test_settings()).await;
    let w = import_workflow(&first, timer_model("PT2S")).await;
    let inst = start(&first, w["id"].as_str().expect("id"), json!({})).await;
    let id = inst["id"].as_str().expect("id").to_owned();
    assert_eq!(inst["tokens"][0]["wait"], "timer", "{inst}");
    assert!(inst["tokens"][0]["due_at"].is_string(), "{inst}");
    first.stop().await;
    let second = spawn_app_on(&db, test_settings()).await;
    let done = drive(&second, &id, json!({})).await;
    assert_eq!(done["status"], "completed", "{done}");
    let fired = done["history"]
        .as_array()
        .expect("history")
        .iter()
        .filter(|s| s["element"] == "wait" && s["what"] == "completed")
        .count();
    assert_eq!(fired, 1, "{}", done["history"]);
    // Every move is in the workspace's event log, written with it.
    let (_, page) = second.get("/v1/events?kind=workflow.*").await;
    let kinds: Vec<(&str, &str)> = page["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["payload"]["instance_id"] == id.as_str())
        .map(|e| {
            (
                e["kind"].as_str().unwrap_or_default(),
                e["payload"]["command"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("workflow.started", ""),
            ("workflow.advanced", "timer_due"),
            ("workflow.ended", "")
        ],
        "{page}"
    );
    second.stop().await;
}

/// Two replicas pump one instance whose parallel split hands out 12 agent
/// tasks at once: every task's outcome is applied once, and two people
/// answering the same task on the two replicas get one 200 and one 409.
#[tokio::test]
async fn two_replicas_racing_over_one_instance_apply_each_outcome_once() {
    let apps = spawn_replicas(2).await;
    let worker = spawn_worker(5).await;
    apps[0].register_fleet(&worker.url(), 16).await;
    let tasks: String = (0..12)
        .map(|i| format!(r#"<serviceTask id="t{i}"/><sequenceFlow id="a{i}" sourceRef="fork" targetRef="t{i}"/><sequenceFlow id="b{i}" sourceRef="t{i}" targetRef="join"/>"#))
        .collect();
    let xml = doc(&format!(
        r#"<process id="p" isExecutable="true"><startEvent id="s"/>
        <parallelGateway id="fork"/><parallelGateway id="join"/><userTask id="ok"/><endEvent id="e"/>
        <sequenceFlow id="f0" sourceRef="s" targetRef="fork"/>{tasks}
        <sequenceFlow id="f1" sourceRef="join" targetRef="ok"/>
        <sequenceFlow id="f2" sourceRef="ok" targetRef="e"/></process>"#
    ));
    let w = import_workflow(&apps[0], xml).await;
    let inst = start(&apps[1], w["id"].as_str().expect("id"), json!({})).await;
    let id = inst["id"].as_str().expect("id").to_owned();
    let waiting = wait_until("the person's task", || async {
        let (_, i) = apps[0].get(&format!("/v1/workflow-instances/{id}")).await;
        i["human_tasks"]
            .as_array()
            .filter(|t| !t.is_empty())
            .map(|t| t[0]["token"].as_i64())
    })
    .await
    .expect("token");
    let path = format!("/v1/workflow-instances/{id}/tokens/{waiting}/complete");
    let (a, b) = tokio::join!(
        apps[0].post(&path, json!({ "output": { "by": 0 } })),
        apps[1].post(&path, json!({ "output": { "by": 1 } }))
    );
    let mut statuses = [a.0, b.0];
    statuses.sort();
    assert_eq!(
        statuses,
        [StatusCode::OK, StatusCode::CONFLICT],
        "{} / {}",
        a.1,
        b.1
    );
    let done = drive(&apps[0], &id, json!({})).await;
    assert_eq!(done["status"], "completed", "{done}");
    let history = done["history"].as_array().expect("history");
    for i in 0..12 {
        let node = format!("t{i}");
        let completions = history
            .iter()
            .filter(|s| s["element"] == node.as_str() && s["what"] == "completed")
            .count();
        assert_eq!(completions, 1, "{node}");
    }
    let missions: i64 = sqlx::query_scalar("SELECT count(*) FROM orchestration_runs")
        .fetch_one(&apps[0].pool)
        .await
        .expect("count");
    assert_eq!(missions, 12, "one mission per agent task, none doubled");
    for app in apps {
        app.stop().await;
    }
}

/// A receive task waits for a message with its correlation key; a signal
/// reaches every instance waiting for it; an unknown message is a 422.
#[tokio::test]
async fn messages_correlate_by_key_and_signals_reach_every_waiting_instance() {
    let app = spawn_app().await;
    let xml = doc(
        r#"<message id="m" name="Payment"/><signal id="sg" name="Closing"/>
        <process id="p" isExecutable="true"><startEvent id="s"/>
        <receiveTask id="pay" messageRef="m" c:correlationKey="${order}"/>
        <intermediateCatchEvent id="close"><signalEventDefinition signalRef="sg"/></intermediateCatchEvent>
        <endEvent id="e"/>
        <sequenceFlow id="f1" sourceRef="s" targetRef="pay"/>
        <sequenceFlow id="f2" sourceRef="pay" targetRef="close"/>
        <sequenceFlow id="f3" sourceRef="close" targetRef="e"/></process>"#,
    );
    let w = import_workflow(&app, xml).await;
    let wid = w["id"].as_str().expect("id");
    let mut ids = Vec::new();
    for order in ["A-1", "A-2", "A-3"] {
        let inst = start(&app, wid, json!({ "variables": { "order": order } })).await;
        assert_eq!(inst["tokens"][0]["message_name"], "Payment", "{inst}");
        ids.push(inst["id"].as_str().expect("id").to_owned());
    }
    let (status, err) = app
        .post(
            "/v1/workflow-messages",
            json!({ "name": "Payment", "correlation_key": "B-9" }),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(err["error"]["code"], "no_subscriber");
    let (status, to) = app
        .post(
            "/v1/workflow-messages",
            json!({ "name": "Payment", "correlation_key": "A-2", "payload": { "paid": 10 } }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{to}");
    assert_eq!(to["instance_id"], ids[1].as_str());
    let (_, second) = app.get(&format!("/v1/workflow-instances/{}", ids[1])).await;
    assert_eq!(second["variables"]["paid"], 10, "{second}");
    assert_eq!(second["tokens"][0]["signal_name"], "Closing", "{second}");
    for order in ["A-1", "A-3"] {
        app.post(
            "/v1/workflow-messages",
            json!({ "name": "Payment", "correlation_key": order }),
        )
        .await;
    }
    let (status, sent) = app
        .post("/v1/workflow-signals", json!({ "name": "Closing" }))
        .await;
    assert_eq!(status, StatusCode::OK, "{sent}");
    assert_eq!(sent["delivered"], 3);
    for id in &ids {
        let (_, i) = app.get(&format!("/v1/workflow-instances/{id}")).await;
        assert_eq!(i["status"], "completed", "{i}");
    }
    app.stop().await;
}

/// A task in a lane goes to an agent of the lane's role, not to a better
/// scored agent of another role.
#[tokio::test]
async fn a_task_in_a_lane_goes_to_an_agent_of_the_lanes_role() {
    let app = spawn_app().await;
    let worker = spawn_worker(0).await;
    app.register_fleet(&worker.url(), 8).await;
    let xml = doc(r#"<process id="p" isExecutable="true">
        <laneSet id="ls"><lane id="l" name="Finance" c:role="reviewer"><flowNodeRef>check</flowNodeRef></lane></laneSet>
        <startEvent id="s"/><serviceTask id="check" name="Check the books"/><endEvent id="e"/>
        <sequenceFlow id="f1" sourceRef="s" targetRef="check"/>
        <sequenceFlow id="f2" sourceRef="check" targetRef="e"/></process>"#);
    let w = import_workflow(&app, xml).await;
    let inst = start(&app, w["id"].as_str().expect("id"), json!({})).await;
    let done = drive(&app, inst["id"].as_str().expect("id"), json!({})).await;
    assert_eq!(done["status"], "completed", "{done}");
    let agent: String = sqlx::query_scalar(
        "SELECT assigned_agent_id FROM orchestration_tasks WHERE title = 'Check the books'",
    )
    .fetch_one(&app.pool)
    .await
    .expect("the task");
    assert_eq!(agent, "reviewer");
    app.stop().await;
}

/// A call activity runs the called process as a child instance and goes on
/// with its variables; an interrupting boundary timer cuts a person's task
/// short.
#[tokio::test]
async fn call_activities_and_boundary_timers_run_on_the_engine() {
    let app = spawn_app().await;
    let xml = doc(
        r#"<process id="main" isExecutable="true"><startEvent id="s"/>
        <callActivity id="call" calledElement="child"/>
        <userTask id="slow"/>
        <boundaryEvent id="late" attachedToRef="slow"><timerEventDefinition><timeDuration>PT1S</timeDuration></timerEventDefinition></boundaryEvent>
        <endEvent id="done"/><endEvent id="timedout"/>
        <sequenceFlow id="f1" sourceRef="s" targetRef="call"/>
        <sequenceFlow id="f2" sourceRef="call" targetRef="slow"/>
        <sequenceFlow id="f3" sourceRef="slow" targetRef="done"/>
        <sequenceFlow id="f4" sourceRef="late" targetRef="timedout"/></process>
        <process id="child" isExecutable="false"><startEvent id="cs"/>
        <scriptTask id="set"><script>answer = 42</script></scriptTask><endEvent id="ce"/>
        <sequenceFlow id="c1" sourceRef="cs" targetRef="set"/>
        <sequenceFlow id="c2" sourceRef="set" targetRef="ce"/></process>"#,
    );
    let w = import_workflow(&app, xml).await;
    let inst = start(
        &app,
        w["id"].as_str().expect("id"),
        json!({ "process_id": "main" }),
    )
    .await;
    let id = inst["id"].as_str().expect("id").to_owned();
    // Nobody answers the person's task: the boundary timer ends it.
    let done = wait_until_within(
        "the timer to cut the task",
        Duration::from_secs(30),
        || async {
            let (_, i) = app.get(&format!("/v1/workflow-instances/{id}")).await;
            (i["status"] != "running").then_some(i)
        },
    )
    .await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["variables"]["answer"], 42,
        "the child's variables came back: {done}"
    );
    let completed = done["completed"].as_array().expect("completed");
    assert!(completed.iter().any(|n| n == "timedout"), "{completed:?}");
    assert!(!completed.iter().any(|n| n == "done"), "{completed:?}");
    let (_, list) = app
        .get(&format!(
            "/v1/workflows/{}/instances",
            w["id"].as_str().expect("id")
        ))
        .await;
    let parents: Vec<&Value> = list["instances"]
        .as_array()
        .expect("instances")
        .iter()
        .map(|i| &i["parent_id"])
        .collect();
    assert!(
        parents.contains(&&json!(id)),
        "the child names its parent: {list}"
    );
    app.stop().await;
}

/// Refusals change nothing: an invalid version does not start, a finished
/// instance takes no command, another workspace sees nothing, and a
/// workflow with instances is not deleted.
#[tokio::test]
async fn refused_starts_and_commands_change_nothing() {
    let app = spawn_app().await;
    let (_, empty) = app.post("/v1/workflows", json!({ "name": "empty" })).await;
    let (status, err) = app
        .post(
            &format!(
                "/v1/workflows/{}/instances",
                empty["id"].as_str().expect("id")
            ),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(err["error"]["code"], "invalid_workflow");
    assert!(err["error"]["details"]["errors"].is_array(), "{err}");
    let w = import_workflow(&app, timer_model("PT0S")).await;
    let wid = w["id"].as_str().expect("id");
    let inst = start(&app, wid, json!({})).await;
    let id = inst["id"].as_str().expect("id").to_owned();
    let done = drive(&app, &id, json!({})).await;
    assert_eq!(done["status"], "completed");
    let (status, err) = app
        .post(&format!("/v1/workflow-instances/{id}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{err}");
    let other = other_workspace_token(&app).await;
    let (status, _) = app
        .request(
            Method::GET,
            &format!("/v1/workflow-instances/{id}"),
            None,
            Some(&other),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, err) = app
        .request(
            Method::DELETE,
            &format!("/v1/workflows/{wid}"),
            None,
            Some(&app.token),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{err}");
    assert_eq!(err["error"]["code"], "workflow_in_use");
    let (_, after) = app.get(&format!("/v1/workflow-instances/{id}")).await;
    assert_eq!(after["updated_at"], done["updated_at"]);
    app.stop().await;
}

/// A call activity reaches a process of another stored workflow (its latest
/// version, frozen by the call) and goes on with the child's variables.
#[tokio::test]
async fn a_call_activity_runs_a_process_of_another_workflow() {
    let app = spawn_app().await;
    let child = import_workflow(
        &app,
        doc(
            r#"<process id="shared_review" isExecutable="true"><startEvent id="s"/>
        <scriptTask id="set"><script>reviewed = true</script></scriptTask><endEvent id="e"/>
        <sequenceFlow id="f1" sourceRef="s" targetRef="set"/>
        <sequenceFlow id="f2" sourceRef="set" targetRef="e"/></process>"#,
        ),
    )
    .await;
    let parent = import_workflow(
        &app,
        doc(r#"<process id="main" isExecutable="true"><startEvent id="s"/>
        <callActivity id="review" calledElement="shared_review"/>
        <exclusiveGateway id="g" default="bad"/><endEvent id="ok"/><endEvent id="no"/>
        <sequenceFlow id="f1" sourceRef="s" targetRef="review"/>
        <sequenceFlow id="f2" sourceRef="review" targetRef="g"/>
        <sequenceFlow id="good" sourceRef="g" targetRef="ok"><conditionExpression>${reviewed}</conditionExpression></sequenceFlow>
        <sequenceFlow id="bad" sourceRef="g" targetRef="no"/></process>"#),
    )
    .await;
    let inst = start(&app, parent["id"].as_str().expect("id"), json!({})).await;
    let done = drive(&app, inst["id"].as_str().expect("id"), json!({})).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert!(
        done["completed"]
            .as_array()
            .expect("completed")
            .iter()
            .any(|n| n == "ok"),
        "{done}"
    );
    let (_, child_now) = app
        .get(&format!(
            "/v1/workflows/{}",
            child["id"].as_str().expect("id")
        ))
        .await;
    assert_eq!(
        child_now["frozen"], true,
        "the call froze the child's version"
    );
    app.stop().await;
}

/// A message nobody waits for starts the newest workflow whose process a
/// message of that name starts; its correlation key becomes the business key.
#[tokio::test]
async fn a_message_starts_a_process_with_a_message_start_event() {
    let app = spawn_app().await;
    import_workflow(
        &app,
        doc(r#"<message id="m" name="Order placed"/>
        <process id="orders" isExecutable="true">
        <startEvent id="placed"><messageEventDefinition messageRef="m"/></startEvent>
        <userTask id="pack"/><endEvent id="e"/>
        <sequenceFlow id="f1" sourceRef="placed" targetRef="pack"/>
        <sequenceFlow id="f2" sourceRef="pack" targetRef="e"/></process>"#),
    )
    .await;
    let (status, to) = app
        .post(
            "/v1/workflow-messages",
            json!({ "name": "Order placed", "correlation_key": "O-1", "payload": { "qty": 2 } }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{to}");
    let (_, inst) = app
        .get(&format!(
            "/v1/workflow-instances/{}",
            to["instance_id"].as_str().expect("id")
        ))
        .await;
    assert_eq!(inst["business_key"], "O-1", "{inst}");
    assert_eq!(inst["variables"]["qty"], 2, "{inst}");
    assert_eq!(inst["active"], json!(["pack"]), "{inst}");
    app.stop().await;
}

/// An agent task cut short by an interrupting boundary timer has its
/// mission cancelled with it: the agent's attempt ends and its slot is free.
#[tokio::test]
async fn a_task_the_workflow_withdraws_has_its_mission_cancelled() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    register_solo(&app, &worker.url, 1).await;
    let w = import_workflow(
        &app,
        doc(r#"<process id="p" isExecutable="true"><startEvent id="s"/>
        <serviceTask id="slow" name="Slow work"/>
        <boundaryEvent id="late" attachedToRef="slow"><timerEventDefinition><timeDuration>PT1S</timeDuration></timerEventDefinition></boundaryEvent>
        <endEvent id="done"/><endEvent id="timedout"/>
        <sequenceFlow id="f1" sourceRef="s" targetRef="slow"/>
        <sequenceFlow id="f2" sourceRef="slow" targetRef="done"/>
        <sequenceFlow id="f3" sourceRef="late" targetRef="timedout"/></process>"#),
    )
    .await;
    let inst = start(&app, w["id"].as_str().expect("id"), json!({})).await;
    let id = inst["id"].as_str().expect("id").to_owned();
    // The agent gets the task and never answers.
    worker.dispatch(1).await;
    let done = drive(&app, &id, json!({})).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert!(
        done["completed"]
            .as_array()
            .expect("completed")
            .iter()
            .any(|n| n == "timedout"),
        "{done}"
    );
    let (status,): (String,) = sqlx::query_as(
        "SELECT r.status FROM orchestration_runs r
         JOIN orchestration_tasks t ON t.run_id = r.id WHERE t.title = 'Slow work'",
    )
    .fetch_one(&app.pool)
    .await
    .expect("the task's mission");
    assert_eq!(status, "cancelled");
    let (running, pending) = solo_row_and_pending(&app).await;
    assert_eq!(running - pending, 0, "the agent's slot is free again");
    app.stop().await;
}

/// The ACL messages in `agent`'s inbox that came along a message flow.
async fn flow_messages(app: &TestApp, agent: &str) -> Vec<Value> {
    let (status, inbox) = app.get(&format!("/v1/agents/{agent}/inbox")).await;
    assert_eq!(status, StatusCode::OK, "{inbox}");
    inbox["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|e| e["message"].clone())
        .filter(|m| m["content"]["workflow"]["message_flow"].is_string())
        .collect()
}

/// Message flows between pools become ACL messages between the lanes'
/// agents: a send task's message goes from the agent that did it to the
/// agents of the receiving lane's role and of a black-box pool's role; a
/// throw event's goes from the workflow. The BPMN message still starts the
/// receiving process.
#[tokio::test]
async fn message_flows_between_pools_become_acl_messages_between_the_lanes_agents() {
    let app = spawn_app().await;
    let worker = spawn_worker(0).await;
    app.register_fleet(&worker.url(), 8).await;
    let w = import_workflow(
        &app,
        doc(r#"<collaboration id="c">
          <participant id="shop_pool" name="Shop" processRef="shop"/>
          <participant id="store_pool" name="Store" processRef="store"/>
          <participant id="customer" name="Customer" c:role="reviewer"/>
          <messageFlow id="mf_order" name="The order" sourceRef="send" targetRef="order_in" messageRef="m_order"/>
          <messageFlow id="mf_copy" sourceRef="send" targetRef="customer"/>
          <messageFlow id="mf_confirm" sourceRef="confirm" targetRef="customer"/>
        </collaboration>
        <message id="m_order" name="Order"/><message id="m_confirm" name="Confirmation"/>
        <process id="shop" isExecutable="true">
          <laneSet id="ls1"><lane id="sales" name="Sales" c:role="writer">
            <flowNodeRef>s</flowNodeRef><flowNodeRef>send</flowNodeRef><flowNodeRef>confirm</flowNodeRef>
          </lane></laneSet>
          <startEvent id="s"/><sendTask id="send" name="Send the order" messageRef="m_order"/>
          <intermediateThrowEvent id="confirm"><messageEventDefinition messageRef="m_confirm"/></intermediateThrowEvent>
          <endEvent id="e"/>
          <sequenceFlow id="f1" sourceRef="s" targetRef="send"/>
          <sequenceFlow id="f2" sourceRef="send" targetRef="confirm"/>
          <sequenceFlow id="f3" sourceRef="confirm" targetRef="e"/>
        </process>
        <process id="store" isExecutable="true">
          <laneSet id="ls2"><lane id="wh" name="Warehouse" c:role="engineer">
            <flowNodeRef>order_in</flowNodeRef><flowNodeRef>pack</flowNodeRef>
          </lane></laneSet>
          <startEvent id="order_in"><messageEventDefinition messageRef="m_order"/></startEvent>
          <userTask id="pack"/><endEvent id="e2"/>
          <sequenceFlow id="g1" sourceRef="order_in" targetRef="pack"/>
          <sequenceFlow id="g2" sourceRef="pack" targetRef="e2"/>
        </process>"#),
    )
    .await;
    let inst = start(
        &app,
        w["id"].as_str().expect("id"),
        json!({ "process_id": "shop", "business_key": "O-7" }),
    )
    .await;
    let id = inst["id"].as_str().expect("id").to_owned();
    let done = drive(&app, &id, json!({})).await;
    assert_eq!(done["status"], "completed", "{done}");

    // The warehouse's agent hears of the order from the sales agent that
    // sent it, in the instance's thread, linked to the send task's mission.
    let to_store = flow_messages(&app, "engineer").await;
    assert_eq!(to_store.len(), 1, "{to_store:?}");
    let m = &to_store[0];
    assert_eq!(m["from_agent"], "writer", "{m}");
    assert_eq!(m["to"], "role:engineer", "{m}");
    assert_eq!(m["performative"], "INFORM", "{m}");
    assert_eq!(m["subject"], "The order", "{m}");
    assert_eq!(m["conversation_id"], id.as_str(), "{m}");
    assert!(m["mission_id"].is_string(), "{m}");
    assert_eq!(m["content"]["message"], "Order", "{m}");
    assert_eq!(m["content"]["correlation_key"], "O-7", "{m}");
    assert_eq!(
        m["content"]["workflow"],
        json!({
            "instance_id": id, "workflow_id": w["id"], "version": 1,
            "message_flow": "mf_order", "from_node": "send", "from_role": "writer",
            "to_node": "order_in", "to_pool": "store_pool", "to_role": "engineer",
        }),
        "{m}"
    );
    // The black-box customer pool's role hears of both: the copy from the
    // sales agent, the confirmation from the workflow itself.
    let to_customer = flow_messages(&app, "reviewer").await;
    let by_flow = |flow: &str| {
        to_customer
            .iter()
            .find(|m| m["content"]["workflow"]["message_flow"] == flow)
            .unwrap_or_else(|| panic!("no message along {flow}: {to_customer:?}"))
            .clone()
    };
    assert_eq!(to_customer.len(), 2, "{to_customer:?}");
    assert_eq!(by_flow("mf_copy")["from_agent"], "writer");
    let confirm = by_flow("mf_confirm");
    assert_eq!(confirm["from_agent"], Value::Null, "{confirm}");
    assert_eq!(confirm["from"], format!("workflow:{id}"), "{confirm}");
    assert_eq!(confirm["subject"], "Confirmation", "{confirm}");
    assert_eq!(confirm["content"]["workflow"]["to_node"], Value::Null);
    // Nobody else was told.
    for other in ["planner", "researcher", "writer"] {
        assert_eq!(
            flow_messages(&app, other).await,
            Vec::<Value>::new(),
            "{other}"
        );
    }
    // The BPMN message itself still started the store's process.
    let started = wait_until_within("the store's instance", Duration::from_secs(30), || async {
        let (_, list) = app
            .get(&format!(
                "/v1/workflows/{}/instances",
                w["id"].as_str().expect("id")
            ))
            .await;
        list["instances"]
            .as_array()
            .and_then(|a| a.iter().find(|i| i["process_id"] == "store").cloned())
    })
    .await;
    assert_eq!(started["business_key"], "O-7", "{started}");
    app.stop().await;
}

/// Many starts of one workflow at once all start (they share its row
/// rather than queue on it) on the version they read, which their
/// instances freeze; an edit afterwards makes the next version.
#[tokio::test]
async fn concurrent_starts_of_one_workflow_all_start_on_one_frozen_version() {
    let app = spawn_app().await;
    let w = import_workflow(&app, timer_model("PT1H")).await;
    let id = w["id"].as_str().expect("id").to_owned();
    let starts = (0..24).map(|_| {
        let (app, id) = (&app, id.clone());
        async move {
            app.post(&format!("/v1/workflows/{id}/instances"), json!({}))
                .await
        }
    });
    let answers = futures::future::join_all(starts).await;
    for (status, inst) in &answers {
        assert_eq!(*status, StatusCode::CREATED, "{inst}");
        assert_eq!(inst["version"], 1, "{inst}");
    }
    // Frozen by its instances: no start wrote the version's row.
    let (_, shown) = app.get(&format!("/v1/workflows/{id}")).await;
    assert_eq!(shown["frozen"], true, "{shown}");
    let (status, edited) = app
        .post(
            &format!("/v1/workflows/{id}/nodes"),
            json!({ "id": "note", "type": "userTask", "name": "A note" }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{edited}");
    assert_eq!(edited["version"], 2, "{edited}");
    app.stop().await;
}
