//! The comparison as one self-contained HTML page (`compare --report FILE`): what the
//! pull-request comment says (summary, method, warnings, every metric), and for each primary
//! metric a chart of its two sides: every observation a point, each side's median a line, and
//! the band of the detectable change around the base median, so a reader sees at once whether
//! the sides overlap and how large a change these observations could have found.

use std::fmt::Write;
use std::path::Path;

use anyhow::{Context, Result};

use super::{detectable, num, COLUMNS};
use crate::analysis::compare::{pct, Comparison, Row, Verdict};
use crate::present::export::svg::escape;

const WIDTH: f64 = 340.0;
const HEIGHT: f64 = 240.0;
/// The plot area inside a chart: room for the title above, the values left, the sides below.
const PLOT_LEFT: f64 = 70.0;
const PLOT_TOP: f64 = 56.0;
const PLOT_BOTTOM: f64 = 200.0;
/// Characters of a chart title line at 12 px within the chart's width.
const TITLE_CHARS: usize = 44;

const STYLE: &str = "
body { font-family: sans-serif; font-size: 14px; margin: 24px; color: #222; max-width: 1400px; }
h1 { font-size: 20px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 8px 0 16px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; }
td.name { text-align: left; white-space: normal; overflow-wrap: anywhere; max-width: 320px; }
tr.regression td { background: #fde2e2; } tr.improvement td { background: #e2f5e2; }
.warning { color: #a33; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
";

/// Writes the page to `path` (whole or not at all: a temporary file renamed into place).
pub(crate) fn write(c: &Comparison, path: &Path) -> Result<()> {
    let tmp = path.with_extension("html.tmp");
    std::fs::write(&tmp, render(c)).with_context(|| {
        format!(
            "--report {}: cannot write {}",
            path.display(),
            tmp.display()
        )
    })?;
    std::fs::rename(&tmp, path).with_context(|| {
        let _ = std::fs::remove_file(&tmp);
        format!("--report {}: cannot write it", path.display())
    })
}

/// The page.
pub(crate) fn render(c: &Comparison) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>perf-tests compare</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
    );
    let _ = writeln!(h, "<h1>perf-tests compare</h1>");
    let _ = writeln!(
        h,
        "<p id=\"summary\"><b>{}</b></p>",
        escape(&super::summary(c))
    );
    let _ = writeln!(
        h,
        "<p>Base <code>{}</code>, new <code>{}</code>. {}</p>",
        escape(&c.base.display().to_string()),
        escape(&c.new.display().to_string()),
        escape(&super::method(c))
    );
    if !c.warnings.is_empty() {
        h.push_str("<ul id=\"warnings\">\n");
        for w in &c.warnings {
            let _ = writeln!(h, "<li class=\"warning\">{}</li>", escape(w));
        }
        h.push_str("</ul>\n");
    }
    let _ = writeln!(h, "<h2>Primary metrics</h2>\n<div class=\"charts\">");
    for row in c.rows.iter().filter(|r| r.primary) {
        h.push_str(&chart(row));
    }
    h.push_str("</div>\n");
    let _ = writeln!(h, "<h2>Every metric</h2>");
    h.push_str("<table id=\"table-metrics\">\n<thead><tr>");
    for col in COLUMNS {
        let _ = write!(h, "<th>{col}</th>");
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for row in &c.rows {
        let class = match row.verdict {
            Verdict::Regression => " class=\"regression\"",
            Verdict::Improvement => " class=\"improvement\"",
            _ => "",
        };
        let _ = write!(h, "<tr{class}>");
        for (k, cell) in super::cells(row).iter().enumerate() {
            let class = if k == 0 { " class=\"name\"" } else { "" };
            let _ = write!(h, "<td{class}>{}</td>", escape(cell));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table>\n</body>\n</html>\n");
    h
}

/// One primary metric's two sides: the observations as points (spread sideways by their order so
/// equal values stay visible), each side's median as a line, and the base median ± the
/// detectable change as a band.
fn chart(row: &Row) -> String {
    let (base, new) = &row.observations;
    let band = row
        .detectable_pct
        .filter(|d| d.is_finite())
        .map(|d| (row.base * (1.0 - d / 100.0), row.base * (1.0 + d / 100.0)));
    let mut all: Vec<f64> = base.iter().chain(new).copied().collect();
    if let Some((lo, hi)) = band {
        all.extend([lo, hi]);
    }
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.01).max(1e-9);
    let (lo, hi) = (lo - pad, hi + pad);
    let y = |v: f64| PLOT_BOTTOM - (v - lo) / (hi - lo) * (PLOT_BOTTOM - PLOT_TOP);
    let column = |k: usize| PLOT_LEFT + (WIDTH - PLOT_LEFT - 20.0) * (0.25 + 0.5 * k as f64);

    let mut s = String::new();
    chart_heading(&mut s, row);
    if let Some((blo, bhi)) = band {
        let _ = write!(
            s,
            r##"<rect class="detectable" x="{PLOT_LEFT}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#f0e6a0" opacity="0.6"><title>base median ± the detectable change ({})</title></rect>"##,
            y(bhi),
            WIDTH - PLOT_LEFT - 20.0,
            (y(blo) - y(bhi)).max(0.5),
            escape(&detectable(row.detectable_pct))
        );
    }
    // The value axis: the padded range's ends, a plot's height apart whatever the spread (the
    // data's own ends overlap when the observations nearly agree).
    for v in [lo, hi] {
        let _ = write!(
            s,
            r#"<text class="axis" x="{:.1}" y="{:.1}" text-anchor="end" font-size="10">{}</text>"#,
            PLOT_LEFT - 6.0,
            y(v) + 3.0,
            escape(&num(v))
        );
    }
    let _ = write!(
        s,
        r##"<path d="M{PLOT_LEFT} {PLOT_TOP}V{PLOT_BOTTOM}H{:.1}" stroke="#888" fill="none"/>"##,
        WIDTH - 20.0
    );
    for (k, (side, values, median, colour)) in [
        ("base", base, row.base, "#4c78a8"),
        ("new", new, row.new, "#e45756"),
    ]
    .into_iter()
    .enumerate()
    {
        chart_side(&mut s, side, values, median, colour, column(k), &y);
    }
    let _ = write!(
        s,
        r#"<text class="note" x="8" y="{:.1}" font-size="10">band: detectable change {}</text>"#,
        HEIGHT - 8.0,
        escape(&detectable(row.detectable_pct))
    );
    s.push_str("</svg>\n");
    s
}

/// A chart's frame, title (the scenario and metric, wrapped) and verdict line.
fn chart_heading(s: &mut String, row: &Row) {
    let verdict = match row.verdict_label().as_str() {
        "" => "unchanged".to_string(),
        v => v.to_string(),
    };
    let _ = write!(
        s,
        r##"<svg class="compare" xmlns="http://www.w3.org/2000/svg" width="{WIDTH:.0}" height="{HEIGHT:.0}" viewBox="0 0 {WIDTH:.0} {HEIGHT:.0}" font-family="sans-serif" font-size="12"><rect width="{WIDTH:.0}" height="{HEIGHT:.0}" fill="white" stroke="#ccc"/>"##
    );
    let title = format!("{}: {}", row.scenario, row.metric);
    let _ = write!(
        s,
        r#"<text class="title" x="8" y="16" font-weight="bold"><title>{}</title>"#,
        escape(&title)
    );
    for (k, line) in wrap(&title, 2).iter().enumerate() {
        let dy = if k == 0 { 0 } else { 14 };
        let _ = write!(s, r#"<tspan x="8" dy="{dy}">{}</tspan>"#, escape(line));
    }
    s.push_str("</text>");
    let _ = write!(
        s,
        r#"<text class="verdict" x="8" y="46" font-size="11">{} {}, p {}</text>"#,
        escape(&verdict),
        escape(&pct(row.change_pct)),
        row.p.map_or("n/a".into(), |p| format!("{p:.3}"))
    );
}

/// One side's observations as points (spread sideways by their order so equal values stay
/// visible) in the column at `x`, its median as a line, and its label; `y` places a value.
fn chart_side(
    s: &mut String,
    side: &str,
    values: &[f64],
    median: f64,
    colour: &str,
    x: f64,
    y: &dyn Fn(f64) -> f64,
) {
    let n = values.len().max(1) as f64;
    for (i, v) in values.iter().enumerate() {
        let dx = (i as f64 - (n - 1.0) / 2.0) * (40.0 / n.max(2.0));
        let _ = write!(
            s,
            r#"<circle class="point {side}" cx="{:.1}" cy="{:.1}" r="3.5" fill="{colour}" opacity="0.8"><title>{side} observation {}: {}</title></circle>"#,
            x + dx,
            y(*v),
            i + 1,
            escape(&num(*v))
        );
    }
    let _ = write!(
        s,
        r#"<path class="median {side}" d="M{:.1} {:.1}H{:.1}" stroke="{colour}" stroke-width="2"><title>{side} median: {}</title></path>"#,
        x - 30.0,
        y(median),
        x + 30.0,
        escape(&num(median))
    );
    let _ = write!(
        s,
        r#"<text class="side" x="{x:.1}" y="{:.1}" text-anchor="middle">{side} (n={})</text>"#,
        PLOT_BOTTOM + 18.0,
        values.len()
    );
}

/// `text` in at most `max_lines` lines of at most [`TITLE_CHARS`] characters, broken at spaces
/// where it can; the last line ends in `…` when the text is longer (the title holds it whole).
fn wrap(text: &str, max_lines: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() && lines.len() < max_lines {
        if rest.chars().count() <= TITLE_CHARS {
            lines.push(rest.to_string());
            rest = "";
            break;
        }
        let cut: usize = rest
            .char_indices()
            .nth(TITLE_CHARS)
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
        let at = rest[..cut]
            .rfind([' ', '-', '_'])
            .filter(|&i| i > cut / 2)
            .map(|i| i + 1)
            .unwrap_or(cut);
        lines.push(rest[..at].trim_end().to_string());
        rest = rest[at..].trim_start();
    }
    if !rest.is_empty() {
        if let Some(last) = lines.last_mut() {
            let keep: String = last.chars().take(TITLE_CHARS - 1).collect();
            *last = format!("{keep}…");
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::metrics::Better;

    fn row(base: Vec<f64>, new: Vec<f64>) -> Row {
        Row {
            scenario: "02-no-filters".into(),
            metric: crate::analysis::metrics::Id::RateRecS,
            better: Better::Higher,
            primary: true,
            base: crate::accounting::stats::median(&base),
            new: crate::accounting::stats::median(&new),
            change_pct: Some(-20.0),
            p: Some(0.002),
            level: 0.025,
            detectable_pct: Some(8.0),
            n: (base.len(), new.len()),
            by_run: false,
            verdict: Verdict::Regression,
            observations: (base, new),
        }
    }

    #[test]
    fn a_chart_draws_every_observation_both_medians_and_the_detectable_band() {
        let r = row(vec![100.0, 102.0, 98.0], vec![80.0, 81.0, 79.0, 82.0]);
        let svg = chart(&r);
        roxmltree::Document::parse(&svg).unwrap();
        assert_eq!(svg.matches("class=\"point base\"").count(), 3);
        assert_eq!(svg.matches("class=\"point new\"").count(), 4);
        assert_eq!(svg.matches("class=\"median ").count(), 2);
        assert!(svg.contains("base median: 100.00") || svg.contains("base median: 100"));
        assert!(svg.contains("class=\"detectable\""), "{svg}");
        assert!(svg.contains("regression -20.0%"), "{svg}");
        // Higher values sit higher: the new side's points are below the base's.
        let cy = |side: &str| -> Vec<f64> {
            svg.split(&format!("class=\"point {side}\""))
                .skip(1)
                .map(|p| {
                    let at = p.find("cy=\"").unwrap() + 4;
                    p[at..at + p[at..].find('"').unwrap()].parse().unwrap()
                })
                .collect()
        };
        assert!(cy("new").iter().all(|n| cy("base").iter().all(|b| n > b)));
    }

    #[test]
    fn the_axis_labels_stay_apart_when_the_observations_nearly_agree() {
        let mut r = row(vec![4315.0, 4318.0], vec![4316.0, 4317.0]);
        r.detectable_pct = None;
        let svg = chart(&r);
        let ys: Vec<f64> = svg
            .split("class=\"axis\"")
            .skip(1)
            .map(|t| {
                let at = t.find("y=\"").unwrap() + 3;
                t[at..at + t[at..].find('"').unwrap()].parse().unwrap()
            })
            .collect();
        assert_eq!(ys.len(), 2, "{svg}");
        assert!((ys[0] - ys[1]).abs() >= PLOT_BOTTOM - PLOT_TOP, "{ys:?}");
    }

    #[test]
    fn long_titles_wrap_within_the_chart() {
        let lines = wrap(&format!("{}: Rate rec/s", "x".repeat(80)), 2);
        assert_eq!(lines.len(), 2);
        assert!(
            lines.iter().all(|l| l.chars().count() <= TITLE_CHARS),
            "{lines:?}"
        );
        assert!(lines[1].ends_with('…'));
        assert_eq!(
            wrap("02-no-filters: Rate rec/s", 2),
            ["02-no-filters: Rate rec/s"]
        );
    }
}
