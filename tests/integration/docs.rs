//! The documentation against the code: every link between the documents resolves (the file,
//! and the heading it names), and every perf-tests command shown parses as the command line
//! parses it (its command, its flags, the settings it gives as variables); the quick ones run.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::common::repo;

/// The documents at the repository's root and every page under docs/.
fn documents() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = [
        "README.md",
        "PERFORMANCE.md",
        "CONTRIBUTING.md",
        "CHANGELOG.md",
    ]
    .iter()
    .map(|d| repo().join(d))
    .collect();
    let mut stack = vec![repo().join("docs")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The lines of `text` outside fenced code blocks, and the code blocks' lines with their
/// languages.
fn split(text: &str) -> (Vec<&str>, Vec<(String, Vec<&str>)>) {
    let (mut prose, mut blocks) = (Vec::new(), Vec::new());
    let mut open: Option<(String, Vec<&str>)> = None;
    for line in text.lines() {
        if let Some(fence) = line.strip_prefix("```") {
            match open.take() {
                Some(block) => blocks.push(block),
                None => open = Some((fence.trim().to_string(), Vec::new())),
            }
            continue;
        }
        match &mut open {
            Some((_, lines)) => lines.push(line),
            None => prose.push(line),
        }
    }
    (prose, blocks)
}

/// GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    split(text)
        .0
        .iter()
        .filter_map(|l| {
            let rest = l.trim_start_matches('#');
            (rest.len() < l.len() && rest.starts_with(' ')).then(|| anchor(rest))
        })
        .collect()
}

