//! The one shape of "this field of the request is wrong", shared by every
//! use case's error enum so each can say which field and why without
//! knowing how the edge (HTTP, MCP, CLI) reports it.

/// A request field that fails validation: which field, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Invalid {
    /// The field's name as the client sent it (`to`, `options[2].label`).
    pub field: String,
    /// What is wrong, for a person.
    pub message: String,
    /// Set for a rule no JSON Schema can state (a reference to another part
    /// of the same request): the request is well-formed but cannot be
    /// carried out, answered 422 with this code instead of 400.
    pub unprocessable: Option<&'static str>,
}

impl Invalid {
    /// `field` is wrong because of `message`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
            unprocessable: None,
        }
    }

    /// `field` breaks a rule between parts of the request (422 `code`).
    pub fn unprocessable(
        code: &'static str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            unprocessable: Some(code),
            ..Self::new(field, message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Invalid;

    #[test]
    fn displays_the_message_and_keeps_the_field() {
        let e = Invalid::new("to", "to must be 1–128 characters");
        assert_eq!(e.to_string(), "to must be 1–128 characters");
        assert_eq!(e.field, "to");
    }
}
