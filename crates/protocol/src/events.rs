//! Event kinds: every kind of event the coordinator writes to its log
//! (`orchestration_events`), with what it means, what it is about and the
//! fields its payload may carry. Clients filter and dispatch on these
//! strings, so they are wire types: one list, here.
//!
//! `docs/events.md`'s catalogue is rendered from this list
//! ([`EventKind::markdown_catalogue`]); a test fails when the file drifts.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The part of the system an event kind belongs to; the catalogue has one
/// table per area.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventArea {
    /// Missions, plans, routines and mission-scoped contractors.
    Missions,
    /// Task transitions and attempts.
    Tasks,
    /// Contract-net tenders and mission allocation.
    ContractNet,
    /// Governance profile, decisions and task approval.
    Governance,
    /// Contractors, work packages and handoffs.
    Workforce,
    /// Agent messages and scope reservations.
    Coordination,
    /// Team decisions and tool approvals.
    Team,
    /// The workspace's organisation spec.
    Organisation,
    /// Agents' beliefs, desires, goals and intentions, and missions as intentions.
    Bdi,
    /// What agents do through their tools: the blackboard, discovered work,
    /// handoffs between agents, refused tool calls.
    Agents,
    /// BPMN workflow instances.
    Workflows,
}

impl EventArea {
    /// Every area, in catalogue order.
    pub const ALL: &'static [EventArea] = &[
        EventArea::Missions,
        EventArea::Tasks,
        EventArea::ContractNet,
        EventArea::Governance,
        EventArea::Workforce,
        EventArea::Coordination,
        EventArea::Team,
        EventArea::Organisation,
        EventArea::Bdi,
        EventArea::Agents,
        EventArea::Workflows,
    ];

    /// The catalogue's heading for the area.
    pub const fn title(self) -> &'static str {
        match self {
            EventArea::Missions => "Missions and plans",
            EventArea::Tasks => "Tasks and attempts",
            EventArea::ContractNet => "Contract net ([contract-net.md](contract-net.md))",
            EventArea::Governance => "Governance ([governance.md](governance.md))",
            EventArea::Workforce => "Workforce ([workforce.md](workforce.md))",
            EventArea::Coordination => {
                "Messages and reservations ([coordination.md](coordination.md))"
            }
            EventArea::Team => "Team decisions and tools ([team.md](team.md))",
            EventArea::Organisation => "Organisation ([organisation.md](organisation.md))",
            EventArea::Bdi => "BDI ([bdi.md](bdi.md))",
            EventArea::Agents => "Agents acting ([agents.md](agents.md))",
            EventArea::Workflows => "Workflows ([workflows.md](workflows.md))",
        }
    }
}

/// What an event is about: the entity whose id the payload (or the event's
/// `task_id`/`attempt_id`) names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventEntity {
    /// A mission.
    Mission,
    /// A mission's plan.
    Plan,
    /// A saved routine.
    Routine,
    /// A task.
    Task,
    /// One attempt at a task.
    Attempt,
    /// An agent.
    Agent,
    /// A contract-net tender.
    Tender,
    /// The workspace's stakeholder profile.
    GovernanceProfile,
    /// A governance decision.
    Decision,
    /// A contractor.
    Contractor,
    /// A work package.
    WorkPackage,
    /// A handoff.
    Handoff,
    /// A message.
    Message,
    /// A scope reservation.
    Reservation,
    /// A team decision.
    TeamDecision,
    /// A tool-approval request.
    ToolApproval,
    /// A tool call.
    ToolCall,
    /// The organisation spec.
    OrgSpec,
    /// An agent's belief.
    Belief,
    /// An agent's desire.
    Desire,
    /// An agent's goal.
    Goal,
    /// An agent's intention.
    Intention,
    /// A key of a mission's blackboard.
    BlackboardKey,
    /// A running BPMN workflow instance.
    WorkflowInstance,
}

