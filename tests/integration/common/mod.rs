//! Helpers shared by the integration tests that use the Docker engine or run the binary.
#![allow(dead_code)] // each test crate uses its own subset

use std::collections::HashMap;
use std::path::Path;

use bollard::query_parameters::{ListContainersOptionsBuilder, ListNetworksOptionsBuilder};

/// Every setting's environment variable, from the one settings table.
pub fn setting_vars() -> impl Iterator<Item = &'static str> {
    perf_tests::settings::SETTINGS.iter().map(|s| s.var)
}

/// The `perf-tests` executable, run from the repository, with none of the caller's settings in
/// its environment (a user's `NUM_RECORDS` must not reach a test's run). Every test runs the
/// executable through this.
pub fn bin() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_perf-tests"));
    for var in setting_vars() {
        cmd.env_remove(var);
    }
    cmd.current_dir(repo());
    cmd
}

/// Connects to the Docker engine for `run_id`; without one the test fails with one line that
/// says so (not a backtrace of an unwrap).
pub async fn engine(run_id: &str) -> perf_tests::world::engine::Engine {
    perf_tests::world::engine::Engine::connect(run_id)
        .await
        .unwrap_or_else(|e| panic!("this test needs a Docker engine and found none: {e:#}"))
}

/// A raw connection to the Docker engine, failing the test with one line when there is none.
pub fn docker() -> bollard::Docker {
    bollard::Docker::connect_with_defaults()
        .unwrap_or_else(|e| panic!("this test needs a Docker engine and found none: {e}"))
}

/// The repository root.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Engine tests hold this lock shared; the test of `perf-tests clean` (which removes every
/// managed container on the engine) holds it exclusively, so it never removes theirs.
pub fn engine_lock(exclusive: bool) -> std::fs::File {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open("/tmp/perf-tests-engine-tests.lock")
        .unwrap();
    if exclusive {
        f.lock().unwrap();
    } else {
        f.lock_shared().unwrap();
    }
    f
}

/// `perf-tests run` from the repository with no setting taken from the caller's environment,
/// small warm-ups, results under `results` and plain progress lines (as in CI).
pub fn perf_tests_run(results: &Path) -> std::process::Command {
    perf_tests_command("run", results)
}

/// Runs `cmd` to its end, asserts that it succeeded (showing its command line and output when
/// not), and returns its output.
pub fn succeeds(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `perf-tests run` (see [`perf_tests_run`]) with `env` into `results`, asserts that it
/// succeeded, and returns its stderr.
pub fn run_succeeds(results: &Path, env: &[(&str, &str)]) -> String {
    let out = succeeds(perf_tests_run(results).envs(env.iter().copied()));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// [`perf_tests_run`] for another command that runs scenarios (`sweep`).
pub fn perf_tests_command(command: &str, results: &Path) -> std::process::Command {
    let mut cmd = bin();
    cmd.arg(command);
    small_run(&mut cmd, results).env("CI", "true");
    cmd
}

/// What every test's run of scenarios has unless it sets otherwise: small warm-ups, results
/// under `results`, and the network's ceiling off (measured with iperf3 on every hop before
/// each scenario, it costs seconds a scenario that find nothing in a test of something else;
/// its own tests, the swarm's and the default suite's run set `NETWORK_CEILING=1`).
pub fn small_run<'a>(
    cmd: &'a mut std::process::Command,
    results: &Path,
) -> &'a mut std::process::Command {
    cmd.env("WARM_UP_NUM_RECORDS_POST_BROKER_START", "200")
        .env("WARM_UP_NUM_RECORDS_PRE_TEST", "200")
        .env("NETWORK_CEILING", "0")
        .env("RESULTS_DIR", results)
}

/// The running container of run `run_id` labelled as `service` (a Compose service, or
/// `workload` for the load generator), asked of the local engine with the `docker` CLI.
pub fn running_container(run_id: &str, service: &str) -> Option<String> {
    let out = std::process::Command::new("docker")
        .args(["ps", "-q", "--filter"])
        .arg(format!("label=io.perf-tests.run={run_id}"))
        .arg("--filter")
        .arg(format!("label=io.perf-tests.service={service}"))
        .env_remove("DOCKER_HOST")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .map(str::to_string)
}

/// Containers and networks still labelled with `run_id`.
pub async fn leftovers(run_id: &str) -> (usize, usize) {
    let docker = docker();
    let filter = HashMap::from([("label", vec![format!("io.perf-tests.run={run_id}")])]);
    let containers = docker
        .list_containers(Some(
            ListContainersOptionsBuilder::default()
                .all(true)
                .filters(&filter)
                .build(),
        ))
        .await
        .unwrap();
    let networks = docker
        .list_networks(Some(
            ListNetworksOptionsBuilder::default()
                .filters(&filter)
                .build(),
        ))
        .await
        .unwrap();
    (containers.len(), networks.len())
}

/// A run started in the background, its stderr read up to a line of interest.
pub struct Started {
    pub child: std::process::Child,
    /// Its stderr up to the line of interest, that line included.
    pub before: Vec<String>,
    /// The rest of its stderr, line by line.
    pub lines: std::io::Lines<std::io::BufReader<std::process::ChildStderr>>,
    /// The id the run announced (`==> run <id>`).
    pub run_id: String,
}

