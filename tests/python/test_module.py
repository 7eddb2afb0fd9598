"""The servesim Python module (python/servesim): its results equal the command line's bytes, its
frames have proper dtypes, bad input raises servesim.Error naming the field, every HDF5 file
servesim writes reads back, and policies written in Python plug into run and compare.

Run by ctest (label python) with SERVESIM set to the command-line binary of the same build and
PYTHONPATH to the build's python/ folder."""
import json
import os
import subprocess

import numpy as np
import pandas as pd
import pytest

import servesim

SERVESIM = os.environ.get("SERVESIM", "servesim")
SMALL = dict(num_requests=300, request_rate=12, seed=3)


def run_binary(*args):
    """Runs the command-line binary; returns the finished process. A sanitized build's ctest
    preloads the sanitizer's shared runtime for Python; the binary links its own, so it is not
    passed on."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    return subprocess.run([SERVESIM, *map(str, args)], capture_output=True, text=True, env=env)


def cli(*args):
    """Runs the command-line binary; returns what it prints (it must exit 0)."""
    p = run_binary(*args)
    assert p.returncode == 0, p.stderr
    return p.stdout


def read_text(path):
    with open(path) as f:
        return f.read()


def study(json_text):
    """A --json file's results, without the "servesim" object naming the command that wrote
    them (the module's own argument list, the command line's as typed)."""
    j = json.loads(json_text)
    assert j.pop("servesim")["command"].startswith("servesim ")
    return j


def test_run_equals_the_command_lines_bytes(tmp_path):
    r = servesim.run(scheduler="vllm-v1", **SMALL)
    js = tmp_path / "cli.json"
    text = cli("run", "--scheduler", "vllm-v1", "--num-requests", 300, "--request-rate", 12,
               "--seed", 3, "--json", js)
    assert study(r.json_text) == study(read_text(js))
    assert r.text == text
    assert r.summary == study(read_text(js))
    assert r.config["max_num_batched_tokens"] == 8192
    # The per-request table holds the requests CSV's numbers.
    csv = tmp_path / "cli.csv"
    cli("run", "--scheduler", "vllm-v1", "--num-requests", 300, "--request-rate", 12, "--seed", 3,
        "--requests-csv", csv)
    want = pd.read_csv(csv)
    assert list(r.requests.id) == list(want.id)
    np.testing.assert_allclose(r.requests.ttft_ms, want.ttft_ms, rtol=0, atol=5e-4)  # 3 decimals
    assert (r.requests.status == "completed").all()


def test_compare_and_sweep_equal_the_command_lines_bytes(tmp_path):
    c = servesim.compare(["chunked:512", "vllm-v1"], **SMALL)
    js = tmp_path / "cmp.json"
    text = cli("compare", "--scheduler", "chunked:512,vllm-v1", "--num-requests", 300,
               "--request-rate", 12, "--seed", 3, "--json", js)
    assert study(c.json_text) == study(read_text(js))
    assert c.text == text
    assert list(c.runs) == ["chunked:512", "vllm-v1:8192"]
    assert c.table.loc["chunked:512", "requests_completed"] == 300
    s = servesim.sweep({"max_num_batched_tokens": [512, 2048], "request_rate": [4.0, 8.5]},
                       jobs=2, num_requests=200, seed=1)
    csv = tmp_path / "sweep.csv"
    cli("sweep", "--max-num-batched-tokens", "512,2048", "--request-rate", "4.0,8.5",
        "--num-requests", 200, "--seed", 1, "--jobs", 2, "--out", tmp_path / "s.h5", "--csv", csv)
    assert s.csv_text == read_text(csv)
    assert len(s.table) == 4


def assert_results_equal(got, want):
    """Two Results (the module's, handed back in memory; the same command's --out file, read
    back) hold the same runs, attributes and tables, dtypes and column order included."""
    assert list(got) == list(want)
    assert got.workload == want.workload and got.period_s == want.period_s
    assert got.alarm.keys() == want.alarm.keys()
    for k, v in want.alarm.items():
        assert got.alarm[k] == v or (v != v and got.alarm[k] != got.alarm[k]), k
    for name, w in want.items():
        g = got[name]
        assert g.label == w.label and g.summary == w.summary and g.flags == w.flags
        assert g.baseline_otps == w.baseline_otps or (w.baseline_otps != w.baseline_otps and
                                                      g.baseline_otps != g.baseline_otps)
        for table in ("requests", "steps", "windows", "itl"):
            pd.testing.assert_frame_equal(getattr(g, table), getattr(w, table),
                                          check_index_type=False, obj=name + " " + table)


@pytest.mark.parametrize("command, flags", [
    ("run", ["--scheduler=chunked:512"]),
    ("run", ["--no-steps", "--period-s=5"]),
    ("run", ["--kv-offloading-size=8", "--dataset-name=prefix_repetition",
             "--num-gpu-blocks=1500"]),
    ("run", ["--num-seeds=2"]),
    ("compare", ["--scheduler=vllm-v0,vllm-v1", "--max-model-len=2048",
                 "--input-len=uniform:100:2500"]),
    ("compare", ["--num-seeds=2", "--scheduler=chunked:512,vllm-v1"]),
])
def test_results_in_memory_equal_the_results_file(tmp_path, command, flags):
    """run and compare hand their results to the module in memory: every run, attribute and
    table equal to what the same command's --out file reads back as."""
    args = [command, "--num-requests=100", "--request-rate=12", "--seed=3", *flags]
    out = tmp_path / "r.h5"
    js = tmp_path / "r.json"
    want_text = servesim.command(*args, "--out=%s" % out, "--json=%s" % js)
    text, json_text, got = servesim._captured(args, {})
    assert_results_equal(got, servesim.read(out))
    assert text == want_text and json_text == read_text(js)


