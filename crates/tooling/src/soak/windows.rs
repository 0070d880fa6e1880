//! The soak's figures, window by window, and the verdict on them: does
//! memory or latency grow over the run? The verdict is pure (unit-tested);
//! the figures come from the event log, `/proc` and `pg_stat_activity`.

use sqlx::PgPool;
use time::OffsetDateTime;

/// p50, p95 and p99 of one latency, in milliseconds (NaN when nothing was measured).
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

impl Percentiles {
    /// Of unsorted samples.
    pub fn of(mut samples: Vec<f64>) -> Percentiles {
        samples.sort_by(f64::total_cmp);
        let at = |p: f64| {
            if samples.is_empty() {
                return f64::NAN;
            }
            let rank = ((p / 100.0) * (samples.len() - 1) as f64).round() as usize;
            samples[rank.min(samples.len() - 1)]
        };
        Percentiles {
            p50: at(50.0),
            p95: at(95.0),
            p99: at(99.0),
        }
    }
}

/// What one window measured.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Window {
    /// Seconds since the start of the load at the window's end.
    pub at_secs: f64,
    /// Tasks that succeeded per second.
    pub tasks_per_s: f64,
    /// From a task's `task.queued` to its first `task.dispatched`.
    pub ready_to_dispatch: Percentiles,
    /// From the last of a task's dependencies' `task.succeeded` (the
    /// report, which promotes in its own transaction) to the task's
    /// dispatch: one step of a chain.
    pub report_to_dispatch: Percentiles,
    /// From an event's write to its arrival at a subscriber's stream.
    pub event_lag: Percentiles,
    /// Events the subscribers received (all of them together).
    pub events_delivered: u64,
    /// Largest resident set of a replica, KiB.
    pub rss_kib: u64,
    /// Connections to the database (all clients).
    pub connections: i64,
    /// Subscribers connected at the window's end.
    pub subscribers: usize,
}

/// (ready→dispatch, report→dispatch, tasks succeeded) of the events written in [from, to).
pub async fn latencies(
    pool: &PgPool,
    from: OffsetDateTime,
    to: OffsetDateTime,
) -> sqlx::Result<(Vec<f64>, Vec<f64>, i64)> {
    // Events of the window and the two minutes before it (where the queued
    // and succeeded events its dispatches follow were written); `lag` pairs
    // each dispatch with the task's previous event, so only first
    // dispatches after a queue count (not retries after a failure).
    let row: (Option<Vec<f64>>, Option<Vec<f64>>, i64) = sqlx::query_as(
        "WITH ev AS MATERIALIZED (
             SELECT id, task_id, kind, created_at FROM orchestration_events
             WHERE created_at >= $1 - interval '120 seconds' AND created_at < $2
               AND kind IN ('task.queued', 'task.dispatched', 'task.succeeded')),
         seq AS (
             SELECT task_id, kind, created_at,
                    lag(kind) OVER w AS prev_kind, lag(created_at) OVER w AS prev_at
             FROM ev WINDOW w AS (PARTITION BY task_id ORDER BY id)),
         first AS (
             SELECT task_id, created_at, prev_at FROM seq
             WHERE kind = 'task.dispatched' AND prev_kind = 'task.queued' AND created_at >= $1),
         chain AS (
             SELECT f.created_at - max(s.created_at) AS gap
             FROM first f
             JOIN orchestration_task_dependencies d ON d.task_id = f.task_id
             JOIN ev s ON s.task_id = d.depends_on_task_id AND s.kind = 'task.succeeded'
             GROUP BY f.task_id, f.created_at)
         SELECT (SELECT array_agg(extract(epoch FROM created_at - prev_at)::float8 * 1000) FROM first),
                (SELECT array_agg(extract(epoch FROM gap)::float8 * 1000) FROM chain),
                (SELECT count(*) FROM ev WHERE kind = 'task.succeeded' AND created_at >= $1)",
    )
    .bind(from)
    .bind(to)
    .fetch_one(pool)
    .await?;
    Ok((row.0.unwrap_or_default(), row.1.unwrap_or_default(), row.2))
}

/// Connections to the server, from every client.
pub async fn connections(pool: &PgPool) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'",
    )
    .fetch_one(pool)
    .await
}

/// Resident set of process `pid`, KiB (0 when it is gone).
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// How much a figure may grow from the early windows to the late ones.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest replica RSS, late over early.
    pub rss_growth: f64,
    /// p95 latencies (ready→dispatch, report→dispatch, event lag), late over early.
    pub latency_growth: f64,
}

