//! Configuration and logs: `--log-format json`, the TOML file of `serve`,
//! `coordinator config print`, and `/readyz` on a database behind the binary.

use std::{path::PathBuf, process::Stdio, time::Duration};

use reqwest::StatusCode;
use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::Command,
};

use crate::{
    helpers::{announced_url, fresh_database, spawn_app_on, test_settings},
    peers::root,
};

/// The binary with none of the variables it reads set (the test process may have some).
fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_coordinator"));
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("COORDINATOR_") || name == "DATABASE_URL" || name == "RUST_LOG" {
            cmd.env_remove(name.as_ref());
        }
    }
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// Exit code, stdout and stderr of a finished run (at most 60 s).
async fn output(mut cmd: Command) -> (i32, String, String) {
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("the command finished in time")
        .expect("the command ran");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A file with `text` in the temporary directory (unique per call).
fn temp_file(text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("coordinator-{}.toml", uuid::Uuid::new_v4()));
    std::fs::write(&path, text).expect("write temp file");
    path
}

/// One JSON log line: it parses and has the fields operators filter on.
#[track_caller]
fn json_log(line: &str) -> Value {
    let v: Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON log line ({e}): {line}"));
    assert!(v["timestamp"].is_string(), "{line}");
    assert!(v["level"].is_string(), "{line}");
    assert!(v["target"].is_string(), "{line}");
    assert!(v["fields"]["message"].is_string(), "{line}");
    v
}

#[tokio::test]
async fn json_logs_are_one_object_per_line() {
    let db = fresh_database().await;
    let (code, _, stderr) = output(command(&[
        "--log-format",
        "json",
        "migrate",
        "--database-url",
        &db,
    ]))
    .await;
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<Value> = stderr.lines().map(json_log).collect();
    assert!(
        lines
            .iter()
            .any(|l| l["fields"]["message"] == "migrations applied" && l["level"] == "INFO"),
        "{stderr}"
    );
    // The environment variable chooses the format as well, and human is the default.
    let mut by_env = command(&["migrate", "--database-url", &db]);
    by_env.env("COORDINATOR_LOG_FORMAT", "json");
    let (code, _, stderr) = output(by_env).await;
    assert_eq!(code, 0, "{stderr}");
    stderr.lines().for_each(|l| {
        json_log(l);
    });
    let (code, _, stderr) = output(command(&["migrate", "--database-url", &db])).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr, "migrations applied\n");
}

#[tokio::test]
async fn serve_reads_its_config_file_and_logs_json() {
    let db = fresh_database().await;
    // The database and the address come only from the file.
    let file = temp_file(&format!(
        "listen = \"127.0.0.1:0\"\ndatabase-url = \"{db}\"\ntick-ms = 200\n"
    ));
    let mut cmd = command(&[
        "--log-format",
        "json",
        "serve",
        "--config",
        file.to_str().expect("utf-8 path"),
    ]);
    cmd.env(
        "COORDINATOR_BOOTSTRAP_TOKEN",
        "config-test-admin-token-0123456789abcdef",
    );
    let mut child = cmd.spawn().expect("spawn serve");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let url = announced_url(&mut lines, |line| {
        json_log(line)["fields"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    })
    .await;
    let (status, body) = {
        let r = reqwest::get(format!("{url}/readyz")).await.expect("readyz");
        (r.status(), r.text().await.unwrap_or_default())
    };
    assert_eq!(status, StatusCode::OK, "{body}");
    child.start_kill().expect("stop serve");
    let _ = child.wait().await;
    std::fs::remove_file(file).ok();
}

#[tokio::test]
async fn config_print_shows_each_value_with_its_source_and_masks_secrets() {
    let file = temp_file(
        "tick-ms = 250\nlease-secs = 30\nlisten = \"0.0.0.0:9000\"\n\
         bootstrap-token = \"file-bootstrap-secret-4242-0123456789abcdef\"\nno-engine = true\n",
    );
    let mut cmd = command(&[
        "config",
        "print",
        "--config",
        file.to_str().expect("utf-8 path"),
        "--listen",
        "127.0.0.1:7000",
        "--llm-api-key",
        "sk-flag-secret-9999",
    ]);
    cmd.env("COORDINATOR_LEASE_SECS", "45")
        .env("COORDINATOR_MAX_TASKS", "12")
        .env(
            "DATABASE_URL",
            "postgres://app:db-password-7777@db.internal:5432/coordinator",
        );
    let (code, stdout, stderr) = output(cmd).await;
    assert_eq!(code, 0, "{stderr}");
    let line = |key: &str| -> (String, String) {
        let l = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("no line for {key}:\n{stdout}"));
        let (value, source) = l.rsplit_once("  # ").expect("a source comment");
        let value = value.split_once(" = ").expect("key = value").1.trim();
        (value.to_owned(), source.trim().to_owned())
    };
    let expect = |key: &str, value: &str, source: &str| {
        assert_eq!(
            line(key),
            (value.to_owned(), source.to_owned()),
            "{key}:\n{stdout}"
        );
    };
    // A flag beats the file; the env beats the file; the file beats the default.
    expect("listen", "\"127.0.0.1:7000\"", "flag");
    expect("lease-secs", "45", "env");
    expect("max-tasks", "12", "env");
    expect("tick-ms", "250", "file");
    expect("no-engine", "true", "file");
    expect("max-attempts", "3", "default");
    expect("llm-max-tokens", "4096", "default");
    expect("bootstrap-token", "\"****\"", "file");
    expect("llm-api-key", "\"****\"", "flag");
    expect(
        "database-url",
        "\"postgres://app:****@db.internal:5432/coordinator\"",
        "env",
    );
    assert!(
        stdout.contains("# public-url") && stdout.contains("(unset)"),
        "{stdout}"
    );
    for secret in [
        "file-bootstrap-secret-4242-0123456789abcdef",
        "sk-flag-secret-9999",
        "db-password-7777",
    ] {
        assert!(!stdout.contains(secret), "{secret} leaked:\n{stdout}");
        assert!(!stderr.contains(secret), "{secret} leaked:\n{stderr}");
    }

    // The printout is itself a valid config file with the same values.
    let again = temp_file(&stdout);
    let (code, reprinted, stderr) = output(command(&[
        "config",
        "print",
        "--config",
        again.to_str().expect("utf-8 path"),
    ]))
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        reprinted
            .lines()
            .any(|l| l.starts_with("lease-secs ") && l.contains("= 45 ") && l.ends_with("# file")),
        "{reprinted}"
    );
    std::fs::remove_file(file).ok();
    std::fs::remove_file(again).ok();
}

