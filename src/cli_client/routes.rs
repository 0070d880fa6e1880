//! Which command calls which REST operation: one line per operation that
//! changes something, with a command line that makes it. A test holds this
//! against the served OpenAPI document (every operator operation has a
//! line, unless it is on the test's allow-list) and parses every example.

/// `(method, path as the OpenAPI document writes it, an example command line)`.
pub const ROUTES: &[(&str, &str, &str)] = &[
    // Missions.
    (
        "POST",
        "/v1/missions",
        "coordinator mission create 'Write a report'",
    ),
    (
        "PATCH",
        "/v1/missions/{id}",
        "coordinator mission edit M --budget 10",
    ),
    (
        "DELETE",
        "/v1/missions/{id}",
        "coordinator mission delete M",
    ),
    (
        "POST",
        "/v1/missions/{id}/approve",
        "coordinator mission approve M",
    ),
    (
        "POST",
        "/v1/missions/{id}/reject-plan",
        "coordinator mission reject-plan M --feedback 'fewer steps'",
    ),
    (
        "POST",
        "/v1/missions/{id}/instructions",
        "coordinator mission instruct M 'skip the survey'",
    ),
    (
        "POST",
        "/v1/missions/{id}/save-as-routine",
        "coordinator mission save-as-routine M",
    ),
    (
        "POST",
        "/v1/missions/{id}/review",
        "coordinator mission review M --accept",
    ),
    (
        "POST",
        "/v1/missions/{id}/cancel",
        "coordinator mission cancel M",
    ),
    (
        "POST",
        "/v1/missions/{id}/pause",
        "coordinator mission pause M",
    ),
    (
        "POST",
        "/v1/missions/{id}/resume",
        "coordinator mission resume M",
    ),
    (
        "POST",
        "/v1/missions/{id}/continue",
        "coordinator mission continue M --retry draft",
    ),
    (
        "PUT",
        "/v1/missions/{id}/commitment",
        "coordinator mission commitment M --strategy cautious",
    ),
    (
        "PUT",
        "/v1/missions/{id}/allocation",
        "coordinator mission allocation M --mode tender",
    ),
    (
        "PUT",
        "/v1/missions/{id}/blackboard/{key}",
        "coordinator mission blackboard-set M notes --value '\"hi\"'",
    ),
    (
        "DELETE",
        "/v1/missions/{id}/blackboard/{key}",
        "coordinator mission blackboard-delete M notes",
    ),
    // One task.
    (
        "POST",
        "/v1/missions/{id}/tasks/{task}/resolve",
        "coordinator task resolve M draft --action retry --feedback 'shorter'",
    ),
    (
        "POST",
        "/v1/missions/{id}/tasks/{task}/cancel",
        "coordinator task cancel M draft",
    ),
    (
        "POST",
        "/v1/missions/{id}/tasks/{task}/delegate",
        "coordinator task delegate M draft --data '{}'",
    ),
    // Agents.
    (
        "POST",
        "/v1/agents",
        "coordinator agent register writer --endpoint http://127.0.0.1:9000",
    ),
    (
        "PATCH",
        "/v1/agents/{agent_id}",
        "coordinator agent update writer --trust 0.8",
    ),
    (
        "DELETE",
        "/v1/agents/{agent_id}",
        "coordinator agent retire writer",
    ),
    (
        "POST",
        "/v1/agents/{agent_id}/heartbeat",
        "coordinator agent heartbeat writer",
    ),
    (
        "POST",
        "/v1/messages",
        "coordinator agent send writer --body hi",
    ),
    (
        "POST",
        "/v1/agents/{agent_id}/inbox/{message_id}/read",
        "coordinator agent read writer MSG",
    ),
    (
        "POST",
        "/v1/agents/{agent_id}/inbox/{message_id}/ack",
        "coordinator agent ack writer MSG",
    ),
    (
        "POST",
        "/v1/reservations",
        "coordinator agent reserve 'src/*'",
    ),
    (
        "POST",
        "/v1/reservations/{id}/release",
        "coordinator agent release R",
    ),
    // What agents ask of people.
    (
        "POST",
        "/v1/tool-approvals/{id}/resolve",
        "coordinator tool-approval approve A",
    ),
    (
        "POST",
        "/v1/decisions",
        "coordinator decision request --data '{\"description\": \"Hire a translator\"}'",
    ),
    (
        "POST",
        "/v1/decisions/{id}/resolve",
        "coordinator decision resolve D --outcome approved",
    ),
    // Workspace plumbing.
    (
        "POST",
        "/v1/webhooks",
        "coordinator webhook create --url https://example.com/hook --secret 0123456789abcdef",
    ),
    (
        "DELETE",
        "/v1/webhooks/{id}",
        "coordinator webhook delete W",
    ),
    ("PUT", "/v1/org-spec", "coordinator org put spec.json"),
    ("DELETE", "/v1/org-spec", "coordinator org delete"),
    (
        "POST",
        "/v1/org-spec/validate",
        "coordinator org validate spec.json",
    ),
    ("POST", "/v1/tenders", "coordinator tender open --task T"),
    (
        "POST",
        "/v1/tenders/{id}/award",
        "coordinator tender award X",
    ),
    (
        "POST",
        "/v1/missions/{id}/team-decisions",
        "coordinator team-decision propose M --data '{}'",
    ),
    (
        "POST",
        "/v1/team-decisions/{id}/cancel",
        "coordinator team-decision cancel X --reason moot",
    ),
    (
        "POST",
        "/v1/contractors",
        "coordinator workforce add-contractor --data '{}'",
    ),
    (
        "PATCH",
        "/v1/contractors/{id}",
        "coordinator workforce update-contractor C --data '{}'",
    ),
    (
        "POST",
        "/v1/contractors/{id}/trust",
        "coordinator workforce trust C --data '{}'",
    ),
    (
        "POST",
        "/v1/work-packages",
        "coordinator workforce create-package --data '{}'",
    ),
    (
        "POST",
        "/v1/work-packages/{id}/transition",
        "coordinator workforce transition P --data '{}'",
    ),
    (
        "POST",
        "/v1/work-packages/{id}/assign",
        "coordinator workforce assign P --data '{}'",
    ),
    (
        "POST",
        "/v1/work-packages/{id}/progress",
        "coordinator workforce progress P --data '{}'",
    ),
    (
        "POST",
        "/v1/board/cards/{id}/move",
        "coordinator board move T --to done",
    ),
    (
        "POST",
        "/v1/handoffs",
        "coordinator handoff create --data '{}'",
    ),
    (
        "PUT",
        "/v1/agents/{agent_id}/beliefs",
        "coordinator bdi belief writer --data '{}'",
    ),
    (
        "POST",
        "/v1/agents/{agent_id}/desires",
        "coordinator bdi desire writer --data '{}'",
    ),
    (
        "POST",
        "/v1/agents/{agent_id}/desires/{desire_id}/drop",
        "coordinator bdi drop-desire writer D --data '{}'",
    ),
    (
        "POST",
        "/v1/agents/{agent_id}/goals",
        "coordinator bdi goal writer --data '{}'",
    ),
    (
        "POST",
        "/v1/agents/{agent_id}/goals/{goal_id}/status",
        "coordinator bdi goal-status writer G --data '{}'",
    ),
    (
        "POST",
        "/v1/agents/{agent_id}/intentions",
        "coordinator bdi intend writer --data '{}'",
    ),
    (
        "POST",
        "/v1/agents/{agent_id}/intentions/{intention_id}/status",
        "coordinator bdi intention-status writer I --data '{}'",
    ),
    (
        "POST",
        "/v1/agents/{agent_id}/intentions/{intention_id}/progress",
        "coordinator bdi intention-progress writer I --data '{}'",
    ),
    (
        "POST",
        "/v1/agents/{agent_id}/intentions/{intention_id}/reconsider",
        "coordinator bdi reconsider writer I --data '{}'",
    ),
    ("POST", "/v1/bdi/maintenance", "coordinator bdi maintenance"),
    (
        "POST",
        "/v1/tokens",
        "coordinator token create --role operator --url http://127.0.0.1:8080",
    ),
    ("DELETE", "/v1/tokens/{id}", "coordinator token revoke X"),
    // Workflows.
    (
        "POST",
        "/v1/workflows/import",
        "coordinator workflow import invoice.bpmn --name Invoices",
    ),
    (
        "POST",
        "/v1/workflows/{id}/versions",
        "coordinator workflow version W invoice.bpmn",
    ),
    (
        "POST",
        "/v1/workflows/validate",
        "coordinator workflow validate invoice.bpmn",
    ),
    (
        "DELETE",
        "/v1/workflows/{id}",
        "coordinator workflow delete W",
    ),
    (
        "POST",
        "/v1/workflows/{id}/instances",
        "coordinator workflow start W --var amount=1200 --business-key INV-7",
    ),
    (
        "POST",
        "/v1/workflow-instances/{id}/cancel",
        "coordinator workflow cancel I",
    ),
    (
        "POST",
        "/v1/workflow-instances/{id}/tokens/{token}/complete",
        "coordinator workflow complete I 3 --output '{\"approved\": true}'",
    ),
    (
        "POST",
        "/v1/workflow-instances/{id}/tokens/{token}/fail",
        "coordinator workflow fail I 3 --code REJECTED --message 'not ours'",
    ),
    (
        "POST",
        "/v1/workflow-instances/{id}/tokens/{token}/retry",
        "coordinator workflow retry I 3",
    ),
    (
        "POST",
        "/v1/workflow-instances/{id}/variables",
        "coordinator workflow set I --var approved=true",
    ),
    (
        "POST",
        "/v1/workflow-messages",
        "coordinator workflow message 'Payment received' --key INV-7",
    ),
    (
        "POST",
        "/v1/workflow-signals",
        "coordinator workflow signal 'Quarter closed'",
    ),
];

/// Splits an example command line into arguments (single quotes group words).
pub fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            c if c.is_whitespace() && !quoted => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            c => word.push(c),
        }
    }
    if any || !word.is_empty() {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    #[test]
    fn every_example_parses_and_workspace_commands_call_their_route() {
        for (method, path, line) in ROUTES {
            let cli =
                Cli::try_parse_from(split_words(line)).unwrap_or_else(|e| panic!("{line}: {e}"));
            if let Command::Workspace(command) = &cli.command {
                // Files the examples name need not exist: only the route matters here.
                let Ok(call) = crate::cli_client::workspace_call(command) else {
                    continue;
                };
                assert_eq!(call.method, *method, "{line}");
                let template: Vec<&str> = path.trim_start_matches('/').split('/').collect();
                assert_eq!(call.path.len(), template.len(), "{line}");
                for (got, want) in call.path.iter().zip(&template) {
                    assert!(want.starts_with('{') || got == want, "{line}: {path}");
                }
            }
        }
    }

    #[test]
    fn words_split_like_a_shell() {
        assert_eq!(
            split_words("a 'b c' d '' e"),
            vec!["a", "b c", "d", "", "e"]
        );
    }
}
