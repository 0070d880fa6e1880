//! The pure rules of BDI state, each from the seed specification
//! (`seeds/000_4103374d422914e8.txt`, §5–§7 and §16.4). No I/O here: the
//! service's use cases (`bdi::state`) and its maintenance job (`bdi::runtime`)
//! persist what these functions decide. [`evaluation`] judges a goal
//! (`goal_evaluate`) and [`plans`] describes plans for the agents' planning
//! tools (phases, risks, HTN subtasks, step states).

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::{IllegalTransition, mission::Autonomy, text_enum};

pub mod evaluation;
pub mod plans;

/// What a belief is about (seed §5.2, "Belief categories").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BeliefCategory {
    /// Facts about the external world.
    Environment,
    /// The agent's own state.
    SelfState,
    /// Other agents.
    Agent,
    /// Knowledge derived from past cases.
    Case,
}

text_enum!(BeliefCategory {
    Environment => "environment",
    SelfState => "self",
    Agent => "agent",
    Case => "case",
});

/// Terminal (an end in itself) or instrumental (a means to others), seed §6.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DesireKind {
    /// Valued for its own sake.
    Terminal,
    /// A means to the desires it serves.
    Instrumental,
}

text_enum!(DesireKind {
    Terminal => "terminal",
    Instrumental => "instrumental",
});

/// Goal tiers (seed §4 `Goals.md`, tool `goal_create`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GoalTier {
    /// Long-term direction (the highest tier).
    Strategic,
    /// Medium-term.
    Tactical,
    /// Day-to-day (the lowest tier).
    Operational,
}

text_enum!(GoalTier {
    Strategic => "strategic",
    Tactical => "tactical",
    Operational => "operational",
});

/// Where a goal is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GoalStatus {
    /// Pursued.
    Active,
    /// Reached (final).
    Achieved,
    /// Given up (final).
    Abandoned,
}

text_enum!(GoalStatus {
    Active => "active",
    Achieved => "achieved",
    Abandoned => "abandoned",
});

/// How readily an intention is abandoned (seed §7.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommitmentStrategy {
    /// Persist until achieved or proven impossible.
    SingleMinded,
    /// Reconsider when circumstances change significantly (the default).
    OpenMinded,
    /// Reconsider aggressively.
    Cautious,
}

text_enum!(CommitmentStrategy {
    SingleMinded => "single-minded",
    OpenMinded => "open-minded",
    Cautious => "cautious",
});

/// Where an intention is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntentionStatus {
    /// Pursued.
    Active,
    /// Paused; may resume.
    Suspended,
    /// Abandoned (final).
    Dropped,
    /// Reached (final).
    Achieved,
}

text_enum!(IntentionStatus {
    Active => "active",
    Suspended => "suspended",
    Dropped => "dropped",
    Achieved => "achieved",
});

/// `intention_reconsider`'s recommendation (seed §7.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Continue pursuing it.
    Keep,
    /// Pause it.
    Suspend,
    /// Abandon it.
    Drop,
}

text_enum!(Verdict {
    Keep => "keep",
    Suspend => "suspend",
    Drop => "drop",
});

/// Checks a value that must lie in [0, 1] (certainties, formula components).
pub fn unit_interval(v: f64) -> bool {
    v.is_finite() && (0.0..=1.0).contains(&v)
}

// ---------------------------------------------------------------- beliefs

/// What a write to a belief did (seed §5.2 PERCEIVE, step 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeliefOutcome {
    /// Novel: a new belief with the given certainty (step 4).
    Created,
    /// Same content again: corroborating evidence, so the certainty becomes
    /// the higher of the two estimates (it never drops).
    Corroborated,
    /// Contradicting content with higher certainty: it replaces the belief.
    Revised,
    /// Contradicting content with lower certainty: the belief is retained.
    Rejected,
    /// Contradicting content with equal certainty: retained and flagged.
    Conflict,
}

text_enum!(BeliefOutcome {
    Created => "created",
    Corroborated => "corroborated",
    Revised => "revised",
    Rejected => "rejected",
    Conflict => "conflict",
});

