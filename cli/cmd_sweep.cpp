// `servesim sweep` and `servesim sweep merge`: a grid of `run` configurations, every combination
// of the listed values, run in parallel into one table (analysis/sweep_run.hpp); shards of a grid
// joined into one table.
#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/sweep.hpp"
#include "analysis/sweep_run.hpp"
#include "cli/commands.hpp"
#include "cli/grid_args.hpp"
#include "cli/run_flags.hpp"
#include "util/error.hpp"

namespace servesim::cli {

namespace {

const char* kSweepHelp =
    "usage: servesim sweep [run flags, any of them a list] --out FILE.h5 [options]\n"
    "       servesim sweep merge -o OUT.h5 [--csv OUT.csv] [--partial] SHARD.h5...\n"
    "\n"
    "Runs every combination of the listed values, one `servesim run` each, and writes one row\n"
    "per point: the parameters and every summary metric. A value list is a,b,c; numeric flags\n"
    "also take LO:HI:STEP (both ends included), e.g.\n"
    "  servesim sweep --scheduler vllm-v0,chunked --max-num-batched-tokens 256,512,1024 \\\n"
    "                 --request-rate 2:20:2 --gpu a100-80g,h100-sxm --out sweep.h5\n"
    "A flag whose one value is itself a comma list (--servegen, --replica-gpus, --client-mix,\n"
    "--calibration) separates its values with |:\n"
    "  --replica-gpus 'h100-sxm:2,a100-80g:1|h100-sxm:4' is two fleets\n"
    "\n"
    "options:\n"
    "  --out FILE.h5     results table (required); a stopped sweep started again with the same\n"
    "                    grid skips the points already done (FILE.h5.journal)\n"
    "  --csv FILE.csv    the same table as CSV\n"
    "  --jobs N          threads (default: all cores); results do not depend on N\n"
    "  --shard K/N       run only points K, K+N, K+2N, ... (0 <= K < N), for job arrays; join\n"
    "                    the shards with `servesim sweep merge` (scripts/slurm-sweep.sbatch),\n"
    "                    which refuses a set with points missing unless --partial\n"
    "\n"
    "Under `mpirun -n N servesim sweep ...` rank 0 hands the points out as a work queue, the\n"
    "other ranks simulate them (--jobs threads each) and rank 0 journals and writes the table:\n"
    "the same bytes as --jobs 1. A stopped MPI sweep resumes from the journal, with or without\n"
    "mpirun.\n"
    "  --config FILE     read flags (and lists) from an INI file; the command line wins\n"
    "  --help            this help; `servesim run --help` lists the run flags\n";

const std::set<std::string> kSweepOwn = {"out", "csv", "jobs", "shard", "config"};
constexpr uint64_t kMaxPoints = 10000000;

// The grid of the run flags RUN: a flag with one value is fixed, one with several an axis. Its
// size and record are bounded before any value is parsed.
SweepGrid grid_of(const std::vector<std::pair<std::string, std::string>>& run) {
  SweepGrid grid;
  for (const auto& [flag, value] : run) {
    if (value.empty()) {
      grid.fixed.emplace_back(flag, "");
      continue;
    }
    std::vector<std::string> values =
        expand_values(flag, value, run_flag_is_numeric(flag), run_flag_separator(flag));
    if (values.size() == 1) {
      grid.fixed.emplace_back(flag, values[0]);
    } else {
      grid.axes.push_back({flag, std::move(values), {}});
    }
  }
  uint64_t points = 1;
  for (const SweepAxis& a : grid.axes) {
    if (a.values.size() > kMaxPoints / points) {
      throw Error("sweep", "the grid has more than " + std::to_string(kMaxPoints) +
                               " points: split it into smaller grids");
    }
    points *= a.values.size();
  }
  if (grid.describe().size() > 32768) {
    throw Error("sweep", "the grid's values take more than 32 KiB to record: split the grid");
  }
  grid.base = spec_from_flags(grid.fixed);
  for (SweepAxis& a : grid.axes) {
    for (const std::string& v : a.values)
      a.set.push_back(parse_run_flag(a.flag, v));
  }
  return grid;
}

void print_outcome(std::ostream& out, const SweepGrid& grid, const SweepOptions& o,
                   const SweepOutcome& r) {
  out << "sweep: " << grid.size() << " points in the grid (" << grid.axes.size() << " axes), "
      << r.owned << " in shard " << r.table.shard << ": " << r.run << " run, " << r.resumed
      << " already done";
  if (r.errors) out << ", " << r.errors << " could not run (see the error column)";
  const bool policy_axis = std::any_of(grid.axes.begin(), grid.axes.end(), [](const SweepAxis& a) {
    return a.flag == "scheduler" || a.flag == "enable-chunked-prefill";
  });
  if (!policy_axis && default_scheduler(grid.base)) out << "\n" << kDefaultSchedulerNote;
  out << "\nwrote " << o.out;
  if (!o.csv.empty()) out << " and " << o.csv;
  out << "\n";
  const size_t error_col = r.table.text_columns.size() - 1;
  for (const SweepRow& row : r.table.rows) {
    if (!row.text[error_col].empty()) {
      out << "first error, point " << row.point << ": " << row.text[error_col] << "\n";
      break;
    }
  }
}

int sweep_merge(int argc, const char* const* argv, std::ostream& out) {
  std::string output, csv;
  std::vector<std::string> inputs;
  bool partial = false;
  for (int i = 1; i < argc; ++i) {
    std::string tok = argv[i];
    if (tok == "--help" || tok == "-h") {
      out << kSweepHelp;
      return 0;
    }
    if (tok == "--partial") {
      partial = true;
      continue;
    }
    const size_t eq = tok.find('=');
    if (tok.rfind("--", 0) == 0 && eq != std::string::npos) {
      const std::string value = tok.substr(eq + 1);
      tok = tok.substr(0, eq);
      if (tok != "--out" && tok != "--csv") throw Error(tok, "unknown option of sweep merge");
      (tok == "--csv" ? csv : output) = value;
    } else if (tok == "-o" || tok == "--out" || tok == "--csv") {
      if (i + 1 >= argc) throw Error(tok, "needs a value");
      (tok == "--csv" ? csv : output) = argv[++i];
    } else if (tok.rfind("-", 0) == 0) {
      throw Error(tok, "unknown option of sweep merge");
    } else {
      inputs.push_back(tok);
    }
  }
  if (output.empty()) throw Error("out", "sweep merge needs -o OUT.h5");
  if (inputs.empty()) throw Error("sweep merge", "no shard files given");
  PathPlan paths;
  for (const std::string& shard : inputs)
    paths.input("shard", shard);
  paths.output("out", output);
  paths.output("csv", csv);
  paths.check();
  std::vector<SweepTable> parts;
  for (const std::string& p : inputs)
    parts.push_back(read_sweep_h5(p));
  const SweepTable merged = merge_sweeps(parts, inputs);
  if (merged.shard == "partial" && !partial) {
    throw Error("sweep merge",
                std::to_string(merged.points_total - merged.rows.size()) + " of " +
                    std::to_string(merged.points_total) +
                    " points are in none of the files (a shard missing or unfinished?): give "
                    "them all, or --partial to write the incomplete table");
  }
  write_sweep_h5(output, merged);
  if (!csv.empty()) write_sweep_csv(csv, merged);
  out << "sweep merge: " << merged.rows.size() << " of " << merged.points_total << " points from "
      << inputs.size() << " files into " << output;
  if (merged.shard == "partial") {
    out << " (" << merged.points_total - merged.rows.size() << " points missing)";
  }
  out << "\n";
  return 0;
}

}  // namespace

int cmd_sweep(int argc, const char* const* argv, std::ostream& out) {
  if (argc >= 2 && std::string(argv[1]) == "merge") return sweep_merge(argc - 1, argv + 1, out);
  SplitArgs s = split_args(argc, argv, kSweepOwn, {"help"});
  if (s.own.count("help")) {
    out << kSweepHelp;
    return 0;
  }
  if (!s.positional.empty()) throw Error("sweep", "unexpected argument '" + s.positional[0] + "'");
  if (s.own.count("config")) {
    add_ini_run_flags(s.own["config"], "", kSweepOwn, s.run, s.own, true);
  }
  SweepOptions o;
  o.out = get(s.own, "out");
  if (o.out.empty()) throw Error("out", "sweep needs --out FILE.h5");
  o.csv = get(s.own, "csv");
  o.jobs = get_jobs(s.own);
  if (s.own.count("shard")) o.shard = parse_shard(s.own["shard"]);
  const SweepGrid grid = grid_of(s.run);
  PathPlan paths;
  add_flag_inputs(paths, s.run, s.own);
  paths.output("out", o.out);
  paths.output("csv", o.csv);
  paths.output("out", o.out + ".journal");  // the journal beside it
  paths.check();
  Inputs inputs;
  check_grid(grid, inputs);
  const SweepOutcome r = run_sweep(grid, o, inputs);
  if (!r.worker) print_outcome(out, grid, o, r);
  return 0;
}

}  // namespace servesim::cli
