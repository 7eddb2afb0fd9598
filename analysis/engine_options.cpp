#include "analysis/engine_options.hpp"

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "scheduler/spec_decode.hpp"
#include "util/error.hpp"
#include "util/format.hpp"
#include "util/lookup.hpp"
#include "util/text_input.hpp"

namespace servesim {

namespace {

using nlohmann::json;

constexpr const char* kSpec = field::kSpeculativeConfig;

std::string key_field(const std::string& key) {
  return std::string(kSpec) + "." + key;
}

// TEXT as a JSON object (Error naming FLAG otherwise).
json parse_object(const std::string& text, const std::string& flag) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Error(flag, "is not valid JSON: " + text.substr(0, 200));
  if (!j.is_object()) throw Error(flag, "must be a JSON object {\"key\": value, ...}");
  return j;
}

// The integer at KEY of J, in [LO, HI] (Error naming FLAG.KEY otherwise).
int64_t integer_at(const json& j, const std::string& key, int64_t lo, int64_t hi,
                   const std::string& flag) {
  const json& v = j.at(key);
  if (!v.is_number_integer() && !v.is_number_unsigned()) {
    throw Error(flag + "." + key, "must be an integer");
  }
  const int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)
                        ? INT64_MAX
                        : v.get<int64_t>();
  if (x < lo || x > hi) {
    throw Error(flag + "." + key, format("must be in [%lld, %lld]", (long long)lo, (long long)hi));
  }
  return x;
}

double number_at(const json& v, const std::string& field) {
  if (!v.is_number()) throw Error(field, "must be a number");
  return v.get<double>();
}

std::string string_at(const json& j, const std::string& key, const std::string& flag) {
  const json& v = j.at(key);
  if (!v.is_string()) throw Error(flag + "." + key, "must be a string");
  return v.get<std::string>();
}

// vLLM's SpeculativeConfig without a method: the draft's name says it (an EAGLE head's
// checkpoint names itself), else a draft model.
SpecMethod method_from_model(const std::string& model) {
  const std::string m = lowercase(model);
  if (m.find("eagle3") != std::string::npos) return SpecMethod::kEagle3;
  if (m.find("eagle") != std::string::npos) return SpecMethod::kEagle;
  if (m.find("mtp") != std::string::npos) return SpecMethod::kMtp;
  return SpecMethod::kDraftModel;
}

// Per-position rates from vLLM's synthetic_acceptance_length L (in [1, k + 1]): positions
// accepted in full up to L - 1, one fractional position, then none (_acceptance_length_to_rates).
std::vector<double> rates_from_length(double length, int k) {
  if (!(length >= 1 && length <= k + 1)) {
    throw Error(key_field("synthetic_acceptance_length"),
                format("must be in [1, num_speculative_tokens + 1 = %d]", k + 1));
  }
  std::vector<double> rates(size_t(k), 0.0);
  double left = length - 1;
  for (int i = 0; i < k && left > 0; ++i) {
    rates[size_t(i)] = std::min(1.0, left);
    left -= rates[size_t(i)];
  }
  return rates;
}

// RATES checked: K of them, each in [0, 1], non-increasing (an unconditional rate cannot grow
// with the position).
void check_rates(const std::vector<double>& rates, int k, const std::string& field) {
  if (int(rates.size()) != k) {
    throw Error(field, format("needs one rate per draft position: %d, got %zu", k, rates.size()));
  }
  for (size_t i = 0; i < rates.size(); ++i) {
    if (!(rates[i] >= 0 && rates[i] <= 1)) throw Error(field, "rates must be in [0, 1]");
    if (i > 0 && rates[i] > rates[i - 1]) {
      throw Error(field,
                  "per-position rates must not increase: position i is accepted only if every "
                  "position before it is");
    }
  }
}

// --spec-acceptance-rate: one conditional rate A (position i: A^i) or per-position rates.
std::vector<double> rates_from_flag(const std::string& text, int k) {
  const std::string name = field::kSpecAcceptanceRate;
  std::vector<double> values;
  std::string_view rest = text;
  while (true) {
    const size_t comma = rest.find(',');
    double v = 0;
    if (!parse_double(trim(rest.substr(0, comma)), v)) {
      throw Error(name, "expected a rate A, or per-position rates A1,A2,..., got '" +
                            text.substr(0, 80) + "'");
    }
    values.push_back(v);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (values.size() == 1 && k > 1) {
    if (!(values[0] >= 0 && values[0] <= 1)) throw Error(name, "must be in [0, 1]");
    std::vector<double> rates;
    double r = 1;
    for (int i = 0; i < k; ++i)
      rates.push_back(r *= values[0]);
    return rates;
  }
  check_rates(values, k, name);
  return values;
}

}  // namespace

