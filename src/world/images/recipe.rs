//! Image recipes: how an image the suite needs is made on a machine with no registry.
//!
//! A Debian recipe yields one binary on the host (taken from an installed Debian package), which
//! the scratch packager turns into a `FROM scratch` image with the binary's
//! shared-library closure; a Maven recipe a Java tree, a Go recipe a static program with busybox.
//! Each image carries a fingerprint label so an up-to-date image is never rebuilt and a warm
//! check costs one inspect per image.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::build::BuildRecipe;
use super::go::GoRecipe;
use super::maven::{self, MavenRecipe};
use super::scratch::{self, ScratchFile, Steps};
use crate::world::engine::Engine;

/// Label holding the fingerprint of what an image was built from.
pub(crate) const FINGERPRINT_LABEL: &str = "io.perf-tests.fingerprint";
/// Label holding the recipe an image was built from, as [`ImageRecipe::describe`] says it.
pub(crate) const RECIPE_LABEL: &str = "io.perf-tests.recipe";
/// Label holding the Maven artifacts a `maven` image was built from.
pub(crate) const ARTIFACTS_LABEL: &str = "io.perf-tests.artifacts";
/// Label holding the JDK (version and directory) a `maven` image's runtime was made from.
pub(crate) const JDK_LABEL: &str = "io.perf-tests.jdk";

/// How an image built here was made, read from its labels (recipe, artifacts, JDK); `None`
/// for an image built elsewhere.
pub(crate) fn made_from(labels: &std::collections::HashMap<String, String>) -> Option<String> {
    let parts: Vec<String> = [
        (RECIPE_LABEL, ""),
        (ARTIFACTS_LABEL, "artifacts "),
        (JDK_LABEL, "JDK "),
    ]
    .iter()
    .filter_map(|(key, prefix)| labels.get(*key).map(|v| format!("{prefix}{v}")))
    .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// One way of making an image.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Recipe {
    /// Package a binary of a Debian package installed on this host.
    Debian(DebianRecipe),
    /// Resolve Maven artifacts and package them with a jlink runtime.
    Maven(MavenRecipe),
    /// `go install` a module from the Go module proxy and package its static program.
    Go(GoRecipe),
    /// A proxy's build: a distribution packaged here, or a Dockerfile the engine builds
    /// (given by a setting, never written in a suite).
    Build(BuildRecipe),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DebianRecipe {
    pub package: String,
    pub bin: PathBuf,
}

/// A recipe as written: a map with exactly one of its kinds (yaml_serde reads enums only from
/// YAML tags, so the one-key map is read through this struct).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecipeFile {
    debian: Option<DebianRecipe>,
    maven: Option<MavenRecipe>,
    go: Option<GoRecipe>,
}

impl TryFrom<RecipeFile> for Recipe {
    type Error = anyhow::Error;
    fn try_from(f: RecipeFile) -> Result<Recipe> {
        match (f.debian, f.maven, f.go) {
            (Some(d), None, None) => Ok(Recipe::Debian(d)),
            (None, Some(m), None) => Ok(Recipe::Maven(m)),
            (None, None, Some(g)) => Ok(Recipe::Go(g)),
            _ => bail!("exactly one of `debian`, `maven` and `go` must be given"),
        }
    }
}

/// An image reference with the recipe that makes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageRecipe {
    pub image: String,
    pub recipe: Recipe,
}

/// Parses the `images:` map of a suite file; `file` names the suite file in errors.
pub fn parse_recipes(
    file: &Path,
    images: &BTreeMap<String, yaml_serde::Value>,
) -> Result<Vec<ImageRecipe>> {
    images
        .iter()
        .map(|(image, value)| {
            let recipe = yaml_serde::from_value::<RecipeFile>(value.clone())
                .map_err(anyhow::Error::from)
                .and_then(Recipe::try_from)
                .and_then(|mut r| {
                    let dir = file.parent().unwrap_or(Path::new("."));
                    match &mut r {
                        Recipe::Maven(m) => m.resolve_paths(dir)?,
                        Recipe::Go(g) => g.resolve_paths(dir)?,
                        Recipe::Debian(_) | Recipe::Build(_) => {}
                    }
                    Ok(r)
                })
                .with_context(|| {
                    format!(
                        "{}: images.\"{image}\": not a valid recipe (expected `debian: {{package, bin}}`, `maven: {{artifacts, jdk, entrypoint, modules, sources, files}}` or `go: {{module, version, files, args}}`)",
                        file.display()
                    )
                })?;
            Ok(ImageRecipe {
                image: image.clone(),
                recipe,
            })
        })
        .collect()
}

