//! Command-line entry point: `perf-tests [COMMAND] [settings]`, COMMAND one of run (the
//! default), ab, sweep, sizing, list, doctor, images, clean, swarm, compose, compare, pr, man and
//! completions; each parsed, its settings reconciled, handed on as plain values, and its exit
//! code (`EXIT_*`) returned.
//!
//! Every clap definition lives under this module (`args` for the main command line, `compose`,
//! `images`, `swarm` and `pr` for their subcommands); the modules they call take plain values. The one
//! exception is `perf-tests workload …`, the protocol between a driver and the workload
//! container, which `crate::workload::command` defines so both ends share one type.
//!
//! Every setting is a flag and an environment variable (flag over environment over default);
//! with no command, `perf-tests` runs, so `TEST=03.* NUM_RECORDS=1e6 perf-tests` works as the
//! reference script did.

mod args;
pub mod compose;
pub mod doctor;
pub mod images;
pub mod pr;
pub mod swarm;

use std::io::Write;
use std::path::Path;

use clap::Parser;

pub use args::{
    AbArgs, Cli, Command, CompareArgs, FormatArg, RunArgs, SettingsArgs, SizingArgs, SweepArgs,
};

use crate::model::ScenarioResult;
use crate::scenario::{self, Scenario, Suite};
use crate::settings::Settings;
use crate::world::engine::Engine;
use crate::{plan, runner};

/// Exit code of a successful command.
pub const EXIT_OK: i32 = 0;
/// Exit code of a run that failed or whose record counters disagree.
pub const EXIT_FAILURE: i32 = 1;
/// Exit code of a usage or configuration error (bad flag, variable, scenario file).
pub const EXIT_USAGE: i32 = 2;
/// Exit code of a run interrupted by SIGINT, SIGTERM or SIGHUP (the shell's convention for
/// SIGINT), after what it created was torn down.
pub const EXIT_INTERRUPTED: i32 = 130;

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
    // Every room below tells its progress as events; this process shows them on stderr.
    crate::progress::listen(Box::new(crate::present::live::Live::default()));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    let paired = matches!(cli.command, Some(Command::Ab(_)));
    let settings = match cli.settings.into_settings_for(paired) {
        Ok(settings) => settings,
        Err(e) => {
            eprintln!("error: {e:#}");
            return EXIT_USAGE;
        }
    };
    match cli.command.unwrap_or(Command::Run(RunArgs::default())) {
        Command::Run(args) => run(&settings, args.dry_run, How::Run),
        Command::Ab(args) => ab(&settings, &args),
        Command::Sweep(args) => sweep(&settings, &args, None),
        Command::Sizing(args) => sizing(&settings, &args),
        Command::List => list(&settings),
        Command::Doctor => doctor(&settings),
        Command::Images(cmd) => block_on(images::execute(cmd, &settings)),
        Command::Clean { images, force } => block_on(clean(images, force)),
        Command::Compose(cmd) => block_on(compose::execute(cmd)),
        Command::Swarm(cmd) => block_on(swarm::execute(cmd, &settings)),
        Command::Compare(args) => compare(&settings, &args),
        Command::Man => man(),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "perf-tests", &mut std::io::stdout());
            EXIT_OK
        }
        Command::Pr(cmd) => match pr::execute(cmd) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e:#}");
                EXIT_USAGE
            }
        },
    }
}

/// `man`: the manual page of the whole command line, every command's after the main one.
fn man() -> i32 {
    let cmd = <Cli as clap::CommandFactory>::command();
    let mut out = Vec::new();
    let rendered = clap_mangen::Man::new(cmd.clone())
        .render(&mut out)
        .and_then(|()| {
            for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                let name = format!("perf-tests-{}", sub.get_name());
                clap_mangen::Man::new(sub.clone().name(name)).render(&mut out)?;
            }
            Ok(())
        });
    match rendered.and_then(|()| std::io::stdout().write_all(&out)) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("error: cannot write the manual page: {e}");
            EXIT_FAILURE
        }
    }
}

/// `doctor`: every check of the host against the plan, one line each; 1 when any failed.
fn doctor(settings: &Settings) -> i32 {
    let plan = match plan::plan_run(settings, &crate::world::engine::new_run_id()) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("error: {e:#}");
            return EXIT_USAGE;
        }
    };
    block_on(async {
        let checks = crate::cli::doctor::check(&plan).await;
        for c in &checks {
            println!("{c}");
        }
        Ok(if checks.iter().all(|c| c.found.is_ok()) {
            EXIT_OK
        } else {
            EXIT_FAILURE
        })
    })
}

