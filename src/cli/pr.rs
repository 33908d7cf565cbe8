//! `perf-tests pr …`: the pull-request bot's commands (`crate::compare::pr`), which its workflow calls.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Subcommand, ValueEnum};

use crate::compare::pr::{Context, Request, State, ALLOWED};

#[derive(Debug, Subcommand)]
pub enum PrCommand {
    /// Read a pull-request comment: is it a request (`/perf`, alone or with settings), and with
    /// which settings? Prints `state=run|ignore|refuse`, `args=` (flags of `ab`), `settings=`
    /// and `reason=` lines, as a GitHub Actions step's output
    Request {
        /// The comment's text
        #[arg(long)]
        comment: String,
        /// The settings a request may give, comma-separated
        #[arg(long, value_delimiter = ',', default_values_t = ALLOWED.map(String::from))]
        allowed: Vec<String>,
    },
    /// Write the bot's comment for a request's state; a finished one's verdicts are judged
    /// again from the measured phases. Exit 1 when side B is worse than side A
    Comment {
        #[arg(long, value_enum)]
        state: StateArg,
        /// Why a request failed or was refused
        #[arg(long, default_value = "")]
        reason: String,
        /// The results directory of a finished `ab`
        #[arg(long)]
        results: Option<PathBuf>,
        /// The base's and the head's commits
        #[arg(long, default_value = "")]
        base: String,
        #[arg(long, default_value = "")]
        head: String,
        /// The request's settings as given
        #[arg(long, default_value = "")]
        settings: String,
        /// The workflow run's address
        #[arg(long, default_value = "")]
        run_url: String,
        /// Where the results and report.html can be downloaded
        #[arg(long, default_value = "")]
        results_url: String,
    },
    /// Post a comment on a pull request, or update the bot's comment there (the one leading
    /// with its marker), with the `gh` CLI
    Post {
        /// The pull request's number
        #[arg(long)]
        pr: u64,
        /// The file holding the comment
        #[arg(long)]
        body: PathBuf,
        /// The repository (owner/name)
        #[arg(long, env = "GITHUB_REPOSITORY")]
        repo: String,
        /// The gh CLI
        #[arg(long, env = "GH", default_value = "gh")]
        gh: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StateArg {
    Measuring,
    Finished,
    Failed,
    Refused,
}

pub(crate) fn execute(cmd: PrCommand) -> Result<i32> {
    match cmd {
        PrCommand::Request { comment, allowed } => {
            print!("{}", Request::of(&comment, &allowed).github_output());
            Ok(super::EXIT_OK)
        }
        PrCommand::Comment {
            state,
            reason,
            results,
            base,
            head,
            settings,
            run_url,
            results_url,
        } => {
            let state = match state {
                StateArg::Measuring => State::Measuring,
                StateArg::Finished => State::Finished,
                StateArg::Failed => State::Failed(reason),
                StateArg::Refused => State::Refused(reason),
            };
            let ctx = Context {
                base,
                head,
                settings,
                run_url,
                results_url,
            };
            let (body, worse) = crate::compare::pr::comment(&state, &ctx, results.as_deref())?;
            print!("{body}");
            Ok(if worse {
                super::EXIT_FAILURE
            } else {
                super::EXIT_OK
            })
        }
        PrCommand::Post { pr, body, repo, gh } => {
            let text = std::fs::read_to_string(&body)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", body.display()))?;
            crate::compare::pr::post(&gh, &repo, pr, &text)?;
            Ok(super::EXIT_OK)
        }
    }
}
