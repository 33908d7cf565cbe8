//! Waits on librdkafka queues that serve their work as it comes. rust-rdkafka's `poll` takes
//! whole milliseconds and spins through the fraction of its last one; here librdkafka writes a
//! byte to a socket whenever a watched queue stops being empty, and a wait blocks on that socket
//! with a microsecond timeout. The producer watches its queue of delivery reports, a consumer
//! its queue of records and its queue of group events.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use anyhow::{Context, Result};
use rdkafka::bindings as rdsys;

/// Queue handles, owned, and the socket their wake-ups reach.
pub(crate) struct QueueWaker {
    queues: Vec<*mut rdsys::rd_kafka_queue_t>,
    woken: UnixStream,
    _waker: UnixStream,
}

// SAFETY: librdkafka's queue handles may be used from any thread; the waker is used by one
// thread at a time.
unsafe impl Send for QueueWaker {}

impl QueueWaker {
    /// Watches `queues`, handles this waker now owns (from `rd_kafka_queue_get_*` or
    /// `rd_kafka_queue_new`, none null): they must be released before their client, so the
    /// waker is declared after it.
    pub(crate) fn new(queues: Vec<*mut rdsys::rd_kafka_queue_t>) -> Result<QueueWaker> {
        let (woken, waker) = UnixStream::pair().context("a socket pair for librdkafka's queues")?;
        waker
            .set_nonblocking(true)
            .context("a socket pair for librdkafka's queues")?;
        static BYTE: [u8; 1] = [1];
        for &q in &queues {
            // SAFETY: the handle is valid; the socket outlives the registration (see Drop).
            unsafe {
                rdsys::rd_kafka_queue_io_event_enable(
                    q,
                    waker.as_raw_fd(),
                    BYTE.as_ptr() as *const std::ffi::c_void,
                    1,
                )
            };
        }
        Ok(QueueWaker {
            queues,
            woken,
            _waker: waker,
        })
    }

    /// Watched queue `i`, in the order given to [`QueueWaker::new`].
    pub(crate) fn queue(&self, i: usize) -> *mut rdsys::rd_kafka_queue_t {
        self.queues[i]
    }

    /// Blocks until a watched queue stops being empty (or a stale wake-up is read), or for `d`.
    pub(crate) fn wait(&self, d: Duration) {
        let mut buf = [0u8; 64];
        let _ = self
            .woken
            .set_read_timeout(Some(d.max(Duration::from_micros(1))));
        let _ = (&self.woken).read(&mut buf);
    }
}

impl Drop for QueueWaker {
    fn drop(&mut self) {
        for &q in &self.queues {
            // SAFETY: unregisters the socket before it closes, then releases the handle once.
            unsafe {
                rdsys::rd_kafka_queue_io_event_enable(q, -1, std::ptr::null(), 0);
                rdsys::rd_kafka_queue_destroy(q);
            }
        }
    }
}
