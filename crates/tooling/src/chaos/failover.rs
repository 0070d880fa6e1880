//! The failover drill of `coordinator chaos --failover`: a private primary
//! and a streaming standby, the replicas given both in a multi-host
//! `DATABASE_URL` (`target_session_attrs=read-write`), and mid-run the
//! primary SIGKILLed and the standby promoted. The replicas must find the new
//! primary on their own.

use std::{path::Path, time::Duration};

use anyhow::Context;

use crate::local_postgres::LocalPostgres;

/// How commits reach the standby.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Replication {
    /// PostgreSQL's default: a commit is acknowledged before the standby
    /// has it, so the last commits before a failover may be lost.
    Async,
    /// `synchronous_standby_names = '*'`: a commit waits for the standby's
    /// flush, so nothing acknowledged is lost.
    Sync,
}

impl Replication {
    /// The name used in figures.
    pub fn as_str(self) -> &'static str {
        match self {
            Replication::Async => "async",
            Replication::Sync => "sync",
        }
    }
}

/// How long after the kill the standby is promoted: the time a failover
/// manager (Patroni, pg_auto_failover) takes to decide, shortened.
const PROMOTE_AFTER: Duration = Duration::from_secs(2);

/// A primary and its standby.
pub struct Pair {
    primary: Option<LocalPostgres>,
    standby: LocalPostgres,
    url: String,
    /// How the standby is fed.
    pub replication: Replication,
}

impl Pair {
    /// Starts the primary in `dir/primary` and a standby of it in
    /// `dir/standby`, streaming (synchronously when asked).
    pub async fn start(dir: &Path, replication: Replication) -> anyhow::Result<Pair> {
        let primary = LocalPostgres::start(&dir.join("primary")).await?;
        let standby = LocalPostgres::start_standby(&primary, &dir.join("standby"))
            .await
            .context("starting the standby")?;
        let limit = Duration::from_secs(60);
        primary.wait_for_standby(false, limit).await?;
        if replication == Replication::Sync {
            primary.require_synchronous_standby().await?;
            primary.wait_for_standby(true, limit).await?;
        }
        let url = multi_host(primary.url(), standby.url())?;
        Ok(Pair {
            primary: Some(primary),
            standby,
            url,
            replication,
        })
    }

    /// The multi-host URL naming both servers, primary first.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The primary's own URL, until it is killed.
    pub fn primary_url(&self) -> Option<&str> {
        self.primary.as_ref().map(LocalPostgres::url)
    }

    /// The standby's own URL.
    pub fn standby_url(&self) -> &str {
        self.standby.url()
    }

    /// Kills the primary (SIGKILL, every backend with it) and, after
    /// [`PROMOTE_AFTER`], promotes the standby. With a `lag`, the primary's
    /// WAL senders are stopped that long first, so the standby is behind
    /// when the primary dies (a synchronous primary's commits wait instead).
    /// Returns when the primary died.
    pub async fn fail_over(&mut self, lag: Duration) -> anyhow::Result<std::time::Instant> {
        let primary = self.primary.take().context("the primary is gone already")?;
        if !lag.is_zero() {
            primary.hold_wal_senders().await?;
            tokio::time::sleep(lag).await;
        }
        let died = std::time::Instant::now();
        primary.kill().await.context("killing the primary")?;
        tokio::time::sleep(PROMOTE_AFTER).await;
        self.standby
            .promote()
            .await
            .context("promoting the standby")?;
        Ok(died)
    }

    /// Stops whatever still runs.
    pub async fn stop(self) -> anyhow::Result<()> {
        if let Some(primary) = self.primary {
            primary.stop().await?;
        }
        self.standby.stop().await
    }
}

/// `postgres://u:p@h1:p1,h2:p2/db?target_session_attrs=read-write` from two
/// single-host URLs of the same user and database.
pub fn multi_host(first: &str, second: &str) -> anyhow::Result<String> {
    let split = |url: &str| -> anyhow::Result<(String, String, String)> {
        let (head, rest) = url.rsplit_once('@').context("no @ in the URL")?;
        let (host, path) = rest.split_once('/').context("no database in the URL")?;
        Ok((head.to_owned(), host.to_owned(), path.to_owned()))
    };
    let (head, a, path) = split(first)?;
    let (_, b, _) = split(second)?;
    Ok(format!(
        "{head}@{a},{b}/{path}?target_session_attrs=read-write"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_lists_the_primary_first_and_asks_for_a_writable_server() {
        let url = multi_host(
            "postgres://coordinator:pw@127.0.0.1:5001/coordinator",
            "postgres://coordinator:pw@127.0.0.1:5002/coordinator",
        )
        .expect("url");
        assert_eq!(
            url,
            "postgres://coordinator:pw@127.0.0.1:5001,127.0.0.1:5002/coordinator?target_session_attrs=read-write"
        );
    }
}
