#!/usr/bin/python3
"""Fits the H100 vllm-v1 engine parameters of h100_params() (models/roofline.cpp) on a
ground-truth CSV of real vLLM runs, and reports leave-one-experiment-out errors.

    scripts/fit-v1-engine.py [--bin build/release/servesim] [--csv ../shared/groundtruth/...]
                             [--leave-one-out]

Each evaluation writes a calibration INI (the A100 fit, the H100 all-reduce, and the parameters
being fitted) and runs `servesim validate --calibration INI --csv OUT`. The loss is the mean
absolute percentage error of E2E mean plus that of TPOT mean plus half that of TTFT mean plus half
the worst E2E error, over the experiments' summary rows; the search is a coordinate descent with halving steps within
physical bounds. Python 3 standard library only.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The A100 operator fit (a100_fitted_params) and the H100 all-reduce (h100_params), held fixed.
FIXED = dict(knee_sharpness=1.36004, linear_tile_tokens=64, linear_compute_efficiency=0.737817,
             elementwise_memory_efficiency=0.592348, elementwise_floor_s_per_layer=2.09352e-05,
             attention_compute_efficiency=0.278258, attention_floor_s_per_layer=1.34185e-05,
             interconnect_efficiency=0.23, allreduce_latency_s=28e-6,
             allreduce_switch_bytes=524288, allreduce_large_latency_s=3.80909e-05,
             cpu_overhead_s=0.000868045, cpu_overhead_s_per_seq=3.61964e-05,
             custom_allreduce_max_bytes=8388608, custom_allreduce_latency_s=9e-6,
             custom_allreduce_efficiency=0.06)
# name: (start, low, high, first step)
FREE = dict(linear_memory_efficiency=(0.95, 0.5, 0.95, 0.05),
            attention_memory_efficiency=(0.466, 0.2, 1.0, 0.1),
            v1_step_s=(0.59375e-3, 0, 0.01, 0.5e-3),
            v1_step_s_per_seq=(0, 0, 1e-4, 5e-6),
            frontend_latency_s=(5.625e-3, 0, 0.1, 0.005),
            v1_floor_fraction=(0.3625, 0, 1, 0.2),
            v1_cpu_s=(5e-3, 0, 0.02, 2e-3),
            v1_cpu_s_per_seq=(175e-6, 0, 1e-3, 1e-4),
            moe_memory_efficiency=(0.77, 0.3, 0.95, 0.05))


class Evaluator:
    def __init__(self, binary, truth, workdir):
        self.binary, self.truth, self.workdir, self.cache = binary, truth, workdir, {}

    def errors(self, params):
        key = tuple(round(params[n], 12) for n in FREE)
        if key not in self.cache:
            ini = os.path.join(self.workdir, "cal.ini")
            out = os.path.join(self.workdir, "out.csv")
            with open(ini, "w") as f:
                f.write("gpu = h100-sxm\n")
                for k, v in list(FIXED.items()) + list(params.items()):
                    f.write("%s = %r\n" % (k, v))
            subprocess.run([self.binary, "validate", self.truth, "--calibration", ini, "--csv",
                            out], check=True, stdout=subprocess.DEVNULL)
            rows = {}
            for r in csv.DictReader(open(out)):
                if r["stage"] == "all" and not r["skipped"]:
                    rows[r["experiment"]] = {m: float(r[m + "_error_pct"])
                                             for m in ("ttft_mean", "tpot_mean", "e2e_mean")}
            self.cache[key] = rows
        return self.cache[key]


def loss(errors, exclude):
    total = 0
    for metric, weight in (("e2e_mean", 1), ("tpot_mean", 1), ("ttft_mean", 0.5)):
        a = [abs(e[metric]) for x, e in errors.items() if x != exclude]
        total += weight * sum(a) / len(a)
        if metric == "e2e_mean":  # the target bounds the worst experiment too
            total += 0.5 * max(a)
    return total


def fit(ev, exclude=None, rounds=5):
    x = {n: v[0] for n, v in FREE.items()}
    step = {n: v[3] for n, v in FREE.items()}
    best = loss(ev.errors(x), exclude)
    for _ in range(rounds):
        for n, (_, lo, hi, _) in FREE.items():
            for d in (1, -1):
                while True:
                    y = dict(x)
                    y[n] = min(hi, max(lo, x[n] + d * step[n]))
                    if y[n] == x[n]:
                        break
                    l = loss(ev.errors(y), exclude)
                    if l >= best - 1e-9:
                        break
                    x, best = y, l
        for n in step:
            step[n] /= 2
    return x, best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "servesim"))
    ap.add_argument("--csv", default=os.path.join(os.path.dirname(ROOT), "shared", "groundtruth",
                                                  "vllm-0.15.1-h100.csv"))
    ap.add_argument("--leave-one-out", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ev = Evaluator(a.bin, a.csv, tmp)
        x, best = fit(ev)
        print("fitted on every experiment (loss %.2f):" % best)
        print(json.dumps(x, indent=1))
        errors = ev.errors(x)
        for m in ("ttft_mean", "tpot_mean", "e2e_mean"):
            v = [abs(e[m]) for e in errors.values()]
            print("  %-9s in sample: median %.1f%%, max %.1f%%" % (m, statistics.median(v), max(v)))
        if not a.leave_one_out:
            return
        held = {m: [] for m in ("ttft_mean", "tpot_mean", "e2e_mean")}
        for name in sorted(errors):
            y, _ = fit(ev, exclude=name)
            e = ev.errors(y)[name]
            print("  left out %-50s TTFT %+6.1f%%  TPOT %+6.1f%%  E2E %+6.1f%%" %
                  (name, e["ttft_mean"], e["tpot_mean"], e["e2e_mean"]))
            for m in held:
                held[m].append(abs(e[m]))
        for m, v in held.items():
            print("  %-9s left out: median %.1f%%, max %.1f%%" % (m, statistics.median(v), max(v)))


if __name__ == "__main__":
    main()
