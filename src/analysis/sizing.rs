//! What a sizing run (`perf-tests sizing`) states, computed from its results: a rate sweep,
//! repeated, whose every sustained repetition gives the path's coefficient (millicores of its
//! own services per MB/s of produce + consume traffic, as the Kroxylicious sizing guide counts
//! it), pooled over repetitions and rates into a mean with its 95% interval; the latency the
//! path adds at each rate against its suite's reference scenario, from repetitions of the same
//! round paired; the highest rate sustained; and the cores a given traffic needs.
//!
//! A repetition counts only at a rate below the line's first unsustained one and when it
//! reached that rate itself: at saturation the CPU is capped and the ratio means nothing.

use serde::{Deserialize, Serialize};

use crate::accounting::cost;
use crate::accounting::stats::{Fit, Interval};
use crate::analysis::sweep::{self, shortfall, Climb};
use crate::model::run::SizingRequest;
use crate::model::{Measurement, ScenarioResult};

/// The sizing of every line (a scenario at one combination of the other varying settings).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct Sizing {
    pub request: SizingRequest,
    pub lines: Vec<LineSizing>,
    /// Lines that could not be sized, and why.
    pub warnings: Vec<String>,
}

/// One line's sizing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct LineSizing {
    /// The scenario's name, with the other varying settings' values.
    pub name: String,
    /// Millicores of the path's own services per MB/s of produce + consume traffic, over every
    /// sustained repetition at every sustained rate; `None` without a path of its own (the
    /// reference) or with fewer than two such repetitions.
    pub coefficient: Option<Interval>,
    /// The same per MB/s produced, and per MB/s consumed, each over its own phase.
    pub produce: Option<Interval>,
    pub consume: Option<Interval>,
    /// The path's cores against its traffic (MB/s produced + consumed), one point per
    /// sustained repetition, fitted by a line: its slope is the marginal cost (millicores per
    /// MB/s: what one more MB/s costs) and its intercept the cores the path uses carrying
    /// nothing (a JVM's timers, GC, the proxy's own polling), which the coefficient spreads
    /// over the traffic and so overstates at low rates. `None` without three such points at two
    /// rates or more.
    pub marginal: Option<Interval>,
    pub idle_cores: Option<Interval>,
    /// Cores of the path's own services the request's traffic needs: the fitted line's value
    /// there when there is one (`by_fit`), else coefficient x traffic.
    pub cores: Option<Interval>,
    pub by_fit: bool,
    /// The most traffic (MB/s) any sustained repetition carried: beyond it the cores are
    /// extrapolated.
    pub max_traffic_mb_s: Option<f64>,
    /// The highest rate sustained (records/s), if any.
    pub sustained_rec_s: Option<i64>,
    /// The first rate not sustained, with why; `None` when every rate was.
    pub ceiling: Option<(i64, String)>,
    /// Each sustained rate.
    pub rates: Vec<RateSizing>,
}

/// A line at one sustained rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct RateSizing {
    pub rate_rec_s: i64,
    /// The coefficient over this rate's sustained repetitions.
    pub coefficient: Option<Interval>,
    /// The reference scenario the latency is added to, when the suite has one measured here.
    pub against: Option<String>,
    /// The 50th and 99th percentiles (from the intended send times where measured) minus the
    /// reference's in the same round, over the rounds.
    pub added_p50_ms: Option<Interval>,
    pub added_p99_ms: Option<Interval>,
    /// The median share of the hosts' CPU stolen over this rate's measured phases (see
    /// [`cost::PhaseCost::host_steal_percent`]): a coefficient read on a busier host is higher.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_steal_percent: Option<f64>,
}

/// The producer's latency percentile `q` (50 or 99): from the intended send times where
/// measured, else from the send calls.
fn latency(m: &Measurement, q: u8) -> f64 {
    match (&m.producer.intended, q) {
        (Some(i), 50) => i.p50_ms,
        (Some(i), _) => i.p99_ms,
        (None, 50) => m.producer.p50_ms,
        (None, _) => m.producer.p99_ms,
    }
}

/// The repetitions of `r` that reached their rate themselves.
fn reached(r: &ScenarioResult, p99_limit_ms: Option<u64>) -> Vec<&Measurement> {
    r.all_measurements()
        .into_iter()
        .filter(|m| shortfall(m, p99_limit_ms).is_none())
        .collect()
}

/// The interval of the mean of `f` over `reps`, leaving out those that lack it.
fn mean_of(reps: &[&Measurement], f: impl Fn(&Measurement) -> Option<f64>) -> Option<Interval> {
    Interval::of_mean(&reps.iter().filter_map(|m| f(m)).collect::<Vec<_>>())
}

