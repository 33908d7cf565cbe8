//! Whether this host can run a planned run: the engine, the tools the images still to be made
//! need, the reach of Maven's repository, and the disk the broker's log takes. `perf-tests
//! doctor` prints every check; `run` runs the same checks before it builds anything and stops
//! with their message rather than failing minutes later.

use std::path::Path;
use std::time::Duration;

use crate::plan::{ImageSource, RunPlan};
use crate::settings::Settings;
use crate::world::engine::{Engine, EngineFacts};
use crate::world::images::recipe::{self, ImageRecipe, Recipe};

/// One check: what it looked at and what it found (a problem is `Err`, in one line).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Check {
    pub what: &'static str,
    pub found: Result<String, String>,
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.found {
            Ok(detail) => write!(f, "ok    {:<8} {detail}", self.what),
            Err(problem) => write!(f, "FAIL  {:<8} {problem}", self.what),
        }
    }
}

fn ok(what: &'static str, detail: impl Into<String>) -> Check {
    Check {
        what,
        found: Ok(detail.into()),
    }
}

fn fail(what: &'static str, problem: impl Into<String>) -> Check {
    Check {
        what,
        found: Err(problem.into()),
    }
}

/// Bytes a record takes in the broker's log beyond its value: its share of the batch header and
/// its own length, offset and timestamp deltas (Kafka's record format v2, no key, no headers).
const RECORD_OVERHEAD_BYTES: u64 = 32;

/// What making one image takes on the disk, at most: the image itself (about 100 MiB for the
/// JVM images), its resolved jars and jlink runtime in the build cache, and Maven's downloads.
const IMAGE_BYTES: u64 = 512 << 20;

/// How long connecting to Maven's repository may take before it counts as unreachable.
const REACH_WITHIN: Duration = Duration::from_secs(5);

/// Every check for `run`, in the order a user would fix them.
pub(crate) async fn check(run: &RunPlan) -> Vec<Check> {
    let engine = match Engine::connect("doctor").await {
        Ok(engine) => engine,
        Err(e) => return vec![fail("engine", format!("{e:#}"))],
    };
    let facts = match engine.facts().await {
        Ok(facts) => facts,
        Err(e) => return vec![fail("engine", format!("{e:#}"))],
    };
    let mut checks = vec![ok("engine", describe(&engine, &facts))];
    let to_make = match images_to_make(&engine, run).await {
        Ok(to_make) => to_make,
        Err(e) => return [checks, vec![fail("images", format!("{e:#}"))]].concat(),
    };
    checks.push(ok(
        "images",
        if to_make.is_empty() {
            "every image the plan makes is on the engine and current".to_string()
        } else {
            let names: Vec<&str> = to_make.iter().map(|r| r.image.as_str()).collect();
            format!("to be made: {}", names.join(", "))
        },
    ));
    checks.extend(tools(&to_make));
    checks.extend(profiler(run));
    if let Some(c) = maven_reach(&to_make).await {
        checks.push(c);
    }
    checks.push(disk(&engine, &facts, run, to_make.len()));
    checks
}

fn describe(engine: &Engine, facts: &EngineFacts) -> String {
    format!(
        "Docker {} at {}: storage driver {}, cgroup v{}, {} CPUs, {:.1} GiB",
        facts.version,
        engine.host(),
        facts.storage_driver,
        facts.cgroup_version,
        facts.cpus,
        facts.memory_bytes as f64 / (1u64 << 30) as f64
    )
}

/// The images the run would have to make: those with a recipe that are missing or stale.
async fn images_to_make(engine: &Engine, run: &RunPlan) -> anyhow::Result<Vec<ImageRecipe>> {
    let mut to_make: Vec<ImageRecipe> = Vec::new();
    for i in run.cells.iter().flat_map(|c| &c.plan.images) {
        let ImageSource::Recipe(r) = &i.source else {
            continue;
        };
        if to_make.iter().any(|m| m.image == r.image) {
            continue;
        }
        if !recipe::up_to_date(engine, r).await? {
            to_make.push(r.clone());
        }
    }
    Ok(to_make)
}

