//! Tool-use policies and the approvals a worker asks for before a guarded
//! tool call.
//!
//! A task declares its policy under `inputs.tool_policy` (see
//! [`ToolPolicy`]); the worker receives it in the dispatch payload. Before a
//! guarded call the worker asks `POST /v1/attempts/{id}/tool-approvals`, and
//! [`judge`] decides, in this order:
//!
//! 1. a tool outside `allowed_tools` is **denied**;
//! 2. a call that would take the attempt over a budget (seconds since
//!    dispatch, tokens, files changed, counted over the attempt's granted and
//!    pending requests) is **denied**: budgets are hard limits, like the
//!    governance thresholds, and no person can lift them for one call;
//! 3. a sensitive call (a path matching a protected glob, or a diff over
//!    `max_diff_lines`) **needs approval**, even when the policy auto-approves;
//! 4. otherwise the call is **auto-approved**, unless `auto_approve` is false.
//!
//! A request that needs approval is `pending` until a human or stakeholder
//! resolves it `approved` or `denied` (with a rationale), or until its
//! timeout, when it becomes `timed_out` and the policy's `on_timeout`
//! outcome (default: denied) applies. Timeouts are applied by the engine's
//! sweep within one reconcile period, and sooner when anyone reads or
//! resolves the request; both go through [`expire_overdue`], whose update is
//! guarded by `status = 'pending'` (rows locked with SKIP LOCKED), so a
//! request times out, with its one event, exactly once.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::{IllegalTransition, text_enum};

/// Default seconds a request waits for a person (`--tool-approval-timeout-secs`).
pub const DEFAULT_TIMEOUT_SECS: u64 = 300;

/// A task's tool-use policy, declared as `inputs.tool_policy`. Every field
/// is optional: an empty policy allows every tool and auto-approves it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolPolicy {
    /// The tools the task may call (`null`: any tool; `[]`: none).
    #[serde(default)]
    pub allowed_tools: Option<Vec<String>>,
    /// True (default): allowed, in-budget, non-sensitive calls need no person.
    #[serde(default = "yes")]
    pub auto_approve: bool,
    /// Cumulative limits per attempt.
    #[serde(default)]
    pub budget: ToolBudget,
    /// Calls that always escalate to a person.
    #[serde(default)]
    pub sensitive: Sensitive,
    /// Seconds a request waits for a person (default: the service's setting).
    #[serde(default)]
    pub approval_timeout_secs: Option<u64>,
    /// What a timed-out request means: `denied` (default) or `approved`.
    #[serde(default)]
    pub on_timeout: Option<Outcome>,
}

impl Default for ToolPolicy {
    /// What a task without a policy gets: any tool, auto-approved.
    fn default() -> Self {
        ToolPolicy {
            allowed_tools: None,
            auto_approve: true,
            budget: ToolBudget::default(),
            sensitive: Sensitive::default(),
            approval_timeout_secs: None,
            on_timeout: None,
        }
    }
}

/// `true`, as a serde default.
pub fn yes() -> bool {
    true
}

/// Budget limits of one attempt; `null` sets no limit.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolBudget {
    /// Seconds since dispatch after which no tool call is allowed.
    #[serde(default)]
    pub max_secs: Option<i64>,
    /// Tokens the attempt's tool calls may use in total.
    #[serde(default)]
    pub max_tokens: Option<i64>,
    /// Files the attempt's tool calls may change in total.
    #[serde(default)]
    pub max_files_changed: Option<i64>,
}

/// What makes a call sensitive.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Sensitive {
    /// Protected path globs (`*` within a segment, `**` across segments, `?` one character).
    #[serde(default)]
    pub paths: Vec<String>,
    /// A diff larger than this many lines escalates.
    #[serde(default)]
    pub max_diff_lines: Option<i64>,
}

impl ToolPolicy {
    /// The policy of a task, from its inputs: `Ok(None)` when it declares
    /// none, `Err` with the problem when `inputs.tool_policy` is malformed.
    pub fn of_inputs(inputs: &Value) -> Result<Option<ToolPolicy>, String> {
        match inputs.get("tool_policy") {
            None | Some(Value::Null) => Ok(None),
            Some(v) => serde_json::from_value(v.clone())
                .map(Some)
                .map_err(|e| format!("inputs.tool_policy is invalid: {e}")),
        }
    }
}

/// A tool call a worker wants to make.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCall {
    /// Tool name.
    pub tool: String,
    /// Paths it would touch.
    pub paths: Vec<String>,
    /// Lines of diff it would write.
    pub diff_lines: i64,
    /// Tokens it would use.
    pub tokens: i64,
    /// Files it would change.
    pub files_changed: i64,
}

