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

#include <optional>
#include <string>
#include <utility>
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
  std::string note;  // what the fit could not do ("" when nothing)
};

// Fits every op class on every measurement in P (all shapes, all TP degrees): the GPU's
// parameters, not one deployment's. This is how the shipped ampere and hopper fits were made.
// What P does not measure (attention without an attention.csv, vLLM's custom all-reduce, the MoE
// kernels) keeps the GPU architecture's fit (profile_fit_start).
RooflineParams fit_profiles(const ProfileSet& p, const GpuSpec& gpu);
RooflineParams profile_fit_start(const ProfileSet& p, const GpuSpec& gpu);

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

// A calibration file (INI): parameters that replace the defaults, and where they apply. Every key
// is optional; those left out keep their defaults.
//  - hardware keys (hardware_param_fields()) belong to one GPU (`gpu = NAME`) or one
//    architecture (`arch = hopper`): efficiencies differ between GPUs, so a file with hardware
//    keys and neither is refused;
//  - engine keys (engine_param_fields(): v0_cpu_s, v1_floor_fraction, ...) and
//    frontend_latency_s (the API server's latency, seconds) apply on any GPU. The older names
//    cpu_overhead_s and cpu_overhead_s_per_seq are v0_cpu_s and v0_cpu_s_per_seq.
struct CalibrationFile {
  std::string path, source;      // source: what it was fitted on ("" when not said)
  std::string gpu, arch, model;  // scope and provenance ("" when not given)
  std::vector<std::pair<std::string, double>> values;  // parameter keys given, in file order
  std::optional<double> frontend_latency_s;
  bool has_hardware() const;
  // Whether its hardware keys are for GPU (always, without hardware keys).
  bool applies_to(const GpuSpec& gpu) const;
  // "PATH (source)".
  std::string describe() const;
};
// Reads PATH. Throws Error (file, line, key) on an unknown key, a value outside its physical
// range, or hardware keys without a scope.
CalibrationFile read_calibration(const std::string& path);
// Sets the keys of C that belong to HW, and those of ENGINE's engine, to C's values.
void apply_calibration(const CalibrationFile& c, HardwareParams& hw, EngineParams& engine);

// Writes a fit: gpu, arch, model, source, every hardware key and the V0 engine's CPU keys.
void write_calibration(const std::string& path, const GpuSpec& gpu, const ModelSpec& model,
                       const CalibrationResult& r);

void print_calibration(std::ostream& out, const CalibrationResult& r);

}  // namespace servesim
