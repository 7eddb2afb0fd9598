#!/usr/bin/python3
"""Randomized differential runs of servesim's vllm-v1 scheduler against vLLM's real V1 scheduler.

    scripts/oracle-v1-random.py [-n 50] [--seed 1] [--out DIR] [--tests BIN] [--oracle DIR]
                                [--tied-arrivals] [--spec] [--lora] [--pp]
                                [--sliding-window] [--hybrid] [--shrink]

Generates N small random workloads and configs (small KV caches that force preemption, shared
prefixes and prefix blocks for the prefix cache, sometimes a long_prefill_token_threshold, the
priority policy, scheduler_reserve_full_isl off, arrival steps or arrival times spread out, half
under async scheduling), runs
the oracle (../shared/vllm-oracle/run_v1.py) on each into DIR/case_NNN/steps.jsonl, then runs the
hidden Catch2 test "[.oracle-random]" (tests/test_oracle_v1.cpp) on DIR, which replays each case
through servesim's Scheduler and compares every step. Prints one line per case and a tally; exits
1 if any case differs.

Every request fits what servesim accepts (prompt + max_tokens <= max_model_len, its whole
lifetime fits the KV cache), so servesim rejects nothing vLLM would run. Requests arriving in the
same step get distinct arrival times unless --tied-arrivals, which exercises the priority
policy's ties (vLLM's waiting heap then orders by request id, its preemption victim is the first
in `running`).

--spec adds speculative decoding to every case (vLLM's --speculative-config): method eagle or
ngram, 1 to 5 draft tokens, non-increasing acceptance rates (0 and 1 among them), a random seed
for servesim's acceptance draws, sometimes a max_model_len the longest request reaches; those
cases run through scripts/oracle-v1-features.py, the project's driver that feeds vLLM's scheduler
the drafts and the verifications' tokens (run_v1.py emulates no drafter).

--lora adds LoRA adapters to every case (vLLM's --enable-lora --max-loras): a random max_loras
(1 to 4) and each request's adapter id in 0..6 (0: the base model), in some cases most requests
on one or two adapters, so that the step's adapter limit skips requests into vLLM's
skipped_waiting queue and the adapter, an extra key of every block hash, splits the prefix
cache's hits; a third of the cases tie same-step arrivals and a third add speculative decoding.
Those cases also run through scripts/oracle-v1-features.py (run_v1.py passes no LoRA request).
A case on which vLLM fails its own max_loras assertion (vllm_lora_assertion) is drawn again.

--sliding-window gives every case a hybrid model's KV cache: a sliding-window group of 2-40
tokens beside the full-attention one, sharing the block pool (vLLM's HybridKVCacheCoordinator);
the prefix cache on in two cases of three, as in the plain cases.
--hybrid gives every case a hybrid Mamba / Gated-DeltaNet model's KV cache (Qwen3-Next) as vLLM
runs one by default (mamba_cache_mode "none"): 1-3 Mamba groups before the full-attention one,
each holding one block of max_model_len tokens a request from its first allocation until it is
freed; the prefix cache off, as vLLM runs such models.
--pp runs every case as pipeline parallelism does: vLLM's synchronous Scheduler under
EngineCore's batch queue of 2 to 4 batches (max_concurrent_batches = pipeline_parallel_size), the
GPU always busy, through scripts/oracle-v1-features.py: prefill chunks of one request in
consecutive batches, decodes skipped while their token is in flight, preemptions of requests in
flight.

--shrink greedily reduces each mismatching case (drop requests, shorten prompts and outputs) while
the first difference stays on the same fields, and writes the result to DIR/case_NNN.min.
Python 3 standard library only.
"""
import argparse
import contextlib
import gc
import json
import os
import random
import re
import runpy
import shutil
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# The shared data's one setting, as the C++ tests read it (tests/shared_data.hpp): $SERVESIM_SHARED,
# else the folder beside the checkout.
DEFAULT_ORACLE = os.path.join(
    os.environ.get("SERVESIM_SHARED") or os.path.join(os.path.dirname(ROOT), "shared"),
    "vllm-oracle")
DEFAULT_TESTS = os.path.join(ROOT, "build", "oracle", "servesim_tests")
PYTHON = "/usr/bin/python3"


