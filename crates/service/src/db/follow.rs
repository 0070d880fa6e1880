//! Keeping a pool on the usable server of a list ([`super::servers`]) when
//! the primary fails over: a watcher checks the pool's server every second,
//! and when it stops answering or turns read-only, finds the first server of
//! the list that is writable and points the pool's new connections there.
//! Connections to the old server fail their next ping and are dropped.
//!
//! What it does not do is fence: if the old primary is still up and still
//! writable, the pool stays on it. Stopping an old primary after promoting
//! a standby is the failover tool's job, as with any libpq client.

use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use sqlx::{Connection, PgConnection, PgPool, postgres::PgConnectOptions};

use super::servers::{Servers, SessionAttrs};

/// How often the watcher checks the pool's server.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// How long one check of the pool's server may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(3);
/// How long connecting to one server may take (TLS to a distant server is slow).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Times this process moved its pools to another server of the list
/// (`coordinator_db_primary_switches_total`).
pub static PRIMARY_SWITCHES: AtomicU64 = AtomicU64::new(0);

/// Why no server of the list could be used.
#[derive(Debug)]
pub(super) enum NoServer {
    /// The last connection error.
    Error(sqlx::Error),
    /// Every server that answered is in recovery or read-only.
    ReadOnly,
}

/// Whether the server behind `conn` takes writes: not a standby, and not
/// read-only by default (libpq's `read-write` test).
pub(super) async fn writable(conn: &mut PgConnection) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off'",
    )
    .fetch_one(conn)
    .await
}

/// The index of the first server in `servers` that is up and, when asked
/// for, writable.
pub(super) async fn first_usable(servers: &Servers) -> Result<usize, NoServer> {
    let mut last = NoServer::ReadOnly;
    for (i, options) in servers.options.iter().enumerate() {
        match usable(options, servers.attrs).await {
            Ok(true) => return Ok(i),
            Ok(false) => {}
            Err(e) => last = NoServer::Error(e),
        }
    }
    Err(last)
}

/// Whether one server is up and, for `read-write`, takes writes.
async fn usable(options: &PgConnectOptions, attrs: SessionAttrs) -> sqlx::Result<bool> {
    let connect = PgConnection::connect_with(options);
    let mut conn = tokio::time::timeout(CONNECT_TIMEOUT, connect)
        .await
        .map_err(|_| sqlx::Error::Io(std::io::ErrorKind::TimedOut.into()))??;
    let ok = match attrs {
        SessionAttrs::Any => true,
        SessionAttrs::ReadWrite => writable(&mut conn).await?,
    };
    let _ = conn.close().await;
    Ok(ok)
}

/// Whether the pool's current server answers (and, for `read-write`, takes
/// writes) within [`CHECK_TIMEOUT`].
async fn healthy(pool: &PgPool, attrs: SessionAttrs) -> bool {
    let check = async {
        let mut conn = pool.acquire().await?;
        match attrs {
            SessionAttrs::Any => sqlx::query("SELECT 1")
                .execute(&mut *conn)
                .await
                .map(|_| true),
            SessionAttrs::ReadWrite => writable(&mut conn).await,
        }
    };
    matches!(
        tokio::time::timeout(CHECK_TIMEOUT, check).await,
        Ok(Ok(true))
    )
}

/// Watches `pool` (connected to `servers.options[current]`) until it is
/// closed, moving it to another server of the list when its own fails.
pub(super) fn spawn(pool: PgPool, servers: Servers, mut current: usize) {
    tokio::spawn(async move {
        let mut looking = false;
        loop {
            tokio::time::sleep(CHECK_EVERY).await;
            if pool.is_closed() {
                return;
            }
            if healthy(&pool, servers.attrs).await {
                looking = false;
                continue;
            }
            let from = describe(&servers.options[current]);
            match first_usable(&servers).await {
                Ok(i) if i != current => {
                    pool.set_connect_options(servers.options[i].clone());
                    PRIMARY_SWITCHES.fetch_add(1, Ordering::Relaxed);
                    current = i;
                    looking = false;
                    let to = describe(&servers.options[i]);
                    tracing::warn!(%from, %to, "the database server stopped answering or turned read-only; new connections go to the next usable server of DATABASE_URL");
                }
                // The same server answers again: it was a blip.
                Ok(_) => looking = false,
                Err(why) => {
                    if !looking {
                        let why = match why {
                            NoServer::Error(e) => e.to_string(),
                            NoServer::ReadOnly => "every server that answers is read-only".into(),
                        };
                        tracing::warn!(%from, %why, "no usable database server in DATABASE_URL; checking every second");
                    }
                    looking = true;
                }
            }
        }
    });
}

/// `host:port` of one server, for logs.
fn describe(o: &PgConnectOptions) -> String {
    format!("{}:{}", o.get_host(), o.get_port())
}
