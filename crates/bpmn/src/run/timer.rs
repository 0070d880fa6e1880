//! Timer definitions in ISO 8601, as BPMN's `timeDuration`, `timeDate` and
//! `timeCycle` carry them, and the due times they give.
//!
//! - A duration is `PnYnMnWnDTnHnMnS` (any part may be left out, at least
//!   one must be there; only the seconds may have a fraction, `PT1.5S`).
//!   Years and months move the calendar (the day is clamped to the month's
//!   length: 31 January plus `P1M` is 28 or 29 February); weeks and days
//!   add whole days; hours, minutes and seconds add elapsed time.
//! - A date is RFC 3339 (`2025-03-01T09:00:00Z`); a date and time without
//!   an offset (`2025-03-01T09:00:00`) is read as UTC, since the engine has
//!   no zone of its own.
//! - A cycle is `R[n]/duration`, `R[n]/start/duration` or
//!   `R[n]/duration/end`; no `n` repeats without bound. Without a start the
//!   first occurrence is one interval after arming; with one, the start is
//!   the first occurrence (already due if it is past). Cron cycles are not
//!   read: they are an error, which the runner turns into an incident.

use std::fmt;

use time::format_description::well_known::{Iso8601, Rfc3339};
use time::{Date, Duration, Month, OffsetDateTime, PrimitiveDateTime};

use crate::model::TimerDef;

/// Why a timer definition cannot give a due time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("timer '{text}': {message}")]
pub struct TimerError {
    /// The definition's text, trimmed.
    pub text: String,
    /// What is wrong with it.
    pub message: String,
}

/// An ISO 8601 duration, kept in its parts so calendar units stay calendar units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IsoDuration {
    /// Calendar years.
    pub years: u32,
    /// Calendar months.
    pub months: u32,
    /// Days, weeks included (a week is seven days).
    pub days: u32,
    /// Elapsed time: hours, minutes and seconds, in nanoseconds.
    pub nanos: u128,
}

/// A repeating timer: `R[n]/…`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cycle {
    /// How many times it fires; `None` is without bound.
    pub repetitions: Option<u32>,
    /// The first occurrence, when given.
    pub start: Option<OffsetDateTime>,
    /// The time between two occurrences.
    pub interval: IsoDuration,
    /// No occurrence after this instant, when given.
    pub end: Option<OffsetDateTime>,
}

/// A parsed timer definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerSpec {
    /// `timeDuration`: fires once, this long after arming.
    Duration(IsoDuration),
    /// `timeDate`: fires once, at this instant.
    Date(OffsetDateTime),
    /// `timeCycle`: fires repeatedly.
    Cycle(Cycle),
}

/// Which of the three BPMN timer elements a text came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimerKind {
    /// `timeDuration`.
    Duration,
    /// `timeDate`.
    Date,
    /// `timeCycle`.
    Cycle,
}

fn error(text: &str, message: impl Into<String>) -> TimerError {
    TimerError {
        text: text.trim().to_owned(),
        message: message.into(),
    }
}

/// The text a BPMN timer definition holds and its kind: the first of
/// `timeDate`, `timeDuration` and `timeCycle` that is not empty.
pub fn definition_text(def: &TimerDef) -> Option<(TimerKind, &str)> {
    [
        (TimerKind::Date, &def.date),
        (TimerKind::Duration, &def.duration),
        (TimerKind::Cycle, &def.cycle),
    ]
    .into_iter()
    .find_map(|(kind, text)| {
        text.as_deref()
            .filter(|t| !t.trim().is_empty())
            .map(|t| (kind, t))
    })
}

/// Parses a BPMN timer definition written as literal ISO 8601 text (what a
/// timer start event needs, scheduled by the service).
pub fn from_definition(def: &TimerDef) -> Result<TimerSpec, TimerError> {
    let (kind, text) = definition_text(def)
        .ok_or_else(|| error("", "the timer has no date, duration or cycle"))?;
    parse(kind, text)
}

/// Parses a timer definition of the given kind.
pub fn parse(kind: TimerKind, text: &str) -> Result<TimerSpec, TimerError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(error(t, "the timer definition is empty"));
    }
    match kind {
        TimerKind::Duration => parse_duration(t).map(TimerSpec::Duration),
        TimerKind::Date => parse_date(t).map(TimerSpec::Date),
        TimerKind::Cycle => parse_cycle(t).map(TimerSpec::Cycle),
    }
}

