//! The planning conversation, sized to the model's context.
//!
//! A repair round sends the model's last answer back with its problems; a
//! small model that rambled to its answer cap would make the next prompt
//! nearly as large as the whole context, and the server refuses it ("maximum
//! context length is 4096 tokens"). So the messages are composed per call
//! from their parts, in a [`Shape`] that shrinks until the prompt leaves the
//! answer at least [`MIN_PLAN_TOKENS`]: older repair rounds go first, then
//! the echoed answer is cut (down to [`MIN_ECHO_BYTES`]), then the example
//! methods, then the echo altogether. The answer cap sent is what is left
//! (see `coordinator_llm::context` for the estimate).

use coordinator_llm::{
    ChatMessage,
    context::{answer_budget, estimate_prompt},
    truncate_bytes,
};

use super::PlanRequest;
use super::prompts::{system_prompt, user_prompt};

/// Fewest answer tokens worth asking for: a plan of three short tasks.
pub(super) const MIN_PLAN_TOKENS: u32 = 256;

/// Longest previous answer echoed back to the model in a repair request.
pub(super) const MAX_ECHOED_ANSWER_BYTES: usize = 32 * 1024;

/// Shortest echo kept while other parts can still shrink.
const MIN_ECHO_BYTES: usize = 2 * 1024;

/// Most methods shown as examples.
pub(super) const MAX_METHODS: usize = 3;

/// What stands in for an answer too long to echo within the context.
const OMITTED_ANSWER: &str = "(my previous answer, omitted here: it was too long)";

/// One rejected answer and the repair prompt that answered it.
#[derive(Debug, Clone)]
struct Round {
    answer: String,
    repair: String,
}

/// The parts of the conversation; [`Conversation::fit`] composes them.
#[derive(Debug)]
pub(super) struct Conversation<'r> {
    request: &'r PlanRequest<'r>,
    system: String,
    rounds: Vec<Round>,
}

/// How much of each part goes into one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shape {
    /// Example methods shown.
    pub methods: usize,
    /// The last repair rounds kept.
    pub rounds: usize,
    /// Longest echo of an answer, in bytes (0: omitted).
    pub echo_bytes: usize,
}

impl Shape {
    /// One step smaller, or `None` when nothing is left to cut.
    fn smaller(self) -> Option<Shape> {
        let mut next = self;
        if self.rounds > 1 {
            next.rounds = 1;
        } else if self.rounds == 1 && self.echo_bytes > MIN_ECHO_BYTES {
            next.echo_bytes = (self.echo_bytes / 2).max(MIN_ECHO_BYTES);
        } else if self.methods > 0 {
            next.methods -= 1;
        } else if self.rounds == 1 && self.echo_bytes > 0 {
            next.echo_bytes = 0;
        } else {
            return None;
        }
        Some(next)
    }
}

/// The messages of one request and the answer cap to send with them.
#[derive(Debug)]
pub(super) struct Fitted {
    /// What is sent.
    pub messages: Vec<ChatMessage>,
    /// `max_tokens`.
    pub max_tokens: Option<u32>,
    /// The prompt's estimated tokens.
    pub prompt_estimate: u32,
    /// The shape they were composed in.
    pub shape: Shape,
}

impl<'r> Conversation<'r> {
    /// The first request's parts: the rules and the goal.
    pub fn new(request: &'r PlanRequest<'r>) -> Self {
        Conversation {
            request,
            system: system_prompt(request),
            rounds: Vec::new(),
        }
    }

    /// Adds a rejected answer and the repair prompt listing its problems.
    pub fn rejected(&mut self, answer: &str, repair: String) {
        self.rounds.push(Round {
            answer: answer.to_owned(),
            repair,
        });
    }

    /// Everything, as sent when the context is large or unknown.
    fn full_shape(&self) -> Shape {
        Shape {
            methods: self.request.methods.len().min(MAX_METHODS),
            rounds: self.rounds.len(),
            echo_bytes: MAX_ECHOED_ANSWER_BYTES,
        }
    }

    /// The messages in `shape`.
    pub fn messages(&self, shape: Shape) -> Vec<ChatMessage> {
        let mut messages = vec![
            ChatMessage::system(self.system.clone()),
            ChatMessage::user(user_prompt(self.request, shape.methods)),
        ];
        let kept = self.rounds.len().saturating_sub(shape.rounds);
        for round in &self.rounds[kept..] {
            let echo = truncate_bytes(&round.answer, shape.echo_bytes);
            // An assistant turn stays, so roles keep alternating for the
            // chat templates that insist on it.
            messages.push(ChatMessage::assistant(if echo.is_empty() {
                OMITTED_ANSWER
            } else {
                echo
            }));
            messages.push(ChatMessage::user(round.repair.clone()));
        }
        messages
    }

