"""The TTFT-ITL trade-off of chunked prefill: a sweep of the token budget at a few loads, each
load's points joined into a frontier, saved as a PNG.

    PYTHONPATH=build/release/python python3 examples/frontier.py [OUT_DIR]
"""
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import servesim  # noqa: E402

QUICK = os.environ.get("SERVESIM_EXAMPLE_QUICK") == "1"
out = sys.argv[1] if len(sys.argv) > 1 else "."
budgets = [256, 512, 1024, 2048, 4096, 8192]
rates = [4, 8] if QUICK else [4, 6, 8, 10]
s = servesim.sweep({"request_rate": rates, "max_num_batched_tokens": budgets},
                   scheduler="chunked", num_requests=200 if QUICK else 2000)
t = s.table
fig, ax = plt.subplots(figsize=(6, 4))
for rate in rates:
    pts = t[t.request_rate == rate].sort_values("max_num_batched_tokens")
    ax.plot(pts.itl_ms_p99, pts.ttft_ms_p99, marker="o", label="%g req/s" % rate)
    for _, p in pts.iterrows():
        ax.annotate(str(int(p.max_num_batched_tokens)), (p.itl_ms_p99, p.ttft_ms_p99),
                    fontsize=7)
ax.set_xlabel("ITL p99 (ms)")
ax.set_ylabel("TTFT p99 (ms)")
ax.set_yscale("log")
ax.set_title("chunked prefill: token budget against latency")
ax.legend()
path = os.path.join(out, "frontier.png")
fig.savefig(path, dpi=100, bbox_inches="tight")
print("wrote", path, "from", len(t), "points")
