//! Java images from Maven Central with no base image: the artifacts and their runtime
//! dependencies resolved by the machine's `mvn`, a Java runtime made by `jlink` from a chosen
//! JDK, Debian's static busybox as the shell the entrypoint scripts need, and the runtime's
//! shared-library closure from the host.
//!
//! Why busybox-static rather than a Debian base made with debootstrap: one 2 MB static file
//! gives `sh`, `sed`, `tr` and the other tools a start script uses, adds no library closure of
//! its own, and takes no minutes of download and unpacking; debootstrap's minimal base is about
//! 200 MB and needs root and the archive on every rebuild.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::scratch::{self, ScratchFile};

/// Where the Java runtime lives in the image.
pub(crate) const JAVA_HOME: &str = "/opt/java";
/// Where the resolved jars live in the image (`-cp '/opt/app/libs/*'`).
pub(crate) const LIBS: &str = "/opt/app/libs";
/// The shell every image gets (Debian's `busybox-static`).
pub(crate) const BUSYBOX: &str = "/bin/busybox";
/// Where a recipe's `class_data` archive lives in the image; its containers find the path in
/// [`CLASS_DATA_ENV`] (unset in an image without one) for `java -XX:SharedArchiveFile`.
pub(crate) const CLASS_DATA: &str = "/opt/perf-tests/classes.jsa";
/// The variable the entrypoint scripts read [`CLASS_DATA`] from.
pub(crate) const CLASS_DATA_ENV: &str = "PERF_TESTS_CLASS_DATA";
/// The script that makes the archive as the image is built, and where the image holds it.
const CLASS_DATA_SCRIPT: &str = include_str!("class-data.sh");
const CLASS_DATA_SCRIPT_PATH: &str = "/opt/perf-tests/class-data.sh";

/// The modules of the runtime when the recipe names none: what Kafka and Kroxylicious use
/// (networking, management, security providers, JFR; `java.desktop` for the `java.beans`
/// classes log4j loads), and `jcmd` (with the attach mechanism) that loads the profiler
/// (`PROFILE`) into a running JVM.
const DEFAULT_MODULES: &[&str] = &[
    "java.base",
    "java.desktop",
    "java.instrument",
    "java.logging",
    "java.management",
    "java.management.rmi",
    "java.naming",
    "java.net.http",
    "java.rmi",
    "java.scripting",
    "java.security.jgss",
    "java.security.sasl",
    "java.sql",
    "java.xml",
    "jdk.crypto.cryptoki",
    "jdk.crypto.ec",
    "jdk.httpserver",
    "jdk.jcmd",
    "jdk.jfr",
    "jdk.management",
    "jdk.management.agent",
    "jdk.naming.dns",
    "jdk.net",
    "jdk.unsupported",
    "jdk.zipfs",
];

/// Native libraries of `java.desktop` a headless JVM does not load.
const DESKTOP_NATIVE: &[&str] = &[
    "awt",
    "awt_headless",
    "awt_xawt",
    "fontmanager",
    "javajpeg",
    "jawt",
    "jsound",
    "lcms",
    "mlib_image",
    "splashscreen",
];

/// A `maven:` recipe as written in `suite.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MavenRecipe {
    /// `group:artifact:version`, resolved with their runtime dependencies.
    pub artifacts: Vec<String>,
    /// The JDK whose `jlink` makes the runtime (and whose `javac` compiles `sources`): a major
    /// version (`17`, looked up in `JAVA_HOME` and `/usr/lib/jvm`) or a JDK directory.
    #[serde(deserialize_with = "string_or_number")]
    pub jdk: String,
    /// Java modules of the runtime; default: a set that runs Kafka and Kroxylicious.
    #[serde(default)]
    pub modules: Vec<String>,
    /// Java sources compiled against the artifacts and added to the class path as one jar.
    #[serde(default)]
    pub sources: Vec<PathBuf>,
    /// Files copied into the image: image path -> file (relative to the suite file).
    #[serde(default)]
    pub files: BTreeMap<String, PathBuf>,
    /// The image's entrypoint.
    pub entrypoint: Vec<String>,
    /// The application started once as the image is built, so that the classes its JVM loads
    /// are archived for class-data sharing ([`CLASS_DATA`]): its containers then start on
    /// about half the CPU. None: no archive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_data: Option<ClassData>,
}

