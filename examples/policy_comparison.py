"""Which scheduler serves this workload best? vLLM V0's prefill priority, its chunked prefill at two
budgets and V1's scheduler on the same requests, over five seeds, with 95% intervals and the
paired change against the first policy: what a notebook would start from.

    PYTHONPATH=build/release/python python3 examples/policy_comparison.py
"""
import os

import servesim

QUICK = os.environ.get("SERVESIM_EXAMPLE_QUICK") == "1"
c = servesim.compare(["vllm-v0", "chunked:512", "chunked:2048", "vllm-v1"],
                     num_requests=300 if QUICK else 2000, request_rate=9, num_seeds=3 if QUICK else 5,
                     keep_steps=False)
iv = c.intervals
for metric in ("ttft_ms.p99", "tpot_ms.p50", "e2e_ms.p50"):
    print(metric)
    rows = iv[iv.metric == metric]
    for _, r in rows.iterrows():
        change = "" if r.change is None or r.change != r.change else \
            "  change %+8.1f [%+.1f, %+.1f]" % (r.change, r.change_ci95_low, r.change_ci95_high)
        print("  %-14s %8.1f  95%% [%8.1f, %8.1f]%s" % (r.label, r["mean"], r.ci95_low,
                                                       r.ci95_high, change))
