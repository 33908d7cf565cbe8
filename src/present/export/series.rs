//! `series.svg`, for runs bounded by time (DURATION): per scenario, every second of the run as
//! lines over time (records produced and consumed per second, the 99th latency percentiles, the
//! consumer's lag, each container's memory, each JVM's garbage-collection pauses), the warm-up
//! shaded. Long runs are drawn in at most
//! [`MAX_POINTS`] points a line, each the mean (rates) or the maximum (latency, lag, memory) of
//! the seconds it stands for, so a spike is never averaged away.

use std::fmt::Write;

use anyhow::Result;

use super::svg::{
    document, escape, nice_ceiling, panel, trim, y_of, LEFT, PALETTE, PANEL_HEIGHT, RIGHT, TOP,
};
use super::Exporter;
use crate::model::run::RunInfo;
use crate::model::{ScenarioResult, Second};

/// The file name of the time series charts.
pub(crate) const FILE: &str = "series.svg";

/// Points drawn per line at most.
pub(crate) const MAX_POINTS: usize = 1000;

const WIDTH: f64 = 1100.0;
const MEMORY: &str = "Memory per container";
const PANEL_GAP: f64 = 50.0;
const BLOCK_TITLE: f64 = 30.0;

/// The time series charts; none unless some scenario has a series.
pub(crate) struct Series;

impl Exporter for Series {
    fn files(&self, _info: &RunInfo, results: &[ScenarioResult]) -> Result<Vec<(String, String)>> {
        if results.iter().all(|r| r.measurement.series.is_empty()) {
            return Ok(Vec::new());
        }
        Ok(vec![(FILE.to_string(), render(results))])
    }
}

/// How a line's seconds are folded into one point.
#[derive(Clone, Copy)]
enum Fold {
    Mean,
    Max,
}

/// One line of a panel: its name and a value per second.
struct Line {
    name: String,
    values: Vec<f64>,
    fold: Fold,
}

/// The values folded into at most [`MAX_POINTS`] points.
fn folded(values: &[f64], fold: Fold) -> Vec<f64> {
    let per = values.len().div_ceil(MAX_POINTS).max(1);
    values
        .chunks(per)
        .map(|c| match fold {
            Fold::Mean => c.iter().sum::<f64>() / c.len() as f64,
            Fold::Max => c.iter().copied().fold(0.0, f64::max),
        })
        .collect()
}

fn line(name: &str, series: &[Second], fold: Fold, get: fn(&Second) -> f64) -> Line {
    Line {
        name: name.to_string(),
        values: series.iter().map(get).collect(),
        fold,
    }
}

/// A panel's title and lines.
type Panel = (String, Vec<Line>);

/// The panels of one scenario.
fn panels(r: &ScenarioResult) -> Vec<Panel> {
    let s = &r.measurement.series;
    let mut out = vec![
        (
            "Records per second".to_string(),
            vec![
                line("produced", s, Fold::Mean, |x| x.produced as f64),
                line("consumed", s, Fold::Mean, |x| x.consumed as f64),
            ],
        ),
        (
            "99th latency percentile per second (ms)".to_string(),
            vec![
                line("produce", s, Fold::Max, |x| x.produce_p99_ms),
                line("end to end", s, Fold::Max, |x| x.e2e_p99_ms),
            ],
        ),
        (
            "Consumer lag (records acknowledged, not yet consumed)".to_string(),
            vec![line("lag", s, Fold::Max, |x| x.lag as f64)],
        ),
    ];
    let memory: Vec<Line> = r
        .resources
        .iter()
        .filter(|u| !u.mem_series_mib.is_empty())
        .map(|u| Line {
            name: u.service.clone(),
            values: u.mem_series_mib.clone(),
            fold: Fold::Max,
        })
        .collect();
    if !memory.is_empty() {
        out.push((
            format!("{MEMORY} (MiB, one sample a second from the workload's start)"),
            memory,
        ));
    }
    // Each JVM's garbage-collection pauses in each second of the measured phase (its GC log).
    let gc: Vec<Line> = r
        .measurement
        .cost
        .iter()
        .flat_map(|p| &p.services)
        .filter_map(|s| {
            let g = s.gc.as_ref()?;
            Some(Line {
                name: s.service.clone(),
                values: g.seconds_ms.clone(),
                fold: Fold::Max,
            })
        })
        .collect();
    if !gc.is_empty() {
        out.push((
            "Garbage-collection pauses per second (ms, from each JVM's GC log)".to_string(),
            gc,
        ));
    }
    out
}