/// How a recipe's application is started to record its classes (`class_data:`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassData {
    /// The command that starts it, as a container of the image would (an entrypoint script
    /// with the settings it reads, e.g. through `/bin/busybox env`).
    pub command: Vec<String>,
    /// The TCP port it listens on once started: it is stopped then. None: it runs to its end.
    #[serde(default)]
    pub port: Option<u16>,
}

impl ClassData {
    /// The build's step that makes the archive, and the variable that names it to containers.
    fn steps(&self, entrypoint: &[String]) -> scratch::Steps {
        let mut run = vec![
            BUSYBOX.to_string(),
            "sh".into(),
            CLASS_DATA_SCRIPT_PATH.into(),
            CLASS_DATA.into(),
            self.port.unwrap_or(0).to_string(),
        ];
        run.extend(self.command.iter().cloned());
        scratch::Steps {
            run,
            env: vec![(CLASS_DATA_ENV.into(), CLASS_DATA.into())],
            entrypoint: entrypoint.to_vec(),
        }
    }
}

/// `jdk: 17` and `jdk: "17"` alike.
fn string_or_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        S(String),
        N(u64),
    }
    Ok(match Either::deserialize(d)? {
        Either::S(s) => s,
        Either::N(n) => n.to_string(),
    })
}

impl MavenRecipe {
    /// Makes `sources` and `files` relative to `dir` (the suite file's directory) and checks
    /// what can be checked without building.
    pub(crate) fn resolve_paths(&mut self, dir: &Path) -> Result<()> {
        for a in &self.artifacts {
            coordinates(a)?;
        }
        if self.artifacts.is_empty() {
            bail!("`artifacts` is empty");
        }
        if self.entrypoint.is_empty() {
            bail!("`entrypoint` is empty");
        }
        if self
            .class_data
            .as_ref()
            .is_some_and(|c| c.command.is_empty())
        {
            bail!("`class_data.command` is empty");
        }
        for s in &mut self.sources {
            *s = dir.join(&*s);
            if !s.is_file() {
                bail!("source {} does not exist", s.display());
            }
        }
        super::scratch::resolve_files(&mut self.files, dir)
    }

    /// The first artifact stands for the image; the rest are counted.
    pub(crate) fn describe(&self) -> String {
        let more = match self.artifacts.len() {
            1 => String::new(),
            n => format!(" + {} more", n - 1),
        };
        format!(
            "Maven {}{more}, JDK {} runtime",
            self.artifacts[0], self.jdk
        )
    }

    /// The fingerprint of everything the image is made from: the artifacts, the runtime's
    /// modules, the entrypoint, the contents of its files and sources (not where they are, so
    /// another checkout or suite shares the image), the JDK's release file and the busybox
    /// binary. Released artifacts never change, so their coordinates stand for their contents.
    pub(crate) fn fingerprint(&self) -> Result<String> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (&self.artifacts, &self.modules, &self.entrypoint).hash(&mut h);
        if let Some(c) = &self.class_data {
            (c, CLASS_DATA_SCRIPT).hash(&mut h);
        }
        hash_runtime(&mut h);
        let read = |f: &Path| std::fs::read(f).with_context(|| format!("reading {}", f.display()));
        for f in &self.sources {
            (f.file_name(), read(f)?).hash(&mut h);
        }
        for (target, f) in &self.files {
            (target, read(f)?).hash(&mut h);
        }
        let jdk = find_jdk(&self.jdk)?;
        std::fs::read(jdk.home.join("release"))
            .unwrap_or_default()
            .hash(&mut h);
        hash_busybox(&mut h);
        Ok(format!("{:016x}", h.finish()))
    }

    /// The command that resolves the artifacts, for messages that tell how to do it by hand.
    pub(crate) fn by_hand(&self) -> String {
        format!(
            "apt-get install busybox-static maven && mvn dependency:get -Dartifact={}",
            self.artifacts[0]
        )
    }
}

