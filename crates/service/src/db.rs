//! Connecting to PostgreSQL: an external server (`DATABASE_URL`) or the
//! private embedded one, plus migrations.

use std::{path::PathBuf, time::Duration};

use anyhow::Context;
use sqlx::{PgPool, postgres::PgPoolOptions};

use crate::local_postgres::LocalPostgres;

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
    /// Maximum connections in this process's pool.
    #[arg(long, env = "COORDINATOR_DB_POOL_SIZE", default_value_t = 20)]
    pub pool_size: u32,
}

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
        let pool = connect(&url, args.pool_size).await?;
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

/// A pool for `url` with sane timeouts.
pub async fn connect(url: &str, max_connections: u32) -> anyhow::Result<PgPool> {
    PgPoolOptions::new()
        .max_connections(max_connections)
        .min_connections(1)
        .acquire_timeout(Duration::from_secs(10))
        .connect(url)
        .await
        .context("connecting to PostgreSQL")
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
