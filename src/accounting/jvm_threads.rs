//! A JVM's CPU by kind of thread over a measured phase: its JIT compilers, its garbage
//! collector's threads, and the rest (the application's own), from the kernel's accounting of
//! each thread (`/proc/<pid>/task/<tid>/stat`) read in the container at the phase's edges, where
//! the cost counters are read. A JVM started for the run keeps compiling its hot paths for a
//! while under load, and that work is part of its container's CPU: the compilers' share of a
//! phase says how much of the phase's cost was the JIT at work rather than the path's steady
//! cost, the first suspect when a path's cost spreads over repetitions at a fixed rate.

use serde::{Deserialize, Serialize};

/// Clock ticks per second of `utime` and `stime` in `/proc` (`USER_HZ`, 100 on Linux).
const TICKS_PER_S: f64 = 100.0;

/// What a thread does for its JVM, by the name HotSpot gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A JIT compiler (`C1 CompilerThread0`, `C2 CompilerThread1`, `JVMCI CompilerThread0`).
    Jit,
    /// A garbage collector's worker or concurrent thread (G1, Parallel, ZGC, Shenandoah).
    Gc,
    /// Everything else: the application's threads, the VM's own.
    Other,
}

/// One thread's CPU time so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Thread {
    pub tid: u32,
    pub kind: Kind,
    /// User and system time together, in clock ticks.
    pub ticks: u64,
}

/// The threads of `stat` (the stat lines `crate::accounting::counters::SCRIPT` printed);
/// `None` when no thread of a HotSpot JVM is among them (its `VM Thread`), so a container that
/// is not a JVM has no figures.
pub(crate) fn threads(stat: &str) -> Option<Vec<Thread>> {
    let mut jvm = false;
    let threads = stat
        .lines()
        .filter_map(|line| {
            // `tid (name) state ppid ...`: the name may hold spaces and parentheses, so it ends
            // at the line's last `)`.
            let (head, tail) = line.rsplit_once(')')?;
            let (tid, name) = head.split_once(" (")?;
            jvm |= name == "VM Thread";
            let fields: Vec<&str> = tail.split_whitespace().collect();
            // After the name: state, ppid, pgrp, session, tty, tpgid, flags, minflt, cminflt,
            // majflt, cmajflt, utime, stime.
            let utime: u64 = fields.get(11)?.parse().ok()?;
            let stime: u64 = fields.get(12)?.parse().ok()?;
            Some(Thread {
                tid: tid.trim().parse().ok()?,
                kind: kind(name),
                ticks: utime + stime,
            })
        })
        .collect();
    jvm.then_some(threads)
}

/// The kind of a thread named `name` (the kernel keeps the first 15 bytes of a name).
fn kind(name: &str) -> Kind {
    const JIT: [&str; 3] = ["C1 CompilerThre", "C2 CompilerThre", "JVMCI CompilerT"];
    const GC: [&str; 7] = [
        "GC Thread#",
        "G1 ",
        "ZWorker",
        "ZDriver",
        "ZDirector",
        "Shenandoah",
        "VM Periodic GC",
    ];
    if JIT.iter().any(|p| name.starts_with(p)) {
        Kind::Jit
    } else if GC.iter().any(|p| name.starts_with(p)) {
        Kind::Gc
    } else {
        Kind::Other
    }
}

/// A JVM's CPU seconds over one phase by kind of thread; the rest of its container's CPU (the
/// cost counter's, which also holds threads that ended within the phase) is the application's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ThreadCpu {
    /// The JIT compilers' CPU seconds.
    pub jit_s: f64,
    /// The garbage collector's threads' CPU seconds.
    pub gc_s: f64,
}

impl ThreadCpu {
    /// What each thread of `end` used since `start`; a thread new since then counts from zero.
    /// HotSpot starts and ends compiler threads as its queue of work grows and shrinks: one that
    /// ended within the phase is missing at its end, so the compilers' figure is a lower bound.
    pub(crate) fn between(start: &[Thread], end: &[Thread]) -> ThreadCpu {
        let mut cpu = ThreadCpu::default();
        for t in end {
            let before = start
                .iter()
                .find(|s| s.tid == t.tid && s.kind == t.kind)
                .map_or(0, |s| s.ticks);
            let s = t.ticks.saturating_sub(before) as f64 / TICKS_PER_S;
            match t.kind {
                Kind::Jit => cpu.jit_s += s,
                Kind::Gc => cpu.gc_s += s,
                Kind::Other => {}
            }
        }
        cpu
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as Linux prints them for a JDK 17 proxy, cut after `stime` (fields 14 and 15).
    const STAT: &str = "\
1 (java) S 0 1 1 0 -1 4194560 2571 0 0 0 3 1
12 (VM Thread) S 0 1 1 0 -1 1077936192 2 0 0 0 40 2
15 (C2 CompilerThre) S 0 1 1 0 -1 1077936192 7 0 0 0 900 25
16 (C1 CompilerThre) S 0 1 1 0 -1 1077936192 3 0 0 0 120 4
9 (GC Thread#0) S 0 1 1 0 -1 1077936192 0 0 0 0 30 1
10 (G1 Conc#0) S 0 1 1 0 -1 1077936192 0 0 0 0 5 0
40 (nioEventLoopGroup-5-1) R 0 1 1 0 -1 1077936192 9 0 0 0 1500 300
41 (odd) name) R 0 1 1 0 -1 1077936192 9 0 0 0 7 3
";

    #[test]
    fn threads_are_read_by_kind_from_their_stat_lines() {
        let t = threads(STAT).unwrap();
        assert_eq!(t.len(), 8);
        let of = |tid| t.iter().find(|x| x.tid == tid).copied().unwrap();
        assert_eq!(of(15).kind, Kind::Jit);
        assert_eq!(of(15).ticks, 925);
        assert_eq!(of(16).kind, Kind::Jit);
        assert_eq!((of(9).kind, of(10).kind), (Kind::Gc, Kind::Gc));
        assert_eq!(of(40).kind, Kind::Other);
        // A name with a parenthesis of its own ends at the line's last one.
        assert_eq!(of(41).ticks, 10);
    }

    #[test]
    fn a_container_without_a_jvm_has_no_threads_figures() {
        assert_eq!(threads("1 (sh) S 0 1 1 0 -1 0 0 0 0 0 1 1\n"), None);
        assert_eq!(threads(""), None);
    }

    #[test]
    fn a_phase_counts_what_each_thread_used_and_new_threads_from_zero() {
        let start = threads(STAT).unwrap();
        let mut end = start.clone();
        for t in &mut end {
            t.ticks += match t.tid {
                15 => 300,
                9 => 20,
                40 => 1000,
                _ => 0,
            };
        }
        // A compiler thread started within the phase; tid 16 ended (its time is lost).
        end.retain(|t| t.tid != 16);
        end.push(Thread {
            tid: 77,
            kind: Kind::Jit,
            ticks: 50,
        });
        let cpu = ThreadCpu::between(&start, &end);
        assert!((cpu.jit_s - 3.5).abs() < 1e-9, "{cpu:?}");
        assert!((cpu.gc_s - 0.2).abs() < 1e-9, "{cpu:?}");
    }
}
