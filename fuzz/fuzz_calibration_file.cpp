// Fuzz target: read_calibration (models/calibration.hpp), a file of optional, typed keys with
// physical ranges and a scope. A file it accepts, overlaid on any architecture's and engine's
// defaults, leaves every parameter inside its physical range.
#include "fuzz_common.hpp"
#include "models/calibration.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  const std::string path = fuzz::input_file(data, size, ".ini");
  fuzz::expect_errors([&] {
    const CalibrationFile c = read_calibration(path);
    fuzz::fuzz_assert(!c.has_hardware() || !c.gpu.empty() || !c.arch.empty(),
                      "hardware keys without a scope");
    for (const GpuArch arch : {GpuArch::kAmpere, GpuArch::kHopper}) {
      for (const Engine e : {Engine::kV0, Engine::kV1}) {
        HardwareParams hw = hardware_params(arch);
        EngineParams engine = engine_params(e);
        apply_calibration(c, hw, engine);
        for (const auto& f : hardware_param_fields()) {
          fuzz::fuzz_assert(hw.*f.member >= f.min && hw.*f.member <= f.max, f.name);
        }
        for (const EngineParamField& f : engine_param_fields()) {
          fuzz::fuzz_assert(engine.*f.member >= f.min && engine.*f.member <= f.max, f.name.c_str());
        }
      }
    }
  });
  return 0;
}
