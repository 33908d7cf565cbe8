//! A proxy given as a build rather than an image reference: `KROXYLICIOUS_IMAGE` naming a path
//! (it starts with `/`, `./`, `../` or `~/`, which no image reference does).
//!
//! - A distribution in the upstream layout: a directory, or a `.tar.gz`, `.tgz` or `.zip`
//!   archive, whose top folder holds `libs/*.jar` (and `bin/`, `config/`). It is packaged here
//!   as the suite's own proxy image is (a jlink runtime from a JDK that runs its class files,
//!   busybox, the suite's start script), running the main class its `bin/` start script names
//!   (`JAVA_MAIN_CLASS`), with `KROXYLICIOUS_PLUGINS`' jars (a user's own filters) added to its
//!   class path.
//! - A directory holding a `Dockerfile`: built by the engine, its output quoted when it fails.
//!
//! Either image is tagged by the fingerprint of its content (every file of the build, the
//! plugins, what the packaging adds), so a snapshot built again makes a new image and an
//! unchanged one is reused.

use std::hash::{Hash, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::maven::{self, Jdk};
use super::scratch::{ScratchFile, Steps};

/// The setting whose value may be a build.
pub(crate) const SETTING: &str = "KROXYLICIOUS_IMAGE";
/// The setting naming a directory of jars added to a distribution's class path.
pub(crate) const PLUGINS: &str = "KROXYLICIOUS_PLUGINS";
/// The repository of the images made from builds; the tag is the fingerprint.
pub(crate) const REPOSITORY: &str = "perf-tests/kroxylicious-build";
/// Where the start script runs the main class (as the suite's proxy image does).
const START: &str = "/opt/perf-tests/kroxylicious.sh";
/// The suite's start script and logging configuration, which a distribution's image shares.
const START_SCRIPT: &str = include_str!("../../../scenarios/kroxylicious/images/kroxylicious.sh");
const LOG4J: &str =
    include_str!("../../../scenarios/kroxylicious/images/kroxylicious-log4j2.properties");
/// The main class the suite's start script names, replaced by the distribution's.
const SCRIPT_MAIN: &str = "ProxyMain";

/// Whether a setting's value names a path rather than an image.
pub(crate) fn is_path(value: &str) -> bool {
    ["/", "./", "../", "~/"]
        .iter()
        .any(|p| value.starts_with(p))
}

/// What a build is made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A distribution: its directory, or its archive.
    Distribution(PathBuf),
    /// A directory with a Dockerfile.
    Dockerfile(PathBuf),
}

/// A proxy image made from a build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BuildRecipe {
    pub source: Source,
    /// Jars added to a distribution's class path.
    pub plugins: Option<PathBuf>,
    /// The fingerprint of everything the image is made from (its tag).
    pub fingerprint: String,
}

impl BuildRecipe {
    /// The build `value` names (with `plugins`, a directory of jars, when given), checked as
    /// far as it can be without building: the path, the layout, the archive, the plugins.
    /// Errors name the setting and the value.
    pub(crate) fn new(value: &str, plugins: Option<&str>) -> Result<BuildRecipe> {
        let named = format!("{SETTING}={value}");
        let path = expand(value).with_context(|| named.clone())?;
        let source = classify(&path).with_context(|| named.clone())?;
        let plugins = match plugins {
            None => None,
            Some(dir) => {
                let named = format!("{PLUGINS}={dir}");
                if let Source::Dockerfile(_) = source {
                    bail!(
                        "{named}: {SETTING} is a Dockerfile build, whose image's class path is \
                         its own; add the jars in its Dockerfile"
                    );
                }
                let dir = expand(dir).with_context(|| named.clone())?;
                if plugin_jars(&dir).with_context(|| named.clone())?.is_empty() {
                    bail!("{named}: {} holds no .jar", dir.display());
                }
                Some(dir)
            }
        };
        let mut recipe = BuildRecipe {
            source,
            plugins,
            fingerprint: String::new(),
        };
        recipe.fingerprint = recipe.fingerprint().with_context(|| named.clone())?;
        Ok(recipe)
    }