/// The sizing of `results` (a sizing run's).
pub(crate) fn analyse(
    results: &[ScenarioResult],
    request: &SizingRequest,
    p99_limit_ms: Option<u64>,
) -> Sizing {
    let coefficient = |m: &Measurement| cost::path_coefficient(&m.cost);
    let mut lines = Vec::new();
    let mut warnings = Vec::new();
    for (label, points) in by_line(results) {
        let Climb { sustained, ceiling } = Climb::of(points, p99_limit_ms);
        if let (None, Some((lowest, _))) = (sustained.first(), &ceiling) {
            warnings.push(format!(
                "{label}: no rate below the ceiling (the lowest, {lowest} rec/s, was not \
                 sustained): lower --from (now {})",
                request.from
            ));
        }
        // Every repetition that reached its rate, at every sustained rate.
        let all: Vec<&Measurement> = sustained
            .iter()
            .flat_map(|(_, r)| reached(r, p99_limit_ms))
            .collect();
        let coefficient_all = mean_of(&all, coefficient);
        let has_path = all.iter().any(|m| coefficient(m).is_some());
        if !sustained.is_empty() && has_path && coefficient_all.is_none() {
            warnings.push(format!(
                "{label}: one sustained repetition only: no interval (give REPEAT 2 or more, or \
                 more rates below the ceiling)"
            ));
        }
        let rates = sustained
            .iter()
            .map(|(rate, r)| rate_sizing(*rate, r, results, p99_limit_ms))
            .collect();
        let load: Vec<(f64, f64)> = all.iter().filter_map(|m| traffic_and_cores(m)).collect();
        let fit = Fit::of(&load);
        let max_traffic = load.iter().map(|p| p.0).reduce(f64::max);
        let t = request.traffic_mb_s;
        if let (Some(max), true) = (max_traffic, fit.is_some() || coefficient_all.is_some()) {
            if t > max {
                warnings.push(format!(
                    "{label}: --traffic {t} MB/s is beyond the most it carried ({max:.2} MB/s): \
                     its cores there are extrapolated"
                ));
            }
        }
        lines.push(LineSizing {
            name: label,
            marginal: fit.map(|f| f.slope.scaled(1000.0)),
            idle_cores: fit.map(|f| f.intercept),
            cores: fit
                .map(|f| f.at(t))
                .or(coefficient_all.map(|c| c.scaled(t / 1000.0))),
            by_fit: fit.is_some(),
            max_traffic_mb_s: max_traffic,
            coefficient: coefficient_all,
            produce: mean_of(&all, |m| cost::phase_coefficient(&m.cost, "produce")),
            consume: mean_of(&all, |m| cost::phase_coefficient(&m.cost, "consume")),
            sustained_rec_s: sustained.last().map(|(rate, _)| *rate),
            ceiling,
            rates,
        });
    }
    Sizing {
        request: request.clone(),
        lines,
        warnings,
    }
}

/// A repetition's traffic through the path (MB/s of records, produced + consumed) and the
/// cores its own services used, over all its measured phases; `None` without a path or a cost.
fn traffic_and_cores(m: &Measurement) -> Option<(f64, f64)> {
    let load = cost::PathLoad::of(&m.cost)?;
    (load.seconds > 0.0).then(|| (load.traffic_mb / load.seconds, load.cpu_s / load.seconds))
}

/// The results by line (a scenario at one combination of the settings other than THROUGHPUT),
/// each with its rate: THROUGHPUT's value where a matrix varied it, else the target measured
/// (a sizing run of one rate). Results without a target are no part of a sizing.
fn by_line(results: &[ScenarioResult]) -> Vec<(String, Vec<(i64, &ScenarioResult)>)> {
    let mut out: Vec<(String, Vec<(i64, &ScenarioResult)>)> = Vec::new();
    for r in results {
        let rate = r
            .combination
            .get(sweep::VAR)
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(r.measurement.producer.target_rec_s as i64);
        if rate <= 0 {
            continue;
        }
        let label = crate::model::row_label(&r.name, &sweep::line_of(&r.combination));
        match out.iter_mut().find(|(l, _)| *l == label) {
            Some((_, points)) => points.push((rate, r)),
            None => out.push((label, vec![(rate, r)])),
        }
    }
    out
}