def cdiv(a, b):
    return -(-a // b)


def random_case(rng, tied_arrivals):
    bs = rng.choice([4, 8, 16])
    cfg = {
        "scheduler": "v1",
        "block_size": bs,
        "max_num_batched_tokens": rng.choice([8, 16, 24, 32, 48, 64, 128]),
        "max_num_seqs": rng.randint(1, 8),
        "max_model_len": 512,
        "enable_prefix_caching": rng.random() < 0.7,
        "max_steps": 600,
    }
    if rng.random() < 0.3:
        cfg["long_prefill_token_threshold"] = rng.randint(1, 40)
    priority = rng.random() < 0.25
    if priority:
        cfg["policy"] = "priority"
    if rng.random() < 0.3:
        cfg["scheduler_reserve_full_isl"] = False
    use_times = rng.random() < 0.2
    if use_times:
        cfg["step_duration_s"] = 0.01

    # Prefix-block chains (a tree of shared full blocks) and shared prefixes of any length.
    chains = [[1, 2, 3, 4], [1, 2, 5], [6, 7]]
    n = rng.randint(2, 10)
    spread = rng.choice([0, 3, 10, 30])
    steps = sorted(rng.randint(0, spread) for _ in range(n))
    reqs = []
    for i, step in enumerate(steps):
        r = {"id": "r%02d" % i}
        shared = 0
        if rng.random() < 0.35:
            length = rng.randint(1, 48)
            r["shared_prefix"] = {"id": rng.randint(1, 2), "len": length}
            shared += length
        if rng.random() < 0.45:
            chain = rng.choice(chains)
            blocks = chain[: rng.randint(1, len(chain))]
            r["prefix_blocks"] = blocks
            shared += len(blocks) * bs
        r["prompt_len"] = shared + rng.choice([0, 0, 1, rng.randint(1, 20), rng.randint(1, 90)])
        r["prompt_len"] = max(r["prompt_len"], 1)
        r["max_tokens"] = rng.choice([1, 2, rng.randint(1, 10), rng.randint(1, 40)])
        if use_times:
            r["arrival_time"] = round(step * 0.01 + rng.random() * 0.0099, 6)
        else:
            r["arrival_step"] = step
            if not tied_arrivals:
                r["arrival_time"] = step + 0.001 * (i + 1)
        if priority:
            r["priority"] = rng.randint(0, 2)
        reqs.append(r)
    if use_times:  # keep listing order == arrival order
        reqs.sort(key=lambda r: r["arrival_time"])
        for i, r in enumerate(reqs):
            r["id"] = "r%02d" % i

    # A cache that holds the largest request's lifetime and a little more: preemptions.
    need = max(cdiv(r["prompt_len"] + r["max_tokens"] - 1, bs) for r in reqs)
    cfg["num_gpu_blocks"] = 1 + need + rng.choice([0, 1, 2, 4, 8, 30])
    for r in reqs:
        assert r["prompt_len"] + r["max_tokens"] <= cfg["max_model_len"]
    # Half the cases run vLLM's AsyncScheduler, under the engine's batch queue of 2 (drawn last,
    # so the other draws are those of the cases before it had async).
    if rng.random() < 0.5:
        cfg["async_scheduling"] = True
    return {"requests": reqs}, cfg


def add_sliding_window(rng, workload, cfg):
    """A hybrid model's KV cache for the case (WORKLOAD, CFG) of random_case: a sliding-window
    group of 2-40 tokens beside the full-attention one, the cache grown by the most window blocks
    a request holds (SlidingWindowSpec.max_admission_blocks_per_request), so that servesim still
    rejects nothing vLLM would run. The prefix cache as random_case drew it."""
    bs, window = cfg["block_size"], rng.choice([2, 5, 16, rng.randint(2, 40)])
    cap = cdiv(min(window - 1 + cfg["max_num_batched_tokens"], cfg["max_model_len"]), bs) + 1
    need = max(cdiv(r["prompt_len"] + r["max_tokens"] - 1, bs) for r in workload["requests"])
    cfg["num_gpu_blocks"] += min(need, cap)
    cfg["sliding_window"] = window


def add_hybrid(rng, cfg):
    """A hybrid Mamba / Gated-DeltaNet model's KV cache for the case CFG of random_case, in vLLM's
    default mamba_cache_mode "none": 1-3 Mamba groups (oracle-v1-features.py's "mamba_groups"),
    each holding one block a request (1 + k under speculative decoding: MambaSpec.
    num_speculative_blocks), the cache grown by those blocks, so that servesim still rejects
    nothing vLLM would run. The prefix cache off: without mode "align" vLLM has no Mamba state
    to hit (MambaModelConfig.verify_and_update_config)."""
    n = rng.choice([1, 1, 2, 3])  # one group most often; several as Qwen3-Next's layer groups
    spec = cfg.get("speculative")
    cfg["num_gpu_blocks"] += n * (1 + (spec["num_speculative_tokens"] if spec else 0))
    cfg["mamba_groups"] = n
    cfg["enable_prefix_caching"] = False


def add_speculative(rng, workload, cfg):
    """Speculative decoding for the case (WORKLOAD, CFG) of random_case: a random drafter, rates
    and seed; the KV cache grown by the blocks the drafts and the drafter's lookahead slots add
    to each request's lifetime, so that servesim still rejects nothing vLLM would run."""
    reqs, bs = workload["requests"], cfg["block_size"]
    k = rng.randint(1, 5)
    method = rng.choice(["eagle", "ngram"])
    shape = rng.random()
    if shape < 0.1:
        rates = [1.0] * k
    elif shape < 0.2:
        rates = [0.0] * k
    else:
        rates = sorted((round(rng.random(), 2) for _ in range(k)), reverse=True)
        if rng.random() < 0.3:  # certain first positions
            for i in range(rng.randint(1, k)):
                rates[i] = 1.0
        if rng.random() < 0.3:  # impossible last positions
            for i in range(rng.randint(0, k - 1), k):
                rates[i] = 0.0
    cfg["speculative"] = {"method": method, "num_speculative_tokens": k,
                          "acceptance_rates": rates, "seed": rng.randint(0, 2**32 - 1)}
    if rng.random() < 0.3:  # the longest request reaches max_model_len: drafts cut at its end
        cfg["max_model_len"] = max(r["prompt_len"] + r["max_tokens"] for r in reqs) \
            + rng.choice([0, 0, 1, 3])
    lookahead = 0 if method == "ngram" else k
    mml = cfg["max_model_len"]
    need = max(cdiv(r["prompt_len"] + r["max_tokens"] - 1, bs) for r in reqs)
    need_spec = max(cdiv(min(r["prompt_len"] + r["max_tokens"] - 1 + k + lookahead, mml), bs)
                    for r in reqs)
    cfg["num_gpu_blocks"] += need_spec - need


def add_lora(rng, workload, cfg):
    """LoRA adapters for the case (WORKLOAD, CFG) of random_case: max_loras and each request's
    adapter ("lora": 0 is the base model, vLLM's lora_request None)."""
    cfg["max_loras"] = rng.choice([1, 1, 2, 2, 3, 4])  # the limit binds more often at 1 or 2
    shape = rng.random()
    if shape < 0.4:  # most requests on one or two adapters, a few on others or the base model
        hot = rng.sample(range(1, 7), rng.randint(1, 2))
        pick = lambda: rng.choice(hot) if rng.random() < 0.8 else rng.randint(0, 6)
    elif shape < 0.6:  # many adapters, no base model: the limit binds most
        pick = lambda: rng.randint(1, 6)
    else:
        pick = lambda: rng.randint(0, 6)
    for r in workload["requests"]:
        r["lora"] = pick()


def write_case(d, workload, cfg):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "workload.json"), "w") as f:
        json.dump(workload, f, indent=1)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)


