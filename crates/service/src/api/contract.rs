//! Writes the rules the checks enforce into the served OpenAPI document,
//! from the same values the checks use, so the document is the exact
//! contract (`docs/fuzzing.md`, `--checks all`).
//!
//! utoipa's attributes take literals only, and its typed model has no
//! room for JSON Schema's conditionals, so this pass works on the JSON
//! of the finished document: text rules ([`Text`]) by schema property or
//! parameter, and whole-schema rules that tie fields together.

use coordinator_core::text::Text;
use serde_json::{Value, json};

use crate::{
    bdi::state as bdi,
    bdi::steps,
    coordination::{
        agents, blackboard,
        contract_net::proposals,
        governance::{decisions, profile},
        handoffs, messages, reservations, team_decisions, tool_policy, workforce,
    },
    missions::replan,
};

/// A recipient as `Recipient::parse` reads it: not blank, and not a bare
/// `role:` (an agent id, `role:<role>`, `all` or `broadcast`).
const RECIPIENT_PATTERN: &str = r"^(?!\s*role:\s*$)[\s\S]*\S[\s\S]*$";
/// A comma-separated list of event kinds or `prefix.*` patterns, as
/// written (each must also name kinds of the log: 422 `unknown_event_kind`).
const KIND_LIST_PATTERN: &str = r"^[a-z_.*]*(,[a-z_.*]*)*$";

/// Internally tagged enums serde reads with `deny_unknown_fields`: utoipa
/// leaves their variants open; each variant takes its own fields only.
const CLOSED_UNIONS: &[&str] = &["Check"];

/// A rule for a property: its text, or each text of its list.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// The property is text.
    Text(Text),
    /// The property is a list of at most this many texts.
    Each(usize, Text),
}

/// `(schema, property, rule)`: text rules of request bodies.
fn body_rules() -> Vec<(&'static str, &'static str, Rule)> {
    use Rule::{Each, Text as T};
    let names = Each(agents::MAX_NAMES, agents::NAME);
    vec![
        ("PutBelief", "subject", T(bdi::SUBJECT)),
        ("PutBelief", "content", T(bdi::CONTENT)),
        ("CreateDesire", "description", T(bdi::DESCRIPTION)),
        ("CreateDesire", "strategy", T(bdi::STRATEGY)),
        ("DropDesire", "reason", T(bdi::REASON)),
        ("CreateGoal", "description", T(bdi::DESCRIPTION)),
        ("CommitIntention", "description", T(bdi::DESCRIPTION)),
        ("RegisterAgent", "role", T(agents::ROLE)),
        ("RegisterAgent", "display_name", T(agents::DISPLAY_NAME)),
        ("RegisterAgent", "skills", names),
        ("RegisterAgent", "tools", names),
        ("UpdateAgent", "role", T(agents::ROLE)),
        ("UpdateAgent", "display_name", T(agents::DISPLAY_NAME)),
        ("UpdateAgent", "skills", names),
        ("UpdateAgent", "tools", names),
        ("Subscribe", "role", T(agents::ROLE)),
        ("CreateReservation", "scope", T(reservations::SCOPE)),
        ("CreateReservation", "note", T(reservations::NOTE)),
        ("SendMessage", "subject", T(messages::SUBJECT)),
        ("PutBelief", "reason", T(bdi::BELIEF_REASON)),
        ("CreateGoal", "success_criteria", T(bdi::SUCCESS_CRITERIA)),
        (
            "CreateDesire",
            "resources",
            Each(bdi::MAX_RESOURCES, bdi::RESOURCE),
        ),
        ("ApprovalRequest", "tool", T(tool_policy::TOOL)),
        (
            "ApprovalRequest",
            "paths",
            Each(tool_policy::MAX_PATHS, tool_policy::PATH),
        ),
        ("ToolCallReport", "tool", T(tool_policy::TOOL)),
        ("ResolveApproval", "rationale", T(tool_policy::RATIONALE)),
        ("AddContractor", "name", T(workforce::CONTRACTOR_NAME)),
        ("AddContractor", "contact", T(workforce::CONTACT)),
        (
            "AddContractor",
            "skills",
            Each(workforce::MAX_SKILLS, workforce::SKILL),
        ),
        ("UpdateContractor", "name", T(workforce::CONTRACTOR_NAME)),
        ("UpdateContractor", "contact", T(workforce::CONTACT)),
        (
            "UpdateContractor",
            "skills",
            Each(workforce::MAX_SKILLS, workforce::SKILL),
        ),
        ("TrustRequest", "reason", T(workforce::TRUST_REASON)),
        ("CreatePackage", "title", T(workforce::TITLE)),
        ("CreatePackage", "description", T(workforce::DESCRIPTION)),
        (
            "CreatePackage",
            "required_skills",
            Each(workforce::MAX_SKILLS, workforce::SKILL),
        ),
        ("ProgressRequest", "note", T(workforce::NOTE)),
        ("TransitionRequest", "note", T(workforce::NOTE)),
        ("TransitionRequest", "reason", T(workforce::REASON)),
        (
            "CreateHandoff",
            "context_summary",
            T(handoffs::CONTEXT_SUMMARY),
        ),
        ("CreateHandoff", "to", T(handoffs::PARTY)),
        ("CreateHandoff", "from", T(handoffs::PARTY)),
        ("ProposeRequest", "topic", T(team_decisions::TOPIC)),
        (
            "ProposeRequest",
            "evidence",
            Each(team_decisions::MAX_EVIDENCE, team_decisions::EVIDENCE),
        ),
        ("TeamOption", "label", T(team_decisions::LABEL)),
        (
            "TeamOption",
            "description",
            T(team_decisions::OPTION_DESCRIPTION),
        ),
        ("VoteRequest", "option", T(team_decisions::LABEL)),
        ("VoteRequest", "rationale", T(team_decisions::RATIONALE)),
        ("CancelRequest", "reason", T(team_decisions::REASON)),
        (
            "ProposalBody",
            "matched_skills",
            Each(agents::MAX_NAMES, agents::NAME),
        ),
        (
            "ProposalBody",
            "conditions",
            Each(proposals::MAX_CONDITIONS, proposals::CONDITION),
        ),
        (
            "ProfileRequest",
            "auto_approve_categories",
            Each(profile::MAX_CATEGORIES, profile::CATEGORY),
        ),
        (
            "ProposalBody",
            "additional_skills",
            Each(agents::MAX_NAMES, agents::NAME),
        ),
        ("DecisionOption", "label", T(decisions::OPTION_LABEL)),
        (
            "DecisionOption",
            "description",
            T(decisions::OPTION_DESCRIPTION),
        ),
        ("RejectPlanRequest", "feedback", T(replan::FEEDBACK)),
        ("InstructionsRequest", "instructions", T(replan::FEEDBACK)),
    ]
}

