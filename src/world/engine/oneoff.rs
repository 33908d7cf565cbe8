//! Commands inside running containers (`exec`) and one-off containers.

use anyhow::{Context, Result};
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecResults};
use bollard::models::{
    ContainerCreateBody, ContainerCreateResponse, EndpointSettings, HostConfig, NetworkingConfig,
};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, LogsOptionsBuilder, WaitContainerOptionsBuilder,
};
use futures_util::StreamExt;
use std::collections::HashMap;

use super::Engine;

/// What a command printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExecOutput {
    /// Process exit code.
    pub exit_code: i64,
    /// Everything written to stdout.
    pub stdout: String,
    /// Everything written to stderr.
    pub stderr: String,
}

/// A container that runs one command to completion and is then removed.
#[derive(Debug, Clone, Default)]
pub struct OneOff {
    /// Image to run.
    pub image: String,
    /// Overrides the image's ENTRYPOINT when set.
    pub entrypoint: Option<Vec<String>>,
    /// Arguments (the image's CMD is replaced).
    pub cmd: Vec<String>,
    /// `KEY=VALUE` environment.
    pub env: Vec<String>,
    /// Bind mounts, `host:container[:ro]`.
    pub binds: Vec<String>,
    /// Network to join (e.g. a deployment's network), if any.
    pub network: Option<String>,
    /// Prefix of the container name, for people reading `docker ps`.
    pub name_hint: String,
    /// Stdout lines also go to the line callback (a tool that reports progress on stdout).
    pub stream_stdout: bool,
    /// CPUs the container may run on (a CPU list); all when unset.
    pub cpuset: Option<String>,
}

/// Removes a container when dropped unless disarmed, so a cancelled future leaves nothing.
struct RemoveOnDrop {
    engine: Engine,
    id: Option<String>,
}

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let engine = self.engine.clone();
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    let _ = engine.remove_container(&id).await;
                });
            }
        }
    }
}

/// Feeds complete lines to a callback, keeping a partial last line until more arrives.
struct LineSplitter {
    pending: String,
}

impl LineSplitter {
    fn push(&mut self, chunk: &str, f: &mut impl FnMut(&str)) {
        self.pending.push_str(chunk);
        while let Some(pos) = self.pending.find('\n') {
            let line: String = self.pending.drain(..=pos).collect();
            f(line.trim_end_matches(['\n', '\r']));
        }
    }

    fn finish(&mut self, f: &mut impl FnMut(&str)) {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            f(&rest);
        }
    }
}

impl Engine {
    /// Runs `cmd` in a running container and collects its output and exit code.
    pub(crate) async fn exec_in(&self, container: &str, cmd: &[String]) -> Result<ExecOutput> {
        self.exec_streaming(container, cmd, |_| {}).await
    }

    /// Runs `cmd` in a running container, streaming its stderr lines to `on_stderr_line` as they
    /// come, and collects its output and exit code.
    pub(crate) async fn exec_streaming(
        &self,
        container: &str,
        cmd: &[String],
        mut on_stderr_line: impl FnMut(&str),
    ) -> Result<ExecOutput> {
        let docker = self.docker_of(container);
        let exec = docker
            .create_exec(
                container,
                CreateExecOptions {
                    cmd: Some(cmd.to_vec()),
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    ..Default::default()
                },
            )
            .await
            .with_context(|| format!("cannot exec {cmd:?} in container {container}"))?;
        let mut out = ExecOutput::default();
        let mut lines = LineSplitter {
            pending: String::new(),
        };
        if let StartExecResults::Attached { mut output, .. } =
            docker.start_exec(&exec.id, None).await?
        {
            while let Some(item) = output.next().await {
                match item? {
                    LogOutput::StdErr { message } => {
                        let text = String::from_utf8_lossy(&message);
                        out.stderr.push_str(&text);
                        lines.push(&text, &mut on_stderr_line);
                    }
                    other => out.stdout.push_str(&other.to_string()),
                }
            }
        }
        lines.finish(&mut on_stderr_line);
        let inspect = docker.inspect_exec(&exec.id).await?;
        out.exit_code = inspect.exit_code.unwrap_or(-1);
        Ok(out)
    }

    /// Runs a labelled one-off container to completion, streaming its stderr lines to
    /// `on_stderr_line` as they come; the container is removed in every case.
    pub async fn run_oneoff(
        &self,
        spec: OneOff,
        mut on_stderr_line: impl FnMut(&str),
    ) -> Result<ExecOutput> {
        let (name, created) = self.create_oneoff(&spec).await?;
        let mut guard = RemoveOnDrop {
            engine: self.clone(),
            id: Some(created.id.clone()),
        };
        let result = self
            .run_to_exit(&created.id, &name, spec.stream_stdout, &mut on_stderr_line)
            .await;
        guard.id = None;
        let removed = self.remove_container(&created.id).await;
        let out = result?;
        removed?;
        Ok(out)
    }

    /// Creates the labelled container `spec` describes (the image had first); returns its name
    /// and the engine's answer.
    async fn create_oneoff(&self, spec: &OneOff) -> Result<(String, ContainerCreateResponse)> {
        self.ensure_image(&spec.image).await?;
        let (name, body) = self.container_body(spec);
        let created = self
            .docker
            .create_container(
                Some(CreateContainerOptionsBuilder::default().name(&name).build()),
                body,
            )
            .await
            .with_context(|| format!("cannot create container {name} from {}", spec.image))?;
        self.placed_here(&created.id);
        Ok((name, created))
    }

