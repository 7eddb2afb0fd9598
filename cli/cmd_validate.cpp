// `servesim validate FILE.csv`: replay measured vLLM runs and compare servesim's predictions.
#include <algorithm>
#include <ostream>

#include "analysis/validate.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "util/error.hpp"
#include "util/output_file.hpp"
#include "util/parallel.hpp"

namespace servesim::cli {

int cmd_validate(int argc, const char* const* argv, std::ostream& out) {
  std::string file, csv, interval = "0.9";
  ValidateOptions o;
  RunSpec& b = o.base;
  po::options_description desc("servesim validate");
  desc.add_options()("file", po::value(&file)->required(),
                     "ground-truth CSV (also the positional argument), in the format of "
                     "../shared/groundtruth/vllm-0.15.1-h100.csv")(
      "experiment", po::value(&o.filter), "only experiments whose name contains this")(
      "cost-model", po::value(&b.cost_model)->default_value(b.cost_model), "roofline | table")(
      "calibration", po::value(&b.calibration),
      "calibration INI files, comma-separated: each applies to the rows of the GPU or "
      "architecture its hardware keys are for (engine and front-end keys to every row)")(
      "model-dir", po::value(&o.model_dir),
      "a folder of model INI files (--model-file's keys, with hf_id): a row's model is the "
      "file whose hf_id it names, else the catalogue's")(
      "use-measured-kv", po::bool_switch(&o.use_measured_kv),
      "replay with the KV blocks vLLM logged (vllm_kv_blocks) where a row has them, instead of "
      "the memory plan's")(
      "kv-offloading-size", po::value(&o.kv_offloading_size_gib)->default_value(8),
      "GiB of CPU KV tier (vLLM's OffloadingConnector) for rows with cpu_kv_offload on and no "
      "kv_offloading_size_gib column")("profiles", po::value(&b.profiles),
                                       "Vidur profiles for --cost-model table")(
      "seed", po::value(&b.seed.value())->default_value(*b.seed),
      "seed of the generated workloads")("jobs,j",
                                         po::value(&o.jobs)->default_value(hardware_threads()),
                                         "experiments simulated at once")(
      "csv", po::value(&csv), "write every measured and predicted figure to this CSV")(
      "interval", po::value(&interval)->default_value(interval),
      "prediction intervals' level (none: no intervals): how many measured figures fall inside "
      "them")("config", po::value<std::string>(), "read any of these flags from an INI file")(
      "help,h", "show this help");
  po::positional_options_description pos;
  pos.add("file", 1);
  po::variables_map vm;
  if (!parse_command(argc, argv, desc, vm, out, "servesim validate FILE.csv [options]", &pos)) {
    return 0;
  }
  if (o.jobs < 1 || o.jobs > 1024) throw Error("jobs", "must be in [1, 1024]");
  o.interval_level = parse_interval_level(interval);
  prediction_intervals(Regime{}, o.interval_level);  // a level the table supports
  if (b.seed < 0) throw Error("seed", "must be >= 0");
  if (!(o.kv_offloading_size_gib > 0 && o.kv_offloading_size_gib <= 1e6)) {
    throw Error("kv-offloading-size", "must be in (0, 1e6] GiB");
  }
  // Flags that would make every experiment fail fail the command instead, before any replay.
  if (b.cost_model != "roofline" && b.cost_model != "table") {
    throw Error("cost-model", "expected roofline or table, got '" + b.cost_model + "'");
  }
  if (b.cost_model == "table" && b.profiles.empty()) {
    throw Error("profiles", "--cost-model table needs --profiles DIR");
  }
  if (b.cost_model != "table" && !b.profiles.empty()) {
    throw Error("profiles", "is read only by --cost-model table");
  }
  Inputs inputs;
  for (const std::string& path : split_list({b.calibration}))
    inputs.calibration(path);
  PathPlan paths;
  paths.input("file", file);
  paths.input("calibration", b.calibration);
  if (vm.count("config")) paths.input("config", vm["config"].as<std::string>());
  paths.output("csv", csv);
  paths.check();
  const std::vector<GroundTruthRow> rows = read_ground_truth(file);
  const std::vector<ValidateRow> result = validate_ground_truth(rows, o);
  print_validation(out, result);
  if (!csv.empty()) write_validation_csv(csv, result);
  if (std::none_of(result.begin(), result.end(),
                   [](const ValidateRow& r) { return r.skipped.empty(); })) {
    throw Error(file, 0, "", "no experiment could be replayed (each row's reason is above)");
  }
  return 0;
}

}  // namespace servesim::cli
