//! Command-line entry point: `perf-tests [run|list] [settings]`.
//!
//! Every setting is a flag and an environment variable (flag over environment over default);
//! with no command, `perf-tests` runs, so `TEST=03.* NUM_RECORDS=1e6 perf-tests` works as the
//! reference script did.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

use crate::model::ScenarioResult;
use crate::scenario::{self, Scenario, Suite};
use crate::settings::{self, Settings};
use crate::{plan, report, results, runner};

/// Exit code of a successful command.
pub const EXIT_OK: i32 = 0;
/// Exit code of a run that failed or whose record counters disagree.
pub const EXIT_FAILURE: i32 = 1;
/// Exit code of a usage or configuration error (bad flag, variable, scenario file).
pub const EXIT_USAGE: i32 = 2;

/// Measures what a Kafka path costs: runs numbered scenarios and prints producer and consumer
/// result tables.
#[derive(Debug, Parser)]
#[command(
    name = "perf-tests",
    version,
    max_term_width = 100,
    after_help = "`perf-tests workload --help`: the workload steps the runner runs in containers."
)]
pub struct Cli {
    /// Settings, accepted before or after the command.
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// What to do; `run` when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The commands. Each is one variant, so adding a command is adding a variant and its arm.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the scenarios TEST selects (the default command)
    Run(RunArgs),
    /// List the suite's scenarios and whether TEST selects them (marked *)
    List,
    /// Build or list the images the suite needs (no registry: images are made here)
    #[command(subcommand)]
    Images(crate::images::cli::ImagesCommand),
    /// Remove every container and network perf-tests runs left on the engine, and nothing else
    Clean {
        /// Also remove the workload images of other builds of perf-tests (each build packages
        /// itself into its own image)
        #[arg(long)]
        images: bool,
    },
    /// Realise Compose files through the Docker Engine API (config, up, down)
    #[command(subcommand)]
    Compose(crate::compose::cli::ComposeCommand),
    /// Compare two runs: medians, change and significance per scenario and metric; exit 1 on a
    /// significant regression beyond the threshold
    Compare(CompareArgs),
}

/// Options of `run`.
#[derive(Debug, Default, Args)]
pub struct RunArgs {
    /// Print the plan (scenarios, settings, compose files, endpoints, steps) and start nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// Options of `compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Base results: a run directory, a directory of run directories (pooled), `latest` or
    /// `previous` (by name within RESULTS_DIR)
    pub base: String,
    /// New results, named the same ways as BASE
    pub new: String,
    /// Smallest change in percent that counts as a regression (when also significant)
    #[arg(long, default_value_t = crate::compare::DEFAULT_THRESHOLD_PCT, allow_negative_numbers = true)]
    pub threshold: f64,
    /// Output format; auto is Markdown when stdout is not a terminal
    #[arg(long, value_enum, default_value_t = crate::compare::Format::Auto)]
    pub format: crate::compare::Format,
}

/// Producer properties as one `PRODUCER_PROPERTIES` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Properties(pub Vec<(String, String)>);

fn properties(s: &str) -> anyhow::Result<Properties> {
    settings::parse_properties(s).map(Properties)
}

fn num_records(s: &str) -> anyhow::Result<u64> {
    settings::parse_count("NUM_RECORDS", s, false)
}

fn record_size(s: &str) -> anyhow::Result<u64> {
    settings::parse_count("RECORD_SIZE", s, false)
}

fn warm_up_post_broker_start(s: &str) -> anyhow::Result<u64> {
    settings::parse_count("WARM_UP_NUM_RECORDS_POST_BROKER_START", s, true)
}

fn warm_up_pre_test(s: &str) -> anyhow::Result<u64> {
    settings::parse_count("WARM_UP_NUM_RECORDS_PRE_TEST", s, true)
}

/// The settings as flags and environment variables; accepted before or after the command.
#[derive(Debug, Clone, Args)]
pub struct SettingsArgs {
    /// Scenarios to run: a regular expression that must match the whole directory name
    #[arg(long, env = "TEST", default_value = settings::DEFAULT_TEST, global = true)]
    pub test: String,

