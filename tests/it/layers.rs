//! The layer rule of `docs/architecture.md`, checked over `cargo metadata`
//! (crates) and the service's source (modules): a crate may depend only on
//! the crates below it, the pure core has no I/O crate anywhere in its tree,
//! and inside the service the store imports nothing above it, the use cases
//! (missions, coordination, BDI) never import the engine or the API, and the
//! engine never imports the API.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Each workspace crate and the workspace crates it may depend on.
const ALLOWED: &[(&str, &[&str])] = &[
    ("coordinator-core", &[]),
    ("coordinator-bpmn", &[]),
    ("coordinator-protocol", &["coordinator-core"]),
    ("coordinator-llm", &["coordinator-core"]),
    ("coordinator-client", &[]),
    (
        "coordinator-service",
        &[
            "coordinator-core",
            "coordinator-bpmn",
            "coordinator-protocol",
            "coordinator-llm",
        ],
    ),
    (
        "coordinator-workers",
        &[
            "coordinator-core",
            "coordinator-protocol",
            "coordinator-llm",
        ],
    ),
    (
        "coordinator-tooling",
        &[
            "coordinator-core",
            "coordinator-bpmn",
            "coordinator-protocol",
            "coordinator-llm",
            "coordinator-service",
            "coordinator-workers",
            "coordinator-client",
        ],
    ),
    (
        "coordinator",
        &[
            "coordinator-core",
            "coordinator-bpmn",
            "coordinator-protocol",
            "coordinator-llm",
            "coordinator-service",
            "coordinator-workers",
            "coordinator-client",
            "coordinator-tooling",
        ],
    ),
];

/// Crates that do I/O: none may appear in the pure crates' trees.
const NOT_IN_CORE: &[&str] = &["sqlx", "axum", "reqwest", "tokio", "hyper", "tower"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(root())
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata JSON")
}

/// Package id → name, and the resolve graph's normal (non-dev, non-build)
/// dependencies of each package id.
fn graph(meta: &Value) -> (BTreeMap<String, String>, BTreeMap<String, Vec<String>>) {
    let names = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            (
                p["id"].as_str().expect("id").to_owned(),
                p["name"].as_str().expect("name").to_owned(),
            )
        })
        .collect();
    let deps = meta["resolve"]["nodes"]
        .as_array()
        .expect("resolve nodes")
        .iter()
        .map(|n| {
            let normal = n["deps"]
                .as_array()
                .expect("deps")
                .iter()
                .filter(|d| {
                    d["dep_kinds"]
                        .as_array()
                        .is_some_and(|kinds| kinds.iter().any(|k| k["kind"].is_null()))
                })
                .map(|d| d["pkg"].as_str().expect("pkg").to_owned())
                .collect();
            (n["id"].as_str().expect("id").to_owned(), normal)
        })
        .collect();
    (names, deps)
}

#[test]
fn each_crate_depends_only_on_the_layers_below_it() {
    let meta = metadata();
    let (names, deps) = graph(&meta);
    let members: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| m.as_str().expect("member id"))
        .collect();
    let member_names: BTreeSet<&str> = members.iter().map(|id| names[*id].as_str()).collect();
    let listed: BTreeSet<&str> = ALLOWED.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        member_names, listed,
        "every workspace crate needs a line in ALLOWED (and docs/architecture.md)"
    );
    for id in &members {
        let name = names[*id].as_str();
        let allowed = ALLOWED.iter().find(|(n, _)| *n == name).expect("listed").1;
        for dep in &deps[*id] {
            let dep_name = names[dep].as_str();
            if members.contains(dep.as_str()) {
                assert!(
                    allowed.contains(&dep_name),
                    "{name} depends on {dep_name}, which is not below it (docs/architecture.md)"
                );
            }
        }
    }
}

#[test]
fn the_pure_crates_have_no_io_crate_in_their_trees() {
    let meta = metadata();
    let (names, deps) = graph(&meta);
    // Each pure crate, with a dependency the walk must see (or it proves nothing).
    for (krate, known) in [
        ("coordinator-core", "petgraph"),
        ("coordinator-bpmn", "serde_json"),
    ] {
        let root = names
            .iter()
            .find(|(_, n)| n.as_str() == krate)
            .map(|(id, _)| id.clone())
            .unwrap_or_else(|| panic!("{krate}"));
        let mut seen = BTreeSet::new();
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            if seen.insert(id.clone()) {
                stack.extend(deps[&id].iter().cloned());
            }
        }
        let tree: BTreeSet<&str> = seen.iter().map(|id| names[id].as_str()).collect();
        assert!(
            tree.contains("serde") && tree.contains(known),
            "{krate}: {tree:?}"
        );
        for banned in NOT_IN_CORE {
            assert!(
                !tree.contains(banned),
                "{banned} is in {krate}'s dependency tree: {tree:?}"
            );
        }
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every path a file names from its crate root (`crate::a::b`, and each
/// branch of `crate::{a::b, c}`), with whitespace removed.
fn crate_paths(text: &str) -> Vec<String> {
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<String>()
        .split_whitespace()
        .collect();
    let mut paths = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The branches at the group's top level.
            let (mut depth, mut start) = (0usize, 0usize);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        paths.push(group[start..i].to_owned());
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        paths.push(group[start..i].to_owned());
                        start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            paths.push(rest[..end].to_owned());
        }
    }
    paths.retain(|p| !p.is_empty());
    paths
}

