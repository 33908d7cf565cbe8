#!/usr/bin/env bash
# Two sides measured interleaved, so that drift of the machine hits both alike, then
# `perf-tests compare`, as often as CAMPAIGNS says. Prints each comparison's verdict, the
# false-alarm count (A/A) or the detection count (A/B), and the spread of each scenario's primary
# figures within each side: the producer's and the consumer's rates and, where costed, the path's
# millicores per MB/s.
#
# Two kinds of side:
# - Two builds (A_BIN, B_BIN) and/or two sets of settings (A_ENV, B_ENV: space-separated
#   VAR=value, e.g. B_ENV="KROXYLICIOUS_IMAGE=perf-tests/kroxylicious:dev"): each campaign
#   alternates whole runs (a, b, a, b, ...), RUNS_PER_SIDE a side, and compares the pooled sides.
#   With neither set, both sides are the same build and settings: an A/A campaign.
# - Two proxy images (A_IMAGE, B_IMAGE): each campaign is one run whose matrix holds both
#   (KROXYLICIOUS_IMAGE=A,B) with REPEAT=RUNS_PER_SIDE, so their repetitions alternate within
#   the run on one broker, compared with --base-where / --new-where. A matrix cannot list one
#   name twice: for an A/A campaign give the image a second name (docker tag A A-again); two
#   names of one image id make the campaign A/A.
#
#   cargo build --release && CAMPAIGNS=10 benches/ab-campaign.sh
#   A_BIN=../main/target/release/perf-tests CAMPAIGNS=1 benches/ab-campaign.sh   # main vs this
#   A_IMAGE=perf-tests/kroxylicious:0.12.0 B_IMAGE=my/kroxylicious:dev TEST='02-.*' \
#     THROUGHPUT=5e4 NUM_RECORDS=1e6 benches/ab-campaign.sh                      # two images
#
# Settings (environment): CAMPAIGNS (default 10), RUNS_PER_SIDE (6), REPEAT (1 per run with
# builds or settings, so 6 runs a side: compare counts each pooled run as one observation),
# NUM_RECORDS (3e5), OUT (results/ab-<UTC time>), A_BIN and B_BIN (default PERF_TESTS_BIN:
# target/release/perf-tests, or $CARGO_TARGET_DIR/release/perf-tests); every other perf-tests
# setting (TEST, SCENARIOS, THROUGHPUT, WARM_UP_SECONDS_PRE_TEST, ...) is passed through to the
# runs of both sides.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
    echo "error: $*" >&2
    exit 2
}
campaigns="${CAMPAIGNS:-10}"
runs="${RUNS_PER_SIDE:-6}"
[[ "$campaigns" =~ ^[1-9][0-9]*$ ]] || fail "CAMPAIGNS=$campaigns: expected a positive whole number"
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || fail "RUNS_PER_SIDE=$runs: expected a positive whole number"
export NUM_RECORDS="${NUM_RECORDS:-3e5}"
out="${OUT:-results/ab-$(date -u +%Y%m%dT%H%M%SZ)}"
pt="${PERF_TESTS_BIN:-${CARGO_TARGET_DIR:-target}/release/perf-tests}"
declare -A bin=([a]="${A_BIN:-$pt}" [b]="${B_BIN:-$pt}") envs=([a]="${A_ENV:-}" [b]="${B_ENV:-}")
for side in a b; do
    [[ -x "${bin[$side]}" ]] || fail "${bin[$side]} not found; run cargo build --release"
done

images=0
if [[ -n "${A_IMAGE:-}${B_IMAGE:-}" ]]; then
    [[ -n "${A_IMAGE:-}" && -n "${B_IMAGE:-}" ]] || fail "A_IMAGE and B_IMAGE go together: set both"
    [[ -z "${A_BIN:-}${B_BIN:-}${A_ENV:-}${B_ENV:-}" ]] ||
        fail "A_IMAGE/B_IMAGE compare two images in one run of one build: unset A_BIN, B_BIN, A_ENV and B_ENV"
    [[ "$A_IMAGE" != "$B_IMAGE" ]] ||
        fail "A_IMAGE and B_IMAGE are both $A_IMAGE: a matrix lists a name once; for an A/A campaign tag it under a second name (docker tag $A_IMAGE $A_IMAGE-again)"
    image_id() { docker image inspect -f '{{.Id}}' "$1" 2>/dev/null || fail "image $1 (from $2) not found on the engine"; }
    a_id=$(image_id "$A_IMAGE" A_IMAGE)
    b_id=$(image_id "$B_IMAGE" B_IMAGE)
    images=1
    same=$([[ "$a_id" == "$b_id" ]] && echo 1 || echo 0)
else
    export REPEAT="${REPEAT:-1}"
    same=$([[ "${bin[a]}" == "${bin[b]}" && "${envs[a]}" == "${envs[b]}" ]] && echo 1 || echo 0)
