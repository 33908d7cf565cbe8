//! Producers and a consuming group running at once in one step, so that its lag is counted
//! exactly: the parameters the backlog mode's catch-up and a DURATION run share.

use clap::Args;
use serde::Serialize;

use super::args::Seconds;
use super::consumer::ConsumeConfig;
use super::producer::ProduceConfig;

/// The producers (their `num_records` only a cap: the step stops them) and the group.
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct Together {
    #[command(flatten)]
    #[serde(flatten)]
    pub produce: ProduceConfig,
    /// Producers sharing the rate.
    #[arg(long, default_value_t = 1)]
    pub producers: u32,
    /// Consumer group.
    #[arg(long)]
    pub group: String,
    /// Consumers in the group.
    #[arg(long, default_value_t = 1)]
    pub consumers: u32,
    /// Seconds without a record after which the group fails.
    #[arg(long = "timeout-s", default_value = "60")]
    pub timeout: Seconds,
}

impl Together {
    /// The group's configuration: it reads what the producers write, through the same endpoint,
    /// until the step stops it (so no count of its own); with `end_to_end` it tallies each
    /// record's send-to-receipt latency.
    pub fn consume(&self, end_to_end: bool) -> ConsumeConfig {
        ConsumeConfig {
            timeout: self.timeout,
            consumers: self.consumers,
            end_to_end,
            ..ConsumeConfig::new(
                self.produce.endpoint.clone(),
                self.produce.topics.clone(),
                &self.group,
                crate::settings::MAX_COUNT,
            )
        }
    }
}
