#!/usr/bin/python3
"""Writes small fake servesim files of the three layouts, and edge cases, for
`scripts/test-plots --fake`:

    tests/plots/fake_files.py OUTDIR     # prints each file's path

Newer files carry what servesim derives for figures (analysis/results.cpp, sweep_run.cpp,
sweep_intervals.cpp, capacity.cpp): a results file's alarm attributes and each run's
baseline_otps, rejection_heavy and overloaded; a sweep's intervals group (each configuration's
mean and Student t 95% half-width over its seeds), rejection_heavy, cost_source and
count_columns; a capacity table's rejection_heavy and cost_source. Older files (results.h5's
single-run sibling, sweep.h5, capacity.h5) lack them, to exercise the plots' fallbacks. Also: single
points, empty tables, a results file missing a table, a file of an unknown kind, a text file."""
import json
import math
import os
import sys

import h5py
import numpy as np

# t(0.975, df) for the replicate counts used here (n = df + 1), as boost computes them.
T975 = {4: 2.7764451051977987, 99: 1.9842169515086827}
SOURCES = {"h100-sxm": "hopper fit on Vidur's H100 operator profiles",
           "a100-80g": "ampere fit on Vidur's A100-80GB operator profiles"}
ENGINE_SOURCE = "vLLM V0: CPU work from Vidur's cpu_overheads.csv, CUDA-graph decode steps"
WINDOW_COLS = ("start_s", "end_s", "otps", "ttft_ms_p50", "ttft_ms_p95")
SWEEP_NEW_COLS = ("goodput_req_s", "total_input_tokens", "total_output_tokens", "queue_len_p50",
                  "queue_len_p99", "kv_usage_p50", "kv_usage_p99", "waiting_at_last_arrival",
                  "arrival_rate_req_s", "drain_s", "step_time_fraction")
COUNTS = ("completed", "rejected", "preemptions", "steps", "total_input_tokens",
          "total_output_tokens", "waiting_at_last_arrival")


def fixed(strings):
    """Fixed-length byte strings, as servesim's writers store them."""
    width = max([1] + [len(s.encode()) for s in strings])
    return np.array([s.encode() for s in strings], dtype=f"S{width}")


def write_group(parent, name, cols):
    g = parent.create_group(name)
    for k, v in cols.items():
        if isinstance(v, list):  # string column
            g.create_dataset(k, data=fixed(v))
        else:
            g.create_dataset(k, data=np.asarray(v))
    return g


def cost_source(gpu):
    return f"{SOURCES[gpu]}; {ENGINE_SOURCE}"


def cloudwatch_otps(req):
    """A run's whole-log p50 OTPS as servesim diagnose takes a baseline's: p50(output tokens) /
    (p50(E2E) - p50(TTFT)) x 1000 over the completed requests."""
    t, e, o = req["ttft_ms"], req["e2e_ms"], req["output_tokens"].astype(float)
    done = np.isfinite(t) & np.isfinite(e)
    return float(np.percentile(o[done], 50) /
                 (np.percentile(e[done], 50) - np.percentile(t[done], 50)) * 1e3)


def intervals(cols, text, ints, reals, replicate):
    """The intervals group of a sweep's points COLS: one row per configuration (its TEXT but
    REPLICATE and error, and INTS), the mean of each of REALS over its points' finite values
    and its 95% half-width (NaN for one value), and `replicates`."""
    keep = [c for c in text if c not in replicate and c != "error"]
    units = {}
    for i in range(len(cols["point"])):
        if cols["error"][i]:
            continue
        key = tuple(cols[c][i] for c in keep) + tuple(int(cols[c][i]) for c in ints)
        units.setdefault(key, []).append(i)
    out = {"point": np.array([m[0] for m in units.values()], dtype=np.int64)}
    for c in keep:
        out[c] = [cols[c][m[0]] for m in units.values()]
    for c in ints:
        out[c] = np.array([cols[c][m[0]] for m in units.values()], dtype=np.int64)
    out["replicates"] = np.array([len(m) for m in units.values()], dtype=np.int64)
    for c in reals:
        mean, half = [], []
        for m in units.values():
            v = np.asarray(cols[c], dtype=float)[m]
            v = v[np.isfinite(v)]
            mean.append(v.mean() if v.size else math.nan)
            half.append(T975[v.size - 1] * v.std(ddof=1) / math.sqrt(v.size) if v.size > 1
                        else math.nan)
        out[c], out[c + "_ci95"] = np.array(mean), np.array(half)
    return out


