// Calibration with k-fold cross-validation: on Vidur profiles (calibrate_from_profiles), where a
// fold leaves out the measurements its held-out composed steps are interpolated from, and on a
// measured step log (calibrate_from_step_log), where a fold leaves out steps.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "models/calibration.hpp"
#include "models/calibration_fit.hpp"
#include "models/table_model.hpp"
#include "util/error.hpp"

namespace servesim {

using calibration_detail::class_specs;
using calibration_detail::ClassSpec;
using calibration_detail::collect;
using calibration_detail::fit_best_of;
using calibration_detail::fit_classes;
using calibration_detail::FreeParam;
using calibration_detail::Measurements;
using calibration_detail::OpClass;
using calibration_detail::OpRow;
using calibration_detail::Residuals;

namespace {

// ---- calibration on profiles -------------------------------------------------------------------

// The deployment (MODEL at TP) a profile calibration is for, and the measurements it fits on.
struct Deployment {
  const ProfileSet& p;
  const Measurements& m;
  const GpuSpec& gpu;
  const ModelSpec& model;
  int tp;
  bool have_allreduce;  // some all-reduce rows were measured with TP GPUs

  // A calibration is for one deployment: all-reduces are fitted on rows with this many GPUs
  // where measured; every other class on every row (a GPU's efficiencies are shared by all
  // shapes, so every model's profile teaches them).
  bool relevant(const OpRow& row) const {
    if (row.cls == OpClass::kAllReduce && have_allreduce) {
      return m.shapes[size_t(row.group)].tp == tp;
    }
    return true;
  }
};

bool allreduce_measured_at(const Measurements& m, int tp) {
  bool have_ar = false;
  for (const OpRow& row : m.rows) {
    have_ar |= row.cls == OpClass::kAllReduce && m.shapes[size_t(row.group)].tp == tp;
  }
  return have_ar;
}

// The composed-step error of PREDICTED against the MEASURED composition over GRID.
ErrorStats step_error(const RooflineCostModel& predicted, const TableCostModel& measured,
                      const std::vector<StepPoint>& grid) {
  ErrorStats e;
  for (const StepPoint& s : grid) {
    e.add(parts_of(predicted.cost(s.seqs)).total, parts_of(measured.cost(s.seqs)).total, s.label);
  }
  e.finish();
  return e;
}

// ---- what a held-out composed step is read from ------------------------------------------------

void sort_unique(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// The distinct measured x1 (x2 if SECOND) of D's relevant rows of class CLS, ascending.
std::vector<double> measured_values(const Deployment& d, OpClass cls, bool second) {
  std::vector<double> v;
  for (const OpRow& row : d.m.rows) {
    if (row.cls == cls && d.relevant(row)) v.push_back(second ? row.x2 : row.x1);
  }
  sort_unique(v);
  return v;
}

// Per shape group of M: whether it is an mlp group of MODEL's shape.
std::vector<bool> own_shape_groups(const Measurements& m, const ModelSpec& model) {
  const ProfileShape own{model.num_heads, model.num_kv_heads, model.hidden_size,
                         model.intermediate_size};
  std::vector<bool> own_shape(m.shapes.size(), false);
  for (const OpRow& row : m.rows) {
    if (row.cls != OpClass::kLinear) continue;
    const ModelSpec& s = m.shapes[size_t(row.group)].model;
    own_shape[size_t(row.group)] = s.hidden_size == own.n_embd && s.num_heads == own.n_head &&
                                   s.num_kv_heads == own.n_kv_head &&
                                   s.intermediate_size == own.n_expanded_embd;
  }
  return own_shape;
}

// The mlp group the table model reads the model's GEMMs from (the first of its shape at TP, as
// ProfileSet::find_mlp picks the first file), or -1.
int table_group(const Measurements& m, const std::vector<bool>& own_shape, int tp) {
  for (const OpRow& row : m.rows) {
    if (row.cls == OpClass::kLinear && own_shape[size_t(row.group)] &&
        m.shapes[size_t(row.group)].tp == tp) {
      return row.group;
    }
  }
  return -1;
}

// The distinct token counts of GROUP's GEMM rows, ascending.
std::vector<double> group_tokens(const Measurements& m, int group) {
  std::vector<double> tokens;
  for (const OpRow& row : m.rows) {
    if (row.cls == OpClass::kLinear && row.group == group) tokens.push_back(row.x1);
  }
  sort_unique(tokens);
  return tokens;
}

// The table model looks a decode step up at batch x this ratio of MODEL's KV width per GPU to
// the attention profile's.
double kv_ratio(const ProfileSet& p, const ModelSpec& model, int tp) {
  return p.attention ? double(model.kv_heads_per_gpu(tp)) * model.head_dim /
                           (std::max(1.0, double(p.attention->shape.n_kv_head) / p.attention->tp) *
                            (double(p.attention->shape.n_embd) / p.attention->shape.n_head))
                     : 1.0;
}

// The measured values the table model's lookups for a composed step choose from.
struct LookupValues {
  std::vector<double> chunks, prefill_ctx, batches, decode_ctx, sizes, cpu_batches;
  double kv_ratio = 1;
  int table_group = -1;            // the mlp group GEMM and element-wise times come from
  std::vector<double> own_tokens;  // its token counts
};

LookupValues lookup_values(const Deployment& d, const std::vector<bool>& own_shape) {
  LookupValues v;
  v.chunks = measured_values(d, OpClass::kPrefillAttention, false);
  v.prefill_ctx = measured_values(d, OpClass::kPrefillAttention, true);
  v.batches = measured_values(d, OpClass::kDecodeAttention, false);
  v.decode_ctx = measured_values(d, OpClass::kDecodeAttention, true);
  v.sizes = measured_values(d, OpClass::kAllReduce, false);
  v.cpu_batches = measured_values(d, OpClass::kCpu, false);
  v.kv_ratio = kv_ratio(d.p, d.model, d.tp);
  v.table_group = table_group(d.m, own_shape, d.tp);
  v.own_tokens = group_tokens(d.m, v.table_group);
  return v;
}

using Range = std::pair<double, double>;  // [first, second]

// The measured values a lookup at X depends on, with one more on each side: the bracketing
// pair inside the range; the first values below it; the last quarter (the end-slope fit of
// models/profiles.hpp's Curve) above it.
Range support(const std::vector<double>& v, double x) {
  if (v.empty()) return {INFINITY, -INFINITY};
  const size_t n = v.size();
  if (x > v.back()) {
    const size_t k = std::min<size_t>(n, std::clamp<size_t>(n / 4, 2, 16));
    return {v[n - k], v.back()};
  }
  const size_t hi = size_t(std::lower_bound(v.begin(), v.end(), x) - v.begin());
  const size_t lo = (hi < n && v[hi] == x) ? hi : (hi == 0 ? 0 : hi - 1);
  return {v[lo], v[std::min(n - 1, hi)]};
}

// The rows of class CLS (and of GROUP, unless -1) with x1 and x2 in range.
struct Window {
  OpClass cls;
  Range x1, x2;
  int group = -1;  // -1: any

  bool covers(const OpRow& row) const {
    return row.cls == cls && (group < 0 || row.group == group) && row.x1 >= x1.first &&
           row.x1 <= x1.second && row.x2 >= x2.first && row.x2 <= x2.second;
  }
};

// The decode attention lookups of DECODES sequences with CTX context tokens in all.
void add_decode_windows(const LookupValues& v, double decodes, double ctx,
                        std::vector<Window>& windows) {
  const double b = decodes * v.kv_ratio;
  const Range c = support(v.decode_ctx, ctx / decodes);
  windows.push_back({OpClass::kDecodeAttention, support(v.batches, b), c});
  // Beyond the largest batch the table also uses one sequence's time.
  if (!v.batches.empty() && b > v.batches.back()) {
    windows.push_back({OpClass::kDecodeAttention, support(v.batches, v.batches.front()), c});
  }
}

// Every lookup the table model makes for step S of MODEL.
void add_step_windows(const LookupValues& v, const ModelSpec& model, const StepPoint& s,
                      std::vector<Window>& windows) {
  double tokens = 0, decodes = 0, ctx = 0;
  for (const SeqShape& q : s.seqs) {
    tokens += q.new_tokens;
    if (q.prefill) {
      windows.push_back({OpClass::kPrefillAttention, support(v.chunks, q.new_tokens),
                         support(v.prefill_ctx, q.context_tokens)});
    } else {
      decodes += 1;
      ctx += q.context_tokens;
    }
  }
  if (decodes > 0) add_decode_windows(v, decodes, ctx, windows);
  const Range all{-INFINITY, INFINITY};
  windows.push_back({OpClass::kLinear, support(v.own_tokens, tokens), all, v.table_group});
  windows.push_back({OpClass::kElementwise, support(v.own_tokens, tokens), all, v.table_group});
  windows.push_back(
      {OpClass::kAllReduce, support(v.sizes, tokens * model.hidden_size * model.dtype_bytes), all});
  windows.push_back({OpClass::kCpu, support(v.cpu_batches, double(s.seqs.size())), all});
}

// ---- cross-validation over composed steps ------------------------------------------------------

// What every fold of a profile calibration's cross-validation reads.
struct CrossValidation {
  const Deployment& d;
  const TableCostModel& measured;
  const std::vector<StepPoint>& grid;
  const std::vector<bool>& own_shape;  // per shape group: an mlp group of the model's shape
  LookupValues lookups;
  int folds;
};

// Whether a fold may train on ROW: relevant, outside every window of its held-out steps, and with
// LEAVE_MODEL_OUT not a GEMM or element-wise row of the model's own shape.
bool trains_on(const CrossValidation& cv, const std::vector<Window>& windows, bool leave_model_out,
               const OpRow& row) {
  if (!cv.d.relevant(row)) return false;
  if (leave_model_out && (row.cls == OpClass::kLinear || row.cls == OpClass::kElementwise) &&
      cv.own_shape[size_t(row.group)]) {
    return false;
  }
  for (const Window& w : windows) {
    if (w.covers(row)) return false;
  }
  return true;
}

// Fold F: refits without what its held-out steps are read from, and adds their errors to E.
void cross_validate_fold(const CrossValidation& cv, int f, bool leave_model_out, ErrorStats& e) {
  std::vector<Window> windows;
  std::vector<const StepPoint*> held;
  for (size_t i = 0; i < cv.grid.size(); ++i) {
    if (int(i % size_t(cv.folds)) != f) continue;
    held.push_back(&cv.grid[i]);
    add_step_windows(cv.lookups, cv.d.model, cv.grid[i], windows);
  }
  auto keep = [&](const OpRow& row) { return trains_on(cv, windows, leave_model_out, row); };
  const RooflineParams fold_params =
      fit_classes(cv.d.m, cv.d.gpu, profile_fit_start(cv.d.p, cv.d.gpu), keep, nullptr);
  const RooflineCostModel fold_model(cv.d.gpu, cv.d.model, cv.d.tp, fold_params);
  for (const StepPoint* s : held) {
    e.add(parts_of(fold_model.cost(s->seqs)).total, parts_of(cv.measured.cost(s->seqs)).total,
          s->label);
  }
}

// Cross-validation over the composed steps of MODEL at TP, k folds. Each fold refits, from the
// uncalibrated start, without every measurement a held-out step's measured time is interpolated
// or extrapolated from, and the next one on each side (GEMMs and element-wise by tokens,
// attention by chunk, batch and context, all-reduce by bytes, CPU by batch size), then predicts
// the held-out steps. LEAVE_MODEL_OUT also leaves out every GEMM and element-wise measurement of
// this model's shape, at any TP degree: how well the fit carries over to a model it has never
// seen.
ErrorStats cross_validate(const CrossValidation& cv, bool leave_model_out) {
  ErrorStats e;
  for (int f = 0; f < cv.folds; ++f)
    cross_validate_fold(cv, f, leave_model_out, e);
  e.finish();
  return e;
}

// ---- calibration on a step log -----------------------------------------------------------------

// A step log to fit every parameter on jointly, and the deployment it was measured on.
struct StepFit {
  const std::vector<StepLogRow>& log;
  std::vector<std::vector<SeqShape>> shapes;  // per step
  const GpuSpec& gpu;
  const ModelSpec& model;
  int tp;
  std::vector<FreeParam> free;
};

// Every op class's parameters; all-reduce's only under TP. (Not the GEMMs' per-layer latency: on
// one model's steps it is a constant per step, which the CPU's per-step term already is.)
std::vector<FreeParam> step_log_params(int tp) {
  std::vector<FreeParam> all;
  for (const ClassSpec& spec : class_specs()) {
    for (const FreeParam& f : spec.free) {
      if (tp > 1 || spec.classes.front() != OpClass::kAllReduce) all.push_back(f);
    }
  }
  return all;
}

// The fit on the steps IDX of S, from the uncalibrated start at each tile size.
RooflineParams fit_steps(const StepFit& s, const std::vector<size_t>& idx) {
  const Residuals residuals = [&](const RooflineParams& q, Eigen::VectorXd& f) {
    const RooflineCostModel m(s.gpu, s.model, s.tp, q);
    for (size_t i = 0; i < idx.size(); ++i) {
      f[Eigen::Index(i)] = m.cost(s.shapes[idx[i]]).seconds * 1e3 / s.log[idx[i]].measured_ms - 1;
    }
  };
  auto candidate = [&s](double tile, RooflineParams& p) {
    p.hw.linear_tile_tokens = tile;
    p.hw.knee_sharpness = 2;
    return s.free;
  };
  return fit_best_of(RooflineParams{}, {0.0, 64.0, 128.0}, candidate, idx.size(), residuals);
}

// Enough steps that every training fold still has twice as many steps as parameters.
void check_enough_steps(size_t steps, size_t params, int folds) {
  const size_t min_rows = (2 * params * size_t(folds) + size_t(folds) - 2) / size_t(folds - 1);
  if (steps < min_rows) {
    throw Error(field::kStepLog,
                std::to_string(steps) + " steps are too few to fit " + std::to_string(params) +
                    " parameters with " + std::to_string(folds) +
                    "-fold cross-validation: need at least " + std::to_string(min_rows));
  }
}

// The error of P on every step of S.
ErrorStats fitted_step_error(const StepFit& s, const RooflineParams& p) {
  const RooflineCostModel final_model(s.gpu, s.model, s.tp, p);
  ErrorStats e;
  for (size_t i = 0; i < s.log.size(); ++i) {
    const double pred = final_model.cost(s.shapes[i]).seconds * 1e3;
    e.add(pred, s.log[i].measured_ms, "step " + std::to_string(i + 1));
  }
  e.finish();
  return e;
}

// K folds over the steps: fold F holds out every step I with I % FOLDS == F.
ErrorStats cross_validate_steps(const StepFit& s, int folds) {
  ErrorStats cv;
  for (int f = 0; f < folds; ++f) {
    std::vector<size_t> train, test;
    for (size_t i = 0; i < s.log.size(); ++i)
      (int(i % size_t(folds)) == f ? test : train).push_back(i);
    const RooflineCostModel m(s.gpu, s.model, s.tp, fit_steps(s, train));
    for (size_t i : test) {
      cv.add(m.cost(s.shapes[i]).seconds * 1e3, s.log[i].measured_ms,
             "step " + std::to_string(i + 1));
    }
  }
  cv.finish();
  return cv;
}

}  // namespace

CalibrationResult calibrate_from_profiles(const ProfileSet& p, const GpuSpec& gpu,
                                          const ModelSpec& model, int tp, int folds) {
  const Measurements m = collect(p);
  if (m.rows.empty()) throw Error(p.dir, 0, "", "no measurements to fit");
  const Deployment d{p, m, gpu, model, tp, allreduce_measured_at(m, tp)};
  CalibrationResult r;
  r.folds = folds;
  r.source = "Vidur profiles in " + p.dir + " (" + model.name + ", TP" + std::to_string(tp) + ")";
  auto relevant = [&d](const OpRow& row) { return d.relevant(row); };
  r.params = fit_classes(m, gpu, profile_fit_start(p, gpu), relevant, &r.classes);
  if (!p.attention) {
    // Composed steps need measured attention: the fit stands on its op classes alone.
    r.note = "no attention profile: attention keeps the " + std::string(arch_name(gpu.arch)) +
             " fit, and composed steps cannot be measured (no cross-validation)";
    return r;
  }
  const TableCostModel measured(p, gpu, model, tp);
  const std::vector<StepPoint> grid = fidelity_grid();
  r.fitted = step_error(RooflineCostModel(gpu, model, tp, r.params), measured, grid);
  const std::vector<bool> own_shape = own_shape_groups(m, model);
  const CrossValidation cv{d, measured, grid, own_shape, lookup_values(d, own_shape), folds};
  r.cv = cross_validate(cv, false);
  r.cv_unseen_model = cross_validate(cv, true);
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
  StepFit s{log, {}, gpu, model, tp, step_log_params(tp)};
  for (const StepLogRow& row : log)
    s.shapes.push_back(step_shape(row));
  check_enough_steps(log.size(), s.free.size(), folds);
  std::vector<size_t> every(log.size());
  for (size_t i = 0; i < log.size(); ++i)
    every[i] = i;
  CalibrationResult r;
  r.folds = folds;
  r.source = "step log";
  r.params = fit_steps(s, every);
  r.fitted = fitted_step_error(s, r.params);
  r.classes.push_back({"steps", log.size(), r.fitted.mape, r.fitted.max_ape});
  r.cv = cross_validate_steps(s, folds);
  return r;
}

}  // namespace servesim