/// Normalises content for comparison: case and surrounding/repeated
/// whitespace do not make two statements different.
pub fn normalise_content(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Whether two belief contents contradict (differ once normalised).
pub fn contradicts(a: &str, b: &str) -> bool {
    normalise_content(a) != normalise_content(b)
}

/// The revision rule of seed §5.2: "if new information contradicts existing
/// belief: evaluate certainty of both; retain higher-certainty belief (or
/// flag conflict)". Certainties within 1e-9 are equal, and equal
/// certainty with different content is the conflict.
pub fn revise_belief(
    existing: Option<(&str, f64)>,
    content: &str,
    certainty: f64,
) -> BeliefOutcome {
    let Some((old_content, old_certainty)) = existing else {
        return BeliefOutcome::Created;
    };
    if !contradicts(old_content, content) {
        return BeliefOutcome::Corroborated;
    }
    if (certainty - old_certainty).abs() < 1e-9 {
        BeliefOutcome::Conflict
    } else if certainty > old_certainty {
        BeliefOutcome::Revised
    } else {
        BeliefOutcome::Rejected
    }
}

/// A belief as stored: content, certainty and the conflict flag.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeldBelief<'a> {
    /// What the agent holds true.
    pub content: &'a str,
    /// How sure it is, in [0, 1].
    pub certainty: f64,
    /// Whether an equally certain contradiction was flagged.
    pub conflict: bool,
}

/// What a write leaves stored: the rule's outcome and the belief after it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Revision<'a> {
    /// What the rule decided.
    pub outcome: BeliefOutcome,
    /// The belief as it is stored afterwards.
    pub belief: HeldBelief<'a>,
}

/// Applies [`revise_belief`] to a held belief (`None`: there is none yet) and
/// says what is stored afterwards.
///
/// Seed §5.2: "certainty increases with corroborating evidence and decreases
/// with contradictory information". So a corroboration keeps the held wording
/// and takes the higher certainty: a 0.9 belief corroborated at 0.3 stays at
/// 0.9 (a weak witness is still a witness, not a contradiction). It settles a
/// flagged tie only when it raises the certainty above the tie. A
/// contradiction replaces the belief only with higher certainty; otherwise the
/// belief is kept (flagged on a tie).
pub fn revise<'a>(
    existing: Option<HeldBelief<'a>>,
    content: &'a str,
    certainty: f64,
) -> Revision<'a> {
    let offered = HeldBelief {
        content,
        certainty,
        conflict: false,
    };
    let Some(old) = existing else {
        return Revision {
            outcome: BeliefOutcome::Created,
            belief: offered,
        };
    };
    let outcome = revise_belief(Some((old.content, old.certainty)), content, certainty);
    let belief = match outcome {
        BeliefOutcome::Created | BeliefOutcome::Revised => offered,
        BeliefOutcome::Corroborated => HeldBelief {
            content: old.content,
            certainty: old.certainty.max(certainty),
            conflict: old.conflict && certainty <= old.certainty,
        },
        BeliefOutcome::Rejected => old,
        BeliefOutcome::Conflict => HeldBelief {
            conflict: true,
            ..old
        },
    };
    Revision { outcome, belief }
}

/// Certainty above which two beliefs on one subject are compared for
/// conflicts (seed §16.4: "B1.certainty > 0.7 AND B2.certainty > 0.7").
pub const CONFLICT_CERTAINTY: f64 = 0.7;
/// Beliefs processed per maintenance chunk (seed §16.4: "chunks of 50").
pub const BELIEF_CHUNK: i64 = 50;

/// A belief as conflict detection sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct BeliefFact {
    /// Id.
    pub id: Uuid,
    /// Subject.
    pub subject: String,
    /// Content.
    pub content: String,
    /// Certainty.
    pub certainty: f64,
}

