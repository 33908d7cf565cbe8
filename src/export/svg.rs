//! `charts.svg`: a hand-written SVG of a run, beside its tables. The upper panel shows producer
//! throughput per scenario as bars, the lower one the latency percentiles (p50, p95, p99,
//! p99.9) per scenario as grouped bars; when scenarios were repeated, each bar is the median and
//! carries a min–max error bar. Every bar has a `<title>` with its exact value.

use std::fmt::Write;

use anyhow::Result;

use super::Exporter;
use crate::metrics::{self, Metric};
use crate::model::ScenarioResult;
use crate::results::RunInfo;
use crate::stats;

/// The file name of the charts (the Markdown tables link it).
pub const FILE: &str = "charts.svg";

/// The charts.
pub struct Svg;

impl Exporter for Svg {
    fn files(&self, _info: &RunInfo, results: &[ScenarioResult]) -> Result<Vec<(String, String)>> {
        Ok(vec![(FILE.to_string(), render(results))])
    }
}

const PANEL_HEIGHT: f64 = 220.0;
const TOP: f64 = 40.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 20.0;
const GROUP_WIDTH: f64 = 140.0;
const LABEL_SPACE: f64 = 50.0;

/// The throughput panel's metric (registry name).
const THROUGHPUT: &str = "Rate rec/s";

/// The latency series: label, colour, metric (registry name).
const LATENCIES: [(&str, &str, &str); 4] = [
    ("p50", "#4c78a8", "Percentile50"),
    ("p95", "#f58518", "Percentile95"),
    ("p99", "#e45756", "Percentile99"),
    ("p99.9", "#72b7b2", "Percentile999"),
];

/// Median, minimum and maximum of a metric over a scenario's repetitions.
fn spread(r: &ScenarioResult, metric: &Metric) -> (f64, f64, f64) {
    let v: Vec<f64> = r.all_measurements().into_iter().map(metric.get).collect();
    let (lo, hi) = stats::min_max(&v);
    (stats::median(&v), lo, hi)
}

/// The SVG document for a run's results.
pub fn render(results: &[ScenarioResult]) -> String {
    let n = results.len().max(1) as f64;
    let width = LEFT + RIGHT + n * GROUP_WIDTH;
    let height = 2.0 * (TOP + PANEL_HEIGHT + LABEL_SPACE);
    let repeated = results.iter().any(|r| r.repetitions.len() > 1);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        svg,
        r#"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="white"/>"#
    );
    let suffix = if repeated {
        ", median of repetitions, bars min–max"
    } else {
        ""
    };

    // Throughput panel.
    let series: Vec<(f64, f64, f64)> = results
        .iter()
        .map(|r| spread(r, metrics::named(THROUGHPUT)))
        .collect();
    let top = TOP;
    let max = nice_ceiling(series.iter().map(|s| s.2).fold(0.0, f64::max));
    panel(
        &mut svg,
        top,
        width,
        max,
        &format!("Producer throughput (rec/s{suffix})"),
    );
    for (i, (r, (med, lo, hi))) in results.iter().zip(&series).enumerate() {
        let bw = GROUP_WIDTH * 0.5;
        let x = LEFT + i as f64 * GROUP_WIDTH + (GROUP_WIDTH - bw) / 2.0;
        bar(
            &mut svg,
            "bar throughput",
            "#4c78a8",
            x,
            bw,
            top,
            max,
            *med,
            &format!("{}: {med:.0} rec/s", r.name),
        );
        if repeated {
            error_bar(&mut svg, x + bw / 2.0, top, max, *lo, *hi);
        }
        label(&mut svg, i, top, &r.name);
    }

    // Latency panel.
    let top = 2.0 * TOP + PANEL_HEIGHT + LABEL_SPACE;
    let all: Vec<Vec<(f64, f64, f64)>> = results
        .iter()
        .map(|r| {
            LATENCIES
                .iter()
                .map(|(_, _, name)| spread(r, metrics::named(name)))
                .collect()
        })
        .collect();
    let max = nice_ceiling(all.iter().flatten().map(|s| s.2).fold(0.0, f64::max));
    panel(
        &mut svg,
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
                &mut svg,
                &format!("bar latency {}", name.replace('.', "")),
                colour,
                x,
                bw * 0.9,
                top,
                max,
                *med,
                &format!("{} {name}: {med:.1} ms", r.name),
            );
            if repeated {
                error_bar(&mut svg, x + bw * 0.45, top, max, *lo, *hi);
            }
        }
        label(&mut svg, i, top, &r.name);
    }
    svg.push_str("</svg>\n");
    svg
}