    /// Records produced and consumed per scenario (10000000, 1_000_000 and 1e6 forms)
    #[arg(long, env = "NUM_RECORDS", default_value_t = settings::DEFAULT_NUM_RECORDS,
          value_parser = num_records, global = true)]
    pub num_records: u64,

    /// Record size in bytes
    #[arg(long, env = "RECORD_SIZE", default_value_t = settings::DEFAULT_RECORD_SIZE,
          value_parser = record_size, global = true)]
    pub record_size: u64,

    /// Warm-up records sent after the broker is started, before the first scenario
    #[arg(long, env = "WARM_UP_NUM_RECORDS_POST_BROKER_START",
          default_value_t = settings::DEFAULT_WARM_UP_POST_BROKER_START,
          value_parser = warm_up_post_broker_start, global = true)]
    pub warm_up_num_records_post_broker_start: u64,

    /// Warm-up records sent through each scenario's endpoint before it is measured
    #[arg(long, env = "WARM_UP_NUM_RECORDS_PRE_TEST",
          default_value_t = settings::DEFAULT_WARM_UP_PRE_TEST,
          value_parser = warm_up_pre_test, global = true)]
    pub warm_up_num_records_pre_test: u64,

    /// Producer properties: space-separated key=value entries
    #[arg(long, env = "PRODUCER_PROPERTIES", default_value = settings::DEFAULT_PRODUCER_PROPERTIES,
          value_parser = properties, global = true)]
    pub producer_properties: Properties,

    /// Producer throughput limit in records/s; -1 is unlimited
    #[arg(long, env = "THROUGHPUT", default_value_t = settings::DEFAULT_THROUGHPUT,
          value_parser = settings::parse_throughput, allow_hyphen_values = true, global = true)]
    pub throughput: i64,

    /// Times each scenario is measured; rounds interleave the scenarios, tables show medians
    #[arg(long, env = "REPEAT", default_value_t = settings::DEFAULT_REPEAT,
          value_parser = settings::parse_repeat, global = true)]
    pub repeat: u32,

    /// Commit id recorded with the results and naming their directory
    /// [default: `git rev-parse --short HEAD` in SCENARIOS, else unknown]
    #[arg(long, env = "COMMIT_ID", global = true)]
    pub commit_id: Option<String>,

    /// Apache Kafka (native) broker image
    #[arg(long, env = "KAFKA_IMAGE", default_value = settings::DEFAULT_KAFKA_IMAGE, global = true)]
    pub kafka_image: String,

    /// Kroxylicious proxy image
    #[arg(long, env = "KROXYLICIOUS_IMAGE", default_value = settings::DEFAULT_KROXYLICIOUS_IMAGE,
          global = true)]
    pub kroxylicious_image: String,

    /// Kafka tooling image
    #[arg(long, env = "KAFKA_TOOL_IMAGE", default_value = settings::DEFAULT_KAFKA_TOOL_IMAGE,
          global = true)]
    pub kafka_tool_image: String,

    /// HashiCorp Vault image
    #[arg(long, env = "VAULT_IMAGE", default_value = settings::DEFAULT_VAULT_IMAGE, global = true)]
    pub vault_image: String,

    /// Workload driver: native (built-in librdkafka client) or kafka-tools (Apache Kafka's
    /// perf-test scripts from KAFKA_TOOL_IMAGE)
    #[arg(long, env = "DRIVER", default_value = settings::DEFAULT_DRIVER.as_str(),
          value_parser = settings::parse_driver, global = true)]
    pub driver: settings::Driver,

    /// Suite directory: suite.yaml and the numbered scenario directories
    #[arg(long, env = "SCENARIOS", default_value = settings::DEFAULT_SCENARIOS, global = true)]
    pub scenarios: PathBuf,

    /// Directory each run's results directory is created in
    #[arg(long, env = "RESULTS_DIR", default_value = settings::DEFAULT_RESULTS_DIR, global = true)]
    pub results_dir: PathBuf,
}

