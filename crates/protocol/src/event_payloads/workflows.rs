//! Payloads of running BPMN workflows' events: workspace events written in
//! the transaction that moves the instance, carrying where it stands, so a
//! subscriber (the board's diagram) can mark the elements without reading
//! the instance back.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

payload_kind! {
    WorkflowStarted => WorkflowStarted,
    WorkflowAdvanced => WorkflowAdvanced,
    WorkflowEnded => WorkflowEnded,
}

/// Where an instance stands, as its events carry it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkflowSnapshot {
    /// The instance.
    pub instance_id: Uuid,
    /// Its workflow.
    pub workflow_id: Uuid,
    /// The version it runs.
    pub version: i32,
    /// The process.
    pub process_id: String,
    /// `running`, `completed`, `terminated` or `failed`.
    pub status: String,
    /// Nodes with a token.
    pub active: Vec<String>,
    /// Nodes completed at least once.
    pub completed: Vec<String>,
    /// Tokens stopped for a person: `{token, node, message}`.
    pub incidents: Vec<Value>,
}

/// `workflow.started`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkflowStarted {
    /// Where it stands after its first steps.
    #[serde(flatten)]
    pub snapshot: WorkflowSnapshot,
    /// The calling instance, for a called process.
    pub parent_id: Option<Uuid>,
}

/// `workflow.advanced`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkflowAdvanced {
    /// Where it stands now.
    #[serde(flatten)]
    pub snapshot: WorkflowSnapshot,
    /// What moved it (`complete`, `fail`, `timer_due`, `message`, `signal`, `retry`, `set_variables`, `cancel`).
    pub command: String,
}

/// `workflow.ended`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkflowEnded {
    /// Where it ended.
    #[serde(flatten)]
    pub snapshot: WorkflowSnapshot,
}
