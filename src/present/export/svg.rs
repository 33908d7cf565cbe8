//! `charts.svg`: a hand-written SVG of a run, beside its tables. Its panels show the producer's
//! and the consumer's throughput per scenario as bars, then the producer's latency percentiles
//! (p50, p95, p99, p99.9) per scenario as grouped bars; when scenarios were repeated, each bar
//! is the median and carries a min–max error bar. A rate's bar says its ratio to the reference
//! scenario's (`reference: true`, at the same combination). Scenario names are wrapped to their bar
//! group's width, so long names never run into each other. A run with a matrix adds, for each setting it varied, a line
//! chart of the producer's throughput and of its 99th percentile over that setting's values, one
//! line per scenario (and combination of the other varying settings). When the path's own
//! services were costed, a panel of their millicores per MB/s of produce + consume traffic
//! follows the latencies, and each varying setting gets that line too (the cost at each rate of
//! a sweep). Every bar and point has a `<title>` with its exact value.

use std::fmt::Write;

use anyhow::Result;

use super::Exporter;
use crate::accounting::stats;
use crate::analysis::metrics::{Id, Metric};
use crate::model::run::RunInfo;
use crate::model::ScenarioResult;

/// The file name of the charts (the Markdown tables link it).
pub(crate) const FILE: &str = "charts.svg";

/// The charts.
pub(crate) struct Svg;

impl Exporter for Svg {
    fn files(&self, _info: &RunInfo, results: &[ScenarioResult]) -> Result<Vec<(String, String)>> {
        Ok(vec![(FILE.to_string(), render(results))])
    }
}

pub(super) const PANEL_HEIGHT: f64 = 220.0;
pub(super) const TOP: f64 = 40.0;
pub(super) const LEFT: f64 = 80.0;
pub(super) const RIGHT: f64 = 20.0;
const GROUP_WIDTH: f64 = 140.0;
/// Under a panel: a scenario's name in up to [`NAME_LINES`] lines, its combination in up to
/// [`COMBINATION_LINES`].
const LABEL_SPACE: f64 = 18.0 + NAME_LINES as f64 * LINE_HEIGHT + COMBINATION_LINES as f64 * 12.0;
const LINE_HEIGHT: f64 = 13.0;
const NAME_LINES: usize = 4;
const COMBINATION_LINES: usize = 2;
/// Characters of a label line: at 12 px sans-serif (at most about 7 px a character) they stay
/// within a bar group's width, so no scenario's label runs into the next one's.
const LABEL_CHARS: usize = 18;

/// The throughput panels' metrics.
const THROUGHPUT: Id = Id::RateRecS;
const CONSUMED: Id = Id::ConsumedRecS;

/// The top of the plot area of the `k`th bar panel (producer, consumer, latency, cost).
fn panel_top(k: usize) -> f64 {
    TOP + k as f64 * (TOP + PANEL_HEIGHT + LABEL_SPACE)
}

/// The latency series: label, colour, metric.
const LATENCIES: [(&str, &str, Id); 4] = [
    ("p50", "#4c78a8", Id::P50Ms),
    ("p95", "#f58518", Id::P95Ms),
    ("p99", "#e45756", Id::P99Ms),
    ("p99.9", "#72b7b2", Id::P999Ms),
];

/// Median, minimum and maximum of a metric over a scenario's repetitions.
fn spread(r: &ScenarioResult, metric: &Metric) -> (f64, f64, f64) {
    let v: Vec<f64> = r.all_measurements().into_iter().map(metric.get).collect();
    let (lo, hi) = stats::min_max(&v);
    (stats::median(&v), lo, hi)
}

/// Line colours, cycled.
pub(super) const PALETTE: [&str; 8] = [
    "#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2", "#9d755d",
];
/// Height of one legend line under a line chart.
const LEGEND_LINE: f64 = 16.0;

/// One line of a line chart: its name and the results it joins, one per value of the setting.
struct Line<'a> {
    name: String,
    points: Vec<(usize, &'a ScenarioResult)>,
}

/// The lines of the chart over `var` ([`crate::model::lines_over`]); each point's x is the
/// index of its `var` value in `values`.
fn lines_over<'a>(results: &'a [ScenarioResult], var: &str, values: &[String]) -> Vec<Line<'a>> {
    crate::model::lines_over(results, var)
        .into_iter()
        .map(|l| {
            let mut points: Vec<(usize, &ScenarioResult)> = l
                .points
                .iter()
                .filter_map(|(v, r)| Some((values.iter().position(|w| w == v)?, *r)))
                .collect();
            points.sort_by_key(|(x, _)| *x);
            Line {
                name: l.label(),
                points,
            }
        })
        .collect()
}

