#!/usr/bin/env bash
# Two sides measured in alternating runs (a, b, a, b, ...), so that drift of the machine hits
# both alike, then `perf-tests compare a b`, as often as CAMPAIGNS says. The sides are two builds
# (A_BIN, B_BIN) and/or two sets of settings (A_ENV, B_ENV: space-separated VAR=value, e.g.
# B_ENV="KROXYLICIOUS_IMAGE=perf-tests/kroxylicious:dev"). With neither set, both sides are the
# same build and settings: an A/A campaign, in which every regression reported is a false alarm.
# Prints each comparison's verdict, the false-alarm count and the spread of each scenario's rates.
#
#   cargo build --release && CAMPAIGNS=10 benches/ab-campaign.sh
#   A_BIN=../main/target/release/perf-tests CAMPAIGNS=1 benches/ab-campaign.sh   # main vs this
#
# Settings (environment): CAMPAIGNS (default 10), RUNS_PER_SIDE (6), REPEAT (1 per run, so 6
# runs a side: compare counts each pooled run as one observation), NUM_RECORDS (3e5), OUT (results/ab-<UTC time>), A_BIN and B_BIN
# (default PERF_TESTS_BIN: target/release/perf-tests, or $CARGO_TARGET_DIR/release/perf-tests);
# every other perf-tests setting (TEST, SCENARIOS, WARM_UP_SECONDS_PRE_TEST, ...) is passed
# through to the runs of both sides.
set -euo pipefail
cd "$(dirname "$0")/.."

campaigns="${CAMPAIGNS:-10}"
runs="${RUNS_PER_SIDE:-6}"
export REPEAT="${REPEAT:-1}"
export NUM_RECORDS="${NUM_RECORDS:-3e5}"
out="${OUT:-results/ab-$(date -u +%Y%m%dT%H%M%SZ)}"
pt="${PERF_TESTS_BIN:-${CARGO_TARGET_DIR:-target}/release/perf-tests}"
declare -A bin=([a]="${A_BIN:-$pt}" [b]="${B_BIN:-$pt}") envs=([a]="${A_ENV:-}" [b]="${B_ENV:-}")
for side in a b; do
    [[ -x "${bin[$side]}" ]] || { echo "error: ${bin[$side]} not found; run cargo build --release" >&2; exit 2; }
done
same=$([[ "${bin[a]}" == "${bin[b]}" && "${envs[a]}" == "${envs[b]}" ]] && echo 1 || echo 0)

mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
alarms=0
for c in $(seq "$campaigns"); do
    dir="$out/campaign-$c"
    for r in $(seq "$runs"); do
        for side in a b; do
            echo "==> campaign $c of $campaigns: run $r of $runs, side $side" >&2
            # shellcheck disable=SC2086 # A_ENV / B_ENV are lists of VAR=value words
            env ${envs[$side]} RESULTS_DIR="$dir/$side" "${bin[$side]}" run >"$dir-$side-$r.log" 2>&1 ||
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
if [[ $same == 1 ]]; then
    echo "false alarms: $alarms of $campaigns A/A comparisons" | tee -a "$summary"
else
    echo "regressions found in $alarms of $campaigns comparisons" | tee -a "$summary"
fi

# The spread of every scenario's primary rates over each side's repetitions, per campaign.
python3 - "$out" <<'EOF' | tee -a "$summary"
import glob, json, os, statistics, sys
out = sys.argv[1]
cvs = {}
for side_dir in sorted(glob.glob(os.path.join(out, "campaign-*", "[ab]"))):
    reps = {}
    for f in sorted(glob.glob(os.path.join(side_dir, "*", "[0-9][0-9]-*.json"))):
        d = json.load(open(f))
        reps.setdefault(d["name"], []).extend(d["repetitions"] or [d["measurement"]])
    for name, rs in reps.items():
        for metric, get in [("producer rec/s", lambda r: r["producer"]["rate_rec_s"]),
                            ("consumer rec/s", lambda r: r["consumer"]["consumed_rec_s"])]:
            v = [get(r) for r in rs]
            cvs.setdefault((name, metric), []).append(statistics.stdev(v) / statistics.mean(v) * 100)
print("coefficient of variation within a side (median and range over the sides):")
for (name, metric), v in sorted(cvs.items()):
    print(f"  {name:42} {metric:15} {statistics.median(v):5.1f}%  ({min(v):.1f}..{max(v):.1f}%)")
EOF
