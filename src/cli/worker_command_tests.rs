use clap::Parser;

use super::{Cli, Command};

#[test]
fn the_llm_worker_takes_its_turn_bound_and_prompt_variants() {
    let cli = Cli::try_parse_from([
        "coordinator",
        "worker",
        "--llm-url",
        "http://127.0.0.1:8000/v1",
        "--max-turns",
        "4",
        "--prompt-variants",
        "variants.toml",
    ])
    .expect("parses");
    let Command::Worker(args) = cli.command else {
        panic!("not worker")
    };
    let llm = args.llm.expect("LLM settings");
    assert_eq!(llm.max_turns, 4);
    assert_eq!(
        llm.prompt_variants.as_deref(),
        Some(std::path::Path::new("variants.toml"))
    );
}
