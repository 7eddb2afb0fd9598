// ModelSpec: a decoder-only transformer's shape, as its published config.json states it, and the
// parameter, FLOP and KV-cache byte counts derived from it. The catalogue holds the models servesim
// knows by name (`servesim list models`); a user adds another with an INI file (`--model-file`).
// Promises: counts are exact functions of the config fields (no fudge factors); a mixture of
// experts counts all experts for memory and the routed top-k for FLOPs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace servesim {

struct ModelSpec {
  std::string name;           // catalogue key, e.g. "llama-3.1-8b"
  std::string hf_id;          // e.g. "meta-llama/Llama-3.1-8B"
  int num_layers = 0;         // num_hidden_layers
  int hidden_size = 0;        // hidden_size
  int num_heads = 0;          // num_attention_heads
  int num_kv_heads = 0;       // num_key_value_heads (GQA); equal to num_heads for MHA
  int head_dim = 0;           // head_dim, or hidden_size / num_attention_heads
  int intermediate_size = 0;  // intermediate_size (per expert for MoE); gated (SwiGLU) MLP
  int vocab_size = 0;         // vocab_size
  int max_position = 0;       // max_position_embeddings: the default max_model_len
  int num_experts = 1;        // num_local_experts (1 = dense)
  int experts_per_token = 1;  // num_experts_per_tok
  bool qkv_bias = false;      // Qwen2 has a bias on q, k and v
  bool tie_word_embeddings = false;
  // MoE: the width of an expert every token passes through besides its routed ones (Llama 4,
  // Qwen2-MoE's shared_expert_intermediate_size; 0 = none).
  int shared_expert_intermediate_size = 0;
  // Parameters outside the decoder that vLLM loads (a vision tower and its projector): memory
  // only, in dtype_bytes; text requests never run them.
  int64_t encoder_params = 0;
  int dtype_bytes = 2;  // BF16/FP16 activations, and the weights not named below
  // Bytes per weight of the attention projections and of the MLP or experts (routed and shared):
  // 1 when quantized to FP8 (a checkpoint's own quantization_config, or vLLM's --quantization
  // fp8). Embeddings, the LM head, norms and the MoE router stay in dtype_bytes.
  // MXFP4 (gpt-oss's quantization_config: the experts' weights in 4-bit E2M1 with one E8M0 scale
  // every 32, kMxfp4WeightBytes; their biases, attention, router, embeddings and LM head in BF16).
  // NVFP4 (a ModelOpt NVFP4 checkpoint, vLLM's modelopt_fp4: every linear layer but the LM head
  // in 4-bit E2M1 with one FP8 E4M3 scale every 16, kNvfp4WeightBytes, activations quantized to
  // FP4 as well on GPUs with FP4 tensor cores).
  double attention_weight_bytes = 2;
  double mlp_weight_bytes = 2;
  int kv_cache_bytes = 2;  // per K or V element: 1 under --kv-cache-dtype fp8
  // Multi-head latent attention (DeepSeek-V2/V3/R1, Kimi-K2; config.json's names), when
  // kv_lora_rank > 0: q is projected down to q_lora_rank (0: straight from the hidden state) and
  // up to num_heads x (qk_nope_head_dim + qk_rope_head_dim); keys and values are one latent of
  // kv_lora_rank plus a shared rope key of qk_rope_head_dim, up-projected to num_heads x
  // (qk_nope_head_dim + v_head_dim). The KV cache holds the latent and the rope key only, one
  // copy on every GPU of a TP group (vLLM's MLAAttentionSpec: num_kv_heads 1, head_size
  // kv_lora_rank + qk_rope_head_dim, no separate V). head_dim is then qk_nope + qk_rope.
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  // A MoE model's layers whose MLP is one dense gated MLP of dense_intermediate_size instead of
  // experts: DeepSeek-V3's first_k_dense_replace (the first 3 of 61), Kimi-K2's first one,
  // Llama 4 Maverick's every other layer (interleave_moe_layer_step 2, intermediate_size_mlp).
  int dense_layers = 0;
  int dense_intermediate_size = 0;
  // Sliding-window attention (config.json's sliding_window and layer_types): SLIDING_LAYERS of
  // the layers attend only to the last SLIDING_WINDOW tokens (the token itself included), the
  // others to the whole context; they alternate, layer 0 sliding, as gpt-oss's (so
  // sliding_layers is (num_layers + 1) / 2: validate()). vLLM's hybrid KV
  // cache manager keeps one group of blocks for each kind (kv_cache_layers_per_block), and frees
  // a sliding layer's blocks once they leave the window (SlidingWindowManager).
  int sliding_window = 0;
  int sliding_layers = 0;
  // A bias on o besides q, k and v (gpt-oss's attention_bias; qkv_bias alone is Qwen2's).
  bool o_bias = false;
  // gpt-oss's learned attention sinks: one logit a head, every layer.
  bool attention_sinks = false;
  // gpt-oss's biases on every expert's gate/up and down projections and on the router.
  bool moe_bias = false;
  // Hybrid models of Gated DeltaNet linear attention and full attention (Qwen3-Next's
  // config.json names): every FULL_ATTENTION_INTERVAL-th layer (layer interval - 1 first) is full
  // attention, the others linear attention with linear_num_key_heads query/key heads of
  // linear_key_head_dim, linear_num_value_heads value heads of linear_value_head_dim and a causal
  // convolution of linear_conv_kernel_dim over q, k and v (vLLM qwen3_next.py
  // Qwen3NextGatedDeltaNet: in_proj_qkvz, in_proj_ba, conv1d, A_log, dt_bias, a gated RMSNorm,
  // out_proj). A linear layer keeps no KV a token but a constant state a sequence
  // (linear_state_bytes_per_layer), which vLLM's hybrid KV cache manager holds in a block of its
  // own group (MambaManager, kv_cache_state_groups). 0: no linear layers.
  int full_attention_interval = 0;
  int linear_num_key_heads = 0;
  int linear_num_value_heads = 0;
  int linear_key_head_dim = 0;
  int linear_value_head_dim = 0;
  int linear_conv_kernel_dim = 0;
  // Qwen3-Next's gated attention: q_proj also yields a sigmoid gate on the output, as wide as q.
  bool attn_output_gate = false;
  // An RMSNorm of head_dim on q and on k in every full-attention layer (Qwen3's q_norm, k_norm;
  // set for Qwen3-Next, not for the catalogue's other Qwen3 entries, whose 2 x 128 parameters a
  // layer are left out).
  bool qk_norm = false;
  // The share of a head's dimensions rotary embedding turns (config.json's
  // partial_rotary_factor: Qwen3-Next's 0.25): vLLM's cos/sin cache is that wide.
  double partial_rotary_factor = 1.0;
  // Qwen2-MoE's and Qwen3-Next's sigmoid gate on the shared expert (hidden -> 1), counted with
  // the routers.
  bool shared_expert_gate = false;

