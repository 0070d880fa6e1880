//! The agent loop: one attempt as a bounded conversation with the model.
//!
//! The model gets the prompt, the agent tools the attempt may call (listed
//! once per attempt) and `finish`. Each turn is one model call; its tool
//! calls run in order and each answer (result or error text, capped) goes
//! back as a `tool` message. The attempt ends when the model calls `finish`
//! (its result is the output), answers without tool calls (the text is the
//! output: models without function calling work too), the provider fails,
//! a tool call is answered `409` (the attempt is no longer live: nothing is
//! reported) or ends the attempt itself (`attempt_ended: true`: a handoff or
//! a blocker; nothing is reported), or the turn bound is reached (a `quality` failure saying what
//! the last turns did). A malformed call (unknown tool, arguments that are
//! not a JSON object, a `finish` without a result) is answered with what was
//! wrong and uses its turn like any other.

use std::{collections::BTreeSet, sync::atomic::Ordering};

use coordinator_llm::{
    CallError, ChatMessage, ChatRequest, Completion, ToolCall, ToolChoice, Usage,
    context::{answer_budget, context_limit_in, estimate_prompt, is_context_error},
    excerpt, json_kind, truncate_bytes,
};
use coordinator_protocol::{DispatchRequest, WorkerReport};
use serde_json::{Map, Value};

use super::{
    MIN_ANSWER_TOKENS, ModelWorker, TEMPERATURE,
    progress::{Progress, Turns},
    prompt, report,
    tools::{self, Called, FINISH},
};
use crate::harness::Attempt;

/// Most bytes of a `finish` summary kept.
const MAX_SUMMARY_BYTES: usize = 500;

/// What one tool call of the model asks for.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Action {
    /// End the attempt with this result.
    Finish {
        /// Text or a JSON object.
        result: Value,
        /// The model's one line on what it did.
        summary: Option<String>,
    },
    /// Call a coordinator tool.
    Call {
        /// The tool.
        name: String,
        /// Its arguments object.
        args: Map<String, Value>,
    },
    /// Nothing runs; this text tells the model what was wrong.
    Refuse(String),
}

/// What `call` asks for, given the coordinator tools offered (`known`).
pub(super) fn classify(call: &ToolCall, known: &BTreeSet<String>) -> Action {
    let name = call.name.as_str();
    if name.is_empty() {
        return Action::Refuse(
            "a tool call without a function name: call one of the tools offered".into(),
        );
    }
    if name != FINISH && !known.contains(name) {
        let offered: Vec<&str> = known.iter().map(String::as_str).chain([FINISH]).collect();
        return Action::Refuse(format!(
            "there is no tool `{}`; the tools are: {}",
            truncate_bytes(name, 100),
            offered.join(", ")
        ));
    }
    let args = match parse_arguments(&call.arguments) {
        Ok(args) => args,
        Err(why) => {
            return Action::Refuse(format!(
                "the arguments of `{name}` {why}; call it again with a JSON object"
            ));
        }
    };
    if name == FINISH {
        finish(args)
    } else {
        Action::Call {
            name: name.to_owned(),
            args,
        }
    }
}

/// The arguments object; empty text counts as `{}` (some servers send that
/// for a call without arguments).
fn parse_arguments(text: &str) -> Result<Map<String, Value>, String> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(args)) => Ok(args),
        Ok(other) => Err(format!("are {}, not an object", json_kind(&other))),
        Err(e) => Err(format!("are not JSON ({e}): {}", excerpt(text))),
    }
}

