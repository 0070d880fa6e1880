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