  bool mla() const { return kv_lora_rank > 0; }
  bool hybrid() const { return full_attention_interval > 0; }
  // Layers with full (or sliding-window) attention, and with linear attention.
  int full_attention_layers() const {
    return hybrid() ? num_layers / full_attention_interval : num_layers;
  }
  int linear_attention_layers() const { return num_layers - full_attention_layers(); }
  // Parameters of one linear-attention layer (0 without): in_proj_qkvz (q, k, v and the output
  // gate z), in_proj_ba (a beta and a decay a value head), conv1d over q, k and v (no bias),
  // A_log and dt_bias a value head, the gated norm's weight, out_proj.
  int64_t linear_attention_params_per_layer() const;
  // Attention parameters of all layers: the full-attention ones' and the linear ones'.
  int64_t mixer_params() const;
  // A linear-attention layer's state a sequence on one GPU of a TP group of TP, in the model's
  // dtype (vLLM's mamba_ssm_cache_dtype "auto"): the convolution's last kernel - 1 inputs of q, k
  // and v, and a linear_key_head_dim x linear_value_head_dim matrix a value head (vLLM
  // MambaStateShapeCalculator.gated_delta_net_state_shape; heads split by TP).
  int64_t linear_state_bytes_per_layer(int tp) const;
  // vLLM's attention block size for a hybrid model (HybridAttentionMambaModelConfig,
  // v0.10-0.15): the fewest tokens, a multiple of ALIGNMENT (hybrid_block_alignment), whose
  // full-attention page (block x KV bytes a token a layer) holds a linear layer's state; the
  // state's page is padded to it. 0 when not hybrid.
  int64_t hybrid_block_size(int tp, int alignment = 16) const;
  // The multiple vLLM rounds that block to on a GPU of BLACKWELL architecture or not: 32 for
  // heads of 256 on Blackwell, where FlashInfer has no blocks of 16 for them (flashinfer issue
  // 1993), else 16.
  int hybrid_block_alignment(bool blackwell) const {
    return blackwell && head_dim == 256 ? 32 : 16;
  }
  // Layers whose MLP is routed experts (all of them in a MoE model without dense layers; none in
  // a dense model).
  // REQUIRES: dense_layers < num_layers (validate()).
  int moe_layers() const { return num_experts > 1 ? num_layers - dense_layers : 0; }