def test_frames_have_proper_dtypes():
    r = servesim.run(scheduler="vllm-v1", max_model_len=2048,
                     input_len="uniform:100:2500", output_len="fixed:20", **SMALL)
    q = r.requests
    for c in ("id", "input_tokens", "output_tokens", "preemptions", "cached_tokens"):
        assert q[c].dtype == np.int64, c
    for c in ("arrival_s", "ttft_ms", "e2e_ms", "tpot_ms", "queue_ms"):
        assert q[c].dtype == np.float64, c
    assert isinstance(q.status.dtype, pd.CategoricalDtype)
    assert isinstance(q.reason.dtype, pd.CategoricalDtype)
    rejected = q[q.status == "rejected"]
    assert len(rejected) > 0 and set(rejected.reason) == {"context_length"}
    assert r.summary["requests"]["rejected"] == len(rejected)
    assert r.steps.batch_size.dtype == np.int64 and len(r.steps) == r.summary["steps"]
    assert "otps" in r.windows.columns
    s = servesim.sweep({"max_num_seqs": [8, 64]}, num_requests=100)
    assert s.table["completed"].dtype == "Int64"
    assert s.table["max-num-seqs"].tolist() == ["8", "64"]


def test_errors_are_exceptions_naming_the_field(tmp_path):
    with pytest.raises(servesim.Error) as e:
        servesim.run(max_num_seqs=-1)
    assert e.value.field == "max-num-seqs" and "1048576" in e.value.reason
    # The setting's path, whatever its spelling: what code acting on an error tests (issue 45).
    assert e.value.field_path == "scheduler.max_num_seqs"
    with pytest.raises(servesim.Error) as e:
        servesim.run(max_numseqs=3)
    assert e.value.field == "max-numseqs"
    bad = tmp_path / "bad.csv"
    bad.write_text("t,in,out\n0,10,5\n1,x,5\n")
    with pytest.raises(servesim.Error) as e:
        servesim.run(trace=bad, trace_format="csv", col_arrival="t", col_input="in",
                     col_output="out")
    assert (e.value.file, e.value.line, e.value.field) == (str(bad), 3, "in")
    with pytest.raises(servesim.Error) as e:
        servesim.run(speculative_config='{"method": "eagle", "num_speculative_tokens": 0}',
                     spec_acceptance_rate=0.5, scheduler="vllm-v1")
    assert e.value.field == "speculative-config.num_speculative_tokens"
    assert e.value.field_path == "speculative.config.num_speculative_tokens"
    with pytest.raises(servesim.Error):
        servesim.read(bad)


def test_workloads_from_frames_and_traces(tmp_path):
    df = pd.DataFrame({"arrival_s": [0.0, 0.1, 0.25, 1.0 / 3], "input_tokens": [100, 2000, 50, 7],
                       "output_tokens": [10, 5, 200, 1]})
    r = servesim.run(df, scheduler="vllm-v1")
    assert r.summary["requests"]["completed"] == 4
    np.testing.assert_allclose(r.requests.arrival_s, df.arrival_s, rtol=0, atol=0)
    t = servesim.Trace.from_frame(df)
    path = tmp_path / "t.h5"
    t.write(path)
    back = servesim.read(path)
    assert isinstance(back, servesim.Trace) and len(back) == 4
    assert back.requests.input_tokens.tolist() == [100, 2000, 50, 7]
    again = servesim.run(back, scheduler="vllm-v1")
    assert again.summary["ttft_ms"] == r.summary["ttft_ms"]
    assert again.requests.drop(columns=[]).equals(r.requests)
    # A trace read with import options (a window), and adapters by name.
    csv = tmp_path / "lora.csv"
    csv.write_text("t,in,out,a\n0,10,5,sql\n1,20,5,\n2,30,5,chat\n3,40,5,sql\n")
    w = servesim.Trace.read(csv, trace_format="csv", col_arrival="t", col_input="in",
                            col_output="out", col_lora="a", window="0:2.5")
    assert w.requests.lora.tolist() == [1, 0, 2] and w.info["lora_names"] == ["sql", "chat"]


