#include "analysis/report.hpp"

#include <cmath>
#include <cstdio>

#include "scheduler/policy.hpp"

namespace servesim {
using nlohmann::ordered_json;

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

ordered_json stats_json(const Stats& s) {
  return ordered_json{{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90},    {"p95", s.p95},
                      {"p99", s.p99},   {"max", s.max}, {"count", s.count}};
}

}  // namespace

std::vector<std::pair<std::string, double>> summary_metrics(const RunSummary& s) {
  std::vector<std::pair<std::string, double>> m = {{"completed", double(s.completed)},
                                                   {"rejected", double(s.rejected)},
                                                   {"preemptions", double(s.preemptions)}};
  const std::pair<const char*, const Stats*> stats[] = {
      {"ttft_ms", &s.ttft_ms}, {"itl_ms", &s.itl_ms},     {"tpot_ms", &s.tpot_ms},
      {"e2e_ms", &s.e2e_ms},   {"queue_ms", &s.queue_ms}, {"otps", &s.otps}};
  for (const auto& [name, st] : stats) {
    const std::string n = name;
    m.emplace_back(n + "_mean", st->mean);
    m.emplace_back(n + "_p50", st->p50);
    m.emplace_back(n + "_p90", st->p90);
    m.emplace_back(n + "_p95", st->p95);
    m.emplace_back(n + "_p99", st->p99);
    m.emplace_back(n + "_max", st->max);
  }
  m.insert(m.end(), {{"otps_p50_ratio", s.otps_p50_ratio},
                     {"requests_per_s", s.requests_per_s},
                     {"output_tokens_per_s", s.output_tokens_per_s},
                     {"total_tokens_per_s", s.total_tokens_per_s},
                     {"busy_fraction", s.busy_fraction},
                     {"mfu", s.mfu},
                     {"mbu", s.mbu},
                     {"kv_usage_mean", s.kv_usage_mean},
                     {"kv_usage_max", s.kv_usage_max},
                     {"makespan_s", s.makespan_s},
                     {"steps", double(s.steps)}});
  return m;
}

std::string run_label(const RunResult& r) {
  const SchedulerConfig& s = r.config.scheduler;
  return std::string(policy_name(s.policy)) + ":" + std::to_string(s.max_num_batched_tokens);
}

