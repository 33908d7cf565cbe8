//! A swarm of several Docker engines on this one machine: each node a `dockerd` in a network
//! namespace of its own (its own data root, exec root, pid file, socket and host name), the
//! namespaces joined by veth pairs to one bridge, the first node the manager. Swarm's overlay
//! networks (VXLAN) cross the bridge as they would cross a real network, so a multi-host run
//! is exercised for real; the nodes share this machine's cores, so it measures the mechanism,
//! not a bigger machine.
//!
//! Each engine answers on its own socket and on its address at [`ENGINE_PORT`] with TLS both ways
//! (`dockerd --tlsverify`), with certificates made here from a CA of the swarm's own: the runner
//! reaches every node as it would reach a real machine's engine, through the node labels
//! [`crate::world::engine::ENGINE_LABEL`] and [`CERTS_LABEL`].
//!
//! Made and removed with the host's own tools (`ip`, `nsenter`, `unshare`, `setsid`,
//! `iptables`, `dockerd`) as root. Everything it makes is named after [`PREFIX`] or lives under
//! [`RUN_DIR`] and [`DATA_DIR`], so [`down`] finds all of it with no record kept.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::world::engine::address::{Address, ClientTls, CERTS_LABEL};
use crate::world::engine::{Engine, SwarmNode, SWARM_PORT};
use crate::world::tls::{
    write_engine_dir, Ca, Usage, ENGINE_CA_FILE, ENGINE_CERT_FILE, ENGINE_KEY_FILE,
};

/// The bridge's name and the prefix of every namespace, interface and host name made here.
pub const PREFIX: &str = "pt-swarm";
/// Sockets, pid files and exec roots.
pub const RUN_DIR: &str = "/run/perf-tests-swarm";
/// Data roots (images, containers) and the daemons' logs.
pub const DATA_DIR: &str = "/var/lib/perf-tests-swarm";
/// The bridge's network: the bridge is `.1`, node `i` is `.(10 + i)`.
const UNDERLAY: &str = "10.213.0";
/// Where the swarm carves its overlay networks from: apart from the underlay and from Swarm's
/// default pool (10.0.0.0/8 in /24s, which would include the underlay).
pub(crate) const OVERLAY_POOL: &str = "10.214.0.0/16";
/// The fewest nodes: one each for the broker, the proxy and the load generator.
pub(crate) const MIN_NODES: usize = 3;
/// The most nodes: each runs a daemon and its containerd on this machine's memory.
pub const MAX_NODES: usize = 9;
/// How long a node's daemon may take to answer after it is started.
const DAEMON_START: Duration = Duration::from_secs(60);
/// How long the nodes may take to be ready once joined.
const JOINED_WITHIN: Duration = Duration::from_secs(60);
/// The port each node's engine answers on with TLS (Docker's own for TLS).
pub(crate) const ENGINE_PORT: u16 = 2376;
/// How long the swarm's certificates are valid: it is made for a session of measurements.
const CERT_DAYS: u32 = 30;
/// How long a daemon may take to stop (its containers get their own stop timeout of 10 s).
const DAEMON_STOP: Duration = Duration::from_secs(30);
/// The port of the registry `--with-registry` starts on the bridge.
const REGISTRY_PORT: u16 = 5000;
/// How long that registry may take to answer the manager.
const REGISTRY_START: Duration = Duration::from_secs(20);

/// Node `i` (from 1) of the local swarm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node(pub usize);

impl Node {
    /// Its network namespace, its interface on the bridge and its host name.
    pub fn name(self) -> String {
        format!("{PREFIX}-{}", self.0)
    }

    /// Its address on the bridge.
    pub(crate) fn address(self) -> String {
        format!("{UNDERLAY}.{}", 10 + self.0)
    }

    /// Its engine's socket.
    pub fn socket(self) -> PathBuf {
        Path::new(RUN_DIR).join(format!("{}.sock", self.name()))
    }

    /// The node a namespace or host name names, if it is one of a local swarm's.
    pub(crate) fn named(name: &str) -> Option<Node> {
        let index = name.strip_prefix(PREFIX)?.strip_prefix('-')?;
        if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        index.parse().ok().filter(|&i| i > 0).map(Node)
    }

