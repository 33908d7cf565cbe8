//! Where a JVM service's time goes during the measured phases: async-profiler (Maven Central's
//! `tools.profiler:async-profiler`, its Linux agent inside the jar) loaded into the running JVM
//! through the JDK's attach mechanism (`jcmd <pid> JVMTI.agent_load`), started when a measured
//! phase starts and stopped when it ends, so no warm-up is in it; one JFR recording per service,
//! phase and repetition. The containers run unprivileged, where the default seccomp profile
//! blocks perf events, so `PROFILE=cpu` runs the agent's timer-based CPU mode (`ctimer`:
//! per-thread CPU time from `timer_create`), and says so.
//!
//! After the run the recordings are turned (with Maven Central's `tools.profiler:jfr-converter`,
//! on this host's Java) into flame graphs, differential ones and a summary
//! (`crate::present::export::profiles`); this module holds what both ends share: the modes, the agent's
//! commands, the tools, the file names, and the reading of collapsed stacks.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::settings::ProfileMode;

/// The converter's filter for `mode`'s samples.
fn converter_flag(mode: ProfileMode) -> &'static str {
    match mode {
        ProfileMode::Cpu => "--cpu",
        ProfileMode::Alloc => "--alloc",
        ProfileMode::Lock => "--lock",
        ProfileMode::Wall => "--wall",
    }
}

/// The profiler's agent, as Maven Central serves it.
pub(crate) const AGENT_ARTIFACT: &str = "tools.profiler:async-profiler:4.1";
/// The recordings' converter (flame graphs, collapsed stacks).
pub(crate) const CONVERTER_ARTIFACT: &str = "tools.profiler:jfr-converter:4.1";
/// Where the agent and its files go in a container.
pub(crate) const DIR: &str = "/tmp/perf-tests-profiler";
/// The agent in a container.
pub(crate) const AGENT: &str = "/tmp/perf-tests-profiler/libasyncProfiler.so";
/// The agent's own messages (warnings and errors) in a container.
pub(crate) const LOG: &str = "/tmp/perf-tests-profiler/log";
/// The JDK tool that loads the agent: where the images built here have it.
pub(crate) const JCMD: &str = "/opt/java/bin/jcmd";

/// The recording of `phase` in a container.
pub(crate) fn recording(phase: &str) -> String {
    format!("{DIR}/{phase}.jfr")
}

