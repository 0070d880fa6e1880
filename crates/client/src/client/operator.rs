//! The operator's actions on a running mission (pause, resume, continue,
//! reject a plan, instruct, settle one task) and the workspace's list of
//! what waits for a person (`GET /v1/attention`).

use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{Client, ClientError, Mission};

/// One thing that waits for a person (`GET /v1/attention`, `MissionView.attention`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AttentionItem {
    /// `plan_approval`, `results_review`, `human_task`, `budget`, `decision` or `tool_approval`.
    pub kind: String,
    /// The mission it belongs to.
    pub mission_id: Option<Uuid>,
    /// The mission's title (or goal).
    pub mission_title: Option<String>,
    /// The task, if it is about one.
    pub task_id: Option<Uuid>,
    /// The task's key, if it is about one.
    pub task_key: Option<String>,
    /// The decision or tool-approval id.
    pub id: Option<Uuid>,
    /// What waits and why, in one sentence.
    pub summary: String,
    /// Since when it waits.
    #[serde(with = "time::serde::rfc3339::option")]
    pub since: Option<OffsetDateTime>,
    /// The verbs that settle it.
    pub actions: Vec<String>,
    /// The command line that settles it.
    pub command: Option<String>,
    /// Fields this client does not name.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `GET /v1/attention`: everything in the workspace waiting for a person.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Attention {
    /// Oldest first.
    pub items: Vec<AttentionItem>,
    /// Fields this client does not name.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `POST /v1/missions/{id}/continue` body: what to do with each failed task.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ContinueMission {
    /// Keys (or ids) of the failed tasks to run again.
    pub retry: Vec<String>,
    /// Keys (or ids) of the failed tasks to skip.
    pub skip: Vec<String>,
    /// Guidance for the next attempts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// Continue only if the mission is still at this version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
}

/// `POST /v1/missions/{id}/tasks/{task}/resolve` body.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ResolveTask {
    /// `complete`, `retry`, `skip` or `fail`.
    pub action: String,
    /// The result, for `complete`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Guidance for the next attempt (`retry`) or the reason (others).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
}

impl Client {
    /// Sends `body` (or none) with `method` to a path and returns the answer
    /// as JSON (`null` for an empty one): the plumbing of the commands whose
    /// answer is printed as it comes.
    pub async fn call(
        &self,
        method: &str,
        segments: &[&str],
        query: &[(&str, String)],
        body: Option<&Value>,
    ) -> Result<Value, ClientError> {
        let method = Method::from_bytes(method.as_bytes())
            .map_err(|e| ClientError::Config(format!("'{method}' is not an HTTP method: {e}")))?;
        let mut url = self.url(segments);
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        let mut req = self.request(method, &url);
        if let Some(b) = body {
            req = req.json(b);
        }
        self.send(req, &url).await
    }

    /// `GET /v1/attention[?mission_id=…]`.
    pub async fn attention(&self, mission: Option<&str>) -> Result<Attention, ClientError> {
        let query: Vec<(&str, String)> = mission
            .map(|m| vec![("mission_id", m.to_owned())])
            .unwrap_or_default();
        self.get(&["v1", "attention"], &query).await
    }

    /// `POST /v1/missions/{id}/pause`.
    pub async fn pause_mission(&self, id: &str) -> Result<Mission, ClientError> {
        self.post::<_, Value>(&["v1", "missions", id, "pause"], None)
            .await
    }

    /// `POST /v1/missions/{id}/resume`.
    pub async fn resume_mission(&self, id: &str) -> Result<Mission, ClientError> {
        self.post::<_, Value>(&["v1", "missions", id, "resume"], None)
            .await
    }

    /// `POST /v1/missions/{id}/continue`: a failed mission runs on.
    pub async fn continue_mission(
        &self,
        id: &str,
        req: &ContinueMission,
    ) -> Result<Mission, ClientError> {
        self.post(&["v1", "missions", id, "continue"], Some(req))
            .await
    }

    /// `POST /v1/missions/{id}/reject-plan`: `body` holds `feedback` (and an optional `plan`).
    pub async fn reject_plan(&self, id: &str, body: &Value) -> Result<Mission, ClientError> {
        self.post(&["v1", "missions", id, "reject-plan"], Some(body))
            .await
    }

    /// `POST /v1/missions/{id}/instructions`: `body` holds `instructions` (and an optional `plan`).
    pub async fn instruct_mission(&self, id: &str, body: &Value) -> Result<Mission, ClientError> {
        self.post(&["v1", "missions", id, "instructions"], Some(body))
            .await
    }

    /// `POST /v1/missions/{id}/tasks/{task}/resolve`.
    pub async fn resolve_task(
        &self,
        id: &str,
        task: &str,
        req: &ResolveTask,
    ) -> Result<Mission, ClientError> {
        self.post(&["v1", "missions", id, "tasks", task, "resolve"], Some(req))
            .await
    }

    /// `POST /v1/missions/{id}/tasks/{task}/cancel`, with an optional reason.
    pub async fn cancel_task(
        &self,
        id: &str,
        task: &str,
        reason: Option<&str>,
    ) -> Result<Mission, ClientError> {
        let body = serde_json::json!({ "reason": reason });
        self.post(
            &["v1", "missions", id, "tasks", task, "cancel"],
            Some(&body),
        )
        .await
    }
}