/// Parses an ISO 8601 duration such as `PT5M`, `P1DT2H` or `P2W`.
pub fn parse_duration(text: &str) -> Result<IsoDuration, TimerError> {
    let t = text.trim();
    let Some(body) = t.strip_prefix('P') else {
        return Err(error(t, "a duration starts with 'P'"));
    };
    let (date_part, time_part) = match body.split_once('T') {
        Some((d, tm)) => (d, Some(tm)),
        None => (body, None),
    };
    let mut d = IsoDuration::default();
    let mut any = false;
    for (number, unit) in components(t, date_part)? {
        let n = whole(t, &number)?;
        any = true;
        match unit {
            'Y' => d.years = d.years.saturating_add(n),
            'M' => d.months = d.months.saturating_add(n),
            'W' => d.days = d.days.saturating_add(n.saturating_mul(7)),
            'D' => d.days = d.days.saturating_add(n),
            other => return Err(error(t, format!("unknown date unit '{other}'"))),
        }
    }
    if let Some(tp) = time_part {
        if tp.is_empty() {
            return Err(error(
                t,
                "'T' must be followed by hours, minutes or seconds",
            ));
        }
        for (number, unit) in components(t, tp)? {
            any = true;
            let nanos = match unit {
                'H' => u128::from(whole(t, &number)?) * 3_600_000_000_000,
                'M' => u128::from(whole(t, &number)?) * 60_000_000_000,
                'S' => seconds_nanos(t, &number)?,
                other => return Err(error(t, format!("unknown time unit '{other}'"))),
            };
            d.nanos = d.nanos.saturating_add(nanos);
        }
    }
    if !any {
        return Err(error(t, "a duration needs at least one part"));
    }
    Ok(d)
}

/// Splits `5Y3M` into `[("5", 'Y'), ("3", 'M')]`.
fn components(text: &str, part: &str) -> Result<Vec<(String, char)>, TimerError> {
    let mut out = Vec::new();
    let mut number = String::new();
    for c in part.chars() {
        if c.is_ascii_digit() || c == '.' || c == ',' {
            number.push(c);
        } else if c.is_ascii_alphabetic() {
            if number.is_empty() {
                return Err(error(text, format!("'{c}' has no number before it")));
            }
            out.push((std::mem::take(&mut number), c));
        } else {
            return Err(error(text, format!("unexpected '{c}'")));
        }
    }
    if !number.is_empty() {
        return Err(error(text, format!("'{number}' has no unit after it")));
    }
    Ok(out)
}

fn whole(text: &str, number: &str) -> Result<u32, TimerError> {
    number
        .parse::<u32>()
        .map_err(|_| error(text, format!("'{number}' is not a whole number in range")))
}

/// Seconds with an optional fraction (`1.5` or `1,5`), in nanoseconds.
fn seconds_nanos(text: &str, number: &str) -> Result<u128, TimerError> {
    let n = number.replace(',', ".");
    let (int, frac) = n.split_once('.').unwrap_or((&n, ""));
    if int.is_empty() || frac.len() > 9 || frac.contains('.') {
        return Err(error(
            text,
            format!("'{number}' is not a number of seconds"),
        ));
    }
    let secs = whole(text, int)?;
    let mut frac_nanos: u128 = 0;
    for (i, c) in frac.chars().enumerate() {
        let digit = c
            .to_digit(10)
            .ok_or_else(|| error(text, format!("'{number}' is not a number of seconds")))?;
        frac_nanos += u128::from(digit) * 10u128.pow(8 - i as u32);
    }
    Ok(u128::from(secs) * 1_000_000_000 + frac_nanos)
}

/// Parses an RFC 3339 instant; a date and time without offset is UTC.
pub fn parse_date(text: &str) -> Result<OffsetDateTime, TimerError> {
    let t = text.trim();
    if let Ok(at) = OffsetDateTime::parse(t, &Rfc3339) {
        return Ok(at);
    }
    if let Ok(at) = OffsetDateTime::parse(t, &Iso8601::DEFAULT) {
        return Ok(at);
    }
    PrimitiveDateTime::parse(t, &Iso8601::DEFAULT)
        .map(PrimitiveDateTime::assume_utc)
        .map_err(|_| error(t, "not an RFC 3339 date and time"))
}

