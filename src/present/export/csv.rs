//! `metrics.csv`: every metric of every repetition in long form, one row per scenario,
//! repetition and metric, for a notebook or a spreadsheet to pivot as it likes. The columns are
//! `scenario`, one per setting the run varied (its value in that row's combination),
//! `repetition` (1-based, in the order run), `table`, `metric` (the tables' column name), `unit`
//! and `value`. A metric a repetition did not measure has no row (the tables' `n/a`).

use anyhow::Result;

use super::Exporter;
use crate::analysis::metrics::{Table, METRICS};
use crate::model::run::RunInfo;
use crate::model::ScenarioResult;

/// The long-form table.
pub(crate) struct Csv;

/// The file's name in the run directory.
pub(crate) const FILE: &str = "metrics.csv";

/// The table a metric is a column of, as the file names it.
fn table_name(table: Table) -> &'static str {
    match table {
        Table::Producer => "producer",
        Table::Consumer => "consumer",
        Table::Intended => "intended",
        Table::EndToEnd => "end-to-end",
        Table::CatchUp => "catch-up",
        Table::Cost => "cost",
    }
}

/// A field as RFC 4180 writes it: quoted when it holds a comma, a quote or a line break.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// The rows of `results`, the header first.
pub(crate) fn render(results: &[ScenarioResult]) -> String {
    let varying = crate::settings::matrix::varying(results.iter().map(|r| &r.combination));
    let mut header = vec!["scenario".to_string()];
    header.extend(varying.iter().cloned());
    header.extend(["repetition", "table", "metric", "unit", "value"].map(String::from));
    let mut out = header
        .iter()
        .map(|h| field(h))
        .collect::<Vec<_>>()
        .join(",")
        + "\n";
    for r in results {
        let settings: Vec<String> = varying
            .iter()
            .map(|v| field(r.combination.get(v).map_or("", String::as_str)))
            .collect();
        for (i, m) in r.all_measurements().into_iter().enumerate() {
            for metric in &METRICS {
                let value = (metric.get)(m);
                if value.is_nan() {
                    continue;
                }
                let mut row = vec![field(&r.name)];
                row.extend(settings.iter().cloned());
                row.extend([
                    (i + 1).to_string(),
                    table_name(metric.table).to_string(),
                    field(metric.name),
                    field(metric.unit),
                    // Shortest text that reads back as the same number.
                    value.to_string(),
                ]);
                out.push_str(&row.join(","));
                out.push('\n');
            }
        }
    }
    out
}

impl Exporter for Csv {
    fn files(&self, _: &RunInfo, results: &[ScenarioResult]) -> Result<Vec<(String, String)>> {
        Ok(vec![(FILE.to_string(), render(results))])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal reader of the rows above (quoted fields included), so the test reads the file
    /// as a CSV reader would rather than by the writer's own split.
    fn read(text: &str) -> Vec<Vec<String>> {
        let mut rows = Vec::new();
        let (mut row, mut cell, mut quoted) = (Vec::new(), String::new(), false);
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', true) if chars.peek() == Some(&'"') => {
                    cell.push('"');
                    chars.next();
                }
                ('"', _) => quoted = !quoted,
                (',', false) => row.push(std::mem::take(&mut cell)),
                ('\n', false) => {
                    row.push(std::mem::take(&mut cell));
                    rows.push(std::mem::take(&mut row));
                }
                (c, _) => cell.push(c),
            }
        }
        rows
    }

    #[test]
    fn one_row_per_scenario_repetition_and_measured_metric() {
        let mut results = crate::present::report::tests::sample();
        // The second scenario ran twice at a combination whose value holds a comma; the first
        // has no repetitions recorded (its summary is its one measurement).
        let mut twice = results[1].measurement.clone();
        twice.producer.rate_rec_s = 1234.5;
        results[1].repetitions = vec![results[1].measurement.clone(), twice];
        for r in &mut results {
            r.combination
                .insert("PRODUCER_PROPERTIES".into(), "acks=1,linger.ms=5".into());
        }
        let rows = read(&render(&results));
        assert_eq!(
            rows[0],
            [
                "scenario",
                "PRODUCER_PROPERTIES",
                "repetition",
                "table",
                "metric",
                "unit",
                "value"
            ]
        );
        // The sample holds the producer's and the consumer's figures only (no intended, end-to-end,
        // catch-up or cost ones): the reference tables' 9 producer and 8 consumer columns, for
        // three repetitions in all.
        let producer = rows.iter().filter(|r| r[3] == "producer").count();
        let consumer = rows.iter().filter(|r| r[3] == "consumer").count();
        assert_eq!((producer, consumer), (3 * 9, 3 * 8), "{rows:?}");
        assert_eq!(rows.len(), 1 + 3 * 17);
        assert!(rows[1..].iter().all(|r| r[1] == "acks=1,linger.ms=5"));
        let rate = |scenario: &str, rep: &str| -> f64 {
            rows.iter()
                .find(|r| r[0] == scenario && r[2] == rep && r[4] == "Rate rec/s")
                .unwrap_or_else(|| panic!("{scenario} {rep} in {rows:?}"))[6]
                .parse()
                .unwrap()
        };
        assert_eq!(rate("02-no-filters", "2"), 1234.5);
        assert_eq!(
            rate("02-no-filters", "1"),
            results[1].measurement.producer.rate_rec_s
        );
        assert_eq!(
            rate("01-no-proxy-baseline", "1"),
            results[0].measurement.producer.rate_rec_s
        );
        // A metric not measured has no row: the fetch of a run bounded by time.
        results[1].repetitions[1].consumer.fetch_rec_s = None;
        let rows = read(&render(&results));
        let fetch = |rep: &str| {
            rows.iter()
                .any(|r| r[0] == "02-no-filters" && r[2] == rep && r[4] == "Fetch rec/s")
        };
        assert!(fetch("1") && !fetch("2"));
    }
}
