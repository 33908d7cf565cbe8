//! The plan: which scenarios run, in which order, with every variable resolved.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Result};

use crate::scenario::{self, Scenario, Step, Suite};
use crate::settings::Settings;

/// Topic names are this prefix plus the scenario name.
pub const TOPIC_PREFIX: &str = "perf-tests-";

/// Everything a run will do, resolved before anything is started.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The suite the scenarios come from.
    pub suite: Suite,
    /// Selected scenarios, in run order.
    pub scenarios: Vec<PlannedScenario>,
}

/// One selected scenario with its variables substituted.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedScenario {
    /// The scenario as written (steps still hold `${...}` references).
    pub scenario: Scenario,
    /// Topic the workload produces to and consumes from.
    pub topic: String,
    /// Setup steps with variables resolved.
    pub setup: Vec<Step>,
    /// Teardown steps with variables resolved.
    pub teardown: Vec<Step>,
    /// Where the path check reads records straight from: the suite's broker (`bootstrap`).
    pub direct: String,
}

/// Discovers the suite, selects scenarios by `TEST` and resolves them.
pub fn plan(settings: &Settings) -> Result<Plan> {
    let suite = Suite::load(&settings.scenarios)?;
    suite.check_record_size(settings.record_size)?;
    let found = scenario::discover(&suite.dir)?;
    let selected = scenario::select(&found, &settings.test)?;
    let base_vars = settings.variables();
    let scenarios = selected
        .iter()
        .map(|dir| {
            let scenario = Scenario::load(&suite, dir)?;
            let topic = format!("{TOPIC_PREFIX}{}", scenario.name);
            let mut vars = base_vars.clone();
            vars.insert("TOPIC".to_string(), topic.clone());
            let setup = resolve_steps(&scenario.file, "setup", &scenario.setup, &vars)?;
            let teardown = resolve_steps(&scenario.file, "teardown", &scenario.teardown, &vars)?;
            if scenario.expect.is_some() && scenario.own_broker {
                anyhow::bail!(
                    "{}: expect: the path check reads from the suite's broker ({}), which a \
                     scenario with own_broker does not use",
                    scenario.file.display(),
                    suite.bootstrap
                );
            }
            Ok(PlannedScenario {
                scenario,
                topic,
                setup,
                teardown,
                direct: suite.bootstrap.clone(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Plan { suite, scenarios })
}

fn resolve_steps(
    file: &Path,
    key: &str,
    steps: &[Step],
    vars: &BTreeMap<String, String>,
) -> Result<Vec<Step>> {
    steps
        .iter()
        .enumerate()
        .map(|(i, step)| match step {
            Step::Exec { service, command } => Ok(Step::Exec {
                service: service.clone(),
                command: command
                    .iter()
                    .map(|arg| {
                        substitute(arg, vars).map_err(|e| {
                            anyhow::anyhow!("{}: {key} step {}: {e}", file.display(), i + 1)
                        })
                    })
                    .collect::<Result<_>>()?,
            }),
        })
        .collect()
}

/// Replaces every `${NAME}` in `text` with its value; `$$` is a literal `$`.
pub fn substitute(text: &str, vars: &BTreeMap<String, String>) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('{') {
            let Some(end) = tail.find('}') else {
                bail!("unterminated ${{ in {text:?}");
            };
            let name = &tail[..end];
            match vars.get(name) {
                Some(value) => out.push_str(value),
                None => bail!(
                    "unknown variable ${{{name}}} in {text:?} (known: {})",
                    vars.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            }
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
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

impl Plan {
    /// Human-readable plan for `run --dry-run`.
    pub fn render(&self, settings: &Settings) -> String {
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
        let _ = writeln!(
            out,
            "Selected scenarios (TEST={}): {}",
            settings.test,
            list(&names)
        );
        let _ = writeln!(out, "Settings:");
        for (k, v) in settings.variables() {
            let _ = writeln!(out, "  {k}={v}");
        }
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
        for p in &self.scenarios {
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
            steps(&mut out, "setup", &p.setup);
            steps(&mut out, "teardown", &p.teardown);
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
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn vars() -> BTreeMap<String, String> {
        [("TOPIC", "perf-tests-01-a"), ("NUM_RECORDS", "10")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn substitution_replaces_known_variables() {
        let v = vars();
        assert_eq!(
            substitute("transit/keys/${TOPIC}", &v).unwrap(),
            "transit/keys/perf-tests-01-a"
        );
        assert_eq!(
            substitute("${NUM_RECORDS}x${TOPIC}", &v).unwrap(),
            "10xperf-tests-01-a"
        );
        assert_eq!(substitute("$$HOME $x plain", &v).unwrap(), "$HOME $x plain");
        let err = substitute("${NOPE}", &v).unwrap_err().to_string();
        assert!(err.contains("${NOPE}") && err.contains("TOPIC"), "{err}");
        assert!(substitute("${TOPIC", &v).is_err());
    }

    #[test]
    fn plan_selects_and_resolves() {
        let root = tempfile::tempdir().unwrap();
        let suite = root.path().join("suite");
        fs::create_dir_all(suite.join("01-a")).unwrap();
        fs::create_dir_all(suite.join("02-b")).unwrap();
        fs::write(root.path().join("c.yaml"), "services: {}\n").unwrap();
        fs::write(
            suite.join("suite.yaml"),
            "description: s\ncompose: [../c.yaml]\nservices: [broker]\nbootstrap: broker:9092\n",
        )
        .unwrap();
        fs::write(
            suite.join("01-a/scenario.yaml"),
            "description: a\nbootstrap: broker:9092\nsetup:\n  - exec: { service: vault, command: [key, \"${TOPIC}\", \"${RECORD_SIZE}\"] }\n",
        )
        .unwrap();
        fs::write(
            suite.join("02-b/scenario.yaml"),
            "description: b\nbootstrap: broker:9092\nteardown:\n  - exec: { service: vault, command: [\"${OOPS}\"] }\n",
        )
        .unwrap();
        let settings = Settings {
            scenarios: suite.clone(),
            test: "01.*".into(),
            commit_id: "c".into(),
            ..Settings::default()
        };
        let p = plan(&settings).unwrap();
        assert_eq!(p.scenarios.len(), 1);
        assert_eq!(p.scenarios[0].topic, "perf-tests-01-a");
        assert_eq!(
            p.scenarios[0].setup,
            [Step::Exec {
                service: "vault".into(),
                command: vec!["key".into(), "perf-tests-01-a".into(), "1024".into()]
            }]
        );
        // The scenario keeps the steps as written.
        assert!(matches!(&p.scenarios[0].scenario.setup[0],
            Step::Exec { command, .. } if command[1] == "${TOPIC}"));
        let text = p.render(&settings);
        assert!(
            text.contains("Selected scenarios (TEST=01.*): 01-a"),
            "{text}"
        );
        assert!(text.contains("topic: perf-tests-01-a"), "{text}");

        let err = plan(&Settings {
            test: ".*".into(),
            ..settings
        })
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("02-b/scenario.yaml") && err.contains("teardown step 1"),
            "{err}"
        );
        assert!(err.contains("${OOPS}"), "{err}");
    }
}