fi

mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
alarms=0
for c in $(seq "$campaigns"); do
    dir="$out/campaign-$c"
    if [[ $images == 1 ]]; then
        echo "==> campaign $c of $campaigns: one run, $A_IMAGE and $B_IMAGE, $runs repetitions each" >&2
        KROXYLICIOUS_IMAGE="$A_IMAGE,$B_IMAGE" REPEAT="$runs" RESULTS_DIR="$dir/run" "$pt" run >"$dir.log" 2>&1 ||
            { echo "error: run failed, see $dir.log" >&2; exit 1; }
        compare=("$pt" compare "$dir/run" "$dir/run" --base-where "KROXYLICIOUS_IMAGE=$A_IMAGE"
            --new-where "KROXYLICIOUS_IMAGE=$B_IMAGE")
    else
        for r in $(seq "$runs"); do
            for side in a b; do
                echo "==> campaign $c of $campaigns: run $r of $runs, side $side" >&2
                # shellcheck disable=SC2086 # A_ENV / B_ENV are lists of VAR=value words
                env ${envs[$side]} RESULTS_DIR="$dir/$side" "${bin[$side]}" run >"$dir-$side-$r.log" 2>&1 ||
                    { echo "error: run failed, see $dir-$side-$r.log" >&2; exit 1; }
            done
        done
        compare=("$pt" compare "$dir/a" "$dir/b")
    fi
    set +e
    "${compare[@]}" --format plain >"$dir/compare.txt"
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

# The spread of every scenario's primary figures over each side's repetitions, per campaign, and
# the new side's median path cost against the base's.
python3 - "$out" "${A_IMAGE:-}" <<'EOF' | tee -a "$summary"
import glob, json, os, re, statistics, sys
out, a_image = sys.argv[1], sys.argv[2]

def path_mc_per_mb_s(m, only=None):
    # As perf-tests computes it (cost::path_coefficient): the path's own CPU over every phase (or the phase `only`) per
    # MB of records, both directions counted.
    phases = [p for p in m.get("cost") or [] if only in (None, p["phase"])]
    cpu = [sum(s["cpu_s"] for s in p["services"] if s["role"] == "path") for p in phases]
    own = [any(s["role"] == "path" for s in p["services"]) for p in phases]
    mb = sum(p["record_bytes"] * (2 if p["phase"] == "produce_and_consume" else 1) for p in phases) / 1e6
    return sum(cpu) * 1000 / mb if phases and all(own) and mb > 0 else None

def figures(m):
    f = {"producer rec/s": m["producer"]["rate_rec_s"],
         "consumer rec/s": m["consumer"]["consumed_rec_s"],
         "path mc per MB/s": path_mc_per_mb_s(m)}
    phases = [p["phase"] for p in m.get("cost") or []]
    if len(phases) > 1:
        f.update({f"  ... {p}": path_mc_per_mb_s(m, p) for p in phases})
    return f
cvs, ratios = {}, {}
# In the order run: campaign-10 after campaign-9.
for campaign in sorted(glob.glob(os.path.join(out, "campaign-*/")),
                       key=lambda d: int(re.search(r"campaign-(\d+)", d).group(1))):
    sides = {}
    for f in glob.glob(os.path.join(campaign, "**", "[0-9][0-9]-*.json"), recursive=True):
        d = json.load(open(f))
        image = d.get("combination", {}).get("KROXYLICIOUS_IMAGE")
        side = ("a" if image == a_image else "b") if a_image else os.path.basename(os.path.dirname(os.path.dirname(f)))
        sides.setdefault((side, d["name"]), []).extend(d["repetitions"] or [d["measurement"]])
    figs = {key: [figures(r) for r in rs] for key, rs in sides.items()}
    for (side, name), fs in figs.items():
        for metric in fs[0]:
            v = [x for x in (f.get(metric) for f in fs) if x is not None]
            if len(v) >= 2:
                cvs.setdefault((name, metric), []).append(statistics.stdev(v) / statistics.mean(v) * 100)
        if side == "b" and ("a", name) in figs:
            a, b = ([f["path mc per MB/s"] for f in figs[(s, name)] if f["path mc per MB/s"] is not None]
                    for s in "ab")
            if a and b:
                ratios.setdefault(name, []).append(statistics.median(b) / statistics.median(a))
print("coefficient of variation within a side (median and range over the sides):")
for (name, metric), v in sorted(cvs.items(), key=lambda kv: kv[0][0]):
    print(f"  {name:42} {metric:16} {statistics.median(v):5.1f}%  ({min(v):.1f}..{max(v):.1f}%)")
for name, r in sorted(ratios.items()):
    print(f"path mc per MB/s, side b's median over side a's, per campaign: {name}: "
          + " ".join(f"{x:.3f}" for x in r))
EOF