/// `(path, parameter, keywords)`: rules of path, query and header
/// parameters, merged into their schema in every operation of the path.
fn parameter_rules() -> Vec<(&'static str, &'static str, Value)> {
    // A header is text: `null` is no id, so the schema is a plain integer.
    let event_id = json!({"type": "integer", "minimum": 0});
    vec![
        (
            "/v1/missions/{id}/blackboard/{key}",
            "key",
            text(blackboard::KEY),
        ),
        ("/v1/reservations", "scope", text(reservations::SCOPE)),
        ("/v1/events", "kind", json!({"pattern": KIND_LIST_PATTERN})),
        ("/v1/events", "Last-Event-ID", event_id.clone()),
        ("/v1/events", "after", json!({"minimum": 0})),
        ("/v1/missions/{id}/events", "after", json!({"minimum": 0})),
        ("/v1/missions/{id}/events", "Last-Event-ID", event_id),
    ]
}

/// `(path, method, keywords)`: what one operation adds to its shared body
/// schema (`allOf` with it), or, with `"replace"`, the schema it takes.
fn operation_rules() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        // A package of its own has no task to take a title from.
        (
            "/v1/work-packages",
            "post",
            json!({"required": ["title"],
            "properties": {"title": {"type": "string"}}}),
        ),
        // Any object is judged; the verdict lists what is wrong with it.
        (
            "/v1/org-spec/validate",
            "post",
            json!({"replace": {"type": "object",
            "description": "A candidate organisation spec (see `OrgSpec`); any JSON object is judged."}}),
        ),
    ]
}

