#!/usr/bin/env python3
"""Re-reads `perf-tests ab` results: per path, B/A of the side's CPU per MB/s as a whole and
without its JVMs' JIT compilers and GC threads (the rest), each over the pairs with its 95%
interval and the pairs' spread. The rest is what `ab` judges beside the whole (`cpu_rest`); for
results written before it did, it is recomputed from each phase's stored costs (each side's
services' CPU seconds less their JVM threads' `jit_s` and `gc_s`), the same arithmetic.

  benches/ab-rest.py RESULTS_DIR [RESULTS_DIR ...]   # run directories, or directories of them
"""
import glob
import json
import math
import os
import statistics
import sys

# Student's t, two-sided 95%, by degrees of freedom.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def over_pairs(by_pair):
    """Geometric mean of each pair's phase ratios, then their mean with its interval."""
    logs = [statistics.mean(v) for _, v in sorted(by_pair.items()) if v]
    if len(logs) < 2:
        return "n/a (fewer than 2 pairs)"
    mean, sd = statistics.mean(logs), statistics.stdev(logs)
    half = T95[len(logs) - 1] * sd / math.sqrt(len(logs))
    return (f"{math.exp(mean):.3f} ({math.exp(mean - half):.3f} .. {math.exp(mean + half):.3f}),"
            f" pairs' CV {sd * 100:.1f}%")


def rest_ratio(pair, phase, repetition):
    if phase.get("rest_mc_per_mb_s_a", 0) > 0 and phase.get("rest_mc_per_mb_s_b", 0) > 0:
        return phase["rest_mc_per_mb_s_b"] / phase["rest_mc_per_mb_s_a"]
    cost = next((c for c in repetition["cost"] if c["phase"] == "produce_and_consume"), None)
    if cost is None:
        return None
    services = {s["service"]: s for s in cost["services"]}

    def side(names):
        """The side's rest over its whole; a service that is no JVM (a KMS) counts whole."""
        costed = [services[n] for n in names if n in services]
        total = sum(s["cpu_s"] for s in costed)
        jvms = [s["threads"] for s in costed if s.get("threads")]
        if not jvms or total <= 0:
            return None
        return max(total - sum(t["jit_s"] + t["gc_s"] for t in jvms), 0.0) / total

    a, b = side(pair["a"]), side(pair["b"])
    if not a or not b:
        return None
    return phase["cpu_ratio"] * b / a


def runs(path):
    if os.path.exists(os.path.join(path, "run.json")):
        return [path]
    return sorted(os.path.dirname(p) for p in glob.glob(os.path.join(path, "*", "run.json")))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for arg in sys.argv[1:]:
        found = runs(arg)
        if not found:
            sys.exit(f"error: {arg} holds no run.json, nor run directories that do")
        for run in found:
            print(f"== {run}")
            for f in sorted(glob.glob(os.path.join(run, "[0-9]*.json"))):
                result = json.load(open(f))
                p = result.get("pair")
                if not p:
                    continue
                whole, rest = {}, {}
                for phase, rep in zip(p["phases"], result["repetitions"]):
                    whole.setdefault(phase["pair"], []).append(math.log(phase["cpu_ratio"]))
                    r = rest_ratio(p["pair"], phase, rep)
                    if r:
                        rest.setdefault(phase["pair"], []).append(math.log(r))
                print(f"  {result['name']}")
                print(f"    whole B/A {over_pairs(whole)}")
                print(f"    rest  B/A {over_pairs(rest)}")


if __name__ == "__main__":
    main()
