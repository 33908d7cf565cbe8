//! Docker Swarm: the node roles a suite places its services by, and a swarm of several engines
//! made on this one machine ([`local`]) so multi-host runs are exercised for real without a
//! cluster.

pub mod local;

/// The node label that says what a node is for.
pub const ROLE_LABEL: &str = "perf-tests.role";

/// The roles, in the order a local swarm gives them to its first nodes: the broker, the proxy
/// (the path under test) and the load generator each on a node of its own.
pub(crate) const ROLES: [&str; 3] = ["broker", "proxy", "load"];