SpeculativeOptions parse_speculative_config(const std::string& text,
                                            const std::string& acceptance) {
  SpeculativeOptions o;
  if (trim(text).empty()) {
    if (!trim(acceptance).empty()) {
      throw Error(field::kSpecAcceptanceRate, "needs {{speculative.config}}");
    }
    return o;
  }
  const json j = parse_object(text, kSpec);
  static const std::set<std::string> known = {
      "method", "num_speculative_tokens", "model", "draft_tensor_parallel_size",
      "rejection_sample_method", "synthetic_acceptance_rates", "synthetic_acceptance_length",
      // Taken and changing nothing servesim models.
      "prompt_lookup_min", "prompt_lookup_max", "draft_sample_method",
      "disable_padded_drafter_batch", "quantization", "revision", "max_model_len", "enforce_eager",
      "attention_backend"};
  for (const auto& [key, value] : j.items()) {
    if (key == "parallel_drafting") {
      throw Error(key_field(key), "parallel drafting (PARD, DFlash) is not modelled");
    }
    if (key == "tensor_parallel_size") {
      throw Error(key_field(key), "vLLM's key is draft_tensor_parallel_size");
    }
    if (!known.count(key)) throw Error(key_field(key), "is not a key servesim knows");
  }
  if (j.contains("model")) o.model = string_at(j, "model", kSpec);
  if (j.contains("method")) {
    o.method = parse_spec_method(string_at(j, "method", kSpec), key_field("method"));
  } else if (!o.model.empty()) {
    o.method = method_from_model(o.model);
  } else {
    throw Error(key_field("method"), "is needed without a model (ngram, eagle, eagle3, mtp)");
  }
  if (o.method == SpecMethod::kDraftModel && o.model.empty()) {
    throw Error(key_field("model"), "method draft_model needs the draft model (a catalogue name)");
  }
  if (!j.contains("num_speculative_tokens")) {
    throw Error(key_field("num_speculative_tokens"), "is needed (the drafts per step, k)");
  }
  o.num_speculative_tokens = int(integer_at(j, "num_speculative_tokens", 1, kMaxSpecTokens, kSpec));
  const int k = o.num_speculative_tokens;
  if (j.contains("draft_tensor_parallel_size")) {
    o.draft_tp = int(integer_at(j, "draft_tensor_parallel_size", 1, 64, kSpec));
  }
  // vLLM's ngram proposer: both bounds >= 1 and min <= max (SpeculativeConfig.__post_init__).
  int64_t lookup_min = 0, lookup_max = 0;
  if (j.contains("prompt_lookup_min"))
    lookup_min = integer_at(j, "prompt_lookup_min", 1, 1 << 20, kSpec);
  if (j.contains("prompt_lookup_max"))
    lookup_max = integer_at(j, "prompt_lookup_max", 1, 1 << 20, kSpec);
  if (lookup_min > 0 && lookup_max > 0 && lookup_min > lookup_max) {
    throw Error(key_field("prompt_lookup_min"),
                format("%lld is more than prompt_lookup_max %lld", (long long)lookup_min,
                       (long long)lookup_max));
  }
  const bool synthetic =
      j.contains("synthetic_acceptance_rates") || j.contains("synthetic_acceptance_length");
  if (j.contains("rejection_sample_method")) {
    const std::string m = string_at(j, "rejection_sample_method", kSpec);
    if (m != "synthetic" && m != "standard") {
      throw Error(key_field("rejection_sample_method"), "expected synthetic or standard");
    }
    if (m == "synthetic" && !synthetic) {
      throw Error(key_field("rejection_sample_method"),
                  "synthetic needs synthetic_acceptance_rates or synthetic_acceptance_length");
    }
  }
  if (j.contains("synthetic_acceptance_rates") && j.contains("synthetic_acceptance_length")) {
    throw Error(key_field("synthetic_acceptance_length"),
                "give synthetic_acceptance_rates or synthetic_acceptance_length, not both");
  }
  const bool flag = !trim(acceptance).empty();
  if (synthetic && flag) {
    throw Error(field::kSpecAcceptanceRate,
                "contradicts the synthetic acceptance of "
                "{{speculative.config}}");
  }
  if (j.contains("synthetic_acceptance_rates")) {
    const json& v = j.at("synthetic_acceptance_rates");
    const std::string field = key_field("synthetic_acceptance_rates");
    if (!v.is_array()) throw Error(field, "must be a list of rates");
    for (const json& r : v)
      o.acceptance_rates.push_back(number_at(r, field));
    check_rates(o.acceptance_rates, k, field);
  } else if (j.contains("synthetic_acceptance_length")) {
    o.acceptance_rates = rates_from_length(
        number_at(j.at("synthetic_acceptance_length"), key_field("synthetic_acceptance_length")),
        k);
  } else if (flag) {
    o.acceptance_rates = rates_from_flag(acceptance, k);
  } else {
    throw Error(
        field::kSpecAcceptanceRate,
        "servesim draws how many drafts are accepted: give {{speculative.acceptance_rate}} A (each "
        "draft accepted with probability A after the ones before it) or per-position "
        "rates, or synthetic_acceptance_rates / synthetic_acceptance_length in "
        "{{speculative.config}}");
  }
  return o;
}

