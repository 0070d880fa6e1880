//! What the database did during a throughput phase, counted so that the
//! bench's own queries are not in the figures.
//!
//! - **Statements** come from `pg_stat_statements` (reset at the phase start),
//!   summed over the bench database. The bench's only connection into that
//!   database during a phase is the *poller* (it waits for the missions to
//!   complete); it runs as a role of its own (`SET ROLE` to a `NOLOGIN` role
//!   created for the run), and the sum leaves that role's `userid` out, so
//!   the exclusion is exact.
//! - **Commits** are the delta of `pg_stat_database.xact_commit` of the bench
//!   database, minus the poller's own transactions, counted one by one (it
//!   sends each statement as a simple query: one implicit transaction each,
//!   nothing prepared behind its back). Backends report those counters
//!   lazily (at most once a second, at the latest 10 s after going idle, and
//!   at exit), so a phase spans its replicas' whole life: it starts before
//!   they start and ends after their connections have closed; the bench's
//!   own connections force their report with `pg_stat_force_next_flush()`
//!   (PostgreSQL 15) on both edges. [`Observer::self_check`] runs an empty
//!   phase at the start and says so if it does not count zero.
//! - **Lock waiters** are sampled every 5 ms from `pg_stat_activity`:
//!   backends of the bench database with `wait_event_type = 'Lock'`.
//!
//! Everything else the observer reads (the counters, the samples, the WAL
//! position) it reads over a connection to *another* database of the same
//! server (the views are cluster-wide), so none of it lands in the bench
//! database's counters. Without `pg_stat_statements`, or without the right to
//! create a role, the figures that need them are `None` and the bench says so
//! once on stderr; it never fails for them.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::bail;
use serde::{Deserialize, Serialize};
use sqlx::{Connection, Executor, PgConnection, PgPool, Row, postgres::PgRow};
use tokio::{sync::Mutex, task::JoinHandle};
use uuid::Uuid;

use super::cpu;

/// How often `pg_stat_activity` is sampled for lock waiters.
const SAMPLE_EVERY: Duration = Duration::from_millis(5);
/// Statements kept in a phase's top list, unless
/// `COORDINATOR_BENCH_TOP_STATEMENTS` asks for more (to attribute a change
/// in statements per task to the statements that changed).
const TOP_STATEMENTS: i64 = 10;

/// How many statements a phase's top list keeps.
fn top_statements() -> i64 {
    std::env::var("COORDINATOR_BENCH_TOP_STATEMENTS")
        .ok()
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(TOP_STATEMENTS)
}

/// How long after a backend leaves `pg_stat_activity` its counters may
/// still be arriving.
const EXIT_GRACE: Duration = Duration::from_millis(200);
/// Characters of a statement's text kept in the top list.
const QUERY_CHARS: usize = 100;

/// Makes a connection report its pending counters when it next goes idle.
/// It reads a catalog row on purpose: a backend with no pending table
/// counters skips the report, transaction counts included.
const FLUSH_SQL: &str =
    "SELECT pg_stat_force_next_flush() FROM pg_database WHERE datname = current_database()";

/// One of the statements that took the most time in a phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopStatement {
    /// Normalised text, shortened to about 100 characters, whitespace folded.
    pub query: String,
    /// Calls per task.
    pub calls_per_task: f64,
    /// Mean execution time, ms.
    pub mean_ms: f64,
    /// Share of all statement time in the phase (0–1).
    pub time_share: f64,
}

/// The counts of one phase (each `None` when it could not be measured).
#[derive(Debug, Clone, Default)]
pub(crate) struct PhaseCounts {
    /// Top-level statements per task.
    pub(crate) stmts_per_task: Option<f64>,
    /// Committed transactions per task.
    pub(crate) commits_per_task: Option<f64>,
    /// Mean backends waiting on a lock, over the samples.
    pub(crate) lock_waiters_mean: Option<f64>,
    /// Share of samples in which any backend waited on a lock.
    pub(crate) lock_wait_share: Option<f64>,
    /// The statements with the most total time.
    pub(crate) top: Vec<TopStatement>,
}

