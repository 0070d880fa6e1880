//! Process-local metrics and the Prometheus text exposition format.
//!
//! A small hand-written registry of atomics rather than the `prometheus` or
//! `metrics` crates: the set of figures is fixed at compile time (labels
//! come from closed enums), so a registry, label maps and their locking
//! would buy nothing, and no dependency lands in the lockfile. The engine
//! reaches the registry through [`crate::engine::EngineConfig::metrics`];
//! `GET /metrics` renders it together with figures read from the database
//! at scrape time (see [`crate::store::metrics`]). Counters here are per
//! replica: Prometheus sums them across replicas.

use std::{
    fmt::Write as _,
    sync::atomic::{AtomicU64, Ordering},
    time::{Duration, Instant},
};

use crate::domain::{FailureKind, TaskStatus};

/// Bucket bounds (seconds) for latencies from milliseconds to a minute.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Bucket bounds (seconds) for LLM planner calls, which take seconds to minutes.
pub const PLANNER_BUCKETS: &[f64] = &[0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// A monotonically increasing count.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds one.
    pub fn inc(&self) {
        self.add(1);
    }

    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// The current count.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A monotonically increasing float (costs), stored as `f64` bits.
#[derive(Debug, Default)]
pub struct FloatCounter(AtomicU64);

impl FloatCounter {
    /// Adds `v` (negative or non-finite values are ignored: counters only grow).
    pub fn add(&self, v: f64) {
        if !(v.is_finite() && v > 0.0) {
            return;
        }
        // No float fetch_add on atomics: compare-and-swap until it sticks.
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + v).to_bits())
            });
    }

    /// The current total.
    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

/// A histogram with fixed bucket bounds.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    /// Per-bucket (not cumulative) counts; the last one is `+Inf`.
    counts: Vec<AtomicU64>,
    sum: FloatCounter,
}

impl Histogram {
    /// An empty histogram over `bounds` (ascending upper bounds).
    pub fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum: FloatCounter::default(),
        }
    }

    /// Records one value.
    pub fn observe(&self, v: f64) {
        let i = bucket_index(self.bounds, v);
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum.add(v);
    }

    /// Records one duration in seconds.
    pub fn observe_duration(&self, d: Duration) {
        self.observe(d.as_secs_f64());
    }

    /// Bounds, cumulative counts per bound plus `+Inf` last, and the sum.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let raw: Vec<u64> = self
            .counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        HistogramSnapshot {
            bounds: self.bounds.to_vec(),
            cumulative: cumulate(&raw),
            sum: self.sum.get(),
        }
    }
}

/// The index of the first bucket whose upper bound is `>= v` (`le` semantics),
/// or the `+Inf` bucket.
pub fn bucket_index(bounds: &[f64], v: f64) -> usize {
    bounds.iter().position(|b| v <= *b).unwrap_or(bounds.len())
}

/// Running totals of per-bucket counts (Prometheus buckets are cumulative).
pub fn cumulate(raw: &[u64]) -> Vec<u64> {
    raw.iter()
        .scan(0u64, |acc, c| {
            *acc += c;
            Some(*acc)
        })
        .collect()
}

/// A histogram's figures at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// Upper bounds, ascending (without `+Inf`).
    pub bounds: Vec<f64>,
    /// Cumulative counts: one per bound, then `+Inf` (the total count).
    pub cumulative: Vec<u64>,
    /// Sum of observed values.
    pub sum: f64,
}

/// A phase of the engine tick (label `phase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Claiming ready tasks and starting their dispatches.
    Dispatch,
    /// Reclaiming expired leases.
    Reconcile,
    /// Asking silent attempts for progress.
    ProgressChecks,
    /// Soliciting proposals for open tenders.
    ContractNet,
    /// The periodic sweeps (offline agents, expiries, safety nets, re-checks).
    Sweep,
}

impl Phase {
    /// Every phase, in tick order.
    pub const ALL: [Phase; 5] = [
        Phase::Dispatch,
        Phase::Reconcile,
        Phase::ProgressChecks,
        Phase::ContractNet,
        Phase::Sweep,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Dispatch => "dispatch",
            Phase::Reconcile => "reconcile",
            Phase::ProgressChecks => "progress_checks",
            Phase::ContractNet => "contract_net",
            Phase::Sweep => "sweep",
        }
    }
}

