//! Checking a result against its task's `must_pass` criteria.
//!
//! A criterion may carry a deterministic `check`; those are evaluated here,
//! purely, on the worker's output. A `must_pass` criterion without a check can
//! only be judged by reading the result: a verifier agent does that when the
//! workspace has one (see the engine), otherwise the worker's own success
//! stands and the event says the criterion was not checked.
//!
//! "The text" of an output is the string itself when the output is a JSON
//! string, the `text`/`answer`/`content` field of an object when present,
//! and the compact JSON otherwise.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A success criterion for a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Criterion {
    /// What must be true of the result.
    pub description: String,
    /// Whether failing this criterion fails the task (otherwise it is advisory).
    #[serde(default)]
    pub must_pass: bool,
    /// A deterministic check of the output; without one a `must_pass`
    /// criterion is judged by a verifier agent, if the workspace has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<Check>,
}

/// A deterministic check on a task's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// The output is present and not empty (`null`, `""`, `[]`, `{}` fail).
    NonEmpty,
    /// The text contains `text` (case-insensitive).
    Contains {
        /// What must appear.
        text: String,
    },
    /// The text does not contain `text` (case-insensitive).
    NotContains {
        /// What must not appear.
        text: String,
    },
    /// The text has at least `chars` characters.
    MinLength {
        /// Minimum length in characters.
        chars: usize,
    },
    /// The text has at most `chars` characters.
    MaxLength {
        /// Maximum length in characters.
        chars: usize,
    },
    /// The output is a JSON object with a value at `path` (dot-separated
    /// keys), equal to `equals` when given.
    JsonField {
        /// Dot-separated keys, e.g. `summary.title`.
        path: String,
        /// The value it must have.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        equals: Option<Value>,
    },
}

/// What checking a result found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Verdict {
    /// `must_pass` criteria whose check failed, with the reason.
    pub failed: Vec<String>,
    /// Advisory criteria whose check failed (reported, not enforced).
    pub advisory_failed: Vec<String>,
    /// `must_pass` criteria without a deterministic check (need a verifier).
    pub unchecked: Vec<String>,
    /// Criteria whose check passed.
    pub passed: Vec<String>,
}

impl Verdict {
    /// True if no `must_pass` check failed.
    pub fn ok(&self) -> bool {
        self.failed.is_empty()
    }

    /// The reasons, as feedback for the next attempt.
    pub fn feedback(&self) -> String {
        let mut s = String::from("The previous result did not meet these criteria:");
        for f in &self.failed {
            s.push_str("\n- ");
            s.push_str(f);
        }
        s
    }
}

/// The text of an output (see the module docs).
pub fn output_text(output: Option<&Value>) -> String {
    match output {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(m)) => ["text", "answer", "content"]
            .iter()
            .find_map(|k| m.get(*k).and_then(Value::as_str))
            .map(str::to_owned)
            .unwrap_or_else(|| Value::Object(m.clone()).to_string()),
        Some(v) => v.to_string(),
    }
}

fn field<'a>(output: Option<&'a Value>, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(output?, |v, key| v.as_object()?.get(key))
}

/// Runs one check; `Err` carries why it failed.
pub fn run_check(check: &Check, output: Option<&Value>) -> Result<(), String> {
    let text = || output_text(output);
    match check {
        Check::NonEmpty => {
            let empty = match output {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.trim().is_empty(),
                Some(Value::Array(a)) => a.is_empty(),
                Some(Value::Object(o)) => o.is_empty(),
                Some(_) => false,
            };
            if empty {
                Err("the output is empty".into())
            } else {
                Ok(())
            }
        }
        Check::Contains { text: needle } => {
            if text().to_lowercase().contains(&needle.to_lowercase()) {
                Ok(())
            } else {
                Err(format!("the output does not mention \"{needle}\""))
            }
        }
        Check::NotContains { text: needle } => {
            if text().to_lowercase().contains(&needle.to_lowercase()) {
                Err(format!("the output mentions \"{needle}\""))
            } else {
                Ok(())
            }
        }
        Check::MinLength { chars } => {
            let n = text().chars().count();
            if n >= *chars {
                Ok(())
            } else {
                Err(format!("the output has {n} characters, fewer than {chars}"))
            }
        }
        Check::MaxLength { chars } => {
            let n = text().chars().count();
            if n <= *chars {
                Ok(())
            } else {
                Err(format!("the output has {n} characters, more than {chars}"))
            }
        }
        Check::JsonField { path, equals } => match (field(output, path), equals) {
            (None, _) => Err(format!("the output has no field \"{path}\"")),
            (Some(v), Some(want)) if v != want => {
                Err(format!("field \"{path}\" is {v}, not {want}"))
            }
            _ => Ok(()),
        },
    }
}

