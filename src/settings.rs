//! Run settings: plain data, independent of how they were given (flags, environment, defaults).
//!
//! The names, meanings and defaults follow the reference perf-test script so that a command line
//! such as `TEST=03.* NUM_RECORDS=1e6 perf-tests` means the same thing here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// Default `TEST`: every numbered scenario.
pub const DEFAULT_TEST: &str = "[0-9][0-9]-.*";
/// Default `NUM_RECORDS`.
pub const DEFAULT_NUM_RECORDS: u64 = 10_000_000;
/// Default `RECORD_SIZE` in bytes.
pub const DEFAULT_RECORD_SIZE: u64 = 1024;
/// Default `WARM_UP_NUM_RECORDS_POST_BROKER_START`.
pub const DEFAULT_WARM_UP_POST_BROKER_START: u64 = 1000;
/// Default `WARM_UP_NUM_RECORDS_PRE_TEST`.
pub const DEFAULT_WARM_UP_PRE_TEST: u64 = 1000;
/// Default `WARM_UP_SECONDS_PRE_TEST`: no warm-up by time (the reference's behaviour).
pub const DEFAULT_WARM_UP_SECONDS_PRE_TEST: u64 = 0;
/// Largest `WARM_UP_SECONDS_PRE_TEST` accepted: an hour of warm-up per scenario is a mistake.
pub const MAX_WARM_UP_SECONDS_PRE_TEST: u64 = 3600;
/// Default `PRODUCER_PROPERTIES`.
pub const DEFAULT_PRODUCER_PROPERTIES: &str = "acks=all";
/// Default `THROUGHPUT` (records/s; -1 is unlimited).
pub const DEFAULT_THROUGHPUT: i64 = -1;
/// Default `REPEAT`: each scenario is measured once.
pub const DEFAULT_REPEAT: u32 = 1;
/// Largest `REPEAT` accepted.
pub const MAX_REPEAT: u32 = 1000;
/// Largest `PARTITIONS` accepted.
pub const MAX_PARTITIONS: u32 = 10_000;
/// Largest `TOPICS` accepted: each is created, produced to and deleted on its own.
pub const MAX_TOPICS: u32 = 1000;
/// Largest `PRODUCERS` or `CONSUMERS` accepted: each is a thread of the one workload container.
pub const MAX_CLIENTS: u32 = 64;
/// Default `KAFKA_IMAGE`: Apache Kafka from Maven Central, built here (the suites' recipes).
pub const DEFAULT_KAFKA_IMAGE: &str = "perf-tests/kafka:4.4.0";
/// Default `KROXYLICIOUS_IMAGE`: Kroxylicious from Maven Central, built here.
pub const DEFAULT_KROXYLICIOUS_IMAGE: &str = "perf-tests/kroxylicious:0.12.0";
/// Default `KAFKA_TOOL_IMAGE`: Kafka's tools from the same release as the broker, built here.
pub const DEFAULT_KAFKA_TOOL_IMAGE: &str = "perf-tests/kafka-tools:4.4.0";
/// Default `VAULT_IMAGE`.
pub const DEFAULT_VAULT_IMAGE: &str = "hashicorp/vault:1.15";
/// Default `DRIVER`.
pub const DEFAULT_DRIVER: Driver = Driver::Native;
/// Default `CATCH_UP_SECONDS`: long enough for a backlog of millions of records at tens of
/// thousands a second, short enough that a path that cannot keep up ends its scenario in minutes.
pub const DEFAULT_CATCH_UP_SECONDS: u64 = 300;
/// Default `MODE`: the reference's produce, then consume.
pub const DEFAULT_MODE: Mode = Mode::ProduceThenConsume;
/// Default `SCENARIOS` (the suite directory).
pub const DEFAULT_SCENARIOS: &str = "scenarios/kroxylicious";
/// Default `RESULTS_DIR`.
pub const DEFAULT_RESULTS_DIR: &str = "results";
/// `COMMIT_ID` when the suite is not inside a git checkout.
pub const UNKNOWN_COMMIT: &str = "unknown";

