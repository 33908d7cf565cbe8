//! What a path costs, exact to the measured phase: each sampled container's CPU time and
//! network bytes between the counters read at a phase's start and at its end, and from them
//! CPU µs per record and millicores per MB/s of records, per service and for the path's own
//! services together (the scenario's services, apart from the run-wide broker and the load
//! generator). CPU per record depends on batching, so two figures compare only at one rate.
//! A JVM service's garbage-collection pauses are read from its GC log at the same edges
//! ([`crate::accounting::gc`]), and its CPU by kind of thread (JIT compilers, GC threads) from the kernel's
//! accounting of each thread ([`crate::accounting::jvm_threads`]).

use serde::{Deserialize, Serialize};

use crate::accounting::counters::Counters;
use crate::accounting::gc::{GcSummary, Pause};
use crate::accounting::jvm_threads::{Thread, ThreadCpu};

/// One sampled service's counters at one moment, with what the service is to the measurement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reading {
    pub service: String,
    pub role: Role,
    pub counters: Counters,
    /// Every pause its GC log holds so far; `None` for a service that keeps none (not a JVM,
    /// or one whose image writes no GC log where the runner reads it).
    pub gc: Option<Vec<Pause>>,
    /// Each thread's CPU so far; `None` for a service that is not a JVM (or whose threads
    /// could not be read).
    pub threads: Option<Vec<Thread>>,
}

/// Every sampled service's reading at one moment.
pub(crate) type Readings = Vec<Reading>;

/// What a sampled service is to the measurement.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// A service of the scenario itself (a proxy, a KMS, a scenario's own broker).
    Path,
    /// A service shared by every scenario of the run (the run-wide broker).
    RunWide,
    /// The workload's container.
    LoadGenerator,
}

/// One service's use over one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ServiceCost {
    pub service: String,
    pub role: Role,
    /// CPU seconds (user + system) between the phase's edges.
    pub cpu_s: f64,
    /// Bytes received and sent between the phase's edges.
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    /// Its garbage-collection pauses within the phase, for a service whose GC log was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gc: Option<GcSummary>,
    /// A JVM's CPU seconds by kind of thread within the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<ThreadCpu>,
}

/// The cost of one measured phase (`produce`, `consume`, or `produce_and_consume` when both
/// run at once).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseCost {
    pub phase: String,
    /// Records the phase moved.
    pub records: u64,
    /// Record bytes the phase moved (records x record size).
    pub record_bytes: u64,
    /// When the phase started (its counters read), in Unix seconds; `None` in a summary of
    /// repetitions and in results of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_unix_s: Option<f64>,
    /// Wall seconds between the phase's edges.
    pub seconds: f64,
    pub services: Vec<ServiceCost>,
    /// The share of the hosts' CPU time the hypervisor stole over the phase, in percent: the
    /// highest of the hosts the sampled containers ran on (one on a single engine). A guest
    /// kernel with paravirtual steal accounting leaves stolen time out of a container's CPU
    /// counter, but a host that busy also slows the time it does give (caches, memory
    /// bandwidth shared with other guests), so a cost read inside a VM varies with it. `None`
    /// when the engine gave no host clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_steal_percent: Option<f64>,
}

/// The path's own services together, as one row.
pub(crate) const PATH: &str = "path (own services)";
/// The run-wide services together (a cluster's brokers), as one row when there are several.
pub(crate) const CLUSTER: &str = "cluster";

impl PhaseCost {
    /// From the counters read at the phase's `start` and `end`, keyed by service; a service
    /// missing at either edge (it was not running) is left out. The phase started at `started`
    /// (Unix seconds) and lasted `seconds`.
    pub(crate) fn between(
        phase: &str,
        records: u64,
        record_size: u64,
        (started, seconds): (f64, f64),
        start: &[Reading],
        end: &[Reading],
    ) -> PhaseCost {
        let mut steal: Option<f64> = None;
        let services = end
            .iter()
            .filter_map(|after| {
                let before = start.iter().find(|r| r.service == after.service)?;
                let d = after.counters.since(&before.counters);
                if let Some(s) = d.stolen_percent {
                    steal = Some(steal.map_or(s, |m| m.max(s)));
                }
                let gc = match (&before.gc, &after.gc) {
                    (Some(b), Some(a)) => Some(GcSummary::between(b, a, started)),
                    _ => None,
                };
                let threads = match (&before.threads, &after.threads) {
                    (Some(b), Some(a)) => Some(ThreadCpu::between(b, a)),
                    _ => None,
                };
                Some(ServiceCost {
                    service: after.service.clone(),
                    role: after.role,
                    cpu_s: d.cpu_ns as f64 / 1e9,
                    rx_bytes: d.rx_bytes,
                    tx_bytes: d.tx_bytes,
                    gc,
                    threads,
                })
            })
            .collect();
        PhaseCost {
            phase: phase.to_string(),
            records,
            record_bytes: records * record_size,
            start_unix_s: Some(started),
            seconds,
            services,
            host_steal_percent: steal,
        }
    }