/// `(schema, property, keywords)`: numeric and list rules merged into a
/// property (into its items for `items`).
fn property_rules() -> Vec<(&'static str, &'static str, Value)> {
    use coordinator_core::domain::mission_edit::{
        LABEL_PATTERN, MAX_LABEL_CHARS, MAX_LABELS, MAX_PRIORITY, MIN_PRIORITY,
    };
    let priority = json!({"minimum": MIN_PRIORITY, "maximum": MAX_PRIORITY});
    let money = json!({"minimum": 0, "maximum": coordinator_core::numbers::MAX_MONEY});
    let unit = json!({"minimum": 0, "maximum": 1});
    let heartbeat: Vec<Value> = coordinator_core::agents::AgentStatus::ALL
        .iter()
        .filter(|s| s.reportable())
        .map(|s| json!(s.as_str()))
        .chain([Value::Null])
        .collect();
    let patchable: Vec<Value> = coordinator_core::agents::AgentStatus::ALL
        .iter()
        .filter(|s| **s != coordinator_core::agents::AgentStatus::Retired)
        .map(|s| json!(s.as_str()))
        .chain([Value::Null])
        .collect();
    let labels = json!({"maxItems": MAX_LABELS, "items": {
        "minLength": 1, "maxLength": MAX_LABEL_CHARS, "pattern": LABEL_PATTERN}});
    vec![
        ("CreateMission", "priority", priority.clone()),
        ("UpdateMission", "priority", priority),
        ("UpdateMission", "labels", labels),
        (
            "UpdateMission",
            "title",
            text(coordinator_core::domain::mission_edit::TITLE),
        ),
        ("CreateToken", "name", text(crate::api::tokens::NAME)),
        (
            "DecisionRequest",
            "options",
            json!({"maxItems": decisions::MAX_OPTIONS}),
        ),
        (
            "DecisionRequest",
            "impact_analysis",
            json!({"type": ["object", "null"]}),
        ),
        (
            "CreateMission",
            "constraints",
            json!({"type": ["object", "null"]}),
        ),
        ("Impact", "headcount", json!({"minimum": 0})),
        ("Impact", "estimated_cost", json!({"minimum": 0})),
        ("AddContractor", "hourly_rate", json!({"minimum": 0})),
        ("UpdateContractor", "hourly_rate", json!({"minimum": 0})),
        ("ApprovalRequest", "tokens", json!({"minimum": 0})),
        ("ApprovalRequest", "diff_lines", json!({"minimum": 0})),
        ("ApprovalRequest", "files_changed", json!({"minimum": 0})),
        ("ToolCallReport", "duration_ms", json!({"minimum": 0})),
        ("PutSpec", "version", json!({"minimum": 0})),
        (
            "ProfileRequest",
            "stakeholder_id",
            text(profile::STAKEHOLDER_ID),
        ),
        ("CreateMission", "goal", text(crate::missions::GOAL)),
        ("CreateMission", "budget", money.clone()),
        ("HiringThreshold", "headcount", json!({"minimum": 0})),
        ("BudgetThreshold", "currency", text(profile::CURRENCY)),
        (
            "TransitionRequest",
            "progress",
            json!({"minimum": 0, "maximum": 100}),
        ),
        // `retired` is set by DELETE; PATCH takes the others.
        (
            "UpdateAgent",
            "status",
            json!({"type": ["string", "null"], "enum": patchable}),
        ),
        ("BudgetThreshold", "amount", json!({"minimum": 0})),
        ("CreatePackage", "budget", json!({"minimum": 0})),
        ("ProposalBody", "capability_match", unit.clone()),
        ("ProposalBody", "confidence", unit),
        ("ProposalBody", "estimated_cost", json!({"minimum": 0})),
        ("ProposalBody", "estimated_effort", json!({"minimum": 0})),
        ("SendMessage", "to", json!({"pattern": RECIPIENT_PATTERN})),
        (
            "ApprovalRequest",
            "arguments",
            json!({"type": ["object", "null"]}),
        ),
        ("CreatePackage", "deadline", json!({"format": "date"})),
        (
            "CreateWebhook",
            "url",
            json!({"pattern": agents::ENDPOINT_PATTERN}),
        ),
        (
            "RegisterAgent",
            "agent_id",
            json!({"pattern": agents::AGENT_ID_PATTERN}),
        ),
        (
            "RegisterAgent",
            "endpoint_url",
            json!({"pattern": agents::ENDPOINT_PATTERN}),
        ),
        (
            "UpdateAgent",
            "endpoint_url",
            json!({"pattern": agents::ENDPOINT_PATTERN}),
        ),
        (
            "SaveRoutineRequest",
            "name",
            json!({"pattern": replan::ROUTINE_NAME_PATTERN}),
        ),
        (
            "CreateWebhook",
            "events",
            json!({"items": {"enum": event_kinds()}}),
        ),
        (
            "Subscribe",
            "events",
            json!({"items": {"enum": event_kinds()}}),
        ),
        ("WriteKey", "value", json!({"not": {"type": "null"}})),
        // `null` is read as left out, like every optional field.
        (
            "AgentHeartbeat",
            "status",
            json!({"type": ["string", "null"], "enum": heartbeat}),
        ),
    ]
}