/// A `finish` call: a non-empty text or object result, an optional summary.
fn finish(mut args: Map<String, Value>) -> Action {
    let summary = match args.remove("summary") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            Some(truncate_bytes(s.trim(), MAX_SUMMARY_BYTES).to_owned()).filter(|s| !s.is_empty())
        }
        Some(other) => {
            return Action::Refuse(format!(
                "`finish`: `summary` must be text, not {}",
                json_kind(&other)
            ));
        }
    };
    match args.remove("result") {
        Some(Value::String(text)) if !text.trim().is_empty() => Action::Finish {
            result: Value::String(text),
            summary,
        },
        Some(Value::Object(object)) if !object.is_empty() => Action::Finish {
            result: Value::Object(object),
            summary,
        },
        None | Some(Value::Null) => Action::Refuse(
            "`finish` needs `result`: the task's result, as text or a JSON object".into(),
        ),
        Some(Value::String(_) | Value::Object(_)) => Action::Refuse(
            "`finish` got an empty result; give the task's result, as text or a JSON object".into(),
        ),
        Some(other) => Action::Refuse(format!(
            "`finish`: `result` must be text or a JSON object, not {}",
            json_kind(&other)
        )),
    }
}

impl ModelWorker {
    /// Runs one attempt to its report; `None` when it must report nothing
    /// (cancelled, or a tool said the attempt is no longer live).
    pub(super) async fn work(
        &self,
        req: &DispatchRequest,
        attempt: &Attempt,
    ) -> Option<WorkerReport> {
        let mut offered = match tools::list(&self.tools_http, &req.callback).await {
            Ok(offered) => offered,
            Err(why) => {
                // The task can still be done without them.
                tracing::warn!(attempt_id = %req.attempt_id, error = %why, "could not list the agent tools; offering finish only");
                Vec::new()
            }
        };
        let known: BTreeSet<String> = offered
            .iter()
            .filter_map(tools::name_of)
            .map(str::to_owned)
            .collect();
        offered.push(tools::finish_tool());
        let mode = prompt::Mode {
            max_turns: self.config.max_turns,
            coordinator_tools: !known.is_empty(),
        };
        let mut messages = prompt::build_messages(req, self.variants.for_request(req), mode);
        let mut progress = Progress {
            turns: Turns::new(self.config.max_turns),
            usage: Usage::default(),
            tool_calls: 0,
        };
        while progress.turns.start() {
            if attempt.is_cancelled() {
                return None;
            }
            let done = match self.call_model(&messages, &offered).await {
                Ok(done) => done,
                Err(err) => return Some(report::call_failed(&self.config, &err, &progress)),
            };
            progress.usage.add(done.usage);
            if done.tool_calls.is_empty() {
                return Some(report::answered(&self.config, done, &progress));
            }
            messages.push(ChatMessage::assistant_calls(
                done.content.clone(),
                done.tool_calls.clone(),
            ));
            let mut did = Vec::with_capacity(done.tool_calls.len());
            for call in &done.tool_calls {
                let answer = match classify(call, &known) {
                    Action::Finish { result, summary } => {
                        return Some(report::finished(
                            &self.config,
                            result,
                            summary,
                            &done,
                            &progress,
                        ));
                    }
                    Action::Refuse(why) => {
                        did.push(format!("{} (refused: {})", shown(&call.name), brief(&why)));
                        why
                    }
                    Action::Call { name, args } => {
                        progress.tool_calls += 1;
                        self.own().tool_calls += 1;
                        match tools::call(&self.tools_http, &req.callback, &name, &args).await {
                            Called::Ok(result) => {
                                did.push(format!("{name} (ok)"));
                                result
                            }
                            Called::Failed(why) => {
                                did.push(format!("{name} (failed: {})", brief(&why)));
                                why
                            }
                            Called::Ended => {
                                self.own().handed_on += 1;
                                tracing::info!(attempt_id = %req.attempt_id, tool = %name, "the agent ended its attempt (handoff or blocker); nothing to report");
                                return None;
                            }
                            Called::Stale => {
                                self.own().stale += 1;
                                tracing::info!(attempt_id = %req.attempt_id, tool = %name, "a tool call says the attempt is no longer live; stopping");
                                return None;
                            }
                        }
                    }
                };
                messages.push(ChatMessage::tool(call.id.clone(), answer));
            }
            progress.turns.record(&did.join(", "));
        }
        Some(report::exhausted(&self.config, &progress))
    }

