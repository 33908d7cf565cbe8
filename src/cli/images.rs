//! `perf-tests images …`: build or list the images a suite needs.

use anyhow::Result;
use clap::Subcommand;

use crate::scenario::Suite;
use crate::settings::Settings;
use crate::world::engine::{self, Engine};
use crate::world::images::recipe::{self, Outcome};

/// Image commands.
#[derive(Debug, Subcommand)]
pub enum ImagesCommand {
    /// Build every image the suite has a recipe for (skips up-to-date images) and the workload image
    Build {
        /// Rebuild even when an image is up to date
        #[arg(long)]
        force: bool,
    },
    /// List the suite's image recipes and whether each image is on the engine
    List,
    /// Write the suite's proxy (the Maven recipe of KROXYLICIOUS_IMAGE's default image) as a
    /// distribution in the upstream layout, which KROXYLICIOUS_IMAGE takes back as a build
    Distribution {
        /// An empty or missing directory to write it into
        #[arg(long)]
        out: std::path::PathBuf,
    },
}

/// Runs an image command for the suite `settings.scenarios` names.
pub(crate) async fn execute(cmd: ImagesCommand, settings: &Settings) -> Result<i32> {
    let suite = Suite::load(&settings.scenarios)?;
    let mut recipes = recipe::parse_recipes(&suite.images_file, &suite.images)?;
    // A proxy the settings give as a build is made like the suite's own images.
    recipes.extend(crate::plan::build_of_settings(settings)?);
    if let ImagesCommand::Distribution { out } = &cmd {
        return distribution(&recipes, out);
    }
    let engine = Engine::connect(&engine::new_run_id()).await?;
    match cmd {
        ImagesCommand::Build { force } => {
            for r in &recipes {
                let outcome = recipe::ensure(&engine, r, force).await?;
                let what = match outcome {
                    Outcome::Built => "built",
                    Outcome::UpToDate => "up to date",
                };
                println!("{what:>10}  {}", r.describe());
            }
            let workload = crate::world::images::workload::ensure(&engine).await?;
            println!("{:>10}  {workload} (this executable)", "ready");
        }
        ImagesCommand::Distribution { .. } => unreachable!("written above"),
        ImagesCommand::List => {
            for r in &recipes {
                let present = engine.image_labels(&r.image).await?.is_some();
                let state = if present { "present" } else { "missing" };
                println!("{state:>8}  {}", r.describe());
            }
        }
    }
    Ok(0)
}

/// `images distribution`: the suite's proxy recipe (the default of KROXYLICIOUS_IMAGE) written
/// out as a distribution; prints its top folder.
fn distribution(recipes: &[recipe::ImageRecipe], out: &std::path::Path) -> Result<i32> {
    let image = crate::settings::table::find(crate::world::images::build::SETTING)
        .map(|s| s.default)
        .unwrap_or_default();
    let Some(r) = recipes.iter().find(|r| r.image == image) else {
        anyhow::bail!("the suite has no recipe for {image}, the default proxy image");
    };
    let recipe::Recipe::Maven(m) = &r.recipe else {
        anyhow::bail!("{image}'s recipe is not a Maven recipe");
    };
    // Its own scratch space: several may be written at once.
    let work = std::env::temp_dir().join(format!("perf-tests-distribution-{}", std::process::id()));
    let top = crate::world::images::build::distribution_of(image, m, &work, out);
    let _ = std::fs::remove_dir_all(&work);
    println!("{}", top?.display());
    Ok(0)
}
