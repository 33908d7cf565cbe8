//! Whose resources these are, and whether their run is still alive.
//!
//! Every container and network the runner creates carries the host name, process id and process
//! start time (field 22 of `/proc/<pid>/stat`, so a reused pid is not mistaken for the run) of the
//! process that created it. `perf-tests clean` removes only what a run that is no longer alive
//! left; `clean --force` removes everything managed.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::OnceLock;

use anyhow::Result;

use super::{Engine, CONFIG, CONTAINER, LABEL_MANAGED, LABEL_RUN, NETWORK, SERVICE};

/// Label carrying the host name of the process that created the resource.
pub(crate) const LABEL_HOST: &str = "io.perf-tests.host";
/// Label carrying the process id of the process that created the resource.
pub(crate) const LABEL_PID: &str = "io.perf-tests.pid";
/// Label carrying that process's start time (clock ticks after boot, `/proc/<pid>/stat` field 22).
pub(crate) const LABEL_PID_START: &str = "io.perf-tests.pid-start";

/// The process that created a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    /// Host name.
    pub host: String,
    /// Process id.
    pub pid: u32,
    /// Process start time in clock ticks after boot, when it could be read.
    pub start: Option<u64>,
}

impl Owner {
    /// This process.
    pub fn current() -> &'static Owner {
        static CURRENT: OnceLock<Owner> = OnceLock::new();
        CURRENT.get_or_init(|| {
            let pid = std::process::id();
            Owner {
                host: hostname(),
                pid,
                start: process_start(pid),
            }
        })
    }

    /// The labels naming this owner.
    pub fn labels(&self) -> Vec<(String, String)> {
        let mut labels = vec![
            (LABEL_HOST.to_string(), self.host.clone()),
            (LABEL_PID.to_string(), self.pid.to_string()),
        ];
        if let Some(start) = self.start {
            labels.push((LABEL_PID_START.to_string(), start.to_string()));
        }
        labels
    }
}

/// What `clean` does with a resource, and why (the text completes "its run ...").
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Its run is over: the resource is removed.
    Dead(String),
    /// Its run's process is still running on this host: the resource is kept.
    Alive(String),
    /// It cannot be told from here whether its run is alive: kept, and reported.
    Unknown(String),
}

/// Decides from a resource's labels whether the run that made it is alive. `this_host` is this
/// machine's host name; `start_of(pid)` is the start time of process `pid` on this host, `None`
/// when there is no such process.
pub(crate) fn judge(
    labels: &HashMap<String, String>,
    this_host: &str,
    start_of: impl Fn(u32) -> Option<u64>,
) -> Verdict {
    let host = labels.get(LABEL_HOST);
    let pid = labels.get(LABEL_PID).and_then(|p| p.parse::<u32>().ok());
    let (Some(host), Some(pid)) = (host, pid) else {
        return Verdict::Unknown(
            "carries no owner labels (an older perf-tests made it), so whether its run is alive \
             cannot be told"
                .to_string(),
        );
    };
    if host != this_host {
        return Verdict::Unknown(format!(
            "was made on host {host} (process {pid}), whose processes cannot be seen from here"
        ));
    }
    let Some(running_since) = start_of(pid) else {
        return Verdict::Dead(format!("process {pid} on this host is gone"));
    };
    match labels
        .get(LABEL_PID_START)
        .and_then(|s| s.parse::<u64>().ok())
    {
        Some(start) if start != running_since => Verdict::Dead(format!(
            "process {pid} on this host is gone (the pid now belongs to a process started at \
             tick {running_since}, not {start})"
        )),
        Some(_) => Verdict::Alive(format!("process {pid} on this host is still running")),
        // Without a start time a reused pid cannot be told from the run: keep it.
        None => Verdict::Alive(format!(
            "process {pid} on this host is running (no start time to tell a reused pid)"
        )),
    }
}

