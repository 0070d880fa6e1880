//! Deployment and the scale-out premise (docs/scaling.md): the manifests
//! validate offline (`scripts/validate-deploy.sh`), use only subcommands,
//! flags and variables the binary has, and probe paths that answer; every
//! table carries `workspace_id` and every hot query filters on it.

use std::{
    collections::{BTreeMap, BTreeSet},
    process::Command,
};

use reqwest::StatusCode;
use sqlx::PgPool;

use crate::{
    helpers::{fresh_database, spawn_app_on, test_settings},
    peers::root,
};

/// The files that deploy the binary: compose, the Kubernetes manifests, the image.
fn deployment_files() -> Vec<(String, String)> {
    let mut names = vec!["docker-compose.yml".to_owned(), "Dockerfile".to_owned()];
    let mut k8s: Vec<String> = std::fs::read_dir(root().join("deploy/k8s"))
        .expect("read deploy/k8s")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".yaml"))
        .map(|n| format!("deploy/k8s/{n}"))
        .collect();
    k8s.sort();
    names.extend(k8s);
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(root().join(&n)).expect("read deployment file");
            (n, text)
        })
        .collect()
}

/// `coordinator <args> --help`.
fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_coordinator"))
        .args(args)
        .arg("--help")
        .output()
        .expect("run coordinator --help");
    assert!(out.status.success(), "coordinator {args:?} --help failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The quoted strings of a flow array such as `["serve", "--listen", "0.0.0.0:8080"]`.
fn flow_array(text: &str) -> Vec<String> {
    let inner = text.split_once('[').map_or("", |(_, r)| r);
    let inner = inner.split_once(']').map_or(inner, |(l, _)| l);
    inner
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Every command line the deployment files give the coordinator image, with where it is.
fn invocations(files: &[(String, String)]) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    for (name, text) in files {
        // In compose, only services built from this repository run the binary.
        let mut service_is_ours = false;
        for line in text.lines() {
            let trimmed = line.trim();
            if name == "docker-compose.yml" {
                let indent = line.len() - line.trim_start().len();
                if indent == 2 && trimmed.ends_with(':') {
                    service_is_ours = false;
                }
                if trimmed == "build: ." {
                    service_is_ours = true;
                }
                if trimmed.starts_with("command: [") && service_is_ours {
                    found.push((name.clone(), flow_array(trimmed)));
                }
            } else if name == "Dockerfile" {
                if trimmed.starts_with("CMD [") {
                    found.push((name.clone(), flow_array(trimmed)));
                }
            } else if trimmed.starts_with("args: [") {
                found.push((name.clone(), flow_array(trimmed)));
            }
        }
    }
    found
}

#[tokio::test]
async fn deployment_files_validate_offline() {
    let out = tokio::process::Command::new(root().join("scripts/validate-deploy.sh"))
        .output()
        .await
        .expect("run scripts/validate-deploy.sh");
    let log = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => assert!(
            log.contains("all deployment files are valid"),
            "unexpected output:\n{log}"
        ),
        // The validators could not be installed (no PyPI): skip, as the peer tests do.
        Some(2) if std::env::var_os("COORDINATOR_REQUIRE_PEERS").is_none() => {
            eprintln!("skipping: {}", log.trim());
        }
        _ => panic!("scripts/validate-deploy.sh failed:\n{log}"),
    }
}

