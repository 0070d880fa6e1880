//! Streaming replication between private clusters, for the failover drill
//! (`coordinator chaos --failover`): a standby made from a base backup of a
//! running primary, synchronous replication on request, a promotion, and a
//! primary killed the way a machine dies.

use std::{fs, os::unix::fs::PermissionsExt, path::Path, process::Command, time::Duration};

use anyhow::{Context, bail};
use sqlx::{Connection, Executor, PgConnection};

use super::{
    ClusterState, Flavour, LocalPostgres, SUPERUSER, check_reachable, chown_recursive,
    find_binaries, run_as_user, write_private,
};

/// How long a promotion may take before it counts as failed.
const PROMOTE_WAIT_SECS: u32 = 60;

impl LocalPostgres {
    /// Starts a streaming standby of `primary` in `data_dir`: a base backup
    /// over the replication protocol (`pg_basebackup -R`, which writes
    /// `standby.signal` and `primary_conninfo`), then the server, read-only
    /// until [`Self::promote`]. It shares the primary's password.
    pub async fn start_standby(primary: &LocalPostgres, data_dir: &Path) -> anyhow::Result<Self> {
        let bin = find_binaries()?;
        let primary_state: ClusterState = serde_json::from_slice(
            &fs::read(primary.data_dir.join("postgres.json"))
                .context("reading the primary's postgres.json")?,
        )?;
        fs::create_dir_all(data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
        let data_dir = data_dir.canonicalize()?;
        let cluster_dir = data_dir.join("pg");
        fs::create_dir_all(&cluster_dir)?;
        fs::set_permissions(&cluster_dir, fs::Permissions::from_mode(0o700))?;
        let run_as = run_as_user()?;
        if let Some(user) = run_as {
            fs::set_permissions(&data_dir, fs::Permissions::from_mode(0o711))?;
            check_reachable(&data_dir)?;
            chown_recursive(&cluster_dir, user)?;
        }
        let mut cmd = Command::new(bin.join("pg_basebackup"));
        cmd.args(["-h", "127.0.0.1", "-p"])
            .arg(primary_state.port.to_string())
            .args(["-U", SUPERUSER, "-D"])
            .arg(&cluster_dir)
            .args(["-R", "-X", "stream", "-c", "fast", "--no-password"])
            .env("PGPASSWORD", &primary_state.password)
            .stdin(std::process::Stdio::null());
        if let Some(user) = run_as {
            use std::os::unix::process::CommandExt;
            cmd.uid(user.uid).gid(user.gid);
        }
        let out = cmd.output().context("running pg_basebackup")?;
        if !out.status.success() {
            bail!(
                "pg_basebackup failed ({}):\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let state = ClusterState {
            port: 0,
            password: primary_state.password,
        };
        write_private(
            &data_dir.join("postgres.json"),
            &serde_json::to_vec_pretty(&state)?,
        )?;
        Self::start_inner(
            &data_dir,
            Flavour {
                throwaway: false,
                fast: false,
                bench: false,
            },
        )
        .await
    }

    /// Makes commits wait until a standby has flushed them
    /// (`synchronous_standby_names = '*'`): a failover then loses nothing
    /// that was acknowledged.
    pub async fn require_synchronous_standby(&self) -> anyhow::Result<()> {
        let mut conn = PgConnection::connect(&self.url).await?;
        conn.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
            .await?;
        conn.execute("SELECT pg_reload_conf()").await?;
        conn.close().await?;
        Ok(())
    }

    /// Waits until a standby streams from this primary (and, once
    /// synchronous replication is asked for, is the synchronous one).
    pub async fn wait_for_standby(&self, synchronous: bool, limit: Duration) -> anyhow::Result<()> {
        let mut conn = PgConnection::connect(&self.url).await?;
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let streaming: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM pg_stat_replication
                 WHERE state = 'streaming' AND (NOT $1 OR sync_state = 'sync'))",
            )
            .bind(synchronous)
            .fetch_one(&mut conn)
            .await?;
            if streaming {
                break;
            }
            if tokio::time::Instant::now() > deadline {
                bail!("no standby streamed from the primary within {limit:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        conn.close().await?;
        Ok(())
    }

    /// Promotes this standby to a primary, waiting until it takes writes.
    pub async fn promote(&self) -> anyhow::Result<()> {
        let mut conn = PgConnection::connect(&self.url).await?;
        let promoted: bool = sqlx::query_scalar("SELECT pg_promote(true, $1)")
            .bind(PROMOTE_WAIT_SECS as i32)
            .fetch_one(&mut conn)
            .await?;
        conn.close().await?;
        if !promoted {
            bail!("the standby was not promoted within {PROMOTE_WAIT_SECS} s");
        }
        Ok(())
    }

    /// Stops this primary's WAL senders (SIGSTOP): from now on its standbys
    /// receive nothing, as over a link that has gone quiet, and a synchronous
    /// primary's commits wait. Stopping the standby's receiver instead would
    /// not do: what the sender already wrote waits in the socket buffers.
    pub async fn hold_wal_senders(&self) -> anyhow::Result<()> {
        let mut conn = PgConnection::connect(&self.url).await?;
        let pids: Vec<i32> = sqlx::query_scalar("SELECT pid FROM pg_stat_replication")
            .fetch_all(&mut conn)
            .await?;
        conn.close().await?;
        anyhow::ensure!(!pids.is_empty(), "the primary has no WAL sender");
        let status = Command::new("kill")
            .arg("-STOP")
            .args(pids.iter().map(i32::to_string))
            .status()
            .context("running kill")?;
        if !status.success() {
            bail!("could not stop the WAL senders {pids:?} ({status})");
        }
        Ok(())
    }

    /// SIGKILLs the server and every backend at once, as a machine dying
    /// would: no shutdown checkpoint, no last WAL sent to standbys.
    pub async fn kill(mut self) -> anyhow::Result<()> {
        let pid_file = self.data_dir.join("pg").join("postmaster.pid");
        let pid = fs::read_to_string(&pid_file)
            .with_context(|| format!("reading {}", pid_file.display()))?
            .lines()
            .next()
            .and_then(|l| l.trim().parse::<u32>().ok())
            .context("no pid in postmaster.pid")?;
        let mut victims = vec![pid.to_string()];
        victims.extend(children_of(pid).into_iter().map(|p| p.to_string()));
        // Backends may exit on their own between the listing and the kill,
        // so only the postmaster's death is checked.
        Command::new("kill")
            .arg("-KILL")
            .args(&victims)
            .stderr(std::process::Stdio::null())
            .status()
            .context("running kill")?;
        // The wrapper exits once the postmaster is gone.
        if let Some(mut child) = self.server.take() {
            drop(child.stdin.take());
            let waited = tokio::time::timeout(
                Duration::from_secs(10),
                tokio::task::spawn_blocking(move || child.wait()),
            )
            .await;
            if !matches!(waited, Ok(Ok(Ok(_)))) {
                bail!("the postmaster {pid} did not die within 10 s of kill -KILL");
            }
        }
        Ok(())
    }
}

/// The pids whose parent is `parent` (from /proc).
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                // The fourth field, after the parenthesised command name.
                .and_then(|s| {
                    s.rsplit_once(')')
                        .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                })
                == Some(parent)
        })
        .collect()
}
