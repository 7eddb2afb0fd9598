// TableCostModel: step time straight from measured operator profiles (models/profiles.hpp),
// composed the way Vidur composes an iteration: per layer, the GEMMs and element-wise ops at the
// step's token count, prefill attention per chunk, decode attention for the decode batch, two
// all-reduces under TP; times the number of layers; plus the per-iteration CPU overhead. The
// embedding and the LM head are not counted (the profiles hold neither).
// Between measured points it interpolates piecewise-linearly (in tokens; in chunk and cached
// context for prefill attention; in batch and context for decode attention, at the batch's mean
// context); beyond them it follows the work: linear ops grow along their last measured segment,
// prefill attention with query-key pairs, decode attention (above one sequence's latency) in
// proportion to sequences.
// The one attention profile at hand has one shape (Vidur's legacy table: 32 query and 4 KV heads
// of 128 per GPU). Other shapes are mapped by work: prefill time scales with query width per GPU;
// a decode batch of B sequences reads as much KV as B x (KV width per GPU / the table's), so it
// is looked up as that equivalent batch.
// FLOPs and bytes are the roofline model's counts for the same shape.
#pragma once

#include "models/cost_model.hpp"
#include "models/profiles.hpp"
#include "models/roofline.hpp"

namespace servesim {

class TableCostModel final : public CostModel {
 public:
  // Throws Error when the profiles lack what this model and TP degree need.
  TableCostModel(const ProfileSet& profiles, const GpuSpec& gpu, const ModelSpec& model, int tp);
  StepCost cost(std::span<const SeqShape> batch) const override;
  std::string name() const override { return "table"; }

  // Per-layer ms, as measured (interpolated): the pieces fidelity reports compare.
  double gemm_ms(double tokens) const;
  double elementwise_ms(double tokens) const;
  double prefill_attention_ms(double chunk, double context) const;
  double decode_attention_ms(double batch, double mean_context) const;
  double allreduce_ms(double tokens) const;  // one all-reduce of the hidden states
  double cpu_ms(double batch_size) const;

  // Whether a point lies inside the measured ranges (no extrapolation).
  bool measured_prefill(double chunk, double context) const;
  bool measured_decode(double batch, double mean_context) const;
  bool measured_tokens(double tokens) const;     // GEMMs and element-wise ops
  bool measured_batch(double batch_size) const;  // CPU overhead

 private:
  ModelSpec model_;
  RooflineCostModel counts_;  // FLOPs and bytes
  std::vector<const Curve*> gemm_, elementwise_;
  const AttentionProfile* attention_;
  const Curve* allreduce_ = nullptr;
  const Curve* cpu_ = nullptr;
  double q_ratio_ = 1, kv_ratio_ = 1;
};

}  // namespace servesim