/// Parses a repeating interval such as `R3/PT10S`.
pub fn parse_cycle(text: &str) -> Result<Cycle, TimerError> {
    let t = text.trim();
    let Some(rest) = t.strip_prefix('R') else {
        let message = if t.split_whitespace().count() >= 5 {
            "cron cycles are not supported; use ISO 8601 'R[n]/PT…'"
        } else {
            "a cycle starts with 'R'"
        };
        return Err(error(t, message));
    };
    let parts: Vec<&str> = rest.split('/').collect();
    let repetitions = match parts[0] {
        "" => None,
        n => Some(whole(t, n)?),
    };
    let (start, interval, end) = match parts.as_slice() {
        [_, d] => (None, parse_duration(d)?, None),
        [_, a, b] if a.starts_with('P') => (None, parse_duration(a)?, Some(parse_date(b)?)),
        [_, a, b] => (Some(parse_date(a)?), parse_duration(b)?, None),
        _ => {
            return Err(error(
                t,
                "a cycle is R[n]/duration, R[n]/start/duration or R[n]/duration/end",
            ));
        }
    };
    if interval == IsoDuration::default() {
        return Err(error(t, "a cycle's interval must not be zero"));
    }
    Ok(Cycle {
        repetitions,
        start,
        interval,
        end,
    })
}

impl IsoDuration {
    /// `at` moved forward by this duration; `None` past the representable range.
    pub fn after(&self, at: OffsetDateTime) -> Option<OffsetDateTime> {
        let months_total = i64::from(self.years) * 12 + i64::from(self.months);
        let moved = add_months(at, months_total)?;
        let moved = moved.checked_add(Duration::days(i64::from(self.days)))?;
        let secs = i64::try_from(self.nanos / 1_000_000_000).ok()?;
        let sub = i32::try_from(self.nanos % 1_000_000_000).ok()?;
        moved.checked_add(Duration::new(secs, sub))
    }
}

/// Adds calendar months, clamping the day to the target month's length.
fn add_months(at: OffsetDateTime, months: i64) -> Option<OffsetDateTime> {
    if months == 0 {
        return Some(at);
    }
    let index = i64::from(at.year()) * 12 + i64::from(u8::from(at.month())) - 1 + months;
    let year = i32::try_from(index.div_euclid(12)).ok()?;
    let month = Month::try_from(u8::try_from(index.rem_euclid(12) + 1).ok()?).ok()?;
    let day = at.day().min(month.length(year));
    let date = Date::from_calendar_date(year, month, day).ok()?;
    Some(at.replace_date(date))
}

impl Cycle {
    /// The first occurrence for a timer armed at `now`.
    pub fn first_due(&self, now: OffsetDateTime) -> Option<OffsetDateTime> {
        if self.repetitions == Some(0) {
            return None;
        }
        let due = match self.start {
            Some(start) => start,
            None => self.interval.after(now)?,
        };
        self.within_end(due)
    }

    /// The occurrence after `previous`, once `fired` occurrences have fired.
    pub fn next_due(&self, previous: OffsetDateTime, fired: u32) -> Option<OffsetDateTime> {
        if self.repetitions.is_some_and(|n| fired >= n) {
            return None;
        }
        self.within_end(self.interval.after(previous)?)
    }

    fn within_end(&self, due: OffsetDateTime) -> Option<OffsetDateTime> {
        match self.end {
            Some(end) if due > end => None,
            _ => Some(due),
        }
    }
}

impl TimerSpec {
    /// When a timer armed at `now` first fires; `None` if it never does.
    pub fn first_due(&self, now: OffsetDateTime) -> Option<OffsetDateTime> {
        match self {
            Self::Duration(d) => d.after(now),
            Self::Date(at) => Some(*at),
            Self::Cycle(c) => c.first_due(now),
        }
    }

    /// When it fires next after firing at `previous` (`fired` times so far);
    /// `None` for one-shot timers and exhausted cycles.
    pub fn next_due(&self, previous: OffsetDateTime, fired: u32) -> Option<OffsetDateTime> {
        match self {
            Self::Cycle(c) => c.next_due(previous, fired),
            _ => None,
        }
    }
}

impl std::str::FromStr for TimerKind {
    type Err = String;

    /// Reads the element name [`fmt::Display`] writes.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "timeDuration" => Ok(Self::Duration),
            "timeDate" => Ok(Self::Date),
            "timeCycle" => Ok(Self::Cycle),
            other => Err(format!("'{other}' is not a BPMN timer element")),
        }
    }
}

