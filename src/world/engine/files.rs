//! Files in a running container, through the Engine API's archive endpoint: read (a GC log,
//! a profiler's recording), checked for, and put in (a profiler's agent), with no tool needed
//! in the image.

use std::path::Path;

use anyhow::{Context, Result};
use bollard::query_parameters::{
    ContainerArchiveInfoOptionsBuilder, DownloadFromContainerOptionsBuilder,
    UploadToContainerOptionsBuilder,
};
use futures_util::StreamExt;

use super::Engine;

impl Engine {
    /// The bytes of the file `path` in `container` as it is now; `None` when there is no such
    /// file.
    pub(crate) async fn read_bytes(&self, container: &str, path: &str) -> Result<Option<Vec<u8>>> {
        let options = DownloadFromContainerOptionsBuilder::default()
            .path(path)
            .build();
        let docker = self.docker_of(container);
        let mut stream = docker.download_from_container(container, Some(options));
        let mut tar = Vec::new();
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(bytes) => tar.extend_from_slice(&bytes),
                Err(bollard::errors::Error::DockerResponseServerError {
                    status_code: 404, ..
                }) => return Ok(None),
                Err(e) => {
                    return Err(anyhow::Error::new(e)
                        .context(format!("reading {path} in container {container}")))
                }
            }
        }
        let mut archive = tar::Archive::new(tar.as_slice());
        let mut entries = archive
            .entries()
            .with_context(|| format!("{path} in container {container}: not a tar archive"))?;
        let Some(entry) = entries.next() else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut entry.with_context(|| format!("{path} in container {container}"))?,
            &mut bytes,
        )
        .with_context(|| format!("reading {path} in container {container}"))?;
        Ok(Some(bytes))
    }

    /// The text of the file `path` in `container`; `None` when there is no such file.
    pub(crate) async fn read_file(&self, container: &str, path: &str) -> Result<Option<String>> {
        Ok(self
            .read_bytes(container, path)
            .await?
            .map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    /// Whether `path` exists in `container`.
    pub(crate) async fn exists(&self, container: &str, path: &str) -> Result<bool> {
        let options = ContainerArchiveInfoOptionsBuilder::default()
            .path(path)
            .build();
        match self
            .docker_of(container)
            .get_container_archive_info(container, Some(options))
            .await
        {
            Ok(_) => Ok(true),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(false),
            Err(e) => Err(anyhow::Error::new(e)
                .context(format!("looking for {path} in container {container}"))),
        }
    }

    /// Puts each host file at its absolute path in `container` (parent directories made).
    pub(crate) async fn upload(&self, container: &str, files: &[(&Path, &str)]) -> Result<()> {
        let mut tar = tar::Builder::new(Vec::new());
        for (host, target) in files {
            let data =
                std::fs::read(host).with_context(|| format!("reading {}", host.display()))?;
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o755);
            header.set_cksum();
            tar.append_data(&mut header, target.trim_start_matches('/'), data.as_slice())?;
        }
        let tar = tar.into_inner()?;
        let options = UploadToContainerOptionsBuilder::default().path("/").build();
        self.docker_of(container)
            .upload_to_container(container, Some(options), bollard::body_full(tar.into()))
            .await
            .with_context(|| format!("copying files into container {container}"))
    }
}