/// `(schema, keywords)`: rules between a schema's fields, as JSON Schema
/// keywords merged into it (`if`/`then`/`else`, and `"type": "null"` for a
/// field that must be left out or null), which client generators and
/// fuzzers understand. Rules no schema can state (a label that must name
/// one of the body's own options, a plan without cycles) answer 422.
fn schema_rules() -> Vec<(&'static str, Value)> {
    let absent = json!({"type": "null"});
    vec![
        (
            "ReviewRequest",
            json!({"allOf": [
                {"if": {"properties": {"decision": {"const": "accept"}}},
                 "then": {"properties": {"tasks": {"maxItems": 0}}}},
                {"if": {"properties": {"decision": {"const": "reject"}}},
                 "then": {"required": ["feedback", "tasks"],
                          "properties": {"feedback": {"type": "string", "pattern": r"\S"},
                                         "tasks": {"minItems": 1}}}}
            ]}),
        ),
        (
            "ResolveTaskRequest",
            json!({"if": {"properties": {"action": {"const": "complete"}}},
                   "else": {"properties": {"output": absent}}}),
        ),
        (
            "TransitionRequest",
            json!({"allOf": [
                {"if": {"properties": {"to": {"const": "assigned"}}},
                 "else": {"properties": {"contractor_id": absent}}},
                {"if": {"properties": {"to": {"enum": ["review", "completed"]}}},
                 "else": {"properties": {"deliverable": absent}}},
                {"if": {"properties": {"to": {"const": "completed"}}},
                 "then": {"required": ["quality_rating"],
                          "properties": {"quality_rating": {"not": absent}}},
                 "else": {"properties": {"quality_rating": absent}}}
            ]}),
        ),
        (
            "CreateToken",
            json!({"if": {"properties": {"role": {"const": "agent"}}},
                   "then": {"required": ["agent_id"],
                            "properties": {"agent_id": {"type": "string"}}},
                   "else": {"properties": {"agent_id": absent}}}),
        ),
        (
            "ProgressRequest",
            json!({"anyOf": [
                {"required": ["progress"], "properties": {"progress": {"type": "integer"}}},
                {"required": ["note"], "properties": {"note": {"type": "string"}}}
            ]}),
        ),
        (
            "SendMessage",
            json!({"allOf": [
                {"if": {"required": ["category"], "properties": {"category": {"type": "string"}}},
                 "then": {"anyOf": [
                     {"required": ["mission_id"], "properties": {"mission_id": {"type": "string"}}},
                     {"required": ["task_id"], "properties": {"task_id": {"type": "string"}}}]}},
                {"if": {"required": ["category"], "properties": {"category": {"const": "BLOCKED"}}},
                 "then": {"properties": {"content": {
                     "required": ["requested_action", "urgency"],
                     "properties": {"requested_action": {"type": "string", "pattern": r"\S"},
                                    "urgency": {"enum": coordinator_core::messages::URGENCIES}}}}}}
            ]}),
        ),
        (
            "CreateMission",
            json!({"anyOf": [
                {"required": ["allocation"], "properties": {"allocation": {"type": "string"}}},
                {"properties": {"tender_window_ms": absent}}
            ]}),
        ),
    ]
}

/// What an event filter list takes: every kind, every `prefix.*`, and `*`
/// (the check also takes narrower prefixes such as `task.s*`).
fn event_kinds() -> Vec<String> {
    use coordinator_protocol::events::EventKind;
    let mut out: Vec<String> = EventKind::ALL
        .iter()
        .map(|k| k.as_str().to_owned())
        .collect();
    let mut prefixes: Vec<String> = EventKind::ALL
        .iter()
        .filter_map(|k| k.as_str().split_once('.').map(|(p, _)| format!("{p}.*")))
        .collect();
    prefixes.sort_unstable();
    prefixes.dedup();
    out.extend(prefixes);
    out.push("*".to_owned());
    out
}

/// A text rule as keywords.
fn text(t: Text) -> Value {
    let mut v = json!({});
    write_text(&mut v, t);
    v
}

