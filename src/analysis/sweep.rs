//! Rate sweeps: the producer's THROUGHPUT raised step by step until the path cannot keep up,
//! and the highest rate each scenario sustained.
//!
//! A rate is sustained when the producer reached at least 95% of it ([`TARGET_SHARE`]) and, when
//! `P99_LIMIT_MS` is set, its 99th percentile (from the intended send times where measured)
//! stayed within the limit. `perf-tests sweep` measures ascending rates as a THROUGHPUT matrix
//! and stops raising a scenario's rate at the first one it does not sustain; any run whose
//! matrix varies THROUGHPUT gets the same table.

use anyhow::{bail, Result};

use crate::model::{lines_over, Line, Measurement, ScenarioResult, TARGET_SHARE};
use crate::settings::matrix::Combination;

/// The setting a sweep varies.
pub(crate) const VAR: &str = "THROUGHPUT";
/// Most rates one sweep may measure.
pub(crate) const MAX_STEPS: u64 = 100;

/// `steps` rates from `from` to `to` records/s, evenly spaced and rounded to whole records.
pub(crate) fn rates(from: u64, to: u64, steps: u64) -> Result<Vec<u64>> {
    if from == 0 {
        bail!("--from 0: a sweep starts at 1 record/s or more");
    }
    if to < from {
        bail!("--to {to} is below --from {from}: a sweep raises the rate");
    }
    if !(1..=MAX_STEPS).contains(&steps) {
        bail!("--steps {steps}: expected 1 to {MAX_STEPS}");
    }
    if steps == 1 || from == to {
        return Ok(vec![to]);
    }
    let mut out: Vec<u64> = (0..steps)
        .map(|k| from + ((to - from) as f64 * k as f64 / (steps - 1) as f64).round() as u64)
        .collect();
    out.dedup();
    Ok(out)
}

/// The producer's 99th percentile: from the intended send times where measured, else from the
/// send calls.
pub(crate) fn p99(m: &Measurement) -> f64 {
    m.producer
        .intended
        .as_ref()
        .map_or(m.producer.p99_ms, |i| i.p99_ms)
}

/// Why a measurement at a THROUGHPUT target did not sustain it; `None` when it did, or when it
/// had no target.
pub(crate) fn shortfall(m: &Measurement, p99_limit_ms: Option<u64>) -> Option<String> {
    let target = m.producer.target_rec_s;
    if target <= 0.0 {
        return None;
    }
    let rate = m.producer.rate_rec_s;
    if rate < TARGET_SHARE * target {
        return Some(format!(
            "reached {rate:.0} rec/s, {:.0}% of the target",
            rate / target * 100.0
        ));
    }
    match p99_limit_ms {
        Some(limit) if p99(m) > limit as f64 => {
            Some(format!("p99 {:.1} ms over P99_LIMIT_MS={limit}", p99(m)))
        }
        _ => None,
    }
}

/// A line's rates in rising order, split where it stopped keeping up: the rates sustained below
/// the first that was not, and that first one with why (`None` when every rate was).
pub(crate) struct Climb<'a> {
    pub sustained: Vec<(i64, &'a ScenarioResult)>,
    pub ceiling: Option<(i64, String)>,
}

impl<'a> Climb<'a> {
    /// Sorts `points` (rate, result) and climbs them, each judged by its summary.
    pub(crate) fn of(
        mut points: Vec<(i64, &'a ScenarioResult)>,
        p99_limit_ms: Option<u64>,
    ) -> Climb<'a> {
        points.sort_by_key(|(rate, _)| *rate);
        let mut sustained = Vec::new();
        for (rate, r) in points {
            if let Some(why) = shortfall(&r.measurement, p99_limit_ms) {
                return Climb {
                    sustained,
                    ceiling: Some((rate, why)),
                };
            }
            sustained.push((rate, r));
        }
        Climb {
            sustained,
            ceiling: None,
        }
    }
}

/// The combination without the rate: what a line of a sweep shares.
pub(crate) fn line_of(combination: &Combination) -> Combination {
    let mut rest = combination.clone();
    rest.remove(VAR);
    rest
}

