use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn priority_formula_matches_hand_computed_values() {
    // 0.8·0.30 + 0.6·0.25 + 0.4·0.25 + 1.0·0.15 + 0.5·0.05
    // = 0.24 + 0.15 + 0.10 + 0.15 + 0.025 = 0.665
    let p = PriorityInputs {
        base_priority: 0.8,
        importance: 0.6,
        urgency: 0.4,
        strategic_alignment: 1.0,
        dependency_status: 0.5,
    };
    assert!(close(desire_priority(&p), 0.665));
    let ones = PriorityInputs {
        base_priority: 1.0,
        importance: 1.0,
        urgency: 1.0,
        strategic_alignment: 1.0,
        dependency_status: 1.0,
    };
    assert!(close(desire_priority(&ones), 1.0));
    // Each weight alone.
    let only = |i: usize| {
        let mut v = [0.0; 5];
        v[i] = 1.0;
        desire_priority(&PriorityInputs {
            base_priority: v[0],
            importance: v[1],
            urgency: v[2],
            strategic_alignment: v[3],
            dependency_status: v[4],
        })
    };
    for (i, w) in [0.30, 0.25, 0.25, 0.15, 0.05].into_iter().enumerate() {
        assert!(close(only(i), w), "weight {i}");
    }
    let bad = PriorityInputs {
        urgency: 1.4,
        ..ones
    };
    assert_eq!(bad.invalid_component(), Some(("urgency", 1.4)));
    assert!(ones.invalid_component().is_none());
    assert!(!unit_interval(f64::NAN));
}

#[test]
fn belief_revision_rule() {
    assert_eq!(revise_belief(None, "x", 0.5), BeliefOutcome::Created);
    assert_eq!(
        revise_belief(Some(("Growth is 15%", 0.6)), "growth  is 15%", 0.9),
        BeliefOutcome::Corroborated
    );
    assert_eq!(
        revise_belief(Some(("growing", 0.6)), "contracting", 0.8),
        BeliefOutcome::Revised
    );
    assert_eq!(
        revise_belief(Some(("growing", 0.8)), "contracting", 0.6),
        BeliefOutcome::Rejected
    );
    assert_eq!(
        revise_belief(Some(("growing", 0.7)), "contracting", 0.7),
        BeliefOutcome::Conflict
    );
}

#[test]
fn a_corroboration_never_lowers_certainty() {
    let held = |certainty, conflict| HeldBelief {
        content: "Growth is 15%",
        certainty,
        conflict,
    };
    // The case: a 0.9 belief corroborated at 0.3 stays at 0.9.
    let r = revise(Some(held(0.9, false)), "growth is 15%", 0.3);
    assert_eq!(r.outcome, BeliefOutcome::Corroborated);
    assert!(close(r.belief.certainty, 0.9));
    assert_eq!(r.belief.content, "Growth is 15%", "the held wording stays");
    // A stronger corroboration raises it.
    let r = revise(Some(held(0.6, false)), "Growth is 15%", 0.95);
    assert!(close(r.belief.certainty, 0.95));
    // Equal: unchanged.
    let r = revise(Some(held(0.7, false)), "Growth is 15%", 0.7);
    assert!(close(r.belief.certainty, 0.7));
    // A flagged tie is settled only by a corroboration above it.
    assert!(
        !revise(Some(held(0.7, true)), "Growth is 15%", 0.8)
            .belief
            .conflict
    );
    assert!(
        revise(Some(held(0.7, true)), "Growth is 15%", 0.5)
            .belief
            .conflict
    );
    assert!(
        revise(Some(held(0.7, true)), "Growth is 15%", 0.7)
            .belief
            .conflict
    );
}

#[test]
fn revision_keeps_or_replaces_what_the_rule_says() {
    let held = HeldBelief {
        content: "growing",
        certainty: 0.7,
        conflict: false,
    };
    let r = revise(None, "growing", 0.4);
    assert_eq!(r.outcome, BeliefOutcome::Created);
    assert!(close(r.belief.certainty, 0.4));
    let r = revise(Some(held), "contracting", 0.8);
    assert_eq!(r.outcome, BeliefOutcome::Revised);
    assert_eq!(r.belief.content, "contracting");
    assert!(close(r.belief.certainty, 0.8) && !r.belief.conflict);
    let r = revise(Some(held), "contracting", 0.2);
    assert_eq!(r.outcome, BeliefOutcome::Rejected);
    assert_eq!(r.belief, held, "a weaker contradiction lowers nothing");
    let r = revise(Some(held), "contracting", 0.7);
    assert_eq!(r.outcome, BeliefOutcome::Conflict);
    assert_eq!(r.belief.content, "growing");
    assert!(r.belief.conflict && close(r.belief.certainty, 0.7));
}