/// Pairs of one agent's beliefs in conflict (seed §16.4): same subject, both
/// certainties strictly above 0.7, contradictory content. Each pair once,
/// the smaller id first.
pub fn belief_conflicts(beliefs: &[BeliefFact]) -> Vec<(&BeliefFact, &BeliefFact)> {
    let mut by_subject: HashMap<&str, Vec<&BeliefFact>> = HashMap::new();
    for b in beliefs.iter().filter(|b| b.certainty > CONFLICT_CERTAINTY) {
        by_subject.entry(b.subject.as_str()).or_default().push(b);
    }
    let mut out = Vec::new();
    let mut subjects: Vec<_> = by_subject.into_iter().collect();
    subjects.sort_by(|a, b| a.0.cmp(b.0));
    for (_, group) in subjects {
        for (i, a) in group.iter().enumerate() {
            for b in &group[i + 1..] {
                if contradicts(&a.content, &b.content) {
                    out.push(if a.id < b.id { (*a, *b) } else { (*b, *a) });
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------- desires

/// The components of the priority formula, each in [0, 1] (seed §6.2).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PriorityInputs {
    /// Intrinsic importance, set at creation.
    pub base_priority: f64,
    /// How much achieving it matters.
    pub importance: f64,
    /// Time sensitivity.
    pub urgency: f64,
    /// Alignment with the stated strategic direction.
    pub strategic_alignment: f64,
    /// 1.0 when all dependencies are met.
    pub dependency_status: f64,
}

impl PriorityInputs {
    /// The first component outside [0, 1], by name.
    pub fn invalid_component(&self) -> Option<(&'static str, f64)> {
        [
            ("base_priority", self.base_priority),
            ("importance", self.importance),
            ("urgency", self.urgency),
            ("strategic_alignment", self.strategic_alignment),
            ("dependency_status", self.dependency_status),
        ]
        .into_iter()
        .find(|(_, v)| !unit_interval(*v))
    }
}

/// The seed's priority formula (§6.2):
/// `base_priority·0.30 + importance·0.25 + urgency·0.25 +
/// strategic_alignment·0.15 + dependency_status·0.05`.
/// The weights sum to 1, so the result stays in [0, 1].
pub fn desire_priority(p: &PriorityInputs) -> f64 {
    p.base_priority * 0.30
        + p.importance * 0.25
        + p.urgency * 0.25
        + p.strategic_alignment * 0.15
        + p.dependency_status * 0.05
}

/// The three conflict types of seed §6.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConflictKind {
    /// Both need the same scarce resource.
    Resource,
    /// Achieving one makes the other impossible.
    Goal,
    /// They pull in incompatible strategic directions.
    Strategy,
}

text_enum!(ConflictKind {
    Resource => "resource",
    Goal => "goal",
    Strategy => "strategy",
});

/// What conflict detection compares of a desire.
#[derive(Debug, Clone, Default)]
pub struct DesireProfile {
    /// Id.
    pub id: Uuid,
    /// Scarce resources needed (budget, a person, a slot…), compared case-insensitively.
    pub resources: Vec<String>,
    /// Strategic direction, if declared.
    pub strategy: Option<String>,
    /// Desires its achievement rules out.
    pub incompatible_with: Vec<Uuid>,
}

/// A conflict between a new desire and an existing one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DesireConflict {
    /// The existing desire.
    pub desire_id: Uuid,
    /// `resource`, `goal` or `strategy`.
    pub kind: ConflictKind,
    /// What they clash on (the shared resource, the two directions…).
    pub detail: String,
}

/// Conflicts of a new desire with the agent's active ones (seed §6.3):
/// a shared resource; a goal conflict when either names the other in
/// `incompatible_with`; a strategy conflict when both declare a direction
/// and the directions differ. Reported, not refused: the agent decides.
pub fn desire_conflicts(new: &DesireProfile, existing: &[DesireProfile]) -> Vec<DesireConflict> {
    let norm = |s: &str| s.trim().to_lowercase();
    let mine: HashSet<String> = new.resources.iter().map(|r| norm(r)).collect();
    let mut out = Vec::new();
    for e in existing.iter().filter(|e| e.id != new.id) {
        let mut shared: Vec<String> = e
            .resources
            .iter()
            .map(|r| norm(r))
            .filter(|r| mine.contains(r))
            .collect();
        shared.sort();
        shared.dedup();
        if !shared.is_empty() {
            out.push(DesireConflict {
                desire_id: e.id,
                kind: ConflictKind::Resource,
                detail: shared.join(", "),
            });
        }
        if new.incompatible_with.contains(&e.id) || e.incompatible_with.contains(&new.id) {
            out.push(DesireConflict {
                desire_id: e.id,
                kind: ConflictKind::Goal,
                detail: "declared incompatible".into(),
            });
        }
        if let (Some(a), Some(b)) = (&new.strategy, &e.strategy)
            && norm(a) != norm(b)
        {
            out.push(DesireConflict {
                desire_id: e.id,
                kind: ConflictKind::Strategy,
                detail: format!("{} vs {}", a.trim(), b.trim()),
            });
        }
    }
    out
}

/// A desire as the drop cascade sees it.
#[derive(Debug, Clone)]
pub struct DesireLink {
    /// Id.
    pub id: Uuid,
    /// Terminal or instrumental.
    pub kind: DesireKind,
    /// Still active.
    pub active: bool,
    /// The desires it serves.
    pub serves: Vec<Uuid>,
}

/// What dropping one desire does (seed §6.4).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DropPlan {
    /// Active instrumental desires that serve a dropped desire ("related_desires_affected").
    pub affected: Vec<Uuid>,
    /// Those left serving nothing active, dropped too ("cascaded_drops"), in cascade order.
    pub cascaded: Vec<Uuid>,
}

/// The drop cascade of seed §6.4: "all instrumental desires whose sole
/// purpose was to serve that terminal desire" are dropped too. An
/// instrumental desire is cascaded when every desire it serves is dropped
/// (now or before), so one that also serves a live desire stays; the
/// cascade repeats through chains of instrumental desires.
pub fn drop_cascade(dropped: Uuid, desires: &[DesireLink]) -> DropPlan {
    let mut gone: HashSet<Uuid> = desires.iter().filter(|d| !d.active).map(|d| d.id).collect();
    gone.insert(dropped);
    let mut plan = DropPlan::default();
    let mut affected: HashSet<Uuid> = HashSet::new();
    loop {
        let mut changed = false;
        for d in desires {
            if !d.active || gone.contains(&d.id) || d.kind != DesireKind::Instrumental {
                continue;
            }
            if d.serves.iter().any(|s| gone.contains(s)) && affected.insert(d.id) {
                plan.affected.push(d.id);
            }
            if !d.serves.is_empty() && d.serves.iter().all(|s| gone.contains(s)) {
                gone.insert(d.id);
                plan.cascaded.push(d.id);
                changed = true;
            }
        }
        if !changed {
            return plan;
        }
    }
}

// ---------------------------------------------------------------- goals

/// A child goal must sit at its parent's tier or below (strategic →
/// tactical → operational): a strategic goal cannot serve an operational one.
pub fn tier_fits_parent(child: GoalTier, parent: GoalTier) -> bool {
    child >= parent
}

/// The goal lifecycle: active → achieved | abandoned; both final.
pub fn goal_next(from: GoalStatus, to: GoalStatus) -> Result<GoalStatus, IllegalTransition> {
    match (from, to) {
        (GoalStatus::Active, GoalStatus::Achieved | GoalStatus::Abandoned) => Ok(to),
        _ => Err(IllegalTransition {
            entity: "goal",
            from: from.as_str(),
            event: to.as_str(),
        }),
    }
}

// ---------------------------------------------------------------- intentions

/// The intention lifecycle: active ⇄ suspended; either → dropped; active →
/// achieved. Dropped and achieved are final.
pub fn intention_next(
    from: IntentionStatus,
    to: IntentionStatus,
) -> Result<IntentionStatus, IllegalTransition> {
    use IntentionStatus as S;
    match (from, to) {
        (S::Active, S::Suspended | S::Dropped | S::Achieved)
        | (S::Suspended, S::Active | S::Dropped) => Ok(to),
        _ => Err(IllegalTransition {
            entity: "intention",
            from: from.as_str(),
            event: to.as_str(),
        }),
    }
}

impl CommitmentStrategy {
    /// Days without progress after which the intention counts as stalled
    /// (seed §7.2: open-minded 7, cautious 3; single-minded never stalls
    /// out, it is reconsidered only when impossible).
    pub fn stall_days(self) -> Option<f64> {
        match self {
            CommitmentStrategy::SingleMinded => None,
            CommitmentStrategy::OpenMinded => Some(7.0),
            CommitmentStrategy::Cautious => Some(3.0),
        }
    }

    /// How many times an intention's priority a new desire must exceed to
    /// prompt reconsideration (seed §7.2: open-minded 1.3, cautious 1.1).
    pub fn priority_factor(self) -> Option<f64> {
        match self {
            CommitmentStrategy::SingleMinded => None,
            CommitmentStrategy::OpenMinded => Some(1.3),
            CommitmentStrategy::Cautious => Some(1.1),
        }
    }

    /// Missions are intentions: approve-mode missions are `cautious`
    /// (a person is in the loop, so reconsider readily), autonomous ones
    /// `open-minded` (the seed's default); an explicit choice wins.
    pub fn for_mission(autonomy: Autonomy, explicit: Option<CommitmentStrategy>) -> Self {
        explicit.unwrap_or(match autonomy {
            Autonomy::Approve => CommitmentStrategy::Cautious,
            Autonomy::Autonomous => CommitmentStrategy::OpenMinded,
        })
    }
}

/// What `intention_reconsider` looks at (seed §7.3).
#[derive(Debug, Clone, Copy)]
pub struct ReconsiderInputs {
    /// The intention's strategy.
    pub strategy: CommitmentStrategy,
    /// Its priority.
    pub priority: f64,
    /// Days since its last progress update.
    pub days_since_progress: f64,
    /// The highest priority among the agent's other active desires.
    pub best_competing_priority: Option<f64>,
    /// Current beliefs say it cannot be achieved.
    pub impossible: bool,
    /// An external blocker or a resource conflict with a higher-priority intention.
    pub blocked: bool,
}

/// `intention_reconsider` (seed §7.3) with the thresholds of §7.2:
/// - proven infeasible → drop, under every strategy (the only trigger a
///   single-minded intention answers to; otherwise it is kept);
/// - a competing desire with priority > `priority × factor` (1.3
///   open-minded, 1.1 cautious) → drop ("superseded by better option");
/// - an external blocker → suspend;
/// - stalled for more than the strategy's days (7 / 3) → suspend;
/// - otherwise keep. Returns the verdict and the reasons that led to it.
pub fn reconsider(i: &ReconsiderInputs) -> (Verdict, Vec<String>) {
    if i.impossible {
        return (
            Verdict::Drop,
            vec!["proven infeasible by current beliefs".into()],
        );
    }
    let (Some(days), Some(factor)) = (i.strategy.stall_days(), i.strategy.priority_factor()) else {
        return (
            Verdict::Keep,
            vec!["single-minded: reconsidered only when impossible".into()],
        );
    };
    if let Some(best) = i.best_competing_priority
        && best > i.priority * factor
    {
        return (
            Verdict::Drop,
            vec![format!(
                "superseded: a desire with priority {best:.4} exceeds {:.4} × {factor}",
                i.priority
            )],
        );
    }
    if i.blocked {
        return (Verdict::Suspend, vec!["blocked".into()]);
    }
    if i.days_since_progress > days {
        return (
            Verdict::Suspend,
            vec![format!(
                "stalled {:.1} days without progress (threshold {days})",
                i.days_since_progress
            )],
        );
    }
    (
        Verdict::Keep,
        vec!["making progress, no better alternative".into()],
    )
}

/// Whether the maintenance job marks an intention stale (seed §16.4 step
/// 1): stalled beyond its strategy's threshold; never for single-minded.
pub fn is_stale(strategy: CommitmentStrategy, days_since_progress: f64) -> bool {
    strategy
        .stall_days()
        .is_some_and(|d| days_since_progress > d)
}

/// The explicit replanning triggers of a mission (DESIGN "BDI commitment").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MissionTrigger {
    /// A task failed after every escalation.
    TaskFailedAfterEscalations,
    /// New user instructions.
    Instructions,
    /// Spending passed the budget warning.
    BudgetWarning,
    /// The verifier says the task design is wrong.
    VerifierRejectedDesign,
    /// A stakeholder rejected a task at its governance gate.
    GovernanceRejected,
}

text_enum!(MissionTrigger {
    TaskFailedAfterEscalations => "task_failed_after_escalations",
    Instructions => "instructions",
    BudgetWarning => "budget_warning",
    VerifierRejectedDesign => "verifier_rejected_design",
    GovernanceRejected => "governance_rejected",
});

/// Whether a mission reconsiders (replans) on an explicit trigger, given its
/// strategy. Ordinary ticks never reconsider. Single-minded missions replan
/// only when the plan is shown impossible (a task failed after every
/// escalation, or the verifier rejects its design) or a person gives new
/// instructions or rejects a task (people outrank commitment); they keep the
/// plan through a budget warning. Open-minded and cautious missions reconsider on every
/// explicit trigger.
pub fn mission_reconsiders(strategy: CommitmentStrategy, trigger: MissionTrigger) -> bool {
    !(strategy == CommitmentStrategy::SingleMinded && trigger == MissionTrigger::BudgetWarning)
}

#[cfg(test)]
mod tests;