#[test]
fn deployment_files_use_only_what_the_binary_has() {
    let files = deployment_files();
    let top = help(&[]);
    let subcommands: BTreeSet<String> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|c| c != "help")
        .collect();
    assert!(subcommands.contains("serve"), "no serve in:\n{top}");

    let calls = invocations(&files);
    let used: BTreeSet<&str> = calls
        .iter()
        .filter_map(|(_, a)| a.first().map(String::as_str))
        .collect();
    // The manifests must actually run what the issue asks for, or this test is vacuous.
    assert_eq!(
        used,
        BTreeSet::from(["migrate", "serve", "worker"]),
        "{calls:?}"
    );

    let mut problems = Vec::new();
    let mut env_known = BTreeSet::new();
    for sub in &subcommands {
        let text = help(&[sub]);
        let words: BTreeSet<&str> = text.split_whitespace().collect();
        for (file, args) in calls.iter().filter(|(_, a)| a.first() == Some(sub)) {
            for flag in args.iter().filter(|a| a.starts_with("--")) {
                if !words.contains(flag.as_str()) {
                    problems.push(format!(
                        "{file}: `{sub} {flag}` is not a flag of `coordinator {sub}`"
                    ));
                }
            }
        }
        // clap prints `[env: NAME=…]` (or `[env: NAME]` for hidden values).
        for part in text.split("[env: ").skip(1) {
            let name: String = part
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            env_known.insert(name);
        }
    }
    for (file, args) in &calls {
        if let Some(sub) = args.first().filter(|s| !subcommands.contains(*s)) {
            problems.push(format!("{file}: `{sub}` is not a subcommand"));
        }
    }

    let mut env_used = BTreeSet::new();
    for (file, text) in &files {
        for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            let ours = word.starts_with("COORDINATOR_")
                || word.starts_with("WORKER_")
                || word == "DATABASE_URL";
            if ours {
                env_used.insert(word.to_owned());
                if !env_known.contains(word) {
                    problems.push(format!("{file}: {word} is not a variable the binary reads"));
                }
            }
        }
    }
    for needed in [
        "DATABASE_URL",
        "COORDINATOR_PUBLIC_URL",
        "COORDINATOR_BOOTSTRAP_TOKEN",
    ] {
        assert!(
            env_used.contains(needed),
            "no deployment file sets {needed}"
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[tokio::test]
async fn probe_and_scrape_paths_answer_200() {
    let mut paths = BTreeSet::new();
    for (_, text) in deployment_files() {
        for part in text.split("path: ").skip(1) {
            let path: String = part
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != ',' && *c != '}')
                .collect();
            paths.insert(path);
        }
    }
    let haproxy = std::fs::read_to_string(root().join("deploy/haproxy.cfg")).expect("haproxy.cfg");
    for line in haproxy.lines() {
        if let Some(path) = line.trim().strip_prefix("option httpchk GET ") {
            paths.insert(path.trim().to_owned());
        }
    }
    assert_eq!(
        paths,
        BTreeSet::from([
            "/healthz".to_owned(),
            "/metrics".to_owned(),
            "/readyz".to_owned()
        ]),
        "probe and scrape paths in deploy/"
    );
    // As deployed: the scraper reads the metrics listener.
    let mut settings = test_settings();
    settings.metrics_listen = Some(std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let metrics_url = app.metrics_url.clone().expect("metrics listener");
    for path in &paths {
        // Probes and scrapers carry no token.
        let base = if path == "/metrics" {
            &metrics_url
        } else {
            &app.url
        };
        let r = app
            .http
            .get(format!("{base}{path}"))
            .send()
            .await
            .expect("probe");
        assert_eq!(r.status(), StatusCode::OK, "GET {path}");
    }
    app.stop().await;
}

/// Tables without `workspace_id`, each with why. Anything else must have it.
const UNSCOPED_TABLES: &[(&str, &str)] = &[
    (
        "_sqlx_migrations",
        "the migrator's bookkeeping: one per database",
    ),
    (
        "workspaces",
        "the tenants themselves: their `id` is the workspace id",
    ),
    (
        "workflow_versions",
        "reached only through workflows(id) (FK, cascade), whose workspace every read and \
         write checks first; a version is never listed across workflows",
    ),
    (
        "team_decision_votes",
        "reached only through team_decisions(id) (FK, cascade); lacks the column a distributed \
         table needs (docs/scaling.md)",
    ),
    (
        "webhook_deliveries",
        "reached only through webhooks(id) (FK, cascade); lacks the column a distributed table \
         needs (docs/scaling.md)",
    ),
];

/// `table -> column -> data_type` of the public schema of a migrated database.
async fn columns(pool: &PgPool) -> BTreeMap<String, BTreeMap<String, String>> {
    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT c.table_name::text, c.column_name::text, c.data_type::text
         FROM information_schema.columns c
         JOIN information_schema.tables t
           ON t.table_schema = c.table_schema AND t.table_name = c.table_name
         WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'",
    )
    .fetch_all(pool)
    .await
    .expect("read information_schema");
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (table, column, ty) in rows {
        out.entry(table).or_default().insert(column, ty);
    }
    out
}

#[tokio::test]
async fn every_table_has_workspace_id() {
    let pool = PgPool::connect(&fresh_database().await)
        .await
        .expect("connect");
    let tables = columns(&pool).await;
    assert!(tables.len() > 20, "migrations did not run: {tables:?}");
    let unscoped: BTreeSet<&str> = tables
        .iter()
        .filter(|(_, cols)| !cols.contains_key("workspace_id"))
        .map(|(t, _)| t.as_str())
        .collect();
    let allowed: BTreeSet<&str> = UNSCOPED_TABLES.iter().map(|(t, _)| *t).collect();
    assert_eq!(
        unscoped, allowed,
        "tables without workspace_id (left) vs. the commented allow-list (right): add the \
         column, or justify the table in UNSCOPED_TABLES"
    );
    pool.close().await;
}

/// The modules whose SQL runs per task or per tick: claims, reports, task
/// transitions, attempts, events, agents' slots and the engine's sweeps.
const HOT_MODULES: &[&str] = &[
    "crates/service/src/engine/claim/mod.rs",
    "crates/service/src/engine/claim/slots.rs",
    "crates/service/src/engine/report_batch.rs",
    "crates/service/src/engine/dispatch.rs",
    "crates/service/src/engine/reports.rs",
    "crates/service/src/engine/reconcile.rs",
    "crates/service/src/store/tasks.rs",
    "crates/service/src/store/attempts.rs",
    "crates/service/src/store/events.rs",
    "crates/service/src/store/agents.rs",
];

/// Hot statements that are cross-workspace by design, by (file, function),
/// each with why; docs/scaling.md says how each changes on a sharded database.
const GLOBAL_BY_DESIGN: &[(&str, &str, &str)] = &[
    (
        "crates/service/src/engine/claim/mod.rs",
        "lock_ready",
        "the claim: one dispatcher serves every workspace's ready queue",
    ),
    (
        "crates/service/src/engine/reconcile.rs",
        "reclaim_expired_leases",
        "expired leases of any workspace are reclaimed by whichever replica looks",
    ),
    (
        "crates/service/src/engine/reconcile.rs",
        "sweep",
        "the sweep walks executing missions of all workspaces by id window",
    ),
    (
        "crates/service/src/engine/reconcile.rs",
        "progress_checks",
        "silent running attempts of any workspace",
    ),
    (
        "crates/service/src/store/agents.rs",
        "fold_returns",
        "slots reports gave back to agents of any workspace are folded by whichever replica ticks",
    ),
    (
        "crates/service/src/store/agents.rs",
        "claim_probes",
        "unreachable agents of any workspace are probed by whichever replica looks",
    ),
    (
        "crates/service/src/store/events.rs",
        "prune_older_than",
        "retention deletes by age across workspaces",
    ),
    (
        "crates/service/src/store/agents.rs",
        "mark_silent_offline",
        "heartbeat timeouts of any workspace's agents",
    ),
    (
        "crates/service/src/store/agents.rs",
        "lost_pins",
        "ready tasks of any workspace whose pinned agent is offline, retired or gone",
    ),
];

/// One `sqlx::query*!` statement in the source.
#[derive(Debug)]
struct Statement {
    file: &'static str,
    line: usize,
    function: String,
    /// Lower-cased, whitespace collapsed.
    sql: String,
}

/// The SQL literal of every `query!`, `query_as!` and `query_scalar!` in `file`.
fn statements(file: &'static str) -> Vec<Statement> {
    let src = std::fs::read_to_string(root().join(file)).expect("read source");
    let mut starts: Vec<usize> = ["query!(", "query_as!(", "query_scalar!("]
        .iter()
        .flat_map(|m| src.match_indices(m).map(|(i, m)| i + m.len()))
        .collect();
    starts.sort_unstable();
    let mut out = Vec::new();
    for start in starts {
        let Some(quote) = src[start..].find('"').map(|q| start + q) else {
            continue;
        };
        let raw = src[..quote].ends_with("r#");
        let body_start = quote + 1;
        let body_end = if raw {
            src[body_start..].find("\"#").map(|e| body_start + e)
        } else {
            let bytes = src.as_bytes();
            (body_start..src.len()).find(|&i| bytes[i] == b'"' && bytes[i - 1] != b'\\')
        };
        let Some(body_end) = body_end else { continue };
        let before = &src[..start];
        let function = before
            .rfind("fn ")
            .map(|f| {
                before[f + 3..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect()
            })
            .unwrap_or_default();
        out.push(Statement {
            file,
            line: before.matches('\n').count() + 1,
            function,
            // Comments go first: the text is collapsed onto one line.
            sql: src[body_start..body_end]
                .replace("\\\n", " ")
                .replace("\\\"", "\"")
                .lines()
                .map(|l| l.split_once("--").map_or(l, |(code, _)| code))
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
        });
    }
    out
}

/// Columns compared with a bound parameter: `col = $n` or `col = ANY($n)`
/// (alias prefixes dropped).
fn compared_with_parameter(sql: &str) -> BTreeSet<String> {
    let mut cols = BTreeSet::new();
    for (i, _) in sql.match_indices('=') {
        let lhs = sql[..i].trim_end();
        if lhs.ends_with(['<', '>', '!', ':']) || sql[i + 1..].starts_with('>') {
            continue;
        }
        let rhs = sql[i + 1..].trim_start();
        let rhs = rhs
            .strip_prefix("any")
            .map(|r| r.trim_start().trim_start_matches('(').trim_start())
            .unwrap_or(rhs);
        if !rhs.starts_with('$') {
            continue;
        }
        let ident: String = lhs
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if let Some(col) = ident.rsplit('.').next().filter(|c| !c.is_empty()) {
            cols.insert(col.to_owned());
        }
    }
    cols
}

/// The tables a statement names after FROM, JOIN, UPDATE or INTO.
fn tables_of<'a>(
    sql: &str,
    schema: &'a BTreeMap<String, BTreeMap<String, String>>,
) -> Vec<&'a str> {
    let words: Vec<&str> = sql
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut out: Vec<&str> = words
        .windows(2)
        .filter(|w| matches!(w[0], "from" | "join" | "update" | "into"))
        .filter_map(|w| schema.get_key_value(w[1]).map(|(k, _)| k.as_str()))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether the statement reads its rows' keys from `UNNEST($n::uuid[] …)`, the
/// batch form of `id = ANY($n)`.
fn unnests_uuid_parameter(sql: &str) -> bool {
    sql.match_indices("unnest($").any(|(i, m)| {
        let rest = sql[i + m.len()..].trim_start_matches(|c: char| c.is_ascii_digit());
        rest.starts_with("::uuid[]")
    })
}

/// Why a statement is workspace-scoped under the rule in docs/scaling.md, or `None`.
fn scoped_by(
    st: &Statement,
    schema: &BTreeMap<String, BTreeMap<String, String>>,
) -> Option<&'static str> {
    let tables = tables_of(&st.sql, schema);
    if !tables
        .iter()
        .any(|t| schema[*t].contains_key("workspace_id"))
    {
        return Some("touches no workspace table");
    }
    let compared = compared_with_parameter(&st.sql);
    if compared.contains("workspace_id") {
        return Some("filters on workspace_id");
    }
    if st.sql.starts_with("insert") && st.sql.contains("workspace_id") {
        return Some("inserts rows carrying workspace_id");
    }
    // uuid keys are globally unique: naming rows by them reaches only rows
    // whose ids the caller already holds from a workspace-filtered read.
    let uuid_key = compared.iter().any(|c| {
        tables
            .iter()
            .any(|t| schema[*t].get(c).map(String::as_str) == Some("uuid"))
    });
    if uuid_key || unnests_uuid_parameter(&st.sql) {
        return Some("rows named by uuid keys");
    }
    GLOBAL_BY_DESIGN
        .iter()
        .any(|(f, func, _)| *f == st.file && *func == st.function)
        .then_some("cross-workspace by design (allow-listed)")
}