    /// Its engine over TLS, as `DOCKER_HOST` names it (with [`client_certs`]).
    pub fn host(self) -> String {
        format!("tcp://{}:{ENGINE_PORT}", self.address())
    }

    /// Its engine over TLS with the runner's certificate, as a run reaches it.
    pub fn engine_address(self) -> Address {
        Address {
            host: self.host(),
            named_by: format!("the local swarm's node {}", self.name()),
            tls: Some(ClientTls {
                dir: client_certs(),
                named_by: "the local swarm's client certificate".into(),
            }),
        }
    }

    /// Its engine's certificate and key, and the CA it takes clients' certificates from.
    fn server_certs(self) -> PathBuf {
        tls_dir().join(self.name())
    }

    /// The role label it gets: the first nodes one role each, the others none.
    pub fn role(self) -> Option<&'static str> {
        super::ROLES.get(self.0 - 1).copied()
    }

    fn pid_file(self) -> PathBuf {
        Path::new(RUN_DIR).join(format!("{}.pid", self.name()))
    }

    fn exec_root(self) -> PathBuf {
        Path::new(RUN_DIR).join(self.name())
    }

    fn data_root(self) -> PathBuf {
        Path::new(DATA_DIR).join(self.name())
    }

    fn log(self) -> PathBuf {
        Path::new(DATA_DIR).join(format!("{}.log", self.name()))
    }
}

/// The manager's engine, as `DOCKER_HOST` names it (with `DOCKER_TLS_VERIFY=1` and
/// `DOCKER_CERT_PATH` at [`client_certs`]).
pub fn manager_host() -> String {
    Node(1).host()
}

/// The environment that reaches the manager's engine as the docker CLI would.
pub(crate) fn manager_env() -> [(&'static str, String); 3] {
    [
        ("DOCKER_HOST", manager_host()),
        ("DOCKER_TLS_VERIFY", "1".into()),
        ("DOCKER_CERT_PATH", client_certs().display().to_string()),
    ]
}

/// The swarm's TLS material: each node's directory and the client's.
fn tls_dir() -> PathBuf {
    Path::new(RUN_DIR).join("tls")
}

/// The runner's certificate, key and the swarm's CA (`DOCKER_CERT_PATH`'s layout).
pub fn client_certs() -> PathBuf {
    tls_dir().join("client")
}

/// A CA of the swarm's own, a certificate for each node's engine (its name and address) and one
/// for the runner; the CA's key is dropped once they are made.
fn make_certs(nodes: &[Node]) -> Result<()> {
    let ca = Ca::new("perf-tests local swarm CA", CERT_DAYS)?;
    for node in nodes {
        let ip: std::net::IpAddr = node.address().parse().context("a node's address")?;
        write_engine_dir(
            &node.server_certs(),
            &ca,
            Usage::Server,
            &node.name(),
            &[node.name()],
            &[ip],
        )?;
    }
    write_engine_dir(&client_certs(), &ca, Usage::Client, "perf-tests", &[], &[])?;
    Ok(())
}

/// The registry a local swarm made with `--with-registry` serves, as `REGISTRY` names it: on the
/// bridge, where every node reaches it.
pub fn registry_address() -> String {
    format!("{UNDERLAY}.1:{REGISTRY_PORT}")
}

fn registry_pid_file() -> PathBuf {
    Path::new(RUN_DIR).join("registry.pid")
}

fn registry_log() -> PathBuf {
    Path::new(DATA_DIR).join("registry.log")
}

/// Refuses a node count out of range, naming the flag.
pub(crate) fn check_nodes(nodes: usize) -> Result<()> {
    if !(MIN_NODES..=MAX_NODES).contains(&nodes) {
        bail!(
            "--nodes {nodes}: a local swarm has {MIN_NODES} to {MAX_NODES} nodes (one each for the \
             broker, the proxy and the load generator, at least)"
        );
    }
    Ok(())
}

/// Everything making a local swarm needs from the host, each missing thing named: root, the
/// tools (with `registry`, the registry's too), and no local swarm already up.
pub(crate) fn check_host(registry: bool) -> Result<()> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .unwrap_or("");
    if euid != "0" {
        bail!(
            "a local swarm needs root (it makes network namespaces, a bridge and Docker daemons); \
             run perf-tests swarm as root"
        );
    }
    let tools = [
        ("ip", "iproute2"),
        ("nsenter", "util-linux"),
        ("unshare", "util-linux"),
        ("setsid", "util-linux"),
        ("hostname", "hostname"),
        ("iptables", "iptables"),
        ("dockerd", "docker.io"),
    ];
    let registry_tool = [("docker-registry", "docker-registry")];
    let wanted = if registry { &registry_tool[..] } else { &[] };
    let missing: Vec<String> = tools
        .iter()
        .chain(wanted)
        .filter(|(tool, _)| !crate::world::machine::on_path(tool))
        .map(|(tool, package)| format!("{tool} (Debian: {package})"))
        .collect();
    if !missing.is_empty() {
        bail!(
            "a local swarm needs these tools on PATH: {}",
            missing.join(", ")
        );
    }
    if is_up() {
        bail!(
            "a local swarm is already up (bridge {PREFIX} or {RUN_DIR} exists); remove it first \
             with: perf-tests swarm down"
        );
    }
    Ok(())
}

