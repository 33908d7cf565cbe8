//! The main command line: commands, their options and every setting as a flag and an
//! environment variable.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::compare::Format;
use crate::settings::{self, Settings};

/// Measures what a Kafka path costs: runs numbered scenarios and prints producer and consumer
/// result tables.
#[derive(Debug, Parser)]
#[command(
    name = "perf-tests",
    version,
    max_term_width = 100,
    after_help = "`perf-tests workload --help`: the workload steps a driver runs in containers."
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
    Images(super::images::ImagesCommand),
    /// Remove the containers and networks that perf-tests runs no longer alive left on the
    /// engine, and nothing else
    Clean {
        /// Also remove the workload images of other builds of perf-tests (each build packages
        /// itself into its own image)
        #[arg(long)]
        images: bool,
        /// Remove every container and network perf-tests made, also those of live runs and of
        /// other hosts' runs, naming each
        #[arg(long)]
        force: bool,
    },
    /// Realise Compose files through the Docker Engine API (config, up, down)
    #[command(subcommand)]
    Compose(super::compose::ComposeCommand),
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
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    pub format: FormatArg,
}

/// Output format of `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// Markdown when stdout is not a terminal, else plain.
    Auto,
    /// Markdown for a pull-request comment.
    Markdown,
    /// A plain table.
    Plain,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Auto => Format::Auto,
            FormatArg::Markdown => Format::Markdown,
            FormatArg::Plain => Format::Plain,
        }
    }
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

fn services_cpuset(s: &str) -> anyhow::Result<String> {
    settings::parse_cpuset("SERVICES_CPUSET", s)
}

fn workload_cpuset(s: &str) -> anyhow::Result<String> {
    settings::parse_cpuset("WORKLOAD_CPUSET", s)
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

    /// Seconds the pre-test warm-up goes on for at least, in rounds of its records (0: one round)
    #[arg(long, env = "WARM_UP_SECONDS_PRE_TEST",
          default_value_t = settings::DEFAULT_WARM_UP_SECONDS_PRE_TEST,
          value_parser = settings::parse_warm_up_seconds, global = true)]
    pub warm_up_seconds_pre_test: u64,

    /// CPUs every service container may run on, e.g. 0 or 0-1 (empty: not pinned)
    #[arg(long, env = "SERVICES_CPUSET", default_value = "", value_parser = services_cpuset,
          global = true)]
    pub services_cpuset: String,

    /// CPUs the load generator's containers may run on, e.g. 1 (empty: not pinned)
    #[arg(long, env = "WORKLOAD_CPUSET", default_value = "", value_parser = workload_cpuset,
          global = true)]
    pub workload_cpuset: String,

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
            warm_up_seconds_pre_test: self.warm_up_seconds_pre_test,
            services_cpuset: self.services_cpuset,
            workload_cpuset: self.workload_cpuset,
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
