#!/usr/bin/python3
"""What the Python module costs (issue 29): the time to import it, a 10,000-request run from
Python against the command line, and the cost of one call of a policy written in Python. Medians
of several runs; timing only, no pass or fail (docs/manual/python.md quotes its output).

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python_overhead.py build/release/servesim
"""
import statistics
import subprocess
import os
import sys
import tempfile
import time

import servesim

BINARY = sys.argv[1] if len(sys.argv) > 1 else "servesim"
N = 10000
REPEATS = 7


def median_s(fn, repeats=REPEATS):
    """The median wall time of FN() over REPEATS calls, and FN's last result."""
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def process(*args):
    return lambda: subprocess.run(list(args), check=True, capture_output=True)


def imports():
    bare, _ = median_s(process(sys.executable, "-c", "pass"))
    pandas, _ = median_s(process(sys.executable, "-c", "import pandas"))
    module, _ = median_s(process(sys.executable, "-c", "import servesim"))
    core, _ = median_s(process(sys.executable, "-c", "import servesim._servesim"))
    print("import (a fresh process each): interpreter %.3f s, pandas %.3f s, servesim %.3f s, "
          "servesim with _servesim %.3f s" % (bare, pandas, module, core))


def whole_run():
    cli, _ = median_s(process(BINARY, "run", "--num-requests", str(N)))
    files, _ = median_s(process(BINARY, "run", "--num-requests", str(N), "--out", "/tmp/py_o.h5",
                                "--json", "/tmp/py_o.json"))
    py, r = median_s(lambda: servesim.run(num_requests=N))
    lean, _ = median_s(lambda: servesim.run(num_requests=N, keep_steps=False))
    read, _ = median_s(lambda: servesim.read("/tmp/py_o.h5"))
    old, _ = median_s(lambda: through_files("run", "--num-requests", str(N)))
    print("%d requests: servesim run %.3f s (with --out and --json %.3f s); servesim.run %.3f s "
          "(%d steps; keep_steps=False %.3f s; through files %.3f s); servesim.read of the "
          "binary's file %.3f s" % (N, cli, files, py, len(r.steps), lean, old, read))


def through_files(*args):
    """What servesim.run did before its results came back in memory (issue 45): the command writes
    --out and --json to a temporary folder and the module reads them back."""
    with tempfile.TemporaryDirectory(prefix="servesim-") as d:
        h5, js = os.path.join(d, "run.h5"), os.path.join(d, "run.json")
        servesim.command(*args, "--out=" + h5, "--json=" + js)
        with open(js) as f:
            f.read()
        return servesim.read(h5)


def small_call():
    """A call's own cost (issue 45): a one-request run from Python against the same command run
    in-process through servesim.command (no files), and against the same run's results through
    files, medians of 31."""
    args = ("run", "--num-requests=1", "--seed=3")
    cli, _ = median_s(lambda: servesim.command(*args), repeats=31)
    py, _ = median_s(lambda: servesim.run(num_requests=1, seed=3), repeats=31)
    files, _ = median_s(lambda: through_files(*args), repeats=31)
    print("one request: servesim.command %.2f ms, servesim.run %.2f ms: %.2f ms a call on top "
          "(through files: %.2f ms, %.2f ms on top)"
          % (cli * 1e3, py * 1e3, (py - cli) * 1e3, files * 1e3, (files - cli) * 1e3))


def policies():
    cfg = dict(scheduler="vllm-v1", num_requests=N, num_gpu_blocks=3000, seed=5,
               keep_steps=False)
    calls = {"key": 0, "victim": 0, "score": 0}

    def key(request):
        calls["key"] += 1
        return request["arrival_s"]

    def victim(running):
        calls["victim"] += 1
        return running[-1]["id"]

    def score(request, replicas):
        calls["score"] += 1
        return [-r["outstanding"] for r in replicas]

    def per_call(name, base, **policy):
        calls[name] = 0
        t, r = median_s(lambda: servesim.run(**cfg, **policy))
        n = calls[name] // REPEATS
        print("  %-18s %6d calls  %.3f s against %.3f s: %.2f us a call"
              % (name, n, t, base, (t - base) / n * 1e6))
        return r

    base, plain = median_s(lambda: servesim.run(**cfg))
    print("policies in Python (%d requests, vllm-v1, %d preemptions):"
          % (N, plain.summary["preemptions"]))
    same = per_call("key", base, admission_key=key)
    per_call("victim", base, preemption_victim=victim)
    assert same.json_text == plain.json_text  # FCFS by key: the C++ policy's run
    cfg.update(num_replicas=4, request_rate=36, num_gpu_blocks=0)
    base, _ = median_s(lambda: servesim.run(**cfg))
    per_call("score", base, router_score=score)


if __name__ == "__main__":
    imports()
    small_call()
    whole_run()
    policies()
