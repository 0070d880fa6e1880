//! Group commit of reports: reports that arrive together (the inline
//! answers of one claimed batch, callbacks of sibling tasks) are applied in
//! one transaction, so one commit carries many transitions and siblings of
//! a mission stop queueing on its row one commit at a time.
//!
//! A few committers per replica take whatever reports are waiting (up to
//! `report_batch`) when they are free. A lone report is applied at once, in
//! a transaction of its own; a batch that already has more than one (the
//! replica is under load) waits up to `report_linger` for more, so that
//! with several replicas, each seeing a share of the reports, a batch still
//! carries many (PostgreSQL's `commit_delay` with `commit_siblings` makes the
//! same trade). A batch locks
//! its missions in id order and releases its agents' slots last, in agent
//! key order (the global lock order), so batches on different replicas
//! cannot deadlock each other. Each report keeps its own answer and its own
//! idempotency: a refused one (unknown attempt, bad token, stale) writes
//! nothing and is answered alone; if any report fails inside the batch, the
//! batch rolls back and every report is applied again on its own.

use std::{sync::Arc, time::Duration};

use sqlx::PgPool;
use tokio::sync::{Mutex, mpsc, oneshot};
use tracing::Instrument;
use uuid::Uuid;

use super::{
    EngineConfig,
    reports::{self, Applied, Origin, ReportError},
    successes::{self, Incoming},
};
use crate::worker::protocol::WorkerReport;

/// Committers per replica: batches applied at once, each on one connection.
/// Two measured best (`coordinator bench`, 1 replica, 400 fan-out missions:
/// 828 tasks/s mean of three runs against 707 with four and 751 with
/// three): a set-wise batch costs the same few statements at any size, and
/// more committers only queue on each other's missions and agents.
pub const COMMITTERS: usize = 2;

/// Reports waiting for a committer.
const QUEUE: usize = 4096;

/// Default of [`super::EngineConfig::report_linger`]. Measured with
/// `coordinator bench --missions 200 --replicas 1,3` (two runs each,
/// alternating): at 3 replicas 3 ms raised throughput from 779 and 690 to
/// 816 and 779 tasks/s and cut the database's CPU per task from 1.90 and
/// 2.12 to 1.72 and 1.78 ms; 1 replica, whose batches are large anyway,
/// was unchanged (1,281 and 1,364 against 1,376 and 1,275).
pub const DEFAULT_LINGER: Duration = Duration::from_millis(3);

/// The way into a replica's committers (cheap to clone).
#[derive(Clone)]
pub struct ReportQueue {
    tx: mpsc::Sender<Job>,
}

impl std::fmt::Debug for ReportQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReportQueue").finish_non_exhaustive()
    }
}

/// [`Origin`] with its token owned, to cross to a committer.
#[derive(Debug, Clone)]
enum Source {
    Worker(String),
    Inline,
    DispatchFailed,
    Unreachable,
    LeaseExpired,
    AgentOffline,
    Busy(Duration),
}

impl Source {
    fn of(origin: Origin<'_>) -> Source {
        match origin {
            Origin::Worker { token } => Source::Worker(token.to_owned()),
            Origin::Inline => Source::Inline,
            Origin::DispatchFailed => Source::DispatchFailed,
            Origin::Unreachable => Source::Unreachable,
            Origin::LeaseExpired => Source::LeaseExpired,
            Origin::AgentOffline => Source::AgentOffline,
            Origin::Busy { retry_after } => Source::Busy(retry_after),
        }
    }

    fn origin(&self) -> Origin<'_> {
        match self {
            Source::Worker(token) => Origin::Worker { token },
            Source::Inline => Origin::Inline,
            Source::DispatchFailed => Origin::DispatchFailed,
            Source::Unreachable => Origin::Unreachable,
            Source::LeaseExpired => Origin::LeaseExpired,
            Source::AgentOffline => Origin::AgentOffline,
            Source::Busy(retry_after) => Origin::Busy {
                retry_after: *retry_after,
            },
        }
    }
}

