//! The arithmetic under every figure, plain functions of plain numbers: statistics (`stats`),
//! a container's counters as read (`counters`), and what they, a JVM's GC log (`gc`) and its
//! threads' CPU (`jvm_threads`) say a measured phase cost (`cost`). Imports nothing else of the
//! crate's.

pub mod cost;
pub mod counters;
pub mod gc;
pub mod jvm_threads;
pub mod stats;