/// The observer of the bench database (see the module docs).
pub(crate) struct Observer {
    /// A connection to another database of the server.
    admin: Mutex<PgConnection>,
    /// The connection to the server, for the sampler's own connection.
    server_url: String,
    /// The poller, inside the bench database, as the observer role.
    poller: Mutex<PgConnection>,
    /// The poller's backend pid.
    poller_pid: i32,
    /// The bench database's name.
    db: String,
    /// The observer role's oid, if it could be created.
    role: Option<(String, i64)>,
    /// Whether `pg_stat_statements` can be read and reset.
    statements: bool,
    /// Whether `pg_stat_force_next_flush()` exists (PostgreSQL 15+).
    flush: bool,
    /// Transactions the poller has run so far (each of its statements is
    /// one: it sends them as simple queries, so nothing is prepared behind
    /// its back).
    own: AtomicU64,
    /// The server's postmaster, when it runs on this machine (for its CPU time).
    postmaster: Option<u32>,
    /// Clock ticks per second of `/proc`'s CPU times.
    ticks_per_sec: u64,
}

/// What [`Observer::start_phase`] read, to subtract at the end.
pub(crate) struct PhaseStart {
    /// Backends of the bench's own in the bench database.
    ours: Vec<i32>,
    xact_commit: i64,
    own: u64,
    /// The lock sampler while it runs ([`Observer::start_sampling`]).
    sampler: Option<Sampler>,
    /// What it sampled, once stopped.
    samples: Option<Samples>,
}

impl PhaseStart {
    /// Stops the lock sampler (the measured part is over).
    pub(crate) async fn stop_sampling(&mut self) {
        if let Some(s) = self.sampler.take() {
            self.samples = s.stop().await;
        }
    }
}

