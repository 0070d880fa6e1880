use super::*;
use serde_json::json;

const REQ: Uuid = Uuid::from_u128(7);
const MISSION: Uuid = Uuid::from_u128(1);
const TASK: Uuid = Uuid::from_u128(2);

fn msg(p: Performative, from: &str, to: &str) -> Outgoing {
    Outgoing {
        id: None,
        from_agent: Some(from.into()),
        sender: format!("agent:{from}"),
        to: Recipient::parse(to).unwrap(),
        performative: p,
        category: None,
        conversation_id: None,
        reply_to: None,
        mission_id: None,
        task_id: None,
        subject: "Write the summary".into(),
        content: json!({}),
    }
}

fn item(kind: ItemKind, status: ItemStatus) -> WorkItem {
    WorkItem {
        id: REQ,
        kind,
        requester: "agent:alice".into(),
        recipient: "bob".into(),
        status,
        mission_id: Some(MISSION),
        task_id: Some(TASK),
        subject: "Write the summary".into(),
        content: json!({"description": "two paragraphs", "required_skills": ["writing"]}),
    }
}

fn close(status: ItemStatus) -> Effect {
    Effect::Close { id: REQ, status }
}

#[test]
fn both_spellings_of_the_contract_net_answers_parse() {
    assert_eq!("ACCEPT_PROPOSAL".parse(), Ok(Performative::Accept));
    assert_eq!("REJECT_PROPOSAL".parse(), Ok(Performative::Reject));
    assert_eq!("ACCEPT".parse(), Ok(Performative::Accept));
    assert_eq!(Performative::Accept.as_str(), "ACCEPT");
    for p in Performative::ALL {
        assert_eq!(p.as_str().parse(), Ok(*p));
    }
    assert!("SHOUT".parse::<Performative>().is_err());
    let p: Performative = serde_json::from_value(json!("REJECT_PROPOSAL")).unwrap();
    assert_eq!(p, Performative::Reject);
}

#[test]
fn inform_revises_the_recipients_belief() {
    let mut m = msg(Performative::Inform, "alice", "bob");
    m.content = json!({"subject": "market", "content": "growing", "certainty": 0.9});
    assert_eq!(
        effects(&m, None),
        Ok(vec![Effect::ReviseBelief(InformedBelief {
            category: crate::bdi::BeliefCategory::Environment,
            subject: "market".into(),
            content: "growing".into(),
            certainty: 0.9,
        })])
    );
    // A JSON value is kept as its text; certainty defaults to 1.
    m.content = json!({"subject": "price", "value": {"eur": 3}, "category": "case"});
    let Ok(e) = effects(&m, None) else { panic!() };
    assert!(matches!(&e[0], Effect::ReviseBelief(b)
        if b.content == r#"{"eur":3}"# && b.certainty == 1.0
            && b.category == crate::bdi::BeliefCategory::Case));
    // No subject: a plain message.
    m.content = json!({"text": "hello"});
    assert_eq!(effects(&m, None), Ok(vec![]));
    for bad in [
        json!({"subject": "x"}),
        json!({"subject": "", "content": "y"}),
        json!({"subject": "x", "content": "y", "certainty": 1.5}),
        json!({"subject": "x", "content": "y", "category": "gossip"}),
    ] {
        m.content = bad.clone();
        assert!(
            matches!(effects(&m, None), Err(ProtocolError::Invalid(_))),
            "{bad}"
        );
    }
}

#[test]
fn a_corroborating_inform_never_lowers_certainty() {
    assert_eq!(
        informed_certainty(Some(("Growing ", 0.9)), "growing", 0.3),
        0.9
    );
    assert_eq!(
        informed_certainty(Some(("growing", 0.3)), "growing", 0.9),
        0.9
    );
    // Contradicting content is the BDI revision rule's to judge.
    assert_eq!(
        informed_certainty(Some(("shrinking", 0.9)), "growing", 0.3),
        0.3
    );
    assert_eq!(informed_certainty(None, "growing", 0.3), 0.3);
}

#[test]
fn request_and_query_open_items_when_addressed_to_one_agent() {
    let m = msg(Performative::Request, "alice", "bob");
    assert_eq!(effects(&m, None), Ok(vec![Effect::Open(ItemKind::Request)]));
    let m = msg(Performative::Request, "alice", "role:qa");
    assert_eq!(effects(&m, None), Ok(vec![]));
    let m = msg(Performative::Query, "alice", "bob");
    assert_eq!(effects(&m, None), Ok(vec![Effect::Open(ItemKind::Query)]));
    let mut m = msg(Performative::Request, "alice", "bob");
    m.content = json!({"task": {"title": 3}});
    assert!(
        matches!(effects(&m, None), Err(ProtocolError::Invalid(i)) if i.field == "content.task")
    );
}

#[test]
fn agree_within_a_mission_adds_the_work_as_a_task() {
    let m = msg(Performative::Agree, "bob", "alice");
    let open = item(ItemKind::Request, ItemStatus::Open);
    let e = effects(&m, Some(&open)).unwrap();
    assert_eq!(e[0], close(ItemStatus::Agreed));
    let Effect::AddTask {
        request_id,
        mission_id,
        anchor_task,
        task,
    } = &e[1]
    else {
        panic!("{e:?}")
    };
    assert_eq!(
        (*request_id, *mission_id, *anchor_task),
        (REQ, MISSION, TASK)
    );
    assert_eq!(task.title, "Write the summary");
    assert_eq!(task.id, "req-00000000");
    assert_eq!(task.required_skills, vec!["writing".to_owned()]);
    assert!(task.success_criteria.iter().any(|c| c.must_pass));
    // Outside a mission (or without a task to anchor to) it is agreed only.
    let loose = WorkItem {
        task_id: None,
        ..open.clone()
    };
    assert_eq!(
        effects(&m, Some(&loose)),
        Ok(vec![close(ItemStatus::Agreed)])
    );
}