    /// The largest request that leaves the answer [`MIN_PLAN_TOKENS`] in a
    /// context of `context` tokens (all of it when the size is unknown),
    /// with `cap` lowered to what is left. `smaller` starts from half the
    /// methods, for the retry after the server said the request was too big.
    /// When nothing more can be cut the smallest request goes anyway (the
    /// estimate is pessimistic) and the server has the last word.
    pub fn fit(&self, context: Option<u32>, cap: Option<u32>, smaller: bool) -> Fitted {
        let mut shape = self.full_shape();
        if smaller {
            shape.methods /= 2;
        }
        loop {
            let messages = self.messages(shape);
            let prompt_estimate = estimate_prompt(&messages, None);
            let Some(context) = context else {
                return Fitted {
                    messages,
                    max_tokens: cap,
                    prompt_estimate,
                    shape,
                };
            };
            if let Some(budget) = answer_budget(context, prompt_estimate, cap, MIN_PLAN_TOKENS) {
                return Fitted {
                    messages,
                    max_tokens: Some(budget),
                    prompt_estimate,
                    shape,
                };
            }
            match shape.smaller() {
                Some(next) => shape = next,
                None => {
                    return Fitted {
                        messages,
                        max_tokens: Some(cap.map_or(MIN_PLAN_TOKENS, |c| c.min(MIN_PLAN_TOKENS))),
                        prompt_estimate,
                        shape,
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::MethodHint;
    use super::*;

    fn methods() -> Vec<MethodHint> {
        (0..5)
            .map(|i| MethodHint {
                name: format!("method_{i}"),
                outline: "gather (Gather sources); draft (Draft; after gather)".repeat(4),
            })
            .collect()
    }

    #[test]
    fn an_unknown_context_sends_everything_with_the_configured_cap() {
        let methods = methods();
        let mut request = PlanRequest::new("Zorble the frobnitz");
        request.methods = &methods;
        let mut convo = Conversation::new(&request);
        convo.rejected("first", "fix 1".into());
        convo.rejected("second", "fix 2".into());
        let fitted = convo.fit(None, Some(4096), false);
        assert_eq!(fitted.max_tokens, Some(4096));
        assert_eq!(
            fitted.shape,
            Shape {
                methods: MAX_METHODS,
                rounds: 2,
                echo_bytes: MAX_ECHOED_ANSWER_BYTES
            }
        );
        // system, user, then each round's answer and repair.
        assert_eq!(fitted.messages.len(), 6);
        assert!(fitted.messages[1].content.contains("method_2"));
        assert!(!fitted.messages[1].content.contains("method_3"));
    }

    #[test]
    fn a_large_context_lowers_only_the_cap() {
        let request = PlanRequest::new("Zorble the frobnitz");
        let convo = Conversation::new(&request);
        let fitted = convo.fit(Some(4096), Some(4096), false);
        let left = 4096
            - fitted.prompt_estimate
            - coordinator_llm::context::margin(fitted.prompt_estimate);
        assert_eq!(fitted.max_tokens, Some(left));
        assert!(left < 4096 && left > 2500, "{left}");
    }

    #[test]
    fn a_long_echo_is_cut_before_methods_go_and_the_answer_keeps_room() {
        let methods = methods();
        let mut request = PlanRequest::new("Zorble the frobnitz");
        request.methods = &methods;
        let mut convo = Conversation::new(&request);
        // A rambling answer of ~9,000 tokens, twice.
        let ramble = "{\"tasks\": [".to_owned() + &"x".repeat(31_000);
        convo.rejected(&ramble, "fix 1".into());
        convo.rejected(&ramble, "fix 2".into());
        let fitted = convo.fit(Some(4096), Some(4096), false);
        assert_eq!(fitted.shape.rounds, 1);
        assert!(fitted.shape.echo_bytes <= 8192, "{:?}", fitted.shape);
        assert_eq!(fitted.shape.methods, MAX_METHODS, "the echo is cut first");
        assert_eq!(fitted.messages.len(), 4);
        let budget = fitted.max_tokens.unwrap();
        assert!(budget >= MIN_PLAN_TOKENS, "{budget}");
        assert!(fitted.prompt_estimate + budget <= 4096);
        // A tiny context: everything optional goes, the echo is a placeholder.
        let tiny = convo.fit(Some(1000), Some(4096), false);
        assert_eq!(
            tiny.shape,
            Shape {
                methods: 0,
                rounds: 1,
                echo_bytes: 0
            }
        );
        assert_eq!(tiny.messages[2].content, OMITTED_ANSWER);
        assert!(!tiny.messages[1].content.contains("method_0"));
    }

    #[test]
    fn the_smaller_retry_halves_the_methods_and_too_small_a_context_sends_the_least() {
        let methods = methods();
        let mut request = PlanRequest::new("Zorble the frobnitz");
        request.methods = &methods;
        let convo = Conversation::new(&request);
        assert_eq!(convo.fit(Some(8192), None, true).shape.methods, 1);
        let least = convo.fit(Some(300), Some(4096), false);
        assert_eq!(least.shape.methods, 0);
        assert_eq!(least.max_tokens, Some(MIN_PLAN_TOKENS));
    }
}
