//! Command-line entry point.

use clap::Parser;

use crate::workload::cli::WorkloadCommand;

#[derive(Debug, Parser)]
#[command(name = "perf-tests", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Run one workload step against a Kafka endpoint.
    #[command(subcommand)]
    Workload(WorkloadCommand),
}

/// Parses the command line, runs the command and returns the process exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the async runtime: {e}");
            return 1;
        }
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Workload(cmd) => crate::workload::cli::execute(cmd).await,
        }
    });
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    }
}
