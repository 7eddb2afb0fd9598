#include "analysis/intervals.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "analysis/report.hpp"
#include "models/hardware.hpp"
#include "util/error.hpp"
#include "util/format.hpp"

namespace servesim {

namespace {

struct HeldOutRow {
  const char* experiment;
  int stage;
  std::array<double, kNumIntervalMetrics> log_ratio;  // ln(measured / predicted)
};

const HeldOutRow kHeldOut[] = {
#include "analysis/interval_residuals.inc"
};

// The range the held-out runs cover (servesim validate --csv's decode_batch and context_tokens
// columns on both ground-truth files, each experiment's whole run as a user's run is measured,
// the largest rounded up): a run past it is extrapolated. Decode batches reach 67.2 (Mixtral-8x7B
// at 8 then 20 req/s), contexts 1,748.5 tokens (Qwen2.5-7B, the reasoning preset), TP 4
// (Llama-3.1-70B); the runs are on hopper (H100), ampere (A100) and ada (L40S) GPUs.
constexpr double kMaxDecodeBatch = 70;
constexpr double kMaxContextTokens = 1750;
constexpr int kMaxTp = 4;

// Sorted absolute log errors of metric M over the held-out rows.
std::vector<double> abs_errors(int m) {
  std::vector<double> v;
  for (const HeldOutRow& r : kHeldOut)
    v.push_back(std::fabs(r.log_ratio[size_t(m)]));
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

const char* interval_metric_name(IntervalMetric m) {
  static const char* const names[] = {"ttft_mean", "ttft_p90", "ttft_p99", "tpot_mean",
                                      "e2e_mean",  "e2e_p90",  "e2e_p99"};
  return names[int(m)];
}

Regime regime_of(const RunResult& r) {
  const RunSummary& s = r.summary;
  Regime g;
  g.decode_batch = s.steps > 0 ? double(s.decode_tokens) / double(s.steps) : 0;
  g.context_tokens = s.completed > 0 ? (double(s.input_tokens) + 0.5 * double(s.output_tokens)) /
                                           double(s.completed)
                                     : 0;
  g.tp = r.config.tp;
  g.arch = r.config.gpu.arch;
  g.mla = r.config.model.mla();
  g.multi_node = r.config.tp > r.config.gpu.gpus_per_node;
  g.pp = r.config.pp;
  g.ep = r.config.ep();
  g.sliding = r.config.model.sliding();
  g.mxfp4 = r.config.model.quantization() == "mxfp4";
  g.nvfp4 = r.config.model.quantization() == "nvfp4";
  g.linear = r.config.model.hybrid();
  return g;
}

std::vector<std::string> outside_fitted_range(const Regime& g) {
  std::vector<std::string> why;
  if (g.arch == GpuArch::kBlackwell || g.arch == GpuArch::kCdna3) {
    why.push_back(
        format("no real vLLM runs on a %s GPU (its kernels from the %s fit and the "
               "datasheet)",
               arch_name(g.arch), arch_name(fitted_arch(g.arch))));
  }
  if (g.tp > kMaxTp) why.push_back(format("TP %d, past the runs' TP %d", g.tp, kMaxTp));
  if (g.decode_batch > kMaxDecodeBatch) {
    why.push_back(format("%.0f sequences decoding at once, past the runs' %.0f", g.decode_batch,
                         kMaxDecodeBatch));
  }
  if (g.mla) {
    // docs/validation.md: DeepSeek-R1 on 8 x H200 at TP8, vLLM 0.7.4 (dstack's published
    // benchmark, 3200/800 tokens, concurrency 4-128) and DeepSeek-V3.1 in a vLLM pull request's
    // decode benchmark (batch 16, November 2025).
    why.push_back(
        "multi-head latent attention, which no real run fitted: on two published vLLM runs of "
        "DeepSeek-R1/V3.1 on 8 x H200 the measured TPOT was 1.4-3.6x the predicted and the "
        "TTFT up to 28x, so no bound is given");
  }
  if (g.multi_node) why.push_back("a TP group across nodes, which no real run covered");
  if (g.ep > 1) {
    why.push_back(
        format("experts spread over %d GPUs (expert parallelism), which no real run "
               "covered (the data-parallel ranks taken as evenly loaded)",
               g.ep));
  }
  if (g.pp > 1) {
    why.push_back(
        format("%d pipeline stages, which no real run covered (the stages' split, the "
               "sends and the batch queue are modelled from vLLM's code, not fitted)",
               g.pp));
  }
  if (g.sliding) {
    why.push_back(
        "sliding-window layers, which no real run covered (the KV cache transcribed from vLLM's "
        "hybrid manager, the windowed attention not fitted)");
  }
  if (g.linear) {
    why.push_back(
        "linear-attention layers, which no real run fitted (their state blocks transcribed "
        "from vLLM's hybrid manager, the Gated DeltaNet kernels' cost not fitted): on published "
        "vLLM runs of Qwen3-Next on H200 the measured TPOT was 1.5-2.2x the predicted, so no "
        "bound is given");
  }
  if (g.mxfp4) {
    why.push_back("MXFP4 experts, which no real run covered (no MXFP4 kernel profile)");
  }
  if (g.nvfp4) {
    why.push_back("NVFP4 GEMMs, which no real run covered (no FP4 kernel profile)");
  }
  if (g.context_tokens > kMaxContextTokens) {
    why.push_back(format("a mean context of %.0f tokens, past the runs' %.0f", g.context_tokens,
                         kMaxContextTokens));
  }
  return why;
}

double max_interval_level() {
  const double n = double(std::size(kHeldOut));
  return n / (n + 1);
}

double IntervalSet::lo(IntervalMetric m, double point) const {
  return level > 0 ? point / factor[size_t(m)] : NAN;
}

double IntervalSet::hi(IntervalMetric m, double point) const {
  return level > 0 ? point * factor[size_t(m)] : NAN;
}

IntervalSet prediction_intervals(const Regime& regime, double level) {
  IntervalSet s;
  s.calibration_rows = std::size(kHeldOut);
  if (level == 0) return s;
  if (!(level > 0 && level <= max_interval_level())) {
    throw Error(field::kInterval,
                format("%g is not a level in (0, %.3f]: the intervals rest on %zu "
                       "held-out rows, which bound a level at n / (n + 1)",
                       level, max_interval_level(), s.calibration_rows));
  }
  s.level = level;
  s.extrapolated = outside_fitted_range(regime);
  const size_t n = s.calibration_rows;
  const size_t k = size_t(std::ceil(double(n + 1) * level - 1e-9));  // 1-based, <= n
  for (int m = 0; m < kNumIntervalMetrics; ++m) {
    const std::vector<double> e = abs_errors(m);
    // Out of range: the metric's largest held-out error, whatever the level.
    s.factor[size_t(m)] = std::exp(s.extrapolated.empty() ? e[k - 1] : e.back());
    // MLA and linear attention: the only measurements at hand (docs/validation.md) are off by
    // more than any held-out row, and by a factor nothing bounds: [0, inf], not an interval that
    // claims a level.
    if (regime.mla || regime.linear) s.factor[size_t(m)] = INFINITY;
  }
  return s;
}

namespace {

struct Figure {
  const char* name;
  double point;
  IntervalMetric metric;
};

std::vector<Figure> figures(const RunSummary& s) {
  using M = IntervalMetric;
  return {{"ttft_ms.mean", s.ttft_ms.mean, M::kTtftMean},
          {"ttft_ms.p90", s.ttft_ms.p90, M::kTtftP90},
          {"ttft_ms.p99", s.ttft_ms.p99, M::kTtftP99},
          {"tpot_ms.mean", s.tpot_ms.mean, M::kTpotMean},
          {"itl_ms.mean", s.itl_ms.mean, M::kTpotMean},
          {"e2e_ms.mean", s.e2e_ms.mean, M::kE2eMean},
          {"e2e_ms.p90", s.e2e_ms.p90, M::kE2eP90},
          {"e2e_ms.p99", s.e2e_ms.p99, M::kE2eP99}};
}

}  // namespace

void print_intervals(std::ostream& out, const RunResult& r, const IntervalSet& s) {
  if (s.level == 0) return;
  out << format(
      "\n%.0f%% prediction intervals (split-conformal on servesim's held-out error over "
      "%zu real vLLM stage rows; --interval none hides them):\n",
      s.level * 100, s.calibration_rows);
  std::string line;
  for (const Figure& f : figures(r.summary)) {
    if (std::isnan(f.point)) continue;
    line += format("  %s %.1f [%.1f, %.1f]", f.name, f.point, s.lo(f.metric, f.point),
                   s.hi(f.metric, f.point));
    if (line.size() > 70) {
      out << line << "\n";
      line.clear();
    }
  }
  const double tps = r.summary.output_tokens_per_s;
  line += format("  output_tok_per_s %.0f [%.0f, %.0f]", tps, s.lo(IntervalMetric::kTpotMean, tps),
                 s.hi(IntervalMetric::kTpotMean, tps));
  out << line << "\n";
  // An unbounded set (an MLA model's) is no widest interval.
  const char* what = std::isinf(s.factor[0]) ? "no bound" : "the widest interval";
  for (const std::string& w : s.extrapolated)
    out << "  outside the fitted range, " << what << ": " << w << "\n";
}

std::vector<std::pair<std::string, double>> interval_columns(const RunResult& r, double level) {
  const IntervalSet s = prediction_intervals(regime_of(r), level);
  std::vector<std::pair<std::string, double>> c = {{"interval_level", level}};
  for (const Figure& f : figures(r.summary)) {
    std::string name = f.name;
    std::replace(name.begin(), name.end(), '.', '_');
    c.emplace_back(name + "_lo", s.lo(f.metric, f.point));
    c.emplace_back(name + "_hi", s.hi(f.metric, f.point));
  }
  c.emplace_back("interval_extrapolated", s.extrapolated.empty() ? 0.0 : 1.0);
  return c;
}

void print_compare_intervals(std::ostream& out, const std::vector<RunResult>& runs, double level) {
  if (level == 0 || runs.empty()) return;
  out << format(
      "\n%.0f%% prediction intervals (held-out error on %zu real vLLM stage rows; --interval none "
      "hides them). They bound each figure; errors shared by the rows (same GPU and model) "
      "largely cancel between them:\n",
      level * 100, std::size(kHeldOut));
  size_t width = 0;
  for (const RunResult& r : runs)
    width = std::max(width, run_label(r).size());
  for (const RunResult& r : runs) {
    const IntervalSet s = prediction_intervals(regime_of(r), level);
    const RunSummary& m = r.summary;
    const std::pair<const char*, double> shown[] = {{"ttft_ms_p99", m.ttft_ms.p99},
                                                    {"tpot_ms_p50", m.tpot_ms.p50},
                                                    {"e2e_ms_p50", m.e2e_ms.p50}};
    std::string line = run_label(r);
    line.resize(width, ' ');
    for (const auto& [name, v] : shown) {
      if (std::isnan(v)) continue;
      const IntervalProxy p = *interval_proxy(name);
      line += format("  %s %.1f [%.1f, %.1f]", name, v, s.lo(p.metric, v), s.hi(p.metric, v));
    }
    if (!s.extrapolated.empty()) line += "  (widest: " + s.extrapolated.front() + ")";
    out << line << "\n";
  }
}

nlohmann::ordered_json intervals_json(const RunResult& r, const IntervalSet& s) {
  nlohmann::ordered_json j;
  j["level"] = s.level;
  if (s.level == 0) return j;
  j["method"] = "split-conformal, leave-one-experiment-out error of real vLLM 0.15.1 runs";
  j["calibration_rows"] = s.calibration_rows;
  const Regime g = regime_of(r);
  j["decode_batch"] = g.decode_batch;
  j["context_tokens"] = g.context_tokens;
  j["extrapolated"] = s.extrapolated;
  for (const Figure& f : figures(r.summary)) {
    if (std::isnan(f.point)) continue;
    j["figures"][f.name] = {s.lo(f.metric, f.point), s.hi(f.metric, f.point)};
  }
  const double tps = r.summary.output_tokens_per_s;
  j["figures"]["output_tokens_per_s"] = {s.lo(IntervalMetric::kTpotMean, tps),
                                         s.hi(IntervalMetric::kTpotMean, tps)};
  return j;
}

double parse_interval_level(const std::string& text, const std::string& flag) {
  if (text == "none") return 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0 && v < 1)) {
    throw Error(flag, "'" + text + "' is not a level in (0, 1) or none");
  }
  if (v > max_interval_level()) {
    throw Error(flag, format("%g is past %.3f: the intervals rest on %zu held-out rows, which "
                             "bound a level at n / (n + 1)",
                             v, max_interval_level(), std::size(kHeldOut)));
  }
  return v;
}

std::optional<IntervalProxy> interval_proxy(const std::string& column) {
  using M = IntervalMetric;
  const auto stat = [&](const std::string& prefix) -> std::string {
    return column.rfind(prefix, 0) == 0 ? column.substr(prefix.size()) : std::string();
  };
  // The latency families with a held-out mean, p90 and p99: STAT's nearest of them.
  const auto family = [](const std::string& st, M mean, M p90, M p99) -> std::optional<M> {
    if (st == "mean" || st == "p50") return mean;
    if (st == "p90") return p90;
    if (st == "p95" || st == "p99" || st == "max") return p99;
    return std::nullopt;
  };
  std::optional<M> m;
  for (const char* prefix : {"ttft_ms_", "queue_ms_"}) {
    if (!m) m = family(stat(prefix), M::kTtftMean, M::kTtftP90, M::kTtftP99);
  }
  if (!m) m = family(stat("e2e_ms_"), M::kE2eMean, M::kE2eP90, M::kE2eP99);
  for (const char* prefix : {"tpot_ms_", "itl_ms_"}) {
    if (!m && family(stat(prefix), M::kTpotMean, M::kTpotMean, M::kTpotMean)) m = M::kTpotMean;
  }
  if (m) return IntervalProxy{*m, true};
  const bool inverse = family(stat("otps_"), M::kTpotMean, M::kTpotMean, M::kTpotMean) ||
                       column == "output_tokens_per_s" || column == "total_tokens_per_s";
  if (inverse) return IntervalProxy{M::kTpotMean, false};
  return std::nullopt;
}

double pessimistic_value(const std::string& column, double value, const IntervalSet& s) {
  const std::optional<IntervalProxy> p = interval_proxy(column);
  if (s.level == 0 || !p) return value;
  return p->larger_is_worse ? s.hi(p->metric, value) : s.lo(p->metric, value);
}

}  // namespace servesim
