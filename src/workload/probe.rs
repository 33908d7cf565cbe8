//! Kafka-level readiness: the endpoint answers a metadata request.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rdkafka::consumer::{BaseConsumer, Consumer};

use super::client::Quiet;
use super::properties::client_config;

/// Longest single metadata request; shorter when the overall deadline is nearer.
const ATTEMPT: Duration = Duration::from_secs(2);

/// Retries a metadata request through `bootstrap` until one is answered or `timeout` passes.
pub async fn probe(bootstrap: &str, client: &[(String, String)], timeout: Duration) -> Result<()> {
    let (mut config, _) = client_config(bootstrap, &[], &[client])?;
    // Reconnect quickly while the endpoint comes up.
    config.set("reconnect.backoff.ms", "50");
    config.set("reconnect.backoff.max.ms", "500");
    let bootstrap = bootstrap.to_string();
    tokio::task::spawn_blocking(move || -> Result<()> {
        let consumer: BaseConsumer<Quiet> = config
            .create_with_context(Quiet::default())
            .context("creating the Kafka probe client")?;
        let deadline = Instant::now() + timeout;
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let remaining = deadline.saturating_duration_since(Instant::now());
            let last = match consumer.fetch_metadata(None, remaining.min(ATTEMPT)) {
                Ok(m) if !m.brokers().is_empty() => return Ok(()),
                Ok(_) => "metadata named no broker".to_string(),
                Err(e) => e.to_string(),
            };
            if Instant::now() >= deadline {
                let client_error = consumer.context().last_error.suffix();
                bail!(
                    "Kafka endpoint {bootstrap} did not answer a metadata request within {:.1} s \
                     ({attempts} attempts): {last}{client_error}",
                    timeout.as_secs_f64()
                );
            }
            // Polling serves librdkafka's log and error events, which name the cause.
            let pause = Duration::from_millis(100).min(remaining);
            let paused = Instant::now();
            if let Some(Err(e)) = consumer.poll(pause) {
                consumer.context().last_error.set(e.to_string());
            }
            std::thread::sleep(pause.saturating_sub(paused.elapsed()));
        }
    })
    .await
    .context("probe task panicked")?
}