/// What making each of `to_make` needs on this host, one check per kind of tool.
fn tools(to_make: &[ImageRecipe]) -> Vec<Check> {
    let mut checks = Vec::new();
    let names = |pick: fn(&Recipe) -> bool| -> Vec<&str> {
        to_make
            .iter()
            .filter(|r| pick(&r.recipe))
            .map(|r| r.image.as_str())
            .collect()
    };
    let maven = names(|r| matches!(r, Recipe::Maven(_)));
    if !maven.is_empty() {
        checks.push(maven_check(to_make, &maven));
    }
    let go = names(|r| matches!(r, Recipe::Go(_)));
    if !go.is_empty() {
        let mut missing: Vec<&str> = Vec::new();
        if !crate::world::machine::on_path("go") {
            missing.push("go (Go 1.21 or later, https://go.dev/dl)");
        }
        if !Path::new(crate::world::images::maven::BUSYBOX).is_file() {
            missing.push("/bin/busybox (Debian: apt-get install busybox-static)");
        }
        checks.push(if missing.is_empty() {
            ok("go", format!("go and busybox, to make {}", go.join(", ")))
        } else {
            fail(
                "go",
                format!("to make {}: missing {}", go.join(", "), missing.join("; ")),
            )
        });
    }
    for r in to_make {
        if let Recipe::Debian(d) = &r.recipe {
            checks.push(if d.bin.is_file() {
                ok(
                    "package",
                    format!(
                        "{} from {}, to make {}",
                        d.bin.display(),
                        d.package,
                        r.image
                    ),
                )
            } else {
                fail(
                    "package",
                    format!(
                        "to make {}: {} is missing (Debian: apt-get install {})",
                        r.image,
                        d.bin.display(),
                        d.package
                    ),
                )
            });
        }
    }
    checks
}

/// What making the Maven recipes `maven` (of `to_make`) needs: mvn, busybox, and for each the
/// JDK it names, with jlink.
fn maven_check(to_make: &[ImageRecipe], maven: &[&str]) -> Check {
    let mut missing: Vec<String> = Vec::new();
    if !crate::world::machine::on_path("mvn") {
        missing.push("mvn (Debian: apt-get install maven)".into());
    }
    if !Path::new(crate::world::images::maven::BUSYBOX).is_file() {
        missing.push(format!(
            "{} (Debian: apt-get install busybox-static)",
            crate::world::images::maven::BUSYBOX
        ));
    }
    for r in to_make {
        if let Recipe::Maven(m) = &r.recipe {
            match crate::world::images::maven::find_jdk(&m.jdk) {
                Ok(jdk) if jdk.home.join("bin/jlink").is_file() => {}
                Ok(jdk) => missing.push(format!(
                    "jlink in the JDK at {} (for {}; Debian: apt-get install openjdk-17-jdk-headless)",
                    jdk.home.display(),
                    r.image
                )),
                Err(e) => missing.push(format!("{e:#} (for {})", r.image)),
            }
        }
    }
    missing.dedup();
    if missing.is_empty() {
        ok(
            "maven",
            format!(
                "mvn, a JDK with jlink and busybox, to make {}",
                maven.join(", ")
            ),
        )
    } else {
        fail(
            "maven",
            format!(
                "to make {}: missing {}",
                maven.join(", "),
                missing.join("; ")
            ),
        )
    }
}

