//! Images on the engine beyond finding or pulling one: building one from a context, listing
//! and removing tags.

use std::collections::{BTreeMap, HashMap};

use anyhow::{bail, Context, Result};
use bollard::query_parameters::{
    BuildImageOptionsBuilder, CreateImageOptionsBuilder, ImportImageOptionsBuilder,
    ListImagesOptionsBuilder, PushImageOptionsBuilder, RemoveImageOptions,
    RemoveImageOptionsBuilder, TagImageOptionsBuilder,
};
use futures_util::StreamExt;

use super::Engine;

impl Engine {
    /// Builds `tag` from a build context (a tar holding a `Dockerfile`), labelled with
    /// `labels`, and returns its image id; a failed build leaves no tag behind.
    pub(crate) async fn build_image(
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
    pub(crate) async fn image_tags(&self, reference: &str) -> Result<Vec<String>> {
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
    pub(crate) async fn remove_image(&self, tag: &str) -> Result<()> {
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
            bail!("image {reference} is not on the engine at {}", self.host());
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
                    self.host(),
                    target.host()
                )
            })?;
            if let Some(detail) = info.error_detail {
                bail!(
                    "copying image {reference} to {}: {}",
                    target.host(),
                    detail.message.unwrap_or_default()
                );
            }
        }
        target.expect_image(reference, &id, "copied").await?;
        Ok(true)
    }

    /// Checks that `reference`, just `how` (copied, pulled) to this engine, is image `id`.
    async fn expect_image(&self, reference: &str, id: &str, how: &str) -> Result<()> {
        match self.image_id(reference).await? {
            Some(found) if found == id => Ok(()),
            other => bail!(
                "image {reference} was {how} to {} but reads as {other:?} there, not {id}",
                self.host()
            ),
        }
    }

    /// Whether this engine reaches the registry `registry` (`host[:port][/path]`): it asks the
    /// registry for an image that is not there, and a registry that answers "unknown" is
    /// reached. The error is the engine's own (refused connection, TLS, login).
    pub(crate) async fn reaches_registry(&self, registry: &str) -> Result<()> {
        let probe = format!("{registry}/perf-tests/registry-probe:absent");
        match self.docker.inspect_registry_image(&probe, None).await {
            Ok(_) => Ok(()),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(()),
            Err(bollard::errors::Error::DockerResponseServerError { message, .. }) => bail!(
                "the engine at {} cannot use registry {registry}: {message}",
                self.host()
            ),
            Err(e) => Err(anyhow::Error::new(e).context(format!(
                "asking the engine at {} for registry {registry}",
                self.host()
            ))),
        }
    }

    /// Pushes local image `reference` to `registry` as [`in_registry`] names it there, and
    /// returns that name.
    pub(crate) async fn push_to_registry(&self, registry: &str, reference: &str) -> Result<String> {
        let remote = in_registry(registry, reference)?;
        self.tag(reference, &remote).await?;
        let (repo, tag) = split_tag(&remote);
        let mut push = self.docker.push_image(
            repo,
            Some(PushImageOptionsBuilder::default().tag(tag).build()),
            None,
        );
        while let Some(item) = push.next().await {
            item.with_context(|| {
                format!(
                    "pushing image {reference} to {remote} from the engine at {}",
                    self.host()
                )
            })?;
        }
        Ok(remote)
    }

    /// Pulls `remote` (an image [`Engine::push_to_registry`] pushed) and tags it `reference`;
    /// the pulled image must have id `id`.
    pub(crate) async fn pull_from_registry(
        &self,
        remote: &str,
        reference: &str,
        id: &str,
    ) -> Result<()> {
        let mut pull = self.docker.create_image(
            Some(
                CreateImageOptionsBuilder::default()
                    .from_image(remote)
                    .build(),
            ),
            None,
            None,
        );
        while let Some(item) = pull.next().await {
            item.with_context(|| {
                format!("pulling image {remote} to the engine at {}", self.host())
            })?;
        }
        self.tag(remote, reference).await?;
        self.expect_image(reference, id, "pulled").await
    }

    /// Gives image `from` the further name `to` (a reference with its tag).
    async fn tag(&self, from: &str, to: &str) -> Result<()> {
        let (repo, tag) = split_tag(to);
        self.docker
            .tag_image(
                from,
                Some(
                    TagImageOptionsBuilder::default()
                        .repo(repo)
                        .tag(tag)
                        .build(),
                ),
            )
            .await
            .with_context(|| format!("tagging image {from} as {to} at {}", self.host()))
    }

    /// The CPUs the engine's host has, as the engine reports them.
    pub(crate) async fn cpus(&self) -> Option<usize> {
        let n = self.facts().await.ok()?.cpus;
        (n > 0).then_some(n)
    }
}

/// The name image `reference` has in `registry`: the registry's address and path before the
/// whole reference (a registry port in it written `host-port`, as a path takes no `:`), its tag
/// kept (`latest` when it has none). A reference by digest has no tag to push under and is
/// refused.
pub(crate) fn in_registry(registry: &str, reference: &str) -> Result<String> {
    if reference.contains('@') {
        bail!("image {reference} is named by digest; a registry copy needs a tagged name");
    }
    let (repo, tag) = split_tag(reference);
    let tag = if tag.is_empty() { "latest" } else { tag };
    let repo = repo.replace(':', "-");
    Ok(format!("{}/{repo}:{tag}", registry.trim_end_matches('/')))
}

/// `reference`'s repository and tag (empty when it has none): the tag follows the last `:`
/// after the last `/` (a `:` before it is a registry's port).
fn split_tag(reference: &str) -> (&str, &str) {
    let name_start = reference.rfind('/').map_or(0, |i| i + 1);
    match reference[name_start..].rfind(':') {
        Some(i) => (
            &reference[..name_start + i],
            &reference[name_start + i + 1..],
        ),
        None => (reference, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_keeps_its_whole_name_and_tag_under_the_registry() {
        let cases = [
            (
                "perf-tests/kafka:4.4.0",
                "10.0.0.1:5000/perf-tests/kafka:4.4.0",
            ),
            ("busybox", "10.0.0.1:5000/busybox:latest"),
            ("quay.io/org/x:1", "10.0.0.1:5000/quay.io/org/x:1"),
            ("localhost:5000/x", "10.0.0.1:5000/localhost-5000/x:latest"),
        ];
        for (image, remote) in cases {
            assert_eq!(in_registry("10.0.0.1:5000/", image).unwrap(), remote);
        }
        assert_eq!(split_tag("reg:5000/a/b:c"), ("reg:5000/a/b", "c"));
        assert_eq!(split_tag("reg:5000/a/b"), ("reg:5000/a/b", ""));
        assert!(in_registry("r", "x@sha256:00")
            .unwrap_err()
            .to_string()
            .contains("digest"));
    }
}