/// Where build products are kept between runs, outside any checkout.
pub(crate) fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("PERF_TESTS_CACHE") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("perf-tests")
}

impl ImageRecipe {
    /// A one-line description for progress and errors.
    pub(crate) fn describe(&self) -> String {
        match &self.recipe {
            Recipe::Debian(d) => format!(
                "{} (Debian package {}, {})",
                self.image,
                d.package,
                d.bin.display()
            ),
            Recipe::Maven(m) => format!("{} ({})", self.image, m.describe()),
            Recipe::Go(g) => format!("{} ({})", self.image, g.describe()),
            Recipe::Build(b) => format!("{} ({})", self.image, b.describe()),
        }
    }

    /// How to make the image by hand, for error messages.
    fn by_hand(&self) -> String {
        let make = match &self.recipe {
            Recipe::Debian(d) => {
                format!("apt-get install {} && perf-tests images build", d.package)
            }
            Recipe::Maven(m) => format!("{} && perf-tests images build", m.by_hand()),
            Recipe::Go(g) => format!("{} && perf-tests images build", g.by_hand()),
            Recipe::Build(b) => {
                return format!("check the build it is made from ({})", b.describe())
            }
        };
        format!(
            "to make it by hand run `{make}`, or tag an equivalent image you already have as {}",
            self.image
        )
    }

    /// Where the recipe's binary is on this host once made.
    pub(crate) fn binary_path(&self) -> PathBuf {
        match &self.recipe {
            Recipe::Debian(d) => d.bin.clone(),
            // A Maven, Go or build image is assembled in its work directory.
            Recipe::Maven(_) | Recipe::Go(_) | Recipe::Build(_) => self.work_dir(),
        }
    }

    /// Where a Maven or Go recipe's image content is assembled (kept: the next rebuild
    /// replaces it).
    fn work_dir(&self) -> PathBuf {
        let safe: String = self
            .image
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let kind = match self.recipe {
            Recipe::Go(_) => "go",
            Recipe::Build(_) => "build",
            _ => "maven",
        };
        cache_dir().join(kind).join(safe)
    }

    /// The recipe's binary if it is already on this host.
    fn built_binary(&self) -> Option<PathBuf> {
        let p = self.binary_path();
        p.is_file().then_some(p)
    }

    /// The host binary this recipe packages, making it first when needed.
    fn host_binary(&self) -> Result<PathBuf> {
        match &self.recipe {
            Recipe::Debian(d) => {
                let out = Command::new("dpkg-query")
                    .args(["-W", "-f=${Status}", &d.package])
                    .output();
                let installed = matches!(&out, Ok(o) if o.status.success()
                    && String::from_utf8_lossy(&o.stdout).contains("install ok installed"));
                if !installed {
                    bail!(
                        "image recipe {}: Debian package {} is not installed on this host; {}",
                        self.describe(),
                        d.package,
                        self.by_hand()
                    );
                }
                if !d.bin.is_file() {
                    bail!(
                        "image recipe {}: package {} is installed but {} does not exist; {}",
                        self.describe(),
                        d.package,
                        d.bin.display(),
                        self.by_hand()
                    );
                }
                Ok(d.bin.clone())
            }
            Recipe::Maven(_) | Recipe::Go(_) | Recipe::Build(_) => {
                bail!("image recipe {}: not a binary recipe", self.describe())
            }
        }
    }

    /// The fingerprint of a Maven or Go recipe, known before building from what it is made of;
    /// `None` for a recipe whose fingerprint is its built binary's.
    fn fingerprint_before_building(&self) -> Option<Result<String>> {
        match &self.recipe {
            Recipe::Maven(m) => Some(m.fingerprint()),
            Recipe::Go(g) => Some(g.fingerprint()),
            Recipe::Build(b) => Some(Ok(b.fingerprint.clone())),
            Recipe::Debian(_) => None,
        }
    }