def test_fractional_request_rates_reach_a_trace(tmp_path):
    """Issue 42: --request-rate 2.5 on a trace ran at 2 req/s, and 0.5 at the trace's own pace."""
    df = pd.DataFrame({"arrival_s": [0.25 * i for i in range(80)],
                       "input_tokens": [40 + (i * 37) % 200 for i in range(80)],
                       "output_tokens": [4 + (i * 13) % 30 for i in range(80)]})
    for rate in (0.5, 1.5, 2.5):
        r = servesim.run(df, scheduler="vllm-v1", request_rate=rate, keep_steps=False)
        assert r.summary["overloaded"]["arrival_rate_req_s"] == pytest.approx(rate, rel=1e-9)
    t = servesim.sweep({"request_rate": [2.5, 3.9]}, workload=df, scheduler="vllm-v1")
    assert t.table.arrival_rate_req_s.tolist() == pytest.approx([2.5, 3.9], rel=1e-6)
    # A length-only trace: arrivals drawn at the rate, the same draws scaled.
    lengths = tmp_path / "lengths.csv"
    df[["input_tokens", "output_tokens"]].to_csv(lengths, index=False)
    flags = dict(trace_format="csv", col_input="input_tokens", col_output="output_tokens")
    slow = servesim.run(lengths, request_rate=0.5, keep_steps=False, **flags)
    fast = servesim.run(lengths, request_rate=1.5, keep_steps=False, **flags)
    np.testing.assert_allclose(slow.requests.arrival_s, 3 * fast.requests.arrival_s, rtol=1e-9,
                               atol=1e-9)


def test_keyword_values_are_recorded_as_used():
    """Issue 42: a keyword argument's value reaches the run unchanged and is recorded, as the
    command line's (tests/test_value_given.cpp holds every flag there)."""
    r = servesim.run(num_requests=12, request_rate=7.25, burstiness=0.75, seed=11,
                     max_num_seqs=96, max_num_batched_tokens=3072, gpu_memory_utilization=0.85,
                     frontend_latency_ms=12.5, long_prefill_token_threshold=333,
                     speculative_config='{"method": "eagle3", "num_speculative_tokens": 3}',
                     spec_acceptance_rate=[0.8, 0.55, 0.3], goodput="ttft:250.5 tpot:40.5",
                     max_concurrency=3, keep_steps=False)
    c = r.config
    assert c["max_num_seqs"] == 96 and c["max_num_batched_tokens"] == 3072
    assert c["gpu_memory_utilization"] == 0.85
    assert c["cost_model"]["frontend_latency_s"] == pytest.approx(0.0125, rel=1e-12)
    assert c["long_prefill_token_threshold"] == 333
    assert c["speculative"]["acceptance_rates"] == [0.8, 0.55, 0.3]
    assert c["goodput_ms"] == {"ttft": 250.5, "tpot": 40.5, "e2el": None}
    assert c["max_concurrency"] == 3
    w = c["workload"]
    assert (w["num_requests"], w["request_rate"], w["burstiness"], w["seed"]) == (12, 7.25, 0.75, 11)
    f = servesim.run(num_requests=12, num_replicas=3, router="least-kv", router_signal_delay_s=0.25,
                     keep_steps=False).config["fleet"]
    assert (f["num_replicas"], f["router"], f["router_signal_delay_s"]) == (3, "least-kv", 0.25)


def test_read_reads_every_file_servesim_writes(tmp_path):
    out = tmp_path / "r.h5"
    cli("compare", "--scheduler", "chunked:512,vllm-v1", "--num-requests", 100, "--out", out)
    runs = servesim.read(out)
    assert isinstance(runs, servesim.Results) and list(runs) == ["chunked:512", "vllm-v1:8192"]
    assert runs["chunked:512"].requests.status.dtype == "category"
    cap = tmp_path / "c.h5"
    cli("capacity", "--slo", "ttft_p99_ms=2000", "--num-requests", 200, "--out", cap)
    t = servesim.read(cap)
    assert t.kind == "capacity" and t.table["capacity_req_s"].iloc[0] > 0
    sw = tmp_path / "s.h5"
    cli("sweep", "--max-num-seqs", "8,16", "--num-requests", 50, "--out", sw)
    s = servesim.read(sw)
    assert s.kind == "sweep" and s.attrs["replicate_columns"] == ""  # written " ": none
    # A layout this reader does not know, and a run without its summary, are errors naming them.
    import h5py
    with h5py.File(sw, "r+") as f:
        f.attrs["version"] = 2
    with pytest.raises(servesim.Error) as e:
        servesim.read(sw)
    assert (e.value.file, e.value.field) == (str(sw), "version")
    with h5py.File(out, "r+") as f:
        del f["runs/vllm-v1:8192"].attrs["summary"]
    with pytest.raises(servesim.Error) as e:
        servesim.read(out)
    assert e.value.field == "summary" and "vllm-v1:8192" in str(e.value)