/// Per scenario (and combination of the other varying settings), its climb over the positive
/// THROUGHPUTs it ran: the rates sustained below the first that was not (a rate counting as
/// sustained only within `p99_limit_ms` when given), and that first rate with the reason; only
/// the lines that ran any such rate. `None` unless THROUGHPUT varied (a matrix over it, or a
/// sweep), and for a catch-up, whose THROUGHPUT is its live producer's rate, not one the path
/// had to sustain.
pub(crate) fn climbs(
    results: &[ScenarioResult],
    p99_limit_ms: Option<u64>,
) -> Option<Vec<(Line<'_>, Climb<'_>)>> {
    if results
        .iter()
        .any(|r| r.measurement.consumer.catch_up.is_some())
    {
        return None;
    }
    let lines: Vec<(Line, Climb)> = lines_over(results, VAR)
        .into_iter()
        .map(|l| {
            let rates: Vec<(i64, &ScenarioResult)> = l
                .points
                .iter()
                .filter_map(|(v, r)| Some((v.parse::<i64>().ok().filter(|v| *v > 0)?, *r)))
                .collect();
            let climb = Climb::of(rates, p99_limit_ms);
            (l, climb)
        })
        .filter(|(_, c)| !c.sustained.is_empty() || c.ceiling.is_some())
        .collect();
    // A sweep stopped at its first rate has one point a line, and still its table.
    (!lines.is_empty()).then_some(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    // The sweep's table is drawn in `present`; its rows state the climbs read here.
    use crate::present::report::sweep_table as table;

    #[test]
    fn rates_are_evenly_spaced_and_bounded() {
        assert_eq!(
            rates(1000, 5000, 5).unwrap(),
            [1000, 2000, 3000, 4000, 5000]
        );
        assert_eq!(rates(1000, 2000, 3).unwrap(), [1000, 1500, 2000]);
        assert_eq!(rates(10, 10, 4).unwrap(), [10]);
        assert_eq!(rates(1, 3, 10).unwrap(), [1, 2, 3]);
        for (from, to, steps, why) in [
            (0, 10, 2, "--from 0"),
            (20, 10, 2, "below --from"),
            (1, 10, 0, "--steps 0"),
            (1, 10, 101, "--steps 101"),
        ] {
            let err = rates(from, to, steps).unwrap_err().to_string();
            assert!(err.contains(why), "{err}");
        }
    }

    /// The sample's rows at `rate` achieving `achieved` of it, with p99 `p99` ms.
    fn at(rate: i64, achieved: f64, p99: f64) -> Vec<ScenarioResult> {
        crate::present::report::tests::sample()
            .into_iter()
            .map(|mut r| {
                r.combination.insert(VAR.into(), rate.to_string());
                r.measurement.producer.target_rec_s = rate as f64;
                r.measurement.producer.rate_rec_s = rate as f64 * achieved;
                r.measurement.producer.p99_ms = p99;
                r
            })
            .collect()
    }

    #[test]
    fn the_highest_rate_below_the_first_shortfall_is_the_sustained_one() {
        let mut results = at(1000, 1.0, 5.0);
        results.extend(at(2000, 0.99, 40.0));
        results.extend(at(3000, 0.7, 900.0));
        let t = table(&results, None).unwrap();
        assert_eq!(
            t.columns,
            [
                "Name",
                "Sustained rec/s",
                "P99 ms there",
                "Path mc per MB/s there",
                "Not sustained rec/s",
                "Why not"
            ]
        );
        assert_eq!(t.rows.len(), 2);
        // (the sample measured no cost)
        assert_eq!(
            t.rows[0][..5],
            ["01-no-proxy-baseline", "2000", "40.0", "n/a", "3000"]
        );
        assert_eq!(t.rows[0][5], "reached 2100 rec/s, 70% of the target");
        // With a latency limit, 2000 rec/s is not sustained either.
        let t = table(&results, Some(20)).unwrap();
        assert_eq!(t.rows[0][1..5], ["1000", "5.0", "n/a", "2000"]);
        assert_eq!(t.rows[0][5], "p99 40.0 ms over P99_LIMIT_MS=20");
        // Every rate sustained says so.
        let mut easy = at(1000, 1.0, 5.0);
        easy.extend(at(2000, 1.0, 5.0));
        let t = table(&easy, None).unwrap();
        assert_eq!(t.rows[0][4], "none measured");
        // A sweep that stopped at its first rate still says so.
        let t = table(&at(1000, 1.0, 50.0), Some(20)).unwrap();
        assert_eq!(t.rows[0][1], "none");
        assert_eq!(t.rows[0][5], "p99 50.0 ms over P99_LIMIT_MS=20");
        // THROUGHPUT did not vary: no sweep table.
        assert!(table(&crate::present::report::tests::sample(), None).is_none());
    }

    #[test]
    fn the_paths_cost_is_shown_at_the_sustained_rate() {
        use crate::accounting::cost::{PhaseCost, Role, ServiceCost};
        let mut results = at(1000, 1.0, 5.0);
        results.extend(at(2000, 1.0, 6.0));
        for r in results.iter_mut().filter(|r| r.name == "02-no-filters") {
            let rate: f64 = r.combination[VAR].parse().unwrap();
            // The proxy: 1 ms of CPU per MB at 1000 rec/s, 0.5 at 2000 (bigger batches).
            r.measurement.cost = vec![PhaseCost {
                phase: "produce".into(),
                records: 1000,
                record_bytes: 1_000_000,
                seconds: 1.0,
                start_unix_s: None,
                host_steal_percent: None,
                services: vec![ServiceCost {
                    service: "proxy".into(),
                    role: Role::Path,
                    cpu_s: 1000.0 / rate,
                    rx_bytes: 0,
                    tx_bytes: 0,
                    gc: None,
                    threads: None,
                }],
            }];
        }
        let t = table(&results, None).unwrap();
        let row = t.rows.iter().find(|r| r[0] == "02-no-filters").unwrap();
        assert_eq!(row[1..4], ["2000", "6.0", "500.00"]);
    }

    #[test]
    fn unthrottled_measurements_have_no_shortfall() {
        let r = &crate::present::report::tests::sample()[0];
        assert_eq!(shortfall(&r.measurement, Some(1)), None);
    }
}
