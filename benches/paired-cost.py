#!/usr/bin/env python3
"""Two Kroxylicious proxies measured side by side in the same phases: the cost of a change to the
path read as the ratio of the two proxies' CPU per MB, which the host's own speed cancels from.

On a shared VM the CPU time any process spends on fixed work moves with the host by 10% between
phases of 20 s (PERFORMANCE.md, "A warm-up in the phase's shape"), so two sides measured one after
the other differ by that much with no change at all. Here side A and side B each have a proxy in
front of one broker and their own producer and end-to-end consumer at the same rate, both running
at once; each phase's statistic is B's CPU per MB over A's. A campaign starts both proxies fresh,
runs the two paths together for the warm-up (unmeasured), then measures REPS phases.

  cargo build --release && perf-tests images build && benches/paired-cost.py

Settings (environment):
  A_TRANSFORMS, B_TRANSFORMS  how many times each side's proxy applies the transform filter pair
                  of scenario 03 (upper-casing produce requests and fetch responses); 0: no filter
                  (default 1 and 1: an A/A campaign)
  A_IMAGE, B_IMAGE  each side's proxy image (perf-tests/kroxylicious:0.12.0)
  A_JAVA_OPTIONS, B_JAVA_OPTIONS  options for each side's proxy JVM (its JDK_JAVA_OPTIONS; none)
  RATE            records/s of each side's producer (15000)
  SECONDS         seconds of each measured phase (20)
  REPS            measured phases a campaign (6)
  WARM_UP_SECONDS seconds of both paths' traffic, in the phase's shape, before the first phase (120)
  CAMPAIGNS       campaigns, each with fresh proxies (1)
  RECORD_SIZE     bytes per record (1024)
  KAFKA_IMAGE     the broker (perf-tests/kafka:4.4.0)
  PERF_TESTS_BIN  (target/release/perf-tests, or $CARGO_TARGET_DIR/release/perf-tests)

Each phase prints each proxy's CPU seconds (its container's cgroup counter, read at the phase's
edges from the host), its mc per MB/s (CPU over the MB it carried in and out, produce and consume
counted as the sizing guide counts them), their ratio and the VM's steal. Each campaign prints the
ratio's geometric mean with a 95% t-interval over its phases, its CV, each side's own CV, and the
change it could detect (80% power, two-sided 5%).

That interval is one pair of JVMs': each fresh JVM compiles its own code, and two started alike
differ by a few percent for as long as they run (PERFORMANCE.md, "Two proxies in the same
phases"), which no number of phases averages out. The comparison's verdict is therefore the one
over campaigns, each campaign's mean one observation: with CAMPAIGNS of 2 or more the last line
gives that interval, its CV between campaigns and its detectable change."""

import importlib.util
import math
import os
import statistics
import subprocess
import tempfile
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("client_tools", os.path.join(HERE, "client-tools.py"))
tools = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tools)
fail, guarded = tools.fail, tools.guarded

# Student's t quantiles for 1 to 30 degrees of freedom (0.975 and 0.80), then the normal's.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
T80 = [1.376, 1.061, 0.978, 0.941, 0.920, 0.906, 0.896, 0.889, 0.883, 0.879, 0.876, 0.873,
       0.870, 0.868, 0.866, 0.865, 0.863, 0.862, 0.861, 0.860, 0.859, 0.858, 0.858, 0.857,
       0.856, 0.856, 0.855, 0.855, 0.854, 0.854]


def t(table, normal, df):
    return table[df - 1] if df <= len(table) else normal


def setting(name, default, minimum):
    return tools.setting_int(name, default, minimum, why="")


class Settings:
    def __init__(self):
        self.transforms = {side: setting(f"{side}_TRANSFORMS", 1, 0) for side in "AB"}
        self.images = {side: os.environ.get(f"{side}_IMAGE", "perf-tests/kroxylicious:0.12.0")
                       for side in "AB"}
        self.java_options = {side: os.environ.get(f"{side}_JAVA_OPTIONS", "") for side in "AB"}
        self.rate = setting("RATE", 15000, 1)
        self.seconds = setting("SECONDS", 20, 1)
        self.reps = setting("REPS", 6, 2)
        self.warm_up = setting("WARM_UP_SECONDS", 120, 0)
        self.campaigns = setting("CAMPAIGNS", 1, 1)
        self.size = setting("RECORD_SIZE", 1024, 1)
        self.kafka_image = os.environ.get("KAFKA_IMAGE", "perf-tests/kafka:4.4.0")
        self.broker = "kafka"
        default_bin = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release", "perf-tests")
        self.perf_tests = os.environ.get("PERF_TESTS_BIN", default_bin)
        if not os.access(self.perf_tests, os.X_OK):
            fail(f"PERF_TESTS_BIN={self.perf_tests}: not an executable file (cargo build --release)")
        for side, image in self.images.items():
            if subprocess.run(["docker", "image", "inspect", image], capture_output=True).returncode:
                fail(f"{side}_IMAGE={image}: no such image here (perf-tests images build makes the default)")