/// Spawns `cmd` (a `perf-tests run`) with stderr piped and reads its stderr until a line for
/// which `until` holds, remembering the run id it announces on the way.
pub fn start_run(mut cmd: std::process::Command, until: impl Fn(&str) -> bool) -> Started {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut run_id = None;
    let mut before = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(id) = line.strip_prefix("==> run ") {
            run_id = Some(id.trim().to_string());
        }
        let found = until(&line);
        before.push(line);
        if found {
            break;
        }
    }
    Started {
        child,
        before,
        lines,
        run_id: run_id.expect("the run announces its id"),
    }
}

/// The one run directory a test's results directory holds.
pub fn only_run(results: &Path) -> std::path::PathBuf {
    let runs: Vec<std::path::PathBuf> = std::fs::read_dir(results)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

/// `docker` with `args` on the local engine; its stdout.
pub fn docker_cli(args: &[&str]) -> String {
    let out = std::process::Command::new("docker")
        .args(args)
        .env_remove("DOCKER_HOST")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether container `id`'s first process listens on the Kafka port 9092 (0x2384), read from
/// its own socket table: what the suite's health checks ask of a broker or a proxy.
pub fn listens_on_9092(id: &str) -> bool {
    let listen = ":2384 [0-9A-F]+:0000 0A";
    let (tcp, tcp6) = ("/proc/1/net/tcp", "/proc/1/net/tcp6");
    !docker_cli(&["exec", id, "grep", "-hE", listen, tcp, tcp6]).is_empty()
}

/// Whether the run's load generator is running workload step `step` (`produce`, `consume`,
/// `soak`) whose command line contains `with`: the event a fault or signal in a measured
/// phase waits for (its command line names the measured count, which no warm-up uses).
pub fn workload_runs(run_id: &str, step: &str, with: &str) -> bool {
    let Some(id) = running_container(run_id, "workload") else {
        return false;
    };
    let step = format!("workload {step} ");
    docker_cli(&["top", &id, "-eo", "pid,args"])
        .lines()
        .any(|l| l.contains(&step) && l.contains(with))
}

/// Waits up to `within` for `done`, failing the test naming `what`.
pub fn wait_for(what: &str, within: std::time::Duration, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + within;
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what} within {within:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// The moment of a measurement a stall is put at: each an event of the run, never a time.
pub enum StallAt<'a> {
    /// Once the run shows the first records of its step `step` (`produce`, `consume`) through,
    /// out of `of`: its progress line with a count above zero, which comes with the producer's
    /// first acknowledgements or the consumer's first records, so that client's connections
    /// are set up. A pause during a client's connection set-up was seen to stall it for about
    /// 10 s (as long as librdkafka's API-version request timeout), not for the pause.
    Through { step: &'a str, of: u64 },
    /// Once the run prints a line containing this, after the scenario started.
    Line(&'a str),
}

impl StallAt<'_> {
    /// Whether the run's stderr line `line` is the event.
    fn is(&self, line: &str) -> bool {
        match self {
            StallAt::Through { step, of } => line
                .trim_start()
                .strip_prefix(&format!("{step} ["))
                .and_then(|rest| rest.split_once("] "))
                .and_then(|(_, count)| count.split_once(' '))
                .and_then(|(count, _)| count.split_once('/'))
                .is_some_and(|(done, total)| {
                    total == of.to_string() && done.parse::<u64>().is_ok_and(|d| d > 0)
                }),
            StallAt::Line(text) => line.contains(text),
        }
    }
}

/// Runs `cmd` (a `perf-tests run` of one scenario whose `service` is on the path) and stalls
/// that service for 1.5 s (`docker pause`) at `at`; returns whether the run succeeded, its
/// stderr after the stall, and its id.
pub fn run_with_a_stall(
    cmd: std::process::Command,
    service: &str,
    at: StallAt,
) -> (std::process::ExitStatus, String, String) {
    let Started {
        mut child,
        mut lines,
        run_id,
        ..
    } = start_run(cmd, |l| l.starts_with("==> 0"));
    let seen = lines.by_ref().map_while(Result::ok).any(|l| at.is(&l));
    assert!(seen, "the run ended before the stall's moment");
    let container = running_container(&run_id, service).expect("the service runs");
    let docker = |args: &[&str]| {
        let status = std::process::Command::new("docker")
            .args(args)
            .status()
            .unwrap();
        assert!(status.success(), "docker {args:?}");
    };
    docker(&["pause", &container]);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    docker(&["unpause", &container]);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    (child.wait().unwrap(), rest.join("\n"), run_id)
}

/// The run id a run directory's `run.json` records.
pub fn run_id_of(run: &Path) -> String {
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("run.json")).unwrap()).unwrap();
    info["run_id"].as_str().unwrap().to_string()
}

/// The run id a run's stderr announces (`==> run <id>`).
pub fn run_id(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("==> run "))
        .unwrap_or_else(|| panic!("no run id in\n{stderr}"))
        .trim()
        .to_string()
}