  // Parameters of one layer's attention block (q, k, v, o projections, with bias if any; MLA's
  // down and up projections, its two norms apart in latent_norm_params_per_layer).
  int64_t attention_params_per_layer() const;
  // MLA's RMSNorms on the q and kv latents, in the model's dtype (0 without MLA).
  int64_t latent_norm_params_per_layer() const;
  // Parameters every GPU of a TP group holds whole: MLA's down projections of q and kv (vLLM's
  // ReplicatedLinear), in attention_weight_bytes; 0 without MLA.
  int64_t replicated_attention_params_per_layer() const;
  // Parameters of one expert's gated MLP (gate, up, down; their biases with moe_bias).
  int64_t expert_params() const;
  // The biases among them (0 without moe_bias): kept in the model's dtype under MXFP4.
  int64_t expert_bias_params() const {
    return moe_bias ? 2 * int64_t(intermediate_size) + hidden_size : 0;
  }
  // Parameters of the shared expert of one MoE layer (0 without one).
  int64_t shared_expert_params() const;
  // Parameters of the gated MLP of one dense layer of a MoE model (dense_layers).
  int64_t dense_mlp_params() const;
  // MoE router parameters of all layers, the shared expert's gate included (0 for a dense
  // model).
  int64_t router_params() const;
  // Linear-layer parameters of the MLPs (experts, shared experts, dense layers) a token passes
  // through, all layers.
  int64_t active_mlp_params() const;
  // Linear-layer parameters a token passes through, all layers (attention + top-k experts +
  // shared experts + dense MLPs + routers): FLOPs per token are twice this.
  int64_t active_linear_params() const;
  // All parameters (embedding, every expert, norms, LM head unless tied, any encoder).
  int64_t total_params() const;
  // Bytes the weights occupy, each part in its own precision: what memory holds (with
  // mxfp4_load_extra_bytes).
  int64_t weight_bytes() const;
  // What vLLM holds of MXFP4 experts beyond the checkpoint: its Triton path on Hopper
  // (vllm/model_executor/layers/quantization/mxfp4.py, 0.14-0.15) keeps the checkpoint's scales
  // beside the swizzled copy its kernel reads and turns the experts' biases to FP32; 0 otherwise.
  // vLLM 0.14.1 reports 64.38 GiB loaded for gpt-oss-120b on an H100 (vllm issue 33155), against
  // the 60.8 GiB checkpoint.
  double mxfp4_load_extra_bytes() const;
  // "fp8" when some linear layers are quantized to FP8, "mxfp4" when the experts are MXFP4, else
  // "" (as the checkpoint's dtype).
  std::string quantization() const;
  // Parameters a token uses (top-k experts only): what FLOP counts and "active" mean.
  int64_t active_params() const;
  // LM head parameters (vocab x hidden), counted even when tied to the embedding.
  int64_t lm_head_params() const { return int64_t(vocab_size) * hidden_size; }
  // KV heads held by one GPU of a tensor-parallel group (replicated when kv_heads < tp).
  int kv_heads_per_gpu(int tp) const { return num_kv_heads >= tp ? num_kv_heads / tp : 1; }
  // KV-cache bytes one token occupies on one GPU in one layer, keys and values (MLA: its latent
  // and rope key, whole on every GPU).
  int64_t kv_bytes_per_token_per_layer(int tp) const {
    if (mla()) return int64_t(kv_lora_rank + qk_rope_head_dim) * kv_cache_bytes;
    return int64_t(2) * kv_heads_per_gpu(tp) * head_dim * kv_cache_bytes;
  }
  // The same, all layers: what a token of context is in every layer (a sliding layer holds it
  // only while it is in the window).
  // A hybrid model's linear layers hold none.
  int64_t kv_bytes_per_token_per_gpu(int tp) const {
    return int64_t(full_attention_layers()) * kv_bytes_per_token_per_layer(tp);
  }
  bool sliding() const { return sliding_layers > 0; }
  // vLLM's hybrid KV cache groups (kv_cache_utils.py _get_kv_cache_groups_uniform_page_size): the
  // layers of each kind split into groups of equal size, the smaller kind's count, or the larger
  // one's when it is under 1.5 times the smaller (the short kind padded). A block of the shared
  // pool holds block_size tokens of one group: this many layers' KV. All layers without a
  // sliding window (one group).
  int kv_cache_layers_per_block() const { return kv_cache_layers_per_block(0, num_layers); }
  // The same on a pipeline stage of LAYERS layers from FIRST: vLLM groups each worker's own
  // layers (the sliding ones the even-numbered, as validate() holds sliding_layers to).
  // A hybrid model's linear layers are the other kind (pipeline stages refused: FIRST 0).
  int kv_cache_layers_per_block(int first, int layers) const {
    if (!sliding() && !hybrid()) return layers;
    const int other =
        hybrid() ? linear_attention_layers() : (first + layers + 1) / 2 - (first + 1) / 2;
    const int full = layers - other;
    const int lo = std::min(full, other), hi = std::max(full, other);
    return lo == 0 || 2 * hi < 3 * lo ? hi : lo;
  }
  // A hybrid model's groups of linear-attention layers (validate() holds the full ones to one
  // group): a request holds one block in each, its state, from its first step to its end
  // (vLLM's MambaManager in mamba_cache_mode none: the group's block size is max_model_len).
  int kv_cache_state_groups() const {
    if (!hybrid()) return 0;
    const int g = kv_cache_layers_per_block();
    return (linear_attention_layers() + g - 1) / g;
  }
  // Weight bytes on one GPU of a TP group of TP: the sharded weights split, the replicated whole.
  double weight_bytes_per_gpu(int tp) const;
  // The same on one GPU of a pipeline stage of LAYERS layers (models/parallel.hpp): the layers'
  // share of the decoder's weights, with the embedding (and any encoder) on the FIRST stage and
  // the final norm and LM head on the LAST (vLLM's last rank holds its own LM head even when
  // tied to the embedding). The layers' share is even: a MoE model's dense layers are spread
  // over the stages, not placed.
  double stage_weight_bytes_per_gpu(int tp, int layers, bool first, bool last) const;
  // Bytes of one expert: its weights in mlp_weight_bytes, its biases in dtype_bytes.
  double expert_bytes() const {
    const double bias = double(expert_bias_params());
    return (double(expert_params()) - bias) * mlp_weight_bytes + bias * dtype_bytes;
  }
  // Bytes the routed experts hold in memory, every MoE layer (0 for a dense model), MXFP4's
  // load extra included (mxfp4_load_extra_bytes: all of it is the routed experts').
  double routed_expert_bytes() const {
    return double(moe_layers()) * num_experts * expert_bytes() + mxfp4_load_extra_bytes();
  }
  // Weight bytes on the GPU of an expert-parallel group of EP GPUs that holds the most experts
  // (models/parallel.hpp): ceil(E / EP) whole routed experts a MoE layer; the rest as
  // weight_bytes_per_gpu(TP).
  double ep_weight_bytes_per_gpu(int tp, int ep) const;
};

