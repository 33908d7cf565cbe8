//! `report.html`: one self-contained page per run (no script, stylesheet, font or image is
//! fetched: the charts are inline SVG), for a person rather than a tool. It holds every table
//! the run printed, each scenario's rates against its suite's reference scenario with their
//! spread, the charts (`charts.svg`, and `series.svg` for a run bounded by time), a sizing run's
//! statement, the warnings, the images and what they were made from, the settings and the host.

use std::fmt::Write;

use anyhow::Result;

use super::svg::escape;
use super::Exporter;
use crate::accounting::stats;
use crate::analysis::metrics;
use crate::model::run::RunInfo;
use crate::model::ScenarioResult;
use crate::present::table::TableData;

/// The report's file name.
pub(crate) const FILE: &str = "report.html";

/// The report.
pub(crate) struct Html;

impl Exporter for Html {
    fn files(&self, info: &RunInfo, results: &[ScenarioResult]) -> Result<Vec<(String, String)>> {
        Ok(vec![(FILE.to_string(), render(info, results))])
    }
}

/// Long names wrap in a table cell rather than widen the page; numbers stay on one line.
const STYLE: &str = "
body { font-family: sans-serif; font-size: 14px; margin: 24px; color: #222; max-width: 1400px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ccc; }
h3 { font-size: 15px; margin-top: 20px; }
table { border-collapse: collapse; margin: 8px 0 16px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; }
td.name, th.name { text-align: left; white-space: normal; overflow-wrap: anywhere; max-width: 360px; }
td.text { text-align: left; white-space: normal; max-width: 480px; }
.ratio { display: inline-block; height: 10px; background: #4c78a8; vertical-align: middle; }
.ratio.consumed { background: #f58518; }
.warning { color: #a33; }
.incomplete { background: #fee; border: 1px solid #a33; padding: 8px; }
nav a { margin-right: 12px; }
.chart { overflow-x: auto; }
";

/// The page for a run's results.
pub(crate) fn render(info: &RunInfo, results: &[ScenarioResult]) -> String {
    let mut h = heading(info);
    let sizing = super::sizing::of_run(info, results);
    let mut sections: Vec<(&str, &str)> = vec![("reference", "Against the reference")];
    sections.push(("charts", "Charts"));
    if sizing.is_some() {
        sections.push(("sizing", "Sizing"));
    }
    let profiled = results
        .iter()
        .any(|r| r.repetitions.iter().any(|m| !m.profiles.is_empty()));
    if profiled {
        sections.push(("profiles", "Profiles"));
    }
    sections.extend([
        ("tables", "Tables"),
        ("warnings", "Warnings"),
        ("images", "Images"),
        ("settings", "Settings"),
        ("machines", "Machines"),
    ]);
    h.push_str("<nav>");
    for (id, name) in &sections {
        let _ = write!(h, "<a href=\"#{id}\">{name}</a>");
    }
    h.push_str("</nav>\n");

    let _ = writeln!(h, "<h2 id=\"reference\">Against the reference</h2>");
    h.push_str(&reference_section(results));

    h.push_str(&charts_section(results));

    if let Some(sizing) = &sizing {
        let _ = writeln!(h, "<h2 id=\"sizing\">Sizing</h2>");
        for t in super::sizing::tables(sizing) {
            h.push_str(&table(&t));
        }
        for w in &sizing.warnings {
            let _ = writeln!(h, "<p class=\"warning\">{}</p>", escape(w));
        }
    }

    if profiled {
        let _ = writeln!(h, "<h2 id=\"profiles\">Profiles</h2>");
        h.push_str(&profiles_section(results));
    }

    let _ = writeln!(h, "<h2 id=\"tables\">Tables</h2>");
    for t in crate::present::report::tables(results, info.settings.p99_limit_ms) {
        h.push_str(&table(&t));
    }

    h.push_str(&warnings_section(results));

    let _ = writeln!(h, "<h2 id=\"images\">Images</h2>");
    h.push_str(&table_body(&images_table(results)));

    let _ = writeln!(h, "<h2 id=\"settings\">Settings</h2>");
    h.push_str(&table_body(&settings_table(info)));

    let _ = writeln!(h, "<h2 id=\"machines\">Machines</h2>");
    h.push_str(&table_body(&machines_table(info)));
    h.push_str("</body>\n</html>\n");
    h
}

/// The page's head and its first lines: the run, the suite, the commit, the times, and whether
/// the run is incomplete.
fn heading(info: &RunInfo) -> String {
    let mut h = String::new();
    let title = format!("perf-tests run {}", info.run_id);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(&title)
    );
    let _ = writeln!(h, "<h1>{}</h1>", escape(&title));
    let _ = writeln!(
        h,
        "<p>Suite <code>{}</code>, commit <code>{}</code>, from {} to {}; perf-tests {}.</p>",
        escape(&info.suite),
        escape(&info.commit_id),
        escape(&info.started_at),
        escape(&info.ended_at),
        escape(&info.tool_version)
    );
    if let Some(why) = &info.incomplete {
        let _ = writeln!(
            h,
            "<p class=\"incomplete\">Incomplete run: {}. It holds the scenarios that completed.</p>",
            escape(why)
        );
    }
    h
}

/// The run's charts, and every second's when the run was bounded by time.
fn charts_section(results: &[ScenarioResult]) -> String {
    let mut h = String::new();
    let _ = writeln!(h, "<h2 id=\"charts\">Charts</h2>");
    let _ = writeln!(
        h,
        "<div class=\"chart\" id=\"chart-results\">{}</div>",
        super::svg::render(results)
    );
    if results.iter().any(|r| !r.measurement.series.is_empty()) {
        let _ = writeln!(
            h,
            "<h3>Every second of the run</h3>\n<div class=\"chart\" id=\"chart-series\">{}</div>",
            super::series::render(results)
        );
    }
    h
}

/// The run's warnings as a list, or "None.".
fn warnings_section(results: &[ScenarioResult]) -> String {
    let mut h = String::new();
    let _ = writeln!(h, "<h2 id=\"warnings\">Warnings</h2>");
    let warnings = crate::present::report::warnings(results);
    if warnings.is_empty() {
        h.push_str("<p>None.</p>\n");
        return h;
    }
    h.push_str("<ul>\n");
    for w in warnings {
        let _ = writeln!(h, "<li class=\"warning\">{}</li>", escape(&w));
    }
    h.push_str("</ul>\n");
    h
}

/// The machine perf-tests ran on, then each engine's machine the run's containers ran on.
fn machines_table(info: &RunInfo) -> TableData {
    let gib = |b: u64| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64);
    let unknown = || "unknown".to_string();
    let host = &info.host;
    let mut rows = vec![vec![
        host.hostname.clone(),
        "perf-tests".to_string(),
        host.cpu_model.clone().unwrap_or_else(unknown),
        host.cpus.to_string(),
        host.memory_bytes.map_or_else(unknown, gib),
        host.kernel.clone().unwrap_or_else(unknown),
        format!("{} {}", host.os, host.arch),
        String::new(),
    ]];
    rows.extend(info.nodes.iter().map(|n| {
        vec![
            n.name.clone(),
            if n.roles.is_empty() {
                "containers".to_string()
            } else {
                format!("containers ({})", n.roles.join(", "))
            },
            n.cpu_model.clone().unwrap_or_else(unknown),
            n.cpus.to_string(),
            gib(n.memory_bytes),
            n.kernel.clone(),
            format!("{} {}", n.os, n.arch),
            n.engine_version.clone(),
        ]
    }));
    TableData {
        title: "Machines",
        columns: [
            "Machine",
            "Runs",
            "CPU model",
            "CPUs",
            "Memory",
            "Kernel",
            "System",
            "Docker engine",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// A table under its title; the first column (a scenario's or a setting's name) wraps, the
/// others are figures.
fn table(t: &TableData) -> String {
    format!("<h3>{}</h3>\n{}", escape(t.title), table_body(t))
}

/// A table without its title (a section's heading names it).
fn table_body(t: &TableData) -> String {
    let mut h = String::new();
    let id = t
        .title
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect::<String>();
    let _ = write!(h, "<table id=\"table-{id}\">\n<thead><tr>");
    for (k, c) in t.columns.iter().enumerate() {
        let class = if k == 0 { " class=\"name\"" } else { "" };
        let _ = write!(h, "<th{class}>{}</th>", escape(c));
    }
    h.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        h.push_str("<tr>");
        for (k, cell) in row.iter().enumerate() {
            let class = if k == 0 {
                " class=\"name\""
            } else if cell.parse::<f64>().is_err() && cell.len() > 24 {
                " class=\"text\""
            } else {
                ""
            };
            let _ = write!(h, "<td{class}>{}</td>", escape(cell));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table>\n");
    h
}

/// Each scenario's producer and consumer rates (median, and minimum to maximum over its
/// repetitions) as a ratio of its suite's reference scenario's median at the same combination,
/// drawn as bars.
fn reference_section(results: &[ScenarioResult]) -> String {
    let mut h = String::new();
    let Some(_) = results.iter().find(|r| r.reference) else {
        h.push_str("<p>No scenario of this run is its suite's reference (<code>reference: true</code>), so no ratios.</p>\n");
        return h;
    };
    h.push_str(
        "<p>Medians of the repetitions; the ratio is to the reference scenario's median at the \
         same settings in this run, with the ratios of the slowest and fastest repetitions.</p>\n",
    );
    h.push_str(
        "<table id=\"table-reference\">\n<thead><tr><th class=\"name\">Name</th><th>Against</th>\
         <th>Producer rec/s</th><th>Producer ratio</th><th>Range</th><th></th>\
         <th>Consumer rec/s</th><th>Consumer ratio</th><th>Range</th><th></th></tr></thead>\n<tbody>\n",
    );
    for r in results {
        let Some(base) = crate::model::reference_of(results, r) else {
            continue;
        };
        let _ = write!(
            h,
            "<tr><td class=\"name\">{}</td><td class=\"text\">{}</td>",
            escape(&r.label()),
            escape(&base.name)
        );
        for (metric, class) in [
            (metrics::Id::RateRecS, "ratio"),
            (metrics::Id::ConsumedRecS, "ratio consumed"),
        ] {
            let m = metric.metric();
            let of = |s: &ScenarioResult| -> Vec<f64> {
                s.all_measurements().into_iter().map(m.get).collect()
            };
            let base_median = stats::median(&of(base));
            let values = of(r);
            let median = stats::median(&values);
            let (lo, hi) = stats::min_max(&values);
            let ratio = median / base_median;
            let width = (ratio * 100.0).clamp(0.0, 300.0);
            let _ = write!(
                h,
                "<td>{median:.0}</td><td>{ratio:.2}</td><td>{:.2}–{:.2}</td>\
                 <td><span class=\"{class}\" style=\"width:{width:.0}px\" title=\"{ratio:.2}\"></span></td>",
                lo / base_median,
                hi / base_median
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table>\n");
    h
}

/// Links to each profile's flame graph (and, but for the first scenario profiled, its
/// differential one against that scenario) and to the summary, all in `profiles/`.
fn profiles_section(results: &[ScenarioResult]) -> String {
    use crate::world::profile::{diff_file, flame_file};
    let mut h = String::from(
        "<p>Profiles of the measured phases (never the warm-up); the <a href=\"profiles/summary.txt\">summary</a> has each one's top frames and the shares of crypto, garbage collection, JIT compilation and socket I/O.</p>\n<table id=\"table-profiles\">\n<thead><tr><th class=\"name\">Name</th><th>Service</th><th>Phase</th><th>Mode</th><th>Recordings</th><th>Flame graph</th><th>Against the first profiled</th></tr></thead>\n<tbody>\n",
    );
    let mut first: Option<String> = None;
    for r in results {
        let label = r.label();
        let mut seen: Vec<(&str, &str)> = Vec::new();
        for rec in r.repetitions.iter().flat_map(|m| &m.profiles) {
            if seen.contains(&(rec.service.as_str(), rec.phase.as_str())) {
                continue;
            }
            seen.push((&rec.service, &rec.phase));
            let first = first.get_or_insert_with(|| label.clone());
            let count = r
                .repetitions
                .iter()
                .flat_map(|m| &m.profiles)
                .filter(|x| x.service == rec.service && x.phase == rec.phase)
                .count();
            let flame = flame_file(&label, &rec.service, &rec.phase);
            let diff = if *first == label {
                String::new()
            } else {
                let d = diff_file(&label, &rec.service, &rec.phase);
                format!("<a href=\"profiles/{}\">what it adds</a>", escape(&d))
            };
            let _ = writeln!(
                h,
                "<tr><td class=\"name\">{}</td><td class=\"text\">{}</td><td>{}</td><td>{} ({})</td><td>{count}</td><td><a href=\"profiles/{}\">flame graph</a></td><td>{diff}</td></tr>",
                escape(&label),
                escape(&rec.service),
                escape(&rec.phase),
                rec.mode.name(),
                escape(&rec.event),
                escape(&flame)
            );
        }
    }
    h.push_str("</tbody>\n</table>\n");
    h
}

/// Every image a scenario ran, with its id and what it was made from (built here) or where it
/// came from.
fn images_table(results: &[ScenarioResult]) -> TableData {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for r in results {
        for (image, id) in &r.images {
            if rows.iter().any(|row| &row[0] == image) {
                continue;
            }
            let source = r
                .image_sources
                .get(image)
                .cloned()
                .unwrap_or_else(|| "not built here (pulled or present)".into());
            rows.push(vec![image.clone(), id.clone(), source]);
        }
    }
    rows.sort();
    TableData {
        title: "Images",
        columns: vec!["Image".into(), "Id".into(), "Made from".into()],
        rows,
    }
}

/// Every setting of the run, in the settings table's order.
fn settings_table(info: &RunInfo) -> TableData {
    TableData {
        title: "Settings",
        columns: vec!["Setting".into(), "Value".into()],
        rows: crate::settings::SETTINGS
            .iter()
            .map(|s| vec![s.var.to_string(), s.value(&info.settings)])
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::present::results::tests::info;

    #[test]
    fn the_page_holds_every_table_and_the_charts_and_fetches_nothing() {
        let results = crate::present::report::tests::sample();
        let page = render(&info("abc1234"), &results);
        assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
        for t in crate::present::report::tables(&results, None) {
            assert!(
                page.contains(&format!("<h3>{}</h3>", escape(t.title))),
                "{}",
                t.title
            );
            for row in &t.rows {
                assert!(page.contains(&format!("<td class=\"name\">{}</td>", escape(&row[0]))));
            }
        }
        assert!(page.contains("<div class=\"chart\" id=\"chart-results\"><svg "));
        // Self-contained: nothing is loaded from anywhere.
        for fetch in ["src=", "href=\"http", "@import", "url("] {
            assert!(!page.contains(fetch), "{fetch} in the page");
        }
        roxmltree::Document::parse(
            &page[page.find("<svg").unwrap()..page.find("</svg>").unwrap() + 6],
        )
        .unwrap();
    }

    #[test]
    fn ratios_are_to_the_reference_median() {
        let results = crate::present::report::tests::sample();
        let section = reference_section(&results);
        let base = &results[0];
        assert!(base.reference);
        assert!(!section.contains(&format!("<td class=\"name\">{}</td>", base.name)));
        for r in results.iter().filter(|r| !r.reference) {
            let ratio = r.measurement.producer.rate_rec_s / base.measurement.producer.rate_rec_s;
            assert!(
                section.contains(&format!("<td>{ratio:.2}</td>")),
                "{} {ratio:.2} in {section}",
                r.name
            );
        }
        let mut none = results.clone();
        for r in &mut none {
            r.reference = false;
        }
        assert!(reference_section(&none).contains("No scenario of this run is"));
    }

    #[test]
    fn text_is_escaped() {
        let mut results = crate::present::report::tests::sample();
        results[1].name = "02-<b>&".into();
        let page = render(&info("abc"), &results);
        assert!(page.contains("02-&lt;b&gt;&amp;"));
        assert!(!page.contains("02-<b>&"));
    }
}
