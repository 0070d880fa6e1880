//! Rules for free-text request fields. One [`Text`] value both checks a
//! field and is written into the OpenAPI document (the service's
//! `api::contract` pass), so the document and the check cannot drift.
//!
//! Lengths count characters (Unicode scalar values), as JSON Schema's
//! `minLength`/`maxLength` do, never bytes.

use crate::invalid::Invalid;

/// The rule for one text field: its length in characters, and whether
/// blank text or control characters are refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Text {
    /// Fewest characters (0 or 1 in practice).
    pub min: usize,
    /// Most characters.
    pub max: usize,
    /// Refuse text that is only whitespace.
    pub not_blank: bool,
    /// Refuse control characters (C0, DEL and C1).
    pub no_control: bool,
    /// Refuse whitespace at either end.
    pub trimmed: bool,
}

impl Text {
    /// 1–`max` characters, not blank.
    pub const fn required(max: usize) -> Self {
        Self {
            min: 1,
            max,
            not_blank: true,
            no_control: false,
            trimmed: false,
        }
    }

    /// 0–`max` characters, anything.
    pub const fn optional(max: usize) -> Self {
        Self {
            min: 0,
            max,
            not_blank: false,
            no_control: false,
            trimmed: false,
        }
    }

    /// The same rule, refusing control characters too.
    pub const fn without_control(self) -> Self {
        Self {
            no_control: true,
            ..self
        }
    }

    /// The same rule, refusing whitespace at either end too.
    pub const fn trimmed(self) -> Self {
        Self {
            trimmed: true,
            ..self
        }
    }

    /// Checks `value` of `field`; the message names the field and the rule.
    pub fn check(&self, field: &str, value: &str) -> Result<(), Invalid> {
        let n = value.chars().count();
        let blank = self.not_blank && value.trim().is_empty();
        let padded = self.trimmed && value.trim() != value;
        if n < self.min || n > self.max || blank || padded {
            return Err(Invalid::new(field, self.describe(field)));
        }
        if self.no_control && value.chars().any(is_control) {
            return Err(Invalid::new(
                field,
                format!("{field} must not contain control characters"),
            ));
        }
        Ok(())
    }

    /// Checks each of `values`, naming the list field.
    pub fn check_each(&self, field: &str, values: &[String]) -> Result<(), Invalid> {
        values.iter().try_for_each(|v| {
            self.check(field, v)
                .map_err(|_| Invalid::new(field, format!("each of {}", self.describe(field))))
        })
    }

    /// "reason must be 1–2000 characters", the rule in words.
    pub fn describe(&self, field: &str) -> String {
        let range = if self.min == 0 {
            format!("at most {}", self.max)
        } else {
            format!("{}–{}", self.min, self.max)
        };
        let blank = if self.not_blank { ", not blank" } else { "" };
        let padded = if self.trimmed {
            ", without surrounding spaces"
        } else {
            ""
        };
        format!("{field} must be {range} characters{blank}{padded}")
    }

    /// The JSON Schema `pattern` (ECMA-262, and Python's `re` alike) that
    /// says what the length cannot.
    pub fn pattern(&self) -> Option<String> {
        // `c`: a character the rule allows anywhere; `e`: at either end.
        // Whitespace as Rust's `trim` sees it (Unicode White_Space), spelled
        // out: regex engines disagree on `\s`.
        let c = if self.no_control {
            format!("[^{CONTROL}]")
        } else {
            r"[\s\S]".to_owned()
        };
        let e = if self.no_control {
            format!("[^{WHITE_SPACE}{CONTROL}]")
        } else {
            format!("[^{WHITE_SPACE}]")
        };
        Some(match (self.trimmed, self.not_blank, self.no_control) {
            (false, false, false) => return None,
            (false, true, false) => e,
            (false, false, true) => format!("^{c}*$"),
            (false, true, true) => format!("^{c}*{e}{c}*$"),
            (true, _, _) if self.min == 0 => format!("^({e}({c}*{e})?)?$"),
            (true, _, _) => format!("^{e}({c}*{e})?$"),
        })
    }
}

/// Unicode White_Space (what `str::trim` removes), as a character-class body.
const WHITE_SPACE: &str =
    r"\t\n\u000B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000";

/// The control characters `no_control` refuses, as a character-class body.
const CONTROL: &str = r"\u0000-\u001F\u007F-\u009F";

/// What `no_control` refuses: C0, DEL and C1 ([`char::is_control`]).
pub fn is_control(c: char) -> bool {
    c.is_control()
}

#[cfg(test)]
mod tests {
    use super::Text;

    #[test]
    fn counts_characters_not_bytes() {
        let rule = Text::required(3);
        assert!(rule.check("f", "äöü").is_ok(), "3 characters, 6 bytes");
        assert!(rule.check("f", "äöüß").is_err());
    }

    #[test]
    fn refuses_blank_and_empty_when_required() {
        let rule = Text::required(10);
        assert_eq!(
            rule.check("reason", " \t").unwrap_err().message,
            "reason must be 1–10 characters, not blank"
        );
        assert!(rule.check("reason", "").is_err());
        assert!(Text::optional(10).check("note", "").is_ok());
    }

    #[test]
    fn control_characters_are_refused_only_when_asked() {
        let plain = Text::required(10);
        let strict = plain.without_control();
        assert!(plain.check("key", "a\u{7}b").is_ok());
        let e = strict.check("key", "a\u{7}b").unwrap_err();
        assert_eq!(e.field, "key");
        assert!(e.message.contains("control"));
    }

    #[test]
    fn trimmed_refuses_surrounding_spaces() {
        let rule = Text::required(10).trimmed();
        assert!(rule.check("key", "a b").is_ok());
        assert!(rule.check("key", " a").is_err());
        assert!(rule.check("key", "a\n").is_err());
    }

    #[test]
    fn each_names_the_list() {
        let e = Text::required(2)
            .check_each("skills", &["ok".into(), "toolong".into()])
            .unwrap_err();
        assert_eq!(e.field, "skills");
        assert_eq!(
            e.message,
            "each of skills must be 1–2 characters, not blank"
        );
    }

    #[test]
    fn patterns_say_what_the_flags_say() {
        assert_eq!(Text::optional(5).pattern(), None);
        let not_blank = Text::required(5).pattern().unwrap_or_default();
        assert!(
            not_blank.starts_with(r"[^\t\n") && not_blank.contains(r"\u3000"),
            "{not_blank}"
        );
        let key = Text::required(5).trimmed().without_control().pattern();
        let key = key.unwrap_or_default();
        assert!(key.starts_with(r"^[^\t") && key.ends_with(")?$"), "{key}");
        assert!(Text::optional(5).without_control().pattern().is_some());
    }
}
