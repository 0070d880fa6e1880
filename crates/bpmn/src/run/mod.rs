//! Token semantics: running a process instance, pure.
//!
//! The service keeps an [`Instance`] in its database and, in one transaction
//! per command, loads it, calls [`start`] or [`apply`], and stores the new
//! state and carries out the [`Effect`]s (hand a task to an agent, schedule
//! a durable timer, subscribe to a message...). Nothing here reads a clock or
//! draws a random number: the caller passes `now`, ids are counters kept in
//! the state, so the same state and command always give the same result.
//!
//! After every command, tokens move on through everything that needs no
//! outside input (gateways, throw events, none end events, the start of
//! subprocesses) until every token waits or the instance ends. A problem the
//! model or the data causes (a condition that does not evaluate, no flow to
//! take, an unhandled error, an unsupported element) is an *incident*: the
//! token stops in [`Wait::Incident`], an [`Effect::Incident`] tells a person,
//! who may fix variables ([`Command::SetVariables`]) and [`Command::Retry`].
//! When every token left is at an incident the instance is
//! [`InstanceStatus::Failed`]. Two runaway cases are incidents too: joins
//! that can never fire because nothing else can move (a deadlock: retrying
//! goes on without the missing branches) and more than [`MAX_STEPS`] nodes
//! entered in one command (a loop that never waits).
//! A command that does not fit the state is a [`RunError`] and changes
//! nothing. Effects are listed in the order they happened and must be
//! carried out in that order (a timer may be scheduled, then cancelled).
//!
//! # Semantics, briefly
//!
//! - Tasks hand work out ([`Effect::StartWork`]): user and manual tasks to a
//!   person, the others to an agent of the node's lane (its `role`
//!   attribute, any namespace, names the role). A receive task waits for its
//!   message. A send task is worked like a service task and sends its
//!   message with the completion's output as payload. A script task runs
//!   only assignments `name = expression` in the condition language, one a
//!   line; anything else is an incident (no code is ever run). Each
//!   activity instance has a token id of its own, never reused, so a stale
//!   answer cannot complete a later task.
//! - Messages are named by their definition's name (else id); a
//!   `correlationKey` attribute (any namespace: on the event, its
//!   definition or the message, as Zeebe writes it) is an expression giving
//!   the key. A message goes to the first token waiting for it.
//! - Outputs: an object's keys merge into the process variables, another
//!   value is stored under the node's id, `null` sets nothing (Camunda
//!   propagates variables to the process the same way). Inside an instance
//!   of a multi-instance subprocess they are also kept as that instance's
//!   own variables, which its nodes read first and which make its result.
//! - Flows out of an activity: every flow without condition, every flow
//!   whose condition holds; the default flow only when no other is taken;
//!   none at all is an incident (but no outgoing flow ends the token).
//! - Gateways: exclusive takes the first flow that holds in document order,
//!   else the default; parallel forks all and joins one token per incoming
//!   flow; inclusive forks every flow that holds and joins once no token of
//!   the scope upstream can still reach it; event-based waits on the catch
//!   events and receive tasks after it, the first to happen wins. Complex
//!   gateways are an incident.
//! - Events: none, message and timer starts; none, terminate, error,
//!   message and signal ends; timer, message, signal and link catches;
//!   none, message, signal and link throws; timer, message, signal and
//!   error boundaries, interrupting or not. A signal thrown here reaches
//!   this instance's listeners at once, so the service delivers
//!   [`Effect::BroadcastSignal`] to the *other* instances. A terminate end
//!   ends its scope: the instance (status completed, as Camunda records
//!   it; [`Command::Cancel`] is what terminates) or the subprocess it is
//!   in, which then completes. A BPMN error (an error end event, or
//!   [`Command::Fail`]) is caught by the nearest error boundary or error
//!   event subprocess outward (a matching code before a catch-all), which
//!   cancels what it interrupts; none is an incident. Timers are ISO 8601
//!   (see [`timer`]), possibly as an expression giving that text.
//!   Conditional, escalation, compensation and cancel events, transactions
//!   and ad hoc subprocesses are incidents when reached (conditional and
//!   compensation boundaries never fire).
//! - Subscriptions fire once: the service drops a timer, message or signal
//!   subscription when it delivers it; a listener that keeps listening (a
//!   non-interrupting boundary, an event subprocess that is not
//!   interrupting, a timer cycle) is subscribed again by a new effect.
//! - Embedded subprocesses run in a scope of their own; event subprocesses
//!   (timer, message, signal and error starts) listen while their scope
//!   runs. Call activities emit [`Effect::CallProcess`] and wait for
//!   [`Command::Complete`] with the child's variables.
//! - Multi-instance activities (parallel or sequential, over a collection or
//!   a cardinality, with a completion condition) give each instance
//!   `loopCounter` (from 0) and the element variable, and collect the
//!   instances' outputs in `<node id>_results`, in instance order (`null`
//!   for an instance cut short). Standard loops are an incident.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;