/// The charts of every scenario with a series.
pub(crate) fn render(results: &[ScenarioResult]) -> String {
    let blocks: Vec<(&ScenarioResult, Vec<Panel>)> = results
        .iter()
        .filter(|r| !r.measurement.series.is_empty())
        .map(|r| (r, panels(r)))
        .collect();
    let panel_height = TOP + PANEL_HEIGHT + PANEL_GAP;
    let height: f64 = blocks
        .iter()
        .map(|(_, p)| BLOCK_TITLE + p.len() as f64 * panel_height)
        .sum::<f64>()
        + TOP;
    let mut svg = document(WIDTH, height);
    let mut top = TOP;
    for (r, panels) in &blocks {
        let seconds = r.measurement.series.len();
        let warm_up = r.measurement.series.iter().filter(|s| s.warm_up).count();
        let _ = writeln!(
            svg,
            r#"<text class="block" x="{LEFT}" y="{top:.1}" font-size="16" font-weight="bold">{}</text>"#,
            escape(&format!(
                "{}: {seconds} s{}",
                r.label(),
                if warm_up > 0 {
                    format!(", the first {warm_up} a warm-up (shaded, left out of the figures)")
                } else {
                    String::new()
                }
            ))
        );
        top += BLOCK_TITLE;
        for (title, lines) in panels {
            let plot_top = top + TOP;
            // Memory samples span the whole workload phase, not the run's seconds: no shading.
            let (span, shaded) = if title.starts_with(MEMORY) {
                let samples = lines.iter().map(|l| l.values.len()).max().unwrap_or(0);
                (samples, 0)
            } else {
                (seconds, warm_up)
            };
            draw(&mut svg, plot_top, title, lines, span, shaded);
            top += panel_height;
        }
    }
    svg.push_str("</svg>\n");
    svg
}