/// One report waiting to be applied, and where its answer goes.
struct Job {
    item: Item,
    reply: oneshot::Sender<Result<Applied, ReportError>>,
}

impl ReportQueue {
    /// Starts [`COMMITTERS`] committers applying batches of up to `max_batch`
    /// reports with `cfg` (whose own `reports` must be `None`). They stop
    /// when every clone of the queue is dropped.
    pub fn start(pool: PgPool, cfg: EngineConfig, max_batch: usize) -> ReportQueue {
        debug_assert!(cfg.reports.is_none());
        let (tx, rx) = mpsc::channel(QUEUE);
        let rx = Arc::new(Mutex::new(rx));
        let cfg = Arc::new(cfg);
        for _ in 0..COMMITTERS {
            tokio::spawn(committer(
                pool.clone(),
                cfg.clone(),
                rx.clone(),
                max_batch.max(1),
            ));
        }
        ReportQueue { tx }
    }

    /// Applies a report with the next batch and returns its own answer.
    pub async fn submit(
        &self,
        attempt_id: Uuid,
        report: &WorkerReport,
        origin: Origin<'_>,
    ) -> Result<Applied, ReportError> {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            item: Item::new(attempt_id, report.clone(), origin),
            reply,
        };
        // Closed only while the replica shuts down.
        self.tx
            .send(job)
            .await
            .map_err(|_| ReportError::Db(sqlx::Error::PoolClosed))?;
        answer
            .await
            .map_err(|_| ReportError::Db(sqlx::Error::PoolClosed))?
    }
}

/// Takes what is waiting (the first report, then up to `max_batch` in all,
/// lingering for more only when it already has several) and applies it,
/// until the queue closes.
async fn committer(
    pool: PgPool,
    cfg: Arc<EngineConfig>,
    rx: Arc<Mutex<mpsc::Receiver<Job>>>,
    max_batch: usize,
) {
    loop {
        let jobs = {
            let mut rx = rx.lock().await;
            let Some(first) = rx.recv().await else {
                return;
            };
            let mut jobs = vec![first];
            while jobs.len() < max_batch {
                match rx.try_recv() {
                    Ok(job) => jobs.push(job),
                    Err(_) => break,
                }
            }
            if let Some(wait) = linger(jobs.len(), max_batch, cfg.report_linger) {
                let deadline = tokio::time::Instant::now() + wait;
                while jobs.len() < max_batch {
                    match tokio::time::timeout_at(deadline, rx.recv()).await {
                        Ok(Some(job)) => jobs.push(job),
                        _ => break,
                    }
                }
            }
            jobs
        };
        cfg.metrics.report_batch(jobs.len());
        apply_batch(&pool, &cfg, jobs).await;
    }
}

/// How long a batch of `taken` reports waits for more: only one that
/// already has company (a lone report is applied at once) and room left.
fn linger(taken: usize, max_batch: usize, wait: Duration) -> Option<Duration> {
    (taken > 1 && taken < max_batch && !wait.is_zero()).then_some(wait)
}

/// Applies a batch of waiting reports and sends each its answer.
async fn apply_batch(pool: &PgPool, cfg: &EngineConfig, jobs: Vec<Job>) {
    let (items, replies): (Vec<Item>, Vec<_>) = jobs.into_iter().map(|j| (j.item, j.reply)).unzip();
    for (reply, answer) in replies.into_iter().zip(apply_items(pool, cfg, items).await) {
        let _ = reply.send(answer);
    }
}