impl fmt::Display for TimerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Duration => "timeDuration",
            Self::Date => "timeDate",
            Self::Cycle => "timeCycle",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn durations() {
        let now = datetime!(2025-01-31 10:00 UTC);
        let after = |s: &str| parse_duration(s).unwrap().after(now).unwrap();
        assert_eq!(after("PT5M"), datetime!(2025-01-31 10:05 UTC));
        assert_eq!(after("P1DT2H"), datetime!(2025-02-01 12:00 UTC));
        assert_eq!(after("P1M"), datetime!(2025-02-28 10:00 UTC));
        assert_eq!(after("P1Y1M"), datetime!(2026-02-28 10:00 UTC));
        assert_eq!(after("P2W"), datetime!(2025-02-14 10:00 UTC));
        assert_eq!(after("PT1.5S"), datetime!(2025-01-31 10:00:01.5 UTC));
        assert_eq!(after("PT90M"), datetime!(2025-01-31 11:30 UTC));
        for bad in [
            "", "P", "PT", "5M", "P5", "PT5X", "P-1D", "PT1.2.3S", "P1.5D",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn dates() {
        assert_eq!(
            parse_date("2025-03-01T09:00:00Z").unwrap(),
            datetime!(2025-03-01 09:00 UTC)
        );
        assert_eq!(
            parse_date("2025-03-01T09:00:00+02:00").unwrap(),
            datetime!(2025-03-01 07:00 UTC)
        );
        assert_eq!(
            parse_date("2025-03-01T09:00:00").unwrap(),
            datetime!(2025-03-01 09:00 UTC)
        );
        assert!(parse_date("tomorrow").is_err());
    }

    #[test]
    fn cycles() {
        let now = datetime!(2025-01-01 00:00 UTC);
        let c = parse_cycle("R3/PT10S").unwrap();
        assert_eq!(c.repetitions, Some(3));
        let first = c.first_due(now).unwrap();
        assert_eq!(first, datetime!(2025-01-01 00:00:10 UTC));
        let second = c.next_due(first, 1).unwrap();
        assert_eq!(second, datetime!(2025-01-01 00:00:20 UTC));
        assert!(c.next_due(second, 3).is_none());
        let unbounded = parse_cycle("R/PT1H").unwrap();
        assert!(unbounded.next_due(now, 1000).is_some());
        let started = parse_cycle("R2/2025-02-01T00:00:00Z/P1D").unwrap();
        assert_eq!(
            started.first_due(now).unwrap(),
            datetime!(2025-02-01 00:00 UTC)
        );
        let ended = parse_cycle("R/PT1H/2025-01-01T01:30:00Z").unwrap();
        let first = ended.first_due(now).unwrap();
        assert!(ended.next_due(first, 1).is_none());
        assert!(parse_cycle("R0/PT1H").unwrap().first_due(now).is_none());
        let cron = parse_cycle("0 0/5 * * * ?").unwrap_err();
        assert!(cron.message.contains("cron"));
        for bad in ["PT1H", "R3", "R3/PT0S", "Rx/PT1S", "R1/a/b/c"] {
            assert!(parse_cycle(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn definitions() {
        let now = datetime!(2025-01-01 00:00 UTC);
        let def = TimerDef {
            date: Some(" ".into()),
            duration: Some("PT1H".into()),
            ..TimerDef::default()
        };
        let spec = from_definition(&def).unwrap();
        assert_eq!(
            spec.first_due(now).unwrap(),
            datetime!(2025-01-01 01:00 UTC)
        );
        assert!(from_definition(&TimerDef::default()).is_err());
    }

    #[test]
    fn kinds() {
        let now = datetime!(2025-01-01 00:00 UTC);
        assert!(parse(TimerKind::Duration, "  ").is_err());
        let spec = parse(TimerKind::Duration, " PT1M ").unwrap();
        assert_eq!(
            spec.first_due(now).unwrap(),
            datetime!(2025-01-01 00:01 UTC)
        );
        assert!(spec.next_due(now, 1).is_none());
        let spec = parse(TimerKind::Date, "2025-06-01T00:00:00Z").unwrap();
        assert_eq!(
            spec.first_due(now).unwrap(),
            datetime!(2025-06-01 00:00 UTC)
        );
    }
}
