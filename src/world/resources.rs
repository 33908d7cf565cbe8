//! Resource use of containers while a workload runs, from the Docker Engine stats API.
//!
//! One task per container follows the engine's stats stream (about one sample a second, each
//! carrying the previous CPU counters), so the runner itself only parses a small JSON document
//! per container per second. CPU % is computed as `docker stats` does: the container's CPU time
//! delta over the host's CPU time delta, times the number of online CPUs. Memory is usage minus
//! page cache (cgroup v1 `cache`, cgroup v2 `inactive_file`). Network figures are the bytes
//! received and sent between the first and the last sample.

use std::collections::BTreeMap;

use bollard::models::ContainerStatsResponse;
use futures_util::StreamExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::accounting::cost::Role;
use crate::accounting::stats;
use crate::model::ServiceResources;
use crate::world::engine::Engine;

const MIB: f64 = 1024.0 * 1024.0;

/// The name of the workload's own container (the load generator) among the sampled services.
pub(crate) const LOAD_GENERATOR: &str = "workload (load generator)";
/// Share of a core (of all the machine's cores) from which the load generator (the machine)
/// counts as saturated: the produce loop is one thread, librdkafka's own threads add little.
pub(crate) const SATURATED_SHARE: f64 = 0.9;

/// A container to sample: its Compose service and engine id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Compose service name.
    pub service: String,
    /// Container id or name on the engine.
    pub container: String,
    /// Whether the service is shared by every scenario of the run.
    pub run_wide: bool,
    /// The swarm node that runs it, on a swarm.
    pub node: Option<String>,
}

impl Target {
    /// What the sampled container is to a cost: run-wide, the load generator, or the path's own.
    pub(crate) fn role(&self) -> Role {
        if self.run_wide {
            Role::RunWide
        } else if self.service.starts_with(LOAD_GENERATOR) {
            Role::LoadGenerator
        } else {
            Role::Path
        }
    }
}

/// One point read from a stats sample.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Point {
    /// CPU % since the previous sample; `None` for the first sample (no previous counters).
    pub cpu_pct: Option<f64>,
    /// Memory in bytes, usage minus page cache.
    pub mem_bytes: Option<u64>,
    /// Total bytes received over every network interface.
    pub rx_bytes: u64,
    /// Total bytes sent over every network interface.
    pub tx_bytes: u64,
}

/// Reads the figures of one engine stats sample.
pub(crate) fn point(s: &ContainerStatsResponse) -> Point {
    let cpu_pct = (|| {
        let cur = s.cpu_stats.as_ref()?;
        let pre = s.precpu_stats.as_ref()?;
        let total = cur.cpu_usage.as_ref()?.total_usage?;
        let pre_total = pre.cpu_usage.as_ref()?.total_usage?;
        let system = cur.system_cpu_usage?;
        let pre_system = pre.system_cpu_usage?;
        // The first sample has empty previous counters: no interval to divide by.
        if pre_system == 0 || system <= pre_system {
            return None;
        }
        let cpus = cur.online_cpus.map(|n| n as f64).or_else(|| {
            cur.cpu_usage
                .as_ref()?
                .percpu_usage
                .as_ref()
                .map(|v| v.len() as f64)
        })?;
        let delta = total.saturating_sub(pre_total) as f64;
        Some(delta / (system - pre_system) as f64 * cpus * 100.0)
    })();
    let mem_bytes = s.memory_stats.as_ref().and_then(|m| {
        let usage = m.usage?;
        let cache = m.stats.as_ref().and_then(|st| {
            st.get("cache")
                .or_else(|| st.get("total_inactive_file"))
                .or_else(|| st.get("inactive_file"))
                .copied()
        });
        Some(usage.saturating_sub(cache.unwrap_or(0)))
    });
    let (rx_bytes, tx_bytes) = crate::world::engine::network_bytes(s);
    Point {
        cpu_pct,
        mem_bytes,
        rx_bytes,
        tx_bytes,
    }
}

