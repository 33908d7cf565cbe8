//! What every Kafka client of the workload shares: it keeps librdkafka quiet but remembers
//! the last error it reported, so a failure can say why (for example "Connection refused").

use std::sync::Mutex;

use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::ConsumerContext;
use rdkafka::error::KafkaError;

/// The last error and the last warning log line librdkafka reported, if any.
#[derive(Debug, Default)]
pub(crate) struct LastError {
    error: Mutex<Option<String>>,
    log: Mutex<Option<String>>,
}

fn store(slot: &Mutex<Option<String>>, message: String) {
    *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(message);
}

fn load(slot: &Mutex<Option<String>>) -> Option<String> {
    slot.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

impl LastError {
    /// Remembers an error message, replacing the previous one.
    pub(crate) fn set(&self, message: String) {
        store(&self.error, message);
    }

    /// " (last client error: …; last client log: …)" or nothing, to append to a failure.
    pub(crate) fn suffix(&self) -> String {
        let parts: Vec<String> = [
            load(&self.error).map(|e| format!("last client error: {e}")),
            load(&self.log).map(|l| format!("last client log: {l}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join("; "))
        }
    }

    pub(crate) fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        if (level as i32) <= (RDKafkaLogLevel::Warning as i32) {
            store(&self.log, format!("{fac}: {message}"));
        }
    }

    pub(crate) fn error(&self, error: KafkaError, reason: &str) {
        self.set(format!("{error}: {reason}"));
    }
}

/// Context for clients that need nothing but error capture (admin, metadata, probe).
#[derive(Debug, Default)]
pub(crate) struct Quiet {
    pub last_error: LastError,
}

impl ClientContext for Quiet {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        self.last_error.log(level, fac, message);
    }

    fn error(&self, error: KafkaError, reason: &str) {
        self.last_error.error(error, reason);
    }
}

impl ConsumerContext for Quiet {}
