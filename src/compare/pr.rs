//! The pull-request bot's two decisions, made by a pinned perf-tests rather than by workflow
//! script: whether a comment asks for a measurement (and with which settings), and what the
//! answer says. `.github/workflows/ab.yml` calls them as `perf-tests pr request` and
//! `perf-tests pr comment`.
//!
//! A request is the comment `/perf` alone, or followed by settings `VAR=VALUE` from an allowed
//! list (`/perf TEST=04.*`); anything else that starts with `/perf` (`/perfect`, `/perf
//! please`) is no request, and a setting outside the list or a value the setting refuses is
//! answered with why. The answer's verdict is judged here again from the measured phases, with
//! this binary's statistics: the measuring job ran the pull request's code.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context as _, Result};

use crate::model::pair::PairResult;
use crate::model::run::RunInfo;
use crate::model::ScenarioResult;

/// The marker that leads the bot's comment, so that it is found and updated, never duplicated.
pub const MARKER: &str = "<!-- perf-tests ab -->";

/// The settings a request may give by default: what is measured and how long, never where
/// results go or which images run (the workflow's inputs decide those).
pub(crate) const ALLOWED: [&str; 8] = [
    "TEST",
    "REPEAT",
    "PAIR_PHASES",
    "PAIR_THRESHOLD",
    "NUM_RECORDS",
    "THROUGHPUT",
    "RECORD_SIZE",
    "WARM_UP_SECONDS_PRE_TEST",
];

/// What a comment asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    /// Not a request: the bot stays silent.
    Ignore,
    /// A measurement with these settings (canonical values), as `ab`'s flags.
    Run(Vec<(String, String)>),
    /// A request the bot answers with why it will not run it.
    Refuse(String),
}

impl Request {
    /// The request in `comment` (its first line), with the settings `allowed` may give.
    pub(crate) fn of(comment: &str, allowed: &[String]) -> Request {
        let first = comment.lines().next().unwrap_or_default().trim();
        let Some(rest) = first.strip_prefix("/perf") else {
            return Request::Ignore;
        };
        if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
            return Request::Ignore;
        }
        let mut settings = Vec::new();
        for word in rest.split_whitespace() {
            let Some((var, value)) = word.split_once('=') else {
                return Request::Refuse(format!(
                    "`{word}` is not a setting: a request is `/perf` alone or followed by \
                     settings `VAR=VALUE`"
                ));
            };
            if !allowed.iter().any(|a| a == var) {
                return Request::Refuse(format!(
                    "`{var}` is not a setting a request may give (allowed: {})",
                    allowed.join(", ")
                ));
            }
            let Some(setting) = crate::settings::table::find(var) else {
                return Request::Refuse(format!("`{var}` is no setting of perf-tests"));
            };
            match setting.canonical(value) {
                Ok(v) => settings.push((var.to_string(), v)),
                Err(e) => return Request::Refuse(format!("`{word}`: {e:#}")),
            }
        }
        Request::Run(settings)
    }

    /// The request as lines of a GitHub Actions step's output: `state` (`run`, `ignore` or
    /// `refuse`), `args` (`ab`'s flags), `settings` (as given, for the answer), `reason`.
    pub(crate) fn github_output(&self) -> String {
        let (state, args, settings, reason) = match self {
            Request::Ignore => ("ignore", String::new(), String::new(), String::new()),
            Request::Refuse(why) => ("refuse", String::new(), String::new(), why.clone()),
            Request::Run(settings) => {
                let flag = |var: &str| crate::settings::table::find(var).map(|s| s.flag());
                let args: Vec<String> = settings
                    .iter()
                    .filter_map(|(var, v)| Some(format!("--{}={v}", flag(var)?)))
                    .collect();
                let given: Vec<String> = settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
                ("run", args.join(" "), given.join(" "), String::new())
            }
        };
        format!(
            "state={state}\nargs={args}\nsettings={settings}\nreason={}\n",
            reason.replace('\n', " ")
        )
    }
}

