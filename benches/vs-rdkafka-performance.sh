#!/usr/bin/env bash
# Side by side, in one run: perf-tests' native workload against librdkafka's own
# rdkafka_performance and Kafka's kafka-producer-perf-test / kafka-consumer-perf-test, against
# the same broker, with the same record size and acks, unthrottled and at fixed producer rates.
# For every run: each tool's rate and the CPU time (user + system) its process spent per record.
# Rounds rotate which tool goes first so machine drift hits every tool alike; the summary gives
# each ratio to perf-tests as the median of the rounds' ratios with a 95% interval.
#
#   cargo build --release && perf-tests images build && benches/vs-rdkafka-performance.sh
#
# Settings (environment):
#   NUM_RECORDS     records of each unthrottled run, in digits (default 500000)
#   RECORD_SIZE     bytes per record (1024)
#   ROUNDS          rounds (3; 6 or more give a 95% interval, 15 a narrow one)
#   RATES           fixed producer rates in records/s, space-separated ("20000 50000"; "" for
#                   unthrottled runs only)
#   FIXED_SECONDS   seconds of each fixed-rate run (10): it sends rate x FIXED_SECONDS records
#   TOOLS           what perf-tests is compared with ("rdkafka_performance kafka-perf-test";
#                   perf-tests-before: the build PERF_TESTS_BEFORE_BIN names, e.g. before a change)
#   BROKER          kafka (the default suite's image, on the host's network) or tansu (a fresh
#                   in-memory broker on the host for every run; rdkafka_performance only; TANSU_BIN
#                   names its program: cargo install tansu --version 0.6.0 --features dynostore)
#   KAFKA_IMAGE, KAFKA_TOOLS_IMAGE  (perf-tests/kafka:4.4.0, perf-tests/kafka-tools:4.4.0)
#   PERF_TESTS_BIN  (target/release/perf-tests, or $CARGO_TARGET_DIR/release/perf-tests)
set -euo pipefail
cd "$(dirname "$0")/.."

cache="${PERF_TESTS_CACHE:-$HOME/.cache/perf-tests}"
pt="${PERF_TESTS_BIN:-${CARGO_TARGET_DIR:-target}/release/perf-tests}"
rp_dir="$cache/rdkafka_performance"
rp="$rp_dir/src/examples/rdkafka_performance"

n="${NUM_RECORDS:-500000}"
[[ "$n" =~ ^[0-9]+$ ]] || { echo "error: NUM_RECORDS=$n: write the count out in digits (rdkafka_performance reads 2e5 as 2)" >&2; exit 2; }
[[ -x "$pt" ]] || { echo "error: $pt not found; run cargo build --release" >&2; exit 2; }

if [[ " ${TOOLS:-rdkafka_performance} " == *" rdkafka_performance "* && ! -x "$rp" ]]; then
    # Built from the librdkafka sources the rdkafka-sys crate ships, as its README describes.
    # Where cargo keeps the crates' sources: CARGO_HOME, as cargo itself reads it.
    registry="${CARGO_HOME:-$HOME/.cargo}/registry/src"
    src="$(ls -d "$registry"/*/rdkafka-sys-*/librdkafka 2>/dev/null | sort | tail -1 || true)"
    [[ -n "$src" && -d "$src" ]] ||
        { echo "error: rdkafka-sys sources not found under $registry; run cargo build first" >&2; exit 2; }
    echo "building rdkafka_performance from $src (once)" >&2
    rm -rf "$rp_dir" && mkdir -p "$rp_dir" && cp -r "$src" "$rp_dir/src"
    (cd "$rp_dir/src" &&
        ./configure --disable-ssl --disable-gssapi --disable-curl --disable-zstd --disable-lz4-ext &&
        make -j"$(nproc)" -C src && make -C examples rdkafka_performance) >"$rp_dir/build.log" 2>&1 ||
        { echo "error: building rdkafka_performance failed, see $rp_dir/build.log" >&2; exit 2; }
fi

export PERF_TESTS_BIN="$pt" RDKAFKA_PERFORMANCE_BIN="$rp"
exec python3 benches/client-tools.py