    /// The image's reference: the repository tagged by the fingerprint.
    pub(crate) fn image(&self) -> String {
        format!("{REPOSITORY}:{}", self.fingerprint)
    }

    pub(crate) fn describe(&self) -> String {
        let (kind, path) = match &self.source {
            Source::Distribution(p) => ("distribution", p),
            Source::Dockerfile(p) => ("Dockerfile", p),
        };
        let plugins = self
            .plugins
            .as_ref()
            .map(|p| format!(" + plugins {}", p.display()))
            .unwrap_or_default();
        format!("{kind} {}{plugins}", path.display())
    }

    /// Every file the image is made from, by content (not by where it is), and what the
    /// packaging adds: the start script, the logging configuration, the JDKs it may choose from.
    fn fingerprint(&self) -> Result<String> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        match &self.source {
            Source::Distribution(p) => {
                "distribution".hash(&mut h);
                hash_tree(p, &mut h)?;
                (START_SCRIPT, LOG4J, START).hash(&mut h);
                for jdk in maven::installed_jdks() {
                    jdk.version.hash(&mut h);
                }
                maven::hash_runtime(&mut h);
                maven::hash_busybox(&mut h);
            }
            Source::Dockerfile(p) => {
                "dockerfile".hash(&mut h);
                hash_tree(p, &mut h)?;
            }
        }
        if let Some(p) = &self.plugins {
            hash_tree(p, &mut h)?;
        }
        Ok(format!("{:016x}", h.finish()))
    }

    /// The image's files (a distribution) in `work`, its entrypoint, and the JDK its runtime
    /// came from.
    pub(crate) fn assemble(&self, work: &Path) -> Result<maven::Assembled> {
        let Source::Distribution(source) = &self.source else {
            bail!("a Dockerfile build is built by the engine");
        };
        if std::fs::metadata(work).is_ok() {
            std::fs::remove_dir_all(work)
                .with_context(|| format!("clearing {}", work.display()))?;
        }
        std::fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
        let root = if source.is_dir() {
            top_folder(source)?
        } else {
            let unpacked = work.join("distribution");
            unpack(source, &unpacked)?;
            top_folder(&unpacked)?
        };
        let mut jars = jars_of(&root.join("libs"))?;
        let main = main_class(&root, &jars)?;
        let needs = class_major(&main.1, &main.0)?;
        let jdk = jdk_for(needs).with_context(|| {
            format!(
                "{} (class file of {}) needs Java {needs}",
                main.1.display(),
                main.0
            )
        })?;
        if let Some(plugins) = &self.plugins {
            jars.extend(plugin_jars(plugins)?);
        }
        let runtime = maven::runtime(&[], &jdk, work)?;
        let script = work.join("kroxylicious.sh");
        std::fs::write(&script, START_SCRIPT.replace(SCRIPT_MAIN, &main.0))?;
        let log4j = work.join("log4j2.properties");
        std::fs::write(&log4j, LOG4J)?;
        let mut files = maven::runtime_files(&runtime)?;
        files.extend(maven::jars_in_libs(&jars));
        files.push(ScratchFile {
            host_path: script,
            image_path: START.to_string(),
            mode: Some(0o755),
        });
        files.push(ScratchFile::new(
            &log4j,
            "/opt/kroxylicious/log4j2.properties",
        ));
        let steps = Steps::entrypoint(Self::entrypoint());
        Ok(maven::Assembled { files, steps, jdk })
    }

    /// The entrypoint of a distribution's image.
    pub(crate) fn entrypoint() -> Vec<String> {
        vec![START.to_string()]
    }

    /// The build context of a Dockerfile build: its directory as a tar.
    pub(crate) fn context(&self) -> Result<Vec<u8>> {
        let Source::Dockerfile(dir) = &self.source else {
            bail!("a distribution is packaged here");
        };
        let mut ar = tar::Builder::new(Vec::new());
        ar.follow_symlinks(true);
        ar.append_dir_all(".", dir)
            .with_context(|| format!("reading {}", dir.display()))?;
        ar.into_inner().context("making the build context")
    }
}