use crate::model::Definitions;

pub use engine::MAX_STEPS;
pub use multi::MAX_INSTANCES;

mod commands;
mod engine;
mod events;
mod graph;
mod multi;
pub mod schedule;
pub mod timer;
mod work;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_events;
#[cfg(test)]
mod tests_multi;

/// The state of one running (or finished) process instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    /// The process it runs.
    pub process_id: String,
    /// Whether it runs.
    pub status: InstanceStatus,
    /// The process variables.
    pub variables: Map<String, Value>,
    /// Where it is: every token, waiting.
    pub tokens: Vec<Token>,
    /// Open subprocess and multi-instance scopes (the process is scope 0).
    pub scopes: Vec<Scope>,
    /// The next id for a token or a scope.
    pub next_id: u64,
    /// The last history sequence number used.
    pub seq: u64,
    /// What happened, in order.
    pub history: Vec<Step>,
}

/// The life of an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InstanceStatus {
    /// Tokens wait for outside input.
    Running,
    /// Every token stopped at an incident; a person must look.
    Failed,
    /// It reached its end (a terminate end event included).
    Completed,
    /// It was cancelled.
    Terminated,
}

/// A token: where a path of the instance is and what it waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Token {
    /// Its id; also the id of the activity instance it runs.
    pub id: u64,
    /// The scope it is in (0: the process).
    pub scope: u64,
    /// The node it is at.
    pub node: String,
    /// What it waits for.
    pub wait: Wait,
    /// For a listener (a boundary event, an event gateway's option, an
    /// event subprocess's start): what it listens for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attached: Option<Attached>,
    /// Variables of this token only (a multi-instance instance's element
    /// and `loopCounter`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub locals: Map<String, Value>,
    /// The loop counter of a multi-instance instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<u64>,
}

/// What a listener token is attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Attached {
    /// An activity token (boundary event) or an event gateway token.
    Token(u64),
    /// A scope (the start event of an event subprocess in it).
    Scope(u64),
}

/// What a token waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Wait {
    /// About to enter its node (only while a command runs).
    Ready,
    /// A task is out with an agent or a person.
    Work,
    /// A timer.
    Timer {
        /// When it fires.
        #[serde(with = "time::serde::rfc3339")]
        due: OffsetDateTime,
        /// How many times it fired before (timer cycles).
        #[serde(default)]
        fired: u32,
    },
    /// A message.
    Message {
        /// The message name.
        name: String,
        /// The correlation key it must carry, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        correlation: Option<String>,
    },
    /// A signal.
    Signal {
        /// The signal name.
        name: String,
    },
    /// An event-based gateway; its options are listener tokens.
    EventGateway {
        /// The nodes it waits on.
        options: Vec<String>,
    },
    /// A joining gateway, for the other branches.
    Join {
        /// The flow it arrived by.
        flow: String,
    },
    /// A call activity, for the called process.
    Called,
    /// A subprocess, for its scope to finish.
    SubProcess {
        /// The scope.
        scope: u64,
    },
    /// A multi-instance activity, for its instances.
    MultiInstance {
        /// The scope holding the instances.
        scope: u64,
    },
    /// Stopped: a person must look.
    Incident {
        /// What went wrong.
        message: String,
        /// What [`Command::Retry`] does.
        resume: Resume,
    },
}

/// How a token at an incident goes on when retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resume {
    /// Enter the node again.
    Enter,
    /// Leave the node again (choose the outgoing flows anew).
    Leave,
    /// Arm the listener again.
    Arm,
}

/// A subprocess or multi-instance scope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scope {
    /// Its id.
    pub id: u64,
    /// The scope around it (0: the process).
    pub parent: u64,
    /// The token waiting for it in the parent scope.
    pub token: u64,
    /// The activity it runs.
    pub node: String,
    /// Its own variables (an instance's, in a multi-instance subprocess).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub locals: Map<String, Value>,
    /// What kind of scope.
    pub kind: ScopeKind,
}

/// The kinds of scope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ScopeKind {
    /// An embedded (or event) subprocess's body.
    SubProcess,
    /// The instances of a multi-instance activity.
    MultiInstance(MultiState),
}

/// The progress of a multi-instance activity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MultiState {
    /// One instance after the other.
    pub sequential: bool,
    /// The collection's items, when it iterates one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<Value>>,
    /// How many instances in all.
    pub total: u64,
    /// How many were started.
    pub started: u64,
    /// How many completed.
    pub completed: u64,
    /// Each instance's output, by loop counter.
    pub results: Vec<Value>,
}

