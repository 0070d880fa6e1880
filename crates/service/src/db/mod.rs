//! Connecting to PostgreSQL: an external server (`DATABASE_URL`) or the
//! private embedded one, plus migrations.

use std::{path::PathBuf, time::Duration};

use anyhow::Context;
use sqlx::{
    PgPool,
    postgres::{PgConnectOptions, PgPoolOptions},
};

use crate::local_postgres::LocalPostgres;

mod follow;
mod health;
mod servers;

pub use follow::PRIMARY_SWITCHES;
pub use health::{Health, unavailable, watch};
pub use servers::{Servers, SessionAttrs};

/// The schema migrations, embedded in the binary.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations");

/// Where the database is: `DATABASE_URL`, or a private cluster in a data directory.
#[derive(Debug, Clone, clap::Args)]
pub struct DatabaseArgs {
    /// PostgreSQL URL; without it a private PostgreSQL is started from the local binaries.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Directory of the private PostgreSQL (used only without DATABASE_URL).
    #[arg(long, env = "COORDINATOR_DATA_DIR", default_value = "./.coordinator")]
    pub data_dir: PathBuf,
    /// Maximum connections in this process's pool; without it the pool is
    /// sized from the server's `max_connections` and `--replicas`
    /// ([`pool_size_for`]).
    #[arg(long, env = "COORDINATOR_DB_POOL_SIZE")]
    pub pool_size: Option<u32>,
    /// Replicas expected to share the server: each sizes its pool to its
    /// share of the server's connections.
    #[arg(long, env = "COORDINATOR_REPLICAS", default_value_t = 1)]
    pub replicas: u32,
    /// How long to keep retrying an unreachable server at start (seconds).
    #[arg(long, env = "COORDINATOR_DB_CONNECT_TIMEOUT_SECS", default_value_t = DEFAULT_CONNECT_WAIT_SECS)]
    pub db_connect_timeout_secs: u64,
}

/// Default of `--db-connect-timeout-secs`.
pub const DEFAULT_CONNECT_WAIT_SECS: u64 = 30;

/// A database connection and, for the embedded default, the server behind it.
pub struct Database {
    /// The pool everything uses.
    pub pool: PgPool,
    /// The private server, if we use one (stopped by [`Database::close`]).
    pub embedded: Option<LocalPostgres>,
}

impl Database {
    /// Connects (starting the private server if needed) and runs migrations.
    pub async fn open(args: &DatabaseArgs) -> anyhow::Result<Database> {
        let (url, embedded) = match &args.database_url {
            Some(url) => (url.clone(), None),
            None => {
                let pg = LocalPostgres::start(&args.data_dir).await?;
                eprintln!(
                    "No DATABASE_URL set: using the private PostgreSQL in {}{}",
                    pg.data_dir().display(),
                    if pg.owns_server() {
                        " (started it)"
                    } else {
                        " (already running)"
                    }
                );
                (pg.url().to_owned(), Some(pg))
            }
        };
        let wait = Duration::from_secs(args.db_connect_timeout_secs);
        let pool = match args.pool_size {
            Some(size) => connect_within(&url, size, wait).await?,
            None => connect_sized(&url, args.replicas.max(1), wait).await?,
        };
        migrate(&pool).await?;
        Ok(Database { pool, embedded })
    }

    /// Closes the pool, then stops the private server if this process started it.
    pub async fn close(self) -> anyhow::Result<()> {
        self.pool.close().await;
        if let Some(pg) = self.embedded {
            pg.stop().await?;
        }
        Ok(())
    }
}

/// A pool for `url` with sane timeouts, waiting up to
/// [`DEFAULT_CONNECT_WAIT_SECS`] for the server (see [`connect_within`]).
pub async fn connect(url: &str, max_connections: u32) -> anyhow::Result<PgPool> {
    connect_within(
        url,
        max_connections,
        Duration::from_secs(DEFAULT_CONNECT_WAIT_SECS),
    )
    .await
}

