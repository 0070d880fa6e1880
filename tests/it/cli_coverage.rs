//! Every operation an operator may call that changes something has a CLI
//! command (`coordinator::cli_client::routes::ROUTES`), unless it is on the
//! short allow-list below with its reason; and every example command parses.

use std::collections::BTreeSet;

use clap::Parser;
use coordinator::{
    cli::Cli,
    cli_client::routes::{ROUTES, split_words},
};
use serde_json::Value;

use crate::helpers::spawn_app;

/// Operations an operator token may call that deliberately have no command.
const NOT_CLI: &[(&str, &str, &str)] = &[
    (
        "POST",
        "/v1/workflows",
        "authoring element by element (and an empty workflow to author in) is for the agents' tools; people draw in a modeler and import (`coordinator workflow import`)",
    ),
    (
        "POST",
        "/v1/workflows/{id}/nodes",
        "authoring element by element (and an empty workflow to author in) is for the agents' tools; people draw in a modeler and import (`coordinator workflow import`)",
    ),
    (
        "DELETE",
        "/v1/workflows/{id}/nodes/{node_id}",
        "authoring element by element (and an empty workflow to author in) is for the agents' tools; people draw in a modeler and import (`coordinator workflow import`)",
    ),
    (
        "POST",
        "/v1/workflows/{id}/flows",
        "authoring element by element (and an empty workflow to author in) is for the agents' tools; people draw in a modeler and import (`coordinator workflow import`)",
    ),
    (
        "POST",
        "/v1/workflows/{id}/lanes",
        "authoring element by element (and an empty workflow to author in) is for the agents' tools; people draw in a modeler and import (`coordinator workflow import`)",
    ),
    // The generic tool gateway: each tool mirrors a route that has its own command.
    (
        "POST",
        "/v1/tools/{name}",
        "the chat tools' gateway for models",
    ),
    // Reads, though sent with POST: they change nothing.
    (
        "POST",
        "/v1/governance/check",
        "a dry run of the governance rules; changes nothing",
    ),
    // Agent-side plumbing that agents call for themselves.
    (
        "POST",
        "/v1/tenders/{id}/proposals",
        "agents bid in tenders; people open and award them",
    ),
    (
        "POST",
        "/v1/agents/{agent_id}/subscriptions",
        "a worker's own event subscription",
    ),
    (
        "DELETE",
        "/v1/agents/{agent_id}/subscriptions/{id}",
        "a worker's own event subscription",
    ),
];

/// Whether the operation's `Roles:` line admits an operator token.
fn operator_may_call(op: &Value) -> bool {
    let text = op["description"].as_str().unwrap_or_default();
    let Some(roles) = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Roles:"))
        .map(str::to_lowercase)
    else {
        return false;
    };
    roles.contains("operator") || roles.contains("any token") || roles.contains("those of the tool")
}

#[tokio::test]
async fn every_operator_action_has_a_cli_command() {
    let app = spawn_app().await;
    let (status, doc) = app.get("/openapi.json").await;
    assert_eq!(status, 200, "{doc}");
    let covered: BTreeSet<(&str, &str)> = ROUTES.iter().map(|(m, p, _)| (*m, *p)).collect();
    let allowed: BTreeSet<(&str, &str)> = NOT_CLI.iter().map(|(m, p, _)| (*m, *p)).collect();
    let mut missing = Vec::new();
    let mut seen = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            let method = method.to_uppercase();
            if !["POST", "PUT", "PATCH", "DELETE"].contains(&method.as_str()) {
                continue;
            }
            // The tool gateway is documented once per tool.
            let path = if path.starts_with("/v1/tools/") {
                "/v1/tools/{name}".to_owned()
            } else {
                path.clone()
            };
            seen.insert((method.clone(), path.clone()));
            if !operator_may_call(op) {
                continue;
            }
            let key = (method.as_str(), path.as_str());
            if !covered.contains(&key) && !allowed.contains(&key) {
                missing.push(format!("{method} {path}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "operator operations with no CLI command (add one to src/cli_client, \
         and a line to routes::ROUTES): {missing:#?}"
    );
    // The lists name only operations that exist.
    for (m, p) in covered.iter().chain(&allowed) {
        assert!(
            seen.contains(&((*m).to_owned(), (*p).to_owned())),
            "{m} {p} is listed but the document has no such operation"
        );
    }
    // Every example is a command line the CLI accepts.
    for (_, _, line) in ROUTES {
        if let Err(e) = Cli::try_parse_from(split_words(line)) {
            panic!("{line}: {e}");
        }
    }
    app.stop().await;
}
