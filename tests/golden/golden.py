#!/usr/bin/python3
"""The golden corpus: small scenarios over every command and flag family, each with the hashes of
its outputs committed beside it (hashes.txt). A change that moves a hash updates it in the same
commit and says why in the message.

    tests/golden/golden.py SERVESIM            check every scenario (exit 1 on a moved hash)
    tests/golden/golden.py SERVESIM --update   rewrite hashes.txt from this build
    tests/golden/golden.py SERVESIM --only NAME [NAME ...]   some scenarios; --show prints them

scenarios.txt holds one scenario a line, `NAME: COMMAND ;; COMMAND ...`: each COMMAND is
servesim's arguments (shell quoting), run in the scenario's own folder, which holds a fresh copy of
the data this script writes (data/: traces in every format, model, GPU and calibration files,
Vidur profiles, a ServeGen client, a ground-truth CSV, check specs) and an empty out/. Hashed, per
command: its exit status, standard output and standard error; then every file under out/: text as
it is, HDF5 as a canonical dump of its groups, datasets and attributes (h5py), so that another
HDF5 library's bytes do not move a hash. Paths are relative, so no output names the machine.

Python 3 standard library, plus h5py for the HDF5 files.
"""
import argparse
import concurrent.futures
import hashlib
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def make_data(root):
    """The inputs every scenario reads, written deterministically (seeded) under ROOT."""
    rng = random.Random(42)
    d = lambda *p: os.path.join(root, *p)  # noqa: E731
    # Azure 2023 format: 400 requests over about 100 s, conversation-like lengths.
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    t = 0.0
    for _ in range(400):
        t += rng.expovariate(4.0)
        s = int(t)
        lines.append("2023-11-16 18:%02d:%02d.%07d,%d,%d" % (
            15 + s // 60, s % 60, int((t - s) * 1e7), int(rng.lognormvariate(6.5, 0.8)) + 1,
            int(rng.lognormvariate(4.5, 0.9)) + 1))
    write(d("azure.csv"), "\n".join(lines) + "\n")
    # Vidur's processed format.
    lines = ["arrived_at,num_prefill_tokens,num_decode_tokens"]
    t = 0.0
    for _ in range(200):
        t += rng.expovariate(3.0)
        lines.append("%.6f,%d,%d" % (t, rng.randint(50, 3000), rng.randint(5, 400)))
    write(d("vidur.csv"), "\n".join(lines) + "\n")
    # A csv with priorities and LoRA adapters (arrivals in ms), and a length-only one.
    lines = ["t_ms,in,out,prio,adapter"]
    t = 0.0
    for i in range(240):
        t += rng.expovariate(0.004)
        lines.append("%.3f,%d,%d,%d,%s" % (t, rng.randint(30, 2000), rng.randint(2, 300),
                                           rng.randint(0, 2), rng.choice(["", "sql", "chat",
                                                                          "code"])))
    write(d("timed.csv"), "\n".join(lines) + "\n")
    lines = ["input,output"]
    for _ in range(200):
        lines.append("%d,%d" % (rng.randint(20, 1500), rng.randint(2, 200)))
    write(d("lengths.csv"), "\n".join(lines) + "\n")
    # BurstGPT.
    lines = ["Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"]
    t = 0
    for _ in range(200):
        t += rng.randint(0, 2)
        req, resp = rng.randint(10, 2000), rng.choice([0, rng.randint(1, 500)])
        lines.append("%d,%s,%d,%d,%d,%s" % (t, rng.choice(["ChatGPT", "GPT-4"]), req, resp,
                                            req + resp, rng.choice(["Conversation log",
                                                                    "API log"])))
    write(d("burstgpt.csv"), "\n".join(lines) + "\n")
    # Mooncake: shared prefixes by hash id, 512 tokens a block.
    rows = []
    t = 0
    for i in range(150):
        t += rng.randint(50, 600)
        blocks = rng.randint(1, 6)
        prefix = rng.randint(0, 4)
        ids = [prefix * 100 + k for k in range(min(blocks, 2))] + [1000 + i * 10 + k for k in
                                                                   range(blocks - min(blocks, 2))]
        rows.append('{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [%s]}'
                    % (t, blocks * 512 - rng.randint(0, 300), rng.randint(5, 300),
                       ", ".join(map(str, ids))))
    write(d("mooncake.jsonl"), "\n".join(rows) + "\n")
    # A ServeGen client.
    write(d("servegen", "chunk-0-trace.csv"), "0,3,1,Gamma,1,1\n60,1.5,2,Weibull,0.7,1\n")
    write(d("servegen", "chunk-0-dataset.json"),
          '{"0": {"input_tokens": "{200: 0.5, 900: 0.5}", "output_tokens": "{40: 0.7, 200: 0.3}"},'
          ' "60": {"input_tokens": "{300: 1.0}", "output_tokens": "{100: 1.0}"}}')
    # Model, GPU and calibration files.
    write(d("mini.ini"), "name = mini-llama\nnum_hidden_layers = 8\nhidden_size = 1024\n"
          "num_attention_heads = 8\nnum_key_value_heads = 8\nintermediate_size = 4096\n"
          "vocab_size = 32000\nmax_position_embeddings = 4096\n")
    write(d("mini-mla.ini"), "name = mini-mla\nnum_hidden_layers = 6\nhidden_size = 1024\n"
          "num_attention_heads = 8\nintermediate_size = 512\nvocab_size = 32000\n"
          "max_position_embeddings = 4096\nnum_local_experts = 16\nnum_experts_per_tok = 2\n"
          "shared_expert_intermediate_size = 512\nq_lora_rank = 256\nkv_lora_rank = 128\n"
          "qk_nope_head_dim = 64\nqk_rope_head_dim = 32\nv_head_dim = 64\ndense_layers = 1\n"
          "dense_intermediate_size = 2048\n")
    write(d("gpu.ini"), "name = my-h100\nbf16_tflops = 989.4\nhbm_gib = 80\nhbm_gb_per_s = 3350\n"
          "interconnect_gb_per_s = 900\narch = hopper\ncost_per_hour = 2.75\n")
    write(d("cal.ini"), "arch = hopper\nlinear_memory_efficiency = 0.6125\nv1_cpu_s = 0.0012\n")
    write_profiles(d("profiles"))
    # Ground truth in validate's format: two experiments, one in two stages.
    head = ("experiment,stage,vllm_version,gpu,tp,model,workload,system_prompt_tokens,"
            "question_tokens,output_tokens,prompt_groups,users_per_group,rate_req_s,duration_s,"
            "max_num_batched_tokens,max_num_seqs,max_model_len,vllm_kv_blocks,prefix_caching,"
            "chunked_prefill,cpu_kv_offload,gpu_memory_utilization,ttft_mean_ms,ttft_p90_ms,"
            "ttft_p99_ms,tpot_mean_ms,e2e_mean_ms,e2e_p90_ms,e2e_p99_ms\n")
    body = ""
    for stage, rate in (("0", "2"), ("1", "4.5"), ("all", "3.25")):
        body += ("a,%s,0.15.1,H100-80GB-SXM,1,meta-llama/Llama-3.1-8B-Instruct,inference-perf,"
                 "200,300,120,4,4,%s,20,8192,256,4096,,on,on,,,30.0,40.0,60.0,9.0,1200.0,1500.0,"
                 "1800.0\n" % (stage, rate))
    body += ("b,0,0.15.1,A100-80GB,2,meta-llama/Llama-2-13b-hf,inference-perf,100,400,80,3,2,1.5,"
             "20,2048,128,4096,7463,on,on,,,50.0,70.0,90.0,20.0,1700.0,2000.0,2400.0\n")
    write(d("gt.csv"), head + body)
    # Flags in files: run's --config, capacity's and sweep's, and check specs.
    write(d("flags.ini"), "num_requests = 50\nmax-num-seqs = 48\nrequest-rate = 3.5\n")
    write(d("capacity.ini"), "slo = ttft_p99_ms=1500\nnum-requests = 150\ngpu = a100-80g\n")
    write(d("sweep.ini"), "num-requests = 60\nrequest-rate = 3,6\n")
    spec = ("baseline = ../out/base.h5\nnum-requests = 150\nrequest-rate = 8\nseed = 1\n"
            "[tolerance]\nttft_ms.p50 = +10%\nitl_ms.p99 = +5%\notps.p50 = -5%\n"
            "throughput.output_tokens_per_s = -2%\n"
            "[scenario.v1]\nscheduler = vllm-v1\n"
            "[scenario.chunked-512]\nscheduler = chunked:512\n")
    write(d("check.ini"), spec)
    write(d("check-a100.ini"), spec.replace("seed = 1\n", "seed = 1\ngpu = a100-80g\n"))
    write(d("check-new.ini"), spec + "[scenario.burst]\nburstiness = 0.5\n")
    write(d("check-seeds.ini"), spec.replace("seed = 1\n", "seed = 1\nnum-seeds = 3\n"))
    write(d("check-alarm.ini"), spec.replace("seed = 1\n", "seed = 1\nfail-on-alarm = true\n"))
    write(d("check-override.ini"),
          spec + "[scenario.replay]\ntrace = azure.csv\nnum-requests =\nseed =\nrequest_rate = 5.5\n"
          "max_num_seqs = 64\n")
    write(d("check-bad.ini"), spec + "[scenario.replay]\ntrace = azure.csv\n")
    return root