_FEATURES = {}  # scripts/oracle-v1-features.py and its Oracle, once loaded


def run_features(oracle, d):
    """scripts/oracle-v1-features.py on case D, in this process (vLLM's modules imported once)."""
    if "driver" not in _FEATURES:
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            "oracle_v1_features", os.path.join(HERE, "oracle-v1-features.py"))
        driver = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(driver)
        _FEATURES["driver"], _FEATURES["oracle"] = driver, driver.Oracle(oracle)
    _FEATURES["driver"].run(_FEATURES["oracle"], os.path.join(d, "workload.json"),
                            os.path.join(d, "config.json"), os.path.join(d, "steps.jsonl"))


def run_oracle(oracle, d):
    """run_v1.py on case D, in this process: vLLM's modules are imported once for every case
    (ten times faster than a process per case; the steps written are the same bytes). A case
    with features run_v1.py does not emulate (speculative decoding) runs through
    scripts/oracle-v1-features.py instead (speculative decoding, LoRA, a batch queue, a
    hybrid model's KV cache groups)."""
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    if ("speculative" in cfg or "max_loras" in cfg or "batch_queue_size" in cfg
            or "sliding_window" in cfg or "mamba_groups" in cfg):
        return run_features(oracle, d)
    script = os.path.join(oracle, "run_v1.py")
    argv, path = sys.argv, list(sys.path)
    sys.argv = [script, os.path.join(d, "workload.json"), os.path.join(d, "config.json"),
                "-o", os.path.join(d, "steps.jsonl")]
    try:
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        if e.code not in (0, None):
            raise RuntimeError("the oracle failed on %s (exit %s)" % (d, e.code))
    finally:
        sys.argv, sys.path[:] = argv, path
        gc.collect()  # closes the steps file run_v1.py leaves open


