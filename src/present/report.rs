//! Result tables as plain data that the text, Markdown and HTML exporters render: the reference
//! script's "Producer Results" and "Consumer Results" columns and number formats (from the metric
//! registry), the latency tables, and what else a run measured (resources, the network's
//! ceiling, added latency, the A/B verdicts, cost, GC, JVM threads, integrity, path checks), in
//! the order `tables` prints them; plus the live rows printed as each scenario is measured.

use crate::accounting::stats;
use crate::analysis::metrics::{self, Metric, Table};
use crate::analysis::sweep;
use crate::model::{Measurement, ScenarioResult};
use crate::present::table::TableData;

/// Columns of the integrity table, shown only when counters disagree.
pub(crate) const INTEGRITY_COLUMNS: [&str; 6] = [
    "Name",
    "Requested",
    "Acknowledged",
    "End offsets",
    "Consumed",
    "Failed sends",
];

/// Columns of the path check table.
pub(crate) const PATH_CHECK_COLUMNS: [&str; 7] = [
    "Name",
    "Broker holds",
    "Consumer receives",
    "Records",
    "Broker as expected",
    "Consumer as expected",
    "Result",
];

/// Columns of the resources table.
pub(crate) const RESOURCE_COLUMNS: [&str; 8] = [
    "Name",
    "Service",
    "CPU % mean",
    "CPU % peak",
    "Mem MiB mean",
    "Mem MiB peak",
    "Net rx MiB",
    "Net tx MiB",
];

/// A metric table (producer or consumer): the name, the settings a matrix varied (one column
/// each, so a row is a scenario at a combination), then the registry's columns of that table,
/// then, when any scenario was repeated, the number of runs and the coefficient of variation of
/// the metrics that have a spread column, so the medians can be judged.
fn metric_table(title: &'static str, which: Table, results: &[ScenarioResult]) -> TableData {
    let metrics: Vec<&Metric> = metrics::of_table(which).collect();
    let varying = crate::settings::matrix::varying(results.iter().map(|r| &r.combination));
    let mut columns: Vec<String> = vec!["Name".to_string()];
    columns.extend(varying.iter().cloned());
    columns.extend(metrics.iter().map(|m| m.name.to_string()));
    let mut rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let mut row = vec![row_name(r)];
            row.extend(
                varying
                    .iter()
                    .map(|v| r.combination.get(v).cloned().unwrap_or_default()),
            );
            row.extend(metrics.iter().map(|m| m.format(&r.measurement)));
            row
        })
        .collect();
    if results.iter().any(|r| r.repetitions.len() > 1) {
        let spread: Vec<(&str, &Metric)> = metrics
            .iter()
            .filter_map(|m| m.spread.map(|header| (header, *m)))
            .collect();
        columns.push("Runs".to_string());
        columns.extend(spread.iter().map(|(header, _)| header.to_string()));
        for (row, r) in rows.iter_mut().zip(results) {
            let reps = r.all_measurements();
            row.push(reps.len().to_string());
            for (_, m) in &spread {
                let v: Vec<f64> = reps.iter().map(|x| (m.get)(x)).collect();
                row.push(format!("±{:.1}%", stats::cv_percent(&v)));
            }
        }
    }
    TableData {
        title,
        columns,
        rows,
    }
}

/// One measurement's rows of the producer and consumer tables, under `label` (the scenario at
/// its combination), printed as soon as it is measured so a long run shows its results as they
/// come (the full tables follow at the end).
pub(crate) fn measured_rows(label: &str, m: &Measurement) -> String {
    [Table::Producer, Table::Consumer]
        .into_iter()
        .map(|which| {
            let metrics: Vec<&Metric> = metrics::of_table(which).collect();
            let mut columns = vec!["Name".to_string()];
            columns.extend(metrics.iter().map(|x| x.name.to_string()));
            let mut row = vec![label.to_string()];
            row.extend(metrics.iter().map(|x| x.format(m)));
            crate::present::table::plain_body(&TableData {
                title: "",
                columns,
                rows: vec![row],
            })
        })
        .collect()
}

/// The producer table rows.
pub(crate) fn producer_table(results: &[ScenarioResult]) -> TableData {
    metric_table("Producer Results", Table::Producer, results)
}

/// The producer's latency from the intended send times; `None` when no scenario measured it
/// (no THROUGHPUT target, or a driver that does not measure it).
pub(crate) fn intended_table(results: &[ScenarioResult]) -> Option<TableData> {
    results
        .iter()
        .any(|r| r.measurement.producer.intended.is_some())
        .then(|| {
            metric_table(
                "Producer Latency from Intended Send Times",
                Table::Intended,
                results,
            )
        })
}

/// Each record's latency from its send to its receipt; `None` unless measured (MODE=end-to-end).
pub(crate) fn end_to_end_table(results: &[ScenarioResult]) -> Option<TableData> {
    results
        .iter()
        .any(|r| r.measurement.consumer.end_to_end.is_some())
        .then(|| {
            metric_table(
                "End-to-End Latency (send to receipt)",
                Table::EndToEnd,
                results,
            )
        })
}

/// How each group caught up with its backlog; `None` unless measured (MODE=backlog).
pub(crate) fn catch_up_table(results: &[ScenarioResult]) -> Option<TableData> {
    results
        .iter()
        .any(|r| r.measurement.consumer.catch_up.is_some())
        .then(|| {
            metric_table(
                "Backlog Catch-Up (consumer rates above are the catch-up's)",
                Table::CatchUp,
                results,
            )
        })
}

/// The consumer table rows.
pub(crate) fn consumer_table(results: &[ScenarioResult]) -> TableData {
    metric_table("Consumer Results", Table::Consumer, results)
}