def proxy_config(broker, port, transforms):
    """Kroxylicious 0.12.0's schema: one virtual cluster in front of the broker, its bootstrap on
    `port` of the host and each node on a port above it; the transform pair `transforms` times.
    No management endpoint: two on the host's network would ask for one port."""
    filters = [f"{kind}{i}" for i in range(transforms) for kind in ("produce", "fetch")]
    lines = [
        "virtualClusters:",
        "  - name: demo",
        "    targetCluster:",
        f"      bootstrapServers: {broker}",
        "    gateways:",
        "      - name: mygateway",
        "        portIdentifiesNode:",
        f"          bootstrapAddress: 127.0.0.1:{port}",
        "    logNetwork: false",
        "    logFrames: false",
        "filterDefinitions:" if filters else "filterDefinitions: []",
    ]
    for name in filters:
        kind = "ProduceRequestTransformation" if name.startswith("produce") else "FetchResponseTransformation"
        lines += [f"  - name: {name}", f"    type: {kind}", "    config:",
                  "      transformation: UpperCasing", "      transformationConfig:", "        charset: UTF-8"]
    lines.append(f"defaultFilters: [{', '.join(filters)}]")
    return "\n".join(lines) + "\n"


def cgroup_cpu_s(container):
    """The container's CPU seconds from its cgroup's cpu.stat, read on the host (an exec inside
    would add its own CPU to the figure)."""
    pid = subprocess.run(["docker", "inspect", "-f", "{{.State.Pid}}", container],
                         capture_output=True, text=True, check=True).stdout.strip()
    with open(f"/proc/{pid}/cgroup") as f:
        groups = dict((line.split(":", 2)[1], line.split(":", 2)[2].strip()) for line in f)
    # cgroup v1 (or a hybrid host) keeps the counter with the cpuacct controller, in ns.
    v1 = next((path for controllers, path in groups.items() if "cpuacct" in controllers.split(",")), None)
    if v1 is not None:
        with open(f"/sys/fs/cgroup/cpuacct{v1}/cpuacct.usage") as f:
            return int(f.read()) / 1e9
    with open(f"/sys/fs/cgroup{groups['']}/cpu.stat") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("usage_usec")) / 1e6