/// Whether any part of a local swarm is on this host.
pub(crate) fn is_up() -> bool {
    quiet(Command::new("ip").args(["link", "show", PREFIX])).is_ok()
        || Path::new(RUN_DIR).exists()
        || !namespaces().is_empty()
}

/// What [`check`] found ready: the node count, whether a registry is made too, and a host that
/// can take them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checked {
    nodes: usize,
    registry: bool,
}

/// Checks the node count and the host ([`check_nodes`], [`check_host`]) before anything is made
/// or built.
pub(crate) fn check(nodes: usize, registry: bool) -> Result<Checked> {
    check_nodes(nodes)?;
    check_host(registry)?;
    Ok(Checked { nodes, registry })
}

/// Makes the swarm [`check`] allowed, labels its first nodes with the roles, starts its registry
/// when asked and copies `images` from `source` onto every node. On failure removes whatever it
/// made. Returns the nodes as the manager sees them.
pub(crate) async fn up(
    checked: Checked,
    source: &Engine,
    images: &[String],
    say: &mut dyn FnMut(&str),
) -> Result<Vec<SwarmNode>> {
    match make(checked, source, images, say).await {
        Ok(made) => Ok(made),
        Err(e) => {
            say("removing what was made");
            if let Err(d) = down(&mut |_| {}) {
                return Err(e.context(format!("and removing what was made failed: {d:#}")));
            }
            Err(e)
        }
    }
}

async fn make(
    checked: Checked,
    source: &Engine,
    images: &[String],
    say: &mut dyn FnMut(&str),
) -> Result<Vec<SwarmNode>> {
    let nodes = checked.nodes;
    for dir in [RUN_DIR, DATA_DIR] {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {dir}"))?;
    }
    let gateway = format!("{UNDERLAY}.1");
    run(Command::new("ip").args(["link", "add", PREFIX, "type", "bridge"]))?;
    run(Command::new("ip").args(["addr", "add", &format!("{gateway}/24"), "dev", PREFIX]))?;
    run(Command::new("ip").args(["link", "set", PREFIX, "up"]))?;
    // A Docker engine on the host sets the forward policy to drop, and bridged frames pass
    // through it when br_netfilter is loaded.
    run(Command::new("iptables").args(forward_rule("-I")))?;
    let all: Vec<Node> = (1..=nodes).map(Node).collect();
    make_certs(&all)?;
    for node in &all {
        say(&format!(
            "starting node {} at {}",
            node.name(),
            node.address()
        ));
        wire(*node)?;
        start_daemon(*node)?;
    }
    let mut engines = Vec::new();
    for node in &all {
        engines.push(wait_for_daemon(*node).await?);
    }
    let manager = &engines[0];
    manager.init_swarm(&all[0].address(), OVERLAY_POOL).await?;
    let token = manager.worker_token().await?;
    let remote = format!("{}:{SWARM_PORT}", all[0].address());
    for (node, engine) in all.iter().zip(&engines).skip(1) {
        say(&format!("joining {} to the swarm", node.name()));
        engine.join_swarm(&node.address(), &remote, &token).await?;
    }
    let joined = wait_until_ready(manager, nodes).await?;
    for node in &all {
        let id = &joined
            .iter()
            .find(|n| n.hostname == node.name())
            .with_context(|| format!("node {} is not in the swarm", node.name()))?
            .id;
        // How a run reaches each node's own engine (exec, counters, its containers), over TLS.
        manager
            .label_node(id, crate::world::engine::ENGINE_LABEL, &node.host())
            .await?;
        manager
            .label_node(id, CERTS_LABEL, &client_certs().display().to_string())
            .await?;
        if let Some(role) = node.role() {
            manager.label_node(id, super::ROLE_LABEL, role).await?;
        }
    }
    if checked.registry {
        say(&format!("starting a registry at {}", registry_address()));
        start_registry()?;
        wait_for_registry(manager).await?;
    }
    // Each node gets the images from the source engine, streamed.
    for (node, engine) in all.iter().zip(&engines) {
        for image in images {
            let copied = source.copy_image_to(engine, image).await?;
            let what = if copied { "copied" } else { "present" };
            say(&format!("{image} on {}: {what}", node.name()));
        }
    }
    manager.swarm_nodes().await
}

