//! `coordinator workflow …`: BPMN workflows on a running service. Import a
//! file drawn in a modeler (or a new version of it), validate, show, export
//! and delete it; start instances and move them (a person's task done or
//! failed, a stopped token retried, variables set, a cancel); send messages
//! and signals. Authoring element by element is the agents' tools' job
//! (`bpmn_add_node` and the rest); people draw in a modeler and import.

use std::{path::PathBuf, process::ExitCode};

use clap::Subcommand;
use serde_json::{Map, Value, json};

use super::{
    CliError, CliResult, ClientArgs,
    operator::{print_answer, print_list},
    out, out_json, parse_json_flag, report,
};

/// `coordinator workflow …`.
#[derive(Debug, clap::Args)]
pub struct WorkflowArgs {
    /// Service and output.
    #[command(flatten)]
    pub client: ClientArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: WorkflowCommand,
}

/// Variables given on the command line.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Variables {
    /// A variable, `NAME=VALUE` (the value read as JSON, else as a string); repeatable.
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
    /// Variables as one JSON object (`--var` entries win over its keys).
    #[arg(long, value_name = "JSON")]
    pub variables: Option<String>,
}

/// Workflow commands.
#[derive(Debug, Subcommand)]
pub enum WorkflowCommand {
    /// Import a BPMN 2.0 file as a new workflow (`-`: stdin).
    Import {
        /// The document.
        file: String,
        /// Display name (default: the document's first named process).
        #[arg(long)]
        name: Option<String>,
    },
    /// Import a BPMN 2.0 file as the next version of a workflow.
    Version {
        /// Workflow id.
        workflow: String,
        /// The document (`-`: stdin).
        file: String,
    },
    /// Check a BPMN 2.0 file without storing it: errors and warnings with element ids.
    Validate {
        /// The document (`-`: stdin).
        file: String,
    },
    /// The workspace's workflows, newest first.
    List {
        /// Page size (1-200).
        #[arg(long)]
        limit: Option<u32>,
        /// The `next_cursor` of the previous page.
        #[arg(long)]
        cursor: Option<String>,
    },
    /// A workflow: its version, validation and timer start schedule.
    Show {
        /// Workflow id.
        workflow: String,
        /// A version (default: the latest).
        #[arg(long)]
        version: Option<i32>,
    },
    /// Write a version as BPMN 2.0 XML, for Camunda Modeler or bpmn.io.
    Export {
        /// Workflow id.
        workflow: String,
        /// A version (default: the latest).
        #[arg(long)]
        version: Option<i32>,
        /// Write to this file instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Delete a workflow with its versions (refused while it has instances).
    Delete {
        /// Workflow id.
        workflow: String,
    },
    /// Start an instance.
    Start {
        /// Workflow id.
        workflow: String,
        /// Its variables.
        #[command(flatten)]
        variables: Variables,
        /// The process to run (default: the executable one).
        #[arg(long)]
        process: Option<String>,
        /// The start event (default: the none start event).
        #[arg(long)]
        start_event: Option<String>,
        /// The caller's key for the instance (messages correlate by it).
        #[arg(long)]
        business_key: Option<String>,
        /// The version to run (default: the latest).
        #[arg(long)]
        version: Option<i32>,
    },
    /// A workflow's instances, newest first.
    Instances {
        /// Workflow id.
        workflow: String,
        /// Page size (1-200).
        #[arg(long)]
        limit: Option<u32>,
        /// The `next_cursor` of the previous page.
        #[arg(long)]
        cursor: Option<String>,
    },
    /// An instance: where its tokens wait, people's tasks, incidents, history.
    Instance {
        /// Instance id.
        instance: String,
    },
    /// Complete a person's task (user or manual task).
    Complete {
        /// Instance id.
        instance: String,
        /// The waiting token's number.
        #[arg(value_name = "TOKEN")]
        token_no: u64,
        /// The task's output (the form's values), a JSON object.
        #[arg(long, value_name = "JSON")]
        output: Option<String>,
    },
    /// Fail a person's task with a BPMN error (an error boundary may catch it).
    Fail {
        /// Instance id.
        instance: String,
        /// The waiting token's number.
        #[arg(value_name = "TOKEN")]
        token_no: u64,
        /// Why.
        #[arg(long)]
        message: String,
        /// The BPMN error code.
        #[arg(long)]
        code: Option<String>,
    },
    /// Run a token stopped at an incident again.
    Retry {
        /// Instance id.
        instance: String,
        /// The stopped token's number.
        #[arg(value_name = "TOKEN")]
        token_no: u64,
    },
    /// Set variables of a running instance.
    Set {
        /// Instance id.
        instance: String,
        /// The variables.
        #[command(flatten)]
        variables: Variables,
    },
    /// Cancel a running instance (its agent tasks' missions are cancelled).
    Cancel {
        /// Instance id.
        instance: String,
    },
    /// Send a message: to the instance waiting for it, else to a process it starts.
    Message {
        /// The message's name.
        name: String,
        /// The correlation key.
        #[arg(long)]
        key: Option<String>,
        /// Its content, JSON.
        #[arg(long, value_name = "JSON")]
        payload: Option<String>,
    },
    /// Broadcast a signal to every instance of the workspace waiting for it.
    Signal {
        /// The signal's name.
        name: String,
        /// Its content, JSON.
        #[arg(long, value_name = "JSON")]
        payload: Option<String>,
    },
}

/// Reads a document: a file, or stdin for `-`.
fn read_file(file: &str) -> Result<Vec<u8>, CliError> {
    if file == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)?;
        return Ok(buf);
    }
    std::fs::read(file).map_err(|e| CliError::Usage(format!("{file}: {e}")))
}

