// Calibration files (INI, one key per roofline parameter) and the terminal summary of a fit.
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "models/calibration.hpp"
#include "util/error.hpp"
#include "util/ini.hpp"
#include "util/text_input.hpp"

namespace servesim {

void write_calibration(const std::string& path, const GpuSpec& gpu, const ModelSpec& model,
                       const CalibrationResult& r) {
  std::ostringstream f;
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
  write_text_file(path, f.str());
}

RooflineParams read_calibration(const std::string& path, std::string* source,
                                std::string* gpu_name) {
  RooflineParams p;
  std::string gpu, model, src;
  std::vector<IniField> fields = {{"gpu", &gpu}, {"model", &model}, {"source", &src}};
  for (const RooflineParamField& f : roofline_param_fields())
    fields.push_back({f.name, &(p.*f.member), !f.optional});
  load_ini_fields(path, fields);
  for (const RooflineParamField& f : roofline_param_fields()) {
    const double v = p.*f.member;
    const std::string name = f.name;
    const bool knee_gap = name == "knee_sharpness" && v > 0 && v < 1;
    // A GEMM tile is 0 (no padding) or at least one token: a subnormal one made every step
    // infinite.
    const bool tile_gap = name == "linear_tile_tokens" && v > 0 && v < 1;
    if (!(v >= f.min && v <= f.max) || knee_gap || tile_gap) {
      char range[128];
      std::snprintf(range, sizeof range, "%g is out of range [%g, %g]%s", v, f.min, f.max,
                    knee_gap   ? " (0, or at least 1)"
                    : tile_gap ? " (0, or at least 1 token)"
                               : "");
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
