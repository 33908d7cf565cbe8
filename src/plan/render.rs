//! The plan as `--dry-run` prints it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::estimate::{ASSUMED_MIB_S, ASSUMED_REC_S, ASSUMED_SERVICES_S};
use super::{ImageSource, Plan, PlannedScenario, RunPlan};
use crate::scenario::Step;
use crate::settings::matrix;
use crate::settings::Settings;

impl RunPlan {
    /// `--dry-run`: the first combination's plan, then the matrix, every image the other
    /// combinations add, and the estimate.
    pub(crate) fn render(&self) -> String {
        let first = &self.cells[0];
        let mut out = first.plan.render(&first.settings);
        if !self.axes.is_empty() {
            let axes: Vec<String> = self
                .axes
                .iter()
                .map(|a| format!("{} ({})", a.var, a.values.join(", ")))
                .collect();
            let _ = writeln!(
                out,
                "Matrix: {} combinations of {}, every scenario measured at each, interleaved \
                 like repetitions (the settings above are the first combination's):",
                self.cells.len(),
                axes.join(" x ")
            );
            for (i, c) in self.cells.iter().enumerate() {
                let _ = writeln!(out, "  {}. {}", i + 1, matrix::label(&c.combination));
            }
            let known: BTreeSet<&str> =
                first.plan.images.iter().map(|i| i.image.as_str()).collect();
            let more: BTreeSet<&str> = self
                .cells
                .iter()
                .flat_map(|c| c.plan.images.iter().map(|i| i.image.as_str()))
                .filter(|i| !known.contains(i))
                .collect();
            for image in more {
                let _ = writeln!(out, "  also image {image}");
            }
        }
        if self.sweep {
            let _ = writeln!(
                out,
                "Sweep: each scenario's THROUGHPUT rises through the rates above in order and \
                 stops at the first it does not sustain (the producer below 95% of it{}); the \
                 estimate assumes every rate is measured",
                match first.settings.p99_limit_ms {
                    Some(l) => format!(", or its p99 over P99_LIMIT_MS={l}"),
                    None => String::new(),
                }
            );
        }
        let minutes = self.estimate_s() / 60.0;
        let phases = first
            .plan
            .scenarios
            .iter()
            .map(|p| p.phases(&first.settings));
        let paired_phases = match phases.max() {
            Some(n) if n > 1 => format!(", each paired one's in PAIR_PHASES={n} phases"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "Estimated run time: about {} ({} measurements: {} scenarios x {} combinations x \
             REPEAT={}{}; assuming {} rec/s and {} MiB/s each way, {} s to start and stop a \
             scenario's services, image builds not included; a previous run's tables show this \
             machine's rates)",
            if minutes < 1.5 {
                format!("{:.0} s", minutes * 60.0)
            } else {
                format!("{minutes:.0} min")
            },
            self.measurements(),
            first.plan.scenarios.len(),
            self.cells.len(),
            first.settings.repeat,
            paired_phases,
            ASSUMED_REC_S,
            ASSUMED_MIB_S,
            ASSUMED_SERVICES_S
        );
        out
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "(none)".to_string()
    } else {
        items.join(", ")
    }
}

fn map(items: &BTreeMap<String, String>, sep: &str) -> String {
    if items.is_empty() {
        "(none)".to_string()
    } else {
        items
            .iter()
            .map(|(k, v)| format!("{k}{sep}{v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn steps(out: &mut String, key: &str, steps: &[Step]) {
    if steps.is_empty() {
        let _ = writeln!(out, "    {key}: (none)");
        return;
    }
    let _ = writeln!(out, "    {key}:");
    for step in steps {
        let _ = writeln!(out, "      - {step}");
    }
}

/// One selected scenario of the plan: its files, services, endpoint, steps, pairing and path
/// check.
fn render_scenario(out: &mut String, p: &PlannedScenario, settings: &Settings) {
    let s = &p.scenario;
    let _ = writeln!(out, "Scenario {}: {}", s.name, s.description);
    let compose: Vec<String> = s.compose.iter().map(|p| p.display().to_string()).collect();
    let _ = writeln!(out, "    compose: {}", list(&compose));
    let _ = writeln!(out, "    services: {}", list(&s.services));
    let _ = writeln!(
        out,
        "    run-wide services: {}",
        if s.own_broker {
            "not used (own broker)"
        } else {
            "used"
        }
    );
    let _ = writeln!(out, "    bootstrap: {}", s.bootstrap);
    let _ = writeln!(out, "    topic: {}", p.topic);
    let _ = writeln!(out, "    ready: {}", map(&s.ready, " at "));
    let _ = writeln!(out, "    client: {}", map(&s.client, "="));
    if let Some(tls) = &s.tls {
        let _ = writeln!(out, "    tls hosts: {}", list(&tls.hosts));
    }
    steps(out, "setup", &s.setup);
    steps(out, "teardown", &s.teardown);
    if let Some(planned) = &p.pair {
        let pair = &planned.pair;
        let topics: Vec<String> = planned
            .topics
            .iter()
            .map(|(a, b)| format!("{a} / {b}"))
            .collect();
        let _ = writeln!(
            out,
            "    paired: side A {} at {}, side B {} at {} on network {}, in the same \
                 phases, {} to each bring-up (PAIR_PHASES), on topics {}",
            list(&pair.a),
            s.bootstrap,
            list(&pair.b),
            pair.bootstrap,
            pair.network,
            p.phases(settings),
            topics.join(", ")
        );
        if planned.alike {
            let _ = writeln!(
                out,
                "    side B is side A as it is: an A/A comparison (no difference is \
                     expected)"
            );
        }
        steps(out, "side B's setup", &planned.setup);
        steps(out, "side B's teardown", &planned.teardown);
    }
    if let Some(e) = &s.expect {
        let _ = writeln!(
            out,
            "    path check: broker holds {}, consumer receives {} (read straight from {})",
            e.broker.name(),
            e.consumer.name(),
            p.direct
        );
    }
}

impl Plan {
    /// Human-readable plan for `run --dry-run`.
    pub(crate) fn render(&self, settings: &Settings) -> String {
        let mut out = String::new();
        let names: Vec<String> = self
            .scenarios
            .iter()
            .map(|p| p.scenario.name.clone())
            .collect();
        let _ = writeln!(
            out,
            "Suite: {} ({})",
            self.suite.dir.display(),
            self.suite.description
        );
        let test = match (settings.test.is_empty(), &self.sides) {
            (true, Some(_)) => "TEST unset: every scenario with services of its own".to_string(),
            _ => format!("TEST={}", settings.test),
        };
        let _ = writeln!(out, "Selected scenarios ({test}): {}", list(&names));
        if let Some(sides) = &self.sides {
            let _ = writeln!(
                out,
                "Paired (perf-tests ab): each scenario's services are side A ({}); side B is them \
                 again, named <service>-b on twin networks (<network>-b) where they answer to \
                 side A's names ({})",
                sides.a.describe(),
                sides.b.describe()
            );
        }
        let _ = writeln!(out, "Settings:");
        for (k, v) in settings.variables() {
            let _ = writeln!(out, "  {k}={v}");
        }
        self.render_run_wide(&mut out);
        for p in &self.scenarios {
            render_scenario(&mut out, p, settings);
        }
        self.render_images(&mut out);
        self.render_services(&mut out);
        out
    }

    /// The suite's run-wide part: its Compose files, services, endpoint and image recipes.
    fn render_run_wide(&self, out: &mut String) {
        let _ = writeln!(out, "Run-wide:");
        let compose: Vec<String> = self
            .suite
            .compose
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let _ = writeln!(out, "  compose: {}", list(&compose));
        let _ = writeln!(out, "  services: {}", list(&self.suite.services));
        let _ = writeln!(out, "  bootstrap: {}", self.suite.bootstrap);
        let _ = writeln!(out, "  ready: {}", map(&self.suite.ready, " at "));
        let _ = writeln!(out, "  client: {}", map(&self.suite.client, "="));
        let images: Vec<String> = self.suite.images.keys().cloned().collect();
        let _ = writeln!(out, "  image recipes: {}", list(&images));
    }

    /// Every image the run uses and how it is had.
    fn render_images(&self, out: &mut String) {
        let _ = writeln!(out, "Images:");
        for i in &self.images {
            let how = match &i.source {
                ImageSource::Recipe(r) => format!("built here: {}", r.describe()),
                ImageSource::Pull { chosen_by } => {
                    format!("from the engine or pulled, {chosen_by}")
                }
            };
            let _ = writeln!(out, "  - {}: {how}", i.image);
        }
    }

    /// The Compose side: every service the run would start, its image and command.
    fn render_services(&self, out: &mut String) {
        let _ = writeln!(out, "Services (resolved from the Compose files):");
        for name in &self.services {
            let s = &self.project.services[name];
            let scope = if self.run_wide.contains(name) {
                "run-wide".to_string()
            } else {
                let users: Vec<&str> = self
                    .scenarios
                    .iter()
                    .filter(|p| p.closure.contains(name))
                    .map(|p| p.scenario.name.as_str())
                    .collect();
                users.join(", ")
            };
            let _ = writeln!(out, "  {name} [{scope}]\n    image: {}", s.image);
            if let Some(cmd) = &s.command {
                let _ = writeln!(out, "    command: {}", cmd.join(" "));
            }
            let aliases: Vec<&str> = s.networks.values().flatten().map(String::as_str).collect();
            if !aliases.is_empty() {
                let _ = writeln!(out, "    aliases: {}", aliases.join(", "));
            }
            for m in &s.mounts {
                let ro = if m.read_only { " (read-only)" } else { "" };
                let _ = writeln!(out, "    mount: {} -> {}{ro}", m.source.display(), m.target);
            }
            if !s.depends_on.is_empty() {
                let deps: Vec<String> = s
                    .depends_on
                    .iter()
                    .map(|(d, c)| format!("{d} ({c:?})"))
                    .collect();
                let _ = writeln!(out, "    depends on: {}", deps.join(", "));
            }
        }
    }
}
