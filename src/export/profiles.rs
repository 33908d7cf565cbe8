//! `profiles/`: a run's recordings (see `crate::profile`) turned into an HTML flame graph per
//! scenario, service and phase over its repetitions, a differential flame graph of each against
//! the first scenario profiled (what a path adds to the one before it, e.g. 04's encryption over
//! 02's plain proxy), and `summary.txt`: the top frames by self time and the shares of crypto,
//! garbage collection, JIT compilation and socket reads and writes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::model::ScenarioResult;
use crate::profile::{
    convert, diff_file, difference, flame_file, merge, safe, share, summarize, Mode, Tools,
};

/// One scenario's profile of one service in one phase, over its repetitions.
struct Profile<'a> {
    scenario: String,
    service: &'a str,
    phase: &'a str,
    mode: Mode,
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
pub fn render(dir: &Path, results: &[ScenarioResult], tools: &Tools) -> Result<()> {
    let all = profiles(dir, results);
    let mut text = String::from(
        "Profiles of the measured phases (async-profiler; shares of each profile's samples)\n",
    );
    let mut collapsed: Vec<String> = Vec::new();
    for p in &all {
        let title = format!(
            "{} {} {} ({}: {})",
            p.scenario,
            p.service,
            p.phase,
            p.mode.name(),
            p.event
        );
        let each = collapsed_each(tools, dir, p, &title)?;
        let c = merge(&each);
        let stacks_file = dir.join(format!(
            ".{}.{}.{}.collapsed",
            safe(&p.scenario),
            p.service,
            p.phase
        ));
        std::fs::write(&stacks_file, &c)
            .with_context(|| format!("writing {}", stacks_file.display()))?;
        let flame = dir.join(flame_file(&p.scenario, p.service, p.phase));
        let converted = convert_collapsed(tools, &stacks_file, &flame, &title);
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
        collapsed.push(c);
    }
    // Against the first scenario profiled: the same phase, and the same service where it ran
    // one by that name, else its first profiled service (each proxy scenario's own proxy).
    if let Some(first) = all.first() {
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
            let grown_file = dir.join(format!(
                ".{}.{}.{}.grown",
                safe(&p.scenario),
                p.service,
                p.phase
            ));
            std::fs::write(&grown_file, &grown)?;
            let diff = dir.join(diff_file(&p.scenario, p.service, p.phase));
            let title = format!(
                "What {} {} adds to {} {} in {} (gain in share of samples)",
                p.scenario, p.service, b.scenario, b.service, p.phase
            );
            let converted = convert_collapsed(tools, &grown_file, &diff, &title);
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
    }
    std::fs::write(dir.join("summary.txt"), text).context("writing profiles/summary.txt")
}

/// Each kind's share of a summary's samples, as the summary prints it.
fn kinds_of(s: &crate::profile::Summary) -> Vec<String> {
    s.shares
        .iter()
        .map(|(k, v)| format!("{k} {:.1}%", v * 100.0))
        .collect()
}

/// Each recording of `p` as collapsed stacks, in the order recorded. The converter, given
/// several recordings and one output file, writes each over the one before; given a directory,
/// it writes one file per recording there.
fn collapsed_each(tools: &Tools, dir: &Path, p: &Profile, title: &str) -> Result<Vec<String>> {
    let each = dir.join(format!(
        ".{}.{}.{}.each.collapsed",
        safe(&p.scenario),
        p.service,
        p.phase
    ));
    std::fs::create_dir_all(&each).with_context(|| format!("creating {}", each.display()))?;
    let read = convert(tools, p.mode, &p.files, &each, title).and_then(|()| {
        p.files
            .iter()
            .map(|f| {
                let name = f.file_stem().unwrap_or_default().to_string_lossy();
                let path = each.join(format!("{name}.collapsed"));
                std::fs::read_to_string(&path)
                    .with_context(|| format!("reading {}", path.display()))
            })
            .collect()
    });
    let _ = std::fs::remove_dir_all(&each);
    read
}

/// A collapsed profile as an HTML flame graph.
fn convert_collapsed(tools: &Tools, input: &Path, output: &Path, title: &str) -> Result<()> {
    let out = Command::new(&tools.java)
        .arg("-jar")
        .arg(&tools.converter)
        .args(["-o", "html", "--title", title])
        .arg(input)
        .arg(output)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", tools.java.display()))?;
    if !out.status.success() {
        bail!(
            "converting {} to a flame graph failed: {}{}",
            input.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}