#[tokio::test]
async fn a_bad_config_file_is_exit_code_2_naming_the_key() {
    for (text, wanted) in [
        (
            "tick_ms = 200\n",
            "unknown key `tick_ms`; keys are written in kebab case: did you mean `tick-ms`?",
        ),
        ("colour = \"blue\"\n", "unknown key `colour`"),
        (
            "tick-ms = \"soon\"\n",
            "`tick-ms = \"soon\"`: invalid value 'soon'",
        ),
        (
            "listen = [8080]\n",
            "`listen` must be a string, a number or a boolean",
        ),
        ("no-engine = \"yes\"\n", "`no-engine` must be true or false"),
        ("tick-ms = \n", "is not valid TOML"),
    ] {
        let file = temp_file(text);
        for sub in [&["serve"][..], &["config", "print"][..]] {
            let mut args = sub.to_vec();
            args.extend(["--config", file.to_str().expect("utf-8 path")]);
            let (code, stdout, stderr) = output(command(&args)).await;
            assert_eq!(code, 2, "{sub:?} {text:?}: {stderr}");
            assert!(stdout.is_empty(), "{stdout}");
            assert!(
                stderr.starts_with("error: config file ") && stderr.contains(wanted),
                "{sub:?} {text:?}: {stderr}"
            );
        }
        std::fs::remove_file(file).ok();
    }
    // The path may come from the environment too.
    let mut by_env = command(&["config", "print"]);
    by_env.env("COORDINATOR_CONFIG", "/nonexistent/coordinator.toml");
    let (code, _, stderr) = output(by_env).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("cannot read config file /nonexistent/coordinator.toml"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_example_config_file_is_accepted() {
    let example = root().join("deploy/coordinator.example.toml");
    let text = std::fs::read_to_string(&example).expect("read the example");
    let keys: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.trim()))
        .collect();
    assert!(keys.len() >= 5, "{keys:?}");
    let (code, stdout, stderr) = output(command(&[
        "config",
        "print",
        "--config",
        example.to_str().expect("utf-8 path"),
    ]))
    .await;
    assert_eq!(code, 0, "{stderr}");
    for key in keys {
        assert!(
            stdout
                .lines()
                .any(|l| l.split_whitespace().next() == Some(key) && l.ends_with("# file")),
            "{key} not taken from the file:\n{stdout}"
        );
    }
}

#[tokio::test]
async fn readyz_names_the_migrations_the_database_lacks() {
    let db = fresh_database().await;
    let app = spawn_app_on(&db, test_settings()).await;
    let (status, body) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "ready");

    // Forget the newest migration, as on a database an older binary migrated.
    let newest: i64 = sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations")
        .fetch_one(&app.pool)
        .await
        .expect("newest migration");
    sqlx::query(
        "CREATE TABLE saved_migration AS SELECT * FROM _sqlx_migrations WHERE version = $1",
    )
    .bind(newest)
    .execute(&app.pool)
    .await
    .expect("save the row");
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = $1")
        .bind(newest)
        .execute(&app.pool)
        .await
        .expect("delete the row");
    let (status, body) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "unavailable", "{body}");
    assert_eq!(
        body["error"]["details"]["missing_migrations"],
        serde_json::json!([newest]),
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("coordinator migrate")),
        "{body}"
    );

    sqlx::query("INSERT INTO _sqlx_migrations SELECT * FROM saved_migration")
        .execute(&app.pool)
        .await
        .expect("restore the row");
    let (status, body) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    app.stop().await;
}