/// The variables of `--variables` and `--var`, as one JSON object.
fn variables(v: &Variables) -> Result<Map<String, Value>, CliError> {
    let mut map = match &v.variables {
        None => Map::new(),
        Some(text) => match parse_json_flag("--variables", text)? {
            Value::Object(m) => m,
            _ => {
                return Err(CliError::Usage(
                    "--variables must be a JSON object".to_owned(),
                ));
            }
        },
    };
    for pair in &v.vars {
        let Some((name, value)) = pair.split_once('=') else {
            return Err(CliError::Usage(format!("--var {pair}: write NAME=VALUE")));
        };
        if name.trim().is_empty() {
            return Err(CliError::Usage(format!("--var {pair}: the name is empty")));
        }
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
        map.insert(name.trim().to_owned(), value);
    }
    Ok(map)
}

fn json_flag(flag: &str, text: Option<&str>) -> Result<Value, CliError> {
    text.map_or(Ok(Value::Null), |t| parse_json_flag(flag, t))
}

fn page(limit: Option<u32>, cursor: Option<&String>) -> Vec<(&'static str, String)> {
    let mut q = Vec::new();
    if let Some(l) = limit {
        q.push(("limit", l.to_string()));
    }
    if let Some(c) = cursor {
        q.push(("cursor", c.clone()));
    }
    q
}

fn version_query(version: Option<i32>) -> Vec<(&'static str, String)> {
    version
        .map(|v| vec![("version", v.to_string())])
        .unwrap_or_default()
}