def steal_ticks():
    """The VM's (steal, all) ticks from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    return fields[7], sum(fields)


# A proxy's bootstrap port and one port above it for each node id of portIdentifiesNode's default
# range (0 to 2): the two sides' runs must not meet.
PROXY_PORTS = 4


class Side:
    def __init__(self, s, name, broker, label, workdir, taken):
        self.s, self.name, self.broker = s, name, broker
        self.port = tools.free_port(PROXY_PORTS, taken)
        self.bootstrap = f"127.0.0.1:{self.port}"
        config = os.path.join(workdir, f"config-{name}.yaml")
        with open(config, "w") as f:
            f.write(proxy_config(broker.bootstrap, self.port, s.transforms[name]))
        os.chmod(config, 0o644)
        # The JDK's launcher reads JDK_JAVA_OPTIONS whatever script starts it. No --rm: a proxy
        # that exits keeps its logs for the error; the bench's label-scoped cleanup removes it.
        out = subprocess.run(["docker", "run", "-d", "--network", "host", "--label", label,
                              "-e", f"JDK_JAVA_OPTIONS={s.java_options[name]}",
                              "-v", f"{config}:/opt/kroxylicious/config/config.yaml:ro",
                              s.images[name], "--config", "/opt/kroxylicious/config/config.yaml"],
                             capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(f"starting side {name}'s proxy from {s.images[name]}: {out.stderr.strip()}")
        self.container = out.stdout.strip()
        self.consumer = self.producer = None
        self.await_proxy()

    def await_proxy(self, timeout_s=90):
        """Returns once the proxy answers; a proxy that exits (a bad JVM option, a config its
        image refuses) ends the wait at once, with its last log lines."""
        deadline = time.monotonic() + timeout_s
        while True:
            probe = subprocess.run([self.s.perf_tests, "workload", "probe", "--bootstrap", self.bootstrap,
                                    "--timeout-s", "3"], capture_output=True, text=True)
            if probe.returncode == 0:
                return
            running = subprocess.run(["docker", "inspect", "-f", "{{.State.Running}}", self.container],
                                     capture_output=True, text=True).stdout.strip()
            if running != "true" or time.monotonic() > deadline:
                logs = subprocess.run(["docker", "logs", "--tail", "20", self.container],
                                      capture_output=True, text=True)
                why = "exited" if running != "true" else f"did not answer at {self.bootstrap} in {timeout_s} s"
                raise RuntimeError(f"side {self.name}'s proxy ({self.s.images[self.name]}) {why}:"
                                   f" {probe.stderr.strip()[-300:]}\n{logs.stdout}{logs.stderr}")

    def start_consumer(self, topic, records):
        """The end-to-end consumer; returns once its partitions are assigned."""
        self.broker.topic(topic)
        self.records = records
        self.consumer = subprocess.Popen(
            [self.s.perf_tests, "workload", "consume", "--bootstrap", self.bootstrap, "--topic", topic,
             "--group", f"{topic}-group", "--expected", str(records), "--end-to-end"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.consumer_out = []
        assigned = threading.Event()

        def read():
            for line in self.consumer.stdout:
                self.consumer_out.append(line)
                if line.strip() == "partitions assigned":
                    assigned.set()
            assigned.set()
        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        assigned.wait(120)
        if self.consumer.poll() is not None:
            raise RuntimeError(f"side {self.name}'s consumer ended: {''.join(self.consumer_out)[-500:]}")
        self.topic = topic

    def start_producer(self):
        self.producer = subprocess.Popen(
            [self.s.perf_tests, "workload", "produce", "--bootstrap", self.bootstrap, "--topic", self.topic,
             "--num-records", str(self.records), "--record-size", str(self.s.size),
             "--throughput", str(self.s.rate)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def stop(self):
        """Ends whatever this side started: its clients (a kill of the bench leaves none behind)
        and its proxy."""
        for client in (self.consumer, self.producer):
            if client is not None and client.poll() is None:
                client.kill()
                client.wait()
        subprocess.run(["docker", "rm", "-f", self.container], capture_output=True)

    def finish(self):
        """Both clients' results: (producer, consumer)."""
        p_out, _ = self.producer.communicate(timeout=600)
        self.consumer.wait(timeout=600)
        self.reader.join()
        c_out = "".join(self.consumer_out)
        if self.producer.returncode or self.consumer.returncode:
            raise RuntimeError(f"side {self.name}: producer exit {self.producer.returncode}, consumer exit"
                               f" {self.consumer.returncode}: {p_out[-500:]}{c_out[-500:]}")
        return tools.last_result(p_out), tools.last_result(c_out)


def phase(s, sides, tag):
    """Both paths at once, RATE × SECONDS records each: each side's (CPU s, MB, producer rate,
    intended p99 ms) and the VM's steal %."""
    records = s.rate * s.seconds
    for side in sides:
        side.start_consumer(f"paired-{tag}-{side.name}-{uuid.uuid4().hex[:6]}", records)
    cpu0 = [cgroup_cpu_s(side.container) for side in sides]
    steal0 = steal_ticks()
    for side in sides:
        side.start_producer()
    results = [side.finish() for side in sides]
    cpu1 = [cgroup_cpu_s(side.container) for side in sides]
    steal1 = steal_ticks()
    out = []
    for side, (p, c), a, b in zip(sides, results, cpu0, cpu1):
        if c["consumed_recs"] != records:
            raise RuntimeError(f"side {side.name} consumed {c['consumed_recs']} of {records} records")
        # Produced and consumed, as the sizing guide counts a proxy's traffic.
        mb = 2 * records * s.size / 1e6
        out.append({"cpu_s": b - a, "mb": mb, "rate": p["rate_rec_s"], "p99": p["intended"]["p99_ms"]})
    all_ticks = steal1[1] - steal0[1]
    steal = 100.0 * (steal1[0] - steal0[0]) / all_ticks if all_ticks else 0.0
    return out, steal


def cv(xs):
    return statistics.stdev(xs) / statistics.mean(xs) * 100