/// Why a dispatch request to a worker did not succeed (label `reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerError {
    /// No answer: connection refused, reset, or timed out.
    Transport,
    /// The worker is busy (429 or 503); the task is deferred, not failed.
    Busy,
    /// Any other non-success status.
    Status,
}

impl WorkerError {
    /// Every reason.
    pub const ALL: [WorkerError; 3] = [
        WorkerError::Transport,
        WorkerError::Busy,
        WorkerError::Status,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerError::Transport => "transport",
            WorkerError::Busy => "busy",
            WorkerError::Status => "status",
        }
    }

    /// How an HTTP status answers a dispatch: `None` for success.
    pub fn classify(status: u16) -> Option<WorkerError> {
        match status {
            429 | 503 => Some(WorkerError::Busy),
            200..=299 => None,
            _ => Some(WorkerError::Status),
        }
    }
}

const FAILURE_KINDS: [FailureKind; 2] = [FailureKind::Quality, FailureKind::Infrastructure];

/// The process-local figures of one replica.
#[derive(Debug)]
pub struct Metrics {
    tick_phase: Vec<Histogram>,
    /// Attempts claimed and sent to a worker.
    pub dispatches: Counter,
    /// From the start of the claim to the worker's HTTP answer.
    pub dispatch_latency: Histogram,
    /// The dispatch request alone.
    pub worker_http: Histogram,
    worker_errors: [Counter; 3],
    failures: [Counter; 2],
    /// Failures that were scheduled for another attempt.
    pub retries: Counter,
    /// Attempts failed because their lease ran out (stalled or lost workers).
    pub lease_expiries: Counter,
    /// Progress checks sent to silent attempts.
    pub progress_checks: Counter,
    planner_calls: [Counter; 2],
    /// LLM planner call duration.
    pub planner_latency: Histogram,
    /// Prompt plus completion tokens of LLM planner calls.
    pub planner_tokens: Counter,
    /// Tokens that applied worker reports declared.
    pub worker_tokens: Counter,
    /// Cost that applied worker reports declared.
    pub worker_cost: FloatCounter,
    /// Worker reports applied (any outcome).
    pub reports: Counter,
    /// Batches of reports taken by the group commit, and the reports in them.
    pub report_batches: Counter,
    /// Reports taken in those batches.
    pub batched_reports: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            tick_phase: Phase::ALL
                .iter()
                .map(|_| Histogram::new(LATENCY_BUCKETS))
                .collect(),
            dispatches: Counter::default(),
            dispatch_latency: Histogram::new(LATENCY_BUCKETS),
            worker_http: Histogram::new(LATENCY_BUCKETS),
            worker_errors: Default::default(),
            failures: Default::default(),
            retries: Counter::default(),
            lease_expiries: Counter::default(),
            progress_checks: Counter::default(),
            planner_calls: Default::default(),
            planner_latency: Histogram::new(PLANNER_BUCKETS),
            planner_tokens: Counter::default(),
            worker_tokens: Counter::default(),
            worker_cost: FloatCounter::default(),
            reports: Counter::default(),
            report_batches: Counter::default(),
            batched_reports: Counter::default(),
        }
    }
}

impl Metrics {
    /// Records how long a tick phase that started at `started` took.
    pub fn tick_phase(&self, phase: Phase, started: Instant) {
        let i = Phase::ALL.iter().position(|p| *p == phase).unwrap_or(0);
        self.tick_phase[i].observe_duration(started.elapsed());
    }

    /// The duration histogram of one phase.
    pub fn phase(&self, phase: Phase) -> &Histogram {
        let i = Phase::ALL.iter().position(|p| *p == phase).unwrap_or(0);
        &self.tick_phase[i]
    }

    /// Records a worker's answer to a dispatch: `status` is `None` when no
    /// answer came. `claimed` is when the claim started, `sent` when the request did.
    pub fn worker_answered(&self, claimed: Instant, sent: Instant, status: Option<u16>) {
        self.dispatches.inc();
        self.worker_http.observe_duration(sent.elapsed());
        self.dispatch_latency.observe_duration(claimed.elapsed());
        let error = match status {
            None => Some(WorkerError::Transport),
            Some(s) => WorkerError::classify(s),
        };
        if let Some(e) = error {
            self.worker_error(e).inc();
        }
    }