#[tokio::test]
async fn every_hot_query_filters_on_workspace_id() {
    let pool = PgPool::connect(&fresh_database().await)
        .await
        .expect("connect");
    let schema = columns(&pool).await;
    pool.close().await;

    let all: Vec<Statement> = HOT_MODULES.iter().flat_map(|f| statements(f)).collect();
    assert!(
        all.len() > 40,
        "found only {} statements: {all:?}",
        all.len()
    );
    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    let mut violations = Vec::new();
    for st in &all {
        match scoped_by(st, &schema) {
            Some(why) => *tally.entry(why).or_default() += 1,
            None => violations.push(format!(
                "{}:{} ({}): {}",
                st.file,
                st.line,
                st.function,
                st.sql.chars().take(160).collect::<String>()
            )),
        }
    }
    eprintln!("hot statements: {} {tally:?}", all.len());
    assert!(
        violations.is_empty(),
        "hot queries that neither filter on workspace_id nor name rows by uuid key \
         (add the filter, or justify them in GLOBAL_BY_DESIGN):\n{}",
        violations.join("\n")
    );
    // A stale allow-list entry would hide a future query: each must still match
    // a statement that needs it.
    for (file, func, why) in GLOBAL_BY_DESIGN {
        let needed = all.iter().any(|st| {
            st.file == *file
                && st.function == *func
                && scoped_by(st, &schema) == Some("cross-workspace by design (allow-listed)")
        });
        assert!(
            needed,
            "GLOBAL_BY_DESIGN entry {file} {func} ({why}) matches nothing"
        );
    }
}

