//! A consumer's records read in batches from a queue of its own, apart from the queue that
//! carries its group's events. rust-rdkafka's `poll` hands out one record per call through
//! librdkafka's event interface (a clock read, an event set up, an `Arc` allocated and freed
//! per record) and the offset was stored per record: together about a fifth of the consumer's
//! instructions per record. Here each assigned partition's fetched records are forwarded to
//! this queue and taken up to [`BATCH`] at a time (`rd_kafka_consume_batch_queue`), the
//! offsets stored once per partition per batch; rebalances and errors still come through
//! rust-rdkafka's `poll` of the consumer's queue, which is served between batches, so a revoke
//! always finds the offsets of every record counted already stored. A wait is woken when either
//! queue stops being empty ([`QueueWaker`]).

use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use rdkafka::bindings as rdsys;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::types::RDKafkaErrorCode;

use super::queue_waker::QueueWaker;

/// Records taken from the queue at most at once.
pub(crate) const BATCH: usize = 512;

/// The member's queue of records, woken with its queue of group events.
pub(crate) struct RecordQueue<'c> {
    /// Where the consumer's rebalance callback finds the queue to [`forward`] partitions to;
    /// emptied when the queue goes, so that a rebalance served while the consumer closes
    /// forwards nothing to a queue that is gone.
    slot: &'c AtomicPtr<rdsys::rd_kafka_queue_t>,
    /// The queue of records (0) and the consumer's own queue of events (1).
    queues: QueueWaker,
    taken: Vec<*mut rdsys::rd_kafka_message_t>,
}

impl<'c> RecordQueue<'c> {
    /// A queue of records for `consumer`, put in `slot` (the consumer context's) for its
    /// rebalance callback to [`forward`] each assigned partition to.
    pub(crate) fn new<C: ConsumerContext>(
        consumer: &BaseConsumer<C>,
        slot: &'c AtomicPtr<rdsys::rd_kafka_queue_t>,
    ) -> Result<RecordQueue<'c>> {
        let rk = consumer.client().native_ptr();
        // SAFETY: the client pointer is valid while `consumer` lives; the handles are released
        // before it (this queue is declared after it).
        let handles = unsafe {
            [
                rdsys::rd_kafka_queue_new(rk),
                rdsys::rd_kafka_queue_get_consumer(rk),
            ]
        };
        if handles.iter().any(|q| q.is_null()) {
            for q in handles.into_iter().filter(|q| !q.is_null()) {
                // SAFETY: a handle librdkafka gave, released once.
                unsafe { rdsys::rd_kafka_queue_destroy(q) };
            }
            bail!("librdkafka gave the consumer no queue (no group.id?)");
        }
        let queues = QueueWaker::new(handles.to_vec())?;
        slot.store(queues.queue(0), Ordering::SeqCst);
        Ok(RecordQueue {
            slot,
            queues,
            taken: Vec::with_capacity(BATCH),
        })
    }

    /// Takes the records waiting, up to [`BATCH`], without waiting; each is destroyed when the
    /// batch is dropped.
    pub(crate) fn take(&mut self) -> Batch<'_> {
        self.taken.clear();
        // SAFETY: the buffer has room for BATCH pointers; librdkafka writes `n` of them.
        let n = unsafe {
            rdsys::rd_kafka_consume_batch_queue(
                self.queues.queue(0),
                0,
                self.taken.as_mut_ptr(),
                BATCH,
            )
        };
        // SAFETY: librdkafka wrote `n` (at most BATCH) message pointers; -1 is an error.
        unsafe { self.taken.set_len(n.max(0) as usize) };
        Batch {
            messages: &mut self.taken,
        }
    }

    /// Blocks until either queue stops being empty, or for `d`.
    pub(crate) fn wait(&self, d: Duration) {
        self.queues.wait(d);
    }
}

impl Drop for RecordQueue<'_> {
    fn drop(&mut self) {
        // Before the waker releases the queue (its field is dropped after this).
        self.slot.store(std::ptr::null_mut(), Ordering::SeqCst);
    }
}