/// Resource use per scenario and service while the workload ran; `None` when nothing was sampled.
pub(crate) fn resources_table(results: &[ScenarioResult]) -> Option<TableData> {
    // On a swarm, where each service ran.
    let nodes = results
        .iter()
        .any(|r| r.resources.iter().any(|s| s.node.is_some()));
    let rows: Vec<Vec<String>> = results
        .iter()
        .flat_map(|r| {
            r.resources.iter().map(move |s| {
                let service = service_label(&s.service, s.run_wide);
                let mut row = vec![r.label(), service];
                if nodes {
                    row.push(s.node.clone().unwrap_or_default());
                }
                row.extend([
                    format!("{:.1}", s.cpu_pct_mean),
                    format!("{:.1}", s.cpu_pct_peak),
                    format!("{:.1}", s.mem_mib_mean),
                    format!("{:.1}", s.mem_mib_peak),
                    format!("{:.2}", s.net_rx_mib),
                    format!("{:.2}", s.net_tx_mib),
                ]);
                row
            })
        })
        .collect();
    let mut columns = strings(&RESOURCE_COLUMNS);
    if nodes {
        columns.insert(2, "Node".to_string());
    }
    (!rows.is_empty()).then_some(TableData {
        title: "Resources",
        columns,
        rows,
    })
}

/// The network's ceiling on each hop of each scenario's path (`NETWORK_CEILING`) and the share
/// of it the scenario's producer and consumer rates took (both cross every hop, the consumer's
/// the other way); `None` when nothing was measured.
pub(crate) fn network_table(results: &[ScenarioResult]) -> Option<TableData> {
    let share = |rate: f64, ceiling: f64| format!("{:.1}", 100.0 * rate / ceiling);
    // On a swarm each end is named with its node.
    let at = |who: &String, node: &Option<String>| match node {
        Some(node) => format!("{who} on {node}"),
        None => who.clone(),
    };
    let rows: Vec<Vec<String>> = results
        .iter()
        .flat_map(|r| {
            r.network.iter().map(move |n| {
                vec![
                    r.label(),
                    at(&n.from, &n.from_node),
                    at(&n.to, &n.to_node),
                    format!("{:.1}", n.mib_s),
                    n.rtt_ms.map_or("n/a".into(), |t| format!("{t:.3}")),
                    n.retransmits.map_or("n/a".into(), |t| t.to_string()),
                    share(r.measurement.producer.rate_mib_s, n.mib_s),
                    share(r.measurement.consumer.consumed_mib_s, n.mib_s),
                ]
            })
        })
        .collect();
    (!rows.is_empty()).then(|| TableData {
        title: "Network Ceiling",
        columns: strings(&NETWORK_COLUMNS),
        rows,
    })
}

/// The columns of [`network_table`].
pub(crate) const NETWORK_COLUMNS: [&str; 8] = [
    "Name",
    "From",
    "To",
    "Ceiling MiB/s",
    "RTT ms",
    "Retransmits",
    "Producer % of ceiling",
    "Consumer % of ceiling",
];

/// Each scenario's latency at a fixed THROUGHPUT next to its suite's reference scenario's at
/// the same combination of settings in the same run, and the difference: what the path adds at
/// that rate. From the intended send times (so a stall cannot hide) and, in the end-to-end mode,
/// from send to receipt. `None` when no scenario has a reference to stand against.
pub(crate) fn added_latency_table(results: &[ScenarioResult]) -> Option<TableData> {
    type Get = fn(&ScenarioResult) -> Option<&crate::model::LatencySummary>;
    let kinds: [(&str, Get); 2] = [
        ("intended send to acknowledgement", |r| {
            r.measurement.producer.intended.as_ref()
        }),
        ("end to end", |r| r.measurement.consumer.end_to_end.as_ref()),
    ];
    let mut rows = Vec::new();
    for r in results {
        let Some(base) = crate::model::reference_of(results, r) else {
            continue;
        };
        for (kind, get) in kinds {
            let (Some(l), Some(b)) = (get(r), get(base)) else {
                continue;
            };
            let mut row = vec![r.label(), base.name.clone(), kind.to_string()];
            for (v, w) in [
                (l.p50_ms, b.p50_ms),
                (l.p99_ms, b.p99_ms),
                (l.p999_ms, b.p999_ms),
            ] {
                row.push(format!("{v:.2}"));
                row.push(format!("{:+.2}", v - w));
            }
            rows.push(row);
        }
    }
    (!rows.is_empty()).then(|| TableData {
        title: "Added Latency",
        columns: strings(&ADDED_LATENCY_COLUMNS),
        rows,
    })
}

/// Columns of the added latency table.
pub(crate) const ADDED_LATENCY_COLUMNS: [&str; 9] = [
    "Name",
    "Against",
    "Latency",
    "P50 ms",
    "+P50 ms",
    "P99 ms",
    "+P99 ms",
    "P99.9 ms",
    "+P99.9 ms",
];

/// What one path check found, as the live view shows it (`what` names the check).
pub(crate) fn path_check_line(what: &str, check: &crate::model::PathCheck) -> String {
    let verdict = if check.holds() { "holds" } else { "FAILED" };
    format!(
        "    {what} {verdict}: {}{}",
        check.summary(),
        check
            .first_mismatch
            .as_ref()
            .map(|m| format!("; {m}"))
            .unwrap_or_default()
    )
}

/// One repetition of a paired run as it is measured: each side's CPU per MB/s and intended
/// p50 and p99, and B over A of the CPU (or why the pair cannot be compared).
pub(crate) fn measured_pair(pair: &crate::model::pair::Pair, m: &Measurement) -> String {
    match crate::analysis::pair::phase_of(m, pair) {
        Ok(p) => format!(
            "    pair: A {:.3} mc per MB/s, p50 {:.2} ms, p99 {:.2} ms; B {:.3} mc per MB/s, \
             p50 {:.2} ms, p99 {:.2} ms; B/A {:.4}",
            p.mc_per_mb_s_a,
            p.p50_a_ms,
            p.p99_a_ms,
            p.mc_per_mb_s_b,
            p.p50_b_ms,
            p.p99_b_ms,
            p.cpu_ratio
        ),
        Err(why) => format!("    pair: not compared: {why}"),
    }
}

/// Title of the paired table.
pub(crate) const PAIR_TITLE: &str = "A/B Verdicts";

/// Columns of the paired table.
pub(crate) const PAIR_COLUMNS: [&str; 11] = [
    "Name",
    "Metric",
    "A",
    "B",
    "B/A",
    "95% interval",
    "Detectable change",
    "Verdict",
    "Pairs",
    "B/A ±CV%",
    "Within-pair CV%",
];

