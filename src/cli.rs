//! Command-line entry point.

use clap::{Parser, Subcommand};

use crate::compose::cli::{clean, execute, ComposeCommand};

/// Measures what a Kafka path costs.
#[derive(Debug, Parser)]
#[command(name = "perf-tests", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Work with Compose files through the Docker Engine API.
    #[command(subcommand)]
    Compose(ComposeCommand),
    /// Remove every container and network left by earlier runs.
    Clean,
}

/// Parses the command line, runs it and returns the process exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return 1;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Compose(cmd) => execute(cmd).await,
            Command::Clean => clean().await,
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    }
}
