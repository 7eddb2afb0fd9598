#include "models/model.hpp"

#include "util/error.hpp"
#include "util/ini.hpp"
#include "util/lookup.hpp"

namespace servesim {

int64_t ModelSpec::attention_params_per_layer() const {
  const int64_t q = int64_t(num_heads) * head_dim;
  const int64_t kv = int64_t(num_kv_heads) * head_dim;
  const int64_t bias = qkv_bias ? q + 2 * kv : 0;
  return int64_t(hidden_size) * (q + 2 * kv) + q * hidden_size + bias;
}

int64_t ModelSpec::expert_params() const {
  return 3 * int64_t(hidden_size) * intermediate_size;
}

int64_t ModelSpec::active_linear_params_per_layer() const {
  const int64_t router = num_experts > 1 ? int64_t(hidden_size) * num_experts : 0;
  return attention_params_per_layer() + experts_per_token * expert_params() + router;
}

int64_t ModelSpec::total_params() const {
  const int64_t router = num_experts > 1 ? int64_t(hidden_size) * num_experts : 0;
  const int64_t norms = 2 * int64_t(hidden_size);
  const int64_t layer =
      attention_params_per_layer() + num_experts * expert_params() + router + norms;
  const int64_t embed = int64_t(vocab_size) * hidden_size;
  return num_layers * layer + embed + (tie_word_embeddings ? 0 : lm_head_params()) + hidden_size;
}

int64_t ModelSpec::active_params() const {
  return total_params() - int64_t(num_layers) * (num_experts - experts_per_token) * expert_params();
}

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
      {"mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1", 32, 4096, 32, 8, 128, 14336, 32000, 32768, 8,
       2},
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

ModelSpec find_model(std::string_view name) {
  // A Hugging Face id the catalogue holds as such, then the same architecture under another tag.
  for (const ModelSpec& m : model_catalogue()) {
    if (lowercase(name) == lowercase(m.hf_id)) return m;
  }
  const std::string key = hf_key(name);
  for (const ModelSpec& m : model_catalogue()) {
    if (lowercase(name) != m.name && hf_key(m.hf_id) == key) return m;
  }
  return find_in_catalogue(model_catalogue(), name, "model", "model",
                           "; a Hugging Face id of these; or describe one with --model-file");
}

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
  if (m.num_heads % m.num_kv_heads != 0) {
    throw Error(source, 0, "num_key_value_heads", "must divide num_attention_heads");
  }
  if (m.experts_per_token > m.num_experts) {
    throw Error(source, 0, "num_experts_per_tok", "must not exceed num_local_experts");
  }
  if (m.name.empty()) throw Error(source, 0, "name", "must not be empty");
}

ModelSpec load_model_file(const std::string& path) {
  ModelSpec m;
  int head_dim = 0;
  const std::set<std::string> given =
      load_ini_fields(path, {{"name", &m.name, true},
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
                             {"tie_word_embeddings", &m.tie_word_embeddings}});
  if (!given.count("num_key_value_heads")) m.num_kv_heads = m.num_heads;  // MHA, as config.json
  if (m.num_heads > 0) m.head_dim = head_dim > 0 ? head_dim : m.hidden_size / m.num_heads;
  m.name = lowercase(m.name);
  validate(m, path);
  return m;
}

}  // namespace servesim