/// A paired run's two sides measured in the same phases (`crate::analysis::pair`), one row per path and
/// primary metric: each side's median over the phases, and B over A as the geometric mean over
/// the pairs with its interval, the change the pairs could find (80% power), the verdict, the
/// pairs (times their phases), the pairs' spread and the phases' spread within a pair (with
/// `PAIR_PHASES` above 1); `None` without a paired scenario.
pub(crate) fn pair_table(results: &[ScenarioResult]) -> Option<TableData> {
    let mut rows = Vec::new();
    for r in results {
        let Some(pair) = &r.pair else { continue };
        let name = match pair.alike {
            true => format!("{} (A/A)", r.label()),
            false => r.label(),
        };
        for metric in crate::analysis::pair::Metric::ALL {
            let ratio = pair.ratio(metric);
            let decimals = metric.decimals();
            let median = |side: fn((f64, f64)) -> f64| {
                let values: Vec<f64> = pair.phases.iter().map(|p| side(metric.sides(p))).collect();
                if values.is_empty() {
                    "n/a".to_string()
                } else {
                    format!("{:.decimals$}", stats::median(&values))
                }
            };
            let mut row = vec![
                name.clone(),
                metric.name().to_string(),
                median(|(a, _)| a),
                median(|(_, b)| b),
            ];
            let pairs = ratio.map_or(0, |x| x.pairs);
            let pairs = match pair.phases_per_pair {
                1 => pairs.to_string(),
                n => format!("{pairs} x {n} phases"),
            };
            row.extend(match ratio {
                None => {
                    let mut none = vec!["n/a".to_string(); 7];
                    none[4] = pairs;
                    none
                }
                Some(x) => vec![
                    format!("{:.4}", x.ratio),
                    match (x.low, x.high) {
                        (Some(l), Some(h)) => format!("{l:.4} .. {h:.4}"),
                        _ => "n/a".to_string(),
                    },
                    x.detectable_percent
                        .map_or("n/a".into(), |d| format!("{d:.1}%")),
                    x.verdict
                        .map_or("REPEAT=2 or more", crate::model::pair::Verdict::text)
                        .to_string(),
                    pairs,
                    x.cv_percent.map_or("n/a".into(), |c| format!("{c:.1}")),
                    x.within_pair_cv_percent
                        .map_or("n/a".into(), |c| format!("{c:.1}")),
                ],
            });
            rows.push(row);
        }
    }
    (!rows.is_empty()).then(|| TableData {
        title: PAIR_TITLE,
        columns: strings(&PAIR_COLUMNS),
        rows,
    })
}

/// Columns of the cost table.
pub(crate) const COST_COLUMNS: [&str; 9] = [
    "Name",
    "Phase",
    "Service",
    "CPU s",
    "CPU µs/record",
    "Millicores per MB/s",
    "Cores",
    "Net rx MiB",
    "Net tx MiB",
];

/// What each service used over exactly each measured phase (counters read at the phase's
/// edges), with the path's own services summed in a row of their own; `None` when no cost was
/// measured. A scenario that ran at a THROUGHPUT target compares with another at that rate only.
/// When the engine gave its hosts' clocks, the share of their CPU stolen over the phase
/// (`Host steal %`, the repetitions' median) stands beside each row: a cost read inside a busy
/// VM moves with it.
pub(crate) fn cost_table(results: &[ScenarioResult]) -> Option<TableData> {
    const MIB: f64 = 1024.0 * 1024.0;
    let repeated = results.iter().any(|r| r.repetitions.len() > 1);
    let steal = results
        .iter()
        .flat_map(|r| &r.measurement.cost)
        .any(|p| p.host_steal_percent.is_some());
    let mut rows = Vec::new();
    for r in results {
        let reps = r.all_measurements();
        for phase in &r.measurement.cost {
            for s in &phase.rows() {
                let service =
                    service_label(&s.service, s.role == crate::accounting::cost::Role::RunWide);
                let mut row = vec![
                    r.label(),
                    phase.phase.replace('_', " "),
                    service,
                    format!("{:.2}", s.cpu_s),
                    format!("{:.2}", phase.us_per_record(s)),
                    format!("{:.1}", phase.millicores_per_mb_s(s)),
                    format!("{:.2}", phase.cores(s)),
                    format!("{:.2}", s.rx_bytes as f64 / MIB),
                    format!("{:.2}", s.tx_bytes as f64 / MIB),
                ];
                if steal {
                    row.push(
                        phase
                            .host_steal_percent
                            .map_or("n/a".to_string(), |v| format!("{v:.1}")),
                    );
                }
                if repeated {
                    // The spread of the CPU per record over the repetitions (each moved the
                    // same records, so the CPU seconds' spread is the per-record figure's).
                    let cpu: Vec<f64> = reps
                        .iter()
                        .filter_map(|m| m.cost.iter().find(|p| p.phase == phase.phase))
                        .filter_map(|p| p.rows().into_iter().find(|x| x.service == s.service))
                        .map(|x| x.cpu_s)
                        .collect();
                    row.push(cpu.len().to_string());
                    row.push(format!("±{:.1}%", stats::cv_percent(&cpu)));
                }
                rows.push(row);
            }
        }
    }
    let mut columns = strings(&COST_COLUMNS);
    if steal {
        columns.push("Host steal %".to_string());
    }
    if repeated {
        columns.extend(["Runs".to_string(), "CPU ±CV%".to_string()]);
    }
    (!rows.is_empty()).then_some(TableData {
        title: "Cost",
        columns,
        rows,
    })
}

/// A service as the tables name it: a run-wide one says so.
fn service_label(service: &str, run_wide: bool) -> String {
    if run_wide {
        format!("{service} (run-wide)")
    } else {
        service.to_string()
    }
}

/// Columns of the garbage-collection table.
pub(crate) const GC_COLUMNS: [&str; 10] = [
    "Name",
    "Phase",
    "Service",
    "Young",
    "Full",
    "Other",
    "Pause ms",
    "Longest ms",
    "Pause %",
    "Phase s",
];

