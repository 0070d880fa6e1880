//! Unit tests of `team_decisions`.

use super::*;

fn opts(labels: &[&str]) -> Vec<TeamOption> {
    labels
        .iter()
        .map(|l| TeamOption {
            label: (*l).into(),
            description: String::new(),
        })
        .collect()
}

fn votes(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, o)| ((*a).into(), (*o).into())).collect()
}

#[test]
fn plurality_wins_without_a_tie_break() {
    let c = count(
        &opts(&["a", "b", "c"]),
        &votes(&[("x", "b"), ("y", "b"), ("z", "a")]),
        Some("a"),
    );
    assert_eq!(c.chosen, "b");
    assert!(!c.tie_broken);
    assert_eq!(c.tally["a"], 1);
    assert_eq!(c.tally["b"], 2);
    assert_eq!(c.tally["c"], 0);
}

#[test]
fn a_tie_goes_to_the_recommendation_if_tied_else_the_first_listed() {
    let o = opts(&["a", "b", "c"]);
    let v = votes(&[("x", "b"), ("y", "c")]);
    let c = count(&o, &v, Some("c"));
    assert_eq!((c.chosen.as_str(), c.tie_broken), ("c", true));
    // The recommendation is not among the tied: first listed of b, c.
    let c = count(&o, &v, Some("a"));
    assert_eq!((c.chosen.as_str(), c.tie_broken), ("b", true));
    let c = count(&o, &v, None);
    assert_eq!(c.chosen, "b");
    // Nobody voted: every option ties at zero.
    let c = count(&o, &[], None);
    assert_eq!((c.chosen.as_str(), c.tie_broken), ("a", true));
    let c = count(&o, &[], Some("c"));
    assert_eq!(c.chosen, "c");
}

#[test]
fn votes_for_unknown_options_do_not_count() {
    let c = count(
        &opts(&["a", "b"]),
        &votes(&[("x", "zzz"), ("y", "b")]),
        None,
    );
    assert_eq!(c.chosen, "b");
    assert_eq!(c.tally.len(), 2);
}

#[test]
fn only_an_open_decision_takes_votes_commits_or_cancels() {
    use TeamDecisionEvent::*;
    use TeamDecisionStatus::*;
    assert_eq!(Open.next(Vote), Ok(Open));
    assert_eq!(Open.next(Commit), Ok(Committed));
    assert_eq!(Open.next(Cancel), Ok(Cancelled));
    for s in [Committed, Cancelled] {
        for e in [Vote, Commit, Cancel] {
            let err = s.next(e).unwrap_err();
            assert_eq!(err.entity, "team_decision");
            assert_eq!(err.from, s.as_str());
        }
    }
}

#[test]
fn the_adr_is_rendered_from_the_record() {
    let options = vec![
        TeamOption {
            label: "postgres".into(),
            description: "one database".into(),
        },
        TeamOption {
            label: "redis".into(),
            description: String::new(),
        },
    ];
    let when = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
    let v = vec![
        VoteRow {
            agent_id: "alice".into(),
            option: "postgres".into(),
            rationale: Some("fewer moving | parts".into()),
            cast_at: when,
        },
        VoteRow {
            agent_id: "bob".into(),
            option: "redis".into(),
            rationale: None,
            cast_at: when,
        },
    ];
    let pairs: Vec<(String, String)> = v
        .iter()
        .map(|v| (v.agent_id.clone(), v.option.clone()))
        .collect();
    let c = count(&options, &pairs, Some("postgres"));
    let id = Uuid::nil();
    let md = render_adr(&AdrInput {
        id,
        topic: "Queue backend",
        mission_id: id,
        task_id: None,
        proposer: "agent:alice",
        options: &options,
        evidence: &["p99 latency 4 ms".into()],
        recommended: Some("postgres"),
        eligible: &["alice".into(), "bob".into(), "carol".into()],
        votes: &v,
        count: &c,
        committed_at: when,
        closed_because: "the voting window closed",
    });
    let expected = "# ADR: Queue backend\n\n\
- Status: accepted\n- Date: 2027-01-15T08:00:00Z\n- Decision: 00000000-0000-0000-0000-000000000000\n\
- Mission: 00000000-0000-0000-0000-000000000000\n- Proposed by: agent:alice\n\
- Deciders: alice, bob, carol\n\n\
## Context\n\n- p99 latency 4 ms\n\n\
## Options considered\n\n\
1. **postgres**: one database (recommended by the proposer): 1 vote\n\
2. **redis**: 1 vote\n\n\
## Votes\n\n| agent | option | rationale |\n| --- | --- | --- |\n\
| alice | postgres | fewer moving \\| parts |\n| bob | redis |  |\n\n\
## Decision\n\n\
Chosen: **postgres**, with 1 of 3 eligible votes (2 cast). Committed because the voting window closed.\n\n\
The vote was tied; the orchestrator broke the tie by choosing the proposer's recommended option among the tied.\n";
    assert_eq!(md, expected);
}