/// Copies a directory tree (a suite a test changes, in the repository's layout).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The entry of `service` in a results list of services (resources, a cost phase's services).
pub fn service_entry<'a>(list: &'a serde_json::Value, service: &str) -> &'a serde_json::Value {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .find(|s| s["service"] == service)
        .unwrap_or_else(|| panic!("no {service} in {list}"))
}

/// Sends `signal` (a `kill` name such as `INT`) to `child`.
pub fn send(signal: &str, child: &std::process::Child) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// The `summary.txt` of one A/A campaign of `benches/ab-campaign.sh` in `out` with two
/// observations a side. Two a side can never make a significant difference, and the comparison
/// must say so ("no regression can be claimed"): its exit 0 is then certain, whatever the noise,
/// so the summary must count no false alarm, as an A/A comparison (its sides are one build, one
/// image), and hold the spread of `metric` for `scenario`.
pub fn clean_a_a_campaign(out: &Path, scenario: &str, metric: &str) -> String {
    let summary = std::fs::read_to_string(out.join("summary.txt")).unwrap();
    assert!(
        summary.contains("campaign 1: exit 0: no regression can be claimed: "),
        "{summary}"
    );
    assert!(
        summary.contains("false alarms: 0 of 1 A/A comparisons"),
        "{summary}"
    );
    let spread = summary
        .lines()
        .find(|l| l.contains(scenario) && l.contains(metric))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(spread.trim_end().ends_with("%)"), "{spread}");
    summary
}

/// Asserts that `node` (an entry of run.json's `nodes`) states this machine's facts as its own
/// tools give them (`/proc/cpuinfo` through sed, `uname`, `nproc`, `free`), with
/// `engine_version` the engine's and the swarm `roles` given.
pub fn assert_node_is_this_machine(node: &serde_json::Value, engine_version: &str, roles: &[&str]) {
    let sh = |script: &str| {
        let out = std::process::Command::new("sh")
            .args(["-c", script])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let model = sh("sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1");
    assert!(
        !model.is_empty(),
        "this machine's /proc/cpuinfo names a model"
    );
    assert_eq!(node["cpu_model"], model.as_str(), "{node}");
    assert_eq!(node["kernel"], sh("uname -r").as_str(), "{node}");
    assert_eq!(node["arch"], sh("uname -m").as_str(), "{node}");
    let cpus: u64 = sh("nproc").parse().unwrap();
    assert_eq!(node["cpus"], cpus, "{node}");
    let memory: u64 = sh("free -b | awk '/^Mem:/ {print $2}'").parse().unwrap();
    assert_eq!(node["memory_bytes"], memory, "{node}");
    assert_eq!(node["engine_version"], engine_version, "{node}");
    assert_eq!(node["roles"], serde_json::json!(roles), "{node}");
}

/// Runs the scenarios `test` selects with `env`, kills the container of `service` once the load
/// generator runs the `produce` step with `--num-records <records>` (first calling `before_kill`
/// with the run's id), and asserts that the run ended within 30 s, exit 1, saying the service
/// stopped during `phase`, with nothing left.
pub async fn kill_during(
    test: &str,
    service: &str,
    env: &[(&str, &str)],
    (records, phase): (&str, &str),
    before_kill: impl FnOnce(&str),
) {
    use std::process::Command;
    use std::time::{Duration, Instant};

    let _lock = engine_lock(false);
    let results = tempfile::tempdir().unwrap();
    let mut cmd = perf_tests_run(results.path());
    cmd.env("TEST", test).envs(env.iter().copied());
    let Started {
        mut child,
        lines,
        run_id,
        ..
    } = start_run(cmd, |line| line.starts_with("==> 0"));
    // The services come up, answer, the path is warmed; the step the test waits for runs, and
    // the service dies in it.
    wait_for(phase, Duration::from_secs(180), || {
        workload_runs(&run_id, "produce", &format!("--num-records {records}"))
    });
    before_kill(&run_id);
    let container = running_container(&run_id, service).expect("the service runs");
    let killed = Command::new("docker")
        .args(["kill", &container])
        .status()
        .unwrap();
    assert!(killed.success());
    let sent = Instant::now();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    let took = sent.elapsed();
    let stderr = rest.join("\n");
    assert!(took < Duration::from_secs(30), "took {took:?}:\n{stderr}");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("stopped during {phase}"))
            && stderr.contains(&format!("service \"{service}\""))
            && stderr.contains("exited with code 137 (killed)"),
        "{stderr}"
    );
    // Nothing completed, so nothing was kept.
    assert!(
        std::fs::read_dir(results.path()).map_or(true, |mut d| d.next().is_none()),
        "{stderr}"
    );
    assert_eq!(leftovers(&run_id).await, (0, 0), "{stderr}");
}

/// A results file's JSON; a missing or malformed file fails the test naming it.
pub fn json(path: &Path) -> serde_json::Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs `cmd` to its end: its exit code, and its stdout then its stderr as one text.
pub fn outcome(cmd: &mut std::process::Command) -> (Option<i32>, String) {
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}