/// Each JVM service's stop-the-world pauses over exactly each measured phase (its GC log read at
/// the phase's edges, see `crate::accounting::gc`): young and full collections, other pauses (remark,
/// cleanup), their total and the longest, and the share of the phase the JVM stood still; the
/// median of the repetitions, figure by figure. `None` when no service's GC log was read.
pub(crate) fn gc_table(results: &[ScenarioResult]) -> Option<TableData> {
    let mut rows = Vec::new();
    for r in results {
        for phase in &r.measurement.cost {
            for s in &phase.services {
                let Some(gc) = &s.gc else { continue };
                let service =
                    service_label(&s.service, s.role == crate::accounting::cost::Role::RunWide);
                let share = if phase.seconds > 0.0 {
                    gc.pause_ms / 10.0 / phase.seconds
                } else {
                    0.0
                };
                rows.push(vec![
                    r.label(),
                    phase.phase.replace('_', " "),
                    service,
                    gc.young.to_string(),
                    gc.full.to_string(),
                    gc.other.to_string(),
                    format!("{:.1}", gc.pause_ms),
                    format!("{:.1}", gc.max_pause_ms),
                    format!("{share:.2}"),
                    format!("{:.2}", phase.seconds),
                ]);
            }
        }
    }
    (!rows.is_empty()).then(|| TableData {
        title: "Garbage Collection",
        columns: strings(&GC_COLUMNS),
        rows,
    })
}

/// Columns of the JVM threads table.
pub(crate) const JVM_THREADS_COLUMNS: [&str; 8] = [
    "Name",
    "Phase",
    "Service",
    "CPU s",
    "JIT s",
    "GC threads s",
    "Rest s",
    "JIT %",
];

/// Each JVM service's CPU over exactly each measured phase by kind of thread (see
/// `crate::accounting::jvm_threads`): its JIT compilers, its GC threads, and the rest of its container's CPU
/// (the application's threads); medians of the repetitions. With repetitions, the spread of the
/// whole and of the rest side by side says how much of a cost's spread the JIT and the GC make.
/// `None` when no service's threads were read.
pub(crate) fn jvm_threads_table(results: &[ScenarioResult]) -> Option<TableData> {
    let repeated = results.iter().any(|r| r.repetitions.len() > 1);
    let rest = |s: &crate::accounting::cost::ServiceCost,
                t: &crate::accounting::jvm_threads::ThreadCpu| {
        (s.cpu_s - t.jit_s - t.gc_s).max(0.0)
    };
    let mut rows = Vec::new();
    for r in results {
        let reps = r.all_measurements();
        for phase in &r.measurement.cost {
            for s in &phase.services {
                let Some(t) = &s.threads else { continue };
                let service =
                    service_label(&s.service, s.role == crate::accounting::cost::Role::RunWide);
                let share = if s.cpu_s > 0.0 {
                    t.jit_s * 100.0 / s.cpu_s
                } else {
                    0.0
                };
                let mut row = vec![
                    r.label(),
                    phase.phase.replace('_', " "),
                    service,
                    format!("{:.2}", s.cpu_s),
                    format!("{:.2}", t.jit_s),
                    format!("{:.2}", t.gc_s),
                    format!("{:.2}", rest(s, t)),
                    format!("{share:.1}"),
                ];
                if repeated {
                    let each: Vec<(f64, f64)> = reps
                        .iter()
                        .filter_map(|m| m.cost.iter().find(|p| p.phase == phase.phase))
                        .filter_map(|p| p.services.iter().find(|x| x.service == s.service))
                        .filter_map(|x| x.threads.as_ref().map(|t| (x.cpu_s, rest(x, t))))
                        .collect();
                    let (cpu, rest): (Vec<f64>, Vec<f64>) = each.into_iter().unzip();
                    row.push(cpu.len().to_string());
                    row.push(format!("±{:.1}%", stats::cv_percent(&cpu)));
                    row.push(format!("±{:.1}%", stats::cv_percent(&rest)));
                }
                rows.push(row);
            }
        }
    }
    let mut columns = strings(&JVM_THREADS_COLUMNS);
    if repeated {
        columns.extend(["Runs", "CPU ±CV%", "Rest ±CV%"].map(String::from));
    }
    (!rows.is_empty()).then_some(TableData {
        title: "JVM Threads",
        columns,
        rows,
    })
}

/// Header cells as the table holds them.
pub(crate) fn strings(columns: &[&str]) -> Vec<String> {
    columns.iter().map(|c| c.to_string()).collect()
}

/// Saturation warnings of every scenario, one `name: warning` line each.
pub(crate) fn warnings(results: &[ScenarioResult]) -> Vec<String> {
    results
        .iter()
        .flat_map(|r| {
            r.warnings
                .iter()
                .map(move |w| format!("{}: {w}", r.label()))
        })
        .collect()
}

/// A scenario's name in the result tables; a row whose path check failed says so, so that it
/// cannot be read as a measurement of the path it claims.
fn row_name(r: &ScenarioResult) -> String {
    if r.path_check_failed() {
        format!("{} (path check FAILED)", r.name)
    } else {
        r.name.clone()
    }
}

/// What each scenario's path check found; `None` when no scenario declares `expect:`.
pub(crate) fn path_check_table(results: &[ScenarioResult]) -> Option<TableData> {
    let rows: Vec<Vec<String>> = results
        .iter()
        .filter_map(|r| r.path_check.as_ref().map(|c| (r, c)))
        .map(|(r, c)| {
            vec![
                r.label(),
                c.expect.broker.name().to_string(),
                c.expect.consumer.name().to_string(),
                c.records.to_string(),
                c.broker_ok.to_string(),
                c.consumer_ok.to_string(),
                match (&c.first_mismatch, c.holds()) {
                    (_, true) => "holds".to_string(),
                    (Some(m), false) => format!("FAILED: {m}"),
                    (None, false) => "FAILED".to_string(),
                },
            ]
        })
        .collect();
    (!rows.is_empty()).then(|| TableData {
        title: "Path checks",
        columns: strings(&PATH_CHECK_COLUMNS),
        rows,
    })
}

