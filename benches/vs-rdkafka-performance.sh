#!/usr/bin/env bash
# Side by side, in one run: librdkafka's own rdkafka_performance against perf-tests' native
# workload, both on the host, against the same Tansu broker, same record size and acks.
# Rounds alternate which tool goes first so machine drift hits both alike.
#
#   cargo build --release && benches/vs-rdkafka-performance.sh
#
# Settings (environment): NUM_RECORDS (default 1000000), RECORD_SIZE (1024), ROUNDS (3; 15 or
# more for a 95% interval of the median ratio narrower than a few percent),
# PERF_TESTS_BIN (target/release/perf-tests, or $CARGO_TARGET_DIR/release/perf-tests).
set -euo pipefail
cd "$(dirname "$0")/.."

n="${NUM_RECORDS:-1000000}"
size="${RECORD_SIZE:-1024}"
rounds="${ROUNDS:-3}"
cache="${PERF_TESTS_CACHE:-$HOME/.cache/perf-tests}"
tansu="$cache/crates/tansu-0.6.0-dynostore/bin/tansu"
pt="${PERF_TESTS_BIN:-${CARGO_TARGET_DIR:-target}/release/perf-tests}"
rp_dir="$cache/rdkafka_performance"
rp="$rp_dir/src/examples/rdkafka_performance"

[[ "$n" =~ ^[0-9]+$ ]] || { echo "error: NUM_RECORDS=$n: write the count out in digits (rdkafka_performance reads 2e5 as 2)" >&2; exit 2; }
[[ -x "$pt" ]] || { echo "error: $pt not found; run cargo build --release" >&2; exit 2; }
[[ -x "$tansu" ]] || { echo "error: $tansu not found; run perf-tests images build" >&2; exit 2; }

if [[ ! -x "$rp" ]]; then
    # Built from the librdkafka sources the rdkafka-sys crate ships, as its README describes.
    src="$(ls -d "$HOME"/.cargo/registry/src/*/rdkafka-sys-*/librdkafka | sort | tail -1)"
    [[ -d "$src" ]] || { echo "error: rdkafka-sys sources not found; run cargo build first" >&2; exit 2; }
    rm -rf "$rp_dir" && mkdir -p "$rp_dir" && cp -r "$src" "$rp_dir/src"
    (cd "$rp_dir/src" &&
        ./configure --disable-ssl --disable-gssapi --disable-curl --disable-zstd --disable-lz4-ext &&
        make -j"$(nproc)" -C src && make -C examples rdkafka_performance) >"$rp_dir/build.log" 2>&1 ||
        { echo "error: building rdkafka_performance failed, see $rp_dir/build.log" >&2; exit 2; }
fi

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
bootstrap="127.0.0.1:$port"
broker=""
trap '[[ -n $broker ]] && kill $broker 2>/dev/null || true' EXIT

# Every tool run gets a fresh broker: the in-memory broker keeps every record it was sent, and a
# broker grown by earlier runs would slow the later ones.
fresh_broker() {
    if [[ -n $broker ]]; then kill "$broker" 2>/dev/null || true; wait "$broker" 2>/dev/null || true; fi
    "$tansu" broker --listener-url "tcp://127.0.0.1:$port" --advertised-listener-url "tcp://$bootstrap" \
        --storage-engine memory://tansu/ >/dev/null 2>&1 &
    broker=$!
    "$pt" workload probe --bootstrap "$bootstrap" --timeout-s 30 >/dev/null 2>&1
}

rdkafka_round() {
    local topic="rp-$1-$RANDOM"
    "$tansu" topic create "$topic" --broker "tcp://$bootstrap" --partitions 1 >/dev/null
    local p c
    # Made to do what the workload does: -l times every record from produce call to delivery
    # report and copies each payload (by default it hands librdkafka one shared buffer, which no
    # real producer can), and linger.ms is librdkafka's default (it sets 1000 ms otherwise).
    p="$("$rp" -P -l -t "$topic" -p 0 -b "$bootstrap" -s "$size" -c "$n" -a -1 -X linger.ms=5 2>&1 |
        grep -oE '[0-9]+ msgs/s' | tail -1 | cut -d' ' -f1)"
    c="$("$rp" -C -G "grp-$topic" -t "$topic" -b "$bootstrap" -c "$n" -X auto.offset.reset=earliest 2>&1 |
        grep -oE '[0-9]+ msgs/s' | tail -1 | cut -d' ' -f1)"
    echo "$p $c"
}