/// One panel: its lines over time, the warm-up shaded, a legend under it.
fn draw(svg: &mut String, top: f64, title: &str, lines: &[Line], seconds: usize, warm_up: usize) {
    let folded: Vec<Vec<f64>> = lines.iter().map(|l| folded(&l.values, l.fold)).collect();
    let max = nice_ceiling(folded.iter().flatten().copied().fold(0.0, f64::max));
    panel(svg, top, WIDTH, max, title);
    let plot = WIDTH - LEFT - RIGHT;
    if warm_up > 0 && seconds > 0 {
        let _ = writeln!(
            svg,
            r##"<rect class="warm-up" x="{LEFT}" y="{top:.1}" width="{:.1}" height="{PANEL_HEIGHT}" fill="#eee"/>"##,
            plot * warm_up as f64 / seconds as f64
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{seconds} s</text>"#,
        WIDTH - RIGHT,
        top + PANEL_HEIGHT + 16.0
    );
    for (k, (line, values)) in lines.iter().zip(&folded).enumerate() {
        let colour = PALETTE[k % PALETTE.len()];
        let n = values.len();
        let x_of = |i: usize| LEFT + plot * (i as f64 + 0.5) / n.max(1) as f64;
        let points: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{:.1},{:.1}", x_of(i), y_of(top, max, *v)))
            .collect();
        let peak = values.iter().copied().fold(0.0, f64::max);
        let _ = writeln!(
            svg,
            r#"<polyline class="series" points="{}" fill="none" stroke="{colour}" stroke-width="1.5"><title>{}</title></polyline>"#,
            points.join(" "),
            escape(&format!("{}: peak {}", line.name, trim(peak)))
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" fill="{colour}">{}</text>"#,
            LEFT + 140.0 * k as f64,
            top + PANEL_HEIGHT + 16.0,
            escape(&line.name)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(t_s: u64, produced: u64, lag: u64) -> Second {
        Second {
            t_s,
            warm_up: t_s <= 2,
            produced,
            consumed: produced,
            lag,
            produce_p50_ms: 1.0,
            produce_p99_ms: 2.0,
            produce_max_ms: 3.0,
            e2e_p50_ms: 2.0,
            e2e_p99_ms: 4.0,
            e2e_max_ms: 5.0,
        }
    }

    #[test]
    fn a_series_draws_a_block_of_panels_with_its_warm_up_shaded() {
        let mut results = crate::present::report::tests::sample();
        results[0].measurement.series = (1..=10).map(|t| second(t, 1000, t)).collect();
        results[0].resources = vec![crate::model::ServiceResources {
            service: "broker".into(),
            run_wide: true,
            node: None,
            samples: 3,
            cpu_pct_mean: 50.0,
            cpu_pct_peak: 80.0,
            mem_mib_mean: 110.0,
            mem_mib_peak: 120.0,
            net_rx_mib: 1.0,
            net_tx_mib: 1.0,
            mem_series_mib: vec![100.0, 110.0, 120.0],
        }];
        let svg = render(&results);
        roxmltree::Document::parse(&svg).unwrap();
        // Rates (2 lines), latency (2), lag (1), memory (1 service): 6 lines.
        assert_eq!(svg.matches(r#"class="series""#).count(), 6, "{svg}");
        // Shaded in the three panels of the run's seconds, not in the memory samples'.
        assert_eq!(svg.matches(r#"class="warm-up""#).count(), 3);
        assert!(svg.contains("the first 2 a warm-up"));
        assert!(svg.contains("lag: peak 10"));
        assert!(svg.contains("broker"), "memory lines are named by service");
        // Only one block: the other scenario has no series.
        assert_eq!(svg.matches(r#"class="block""#).count(), 1);
    }

    #[test]
    fn each_jvm_s_pauses_per_second_have_their_line() {
        let mut results = crate::present::report::tests::sample();
        results[0].measurement.series = (1..=5).map(|t| second(t, 1000, t)).collect();
        let gc = crate::accounting::gc::GcSummary {
            young: 2,
            pause_ms: 12.0,
            max_pause_ms: 9.0,
            seconds_ms: vec![0.0, 3.0, 0.0, 9.0],
            ..Default::default()
        };
        results[0].measurement.cost = vec![crate::accounting::cost::PhaseCost {
            phase: crate::accounting::cost::PRODUCE_AND_CONSUME.into(),
            records: 5000,
            record_bytes: 5_120_000,
            seconds: 5.0,
            start_unix_s: None,
            host_steal_percent: None,
            services: vec![crate::accounting::cost::ServiceCost {
                service: "kroxylicious".into(),
                role: crate::accounting::cost::Role::Path,
                cpu_s: 1.0,
                rx_bytes: 0,
                tx_bytes: 0,
                gc: Some(gc),
                threads: None,
            }],
        }];
        let svg = render(&results);
        roxmltree::Document::parse(&svg).unwrap();
        assert!(
            svg.contains("Garbage-collection pauses per second"),
            "{svg}"
        );
        assert!(svg.contains("kroxylicious: peak 9"), "{svg}");
    }

    #[test]
    fn long_series_fold_into_few_points_keeping_the_peaks() {
        let mut values = vec![1.0; 259_200];
        values[123_456] = 50.0;
        let max = folded(&values, Fold::Max);
        assert!(max.len() <= MAX_POINTS);
        assert_eq!(max.iter().copied().fold(0.0, f64::max), 50.0);
        let mean = folded(&[1.0, 3.0], Fold::Mean);
        assert_eq!(mean, [1.0, 3.0]);
    }

    #[test]
    fn runs_without_a_series_have_no_series_file() {
        let results = crate::present::report::tests::sample();
        let files = Series
            .files(&crate::present::results::tests::info("c"), &results)
            .unwrap();
        assert!(files.is_empty());
    }
}