/// The command that runs the agent command `command` in the JVM of process 1 (the container's
/// own, as the images built here start it). jcmd's argument parser splits at commas, so the
/// agent's comma-separated options are quoted.
pub(crate) fn jcmd(command: &str) -> Vec<String> {
    let options = format!("\"{command}\"");
    [JCMD, "1", "JVMTI.agent_load", AGENT, &options]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// The agent command that starts recording `phase` in `mode`.
pub(crate) fn start_command(mode: ProfileMode, phase: &str) -> String {
    format!(
        "start,event={},interval=10ms,jfr,file={},log={LOG}",
        mode.event(),
        recording(phase)
    )
}

/// The agent command that stops the recording (and writes it).
pub(crate) fn stop_command() -> String {
    format!("stop,log={LOG}")
}

/// The file names of one scenario's profile of `service` in `phase` under `profiles/`: its
/// flame graph, its differential flame graph, and a repetition's recording.
pub(crate) fn flame_file(scenario: &str, service: &str, phase: &str) -> String {
    format!("{}.{service}.{phase}.html", safe(scenario))
}

pub(crate) fn diff_file(scenario: &str, service: &str, phase: &str) -> String {
    format!("{}.{service}.{phase}.diff.html", safe(scenario))
}

pub(crate) fn recording_file(
    scenario: &str,
    service: &str,
    phase: &str,
    repetition: usize,
) -> String {
    format!("{}.{service}.{phase}.rep{repetition}.jfr", safe(scenario))
}

/// A row label as a file name (a matrix's combination has spaces and brackets).
pub(crate) fn safe(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.=".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// What the run needs on this host to profile and to render profiles.
#[derive(Debug, Clone)]
pub struct Tools {
    /// The agent for the engine's architecture.
    pub agent: PathBuf,
    pub converter: PathBuf,
    /// The Java that runs the converter.
    pub java: PathBuf,
}

/// Resolves the agent's and the converter's jars (with the machine's `mvn`, once; kept under
/// the cache) and takes the agent for `arch` (the engine's, e.g. `x86_64`) out of its jar.
pub fn tools(arch: &str) -> Result<Tools> {
    let platform = match arch {
        "x86_64" | "amd64" => "linux-x64",
        "aarch64" | "arm64" => "linux-arm64",
        other => bail!(
            "PROFILE: async-profiler has no Linux agent for the engine's architecture {other}"
        ),
    };
    let dir = crate::world::images::recipe::cache_dir().join("profiler");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let jar = |artifact: &str| -> Result<PathBuf> {
        let (_, name, version) = artifact.split(':').fold(("", "", ""), |acc, p| match acc {
            ("", "", "") => (p, "", ""),
            (g, "", "") => (g, p, ""),
            (g, n, _) => (g, n, p),
        });
        let path = dir.join(format!("{name}-{version}.jar"));
        if path.is_file() {
            return Ok(path);
        }
        let out = Command::new("mvn")
            .args(["-B", "-q", "-Dstyle.color=never", "dependency:copy"])
            .arg(format!("-Dartifact={artifact}"))
            .arg(format!("-DoutputDirectory={}", dir.display()))
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("PROFILE: cannot run mvn to resolve {artifact}"))?;
        if !out.status.success() || !path.is_file() {
            bail!(
                "PROFILE: resolving {artifact} with mvn failed:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(path)
    };
    let agent_jar = jar(AGENT_ARTIFACT)?;
    let converter = jar(CONVERTER_ARTIFACT)?;
    let agent = dir.join(platform).join("libasyncProfiler.so");
    if !agent.is_file() {
        let bytes = jar_entry(&agent_jar, &format!("{platform}/libasyncProfiler.so"))?;
        std::fs::create_dir_all(agent.parent().expect("a parent"))?;
        std::fs::write(&agent, bytes).with_context(|| format!("writing {}", agent.display()))?;
    }
    let java = std::env::var_os("JAVA_HOME")
        .map(|h| PathBuf::from(h).join("bin/java"))
        .filter(|j| j.is_file())
        .unwrap_or_else(|| PathBuf::from("java"));
    Ok(Tools {
        agent,
        converter,
        java,
    })
}

/// The bytes of the entry `name` of a jar, by busybox's `unzip` (the images' busybox).
fn jar_entry(jar: &Path, name: &str) -> Result<Vec<u8>> {
    let out = Command::new(crate::world::images::maven::BUSYBOX)
        .args(["unzip", "-p"])
        .arg(jar)
        .arg(name)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run busybox unzip on {}", jar.display()))?;
    if !out.status.success() || out.stdout.is_empty() {
        bail!(
            "{} holds no {name}: {}",
            jar.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

/// The converter run on `input` (a recording, or collapsed stacks) into `output` (html or
/// collapsed, by its extension).
pub fn convert(
    tools: &Tools,
    mode: ProfileMode,
    input: &Path,
    output: &Path,
    title: &str,
) -> Result<()> {
    let format = if output.extension().is_some_and(|e| e == "html") {
        "html"
    } else {
        "collapsed"
    };
    run_converter(tools, mode, &[input.to_path_buf()], output, format, title)
}

/// Each of `recordings` as collapsed stacks, in their order, converted by one run of the
/// converter into the directory `scratch` (made and removed here). Given several inputs and one
/// output file the converter writes each over the one before; given a directory, one file each.
pub(crate) fn collapse(
    tools: &Tools,
    mode: ProfileMode,
    recordings: &[PathBuf],
    scratch: &Path,
) -> Result<Vec<String>> {
    std::fs::create_dir_all(scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let read = run_converter(tools, mode, recordings, scratch, "collapsed", "").and_then(|()| {
        recordings
            .iter()
            .map(|f| {
                let name = f.file_stem().unwrap_or_default().to_string_lossy();
                let path = scratch.join(format!("{name}.collapsed"));
                std::fs::read_to_string(&path)
                    .with_context(|| format!("reading {}", path.display()))
            })
            .collect()
    });
    let _ = std::fs::remove_dir_all(scratch);
    read
}

/// The converter run on `inputs` into `output` (a file, or a directory for one file each).
fn run_converter(
    tools: &Tools,
    mode: ProfileMode,
    inputs: &[PathBuf],
    output: &Path,
    format: &str,
    title: &str,
) -> Result<()> {
    let out = Command::new(&tools.java)
        .arg("-jar")
        .arg(&tools.converter)
        .arg(converter_flag(mode))
        .args(["-o", format, "--title", title])
        .args(inputs)
        .arg(output)
        .stdin(Stdio::null())
        .output()
        .with_context(|| {
            format!(
                "cannot run {} -jar {}",
                tools.java.display(),
                tools.converter.display()
            )
        })?;
    if !out.status.success() {
        bail!(
            "converting {} to {format} failed: {}{}",
            inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// The stacks of a collapsed profile (`frame;frame;...;leaf count` per line) with their counts.
fn stacks(collapsed: &str) -> Vec<(&str, u64)> {
    collapsed
        .lines()
        .filter_map(|l| {
            let (stack, n) = l.trim_end().rsplit_once(' ')?;
            Some((stack, n.parse().ok()?))
        })
        .collect()
}

/// Kinds of work a stack may be doing, by the frames it holds (a stack counts once per kind).
const KINDS: [(&str, &str); 4] = [
    (
        "crypto",
        r"javax/crypto/|com/sun/crypto/provider/|sun/security/(provider|ssl)/|(?i:aescrypt|ghash|countermode)",
    ),
    (
        "garbage collection",
        r"(^|;)(G1[A-Za-z]|WorkerThread::run|GCTaskThread|ConcurrentGCThread|VM_G1|CollectedHeap)",
    ),
    (
        "socket reads and writes",
        r"sun/nio/ch/(SocketDispatcher|IOUtil|SocketChannelImpl)\.(read|write)|io/netty/channel/(unix/(FileDescriptor|Socket)|epoll/Native)\.(read|write|send|recv)|(^|;)(__)?(libc_)?(write|writev|read|readv|send|recv|sendmsg|recvmsg)(;|$)",
    ),
    // The JVM's compiler threads: still compiling the path's hot code in the measured phase.
    (
        "JIT compilation",
        r"CompileBroker::|C2Compiler::|Compilation::compile",
    ),
];

/// What a profile says in a few lines.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Summary {
    pub samples: u64,
    /// Frames by the samples in which they were the leaf (self time), most first.
    pub top: Vec<(String, u64)>,
    /// Each kind of [`KINDS`] with the share of samples whose stack does it.
    pub shares: Vec<(&'static str, f64)>,
}

/// The summary of a collapsed profile.
pub(crate) fn summarize(collapsed: &str) -> Summary {
    let stacks = stacks(collapsed);
    let samples: u64 = stacks.iter().map(|(_, n)| n).sum();
    let mut leaves: BTreeMap<&str, u64> = BTreeMap::new();
    for (stack, n) in &stacks {
        let leaf = stack.rsplit(';').next().unwrap_or(stack);
        *leaves.entry(leaf).or_default() += n;
    }
    let mut top: Vec<(String, u64)> = leaves
        .into_iter()
        .map(|(f, n)| (f.to_string(), n))
        .collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let shares = KINDS
        .iter()
        .map(|(kind, pattern)| {
            let re = regex::Regex::new(pattern).expect("a valid pattern");
            let n: u64 = stacks
                .iter()
                .filter(|(s, _)| re.is_match(s))
                .map(|(_, n)| n)
                .sum();
            (*kind, share(n, samples))
        })
        .collect();
    Summary {
        samples,
        top,
        shares,
    }
}

/// Collapsed profiles added together, each stack's counts summed: one profile over several
/// recordings.
pub(crate) fn merge(profiles: &[String]) -> String {
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for p in profiles {
        for (stack, n) in stacks(p) {
            *counts.entry(stack).or_default() += n;
        }
    }
    let mut out = String::new();
    for (stack, n) in counts {
        let _ = writeln!(out, "{stack} {n}");
    }
    out
}

pub(crate) fn share(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        n as f64 / of as f64
    }
}

/// What `new` does more of than `base`, each profile's stacks as shares of its own samples: a
/// collapsed profile of the growth alone (each stack's gain, in millionths), for a flame graph
/// of what was added; and the frames whose self share grew most, with both shares.
pub(crate) fn difference(base: &str, new: &str) -> (String, Vec<(String, f64, f64)>) {
    let shares = |text: &str| -> BTreeMap<String, f64> {
        let s = stacks(text);
        let total: u64 = s.iter().map(|(_, n)| n).sum();
        let mut m = BTreeMap::new();
        for (stack, n) in s {
            *m.entry(stack.to_string()).or_default() += share(n, total);
        }
        m
    };
    let (b, n) = (shares(base), shares(new));
    let mut grown = String::new();
    for (stack, v) in &n {
        let gain = v - b.get(stack).copied().unwrap_or(0.0);
        let millionths = (gain * 1e6).round() as i64;
        if millionths > 0 {
            let _ = writeln!(grown, "{stack} {millionths}");
        }
    }
    let leaf_shares = |m: &BTreeMap<String, f64>| -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for (stack, v) in m {
            let leaf = stack.rsplit(';').next().unwrap_or(stack).to_string();
            *out.entry(leaf).or_default() += v;
        }
        out
    };
    let (bl, nl) = (leaf_shares(&b), leaf_shares(&n));
    let mut frames: Vec<(String, f64, f64)> = nl
        .iter()
        .map(|(f, v)| (f.clone(), bl.get(f).copied().unwrap_or(0.0), *v))
        .filter(|(_, b, n)| n > b)
        .collect();
    frames.sort_by(|x, y| (y.2 - y.1).total_cmp(&(x.2 - x.1)));
    frames.truncate(15);
    (grown, frames)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "\
java/lang/Thread.run;io/netty/channel/nio/NioEventLoop.run;sun/nio/ch/SocketDispatcher.write 60
java/lang/Thread.run;io/kroxylicious/Filter.onRequest 40
";
    const NEW: &str = "\
java/lang/Thread.run;io/netty/channel/nio/NioEventLoop.run;sun/nio/ch/SocketDispatcher.write 30
java/lang/Thread.run;io/kroxylicious/Filter.onRequest 20
java/lang/Thread.run;io/kroxylicious/Encrypt.apply;com/sun/crypto/provider/GHASH.processBlocks 40
thread_native_entry;Thread::call_run;WorkerThread::run;G1EvacuateRegionsTask::work 10
";
    const JIT: &str = "thread_native_entry;JavaThread::thread_main_inner;CompileBroker::compiler_thread_loop;C2Compiler::compile_method;PhaseChaitin::Split 5\n";

    #[test]
    fn a_summary_has_the_self_time_and_the_shares_of_each_kind() {
        let s = summarize(NEW);
        assert_eq!(s.samples, 100);
        assert_eq!(
            s.top[0],
            ("com/sun/crypto/provider/GHASH.processBlocks".into(), 40)
        );
        let share = |k: &str| s.shares.iter().find(|(n, _)| *n == k).unwrap().1;
        assert_eq!(share("crypto"), 0.4);
        assert_eq!(share("garbage collection"), 0.1);
        assert_eq!(share("socket reads and writes"), 0.3);
        assert_eq!(share("JIT compilation"), 0.0);
        let with_jit = summarize(&format!("{NEW}{JIT}"));
        let jit = with_jit
            .shares
            .iter()
            .find(|(n, _)| *n == "JIT compilation")
            .unwrap()
            .1;
        assert!((jit - 5.0 / 105.0).abs() < 1e-12);
        assert_eq!(summarize("").samples, 0);
    }

    #[test]
    fn merged_profiles_hold_every_recordings_samples() {
        let merged = merge(&[BASE.to_string(), NEW.to_string(), JIT.to_string()]);
        let s = summarize(&merged);
        assert_eq!(
            s.samples,
            summarize(BASE).samples + summarize(NEW).samples + summarize(JIT).samples
        );
        // A stack in two recordings is one line with both counts.
        assert!(merged.contains("java/lang/Thread.run;io/kroxylicious/Filter.onRequest 60\n"));
        assert_eq!(merge(&[]), "");
    }

    #[test]
    fn the_difference_is_what_the_new_profile_does_more_of() {
        let (grown, frames) = difference(BASE, NEW);
        // Only the stacks that gained share: the encryption (40%) and the GC (10%).
        let lines: Vec<&str> = grown.lines().collect();
        assert_eq!(lines.len(), 2, "{grown}");
        assert!(grown.contains("GHASH.processBlocks 400000"), "{grown}");
        assert!(
            grown.contains("G1EvacuateRegionsTask::work 100000"),
            "{grown}"
        );
        assert_eq!(frames[0].0, "com/sun/crypto/provider/GHASH.processBlocks");
        assert_eq!((frames[0].1, frames[0].2), (0.0, 0.4));
        assert!(frames.iter().all(|(_, b, n)| n > b));
    }

    #[test]
    fn the_agents_commands_and_files() {
        assert_eq!(
            start_command(ProfileMode::Cpu, "produce"),
            "start,event=ctimer,interval=10ms,jfr,file=/tmp/perf-tests-profiler/produce.jfr,log=/tmp/perf-tests-profiler/log"
        );
        assert_eq!(
            jcmd("stop,log=x"),
            [JCMD, "1", "JVMTI.agent_load", AGENT, "\"stop,log=x\""]
        );
        assert_eq!(
            recording_file("04-x [RECORD_SIZE=100]", "proxy", "produce", 2),
            "04-x__RECORD_SIZE=100_.proxy.produce.rep2.jfr"
        );
    }
}
