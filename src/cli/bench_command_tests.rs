use clap::{CommandFactory, Parser};

use super::{Cli, Command};
use crate::bench::BenchCommand;

#[test]
fn help_lists_the_suite_flags() {
    let mut cli = Cli::command();
    let bench = cli.find_subcommand_mut("bench").expect("bench");
    let help = bench.render_long_help().to_string();
    assert!(help.contains("--json-out"), "{help}");
    assert!(help.contains("report"), "{help}");
    let report = bench
        .find_subcommand_mut("report")
        .expect("bench report")
        .render_long_help()
        .to_string();
    for flag in [
        "--from-bench",
        "--from-planning",
        "--from-machine",
        "--command",
        "--quick",
        "--note",
    ] {
        assert!(report.contains(flag), "{flag} missing from {report}");
    }
}

#[test]
fn report_is_a_subcommand_and_the_bench_runs_without_it() {
    let cli = Cli::try_parse_from([
        "coordinator",
        "bench",
        "report",
        "--command",
        "scripts/perf-suite.sh --quick",
        "--from-bench",
        "bench.json",
        "--quick",
    ])
    .expect("parses");
    let Command::Bench(args) = cli.command else {
        panic!("not bench")
    };
    let Some(BenchCommand::Report(r)) = args.command else {
        panic!("not report")
    };
    assert!(r.quick);
    assert_eq!(r.command, "scripts/perf-suite.sh --quick");
    assert_eq!(r.bench.as_deref(), Some(std::path::Path::new("bench.json")));

    let cli = Cli::try_parse_from([
        "coordinator",
        "bench",
        "--replicas",
        "1,2,3",
        "--json-out",
        "x.json",
    ])
    .expect("parses");
    let Command::Bench(args) = cli.command else {
        panic!("not bench")
    };
    assert!(args.command.is_none());
    assert_eq!(args.replicas, [1, 2, 3]);
    assert_eq!(
        args.json_out.as_deref(),
        Some(std::path::Path::new("x.json"))
    );
}
