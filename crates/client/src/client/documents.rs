//! Requests whose body or answer is a document rather than JSON: a BPMN
//! file sent to import, a BPMN export read back.

use reqwest::header;
use serde_json::Value;

use super::{Client, ClientError};

impl Client {
    /// Sends `body` as `content_type` with `method` to a path; the answer as
    /// JSON (`null` for an empty one).
    pub async fn call_document(
        &self,
        method: &str,
        segments: &[&str],
        query: &[(&str, String)],
        content_type: &str,
        body: Vec<u8>,
    ) -> Result<Value, ClientError> {
        let (req, url) = self.request_to(method, segments, query)?;
        let req = req.header(header::CONTENT_TYPE, content_type).body(body);
        self.send(req, &url).await
    }

    /// `GET` a path asking for `accept`; the answer's bytes.
    pub async fn get_document(
        &self,
        segments: &[&str],
        query: &[(&str, String)],
        accept: &str,
    ) -> Result<Vec<u8>, ClientError> {
        let (req, url) = self.request_to("GET", segments, query)?;
        let req = req.header(header::ACCEPT, accept);
        self.send_raw(req, &url).await
    }
}
