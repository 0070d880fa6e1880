//! Logs and traces: the `tracing` subscriber, OpenTelemetry export over OTLP
//! and W3C trace-context propagation.
//!
//! Logs go to stderr (human or JSON lines). Traces are exported only when an
//! OTLP endpoint is configured with the standard variables
//! (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`;
//! `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn it off). The
//! exporter itself reads the rest: `OTEL_EXPORTER_OTLP_PROTOCOL`
//! (`http/protobuf`, the default, or `http/json`), `…_HEADERS`, `…_TIMEOUT`,
//! `…_COMPRESSION`; the SDK reads `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER[_ARG]` and `OTEL_BSP_*`.
//!
//! With export on, the dispatch to a worker carries a `traceparent` header
//! (the worker's HTTP call span) and every incoming request with one joins
//! that trace, so a worker's callback lands in the trace of its dispatch.
//! Without it no header is sent and spans cost only the log layer.

use std::collections::HashMap;

use opentelemetry::{
    global,
    propagation::{Extractor, Injector},
    trace::TracerProvider as _,
};
use opentelemetry_sdk::{Resource, propagation::TraceContextPropagator, trace::SdkTracerProvider};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::{EnvFilter, Layer, layer::SubscriberExt, util::SubscriberInitExt};

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Readable lines.
    #[default]
    Human,
    /// One JSON object per line (timestamp, level, target, fields, current span).
    Json,
}

/// The installed telemetry; [`Telemetry::shutdown`] flushes pending spans.
#[derive(Debug, Default)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

/// Whether the environment asks for trace export (read from `vars`, the
/// process environment in [`init`]).
pub fn export_requested(vars: &HashMap<String, String>) -> bool {
    let set = |k: &str| vars.get(k).is_some_and(|v| !v.trim().is_empty());
    let is = |k: &str, v: &str| {
        vars.get(k)
            .is_some_and(|x| x.trim().eq_ignore_ascii_case(v))
    };
    (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        && !is("OTEL_SDK_DISABLED", "true")
        && !is("OTEL_TRACES_EXPORTER", "none")
}

/// Whether log lines may carry ANSI colour: stderr is a terminal and
/// `NO_COLOR` is unset or empty (<https://no-color.org>).
pub fn use_colour(terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

/// Installs the global subscriber: the log layer filtered by `filter`
/// (`RUST_LOG` wins), plus the OpenTelemetry layer when export is requested.
/// Must run inside the Tokio runtime. An exporter that cannot be built is
/// reported and logging goes on without it.
pub fn init(filter: &str, format: LogFormat) -> Telemetry {
    // sqlx reports "relation already exists, skipping" notices from migrations
    // at info; the MCP library logs each client's self-description
    // (`clientInfo`, any text the client likes) at info.
    let quiet = if filter.contains("rmcp") {
        "sqlx::postgres::notice=warn".to_owned()
    } else {
        "sqlx::postgres::notice=warn,rmcp=warn".to_owned()
    };
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(format!("{filter},{quiet}")))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    // Colour only for a person at a terminal: a file or a pipe gets plain
    // text, and `NO_COLOR` (any value) turns it off everywhere.
    let colour = use_colour(
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
        std::env::var_os("NO_COLOR").as_deref(),
    );
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(colour);
    let fmt = match format {
        LogFormat::Human => fmt.boxed(),
        // The current span's fields say which mission or request a line is about;
        // the full span list would repeat them on every line.
        LogFormat::Json => fmt
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .boxed(),
    };
    let vars: HashMap<String, String> = std::env::vars().collect();
    let (provider, problem) = if export_requested(&vars) {
        match provider(&vars) {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(e)),
        }
    } else {
        (None, None)
    };
    let otel = provider.as_ref().map(|p| {
        global::set_text_map_propagator(TraceContextPropagator::new());
        tracing_opentelemetry::layer().with_tracer(p.tracer("coordinator"))
    });
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .with(otel)
        .try_init();
    if let Some(e) = problem {
        tracing::warn!(error = %e, "OTLP trace export is off: the exporter could not be built");
    } else if provider.is_some() {
        tracing::info!("exporting traces over OTLP");
    }
    Telemetry { provider }
}

fn provider(vars: &HashMap<String, String>) -> anyhow::Result<SdkTracerProvider> {
    // The exporter reads endpoint, protocol, headers, timeout and
    // compression from the standard variables itself.
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()?;
    let mut resource = Resource::builder();
    if !vars.contains_key("OTEL_SERVICE_NAME") {
        resource = resource.with_service_name("coordinator");
    }
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build())
}

