//! Images built with no base image and no registry: `FROM scratch`, the given files, and the
//! shared-library closure (as `ldd` reports it) of every dynamically linked binary among them.
//!
//! Name resolution: the binaries use the host's glibc (2.34 or later has the `files` and `dns`
//! lookups built in), and the engine bind-mounts `/etc/hosts` and `/etc/resolv.conf` into every
//! container, so a scratch image resolves other containers by name on a user network without
//! `/etc/nsswitch.conf` (glibc then defaults to `files dns`).

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::world::engine::Engine;

/// One file of a scratch image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScratchFile {
    /// Where the content is read from (symlinks are followed).
    pub host_path: PathBuf,
    /// Absolute path inside the image.
    pub image_path: String,
    /// Permission bits; `None` keeps the host file's.
    pub mode: Option<u32>,
}

impl ScratchFile {
    /// A host file placed at `image_path`, keeping its mode.
    pub fn new(host_path: impl Into<PathBuf>, image_path: &str) -> ScratchFile {
        ScratchFile {
            host_path: host_path.into(),
            image_path: image_path.to_string(),
            mode: None,
        }
    }
}

/// Makes a recipe's `files` (image path -> file) relative to `dir` (the file that holds the
/// recipe), refusing an image path that is not absolute and a file that does not exist.
pub(crate) fn resolve_files(files: &mut BTreeMap<String, PathBuf>, dir: &Path) -> Result<()> {
    for (target, f) in files {
        if !target.starts_with('/') {
            bail!("files: image path {target:?} is not absolute");
        }
        *f = dir.join(&*f);
        if !f.is_file() {
            bail!("files.{target}: {} does not exist", f.display());
        }
    }
    Ok(())
}

/// The shared libraries `binary` needs at run time, including the dynamic loader, each at the
/// path the loader looks for it (the soname path), read from its resolved target.
/// Empty for a statically linked binary.
pub(crate) fn library_closure(binary: &Path) -> Result<Vec<ScratchFile>> {
    library_closure_in(binary, None)
}

/// [`library_closure`] with `search` (a `LD_LIBRARY_PATH`) searched first, for a binary whose
/// own libraries come with it (a Java runtime's `lib/`).
pub(crate) fn library_closure_in(binary: &Path, search: Option<&str>) -> Result<Vec<ScratchFile>> {
    let mut ldd = Command::new("ldd");
    if let Some(search) = search {
        ldd.env("LD_LIBRARY_PATH", search);
    }
    let out = ldd
        .arg(binary)
        .output()
        .with_context(|| format!("cannot run ldd on {}", binary.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        if stdout.contains("not a dynamic executable")
            || stderr.contains("not a dynamic executable")
        {
            return Ok(Vec::new());
        }
        bail!("ldd {} failed: {}", binary.display(), stderr.trim());
    }
    parse_ldd(&stdout).with_context(|| format!("ldd {}", binary.display()))
}

/// Parses `ldd` output into library files (virtual libraries such as linux-vdso are skipped).
fn parse_ldd(text: &str) -> Result<Vec<ScratchFile>> {
    let mut libs = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.contains("statically linked") {
            continue;
        }
        if line.contains("=> not found") {
            bail!("missing shared library: {line}");
        }
        let path = match line.split_once("=>") {
            Some((_, rhs)) => rhs.trim(),
            None => line,
        };
        let path = path.split(" (").next().unwrap_or("").trim();
        if path.starts_with('/') {
            libs.push(ScratchFile::new(path, path));
        }
    }
    Ok(libs)
}

/// `files` plus the library closure of each, deduplicated by image path.
pub(crate) fn with_libraries(files: &[ScratchFile]) -> Result<Vec<ScratchFile>> {
    let mut all: BTreeMap<String, ScratchFile> = BTreeMap::new();
    for f in files {
        all.insert(f.image_path.clone(), f.clone());
    }
    for f in files {
        if is_elf(&f.host_path)? {
            for lib in library_closure(&f.host_path)? {
                all.entry(lib.image_path.clone()).or_insert(lib);
            }
        }
    }
    Ok(all.into_values().collect())
}

pub(crate) fn is_elf(path: &Path) -> Result<bool> {
    use std::io::Read;
    let mut magic = [0u8; 4];
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    Ok(f.read_exact(&mut magic).is_ok() && magic == *b"\x7fELF")
}

/// What an image's Dockerfile does after copying its files in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Steps {
    /// A command run once in the image as it is built (exec form: no shell needed); its
    /// output is part of the image.
    pub run: Vec<String>,
    /// Environment variables of the image's containers (set after `run`).
    pub env: Vec<(String, String)>,
    /// The image's entrypoint.
    pub entrypoint: Vec<String>,
}

impl Steps {
    /// Only an entrypoint.
    pub(crate) fn entrypoint(entrypoint: Vec<String>) -> Steps {
        Steps {
            entrypoint,
            ..Steps::default()
        }
    }
}