/// Checks `output` against every criterion.
pub fn verify(criteria: &[Criterion], output: Option<&Value>) -> Verdict {
    let mut v = Verdict::default();
    for c in criteria {
        match (&c.check, c.must_pass) {
            (Some(check), must) => match run_check(check, output) {
                Ok(()) => v.passed.push(c.description.clone()),
                Err(why) if must => v.failed.push(format!("{}: {why}", c.description)),
                Err(why) => v.advisory_failed.push(format!("{}: {why}", c.description)),
            },
            (None, true) => v.unchecked.push(c.description.clone()),
            (None, false) => {}
        }
    }
    v
}

/// Whether a verifier's verdict says the task's *design* is wrong (not just
/// this result): `{"passed": false, "design_flawed": true, ...}`, also inside
/// the output's text as JSON. Retrying such a task cannot help; the mission
/// reconsiders its plan instead.
pub fn design_flawed(output: Option<&Value>) -> bool {
    let flag = |v: &Value| v.get("design_flawed").and_then(Value::as_bool) == Some(true);
    let Some(output) = output else {
        return false;
    };
    flag(output)
        || serde_json::from_str::<Value>(output_text(Some(output)).trim()).is_ok_and(|v| flag(&v))
}

/// Reads a verifier agent's verdict: `{"passed": bool, "reasons": [..]}`
/// (also inside the output's text, as JSON), or a text starting with `PASS`
/// or `FAIL` (the rest being the reason). `None` if it is neither.
pub fn parse_verdict(output: Option<&Value>) -> Option<(bool, Vec<String>)> {
    fn from_object(v: &Value) -> Option<(bool, Vec<String>)> {
        let passed = v.get("passed")?.as_bool()?;
        let reasons = match v.get("reasons") {
            Some(Value::Array(a)) => a
                .iter()
                .map(|r| r.as_str().map_or_else(|| r.to_string(), str::to_owned))
                .collect(),
            Some(Value::String(s)) => vec![s.clone()],
            _ => Vec::new(),
        };
        Some((passed, reasons))
    }
    let output = output?;
    if let Some(v) = from_object(output) {
        return Some(v);
    }
    let text = output_text(Some(output));
    let trimmed = text.trim();
    if let Some(v) = serde_json::from_str::<Value>(trimmed)
        .ok()
        .as_ref()
        .and_then(from_object)
    {
        return Some(v);
    }
    let upper = trimmed.to_uppercase();
    let rest = |n: usize| {
        // `get`: uppercasing can change byte lengths (ß → SS).
        let r = trimmed
            .get(n..)
            .unwrap_or("")
            .trim_start_matches([':', '-', ' ', '.'])
            .trim();
        if r.is_empty() {
            Vec::new()
        } else {
            vec![r.to_owned()]
        }
    };
    if upper.starts_with("PASS") {
        Some((true, rest(4)))
    } else if upper.starts_with("FAIL") {
        Some((false, rest(4)))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn crit(check: Option<Check>, must_pass: bool) -> Criterion {
        Criterion {
            description: "c".into(),
            must_pass,
            check,
        }
    }

    #[test]
    fn checks_parse_from_json() {
        let c: Criterion = serde_json::from_value(json!({
            "description": "mentions Rust", "must_pass": true,
            "check": {"kind": "contains", "text": "rust"}
        }))
        .unwrap();
        assert_eq!(
            c.check,
            Some(Check::Contains {
                text: "rust".into()
            })
        );
        let bad = serde_json::from_value::<Criterion>(json!({
            "description": "x", "check": {"kind": "telepathy"}
        }));
        assert!(bad.is_err());
        let typo = serde_json::from_value::<Criterion>(json!({
            "description": "x", "check": {"kind": "contains", "txt": "a"}
        }));
        assert!(typo.is_err());
    }

    #[test]
    fn text_of_an_output() {
        assert_eq!(output_text(Some(&json!("hi"))), "hi");
        assert_eq!(output_text(Some(&json!({"text": "a", "n": 1}))), "a");
        assert_eq!(output_text(Some(&json!({"n": 1}))), r#"{"n":1}"#);
        assert_eq!(output_text(None), "");
    }

    #[test]
    fn each_check() {
        let out = json!({"text": "Rust is fast", "meta": {"lang": "en"}});
        let o = Some(&out);
        assert!(run_check(&Check::NonEmpty, o).is_ok());
        assert!(run_check(&Check::NonEmpty, Some(&json!("  "))).is_err());
        assert!(run_check(&Check::NonEmpty, None).is_err());
        assert!(
            run_check(
                &Check::Contains {
                    text: "RUST".into()
                },
                o
            )
            .is_ok()
        );
        assert!(run_check(&Check::Contains { text: "go".into() }, o).is_err());
        assert!(
            run_check(
                &Check::NotContains {
                    text: "slow".into()
                },
                o
            )
            .is_ok()
        );
        assert!(run_check(&Check::MinLength { chars: 12 }, o).is_ok());
        assert!(run_check(&Check::MinLength { chars: 13 }, o).is_err());
        assert!(run_check(&Check::MaxLength { chars: 5 }, o).is_err());
        let path = |p: &str, equals| Check::JsonField {
            path: p.into(),
            equals,
        };
        assert!(run_check(&path("meta.lang", None), o).is_ok());
        assert!(run_check(&path("meta.lang", Some(json!("en"))), o).is_ok());
        assert!(run_check(&path("meta.lang", Some(json!("fr"))), o).is_err());
        assert!(run_check(&path("meta.missing", None), o).is_err());
        assert!(run_check(&path("text.deeper", None), o).is_err());
    }

    #[test]
    fn verifier_verdicts() {
        assert_eq!(
            parse_verdict(Some(&json!({"passed": false, "reasons": ["too short"]}))),
            Some((false, vec!["too short".to_string()]))
        );
        assert_eq!(
            parse_verdict(Some(&json!({"text": "{\"passed\": true}"}))),
            Some((true, vec![]))
        );
        assert_eq!(
            parse_verdict(Some(&json!("FAIL: no sources cited"))),
            Some((false, vec!["no sources cited".to_string()]))
        );
        assert_eq!(parse_verdict(Some(&json!("pass"))), Some((true, vec![])));
        assert_eq!(parse_verdict(Some(&json!("looks fine to me"))), None);
        // The design flag, as an object or as JSON text; anything else is not.
        assert!(design_flawed(Some(
            &json!({"passed": false, "design_flawed": true})
        )));
        assert!(design_flawed(Some(
            &json!({"text": "{\"passed\": false, \"design_flawed\": true}"})
        )));
        assert!(!design_flawed(Some(
            &json!({"passed": false, "design_flawed": "yes"})
        )));
        assert!(!design_flawed(Some(&json!({"passed": false}))));
        assert!(!design_flawed(Some(&json!("FAIL: design_flawed"))));
        assert!(!design_flawed(None));
        assert_eq!(parse_verdict(None), None);
    }

    #[test]
    fn verdict_separates_enforced_advisory_and_unchecked() {
        let criteria = vec![
            crit(Some(Check::Contains { text: "a".into() }), true),
            crit(Some(Check::Contains { text: "zzz".into() }), true),
            crit(Some(Check::Contains { text: "zzz".into() }), false),
            crit(None, true),
            crit(None, false),
        ];
        let v = verify(&criteria, Some(&json!("abc")));
        assert_eq!(v.passed.len(), 1);
        assert_eq!(v.failed.len(), 1);
        assert_eq!(v.advisory_failed.len(), 1);
        assert_eq!(v.unchecked.len(), 1);
        assert!(!v.ok());
        assert!(v.feedback().contains("zzz"), "{}", v.feedback());
        let v = verify(&criteria[..1], Some(&json!("abc")));
        assert!(v.ok());
    }
}
