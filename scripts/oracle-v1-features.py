#!/usr/bin/python3
"""Drive vLLM's real V1 scheduler (the oracle in ../shared/vllm-oracle) with the engine features
the oracle's own driver (run_v1.py) leaves out: speculative decoding, LoRA adapters, and the batch
queue of pipeline parallelism.

    scripts/oracle-v1-features.py WORKLOAD.json CONFIG.json [-o steps.jsonl] [--oracle DIR]

Writes run_v1.py's step records (README-harness.md: one JSON line per engine step, then a
summary line), so tests/test_oracle_v1.cpp replays them as it replays run_v1.py's, plus:
  - each scheduled item's "spec": the draft tokens scheduled for it in the step
    (len(scheduler_output.scheduled_spec_decode_tokens[id])), and "lora" when it has an adapter;
  - each record that applied a batch, "outputs": [{id, tokens, accepted?}] sorted by id: the
    tokens update_from_output appended to each request, and for a verification (drafts scheduled)
    the drafts the fake rejection sampler accepted;
  - sync with speculative decoding, "drafted": the requests holding drafts after the step.

Config beyond run_v1.py's keys:
  "speculative": {"method": "eagle", "num_speculative_tokens": 3,
                  "acceptance_rates": [0.8, 0.5, 0.2], "seed": 0}
      method: ngram | eagle | eagle3 | mtp | draft_model, as vllm/config/speculative.py names
      them; the scheduler reads num_speculative_tokens, use_eagle() and uses_draft_model().
  "max_num_scheduled_tokens": vLLM's derived scheduler budget (VllmConfig lowers it for a draft
      model's drafting slots); absent: max_num_batched_tokens.
  "max_loras": a LoRA config with that many adapters per batch; a request's "lora": INT is its
      adapter (LoRARequest.lora_int_id, name "lora-INT").
  "sliding_window": W: a hybrid model's KV cache, vLLM's HybridKVCacheCoordinator over two groups
      of the one block pool: a SlidingWindowSpec of W tokens (first, as gpt-oss's layer 0) and a
      FullAttentionSpec; kv free and used count both groups' blocks.
  "mamba_groups": N (>= 1): a hybrid Mamba / Gated-DeltaNet model's KV cache (Qwen3-Next) as vLLM
      runs one by default, mamba_cache_mode "none": N groups of a MambaSpec whose block is
      max_model_len tokens (MambaModelConfig.verify_and_update_config sets mamba_block_size so
      without prefix caching), first (Qwen3-Next's layer 0 is linear attention), then the
      FullAttentionSpec, all in the one block pool (KVCacheCoordinatorNoPrefixCache). A request
      holds one block a Mamba group from its first allocation until it is freed
      (MambaManager.get_num_skipped_tokens frees none: the state block is never behind the
      computed tokens), 1 + k under speculative decoding (MambaBase.get_kv_cache_spec sets
      num_speculative_blocks = k); kv free and used count every group's blocks. Requires the
      prefix cache off (vLLM's default for hybrid models; modes "align" and "all", which cache
      Mamba states for it, are not emulated) and no "sliding_window".
  "batch_queue_size": EngineCore's batch queue (max_concurrent_batches); absent: 2 under async
      scheduling, else 1. With the synchronous Scheduler and a queue of PP it is vLLM's pipeline
      parallelism (MultiprocExecutor.max_concurrent_batches = pipeline_parallel_size), the GPU
      always busy as under async: a request whose token is in flight has no token to schedule.

The engine glue (NOT upstream; vllm/v1/engine/core.py at the oracle's commit):
  - fake model runner: a request whose chunk is not a partial prefill samples 1 token, or with
    drafts scheduled 1 + accepted, where accepted is servesim's draw (scheduler/spec_decode.hpp
    SpecDecodeConfig::accepted, ported below): u from hash_combine(hash_combine(seed, id),
    generated) counts the positions a < drafts with u < rates[a]. id is the request's index in
    arrival order (tests/oracle_common.hpp load_requests), generated its output tokens before
    this output.
  - sync (EngineCore.step + post_step): after update_from_output of a step that ran a model,
    the drafter's proposals come back through Scheduler.update_draft_token_ids: k draft ids for
    every request of the batch (the model runner's input batch is the scheduled requests; the
    scheduler itself drops those of finished requests and partial prefills). The drafter always
    proposes k tokens (an n-gram drafter that finds no match proposes fewer; not emulated).
  - async (EngineCore.step_with_batch_queue, batch queue of 2, the GPU always busy, as run_v1.py):
    no draft ids reach the scheduler (post_step skips them under async scheduling);
    AsyncScheduler's placeholder drafts stand in.
Python 3 standard library only; vLLM's modules come from the oracle folder.
"""
import argparse
import importlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# $SERVESIM_SHARED, else the folder beside the checkout (as tests/shared_data.hpp).
DEFAULT_ORACLE = os.path.join(
    os.environ.get("SERVESIM_SHARED") or
    os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared"), "vllm-oracle")

DEFAULTS = dict(
    block_size=16,
    num_gpu_blocks=1000,  # includes the reserved null block 0, as run_v1.py
    max_num_batched_tokens=2048,
    max_num_scheduled_tokens=None,
    max_num_seqs=128,
    max_model_len=4096,
    long_prefill_token_threshold=0,
    enable_prefix_caching=False,
    enable_chunked_prefill=True,
    async_scheduling=False,
    policy="fcfs",
    scheduler_reserve_full_isl=True,
    step_duration_s=None,
    max_steps=200,
    speculative=None,
    max_loras=None,
    batch_queue_size=None,
)

SPEC_METHODS = ("ngram", "eagle", "eagle3", "mtp", "draft_model")

# servesim's util/hash.hpp (SplitMix64's finaliser and its combiner), in 64-bit arithmetic.
MASK64 = (1 << 64) - 1


def mix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def hash_combine(seed, v):
    return mix64(seed ^ ((mix64(v) + 0x632BE59BD9B4E019 + ((seed << 6) & MASK64) + (seed >> 2))
                         & MASK64))


def accepted_drafts(spec, req_id, generated, drafts):
    """servesim's SpecDecodeConfig::accepted: the drafts a verification accepts."""
    h = hash_combine(hash_combine(spec["seed"] & MASK64, req_id & 0xFFFFFFFF),
                     generated & 0xFFFFFFFF)
    u = (h >> 11) * 2.0 ** -53
    rates = spec["acceptance_rates"]
    a = 0
    while a < drafts and a < len(rates) and u < rates[a]:
        a += 1
    return a


class Oracle:
    """vLLM's modules (the oracle's stubs and byte-identical upstream files), imported once."""

    def __init__(self, oracle_dir):
        paths = [os.path.join(oracle_dir, "pystubs"), os.path.join(oracle_dir, "v1", "src"),
                 oracle_dir]
        for p in reversed(paths):
            if p not in sys.path:
                sys.path.insert(0, p)
        for name, module in (
                ("torch", "torch"),  # the oracle's stub
                ("common", "common"),
                ("config", "vllm.config"),
                ("hashing", "vllm.utils.hashing"),
                ("params", "vllm.sampling_params"),
                ("kv_cache_utils", "vllm.v1.core.kv_cache_utils"),
                ("kvi", "vllm.v1.kv_cache_interface"),
                ("scheduler", "vllm.v1.core.sched.scheduler"),
                ("async_scheduler", "vllm.v1.core.sched.async_scheduler"),
                ("outputs", "vllm.v1.outputs"),
                ("request", "vllm.v1.request"),
                ("structured_output", "vllm.v1.structured_output")):
            setattr(self, name, importlib.import_module(module))
        self.sha256 = self.hashing.sha256
        self.SamplingParams = self.params.SamplingParams
        self.Scheduler = self.scheduler.Scheduler
        self.AsyncScheduler = self.async_scheduler.AsyncScheduler
        self.DraftTokenIds = self.outputs.DraftTokenIds
        self.ModelRunnerOutput = self.outputs.ModelRunnerOutput
        self.Request = self.request.Request
        self.RequestStatus = self.request.RequestStatus
        self.StructuredOutputManager = self.structured_output.StructuredOutputManager


class SpeculativeConfig:
    """What the scheduler reads of vllm/config/speculative.py's SpeculativeConfig."""

    def __init__(self, method, num_speculative_tokens):
        if method not in SPEC_METHODS:
            raise ValueError("speculative.method %r: one of %s" % (method, ", ".join(SPEC_METHODS)))
        self.method = method
        self.num_speculative_tokens = int(num_speculative_tokens)

    def use_eagle(self):  # upstream also counts "dflash"
        return self.method in ("eagle", "eagle3", "mtp")

    def uses_draft_model(self):
        return self.method == "draft_model"


class LoRAConfig:
    def __init__(self, max_loras):
        self.max_loras = int(max_loras)


class LoRARequest:
    """What the scheduler, block hasher and block pool read of vllm.lora.request.LoRARequest."""

    def __init__(self, lora_int_id):
        self.lora_int_id = int(lora_int_id)
        self.lora_name = "lora-%d" % self.lora_int_id
        self.name = self.lora_name
        self.adapter_id = self.lora_int_id


def make_scheduler(o, cfg):
    bs = cfg["block_size"]
    spec = cfg["speculative"]
    sched_cfg = o.config.SchedulerConfig(
        max_num_seqs=cfg["max_num_seqs"],
        max_num_batched_tokens=cfg["max_num_batched_tokens"],
        max_num_scheduled_tokens=cfg["max_num_scheduled_tokens"],
        max_model_len=cfg["max_model_len"],
        long_prefill_token_threshold=cfg["long_prefill_token_threshold"],
        enable_chunked_prefill=cfg["enable_chunked_prefill"],
        async_scheduling=cfg["async_scheduling"],
        policy=cfg["policy"],
        scheduler_reserve_full_isl=cfg["scheduler_reserve_full_isl"],
    )
    cache_cfg = o.config.CacheConfig(block_size=bs, num_gpu_blocks=cfg["num_gpu_blocks"],
                                     enable_prefix_caching=cfg["enable_prefix_caching"])
    vcfg = o.config.VllmConfig(
        scheduler_config=sched_cfg, cache_config=cache_cfg,
        model_config=o.config.ModelConfig(max_model_len=cfg["max_model_len"]),
        parallel_config=o.config.ParallelConfig(),
        speculative_config=(SpeculativeConfig(spec["method"], spec["num_speculative_tokens"])
                            if spec else None),
        lora_config=LoRAConfig(cfg["max_loras"]) if cfg["max_loras"] else None)
    # One full-attention group, as upstream tests/v1/core/utils.py::create_scheduler and
    # run_v1.py (no group flagged is_eagle_group: the coordinator then applies EAGLE's prefix-cache
    # rule to every group, as upstream does for a model whose drafter shares the target's groups).
    full = o.kvi.FullAttentionSpec(block_size=bs, num_kv_heads=1, head_size=1,
                                   dtype=o.torch.float32)
    groups = [o.kvi.KVCacheGroupSpec(["layer"], full)]
    if cfg.get("sliding_window"):
        # A hybrid model's two groups (kv_cache_utils._get_kv_cache_groups_uniform_page_size):
        # the sliding-window layers' first, as gpt-oss's layer 0 has the window.
        swa = o.kvi.SlidingWindowSpec(block_size=bs, num_kv_heads=1, head_size=1,
                                      dtype=o.torch.float32,
                                      sliding_window=int(cfg["sliding_window"]))
        groups = [o.kvi.KVCacheGroupSpec(["swa"], swa), o.kvi.KVCacheGroupSpec(["full"], full)]
    n_mamba = int(cfg.get("mamba_groups") or 0)
    if n_mamba:
        if n_mamba < 1:
            raise ValueError("mamba_groups: at least 1")
        # Mode "none" keeps no per-block Mamba states to hit, so vLLM runs hybrid models without
        # the prefix cache (HybridKVCacheCoordinator's Mamba hits need mode "align" or "all").
        if cfg["enable_prefix_caching"]:
            raise ValueError("mamba_groups: needs enable_prefix_caching false (mode none)")
        if cfg.get("sliding_window"):
            raise ValueError("mamba_groups: not with sliding_window (no such model emulated)")
        # MambaBase.get_kv_cache_spec: the block is max_model_len tokens in mode "none"; a drafter
        # adds k state blocks (num_speculative_blocks), which MambaManager allocates up front.
        mamba = o.kvi.MambaSpec(block_size=cfg["max_model_len"], shapes=((1,),),
                                dtypes=(o.torch.float32,), mamba_cache_mode="none",
                                num_speculative_blocks=(int(spec["num_speculative_tokens"])
                                                        if spec else 0))
        # Layer order (kv_cache_utils groups layers as the model lists them): linear-attention
        # layers first, as Qwen3-Next's layer 0.
        groups = ([o.kvi.KVCacheGroupSpec(["mamba%d" % g], mamba) for g in range(n_mamba)] +
                  [o.kvi.KVCacheGroupSpec(["full"], full)])
    kv_cfg = o.kvi.KVCacheConfig(num_blocks=cfg["num_gpu_blocks"], kv_cache_tensors=[],
                                 kv_cache_groups=groups)
    # EngineCore hands the scheduler kv_cache_utils.resolve_kv_cache_block_sizes' block sizes:
    # for several groups the LCM of theirs (max_model_len with Mamba groups), used only for
    # block hashes and KV-load failures, neither of which a case here has. Kept at block_size
    # otherwise, as before (the helper reads a hash_block_size the oracle's CacheConfig lacks
    # when the prefix cache is on).
    sched_bs = hash_bs = bs
    if n_mamba:
        sched_bs, hash_bs = o.kv_cache_utils.resolve_kv_cache_block_sizes(kv_cfg, vcfg)
    cls = o.AsyncScheduler if cfg["async_scheduling"] else o.Scheduler
    return cls(vllm_config=vcfg, kv_cache_config=kv_cfg,
               structured_output_manager=o.StructuredOutputManager(vcfg),
               block_size=sched_bs, hash_block_size=hash_bs, log_stats=True)


def draft_id(req_idx, pos):
    return 700_000_000 + req_idx * 100_000 + pos  # any ids: the scheduler only counts them


class Engine:
    """EngineCore's step loop around vLLM's scheduler, a fake model runner and a fake drafter."""

    def __init__(self, o, cfg, reqs, out):
        self.o, self.cfg, self.reqs, self.out = o, cfg, reqs, out
        self.spec = cfg["speculative"]
        self.sched = make_scheduler(o, cfg)
        o.kv_cache_utils.init_none_hash(o.sha256)
        self.hasher = o.kv_cache_utils.get_request_block_hasher(cfg["block_size"], o.sha256)
        self.arr = o.common.arrival_steps(reqs, cfg["step_duration_s"])
        self.listing = {r["id"]: i for i, r in enumerate(reqs)}  # common.py's req_idx
        # Arrival order (step, time, listing): servesim's request ids.
        self.pending = sorted(range(len(reqs)), key=lambda i: (self.arr[i][0], self.arr[i][1], i))
        self.sim_id = {reqs[i]["id"]: k for k, i in enumerate(self.pending)}
        self.by_id = {}
        self.batch_queue = []  # async: [(scheduler_output, step, samplers)], oldest first
        self.finished_step = {}
        self.step = 0

    def k(self):
        return int(self.spec["num_speculative_tokens"]) if self.spec else 0

    def add_arrivals(self):
        o, arrived = self.o, []
        while self.pending and self.arr[self.pending[0]][0] <= self.step:
            i = self.pending.pop(0)
            r = self.reqs[i]
            req = o.Request(
                request_id=r["id"],
                prompt_token_ids=o.common.build_prompt(r, i, self.cfg["block_size"]),
                sampling_params=o.SamplingParams(max_tokens=int(r["max_tokens"])),
                pooling_params=None, arrival_time=self.arr[i][1],
                priority=int(r.get("priority", 0)), block_hasher=self.hasher,
                lora_request=LoRARequest(r["lora"]) if r.get("lora") else None)
            self.by_id[r["id"]] = req
            self.sched.add_request(req)
            arrived.append(r["id"])
        return arrived

    def model_runner_output(self, so, samplers):
        """One token per sampling request, 1 + accepted drafts for a verification."""
        req_ids = list(so.num_scheduled_tokens.keys())
        sampled, accepted = [], {}
        for rid in req_ids:
            r = self.by_id[rid]
            if rid not in samplers:
                sampled.append([])
                continue
            n = 1
            drafts = len(so.scheduled_spec_decode_tokens.get(rid, ()))
            if drafts:
                accepted[rid] = accepted_drafts(self.spec, self.sim_id[rid], r.num_output_tokens,
                                                drafts)
                n += accepted[rid]
            base = r.num_output_tokens
            sampled.append([self.o.common.output_token(self.listing[rid], base + j)
                            for j in range(n)])
        mro = self.o.ModelRunnerOutput(req_ids=req_ids,
                                       req_id_to_index={r: i for i, r in enumerate(req_ids)},
                                       sampled_token_ids=sampled)
        return mro, accepted

    def process(self, so, so_step, samplers, rec):
        mro, accepted = self.model_runner_output(so, samplers)
        before = {rid: len(self.by_id[rid]._output_token_ids) for rid in so.num_scheduled_tokens}
        eco = self.sched.update_from_output(so, mro)
        outputs = []
        for rid in sorted(so.num_scheduled_tokens):
            tokens = len(self.by_id[rid]._output_token_ids) - before[rid]
            if tokens == 0:
                continue
            o = {"id": rid, "tokens": tokens}
            if rid in accepted:
                o["accepted"] = accepted[rid]
            outputs.append(o)
        fin = []
        for outs in eco.values():
            for eo in outs.outputs:
                if eo.finish_reason is not None:
                    rid = eo.request_id
                    fin.append({"id": rid, "reason": str(eo.finish_reason),
                                "num_output_tokens": len(self.by_id[rid]._output_token_ids)})
                    self.finished_step[rid] = self.step
        rec["processed_output_of_step"] = so_step
        rec["finished"] = fin
        rec["outputs"] = outputs

    def propose_drafts(self, so, rec):
        """EngineCore.post_step (sync only): the drafter's k ids for each request of the batch."""
        if self.cfg["async_scheduling"] or not self.spec or so.total_num_scheduled_tokens == 0:
            return
        req_ids = list(so.num_scheduled_tokens.keys())
        drafts = [[draft_id(self.listing[rid], j) for j in range(self.k())] for rid in req_ids]
        self.sched.update_draft_token_ids(self.o.DraftTokenIds(req_ids, drafts))
        rec["drafted"] = sorted(rid for rid, r in self.sched.requests.items() if r.spec_token_ids)

    def scheduled_items(self, so, status_before):
        o = self.o
        before = dict(zip(so.scheduled_cached_reqs.req_ids,
                          so.scheduled_cached_reqs.num_computed_tokens))
        for d in so.scheduled_new_reqs:
            before[d.req_id] = d.num_computed_tokens
        items = []
        for rid, n in so.num_scheduled_tokens.items():
            r = self.sched.requests[rid]
            c, T, P = before[rid], r.num_tokens, r.num_prompt_tokens
            st = status_before.get(rid)
            kind = ("running" if st == o.RequestStatus.RUNNING else
                    "resumed" if st == o.RequestStatus.PREEMPTED else "new")
            if r.num_output_tokens == 0 and c + n <= P:
                phase = "prefill"
            elif c >= T - 1:
                phase = "decode"
            else:
                phase = "recompute"
            it = {"id": rid, "n": n, "computed_before": c, "phase": phase, "kind": kind,
                  "prompt_len": P, "num_tokens": T, "samples": not r.is_prefill_chunk,
                  "spec": len(so.scheduled_spec_decode_tokens.get(rid, ()))}
            if kind != "running":
                it["cached"] = c
            if r.lora_request is not None:
                it["lora"] = r.lora_request.lora_int_id
            items.append(it)
        return items

    def schedule_step(self, rec):
        status_before = {rid: r.status for rid, r in self.sched.requests.items()}
        so = self.sched.schedule()
        items = self.scheduled_items(so, status_before)
        samplers = {it["id"] for it in items if it["samples"]}
        rec["scheduled"] = items
        rec["num_batched_tokens"] = so.total_num_scheduled_tokens
        rec["preempted"] = sorted(so.preempted_req_ids)
        rec["kv_free_after_schedule"] = self.sched.kv_cache_manager.block_pool.get_num_free_blocks()
        if self.queue_size() > 1:
            # step_with_batch_queue: block on the oldest batch only when the queue is full or
            # nothing was scheduled.
            self.batch_queue.append((so, self.step, samplers))
            if len(self.batch_queue) >= self.queue_size() or so.total_num_scheduled_tokens == 0:
                self.process(*self.batch_queue.pop(0), rec)
        else:
            self.process(so, self.step, samplers, rec)
            self.propose_drafts(so, rec)

    def queue_size(self):
        q = self.cfg["batch_queue_size"]
        return q if q else (2 if self.cfg["async_scheduling"] else 1)

    def write(self, rec):
        self.out.write(self.o.common.dumps(rec) + "\n")

    def run(self):
        cfg, sched = self.cfg, self.sched
        dt = cfg["step_duration_s"]
        usable = cfg["num_gpu_blocks"] - 1
        while self.step < cfg["max_steps"]:
            rec = {"step": self.step}
            if dt:
                rec["time"] = round(self.step * dt, 9)
            rec["arrived"] = self.add_arrivals()
            if not sched.has_requests() and not self.batch_queue:
                if not self.pending:
                    break
                rec["idle"] = True  # nothing to run until the next arrival
                self.write(rec)
                self.step += 1
                continue
            if not sched.has_requests():
                rec["schedule_called"] = False  # async: only the oldest batch to wait for
                self.process(*self.batch_queue.pop(0), rec)
            else:
                self.schedule_step(rec)
            free = sched.kv_cache_manager.block_pool.get_num_free_blocks()
            rec["kv"] = {"free": free, "used": usable - free, "usable": usable}
            rec["running"] = [r.request_id for r in sched.running]
            rec["waiting"] = ([r.request_id for r in sched.waiting] +
                              [r.request_id for r in sched.skipped_waiting])
            self.write(rec)
            self.step += 1
        while self.batch_queue:  # drain the async queue
            rec = {"step": self.step, "drain": True}
            self.process(*self.batch_queue.pop(0), rec)
            self.write(rec)
            self.step += 1
        self.write({"summary": True, "steps": self.step, "finished_step": self.finished_step,
                    "unfinished": list(sched.requests)})


def read_config(o, path):
    cfg = dict(DEFAULTS)
    cfg.update(o.common.load_json(path))
    spec = cfg["speculative"]
    if spec:
        spec = dict(spec)
        spec.setdefault("seed", 0)
        spec.setdefault("acceptance_rates", [])
        SpeculativeConfig(spec["method"], spec["num_speculative_tokens"])  # validates
        cfg["speculative"] = spec
    return cfg


def run(o, workload_path, config_path, out_path):
    """One case: WORKLOAD_PATH and CONFIG_PATH through vLLM's scheduler into OUT_PATH ("-":
    stdout). O: an Oracle."""
    cfg = read_config(o, config_path)
    reqs = o.common.load_json(workload_path)["requests"]
    out = sys.stdout if out_path == "-" else open(out_path, "w")
    try:
        Engine(o, cfg, reqs, out).run()
    finally:
        if out is not sys.stdout:
            out.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workload")
    ap.add_argument("config")
    ap.add_argument("-o", "--out", default="-")
    ap.add_argument("--oracle", default=DEFAULT_ORACLE, help="the vllm-oracle folder")
    args = ap.parse_args()
    run(Oracle(args.oracle), args.workload, args.config, args.out)


if __name__ == "__main__":
    main()