/// How a runtime image is made, part of what any Java image is made from: the runtime's default
/// modules and what it leaves out, where it puts the runtime and the jars.
pub(super) fn hash_runtime(h: &mut impl Hasher) {
    (DEFAULT_MODULES, DESKTOP_NATIVE, LIBS, JAVA_HOME).hash(h);
}

/// The busybox every Java image holds (its size and time: the package's file).
pub(super) fn hash_busybox(h: &mut impl Hasher) {
    if let Ok(meta) = std::fs::metadata(BUSYBOX) {
        meta.len().hash(h);
        meta.modified().ok().hash(h);
    }
}

/// `group:artifact:version` split, or an error naming the value.
fn coordinates(a: &str) -> Result<(&str, &str, &str)> {
    let parts: Vec<&str> = a.split(':').collect();
    match parts.as_slice() {
        [g, n, v] if !g.is_empty() && !n.is_empty() && !v.is_empty() => Ok((g, n, v)),
        _ => bail!("artifact {a:?} is not group:artifact:version"),
    }
}

/// A JDK on this host.
#[derive(Debug, Clone)]
pub(crate) struct Jdk {
    pub home: PathBuf,
    /// `JAVA_VERSION` from its release file, e.g. `17.0.15`.
    pub version: String,
}

impl Jdk {
    pub(crate) fn major(&self) -> u32 {
        major_of(&self.version)
    }
}

fn major_of(version: &str) -> u32 {
    let first = version.split(['.', '+', '-']).next().unwrap_or("0");
    match first.parse::<u32>() {
        Ok(1) => version
            .split('.')
            .nth(1)
            .and_then(|m| m.parse().ok())
            .unwrap_or(1),
        Ok(m) => m,
        Err(_) => 0,
    }
}

fn read_jdk(home: &Path) -> Option<Jdk> {
    let release = std::fs::read_to_string(home.join("release")).ok()?;
    if !home.join("bin/jlink").is_file() {
        return None;
    }
    let version = release.lines().find_map(|l| {
        l.strip_prefix("JAVA_VERSION=")
            .map(|v| v.trim_matches('"').to_string())
    })?;
    Some(Jdk {
        home: home.to_path_buf(),
        version,
    })
}

/// Every JDK (with `jlink`) in `JAVA_HOME` and under `/usr/lib/jvm`.
pub(super) fn installed_jdks() -> Vec<Jdk> {
    let mut homes: Vec<PathBuf> = std::env::var_os("JAVA_HOME")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    if let Ok(dir) = std::fs::read_dir("/usr/lib/jvm") {
        let mut found: Vec<PathBuf> = dir.flatten().map(|e| e.path()).collect();
        found.sort();
        homes.extend(found);
    }
    let mut seen = BTreeSet::new();
    homes
        .into_iter()
        .filter(|h| seen.insert(h.canonicalize().unwrap_or_else(|_| h.clone())))
        .filter_map(|h| read_jdk(&h))
        .collect()
}

/// The JDK a recipe names: a directory, or a major version found on this host.
pub(crate) fn find_jdk(wanted: &str) -> Result<Jdk> {
    if wanted.contains('/') {
        return read_jdk(Path::new(wanted)).with_context(|| {
            format!("jdk {wanted}: not a JDK with jlink (no release file or bin/jlink)")
        });
    }
    let major: u32 = wanted
        .parse()
        .with_context(|| format!("jdk {wanted:?}: neither a major version nor a directory"))?;
    let jdks = installed_jdks();
    if let Some(j) = jdks.iter().find(|j| j.major() == major) {
        return Ok(j.clone());
    }
    let found: Vec<String> = jdks
        .iter()
        .map(|j| format!("{} at {}", j.version, j.home.display()))
        .collect();
    bail!(
        "no JDK {major} with jlink on this host (JAVA_HOME, /usr/lib/jvm); found: {}",
        if found.is_empty() {
            "none".to_string()
        } else {
            found.join(", ")
        }
    )
}

