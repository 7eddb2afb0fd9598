// Calibration: the roofline's free parameters fitted to measurements by least squares on
// relative error, with Eigen's Levenberg-Marquardt. Parameters are fitted in a transformed space
// that keeps them physical: efficiencies through a logistic (0, 1), latencies, floors and
// overheads through exp (> 0), the knee sharpness as 1 + exp. The tile size is chosen from
// {0, 64, 128} by the best fit.
//  - From Vidur profiles, each op class is fitted on its own measurements (they are separable):
//    GEMMs (every mlp.csv in the set: all models, all TP degrees), element-wise ops, attention
//    (prefill and decode rows), all-reduce (single-node rows), CPU overhead.
//  - From a step log (whole measured steps), every parameter is fitted jointly.
// Cross-validation is k-fold over composed steps: for profiles, each fold leaves out the
// measurements the held-out steps are interpolated from, refits, and predicts those steps.
#pragma once

#include <string>
#include <vector>

#include "models/fidelity.hpp"
#include "models/profiles.hpp"
#include "models/roofline.hpp"

namespace servesim {

struct ClassFit {
  std::string name;  // op class
  size_t points = 0;
  double mape = 0, max_ape = 0;  // in-sample, on the measurements themselves
};

struct CalibrationResult {
  RooflineParams params;
  std::string source;  // what was fitted on
  std::vector<ClassFit> classes;
  ErrorStats cv;               // k-fold cross-validated composed-step error
  ErrorStats cv_unseen_model;  // the same, with the model's own GEMM and element-wise rows out
  ErrorStats fitted;           // the same steps with the final parameters
  int folds = 0;
};

// Fits every op class on every measurement in P (all shapes, all TP degrees): the GPU's
// parameters, not one deployment's. This is how the shipped a100-80g defaults were made.
RooflineParams fit_profiles(const ProfileSet& p, const GpuSpec& gpu);

// Fits on the profiles in P for MODEL at TP (all-reduce rows for TP GPUs where measured);
// cross-validation runs over the composed steps of MODEL at TP.
CalibrationResult calibrate_from_profiles(const ProfileSet& p, const GpuSpec& gpu,
                                          const ModelSpec& model, int tp, int folds = 5);

// Fits on a measured step log for MODEL at TP on GPU.
CalibrationResult calibrate_from_step_log(const std::vector<StepLogRow>& log, const GpuSpec& gpu,
                                          const ModelSpec& model, int tp, int folds = 5);

// The steps of a step log as batch shapes: decodes of equal context, and the prefill tokens
// split evenly over the prefill sequences (batch_size - decode_tokens, at least 1).
std::vector<SeqShape> step_shape(const StepLogRow& r);

// INI files: one key per parameter (roofline_param_fields()), plus gpu, model, source.
void write_calibration(const std::string& path, const GpuSpec& gpu, const ModelSpec& model,
                       const CalibrationResult& r);
// Reads a calibration file; SOURCE receives its provenance, GPU the GPU it was fitted for.
// Throws Error (file, line, key) on a missing key or a value outside its physical range.
RooflineParams read_calibration(const std::string& path, std::string* source = nullptr,
                                std::string* gpu = nullptr);

void print_calibration(std::ostream& out, const CalibrationResult& r);

}  // namespace servesim