impl Observer {
    /// Sets up the observer for the bench database `db_url` on the server at
    /// `server_url` (whose own database must be a different one).
    pub(crate) async fn start(server_url: &str, db_url: &str) -> anyhow::Result<Observer> {
        let admin = PgConnection::connect(server_url).await?;
        let mut setup = PgConnection::connect(db_url).await?;
        let db_name: String = sqlx::query_scalar("SELECT current_database()")
            .fetch_one(&mut setup)
            .await?;
        let statements = enable_statements(&mut setup).await;
        let role = create_role(&mut setup).await;
        setup.close().await?;
        let mut poller = PgConnection::connect(db_url).await?;
        if let Some((name, _)) = &role {
            poller
                .execute(sqlx::AssertSqlSafe(format!("SET ROLE {name}")))
                .await?;
        }
        let poller_pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&mut poller)
            .await?;
        let flush = sqlx::raw_sql(FLUSH_SQL).execute(&mut poller).await.is_ok();
        if !statements {
            eprintln!(
                "note: pg_stat_statements is not loaded on this server (shared_preload_libraries): statements per task are not measured"
            );
        } else if role.is_none() {
            eprintln!(
                "note: no right to create the observer role: statements per task are not measured (the bench's polls could not be told apart)"
            );
        }
        if !flush {
            eprintln!(
                "note: no pg_stat_force_next_flush() (PostgreSQL 15+): commits per task are not measured"
            );
        }
        Ok(Observer {
            admin: Mutex::new(admin),
            server_url: server_url.to_owned(),
            poller: Mutex::new(poller),
            poller_pid,
            db: db_name,
            statements: statements && role.is_some(),
            role,
            flush,
            own: AtomicU64::new(0),
            postmaster: u32::try_from(poller_pid).ok().and_then(cpu::postmaster_of),
            ticks_per_sec: cpu::ticks_per_sec(),
        })
    }

    /// Where a phase starts: the poller's counters reported, `pg_stat_statements`
    /// reset, `xact_commit` read. `quiet` is a pool
    /// of the bench's into the bench database: its pending counters are
    /// reported first, so they cannot land inside the phase.
    pub(crate) async fn start_phase(&self, quiet: &PgPool) -> anyhow::Result<PhaseStart> {
        let mut ours = vec![self.poller_pid];
        if self.flush {
            // Before the reset: these statements are not the phase's.
            ours.extend(flush_pool(quiet).await?);
        }
        let mut poller = self.poller.lock().await;
        if self.statements {
            // The view and the function live in the bench database; the
            // poller's role is left out of the sums.
            self.simple(&mut poller, "SELECT pg_stat_statements_reset()")
                .await?;
        }
        if self.flush {
            self.simple(&mut poller, FLUSH_SQL).await?;
        }
        drop(poller);
        let own = self.own.load(Ordering::Relaxed);
        let mut admin = self.admin.lock().await;
        let xact_commit = xact_commit(&mut admin, &self.db).await?;
        drop(admin);
        Ok(PhaseStart {
            ours,
            xact_commit,
            own,
            sampler: None,
            samples: None,
        })
    }

    /// The CPU clocks of this process and the server's, now (`None` without `/proc`).
    pub(crate) fn cpu_sample(&self) -> Option<cpu::Sample> {
        cpu::sample(self.postmaster)
    }

    /// CPU milliseconds per task of this process and of the server between
    /// two [`Observer::cpu_sample`]s.
    pub(crate) fn cpu_per_task(
        &self,
        start: Option<cpu::Sample>,
        end: Option<cpu::Sample>,
        tasks: f64,
    ) -> (Option<f64>, Option<f64>) {
        match (start, end) {
            (Some(a), Some(b)) => {
                let spent = cpu::spent(a, b, self.ticks_per_sec);
                (
                    Some(spent.bench_ms / tasks),
                    spent.server_ms.map(|ms| ms / tasks),
                )
            }
            _ => (None, None),
        }
    }

    /// Starts sampling lock waiters for the measured part of `phase`.
    pub(crate) async fn start_sampling(&self, phase: &mut PhaseStart) -> anyhow::Result<()> {
        phase.sampler = Some(Sampler::start(&self.server_url, &self.db, self.poller_pid).await?);
        Ok(())
    }

    /// Waits until every mission's work is done (approve-mode missions stop
    /// at the review gate, which counts as done here), counting its polls.
    pub(crate) async fn wait_completed(
        &self,
        runs: &[Uuid],
        limit: Duration,
    ) -> anyhow::Result<()> {
        let wait = Completion::new(runs.len(), limit);
        let ids: Vec<String> = runs.iter().map(Uuid::to_string).collect();
        let poll = COMPLETION_SQL.replace("$1", &format!("'{{{}}}'::uuid[]", ids.join(",")));
        let mut poller = self.poller.lock().await;
        loop {
            let row = self.simple(&mut poller, &poll).await?;
            if wait.done((row.try_get(0)?, row.try_get(1)?))? {
                return Ok(());
            }
            tokio::time::sleep(Completion::POLL).await;
        }
    }

    /// The phase's counts over `tasks` tasks. Call it once the phase's
    /// replicas have stopped: their connections' counters arrive at exit.
    pub(crate) async fn finish_phase(
        &self,
        mut start: PhaseStart,
        tasks: f64,
    ) -> anyhow::Result<PhaseCounts> {
        start.stop_sampling().await;
        let samples = start.samples;
        let mut counts = PhaseCounts {
            lock_waiters_mean: samples.map(|s| s.mean()),
            lock_wait_share: samples.map(|s| s.share()),
            ..PhaseCounts::default()
        };
        if self.flush {
            self.wait_for_exits(&start.ours).await?;
        }
        let mut poller = self.poller.lock().await;
        if let (true, Some((_, role))) = (self.statements, &self.role) {
            let (calls, top) = self.statements(&mut poller, *role, tasks).await?;
            counts.stmts_per_task = Some(calls / tasks);
            counts.top = top;
        }
        if self.flush {
            self.simple(&mut poller, FLUSH_SQL).await?;
            let own = self.own.load(Ordering::Relaxed) - start.own;
            let mut admin = self.admin.lock().await;
            let after = xact_commit(&mut admin, &self.db).await?;
            counts.commits_per_task = Some((after - start.xact_commit - own as i64) as f64 / tasks);
        }
        Ok(counts)
    }

    /// An empty phase must count no commit and no statement: if the
    /// accounting is off on this server, say by how much (once, on stderr).
    pub(crate) async fn self_check(&self, quiet: &PgPool) -> anyhow::Result<()> {
        let start = self.start_phase(quiet).await?;
        let counts = self.finish_phase(start, 1.0).await?;
        let off: Vec<String> = [
            ("commits", counts.commits_per_task),
            ("statements", counts.stmts_per_task),
        ]
        .into_iter()
        .filter_map(|(what, n)| n.filter(|n| *n != 0.0).map(|n| format!("{n} {what}")))
        .collect();
        if !off.is_empty() {
            eprintln!(
                "note: an empty phase counted {} (the bench's own accounting is off by that much per phase)",
                off.join(", ")
            );
        }
        Ok(())
    }

    /// Waits (up to 10 s) until the only client backends left in the bench
    /// database are the bench's own (`ours`).
    async fn wait_for_exits(&self, ours: &[i32]) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut admin = self.admin.lock().await;
        loop {
            let others: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = $1 AND backend_type = 'client backend' AND pid <> ALL($2)",
            )
            .bind(&self.db)
            .bind(ours)
            .fetch_one(&mut *admin)
            .await?;
            if others == 0 {
                // An exiting backend leaves `pg_stat_activity` a moment
                // before it reports its last counters (exit hooks run in
                // reverse order of registration): give it that moment.
                tokio::time::sleep(EXIT_GRACE).await;
                return Ok(());
            }
            if Instant::now() > deadline {
                eprintln!(
                    "note: {others} connection(s) still open 10 s after the phase: commits per task may miss theirs"
                );
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Drops the observer role (best effort; a temporary server goes anyway).
    pub(crate) async fn stop(self, db_url: &str) {
        let _ = self.poller.into_inner().close().await;
        if let Some((name, _)) = &self.role
            && let Ok(mut conn) = PgConnection::connect(db_url).await
        {
            let _ = conn
                .execute(sqlx::AssertSqlSafe(format!(
                    "DROP OWNED BY {name}; DROP ROLE {name}"
                )))
                .await;
            let _ = conn.close().await;
        }
        let _ = self.admin.into_inner().close().await;
    }
}