impl SettingsArgs {
    /// The plain settings; a missing commit id is detected from the suite directory.
    pub fn into_settings(self) -> Settings {
        let commit_id = self
            .commit_id
            .filter(|c| !c.trim().is_empty())
            .unwrap_or_else(|| settings::detect_commit_id(&self.scenarios));
        Settings {
            test: self.test,
            num_records: self.num_records,
            record_size: self.record_size,
            warm_up_post_broker_start: self.warm_up_num_records_post_broker_start,
            warm_up_pre_test: self.warm_up_num_records_pre_test,
            producer_properties: self.producer_properties.0,
            throughput: self.throughput,
            repeat: self.repeat,
            commit_id,
            kafka_image: self.kafka_image,
            kroxylicious_image: self.kroxylicious_image,
            kafka_tool_image: self.kafka_tool_image,
            vault_image: self.vault_image,
            driver: self.driver,
            scenarios: self.scenarios,
            results_dir: self.results_dir,
        }
    }
}

/// Parses the process arguments, runs the command and returns the process exit code.
pub fn main() -> i32 {
    if std::env::args_os().nth(1).is_some_and(|a| a == "workload") {
        return match crate::workload::command::parse_from(std::env::args_os()) {
            Ok(cmd) => block_on(crate::workload::command::execute(cmd)),
            Err(e) => {
                let _ = e.print();
                e.exit_code()
            }
        };
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    let settings = cli.settings.into_settings();
    match cli.command.unwrap_or(Command::Run(RunArgs::default())) {
        Command::Run(args) => run(&settings, &args),
        Command::List => list(&settings),
        Command::Images(cmd) => block_on(crate::images::cli::execute(cmd, &settings)),
        Command::Clean { images } => block_on(crate::compose::cli::clean(images)),
        Command::Compose(cmd) => block_on(crate::compose::cli::execute(cmd)),
        Command::Compare(args) => compare(&settings, &args),
    }
}

/// `compare`: 0 no regression, 1 a significant regression beyond the threshold, 2 an error.
fn compare(settings: &Settings, args: &CompareArgs) -> i32 {
    use std::io::IsTerminal;
    let stdout = std::io::stdout();
    let terminal = stdout.is_terminal();
    match crate::compare::run(
        &args.base,
        &args.new,
        &settings.results_dir,
        args.threshold,
        args.format,
        &mut stdout.lock(),
        terminal,
    ) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            EXIT_USAGE
        }
    }
}

/// Runs an async command to completion and maps its error to a message and exit code.
fn block_on(fut: impl std::future::Future<Output = anyhow::Result<i32>>) -> i32 {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return EXIT_FAILURE;
        }
    };
    match runtime.block_on(fut) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            exit_code_of(&e)
        }
    }
}

/// 130 for an interrupted run (the shell convention for SIGINT), 1 otherwise.
fn exit_code_of(e: &anyhow::Error) -> i32 {
    if e.downcast_ref::<crate::engine::Interrupted>().is_some() {
        130
    } else {
        EXIT_FAILURE
    }
}

fn run(settings: &Settings, args: &RunArgs) -> i32 {
    let plan = match plan::plan(settings) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("error: {e:#}");
            return EXIT_USAGE;
        }
    };
    if args.dry_run {
        print!("{}", plan.render(settings));
        return match runner::describe_services(settings, &plan) {
            Ok(services) => {
                print!("{services}");
                EXIT_OK
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                EXIT_USAGE
            }
        };
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return EXIT_FAILURE;
        }
    };
    let started = chrono::Utc::now();
    let outcome = runtime.block_on(runner::run(settings, &plan));
    let ended = chrono::Utc::now();
    let output = match outcome {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e:#}");
            return exit_code_of(&e);
        }
    };
    let host = results::HostFacts::collect(output.engine_version);
    let info = results::RunInfo::new(
        &output.run_id,
        settings,
        &plan.suite.dir,
        host,
        started,
        ended,
    );
    let scenario_results = output.results;
    finish(
        &settings.results_dir,
        &info,
        &scenario_results,
        &mut std::io::stdout(),
    )
}