def write_profiles(root):
    """Vidur operator profiles for llama-2-7b's shape (tests/profile_fixtures.hpp's layout)."""
    ops = ["emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj",
           "post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj", "add"]
    head = "".join("time_stats.%s.%s," % (op, s) for op in ops
                   for s in ("min", "max", "mean", "median", "std"))
    head += ("n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,"
             "num_tensor_parallel_workers\n")

    def row(tokens, tp, scale):
        cells = []
        for i in range(10):
            cells += ["0", "0", "0", "%g" % ((i + 1) * scale), "0"]
        return ",".join(cells) + ",32,32,4096,11008,32000,True,%d,%d\n" % (tokens, tp)

    write(os.path.join(root, "compute", "m", "mlp.csv"),
          head + row(1, 1, 0.01) + row(8, 1, 0.02) + row(64, 1, 0.04) + row(512, 1, 0.2)
          + row(1, 2, 0.005) + row(64, 2, 0.02))
    write(os.path.join(root, "legacy", "attention.csv"),
          "time_stats.attn_prefill.median,time_stats.attn_decode.median,n_embd,n_q_head,"
          "n_kv_head,block_size,num_tensor_parallel_workers,max_model_len,batch_size,"
          "prefill_chunk_size,kv_cache_size,is_prefill\n"
          "0.10,,4096,32,32,16,1,4096,1,128,0,True\n"
          "0.30,,4096,32,32,16,1,4096,1,128,1024,True\n"
          "0.50,,4096,32,32,16,1,4096,1,256,0,True\n"
          "0.90,,4096,32,32,16,1,4096,1,256,1024,True\n"
          ",0.02,4096,32,32,16,1,4096,1,0,512,False\n"
          ",0.04,4096,32,32,16,1,4096,1,0,1024,False\n"
          ",0.03,4096,32,32,16,1,4096,2,0,512,False\n"
          ",0.07,4096,32,32,16,1,4096,2,0,1024,False\n")
    write(os.path.join(root, "legacy", "all_reduce.csv"),
          ",time_stats.all_reduce.median,num_workers,size,collective,devices_per_node\n"
          "0,0.010,2,1000,all_reduce,2\n1,0.020,2,3000,all_reduce,2\n")
    write(os.path.join(root, "legacy", "cpu_overheads.csv"),
          ",schedule_median,sampler_e2e_median,prepare_inputs_e2e_median,"
          "process_model_outputs_median,batch_size\n0,0.1,0.2,0.3,0.4,8\n1,0.1,0.2,0.3,1.4,16\n")