/// What the attempt has already used (granted and pending requests).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// Seconds since dispatch.
    pub elapsed_secs: i64,
    /// Tokens.
    pub tokens: i64,
    /// Files changed.
    pub files_changed: i64,
}

/// The policy's verdict on a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Go ahead.
    AutoApproved,
    /// A person must approve it first; the reasons say why.
    NeedsApproval(Vec<String>),
    /// Refused; the reason says why.
    Denied(String),
}

impl Verdict {
    /// `auto_approved`, `needs_approval` or `denied`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::AutoApproved => "auto_approved",
            Verdict::NeedsApproval(_) => "needs_approval",
            Verdict::Denied(_) => "denied",
        }
    }

    /// The reasons, for the record.
    pub fn reasons(&self) -> Vec<String> {
        match self {
            Verdict::AutoApproved => vec!["within the tool policy".into()],
            Verdict::NeedsApproval(r) => r.clone(),
            Verdict::Denied(r) => vec![r.clone()],
        }
    }
}

/// Judges `call` against `policy`, given what the attempt has `used`.
pub fn judge(policy: &ToolPolicy, used: Usage, call: &ToolCall) -> Verdict {
    if let Some(allowed) = &policy.allowed_tools
        && !allowed.iter().any(|t| t.trim() == call.tool.trim())
    {
        return Verdict::Denied(format!(
            "tool '{}' is not in the allowed list [{}]",
            call.tool,
            allowed.join(", ")
        ));
    }
    let b = &policy.budget;
    if let Some(max) = b.max_secs
        && used.elapsed_secs > max
    {
        return Verdict::Denied(format!(
            "time budget exceeded: {} s since dispatch, limit {max} s",
            used.elapsed_secs
        ));
    }
    if let Some(max) = b.max_tokens
        && used.tokens + call.tokens > max
    {
        return Verdict::Denied(format!(
            "token budget exceeded: {} used + {} requested > {max}",
            used.tokens, call.tokens
        ));
    }
    if let Some(max) = b.max_files_changed
        && used.files_changed + call.files_changed > max
    {
        return Verdict::Denied(format!(
            "files-changed budget exceeded: {} changed + {} requested > {max}",
            used.files_changed, call.files_changed
        ));
    }
    let mut reasons = Vec::new();
    for path in &call.paths {
        if let Some(glob) = policy.sensitive.paths.iter().find(|g| glob_match(g, path)) {
            reasons.push(format!("path '{path}' matches protected pattern '{glob}'"));
        }
    }
    if let Some(max) = policy.sensitive.max_diff_lines
        && call.diff_lines > max
    {
        reasons.push(format!(
            "diff of {} lines is over the limit of {max}",
            call.diff_lines
        ));
    }
    if reasons.is_empty() && !policy.auto_approve {
        reasons.push("the policy requires approval for every tool call".into());
    }
    if reasons.is_empty() {
        Verdict::AutoApproved
    } else {
        Verdict::NeedsApproval(reasons)
    }
}

/// Whether `path` matches `glob`: `**` matches anything (including `/`),
/// `*` anything but `/`, `?` one character other than `/`.
pub fn glob_match(glob: &str, path: &str) -> bool {
    fn go(g: &[char], p: &[char]) -> bool {
        match g.first() {
            None => p.is_empty(),
            Some('*') if g.get(1) == Some(&'*') => {
                let rest = &g[2..];
                // `**/` also matches zero directories.
                if rest.first() == Some(&'/') && go(&rest[1..], p) {
                    return true;
                }
                (0..=p.len()).any(|i| go(rest, &p[i..]))
            }
            Some('*') => {
                let rest = &g[1..];
                for i in 0..=p.len() {
                    if go(rest, &p[i..]) {
                        return true;
                    }
                    if p.get(i) == Some(&'/') {
                        break;
                    }
                }
                false
            }
            Some('?') => p.first().is_some_and(|c| *c != '/') && go(&g[1..], &p[1..]),
            Some(c) => p.first() == Some(c) && go(&g[1..], &p[1..]),
        }
    }
    let g: Vec<char> = glob.chars().collect();
    let p: Vec<char> = path.trim_start_matches("./").chars().collect();
    go(&g, &p)
}

/// Where a tool-approval request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalStatus {
    /// Waiting for a person.
    Pending,
    /// The call may go ahead (final).
    Approved,
    /// The call must not be made (final).
    Denied,
    /// Nobody decided in time; the timeout outcome applies (final).
    TimedOut,
}

text_enum!(ApprovalStatus {
    Pending => "pending",
    Approved => "approved",
    Denied => "denied",
    TimedOut => "timed_out",
});

