//! What may change about a mission after it was created, and the rules of
//! a change: each value's shape, which fields a finished mission still
//! takes, and a budget never below what is already spent.
//!
//! A change is checked in two steps: [`check`] looks at the request alone
//! (so bad input is refused before the mission is even read), [`apply`] at
//! the request against the mission as it is now.

use serde_json::{Value, json};
use time::OffsetDateTime;

use super::MissionStatus;
use crate::{invalid::Invalid, text::Text};

/// Longest title, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// A mission's title: one line of 1–200 characters, not blank (`null` removes it).
pub const TITLE: Text = Text::required(MAX_TITLE_CHARS).without_control();
/// A label as sent (before case folding): a slug.
pub const LABEL_PATTERN: &str = "^[A-Za-z0-9][A-Za-z0-9._-]*$";
/// Most labels on one mission.
pub const MAX_LABELS: usize = 20;
/// Longest label, in characters.
pub const MAX_LABEL_CHARS: usize = 64;
/// Lowest dispatch priority.
pub const MIN_PRIORITY: i32 = -100;
/// Highest dispatch priority.
pub const MAX_PRIORITY: i32 = 100;

/// A mission's editable fields, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Editable {
    /// Short name for people (`None`: the goal is the name).
    pub title: Option<String>,
    /// Dispatch priority.
    pub priority: i32,
    /// Spending limit (`None`: no limit).
    pub budget_limit: Option<f64>,
    /// When it should be done.
    pub deadline: Option<OffsetDateTime>,
    /// Slugs to group missions by.
    pub labels: Vec<String>,
}

/// What a request asks to change: `None` leaves a field as it is,
/// `Some(None)` clears it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Edit {
    /// New title, or clear it.
    pub title: Option<Option<String>>,
    /// New priority.
    pub priority: Option<i32>,
    /// New budget limit, or remove the limit.
    pub budget_limit: Option<Option<f64>>,
    /// New deadline, or clear it.
    pub deadline: Option<Option<OffsetDateTime>>,
    /// New labels (replacing the list; empty clears it).
    pub labels: Option<Vec<String>>,
}

impl Edit {
    /// Whether the request names no field at all.
    pub fn is_empty(&self) -> bool {
        self.title.is_none()
            && self.priority.is_none()
            && self.budget_limit.is_none()
            && self.deadline.is_none()
            && self.labels.is_none()
    }
}

/// A field of a mission that a person may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EditField {
    /// `title`.
    Title,
    /// `priority`.
    Priority,
    /// `budget` (the limit).
    Budget,
    /// `deadline`.
    Deadline,
    /// `labels`.
    Labels,
    /// `archived_at` (set by archiving, never by an edit).
    ArchivedAt,
}

impl EditField {
    /// The field's name in requests and in `mission.updated`'s `changes`.
    pub const fn as_str(self) -> &'static str {
        match self {
            EditField::Title => "title",
            EditField::Priority => "priority",
            EditField::Budget => "budget",
            EditField::Deadline => "deadline",
            EditField::Labels => "labels",
            EditField::ArchivedAt => "archived_at",
        }
    }

    /// Whether the field only matters while the mission runs: priority,
    /// budget and deadline steer work, and a finished mission has none left,
    /// so changing them afterwards would only rewrite its history.
    pub const fn steers_work(self) -> bool {
        matches!(
            self,
            EditField::Priority | EditField::Budget | EditField::Deadline
        )
    }
}

impl std::fmt::Display for EditField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an edit cannot apply to the mission as it is.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EditRefusal {
    /// A value is wrong whatever the mission.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The mission is finished and the edit changes a field that steers work.
    #[error(
        "the mission is {status}: its {} can no longer change (a finished mission takes only a new title or labels)",
        names(fields)
    )]
    Finished {
        /// The mission's status.
        status: MissionStatus,
        /// The refused fields.
        fields: Vec<EditField>,
    },
    /// The new limit is below what the mission already spent.
    #[error("a budget of {limit} is below the {spent} the mission already spent")]
    BudgetBelowSpent {
        /// The limit asked for.
        limit: f64,
        /// Spent so far.
        spent: f64,
    },
}

