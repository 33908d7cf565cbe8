//! A JVM's garbage collection over a measured phase, from its own GC log: the JVM services of
//! the images built here write their unified GC log (`-Xlog:gc`) to [`LOG`], which the runner
//! reads at each phase's edges like a cumulative counter (the lines one read has beyond the
//! previous are the pauses between them). Any JVM image that writes its GC log there gets the
//! same figures; a container without the file has none.

use serde::{Deserialize, Serialize};

/// Where a JVM service writes its GC log for the runner to read (`-Xlog:gc:file=...`).
pub(crate) const LOG: &str = "/tmp/perf-tests-gc.log";

/// What kind of stop-the-world pause a line reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A young (or mixed) collection.
    Young,
    /// A full collection of the whole heap.
    Full,
    /// Another pause (G1's remark and cleanup of a concurrent cycle).
    Other,
}

/// One pause.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Pause {
    pub kind: Kind,
    pub ms: f64,
    /// When it was logged (its `utctime` decorator), in seconds since the Unix epoch.
    pub at: Option<f64>,
}

/// The pauses of a log, in order: every complete line that reports one (`GC(n) Pause Young
/// (Normal) (G1 Evacuation Pause) 24M->3M(1024M) 5.123ms`). A line still being written (no
/// newline yet) is left for the next read.
pub(crate) fn pauses(log: &str) -> Vec<Pause> {
    let complete = match log.rfind('\n') {
        Some(end) => &log[..end],
        None => "",
    };
    complete.lines().filter_map(pause).collect()
}

fn pause(line: &str) -> Option<Pause> {
    let at = line.find(" Pause ")?;
    let what = &line[at + 7..];
    let kind = if what.starts_with("Young") {
        Kind::Young
    } else if what.starts_with("Full") {
        Kind::Full
    } else {
        Kind::Other
    };
    let ms = line.trim_end().strip_suffix("ms")?;
    let ms: f64 = ms[ms.rfind(' ')? + 1..].parse().ok()?;
    Some(Pause {
        kind,
        ms,
        at: utctime(line),
    })
}

/// The `utctime` decorator of a line (`[2026-12-02T06:05:39.200+0000]`) in Unix seconds.
fn utctime(line: &str) -> Option<f64> {
    let stamp = line.strip_prefix('[')?.split(']').next()?;
    let t = chrono::DateTime::parse_from_str(stamp, "%Y-%m-%dT%H:%M:%S%.3f%z").ok()?;
    Some(t.timestamp() as f64 + f64::from(t.timestamp_subsec_millis()) / 1000.0)
}

/// A service's pauses over one phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GcSummary {
    /// Young (and mixed) collections.
    pub young: u64,
    /// Full collections.
    pub full: u64,
    /// Other pauses (remark, cleanup).
    pub other: u64,
    /// All pauses together, in milliseconds.
    pub pause_ms: f64,
    /// The longest pause, in milliseconds (0 without one).
    pub max_pause_ms: f64,
    /// Milliseconds of pauses in each second of the phase (the first is the phase's first
    /// second), for a run bounded by time's series; empty when the log has no wall times.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seconds_ms: Vec<f64>,
}

impl GcSummary {
    /// The pauses the log at a phase's end (`end`) has beyond those it had at its start
    /// (`start`, the first reads' count); the phase started at `started` (Unix seconds).
    pub(crate) fn between(start: &[Pause], end: &[Pause], started: f64) -> GcSummary {
        let mut s = GcSummary::default();
        for p in end.iter().skip(start.len()) {
            match p.kind {
                Kind::Young => s.young += 1,
                Kind::Full => s.full += 1,
                Kind::Other => s.other += 1,
            }
            s.pause_ms += p.ms;
            s.max_pause_ms = s.max_pause_ms.max(p.ms);
            if let Some(at) = p.at {
                let second = (at - started).max(0.0) as usize;
                if s.seconds_ms.len() <= second {
                    s.seconds_ms.resize(second + 1, 0.0);
                }
                s.seconds_ms[second] += p.ms;
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `-Xlog` option the images built here start their JVMs with: every pause with its
    /// wall time (UTC) and its length.
    const XLOG: &str = "-Xlog:gc:file=/tmp/perf-tests-gc.log:utctime,level,tags";

    /// Lines as JDK 17's G1 writes them with the decorators of [`XLOG`].
    const LOG_TEXT: &str = "\
[2026-12-02T06:05:37.101+0000][info][gc] Using G1
[2026-12-02T06:05:39.200+0000][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 51M->9M(1024M) 6.512ms
[2026-12-02T06:05:41.003+0000][info][gc] GC(1) Pause Young (Concurrent Start) (G1 Humongous Allocation) 300M->120M(1024M) 3.100ms
[2026-12-02T06:05:41.004+0000][info][gc] GC(2) Concurrent Mark Cycle
[2026-12-02T06:05:41.050+0000][info][gc] GC(2) Pause Remark 130M->130M(1024M) 1.250ms
[2026-12-02T06:05:41.060+0000][info][gc] GC(2) Pause Cleanup 130M->130M(1024M) 0.050ms
[2026-12-02T06:05:41.070+0000][info][gc] GC(2) Concurrent Mark Cycle 66.100ms
[2026-12-02T06:05:45.000+0000][info][gc] GC(3) Pause Full (System.gc()) 200M->20M(1024M) 45.678ms
[2026-12-02T06:05:46.000+0000][info][gc] GC(4) Pause Young (Normal) (G1 Evacuation Pause) 51M->9M(1024M) 2.0";

    #[test]
    fn pauses_are_read_with_their_kind_and_length_and_a_partial_line_waits() {
        let p = pauses(LOG_TEXT);
        let kinds: Vec<Kind> = p.iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::Young,
                Kind::Young,
                Kind::Other,
                Kind::Other,
                Kind::Full
            ]
        );
        assert_eq!(p[0].ms, 6.512);
        assert_eq!(p[4].ms, 45.678);
        // 2026-12-02T06:05:39.200Z
        assert_eq!(p[0].at, Some(1796191539.2));
        // The concurrent cycle is not a pause; the last line is not complete yet.
        assert_eq!(pauses(&format!("{LOG_TEXT}ms\n")).len(), 6);
        assert!(pauses("").is_empty());
    }

    #[test]
    fn a_phase_has_the_pauses_logged_between_its_edges() {
        let all = pauses(LOG_TEXT);
        // The phase started at 06:05:40.5: its second 0 holds the pauses at 41.0xx, its second
        // 4 the full one at 45.0.
        let started = 1796191540.5;
        let s = GcSummary::between(&all[..1], &all, started);
        assert_eq!((s.young, s.full, s.other), (1, 1, 2));
        assert!((s.pause_ms - (3.1 + 1.25 + 0.05 + 45.678)).abs() < 1e-9);
        assert_eq!(s.max_pause_ms, 45.678);
        assert_eq!(s.seconds_ms.len(), 5);
        assert!((s.seconds_ms[0] - 4.4).abs() < 1e-9, "{:?}", s.seconds_ms);
        assert_eq!(s.seconds_ms[4], 45.678);
        assert_eq!(
            GcSummary::between(&all, &all, started),
            GcSummary::default()
        );
    }

    #[test]
    fn the_images_write_their_gc_log_where_the_runner_reads_it() {
        assert!(XLOG.contains(&format!("file={LOG}:")));
        let images =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/kroxylicious/images");
        for script in ["kafka-broker.sh", "kroxylicious.sh"] {
            let text = std::fs::read_to_string(images.join(script)).unwrap();
            assert!(text.contains(XLOG), "{script} starts its JVM with {XLOG}");
        }
    }
}
