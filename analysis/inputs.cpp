// Inputs (run_spec.hpp): files and catalogue entries, loaded once per command and shared.
#include "analysis/run_spec.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include "analysis/workload_report.hpp"
#include "models/calibration.hpp"
#include "scheduler/policy.hpp"
#include "traces/datasets.hpp"
#include "traces/rate_pattern.hpp"
#include "traces/servegen.hpp"
#include "util/error.hpp"
#include "util/format.hpp"
#include "util/text_input.hpp"

namespace servesim {

using nlohmann::ordered_json;

template <class T, class Load>
std::shared_ptr<const T> Inputs::cached(std::map<std::string, std::shared_ptr<const T>>& cache,
                                        const std::string& key, Load load) {
  // Loading under the lock: a file is read once however many threads ask for it, and HDF5 (the
  // servesim trace format) is not thread-safe. Simulations never hold it.
  const std::lock_guard<std::mutex> lock(mutex_);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, std::make_shared<const T>(load())).first;
  return it->second;
}

std::shared_ptr<const Trace> Inputs::trace(const std::string& path, const ImportOptions& options) {
  return cached(traces_, path + "\n" + options.describe(),
                [&] { return import_trace(path, options); });
}

std::shared_ptr<const ProfileSet> Inputs::profiles(const std::string& dir, const std::string& gpu) {
  return cached(profiles_, dir + '\n' + gpu, [&] { return load_profiles(dir, gpu); });
}

std::shared_ptr<const CalibrationFile> Inputs::calibration(const std::string& path) {
  return cached(calibrations_, path, [&] { return read_calibration(path); });
}

GpuSpec Inputs::gpu(const std::string& name, const std::string& file) {
  if (file.empty()) return find_gpu(name);
  return *cached(gpus_, file, [&] { return load_gpu_file(file); });
}

ModelSpec Inputs::model(const std::string& name, const std::string& file) {
  if (file.empty()) return find_model(name);
  return *cached(models_, file, [&] { return load_model_file(file); });
}

}  // namespace servesim