/// One figure compared between the first and last third of the windows.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Growth {
    /// What grew.
    pub figure: &'static str,
    /// Mean of the early windows.
    pub early: f64,
    /// Mean of the late windows.
    pub late: f64,
    /// late / early.
    pub ratio: f64,
    /// The largest ratio allowed.
    pub limit: f64,
}

impl Growth {
    /// Whether it stayed within its limit (a figure never measured, NaN, is no growth).
    pub fn ok(&self) -> bool {
        self.ratio.is_nan() || self.ratio <= self.limit
    }
}

/// Latencies under this many milliseconds are noise, not growth: a p95
/// going from 2 ms to 5 ms is no trend.
const LATENCY_FLOOR_MS: f64 = 20.0;

/// Compares the first third of the windows (after the first, the warm-up)
/// with the last third. Needs at least four windows; fewer give no verdict.
pub fn growth(windows: &[Window], limits: Limits) -> Vec<Growth> {
    let steady = windows.get(1..).unwrap_or_default();
    if steady.len() < 3 {
        return Vec::new();
    }
    let third = (steady.len() / 3).max(1);
    let (early, late) = (&steady[..third], &steady[steady.len() - third..]);
    let mean = |ws: &[Window], f: &dyn Fn(&Window) -> f64| {
        let v: Vec<f64> = ws.iter().map(f).filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            f64::NAN
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let compare = |figure, f: &dyn Fn(&Window) -> f64, limit, floor: f64| {
        let (e, l) = (mean(early, f), mean(late, f));
        let ratio = if e.is_finite() && l.is_finite() {
            l.max(floor) / e.max(floor)
        } else {
            f64::NAN
        };
        Growth {
            figure,
            early: e,
            late: l,
            ratio,
            limit,
        }
    };
    vec![
        compare("rss_kib", &|w| w.rss_kib as f64, limits.rss_growth, 1.0),
        compare(
            "ready_to_dispatch_p95_ms",
            &|w| w.ready_to_dispatch.p95,
            limits.latency_growth,
            LATENCY_FLOOR_MS,
        ),
        compare(
            "report_to_dispatch_p95_ms",
            &|w| w.report_to_dispatch.p95,
            limits.latency_growth,
            LATENCY_FLOOR_MS,
        ),
        compare(
            "event_lag_p95_ms",
            &|w| w.event_lag.p95,
            limits.latency_growth,
            LATENCY_FLOOR_MS,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(rss: u64, p95: f64) -> Window {
        let p = Percentiles {
            p50: p95 / 2.0,
            p95,
            p99: p95,
        };
        Window {
            rss_kib: rss,
            ready_to_dispatch: p,
            report_to_dispatch: p,
            event_lag: p,
            ..Window::default()
        }
    }

    const LIMITS: Limits = Limits {
        rss_growth: 1.3,
        latency_growth: 2.0,
    };

    #[test]
    fn percentiles_pick_ranks_of_the_sorted_samples() {
        let p = Percentiles::of((1..=100).rev().map(f64::from).collect());
        assert_eq!((p.p50, p.p95, p.p99), (51.0, 95.0, 99.0));
        assert!(Percentiles::of(Vec::new()).p50.is_nan());
    }

    #[test]
    fn a_flat_run_passes_and_the_warm_up_window_is_ignored() {
        let mut ws = vec![window(10_000, 500.0)];
        ws.extend((0..6).map(|_| window(50_000, 100.0)));
        let g = growth(&ws, LIMITS);
        assert_eq!(g.len(), 4);
        assert!(g.iter().all(Growth::ok), "{g:?}");
        assert!((g[0].ratio - 1.0).abs() < 1e-9);
    }

    #[test]
    fn growing_memory_or_latency_fails() {
        let ws: Vec<Window> = (0..7).map(|i| window(50_000 + i * 10_000, 100.0)).collect();
        let g = growth(&ws, LIMITS);
        assert!(!g[0].ok(), "{g:?}");
        assert!(g[1..].iter().all(Growth::ok));
        let ws: Vec<Window> = (0..7)
            .map(|i| window(50_000, 50.0 * 2f64.powi(i)))
            .collect();
        let g = growth(&ws, LIMITS);
        assert!(g[0].ok());
        assert!(!g[1].ok(), "{g:?}");
    }

    #[test]
    fn small_latencies_are_noise_and_too_few_windows_give_no_verdict() {
        let ws: Vec<Window> = (0..7)
            .map(|i| window(50_000, 1.0 + i as f64 * 2.0))
            .collect();
        assert!(growth(&ws, LIMITS).iter().all(Growth::ok));
        assert!(growth(&ws[..3], LIMITS).is_empty());
    }
}