def read_scenarios(path):
    scenarios = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, sep, commands = line.partition(":")
            name = name.strip()
            if not sep or not name or " " in name:
                sys.exit("golden: %s:%d: expected NAME: COMMAND" % (path, n))
            scenarios.append((name, [shlex.split(c) for c in commands.split(";;")]))
    names = [s[0] for s in scenarios]
    if len(set(names)) != len(names):
        sys.exit("golden: %s: a scenario name is used twice" % path)
    return scenarios


def digest(data):
    return hashlib.sha256(data).hexdigest()[:20]


# The one wall-clock time servesim prints (trace import's "..., in 0.01 s"): not a result.
WALL_TIME = re.compile(rb"(MB, in )[0-9]+\.[0-9]+( s)$", re.M)


def without_wall_time(text):
    return WALL_TIME.sub(rb"\1(time)\2", text)


def h5_dump(path):
    """A canonical text of an HDF5 file: every group, dataset and attribute, sorted by name."""
    import h5py
    import numpy as np
    out = []

    def attrs(obj):
        for k in sorted(obj.attrs):
            v = obj.attrs[k]
            out.append("  @%s=%r" % (k, v.tolist() if isinstance(v, np.ndarray) else v))

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            data = obj[()]
            out.append("%s %s %s %s" % (name, obj.dtype.str, obj.shape,
                                        digest(np.ascontiguousarray(data).tobytes())
                                        if isinstance(data, np.ndarray) else repr(data)))
        else:
            out.append(name + "/")
        attrs(obj)

    with h5py.File(path, "r") as f:
        attrs(f)
        f.visititems(visit)
    return "\n".join(out).encode()