def campaign(s, broker, label, number, workdir):
    sides = []
    try:
        a = Side(s, "A", broker, label, workdir, ())
        sides = [a, Side(s, "B", broker, label, workdir, range(a.port, a.port + PROXY_PORTS))]
        started = time.monotonic()
        rounds = 0
        while time.monotonic() - started < s.warm_up:
            phase(s, sides, f"c{number}-warm{rounds}")
            rounds += 1
        print(f"campaign {number}: warmed up for {time.monotonic() - started:.0f} s ({rounds} rounds of"
              f" {s.seconds} s)", flush=True)
        ratios, costs = [], {"A": [], "B": []}
        for rep in range(1, s.reps + 1):
            (a, b), steal = phase(s, sides, f"c{number}-r{rep}")
            mc = [x["cpu_s"] * 1000 / x["mb"] for x in (a, b)]
            costs["A"].append(mc[0])
            costs["B"].append(mc[1])
            ratios.append(mc[1] / mc[0])
            low = min(a["rate"], b["rate"]) / s.rate
            note = "" if low >= 0.97 else f"  (a producer held only {low:.0%} of RATE)"
            print(f"campaign {number} phase {rep}: A {a['cpu_s']:.4f} CPU s {mc[0]:.3f} mc per MB/s  "
                  f"B {b['cpu_s']:.4f} CPU s {mc[1]:.3f} mc per MB/s  B/A {mc[1] / mc[0]:.4f}  "
                  f"p99 A {a['p99']:.1f} B {b['p99']:.1f} ms  steal {steal:.1f}%{note}", flush=True)
        return summarise(number, ratios, costs)
    finally:
        for side in sides:
            side.stop()


def interval(ratios):
    """Ratios' geometric mean, 95% t-interval, detectable change (80% power) and verdict."""
    logs = [math.log(r) for r in ratios]
    n = len(logs)
    mean, sd = statistics.mean(logs), statistics.stdev(logs)
    half = t(T975, 1.960, n - 1) * sd / math.sqrt(n)
    low, high = math.exp(mean - half), math.exp(mean + half)
    detectable = math.exp((t(T975, 1.960, n - 1) + t(T80, 0.842, n - 1)) * sd / math.sqrt(n)) - 1
    verdict = "B costs more" if low > 1 else "B costs less" if high < 1 else "no change found"
    return math.exp(mean), low, high, detectable, verdict


def summarise(number, ratios, costs):
    ratio, low, high, detectable, verdict = interval(ratios)
    verdict = {"no change found": "no difference found"}.get(verdict, verdict)
    print(f"campaign {number}: B/A {ratio:.4f} (95% interval {low:.4f} .. {high:.4f} for this pair of JVMs;"
          f" {verdict}), ratio CV {cv(ratios):.1f}%, A's own CV {cv(costs['A']):.1f}%,"
          f" B's {cv(costs['B']):.1f}%, detectable change {detectable:.1%}", flush=True)
    return {"ratio": ratio, "ratio_cv": cv(ratios), "cv_a": cv(costs["A"]), "cv_b": cv(costs["B"])}


def verdict_over(found):
    """The comparison's verdict: each campaign (a fresh pair of JVMs) one observation."""
    ratios = [f["ratio"] for f in found]
    ratio, low, high, detectable, verdict = interval(ratios)
    print(f"\n{len(found)} campaigns: B/A {ratio:.4f} (95% interval {low:.4f} .. {high:.4f} over the campaigns;"
          f" {verdict}), CV between campaigns {cv(ratios):.1f}%, detectable change {detectable:.1%};"
          f" within a campaign the ratio's CV was {statistics.median(f['ratio_cv'] for f in found):.1f}%"
          f" (median), each side's own {statistics.median(f['cv_a'] for f in found):.1f}% and"
          f" {statistics.median(f['cv_b'] for f in found):.1f}%")


def main():
    s = Settings()
    label = f"io.perf-tests.paired-bench={uuid.uuid4().hex[:12]}"
    broker = None
    sides = "; ".join(f"side {n}: {s.images[n]}, transform pair x{s.transforms[n]}"
                      + (f", JVM options {s.java_options[n]}" if s.java_options[n] else "") for n in "AB")
    print(f"{sides}; {s.rate} rec/s each, phases of {s.seconds} s,"
          f" {s.reps} a campaign after {s.warm_up} s of warm-up; {s.campaigns} campaign(s);"
          f" containers labelled {label}", flush=True)

    with guarded(label, lambda: broker and broker.close()):
        with tempfile.TemporaryDirectory(prefix="paired-cost-") as workdir:
            os.chmod(workdir, 0o755)
            broker = tools.Broker(s, label)
            found = [campaign(s, broker, label, c, workdir) for c in range(1, s.campaigns + 1)]
        if len(found) > 1:
            verdict_over(found)
        else:
            print("one campaign: its interval is one pair of JVMs'; CAMPAIGNS=5 or more give the"
                  " comparison's verdict over fresh pairs")


if __name__ == "__main__":
    main()