/// Runs a build tool, returning its output; on failure the error quotes its error lines.
fn run_tool(what: &str, cmd: &mut Command) -> Result<String> {
    run_tool_with(what, cmd, |_, _| {})
}

/// Runs a tool with its progress shown while it runs (its elapsed time, and what `on_line`
/// makes of each line it prints); returns its stdout, or fails quoting its error lines.
fn run_tool_with(
    what: &str,
    cmd: &mut Command,
    mut on_line: impl FnMut(&str, &crate::progress::Step),
) -> Result<String> {
    use std::io::BufRead;
    let task = crate::progress::task(what);
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("{what}: cannot start {:?}", cmd.get_program()))?;
    // stderr is read beside stdout so that neither pipe fills while the other is read.
    let stderr = child.stderr.take().expect("piped");
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut std::io::BufReader::new(stderr), &mut text);
        text
    });
    let mut stdout = String::new();
    for line in std::io::BufReader::new(child.stdout.take().expect("piped"))
        .lines()
        .map_while(Result::ok)
    {
        on_line(&line, &task);
        stdout.push_str(&line);
        stdout.push('\n');
    }
    let status = child
        .wait()
        .with_context(|| format!("{what}: waiting for {:?}", cmd.get_program()))?;
    let stderr = errors.join().unwrap_or_default();
    drop(task);
    if !status.success() {
        bail!(
            "{what} failed ({status}):\n{}",
            error_lines(&format!("{stdout}\n{stderr}"))
        );
    }
    Ok(stdout)
}

/// What Maven's transfer lines say so far: files downloaded and their size, as a progress note.
fn downloads(line: &str, count: &mut (u64, f64)) -> Option<String> {
    let rest = line.split_once("Downloaded from ")?.1;
    count.0 += 1;
    // "... (12 kB at 2.0 MB/s)": the size is the first two words in the brackets.
    if let Some((_, size)) = rest.rsplit_once(" (") {
        let mut words = size.split_whitespace();
        if let (Some(n), Some(unit)) = (words.next(), words.next()) {
            let scale = match unit {
                "B" => 1e-6,
                "kB" => 1e-3,
                "MB" => 1.0,
                "GB" => 1e3,
                _ => 0.0,
            };
            count.1 += n.parse::<f64>().unwrap_or(0.0) * scale;
        }
    }
    Some(format!(
        "{} file{} downloaded ({:.1} MB)",
        count.0,
        if count.0 == 1 { "" } else { "s" },
        count.1
    ))
}