    /// Fingerprint of the recipe and the binary it packages (size and modification time).
    fn fingerprint(&self, bin: &Path) -> Result<String> {
        let meta = std::fs::metadata(bin).with_context(|| format!("reading {}", bin.display()))?;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        format!("{:?}", self.recipe).hash(&mut h);
        meta.len().hash(&mut h);
        meta.modified().ok().hash(&mut h);
        Ok(format!("{:016x}", h.finish()))
    }

    fn image_path(&self) -> String {
        let name = match &self.recipe {
            Recipe::Debian(d) => d
                .bin
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| d.package.clone()),
            Recipe::Maven(m) => return m.entrypoint[0].clone(),
            Recipe::Go(g) => return g.entrypoint()[0].clone(),
            Recipe::Build(_) => return BuildRecipe::entrypoint()[0].clone(),
        };
        format!("/usr/local/bin/{name}")
    }
}

/// What `ensure` did for one image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    UpToDate,
    Built,
}

/// Whether the recipe's image is on the engine and current: an image tagged by hand (no
/// fingerprint) is respected as the user's choice; a Maven recipe's fingerprint is known before
/// building (the recipe, its files and the JDK); another's is checked only when the recipe's
/// binary is on this host.
pub(crate) async fn up_to_date(engine: &Engine, recipe: &ImageRecipe) -> Result<bool> {
    let Some(labels) = engine.image_labels(&recipe.image).await? else {
        return Ok(false);
    };
    let Some(label) = labels.get(FINGERPRINT_LABEL) else {
        return Ok(true);
    };
    let current = match recipe.fingerprint_before_building() {
        Some(f) => Some(f.with_context(|| format!("image recipe {}", recipe.describe()))?),
        None => recipe
            .built_binary()
            .map(|b| recipe.fingerprint(&b))
            .transpose()?,
    };
    Ok(current.is_none_or(|c| &c == label))
}

/// Makes sure the recipe's image is on the engine and current; builds it otherwise.
pub async fn ensure(engine: &Engine, recipe: &ImageRecipe, force: bool) -> Result<Outcome> {
    if !force && up_to_date(engine, recipe).await? {
        return Ok(Outcome::UpToDate);
    }
    if let Recipe::Build(
        b @ BuildRecipe {
            source: super::build::Source::Dockerfile(_),
            ..
        },
    ) = &recipe.recipe
    {
        return build_dockerfile(engine, recipe, b).await;
    }
    if matches!(
        recipe.recipe,
        Recipe::Maven(_) | Recipe::Go(_) | Recipe::Build(_)
    ) {
        return ensure_assembled(engine, recipe).await;
    }
    let image = recipe.image.clone();
    let desc = recipe.describe();
    let r = recipe.clone();
    let bin = tokio::task::spawn_blocking(move || r.host_binary())
        .await
        .context("image build task")??;
    let fingerprint = recipe.fingerprint(&bin)?;
    let image_path = recipe.image_path();
    let labels = BTreeMap::from([
        (FINGERPRINT_LABEL.to_string(), fingerprint),
        (RECIPE_LABEL.to_string(), desc.clone()),
    ]);
    scratch::build_scratch_image(
        engine,
        &image,
        &[ScratchFile::new(&bin, &image_path)],
        vec![image_path.clone()],
        labels,
    )
    .await
    .with_context(|| {
        format!(
            "image recipe {desc}: packaging {} failed; {}",
            bin.display(),
            recipe.by_hand()
        )
    })?;
    Ok(Outcome::Built)
}