    /// The path's own services summed (`None` when the scenario has none: the baseline).
    pub(crate) fn path(&self) -> Option<ServiceCost> {
        self.summed(Role::Path, PATH, 1)
    }

    /// The run-wide services summed, when there are several (a cluster of brokers).
    pub(crate) fn cluster(&self) -> Option<ServiceCost> {
        self.summed(Role::RunWide, CLUSTER, 2)
    }

    /// The services of `role` summed as one row named `name`, when there are at least `least`.
    fn summed(&self, role: Role, name: &str, least: usize) -> Option<ServiceCost> {
        let of: Vec<&ServiceCost> = self.services.iter().filter(|s| s.role == role).collect();
        (of.len() >= least).then(|| ServiceCost {
            service: name.to_string(),
            role,
            cpu_s: of.iter().map(|s| s.cpu_s).sum(),
            rx_bytes: of.iter().map(|s| s.rx_bytes).sum(),
            tx_bytes: of.iter().map(|s| s.tx_bytes).sum(),
            gc: None,
            threads: None,
        })
    }

    /// Every service's use, then the run-wide services summed (when there are several) and the
    /// path's own services summed (when it has any): the rows a table shows.
    pub(crate) fn rows(&self) -> Vec<ServiceCost> {
        let mut rows = self.services.clone();
        rows.extend(self.cluster());
        rows.extend(self.path());
        rows
    }

    /// CPU microseconds per record of `s` in this phase.
    pub(crate) fn us_per_record(&self, s: &ServiceCost) -> f64 {
        if self.records == 0 {
            return 0.0;
        }
        s.cpu_s * 1e6 / self.records as f64
    }

    /// Millicores of `s` per MB/s (10^6 bytes) of records, as a sizing guide counts: its CPU
    /// rate over the records' rate, in which the phase's duration cancels out.
    pub(crate) fn millicores_per_mb_s(&self, s: &ServiceCost) -> f64 {
        if self.record_bytes == 0 {
            return 0.0;
        }
        s.cpu_s * 1000.0 / (self.record_bytes as f64 / 1e6)
    }

    /// Record bytes that crossed the path in this phase, both directions counted: a phase that
    /// produced and consumed at once moved its records twice.
    pub fn traffic_bytes(&self) -> u64 {
        if self.phase == PRODUCE_AND_CONSUME {
            self.record_bytes * 2
        } else {
            self.record_bytes
        }
    }

    /// Cores `s` used on average over the phase.
    pub(crate) fn cores(&self, s: &ServiceCost) -> f64 {
        if self.seconds <= 0.0 {
            return 0.0;
        }
        s.cpu_s / self.seconds
    }
}

/// The name of the phase in which the end-to-end mode produced and consumed at once.
pub(crate) const PRODUCE_AND_CONSUME: &str = "produce_and_consume";

/// What the path's own services did over all of a measurement's phases together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PathLoad {
    /// Their CPU seconds.
    pub cpu_s: f64,
    /// MB (10^6 bytes) of records the phases moved, both directions counted.
    pub traffic_mb: f64,
    /// The phases' wall seconds.
    pub seconds: f64,
}

impl PathLoad {
    /// Over `phases`; `None` without any, or without a path of its own (the baseline).
    pub(crate) fn of(phases: &[PhaseCost]) -> Option<PathLoad> {
        if phases.is_empty() {
            return None;
        }
        Some(PathLoad {
            cpu_s: phases
                .iter()
                .map(|p| p.path().map(|s| s.cpu_s))
                .sum::<Option<f64>>()?,
            traffic_mb: phases.iter().map(|p| p.traffic_bytes()).sum::<u64>() as f64 / 1e6,
            seconds: phases.iter().map(|p| p.seconds).sum(),
        })
    }
}