/// The JSON of the finished document `doc` with every rule written in:
/// what `/openapi.json` serves.
pub fn served(doc: &utoipa::openapi::OpenApi) -> Value {
    let mut json = serde_json::to_value(doc).unwrap_or_else(|e| {
        tracing::error!(error = %e, "the OpenAPI document does not serialise");
        json!({})
    });
    for place in apply(&mut json) {
        // A renamed schema or field: the unit test below names it too.
        tracing::warn!(place, "an API rule has no place in the document");
    }
    json
}

/// Writes every rule into `doc` (the JSON of the finished document).
/// Returns what it could not find, which a test keeps empty.
pub fn apply(doc: &mut Value) -> Vec<String> {
    let mut missing = Vec::new();
    for (schema, property, rule) in body_rules() {
        match doc.pointer_mut(&property_pointer(schema, property)) {
            Some(p) => write_rule(p, rule),
            None => missing.push(format!("{schema}.{property}")),
        }
    }
    for (path, name, rule) in parameter_rules() {
        let rule = &rule;
        let mut found = false;
        if let Some(Value::Object(item)) = doc.pointer_mut(&path_pointer(path)) {
            for op in item.values_mut() {
                let Some(Value::Array(params)) = op.get_mut("parameters") else {
                    continue;
                };
                for p in params.iter_mut().filter(|p| p["name"] == name) {
                    if let Some(schema) = p.get_mut("schema") {
                        merge(schema, rule.clone());
                        found = true;
                    }
                }
            }
        }
        if !found {
            missing.push(format!("{path} ?{name}"));
        }
    }
    for (path, method, keywords) in operation_rules() {
        let at = format!(
            "{}/{method}/requestBody/content/application~1json/schema",
            path_pointer(path)
        );
        match doc.pointer_mut(&at) {
            Some(schema) => {
                *schema = match keywords {
                    Value::Object(mut k) if k.contains_key("replace") => {
                        k.remove("replace").unwrap_or(Value::Null)
                    }
                    k => json!({"allOf": [schema.take(), k]}),
                }
            }
            None => missing.push(format!("{method} {path}")),
        }
    }
    for (schema, property, keywords) in property_rules() {
        match doc.pointer_mut(&property_pointer(schema, property)) {
            Some(p) => merge(p, keywords),
            None => missing.push(format!("{schema}.{property}")),
        }
    }
    for schema in CLOSED_UNIONS {
        match doc.pointer_mut(&format!("/components/schemas/{schema}/oneOf")) {
            Some(Value::Array(variants)) => {
                for v in variants.iter_mut().filter(|v| v["type"] == "object") {
                    v["additionalProperties"] = json!(false);
                    // A count serde reads into `usize`: no more than that.
                    if let Some(Value::Object(props)) = v.get_mut("properties") {
                        for p in props.values_mut().filter(|p| p["type"] == "integer") {
                            p["maximum"] = json!(u64::MAX);
                        }
                    }
                }
            }
            _ => missing.push(format!("{schema}.oneOf")),
        }
    }
    for (schema, keywords) in schema_rules() {
        match doc.pointer_mut(&format!("/components/schemas/{schema}")) {
            Some(Value::Object(s)) => {
                if let Value::Object(k) = keywords {
                    s.extend(k);
                }
            }
            _ => missing.push(schema.to_owned()),
        }
    }
    // Last: the tools take the rules written above.
    if !tool_operations(doc) {
        missing.push("post /v1/tools/{name}".to_owned());
    }
    missing
}

/// The JSON pointer of a schema's property.
fn property_pointer(schema: &str, property: &str) -> String {
    format!("/components/schemas/{schema}/properties/{property}")
}

/// The JSON pointer of a path item (`/` and `~` escaped as RFC 6901 says).
fn path_pointer(path: &str) -> String {
    format!("/paths/{}", path.replace('~', "~0").replace('/', "~1"))
}