#[test]
fn the_rule_reads_comparisons_as_documented() {
    let cols = compared_with_parameter(
        "select * from t where t.workspace_id = $1 and id = any($2) and a.run_id=$3 \
         and x >= $4 and y = z and created_at < $5",
    );
    assert_eq!(
        cols,
        BTreeSet::from(["workspace_id".into(), "id".into(), "run_id".into()])
    );
    assert!(compared_with_parameter("make_interval(secs => $3)").is_empty());
    assert!(unnests_uuid_parameter(
        "from unnest($12::uuid[], $2::int[])"
    ));
    assert!(!unnests_uuid_parameter("from unnest($1::text[])"));
}

/// Foreign keys left without an index, each with why nothing looks rows up
/// by them.
const FOREIGN_KEYS_WITHOUT_INDEX: &[(&str, &str)] = &[
    (
        "orchestration_tasks_workspace_id_assigned_agent_id_fkey",
        "agents are retired, never deleted",
    ),
    (
        "agent_messages_workspace_id_from_agent_fkey",
        "agents are retired, never deleted",
    ),
    (
        "governance_decisions_workspace_id_requester_agent_id_fkey",
        "agents are retired, never deleted",
    ),
    (
        "tender_proposals_workspace_id_agent_id_fkey",
        "agents are retired, never deleted",
    ),
];