/// The lines of a tool's output that say what went wrong: Maven's `[ERROR]` lines (without
/// its generic advice), else the last lines.
fn error_lines(output: &str) -> String {
    // Terminal colour codes, which some Maven versions print even in batch mode.
    let plain = regex::Regex::new("\x1b\\[[0-9;]*m")
        .expect("a valid pattern")
        .replace_all(output, "");
    let output = plain.as_ref();
    let errors: Vec<&str> = output
        .lines()
        .map(str::trim_end)
        .filter(|l| l.starts_with("[ERROR]") && l.len() > "[ERROR] ".len())
        // Maven's advice on how to get more output, the same after every failure.
        .filter(|l| {
            !(l.contains("-e switch")
                || l.contains("-X switch")
                || l.starts_with("[ERROR] [Help ")
                || l.contains("For more information about the errors"))
        })
        .map(|l| l.trim_end_matches(" -> [Help 1]"))
        .take(15)
        .collect();
    let chosen: Vec<&str> = if errors.is_empty() {
        let all: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
        all[all.len().saturating_sub(15)..].to_vec()
    } else {
        errors
    };
    chosen
        .iter()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A POM whose dependencies are the recipe's artifacts, for `dependency:copy-dependencies`.
fn pom(artifacts: &[String]) -> Result<String> {
    let mut deps = String::new();
    for a in artifacts {
        let (g, n, v) = coordinates(a)?;
        deps.push_str(&format!(
            "    <dependency><groupId>{g}</groupId><artifactId>{n}</artifactId><version>{v}</version></dependency>\n"
        ));
    }
    Ok(format!(
        "<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n  <modelVersion>4.0.0</modelVersion>\n  \
         <groupId>perf-tests.image</groupId>\n  <artifactId>image</artifactId>\n  <version>1</version>\n  \
         <packaging>pom</packaging>\n  <dependencies>\n{deps}  </dependencies>\n</project>\n"
    ))
}

/// The class-file major version of the first class in `jar` (61 is Java 17, 65 Java 21).
pub(super) fn class_version(jdk: &Jdk, jar: &Path, scratch_dir: &Path) -> Result<Option<u32>> {
    let list = run_tool(
        "listing a jar",
        Command::new(jdk.home.join("bin/jar")).arg("tf").arg(jar),
    )?;
    let Some(class) = list.lines().find(|l| {
        l.ends_with(".class") && !l.starts_with("META-INF/") && !l.contains("module-info")
    }) else {
        return Ok(None);
    };
    std::fs::create_dir_all(scratch_dir)?;
    run_tool(
        "extracting a class",
        Command::new(jdk.home.join("bin/jar"))
            .current_dir(scratch_dir)
            .arg("xf")
            .arg(jar)
            .arg(class),
    )?;
    let bytes = std::fs::read(scratch_dir.join(class))?;
    Ok((bytes.len() >= 8 && bytes[..4] == [0xca, 0xfe, 0xba, 0xbe])
        .then(|| u32::from(bytes[6]) << 8 | u32::from(bytes[7])))
}

/// What the image is made of (its files, the build's steps) and the JDK its runtime is from.
pub(crate) struct Assembled {
    pub files: Vec<ScratchFile>,
    pub steps: scratch::Steps,
    pub jdk: Jdk,
}

/// Builds the image's content under `work` (resolved jars, compiled sources, the runtime):
/// every file the image holds and the steps that finish it.
pub(crate) fn assemble(recipe: &MavenRecipe, work: &Path) -> Result<Assembled> {
    let jdk = find_jdk(&recipe.jdk)?;
    if !Path::new(BUSYBOX).is_file() {
        bail!("{BUSYBOX} is missing: install Debian's busybox-static (the images' shell)");
    }
    if std::fs::metadata(work).is_ok() {
        std::fs::remove_dir_all(work).with_context(|| format!("clearing {}", work.display()))?;
    }
    std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    let libs = resolve(recipe, &jdk, work)?;
    check_class_versions(recipe, &jdk, &libs, work)?;
    if !recipe.sources.is_empty() {
        compile_sources(recipe, &jdk, &libs, work)?;
    }
    let runtime = make_runtime(recipe, &jdk, work)?;
    let mut files = image_files(recipe, &runtime, &libs)?;
    let steps = match &recipe.class_data {
        None => scratch::Steps::entrypoint(recipe.entrypoint.clone()),
        Some(c) => {
            let script = work.join("class-data.sh");
            std::fs::write(&script, CLASS_DATA_SCRIPT)?;
            files.push(ScratchFile {
                host_path: script,
                image_path: CLASS_DATA_SCRIPT_PATH.into(),
                mode: Some(0o755),
            });
            c.steps(&recipe.entrypoint)
        }
    };
    Ok(Assembled { files, steps, jdk })
}

/// Resolves the artifacts with their runtime dependencies into `work/libs`: Maven picks one
/// version per artifact across the whole tree, as a build would.
pub(super) fn resolve(recipe: &MavenRecipe, jdk: &Jdk, work: &Path) -> Result<PathBuf> {
    let libs = work.join("libs");
    std::fs::write(work.join("pom.xml"), pom(&recipe.artifacts)?)?;
    let what = format!("resolving {} with mvn", recipe.artifacts.join(" "));
    let mut count = (0, 0.0);
    run_tool_with(
        &what,
        Command::new("mvn")
            .current_dir(work)
            .env("JAVA_HOME", &jdk.home)
            // Batch mode without -q: its transfer lines are the progress shown.
            .args(["-B", "-Dstyle.color=never", "-f", "pom.xml"])
            .arg("dependency:copy-dependencies")
            .arg(format!("-DoutputDirectory={}", libs.display()))
            .arg("-DincludeScope=runtime"),
        |line, task| {
            if let Some(note) = downloads(line, &mut count) {
                task.say(&note);
            }
        },
    )?;
    Ok(libs)
}

/// Refuses a JDK older than the artifacts' class files: its image would fail at start.
fn check_class_versions(recipe: &MavenRecipe, jdk: &Jdk, libs: &Path, work: &Path) -> Result<()> {
    for a in &recipe.artifacts {
        let (_, name, version) = coordinates(a)?;
        let jar = libs.join(format!("{name}-{version}.jar"));
        if !jar.is_file() {
            continue;
        }
        if let Some(v) = class_version(jdk, &jar, &work.join("class-check"))? {
            let needs = v.saturating_sub(44);
            if needs > jdk.major() {
                bail!(
                    "{a} is compiled for Java {needs} (class file version {v}) but the recipe's \
                     JDK is {} ({}); set `jdk: {needs}` or later",
                    jdk.version,
                    jdk.home.display()
                );
            }
        }
    }
    Ok(())
}

/// Compiles the recipe's sources against the resolved jars into one more jar among them.
pub(super) fn compile_sources(
    recipe: &MavenRecipe,
    jdk: &Jdk,
    libs: &Path,
    work: &Path,
) -> Result<()> {
    let classes = work.join("classes");
    std::fs::create_dir_all(&classes)?;
    run_tool(
        "compiling the recipe's sources",
        Command::new(jdk.home.join("bin/javac"))
            .arg("-d")
            .arg(&classes)
            .arg("-cp")
            .arg(format!("{}/*", libs.display()))
            .args(&recipe.sources),
    )?;
    run_tool(
        "packaging the compiled sources",
        Command::new(jdk.home.join("bin/jar"))
            .arg("cf")
            .arg(libs.join("perf-tests-sources.jar"))
            .arg("-C")
            .arg(&classes)
            .arg("."),
    )?;
    Ok(())
}

/// Makes the Java runtime with the JDK's `jlink` in `work/runtime`.
fn make_runtime(recipe: &MavenRecipe, jdk: &Jdk, work: &Path) -> Result<PathBuf> {
    runtime(&recipe.modules, jdk, work)
}

/// Makes a Java runtime of `modules` (none: the default set) with the JDK's `jlink` in
/// `work/runtime`.
pub(super) fn runtime(modules: &[String], jdk: &Jdk, work: &Path) -> Result<PathBuf> {
    let runtime = work.join("runtime");
    let modules: Vec<String> = if modules.is_empty() {
        DEFAULT_MODULES.iter().map(|m| m.to_string()).collect()
    } else {
        modules.to_vec()
    };
    let compress = if jdk.major() >= 21 { "zip-6" } else { "2" };
    // The JVM runs headless: the desktop module's native graphics, font and sound libraries are
    // never loaded, and would pull X11, ALSA and FreeType into the image.
    let excluded: Vec<String> = DESKTOP_NATIVE
        .iter()
        .map(|l| format!("**/lib{l}.so"))
        .collect();
    run_tool(
        &format!("making a Java {} runtime with jlink", jdk.version),
        Command::new(jdk.home.join("bin/jlink"))
            .arg("--add-modules")
            .arg(modules.join(","))
            .args(["--strip-debug", "--no-header-files", "--no-man-pages"])
            .arg(format!("--exclude-files={}", excluded.join(",")))
            .arg(format!("--compress={compress}"))
            .arg("--output")
            .arg(&runtime),
    )?;
    Ok(runtime)
}

/// Every file of the image: the runtime with its host libraries, the jars, busybox and the
/// recipe's files.
fn image_files(recipe: &MavenRecipe, runtime: &Path, libs: &Path) -> Result<Vec<ScratchFile>> {
    let mut files = runtime_files(runtime)?;
    let mut jars: Vec<PathBuf> = std::fs::read_dir(libs)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jar"))
        .collect();
    jars.sort();
    files.extend(jars_in_libs(&jars));
    for (target, source) in &recipe.files {
        files.push(ScratchFile {
            host_path: source.clone(),
            image_path: target.clone(),
            mode: Some(0o755),
        });
    }
    Ok(files)
}

/// `jars` at their place on the image's class path.
pub(super) fn jars_in_libs(jars: &[PathBuf]) -> Vec<ScratchFile> {
    jars.iter()
        .map(|j| {
            let name = j.file_name().expect("a jar name").to_string_lossy();
            ScratchFile::new(j, &format!("{LIBS}/{name}"))
        })
        .collect()
}

/// The files of a Java image but its jars and own files: the runtime with the host libraries its
/// native code needs, and busybox.
pub(super) fn runtime_files(runtime: &Path) -> Result<Vec<ScratchFile>> {
    let mut files = Vec::new();
    let runtime_files = tree(runtime)?;
    for f in &runtime_files {
        let rel = f.strip_prefix(runtime).expect("under the runtime");
        files.push(ScratchFile::new(
            f,
            &format!("{JAVA_HOME}/{}", rel.display()),
        ));
    }
    files.extend(runtime_libraries(runtime, &runtime_files)?);
    files.push(ScratchFile::new(BUSYBOX, BUSYBOX));
    Ok(files)
}

/// Every regular file under `dir` (symbolic links followed), sorted.
fn tree(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let p = e?.path();
            match std::fs::metadata(&p) {
                Ok(m) if m.is_dir() => stack.push(p),
                Ok(m) if m.is_file() => out.push(p),
                _ => {}
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The host libraries the runtime's native code needs (libc, libz, libstdc++, …): `ldd` of
/// each ELF file, with the runtime's own library directories on the search path so that what
/// it ships itself (libjvm, libjava) resolves inside it.
fn runtime_libraries(runtime: &Path, files: &[PathBuf]) -> Result<Vec<ScratchFile>> {
    let search = format!(
        "{}:{}",
        runtime.join("lib").display(),
        runtime.join("lib/server").display()
    );
    let mut libs: BTreeMap<String, ScratchFile> = BTreeMap::new();
    for f in files {
        if !scratch::is_elf(f)? {
            continue;
        }
        for lib in scratch::library_closure_in(f, Some(&search))? {
            if !lib.host_path.starts_with(runtime) {
                libs.entry(lib.image_path.clone()).or_insert(lib);
            }
        }
    }
    Ok(libs.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majors_of_java_versions() {
        assert_eq!(major_of("17.0.15"), 17);
        assert_eq!(major_of("25"), 25);
        assert_eq!(major_of("21.0.2+13"), 21);
        assert_eq!(major_of("1.8.0_412"), 8);
    }

    #[test]
    fn maven_s_transfer_lines_are_counted_as_progress() {
        let mut count = (0, 0.0);
        assert_eq!(
            downloads("[INFO] Scanning for projects...", &mut count),
            None
        );
        let a = "[INFO] Downloaded from central: https://repo.maven.apache.org/maven2/a.jar (512 kB at 2.0 MB/s)";
        let b = "[INFO] Downloaded from central: https://repo.maven.apache.org/maven2/b.jar (1.5 MB at 3.0 MB/s)";
        assert_eq!(
            downloads(a, &mut count).as_deref(),
            Some("1 file downloaded (0.5 MB)")
        );
        assert_eq!(
            downloads(b, &mut count).as_deref(),
            Some("2 files downloaded (2.0 MB)")
        );
    }

    #[test]
    fn a_tool_s_output_is_kept_and_its_failure_quoted() {
        let out = run_tool_with(
            "echoing",
            Command::new("sh").args(["-c", "echo one; echo two"]),
            |_, _| {},
        )
        .unwrap();
        assert_eq!(out, "one\ntwo\n");
        let mut seen = Vec::new();
        let err = run_tool_with(
            "failing",
            Command::new("sh").args([
                "-c",
                "echo '[ERROR] no such artifact'; echo oops >&2; exit 3",
            ]),
            |line, _| seen.push(line.to_string()),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(seen, ["[ERROR] no such artifact"]);
        assert!(
            err.contains("failing failed") && err.contains("no such artifact"),
            "{err}"
        );
    }

    #[test]
    fn class_data_runs_the_command_in_the_build_and_names_the_archive_to_containers() {
        let yaml = "artifacts: [a:b:1]\njdk: 17\nentrypoint: [/e]\n\
                    class_data: { command: [/e, --x], port: 9092 }\n";
        let mut recipe: MavenRecipe = yaml_serde::from_str(yaml).unwrap();
        let steps = recipe
            .class_data
            .as_ref()
            .unwrap()
            .steps(&recipe.entrypoint);
        assert_eq!(
            steps.run,
            [
                BUSYBOX,
                "sh",
                CLASS_DATA_SCRIPT_PATH,
                CLASS_DATA,
                "9092",
                "/e",
                "--x"
            ]
        );
        assert_eq!(steps.env, [(CLASS_DATA_ENV.into(), CLASS_DATA.into())]);
        assert_eq!(steps.entrypoint, ["/e"]);
        // No port: the command runs to its end (0 to the script).
        recipe.class_data.as_mut().unwrap().port = None;
        assert_eq!(recipe.class_data.as_ref().unwrap().steps(&[]).run[4], "0");
        let before = recipe.fingerprint().unwrap();
        recipe.class_data = None;
        assert_ne!(
            recipe.fingerprint().unwrap(),
            before,
            "the archive is part of the image"
        );
        recipe.class_data = Some(ClassData {
            command: vec![],
            port: None,
        });
        let err = recipe
            .resolve_paths(Path::new("/"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`class_data.command` is empty"), "{err}");
    }

    #[test]
    fn coordinates_are_checked() {
        assert_eq!(
            coordinates("org.apache.kafka:kafka_2.13:4.4.0").unwrap(),
            ("org.apache.kafka", "kafka_2.13", "4.4.0")
        );
        let err = coordinates("kafka:4.4.0").unwrap_err().to_string();
        assert!(err.contains("kafka:4.4.0"), "{err}");
    }

    #[test]
    fn pom_lists_every_artifact() {
        let p = pom(&["a.b:c:1".into(), "d:e:2.0".into()]).unwrap();
        assert!(p.contains("<groupId>a.b</groupId><artifactId>c</artifactId><version>1</version>"));
        assert!(p.contains("<artifactId>e</artifactId><version>2.0</version>"));
    }

    #[test]
    fn maven_errors_are_quoted_without_its_advice() {
        let out = "[INFO] x\n\x1b[0m[ERROR] Failed to execute goal: Could not find artifact a:b:jar:9 -> [Help 1]\n\
                   [ERROR] \n[ERROR] Re-run Maven using the -X switch to enable full debug logging.\n";
        let e = error_lines(out);
        assert!(e.contains("Could not find artifact a:b:jar:9"), "{e}");
        assert!(!e.contains("-X switch") && !e.contains("Help 1"), "{e}");
    }

    #[test]
    fn an_unknown_jdk_lists_what_is_there() {
        let err = find_jdk("3").unwrap_err().to_string();
        assert!(err.contains("no JDK 3"), "{err}");
        let err = find_jdk("/no/such/jdk").unwrap_err().to_string();
        assert!(err.contains("/no/such/jdk"), "{err}");
    }
}
