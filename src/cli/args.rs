//! The main command line: commands, their options and every setting as a flag and an
//! environment variable.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::compare::{Format, Slice};
use crate::matrix::{self, Axis};
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
    /// Raise each scenario's producer rate (THROUGHPUT) step by step until the path no longer
    /// sustains it, and report the highest rate each sustained
    Sweep(SweepArgs),
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

/// Options of `sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Lowest rate in records/s [default: a tenth of --to]
    #[arg(long, value_name = "RECORDS_PER_S", value_parser = rate)]
    pub from: Option<u64>,
    /// Highest rate in records/s: every sweep has an upper bound
    #[arg(long, value_name = "RECORDS_PER_S", value_parser = rate)]
    pub to: u64,
    /// Rates measured from --from to --to, evenly spaced (1 to 100)
    #[arg(long, default_value_t = 10)]
    pub steps: u64,
    /// Print the plan and the rates, start nothing
    #[arg(long)]
    pub dry_run: bool,
}

fn rate(s: &str) -> anyhow::Result<u64> {
    settings::parse_count("rate", s, false)
}

/// Options of `compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Base results: a run directory, a directory of run directories (pooled), `latest` or
    /// `previous` (by name within RESULTS_DIR)
    pub base: String,
    /// New results, named the same ways as BASE
    pub new: String,
    /// Only the base results measured at this value of a setting a matrix varied, matched
    /// without it, e.g. KROXYLICIOUS_IMAGE=perf-tests/kroxylicious:0.12.0 (with --new-where,
    /// compares two values of one run, measured interleaved)
    #[arg(long, value_name = "VAR=VALUE")]
    pub base_where: Option<Slice>,
    /// Only the new results measured at this value of a setting a matrix varied
    #[arg(long, value_name = "VAR=VALUE")]
    pub new_where: Option<Slice>,
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

/// Refuses a list given to a setting that holds for the whole run, naming the setting.
fn single(var: &str, s: &str) -> anyhow::Result<()> {
    if s.contains(',') {
        anyhow::bail!("{var}={s:?}: {}", matrix::cannot_vary(var));
    }
    Ok(())
}

fn warm_up_post_broker_start(s: &str) -> anyhow::Result<u64> {
    single("WARM_UP_NUM_RECORDS_POST_BROKER_START", s)?;
    settings::parse_count("WARM_UP_NUM_RECORDS_POST_BROKER_START", s, true)
}

fn partitions(s: &str) -> anyhow::Result<u32> {
    settings::parse_clients("PARTITIONS", s)
}

fn topics(s: &str) -> anyhow::Result<u32> {
    settings::parse_clients("TOPICS", s)
}

fn producers(s: &str) -> anyhow::Result<u32> {
    settings::parse_clients("PRODUCERS", s)
}

fn consumers(s: &str) -> anyhow::Result<u32> {
    settings::parse_clients("CONSUMERS", s)
}

fn duration(s: &str) -> anyhow::Result<u64> {
    single("DURATION", s)?;
    let d = settings::parse_duration("DURATION", s)?;
    if d == 0 {
        anyhow::bail!("DURATION={s:?}: a run needs some time (expected at least 1s)");
    }
    Ok(d)
}

fn duration_warm_up(s: &str) -> anyhow::Result<u64> {
    single("DURATION_WARM_UP", s)?;
    settings::parse_duration("DURATION_WARM_UP", s)
}

fn catch_up_seconds(s: &str) -> anyhow::Result<u64> {
    single("CATCH_UP_SECONDS", s)?;
    settings::parse_count("CATCH_UP_SECONDS", s, false)
}

fn p99_limit(s: &str) -> anyhow::Result<u64> {
    single("P99_LIMIT_MS", s)?;
    settings::parse_count("P99_LIMIT_MS", s, false)
}

fn repeat(s: &str) -> anyhow::Result<u32> {
    single("REPEAT", s)?;
    settings::parse_repeat(s)
}

