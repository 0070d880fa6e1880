//! Each payload type's fields against the catalogue's list for its kind,
//! and the shapes that depend on serde attributes (skipped, flattened,
//! transparent fields).

use std::collections::BTreeSet;

use serde_json::{Value, json};
use uuid::Uuid;

use coordinator_core::bdi::{
    BeliefOutcome, CommitmentStrategy, ConflictKind, DesireConflict, DesireKind, GoalStatus,
    GoalTier, IntentionStatus, MissionTrigger, Verdict,
};
use coordinator_core::domain::{Autonomy, FailureKind, MissionStatus, Rung, TaskStatus};
use coordinator_core::messages::{Category, Performative};
use coordinator_core::organisation::DefaultModality;
use coordinator_core::team_decisions::TeamOption;
use coordinator_core::workforce::{Candidate, PackageStatus, QualityRating};

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
        keys(&MissionUpdated {
            version: 2,
            changes: std::collections::BTreeMap::new(),
        }),
        keys(&MissionDeleted {
            mission_id: u,
            goal: s(),
            title: Some(s()),
            status: MissionStatus::Completed,
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
        keys(&TaskRestored {
            key: s(),
            reason: s(),
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

fn decision() -> DecisionSnapshot {
    DecisionSnapshot {
        decision_id: Uuid::nil(),
        status: "pending".into(),
        category: "hiring".into(),
        agent_id: None,
        description: s(),
        governance_check: Value::Null,
        resolver: None,
        rationale: None,
        conditions: json!([]),
        modifications: json!({}),
        recheck_at: None,
    }
}

fn reservation() -> ReservationFields {
    ReservationFields {
        reservation_id: Uuid::nil(),
        scope: "src/*".into(),
        agent_id: "a".into(),
        state: "active".into(),
        expires_at: Some("2026-01-01T00:00:00Z".into()),
    }
}

fn trust() -> ContractorTrustUpdated {
    ContractorTrustUpdated {
        contractor_id: Uuid::nil(),
        previous_score: 0.5,
        new_score: 0.6,
        quality_rating: QualityRating::Excellent,
        work_package_id: Some(Uuid::nil()),
    }
}

/// A fully populated payload of each governance-profile, decision,
/// workforce, message, reservation, team and tool kind.
fn coordination_samples() -> Vec<(EventKind, BTreeSet<String>)> {
    let u = Uuid::nil();
    vec![
        keys(&GovernanceProfileUpdated { profile: json!({}) }),
        keys(&DecisionRequested(decision())),
        keys(&DecisionResolved(decision())),
        keys(&DecisionRechecked(decision())),
        keys(&ContractorAdded {
            contractor_id: u,
            name: s(),
            skills: vec![],
            trust_score: 0.5,
        }),
        keys(&ContractorUpdated {
            contractor_id: u,
            availability: s(),
            skills: vec![],
        }),
        keys(&trust()),
        keys(&WorkPackageCreated {
            work_package_id: u,
            title: s(),
            required_skills: vec![],
        }),
        keys(&WorkPackageStatusChanged {
            work_package_id: u,
            from: PackageStatus::Open,
            to: PackageStatus::Assigned,
            candidates: Some(vec![]),
            contractor_id: Some(u),
            trust: Some(trust()),
            quality_rating: Some(QualityRating::Excellent),
            task: Some(DelegatedTask {
                id: u,
                key: s(),
                untouched: None,
                action: Some("complete".into()),
            }),
            reason: Some(s()),
        }),
        keys(&WorkPackageProgress {
            work_package_id: u,
            progress: 10,
            note: None,
            mission_id: None,
        }),
        keys(&HandoffCreated {
            handoff_id: u,
            direction: "agent_to_human".into(),
            from: s(),
            to: s(),
            key: s(),
            task_status_from: TaskStatus::Running,
            task_status_to: TaskStatus::AwaitingHuman,
            message_id: None,
            agent_id: s(),
            attempt_id: Some(u),
        }),
        keys(&MessageSent {
            message_id: u,
            conversation_id: u,
            from: s(),
            agent_id: None,
            to: "all".into(),
            recipients: vec![],
            performative: Performative::Inform,
            category: None,
            subject: s(),
        }),
        keys(&MessageAcked {
            message_id: u,
            agent_id: s(),
            category: None,
            conversation_id: u,
        }),
        keys(&ReservationCreated {
            reservation: reservation(),
            renewed: false,
        }),
        keys(&ReservationReleased {
            reservation: reservation(),
        }),
        keys(&ReservationExpired {
            reservation: reservation(),
            taken_over_by: Some(u),
            by_agent: Some(s()),
            swept: Some(true),
        }),
        keys(&TeamDecisionProposed {
            team_decision_id: u,
            topic: s(),
            options: vec![],
            evidence: vec![],
            recommended_option: None,
            eligible_agents: vec![],
            closes_at: 0,
        }),
        keys(&TeamDecisionVoted {
            team_decision_id: u,
            agent_id: s(),
            option: s(),
            rationale: None,
        }),
        keys(&TeamDecisionCommitted {
            team_decision_id: u,
            topic: s(),
            committed_option: s(),
            tie_broken: false,
            tally: Default::default(),
            adr: s(),
        }),
        keys(&TeamDecisionCancelled {
            team_decision_id: u,
            reason: s(),
        }),
        keys(&ToolApprovalRequested {
            approval_id: u,
            agent_id: s(),
            tool: s(),
            paths: vec![],
            diff_lines: 0,
            tokens: 0,
            files_changed: 0,
            verdict: s(),
            reasons: vec![],
            approval_status: s(),
        }),
        keys(&ToolApprovalResolved {
            approval_id: u,
            agent_id: s(),
            tool: s(),
            approval_status: s(),
            granted: Some(true),
            resolver: None,
            rationale: None,
        }),
        keys(&ToolCalled {
            agent_id: s(),
            tool: s(),
            approval_id: None,
            ok: true,
            summary: None,
            duration_ms: None,
        }),
    ]
}

/// A fully populated payload of each BDI kind.
fn bdi_samples() -> Vec<(EventKind, BTreeSet<String>)> {
    let u = Uuid::nil();
    vec![
        keys(&BdiBeliefRevised {
            agent_id: s(),
            belief_id: u,
            category: s(),
            subject: s(),
            outcome: BeliefOutcome::Created,
            certainty: 0.5,
            conflict: false,
        }),
        keys(&BdiBeliefConflict {
            agent_id: s(),
            subject: s(),
            pairs: vec![],
        }),
        keys(&BdiDesireCreated {
            agent_id: s(),
            desire_id: u,
            kind: DesireKind::Terminal,
            priority: 0.5,
            conflicts: vec![],
        }),
        keys(&BdiDesireDropped {
            agent_id: s(),
            desire_id: u,
            reason: s(),
            related_desires_affected: vec![],
            cascaded_drops: vec![],
        }),
        keys(&BdiGoalCreated {
            agent_id: s(),
            goal_id: u,
            tier: GoalTier::Strategic,
            parent_goal_id: None,
        }),
        keys(&BdiGoalUpdated {
            agent_id: s(),
            goal_id: u,
            from: GoalStatus::Active,
            to: GoalStatus::Achieved,
        }),
        keys(&BdiIntentionCommitted {
            agent_id: s(),
            intention_id: u,
            strategy: CommitmentStrategy::OpenMinded,
            priority: 0.5,
        }),
        keys(&BdiIntentionUpdated {
            agent_id: s(),
            intention_id: u,
            from: Some(IntentionStatus::Active),
            to: Some(IntentionStatus::Suspended),
            progress: Some(0.5),
        }),
        keys(&BdiIntentionReconsidered {
            agent_id: s(),
            intention_id: u,
            strategy: CommitmentStrategy::Cautious,
            verdict: Verdict::Keep,
            reasons: vec![],
            applied: false,
        }),
        keys(&BdiIntentionStale {
            agent_id: s(),
            intention_id: u,
            strategy: s(),
        }),
        keys(&MissionReconsidered {
            trigger: MissionTrigger::Instructions,
            strategy: CommitmentStrategy::OpenMinded,
            explicit: false,
            verdict: Verdict::Drop,
            replan: true,
        }),
        keys(&MissionCommitmentSet {
            strategy: CommitmentStrategy::SingleMinded,
            explicit: true,
        }),
    ]
}

/// Every field a fully populated payload writes is listed in the
/// catalogue, and every listed field is one it writes (`status` is added
/// by the store to task transitions); and every kind has a payload type.
/// A payload of each workflow kind.
fn workflow_samples() -> Vec<(EventKind, BTreeSet<String>)> {
    let snapshot = || WorkflowSnapshot {
        instance_id: Uuid::nil(),
        workflow_id: Uuid::nil(),
        version: 1,
        process_id: s(),
        status: s(),
        active: vec![],
        completed: vec![],
        incidents: vec![],
    };
    vec![
        keys(&WorkflowStarted {
            snapshot: snapshot(),
            parent_id: None,
        }),
        keys(&WorkflowAdvanced {
            snapshot: snapshot(),
            command: s(),
        }),
        keys(&WorkflowEnded {
            snapshot: snapshot(),
        }),
    ]
}

#[test]
fn payload_fields_match_the_catalogue() {
    let mut covered = BTreeSet::new();
    let samples = mission_samples()
        .into_iter()
        .chain(coordination_samples())
        .chain(bdi_samples())
        .chain(workflow_samples())
        .chain(crate::agent_events::tests::samples());
    for (kind, mut written) in samples {
        let mut listed: BTreeSet<String> = kind
            .payload_fields()
            .iter()
            .map(|f| (*f).to_owned())
            .collect();
        listed.remove("status");
        written.remove("status");
        assert_eq!(written, listed, "payload fields of {kind}");
        covered.insert(kind);
    }
    let missing: Vec<&EventKind> = EventKind::ALL
        .iter()
        .filter(|k| !covered.contains(*k))
        .collect();
    assert!(
        missing.is_empty(),
        "kinds without a typed payload sample: {missing:?}"
    );
}

/// Shapes that depend on serde attributes: a flattened reservation, a
/// transparent decision, skipped optional fields, core enums as their text.
#[test]
fn payload_shapes() {
    let u = Uuid::nil();
    let (_, v) = ReservationExpired {
        reservation: reservation(),
        taken_over_by: None,
        by_agent: None,
        swept: Some(true),
    }
    .to_event();
    assert_eq!(
        v,
        json!({
            "reservation_id": u, "scope": "src/*", "agent_id": "a", "state": "active",
            "expires_at": "2026-01-01T00:00:00Z", "swept": true,
        })
    );
    let (kind, v) = DecisionResolved(decision()).to_event();
    assert_eq!(kind, EventKind::DecisionResolved);
    assert_eq!(v["decision_id"], json!(u));
    assert_eq!(v["agent_id"], Value::Null);
    assert_eq!(v["recheck_at"], Value::Null);
    let (_, v) = WorkPackageStatusChanged {
        work_package_id: u,
        from: PackageStatus::Draft,
        to: PackageStatus::Open,
        candidates: Some(vec![Candidate {
            contractor_id: u,
            name: s(),
            skill_overlap: 1.0,
            trust_score: 0.5,
            score: 0.5,
        }]),
        contractor_id: None,
        trust: None,
        quality_rating: None,
        task: None,
        reason: None,
    }
    .to_event();
    assert_eq!(
        v,
        json!({
            "work_package_id": u, "from": "draft", "to": "open",
            "candidates": [{ "contractor_id": u, "name": "x", "skill_overlap": 1.0,
                             "trust_score": 0.5, "score": 0.5 }],
        })
    );
    let (_, v) = BdiIntentionUpdated {
        agent_id: s(),
        intention_id: u,
        from: None,
        to: None,
        progress: Some(0.25),
    }
    .to_event();
    assert_eq!(
        v,
        json!({ "agent_id": "x", "intention_id": u, "progress": 0.25 })
    );
    let (_, v) = BdiDesireCreated {
        agent_id: s(),
        desire_id: u,
        kind: DesireKind::Instrumental,
        priority: 0.5,
        conflicts: vec![DesireConflict {
            desire_id: u,
            kind: ConflictKind::Resource,
            detail: "gpu".into(),
        }],
    }
    .to_event();
    assert_eq!(v["kind"], "instrumental");
    assert_eq!(v["conflicts"][0]["kind"], "resource");
    let (_, v) = MessageSent {
        message_id: u,
        conversation_id: u,
        from: "agent-a".into(),
        agent_id: Some("agent-a".into()),
        to: "role:dev".into(),
        recipients: vec!["agent-b".into()],
        performative: Performative::Request,
        category: Some(Category::Blocked),
        subject: s(),
    }
    .to_event();
    assert_eq!(v["performative"], "REQUEST");
    assert_eq!(v["category"], "BLOCKED");
    let (_, v) = TeamDecisionProposed {
        team_decision_id: u,
        topic: s(),
        options: vec![TeamOption {
            label: "a".into(),
            description: String::new(),
        }],
        evidence: vec![],
        recommended_option: None,
        eligible_agents: vec![],
        closes_at: 1,
    }
    .to_event();
    assert_eq!(v["options"], json!([{ "label": "a", "description": "" }]));
    assert_eq!(v["recommended_option"], Value::Null);
}
