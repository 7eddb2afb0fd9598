"""The examples a notebook user starts from (examples/) run to the end on small workloads
(SERVESIM_EXAMPLE_QUICK=1) and produce what they say: intervals per policy, a frontier PNG, a
capacity table with costs."""
import os
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def run_example(name, *args, cwd):
    env = dict(os.environ, SERVESIM_EXAMPLE_QUICK="1", MPLBACKEND="Agg")
    p = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *map(str, args)], cwd=cwd,
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_policy_comparison_prints_intervals(tmp_path):
    out = run_example("policy_comparison.py", cwd=tmp_path)
    assert "95% [" in out
    for label in ("vllm-v0", "chunked", "vllm-v1"):
        assert label in out


def test_frontier_writes_a_png(tmp_path):
    out = run_example("frontier.py", tmp_path, cwd=tmp_path)
    png = tmp_path / "frontier.png"
    assert "wrote" in out and png.exists()
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_capacity_cost_prices_the_workload(tmp_path):
    out = run_example("capacity_cost.py", cwd=tmp_path)
    assert "capacity_req_s" in out
    assert "cost" in out


@pytest.mark.parametrize("name", ["policy_comparison.py", "frontier.py", "capacity_cost.py"])
def test_every_example_says_how_to_run_it(name):
    with open(os.path.join(EXAMPLES, name)) as f:
        assert "PYTHONPATH=" in f.read(1000)