/// Forwards partition `partition` of `topic` of `consumer` to the queue in `slot` (a
/// [`RecordQueue`]'s), if there is one. librdkafka keeps a forwarding the application set while
/// the partition is fetched and clears it when fetching stops, so each assignment forwards its
/// partitions again.
pub(crate) fn forward<C: ConsumerContext>(
    consumer: &BaseConsumer<C>,
    slot: &AtomicPtr<rdsys::rd_kafka_queue_t>,
    topic: &str,
    partition: i32,
) -> Result<()> {
    let queue = slot.load(Ordering::SeqCst);
    if queue.is_null() {
        // No queue (yet, or any more): the partition's records go to the consumer's own queue.
        return Ok(());
    }
    let name = CString::new(topic).with_context(|| format!("topic name `{topic}`"))?;
    let rk = consumer.client().native_ptr();
    // SAFETY: the client lives while `consumer` does and the queue while it is in `slot`; the
    // partition's handle is released once.
    unsafe {
        let partition_queue = rdsys::rd_kafka_queue_get_partition(rk, name.as_ptr(), partition);
        if partition_queue.is_null() {
            bail!("no queue for partition {partition} of topic `{topic}`");
        }
        rdsys::rd_kafka_queue_forward(partition_queue, queue);
        rdsys::rd_kafka_queue_destroy(partition_queue);
    }
    Ok(())
}

/// Records taken at once; destroyed when dropped.
pub(crate) struct Batch<'a> {
    messages: &'a mut Vec<*mut rdsys::rd_kafka_message_t>,
}

impl Batch<'_> {
    pub(crate) fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The batch's messages, in the order librdkafka returned them.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &rdsys::rd_kafka_message_t> {
        // SAFETY: each pointer is a message librdkafka returned, valid until destroyed in Drop.
        self.messages.iter().map(|&m| unsafe { &*m })
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        for &m in self.messages.iter() {
            // SAFETY: each message is destroyed once.
            unsafe { rdsys::rd_kafka_message_destroy(m) };
        }
        self.messages.clear();
    }
}

/// A record's error, when it carries one rather than a record (`err` set).
pub(crate) fn error_of(message: &rdsys::rd_kafka_message_t) -> Option<String> {
    if message.err == rdsys::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
        return None;
    }
    let code: RDKafkaErrorCode = message.err.into();
    // SAFETY: librdkafka returns a NUL-terminated string that lives as long as the message.
    let text = unsafe {
        let s = rdsys::rd_kafka_message_errstr(message);
        if s.is_null() {
            String::new()
        } else {
            CStr::from_ptr(s).to_string_lossy().into_owned()
        }
    };
    Some(if text.is_empty() {
        code.to_string()
    } else {
        format!("{code}: {text}")
    })
}

/// A record's timestamp in milliseconds since the Unix epoch, when it has one.
pub(crate) fn timestamp_ms(message: &rdsys::rd_kafka_message_t) -> Option<i64> {
    let mut kind = rdsys::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
    // SAFETY: reads the message's timestamp; `kind` is written.
    let ms = unsafe { rdsys::rd_kafka_message_timestamp(message, &mut kind) };
    (kind != rdsys::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE && ms >= 0)
        .then_some(ms)
}

/// The newest offset counted of each partition since the last [`Offsets::store`].
#[derive(Default)]
pub(crate) struct Offsets {
    pending: Vec<(*mut rdsys::rd_kafka_topic_t, i32, i64)>,
}

impl Offsets {
    /// Notes `message` as counted. Its topic handle must still be valid at [`Offsets::store`]
    /// (the message not yet destroyed).
    pub(crate) fn counted(&mut self, message: &rdsys::rd_kafka_message_t) {
        let (topic, partition, offset) = (message.rkt, message.partition, message.offset);
        match self
            .pending
            .iter_mut()
            .find(|(t, p, _)| *t == topic && *p == partition)
        {
            Some(entry) => entry.2 = entry.2.max(offset),
            None => self.pending.push((topic, partition, offset)),
        }
    }

    /// Stores each partition's newest counted offset (librdkafka commits the one after it).
    pub(crate) fn store(&mut self) -> Result<()> {
        for (topic, partition, offset) in self.pending.drain(..) {
            // SAFETY: the topic handle belongs to a message not yet destroyed.
            let err = unsafe { rdsys::rd_kafka_offset_store(topic, partition, offset) };
            if err != rdsys::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
                let code: RDKafkaErrorCode = err.into();
                bail!("storing the offset of a record read (partition {partition}): {code}");
            }
        }
        Ok(())
    }
}