/// `table -> index -> key columns in order` of the public schema.
async fn index_columns(pool: &PgPool) -> BTreeMap<String, Vec<Vec<String>>> {
    let rows: Vec<(String, Vec<String>)> = sqlx::query_as(
        "SELECT i.indrelid::regclass::text,
                ARRAY(SELECT a.attname::text
                      FROM unnest(i.indkey::int2[]) WITH ORDINALITY k(attnum, n)
                      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                      ORDER BY k.n)
         FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
         WHERE c.relnamespace = 'public'::regnamespace",
    )
    .fetch_all(pool)
    .await
    .expect("read pg_index");
    let mut out: BTreeMap<String, Vec<Vec<String>>> = BTreeMap::new();
    for (table, cols) in rows {
        out.entry(table).or_default().push(cols);
    }
    out
}

/// Whether some index of `table` starts with exactly the columns `cols` (in any order).
fn led_by(indexes: &BTreeMap<String, Vec<Vec<String>>>, table: &str, cols: &[String]) -> bool {
    indexes.get(table).is_some_and(|all| {
        all.iter()
            .any(|ix| ix.len() >= cols.len() && cols.iter().all(|c| ix[..cols.len()].contains(c)))
    })
}

/// A delete of a referenced row looks its referencing rows up by the foreign
/// key's columns (cascade, set null, or the check that none are left); without
/// an index that is a scan of the whole referencing table per deleted row.
#[tokio::test]
async fn every_foreign_key_has_an_index() {
    let pool = PgPool::connect(&fresh_database().await)
        .await
        .expect("connect");
    let indexes = index_columns(&pool).await;
    let keys: Vec<(String, String, Vec<String>)> = sqlx::query_as(
        "SELECT c.conname::text, c.conrelid::regclass::text,
                ARRAY(SELECT a.attname::text
                      FROM unnest(c.conkey) WITH ORDINALITY k(attnum, n)
                      JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
                      ORDER BY k.n)
         FROM pg_constraint c
         WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace",
    )
    .fetch_all(&pool)
    .await
    .expect("read pg_constraint");
    pool.close().await;
    assert!(keys.len() > 50, "migrations did not run: {keys:?}");
    let unindexed: BTreeSet<&str> = keys
        .iter()
        .filter(|(_, table, cols)| !led_by(&indexes, table, cols))
        .map(|(name, _, _)| name.as_str())
        .collect();
    let allowed: BTreeSet<&str> = FOREIGN_KEYS_WITHOUT_INDEX.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        unindexed, allowed,
        "foreign keys without an index led by their columns (left) vs. the allow-list \
         (right): add the index in a migration, or justify the key in FOREIGN_KEYS_WITHOUT_INDEX"
    );
}