impl EventEntity {
    /// The entity's name as the catalogue shows it.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventEntity::Mission => "mission",
            EventEntity::Plan => "plan",
            EventEntity::Routine => "routine",
            EventEntity::Task => "task",
            EventEntity::Attempt => "attempt",
            EventEntity::Agent => "agent",
            EventEntity::Tender => "tender",
            EventEntity::GovernanceProfile => "governance profile",
            EventEntity::Decision => "decision",
            EventEntity::Contractor => "contractor",
            EventEntity::WorkPackage => "work package",
            EventEntity::Handoff => "handoff",
            EventEntity::Message => "message",
            EventEntity::Reservation => "reservation",
            EventEntity::TeamDecision => "team decision",
            EventEntity::ToolApproval => "tool approval",
            EventEntity::ToolCall => "tool call",
            EventEntity::OrgSpec => "organisation spec",
            EventEntity::Belief => "belief",
            EventEntity::Desire => "desire",
            EventEntity::Goal => "goal",
            EventEntity::Intention => "intention",
            EventEntity::BlackboardKey => "blackboard key",
            EventEntity::WorkflowInstance => "workflow instance",
        }
    }
}

impl fmt::Display for EventEntity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Declares [`EventKind`] and its tables from one list, so a kind's string,
/// area, entity, description and payload fields cannot fall out of step.
macro_rules! event_kinds {
    ($(
        $variant:ident = $name:literal, $area:ident, $entity:ident,
        $desc:literal, [$($field:literal),* $(,)?];
    )*) => {
        /// A kind of event in the log. Serialised as its string (`task.succeeded`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventKind {
            $(
                #[doc = $desc]
                $variant,
            )*
        }

        impl EventKind {
            /// Every kind, in catalogue order.
            pub const ALL: &'static [EventKind] = &[$(EventKind::$variant),*];

            /// The kind as written to the log and sent on the wire.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(EventKind::$variant => $name,)*
                }
            }

            /// What happened, in one line.
            pub const fn description(self) -> &'static str {
                match self {
                    $(EventKind::$variant => $desc,)*
                }
            }

            /// The area the kind belongs to.
            pub const fn area(self) -> EventArea {
                match self {
                    $(EventKind::$variant => EventArea::$area,)*
                }
            }

            /// What the event is about.
            pub const fn entity(self) -> EventEntity {
                match self {
                    $(EventKind::$variant => EventEntity::$entity,)*
                }
            }

            /// The fields its payload may carry (some only in some cases).
            pub const fn payload_fields(self) -> &'static [&'static str] {
                match self {
                    $(EventKind::$variant => &[$($field),*],)*
                }
            }
        }
    };
}

