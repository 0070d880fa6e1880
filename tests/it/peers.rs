//! Where the real peers installed by `scripts/test-peers.sh` live.
//!
//! A test that needs a missing peer skips with a message, unless
//! `COORDINATOR_REQUIRE_PEERS` is set (as `scripts/test.sh` does), when it fails.

#![allow(dead_code)] // each peer is used by its own tests, added one surface at a time

use std::path::{Path, PathBuf};

/// The repository root.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn found(what: &str, path: PathBuf) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    if std::env::var_os("COORDINATOR_REQUIRE_PEERS").is_some() {
        panic!(
            "{what} is missing at {}: run scripts/test-peers.sh",
            path.display()
        );
    }
    eprintln!(
        "skipping: {what} is missing at {} (run scripts/test-peers.sh)",
        path.display()
    );
    None
}

/// The Python of the virtualenv that has the MCP SDK.
pub fn mcp_python() -> Option<PathBuf> {
    found("the MCP Python SDK", root().join(".venv-mcp/bin/python"))
}

/// The Python of the virtualenv that has SpiffWorkflow (the reference BPMN engine).
pub fn spiff_python() -> Option<PathBuf> {
    found("SpiffWorkflow", root().join(".venv-spiff/bin/python"))
}

/// `tests/js`, once its node_modules (eventsource, playwright-core) are installed.
pub fn js_dir() -> Option<PathBuf> {
    found(
        "tests/js/node_modules",
        root().join("tests/js/node_modules"),
    )
    .map(|_| root().join("tests/js"))
}

/// Debian's Chromium.
pub fn chromium() -> Option<PathBuf> {
    found("chromium", PathBuf::from("/usr/bin/chromium"))
}

/// A folder for test artifacts (screenshots), created if needed.
pub fn artifacts() -> PathBuf {
    let dir = root().join("test-artifacts");
    std::fs::create_dir_all(&dir).expect("create test-artifacts");
    dir
}

/// Runs `script` of `tests/js` with node and `args` (a browser run), within
/// `limit`; fails the test unless it exits 0, and returns the JSON summary
/// it printed.
pub async fn run_browser(
    js: &Path,
    script: &str,
    args: &[&dyn AsRef<std::ffi::OsStr>],
    limit: std::time::Duration,
) -> serde_json::Value {
    let run = tokio::process::Command::new("node")
        .arg(js.join(script))
        .args(args.iter().map(|a| a.as_ref()))
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(limit, run)
        .await
        .unwrap_or_else(|_| panic!("the browser run finished within {limit:?}"))
        .expect("run node");
    summary(&out)
}

/// The JSON summary a browser run printed; fails the test unless it exited 0.
pub fn summary(out: &std::process::Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the browser run failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).expect("json summary")
}