# The number `key` of the result line a `perf-tests workload` step printed.
result() {
    python3 -c '
import json, sys
line = [l for l in sys.stdin if l.startswith("PERF-TESTS-RESULT ")][-1]
print(round(json.loads(line.split(" ", 1)[1])[sys.argv[1]]))' "$1"
}

perf_tests_round() {
    local topic="pt-$1-$RANDOM" p c
    "$pt" workload create-topic --bootstrap "$bootstrap" --topic "$topic" >/dev/null 2>&1
    p="$("$pt" workload produce --bootstrap "$bootstrap" --topic "$topic" --num-records "$n" \
        --record-size "$size" --property acks=all 2>/dev/null | result rate_rec_s)"
    c="$("$pt" workload consume --bootstrap "$bootstrap" --topic "$topic" --group "grp-$topic" \
        --expected "$n" 2>/dev/null | result consumed_rec_s)"
    echo "$p $c"
}

echo "records=$n size=$size acks=all rounds=$rounds broker=tansu 0.6.0 (memory, fresh for every run) at $bootstrap"
printf '%-6s %-22s %14s %14s\n' round tool "produce rec/s" "consume rec/s"
results=()
for ((r = 1; r <= rounds; r++)); do
    if ((r % 2)); then order="rdkafka_performance perf-tests"; else order="perf-tests rdkafka_performance"; fi
    for tool in $order; do
        fresh_broker
        if [[ $tool == rdkafka_performance ]]; then out="$(rdkafka_round "$r")"; else out="$(perf_tests_round "$r")"; fi
        read -r p c <<<"$out"
        printf '%-6s %-22s %14s %14s\n' "$r" "$tool" "$p" "$c"
        results+=("$tool $p $c")
    done
done
printf '%s\n' "${results[@]}" | python3 -c '
import sys, statistics as st
rows = [l.split() for l in sys.stdin if l.strip()]
med = {t: (st.median(float(r[1]) for r in rows if r[0] == t), st.median(float(r[2]) for r in rows if r[0] == t))
       for t in ("rdkafka_performance", "perf-tests")}
(rp, rc), (pp, pc) = med["rdkafka_performance"], med["perf-tests"]
print(f"median produce: rdkafka_performance {rp:.0f}, perf-tests {pp:.0f}, ratio {pp / rp:.2f}")
pairs = [(float(a[1]), float(b[1])) for a, b in zip(rows[0::2], rows[1::2])]
ratios = sorted((p[0] / p[1]) if rows[2 * i][0] == "perf-tests" else (p[1] / p[0]) for i, p in enumerate(pairs))
print("produce ratio per round (perf-tests / rdkafka_performance): " + ", ".join(f"{x:.2f}" for x in ratios)
      + f"; median {st.median(ratios):.2f}")
# A distribution-free 95% interval for the median ratio: the order statistics x(k) and
# x(n + 1 - k) with the largest k such that P(Binomial(n, 1/2) < k) <= 2.5%.
from math import comb
n = len(ratios)
below = lambda k: sum(comb(n, i) for i in range(k)) / 2 ** n
k = max((k for k in range(1, n // 2 + 1) if below(k) <= 0.025), default=0)
if k:
    print(f"95% interval of the median produce ratio over {n} rounds: {ratios[k - 1]:.2f} .. {ratios[n - k]:.2f}"
          f" (coverage {1 - 2 * below(k):.3f})")
else:
    print(f"{n} rounds are too few for a 95% interval of the median (6 at least)")
print(f"median consume: rdkafka_performance {rc:.0f}, perf-tests {pc:.0f}, ratio {pc / rc:.2f}")'
