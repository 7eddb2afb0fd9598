// `servesim calibrate` and `servesim fidelity`: fit the roofline to measurements, and say how
// close a cost model comes to measured step times.
#include <fstream>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>

#include "analysis/run_spec.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "models/calibration.hpp"
#include "models/fidelity.hpp"
#include "models/gpu.hpp"
#include "models/model.hpp"
#include "models/table_model.hpp"
#include "util/error.hpp"

namespace servesim::cli {

namespace {

struct Target {
  std::string gpu, gpu_file, model, model_file, profiles, config;
  int tp = 1;
};

po::options_description target_options(Target& t) {
  po::options_description d("what to calibrate or check");
  d.add_options()("gpu", po::value(&t.gpu)->default_value("a100-80g"), "GPU name")(
      "gpu-file", po::value(&t.gpu_file), "INI file describing a GPU")(
      "model", po::value(&t.model)->default_value("llama-2-7b"), "model name")(
      "model-file", po::value(&t.model_file), "INI file describing a model")(
      "tp", po::value(&t.tp)->default_value(1), "GPUs per replica (tensor parallelism)")(
      "profiles", po::value(&t.profiles),
      "directory of Vidur profiles (mlp.csv, attention.csv, "
      "all_reduce.csv, cpu_overheads.csv)")(
      "config", po::value(&t.config), "read any of these flags from an INI file")("help,h",
                                                                                  "show this help");
  return d;
}

// Refuses --model with --model-file (or --gpu with --gpu-file): they name two things. Checks the
// command's files before any work: its OUTPUT (flag, path) writable and none of the inputs (the
// target's files and INPUT).
void check_target(const Target& t, const po::variables_map& vm,
                  const std::pair<std::string, std::string>& input,
                  const std::pair<std::string, std::string>& output) {
  if (!t.model_file.empty() && !vm["model"].defaulted()) {
    throw Error("model-file", "and --model both name the model: give one");
  }
  if (!t.gpu_file.empty() && !vm["gpu"].defaulted()) {
    throw Error("gpu-file", "and --gpu both name the GPU: give one");
  }
  PathPlan paths;
  paths.input("gpu-file", t.gpu_file);
  paths.input("model-file", t.model_file);
  paths.input("profiles", t.profiles);
  paths.input("config", t.config);
  paths.input(input.first, input.second);
  paths.output(output.first, output.second);
  paths.check();
}

GpuSpec target_gpu(const Target& t) {
  return Inputs().gpu(t.gpu, t.gpu_file);
}
ModelSpec target_model(const Target& t) {
  ModelSpec m = Inputs().model(t.model, t.model_file);
  if (t.tp < 1 || m.num_heads % t.tp != 0) {
    throw Error("tp", "must divide " + m.name + "'s attention heads");
  }
  return m;
}

}  // namespace

int cmd_calibrate(int argc, const char* const* argv, std::ostream& out) {
  Target t;
  std::string step_log, output;
  int folds = 5;
  po::options_description desc = target_options(t);
  desc.add_options()("step-log", po::value(&step_log),
                     "CSV of measured steps: prefill_tokens, decode_tokens, "
                     "prefill_context_tokens, decode_context_tokens, [batch_size,] measured_ms")(
      "folds", po::value(&folds)->default_value(5), "folds of cross-validation")(
      "output,o", po::value(&output)->required(), "calibration file to write (INI)");
  po::variables_map vm;
  if (!parse_command(argc, argv, desc, vm, out,
                     "servesim calibrate --gpu G --model M (--profiles DIR | --step-log FILE) "
                     "-o CAL.ini")) {
    return 0;
  }
  if (t.profiles.empty() == step_log.empty()) {
    throw Error("profiles", "give exactly one of --profiles DIR and --step-log FILE");
  }
  if (folds < 2 || folds > 50) throw Error("folds", "must be in [2, 50]");
  check_target(t, vm, {"step-log", step_log}, {"output", output});
  const GpuSpec gpu = target_gpu(t);
  const ModelSpec model = target_model(t);
  const CalibrationResult r =
      t.profiles.empty()
          ? calibrate_from_step_log(read_step_log(step_log), gpu, model, t.tp, folds)
          : calibrate_from_profiles(load_profiles(t.profiles, gpu.name), gpu, model, t.tp, folds);
  print_calibration(out, r);
  write_calibration(output, gpu, model, r);
  out << "wrote " << output << " (use it with --calibration " << output << ")\n";
  return 0;
}

int cmd_fidelity(int argc, const char* const* argv, std::ostream& out) {
  Target t;
  std::string calibration, csv;
  size_t worst = 5;
  po::options_description desc = target_options(t);
  desc.add_options()("calibration", po::value(&calibration),
                     "also check the roofline with these parameters")(
      "csv", po::value(&csv), "write every step, measured and predicted per op class, to FILE")(
      "worst", po::value(&worst)->default_value(5), "how many worst steps to list");
  po::variables_map vm;
  if (!parse_command(
          argc, argv, desc, vm, out,
          "servesim fidelity --gpu G --model M --profiles DIR [--calibration CAL.ini]")) {
    return 0;
  }
  if (t.profiles.empty()) throw Error("profiles", "fidelity needs --profiles DIR");
  check_target(t, vm, {"calibration", calibration}, {"csv", csv});
  const GpuSpec gpu = target_gpu(t);
  const ModelSpec model = target_model(t);
  const ProfileSet profiles = load_profiles(t.profiles, gpu.name);
  const TableCostModel measured(profiles, gpu, model, t.tp);
  const std::vector<StepPoint> grid = fidelity_grid();
  // The profiles time eager kernels and V0's CPU work: the defaults are compared as such.
  RooflineParams defaults{hardware_params(gpu.arch), engine_params(Engine::kV0)};
  defaults.engine.floor_fraction = 1;
  std::vector<std::pair<std::string, RooflineParams>> predictors = {
      {"roofline, uncalibrated (hand-read defaults)", RooflineParams{}},
      {"roofline, " + gpu.name + " defaults (" + hardware_source(gpu) + ")", defaults}};
  if (!calibration.empty()) {
    const CalibrationFile cal = read_calibration(calibration);
    if (!cal.applies_to(gpu)) {
      throw Error("calibration", calibration + " was fitted for " +
                                     (cal.gpu.empty() ? cal.arch : cal.gpu) + ", not " + gpu.name);
    }
    RooflineParams p = defaults;
    apply_calibration(cal, p.hw, p.engine);
    predictors.emplace_back("roofline, calibrated: " + cal.describe(), p);
  }
  out << "servesim fidelity: " << model.name << " on " << gpu.name << " x" << t.tp
      << "; measured = Vidur's composition of the profiled op medians in " << t.profiles
      << " (LM head excluded on both sides)\n\n";
  std::ostringstream table;
  bool header = true;
  for (const auto& [name, params] : predictors) {
    const RooflineCostModel roofline(gpu, model, t.tp, params);
    const FidelityReport r = compare_to_profiles(measured, roofline, name, grid);
    print_fidelity(out, r, worst);
    out << "\n";
    if (!csv.empty()) {
      std::ostringstream one;
      write_fidelity_csv(one, r);
      std::string text = one.str();
      if (!header) text.erase(0, text.find('\n') + 1);  // one header for the whole file
      table << text;
      header = false;
    }
  }
  if (!csv.empty()) write_text_file(csv, table.str());
  return 0;
}

}  // namespace servesim::cli
