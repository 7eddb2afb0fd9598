#!/usr/bin/env python3
"""How often `servesim check` fails on seed noise alone, and how often it catches a real change.

For each of SETS random seed sets and each N in --num-seeds, writes a baseline of a fixed spec
(1,000 requests at 8 req/s on an H100, tolerances +10% TTFT p50, +10% ITL p50, -10% OTPS p50) at
seeds B .. B+N-1, then checks three current specs at other seeds C .. C+N-1: the same
configuration (any failure is a false positive), an A100 instead of the H100, and prompts 1.5x
longer (each failure a detection). Prints one row per N: the false-positive and detection rates.

    scripts/gate-noise.py build/release/servesim [--sets 50] [--num-seeds 1,3,5,10]
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile

SPEC = """baseline = base.h5
num-requests = 1000
request-rate = 8
seed = {seed}
num-seeds = {n}
{extra}
[tolerance]
ttft_ms.p50 = +10%
itl_ms.p50 = +10%
otps.p50 = -10%
[scenario.chat]
"""
CASES = {"same": "", "a100": "gpu = a100-80g", "prompts_1.5x": "input-len = lognormal:1536:0.8:16:6000"}


def check(servesim, folder, seed, n, extra, update=False):
    path = os.path.join(folder, "spec.ini")
    with open(path, "w") as f:
        f.write(SPEC.format(seed=seed, n=n, extra=extra))
    args = [servesim, "check", path] + (["--update"] if update else [])
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode not in (0, 1):
        sys.exit(f"gate-noise: {' '.join(args)} failed: {r.stderr}")
    return r.returncode


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("servesim")
    p.add_argument("--sets", type=int, default=50)
    p.add_argument("--num-seeds", default="1,3,5,10")
    p.add_argument("--rng", type=int, default=2026)
    a = p.parse_args()
    rng = random.Random(a.rng)
    print(f"{'num-seeds':>9} {'sets':>5} {'false positives':>16} {'A100 caught':>12} {'prompts 1.5x caught':>20}")
    with tempfile.TemporaryDirectory() as folder:
        for n in [int(x) for x in a.num_seeds.split(",")]:
            fails = {case: 0 for case in CASES}
            for _ in range(a.sets):
                base, cur = rng.sample(range(0, 1_000_000, 1000), 2)  # disjoint seed ranges
                check(a.servesim, folder, base, n, "", update=True)
                for case, extra in CASES.items():
                    fails[case] += check(a.servesim, folder, cur, n, extra)
            rate = {c: fails[c] / a.sets for c in CASES}
            print(f"{n:>9} {a.sets:>5} {rate['same']:>16.0%} {rate['a100']:>12.0%} {rate['prompts_1.5x']:>20.0%}")


if __name__ == "__main__":
    main()
