//! Topic administration the measurement needs: create, wait until visible, count, delete.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

use super::client::Quiet;
use super::properties::client_config;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// A topic to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicSpec {
    pub name: String,
    pub partitions: i32,
    pub replication_factor: i32,
    /// The topic's `min.insync.replicas`; the broker's default when `None`.
    pub min_insync_replicas: Option<i32>,
}

impl TopicSpec {
    /// One partition, one replica.
    pub fn new(name: impl Into<String>) -> Self {
        TopicSpec {
            name: name.into(),
            partitions: 1,
            replication_factor: 1,
            min_insync_replicas: None,
        }
    }
}

/// One partition as the cluster's metadata shows it: its leader, its replicas and which of them
/// are in sync (broker ids).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionLayout {
    pub id: i32,
    pub leader: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
}

/// Administrative connection to one bootstrap endpoint.
pub struct Admin {
    bootstrap: String,
    admin: AdminClient<Quiet>,
    config: ClientConfig,
    /// Metadata and watermark queries go through a group-less consumer.
    metadata: Arc<BaseConsumer<Quiet>>,
}

impl Admin {
    /// Creates the clients (no request is made yet).
    pub fn connect(bootstrap: &str, client: &[(String, String)]) -> Result<Admin> {
        let (config, _) = client_config(bootstrap, &[], &[client])?;
        Ok(Admin {
            bootstrap: bootstrap.to_string(),
            config: config.clone(),
            admin: config
                .create_with_context(Quiet::default())
                .context("creating the Kafka admin client")?,
            metadata: Arc::new(
                config
                    .create_with_context(Quiet::default())
                    .context("creating the Kafka metadata client")?,
            ),
        })
    }

    /// Creates the topic unless it exists, then waits until its metadata is visible.
    pub async fn create_topic(&self, spec: &TopicSpec, timeout: Duration) -> Result<()> {
        self.create_topics(std::slice::from_ref(spec), timeout)
            .await
    }

    /// Creates the topics that do not exist, in one request, then waits until each is visible
    /// with every partition's replicas all in sync.
    pub async fn create_topics(&self, specs: &[TopicSpec], timeout: Duration) -> Result<()> {
        let min_insync: Vec<Option<String>> = specs
            .iter()
            .map(|s| s.min_insync_replicas.map(|n| n.to_string()))
            .collect();
        let new: Vec<NewTopic> = specs
            .iter()
            .zip(&min_insync)
            .map(|(spec, min_insync)| {
                let topic = NewTopic::new(
                    &spec.name,
                    spec.partitions,
                    TopicReplication::Fixed(spec.replication_factor),
                );
                match min_insync {
                    Some(n) => topic.set("min.insync.replicas", n),
                    None => topic,
                }
            })
            .collect();
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        let options = AdminOptions::new().operation_timeout(Some(REQUEST_TIMEOUT));
        let results = self
            .admin
            .create_topics(&new, &options)
            .await
            .with_context(|| self.failure(&format!("creating {}", topics_phrase(&names))))?;
        for r in results {
            match r {
                Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                Err((name, code)) => {
                    let spec = specs.iter().find(|s| s.name == name).unwrap_or(&specs[0]);
                    bail!(
                        "creating topic `{name}` ({} partitions, replication factor {}) through {}: {code}",
                        spec.partitions,
                        spec.replication_factor,
                        self.bootstrap
                    )
                }
            }
        }
        let replicas = specs.iter().map(|s| s.replication_factor).max();
        self.wait_all_visible(&names, replicas.unwrap_or(1), timeout)
            .await
    }

    /// Waits until the topic's metadata shows its partitions without error.
    pub async fn wait_visible(&self, topic: &str, timeout: Duration) -> Result<()> {
        self.wait_all_visible(&[topic], 1, timeout).await
    }

