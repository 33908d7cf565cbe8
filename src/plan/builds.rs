//! A proxy given as a build (`crate::world::images::build`): the run's and each side's
//! `KROXYLICIOUS_IMAGE` naming a path become the tag of the image made from it, with
//! `KROXYLICIOUS_PLUGINS`' jars; the Compose files see the tag, the plan the recipe.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};

use crate::settings::sides::{Overrides, Sides};
use crate::settings::Settings;
use crate::world::images::build::{is_path, BuildRecipe, PLUGINS, SETTING};
use crate::world::images::recipe::{ImageRecipe, Recipe};

/// The run's build, when `KROXYLICIOUS_IMAGE` names one: the variable, the image's tag and its
/// recipe.
pub(super) fn resolve(
    vars: &BTreeMap<String, String>,
) -> Result<Option<(String, String, ImageRecipe)>> {
    let get = |var: &str| vars.get(var).map(String::as_str).unwrap_or_default();
    Ok(recipe(get(SETTING), get(PLUGINS), "")?.map(|r| (SETTING.to_string(), r.image.clone(), r)))
}

/// The image a run's settings make from a build (`KROXYLICIOUS_IMAGE` naming a path), if any.
pub(crate) fn of_settings(settings: &Settings) -> Result<Option<ImageRecipe>> {
    Ok(resolve(&settings.variables())?.map(|(_, _, r)| r))
}

/// `given` with each side's build made a tag (a side that names `KROXYLICIOUS_IMAGE` or
/// `KROXYLICIOUS_PLUGINS`, the other taken from the run's settings), its recipe added to
/// `builds`.
pub(super) fn resolve_sides(
    given: &Sides,
    settings: &Settings,
    builds: &mut Vec<ImageRecipe>,
) -> Result<Sides> {
    let side = |label: &str, o: &Overrides, builds: &mut Vec<ImageRecipe>| -> Result<Overrides> {
        let own = |var: &str| {
            o.variables
                .iter()
                .find(|(k, _)| k == var)
                .map(|(_, v)| v.clone())
        };
        let (image, plugins) = (own(SETTING), own(PLUGINS));
        if image.is_none() && plugins.is_none() {
            return Ok(o.clone());
        }
        let mut resolved = o.clone();
        resolved
            .variables
            .retain(|(k, _)| k != SETTING && k != PLUGINS);
        let image = image.unwrap_or_else(|| settings.kroxylicious_image.clone());
        let plugins = plugins.unwrap_or_else(|| settings.kroxylicious_plugins.clone());
        let value = match recipe(&image, &plugins, &format!("side {label}'s "))? {
            Some(r) => {
                let tag = r.image.clone();
                if !builds.iter().any(|b| b.image == tag) {
                    builds.push(r);
                }
                tag
            }
            None => image,
        };
        resolved.variables.push((SETTING.to_string(), value));
        Ok(resolved)
    };
    Ok(Sides {
        a: side("A", &given.a, builds)?,
        b: side("B", &given.b, builds)?,
    })
}

/// The recipe of `image` when it names a build (with `plugins` when not empty); plugins are
/// refused with an image reference. `named` prefixes errors (`side B's `).
fn recipe(image: &str, plugins: &str, named: &str) -> Result<Option<ImageRecipe>> {
    let plugins = (!plugins.is_empty()).then_some(plugins);
    if !is_path(image) {
        if let Some(p) = plugins {
            bail!(
                "{named}{PLUGINS}={p}: only a proxy made from a distribution takes plugins, and \
                 {SETTING}={image} is an image reference (give {SETTING} the distribution's path)"
            );
        }
        return Ok(None);
    }
    let build = BuildRecipe::new(image, plugins);
    // `side B's ` names the side; the run's own build names its setting itself.
    let build = match named.strip_suffix("'s ") {
        Some(side) => build.with_context(|| side.to_string())?,
        None => build?,
    };
    Ok(Some(ImageRecipe {
        image: build.image(),
        recipe: Recipe::Build(build),
    }))
}