/// `compare`: 0 no regression, 1 a significant regression beyond the threshold, 2 an error.
fn compare(settings: &Settings, args: &CompareArgs) -> i32 {
    use std::io::IsTerminal;
    let stdout = std::io::stdout();
    let terminal = stdout.is_terminal();
    let request = crate::compare::Request {
        base: (&args.base, args.base_where.as_ref()),
        new: (&args.new, args.new_where.as_ref()),
        results_dir: &settings.results_dir,
        threshold_pct: args.threshold,
        format: args.format.into(),
        report: args.report.as_deref(),
    };
    match crate::compare::run(&request, &mut stdout.lock(), terminal) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            EXIT_USAGE
        }
    }
}

/// `perf-tests clean`: removes the containers and networks (label `io.perf-tests.managed=true`)
/// of runs that are no longer alive, or with `force` all of them, and nothing else; with
/// `images`, also the workload images of executables other than this one. At a swarm's
/// manager, also the swarm's services and configs and every reachable node's containers.
async fn clean(images: bool, force: bool) -> anyhow::Result<i32> {
    let engine = Engine::connect("clean").await?.whole_swarm().await?;
    crate::world::engine::liveness::clean(&engine, force, &mut std::io::stderr()).await?;
    if images {
        let n = crate::world::images::workload::remove_stale(&engine).await?;
        eprintln!("removed {n} workload images of other builds");
    }
    Ok(EXIT_OK)
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

/// `EXIT_INTERRUPTED` for an interrupted run, `EXIT_FAILURE` otherwise.
fn exit_code_of(e: &anyhow::Error) -> i32 {
    if e.downcast_ref::<crate::world::engine::Interrupted>()
        .is_some()
    {
        EXIT_INTERRUPTED
    } else {
        EXIT_FAILURE
    }
}

/// What kind of run a command asked for.
enum How {
    Run,
    Sweep,
    Sizing(crate::model::run::SizingRequest),
    /// A paired run (`ab`) with its sides' overrides.
    Ab(crate::settings::sides::Sides),
}

/// `ab`: a run whose scenarios are paired, side B derived from each; exit 1 when side B is worse
/// beyond PAIR_THRESHOLD on a primary metric of any path.
fn ab(settings: &Settings, args: &AbArgs) -> i32 {
    if let Some(axis) = settings.matrix.iter().find(|a| a.values.len() > 1) {
        eprintln!(
            "error: {}={}: a paired run measures one configuration of each side, not a list; \
             give side B what differs with --b, --b-env or --b-config",
            axis.var,
            axis.values.join(",")
        );
        return EXIT_USAGE;
    }
    run(settings, args.dry_run, How::Ab(args.sides()))
}

/// `sizing`: a sweep, repeated, whose results are also sized (see `crate::analysis::sizing`).
fn sizing(settings: &Settings, args: &SizingArgs) -> i32 {
    if let Some(d) = settings.duration.map(|d| d.as_secs()) {
        eprintln!(
            "error: DURATION={d} cannot be sized: a run bounded by time is costed over its whole \
             span, its warm-up included, while a sizing counts measured phases only; give \
             NUM_RECORDS instead"
        );
        return EXIT_USAGE;
    }
    if settings.repeat < 2 {
        eprintln!(
            "error: REPEAT={}: a sizing run states intervals, not single passes; give REPEAT 2 or \
             more (each round climbs every rate again)",
            settings.repeat
        );
        return EXIT_USAGE;
    }
    let request = crate::model::run::SizingRequest {
        traffic_mb_s: args.traffic,
        from: sweep_from(&args.sweep),
    };
    sweep(settings, &args.sweep, Some(request))
}

/// A sweep's lowest rate: `--from`, else a tenth of `--to`.
fn sweep_from(args: &SweepArgs) -> u64 {
    args.from.unwrap_or((args.to / 10).max(1))
}

/// `sweep`: a run whose matrix gets THROUGHPUT as its last axis, over the sweep's rates (with
/// `sizing`, a sizing run's).
fn sweep(
    settings: &Settings,
    args: &SweepArgs,
    sizing: Option<crate::model::run::SizingRequest>,
) -> i32 {
    if settings
        .matrix
        .iter()
        .any(|a| a.var == crate::analysis::sweep::VAR)
    {
        eprintln!(
            "error: THROUGHPUT cannot be given to a sweep: the sweep varies it (--from, --to, \
             --steps)"
        );
        return EXIT_USAGE;
    }
    if settings.mode == crate::settings::Mode::Backlog {
        eprintln!(
            "error: MODE=backlog cannot be swept: its THROUGHPUT is the live producer's rate \
             while the group catches up, not a rate the path has to sustain; give THROUGHPUT a \
             list to a run instead"
        );
        return EXIT_USAGE;
    }
    let rates = match crate::analysis::sweep::rates(sweep_from(args), args.to, args.steps) {
        Ok(rates) => rates,
        Err(e) => {
            eprintln!("error: {e:#}");
            return EXIT_USAGE;
        }
    };
    let values: Vec<String> = rates.iter().map(u64::to_string).collect();
    let mut settings = settings.clone();
    settings.throughput = crate::settings::rate::Rate::per_second(rates[0])
        .expect("a sweep's rates start at 1 or more");
    settings.matrix.push(crate::settings::matrix::Axis {
        var: crate::analysis::sweep::VAR.to_string(),
        values,
    });
    run(
        &settings,
        args.dry_run,
        sizing.map_or(How::Sweep, How::Sizing),
    )
}

fn run(settings: &Settings, dry_run: bool, how: How) -> i32 {
    let sides = match &how {
        How::Ab(sides) => Some(sides),
        _ => None,
    };
    let run_id = crate::world::engine::new_run_id();
    let planned = plan::plan_run_with(settings, &run_id, sides).and_then(|mut plan| {
        plan.sweep = matches!(how, How::Sweep | How::Sizing(_));
        Ok((plan, crate::driver::for_settings(settings)?.describe()))
    });
    let (plan, driver) = match planned {
        Ok(planned) => planned,
        Err(e) => {
            eprintln!("error: {e:#}");
            return EXIT_USAGE;
        }
    };
    let sizing = match how {
        How::Sizing(request) => Some(request),
        _ => None,
    };
    note_alike(&plan);
    if dry_run {
        print!("{}", plan.render());
        if let Some(s) = &sizing {
            println!(
                "sizing: each path's millicores per MB/s over every sustained repetition, and \
                 the cores of {} MB/s of produce + consume traffic",
                s.traffic_mb_s
            );
        }
        println!("{driver}");
        return EXIT_OK;
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return EXIT_FAILURE;
        }
    };
    if !host_can_run(&runtime, &plan) {
        return EXIT_FAILURE;
    }
    // Profile recordings not taken into a results directory (the run failed before any
    // scenario completed) are removed with the rest of what the run made.
    let _staging = Staging(crate::present::results::profiles_staging(
        &settings.results_dir,
        &plan.first().run_id,
    ));
    let started = chrono::Utc::now();
    let outcome = runtime.block_on(runner::run(&plan));
    let ended = chrono::Utc::now();
    let output = match outcome {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e:#}");
            return exit_code_of(&e);
        }
    };
    let mut info = crate::model::run::RunInfo::new(
        &output.run_id,
        &plan.settings(),
        &plan.first().suite.dir,
        crate::world::machine::host_facts(),
        started,
        ended,
    );
    info.nodes = output.nodes;
    info.sizing = sizing;
    info.sides = plan.first().sides.clone();
    report_run(settings, info, &output.results, output.failure)
}

