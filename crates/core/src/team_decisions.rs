//! Team decisions (seed: "Decision Protocol"): propose a topic with options
//! and evidence, let the eligible agents vote within a window, commit, and
//! record the outcome as an ADR on the mission's log.
//!
//! - **Eligible voters** default to the agents assigned to the mission's
//!   tasks; the proposer may name others. Only an agent token votes, as
//!   itself; an ineligible agent gets 403.
//! - **One vote per agent**; an agent may change its vote while the decision
//!   is open (the last vote counts), so new evidence can move it.
//! - **Commit** happens when every eligible agent has voted (in the vote's
//!   transaction) or when the window has closed: by the engine's sweep
//!   within one reconcile period, or sooner by whoever next reads the
//!   decision or its mission's list (either way through [`settle_if_due`],
//!   guarded by the row lock and `version`). Plurality wins;
//!   a tie is broken by the **orchestrator rule**: the proposer's
//!   recommended option if it is among the tied, otherwise the tied option
//!   listed first. No votes at all is a tie of every option.
//! - Lifecycle `open → committed | cancelled`; closed decisions refuse votes,
//!   commits and cancels (409).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::domain::{IllegalTransition, text_enum};

/// A vote row.
#[derive(Debug, Clone)]
pub struct VoteRow {
    /// Voter.
    pub agent_id: String,
    /// Option label.
    pub option: String,
    /// Why.
    pub rationale: Option<String>,
    /// When (last change).
    pub cast_at: OffsetDateTime,
}

/// Where a team decision is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TeamDecisionStatus {
    /// Taking votes.
    Open,
    /// Decided (final).
    Committed,
    /// Withdrawn (final).
    Cancelled,
}

text_enum!(TeamDecisionStatus {
    Open => "open",
    Committed => "committed",
    Cancelled => "cancelled",
});

/// What can happen to a team decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TeamDecisionEvent {
    /// An agent votes.
    Vote,
    /// The window closes or everyone voted.
    Commit,
    /// Someone withdraws it.
    Cancel,
}

impl TeamDecisionEvent {
    fn as_str(self) -> &'static str {
        match self {
            TeamDecisionEvent::Vote => "vote",
            TeamDecisionEvent::Commit => "commit",
            TeamDecisionEvent::Cancel => "cancel",
        }
    }
}

impl TeamDecisionStatus {
    /// The status after `event`; only an open decision takes any.
    pub fn next(self, event: TeamDecisionEvent) -> Result<Self, IllegalTransition> {
        match (self, event) {
            (TeamDecisionStatus::Open, TeamDecisionEvent::Vote) => Ok(TeamDecisionStatus::Open),
            (TeamDecisionStatus::Open, TeamDecisionEvent::Commit) => {
                Ok(TeamDecisionStatus::Committed)
            }
            (TeamDecisionStatus::Open, TeamDecisionEvent::Cancel) => {
                Ok(TeamDecisionStatus::Cancelled)
            }
            (s, e) => Err(IllegalTransition {
                entity: "team_decision",
                from: s.as_str(),
                event: e.as_str(),
            }),
        }
    }
}

/// One option of a team decision.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TeamOption {
    /// Short name, unique within the decision (1–200 characters).
    pub label: String,
    /// What it means.
    #[serde(default)]
    pub description: String,
}

/// The outcome of a count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Count {
    /// Votes per option label, every option present.
    pub tally: BTreeMap<String, usize>,
    /// The chosen option's label.
    pub chosen: String,
    /// Whether the orchestrator rule broke a tie.
    pub tie_broken: bool,
}

/// Plurality over `votes` (agent → option label), ties broken by the
/// orchestrator rule: `recommended` if tied, else the first listed tied option.
pub fn count(
    options: &[TeamOption],
    votes: &[(String, String)],
    recommended: Option<&str>,
) -> Count {
    let mut tally: BTreeMap<String, usize> = options.iter().map(|o| (o.label.clone(), 0)).collect();
    for (_, option) in votes {
        if let Some(n) = tally.get_mut(option) {
            *n += 1;
        }
    }
    let top = tally.values().copied().max().unwrap_or(0);
    let tied: Vec<&str> = options
        .iter()
        .map(|o| o.label.as_str())
        .filter(|l| tally.get(*l) == Some(&top))
        .collect();
    let chosen = match recommended {
        Some(r) if tied.contains(&r) => r,
        _ => tied.first().copied().unwrap_or_default(),
    };
    Count {
        chosen: chosen.to_owned(),
        tie_broken: tied.len() > 1,
        tally,
    }
}

