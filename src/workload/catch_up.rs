//! The backlog mode's catch-up (MODE=backlog), in one process so that the lag is counted
//! exactly: a consumer group resumes with a backlog waiting while a live producer sends at a
//! fixed rate. The group has caught up once its lag (the backlog plus the live producer's
//! acknowledged records, minus the records consumed, as OMB's backlog test counts it) comes down
//! to a bound; then, or at the time limit, the producer stops.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::{bail, Result};
use clap::Args;
use serde::{Deserialize, Serialize};

use super::args::Seconds;
use super::consumer::consume_until;
use super::producer::{produce_live, Live, Progress};
use super::together::Together;
use crate::model::{CatchUp, ConsumerResult, ProducerResult};

/// One catch-up: the live producers and the group that resumes (the `catch-up` step's
/// parameters, on the command line as they are in memory).
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct CatchUpConfig {
    #[command(flatten)]
    #[serde(flatten)]
    pub clients: Together,
    /// Records waiting for the group when it resumes.
    #[arg(long)]
    pub backlog: u64,
    /// Seconds the group may take to catch up; the lag then left is reported.
    #[arg(long = "limit-s")]
    pub limit: Seconds,
}

/// What a catch-up measured: the live producer's results, and the group's, its
/// [`ConsumerResult::catch_up`] set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatchUpResult {
    pub live: ProducerResult,
    pub consumer: ConsumerResult,
}

/// The lag a group must come down to at a live rate: what the producer sends in 100 ms (a
/// fetch round trip or two), and at least OMB's 1000 records, so that a group reading as fast as
/// records arrive counts as caught up whatever the rate.
pub(crate) fn lag_bound(rate: u64) -> u64 {
    (rate / 10).max(1000)
}

/// The line a catch-up prints for its progress; it starts as the consumer's, so the host's flow
/// counts it alike.
pub(crate) fn progress_line(consumed: u64, lag: u64) -> String {
    format!("consumed {consumed} records, lag {lag}")
}

/// Runs the catch-up: the producer and the group start together; `producer_progress` gets the
/// producer's windows, `consumer_progress` the group's count and lag.
pub(crate) async fn catch_up(
    cfg: &CatchUpConfig,
    producer_progress: impl FnMut(Progress) + Send,
    mut consumer_progress: impl FnMut(u64, u64) + Send + 'static,
) -> Result<CatchUpResult> {
    let Some(rate) = cfg.clients.produce.throughput.limit() else {
        bail!("a catch-up's live producer needs a positive rate (THROUGHPUT)");
    };
    let live = Arc::new(Live::default());
    let lag = {
        let live = live.clone();
        let backlog = cfg.backlog;
        move |consumed: u64| (backlog + live.acked.load(Ordering::Relaxed)).saturating_sub(consumed)
    };
    let bound = lag_bound(rate);
    let state = Arc::new(State::default());
    let done = {
        let (state, lag, backlog) = (state.clone(), lag.clone(), cfg.backlog);
        move |consumed: u64| state.done(consumed >= backlog, lag(consumed), bound)
    };
    let expire = {
        let (state, limit) = (state.clone(), cfg.limit.0);
        tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            state.expired.store(true, Ordering::SeqCst);
        })
    };
    let produce = async {
        let r = produce_live(
            &cfg.clients.produce,
            cfg.clients.producers,
            Some(live.clone()),
            producer_progress,
        )
        .await;
        // A producer that failed leaves nothing to catch up with.
        state.expired.store(true, Ordering::SeqCst);
        r
    };
    let group = cfg.clients.consume(false);
    let consume = async {
        let lag = lag.clone();
        let r = consume_until(
            &group,
            move |n| consumer_progress(n, lag(n)),
            || {},
            done,
            None,
        )
        .await;
        live.stop.store(true, Ordering::SeqCst);
        r
    };
    let (live_result, consumer) = tokio::join!(produce, consume);
    expire.abort();
    let (live_result, mut consumer) = (live_result?, consumer?);
    let caught = state.caught.load(Ordering::SeqCst);
    consumer.catch_up = Some(CatchUp {
        backlog: cfg.backlog,
        live_target_rec_s: rate as f64,
        live_rec_s: live_result.rate_rec_s,
        lag_bound: bound,
        caught_up_s: caught
            .then(|| (consumer.rebalance_ms + consumer.fetch_ms.unwrap_or_default()) / 1000.0),
        final_lag: state.final_lag.load(Ordering::SeqCst),
    });
    Ok(CatchUpResult {
        live: live_result,
        consumer,
    })
}

/// Where a catch-up stands; once finished it stays so, so that every member of the group stops
/// at the moment one of them saw the lag come down, however the lag moves after.
#[derive(Default)]
struct State {
    finished: AtomicBool,
    caught: AtomicBool,
    expired: AtomicBool,
    final_lag: AtomicU64,
}

impl State {
    fn done(&self, backlog_read: bool, lag: u64, bound: u64) -> bool {
        if self.finished.load(Ordering::SeqCst) {
            return true;
        }
        let caught = backlog_read && lag <= bound;
        if !caught && !self.expired.load(Ordering::SeqCst) {
            return false;
        }
        if !self.finished.swap(true, Ordering::SeqCst) {
            self.caught.store(caught, Ordering::SeqCst);
            self.final_lag.store(lag, Ordering::SeqCst);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_100_ms_of_the_rate_and_at_least_1000() {
        assert_eq!(lag_bound(1), 1000);
        assert_eq!(lag_bound(10_000), 1000);
        assert_eq!(lag_bound(50_000), 5000);
    }

    #[test]
    fn a_catch_up_ends_once_the_backlog_is_read_and_the_lag_is_down() {
        let s = State::default();
        assert!(!s.done(false, 10, 1000), "backlog not read yet");
        assert!(!s.done(true, 1001, 1000));
        assert!(s.done(true, 1000, 1000));
        assert!(s.caught.load(Ordering::SeqCst));
        assert_eq!(s.final_lag.load(Ordering::SeqCst), 1000);
        // Every member stops with it, even if the lag has grown since.
        assert!(s.done(true, 5000, 1000));
        assert_eq!(s.final_lag.load(Ordering::SeqCst), 1000);
    }

    #[test]
    fn an_expired_catch_up_ends_not_caught_up_with_its_lag() {
        let s = State::default();
        assert!(!s.done(true, 9000, 1000));
        s.expired.store(true, Ordering::SeqCst);
        assert!(s.done(true, 9000, 1000));
        assert!(!s.caught.load(Ordering::SeqCst));
        assert_eq!(s.final_lag.load(Ordering::SeqCst), 9000);
    }
}