def test_files_carry_the_derived_figures_plots_draw(tmp_path):
    # A sweep over seeds: one interval row per configuration, servesim's mean and Student t
    # half-width over the seeds' points; flags and the parameters' source on every point.
    sw = servesim.sweep({"seed": [1, 2, 3], "max_num_batched_tokens": [512, 2048]},
                        scheduler="chunked", num_requests=120)
    pts, iv = sw.table, sw.intervals
    assert len(iv) == 2 and iv.replicates.tolist() == [3, 3]
    assert sw.attrs["replicate_columns"] == "seed"
    t975_2 = 4.302652729911275  # Student t, 0.975 quantile, 2 degrees of freedom
    for _, u in iv.iterrows():
        v = pts[pts.max_num_batched_tokens == u.max_num_batched_tokens].ttft_ms_p50
        assert u.ttft_ms_p50 == pytest.approx(v.mean(), rel=1e-12)
        assert u.ttft_ms_p50_ci95 == pytest.approx(t975_2 * v.std(ddof=1) / 3 ** 0.5, rel=1e-9)
    assert set(pts.rejection_heavy) == {0.0} and (pts.cost_source.str.len() > 0).all()
    # A results file: each run's baseline OTPS as diagnose takes it, the first run's alarm.
    c = servesim.compare(["vllm-v0", "vllm-v1"], num_requests=200)
    out = tmp_path / "c.h5"
    cli("compare", "--scheduler", "vllm-v0,vllm-v1", "--num-requests", 200, "--out", out)
    back = servesim.read(out)
    first = next(iter(back.values()))
    done = first.requests[first.requests.status == "completed"]
    otps = np.percentile(done.output_tokens, 50) / (
        np.percentile(done.e2e_ms, 50) - np.percentile(done.ttft_ms, 50)) * 1e3
    assert first.baseline_otps == pytest.approx(otps, rel=1e-12)
    assert back.alarm["alarm_baseline_run"] == first.label
    assert back.alarm["alarm_threshold_otps"] == pytest.approx(0.8 * otps, rel=1e-12)
    assert list(c.runs) == list(back)
    assert [r.flags for r in back.values()] == [{"rejection_heavy": False, "overloaded": False}] * 2
    # Runs that reject more than 1% of their requests are flagged in the file as not comparable.
    cli("compare", "--scheduler", "vllm-v0,vllm-v1", "--num-requests", 200, "--max-model-len",
        2048, "--out", out)
    for r in servesim.read(out).values():
        assert r.summary["requests"]["rejected_share"] > 0.01
        assert r.flags == {"rejection_heavy": True,
                           "overloaded": r.summary["overloaded"]["overloaded"]}


def test_a_python_policy_reproducing_fcfs_gives_the_same_steps():
    cfg = dict(scheduler="vllm-v1", num_requests=800, request_rate=20, num_gpu_blocks=600, seed=5)
    cpp = servesim.run(**cfg)
    assert cpp.summary["preemptions"] > 0  # the victim choice matters
    py = servesim.run(**cfg, admission_key=lambda r: r["arrival_s"],
                      preemption_victim=lambda running: running[-1]["id"])
    assert py.steps.equals(cpp.steps)
    assert py.requests.equals(cpp.requests)
    # Another order changes the steps: shortest prompt first.
    sjf = servesim.run(**cfg, admission_key=lambda r: r["input_tokens"])
    assert not sjf.steps.equals(cpp.steps)
    # A Python router reproducing least-requests, on a fleet.
    fleet = dict(scheduler="vllm-v1", num_requests=400, request_rate=30, num_replicas=3)
    a = servesim.run(**fleet, router="least-requests")
    b = servesim.run(**fleet, router_score=lambda req, reps: [-r["outstanding"] for r in reps])
    assert a.requests.equals(b.requests)
    assert b.summary["config"]["router"] == "custom"


def test_an_admission_key_orders_a_hand_worked_queue():
    # Four prompts waiting at t = 0, one running at a time (max_num_seqs 1): they are served in
    # the key's order, ties (none here) by arrival.
    df = pd.DataFrame({"arrival_s": [0.0, 0.0, 0.0, 0.0], "input_tokens": [300, 100, 400, 200],
                       "output_tokens": [4, 4, 4, 4]})
    fcfs = servesim.run(df, scheduler="vllm-v1", max_num_seqs=1)
    sjf = servesim.run(df, scheduler="vllm-v1", max_num_seqs=1,
                       admission_key=lambda r: r["input_tokens"])
    ljf = servesim.run(df, scheduler="vllm-v1", max_num_seqs=1,
                       admission_key=lambda r: -r["input_tokens"])
    def order(res):
        return res.requests.sort_values("first_token_s").input_tokens.tolist()
    assert order(fcfs) == [300, 100, 400, 200]
    assert order(sjf) == [100, 200, 300, 400]
    assert order(ljf) == [400, 300, 200, 100]


def test_policy_errors_reach_python():
    def broken(r):
        raise KeyError("no such field")
    with pytest.raises(KeyError):
        servesim.run(scheduler="vllm-v1", num_requests=10, admission_key=broken)
    with pytest.raises(servesim.Error) as e:
        servesim.run(scheduler="vllm-v1", num_requests=200, num_gpu_blocks=40,
                     preemption_victim=lambda running: 10**6)
    assert e.value.field == "preemption_victim"
    with pytest.raises(servesim.Error) as e:
        servesim.run(scheduler="chunked", num_requests=10, admission_key=lambda r: 0)
    assert e.value.field == "scheduler"


SHARED = os.environ.get("SERVESIM_SHARED") or os.path.join(os.path.dirname(__file__), "..", "..",
                                                            "..", "shared")


def test_validate_replays_ground_truth():
    """[shared] Skipped where ../shared is absent, failed in CI (CI=true)."""
    path = os.path.join(SHARED, "groundtruth", "vllm-0.15.1-more.csv")
    if not os.path.exists(path):
        if os.environ.get("CI") == "true":
            pytest.fail("../shared/groundtruth is missing")
        pytest.skip("../shared/groundtruth is absent: not checked here")
    v = servesim.validate(path, experiment="16-llama", jobs=1)
    assert v.stage.tolist() == ["all", "0", "1"] or v.stage.astype(str).tolist() == ["all", "0",
                                                                                      "1"]
    assert (v.ttft_mean_predicted > 0).all() and (v.e2e_mean_error_pct.abs() < 15).all()