// Bytes a weight of MXFP4 takes: 4 bits and an 8-bit scale shared by 32 (OCP MX spec).
inline constexpr double kMxfp4WeightBytes = 4.25 / 8;
// Bytes a weight of NVFP4 takes: 4 bits and an FP8 E4M3 scale shared by 16 (and one FP32 scale
// a tensor, left out).
inline constexpr double kNvfp4WeightBytes = 4.5 / 8;

// vLLM's --quantization and --kv-cache-dtype on a model (an MXFP4 or NVFP4 checkpoint keeps its
// own, as vLLM does): QUANTIZATION "" (the checkpoint's own),
// "none" (not quantized at load) or "fp8" (Fp8LinearMethod and Fp8MoEMethod: every linear
// layer but the LM head and the router to FP8 weights); KV_CACHE_DTYPE "auto" (the model's
// dtype) or "fp8", "fp8_e4m3", "fp8_e5m2" (one byte). Throws Error naming the flag otherwise.
void apply_serving_dtypes(ModelSpec& m, const std::string& quantization,
                          const std::string& kv_cache_dtype);

const std::vector<ModelSpec>& model_catalogue();

// Looks a model up by catalogue name (case-insensitive) or Hugging Face id (the organisation
// optional; an instruct or chat fine-tune maps to its base model). Throws Error naming the known
// models.
ModelSpec find_model(std::string_view name);

// Whether two Hugging Face ids name one architecture as find_model maps them: equal without the
// organisation, case and the -instruct and -chat of fine-tunes.
bool same_architecture_id(std::string_view a, std::string_view b);

// Reads a model from an INI file whose keys are the config.json names (num_hidden_layers,
// hidden_size, num_attention_heads, num_key_value_heads, head_dim, intermediate_size, vocab_size,
// max_position_embeddings, num_local_experts, num_experts_per_tok, qkv_bias, tie_word_embeddings,
// shared_expert_intermediate_size, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim,
// v_head_dim), dense_layers and dense_intermediate_size, sliding_window and sliding_layers,
// o_bias, attention_sinks and moe_bias, full_attention_interval, linear_num_key_heads,
// linear_num_value_heads, linear_key_head_dim, linear_value_head_dim, linear_conv_kernel_dim,
// attn_output_gate, qk_norm, shared_expert_gate and partial_rotary_factor (above), quantization
// (fp8 for an FP8 checkpoint, mxfp4 for MXFP4 experts), name and hf_id. Throws Error with file,
// line and field on bad input.
ModelSpec load_model_file(const std::string& path);

// Checks a spec's fields (positive, heads divide, experts_per_token <= num_experts); throws Error
// naming `source` (a file or "catalogue") and the field.
void validate(const ModelSpec& m, const std::string& source);

}  // namespace servesim
