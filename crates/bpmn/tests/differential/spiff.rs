//! SpiffWorkflow's side: the model in its dialect (conditions as Python)
//! and its run by `tests/bpmn/spiff_run.py`.

use std::path::Path;

use coordinator_bpmn::expr::{self, BinaryOp, Expr, UnaryOp};
use coordinator_bpmn::{Definitions, NodeKind, Trigger};
use serde_json::{Value, json};

use crate::{Case, Trace, model_text, read_model, repo_root};

/// An expression of the condition language as a Python expression over the
/// task data (Spiff's globals); an error for what has no faithful match.
fn python(e: &Expr) -> Result<String, String> {
    Ok(match e {
        Expr::Null => "None".into(),
        Expr::Bool(true) => "True".into(),
        Expr::Bool(false) => "False".into(),
        Expr::Int(i) => i.to_string(),
        Expr::Float(x) => format!("{x:?}"),
        // A JSON string literal is a Python one (the same escapes).
        Expr::Str(s) => Value::from(s.as_str()).to_string(),
        Expr::Var(path) => {
            let mut out = path.root.clone();
            for step in &path.steps {
                match step {
                    expr::Step::Field(name) => {
                        out.push_str(&format!("[{}]", Value::from(name.as_str())))
                    }
                    expr::Step::Index(i) => out.push_str(&format!("[{i}]")),
                }
            }
            out
        }
        Expr::Unary { op, operand } => {
            let inner = python(operand)?;
            match op {
                UnaryOp::Not => format!("(not {inner})"),
                UnaryOp::Neg => format!("(-{inner})"),
                UnaryOp::Empty => return Err("`empty` has no Python counterpart".into()),
            }
        }
        Expr::Binary { op, left, right } => {
            let symbol = match op {
                BinaryOp::Or => "or",
                BinaryOp::And => "and",
                BinaryOp::Rem => return Err("`%` rounds differently in Python".into()),
                other => other.symbol(),
            };
            format!("({} {symbol} {})", python(left)?, python(right)?)
        }
        Expr::In { item, list } => {
            let items: Result<Vec<String>, String> = list.iter().map(python).collect();
            format!("({} in [{}])", python(item)?, items?.join(", "))
        }
    })
}

/// A condition's text in any of our dialects, as Python.
fn python_condition(text: &str) -> Result<String, String> {
    let parsed = expr::parse(text).map_err(|e| format!("'{text}': {e}"))?;
    python(&parsed).map_err(|e| format!("'{text}': {e}"))
}

/// XML text content decoded (the five entities and character references).
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let Some(end) = rest[at..].find(';') else {
            out.push_str(&rest[at..]);
            return out;
        };
        let entity = &rest[at + 1..at + end];
        let decoded = match entity {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .map(|h| u32::from_str_radix(h, 16))
                .or_else(|| entity.strip_prefix('#').map(str::parse::<u32>))
                .and_then(Result::ok)
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => out.push(c),
            None => out.push_str(&rest[at..=at + end]),
        }
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    out
}

/// Text escaped for XML content.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Rewrites the text of every element whose local name is in `names` (any
/// prefix; elements with only text) with `rewrite`.
fn patch_texts(
    xml: &str,
    names: &[&str],
    rewrite: &dyn Fn(&str, &str) -> Result<String, String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(xml.len());
    let mut at = 0;
    while let Some(open) = xml[at..].find('<').map(|i| at + i) {
        let Some(close) = xml[open..].find('>').map(|i| open + i) else {
            break;
        };
        out.push_str(&xml[at..=close]);
        at = close + 1;
        let tag = &xml[open + 1..close];
        let name = tag
            .split(|c: char| c.is_whitespace() || c == '/')
            .next()
            .unwrap_or_default();
        let local = name.rsplit(':').next().unwrap_or_default();
        if tag.ends_with('/') || !names.contains(&local) {
            continue;
        }
        let end = xml[at..]
            .find("</")
            .map(|i| at + i)
            .ok_or_else(|| format!("<{name}> is not closed"))?;
        out.push_str(&escape(&rewrite(local, &unescape(&xml[at..end]))?));
        at = end;
    }
    out.push_str(&xml[at..]);
    Ok(out)
}

/// The model in SpiffWorkflow's dialect (see the test's module documentation).
fn spiff_copy(xml: &str) -> Result<String, String> {
    let names = [
        "conditionExpression",
        "completionCondition",
        "loopCardinality",
        "timeDuration",
        "timeDate",
        "timeCycle",
    ];
    let patched = patch_texts(xml, &names, &|element, text| {
        if element.starts_with("time") {
            Ok(Value::from(text.trim()).to_string())
        } else {
            python_condition(text)
        }
    })?;
    Ok(patched.replace("isExecutable=\"false\"", "isExecutable=\"true\""))
}

