//! A typed client of the coordinator's REST API, used by the CLI.
//!
//! Every call carries the bearer token and a timeout; a refusal comes back
//! as [`ClientError::Api`] with the service's stable `code` and `message`,
//! anything else that is not a success as a readable [`ClientError`].
//! Response types keep the fields they do not name (`extra`), so printing
//! one as JSON shows everything the service sent.

mod documents;
mod operator;
pub mod sse;
mod types;

use std::{collections::BTreeMap, time::Duration};

use reqwest::{Method, RequestBuilder, Url};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;
use uuid::Uuid;

use self::sse::{EventStream, ReconnectPolicy};
pub use self::types::*;

/// Default base URL of the service.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";

/// Default time one API call may take (planning with an LLM can be slow).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Bytes of a non-JSON error body quoted in an error.
const QUOTED_BODY: usize = 300;

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The service refused: its JSON error body.
    #[error("{code} (HTTP {status}): {message}")]
    Api {
        /// HTTP status.
        status: u16,
        /// The service's stable error code.
        code: String,
        /// What is wrong, for a person.
        message: String,
        /// Structured detail (problems, fields…).
        details: Value,
    },
    /// A failure status without the service's JSON error (a proxy, a crash…).
    #[error("HTTP {status} from {url}: {body}")]
    Http {
        /// HTTP status.
        status: u16,
        /// What was called.
        url: String,
        /// The start of the body.
        body: String,
    },
    /// No answer: refused connection, DNS, TLS, timeout.
    #[error("cannot reach the coordinator at {url}: {message}")]
    Transport {
        /// What was called.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// An answer that is not what the API promises.
    #[error("unexpected answer from {url}: {message}")]
    Decode {
        /// What was called.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The client cannot be built (bad base URL).
    #[error("{0}")]
    Config(String),
}

impl ClientError {
    /// Whether the service answered and said no (an HTTP error status).
    pub fn is_refusal(&self) -> bool {
        matches!(self, ClientError::Api { .. } | ClientError::Http { .. })
    }

    fn transport(url: &Url, e: &reqwest::Error) -> ClientError {
        let message = if e.is_timeout() {
            format!("timed out ({})", error_chain(e))
        } else {
            error_chain(e)
        };
        ClientError::Transport {
            url: url.to_string(),
            message,
        }
    }

    /// Reads an error response: the service's JSON error if it is one.
    async fn from_response(resp: reqwest::Response, url: &Url) -> ClientError {
        let status = resp.status().as_u16();
        let body = match resp.bytes().await {
            Ok(b) => b,
            Err(e) => return ClientError::transport(url, &e),
        };
        parse_error_body(status, url, &body)
    }
}

/// Turns an error status and body into a [`ClientError`].
fn parse_error_body(status: u16, url: &Url, body: &[u8]) -> ClientError {
    #[derive(Deserialize)]
    struct Envelope {
        error: Body,
    }
    #[derive(Deserialize)]
    struct Body {
        code: String,
        #[serde(default)]
        message: String,
        #[serde(default)]
        details: Value,
    }
    match serde_json::from_slice::<Envelope>(body) {
        Ok(Envelope { error }) => ClientError::Api {
            status,
            code: error.code,
            message: error.message,
            details: error.details,
        },
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            let mut quoted: String = text.chars().take(QUOTED_BODY).collect();
            if quoted.len() < text.len() {
                quoted.push('…');
            }
            if quoted.is_empty() {
                quoted = "(empty body)".to_owned();
            }
            ClientError::Http {
                status,
                url: url.to_string(),
                body: quoted,
            }
        }
    }
}

/// An error and its sources on one line (reqwest hides the cause in them).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// A client of one coordinator.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: Url,
    token: Option<String>,
    timeout: Duration,
}