/// The `iptables` arguments that add (`-I`) or delete (`-D`) the rule letting the bridge's
/// frames through.
fn forward_rule(action: &str) -> [&str; 8] {
    [
        action, "FORWARD", "-i", PREFIX, "-o", PREFIX, "-j", "ACCEPT",
    ]
}

/// The node's namespace, its veth pair to the bridge and its address.
fn wire(node: Node) -> Result<()> {
    let name = node.name();
    let ns = name.as_str();
    run(Command::new("ip").args(["netns", "add", ns]))?;
    run(Command::new("ip").args([
        "link", "add", ns, "type", "veth", "peer", "name", "eth0", "netns", ns,
    ]))?;
    run(Command::new("ip").args(["link", "set", ns, "master", PREFIX, "up"]))?;
    let address = format!("{}/24", node.address());
    run(Command::new("ip").args(["-n", ns, "addr", "add", &address, "dev", "eth0"]))?;
    run(Command::new("ip").args(["-n", ns, "link", "set", "eth0", "up"]))?;
    run(Command::new("ip").args(["-n", ns, "link", "set", "lo", "up"]))?;
    // No route beyond the bridge: a swarm task tries its registry before taking the local
    // image, and an unreachable network fails that at once where a silent one takes 20 s.
    Ok(())
}

/// Starts the node's daemon in its namespace, detached from this process. `nsenter` enters the
/// network namespace only (`ip netns exec` would remount /sys and hide cgroup v1's
/// hierarchies from the daemon); `unshare --uts` gives it its own host name, which names it in
/// the swarm.
fn start_daemon(node: Node) -> Result<()> {
    let name = node.name();
    let log = std::fs::File::create(node.log())
        .with_context(|| format!("cannot create {}", node.log().display()))?;
    let status = Command::new("setsid")
        .arg("-f")
        .arg("nsenter")
        .arg(format!("--net=/run/netns/{name}"))
        .args(["unshare", "--uts", "sh", "-c"])
        .arg("hostname \"$0\" && exec dockerd \"$@\"")
        .arg(&name)
        .arg("--data-root")
        .arg(node.data_root())
        .arg("--exec-root")
        .arg(node.exec_root())
        .arg("--pidfile")
        .arg(node.pid_file())
        .arg("--host")
        .arg(format!("unix://{}", node.socket().display()))
        .arg("--host")
        .arg(node.host())
        .arg("--tlsverify")
        .arg("--tlscacert")
        .arg(node.server_certs().join(ENGINE_CA_FILE))
        .arg("--tlscert")
        .arg(node.server_certs().join(ENGINE_CERT_FILE))
        .arg("--tlskey")
        .arg(node.server_certs().join(ENGINE_KEY_FILE))
        // A registry on the bridge (`--with-registry`'s) speaks plain HTTP: the nodes trust the
        // underlay as the private network it is.
        .arg("--insecure-registry")
        .arg(format!("{UNDERLAY}.0/24"))
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .status()
        .context("cannot run setsid")?;
    if !status.success() {
        bail!("starting dockerd for {name} failed ({status})");
    }
    Ok(())
}

