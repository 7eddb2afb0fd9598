// Fidelity: how close a cost model comes to measured step times. The reference for a step is
// the TableCostModel's composition of measured operator medians (Vidur's composition); the grid
// covers prefill (N = 128..4096 new tokens at context 0, and at context 2048 within the
// profile's 4096-token limit), decode (B = 1..256 sequences at context 512..4096) and mixed
// chunked steps (decodes plus one prefill chunk). Points that the profiles reach only by
// extrapolation (any op outside its measured range: decode batches over 128 equivalent
// sequences, contexts over 4032, CPU overhead below batch 8, ...) are marked.
// Errors are per op class (GEMMs, element-wise, attention, all-reduce, CPU overhead) and for the
// composed step (their sum; the LM head, absent from the profiles, is left out of both sides).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "models/cost_model.hpp"
#include "models/table_model.hpp"

namespace servesim {

struct StepPoint {
  std::string kind;   // prefill | decode | mixed
  std::string label;  // e.g. "decode B=64 ctx=1024"
  std::vector<SeqShape> seqs;
};

std::vector<StepPoint> fidelity_grid();

// Seconds of one step by op class; total is their sum.
struct PartSeconds {
  double linear = 0, elementwise = 0, attention = 0, allreduce = 0, cpu = 0, total = 0;
};
PartSeconds parts_of(const StepCost& c);  // drops the LM head

struct ErrorStats {
  size_t n = 0;
  double mape = 0, max_ape = 0;
  std::string worst;
  void add(double predicted, double measured, const std::string& label);
  void finish() { mape = n ? mape / double(n) : 0; }
};

struct FidelityRow {
  StepPoint point;
  bool extrapolated = false;
  PartSeconds measured, predicted;
};

struct FidelityReport {
  std::string predictor;  // e.g. "roofline (built-in defaults)"
  std::vector<FidelityRow> rows;
  ErrorStats composed, composed_measured_only;
  ErrorStats linear, elementwise, attention, allreduce, cpu;
};

FidelityReport compare_to_profiles(const TableCostModel& measured, const CostModel& predicted,
                                   const std::string& predictor,
                                   const std::vector<StepPoint>& grid);

void print_fidelity(std::ostream& out, const FidelityReport& r, size_t worst = 5);
void write_fidelity_csv(std::ostream& out, const FidelityReport& r);

}  // namespace servesim
