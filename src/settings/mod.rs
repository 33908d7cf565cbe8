//! Run settings: plain data, independent of how they were given (flags, environment, defaults).
//!
//! The names, meanings and defaults follow the reference perf-test script so that a command line
//! such as `TEST=03.* NUM_RECORDS=1e6 perf-tests` means the same thing here. Every setting is
//! one entry of [`table::SETTINGS`]: its variable, help, default, whether it may vary and
//! whether it changes what is measured; the command line, the Compose variables, the matrix and
//! compare all read that one list.

pub mod cpuset;
pub mod matrix;
mod parse;
pub mod rate;
pub mod sides;
pub mod table;
mod validate;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

pub(crate) use parse::*;
pub use table::{Lists, Setting, Settings, SETTINGS};

/// Largest `WARM_UP_SECONDS_PRE_TEST` accepted: an hour of warm-up per scenario is a mistake.
pub(crate) const MAX_WARM_UP_SECONDS_PRE_TEST: u64 = 3600;
/// How much longer than `WARM_UP_SECONDS_PRE_TEST` a warm-up waits for the JIT compilers to go
/// quiet (`WARM_UP_JIT_PERCENT`) before it measures anyway, saying so.
pub(crate) const WARM_UP_JIT_LIMIT_SECONDS: u64 = 600;
/// The span over which `WARM_UP_JIT_PERCENT` judges the compilers' share: a round of the
/// warm-up lasts about a second, 10 ms clock ticks make its share coarse, and a compiler
/// thread waits idle between bursts of work, so one quiet round says little.
pub(crate) const WARM_UP_JIT_WINDOW_SECONDS: u64 = 10;
/// Largest `REPEAT` accepted.
pub(crate) const MAX_REPEAT: u32 = 1000;

/// The most measured phases a paired bring-up may have (`PAIR_PHASES`).
pub(crate) const MAX_PAIR_PHASES: u32 = 100;

/// Results written before `PAIR_PHASES` existed measured one phase per bring-up.
fn one() -> u32 {
    1
}
/// Largest `PARTITIONS` accepted.
pub(crate) const MAX_PARTITIONS: u32 = 10_000;
/// Largest `TOPICS` accepted: each is created, produced to and deleted on its own.
pub(crate) const MAX_TOPICS: u32 = 1000;
/// Largest `PRODUCERS` or `CONSUMERS` accepted: each is a thread of the one workload container.
pub(crate) const MAX_CLIENTS: u32 = 64;
/// Most load generators a run spreads its clients over (`LOAD_GENERATORS`).
pub(crate) const MAX_LOAD_GENERATORS: u32 = 8;
/// Most brokers a run's cluster has (`BROKERS`); a suite declares how many it can run.
pub(crate) const MAX_BROKERS: u32 = 9;
/// Longest DURATION accepted: 30 days.
pub(crate) const MAX_DURATION_S: u64 = 30 * 24 * 3600;
/// `COMMIT_ID` when the suite is not inside a git checkout.
pub(crate) const UNKNOWN_COMMIT: &str = "unknown";

/// Largest count accepted: far beyond any sensible run, small enough that products such as
/// records x record size cannot overflow a u64.
pub(crate) const MAX_COUNT: u64 = 1_000_000_000_000_000;

/// How a measurement's producer and consumer run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The producer sends every record, then the consumer reads them (the reference's way).
    #[default]
    ProduceThenConsume,
    /// Producer and consumer run at once, and the consumer measures each record's latency from
    /// its send to its receipt.
    EndToEnd,
    /// The group finds a backlog waiting and catches up with it while a producer keeps sending
    /// at `THROUGHPUT`.
    Backlog,
}

impl Mode {
    /// The value as written in `MODE`.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Mode::ProduceThenConsume => "produce-then-consume",
            Mode::EndToEnd => "end-to-end",
            Mode::Backlog => "backlog",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where the run's services run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EngineKind {
    /// Containers on the one engine `DOCKER_HOST` reaches.
    #[default]
    Local,
    /// Services on the swarm whose manager `DOCKER_HOST` reaches, placed on its nodes by role.
    Swarm,
}

impl EngineKind {
    /// The value as written in `ENGINE`.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            EngineKind::Local => "local",
            EngineKind::Swarm => "swarm",
        }
    }
}

/// What a profile samples (`PROFILE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProfileMode {
    /// CPU time, by the timer-based `ctimer` event (perf events are blocked in containers).
    Cpu,
    /// Heap allocations (TLAB and outside).
    Alloc,
    /// Contended locks.
    Lock,
    /// Every thread's stack on a wall clock, running or not.
    Wall,
}

impl ProfileMode {
    /// `PROFILE`'s value: `off` (none) or a mode; anything else is refused naming the setting.
    pub(crate) fn parse(var: &str, text: &str) -> Result<Option<ProfileMode>> {
        Ok(Some(match text.trim() {
            "" | "off" | "0" => return Ok(None),
            "cpu" => ProfileMode::Cpu,
            "alloc" => ProfileMode::Alloc,
            "lock" => ProfileMode::Lock,
            "wall" => ProfileMode::Wall,
            other => bail!("{var}={other:?}: expected off, cpu, alloc, lock or wall"),
        }))
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            ProfileMode::Cpu => "cpu",
            ProfileMode::Alloc => "alloc",
            ProfileMode::Lock => "lock",
            ProfileMode::Wall => "wall",
        }
    }

    /// The agent's event (the mode that ran).
    pub(crate) fn event(self) -> &'static str {
        match self {
            ProfileMode::Cpu => "ctimer",
            ProfileMode::Alloc => "alloc",
            ProfileMode::Lock => "lock",
            ProfileMode::Wall => "wall",
        }
    }
}

