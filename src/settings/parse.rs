//! Parsers of settings' texts: each error names the variable and the value.

use anyhow::{bail, Result};

use super::{
    MAX_CLIENTS, MAX_COUNT, MAX_DURATION_S, MAX_PARTITIONS, MAX_REPEAT, MAX_TOPICS,
    MAX_WARM_UP_SECONDS_PRE_TEST,
};
use crate::settings::rate::Rate;

/// Parses a time in whole seconds: `90`, `90s`, `10m`, `2h`, `1h30m`, `3d`. Errors name the
/// variable and the value.
pub(crate) fn parse_duration(var: &str, s: &str) -> Result<u64> {
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
pub(crate) fn parse_count(var: &str, s: &str, allow_zero: bool) -> Result<u64> {
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
pub(crate) fn parse_warm_up_seconds(s: &str) -> Result<u64> {
    let n = parse_count("WARM_UP_SECONDS_PRE_TEST", s, true)?;
    if n > MAX_WARM_UP_SECONDS_PRE_TEST {
        bail!(
            "WARM_UP_SECONDS_PRE_TEST={s:?}: too long (the limit is {MAX_WARM_UP_SECONDS_PRE_TEST} seconds)"
        );
    }
    Ok(n)
}

/// Parses a whole percent from 0 to 100 (`WARM_UP_JIT_PERCENT`).
pub(crate) fn parse_percent(var: &str, s: &str) -> Result<u64> {
    let n = parse_count(var, s, true)?;
    if n > 100 {
        bail!("{var}={s:?}: a percent is at most 100");
    }
    Ok(n)
}

/// Parses `SERVICES_CPUSET` or `WORKLOAD_CPUSET`: a CPU list, or empty for none.
pub(crate) fn parse_cpuset(var: &str, s: &str) -> Result<String> {
    let t = s.trim();
    if !t.is_empty() && !crate::settings::cpuset::is_cpu_list(t) {
        bail!("{var}={s:?}: expected CPU numbers and ranges such as 0, 0-1 or 0,2 (or nothing)");
    }
    Ok(t.to_string())
}

/// Parses `PARTITIONS` (up to [`MAX_PARTITIONS`]), `TOPICS` (up to [`MAX_TOPICS`]),
/// `PRODUCERS` or `CONSUMERS` (up to [`MAX_CLIENTS`]): a count from 1.
pub(crate) fn parse_clients(var: &str, s: &str) -> Result<u32> {
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
pub(crate) fn parse_repeat(s: &str) -> Result<u32> {
    parse_bounded("REPEAT", s, MAX_REPEAT)
}

/// Parses `var`'s count of at least 1 and at most `max`.
pub(crate) fn parse_bounded(var: &str, s: &str, max: u32) -> Result<u32> {
    let n = parse_count(var, s, false)?;
    if n > max as u64 {
        bail!("{var}={s:?}: too large (the limit is {max})");
    }
    Ok(n as u32)
}

/// Parses `THROUGHPUT`: `-1` (unlimited) or a positive count in any form [`parse_count`] accepts.
pub(crate) fn parse_throughput(s: &str) -> Result<Rate> {
    if s.trim() == "-1" {
        return Ok(Rate::Unlimited);
    }
    let n = parse_count("THROUGHPUT", s, false)
        .map_err(|e| anyhow::anyhow!("{e}; use -1 for unlimited"))?;
    Ok(Rate::per_second(n).expect("a count is at least 1"))
}

/// Parses `PRODUCER_PROPERTIES`: space-separated `key=value` entries.
pub(crate) fn parse_properties(s: &str) -> Result<Vec<(String, String)>> {
    s.split_whitespace()
        .map(|entry| match entry.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => bail!("PRODUCER_PROPERTIES: malformed entry {entry:?} (expected key=value)"),
        })
        .collect()
}

/// Formats producer properties back into the `PRODUCER_PROPERTIES` form.
pub(crate) fn format_properties(props: &[(String, String)]) -> String {
    props
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Parses `SWARM_ROLES`: comma-separated `service=role` pairs, each service once; a role is a
/// node label's value (letters, digits, `-`, `_`, `.`).
pub(crate) fn parse_roles(var: &str, s: &str) -> Result<Vec<(String, String)>> {
    let mut roles: Vec<(String, String)> = Vec::new();
    for entry in s.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let Some((service, role)) = entry.split_once('=') else {
            bail!("{var}={s:?}: {entry:?} is not service=role");
        };
        let (service, role) = (service.trim(), role.trim());
        let label_value = |t: &str| {
            !t.is_empty()
                && t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        if !label_value(service) || !label_value(role) {
            bail!("{var}={s:?}: {entry:?} is not service=role (names of letters, digits, -, _, .)");
        }
        if roles.iter().any(|(k, _)| k == service) {
            bail!("{var}={s:?}: {service} is placed twice");
        }
        roles.push((service.to_string(), role.to_string()));
    }
    Ok(roles)
}

/// A registry's address as image names begin with it: `host[:port][/path]`, a host of letters,
/// digits, `.` and `-`, a path of lowercase components; no scheme (the engine chooses HTTPS, or
/// HTTP for a registry it is told is insecure) and no tag.
pub(crate) fn parse_registry(var: &str, s: &str) -> Result<String> {
    let v = s.trim().trim_end_matches('/');
    if let Some((scheme, _)) = v.split_once("://") {
        bail!(
            "{var}={s:?}: a registry is named without a scheme ({scheme}://): host[:port][/path], \
             e.g. registry.example:5000"
        );
    }
    let (address, path) = v.split_once('/').unwrap_or((v, ""));
    let (host, port) = address.split_once(':').unwrap_or((address, ""));
    let host_ok = !host.is_empty()
        && host
            .split('.')
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    let port_ok =
        port.is_empty() && !address.contains(':') || port.parse::<u16>().is_ok_and(|p| p > 0);
    let path_ok = path.is_empty()
        || path.split('/').all(|c| {
            !c.is_empty()
                && c.chars().all(|ch| {
                    ch.is_ascii_lowercase() || ch.is_ascii_digit() || matches!(ch, '.' | '_' | '-')
                })
        });
    if !(host_ok && port_ok && path_ok) {
        bail!(
            "{var}={s:?} is not a registry address: host[:port][/path] (a host name or address, \
             a port from 1 to 65535, a path of lowercase letters, digits, ., _ and -)"
        );
    }
    Ok(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registries_are_addresses_without_scheme_and_bad_ones_name_the_variable() {
        for ok in [
            "10.213.0.1:5000",
            "registry.example",
            "reg:5000/perf/tests",
            "reg/",
        ] {
            assert!(parse_registry("REGISTRY", ok).is_ok(), "{ok}");
        }
        assert_eq!(
            parse_registry("REGISTRY", " reg:5000/ ").unwrap(),
            "reg:5000"
        );
        let e = parse_registry("REGISTRY", "http://reg:5000")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("REGISTRY=\"http://reg:5000\": a registry is named without a scheme"),
            "{e}"
        );
        for bad in [
            "reg:0",
            "reg:x",
            "reg:",
            ":5000",
            "reg/Upper",
            "reg//x",
            "re g",
            "reg:5000:1",
        ] {
            let e = parse_registry("REGISTRY", bad).unwrap_err().to_string();
            assert!(e.contains("is not a registry address"), "{bad}: {e}");
        }
    }

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
        assert_eq!(parse_throughput("-1").unwrap(), Rate::Unlimited);
        assert_eq!(parse_throughput("5e4").unwrap().limit(), Some(50_000));
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
    fn percents_are_whole_and_at_most_a_hundred() {
        assert_eq!(parse_percent("WARM_UP_JIT_PERCENT", "0").unwrap(), 0);
        assert_eq!(parse_percent("WARM_UP_JIT_PERCENT", "100").unwrap(), 100);
        for bad in ["101", "-1", "5%", "2.5"] {
            let err = parse_percent("WARM_UP_JIT_PERCENT", bad)
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&format!("WARM_UP_JIT_PERCENT={bad:?}")),
                "{err}"
            );
        }
        // The help states the limit the warm-up keeps to.
        let help = crate::settings::SETTINGS
            .iter()
            .find(|s| s.var == "WARM_UP_JIT_PERCENT")
            .unwrap()
            .help;
        let limit = crate::settings::WARM_UP_JIT_LIMIT_SECONDS;
        let window = crate::settings::WARM_UP_JIT_WINDOW_SECONDS;
        assert!(help.contains(&format!("at most {limit} s more")), "{help}");
        assert!(
            help.contains(&format!("over the last {window} s")),
            "{help}"
        );
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
        let err = parse_bounded("PAIR_PHASES", "101", 100).unwrap_err();
        assert_eq!(
            err.to_string(),
            "PAIR_PHASES=\"101\": too large (the limit is 100)"
        );
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
    fn roles_are_service_role_pairs_each_service_once() {
        assert_eq!(
            parse_roles("SWARM_ROLES", " kms=broker, load=load2 ").unwrap(),
            [
                ("kms".to_string(), "broker".to_string()),
                ("load".to_string(), "load2".to_string())
            ]
        );
        assert!(parse_roles("SWARM_ROLES", "").unwrap().is_empty());
        for bad in ["kms", "kms=", "=broker", "kms=a b", "kms=a,kms=b"] {
            let e = parse_roles("SWARM_ROLES", bad).unwrap_err().to_string();
            assert!(e.starts_with("SWARM_ROLES="), "{bad}: {e}");
        }
    }
}
