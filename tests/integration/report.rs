//! `report.html` in a real browser: a run of the default suite's broker and proxy under the
//! default suite's scenario names and a 60-character one, then `compare --report` of that run
//! against itself; Debian's Chromium (headless) loads each page from disk, a script the test adds
//! to a copy reads the laid-out DOM (every scenario's row, every chart, no text box overlapping
//! another), its network log shows that no request left the page, and a screenshot is kept.

use crate::common;
use common::{engine_lock, leftovers, perf_tests_run, repo};

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value as Json;

/// The default suite's names, and one of 60 characters that must wrap.
const NAMES: [&str; 6] = [
    "01-no-proxy-baseline",
    "02-no-filters",
    "03-transform-filter",
    "04-envelope-encryption-filter",
    "05-envelope-encryption-filter-no-encrypt",
    "06-a-path-whose-name-is-sixty-characters-long-to-wrap-in-its",
];

/// Chromium: `CHROMIUM` or the first of Debian's and other distributions' names on PATH.
fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("CHROMIUM") {
        return PathBuf::from(p);
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(out) = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
        {
            let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if out.status.success() && !path.is_empty() {
                return PathBuf::from(path);
            }
        }
    }
    panic!(
        "this test needs Chromium (Debian: apt-get install chromium; scripts/setup --tests \
         installs it), or CHROMIUM naming one"
    );
}

/// Runs headless Chromium on `page` with `args`, its profile and network log in `dir`; returns
/// its stdout and the URLs its network log saw.
fn headless(dir: &Path, page: &Path, args: &[String]) -> (String, Vec<String>) {
    let profile = tempfile::tempdir_in(dir).unwrap();
    let netlog = dir.join(format!("netlog-{}.json", std::process::id()));
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--log-net-log={}", netlog.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("Chromium starts");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "Chromium failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_to_string(&netlog).unwrap_or_default();
    let urls = urls_in(&log);
    (stdout, urls)
}

/// The URLs of a network log's requests made by a page (their initiator is the page's origin,
/// `null` for a file), but the page's own `file:` one; the browser's own requests (its
/// initiator "not an origin") are not the page's.
fn urls_in(log: &str) -> Vec<String> {
    let log: Json = serde_json::from_str(log)
        .or_else(|_| serde_json::from_str(&format!("{}]}}", log.trim_end().trim_end_matches(','))))
        .unwrap_or_else(|e| panic!("the network log does not parse: {e}"));
    let mut urls = Vec::new();
    for event in log["events"].as_array().into_iter().flatten() {
        let params = &event["params"];
        let (Some(url), Some(initiator)) = (params["url"].as_str(), params["initiator"].as_str())
        else {
            continue;
        };
        if initiator != "not an origin"
            && !url.starts_with("file:")
            && !urls.iter().any(|u| u == url)
        {
            urls.push(url.to_string());
        }
    }
    urls
}

/// Reads the laid-out page: the names in each table's first column, the charts, the labels of
/// the charts' scenarios, and every pair of texts whose boxes overlap: within each SVG, its
/// `<text>` elements; in the page, its headings, paragraphs, tables and charts.
const CHECK: &str = r#"<script>
(function () {
  const box = e => e.getBoundingClientRect();
  const meets = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 &&
                          a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  const text = e => (e.querySelector('title') || e).textContent.trim().slice(0, 80);
  const overlaps = [];
  for (const svg of document.querySelectorAll('svg')) {
    const texts = [...svg.querySelectorAll('text')].map(t => [t, box(t)])
      .filter(([, r]) => r.width > 0 && r.height > 0);
    for (let i = 0; i < texts.length; i++)
      for (let j = i + 1; j < texts.length; j++)
        if (meets(texts[i][1], texts[j][1]))
          overlaps.push([text(texts[i][0]), text(texts[j][0])]);
  }
  const blocks = [...document.body.children].filter(e => e.tagName !== 'SCRIPT')
    .map(e => [e, box(e)]).filter(([, r]) => r.height > 0);
  for (let i = 0; i < blocks.length; i++)
    for (let j = i + 1; j < blocks.length; j++)
      if (meets(blocks[i][1], blocks[j][1]))
        overlaps.push([blocks[i][0].tagName + ' ' + text(blocks[i][0]),
                       blocks[j][0].tagName + ' ' + text(blocks[j][0])]);
  const out = {
    tables: [...document.querySelectorAll('table')].map(t => ({
      id: t.id,
      names: [...t.querySelectorAll('td.name')].map(td => td.textContent),
    })),
    charts: [...document.querySelectorAll('svg')].map(s => s.closest('[id]') ? s.closest('[id]').id : s.getAttribute('class')),
    labels: [...document.querySelectorAll('svg text.scenario > title')].map(t => t.textContent),
    widest: Math.max(...[...document.querySelectorAll('svg text.scenario')].map(t => box(t).width)),
    overlaps,
  };
  const pre = document.createElement('pre');
  pre.id = 'verdict';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"#;

/// Loads `page` in Chromium with the check added (in a copy) and returns what the
/// check found; keeps a screenshot of the page itself as `<shot>.png` in the test target's
/// temporary directory.
fn check_in_browser(page: &Path, shot: &str) -> Json {
    // The browser's profile, its network log and the checked copy stay out of the results.
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let html = std::fs::read_to_string(page).unwrap();
    let checked = dir.join(format!("checked-{shot}.html"));
    std::fs::write(
        &checked,
        html.replace("</body>", &format!("{CHECK}</body>")),
    )
    .unwrap();
    let (dom, urls) = headless(
        dir,
        &checked,
        &["--window-size=1400,900".into(), "--dump-dom".into()],
    );
    assert!(urls.is_empty(), "the page made requests: {urls:?}");
    let start = dom
        .find("<pre id=\"verdict\">")
        .unwrap_or_else(|| panic!("no verdict in the DOM:\n{dom}"))
        + "<pre id=\"verdict\">".len();
    let end = start + dom[start..].find("</pre>").unwrap();
    let json = dom[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let verdict: Json = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));

    let png = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{shot}.png"));
    let _ = std::fs::remove_file(&png);
    let (_, urls) = headless(
        dir,
        page,
        &[
            "--window-size=1400,5000".into(),
            format!("--screenshot={}", png.display()),
        ],
    );
    assert!(urls.is_empty(), "the page made requests: {urls:?}");
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000,
        "{}",
        png.display()
    );
    eprintln!("screenshot: {}", png.display());
    verdict
}