/// The start time of process `pid` (`/proc/<pid>/stat` field 22); `None` when there is none.
pub(crate) fn process_start(pid: u32) -> Option<u64> {
    start_time_in(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Field 22 of a `/proc/<pid>/stat` line. Field 2, the command name, is in parentheses and may
/// hold spaces and parentheses itself, so fields are counted after the last `)`.
fn start_time_in(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    // `rest` starts with field 3.
    rest.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// This machine's host name.
fn hostname() -> String {
    crate::world::machine::hostname().unwrap_or_else(|| "unknown".to_string())
}

// A container or network with the managed label.
use super::Labelled as Managed;

impl Managed {
    fn run(&self) -> &str {
        self.labels.get(LABEL_RUN).map_or("?", String::as_str)
    }
}

/// "2 containers and 1 network" (services and configs too, on a swarm).
fn counted(items: &[&Managed]) -> String {
    let words: Vec<String> = [SERVICE, CONTAINER, CONFIG, NETWORK]
        .iter()
        .filter_map(|kind| {
            let count = items.iter().filter(|m| m.kind == *kind).count();
            (count > 0).then(|| format!("{count} {kind}{}", if count == 1 { "" } else { "s" }))
        })
        .collect();
    match words.split_last() {
        None => "nothing".to_string(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// `perf-tests clean`: removes the managed containers and networks of runs that are no longer
/// alive, keeps those of live runs, leaves alone (and reports) those whose run cannot be judged
/// from here; with `force`, removes every managed one, naming each. Says what it does on `out`;
/// returns how many were removed.
pub(crate) async fn clean(engine: &Engine, force: bool, out: &mut dyn Write) -> Result<usize> {
    let managed = engine.labelled(&format!("{LABEL_MANAGED}=true")).await?;
    let mut removed = 0;
    let what = if engine.is_swarm() {
        "services, containers, configs and networks"
    } else {
        "containers and networks"
    };
    if force {
        // Services, containers and configs come first in the list, so no network is still in
        // use when it goes.
        for m in &managed {
            writeln!(out, "removing {} {} (run {})", m.kind, m.name, m.run())?;
            removed += usize::from(engine.remove_labelled_item(m).await?);
        }
        writeln!(
            out,
            "removed {removed} {what} (--force: every managed one, whether or \
             not its run is alive)"
        )?;
        return Ok(removed);
    }
    let this_host = &Owner::current().host;
    let mut runs: BTreeMap<(&str, Verdict), Vec<&Managed>> = BTreeMap::new();
    for m in &managed {
        let verdict = judge(&m.labels, this_host, process_start);
        runs.entry((m.run(), verdict)).or_default().push(m);
    }
    for ((run, verdict), items) in &runs {
        match verdict {
            Verdict::Alive(why) => {
                writeln!(out, "keeping {} of run {run}: its {why}", counted(items))?
            }
            Verdict::Unknown(why) => writeln!(
                out,
                "leaving {} of run {run} alone: it {why}; `perf-tests clean --force` removes them",
                counted(items)
            )?,
            Verdict::Dead(why) => {
                writeln!(out, "removing {} of run {run}: its {why}", counted(items))?
            }
        }
    }
    let dead = |kind: &str| {
        runs.iter()
            .filter(|((_, v), _)| matches!(v, Verdict::Dead(_)))
            .flat_map(|(_, items)| items.iter().filter(|m| m.kind == kind))
            .collect::<Vec<_>>()
    };
    for kind in [SERVICE, CONTAINER, CONFIG, NETWORK] {
        for m in dead(kind) {
            removed += usize::from(engine.remove_labelled_item(m).await?);
        }
    }
    writeln!(out, "removed {removed} {what} left by runs no longer alive")?;
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Process 100 started at tick 5000 is the only one on this host.
    fn one_process(pid: u32) -> Option<u64> {
        (pid == 100).then_some(5000)
    }

    fn owned(host: &str, pid: &str, start: Option<&str>) -> HashMap<String, String> {
        let mut l = labels(&[(LABEL_HOST, host), (LABEL_PID, pid), (LABEL_RUN, "r")]);
        if let Some(s) = start {
            l.insert(LABEL_PID_START.to_string(), s.to_string());
        }
        l
    }

    #[test]
    fn a_running_process_with_its_start_time_is_alive() {
        let v = judge(&owned("here", "100", Some("5000")), "here", one_process);
        assert_eq!(
            v,
            Verdict::Alive("process 100 on this host is still running".into())
        );
    }

    #[test]
    fn a_missing_process_is_dead() {
        let v = judge(&owned("here", "101", Some("5000")), "here", one_process);
        assert_eq!(v, Verdict::Dead("process 101 on this host is gone".into()));
    }

    #[test]
    fn a_reused_pid_is_dead() {
        let v = judge(&owned("here", "100", Some("4999")), "here", one_process);
        assert!(
            matches!(&v, Verdict::Dead(why) if why.contains("5000") && why.contains("4999")),
            "{v:?}"
        );
    }

    #[test]
    fn without_a_start_time_a_running_pid_is_kept() {
        let v = judge(&owned("here", "100", None), "here", one_process);
        assert!(matches!(v, Verdict::Alive(_)), "{v:?}");
        let v = judge(&owned("here", "100", Some("soon")), "here", one_process);
        assert!(matches!(v, Verdict::Alive(_)), "{v:?}");
        let v = judge(&owned("here", "101", None), "here", one_process);
        assert!(matches!(v, Verdict::Dead(_)), "{v:?}");
    }

    #[test]
    fn another_hosts_resources_are_not_judged() {
        // Even a pid that is not running here says nothing about the other host.
        let v = judge(&owned("there", "101", Some("5000")), "here", one_process);
        assert!(
            matches!(&v, Verdict::Unknown(why) if why.contains("host there")),
            "{v:?}"
        );
    }

    #[test]
    fn resources_without_owner_labels_are_not_judged() {
        for l in [
            labels(&[(LABEL_RUN, "r"), (LABEL_MANAGED, "true")]),
            labels(&[(LABEL_HOST, "here")]),
            labels(&[(LABEL_HOST, "here"), (LABEL_PID, "x")]),
        ] {
            let v = judge(&l, "here", one_process);
            assert!(matches!(v, Verdict::Unknown(_)), "{l:?}: {v:?}");
        }
    }

    #[test]
    fn field_22_is_read_after_the_command_name() {
        let stat = "4242 (a (weird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 1000000 200 18446744073709551615";
        assert_eq!(start_time_in(stat), Some(987654));
        assert_eq!(start_time_in("4242 (x) S 1"), None);
        assert_eq!(start_time_in("garbage"), None);
    }

    #[test]
    fn this_process_is_alive_by_its_own_labels() {
        let me = Owner::current();
        assert_eq!(me.pid, std::process::id());
        assert!(me.start.is_some(), "/proc/self/stat has a start time");
        let l: HashMap<String, String> = me.labels().into_iter().collect();
        assert!(matches!(
            judge(&l, &me.host, process_start),
            Verdict::Alive(_)
        ));
    }

    #[test]
    fn counts_read_as_words() {
        let m = |kind| Managed {
            kind,
            id: String::new(),
            name: String::new(),
            labels: HashMap::new(),
            stopped: false,
        };
        let (c, n) = (m("container"), m("network"));
        assert_eq!(counted(&[&c]), "1 container");
        assert_eq!(counted(&[&c, &c, &n]), "2 containers and 1 network");
        assert_eq!(counted(&[&n, &n]), "2 networks");
    }
}