/// Says which paired scenarios compare side A with itself (an A/A comparison).
fn note_alike(plan: &plan::RunPlan) {
    let alike: Vec<&str> = plan
        .first()
        .scenarios
        .iter()
        .filter(|p| p.pair.as_ref().is_some_and(|p| p.alike))
        .map(|p| p.scenario.name.as_str())
        .collect();
    if !alike.is_empty() {
        eprintln!(
            "note: side B is side A as it is in {}: an A/A comparison (no difference is expected; \
             give side B what differs with --b, --b-env or --b-config)",
            alike.join(", ")
        );
    }
}

/// Whether the host passes every check of the plan (`doctor`); if not, says what fails.
fn host_can_run(runtime: &tokio::runtime::Runtime, plan: &plan::RunPlan) -> bool {
    let problems: Vec<String> = runtime
        .block_on(crate::cli::doctor::check(plan))
        .into_iter()
        .filter_map(|c| c.found.err().map(|p| format!("{}: {p}", c.what)))
        .collect();
    if problems.is_empty() {
        return true;
    }
    eprintln!(
        "error: this host cannot run the plan; nothing was built or started (`perf-tests doctor` shows every check):\n  {}",
        problems.join("\n  ")
    );
    false
}

/// A finished run's results reported and saved, and its exit code. A run a failure ended
/// reports and saves the scenarios it completed before it, as an incomplete run; the exit code
/// is the failure's either way.
fn report_run(
    settings: &Settings,
    mut info: crate::model::run::RunInfo,
    completed: &[ScenarioResult],
    failure: Option<anyhow::Error>,
) -> i32 {
    let Some(failure) = failure else {
        return finish(
            &settings.results_dir,
            &info,
            completed,
            &mut std::io::stdout(),
        );
    };
    if !completed.is_empty() {
        let names: Vec<&str> = completed.iter().map(|r| r.name.as_str()).collect();
        eprintln!(
            "the run ended early; reporting the scenarios it completed: {}",
            names.join(", ")
        );
        info.incomplete = Some(incomplete_reason(&failure));
        finish(
            &settings.results_dir,
            &info,
            completed,
            &mut std::io::stdout(),
        );
    }
    eprintln!("error: {failure:#}");
    exit_code_of(&failure)
}