/// Largest count accepted: far beyond any sensible run, small enough that products such as
/// records x record size cannot overflow a u64.
pub const MAX_COUNT: u64 = 1_000_000_000_000_000;

/// What produces and consumes the measured records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Driver {
    /// The built-in librdkafka workload (`perf-tests workload`).
    Native,
    /// Apache Kafka's kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh from
    /// `KAFKA_TOOL_IMAGE`, as the reference script ran them.
    KafkaTools,
}

impl Driver {
    /// The value as written in `DRIVER`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Driver::Native => "native",
            Driver::KafkaTools => "kafka-tools",
        }
    }
}

impl std::fmt::Display for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    pub const fn as_str(self) -> &'static str {
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

/// Parses `MODE`: `produce-then-consume`, `end-to-end` or `backlog`.
pub fn parse_mode(s: &str) -> Result<Mode> {
    match s.trim() {
        "produce-then-consume" => Ok(Mode::ProduceThenConsume),
        "end-to-end" => Ok(Mode::EndToEnd),
        "backlog" => Ok(Mode::Backlog),
        other => bail!(
            "MODE={other:?}: unknown mode (expected produce-then-consume, end-to-end or backlog)"
        ),
    }
}

/// Parses `DRIVER`: `native` or `kafka-tools`.
pub fn parse_driver(s: &str) -> Result<Driver> {
    match s.trim() {
        "native" => Ok(Driver::Native),
        "kafka-tools" => Ok(Driver::KafkaTools),
        other => bail!("DRIVER={other:?}: unknown driver (expected native or kafka-tools)"),
    }
}