/// Every varying setting with its values in order of appearance.
fn axes_of(results: &[ScenarioResult]) -> Vec<(String, Vec<String>)> {
    crate::settings::matrix::varying(results.iter().map(|r| &r.combination))
        .into_iter()
        .map(|var| {
            let mut values: Vec<String> = Vec::new();
            for v in results.iter().filter_map(|r| r.combination.get(&var)) {
                if !values.contains(v) {
                    values.push(v.clone());
                }
            }
            (var, values)
        })
        .collect()
}

/// Height of the `panels` line panels of one varying setting with `lines` lines in the legend.
fn line_block_height(lines: usize, panels: f64) -> f64 {
    panels * (TOP + PANEL_HEIGHT + LABEL_SPACE) + lines as f64 * LEGEND_LINE
}

/// Whether any scenario's own services were costed (a baseline has none).
fn has_cost(results: &[ScenarioResult]) -> bool {
    let cost = Id::PathCost.metric();
    results.iter().any(|r| !(cost.get)(&r.measurement).is_nan())
}

/// The SVG document for a run's results.
pub(crate) fn render(results: &[ScenarioResult]) -> String {
    let n = results.len().max(1) as f64;
    let mut width = LEFT + RIGHT + n * GROUP_WIDTH;
    let axes = axes_of(results);
    let blocks: Vec<(String, Vec<String>, Vec<Line>)> = axes
        .into_iter()
        .map(|(var, values)| {
            let lines = lines_over(results, &var, &values);
            (var, values, lines)
        })
        .collect();
    if !blocks.is_empty() {
        // Room for the line charts' value labels.
        width = width.max(LEFT + RIGHT + 4.0 * GROUP_WIDTH);
    }
    let costed = has_cost(results);
    // Each line chart stands for one bar panel: as many of one as of the other.
    let charts: &[Chart] = if costed {
        &[Chart::Throughput, Chart::Consumed, Chart::P99, Chart::Cost]
    } else {
        &[Chart::Throughput, Chart::Consumed, Chart::P99]
    };
    let per_block = charts.len() as f64;
    let bars_height = per_block * (TOP + PANEL_HEIGHT + LABEL_SPACE);
    let height = bars_height
        + blocks
            .iter()
            .map(|(_, _, l)| line_block_height(l.len(), per_block))
            .sum::<f64>();
    let repeated = results.iter().any(|r| r.repetitions.len() > 1);
    let mut svg = document(width, height);
    let suffix = if repeated {
        ", median of repetitions, bars min–max"
    } else {
        ""
    };

    bar_panels(&mut svg, results, width, suffix, costed);

    let mut top = bars_height;
    for (var, values, lines) in &blocks {
        let mut at = top;
        for chart in charts {
            line_chart(&mut svg, at, width, var, values, lines, *chart);
            at += TOP + PANEL_HEIGHT + LABEL_SPACE;
        }
        legend(&mut svg, at, lines);
        top += line_block_height(lines.len(), per_block);
    }
    svg.push_str("</svg>\n");
    svg
}

/// The panels of one bar a scenario: the producer's and the consumer's throughput, the
/// latencies, and with `costed` the path's CPU per MB/s; `suffix` says what a bar is.
fn bar_panels(
    svg: &mut String,
    results: &[ScenarioResult],
    width: f64,
    suffix: &str,
    costed: bool,
) {
    let repeated = results.iter().any(|r| r.repetitions.len() > 1);
    let throughput = Bars {
        top: panel_top(0),
        metric: THROUGHPUT,
        class: "bar throughput",
        colour: "#4c78a8",
        title: format!("Producer throughput (rec/s{suffix})"),
        value: |v| format!("{v:.0} rec/s"),
        ratios: true,
    };
    bar_panel(svg, results, width, repeated, throughput);
    let consumed = Bars {
        top: panel_top(1),
        metric: CONSUMED,
        class: "bar consumed",
        colour: "#f58518",
        title: format!("Consumer throughput (rec/s{suffix})"),
        value: |v| format!("{v:.0} rec/s"),
        ratios: true,
    };
    bar_panel(svg, results, width, repeated, consumed);
    latency_panel(svg, results, width, suffix, repeated);
    if costed {
        // The path's own services' millicores per MB/s of produce + consume traffic; a
        // scenario without a path of its own gets no bar.
        let cost = Bars {
            top: panel_top(3),
            metric: Id::PathCost,
            class: "bar cost",
            colour: "#54a24b",
            title: format!("Path CPU (millicores per MB/s of produce + consume{suffix})"),
            value: |v| format!("{v:.2} mc per MB/s"),
            ratios: false,
        };
        bar_panel(svg, results, width, repeated, cost);
    }
}

