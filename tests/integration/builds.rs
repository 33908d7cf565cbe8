//! A proxy given as a build (`KROXYLICIOUS_IMAGE` naming a path): a distribution in the
//! upstream layout made from the proxy's Maven Central jars (`images distribution`), as a
//! directory and as a `.tar.gz` with a top folder; a filter added as a plugin; a side of
//! `ab` from a distribution; and each bad input refused naming it. On the real engine.

use std::path::{Path, PathBuf};

use crate::common;
use common::{engine_lock, leftovers, only_run, perf_tests_command};

use serde_json::Value;

/// The suite's proxy as a distribution in the upstream layout under `at/` (Maven Central's jars
/// with the start class the suite compiles, `images distribution`), without the jars whose
/// names start with one of `leave_out`; its top folder.
fn distribution(at: &Path, leave_out: &[&str]) -> PathBuf {
    let out = common::bin()
        .args(["images", "distribution", "--out"])
        .arg(at)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let top = PathBuf::from(stdout.trim());
    for dir in ["bin", "libs", "config"] {
        assert!(top.join(dir).is_dir(), "{} has {dir}/", top.display());
    }
    let script = std::fs::read_to_string(top.join("bin/kroxylicious-start.sh")).unwrap();
    assert!(
        script.contains("export JAVA_MAIN_CLASS=ProxyMain"),
        "{script}"
    );
    for jar in jars(&top.join("libs")) {
        let name = jar.file_name().unwrap().to_str().unwrap();
        if leave_out.iter().any(|l| name.starts_with(l)) {
            std::fs::remove_file(&jar).unwrap();
        }
    }
    top
}

/// The jars of `dir`, sorted.
fn jars(dir: &Path) -> Vec<PathBuf> {
    let mut jars: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jar"))
        .collect();
    jars.sort();
    jars
}

/// The proxy images a test's commands built (`perf-tests/kroxylicious-build:<content>`, named in
/// their output), removed when the test ends however it ends: a build is kept by the product
/// for reuse, and each test's distribution is a new one.
#[derive(Default)]
struct Built(std::cell::RefCell<std::collections::BTreeSet<String>>);

/// A proxy image made from a build, as the product names it.
const BUILT: &str = "perf-tests/kroxylicious-build:";

/// The proxy images from builds that `text` names (as words, maybe in punctuation).
fn built_tags(text: &str) -> impl Iterator<Item = &str> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, '(' | ')' | ',' | ':' | '`' | '"')))
        .filter(|w| w.starts_with(BUILT) && w.len() > BUILT.len())
}

impl Built {
    fn note(&self, output: &str) {
        self.0
            .borrow_mut()
            .extend(built_tags(output).map(str::to_string));
    }
}

impl Drop for Built {
    fn drop(&mut self) {
        for tag in self.0.borrow().iter() {
            let _ = std::process::Command::new("docker")
                .args(["rmi", "--force", tag])
                .env_remove("DOCKER_HOST")
                .output();
        }
    }
}

fn run(
    built: &Built,
    args: &[&str],
    env: &[(&str, &str)],
    results: &Path,
) -> (Option<i32>, String, String) {
    let mut cmd = perf_tests_command(args[0], results);
    cmd.args(&args[1..])
        .envs(env.iter().copied())
        .env("NUM_RECORDS", "2000")
        .env("NETWORK_CEILING", "0");
    let out = cmd.output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    built.note(&stdout);
    built.note(&stderr);
    (out.status.code(), stdout, stderr)
}

/// The tag `images build` made or found for the build `KROXYLICIOUS_IMAGE=value` names.
fn build(built: &Built, value: &str, plugins: &str, results: &Path) -> (String, bool) {
    let (code, stdout, stderr) = run(
        built,
        &["images", "build"],
        &[
            ("KROXYLICIOUS_IMAGE", value),
            ("KROXYLICIOUS_PLUGINS", plugins),
        ],
        results,
    );
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.contains(BUILT))
        .unwrap_or_else(|| panic!("no build in {stdout}"));
    let tag = built_tags(line).next().unwrap().to_string();
    (tag, line.trim_start().starts_with("built"))
}