/// Everything a run is parameterised by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Regular expression selecting scenario directories by their whole name.
    pub test: String,
    /// Records produced and consumed per measurement.
    pub num_records: u64,
    /// Record value size in bytes.
    pub record_size: u64,
    /// Warm-up records sent once the run-wide broker is up.
    pub warm_up_post_broker_start: u64,
    /// Warm-up records sent through each scenario's endpoint before it is measured.
    pub warm_up_pre_test: u64,
    /// The pre-test warm-up goes on, in rounds, for at least this many seconds.
    pub warm_up_seconds_pre_test: u64,
    /// CPUs every service container may run on (a CPU list); empty: not pinned.
    pub services_cpuset: String,
    /// CPUs the load generator's containers may run on; empty: not pinned.
    pub workload_cpuset: String,
    /// Extra producer properties, in the order given.
    pub producer_properties: Vec<(String, String)>,
    /// Producer throughput limit in records/s; -1 is unlimited.
    pub throughput: i64,
    /// Times each scenario is measured, in interleaved rounds.
    pub repeat: u32,
    /// Partitions of each measured topic.
    pub partitions: u32,
    /// Topics the records are spread over (one consumer group reads them all).
    pub topics: u32,
    /// Producers sharing the records and the rate.
    pub producers: u32,
    /// Consumers of the one consumer group, sharing the partitions.
    pub consumers: u32,
    /// A rate is sustained (sweeps) only while the producer's p99 stays within this many ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_limit_ms: Option<u64>,
    /// How long a group may take to catch up with its backlog (MODE=backlog), seconds.
    pub catch_up_seconds: u64,
    /// With MODE=end-to-end: produce for this many seconds instead of NUM_RECORDS records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration: Option<u64>,
    /// The first seconds of a DURATION run, in its series but not in its figures.
    #[serde(default)]
    pub duration_warm_up: u64,
    /// Commit the measured code is at; names the results directory.
    pub commit_id: String,
    /// Apache Kafka (native) broker image.
    pub kafka_image: String,
    /// Kroxylicious proxy image.
    pub kroxylicious_image: String,
    /// Kafka tooling image.
    pub kafka_tool_image: String,
    /// HashiCorp Vault image.
    pub vault_image: String,
    /// What produces and consumes the measured records.
    pub driver: Driver,
    /// Whether the producer and the consumer run one after the other or at once.
    pub mode: Mode,
    /// Suite directory holding `suite.yaml` and the numbered scenario directories.
    pub scenarios: PathBuf,
    /// Directory the run's results directory is created in.
    pub results_dir: PathBuf,
    /// Settings measured at several values (see `crate::matrix`); the fields above hold each
    /// one's first value. Empty: every setting has one value.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub matrix: Vec<crate::matrix::Axis>,
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
    /// The documented defaults with the commit id [`UNKNOWN_COMMIT`] (nothing is run to find it).
    pub fn without_commit() -> Self {
        let scenarios = PathBuf::from(DEFAULT_SCENARIOS);
        Settings {
            test: DEFAULT_TEST.to_string(),
            num_records: DEFAULT_NUM_RECORDS,
            record_size: DEFAULT_RECORD_SIZE,
            warm_up_post_broker_start: DEFAULT_WARM_UP_POST_BROKER_START,
            warm_up_pre_test: DEFAULT_WARM_UP_PRE_TEST,
            warm_up_seconds_pre_test: DEFAULT_WARM_UP_SECONDS_PRE_TEST,
            services_cpuset: String::new(),
            workload_cpuset: String::new(),
            producer_properties: parse_properties(DEFAULT_PRODUCER_PROPERTIES)
                .expect("default producer properties parse"),
            throughput: DEFAULT_THROUGHPUT,
            repeat: DEFAULT_REPEAT,
            partitions: 1,
            topics: 1,
            producers: 1,
            consumers: 1,
            p99_limit_ms: None,
            catch_up_seconds: DEFAULT_CATCH_UP_SECONDS,
            duration: None,
            duration_warm_up: 0,
            commit_id: UNKNOWN_COMMIT.to_string(),
            kafka_image: DEFAULT_KAFKA_IMAGE.to_string(),
            kroxylicious_image: DEFAULT_KROXYLICIOUS_IMAGE.to_string(),
            kafka_tool_image: DEFAULT_KAFKA_TOOL_IMAGE.to_string(),
            vault_image: DEFAULT_VAULT_IMAGE.to_string(),
            driver: DEFAULT_DRIVER,
            mode: DEFAULT_MODE,
            scenarios,
            results_dir: PathBuf::from(DEFAULT_RESULTS_DIR),
            matrix: Vec::new(),
        }
    }

    /// Every setting under its environment-variable name, as Compose interpolation sees them.
    pub fn variables(&self) -> BTreeMap<String, String> {
        let pairs = [
            ("TEST", self.test.clone()),
            ("NUM_RECORDS", self.num_records.to_string()),
            ("RECORD_SIZE", self.record_size.to_string()),
            (
                "WARM_UP_NUM_RECORDS_POST_BROKER_START",
                self.warm_up_post_broker_start.to_string(),
            ),
            (
                "WARM_UP_NUM_RECORDS_PRE_TEST",
                self.warm_up_pre_test.to_string(),
            ),
            (
                "WARM_UP_SECONDS_PRE_TEST",
                self.warm_up_seconds_pre_test.to_string(),
            ),
            ("SERVICES_CPUSET", self.services_cpuset.clone()),
            ("WORKLOAD_CPUSET", self.workload_cpuset.clone()),
            (
                "PRODUCER_PROPERTIES",
                format_properties(&self.producer_properties),
            ),
            ("THROUGHPUT", self.throughput.to_string()),
            ("REPEAT", self.repeat.to_string()),
            ("PARTITIONS", self.partitions.to_string()),
            ("TOPICS", self.topics.to_string()),
            ("PRODUCERS", self.producers.to_string()),
            ("CONSUMERS", self.consumers.to_string()),
            (
                "P99_LIMIT_MS",
                self.p99_limit_ms.map(|l| l.to_string()).unwrap_or_default(),
            ),
            ("CATCH_UP_SECONDS", self.catch_up_seconds.to_string()),
            (
                "DURATION",
                self.duration.map(|d| d.to_string()).unwrap_or_default(),
            ),
            ("DURATION_WARM_UP", self.duration_warm_up.to_string()),
            ("COMMIT_ID", self.commit_id.clone()),
            ("KAFKA_IMAGE", self.kafka_image.clone()),
            ("KROXYLICIOUS_IMAGE", self.kroxylicious_image.clone()),
            ("KAFKA_TOOL_IMAGE", self.kafka_tool_image.clone()),
            ("VAULT_IMAGE", self.vault_image.clone()),
            ("DRIVER", self.driver.to_string()),
            ("MODE", self.mode.to_string()),
            ("SCENARIOS", self.scenarios.display().to_string()),
            ("RESULTS_DIR", self.results_dir.display().to_string()),
        ];
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }
}