/// A pool for `url`, after one connection has worked. A server that is not
/// there yet (refused, unreachable, starting up, out of connections) is
/// tried again with backoff for up to `wait`; one that answers no
/// (authentication, no such database, a bad URL) fails at once. The error
/// names the host, port, database and user (never the password), the cause
/// and a hint.
pub async fn connect_within(
    url: &str,
    max_connections: u32,
    wait: Duration,
) -> anyhow::Result<PgPool> {
    let servers = Servers::parse(url).map_err(|e| {
        anyhow::anyhow!(
            "DATABASE_URL is not a PostgreSQL URL: {}",
            redact_error(&e, url)
        )
    })?;
    let target = Target::of_servers(&servers);
    let deadline = tokio::time::Instant::now() + wait;
    let mut pause = Duration::from_millis(250);
    let mut tries = 0u32;
    let chosen = loop {
        tries += 1;
        match follow::first_usable(&servers).await {
            Ok(i) => break i,
            Err(e) => {
                let why = match &e {
                    follow::NoServer::Error(e) => Failure::of(e),
                    follow::NoServer::ReadOnly => Failure::read_only(),
                };
                let now = tokio::time::Instant::now();
                if !why.transient || now + pause > deadline {
                    let waited = if why.transient {
                        format!(
                            " (tried {tries} times over {} s; COORDINATOR_DB_CONNECT_TIMEOUT_SECS sets how long)",
                            wait.as_secs()
                        )
                    } else {
                        String::new()
                    };
                    anyhow::bail!(
                        "cannot connect to PostgreSQL at {target}: {}{waited}\nhint: {}",
                        why.cause,
                        why.hint
                    );
                }
                tracing::warn!(%target, cause = %why.cause, retry_in_ms = pause.as_millis() as u64, "PostgreSQL is not reachable yet; retrying");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
        }
    };
    let mut pool = PgPoolOptions::new()
        .max_connections(max_connections)
        .min_connections(1)
        .acquire_timeout(Duration::from_secs(10));
    if servers.attrs == SessionAttrs::ReadWrite {
        // A connection opened while the pool still points at a demoted
        // server is refused here, so it never takes a write.
        pool = pool.after_connect(|conn, _| {
            Box::pin(async move {
                if follow::writable(conn).await? {
                    Ok(())
                } else {
                    Err(sqlx::Error::Protocol(
                        "the server is read-only (target_session_attrs=read-write)".into(),
                    ))
                }
            })
        });
    }
    let pool = pool
        .connect_with(servers.options[chosen].clone())
        .await
        .with_context(|| format!("connecting to PostgreSQL at {target}"))?;
    if servers.is_list() {
        follow::spawn(pool.clone(), servers, chosen);
    }
    Ok(pool)
}

/// Pool size when none is configured: the most one replica uses with room
/// to spare (more connections than this only queue inside PostgreSQL on
/// small machines).
pub const DEFAULT_POOL_SIZE: u32 = 20;

/// Connections left for everything that is not a replica (psql, migrations,
/// backups, monitoring, the benchmark's observer).
pub const CONNECTION_HEADROOM: u32 = 10;

/// The pool size of one of `replicas` replicas sharing a server that
/// allows `max_connections` with `reserved` kept for superusers: an equal
/// share of what is left after [`CONNECTION_HEADROOM`], at most
/// [`DEFAULT_POOL_SIZE`] and at least 2 (one for the tick loop, one for
/// requests), so replicas together never exhaust a stock server.
pub fn pool_size_for(max_connections: u32, reserved: u32, replicas: u32) -> u32 {
    let usable = max_connections
        .saturating_sub(reserved)
        .saturating_sub(CONNECTION_HEADROOM);
    (usable / replicas.max(1)).clamp(2, DEFAULT_POOL_SIZE)
}

/// Reads the server's `max_connections` and `superuser_reserved_connections`.
pub async fn connection_limits(pool: &PgPool) -> sqlx::Result<(u32, u32)> {
    let (max, reserved): (String, String) = sqlx::query_as(
        "SELECT current_setting('max_connections'), current_setting('superuser_reserved_connections')",
    )
    .fetch_one(pool)
    .await?;
    Ok((max.parse().unwrap_or(100), reserved.parse().unwrap_or(3)))
}

/// A pool sized by [`pool_size_for`] from the server's own limits (read over
/// one connection first).
pub async fn connect_sized(url: &str, replicas: u32, wait: Duration) -> anyhow::Result<PgPool> {
    let probe = connect_within(url, 1, wait).await?;
    let (max, reserved) = connection_limits(&probe).await?;
    probe.close().await;
    let size = pool_size_for(max, reserved, replicas);
    tracing::debug!(
        max_connections = max,
        reserved,
        replicas,
        pool_size = size,
        "database pool sized from the server's max_connections"
    );
    connect_within(url, size, wait).await
}

/// Where a connection goes, for messages: never the password.
struct Target {
    host: String,
    port: u16,
    database: Option<String>,
    user: String,
}

impl Target {
    /// Every server of the list, as `h1:p1,h2:p2`.
    fn of_servers(servers: &Servers) -> Target {
        let mut target = Target::of(&servers.options[0]);
        if servers.is_list() {
            target.host = servers
                .options
                .iter()
                .map(|o| format!("{}:{}", o.get_host(), o.get_port()))
                .collect::<Vec<_>>()
                .join(",");
            target.port = 0;
        }
        target
    }

    fn of(o: &PgConnectOptions) -> Target {
        Target {
            host: o.get_host().to_owned(),
            port: o.get_port(),
            database: o.get_database().map(str::to_owned),
            user: o.get_username().to_owned(),
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A Unix socket directory is a path, not host:port.
        if self.host.starts_with('/') {
            write!(f, "socket {}/.s.PGSQL.{}", self.host, self.port)?;
        } else if self.port == 0 {
            // A list: each host carries its port.
            write!(f, "{}", self.host)?;
        } else {
            write!(f, "{}:{}", self.host, self.port)?;
        }
        write!(
            f,
            " (database {}, user {})",
            self.database.as_deref().unwrap_or(&self.user),
            self.user
        )
    }
}

/// Why a connection failed, whether waiting may help, and what to do.
#[derive(Debug, PartialEq, Eq)]
struct Failure {
    cause: String,
    transient: bool,
    hint: &'static str,
}

impl Failure {
    fn of(e: &sqlx::Error) -> Failure {
        match e {
            sqlx::Error::Io(io) => Failure::io(io.kind(), &io.to_string()),
            sqlx::Error::Tls(t) => Failure {
                cause: format!("TLS failed: {t}"),
                transient: false,
                hint: "check sslmode and the server's certificate (sslmode=disable for a local server without TLS)",
            },
            sqlx::Error::Database(db) => {
                Failure::server(db.code().as_deref().unwrap_or(""), db.message())
            }
            sqlx::Error::PoolTimedOut => Failure {
                cause: "timed out".into(),
                transient: true,
                hint: "the server did not answer in time; check that it is up and reachable",
            },
            other => Failure {
                cause: other.to_string(),
                transient: false,
                hint: "check DATABASE_URL",
            },
        }
    }

    fn io(kind: std::io::ErrorKind, text: &str) -> Failure {
        use std::io::ErrorKind as K;
        let (cause, transient, hint) = match kind {
            K::ConnectionRefused => (
                "connection refused".to_owned(),
                true,
                "is PostgreSQL running there and listening on that address and port (listen_addresses, port)?",
            ),
            K::TimedOut => (
                "the connection timed out".to_owned(),
                true,
                "is the host reachable (firewall, network)?",
            ),
            K::NotFound => (
                format!("not found ({text})"),
                true,
                "is the host name right, and for a socket, is PostgreSQL running with that socket directory?",
            ),
            K::ConnectionReset | K::ConnectionAborted | K::UnexpectedEof => (
                format!("the server closed the connection ({text})"),
                true,
                "is it a PostgreSQL server, and is it starting or shutting down?",
            ),
            _ => (
                text.to_owned(),
                true,
                "is the host name right and the server reachable?",
            ),
        };
        Failure {
            cause,
            transient,
            hint,
        }
    }

    /// Every server of the list answered, and none takes writes.
    fn read_only() -> Failure {
        Failure {
            cause: "every server that answered is read-only (a standby, or default_transaction_read_only)".into(),
            transient: true,
            hint: "promote a standby, or list the primary in DATABASE_URL (target_session_attrs=read-write asks for a writable server)",
        }
    }

    /// A refusal from the server, by SQLSTATE.
    fn server(code: &str, message: &str) -> Failure {
        let (transient, hint) = match code {
            "28P01" | "28000" => (
                false,
                "check the user and password in DATABASE_URL, and pg_hba.conf for this client",
            ),
            "3D000" => (
                false,
                "create the database (createdb) or fix its name in DATABASE_URL",
            ),
            "57P03" => (true, "the server is starting up or shutting down"),
            "53300" => (
                true,
                "the server has no free connection slots; lower COORDINATOR_DB_POOL_SIZE or raise max_connections",
            ),
            _ => (false, "see the server's log"),
        };
        Failure {
            cause: format!("the server refused: {message} (SQLSTATE {code})"),
            transient,
            hint,
        }
    }
}

/// `text` with the URL's password (if any) masked.
fn redact_error(text: &str, url: &str) -> String {
    match url_password(url) {
        Some(pw) if !pw.is_empty() => text.replace(pw, "****"),
        _ => text.to_owned(),
    }
}

/// The password of a `postgres://user:password@host/…` URL, if it has one.
fn url_password(url: &str) -> Option<&str> {
    let rest = url.split_once("://")?.1;
    let userinfo = rest.split_once('@')?.0;
    userinfo.split_once(':').map(|(_, pw)| pw)
}

/// The versions of [`MIGRATOR`] not in `applied` (ascending): what `/readyz` reports.
pub fn missing_migrations(applied: &[i64]) -> Vec<i64> {
    MIGRATOR
        .iter()
        .filter(|m| m.migration_type.is_up_migration())
        .map(|m| m.version)
        .filter(|v| !applied.contains(v))
        .collect()
}

/// Applies pending migrations (safe to run from several replicas at once:
/// sqlx takes an advisory lock).
pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    MIGRATOR.run(pool).await.context("running migrations")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_fit_a_stock_server_whatever_the_replica_count() {
        // Stock PostgreSQL: 100 connections, 3 reserved.
        assert_eq!(pool_size_for(100, 3, 1), DEFAULT_POOL_SIZE);
        assert_eq!(pool_size_for(100, 3, 3), 20);
        assert_eq!(pool_size_for(100, 3, 5), 17);
        for replicas in 1..=40 {
            let size = pool_size_for(100, 3, replicas);
            assert!(size >= 2);
            assert!(size * replicas <= 87, "{replicas} replicas × {size}");
        }
        // A tiny server still gets a working pool.
        assert_eq!(pool_size_for(10, 3, 1), 2);
        assert_eq!(pool_size_for(300, 3, 1), DEFAULT_POOL_SIZE);
    }

    #[test]
    fn failures_say_what_and_whether_waiting_helps() {
        let refused = Failure::of(&sqlx::Error::Io(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
        assert_eq!(refused.cause, "connection refused");
        assert!(refused.transient);
        let auth = Failure::server("28P01", "password authentication failed for user \"x\"");
        assert!(!auth.transient);
        assert!(
            auth.cause.contains("password authentication failed"),
            "{}",
            auth.cause
        );
        assert!(auth.hint.contains("password"));
        let missing = Failure::server("3D000", "database \"nope\" does not exist");
        assert!(!missing.transient);
        assert!(missing.hint.contains("createdb"));
        assert!(Failure::server("57P03", "the database system is starting up").transient);
        assert!(Failure::server("53300", "too many clients").transient);
    }

    #[test]
    fn targets_name_host_port_database_and_user_but_never_the_password() {
        let o: PgConnectOptions = "postgres://alice:s3cret@db.example:6543/orders"
            .parse()
            .expect("url");
        let shown = Target::of(&o).to_string();
        assert_eq!(shown, "db.example:6543 (database orders, user alice)");
        assert!(!shown.contains("s3cret"));
        assert_eq!(
            redact_error(
                "bad url postgres://alice:s3cret@x",
                "postgres://alice:s3cret@x"
            ),
            "bad url postgres://alice:****@x"
        );
        assert_eq!(url_password("postgres://alice@x/db"), None);
    }
}
