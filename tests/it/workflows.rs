//! BPMN workflows over HTTP: the MIWG reference models import, validate,
//! export and import again to the same model; bad documents change nothing;
//! authoring through REST and the agent tools; versions and tenancy.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

const MIWG: &[&str] = &["A.1.0", "A.2.0", "A.3.0", "A.4.0", "B.1.0", "C.1.0"];

fn miwg(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/crates/bpmn/tests/miwg/{name}.bpmn",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Sends `body` with `content_type` and the admin token; (status, JSON or null).
async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (StatusCode, Value) {
    let resp = app
        .http
        .request(method, format!("{}{path}", app.url))
        .bearer_auth(&app.token)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .expect("request");
    let status = StatusCode::from_u16(resp.status().as_u16()).expect("status");
    (status, resp.json().await.unwrap_or(Value::Null))
}

async fn export(app: &TestApp, id: &str, version: Option<i64>) -> (String, String) {
    let q = version.map(|v| format!("?version={v}")).unwrap_or_default();
    let resp = app
        .http
        .get(format!("{}/v1/workflows/{id}/bpmn{q}", app.url))
        .bearer_auth(&app.token)
        .send()
        .await
        .expect("export");
    assert_eq!(resp.status().as_u16(), 200);
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (ct, resp.text().await.expect("text"))
}

#[tokio::test]
async fn every_miwg_model_imports_exports_and_imports_again_to_the_same_model() {
    let app = spawn_app().await;
    for name in MIWG {
        let (status, first) = send(
            &app,
            Method::POST,
            "/v1/workflows/import",
            "application/xml",
            miwg(name),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{name}: {first}");
        assert_eq!(first["version"], 1, "{name}");
        assert_eq!(first["imported"], true, "{name}");
        assert!(first["validation"]["valid"].is_boolean(), "{name}: {first}");
        let id = first["id"].as_str().expect("id").to_owned();

        let (ct, xml) = export(&app, &id, None).await;
        assert!(ct.starts_with("application/xml"), "{name}: {ct}");
        assert!(xml.contains("BPMNDiagram"), "{name}: the diagram is kept");
        // The export, imported as the next version, is the same model.
        let (status, second) = send(
            &app,
            Method::POST,
            &format!("/v1/workflows/{id}/versions"),
            "text/xml",
            xml.into_bytes(),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{name}: {second}");
        assert_eq!(second["version"], 2, "{name}");
        assert_eq!(second["model"], first["model"], "{name}: round trip");
        assert_eq!(second["validation"], first["validation"], "{name}");
        // Version 1 is still there as it was.
        let (_, v1) = app.get(&format!("/v1/workflows/{id}?version=1")).await;
        assert_eq!(v1["model"], first["model"], "{name}");
    }
    let (_, list) = app.get("/v1/workflows?limit=4").await;
    assert_eq!(list["workflows"].as_array().map(Vec::len), Some(4));
    let cursor = list["next_cursor"].as_str().expect("a second page");
    let (_, rest) = app.get(&format!("/v1/workflows?cursor={cursor}")).await;
    assert_eq!(rest["workflows"].as_array().map(Vec::len), Some(2));
    assert!(rest["next_cursor"].is_null());
    app.stop().await;
}

#[tokio::test]
async fn c_1_0_names_its_gateways_conditions_and_lanes() {
    let app = spawn_app().await;
    let (status, w) = send(
        &app,
        Method::POST,
        "/v1/workflows/import",
        "application/xml",
        miwg("C.1.0"),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{w}");
    let model = w["model"].to_string();
    for needle in [
        "${approved}",
        "${clarified == 'yes'}",
        "Approver",
        "Accountant",
    ] {
        assert!(model.contains(needle), "{needle} in the model");
    }
    let (status, report) = app
        .get(&format!(
            "/v1/workflows/{}/validation",
            w["id"].as_str().expect("id")
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(report, w["validation"]);
    app.stop().await;
}

#[tokio::test]
async fn bad_documents_are_refused_and_store_nothing() {
    let app = spawn_app().await;
    let cases: &[(&str, &[u8], StatusCode, &str)] = &[
        (
            "application/xml",
            b"<definitions",
            StatusCode::BAD_REQUEST,
            "malformed_xml",
        ),
        (
            "application/xml",
            b"not xml at all",
            StatusCode::BAD_REQUEST,
            "malformed_xml",
        ),
        (
            "application/xml",
            b"<?xml version=\"1.0\"?><html><body/></html>",
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_bpmn",
        ),
        (
            "application/json",
            b"{\"name\": \"x\"}",
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
        ),
    ];
    for (ct, body, want, code) in cases {
        let (status, err) = send(
            &app,
            Method::POST,
            "/v1/workflows/import",
            ct,
            body.to_vec(),
        )
        .await;
        assert_eq!(status, *want, "{}: {err}", String::from_utf8_lossy(body));
        assert_eq!(err["error"]["code"], *code, "{err}");
    }
    // An entity-expansion document is refused, not expanded.
    let bomb = br#"<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]><definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d"><process id="p" name="&b;"/></definitions>"#;
    let (status, err) = send(
        &app,
        Method::POST,
        "/v1/workflows/import",
        "application/xml",
        bomb.to_vec(),
    )
    .await;
    assert!(status.is_client_error(), "{status}: {err}");
    let (_, list) = app.get("/v1/workflows").await;
    assert_eq!(list["workflows"], json!([]), "nothing was stored");
    // Validating without storing.
    let (status, report) = send(
        &app,
        Method::POST,
        "/v1/workflows/validate",
        "application/xml",
        miwg("A.1.0"),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["valid"], true, "{report}");
    let (_, list) = app.get("/v1/workflows").await;
    assert_eq!(list["workflows"], json!([]), "validate stores nothing");
    app.stop().await;
}

/// Authoring a small approval process through REST, as a person would.
#[tokio::test]
async fn a_workflow_authored_node_by_node_validates_and_exports() {
    let app = spawn_app().await;
    let (status, w) = app
        .post("/v1/workflows", json!({ "name": "Expense approval" }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{w}");
    let id = w["id"].as_str().expect("id").to_owned();
    assert_eq!(
        w["validation"]["valid"], false,
        "an empty process has no start: {w}"
    );

    let nodes = [
        ("start", "startEvent", "Expense submitted"),
        ("check", "userTask", "Check expense"),
        ("big", "exclusiveGateway", "Over 1000?"),
        ("cfo", "userTask", "CFO approves"),
        ("pay", "serviceTask", "Pay"),
        ("end", "endEvent", "Paid"),
    ];
    for (node, kind, name) in nodes {
        let (status, w) = app
            .post(
                &format!("/v1/workflows/{id}/nodes"),
                json!({ "id": node, "type": kind, "name": name }),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{node}: {w}");
    }
    let flows = [
        ("f1", "start", "check", None),
        ("f2", "check", "big", None),
        ("f3", "big", "cfo", Some("${amount > 1000}")),
        ("f4", "big", "pay", Some("= amount <= 1000")),
        ("f5", "cfo", "pay", None),
        ("f6", "pay", "end", None),
    ];
    let mut last = Value::Null;
    for (flow, source, target, condition) in flows {
        let mut body = json!({ "id": flow, "source": source, "target": target });
        if let Some(c) = condition {
            body["condition"] = json!(c);
        }
        let (status, w) = app.post(&format!("/v1/workflows/{id}/flows"), body).await;
        assert_eq!(status, StatusCode::OK, "{flow}: {w}");
        last = w;
    }
    assert_eq!(last["validation"]["valid"], true, "{}", last["validation"]);
    assert_eq!(
        last["version"], 1,
        "edits of an unfrozen version rewrite it"
    );

    // Refusals change nothing.
    let (status, err) = app
        .post(
            &format!("/v1/workflows/{id}/nodes"),
            json!({ "id": "check", "type": "task", "name": "again" }),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{err}");
    assert_eq!(err["error"]["code"], "duplicate_element");
    let (status, err) = app
        .post(
            &format!("/v1/workflows/{id}/flows"),
            json!({ "id": "f9", "source": "nowhere", "target": "end" }),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    let (status, err) = app
        .post(
            &format!("/v1/workflows/{id}/flows"),
            json!({ "id": "f9", "source": "big", "target": "end", "condition": "${amount >" }),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    let (status, err) = app
        .post(
            &format!("/v1/workflows/{id}/nodes"),
            json!({ "id": "x", "type": "task", "name": "x", "version": 7 }),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{err}");
    assert_eq!(err["error"]["code"], "version_conflict");
    let (status, err) = app
        .post(
            &format!("/v1/workflows/{id}/nodes"),
            json!({ "id": "x", "type": "teleport", "name": "x" }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    let (_, now) = app.get(&format!("/v1/workflows/{id}")).await;
    assert_eq!(now["model"], last["model"], "refused edits changed nothing");

    // A lane maps to a role; the export opens with the new nodes laid out.
    let (status, w) = app
        .post(
            &format!("/v1/workflows/{id}/lanes"),
            json!({ "name": "Finance", "role": "cfo" }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{w}");
    assert!(w["model"].to_string().contains("\"cfo\""), "{}", w["model"]);
    let (_, xml) = export(&app, &id, None).await;
    for element in ["start", "check", "big", "cfo", "pay", "end", "f3"] {
        assert!(
            xml.contains(&format!("bpmnElement=\"{element}\"")),
            "{element} has a shape or edge"
        );
    }
    assert!(xml.contains("amount &gt; 1000") || xml.contains("amount > 1000"));
    let (status, again) = send(
        &app,
        Method::POST,
        "/v1/workflows/import",
        "application/xml",
        xml.into_bytes(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{again}");
    assert_eq!(
        again["model"], w["model"],
        "export → import is the same model"
    );

    // Removing a node takes its flows with it.
    let (status, w) = app
        .request(
            Method::DELETE,
            &format!("/v1/workflows/{id}/nodes/cfo"),
            None,
            Some(&app.token),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{w}");
    let model = w["model"].to_string();
    assert!(
        !model.contains("\"f3\"") && !model.contains("\"f5\""),
        "{model}"
    );
    app.stop().await;
}

/// A version an instance started from is frozen: an edit makes the next
/// version and leaves it as it was.
#[tokio::test]
async fn editing_a_frozen_version_makes_the_next_one() {
    let app = spawn_app().await;
    let (_, w) = send(
        &app,
        Method::POST,
        "/v1/workflows/import",
        "application/xml",
        miwg("A.1.0"),
    )
    .await;
    let id = w["id"].as_str().expect("id").to_owned();
    sqlx::query("UPDATE workflow_versions SET frozen = true WHERE workflow_id = $1::uuid")
        .bind(&id)
        .execute(&app.pool)
        .await
        .expect("freeze");
    let (status, edited) = app
        .post(
            &format!("/v1/workflows/{id}/nodes"),
            json!({ "id": "extra", "type": "task", "name": "Extra", "version": 1 }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{edited}");
    assert_eq!(edited["version"], 2);
    assert_eq!(edited["frozen"], false);
    let (_, v1) = app.get(&format!("/v1/workflows/{id}?version=1")).await;
    assert_eq!(v1["model"], w["model"], "version 1 is untouched");
    assert_eq!(v1["frozen"], true);
    app.stop().await;
}