def test_prediction_intervals_reach_the_frames():
    r = servesim.run(interval=0.8, **SMALL)
    iv = r.intervals
    assert iv.attrs["level"] == 0.8
    assert list(iv.index[:3]) == ["ttft_ms.mean", "ttft_ms.p90", "ttft_ms.p99"]
    assert (iv["lo"] < iv["point"]).all() and (iv["point"] < iv["hi"]).all()
    assert iv.loc["tpot_ms.mean", "point"] == r.summary["tpot_ms"]["mean"]
    # The HDF5 file's summary holds the level asked for, as the JSON does.
    assert json.loads(r.json_text)["prediction_intervals"]["level"] == 0.8
    assert servesim.run(interval=None, **SMALL).intervals.empty
    c = servesim.compare(["vllm-v1", "chunked:512"], **SMALL)
    t = c.table
    assert (t["ttft_ms_p99_lo"] < t["ttft_ms_p99"]).all()
    assert (t["ttft_ms_p99"] < t["ttft_ms_p99_hi"]).all()
    with pytest.raises(servesim.Error, match="interval"):
        servesim.run(interval=1.5, **SMALL)
    cap = servesim.capacity("ttft_p99_ms=2000", options={"confidence": 0.9}, num_requests=200)
    row = cap.table.iloc[0]
    assert row["confidence"] == 0.9
    assert 0 < row["capacity_req_s"] <= row["point_capacity_req_s"]
    # An MLA model's intervals are unbounded (its published runs were off by up to 28x): the
    # upper ends are infinite floats, not None, in both frames.
    mla = servesim.run(model="deepseek-v3", gpu="h200-sxm", tp=8, num_requests=20)
    assert (mla.intervals["lo"] == 0).all()
    assert (mla.intervals["hi"] == float("inf")).all()
    assert "multi-head latent attention" in mla.intervals.attrs["extrapolated"][-1]
    assert servesim.summary_row(mla.summary)["tpot_ms_mean_hi"] == float("inf")


# Issue 44: hostile input from Python. Every failure a user can cause is a servesim.Error naming
# the keyword (or policy) or the file; values are checked as the command line checks them.

