//! A producer's rate: unlimited, or a number of records per second. `THROUGHPUT` becomes one
//! when the settings are read, and the settings, the measurement's spec and the workload's
//! parameters all hold it as it is; it is written as the reference's tools write it (`-1` for
//! unlimited) on the workload's command line and in stored settings.

use std::fmt;
use std::num::NonZeroU64;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Ordered by records per second, unlimited above every limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rate {
    PerSecond(NonZeroU64),
    #[default]
    Unlimited,
}

impl Rate {
    /// `n` records per second; none (0) is no limit a producer could keep.
    pub fn per_second(n: u64) -> Option<Rate> {
        NonZeroU64::new(n).map(Rate::PerSecond)
    }

    /// Records per second, if limited.
    pub(crate) fn limit(self) -> Option<u64> {
        match self {
            Rate::Unlimited => None,
            Rate::PerSecond(n) => Some(n.get()),
        }
    }

    pub(crate) fn is_limited(self) -> bool {
        self != Rate::Unlimited
    }

    /// Share `i` of `n` clients sending together at this rate: whole records per second split
    /// as evenly as they go (the first ones get the remainders), never below 1; unlimited
    /// stays unlimited.
    pub(crate) fn share(self, n: u64, i: u64) -> Rate {
        match self {
            Rate::Unlimited => Rate::Unlimited,
            Rate::PerSecond(total) => Rate::PerSecond(
                NonZeroU64::new(share(total.get(), n, i)).unwrap_or(NonZeroU64::MIN),
            ),
        }
    }

    /// The rate as a result records its target: records per second, -1 when unlimited.
    pub(crate) fn as_target(self) -> f64 {
        self.limit().map_or(-1.0, |n| n as f64)
    }
}

/// Share `i` of `total` split over `n` as evenly as whole numbers go, the first ones taking the
/// remainders: what each of several clients (producers, load generators) takes of a count or a
/// rate.
pub(crate) fn share(total: u64, n: u64, i: u64) -> u64 {
    total / n + u64::from(i < total % n)
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.limit() {
            None => f.write_str("-1"),
            Some(n) => write!(f, "{n}"),
        }
    }
}

impl FromStr for Rate {
    type Err = String;

    /// What [`Display`](fmt::Display) writes: `-1`, or a positive whole number.
    fn from_str(s: &str) -> Result<Rate, String> {
        let s = s.trim();
        if s == "-1" {
            return Ok(Rate::Unlimited);
        }
        s.parse::<u64>()
            .ok()
            .and_then(Rate::per_second)
            .ok_or_else(|| {
                format!("`{s}` is not a rate (records/s, 1 or more, or -1 for unlimited)")
            })
    }
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.limit() {
            None => s.serialize_i64(-1),
            Some(n) => s.serialize_u64(n),
        }
    }
}

impl<'de> Deserialize<'de> for Rate {
    /// Any number of 0 or below is unlimited, as the tools this writes like take it.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Rate, D::Error> {
        let n = i64::deserialize(d)?;
        Ok(u64::try_from(n)
            .ok()
            .and_then(Rate::per_second)
            .unwrap_or(Rate::Unlimited))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_reads_back_what_it_writes_and_refuses_what_is_not_one() {
        for r in [
            Rate::Unlimited,
            Rate::per_second(1).unwrap(),
            Rate::per_second(50_000).unwrap(),
        ] {
            assert_eq!(r.to_string().parse::<Rate>(), Ok(r));
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, r.to_string());
            assert_eq!(serde_json::from_str::<Rate>(&json).unwrap(), r);
        }
        for bad in ["0", "-2", "fast", "1.5"] {
            assert!(
                bad.parse::<Rate>()
                    .unwrap_err()
                    .contains(&format!("`{bad}`")),
                "{bad}"
            );
        }
        assert_eq!(serde_json::from_str::<Rate>("0").unwrap(), Rate::Unlimited);
    }

    #[test]
    fn shares_add_up_to_the_rate_and_never_stop_a_client() {
        let r = Rate::per_second(10).unwrap();
        let parts: Vec<u64> = (0..3).map(|i| r.share(3, i).limit().unwrap()).collect();
        assert_eq!(parts, [4, 3, 3]);
        assert_eq!(Rate::per_second(2).unwrap().share(3, 2).limit(), Some(1));
        assert_eq!(Rate::Unlimited.share(3, 0), Rate::Unlimited);
        assert_eq!(Rate::Unlimited.as_target(), -1.0);
        assert_eq!(r.as_target(), 10.0);
        assert!(Rate::per_second(9).unwrap() < r && r < Rate::Unlimited);
    }
}