/// Scenarios whose record counters disagree or whose sends failed; `None` when all agree.
pub(crate) fn integrity_table(results: &[ScenarioResult]) -> Option<TableData> {
    let rows: Vec<Vec<String>> = results
        .iter()
        .filter(|r| !r.measurement.integrity.is_ok() || r.measurement.producer.failed > 0)
        .map(|r| {
            let i = &r.measurement.integrity;
            vec![
                r.label(),
                i.requested.to_string(),
                i.acknowledged.to_string(),
                i.end_offsets.to_string(),
                i.consumed.to_string(),
                r.measurement.producer.failed.to_string(),
            ]
        })
        .collect();
    (!rows.is_empty()).then(|| TableData {
        title: "Integrity (record counters disagree)",
        columns: strings(&INTEGRITY_COLUMNS),
        rows,
    })
}

/// Columns of the sweep's table after the name and the other varying settings.
const SWEEP_COLUMNS: [&str; 5] = [
    "Sustained rec/s",
    "P99 ms there",
    "Path mc per MB/s there",
    "Not sustained rec/s",
    "Why not",
];

/// Per scenario (and combination of the other varying settings), the highest THROUGHPUT
/// sustained below the first that was not, with its p99, and that first rate with the reason;
/// `None` unless THROUGHPUT varied (see [`sweep::climbs`]).
pub(crate) fn sweep_table(
    results: &[ScenarioResult],
    p99_limit_ms: Option<u64>,
) -> Option<TableData> {
    let lines = sweep::climbs(results, p99_limit_ms)?;
    let others = crate::settings::matrix::varying(lines.iter().map(|(l, _)| &l.rest));
    let mut columns: Vec<String> = vec!["Name".to_string()];
    columns.extend(others.iter().cloned());
    columns.extend(strings(&SWEEP_COLUMNS));
    let rows = lines
        .iter()
        .map(|(line, climb)| {
            let mut row = vec![line.name.clone()];
            row.extend(
                others
                    .iter()
                    .map(|v| line.rest.get(v).cloned().unwrap_or_default()),
            );
            match climb.sustained.last() {
                Some((rate, r)) => {
                    let m = &r.measurement;
                    row.push(rate.to_string());
                    row.push(format!("{:.1}", sweep::p99(m)));
                    row.push(metrics::Id::PathCost.metric().format(m));
                }
                None => row.extend(["none".to_string(), String::new(), String::new()]),
            }
            match &climb.ceiling {
                Some((rate, why)) => {
                    row.push(rate.to_string());
                    row.push(why.clone());
                }
                None => row.extend([
                    "none measured".to_string(),
                    "every rate sustained: raise --to".to_string(),
                ]),
            }
            row
        })
        .collect();
    Some(TableData {
        title: "Highest Sustained Rate",
        columns,
        rows,
    })
}

