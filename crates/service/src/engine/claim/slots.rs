//! Taking the chosen agents' slots: the claim's one guarded increment per
//! agent, and the pure bookkeeping of which chosen tasks keep theirs.

use std::collections::BTreeMap;

use sqlx::PgConnection;
use uuid::Uuid;

use super::Chosen;
use crate::store::agents;

/// What [`take_slots`] kept.
pub(super) struct Taken<'a> {
    /// The chosen tasks whose agents granted a slot, in queue order.
    pub kept: Vec<Chosen<'a>>,
    /// The missions that lost a chosen task (it stays queued).
    pub dropped: Vec<Uuid>,
    /// Whether a task was lost to another claim: its agent was locked by
    /// it, or had no slot left after it. Worth claiming again soon.
    pub contended: bool,
}

/// Takes the chosen agents' slots and keeps the tasks they were granted
/// for, in queue order; the rest stay queued (another replica holds or
/// took the slots since the candidates were read, or the agent went away).
/// Agents another transaction has locked are skipped, never waited for.
pub(super) async fn take_slots<'a>(
    tx: &mut PgConnection,
    chosen: Vec<Chosen<'a>>,
    candidates: &[agents::Candidate],
) -> anyhow::Result<Taken<'a>> {
    if chosen.is_empty() {
        return Ok(Taken {
            kept: chosen,
            dropped: Vec::new(),
            contended: false,
        });
    }
    let wanted = slots_wanted(&chosen);
    let (mut want_ws, mut want_ids) = (Vec::new(), Vec::new());
    for idx in wanted.keys() {
        let c = &candidates[*idx];
        want_ws.push(c.workspace_id);
        want_ids.push(c.profile.agent_id.clone());
    }
    let held = agents::lock_unheld(&mut *tx, &want_ws, &want_ids).await?;
    let (mut slot_ws, mut slot_ids, mut slot_n) = (Vec::new(), Vec::new(), Vec::new());
    for (idx, n) in &wanted {
        let c = &candidates[*idx];
        if held
            .iter()
            .any(|(ws, id)| *ws == c.workspace_id && *id == c.profile.agent_id)
        {
            slot_ws.push(c.workspace_id);
            slot_ids.push(c.profile.agent_id.clone());
            slot_n.push(*n);
        }
    }
    let granted = if slot_ids.is_empty() {
        Vec::new()
    } else {
        agents::take_slots(&mut *tx, &slot_ws, &slot_ids, &slot_n).await?
    };
    let mut left: BTreeMap<usize, i32> = wanted
        .keys()
        .filter_map(|idx| {
            let c = &candidates[*idx];
            granted
                .iter()
                .find(|g| g.workspace_id == c.workspace_id && g.agent_id == c.profile.agent_id)
                .map(|g| (*idx, g.slots))
        })
        .collect();
    let (kept, lost) = keep_granted(chosen, &mut left);
    let mut dropped: Vec<Uuid> = lost.iter().map(|(t, _, _)| t.run_id).collect();
    dropped.sort_unstable();
    dropped.dedup();
    Ok(Taken {
        kept,
        dropped,
        contended: !lost.is_empty(),
    })
}

/// Slots wanted per candidate (index into the candidates), in agent key order.
fn slots_wanted<T, S>(chosen: &[(T, usize, S)]) -> BTreeMap<usize, i32> {
    let mut per_agent: BTreeMap<usize, i32> = BTreeMap::new();
    for (_, idx, _) in chosen {
        *per_agent.entry(*idx).or_default() += 1;
    }
    per_agent
}

/// Splits the chosen tasks into those whose agent still has a granted slot
/// (first come first served, in queue order; `left` counts the slots down)
/// and those that stay queued.
#[allow(clippy::type_complexity)]
fn keep_granted<T, S>(
    chosen: Vec<(T, usize, S)>,
    left: &mut BTreeMap<usize, i32>,
) -> (Vec<(T, usize, S)>, Vec<(T, usize, S)>) {
    chosen
        .into_iter()
        .partition(|(_, idx, _)| match left.get_mut(idx) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_counted_per_agent_and_kept_in_queue_order() {
        // Tasks a..e chose agents 0, 1, 0, 2, 0.
        let chosen = vec![
            ("a", 0, ()),
            ("b", 1, ()),
            ("c", 0, ()),
            ("d", 2, ()),
            ("e", 0, ()),
        ];
        let wanted = slots_wanted(&chosen);
        assert_eq!(wanted, BTreeMap::from([(0, 3), (1, 1), (2, 1)]));
        // Agent 0 had only 2 slots left, agent 2 none (another replica took them).
        let mut left = BTreeMap::from([(0, 2), (1, 1)]);
        let (kept, lost) = keep_granted(chosen, &mut left);
        fn names(v: &[(&'static str, usize, ())]) -> Vec<&'static str> {
            v.iter().map(|t| t.0).collect()
        }
        assert_eq!(names(&kept), ["a", "b", "c"]);
        assert_eq!(names(&lost), ["d", "e"]);
        assert_eq!(left, BTreeMap::from([(0, 0), (1, 0)]));
    }
}