/// Longest DURATION accepted: 30 days.
pub const MAX_DURATION_S: u64 = 30 * 24 * 3600;

/// Parses a time in whole seconds: `90`, `90s`, `10m`, `2h`, `1h30m`, `3d`. Errors name the
/// variable and the value.
pub fn parse_duration(var: &str, s: &str) -> Result<u64> {
    let fail = |why: &str| -> anyhow::Error {
        anyhow::anyhow!("{var}={s:?}: {why} (expected a time such as 90s, 10m, 2h, 1h30m or 3d)")
    };
    let t = s.trim();
    if t.is_empty() {
        return Err(fail("empty value"));
    }
    if let Ok(n) = t.parse::<u64>() {
        return (n <= MAX_DURATION_S)
            .then_some(n)
            .ok_or_else(|| fail("longer than 30 days"));
    }
    let mut total: u64 = 0;
    let mut digits = String::new();
    for c in t.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86400,
            _ => return Err(fail(&format!("unknown unit `{c}`"))),
        };
        let n: u64 = digits
            .parse()
            .map_err(|_| fail(&format!("no number before `{c}`")))?;
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| fail("longer than 30 days"))?;
        digits.clear();
    }
    if !digits.is_empty() {
        return Err(fail("a number without a unit after another"));
    }
    if total > MAX_DURATION_S {
        return Err(fail("longer than 30 days"));
    }
    Ok(total)
}

/// Parses a record count: `10000000`, `1_000_000`, `1e6`, `1E6` or `2.5e5`.
///
/// The value must be a whole number no larger than [`MAX_COUNT`]; zero only if `allow_zero`.
/// Errors name the variable and the value.
pub fn parse_count(var: &str, s: &str, allow_zero: bool) -> Result<u64> {
    let fail = |why: &str| -> anyhow::Error {
        anyhow::anyhow!(
            "{var}={s:?}: {why} (expected a whole number such as 10000000, 1_000_000 or 1e6)"
        )
    };
    let t = s.trim();
    if t.is_empty() {
        return Err(fail("empty value"));
    }
    if t.starts_with('-') {
        return Err(fail("negative values are not allowed"));
    }
    let (mantissa, exponent) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], Some(&t[i + 1..])),
        None => (t, None),
    };
    let (int_part, frac_part) = match mantissa.split_once('.') {
        Some((i, f)) => (i, f),
        None => (mantissa, ""),
    };
    let int_digits = digits(int_part).ok_or_else(|| fail("not a number"))?;
    let frac_digits = if frac_part.is_empty() && !mantissa.contains('.') {
        String::new()
    } else {
        digits(frac_part).ok_or_else(|| fail("not a number"))?
    };
    let exp: u32 = match exponent {
        None => 0,
        Some(e) => {
            let e = digits(e).ok_or_else(|| fail("bad exponent"))?;
            // Anything with an exponent this large is far beyond MAX_COUNT anyway.
            if e.len() > 3 {
                return Err(fail("too large"));
            }
            e.parse().map_err(|_| fail("bad exponent"))?
        }
    };
    // value = int_part.frac_part x 10^exp, computed exactly on integers.
    let frac_len = frac_digits.len() as u32;
    if frac_len > exp {
        let dropped = &frac_digits[exp as usize..];
        if dropped.bytes().any(|b| b != b'0') {
            return Err(fail("not a whole number"));
        }
    }
    let kept_frac = &frac_digits[..frac_len.min(exp) as usize];
    let all_digits = format!("{int_digits}{kept_frac}");
    let scale = exp.saturating_sub(frac_len);
    let significant = all_digits.trim_start_matches('0');
    if significant.len() as u32 + scale > 16 {
        return Err(fail("too large"));
    }
    let base: u128 = if significant.is_empty() {
        0
    } else {
        significant.parse().map_err(|_| fail("too large"))?
    };
    let value = base
        .checked_mul(10u128.pow(scale))
        .ok_or_else(|| fail("too large"))?;
    if value > MAX_COUNT as u128 {
        return Err(fail(&format!("too large (the limit is {MAX_COUNT})")));
    }
    if value == 0 && !allow_zero {
        return Err(fail("must be at least 1"));
    }
    Ok(value as u64)
}