    /// Each partition of `topic` as the cluster's metadata shows it, in partition order.
    pub async fn layout(&self, topic: &str) -> Result<Vec<PartitionLayout>> {
        let client = self.metadata.clone();
        let asked = vec![topic.to_string()];
        let found = tokio::task::spawn_blocking(move || layouts_of(&client, &asked))
            .await
            .context("metadata task panicked")?;
        let mut layout = found?.pop().map(|(_, l)| l).unwrap_or_default();
        layout.sort_by_key(|p| p.id);
        Ok(layout)
    }

    /// Waits until every topic's metadata shows its partitions, each with at least `replicas`
    /// replicas all in sync, asking for all in one request per try. Replication is read back,
    /// not taken as requested: a short in-sync set at the deadline is an error naming it.
    async fn wait_all_visible(
        &self,
        topics: &[&str],
        replicas: i32,
        timeout: Duration,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let owned: Vec<String> = topics.iter().map(|t| t.to_string()).collect();
        loop {
            let client = self.metadata.clone();
            let asked = owned.clone();
            let found = tokio::task::spawn_blocking(move || layouts_of(&client, &asked))
                .await
                .context("metadata task panicked")?;
            let last = match found {
                Ok(found) => match not_ready(&found, replicas) {
                    None => return Ok(()),
                    Some(why) => why,
                },
                Err(e) => format!("{e:#}"),
            };
            if Instant::now() >= deadline {
                bail!(
                    "{} not ready through {} after {:.1} s: {last}",
                    topics_phrase(topics),
                    self.bootstrap,
                    timeout.as_secs_f64()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Deletes the topic; a topic that does not exist is not an error.
    pub async fn delete_topic(&self, topic: &str) -> Result<()> {
        self.delete_topics(&[topic.to_string()]).await
    }

    /// Deletes the topics in one request; a topic that does not exist is not an error.
    pub async fn delete_topics(&self, topics: &[String]) -> Result<()> {
        let names: Vec<&str> = topics.iter().map(String::as_str).collect();
        let options = AdminOptions::new().operation_timeout(Some(REQUEST_TIMEOUT));
        let results = self
            .admin
            .delete_topics(&names, &options)
            .await
            .with_context(|| self.failure(&format!("deleting {}", topics_phrase(&names))))?;
        for r in results {
            match r {
                Ok(_) | Err((_, RDKafkaErrorCode::UnknownTopicOrPartition)) => {}
                Err((name, code)) => {
                    bail!("deleting topic `{name}` through {}: {code}", self.bootstrap)
                }
            }
        }
        Ok(())
    }

    /// Records in the topic: sum over partitions of end offset minus low watermark.
    pub async fn end_offsets(&self, topic: &str) -> Result<u64> {
        self.end_offsets_sum(&[topic.to_string()]).await
    }

    /// Records in all the topics, counted with one metadata request and one reader.
    ///
    /// The end offset is the listed high watermark, confirmed by reading from just before it
    /// to the partition end: some brokers (Tansu 0.6) list the last batch's base offset + 1,
    /// which would undercount; a correct broker answers the read with a single record.
    pub async fn end_offsets_sum(&self, topics: &[String]) -> Result<u64> {
        let client = self.metadata.clone();
        let config = self.config.clone();
        let owned = topics.to_vec();
        let result = tokio::task::spawn_blocking(move || -> Result<u64> {
            let mut marks = Vec::new();
            for (topic, partitions) in layouts_of(&client, &owned)? {
                for p in partitions.iter().map(|p| p.id) {
                    let (low, high) = client
                        .fetch_watermarks(&topic, p, REQUEST_TIMEOUT)
                        .with_context(|| format!("watermarks of partition {p} of `{topic}`"))?;
                    marks.push(Mark {
                        topic: topic.clone(),
                        partition: p,
                        low,
                        high,
                    });
                }
            }
            let ends = read_to_end(&config, &marks)?;
            Ok(marks
                .iter()
                .zip(ends)
                .map(|(m, end)| (end - m.low).max(0) as u64)
                .sum())
        })
        .await
        .context("watermark task panicked")?;
        result.with_context(|| {
            let names: Vec<&str> = topics.iter().map(String::as_str).collect();
            self.failure(&format!(
                "counting the records of {}",
                topics_phrase(&names)
            ))
        })
    }

    fn failure(&self, what: &str) -> String {
        format!(
            "{what} through {}{}",
            self.bootstrap,
            self.admin.inner().context().last_error.suffix()
        )
    }
}

/// One partition's listed watermarks.
struct Mark {
    topic: String,
    partition: i32,
    low: i64,
    high: i64,
}

/// End offset per mark, in order: the larger of the listed high watermark and the offset
/// after the last record found reading from just before it until the partition's end.
///
/// One reader serves every partition. Its end-of-partition event names only the partition
/// number, so each partition gets its own queue (split before the assignment, which keeps
/// every fetched message and event of that partition on it) and the queue names the topic.
fn read_to_end(config: &ClientConfig, marks: &[Mark]) -> Result<Vec<i64>> {
    let mut ends: Vec<i64> = marks.iter().map(|m| m.high).collect();
    let to_read: Vec<usize> = (0..marks.len())
        .filter(|&i| marks[i].high > marks[i].low)
        .collect();
    if to_read.is_empty() {
        return Ok(ends);
    }
    let mut config = config.clone();
    // librdkafka needs a group id to assign partitions; assigning joins no group.
    config
        .set(
            "group.id",
            format!("perf-tests-end-offsets-{}", super::unique_suffix()),
        )
        .set("enable.partition.eof", "true")
        // The end is reported by an empty fetch; do not let the broker hold it for long.
        .set("fetch.wait.max.ms", "10")
        .set("enable.auto.commit", "false");
    let reader: Arc<BaseConsumer<Quiet>> = Arc::new(
        config
            .create_with_context(Quiet::default())
            .context("creating the end-offset reader")?,
    );
    let mut list = TopicPartitionList::new();
    let mut pending = Vec::new();
    for &i in &to_read {
        let m = &marks[i];
        let queue = reader
            .split_partition_queue(&m.topic, m.partition)
            .ok_or_else(|| {
                anyhow!(
                    "no queue for partition {} of `{}` on the end-offset reader",
                    m.partition,
                    m.topic
                )
            })?;
        list.add_partition_offset(&m.topic, m.partition, Offset::Offset(m.high - 1))?;
        pending.push((i, queue));
    }
    reader.assign(&list)?;
    let deadline = Instant::now() + REQUEST_TIMEOUT;
    let mut last_error = String::from("no answer");
    while !pending.is_empty() {
        // The reader's own queue serves its callbacks; its messages went to the split queues.
        if let Some(Err(e)) = reader.poll(Duration::from_millis(10)) {
            last_error = e.to_string();
        }
        pending.retain(|(i, queue)| loop {
            match queue.poll(Duration::ZERO) {
                Some(Ok(message)) => ends[*i] = ends[*i].max(message.offset() + 1),
                Some(Err(KafkaError::PartitionEOF(_))) => return false,
                Some(Err(e)) => last_error = e.to_string(),
                None => return true,
            }
        });
        if !pending.is_empty() && Instant::now() >= deadline {
            let left: Vec<String> = pending
                .iter()
                .map(|(i, _)| format!("{}/{}", marks[*i].topic, marks[*i].partition))
                .collect();
            bail!(
                "reading partitions {} to their end: {last_error}",
                left.join(", ")
            );
        }
    }
    Ok(ends)
}

/// Why the topics are not ready yet: the first topic without partitions, or the first
/// partition with fewer than `replicas` replicas, or some of them out of sync.
fn not_ready(found: &[(String, Vec<PartitionLayout>)], replicas: i32) -> Option<String> {
    let ids = |v: &[i32]| {
        let v: Vec<String> = v.iter().map(i32::to_string).collect();
        v.join(", ")
    };
    for (topic, partitions) in found {
        if partitions.is_empty() {
            return Some(format!("topic `{topic}` has no partitions yet"));
        }
        // One replica asked for is visibility alone: some Kafka-compatible brokers list no
        // replicas at all.
        if replicas <= 1 {
            continue;
        }
        for p in partitions {
            let wanted = replicas as usize;
            if p.replicas.len() < wanted || p.isr.len() < p.replicas.len() {
                return Some(format!(
                    "topic `{topic}` partition {}: replicas [{}] in sync [{}], where {wanted} \
                     replicas all in sync were asked for (REPLICATION_FACTOR)",
                    p.id,
                    ids(&p.replicas),
                    ids(&p.isr)
                ));
            }
        }
    }
    None
}

/// Each topic's partitions (leader, replicas, in-sync set), from one metadata request.
fn layouts_of(
    client: &BaseConsumer<Quiet>,
    topics: &[String],
) -> Result<Vec<(String, Vec<PartitionLayout>)>> {
    // One topic asks for its own metadata only; several ask for all of the cluster's.
    let only = match topics {
        [topic] => Some(topic.as_str()),
        _ => None,
    };
    let metadata = client.fetch_metadata(only, REQUEST_TIMEOUT)?;
    topics
        .iter()
        .map(|topic| {
            let t = metadata
                .topics()
                .iter()
                .find(|t| t.name() == topic)
                .ok_or_else(|| anyhow!("topic `{topic}` missing from the metadata"))?;
            if let Some(e) = t.error() {
                bail!("topic `{topic}`: {}", RDKafkaErrorCode::from(e));
            }
            let layout = t
                .partitions()
                .iter()
                .map(|p| PartitionLayout {
                    id: p.id(),
                    leader: p.leader(),
                    replicas: p.replicas().to_vec(),
                    isr: p.isr().to_vec(),
                })
                .collect();
            Ok((topic.clone(), layout))
        })
        .collect()
}

/// The topics named for a message: all of a few, the first and last of many.
fn topics_phrase(topics: &[&str]) -> String {
    match topics {
        [one] => format!("topic `{one}`"),
        [first, .., last] if topics.len() > 3 => {
            format!("the {} topics `{first}` … `{last}`", topics.len())
        }
        _ => format!("topics `{}`", topics.join("`, `")),
    }
}

#[cfg(test)]
mod tests {
    use super::{not_ready, topics_phrase, PartitionLayout};

    fn partition(id: i32, replicas: &[i32], isr: &[i32]) -> PartitionLayout {
        PartitionLayout {
            id,
            leader: replicas[0],
            replicas: replicas.to_vec(),
            isr: isr.to_vec(),
        }
    }

    #[test]
    fn a_topic_is_ready_only_with_every_replica_in_sync() {
        let full = vec![("t".to_string(), vec![partition(0, &[1, 2, 3], &[1, 2, 3])])];
        assert_eq!(not_ready(&full, 3), None);
        let short = vec![(
            "t".to_string(),
            vec![
                partition(0, &[1, 2, 3], &[1, 2, 3]),
                partition(1, &[2, 3, 1], &[2]),
            ],
        )];
        assert_eq!(
            not_ready(&short, 3).unwrap(),
            "topic `t` partition 1: replicas [2, 3, 1] in sync [2], where 3 replicas all in \
             sync were asked for (REPLICATION_FACTOR)"
        );
        let fewer = vec![("t".to_string(), vec![partition(0, &[1], &[1])])];
        assert!(not_ready(&fewer, 3)
            .unwrap()
            .contains("replicas [1] in sync [1]"));
        assert_eq!(not_ready(&fewer, 1), None);
        let empty = vec![("t".to_string(), Vec::new())];
        assert_eq!(
            not_ready(&empty, 1).unwrap(),
            "topic `t` has no partitions yet"
        );
    }

    #[test]
    fn a_message_names_a_few_topics_and_the_ends_of_many() {
        assert_eq!(topics_phrase(&["a"]), "topic `a`");
        assert_eq!(topics_phrase(&["a", "b", "c"]), "topics `a`, `b`, `c`");
        assert_eq!(
            topics_phrase(&["t-1", "t-2", "t-3", "t-4"]),
            "the 4 topics `t-1` … `t-4`"
        );
    }
}