/// A distribution becomes an image (a directory, and the same as a `.tar.gz` with a top
/// folder) that carries the path: scenario 03's records upper-cased through it. Its tag is its
/// content's: built again unchanged it is reused, with one jar more it is a new image.
#[tokio::test]
async fn a_distribution_becomes_a_proxy_image_named_by_its_content() {
    let _lock = engine_lock(false);
    let made = Built::default();
    let root = tempfile::tempdir().unwrap();
    let results = root.path().join("results");
    let dir = distribution(&root.path().join("dir"), &[]);
    let value = dir.to_str().unwrap();
    let (tag, _) = build(&made, value, "", &results);
    let (again, built) = build(&made, value, "", &results);
    assert_eq!(
        (again.as_str(), built),
        (tag.as_str(), false),
        "an unchanged build is reused"
    );
    std::fs::copy(
        dir.join("libs/HdrHistogram-2.2.2.jar"),
        dir.join("libs/extra.jar"),
    )
    .unwrap();
    let (changed, built) = build(&made, value, "", &results);
    assert!(built && changed != tag, "{changed} after {tag}");
    std::fs::remove_file(dir.join("libs/extra.jar")).unwrap();
    assert_eq!(
        build(&made, value, "", &results).0,
        tag,
        "the content, not the time, names it"
    );

    // The same layout as a .tar.gz with a top folder, as the proxy's release ships it.
    let archive = root.path().join("kroxylicious-test-bin.tar.gz");
    let status = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(root.path().join("dir"))
        .arg(dir.file_name().unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    let (code, stdout, stderr) = run(
        &made,
        &["run"],
        &[
            ("KROXYLICIOUS_IMAGE", archive.to_str().unwrap()),
            ("TEST", "03.*"),
        ],
        &results,
    );
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert_eq!(leftovers(&common::run_id(&stderr)).await, (0, 0));
    let run = only_run(&results);
    let result: Value =
        serde_json::from_slice(&std::fs::read(run.join("03-transform-filter.json")).unwrap())
            .unwrap();
    let check = &result["path_check"];
    assert_eq!(check["broker_ok"], check["records"], "{check}");
    assert!(check["records"].as_u64().unwrap() > 0);
    let images = result["images"].as_object().unwrap();
    let built: Vec<&String> = images.keys().filter(|i| i.starts_with(BUILT)).collect();
    assert_eq!(built.len(), 1, "{images:?}");
    assert!(
        result["image_sources"][built[0].as_str()]
            .as_str()
            .unwrap()
            .contains("kroxylicious-test-bin.tar.gz"),
        "{}",
        result["image_sources"]
    );
}

/// A filter's jar given as a plugin is on the proxy's class path: with the transform filter's
/// jar left out of the distribution and added through `KROXYLICIOUS_PLUGINS`, scenario 03's
/// records are upper-cased at the broker; side B of `ab` runs from that distribution.
#[tokio::test]
async fn a_plugin_filter_is_loaded_and_a_side_runs_from_a_distribution() {
    let _lock = engine_lock(false);
    let made = Built::default();
    let root = tempfile::tempdir().unwrap();
    let results = root.path().join("results");
    let dir = distribution(
        &root.path().join("dist"),
        &["kroxylicious-simple-transform"],
    );
    let plugins = root.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let whole = distribution(&root.path().join("whole"), &[]);
    let transform = jars(&whole.join("libs"))
        .into_iter()
        .find(|j| {
            j.to_string_lossy()
                .contains("kroxylicious-simple-transform")
        })
        .unwrap();
    std::fs::copy(&transform, plugins.join("my-filter.jar")).unwrap();
    let image_arg = format!("KROXYLICIOUS_IMAGE={}", dir.display());
    let plugins_arg = format!("KROXYLICIOUS_PLUGINS={}", plugins.display());
    let (code, stdout, stderr) = run(
        &made,
        &["ab", "--b", &image_arg, "--b", &plugins_arg],
        &[
            ("TEST", "03.*"),
            ("REPEAT", "1"),
            ("PAIR_PHASES", "1"),
            ("THROUGHPUT", "1000"),
            ("WARM_UP_SECONDS_PRE_TEST", "0"),
        ],
        &results,
    );
    // Side B's path check holds: its proxy loaded the transform filter from the plugin.
    assert!(
        stderr.contains("side B's path check holds"),
        "{stdout}\n{stderr}"
    );
    // One pair states no verdict: nothing to exit 1 for.
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(leftovers(&common::run_id(&stderr)).await, (0, 0));
    let run = only_run(&results);
    let result: Value =
        serde_json::from_slice(&std::fs::read(run.join("03-transform-filter.json")).unwrap())
            .unwrap();
    let check = &result["pair"]["path_check_b"];
    assert_eq!(check["broker_ok"], check["records"], "{check}");
    assert!(
        result["images"]
            .as_object()
            .unwrap()
            .keys()
            .any(|i| i.starts_with(BUILT)),
        "{}",
        result["images"]
    );
}

/// Every bad build is refused naming it, before any container of a run starts: a directory
/// without the layout, an archive that is not one, a start script naming no main class, a
/// plugins directory without jars, plugins for an image reference, a Dockerfile whose build
/// fails (its output quoted), and an image that lacks what a proxy must offer.
#[tokio::test]
async fn a_bad_build_is_refused_naming_what_is_wrong() {
    let _lock = engine_lock(false);
    let made = Built::default();
    let root = tempfile::tempdir().unwrap();
    let results = root.path().join("results");
    let at = |p: &str| root.path().join(p);
    std::fs::create_dir_all(at("nolibs/app/lib")).unwrap();
    std::fs::write(at("nolibs/app/lib/x.jar"), b"x").unwrap();
    std::fs::write(at("broken.tar.gz"), b"not gzip").unwrap();
    std::fs::create_dir_all(at("nomain/libs")).unwrap();
    let whole = distribution(&at("whole"), &[]);
    std::fs::copy(&jars(&whole.join("libs"))[0], at("nomain/libs/a.jar")).unwrap();
    std::fs::create_dir_all(at("noplugins")).unwrap();
    std::fs::create_dir_all(at("failing")).unwrap();
    std::fs::write(
        at("failing/Dockerfile"),
        "FROM scratch\nCOPY missing-file /x\n",
    )
    .unwrap();
    std::fs::create_dir_all(at("bare")).unwrap();
    std::fs::write(
        at("bare/Dockerfile"),
        "FROM scratch\nCOPY Dockerfile /proxy\nENTRYPOINT [\"/proxy\"]\n",
    )
    .unwrap();
    let path = |p: &str| at(p).display().to_string();
    let cases: Vec<(String, String, String)> = vec![
        (path("nolibs"), String::new(), "no libs/*.jar".into()),
        (
            path("broken.tar.gz"),
            String::new(),
            "is not a gzipped tar archive".into(),
        ),
        (
            path("nomain"),
            String::new(),
            "no jar with a main class".into(),
        ),
        (path("nolibs"), path("noplugins"), "no libs/*.jar".into()),
        (
            "perf-tests/kroxylicious:0.12.0".into(),
            path("noplugins"),
            "only a proxy made from a distribution takes plugins".into(),
        ),
        (path("failing"), String::new(), "missing-file".into()),
        (
            path("bare"),
            String::new(),
            "lacks what the suite runs a proxy with: /bin/sh".into(),
        ),
    ];
    for (image, plugins, message) in cases {
        let (code, stdout, stderr) = run(
            &made,
            &["run"],
            &[
                ("KROXYLICIOUS_IMAGE", &image),
                ("KROXYLICIOUS_PLUGINS", &plugins),
                ("TEST", "02.*"),
            ],
            &results,
        );
        assert!(
            code == Some(1) || code == Some(2),
            "{image}: {stdout}\n{stderr}"
        );
        assert!(stderr.contains(&message), "{image} {plugins}: {stderr}");
        assert!(
            stderr.contains(image.trim_start_matches("perf-tests/")) || !plugins.is_empty(),
            "names the build: {stderr}"
        );
        if let Some(id) = stderr.lines().find_map(|l| l.strip_prefix("==> run ")) {
            assert_eq!(leftovers(id.trim()).await, (0, 0), "{image}");
        }
    }
    // A plugins directory without jars, beside a good distribution.
    let dir = distribution(&at("good"), &[]);
    let (code, _, stderr) = run(
        &made,
        &["run", "--dry-run"],
        &[
            ("KROXYLICIOUS_IMAGE", dir.to_str().unwrap()),
            ("KROXYLICIOUS_PLUGINS", &path("noplugins")),
        ],
        &results,
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("KROXYLICIOUS_PLUGINS=") && stderr.contains("holds no .jar"),
        "{stderr}"
    );
    assert!(!results.exists() || std::fs::read_dir(&results).unwrap().count() == 0);
}