/// Peak and mean of a series of points of one service, with each point's memory when
/// `keep_series` (a run bounded by time: a soak's growth over time).
pub(crate) fn summarise(
    service: &str,
    run_wide: bool,
    points: &[Point],
    keep_series: bool,
) -> ServiceResources {
    let cpu: Vec<f64> = points.iter().filter_map(|p| p.cpu_pct).collect();
    let mem: Vec<f64> = points
        .iter()
        .filter_map(|p| p.mem_bytes.map(|b| b as f64 / MIB))
        .collect();
    let zero_if_nan = |x: f64| if x.is_nan() { 0.0 } else { x };
    let delta = |f: fn(&Point) -> u64| match (points.first(), points.last()) {
        (Some(a), Some(b)) => f(b).saturating_sub(f(a)) as f64 / MIB,
        _ => 0.0,
    };
    ServiceResources {
        service: service.to_string(),
        run_wide,
        node: None,
        samples: points.len() as u64,
        cpu_pct_mean: zero_if_nan(stats::mean(&cpu)),
        cpu_pct_peak: zero_if_nan(stats::min_max(&cpu).1),
        mem_mib_mean: zero_if_nan(stats::mean(&mem)),
        mem_mib_peak: zero_if_nan(stats::min_max(&mem).1),
        net_rx_mib: delta(|p| p.rx_bytes),
        net_tx_mib: delta(|p| p.tx_bytes),
        mem_series_mib: if keep_series { mem } else { Vec::new() },
    }
}

