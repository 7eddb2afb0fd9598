// Shared by analysis/validate.cpp and validate_read.cpp only: the latencies a ground-truth row
// carries, each metric's name (its CSV column adds "_ms") and its field, in the CSV's order.
#pragma once

#include "analysis/validate.hpp"

namespace servesim::validate_detail {

struct LatencyField {
  const char* name;
  double LatencyFigures::*member;
};
inline constexpr LatencyField kLatencyFields[] = {
    {"ttft_mean", &LatencyFigures::ttft_mean}, {"ttft_p90", &LatencyFigures::ttft_p90},
    {"ttft_p99", &LatencyFigures::ttft_p99},   {"tpot_mean", &LatencyFigures::tpot_mean},
    {"e2e_mean", &LatencyFigures::e2e_mean},   {"e2e_p90", &LatencyFigures::e2e_p90},
    {"e2e_p99", &LatencyFigures::e2e_p99}};

}  // namespace servesim::validate_detail
