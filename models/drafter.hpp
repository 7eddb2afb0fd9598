// Drafter: the network that proposes speculative tokens (vLLM V1 --speculative-config), as the
// cost model and the memory plan see it:
//  - ngram (NgramProposer): a longest-match search over the request's tokens on the CPU: no GPU
//    work, no weights, no KV;
//  - eagle / eagle3 / mtp: one decoder layer of the target's shape on the target's hidden states
//    (EAGLE's head; DeepSeek's multi-token-prediction layer), with its own attention and KV in
//    the same KV cache; EAGLE and MTP share the target's embedding and LM head and add a fusing
//    projection (2 x hidden -> hidden), EAGLE-3 fuses three hidden states (3 x hidden -> hidden)
//    and has its own LM head over a 32,000-token draft vocabulary (the draft_vocab_size of the
//    published EAGLE-3 heads for Llama 3);
//  - draft_model (DraftModelProposer): a whole smaller model of the catalogue, at the target's
//    tensor-parallel degree (vLLM requires draft_tensor_parallel_size equal to it).
// vLLM's SpecDecodeBaseProposer.propose (vllm/v1/spec_decode/llm_base_proposer.py) runs the
// drafter after the target's sampling in every step: one pass over every token the step
// scheduled, then k - 1 passes of one token per sequence (models/spec_decode_cost.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "models/model.hpp"

namespace servesim {

// vLLM's SpeculativeConfig.method values servesim models (MTP model types such as deepseek_mtp
// and qwen3_next_mtp are normalised to mtp, as vLLM does).
enum class SpecMethod : uint8_t { kNone, kNgram, kEagle, kEagle3, kMtp, kDraftModel };

// "ngram", "eagle", "eagle3", "mtp", "draft_model" ("none").
const char* spec_method_name(SpecMethod m);
// The method vLLM calls NAME (its MTP model types included); Error naming FIELD and the known
// methods otherwise.
SpecMethod parse_spec_method(std::string_view name, const std::string& field);

// EAGLE-3 heads' draft vocabulary (draft_vocab_size in the published heads' config.json).
inline constexpr int kEagle3DraftVocab = 32000;

struct Drafter {
  SpecMethod method = SpecMethod::kNone;
  // What the drafter's forward passes run: a one-layer model of the target's shape (EAGLE, MTP)
  // or the draft model; unused for ngram.
  ModelSpec model;
  // The bytes its weights add to the target's, whole model (split over the TP group like the
  // target's): the head's layer and projection (and EAGLE-3's LM head), or the draft model.
  int64_t weight_bytes = 0;
  // Whether it runs on the GPU (not ngram).
  bool on_gpu() const { return method != SpecMethod::kNone && method != SpecMethod::kNgram; }
  // KV bytes one token adds on one GPU of a TP group of TP (its attention layers' K and V).
  int64_t kv_bytes_per_token_per_gpu(int tp) const {
    return on_gpu() ? model.kv_bytes_per_token_per_gpu(tp) : 0;
  }
};

// The drafter of METHOD for TARGET; DRAFT is the draft model (draft_model only; its vocabulary
// must be the target's, as vLLM requires for verification). Error naming
// speculative-config.model on a draft model whose vocabulary differs.
Drafter make_drafter(SpecMethod method, const ModelSpec& target, const ModelSpec* draft = nullptr);

}  // namespace servesim