/// Statements whose plan scans a table whole even with sequential scans
/// disabled, by (file, function), each with why the scan stays small.
const SCANS_BY_DESIGN: &[(&str, &str, &str)] = &[
    (
        "crates/service/src/store/workflow_instances.rs",
        "take_outbox",
        "the queue's head: ORDER BY id LIMIT 1 reads the first entry of the primary key",
    ),
    (
        "crates/service/src/auth.rs",
        "ensure_bootstrap",
        "EXISTS stops at the first token",
    ),
    (
        "crates/service/src/store/bdi/maintenance.rs",
        "workspaces_with_state",
        "the maintenance job visits every workspace by design, once per interval \
         (30 minutes by default)",
    ),
    (
        "crates/service/src/store/metrics.rs",
        "snapshot",
        "a scrape counts tasks by status over all history and agents over the roster, \
         read-only and under the snapshot's own statement timeout (docs/operations.md)",
    ),
    (
        "crates/service/src/store/webhooks.rs",
        "list",
        "webhooks are a workspace's configuration, not history",
    ),
    (
        "crates/service/src/store/agents.rs",
        "claim_probes",
        "agents are the roster, not history, and this runs once per tick",
    ),
    (
        "crates/service/src/store/agents.rs",
        "fold_returns",
        "a slot return lives until the next claim or tick folds it: the table holds \
         milliseconds of reports, not history",
    ),
];

/// Every Rust source of the service crate, relative to the repository root.
fn service_sources() -> Vec<&'static str> {
    fn walk(dir: &std::path::Path, out: &mut Vec<&'static str>) {
        for entry in std::fs::read_dir(dir).expect("read source dir").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root()).expect("under the root");
                // Leaked: a test's lifetime, and `Statement` names its file statically.
                out.push(Box::leak(
                    rel.to_string_lossy().into_owned().into_boxed_str(),
                ));
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join("crates/service/src"), &mut out);
    out.sort_unstable();
    out
}

/// The tables a plan reads whole: sequential scans, and index scans with no
/// index condition (a walk of the whole index, taken only for its order).
/// Partial indexes are left out: walking one is bounded by its predicate (the
/// running tasks, say), not by history.
fn seq_scanned(plan: &serde_json::Value, partial: &BTreeSet<String>, out: &mut BTreeSet<String>) {
    let whole_index = matches!(
        plan["Node Type"].as_str(),
        Some("Index Scan" | "Index Only Scan")
    ) && plan.get("Index Cond").is_none()
        && !partial.contains(plan["Index Name"].as_str().unwrap_or_default());
    if plan["Node Type"] == "Seq Scan" || whole_index {
        let table = plan["Relation Name"].as_str().unwrap_or("?");
        out.insert(match plan["Index Name"].as_str() {
            Some(index) => format!("{table} (all of {index})"),
            None => table.to_owned(),
        });
    }
    for child in plan["Plans"].as_array().into_iter().flatten() {
        seq_scanned(child, partial, out);
    }
}