/// What the ADR renderer needs.
#[derive(Debug, Clone)]
pub struct AdrInput<'a> {
    /// Decision id.
    pub id: Uuid,
    /// Topic.
    pub topic: &'a str,
    /// Mission.
    pub mission_id: Uuid,
    /// Raising task.
    pub task_id: Option<Uuid>,
    /// Proposer.
    pub proposer: &'a str,
    /// Options.
    pub options: &'a [TeamOption],
    /// Evidence.
    pub evidence: &'a [String],
    /// Recommendation.
    pub recommended: Option<&'a str>,
    /// Eligible agents.
    pub eligible: &'a [String],
    /// Votes, by agent.
    pub votes: &'a [VoteRow],
    /// The count.
    pub count: &'a Count,
    /// When committed.
    pub committed_at: OffsetDateTime,
    /// Why it closed now.
    pub closed_because: &'a str,
}

/// Renders the ADR (markdown) of a committed decision, from its record alone.
pub fn render_adr(a: &AdrInput<'_>) -> String {
    let date = a
        .committed_at
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let mut md = format!("# ADR: {}\n\n", a.topic.trim());
    md += &format!("- Status: accepted\n- Date: {date}\n- Decision: {}\n", a.id);
    md += &format!("- Mission: {}\n", a.mission_id);
    if let Some(t) = a.task_id {
        md += &format!("- Raised by task: {t}\n");
    }
    md += &format!("- Proposed by: {}\n", a.proposer);
    md += &format!("- Deciders: {}\n\n", a.eligible.join(", "));
    md += "## Context\n\n";
    if a.evidence.is_empty() {
        md += "No evidence was given.\n\n";
    } else {
        for e in a.evidence {
            md += &format!("- {}\n", e.trim());
        }
        md += "\n";
    }
    md += "## Options considered\n\n";
    for (i, o) in a.options.iter().enumerate() {
        let n = a.count.tally.get(&o.label).copied().unwrap_or(0);
        let rec = if a.recommended == Some(o.label.as_str()) {
            " (recommended by the proposer)"
        } else {
            ""
        };
        let desc = if o.description.trim().is_empty() {
            String::new()
        } else {
            format!(": {}", o.description.trim())
        };
        md += &format!(
            "{}. **{}**{desc}{rec}: {n} vote{}\n",
            i + 1,
            o.label,
            if n == 1 { "" } else { "s" }
        );
    }
    md += "\n## Votes\n\n";
    if a.votes.is_empty() {
        md += "Nobody voted.\n\n";
    } else {
        md += "| agent | option | rationale |\n| --- | --- | --- |\n";
        for v in a.votes {
            md += &format!(
                "| {} | {} | {} |\n",
                v.agent_id,
                v.option,
                v.rationale
                    .as_deref()
                    .unwrap_or("")
                    .replace('|', "\\|")
                    .replace('\n', " ")
            );
        }
        md += "\n";
    }
    let votes_for = a.count.tally.get(&a.count.chosen).copied().unwrap_or(0);
    md += "## Decision\n\n";
    md += &format!(
        "Chosen: **{}**, with {votes_for} of {} eligible votes ({} cast). Committed because {}.\n",
        a.count.chosen,
        a.eligible.len(),
        a.votes.len(),
        a.closed_because
    );
    if a.count.tie_broken {
        let rule = if a.recommended == Some(a.count.chosen.as_str()) {
            "the proposer's recommended option among the tied"
        } else {
            "the tied option listed first"
        };
        md += &format!("\nThe vote was tied; the orchestrator broke the tie by choosing {rule}.\n");
    }
    md
}

#[cfg(test)]
mod tests;
