#include "analysis/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "analysis/intervals.hpp"
#include "scheduler/policy.hpp"
#include "util/provenance.hpp"

namespace servesim {

using nlohmann::ordered_json;

ordered_json json_number(double v) {
  return std::isfinite(v) ? ordered_json(v) : ordered_json(nullptr);
}

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

ordered_json stats_json(const Stats& s) {
  ordered_json j{{"mean", json_number(s.mean)},
                 {"p50", json_number(s.p50)},
                 {"p90", json_number(s.p90)},
                 {"p95", json_number(s.p95)},
                 {"p99", json_number(s.p99)},
                 {"max", json_number(s.max)},
                 {"count", s.count}};
  for (const auto& [q, v] : s.extra)
    j[percentile_name(q)] = json_number(v);
  return j;
}

ordered_json overload_json(const Overload& o) {
  ordered_json j = {{"overloaded", o.overloaded},
                    {"arrival_rate_req_s", json_number(o.arrival_rate_req_s)},
                    {"completion_rate_req_s", json_number(o.completion_rate_req_s)},
                    {"waiting_at_median_arrival", o.waiting_at_median_arrival},
                    {"waiting_at_last_arrival", o.waiting_at_last_arrival},
                    {"in_system_at_median_arrival", o.in_system_at_median_arrival},
                    {"in_system_at_last_arrival", o.in_system_at_last_arrival},
                    {"late_arrivals", o.late_arrivals},
                    {"late_departures", o.late_departures},
                    {"late_completion_ratio", o.late_completion_ratio()},
                    {"growth_threshold", o.growth_threshold},
                    {"judgeable", o.judgeable},
                    {"drain_s", o.drain_s}};
  if (o.stopped_at_last_arrival) {  // a capacity probe cut short
    j["stopped_at_last_arrival"] = true;
    j["unfinished"] = o.unfinished;
  }
  return j;
}

ordered_json requests_json(const RunSummary& s) {
  ordered_json rejected_by = ordered_json::object();
  for (int i = 1; i < kNumRejectReasons; ++i) {
    if (s.rejected_by_reason[i]) {
      rejected_by[reason_code(RejectReason(i))] = s.rejected_by_reason[i];
    }
  }
  return {{"total", s.total},
          {"completed", s.completed},
          {"rejected", s.rejected},
          {"rejected_share", s.rejected_share()},
          {"rejected_by_reason", rejected_by},
          {"input_tokens", s.input_tokens},
          {"output_tokens", s.output_tokens}};
}

ordered_json kv_offload_json(const KvOffloadSummary& k) {
  const KvOffloadConnector::Stats& c = k.counts;
  return {{"backend", offload_backend_name(k.backend)},
          {"cpu_bytes", k.cpu_bytes},
          {"cpu_blocks", k.cpu_blocks},
          {"block_tokens", k.block_tokens},
          {"hit_rate", json_number(k.hit_rate())},
          {"queries_tokens", c.queries},
          {"hits_tokens", c.hits},
          {"preempted_queries_tokens", c.preempted_queries},
          {"preempted_hits_tokens", c.preempted_hits},
          {"loads", c.loads},
          {"loaded_tokens", c.loaded_tokens},
          {"loaded_bytes_per_gpu", c.loaded_bytes},
          {"load_ms", stats_json(k.load_ms)},
          {"stores", c.stores},
          {"stored_blocks", c.stored_blocks},
          {"stored_bytes_per_gpu", c.stored_bytes},
          {"host_link_busy_s", k.link_busy_s},
          {"cpu_evictions", k.evictions},
          {"deferred_lookups", c.deferrals},
          {"refused_stores", c.store_failures}};
}

ordered_json spec_decode_json(const SpecDecodeSummary& d) {
  ordered_json per_position = ordered_json::array();
  for (int i = 0; i < d.num_speculative_tokens; ++i)
    per_position.push_back(json_number(d.position_rate(i)));
  return {{"method", spec_method_name(d.method)},
          {"num_speculative_tokens", d.num_speculative_tokens},
          {"num_drafts", d.counts.num_drafts},
          {"num_draft_tokens", d.counts.num_draft_tokens},
          {"num_accepted_tokens", d.counts.num_accepted_tokens},
          {"mean_acceptance_length", json_number(d.mean_acceptance_length())},
          {"acceptance_rate", json_number(d.acceptance_rate())},
          {"acceptance_per_position", per_position}};
}

// A bound in ms, null when there is none (infinity).
ordered_json bound_ms(double v) {
  return std::isfinite(v) ? ordered_json(v) : ordered_json();
}

// The settings R ran under beyond the scheduler and memory plan, each as used (issue 42: every
// flag's value recorded): the engine features' options, the metrics asked for, and the fleet's
// options (its router, pools, KV link and autoscaler), added to CONFIG.
void add_settings(const RunResult& r, ordered_json& config) {
  const SimConfig& c = r.config;
  const SpecDecodeConfig& spec = c.scheduler.spec;
  if (spec.enabled()) {
    ordered_json rates = ordered_json::array();
    for (int i = 0; i < spec.num_speculative_tokens; ++i)
      rates.push_back(spec.acceptance_rates[size_t(i)]);
    config["speculative"] = {
        {"method", spec_method_name(spec.method)},
        {"num_speculative_tokens", spec.num_speculative_tokens},
        {"acceptance_rates", rates},
        {"draft_model", c.drafter.method == SpecMethod::kDraftModel ? c.drafter.model.name : ""}};
  }
  if (c.offload.enabled()) {
    config["kv_offloading"] = {{"backend", offload_backend_name(c.offload.backend)},
                               {"cpu_bytes", c.offload.cpu_bytes},
                               {"per_rank", c.offload.per_rank},
                               {"block_size", c.offload.block_size},
                               {"link_gb_per_s", c.offload.link_gb_per_s},
                               {"link_latency_s", c.offload.link_latency_s}};
  }
  if (c.lora.enabled) {
    config["lora"] = {
        {"max_loras", c.lora.max_loras},         {"max_lora_rank", c.lora.max_lora_rank},
        {"max_cpu_loras", c.lora.cpu_loras()},   {"rank", c.lora.adapter_rank()},
        {"load_gb_per_s", c.lora.load_gb_per_s}, {"load_latency_s", c.lora.load_latency_s}};
  }
  if (!r.options) return;
  const SimulateOptions& o = *r.options;
  config["max_concurrency"] = o.max_concurrency;
  config["metric_percentiles"] = o.metrics.percentiles;
  config["goodput_ms"] = {{"ttft", bound_ms(o.metrics.goodput.ttft_ms)},
                          {"tpot", bound_ms(o.metrics.goodput.tpot_ms)},
                          {"e2el", bound_ms(o.metrics.goodput.e2el_ms)}};
  const FleetOptions& f = o.fleet;
  const bool fleet = f.num_replicas > 1 || !f.groups.empty() || f.autoscale.enabled;
  if (!fleet) return;
  ordered_json pools = ordered_json::array();
  for (const ReplicaGroup& g : f.groups) {
    pools.push_back({{"gpu", g.config.gpu.name},
                     {"role", g.role == ReplicaRole::kPrefill  ? "prefill"
                              : g.role == ReplicaRole::kDecode ? "decode"
                                                               : "colocated"},
                     {"replicas", g.count},
                     {"tensor_parallel_size", g.config.tp}});
    if (g.config.pp > 1) pools.back()["pipeline_parallel_size"] = g.config.pp;
  }
  ordered_json fj = {{"num_replicas", f.groups.empty() ? f.num_replicas : r.fleet.num_replicas},
                     {"router", f.router.hook != nullptr ? "custom" : router_name(f.router.kind)},
                     {"router_signal_delay_s", f.router.signal_delay_s},
                     {"prefix_index", f.router.prefix_kv_index ? "kv-events" : "per-replica"},
                     {"pools", pools}};
  const bool disaggregated = std::any_of(f.groups.begin(), f.groups.end(), [](const auto& g) {
    return g.role == ReplicaRole::kDecode;
  });
  if (disaggregated) {
    fj["kv_transfer"] = {{"gb_per_s", f.kv_transfer_gb_per_s},
                         {"link", f.kv_transfer_nvlink ? "nvlink" : "network"},
                         {"latency_s", f.kv_transfer_latency_s}};
  }
  if (f.autoscale.enabled) {
    const AutoscaleOptions& a = f.autoscale;
    fj["autoscale"] = {{"metric", scale_metric_name(a.metric)},
                       {"target", a.target},
                       {"min_replicas", a.min_replicas},
                       {"max_replicas", a.max_replicas},
                       {"period_s", a.period_s},
                       {"scale_up_window_s", a.up_window_s},
                       {"scale_down_window_s", a.down_window_s},
                       {"provision_s", json_number(a.provision_s)},
                       {"engine_startup_s", a.startup_s},
                       {"model_load_gb_per_s", a.load_gb_per_s}};
  }
  config["fleet"] = fj;
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
  const Overload& o = s.overload;
  m.insert(m.end(), {{"otps_p50_ratio", s.otps_p50_ratio},
                     {"requests_per_s", s.requests_per_s},
                     {"output_tokens_per_s", s.output_tokens_per_s},
                     {"total_tokens_per_s", s.total_tokens_per_s},
                     {"step_time_fraction", s.step_time_fraction},
                     {"mfu", s.mfu},
                     {"mbu", s.mbu},
                     {"energy_j", s.energy.energy_j},
                     {"mean_power_w", s.energy.mean_power_w},
                     {"peak_power_w", s.energy.peak_power_w},
                     {"j_per_output_token", s.energy.j_per_output_token},
                     {"j_per_request", s.energy.j_per_request},
                     {"kv_usage_mean", s.kv_usage_mean},
                     {"kv_usage_max", s.kv_usage_max},
                     {"makespan_s", s.makespan_s},
                     {"steps", double(s.steps)},
                     {"rejected_share", s.rejected_share()},
                     {"overloaded", o.overloaded ? 1.0 : 0.0},
                     {"goodput_req_s", s.goodput_req_s},
                     {"total_input_tokens", double(s.input_tokens)},
                     {"total_output_tokens", double(s.output_tokens)},
                     {"queue_len_mean", s.queue_len.mean},
                     {"queue_len_p50", s.queue_len.p50},
                     {"queue_len_p99", s.queue_len.p99},
                     {"queue_len_max", s.queue_len.max},
                     {"kv_usage_p50", s.kv_usage_p50},
                     {"kv_usage_p99", s.kv_usage_p99},
                     {"waiting_at_last_arrival", double(o.waiting_at_last_arrival)},
                     {"in_system_at_last_arrival", double(o.in_system_at_last_arrival)},
                     {"late_completion_ratio", o.late_completion_ratio()},
                     {"arrival_rate_req_s", o.arrival_rate_req_s},
                     {"drain_s", o.drain_s}});
  m.emplace_back("prefix_cache_hit_rate", s.prefix_cache.hit_rate());
  m.emplace_back("kv_offload_hit_rate", s.kv_offload.hit_rate());
  m.emplace_back("kv_load_ms_mean", s.kv_offload.load_ms.mean);
  m.emplace_back("lora_load_s", s.lora.enabled ? s.lora.load_s : NAN);
  m.emplace_back("lora_skipped_admissions", s.lora.enabled ? double(s.lora.skips) : NAN);
  m.emplace_back("spec_mean_acceptance_length", s.spec_decode.mean_acceptance_length());
  m.emplace_back("spec_acceptance_rate", s.spec_decode.acceptance_rate());
  return m;
}

bool summary_metric_is_count(const std::string& name) {
  static const std::set<std::string> counts = {"completed",
                                               "rejected",
                                               "preemptions",
                                               "steps",
                                               "total_input_tokens",
                                               "total_output_tokens",
                                               "waiting_at_last_arrival",
                                               "in_system_at_last_arrival",
                                               "lora_skipped_admissions"};
  return counts.count(name) > 0;
}

std::string cost_source(const SimConfig& c) {
  const std::string hardware = c.cost_model == "roofline"
                                   ? c.hardware_source
                                   : "profile table " + (c.profiles ? c.profiles->dir : "");
  return hardware + "; " + c.engine_source;
}

std::string run_label(const RunResult& r) {
  const SchedulerConfig& s = r.config.scheduler;
  return std::string(policy_name(s.policy)) + ":" + std::to_string(s.max_num_batched_tokens);
}

std::string replica_layout_text(const SimConfig& c) {
  std::string s = c.gpu.name + " x" + std::to_string(c.gpus());
  if (c.pp > 1) s += " (TP" + std::to_string(c.tp) + " x PP" + std::to_string(c.pp) + ")";
  return s;
}

ordered_json energy_json(const EnergySummary& e) {
  return {{"energy_j", json_number(e.energy_j)},
          {"idle_power_w", json_number(e.idle_power_w)},
          {"mean_power_w", json_number(e.mean_power_w)},
          {"peak_power_w", json_number(e.peak_power_w)},
          {"peak_window_s", kPowerWindowS},
          {"j_per_output_token", json_number(e.j_per_output_token)},
          {"j_per_request", json_number(e.j_per_request)}};
}

ordered_json provenance_json() {
  return {{"version", servesim_version()}, {"command", current_command_line()}};
}

ordered_json summary_json(const RunResult& r, const ordered_json& workload, double interval_level) {
  const RunSummary& s = r.summary;
  const SimConfig& c = r.config;
  ordered_json j;
  j["label"] = run_label(r);
  j["scheduler"] = policy_name(c.scheduler.policy);
  j["max_num_batched_tokens"] = c.scheduler.max_num_batched_tokens;
  j["requests"] = requests_json(s);
  j["overloaded"] = overload_json(s.overload);
  j["ttft_ms"] = stats_json(s.ttft_ms);
  j["itl_ms"] = stats_json(s.itl_ms);
  j["tpot_ms"] = stats_json(s.tpot_ms);
  j["e2e_ms"] = stats_json(s.e2e_ms);
  j["queue_ms"] = stats_json(s.queue_ms);
  j["otps"] = {{"mean", json_number(s.otps.mean)},
               {"p50", json_number(s.otps.p50)},
               {"p50_ratio", json_number(s.otps_p50_ratio)}};
  for (const auto& [q, v] : s.otps.extra)
    j["otps"][percentile_name(q)] = json_number(v);
  j["throughput"] = {{"requests_per_s", s.requests_per_s},
                     {"output_tokens_per_s", s.output_tokens_per_s},
                     {"total_tokens_per_s", s.total_tokens_per_s},
                     {"goodput_req_s", json_number(s.goodput_req_s)}};
  j["gpu"] = {{"step_time_fraction", s.step_time_fraction},
              {"mfu", s.mfu},
              {"mbu", s.mbu},
              {"kv_usage_mean", s.kv_usage_mean},
              {"kv_usage_p50", json_number(s.kv_usage_p50)},
              {"kv_usage_p99", json_number(s.kv_usage_p99)},
              {"kv_usage_max", s.kv_usage_max}};
  j["energy"] = energy_json(s.energy);
  j["queue_len"] = stats_json(s.queue_len);
  j["preemptions"] = s.preemptions;
  const PrefixCacheSummary& p = s.prefix_cache;
  j["prefix_cache"] = {{"enabled", p.enabled},
                       {"hit_rate", json_number(p.hit_rate())},
                       {"queries_tokens", p.queries},
                       {"hits_tokens", p.hits},
                       {"preempted_queries_tokens", p.preempted_queries},
                       {"preempted_hits_tokens", p.preempted_hits},
                       {"cached_prompt_tokens", p.cached_prompt_tokens},
                       {"evictions", p.evictions}};
  if (s.spec_decode.enabled) j["spec_decode"] = spec_decode_json(s.spec_decode);
  if (s.kv_offload.enabled) j["kv_offload"] = kv_offload_json(s.kv_offload);
  const std::vector<std::string> unmodelled = unmodelled_interactions(c);
  if (!unmodelled.empty()) j["not_modelled"] = unmodelled;
  if (s.lora.enabled) {
    const LoraSummary& l = s.lora;
    j["lora"] = {{"max_loras", l.max_loras},
                 {"max_cpu_loras", l.max_cpu_loras},
                 {"rank", l.rank},
                 {"requests", l.requests},
                 {"adapters", l.adapters},
                 {"skipped_admissions", l.skips},
                 {"disk_loads", l.disk_loads},
                 {"gpu_activations", l.activations},
                 {"load_s", l.load_s},
                 {"kernel_s", l.kernel_s}};
  }
  j["steps"] = s.steps;
  j["steps_by_kind"] = {{"prefill_only", s.prefill_only_steps},
                        {"decode_only", s.decode_only_steps},
                        {"mixed", s.mixed_steps}};
  j["tokens_computed"] = {{"prefill", s.prefill_tokens}, {"decode", s.decode_tokens}};
  j["makespan_s"] = s.makespan_s;
  ordered_json cost_json = {{"name", c.cost_model}};
  if (c.cost_model == "roofline") {
    ordered_json hw = {{"arch", arch_name(c.gpu.arch)}, {"source", c.hardware_source}};
    for (const auto& f : hardware_param_fields())
      hw[f.name] = (*c.hardware).*f.member;
    cost_json["hardware"] = hw;
  } else {
    cost_json["profiles"] = c.profiles ? c.profiles->dir : "";
  }
  ordered_json engine = {{"name", engine_name(c.engine)}, {"source", c.engine_source}};
  for (const EngineParamField& f : engine_param_fields()) {
    if (f.engine == c.engine) engine[f.name] = (*c.engine_params).*f.member;
  }
  cost_json["engine"] = engine;
  cost_json["frontend_latency_s"] = c.frontend_latency_s;
  j["config"] = {
      {"model", c.model.name},
      {"quantization", c.model.quantization().empty() ? "none" : c.model.quantization()},
      {"kv_cache_dtype", c.model.kv_cache_bytes == 1 ? "fp8" : "auto"},
      {"gpu", c.gpu.name},
      {"arch", arch_name(c.gpu.arch)},
      {"engine", engine_name(c.engine)},
      {"tensor_parallel_size", c.tp},
      {"max_num_batched_tokens", c.scheduler.max_num_batched_tokens},
      {"max_num_seqs", c.scheduler.max_num_seqs},
      {"max_model_len", c.scheduler.max_model_len},
      {"block_size", c.scheduler.block_size},
      {"watermark", c.scheduler.watermark},
      {"enable_prefix_caching", c.scheduler.enable_prefix_caching},
      {"scheduling_policy",
       c.scheduler.scheduling_policy == WaitingOrder::kPriority ? "priority" : "fcfs"},
      {"long_prefill_token_threshold", c.scheduler.long_prefill_token_threshold},
      {"async_scheduling", c.scheduler.async_scheduling},
      {"scheduler_reserve_full_isl", c.scheduler.reserve_full_isl},
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
  };
  if (c.expert_parallel) {  // present with expert parallelism only
    j["config"]["enable_expert_parallel"] = true;
    j["config"]["expert_parallel_size"] = c.ep();
    j["config"]["expert_skew"] = c.expert_skew;
  }
  if (c.pp > 1) {
    // Present with pipeline stages only (absent: 1). memory_plan_gib is the stage with the fewest
    // KV blocks, which sizes every stage's cache.
    j["config"]["pipeline_parallel_size"] = c.pp;
    j["config"]["memory_plan_stage"] = r.memory.stage;
  }
  add_settings(r, j["config"]);
  j["config"]["workload"] = workload;
  const FleetSummary& f = r.fleet;
  // An autoscaled fleet of at most one replica is still a fleet: run prints its autoscaler line,
  // and the JSON has its fleet.autoscale (issue 44: it had neither block).
  if (f.num_replicas > 1 || f.autoscale.enabled) {
    j["config"]["num_replicas"] = f.num_replicas;
    j["config"]["router"] = f.router;
    ordered_json replicas = ordered_json::array();
    for (size_t i = 0; i < f.replicas.size(); ++i) {
      const RunSummary& q = f.replicas[i];
      replicas.push_back({{"replica", i},
                          {"pool", i < f.pool.size() ? f.pool[i] : ""},
                          {"requests", f.routed[i]},
                          {"completed", q.completed},
                          {"ttft_ms", stats_json(q.ttft_ms)},
                          {"itl_ms", stats_json(q.itl_ms)},
                          {"step_time_fraction", q.step_time_fraction},
                          {"energy", energy_json(q.energy)},
                          {"kv_usage_mean", q.kv_usage_mean},
                          {"queue_len_mean", json_number(q.queue_len.mean)},
                          {"prefix_cache_hit_rate", json_number(q.prefix_cache.hit_rate())}});
    }
    ordered_json pools = ordered_json::array();
    for (const PoolSummary& p : f.pools) {
      pools.push_back({{"pool", p.name},
                       {"replicas", p.replicas},
                       {"requests", p.requests},
                       {"ttft_ms", stats_json(p.ttft_ms)},
                       {"itl_ms", stats_json(p.itl_ms)},
                       {"step_time_fraction", p.step_time_fraction}});
    }
    j["fleet"] = {{"num_replicas", f.num_replicas},
                  {"pools", pools},
                  {"router", f.router},
                  {"router_warnings", f.router_warnings},
                  {"busy_imbalance", json_number(f.busy_imbalance)},
                  {"queue_imbalance", json_number(f.queue_imbalance)},
                  {"kv_transfers", f.kv_transfers},
                  {"kv_transfer_s_mean",
                   json_number(f.kv_transfers ? f.kv_transfer_s / double(f.kv_transfers) : NAN)},
                  {"kv_transfer_bytes_per_gpu", f.kv_transfer_bytes},
                  {"replicas", replicas}};
    if (f.autoscale.enabled) j["fleet"]["autoscale"] = autoscale_json(f.autoscale, r.config.gpus());
  }
  j["prediction_intervals"] = intervals_json(r, prediction_intervals(regime_of(r), interval_level));
  // Why the numbers may not be what they seem (overload, rejections, approximated or unmodelled
  // vLLM behaviour): the lines the command prints after WARNING, for a reader of the file.
  j["warnings"] = run_warnings(r);
  return j;
}

ordered_json autoscale_json(const AutoscaleSummary& a, int gpus_per_replica) {
  ordered_json timeline = ordered_json::array();
  for (const ScaleEvent& e : a.timeline) {
    timeline.push_back({{"time_s", e.time_s},
                        {"ready", e.ready},
                        {"starting", e.starting},
                        {"draining", e.draining},
                        {"desired", e.desired},
                        {"metric", json_number(e.metric)}});
  }
  return {{"metric", a.metric},
          {"target", a.target},
          {"min_replicas", a.min_replicas},
          {"max_replicas", a.max_replicas},
          {"provision_s", a.provision_s},
          {"peak_replicas", a.peak_replicas},
          {"replicas_started", a.scale_ups},
          {"replicas_removed", a.scale_downs},
          {"replica_hours", a.replica_hours},
          {"gpu_hours", a.replica_hours * gpus_per_replica},
          {"timeline", timeline}};
}

void write_requests_csv(std::ostream& out, const RunResult& r, const InputParts* parts) {
  const size_t n = r.requests.size();
  if (parts != nullptr && (parts->empty() || parts->tokens.size() != n * parts->names.size())) {
    parts = nullptr;
  }
  out << "id,arrival_s,input_tokens,output_tokens,first_token_s,finish_s,ttft_ms,e2e_ms,tpot_ms,"
         "otps,max_itl_ms,queue_ms,preemptions,cached_tokens,status";
  // KV offload: each request's tokens loaded from the CPU tier and the loads' time.
  const bool offload = r.summary.kv_offload.enabled;
  if (offload) out << ",kv_loaded_tokens,kv_load_ms";
  if (parts != nullptr) {
    for (const std::string& name : parts->names)
      out << ",input_" << name;
  }
  out << "\n";
  char line[512];
  for (size_t id = 0; id < n; ++id) {
    const RequestRecord& q = r.requests[id];
    if (q.finished()) {
      const std::string tpot = q.has_decode() ? fmt("%.3f", q.tpot_s() * 1e3) : "";
      const std::string otps = q.has_decode() ? fmt("%.3f", q.otps()) : "";
      std::snprintf(
          line, sizeof line, "%zu,%.6f,%d,%d,%.6f,%.6f,%.3f,%.3f,%s,%s,%.3f,%.3f,%d,%d,completed\n",
          id, q.arrival_s, q.input_tokens, q.output_tokens, q.first_token_s, q.last_token_s,
          q.ttft_s() * 1e3, q.e2e_s() * 1e3, tpot.c_str(), otps.c_str(), q.max_itl_s * 1e3,
          q.queue_s() * 1e3, q.preemptions, std::max(q.cached_tokens, 0));
    } else {
      std::snprintf(line, sizeof line, "%zu,%.6f,%d,%d,,,,,,,,,%d,,rejected:%s\n", id, q.arrival_s,
                    q.input_tokens, q.output_tokens, q.preemptions, reason_code(q.reject));
    }
    if (parts == nullptr && !offload) {
      out << line;
      continue;
    }
    std::string_view row(line);
    row.remove_suffix(1);  // the newline
    out << row;
    if (offload) out << fmt(",%.0f", q.kv_loaded_tokens) << fmt(",%.3f", q.kv_load_s * 1e3);
    if (parts == nullptr) {
      out << '\n';
      continue;
    }
    for (size_t k = 0; k < parts->names.size(); ++k)
      out << ',' << parts->at(id, k);
    out << '\n';
  }
}

std::string json_text(const nlohmann::ordered_json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace servesim
