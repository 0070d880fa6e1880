//! The human workforce's pure rules (seed §12): the work-package lifecycle,
//! contractor availability and quality ratings, the trust formula and
//! auto-matching. The use cases that apply them are in the service's
//! `coordination::workforce`.
//!
//! Package lifecycle: `draft → open → assigned → in_progress → review →
//! completed`, with `review → in_progress` for rework, and any status that is
//! not terminal → `cancelled`.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{domain::text_enum, invalid::Invalid};

/// Where a work package is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PackageStatus {
    /// Being defined; not yet available.
    Draft,
    /// Available for assignment; auto-matching ran.
    Open,
    /// A contractor was selected; awaiting start.
    Assigned,
    /// Being worked on.
    InProgress,
    /// Submitted for quality review.
    Review,
    /// Accepted; trust updated. Terminal.
    Completed,
    /// Dropped. Terminal.
    Cancelled,
}

text_enum!(PackageStatus {
    Draft => "draft",
    Open => "open",
    Assigned => "assigned",
    InProgress => "in_progress",
    Review => "review",
    Completed => "completed",
    Cancelled => "cancelled",
});

/// A package transition the lifecycle does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a work package cannot go from {from} to {to}")]
pub struct IllegalPackageTransition {
    /// The status it was in.
    pub from: PackageStatus,
    /// The status asked for.
    pub to: PackageStatus,
}

impl PackageStatus {
    /// True once nothing can change any more.
    pub fn is_terminal(self) -> bool {
        matches!(self, PackageStatus::Completed | PackageStatus::Cancelled)
    }

    /// Checks the move to `to`.
    pub fn next(self, to: PackageStatus) -> Result<PackageStatus, IllegalPackageTransition> {
        use PackageStatus as S;
        let ok = match (self, to) {
            (S::Draft, S::Open)
            | (S::Open, S::Assigned)
            | (S::Assigned, S::InProgress)
            | (S::InProgress, S::Review)
            | (S::Review, S::Completed)
            // A reviewer sends the work back.
            | (S::Review, S::InProgress) => true,
            (s, S::Cancelled) => !s.is_terminal(),
            _ => false,
        };
        if ok {
            Ok(to)
        } else {
            Err(IllegalPackageTransition { from: self, to })
        }
    }
}

/// A contractor's availability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Availability {
    /// Full time.
    FullTime,
    /// Part time.
    PartTime,
    /// Called in when needed.
    OnCall,
    /// Not taking work: never matched or assigned.
    Unavailable,
}

text_enum!(Availability {
    FullTime => "full-time",
    PartTime => "part-time",
    OnCall => "on-call",
    Unavailable => "unavailable",
});

/// How well a completed package was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QualityRating {
    /// Above expectations.
    Excellent,
    /// Good.
    Good,
    /// Meets expectations.
    Satisfactory,
    /// No evidence either way: trust unchanged.
    Neutral,
    /// Below expectations.
    Unsatisfactory,
    /// Far below expectations.
    Poor,
}

text_enum!(QualityRating {
    Excellent => "excellent",
    Good => "good",
    Satisfactory => "satisfactory",
    Neutral => "neutral",
    Unsatisfactory => "unsatisfactory",
    Poor => "poor",
});

impl QualityRating {
    /// The seed's quality adjustment: +1 satisfactory or above, −1 below, 0 neutral.
    pub fn adjustment(self) -> i8 {
        match self {
            QualityRating::Excellent | QualityRating::Good | QualityRating::Satisfactory => 1,
            QualityRating::Neutral => 0,
            QualityRating::Unsatisfactory | QualityRating::Poor => -1,
        }
    }
}

/// Trust of a newcomer.
pub const INITIAL_TRUST: f64 = 0.5;
/// Trust step per rating.
pub const TRUST_STEP: f64 = 0.1;
/// Lowest trust auto-matching proposes.
pub const MATCH_MIN_TRUST: f64 = 0.5;

/// `current + adjustment × 0.1`, clamped to [0, 1] and rounded to 1e-9 so
/// repeated steps stay exact (0.5 + 0.1 + 0.1 is 0.7, not 0.7000000000000001).
pub fn updated_trust(current: f64, rating: QualityRating) -> f64 {
    let raw = current + f64::from(rating.adjustment()) * TRUST_STEP;
    (raw.clamp(0.0, 1.0) * 1e9).round() / 1e9
}

/// What matching needs to know of a contractor.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Id.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// Skills (normalised).
    pub skills: Vec<String>,
    /// Trust.
    pub trust: f64,
    /// Availability as stored.
    pub availability: String,
}

/// A proposed contractor for a package.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Candidate {
    /// The contractor.
    pub contractor_id: Uuid,
    /// Their name.
    pub name: String,
    /// Share of the required skills they have, (0, 1].
    pub skill_overlap: f64,
    /// Their trust.
    pub trust_score: f64,
    /// `skill_overlap × trust_score`.
    pub score: f64,
}

