//! The main command line: commands, their options and every setting as a flag and an
//! environment variable.

use clap::{Arg, ArgAction, Args, Parser, Subcommand};

use crate::compare::{Format, Slice};
use crate::settings::matrix::{self, Axis};
use crate::settings::{self, Lists, Setting, Settings, SETTINGS};

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
    /// Measure side B of every selected path against side A in the same phases: each scenario's
    /// services are side A, side B the same services started again beside them with B's
    /// overrides; each repetition a fresh pair, the verdict over pairs (CPU per MB/s, with and
    /// without the JVMs' compilers and collectors; intended p50 and p99). With no TEST, every
    /// scenario with services of its own. Exit 1 when side B is worse beyond PAIR_THRESHOLD on
    /// any of them
    Ab(AbArgs),
    /// Raise each scenario's producer rate (THROUGHPUT) step by step until the path no longer
    /// sustains it, and report the highest rate each sustained
    Sweep(SweepArgs),
    /// Size the selected paths: a repeated rate sweep whose sustained repetitions give each
    /// path's millicores per MB/s of produce + consume traffic with its 95% interval, the
    /// latency it adds at each rate against the reference scenario, its highest sustained rate
    /// and the cores a given traffic needs
    Sizing(SizingArgs),
    /// List the suite's scenarios and whether TEST selects them (marked *)
    List,
    /// Check that this host can run the scenarios TEST selects: the engine, the tools the
    /// images still to be made need, the reach of Maven's repository and the disk the broker's
    /// log takes at NUM_RECORDS; one line each, exit 1 on any problem (`run` checks the same
    /// before it builds anything)
    Doctor,
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
    /// A swarm of Docker engines on this machine for multi-host runs (local, down)
    #[command(subcommand)]
    Swarm(super::swarm::SwarmCommand),
    /// Realise Compose files through the Docker Engine API (config, up, down)
    #[command(subcommand)]
    Compose(super::compose::ComposeCommand),
    /// Compare two runs: medians, change and significance per scenario and metric; exit 1 on a
    /// significant regression beyond the threshold
    Compare(CompareArgs),
    /// The pull-request bot's steps: read a `/perf` request, write its answer
    #[command(subcommand)]
    Pr(super::pr::PrCommand),
    /// Print the manual page (roff), made from this command line's definition: `perf-tests man
    /// > perf-tests.1`
    Man,
    /// Print the completions of a shell, made from this command line's definition: `perf-tests
    /// completions bash > /etc/bash_completion.d/perf-tests`
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// Options of `run`.
#[derive(Debug, Default, Args)]
pub struct RunArgs {
    /// Print the plan (scenarios, settings, compose files, endpoints, steps) and start nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// Options of `ab`: what makes each side differ from the scenarios as written.
#[derive(Debug, Default, Args)]
pub struct AbArgs {
    /// A Compose variable of side A's services, usually a setting, e.g.
    /// KROXYLICIOUS_IMAGE=my/kroxylicious:main (repeat for more)
    #[arg(long = "a", value_name = "VAR=VALUE", value_parser = assignment)]
    pub a: Vec<(String, String)>,
    /// An environment variable set in each of side A's services, e.g.
    /// JAVA_OPTIONS=-XX:MaxInlineLevel=6 (a proxy image's start script passes JAVA_OPTIONS to
    /// its JVM; repeat for more)
    #[arg(long = "a-env", value_name = "VAR=VALUE", value_parser = assignment)]
    pub a_env: Vec<(String, String)>,
    /// A YAML file merged into each YAML file side A's services mount (the proxy's
    /// configuration): maps merge key by key, anything else replaces
    #[arg(long = "a-config", value_name = "FILE")]
    pub a_config: Option<std::path::PathBuf>,
    /// A Compose variable of side B's services, e.g. KROXYLICIOUS_IMAGE=my/kroxylicious:dev
    /// (repeat for more)
    #[arg(long = "b", value_name = "VAR=VALUE", value_parser = assignment)]
    pub b: Vec<(String, String)>,
    /// An environment variable set in each of side B's services (repeat for more)
    #[arg(long = "b-env", value_name = "VAR=VALUE", value_parser = assignment)]
    pub b_env: Vec<(String, String)>,
    /// A YAML file merged into each YAML file side B's services mount
    #[arg(long = "b-config", value_name = "FILE")]
    pub b_config: Option<std::path::PathBuf>,
    /// Print the plan (both sides' services, topics, steps) and start nothing
    #[arg(long)]
    pub dry_run: bool,
}

impl AbArgs {
    /// Both sides' overrides.
    pub(crate) fn sides(&self) -> crate::settings::sides::Sides {
        use crate::settings::sides::{Overrides, Sides};
        Sides {
            a: Overrides {
                variables: self.a.clone(),
                environment: self.a_env.clone(),
                config: self.a_config.clone(),
            },
            b: Overrides {
                variables: self.b.clone(),
                environment: self.b_env.clone(),
                config: self.b_config.clone(),
            },
        }
    }
}

/// `VAR=VALUE`, split at the first `=`.
fn assignment(s: &str) -> anyhow::Result<(String, String)> {
    match s.split_once('=') {
        Some((var, value)) if !var.trim().is_empty() => {
            Ok((var.trim().to_string(), value.to_string()))
        }
        _ => anyhow::bail!("{s:?}: expected VAR=VALUE"),
    }
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

/// Options of `sizing`.
#[derive(Debug, Args)]
pub struct SizingArgs {
    #[command(flatten)]
    pub sweep: SweepArgs,
    /// Produce + consume traffic in MB/s (10^6 bytes) whose cores of path the sizing states
    #[arg(long, value_name = "MB_PER_S", default_value_t = 100.0, value_parser = traffic)]
    pub traffic: f64,
}

fn traffic(s: &str) -> anyhow::Result<f64> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => anyhow::bail!("{s:?}: expected MB/s above 0, e.g. 100 or 12.5"),
    }
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
    /// Also write the comparison as one self-contained HTML page to this file (the summary,
    /// warnings, every metric, and each primary metric's observations on both sides drawn)
    #[arg(long, value_name = "FILE")]
    pub report: Option<std::path::PathBuf>,
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

/// The settings as flags and environment variables, accepted before or after the command: one
/// flag per entry of [`SETTINGS`], so parsing, `--help` and the variables cannot drift apart.
/// Holds what was given (flag or variable, flag first), each value already checked.
#[derive(Debug, Clone, Default)]
pub struct SettingsArgs {
    given: Vec<(&'static Setting, Vec<String>)>,
}

impl Args for SettingsArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.args(SETTINGS.iter().map(flag))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for SettingsArgs {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let given = SETTINGS
            .iter()
            .filter(|s| {
                !matches!(
                    matches.value_source(s.var),
                    None | Some(clap::parser::ValueSource::DefaultValue)
                )
            })
            .filter_map(|s| {
                let values = matches.get_many::<String>(s.var)?;
                Some((s, values.cloned().collect()))
            })
            .collect();
        Ok(SettingsArgs { given })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

/// The flag of `setting`: its variable, its help with its default and how it takes lists, and a
/// parser that checks each value as the setting reads it and keeps it canonical.
fn flag(setting: &'static Setting) -> Arg {
    let mut help = setting.help.to_string();
    if let Some(default) = setting.default_help {
        help.push_str(&format!(" [default: {default}]"));
    }
    match setting.ab_default {
        Some("") => help.push_str(" [ab: unset]"),
        Some(ab) => help.push_str(&format!(" [ab: {ab}]")),
        None => {}
    }
    match setting.lists {
        Lists::Commas => help.push_str(" [a list measures each]"),
        Lists::Repeated => help.push_str(
            " [the flag repeated measures each; the variable is one value, commas included]",
        ),
        Lists::Refused | Lists::Text => {}
    }
    let mut arg = Arg::new(setting.var)
        .long(setting.flag())
        .env(setting.var)
        .value_name(setting.var)
        .help(help)
        .global(true)
        .allow_hyphen_values(setting.var == "THROUGHPUT")
        .value_parser(move |text: &str| setting.canonical(text));
    if !setting.default.is_empty() {
        arg = arg.default_value(setting.default);
    }
    match setting.lists {
        // A repeated flag adds its values, as a list does.
        Lists::Commas => arg.value_delimiter(',').action(ArgAction::Append),
        Lists::Repeated => arg.action(ArgAction::Append),
        Lists::Refused | Lists::Text => arg.action(ArgAction::Set),
    }
}

impl SettingsArgs {
    /// The plain settings: the defaults, then what was given; a setting given as a list holds
    /// its first value, and the lists of every varying setting given (one value pins a setting
    /// the suite's matrix varies) are its `matrix`; a missing commit id is detected from the
    /// suite directory. Errors name the setting and the value.
    #[cfg(test)]
    pub(crate) fn into_settings(self) -> anyhow::Result<Settings> {
        self.into_settings_for(false)
    }