/// Creates the extension in the bench database and checks that it can be
/// read and reset (the library must be preloaded by the server).
async fn enable_statements(conn: &mut PgConnection) -> bool {
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .await
        .is_ok()
        && conn
            .execute("SELECT count(*) FROM pg_stat_statements WHERE false")
            .await
            .is_ok()
        && conn
            .execute("SELECT pg_stat_statements_reset()")
            .await
            .is_ok()
}

/// A `NOLOGIN` role for the poller, allowed to read the missions and report
/// its counters: (name, oid), or `None` without the right to create it.
async fn create_role(conn: &mut PgConnection) -> Option<(String, i64)> {
    let name = format!(
        "coordinator_bench_observer_{}",
        &Uuid::new_v4().simple().to_string()[..8]
    );
    let sql = format!(
        "CREATE ROLE {name} NOLOGIN;
         GRANT {name} TO CURRENT_USER;
         GRANT SELECT ON orchestration_runs TO {name};
         GRANT pg_read_all_stats TO {name};
         GRANT EXECUTE ON FUNCTION pg_stat_statements_reset TO {name};
         GRANT EXECUTE ON FUNCTION pg_stat_force_next_flush() TO {name}"
    );
    // The function grants fail without the extension or before PostgreSQL
    // 15; the role is still usable for what remains.
    let created = conn.execute(sqlx::AssertSqlSafe(sql)).await;
    if created.is_err() {
        let _ = conn
            .execute(sqlx::AssertSqlSafe(format!(
                "CREATE ROLE {name} NOLOGIN; GRANT {name} TO CURRENT_USER;
                 GRANT SELECT ON orchestration_runs TO {name}; GRANT pg_read_all_stats TO {name}"
            )))
            .await
            .ok()?;
    }
    let oid: i64 = sqlx::query_scalar("SELECT oid::int8 FROM pg_roles WHERE rolname = $1")
        .bind(&name)
        .fetch_one(conn)
        .await
        .ok()?;
    Some((name, oid))
}

/// `xact_commit` of database `db`.
async fn xact_commit(admin: &mut PgConnection, db: &str) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT xact_commit FROM pg_stat_database WHERE datname = $1")
        .bind(db)
        .fetch_one(admin)
        .await
}

