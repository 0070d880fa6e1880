//! Timer start events: which processes a clock starts, and when. The
//! service keeps one schedule row per timer start event of a workflow's
//! latest version and starts an instance each time one falls due.

use time::OffsetDateTime;

use super::timer::{self, TimerKind, TimerSpec};
use crate::model::{Definitions, NodeKind, Trigger};

/// A top-level timer start event whose definition reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerStart {
    /// The process it starts.
    pub process_id: String,
    /// The start event.
    pub start_event: String,
    /// Which timer element holds the definition.
    pub kind: TimerKind,
    /// The definition as written, trimmed (a schedule kept across versions
    /// is kept only while this stays the same).
    pub text: String,
    /// The parsed definition.
    pub spec: TimerSpec,
}

/// Every top-level timer start event of every process of `defs` whose
/// definition is literal ISO 8601 text (an empty or expression timer
/// cannot be scheduled; validation names it).
pub fn timer_starts(defs: &Definitions) -> Vec<TimerStart> {
    let mut out = Vec::new();
    for p in &defs.processes {
        for n in &p.nodes {
            let NodeKind::StartEvent {
                trigger: Trigger::Timer { timer: def, .. },
                ..
            } = &n.kind
            else {
                continue;
            };
            let Some((kind, text)) = timer::definition_text(def) else {
                continue;
            };
            if let Ok(spec) = timer::parse(kind, text) {
                out.push(TimerStart {
                    process_id: p.id.clone(),
                    start_event: n.id.clone(),
                    kind,
                    text: text.trim().to_owned(),
                    spec,
                });
            }
        }
    }
    out
}

impl TimerSpec {
    /// After firing the occurrence due at `due` (the `fired`-th), the next
    /// occurrence after `now` and the count of occurrences then spent:
    /// occurrences missed while nobody ran (the service down) are coalesced
    /// into the one that fired, and count against a bounded cycle. `None`
    /// when the timer is done.
    pub fn next_after(
        &self,
        due: OffsetDateTime,
        fired: u32,
        now: OffsetDateTime,
    ) -> Option<(OffsetDateTime, u32)> {
        let (mut next, mut spent) = (self.next_due(due, fired)?, fired);
        // Bounded: a cycle of one second missed for a year stops here too.
        for _ in 0..100_000 {
            if next > now {
                return Some((next, spent));
            }
            spent += 1;
            next = self.next_due(next, spent)?;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;
    use crate::import;

    fn starts(body: &str) -> Vec<TimerStart> {
        let xml = format!(
            r#"<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="t">{body}</definitions>"#
        );
        timer_starts(&import(xml.as_bytes()).expect("imports"))
    }

    #[test]
    fn literal_timer_starts_are_scheduled_and_the_others_are_not() {
        let got = starts(
            r#"<process id="p"><startEvent id="every"><timerEventDefinition><timeCycle> R3/PT10S </timeCycle></timerEventDefinition></startEvent>
               <startEvent id="plain"/>
               <startEvent id="expr"><timerEventDefinition><timeDuration>${wait}</timeDuration></timerEventDefinition></startEvent>
               <startEvent id="empty"><timerEventDefinition/></startEvent>
               <subProcess id="sub"><startEvent id="inner"><timerEventDefinition><timeDuration>PT1S</timeDuration></timerEventDefinition></startEvent></subProcess></process>
               <process id="q"><startEvent id="once"><timerEventDefinition><timeDate>2030-01-01T09:00:00Z</timeDate></timerEventDefinition></startEvent></process>"#,
        );
        let keys: Vec<_> = got
            .iter()
            .map(|t| {
                (
                    t.process_id.as_str(),
                    t.start_event.as_str(),
                    t.text.as_str(),
                )
            })
            .collect();
        assert_eq!(
            keys,
            vec![
                ("p", "every", "R3/PT10S"),
                ("q", "once", "2030-01-01T09:00:00Z")
            ]
        );
        assert_eq!(got[0].kind, TimerKind::Cycle);
    }

    #[test]
    fn a_cycle_goes_on_after_now_and_counts_what_it_missed() {
        let cycle = timer::parse(TimerKind::Cycle, "R5/PT10S").expect("cycle");
        let t0 = datetime!(2030-01-01 0:00 UTC);
        // On time: the next occurrence, one spent.
        assert_eq!(
            cycle.next_after(t0, 1, t0),
            Some((datetime!(2030-01-01 0:00:10 UTC), 1))
        );
        // Down for 25 s: the two missed occurrences are spent with this one.
        assert_eq!(
            cycle.next_after(t0, 1, datetime!(2030-01-01 0:00:25 UTC)),
            Some((datetime!(2030-01-01 0:00:30 UTC), 3))
        );
        // Down past the end of the cycle: done.
        assert_eq!(
            cycle.next_after(t0, 1, datetime!(2030-01-02 0:00 UTC)),
            None
        );
        assert_eq!(cycle.next_after(t0, 5, t0), None);
        // Unbounded cycles go on; dates and durations fire once.
        let forever = timer::parse(TimerKind::Cycle, "R/PT1S").expect("cycle");
        assert!(
            forever
                .next_after(t0, 1_000, datetime!(2030-01-01 1:00 UTC))
                .is_some()
        );
        let once = timer::parse(TimerKind::Duration, "PT1S").expect("duration");
        assert_eq!(once.next_after(t0, 1, t0), None);
    }
}