/// How a person resolves a request (also a policy's timeout outcome).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Go ahead.
    Approved,
    /// Do not.
    Denied,
}

text_enum!(Outcome as "ToolApprovalOutcome", {
    Approved => "approved",
    Denied => "denied",
});

impl Outcome {
    /// The status it leaves a request in.
    pub fn status(self) -> ApprovalStatus {
        match self {
            Outcome::Approved => ApprovalStatus::Approved,
            Outcome::Denied => ApprovalStatus::Denied,
        }
    }
}

/// What resolving does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Move to this status.
    Apply(ApprovalStatus),
    /// Already resolved this way: nothing changes (an idempotent retry).
    AlreadyDone,
}

impl ApprovalStatus {
    /// A person resolves: a pending request takes either outcome; the same
    /// outcome again changes nothing; anything else is refused.
    pub fn resolve(self, outcome: Outcome) -> Result<Resolution, IllegalTransition> {
        match self {
            ApprovalStatus::Pending => Ok(Resolution::Apply(outcome.status())),
            s if s == outcome.status() => Ok(Resolution::AlreadyDone),
            s => Err(IllegalTransition {
                entity: "tool_approval",
                from: s.as_str(),
                event: outcome.as_str(),
            }),
        }
    }

    /// The timeout passes: only a pending request times out.
    pub fn time_out(self) -> Result<ApprovalStatus, IllegalTransition> {
        match self {
            ApprovalStatus::Pending => Ok(ApprovalStatus::TimedOut),
            s => Err(IllegalTransition {
                entity: "tool_approval",
                from: s.as_str(),
                event: "time_out",
            }),
        }
    }