/// One entry of an instance's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// Its sequence number, from 1.
    pub seq: u64,
    /// The token.
    pub token: u64,
    /// The token's scope.
    pub scope: u64,
    /// The node or flow id.
    pub element: String,
    /// What happened.
    pub what: StepKind,
}

/// What a history step records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// A token entered the node.
    Entered,
    /// The node completed.
    Completed,
    /// The node was cancelled (interrupted, terminated).
    Cancelled,
    /// A token took the sequence flow.
    Taken,
    /// The token stopped at an incident.
    Incident,
}

/// Something from outside for the instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command {
    /// A task's work (or a called process) is done.
    Complete {
        /// The token waiting for it.
        token: u64,
        /// Its output (see the module documentation for where it goes).
        #[serde(default)]
        output: Value,
    },
    /// A task's work (or a called process) failed: a BPMN error.
    Fail {
        /// The token waiting for it.
        token: u64,
        /// The error code boundary events match on; `None` only reaches
        /// catch-all boundaries.
        #[serde(default)]
        error_code: Option<String>,
        /// What happened.
        message: String,
    },
    /// A scheduled timer is due.
    TimerDue {
        /// The token it was scheduled for.
        token: u64,
    },
    /// A message arrived for this instance.
    Message {
        /// Its name.
        name: String,
        /// Its correlation key.
        #[serde(default)]
        correlation: Option<String>,
        /// Its content, an output of the catching node.
        #[serde(default)]
        payload: Value,
    },
    /// A signal was broadcast.
    Signal {
        /// Its name.
        name: String,
        /// Its content, an output of each catching node.
        #[serde(default)]
        payload: Value,
    },
    /// Set process variables (keys of the object), e.g. to fix an incident.
    SetVariables {
        /// The values.
        variables: Map<String, Value>,
    },
    /// Go on from an incident.
    Retry {
        /// The token at the incident.
        token: u64,
    },
    /// Cancel the whole instance.
    Cancel,
}

/// What the service must do after a command, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Effect {
    /// Hand a task out; answer with [`Command::Complete`] or [`Command::Fail`].
    StartWork {
        /// The token to answer for.
        token: u64,
        /// The task's id.
        node: String,
        /// The task's name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// The task's documentation: what to do.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        documentation: Option<String>,
        /// Who does it.
        work: Work,
        /// The variables the task sees.
        inputs: Value,
    },
    /// Withdraw a task handed out.
    CancelWork {
        /// Its token.
        token: u64,
    },
    /// Schedule a durable timer; answer with [`Command::TimerDue`].
    ScheduleTimer {
        /// The token.
        token: u64,
        /// When.
        #[serde(with = "time::serde::rfc3339")]
        due: OffsetDateTime,
    },
    /// Drop a scheduled timer.
    CancelTimer {
        /// Its token.
        token: u64,
    },
    /// Wait for a message; deliver it with [`Command::Message`].
    Subscribe {
        /// The token.
        token: u64,
        /// The message name.
        message: String,
        /// The correlation key it must carry, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        correlation: Option<String>,
    },
    /// Wait for a signal; deliver it with [`Command::Signal`].
    SubscribeSignal {
        /// The token.
        token: u64,
        /// The signal name.
        signal: String,
    },
    /// Drop a message or signal subscription.
    Unsubscribe {
        /// Its token.
        token: u64,
    },
    /// Send a message (message end and throw events, send tasks).
    SendMessage {
        /// The token sending it (a send task's answers to its work).
        token: u64,
        /// The node sending it.
        from_node: String,
        /// The message's id in the definitions.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_ref: Option<String>,
        /// The message's name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// Its content.
        payload: Value,
    },
    /// Broadcast a signal to the other instances.
    BroadcastSignal {
        /// The node throwing it.
        from_node: String,
        /// The signal name.
        name: String,
        /// Its content.
        payload: Value,
    },
    /// Start the called process; answer with [`Command::Complete`] (the
    /// child's variables) or [`Command::Fail`].
    CallProcess {
        /// The token.
        token: u64,
        /// The call activity.
        node: String,
        /// The process to start.
        called_element: String,
        /// The variables it starts with.
        variables: Value,
    },
    /// Cancel a called process.
    CancelProcess {
        /// The call activity's token.
        token: u64,
    },
    /// The instance completed.
    Completed,
    /// The instance was cancelled.
    Terminated,
    /// A token stopped; a person must look.
    Incident {
        /// The token.
        token: u64,
        /// Where.
        node: String,
        /// What went wrong.
        message: String,
    },
}

