//! The metric registry: every reported number of a measurement with its column name, unit,
//! better direction, table and format. The result tables, `compare` and the charts all read it,
//! so a metric is added (or renamed) in one place.

use crate::model::Measurement;

/// Which direction of a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Rates: more is better.
    Higher,
    /// Latencies and times: less is better.
    Lower,
}

/// The result table a metric is a column of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Producer,
    Consumer,
    /// The producer's latency from each record's intended send time (with a THROUGHPUT target).
    Intended,
    /// Each record's latency from its send to its receipt by the consumer (MODE=end-to-end).
    EndToEnd,
    /// How the group caught up with a backlog while a producer kept sending (MODE=backlog).
    CatchUp,
    /// What the path's own services cost per MB/s of records (see `crate::accounting::cost`); shown in the
    /// Cost table, compared here.
    Cost,
}

/// A metric's identity: code names a metric by it, never by its column name (which is the
/// entry's data, shown and stored). Its order is [`METRICS`]' order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Id {
    Sent,
    RateRecS,
    RateMibS,
    AvgLatMs,
    MaxLatMs,
    P50Ms,
    P95Ms,
    P99Ms,
    P999Ms,
    ConsumedMib,
    ConsumedMibS,
    ConsumedRecs,
    ConsumedRecS,
    RebalanceMs,
    FetchMs,
    FetchMibS,
    FetchRecS,
    IntendedAvgMs,
    IntendedMaxMs,
    IntendedP50Ms,
    IntendedP95Ms,
    IntendedP99Ms,
    IntendedP999Ms,
    E2eAvgMs,
    E2eP50Ms,
    E2eP95Ms,
    E2eP99Ms,
    E2eP999Ms,
    E2eP9999Ms,
    E2eMaxMs,
    BacklogRecs,
    LiveTargetRecS,
    LiveRecS,
    CatchUpS,
    FinalLagRecs,
    PathCost,
    PathRestCost,
    PathCostProduce,
    PathCostConsume,
}

impl Id {
    /// The metric's entry.
    pub(crate) fn metric(self) -> &'static Metric {
        &METRICS[self as usize]
    }

    /// The metric's column name.
    pub(crate) fn name(self) -> &'static str {
        self.metric().name
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// When a metric decides `compare`'s verdict (see [`decides`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decides {
    /// Reported only.
    Never,
    /// Always: can the path carry as many records to the consumers.
    Always,
    /// When the producers ran unthrottled: their rate is then a result.
    Unthrottled,
    /// At a fixed rate without intended send times: the 99th percentile from the sends.
    ThrottledFromSends,
    /// At a fixed rate with intended send times: the 99th percentile from those.
    ThrottledFromIntended,
    /// At one fixed rate on both sides: CPU per MB/s depends on batching, so only then.
    AtOneRate,
}

/// One metric of a measurement.
#[derive(Clone, Copy)]
pub struct Metric {
    /// Its identity.
    pub id: Id,
    /// Column name, as in the reference's tables.
    pub name: &'static str,
    /// Unit of the value.
    pub unit: &'static str,
    /// Which way is better; `None` for counters, which are checked (integrity), not compared.
    pub better: Option<Better>,
    /// The table it is a column of.
    pub table: Table,
    /// Decimals in the tables.
    pub decimals: usize,
    /// Header of its coefficient-of-variation column when a scenario was repeated, if it has one.
    pub spread: Option<&'static str>,
    /// When it decides `compare`'s verdict.
    pub decides: Decides,
    /// The value of one measurement.
    pub get: fn(&Measurement) -> f64,
}

impl Metric {
    /// The value formatted as the tables show it (`n/a` for a value the measurement lacks).
    pub(crate) fn format(&self, m: &Measurement) -> String {
        let v = (self.get)(m);
        if v.is_nan() {
            "n/a".to_string()
        } else {
            format!("{:.*}", self.decimals, v)
        }
    }
}

const fn metric(
    id: Id,
    name: &'static str,
    unit: &'static str,
    better: Option<Better>,
    table: Table,
    decimals: usize,
    get: fn(&Measurement) -> f64,
) -> Metric {
    Metric {
        id,
        name,
        unit,
        better,
        table,
        decimals,
        spread: None,
        decides: Decides::Never,
        get,
    }
}

const fn with_spread(m: Metric, header: &'static str) -> Metric {
    Metric {
        spread: Some(header),
        ..m
    }
}

const fn deciding(m: Metric, decides: Decides) -> Metric {
    Metric { decides, ..m }
}

use Better::{Higher, Lower};
use Table::{CatchUp, Consumer, Cost, EndToEnd, Intended, Producer};