/// The decimal digits of `s`, with `_` allowed only between digits; `None` if malformed.
fn digits(s: &str) -> Option<String> {
    if s.is_empty() || s.starts_with('_') || s.ends_with('_') || s.contains("__") {
        return None;
    }
    if !s.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        return None;
    }
    Some(s.replace('_', ""))
}

/// Parses `WARM_UP_SECONDS_PRE_TEST`: whole seconds from 0 (none) to
/// [`MAX_WARM_UP_SECONDS_PRE_TEST`].
pub fn parse_warm_up_seconds(s: &str) -> Result<u64> {
    let n = parse_count("WARM_UP_SECONDS_PRE_TEST", s, true)?;
    if n > MAX_WARM_UP_SECONDS_PRE_TEST {
        bail!(
            "WARM_UP_SECONDS_PRE_TEST={s:?}: too long (the limit is {MAX_WARM_UP_SECONDS_PRE_TEST} seconds)"
        );
    }
    Ok(n)
}

/// Parses `SERVICES_CPUSET` or `WORKLOAD_CPUSET`: a CPU list, or empty for none.
pub fn parse_cpuset(var: &str, s: &str) -> Result<String> {
    let t = s.trim();
    if !t.is_empty() && !crate::cpuset::is_cpu_list(t) {
        bail!("{var}={s:?}: expected CPU numbers and ranges such as 0, 0-1 or 0,2 (or nothing)");
    }
    Ok(t.to_string())
}

/// Parses `PARTITIONS` (up to [`MAX_PARTITIONS`]), `TOPICS` (up to [`MAX_TOPICS`]),
/// `PRODUCERS` or `CONSUMERS` (up to [`MAX_CLIENTS`]): a count from 1.
pub fn parse_clients(var: &str, s: &str) -> Result<u32> {
    let max = match var {
        "PARTITIONS" => MAX_PARTITIONS,
        "TOPICS" => MAX_TOPICS,
        _ => MAX_CLIENTS,
    };
    let n = parse_count(var, s, false)?;
    if n > u64::from(max) {
        bail!("{var}={s:?}: too large (the limit is {max})");
    }
    Ok(n as u32)
}

/// Parses `REPEAT`: a count from 1 to [`MAX_REPEAT`].
pub fn parse_repeat(s: &str) -> Result<u32> {
    let n = parse_count("REPEAT", s, false)?;
    if n > MAX_REPEAT as u64 {
        bail!("REPEAT={s:?}: too large (the limit is {MAX_REPEAT})");
    }
    Ok(n as u32)
}

/// Parses `THROUGHPUT`: `-1` (unlimited) or a positive count in any form [`parse_count`] accepts.
pub fn parse_throughput(s: &str) -> Result<i64> {
    if s.trim() == "-1" {
        return Ok(-1);
    }
    let n = parse_count("THROUGHPUT", s, false)
        .map_err(|e| anyhow::anyhow!("{e}; use -1 for unlimited"))?;
    Ok(n as i64)
}

/// Parses `PRODUCER_PROPERTIES`: space-separated `key=value` entries.
pub fn parse_properties(s: &str) -> Result<Vec<(String, String)>> {
    s.split_whitespace()
        .map(|entry| match entry.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => bail!("PRODUCER_PROPERTIES: malformed entry {entry:?} (expected key=value)"),
        })
        .collect()
}