/// The Maven recipe `recipe` of the image `image` as a distribution in the upstream layout under
/// `out` (`out/<image's name>-<tag>/` holding `bin/kroxylicious-start.sh`, `libs/*.jar`,
/// `config/`), its main class the one its entrypoint script runs; returns the top folder. The
/// jars are resolved and the sources compiled in `work`.
pub(crate) fn distribution_of(
    image: &str,
    recipe: &maven::MavenRecipe,
    work: &Path,
    out: &Path,
) -> Result<PathBuf> {
    let script = recipe
        .entrypoint
        .first()
        .and_then(|e| recipe.files.get(e))
        .with_context(|| format!("{image}: its entrypoint is no file of its recipe"))?;
    let text = std::fs::read_to_string(script)?;
    let main = text
        .split("-cp")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().nth(1))
        .map(|m| m.trim_matches(['"', '\'']).to_string())
        .with_context(|| format!("{}: names no main class after -cp", script.display()))?;
    let jdk = maven::find_jdk(&recipe.jdk)?;
    if std::fs::metadata(work).is_ok() {
        std::fs::remove_dir_all(work)?;
    }
    std::fs::create_dir_all(work)?;
    let libs = maven::resolve(recipe, &jdk, work)?;
    if !recipe.sources.is_empty() {
        maven::compile_sources(recipe, &jdk, &libs, work)?;
    }
    let name = image.rsplit('/').next().unwrap_or(image).replace(':', "-");
    let top = out.join(name);
    if std::fs::metadata(&top).is_ok() {
        bail!("{} exists: give an empty --out", top.display());
    }
    for dir in ["bin", "libs", "config"] {
        std::fs::create_dir_all(top.join(dir))?;
    }
    for jar in jars_of(&libs)? {
        std::fs::copy(
            &jar,
            top.join("libs")
                .join(jar.file_name().expect("a jar's name")),
        )?;
    }
    std::fs::write(
        top.join("bin/kroxylicious-start.sh"),
        format!(
            "#!/bin/sh\n# The proxy of {image} in the distribution's layout (made by perf-tests \
             images distribution).\nexport JAVA_MAIN_CLASS={main}\nexec java ${{JAVA_OPTIONS:-}} \
             -cp \"$(dirname \"$0\")/../libs/*\" \"$JAVA_MAIN_CLASS\" \"$@\"\n"
        ),
    )?;
    std::fs::write(
        top.join("config/README"),
        "Configurations are the scenarios' own.\n",
    )?;
    Ok(top)
}

/// `~/` expanded, made absolute, and required to exist.
fn expand(value: &str) -> Result<PathBuf> {
    let path = match value.strip_prefix("~/") {
        Some(rest) => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(rest),
        None => PathBuf::from(value),
    };
    let path = crate::world::compose::absolute(&path)?;
    if std::fs::metadata(&path).is_err() {
        bail!("{} does not exist", path.display());
    }
    Ok(path)
}

/// A directory with a Dockerfile, a distribution's directory or a distribution's archive;
/// an archive's layout is checked from its listing.
fn classify(path: &Path) -> Result<Source> {
    if path.is_dir() {
        if path.join("Dockerfile").is_file() {
            return Ok(Source::Dockerfile(path.to_path_buf()));
        }
        top_folder(path)?;
        return Ok(Source::Distribution(path.to_path_buf()));
    }
    let entries = archive_entries(path)?;
    layout_of(&entries, &path.display().to_string())?;
    Ok(Source::Distribution(path.to_path_buf()))
}