/// Every connection of `pool` reports its pending counters; returns their
/// backend pids. All are held at once, so each one runs the flush (nobody
/// else uses the pool meanwhile), and the pid comes from the same statement,
/// so reading it costs no extra transaction.
async fn flush_pool(pool: &PgPool) -> anyhow::Result<Vec<i32>> {
    let mut held = Vec::new();
    for _ in 0..pool.size().max(1) {
        held.push(pool.acquire().await?);
    }
    let mut pids = Vec::with_capacity(held.len());
    for conn in &mut held {
        pids.push(
            sqlx::query_scalar(
                // The catalog row: see FLUSH_SQL.
                "SELECT pg_backend_pid() FROM (SELECT pg_stat_force_next_flush()) f, pg_database d
                 WHERE d.datname = current_database()",
            )
            .fetch_one(&mut **conn)
            .await?,
        );
    }
    Ok(pids)
}

/// Sums in `pg_stat_statements` of every role but `role`, the observer's.
const SUMS_SQL: &str = "SELECT coalesce(sum(calls), 0)::float8, coalesce(sum(total_exec_time), 0)::float8
 FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND userid <> {role}::oid";
/// The statements with the most total time, every role but `role`.
const TOP_SQL: &str = "SELECT query, calls::float8, mean_exec_time, total_exec_time
 FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND userid <> {role}::oid ORDER BY total_exec_time DESC LIMIT {limit}";

impl Observer {
    /// Runs one statement on the poller as a simple query (one transaction,
    /// counted) and returns its first row.
    async fn simple(&self, poller: &mut PgConnection, sql: &str) -> anyhow::Result<PgRow> {
        let row = sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
            .fetch_one(&mut *poller)
            .await;
        self.own.fetch_add(1, Ordering::Relaxed);
        Ok(row?)
    }

    /// Total top-level calls in the bench database except `role`'s, and the
    /// top statements by total time, read by the poller (the view exists
    /// only where the extension was created).
    async fn statements(
        &self,
        poller: &mut PgConnection,
        role: i64,
        tasks: f64,
    ) -> anyhow::Result<(f64, Vec<TopStatement>)> {
        let sums = self
            .simple(poller, &SUMS_SQL.replace("{role}", &role.to_string()))
            .await?;
        let (calls, total_ms): (f64, f64) = (sums.try_get(0)?, sums.try_get(1)?);
        let top_sql = TOP_SQL
            .replace("{role}", &role.to_string())
            .replace("{limit}", &top_statements().to_string());
        let rows = sqlx::raw_sql(sqlx::AssertSqlSafe(top_sql))
            .fetch_all(&mut *poller)
            .await;
        self.own.fetch_add(1, Ordering::Relaxed);
        let mut top = Vec::new();
        for r in rows? {
            let (query, calls, mean_ms, total): (String, f64, f64, f64) =
                (r.try_get(0)?, r.try_get(1)?, r.try_get(2)?, r.try_get(3)?);
            top.push(TopStatement {
                query: shorten(&query),
                calls_per_task: calls / tasks,
                mean_ms,
                time_share: if total_ms > 0.0 {
                    total / total_ms
                } else {
                    0.0
                },
            });
        }
        Ok((calls, top))
    }
}