impl Telemetry {
    /// Whether spans are being exported.
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }

    /// Flushes and stops the exporter (blocking: it joins the export thread).
    pub async fn shutdown(self) {
        if let Some(p) = self.provider {
            let _ = tokio::task::spawn_blocking(move || {
                if let Err(e) = p.shutdown() {
                    eprintln!("warning: flushing traces failed: {e}");
                }
            })
            .await;
        }
    }
}

/// Adds `traceparent` (and `tracestate`) for `span` to outgoing `headers`;
/// nothing when no trace is being recorded.
pub fn inject(span: &tracing::Span, headers: &mut axum::http::HeaderMap) {
    let cx = span.context();
    global::get_text_map_propagator(|p| p.inject_context(&cx, &mut HeaderInjector(headers)));
}

/// Makes `span` (not yet entered) a child of the trace named by the
/// incoming `traceparent` in `headers`, if any.
pub fn adopt_parent(span: &tracing::Span, headers: &axum::http::HeaderMap) {
    if !headers.contains_key("traceparent") {
        return;
    }
    let cx = global::get_text_map_propagator(|p| p.extract(&HeaderExtractor(headers)));
    // Without the OpenTelemetry layer there is nothing to attach to.
    let _ = span.set_parent(cx);
}

/// The trace id of `span` in hex, when it is recorded (for logs and tests).
pub fn trace_id(span: &tracing::Span) -> Option<String> {
    use opentelemetry::trace::TraceContextExt;
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then(|| sc.trace_id().to_string())
}

struct HeaderInjector<'a>(&'a mut axum::http::HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            axum::http::header::HeaderName::from_bytes(key.as_bytes()),
            axum::http::header::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

struct HeaderExtractor<'a>(&'a axum::http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_sdk::trace::InMemorySpanExporter;

    #[test]
    fn colour_only_at_a_terminal_without_no_color() {
        use std::ffi::OsStr;
        assert!(use_colour(true, None));
        assert!(use_colour(true, Some(OsStr::new(""))));
        assert!(!use_colour(true, Some(OsStr::new("1"))));
        assert!(!use_colour(false, None));
    }

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn export_follows_the_standard_variables() {
        assert!(!export_requested(&vars(&[])));
        assert!(!export_requested(&vars(&[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            " "
        )])));
        assert!(export_requested(&vars(&[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://collector:4318"
        )])));
        assert!(export_requested(&vars(&[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://collector:4318/v1/traces"
        )])));
        assert!(!export_requested(&vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            ("OTEL_SDK_DISABLED", "TRUE"),
        ])));
        assert!(!export_requested(&vars(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ])));
    }

    #[test]
    fn trace_context_goes_out_and_comes_back_in_one_trace() {
        global::set_text_map_propagator(TraceContextPropagator::new());
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        let (sent, received) = tracing::subscriber::with_default(subscriber, || {
            let call = tracing::info_span!("worker_http");
            let mut headers = axum::http::HeaderMap::new();
            inject(&call, &mut headers);
            let sent = headers
                .get("traceparent")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            // The worker echoes it on its callback.
            let callback = tracing::info_span!("callback");
            adopt_parent(&callback, &headers);
            let received = trace_id(&callback);
            drop(callback);
            drop(call);
            (sent, received)
        });
        let sent = sent.expect("a traceparent was injected");
        // version-traceid-spanid-flags, sampled.
        let parts: Vec<&str> = sent.split('-').collect();
        assert_eq!(parts.len(), 4, "{sent}");
        assert_eq!(
            (parts[0], parts[1].len(), parts[2].len(), parts[3]),
            ("00", 32, 16, "01")
        );
        assert_eq!(received.as_deref(), Some(parts[1]));
        let spans = exporter.get_finished_spans().expect("spans");
        let callback = spans
            .iter()
            .find(|s| s.name == "callback")
            .expect("callback span");
        assert_eq!(callback.parent_span_id.to_string(), parts[2]);
        assert_eq!(callback.span_context.trace_id().to_string(), parts[1]);
    }

    #[test]
    fn nothing_is_injected_without_a_recorded_trace() {
        let subscriber = tracing_subscriber::registry();
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("worker_http");
            let mut headers = axum::http::HeaderMap::new();
            inject(&span, &mut headers);
            assert!(headers.is_empty());
            assert_eq!(trace_id(&span), None);
        });
    }
}