/// The archive kinds a distribution comes in.
fn is_zip(path: &Path) -> bool {
    path.to_string_lossy().ends_with(".zip")
}

fn is_tar_gz(path: &Path) -> bool {
    let name = path.to_string_lossy();
    name.ends_with(".tar.gz") || name.ends_with(".tgz")
}

/// Every file's path in an archive (`/`-separated, relative).
fn archive_entries(path: &Path) -> Result<Vec<String>> {
    let open =
        || std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()));
    if is_zip(path) {
        let zip = zip::ZipArchive::new(open()?)
            .with_context(|| format!("{} is not a zip archive", path.display()))?;
        return zip
            .file_names()
            .map(|n| {
                n.map(|n| n.into_owned())
                    .context("reading the archive's names")
            })
            .collect();
    }
    if is_tar_gz(path) {
        let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(open()?));
        let mut names = Vec::new();
        let entries = ar
            .entries()
            .with_context(|| format!("{} is not a gzipped tar archive", path.display()))?;
        for e in entries {
            let e =
                e.with_context(|| format!("{} is not a gzipped tar archive", path.display()))?;
            names.push(e.path()?.to_string_lossy().into_owned());
        }
        return Ok(names);
    }
    bail!(
        "{} is neither a directory nor a distribution archive (.tar.gz, .tgz or .zip)",
        path.display()
    )
}

/// The top folder of a distribution's entries (the folder holding `libs/`), or what is
/// missing from it.
fn layout_of(entries: &[String], what: &str) -> Result<String> {
    let libs: Vec<&str> = entries
        .iter()
        .filter_map(|e| {
            let e = e.trim_start_matches("./");
            let (dir, file) = e.rsplit_once('/')?;
            let top = dir.strip_suffix("libs")?;
            (file.ends_with(".jar") && (top.is_empty() || top.matches('/').count() == 1))
                .then_some(top)
        })
        .collect();
    let Some(top) = libs.first() else {
        bail!(
            "{what}: no libs/*.jar: a distribution's top folder holds bin/, libs/*.jar and \
             config/, as the proxy's distribution is built"
        );
    };
    Ok(top.trim_end_matches('/').to_string())
}

/// The folder of a distribution's directory holding `libs/`: the directory, or its one folder.
fn top_folder(dir: &Path) -> Result<PathBuf> {
    let mut entries = Vec::new();
    for e in walk(dir)? {
        entries.push(
            e.strip_prefix(dir)
                .expect("under dir")
                .to_string_lossy()
                .into_owned(),
        );
    }
    let top = layout_of(&entries, &dir.display().to_string())?;
    Ok(dir.join(top))
}

/// Unpacks an archive into `into`.
fn unpack(archive: &Path, into: &Path) -> Result<()> {
    std::fs::create_dir_all(into)?;
    let file = std::fs::File::open(archive)?;
    if is_zip(archive) {
        zip::ZipArchive::new(file)?
            .extract(into)
            .with_context(|| format!("unpacking {}", archive.display()))
    } else {
        tar::Archive::new(flate2::read::GzDecoder::new(file))
            .unpack(into)
            .with_context(|| format!("unpacking {}", archive.display()))
    }
}

/// The `.jar` files of `dir`, sorted.
fn jars_of(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut jars: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jar") && p.is_file())
        .collect();
    jars.sort();
    Ok(jars)
}

fn plugin_jars(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        bail!("{} is not a directory of jars", dir.display());
    }
    jars_of(dir)
}