/// One line at one sustained rate: its coefficient, and the latency it adds to the reference
/// scenario measured at the same combination, repetition by repetition (the same round).
fn rate_sizing(
    rate: i64,
    r: &ScenarioResult,
    results: &[ScenarioResult],
    p99_limit_ms: Option<u64>,
) -> RateSizing {
    let reps = r.all_measurements();
    let coefficient = mean_of(&reached(r, p99_limit_ms), |m| {
        cost::path_coefficient(&m.cost)
    });
    let reference = (!r.reference)
        .then(|| {
            results
                .iter()
                .find(|b| b.reference && b.combination == r.combination)
        })
        .flatten();
    let added = |q: u8| {
        let base = reference?.all_measurements();
        let d: Vec<f64> = reps
            .iter()
            .zip(&base)
            .filter(|(m, b)| {
                shortfall(m, p99_limit_ms).is_none() && shortfall(b, p99_limit_ms).is_none()
            })
            .map(|(m, b)| latency(m, q) - latency(b, q))
            .collect();
        Interval::of_mean(&d)
    };
    RateSizing {
        rate_rec_s: rate,
        coefficient,
        against: reference.map(|b| b.name.clone()),
        added_p50_ms: added(50),
        added_p99_ms: added(99),
        host_steal_percent: cost::median_steal(reps.iter().flat_map(|m| &m.cost)),
    }
}