def test_json_flags_take_dicts():
    """A dict for a flag that takes vLLM's JSON is passed as that JSON (it became "k=v,...")."""
    r = servesim.run(scheduler="vllm-v1", num_requests=20, keep_steps=False,
                     speculative_config={"method": "eagle3", "num_speculative_tokens": 3},
                     spec_acceptance_rate=0.7)
    assert r.config["speculative"]["num_speculative_tokens"] == 3
    connector = {"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                 "kv_connector_extra_config": {"cpu_bytes_to_use": 4 << 30}}
    r = servesim.run(scheduler="vllm-v1", num_requests=20, keep_steps=False,
                     kv_transfer_config=connector)
    assert r.summary["requests"]["completed"] == 20
    # A list is JSON too there, and the command line says why it is not an object.
    with pytest.raises(servesim.Error) as e:
        servesim.run(scheduler="vllm-v1", num_requests=5, speculative_config=[1, 2])
    assert e.value.field == "speculative-config" and "JSON object" in str(e.value)


@pytest.mark.parametrize("answer", [None, "3", [0], -1, 1.0, True, float("nan")])
def test_an_unusable_victim_names_the_policy(answer):
    with pytest.raises(servesim.Error) as e:
        servesim.run(scheduler="vllm-v1", num_requests=200, num_gpu_blocks=40, keep_steps=False,
                     preemption_victim=lambda running: answer)
    assert e.value.field == "preemption_victim"
    assert "returned %r" % (answer,) in str(e.value)


@pytest.mark.parametrize("answer", [None, "1", [1], float("nan"), float("inf"), 1j])
def test_an_unusable_admission_key_names_the_policy(answer):
    with pytest.raises(servesim.Error) as e:
        servesim.run(scheduler="vllm-v1", num_requests=20, keep_steps=False,
                     admission_key=lambda r: answer)
    assert e.value.field == "admission_key" and "returned" in str(e.value)


@pytest.mark.parametrize("answer", [None, "ab", 5, {"a": 1}, [1, None], [float("nan"), 1],
                                    [1, float("-inf")], [1, 2, 3]])
def test_unusable_router_scores_name_the_policy(answer):
    with pytest.raises(servesim.Error) as e:
        servesim.run(num_requests=20, num_replicas=2, keep_steps=False,
                     router_score=lambda request, replicas: answer)
    assert e.value.field == "router_score"
    # A tuple or a numpy array of numbers is a list of scores.
    for ok in ((1, 0), np.array([0.0, 1.0])):
        r = servesim.run(num_requests=20, num_replicas=2, keep_steps=False,
                         router_score=lambda request, replicas: ok)
        assert r.config["router"] == "custom"


def test_a_router_without_a_fleet_is_an_error():
    for fleet in ({}, {"num_replicas": 1}):
        with pytest.raises(servesim.Error) as e:
            servesim.run(num_requests=20, keep_steps=False, **fleet,
                         router_score=lambda request, replicas: [0] * len(replicas))
        assert e.value.field == "router_score" and "num_replicas > 1" in str(e.value)


def test_damaged_and_foreign_files_name_the_file_and_field(tmp_path):
    import h5py
    out = tmp_path / "r.h5"
    cli("compare", "--scheduler", "vllm-v0,vllm-v1", "--num-requests", 50, "--out", out)
    run = "runs/vllm-v1:8192"

    def damaged(name, change):
        path = tmp_path / (name + ".h5")
        path.write_bytes(out.read_bytes())
        with h5py.File(path, "r+") as f:
            change(f)
        with pytest.raises(servesim.Error) as e:
            servesim.read(path)
        assert e.value.file == str(path), name
        return e.value

    def replace(f, name, value):
        del f[name]
        f[name] = value

    assert damaged("no_runs", lambda f: f.attrs.__delitem__("runs")).field == "runs"
    assert damaged("workload", lambda f: f.attrs.__setitem__("workload", "{no")).field == \
        "workload"
    e = damaged("summary", lambda f: f[run].attrs.__setitem__("summary", '{"requests": '))
    assert e.field == "summary" and "vllm-v1:8192" in str(e) and "not JSON" in str(e)
    assert damaged("label", lambda f: f[run].attrs.__setitem__(
        "label", np.bytes_(b"\xff\xfe"))).field == "label"
    assert damaged("group", lambda f: f.__delitem__(run + "/requests")).field == "requests"
    assert damaged("column", lambda f: f.__delitem__(run + "/requests/status")).field == \
        "status"
    assert damaged("short", lambda f: replace(f, run + "/requests/ttft_ms", [1.0])).field == \
        "ttft_ms"
    assert damaged("2d", lambda f: replace(f, run + "/requests/ttft_ms",
                                           np.zeros((50, 2)))).field == "ttft_ms"
    assert damaged("codes", lambda f: f[run + "/requests"].attrs.__setitem__(
        "status_codes", "x y")).field == "status_codes"
    assert damaged("period", lambda f: f.attrs.__setitem__("period_s", "x")).field == "period_s"
    assert damaged("version", lambda f: f.attrs.__setitem__("version", [1, 2])).field == \
        "version"
    # A file h5py wrote with arbitrary datasets, a trace missing a column, a truncated file.
    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = [1, 2, 3]
        f.attrs["magic"] = np.bytes_(b"\xff")
    with pytest.raises(servesim.Error) as e:
        servesim.read(foreign)
    assert (e.value.file, e.value.field) == (str(foreign), "magic")
    trace = tmp_path / "t.h5"
    servesim.Trace.from_frame(pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": [5, 6],
                                            "output_tokens": [1, 2]})).write(trace)
    with h5py.File(trace, "r+") as f:
        del f["input_tokens"]
    with pytest.raises(servesim.Error) as e:
        servesim.read(trace)
    assert (e.value.file, e.value.field) == (str(trace), "input_tokens")
    data = out.read_bytes()
    for n in (100, len(data) // 2):
        cut = tmp_path / "cut.h5"
        cut.write_bytes(data[:n])
        with pytest.raises(servesim.Error) as e:
            servesim.read(cut)
        assert e.value.file == str(cut)
    with pytest.raises(servesim.Error) as e:
        servesim.read(tmp_path / "absent.h5")
    assert e.value.file == str(tmp_path / "absent.h5")


def test_wrong_argument_types_name_the_keyword(tmp_path):
    def error(f, **kwargs):
        with pytest.raises(servesim.Error) as e:
            f(**kwargs)
        return e.value
    small = dict(num_requests=10, keep_steps=False)
    assert error(servesim.run, help=True).field == "help"
    assert error(servesim.run, period_s="x", **small).field == "period-s"
    assert error(servesim.run, interval=[1], **small).field.lstrip("-") == "interval"
    assert error(servesim.run, model=object(), **small).field == "model"
    assert error(servesim.run, max_num_seqs=[8, None], **small).field == "max-num-seqs"
    assert error(servesim.run, admission_key=5, scheduler="vllm-v1", **small).field == \
        "admission_key"
    assert error(servesim.run, workload=5, **small).field == "workload"
    e = error(servesim.run, workload=tmp_path / "absent.csv")
    assert e.file == str(tmp_path / "absent.csv")
    assert error(servesim.compare, schedulers=5, **small).field == "schedulers"
    assert error(servesim.sweep, grid={"max_num_seqs": None}, num_requests=10).field == \
        "max-num-seqs"
    assert error(servesim.sweep, grid={"max_num_seqs": [8, None]}, num_requests=10).field == \
        "max-num-seqs"
    assert error(servesim.sweep, grid={"max_num_seqs": []}, num_requests=10).field == \
        "max-num-seqs"
    assert error(servesim.sweep, grid=[8, 16]).field == "grid"
    assert error(servesim.capacity, slo=5).field == "slo"
    assert error(servesim.capacity, slo="ttft_p99_ms=2000", options=[1]).field == "options"
    assert error(servesim.read, path=None).field == "path"
    assert error(servesim.Trace.from_frame, df={"arrival_s": [0.0]}).field == "workload"
    # A switch's grid values are True and False.
    t = servesim.sweep({"enable_prefix_caching": [True, False]}, num_requests=20)
    assert t.table["enable-prefix-caching"].tolist() == ["true", "false"]


def test_nul_and_empty_values_are_refused():
    for value in ("5\x00junk", "", ["5\x00"]):
        with pytest.raises(servesim.Error) as e:
            servesim.run(num_requests=value, keep_steps=False)
        assert e.value.field == "num-requests" and "num_requests" in str(e.value)
    with pytest.raises(servesim.Error) as e:
        servesim.run(model="", num_requests=5)
    assert e.value.field == "model" and "empty" in str(e.value)
    with pytest.raises(servesim.Error) as e:
        servesim.command("run", "--num-requests=5\x00junk")
    assert e.value.field == "num-requests"
    with pytest.raises(servesim.Error) as e:
        servesim.sweep({"max_num_seqs": ["8\x00"]}, num_requests=10)
    assert e.value.field == "max-num-seqs"


def test_the_modules_own_outputs_are_refused_clearly():
    for f, keyword in ((servesim.run, "out"), (servesim.run, "json"), (servesim.compare, "out"),
                       (servesim.compare, "json"), (servesim.sweep, "csv")):
        args = ({"max_num_seqs": [8]},) if f is servesim.sweep else ()
        with pytest.raises(servesim.Error) as e:
            f(*args, num_requests=10, **{keyword: "x"})
        assert e.value.field == keyword and "servesim.command" in str(e.value)
    with pytest.raises(servesim.Error) as e:
        servesim.capacity("ttft_p99_ms=2000", options={"out": "x.h5"})
    assert e.value.field == "out"


def test_a_frames_bad_value_names_its_column_and_row():
    df = pd.DataFrame({"arrival_s": [0.0, 0.1, 0.2], "input_tokens": [10, 20, 30],
                       "output_tokens": [5, 5, 5], "lora": ["sql", "b\nc", "sql"]})
    with pytest.raises(servesim.Error) as e:
        servesim.run(df, scheduler="vllm-v1", enable_lora=True, keep_steps=False)
    assert e.value.field == "lora" and "row 1" in str(e.value) and e.value.file == ""
    assert "servesim-" not in str(e.value)  # not the module's temporary csv
    bad = pd.DataFrame({"arrival_s": [0.0, 0.1, 0.2], "input_tokens": [10, "x", 30],
                        "output_tokens": [5, 5, 5]})
    with pytest.raises(servesim.Error) as e:
        servesim.run(bad, keep_steps=False)
    assert e.value.field == "input_tokens" and "row 1" in str(e.value) and e.value.file == ""


def test_a_capacity_plan_holds_its_table(tmp_path):
    t = servesim.capacity("ttft_p99_ms=2000", options={"over_time": 60}, num_requests=400,
                          request_rate=5)
    assert t.kind == "capacity-plan" and t.table is not None
    assert t.table.start_s.tolist() == [0.0, 60.0] and (t.table.replicas >= 1).all()
    csv = tmp_path / "plan.csv"
    cli("capacity", "--slo", "ttft_p99_ms=2000", "--over-time", 60, "--num-requests", 400,
        "--request-rate", 5, "--csv", csv, "--out", tmp_path / "plan.h5")
    assert t.csv_text == read_text(csv)
    back = servesim.read(tmp_path / "plan.h5")
    assert back.kind == "capacity-plan" and back.table.equals(t.table)


@pytest.mark.parametrize("policy", [", admission_key=operator.itemgetter('arrival_s')", ""])
def test_ctrl_c_stops_a_run(policy):
    """SIGINT during a run raises KeyboardInterrupt within a second, not after the run (issue 44):
    with a policy that runs no Python bytecode of its own (a builtin, when the interpreter would
    not look for the signal itself), and with no Python policy at all (the command runs on its
    own thread while the caller looks for signals; every simulation polls util/cancel.hpp)."""
    import signal
    import sys
    import time
    child = ("import operator, servesim\n"
             "print('running', flush=True)\n"
             "servesim.run(scheduler='vllm-v1', num_requests=1000000, request_rate=50,\n"
             "             keep_steps=False, interval=None%s)\n"
             "print('finished', flush=True)\n" % policy)
    # The child is Python as this process is (a sanitized build's LD_PRELOAD passed on).
    p = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "running\n", p.stderr.read()
        time.sleep(1)  # into the run (23 s on the 2-core machine), or its workload's generation
        start = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
        elapsed = time.monotonic() - start
    finally:
        p.kill()
        p.wait()
    assert "KeyboardInterrupt" in err and "finished" not in out
    assert elapsed < 5, elapsed


def test_sweep_grid_values_use_each_flags_separator():
    # replica_gpus' one value is itself a comma list: its grid values are joined with '|', as
    # the command line's; a JSON value's commas are its own.
    t = servesim.sweep({"replica_gpus": ["h100-sxm:1,a100-80g:1", "h100-sxm:2"]},
                       num_requests=20)
    assert len(t.table) == 2
    spec = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}
    t = servesim.sweep({"speculative_config": [spec, dict(spec, num_speculative_tokens=5)]},
                       spec_acceptance_rate=0.6, num_requests=20)
    assert len(t.table) == 2