#[test]
fn belief_conflicts_need_same_subject_both_above_point_seven_and_contradiction() {
    let id = |n: u128| Uuid::from_u128(n);
    let b = |n, s: &str, c: &str, k| BeliefFact {
        id: id(n),
        subject: s.into(),
        content: c.into(),
        certainty: k,
    };
    let beliefs = vec![
        b(1, "market", "growing 15% YoY", 0.8),
        b(2, "market", "contracting", 0.75),
        b(3, "market", "flat", 0.7),            // exactly 0.7: not > 0.7
        b(4, "market", "Growing 15% yoy", 0.9), // same as 1
        b(5, "churn", "low", 0.95),
        b(6, "pricing", "high", 0.9),
    ];
    let pairs: Vec<(u128, u128)> = belief_conflicts(&beliefs)
        .into_iter()
        .map(|(a, b)| (a.id.as_u128(), b.id.as_u128()))
        .collect();
    assert_eq!(pairs, vec![(1, 2), (2, 4)]);
}

#[test]
fn desire_conflict_detection() {
    let id = |n: u128| Uuid::from_u128(n);
    let new = DesireProfile {
        id: id(9),
        resources: vec!["Budget".into(), "cto".into()],
        strategy: Some("expand".into()),
        incompatible_with: vec![id(3)],
    };
    let existing = vec![
        DesireProfile {
            id: id(1),
            resources: vec!["budget ".into()],
            strategy: Some("Expand".into()),
            ..Default::default()
        },
        DesireProfile {
            id: id(2),
            resources: vec!["office".into()],
            strategy: Some("consolidate".into()),
            ..Default::default()
        },
        DesireProfile {
            id: id(3),
            ..Default::default()
        },
        DesireProfile {
            id: id(4),
            incompatible_with: vec![id(9)],
            ..Default::default()
        },
        DesireProfile {
            id: id(5),
            ..Default::default()
        },
    ];
    let got: Vec<(u128, ConflictKind)> = desire_conflicts(&new, &existing)
        .into_iter()
        .map(|c| (c.desire_id.as_u128(), c.kind))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, ConflictKind::Resource),
            (2, ConflictKind::Strategy),
            (3, ConflictKind::Goal),
            (4, ConflictKind::Goal),
        ]
    );
}

#[test]
fn drop_cascades_to_instrumental_desires_serving_only_dropped_ones() {
    let id = |n: u128| Uuid::from_u128(n);
    let d = |n, kind, active, serves: &[u128]| DesireLink {
        id: id(n),
        kind,
        active,
        serves: serves.iter().map(|s| id(*s)).collect(),
    };
    use DesireKind::{Instrumental as I, Terminal as T};
    let desires = vec![
        d(1, T, true, &[]),
        d(2, T, true, &[]),
        d(3, I, true, &[1]),    // only 1: cascaded
        d(4, I, true, &[1, 2]), // also serves 2: affected, kept
        d(5, I, true, &[3]),    // serves 3 which cascades: cascaded
        d(6, I, true, &[1, 7]), // 7 already dropped: cascaded
        d(7, T, false, &[]),
        d(8, I, false, &[1]), // already dropped: untouched
    ];
    let plan = drop_cascade(id(1), &desires);
    let n = |v: &[Uuid]| {
        let mut v: Vec<u128> = v.iter().map(|u| u.as_u128()).collect();
        v.sort();
        v
    };
    assert_eq!(n(&plan.affected), vec![3, 4, 5, 6]);
    assert_eq!(n(&plan.cascaded), vec![3, 5, 6]);
    // Dropping an instrumental one alone cascades nothing above it.
    assert!(drop_cascade(id(4), &desires).cascaded.is_empty());
}