/// The message a start event waits for, by name (for Spiff, which waits for
/// it where we start at the event).
fn start_message(defs: &Definitions, start: Option<&str>) -> Option<String> {
    let (_, at) = defs.find_node(start?)?;
    let NodeKind::StartEvent {
        trigger: Trigger::Message { message_ref, .. },
        ..
    } = &at.node.kind
    else {
        return None;
    };
    let message = defs
        .messages
        .iter()
        .find(|m| Some(&m.id) == message_ref.as_ref())?;
    message.name.clone().or_else(|| Some(message.id.clone()))
}

/// Spiff's run of a case: every node completed, and whether it finished.
pub fn run_spiff(
    python: &Path,
    defs: &Definitions,
    case: &Case,
    label: &str,
) -> Result<Trace, String> {
    let copy = spiff_copy(&model_text(&read_model(case.file)))?;
    let path = std::env::temp_dir().join(format!(
        "coordinator-differential-{}-{label}.bpmn",
        std::process::id()
    ));
    std::fs::write(&path, copy).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut driver = json!({"outputs": case.outputs, "messages": case.messages, "hold": case.hold});
    if let Some(name) = start_message(defs, case.start) {
        driver["start_message"] = Value::from(name);
    }
    let out = std::process::Command::new(python)
        .arg(repo_root().join("tests/bpmn/spiff_run.py"))
        .arg(&path)
        .arg(case.process)
        .arg(case.variables.to_string())
        .arg(driver.to_string())
        .output()
        .map_err(|e| format!("run {}: {e}", python.display()))?;
    let _ = std::fs::remove_file(&path);
    if !out.status.success() {
        return Err(format!(
            "spiff_run.py failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let report: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "spiff_run.py printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })?;
    if let Some(error) = report.get("error").and_then(Value::as_str) {
        return Err(format!("SpiffWorkflow failed: {error}"));
    }
    let completed = report["completed"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["id"].as_str().map(str::to_owned))
        .collect();
    Ok(Trace {
        completed,
        finished: report["finished"].as_bool().unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::{python_condition, spiff_copy};

    /// Conditions in every dialect print as the Python Spiff evaluates.
    #[test]
    fn conditions_translate_to_python() {
        let cases = [
            ("${amount > 100}", "(amount > 100)"),
            (
                "= kind = \"rush\" and not(amount > 100)",
                "((kind == \"rush\") and (not (amount > 100)))",
            ),
            ("${!approved}", "(not approved)"),
            (
                "b == true && !(a == false)",
                "((b == True) and (not (a == False)))",
            ),
            (
                "= order.items[1].unit_price != null or x = 2.5",
                "((order[\"items\"][0][\"unit_price\"] != None) or (x == 2.5))",
            ),
            ("#{n - -3 >= 2 * m / 4}", "((n - -3) >= ((2 * m) / 4))"),
            ("kind in ['a', \"b\\\"c\"]", "(kind in [\"a\", \"b\\\"c\"])"),
            ("${clarified == 'yes'}", "(clarified == \"yes\")"),
        ];
        for (ours, python) in cases {
            assert_eq!(python_condition(ours).as_deref(), Ok(python), "{ours}");
        }
        for refused in ["empty x", "n % 2 == 0", "${a <"] {
            assert!(python_condition(refused).is_err(), "{refused}");
        }
    }

    /// Spiff's copy: conditions, timers and isExecutable rewritten, the rest kept.
    #[test]
    fn spiff_copy_rewrites_only_what_spiff_reads_differently() {
        let xml = r#"<bpmn:process id="p" isExecutable="false"><!-- a <comment> -->
    <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">${a &amp;&amp; b &lt; 2}</bpmn:conditionExpression>
    <conditionExpression>= x = "y"</conditionExpression><bpmn:timeDuration> PT1H </bpmn:timeDuration>
    <bpmn:script>total = 2</bpmn:script><bpmn:conditionExpression/></bpmn:process>"#;
        let expected = r#"<bpmn:process id="p" isExecutable="true"><!-- a <comment> -->
    <bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">(a and (b &lt; 2))</bpmn:conditionExpression>
    <conditionExpression>(x == "y")</conditionExpression><bpmn:timeDuration>"PT1H"</bpmn:timeDuration>
    <bpmn:script>total = 2</bpmn:script><bpmn:conditionExpression/></bpmn:process>"#;
        assert_eq!(spiff_copy(xml).as_deref(), Ok(expected));
    }
}