/// Every table of a run: producer (and its latency from intended send times when measured),
/// consumer, then resources, integrity and path checks when they have rows.
/// When THROUGHPUT varied, the highest sustained rates follow the consumer's (a rate counting as
/// sustained only within `p99_limit_ms` when given).
pub(crate) fn tables(results: &[ScenarioResult], p99_limit_ms: Option<u64>) -> Vec<TableData> {
    let mut all = vec![producer_table(results)];
    all.extend(intended_table(results));
    all.push(consumer_table(results));
    all.extend(end_to_end_table(results));
    all.extend(catch_up_table(results));
    all.extend(sweep_table(results, p99_limit_ms));
    all.extend(resources_table(results));
    all.extend(network_table(results));
    all.extend(added_latency_table(results));
    all.extend(pair_table(results));
    all.extend(cost_table(results));
    all.extend(gc_table(results));
    all.extend(jvm_threads_table(results));
    all.extend(integrity_table(results));
    all.extend(path_check_table(results));
    all
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::*;

    fn render_text(results: &[ScenarioResult]) -> String {
        crate::present::export::text::render(results, None)
    }

    fn render_markdown(results: &[ScenarioResult]) -> String {
        crate::present::export::markdown::render(results, None)
    }

    /// Records with the reference's first two rows of numbers.
    pub(crate) fn sample() -> Vec<ScenarioResult> {
        let one = |name: &str, p: [f64; 7], c: [f64; 8], integrity: Integrity| ScenarioResult {
            name: name.to_string(),
            combination: Default::default(),
            description: format!("{name} description"),
            bootstrap: "broker:9092".to_string(),
            topic: format!("perf-tests-{name}"),
            measurement: Measurement {
                steps_s: Default::default(),
                series: Vec::new(),
                cost: Vec::new(),
                profiles: Vec::new(),
                pair: None,
                producer: ProducerResult {
                    histograms: Default::default(),
                    sent: 10_000_000,
                    failed: 0,
                    rate_rec_s: p[0],
                    rate_mib_s: p[1],
                    avg_lat_ms: p[2],
                    max_lat_ms: p[3],
                    p50_ms: p[4],
                    p95_ms: p[5],
                    p99_ms: p[6],
                    p999_ms: 1326.0,
                    elapsed_s: 205.46,
                    target_rec_s: -1.0,
                    intended: None,
                    span: None,
                    derived: Vec::new(),
                },
                consumer: ConsumerResult {
                    histograms: Default::default(),
                    consumed_mib: c[0],
                    consumed_mib_s: c[1],
                    consumed_recs: c[2] as u64,
                    consumed_rec_s: c[3],
                    rebalance_ms: c[4],
                    fetch_ms: Some(c[5]),
                    first_record_ms: None,
                    fetch_mib_s: Some(c[6]),
                    fetch_rec_s: Some(c[7]),
                    end_to_end: None,
                    per_client: Vec::new(),
                    catch_up: None,
                    span: None,
                },
                integrity,
            },
            phases: PhaseTimes::default(),
            images: Default::default(),
            repetitions: Vec::new(),
            resources: Vec::new(),
            warnings: Vec::new(),
            path_check: None,
            image_sources: Default::default(),
            reference: name.starts_with("01-"),
            network: Vec::new(),
            kms: None,
            pair: None,
        };
        let ok = Integrity {
            requested: 10_000_000,
            acknowledged: 10_000_000,
            end_offsets: 10_000_000,
            consumed: 10_000_000,
        };
        vec![
            one(
                "01-no-proxy-baseline",
                [48671.274214, 47.53, 628.71, 1354.0, 625.0, 669.0, 692.0],
                [
                    9765.7471,
                    622.2996,
                    10000125.0,
                    637234.7543,
                    289.0,
                    15404.0,
                    633.9748,
                    649190.1454,
                ],
                ok.clone(),
            ),
            one(
                "02-no-filters",
                [47188.95401, 46.0829, 648.4999, 1630.0, 637.4, 704.0, 872.6],
                [
                    9765.74707,
                    317.1006,
                    10000125.0,
                    324711.0108,
                    307.2,
                    30490.0,
                    320.2934,
                    327980.4854,
                ],
                ok,
            ),
        ]
    }

    const PRODUCER_TEXT: &str = "\
Producer Results
Name                  Sent      Rate rec/s    Rate Mi/s  Avg Lat ms  Max Lat ms  Percentile50  Percentile95  Percentile99  Percentile999
----                  ----      ----------    ---------  ----------  ----------  ------------  ------------  ------------  -------------
01-no-proxy-baseline  10000000  48671.274214  47.53      628.71      1354.00     625           669           692           1326
02-no-filters         10000000  47188.954010  46.08      648.50      1630.00     637           704           873           1326
";

    const CONSUMER_TEXT: &str = "\
Consumer Results
Name                  Consumed Mi  Consumed Mi/s  Consumed recs  Consumed rec/s  Rebalance Time ms  Fetch Time ms  Fetch Mi/s  Fetch rec/s
----                  -----------  -------------  -------------  --------------  -----------------  -------------  ----------  -----------
01-no-proxy-baseline  9765.7471    622.2996       10000125       637234.7543     289                15404          633.9748    649190.1454
02-no-filters         9765.7471    317.1006       10000125       324711.0108     307                30490          320.2934    327980.4854
";

    #[test]
    fn latency_from_intended_send_times_gets_its_table_only_when_measured() {
        let mut results = sample();
        let titles = |r: &[ScenarioResult]| -> Vec<&'static str> {
            tables(r, None).iter().map(|t| t.title).collect()
        };
        assert!(!titles(&results).contains(&"Producer Latency from Intended Send Times"));
        results[0].measurement.producer.intended = Some(LatencySummary {
            avg_lat_ms: 1.5,
            max_lat_ms: 1400.0,
            p50_ms: 1.0,
            p95_ms: 3.0,
            p99_ms: 1200.0,
            p999_ms: 1390.0,
            p9999_ms: 1399.0,
        });
        assert_eq!(
            titles(&results)[..3],
            [
                "Producer Results",
                "Producer Latency from Intended Send Times",
                "Consumer Results"
            ]
        );
        let t = intended_table(&results).unwrap();
        assert_eq!(t.columns[0], "Name");
        assert_eq!(
            t.rows[0][1..],
            ["1.50", "1400.00", "1", "3", "1200", "1390"]
        );
        // A scenario measured without a target has none: n/a, not zero.
        assert!(t.rows[1][1..].iter().all(|c| c == "n/a"), "{:?}", t.rows[1]);
    }

    #[test]
    fn plain_text_matches_the_reference_layout() {
        let text = render_text(&sample());
        assert_eq!(text, format!("{PRODUCER_TEXT}{CONSUMER_TEXT}"));
    }

    #[test]
    fn markdown_tables() {
        let md = render_markdown(&sample()[..1]);
        let expected = "\
**Producer Results**

| Name                 | Sent     | Rate rec/s   | Rate Mi/s | Avg Lat ms | Max Lat ms | Percentile50 | Percentile95 | Percentile99 | Percentile999 |
|----------------------|----------|--------------|-----------|------------|------------|--------------|--------------|--------------|---------------|
| 01-no-proxy-baseline | 10000000 | 48671.274214 | 47.53     | 628.71     | 1354.00    | 625          | 669          | 692          | 1326          |

**Consumer Results**

| Name                 | Consumed Mi | Consumed Mi/s | Consumed recs | Consumed rec/s | Rebalance Time ms | Fetch Time ms | Fetch Mi/s | Fetch rec/s |
|----------------------|-------------|---------------|---------------|----------------|-------------------|---------------|------------|-------------|
| 01-no-proxy-baseline | 9765.7471   | 622.2996      | 10000125      | 637234.7543    | 289               | 15404         | 633.9748   | 649190.1454 |
";
        assert_eq!(md, expected);
    }

    #[test]
    fn integrity_problems_are_listed_and_absent_otherwise() {
        let mut results = sample();
        assert!(integrity_table(&results).is_none());
        assert!(!render_text(&results).contains("Integrity"));
        results[1].measurement.integrity.consumed = 9_999_990;
        let text = render_text(&results);
        let expected = "\
Integrity (record counters disagree)
Name           Requested  Acknowledged  End offsets  Consumed  Failed sends
----           ---------  ------------  -----------  --------  ------------
02-no-filters  10000000   10000000      10000000     9999990   0
";
        assert!(text.ends_with(expected), "{text}");
        assert!(render_markdown(&results).contains("| 02-no-filters | 10000000  |"));
    }

    #[test]
    fn repeated_runs_add_spread_columns_after_the_reference_ones() {
        let mut results = sample();
        assert!(!render_text(&results).contains("Runs"));
        for r in &mut results {
            let mut fast = r.measurement.clone();
            fast.producer.rate_rec_s *= 1.1;
            let mut slow = r.measurement.clone();
            slow.producer.rate_rec_s *= 0.9;
            r.repetitions = vec![slow, r.measurement.clone(), fast];
        }
        let table = producer_table(&results);
        assert_eq!(
            table.columns[..10],
            [
                "Name",
                "Sent",
                "Rate rec/s",
                "Rate Mi/s",
                "Avg Lat ms",
                "Max Lat ms",
                "Percentile50",
                "Percentile95",
                "Percentile99",
                "Percentile999",
            ]
        );
        assert_eq!(
            table.columns[10..],
            ["Runs", "Rate ±CV%", "Avg Lat ±CV%", "P99 ±CV%"]
        );
        assert_eq!(table.rows[0][10..], ["3", "±10.0%", "±0.0%", "±0.0%"]);
        assert_eq!(consumer_table(&results).columns[9], "Runs");
    }

    #[test]
    fn the_network_ceiling_shows_each_hop_and_each_rate_as_a_share_of_it() {
        let mut results = sample();
        assert!(network_table(&results).is_none());
        let producer = results[1].measurement.producer.rate_mib_s;
        let consumer = results[1].measurement.consumer.consumed_mib_s;
        results[1].network = vec![
            crate::model::NetworkCeiling {
                from: "load generator".into(),
                to: "proxy".into(),
                from_node: None,
                to_node: None,
                mib_s: producer * 4.0,
                rtt_ms: Some(0.0881),
                retransmits: Some(12),
                seconds: 2.0,
            },
            crate::model::NetworkCeiling {
                from: "proxy".into(),
                to: "broker".into(),
                from_node: Some("pt-swarm-2".into()),
                to_node: Some("pt-swarm-1".into()),
                mib_s: consumer * 8.0,
                rtt_ms: None,
                retransmits: None,
                seconds: 2.0,
            },
        ];
        let t = network_table(&results).unwrap();
        assert_eq!(t.rows.len(), 2);
        let row = |i: usize| t.rows[i].iter().map(String::as_str).collect::<Vec<_>>();
        assert_eq!(&row(0)[..3], ["02-no-filters", "load generator", "proxy"]);
        assert_eq!((row(0)[4], row(0)[5], row(0)[6]), ("0.088", "12", "25.0"));
        assert_eq!((row(1)[4], row(1)[5], row(1)[7]), ("n/a", "n/a", "12.5"));
        // On a swarm, each end with its node.
        assert_eq!(
            &row(1)[1..3],
            ["proxy on pt-swarm-2", "broker on pt-swarm-1"]
        );
        assert!(render_text(&results).contains("Network Ceiling\nName"));
    }

    #[test]
    fn the_gc_table_shows_each_jvm_s_pauses_per_phase() {
        let mut results = sample();
        assert!(gc_table(&results).is_none());
        let gc = crate::accounting::gc::GcSummary {
            young: 7,
            full: 1,
            other: 2,
            pause_ms: 125.0,
            max_pause_ms: 60.5,
            seconds_ms: Vec::new(),
        };
        results[1].measurement.cost = vec![crate::accounting::cost::PhaseCost {
            phase: "produce".into(),
            records: 1000,
            record_bytes: 1_024_000,
            seconds: 5.0,
            start_unix_s: None,
            host_steal_percent: None,
            services: vec![
                crate::accounting::cost::ServiceCost {
                    service: "proxy".into(),
                    role: crate::accounting::cost::Role::Path,
                    cpu_s: 1.0,
                    rx_bytes: 0,
                    tx_bytes: 0,
                    gc: Some(gc),
                    threads: None,
                },
                crate::accounting::cost::ServiceCost {
                    service: "workload (load generator)".into(),
                    role: crate::accounting::cost::Role::LoadGenerator,
                    cpu_s: 1.0,
                    rx_bytes: 0,
                    tx_bytes: 0,
                    gc: None,
                    threads: None,
                },
            ],
        }];
        let t = gc_table(&results).unwrap();
        // Only the JVM's row; 125 ms of pauses in 5 s is 2.5% of the phase.
        assert_eq!(
            t.rows,
            [[
                "02-no-filters",
                "produce",
                "proxy",
                "7",
                "1",
                "2",
                "125.0",
                "60.5",
                "2.50",
                "5.00"
            ]]
        );
        assert!(render_text(&results).contains("Garbage Collection\nName"));
    }

    #[test]
    fn the_jvm_threads_table_splits_each_jvm_s_cpu_and_shows_the_rest_s_spread() {
        use crate::accounting::cost::{PhaseCost, Role, ServiceCost};
        use crate::accounting::jvm_threads::ThreadCpu;
        let mut results = sample();
        assert!(jvm_threads_table(&results).is_none());
        let phase = |cpu_s, jit_s| PhaseCost {
            phase: "produce_and_consume".into(),
            records: 1000,
            record_bytes: 1_024_000,
            seconds: 5.0,
            start_unix_s: None,
            host_steal_percent: None,
            services: vec![
                ServiceCost {
                    service: "proxy".into(),
                    role: Role::Path,
                    cpu_s,
                    rx_bytes: 0,
                    tx_bytes: 0,
                    gc: None,
                    threads: Some(ThreadCpu { jit_s, gc_s: 0.5 }),
                },
                ServiceCost {
                    service: "workload (load generator)".into(),
                    role: Role::LoadGenerator,
                    cpu_s: 1.0,
                    rx_bytes: 0,
                    tx_bytes: 0,
                    gc: None,
                    threads: None,
                },
            ],
        };
        results[1].measurement.cost = vec![phase(10.0, 4.0)];
        let t = jvm_threads_table(&results).unwrap();
        // Only the JVM's row: 10 s of CPU, 4 of them compiling, 0.5 collecting, 5.5 the rest.
        assert_eq!(
            t.rows,
            [[
                "02-no-filters",
                "produce and consume",
                "proxy",
                "10.00",
                "4.00",
                "0.50",
                "5.50",
                "40.0"
            ]]
        );
        // Over repetitions whose whole varies only by what the compilers did, the rest holds.
        let rep = |cpu_s, jit_s| {
            let mut m = results[1].measurement.clone();
            m.cost = vec![phase(cpu_s, jit_s)];
            m
        };
        let reps = vec![rep(10.0, 4.0), rep(12.0, 6.0), rep(8.0, 2.0)];
        results[1].repetitions = reps;
        let t = jvm_threads_table(&results).unwrap();
        assert_eq!(t.columns[8..], ["Runs", "CPU ±CV%", "Rest ±CV%"]);
        assert_eq!(t.rows[0][8..], ["3", "±20.0%", "±0.0%"]);
        assert!(render_text(&results).contains("JVM Threads\nName"));
    }

    #[test]
    fn resources_and_warnings_are_shown_when_present() {
        let mut results = sample();
        assert!(resources_table(&results).is_none());
        results[0].resources = vec![crate::model::ServiceResources {
            service: "broker".into(),
            run_wide: true,
            node: None,
            samples: 4,
            cpu_pct_mean: 55.25,
            cpu_pct_peak: 120.0,
            mem_mib_mean: 12.5,
            mem_mib_peak: 14.0,
            net_rx_mib: 9.77,
            net_tx_mib: 1.5,
            mem_series_mib: Vec::new(),
        }];
        results[1].warnings = vec!["latency is dominated by client-side queueing".into()];
        let text = render_text(&results);
        assert!(
            text.contains(
                "Resources\nName                  Service            CPU % mean  CPU % peak  Mem MiB mean  Mem MiB peak  Net rx MiB  Net tx MiB\n"
            ),
            "{text}"
        );
        assert!(text.contains(
            "01-no-proxy-baseline  broker (run-wide)  55.2        120.0       12.5          14.0          9.77        1.50\n"
        ), "{text}");
        assert!(text
            .ends_with("Warnings\n02-no-filters: latency is dominated by client-side queueing\n"));
        let md = render_markdown(&results);
        assert!(md.contains("**Resources**"));
        assert!(md.contains("- 02-no-filters: latency is dominated"));
        // On a swarm each service's node is a column of its own.
        results[0].resources[0].node = Some("pt-swarm-1".into());
        let text = render_text(&results);
        assert!(
            text.contains("Name                  Service            Node        CPU % mean"),
            "{text}"
        );
        assert!(
            text.contains("01-no-proxy-baseline  broker (run-wide)  pt-swarm-1  55.2"),
            "{text}"
        );
    }

    #[test]
    fn the_cost_table_has_each_service_and_the_path_per_phase() {
        use crate::accounting::cost::{PhaseCost, Role, ServiceCost};
        let mut results = sample();
        assert!(cost_table(&results).is_none());
        let service = |name: &str, role, cpu_s| ServiceCost {
            service: name.into(),
            role,
            cpu_s,
            rx_bytes: 1024 * 1024,
            tx_bytes: 0,
            gc: None,
            threads: None,
        };
        // 1e6 records of 1000 bytes (1000 MB) in 20 s.
        results[1].measurement.cost = vec![PhaseCost {
            phase: "produce".into(),
            records: 1_000_000,
            record_bytes: 1_000_000_000,
            seconds: 20.0,
            start_unix_s: None,
            host_steal_percent: None,
            services: vec![
                service("broker", Role::RunWide, 4.0),
                service("proxy", Role::Path, 5.0),
                service("kms", Role::Path, 1.0),
            ],
        }];
        let table = cost_table(&results).unwrap();
        let rows: Vec<String> = table.rows.iter().map(|r| r.join("|")).collect();
        assert_eq!(
            rows,
            [
                "02-no-filters|produce|broker (run-wide)|4.00|4.00|4.0|0.20|1.00|0.00",
                "02-no-filters|produce|proxy|5.00|5.00|5.0|0.25|1.00|0.00",
                "02-no-filters|produce|kms|1.00|1.00|1.0|0.05|1.00|0.00",
                "02-no-filters|produce|path (own services)|6.00|6.00|6.0|0.30|2.00|0.00",
            ]
        );
        assert!(render_markdown(&results).contains("**Cost**"));
        assert!(!table.columns.iter().any(|c| c == "Host steal %"));
        // With the hosts' clocks the phase's stolen share stands on each of its rows.
        results[1].measurement.cost[0].host_steal_percent = Some(31.25);
        let table = cost_table(&results).unwrap();
        assert_eq!(table.columns.last().unwrap(), "Host steal %");
        assert!(table.rows.iter().all(|r| r.last().unwrap() == "31.2"));
    }

    #[test]
    fn a_duration_run_has_no_fetch_figures_to_show() {
        let mut results = sample();
        results[0].measurement.series = vec![Second {
            t_s: 1,
            warm_up: false,
            produced: 10,
            consumed: 10,
            lag: 0,
            produce_p50_ms: 1.0,
            produce_p99_ms: 1.0,
            produce_max_ms: 1.0,
            e2e_p50_ms: 1.0,
            e2e_p99_ms: 1.0,
            e2e_max_ms: 1.0,
        }];
        let t = consumer_table(&results);
        let col = |name: &str| t.columns.iter().position(|c| c == name).unwrap();
        for name in ["Fetch Time ms", "Fetch Mi/s", "Fetch rec/s"] {
            assert_eq!(t.rows[0][col(name)], "n/a", "{name}");
            assert_ne!(t.rows[1][col(name)], "n/a", "{name}");
        }
    }

    #[test]
    fn added_latency_is_each_path_against_the_reference_at_the_same_settings() {
        let mut results = sample();
        assert!(added_latency_table(&results).is_none());
        let lat = |p50: f64, p99: f64, p999: f64| crate::model::LatencySummary {
            avg_lat_ms: p50,
            max_lat_ms: p999 * 2.0,
            p50_ms: p50,
            p95_ms: p99,
            p99_ms: p99,
            p999_ms: p999,
            p9999_ms: p999,
        };
        results[0].measurement.producer.intended = Some(lat(2.0, 5.0, 9.0));
        results[1].measurement.producer.intended = Some(lat(3.5, 8.0, 20.0));
        results[1].measurement.consumer.end_to_end = Some(lat(4.0, 9.0, 30.0));
        let table = added_latency_table(&results).unwrap();
        let rows: Vec<String> = table.rows.iter().map(|r| r.join("|")).collect();
        // The reference measured no end-to-end latency: nothing to stand that against.
        assert_eq!(
            rows,
            ["02-no-filters|01-no-proxy-baseline|intended send to acknowledgement|3.50|+1.50|8.00|+3.00|20.00|+11.00"]
        );
        // Another combination of settings has no reference to stand against.
        results[1]
            .combination
            .insert("THROUGHPUT".into(), "1000".into());
        assert!(added_latency_table(&results).is_none());
    }

    #[test]
    fn empty_results_still_show_headers() {
        let text = render_text(&[]);
        assert!(text.starts_with("Producer Results\nName  Sent"), "{text}");
    }
}
