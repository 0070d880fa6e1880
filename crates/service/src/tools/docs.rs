//! The tool catalogue as Markdown: `docs/agents.md` holds it between
//! [`BEGIN`] and [`END`], and a test fails when the file drifts from the
//! code (`UPDATE_DOCS=1 cargo test -p coordinator-service tools_docs`
//! rewrites it).

use super::{Group, Tool, all};

/// The marker before the generated table.
pub const BEGIN: &str = "<!-- BEGIN GENERATED: tools -->";
/// The marker after it.
pub const END: &str = "<!-- END GENERATED -->";

/// One table per group: tool, who may call it, whether it changes
/// anything, its arguments (required ones in bold) and what it does.
pub fn markdown_catalogue() -> String {
    let mut out = String::new();
    for group in [
        Group::Task,
        Group::Communication,
        Group::Workforce,
        Group::Stakeholder,
        Group::Planning,
        Group::Desire,
        Group::Bdi,
        Group::Workflow,
        Group::Mission,
    ] {
        let tools: Vec<&Tool> = all().iter().filter(|t| t.group == group).collect();
        if tools.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n### `group:{}`\n\n| tool | roles | changes | arguments | what it does |\n| --- | --- | --- | --- | --- |\n",
            group.as_str()
        ));
        for t in tools {
            let roles: Vec<&str> = t.roles.iter().map(|r| r.as_str()).collect();
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} |\n",
                t.name,
                roles.join(", "),
                if t.read_only { "no" } else { "yes" },
                arguments(t),
                t.description.replace('|', "\\|").replace('\n', " "),
            ));
        }
    }
    out.push('\n');
    out
}

fn arguments(t: &Tool) -> String {
    let required: Vec<&str> = t.parameters["required"]
        .as_array()
        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let names: Vec<String> = t.parameters["properties"]
        .as_object()
        .map(|p| {
            p.keys()
                .map(|k| {
                    if required.contains(&k.as_str()) {
                        format!("**{k}**")
                    } else {
                        k.clone()
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    if names.is_empty() {
        "—".to_owned()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/agents.md` holds exactly the table [`markdown_catalogue`]
    /// renders; `UPDATE_DOCS=1` rewrites it.
    #[test]
    fn tools_docs_are_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/agents.md");
        let doc = std::fs::read_to_string(path).expect("docs/agents.md is readable");
        let begin = doc
            .find(BEGIN)
            .expect("docs/agents.md has the BEGIN marker")
            + BEGIN.len();
        let end = begin
            + doc[begin..]
                .find(END)
                .expect("docs/agents.md has the END marker");
        let want = markdown_catalogue();
        if doc[begin..end] == want {
            return;
        }
        if std::env::var("UPDATE_DOCS").as_deref() == Ok("1") {
            std::fs::write(path, format!("{}{want}{}", &doc[..begin], &doc[end..]))
                .expect("docs/agents.md is writable");
            return;
        }
        panic!(
            "docs/agents.md's tool tables differ from the catalogue; regenerate them with \
             `UPDATE_DOCS=1 cargo test -p coordinator-service tools_docs`"
        );
    }

    /// Every tool has a unique name, a description and an object schema
    /// whose required arguments it declares.
    #[test]
    fn every_tool_is_well_formed() {
        let mut names = std::collections::BTreeSet::new();
        for t in all() {
            assert!(names.insert(t.name), "{} is defined twice", t.name);
            assert!(!t.description.trim().is_empty(), "{}", t.name);
            assert_eq!(t.parameters["type"], "object", "{}", t.name);
            for r in t.parameters["required"].as_array().into_iter().flatten() {
                let r = r.as_str().unwrap_or_default();
                assert!(
                    t.parameters["properties"].get(r).is_some(),
                    "{}: {r}",
                    t.name
                );
            }
        }
    }
}