    /// The error counter for `reason`.
    pub fn worker_error(&self, reason: WorkerError) -> &Counter {
        let i = WorkerError::ALL
            .iter()
            .position(|r| *r == reason)
            .unwrap_or(0);
        &self.worker_errors[i]
    }

    /// The failure counter for `kind`.
    pub fn failure(&self, kind: FailureKind) -> &Counter {
        let i = FAILURE_KINDS.iter().position(|k| *k == kind).unwrap_or(0);
        &self.failures[i]
    }

    /// Records an applied report: its tokens and cost, its failure (if it
    /// failed) and whether that failure was retried.
    pub fn report_applied(
        &self,
        tokens: i64,
        cost: f64,
        failure: Option<FailureKind>,
        next: TaskStatus,
    ) {
        self.reports.inc();
        self.worker_tokens.add(tokens.max(0) as u64);
        self.worker_cost.add(cost);
        if let Some(kind) = failure {
            self.failure(kind).inc();
            if next == TaskStatus::RetryWait {
                self.retries.inc();
            }
        }
    }

    /// Records a batch of `n` reports taken by the group commit.
    pub fn report_batch(&self, n: usize) {
        self.report_batches.inc();
        self.batched_reports.add(n as u64);
    }

    /// Records one LLM planner call that started at `started`; `tokens` is
    /// `None` when the call failed.
    pub fn planner_call(&self, started: Instant, tokens: Option<u64>) {
        self.planner_latency.observe_duration(started.elapsed());
        self.planner_calls[usize::from(tokens.is_none())].inc();
        self.planner_tokens.add(tokens.unwrap_or(0));
    }

    /// Appends every process-local family to `out`.
    pub fn render(&self, out: &mut Exposition) {
        out.family(
            "coordinator_tick_phase_seconds",
            "histogram",
            "Duration of each phase of the engine tick (per replica).",
        );
        for p in Phase::ALL {
            out.histogram(
                "coordinator_tick_phase_seconds",
                &[("phase", p.as_str())],
                &self.phase(p).snapshot(),
            );
        }
        out.counter(
            "coordinator_dispatches_total",
            "Attempts sent to a worker (per replica).",
            self.dispatches.get(),
        );
        out.family(
            "coordinator_dispatch_latency_seconds",
            "histogram",
            "From the start of the claim to the worker's HTTP answer (per replica).",
        );
        out.histogram(
            "coordinator_dispatch_latency_seconds",
            &[],
            &self.dispatch_latency.snapshot(),
        );
        out.family(
            "coordinator_worker_http_seconds",
            "histogram",
            "Duration of dispatch requests to workers (per replica).",
        );
        out.histogram(
            "coordinator_worker_http_seconds",
            &[],
            &self.worker_http.snapshot(),
        );
        out.family(
            "coordinator_worker_http_errors_total",
            "counter",
            "Dispatch requests that did not succeed, by reason (per replica).",
        );
        for r in WorkerError::ALL {
            out.sample(
                "coordinator_worker_http_errors_total",
                &[("reason", r.as_str())],
                self.worker_error(r).get() as f64,
            );
        }
        out.counter(
            "coordinator_reports_total",
            "Worker reports applied, any outcome (per replica).",
            self.reports.get(),
        );
        out.counter(
            "coordinator_report_batches_total",
            "Batches of reports the group commit applied together (per replica).",
            self.report_batches.get(),
        );
        out.counter(
            "coordinator_batched_reports_total",
            "Reports taken in those batches; divided by the batches, the mean batch size (per replica).",
            self.batched_reports.get(),
        );
        out.family(
            "coordinator_failures_total",
            "counter",
            "Failed attempts by failure kind (per replica).",
        );
        for k in FAILURE_KINDS {
            out.sample(
                "coordinator_failures_total",
                &[("kind", k.as_str())],
                self.failure(k).get() as f64,
            );
        }
        out.counter(
            "coordinator_retries_total",
            "Failed attempts scheduled for another try (per replica).",
            self.retries.get(),
        );
        out.counter(
            "coordinator_lease_expiries_total",
            "Attempts failed because their lease ran out: stalled or lost workers (per replica).",
            self.lease_expiries.get(),
        );
        out.counter(
            "coordinator_progress_checks_total",
            "Progress checks sent to silent attempts (per replica).",
            self.progress_checks.get(),
        );
        out.family(
            "coordinator_planner_calls_total",
            "counter",
            "LLM planner calls by outcome (per replica).",
        );
        for (i, outcome) in ["ok", "error"].iter().enumerate() {
            out.sample(
                "coordinator_planner_calls_total",
                &[("outcome", outcome)],
                self.planner_calls[i].get() as f64,
            );
        }
        out.family(
            "coordinator_planner_latency_seconds",
            "histogram",
            "Duration of LLM planner calls, retries and repairs included (per replica).",
        );
        out.histogram(
            "coordinator_planner_latency_seconds",
            &[],
            &self.planner_latency.snapshot(),
        );
        out.counter(
            "coordinator_planner_tokens_total",
            "Prompt plus completion tokens of successful LLM planner calls (per replica).",
            self.planner_tokens.get(),
        );
        out.counter(
            "coordinator_worker_tokens_total",
            "Tokens declared by applied worker reports (per replica).",
            self.worker_tokens.get(),
        );
        out.family(
            "coordinator_worker_cost_total",
            "counter",
            "Cost declared by applied worker reports, in budget units (per replica).",
        );
        out.sample("coordinator_worker_cost_total", &[], self.worker_cost.get());
    }
}