/// Builds a Maven or Go recipe's image: its content assembled in its work directory (off the
/// async runtime: resolving, compiling and linking take minutes), then packaged.
async fn ensure_assembled(engine: &Engine, recipe: &ImageRecipe) -> Result<Outcome> {
    let desc = recipe.describe();
    let fingerprint = recipe
        .fingerprint_before_building()
        .expect("an assembled recipe's fingerprint is known before building")
        .with_context(|| format!("image recipe {desc}"))?;
    crate::progress::phase(&format!("building image {desc}"));
    let work = recipe.work_dir();
    let r = recipe.recipe.clone();
    let assembled = tokio::task::spawn_blocking(move || match &r {
        Recipe::Maven(m) => {
            let a = maven::assemble(m, &work)?;
            let labels = BTreeMap::from([
                (ARTIFACTS_LABEL.to_string(), m.artifacts.join(" ")),
                jdk_label(&a.jdk),
            ]);
            Ok((a.files, labels, a.steps))
        }
        Recipe::Go(g) => Ok((
            g.assemble(&work)?,
            BTreeMap::new(),
            Steps::entrypoint(g.entrypoint()),
        )),
        Recipe::Build(b) => {
            let a = b.assemble(&work)?;
            Ok((a.files, BTreeMap::from([jdk_label(&a.jdk)]), a.steps))
        }
        Recipe::Debian(_) => bail!("not an assembled recipe"),
    });
    let (files, mut labels, steps) = assembled
        .await
        .context("image build task")?
        .with_context(|| format!("image recipe {desc}; {}", recipe.by_hand()))?;
    labels.insert(FINGERPRINT_LABEL.to_string(), fingerprint);
    labels.insert(RECIPE_LABEL.to_string(), desc.clone());
    scratch::build_image(engine, &recipe.image, &files, &steps, labels)
        .await
        .with_context(|| format!("image recipe {desc}: packaging failed"))?;
    Ok(Outcome::Built)
}

/// The label naming the JDK a Java image's runtime was made from.
fn jdk_label(jdk: &maven::Jdk) -> (String, String) {
    (
        JDK_LABEL.to_string(),
        format!("{} ({})", jdk.version, jdk.home.display()),
    )
}

/// Builds a Dockerfile build's image with the engine; a failed build's output is quoted.
async fn build_dockerfile(
    engine: &Engine,
    recipe: &ImageRecipe,
    b: &BuildRecipe,
) -> Result<Outcome> {
    let desc = recipe.describe();
    crate::progress::phase(&format!("building image {desc}"));
    let b = b.clone();
    let context = tokio::task::spawn_blocking(move || b.context())
        .await
        .context("image build task")??;
    let labels = BTreeMap::from([
        (
            FINGERPRINT_LABEL.to_string(),
            recipe.fingerprint_before_building().expect("known")?,
        ),
        (RECIPE_LABEL.to_string(), desc.clone()),
    ]);
    engine
        .build_image(&recipe.image, context, labels)
        .await
        .with_context(|| format!("image recipe {desc}"))?;
    Ok(Outcome::Built)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_recipe_kinds_and_names_the_bad_one() {
        let yaml = r#"
b/iperf3:2:
  debian: { package: iperf3, bin: /usr/bin/iperf3 }
c/kms:3:
  go: { module: github.com/nsmithuk/local-kms, version: v0.0.0-20260228092603-2a5e92d09ab6 }
"#;
        let map: BTreeMap<String, yaml_serde::Value> = yaml_serde::from_str(yaml).unwrap();
        let r = parse_recipes(Path::new("suite.yaml"), &map).unwrap();
        assert_eq!(r.len(), 2);
        assert!(matches!(&r[0].recipe, Recipe::Debian(d) if d.package == "iperf3"));
        assert!(matches!(&r[1].recipe, Recipe::Go(g) if g.program() == "local-kms"));
        assert_eq!(r[1].image_path(), "/usr/local/bin/local-kms");

        let bad: BTreeMap<String, yaml_serde::Value> =
            yaml_serde::from_str("x/y:1:\n  debian: { package: a, bin: /a, binary: /b }\n")
                .unwrap();
        let err = format!(
            "{:#}",
            parse_recipes(Path::new("s.yaml"), &bad).unwrap_err()
        );
        assert!(
            err.contains("s.yaml") && err.contains("x/y:1") && err.contains("binary"),
            "{err}"
        );
    }

    #[test]
    fn missing_debian_package_names_recipe_and_the_way_out() {
        let r = ImageRecipe {
            image: "t/none:1".into(),
            recipe: Recipe::Debian(DebianRecipe {
                package: "no-such-package-perf-tests".into(),
                bin: "/usr/bin/none".into(),
            }),
        };
        let err = r.host_binary().unwrap_err().to_string();
        assert!(err.contains("t/none:1"), "{err}");
        assert!(
            err.contains("apt-get install no-such-package-perf-tests"),
            "{err}"
        );
    }
}