def run_scenario(binary, data, scratch, scenario):
    """Runs one scenario in a folder of its own; returns {part: hash} and the time it took."""
    name, commands = scenario
    work = os.path.join(scratch, name)
    shutil.copytree(data, os.path.join(work, "data"))
    os.makedirs(os.path.join(work, "out"))
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD",)}
    env["OMP_NUM_THREADS"] = "1"
    hashes = {}
    start = time.monotonic()
    with open(os.path.join(work, "transcript.txt"), "wb") as log:
        for i, args in enumerate(commands, 1):
            p = subprocess.run([binary, *args], cwd=work, capture_output=True, env=env)
            hashes["%d.exit" % i] = str(p.returncode)
            hashes["%d.stdout" % i] = digest(without_wall_time(p.stdout))
            hashes["%d.stderr" % i] = digest(p.stderr)
            log.write(b"$ servesim %s\n%s%s[exit %d]\n" % (
                " ".join(shlex.quote(a) for a in args).encode(), p.stdout, p.stderr,
                p.returncode))
    out = os.path.join(work, "out")
    for root, _, files in os.walk(out):
        for f in sorted(files):
            path = os.path.join(root, f)
            rel = os.path.relpath(path, work)
            with open(path, "rb") as fh:
                head = fh.read(8)
            hashes[rel] = digest(h5_dump(path) if head == b"\x89HDF\r\n\x1a\n"
                                 else open(path, "rb").read())
    return name, hashes, time.monotonic() - start, work


def read_hashes(path):
    want = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    name, part, h = line.rstrip("\n").split("\t")
                    want.setdefault(name, {})[part] = h
    return want