namespace {

constexpr const char* kTransfer = field::kKvTransferConfig;
constexpr const char* kExtra = "kv-transfer-config.kv_connector_extra_config";

std::string extra_field(const std::string& key) {
  return std::string(kExtra) + "." + key;
}

// kv_connector_extra_config of J (an empty object when absent).
json extra_config(const json& j) {
  if (!j.contains("kv_connector_extra_config")) return json::object();
  const json& e = j.at("kv_connector_extra_config");
  if (!e.is_object()) throw Error(kExtra, "must be a JSON object");
  return e;
}

// A byte count at KEY of E times SCALE: positive, at most a petabyte.
double bytes_at(const json& e, const std::string& key, double scale) {
  const double v = number_at(e.at(key), extra_field(key)) * scale;
  if (!(v > 0 && v <= 1e15)) throw Error(extra_field(key), "must be a size > 0 (at most 1 PB)");
  return v;
}

KvOffloadOptions offloading_connector(const json& e) {
  static const std::set<std::string> known = {"cpu_bytes_to_use", "block_size",
                                              "eviction_policy",  "store_threshold",
                                              "max_tracker_size", "spec_name"};
  for (const auto& [key, value] : e.items()) {
    if (key == "num_cpu_blocks") {
      throw Error(extra_field(key),
                  "is vLLM's key before v0.15 (PR #24498): give cpu_bytes_to_use");
    }
    if (!known.count(key)) throw Error(extra_field(key), "is not a key servesim knows");
  }
  KvOffloadOptions o;
  o.backend = OffloadBackend::kNative;
  if (!e.contains("cpu_bytes_to_use")) {
    throw Error(extra_field("cpu_bytes_to_use"), "is needed (the CPU tier's bytes, all ranks)");
  }
  o.cpu_bytes = bytes_at(e, "cpu_bytes_to_use", 1.0);
  if (e.contains("block_size")) o.block_size = int(integer_at(e, "block_size", 1, 1 << 20, kExtra));
  if (e.contains("eviction_policy")) {
    const std::string p = string_at(e, "eviction_policy", kExtra);
    if (p == "arc") throw Error(extra_field("eviction_policy"), "arc is not modelled (lru is)");
    if (p != "lru") throw Error(extra_field("eviction_policy"), "expected lru or arc");
  }
  if (e.contains("store_threshold") && integer_at(e, "store_threshold", 0, 1 << 20, kExtra) >= 2) {
    throw Error(extra_field("store_threshold"),
                "storing a block only after repeated lookups is not modelled (0 or 1: at once)");
  }
  if (e.contains("spec_name") && string_at(e, "spec_name", kExtra) != "CPUOffloadingSpec") {
    throw Error(extra_field("spec_name"), "only the CPU tier (CPUOffloadingSpec) is modelled");
  }
  return o;
}

KvOffloadOptions lmcache_connector(const json& e) {
  KvOffloadOptions o;
  o.backend = OffloadBackend::kLmcache;
  o.per_rank = true;
  o.cpu_bytes = 5.0 * 1073741824.0;  // LMCache's max_local_cpu_size default: 5 GB per rank
  o.block_size = 256;                // its chunk_size default
  for (const auto& [key, value] : e.items()) {
    if (key == "lmcache.max_local_cpu_size") {
      o.cpu_bytes = bytes_at(e, key, 1073741824.0);
    } else if (key == "lmcache.chunk_size") {
      o.block_size = int(integer_at(e, key, 1, 1 << 20, kExtra));
    } else if (key == "lmcache.local_cpu") {
      if (!value.is_boolean() || !value.get<bool>()) {
        throw Error(extra_field(key), "must be true: the CPU tier is what servesim models");
      }
    } else if (key == "lmcache.save_decode_cache" || key == "lmcache.save_unfull_chunk" ||
               key == "lmcache.use_layerwise" || key == "lmcache.enable_async_loading") {
      if (!value.is_boolean() || value.get<bool>()) {
        throw Error(extra_field(key), "only LMCache's default (false) is modelled");
      }
    } else {
      throw Error(extra_field(key), "is not a key servesim knows");
    }
  }
  return o;
}

// --kv-transfer-config JSON TEXT.
KvOffloadOptions transfer_config(const std::string& text) {
  const json j = parse_object(text, kTransfer);
  static const std::set<std::string> known = {"kv_connector",
                                              "kv_role",
                                              "kv_connector_extra_config",
                                              "kv_load_failure_policy",
                                              "kv_buffer_size",
                                              "kv_buffer_device",
                                              "engine_id"};
  for (const auto& [key, value] : j.items()) {
    if (!known.count(key)) {
      throw Error(std::string(kTransfer) + "." + key, "is not a key servesim knows");
    }
  }
  if (!j.contains("kv_connector"))
    throw Error(std::string(kTransfer) + ".kv_connector", "is needed");
  // KVTransferConfig: kv_role must be set whenever a connector is.
  if (!j.contains("kv_role")) throw Error(std::string(kTransfer) + ".kv_role", "is needed");
  const std::string role = string_at(j, "kv_role", kTransfer);
  if (role != "kv_both" && role != "kv_producer" && role != "kv_consumer") {
    throw Error(std::string(kTransfer) + ".kv_role",
                "expected kv_both, kv_producer or kv_consumer");
  }
  if (j.contains("kv_load_failure_policy")) {
    const std::string p = string_at(j, "kv_load_failure_policy", kTransfer);
    if (p != "fail" && p != "recompute") {
      throw Error(std::string(kTransfer) + ".kv_load_failure_policy", "expected fail or recompute");
    }
  }
  const std::string connector = string_at(j, "kv_connector", kTransfer);
  if (connector == "OffloadingConnector") return offloading_connector(extra_config(j));
  if (connector == "LMCacheConnectorV1") return lmcache_connector(extra_config(j));
  throw Error(
      std::string(kTransfer) + ".kv_connector",
      "'" + connector.substr(0, 60) +
          "': servesim models OffloadingConnector and LMCacheConnectorV1 (CPU offload); "
          "disaggregated prefill is {{fleet.prefill_replicas}} and {{fleet.decode_replicas}}");
}

}  // namespace