/// A statement that no index can serve scans its table whole, and the
/// tables grow with history: every call then costs more the older the
/// service is (a mission's edges read this way cost 59 ms a call after seven
/// minutes of load). Every statement of the service crate is prepared and its
/// generic plan explained with sequential scans disabled, so the planner
/// takes any index that applies (partial ones included); a scan of a whole
/// table or non-partial index left in the plan means none does.
#[tokio::test]
async fn every_query_can_use_an_index() {
    let pool = PgPool::connect(&fresh_database().await)
        .await
        .expect("connect");
    let mut conn = pool.acquire().await.expect("acquire");
    // Joins are forced to nested loops: on empty tables the planner would
    // otherwise merge-join along a whole primary key, which says nothing
    // about whether the inner table can be reached by an index.
    sqlx::raw_sql(
        "SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off;
         SET enable_mergejoin = off; SET enable_hashjoin = off",
    )
    .execute(&mut *conn)
    .await
    .expect("settings");
    let partial: BTreeSet<String> = sqlx::query_scalar(
        "SELECT indexrelid::regclass::text FROM pg_index WHERE indpred IS NOT NULL",
    )
    .fetch_all(&mut *conn)
    .await
    .expect("partial indexes")
    .into_iter()
    .collect();
    let mut violations = Vec::new();
    let mut needed = BTreeSet::new();
    let mut explained = 0;
    for st in service_sources().into_iter().flat_map(statements) {
        let params = (1..=99)
            .take_while(|n| {
                let p = format!("${n}");
                st.sql
                    .match_indices(&p)
                    .any(|(i, _)| !st.sql[i + p.len()..].starts_with(|c: char| c.is_ascii_digit()))
            })
            .count();
        let prepare = format!("PREPARE hot AS {}", st.sql);
        sqlx::raw_sql(sqlx::AssertSqlSafe(prepare))
            .execute(&mut *conn)
            .await
            .unwrap_or_else(|e| panic!("prepare {}:{}: {e}", st.file, st.line));
        let args = match params {
            0 => String::new(),
            n => format!("({})", vec!["NULL"; n].join(", ")),
        };
        let explain = format!("EXPLAIN (FORMAT JSON) EXECUTE hot{args}");
        let plan: serde_json::Value = sqlx::query_scalar(sqlx::AssertSqlSafe(explain))
            .fetch_one(&mut *conn)
            .await
            .unwrap_or_else(|e| panic!("explain {}:{}: {e}", st.file, st.line));
        sqlx::raw_sql("DEALLOCATE hot")
            .execute(&mut *conn)
            .await
            .expect("deallocate");
        explained += 1;
        let mut scanned = BTreeSet::new();
        seq_scanned(&plan[0]["Plan"], &partial, &mut scanned);
        if scanned.is_empty() {
            continue;
        }
        let allowed = SCANS_BY_DESIGN
            .iter()
            .any(|(f, func, _)| *f == st.file && *func == st.function);
        if allowed {
            needed.insert((st.file, st.function.clone()));
        } else {
            violations.push(format!(
                "{}:{} ({}) scans {scanned:?}: {}",
                st.file,
                st.line,
                st.function,
                st.sql.chars().take(160).collect::<String>()
            ));
        }
    }
    drop(conn);
    pool.close().await;
    assert!(explained > 40, "explained only {explained} statements");
    assert!(
        violations.is_empty(),
        "statements that no index can serve (add one in a migration, or justify \
         them in SCANS_BY_DESIGN):\n{}",
        violations.join("\n")
    );
    for (file, func, why) in SCANS_BY_DESIGN {
        assert!(
            needed.contains(&(*file, (*func).to_owned())),
            "SCANS_BY_DESIGN entry {file} {func} ({why}) matches no scan"
        );
    }
}