/// What the answer reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum State {
    /// The request is being measured.
    Measuring,
    /// The measurement finished: its results directory.
    Finished,
    /// The measurement did not finish: why.
    Failed(String),
    /// The request was refused: why.
    Refused(String),
}

/// Everything the answer names besides the results.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Context {
    pub base: String,
    pub head: String,
    /// The request's settings as given (`TEST=04.*`), or empty.
    pub settings: String,
    /// The workflow run, and where its results and report.html can be downloaded.
    pub run_url: String,
    pub results_url: String,
}

/// The answer: the marker, then what `state` says, the commits and the links; a finished one
/// holds the comparison (`crate::present::export::ab`) with its verdicts judged again here. Returns the
/// Markdown and whether side B is worse than side A.
pub(crate) fn comment(
    state: &State,
    ctx: &Context,
    results: Option<&Path>,
) -> Result<(String, bool)> {
    let mut out = format!("{MARKER}\n");
    // Outside a pull request (a local `pr comment`) there are no commits to name.
    let commits = if ctx.base.is_empty() || ctx.head.is_empty() {
        "side B against side A".to_string()
    } else {
        format!("base `{}`, head `{}`", short(&ctx.base), short(&ctx.head))
    };
    let settings = if ctx.settings.is_empty() {
        "the recommended settings".to_string()
    } else {
        format!("`{}`", ctx.settings)
    };
    let mut worse = false;
    match state {
        State::Measuring => {
            let _ = writeln!(
                out,
                "### perf-tests ab: measuring\n\n:hourglass: Measuring {commits} with \
                 {settings}: both builds at once, every path, fresh pairs; this comment is \
                 updated with the verdict when it ends."
            );
        }
        State::Refused(why) => {
            let _ = writeln!(
                out,
                "### perf-tests ab: not run\n\n:no_entry: {why}.\n\nA request is `/perf` alone \
                 (the recommended measurement of every path) or followed by settings, e.g. \
                 `/perf TEST=04.* REPEAT=6`."
            );
        }
        State::Failed(why) => {
            let _ = writeln!(
                out,
                "### perf-tests ab: did not finish\n\n:x: Measuring {commits} with {settings} \
                 did not finish: {why}."
            );
        }
        State::Finished => {
            let Some(dir) = results else {
                bail!("a finished answer needs the results directory");
            };
            let (info, results) = judged(dir)?;
            worse = results
                .iter()
                .any(|r| r.pair.as_ref().is_some_and(|p| !p.worse().is_empty()));
            let minutes = duration_minutes(&info);
            let _ = writeln!(
                out,
                "Measured {commits} with {settings}{}.\n",
                minutes
                    .map(|m| format!(" in {m:.0} minutes"))
                    .unwrap_or_default()
            );
            out.push_str(&crate::present::export::ab::render(&info, &results));
        }
    }
    let mut links = Vec::new();
    if !ctx.run_url.is_empty() {
        links.push(format!("[workflow run]({})", ctx.run_url));
    }
    // The results' address comes from the measuring job: only one in the run's repository on
    // the run's server is linked.
    if !ctx.results_url.is_empty() && same_repository(&ctx.run_url, &ctx.results_url) {
        links.push(format!(
            "[report.html and the results]({})",
            ctx.results_url
        ));
    }
    if !links.is_empty() {
        let _ = writeln!(out, "\n{}", links.join(" · "));
    }
    Ok((within_limit(out), worse))
}

/// The longest comment GitHub keeps is 65536 characters; the folded tables give way first.
const MAX_COMMENT: usize = 60_000;