event_kinds! {
    // ------------------------------------------------------------ missions
    MissionCreated = "mission.created", Missions, Mission,
        "A mission was accepted.",
        ["goal", "autonomy", "priority", "budget"];
    MissionStatusChanged = "mission.status_changed", Missions, Mission,
        "A mission changed status (any transition).",
        ["from", "to", "reason"];
    MissionBudgetWarning = "mission.budget_warning", Missions, Mission,
        "Spend crossed 80 % of the budget (once): optional work not started is dropped, cheaper agents preferred.",
        ["limit", "spent", "share", "optional_tasks_dropped", "prefer"];
    MissionUpdated = "mission.updated", Missions, Mission,
        "A person changed a mission's title, priority, budget, deadline or labels (PATCH), or archived it (`changes` holds each field's `from` and `to`; `version` is the mission's after the change).",
        ["version", "changes"];
    MissionDeleted = "mission.deleted", Missions, Mission,
        "A finished mission was deleted with everything that hung off it (a workspace event, so it outlives the mission's own log).",
        ["mission_id", "goal", "title", "status"];
    PlanRequested = "plan.requested", Missions, Plan,
        "No method matched; the LLM planner was asked.",
        ["planner", "reason", "match_outcome", "feedback"];
    PlanLlmCall = "plan.llm_call", Missions, Plan,
        "One LLM planning call finished (`outcome` `plan` with `usage`, or `error` with `code`, `error`, `attempt`).",
        ["outcome", "usage", "code", "error", "attempt"];
    PlanCreated = "plan.created", Missions, Plan,
        "A plan version was stored.",
        ["plan_version", "provenance", "tasks", "critical_path", "estimated_cost", "details"];
    PlanFailed = "plan.failed", Missions, Plan,
        "Planning gave up; the mission fails.",
        ["code", "reason", "problems"];
    PlanReplaced = "plan.replaced", Missions, Plan,
        "A plan was rejected (`feedback`), instructions arrived (`instructions`), or the escalation ladder replanned around a failed task (`escalation`).",
        ["feedback", "instructions", "escalation", "previous_plan_version", "tasks_removed", "tasks_kept"];
    RoutineSaved = "routine.saved", Missions, Routine,
        "A completed mission was saved as a routine.",
        ["name", "keywords", "tasks"];
    ContractorHired = "agent.contractor_hired", Missions, Agent,
        "No roster agent was good enough for a task: a mission-scoped contractor was hired (in a role the organisation spec allows).",
        ["key", "agent_id", "skills", "tools", "threshold", "role"];
    ContractorsRetired = "agent.contractors_retired", Missions, Agent,
        "The mission ended; its contractors went offline.",
        ["agents"];

    // --------------------------------------------------------------- tasks
    TaskQueued = "task.queued", Tasks, Task,
        "A task's dependencies are satisfied; it is ready.",
        ["key", "status"];
    TaskDispatched = "task.dispatched", Tasks, Attempt,
        "A task was claimed and an attempt created.",
        ["key", "agent_id", "attempt", "score", "purpose", "status"];
    TaskSucceeded = "task.succeeded", Tasks, Task,
        "The current attempt succeeded (and passed verification).",
        ["key", "attempt", "cost", "tokens", "verification", "status"];
    TaskRetryScheduled = "task.retry_scheduled", Tasks, Attempt,
        "An attempt failed (worker, dispatch, lease, verification) and a retry was scheduled.",
        ["key", "attempt", "failures", "max_attempts", "failure_kind", "error", "feedback", "due", "status"];
    TaskDeferred = "task.deferred", Tasks, Attempt,
        "The worker was busy (429/503): the task waits for its `Retry-After`, no failure counted.",
        ["key", "attempt", "reason", "due", "status"];
    TaskContinued = "task.continued", Tasks, Attempt,
        "A worker asked to continue in a new attempt.",
        ["key", "turn", "due", "status"];
    TaskVerificationFailed = "task.verification_failed", Tasks, Attempt,
        "A result failed a `must_pass` check or the verifier's verdict (not a transition).",
        ["key", "verdict"];
    TaskVerifying = "task.verifying", Tasks, Attempt,
        "A result waits for a verifier agent's verdict.",
        ["key", "attempt", "detail", "status"];
    TaskEscalated = "task.escalated", Tasks, Task,
        "A task that failed every attempt climbed a rung of the escalation ladder (`other_agent`, `higher_tier`, `replan`).",
        ["key", "rung", "excluded_agents", "min_model_tier", "error", "failure_kind", "status"];
    TaskAwaitingHuman = "task.awaiting_human", Tasks, Task,
        "A task waits for a person to complete, retry, skip or fail it (the ladder gave up, or it was handed off or delegated).",
        ["key", "rung", "error", "failure_kind", "attempts", "excluded_agents", "reason", "via", "work_package_id", "actions", "status"];
    TaskResolved = "task.resolved", Tasks, Task,
        "A person settled an escalated task.",
        ["key", "action", "feedback", "to", "via", "status"];
    TaskSkipped = "task.skipped", Tasks, Task,
        "A task was skipped (by a person, the ladder, the budget, or a rejected governance decision).",
        ["key", "reason", "error", "decision_id", "status"];
    TaskBudgetRefused = "task.budget_refused", Tasks, Task,
        "Admission refused to start a task that would exceed the budget: skipped if optional, else a person decides.",
        ["key", "estimated_cost", "limit", "spent", "then", "reason", "status"];
    TaskReopened = "task.reopened", Tasks, Task,
        "A reviewer's rejection reopened a succeeded task (named, or downstream of one).",
        ["key", "named", "feedback", "status"];
    TaskRestored = "task.restored", Tasks, Task,
        "A person continued a failed mission: a task its failure cancelled waits on its dependencies again.",
        ["key", "reason", "status"];
    TaskFailed = "task.failed", Tasks, Task,
        "A task failed for good: the escalation ladder is exhausted, or a person chose `fail`.",
        ["key", "attempts", "failure_kind", "error", "escalation", "status"];
    TaskCancelled = "task.cancelled", Tasks, Task,
        "A task was cancelled (its mission failed or was cancelled, or a replan removed it).",
        ["key", "reason", "named", "status"];
    TaskPinUnavailable = "task.pin_unavailable", Tasks, Task,
        "A waiting task's pinned agent went offline, was retired or is gone: the pin is dropped and the escalation ladder decides (`rung`, `outcome`).",
        ["key", "agent_id", "reason", "rung", "outcome"];
    AttemptProgressCheck = "attempt.progress_check", Tasks, Attempt,
        "A silent attempt's worker was asked for progress (half the stall timeout).",
        ["key", "silent_secs", "stall_timeout_secs"];

    // -------------------------------------------------------- contract net
    TenderOpened = "tender.opened", ContractNet, Tender,
        "A call for proposals went out.",
        ["key", "tender_id", "eligible_agents", "deadline"];
    TenderProposalReceived = "tender.proposal_received", ContractNet, Tender,
        "An agent proposed.",
        ["tender_id", "proposal_id", "agent_id", "via"];
    TenderAwarded = "tender.awarded", ContractNet, Tender,
        "The best proposal won; the task is pinned to its agent.",
        ["tender_id", "agent_id", "ranking", "proposals"];
    TenderNoProposals = "tender.no_proposals", ContractNet, Tender,
        "Nobody proposed by the deadline: the task falls back to scoring.",
        ["tender_id", "agent_id", "ranking", "proposals"];
    MissionAllocationChanged = "mission.allocation_changed", ContractNet, Mission,
        "A mission's allocation setting changed.",
        ["allocation", "tender_window_ms"];

    // ---------------------------------------------------------- governance
    GovernanceProfileUpdated = "governance.profile_updated", Governance, GovernanceProfile,
        "The stakeholder profile was created or changed.",
        ["profile"];
    DecisionRequested = "decision.requested", Governance, Decision,
        "A decision entered the queue.",
        ["decision_id", "status", "category", "agent_id", "description", "governance_check", "resolver", "rationale", "conditions", "modifications", "recheck_at"];
    DecisionResolved = "decision.resolved", Governance, Decision,
        "A stakeholder (or a re-check) resolved a decision.",
        ["decision_id", "status", "category", "agent_id", "description", "governance_check", "resolver", "rationale", "conditions", "modifications", "recheck_at"];
    DecisionRechecked = "decision.rechecked", Governance, Decision,
        "A deferred decision was checked again and is pending once more.",
        ["decision_id", "status", "category", "agent_id", "description", "governance_check", "resolver", "rationale", "conditions", "modifications", "recheck_at"];
    TaskAwaitingApproval = "task.awaiting_approval", Governance, Task,
        "A task waits for a governance decision before dispatch.",
        ["key", "decision_id", "reason", "relevant_threshold", "status"];
    TaskApproved = "task.approved", Governance, Task,
        "A governance decision let a task go (approved or modified).",
        ["key", "decision_id", "outcome", "modifications", "status"];
    MissionReplanTriggered = "mission.replan_triggered", Governance, Mission,
        "A rejected task asks for the remaining work to be planned around it.",
        ["key", "decision_id", "reason", "trigger", "replanning"];

    // ----------------------------------------------------------- workforce
    ContractorAdded = "contractor.added", Workforce, Contractor,
        "A contractor was registered.",
        ["contractor_id", "name", "skills", "trust_score"];
    ContractorUpdated = "contractor.updated", Workforce, Contractor,
        "A contractor's details or availability changed.",
        ["contractor_id", "availability", "skills"];
    ContractorTrustUpdated = "contractor.trust_updated", Workforce, Contractor,
        "A contractor's trust changed.",
        ["contractor_id", "previous_score", "new_score", "quality_rating", "work_package_id"];
    WorkPackageCreated = "work_package.created", Workforce, WorkPackage,
        "A work package was created (in `draft`).",
        ["work_package_id", "title", "required_skills"];
    WorkPackageStatusChanged = "work_package.status_changed", Workforce, WorkPackage,
        "A work package changed status (`candidates` on `open`, `contractor_id` on `assigned`).",
        ["work_package_id", "from", "to", "candidates", "contractor_id", "trust", "quality_rating", "task", "reason"];
    WorkPackageProgress = "work_package.progress", Workforce, WorkPackage,
        "A work package's progress or notes changed.",
        ["work_package_id", "progress", "note", "mission_id"];
    HandoffCreated = "handoff.created", Workforce, Handoff,
        "A handoff was made between an agent and a person, or between two agents (`attempt_id` the attempt that ended).",
        ["handoff_id", "direction", "from", "to", "key", "task_status_from", "task_status_to", "message_id", "agent_id", "attempt_id"];

    // -------------------------------------------------------- coordination
    MessageSent = "message.sent", Coordination, Message,
        "A message was sent.",
        ["message_id", "conversation_id", "from", "agent_id", "to", "recipients", "performative", "category", "subject"];
    MessageAcked = "message.acked", Coordination, Message,
        "A recipient acknowledged a message.",
        ["message_id", "agent_id", "category", "conversation_id"];
    ReservationCreated = "reservation.created", Coordination, Reservation,
        "A scope was reserved (or a held reservation renewed).",
        ["reservation_id", "scope", "agent_id", "state", "expires_at", "renewed"];
    ReservationReleased = "reservation.released", Coordination, Reservation,
        "The holder (or an operator) released a reservation.",
        ["reservation_id", "scope", "agent_id", "state", "expires_at"];
    ReservationExpired = "reservation.expired", Coordination, Reservation,
        "A reservation outlived its TTL (taken over, or swept).",
        ["reservation_id", "scope", "agent_id", "state", "expires_at", "taken_over_by", "by_agent", "swept"];

    // ---------------------------------------------------------------- team
    TeamDecisionProposed = "team_decision.proposed", Team, TeamDecision,
        "A decision was put to the team.",
        ["team_decision_id", "topic", "options", "evidence", "recommended_option", "eligible_agents", "closes_at"];
    TeamDecisionVoted = "team_decision.voted", Team, TeamDecision,
        "An agent voted (or changed its vote).",
        ["team_decision_id", "agent_id", "option", "rationale"];
    TeamDecisionCommitted = "team_decision.committed", Team, TeamDecision,
        "The decision was committed; the payload carries the ADR.",
        ["team_decision_id", "topic", "committed_option", "tie_broken", "tally", "adr"];
    TeamDecisionCancelled = "team_decision.cancelled", Team, TeamDecision,
        "The decision was withdrawn.",
        ["team_decision_id", "reason"];
    ToolApprovalRequested = "tool.approval_requested", Team, ToolApproval,
        "A worker asked to call a tool.",
        ["approval_id", "agent_id", "tool", "paths", "diff_lines", "tokens", "files_changed", "verdict", "reasons", "approval_status"];
    ToolApprovalResolved = "tool.approval_resolved", Team, ToolApproval,
        "A tool request was resolved: by the policy at once, by a person, or by its timeout.",
        ["approval_id", "agent_id", "tool", "approval_status", "granted", "resolver", "rationale"];
    ToolCalled = "tool.called", Team, ToolCall,
        "A worker reports a tool call it made.",
        ["agent_id", "tool", "approval_id", "ok", "summary", "duration_ms"];

    // -------------------------------------------------------- organisation
    OrgSpecUpdated = "org_spec.updated", Organisation, OrgSpec,
        "The organisation spec was uploaded or replaced (a workspace event).",
        ["version", "name", "roles", "norms", "default_modality"];
    OrgSpecRemoved = "org_spec.removed", Organisation, OrgSpec,
        "The organisation spec was removed (a workspace event).",
        [];

    // ----------------------------------------------------------------- bdi
    BdiBeliefRevised = "bdi.belief.revised", Bdi, Belief,
        "A belief was written (any outcome of the revision rule).",
        ["agent_id", "belief_id", "category", "subject", "outcome", "certainty", "conflict"];
    BdiBeliefConflict = "bdi.belief.conflict", Bdi, Belief,
        "Belief conflicts were found for an agent.",
        ["agent_id", "subject", "pairs"];
    BdiDesireCreated = "bdi.desire.created", Bdi, Desire,
        "A desire was created (with any conflicts found).",
        ["agent_id", "desire_id", "kind", "priority", "conflicts"];
    BdiDesireDropped = "bdi.desire.dropped", Bdi, Desire,
        "A desire was dropped (directly or by cascade).",
        ["agent_id", "desire_id", "reason", "related_desires_affected", "cascaded_drops"];
    BdiGoalCreated = "bdi.goal.created", Bdi, Goal,
        "A goal was created.",
        ["agent_id", "goal_id", "tier", "parent_goal_id"];
    BdiGoalUpdated = "bdi.goal.updated", Bdi, Goal,
        "A goal changed status.",
        ["agent_id", "goal_id", "from", "to"];
    BdiIntentionCommitted = "bdi.intention.committed", Bdi, Intention,
        "An intention was committed.",
        ["agent_id", "intention_id", "strategy", "priority"];
    BdiIntentionUpdated = "bdi.intention.updated", Bdi, Intention,
        "An intention changed status (`from`, `to`) or progress (`progress`).",
        ["agent_id", "intention_id", "from", "to", "progress"];
    BdiIntentionReconsidered = "bdi.intention.reconsidered", Bdi, Intention,
        "`intention_reconsider` ran.",
        ["agent_id", "intention_id", "strategy", "verdict", "reasons", "applied"];
    BdiIntentionStale = "bdi.intention.stale", Bdi, Intention,
        "An intention stalled past its threshold was marked for reconsideration.",
        ["agent_id", "intention_id", "strategy"];
    MissionReconsidered = "mission.reconsidered", Bdi, Mission,
        "A mission, as an intention, was reconsidered under its commitment strategy.",
        ["trigger", "strategy", "explicit", "verdict", "replan"];
    MissionCommitmentSet = "mission.commitment_set", Bdi, Mission,
        "A mission's commitment strategy was set or cleared.",
        ["strategy", "explicit"];

    // -------------------------------------------------------------- agents
    BlackboardWritten = "blackboard.written", Agents, BlackboardKey,
        "A key of the mission's blackboard was written (`expected_version` when it was a compare-and-set).",
        ["key", "version", "value", "expected_version"];
    BlackboardDeleted = "blackboard.deleted", Agents, BlackboardKey,
        "A key of the mission's blackboard was deleted (its version keeps counting).",
        ["key", "version", "expected_version"];
    ToolRefused = "tool.refused", Agents, ToolCall,
        "An agent's tool call was refused by the organisation spec (the role's grants, a norm on the tool, or a norm on the agent's task).",
        ["tool", "agent_id", "role", "reason", "norm"];
    PlanExtended = "plan.extended", Agents, Plan,
        "An agent added the work it discovered to its mission (children of, or successors to, its task).",
        ["anchor", "placement", "added", "reason", "previous_plan_version", "needs_approval"];
    AgentUpdated = "agent.updated", Agents, Agent,
        "An agent's description or status was changed by PATCH (a workspace event; `changes` holds each field's `from` and `to`).",
        ["agent_id", "version", "changes"];
    AgentUnreachable = "agent.unreachable", Agents, Agent,
        "An agent's endpoint could not be reached for several dispatches in a row: it is `unreachable` and gets no work until a heartbeat or a probe that is answered (a workspace event).",
        ["agent_id", "failures", "error"];
    AgentReachable = "agent.reachable", Agents, Agent,
        "An unreachable agent's endpoint answered a probe: it takes work again (a workspace event).",
        ["agent_id", "status"];
    AgentRetired = "agent.retired", Agents, Agent,
        "An agent was retired: kept for history, given no new work; its live attempts finish (a workspace event).",
        ["agent_id", "version", "previous_status", "live_attempts"];
    PlanStepRecorded = "plan.step_recorded", Agents, Intention,
        "An agent reported a step of one of its intentions (`plan_execute_step`); an executing or completed step is progress on it.",
        ["agent_id", "intention_id", "step_id", "status", "progress", "actual_duration", "outcome", "artifacts_produced", "notes"];
    TaskHandedOff = "task.handed_off", Agents, Task,
        "An agent handed its running task to another agent (named, or the best of a role): its attempt ended without counting as a failure, and the task is queued pinned to the receiver with the summary as feedback.",
        ["key", "handoff_id", "from", "to", "to_role", "score", "attempt_id", "context_summary", "status"];
    RequestOpened = "request.opened", Agents, Message,
        "A REQUEST (work the recipient must AGREE to or REFUSE) or a QUERY (expecting an INFORM or FAILURE) to one agent was opened; `request_id` is the message's id.",
        ["request_id", "kind", "requester", "recipient", "subject"];
    RequestAgreed = "request.agreed", Agents, Message,
        "The recipient AGREEd to a request (`added_task`: the task it became, when the request was within a mission).",
        ["request_id", "kind", "requester", "recipient", "message_id", "added_task"];
    RequestRefused = "request.refused", Agents, Message,
        "The recipient REFUSEd a request.",
        ["request_id", "kind", "requester", "recipient", "message_id"];
    RequestCancelled = "request.cancelled", Agents, Message,
        "The requester withdrew an open request or query (CANCEL).",
        ["request_id", "kind", "requester", "recipient", "message_id"];
    RequestAnswered = "request.answered", Agents, Message,
        "The recipient answered: an INFORM reply to a query (`status` `answered`) or to an agreed request (`status` `done`).",
        ["request_id", "kind", "requester", "recipient", "message_id", "status"];
    RequestFailed = "request.failed", Agents, Message,
        "The recipient replied FAILURE to a query or an agreed request.",
        ["request_id", "kind", "requester", "recipient", "message_id"];

    // ----------------------------------------------------------- workflows
    WorkflowStarted = "workflow.started", Workflows, WorkflowInstance,
        "A workflow instance started (its version is frozen).",
        ["instance_id", "workflow_id", "version", "process_id", "status", "active", "completed", "incidents", "parent_id"];
    WorkflowAdvanced = "workflow.advanced", Workflows, WorkflowInstance,
        "A command moved a workflow instance: a task done, a timer due, a message, a signal, a person's answer.",
        ["instance_id", "workflow_id", "version", "process_id", "status", "active", "completed", "incidents", "command"];
    WorkflowEnded = "workflow.ended", Workflows, WorkflowInstance,
        "A workflow instance ended: completed, terminated (cancelled) or failed (stopped at incidents).",
        ["instance_id", "workflow_id", "version", "process_id", "status", "active", "completed", "incidents"];
}