def write_fake_examples(outdir):
    """Writes the files into OUTDIR; returns their names."""
    os.makedirs(outdir, exist_ok=True)
    rng = np.random.default_rng(7)
    names = []

    def results_file(fname, runs, period_s=60.0, newer=True):
        """RUNS: (name, summary, requests, windows, itl, steps); NEWER: with the alarm and each
        run's flags and baseline OTPS, as servesim writes them now."""
        with h5py.File(os.path.join(outdir, fname), "w") as f:
            f.attrs["magic"] = np.bytes_(b"servesim-results")
            f.attrs["version"] = np.int64(1)
            f.attrs["runs"] = np.bytes_("\n".join(r[0] for r in runs).encode())
            f.attrs["period_s"] = float(period_s)
            if newer:
                first = cloudwatch_otps(runs[0][2])
                f.attrs["alarm_fraction"] = 0.8
                f.attrs["alarm_baseline_run"] = np.bytes_(runs[0][0].encode())
                f.attrs["alarm_threshold_otps"] = 0.8 * first
            for rname, summary, req, win, itl, steps in runs:
                g = f.create_group(f"runs/{rname}")
                g.attrs["label"] = rname  # variable-length str: the reader accepts both
                g.attrs["summary"] = np.bytes_(json.dumps(summary).encode())
                if "config" in summary:
                    g.attrs["config"] = np.bytes_(json.dumps(summary["config"]).encode())
                if newer:
                    g.attrs["baseline_otps"] = cloudwatch_otps(req)
                    g.attrs["rejection_heavy"] = np.int64(summary["requests"]["rejected_share"]
                                                          > 0.01)
                    g.attrs["overloaded"] = np.int64(summary["overloaded"]["overloaded"])
                write_group(g, "requests", req)
                write_group(g, "windows", win)
                write_group(g, "itl", itl)
                if steps is not None:
                    write_group(g, "steps", steps)
        names.append(fname)

    def fake_run(n, ttft_scale, itl_ms, span_s, period_s, otps_ratio, steps=True):
        arrival = np.sort(rng.uniform(0, span_s, n))
        status = np.where(rng.uniform(size=n) < 0.03, 1, 0).astype(np.int8)
        out = rng.integers(1, 400, n)
        inp = rng.integers(50, 4000, n)
        ttft = rng.lognormal(math.log(ttft_scale), 0.8, n)
        e2e = ttft + out * itl_ms
        ttft[status > 0] = math.nan
        e2e[status > 0] = math.nan
        req = {
            "id": np.arange(n, dtype=np.int64), "arrival_s": arrival,
            "input_tokens": inp.astype(np.int64), "output_tokens": out.astype(np.int64),
            "first_token_s": arrival + ttft / 1e3, "finish_s": arrival + e2e / 1e3,
            "ttft_ms": ttft, "e2e_ms": e2e,
            "tpot_ms": np.where(out > 1, (e2e - ttft) / np.maximum(out - 1, 1), math.nan),
            "otps": np.where(out > 1, out / ((e2e - ttft) / 1e3), math.nan),
            "max_itl_ms": ttft * 0 + itl_ms * 5, "queue_ms": ttft * 0.3,
            "preemptions": np.zeros(n, dtype=np.int64), "status": status,
        }
        nwin = int(math.ceil(span_s / period_s))
        starts = np.arange(nwin) * period_s
        p50 = ttft_scale * (1 + 0.5 * np.sin(np.arange(nwin)))
        otps = otps_ratio * (1 - 0.3 * (np.arange(nwin) % 4 == 2))
        completions = np.full(nwin, n // max(nwin, 1), dtype=np.int64)
        if nwin > 3:  # a window without completions: NaN statistics
            completions[3] = 0
            p50[3] = otps[3] = math.nan
        win = {
            "start_s": starts, "end_s": starts + period_s,
            "arrivals": np.full(nwin, n // max(nwin, 1), dtype=np.int64),
            "completions": completions,
            "ttft_ms_p50": p50, "ttft_ms_p95": p50 * 3, "e2e_ms_p50": p50 + 5000,
            "e2e_ms_p95": p50 * 3 + 9000, "output_tokens_p50": np.full(nwin, 200.0),
            "output_tokens_p95": np.full(nwin, 380.0), "otps": otps,
            "input_tokens_p50": np.full(nwin, 1000.0), "queue_ms_p50": p50 * 0.3,
        }
        # Log buckets with ratio 1 + 2^-8 around ITL_MS; only non-empty ones plus an overflow.
        k = np.arange(-400, 900)
        upper = itl_ms * (1 + 2.0 ** -8) ** k
        gaps = np.concatenate([rng.lognormal(math.log(itl_ms), 0.05, 5000),
                               rng.lognormal(math.log(itl_ms * 8), 0.3, 60)])
        count = np.bincount(np.clip(np.searchsorted(upper, gaps), 0, len(upper) - 1),
                            minlength=len(upper)).astype(np.int64)
        keep = count > 0
        itl = {"upper_ms": np.r_[upper[keep], math.inf], "count": np.r_[count[keep], 0]}
        st = None
        if steps:
            m = 50
            st = {"start_s": np.linspace(0, span_s, m), "duration_s": np.full(m, 0.02),
                  "prefill_tokens": np.full(m, 512, dtype=np.int64),
                  "decode_tokens": np.full(m, 64, dtype=np.int64),
                  "batch_size": np.full(m, 64, dtype=np.int64),
                  "kv_blocks_used": np.full(m, 1000, dtype=np.int64),
                  "flops": np.full(m, 1e13), "bytes": np.full(m, 2e10)}
        return req, win, itl, st

    span = 600.0

    def summ(t, o, gpu, rejected=0, overloaded=False):
        """A run's summary as `run --json` writes it, in part: its config names the cost
        model's sources."""
        return {"ttft_ms": {"p50": t}, "otps": {"p50": o, "p50_ratio": o},
                "requests": {"total": 400, "completed": 400 - rejected, "rejected": rejected,
                             "rejected_share": rejected / 400},
                "overloaded": {"overloaded": overloaded, "waiting_at_last_arrival": 120},
                "config": {"model": "llama-3.1-8b", "gpu": gpu, "tensor_parallel_size": 1,
                           "cost_model": {"name": "roofline",
                                          "hardware": {"source": SOURCES[gpu]},
                                          "engine": {"name": "v0", "source": ENGINE_SOURCE}}}}
    results_file("results.h5", [
        ("vllm-v0:131072", summ(50, 34.0, "h100-sxm"), *fake_run(400, 50, 20, span, 60, 34.0)),
        ("chunked:512", summ(180, 44.0, "h100-sxm"),
         *fake_run(400, 180, 23, span, 60, 44.0, steps=False)),
    ])
    # Baseline and current: the current run is slower, overloaded and rejects 20%.
    results_file("base_results.h5", [
        ("chunked:2048", summ(60, 50.0, "h100-sxm"),
         *fake_run(400, 60, 18, span, 60, 50.0, steps=False))])
    results_file("cur_results.h5", [
        ("chunked:2048", summ(90, 30.0, "a100-80g", rejected=80, overloaded=True),
         *fake_run(400, 90, 30, span, 60, 30.0, steps=False))])
    # One run, one window, one request (single points everywhere); an older file: a summary
    # without config, no flags, no baseline OTPS, no alarm.
    results_file("single_results.h5", [
        ("chunked:2048", {"ttft_ms": {"p50": 60}},
         *fake_run(1, 60, 18, 10, 300, 40.0, steps=False)),
    ], period_s=300, newer=False)
    empty_req = {c: np.empty(0) for c in ("id", "arrival_s", "ttft_ms")}
    empty_req["status"] = np.empty(0, dtype=np.int8)
    results_file("empty_results.h5", [
        ("chunked:512", {}, empty_req,
         {c: np.empty(0) for c in WINDOW_COLS},
         {"upper_ms": np.empty(0), "count": np.empty(0, dtype=np.int64)}, None),
    ], newer=False)

    def sweep_file(fname, rows, grid, newer=False):
        """NEWER: the layout servesim writes now (flags, cost_source, the intervals group and
        the attributes naming the columns); without, an older file's."""
        replicate = [flag for flag, _ in grid if flag == "seed"]
        with h5py.File(os.path.join(outdir, fname), "w") as f:
            f.attrs["magic"] = np.bytes_(b"servesim-sweep")
            f.attrs["version"] = np.int64(1)
            f.attrs["grid"] = np.bytes_(json.dumps({"fixed": [], "axes": grid}).encode())
            f.attrs["points_total"] = np.int64(len(rows))
            cols = {"point": np.arange(len(rows), dtype=np.int64)}
            for flag, _ in grid:
                cols[flag] = [str(r[flag]) for r in rows]
            cols["label"] = [f"{r['policy']}:{r['budget']}" for r in rows]
            cols["policy"] = [r["policy"] for r in rows]
            cols["gpu"] = [r.get("gpu", "h100-sxm") for r in rows]
            cols["model"] = ["llama-3.1-8b" for _ in rows]
            if newer:
                cols["cost_source"] = [cost_source(g) for g in cols["gpu"]]
                cols["error"] = ["" for _ in rows]
            text = [c for c in cols if c != "point"]
            cols["max_num_batched_tokens"] = np.array([r["budget"] for r in rows], dtype=np.int64)
            cols["tp"] = np.ones(len(rows), dtype=np.int64)
            ints = ["max_num_batched_tokens", "tp"]
            cols["request_rate"] = np.array([r["rate"] for r in rows], dtype=float)
            for m in ("completed", "rejected", "preemptions"):
                cols[m] = np.array([r.get(m, 0.0) for r in rows], dtype=float)
            for metric in ("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms", "queue_ms", "otps"):
                for s in ("mean", "p50", "p90", "p95", "p99", "max"):
                    cols[f"{metric}_{s}"] = np.array([r[metric] * (1 + 0.2 * ("p9" in s))
                                                      for r in rows], dtype=float)
            for m in ("otps_p50_ratio", "requests_per_s", "output_tokens_per_s",
                      "total_tokens_per_s", "mfu", "mbu", "kv_usage_mean", "kv_usage_max",
                      "makespan_s", "steps") + (SWEEP_NEW_COLS if newer else ("busy_fraction",)):
                cols[m] = np.array([1.0 for _ in rows])
            if newer:
                done, rej = cols["completed"], cols["rejected"]
                cols["rejected_share"] = np.where(done + rej > 0, rej / np.maximum(done + rej, 1),
                                                  0.0)
                cols["overloaded"] = np.array([float(r.get("overloaded", 0)) for r in rows])
                cols["rejection_heavy"] = (cols["rejected_share"] > 0.01).astype(float)
            reals = [c for c in cols if c not in text and c not in ints and c != "point"]
            if newer:
                for k, v in (("text_columns", text), ("int_columns", ints),
                             ("real_columns", reals), ("replicate_columns", replicate),
                             ("count_columns", [c for c in COUNTS if c in reals])):
                    f.attrs[k] = np.bytes_("\n".join(v).encode())
                f.attrs["grid_id"] = np.bytes_(b"fake")
                f.attrs["shard"] = np.bytes_(b"all")
                write_group(f, "intervals", intervals(cols, text, ints, reals, replicate))
            write_group(f, "points", cols)
        names.append(fname)

    rows = []
    for policy in ("chunked", "sarathi"):
        for rate in (5.0, 20.0):
            for budget in (256, 512, 1024, 2048):
                ttft = (30 if policy == "chunked" else 40) * 2048 / budget * (rate / 5) ** 1.5
                itl = 15 + budget / 40 * (rate / 5)
                if policy == "sarathi" and rate == 20 and budget == 256:
                    ttft = itl = math.nan  # nothing completed
                rows.append({"policy": policy, "rate": rate, "budget": budget, "ttft_ms": ttft,
                             "itl_ms": itl, "tpot_ms": itl, "e2e_ms": ttft + 5000,
                             "queue_ms": ttft / 2, "otps": 1000 / itl, "completed": 100,
                             "scheduler": f"{policy}", "request-rate": f"{rate:g}",
                             "max-num-batched-tokens": str(budget)})
    grid = [["scheduler", ["chunked", "sarathi"]], ["request-rate", ["5", "20"]],
            ["max-num-batched-tokens", ["256", "512", "1024", "2048"]], ["gpu", ["h100-sxm"]]]
    for r in rows:
        r["gpu"] = "h100-sxm"
    sweep_file("sweep.h5", rows, grid)  # an older file: no flags, intervals or cost_source
    sweep_file("single_sweep.h5", rows[:1], grid[:1])
    sweep_file("empty_sweep.h5", [], grid)

    def seed_rows(gpu, seeds, budgets=(512, 1024, 2048), rates=(5.0, 20.0), spoil=True,
                  slow=1.0):
        """Rows of a sweep over seeds. With SPOIL, vllm-v0:512 rejects 95% of its requests and
        chunked:512 at the highest rate is overloaded: both have the lowest TTFT and ITL of the
        sweep, so a plot that does not exclude them would call them best."""
        out = []
        for policy in ("vllm-v0", "chunked"):
            for rate in rates:
                for budget in budgets:
                    for seed in seeds:
                        noise = 1 + 0.08 * math.sin(seed * 2.3 + budget + rate)
                        ttft = slow * (40 if policy == "chunked" else 55) * 2048 / budget * \
                            (rate / 5) ** 1.2 * noise
                        itl = slow * (18 + budget / 60 * (rate / 5)) * (2 - noise)
                        row = {"policy": policy, "rate": rate, "budget": budget, "gpu": gpu,
                               "completed": 100.0, "rejected": 0.0, "overloaded": 0,
                               "scheduler": policy, "request-rate": f"{rate:g}",
                               "max-num-batched-tokens": str(budget), "seed": str(seed)}
                        if spoil and policy == "vllm-v0" and budget == min(budgets):
                            row.update(completed=5.0, rejected=95.0)
                            ttft, itl = 2.0 * noise, 5.0 * noise
                        if spoil and policy == "chunked" and budget == min(budgets) and \
                                rate == max(rates):
                            row["overloaded"] = 1
                            ttft, itl = 3.0 * noise, 4.0 * noise
                        row.update(ttft_ms=ttft, itl_ms=itl, tpot_ms=itl, e2e_ms=ttft + 4000,
                                   queue_ms=ttft / 3, otps=1000 / itl)
                        out.append(row)
        return out
    seed_grid = [["scheduler", ["vllm-v0", "chunked"]], ["request-rate", ["5", "20"]],
                 ["max-num-batched-tokens", ["512", "1024", "2048"]],
                 ["seed", [str(s) for s in range(5)]]]
    sweep_file("sweep_seeds.h5", seed_rows("h100-sxm", range(5)), seed_grid, newer=True)
    sweep_file("sweep_seeds_a100.h5", seed_rows("a100-80g", range(5), slow=1.4), seed_grid,
               newer=True)
    # 2000 points: 2 policies x 2 rates x 5 budgets x 100 seeds.
    budgets5 = (256, 512, 1024, 2048, 4096)
    sweep_file("sweep_2000.h5", seed_rows("h100-sxm", range(100), budgets=budgets5),
               [["scheduler", ["vllm-v0", "chunked"]], ["request-rate", ["5", "20"]],
                ["max-num-batched-tokens", [str(b) for b in budgets5]],
                ["seed", [str(s) for s in range(100)]]], newer=True)
    # Many lines: 2 policies x 12 rates x 2 GPUs.
    many = []
    for gpu in ("h100-sxm", "a100-80g"):
        many += seed_rows(gpu, [0], rates=tuple(float(r) for r in range(2, 26, 2)), spoil=False,
                          slow=1.0 if gpu == "h100-sxm" else 1.4)
    for r in many:
        r.pop("seed")
    sweep_file("sweep_many.h5", many,
               [["scheduler", ["vllm-v0", "chunked"]], ["request-rate", ["2:24:2"]],
                ["max-num-batched-tokens", ["512", "1024", "2048"]],
                ["gpu", ["h100-sxm", "a100-80g"]]], newer=True)
    # Every point flagged: nothing may be called best.
    bad = [dict(r, completed=10.0, rejected=90.0)
           for r in seed_rows("h100-sxm", [0], budgets=(512, 1024))]
    for r in bad:
        r.pop("seed")
    sweep_file("sweep_all_bad.h5", bad, seed_grid[:3], newer=True)

    def capacity_file(fname, rows, newer=None):
        """ROWS: (policy, budget, capacity, replicas[, note[, overloaded[, rejected share]]]).
        NEWER: (gpu, model, tp, cost, the search's --max-rejected-share) for the columns and
        attributes servesim writes now."""
        with h5py.File(os.path.join(outdir, fname), "w") as f:
            f.attrs["magic"] = np.bytes_(b"servesim-capacity")
            f.attrs["version"] = np.int64(1)
            f.attrs["slo"] = "ttft_p50_ms=2000"  # variable-length str: the reader accepts both
            cols = {
                "label": [f"{r[0]}:{r[1]}" for r in rows],
                "policy": [r[0] for r in rows],
                "note": [r[4] if len(r) > 4 else "" for r in rows],
                "max_num_batched_tokens": np.array([r[1] for r in rows], dtype=np.int64),
                "capacity_req_s": np.array([r[2] for r in rows], dtype=float),
                "replicas": np.array([r[3] for r in rows], dtype=np.int64),
                "iterations": np.full(len(rows), 12, dtype=np.int64),
                "ttft_ms_p50": np.array([1900.0 for _ in rows]),
                "itl_ms_p99": np.array([40.0 for _ in rows]),
            }
            if newer:
                gpu, model, tp, cost, max_share = newer
                f.attrs["max_rejected_share"] = np.bytes_(f"{max_share:g}".encode())
                f.attrs["count_columns"] = np.bytes_(b"")
                cols.update({
                    "gpu": [gpu] * len(rows), "model": [model] * len(rows),
                    "cost_source": [cost_source(gpu)] * len(rows),
                    "tp": np.full(len(rows), tp, dtype=np.int64),
                    "cost_per_million_output_tokens": np.full(len(rows), cost),
                    "overloaded": np.array([float(len(r) > 5 and r[5]) for r in rows]),
                    "rejected_share": np.array([r[6] if len(r) > 6 else 0.0 for r in rows]),
                    # servesim's flag: no capacity, it rejects too much at every rate.
                    "rejection_heavy": np.array([float(len(r) > 4 and r[4].startswith("rejects"))
                                                 for r in rows]),
                })
            write_group(f, "capacity", cols)
        names.append(fname)

    cap_rows = [("chunked", b, 6 + 2 * math.log2(b / 256), 3) for b in (256, 512, 1024, 2048, 4096)]
    cap_rows.append(("chunked", 8192, math.nan, 0))  # no capacity found
    cap_rows.append(("vllm-v0", 131072, 9.5, 2))
    capacity_file("capacity.h5", cap_rows)  # older layout: no gpu/model/flag columns
    capacity_file("single_capacity.h5", cap_rows[-1:])
    capacity_file("empty_capacity.h5", [])
    # Newer layout on another GPU, searched with --max-rejected-share 0.05: the highest capacity
    # is overloaded, one row rejects at any rate (flagged), one rejects 5% at its capacity
    # (within the search's bound: not flagged).
    cap_new = [("chunked", b, 4 + 1.5 * math.log2(b / 256), 4) for b in (256, 512, 1024)]
    cap_new.append(("chunked", 2048, 30.0, 1, "", True))
    cap_new.append(("vllm-v0", 512, 0.0, 0, "rejects 40 requests at any rate (too long)"))
    cap_new.append(("vllm-v0", 4096, 8.5, 3, "", False, 0.05))
    capacity_file("capacity_a100.h5", cap_new, ("a100-80g", "llama-3.1-8b", 1, 1.25, 0.05))

    # A results file whose run lacks its itl group: an error, exit 2.
    with h5py.File(os.path.join(outdir, "broken_results.h5"), "w") as f:
        f.attrs["magic"] = np.bytes_(b"servesim-results")
        f.attrs["version"] = np.int64(1)
        f.attrs["runs"] = np.bytes_(b"chunked:512")
        g = f.create_group("runs/chunked:512")
        g.attrs["summary"] = np.bytes_(b"{}")
        write_group(g, "requests", {"ttft_ms": np.ones(2), "status": np.zeros(2, np.int8)})
        write_group(g, "windows", {c: np.ones(1) for c in WINDOW_COLS})
    names.append("broken_results.h5")
    with h5py.File(os.path.join(outdir, "unknown.h5"), "w") as f:
        f.attrs["magic"] = np.bytes_(b"something-else")
    names.append("unknown.h5")
    with open(os.path.join(outdir, "notes.txt"), "w") as f:
        f.write("not an HDF5 file\n")
    names.append("notes.txt")
    return names


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: fake_files.py OUTDIR")
    for name in write_fake_examples(sys.argv[1]):
        print(os.path.join(sys.argv[1], name))