/// `body` within [`MAX_COMMENT`]: the folded tables left out when it is longer, then cut.
fn within_limit(body: String) -> String {
    if body.len() <= MAX_COMMENT {
        return body;
    }
    let folded = body
        .find("\n<details>")
        .zip(body.rfind("</details>\n"))
        .map(|(start, end)| (start, end + "</details>\n".len()));
    let mut body = match folded {
        Some((start, end)) => format!(
            "{}\n(Every table of the run is in the results: too long for a comment.)\n{}",
            &body[..start],
            &body[end..]
        ),
        None => body,
    };
    if body.len() > MAX_COMMENT {
        let mut cut = MAX_COMMENT;
        while !body.is_char_boundary(cut) {
            cut -= 1;
        }
        body.truncate(cut);
        body.push_str("\n…\n");
    }
    body
}

/// Posts `body` on pull request `pr` of `repo` with the `gh` CLI (`gh`), or updates the comment
/// that already leads with [`MARKER`], so a request has one answer.
pub(crate) fn post(gh: &Path, repo: &str, pr: u64, body: &str) -> Result<()> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let comments = format!("repos/{repo}/issues/{pr}/comments");
    let select = format!(".[] | select(.body | startswith(\"{MARKER}\")) | .id");
    let out = Command::new(gh)
        .args(["api", "--paginate", &comments, "--jq", &select])
        .output()
        .with_context(|| format!("cannot run {}", gh.display()))?;
    if !out.status.success() {
        bail!(
            "listing the comments of {repo}#{pr} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let existing = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_string);
    let (method, path) = match &existing {
        Some(id) => ("PATCH", format!("repos/{repo}/issues/comments/{id}")),
        None => ("POST", comments),
    };
    let mut child = Command::new(gh)
        .args(["api", "--method", method, &path, "--input", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {}", gh.display()))?;
    let json = serde_json::json!({ "body": body }).to_string();
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(json.as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "{method} {path} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Whether `url` lies in the repository of the workflow run `run_url` (`<server>/<owner>/<repo>/…`)
/// and holds nothing but the characters of such an address.
fn same_repository(run_url: &str, url: &str) -> bool {
    let prefix: Vec<&str> = run_url.splitn(6, '/').take(5).collect();
    prefix.len() == 5
        && url.starts_with(&format!("{}/", prefix.join("/")))
        && url
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ":/._-".contains(c))
}

/// A run's results with every pair's verdict judged again from its measured phases.
fn judged(dir: &Path) -> Result<(RunInfo, Vec<ScenarioResult>)> {
    let info = crate::present::results::read_run_info(dir)?;
    let mut results = crate::present::results::read_scenarios(dir)?;
    if !results.iter().any(|r| r.pair.is_some()) {
        bail!("{} holds no paired results", dir.display());
    }
    for r in &mut results {
        let Some(stored) = &r.pair else { continue };
        let phases = stored.phases.iter().cloned().map(Ok).collect();
        let (mut pair, _) = PairResult::of(
            &stored.pair,
            phases,
            stored.phases_per_pair,
            stored.threshold_percent,
        );
        pair.alike = stored.alike;
        pair.path_check_b = stored.path_check_b.clone();
        r.pair = Some(pair);
    }
    Ok((info, results))
}

fn duration_minutes(info: &RunInfo) -> Option<f64> {
    let start = chrono::DateTime::parse_from_rfc3339(&info.started_at).ok()?;
    let end = chrono::DateTime::parse_from_rfc3339(&info.ended_at).ok()?;
    Some((end - start).num_seconds() as f64 / 60.0)
}

/// A commit's first 12 characters.
fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed() -> Vec<String> {
        ALLOWED.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_perf_alone_or_with_settings_is_a_request() {
        let of = |c: &str| Request::of(c, &allowed());
        assert_eq!(of("/perf"), Request::Run(vec![]));
        assert_eq!(of("  /perf  \nthanks"), Request::Run(vec![]));
        assert_eq!(
            of("/perf TEST=04.* REPEAT=6 NUM_RECORDS=1e5"),
            Request::Run(vec![
                ("TEST".into(), "04.*".into()),
                ("REPEAT".into(), "6".into()),
                ("NUM_RECORDS".into(), "100000".into())
            ])
        );
        for ignored in ["/perfect", "/perf-tests", "please /perf", "", "LGTM"] {
            assert_eq!(of(ignored), Request::Ignore, "{ignored}");
        }
        let refused = |c: &str| match of(c) {
            Request::Refuse(why) => why,
            other => panic!("{c}: {other:?}"),
        };
        assert!(refused("/perf please").contains("`please` is not a setting"));
        assert!(refused("/perf RESULTS_DIR=/tmp")
            .contains("`RESULTS_DIR` is not a setting a request may give"));
        assert!(refused("/perf REPEAT=0").contains("`REPEAT=0`"));
        assert!(refused("/perf KROXYLICIOUS_IMAGE=x:y").contains("allowed: TEST, REPEAT"));
    }

    #[test]
    fn a_request_is_handed_on_as_flags_of_ab() {
        let out = Request::of("/perf TEST=04.* REPEAT=6", &allowed()).github_output();
        assert_eq!(
            out,
            "state=run\nargs=--test=04.* --repeat=6\nsettings=TEST=04.* REPEAT=6\nreason=\n"
        );
        let out = Request::of("/perf NOPE=1", &allowed()).github_output();
        assert!(
            out.starts_with("state=refuse\nargs=\nsettings=\nreason=`NOPE`"),
            "{out}"
        );
        assert!(Request::Ignore
            .github_output()
            .starts_with("state=ignore\n"));
    }

    #[test]
    fn every_answer_leads_with_the_marker_and_names_the_commits() {
        let ctx = Context {
            base: "0123456789abcdef0123".into(),
            head: "fedcba9876543210fedc".into(),
            settings: "TEST=04.*".into(),
            run_url: "https://example.invalid/run/1".into(),
            results_url: String::new(),
        };
        let (measuring, worse) = comment(&State::Measuring, &ctx, None).unwrap();
        assert!(!worse);
        assert!(measuring.starts_with(&format!("{MARKER}\n### perf-tests ab: measuring")));
        assert!(
            measuring.contains("base `0123456789ab`, head `fedcba987654` with `TEST=04.*`"),
            "{measuring}"
        );
        assert!(measuring.ends_with("[workflow run](https://example.invalid/run/1)\n"));
        let (failed, _) = comment(
            &State::Failed("the measuring job: failure".into()),
            &ctx,
            None,
        )
        .unwrap();
        assert!(
            failed.contains(":x: Measuring base `0123456789ab`"),
            "{failed}"
        );
        assert!(
            failed.contains("did not finish: the measuring job: failure."),
            "{failed}"
        );
        let (refused, _) = comment(
            &State::Refused("`NOPE` is not a setting".into()),
            &ctx,
            None,
        )
        .unwrap();
        assert!(
            refused.contains(":no_entry: `NOPE` is not a setting."),
            "{refused}"
        );
        assert!(comment(&State::Finished, &ctx, None).is_err());
        // A local answer, with no commits, names none.
        let local = Context {
            base: String::new(),
            head: String::new(),
            ..ctx.clone()
        };
        let (measuring, _) = comment(&State::Measuring, &local, None).unwrap();
        assert!(
            measuring.contains("Measuring side B against side A with `TEST=04.*`")
                && !measuring.contains("``"),
            "{measuring}"
        );
        // Only an address in the run's repository is linked.
        let run = "https://github.com/owner/proxy/actions/runs/5";
        let link = |url: &str| {
            let ctx = Context {
                run_url: run.into(),
                results_url: url.into(),
                ..ctx.clone()
            };
            comment(&State::Measuring, &ctx, None)
                .unwrap()
                .0
                .contains("report.html")
        };
        assert!(link(
            "https://github.com/owner/proxy/actions/runs/5/artifacts/9"
        ));
        assert!(!link(
            "https://evil.example/owner/proxy/actions/runs/5/artifacts/9"
        ));
        assert!(!link(
            "https://github.com/other/proxy/actions/runs/5/artifacts/9"
        ));
        assert!(!link(
            "https://github.com/owner/proxy/x)[y](https://evil.example"
        ));
    }
}
