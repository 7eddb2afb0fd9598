#include "models/calibration.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <unsupported/Eigen/NonLinearOptimization>
#include <unsupported/Eigen/NumericalDiff>

#include "models/table_model.hpp"
#include "util/error.hpp"
#include "util/ini.hpp"

namespace servesim {

namespace {

// ---- parameters in a transformed, unconstrained space ----------------------------------------

enum class Kind { kEfficiency, kPositive, kSharpness };

struct FreeParam {
  double RooflineParams::*member;
  Kind kind;
};

double to_free(double v, Kind k) {
  switch (k) {
    case Kind::kEfficiency: {
      const double e = std::clamp(v, 1e-4, 1 - 1e-4);
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
    case Kind::kPositive:
      return std::exp(u);
    case Kind::kSharpness:
      return 1 + std::exp(u);
  }
  return u;
}

// Minimises the sum of squared RESIDUALS(params) over FREE (a subset of PARAMS), in place.
void fit(RooflineParams& params, const std::vector<FreeParam>& free, size_t n_residuals,
         const std::function<void(const RooflineParams&, Eigen::VectorXd&)>& residuals) {
  if (n_residuals < free.size()) return;  // too few points: keep the starting values
  struct Functor {
    using Scalar = double;
    enum { InputsAtCompileTime = Eigen::Dynamic, ValuesAtCompileTime = Eigen::Dynamic };
    using InputType = Eigen::VectorXd;
    using ValueType = Eigen::VectorXd;
    using JacobianType = Eigen::MatrixXd;
    const std::vector<FreeParam>* free;
    RooflineParams base;
    const std::function<void(const RooflineParams&, Eigen::VectorXd&)>* residuals;
    int m;
    int inputs() const { return int(free->size()); }
    int values() const { return m; }
    int operator()(const Eigen::VectorXd& x, Eigen::VectorXd& f) const {
      RooflineParams p = base;
      for (size_t i = 0; i < free->size(); ++i) {
        p.*(*free)[i].member = from_free(x[Eigen::Index(i)], (*free)[i].kind);
      }
      (*residuals)(p, f);
      return 0;
    }
  };
  Functor fn{&free, params, &residuals, int(n_residuals)};
  Eigen::NumericalDiff<Functor> diff(fn, 1e-6);
  Eigen::LevenbergMarquardt<Eigen::NumericalDiff<Functor>> lm(diff);
  lm.parameters.maxfev = 4000;
  Eigen::VectorXd x(free.size());
  for (size_t i = 0; i < free.size(); ++i) {
    x[Eigen::Index(i)] = to_free(params.*free[i].member, free[i].kind);
  }
  lm.minimize(x);
  for (size_t i = 0; i < free.size(); ++i) {
    const double v = from_free(x[Eigen::Index(i)], free[i].kind);
    if (!std::isfinite(v)) {
      throw Error("calibration",
                  "the fit did not converge (a parameter is not finite); are the "
                  "measurements consistent?");
    }
    params.*free[i].member = v;
  }
}

// ---- op-level measurements from profiles -------------------------------------------------------

enum class OpClass { kLinear, kElementwise, kPrefillAttention, kDecodeAttention, kAllReduce, kCpu };

struct OpRow {
  OpClass cls;
  int group;      // index into the shapes (model shape and TP) rows are predicted with
  double x1, x2;  // tokens | (chunk, context) | (batch, context) | bytes | batch size
  double ms;
};

struct Shape {
  ModelSpec model;
  int tp;
};

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

struct Measurements {
  std::vector<Shape> shapes;
  std::vector<OpRow> rows;
};

Measurements collect(const ProfileSet& p) {
  Measurements m;
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
  if (p.attention) {
    const int g = int(m.shapes.size());
    m.shapes.push_back({layer_model(p.attention->shape), p.attention->tp});
    for (const auto& [chunk, curve] : p.attention->prefill) {
      for (size_t i = 0; i < curve.xs().size(); ++i) {
        m.rows.push_back(
            {OpClass::kPrefillAttention, g, double(chunk), curve.xs()[i], curve.ys()[i]});
      }
    }
    for (const auto& [batch, curve] : p.attention->decode) {
      for (size_t i = 0; i < curve.xs().size(); ++i) {
        m.rows.push_back(
            {OpClass::kDecodeAttention, g, double(batch), curve.xs()[i], curve.ys()[i]});
      }
    }
  }
  if (p.allreduce) {
    for (const auto& [workers, curve] : p.allreduce->by_workers) {
      const int g = int(m.shapes.size());
      m.shapes.push_back({layer_model({64, 8, 8192, 0}), workers});
      for (size_t i = 0; i < curve.xs().size(); ++i) {
        m.rows.push_back({OpClass::kAllReduce, g, curve.xs()[i], 0, curve.ys()[i]});
      }
    }
  }
  if (p.cpu) {
    const Curve& c = p.cpu->per_iteration;
    for (size_t i = 0; i < c.xs().size(); ++i) {
      m.rows.push_back({OpClass::kCpu, -1, c.xs()[i], 0, c.ys()[i]});
    }
  }
  return m;
}

// Predicted ms of one measurement under PARAMS.
double predict(const OpRow& r, const std::vector<Shape>& shapes, const GpuSpec& gpu,
               const RooflineParams& params, std::vector<SeqShape>& scratch) {
  if (r.cls == OpClass::kCpu) {
    return (params.cpu_overhead_s + params.cpu_overhead_s_per_seq * r.x1) * 1e3;
  }
  const Shape& s = shapes[size_t(r.group)];
  const RooflineCostModel model(gpu, s.model, s.tp, params);
  scratch.clear();
  switch (r.cls) {
    case OpClass::kLinear:
    case OpClass::kElementwise: {
      scratch.push_back({int32_t(r.x1), 0, true, false});
      const StepCost c = model.cost(scratch);
      return (r.cls == OpClass::kLinear ? c.linear_s : c.elementwise_s) * 1e3;
    }
    case OpClass::kPrefillAttention:
      scratch.push_back({int32_t(r.x1), int32_t(r.x2), true, false});
      return model.cost(scratch).attention_s * 1e3;
    case OpClass::kDecodeAttention:
      scratch.assign(size_t(r.x1), SeqShape{1, int32_t(r.x2), false, false});
      return model.cost(scratch).attention_s * 1e3;
    case OpClass::kAllReduce:
      return model.allreduce_seconds(r.x1) * 1e3;
    case OpClass::kCpu:
      break;
  }
  return 0;
}

struct ClassSpec {
  const char* name;
  std::vector<OpClass> classes;
  std::vector<FreeParam> free;
};

const std::vector<ClassSpec>& class_specs() {
  using P = RooflineParams;
  static const std::vector<ClassSpec> specs = {
      {"GEMMs",
       {OpClass::kLinear},
       {{&P::linear_compute_efficiency, Kind::kEfficiency},
        {&P::linear_memory_efficiency, Kind::kEfficiency},
        {&P::knee_sharpness, Kind::kSharpness}}},
      {"element-wise",
       {OpClass::kElementwise},
       {{&P::elementwise_memory_efficiency, Kind::kEfficiency},
        {&P::elementwise_floor_s_per_layer, Kind::kPositive}}},
      {"attention",
       {OpClass::kPrefillAttention, OpClass::kDecodeAttention},
       {{&P::attention_compute_efficiency, Kind::kEfficiency},
        {&P::attention_memory_efficiency, Kind::kEfficiency},
        {&P::attention_floor_s_per_layer, Kind::kPositive}}},
      {"all-reduce",
       {OpClass::kAllReduce},
       {{&P::allreduce_latency_s, Kind::kPositive},
        {&P::interconnect_efficiency, Kind::kEfficiency}}},
      {"CPU overhead",
       {OpClass::kCpu},
       {{&P::cpu_overhead_s, Kind::kPositive}, {&P::cpu_overhead_s_per_seq, Kind::kPositive}}},
  };
  return specs;
}

// Relative-error residuals of ROWS under P.
void relative_residuals(const std::vector<const OpRow*>& rows, const std::vector<Shape>& shapes,
                        const GpuSpec& gpu, const RooflineParams& p, Eigen::VectorXd& f) {
  std::vector<SeqShape> scratch;
  for (size_t i = 0; i < rows.size(); ++i) {
    f[Eigen::Index(i)] = predict(*rows[i], shapes, gpu, p, scratch) / rows[i]->ms - 1;
  }
}

// Fits every op class on ROWS (those with KEEP true), starting from START.
RooflineParams fit_classes(const Measurements& m, const GpuSpec& gpu, const RooflineParams& start,
                           const std::function<bool(const OpRow&)>& keep,
                           std::vector<ClassFit>* report) {
  RooflineParams best = start;
  for (const ClassSpec& spec : class_specs()) {
    std::vector<const OpRow*> rows;
    for (const OpRow& r : m.rows) {
      if (std::find(spec.classes.begin(), spec.classes.end(), r.cls) != spec.classes.end() &&
          keep(r)) {
        rows.push_back(&r);
      }
    }
    if (rows.empty()) continue;
    auto residuals = [&](const RooflineParams& p, Eigen::VectorXd& f) {
      relative_residuals(rows, m.shapes, gpu, p, f);
    };
    if (spec.classes.front() == OpClass::kLinear) {
      // The tile size is discrete: the best of a few, each with its own continuous fit.
      double best_cost = INFINITY;
      RooflineParams chosen = best;
      for (double tile : {0.0, 64.0, 128.0}) {
        RooflineParams p = best;
        p.linear_tile_tokens = tile;
        if (p.knee_sharpness <= 1) p.knee_sharpness = 2;
        fit(p, spec.free, rows.size(), residuals);
        Eigen::VectorXd f(rows.size());
        residuals(p, f);
        if (f.squaredNorm() < best_cost) {
          best_cost = f.squaredNorm();
          chosen = p;
        }
      }
      best = chosen;
    } else if (spec.classes.front() == OpClass::kAllReduce) {
      // The protocol switch is discrete too: none, or one of a few message sizes, each with
      // its own latency above it.
      double best_cost = INFINITY;
      RooflineParams chosen = best;
      for (double bytes : {0.0, 32768.0, 65536.0, 131072.0, 262144.0, 524288.0}) {
        RooflineParams p = best;
        p.allreduce_switch_bytes = bytes;
        std::vector<FreeParam> free = spec.free;
        if (bytes > 0) {
          if (p.allreduce_large_latency_s <= 0) p.allreduce_large_latency_s = p.allreduce_latency_s;
          free.push_back({&RooflineParams::allreduce_large_latency_s, Kind::kPositive});
        } else {
          p.allreduce_large_latency_s = 0;
        }
        fit(p, free, rows.size(), residuals);
        Eigen::VectorXd f(rows.size());
        residuals(p, f);
        if (f.squaredNorm() < best_cost) {
          best_cost = f.squaredNorm();
          chosen = p;
        }
      }
      best = chosen;
    } else {
      fit(best, spec.free, rows.size(), residuals);
    }
    if (report != nullptr) {
      Eigen::VectorXd f(rows.size());
      residuals(best, f);
      ClassFit c{spec.name, rows.size(), 0, 0};
      for (Eigen::Index i = 0; i < f.size(); ++i) {
        c.mape += std::abs(f[i]);
        c.max_ape = std::max(c.max_ape, std::abs(f[i]));
      }
      c.mape /= double(f.size());
      report->push_back(c);
    }
  }
  return best;
}

}  // namespace

RooflineParams fit_profiles(const ProfileSet& p, const GpuSpec& gpu) {
  const Measurements m = collect(p);
  if (m.rows.empty()) throw Error(p.dir, 0, "", "no measurements to fit");
  return fit_classes(
      m, gpu, RooflineParams{}, [](const OpRow&) { return true; }, nullptr);
}

CalibrationResult calibrate_from_profiles(const ProfileSet& p, const GpuSpec& gpu,
                                          const ModelSpec& model, int tp, int folds) {
  const Measurements m = collect(p);
  if (m.rows.empty()) throw Error(p.dir, 0, "", "no measurements to fit");
  CalibrationResult r;
  r.folds = folds;
  // A calibration is for one deployment: all-reduces are fitted on rows with this many GPUs
  // where measured; every other class on every row (a GPU's efficiencies are shared by all
  // shapes, so every model's profile teaches them).
  const ProfileShape own{model.num_heads, model.num_kv_heads, model.hidden_size,
                         model.intermediate_size};
  bool have_ar = false;
  for (const OpRow& row : m.rows) {
    have_ar |= row.cls == OpClass::kAllReduce && m.shapes[size_t(row.group)].tp == tp;
  }
  auto relevant = [&](const OpRow& row) {
    if (row.cls == OpClass::kAllReduce && have_ar) return m.shapes[size_t(row.group)].tp == tp;
    return true;
  };
  r.source = "Vidur profiles in " + p.dir + " (" + model.name + ", TP" + std::to_string(tp) + ")";
  r.params = fit_classes(m, gpu, RooflineParams{}, relevant, &r.classes);

  // Cross-validation over the composed steps of MODEL at TP: each fold refits without the
  // measurements its steps are interpolated from.
  const TableCostModel measured(p, gpu, model, tp);
  const std::vector<StepPoint> grid = fidelity_grid();
  const RooflineCostModel final_model(gpu, model, tp, r.params);
  for (const StepPoint& s : grid) {
    r.fitted.add(parts_of(final_model.cost(s.seqs)).total, parts_of(measured.cost(s.seqs)).total,
                 s.label);
  }
  r.fitted.finish();
  // Cross-validation over the composed steps of MODEL at TP, k folds. Each fold refits, from
  // the uncalibrated start, without every measurement a held-out step's measured time is
  // interpolated or extrapolated from, and the next one on each side (GEMMs and element-wise by
  // tokens, attention by chunk, batch and context, all-reduce by bytes, CPU by batch size), then
  // predicts the held-out steps. A second pass also leaves out every GEMM and element-wise
  // measurement of this model's shape, at any TP degree: how well the fit carries over to a
  // model it has never seen.
  std::vector<bool> own_shape(m.shapes.size(), false);  // mlp groups of this model's shape
  for (const OpRow& row : m.rows) {
    if (row.cls != OpClass::kLinear) continue;
    const ModelSpec& s = m.shapes[size_t(row.group)].model;
    own_shape[size_t(row.group)] = s.hidden_size == own.n_embd && s.num_heads == own.n_head &&
                                   s.num_kv_heads == own.n_kv_head &&
                                   s.intermediate_size == own.n_expanded_embd;
  }
  auto values = [&](OpClass cls, bool second) {
    std::vector<double> v;
    for (const OpRow& row : m.rows) {
      if (row.cls == cls && relevant(row)) v.push_back(second ? row.x2 : row.x1);
    }
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  };
  // The measured values a lookup at X depends on, with one more on each side: the bracketing
  // pair inside the range; the first values below it; the last quarter (the end-slope fit of
  // models/profiles.hpp's Curve) above it.
  auto support = [](const std::vector<double>& v, double x) -> std::pair<double, double> {
    if (v.empty()) return {INFINITY, -INFINITY};
    const size_t n = v.size();
    if (x > v.back()) {
      const size_t k = std::min<size_t>(n, std::clamp<size_t>(n / 4, 2, 16));
      return {v[n - k], v.back()};
    }
    const size_t hi = size_t(std::lower_bound(v.begin(), v.end(), x) - v.begin());
    const size_t lo = (hi < n && v[hi] == x) ? hi : (hi == 0 ? 0 : hi - 1);
    return {v[lo], v[std::min(n - 1, hi)]};
  };
  const std::vector<double> chunks = values(OpClass::kPrefillAttention, false),
                            prefill_ctx = values(OpClass::kPrefillAttention, true),
                            batches = values(OpClass::kDecodeAttention, false),
                            decode_ctx = values(OpClass::kDecodeAttention, true),
                            sizes = values(OpClass::kAllReduce, false),
                            cpu_batches = values(OpClass::kCpu, false);
  const double kv_ratio =
      p.attention ? double(model.kv_heads_per_gpu(tp)) * model.head_dim /
                        (std::max(1.0, double(p.attention->shape.n_kv_head) / p.attention->tp) *
                         (double(p.attention->shape.n_embd) / p.attention->shape.n_head))
                  : 1.0;
  // The mlp group the table model reads this model's GEMMs from (the first of its shape at
  // TP, as ProfileSet::find_mlp picks the first file), and its token values.
  int table_group = -1;
  for (const OpRow& row : m.rows) {
    if (row.cls == OpClass::kLinear && own_shape[size_t(row.group)] &&
        m.shapes[size_t(row.group)].tp == tp) {
      table_group = row.group;
      break;
    }
  }
  std::vector<double> own_tokens;
  for (const OpRow& row : m.rows) {
    if (row.cls == OpClass::kLinear && row.group == table_group) own_tokens.push_back(row.x1);
  }
  std::sort(own_tokens.begin(), own_tokens.end());
  own_tokens.erase(std::unique(own_tokens.begin(), own_tokens.end()), own_tokens.end());
  struct Window {
    OpClass cls;
    std::pair<double, double> x1, x2;
    int group = -1;  // -1: any
  };
  const std::pair<double, double> all{-INFINITY, INFINITY};
  auto cross_validate = [&](bool leave_model_out) {
    ErrorStats cv;
    for (int f = 0; f < folds; ++f) {
      std::vector<Window> windows;
      std::vector<const StepPoint*> held;
      for (size_t i = 0; i < grid.size(); ++i) {
        if (int(i % size_t(folds)) != f) continue;
        const StepPoint& s = grid[i];
        held.push_back(&s);
        double tokens = 0, decodes = 0, ctx = 0;
        for (const SeqShape& q : s.seqs) {
          tokens += q.new_tokens;
          if (q.prefill) {
            windows.push_back({OpClass::kPrefillAttention, support(chunks, q.new_tokens),
                               support(prefill_ctx, q.context_tokens)});
          } else {
            decodes += 1;
            ctx += q.context_tokens;
          }
        }
        if (decodes > 0) {
          const double b = decodes * kv_ratio;
          const auto c = support(decode_ctx, ctx / decodes);
          windows.push_back({OpClass::kDecodeAttention, support(batches, b), c});
          // Beyond the largest batch the table also uses one sequence's time.
          if (!batches.empty() && b > batches.back()) {
            windows.push_back({OpClass::kDecodeAttention, support(batches, batches.front()), c});
          }
        }
        windows.push_back({OpClass::kLinear, support(own_tokens, tokens), all, table_group});
        windows.push_back({OpClass::kElementwise, support(own_tokens, tokens), all, table_group});
        windows.push_back({OpClass::kAllReduce,
                           support(sizes, tokens * model.hidden_size * model.dtype_bytes), all});
        windows.push_back({OpClass::kCpu, support(cpu_batches, double(s.seqs.size())), all});
      }
      auto keep = [&](const OpRow& row) {
        if (!relevant(row)) return false;
        if (leave_model_out && (row.cls == OpClass::kLinear || row.cls == OpClass::kElementwise) &&
            own_shape[size_t(row.group)]) {
          return false;
        }
        for (const Window& w : windows) {
          if (row.cls == w.cls && (w.group < 0 || row.group == w.group) && row.x1 >= w.x1.first &&
              row.x1 <= w.x1.second && row.x2 >= w.x2.first && row.x2 <= w.x2.second) {
            return false;
          }
        }
        return true;
      };
      const RooflineParams fold_params = fit_classes(m, gpu, RooflineParams{}, keep, nullptr);
      const RooflineCostModel fold_model(gpu, model, tp, fold_params);
      for (const StepPoint* s : held) {
        cv.add(parts_of(fold_model.cost(s->seqs)).total, parts_of(measured.cost(s->seqs)).total,
               s->label);
      }
    }
    cv.finish();
    return cv;
  };
  r.cv = cross_validate(false);
  r.cv_unseen_model = cross_validate(true);
  return r;
}

std::vector<SeqShape> step_shape(const StepLogRow& r) {
  std::vector<SeqShape> seqs;
  const int64_t decodes = r.decode_tokens;
  const int64_t ctx = decodes > 0 ? r.decode_context_tokens / decodes : 0;
  for (int64_t i = 0; i < decodes; ++i)
    seqs.push_back({1, int32_t(ctx), false, true});
  if (r.prefill_tokens > 0) {
    const int64_t n = std::max<int64_t>(1, r.batch_size > decodes ? r.batch_size - decodes : 1);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t tokens = r.prefill_tokens / n + (i < r.prefill_tokens % n ? 1 : 0);
      if (tokens > 0) {
        seqs.push_back({int32_t(tokens), int32_t(r.prefill_context_tokens / n), true, true});
      }
    }
  }
  return seqs;
}

CalibrationResult calibrate_from_step_log(const std::vector<StepLogRow>& log, const GpuSpec& gpu,
                                          const ModelSpec& model, int tp, int folds) {
  std::vector<std::vector<SeqShape>> shapes;
  for (const StepLogRow& r : log)
    shapes.push_back(step_shape(r));
  std::vector<FreeParam> all;
  for (const ClassSpec& spec : class_specs()) {
    for (const FreeParam& f : spec.free) {
      if (tp > 1 || spec.classes.front() != OpClass::kAllReduce) all.push_back(f);
    }
  }
  auto fit_on = [&](const std::vector<size_t>& idx) {
    double best_cost = INFINITY;
    RooflineParams chosen;
    for (double tile : {0.0, 64.0, 128.0}) {
      RooflineParams p;
      p.linear_tile_tokens = tile;
      p.knee_sharpness = 2;
      auto residuals = [&](const RooflineParams& q, Eigen::VectorXd& f) {
        const RooflineCostModel m(gpu, model, tp, q);
        for (size_t i = 0; i < idx.size(); ++i) {
          f[Eigen::Index(i)] = m.cost(shapes[idx[i]]).seconds * 1e3 / log[idx[i]].measured_ms - 1;
        }
      };
      fit(p, all, idx.size(), residuals);
      Eigen::VectorXd f(idx.size());
      residuals(p, f);
      if (f.squaredNorm() < best_cost) {
        best_cost = f.squaredNorm();
        chosen = p;
      }
    }
    return chosen;
  };
  // Enough steps that every training fold still has twice as many steps as parameters.
  const size_t min_rows = (2 * all.size() * size_t(folds) + size_t(folds) - 2) / size_t(folds - 1);
  if (log.size() < min_rows) {
    throw Error("step-log", std::to_string(log.size()) + " steps are too few to fit " +
                                std::to_string(all.size()) + " parameters with " +
                                std::to_string(folds) + "-fold cross-validation: need at least " +
                                std::to_string(min_rows));
  }
  std::vector<size_t> every(log.size());
  for (size_t i = 0; i < log.size(); ++i)
    every[i] = i;
  CalibrationResult r;
  r.folds = folds;
  r.source = "step log";
  r.params = fit_on(every);
  const RooflineCostModel final_model(gpu, model, tp, r.params);
  ClassFit steps{"steps", log.size(), 0, 0};
  for (size_t i = 0; i < log.size(); ++i) {
    const double pred = final_model.cost(shapes[i]).seconds * 1e3;
    r.fitted.add(pred, log[i].measured_ms, "step " + std::to_string(i + 1));
  }
  r.fitted.finish();
  steps.mape = r.fitted.mape;
  steps.max_ape = r.fitted.max_ape;
  r.classes.push_back(steps);
  for (int f = 0; f < folds; ++f) {
    std::vector<size_t> train, test;
    for (size_t i = 0; i < log.size(); ++i)
      (int(i % size_t(folds)) == f ? test : train).push_back(i);
    const RooflineCostModel m(gpu, model, tp, fit_on(train));
    for (size_t i : test) {
      r.cv.add(m.cost(shapes[i]).seconds * 1e3, log[i].measured_ms,
               "step " + std::to_string(i + 1));
    }
  }
  r.cv.finish();
  return r;
}

void write_calibration(const std::string& path, const GpuSpec& gpu, const ModelSpec& model,
                       const CalibrationResult& r) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error(path, 0, "", "cannot open for writing");
  char buf[160];
  f << "# servesim calibration of the roofline cost model: `run --calibration " << path << "`\n";
  std::snprintf(buf, sizeof buf,
                "# cross-validated composed-step MAPE %.2f%%, max %.2f%% (%d-fold)\n",
                r.cv.mape * 100, r.cv.max_ape * 100, r.folds);
  f << buf;
  f << "gpu = " << gpu.name << "\nmodel = " << model.name << "\nsource = " << r.source << "\n";
  for (const RooflineParamField& p : roofline_param_fields()) {
    std::snprintf(buf, sizeof buf, "%s = %.17g\n", p.name, r.params.*p.member);
    f << buf;
  }
  if (!f.flush()) throw Error(path, 0, "", "write failed");
}