def vllm_lora_assertion(e):
    """Whether AssertionError E is vLLM's own `assert len(scheduled_loras) <= max_loras` (Scheduler.
    schedule at the oracle's commit), which vLLM itself can fail: a running request that schedules
    nothing in one step (async scheduling, drafts up to max_model_len - 1 computed: "num_new_tokens
    == 0 ... continue") does not count its adapter, a waiting request with another adapter is
    admitted, and when its rejected drafts are rolled back both run in the next step."""
    last = traceback.extract_tb(e.__traceback__)[-1]
    return last.filename.endswith(os.path.join("sched", "scheduler.py")) and \
        "max_loras" in (last.line or "")


def run_tests(tests, d):
    """{case name: (status, detail)} from the hidden Catch2 test on folder D."""
    env = dict(os.environ, SERVESIM_ORACLE_DIR=d)
    p = subprocess.run([tests, "[.oracle-random]"], env=env, capture_output=True, text=True)
    results, name = {}, None
    for line in p.stdout.splitlines():
        m = re.match(r"oracle-random (\S+) (match|MISMATCH|skip)\s?(.*)", line)
        if m:
            name = m.group(1)
            results[name] = (m.group(2), m.group(3))
        elif line.startswith("oracle-random total"):
            name = None
        elif name is not None and results[name][0] == "MISMATCH":
            results[name] = ("MISMATCH", results[name][1] + "\n" + line)
    if not results:
        sys.exit("no results from %s:\n%s%s" % (tests, p.stdout, p.stderr))
    return results


def signature(detail):
    """The fields of the first difference (its kind)."""
    keys = re.findall(r"^  (\w+): vLLM", detail, re.M)
    return tuple(keys) if keys else (detail.split(";")[0],)


def check_one(oracle, tests, workload, cfg):
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "case")
        write_case(d, workload, cfg)
        try:
            run_oracle(oracle, d)
        except AssertionError as e:
            if not vllm_lora_assertion(e):
                raise
            return "vllm-assert", "vLLM's max_loras assertion"
        status, detail = run_tests(tests, d)["case"]
        return status, detail


