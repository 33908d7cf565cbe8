//! `profiles/`: a run's recordings (see `crate::world::profile`) turned into an HTML flame graph per
//! scenario, service and phase over its repetitions, a differential flame graph of each against
//! the first scenario profiled (what a path adds to the one before it, e.g. 04's encryption over
//! 02's plain proxy), and `summary.txt`: the top frames by self time and the shares of crypto,
//! garbage collection, JIT compilation and socket reads and writes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::model::ScenarioResult;
use crate::settings::ProfileMode;
use crate::world::profile::{
    collapse, convert, diff_file, difference, flame_file, merge, safe, share, summarize, Tools,
};

/// One scenario's profile of one service in one phase, over its repetitions.
struct Profile<'a> {
    scenario: String,
    service: &'a str,
    phase: &'a str,
    mode: ProfileMode,
    event: &'a str,
    files: Vec<PathBuf>,
}

/// Every profile of the results, in their order, its repetitions' recordings together.
fn profiles<'a>(dir: &Path, results: &'a [ScenarioResult]) -> Vec<Profile<'a>> {
    let mut out: Vec<Profile<'a>> = Vec::new();
    for r in results {
        let scenario = r.label();
        for rec in r.repetitions.iter().flat_map(|m| &m.profiles) {
            let file = dir.join(&rec.file);
            match out.iter_mut().find(|p| {
                p.scenario == scenario && p.service == rec.service && p.phase == rec.phase
            }) {
                Some(p) => p.files.push(file),
                None => out.push(Profile {
                    scenario: scenario.clone(),
                    service: &rec.service,
                    phase: &rec.phase,
                    mode: rec.mode,
                    event: &rec.event,
                    files: vec![file],
                }),
            }
        }
    }
    out
}

/// Makes the flame graphs, the differential ones and `summary.txt` in `dir` (the run's
/// `profiles/`, holding the recordings the results name).
pub(crate) fn render(dir: &Path, results: &[ScenarioResult], tools: &Tools) -> Result<()> {
    let all = profiles(dir, results);
    let mut text = String::from(
        "Profiles of the measured phases (async-profiler; shares of each profile's samples)\n",
    );
    let mut collapsed: Vec<String> = Vec::new();
    for p in &all {
        collapsed.push(flame_graph(dir, p, tools, &mut text)?);
    }
    differential(dir, &all, &collapsed, tools, &mut text)?;
    std::fs::write(dir.join("summary.txt"), text).context("writing profiles/summary.txt")
}

/// Profile `p`'s flame graph over its repetitions, and its summary added to `text`; returns
/// its collapsed stacks.
fn flame_graph(dir: &Path, p: &Profile, tools: &Tools, text: &mut String) -> Result<String> {
    let title = format!(
        "{} {} {} ({}: {})",
        p.scenario,
        p.service,
        p.phase,
        p.mode.name(),
        p.event
    );
    let each = collapse(tools, p.mode, &p.files, &scratch(dir, p, "each"))?;
    let c = merge(&each);
    let stacks_file = scratch(dir, p, "collapsed");
    std::fs::write(&stacks_file, &c)
        .with_context(|| format!("writing {}", stacks_file.display()))?;
    let flame = dir.join(flame_file(&p.scenario, p.service, p.phase));
    let converted = convert(tools, p.mode, &stacks_file, &flame, &title);
    let _ = std::fs::remove_file(&stacks_file);
    converted?;
    let s = summarize(&c);
    let _ = writeln!(
        text,
        "\n{} / {} / {} ({}, event {}): {} samples over {} recording(s)",
        p.scenario,
        p.service,
        p.phase,
        p.mode.name(),
        p.event,
        s.samples,
        p.files.len()
    );
    let _ = writeln!(text, "  {}", kinds_of(&s).join(", "));
    // Each repetition's own shares: where a phase's cost moved between repetitions (a JIT
    // compiler still at work in some, a collection in others).
    if each.len() > 1 {
        for (n, c) in each.iter().enumerate() {
            let r = summarize(c);
            let _ = writeln!(
                text,
                "    repetition {}: {} samples, {}",
                n + 1,
                r.samples,
                kinds_of(&r).join(", ")
            );
        }
    }
    let _ = writeln!(text, "  top frames by self time:");
    for (frame, n) in s.top.iter().take(15) {
        let _ = writeln!(text, "    {:5.1}%  {frame}", share(*n, s.samples) * 100.0);
    }
    Ok(c)
}

/// Each profile's differential flame graph against the first scenario profiled (the same phase,
/// and the same service where it ran one by that name, else its first profiled service: each
/// proxy scenario's own proxy), and the frames that grew most added to `text`.
fn differential(
    dir: &Path,
    all: &[Profile],
    collapsed: &[String],
    tools: &Tools,
    text: &mut String,
) -> Result<()> {
    let Some(first) = all.first() else {
        return Ok(());
    };
    for (i, p) in all.iter().enumerate().skip(1) {
        if p.scenario == first.scenario {
            continue;
        }
        let same_phase = |q: &&Profile| q.scenario == first.scenario && q.phase == p.phase;
        let Some(j) = all
            .iter()
            .position(|q| same_phase(&q) && q.service == p.service)
            .or_else(|| all.iter().position(|q| same_phase(&q)))
        else {
            continue;
        };
        let b = &all[j];
        let (grown, frames) = difference(&collapsed[j], &collapsed[i]);
        let grown_file = scratch(dir, p, "grown");
        std::fs::write(&grown_file, &grown)?;
        let diff = dir.join(diff_file(&p.scenario, p.service, p.phase));
        let title = format!(
            "What {} {} adds to {} {} in {} (gain in share of samples)",
            p.scenario, p.service, b.scenario, b.service, p.phase
        );
        let converted = convert(tools, p.mode, &grown_file, &diff, &title);
        let _ = std::fs::remove_file(&grown_file);
        converted?;
        let _ = writeln!(
            text,
            "\n{} / {} / {} against {} / {}: the frames whose self share grew most",
            p.scenario, p.service, p.phase, b.scenario, b.service
        );
        for (frame, before, after) in frames {
            let _ = writeln!(
                text,
                "  {:+6.1}%  {frame}  ({:.1}% -> {:.1}%)",
                (after - before) * 100.0,
                before * 100.0,
                after * 100.0
            );
        }
    }
    Ok(())
}

/// Each kind's share of a summary's samples, as the summary prints it.
fn kinds_of(s: &crate::world::profile::Summary) -> Vec<String> {
    s.shares
        .iter()
        .map(|(k, v)| format!("{k} {:.1}%", v * 100.0))
        .collect()
}

/// A working file (or directory) of `p`'s in `dir`, hidden and removed once used.
fn scratch(dir: &Path, p: &Profile, what: &str) -> PathBuf {
    dir.join(format!(
        ".{}.{}.{}.{what}",
        safe(&p.scenario),
        p.service,
        p.phase
    ))
}