/// The seed's auto-matching: every contractor with some of the required
/// skills, trust ≥ 0.5 and not `unavailable`, scored `overlap × trust`,
/// best first (ties by contractor id). No required skills: no candidates.
pub fn match_candidates(required: &[String], pool: &[Profile]) -> Vec<Candidate> {
    let needed: std::collections::BTreeSet<&str> = required.iter().map(String::as_str).collect();
    if needed.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<Candidate> = pool
        .iter()
        .filter(|c| {
            c.trust >= MATCH_MIN_TRUST && c.availability != Availability::Unavailable.as_str()
        })
        .filter_map(|c| {
            let have = c
                .skills
                .iter()
                .map(String::as_str)
                .filter(|s| needed.contains(s))
                .collect::<std::collections::BTreeSet<_>>()
                .len();
            let overlap = have as f64 / needed.len() as f64;
            (overlap > 0.0).then(|| Candidate {
                contractor_id: c.id,
                name: c.name.clone(),
                skill_overlap: round9(overlap),
                trust_score: c.trust,
                score: round9(overlap * c.trust),
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.contractor_id.cmp(&b.contractor_id))
    });
    out
}

fn round9(x: f64) -> f64 {
    (x * 1e9).round() / 1e9
}

/// Most characters of one skill name.
pub const MAX_SKILL_CHARS: usize = 64;
/// Most skill names in one list.
pub const MAX_SKILLS: usize = 100;

/// Trims, lower-cases and de-duplicates skill names; refuses bad ones.
pub fn normalise_skills(field: &str, skills: &[String]) -> Result<Vec<String>, Invalid> {
    if skills.len() > MAX_SKILLS {
        return Err(Invalid::new(field, format!("at most {MAX_SKILLS} {field}")));
    }
    let mut out: Vec<String> = Vec::with_capacity(skills.len());
    for s in skills {
        let s = s.trim().to_lowercase();
        if s.is_empty() || s.chars().count() > MAX_SKILL_CHARS {
            return Err(Invalid::new(
                field,
                format!("each of {field} must be 1–{MAX_SKILL_CHARS} characters"),
            ));
        }
        if !out.contains(&s) {
            out.push(s);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(n: u128, skills: &[&str], trust: f64, availability: &str) -> Profile {
        Profile {
            id: Uuid::from_u128(n),
            name: format!("c{n}"),
            skills: skills.iter().map(|s| s.to_string()).collect(),
            trust,
            availability: availability.into(),
        }
    }

    fn skills(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn lifecycle_follows_the_seed() {
        use PackageStatus as S;
        let path = [
            S::Draft,
            S::Open,
            S::Assigned,
            S::InProgress,
            S::Review,
            S::Completed,
        ];
        for w in path.windows(2) {
            assert_eq!(w[0].next(w[1]), Ok(w[1]));
        }
        assert_eq!(S::Review.next(S::InProgress), Ok(S::InProgress));
        for s in S::ALL {
            assert_eq!(s.next(S::Cancelled).is_ok(), !s.is_terminal(), "{s}");
        }
        for (from, to) in [
            (S::Draft, S::Completed),
            (S::Draft, S::Assigned),
            (S::Open, S::InProgress),
            (S::Completed, S::Open),
            (S::Cancelled, S::Open),
            (S::InProgress, S::Completed),
            (S::Open, S::Open),
            (S::Assigned, S::Draft),
        ] {
            assert_eq!(from.next(to), Err(IllegalPackageTransition { from, to }));
        }
    }

    #[test]
    fn trust_moves_by_a_tenth_and_is_clamped() {
        use QualityRating as Q;
        assert_eq!(updated_trust(0.5, Q::Satisfactory), 0.6);
        assert_eq!(
            updated_trust(updated_trust(0.5, Q::Good), Q::Excellent),
            0.7
        );
        assert_eq!(updated_trust(0.5, Q::Neutral), 0.5);
        assert_eq!(updated_trust(0.5, Q::Unsatisfactory), 0.4);
        assert_eq!(updated_trust(0.95, Q::Good), 1.0);
        assert_eq!(updated_trust(1.0, Q::Excellent), 1.0);
        assert_eq!(updated_trust(0.05, Q::Poor), 0.0);
        assert_eq!(updated_trust(0.0, Q::Poor), 0.0);
        // Many steps do not drift.
        let mut t = INITIAL_TRUST;
        for _ in 0..3 {
            t = updated_trust(t, Q::Poor);
        }
        assert_eq!(t, 0.2);
    }

    #[test]
    fn matching_scores_overlap_times_trust_and_excludes() {
        let pool = vec![
            profile(1, &["react", "typescript"], 0.5, "full-time"), // 2/3 × 0.5
            profile(2, &["react"], 0.9, "part-time"),               // 1/3 × 0.9
            profile(3, &["react", "typescript", "d3"], 0.4, "full-time"), // low trust
            profile(4, &["react", "typescript", "d3"], 0.9, "unavailable"),
            profile(5, &["cooking"], 1.0, "full-time"), // no overlap
            profile(6, &["typescript", "d3"], 0.5, "on-call"), // ties with 1
        ];
        let got = match_candidates(&skills(&["react", "typescript", "d3"]), &pool);
        let ids: Vec<u128> = got.iter().map(|c| c.contractor_id.as_u128()).collect();
        assert_eq!(ids, [1, 6, 2]);
        assert!((got[0].skill_overlap - 0.666666667).abs() < 1e-9);
        assert!((got[0].score - 0.333333333).abs() < 1e-9);
        assert!((got[2].score - 0.3).abs() < 1e-9);
        assert!(match_candidates(&[], &pool).is_empty());
    }

    #[test]
    fn skills_are_normalised() {
        assert_eq!(
            normalise_skills("s", &skills(&[" React", "react", "TS"])).unwrap(),
            ["react", "ts"]
        );
        assert!(normalise_skills("s", &skills(&[" "])).is_err());
    }

    #[test]
    fn ratings_adjust_as_the_seed_says() {
        assert_eq!(QualityRating::Satisfactory.adjustment(), 1);
        assert_eq!(QualityRating::Neutral.adjustment(), 0);
        assert_eq!(QualityRating::Unsatisfactory.adjustment(), -1);
    }
}