impl Client {
    /// A client of the service at `base_url` (e.g. `http://127.0.0.1:8080`).
    pub fn new(base_url: &str, token: Option<String>) -> Result<Client, ClientError> {
        let base = Url::parse(base_url.trim())
            .map_err(|e| ClientError::Config(format!("'{base_url}' is not a URL: {e}")))?;
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
            return Err(ClientError::Config(format!(
                "'{base_url}' must be an http(s) URL with a host"
            )));
        }
        if base.cannot_be_a_base() {
            return Err(ClientError::Config(format!(
                "'{base_url}' cannot be a base URL"
            )));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("coordinator-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                ClientError::Config(format!("cannot build HTTP client: {}", error_chain(&e)))
            })?;
        Ok(Client {
            http,
            base,
            token: token.filter(|t| !t.trim().is_empty()),
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// Sets the time one call may take (streams are not limited by it).
    pub fn with_timeout(mut self, timeout: Duration) -> Client {
        self.timeout = timeout;
        self
    }

    /// The base URL.
    pub fn base_url(&self) -> &Url {
        &self.base
    }

    /// Whether a token is configured.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// The base URL with `segments` appended, each percent-encoded.
    pub fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// [`Client::url`] with `query` appended.
    fn url_query(&self, segments: &[&str], query: &[(&str, String)]) -> Url {
        let mut url = self.url(segments);
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        url
    }

    /// A request with `method` named as text (`"POST"`) to a path and query,
    /// with its URL (for errors).
    fn request_to(
        &self,
        method: &str,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> Result<(RequestBuilder, Url), ClientError> {
        let method = Method::from_bytes(method.as_bytes())
            .map_err(|e| ClientError::Config(format!("'{method}' is not an HTTP method: {e}")))?;
        let url = self.url_query(segments, query);
        Ok((self.request(method, &url), url))
    }

    fn request(&self, method: Method, url: &Url) -> RequestBuilder {
        let req = self.http.request(method, url.clone()).timeout(self.timeout);
        match &self.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    }

    /// Sends `req`; the body of a success as `T`.
    async fn send<T: DeserializeOwned>(
        &self,
        req: RequestBuilder,
        url: &Url,
    ) -> Result<T, ClientError> {
        let bytes = self.send_raw(req, url).await?;
        let bytes = if bytes.is_empty() {
            &b"null"[..]
        } else {
            &bytes
        };
        serde_json::from_slice(bytes).map_err(|e| ClientError::Decode {
            url: url.to_string(),
            message: format!("the body is not the expected JSON: {e}"),
        })
    }

    /// Sends `req`; the body of a success as bytes.
    async fn send_raw(&self, req: RequestBuilder, url: &Url) -> Result<Vec<u8>, ClientError> {
        let resp = req
            .send()
            .await
            .map_err(|e| ClientError::transport(url, &e))?;
        if !resp.status().is_success() {
            return Err(ClientError::from_response(resp, url).await);
        }
        resp.bytes()
            .await
            .map(|b| b.to_vec())
            .map_err(|e| ClientError::transport(url, &e))
    }

    /// `GET` a path; the answer as `T`.
    pub async fn get<T: DeserializeOwned>(
        &self,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> Result<T, ClientError> {
        let url = self.url_query(segments, query);
        self.send(self.request(Method::GET, &url), &url).await
    }

    /// `POST` a JSON body (or none) to a path; the answer as `T`.
    pub async fn post<T: DeserializeOwned, B: Serialize + ?Sized>(
        &self,
        segments: &[&str],
        body: Option<&B>,
    ) -> Result<T, ClientError> {
        let url = self.url(segments);
        let mut req = self.request(Method::POST, &url);
        if let Some(b) = body {
            req = req.json(b);
        }
        self.send(req, &url).await
    }

    /// `POST /v1/tokens`: a new token of this token's workspace (admin only).
    pub async fn create_token(&self, req: &CreateToken) -> Result<CreatedToken, ClientError> {
        self.post(&["v1", "tokens"], Some(req)).await
    }

    /// `GET /v1/tokens`, every page: the workspace's tokens, newest first
    /// (revoked ones too when `include_revoked`).
    pub async fn tokens(&self, include_revoked: bool) -> Result<Vec<TokenInfo>, ClientError> {
        #[derive(Deserialize)]
        struct Page {
            tokens: Vec<TokenInfo>,
            next_cursor: Option<Uuid>,
        }
        let mut all = Vec::new();
        let mut cursor: Option<Uuid> = None;
        loop {
            let mut query = vec![
                ("limit", "500".to_owned()),
                ("include_revoked", include_revoked.to_string()),
            ];
            if let Some(c) = cursor {
                query.push(("cursor", c.to_string()));
            }
            let page: Page = self.get(&["v1", "tokens"], &query).await?;
            all.extend(page.tokens);
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => return Ok(all),
            }
        }
    }

    /// `DELETE /v1/tokens/{id}`: revokes a token of this token's workspace.
    pub async fn revoke_token(&self, id: &str) -> Result<(), ClientError> {
        let url = self.url(&["v1", "tokens", id]);
        self.send_raw(self.request(Method::DELETE, &url), &url)
            .await
            .map(drop)
    }

    /// `POST /v1/agents`.
    pub async fn register_agent(&self, req: &RegisterAgent) -> Result<Agent, ClientError> {
        self.post(&["v1", "agents"], Some(req)).await
    }

    /// `GET /v1/agents`.
    pub async fn agents(&self) -> Result<Vec<Agent>, ClientError> {
        #[derive(Deserialize)]
        struct Page {
            agents: Vec<Agent>,
        }
        let page: Page = self.get(&["v1", "agents"], &[]).await?;
        Ok(page.agents)
    }

    /// `GET /v1/agents/{agent_id}`.
    pub async fn agent(&self, agent_id: &str) -> Result<Agent, ClientError> {
        self.get(&["v1", "agents", agent_id], &[]).await
    }

    /// `PATCH /v1/agents/{agent_id}`: `changes` is the JSON object of the
    /// fields to change (with `version` to make it conditional).
    pub async fn update_agent(
        &self,
        agent_id: &str,
        changes: &Value,
    ) -> Result<Agent, ClientError> {
        let url = self.url(&["v1", "agents", agent_id]);
        self.send(self.request(Method::PATCH, &url).json(changes), &url)
            .await
    }

    /// `DELETE /v1/agents/{agent_id}`: retires the agent (kept, given no new work).
    pub async fn retire_agent(&self, agent_id: &str) -> Result<Agent, ClientError> {
        let url = self.url(&["v1", "agents", agent_id]);
        self.send(self.request(Method::DELETE, &url), &url).await
    }

    /// `POST /v1/agents/{agent_id}/heartbeat`, optionally reporting a status.
    pub async fn agent_heartbeat(
        &self,
        agent_id: &str,
        status: Option<&str>,
    ) -> Result<(), ClientError> {
        let url = self.url(&["v1", "agents", agent_id, "heartbeat"]);
        let mut req = self.request(Method::POST, &url);
        if let Some(s) = status {
            req = req.json(&serde_json::json!({ "status": s }));
        }
        self.send_raw(req, &url).await.map(drop)
    }

    /// `POST /v1/missions` with a body shaped like `CreateMission`
    /// (`goal`, `autonomy`, `budget`, `constraints`, `priority`, `plan`).
    pub async fn create_mission(&self, body: &Value) -> Result<Mission, ClientError> {
        self.post(&["v1", "missions"], Some(body)).await
    }

    /// `GET /v1/missions`.
    pub async fn missions(&self, filter: &MissionFilter) -> Result<MissionPage, ClientError> {
        let mut query = Vec::new();
        if let Some(s) = &filter.status {
            query.push(("status", s.clone()));
        }
        if let Some(l) = filter.limit {
            query.push(("limit", l.to_string()));
        }
        if let Some(c) = filter.cursor {
            query.push(("cursor", c.to_string()));
        }
        if filter.archived {
            query.push(("archived", "true".to_owned()));
        }
        self.get(&["v1", "missions"], &query).await
    }

    /// `GET /v1/missions/{id}`.
    pub async fn mission(&self, id: &str) -> Result<Mission, ClientError> {
        self.get(&["v1", "missions", id], &[]).await
    }

    /// `PATCH /v1/missions/{id}`: `changes` is the JSON object of the fields
    /// to change (`title`, `priority`, `budget`, `deadline`, `labels`; `null`
    /// clears one), with `version` to make it conditional.
    pub async fn update_mission(&self, id: &str, changes: &Value) -> Result<Mission, ClientError> {
        let url = self.url(&["v1", "missions", id]);
        self.send(self.request(Method::PATCH, &url).json(changes), &url)
            .await
    }

    /// `DELETE /v1/missions/{id}`: deletes a finished mission (`None`), or
    /// with `archive` archives it (the mission as archived).
    pub async fn delete_mission(
        &self,
        id: &str,
        archive: bool,
    ) -> Result<Option<Mission>, ClientError> {
        let mut url = self.url(&["v1", "missions", id]);
        if archive {
            url.query_pairs_mut().append_pair("archive", "true");
            return self
                .send(self.request(Method::DELETE, &url), &url)
                .await
                .map(Some);
        }
        self.send_raw(self.request(Method::DELETE, &url), &url)
            .await
            .map(|_| None)
    }

    /// `POST /v1/missions/{id}/approve`, optionally pinning task keys to agents.
    pub async fn approve_mission(
        &self,
        id: &str,
        assignments: &BTreeMap<String, String>,
    ) -> Result<Mission, ClientError> {
        let body = serde_json::json!({ "assignments": assignments });
        self.post(&["v1", "missions", id, "approve"], Some(&body))
            .await
    }

    /// `POST /v1/missions/{id}/cancel`.
    pub async fn cancel_mission(&self, id: &str) -> Result<Mission, ClientError> {
        self.post::<_, Value>(&["v1", "missions", id, "cancel"], None)
            .await
    }

    /// `POST /v1/missions/{id}/review`.
    pub async fn review_mission(&self, id: &str, review: &Review) -> Result<Mission, ClientError> {
        self.post(&["v1", "missions", id, "review"], Some(review))
            .await
    }

    /// `GET /v1/missions/{id}/events` as a live stream of every event after
    /// `after` (0: from the start), resuming across dropped connections.
    pub fn mission_events(&self, id: &str, after: i64, policy: ReconnectPolicy) -> EventStream {
        let mut url = self.url(&["v1", "missions", id, "events"]);
        if after > 0 {
            url.query_pairs_mut()
                .append_pair("after", &after.to_string());
        }
        EventStream::new(self.http.clone(), url, self.token.clone(), policy)
    }
}

#[cfg(test)]
mod tests {
    use wiremock::{
        Mock, MockServer, ResponseTemplate,
        matchers::{body_json, header, method, path, query_param},
    };

    use super::*;

    #[test]
    fn urls_keep_a_base_path_and_escape_segments() {
        let c = Client::new("http://example.test/coord/", None).expect("client");
        assert_eq!(
            c.url(&["v1", "agents", "a b/c"]).as_str(),
            "http://example.test/coord/v1/agents/a%20b%2Fc"
        );
        let c = Client::new("http://example.test", None).expect("client");
        assert_eq!(
            c.url(&["v1", "missions"]).as_str(),
            "http://example.test/v1/missions"
        );
    }

    #[test]
    fn bad_base_urls_are_refused() {
        for bad in ["", "localhost:8080", "ftp://x", "mailto:a@b"] {
            assert!(
                matches!(Client::new(bad, None), Err(ClientError::Config(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn error_bodies() {
        let url = Url::parse("http://x/v1").expect("url");
        let e = parse_error_body(
            404,
            &url,
            br#"{"error":{"code":"not_found","message":"no mission 1","details":null}}"#,
        );
        assert_eq!(e.to_string(), "not_found (HTTP 404): no mission 1");
        assert!(e.is_refusal());
        let e = parse_error_body(502, &url, b"<html>Bad gateway</html>");
        assert_eq!(
            e.to_string(),
            "HTTP 502 from http://x/v1: <html>Bad gateway</html>"
        );
        let long = "x".repeat(1000);
        let e = parse_error_body(500, &url, long.as_bytes());
        assert!(e.to_string().ends_with('…'));
        let e = parse_error_body(500, &url, b"");
        assert!(e.to_string().contains("(empty body)"));
    }

    #[tokio::test]
    async fn calls_carry_the_token_and_decode_answers() {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .and(path("/v1/missions"))
            .and(query_param("status", "executing"))
            .and(header("authorization", "Bearer secret"))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "missions": [{"id": "0190a1b2-0000-7000-8000-000000000001", "goal": "g",
                               "status": "executing", "new_field": 1}],
                "next_cursor": null
            })))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/v1/tokens"))
            .and(body_json(serde_json::json!({"role": "operator"})))
            .respond_with(ResponseTemplate::new(403).set_body_json(serde_json::json!(
                {"error": {"code": "forbidden", "message": "admins only", "details": null}}
            )))
            .mount(&server)
            .await;
        let c = Client::new(&server.uri(), Some("secret".into())).expect("client");
        let page = c
            .missions(&MissionFilter {
                status: Some("executing".into()),
                ..MissionFilter::default()
            })
            .await
            .expect("list");
        assert_eq!(page.missions.len(), 1);
        assert_eq!(page.missions[0].goal, "g");
        // Unknown fields survive a round trip to JSON.
        let json = serde_json::to_value(&page.missions[0]).expect("json");
        assert_eq!(json["new_field"], 1);
        let err = c
            .create_token(&CreateToken {
                role: "operator".into(),
                ..CreateToken::default()
            })
            .await
            .expect_err("refused");
        assert!(
            matches!(&err, ClientError::Api { status: 403, code, .. } if code == "forbidden"),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn timeouts_and_unreachable_services_are_transport_errors() {
        let server = MockServer::start().await;
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(5)))
            .mount(&server)
            .await;
        let c = Client::new(&server.uri(), None)
            .expect("client")
            .with_timeout(Duration::from_millis(100));
        let err = c.agents().await.expect_err("timeout");
        assert!(
            matches!(&err, ClientError::Transport { message, .. } if message.contains("timed out")),
            "{err}"
        );
        // A port nobody listens on.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        let c = Client::new(&format!("http://{addr}"), None).expect("client");
        let err = c.agents().await.expect_err("refused");
        assert!(matches!(err, ClientError::Transport { .. }), "{err}");
        assert!(!err.is_refusal());
    }
}