/// Prints the tables, writes the results directory and turns the outcome into an exit code:
/// disagreeing record counters fail the run after everything is saved.
fn finish(
    results_dir: &Path,
    info: &results::RunInfo,
    scenario_results: &[ScenarioResult],
    out: &mut dyn Write,
) -> i32 {
    let _ = write!(out, "{}", report::render_text(scenario_results));
    match results::write_run(results_dir, info, scenario_results) {
        Ok(dir) => {
            let _ = writeln!(out, "Results: {}", dir.display());
        }
        Err(e) => {
            eprintln!("error: cannot write results: {e:#}");
            return EXIT_FAILURE;
        }
    }
    let disagreeing: Vec<&str> = scenario_results
        .iter()
        .filter(|r| !r.measurement.integrity.is_ok())
        .map(|r| r.name.as_str())
        .collect();
    if !disagreeing.is_empty() {
        eprintln!(
            "error: record counters disagree in: {}",
            disagreeing.join(", ")
        );
        return EXIT_FAILURE;
    }
    EXIT_OK
}

/// One line per scenario: selection mark, name, description.
fn list(settings: &Settings) -> i32 {
    let listing = (|| -> anyhow::Result<String> {
        let suite = Suite::load(&settings.scenarios)?;
        let found = scenario::discover(&suite.dir)?;
        let re = scenario::test_regex(&settings.test)?;
        let width = found.iter().map(|s| s.name.len()).max().unwrap_or(0);
        let selected = found.iter().filter(|s| re.is_match(&s.name)).count();
        let mut out = format!(
            "Suite {}: {}\nTEST={} selects {} of {} scenarios (marked *)\n",
            suite.dir.display(),
            suite.description,
            settings.test,
            selected,
            found.len()
        );
        for dir in &found {
            let s = Scenario::load(&suite, dir)?;
            let mark = if re.is_match(&s.name) { '*' } else { ' ' };
            out.push_str(&format!(
                "{mark} {:width$}  {}\n",
                s.name,
                s.description,
                width = width
            ));
        }
        Ok(out)
    })();
    match listing {
        Ok(text) => {
            print!("{text}");
            EXIT_OK
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            EXIT_USAGE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn flags_after_the_command_and_before_it_both_apply() {
        let cli = Cli::try_parse_from(["perf-tests", "run", "--num-records", "1e3"]).unwrap();
        assert_eq!(cli.settings.num_records, 1000);
        let cli = Cli::try_parse_from(["perf-tests", "--num-records", "2e3", "list"]).unwrap();
        assert_eq!(cli.settings.num_records, 2000);
        assert!(matches!(cli.command, Some(Command::List)));
        let cli = Cli::try_parse_from(["perf-tests", "--throughput", "-1"]).unwrap();
        assert_eq!(cli.settings.throughput, -1);
        assert!(cli.command.is_none());
    }

    fn info() -> results::RunInfo {
        let settings = Settings {
            commit_id: "abc".into(),
            ..Settings::default()
        };
        let now = chrono::Utc::now();
        let host = results::HostFacts::collect(None);
        results::RunInfo::new("run", &settings, Path::new("suite"), host, now, now)
    }

    #[test]
    fn finish_prints_tables_and_saves_them() {
        let dir = tempfile::tempdir().unwrap();
        let records = crate::report::tests::sample();
        let mut out = Vec::new();
        assert_eq!(finish(dir.path(), &info(), &records, &mut out), EXIT_OK);
        let text = String::from_utf8(out).unwrap();
        let tables = report::render_text(&records);
        assert!(text.starts_with(&tables), "{text}");
        let saved = text.strip_prefix(&tables).unwrap();
        let saved = saved.strip_prefix("Results: ").unwrap().trim_end();
        assert_eq!(
            std::fs::read_to_string(Path::new(saved).join("tables.txt")).unwrap(),
            tables
        );
    }

    #[test]
    fn finish_fails_a_run_whose_counters_disagree_but_saves_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut records = crate::report::tests::sample();
        records[0].measurement.integrity.end_offsets += 1;
        let mut out = Vec::new();
        assert_eq!(
            finish(dir.path(), &info(), &records, &mut out),
            EXIT_FAILURE
        );
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("Integrity (record counters disagree)"),
            "{text}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