/// Applies `reports` as one batch, as a replica's committers do: in one
/// transaction when they can, each with its own answer (in input order).
pub async fn apply_together(
    pool: &PgPool,
    cfg: &EngineConfig,
    reports: Vec<(Uuid, WorkerReport, Origin<'_>)>,
) -> Vec<Result<Applied, ReportError>> {
    let items = reports
        .into_iter()
        .map(|(attempt_id, report, origin)| Item::new(attempt_id, report, origin))
        .collect();
    apply_items(pool, cfg, items).await
}

/// One report of a batch.
struct Item {
    attempt_id: Uuid,
    report: WorkerReport,
    source: Source,
    /// The submitter's span: the report's span is its child, as if applied there.
    span: tracing::Span,
}

impl Item {
    /// A report from the current span.
    fn new(attempt_id: Uuid, report: WorkerReport, origin: Origin<'_>) -> Item {
        Item {
            attempt_id,
            report,
            source: Source::of(origin),
            span: tracing::Span::current(),
        }
    }
}

/// Applies the items together, or each alone if that fails; answers in
/// input order.
async fn apply_items(
    pool: &PgPool,
    cfg: &EngineConfig,
    items: Vec<Item>,
) -> Vec<Result<Applied, ReportError>> {
    if !items.is_empty() {
        // The batch locks all its missions up front, in id order (the
        // global lock order): the order of the items no longer matters.
        let order: Vec<usize> = (0..items.len()).collect();
        match together(pool, cfg, &items, &order).await {
            Ok(answers) => return answers,
            Err(e) => {
                tracing::warn!(error = %e, reports = items.len(), "a report batch rolled back; applying each alone");
            }
        }
    }
    let mut answers = Vec::with_capacity(items.len());
    for item in &items {
        answers.push(
            reports::apply_alone(
                pool,
                cfg,
                item.attempt_id,
                &item.report,
                item.source.origin(),
            )
            .instrument(item.span.clone())
            .await,
        );
    }
    answers
}

/// Applies every item in one transaction, in `order`; the answers in
/// `items` order. An error that may have written something rolls it all back.
async fn together(
    pool: &PgPool,
    cfg: &EngineConfig,
    items: &[Item],
    order: &[usize],
) -> Result<Vec<Result<Applied, ReportError>>, ReportError> {
    let mut tx = cfg.begin(pool).await?;
    // The successes first, set-wise; the rest one by one below.
    let incoming: Vec<Incoming<'_>> = items
        .iter()
        .map(|i| Incoming {
            attempt_id: i.attempt_id,
            report: &i.report,
            origin: i.source.origin(),
            span: &i.span,
        })
        .collect();
    let mut releases = Vec::with_capacity(items.len());
    let mut done: Vec<Option<Result<reports::Done, ReportError>>> =
        successes::apply(&mut tx, cfg, &incoming)
            .await?
            .into_iter()
            .map(|d| {
                d.map(|mut d| {
                    releases.extend(d.release.take());
                    Ok(d)
                })
            })
            .collect();
    for &i in order {
        if done[i].is_some() {
            continue;
        }
        let item = &items[i];
        let applied = reports::apply_in(
            &mut tx,
            cfg,
            item.attempt_id,
            &item.report,
            item.source.origin(),
        )
        .instrument(item.span.clone())
        .await;
        done[i] = Some(match applied {
            Ok(mut d) => {
                releases.extend(d.release.take());
                Ok(d)
            }
            // Refused before anything was written: the others go on.
            Err(
                e @ (ReportError::NotFound(_)
                | ReportError::BadToken(_)
                | ReportError::Stale { .. }),
            ) => Err(e),
            Err(e) => return Err(e),
        });
    }
    reports::release_agents(&mut tx, cfg, releases).await?;
    tx.commit().await?;
    cfg.committed();
    Ok(done
        .into_iter()
        .map(|d| match d {
            Some(d) => d.map(|d| d.committed(cfg)),
            None => Err(ReportError::Race("batch order")),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_batch_with_company_and_room_lingers() {
        let ms = Duration::from_millis(3);
        assert_eq!(linger(1, 32, ms), None, "a lone report is applied at once");
        assert_eq!(linger(2, 32, ms), Some(ms));
        assert_eq!(linger(31, 32, ms), Some(ms));
        assert_eq!(linger(32, 32, ms), None, "a full batch goes");
        assert_eq!(linger(5, 32, Duration::ZERO), None, "zero turns it off");
    }
}
