#include "models/model.hpp"

#include <cmath>
#include <utility>

#include "models/parallel.hpp"
#include "util/error.hpp"
#include "util/ini.hpp"
#include "util/lookup.hpp"

namespace servesim {

int64_t ModelSpec::attention_params_per_layer() const {
  if (mla()) {
    // vLLM DeepseekV2MLAAttention: q_a_proj and q_b_proj (or q_proj), kv_a_proj_with_mqa,
    // kv_b_proj, o_proj; no bias.
    const int64_t h = hidden_size, heads = num_heads;
    const int64_t qk = qk_nope_head_dim + qk_rope_head_dim;
    const int64_t q =
        q_lora_rank > 0 ? h * q_lora_rank + int64_t(q_lora_rank) * heads * qk : h * heads * qk;
    const int64_t kv_a = h * (kv_lora_rank + qk_rope_head_dim);
    const int64_t kv_b = int64_t(kv_lora_rank) * heads * (qk_nope_head_dim + v_head_dim);
    return q + kv_a + kv_b + heads * v_head_dim * h;
  }
  const int64_t q = int64_t(num_heads) * head_dim;
  const int64_t kv = int64_t(num_kv_heads) * head_dim;
  const int64_t bias = (qkv_bias ? q + 2 * kv : 0) + (o_bias ? hidden_size : 0);
  const int64_t gate = attn_output_gate ? q : 0;  // q_proj's second half
  return int64_t(hidden_size) * (q + gate + 2 * kv) + q * hidden_size + bias +
         (attention_sinks ? num_heads : 0) + (qk_norm ? 2 * int64_t(head_dim) : 0);
}

int64_t ModelSpec::linear_attention_params_per_layer() const {
  if (!hybrid()) return 0;
  const int64_t h = hidden_size, nv = linear_num_value_heads;
  const int64_t key = int64_t(linear_num_key_heads) * linear_key_head_dim;
  const int64_t value = nv * linear_value_head_dim;
  const int64_t conv = 2 * key + value;
  return h * (2 * key + 2 * value) + h * 2 * nv + conv * linear_conv_kernel_dim + 2 * nv +
         linear_value_head_dim + value * h;
}

int64_t ModelSpec::mixer_params() const {
  return int64_t(full_attention_layers()) * attention_params_per_layer() +
         int64_t(linear_attention_layers()) * linear_attention_params_per_layer();
}

int64_t ModelSpec::linear_state_bytes_per_layer(int tp) const {
  if (!hybrid()) return 0;
  const int64_t key = int64_t(linear_num_key_heads) * linear_key_head_dim;
  const int64_t conv = (2 * key + int64_t(linear_num_value_heads) * linear_value_head_dim) / tp;
  const int64_t temporal =
      int64_t(linear_num_value_heads / tp) * linear_key_head_dim * linear_value_head_dim;
  return (int64_t(linear_conv_kernel_dim - 1) * conv + temporal) * dtype_bytes;
}

int64_t ModelSpec::hybrid_block_size(int tp, int alignment) const {
  if (!hybrid()) return 0;
  const int64_t token = kv_bytes_per_token_per_layer(tp) * alignment;
  return alignment * ((linear_state_bytes_per_layer(tp) + token - 1) / token);
}

int64_t ModelSpec::latent_norm_params_per_layer() const {
  return mla() ? int64_t(q_lora_rank) + kv_lora_rank : 0;
}

int64_t ModelSpec::replicated_attention_params_per_layer() const {
  if (!mla()) return 0;
  return int64_t(hidden_size) * (q_lora_rank + kv_lora_rank + qk_rope_head_dim);
}

int64_t ModelSpec::expert_params() const {
  return 3 * int64_t(hidden_size) * intermediate_size + expert_bias_params();
}

int64_t ModelSpec::shared_expert_params() const {
  return 3 * int64_t(hidden_size) * shared_expert_intermediate_size;
}

int64_t ModelSpec::dense_mlp_params() const {
  return 3 * int64_t(hidden_size) * dense_intermediate_size;
}

int64_t ModelSpec::router_params() const {
  return int64_t(moe_layers()) * ((hidden_size + (moe_bias ? 1 : 0)) * int64_t(num_experts) +
                                  (shared_expert_gate ? hidden_size : 0));
}

int64_t ModelSpec::active_mlp_params() const {
  // A dense model's layers each pass through their one MLP (intermediate_size).
  if (num_experts <= 1) return int64_t(num_layers) * (expert_params() + shared_expert_params());
  return moe_layers() * (experts_per_token * expert_params() + shared_expert_params()) +
         dense_layers * dense_mlp_params();
}

int64_t ModelSpec::active_linear_params() const {
  return mixer_params() + active_mlp_params() + router_params();
}

namespace {
// Parameters kept in the model's dtype: routers and norms of every layer (MLA's latent norms
// too), the embedding, the LM head unless tied, the final norm and any encoder.
int64_t unquantized_params(const ModelSpec& m) {
  const int64_t norms = 2 * int64_t(m.hidden_size) + m.latent_norm_params_per_layer();
  const int64_t embed = int64_t(m.vocab_size) * m.hidden_size;
  return m.router_params() + m.num_layers * norms + embed +
         (m.tie_word_embeddings ? 0 : m.lm_head_params()) + m.hidden_size + m.encoder_params;
}
int64_t mlp_params(const ModelSpec& m) {
  if (m.num_experts <= 1) return m.active_mlp_params();
  return m.moe_layers() * (m.num_experts * m.expert_params() + m.shared_expert_params()) +
         m.dense_layers * m.dense_mlp_params();
}
}  // namespace

int64_t ModelSpec::total_params() const {
  return mixer_params() + mlp_params(*this) + unquantized_params(*this);
}

int64_t ModelSpec::weight_bytes() const {
  // The routed experts' biases stay in dtype_bytes (expert_bytes).
  const double expert_biases = double(moe_layers()) * num_experts * double(expert_bias_params());
  return std::llround(double(mixer_params()) * attention_weight_bytes +
                      double(mlp_params(*this)) * mlp_weight_bytes +
                      expert_biases * (dtype_bytes - mlp_weight_bytes) +
                      double(unquantized_params(*this) * dtype_bytes) + mxfp4_load_extra_bytes());
}

double ModelSpec::mxfp4_load_extra_bytes() const {
  if (mlp_weight_bytes != kMxfp4WeightBytes) return 0;
  // An E8M0 scale (a byte) for every 32 weights, once more; each bias 4 bytes, not 2.
  const double experts = double(moe_layers()) * num_experts;
  const double bias = double(expert_bias_params());
  return experts * ((double(expert_params()) - bias) / 32 + bias * (4 - dtype_bytes));
}

double ModelSpec::weight_bytes_per_gpu(int tp) const {
  // Only MLA's down projections are counted whole on every GPU; the norms and routers every GPU
  // also holds whole (a few MB) are split with the rest, as before MLA was modelled.
  const double replicated =
      double(num_layers) * double(replicated_attention_params_per_layer()) * attention_weight_bytes;
  return (double(weight_bytes()) - replicated) / tp + replicated;
}

double ModelSpec::stage_weight_bytes_per_gpu(int tp, int layers, bool first, bool last) const {
  if (first && last) return weight_bytes_per_gpu(tp);
  // The embedding and the LM head are both vocab x hidden (lm_head_params).
  const double embed = double(lm_head_params()) * dtype_bytes;
  const double norm = double(hidden_size) * dtype_bytes;
  const double head = embed + norm;
  const double encoder = double(encoder_params) * dtype_bytes;
  const double outside = embed + (tie_word_embeddings ? 0 : embed) + norm + encoder;
  const double decoder = weight_bytes_per_gpu(tp) - outside / tp;
  return decoder * layers / num_layers + ((first ? embed + encoder : 0) + (last ? head : 0)) / tp;
}

double ModelSpec::ep_weight_bytes_per_gpu(int tp, int ep) const {
  const double routed = routed_expert_bytes();
  return weight_bytes_per_gpu(tp) - routed / tp +
         routed / num_experts * local_experts(num_experts, ep);
}

std::string ModelSpec::quantization() const {
  if (mlp_weight_bytes == kNvfp4WeightBytes) return "nvfp4";
  if (mlp_weight_bytes == kMxfp4WeightBytes) return "mxfp4";
  return attention_weight_bytes == 1 || mlp_weight_bytes == 1 ? "fp8" : "";
}

void apply_serving_dtypes(ModelSpec& m, const std::string& quantization,
                          const std::string& kv_cache_dtype) {
  if (quantization == "fp8") {
    // vLLM takes the checkpoint's quantization_config over --quantization, and refuses another.
    if (m.quantization() == "mxfp4" || m.quantization() == "nvfp4") {
      throw Error(field::kQuantization, m.name + " is an " + m.quantization() +
                                            " checkpoint: vLLM serves it as " + m.quantization() +
                                            ", not as fp8");
    }
    m.attention_weight_bytes = 1;
    m.mlp_weight_bytes = 1;
  } else if (quantization == "none") {
    if (!m.quantization().empty()) {
      throw Error(field::kQuantization,
                  m.name + " is an " + m.quantization() +
                      " checkpoint: vLLM serves it as quantized, not as none");
    }
  } else if (!quantization.empty()) {
    throw Error(field::kQuantization,
                "'" + quantization +
                    "': servesim models fp8 or none at load; an MXFP4 or NVFP4 checkpoint is a "
                    "model of its own (gpt-oss-120b, llama-3.3-70b-fp4, or a model file's "
                    "quantization)");
  }
  if (kv_cache_dtype == "fp8" || kv_cache_dtype == "fp8_e4m3" || kv_cache_dtype == "fp8_e5m2") {
    m.kv_cache_bytes = 1;
  } else if (kv_cache_dtype == "auto" || kv_cache_dtype.empty()) {
    m.kv_cache_bytes = m.dtype_bytes;
  } else {
    throw Error(field::kKvCacheDtype, "'" + kv_cache_dtype + "': auto, fp8, fp8_e4m3 or fp8_e5m2");
  }
}

int64_t ModelSpec::active_params() const {
  return total_params() - encoder_params -
         int64_t(moe_layers()) * (num_experts - experts_per_token) * expert_params();
}

namespace {
// Llama 4's vision_config: 34 encoder layers (q, k, v, o with bias; fc1 and fc2 with bias; two
// LayerNorms) of width 1408 and MLP 5632, patch and position embeddings for 336-pixel tiles of
// 14-pixel patches, the pixel-shuffle MLP (5632 -> 4096 -> 4096) and the projector to 5120.
constexpr int64_t kVisionLayer =
    4 * (1408LL * 1408 + 1408) + (1408LL * 5632 + 5632) + (5632LL * 1408 + 1408) + 4 * 1408;
constexpr int64_t kLlama4VisionParams = 34 * kVisionLayer + 3 * 14 * 14 * 1408 + 1408 + 577 * 1408 +
                                        4 * 1408 + 5632LL * 4096 + 4096LL * 4096 + 4096LL * 5120;

// DeepSeek-V3's architecture (DeepseekV3ForCausalLM), as its FP8 checkpoints publish it: 61
// layers of width 7168; multi-head latent attention with q_lora_rank 1536, kv_lora_rank 512,
// heads of 128 + 64 rope for q and k and 128 for v; routed experts of width 2048, 8 a token, and
// one shared expert; the first DENSE_LAYERS layers (first_k_dense_replace) a dense MLP of 18432.
// Linear layers in FP8 (128 x 128 blocks); the embedding, LM head, routers and norms in BF16.
ModelSpec deepseek_v3_architecture(const char* name, const char* hf_id, int heads, int vocab,
                                   int max_position, int experts, int dense_layers) {
  return {.name = name,
          .hf_id = hf_id,
          .num_layers = 61,
          .hidden_size = 7168,
          .num_heads = heads,
          .num_kv_heads = heads,
          .head_dim = 192,
          .intermediate_size = 2048,
          .vocab_size = vocab,
          .max_position = max_position,
          .num_experts = experts,
          .experts_per_token = 8,
          .shared_expert_intermediate_size = 2048,
          .attention_weight_bytes = 1,
          .mlp_weight_bytes = 1,
          .q_lora_rank = 1536,
          .kv_lora_rank = 512,
          .qk_nope_head_dim = 128,
          .qk_rope_head_dim = 64,
          .v_head_dim = 128,
          .dense_layers = dense_layers,
          .dense_intermediate_size = 18432};
}

// gpt-oss (openai/gpt-oss-120b and -20b, GptOssForCausalLM): LAYERS layers of width 2880;
// attention of 64 heads of 64 and 8 KV heads with q, k, v and o biases and a learned sink a head,
// every even layer (layer 0 first) over a 128-token sliding window, the odd ones over the whole
// context; EXPERTS experts of width 2880 with biases, 4 a token, a router with a bias; no shared
// expert; embedding and LM head untied. Published with the experts in MXFP4, the rest in BF16.
ModelSpec gpt_oss_architecture(const char* name, const char* hf_id, int layers, int experts) {
  return {.name = name,
          .hf_id = hf_id,
          .num_layers = layers,
          .hidden_size = 2880,
          .num_heads = 64,
          .num_kv_heads = 8,
          .head_dim = 64,
          .intermediate_size = 2880,
          .vocab_size = 201088,
          .max_position = 131072,
          .num_experts = experts,
          .experts_per_token = 4,
          .qkv_bias = true,
          .mlp_weight_bytes = kMxfp4WeightBytes,
          .sliding_window = 128,
          .sliding_layers = layers / 2,
          .o_bias = true,
          .attention_sinks = true,
          .moe_bias = true};
}

// Qwen3-Next-80B-A3B's config.json.
ModelSpec qwen3_next_architecture() {
  return {.name = "qwen3-next-80b-a3b",
          .hf_id = "Qwen/Qwen3-Next-80B-A3B",
          .num_layers = 48,
          .hidden_size = 2048,
          .num_heads = 16,
          .num_kv_heads = 2,
          .head_dim = 256,
          .intermediate_size = 512,
          .vocab_size = 151936,
          .max_position = 262144,
          .num_experts = 512,
          .experts_per_token = 10,
          .shared_expert_intermediate_size = 512,
          .full_attention_interval = 4,
          .linear_num_key_heads = 16,
          .linear_num_value_heads = 32,
          .linear_key_head_dim = 128,
          .linear_value_head_dim = 128,
          .linear_conv_kernel_dim = 4,
          .attn_output_gate = true,
          .qk_norm = true,
          .partial_rotary_factor = 0.25,
          .shared_expert_gate = true};
}

}  // namespace

const std::vector<ModelSpec>& model_catalogue() {
  // Fields from each model's published config.json on the Hugging Face hub:
  // layers, hidden, heads, kv heads, head_dim, intermediate, vocab, max_position_embeddings,
  // experts, experts per token, qkv bias, tied embeddings.
  static const std::vector<ModelSpec> models = {
      {"llama-2-7b", "meta-llama/Llama-2-7b-hf", 32, 4096, 32, 32, 128, 11008, 32000, 4096},
      {"llama-2-13b", "meta-llama/Llama-2-13b-hf", 40, 5120, 40, 40, 128, 13824, 32000, 4096},
      {"llama-2-70b", "meta-llama/Llama-2-70b-hf", 80, 8192, 64, 8, 128, 28672, 32000, 4096},
      {"llama-3-8b", "meta-llama/Meta-Llama-3-8B", 32, 4096, 32, 8, 128, 14336, 128256, 8192},
      {"llama-3.1-8b", "meta-llama/Llama-3.1-8B", 32, 4096, 32, 8, 128, 14336, 128256, 131072},
      {"llama-3-70b", "meta-llama/Meta-Llama-3-70B", 80, 8192, 64, 8, 128, 28672, 128256, 8192},
      {"llama-3.1-70b", "meta-llama/Llama-3.1-70B", 80, 8192, 64, 8, 128, 28672, 128256, 131072},
      // Sliding-window attention (4096) is not modelled: attention spans the whole context.
      {"mistral-7b-v0.1", "mistralai/Mistral-7B-v0.1", 32, 4096, 32, 8, 128, 14336, 32000, 32768},
      {"qwen2.5-7b", "Qwen/Qwen2.5-7B", 28, 3584, 28, 4, 128, 18944, 152064, 131072, 1, 1, true},
      // The Instruct fine-tune's config.json limits positions to 32768 (the base model: 131072).
      {"qwen2.5-7b-instruct", "Qwen/Qwen2.5-7B-Instruct", 28, 3584, 28, 4, 128, 18944, 152064,
       32768, 1, 1, true},
      {"qwen2.5-72b", "Qwen/Qwen2.5-72B", 80, 8192, 64, 8, 128, 29568, 152064, 131072, 1, 1, true},
      // head_dim 128 while hidden / heads is 160.
      {"mistral-nemo-12b", "mistralai/Mistral-Nemo-Instruct-2407", 40, 5120, 32, 8, 128, 14336,
       131072, 131072},
      {"yi-34b", "01-ai/Yi-34B", 60, 7168, 56, 8, 128, 20480, 64000, 4096},
      // Llama 3.2's small models tie the LM head to the embedding; the 1B's heads are 64 wide.
      {"llama-3.2-1b", "meta-llama/Llama-3.2-1B", 16, 2048, 32, 8, 64, 8192, 128256, 131072, 1, 1,
       false, true},
      {"llama-3.2-3b", "meta-llama/Llama-3.2-3B", 28, 3072, 24, 8, 128, 8192, 128256, 131072, 1, 1,
       false, true},
      // Llama 3.3 70B is Llama 3.1 70B's architecture, retrained.
      {"llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct", 80, 8192, 64, 8, 128, 28672, 128256,
       131072},
      // NVIDIA's NVFP4 checkpoint of it (TensorRT Model Optimizer: every linear layer but the LM
      // head in NVFP4, weights and activations; vLLM's modelopt_fp4).
      {"llama-3.3-70b-fp4", "nvidia/Llama-3.3-70B-Instruct-FP4", 80, 8192, 64, 8, 128, 28672,
       128256, 131072, 1, 1, false, false, 0, 0, 2, kNvfp4WeightBytes, kNvfp4WeightBytes},
      {"llama-3.1-405b", "meta-llama/Llama-3.1-405B", 126, 16384, 128, 8, 128, 53248, 128256,
       131072},
      // Code Llama (Llama 2 architecture, RoPE base 1e6 for 16K contexts): the 7B and 13B add 16
      // infilling tokens to the vocabulary, the 34B does not.
      {"codellama-7b", "codellama/CodeLlama-7b-hf", 32, 4096, 32, 32, 128, 11008, 32016, 16384},
      {"codellama-13b", "codellama/CodeLlama-13b-hf", 40, 5120, 40, 40, 128, 13824, 32016, 16384},
      {"codellama-34b", "codellama/CodeLlama-34b-hf", 48, 8192, 64, 8, 128, 22016, 32000, 16384},
      {"codellama-70b", "codellama/CodeLlama-70b-hf", 80, 8192, 64, 8, 128, 28672, 32016, 16384},
      {"mistral-7b-v0.3", "mistralai/Mistral-7B-Instruct-v0.3", 32, 4096, 32, 8, 128, 14336, 32768,
       32768},
      // head_dim 128 while hidden / heads is 160.
      {"mistral-small-24b", "mistralai/Mistral-Small-24B-Instruct-2501", 40, 5120, 32, 8, 128,
       32768, 131072, 32768},
      {"qwen2.5-14b", "Qwen/Qwen2.5-14B", 48, 5120, 40, 8, 128, 13824, 152064, 131072, 1, 1, true},
      {"qwen2.5-32b", "Qwen/Qwen2.5-32B", 64, 5120, 40, 8, 128, 27648, 152064, 131072, 1, 1, true},
      // Qwen3 dense: no qkv bias, an RMSNorm on q and k (2 x 128 weights a layer, left out), heads
      // 128 wide whatever hidden / heads is; the 4B ties its LM head.
      {"qwen3-4b", "Qwen/Qwen3-4B", 36, 2560, 32, 8, 128, 9728, 151936, 40960, 1, 1, false, true},
      {"qwen3-8b", "Qwen/Qwen3-8B", 36, 4096, 32, 8, 128, 12288, 151936, 40960},
      {"qwen3-14b", "Qwen/Qwen3-14B", 40, 5120, 40, 8, 128, 17408, 151936, 40960},
      {"qwen3-32b", "Qwen/Qwen3-32B", 64, 5120, 64, 8, 128, 25600, 151936, 40960},
      // Qwen3's MoE: 128 experts of width 768 (moe_intermediate_size), 8 routed per token, no
      // shared expert.
      {"qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B", 48, 2048, 32, 4, 128, 768, 151936, 40960, 128, 8},
      {"mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1", 32, 4096, 32, 8, 128, 14336, 32000, 32768, 8,
       2},
      // The official checkpoints' vocabulary (tokenizer v3) is 32768.
      {"mixtral-8x22b", "mistralai/Mixtral-8x22B-v0.1", 56, 6144, 48, 8, 128, 16384, 32768, 65536,
       8, 2},
      // Llama 4 Scout: 16 routed experts (top-1) and a shared expert in all 48 layers, plus a
      // vision tower (34 layers of width 1408 and MLP 5632, pixel-shuffle adapter and projector to
      // 5120: 0.87 B parameters). Chunked local attention (8192-token chunks on 3 layers of 4) is
      // not modelled: attention spans the whole context, as it does below 8192 tokens.
      {"llama-4-scout-17b-16e", "meta-llama/Llama-4-Scout-17B-16E-Instruct", 48, 5120, 40, 8, 128,
       8192, 202048, 10485760, 16, 1, false, false, 8192, kLlama4VisionParams},
      // Red Hat's FP8 checkpoint (llm-compressor FP8_DYNAMIC): experts and shared experts in FP8
      // with dynamic per-token activation scales; attention, router, embeddings, LM head and the
      // vision tower left in BF16 (the Llama 4 recipe's ignore list).
      {"llama-4-scout-17b-16e-fp8", "RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic", 48, 5120,
       40, 8, 128, 8192, 202048, 10485760, 16, 1, false, false, 8192, kLlama4VisionParams, 2, 2, 1},
      // Llama 4 Maverick: 128 routed experts (top-1) and a shared expert of width 8192 in every
      // other layer (interleave_moe_layer_step 2), the 24 others a dense MLP of 16384
      // (intermediate_size_mlp); Scout's vision tower. 400 B parameters, 17 B active.
      {.name = "llama-4-maverick-17b-128e",
       .hf_id = "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
       .num_layers = 48,
       .hidden_size = 5120,
       .num_heads = 40,
       .num_kv_heads = 8,
       .head_dim = 128,
       .intermediate_size = 8192,
       .vocab_size = 202048,
       .max_position = 1048576,
       .num_experts = 128,
       .experts_per_token = 1,
       .shared_expert_intermediate_size = 8192,
       .encoder_params = kLlama4VisionParams,
       .dense_layers = 24,
       .dense_intermediate_size = 16384},
      // Qwen3's large MoE: 128 experts of width 1536 (moe_intermediate_size), 8 routed per token,
      // no shared expert, every layer sparse. 235 B parameters, 22 B active.
      {"qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B", 94, 4096, 64, 4, 128, 1536, 151936, 40960, 128,
       8},
      // DeepSeek-V3 (and R1, its reasoning fine-tune): 128 heads, 256 routed experts, the first 3
      // layers dense. The multi-token prediction layer (num_nextn_predict_layers 1, 14 B) is
      // loaded only as a drafter: left out. 671 B parameters, 37 B active.
      deepseek_v3_architecture("deepseek-v3", "deepseek-ai/DeepSeek-V3", 128, 129280, 163840, 256,
                               3),
      // Kimi K2: DeepSeek-V3's architecture with 64 heads, 384 routed experts and one dense layer;
      // FP8 (128 x 128 blocks) as published. 1,026 B parameters by this count (the card: 1 T),
      // 32.9 B active (the card: 32 B).
      deepseek_v3_architecture("kimi-k2", "moonshotai/Kimi-K2-Instruct", 64, 163840, 131072, 384,
                               1),
      // gpt-oss: 116.8 B parameters, 5.1 B active (120b); 20.9 B, 3.6 B active (20b).
      gpt_oss_architecture("gpt-oss-120b", "openai/gpt-oss-120b", 36, 128),
      gpt_oss_architecture("gpt-oss-20b", "openai/gpt-oss-20b", 24, 32),
      // Qwen3-Next-80B-A3B (Qwen3NextForCausalLM): 48 layers of width 2048, every fourth full
      // (gated) attention of 16 heads of 256 and 2 KV heads, the others Gated DeltaNet of 16
      // key heads and 32 value heads of 128; 512 experts of 512, 10 a token, and a gated shared
      // expert of 512. The multi-token prediction layer is loaded only as a drafter: left out.
      // 79,674,391,296 parameters, 3.87 B active (the card: 80 B, 3 B activated).
      qwen3_next_architecture(),
  };
  return models;
}

namespace {

// A Hugging Face id in the form the catalogue is matched on: lower case, without the
// organisation, and without the -instruct and -chat of the fine-tunes (same architecture).
std::string hf_key(std::string_view id) {
  std::string key =
      lowercase(id.substr(id.find('/') == std::string_view::npos ? 0 : id.find('/') + 1));
  for (const std::string tag : {"-instruct", "-chat"}) {
    for (size_t at; (at = key.find(tag)) != std::string::npos;)
      key.erase(at, tag.size());
  }
  return key;
}

}  // namespace

namespace {

// Published models that are a catalogue architecture under another name (distillations and
// derivatives with the same config.json shape), by Hugging Face id without the organisation.
const std::pair<const char*, const char*> kDerivedModels[] = {
    {"deepseek-r1-distill-llama-8b", "llama-3.1-8b"},
    {"deepseek-r1-distill-llama-70b", "llama-3.3-70b"},
    {"deepseek-r1-distill-qwen-14b", "qwen2.5-14b"},
    {"deepseek-r1-distill-qwen-32b", "qwen2.5-32b"},
    {"qwen2.5-coder-32b", "qwen2.5-32b"},
    {"qwq-32b", "qwen2.5-32b"},
    {"meta-llama-3.1-8b", "llama-3.1-8b"},
    {"meta-llama-3.1-70b", "llama-3.1-70b"},
    {"deepseek-r1", "deepseek-v3"},
    {"deepseek-r1-0528", "deepseek-v3"},
    {"deepseek-v3-0324", "deepseek-v3"},
};

}  // namespace

bool same_architecture_id(std::string_view a, std::string_view b) {
  return hf_key(a) == hf_key(b);
}

ModelSpec find_model(std::string_view name) {
  // A Hugging Face id the catalogue holds as such, then the same architecture under another tag.
  for (const ModelSpec& m : model_catalogue()) {
    if (lowercase(name) == lowercase(m.hf_id)) return m;
  }
  const std::string key = hf_key(name);
  for (const ModelSpec& m : model_catalogue()) {
    if (lowercase(name) != m.name && hf_key(m.hf_id) == key) return m;
  }
  for (const auto& [derived, base] : kDerivedModels) {
    if (key == derived) {
      ModelSpec m = find_in_catalogue(model_catalogue(), base, field::kModel, "model", "");
      m.hf_id = std::string(name);
      return m;
    }
  }
  return find_in_catalogue(
      model_catalogue(), name, field::kModel, "model",
      "; a Hugging Face id of these; or describe one with " + field::ref(field::kModelFile));
}

namespace {
// A hybrid model's linear-attention fields: all of them with full_attention_interval, none
// without.
void validate_linear_attention(const ModelSpec& m, const std::string& source) {
  struct Field {
    const char* name;
    int value;
  };
  const Field linear[] = {{"linear_num_key_heads", m.linear_num_key_heads},
                          {"linear_num_value_heads", m.linear_num_value_heads},
                          {"linear_key_head_dim", m.linear_key_head_dim},
                          {"linear_value_head_dim", m.linear_value_head_dim},
                          {"linear_conv_kernel_dim", m.linear_conv_kernel_dim}};
  if (m.full_attention_interval < 0 || m.full_attention_interval > m.num_layers) {
    throw Error(
        source, 0, "full_attention_interval",
        "must be an integer in [0, num_hidden_layers] (" + std::to_string(m.num_layers) + ")");
  }
  if (!m.hybrid()) {
    for (const Field& f : linear) {
      if (f.value != 0) {
        throw Error(source, 0, f.name,
                    "is a linear-attention width: give full_attention_interval too, or leave it "
                    "out");
      }
    }
    return;
  }
  if (m.full_attention_interval < 2) {
    throw Error(source, 0, "full_attention_interval",
                "1 makes every layer full attention: leave it out for a model without linear "
                "attention");
  }
  for (const Field& f : linear) {
    if (f.value < 1 || f.value > (1 << 16)) {
      throw Error(source, 0, f.name,
                  "must be an integer in [1, 65536] with full_attention_interval");
    }
  }
  if (m.linear_num_value_heads % m.linear_num_key_heads != 0) {
    throw Error(source, 0, "linear_num_value_heads",
                "must be a multiple of linear_num_key_heads (" +
                    std::to_string(m.linear_num_key_heads) +
                    "), as vLLM's Gated DeltaNet groups "
                    "them");
  }
  // The attention block vLLM sizes to hold a state is largest on one GPU (more GPUs split the
  // state at least as much as the KV): bounded, so that a block size stays an int.
  const int64_t block = m.hybrid_block_size(1);
  if (block > (1 << 24)) {
    throw Error(source, 0, "linear_value_head_dim",
                "a linear layer's state of " + std::to_string(m.linear_state_bytes_per_layer(1)) +
                    " B would need attention blocks of " + std::to_string(block) +
                    " tokens to hold it (at most 2^24)");
  }
  if (m.sliding() || m.mla()) {
    throw Error(source, 0, "full_attention_interval",
                std::string("linear attention beside ") +
                    (m.mla() ? "multi-head latent attention" : "sliding-window layers") +
                    " is not modelled");
  }
}
}  // namespace

void validate(const ModelSpec& m, const std::string& source) {
  // Upper bounds far above any published model keep every parameter count within int64.
  struct Field {
    const char* name;
    int value, max;
  };
  const Field fields[] = {
      {"num_hidden_layers", m.num_layers, 1 << 10},
      {"hidden_size", m.hidden_size, 1 << 16},
      {"num_attention_heads", m.num_heads, 1 << 12},
      {"num_key_value_heads", m.num_kv_heads, 1 << 12},
      {"head_dim", m.head_dim, 1 << 12},
      {"intermediate_size", m.intermediate_size, 1 << 20},
      {"vocab_size", m.vocab_size, 1 << 22},
      {"max_position_embeddings", m.max_position, 1 << 30},
      {"num_local_experts", m.num_experts, 1 << 9},
      {"num_experts_per_tok", m.experts_per_token, 1 << 9},
  };
  for (const Field& f : fields) {
    if (f.value < 1 || f.value > f.max) {
      throw Error(source, 0, f.name, "must be an integer in [1, " + std::to_string(f.max) + "]");
    }
  }
  // A prompt token and an output token: a smaller context was blamed on --max-model-len, a flag
  // the user never gave (issue 44).
  if (m.max_position < 2) {
    throw Error(source, 0, "max_position_embeddings",
                "must be at least 2 (a prompt token and an output token)");
  }
  if (m.num_heads % m.num_kv_heads != 0) {
    throw Error(source, 0, "num_key_value_heads", "must divide num_attention_heads");
  }
  if (m.experts_per_token > m.num_experts) {
    throw Error(source, 0, "num_experts_per_tok", "must not exceed num_local_experts");
  }
  if (m.shared_expert_intermediate_size < 0 || m.shared_expert_intermediate_size > (1 << 20)) {
    throw Error(source, 0, "shared_expert_intermediate_size", "must be an integer in [0, 1048576]");
  }
  // MLA: every rank and width given, or none (kv_lora_rank 0); q_lora_rank may be 0 (no q latent).
  const Field latent[] = {{"q_lora_rank", m.q_lora_rank, 1 << 16},
                          {"kv_lora_rank", m.kv_lora_rank, 1 << 16},
                          {"qk_nope_head_dim", m.qk_nope_head_dim, 1 << 12},
                          {"qk_rope_head_dim", m.qk_rope_head_dim, 1 << 12},
                          {"v_head_dim", m.v_head_dim, 1 << 12}};
  for (const Field& f : latent) {
    if (f.value < 0 || f.value > f.max) {
      throw Error(source, 0, f.name, "must be an integer in [0, " + std::to_string(f.max) + "]");
    }
  }
  // Blame a key the file has: the latent rank for a width it lacks, a width without the rank.
  if (m.mla()) {
    for (const Field& f : latent) {
      if (f.value == 0 && std::string_view(f.name) != "q_lora_rank") {
        throw Error(source, 0, "kv_lora_rank",
                    "multi-head latent attention needs " + std::string(f.name) + " too");
      }
    }
  } else {
    for (const Field& f : latent) {
      if (f.value > 0) {
        throw Error(source, 0, f.name,
                    "is a multi-head latent attention width: give kv_lora_rank too, or leave "
                    "it out");
      }
    }
  }
  if (m.dense_layers != 0) {
    if (m.num_experts <= 1) {
      throw Error(source, 0, "dense_layers",
                  "is for a MoE model's dense layers: a dense model's MLP is intermediate_size");
    }
    if (m.dense_layers < 0 || m.dense_layers >= m.num_layers) {
      throw Error(source, 0, "dense_layers",
                  "must be an integer in [0, num_hidden_layers - 1] (" +
                      std::to_string(m.num_layers - 1) + ")");
    }
    if (m.dense_intermediate_size == 0) {
      throw Error(source, 0, "dense_layers", "needs dense_intermediate_size, their MLP's width");
    }
    if (m.dense_intermediate_size < 1 || m.dense_intermediate_size > (1 << 20)) {
      throw Error(source, 0, "dense_intermediate_size",
                  "must be an integer in [1, 1048576] with dense_layers");
    }
  } else if (m.dense_intermediate_size != 0) {
    throw Error(source, 0, "dense_intermediate_size",
                "is the width of dense_layers' MLP: give dense_layers too, or leave it out");
  }
  if (m.encoder_params < 0 || m.encoder_params > (int64_t(1) << 40)) {
    throw Error(source, 0, "encoder_params", "must be an integer in [0, 2^40]");
  }
  if (m.kv_cache_bytes != 1 && m.kv_cache_bytes != 2) {
    throw Error(source, 0, "kv_cache_bytes", "must be 1 (FP8) or 2 (BF16)");
  }
  const double a = m.attention_weight_bytes;
  if (a != 1 && a != 2 && a != kNvfp4WeightBytes) {
    throw Error(source, 0, "attention_weight_bytes", "must be 1 (FP8), 2 (BF16) or 0.5625 (NVFP4)");
  }
  if (m.mlp_weight_bytes != 1 && m.mlp_weight_bytes != 2 &&
      m.mlp_weight_bytes != kMxfp4WeightBytes && m.mlp_weight_bytes != kNvfp4WeightBytes) {
    throw Error(source, 0, "mlp_weight_bytes",
                "must be 1 (FP8), 2 (BF16), 0.53125 (MXFP4) or 0.5625 (NVFP4)");
  }
  if ((a == kNvfp4WeightBytes) != (m.mlp_weight_bytes == kNvfp4WeightBytes)) {
    throw Error(source, 0, "quantization",
                "nvfp4 quantizes every linear layer but the LM head (a ModelOpt NVFP4 checkpoint)");
  }
  if (m.mlp_weight_bytes == kMxfp4WeightBytes && m.num_experts <= 1) {
    throw Error(
        source, 0, "quantization",
        "mxfp4 quantizes a MoE model's experts (vLLM's Mxfp4MoEMethod): this model is dense");
  }
  if (m.moe_bias && m.num_experts <= 1) {
    throw Error(source, 0, "moe_bias",
                "is for a MoE model's experts and router: this model is dense");
  }
  // Sliding-window attention: both counts or neither; one KV cache group of each kind.
  if (m.sliding_window < 0 || m.sliding_window > (1 << 30)) {
    throw Error(source, 0, "sliding_window", "must be an integer in [0, 2^30]");
  }
  if (m.sliding_layers < 0 || m.sliding_layers >= m.num_layers) {
    throw Error(source, 0, "sliding_layers",
                "must be an integer in [0, num_hidden_layers - 1] (" +
                    std::to_string(m.num_layers - 1) +
                    "): some layer attends to the whole context");
  }
  if ((m.sliding_window > 0) != (m.sliding_layers > 0)) {
    throw Error(source, 0, m.sliding_window > 0 ? "sliding_window" : "sliding_layers",
                "needs " + std::string(m.sliding_window > 0 ? "sliding_layers" : "sliding_window") +
                    " too: the layers with a window, and the window's tokens");
  }
  if (m.sliding()) {
    // gpt-oss's layer_types: sliding and full attention alternate from layer 0 (what servesim's
    // KV groups per pipeline stage assume).
    if (m.sliding_layers != (m.num_layers + 1) / 2) {
      throw Error(source, 0, "sliding_layers",
                  "must be " + std::to_string((m.num_layers + 1) / 2) +
                      ": servesim models sliding and full-attention layers alternating from "
                      "layer 0, as gpt-oss's layer_types");
    }
    if (m.mla()) {
      throw Error(source, 0, "sliding_window",
                  "with multi-head latent attention is not modelled (DeepSeek-V4's)");
    }
    // vLLM's groups (kv_cache_layers_per_block): one of each kind when the counts are within
    // 1.5 times; servesim's KV cache manager models that layout (gpt-oss), not Gemma 3's 5:1.
    const int full = m.num_layers - m.sliding_layers, group = m.kv_cache_layers_per_block();
    if (group < full || group < m.sliding_layers) {
      throw Error(
          source, 0, "sliding_layers",
          std::to_string(m.sliding_layers) + " sliding and " + std::to_string(full) +
              " full-attention layers make " +
              std::to_string((full + group - 1) / group + (m.sliding_layers + group - 1) / group) +
              " KV cache groups in vLLM; servesim models one of each (the counts within "
              "1.5 times, as gpt-oss's)");
    }
  }
  validate_linear_attention(m, source);
  if (!(m.partial_rotary_factor > 0 && m.partial_rotary_factor <= 1)) {
    throw Error(source, 0, "partial_rotary_factor", "must be in (0, 1]");
  }
  if (m.shared_expert_gate && m.shared_expert_intermediate_size == 0) {
    throw Error(source, 0, "shared_expert_gate", "gates a shared expert: this model has none");
  }
  if (m.name.empty()) throw Error(source, 0, "name", "must not be empty");
}

ModelSpec load_model_file(const std::string& path) {
  ModelSpec m;
  int head_dim = 0;
  std::string quantization;
  const std::set<std::string> given = load_ini_fields(
      path, {{"name", &m.name, true},
             {"hf_id", &m.hf_id},
             {"num_hidden_layers", &m.num_layers, true},
             {"hidden_size", &m.hidden_size, true},
             {"num_attention_heads", &m.num_heads, true},
             {"num_key_value_heads", &m.num_kv_heads},
             {"head_dim", &head_dim},
             {"intermediate_size", &m.intermediate_size, true},
             {"vocab_size", &m.vocab_size, true},
             {"max_position_embeddings", &m.max_position, true},
             {"num_local_experts", &m.num_experts},
             {"num_experts_per_tok", &m.experts_per_token},
             {"qkv_bias", &m.qkv_bias},
             {"tie_word_embeddings", &m.tie_word_embeddings},
             {"shared_expert_intermediate_size", &m.shared_expert_intermediate_size},
             {"q_lora_rank", &m.q_lora_rank},
             {"kv_lora_rank", &m.kv_lora_rank},
             {"qk_nope_head_dim", &m.qk_nope_head_dim},
             {"qk_rope_head_dim", &m.qk_rope_head_dim},
             {"v_head_dim", &m.v_head_dim},
             {"dense_layers", &m.dense_layers},
             {"dense_intermediate_size", &m.dense_intermediate_size},
             {"sliding_window", &m.sliding_window},
             {"sliding_layers", &m.sliding_layers},
             {"o_bias", &m.o_bias},
             {"attention_sinks", &m.attention_sinks},
             {"moe_bias", &m.moe_bias},
             {"full_attention_interval", &m.full_attention_interval},
             {"linear_num_key_heads", &m.linear_num_key_heads},
             {"linear_num_value_heads", &m.linear_num_value_heads},
             {"linear_key_head_dim", &m.linear_key_head_dim},
             {"linear_value_head_dim", &m.linear_value_head_dim},
             {"linear_conv_kernel_dim", &m.linear_conv_kernel_dim},
             {"attn_output_gate", &m.attn_output_gate},
             {"qk_norm", &m.qk_norm},
             {"shared_expert_gate", &m.shared_expert_gate},
             {"partial_rotary_factor", &m.partial_rotary_factor},
             {"quantization", &quantization}});
  // A checkpoint's quantization_config: fp8 quantizes every linear layer but the LM head; mxfp4
  // a MoE model's experts.
  if (!quantization.empty() && quantization != "fp8" && quantization != "mxfp4" &&
      quantization != "nvfp4") {
    throw Error(path, ini_line_of(path, "quantization"), "quantization",
                "'" + quantization + "': fp8, mxfp4, nvfp4, or leave it out for BF16");
  }
  if (quantization == "fp8") {
    m.attention_weight_bytes = 1;
    m.mlp_weight_bytes = 1;
  }
  if (quantization == "mxfp4") m.mlp_weight_bytes = kMxfp4WeightBytes;
  if (quantization == "nvfp4") {
    m.attention_weight_bytes = kNvfp4WeightBytes;
    m.mlp_weight_bytes = kNvfp4WeightBytes;
  }
  if (!given.count("num_key_value_heads")) m.num_kv_heads = m.num_heads;  // MHA, as config.json
  // MLA's q and k heads are qk_nope_head_dim + qk_rope_head_dim wide, whatever head_dim says.
  if (m.kv_lora_rank > 0 && m.qk_nope_head_dim > 0 && m.qk_rope_head_dim > 0) {
    head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
  }
  if (m.num_heads > 0) m.head_dim = head_dim > 0 ? head_dim : m.hidden_size / m.num_heads;
  if (!given.count("head_dim") && m.num_heads > 0 && m.hidden_size > 0 && m.head_dim < 1) {
    // config.json's head_dim is hidden_size / num_attention_heads when absent: blame the keys
    // the file has, not one it lacks.
    throw Error(path, ini_line_of(path, "hidden_size"), "hidden_size",
                std::to_string(m.hidden_size) + " / num_attention_heads " +
                    std::to_string(m.num_heads) +
                    " gives a head_dim of 0: give head_dim, or a hidden_size of at least one "
                    "per head");
  }
  m.name = lowercase(m.name);
  try {
    validate(m, path);
  } catch (const Error& e) {  // name the line of the field at fault
    throw Error(path, ini_line_of(path, e.field()), e.field(), e.reason());
  }
  return m;
}

}  // namespace servesim
