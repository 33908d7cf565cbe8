//! The `native` driver: the built-in librdkafka workload (`crate::workload`), packaged with this
//! executable into the workload image.
//!
//! A session starts one container of that image on the place's network (`perf-tests workload
//! serve`, which only waits) and runs every step in it with an engine `exec` of
//! `perf-tests workload <step> …`, reading the step's one-line JSON result back. So readiness
//! probes, broker warm-ups and the measurement of a scenario share one container start.

use std::sync::Mutex;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;

use super::kafka_tools::tail;
use super::{CatchUpResult, Driver, MeasureSpec, Place, Progress, Session, SoakResult, VerifySpec};
use crate::engine::{Engine, OneOff};
use crate::images::workload::IMAGE_PATH;
use crate::model::{ConsumerResult, PathCheck, ProducerResult};
use crate::settings::Mode;
use crate::workload::command::{
    parse_result_line, Endpoint, Together, WorkloadCommand, RESULT_PREFIX,
};

/// The built-in workload.
pub struct Native;

impl Driver for Native {
    fn describe(&self) -> String {
        "Driver: native (the workload image, built here)".to_string()
    }

    fn open<'a>(&'a self, place: Place<'a>) -> BoxFuture<'a, Result<Box<dyn Session>>> {
        Box::pin(async move {
            let session: Box<dyn Session> = Box::new(NativeSession::start(&place).await?);
            Ok(session)
        })
    }
}

/// The path check (`perf-tests workload verify`) in a container of its own at `place`: sample
/// records through the endpoint, read back through it and straight from the broker. It is the
/// native workload's whatever the run's driver, so every driver's rows are proven alike.
pub async fn path_check(place: &Place<'_>, spec: &VerifySpec) -> Result<PathCheck> {
    let cmd = WorkloadCommand::Verify {
        endpoint: Endpoint::new(&spec.bootstrap, &spec.client),
        direct: spec.direct.clone(),
        topic: spec.topic.clone(),
        broker_holds: spec.expect.broker,
        consumer_receives: spec.expect.consumer,
        records: spec.records,
        record_size: spec.record_size,
    };
    let out = place
        .engine
        .run_oneoff(
            OneOff {
                image: place.workload_image.to_string(),
                cmd: cmd.to_args(),
                binds: place.binds.clone(),
                network: Some(place.network.clone()),
                name_hint: "path-check".to_string(),
                cpuset: place.cpuset.clone(),
                ..Default::default()
            },
            crate::progress::detail,
        )
        .await?;
    if out.exit_code != 0 {
        bail!(
            "the path check exited with {}: {}",
            out.exit_code,
            tail(&out.stderr)
        );
    }
    parse_result_line(&out.stdout)
}

/// One long-lived workload container and the client properties its steps use.
pub struct NativeSession {
    engine: Engine,
    /// The container's id; `None` once closed.
    container: Mutex<Option<String>>,
    client: Vec<(String, String)>,
}

impl NativeSession {
    /// Starts the session's container at `place`.
    pub async fn start(place: &Place<'_>) -> Result<NativeSession> {
        let spec = OneOff {
            image: place.workload_image.to_string(),
            cmd: WorkloadCommand::Serve.to_args(),
            binds: place.binds.clone(),
            network: Some(place.network.clone()),
            name_hint: "workload".to_string(),
            cpuset: place.cpuset.clone(),
            ..Default::default()
        };
        let id = place
            .engine
            .start_detached(spec)
            .await
            .context("starting the workload container")?;
        Ok(NativeSession {
            engine: place.engine.clone(),
            container: Mutex::new(Some(id)),
            client: place.client.clone(),
        })
    }

    fn endpoint(&self, bootstrap: &str) -> Endpoint {
        Endpoint::new(bootstrap, &self.client)
    }

    /// The producers and the group of `spec` running at once, the group named `group`.
    fn together(&self, spec: &MeasureSpec, group: &str) -> Together {
        Together {
            endpoint: self.endpoint(&spec.bootstrap),
            topics: spec.topic_names(),
            group: group.to_string(),
            record_size: spec.record_size,
            throughput: spec.throughput,
            properties: spec.properties.clone(),
            producers: spec.producers,
            consumers: spec.consumers,
            timeout_s: spec.consume_timeout.as_secs_f64(),
        }
    }

    fn container(&self) -> Result<String> {
        match self
            .container
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            Some(id) => Ok(id),
            None => bail!("the workload session is closed"),
        }
    }

    /// Runs one step in the container and reads its result.
    async fn call<T: DeserializeOwned>(
        &self,
        cmd: WorkloadCommand,
        progress: Progress<'_>,
    ) -> Result<T> {
        let mut argv = vec![IMAGE_PATH.to_string()];
        argv.extend(cmd.to_args());
        let step = argv.get(2).cloned().unwrap_or_default();
        let out = self
            .engine
            .exec_streaming(&self.container()?, &argv, progress)
            .await?;
        if out.exit_code != 0 {
            bail!(
                "workload `{step}` exited with {}: {}",
                out.exit_code,
                out.stderr
                    .lines()
                    .rev()
                    .take(5)
                    .collect::<Vec<_>>()
                    .join(" / ")
            );
        }
        parse_result_line(&out.stdout)
    }
}

impl Drop for NativeSession {
    fn drop(&mut self) {
        // A session dropped without `close` (an error, Ctrl-C) still removes its container.
        let id = self
            .container
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let (Some(id), Ok(handle)) = (id, tokio::runtime::Handle::try_current()) {
            let engine = self.engine.clone();
            handle.spawn(async move {
                let _ = engine.remove_container(&id).await;
            });
        }
    }
}