/// Folds whitespace and keeps about [`QUERY_CHARS`] characters.
pub(crate) fn shorten(query: &str) -> String {
    let folded = query.split_whitespace().collect::<Vec<_>>().join(" ");
    if folded.chars().count() <= QUERY_CHARS {
        return folded;
    }
    let cut: String = folded.chars().take(QUERY_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// Lock-waiter samples so far.
#[derive(Debug, Clone, Copy, Default)]
struct Samples {
    taken: u64,
    waiters: u64,
    with_waiters: u64,
}

impl Samples {
    fn mean(self) -> f64 {
        self.waiters as f64 / self.taken.max(1) as f64
    }

    fn share(self) -> f64 {
        self.with_waiters as f64 / self.taken.max(1) as f64
    }
}

/// Samples `pg_stat_activity` every [`SAMPLE_EVERY`] until stopped.
struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<anyhow::Result<Samples>>,
}

impl Sampler {
    /// Starts sampling database `db` (leaving out backend `poller`) over a
    /// connection of its own to the server's other database.
    async fn start(server_url: &str, db: &str, poller: i32) -> anyhow::Result<Sampler> {
        let mut conn = PgConnection::connect(server_url).await?;
        let (stop, db) = (Arc::new(AtomicBool::new(false)), db.to_owned());
        let stopped = stop.clone();
        let handle = tokio::spawn(async move {
            let mut s = Samples::default();
            let mut tick = tokio::time::interval(SAMPLE_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            while !stopped.load(Ordering::Relaxed) {
                tick.tick().await;
                let waiting: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM pg_stat_activity
                     WHERE datname = $1 AND wait_event_type = 'Lock' AND pid <> $2",
                )
                .bind(&db)
                .bind(poller)
                .fetch_one(&mut conn)
                .await?;
                s.taken += 1;
                s.waiters += waiting as u64;
                s.with_waiters += u64::from(waiting > 0);
            }
            let _ = conn.close().await;
            Ok(s)
        });
        Ok(Sampler { stop, handle })
    }

    /// Stops sampling; `None` if the sampler failed.
    async fn stop(self) -> Option<Samples> {
        self.stop.store(true, Ordering::Relaxed);
        match self.handle.await {
            Ok(Ok(s)) if s.taken > 0 => Some(s),
            Ok(Err(e)) => {
                eprintln!("note: the lock-waiter sampler failed: {e:#}");
                None
            }
            _ => None,
        }
    }
}

/// Missions done (completed or at the review gate) and failed among `$1`.
pub(crate) const COMPLETION_SQL: &str =
    "SELECT count(*) FILTER (WHERE status IN ('completed', 'awaiting_review')),
        count(*) FILTER (WHERE status IN ('failed', 'cancelled'))
 FROM orchestration_runs WHERE id = ANY($1)";

/// The verdict on each poll while waiting for missions to finish, shared by
/// the bench's `wait_completed` and the observer's counted polls.
pub(crate) struct Completion {
    expected: usize,
    limit: Duration,
    deadline: Instant,
}

impl Completion {
    /// Time between polls.
    pub(crate) const POLL: Duration = Duration::from_millis(10);

    /// Waiting for `expected` missions for at most `limit`, from now.
    pub(crate) fn new(expected: usize, limit: Duration) -> Completion {
        Completion {
            expected,
            limit,
            deadline: Instant::now() + limit,
        }
    }

    /// `(done, failed)` from one poll: true when all are done; an error
    /// when one failed or the time ran out.
    pub(crate) fn done(&self, (done, failed): (i64, i64)) -> anyhow::Result<bool> {
        if failed > 0 {
            bail!("{failed} benchmark mission(s) failed");
        }
        if done as usize == self.expected {
            return Ok(true);
        }
        if Instant::now() > self.deadline {
            bail!(
                "only {done} of {} missions completed within {:?}",
                self.expected,
                self.limit
            );
        }
        Ok(false)
    }
}

/// What the database has done so far, in counters that read-only queries
/// (the bench's own polling) do not move.
#[derive(Debug, Clone, Copy)]
pub(super) struct DbCost {
    /// The next transaction id: one is assigned per transaction that writes.
    pub(super) next_xid: i64,
    /// The WAL insert position, in bytes.
    pub(super) wal_lsn: i64,
}

/// Reads [`DbCost`] without assigning a transaction id itself, over `pool`
/// (on another database: the counters are the server's, and reading them
/// there keeps the read out of the bench database's commits).
pub(super) async fn db_cost(pool: &PgPool) -> sqlx::Result<DbCost> {
    let (next_xid, wal_lsn): (i64, i64) = sqlx::query_as(
        "SELECT txid_snapshot_xmax(txid_current_snapshot())::int8,
                pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::int8",
    )
    .fetch_one(pool)
    .await?;
    Ok(DbCost { next_xid, wal_lsn })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_statements_are_shortened_and_folded() {
        assert_eq!(shorten("SELECT  1\n  FROM t"), "SELECT 1 FROM t");
        let long = format!("SELECT {}", "x, ".repeat(60));
        let s = shorten(&long);
        assert_eq!(s.chars().count(), 100);
        assert!(s.ends_with('…'));
    }
}