/// The class the distribution runs and the jar holding it: the `JAVA_MAIN_CLASS` its `bin/`
/// start script exports (as the proxy's `kroxylicious-start.sh` does), found in one of `jars`.
fn main_class(root: &Path, jars: &[PathBuf]) -> Result<(String, PathBuf)> {
    let named = std::fs::read_dir(root.join("bin"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .find_map(|text| {
            text.lines().find_map(|l| {
                let v = l
                    .trim()
                    .trim_start_matches("export ")
                    .strip_prefix("JAVA_MAIN_CLASS=")?;
                Some(v.trim_matches(['"', '\'']).to_string())
            })
        });
    let Some(class) = named else {
        bail!(
            "{}: no jar with a main class: no start script in bin/ exports JAVA_MAIN_CLASS (the \
             proxy's bin/kroxylicious-start.sh names io.kroxylicious.app.Kroxylicious)",
            root.display()
        );
    };
    let entry = format!("{}.class", class.replace('.', "/"));
    for jar in jars {
        if zip_names(jar)?.contains(&entry) {
            return Ok((class, jar.clone()));
        }
    }
    bail!(
        "{}: no jar with the main class: no jar of libs/ holds {class} (JAVA_MAIN_CLASS of its \
         start script)",
        root.display()
    )
}

fn zip_names(jar: &Path) -> Result<Vec<String>> {
    let f = std::fs::File::open(jar).with_context(|| format!("cannot read {}", jar.display()))?;
    let zip = zip::ZipArchive::new(f).with_context(|| format!("{} is not a jar", jar.display()))?;
    zip.file_names()
        .map(|n| n.map(|n| n.into_owned()).context("reading the jar's names"))
        .collect()
}

/// The Java major version `class` in `jar` is compiled for (class file version less 44).
fn class_major(jar: &Path, class: &str) -> Result<u32> {
    let f = std::fs::File::open(jar)?;
    let mut zip = zip::ZipArchive::new(f)?;
    let mut entry = zip.by_name(&format!("{}.class", class.replace('.', "/")))?;
    let mut head = [0u8; 8];
    entry.read_exact(&mut head)?;
    if head[..4] != [0xca, 0xfe, 0xba, 0xbe] {
        bail!("{class} in {} is not a class file", jar.display());
    }
    Ok((u32::from(head[6]) << 8 | u32::from(head[7])).saturating_sub(44))
}

/// The oldest JDK on this host that runs class files for Java `needs` (17 at least, as the
/// suite's images).
fn jdk_for(needs: u32) -> Result<Jdk> {
    let mut jdks: Vec<Jdk> = maven::installed_jdks()
        .into_iter()
        .filter(|j| j.major() >= needs.max(17))
        .collect();
    jdks.sort_by_key(|j| j.major());
    jdks.into_iter().next().with_context(|| {
        format!(
            "no JDK {} or later with jlink on this host (JAVA_HOME, /usr/lib/jvm)",
            needs.max(17)
        )
    })
}

/// Every regular file under `dir` (or `dir` itself, a file), sorted.
fn walk(dir: &Path) -> Result<Vec<PathBuf>> {
    if dir.is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("cannot read {}", d.display()))? {
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

/// Each file under `path` (or `path`, a file) into `h`: its path below `path` and its content.
fn hash_tree(path: &Path, h: &mut impl Hasher) -> Result<()> {
    for f in walk(path)? {
        f.strip_prefix(path).unwrap_or(&f).hash(h);
        std::fs::read(&f)
            .with_context(|| format!("cannot read {}", f.display()))?
            .hash(h);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_value_is_a_path_only_as_no_image_reference_can_be() {
        for p in ["/abs", "./here", "../up", "~/home"] {
            assert!(is_path(p), "{p}");
        }
        for i in [
            "perf-tests/kroxylicious:0.12.0",
            "quay.io/k/k:1",
            "localhost:5000/x",
        ] {
            assert!(!is_path(i), "{i}");
        }
    }

    #[test]
    fn the_layout_is_the_folder_holding_libs_jars() {
        let upstream = names(&[
            "kroxylicious-app-0.23.0/bin/kroxylicious-start.sh",
            "kroxylicious-app-0.23.0/libs/a.jar",
            "kroxylicious-app-0.23.0/config/example.yaml",
        ]);
        assert_eq!(
            layout_of(&upstream, "x").unwrap(),
            "kroxylicious-app-0.23.0"
        );
        assert_eq!(
            layout_of(&names(&["libs/a.jar", "bin/s.sh"]), "x").unwrap(),
            ""
        );
        assert_eq!(layout_of(&names(&["./libs/a.jar"]), "x").unwrap(), "");
        let err = layout_of(&names(&["app/lib/a.jar", "app/bin/s.sh"]), "dist.zip")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("dist.zip: no libs/*.jar"), "{err}");
        // Deeper than one folder is no distribution's layout.
        assert!(layout_of(&names(&["a/b/libs/x.jar"]), "x").is_err());
    }

    #[test]
    fn a_build_is_named_by_its_content_not_by_where_it_is() {
        let root = tempfile::tempdir().unwrap();
        let make = |at: &str, jar: &[u8]| -> PathBuf {
            let dir = root.path().join(at);
            std::fs::create_dir_all(dir.join("app/libs")).unwrap();
            std::fs::create_dir_all(dir.join("app/bin")).unwrap();
            std::fs::write(dir.join("app/libs/proxy.jar"), jar).unwrap();
            std::fs::write(dir.join("app/bin/start.sh"), "JAVA_MAIN_CLASS=x.Main\n").unwrap();
            dir
        };
        let one = BuildRecipe::new(make("one", b"v1").to_str().unwrap(), None).unwrap();
        let moved = BuildRecipe::new(make("two", b"v1").to_str().unwrap(), None).unwrap();
        let changed = BuildRecipe::new(make("three", b"v2").to_str().unwrap(), None).unwrap();
        assert_eq!(one.image(), moved.image());
        assert_ne!(one.image(), changed.image());
        assert!(one.image().starts_with("perf-tests/kroxylicious-build:"));

        let plugins = root.path().join("plugins");
        std::fs::create_dir_all(&plugins).unwrap();
        let dist = root.path().join("one");
        let err = format!(
            "{:#}",
            BuildRecipe::new(dist.to_str().unwrap(), plugins.to_str()).unwrap_err()
        );
        assert!(
            err.contains("KROXYLICIOUS_PLUGINS=") && err.contains("holds no .jar"),
            "{err}"
        );
        std::fs::write(plugins.join("filter.jar"), b"f").unwrap();
        let with = BuildRecipe::new(dist.to_str().unwrap(), plugins.to_str()).unwrap();
        assert_ne!(with.image(), one.image());

        let docker = root.path().join("docker");
        std::fs::create_dir_all(&docker).unwrap();
        std::fs::write(docker.join("Dockerfile"), "FROM scratch\n").unwrap();
        let built = BuildRecipe::new(docker.to_str().unwrap(), None).unwrap();
        assert_eq!(built.source, Source::Dockerfile(docker.clone()));
        let err = format!(
            "{:#}",
            BuildRecipe::new(docker.to_str().unwrap(), plugins.to_str()).unwrap_err()
        );
        assert!(err.contains("is a Dockerfile build"), "{err}");

        for (value, expected) in [
            ("/no/such/dist", "does not exist"),
            (
                "./Cargo.toml",
                "neither a directory nor a distribution archive",
            ),
        ] {
            let err = format!("{:#}", BuildRecipe::new(value, None).unwrap_err());
            assert!(
                err.starts_with(&format!("KROXYLICIOUS_IMAGE={value}")) && err.contains(expected),
                "{err}"
            );
        }
        let not_zip = root.path().join("broken.zip");
        std::fs::write(&not_zip, b"not a zip").unwrap();
        let err = format!(
            "{:#}",
            BuildRecipe::new(not_zip.to_str().unwrap(), None).unwrap_err()
        );
        assert!(err.contains("is not a zip archive"), "{err}");
    }
}