/// One bar a scenario of one metric: what a single-bar panel draws.
struct Bars {
    /// The plot area's top.
    top: f64,
    metric: Id,
    class: &'static str,
    colour: &'static str,
    title: String,
    /// A bar's `<title>`, from its value.
    value: fn(f64) -> String,
    /// Each bar says its median's ratio to the reference scenario's (rates, not costs).
    ratios: bool,
}

/// A panel of one bar per scenario (the median, with its spread when repeated); a scenario
/// without the value (a baseline's path cost) gets its label and no bar.
fn bar_panel(svg: &mut String, results: &[ScenarioResult], width: f64, repeated: bool, b: Bars) {
    let metric = b.metric.metric();
    let series: Vec<(f64, f64, f64)> = results.iter().map(|r| spread(r, metric)).collect();
    let max = nice_ceiling(
        series
            .iter()
            .map(|s| s.2)
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max),
    );
    panel(svg, b.top, width, max, &b.title);
    for (i, (r, (med, lo, hi))) in results.iter().zip(&series).enumerate() {
        label(svg, i, b.top, r);
        if med.is_nan() {
            continue;
        }
        let bw = GROUP_WIDTH * 0.5;
        let x = LEFT + i as f64 * GROUP_WIDTH + (GROUP_WIDTH - bw) / 2.0;
        let title = format!("{}: {}", r.label(), (b.value)(*med));
        bar(svg, b.class, b.colour, x, bw, b.top, max, *med, &title);
        if repeated {
            error_bar(svg, x + bw / 2.0, b.top, max, *lo, *hi);
        }
        let ratio = match crate::model::reference_of(results, r) {
            _ if !b.ratios => continue,
            Some(base) => format!("{:.2}× ref", med / spread(base, metric).0),
            None if r.reference => "reference".to_string(),
            None => continue,
        };
        // Above the bar and its error bar, inside the plot area.
        let y = y_of(b.top, max, if repeated { hi.max(*med) } else { *med }) - 4.0;
        let _ = writeln!(
            svg,
            r#"<text class="ratio" x="{:.1}" y="{y:.1}" text-anchor="middle" font-size="11">{ratio}</text>"#,
            x + bw / 2.0
        );
    }
}

/// The producer's latency percentiles per scenario, as groups of bars with a legend.
fn latency_panel(
    svg: &mut String,
    results: &[ScenarioResult],
    width: f64,
    suffix: &str,
    repeated: bool,
) {
    let top = panel_top(2);
    let all: Vec<Vec<(f64, f64, f64)>> = results
        .iter()
        .map(|r| {
            LATENCIES
                .iter()
                .map(|(_, _, id)| spread(r, id.metric()))
                .collect()
        })
        .collect();
    let max = nice_ceiling(all.iter().flatten().map(|s| s.2).fold(0.0, f64::max));
    panel(
        svg,
        top,
        width,
        max,
        &format!("Producer latency percentiles (ms{suffix})"),
    );
    for (k, (name, colour, _)) in LATENCIES.iter().enumerate() {
        let x = width - RIGHT - 60.0 * (LATENCIES.len() - k) as f64;
        let _ = writeln!(
            svg,
            r#"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="{colour}"/><text x="{:.1}" y="{:.1}">{name}</text>"#,
            top - 24.0,
            x + 14.0,
            top - 15.0
        );
    }
    for (i, (r, values)) in results.iter().zip(&all).enumerate() {
        let bw = GROUP_WIDTH * 0.8 / LATENCIES.len() as f64;
        for (k, ((name, colour, _), (med, lo, hi))) in LATENCIES.iter().zip(values).enumerate() {
            let x = LEFT + i as f64 * GROUP_WIDTH + GROUP_WIDTH * 0.1 + k as f64 * bw;
            bar(
                svg,
                &format!("bar latency {}", name.replace('.', "")),
                colour,
                x,
                bw * 0.9,
                top,
                max,
                *med,
                &format!("{} {name}: {med:.1} ms", r.label()),
            );
            if repeated {
                error_bar(svg, x + bw * 0.45, top, max, *lo, *hi);
            }
        }
        label(svg, i, top, r);
    }
}

