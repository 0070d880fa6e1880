//! An attempt's progress through its turns: the bound, what the last turns
//! did, the tokens spent and the tools called. The loop
//! ([`super::agent_loop`]) keeps it; the report ([`super::report`]) reads it.

use std::collections::VecDeque;

use coordinator_llm::Usage;

/// Turns quoted in the error of an attempt that reached the bound.
const RECENT_TURNS: usize = 3;

/// The turn bound and what the last turns did.
#[derive(Debug, Clone)]
pub(super) struct Turns {
    max: u32,
    used: u32,
    recent: VecDeque<String>,
}

impl Turns {
    /// No turns taken yet, at most `max`.
    pub(super) fn new(max: u32) -> Self {
        Turns {
            max,
            used: 0,
            recent: VecDeque::new(),
        }
    }

    /// Takes another turn if the bound allows; whether it did.
    pub(super) fn start(&mut self) -> bool {
        if self.used >= self.max {
            return false;
        }
        self.used += 1;
        true
    }

    /// Turns taken.
    pub(super) fn used(&self) -> u32 {
        self.used
    }

    /// Notes what the current turn did (only the last few are kept).
    pub(super) fn record(&mut self, what: &str) {
        self.recent.push_back(format!("turn {}: {what}", self.used));
        if self.recent.len() > RECENT_TURNS {
            self.recent.pop_front();
        }
    }

    /// The error of an attempt that used every turn without finishing.
    pub(super) fn exhausted(&self) -> String {
        let recent: Vec<&str> = self.recent.iter().map(String::as_str).collect();
        format!(
            "the model used all {} turns (the bound, --max-turns) without calling finish; {}",
            self.max,
            if recent.is_empty() {
                "no turn was recorded".to_owned()
            } else {
                format!("the last turns: {}", recent.join("; "))
            }
        )
    }
}

/// One attempt's progress, for its report.
#[derive(Debug)]
pub(super) struct Progress {
    /// The turns taken and what they did.
    pub turns: Turns,
    /// Tokens over every turn.
    pub usage: Usage,
    /// Coordinator tools called (whatever they answered).
    pub tool_calls: u32,
}
