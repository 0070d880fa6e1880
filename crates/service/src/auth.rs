//! Bearer tokens: generation, hashing, lookup, roles and the first admin token.
//!
//! Only a SHA-256 of each token is stored. API tokens carry a role and a
//! workspace; attempt tokens (one per dispatch) are separate and live on the
//! attempt row.

use std::time::Duration;

use anyhow::Context;
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::domain::{AttemptStatus, text_enum};

/// Name of the workspace created on first start.
pub const DEFAULT_WORKSPACE: &str = "default";

/// Shortest bootstrap token `serve` accepts: it becomes an admin secret.
pub const MIN_BOOTSTRAP_LEN: usize = 32;

/// `last_used_at` is written at most this often per token, so
/// authentication does not write on every request.
pub const LAST_USED_GRANULARITY: Duration = Duration::from_secs(60);

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
    /// When the token stops working, if it expires (long-lived streams check it).
    pub expires_at: Option<OffsetDateTime>,
    /// For attempt tokens: the task the agent is working on, which confines
    /// every call to that mission.
    pub attempt: Option<AttemptScope>,
}

/// What an attempt token speaks for: one agent working on one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptScope {
    /// The attempt (also the principal's `token_id`).
    pub attempt_id: Uuid,
    /// Its mission.
    pub mission_id: Uuid,
    /// Its task.
    pub task_id: Uuid,
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

/// "an" before a vowel sound (an admin, an operator, an agent), "a" otherwise.
pub fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

