//! Each payload type's fields against the catalogue's list for its kind.

use std::collections::BTreeSet;

use serde_json::Value;
use uuid::Uuid;

use coordinator_core::domain::{Autonomy, FailureKind, MissionStatus, Rung, TaskStatus};
use coordinator_core::organisation::DefaultModality;

use super::*;
use crate::events::EventKind;

fn keys<P: EventPayload>(p: &P) -> (EventKind, BTreeSet<String>) {
    let (kind, v) = p.to_event();
    let keys = v
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    (kind, keys)
}

fn s() -> String {
    "x".to_owned()
}

/// A fully populated payload of each mission, plan, task, contract-net and
/// organisation kind.
fn mission_samples() -> Vec<(EventKind, BTreeSet<String>)> {
    let u = Uuid::nil();
    vec![
        keys(&MissionCreated {
            goal: s(),
            autonomy: Autonomy::Autonomous,
            priority: 1,
            budget: Some(1.0),
        }),
        keys(&MissionStatusChanged {
            from: MissionStatus::Planning,
            to: MissionStatus::Executing,
            reason: None,
        }),
        keys(&MissionBudgetWarning {
            limit: None,
            spent: 0.0,
            share: 0.8,
            optional_tasks_dropped: 0,
            prefer: s(),
        }),
        keys(&PlanRequested {
            planner: s(),
            reason: s(),
            match_outcome: Value::Null,
            feedback: None,
        }),
        keys(&PlanLlmCall {
            outcome: s(),
            usage: Some(Value::Null),
            code: Some(s()),
            error: Some(s()),
            attempt: Some(1),
        }),
        keys(&PlanCreated {
            plan_version: 1,
            provenance: Value::Null,
            tasks: 1,
            critical_path: vec![],
            estimated_cost: 0.0,
            details: Value::Null,
        }),
        keys(&PlanFailed {
            code: s(),
            reason: s(),
            problems: Value::Null,
        }),
        keys(&PlanReplaced {
            feedback: Some(s()),
            instructions: Some(s()),
            escalation: Some(s()),
            previous_plan_version: 1,
            tasks_removed: 0,
            tasks_kept: 0,
        }),
        keys(&RoutineSaved {
            name: s(),
            keywords: vec![],
            tasks: 0,
        }),
        keys(&ContractorHired {
            key: s(),
            agent_id: s(),
            skills: vec![],
            tools: vec![],
            threshold: 0.5,
            role: s(),
        }),
        keys(&ContractorsRetired { agents: vec![] }),
        keys(&TaskDispatched {
            key: s(),
            agent_id: s(),
            attempt: 1,
            score: Value::Null,
            purpose: s(),
            status: TaskStatus::Running,
        }),
        keys(&TaskSucceeded {
            key: s(),
            attempt: 1,
            cost: 0.0,
            tokens: 0,
            verification: Value::Null,
        }),
        keys(&TaskRetryScheduled {
            key: s(),
            attempt: 1,
            failures: 1,
            max_attempts: 3,
            failure_kind: None,
            error: None,
            feedback: None,
            due: 0,
        }),
        keys(&TaskDeferred {
            key: s(),
            attempt: 1,
            reason: None,
            due: 0,
        }),
        keys(&TaskContinued {
            key: s(),
            turn: 1,
            due: 0,
        }),
        keys(&TaskVerificationFailed {
            key: s(),
            verdict: Value::Null,
        }),
        keys(&TaskVerifying {
            key: s(),
            attempt: 1,
            detail: Value::Null,
        }),
        keys(&TaskEscalated {
            key: s(),
            rung: Rung::Replan,
            excluded_agents: Some(vec![]),
            min_model_tier: Some(1),
            error: None,
            failure_kind: None,
        }),
        keys(&TaskAwaitingHuman {
            key: s(),
            rung: Some(Rung::Human),
            error: Some(s()),
            failure_kind: Some(FailureKind::Quality),
            attempts: Some(1),
            excluded_agents: Some(vec![]),
            reason: Some(s()),
            via: Some(Value::Null),
            work_package_id: Some(u),
            actions: TaskAwaitingHuman::actions(),
        }),
        keys(&TaskQueued { key: s() }),
        keys(&TaskAwaitingApproval {
            key: s(),
            decision_id: u,
            reason: s(),
            relevant_threshold: None,
        }),
        keys(&TaskApproved {
            key: s(),
            decision_id: u,
            outcome: s(),
            modifications: Value::Null,
        }),
        keys(&MissionReplanTriggered {
            key: s(),
            decision_id: u,
            reason: s(),
            trigger: s(),
            replanning: true,
        }),
        keys(&TenderOpened {
            key: s(),
            tender_id: u,
            eligible_agents: vec![],
            deadline: s(),
        }),
        keys(&TenderProposalReceived {
            tender_id: u,
            proposal_id: u,
            agent_id: s(),
            via: s(),
        }),
        keys(&TenderAwarded {
            tender_id: u,
            agent_id: None,
            ranking: Value::Null,
            proposals: 0,
        }),
        keys(&TenderNoProposals {
            tender_id: u,
            agent_id: None,
            ranking: Value::Null,
            proposals: 0,
        }),
        keys(&MissionAllocationChanged {
            allocation: s(),
            tender_window_ms: 1,
        }),
        keys(&OrgSpecUpdated {
            version: 1,
            name: None,
            roles: 0,
            norms: 0,
            default_modality: DefaultModality::default(),
        }),
        keys(&OrgSpecRemoved {}),
        keys(&TaskResolved {
            key: s(),
            action: Value::Null,
            feedback: None,
            to: TaskStatus::Queued,
            via: Some(Value::Null),
        }),
        keys(&TaskSkipped {
            key: s(),
            reason: s(),
            error: Some(s()),
            decision_id: Some(u),
        }),
        keys(&TaskBudgetRefused {
            key: s(),
            estimated_cost: 1.0,
            limit: Some(1.0),
            spent: 1.0,
            then: s(),
            reason: s(),
        }),
        keys(&TaskReopened {
            key: s(),
            named: true,
            feedback: s(),
        }),
        keys(&TaskFailed {
            key: s(),
            attempts: 1,
            failure_kind: None,
            error: None,
            escalation: None,
        }),
        keys(&TaskCancelled {
            key: Some(s()),
            reason: s(),
            named: Some(true),
        }),
        keys(&AttemptProgressCheck {
            key: s(),
            silent_secs: 1.0,
            stall_timeout_secs: 2,
        }),
    ]
}

/// Every field a fully populated payload writes is listed in the
/// catalogue, and every listed field is one it writes (`status` is added
/// by the store to task transitions).
#[test]
fn payload_fields_match_the_catalogue() {
    for (kind, mut written) in mission_samples() {
        let mut listed: BTreeSet<String> = kind
            .payload_fields()
            .iter()
            .map(|f| (*f).to_owned())
            .collect();
        listed.remove("status");
        written.remove("status");
        assert_eq!(written, listed, "payload fields of {kind}");
    }
}