/// A figure of the fetch (the reading after the partitions were assigned); NaN (shown `n/a`, not
/// compared) where none was measured: a DURATION run's group reads while the producers send, so
/// there is no fetch phase of its own to time (results of older versions stored 0 for it, hence
/// the series' check).
fn fetched(m: &Measurement, v: Option<f64>) -> f64 {
    match v {
        Some(v) if m.series.is_empty() => v,
        _ => f64::NAN,
    }
}

/// One latency from the intended send time; NaN (shown `n/a`, not compared) when the
/// measurement has none.
fn intended(m: &Measurement, f: fn(&crate::model::LatencySummary) -> f64) -> f64 {
    m.producer.intended.as_ref().map_or(f64::NAN, f)
}

/// One send-to-receipt latency; NaN (shown `n/a`, not compared) when the measurement has none.
fn end_to_end(m: &Measurement, f: fn(&crate::model::LatencySummary) -> f64) -> f64 {
    m.consumer.end_to_end.as_ref().map_or(f64::NAN, f)
}

/// One figure of the catch-up; NaN (shown `n/a`, not compared) when the measurement has none.
fn catch_up(m: &Measurement, f: fn(&crate::model::CatchUp) -> f64) -> f64 {
    m.consumer.catch_up.as_ref().map_or(f64::NAN, f)
}

/// One coefficient of the path; NaN (shown `n/a`, not compared) without a path of its own or a
/// cost measured.
fn path_cost(m: &Measurement, phase: Option<&str>) -> f64 {
    match phase {
        Some(phase) => crate::accounting::cost::phase_coefficient(&m.cost, phase),
        None => crate::accounting::cost::path_coefficient(&m.cost),
    }
    .unwrap_or(f64::NAN)
}