/// Title, axes and five labelled grid lines of a panel whose plot area starts at `top`.
fn panel(svg: &mut String, top: f64, width: f64, max: f64, title: &str) {
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

fn label(svg: &mut String, i: usize, top: f64, name: &str) {
    let _ = writeln!(
        svg,
        r#"<text class="scenario" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + (i as f64 + 0.5) * GROUP_WIDTH,
        top + PANEL_HEIGHT + 18.0,
        escape(name)
    );
}

fn y_of(top: f64, max: f64, v: f64) -> f64 {
    let v = if v.is_finite() {
        v.clamp(0.0, max)
    } else {
        0.0
    };
    top + PANEL_HEIGHT - v / max * PANEL_HEIGHT
}

/// The smallest 1, 2 or 5 x 10^k at or above `v` (1 for nothing to show).
fn nice_ceiling(v: f64) -> f64 {
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

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Escapes text for XML content and attributes.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A small XML well-formedness check (tags nest and close, attributes are quoted, entities
/// are known): enough to catch a broken chart without an XML dependency. Returns the element
/// names in document order.
pub fn check_well_formed(xml: &str) -> Result<Vec<String>, String> {
    let mut stack: Vec<String> = Vec::new();
    let mut seen = Vec::new();
    let mut rest = xml;
    let mut root_closed = false;
    while let Some(lt) = rest.find('<') {
        check_text(&rest[..lt])?;
        if root_closed && !rest[..lt].trim().is_empty() {
            return Err("text after the root element".into());
        }
        let gt = rest[lt..].find('>').ok_or("unterminated tag")? + lt;
        let tag = &rest[lt + 1..gt];
        rest = &rest[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack
                .pop()
                .ok_or(format!("</{name}> without an opening tag"))?;
            if open != name.trim() {
                return Err(format!("<{open}> closed by </{name}>"));
            }
            root_closed = stack.is_empty();
            continue;
        }
        if root_closed {
            return Err("a second root element".into());
        }
        let self_closing = tag.ends_with('/');
        let body = tag.trim_end_matches('/');
        let name: String = body.chars().take_while(|c| !c.is_whitespace()).collect();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_alphanumeric() || ":-_.".contains(c))
        {
            return Err(format!("bad element name in <{tag}>"));
        }
        check_attributes(&body[name.len()..])?;
        seen.push(name.clone());
        if self_closing {
            root_closed = stack.is_empty();
        } else {
            stack.push(name);
        }
    }
    check_text(rest)?;
    if let Some(open) = stack.pop() {
        return Err(format!("<{open}> is never closed"));
    }
    if seen.is_empty() {
        return Err("no element".into());
    }
    Ok(seen)
}

fn check_attributes(mut s: &str) -> Result<(), String> {
    loop {
        s = s.trim_start();
        if s.is_empty() {
            return Ok(());
        }
        let eq = s.find('=').ok_or(format!("attribute without value: {s}"))?;
        let name = s[..eq].trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(format!("bad attribute name {name:?}"));
        }
        let after = &s[eq + 1..];
        let quote = after.chars().next().ok_or("attribute value missing")?;
        if quote != '"' && quote != '\'' {
            return Err(format!("unquoted value of {name}"));
        }
        let end = after[1..]
            .find(quote)
            .ok_or(format!("unterminated value of {name}"))?;
        check_text(&after[1..1 + end])?;
        s = &after[end + 2..];
    }
}

fn check_text(s: &str) -> Result<(), String> {
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        let semi = rest[amp..].find(';').ok_or("unterminated entity")? + amp;
        let entity = &rest[amp + 1..semi];
        let known =
            matches!(entity, "amp" | "lt" | "gt" | "quot" | "apos") || entity.starts_with('#');
        if !known {
            return Err(format!("unknown entity &{entity};"));
        }
        rest = &rest[semi + 1..];
    }
    if s.contains('<') {
        return Err("stray <".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_throughput_bar_and_four_latency_bars_per_scenario() {
        let mut results = crate::report::tests::sample();
        results[0].name = "01-<odd> & \"name\"".into();
        let svg = render(&results);
        check_well_formed(&svg).unwrap();
        assert_eq!(svg.matches(r#"class="bar throughput""#).count(), 2);
        assert_eq!(svg.matches(r#"class="bar latency "#).count(), 8);
        assert_eq!(svg.matches(r#"class="scenario""#).count(), 4);
        assert!(svg.contains("01-&lt;odd&gt; &amp; &quot;name&quot;"));
        // Single runs have no error bars.
        assert!(!svg.contains(r#"class="error""#));
    }

    #[test]
    fn repeated_runs_get_min_max_error_bars() {
        let mut results = crate::report::tests::sample();
        for r in &mut results {
            let mut slow = r.measurement.clone();
            slow.producer.rate_rec_s *= 0.5;
            r.repetitions = vec![r.measurement.clone(), slow];
        }
        let svg = render(&results);
        check_well_formed(&svg).unwrap();
        // One per throughput bar and one per latency bar.
        assert_eq!(svg.matches(r#"class="error""#).count(), 2 + 8);
        assert!(svg.contains("bars min–max"));
    }

    #[test]
    fn taller_bars_for_larger_values() {
        let results = crate::report::tests::sample();
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
    fn an_empty_run_is_still_a_valid_document() {
        check_well_formed(&render(&[])).unwrap();
    }

    #[test]
    fn the_well_formedness_check_rejects_broken_documents() {
        for bad in [
            "<svg><g></svg>",
            "<svg>",
            "<svg a=b/>",
            "<svg>&nbsp;</svg>",
            "<svg/><svg/>",
            "plain text",
        ] {
            assert!(check_well_formed(bad).is_err(), "{bad}");
        }
        assert_eq!(
            check_well_formed("<a x='1'><b/>&amp;</a>").unwrap(),
            ["a", "b"]
        );
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
