"""What does a workload cost? The highest rate an H100 and an A100 sustain under a latency SLO,
the replicas a target rate needs, and the cost per million output tokens at a price per
GPU-hour.

    PYTHONPATH=build/release/python python3 examples/capacity_cost.py
"""
import os

import servesim

QUICK = os.environ.get("SERVESIM_EXAMPLE_QUICK") == "1"
cap = servesim.capacity({"ttft_p99_ms": 2000, "itl_p99_ms": 200},
                        options={"gpu_hour_cost": "h100-sxm=3.2,a100-80g=1.8",
                                 "target_rate": 40},
                        gpu=["h100-sxm", "a100-80g"], scheduler="vllm-v1",
                        num_requests=400 if QUICK else 2000)
t = cap.table
cols = [c for c in ("gpu", "capacity_req_s", "fleet_replicas", "cost_per_million_output_tokens",
                    "fleet_cost_per_hour") if c in t.columns]
print(t[cols].to_string(index=False))
