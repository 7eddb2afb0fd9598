// Calibration files (INI, one key per parameter) and the terminal summary of a fit.
#include <cmath>
#include <cstdio>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "models/calibration.hpp"
#include "util/error.hpp"
#include "util/ini.hpp"
#include "util/lookup.hpp"
#include "util/text_input.hpp"

namespace servesim {

namespace {

// Older names of engine keys, from before the engine had its own parameters.
constexpr std::pair<const char*, const char*> kLegacyKeys[] = {
    {"cpu_overhead_s", "v0_cpu_s"}, {"cpu_overhead_s_per_seq", "v0_cpu_s_per_seq"}};

bool is_hardware_key(const std::string& key) {
  for (const auto& f : hardware_param_fields()) {
    if (key == f.name) return true;
  }
  return false;
}

// Checks V against KEY's range in PATH.
void check_range(const std::string& path, const std::string& key, double v, double min,
                 double max) {
  const bool knee_gap = key == "knee_sharpness" && v > 0 && v < 1;
  // A GEMM tile is 0 (no padding) or at least one token: a subnormal one made every step
  // infinite.
  const bool tile_gap = key == "linear_tile_tokens" && v > 0 && v < 1;
  if (!(v >= min && v <= max) || knee_gap || tile_gap) {
    char range[128];
    std::snprintf(range, sizeof range, "%g is out of range [%g, %g]%s", v, min, max,
                  knee_gap   ? " (0, or at least 1)"
                  : tile_gap ? " (0, or at least 1 token)"
                             : "");
    throw Error(path, ini_line_of(path, key), key, range);
  }
}

}  // namespace

bool CalibrationFile::has_hardware() const {
  for (const auto& [key, v] : values) {
    if (is_hardware_key(key)) return true;
  }
  return false;
}

bool CalibrationFile::applies_to(const GpuSpec& g) const {
  if (!has_hardware()) return true;
  if (!gpu.empty()) return lowercase(gpu) == g.name;
  return arch == arch_name(g.arch);
}

std::string CalibrationFile::describe() const {
  return path + " (" + (source.empty() ? "calibration" : source) + ")";
}

CalibrationFile read_calibration(const std::string& path) {
  CalibrationFile c;
  c.path = path;
  std::string arch;
  struct Slot {
    std::string key;
    double value = NAN, min = 0, max = 0;
  };
  std::vector<Slot> slots;
  for (const auto& f : hardware_param_fields())
    slots.push_back({f.name, NAN, f.min, f.max});
  for (const EngineParamField& f : engine_param_fields())
    slots.push_back({f.name, NAN, f.min, f.max});
  for (const auto& [legacy, key] : kLegacyKeys)
    slots.push_back({legacy, NAN, 0, 1});
  slots.push_back({"frontend_latency_s", NAN, 0, 10});
  std::vector<IniField> fields = {
      {"gpu", &c.gpu}, {"arch", &arch}, {"model", &c.model}, {"source", &c.source}};
  for (Slot& s : slots)
    fields.push_back({s.key, &s.value});
  const std::set<std::string> given = load_ini_fields(path, fields);
  if (!arch.empty()) {
    try {
      c.arch = arch_name(parse_arch(arch));
    } catch (const Error& e) {
      throw Error(path, ini_line_of(path, "arch"), "arch", e.reason());
    }
  }
  for (const Slot& s : slots) {
    if (!given.count(s.key)) continue;
    check_range(path, s.key, s.value, s.min, s.max);
    std::string key = s.key;
    for (const auto& [legacy, now] : kLegacyKeys) {
      if (key == legacy) key = now;
    }
    if (key == "frontend_latency_s") {
      c.frontend_latency_s = s.value;
    } else {
      c.values.emplace_back(key, s.value);
    }
  }
  if (c.has_hardware() && c.gpu.empty() && c.arch.empty()) {
    throw Error(path, 0, "gpu",
                "hardware parameters belong to one GPU or architecture: give gpu = NAME or "
                "arch = ampere|ada|hopper|blackwell|cdna3");
  }
  return c;
}

void apply_calibration(const CalibrationFile& c, HardwareParams& hw, EngineParams& engine) {
  for (const auto& [key, v] : c.values) {
    for (const auto& f : hardware_param_fields()) {
      if (key == f.name) hw.*f.member = v;
    }
    for (const EngineParamField& f : engine_param_fields()) {
      if (key == f.name && f.engine == engine.engine) engine.*f.member = v;
    }
  }
}

void write_calibration(const std::string& path, const GpuSpec& gpu, const ModelSpec& model,
                       const CalibrationResult& r) {
  std::ostringstream f;
  char buf[160];
  f << "# servesim calibration of the roofline cost model: `run --calibration " << path << "`\n";
  std::snprintf(buf, sizeof buf,
                "# cross-validated composed-step MAPE %.2f%%, max %.2f%% (%d-fold)\n",
                r.cv.mape * 100, r.cv.max_ape * 100, r.folds);
  f << buf;
  f << "gpu = " << gpu.name << "\narch = " << arch_name(gpu.arch) << "\nmodel = " << model.name
    << "\nsource = " << r.source << "\n";
  for (const auto& p : hardware_param_fields()) {
    std::snprintf(buf, sizeof buf, "%s = %.17g\n", p.name, r.params.hw.*p.member);
    f << buf;
  }
  for (const EngineParamField& p : engine_param_fields()) {
    if (p.engine != Engine::kV0 ||
        (p.member != &EngineParams::cpu_s && p.member != &EngineParams::cpu_s_per_seq)) {
      continue;
    }
    std::snprintf(buf, sizeof buf, "%s = %.17g\n", p.name.c_str(), r.params.engine.*p.member);
    f << buf;
  }
  write_text_file(path, f.str());
}

void print_calibration(std::ostream& out, const CalibrationResult& r) {
  char buf[200];
  out << "fitted on " << r.source << "\n";
  for (const auto& f : hardware_param_fields()) {
    std::snprintf(buf, sizeof buf, "  %-32s %.6g\n", f.name, r.params.hw.*f.member);
    out << buf;
  }
  std::snprintf(buf, sizeof buf, "  %-32s %.6g\n  %-32s %.6g\n", "v0_cpu_s", r.params.engine.cpu_s,
                "v0_cpu_s_per_seq", r.params.engine.cpu_s_per_seq);
  out << buf;
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
  if (!r.note.empty()) out << "note: " << r.note << "\n";
  out << "composed steps, " << r.folds << "-fold cross-validated: " << stats(r.cv) << "\n";
  if (r.cv_unseen_model.n > 0) {
    out << "  ... and with this model's own GEMM and element-wise profile left out too: "
        << stats(r.cv_unseen_model) << "\n";
  }
  out << "  ... with the final fit: " << stats(r.fitted) << "\n";
}

}  // namespace servesim