/// Every metric, in table column order (producer, then consumer).
pub const METRICS: [Metric; 39] = [
    metric(Id::Sent, "Sent", "records", None, Producer, 0, |m| {
        m.producer.sent as f64
    }),
    deciding(
        with_spread(
            metric(
                Id::RateRecS,
                "Rate rec/s",
                "rec/s",
                Some(Higher),
                Producer,
                6,
                |m| m.producer.rate_rec_s,
            ),
            "Rate ±CV%",
        ),
        Decides::Unthrottled,
    ),
    metric(
        Id::RateMibS,
        "Rate Mi/s",
        "MiB/s",
        Some(Higher),
        Producer,
        2,
        |m| m.producer.rate_mib_s,
    ),
    with_spread(
        metric(
            Id::AvgLatMs,
            "Avg Lat ms",
            "ms",
            Some(Lower),
            Producer,
            2,
            |m| m.producer.avg_lat_ms,
        ),
        "Avg Lat ±CV%",
    ),
    metric(
        Id::MaxLatMs,
        "Max Lat ms",
        "ms",
        Some(Lower),
        Producer,
        2,
        |m| m.producer.max_lat_ms,
    ),
    metric(
        Id::P50Ms,
        "Percentile50",
        "ms",
        Some(Lower),
        Producer,
        0,
        |m| m.producer.p50_ms,
    ),
    metric(
        Id::P95Ms,
        "Percentile95",
        "ms",
        Some(Lower),
        Producer,
        0,
        |m| m.producer.p95_ms,
    ),
    deciding(
        with_spread(
            metric(
                Id::P99Ms,
                "Percentile99",
                "ms",
                Some(Lower),
                Producer,
                0,
                |m| m.producer.p99_ms,
            ),
            "P99 ±CV%",
        ),
        Decides::ThrottledFromSends,
    ),
    metric(
        Id::P999Ms,
        "Percentile999",
        "ms",
        Some(Lower),
        Producer,
        0,
        |m| m.producer.p999_ms,
    ),
    metric(
        Id::ConsumedMib,
        "Consumed Mi",
        "MiB",
        None,
        Consumer,
        4,
        |m| m.consumer.consumed_mib,
    ),
    metric(
        Id::ConsumedMibS,
        "Consumed Mi/s",
        "MiB/s",
        Some(Higher),
        Consumer,
        4,
        |m| m.consumer.consumed_mib_s,
    ),
    metric(
        Id::ConsumedRecs,
        "Consumed recs",
        "records",
        None,
        Consumer,
        0,
        |m| m.consumer.consumed_recs as f64,
    ),
    deciding(
        with_spread(
            metric(
                Id::ConsumedRecS,
                "Consumed rec/s",
                "rec/s",
                Some(Higher),
                Consumer,
                4,
                |m| m.consumer.consumed_rec_s,
            ),
            "Consumed rec/s ±CV%",
        ),
        Decides::Always,
    ),
    metric(
        Id::RebalanceMs,
        "Rebalance Time ms",
        "ms",
        Some(Lower),
        Consumer,
        0,
        |m| m.consumer.rebalance_ms,
    ),
    metric(
        Id::FetchMs,
        "Fetch Time ms",
        "ms",
        Some(Lower),
        Consumer,
        0,
        |m| fetched(m, m.consumer.fetch_ms),
    ),
    metric(
        Id::FetchMibS,
        "Fetch Mi/s",
        "MiB/s",
        Some(Higher),
        Consumer,
        4,
        |m| fetched(m, m.consumer.fetch_mib_s),
    ),
    with_spread(
        metric(
            Id::FetchRecS,
            "Fetch rec/s",
            "rec/s",
            Some(Higher),
            Consumer,
            4,
            |m| fetched(m, m.consumer.fetch_rec_s),
        ),
        "Fetch rec/s ±CV%",
    ),
    metric(
        Id::IntendedAvgMs,
        "Intended Avg Lat ms",
        "ms",
        Some(Lower),
        Intended,
        2,
        |m| intended(m, |l| l.avg_lat_ms),
    ),
    metric(
        Id::IntendedMaxMs,
        "Intended Max Lat ms",
        "ms",
        Some(Lower),
        Intended,
        2,
        |m| intended(m, |l| l.max_lat_ms),
    ),
    metric(
        Id::IntendedP50Ms,
        "Intended P50 ms",
        "ms",
        Some(Lower),
        Intended,
        0,
        |m| intended(m, |l| l.p50_ms),
    ),
    metric(
        Id::IntendedP95Ms,
        "Intended P95 ms",
        "ms",
        Some(Lower),
        Intended,
        0,
        |m| intended(m, |l| l.p95_ms),
    ),
    deciding(
        with_spread(
            metric(
                Id::IntendedP99Ms,
                "Intended P99 ms",
                "ms",
                Some(Lower),
                Intended,
                0,
                |m| intended(m, |l| l.p99_ms),
            ),
            "Intended P99 ±CV%",
        ),
        Decides::ThrottledFromIntended,
    ),
    metric(
        Id::IntendedP999Ms,
        "Intended P999 ms",
        "ms",
        Some(Lower),
        Intended,
        0,
        |m| intended(m, |l| l.p999_ms),
    ),
    metric(
        Id::E2eAvgMs,
        "E2E Avg Lat ms",
        "ms",
        Some(Lower),
        EndToEnd,
        2,
        |m| end_to_end(m, |l| l.avg_lat_ms),
    ),
    metric(
        Id::E2eP50Ms,
        "E2E P50 ms",
        "ms",
        Some(Lower),
        EndToEnd,
        0,
        |m| end_to_end(m, |l| l.p50_ms),
    ),
    metric(
        Id::E2eP95Ms,
        "E2E P95 ms",
        "ms",
        Some(Lower),
        EndToEnd,
        0,
        |m| end_to_end(m, |l| l.p95_ms),
    ),
    with_spread(
        metric(
            Id::E2eP99Ms,
            "E2E P99 ms",
            "ms",
            Some(Lower),
            EndToEnd,
            0,
            |m| end_to_end(m, |l| l.p99_ms),
        ),
        "E2E P99 ±CV%",
    ),
    metric(
        Id::E2eP999Ms,
        "E2E P999 ms",
        "ms",
        Some(Lower),
        EndToEnd,
        0,
        |m| end_to_end(m, |l| l.p999_ms),
    ),
    metric(
        Id::E2eP9999Ms,
        "E2E P9999 ms",
        "ms",
        Some(Lower),
        EndToEnd,
        0,
        |m| end_to_end(m, |l| l.p9999_ms),
    ),
    metric(
        Id::E2eMaxMs,
        "E2E Max Lat ms",
        "ms",
        Some(Lower),
        EndToEnd,
        2,
        |m| end_to_end(m, |l| l.max_lat_ms),
    ),
    metric(
        Id::BacklogRecs,
        "Backlog recs",
        "records",
        None,
        CatchUp,
        0,
        |m| catch_up(m, |c| c.backlog as f64),
    ),
    metric(
        Id::LiveTargetRecS,
        "Live Target rec/s",
        "rec/s",
        None,
        CatchUp,
        0,
        |m| catch_up(m, |c| c.live_target_rec_s),
    ),
    metric(Id::LiveRecS, "Live rec/s", "rec/s", None, CatchUp, 0, |m| {
        catch_up(m, |c| c.live_rec_s)
    }),
    // n/a when the group did not catch up within the limit: the final lag says by how much.
    metric(
        Id::CatchUpS,
        "Catch-Up s",
        "s",
        Some(Lower),
        CatchUp,
        2,
        |m| catch_up(m, |c| c.caught_up_s.unwrap_or(f64::NAN)),
    ),
    metric(
        Id::FinalLagRecs,
        "Final Lag recs",
        "records",
        None,
        CatchUp,
        0,
        |m| catch_up(m, |c| c.final_lag as f64),
    ),
    deciding(
        with_spread(
            metric(
                Id::PathCost,
                "Path mc per MB/s",
                "mc/(MB/s)",
                Some(Lower),
                Cost,
                2,
                |m| path_cost(m, None),
            ),
            "Path mc ±CV%",
        ),
        Decides::AtOneRate,
    ),
    // The path's coefficient without its JVMs' compilers and collectors: reported and compared
    // beside the whole, which decides (the JIT's and the GC's work is part of what a path costs,
    // but they vary most between repetitions).
    with_spread(
        metric(
            Id::PathRestCost,
            "Path rest mc per MB/s",
            "mc/(MB/s)",
            Some(Lower),
            Cost,
            2,
            |m| crate::accounting::cost::path_rest_coefficient(&m.cost).unwrap_or(f64::NAN),
        ),
        "Path rest mc ±CV%",
    ),
    metric(
        Id::PathCostProduce,
        "Path mc per MB/s produce",
        "mc/(MB/s)",
        Some(Lower),
        Cost,
        2,
        |m| path_cost(m, Some("produce")),
    ),
    metric(
        Id::PathCostConsume,
        "Path mc per MB/s consume",
        "mc/(MB/s)",
        Some(Lower),
        Cost,
        2,
        |m| path_cost(m, Some("consume")),
    ),
];