ordered_json summary_json(const RunResult& r, const ordered_json& workload) {
  const RunSummary& s = r.summary;
  const SimConfig& c = r.config;
  ordered_json rejected_by = ordered_json::object();
  for (int i = 1; i < kNumRejectReasons; ++i) {
    if (s.rejected_by_reason[i]) {
      rejected_by[reason_code(RejectReason(i))] = s.rejected_by_reason[i];
    }
  }
  ordered_json j;
  j["scheduler"] = policy_name(c.scheduler.policy);
  j["max_num_batched_tokens"] = c.scheduler.max_num_batched_tokens;
  j["requests"] = {{"total", s.total},
                   {"completed", s.completed},
                   {"rejected", s.rejected},
                   {"rejected_by_reason", rejected_by}};
  j["ttft_ms"] = stats_json(s.ttft_ms);
  j["itl_ms"] = stats_json(s.itl_ms);
  j["tpot_ms"] = stats_json(s.tpot_ms);
  j["e2e_ms"] = stats_json(s.e2e_ms);
  j["queue_ms"] = stats_json(s.queue_ms);
  j["otps"] = {{"mean", s.otps.mean}, {"p50", s.otps.p50}, {"p50_ratio", s.otps_p50_ratio}};
  j["throughput"] = {{"requests_per_s", s.requests_per_s},
                     {"output_tokens_per_s", s.output_tokens_per_s},
                     {"total_tokens_per_s", s.total_tokens_per_s}};
  j["gpu"] = {{"busy_fraction", s.busy_fraction},
              {"mfu", s.mfu},
              {"mbu", s.mbu},
              {"kv_usage_mean", s.kv_usage_mean},
              {"kv_usage_max", s.kv_usage_max}};
  j["preemptions"] = s.preemptions;
  j["steps"] = s.steps;
  j["steps_by_kind"] = {{"prefill_only", s.prefill_only_steps},
                        {"decode_only", s.decode_only_steps},
                        {"mixed", s.mixed_steps}};
  j["tokens_computed"] = {{"prefill", s.prefill_tokens}, {"decode", s.decode_tokens}};
  j["makespan_s"] = s.makespan_s;
  ordered_json cost_json = {{"name", c.cost_model}};
  if (c.cost_model == "roofline") {
    cost_json["params_source"] = c.roofline_source;
    for (const RooflineParamField& f : roofline_param_fields()) {
      cost_json[f.name] = (*c.roofline).*f.member;
    }
  } else {
    cost_json["profiles"] = c.profiles ? c.profiles->dir : "";
  }
  j["config"] = {
      {"model", c.model.name},
      {"gpu", c.gpu.name},
      {"tensor_parallel_size", c.tp},
      {"max_num_batched_tokens", c.scheduler.max_num_batched_tokens},
      {"max_num_seqs", c.scheduler.max_num_seqs},
      {"max_model_len", c.scheduler.max_model_len},
      {"block_size", c.scheduler.block_size},
      {"watermark", c.scheduler.watermark},
      {"gpu_memory_utilization", c.memory.gpu_memory_utilization},
      {"runtime_reserve_gib", c.memory.runtime_reserve_gib},
      {"num_gpu_blocks", r.memory.num_gpu_blocks},
      {"num_gpu_blocks_overridden", r.memory.overridden},
      {"memory_plan_gib",
       {{"usable", r.memory.usable_bytes / 1073741824.0},
        {"weights", r.memory.weight_bytes / 1073741824.0},
        {"activations", r.memory.activation_bytes / 1073741824.0},
        {"kv_cache", r.memory.kv_cache_bytes / 1073741824.0}}},
      {"cost_model", cost_json},
      {"workload", workload},
  };
  return j;
}

void write_requests_csv(std::ostream& out, const RunResult& r) {
  out << "id,arrival_s,input_tokens,output_tokens,first_token_s,finish_s,ttft_ms,e2e_ms,tpot_ms,"
         "otps,max_itl_ms,queue_ms,preemptions,status\n";
  char line[512];
  for (size_t id = 0; id < r.requests.size(); ++id) {
    const RequestRecord& q = r.requests[id];
    if (q.finished()) {
      const std::string tpot = q.has_decode() ? fmt("%.3f", q.tpot_s() * 1e3) : "";
      const std::string otps = q.has_decode() ? fmt("%.3f", q.otps()) : "";
      std::snprintf(line, sizeof line,
                    "%zu,%.6f,%d,%d,%.6f,%.6f,%.3f,%.3f,%s,%s,%.3f,%.3f,%d,finished\n", id,
                    q.arrival_s, q.input_tokens, q.output_tokens, q.first_token_s, q.last_token_s,
                    q.ttft_s() * 1e3, q.e2e_s() * 1e3, tpot.c_str(), otps.c_str(),
                    q.max_itl_s * 1e3, q.queue_s() * 1e3, q.preemptions);
    } else {
      std::snprintf(line, sizeof line, "%zu,%.6f,%d,%d,,,,,,,,,%d,rejected:%s\n", id, q.arrival_s,
                    q.input_tokens, q.output_tokens, q.preemptions, reason_code(q.reject));
    }
    out << line;
  }
}

