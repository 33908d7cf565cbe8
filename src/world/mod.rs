//! The outside world, each behind one narrow module: the Docker Engine API (`engine`, the only
//! module that holds a Docker client), Compose files (`compose`), the images built here
//! (`images`), a local swarm (`swarm`), certificates (`tls`), this host (`machine`), the
//! profiler and its download (`profile`), the network's ceiling (`ceiling`, iperf3), the
//! containers' sampling (`resources`).

pub mod ceiling;
pub mod compose;
pub mod engine;
pub mod images;
pub mod machine;
pub mod profile;
pub mod resources;
pub mod swarm;
pub mod tls;
