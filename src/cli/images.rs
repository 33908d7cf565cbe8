//! `perf-tests images …`: build or list the images a suite needs.

use anyhow::Result;
use clap::Subcommand;

use crate::engine::{self, Engine};
use crate::images::recipe::{self, Outcome};
use crate::scenario::Suite;
use crate::settings::Settings;

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
}

/// Runs an image command for the suite `settings.scenarios` names.
pub async fn execute(cmd: ImagesCommand, settings: &Settings) -> Result<i32> {
    let suite = Suite::load(&settings.scenarios)?;
    let mut recipes = recipe::parse_recipes(&suite.images_file, &suite.images)?;
    // A proxy the settings give as a build is made like the suite's own images.
    recipes.extend(crate::plan::build_of_settings(settings)?);
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
            let workload = crate::images::workload::ensure(&engine).await?;
            println!("{:>10}  {workload} (this executable)", "ready");
        }
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