    /// [`Self::into_settings`]; for a paired run (`paired`), a setting not given takes its
    /// paired default ([`Setting::ab_default`]) where it has one.
    pub(crate) fn into_settings_for(self, paired: bool) -> anyhow::Result<Settings> {
        let given = |var: &str| self.given.iter().any(|(s, _)| s.var == var);
        if given("DURATION") && given("NUM_RECORDS") {
            anyhow::bail!(
                "DURATION and NUM_RECORDS are both set: a run is bounded by time or by a count \
                 of records, not both"
            );
        }
        let mut settings = Settings::without_commit();
        if paired {
            for setting in SETTINGS.iter().filter(|s| !given(s.var)) {
                if let Some(value) = setting.ab_default {
                    setting.set(&mut settings, value)?;
                }
            }
        }
        for (setting, values) in &self.given {
            if setting.varies() {
                let axis: Axis = matrix::axis(setting.var, values)?;
                setting.set(&mut settings, &axis.values[0])?;
                settings.matrix.push(axis);
            } else {
                setting.set(&mut settings, &values[0])?;
            }
        }
        // Not given, or given empty: the commit the suite directory is checked out at.
        if !given("COMMIT_ID") || settings.commit_id.is_empty() {
            settings.commit_id = settings::detect_commit_id(&settings.scenarios);
        }
        Ok(settings)
    }
}
