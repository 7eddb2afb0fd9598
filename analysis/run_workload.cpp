// A RunSpec's workload (run_spec.hpp load_workload): a trace with its what-if transforms and
// replicates, or one of vLLM bench's datasets and servesim's generators.
#include "analysis/run_spec.hpp"
#include "analysis/run_spec_internal.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include "analysis/workload_report.hpp"
#include "models/calibration.hpp"
#include "scheduler/policy.hpp"
#include "traces/datasets.hpp"
#include "traces/rate_pattern.hpp"
#include "traces/servegen.hpp"
#include "util/error.hpp"
#include "util/format.hpp"
#include "util/text_input.hpp"

namespace servesim {

using nlohmann::ordered_json;

namespace {

// The transforms to apply: the what-if flags, with the rate (0 keeps a trace's timing),
// burstiness and seed of the run.
TransformOptions transforms(const RunSpec& s, double request_rate) {
  TransformOptions o = s.what_if;
  o.request_rate = request_rate;
  o.burstiness = s.burstiness;
  o.seed = uint64_t(*s.seed);
  return o;
}

// How replicates of trace T are drawn: --trace-replicates, auto meaning bootstrap when a timed
// trace runs as one of several replicates (--num-seeds > 1).
Resample trace_replicates(const RunSpec& s, const Trace& t) {
  if (s.trace_replicates == "auto") {
    return t.timed && s.num_seeds > 1 ? Resample::kBootstrap : Resample::kNone;
  }
  const Resample r = parse_resample(s.trace_replicates);
  if (r != Resample::kNone && !t.timed) {
    throw Error(field::kTraceReplicates,
                s.trace +
                    " has no arrival times to resample: its arrivals are "
                    "drawn from {{workload.seed}} (give {{metrics.num_seeds}} alone)");
  }
  return r;
}

// The flags that would do nothing on trace T: generator flags on a timed trace (its arrival times
// are replayed), and import flags of another format.
void check_trace_flags(const RunSpec& s, const Trace& t, Resample replicates) {
  for (const auto& [flag, given] :
       {Setting{field::kBurstiness, s.burstiness.given()}, Setting{field::kSeed, s.seed.given()},
        Setting{field::kNumSeeds, s.num_seeds.given()}}) {
    if (replicates != Resample::kNone && std::string(flag) != "burstiness") continue;
    if (t.timed && given) {
      throw Error(
          flag, "has no effect on " + s.trace +
                    ": its arrival times are replayed (rescaled by {{workload.request_rate}}); it "
                    "shapes generated arrivals (synthetic workloads, length-only traces)");
    }
  }
  for (const auto& [flag, format, set] : trace_import_settings()) {
    if (set(s.import) && t.stored && std::string_view(flag) != field::kTraceFormat) {
      throw Error(flag, "has no effect on " + s.trace +
                            ": a servesim trace file was imported already (give it to "
                            "`servesim trace import`)");
    }
    if (set(s.import) && *format != '\0' && t.format != format) {
      throw Error(flag, std::string("reads ") + format + " traces; " + s.trace + " is in the " +
                            t.format + " format");
    }
  }
}

LoadedWorkload load_trace_workload(const RunSpec& s, Inputs& inputs) {
  refuse_given({{field::kNumRequests, s.num_requests.given()},
                {field::kNumPrompts, s.num_prompts.given()},
                {field::kInputLen, s.input_len.given()},
                {field::kOutputLen, s.output_len.given()}},
               "not used with --trace: the trace gives the requests (see --max-requests and the "
               "what-if transforms)");
  Trace t = *inputs.trace(s.trace, s.import);
  const Resample replicates = trace_replicates(s, t);
  check_trace_flags(s, t, replicates);
  TransformOptions o = transforms(s, s.request_rate.given() ? *s.request_rate : 0.0);
  o.resample = replicates;
  apply_transforms(t, o);
  if (!t.timed) {
    throw Error(field::kRequestRate,
                s.trace + " has no arrival times: give {{workload.request_rate}}");
  }
  if (s.rate_scale != 1) scale_trace_rate(t, s.rate_scale, uint64_t(*s.seed) ^ 0x7a26e5ca1eULL);
  const auto last = std::max_element(t.arrival_s.begin(), t.arrival_s.end());
  if (last != t.arrival_s.end() && !(*last <= kMaxSimTime_s)) {
    throw Error(s.trace, 0, "arrival",
                format("a request arrives at %.3g s, past the 1e9 s a simulation may span (where "
                       "a double still resolves sub-microsecond times); rescale with "
                       "{{what_if.time_scale}} or {{workload.request_rate}}",
                       *last));
  }
  ordered_json j = trace_json(t);
  j["import"] = import_json(s.import);
  j["transforms"] = transforms_json(o);
  if (replicates != Resample::kNone) {  // the replicate drawn: its seed, as generators record it
    j["replicates"] = resample_name(replicates);
    j["seed"] = s.seed;
  }
  return {to_workload(t), std::move(j), trace_text(t)};
}

}  // namespace

namespace {

// The JSON description J of a generated workload, with the dataset's name after its kind.
ordered_json with_dataset(const std::string& name, const ordered_json& j) {
  ordered_json out = {{"kind", j["kind"]}, {"dataset_name", name}};
  for (const auto& item : j.items()) {
    if (item.key() != "kind") out[item.key()] = item.value();
  }
  return out;
}

// --dataset-name prefix_repetition. Its lengths are fixed, and are described as such.
LoadedWorkload prefix_repetition_workload(const RunSpec& s, SyntheticOptions w) {
  PrefixRepetitionOptions o;
  o.num_requests = w.num_requests;
  o.request_rate = w.request_rate;
  o.burstiness = w.burstiness;
  o.prefix_len = s.prefix_repetition_prefix_len;
  o.suffix_len = s.prefix_repetition_suffix_len;
  o.num_prefixes = s.prefix_repetition_num_prefixes;
  o.output_len = s.prefix_repetition_output_len;
  o.seed = w.seed;
  Workload requests = generate_prefix_repetition(o);
  w.num_requests = o.num_made();
  w.input_len = LengthDist::parse("fixed:" + std::to_string(o.prefix_len + o.suffix_len), "");
  w.output_len = LengthDist::parse("fixed:" + std::to_string(o.output_len), "");
  ordered_json j = with_dataset("prefix_repetition", synthetic_json(w));
  j["prefix_len"] = o.prefix_len;
  j["suffix_len"] = o.suffix_len;
  j["num_prefixes"] = o.num_prefixes;
  j["prompts_per_prefix"] = o.num_made() / o.num_prefixes;
  std::string text = "prefix_repetition, " + synthetic_text(w);
  text += format(", %lld prefixes of %lld tokens, %lld prompts each", (long long)o.num_prefixes,
                 (long long)o.prefix_len, (long long)(o.num_made() / o.num_prefixes));
  return {std::move(requests), std::move(j), std::move(text)};
}

// --dataset-name multi_turn: --input-len is the new user tokens of a turn.
LoadedWorkload multi_turn_workload(const RunSpec& s, const SyntheticOptions& w) {
  MultiTurnOptions o;
  o.base = w;
  o.num_turns = s.num_turns;
  o.think_time_s = s.think_time_s;
  ordered_json j = with_dataset("multi_turn", synthetic_json(w));
  j["num_turns"] = o.num_turns;
  j["think_time_s"] = o.think_time_s;
  std::string text = "multi_turn, " + synthetic_text(w);
  text += format(" (input: new tokens a turn), %lld turns a session, think time %g s",
                 (long long)o.num_turns, o.think_time_s);
  return {generate_multi_turn(o), std::move(j), std::move(text)};
}

// --dataset-name servegen: the clients' windows over the span; --request-rate, when given, is
// the mean rate over the span (ServeGen's rate function, one factor for every window).
LoadedWorkload servegen_workload(const RunSpec& s) {
  std::vector<ServeGenClient> clients;
  std::istringstream files(s.servegen);
  for (std::string f; std::getline(files, f, ',');)
    clients.push_back(load_servegen_client(f));
  ServeGenOptions o;
  o.start_s = s.servegen_start_s;
  o.duration_s = s.servegen_duration_s;
  o.rate_scale = s.servegen_rate_scale;
  o.seed = uint64_t(*s.seed);
  if (s.request_rate.given()) {
    if (s.servegen_rate_scale.given()) {
      throw Error(field::kServegenRateScale,
                  "contradicts {{workload.request_rate}} (which sets the scale)");
    }
    o.rate_scale = 1;
    const double natural = double(generate_servegen(clients, o).size()) / o.duration_s;
    if (!(natural > 0)) throw Error(field::kRequestRate, "the clients send nothing in the span");
    if (!std::isfinite(s.request_rate))
      throw Error(field::kRequestRate, "must be finite for servegen");
    o.rate_scale = s.request_rate / natural;
  }
  o.rate_scale *= s.rate_scale;
  Workload w = generate_servegen(clients, o);
  ordered_json j = {{"kind", "generated"},        {"dataset_name", "servegen"},
                    {"clients", s.servegen},      {"start_s", o.start_s},
                    {"duration_s", o.duration_s}, {"rate_scale", o.rate_scale},
                    {"requests", w.size()},       {"seed", s.seed}};
  std::string text =
      format("servegen, %zu clients, %zu requests over %g s from t=%g s (rate x%.3g)",
             clients.size(), w.size(), o.duration_s, o.start_s, o.rate_scale);
  const InputParts& parts = w.input_parts;
  if (!parts.empty() && !w.empty()) {  // the input's tokens by modality, in the mean
    ordered_json mean = ordered_json::object();
    text += ", input";
    for (size_t k = 0; k < parts.names.size(); ++k) {
      double sum = 0;
      for (size_t i = 0; i < w.size(); ++i)
        sum += parts.at(i, k);
      mean[parts.names[k]] = sum / double(w.size());
      text += format(" %s %.0f", parts.names[k].c_str(), sum / double(w.size()));
    }
    text += " (mean; columns input_* of the requests)";
    j["input_mean_tokens"] = std::move(mean);
  }
  return {std::move(w), std::move(j), std::move(text)};
}

// --dataset-name mixture: the classes at their own rates, or scaled to --request-rate in all.
LoadedWorkload mixture_workload(const RunSpec& s) {
  const std::vector<ClientClass> classes = parse_client_mix(s.client_mix);
  double total = 0;
  for (const ClientClass& c : classes)
    total += c.rate;
  const double scale = (s.request_rate.given() ? s.request_rate / total : 1.0) * s.rate_scale;
  Workload w = generate_client_mixture(
      classes, int64_t(std::llround(double(num_requests(s)) * s.rate_scale)), scale,
      uint64_t(*s.seed));
  ordered_json j = {{"kind", "generated"},        {"dataset_name", "mixture"},
                    {"client_mix", s.client_mix}, {"rate_scale", scale},
                    {"requests", w.size()},       {"seed", s.seed}};
  std::string text = format("mixture of %zu client classes, %zu requests at %.3g req/s in all",
                            classes.size(), w.size(), total * scale);
  return {std::move(w), std::move(j), std::move(text)};
}

// The generator --dataset-name names.
LoadedWorkload generate_dataset(const RunSpec& s) {
  if (s.dataset_name == "servegen") return servegen_workload(s);
  if (s.dataset_name == "mixture") return mixture_workload(s);
  SyntheticOptions w;
  w.num_requests = int64_t(std::llround(double(num_requests(s)) * s.rate_scale));
  w.request_rate = s.request_rate * s.rate_scale;
  w.burstiness = s.burstiness;
  w.input_len = s.input_len;
  w.output_len = s.output_len;
  w.seed = uint64_t(*s.seed);
  if (s.dataset_name == "prefix_repetition") return prefix_repetition_workload(s, w);
  if (s.dataset_name == "multi_turn") return multi_turn_workload(s, w);
  return {generate_synthetic(w), synthetic_json(w), synthetic_text(w)};
}

}  // namespace

// --lora-adapters: the adapters requests ask for, onto OUT (a trace's --col-lora says them).
void draw_adapters(const RunSpec& s, LoadedWorkload& out) {
  if (!s.lora_adapters.given()) {
    if (s.lora_zipf.given()) throw Error(field::kLoraZipf, "needs {{lora.adapters}}");
    return;
  }
  if (!s.import.col_lora.empty()) {
    throw Error(field::kLoraAdapters,
                "contradicts {{trace.col_lora}}: the trace says each request's adapter");
  }
  draw_loras(out.requests, s.lora_adapters, s.lora_zipf, uint64_t(*s.seed));
  out.json["lora_adapters"] = s.lora_adapters;
  out.json["lora_zipf"] = s.lora_zipf;
  out.text += format(", %lld LoRA adapters (Zipf %.2g)", (long long)(*s.lora_adapters),
                     double(s.lora_zipf));
}

LoadedWorkload load_workload(const RunSpec& s, Inputs& inputs) {
  if (!s.trace.empty()) {
    LoadedWorkload t = load_trace_workload(s, inputs);
    draw_adapters(s, t);
    return t;
  }
  LoadedWorkload out = generate_dataset(s);
  draw_adapters(s, out);
  if (!s.rate_pattern.empty()) {
    if (s.dataset_name == "servegen") {
      throw Error(field::kRatePattern, "servegen clients have their own rate over time");
    }
    const RatePattern p = RatePattern::parse(s.rate_pattern, field::kRatePattern);
    apply_rate_pattern(out.requests, p);
    out.json["rate_pattern"] = p.spec;
    out.text += ", rate pattern " + p.spec;
  }
  if (s.num_priorities > 1 || s.num_priorities.given()) {
    draw_priorities(out.requests, s.num_priorities, uint64_t(*s.seed));
    out.json["num_priorities"] = s.num_priorities;
    out.text += format(", priorities uniform in 0..%lld", (long long)(s.num_priorities - 1));
  }
  const TransformOptions what_if = transforms(s, 0);
  if (what_if.any()) {  // the what-if transforms apply to generated requests too, spans included
    // (not the input's modalities: a transform changes the input, so its parts are dropped)
    Trace t = from_workload(out.requests);
    apply_transforms(t, what_if);
    out.requests = to_workload(t);
    out.json["transforms"] = transforms_json(what_if);
    out.text += ", " + what_if.describe();
  }
  return out;
}

}  // namespace servesim
