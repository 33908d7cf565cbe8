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

use super::{
    is_summary, tail, window_records, CatchUpResult, Driver, Event, MeasureSpec, Place, Progress,
    Session, SoakResult,
};
use crate::model::{ConsumerResult, ProducerResult};
use crate::workload::catch_up::CatchUpConfig;
use crate::workload::command::{
    self, parse_result_line, Endpoint, Together, WorkloadCommand, RESULT_PREFIX,
};
use crate::workload::consumer::{parse_progress_line, ASSIGNED_LINE};
use crate::workload::soak::SoakConfig;
use crate::world::engine::{Engine, OneOff};
use crate::world::images::workload::IMAGE_PATH;

/// The built-in workload.
pub(crate) struct Native;

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

/// A line the workload printed as the event it reports.
fn event(line: &str) -> Event<'_> {
    if is_summary(line) {
        Event::Summary
    } else if line.trim() == ASSIGNED_LINE {
        Event::Assigned
    } else if let Some(n) = window_records(line) {
        Event::Sent(n)
    } else if let Some(n) = parse_progress_line(line) {
        Event::Consumed(n)
    } else {
        Event::Line(line)
    }
}

/// One long-lived workload container and the client properties its steps use.
pub(crate) struct NativeSession {
    engine: Engine,
    /// The container's id; `None` once closed.
    container: Mutex<Option<String>>,
    client: Vec<(String, String)>,
}

impl NativeSession {
    /// Starts the session's container at `place`.
    pub(crate) async fn start(place: &Place<'_>) -> Result<NativeSession> {
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
            produce: spec.produce_config(&self.client, crate::settings::MAX_COUNT),
            producers: spec.producers,
            group: group.to_string(),
            consumers: spec.consumers,
            timeout: spec.consume_timeout.into(),
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
            .exec_streaming(&self.container()?, &argv, |line| progress(event(line)))
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

fn quiet(_: Event<'_>) {}

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
            WorkloadCommand::Probe(command::Probe {
                endpoint: self.endpoint(endpoint),
                timeout: timeout.into(),
            }),
            &quiet,
        ))
    }

    fn create_topic<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.call(
            WorkloadCommand::CreateTopic(command::CreateTopic {
                endpoint: self.endpoint(&spec.bootstrap),
                topics: spec.topic_names(),
                partitions: spec.partitions,
                replication_factor: spec.replication_factor,
                min_insync_replicas: Some(spec.min_insync_replicas),
            }),
            &quiet,
        ))
    }

    fn produce<'a>(
        &'a self,
        spec: &'a MeasureSpec,
        records: u64,
        progress: Progress<'a>,
    ) -> BoxFuture<'a, Result<ProducerResult>> {
        Box::pin(async move {
            self.call(
                WorkloadCommand::Produce(command::Produce {
                    records: spec.produce_config(&self.client, records),
                    producers: spec.producers,
                }),
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
            WorkloadCommand::Consume(spec.consume_config(&self.client, records, group)),
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
            let cmd = WorkloadCommand::Soak(SoakConfig {
                clients: self.together(spec, group),
                duration: duration.into(),
                warm_up: spec.duration_warm_up.into(),
            });
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
        let cmd = WorkloadCommand::CatchUp(CatchUpConfig {
            clients: self.together(spec, group),
            backlog,
            limit: spec.catch_up_limit.into(),
        });
        Box::pin(self.call(cmd, progress))
    }

    fn end_offsets<'a>(&'a self, spec: &'a MeasureSpec) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let cmd = WorkloadCommand::EndOffsets(command::Topics {
                endpoint: self.endpoint(&spec.bootstrap),
                topics: spec.topic_names(),
            });
            let mut argv = vec![IMAGE_PATH.to_string()];
            argv.extend(cmd.to_args());
            let out = self
                .engine
                .exec_streaming(&self.container()?, &argv, |_| {})
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
            WorkloadCommand::DeleteTopic(command::Topics {
                endpoint: self.endpoint(&spec.bootstrap),
                topics: spec.topic_names(),
            }),
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
            .map(|id| {
                (
                    crate::world::resources::LOAD_GENERATOR.to_string(),
                    id.clone(),
                )
            })
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

#[cfg(test)]
mod event_tests {
    use super::{event, Event};
    use crate::workload::consumer::{progress_line, ASSIGNED_LINE};

    #[test]
    fn the_workloads_lines_are_read_as_events() {
        let window = "1000 records sent, 200.0 records/sec (0.20 MB/sec), 1.0 ms avg latency, \
                      2.0 ms max latency.";
        assert_eq!(event(window), Event::Sent(1000));
        let summary = "5000 records sent, 900.0 records/sec (0.88 MB/sec), 1.00 ms avg latency, \
                       2.00 ms max latency, 1 ms 50th, 1 ms 95th, 2 ms 99th, 2 ms 99.9th.";
        assert_eq!(event(summary), Event::Summary);
        assert_eq!(event(&progress_line(4200, 5000)), Event::Consumed(4200));
        let catching_up = crate::workload::catch_up::progress_line(300, 20);
        assert_eq!(event(&catching_up), Event::Consumed(300));
        assert_eq!(event(&format!(" {ASSIGNED_LINE}")), Event::Assigned);
        assert_eq!(
            event("t=1 s: produced 10 rec/s"),
            Event::Line("t=1 s: produced 10 rec/s")
        );
    }
}