/// The path's coefficient over a measurement's phases, as the Kroxylicious sizing guide counts
/// it: millicores of the path's own services per MB/s of record traffic, produced and consumed
/// added (`CPU_millicores = coefficient x (produce MB/s + consume MB/s)`). It is the path's CPU
/// seconds over every measured phase, x 1000, over the MB those phases moved. `None` without a
/// path of its own or without any cost measured.
pub fn path_coefficient(phases: &[PhaseCost]) -> Option<f64> {
    let load = PathLoad::of(phases)?;
    (load.traffic_mb > 0.0).then(|| load.cpu_s * 1000.0 / load.traffic_mb)
}

/// The path's coefficient ([`path_coefficient`]) without its JVMs' JIT compilers and GC threads:
/// the application's own work, which a JVM started for the run keeps compiling and collecting
/// around at rates that vary from one repetition to the next. `None` as for the coefficient, or
/// when no service of the path had its threads read (then there is nothing to leave out).
pub(crate) fn path_rest_coefficient(phases: &[PhaseCost]) -> Option<f64> {
    let load = PathLoad::of(phases)?;
    let own = phases
        .iter()
        .flat_map(|p| &p.services)
        .filter(|s| s.role == Role::Path);
    let apart = compilers_and_collectors(own)?;
    (load.traffic_mb > 0.0).then(|| (load.cpu_s - apart).max(0.0) * 1000.0 / load.traffic_mb)
}

/// The CPU seconds of `services`' JVMs' JIT compiler and GC threads, which a rest figure leaves
/// out (a service that is no JVM, a KMS, has none and counts whole); `None` when no service had
/// its threads read, so there is nothing to leave out.
pub(crate) fn compilers_and_collectors<'a>(
    services: impl IntoIterator<Item = &'a ServiceCost>,
) -> Option<f64> {
    let threads: Vec<&ThreadCpu> = services
        .into_iter()
        .filter_map(|s| s.threads.as_ref())
        .collect();
    (!threads.is_empty()).then(|| threads.iter().map(|t| t.jit_s + t.gc_s).sum())
}

/// The path's millicores per MB/s of records in the phase named `phase`; `None` when that phase
/// was not measured or the scenario has no path of its own.
pub(crate) fn phase_coefficient(phases: &[PhaseCost], phase: &str) -> Option<f64> {
    let p = phases.iter().find(|p| p.phase == phase)?;
    let path = p.path()?;
    (p.record_bytes > 0).then(|| p.millicores_per_mb_s(&path))
}

/// The median of `phases`' host steal ([`PhaseCost::host_steal_percent`]), over those that
/// have a figure; `None` when none has.
pub(crate) fn median_steal<'a>(phases: impl IntoIterator<Item = &'a PhaseCost>) -> Option<f64> {
    let steal: Vec<f64> = phases
        .into_iter()
        .filter_map(|p| p.host_steal_percent)
        .collect();
    (!steal.is_empty()).then(|| crate::accounting::stats::median(&steal))
}

/// The median cost of repetitions, phase by phase and service by service (CPU, bytes and each
/// GC figure are medians of their own; records and bytes moved are the first repetition's, the
/// same in each).
pub(crate) fn summary(reps: &[&[PhaseCost]]) -> Vec<PhaseCost> {
    let Some(first) = reps.first() else {
        return Vec::new();
    };
    let median = |v: Vec<f64>| crate::accounting::stats::median(&v);
    first
        .iter()
        .map(|phase| {
            let same: Vec<&PhaseCost> = reps
                .iter()
                .filter_map(|r| r.iter().find(|p| p.phase == phase.phase))
                .collect();
            let services = phase
                .services
                .iter()
                .map(|s| {
                    let of: Vec<&ServiceCost> = same
                        .iter()
                        .filter_map(|p| p.services.iter().find(|x| x.service == s.service))
                        .collect();
                    ServiceCost {
                        service: s.service.clone(),
                        role: s.role,
                        cpu_s: median(of.iter().map(|x| x.cpu_s).collect()),
                        rx_bytes: median(of.iter().map(|x| x.rx_bytes as f64).collect()) as u64,
                        tx_bytes: median(of.iter().map(|x| x.tx_bytes as f64).collect()) as u64,
                        gc: gc_median(&of),
                        threads: threads_median(&of),
                    }
                })
                .collect();
            PhaseCost {
                phase: phase.phase.clone(),
                records: phase.records,
                record_bytes: phase.record_bytes,
                start_unix_s: None,
                seconds: median(same.iter().map(|p| p.seconds).collect()),
                services,
                host_steal_percent: median_steal(same.iter().copied()),
            }
        })
        .collect()
}

