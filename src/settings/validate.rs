//! The checks across settings: what no one setting's parser can see alone. A run's plan calls
//! [`Settings::validate`] once for every combination of its matrix, before anything starts.

use anyhow::{bail, Result};

use super::{EngineKind, Mode, Settings};

impl Settings {
    /// Refuses a combination of settings that cannot be measured as asked, naming the settings
    /// at fault and their values.
    pub(crate) fn validate(&self) -> Result<()> {
        self.consumers_have_partitions()?;
        self.duration_fits_the_mode()?;
        self.engine_takes_the_settings()?;
        self.load_generators_share_the_clients()?;
        self.replicas_fit_the_brokers()?;
        if self.mode == Mode::Backlog && !self.throughput.is_limited() {
            bail!(
                "MODE=backlog needs THROUGHPUT: the rate a producer keeps sending at while the \
                 group catches up with the backlog (THROUGHPUT={} is unlimited, and an \
                 unlimited producer never lets a group catch up)",
                self.throughput
            );
        }
        Ok(())
    }

    /// A partition's replicas live on distinct brokers, and a write can wait only for replicas
    /// that exist.
    fn replicas_fit_the_brokers(&self) -> Result<()> {
        let (brokers, rf, isr) = (
            self.brokers,
            self.replication_factor,
            self.min_insync_replicas,
        );
        if rf > brokers {
            bail!(
                "REPLICATION_FACTOR={rf} is more than BROKERS={brokers}: each replica of a \
                 partition lives on a broker of its own"
            );
        }
        if isr > rf {
            bail!(
                "MIN_INSYNC_REPLICAS={isr} is more than REPLICATION_FACTOR={rf}: no write could \
                 ever be acknowledged with acks=all"
            );
        }
        Ok(())
    }

    /// Several load generators each run at least one producer and one consumer and a share of
    /// the rate, in the modes whose figures merge from their histograms.
    fn load_generators_share_the_clients(&self) -> Result<()> {
        let n = self.load_generators;
        if n <= 1 {
            return Ok(());
        }
        let each = format!(
            "LOAD_GENERATORS={n} spreads the producers, the consumers and the rate over {n} \
             load generators, each with at least one"
        );
        for (var, count) in [("PRODUCERS", self.producers), ("CONSUMERS", self.consumers)] {
            if count < n {
                bail!("{each}: {var}={count} is too few (set {var}={n} or more)");
            }
        }
        if self.throughput.limit().is_some_and(|r| r < u64::from(n)) {
            bail!(
                "{each}: THROUGHPUT={} is too low (set THROUGHPUT={n} or more, or -1)",
                self.throughput
            );
        }
        if self.mode == Mode::Backlog || self.duration.is_some() {
            let what = if self.mode == Mode::Backlog {
                "MODE=backlog".to_string()
            } else {
                format!("DURATION={}", self.duration.unwrap_or_default().as_secs())
            };
            bail!(
                "LOAD_GENERATORS={n} cannot be used with {what}: several load generators' \
                 figures are merged from whole phases, not from a catch-up or second by second"
            );
        }
        if self.driver != "native" {
            bail!(
                "LOAD_GENERATORS={n} needs DRIVER=native (DRIVER={}): several load generators' \
                 latencies are merged from their histograms, which only the native workload \
                 keeps",
                self.driver
            );
        }
        Ok(())
    }

    /// A swarm's services cannot be pinned to CPUs (the load generator, a container of the
    /// load node's engine, can); roles place services only on a swarm.
    fn engine_takes_the_settings(&self) -> Result<()> {
        if self.engine == EngineKind::Swarm {
            if !self.services_cpuset.is_empty() {
                bail!(
                    "SERVICES_CPUSET cannot be used with ENGINE=swarm: Swarm creates a service's \
                     container and takes no CPU list, and a pin set once it runs would come \
                     after a JVM sized its threads by every CPU of the node; leave it unset \
                     (WORKLOAD_CPUSET pins the load generator on its node)"
                );
            }
        } else if !self.swarm_roles.is_empty() {
            bail!("SWARM_ROLES places services on a swarm's nodes: it needs ENGINE=swarm");
        } else if let Some(registry) = &self.registry {
            bail!(
                "REGISTRY={registry} carries images to a swarm's nodes: it needs ENGINE=swarm \
                 (one engine runs the images it has)"
            );
        }
        Ok(())
    }

    fn consumers_have_partitions(&self) -> Result<()> {
        let partitions = u64::from(self.partitions) * u64::from(self.topics);
        if u64::from(self.consumers) <= partitions {
            return Ok(());
        }
        let of = if self.topics > 1 {
            format!(
                "the {partitions} partitions of TOPICS={} topics of PARTITIONS={} each",
                self.topics, self.partitions
            )
        } else {
            format!("PARTITIONS={}", self.partitions)
        };
        bail!(
            "CONSUMERS={} is more than {of}: the consumers share one group, so those beyond the \
             partitions would get none and read nothing",
            self.consumers,
        );
    }