void print_run_summary(std::ostream& out, const RunResult& r, const std::string& workload) {
  const RunSummary& s = r.summary;
  const SimConfig& c = r.config;
  char buf[256];
  out << "servesim run: " << c.model.name << " on " << c.gpu.name << " x" << c.tp << ", "
      << policy_name(c.scheduler.policy) << " (max_num_batched_tokens "
      << c.scheduler.max_num_batched_tokens << ", max_num_seqs " << c.scheduler.max_num_seqs
      << ", max_model_len " << c.scheduler.max_model_len << ")\n";
  std::snprintf(
      buf, sizeof buf,
      "KV cache: %lld blocks of %d tokens (%.2f GiB per GPU%s); weights %.2f GiB per GPU\n",
      static_cast<long long>(r.memory.num_gpu_blocks), c.scheduler.block_size,
      double(r.memory.num_gpu_blocks) * r.memory.kv_bytes_per_block / 1073741824.0,
      r.memory.overridden ? ", --num-gpu-blocks" : "", r.memory.weight_bytes / 1073741824.0);
  out << buf << "workload: " << workload << "\n";
  std::snprintf(buf, sizeof buf, "requests: %llu total, %llu completed, %llu rejected\n\n",
                static_cast<unsigned long long>(s.total),
                static_cast<unsigned long long>(s.completed),
                static_cast<unsigned long long>(s.rejected));
  out << buf;
  std::snprintf(buf, sizeof buf, "%-16s %10s %10s %10s %10s %10s %10s\n", "metric", "mean", "p50",
                "p90", "p95", "p99", "max");
  out << buf;
  auto row = [&](const char* name, const Stats& st) {
    std::snprintf(buf, sizeof buf, "%-16s %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n", name,
                  st.mean, st.p50, st.p90, st.p95, st.p99, st.max);
    out << buf;
  };
  row("ttft_ms", s.ttft_ms);
  row("itl_ms", s.itl_ms);
  row("tpot_ms", s.tpot_ms);
  row("e2e_ms", s.e2e_ms);
  row("queue_ms", s.queue_ms);
  row("otps_tok_per_s", s.otps);
  std::snprintf(buf, sizeof buf,
                "\nOTPS (CloudWatch, ratio of p50s): %.1f tok/s\n"
                "throughput: %.2f req/s, %.0f output tok/s, %.0f total tok/s over %.1f s\n",
                s.otps_p50_ratio, s.requests_per_s, s.output_tokens_per_s, s.total_tokens_per_s,
                s.makespan_s);
  out << buf;
  std::snprintf(buf, sizeof buf,
                "GPU: busy %.1f%%, MFU %.1f%%, MBU %.1f%%, KV usage mean %.1f%% max %.1f%%\n"
                "steps: %llu (prefill-only %llu, decode-only %llu, mixed %llu); preemptions %llu\n",
                s.busy_fraction * 100, s.mfu * 100, s.mbu * 100, s.kv_usage_mean * 100,
                s.kv_usage_max * 100, static_cast<unsigned long long>(s.steps),
                static_cast<unsigned long long>(s.prefill_only_steps),
                static_cast<unsigned long long>(s.decode_only_steps),
                static_cast<unsigned long long>(s.mixed_steps),
                static_cast<unsigned long long>(s.preemptions));
  out << buf;
}

void print_compare_table(std::ostream& out, const std::vector<RunResult>& runs) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-14s %9s %9s %8s %8s %8s %9s %8s %9s %6s %5s %7s %8s\n",
                "scheduler", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "TPOT p50", "E2E p50",
                "OTPS p50", "out tok/s", "busy%", "MFU%", "preempt", "rejected");
  out << buf;
  std::snprintf(buf, sizeof buf, "%-14s %9s %9s %8s %8s %8s %9s %8s %9s %6s %5s %7s %8s\n", "",
                "ms", "ms", "ms", "ms", "ms", "ms", "tok/s", "", "", "", "", "");
  out << buf;
  for (const RunResult& r : runs) {
    const RunSummary& s = r.summary;
    std::snprintf(buf, sizeof buf,
                  "%-14s %9.1f %9.1f %8.1f %8.1f %8.1f %9.1f %8.1f %9.0f %6.1f %5.1f %7llu %8llu\n",
                  run_label(r).c_str(), s.ttft_ms.p50, s.ttft_ms.p99, s.itl_ms.p50, s.itl_ms.p99,
                  s.tpot_ms.p50, s.e2e_ms.p50, s.otps.p50, s.output_tokens_per_s,
                  s.busy_fraction * 100, s.mfu * 100,
                  static_cast<unsigned long long>(s.preemptions),
                  static_cast<unsigned long long>(s.rejected));
    out << buf;
  }
}

}  // namespace servesim