    /// The context size answers are fitted to: the provider's error's
    /// figure, else the setting, else the provider's report (asked once).
    async fn context_tokens(&self) -> Option<u32> {
        let known = |n: u32| (n > 0).then_some(n);
        if self.config.context_tokens.is_none()
            && !self.probed.swap(true, Ordering::Relaxed)
            && let Some(n) = self.client.discover_context(&self.config.model).await
        {
            tracing::info!(model = %self.config.model, context_tokens = n, "the provider reported its context size");
            // A figure an error named meanwhile is not overwritten.
            let _ =
                self.learnt_context
                    .compare_exchange(0, n, Ordering::Relaxed, Ordering::Relaxed);
        }
        known(self.learnt_context.load(Ordering::Relaxed)).or(self.config.context_tokens)
    }

    /// The answer cap for a prompt of `estimate` tokens: what the context
    /// leaves, at most `--llm-max-tokens`, at least [`MIN_ANSWER_TOKENS`].
    fn answer_cap(&self, context: Option<u32>, estimate: u32) -> u32 {
        let cap = self.config.max_tokens;
        context
            .and_then(|c| answer_budget(c, estimate, Some(cap), MIN_ANSWER_TOKENS))
            .unwrap_or_else(|| {
                if context.is_some() {
                    cap.min(MIN_ANSWER_TOKENS)
                } else {
                    cap
                }
            })
    }

    /// Remembers the context size a context-length error names, or three
    /// quarters of what was `asked` when it names none.
    fn learn_context_from(&self, err: &CallError, asked: u32) {
        let named = match err {
            CallError::Status { body, .. } => context_limit_in(body),
            _ => None,
        };
        let limit = named.unwrap_or((asked / 4).saturating_mul(3).max(MIN_ANSWER_TOKENS));
        self.learnt_context.store(limit, Ordering::Relaxed);
        tracing::warn!(model = %self.config.model, context_tokens = limit, error = %err, "the call did not fit the model's context; sending it once more, smaller");
    }

    /// One model call on the conversation so far, within the per-call timeout
    /// and a model slot, its answer capped at what the context leaves. A
    /// server that refuses `tools` is asked again without them, and never
    /// given them again; one that says the call does not fit its context is
    /// asked once more with the answer cap its limit leaves.
    async fn call_model(
        &self,
        messages: &[ChatMessage],
        offered: &[Value],
    ) -> Result<Completion, CallError> {
        // The permit lives only for the call, so the slot is free during tool calls.
        let _permit = self
            .slots
            .acquire()
            .await
            .map_err(|_| CallError::Transport("the worker is shutting down".into()))?;
        let mut with_tools = !self.no_tools.load(Ordering::Relaxed);
        let mut shrunk = false;
        loop {
            self.own().calls += 1;
            let tools = with_tools.then_some(offered);
            let estimate = estimate_prompt(messages, tools);
            let max_tokens = self.answer_cap(self.context_tokens().await, estimate);
            let body = ChatRequest {
                model: &self.config.model,
                messages,
                temperature: TEMPERATURE,
                max_tokens: Some(max_tokens),
                response_format: None,
                tools,
                tool_choice: with_tools.then_some(ToolChoice::Auto),
            };
            let outcome = self.client.send(&body).await;
            match &outcome {
                Err(err) if !shrunk && is_context_error(err) => {
                    self.learn_context_from(err, estimate.saturating_add(max_tokens));
                    shrunk = true;
                }
                Err(err) if with_tools && err.rejects_tools() => {
                    tracing::info!(model = %self.config.model, error = %err, "the provider refused tools; asking without them from now on");
                    self.no_tools.store(true, Ordering::Relaxed);
                    with_tools = false;
                }
                Ok(done) => {
                    // Spent whatever happens to the answer next.
                    let mut own = self.own();
                    own.prompt_tokens += done.usage.prompt_tokens;
                    own.completion_tokens += done.usage.completion_tokens;
                    return outcome;
                }
                Err(_) => return outcome,
            }
        }
    }
}

/// A tool name as the model wrote it, for the turn log.
fn shown(name: &str) -> String {
    if name.is_empty() {
        "(unnamed)".to_owned()
    } else {
        truncate_bytes(name, 60).to_owned()
    }
}

