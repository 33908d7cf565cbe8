#!/usr/bin/env python3
"""perf-tests' native workload side by side with the tools people compare it with: librdkafka's
rdkafka_performance and Kafka's kafka-producer-perf-test / kafka-consumer-perf-test. Every tool
runs against the same broker, with the same record size and acks, in rounds that rotate which
tool goes first, unthrottled and at fixed producer rates. For each run: the rate, and the CPU time
(user + system) the tool's process spent per record, from the kernel's own accounting of that
process and its threads (wait4's rusage; busybox time inside the Kafka tools' container).

Run through benches/vs-rdkafka-performance.sh, which builds rdkafka_performance and reads the
settings (see there)."""

import contextlib
import json
import math
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import uuid

PERF_TESTS = "perf-tests"
RDKAFKA = "rdkafka_performance"
JAVA = "kafka-perf-test"
# Another build of perf-tests (PERF_TESTS_BEFORE_BIN): the same workload before a change.
BEFORE = "perf-tests-before"
TOOLS = (RDKAFKA, JAVA, BEFORE)


def fail(message, code=2):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


# Why counts are written in digits here: rdkafka_performance reads 2e5 as 2.
DIGITS = " (rdkafka_performance reads 2e5 as 2)"


def setting_int(name, default, minimum, why=DIGITS):
    raw = os.environ.get(name, str(default))
    if not raw.isdigit() or int(raw) < minimum:
        fail(f"{name}={raw}: write a whole number of at least {minimum} in digits{why}")
    return int(raw)


@contextlib.contextmanager
def guarded(label, cleanup):
    """The bench's body: a failure is an error (exit 1), Ctrl-C or a kill ends it (130), and in
    every case `cleanup` stops what it started, then any container still carrying `label` goes
    (one whose owner failed before it was recorded too, and nothing of anyone else's)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
    try:
        yield
    except RuntimeError as e:
        fail(str(e), 1)
    except KeyboardInterrupt:
        print("interrupted: removing the bench's containers", file=sys.stderr)
        sys.exit(130)
    finally:
        cleanup()
        left = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={label}"],
                              capture_output=True, text=True).stdout.split()
        if left:
            subprocess.run(["docker", "rm", "-f", *left], capture_output=True)


class Settings:
    def __init__(self):
        self.records = setting_int("NUM_RECORDS", 500000, 1)
        self.size = setting_int("RECORD_SIZE", 1024, 1)
        self.rounds = setting_int("ROUNDS", 3, 1)
        self.fixed_seconds = setting_int("FIXED_SECONDS", 10, 1)
        rates = os.environ.get("RATES", "20000 50000").split()
        for r in rates:
            if not r.isdigit() or int(r) < 1:
                fail(f"RATES: `{r}` is not a rate in records/s written in digits "
                     "(give a space-separated list, or an empty one for unthrottled runs only)")
        self.rates = [int(r) for r in rates]
        tools = os.environ.get("TOOLS", f"{RDKAFKA} {JAVA}").split()
        for t in tools:
            if t not in TOOLS:
                fail(f"TOOLS: unknown tool `{t}` (expected any of: {', '.join(TOOLS)})")
        if not tools:
            fail(f"TOOLS is empty: name at least one of {', '.join(TOOLS)}")
        self.before = os.environ.get("PERF_TESTS_BEFORE_BIN", "")
        if (BEFORE in tools) != bool(self.before):
            fail(f"TOOLS names {BEFORE} exactly when PERF_TESTS_BEFORE_BIN gives its binary"
                 f" (PERF_TESTS_BEFORE_BIN={self.before or 'unset'})")
        if self.before and not os.access(self.before, os.X_OK):
            fail(f"PERF_TESTS_BEFORE_BIN={self.before}: not an executable file")
        self.tools = [PERF_TESTS] + tools
        self.broker = os.environ.get("BROKER", "kafka")
        if self.broker not in ("kafka", "tansu"):
            fail(f"BROKER={self.broker}: expected kafka (the default suite's image) or tansu")
        if self.broker == "tansu" and JAVA in tools:
            fail(f"BROKER=tansu with TOOLS naming {JAVA}: the Kafka tools run only against the Kafka image")
        self.perf_tests = os.environ["PERF_TESTS_BIN"]
        self.rdkafka = os.environ.get("RDKAFKA_PERFORMANCE_BIN", "")
        self.tansu = os.environ.get("TANSU_BIN", "")
        if self.broker == "tansu" and not os.access(self.tansu, os.X_OK):
            fail(f"BROKER=tansu needs TANSU_BIN, Tansu's broker program (TANSU_BIN={self.tansu or 'unset'}):"
                 " cargo install tansu --version 0.6.0 --features dynostore --root DIR, then DIR/bin/tansu")
        self.kafka_image = os.environ.get("KAFKA_IMAGE", "perf-tests/kafka:4.4.0")
        self.tools_image = os.environ.get("KAFKA_TOOLS_IMAGE", "perf-tests/kafka-tools:4.4.0")


def free_port(span=1, avoid=()):
    """A port free on 127.0.0.1 with the `span` - 1 ports above it free too and none of them in
    `avoid`: a listener that binds a run of ports must not meet another's."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        run = range(base, base + span)
        if run[-1] <= 65535 and not set(run) & set(avoid) and all(bindable(p) for p in run[1:]):
            return base