#[test]
fn crate_paths_reads_plain_and_grouped_imports() {
    let text =
        "use crate::api::x;\nuse crate::{\n  store::y,\n  engine::{a, b},\n};\n// crate::api\n";
    assert_eq!(crate_paths(text), ["api::x", "store::y", "engine::{a,b}"]);
}

/// Files under `crates/service/src/<from>` that name one of `to`'s modules.
fn imports(from: &str, to: &[&str]) -> Vec<String> {
    let dir = root().join("crates/service/src").join(from);
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    assert!(!files.is_empty(), "no source under {}", dir.display());
    files
        .into_iter()
        .filter(|f| {
            let text = std::fs::read_to_string(f).expect("read source");
            crate_paths(&text).iter().any(|p| {
                to.iter()
                    .any(|m| p == m || p.starts_with(&format!("{m}::")))
            })
        })
        .map(|f| {
            f.strip_prefix(root())
                .expect("under root")
                .display()
                .to_string()
        })
        .collect()
}

/// Modules above the store: the store is the floor of the service and
/// takes its types from the core or from itself.
const ABOVE_THE_STORE: &[&str] = &[
    "api",
    "bdi",
    "board",
    "coordination",
    "engine",
    "missions",
    "telemetry",
    "tools",
    "webhooks",
    "workflows",
];

#[test]
fn the_store_imports_nothing_above_it_and_the_engine_never_the_api() {
    assert_eq!(imports("store", ABOVE_THE_STORE), Vec::<String>::new());
    assert_eq!(imports("engine", &["api"]), Vec::<String>::new());
}

#[test]
fn the_use_cases_never_import_the_engine_or_the_api() {
    for use_cases in ["missions", "coordination", "bdi", "workflows"] {
        assert_eq!(
            imports(use_cases, &["engine", "api"]),
            Vec::<String>::new(),
            "{use_cases}"
        );
    }
}

/// Use cases return their own error enums; only the edges (the API, the
/// chat tools) know the HTTP error and map each enum to the one JSON body.
#[test]
fn the_use_cases_never_import_the_http_error() {
    for use_cases in [
        "missions",
        "coordination",
        "bdi",
        "engine",
        "webhooks",
        "workflows",
        "store",
    ] {
        assert_eq!(
            imports(use_cases, &["error"]),
            Vec::<String>::new(),
            "{use_cases}"
        );
    }
}

/// Source files and functions of the workspace (outside tests) stay small
/// enough to read: no file over 1,000 lines, no function over 150. Split by
/// phase when one grows past it.
#[test]
fn no_source_file_or_function_is_too_long() {
    const MAX_FILE: usize = 1_000;
    const MAX_FN: usize = 150;
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    rust_files(&root().join("crates"), &mut files);
    let mut too_long = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(root())
            .expect("under root")
            .display()
            .to_string();
        if rel.ends_with("tests.rs") || rel.contains("/tests/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read source");
        let mut lines: Vec<&str> = text.lines().collect();
        // Unit tests sit at the end of a file, after `#[cfg(test)]`.
        if let Some(at) = lines.iter().position(|l| l.starts_with("#[cfg(test)]")) {
            lines.truncate(at);
        }
        if lines.len() > MAX_FILE {
            too_long.push(format!("{rel}: {} lines", lines.len()));
        }
        for (i, line) in lines.iter().enumerate() {
            let trimmed = line.trim_start();
            let indent = &line[..line.len() - trimmed.len()];
            let head = trimmed
                .trim_start_matches("pub ")
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub(super) ")
                .trim_start_matches("const ")
                .trim_start_matches("async ");
            let Some(name) = head.strip_prefix("fn ") else {
                continue;
            };
            if line.trim_end().ends_with(';') {
                continue; // a declaration in a trait, no body
            }
            let close = format!("{indent}}}");
            let end = lines[i + 1..]
                .iter()
                .position(|l| l.trim_end() == close)
                .map_or(lines.len(), |p| i + 1 + p);
            let len = end - i + 1;
            if len > MAX_FN {
                let name: String = name
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                too_long.push(format!("{rel}: fn {name}: {len} lines"));
            }
        }
    }
    assert!(too_long.is_empty(), "split these by phase: {too_long:#?}");
}