/// The start of an error text, for the turn log.
fn brief(why: &str) -> String {
    let first = why.lines().next().unwrap_or_default();
    let cut = truncate_bytes(first, 120);
    if cut.len() < why.len() {
        format!("{cut}…")
    } else {
        cut.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    fn known() -> BTreeSet<String> {
        ["blackboard_read", "my_task"].map(String::from).into()
    }

    fn refusal(action: Action) -> String {
        match action {
            Action::Refuse(why) => why,
            other => panic!("a refusal expected, got {other:?}"),
        }
    }

    #[test]
    fn calls_of_offered_tools_carry_their_arguments() {
        assert_eq!(
            classify(&call("blackboard_read", r#"{"key": "k"}"#), &known()),
            Action::Call {
                name: "blackboard_read".into(),
                args: json!({"key": "k"}).as_object().cloned().unwrap(),
            }
        );
        // No arguments at all is an empty object.
        assert_eq!(
            classify(&call("my_task", " "), &known()),
            Action::Call {
                name: "my_task".into(),
                args: Map::new(),
            }
        );
    }

    #[test]
    fn malformed_calls_are_refused_with_the_reason() {
        let why = refusal(classify(&call("delete_everything", "{}"), &known()));
        assert_eq!(
            why,
            "there is no tool `delete_everything`; the tools are: blackboard_read, my_task, finish"
        );
        let why = refusal(classify(&call("my_task", "{oops"), &known()));
        assert!(
            why.starts_with("the arguments of `my_task` are not JSON (")
                && why.ends_with("{oops; call it again with a JSON object"),
            "{why}"
        );
        let why = refusal(classify(&call("my_task", "[1]"), &known()));
        assert_eq!(
            why,
            "the arguments of `my_task` are an array, not an object; call it again with a JSON object"
        );
        assert!(refusal(classify(&call("", "{}"), &known())).contains("without a function name"));
    }

    #[test]
    fn finish_needs_a_text_or_object_result() {
        assert_eq!(
            classify(
                &call("finish", r#"{"result": "done", "summary": " wrote it "}"#),
                &known()
            ),
            Action::Finish {
                result: json!("done"),
                summary: Some("wrote it".into()),
            }
        );
        assert_eq!(
            classify(&call("finish", r#"{"result": {"n": 1}}"#), &BTreeSet::new()),
            Action::Finish {
                result: json!({"n": 1}),
                summary: None,
            }
        );
        for (args, expected) in [
            ("{}", "needs `result`"),
            (r#"{"result": null}"#, "needs `result`"),
            (r#"{"result": "  "}"#, "empty result"),
            (r#"{"result": {}}"#, "empty result"),
            (r#"{"result": 3}"#, "not a number"),
            (r#"{"result": "x", "summary": 1}"#, "`summary` must be text"),
        ] {
            let why = refusal(classify(&call("finish", args), &known()));
            assert!(why.contains(expected), "{args}: {why}");
        }
    }

    #[test]
    fn the_bound_is_never_exceeded_and_the_last_turns_are_told() {
        let mut turns = Turns::new(4);
        let mut taken = 0;
        while turns.start() {
            taken += 1;
            turns.record(&format!("called t{taken} (ok)"));
        }
        assert_eq!((taken, turns.used()), (4, 4));
        assert!(!turns.start(), "no turn past the bound");
        assert_eq!(turns.used(), 4);
        assert_eq!(
            turns.exhausted(),
            "the model used all 4 turns (the bound, --max-turns) without calling finish; the last \
             turns: turn 2: called t2 (ok); turn 3: called t3 (ok); turn 4: called t4 (ok)"
        );
        assert!(Turns::new(1).exhausted().contains("no turn was recorded"));
        let mut none = Turns::new(0);
        assert!(!none.start());
    }

    #[test]
    fn turn_log_entries_are_short() {
        assert_eq!(shown(""), "(unnamed)");
        assert_eq!(brief("one\ntwo"), "one…");
        assert_eq!(brief(&"x".repeat(500)).len(), 120 + '…'.len_utf8());
        assert_eq!(brief("short"), "short");
    }
}