/// Tools whose arguments are (a superset of) a REST body: their argument
/// schema takes that body's rules (`tool_parameters`).
const TOOL_BODIES: &[(&str, &str)] = &[
    ("create_mission", "CreateMission"),
    ("update_mission", "UpdateMission"),
    ("review_results", "ReviewRequest"),
    ("resolve_task", "ResolveTaskRequest"),
    ("resolve_tool_approval", "ResolveApproval"),
    ("reject_plan", "RejectPlanRequest"),
    ("send_instructions", "InstructionsRequest"),
    ("agent_message", "SendMessage"),
    ("contractor_add", "AddContractor"),
    ("work_package_create", "CreatePackage"),
    ("work_package_assign", "AssignRequest"),
    ("decision_request", "DecisionRequest"),
    ("desire_create", "CreateDesire"),
    ("desire_drop", "DropDesire"),
    ("goal_create", "CreateGoal"),
    ("intention_commit", "CommitIntention"),
    ("intention_reconsider", "Reconsider"),
    ("belief_update", "PutBelief"),
    ("reserve_scope", "CreateReservation"),
    ("governance_check", "CheckRequest"),
    ("contract_net_initiate", "OpenTender"),
    ("contract_net_propose", "ProposalBody"),
    ("handoff", "CreateHandoff"),
    ("blackboard_write", "WriteKey"),
];

/// `(tool, keywords)`: rules of tools that mirror no REST body, merged into
/// their argument schema (properties under `properties`).
fn tool_rules() -> Vec<(&'static str, Value)> {
    let key = json!({"properties": {"key": text(blackboard::KEY)}});
    let skills = json!({"properties": {"skill_filter": {"items": text(workforce::SKILL)}}});
    // A field is either given or cleared, not both.
    let given_or_cleared: Vec<Value> = ["title", "budget", "deadline"]
        .iter()
        .map(|f| {
            json!({"if": {"required": ["clear"], "properties": {"clear": {"contains": {"const": f}}}},
                   "then": {"not": {"required": [f]}}})
        })
        .collect();
    vec![
        ("update_mission", json!({"allOf": given_or_cleared})),
        (
            "contract_net_propose",
            json!({"properties": {"estimated_effort": {"anyOf": [
                {"type": "number", "minimum": 0},
                {"type": "object", "required": ["duration_hours"],
                 "properties": {"duration_hours": {"type": "number", "minimum": 0},
                                "cost_estimate": {"type": "number", "minimum": 0}}}]}}}),
        ),
        (
            "plan_execute_step",
            json!({"properties": {
                       "step_id": text(steps::STEP_ID),
                       "actual_duration": text(steps::DURATION),
                       "outcome": text(steps::OUTCOME),
                       "notes": text(steps::OUTCOME),
                       "artifacts_produced": {"maxItems": steps::MAX_ARTIFACTS,
                                              "items": text(steps::ARTIFACT)}},
                   "if": {"required": ["status"],
                          "properties": {"status": {"enum": ["executing", "completed"]}}},
                   "else": {"properties": {"progress": {"type": "null"}}}}),
        ),
        ("blackboard_read", key.clone()),
        ("blackboard_write", key.clone()),
        ("blackboard_delete", key),
        ("contractor_list", skills),
        (
            "plan_adapt",
            json!({"properties": {"negative_cases": {"items": {"format": "uuid"}}}}),
        ),
        (
            "intention_reconsider",
            json!({"if": {"anyOf": [
                      {"required": ["impossible"], "properties": {"impossible": {"const": true}}},
                      {"required": ["blocked"], "properties": {"blocked": {"const": true}}}]},
                   "then": {"required": ["intention_id"],
                            "properties": {"intention_id": {"type": "string"}}}}),
        ),
        (
            "work_package_update",
            json!({"allOf": [
                {"if": {"not": {"required": ["status"]}},
                 "then": {"properties": {"reason": {"type": "null"}}}},
                {"if": {"required": ["status"], "properties": {"status": {"const": "completed"}}},
                 "then": {"required": ["quality_rating"]},
                 "else": {"properties": {"quality_rating": {"type": "null"}}}},
                {"if": {"required": ["status"],
                        "properties": {"status": {"enum": ["review", "completed"]}}},
                 "else": {"properties": {"deliverable": {"type": "null"}}}}]}),
        ),
    ]
}