/// The median of each GC figure over the repetitions that read the service's GC log.
fn gc_median(of: &[&ServiceCost]) -> Option<GcSummary> {
    let gcs: Vec<&GcSummary> = of.iter().filter_map(|x| x.gc.as_ref()).collect();
    if gcs.is_empty() {
        return None;
    }
    let median = |f: fn(&GcSummary) -> f64| {
        crate::accounting::stats::median(&gcs.iter().map(|g| f(g)).collect::<Vec<f64>>())
    };
    Some(GcSummary {
        young: median(|g| g.young as f64).round() as u64,
        full: median(|g| g.full as f64).round() as u64,
        other: median(|g| g.other as f64).round() as u64,
        pause_ms: median(|g| g.pause_ms),
        max_pause_ms: median(|g| g.max_pause_ms),
        // A second-by-second series is one repetition's (the first that has one).
        seconds_ms: gcs
            .iter()
            .find(|g| !g.seconds_ms.is_empty())
            .map(|g| g.seconds_ms.clone())
            .unwrap_or_default(),
    })
}

/// The median of each kind's CPU over the repetitions that read the service's threads.
fn threads_median(of: &[&ServiceCost]) -> Option<ThreadCpu> {
    let all: Vec<&ThreadCpu> = of.iter().filter_map(|x| x.threads.as_ref()).collect();
    let median = |f: fn(&ThreadCpu) -> f64| {
        crate::accounting::stats::median(&all.iter().map(|t| f(t)).collect::<Vec<f64>>())
    };
    (!all.is_empty()).then(|| ThreadCpu {
        jit_s: median(|t| t.jit_s),
        gc_s: median(|t| t.gc_s),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::gc::Kind;

    fn counters(cpu_ms: u64, rx: u64, tx: u64) -> Counters {
        Counters {
            cpu_ns: cpu_ms * 1_000_000,
            rx_bytes: rx,
            tx_bytes: tx,
            host: None,
        }
    }

    fn reading(service: &str, role: Role, counters: Counters) -> Reading {
        Reading {
            service: service.into(),
            role,
            counters,
            gc: None,
            threads: None,
        }
    }

    fn phase() -> PhaseCost {
        let start = vec![
            reading("proxy", Role::Path, counters(1000, 0, 0)),
            reading("kms", Role::Path, counters(50, 0, 0)),
            reading("broker", Role::RunWide, counters(9000, 0, 0)),
            reading("load", Role::LoadGenerator, counters(10, 5, 5)),
        ];
        // 100000 records of 1000 bytes (100 MB) in 10 s.
        let end = vec![
            reading("proxy", Role::Path, counters(1500, 200, 100)),
            reading("kms", Role::Path, counters(70, 10, 10)),
            reading("broker", Role::RunWide, counters(9400, 0, 0)),
            reading("load", Role::LoadGenerator, counters(1010, 5, 105)),
            reading("late", Role::Path, counters(5, 0, 0)),
        ];
        PhaseCost::between("produce", 100_000, 1000, (0.0, 10.0), &start, &end)
    }

    #[test]
    fn a_jvm_s_pauses_are_those_its_log_gained_within_the_phase() {
        let young = |ms| Pause {
            kind: Kind::Young,
            ms,
            at: None,
        };
        let mut start = vec![reading("proxy", Role::Path, counters(0, 0, 0))];
        let mut end = start.clone();
        start[0].gc = Some(vec![young(9.0)]);
        end[0].gc = Some(vec![young(9.0), young(2.0), young(3.0)]);
        let p = PhaseCost::between("produce", 1, 1, (0.0, 1.0), &start, &end);
        let gc = p.services[0].gc.as_ref().unwrap();
        assert_eq!((gc.young, gc.pause_ms, gc.max_pause_ms), (2, 5.0, 3.0));
        // A service whose log could not be read at an edge has no figures, not zeros.
        end[0].gc = None;
        let p = PhaseCost::between("produce", 1, 1, (0.0, 1.0), &start, &end);
        assert_eq!(p.services[0].gc, None);
        assert_eq!(phase().services[0].gc, None);
    }

    #[test]
    fn the_difference_of_the_edges_per_record_and_per_mb_s() {
        let p = phase();
        // A service not running at the start has no difference to take.
        let names: Vec<&str> = p.services.iter().map(|s| s.service.as_str()).collect();
        assert_eq!(names, ["proxy", "kms", "broker", "load"]);
        let proxy = &p.services[0];
        assert_eq!(
            (proxy.cpu_s, proxy.rx_bytes, proxy.tx_bytes),
            (0.5, 200, 100)
        );
        // 0.5 s of CPU for 100000 records: 5 µs each; 500 ms of CPU per 100 MB is 5 millicores
        // per MB/s (0.05 cores at 10 MB/s); over 10 s, 0.05 cores.
        assert!((p.us_per_record(proxy) - 5.0).abs() < 1e-9);
        assert!((p.millicores_per_mb_s(proxy) - 5.0).abs() < 1e-9);
        assert!((p.cores(proxy) - 0.05).abs() < 1e-9);
        // The path: the proxy and the KMS, not the run-wide broker nor the load generator.
        let path = p.path().unwrap();
        assert!((path.cpu_s - 0.52).abs() < 1e-9, "{path:?}");
        assert_eq!(path.rx_bytes, 210);
    }

    #[test]
    fn a_phase_s_steal_is_its_busiest_host_s_and_the_summary_s_the_median() {
        use crate::accounting::counters::{Clock, HostClock};
        let on = |mut r: Reading, s: i64, unstolen_s: u64| {
            r.counters.host = Some(HostClock {
                at_ns: s * 1_000_000_000,
                unstolen_ns: unstolen_s * 1_000_000_000,
                cpus: 2,
                clock: Clock::Kernel,
            });
            r
        };
        let proxy = || reading("proxy", Role::Path, counters(0, 0, 0));
        let broker = || reading("broker", Role::RunWide, counters(0, 0, 0));
        // Over 10 s on two CPUs the proxy's host lost 5 of 20 CPU seconds, the broker's 10.
        let start = [on(proxy(), 0, 0), on(broker(), 0, 0)];
        let end = [on(proxy(), 10, 15), on(broker(), 10, 10)];
        let p = PhaseCost::between("produce", 1, 1, (0.0, 10.0), &start, &end);
        assert_eq!(p.host_steal_percent, Some(50.0));
        // A host without a clock at either edge adds nothing; none at all gives no figure.
        let end = [on(proxy(), 10, 15), broker()];
        let q = PhaseCost::between("produce", 1, 1, (0.0, 10.0), &start, &end);
        assert_eq!(q.host_steal_percent, Some(25.0));
        assert_eq!(phase().host_steal_percent, None);
        let (a, b, c) = (vec![p], vec![q], vec![phase()]);
        assert_eq!(summary(&[&a, &b, &c])[0].host_steal_percent, Some(37.5));
        assert_eq!(summary(&[&c])[0].host_steal_percent, None);
    }

    #[test]
    fn several_run_wide_brokers_are_summed_in_a_row_of_their_own_and_one_is_not() {
        let one = phase();
        assert_eq!(one.cluster(), None);
        let names =
            |p: &PhaseCost| -> Vec<String> { p.rows().into_iter().map(|s| s.service).collect() };
        assert_eq!(names(&one), ["proxy", "kms", "broker", "load", PATH]);
        let start = [
            reading("broker1", Role::RunWide, counters(100, 0, 0)),
            reading("broker2", Role::RunWide, counters(200, 0, 0)),
            reading("proxy", Role::Path, counters(0, 0, 0)),
        ];
        let end = [
            reading("broker1", Role::RunWide, counters(400, 10, 20)),
            reading("broker2", Role::RunWide, counters(300, 5, 5)),
            reading("proxy", Role::Path, counters(50, 0, 0)),
        ];
        let p = PhaseCost::between("produce", 1, 1, (0.0, 1.0), &start, &end);
        let cluster = p.cluster().unwrap();
        assert!((cluster.cpu_s - 0.4).abs() < 1e-9, "{cluster:?}");
        assert_eq!((cluster.rx_bytes, cluster.tx_bytes), (15, 25));
        assert_eq!(names(&p), ["broker1", "broker2", "proxy", CLUSTER, PATH]);
    }

    #[test]
    fn a_baseline_has_no_path_of_its_own() {
        let mut p = phase();
        p.services.retain(|s| s.role != Role::Path);
        assert_eq!(p.path(), None);
        assert_eq!(path_coefficient(&[p.clone()]), None);
        assert_eq!(phase_coefficient(&[p], "produce"), None);
        assert_eq!(path_coefficient(&[]), None);
    }

    #[test]
    fn the_coefficient_counts_both_directions_as_the_sizing_guide_does() {
        let produce = phase();
        let mut consume = phase();
        consume.phase = "consume".into();
        consume.services[0].cpu_s = 0.3;
        // Path CPU 0.52 s producing 100 MB and 0.32 s consuming them: 0.84 s over 200 MB of
        // traffic is 4.2 millicores per MB/s of produce + consume.
        let both = path_coefficient(&[produce.clone(), consume.clone()]).unwrap();
        assert!((both - 4.2).abs() < 1e-9, "{both}");
        assert!(
            (phase_coefficient(&[produce.clone(), consume.clone()], "consume").unwrap() - 3.2)
                .abs()
                < 1e-9
        );
        assert_eq!(phase_coefficient(&[consume], "produce"), None);
        // Producing and consuming at once, the records crossed the path twice.
        let mut at_once = produce;
        at_once.phase = PRODUCE_AND_CONSUME.into();
        assert_eq!(at_once.traffic_bytes(), 200_000_000);
        let c = path_coefficient(&[at_once]).unwrap();
        assert!((c - 2.6).abs() < 1e-9, "{c}");
    }

    #[test]
    fn the_rest_of_the_coefficient_leaves_the_compilers_and_the_collector_out() {
        let mut p = phase();
        // No threads read: nothing to leave out, no figure.
        assert_eq!(path_rest_coefficient(&[p.clone()]), None);
        // The proxy (0.5 s) spent 0.1 s compiling and 0.05 s collecting; the KMS (0.02 s) is
        // not a JVM and counts whole; the broker's threads are not the path's.
        p.services[0].threads = Some(ThreadCpu {
            jit_s: 0.1,
            gc_s: 0.05,
        });
        p.services[2].threads = Some(ThreadCpu {
            jit_s: 9.0,
            gc_s: 9.0,
        });
        let rest = path_rest_coefficient(&[p.clone()]).unwrap();
        assert!((rest - 3.7).abs() < 1e-9, "{rest}");
        assert!((path_coefficient(&[p]).unwrap() - 5.2).abs() < 1e-9);
    }

    #[test]
    fn the_summary_is_the_median_service_by_service() {
        let mut a = phase();
        let mut b = phase();
        let mut c = phase();
        a.services[0].cpu_s = 0.4;
        b.services[0].cpu_s = 0.9;
        c.services[0].cpu_s = 0.5;
        c.seconds = 12.0;
        let (a, b, c) = (vec![a], vec![b], vec![c]);
        let s = summary(&[&a, &b, &c]);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].services[0].cpu_s, 0.5);
        assert_eq!(s[0].seconds, 10.0);
        assert_eq!(s[0].records, 100_000);
        assert!(summary(&[]).is_empty());
    }

    #[test]
    fn a_jvm_s_threads_are_costed_over_the_phase_and_summarised_by_median() {
        use crate::accounting::jvm_threads::{Kind, Thread};
        let jit = |ticks| Thread {
            tid: 20,
            kind: Kind::Jit,
            ticks,
        };
        let mut start = vec![reading("proxy", Role::Path, counters(0, 0, 0))];
        let mut end = start.clone();
        start[0].threads = Some(vec![jit(100)]);
        end[0].threads = Some(vec![jit(350)]);
        let p = PhaseCost::between("produce", 1, 1, (0.0, 1.0), &start, &end);
        let t = p.services[0].threads.unwrap();
        assert!((t.jit_s - 2.5).abs() < 1e-9 && t.gc_s == 0.0, "{t:?}");
        // Threads unread at either edge: no figures, not zeros.
        end[0].threads = None;
        let q = PhaseCost::between("produce", 1, 1, (0.0, 1.0), &start, &end);
        assert_eq!(q.services[0].threads, None);
        let with = |jit_s| {
            let mut r = p.clone();
            r.services[0].threads = Some(ThreadCpu { jit_s, gc_s: 0.1 });
            vec![r]
        };
        let (a, b, c) = (with(1.0), with(4.0), with(2.0));
        let s = summary(&[&a, &b, &c, &[q]]);
        assert_eq!(s[0].services[0].threads.unwrap().jit_s, 2.0);
    }
}
