//! Scope reservations, pure: their states, limits, and when two scopes
//! overlap. The service reserves, releases and expires them
//! (`coordination::reservations`).

use uuid::Uuid;

use crate::domain::text_enum;

/// Default time to live.
pub const DEFAULT_TTL_SECS: i64 = 900;
/// Longest time to live.
pub const MAX_TTL_SECS: i64 = 7 * 24 * 3600;

/// Where a reservation is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReservationState {
    /// Held (until it expires).
    Active,
    /// Given back.
    Released,
    /// Outlived its TTL.
    Expired,
}

text_enum!(ReservationState {
    Active => "active",
    Released => "released",
    Expired => "expired",
});

/// Whether some name matches both patterns.
pub fn scopes_overlap(a: &str, b: &str) -> bool {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // memo[i][j]: can a[i..] and b[j..] match a common string?
    let mut memo = vec![vec![None; b.len() + 1]; a.len() + 1];
    fn go(a: &[char], b: &[char], i: usize, j: usize, memo: &mut Vec<Vec<Option<bool>>>) -> bool {
        if let Some(v) = memo[i][j] {
            return v;
        }
        let v = if i == a.len() && j == b.len() {
            true
        } else if i < a.len() && a[i] == '*' {
            // The star matches nothing, or swallows one more symbol of b.
            go(a, b, i + 1, j, memo) || (j < b.len() && go(a, b, i, j + 1, memo))
        } else if j < b.len() && b[j] == '*' {
            go(a, b, i, j + 1, memo) || (i < a.len() && go(a, b, i + 1, j, memo))
        } else if i < a.len() && j < b.len() {
            (a[i] == b[j] || a[i] == '?' || b[j] == '?') && go(a, b, i + 1, j + 1, memo)
        } else {
            false
        };
        memo[i][j] = Some(v);
        v
    }
    go(&a, &b, 0, 0, &mut memo)
}

/// A reservation request.
#[derive(Debug, Clone)]
pub struct Reserve {
    /// The pattern.
    pub scope: String,
    /// The holder.
    pub agent_id: String,
    /// Seconds to hold it.
    pub ttl_secs: i64,
    /// Linked mission.
    pub mission_id: Option<Uuid>,
    /// Linked task.
    pub task_id: Option<Uuid>,
    /// Why.
    pub note: String,
}
