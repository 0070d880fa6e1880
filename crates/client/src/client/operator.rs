//! The operator's actions on a running mission (pause, resume, continue,
//! reject a plan, instruct, settle one task) and the workspace's list of
//! what waits for a person (`GET /v1/attention`).

use serde_json::Value;

use super::{Attention, Client, ClientError, ContinueMission, Mission, ResolveTask};

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
        let (mut req, url) = self.request_to(method, segments, query)?;
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