/// What a line chart shows.
#[derive(Clone, Copy)]
enum Chart {
    Throughput,
    Consumed,
    P99,
    Cost,
}

impl Chart {
    /// The metric of a result: the producer's rate, or its 99th percentile (from the intended
    /// send times where measured).
    fn value(self, r: &ScenarioResult) -> (f64, &'static str) {
        let v = match self {
            Chart::Throughput => (THROUGHPUT.metric().get)(&r.measurement),
            Chart::Consumed => (CONSUMED.metric().get)(&r.measurement),
            Chart::P99 => match &r.measurement.producer.intended {
                Some(i) => i.p99_ms,
                None => r.measurement.producer.p99_ms,
            },
            Chart::Cost => (Id::PathCost.metric().get)(&r.measurement),
        };
        (v, self.unit())
    }

    fn unit(self) -> &'static str {
        match self {
            Chart::Throughput | Chart::Consumed => "rec/s",
            Chart::P99 => "ms",
            Chart::Cost => "mc per MB/s",
        }
    }

    fn title(self, var: &str) -> String {
        match self {
            Chart::Throughput => format!("Producer throughput (rec/s, median) by {var}"),
            Chart::Consumed => format!("Consumer throughput (rec/s, median) by {var}"),
            Chart::P99 => format!(
                "Producer 99th percentile (ms, median; from the intended send times where \
                 measured) by {var}"
            ),
            Chart::Cost => {
                format!("Path CPU (millicores per MB/s of produce + consume, median) by {var}")
            }
        }
    }
}

/// A panel with one polyline per line over the values of `var`, each point titled.
fn line_chart(
    svg: &mut String,
    top: f64,
    width: f64,
    var: &str,
    values: &[String],
    lines: &[Line],
    chart: Chart,
) {
    let max = nice_ceiling(
        lines
            .iter()
            .flat_map(|l| &l.points)
            .map(|(_, r)| chart.value(r).0)
            .fold(0.0, f64::max),
    );
    panel(svg, top, width, max, &chart.title(var));
    let step = (width - LEFT - RIGHT) / values.len().max(1) as f64;
    let x_of = |x: usize| LEFT + (x as f64 + 0.5) * step;
    for (x, v) in values.iter().enumerate() {
        let _ = writeln!(
            svg,
            r#"<text class="value" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x_of(x),
            top + PANEL_HEIGHT + 18.0,
            escape(v)
        );
    }
    for (k, line) in lines.iter().enumerate() {
        let colour = PALETTE[k % PALETTE.len()];
        // A point without the value (a baseline's path cost) is not drawn.
        let drawn: Vec<&(usize, &ScenarioResult)> = line
            .points
            .iter()
            .filter(|(_, r)| chart.value(r).0.is_finite())
            .collect();
        if drawn.is_empty() {
            continue;
        }
        let points: Vec<String> = drawn
            .iter()
            .map(|(x, r)| format!("{:.1},{:.1}", x_of(*x), y_of(top, max, chart.value(r).0)))
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline class="line" points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
            points.join(" ")
        );
        for (x, r) in drawn {
            let (v, unit) = chart.value(r);
            let _ = writeln!(
                svg,
                r#"<circle class="point" cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"><title>{}</title></circle>"#,
                x_of(*x),
                y_of(top, max, v),
                escape(&format!(
                    "{}, {var}={}: {} {unit}",
                    line.name,
                    values[*x],
                    trim(v)
                ))
            );
        }
    }
}

/// The names of a line chart's lines, one per row in their colours.
fn legend(svg: &mut String, top: f64, lines: &[Line]) {
    for (k, line) in lines.iter().enumerate() {
        let y = top + k as f64 * LEGEND_LINE;
        let colour = PALETTE[k % PALETTE.len()];
        let _ = writeln!(
            svg,
            r#"<rect x="{LEFT}" y="{:.1}" width="10" height="10" fill="{colour}"/><text class="legend" x="{:.1}" y="{:.1}">{}</text>"#,
            y - 10.0,
            LEFT + 14.0,
            y,
            escape(&line.name)
        );
    }
}

