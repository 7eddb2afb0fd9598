// The text reports (analysis/report.hpp): `run`'s one-screen summary, `compare`'s table and
// verdict, and the warnings both print when an answer is not what it seems.
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "analysis/report.hpp"
#include "analysis/vllm_args.hpp"
#include "scheduler/policy.hpp"
#include "util/format.hpp"

namespace servesim {

namespace {

// V with DECIMALS in WIDTH columns, or "-" when undefined.
std::string cell(double v, int width, int decimals) {
  return std::isfinite(v) ? format("%*.*f", width, decimals, v) : format("%*s", width, "-");
}

std::string reasons_text(const RunSummary& s) {
  std::string text;
  for (int i = 1; i < kNumRejectReasons; ++i) {
    if (s.rejected_by_reason[i] == 0) continue;
    text += format("%s%s %llu", text.empty() ? "" : ", ", reason_code(RejectReason(i)),
                   static_cast<unsigned long long>(s.rejected_by_reason[i]));
  }
  return text;
}

void print_header(std::ostream& out, const RunResult& r, const std::string& workload,
                  bool default_scheduler) {
  const SimConfig& c = r.config;
  const RunSummary& s = r.summary;
  const std::vector<PoolSummary>& pools = r.fleet.pools;
  out << "servesim run: " << c.model.name << " on ";
  if (pools.size() > 1) {  // a mixed or disaggregated fleet: every pool, not the first's GPU
    for (size_t k = 0; k < pools.size(); ++k)
      out << (k ? " + " : "") << pools[k].replicas << "x " << pools[k].name;
    out << " (TP " << c.tp << " in the first)";
  } else {
    out << replica_layout_text(c);
  }
  if (r.fleet.autoscale.enabled) {
    out << ", " << r.fleet.autoscale.min_replicas << " to " << r.fleet.autoscale.max_replicas
        << " replicas, autoscaled (" << r.fleet.router << ")";
  } else if (r.fleet.num_replicas > 1) {
    out << ", " << r.fleet.num_replicas << " replicas (" << r.fleet.router << ")";
  }
  if (c.expert_parallel) out << ", experts spread over " << c.ep() << " GPUs (EP" << c.ep() << ")";
  out << ", " << policy_name(c.scheduler.policy)
      << (default_scheduler ? " (the default scheduler; max_num_batched_tokens "
                            : " (max_num_batched_tokens ")
      << c.scheduler.max_num_batched_tokens << ", max_num_seqs " << c.scheduler.max_num_seqs
      << ", max_model_len " << c.scheduler.max_model_len << ")\n";
  out << "engine: " << engine_text(c) << "; hardware: " << arch_name(c.gpu.arch) << ", "
      << c.hardware_source << "\n";
  if (pools.size() > 1) out << "first pool (" << pools.front().name << "): ";
  out << format(
      "KV cache: %lld blocks of %d tokens (%.2f GiB per GPU%s); weights %.2f GiB per GPU%s\n",
      static_cast<long long>(r.memory.num_gpu_blocks), c.scheduler.block_size,
      double(r.memory.num_gpu_blocks) * r.memory.kv_bytes_per_block / 1073741824.0,
      r.memory.overridden ? ", --num-gpu-blocks" : "", r.memory.weight_bytes / 1073741824.0,
      r.memory.stages > 1 ? format(" (pipeline stage %d of %d, the one with the fewest blocks)",
                                   r.memory.stage + 1, r.memory.stages)
                                .c_str()
                          : "");
  out << "workload: " << workload << "\n";
  out << format("requests: %llu total, %llu completed, %llu rejected",
                static_cast<unsigned long long>(s.total),
                static_cast<unsigned long long>(s.completed),
                static_cast<unsigned long long>(s.rejected));
  if (s.rejected > 0) out << " (" << reasons_text(s) << ")";
  out << "\n\n";
}

// The per-request statistics, with the percentiles --metric-percentiles asked for (or mean, p50,
// p90, p95, p99, max).
void print_stats_table(std::ostream& out, const RunSummary& s) {
  const bool custom = !s.ttft_ms.extra.empty();
  std::string head = format("%-16s %10s", "metric", "mean");
  if (custom) {
    for (const auto& [q, v] : s.ttft_ms.extra)
      head += format(" %10s", percentile_name(q).c_str());
  } else {
    head += format(" %10s %10s %10s %10s", "p50", "p90", "p95", "p99");
  }
  out << head << format(" %10s\n", "max");
  auto row = [&](const char* name, const Stats& st) {
    out << format("%-16s ", name) << cell(st.mean, 10, 1);
    if (custom) {
      for (const auto& [q, v] : st.extra)
        out << " " << cell(v, 10, 1);
    } else {
      for (double v : {st.p50, st.p90, st.p95, st.p99})
        out << " " << cell(v, 10, 1);
    }
    out << " " << cell(st.max, 10, 1) << "\n";
  };
  row("ttft_ms", s.ttft_ms);
  row("itl_ms", s.itl_ms);
  row("tpot_ms", s.tpot_ms);
  row("e2e_ms", s.e2e_ms);
  row("queue_ms", s.queue_ms);
  row("otps_tok_per_s", s.otps);
}

void print_use(std::ostream& out, const RunSummary& s) {
  out << "\nOTPS (CloudWatch, ratio of p50s): " << cell(s.otps_p50_ratio, 0, 1) << " tok/s\n";
  out << format(
      "throughput: %.2f req/s, %.0f output tok/s, %.0f total tok/s over %.1f s "
      "(%lld input, %lld output tokens)\n",
      s.requests_per_s, s.output_tokens_per_s, s.total_tokens_per_s, s.makespan_s,
      static_cast<long long>(s.input_tokens), static_cast<long long>(s.output_tokens));
  if (std::isfinite(s.goodput_req_s)) {
    out << format("goodput: %.2f req/s meet every --goodput SLO\n", s.goodput_req_s);
  }
  out << format(
      "GPU: a step in flight %.1f%% of the time (not saturation: see MFU, MBU, KV and "
      "the queue), MFU %.1f%%, MBU %.1f%%\n",
      s.step_time_fraction * 100, s.mfu * 100, s.mbu * 100);
  const EnergySummary& e = s.energy;
  if (std::isfinite(e.energy_j)) {
    const std::string peak = s.makespan_s < kPowerWindowS
                                 ? std::string("its mean: the run is shorter than a window")
                                 : format("%.0f W over %g s", e.peak_power_w, kPowerWindowS);
    out << format(
        "energy (GPUs only): %.1f kJ, mean %.0f W (idle %.0f W), peak %s; %s J per output "
        "token, %s J per request\n",
        e.energy_j / 1e3, e.mean_power_w, e.idle_power_w, peak.c_str(),
        cell(e.j_per_output_token, 0, 3).c_str(), cell(e.j_per_request, 0, 1).c_str());
  } else if (s.steps > 0) {
    out << "energy: unknown (a GPU file without tdp_w and idle_w)\n";
  }
  auto pct = [](double v) { return std::isfinite(v) ? format("%.1f%%", v * 100) : "-"; };
  out << "KV usage: mean " << pct(s.kv_usage_mean) << ", p50 " << pct(s.kv_usage_p50) << ", p99 "
      << pct(s.kv_usage_p99) << ", max " << pct(s.kv_usage_max)
      << "; waiting requests (time-weighted): mean " << cell(s.queue_len.mean, 0, 1) << ", p50 "
      << cell(s.queue_len.p50, 0, 0) << ", p99 " << cell(s.queue_len.p99, 0, 0) << ", max "
      << cell(s.queue_len.max, 0, 0) << "\n";
  out << format("steps: %llu (prefill-only %llu, decode-only %llu, mixed %llu); preemptions %llu\n",
                static_cast<unsigned long long>(s.steps),
                static_cast<unsigned long long>(s.prefill_only_steps),
                static_cast<unsigned long long>(s.decode_only_steps),
                static_cast<unsigned long long>(s.mixed_steps),
                static_cast<unsigned long long>(s.preemptions));
  const PrefixCacheSummary& p = s.prefix_cache;
  if (p.enabled) {
    out << "prefix cache: hit rate " << pct(p.hit_rate())
        << format(
               " (vLLM's: %lld of %lld prompt tokens looked up, a waiting request at each "
               "retry); %lld tokens (",
               static_cast<long long>(p.hits), static_cast<long long>(p.queries),
               static_cast<long long>(p.cached_prompt_tokens))
        << pct(s.input_tokens > 0 ? double(p.cached_prompt_tokens) / double(s.input_tokens) : NAN)
        << format(" of the completed prompts) found cached at first scheduling; %lld evictions\n",
                  static_cast<long long>(p.evictions));
  }
  const KvOffloadSummary& k = s.kv_offload;
  if (k.enabled) {
    const double gb = 1e9;
    const double any_hit = p.queries > 0 ? double(p.hits + k.counts.hits) / double(p.queries) : NAN;
    out << format("KV offload (%s, %.1f GiB: %lld CPU blocks of %lld tokens): CPU hit rate ",
                  offload_backend_name(k.backend), k.cpu_bytes / 1073741824.0,
                  static_cast<long long>(k.cpu_blocks), static_cast<long long>(k.block_tokens))
        << pct(k.hit_rate())
        << format(" (%lld of the %lld prompt tokens the GPU cache missed), GPU or CPU ",
                  static_cast<long long>(k.counts.hits), static_cast<long long>(k.counts.queries))
        << pct(any_hit)
        << format(
               "; %lld loads (%lld tokens, %.2f GB per GPU, ms per request mean %s p99 %s), "
               "%lld blocks stored (%.2f GB per GPU); host link busy %.1f s; %lld CPU "
               "evictions, %lld lookups deferred, %lld stores refused for room\n",
               static_cast<long long>(k.counts.loads),
               static_cast<long long>(k.counts.loaded_tokens), k.counts.loaded_bytes / gb,
               cell(k.load_ms.mean, 0, 2).c_str(), cell(k.load_ms.p99, 0, 2).c_str(),
               static_cast<long long>(k.counts.stored_blocks), k.counts.stored_bytes / gb,
               k.link_busy_s, static_cast<long long>(k.evictions),
               static_cast<long long>(k.counts.deferrals),
               static_cast<long long>(k.counts.store_failures));
  }
  const LoraSummary& l = s.lora;
  if (l.enabled) {
    out << format(
        "LoRA (max_loras %d, max_cpu_loras %d, rank %d): %lld requests asked for %lld "
        "adapters; %lld admissions passed over for an adapter slot; %lld adapters "
        "read from disk, %lld copied to the GPU, the steps waited %.2f s for them; "
        "adapter kernels %.2f s\n",
        l.max_loras, l.max_cpu_loras, l.rank, static_cast<long long>(l.requests),
        static_cast<long long>(l.adapters), static_cast<long long>(l.skips),
        static_cast<long long>(l.disk_loads), static_cast<long long>(l.activations), l.load_s,
        l.kernel_s);
  }
  const SpecDecodeSummary& d = s.spec_decode;
  if (d.enabled) {
    out << format(
        "speculative decoding (%s, k=%d): mean acceptance length %s (1 + accepted / "
        "verifications), acceptance rate %s (%lld of %lld drafts), per position",
        spec_method_name(d.method), d.num_speculative_tokens,
        cell(d.mean_acceptance_length(), 0, 2).c_str(), pct(d.acceptance_rate()).c_str(),
        static_cast<long long>(d.counts.num_accepted_tokens),
        static_cast<long long>(d.counts.num_draft_tokens));
    for (int i = 0; i < d.num_speculative_tokens; ++i)
      out << " " << pct(d.position_rate(i));
    out << "; effective TPOT p50 " << cell(s.tpot_ms.p50, 0, 2) << " ms\n";
  }
}

}  // namespace

std::vector<std::string> run_warnings(const RunResult& r) {
  const RunSummary& s = r.summary;
  const Overload& o = s.overload;
  std::vector<std::string> w;
  if (o.overloaded) {
    w.push_back(format(
        "overloaded: requests in the system (waiting and running) went from %lld at the median "
        "arrival to %lld at the last, %lld of them waiting to start (%lld at the median); over "
        "the later half of the arrivals %.0f%% as many requests finished as arrived; arrivals "
        "%.2f req/s, completions %.2f req/s; the last request finished %.1f s after the last "
        "arrival. Latencies grow with the run's length: lower --request-rate or add replicas.",
        static_cast<long long>(o.in_system_at_median_arrival),
        static_cast<long long>(o.in_system_at_last_arrival),
        static_cast<long long>(o.waiting_at_last_arrival),
        static_cast<long long>(o.waiting_at_median_arrival), o.late_completion_ratio() * 100,
        o.arrival_rate_req_s, o.completion_rate_req_s, o.drain_s));
  }
  for (const std::string& router : r.fleet.router_warnings)
    w.push_back(router);
  if (s.rejected > 0) {
    w.push_back(format(
        "%llu of %llu requests (%.1f%%) were rejected (%s): they are in no latency "
        "statistic.",
        static_cast<unsigned long long>(s.rejected), static_cast<unsigned long long>(s.total),
        s.rejected_share() * 100, reasons_text(s).c_str()));
  }
  for (const std::string& m : unmodelled_interactions(r.config))
    w.push_back("not modelled: " + m);
  for (const std::string& m : approximations_used(r.config))
    w.push_back("approximated (servesim list vllm-args): " + m);
  return w;
}

std::vector<std::string> unmodelled_interactions(const SimConfig& c) {
  std::vector<std::string> w;
  const SpecMethod m = c.scheduler.spec.enabled() ? c.scheduler.spec.method : SpecMethod::kNone;
  if (m == SpecMethod::kNgram) {
    w.push_back(
        "n-gram speculation proposes k drafts at every step here; vLLM's finds none when the "
        "request's tokens hold no match, and then verifies nothing (lower the acceptance rate to "
        "fold such steps in)");
  }
  if (m != SpecMethod::kNone && c.lora.enabled) {
    w.push_back(
        "the drafter runs without the requests' LoRA adapters (their kernels are costed "
        "for the target's tokens only)");
  }
  if (m != SpecMethod::kNone && c.cost_model == "table") {
    w.push_back(
        "the drafter's passes are costed on the roofline: the table's profiles measure "
        "the target model only");
  }
  if (c.lora.enabled && c.cost_model == "table") {
    w.push_back(
        "the LoRA kernels are not costed (the table's profiles have none); only the "
        "adapters' loads are");
  }
  if (c.offload.enabled() && c.lora.enabled) {
    w.push_back(
        "the CPU KV tier keys blocks by content and adapter, as the prefix cache does; "
        "LMCache's own per-adapter keys are not modelled");
  }
  return w;
}

bool comparable(const RunResult& r) {
  return !r.summary.overload.overloaded && !rejection_heavy(r.summary) && r.summary.completed > 0;
}

// A fleet's routing: imbalance, then one line per replica.
void print_fleet(std::ostream& out, const FleetSummary& f) {
  // An imbalance over nothing (no queue ever formed) is undefined: "-", not "nan".
  out << format("\nfleet: %d replicas behind %s; load imbalance (max/mean) busy %s, queue %s\n",
                f.autoscale.enabled ? f.autoscale.peak_replicas : f.num_replicas, f.router.c_str(),
                cell(f.busy_imbalance, 0, 2).c_str(), cell(f.queue_imbalance, 0, 2).c_str());
  if (f.kv_transfers > 0) {
    out << format("KV transfers: %llu, mean %.2f ms and %.1f MB per GPU each\n",
                  static_cast<unsigned long long>(f.kv_transfers),
                  f.kv_transfer_s / double(f.kv_transfers) * 1e3,
                  f.kv_transfer_bytes / double(f.kv_transfers) / 1e6);
  }
  if (!f.pools.empty()) {
    out << format("%-18s %8s %8s %9s %9s %8s %8s %6s\n", "pool", "replicas", "requests", "TTFT p50",
                  "TTFT p99", "ITL p50", "ITL p99", "step%");
    for (const PoolSummary& p : f.pools) {
      out << format("%-18s %8d %8llu", p.name.c_str(), p.replicas,
                    static_cast<unsigned long long>(p.requests))
          << " " << cell(p.ttft_ms.p50, 9, 1) << " " << cell(p.ttft_ms.p99, 9, 1) << " "
          << cell(p.itl_ms.p50, 8, 1) << " " << cell(p.itl_ms.p99, 8, 1) << " "
          << cell(p.step_time_fraction * 100, 6, 1) << "\n";
    }
  }
  const AutoscaleSummary& a = f.autoscale;
  if (a.enabled) {
    out << "autoscaler: "
        << (a.metric == "schedule" ? std::string("a schedule of replica counts")
                                   : format("%s target %g per replica", a.metric.c_str(), a.target))
        << format(
               ", %d to %d replicas, a new one serving after %.0f s; peak %d, %d started, "
               "%d removed; %.2f replica-hours\n",
               a.min_replicas, a.max_replicas, a.provision_s, a.peak_replicas, a.scale_ups,
               a.scale_downs, a.replica_hours);
  }
  out << format("%-8s %-18s %8s %9s %9s %8s %6s %7s %8s %8s\n", "replica", "pool", "requests",
                "TTFT p50", "TTFT p99", "ITL p50", "step%", "KV%", "queue", "prefix%");
  for (size_t i = 0; i < f.replicas.size(); ++i) {
    const RunSummary& q = f.replicas[i];
    if (a.enabled && f.routed[i] == 0) continue;  // a slot the autoscaler never filled
    out << format("%-8zu %-18s %8llu", i, i < f.pool.size() ? f.pool[i].c_str() : "",
                  static_cast<unsigned long long>(f.routed[i]))
        << " " << cell(q.ttft_ms.p50, 9, 1) << " " << cell(q.ttft_ms.p99, 9, 1) << " "
        << cell(q.itl_ms.p50, 8, 1) << " " << cell(q.step_time_fraction * 100, 6, 1) << " "
        << cell(q.kv_usage_mean * 100, 7, 1) << " " << cell(q.queue_len.mean, 8, 1) << " "
        << cell(q.prefix_cache.hit_rate() * 100, 8, 1) << "\n";
  }
  if (f.kv_transfers > 0) {
    out << "(a prefill replica's TTFT is until its prompt is computed; a decode replica's counts "
           "from the KV's arrival)\n";
  }
}

void print_run_summary(std::ostream& out, const RunResult& r, const std::string& workload,
                       bool default_scheduler) {
  print_header(out, r, workload, default_scheduler);
  print_stats_table(out, r.summary);
  print_use(out, r.summary);
  if (r.fleet.num_replicas > 1 || r.fleet.autoscale.enabled) print_fleet(out, r.fleet);
  for (const std::string& w : run_warnings(r))
    out << "WARNING: " << w << "\n";
}

std::string engine_text(const SimConfig& c) {
  std::string t = std::string(engine_name(c.engine));
  if (c.pp > 1) {
    t += format(
        " (a batch queue of %d through %d pipeline stages; no request scheduled again while "
        "its token is in flight)",
        c.pp, c.pp);
  } else if (has_batch_queue(c.engine)) {
    t += c.scheduler.async_scheduling ? " (async scheduling)" : " (sync)";
  }
  return t + format(", API server %.1f ms", c.frontend_latency_s * 1e3);
}

bool max_num_seqs_capped(const RunResult& r) {
  const SchedulerConfig& s = r.config.scheduler;
  return r.config.engine == Engine::kV1 && s.max_num_seqs == s.max_num_batched_tokens;
}

std::string row_differences(const RunResult& r, const RunResult& reference) {
  const SimConfig &c = r.config, &ref = reference.config;
  std::string d;
  const auto add = [&d](const std::string& what) { d += (d.empty() ? "" : ", ") + what; };
  if (c.engine != ref.engine) add(std::string("engine ") + engine_name(c.engine));
  if (c.engine == ref.engine && c.scheduler.async_scheduling != ref.scheduler.async_scheduling) {
    add(c.scheduler.async_scheduling ? "async" : "sync");
  }
  if (c.gpu.name != ref.gpu.name || c.tp != ref.tp || c.pp != ref.pp) add(replica_layout_text(c));
  if (c.cost_model != ref.cost_model || c.hardware_source != ref.hardware_source) {
    add("hardware fit");
  } else if (c.engine == ref.engine && c.engine_source != ref.engine_source) {
    add("engine terms");
  }
  // A max_num_seqs V1 capped at the row's own token budget (max_num_seqs_capped) is the budget's
  // doing, as its KV blocks are: the header lists it. Any other difference is marked.
  if (c.scheduler.max_num_seqs != ref.scheduler.max_num_seqs &&
      !(max_num_seqs_capped(r) && c.scheduler.max_num_seqs < ref.scheduler.max_num_seqs)) {
    add("max_num_seqs " + std::to_string(c.scheduler.max_num_seqs));
  }
  if (c.scheduler.max_model_len != ref.scheduler.max_model_len) {
    add("max_model_len " + std::to_string(c.scheduler.max_model_len));
  }
  if (c.frontend_latency_s != ref.frontend_latency_s) add("API server");
  return d;
}

void print_compare_table(std::ostream& out, const std::vector<RunResult>& runs) {
  out << format("%-14s %9s %9s %8s %8s %8s %9s %8s %9s %6s %5s %7s %8s  %s\n", "scheduler",
                "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "TPOT p50", "E2E p50", "OTPS p50",
                "out tok/s", "step%", "MFU%", "preempt", "rejected", "notes");
  out << format("%-14s %9s %9s %8s %8s %8s %9s %8s %9s %6s %5s %7s %8s\n", "", "ms", "ms", "ms",
                "ms", "ms", "ms", "tok/s", "", "", "", "", "");
  for (const RunResult& r : runs) {
    const RunSummary& s = r.summary;
    std::string notes;
    if (s.overload.overloaded) notes = "OVERLOADED";
    if (s.rejected > 0) {
      notes += format("%srejects %.1f%%", notes.empty() ? "" : ", ", s.rejected_share() * 100);
    }
    const std::string differs = row_differences(r, runs.front());
    if (!differs.empty()) notes += (notes.empty() ? "* " : ", * ") + differs;
    out << format("%-14s", run_label(r).c_str());
    const std::pair<double, int> cells[] = {
        {s.ttft_ms.p50, 9}, {s.ttft_ms.p99, 9}, {s.itl_ms.p50, 8}, {s.itl_ms.p99, 8},
        {s.tpot_ms.p50, 8}, {s.e2e_ms.p50, 9},  {s.otps.p50, 8}};
    for (const auto& [v, width] : cells)
      out << " " << cell(v, width, 1);
    out << " " << cell(s.output_tokens_per_s, 9, 0) << " " << cell(s.step_time_fraction * 100, 6, 1)
        << " " << cell(s.mfu * 100, 5, 1)
        << format(" %7llu %8llu", static_cast<unsigned long long>(s.preemptions),
                  static_cast<unsigned long long>(s.rejected));
    if (!notes.empty()) out << "  " << notes;
    out << "\n";
  }
}

std::string compare_verdict(const std::vector<RunResult>& runs) {
  if (runs.size() < 2) return "";
  const RunResult* best_ttft = nullptr;
  const RunResult* best_itl = nullptr;
  size_t excluded = 0;
  for (const RunResult& r : runs) {
    if (!comparable(r)) {
      ++excluded;
      continue;
    }
    if (!best_ttft || r.summary.ttft_ms.p50 < best_ttft->summary.ttft_ms.p50) best_ttft = &r;
    if (!best_itl || r.summary.itl_ms.p99 < best_itl->summary.itl_ms.p99) best_itl = &r;
  }
  if (best_ttft == nullptr) {
    return "No run is comparable: each is overloaded (its queue grew for as long as requests "
           "arrived) or rejects more than 1% of its requests, so its latencies measure the run's "
           "length or a different workload. Lower --request-rate, add replicas, or raise "
           "--max-model-len.";
  }
  std::string line =
      format("%s has the lowest TTFT p50 (%.0f ms) and %s the lowest ITL p99 (%.0f ms)",
             run_label(*best_ttft).c_str(), best_ttft->summary.ttft_ms.p50,
             run_label(*best_itl).c_str(), best_itl->summary.itl_ms.p99);
  if (excluded > 0) {
    line += format(" among the %zu runs that kept up without rejecting requests",
                   runs.size() - excluded);
  }
  for (const RunResult& r : runs) {
    if (!row_differences(r, runs.front()).empty()) {
      return line +
             ". Rows marked * differ in more than their scheduling policy (notes), so "
             "this compares their engines or hardware too: give --engine v0 or v1 to "
             "compare policies alone.";
    }
  }
  const bool classic = best_ttft->config.scheduler.policy == Policy::kVllmV0 &&
                       best_itl->config.scheduler.policy == Policy::kChunked;
  if (classic) {
    return line +
           ": prefill priority wins the first token by stalling running decodes; chunked "
           "prefill keeps the token cadence steady at the cost of a later first token.";
  }
  return line + ".";
}

}  // namespace servesim