/// With PROFILE: what resolving the profiler (the first time) and rendering its flame graphs
/// need on this host.
fn profiler(run: &RunPlan) -> Option<Check> {
    run.cells[0].settings.profile?;
    let cached = crate::world::images::recipe::cache_dir().join("profiler");
    let resolved = ["async-profiler-4.1.jar", "jfr-converter-4.1.jar"]
        .iter()
        .all(|j| cached.join(j).is_file());
    let mut missing = Vec::new();
    if !resolved && !crate::world::machine::on_path("mvn") {
        missing.push(
            "mvn (to resolve async-profiler from Maven Central; Debian: apt-get install maven)",
        );
    }
    let java = std::env::var_os("JAVA_HOME")
        .map(|h| Path::new(&h).join("bin/java").is_file())
        .unwrap_or(false)
        || crate::world::machine::on_path("java");
    if !java {
        missing.push(
            "java (to make the flame graphs; Debian: apt-get install openjdk-17-jdk-headless)",
        );
    }
    if !Path::new(crate::world::images::maven::BUSYBOX).is_file() {
        missing.push("/bin/busybox (to take the agent out of its jar; Debian: apt-get install busybox-static)");
    }
    Some(if missing.is_empty() {
        ok(
            "profile",
            "mvn or the cached profiler, java and busybox, for PROFILE",
        )
    } else {
        fail("profile", format!("PROFILE needs: {}", missing.join("; ")))
    })
}

/// Whether Maven's repository answers, when an image to make needs it: the mirror of
/// `~/.m2/settings.xml` when it names one, else Maven Central.
async fn maven_reach(to_make: &[ImageRecipe]) -> Option<Check> {
    if !to_make.iter().any(|r| matches!(r.recipe, Recipe::Maven(_))) {
        return None;
    }
    let settings = std::env::var_os("HOME").map(|h| Path::new(&h).join(".m2/settings.xml"));
    let mirror = settings
        .as_deref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|xml| mirror_url(&xml));
    let url = mirror.unwrap_or_else(|| "https://repo.maven.apache.org/maven2".to_string());
    let Some(addr) = host_port(&url) else {
        return Some(fail(
            "maven",
            format!("cannot read the repository address {url}"),
        ));
    };
    let reached = tokio::time::timeout(REACH_WITHIN, tokio::net::TcpStream::connect(&addr)).await;
    Some(match reached {
        Ok(Ok(_)) => ok("maven", format!("the repository {url} answers")),
        Ok(Err(e)) => fail("maven", format!("no route to the Maven repository {url} ({addr}: {e}): the images to make resolve their artifacts there")),
        Err(_) => fail("maven", format!("no answer from the Maven repository {url} ({addr}) within {} s: the images to make resolve their artifacts there", REACH_WITHIN.as_secs())),
    })
}

/// The first mirror's `<url>` in a Maven settings file.
fn mirror_url(xml: &str) -> Option<String> {
    let re = regex::Regex::new(r"(?s)<mirror>.*?<url>\s*([^<\s]+)\s*</url>").ok()?;
    Some(re.captures(xml)?[1].to_string())
}

/// `host:port` of an http(s) URL, the scheme's port when it names none.
fn host_port(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split('/').next()?.rsplit('@').next()?;
    if authority.is_empty() {
        return None;
    }
    if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        return Some(authority.to_string());
    }
    let port = match scheme {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    Some(format!("{authority}:{port}"))
}

/// Bytes the broker's log holds at most during one measurement of `settings`: the warm-up's and
/// the measured records; `None` for an unthrottled DURATION run, whose count nothing bounds.
pub(crate) fn log_bytes(settings: &Settings) -> Option<u64> {
    let measured = match settings.duration {
        Some(d) => match settings.throughput.limit() {
            Some(rate) => (d + settings.duration_warm_up)
                .as_secs()
                .saturating_mul(rate),
            None => return None,
        },
        None => settings.num_records,
    };
    let records = measured
        .saturating_add(settings.warm_up_pre_test)
        .saturating_add(settings.warm_up_post_broker_start);
    Some(records.saturating_mul(settings.record_size + RECORD_OVERHEAD_BYTES))
}