#[test]
fn goal_tiers_and_lifecycle() {
    use GoalTier::*;
    assert!(tier_fits_parent(Tactical, Strategic));
    assert!(tier_fits_parent(Operational, Operational));
    assert!(!tier_fits_parent(Strategic, Tactical));
    assert!(goal_next(GoalStatus::Active, GoalStatus::Achieved).is_ok());
    assert!(goal_next(GoalStatus::Active, GoalStatus::Abandoned).is_ok());
    for from in [GoalStatus::Achieved, GoalStatus::Abandoned] {
        for to in GoalStatus::ALL {
            assert!(goal_next(from, *to).is_err(), "{from} → {to}");
        }
    }
    assert!(goal_next(GoalStatus::Active, GoalStatus::Active).is_err());
}

#[test]
fn intention_lifecycle_illegal_transitions() {
    use IntentionStatus::*;
    let legal = [
        (Active, Suspended),
        (Active, Dropped),
        (Active, Achieved),
        (Suspended, Active),
        (Suspended, Dropped),
    ];
    for from in IntentionStatus::ALL {
        for to in IntentionStatus::ALL {
            assert_eq!(
                intention_next(*from, *to).is_ok(),
                legal.contains(&(*from, *to)),
                "{from} → {to}"
            );
        }
    }
}

fn inputs(strategy: CommitmentStrategy) -> ReconsiderInputs {
    ReconsiderInputs {
        strategy,
        priority: 0.5,
        days_since_progress: 0.0,
        best_competing_priority: None,
        impossible: false,
        blocked: false,
    }
}

#[test]
fn reconsideration_thresholds() {
    use CommitmentStrategy::*;
    use Verdict::*;
    let v = |i: ReconsiderInputs| reconsider(&i).0;
    // Priority factor: open-minded 1.3 → threshold 0.65; cautious 1.1 → 0.55.
    let compete = |s, p| ReconsiderInputs {
        best_competing_priority: Some(p),
        ..inputs(s)
    };
    assert_eq!(v(compete(OpenMinded, 0.65)), Keep); // not strictly greater
    assert_eq!(v(compete(OpenMinded, 0.66)), Drop);
    assert_eq!(v(compete(Cautious, 0.55)), Keep);
    assert_eq!(v(compete(Cautious, 0.56)), Drop);
    assert_eq!(v(compete(SingleMinded, 1.0)), Keep);
    // Stall days: open-minded 7, cautious 3.
    let stalled = |s, d| ReconsiderInputs {
        days_since_progress: d,
        ..inputs(s)
    };
    assert_eq!(v(stalled(OpenMinded, 7.0)), Keep);
    assert_eq!(v(stalled(OpenMinded, 7.1)), Suspend);
    assert_eq!(v(stalled(Cautious, 3.0)), Keep);
    assert_eq!(v(stalled(Cautious, 3.1)), Suspend);
    assert_eq!(v(stalled(SingleMinded, 400.0)), Keep);
    // Impossible drops under every strategy; blocked suspends.
    for s in CommitmentStrategy::ALL {
        let i = ReconsiderInputs {
            impossible: true,
            ..inputs(*s)
        };
        assert_eq!(v(i), Drop);
    }
    let blocked = ReconsiderInputs {
        blocked: true,
        ..inputs(OpenMinded)
    };
    assert_eq!(v(blocked), Suspend);
    assert!(is_stale(Cautious, 3.5) && !is_stale(OpenMinded, 3.5));
    assert!(!is_stale(SingleMinded, 1e6));
}

#[test]
fn missions_map_autonomy_to_strategy_and_consult_it() {
    use CommitmentStrategy::*;
    assert_eq!(
        CommitmentStrategy::for_mission(Autonomy::Approve, None),
        Cautious
    );
    assert_eq!(
        CommitmentStrategy::for_mission(Autonomy::Autonomous, None),
        OpenMinded
    );
    assert_eq!(
        CommitmentStrategy::for_mission(Autonomy::Autonomous, Some(SingleMinded)),
        SingleMinded
    );
    assert!(!mission_reconsiders(
        SingleMinded,
        MissionTrigger::BudgetWarning
    ));
    assert!(mission_reconsiders(
        SingleMinded,
        MissionTrigger::TaskFailedAfterEscalations
    ));
    // People outrank commitment: their rejections and instructions too.
    assert!(mission_reconsiders(
        SingleMinded,
        MissionTrigger::GovernanceRejected
    ));
    assert!(mission_reconsiders(
        SingleMinded,
        MissionTrigger::Instructions
    ));
    for s in [OpenMinded, Cautious] {
        for t in MissionTrigger::ALL {
            assert!(mission_reconsiders(s, *t));
        }
    }
}