#[test]
fn agree_and_refuse_answer_an_open_request_addressed_to_the_replier() {
    let open = item(ItemKind::Request, ItemStatus::Open);
    let refuse = msg(Performative::Refuse, "bob", "alice");
    assert_eq!(
        effects(&refuse, Some(&open)),
        Ok(vec![close(ItemStatus::Refused)])
    );
    let by_carol = msg(Performative::Agree, "carol", "alice");
    assert!(matches!(
        effects(&by_carol, Some(&open)),
        Err(ProtocolError::NotAddressee { .. })
    ));
    assert!(
        matches!(effects(&refuse, None), Err(ProtocolError::Invalid(i)) if i.field == "reply_to")
    );
    let query = item(ItemKind::Query, ItemStatus::Open);
    assert!(matches!(
        effects(&refuse, Some(&query)),
        Err(ProtocolError::Invalid(_))
    ));
    let agreed = item(ItemKind::Request, ItemStatus::Agreed);
    assert!(matches!(
        effects(&refuse, Some(&agreed)),
        Err(ProtocolError::WrongState {
            status: ItemStatus::Agreed,
            ..
        })
    ));
}

#[test]
fn cancel_withdraws_an_open_request_by_the_requester_only() {
    let open = item(ItemKind::Request, ItemStatus::Open);
    let cancel = msg(Performative::Cancel, "alice", "bob");
    assert_eq!(
        effects(&cancel, Some(&open)),
        Ok(vec![close(ItemStatus::Cancelled)])
    );
    let by_bob = msg(Performative::Cancel, "bob", "alice");
    assert!(matches!(
        effects(&by_bob, Some(&open)),
        Err(ProtocolError::NotRequester { .. })
    ));
    let refused = item(ItemKind::Request, ItemStatus::Refused);
    assert!(matches!(
        effects(&cancel, Some(&refused)),
        Err(ProtocolError::WrongState { .. })
    ));
    // A CANCEL naming no request is a plain message.
    assert_eq!(effects(&cancel, None), Ok(vec![]));
}

#[test]
fn a_query_expects_an_inform_or_a_failure() {
    let query = item(ItemKind::Query, ItemStatus::Open);
    let inform = msg(Performative::Inform, "bob", "alice");
    assert_eq!(
        effects(&inform, Some(&query)),
        Ok(vec![close(ItemStatus::Answered)])
    );
    let failure = msg(Performative::Failure, "bob", "alice");
    assert_eq!(
        effects(&failure, Some(&query)),
        Ok(vec![close(ItemStatus::Failed)])
    );
    // An INFORM by someone else is a reply, not the answer.
    let other = msg(Performative::Inform, "carol", "alice");
    assert_eq!(effects(&other, Some(&query)), Ok(vec![]));
    let by_carol = msg(Performative::Failure, "carol", "alice");
    assert!(matches!(
        effects(&by_carol, Some(&query)),
        Err(ProtocolError::NotAddressee { .. })
    ));
    assert!(matches!(
        effects(&failure, None),
        Err(ProtocolError::Invalid(_))
    ));
}

#[test]
fn an_agreed_request_ends_done_or_failed() {
    let agreed = item(ItemKind::Request, ItemStatus::Agreed);
    let inform = msg(Performative::Inform, "bob", "alice");
    assert_eq!(
        effects(&inform, Some(&agreed)),
        Ok(vec![close(ItemStatus::Done)])
    );
    let failure = msg(Performative::Failure, "bob", "alice");
    assert_eq!(
        effects(&failure, Some(&agreed)),
        Ok(vec![close(ItemStatus::Failed)])
    );
    let open = item(ItemKind::Request, ItemStatus::Open);
    assert!(matches!(
        effects(&failure, Some(&open)),
        Err(ProtocolError::WrongState { .. })
    ));
}

#[test]
fn contract_net_messages_have_no_effect_here() {
    for p in [
        Performative::Propose,
        Performative::Accept,
        Performative::Reject,
        Performative::Confirm,
    ] {
        assert_eq!(effects(&msg(p, "alice", "bob"), None), Ok(vec![]));
    }
}

#[test]
fn a_request_names_its_task_or_is_made_one() {
    let spec = requested_task(
        REQ,
        "",
        &json!({"task": {"id": "fix", "title": "Fix it", "task_type": "coding"}}),
    )
    .unwrap();
    assert_eq!(
        (spec.id.as_str(), spec.task_type.as_str()),
        ("fix", "coding")
    );
    let spec = requested_task(REQ, "", &json!({})).unwrap();
    assert_eq!(
        (spec.title.as_str(), spec.task_type.as_str()),
        ("Requested work", "request")
    );
    assert!(requested_task(REQ, "x", &json!({"task": "do it"})).is_err());
    assert!(requested_task(REQ, "x", &json!({"required_skills": "writing"})).is_err());
}