    fn duration_fits_the_mode(&self) -> Result<()> {
        let w = self.duration_warm_up.as_secs();
        match self.duration.map(|d| d.as_secs()) {
            None if w > 0 => bail!(
                "DURATION_WARM_UP={w} without DURATION: only a run bounded by time has a warm-up \
                 within it (WARM_UP_SECONDS_PRE_TEST warms up before any run)"
            ),
            Some(d) if w >= d => bail!(
                "DURATION_WARM_UP={w} is not shorter than DURATION={d}: nothing would be left \
                 to measure"
            ),
            Some(d) if self.mode != Mode::EndToEnd => bail!(
                "DURATION={d} needs MODE=end-to-end: a run bounded by time keeps its producers \
                 and its consumers running together (MODE={} runs them one after the other)",
                self.mode
            ),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> Settings {
        let mut s = Settings::without_commit();
        for (var, value) in pairs {
            super::super::table::find(var)
                .unwrap()
                .set(&mut s, value)
                .unwrap();
        }
        s
    }

    fn refused(pairs: &[(&str, &str)]) -> String {
        with(pairs).validate().unwrap_err().to_string()
    }

    #[test]
    fn the_defaults_are_valid() {
        Settings::without_commit().validate().unwrap();
    }

    #[test]
    fn replicas_are_held_to_the_brokers_and_the_in_sync_set_to_the_replicas() {
        assert!(refused(&[("REPLICATION_FACTOR", "2")])
            .starts_with("REPLICATION_FACTOR=2 is more than BROKERS=1"));
        assert!(refused(&[("BROKERS", "3"), ("MIN_INSYNC_REPLICAS", "2")])
            .starts_with("MIN_INSYNC_REPLICAS=2 is more than REPLICATION_FACTOR=1"));
        let cluster = [
            ("BROKERS", "3"),
            ("REPLICATION_FACTOR", "3"),
            ("MIN_INSYNC_REPLICAS", "2"),
        ];
        with(&cluster).validate().unwrap();
        let err = super::super::table::find("BROKERS")
            .unwrap()
            .set(&mut Settings::without_commit(), "0")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("BROKERS=\"0\""), "{err}");
    }

    #[test]
    fn each_check_names_the_settings_at_fault() {
        assert!(refused(&[("CONSUMERS", "2")]).starts_with("CONSUMERS=2 is more than PARTITIONS=1"));
        assert!(refused(&[("TOPICS", "2"), ("CONSUMERS", "3")])
            .contains("the 2 partitions of TOPICS=2 topics of PARTITIONS=1 each"));
        assert!(refused(&[("MODE", "backlog")]).starts_with("MODE=backlog needs THROUGHPUT"));
        assert!(refused(&[("DURATION", "10s")]).starts_with("DURATION=10 needs MODE=end-to-end"));
        assert!(refused(&[("DURATION_WARM_UP", "5s")])
            .starts_with("DURATION_WARM_UP=5 without DURATION"));
        assert!(refused(&[
            ("MODE", "end-to-end"),
            ("DURATION", "10s"),
            ("DURATION_WARM_UP", "10s")
        ])
        .starts_with("DURATION_WARM_UP=10 is not shorter than DURATION=10"));
        with(&[
            ("MODE", "end-to-end"),
            ("DURATION", "10s"),
            ("DURATION_WARM_UP", "2s"),
        ])
        .validate()
        .unwrap();
        with(&[("MODE", "backlog"), ("THROUGHPUT", "100")])
            .validate()
            .unwrap();
        assert!(refused(&[("ENGINE", "swarm"), ("SERVICES_CPUSET", "0")])
            .starts_with("SERVICES_CPUSET cannot be used with ENGINE=swarm: Swarm creates"));
        with(&[
            ("ENGINE", "swarm"),
            ("WORKLOAD_CPUSET", "0"),
            ("PROFILE", "cpu"),
        ])
        .validate()
        .unwrap();
        assert!(refused(&[("SWARM_ROLES", "load=load")]).contains("needs ENGINE=swarm"));
        assert!(refused(&[("REGISTRY", "reg:5000")]).starts_with(
            "REGISTRY=reg:5000 carries images to a swarm's nodes: it needs ENGINE=swarm"
        ));
        with(&[("ENGINE", "swarm"), ("SWARM_ROLES", "kms=broker")])
            .validate()
            .unwrap();
        // Several load generators: each with a producer, a consumer and a share of the rate,
        // in the modes that merge.
        let two = ("LOAD_GENERATORS", "2");
        let partitions = ("PARTITIONS", "2");
        assert_eq!(
            refused(&[two, partitions, ("CONSUMERS", "2")]),
            "LOAD_GENERATORS=2 spreads the producers, the consumers and the rate over 2 load \
             generators, each with at least one: PRODUCERS=1 is too few (set PRODUCERS=2 or more)"
        );
        let clients = [two, partitions, ("PRODUCERS", "2"), ("CONSUMERS", "2")];
        let and = |more: &[(&'static str, &'static str)]| {
            let mut all = clients.to_vec();
            all.extend_from_slice(more);
            all
        };
        assert!(refused(&and(&[("CONSUMERS", "1")]))
            .ends_with("CONSUMERS=1 is too few (set CONSUMERS=2 or more)"));
        assert!(refused(&and(&[("THROUGHPUT", "1")]))
            .ends_with("THROUGHPUT=1 is too low (set THROUGHPUT=2 or more, or -1)"));
        assert!(refused(&and(&[("MODE", "backlog"), ("THROUGHPUT", "100")]))
            .starts_with("LOAD_GENERATORS=2 cannot be used with MODE=backlog"));
        assert!(refused(&and(&[("DRIVER", "kafka-tools")]))
            .starts_with("LOAD_GENERATORS=2 needs DRIVER=native (DRIVER=kafka-tools)"));
        with(&clients).validate().unwrap();
        with(&and(&[("MODE", "end-to-end")])).validate().unwrap();
    }
}