/// In every sub-schema that lists `required` names, those properties must
/// not be null (a null argument is not given).
fn forbid_null_where_required(schema: &mut Value) {
    match schema {
        Value::Object(m) => {
            let names: Vec<String> = m
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            for name in names {
                let props = m.entry("properties").or_insert_with(|| json!({}));
                merge(
                    props
                        .as_object_mut()
                        .map(|p| p.entry(name).or_insert_with(|| json!({})))
                        .unwrap_or(&mut Value::Null),
                    json!({"not": {"type": "null"}}),
                );
            }
            // Not under `not`, whose `required` says what must be absent.
            for (k, v) in m.iter_mut() {
                if k != "properties" && k != "not" {
                    forbid_null_where_required(v);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(forbid_null_where_required),
        _ => {}
    }
}

/// What a property's schema says about its values, copied from a REST body
/// into a tool's arguments.
const VALUE_KEYWORDS: &[&str] = &[
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "enum",
    "format",
    "additionalProperties",
];

/// A tool's argument schema as the service checks it: the catalogue's, with
/// the rules of the REST body it mirrors ([`TOOL_BODIES`]), and with
/// `nullable` `null` allowed for every optional argument (it counts as not
/// given; the document says so, models need not hear it). What the
/// document, `GET /v1/tools` and `/mcp` show.
pub fn tool_parameters(doc: &Value, tool: &crate::tools::Tool, nullable: bool) -> Value {
    let mut params = tool.parameters.clone();
    let body = TOOL_BODIES
        .iter()
        .find(|(t, _)| *t == tool.name)
        .and_then(|(_, schema)| doc.pointer(&format!("/components/schemas/{schema}")));
    if let Some(body) = body {
        for key in ["if", "then", "else", "allOf", "anyOf"] {
            if let Some(rule) = body.get(key) {
                params[key] = rule.clone();
            }
        }
    }
    for (_, keywords) in tool_rules().into_iter().filter(|(t, _)| *t == tool.name) {
        merge(&mut params, keywords);
    }
    // A null argument counts as not given: where a rule requires one, it
    // must not be null; at the top, a required one never is.
    for key in ["if", "then", "else", "allOf", "anyOf"] {
        if let Some(rule) = params.get_mut(key) {
            forbid_null_where_required(rule);
        }
    }
    let required: Vec<String> = params["required"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(props)) = params.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            if let Some(rest) = body.and_then(|b| b["properties"].get(name.as_str())) {
                copy_value_keywords(doc, rest, prop);
            }
            bound_integers(prop);
            if !required.contains(name) {
                if nullable {
                    *prop = json!({"anyOf": [prop.take(), {"type": "null"}]});
                }
            } else if prop.get("type").is_none() {
                // Any JSON but null: a null argument counts as not given.
                prop["not"] = json!({"type": "null"});
            }
        }
    }
    params
}

/// A tool's argument schema as models see it ([`tool_parameters`] without
/// the `null` allowance), built once for the process.
pub fn model_parameters(tool: &crate::tools::Tool) -> &Value {
    static BY_NAME: std::sync::LazyLock<std::collections::HashMap<&'static str, Value>> =
        std::sync::LazyLock::new(|| {
            crate::tools::all()
                .iter()
                .map(|t| (t.name, tool_parameters(crate::api::document(), t, false)))
                .collect()
        });
    BY_NAME.get(tool.name).unwrap_or(&tool.parameters)
}

/// A tool in function-calling form with [`model_parameters`].
pub fn function_schema(tool: &crate::tools::Tool) -> Value {
    let mut f = tool.function_schema();
    f["function"]["parameters"] = model_parameters(tool).clone();
    f
}

/// Copies [`VALUE_KEYWORDS`] of `from` (a REST property, through `$ref`
/// and nullable `oneOf`) into `into`, and of its items into `into`'s items.
fn copy_value_keywords(doc: &Value, from: &Value, into: &mut Value) {
    let from = resolve(doc, from);
    let from = from["oneOf"]
        .as_array()
        .and_then(|o| o.iter().find(|s| s["type"] != "null"))
        .map_or(from, |s| resolve(doc, s));
    for key in VALUE_KEYWORDS {
        if let Some(v) = from.get(*key) {
            into[*key] = v.clone();
        }
    }
    if let (Some(items), Some(into_items)) = (from.get("items"), into.get_mut("items")) {
        copy_value_keywords(doc, items, into_items);
    }
    // And the fields of an object (an option of a decision), by name.
    if let (Some(Value::Object(from_props)), Some(Value::Object(into_props))) =
        (from.get("properties"), into.get_mut("properties"))
    {
        for (name, p) in into_props.iter_mut() {
            if let Some(f) = from_props.get(name) {
                copy_value_keywords(doc, f, p);
            }
        }
    }
}

/// An integer argument is read as an `i64`: say so where the catalogue
/// gives no bounds (a larger number is refused as not an integer).
fn bound_integers(prop: &mut Value) {
    if prop["type"] == "integer" {
        if prop.get("maximum").is_none() {
            prop["maximum"] = json!(i64::MAX);
        }
        if prop.get("minimum").is_none() {
            prop["minimum"] = json!(i64::MIN);
        }
    }
    if let Some(items) = prop.get_mut("items") {
        bound_integers(items);
    }
}

/// Follows a local `$ref`.
fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    v["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|p| doc.pointer(p))
        .unwrap_or(v)
}

/// The route `POST /v1/tools/{name}` runs every tool; the document lists
/// it once per tool, `POST /v1/tools/<name>`, with that tool's own argument
/// schema as the body (what `GET /v1/tools` and `/mcp` offer models), so a
/// client or a fuzzer sees each tool's contract. A tool that has required
/// arguments requires a body.
fn tool_operations(doc: &mut Value) -> bool {
    let schemas = json!({"components": doc.get("components").cloned().unwrap_or(Value::Null)});
    let Some(Value::Object(paths)) = doc.get_mut("paths") else {
        return false;
    };
    let Some(generic) = paths.remove("/v1/tools/{name}") else {
        return false;
    };
    let Some(op) = generic.get("post") else {
        return false;
    };
    for tool in crate::tools::all() {
        let parameters = tool_parameters(&schemas, tool, true);
        let mut o = op.clone();
        let required = tool.parameters["required"]
            .as_array()
            .is_some_and(|r| !r.is_empty());
        let roles: Vec<String> = tool.roles.iter().map(ToString::to_string).collect();
        o["operationId"] = json!(format!("invoke_tool_{}", tool.name));
        o["summary"] = json!(format!("Tool `{}`: {}", tool.name, tool.title));
        o["description"] = json!(format!(
            "{}\n\nRoles: {}.",
            tool.description,
            roles.join(", ")
        ));
        if let Value::Object(obj) = &mut o {
            obj.remove("parameters");
            obj.insert(
                "requestBody".into(),
                json!({
                    "description": "The tool's arguments.",
                    "required": required,
                    "content": {"application/json": {"schema": parameters}},
                }),
            );
        }
        paths.insert(format!("/v1/tools/{}", tool.name), json!({ "post": o }));
    }
    true
}

/// Merges `keywords` into `into`, recursing into objects (`items`).
fn merge(into: &mut Value, keywords: Value) {
    match (into, keywords) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

fn write_rule(property: &mut Value, rule: Rule) {
    match rule {
        Rule::Text(t) => write_text(property, t),
        Rule::Each(max, t) => {
            if let Value::Object(p) = property {
                p.insert("maxItems".into(), json!(max));
                write_text(p.entry("items").or_insert_with(|| json!({})), t);
            }
        }
    }
}

fn write_text(schema: &mut Value, t: Text) {
    let Value::Object(s) = schema else { return };
    s.insert("minLength".into(), json!(t.min));
    s.insert("maxLength".into(), json!(t.max));
    match t.pattern() {
        Some(p) => s.insert("pattern".into(), json!(p)),
        None => s.remove("pattern"),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_finds_its_place_in_the_document() {
        let mut doc = serde_json::to_value(crate::api::finished()).expect("serialises");
        let raw = doc.clone();
        assert_eq!(apply(&mut doc), Vec::<String>::new());
        let tool = &doc["paths"]["/v1/tools/create_mission"]["post"];
        assert_eq!(tool["requestBody"]["required"], json!(true), "{tool}");
        assert!(doc["paths"].get("/v1/tools/{name}").is_none());
        // A tool mirroring a REST body takes its rules.
        let goal =
            &tool["requestBody"]["content"]["application/json"]["schema"]["properties"]["goal"];
        assert_eq!(
            goal["maxLength"],
            json!(crate::missions::MAX_GOAL_CHARS),
            "{goal}"
        );
        assert!(raw["paths"].get("/v1/tools/{name}").is_some());
        for (tool, schema) in TOOL_BODIES {
            assert!(crate::tools::find(tool).is_some(), "no tool {tool}");
            assert!(
                doc.pointer(&format!("/components/schemas/{schema}"))
                    .is_some(),
                "no schema {schema}"
            );
        }
        let subject = &doc["components"]["schemas"]["PutBelief"]["properties"]["subject"];
        assert_eq!(subject["maxLength"], json!(bdi::SUBJECT.max));
        let key = &doc["paths"]["/v1/missions/{id}/blackboard/{key}"]["get"]["parameters"];
        assert!(
            key.as_array()
                .is_some_and(|ps| ps.iter().any(|p| p["schema"]["pattern"].is_string()))
        );
    }
}
