//! Docs that run (issue 28, item 8): every `coordinator …` command in the
//! README's and `docs/cli.md`'s ```sh blocks parses, with every `$VAR` it
//! uses set earlier in the document; every JSON field their `jq` programs
//! name exists in the served schemas; `agent --help` names every agent
//! command; and every request-body example of the OpenAPI document is a
//! body the API accepts.

use std::collections::{BTreeMap, BTreeSet};

use clap::{CommandFactory, Parser};
use coordinator::cli::Cli;
use serde_json::{Value, json};

use crate::helpers::{TestApp, chain_plan, spawn_app};

/// The text of a file at the repository's root.
fn doc(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The ```sh blocks of a Markdown text, in order, as logical lines
/// (continuations joined).
fn sh_lines(markdown: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            in_sh = !in_sh && trimmed == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(line);
        lines.push(std::mem::take(&mut pending));
    }
    lines
}

/// Shell-like words of a command: quotes group, `#` outside quotes ends it.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (None, '#') if word.is_empty() && !any => break,
            (None, c) if c.is_whitespace() => {
                if any || !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (None, c) => word.push(c),
        }
    }
    if any || !word.is_empty() {
        out.push(word);
    }
    out
}

/// Splits a line into its commands at `&&`, `||`, `;` and `|` outside
/// quotes, and lifts out the commands of `$( … )`.
fn commands(line: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '$' && chars.get(i + 1) == Some(&'(') => {
                // A command substitution: its inside is a command of its own.
                let mut depth = 0;
                let mut j = i + 1;
                while j < chars.len() {
                    match chars[j] {
                        '(' => depth += 1,
                        ')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                let inner: String = chars[i + 2..j.min(chars.len())].iter().collect();
                parts.extend(commands(&inner));
                current.push_str("SUBSTITUTED");
                i = j + 1;
                continue;
            }
            None if c == ';' || c == '|' || (c == '&' && chars.get(i + 1) == Some(&'&')) => {
                parts.push(std::mem::take(&mut current));
                while i + 1 < chars.len() && matches!(chars[i + 1], '|' | '&') {
                    i += 1;
                }
                i += 1;
                continue;
            }
            None => {}
        }
        current.push(c);
        i += 1;
    }
    parts.push(current);
    parts
        .into_iter()
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect()
}

/// A stand-in for a value the docs compute at run time.
const RUNTIME_VALUE: &str = "01a201c6-23f9-720c-bf94-f25ba4554f54";

/// Expands `$VAR`, `${VAR}` and `"$VAR"` from `vars`; an unset one is an error.
fn expand(word: &str, vars: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = word;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, tail) = if let Some(braced) = after.strip_prefix('{') {
            let end = braced.find('}').ok_or("unclosed ${")?;
            (&braced[..end], &braced[end + 1..])
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        if name.is_empty() {
            out.push('$');
        } else {
            out.push_str(
                vars.get(name)
                    .ok_or(format!("${name} is used but never set"))?,
            );
        }
        rest = tail;
    }
    out.push_str(rest);
    Ok(out)
}

/// Checks the `coordinator` commands of one document; returns the jq programs it runs.
fn check_document(name: &str) -> Vec<String> {
    let mut vars: BTreeMap<String, String> = BTreeMap::new();
    let mut jq = Vec::new();
    let mut problems = Vec::new();
    for line in sh_lines(&doc(name)) {
        for command in commands(&line) {
            let mut ws = words(&command);
            if ws.first().is_some_and(|w| w == "export") {
                ws.remove(0);
            }
            // Leading assignments (`A=b`, `ID=$(…)`) set variables.
            while let Some((var, value)) =
                ws.first().and_then(|w| w.split_once('=')).filter(|(v, _)| {
                    !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                })
            {
                let value = if value.contains("SUBSTITUTED") {
                    RUNTIME_VALUE.to_owned()
                } else {
                    expand(value, &vars).unwrap_or_else(|_| RUNTIME_VALUE.to_owned())
                };
                vars.insert(var.to_owned(), value);
                ws.remove(0);
            }
            match ws.first().map(String::as_str) {
                Some("coordinator") => {
                    let expanded: Result<Vec<String>, String> =
                        ws.iter().map(|w| expand(w, &vars)).collect();
                    match expanded {
                        Err(e) => problems.push(format!("{name}: {command}: {e}")),
                        Ok(args) => {
                            if let Err(e) = Cli::try_parse_from(&args) {
                                problems.push(format!("{name}: {command}: {}", e.render()));
                            }
                        }
                    }
                }
                Some("jq") => jq.extend(ws.iter().skip(1).filter(|w| !w.starts_with('-')).cloned()),
                _ => {}
            }
        }
    }
    assert!(
        problems.is_empty(),
        "commands in the docs that do not run:\n{}",
        problems.join("\n")
    );
    jq
}