impl Sizing {
    /// Whether any line sustained a rate: a sizing run with none has nothing to state.
    pub(crate) fn sized_any(&self) -> bool {
        self.lines.iter().any(|l| l.sustained_rec_s.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::cost::{PhaseCost, Role, ServiceCost};
    use crate::present::export::sizing::tables;

    /// The sample's scenarios (01 the reference, 02 a proxy) at `rate`, each repetition i
    /// reaching `achieved` of it, 02's proxy using `cpu_s[i]` CPU seconds per phase of 100 MB
    /// and adding `added_ms` to 01's p99.
    fn at(rate: i64, achieved: f64, cpu_s: &[f64], added_ms: f64) -> Vec<ScenarioResult> {
        crate::present::report::tests::sample()
            .into_iter()
            .map(|mut r| {
                r.reference = r.name == "01-no-proxy-baseline";
                r.combination.insert(sweep::VAR.into(), rate.to_string());
                let proxy = r.name == "02-no-filters";
                r.repetitions = cpu_s
                    .iter()
                    .enumerate()
                    .map(|(i, cpu)| {
                        let mut m = r.measurement.clone();
                        m.producer.target_rec_s = rate as f64;
                        m.producer.rate_rec_s = rate as f64 * achieved;
                        m.producer.p99_ms = 10.0 + i as f64 + if proxy { added_ms } else { 0.0 };
                        let mut services = vec![ServiceCost {
                            service: "kafka".into(),
                            role: Role::RunWide,
                            cpu_s: 3.0,
                            rx_bytes: 0,
                            tx_bytes: 0,
                            gc: None,
                            threads: None,
                        }];
                        if proxy {
                            services.push(ServiceCost {
                                service: "proxy".into(),
                                role: Role::Path,
                                cpu_s: *cpu,
                                rx_bytes: 0,
                                tx_bytes: 0,
                                gc: None,
                                threads: None,
                            });
                        }
                        m.cost = ["produce", "consume"]
                            .map(|phase| PhaseCost {
                                phase: phase.into(),
                                records: 100_000,
                                record_bytes: 100_000_000,
                                seconds: 100_000.0 / rate as f64,
                                start_unix_s: None,
                                host_steal_percent: None,
                                services: services.clone(),
                            })
                            .to_vec();
                        m
                    })
                    .collect();
                r.measurement = Measurement::summary(&r.repetitions);
                r
            })
            .collect()
    }

    fn request() -> SizingRequest {
        SizingRequest {
            traffic_mb_s: 100.0,
            from: 1000,
        }
    }

    #[test]
    fn the_coefficient_pools_every_sustained_repetition_below_the_ceiling() {
        let mut results = at(1000, 1.0, &[0.9, 1.1], 2.0);
        results.extend(at(2000, 0.99, &[1.0, 1.2], 3.0));
        // Saturated: the CPU is capped there, its ratio left out.
        results.extend(at(3000, 0.7, &[5.0, 5.0], 40.0));
        let s = analyse(&results, &request(), None);
        assert!(s.sized_any());
        let proxy = s.lines.iter().find(|l| l.name == "02-no-filters").unwrap();
        // 2 x cpu over 200 MB: 10 x cpu millicores per MB/s, over 4 repetitions.
        let c = proxy.coefficient.unwrap();
        assert_eq!(c.n, 4);
        assert!((c.mean - 10.5).abs() < 1e-9, "{c:?}");
        assert!(c.low < c.mean && c.high > c.mean);
        assert!((proxy.produce.unwrap().mean - 10.5).abs() < 1e-9);
        // 100 MB/s is far beyond the 2 MB/s measured: said so.
        assert!(
            proxy.by_fit && proxy.max_traffic_mb_s == Some(2.0),
            "{proxy:?}"
        );
        assert_eq!(proxy.sustained_rec_s, Some(2000));
        assert_eq!(proxy.ceiling.as_ref().unwrap().0, 3000);
        // Added latency, by rate, paired round by round against the reference.
        assert_eq!(proxy.rates.len(), 2);
        let r = &proxy.rates[1];
        assert_eq!(r.against.as_deref(), Some("01-no-proxy-baseline"));
        let added = r.added_p99_ms.unwrap();
        assert!(
            (added.mean - 3.0).abs() < 1e-9 && added.high - added.low < 1e-9,
            "{added:?}"
        );
        // The reference has no path of its own: no coefficient, nothing added to itself.
        let base = s
            .lines
            .iter()
            .find(|l| l.name == "01-no-proxy-baseline")
            .unwrap();
        assert_eq!((base.coefficient, base.cores), (None, None));
        assert_eq!(base.rates[0].against, None);
        let tables = tables(&s);
        assert_eq!(tables[0].columns[7], "Cores at 100 MB/s");
        let row = tables[0]
            .rows
            .iter()
            .find(|r| r[0] == "02-no-filters")
            .unwrap();
        assert!(row[1].starts_with("10.50 ["), "{row:?}");
        assert_eq!(row[8..], ["2000", "3000"]);
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert!(
            s.warnings[0].contains("--traffic 100 MB/s is beyond the most it carried (2.00 MB/s)")
        );
        // Without the hosts' clocks, no steal to state.
        let by_rate = &tables[1];
        assert_eq!(by_rate.columns.last().unwrap(), "Host steal %");
        assert!(by_rate.rows.iter().all(|r| r.last().unwrap() == "n/a"));
    }

    #[test]
    fn each_rate_states_the_median_steal_of_its_phases() {
        let mut results = at(1000, 1.0, &[0.9, 1.1], 2.0);
        for r in &mut results {
            for (m, steal) in r.repetitions.iter_mut().zip([10.0, 30.0]) {
                m.cost[0].host_steal_percent = Some(steal);
                m.cost[1].host_steal_percent = Some(steal + 1.0);
            }
        }
        let s = analyse(&results, &request(), None);
        let proxy = s.lines.iter().find(|l| l.name == "02-no-filters").unwrap();
        // The median of 10, 11, 30, 31.
        assert_eq!(proxy.rates[0].host_steal_percent, Some(20.5));
        let row = &tables(&s)[1].rows[1];
        assert_eq!(row.last().unwrap(), "20.5", "{row:?}");
    }

    #[test]
    fn the_line_through_cores_and_traffic_separates_the_idle_cost_from_the_marginal_one() {
        // The proxy uses 0.05 cores idle and 10 millicores per MB/s more: 0.06 cores at 1 MB/s
        // (100 s a phase at 1000 rec/s), 0.07 at 2 MB/s (50 s a phase).
        let mut results = at(1000, 1.0, &[6.0, 6.0], 1.0);
        results.extend(at(2000, 1.0, &[3.5, 3.5], 1.0));
        let request = SizingRequest {
            traffic_mb_s: 1.5,
            from: 1000,
        };
        let s = analyse(&results, &request, None);
        let proxy = s.lines.iter().find(|l| l.name == "02-no-filters").unwrap();
        let (marginal, idle) = (proxy.marginal.unwrap(), proxy.idle_cores.unwrap());
        assert!((marginal.mean - 10.0).abs() < 1e-9, "{marginal:?}");
        assert!((idle.mean - 0.05).abs() < 1e-9, "{idle:?}");
        assert!((proxy.cores.unwrap().mean - 0.065).abs() < 1e-9);
        // The ratio spreads the idle cores over the traffic: 60 then 35 millicores per MB/s.
        assert!((proxy.coefficient.unwrap().mean - 47.5).abs() < 1e-9);
        assert!((proxy.rates[0].coefficient.unwrap().mean - 60.0).abs() < 1e-9);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    }

    #[test]
    fn no_rate_below_the_ceiling_names_from() {
        let results = at(5000, 0.5, &[1.0, 1.0], 1.0);
        let s = analyse(&results, &request(), None);
        assert!(!s.sized_any());
        assert!(
            s.warnings[0].contains("no rate below the ceiling")
                && s.warnings[0].contains("lower --from (now 1000)"),
            "{:?}",
            s.warnings
        );
    }

    #[test]
    fn one_sustained_repetition_gives_no_interval_and_says_so() {
        let results = at(1000, 1.0, &[1.0], 1.0);
        let s = analyse(&results, &request(), None);
        let proxy = s.lines.iter().find(|l| l.name == "02-no-filters").unwrap();
        assert_eq!(proxy.coefficient, None);
        assert!(
            s.warnings.iter().any(|w| w.contains("no interval")),
            "{:?}",
            s.warnings
        );
    }
}