def shrink(oracle, tests, workload, cfg, sig):
    def same(w):
        st, det = check_one(oracle, tests, w, cfg)
        return st == "MISMATCH" and signature(det) == sig

    w = json.loads(json.dumps(workload))
    changed = True
    while changed:
        changed = False
        for i in range(len(w["requests"]) - 1, -1, -1):
            if len(w["requests"]) == 1:
                break
            cand = {"requests": w["requests"][:i] + w["requests"][i + 1:]}
            if same(cand):
                w, changed = cand, True
        for i in range(len(w["requests"])):
            for key in ("max_tokens", "prompt_len"):
                r = w["requests"][i]
                for smaller in sorted({1, r[key] // 2, r[key] - 1}):
                    if smaller >= r[key] or smaller < 1:
                        continue
                    cand = json.loads(json.dumps(w))
                    cand["requests"][i][key] = smaller
                    try:
                        if same(cand):
                            w, changed = cand, True
                            break
                    except (subprocess.CalledProcessError, ValueError):
                        pass  # e.g. shared part longer than the prompt
    return w


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=50, help="number of random cases")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", help="folder for the cases (default: a new temporary folder)")
    ap.add_argument("--tests", default=DEFAULT_TESTS, help="the servesim_tests binary")
    ap.add_argument("--oracle", default=DEFAULT_ORACLE, help="the vllm-oracle folder")
    ap.add_argument("--tied-arrivals", action="store_true",
                    help="same-step requests share one arrival_time")
    ap.add_argument("--spec", action="store_true",
                    help="speculative decoding in every case (scripts/oracle-v1-features.py)")
    ap.add_argument("--lora", action="store_true",
                    help="LoRA adapters and max_loras in every case (oracle-v1-features.py)")
    ap.add_argument("--pp", action="store_true",
                    help="a batch queue of 2-4 with the sync scheduler (pipeline parallelism)")
    ap.add_argument("--sliding-window", action="store_true",
                    help="a sliding-window KV group of 2-40 tokens beside the full one (gpt-oss)")
    ap.add_argument("--hybrid", action="store_true",
                    help="1-3 Mamba KV groups (mode none, no prefix cache) before the full one")
    ap.add_argument("--shrink", action="store_true", help="reduce each mismatching case")
    args = ap.parse_args()
    if args.hybrid and args.sliding_window:
        ap.error("--hybrid and --sliding-window: no such model (oracle-v1-features.py)")

    if not os.path.exists(os.path.join(args.oracle, "run_v1.py")):
        # As a [shared] test: CI must run beside ../shared; elsewhere ctest reports a skip (77).
        if os.environ.get("CI") == "true":
            print("CI=true but %s is absent: CI must run beside ../shared" % args.oracle)
            return 1
        print("SKIPPED: %s is absent (the oracle is in ../shared)" % args.oracle)
        return 77
    out = args.out or tempfile.mkdtemp(prefix="oracle-v1-random-")
    os.makedirs(out, exist_ok=True)
    rng = random.Random(args.seed)
    redrawn = 0
    for k in range(args.n):
        while True:
            tied = args.tied_arrivals or (args.lora and rng.random() < 0.3)
            workload, cfg = random_case(rng, tied)
            if args.spec or (args.lora and rng.random() < 0.3):
                add_speculative(rng, workload, cfg)
            if args.lora:
                add_lora(rng, workload, cfg)
            if args.pp:
                cfg["async_scheduling"] = False
                cfg["batch_queue_size"] = rng.choice([2, 3, 4])
            if args.sliding_window:
                add_sliding_window(rng, workload, cfg)
            if args.hybrid:  # drawn last, and only here: runs without --hybrid draw as before
                add_hybrid(rng, cfg)
            d = os.path.join(out, "case_%03d" % k)
            if os.path.exists(d):
                shutil.rmtree(d)
            write_case(d, workload, cfg)
            try:
                run_oracle(args.oracle, d)
                break
            except AssertionError as e:  # vLLM cannot run this case: draw another
                if not vllm_lora_assertion(e):
                    raise
                redrawn += 1
                print("%s: vLLM fails its own max_loras assertion; drawn again" % d)

    results = run_tests(args.tests, out)
    if len(results) != args.n:  # the replay itself failed: never a pass
        print("servesim's replay reported %d of the %d cases" % (len(results), args.n))
        return 1
    kinds = {}
    for name in sorted(results):
        status, detail = results[name]
        print("%s %s %s" % (name, status, detail.split("\n")[0] if status != "MISMATCH" else ""))
        if status == "MISMATCH":
            print("  " + detail.replace("\n", "\n  "))
            kinds.setdefault(signature(detail), []).append(name)
    n_match = sum(1 for s, _ in results.values() if s == "match")
    print("\n%d cases in %s: %d match, %d mismatch, %d skipped%s"
          % (len(results), out, n_match, sum(len(v) for v in kinds.values()),
             sum(1 for s, _ in results.values() if s == "skip"),
             " (%d drawn again: vLLM's max_loras assertion)" % redrawn if redrawn else ""))
    for sig, names in kinds.items():
        print("mismatch on %s: %s" % (", ".join(sig), " ".join(names)))
        if args.shrink:
            d = os.path.join(out, names[0])
            with open(os.path.join(d, "workload.json")) as f:
                workload = json.load(f)
            with open(os.path.join(d, "config.json")) as f:
                cfg = json.load(f)
            small = shrink(args.oracle, args.tests, workload, cfg, sig)
            m = d + ".min"
            write_case(m, small, cfg)
            run_oracle(args.oracle, m)
            print("  shrunk to %d requests: %s" % (len(small["requests"]), m))
    return 1 if kinds else 0


if __name__ == "__main__":
    sys.exit(main())
