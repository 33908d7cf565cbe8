//! Images on the engine beyond finding or pulling one: building one from a context, listing
//! and removing tags.

use std::collections::{BTreeMap, HashMap};

use anyhow::{bail, Context, Result};
use bollard::query_parameters::{
    BuildImageOptionsBuilder, ImportImageOptionsBuilder, ListImagesOptionsBuilder,
    RemoveImageOptions, RemoveImageOptionsBuilder,
};
use futures_util::StreamExt;

use super::Engine;

impl Engine {
    /// Builds `tag` from a build context (a tar holding a `Dockerfile`), labelled with
    /// `labels`, and returns its image id; a failed build leaves no tag behind.
    pub async fn build_image(
        &self,
        tag: &str,
        context: Vec<u8>,
        labels: BTreeMap<String, String>,
    ) -> Result<String> {
        let labels: HashMap<String, String> = labels.into_iter().collect();
        let opts = BuildImageOptionsBuilder::default()
            .dockerfile("Dockerfile")
            .t(tag)
            .rm(true)
            .forcerm(true)
            .labels(&labels)
            .build();
        let docker = &self.docker;
        let mut stream = docker.build_image(opts, None, Some(bollard::body_full(context.into())));
        let mut log = String::new();
        let mut image_id = None;
        let mut error = None;
        while let Some(item) = stream.next().await {
            match item {
                Ok(info) => {
                    if let Some(s) = info.stream {
                        log.push_str(&s);
                    }
                    if let Some(aux) = info.aux.and_then(|a| a.id) {
                        image_id = Some(aux);
                    }
                    if let Some(detail) = info.error_detail {
                        error = Some(detail.message.unwrap_or_default());
                    }
                }
                Err(e) => {
                    error = Some(e.to_string());
                    break;
                }
            }
        }
        if let Some(err) = error {
            // A failed build may have left the tag on a partial image: drop it and dangling layers.
            let _ = docker
                .remove_image(
                    tag,
                    Some(RemoveImageOptionsBuilder::default().force(true).build()),
                    None,
                )
                .await;
            bail!("building image {tag} failed: {err}\n{}", log.trim_end());
        }
        match image_id {
            Some(id) => Ok(id),
            None => {
                let inspect = docker
                    .inspect_image(tag)
                    .await
                    .with_context(|| format!("image {tag} was built but cannot be inspected"))?;
                Ok(inspect.id.unwrap_or_default())
            }
        }
    }

    /// The tags of the images whose reference matches `reference` (e.g. a repository).
    pub async fn image_tags(&self, reference: &str) -> Result<Vec<String>> {
        let filters = HashMap::from([("reference", vec![reference.to_string()])]);
        let listed = self
            .docker
            .list_images(Some(
                ListImagesOptionsBuilder::default()
                    .filters(&filters)
                    .build(),
            ))
            .await
            .with_context(|| format!("listing images {reference}"))?;
        Ok(listed.into_iter().flat_map(|i| i.repo_tags).collect())
    }

    /// Removes tag `tag` (an image a container still uses is refused by the engine).
    pub async fn remove_image(&self, tag: &str) -> Result<()> {
        self.docker
            .remove_image(tag, None::<RemoveImageOptions>, None)
            .await
            .with_context(|| format!("removing image {tag}"))?;
        Ok(())
    }

    /// The id of local image `reference`, or `None` when the engine does not have it.
    pub async fn image_id(&self, reference: &str) -> Result<Option<String>> {
        Ok(self.local_image(reference).await?.and_then(|i| i.id))
    }

    /// Copies image `reference` (with its tag) from this engine to `target`, streamed from the
    /// one's export into the other's import (no registry). Skipped when `target` already has
    /// that image id; returns whether it copied.
    pub async fn copy_image_to(&self, target: &Engine, reference: &str) -> Result<bool> {
        let Some(id) = self.image_id(reference).await? else {
            bail!("image {reference} is not on the engine at {}", self.host);
        };
        if target.image_id(reference).await?.as_deref() == Some(id.as_str()) {
            return Ok(false);
        }
        let export = self.docker.export_image(reference);
        let mut import = target.docker.import_image_stream(
            ImportImageOptionsBuilder::default().quiet(true).build(),
            export,
            None,
        );
        while let Some(item) = import.next().await {
            let info = item.with_context(|| {
                format!(
                    "copying image {reference} from {} to {}",
                    self.host, target.host
                )
            })?;
            if let Some(detail) = info.error_detail {
                bail!(
                    "copying image {reference} to {}: {}",
                    target.host,
                    detail.message.unwrap_or_default()
                );
            }
        }
        match target.image_id(reference).await? {
            Some(copied) if copied == id => Ok(true),
            other => bail!(
                "image {reference} was copied to {} but reads as {other:?} there, not {id}",
                target.host
            ),
        }
    }

    /// The CPUs the engine's host has, as the engine reports them.
    pub async fn cpus(&self) -> Option<usize> {
        let n = self.facts().await.ok()?.cpus;
        (n > 0).then_some(n)
    }
}
