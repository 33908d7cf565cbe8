//! What the steps' parameter types share on the command line: where a step connects, and spans
//! of time given in seconds.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use serde::{Serialize, Serializer};

use super::properties::parse_pair;
use super::Admin;

/// Where a step connects, and how.
#[derive(Debug, Clone, PartialEq, Args, Serialize)]
pub struct Endpoint {
    /// Kafka bootstrap endpoint, host:port.
    #[arg(long)]
    pub bootstrap: String,
    /// Property for every client of the step, key=value; repeatable.
    #[arg(long = "client-property", value_parser = parse_pair)]
    pub client_properties: Vec<(String, String)>,
}

impl Endpoint {
    /// An endpoint whose clients all get `client` properties.
    pub fn new(bootstrap: impl Into<String>, client: &[(String, String)]) -> Endpoint {
        Endpoint {
            bootstrap: bootstrap.into(),
            client_properties: client.to_vec(),
        }
    }

    pub(crate) fn admin(&self) -> Result<Admin> {
        Admin::connect(&self.bootstrap, &self.client_properties)
    }
}

/// A step's parameters from `required` flags alone, every other field at its command-line
/// default: the flags' attributes stay the one place a step's defaults are stated, and a new
/// field with a default reaches every caller of a step's constructor by itself.
pub(crate) fn from_flags<T: Args + clap::FromArgMatches>(required: &[&str]) -> T {
    let matches = T::augment_args(clap::Command::new("step").no_binary_name(true))
        .try_get_matches_from(required)
        .and_then(|m| T::from_arg_matches(&m));
    // The flags are this crate's own, written by the step's constructor.
    matches.unwrap_or_else(|e| panic!("a step's constructor gave flags {required:?}: {e}"))
}

/// A span of time, written on the command line (and serialised) as seconds, so a step's type
/// holds a [`Duration`] and still renders to and parses from its flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Seconds(pub Duration);

impl FromStr for Seconds {
    type Err = String;

    fn from_str(s: &str) -> Result<Seconds, String> {
        let secs: f64 = s
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a number of seconds"))?;
        Duration::try_from_secs_f64(secs)
            .map(Seconds)
            .map_err(|_| format!("`{s}` is not a duration (seconds, 0 or more)"))
    }
}

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.as_secs_f64())
    }
}

impl Serialize for Seconds {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0.as_secs_f64())
    }
}

impl From<Duration> for Seconds {
    fn from(d: Duration) -> Seconds {
        Seconds(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_read_back_what_they_write_and_refuse_what_is_not_a_duration() {
        for d in [
            Duration::ZERO,
            Duration::from_millis(1500),
            Duration::from_secs(3600),
        ] {
            let text = Seconds(d).to_string();
            assert_eq!(text.parse::<Seconds>(), Ok(Seconds(d)), "{text}");
        }
        assert!("-1".parse::<Seconds>().unwrap_err().contains("`-1`"));
        assert!("soon".parse::<Seconds>().unwrap_err().contains("`soon`"));
    }
}
