//! The agent tool-call section of the page: `cargo bench --bench
//! agent_tools` prints p50/p95 of one tool call over REST and over MCP, and
//! of `GET /healthz` (the baseline), on its last `key=value` line.

use std::fmt::Write as _;

use super::{last_key_values, num, x};

/// The key that marks the benchmark's figures line.
pub const AGENT_TOOLS_MARKER: &str = "healthz_p50_ms";

/// One surface's round trip, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundTrip {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
}

/// The agent tool-call benchmark's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentTools {
    /// `GET /healthz`, the baseline.
    pub healthz: RoundTrip,
    /// `POST /v1/tools/{name}` with the attempt token.
    pub rest: RoundTrip,
    /// `tools/call` on `POST /mcp`.
    pub mcp: RoundTrip,
    /// The `key=value` line, verbatim.
    pub line: String,
}

impl AgentTools {
    /// Parses the output of `cargo bench --bench agent_tools`.
    pub fn parse(output: &str) -> Option<AgentTools> {
        let line = output
            .lines()
            .rev()
            .find(|l| l.contains(AGENT_TOOLS_MARKER))?;
        let kv = last_key_values(line, AGENT_TOOLS_MARKER)?;
        let get = |k: &str| {
            kv.iter()
                .find(|(key, _)| key == k)
                .and_then(|(_, v)| v.parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v > 0.0)
        };
        let trip = |s: &str| {
            Some(RoundTrip {
                p50: get(&format!("{s}_p50_ms"))?,
                p95: get(&format!("{s}_p95_ms"))?,
            })
        };
        Some(AgentTools {
            healthz: trip("healthz")?,
            rest: trip("rest")?,
            mcp: trip("mcp")?,
            line: line.trim().to_owned(),
        })
    }
}

/// Writes the section.
pub fn render(w: &mut String, a: &AgentTools) {
    let _ = writeln!(w, "## Agent tool calls\n");
    let _ = writeln!(
        w,
        "`cargo bench --bench agent_tools` (release build): one agent holding the attempt \
         token of a real dispatch calls `blackboard_read` over REST (`POST /v1/tools/{{name}}`) \
         and over MCP (`tools/call` on `POST /mcp`), one call at a time on loopback. \
         Baseline: the plain `GET /healthz` round trip, measured in the same run.\n"
    );
    let _ = writeln!(
        w,
        "| surface | p50 ms | p95 ms | p50 × baseline | p95 × baseline |\n| --- | ---: | ---: | ---: | ---: |"
    );
    for (label, t) in [
        ("`GET /healthz` (baseline)", a.healthz),
        ("REST `POST /v1/tools/{name}`", a.rest),
        ("MCP `tools/call`", a.mcp),
    ] {
        let _ = writeln!(
            w,
            "| {label} | {} | {} | {} | {} |",
            num(t.p50, 3),
            num(t.p95, 3),
            x(t.p50 / a.healthz.p50),
            x(t.p95 / a.healthz.p95)
        );
    }
    let _ = writeln!(w, "\n```\n{}\n```\n", a.line);
    let _ = writeln!(
        w,
        "What it means: an agent's tool call costs {} a bare HTTP round trip at the median \
         over REST and {} over MCP (authentication by attempt token, the tool gate, one \
         read and the JSON answer); MCP adds {} to REST for its JSON-RPC envelope.\n",
        x(a.rest.p50 / a.healthz.p50),
        x(a.mcp.p50 / a.healthz.p50),
        x(a.mcp.p50 / a.rest.p50)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "2000 sequential round trips each, one client, loopback\n\
        healthz_p50_ms=0.132 healthz_p95_ms=0.210 healthz_p50_ratio=1.00 rest_p50_ms=1.130 \
        rest_p95_ms=1.800 rest_p50_ratio=8.58 mcp_p50_ms=1.269 mcp_p95_ms=2.000 mcp_p50_ratio=9.63\n";

    #[test]
    fn the_figures_line_is_parsed_and_rendered_as_ratios() {
        let a = AgentTools::parse(OUTPUT).expect("parsed");
        assert_eq!(
            a.rest,
            RoundTrip {
                p50: 1.13,
                p95: 1.8
            }
        );
        let mut page = String::new();
        render(&mut page, &a);
        assert!(
            page.contains("| REST `POST /v1/tools/{name}` | 1.130 | 1.800 | 8.56× |"),
            "{page}"
        );
        assert!(page.contains("MCP adds 1.12×"), "{page}");
    }

    #[test]
    fn output_without_the_figures_is_refused() {
        assert_eq!(AgentTools::parse("nothing here"), None);
        assert_eq!(AgentTools::parse("healthz_p50_ms=0.1 rest_p50_ms=1"), None);
        assert_eq!(
            AgentTools::parse(
                "healthz_p50_ms=0 healthz_p95_ms=0 rest_p50_ms=1 rest_p95_ms=1 mcp_p50_ms=1 mcp_p95_ms=1"
            ),
            None
        );
    }
}