/// Who works a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Work {
    /// An agent: tasks, service, send and business rule tasks.
    Agent {
        /// The lane's name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lane: Option<String>,
        /// The lane's role.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
        /// `task`, `service`, `send` or `business_rule`.
        task_kind: String,
    },
    /// A person: user and manual tasks.
    Human {
        /// The lane's name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lane: Option<String>,
        /// The lane's role.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
        /// `user` or `manual`.
        task_kind: String,
        /// The form's fields (`formField` extension elements).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        form_fields: Vec<FormField>,
    },
}

/// A field of a user task's form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FormField {
    /// The variable it sets.
    pub id: String,
    /// Its label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Its type (`string`, `boolean`, `long`, `enum`...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// Why a start or a command does not fit; nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// No such process in the definitions.
    #[error("no process '{0}'")]
    UnknownProcess(String),
    /// The process to run must be named.
    #[error("several processes ({0}); name the one to start")]
    AmbiguousProcess(String),
    /// The start event named is not a top-level start event of the process.
    #[error("'{0}' is not a start event of the process")]
    UnknownStartEvent(String),
    /// The process cannot start without naming a start event.
    #[error("process '{0}' has no none start event; name the start event")]
    NoStartEvent(String),
    /// The instance does not take this command in its state.
    #[error("the instance is {0:?}")]
    NotRunning(InstanceStatus),
    /// No such token.
    #[error("no token {0}")]
    UnknownToken(u64),
    /// The token waits for something else.
    #[error("token {token} waits for {waits}, not {wanted}")]
    NotWaiting {
        /// The token.
        token: u64,
        /// What it waits for.
        waits: String,
        /// What the command needs it to wait for.
        wanted: &'static str,
    },
    /// The timer is not due yet.
    #[error("token {token}'s timer is due at {due}")]
    NotDue {
        /// The token.
        token: u64,
        /// When it is due.
        due: String,
    },
    /// No token waits for this message.
    #[error("no token waits for message '{0}' with this correlation")]
    NoSubscriber(String),
}

/// Starts an instance of `process_id` (the only process when `None`) at
/// `start_event` (the none start event when `None`) with `variables`.
pub fn start(
    defs: &Definitions,
    process_id: Option<&str>,
    start_event: Option<&str>,
    variables: Map<String, Value>,
    now: OffsetDateTime,
) -> Result<(Instance, Vec<Effect>), RunError> {
    engine::start(defs, process_id, start_event, variables, now)
}

/// Applies a command; on `Err` the instance is left exactly as it was.
pub fn apply(
    defs: &Definitions,
    inst: &mut Instance,
    cmd: Command,
    now: OffsetDateTime,
) -> Result<Vec<Effect>, RunError> {
    engine::apply(defs, inst, cmd, now)
}

impl Instance {
    /// The nodes tokens are at (listeners and transient tokens excluded),
    /// in token order, without repeats.
    pub fn active_nodes(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for t in self.tokens.iter().filter(|t| t.attached.is_none()) {
            if !out.contains(&t.node.as_str()) {
                out.push(&t.node);
            }
        }
        out
    }

    /// The nodes completed, in the order they completed (repeats kept).
    pub fn completed_nodes(&self) -> Vec<&str> {
        self.history
            .iter()
            .filter(|s| s.what == StepKind::Completed)
            .map(|s| s.element.as_str())
            .collect()
    }

    /// The open incidents: token, node and message.
    pub fn incidents(&self) -> Vec<(u64, &str, &str)> {
        self.tokens
            .iter()
            .filter_map(|t| match &t.wait {
                Wait::Incident { message, .. } => Some((t.id, t.node.as_str(), message.as_str())),
                _ => None,
            })
            .collect()
    }
}

impl Wait {
    /// A short name for messages.
    pub fn describe(&self) -> &'static str {
        match self {
            Self::Ready => "nothing",
            Self::Work => "work",
            Self::Timer { .. } => "a timer",
            Self::Message { .. } => "a message",
            Self::Signal { .. } => "a signal",
            Self::EventGateway { .. } => "an event",
            Self::Join { .. } => "other branches",
            Self::Called => "a called process",
            Self::SubProcess { .. } => "its subprocess",
            Self::MultiInstance { .. } => "its instances",
            Self::Incident { .. } => "a person (incident)",
        }
    }

    /// Whether it waits for something from outside (not a join, a scope or an incident).
    pub fn is_active(&self) -> bool {
        matches!(
            self,
            Self::Work
                | Self::Timer { .. }
                | Self::Message { .. }
                | Self::Signal { .. }
                | Self::Called
                | Self::Ready
        )
    }
}