/// The build context: a Dockerfile and a `rootfs/` tree copied into the image.
fn build_context(files: &[ScratchFile], steps: &Steps) -> Result<Vec<u8>> {
    let mut dockerfile = String::from("FROM scratch\nCOPY rootfs/ /\n");
    if !steps.run.is_empty() {
        dockerfile.push_str(&format!("RUN {}\n", serde_json::to_string(&steps.run)?));
    }
    for (name, value) in &steps.env {
        dockerfile.push_str(&format!("ENV {name}={}\n", serde_json::to_string(value)?));
    }
    if !steps.entrypoint.is_empty() {
        dockerfile.push_str(&format!(
            "ENTRYPOINT {}\n",
            serde_json::to_string(&steps.entrypoint)?
        ));
    }
    let mut tar = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(dockerfile.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append_data(&mut header, "Dockerfile", dockerfile.as_bytes())?;
    for f in files {
        let rel = f.image_path.trim_start_matches('/');
        if rel.is_empty() || rel.split('/').any(|c| c == "..") {
            bail!("invalid image path {:?}", f.image_path);
        }
        let data = std::fs::read(&f.host_path)
            .with_context(|| format!("cannot read {}", f.host_path.display()))?;
        let mode = match f.mode {
            Some(m) => m,
            None => {
                use std::os::unix::fs::PermissionsExt;
                std::fs::metadata(&f.host_path)?.permissions().mode() & 0o7777
            }
        };
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(mode);
        header.set_cksum();
        tar.append_data(&mut header, format!("rootfs/{rel}"), data.as_slice())?;
    }
    Ok(tar.into_inner()?)
}

/// Builds `tag` from `files` (plus their shared libraries) with `entrypoint` and `labels`,
/// through the engine's build API. Returns the image id. A failed build leaves no image.
pub async fn build_scratch_image(
    engine: &Engine,
    tag: &str,
    files: &[ScratchFile],
    entrypoint: Vec<String>,
    labels: BTreeMap<String, String>,
) -> Result<String> {
    let all = with_libraries(files)?;
    build_image(engine, tag, &all, &Steps::entrypoint(entrypoint), labels).await
}

/// Builds `tag` from exactly `files` (their libraries already among them), then `steps`.
pub(crate) async fn build_image(
    engine: &Engine,
    tag: &str,
    files: &[ScratchFile],
    steps: &Steps,
    labels: BTreeMap<String, String>,
) -> Result<String> {
    let context = build_context(files, steps)?;
    let _sending = crate::progress::task(&format!(
        "sending {:.0} MB to the engine and building {tag}",
        context.len() as f64 / 1e6
    ));
    engine.build_image(tag, context, labels).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ldd_output() {
        let text = "\tlinux-vdso.so.1 (0x00007ffc)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        let libs = parse_ldd(text).unwrap();
        let paths: Vec<_> = libs.iter().map(|l| l.image_path.as_str()).collect();
        assert_eq!(
            paths,
            vec![
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2"
            ]
        );
        assert!(parse_ldd("\tlibfoo.so.1 => not found\n").is_err());
        assert!(parse_ldd("\tstatically linked\n").unwrap().is_empty());
    }

    #[test]
    fn closure_of_a_host_binary_includes_loader_and_libc() {
        let libs = library_closure(Path::new("/bin/sleep")).unwrap();
        let paths: Vec<_> = libs.iter().map(|l| l.image_path.as_str()).collect();
        assert!(paths.contains(&"/lib64/ld-linux-x86-64.so.2"), "{paths:?}");
        assert!(paths.iter().any(|p| p.ends_with("/libc.so.6")), "{paths:?}");
    }

    #[test]
    fn context_holds_dockerfile_and_files() {
        let files = vec![ScratchFile {
            host_path: "/bin/sleep".into(),
            image_path: "/bin/sleep".into(),
            mode: Some(0o755),
        }];
        let steps = Steps {
            run: vec!["/bin/sleep".into(), "0".into()],
            env: vec![("WHERE".into(), "/opt/x y".into())],
            entrypoint: vec!["/bin/sleep".into()],
        };
        let ctx = build_context(&files, &steps).unwrap();
        let mut ar = tar::Archive::new(ctx.as_slice());
        let names: Vec<String> = ar
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect();
        assert_eq!(names, vec!["Dockerfile", "rootfs/bin/sleep"]);
        let mut ar = tar::Archive::new(ctx.as_slice());
        let mut dockerfile = String::new();
        std::io::Read::read_to_string(
            &mut ar.entries().unwrap().next().unwrap().unwrap(),
            &mut dockerfile,
        )
        .unwrap();
        assert_eq!(
            dockerfile,
            "FROM scratch\nCOPY rootfs/ /\nRUN [\"/bin/sleep\",\"0\"]\nENV WHERE=\"/opt/x y\"\n\
             ENTRYPOINT [\"/bin/sleep\"]\n"
        );
        let bad = [ScratchFile::new("/bin/sleep", "/../x")];
        assert!(build_context(&bad, &Steps::default()).is_err());
    }
}