RooflineParams read_calibration(const std::string& path, std::string* source,
                                std::string* gpu_name) {
  RooflineParams p;
  std::string gpu, model, src;
  std::vector<IniField> fields = {{"gpu", &gpu}, {"model", &model}, {"source", &src}};
  for (const RooflineParamField& f : roofline_param_fields())
    fields.push_back({f.name, &(p.*f.member), true});
  load_ini_fields(path, fields);
  for (const RooflineParamField& f : roofline_param_fields()) {
    const double v = p.*f.member;
    const bool knee_gap = std::string(f.name) == "knee_sharpness" && v > 0 && v < 1;
    if (!(v >= f.min && v <= f.max) || knee_gap) {
      char range[96];
      std::snprintf(range, sizeof range, "%g is out of range [%g, %g]%s", v, f.min, f.max,
                    knee_gap ? " (0, or at least 1)" : "");
      throw Error(path, ini_line_of(path, f.name), f.name, range);
    }
  }
  if (source != nullptr) *source = path + " (" + (src.empty() ? "calibration" : src) + ")";
  if (gpu_name != nullptr) *gpu_name = gpu;
  return p;
}

void print_calibration(std::ostream& out, const CalibrationResult& r) {
  char buf[200];
  out << "fitted on " << r.source << "\n";
  for (const RooflineParamField& f : roofline_param_fields()) {
    std::snprintf(buf, sizeof buf, "  %-32s %.6g\n", f.name, r.params.*f.member);
    out << buf;
  }
  out << "in-sample error per op class:\n";
  for (const ClassFit& c : r.classes) {
    std::snprintf(buf, sizeof buf, "  %-14s %6zu points  MAPE %6.2f%%  max %6.2f%%\n",
                  c.name.c_str(), c.points, c.mape * 100, c.max_ape * 100);
    out << buf;
  }
  auto stats = [&](const ErrorStats& e) {
    if (e.n == 0) return std::string("n/a");
    std::snprintf(buf, sizeof buf, "MAPE %.2f%% (max %.2f%%: %s)", e.mape * 100, e.max_ape * 100,
                  e.worst.c_str());
    return std::string(buf);
  };
  out << "composed steps, " << r.folds << "-fold cross-validated: " << stats(r.cv) << "\n";
  if (r.cv_unseen_model.n > 0) {
    out << "  ... and with this model's own GEMM and element-wise profile left out too: "
        << stats(r.cv_unseen_model) << "\n";
  }
  out << "  ... with the final fit: " << stats(r.fitted) << "\n";
}

}  // namespace servesim
