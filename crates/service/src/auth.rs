//! Bearer tokens: generation, hashing, lookup, roles and the first admin token.
//!
//! Only a SHA-256 of each token is stored. API tokens carry a role and a
//! workspace; attempt tokens (one per dispatch) are separate and live on the
//! attempt row.

use anyhow::Context;
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::{domain::text_enum, error::ApiError};

/// Name of the workspace created on first start.
pub const DEFAULT_WORKSPACE: &str = "default";

/// What a token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Everything in its workspace, including tokens.
    Admin,
    /// Missions and agents.
    Operator,
    /// Reads, approvals and decisions.
    Stakeholder,
    /// Acts as one agent.
    Agent,
    /// A worker process (reads, registers its agents).
    Worker,
}

text_enum!(Role {
    Admin => "admin",
    Operator => "operator",
    Stakeholder => "stakeholder",
    Agent => "agent",
    Worker => "worker",
});

/// Who is calling: resolved from a valid, unrevoked API token.
#[derive(Debug, Clone)]
pub struct Principal {
    /// The token's id (never the secret).
    pub token_id: Uuid,
    /// The workspace every query of this request is confined to.
    pub workspace_id: Uuid,
    /// What it may do.
    pub role: Role,
    /// For agent tokens: the agent it acts as.
    pub agent_id: Option<String>,
}

/// The caller's token may not do this: its role, or the agent it speaks for,
/// does not allow it. The message says what would.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Forbidden(pub String);

impl From<String> for Forbidden {
    fn from(message: String) -> Self {
        Forbidden(message)
    }
}

impl From<&str> for Forbidden {
    fn from(message: &str) -> Self {
        Forbidden(message.to_owned())
    }
}

impl Principal {
    /// Refuses with 403 unless the caller has one of `roles`.
    pub fn require(&self, roles: &[Role]) -> Result<(), Forbidden> {
        if roles.contains(&self.role) {
            Ok(())
        } else {
            Err(Forbidden(format!(
                "a {} token cannot do this (needs {})",
                self.role,
                roles
                    .iter()
                    .map(|r| r.as_str())
                    .collect::<Vec<_>>()
                    .join(" or ")
            )))
        }
    }

    /// Refuses with 403 unless the caller has one of `roles`, or is an agent
    /// token acting as `agent_id` (an agent token speaks only for itself).
    pub fn require_self_or(&self, agent_id: &str, roles: &[Role]) -> Result<(), Forbidden> {
        if self.role == Role::Agent {
            return match self.agent_id.as_deref() {
                Some(own) if own == agent_id => Ok(()),
                own => Err(Forbidden(format!(
                    "this agent token acts as '{}', not '{agent_id}'",
                    own.unwrap_or("")
                ))),
            };
        }
        self.require(roles)
    }

    /// A short, non-secret name for logs and event actors.
    pub fn actor(&self) -> String {
        match &self.agent_id {
            Some(agent) => format!("agent:{agent}"),
            None => format!("{}:{}", self.role, &self.token_id.simple().to_string()[..8]),
        }
    }
}