/// A directory removed when dropped, if it is still there.
struct Staging(std::path::PathBuf);

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Why a run ended early, in one line for `run.json`: the failure's first line.
fn incomplete_reason(failure: &anyhow::Error) -> String {
    let full = format!("{failure:#}");
    full.lines().next().unwrap_or_default().to_string()
}

/// Prints the tables, writes the results directory and turns the outcome into an exit code:
/// disagreeing record counters fail the run after everything is saved.
fn finish(
    results_dir: &Path,
    info: &crate::model::run::RunInfo,
    scenario_results: &[ScenarioResult],
    out: &mut dyn Write,
) -> i32 {
    let tables = crate::present::export::text::render(scenario_results, info.settings.p99_limit_ms);
    let _ = write!(out, "{tables}");
    let sizing = crate::present::export::sizing::of_run(info, scenario_results);
    if let Some(sizing) = &sizing {
        let _ = write!(out, "{}", crate::present::export::sizing::render(sizing));
    }
    match crate::present::export::write_run(results_dir, info, scenario_results) {
        Ok(dir) => {
            let _ = writeln!(out, "Results: {}", dir.display());
            if scenario_results.iter().any(|r| r.pair.is_some()) {
                let comment = dir.join(crate::present::export::ab::FILE);
                let _ = writeln!(out, "Pull-request comment: {}", comment.display());
            }
        }
        Err(e) => {
            eprintln!("error: cannot write results: {e:#}");
            return EXIT_FAILURE;
        }
    }
    if sizing.is_some_and(|s| !s.sized_any()) {
        eprintln!(
            "error: no scenario sustained any rate of the sizing run: lower --from (now {})",
            info.sizing.as_ref().map_or(0, |r| r.from)
        );
        return EXIT_FAILURE;
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
    let unproven: Vec<&str> = scenario_results
        .iter()
        .filter(|r| r.path_check_failed())
        .map(|r| r.name.as_str())
        .collect();
    if !unproven.is_empty() {
        eprintln!(
            "error: the path does not do what the scenario declares (path check failed) in: {}",
            unproven.join(", ")
        );
        return EXIT_FAILURE;
    }
    let worse: Vec<String> = scenario_results
        .iter()
        .filter_map(|r| {
            let metrics = r.pair.as_ref()?.worse();
            let names: Vec<&str> = metrics.iter().map(|m| m.name()).collect();
            (!names.is_empty()).then(|| format!("{} ({})", r.label(), names.join(", ")))
        })
        .collect();
    if !worse.is_empty() {
        eprintln!(
            "side B is worse than side A beyond PAIR_THRESHOLD={}% in: {}",
            info.settings.pair_threshold,
            worse.join("; ")
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
        let parsed = |args: &[&str]| {
            let cli = Cli::try_parse_from(args).unwrap();
            let settings = cli.settings.clone().into_settings().unwrap();
            (cli, settings)
        };
        let (_, s) = parsed(&["perf-tests", "run", "--num-records", "1e3"]);
        assert_eq!(s.num_records, 1000);
        let (cli, s) = parsed(&["perf-tests", "--num-records", "2e3", "list"]);
        assert_eq!(s.num_records, 2000);
        assert!(matches!(cli.command, Some(Command::List)));
        let (cli, s) = parsed(&["perf-tests", "--throughput", "-1"]);
        assert_eq!(s.throughput, crate::settings::rate::Rate::Unlimited);
        assert!(cli.command.is_none());
    }

    #[test]
    fn the_commit_id_is_detected_unless_given() {
        let commit = |args: &[&str]| {
            let cli = Cli::try_parse_from(args).unwrap();
            cli.settings.into_settings().unwrap().commit_id
        };
        let scenarios = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let at = scenarios.display().to_string();
        let detected = crate::settings::detect_commit_id(&scenarios);
        assert_eq!(commit(&["perf-tests", "--scenarios", &at]), detected);
        assert_eq!(
            commit(&["perf-tests", "--scenarios", &at, "--commit-id", ""]),
            detected
        );
        assert_eq!(commit(&["perf-tests", "--commit-id", "abc"]), "abc");
    }

    #[test]
    fn lists_and_repeated_flags_make_a_matrix_of_the_settings_that_may_vary() {
        let settings = |args: &[&str]| {
            let mut all = vec!["perf-tests"];
            all.extend(args);
            Cli::try_parse_from(all).unwrap().settings.into_settings()
        };
        let s = settings(&[
            "--record-size",
            "100,1e3",
            "--throughput",
            "2e4",
            "--throughput",
            "-1",
            "--producer-properties",
            "acks=all",
            "--producer-properties",
            "acks=1 linger.ms=5",
            "--commit-id",
            "c",
        ])
        .unwrap();
        assert_eq!(s.record_size, 100);
        assert_eq!(s.throughput.limit(), Some(20_000));
        let axes: Vec<(&str, Vec<&str>)> = s
            .matrix
            .iter()
            .map(|a| {
                (
                    a.var.as_str(),
                    a.values.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            axes,
            [
                ("RECORD_SIZE", vec!["100", "1000"]),
                ("THROUGHPUT", vec!["20000", "-1"]),
                (
                    "PRODUCER_PROPERTIES",
                    vec!["acks=all", "acks=1 linger.ms=5"]
                ),
            ]
        );
        // Unset settings keep their defaults and are not axes.
        let s = settings(&["--commit-id", "c"]).unwrap();
        assert_eq!(s.record_size, 1024);
        assert!(s.matrix.is_empty());
        let err = settings(&["--record-size", "5,5", "--commit-id", "c"])
            .unwrap_err()
            .to_string();
        assert_eq!(err, "RECORD_SIZE lists the value \"5\" twice");
        let err = Cli::try_parse_from(["perf-tests", "--repeat", "2,3"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("REPEAT=\"2,3\": REPEAT cannot take a list"),
            "{err}"
        );
    }

    fn info() -> crate::model::run::RunInfo {
        let settings = Settings {
            commit_id: "abc".into(),
            ..Settings::default()
        };
        let now = chrono::Utc::now();
        let host = crate::world::machine::host_facts();
        crate::model::run::RunInfo::new("run", &settings, Path::new("suite"), host, now, now)
    }

    #[test]
    fn finish_prints_tables_and_saves_them() {
        let dir = tempfile::tempdir().unwrap();
        let records = crate::present::report::tests::sample();
        let mut out = Vec::new();
        assert_eq!(finish(dir.path(), &info(), &records, &mut out), EXIT_OK);
        let text = String::from_utf8(out).unwrap();
        let tables = crate::present::export::text::render(&records, None);
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
        let mut records = crate::present::report::tests::sample();
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

    #[test]
    fn an_incomplete_run_says_why_in_one_line() {
        let failure = anyhow::anyhow!("service \"broker1\" exited\n--- last log lines ---\nx")
            .context("scenario 02-no-filters");
        assert_eq!(
            incomplete_reason(&failure),
            "scenario 02-no-filters: service \"broker1\" exited"
        );
        let interrupted =
            anyhow::Error::new(crate::world::engine::Interrupted { signal: "SIGTERM" });
        assert_eq!(exit_code_of(&interrupted), 130);
        assert!(incomplete_reason(&interrupted).starts_with("interrupted by SIGTERM;"));
    }
}
