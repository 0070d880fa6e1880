//! How an attempt's ending becomes the report sent to the coordinator. Token
//! usage and cost are summed over every turn, whatever the ending.

use coordinator_core::domain::{FailureKind, ReportStatus};
use coordinator_llm::{CallError, Completion};
use coordinator_protocol::WorkerReport;
use serde_json::{Value, json};

use super::{LlmWorkerConfig, progress::Progress};

/// A report of `status` with the attempt's spending filled in.
fn base(cfg: &LlmWorkerConfig, progress: &Progress, status: ReportStatus) -> WorkerReport {
    let usage = progress.usage;
    WorkerReport {
        status,
        output: None,
        error: None,
        failure_kind: None,
        cost: cfg.cost(usage.prompt_tokens, usage.completion_tokens),
        tokens: i64::try_from(usage.total()).unwrap_or(i64::MAX),
        retry_after_secs: None,
    }
}

/// A failed report of `kind` saying `error`.
fn failed(
    cfg: &LlmWorkerConfig,
    progress: &Progress,
    kind: FailureKind,
    error: String,
) -> WorkerReport {
    WorkerReport {
        error: Some(error),
        failure_kind: Some(kind),
        ..base(cfg, progress, ReportStatus::Failed)
    }
}

/// What every successful output says besides the result.
fn output(cfg: &LlmWorkerConfig, text: String, done: &Completion, progress: &Progress) -> Value {
    json!({
        "text": text,
        "model": done.model.clone().unwrap_or_else(|| cfg.model.clone()),
        "finish_reason": done.finish_reason,
        "turns": progress.turns.used(),
        "tool_calls": progress.tool_calls,
    })
}

/// The model called `finish`: a text result is the output's `text`; an
/// object result is its `result`, with its JSON as the `text` (what
/// verification reads).
pub(super) fn finished(
    cfg: &LlmWorkerConfig,
    result: Value,
    summary: Option<String>,
    done: &Completion,
    progress: &Progress,
) -> WorkerReport {
    let (text, object) = match result {
        Value::String(text) => (text, None),
        other => (other.to_string(), Some(other)),
    };
    let mut out = output(cfg, text, done, progress);
    if let Some(object) = object {
        out["result"] = object;
    }
    if let Some(summary) = summary {
        out["summary"] = Value::String(summary);
    }
    WorkerReport {
        output: Some(out),
        ..base(cfg, progress, ReportStatus::Succeeded)
    }
}

/// The model answered without tool calls: its text is the result, and no
/// text at all is a `quality` failure.
pub(super) fn answered(
    cfg: &LlmWorkerConfig,
    done: Completion,
    progress: &Progress,
) -> WorkerReport {
    let content = done.content.clone().unwrap_or_default();
    if content.trim().is_empty() {
        return failed(
            cfg,
            progress,
            FailureKind::Quality,
            format!(
                "the model returned an empty answer (finish_reason: {})",
                done.finish_reason.as_deref().unwrap_or("none")
            ),
        );
    }
    WorkerReport {
        output: Some(output(cfg, content, &done, progress)),
        ..base(cfg, progress, ReportStatus::Succeeded)
    }
}

/// Every turn used without `finish`: a `quality` failure saying what the last turns did.
pub(super) fn exhausted(cfg: &LlmWorkerConfig, progress: &Progress) -> WorkerReport {
    failed(
        cfg,
        progress,
        FailureKind::Quality,
        progress.turns.exhausted(),
    )
}

/// The provider failed (429, 5xx, timeout, transport, another 4xx, a body
/// it cannot read): an `infrastructure` failure the coordinator retries,
/// honouring a `Retry-After`; the earlier turns' tokens are still reported.
pub(super) fn call_failed(
    cfg: &LlmWorkerConfig,
    err: &CallError,
    progress: &Progress,
) -> WorkerReport {
    // The provider's status and Retry-After also travel in `output`, for
    // people reading the attempt.
    let output = match err {
        CallError::Status { status, .. } => Some(json!({
            "provider_status": status.as_u16(),
            "retry_after_secs": err.retry_after().map(|d| d.as_secs()),
            "turn": progress.turns.used(),
        })),
        _ => None,
    };
    WorkerReport {
        output,
        retry_after_secs: err.retry_after().map(|d| d.as_secs()),
        // The client already took the API key out of every error text.
        ..failed(cfg, progress, FailureKind::Infrastructure, err.to_string())
    }
}