/// A new random token: `cot_` and 64 hex digits (244 random bits).
pub fn generate_token() -> String {
    format!("cot_{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple())
}

/// The stored form of a token.
pub fn hash_token(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Extracts the token from an `Authorization: Bearer …` header value.
pub fn parse_bearer(header: Option<&str>) -> Result<&str, ApiError> {
    let value = header.ok_or_else(|| {
        ApiError::Unauthorized("missing Authorization: Bearer <token> header".into())
    })?;
    let (scheme, token) = value
        .split_once(' ')
        .ok_or_else(|| ApiError::Unauthorized("malformed Authorization header".into()))?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(ApiError::Unauthorized(
            "Authorization header must be 'Bearer <token>'".into(),
        ));
    }
    Ok(token)
}

/// Resolves a bearer token to its principal; 401 if unknown or revoked.
pub async fn authenticate(pool: &PgPool, token: &str) -> Result<Principal, ApiError> {
    let row = sqlx::query!(
        r#"SELECT id, workspace_id, role, agent_id FROM api_tokens
           WHERE token_hash = $1 AND revoked_at IS NULL"#,
        hash_token(token)
    )
    .fetch_optional(pool)
    .await?
    .ok_or_else(|| ApiError::Unauthorized("invalid or revoked token".into()))?;
    Ok(Principal {
        token_id: row.id,
        workspace_id: row.workspace_id,
        role: row.role.parse().context("stored token role")?,
        agent_id: row.agent_id,
    })
}

/// Stores a new token; returns its id. The caller shows the secret once.
pub async fn insert_token(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    role: Role,
    name: &str,
    agent_id: Option<&str>,
    secret: &str,
) -> anyhow::Result<Uuid> {
    let id = Uuid::now_v7();
    sqlx::query!(
        "INSERT INTO api_tokens (id, workspace_id, name, role, agent_id, token_hash)
         VALUES ($1, $2, $3, $4, $5, $6)",
        id,
        workspace_id,
        name,
        role.as_str(),
        agent_id,
        hash_token(secret)
    )
    .execute(conn)
    .await?;
    Ok(id)
}

/// The id of the workspace called `name`, creating it if needed.
pub async fn workspace_by_name(conn: &mut PgConnection, name: &str) -> anyhow::Result<Uuid> {
    let id = sqlx::query_scalar!(
        r#"INSERT INTO workspaces (id, name) VALUES ($1, $2)
           ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
           RETURNING id"#,
        Uuid::now_v7(),
        name
    )
    .fetch_one(conn)
    .await?;
    Ok(id)
}

/// What the first start did about the admin token.
#[derive(Debug, PartialEq, Eq)]
pub enum Bootstrap {
    /// Tokens already existed; nothing was done.
    AlreadyDone,
    /// `COORDINATOR_BOOTSTRAP_TOKEN` became the admin token.
    FromEnvironment,
    /// A token was generated; it must be shown once.
    Generated(String),
}

/// On a database with no token yet, makes the admin token of the default
/// workspace: `bootstrap` if given, else a fresh one. Safe with many replicas
/// starting at once (an advisory lock makes it happen once).
pub async fn ensure_bootstrap(pool: &PgPool, bootstrap: Option<&str>) -> anyhow::Result<Bootstrap> {
    let mut tx = pool.begin().await?;
    sqlx::query!("SELECT pg_advisory_xact_lock(7242001)")
        .execute(&mut *tx)
        .await?;
    let any = sqlx::query_scalar!(r#"SELECT EXISTS (SELECT 1 FROM api_tokens) AS "any!""#)
        .fetch_one(&mut *tx)
        .await?;
    if any {
        return Ok(Bootstrap::AlreadyDone);
    }
    let workspace = workspace_by_name(&mut tx, DEFAULT_WORKSPACE).await?;
    let (secret, outcome) = match bootstrap.map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => (t.to_owned(), Bootstrap::FromEnvironment),
        None => {
            let t = generate_token();
            (t.clone(), Bootstrap::Generated(t))
        }
    };
    insert_token(&mut tx, workspace, Role::Admin, "bootstrap", None, &secret).await?;
    tx.commit().await?;
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_unique_and_hash_stably() {
        let a = generate_token();
        let b = generate_token();
        assert_ne!(a, b);
        assert!(a.starts_with("cot_") && a.len() == 68);
        assert_eq!(hash_token(&a), hash_token(&a));
        assert_ne!(hash_token(&a), hash_token(&b));
    }

    #[test]
    fn bearer_parsing() {
        assert_eq!(parse_bearer(Some("Bearer abc")).unwrap(), "abc");
        assert_eq!(parse_bearer(Some("bearer  abc ")).unwrap(), "abc");
        assert!(parse_bearer(None).is_err());
        assert!(parse_bearer(Some("Basic abc")).is_err());
        assert!(parse_bearer(Some("Bearer ")).is_err());
        assert!(parse_bearer(Some("Bearer")).is_err());
    }

    #[test]
    fn roles_are_enforced() {
        let p = Principal {
            token_id: Uuid::nil(),
            workspace_id: Uuid::nil(),
            role: Role::Stakeholder,
            agent_id: None,
        };
        assert!(p.require(&[Role::Admin, Role::Stakeholder]).is_ok());
        assert!(p.require(&[Role::Admin, Role::Operator]).is_err());
    }
}
