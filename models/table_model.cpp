#include "models/table_model.hpp"

#include <algorithm>
#include <cmath>

#include "util/error.hpp"

namespace servesim {

namespace {

std::string shape_text(const ModelSpec& m) {
  return std::to_string(m.hidden_size) + " hidden, " + std::to_string(m.num_heads) + "/" +
         std::to_string(m.num_kv_heads) + " heads, " + std::to_string(m.intermediate_size) +
         " intermediate";
}

// Query-key pairs of a chunk of N tokens after C cached ones.
double pairs(double n, double c) {
  return n * c + n * (n + 1) / 2;
}

// Interpolates between the curves of the two keys around K in M (a map from key to curve in
// x), at X. Below the smallest key: that key's value; above the largest: that key's value times
// SCALE(k_max) / SCALE(K).
template <class Scale>
double between_keys(const std::map<int, Curve>& m, double k, double x, Scale scale) {
  auto hi = m.lower_bound(int(std::ceil(k)));
  if (hi == m.begin()) return hi->second.at(x);
  if (hi == m.end()) {
    const auto last = std::prev(m.end());
    return last->second.at(x) * scale(k) / scale(double(last->first));
  }
  if (double(hi->first) == k) return hi->second.at(x);
  const auto lo = std::prev(hi);
  const double f = (k - lo->first) / double(hi->first - lo->first);
  return lo->second.at(x) + f * (hi->second.at(x) - lo->second.at(x));
}

}  // namespace

TableCostModel::TableCostModel(const ProfileSet& p, const GpuSpec& gpu, const ModelSpec& m, int tp)
    : model_(m), counts_(gpu, m, tp), attention_(nullptr) {
  // Vidur's tables profile standard attention and one MLP width.
  if (m.mla() || m.dense_layers > 0) {
    throw Error(p.dir, 0, "mlp.csv",
                "no profile for " + m.name + "'s " +
                    (m.mla() ? "multi-head latent attention" : "dense and MoE layers mixed") +
                    ": use the roofline");
  }
  const MlpProfile* mlp =
      p.find_mlp(ProfileShape{m.num_heads, m.num_kv_heads, m.hidden_size, m.intermediate_size});
  if (mlp == nullptr) {
    throw Error(p.dir, 0, "mlp.csv",
                "no profile for " + m.name + "'s shape (" + shape_text(m) + ")");
  }
  const auto by_tp = mlp->ops.find(tp);
  if (by_tp == mlp->ops.end()) {
    throw Error(mlp->file, 0, "num_tensor_parallel_workers",
                "no rows for TP " + std::to_string(tp) + " (" + m.name + ")");
  }
  for (const std::string& op : gemm_ops())
    gemm_.push_back(&by_tp->second.at(op));
  for (const std::string& op : elementwise_ops())
    elementwise_.push_back(&by_tp->second.at(op));
  if (!p.attention) throw Error(p.dir, 0, "attention.csv", "no attention profile");
  attention_ = &*p.attention;
  // Map this model's attention onto the profiled shape by work per GPU.
  const AttentionProfile& a = *attention_;
  const double head_dim_table = double(a.shape.n_embd) / a.shape.n_head;
  const double q_table = double(a.shape.n_head) / a.tp * head_dim_table;
  const double kv_table = std::max(1.0, double(a.shape.n_kv_head) / a.tp) * head_dim_table;
  q_ratio_ = double(m.num_heads) / tp * m.head_dim / q_table;
  kv_ratio_ = double(m.kv_heads_per_gpu(tp)) * m.head_dim / kv_table;
  if (tp > 1) {
    if (!p.allreduce) throw Error(p.dir, 0, "all_reduce.csv", "no all-reduce profile for TP > 1");
    const auto it = p.allreduce->by_workers.find(tp);
    if (it == p.allreduce->by_workers.end()) {
      throw Error(p.allreduce->file, 0, "num_workers",
                  "no rows for " + std::to_string(tp) + " GPUs");
    }
    allreduce_ = &it->second;
  }
  if (p.cpu) cpu_ = &p.cpu->per_iteration;
}

double TableCostModel::gemm_ms(double tokens) const {
  double ms = 0;
  for (const Curve* c : gemm_)
    ms += c->at(tokens);
  return ms;
}

double TableCostModel::elementwise_ms(double tokens) const {
  double ms = 0;
  for (const Curve* c : elementwise_)
    ms += c->at(tokens);
  return ms;
}

double TableCostModel::prefill_attention_ms(double chunk, double context) const {
  // Each chunk size was measured over a range of cached context; outside it, the nearest
  // measured point scaled by query-key pairs (attention work). A chunk longer than any measured
  // runs as consecutive measured-size chunks, each after the ones before it (the pairs
  // partition exactly), so time never falls as the context or the chunk grows.
  const auto& m = attention_->prefill;
  auto at_chunk = [](int k, const Curve& c, double ctx) {
    const double measured_ctx = std::clamp(ctx, c.min_x(), c.max_x());
    return c.at(measured_ctx) * pairs(k, ctx) / pairs(k, measured_ctx);
  };
  auto within = [&](double n, double ctx) {
    auto hi = m.lower_bound(int(std::ceil(n)));
    if (hi == m.begin() || double(hi->first) == n) return at_chunk(hi->first, hi->second, ctx);
    const auto lo = std::prev(hi);
    const double f = (n - lo->first) / double(hi->first - lo->first);
    const double a = at_chunk(lo->first, lo->second, ctx);
    return a + f * (at_chunk(hi->first, hi->second, ctx) - a);
  };
  const auto& [largest, curve] = *m.rbegin();
  double ms = 0, done = 0;
  while (chunk - done > largest) {
    ms += at_chunk(largest, curve, context + done);
    done += largest;
  }
  return q_ratio_ * (ms + within(chunk - done, context + done));
}

double TableCostModel::decode_attention_ms(double batch, double mean_context) const {
  const auto& m = attention_->decode;
  const double b = batch * kv_ratio_;
  const int top = m.rbegin()->first;
  if (b <= top) return between_keys(m, b, mean_context, [](double x) { return x; });
  // Beyond the largest batch: the work above a single sequence's time (the launch latency)
  // grows in proportion to the sequences, at the largest batch's rate.
  const double at_top = m.rbegin()->second.at(mean_context);
  const double at_one = m.begin()->second.at(mean_context);
  return at_one + (at_top - at_one) * b / top;
}

double TableCostModel::allreduce_ms(double tokens) const {
  if (allreduce_ == nullptr) return 0;
  return allreduce_->at(tokens * model_.hidden_size * model_.dtype_bytes);
}

double TableCostModel::cpu_ms(double batch_size) const {
  return cpu_ == nullptr ? 0 : cpu_->at(batch_size);
}

bool TableCostModel::measured_prefill(double chunk, double context) const {
  const auto& m = attention_->prefill;
  if (chunk < m.begin()->first || chunk > m.rbegin()->first) return false;
  const Curve& c = m.lower_bound(int(std::ceil(chunk)))->second;
  return context >= c.min_x() && context <= c.max_x();
}

bool TableCostModel::measured_decode(double batch, double mean_context) const {
  const auto& m = attention_->decode;
  const double b = batch * kv_ratio_;
  if (b < m.begin()->first || b > m.rbegin()->first) return false;
  const Curve& c = m.lower_bound(int(std::ceil(b)))->second;
  return mean_context >= c.min_x() && mean_context <= c.max_x();
}

bool TableCostModel::measured_tokens(double tokens) const {
  return tokens >= gemm_.front()->min_x() && tokens <= gemm_.front()->max_x();
}

bool TableCostModel::measured_batch(double batch_size) const {
  return cpu_ == nullptr || (batch_size >= cpu_->min_x() && batch_size <= cpu_->max_x());
}

StepCost TableCostModel::cost(std::span<const SeqShape> batch) const {
  StepCost c = counts_.cost(batch);  // FLOPs and bytes; the seconds are replaced below
  double tokens = 0, decodes = 0, decode_context = 0, prefill_ms = 0;
  for (const SeqShape& s : batch) {
    tokens += s.new_tokens;
    if (s.prefill) {
      prefill_ms += prefill_attention_ms(s.new_tokens, s.context_tokens);
    } else {
      decodes += 1;
      decode_context += s.context_tokens;
    }
  }
  const double layers = model_.num_layers;
  c.linear_s = layers * gemm_ms(tokens) * 1e-3;
  c.elementwise_s = layers * elementwise_ms(tokens) * 1e-3;
  c.attention_s =
      layers *
      (prefill_ms + (decodes > 0 ? decode_attention_ms(decodes, decode_context / decodes) : 0)) *
      1e-3;
  c.lm_head_s = 0;  // not in the profiles (as Vidur)
  c.allreduce_s = layers * 2 * allreduce_ms(tokens) * 1e-3;
  c.cpu_overhead_s = cpu_ms(double(batch.size())) * 1e-3;
  c.seconds = c.linear_s + c.elementwise_s + c.attention_s + c.allreduce_s + c.cpu_overhead_s;
  return c;
}

}  // namespace servesim
