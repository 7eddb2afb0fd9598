// Levenberg-Marquardt in the transformed parameter space, the op-level measurements of Vidur
// profiles and their predictions, and the fits per op class (fit_profiles()).
#include "models/calibration_fit.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <unsupported/Eigen/NonLinearOptimization>
#include <unsupported/Eigen/NumericalDiff>

#include "util/error.hpp"

namespace servesim {

namespace calibration_detail {

namespace {

// ---- parameters in a transformed, unconstrained space ----------------------------------------

double to_free(double v, Kind k) {
  switch (k) {
    case Kind::kEfficiency: {
      const double e = std::clamp(v, 1e-4, 1 - 1e-4);
      return std::log(e / (1 - e));
    }
    case Kind::kHbm: {
      const double e = std::clamp(v / kMaxHbmEfficiency, 1e-4, 1 - 1e-4);
      return std::log(e / (1 - e));
    }
    case Kind::kPositive:
      return std::log(std::max(v, 1e-12));
    case Kind::kSharpness:
      return std::log(std::max(v - 1, 1e-3));
  }
  return v;
}

double from_free(double u, Kind k) {
  switch (k) {
    case Kind::kEfficiency:
      return 1 / (1 + std::exp(-u));
    case Kind::kHbm:
      return kMaxHbmEfficiency / (1 + std::exp(-u));
    case Kind::kPositive:
      return std::exp(u);
    case Kind::kSharpness:
      return 1 + std::exp(u);
  }
  return u;
}

// BASE with FREE set from X, a point in the transformed space.
RooflineParams with_free(const RooflineParams& base, const std::vector<FreeParam>& free,
                         const Eigen::VectorXd& x) {
  RooflineParams p = base;
  for (size_t i = 0; i < free.size(); ++i) {
    free[i].of(p) = from_free(x[Eigen::Index(i)], free[i].kind);
  }
  return p;
}

// The least-squares problem in the form Eigen's NumericalDiff and LevenbergMarquardt expect: the
// inputs are FREE in the transformed space, every other parameter is BASE's.
struct Problem {
  using Scalar = double;
  enum { InputsAtCompileTime = Eigen::Dynamic, ValuesAtCompileTime = Eigen::Dynamic };
  using InputType = Eigen::VectorXd;
  using ValueType = Eigen::VectorXd;
  using JacobianType = Eigen::MatrixXd;
  const std::vector<FreeParam>* free;
  RooflineParams base;
  const Residuals* residuals;
  int m;
  int inputs() const { return int(free->size()); }
  int values() const { return m; }
  int operator()(const Eigen::VectorXd& x, Eigen::VectorXd& f) const {
    (*residuals)(with_free(base, *free, x), f);
    return 0;
  }
};

// FREE of PARAMS in the transformed space.
Eigen::VectorXd to_free_point(const RooflineParams& params, const std::vector<FreeParam>& free) {
  Eigen::VectorXd x(free.size());
  for (size_t i = 0; i < free.size(); ++i) {
    x[Eigen::Index(i)] = to_free(free[i].of(params), free[i].kind);
  }
  return x;
}

// Sets FREE of PARAMS from X, the transformed point the fit ended at.
void set_fitted(RooflineParams& params, const std::vector<FreeParam>& free,
                const Eigen::VectorXd& x) {
  for (size_t i = 0; i < free.size(); ++i) {
    const double v = from_free(x[Eigen::Index(i)], free[i].kind);
    if (!std::isfinite(v)) {
      throw Error(field::kCalibration,
                  "the fit did not converge (a parameter is not finite); are the "
                  "measurements consistent?");
    }
    free[i].of(params) = v;
  }
}

// The sum of squared RESIDUALS (N of them) at P.
double squared_error(const Residuals& residuals, size_t n, const RooflineParams& p) {
  Eigen::VectorXd f(n);
  residuals(p, f);
  return f.squaredNorm();
}

}  // namespace

void fit(RooflineParams& params, const std::vector<FreeParam>& free, size_t n_residuals,
         const Residuals& residuals) {
  if (n_residuals < free.size()) return;  // too few points: keep the starting values
  Problem problem{&free, params, &residuals, int(n_residuals)};
  Eigen::NumericalDiff<Problem> diff(problem, 1e-6);
  Eigen::LevenbergMarquardt<Eigen::NumericalDiff<Problem>> lm(diff);
  lm.parameters.maxfev = 4000;
  Eigen::VectorXd x = to_free_point(params, free);
  lm.minimize(x);
  set_fitted(params, free, x);
}

RooflineParams fit_best_of(const RooflineParams& start, std::initializer_list<double> values,
                           const Candidate& candidate, size_t n_residuals,
                           const Residuals& residuals) {
  double best_cost = INFINITY;
  RooflineParams chosen = start;
  for (double value : values) {
    RooflineParams p = start;
    const std::vector<FreeParam> free = candidate(value, p);
    fit(p, free, n_residuals, residuals);
    const double cost = squared_error(residuals, n_residuals, p);
    if (cost < best_cost) {
      best_cost = cost;
      chosen = p;
    }
  }
  return chosen;
}

// ---- op-level measurements from profiles -------------------------------------------------------

namespace {

// A one-layer model of a profile's shape (per-layer times are what profiles hold).
ModelSpec layer_model(const ProfileShape& s) {
  ModelSpec m;
  m.name = "profile";
  m.num_layers = 1;
  m.hidden_size = s.n_embd;
  m.num_heads = s.n_head;
  m.num_kv_heads = s.n_kv_head;
  m.head_dim = s.n_embd / s.n_head;
  m.intermediate_size = s.n_expanded_embd > 0 ? s.n_expanded_embd : 4 * s.n_embd;
  m.vocab_size = 32000;
  m.max_position = 1 << 20;
  return m;
}

// One GEMM row and one element-wise row per token count of each mlp.csv and TP degree.
void collect_mlp(const ProfileSet& p, Measurements& m) {
  for (const MlpProfile& mlp : p.mlp) {
    for (const auto& [tp, ops] : mlp.ops) {
      const int g = int(m.shapes.size());
      m.shapes.push_back({layer_model(mlp.shape), tp});
      const Curve& any = ops.begin()->second;
      for (size_t i = 0; i < any.xs().size(); ++i) {
        double gemm = 0, ew = 0;
        for (const std::string& op : gemm_ops())
          gemm += ops.at(op).ys()[i];
        for (const std::string& op : elementwise_ops())
          ew += ops.at(op).ys()[i];
        m.rows.push_back({OpClass::kLinear, g, any.xs()[i], 0, gemm});
        m.rows.push_back({OpClass::kElementwise, g, any.xs()[i], 0, ew});
      }
    }
  }
}

// One row per point of each curve in CURVES (keyed by X1), of class CLS and group G.
void collect_curves(const std::map<int, Curve>& curves, OpClass cls, int g, Measurements& m) {
  for (const auto& [key, curve] : curves) {
    for (size_t i = 0; i < curve.xs().size(); ++i) {
      m.rows.push_back({cls, g, double(key), curve.xs()[i], curve.ys()[i]});
    }
  }
}

void collect_attention(const AttentionProfile& a, Measurements& m) {
  const int g = int(m.shapes.size());
  m.shapes.push_back({layer_model(a.shape), a.tp});
  collect_curves(a.prefill, OpClass::kPrefillAttention, g, m);
  collect_curves(a.decode, OpClass::kDecodeAttention, g, m);
}

void collect_allreduce(const AllReduceProfile& a, Measurements& m) {
  for (const auto& [workers, curve] : a.by_workers) {
    const int g = int(m.shapes.size());
    m.shapes.push_back({layer_model({64, 8, 8192, 0}), workers});
    for (size_t i = 0; i < curve.xs().size(); ++i) {
      m.rows.push_back({OpClass::kAllReduce, g, curve.xs()[i], 0, curve.ys()[i]});
    }
  }
}

void collect_cpu(const CpuProfile& cpu, Measurements& m) {
  const Curve& c = cpu.per_iteration;
  for (size_t i = 0; i < c.xs().size(); ++i) {
    m.rows.push_back({OpClass::kCpu, -1, c.xs()[i], 0, c.ys()[i]});
  }
}

}  // namespace

Measurements collect(const ProfileSet& p) {
  Measurements m;
  collect_mlp(p, m);
  if (p.attention) collect_attention(*p.attention, m);
  if (p.allreduce) collect_allreduce(*p.allreduce, m);
  if (p.cpu) collect_cpu(*p.cpu, m);
  return m;
}

// ---- fits per op class -------------------------------------------------------------------------

namespace {

// The totals of a batch of COUNT sequences of shape S (integers: exactly BatchTotals::of of the
// COUNT copies, without building them: a decode-attention row is a batch of up to hundreds).
BatchTotals totals_of(const SeqShape& s, int64_t count) {
  BatchTotals t;
  t.add(s);
  for (int p = 0; p < 2; ++p) {
    t.seqs[p] *= count;
    t.tokens[p] *= count;
    t.pairs[p] *= count;
    t.kv_tokens[p] *= count;
  }
  t.emitting *= count;
  return t;
}

// Predicted ms of one measurement under PARAMS.
// MODELS: one per shape, under PARAMS (built once per parameter vector, not per row: a model
// copies its GPU and model specs). The roofline reads only a batch's totals.
double predict(const OpRow& r, const std::vector<RooflineCostModel>& models,
               const RooflineParams& params) {
  if (r.cls == OpClass::kCpu) {
    return (params.engine.cpu_s + params.engine.cpu_s_per_seq * r.x1) * 1e3;
  }
  const RooflineCostModel& model = models[size_t(r.group)];
  switch (r.cls) {
    case OpClass::kLinear:
    case OpClass::kElementwise: {
      const StepCost c = model.cost({}, totals_of({int32_t(r.x1), 0, true, false}, 1));
      return (r.cls == OpClass::kLinear ? c.linear_s : c.elementwise_s) * 1e3;
    }
    case OpClass::kPrefillAttention:
      return model.cost({}, totals_of({int32_t(r.x1), int32_t(r.x2), true, false}, 1)).attention_s *
             1e3;
    case OpClass::kDecodeAttention:
      return model.cost({}, totals_of({1, int32_t(r.x2), false, false}, int64_t(r.x1)))
                 .attention_s *
             1e3;
    case OpClass::kAllReduce:
      return model.allreduce_seconds(r.x1) * 1e3;
    case OpClass::kCpu:
      break;
  }
  return 0;
}

// Relative-error residuals of ROWS under P.
void relative_residuals(const std::vector<const OpRow*>& rows, const std::vector<Shape>& shapes,
                        const GpuSpec& gpu, const RooflineParams& p, Eigen::VectorXd& f) {
  std::vector<RooflineCostModel> models;
  models.reserve(shapes.size());
  for (const Shape& s : shapes)
    models.emplace_back(gpu, s.model, s.tp, p);
  for (size_t i = 0; i < rows.size(); ++i) {
    f[Eigen::Index(i)] = predict(*rows[i], models, p) / rows[i]->ms - 1;
  }
}

// The rows of M in SPEC's classes that KEEP accepts.
std::vector<const OpRow*> class_rows(const Measurements& m, const ClassSpec& spec,
                                     const RowFilter& keep) {
  std::vector<const OpRow*> rows;
  for (const OpRow& r : m.rows) {
    if (std::find(spec.classes.begin(), spec.classes.end(), r.cls) != spec.classes.end() &&
        keep(r)) {
      rows.push_back(&r);
    }
  }
  return rows;
}

// The tile size is discrete: the best of a few, each with its own continuous fit.
RooflineParams fit_gemms(const RooflineParams& start, const ClassSpec& spec, size_t n,
                         const Residuals& residuals) {
  // The GEMMs' per-layer latency is fitted where the architecture's kernels show one (its fit
  // starts with one): on H100 it halves the GEMM error and corrects small-batch decodes from +27%
  // to +3%; on the A100 profiles it gains 1.2 points of GEMM error and costs the composed steps'
  // cross-validation at TP4 (it no longer hides the DGX all-reduce's bump at 128-256 KB), so the
  // ampere fit goes without (docs/design/cost-model.md).
  const bool latency = start.hw.linear_latency_s_per_layer > 0;
  auto candidate = [&spec, latency](double tile, RooflineParams& p) {
    p.hw.linear_tile_tokens = tile;
    if (p.hw.knee_sharpness <= 1) p.hw.knee_sharpness = 2;
    std::vector<FreeParam> free = spec.free;
    if (latency) free.push_back({&HardwareParams::linear_latency_s_per_layer, Kind::kPositive});
    return free;
  };
  return fit_best_of(start, {0.0, 64.0, 128.0}, candidate, n, residuals);
}

// The protocol switch is discrete too: none, or one of a few message sizes, each with its own
// latency above it.
RooflineParams fit_allreduce(const RooflineParams& start, const ClassSpec& spec, size_t n,
                             const Residuals& residuals) {
  auto candidate = [&spec](double bytes, RooflineParams& p) {
    p.hw.allreduce_switch_bytes = bytes;
    std::vector<FreeParam> free = spec.free;
    if (bytes > 0) {
      if (p.hw.allreduce_large_latency_s <= 0) {
        p.hw.allreduce_large_latency_s = p.hw.allreduce_latency_s;
      }
      free.push_back({&HardwareParams::allreduce_large_latency_s, Kind::kPositive});
    } else {
      p.hw.allreduce_large_latency_s = 0;
    }
    return free;
  };
  return fit_best_of(start, {0.0, 32768.0, 65536.0, 131072.0, 262144.0, 524288.0}, candidate, n,
                     residuals);
}

// SPEC's parameters fitted on N rows, from START.
RooflineParams fit_class(const RooflineParams& start, const ClassSpec& spec, size_t n,
                         const Residuals& residuals) {
  if (spec.classes.front() == OpClass::kLinear) return fit_gemms(start, spec, n, residuals);
  if (spec.classes.front() == OpClass::kAllReduce) return fit_allreduce(start, spec, n, residuals);
  RooflineParams p = start;
  fit(p, spec.free, n, residuals);
  return p;
}

// The in-sample error of SPEC's N rows under P.
ClassFit class_error(const ClassSpec& spec, size_t n, const Residuals& residuals,
                     const RooflineParams& p) {
  Eigen::VectorXd f(n);
  residuals(p, f);
  ClassFit c{spec.name, n, 0, 0};
  for (Eigen::Index i = 0; i < f.size(); ++i) {
    c.mape += std::abs(f[i]);
    c.max_ape = std::max(c.max_ape, std::abs(f[i]));
  }
  c.mape /= double(f.size());
  return c;
}

}  // namespace

const std::vector<ClassSpec>& class_specs() {
  using P = HardwareParams;
  using E = EngineParams;  // Vidur's cpu_overheads.csv: the V0 engine's CPU work
  static const std::vector<ClassSpec> specs = {
      {"GEMMs",
       {OpClass::kLinear},
       {{&P::linear_compute_efficiency, Kind::kEfficiency},
        {&P::linear_memory_efficiency, Kind::kHbm},
        {&P::knee_sharpness, Kind::kSharpness}}},
      {"element-wise",
       {OpClass::kElementwise},
       {{&P::elementwise_memory_efficiency, Kind::kHbm},
        {&P::elementwise_floor_s_per_layer, Kind::kPositive}}},
      {"attention",
       {OpClass::kPrefillAttention, OpClass::kDecodeAttention},
       {{&P::attention_compute_efficiency, Kind::kEfficiency},
        {&P::attention_memory_efficiency, Kind::kHbm},
        {&P::attention_floor_s_per_layer, Kind::kPositive}}},
      {"all-reduce",
       {OpClass::kAllReduce},
       {{&P::allreduce_latency_s, Kind::kPositive},
        {&P::interconnect_efficiency, Kind::kEfficiency}}},
      {"CPU overhead",
       {OpClass::kCpu},
       {{&E::cpu_s, Kind::kPositive}, {&E::cpu_s_per_seq, Kind::kPositive}}},
  };
  return specs;
}

RooflineParams fit_classes(const Measurements& m, const GpuSpec& gpu, const RooflineParams& start,
                           const RowFilter& keep, std::vector<ClassFit>* report) {
  RooflineParams best = start;
  // Where vLLM's custom all-reduce takes the messages below its limit, NCCL's terms are fitted on
  // the messages NCCL serves.
  const double nccl_from = start.hw.custom_allreduce_max_bytes;
  const RowFilter served = [&](const OpRow& r) {
    return keep(r) && (r.cls != OpClass::kAllReduce || r.x1 >= nccl_from);
  };
  for (const ClassSpec& spec : class_specs()) {
    const std::vector<const OpRow*> rows = class_rows(m, spec, served);
    if (rows.empty()) continue;
    const Residuals residuals = [&](const RooflineParams& p, Eigen::VectorXd& f) {
      relative_residuals(rows, m.shapes, gpu, p, f);
    };
    best = fit_class(best, spec, rows.size(), residuals);
    if (report != nullptr) report->push_back(class_error(spec, rows.size(), residuals, best));
  }
  return best;
}

}  // namespace calibration_detail

using calibration_detail::collect;
using calibration_detail::fit_classes;
using calibration_detail::Measurements;
using calibration_detail::OpRow;

RooflineParams profile_fit_start(const ProfileSet& p, const GpuSpec& gpu) {
  RooflineParams start;
  const HardwareParams arch = hardware_params(gpu.arch);
  if (!p.attention) {  // not measured: the architecture's fit
    start.hw.attention_compute_efficiency = arch.attention_compute_efficiency;
    start.hw.attention_memory_efficiency = arch.attention_memory_efficiency;
    start.hw.attention_floor_s_per_layer = arch.attention_floor_s_per_layer;
  }
  // Never in Vidur's profiles.
  start.hw.custom_allreduce_max_bytes = arch.custom_allreduce_max_bytes;
  start.hw.custom_allreduce_latency_s = arch.custom_allreduce_latency_s;
  start.hw.custom_allreduce_efficiency = arch.custom_allreduce_efficiency;
  start.hw.linear_latency_s_per_layer = arch.linear_latency_s_per_layer;
  start.hw.moe_memory_efficiency = arch.moe_memory_efficiency;
  start.hw.moe_fp8_memory_efficiency = arch.moe_fp8_memory_efficiency;
  // The decode kernel's fixed time beyond its launch: the profiles' decode fits a floor and a
  // rate; Hopper's comes from FlashInfer's benchmark and the real runs (models/hardware.cpp).
  start.hw.attention_decode_latency_s_per_layer = arch.attention_decode_latency_s_per_layer;
  return start;
}

RooflineParams fit_profiles(const ProfileSet& p, const GpuSpec& gpu) {
  const Measurements m = collect(p);
  if (m.rows.empty()) throw Error(p.dir, 0, "", "no measurements to fit");
  return fit_classes(
      m, gpu, profile_fit_start(p, gpu), [](const OpRow&) { return true; }, nullptr);
}

}  // namespace servesim