def cli_status(*args):
    """Runs the command-line binary; returns (exit status, what it prints)."""
    p = run_binary(*args)
    return p.returncode, p.stdout


def test_check_verdicts_from_python_equal_the_command_lines(tmp_path):
    spec = tmp_path / "check.ini"
    spec.write_text("baseline = base.h5\nnum-requests = 150\nrequest-rate = 8\nseed = 1\n"
                    "[tolerance]\nttft_ms.p50 = +10%\notps.p50 = -5%\n"
                    "[scenario.v1]\nscheduler = vllm-v1\n[scenario.c512]\nscheduler = chunked:512\n")
    u = servesim.check(spec, update=True)
    assert isinstance(u, servesim.Verdict) and u.passed and u["updated"] and u.lines.empty
    assert "updated with 2 scenarios" in u.text
    v = servesim.check(spec)
    status, text = cli_status("check", spec, "--json", tmp_path / "cli.json")
    assert status == 0 and v.passed and v.text == text
    assert dict(v) == json.loads(read_text(tmp_path / "cli.json"))
    assert v["regressions"] == 0 and set(v.lines.scenario) == {"v1", "c512"}
    # The same scenarios at 1.5x the load: TTFT rises and OTPS falls beyond the tolerances.
    worse = tmp_path / "worse.ini"
    worse.write_text(read_text(spec).replace("request-rate = 8", "request-rate = 12"))
    v = servesim.check(worse)
    status, _ = cli_status("check", worse, "--json", tmp_path / "cli-worse.json")
    assert status == 1 and not v.passed
    assert dict(v) == json.loads(read_text(tmp_path / "cli-worse.json"))
    bad = v.lines[v.lines.regression]
    assert v["regressions"] == len(bad) > 0
    assert {"ttft_ms.p50", "otps.p50"} <= set(bad.metric)
    with pytest.raises(servesim.Error) as e:
        servesim.check(tmp_path / "missing.ini")
    assert "missing.ini" in str(e.value)