/// Parses `MODE`: `produce-then-consume`, `end-to-end` or `backlog`.
pub(crate) fn parse_mode(s: &str) -> Result<Mode> {
    match s.trim() {
        "produce-then-consume" => Ok(Mode::ProduceThenConsume),
        "end-to-end" => Ok(Mode::EndToEnd),
        "backlog" => Ok(Mode::Backlog),
        other => bail!(
            "MODE={other:?}: unknown mode (expected produce-then-consume, end-to-end or backlog)"
        ),
    }
}

/// One setting that varies over a run, and its values in the order they were given (each in
/// the setting's canonical form: `1e3` is `1000`). See `crate::settings::matrix`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Axis {
    pub var: String,
    pub values: Vec<String>,
}

impl Default for Settings {
    /// The documented defaults; `commit_id` is detected from the default suite directory.
    fn default() -> Self {
        let defaults = Settings::without_commit();
        Settings {
            commit_id: detect_commit_id(&defaults.scenarios),
            ..defaults
        }
    }
}

impl Settings {
    /// The documented defaults (each entry's default in [`SETTINGS`]) with the commit id
    /// [`UNKNOWN_COMMIT`] (nothing is run to find it).
    pub fn without_commit() -> Self {
        // Parsed once: every value read from the command line starts from these.
        static DEFAULTS: std::sync::LazyLock<Settings> = std::sync::LazyLock::new(|| {
            let mut s = Settings::blank();
            for setting in SETTINGS {
                setting
                    .set(&mut s, setting.default)
                    .unwrap_or_else(|e| panic!("the default of {}: {e:#}", setting.var));
            }
            s.commit_id = UNKNOWN_COMMIT.to_string();
            s
        });
        DEFAULTS.clone()
    }

    /// Every setting under its environment-variable name, as Compose interpolation sees them.
    pub(crate) fn variables(&self) -> BTreeMap<String, String> {
        SETTINGS
            .iter()
            .map(|s| (s.var.to_string(), s.value(self)))
            .collect()
    }
}

/// `git rev-parse --short HEAD` in `dir` when it is inside a git checkout, else `unknown`.
pub(crate) fn detect_commit_id(dir: &Path) -> String {
    // A relative suite directory that does not exist yet still belongs to the current checkout.
    let dir = if dir.is_dir() { dir } else { Path::new(".") };
    let output = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .output();
    match output {
        Ok(out) if out.status.success() => {
            let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if id.is_empty() {
                UNKNOWN_COMMIT.to_string()
            } else {
                id
            }
        }
        _ => UNKNOWN_COMMIT.to_string(),
    }
}

/// Times held as [`Duration`]s and stored as whole seconds, as results have always held them
/// (every time setting is given in whole seconds).
mod whole_seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_secs())
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_secs)
    }

    pub mod optional {
        use std::time::Duration;

        use serde::{Deserialize, Deserializer, Serializer};

        pub(crate) fn serialize<S: Serializer>(
            d: &Option<Duration>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => s.serialize_some(&d.as_secs()),
                None => s.serialize_none(),
            }
        }

        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<Duration>, D::Error> {
            Option::<u64>::deserialize(d).map(|s| s.map(Duration::from_secs))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_name_every_setting() {
        let s = Settings {
            commit_id: "abc1234".into(),
            producer_properties: parse_properties("acks=1 linger.ms=5").unwrap(),
            ..Settings::default()
        };
        let v = s.variables();
        let mut keys: Vec<&str> = v.keys().map(String::as_str).collect();
        let mut vars: Vec<&str> = SETTINGS.iter().map(|s| s.var).collect();
        keys.sort_unstable();
        vars.sort_unstable();
        assert_eq!(keys, vars);
        assert_eq!(v["PRODUCER_PROPERTIES"], "acks=1 linger.ms=5");
        assert_eq!(v["NUM_RECORDS"], "10000000");
        assert_eq!(v["THROUGHPUT"], "-1");
        assert_eq!(v["COMMIT_ID"], "abc1234");
        assert_eq!(v["SCENARIOS"], "scenarios/kroxylicious");
        assert_eq!(v["DRIVER"], "native");
    }

    #[test]
    fn profile_modes_read_off_or_a_mode_and_refuse_the_rest_by_name() {
        assert_eq!(ProfileMode::parse("PROFILE", "off").unwrap(), None);
        assert_eq!(
            ProfileMode::parse("PROFILE", "cpu").unwrap(),
            Some(ProfileMode::Cpu)
        );
        assert_eq!(ProfileMode::Cpu.event(), "ctimer");
        let err = ProfileMode::parse("PROFILE", "cycles")
            .unwrap_err()
            .to_string();
        assert!(err.contains("PROFILE=\"cycles\""), "{err}");
    }

    #[test]
    fn commit_id_outside_a_checkout_is_unknown() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(detect_commit_id(dir.path()), UNKNOWN_COMMIT);
    }

    #[test]
    fn commit_id_inside_a_checkout_is_the_short_head() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.com")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.com")
                .output()
                .unwrap();
            assert!(ok.status.success(), "git {args:?}: {ok:?}");
            String::from_utf8(ok.stdout).unwrap()
        };
        git(&["init", "-q"]);
        git(&["commit", "-q", "--allow-empty", "-m", "x"]);
        let head = git(&["rev-parse", "--short", "HEAD"]);
        std::fs::create_dir(dir.path().join("suite")).unwrap();
        assert_eq!(detect_commit_id(&dir.path().join("suite")), head.trim());
    }
}