def write_hashes(path, got):
    with open(path, "w") as f:
        f.write("# tests/golden/golden.py SERVESIM --update writes this file: scenario, output, "
                "sha256 (20 hex digits)\n")
        for name in sorted(got):
            for part in sorted(got[name]):
                f.write("%s\t%s\t%s\n" % (name, part, got[name][part]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("servesim")
    ap.add_argument("--update", action="store_true", help="rewrite hashes.txt")
    ap.add_argument("--only", nargs="+", help="these scenarios only")
    ap.add_argument("--show", action="store_true", help="print each command's output")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--keep", action="store_true", help="keep the scenarios' folders")
    ap.add_argument("--hashes", default=os.path.join(HERE, "hashes.txt"),
                    help="the recorded hashes (default: hashes.txt beside this script)")
    ap.add_argument("--self-test", action="store_true",
                    help="check that a moved hash fails the corpus and the recorded one passes")
    a = ap.parse_args()
    if a.self_test:
        return self_test(a)
    binary = os.path.abspath(a.servesim)
    scenarios = read_scenarios(os.path.join(HERE, "scenarios.txt"))
    if a.only:
        unknown = set(a.only) - {s[0] for s in scenarios}
        if unknown:
            sys.exit("golden: no scenario named %s" % ", ".join(sorted(unknown)))
        scenarios = [s for s in scenarios if s[0] in a.only]
    start = time.monotonic()
    scratch = tempfile.mkdtemp(prefix="servesim-golden-")
    try:
        data = make_data(os.path.join(scratch, ".data"))
        got, took = {}, {}
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            for name, hashes, seconds, work in pool.map(
                    lambda s: run_scenario(binary, data, scratch, s), scenarios):
                got[name], took[name] = hashes, seconds
                if a.show:
                    print("== %s (%.2f s)" % (name, seconds))
                    with open(os.path.join(work, "transcript.txt")) as f:
                        sys.stdout.write(f.read())
        path = a.hashes
        want = read_hashes(path)
        if a.update:
            if a.only:
                want.update(got)
                got = want
            write_hashes(path, got)
            print("golden: wrote %s: %d scenarios" % (path, len(got)))
            return 0
        moved = []
        for name, hashes in sorted(got.items()):
            old = want.get(name)
            if old is None:
                moved.append("%s: no hashes recorded (new scenario: --update)" % name)
                continue
            for part in sorted(set(old) | set(hashes)):
                if old.get(part) != hashes.get(part):
                    moved.append("%s: %s: %s -> %s" % (name, part, old.get(part, "absent"),
                                                       hashes.get(part, "absent")))
        if not a.only:
            for name in sorted(set(want) - set(got)):
                moved.append("%s: recorded but no longer a scenario (--update)" % name)
        slowest = sorted(took.items(), key=lambda kv: -kv[1])[:3]
        print("golden: %d scenarios, %d commands, %.1f s (slowest: %s)" % (
            len(got), sum(len(c) for _, c in scenarios), time.monotonic() - start,
            ", ".join("%s %.1f s" % kv for kv in slowest)))
        if moved:
            print("golden: %d outputs moved:" % len(moved))
            for m in moved:
                print("  " + m)
            print("If the change is meant: tests/golden/golden.py %s --update, and say why in "
                  "the commit message." % a.servesim)
            return 1
        print("golden: every hash holds")
        return 0
    finally:
        if a.keep:
            print("golden: kept %s" % scratch)
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def self_test(a):
    """The corpus fails on a moved hash: one scenario against its recorded hashes (passes), then
    against a copy with one hash changed (fails, naming it)."""
    name = "run-default"
    want = read_hashes(a.hashes)
    if name not in want:
        sys.exit("golden: --self-test needs %s in %s" % (name, a.hashes))
    with tempfile.TemporaryDirectory(prefix="servesim-golden-self-") as d:
        moved = os.path.join(d, "hashes.txt")
        bad = {name: dict(want[name])}
        bad[name]["1.stdout"] = "0" * 20
        write_hashes(moved, bad)
        args = [sys.executable, os.path.abspath(__file__), a.servesim, "--only", name]
        ok = subprocess.run(args + ["--hashes", a.hashes], capture_output=True, text=True)
        fail = subprocess.run(args + ["--hashes", moved], capture_output=True, text=True)
    if ok.returncode != 0:
        print(ok.stdout + ok.stderr)
        return "golden --self-test: the recorded hashes did not pass"
    if fail.returncode != 1 or "%s: 1.stdout: %s" % (name, "0" * 20) not in fail.stdout:
        print(fail.stdout + fail.stderr)
        return "golden --self-test: a moved hash was not reported"
    print("golden --self-test: a moved hash fails the corpus, naming the scenario and output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