/// Prints a validation report: one line per finding, errors first.
fn print_report(json: bool, report: &Value) -> CliResult {
    if json {
        out_json(report)?;
    } else {
        let mut text = String::new();
        for (kind, key) in [("error", "errors"), ("warning", "warnings")] {
            for f in report[key].as_array().into_iter().flatten() {
                text.push_str(&format!(
                    "{kind} {} {}: {}\n",
                    f["code"].as_str().unwrap_or(""),
                    f["element"].as_str().unwrap_or("-"),
                    f["message"].as_str().unwrap_or("")
                ));
            }
        }
        let valid = report["valid"].as_bool().unwrap_or(false);
        text.push_str(if valid {
            "valid: it can run\n"
        } else {
            "not valid: fix the errors before running it\n"
        });
        out(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints a workflow: one line and its validation, or JSON.
fn print_workflow(json: bool, what: &str, w: &Value) -> CliResult {
    if json {
        out_json(w)?;
        return Ok(ExitCode::SUCCESS);
    }
    let errors = w["validation"]["errors"].as_array().map_or(0, Vec::len);
    let warnings = w["validation"]["warnings"].as_array().map_or(0, Vec::len);
    let mut text = format!(
        "{what} {} '{}' version {}; {errors} errors, {warnings} warnings\n",
        w["id"].as_str().unwrap_or(""),
        w["name"].as_str().unwrap_or(""),
        w["version"]
    );
    for t in w["timer_starts"].as_array().into_iter().flatten() {
        text.push_str(&format!(
            "  timer start {} ({} {}) next at {}\n",
            t["start_event"].as_str().unwrap_or(""),
            t["kind"].as_str().unwrap_or(""),
            t["definition"].as_str().unwrap_or(""),
            t["due_at"].as_str().unwrap_or("")
        ));
    }
    out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Prints an instance: status, where it waits, people's tasks, incidents.
fn print_instance(json: bool, what: &str, i: &Value) -> CliResult {
    if json {
        out_json(i)?;
        return Ok(ExitCode::SUCCESS);
    }
    let list = |key: &str| {
        i[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    let mut text = format!(
        "{what} {}; status {}\n  active: {}\n",
        i["id"].as_str().unwrap_or(""),
        i["status"].as_str().unwrap_or(""),
        list("active")
    );
    for t in i["human_tasks"].as_array().into_iter().flatten() {
        text.push_str(&format!(
            "  a person's task at {} (token {})\n",
            t["node_id"].as_str().unwrap_or(""),
            t["token"]
        ));
    }
    for t in i["tokens"].as_array().into_iter().flatten() {
        if ["timer", "message", "signal", "work", "called"]
            .contains(&t["wait"].as_str().unwrap_or(""))
        {
            text.push_str(&format!(
                "  token {} at {} waits for {}\n",
                t["token"],
                t["node_id"].as_str().unwrap_or(""),
                t["wait"].as_str().unwrap_or("")
            ));
        }
    }
    for inc in i["incidents"].as_array().into_iter().flatten() {
        text.push_str(&format!(
            "  incident at {} (token {}): {}\n",
            inc["node"].as_str().unwrap_or(""),
            inc["token"],
            inc["message"].as_str().unwrap_or("")
        ));
    }
    out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs a `workflow …` command.
pub async fn run(args: WorkflowArgs) -> ExitCode {
    let json = args.client.json;
    let outcome = dispatch(&args.client, args.command).await;
    outcome.unwrap_or_else(|e| report(e, json))
}

async fn dispatch(client: &ClientArgs, command: WorkflowCommand) -> CliResult {
    let api = client.client()?;
    match definitions(&api, client.json, command).await? {
        Ok(code) => Ok(code),
        Err(command) => instances(&api, client.json, command).await,
    }
}

/// The commands on workflows themselves; any other command is given back.
async fn definitions(
    api: &crate::client::Client,
    json: bool,
    command: WorkflowCommand,
) -> Result<Result<ExitCode, WorkflowCommand>, CliError> {
    use WorkflowCommand as W;
    const XML: &str = "application/xml";
    let done = match command {
        W::Import { file, name } => {
            let body = read_file(&file)?;
            let q: Vec<(&str, String)> = name.map(|n| vec![("name", n)]).unwrap_or_default();
            let w = api
                .call_document("POST", &["v1", "workflows", "import"], &q, XML, body)
                .await?;
            print_workflow(json, "imported workflow", &w)
        }
        W::Version { workflow, file } => {
            let body = read_file(&file)?;
            let path = ["v1", "workflows", workflow.as_str(), "versions"];
            let w = api.call_document("POST", &path, &[], XML, body).await?;
            print_workflow(json, "new version of workflow", &w)
        }
        W::Validate { file } => {
            let body = read_file(&file)?;
            let path = ["v1", "workflows", "validate"];
            let report = api.call_document("POST", &path, &[], XML, body).await?;
            print_report(json, &report)
        }
        W::List { limit, cursor } => {
            let list = api
                .call(
                    "GET",
                    &["v1", "workflows"],
                    &page(limit, cursor.as_ref()),
                    None,
                )
                .await?;
            print_list(
                json,
                &list,
                "workflows",
                &["id", "name", "latest_version", "updated_at"],
            )
        }
        W::Show { workflow, version } => {
            let path = ["v1", "workflows", workflow.as_str()];
            let w = api
                .call("GET", &path, &version_query(version), None)
                .await?;
            print_workflow(json, "workflow", &w)
        }
        W::Export {
            workflow,
            version,
            output,
        } => {
            let path = ["v1", "workflows", workflow.as_str(), "bpmn"];
            let xml = api
                .get_document(&path, &version_query(version), XML)
                .await?;
            match output {
                Some(file) => {
                    std::fs::write(&file, &xml)?;
                    if !json {
                        eprintln!("wrote {} ({} bytes)", file.display(), xml.len());
                    }
                }
                None => std::io::Write::write_all(&mut std::io::stdout(), &xml)?,
            }
            Ok(ExitCode::SUCCESS)
        }
        W::Delete { workflow } => {
            let path = ["v1", "workflows", workflow.as_str()];
            let answer = api.call("DELETE", &path, &[], None).await?;
            print_answer(json, &format!("workflow {workflow} deleted"), &answer)
        }
        other => return Ok(Err(other)),
    };
    done.map(Ok)
}

/// The commands on instances, messages and signals.
async fn instances(api: &crate::client::Client, json: bool, command: WorkflowCommand) -> CliResult {
    use WorkflowCommand as W;
    match command {
        W::Start {
            workflow,
            variables: v,
            process,
            start_event,
            business_key,
            version,
        } => {
            let body = json!({
                "variables": variables(&v)?,
                "process_id": process,
                "start_event": start_event,
                "business_key": business_key,
                "version": version,
            });
            let path = ["v1", "workflows", workflow.as_str(), "instances"];
            let i = api.call("POST", &path, &[], Some(&body)).await?;
            print_instance(json, "started instance", &i)
        }
        W::Instances {
            workflow,
            limit,
            cursor,
        } => {
            let path = ["v1", "workflows", workflow.as_str(), "instances"];
            let list = api
                .call("GET", &path, &page(limit, cursor.as_ref()), None)
                .await?;
            let columns = ["id", "status", "process_id", "business_key", "updated_at"];
            print_list(json, &list, "instances", &columns)
        }
        W::Instance { instance } => {
            let path = ["v1", "workflow-instances", instance.as_str()];
            let i = api.call("GET", &path, &[], None).await?;
            print_instance(json, "instance", &i)
        }
        W::Complete {
            instance,
            token_no: token,
            output,
        } => {
            let body = json!({ "output": json_flag("--output", output.as_deref())? });
            token_command(api, json, &instance, token, "complete", body).await
        }
        W::Fail {
            instance,
            token_no: token,
            message,
            code,
        } => {
            let body = json!({ "message": message, "error_code": code });
            token_command(api, json, &instance, token, "fail", body).await
        }
        W::Retry {
            instance,
            token_no: token,
        } => token_command(api, json, &instance, token, "retry", Value::Null).await,
        W::Set {
            instance,
            variables: v,
        } => {
            let body = json!({ "variables": variables(&v)? });
            let path = ["v1", "workflow-instances", instance.as_str(), "variables"];
            let i = api.call("POST", &path, &[], Some(&body)).await?;
            print_instance(json, "variables set on instance", &i)
        }
        W::Cancel { instance } => {
            let path = ["v1", "workflow-instances", instance.as_str(), "cancel"];
            let i = api.call("POST", &path, &[], None).await?;
            print_instance(json, "cancelled instance", &i)
        }
        W::Message { name, key, payload } => {
            let body = json!({
                "name": name,
                "correlation_key": key,
                "payload": json_flag("--payload", payload.as_deref())?,
            });
            let answer = api
                .call("POST", &["v1", "workflow-messages"], &[], Some(&body))
                .await?;
            let to = answer["instance_id"].as_str().unwrap_or("");
            print_answer(
                json,
                &format!("message '{name}' delivered to instance {to}"),
                &answer,
            )
        }
        W::Signal { name, payload } => {
            let body = json!({
                "name": name,
                "payload": json_flag("--payload", payload.as_deref())?,
            });
            let answer = api
                .call("POST", &["v1", "workflow-signals"], &[], Some(&body))
                .await?;
            let n = answer["delivered"].as_u64().unwrap_or(0);
            print_answer(
                json,
                &format!("signal '{name}' reached {n} instances"),
                &answer,
            )
        }
        // Taken by `definitions` before this is called.
        other => Err(CliError::Failed(format!("no handler for {other:?}"))),
    }
}

/// A command on one token of an instance.
async fn token_command(
    api: &crate::client::Client,
    json: bool,
    instance: &str,
    token: u64,
    verb: &str,
    body: Value,
) -> CliResult {
    let token = token.to_string();
    let path = [
        "v1",
        "workflow-instances",
        instance,
        "tokens",
        token.as_str(),
        verb,
    ];
    let body = (!body.is_null()).then_some(body);
    let i = api.call("POST", &path, &[], body.as_ref()).await?;
    print_instance(
        json,
        &format!("token {token}: {verb} applied; instance"),
        &i,
    )
}
