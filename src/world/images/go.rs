//! Go programs from the Go module proxy with no base image: `go install module@version` on this
//! host (statically linked, `CGO_ENABLED=0`), packaged with Debian's static busybox as the shell
//! that health checks and setup steps run in, and the recipe's own files.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::maven::BUSYBOX;
use super::scratch::ScratchFile;

/// Where the program lives in the image.
const BIN_DIR: &str = "/usr/local/bin";

/// A `go:` recipe as written in `suite.yaml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoRecipe {
    /// The main package's module path, e.g. `github.com/nsmithuk/local-kms`.
    pub module: String,
    /// A released version or pseudo-version the Go module proxy serves.
    pub version: String,
    /// Files copied into the image: image path -> file (relative to the suite file).
    #[serde(default)]
    pub files: BTreeMap<String, PathBuf>,
    /// Arguments after the program in the image's entrypoint.
    #[serde(default)]
    pub args: Vec<String>,
}

impl GoRecipe {
    /// Makes `files` relative to `dir` (the file that holds the recipe) and checks what can be
    /// checked without building.
    pub(crate) fn resolve_paths(&mut self, dir: &Path) -> Result<()> {
        if self.module.is_empty() || self.module.contains(char::is_whitespace) {
            bail!("`module` {:?} is not a module path", self.module);
        }
        if !self.version.starts_with('v') {
            bail!(
                "`version` {:?} is not a module version (v1.2.3 or a pseudo-version)",
                self.version
            );
        }
        super::scratch::resolve_files(&mut self.files, dir)
    }

    /// The program's name: the module path's last element (what `go install` names it).
    pub(crate) fn program(&self) -> &str {
        self.module.rsplit('/').next().unwrap_or(&self.module)
    }

    pub(crate) fn describe(&self) -> String {
        format!("Go module {}@{}", self.module, self.version)
    }

    /// The command that builds the program, for messages that tell how to do it by hand.
    pub(crate) fn by_hand(&self) -> String {
        format!(
            "CGO_ENABLED=0 go install {}@{} (Go 1.21 or later)",
            self.module, self.version
        )
    }

    /// The image's entrypoint: the program with the recipe's arguments.
    pub(crate) fn entrypoint(&self) -> Vec<String> {
        let mut e = vec![format!("{BIN_DIR}/{}", self.program())];
        e.extend(self.args.iter().cloned());
        e
    }

    /// The fingerprint of what the image is made from: the module and its version (a released
    /// version never changes, so it stands for the program), the entrypoint, the contents of the
    /// files and the busybox binary.
    pub(crate) fn fingerprint(&self) -> Result<String> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (&self.module, &self.version, self.entrypoint()).hash(&mut h);
        for (target, f) in &self.files {
            let bytes = std::fs::read(f).with_context(|| format!("reading {}", f.display()))?;
            (target, bytes).hash(&mut h);
        }
        if let Ok(meta) = std::fs::metadata(BUSYBOX) {
            meta.len().hash(&mut h);
            meta.modified().ok().hash(&mut h);
        }
        Ok(format!("{:016x}", h.finish()))
    }

    /// Builds the program into `work/bin` and returns every file of the image.
    pub(crate) fn assemble(&self, work: &Path) -> Result<Vec<ScratchFile>> {
        if !Path::new(BUSYBOX).is_file() {
            bail!("{BUSYBOX} is missing: install Debian's busybox-static (the images' shell)");
        }
        let bin_dir = work.join("bin");
        let program = bin_dir.join(self.program());
        let what = format!("go install {}@{}", self.module, self.version);
        let task = crate::progress::task(&format!("{what} (from the Go module proxy)"));
        let out = Command::new("go")
            .arg("install")
            // Smaller and reproducible: no symbol tables, no build paths.
            .args(["-trimpath", "-ldflags=-s -w"])
            .arg(format!("{}@{}", self.module, self.version))
            .env("GOBIN", &bin_dir)
            .env("CGO_ENABLED", "0")
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("cannot run `go` ({what}): is Go 1.21 or later on PATH?"))?;
        drop(task);
        if !out.status.success() || !program.is_file() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
            bail!(
                "{what} exited with {}:\n{}",
                out.status,
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
        let mut files = vec![
            ScratchFile::new(&program, &self.entrypoint()[0]),
            ScratchFile::new(BUSYBOX, BUSYBOX),
        ];
        for (target, source) in &self.files {
            files.push(ScratchFile {
                host_path: source.clone(),
                image_path: target.clone(),
                mode: Some(0o755),
            });
        }
        Ok(files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recipe() -> GoRecipe {
        GoRecipe {
            module: "github.com/nsmithuk/local-kms".into(),
            version: "v0.0.0-20260228092603-2a5e92d09ab6".into(),
            files: BTreeMap::new(),
            args: Vec::new(),
        }
    }

    #[test]
    fn the_program_is_named_after_the_module_and_is_the_entrypoint() {
        let mut r = recipe();
        assert_eq!(r.program(), "local-kms");
        assert_eq!(r.entrypoint(), ["/usr/local/bin/local-kms"]);
        r.args = vec!["-v".into()];
        assert_eq!(r.entrypoint(), ["/usr/local/bin/local-kms", "-v"]);
    }

    #[test]
    fn bad_recipes_are_refused_naming_the_field() {
        let mut r = recipe();
        r.version = "latest".into();
        let err = r.resolve_paths(Path::new(".")).unwrap_err().to_string();
        assert!(err.contains("version") && err.contains("latest"), "{err}");

        let mut r = recipe();
        r.files.insert("relative/x".into(), "x".into());
        let err = r.resolve_paths(Path::new(".")).unwrap_err().to_string();
        assert!(err.contains("relative/x"), "{err}");

        let mut r = recipe();
        r.files.insert("/opt/x".into(), "no-such-file".into());
        let err = r.resolve_paths(Path::new("/tmp")).unwrap_err().to_string();
        assert!(err.contains("/tmp/no-such-file"), "{err}");
    }

    #[test]
    fn the_fingerprint_follows_the_version_and_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key.sh");
        std::fs::write(&file, "a").unwrap();
        let mut r = recipe();
        r.files.insert("/opt/key".into(), file.clone());
        let first = r.fingerprint().unwrap();
        assert_eq!(first, r.fingerprint().unwrap());
        std::fs::write(&file, "b").unwrap();
        let changed = r.fingerprint().unwrap();
        assert_ne!(first, changed);
        r.version = "v1.0.0".into();
        assert_ne!(changed, r.fingerprint().unwrap());
    }
}