def test_diagnose_verdicts_from_python_equal_the_command_lines(tmp_path):
    a, b, c = tmp_path / "a.h5", tmp_path / "b.h5", tmp_path / "c.h5"
    cli("run", "--num-requests", 200, "--request-rate", 8, "--out", a)
    cli("run", "--num-requests", 200, "--request-rate", 12, "--out", b)
    v = servesim.diagnose(a, servesim.read(b))
    _, text = cli_status("diagnose", a, b, "--json", tmp_path / "d.json")
    assert v.passed and v.text == text
    assert dict(v) == json.loads(read_text(tmp_path / "d.json"))
    # More requests a second is the workload's change, not the host's.
    assert v.finding == "rate" and v.headline == v["verdict"]["headline"]
    # The same load on a slower GPU: the alarm fires and the drop is the host's throughput.
    cli("run", "--num-requests", 600, "--request-rate", 4, "--out", a)
    cli("run", "--num-requests", 600, "--request-rate", 4, "--gpu", "a100-80g", "--out", c)
    v = servesim.diagnose(a, c, period_s=30, fail_on_any_alarm=True)
    status, _ = cli_status("diagnose", a, c, "--period-s", 30, "--fail-on-any-alarm")
    assert status == 1 and not v.passed and v["alarm"]["fired"]
    assert v.finding == "throughput"
    with pytest.raises(servesim.Error) as e:
        servesim.diagnose(a, c, tolerance=-1)
    assert e.value.field == "tolerance"
    with pytest.raises(servesim.Error) as e:
        servesim.diagnose(a, c, json="x.json")
    assert e.value.field == "json"


def test_energy_reaches_python_and_its_steps_integrate_to_it():
    """Issue 48: the run's energy in the summary, each step's power in the steps frame, and
    the energy the steps' draw integrated with the GPUs' idle power between them."""
    r = servesim.run(**SMALL)
    e = r.summary["energy"]
    assert e["energy_j"] > 0 and e["idle_power_w"] > 0
    assert e["idle_power_w"] <= e["mean_power_w"] <= e["peak_power_w"]
    st = r.steps
    assert st.power_w.dtype == np.float64
    assert (st.power_w >= e["idle_power_w"]).all()
    excess = ((st.power_w - e["idle_power_w"]) * st.duration_s).sum()
    want = e["idle_power_w"] * r.summary["makespan_s"] + excess
    assert e["energy_j"] == pytest.approx(want, rel=1e-6)
    out = r.summary["requests"]["output_tokens"]
    assert e["j_per_output_token"] == pytest.approx(e["energy_j"] / out)


def test_capacity_prices_the_energy_from_python():
    """capacity's --energy-cost-per-kwh and --pue as options: the facility's kW is the GPUs'
    mean power at capacity times the PUE, its dollars per million output tokens follow."""
    t = servesim.capacity("ttft_p99_ms=1000", num_requests=200,
                          options=dict(energy_cost_per_kwh=0.12, pue=1.2)).table
    row = t.iloc[0]
    assert row.capacity_req_s > 0
    assert row.pue == 1.2 and row.energy_usd_per_kwh == 0.12
    assert row.facility_kw == pytest.approx(row.mean_power_w * 1.2 / 1e3, rel=1e-6)
    per_mtok = row.facility_kw * 0.12 / (row.output_tokens_per_s * 3600) * 1e6
    assert row.energy_cost_per_million_output_tokens == pytest.approx(per_mtok, rel=1e-6)
    with pytest.raises(servesim.Error, match="pue"):
        servesim.capacity("ttft_p99_ms=1000", num_requests=20, options=dict(pue=0.5))