/// Combines the summaries of several repetitions of the same services: means and network
/// volumes are the median over repetitions, peaks the highest, samples the total.
pub(crate) fn combine(reps: &[Vec<ServiceResources>]) -> Vec<ServiceResources> {
    let mut by_service: BTreeMap<(bool, String), Vec<&ServiceResources>> = BTreeMap::new();
    let mut order: Vec<(bool, String)> = Vec::new();
    for r in reps.iter().flatten() {
        let key = (r.run_wide, r.service.clone());
        if !by_service.contains_key(&key) {
            order.push(key.clone());
        }
        by_service.entry(key).or_default().push(r);
    }
    order
        .into_iter()
        .map(|key| {
            let rs = &by_service[&key];
            let med = |f: fn(&ServiceResources) -> f64| {
                stats::median(&rs.iter().map(|r| f(r)).collect::<Vec<_>>())
            };
            let max =
                |f: fn(&ServiceResources) -> f64| rs.iter().map(|r| f(r)).fold(0.0f64, f64::max);
            ServiceResources {
                service: key.1.clone(),
                run_wide: key.0,
                // Every repetition runs a service on a node of its role: the first one's.
                node: rs.iter().find_map(|r| r.node.clone()),
                samples: rs.iter().map(|r| r.samples).sum(),
                cpu_pct_mean: med(|r| r.cpu_pct_mean),
                cpu_pct_peak: max(|r| r.cpu_pct_peak),
                mem_mib_mean: med(|r| r.mem_mib_mean),
                mem_mib_peak: max(|r| r.mem_mib_peak),
                net_rx_mib: med(|r| r.net_rx_mib),
                net_tx_mib: med(|r| r.net_tx_mib),
                // A series is one repetition's story: the first one's.
                mem_series_mib: rs
                    .iter()
                    .map(|r| &r.mem_series_mib)
                    .find(|s| !s.is_empty())
                    .cloned()
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// Warnings when a row may measure the client rather than the path, from the (combined)
/// resources of one scenario and the machine's online CPUs:
/// - the load generator's mean CPU is at least 90% of one core (its produce loop is one thread);
/// - the mean CPU of every sampled container together (services and load generator) is at least
///   90% of `cpus` cores: the machine's cores are all busy, the client competes for them.
pub(crate) fn load_generator_saturation(
    resources: &[ServiceResources],
    cpus: usize,
) -> Vec<String> {
    let mut out = Vec::new();
    // A paired run has its load generators a side (side B's named after side A's), several
    // load generators are numbered.
    for w in resources
        .iter()
        .filter(|r| r.service.starts_with(LOAD_GENERATOR))
    {
        let who = match w.service[LOAD_GENERATOR.len()..].trim() {
            "" => "the load generator".to_string(),
            "B" => "side B's load generator".to_string(),
            number => match number.strip_suffix(" B") {
                Some(number) => format!("side B's load generator {number}"),
                None => format!("load generator {number}"),
            },
        };
        if w.cpu_pct_mean >= SATURATED_SHARE * 100.0 {
            out.push(format!(
                "{who} is saturated: its container used {:.0}% CPU on average \
                 (peak {:.0}%), at least {:.0}% of the one core its produce loop can use; the \
                 rates may measure the client, not the path",
                w.cpu_pct_mean,
                w.cpu_pct_peak,
                SATURATED_SHARE * 100.0
            ));
        }
    }
    let cpus = cpus.max(1);
    let total: f64 = resources.iter().map(|r| r.cpu_pct_mean).sum();
    let capacity = cpus as f64 * 100.0;
    if !resources.is_empty() && total >= SATURATED_SHARE * capacity {
        out.push(format!(
            "the machine's cores are all busy: the sampled containers used {total:.0}% CPU \
             together on average, {:.0}% of {cpus} online CPUs; the load generator competes with \
             the path for them and the rates may measure the client, not the path",
            total / capacity * 100.0
        ));
    }
    out
}

/// Samples running containers until [`Sampler::finish`] is called.
pub struct Sampler {
    stop: watch::Sender<bool>,
    tasks: Vec<(Target, JoinHandle<Vec<Point>>)>,
}

impl Sampler {
    /// Starts one sampling task per target.
    pub fn start(engine: &Engine, targets: Vec<Target>) -> Sampler {
        let (stop, _) = watch::channel(false);
        let tasks = targets
            .into_iter()
            .map(|t| {
                let handle = tokio::spawn(follow(engine.clone(), t.container.clone(), {
                    stop.subscribe()
                }));
                (t, handle)
            })
            .collect();
        Sampler { stop, tasks }
    }

    /// Stops sampling and summarises each container (see [`summarise`]). A container whose
    /// stats could not be read (it stopped, the engine refused) reports the samples it got,
    /// possibly none.
    pub async fn finish(self, keep_series: bool) -> Vec<ServiceResources> {
        let _ = self.stop.send(true);
        let mut out = Vec::new();
        for (t, handle) in self.tasks {
            let points = handle.await.unwrap_or_default();
            let mut summary = summarise(&t.service, t.run_wide, &points, keep_series);
            summary.node = t.node;
            out.push(summary);
        }
        out
    }
}

/// Collects points from one container's stats stream until `stop` turns true or the stream ends.
async fn follow(engine: Engine, container: String, mut stop: watch::Receiver<bool>) -> Vec<Point> {
    let mut stream = engine.stats(&container);
    let mut points = Vec::new();
    loop {
        tokio::select! {
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() {
                    break;
                }
            }
            item = stream.next() => match item {
                Some(Ok(s)) => points.push(point(&s)),
                _ => break,
            },
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;
    use bollard::models::{
        ContainerCpuStats, ContainerCpuUsage, ContainerMemoryStats, ContainerNetworkStats,
    };
    use std::collections::HashMap;

    fn sample(total: u64, pre_total: u64, system: u64, pre_system: u64) -> ContainerStatsResponse {
        let cpu = |t: u64, s: u64| ContainerCpuStats {
            cpu_usage: Some(ContainerCpuUsage {
                total_usage: Some(t),
                ..Default::default()
            }),
            system_cpu_usage: Some(s),
            online_cpus: Some(2),
            ..Default::default()
        };
        ContainerStatsResponse {
            cpu_stats: Some(cpu(total, system)),
            precpu_stats: Some(cpu(pre_total, pre_system)),
            memory_stats: Some(ContainerMemoryStats {
                usage: Some(300 * 1024 * 1024),
                stats: Some(HashMap::from([("cache".to_string(), 100 * 1024 * 1024)])),
                ..Default::default()
            }),
            networks: Some(HashMap::from([
                (
                    "eth0".to_string(),
                    ContainerNetworkStats {
                        rx_bytes: Some(1024 * 1024),
                        tx_bytes: Some(2 * 1024 * 1024),
                        ..Default::default()
                    },
                ),
                (
                    "eth1".to_string(),
                    ContainerNetworkStats {
                        rx_bytes: Some(1024 * 1024),
                        tx_bytes: Some(0),
                        ..Default::default()
                    },
                ),
            ])),
            ..Default::default()
        }
    }

    #[test]
    fn cpu_memory_and_network_as_docker_stats_computes_them() {
        // 0.5 s of container CPU over 2 s of host CPU on 2 CPUs: 50%.
        let p = point(&sample(
            1_500_000_000,
            1_000_000_000,
            4_000_000_000,
            2_000_000_000,
        ));
        assert_eq!(p.cpu_pct, Some(50.0));
        assert_eq!(p.mem_bytes, Some(200 * 1024 * 1024));
        assert_eq!((p.rx_bytes, p.tx_bytes), (2 * 1024 * 1024, 2 * 1024 * 1024));
        // The first sample of a stream has no previous system counter.
        assert_eq!(point(&sample(10, 0, 4_000, 0)).cpu_pct, None);
    }

    #[test]
    fn summary_means_peaks_and_traffic_between_first_and_last_sample() {
        let pts = [
            Point {
                cpu_pct: None,
                mem_bytes: Some(100 << 20),
                rx_bytes: 10 << 20,
                tx_bytes: 0,
            },
            Point {
                cpu_pct: Some(20.0),
                mem_bytes: Some(300 << 20),
                rx_bytes: 15 << 20,
                tx_bytes: 4 << 20,
            },
            Point {
                cpu_pct: Some(60.0),
                mem_bytes: Some(200 << 20),
                rx_bytes: 20 << 20,
                tx_bytes: 8 << 20,
            },
        ];
        let s = summarise("broker", true, &pts, false);
        assert_eq!(s.samples, 3);
        assert_eq!((s.cpu_pct_mean, s.cpu_pct_peak), (40.0, 60.0));
        assert_eq!((s.mem_mib_mean, s.mem_mib_peak), (200.0, 300.0));
        assert_eq!((s.net_rx_mib, s.net_tx_mib), (10.0, 8.0));
        let empty = summarise("gone", false, &[], false);
        assert_eq!((empty.samples, empty.cpu_pct_peak), (0, 0.0));
    }

    fn used(service: &str, cpu: f64) -> ServiceResources {
        ServiceResources {
            service: service.into(),
            samples: 5,
            cpu_pct_mean: cpu,
            cpu_pct_peak: cpu + 10.0,
            ..Default::default()
        }
    }

    #[test]
    fn a_load_generator_near_one_core_is_saturated() {
        let w = load_generator_saturation(&[used("broker1", 30.0), used(LOAD_GENERATOR, 90.0)], 8);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("load generator is saturated") && w[0].contains("90% CPU on average"),
            "{w:?}"
        );
        assert!(w[0].contains("(peak 100%)"), "{w:?}");
        assert!(
            w[0].contains("may measure the client, not the path"),
            "{w:?}"
        );
        // Just below the threshold: no warning.
        assert!(
            load_generator_saturation(&[used("broker1", 30.0), used(LOAD_GENERATOR, 89.9)], 8)
                .is_empty()
        );
        // Several load generators, and a paired run's side B's, are each named.
        let named = |service: &str| {
            load_generator_saturation(&[used(service, 95.0)], 8)[0]
                .split(" is saturated")
                .next()
                .unwrap()
                .to_string()
        };
        assert_eq!(named("workload (load generator) 2"), "load generator 2");
        assert_eq!(
            named("workload (load generator) B"),
            "side B's load generator"
        );
        assert_eq!(
            named("workload (load generator) 2 B"),
            "side B's load generator 2"
        );
    }

    #[test]
    fn all_cores_busy_is_saturated() {
        // 2 CPUs: 180% together is 90% of the machine, whatever the load generator alone uses.
        let busy = [
            used("broker1", 80.0),
            used("proxy", 50.0),
            used(LOAD_GENERATOR, 50.0),
        ];
        let w = load_generator_saturation(&busy, 2);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("cores are all busy"), "{w:?}");
        assert!(w[0].contains("180% CPU together"), "{w:?}");
        assert!(w[0].contains("90% of 2 online CPUs"), "{w:?}");
        // The same containers on 4 CPUs leave half the machine idle.
        assert!(load_generator_saturation(&busy, 4).is_empty());
        // Just below 90% of 2 CPUs.
        let idle = [
            used("broker1", 100.0),
            used("proxy", 30.0),
            used(LOAD_GENERATOR, 49.9),
        ];
        assert!(load_generator_saturation(&idle, 2).is_empty());
    }

    #[test]
    fn both_conditions_warn_together() {
        let w = load_generator_saturation(&[used("broker1", 95.0), used(LOAD_GENERATOR, 120.0)], 2);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("load generator is saturated"), "{w:?}");
        assert!(w[1].contains("215% CPU together"), "{w:?}");
        // Nothing sampled: nothing to say.
        assert!(load_generator_saturation(&[], 2).is_empty());
    }

    #[test]
    fn repetitions_combine_by_median_and_peak() {
        let r = |cpu: f64, peak: f64| ServiceResources {
            service: "proxy".into(),
            samples: 2,
            cpu_pct_mean: cpu,
            cpu_pct_peak: peak,
            ..Default::default()
        };
        let all = combine(&[
            vec![r(10.0, 30.0)],
            vec![r(30.0, 90.0)],
            vec![r(20.0, 40.0)],
        ]);
        assert_eq!(all.len(), 1);
        assert_eq!((all[0].cpu_pct_mean, all[0].cpu_pct_peak), (20.0, 90.0));
        assert_eq!(all[0].samples, 6);
    }
}