/// The field names a jq program reads: `.name` and the keys of `{a, b: …}`.
fn jq_fields(program: &str) -> BTreeSet<String> {
    let mut fields = BTreeSet::new();
    let chars: Vec<char> = program.chars().collect();
    let ident = |from: usize| -> String {
        chars[from..]
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
            .collect()
    };
    let mut in_string = false;
    for (i, c) in chars.iter().enumerate() {
        match c {
            '"' => in_string = !in_string,
            '.' if !in_string => {
                let name = ident(i + 1);
                if name.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
                    fields.insert(name);
                }
            }
            '{' | ',' if !in_string => {
                let start = chars[i + 1..]
                    .iter()
                    .position(|c| !c.is_whitespace())
                    .map(|p| i + 1 + p);
                if let Some(s) = start {
                    let name = ident(s);
                    if !name.is_empty() {
                        fields.insert(name);
                    }
                }
            }
            _ => {}
        }
    }
    fields
}

/// Every property name of every schema in the document.
fn property_names(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                out.extend(props.keys().cloned());
            }
            for v in map.values() {
                property_names(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| property_names(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn the_docs_commands_parse_and_name_real_fields() {
    let mut programs = check_document("README.md");
    programs.extend(check_document("docs/cli.md"));
    let app = spawn_app().await;
    let (_, document) = app.get("/openapi.json").await;
    let mut names = BTreeSet::new();
    property_names(&document, &mut names);
    // jq's own words and the payload keys of events (free-form objects).
    let jq_words = ["select", "head", "length", "map", "key"];
    let mut unknown = Vec::new();
    for program in &programs {
        for field in jq_fields(program) {
            if !names.contains(&field) && !jq_words.contains(&field.as_str()) {
                unknown.push(format!("{field} (in jq '{program}')"));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "fields the docs read that no schema has: {unknown:#?}"
    );
    assert!(
        !names.contains("edges"),
        "a schema has an `edges` field after all"
    );
    app.stop().await;
}

#[test]
fn a_command_groups_summary_names_every_command() {
    let cli = Cli::command();
    for group in ["agent"] {
        let cmd = cli.find_subcommand(group).expect("group");
        let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
        for sub in cmd.get_subcommands() {
            assert!(
                about.contains(sub.get_name()),
                "`coordinator {group} --help` does not name `{}`: {about}",
                sub.get_name()
            );
        }
    }
}

#[test]
fn the_docs_checker_catches_what_it_should() {
    assert_eq!(
        commands(
            "ID=$(coordinator mission create x --json | jq -r .id) && coordinator mission approve $ID"
        ),
        vec![
            "coordinator mission create x --json",
            "jq -r .id",
            "ID=SUBSTITUTED",
            "coordinator mission approve $ID",
        ]
    );
    assert!(expand("$ID", &BTreeMap::new()).is_err());
    assert_eq!(words("a 'b c' # note"), vec!["a", "b c"]);
    assert_eq!(
        jq_fields("{status, tasks: [.tasks[] | {key, depends_on}]}"),
        ["depends_on", "key", "status", "tasks"]
            .into_iter()
            .map(str::to_owned)
            .collect()
    );
    let parsed = Cli::try_parse_from(["coordinator", "mission", "show", "x"]);
    assert!(parsed.is_ok());
}

/// Path parameters of the examples' routes, filled with real ids where cheap.
async fn path_values(app: &TestApp) -> BTreeMap<&'static str, String> {
    app.register_fleet("http://127.0.0.1:9", 2).await;
    let m = app
        .create_mission(json!({"goal": "chain", "plan": chain_plan()}))
        .await;
    let mut values = BTreeMap::new();
    values.insert("id", m["id"].as_str().expect("id").to_owned());
    values.insert("task", "a".to_owned());
    values.insert("agent_id", "researcher".to_owned());
    values
}

#[tokio::test]
async fn every_request_example_of_the_openapi_document_is_accepted() {
    let app = spawn_app().await;
    let (_, document) = app.get("/openapi.json").await;
    assert_eq!(document["servers"][0]["url"], "/");
    let values = path_values(&app).await;
    let mut sent = 0;
    let mut refused = Vec::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("item") {
            let Some(example) = op
                .pointer("/requestBody/content/application~1json/example")
                .cloned()
            else {
                continue;
            };
            let concrete = path
                .split('/')
                .map(
                    |seg| match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                        Some(name) => values
                            .get(name)
                            .cloned()
                            .unwrap_or_else(|| uuid::Uuid::nil().to_string()),
                        None => seg.to_owned(),
                    },
                )
                .collect::<Vec<_>>()
                .join("/");
            let m = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
            let (status, body) = app
                .request(m, &concrete, Some(example.clone()), Some(&app.token))
                .await;
            sent += 1;
            // 404 (an id that is not there) and 409 (a state that does not allow it) are not
            // about the body; nor is a replan that needs an LLM planner the test service lacks.
            let not_the_body = body["error"]["code"] == "replan_needs_llm";
            if [400, 415, 422].contains(&status.as_u16()) && !not_the_body {
                refused.push(format!("{method} {path} {example}: {status} {body}"));
            }
        }
    }
    assert!(sent >= 10, "only {sent} examples in the document");
    assert!(refused.is_empty(), "examples the API refuses: {refused:#?}");
    app.stop().await;
}