/// Whether the engine's disk holds the broker's log: each measurement's topic is deleted after
/// it, but the broker removes a deleted topic's files only after a delay (a minute by default),
/// so two measurements' logs may be on the disk at once.
fn disk(engine: &Engine, facts: &EngineFacts, run: &RunPlan, images: usize) -> Check {
    // The combination whose log is largest; none when one of them has no bound.
    let mut largest: Option<(u64, &Settings)> = None;
    for settings in run.cells.iter().map(|c| &c.settings) {
        let Some(bytes) = log_bytes(settings) else {
            return ok(
                "disk",
                "not estimated: an unthrottled DURATION run's record count is unbounded",
            );
        };
        if largest.is_none_or(|(b, _)| bytes > b) {
            largest = Some((bytes, settings));
        }
    }
    let Some((bytes, settings)) = largest else {
        return ok("disk", "nothing to measure");
    };
    let log = bytes.saturating_mul(2);
    let need = log.saturating_add(images as u64 * IMAGE_BYTES);
    if !engine.is_local() {
        return ok(
            "disk",
            format!(
                "not checked: the engine at {} is not this host",
                engine.host()
            ),
        );
    }
    let root = Path::new(&facts.root_dir);
    let Some(free) = free_bytes(root) else {
        return ok(
            "disk",
            format!(
                "not checked: cannot read the free space of {}",
                root.display()
            ),
        );
    };
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let for_images = if images == 0 {
        String::new()
    } else {
        format!(
            " and {images} images to make about {:.1} GiB",
            gib(need - log)
        )
    };
    if free < need {
        fail(
            "disk",
            format!(
                "{} has {:.1} GiB free; the broker's log needs about {:.1} GiB at NUM_RECORDS={} of RECORD_SIZE={} bytes (two measurements' topics, as deleted topics linger){for_images}: lower NUM_RECORDS or free space",
                root.display(),
                gib(free),
                gib(log),
                settings.num_records,
                settings.record_size
            ),
        )
    } else {
        ok(
            "disk",
            format!(
                "{} has {:.1} GiB free; the broker's log needs about {:.1} GiB{for_images}",
                root.display(),
                gib(free),
                gib(log)
            ),
        )
    }
}

/// Free bytes of the file system holding `dir`, as `df` reports them to a non-root user.
fn free_bytes(dir: &Path) -> Option<u64> {
    let out = std::process::Command::new("df")
        .arg("-Pk")
        .arg(dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let kib: u64 = text
        .lines()
        .nth(1)?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mirror_of_the_maven_settings_is_the_repository() {
        let xml = "<settings><mirrors><mirror><id>m</id><mirrorOf>*</mirrorOf>\n<url> http://127.0.0.1:9/repo </url></mirror></mirrors></settings>";
        assert_eq!(mirror_url(xml).as_deref(), Some("http://127.0.0.1:9/repo"));
        assert_eq!(mirror_url("<settings/>"), None);
    }

    #[test]
    fn a_repository_address_has_the_scheme_s_port_unless_it_names_one() {
        assert_eq!(
            host_port("https://repo.maven.apache.org/maven2").as_deref(),
            Some("repo.maven.apache.org:443")
        );
        assert_eq!(
            host_port("http://127.0.0.1:9/repo").as_deref(),
            Some("127.0.0.1:9")
        );
        assert_eq!(host_port("http://u:p@nexus/x").as_deref(), Some("nexus:80"));
        assert_eq!(host_port("file:///m2"), None);
    }

    #[test]
    fn the_log_holds_the_warm_up_and_the_measured_records_with_their_overhead() {
        let s = Settings {
            num_records: 1000,
            record_size: 1024,
            warm_up_pre_test: 100,
            warm_up_post_broker_start: 0,
            ..Settings::default()
        };
        assert_eq!(log_bytes(&s), Some(1100 * (1024 + RECORD_OVERHEAD_BYTES)));
        let timed = Settings {
            duration: Some(std::time::Duration::from_secs(10)),
            duration_warm_up: std::time::Duration::from_secs(2),
            throughput: crate::settings::rate::Rate::per_second(100).unwrap(),
            ..s.clone()
        };
        assert_eq!(
            log_bytes(&timed),
            Some((1200 + 100) * (1024 + RECORD_OVERHEAD_BYTES))
        );
        let unbounded = Settings {
            throughput: crate::settings::rate::Rate::Unlimited,
            ..timed
        };
        assert_eq!(log_bytes(&unbounded), None);
    }
}