impl Principal {
    /// Refuses with 403 unless the caller has one of `roles`.
    pub fn require(&self, roles: &[Role]) -> Result<(), Forbidden> {
        if roles.contains(&self.role) {
            Ok(())
        } else {
            Err(Forbidden(format!(
                "{} {} token cannot do this (needs {})",
                article(self.role.as_str()),
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

    /// The non-secret name of the caller in events and records: `agent:<agent
    /// id>` for agent tokens, else `<role>:<full token id>` (the id is what
    /// `GET /v1/tokens/{id}` resolves to the token's name; before issue 27
    /// only its first 8 hex digits were kept, a prefix of today's form).
    pub fn actor(&self) -> String {
        match &self.agent_id {
            Some(agent) => format!("agent:{agent}"),
            None => format!("{}:{}", self.role, self.token_id),
        }
    }

    /// Whether the token has expired by `now` (streams end when it has).
    pub fn expired_at(&self, now: OffsetDateTime) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

/// A new random token: `cot_` and 64 hex digits (244 random bits).
pub fn generate_token() -> String {
    format!("cot_{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple())
}

/// Prefix of attempt tokens, which name their attempt so that one can be
/// found by primary key (no index on the hash, nothing to scan).
const ATTEMPT_PREFIX: &str = "cat_";

/// A new token for attempt `id`: `cat_`, the attempt id in 32 hex digits, `_`
/// and 64 random hex digits. Only its hash is stored, as for API tokens.
pub fn attempt_token(id: Uuid) -> String {
    format!(
        "{ATTEMPT_PREFIX}{}_{}{}",
        id.simple(),
        Uuid::new_v4().simple(),
        Uuid::new_v4().simple()
    )
}

/// The attempt an attempt token names, if `token` has that form.
pub fn attempt_of(token: &str) -> Option<Uuid> {
    let rest = token.strip_prefix(ATTEMPT_PREFIX)?;
    let (id, secret) = rest.split_once('_')?;
    (id.len() == 32 && secret.len() == 64)
        .then(|| Uuid::try_parse(id).ok())
        .flatten()
}

/// The stored form of a token.
pub fn hash_token(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Why a request could not be authenticated.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// No usable credentials: missing, malformed, unknown, expired or revoked.
    #[error("{0}")]
    Unauthorized(String),
    /// An attempt token whose attempt has ended: it may act no more.
    #[error("attempt {attempt_id} is {status}: its token no longer acts for the agent")]
    StaleAttempt {
        /// The attempt.
        attempt_id: Uuid,
        /// Its status now.
        status: String,
    },
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// A stored value did not parse.
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// Extracts the token from an `Authorization: Bearer …` header value.
pub fn parse_bearer(header: Option<&str>) -> Result<&str, AuthError> {
    let value = header.ok_or_else(|| {
        AuthError::Unauthorized("missing Authorization: Bearer <token> header".into())
    })?;
    let (scheme, token) = value
        .split_once(' ')
        .ok_or_else(|| AuthError::Unauthorized("malformed Authorization header".into()))?;
    let token = token.trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(AuthError::Unauthorized(
            "Authorization header must be 'Bearer <token>'".into(),
        ));
    }
    Ok(token)
}

/// Resolves a bearer token to its principal; 401 if unknown, expired or
/// revoked (one answer for all three, so it tells a guesser nothing). Marks
/// the token used at most once per [`LAST_USED_GRANULARITY`].
pub async fn authenticate(pool: &PgPool, token: &str) -> Result<Principal, AuthError> {
    if let Some(attempt_id) = attempt_of(token) {
        return authenticate_attempt(pool, attempt_id, token).await;
    }
    let row = sqlx::query!(
        r#"SELECT id, workspace_id, role, agent_id, expires_at,
                  (last_used_at IS NULL OR last_used_at < now() - make_interval(secs => $2)) AS "stale!"
           FROM api_tokens
           WHERE token_hash = $1 AND revoked_at IS NULL
             AND (expires_at IS NULL OR expires_at > now())"#,
        hash_token(token),
        LAST_USED_GRANULARITY.as_secs_f64()
    )
    .fetch_optional(pool)
    .await?
    .ok_or_else(|| AuthError::Unauthorized("invalid or revoked token".into()))?;
    if row.stale {
        // Guarded again in SQL, so replicas racing here write once.
        sqlx::query!(
            "UPDATE api_tokens SET last_used_at = now()
             WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - make_interval(secs => $2))",
            row.id,
            LAST_USED_GRANULARITY.as_secs_f64()
        )
        .execute(pool)
        .await?;
    }
    Ok(Principal {
        token_id: row.id,
        workspace_id: row.workspace_id,
        role: row.role.parse().context("stored token role")?,
        agent_id: row.agent_id,
        expires_at: row.expires_at,
        attempt: None,
    })
}

/// Resolves an attempt token: the agent of a live attempt, confined to its
/// mission. A wrong secret answers 401 like an unknown token; an attempt
/// that has ended answers 409, so its worker learns to stop.
async fn authenticate_attempt(
    pool: &PgPool,
    attempt_id: Uuid,
    token: &str,
) -> Result<Principal, AuthError> {
    let row = sqlx::query!(
        "SELECT workspace_id, run_id, task_id, agent_id, token_hash, status
         FROM task_attempts WHERE id = $1",
        attempt_id
    )
    .fetch_optional(pool)
    .await?
    .filter(|r| r.token_hash == hash_token(token))
    .ok_or_else(|| AuthError::Unauthorized("invalid or revoked token".into()))?;
    let status: AttemptStatus = row.status.parse().context("stored attempt status")?;
    if !status.is_live() {
        return Err(AuthError::StaleAttempt {
            attempt_id,
            status: row.status,
        });
    }
    Ok(Principal {
        token_id: attempt_id,
        workspace_id: row.workspace_id,
        role: Role::Agent,
        agent_id: Some(row.agent_id),
        expires_at: None,
        attempt: Some(AttemptScope {
            attempt_id,
            mission_id: row.run_id,
            task_id: row.task_id,
        }),
    })
}

/// Whether the caller's token still works (not revoked, not expired; for an
/// attempt token, its attempt still live): what an open stream re-checks.
pub async fn still_valid(pool: &PgPool, who: &Principal) -> sqlx::Result<bool> {
    if let Some(scope) = who.attempt {
        return sqlx::query_scalar!(
            r#"SELECT EXISTS (SELECT 1 FROM task_attempts WHERE id = $1
                              AND status IN ('dispatching', 'running')) AS "live!""#,
            scope.attempt_id
        )
        .fetch_one(pool)
        .await;
    }
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM api_tokens WHERE id = $1 AND revoked_at IS NULL
                          AND (expires_at IS NULL OR expires_at > now())) AS "valid!""#,
        who.token_id
    )
    .fetch_one(pool)
    .await
}

/// One API token as admins see it: never the secret or its hash.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct TokenView {
    /// Token id; event actors name it (`<role>:<id>`).
    pub id: Uuid,
    /// What the token may do.
    pub role: String,
    /// Its name.
    pub name: String,
    /// For agent tokens: the agent it acts as.
    pub agent_id: Option<String>,
    /// When it was made.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// When it last authenticated a request (to the minute; null if never).
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_used_at: Option<OffsetDateTime>,
    /// When it stops working (null: never).
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    /// When it was revoked (null: not revoked).
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<OffsetDateTime>,
}

/// A page of the workspace's tokens, newest first, after `cursor` (a token
/// id); revoked ones only when `include_revoked`.
pub async fn list_tokens(
    pool: &PgPool,
    workspace_id: Uuid,
    include_revoked: bool,
    cursor: Option<Uuid>,
    limit: i64,
) -> sqlx::Result<Vec<TokenView>> {
    sqlx::query_as!(
        TokenView,
        r#"SELECT id, role, name, agent_id, created_at, last_used_at, expires_at, revoked_at
           FROM api_tokens
           WHERE workspace_id = $1 AND ($2 OR revoked_at IS NULL)
             AND ($3::uuid IS NULL OR id < $3)
           ORDER BY id DESC
           LIMIT $4"#,
        workspace_id,
        include_revoked,
        cursor,
        limit
    )
    .fetch_all(pool)
    .await
}

/// One token of the workspace (revoked ones too, so an actor can always be
/// resolved to its name); `None` if it is not one of the workspace's.
pub async fn get_token(
    pool: &PgPool,
    workspace_id: Uuid,
    id: Uuid,
) -> sqlx::Result<Option<TokenView>> {
    sqlx::query_as!(
        TokenView,
        r#"SELECT id, role, name, agent_id, created_at, last_used_at, expires_at, revoked_at
           FROM api_tokens WHERE workspace_id = $1 AND id = $2"#,
        workspace_id,
        id
    )
    .fetch_optional(pool)
    .await
}

/// Revokes the workspace's token `id` (again is a no-op); `false` if it is
/// not one of the workspace's.
pub async fn revoke_token(pool: &PgPool, workspace_id: Uuid, id: Uuid) -> sqlx::Result<bool> {
    let found = sqlx::query_scalar!(
        r#"UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, now())
           WHERE workspace_id = $1 AND id = $2
           RETURNING id"#,
        workspace_id,
        id
    )
    .fetch_optional(pool)
    .await?;
    Ok(found.is_some())
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
    insert_token_until(conn, workspace_id, role, name, agent_id, secret, None).await
}

/// Stores a new token that stops working at `expires_at` (never if `None`).
pub async fn insert_token_until(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    role: Role,
    name: &str,
    agent_id: Option<&str>,
    secret: &str,
    expires_at: Option<OffsetDateTime>,
) -> anyhow::Result<Uuid> {
    let id = Uuid::now_v7();
    sqlx::query!(
        "INSERT INTO api_tokens (id, workspace_id, name, role, agent_id, token_hash, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        id,
        workspace_id,
        name,
        role.as_str(),
        agent_id,
        hash_token(secret),
        expires_at
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
///
/// A given `bootstrap` shorter than [`MIN_BOOTSTRAP_LEN`] characters is refused
/// whether or not it would be used, so a weak admin secret fails at startup.
pub async fn ensure_bootstrap(pool: &PgPool, bootstrap: Option<&str>) -> anyhow::Result<Bootstrap> {
    let bootstrap = bootstrap.map(str::trim).filter(|t| !t.is_empty());
    check_bootstrap(bootstrap)?;
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
    let (secret, outcome) = match bootstrap {
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

/// Refuses a bootstrap token shorter than [`MIN_BOOTSTRAP_LEN`] characters.
pub fn check_bootstrap(bootstrap: Option<&str>) -> anyhow::Result<()> {
    if let Some(t) = bootstrap {
        let n = t.chars().count();
        anyhow::ensure!(
            n >= MIN_BOOTSTRAP_LEN,
            "the bootstrap token (--bootstrap-token / COORDINATOR_BOOTSTRAP_TOKEN) has {n} \
             characters; it becomes an admin secret and must have at least {MIN_BOOTSTRAP_LEN} \
             (e.g. `openssl rand -hex 24`), or leave it unset to have one generated"
        );
    }
    Ok(())
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
            expires_at: None,
            attempt: None,
        };
        assert!(p.require(&[Role::Admin, Role::Stakeholder]).is_ok());
        assert!(p.require(&[Role::Admin, Role::Operator]).is_err());
    }

    #[test]
    fn actors_name_the_whole_token_id_and_keep_the_old_prefix() {
        let id = Uuid::now_v7();
        let p = Principal {
            token_id: id,
            workspace_id: Uuid::nil(),
            role: Role::Operator,
            agent_id: None,
            expires_at: None,
            attempt: None,
        };
        let old = format!("operator:{}", &id.simple().to_string()[..8]);
        assert_eq!(p.actor(), format!("operator:{id}"));
        assert!(p.actor().starts_with(&old), "{} {old}", p.actor());
        let agent = Principal {
            role: Role::Agent,
            agent_id: Some("alice".into()),
            ..p
        };
        assert_eq!(agent.actor(), "agent:alice");
    }

    #[test]
    fn short_bootstrap_tokens_are_refused() {
        assert!(check_bootstrap(None).is_ok());
        assert!(check_bootstrap(Some(&"x".repeat(MIN_BOOTSTRAP_LEN))).is_ok());
        let e = check_bootstrap(Some("short-admin-token")).expect_err("refused");
        assert!(e.to_string().contains("at least 32"), "{e}");
    }
}