/// A Prometheus text-format (0.0.4) document being written.
#[derive(Debug, Default)]
pub struct Exposition {
    text: String,
}

/// The content type of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

impl Exposition {
    /// Starts a family: its `# HELP` and `# TYPE` lines.
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }

    /// One sample line.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.text.push_str(name);
        write_labels(&mut self.text, labels, None);
        let _ = writeln!(self.text, " {}", format_value(value));
    }

    /// A whole single-sample counter family.
    pub fn counter(&mut self, name: &str, help: &str, value: u64) {
        self.family(name, "counter", help);
        self.sample(name, &[], value as f64);
    }

    /// A whole single-sample gauge family.
    pub fn gauge(&mut self, name: &str, help: &str, value: f64) {
        self.family(name, "gauge", help);
        self.sample(name, &[], value);
    }

    /// The `_bucket`, `_sum` and `_count` lines of one histogram series.
    pub fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &HistogramSnapshot) {
        let total = h.cumulative.last().copied().unwrap_or(0);
        for (i, count) in h.cumulative.iter().enumerate() {
            let le = h
                .bounds
                .get(i)
                .map(|b| format_value(*b))
                .unwrap_or_else(|| "+Inf".into());
            let _ = write!(self.text, "{name}_bucket");
            write_labels(&mut self.text, labels, Some(&le));
            let _ = writeln!(self.text, " {count}");
        }
        let _ = write!(self.text, "{name}_sum");
        write_labels(&mut self.text, labels, None);
        let _ = writeln!(self.text, " {}", format_value(h.sum));
        let _ = write!(self.text, "{name}_count");
        write_labels(&mut self.text, labels, None);
        let _ = writeln!(self.text, " {total}");
    }

    /// The finished document.
    pub fn finish(self) -> String {
        self.text
    }
}

fn write_labels(out: &mut String, labels: &[(&str, &str)], le: Option<&str>) {
    if labels.is_empty() && le.is_none() {
        return;
    }
    out.push('{');
    let mut first = true;
    for (k, v) in labels.iter().copied().chain(le.map(|l| ("le", l))) {
        if !first {
            out.push(',');
        }
        first = false;
        let _ = write!(out, "{k}=\"{}\"", escape_label(v));
    }
    out.push('}');
}

