//! `coordinator workflow …` against the real service: a file drawn in a
//! modeler is validated, imported, started with variables, shown, moved by
//! a person's answer and a message, exported and imported again as the
//! next version; bad input is a usage error or the service's refusal.

use crate::{cli::cli, helpers::spawn_app};

const MODEL: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="t">
  <message id="m" name="Payment received"/>
  <process id="invoice" name="Invoice" isExecutable="true">
    <startEvent id="s"/>
    <userTask id="approve" name="Approve"/>
    <exclusiveGateway id="g" default="no"/>
    <receiveTask id="pay" messageRef="m"/>
    <endEvent id="paid"/><endEvent id="rejected"/>
    <sequenceFlow id="f1" sourceRef="s" targetRef="approve"/>
    <sequenceFlow id="f2" sourceRef="approve" targetRef="g"/>
    <sequenceFlow id="yes" sourceRef="g" targetRef="pay"><conditionExpression>${approved &amp;&amp; amount &gt; 100}</conditionExpression></sequenceFlow>
    <sequenceFlow id="no" sourceRef="g" targetRef="rejected"/>
    <sequenceFlow id="f3" sourceRef="pay" targetRef="paid"/>
  </process>
</definitions>"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_runs_a_workflow_from_the_cli() {
    let app = spawn_app().await;
    let (url, token) = (app.url.as_str(), app.token.as_str());
    let dir = std::env::temp_dir().join(format!("cli-workflows-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let file = dir.join("invoice.bpmn");
    std::fs::write(&file, MODEL).expect("write the model");
    let file = file.to_str().expect("utf-8 path");

    let checked = cli(url, token, &["workflow", "validate", file]).await.ok();
    assert!(
        checked.stdout.ends_with("valid: it can run\n"),
        "{checked:#?}"
    );

    let imported = cli(url, token, &["workflow", "import", file, "--json"])
        .await
        .ok()
        .json();
    let w = imported["id"].as_str().expect("id").to_owned();
    assert_eq!(imported["name"], "Invoice");
    let listed = cli(url, token, &["workflow", "list"]).await.ok().stdout;
    assert!(
        listed.contains(&w) && listed.contains("Invoice"),
        "{listed}"
    );

    let started = cli(
        url,
        token,
        &[
            "workflow",
            "start",
            &w,
            "--var",
            "amount=1200",
            "--var",
            "approved=true",
            "--business-key",
            "INV-7",
            "--json",
        ],
    )
    .await
    .ok()
    .json();
    let i = started["id"].as_str().expect("id").to_owned();
    assert_eq!(started["variables"]["amount"], 1200, "{started}");
    assert_eq!(started["variables"]["approved"], true, "{started}");
    let person = started["human_tasks"][0]["token"].as_u64().expect("token");

    let shown = cli(url, token, &["workflow", "instance", &i])
        .await
        .ok()
        .stdout;
    assert!(shown.contains("status running"), "{shown}");
    assert!(
        shown.contains(&format!("a person's task at approve (token {person})")),
        "{shown}"
    );

    let done = cli(
        url,
        token,
        &[
            "workflow",
            "complete",
            &i,
            &person.to_string(),
            "--output",
            "{\"by\": \"ops\"}",
        ],
    )
    .await
    .ok()
    .stdout;
    assert!(done.contains("status running"), "{done}");
    assert!(
        done.contains("token") && done.contains("at pay waits for message"),
        "{done}"
    );

    let sent = cli(
        url,
        token,
        &["workflow", "message", "Payment received", "--key", "INV-7"],
    )
    .await
    .ok()
    .stdout;
    assert!(
        sent.contains(&format!("delivered to instance {i}")),
        "{sent}"
    );
    let ended = cli(url, token, &["workflow", "instance", &i, "--json"])
        .await
        .ok()
        .json();
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["variables"]["by"], "ops", "{ended}");

    // Export, and the export imports again as the next version.
    let out = dir.join("exported.bpmn");
    let out = out.to_str().expect("utf-8 path");
    cli(url, token, &["workflow", "export", &w, "-o", out])
        .await
        .ok();
    let exported = std::fs::read_to_string(out).expect("exported");
    assert!(exported.contains("bpmn:definitions"), "{exported}");
    let v2 = cli(url, token, &["workflow", "version", &w, out, "--json"])
        .await
        .ok()
        .json();
    assert_eq!(v2["version"], 2, "{v2}");
    assert_eq!(v2["model"]["processes"], imported["model"]["processes"]);

    // Refusals: the service's (an instance keeps the workflow) and usage.
    let refused = cli(url, token, &["workflow", "delete", &w]).await;
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(refused.stderr.contains("has instances"), "{refused:#?}");
    let bad = cli(url, token, &["workflow", "start", &w, "--var", "novalue"]).await;
    assert_eq!(bad.code, 2, "{bad:#?}");
    let missing = cli(url, token, &["workflow", "import", "/nonexistent.bpmn"]).await;
    assert_eq!(missing.code, 2, "{missing:#?}");
    let not_bpmn = dir.join("not.bpmn");
    std::fs::write(&not_bpmn, "<x/>").expect("write");
    let not_bpmn = cli(
        url,
        token,
        &["workflow", "import", not_bpmn.to_str().expect("path")],
    )
    .await;
    assert_eq!(not_bpmn.code, 1, "{not_bpmn:#?}");
    assert!(not_bpmn.stderr.contains("invalid_bpmn"), "{not_bpmn:#?}");
    let _ = std::fs::remove_dir_all(&dir);
    app.stop().await;
}