/// Starts Debian's `docker-registry` (the CNCF Distribution registry) on the bridge's address,
/// its storage under [`DATA_DIR`], in a process group of its own so it outlives this command and
/// a Ctrl-C of the terminal; [`down`] stops it by its pid file.
fn start_registry() -> Result<()> {
    use std::os::unix::process::CommandExt;
    let config = Path::new(RUN_DIR).join("registry.yml");
    let storage = Path::new(DATA_DIR).join("registry");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: \
             {}\n  delete:\n    enabled: true\nhttp:\n  addr: {}\n",
            storage.display(),
            registry_address()
        ),
    )
    .with_context(|| format!("cannot write {}", config.display()))?;
    let log = std::fs::File::create(registry_log())
        .with_context(|| format!("cannot create {}", registry_log().display()))?;
    let child = Command::new("docker-registry")
        .arg("serve")
        .arg(&config)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("cannot run docker-registry")?;
    std::fs::write(registry_pid_file(), child.id().to_string())
        .with_context(|| format!("cannot write {}", registry_pid_file().display()))?;
    Ok(())
}

/// Waits until the manager's engine reaches the registry, or fails with the registry's log.
async fn wait_for_registry(manager: &Engine) -> Result<()> {
    let since = Instant::now();
    loop {
        let reached = manager.reaches_registry(&registry_address()).await;
        match reached {
            Ok(()) => return Ok(()),
            Err(e) if since.elapsed() > REGISTRY_START => {
                let log = std::fs::read_to_string(registry_log()).unwrap_or_default();
                bail!(
                    "the registry at {} did not answer the manager within {} s ({e:#}); its log \
                     ({}) says:\n{}",
                    registry_address(),
                    REGISTRY_START.as_secs(),
                    registry_log().display(),
                    log.trim_end()
                );
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// The node's engine once it answers over TLS, or an error with its log's tail.
async fn wait_for_daemon(node: Node) -> Result<Engine> {
    let since = Instant::now();
    loop {
        if node.socket().exists() {
            if let Ok(engine) = Engine::connect_to(&node.engine_address(), "swarm").await {
                return Ok(engine);
            }
        }
        if since.elapsed() > DAEMON_START {
            let log = std::fs::read_to_string(node.log()).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(8).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            bail!(
                "the Docker daemon of {} did not answer within {} s; its log ({}) ends:\n{}",
                node.name(),
                DAEMON_START.as_secs(),
                node.log().display(),
                tail.join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The swarm's nodes once `nodes` of them are ready.
async fn wait_until_ready(manager: &Engine, nodes: usize) -> Result<Vec<SwarmNode>> {
    let since = Instant::now();
    loop {
        let listed = manager.swarm_nodes().await?;
        if listed.iter().filter(|n| n.ready).count() == nodes {
            return Ok(listed);
        }
        if since.elapsed() > JOINED_WITHIN {
            let states: Vec<String> = listed
                .iter()
                .map(|n| {
                    format!(
                        "{} {}",
                        n.hostname,
                        if n.ready { "ready" } else { "not ready" }
                    )
                })
                .collect();
            bail!(
                "{nodes} nodes should be ready within {} s; the manager lists: {}",
                JOINED_WITHIN.as_secs(),
                states.join(", ")
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The nodes whose network namespaces are on this host.
fn namespaces() -> Vec<Node> {
    let out = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    out.lines()
        .filter_map(|l| Node::named(l.split_whitespace().next()?))
        .collect()
}

/// Removes every part of a local swarm on this host (daemons and what they run, namespaces,
/// the bridge and its rule, the directories), whatever state it is in. Returns how many parts
/// it removed; 0 when there was none.
pub(crate) fn down(say: &mut dyn FnMut(&str)) -> Result<usize> {
    let mut removed = 0;
    let nodes = namespaces();
    // Every daemon and the registry asked to stop at once, then waited for: each daemon stops
    // its containers. The registry runs outside the namespaces, so one that does not stop is
    // killed here; a daemon, with whatever else runs in its namespace, below.
    let read_pid =
        |file: PathBuf| -> Option<u32> { std::fs::read_to_string(file).ok()?.trim().parse().ok() };
    let mut stopping: Vec<(String, u32)> = nodes
        .iter()
        .filter_map(|n| {
            Some((
                format!("the daemon of {}", n.name()),
                read_pid(n.pid_file())?,
            ))
        })
        .collect();
    let registry = read_pid(registry_pid_file());
    stopping.extend(registry.map(|pid| ("the registry".to_string(), pid)));
    stopping.retain(|(_, pid)| alive(*pid));
    for (what, pid) in &stopping {
        say(&format!("stopping {what}"));
        let _ = quiet(Command::new("kill").args(["-TERM", &pid.to_string()]));
    }
    let since = Instant::now();
    while stopping.iter().any(|(_, pid)| alive(*pid)) && since.elapsed() < DAEMON_STOP {
        std::thread::sleep(Duration::from_millis(100));
    }
    if let Some(pid) = registry.filter(|&pid| alive(pid)) {
        let _ = quiet(Command::new("kill").args(["-KILL", &pid.to_string()]));
    }
    removed += stopping.len();
    // Whatever still runs in a namespace (a daemon that did not stop, its containerd, shims,
    // containers) is killed, so the namespace goes with it.
    for node in &nodes {
        let ns = node.name();
        let out = Command::new("ip").args(["netns", "pids", &ns]).output();
        let pids = out
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        for pid in pids.split_whitespace() {
            let _ = quiet(Command::new("kill").args(["-KILL", pid]));
        }
        run(Command::new("ip").args(["netns", "del", &ns]))?;
        removed += 1;
    }
    // The daemons' mounts (overlay layers, the exec roots' namespaces) when one was killed.
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mut ours: Vec<&str> = mounts
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|m| m.starts_with(RUN_DIR) || m.starts_with(DATA_DIR))
        .collect();
    ours.sort_by_key(|m| std::cmp::Reverse(m.len()));
    for m in ours {
        let _ = quiet(Command::new("umount").args(["-l", m]));
    }
    for dir in [RUN_DIR, DATA_DIR] {
        if Path::new(dir).exists() {
            std::fs::remove_dir_all(dir).with_context(|| format!("cannot remove {dir}"))?;
            removed += 1;
        }
    }
    if quiet(Command::new("ip").args(["link", "show", PREFIX])).is_ok() {
        say(&format!("removing bridge {PREFIX}"));
        run(Command::new("ip").args(["link", "del", PREFIX]))?;
        removed += 1;
    }
    while quiet(Command::new("iptables").args(forward_rule("-D"))).is_ok() {
        removed += 1;
    }
    Ok(removed)
}

/// Whether process `pid` runs: it exists and is no zombie (the registry stays this process's
/// child while `up` runs, and a child that ended is not reaped before it exits).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command name, which is in parentheses and may hold spaces.
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}

/// Runs a host command, its failure an error with the command and what it printed.
fn run(cmd: &mut Command) -> Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// [`run`] with its output discarded: for probes whose failure is an answer.
fn quiet(cmd: &mut Command) -> Result<()> {
    run(cmd.stdout(Stdio::null()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_named_addressed_and_given_roles_in_order() {
        assert_eq!(Node(1).name(), "pt-swarm-1");
        assert_eq!(Node(3).address(), "10.213.0.13");
        assert_eq!(manager_host(), "tcp://10.213.0.11:2376");
        assert_eq!(
            Node(2).socket(),
            Path::new("/run/perf-tests-swarm/pt-swarm-2.sock")
        );
        let roles: Vec<Option<&str>> = (1..=4).map(|i| Node(i).role()).collect();
        assert_eq!(roles, [Some("broker"), Some("proxy"), Some("load"), None]);
        assert_eq!(Node::named("pt-swarm-12"), Some(Node(12)));
        for other in [
            "pt-swarm",
            "pt-swarm-",
            "pt-swarm-0",
            "pt-swarm-1a",
            "vm",
            "pt-swarmer-1",
        ] {
            assert_eq!(Node::named(other), None, "{other}");
        }
        // Interface names have at most 15 bytes.
        assert!(Node(MAX_NODES).name().len() <= 15);
    }

    #[test]
    fn node_counts_out_of_range_are_refused_naming_the_flag() {
        for n in [0, 2, 10] {
            let e = check_nodes(n).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--nodes {n}:")), "{e}");
        }
        assert!(check_nodes(3).is_ok() && check_nodes(9).is_ok());
    }
}
