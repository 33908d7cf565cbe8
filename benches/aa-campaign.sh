#!/usr/bin/env bash
# A/A campaigns: the same build measured as two sides, their runs alternating (a, b, a, b, ...),
# then `perf-tests compare a b`. Nothing differs between the sides, so every regression it
# reports is a false alarm; the campaign counts them, and the spread of each scenario's rates.
#
#   cargo build --release && CAMPAIGNS=10 benches/aa-campaign.sh
#
# Settings (environment): CAMPAIGNS (default 10), RUNS_PER_SIDE (2), REPEAT (3 per run, so 6
# repetitions a side), NUM_RECORDS (3e5), OUT (results/aa-<UTC time>), PERF_TESTS_BIN
# (target/release/perf-tests, or $CARGO_TARGET_DIR/release/perf-tests); every other perf-tests
# setting (TEST, SCENARIOS, WARM_UP_NUM_RECORDS_PRE_TEST, ...) is passed through to the runs.
set -euo pipefail
cd "$(dirname "$0")/.."

campaigns="${CAMPAIGNS:-10}"
runs="${RUNS_PER_SIDE:-2}"
export REPEAT="${REPEAT:-3}"
export NUM_RECORDS="${NUM_RECORDS:-3e5}"
out="${OUT:-results/aa-$(date -u +%Y%m%dT%H%M%SZ)}"
pt="${PERF_TESTS_BIN:-${CARGO_TARGET_DIR:-target}/release/perf-tests}"
[[ -x "$pt" ]] || { echo "error: $pt not found; run cargo build --release" >&2; exit 2; }

mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
alarms=0
for c in $(seq "$campaigns"); do
    dir="$out/campaign-$c"
    for r in $(seq "$runs"); do
        for side in a b; do
            echo "==> campaign $c of $campaigns: run $r of $runs, side $side" >&2
            RESULTS_DIR="$dir/$side" "$pt" run >"$dir-$side-$r.log" 2>&1 ||
                { echo "error: run failed, see $dir-$side-$r.log" >&2; exit 1; }
        done
    done
    set +e
    "$pt" compare "$dir/a" "$dir/b" --format plain >"$dir/compare.txt"
    code=$?
    set -e
    [[ $code -le 1 ]] || { echo "error: compare failed, see $dir/compare.txt" >&2; exit 1; }
    [[ $code -eq 1 ]] && alarms=$((alarms + 1))
    echo "campaign $c: exit $code: $(head -1 "$dir/compare.txt")" | tee -a "$summary"
done
echo "false alarms: $alarms of $campaigns A/A comparisons" | tee -a "$summary"

# The spread of every scenario's primary rates over each side's repetitions, per campaign.
python3 - "$out" <<'EOF' | tee -a "$summary"
import glob, json, os, statistics, sys
out = sys.argv[1]
cvs = {}
for side_dir in sorted(glob.glob(os.path.join(out, "campaign-*", "[ab]"))):
    reps = {}
    for f in sorted(glob.glob(os.path.join(side_dir, "*", "[0-9][0-9]-*.json"))):
        d = json.load(open(f))
        reps.setdefault(d["name"], []).extend(d["repetitions"])
    for name, rs in reps.items():
        for metric, get in [("producer rec/s", lambda r: r["producer"]["rate_rec_s"]),
                            ("consumer rec/s", lambda r: r["consumer"]["consumed_rec_s"])]:
            v = [get(r) for r in rs]
            cvs.setdefault((name, metric), []).append(statistics.stdev(v) / statistics.mean(v) * 100)
print("coefficient of variation within a side (median and range over the sides):")
for (name, metric), v in sorted(cvs.items()):
    print(f"  {name:42} {metric:15} {statistics.median(v):5.1f}%  ({min(v):.1f}..{max(v):.1f}%)")
EOF