    /// Which of `paths` the filesystem of `image` holds, looked up in a labelled container made
    /// from it and never started (removed in every case).
    pub(crate) async fn image_holds(&self, image: &str, paths: &[String]) -> Result<Vec<bool>> {
        let spec = OneOff {
            image: image.to_string(),
            // Never run: any command makes the container.
            entrypoint: Some(vec!["/".to_string()]),
            name_hint: "image-check".to_string(),
            ..OneOff::default()
        };
        let (_, created) = self.create_oneoff(&spec).await?;
        let mut guard = RemoveOnDrop {
            engine: self.clone(),
            id: Some(created.id.clone()),
        };
        let mut found = Vec::new();
        for p in paths {
            match self.exists(&created.id, p).await {
                Ok(f) => found.push(f),
                Err(e) => return Err(e),
            }
        }
        guard.id = None;
        self.remove_container(&created.id).await?;
        Ok(found)
    }

    /// Creates and starts a labelled container that keeps running (its command waits) until
    /// [`Engine::remove_container`] removes it; returns its id. Commands run in it with
    /// [`Engine::exec_streaming`]. The run's label lets teardown, Ctrl-C and `clean` find it.
    pub async fn start_detached(&self, spec: OneOff) -> Result<String> {
        let (name, created) = self.create_oneoff(&spec).await?;
        if let Err(e) = self.docker.start_container(&created.id, None).await {
            let _ = self.remove_container(&created.id).await;
            return Err(anyhow::Error::new(e).context(format!("cannot start container {name}")));
        }
        Ok(created.id)
    }

    /// The unique name and the creation body of a one-off container.
    fn container_body(&self, spec: &OneOff) -> (String, ContainerCreateBody) {
        let name = format!(
            "{}-{}",
            crate::world::compose::sanitize_name(&spec.name_hint),
            unique_suffix()
        );
        let mut labels = self.run_labels();
        labels.insert(super::LABEL_SERVICE.to_string(), spec.name_hint.clone());
        // `container:<id>` shares that container's namespace: there is no network to join.
        let networking_config = spec
            .network
            .as_ref()
            .filter(|n| !n.starts_with("container:"))
            .map(|n| NetworkingConfig {
                endpoints_config: Some(HashMap::from([(n.clone(), EndpointSettings::default())])),
            });
        let body = ContainerCreateBody {
            image: Some(spec.image.clone()),
            entrypoint: spec.entrypoint.clone(),
            cmd: Some(spec.cmd.clone()),
            env: Some(spec.env.clone()),
            labels: Some(labels),
            host_config: Some(HostConfig {
                binds: Some(spec.binds.clone()),
                network_mode: spec.network.clone(),
                cpuset_cpus: spec.cpuset.clone(),
                ..Default::default()
            }),
            networking_config,
            ..Default::default()
        };
        (name, body)
    }

    async fn run_to_exit(
        &self,
        id: &str,
        name: &str,
        stream_stdout: bool,
        on_stderr_line: &mut impl FnMut(&str),
    ) -> Result<ExecOutput> {
        self.docker
            .start_container(id, None)
            .await
            .with_context(|| format!("cannot start container {name}"))?;
        let opts = LogsOptionsBuilder::default()
            .follow(true)
            .stdout(true)
            .stderr(true)
            .build();
        let mut logs = self.docker.logs(id, Some(opts));
        let mut out = ExecOutput::default();
        let mut lines = LineSplitter {
            pending: String::new(),
        };
        let mut stdout_lines = LineSplitter {
            pending: String::new(),
        };
        while let Some(item) = logs.next().await {
            match item.with_context(|| format!("reading output of {name}"))? {
                LogOutput::StdErr { message } => {
                    let text = String::from_utf8_lossy(&message);
                    out.stderr.push_str(&text);
                    lines.push(&text, on_stderr_line);
                }
                other => {
                    let text = other.to_string();
                    if stream_stdout {
                        stdout_lines.push(&text, on_stderr_line);
                    }
                    out.stdout.push_str(&text);
                }
            }
        }
        lines.finish(on_stderr_line);
        if stream_stdout {
            stdout_lines.finish(on_stderr_line);
        }
        let wait = WaitContainerOptionsBuilder::default()
            .condition("not-running")
            .build();
        let mut waiting = self.docker.wait_container(id, Some(wait));
        out.exit_code = match waiting.next().await {
            Some(Ok(r)) => r.status_code,
            Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
            Some(Err(e)) => {
                return Err(anyhow::Error::new(e).context(format!("waiting for {name}")))
            }
            None => anyhow::bail!("waiting for {name}: the engine closed the stream"),
        };
        Ok(out)
    }
}

/// A suffix that keeps container names unique within and across processes.
pub(crate) fn unique_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{:x}{:x}{n}", std::process::id(), nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_lines_across_chunks() {
        let mut seen = Vec::new();
        let mut s = LineSplitter {
            pending: String::new(),
        };
        let mut f = |l: &str| seen.push(l.to_string());
        s.push("a\nb", &mut f);
        s.push("c\r\nd\n\ne", &mut f);
        s.finish(&mut f);
        assert_eq!(seen, vec!["a", "bc", "d", "", "e"]);
    }
}
