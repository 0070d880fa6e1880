//! The `coordinator` binary: see `coordinator --help`.

#[tokio::main]
async fn main() -> std::process::ExitCode {
    coordinator::cli::main().await
}
