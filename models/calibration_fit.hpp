// The least-squares machinery of calibration (internal to models/calibration*.cpp; the API is
// models/calibration.hpp). fit() runs Eigen's Levenberg-Marquardt over a subset of the roofline's
// parameters, each moved in a transformed space that keeps it physical (FreeParam). Vidur
// profiles become op-level measurements (collect()), and fit_classes() fits each op class's
// parameters on its own rows, the discrete parameters (tile size, all-reduce protocol switch) by
// the best of a few continuous fits (fit_best_of()).
#pragma once

#include <Eigen/Core>
#include <functional>
#include <initializer_list>
#include <vector>

#include "models/calibration.hpp"

namespace servesim::calibration_detail {

// ---- the fit -------------------------------------------------------------------------------

// How a parameter is kept physical: efficiencies through a logistic (0, 1), latencies, floors and
// overheads through exp (> 0), the knee sharpness as 1 + exp.
// kHbm: a share of the HBM bandwidth, in (0, kMaxHbmEfficiency): no kernel sustains more than
// the best streaming kernels measure.
enum class Kind { kEfficiency, kHbm, kPositive, kSharpness };

// The most of the datasheet HBM bandwidth a kernel sustains: BabelStream's triad reaches 83% on
// an A100-80GB and 89% on an H100 SXM, its dot 86% and 95%, a tuned read kernel 88% on the A100
// (public measurements; docs/design/cost-model.md).
inline constexpr double kMaxHbmEfficiency = 0.9;

// One fitted parameter: a hardware or an engine field of RooflineParams.
struct FreeParam {
  FreeParam(double HardwareParams::*m, Kind k) : hw(m), kind(k) {}
  FreeParam(double EngineParams::*m, Kind k) : engine(m), kind(k) {}
  double& of(RooflineParams& p) const { return hw != nullptr ? p.hw.*hw : p.engine.*engine; }
  double of(const RooflineParams& p) const { return hw != nullptr ? p.hw.*hw : p.engine.*engine; }
  double HardwareParams::*hw = nullptr;
  double EngineParams::*engine = nullptr;
  Kind kind;
};

// Fills F (sized to the number of residuals) with the residuals of the given parameters.
using Residuals = std::function<void(const RooflineParams&, Eigen::VectorXd&)>;

// Minimises the sum of squared RESIDUALS(params) over FREE (a subset of PARAMS), in place. With
// fewer residuals than free parameters, PARAMS stays as it is.
// Throws Error when a fitted parameter is not finite.
void fit(RooflineParams& params, const std::vector<FreeParam>& free, size_t n_residuals,
         const Residuals& residuals);

// One candidate of a discrete parameter: sets VALUE in P (and whatever the fit starts from) and
// returns the parameters to fit around it.
using Candidate = std::function<std::vector<FreeParam>(double value, RooflineParams& p)>;

// Fits START once per value in VALUES, each with its own continuous fit, and returns the fit with
// the smallest sum of squared RESIDUALS (over N_RESIDUALS); START if none is below infinity.
RooflineParams fit_best_of(const RooflineParams& start, std::initializer_list<double> values,
                           const Candidate& candidate, size_t n_residuals,
                           const Residuals& residuals);

// ---- op-level measurements from profiles ---------------------------------------------------

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

struct Measurements {
  std::vector<Shape> shapes;
  std::vector<OpRow> rows;
};

// Every measurement of P: one GEMM and one element-wise row (the sums of their ops) per mlp.csv
// token count and TP degree, the attention rows, the all-reduce rows, the CPU overhead rows.
Measurements collect(const ProfileSet& p);

// ---- fits per op class ---------------------------------------------------------------------

// An op class as fitted: the measurements it is fitted on and the parameters they determine.
struct ClassSpec {
  const char* name;
  std::vector<OpClass> classes;
  std::vector<FreeParam> free;
};

// GEMMs, element-wise, attention, all-reduce, CPU overhead: the order they are fitted in.
const std::vector<ClassSpec>& class_specs();

// Which measurements a fit may use.
using RowFilter = std::function<bool(const OpRow&)>;

// Fits every op class on the rows of M that KEEP accepts, starting from START. REPORT, if not
// null, receives each class's in-sample error.
RooflineParams fit_classes(const Measurements& m, const GpuSpec& gpu, const RooflineParams& start,
                           const RowFilter& keep, std::vector<ClassFit>* report);

}  // namespace servesim::calibration_detail