fn mode(s: &str) -> anyhow::Result<settings::Mode> {
    single("MODE", s)?;
    settings::parse_mode(s)
}

fn driver(s: &str) -> anyhow::Result<settings::Driver> {
    single("DRIVER", s)?;
    settings::parse_driver(s)
}

fn kafka_tool_image(s: &str) -> anyhow::Result<String> {
    single("KAFKA_TOOL_IMAGE", s)?;
    Ok(s.to_string())
}

fn image(s: &str) -> anyhow::Result<String> {
    Ok(s.trim().to_string())
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
    /// [default: 10000000] [a list measures each]
    #[arg(long, env = "NUM_RECORDS", value_parser = num_records, value_delimiter = ',',
          global = true)]
    pub num_records: Option<Vec<u64>>,

    /// Record size in bytes [default: 1024] [a list measures each]
    #[arg(long, env = "RECORD_SIZE", value_parser = record_size, value_delimiter = ',',
          global = true)]
    pub record_size: Option<Vec<u64>>,

    /// Warm-up records sent after the broker is started, before the first scenario
    #[arg(long, env = "WARM_UP_NUM_RECORDS_POST_BROKER_START",
          default_value_t = settings::DEFAULT_WARM_UP_POST_BROKER_START,
          value_parser = warm_up_post_broker_start, global = true)]
    pub warm_up_num_records_post_broker_start: u64,

    /// Warm-up records sent through each scenario's endpoint before it is measured
    /// [default: 1000] [a list measures each]
    #[arg(long, env = "WARM_UP_NUM_RECORDS_PRE_TEST", value_parser = warm_up_pre_test,
          value_delimiter = ',', global = true)]
    pub warm_up_num_records_pre_test: Option<Vec<u64>>,

    /// Seconds the pre-test warm-up goes on for at least, in rounds of its records (0: one round)
    /// [default: 0] [a list measures each]
    #[arg(long, env = "WARM_UP_SECONDS_PRE_TEST", value_parser = settings::parse_warm_up_seconds,
          value_delimiter = ',', global = true)]
    pub warm_up_seconds_pre_test: Option<Vec<u64>>,

    /// CPUs every service container may run on, e.g. 0 or 0-1 (empty: not pinned)
    #[arg(long, env = "SERVICES_CPUSET", default_value = "", value_parser = services_cpuset,
          global = true)]
    pub services_cpuset: String,

    /// CPUs the load generator's containers may run on, e.g. 1 (empty: not pinned)
    #[arg(long, env = "WORKLOAD_CPUSET", default_value = "", value_parser = workload_cpuset,
          global = true)]
    pub workload_cpuset: String,

    /// Producer properties: space-separated key=value entries [default: acks=all]
    /// [the flag repeated measures each; the variable is one value, commas included]
    #[arg(long, env = "PRODUCER_PROPERTIES", value_parser = properties, global = true)]
    pub producer_properties: Option<Vec<Properties>>,

    /// Producer throughput limit in records/s; -1 is unlimited [default: -1]
    /// [a list measures each]
    #[arg(long, env = "THROUGHPUT", value_parser = settings::parse_throughput,
          value_delimiter = ',', allow_hyphen_values = true, global = true)]
    pub throughput: Option<Vec<i64>>,

    /// A rate counts as sustained (sweeps, THROUGHPUT lists) only while the producer's p99 (from
    /// the intended send times) stays within this many ms [default: no limit]
    #[arg(long, env = "P99_LIMIT_MS", value_parser = p99_limit, global = true)]
    pub p99_limit_ms: Option<u64>,

    /// With MODE=end-to-end: produce and consume for this long (90s, 10m, 2h, 3d) instead of
    /// NUM_RECORDS records, recording every second [default: by NUM_RECORDS]
    #[arg(long, env = "DURATION", value_parser = duration, global = true)]
    pub duration: Option<u64>,

    /// The first part of a DURATION run, in its series but left out of its figures [default: 0]
    #[arg(long, env = "DURATION_WARM_UP", value_parser = duration_warm_up, global = true)]
    pub duration_warm_up: Option<u64>,

    /// With MODE=backlog: seconds the group may take to catch up; it stops then, and the lag
    /// it left is reported [default: 300]
    #[arg(long, env = "CATCH_UP_SECONDS", value_parser = catch_up_seconds, global = true)]
    pub catch_up_seconds: Option<u64>,

    /// Partitions of each measured topic [default: 1] [a list measures each]
    #[arg(long, env = "PARTITIONS", value_parser = partitions, value_delimiter = ',',
          global = true)]
    pub partitions: Option<Vec<u32>>,

    /// Topics the records are spread over in turn, one consumer group reading them all
    /// [default: 1] [a list measures each]
    #[arg(long, env = "TOPICS", value_parser = topics, value_delimiter = ',', global = true)]
    pub topics: Option<Vec<u32>>,

    /// Producers sharing the records and the rate, their figures merged [default: 1]
    /// [a list measures each]
    #[arg(long, env = "PRODUCERS", value_parser = producers, value_delimiter = ',',
          global = true)]
    pub producers: Option<Vec<u32>>,

    /// Consumers of the one consumer group, at most PARTITIONS x TOPICS [default: 1]
    /// [a list measures each]
    #[arg(long, env = "CONSUMERS", value_parser = consumers, value_delimiter = ',',
          global = true)]
    pub consumers: Option<Vec<u32>>,

    /// Times each scenario is measured; rounds interleave the scenarios, tables show medians
    #[arg(long, env = "REPEAT", default_value_t = settings::DEFAULT_REPEAT,
          value_parser = repeat, global = true)]
    pub repeat: u32,

    /// Commit id recorded with the results and naming their directory
    /// [default: `git rev-parse --short HEAD` in SCENARIOS, else unknown]
    #[arg(long, env = "COMMIT_ID", global = true)]
    pub commit_id: Option<String>,

    /// Apache Kafka (native) broker image [default: perf-tests/kafka:4.4.0]
    /// [a list measures each]
    #[arg(long, env = "KAFKA_IMAGE", value_parser = image, value_delimiter = ',', global = true)]
    pub kafka_image: Option<Vec<String>>,

    /// Kroxylicious proxy image [default: perf-tests/kroxylicious:0.12.0] [a list measures each]
    #[arg(long, env = "KROXYLICIOUS_IMAGE", value_parser = image, value_delimiter = ',',
          global = true)]
    pub kroxylicious_image: Option<Vec<String>>,

    /// Kafka tooling image
    #[arg(long, env = "KAFKA_TOOL_IMAGE", default_value = settings::DEFAULT_KAFKA_TOOL_IMAGE,
          value_parser = kafka_tool_image, global = true)]
    pub kafka_tool_image: String,

    /// HashiCorp Vault image [default: hashicorp/vault:1.15] [a list measures each]
    #[arg(long, env = "VAULT_IMAGE", value_parser = image, value_delimiter = ',', global = true)]
    pub vault_image: Option<Vec<String>>,

    /// Workload driver: native (built-in librdkafka client) or kafka-tools (Apache Kafka's
    /// perf-test scripts from KAFKA_TOOL_IMAGE)
    #[arg(long, env = "DRIVER", default_value = settings::DEFAULT_DRIVER.as_str(),
          value_parser = driver, global = true)]
    pub driver: settings::Driver,

    /// How producer and consumer run: produce-then-consume (the reference's way), end-to-end
    /// (at once; the consumer measures each record's latency from send to receipt) or backlog (a
    /// stopped group catches up with NUM_RECORDS while a producer keeps sending at THROUGHPUT);
    /// the last two with the native driver only
    #[arg(long, env = "MODE", default_value = settings::DEFAULT_MODE.as_str(),
          value_parser = mode, global = true)]
    pub mode: settings::Mode,

    /// Suite directory: suite.yaml and the numbered scenario directories
    #[arg(long, env = "SCENARIOS", default_value = settings::DEFAULT_SCENARIOS, global = true)]
    pub scenarios: PathBuf,

    /// Directory each run's results directory is created in
    #[arg(long, env = "RESULTS_DIR", default_value = settings::DEFAULT_RESULTS_DIR, global = true)]
    pub results_dir: PathBuf,
}