/// The start of a document of this size, on a white background (close it with `</svg>`).
pub(super) fn document(width: f64, height: f64) -> String {
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        svg,
        r#"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="white"/>"#
    );
    svg
}

/// Title, axes and five labelled grid lines of a panel whose plot area starts at `top`.
pub(super) fn panel(svg: &mut String, top: f64, width: f64, max: f64, title: &str) {
    let _ = writeln!(
        svg,
        r#"<text x="{LEFT}" y="{:.1}" font-size="14" font-weight="bold">{}</text>"#,
        top - 20.0,
        escape(title)
    );
    for k in 0..=5 {
        let v = max * k as f64 / 5.0;
        let y = y_of(top, max, v);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            width - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            short(v)
        );
    }
    let _ = writeln!(
        svg,
        r#"<line x1="{LEFT}" y1="{top:.1}" x2="{LEFT}" y2="{:.1}" stroke="black"/>"#,
        top + PANEL_HEIGHT
    );
}

#[allow(clippy::too_many_arguments)]
fn bar(
    svg: &mut String,
    class: &str,
    colour: &str,
    x: f64,
    w: f64,
    top: f64,
    max: f64,
    v: f64,
    title: &str,
) {
    let y = y_of(top, max, v);
    let _ = writeln!(
        svg,
        r#"<rect class="{class}" x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{:.1}" fill="{colour}"><title>{}</title></rect>"#,
        top + PANEL_HEIGHT - y,
        escape(title)
    );
}

fn error_bar(svg: &mut String, x: f64, top: f64, max: f64, lo: f64, hi: f64) {
    let (y1, y2) = (y_of(top, max, lo), y_of(top, max, hi));
    let _ = writeln!(
        svg,
        r#"<path class="error" d="M{:.1} {y1:.1}H{:.1}M{x:.1} {y1:.1}V{y2:.1}M{:.1} {y2:.1}H{:.1}" stroke="black" fill="none"/>"#,
        x - 4.0,
        x + 4.0,
        x - 4.0,
        x + 4.0
    );
}

/// A bar group's name under the panel, wrapped to its group's width (the whole name in its
/// `<title>`), and its combination under it in a matrix.
fn label(svg: &mut String, i: usize, top: f64, r: &ScenarioResult) {
    let x = LEFT + (i as f64 + 0.5) * GROUP_WIDTH;
    let y = top + PANEL_HEIGHT + 18.0;
    let _ = write!(
        svg,
        r#"<text class="scenario" x="{x:.1}" y="{y:.1}" text-anchor="middle"><title>{}</title>"#,
        escape(&r.label())
    );
    let lines = wrap(&r.name, NAME_LINES);
    tspans(svg, x, &lines, LINE_HEIGHT);
    if !r.combination.is_empty() {
        let y = y + lines.len() as f64 * LINE_HEIGHT;
        let _ = write!(
            svg,
            r#"<text class="combination" x="{x:.1}" y="{y:.1}" text-anchor="middle" font-size="10">"#
        );
        let combination = crate::settings::matrix::label(&r.combination);
        tspans(svg, x, &wrap(&combination, COMBINATION_LINES), 12.0);
    }
}

/// `lines` as the lines of the open `<text>` at `x`, `height` apart; closes the text.
fn tspans(svg: &mut String, x: f64, lines: &[String], height: f64) {
    for (k, line) in lines.iter().enumerate() {
        let dy = if k == 0 { 0.0 } else { height };
        let _ = write!(
            svg,
            r#"<tspan x="{x:.1}" dy="{dy:.1}">{}</tspan>"#,
            escape(line)
        );
    }
    svg.push_str("</text>\n");
}

/// `text` in at most `max_lines` lines of at most [`LABEL_CHARS`] characters, broken after a
/// `-`, `_`, `,` or space where one is near enough, else within a word; a name longer than that
/// ends in `…` (its `<title>` holds it whole).
fn wrap(text: &str, max_lines: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut lines = Vec::new();
    let mut start = 0;
    while start < chars.len() && lines.len() < max_lines {
        let rest = chars.len() - start;
        let end = if rest <= LABEL_CHARS {
            chars.len()
        } else {
            // The last break within the line, if it leaves the line at least half full.
            (start + LABEL_CHARS / 2..start + LABEL_CHARS)
                .rev()
                .find(|&k| matches!(chars[k], '-' | '_' | ',' | ' '))
                .map_or(start + LABEL_CHARS, |k| k + 1)
        };
        let line: String = chars[start..end].iter().collect();
        lines.push(line.trim().to_string());
        start = end;
    }
    if start < chars.len() {
        let last = lines.last_mut().expect("a line");
        let mut cut: Vec<char> = last.chars().collect();
        cut.truncate(LABEL_CHARS - 1);
        *last = cut.into_iter().collect::<String>() + "…";
    }
    lines
}