/// The metrics of one table, in column order.
pub(crate) fn of_table(table: Table) -> impl Iterator<Item = &'static Metric> {
    METRICS.iter().filter(move |m| m.table == table)
}

/// The metrics `compare` judges: those with a better direction, producer first, rates first.
pub(crate) fn compared() -> impl Iterator<Item = &'static Metric> {
    METRICS.iter().filter(|m| m.better.is_some())
}

/// Whether `m` is one of the few metrics that decide `compare`'s verdict. Each decides one
/// question (can the path carry as many records, produced and consumed); the others mostly
/// restate them (MiB/s is rec/s times the record size, unthrottled latency is queueing behind
/// the rate), so testing them too would only multiply false alarms. When both sides ran at a
/// fixed `THROUGHPUT` the producer rate is the target, not a result: its 99th latency
/// percentile decides instead, measured from the intended send times when both sides have them
/// (`intended`), since only that figure shows a stall that held the sends back. At one fixed
/// rate on both sides (`same_rate`) the path's CPU per MB/s decides too, so a change that makes
/// the path burn more CPU at the rate it still holds is found; CPU per record depends on
/// batching, so at different rates or unthrottled it is only reported.
pub(crate) fn decides(m: &Metric, throttled: bool, intended: bool, same_rate: bool) -> bool {
    match m.decides {
        Decides::Never => false,
        Decides::Always => true,
        Decides::Unthrottled => !throttled,
        Decides::ThrottledFromSends => throttled && !intended,
        Decides::ThrottledFromIntended => throttled && intended,
        Decides::AtOneRate => throttled && same_rate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_id_is_its_entrys_place_and_names_are_unique() {
        for (i, m) in METRICS.iter().enumerate() {
            assert_eq!(m.id as usize, i, "{} is out of its place", m.name);
            assert_eq!(m.id.metric().name, m.name);
        }
        let mut names: Vec<&str> = METRICS.iter().map(|m| m.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), METRICS.len(), "a column name is used twice");
    }

    #[test]
    fn one_metric_decides_each_question() {
        let deciding = |throttled, intended, same_rate| -> Vec<Id> {
            METRICS
                .iter()
                .filter(|m| decides(m, throttled, intended, same_rate))
                .map(|m| m.id)
                .collect()
        };
        assert_eq!(
            deciding(false, false, false),
            [Id::RateRecS, Id::ConsumedRecS]
        );
        assert_eq!(
            deciding(true, false, true),
            [Id::P99Ms, Id::ConsumedRecS, Id::PathCost]
        );
        assert_eq!(
            deciding(true, true, false),
            [Id::ConsumedRecS, Id::IntendedP99Ms]
        );
    }
}
