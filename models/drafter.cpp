#include "models/drafter.hpp"

#include <algorithm>
#include <utility>

#include "util/error.hpp"
#include "util/lookup.hpp"

namespace servesim {

namespace {

constexpr std::pair<SpecMethod, const char*> kMethodNames[] = {
    {SpecMethod::kNgram, "ngram"},
    {SpecMethod::kEagle, "eagle"},
    {SpecMethod::kEagle3, "eagle3"},
    {SpecMethod::kMtp, "mtp"},
    {SpecMethod::kDraftModel, "draft_model"}};

// vLLM's SpeculativeConfig normalises these MTP model types to "mtp".
constexpr const char* kMtpTypes[] = {"deepseek_mtp",       "mimo_mtp",       "glm4_moe_mtp",
                                     "ernie_mtp",          "qwen3_next_mtp", "longcat_flash_mtp",
                                     "pangu_ultra_moe_mtp"};

// One decoder layer's parameters of M (attention, every expert, shared expert, router, norms).
int64_t layer_params(const ModelSpec& m) {
  const int64_t router = m.num_experts > 1 ? int64_t(m.hidden_size) * m.num_experts : 0;
  return m.attention_params_per_layer() + m.num_experts * m.expert_params() +
         m.shared_expert_params() + router + 2 * int64_t(m.hidden_size);
}

}  // namespace

const char* spec_method_name(SpecMethod m) {
  for (const auto& [method, name] : kMethodNames) {
    if (method == m) return name;
  }
  return "none";
}

SpecMethod parse_spec_method(std::string_view name, const std::string& field) {
  const std::string key = lowercase(name);
  std::string known;
  for (const auto& [method, n] : kMethodNames) {
    if (key == n) return method;
    known.append(known.empty() ? "" : ", ").append(n);
  }
  for (const char* mtp : kMtpTypes) {
    if (key == mtp) return SpecMethod::kMtp;
  }
  throw Error(field, "'" + std::string(name) + "': servesim models the methods " + known +
                         " (and MTP model types such as deepseek_mtp)");
}

Drafter make_drafter(SpecMethod method, const ModelSpec& target, const ModelSpec* draft) {
  Drafter d;
  d.method = method;
  if (!d.on_gpu()) return d;
  if (method == SpecMethod::kDraftModel) {
    if (draft == nullptr) {
      throw Error(field::kSpeculativeModel, "method draft_model needs a draft model");
    }
    if (draft->vocab_size != target.vocab_size) {
      throw Error(field::kSpeculativeModel,
                  draft->name + "'s vocabulary (" + std::to_string(draft->vocab_size) +
                      " tokens) is not " + target.name + "'s (" +
                      std::to_string(target.vocab_size) + "): the target cannot verify its drafts");
    }
    d.model = *draft;
    d.model.kv_cache_bytes = target.kv_cache_bytes;
    d.weight_bytes = draft->weight_bytes();
    return d;
  }
  d.model = target;
  d.model.name = target.name + "-" + spec_method_name(method) + "-head";
  d.model.num_layers = 1;
  d.model.encoder_params = 0;
  // One of the target's routed-expert layers (DeepSeek's MTP layer is one), never a dense one.
  d.model.dense_layers = 0;
  d.model.dense_intermediate_size = 0;
  const int64_t h = target.hidden_size;
  int64_t params = layer_params(target) + 2 * h * h;  // the layer and the 2h -> h projection
  if (method == SpecMethod::kEagle3) {
    d.model.vocab_size = std::min(target.vocab_size, kEagle3DraftVocab);
    params += h * h + int64_t(d.model.vocab_size) * h;  // 3h -> h, its own LM head
  }
  d.weight_bytes = params * target.dtype_bytes;
  return d;
}

}  // namespace servesim
