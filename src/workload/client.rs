//! What every Kafka client of the workload shares: it keeps librdkafka quiet but remembers
//! the last error it reported, so a failure can say why (for example "Connection refused").

use std::sync::Mutex;

use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::ConsumerContext;
use rdkafka::error::KafkaError;

/// The last error librdkafka reported, if any.
#[derive(Debug, Default)]
pub struct LastError(Mutex<Option<String>>);

impl LastError {
    /// Remembers an error message, replacing the previous one.
    pub fn set(&self, message: String) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(message);
    }

    /// The last error message, if any.
    pub fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// " (last client error: …)" or nothing, to append to a failure message.
    pub fn suffix(&self) -> String {
        self.get()
            .map(|e| format!(" (last client error: {e})"))
            .unwrap_or_default()
    }

    pub(crate) fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        if (level as i32) <= (RDKafkaLogLevel::Warning as i32) {
            self.set(format!("{fac}: {message}"));
        }
    }

    pub(crate) fn error(&self, error: KafkaError, reason: &str) {
        self.set(format!("{error}: {reason}"));
    }
}

/// Context for clients that need nothing but error capture (admin, metadata, probe).
#[derive(Debug, Default)]
pub struct Quiet {
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