fn quiet(_: &str) {}

impl Session for NativeSession {
    fn check(&self, spec: &MeasureSpec) -> Result<()> {
        // The same executable runs in the container, so its refusal is the same here.
        crate::workload::properties::client_config(
            &spec.bootstrap,
            &[],
            &[&self.client, &spec.properties],
        )
        .map(|_| ())
    }

    fn probe<'a>(&'a self, endpoint: &'a str, timeout: Duration) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.call(
            WorkloadCommand::Probe {
                endpoint: self.endpoint(endpoint),
                timeout_s: timeout.as_secs_f64(),
            },
            &quiet,
        ))
    }

    fn create_topic<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.call(
            WorkloadCommand::CreateTopic {
                endpoint: self.endpoint(&spec.bootstrap),
                topics: spec.topic_names(),
                partitions: spec.partitions,
                replication_factor: spec.replication_factor,
            },
            &quiet,
        ))
    }

    fn produce<'a>(
        &'a self,
        spec: &'a MeasureSpec,
        records: u64,
        throughput: i64,
        progress: Progress<'a>,
    ) -> BoxFuture<'a, Result<ProducerResult>> {
        Box::pin(async move {
            self.call(
                WorkloadCommand::Produce {
                    endpoint: self.endpoint(&spec.bootstrap),
                    topics: spec.topic_names(),
                    num_records: records,
                    record_size: spec.record_size,
                    throughput,
                    properties: spec.properties.clone(),
                    producers: spec.producers,
                },
                progress,
            )
            .await
        })
    }

    fn consume<'a>(
        &'a self,
        spec: &'a MeasureSpec,
        records: u64,
        group: &'a str,
        progress: Progress<'a>,
    ) -> BoxFuture<'a, Result<ConsumerResult>> {
        Box::pin(self.call(
            WorkloadCommand::Consume {
                endpoint: self.endpoint(&spec.bootstrap),
                topics: spec.topic_names(),
                group: group.to_string(),
                expected: records,
                timeout_s: spec.consume_timeout.as_secs_f64(),
                consumers: spec.consumers,
                end_to_end: spec.mode == Mode::EndToEnd,
            },
            progress,
        ))
    }

    fn soak<'a>(
        &'a self,
        spec: &'a MeasureSpec,
        group: &'a str,
        progress: Progress<'a>,
    ) -> BoxFuture<'a, Result<SoakResult>> {
        Box::pin(async move {
            let Some(duration) = spec.duration else {
                bail!("a run bounded by time needs its DURATION");
            };
            let cmd = WorkloadCommand::Soak {
                clients: self.together(spec, group),
                duration_s: duration.as_secs(),
                warm_up_s: spec.duration_warm_up.as_secs(),
            };
            self.call(cmd, progress).await
        })
    }

    fn catch_up<'a>(
        &'a self,
        spec: &'a MeasureSpec,
        backlog: u64,
        group: &'a str,
        progress: Progress<'a>,
    ) -> BoxFuture<'a, Result<CatchUpResult>> {
        let cmd = WorkloadCommand::CatchUp {
            clients: self.together(spec, group),
            backlog,
            limit_s: spec.catch_up_limit.as_secs_f64(),
        };
        Box::pin(self.call(cmd, progress))
    }

    fn end_offsets<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let cmd = WorkloadCommand::EndOffsets {
                endpoint: self.endpoint(&spec.bootstrap),
                topics: spec.topic_names(),
            };
            let mut argv = vec![IMAGE_PATH.to_string()];
            argv.extend(cmd.to_args());
            let out = self
                .engine
                .exec_streaming(&self.container()?, &argv, quiet)
                .await?;
            if out.exit_code != 0 {
                bail!(
                    "counting the records of {} exited with {}:\n{}",
                    crate::workload::topics_named(&spec.topic_names()),
                    out.exit_code,
                    tail(&out.stderr)
                );
            }
            parse_end_offsets(&out.stdout)
        })
    }

    fn delete_topic<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.call(
            WorkloadCommand::DeleteTopic {
                endpoint: self.endpoint(&spec.bootstrap),
                topics: spec.topic_names(),
            },
            &quiet,
        ))
    }

    fn close(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let id = self
                .container
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(id) = id {
                self.engine.remove_container(&id).await?;
            }
            Ok(())
        })
    }

    fn measured_containers(&self) -> Vec<(String, String)> {
        self.container
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|id| (crate::resources::LOAD_GENERATOR.to_string(), id.clone()))
            .collect()
    }
}

/// Reads the count back from `perf-tests workload end-offsets`' stdout.
pub fn parse_end_offsets(stdout: &str) -> Result<u64> {
    let Some(value) = stdout
        .lines()
        .rev()
        .find_map(|l| l.trim_end().strip_prefix(RESULT_PREFIX))
    else {
        bail!(
            "`workload end-offsets` printed no `{}` line; its last output lines:\n{}",
            RESULT_PREFIX.trim_end(),
            tail(stdout)
        );
    };
    value
        .trim()
        .parse()
        .with_context(|| format!("`workload end-offsets` printed `{value}`, not a count"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn end_offsets_result_line() {
        assert_eq!(
            parse_end_offsets("noise\nPERF-TESTS-RESULT 1234\n").unwrap(),
            1234
        );
        let err = parse_end_offsets("PERF-TESTS-RESULT {}\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`{}`"), "{err}");
        let err = parse_end_offsets("boom\n").unwrap_err().to_string();
        assert!(err.contains("boom"), "{err}");
    }
}