fn names(fields: &[EditField]) -> String {
    fields
        .iter()
        .map(|f| f.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks each value of a request on its own and normalises it (a title
/// trimmed, labels trimmed, lowercased and without repeats). A request
/// that names no field is a valid no-op (a merge patch of `{}`).
pub fn check(edit: Edit) -> Result<Edit, Invalid> {
    let title = match edit.title {
        Some(Some(t)) => Some(Some(check_title(&t)?)),
        other => other,
    };
    if let Some(p) = edit.priority
        && !(MIN_PRIORITY..=MAX_PRIORITY).contains(&p)
    {
        return Err(Invalid::new(
            "priority",
            format!("priority must be between {MIN_PRIORITY} and {MAX_PRIORITY}, not {p}"),
        ));
    }
    if let Some(Some(b)) = edit.budget_limit {
        crate::numbers::check_money("budget", b)
            .map_err(|m| Invalid::new("budget", format!("{m}; null removes the limit")))?;
    }
    let labels = edit.labels.map(|l| check_labels(&l)).transpose()?;
    Ok(Edit {
        title,
        labels,
        ..edit
    })
}

/// A title: one line of 1–200 characters once trimmed.
pub fn check_title(title: &str) -> Result<String, Invalid> {
    TITLE.check("title", title)?;
    Ok(title.trim().to_owned())
}

/// Labels: at most 20 slugs of 1–64 characters, each a lowercase letter or
/// digit followed by letters, digits, `-`, `_` or `.` (case is folded,
/// repeats dropped).
pub fn check_labels(labels: &[String]) -> Result<Vec<String>, Invalid> {
    let mut out: Vec<String> = Vec::with_capacity(labels.len());
    for (i, raw) in labels.iter().enumerate() {
        let label = raw.trim().to_ascii_lowercase();
        let field = format!("labels[{i}]");
        if label.is_empty() || label.chars().count() > MAX_LABEL_CHARS {
            return Err(Invalid::new(
                field,
                format!("label '{raw}' must be 1–{MAX_LABEL_CHARS} characters"),
            ));
        }
        let mut chars = label.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        let rest_ok = chars
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'));
        if !(first_ok && rest_ok) {
            return Err(Invalid::new(
                field,
                format!(
                    "label '{raw}' is not a slug: start with a letter or digit, then letters, digits, '-', '_' or '.'"
                ),
            ));
        }
        if !out.contains(&label) {
            out.push(label);
        }
    }
    if out.len() > MAX_LABELS {
        return Err(Invalid::new(
            "labels",
            format!("at most {MAX_LABELS} labels, not {}", out.len()),
        ));
    }
    Ok(out)
}

/// The mission's fields after a checked edit, if the mission as it is
/// takes it: a finished mission refuses a change of priority, budget or
/// deadline; a new budget limit may not be below `spent`; a new deadline
/// must be after `now`. A value equal to the current one is no change, so
/// a client may send back every field it read.
pub fn apply(
    current: &Editable,
    status: MissionStatus,
    spent: f64,
    edit: &Edit,
    now: OffsetDateTime,
) -> Result<Editable, EditRefusal> {
    let mut to = current.clone();
    if let Some(t) = &edit.title {
        to.title = t.clone();
    }
    if let Some(p) = edit.priority {
        to.priority = p;
    }
    if let Some(b) = edit.budget_limit {
        to.budget_limit = b;
    }
    if let Some(d) = edit.deadline {
        to.deadline = d;
    }
    if let Some(l) = &edit.labels {
        to.labels = l.clone();
    }
    if status.is_terminal() {
        let refused: Vec<EditField> = changes(current, &to)
            .into_iter()
            .map(|(f, _, _)| f)
            .filter(|f| f.steers_work())
            .collect();
        if !refused.is_empty() {
            return Err(EditRefusal::Finished {
                status,
                fields: refused,
            });
        }
    }
    if to.deadline != current.deadline
        && let Some(d) = to.deadline
        && d <= now
    {
        // Depends on the clock, which no schema can state.
        return Err(Invalid::unprocessable(
            "deadline_passed",
            "deadline",
            "deadline must be in the future",
        )
        .into());
    }
    if to.budget_limit != current.budget_limit
        && let Some(limit) = to.budget_limit
        && limit < spent
    {
        return Err(EditRefusal::BudgetBelowSpent { limit, spent });
    }
    Ok(to)
}

/// Each field that differs between `from` and `to`, with both values as
/// JSON (times in RFC 3339), in field order.
pub fn changes(from: &Editable, to: &Editable) -> Vec<(EditField, Value, Value)> {
    let mut out = Vec::new();
    let mut cmp = |field: EditField, a: Value, b: Value| {
        if a != b {
            out.push((field, a, b));
        }
    };
    cmp(EditField::Title, json!(from.title), json!(to.title));
    cmp(
        EditField::Priority,
        json!(from.priority),
        json!(to.priority),
    );
    cmp(
        EditField::Budget,
        json!(from.budget_limit),
        json!(to.budget_limit),
    );
    cmp(
        EditField::Deadline,
        time_value(from.deadline),
        time_value(to.deadline),
    );
    cmp(EditField::Labels, json!(from.labels), json!(to.labels));
    out
}

/// A time as the API writes it (RFC 3339), or null.
pub fn time_value(t: Option<OffsetDateTime>) -> Value {
    t.and_then(|t| {
        t.format(&time::format_description::well_known::Rfc3339)
            .ok()
    })
    .map(Value::String)
    .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    const NOW: OffsetDateTime = datetime!(2026-11-30 12:00 UTC);

    fn mission() -> Editable {
        Editable {
            title: None,
            priority: 0,
            budget_limit: Some(10.0),
            deadline: None,
            labels: vec![],
        }
    }

    fn field(e: Invalid) -> String {
        e.field
    }

    #[test]
    fn an_empty_request_is_a_no_op() {
        assert_eq!(check(Edit::default()).unwrap(), Edit::default());
    }

    #[test]
    fn values_are_checked_and_normalised() {
        let e = check(Edit {
            title: Some(Some("  Weekly report  ".into())),
            labels: Some(vec!["Ops".into(), " q4 ".into(), "ops".into()]),
            ..Edit::default()
        })
        .unwrap();
        assert_eq!(e.title, Some(Some("Weekly report".into())));
        assert_eq!(e.labels, Some(vec!["ops".into(), "q4".into()]));

        let bad = |edit: Edit| field(check(edit).unwrap_err());
        assert_eq!(
            bad(Edit {
                title: Some(Some("   ".into())),
                ..Edit::default()
            }),
            "title"
        );
        assert_eq!(
            bad(Edit {
                title: Some(Some("x".repeat(201))),
                ..Edit::default()
            }),
            "title"
        );
        assert_eq!(
            bad(Edit {
                title: Some(Some("two\nlines".into())),
                ..Edit::default()
            }),
            "title"
        );
        assert_eq!(
            bad(Edit {
                priority: Some(101),
                ..Edit::default()
            }),
            "priority"
        );
        assert_eq!(
            bad(Edit {
                budget_limit: Some(Some(-1.0)),
                ..Edit::default()
            }),
            "budget"
        );
        assert_eq!(
            bad(Edit {
                budget_limit: Some(Some(f64::NAN)),
                ..Edit::default()
            }),
            "budget"
        );
        assert_eq!(
            bad(Edit {
                labels: Some(vec!["ok".into(), "not a slug".into()]),
                ..Edit::default()
            }),
            "labels[1]"
        );
        assert_eq!(
            bad(Edit {
                labels: Some(vec!["-leading".into()]),
                ..Edit::default()
            }),
            "labels[0]"
        );
        assert_eq!(
            bad(Edit {
                labels: Some(vec!["x".repeat(65)]),
                ..Edit::default()
            }),
            "labels[0]"
        );
        assert_eq!(
            bad(Edit {
                labels: Some((0..21).map(|i| format!("l{i}")).collect()),
                ..Edit::default()
            }),
            "labels"
        );
        // Clearing is a value too.
        assert!(
            check(Edit {
                title: Some(None),
                budget_limit: Some(None),
                deadline: Some(None),
                labels: Some(vec![]),
                ..Edit::default()
            })
            .is_ok()
        );
    }

    #[test]
    fn a_live_mission_takes_every_field_and_the_changes_are_listed() {
        let edit = Edit {
            title: Some(Some("T".into())),
            priority: Some(5),
            budget_limit: Some(None),
            deadline: Some(Some(datetime!(2027-01-01 0:00 UTC))),
            labels: Some(vec!["a".into()]),
        };
        let to = apply(&mission(), MissionStatus::Executing, 3.0, &edit, NOW).unwrap();
        let changed: Vec<&str> = changes(&mission(), &to)
            .iter()
            .map(|(f, _, _)| f.as_str())
            .collect();
        assert_eq!(
            changed,
            ["title", "priority", "budget", "deadline", "labels"]
        );
        let (_, from, to) = &changes(&mission(), &to)[3];
        assert_eq!((from, to), (&Value::Null, &json!("2027-01-01T00:00:00Z")));
    }

    #[test]
    fn a_finished_mission_takes_only_a_title_and_labels() {
        for status in [
            MissionStatus::Completed,
            MissionStatus::Failed,
            MissionStatus::Cancelled,
        ] {
            let names = Edit {
                title: Some(Some("Done".into())),
                labels: Some(vec!["archive".into()]),
                ..Edit::default()
            };
            assert!(apply(&mission(), status, 3.0, &names, NOW).is_ok());
            let steer = Edit {
                priority: Some(9),
                deadline: Some(Some(datetime!(2027-01-01 0:00 UTC))),
                title: Some(Some("Done".into())),
                ..Edit::default()
            };
            assert_eq!(
                apply(&mission(), status, 3.0, &steer, NOW),
                Err(EditRefusal::Finished {
                    status,
                    fields: vec![EditField::Priority, EditField::Deadline]
                })
            );
            // Sending back the value it has is no change.
            let same = Edit {
                priority: Some(0),
                budget_limit: Some(Some(10.0)),
                ..Edit::default()
            };
            assert_eq!(apply(&mission(), status, 3.0, &same, NOW), Ok(mission()));
        }
    }

    #[test]
    fn a_budget_below_the_spend_is_refused_but_no_limit_is_fine() {
        let edit = |b| Edit {
            budget_limit: Some(b),
            ..Edit::default()
        };
        assert_eq!(
            apply(
                &mission(),
                MissionStatus::Executing,
                3.0,
                &edit(Some(2.5)),
                NOW
            ),
            Err(EditRefusal::BudgetBelowSpent {
                limit: 2.5,
                spent: 3.0
            })
        );
        assert!(
            apply(
                &mission(),
                MissionStatus::Paused,
                3.0,
                &edit(Some(3.0)),
                NOW
            )
            .is_ok()
        );
        assert!(apply(&mission(), MissionStatus::Paused, 3.0, &edit(None), NOW).is_ok());
    }

    #[test]
    fn a_new_deadline_must_be_in_the_future() {
        let past = Edit {
            deadline: Some(Some(datetime!(2026-01-01 0:00 UTC))),
            ..Edit::default()
        };
        let e = apply(&mission(), MissionStatus::Planning, 0.0, &past, NOW).unwrap_err();
        assert!(
            matches!(e, EditRefusal::Invalid(ref i) if i.field == "deadline"),
            "{e:?}"
        );
        // A deadline already past stays when it is sent back unchanged.
        let mut current = mission();
        current.deadline = Some(datetime!(2026-01-01 0:00 UTC));
        assert!(apply(&current, MissionStatus::Executing, 0.0, &past, NOW).is_ok());
    }
}