KvOffloadOptions parse_kv_offload(double size_gib, const std::string& backend,
                                  const std::string& transfer) {
  const bool sized = size_gib != 0;
  if (!trim(transfer).empty()) {
    if (sized) {
      throw Error(field::kKvOffloadingSize,
                  "contradicts {{kv_transfer.config}}: vLLM builds one from the other");
    }
    if (!backend.empty())
      throw Error(field::kKvOffloadingBackend, "needs {{kv_transfer.offloading_size_gib}}");
    return transfer_config(transfer);
  }
  KvOffloadOptions o;
  if (!sized) {
    if (!backend.empty())
      throw Error(field::kKvOffloadingBackend, "needs {{kv_transfer.offloading_size_gib}}");
    return o;
  }
  if (!(size_gib > 0 && size_gib <= 1e6)) {
    throw Error(field::kKvOffloadingSize, "must be a size in GiB in (0, 1e6]");
  }
  o.cpu_bytes = size_gib * 1073741824.0;
  if (backend.empty() || backend == "native") {
    o.backend = OffloadBackend::kNative;
  } else if (backend == "lmcache") {
    // lmcache.max_local_cpu_size = size / (TP x PP): the same total, split over the ranks.
    o.backend = OffloadBackend::kLmcache;
    o.block_size = 256;
  } else {
    throw Error(field::kKvOffloadingBackend,
                "expected native or lmcache, got '" + backend.substr(0, 40) + "'");
  }
  return o;
}

}  // namespace servesim