    /// Whether the worker may make the call: `None` while pending.
    pub fn granted(self, timeout_outcome: Outcome) -> Option<bool> {
        match self {
            ApprovalStatus::Pending => None,
            ApprovalStatus::Approved => Some(true),
            ApprovalStatus::Denied => Some(false),
            ApprovalStatus::TimedOut => Some(timeout_outcome == Outcome::Approved),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(tool: &str) -> ToolCall {
        ToolCall {
            tool: tool.into(),
            ..ToolCall::default()
        }
    }

    fn policy(v: Value) -> ToolPolicy {
        ToolPolicy::of_inputs(&json!({ "tool_policy": v }))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn an_empty_policy_auto_approves_any_tool() {
        assert_eq!(policy(json!({})), ToolPolicy::default());
        assert_eq!(
            judge(&ToolPolicy::default(), Usage::default(), &call("shell")),
            Verdict::AutoApproved
        );
        assert_eq!(
            judge(&policy(json!({})), Usage::default(), &call("shell")),
            Verdict::AutoApproved
        );
        assert_eq!(ToolPolicy::of_inputs(&json!({})), Ok(None));
    }

    #[test]
    fn a_tool_outside_the_allowed_list_is_denied_even_when_auto_approving() {
        let p = policy(json!({"allowed_tools": ["read_file", "search"]}));
        assert_eq!(
            judge(&p, Usage::default(), &call("search")),
            Verdict::AutoApproved
        );
        let v = judge(&p, Usage::default(), &call("shell"));
        assert_eq!(
            v,
            Verdict::Denied("tool 'shell' is not in the allowed list [read_file, search]".into())
        );
        let none = policy(json!({"allowed_tools": []}));
        assert!(matches!(
            judge(&none, Usage::default(), &call("search")),
            Verdict::Denied(_)
        ));
    }

    #[test]
    fn budgets_are_cumulative_per_attempt_and_hard_limits() {
        let p =
            policy(json!({"budget": {"max_tokens": 1000, "max_files_changed": 3, "max_secs": 60}}));
        let used = Usage {
            elapsed_secs: 10,
            tokens: 600,
            files_changed: 2,
        };
        let mut c = call("edit");
        c.tokens = 400; // 600 + 400 = 1000: exactly at the limit is fine
        c.files_changed = 1; // 2 + 1 = 3
        assert_eq!(judge(&p, used, &c), Verdict::AutoApproved);
        c.tokens = 401;
        assert_eq!(
            judge(&p, used, &c),
            Verdict::Denied("token budget exceeded: 600 used + 401 requested > 1000".into())
        );
        c.tokens = 0;
        c.files_changed = 2;
        assert_eq!(
            judge(&p, used, &c),
            Verdict::Denied("files-changed budget exceeded: 2 changed + 2 requested > 3".into())
        );
        let late = Usage {
            elapsed_secs: 61,
            ..used
        };
        assert_eq!(
            judge(&p, late, &call("edit")),
            Verdict::Denied("time budget exceeded: 61 s since dispatch, limit 60 s".into())
        );
        // A budget denial wins over a sensitive path: no person can lift it.
        let both = policy(json!({"budget": {"max_tokens": 1}, "sensitive": {"paths": ["**"]}}));
        let mut c = call("edit");
        c.tokens = 2;
        c.paths = vec!["a".into()];
        assert!(matches!(
            judge(&both, Usage::default(), &c),
            Verdict::Denied(_)
        ));
    }

    #[test]
    fn sensitive_calls_always_escalate_with_every_reason() {
        let p = policy(json!({"auto_approve": true,
            "sensitive": {"paths": ["migrations/**", "*.env", ".github/*"], "max_diff_lines": 200}}));
        let mut c = call("write_file");
        c.paths = vec![
            "src/main.rs".into(),
            "migrations/2026/x.sql".into(),
            "prod.env".into(),
        ];
        c.diff_lines = 201;
        assert_eq!(
            judge(&p, Usage::default(), &c),
            Verdict::NeedsApproval(vec![
                "path 'migrations/2026/x.sql' matches protected pattern 'migrations/**'".into(),
                "path 'prod.env' matches protected pattern '*.env'".into(),
                "diff of 201 lines is over the limit of 200".into(),
            ])
        );
        c.paths = vec!["src/main.rs".into(), "config/prod.env".into()];
        c.diff_lines = 200; // at the limit: not over
        assert_eq!(judge(&p, Usage::default(), &c), Verdict::AutoApproved);
    }

    #[test]
    fn without_auto_approve_every_allowed_call_needs_a_person() {
        let p = policy(json!({"auto_approve": false}));
        assert_eq!(
            judge(&p, Usage::default(), &call("search")),
            Verdict::NeedsApproval(vec![
                "the policy requires approval for every tool call".into()
            ])
        );
    }

    #[test]
    fn globs_match_segments_and_trees() {
        assert!(glob_match("src/*.rs", "src/main.rs"));
        assert!(!glob_match("src/*.rs", "src/api/mod.rs"));
        assert!(glob_match("src/**/*.rs", "src/api/mod.rs"));
        assert!(glob_match("src/**/*.rs", "src/main.rs"));
        assert!(glob_match("**/secrets/**", "a/b/secrets/key.pem"));
        assert!(glob_match("?.txt", "a.txt"));
        assert!(!glob_match("?.txt", "ab.txt"));
        assert!(glob_match("Cargo.toml", "./Cargo.toml"));
        assert!(!glob_match("Cargo.toml", "Cargo.lock"));
    }

    #[test]
    fn a_malformed_policy_is_reported_not_ignored() {
        let e = ToolPolicy::of_inputs(&json!({"tool_policy": {"allowed": ["x"]}})).unwrap_err();
        assert!(e.contains("inputs.tool_policy is invalid"), "{e}");
        let e = ToolPolicy::of_inputs(&json!({"tool_policy": {"on_timeout": "maybe"}}));
        assert!(e.is_err());
    }

    #[test]
    fn the_approval_lifecycle_refuses_illegal_transitions() {
        use ApprovalStatus::*;
        assert_eq!(
            Pending.resolve(Outcome::Approved),
            Ok(Resolution::Apply(Approved))
        );
        assert_eq!(
            Pending.resolve(Outcome::Denied),
            Ok(Resolution::Apply(Denied))
        );
        assert_eq!(
            Approved.resolve(Outcome::Approved),
            Ok(Resolution::AlreadyDone)
        );
        assert_eq!(Denied.resolve(Outcome::Denied), Ok(Resolution::AlreadyDone));
        assert!(Approved.resolve(Outcome::Denied).is_err());
        assert!(Denied.resolve(Outcome::Approved).is_err());
        assert!(TimedOut.resolve(Outcome::Approved).is_err());
        assert!(TimedOut.resolve(Outcome::Denied).is_err());
        assert_eq!(Pending.time_out(), Ok(TimedOut));
        for s in [Approved, Denied, TimedOut] {
            assert!(s.time_out().is_err(), "{s}");
        }
    }

    #[test]
    fn a_timed_out_request_grants_what_the_policy_says() {
        use ApprovalStatus::*;
        assert_eq!(Pending.granted(Outcome::Denied), None);
        assert_eq!(Approved.granted(Outcome::Denied), Some(true));
        assert_eq!(Denied.granted(Outcome::Approved), Some(false));
        assert_eq!(TimedOut.granted(Outcome::Denied), Some(false));
        assert_eq!(TimedOut.granted(Outcome::Approved), Some(true));
    }
}