/// The default suite's broker and plain proxy under [`NAMES`]: the first is the reference,
/// straight to the broker; the others go through the proxy.
fn named_suite(root: &Path) -> PathBuf {
    let suite = root.join("suite");
    std::fs::create_dir_all(&suite).unwrap();
    let default = repo().join("scenarios/kroxylicious");
    let text = std::fs::read_to_string(default.join("suite.yaml")).unwrap();
    let absolute = |relative: &str| {
        default
            .join(relative)
            .to_str()
            .expect("a UTF-8 path")
            .to_string()
    };
    let text = text
        .replace(
            "../../compose/kroxylicious.yaml",
            &absolute("../../compose/kroxylicious.yaml"),
        )
        .replace("images/recipes.yaml", &absolute("images/recipes.yaml"));
    std::fs::write(suite.join("suite.yaml"), text).unwrap();
    for (k, name) in NAMES.iter().enumerate() {
        let from = if k == 0 {
            "01-no-proxy-baseline"
        } else {
            "02-no-filters"
        };
        std::fs::create_dir_all(suite.join(name)).unwrap();
        std::fs::copy(
            default.join(from).join("scenario.yaml"),
            suite.join(name).join("scenario.yaml"),
        )
        .unwrap();
    }
    suite
}

fn names_of(verdict: &Json, table: &str) -> Vec<String> {
    verdict["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == table)
        .unwrap_or_else(|| panic!("no table {table} in {verdict}"))["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_network_check_sees_a_request_a_page_makes() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("fetches.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><img src=\"http://perf-tests.invalid/x.png\"></body></html>",
    )
    .unwrap();
    let (_, urls) = headless(dir.path(), &page, &["--dump-dom".into()]);
    assert_eq!(urls, ["http://perf-tests.invalid/x.png"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reports_read_in_a_browser_with_every_row_and_chart_and_no_overlap() {
    assert_eq!(NAMES[5].len(), 60);
    let _lock = engine_lock(false);
    let root = tempfile::tempdir().unwrap();
    let suite = named_suite(root.path());
    let results = root.path().join("results");
    let out = perf_tests_run(&results)
        .env("SCENARIOS", &suite)
        .env("NUM_RECORDS", "2000")
        .env("REPEAT", "2")
        .env("NETWORK_CEILING", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let run_id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("==> run "))
        .unwrap()
        .trim()
        .to_string();
    assert_eq!(leftovers(&run_id).await, (0, 0));
    let run = std::fs::read_dir(&results)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_dir())
        .unwrap();

    // The run's report.
    let verdict = check_in_browser(&run.join("report.html"), "report");
    assert_eq!(verdict["overlaps"], serde_json::json!([]), "{verdict}");
    for table in [
        "table-producer-results",
        "table-consumer-results",
        "table-resources",
    ] {
        let mut names = names_of(&verdict, table);
        names.dedup();
        assert_eq!(names, NAMES, "{table}");
    }
    // Every scenario but the reference against it.
    assert_eq!(names_of(&verdict, "table-reference"), NAMES[1..]);
    let charts: Vec<&str> = verdict["charts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(charts, ["chart-results"], "{verdict}");
    // Each of the chart's bar panels labels every scenario with its whole name, within its
    // group's width (140 px).
    let labels: Vec<String> = verdict["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect();
    let panels = labels.len() / NAMES.len();
    assert!(panels >= 3, "{labels:?}");
    assert_eq!(labels, NAMES.repeat(panels));
    assert!(
        verdict["widest"].as_f64().unwrap() <= 140.0,
        "a label wider than its group: {verdict}"
    );

    // The comparison's report: the run against itself.
    let page = root.path().join("compare.html");
    let out = common::bin()
        .args(["compare"])
        .arg(&run)
        .arg(&run)
        .arg("--report")
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdict = check_in_browser(&page, "compare");
    assert_eq!(verdict["overlaps"], serde_json::json!([]), "{verdict}");
    let names = names_of(&verdict, "table-metrics");
    for name in NAMES {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    // One chart per primary metric: each scenario's producer and consumer rate.
    let charts = verdict["charts"].as_array().unwrap();
    assert_eq!(charts.len(), 2 * NAMES.len(), "{verdict}");
    assert!(charts.iter().all(|c| c == "compare"), "{verdict}");
}