/// Every `[text](target)` of the prose of `text`.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in split(text).0 {
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_link_between_the_documents_resolves() {
    let mut broken = Vec::new();
    // Each linked document's headings, read once however many links name them.
    let mut headings: HashMap<PathBuf, Vec<String>> = HashMap::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() {
                doc.clone()
            } else {
                doc.parent().unwrap().join(path)
            };
            if !file.exists() {
                broken.push(format!(
                    "{}: {target} (no {})",
                    doc.display(),
                    file.display()
                ));
                continue;
            }
            if fragment.is_empty() || file.extension().is_none_or(|x| x != "md") {
                continue;
            }
            let known = headings
                .entry(file.clone())
                .or_insert_with(|| anchors(&std::fs::read_to_string(&file).unwrap()));
            if !known.iter().any(|a| a == fragment) {
                broken.push(format!("{}: {target} (no such heading)", doc.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// A perf-tests command line of a document: where it is, the variables it sets, its arguments
/// after the program.
struct Documented {
    at: String,
    vars: Vec<(String, String)>,
    args: Vec<String>,
}

/// The heading under which PERFORMANCE.md keeps its notebook of campaigns.
const NOTEBOOK: &str = "\n# Notebook";

/// Every perf-tests command line of the documents' shell blocks (continuations joined).
fn commands() -> Vec<Documented> {
    let mut out = Vec::new();
    for doc in documents() {
        let mut text = std::fs::read_to_string(&doc).unwrap();
        // PERFORMANCE.md's notebook keeps each campaign's command as it ran at its commit.
        if let Some(at) = text.find(NOTEBOOK) {
            text.truncate(at);
        }
        for (lang, lines) in split(&text).1 {
            if lang != "sh" {
                continue;
            }
            let joined = lines.join("\n").replace("\\\n", " ");
            for line in joined.lines() {
                let line = line.split(" #").next().unwrap_or(line);
                for part in line.split("&&").map(str::trim) {
                    let at = format!("{}: {part}", doc.display());
                    let words =
                        shlex::split(part).unwrap_or_else(|| panic!("{at}: unbalanced quotes"));
                    out.extend(invocation(at, &words));
                }
            }
        }
    }
    out
}

/// An assignment of the shell's form `NAME=value`, split.
fn assignment(word: &str) -> Option<(String, String)> {
    let (k, v) = word.split_once('=')?;
    let name = !k.is_empty() && k.chars().all(|c| c.is_ascii_uppercase() || c == '_');
    name.then(|| (k.to_string(), v.to_string()))
}

/// The variables and the perf-tests arguments of one shell command (found `at`), when it runs perf-tests:
/// directly, through `cargo run --release --`, or under `env`, `valgrind` or `time`; other
/// programs (`cp target/release/perf-tests …`) are not perf-tests commands. Redirections end the
/// arguments.
fn invocation(at: String, words: &[String]) -> Option<Documented> {
    let mut vars = Vec::new();
    let mut i = 0;
    let mut cargo = false;
    while i < words.len() {
        let w = words[i].as_str();
        if let Some(kv) = assignment(w) {
            vars.push(kv);
        } else if w == "perf-tests" || w.ends_with("/perf-tests") || (cargo && w == "--") {
            let args = words[i + 1..]
                .iter()
                .take_while(|a| !(a.starts_with('>') || a.starts_with("2>") || *a == "|"))
                .cloned()
                .collect();
            return Some(Documented { at, vars, args });
        } else if w == "cargo" {
            cargo = true;
        } else if w == "-f" {
            i += 1; // time's format
        } else if !(["env", "valgrind", "time", "/usr/bin/time", "run"].contains(&w)
            || w.starts_with('-')
            || w.starts_with('$'))
        {
            return None;
        }
        i += 1;
    }
    None
}

/// Variables the documents set that are no setting of the runner: the build's and the shell's.
const OTHER_VARIABLES: [&str; 5] = [
    "CARGO_TARGET_DIR",
    "CI",
    "RUST_LOG",
    "DOCKER_HOST",
    "PERF_TESTS_CACHE",
];

#[test]
fn every_documented_command_names_only_commands_flags_and_settings_that_exist() {
    use clap::Parser;
    let found = commands();
    assert!(found.len() > 30, "{} commands found", found.len());
    let mut wrong = Vec::new();
    for Documented { at, vars, args } in &found {
        for (var, _) in vars {
            if perf_tests::settings::table::find(var).is_none()
                && !OTHER_VARIABLES.contains(&var.as_str())
            {
                wrong.push(format!("{at}: {var} is no setting"));
            }
        }
        // A synopsis (`[--threshold PCT]`, `auto|markdown`) shows the forms, not one command.
        if args.iter().any(|a| a.starts_with('[') || a.contains('|')) {
            continue;
        }
        // Placeholders (`…`, `BASE`) stand for values, which clap checks no further than this.
        let args: Vec<String> = args
            .iter()
            .map(|a| a.replace('…', "x"))
            .filter(|a| !a.starts_with('$'))
            .collect();
        let mut argv = vec!["perf-tests".to_string()];
        argv.extend(args);
        // `perf-tests workload …` is the workload container's protocol, parsed apart.
        let parsed = if argv.get(1).is_some_and(|a| a == "workload") {
            perf_tests::workload::command::parse_from(&argv).map(drop)
        } else {
            perf_tests::cli::Cli::try_parse_from(&argv).map(drop)
        };
        if let Err(e) = parsed {
            if !matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) {
                wrong.push(format!(
                    "{at}: {}",
                    e.to_string().lines().next().unwrap_or_default()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_quick_documented_commands_run() {
    let results = tempfile::tempdir().unwrap();
    for args in [
        &["--help"][..],
        &["list"],
        &["run", "--dry-run"],
        &["ab", "--dry-run"],
        &["sweep", "--to", "2e5", "--dry-run"],
    ] {
        crate::common::succeeds(
            crate::common::bin()
                .args(args)
                .env("RESULTS_DIR", results.path()),
        );
    }
}

/// A document of the repository (`docs/reference/metrics.md`).
fn read(doc: &str) -> String {
    std::fs::read_to_string(repo().join(doc)).unwrap()
}

/// The rows of the first Markdown table after `heading` in `text`, each as its cells with
/// surrounding backticks removed.
fn table_rows(text: &str, heading: &str) -> Vec<Vec<String>> {
    let after = text
        .split_once(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"))
        .1;
    after
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2) // the header and its rule
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.trim().trim_matches('`').to_string())
                .collect()
        })
        .collect()
}

#[test]
fn the_metrics_reference_lists_every_metric_as_the_registry_declares_it() {
    let documented: Vec<Vec<String>> =
        table_rows(&read("docs/reference/metrics.md"), "## Every metric")
            .into_iter()
            .map(|row| row[..5].to_vec())
            .collect();
    let declared: Vec<Vec<String>> = perf_tests::analysis::metrics::METRICS
        .iter()
        .map(|m| {
            let better = match m.better {
                Some(perf_tests::analysis::metrics::Better::Higher) => "higher",
                Some(perf_tests::analysis::metrics::Better::Lower) => "lower",
                None => "",
            };
            vec![
                format!("{:?}", m.table),
                m.name.to_string(),
                m.unit.to_string(),
                better.to_string(),
                m.spread.unwrap_or_default().to_string(),
            ]
        })
        .collect();
    assert_eq!(documented, declared);
}

#[test]
fn the_exit_codes_reference_is_the_code_s() {
    use perf_tests::cli::{EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE};
    let documented: Vec<String> =
        table_rows(&read("docs/reference/command-line.md"), "## Exit codes")
            .into_iter()
            .map(|row| row[0].clone())
            .collect();
    let declared: Vec<String> = [EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED]
        .iter()
        .map(i32::to_string)
        .collect();
    assert_eq!(documented, declared);
}

#[test]
fn the_command_line_reference_lists_every_command() {
    let mut documented: Vec<String> =
        table_rows(&read("docs/reference/command-line.md"), "## Commands")
            .into_iter()
            .map(|row| row[0].clone())
            .collect();
    documented.sort();
    let cli = <perf_tests::cli::Cli as clap::CommandFactory>::command();
    let mut declared: Vec<String> = cli
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect();
    declared.sort();
    assert_eq!(documented, declared);
}

/// The keys a suite or scenario file accepts, as the parser names them when it refuses an
/// unknown one (`expected one of `a`, `b``), so the list comes from the code itself.
fn accepted_keys(file: &str) -> Vec<String> {
    let root = tempfile::tempdir().unwrap();
    let suite = root.path().join("suite");
    std::fs::create_dir_all(suite.join("01-x")).unwrap();
    std::fs::write(root.path().join("compose.yaml"), "services: {}\n").unwrap();
    let mut suite_yaml =
        "description: d\ncompose: [../compose.yaml]\nservices: []\nbootstrap: b:9092\n".to_string();
    let mut scenario_yaml = "description: d\nbootstrap: b:9092\n".to_string();
    match file {
        "suite.yaml" => suite_yaml.push_str("not_a_key: 1\n"),
        _ => scenario_yaml.push_str("not_a_key: 1\n"),
    }
    std::fs::write(suite.join("suite.yaml"), suite_yaml).unwrap();
    std::fs::write(suite.join("01-x/scenario.yaml"), scenario_yaml).unwrap();
    let out = crate::common::bin()
        .arg("list")
        .env("SCENARIOS", &suite)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(err.contains(file), "{err}");
    let expected = err
        .split("expected one of ")
        .nth(1)
        .unwrap_or_else(|| panic!("{err}"));
    let line = expected.lines().next().unwrap();
    line.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The top-level keys of the YAML examples of the scenarios guide's files section, before and
/// after the scenario file's example.
fn documented_keys() -> (Vec<String>, Vec<String>) {
    let text = read("docs/guide/scenarios.md");
    let files = text.split_once("## Suite and scenario files").unwrap().1;
    let (suite, scenario) = files.split_once("`NN-name/scenario.yaml`").unwrap();
    let keys = |part: &str| -> Vec<String> {
        split(part)
            .1
            .into_iter()
            .filter(|(lang, _)| lang == "yaml")
            .flat_map(|(_, lines)| lines)
            .filter_map(|l| {
                let (key, _) = l.split_once(':')?;
                key.chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_')
                    .then(|| key.to_string())
            })
            .collect()
    };
    (keys(suite), keys(scenario))
}

#[test]
fn the_scenarios_guide_shows_every_key_of_suite_and_scenario_files() {
    let (suite_doc, scenario_doc) = documented_keys();
    for (file, documented) in [("suite.yaml", suite_doc), ("scenario.yaml", scenario_doc)] {
        let accepted = accepted_keys(file);
        assert!(accepted.len() > 5, "{file}: {accepted:?}");
        let missing: Vec<&String> = accepted
            .iter()
            .filter(|k| !documented.contains(k))
            .collect();
        let unknown: Vec<&String> = documented
            .iter()
            .filter(|k| !accepted.contains(k))
            .collect();
        assert!(
            missing.is_empty() && unknown.is_empty(),
            "{file}: not documented {missing:?}, documented but not accepted {unknown:?}"
        );
    }
}

/// The reference's table of settings and its list of the settings that may vary are the settings
/// table's, so the documentation cannot drift from what the command line accepts.
#[test]
fn the_settings_reference_documents_every_setting_and_which_may_vary() {
    let section = read("docs/reference/settings.md");
    let mut documented: Vec<(String, String)> = table_rows(&section, "# Settings")
        .into_iter()
        .map(|row| (row[0].clone(), row[1].clone()))
        .collect();
    documented.sort();
    let mut declared: Vec<(String, String)> = perf_tests::settings::SETTINGS
        .iter()
        .map(|s| (s.var.to_string(), format!("--{}", s.flag())))
        .collect();
    declared.sort();
    assert_eq!(documented, declared);

    let paragraph = section
        .split("\n\n")
        .find(|p| p.contains("may take a list of values"))
        .expect("the paragraph on lists");
    let mut listed: Vec<&str> = paragraph
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| w.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .collect();
    listed.sort_unstable();
    let mut varying = perf_tests::settings::table::varying();
    varying.sort_unstable();
    assert_eq!(listed, varying);
}
