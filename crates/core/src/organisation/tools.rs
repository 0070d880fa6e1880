//! Which agent tools a role may call (seed 003's role-based tool access):
//! the role's grants (`RoleSpec::tools`, inherited through `extends`), then
//! norms on tools (`target: "tool:<name>"` or `"tool:group:<group>"`): a
//! prohibition refuses whatever the grants say, a permission or obligation
//! allows a tool the grants leave out.

use super::{Modality, NormSpec, OrgSpec, key};

/// What the spec says of one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolAccess {
    /// The call may go ahead.
    Allowed,
    /// The call is refused; the reason names the role and, when a norm
    /// decided it, the norm.
    Refused {
        /// Why, in one sentence.
        reason: String,
        /// The norm that refused it, if one did.
        norm: Option<String>,
    },
}

/// The tool part of a norm target (`tool:<name>`), if it is one.
pub fn tool_target(target: &str) -> Option<&str> {
    target
        .strip_prefix("tool:")
        .or_else(|| target.strip_prefix("TOOL:"))
}

/// Whether grant or tool target `pattern` covers `tool` of `group`.
fn covers(pattern: &str, tool: &str, group: &str) -> bool {
    let p = key(pattern.trim());
    p == "*"
        || p == key(tool)
        || p.strip_prefix("group:")
            .is_some_and(|g| g == key(group) || g == "*")
}

impl OrgSpec {
    /// Whether an agent playing `role` may call `tool` (of catalogue group
    /// `group`). Roles the spec does not define, and roles without grants
    /// anywhere in their lineage, may call every tool unless a norm
    /// prohibits it.
    pub fn tool_access(&self, role: &str, tool: &str, group: &str) -> ToolAccess {
        let lineage = self.lineage(role);
        let norms: Vec<&NormSpec> = self
            .norms
            .iter()
            .filter(|n| lineage.contains(&key(&n.role)))
            .filter(|n| tool_target(&n.target).is_some_and(|t| covers(t, tool, group)))
            .collect();
        if let Some(n) = norms.iter().find(|n| n.modality == Modality::Prohibition) {
            return ToolAccess::Refused {
                reason: format!(
                    "norm '{}' prohibits role '{}' from calling '{tool}'",
                    n.id, n.role
                ),
                norm: Some(n.id.clone()),
            };
        }
        if !norms.is_empty() {
            return ToolAccess::Allowed;
        }
        let grants: Vec<&String> = lineage
            .iter()
            .filter_map(|r| self.role(r))
            .filter_map(|r| r.tools.as_ref())
            .flatten()
            .collect();
        let declared = lineage
            .iter()
            .filter_map(|r| self.role(r))
            .any(|r| r.tools.is_some());
        if !declared || grants.iter().any(|g| covers(g, tool, group)) {
            return ToolAccess::Allowed;
        }
        ToolAccess::Refused {
            reason: format!(
                "role '{role}' is not granted '{tool}' (its grants: {})",
                if grants.is_empty() {
                    "none".to_owned()
                } else {
                    grants
                        .iter()
                        .map(|g| g.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
            norm: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(doc: serde_json::Value) -> OrgSpec {
        OrgSpec::parse(&doc).expect("valid spec")
    }

    #[test]
    fn roles_without_grants_may_call_every_tool() {
        let s = spec(json!({"roles": [{"id": "writer"}]}));
        assert_eq!(
            s.tool_access("writer", "agent_message", "communication"),
            ToolAccess::Allowed
        );
        assert_eq!(
            s.tool_access("stranger", "anything", "task"),
            ToolAccess::Allowed
        );
    }

    #[test]
    fn grants_name_tools_or_groups_and_are_inherited() {
        let s = spec(json!({"roles": [
            {"id": "worker", "tools": ["my_task", "group:task"]},
            {"id": "lead", "extends": "worker", "tools": ["group:communication"]}
        ]}));
        assert_eq!(
            s.tool_access("worker", "blackboard_write", "task"),
            ToolAccess::Allowed
        );
        let refused = s.tool_access("worker", "agent_message", "communication");
        let ToolAccess::Refused { reason, norm } = refused else {
            panic!("expected a refusal");
        };
        assert!(
            reason.contains("role 'worker'") && reason.contains("group:task"),
            "{reason}"
        );
        assert_eq!(norm, None);
        assert_eq!(
            s.tool_access("lead", "agent_message", "communication"),
            ToolAccess::Allowed
        );
        assert_eq!(
            s.tool_access("LEAD", "blackboard_read", "task"),
            ToolAccess::Allowed
        );
    }

    #[test]
    fn a_prohibition_wins_and_a_permission_adds() {
        let s = spec(json!({
            "roles": [{"id": "worker", "tools": ["group:task"]}, {"id": "intern", "extends": "worker"}],
            "norms": [
                {"id": "no-delete", "role": "intern", "modality": "prohibition", "target": "tool:blackboard_delete"},
                {"id": "may-talk", "role": "worker", "modality": "permission", "target": "tool:agent_message"}
            ]
        }));
        let ToolAccess::Refused { reason, norm } =
            s.tool_access("intern", "blackboard_delete", "task")
        else {
            panic!("expected a refusal");
        };
        assert_eq!(norm.as_deref(), Some("no-delete"));
        assert!(reason.contains("no-delete"), "{reason}");
        assert_eq!(
            s.tool_access("worker", "blackboard_delete", "task"),
            ToolAccess::Allowed
        );
        assert_eq!(
            s.tool_access("intern", "agent_message", "communication"),
            ToolAccess::Allowed
        );
    }

    #[test]
    fn tool_targets_are_valid_norm_targets() {
        let ok = OrgSpec::parse(&json!({
            "roles": [{"id": "w"}],
            "norms": [{"id": "n", "role": "w", "modality": "prohibition", "target": "tool:group:bdi"}]
        }));
        assert!(ok.is_ok(), "{ok:?}");
        let bad = OrgSpec::parse(&json!({
            "roles": [{"id": "w"}],
            "norms": [{"id": "n", "role": "w", "modality": "prohibition", "target": "tool:"}]
        }));
        assert!(bad.is_err());
    }
}