pub(super) fn y_of(top: f64, max: f64, v: f64) -> f64 {
    let v = if v.is_finite() {
        v.clamp(0.0, max)
    } else {
        0.0
    };
    top + PANEL_HEIGHT - v / max * PANEL_HEIGHT
}

/// The smallest 1, 2 or 5 x 10^k at or above `v` (1 for nothing to show).
pub(super) fn nice_ceiling(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let base = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * base)
        .find(|c| *c >= v)
        .unwrap_or(10.0 * base)
}

/// An axis label: 12k, 1.5M, 0.25.
fn short(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if v >= 1e3 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

pub(super) fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Escapes text for XML content and attributes.
pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_throughput_bar_and_four_latency_bars_per_scenario() {
        let mut results = crate::present::report::tests::sample();
        results[0].name = "01-<odd> & \"name\"".into();
        let svg = render(&results);
        roxmltree::Document::parse(&svg).unwrap();
        assert_eq!(svg.matches(r#"class="bar throughput""#).count(), 2);
        assert_eq!(svg.matches(r#"class="bar consumed""#).count(), 2);
        assert_eq!(svg.matches(r#"class="bar latency "#).count(), 8);
        assert_eq!(svg.matches(r#"class="scenario""#).count(), 6);
        assert!(svg.contains("01-&lt;odd&gt; &amp; &quot;name&quot;"));
        // Single runs have no error bars.
        assert!(!svg.contains(r#"class="error""#));
    }

    #[test]
    fn repeated_runs_get_min_max_error_bars() {
        let mut results = crate::present::report::tests::sample();
        for r in &mut results {
            let mut slow = r.measurement.clone();
            slow.producer.rate_rec_s *= 0.5;
            r.repetitions = vec![r.measurement.clone(), slow];
        }
        let svg = render(&results);
        roxmltree::Document::parse(&svg).unwrap();
        // One per throughput bar (producer and consumer) and one per latency bar.
        assert_eq!(svg.matches(r#"class="error""#).count(), 2 + 2 + 8);
        assert!(svg.contains("bars min–max"));
    }

    /// The bars of `class`, in document order, as (title, height).
    fn bars(svg: &str, class: &str) -> Vec<(String, f64)> {
        svg.lines()
            .filter(|l| l.contains(&format!(r#"class="{class}""#)))
            .map(|l| {
                let h = &l[l.find("height=\"").unwrap() + 8..];
                let t = &l[l.find("<title>").unwrap() + 7..l.find("</title>").unwrap()];
                (t.to_string(), h[..h.find('"').unwrap()].parse().unwrap())
            })
            .collect()
    }

    #[test]
    fn the_bars_draw_the_values_in_the_results() {
        let results = crate::present::report::tests::sample();
        let svg = render(&results);
        let rates = bars(&svg, "bar throughput");
        assert_eq!(rates.len(), results.len());
        for ((title, height), r) in rates.iter().zip(&results) {
            let rate = r.measurement.producer.rate_rec_s;
            assert_eq!(*title, format!("{}: {rate:.0} rec/s", r.label()));
            // Heights are in proportion to the values (within the drawing's 0.1 px rounding).
            let first = results[0].measurement.producer.rate_rec_s;
            let expected = rates[0].1 * rate / first;
            assert!(
                (height - expected).abs() <= 0.15,
                "{height} against {expected}"
            );
        }
        type Field = fn(&ScenarioResult) -> f64;
        let percentiles: [(&str, Field); 4] = [
            ("p50", |r| r.measurement.producer.p50_ms),
            ("p95", |r| r.measurement.producer.p95_ms),
            ("p99", |r| r.measurement.producer.p99_ms),
            ("p99.9", |r| r.measurement.producer.p999_ms),
        ];
        for (name, field) in percentiles {
            let drawn = bars(&svg, &format!("bar latency {}", name.replace('.', "")));
            assert_eq!(drawn.len(), results.len(), "{name}");
            for ((title, _), r) in drawn.iter().zip(&results) {
                assert_eq!(*title, format!("{} {name}: {:.1} ms", r.label(), field(r)));
            }
        }
    }

    #[test]
    fn the_consumer_bars_draw_the_consumer_rates() {
        let results = crate::present::report::tests::sample();
        let svg = render(&results);
        let drawn = bars(&svg, "bar consumed");
        assert_eq!(drawn.len(), results.len());
        for ((title, height), r) in drawn.iter().zip(&results) {
            let rate = r.measurement.consumer.consumed_rec_s;
            assert_eq!(*title, format!("{}: {rate:.0} rec/s", r.label()));
            let first = results[0].measurement.consumer.consumed_rec_s;
            let expected = drawn[0].1 * rate / first;
            assert!((height - expected).abs() <= 0.15, "{height} vs {expected}");
        }
    }

    #[test]
    fn each_rate_bar_says_its_ratio_to_the_reference() {
        let results = crate::present::report::tests::sample();
        assert!(results[0].reference && !results[1].reference);
        let svg = render(&results);
        let ratios: Vec<&str> = svg
            .lines()
            .filter(|l| l.starts_with("<text class=\"ratio\""))
            .map(|l| &l[l.find('>').unwrap() + 1..l.find("</text>").unwrap()])
            .collect();
        let p = |r: &ScenarioResult| r.measurement.producer.rate_rec_s;
        let c = |r: &ScenarioResult| r.measurement.consumer.consumed_rec_s;
        let expected = vec![
            "reference".to_string(),
            format!("{:.2}× ref", p(&results[1]) / p(&results[0])),
            "reference".to_string(),
            format!("{:.2}× ref", c(&results[1]) / c(&results[0])),
        ];
        assert_eq!(ratios, expected);
    }

    /// Each scenario label's lines, from the first panel's labels.
    fn label_lines(svg: &str) -> Vec<Vec<String>> {
        svg.lines()
            .filter(|l| l.contains(r#"class="scenario""#))
            .map(|l| {
                l.split("<tspan")
                    .skip(1)
                    .map(|t| t[t.find('>').unwrap() + 1..t.find("</tspan>").unwrap()].to_string())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn long_scenario_names_wrap_within_their_group_and_never_overlap() {
        let mut results = crate::present::report::tests::sample();
        let names = [
            "01-no-proxy-baseline",
            "02-no-filters",
            "03-transform-filter",
            "04-envelope-encryption-filter",
            "05-envelope-encryption-filter-no-encrypt",
            // 60 characters, one with no break at all.
            "06-a-scenario-name-of-sixty-characters-to-test-the-wrapping-",
            "07abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdef",
            // Longer than four lines hold: cut, with an ellipsis.
            "08-abcdefghijklmnopqrstuvwxyz-abcdefghijklmnopqrstuvwxyz-abcdefghijklmnopqrstuvwxyz",
        ];
        let template = results[0].clone();
        results = names
            .iter()
            .map(|n| ScenarioResult {
                name: n.to_string(),
                ..template.clone()
            })
            .collect();
        let svg = render(&results);
        roxmltree::Document::parse(&svg).unwrap();
        let labels = label_lines(&svg);
        assert_eq!(labels.len(), names.len() * 3, "three bar panels");
        for (lines, name) in labels.iter().zip(names.iter().cycle()) {
            assert!(!lines.is_empty() && lines.len() <= NAME_LINES, "{lines:?}");
            // Each line fits its group (at most 7 px a character at 12 px): labels of
            // neighbouring groups, centred 140 px apart, cannot meet.
            for line in lines {
                assert!(line.chars().count() <= LABEL_CHARS, "{line:?}");
                assert!(line.chars().count() as f64 * 7.0 < GROUP_WIDTH, "{line:?}");
            }
            // The lines read as the name (whole, or cut with an ellipsis), and the whole name
            // is the label's title.
            let joined: String = lines.concat();
            let shown = joined.trim_end_matches('…');
            assert!(
                name.replace(' ', "").starts_with(shown),
                "{joined:?} of {name}"
            );
            assert!(svg.contains(&format!("<title>{name}</title>")), "{name}");
        }
        // Names break after their hyphens where they have them.
        assert_eq!(
            wrap("05-envelope-encryption-filter-no-encrypt", NAME_LINES),
            ["05-envelope-", "encryption-filter-", "no-encrypt"]
        );
        // Labels stay above the next panel's title.
        let first_panel_labels_end = panel_top(0) + PANEL_HEIGHT + LABEL_SPACE;
        assert!(first_panel_labels_end < panel_top(1) - 20.0);
    }

    #[test]
    fn the_paths_cost_is_drawn_as_the_results_hold_it() {
        use crate::accounting::cost::{PhaseCost, Role, ServiceCost};
        let mut results = crate::present::report::tests::sample();
        assert!(!render(&results).contains("bar cost"));
        // 02's proxy: 0.4 s of CPU for 100 MB in each of two phases, 4 mc per MB/s.
        results[1].measurement.cost = ["produce", "consume"]
            .map(|phase| PhaseCost {
                phase: phase.into(),
                records: 100_000,
                record_bytes: 100_000_000,
                seconds: 10.0,
                start_unix_s: None,
                host_steal_percent: None,
                services: vec![ServiceCost {
                    service: "proxy".into(),
                    role: Role::Path,
                    cpu_s: 0.4,
                    rx_bytes: 0,
                    tx_bytes: 0,
                    gc: None,
                    threads: None,
                }],
            })
            .to_vec();
        let svg = render(&results);
        roxmltree::Document::parse(&svg).unwrap();
        let drawn = bars(&svg, "bar cost");
        // The baseline has no path of its own: one bar, 02's, at its value.
        assert_eq!(drawn.len(), 1);
        assert_eq!(drawn[0].0, "02-no-filters: 4.00 mc per MB/s");
        assert!(svg.contains("Path CPU (millicores per MB/s of produce + consume)"));
    }

    #[test]
    fn taller_bars_for_larger_values() {
        let results = crate::present::report::tests::sample();
        let svg = render(&results);
        let heights: Vec<f64> = svg
            .lines()
            .filter(|l| l.contains(r#"class="bar throughput""#))
            .map(|l| {
                let h = &l[l.find("height=\"").unwrap() + 8..];
                h[..h.find('"').unwrap()].parse().unwrap()
            })
            .collect();
        // 48671 rec/s against 47189 rec/s.
        assert!(heights[0] > heights[1], "{heights:?}");
    }

    #[test]
    fn a_matrix_draws_a_line_per_scenario_over_each_varying_setting() {
        let base = crate::present::report::tests::sample();
        let mut results = Vec::new();
        for (size, scale) in [("100", 1.0), ("1000", 0.5), ("10000", 0.25)] {
            for r in &base {
                let mut r = r.clone();
                r.combination.insert("RECORD_SIZE".into(), size.into());
                r.measurement.producer.rate_rec_s *= scale;
                results.push(r);
            }
        }
        let svg = render(&results);
        roxmltree::Document::parse(&svg).unwrap();
        // Two lines (one per scenario) in each of the three charts over RECORD_SIZE: the
        // producer's and the consumer's rates and the 99th percentile.
        assert_eq!(svg.matches(r#"class="line""#).count(), 6);
        assert_eq!(svg.matches(r#"class="point""#).count(), 18);
        assert!(svg.contains("Producer throughput (rec/s, median) by RECORD_SIZE"));
        assert!(svg.contains("Consumer throughput (rec/s, median) by RECORD_SIZE"));
        assert!(svg.contains("01-no-proxy-baseline, RECORD_SIZE=1000: "));
        assert_eq!(svg.matches(r#"class="legend""#).count(), 2);
        // The throughput line falls with the record size: y grows down the panel.
        let first = svg.lines().find(|l| l.contains(r#"class="line""#)).unwrap();
        let ys: Vec<f64> = first[first.find("points=\"").unwrap() + 8..]
            .split('"')
            .next()
            .unwrap()
            .split(' ')
            .map(|p| p.split(',').nth(1).unwrap().parse().unwrap())
            .collect();
        assert!(ys[0] < ys[1] && ys[1] < ys[2], "{ys:?}");
        // Without a matrix, no line charts.
        assert!(!render(&base).contains(r#"class="line""#));
    }

    #[test]
    fn an_empty_run_is_still_a_valid_document() {
        roxmltree::Document::parse(&render(&[])).unwrap();
    }

    #[test]
    fn nice_axis_maxima() {
        assert_eq!(nice_ceiling(48671.0), 50000.0);
        assert_eq!(nice_ceiling(1354.0), 2000.0);
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(short(50000.0), "50k");
        assert_eq!(short(1.5e6), "1.5M");
    }
}