impl SettingsArgs {
    /// The plain settings: a setting given as a list holds its first value, and the lists of
    /// every varying setting given (one value pins a setting the suite's matrix varies) are
    /// its `matrix`; a missing commit id is detected from the suite directory. Errors name
    /// the setting and the value.
    pub fn into_settings(self) -> anyhow::Result<Settings> {
        match (self.duration, &self.num_records, self.duration_warm_up) {
            (Some(_), Some(_), _) => anyhow::bail!(
                "DURATION and NUM_RECORDS are both set: a run is bounded by time or by a count \
                 of records, not both"
            ),
            (None, _, Some(w)) if w > 0 => anyhow::bail!(
                "DURATION_WARM_UP={w} without DURATION: only a run bounded by time has a warm-up \
                 within it (WARM_UP_SECONDS_PRE_TEST warms up before any run)"
            ),
            (Some(d), _, Some(w)) if w >= d => anyhow::bail!(
                "DURATION_WARM_UP={w} is not shorter than DURATION={d}: nothing would be left \
                 to measure"
            ),
            _ => {}
        }
        let commit_id = self
            .commit_id
            .filter(|c| !c.trim().is_empty())
            .unwrap_or_else(|| settings::detect_commit_id(&self.scenarios));
        let lists: [(&str, Option<Vec<String>>); 13] = [
            ("KAFKA_IMAGE", self.kafka_image),
            ("KROXYLICIOUS_IMAGE", self.kroxylicious_image),
            ("VAULT_IMAGE", self.vault_image),
            ("NUM_RECORDS", texts(self.num_records)),
            ("RECORD_SIZE", texts(self.record_size)),
            ("THROUGHPUT", texts(self.throughput)),
            (
                "PRODUCER_PROPERTIES",
                self.producer_properties.map(|v| {
                    v.iter()
                        .map(|p| settings::format_properties(&p.0))
                        .collect()
                }),
            ),
            (
                "WARM_UP_NUM_RECORDS_PRE_TEST",
                texts(self.warm_up_num_records_pre_test),
            ),
            ("PARTITIONS", texts(self.partitions)),
            ("TOPICS", texts(self.topics)),
            ("PRODUCERS", texts(self.producers)),
            ("CONSUMERS", texts(self.consumers)),
            (
                "WARM_UP_SECONDS_PRE_TEST",
                texts(self.warm_up_seconds_pre_test),
            ),
        ];
        let mut settings = Settings {
            test: self.test,
            warm_up_post_broker_start: self.warm_up_num_records_post_broker_start,
            services_cpuset: self.services_cpuset,
            workload_cpuset: self.workload_cpuset,
            repeat: self.repeat,
            p99_limit_ms: self.p99_limit_ms,
            catch_up_seconds: self
                .catch_up_seconds
                .unwrap_or(settings::DEFAULT_CATCH_UP_SECONDS),
            duration: self.duration,
            duration_warm_up: self.duration_warm_up.unwrap_or(0),
            commit_id,
            kafka_tool_image: self.kafka_tool_image,
            driver: self.driver,
            mode: self.mode,
            scenarios: self.scenarios,
            results_dir: self.results_dir,
            ..Settings::without_commit()
        };
        for (var, values) in lists {
            let Some(values) = values else { continue };
            let axis: Axis = matrix::axis(var, &values)?;
            matrix::set(&mut settings, var, &axis.values[0])?;
            settings.matrix.push(axis);
        }
        Ok(settings)
    }
}

/// Values as the text a setting is written in.
fn texts<T: ToString>(values: Option<Vec<T>>) -> Option<Vec<String>> {
    values.map(|v| v.iter().map(T::to_string).collect())
}