impl EventKind {
    /// The kind named `s`, if there is one.
    pub fn parse(s: &str) -> Option<EventKind> {
        EventKind::ALL.iter().copied().find(|k| k.as_str() == s)
    }
}

/// The markers around the generated catalogue in `docs/events.md`.
pub const CATALOGUE_BEGIN: &str = "<!-- BEGIN GENERATED: event kinds -->";
/// See [`CATALOGUE_BEGIN`].
pub const CATALOGUE_END: &str = "<!-- END GENERATED -->";

impl EventKind {
    /// The catalogue of kinds as Markdown: a table per area (kind, what
    /// happened, what it is about, payload fields). `docs/events.md` holds it
    /// between [`CATALOGUE_BEGIN`] and [`CATALOGUE_END`].
    pub fn markdown_catalogue() -> String {
        let mut out = String::new();
        for &area in EventArea::ALL {
            out.push_str(&format!(
                "\n### {}\n\n| kind | what happened | about | payload |\n| --- | --- | --- | --- |\n",
                area.title()
            ));
            for &k in EventKind::ALL.iter().filter(|k| k.area() == area) {
                let fields = if k.payload_fields().is_empty() {
                    "—".to_owned()
                } else {
                    k.payload_fields()
                        .iter()
                        .map(|f| format!("`{f}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                out.push_str(&format!(
                    "| `{}` | {} | {} | {} |\n",
                    k.as_str(),
                    k.description(),
                    k.entity(),
                    fields
                ));
            }
        }
        out.push('\n');
        out
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no event kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownEventKind(pub String);

impl fmt::Display for UnknownEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown event kind '{}'", self.0)
    }
}

impl std::error::Error for UnknownEventKind {}

impl FromStr for EventKind {
    type Err = UnknownEventKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EventKind::parse(s).ok_or_else(|| UnknownEventKind(s.to_owned()))
    }
}