/// Escapes a label value: backslash, double quote and newline.
pub fn escape_label(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// Escapes `# HELP` text: backslash and newline.
pub fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A sample value as Prometheus writes it (`+Inf`, `-Inf`, `NaN`).
pub fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_index_uses_le_semantics() {
        let b = &[0.1, 0.5, 1.0];
        assert_eq!(bucket_index(b, 0.0), 0);
        assert_eq!(bucket_index(b, 0.1), 0);
        assert_eq!(bucket_index(b, 0.11), 1);
        assert_eq!(bucket_index(b, 1.0), 2);
        assert_eq!(bucket_index(b, 7.0), 3);
    }

    #[test]
    fn cumulate_sums_running_totals() {
        assert_eq!(cumulate(&[1, 0, 2, 3]), vec![1, 1, 3, 6]);
        assert_eq!(cumulate(&[]), Vec::<u64>::new());
    }

    #[test]
    fn histogram_renders_cumulative_buckets_sum_and_count() {
        static B: &[f64] = &[0.5, 1.0];
        let h = Histogram::new(B);
        h.observe(0.25);
        h.observe(0.75);
        h.observe(2.0);
        let mut e = Exposition::default();
        e.family("x_seconds", "histogram", "X.");
        e.histogram("x_seconds", &[("phase", "a")], &h.snapshot());
        assert_eq!(
            e.finish(),
            "# HELP x_seconds X.\n# TYPE x_seconds histogram\n\
             x_seconds_bucket{phase=\"a\",le=\"0.5\"} 1\n\
             x_seconds_bucket{phase=\"a\",le=\"1\"} 2\n\
             x_seconds_bucket{phase=\"a\",le=\"+Inf\"} 3\n\
             x_seconds_sum{phase=\"a\"} 3\n\
             x_seconds_count{phase=\"a\"} 3\n"
        );
    }

    #[test]
    fn labels_and_help_are_escaped() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(
            escape_help("line\\one\ntwo \"q\""),
            "line\\\\one\\ntwo \"q\""
        );
        let mut e = Exposition::default();
        e.sample("m", &[("agent", "x\"y"), ("ws", "w")], 2.0);
        e.sample("n", &[], 0.5);
        assert_eq!(e.finish(), "m{agent=\"x\\\"y\",ws=\"w\"} 2\nn 0.5\n");
    }

    #[test]
    fn special_values_are_spelled_like_prometheus() {
        assert_eq!(format_value(f64::NAN), "NaN");
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(f64::NEG_INFINITY), "-Inf");
        assert_eq!(format_value(3.0), "3");
        assert_eq!(format_value(0.025), "0.025");
    }

    #[test]
    fn float_counter_ignores_negative_and_non_finite() {
        let c = FloatCounter::default();
        c.add(0.25);
        c.add(-1.0);
        c.add(f64::NAN);
        c.add(0.5);
        assert_eq!(c.get(), 0.75);
    }

    #[test]
    fn report_applied_counts_failures_and_retries() {
        let m = Metrics::default();
        m.report_applied(100, 0.5, None, TaskStatus::Succeeded);
        m.report_applied(-5, 0.25, Some(FailureKind::Quality), TaskStatus::RetryWait);
        m.report_applied(
            0,
            0.0,
            Some(FailureKind::Infrastructure),
            TaskStatus::Failed,
        );
        assert_eq!(m.reports.get(), 3);
        assert_eq!(m.worker_tokens.get(), 100);
        assert_eq!(m.worker_cost.get(), 0.75);
        assert_eq!(m.failure(FailureKind::Quality).get(), 1);
        assert_eq!(m.failure(FailureKind::Infrastructure).get(), 1);
        assert_eq!(m.retries.get(), 1);
    }

    #[test]
    fn worker_answers_are_classified() {
        let m = Metrics::default();
        let now = Instant::now();
        m.worker_answered(now, now, Some(202));
        m.worker_answered(now, now, Some(429));
        m.worker_answered(now, now, Some(500));
        m.worker_answered(now, now, None);
        assert_eq!(m.dispatches.get(), 4);
        assert_eq!(m.worker_error(WorkerError::Busy).get(), 1);
        assert_eq!(m.worker_error(WorkerError::Status).get(), 1);
        assert_eq!(m.worker_error(WorkerError::Transport).get(), 1);
        assert_eq!(m.dispatch_latency.snapshot().cumulative.last(), Some(&4));
    }

    #[test]
    fn planner_calls_split_by_outcome() {
        let m = Metrics::default();
        m.planner_call(Instant::now(), Some(120));
        m.planner_call(Instant::now(), None);
        let mut e = Exposition::default();
        m.render(&mut e);
        let text = e.finish();
        assert!(text.contains("coordinator_planner_calls_total{outcome=\"ok\"} 1\n"));
        assert!(text.contains("coordinator_planner_calls_total{outcome=\"error\"} 1\n"));
        assert!(text.contains("coordinator_planner_tokens_total 120\n"));
    }
}