def bindable(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def run_host(argv, timeout=600):
    """Runs a process on the host to its end: its output; a failure or a timeout is an error
    quoting the output's end."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise RuntimeError(f"{argv[0]} did not finish in {timeout} s:\n{out[-2000:]}")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])} ... failed ({proc.returncode}):\n{out[-2000:]}")
    return out


def cpu_of(argv, timeout=600):
    """run_host, and the CPU seconds the process and its threads used (user + system): the
    kernel adds a reaped child's rusage (wait4) to RUSAGE_CHILDREN, in microseconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = run_host(argv, timeout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out, cpu


class Broker:
    """The broker every tool runs against: the default suite's Kafka image on the host's
    network (one for the whole bench, a fresh topic for every run), or Tansu on the host (a
    fresh in-memory broker for every run, since it keeps every record it was sent)."""

    def __init__(self, s, label):
        self.s = s
        self.label = label
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.container = None
        self.tansu = None
        if s.broker == "kafka":
            self.start_kafka()

    def start_kafka(self):
        controller = free_port()
        env = {
            "KAFKA_NODE_ID": "1",
            "KAFKA_PROCESS_ROLES": "broker,controller",
            "KAFKA_LISTENERS": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{controller}",
            "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://{self.bootstrap}",
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
            "KAFKA_CONTROLLER_QUORUM_VOTERS": f"1@127.0.0.1:{controller}",
            "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
            "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "1",
            "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
            "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
            "KAFKA_LOG_DIRS": "/var/lib/kafka/data",
            "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        }
        argv = ["docker", "run", "-d", "--rm", "--network", "host", "--label", self.label]
        for k, v in env.items():
            argv += ["-e", f"{k}={v}"]
        out = subprocess.run(argv + [self.s.kafka_image], capture_output=True, text=True)
        if out.returncode != 0:
            fail(f"starting the broker from KAFKA_IMAGE={self.s.kafka_image}: {out.stderr.strip()}"
                 " (perf-tests images build makes it)")
        self.container = out.stdout.strip()
        self.wait_ready()

    def wait_ready(self):
        out = subprocess.run([self.s.perf_tests, "workload", "probe", "--bootstrap", self.bootstrap,
                              "--timeout-s", "90"], capture_output=True, text=True)
        if out.returncode != 0:
            fail(f"the broker at {self.bootstrap} did not answer: {out.stderr.strip()[-500:]}")

    def fresh(self):
        if self.s.broker != "tansu":
            return
        self.stop_tansu()
        self.tansu = subprocess.Popen(
            [self.s.tansu, "broker", "--listener-url", f"tcp://{self.bootstrap}",
             "--advertised-listener-url", f"tcp://{self.bootstrap}", "--storage-engine", "memory://tansu/"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.wait_ready()

    def topic(self, name):
        out = subprocess.run([self.s.perf_tests, "workload", "create-topic", "--bootstrap", self.bootstrap,
                              "--topic", name], capture_output=True, text=True)
        if out.returncode != 0:
            fail(f"creating topic {name}: {out.stderr.strip()[-500:]}", 1)

    def stop_tansu(self):
        if self.tansu is not None:
            self.tansu.kill()
            self.tansu.wait()
            self.tansu = None

    def close(self):
        self.stop_tansu()
        if self.container:
            subprocess.run(["docker", "rm", "-f", self.container], capture_output=True)
            self.container = None


def last_result(out):
    lines = [l for l in out.splitlines() if l.startswith("PERF-TESTS-RESULT ")]
    if not lines:
        raise RuntimeError(f"no result line in:\n{out[-2000:]}")
    return json.loads(lines[-1].split(" ", 1)[1])


def rdkafka_rate(out):
    rates = [w for l in out.splitlines() for w in [l.split(" msgs/s")[0].split()[-1]] if " msgs/s" in l]
    if not rates:
        raise RuntimeError(f"no rate in rdkafka_performance's output:\n{out[-2000:]}")
    return float(rates[-1])


class Tools:
    def __init__(self, s, broker, label):
        self.s = s
        self.broker = broker
        self.label = label
        self.java = None
        if JAVA in s.tools:
            # One idle container the Java tools run in by docker exec, so each run's CPU is the
            # tool's own and not a container's start.
            out = subprocess.run(["docker", "run", "-d", "--rm", "--network", "host", "--label", label,
                                  "--entrypoint", "/bin/busybox", s.tools_image, "sleep", "86400"],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                fail(f"starting KAFKA_TOOLS_IMAGE={s.tools_image}: {out.stderr.strip()}"
                     " (perf-tests images build makes it)")
            self.java = out.stdout.strip()

    def close(self):
        if self.java:
            subprocess.run(["docker", "rm", "-f", self.java], capture_output=True)
            self.java = None

    def bin(self, tool):
        return self.s.before if tool == BEFORE else self.s.perf_tests

    def java_run(self, tool, args):
        """A Kafka tool in the idle container under busybox time: its output and the CPU
        seconds of the JVM (10 ms resolution)."""
        out = run_host(["docker", "exec", self.java, "/bin/busybox", "time", "-f", "CPU-SECONDS %U %S",
                        f"/opt/kafka/bin/{tool}"] + args)
        cpu = [l for l in out.splitlines() if l.startswith("CPU-SECONDS ")]
        if not cpu:
            raise RuntimeError(f"no CPU time from busybox time around {tool}:\n{out[-2000:]}")
        _, user, system = cpu[-1].split()
        return out, float(user) + float(system)

    def produce(self, tool, topic, n, rate):
        bs, size = self.broker.bootstrap, str(self.s.size)
        if tool in (PERF_TESTS, BEFORE):
            argv = [self.bin(tool), "workload", "produce", "--bootstrap", bs, "--topic", topic,
                    "--num-records", str(n), "--record-size", size, "--property", "acks=all"]
            if rate:
                argv += ["--throughput", str(rate)]
            out, cpu = cpu_of(argv)
            return last_result(out)["rate_rec_s"], cpu
        if tool == RDKAFKA:
            # -l times every record from produce call to delivery report and copies each payload,
            # as the workload does; linger.ms is librdkafka's default (the tool sets 1000 ms).
            argv = [self.s.rdkafka, "-P", "-l", "-t", topic, "-p", "0", "-b", bs, "-s", size, "-c", str(n),
                    "-a", "-1", "-X", "linger.ms=5"]
            if rate:
                argv += ["-r", str(rate)]
            out, cpu = cpu_of(argv)
            return rdkafka_rate(out), cpu
        out, cpu = self.java_run("kafka-producer-perf-test.sh", [
            "--topic", topic, "--num-records", str(n), "--record-size", size,
            "--throughput", str(rate or -1), "--producer-props", f"bootstrap.servers={bs}", "acks=all",
            "linger.ms=5"])
        final = [l for l in out.splitlines() if "records sent," in l and "50th" in l]
        if not final:
            raise RuntimeError(f"no summary in kafka-producer-perf-test's output:\n{out[-2000:]}")
        return float(final[-1].split("records sent, ")[1].split(" records/sec")[0]), cpu

    def consume(self, tool, topic, n):
        bs, group = self.broker.bootstrap, f"g-{topic}"
        if tool in (PERF_TESTS, BEFORE):
            out, cpu = cpu_of([self.bin(tool), "workload", "consume", "--bootstrap", bs, "--topic", topic,
                               "--group", group, "--expected", str(n)])
            r = last_result(out)
            # Besides the rate after the assignment (kafka-consumer-perf-test's fetch rate), the
            # rate from the first record (rdkafka_performance's), when the build reports it.
            first = r.get("first_record_ms")
            span_s = (r["rebalance_ms"] + r["fetch_ms"] - first) / 1000 if first is not None else 0
            return r["fetch_rec_s"], cpu, (r["consumed_recs"] / span_s if span_s > 0 else None)
        if tool == RDKAFKA:
            out, cpu = cpu_of([self.s.rdkafka, "-C", "-G", group, "-t", topic, "-b", bs, "-c", str(n),
                               "-X", "auto.offset.reset=earliest"])
            rate = rdkafka_rate(out)
            return rate, cpu, rate
        out, cpu = self.java_run("kafka-consumer-perf-test.sh", [
            "--bootstrap-server", bs, "--topic", topic, "--messages", str(n), "--group", group])
        rows = [l for l in out.splitlines() if l.count(",") >= 9 and l[:1].isdigit()]
        if not rows:
            raise RuntimeError(f"no result row in kafka-consumer-perf-test's output:\n{out[-2000:]}")
        # fetch.nMsg.sec: records over the time after the group's assignment, as perf-tests'
        # fetch_rec_s counts them.
        return float(rows[-1].split(",")[9]), cpu, None


def interval(values):
    """The median of per-round ratios with a distribution-free 95% interval (order statistics
    x(k) and x(n+1-k) for the largest k with P(Binomial(n, 1/2) < k) <= 2.5%), or the range
    when there are too few rounds for one."""
    xs = sorted(values)
    n = len(xs)
    below = lambda k: sum(math.comb(n, i) for i in range(k)) / 2 ** n
    ks = [k for k in range(1, n // 2 + 1) if below(k) <= 0.025]
    med = statistics.median(xs)
    if ks:
        k = max(ks)
        return f"{med:.2f} (95% interval {xs[k - 1]:.2f} .. {xs[n - k]:.2f}, {n} rounds)"
    return f"{med:.2f} (range {xs[0]:.2f} .. {xs[-1]:.2f}; {n} rounds, 6 or more give a 95% interval)"


def main():
    s = Settings()
    label = f"io.perf-tests.bench={uuid.uuid4().hex[:12]}"
    broker = tools = None

    def cleanup():
        if tools:
            tools.close()
        if broker:
            broker.close()

    with guarded(label, cleanup):
        broker = Broker(s, label)
        tools = Tools(s, broker, label)
        loads = [0] + s.rates
        print(f"records={s.records} size={s.size} acks=all rounds={s.rounds} broker={s.broker} at {broker.bootstrap};"
              f" fixed rates: {', '.join(map(str, s.rates)) or 'none'} ({s.fixed_seconds} s each);"
              " cpu = user + system CPU time of the tool's process per record;"
              " consume rec/s from the assignment (rdkafka_performance's from its first record)")
        print(f"{'round':<6} {'load':<8} {'tool':<20} {'produce rec/s':>14} {'produce cpu us/rec':>19}"
              f" {'consume rec/s':>14} {'consume cpu us/rec':>19}", flush=True)
        rows = []
        for r in range(1, s.rounds + 1):
            for load in loads:
                # Each round starts with the next tool, so drift over the run hits every tool alike.
                shift = (r - 1) % len(s.tools)
                order = s.tools[shift:] + s.tools[:shift]
                n = s.records if load == 0 else load * s.fixed_seconds
                for tool in order:
                    broker.fresh()
                    topic = f"bench-{tool.replace('_', '-')}-{r}-{load}-{uuid.uuid4().hex[:6]}"
                    broker.topic(topic)
                    p_rate, p_cpu = tools.produce(tool, topic, n, load)
                    c_rate = c_cpu = c_first = None
                    if load == 0:
                        c_rate, c_cpu, c_first = tools.consume(tool, topic, n)
                    row = {"round": r, "load": load, "tool": tool, "p_rate": p_rate, "p_us": p_cpu / n * 1e6,
                           "c_rate": c_rate, "c_us": None if c_cpu is None else c_cpu / n * 1e6,
                           "c_first": c_first}
                    rows.append(row)
                    fmt = lambda v, f: "-" if v is None else format(v, f)
                    print(f"{r:<6} {load or 'max':<8} {tool:<20} {fmt(p_rate, '.0f'):>14} {fmt(row['p_us'], '.2f'):>19}"
                          f" {fmt(c_rate, '.0f'):>14} {fmt(row['c_us'], '.2f'):>19}", flush=True)
        summarise(s, rows, loads)


def summarise(s, rows, loads):
    print()
    for load in loads:
        name = "unthrottled" if load == 0 else f"at {load} rec/s"
        of = lambda tool, key: [x[key] for x in rows if x["tool"] == tool and x["load"] == load and x[key] is not None]
        meds = ", ".join(f"{t} {statistics.median(of(t, 'p_us')):.2f}" for t in s.tools)
        print(f"{name}: median produce cpu us/rec: {meds}")
        if load == 0:
            meds = ", ".join(f"{t} {statistics.median(of(t, 'c_us')):.2f}" for t in s.tools)
            print(f"{name}: median consume cpu us/rec: {meds}")
        for other in s.tools[1:]:
            # rdkafka_performance counts its consumer from the first record, the others from
            # the assignment: each comparison takes the rates over the same span.
            span = "c_first" if other == RDKAFKA else "c_rate"
            def ratios(key):
                mine = {x["round"]: x[key] for x in rows if x["tool"] == PERF_TESTS and x["load"] == load}
                theirs = {x["round"]: x[key] for x in rows if x["tool"] == other and x["load"] == load}
                return [mine[r] / theirs[r] for r in mine if mine[r] and theirs.get(r)]
            keys = [("p_rate", "produce rate"), ("p_us", "produce cpu per record")]
            if load == 0:
                what = "consume rate" + (" from the first record" if span == "c_first" else "")
                keys += [(span, what), ("c_us", "consume cpu per record")]
            for key, what in keys:
                print(f"{name}: {what}, perf-tests / {other}: {interval(ratios(key))}")


if __name__ == "__main__":
    main()