impl TryFrom<&str> for EventKind {
    type Error = UnknownEventKind;

    fn try_from(s: &str) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl Serialize for EventKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EventKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_and_round_trip() {
        let mut seen = HashSet::new();
        for &k in EventKind::ALL {
            assert!(seen.insert(k.as_str()), "{k} listed twice");
            assert_eq!(k.as_str().parse::<EventKind>(), Ok(k));
            assert_eq!(EventKind::try_from(k.as_str()), Ok(k));
            let json = serde_json::to_value(k).expect("serialises");
            assert_eq!(json, serde_json::Value::String(k.as_str().into()));
            assert_eq!(serde_json::from_value::<EventKind>(json).ok(), Some(k));
        }
        assert!("task.nope".parse::<EventKind>().is_err());
    }

    #[test]
    fn every_kind_is_in_a_listed_area() {
        for &k in EventKind::ALL {
            assert!(EventArea::ALL.contains(&k.area()), "{k}");
            assert!(!k.description().is_empty(), "{k}");
        }
    }

    /// `docs/events.md`'s generated block must be what [`EventKind::markdown_catalogue`]
    /// renders; `UPDATE_DOCS=1` rewrites it.
    #[test]
    fn docs_catalogue_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/events.md");
        let doc = std::fs::read_to_string(path).expect("docs/events.md is readable");
        let begin = doc
            .find(CATALOGUE_BEGIN)
            .expect("docs/events.md has the BEGIN GENERATED marker")
            + CATALOGUE_BEGIN.len();
        let end = begin
            + doc[begin..]
                .find(CATALOGUE_END)
                .expect("docs/events.md has the END GENERATED marker");
        let want = EventKind::markdown_catalogue();
        if doc[begin..end] == want {
            return;
        }
        if std::env::var("UPDATE_DOCS").as_deref() == Ok("1") {
            let updated = format!("{}{want}{}", &doc[..begin], &doc[end..]);
            std::fs::write(path, updated).expect("docs/events.md is writable");
            return;
        }
        panic!(
            "docs/events.md's event catalogue differs from EventKind::markdown_catalogue(); \
             regenerate it with `UPDATE_DOCS=1 cargo test -p coordinator-protocol docs_catalogue`"
        );
    }
}