/// Formats producer properties back into the `PRODUCER_PROPERTIES` form.
pub fn format_properties(props: &[(String, String)]) -> String {
    props
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `git rev-parse --short HEAD` in `dir` when it is inside a git checkout, else `unknown`.
pub fn detect_commit_id(dir: &Path) -> String {
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

#[cfg(test)]
mod duration_tests {
    use super::*;

    #[test]
    fn durations_read_in_units_and_bad_ones_name_the_variable() {
        assert_eq!(parse_duration("DURATION", "90").unwrap(), 90);
        assert_eq!(parse_duration("DURATION", "90s").unwrap(), 90);
        assert_eq!(parse_duration("DURATION", "10m").unwrap(), 600);
        assert_eq!(parse_duration("DURATION", "1h30m").unwrap(), 5400);
        assert_eq!(parse_duration("DURATION", "3d").unwrap(), 259_200);
        for bad in ["", "10x", "m", "1h30", "31d", "99999999999999999999s"] {
            let e = parse_duration("DURATION", bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("DURATION={bad:?}: ")), "{e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_in_every_accepted_form() {
        let cases = [
            ("10000000", 10_000_000),
            ("1e6", 1_000_000),
            ("1E6", 1_000_000),
            ("2.5e5", 250_000),
            ("1_000_000", 1_000_000),
            ("1.0", 1),
            ("1.50e1", 15),
            ("1e15", MAX_COUNT),
            (" 42 ", 42),
            ("007", 7),
        ];
        for (input, expected) in cases {
            assert_eq!(
                parse_count("NUM_RECORDS", input, false).unwrap(),
                expected,
                "{input}"
            );
        }
        assert_eq!(parse_count("WARM_UP", "0", true).unwrap(), 0);
        assert_eq!(parse_count("WARM_UP", "0e3", true).unwrap(), 0);
    }

    #[test]
    fn counts_rejected_with_variable_and_value() {
        let cases = [
            ("1.5", "not a whole number"),
            ("-1", "negative"),
            ("abc", "not a number"),
            ("1e30", "too large"),
            ("1e16", "too large"),
            ("1000000000000001", "too large"),
            ("99999999999999999999999999", "too large"),
            ("", "empty"),
            ("   ", "empty"),
            ("0", "at least 1"),
            ("0.0e5", "at least 1"),
            ("1e", "bad exponent"),
            ("1e-3", "bad exponent"),
            ("_1", "not a number"),
            ("1__0", "not a number"),
            ("1.", "not a number"),
            ("1,000", "not a number"),
            ("0x10", "not a number"),
        ];
        for (input, why) in cases {
            let err = parse_count("NUM_RECORDS", input, false)
                .unwrap_err()
                .to_string();
            assert!(err.contains("NUM_RECORDS"), "{input}: {err}");
            assert!(err.contains(&format!("{input:?}")), "{input}: {err}");
            assert!(err.contains(why), "{input}: {err}");
        }
    }

    #[test]
    fn throughput_is_minus_one_or_a_positive_count() {
        assert_eq!(parse_throughput("-1").unwrap(), -1);
        assert_eq!(parse_throughput("5e4").unwrap(), 50_000);
        for bad in ["0", "-2", "x", "1.5"] {
            let err = parse_throughput(bad).unwrap_err().to_string();
            assert!(err.contains("THROUGHPUT"), "{bad}: {err}");
        }
    }

    #[test]
    fn warm_up_seconds_are_bounded_and_may_be_zero() {
        assert_eq!(parse_warm_up_seconds("0").unwrap(), 0);
        assert_eq!(parse_warm_up_seconds("30").unwrap(), 30);
        for bad in ["3601", "-1", "ten", "1.5"] {
            let err = parse_warm_up_seconds(bad).unwrap_err().to_string();
            assert!(err.contains("WARM_UP_SECONDS_PRE_TEST"), "{bad}: {err}");
        }
    }

    #[test]
    fn cpusets_are_cpu_lists_or_nothing() {
        assert_eq!(parse_cpuset("WORKLOAD_CPUSET", " 1 ").unwrap(), "1");
        assert_eq!(parse_cpuset("WORKLOAD_CPUSET", "").unwrap(), "");
        let err = parse_cpuset("SERVICES_CPUSET", "0;1")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("SERVICES_CPUSET=\"0;1\": expected CPU numbers"),
            "{err}"
        );
    }

    #[test]
    fn repeat_is_a_bounded_positive_count() {
        assert_eq!(parse_repeat("5").unwrap(), 5);
        assert_eq!(parse_repeat("1e2").unwrap(), 100);
        for bad in ["0", "-1", "1e4", "x"] {
            let err = parse_repeat(bad).unwrap_err().to_string();
            assert!(err.contains("REPEAT"), "{bad}: {err}");
        }
    }

    #[test]
    fn producer_properties_parse_and_reject_malformed_entries() {
        assert_eq!(
            parse_properties("acks=all  linger.ms=5 empty=").unwrap(),
            vec![
                ("acks".to_string(), "all".to_string()),
                ("linger.ms".to_string(), "5".to_string()),
                ("empty".to_string(), String::new()),
            ]
        );
        assert!(parse_properties("").unwrap().is_empty());
        for bad in ["acks", "acks=all =x"] {
            let err = parse_properties(bad).unwrap_err().to_string();
            assert!(err.contains("PRODUCER_PROPERTIES"), "{err}");
        }
        let err = parse_properties("acks=all oops").unwrap_err().to_string();
        assert!(err.contains("\"oops\""), "{err}");
    }

    #[test]
    fn variables_name_every_setting() {
        let s = Settings {
            commit_id: "abc1234".into(),
            producer_properties: parse_properties("acks=1 linger.ms=5").unwrap(),
            ..Settings::default()
        };
        let v = s.variables();
        let keys: Vec<&str> = v.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "CATCH_UP_SECONDS",
                "COMMIT_ID",
                "CONSUMERS",
                "DRIVER",
                "DURATION",
                "DURATION_WARM_UP",
                "KAFKA_IMAGE",
                "KAFKA_TOOL_IMAGE",
                "KROXYLICIOUS_IMAGE",
                "MODE",
                "NUM_RECORDS",
                "P99_LIMIT_MS",
                "PARTITIONS",
                "PRODUCERS",
                "PRODUCER_PROPERTIES",
                "RECORD_SIZE",
                "REPEAT",
                "RESULTS_DIR",
                "SCENARIOS",
                "SERVICES_CPUSET",
                "TEST",
                "THROUGHPUT",
                "TOPICS",
                "VAULT_IMAGE",
                "WARM_UP_NUM_RECORDS_POST_BROKER_START",
                "WARM_UP_NUM_RECORDS_PRE_TEST",
                "WARM_UP_SECONDS_PRE_TEST",
                "WORKLOAD_CPUSET",
            ]
        );
        assert_eq!(v["PRODUCER_PROPERTIES"], "acks=1 linger.ms=5");
        assert_eq!(v["NUM_RECORDS"], "10000000");
        assert_eq!(v["THROUGHPUT"], "-1");
        assert_eq!(v["COMMIT_ID"], "abc1234");
        assert_eq!(v["SCENARIOS"], "scenarios/kroxylicious");
        assert_eq!(v["DRIVER"], "native");
    }

    #[test]
    fn driver_is_native_or_kafka_tools() {
        assert_eq!(parse_driver("native").unwrap(), Driver::Native);
        assert_eq!(parse_driver("kafka-tools").unwrap(), Driver::KafkaTools);
        assert_eq!(Driver::KafkaTools.to_string(), "kafka-tools");
        let err = parse_driver("rdkafka").unwrap_err().to_string();
        assert!(
            err.contains("DRIVER=\"rdkafka\"") && err.contains("kafka-tools"),
            "{err}"
        );
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
