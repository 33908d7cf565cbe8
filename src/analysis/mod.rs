//! Judgements read from the results' `model`: the metrics every table and comparison names by
//! id (`metrics`), two sides' runs compared metric by metric (`compare`), a paired run's sides compared pair by pair (`pair`), a sweep's climb and
//! its stop rule (`sweep`), and the sizing read from a sweep (`sizing`). No engine, file or
//! terminal: tables and charts of these are drawn in `present`.

pub mod compare;
pub mod metrics;
pub mod pair;
pub mod sizing;
pub mod sweep;
