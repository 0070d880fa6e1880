//! Pure domain types: the lifecycles of missions, tasks and attempts.
//!
//! Each status enum lives here exactly once, with a pure transition function
//! that is unit-tested; SQL only persists what these functions allowed.

pub mod attempt;
pub mod budget;
pub mod escalation;
pub mod mission;
pub mod mission_edit;
pub mod outcome;
pub mod task;

pub use attempt::{AttemptStatus, FailureKind, ReportDecision, ReportStatus, decide_report};
pub use escalation::{Escalation, LadderState, Rung, escalate};
pub use mission::{Autonomy, MissionEvent, MissionStatus};
pub use outcome::{FailedTask, Progress};
pub use task::{BoardColumn, TaskEvent, TaskStatus};

/// A transition that the lifecycle does not allow; it reads "cannot
/// reject a decision that is approved" whatever form `event` takes (a verb
/// or the status it would lead to).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot {} {} that is {}", verb(self.event), with_article(self.entity), words(self.from))]
pub struct IllegalTransition {
    /// Which lifecycle refused ("mission", "task", "attempt").
    pub entity: &'static str,
    /// The state it was in.
    pub from: &'static str,
    /// What was asked of it.
    pub event: &'static str,
}

/// Identifiers as words: `tool_approval` → `tool approval`.
fn words(id: &str) -> String {
    id.replace(['_', '-'], " ")
}

/// `a`/`an` and the words of an entity.
fn with_article(entity: &str) -> String {
    let w = words(entity);
    let article = if w.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {w}")
}

/// The verb of an event that names the status it leads to (`rejected` →
/// `reject`, `achieved` → `achieve`); other events are verbs already.
fn verb(event: &str) -> String {
    let known = match event {
        "approved" => "approve",
        "rejected" => "reject",
        "modified" => "modify",
        "deferred" => "defer",
        "denied" => "deny",
        "achieved" => "achieve",
        "abandoned" => "abandon",
        "suspended" => "suspend",
        "dropped" => "drop",
        "active" => "reactivate",
        "committed" => "commit",
        "cancelled" => "cancel",
        "timed_out" | "time_out" => "time out",
        "await_approval" => "send for approval",
        other => return words(other),
    };
    known.to_owned()
}

/// Generates `as_str`, `FromStr`, `Display`, serde and an OpenAPI schema for a status enum whose
/// variants are stored as snake_case text in PostgreSQL.
///
/// The schema is named after the type; `text_enum!(Outcome as "DecisionOutcome", { … })`
/// names it otherwise, for types whose short names collide in the one OpenAPI document.
#[macro_export]
macro_rules! text_enum {
    ($name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $crate::text_enum!($name as stringify!($name), { $($variant => $text),+ });
    };
    ($name:ident as $schema:expr, { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value as stored in the database and shown in the API.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::domain::UnknownValue;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err($crate::domain::UnknownValue {
                        kind: stringify!($name),
                        value: s.to_owned(),
                        expected: &[$($text),+],
                    }),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }

        // In the OpenAPI document: a string limited to the values above.
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .enum_values(Some([$($text),+]))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {
            fn name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed($schema)
            }
        }
    };
}
pub use crate::text_enum;

/// The OpenAPI schema of a string limited to `values`, for fields checked
/// against a list of names rather than parsed into a [`text_enum!`] type
/// (`#[schema(schema_with = …)]` on a function that calls this with the
/// list the check uses).
pub fn string_enum(values: &[&str]) -> utoipa::openapi::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(values.iter().copied()))
        .build()
}

/// A text value that is not one of an enum's values. Its message names the
/// kind in words (`MissionStatus` → "mission status"), never the Rust type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {} '{value}'; expected one of: {}", type_words(kind), expected.join(", "))]
pub struct UnknownValue {
    /// The enum's name.
    pub kind: &'static str,
    /// What was given.
    pub value: String,
    /// What would have been accepted.
    pub expected: &'static [&'static str],
}

/// A type name as lowercase words: `MissionStatus` → `mission status`.
pub fn type_words(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push(' ');
        }
        out.extend(c.to_lowercase());
    }
    out
}

#[cfg(test)]
mod wording_tests {
    use super::{IllegalTransition, UnknownValue};

    #[test]
    fn unknown_values_name_no_rust_type() {
        let e = UnknownValue {
            kind: "MissionStatus",
            value: "done".into(),
            expected: &["planning", "executing"],
        };
        assert_eq!(
            e.to_string(),
            "unknown mission status 'done'; expected one of: planning, executing"
        );
    }

    fn text(entity: &'static str, from: &'static str, event: &'static str) -> String {
        IllegalTransition {
            entity,
            from,
            event,
        }
        .to_string()
    }

    #[test]
    fn refusals_read_as_sentences() {
        assert_eq!(
            text("decision", "approved", "rejected"),
            "cannot reject a decision that is approved"
        );
        assert_eq!(
            text("intention", "dropped", "active"),
            "cannot reactivate an intention that is dropped"
        );
        assert_eq!(
            text("tool_approval", "timed_out", "approved"),
            "cannot approve a tool approval that is timed out"
        );
        assert_eq!(
            text("task", "succeeded", "hand_off"),
            "cannot hand off a task that is succeeded"
        );
        assert_eq!(
            text("mission", "completed", "accept the results of"),
            "cannot accept the results of a mission that is completed"
        );
    }
}
