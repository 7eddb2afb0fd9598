// `servesim sweep`, `servesim sweep merge`, `servesim capacity` and `servesim check`: many runs
// of `servesim run`, each a point given as a `run` command line (cli::run_point), spread over
// threads. Every point is simulated on its own, so results never depend on --jobs or --shard.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "analysis/report.hpp"
#include "analysis/results.hpp"
#include "analysis/sweep.hpp"
#include "cli/common.hpp"
#include "util/error.hpp"
#include "util/ini.hpp"

namespace servesim::cli {

using nlohmann::ordered_json;

namespace {

int default_jobs() {
  return std::max(1, int(std::thread::hardware_concurrency()));
}

// Runs TASK(i) for i in [0, N) on JOBS threads; DONE(i) is called on the calling thread as each
// finishes (in completion order), with a progress line on stderr when it is a terminal. The
// first exception a task throws (lowest i first, so the message does not depend on timing) is
// rethrown once all threads have stopped.
void parallel_for(size_t n, int jobs, const char* what, const std::function<void(size_t)>& task,
                  const std::function<void(size_t)>& done) {
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex m;
  std::condition_variable cv;
  std::deque<size_t> finished;
  std::map<size_t, std::exception_ptr> errors;
  auto work = [&] {
    for (;;) {
      const size_t i = next++;
      if (i >= n || stop) return;
      std::exception_ptr e;
      try {
        task(i);
      } catch (...) {
        e = std::current_exception();
        stop = true;
      }
      const std::lock_guard<std::mutex> lock(m);
      if (e) {
        errors.emplace(i, e);
      } else {
        finished.push_back(i);
      }
      cv.notify_one();
    }
  };
  const int threads = int(std::min<size_t>(size_t(std::max(1, jobs)), std::max<size_t>(n, 1)));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back(work);
  const bool tty = isatty(fileno(stderr)) != 0;
  const auto start = std::chrono::steady_clock::now();
  size_t count = 0;
  auto last_print = start;
  std::unique_lock<std::mutex> lock(m);
  while (count < n && errors.empty()) {
    cv.wait_for(lock, std::chrono::milliseconds(200),
                [&] { return !finished.empty() || !errors.empty(); });
    while (!finished.empty()) {
      const size_t i = finished.front();
      finished.pop_front();
      lock.unlock();
      done(i);
      ++count;
      lock.lock();
    }
    const auto now = std::chrono::steady_clock::now();
    if (tty && (now - last_print > std::chrono::milliseconds(200) || count == n)) {
      last_print = now;
      const double s = std::chrono::duration<double>(now - start).count();
      const double rate = s > 0 ? double(count) / s : 0;
      std::fprintf(stderr, "\r%s: %zu/%zu (%.0f%%), %.1f/s, ETA %.0f s   ", what, count, n,
                   n ? 100.0 * double(count) / double(n) : 100.0, rate,
                   rate > 0 ? double(n - count) / rate : 0.0);
      std::fflush(stderr);
    }
  }
  lock.unlock();
  stop = !errors.empty();
  for (std::thread& t : pool)
    t.join();
  if (tty && n > 0) std::fprintf(stderr, "\n");
  if (!errors.empty()) std::rethrow_exception(errors.begin()->second);
}

// A command line split into the command's own options and `run` flags (name, value), in order;
// a repeated `run` flag gathers its values into one comma-separated list. A switch has the value
// "" (any other flag needs a non-empty value).
struct SplitArgs {
  std::map<std::string, std::string> own;
  std::vector<std::pair<std::string, std::string>> run;
  std::vector<std::string> positional;
};

SplitArgs split_args(int argc, const char* const* argv, const std::set<std::string>& own_flags,
                     const std::set<std::string>& own_switches) {
  SplitArgs s;
  auto add_run = [&](const std::string& name, const std::string& value) {
    for (auto& [n, v] : s.run) {
      if (n == name) {
        if (!value.empty()) v += "," + value;  // a repeated switch is the same switch
        return;
      }
    }
    s.run.emplace_back(name, value);
  };
  for (int i = 1; i < argc; ++i) {
    std::string tok = argv[i];
    if (tok == "-h") tok = "--help";
    if (tok.rfind("--", 0) != 0) {
      s.positional.push_back(tok);
      continue;
    }
    std::string name = tok.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const bool own = own_flags.count(name) > 0, own_switch = own_switches.count(name) > 0;
    const bool is_switch = own_switch || (!own && run_flag_is_switch(name));
    if (is_switch) {
      if (inline_value) throw Error(name, "takes no value");
    } else if (!inline_value) {
      if (i + 1 >= argc) throw Error(name, "needs a value");
      value = argv[++i];
    }
    if (!is_switch && value.empty()) throw Error(name, "needs a value (got an empty one)");
    if (own || own_switch) {
      s.own[name] = value;
    } else {
      add_run(name, value);
    }
  }
  return s;
}

// The entries of an INI file (top level, or [SECTION]) as `run` flags, unless already given in
// RUN; keys in OWN_FLAGS go to OWN. ONLY_SECTION: any other section is an error (sweep and
// capacity files have none).
void add_ini_run_flags(const std::string& path, const std::string& section,
                       const std::set<std::string>& own_flags,
                       std::vector<std::pair<std::string, std::string>>& run,
                       std::map<std::string, std::string>& own, bool only_section = false) {
  std::set<std::string> given;
  for (const auto& [n, v] : run)
    given.insert(n);
  std::set<std::string> seen;
  for (const IniEntry& e : read_ini_entries(path)) {
    if (e.section != section) {
      if (only_section) throw Error(path, e.line, e.section, "sections are not used in this file");
      continue;
    }
    if (e.key.empty()) continue;  // the section's header
    if (e.key == "config" || e.key == "help") {
      throw Error(path, e.line, e.key, "only allowed on the command line");
    }
    if (!seen.insert(e.key).second) {
      throw Error(path, e.line, e.key, "given twice (write one list: a, b, c)");
    }
    if (own_flags.count(e.key)) {
      if (e.value.empty()) throw Error(path, e.line, e.key, "empty value");
      own.emplace(e.key, e.value);
      continue;
    }
    if (given.count(e.key)) continue;
    bool is_switch = false;
    try {
      is_switch = run_flag_is_switch(e.key);
    } catch (const Error&) {
      throw Error(path, e.line, e.key, "not a flag of `servesim run`");
    }
    if (is_switch) {
      if (e.value == "false") continue;
      if (e.value != "true") throw Error(path, e.line, e.key, "a switch: true or false");
      run.emplace_back(e.key, "");
    } else {
      if (e.value.empty()) throw Error(path, e.line, e.key, "empty value");
      run.emplace_back(e.key, e.value);
    }
  }
}

int get_jobs(const std::map<std::string, std::string>& own) {
  const auto it = own.find("jobs");
  if (it == own.end()) return default_jobs();
  int v = 0;
  try {
    size_t used = 0;
    v = std::stoi(it->second, &used);
    if (used != it->second.size()) v = 0;
  } catch (const std::exception&) {
    v = 0;
  }
  if (v < 1 || v > 1024) throw Error("jobs", "'" + it->second + "' must be an integer in 1..1024");
  return v;
}

double get_number(const std::map<std::string, std::string>& own, const std::string& name,
                  double fallback) {
  const auto it = own.find(name);
  if (it == own.end()) return fallback;
  try {
    size_t used = 0;
    const double v = std::stod(it->second, &used);
    if (used == it->second.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw Error(name, "'" + it->second + "' is not a number");
}

std::string get(const std::map<std::string, std::string>& own, const std::string& name) {
  const auto it = own.find(name);
  return it == own.end() ? "" : it->second;
}

std::string join_args(const std::vector<std::string>& args) {
  std::string s;
  for (const std::string& a : args)
    s.append(s.empty() ? "" : " ").append(a);
  return s;
}

// ---- sweep -------------------------------------------------------------------------------

const char* kSweepHelp =
    "usage: servesim sweep [run flags, any of them a list] --out FILE.h5 [options]\n"
    "       servesim sweep merge -o OUT.h5 [--csv OUT.csv] SHARD.h5...\n"
    "\n"
    "Runs every combination of the listed values, one `servesim run` each, and writes one row\n"
    "per point: the parameters and every summary metric. A value list is a,b,c; numeric flags\n"
    "also take LO:HI:STEP (both ends included), e.g.\n"
    "  servesim sweep --scheduler vllm-v0,chunked --max-num-batched-tokens 256,512,1024 \\\n"
    "                 --request-rate 2:20:2 --gpu a100-80g,h100-sxm --out sweep.h5\n"
    "\n"
    "options:\n"
    "  --out FILE.h5     results table (required); a stopped sweep started again with the same\n"
    "                    grid skips the points already done (FILE.h5.journal)\n"
    "  --csv FILE.csv    the same table as CSV\n"
    "  --jobs N          threads (default: all cores); results do not depend on N\n"
    "  --shard K/N       run only points K, K+N, K+2N, ... (0 <= K < N), for job arrays; join\n"
    "                    the shards with `servesim sweep merge`\n"
    "  --config FILE     read flags (and lists) from an INI file; the command line wins\n"
    "  --help            this help; `servesim run --help` lists the run flags\n";

const std::set<std::string> kSweepOwn = {"out", "csv", "jobs", "shard", "config"};
const std::vector<std::string> kResolvedText = {"label", "policy", "gpu", "model", "error"};
constexpr uint64_t kMaxPoints = 10000000;

// Whether an axis gets a column of its own: not when a resolved column has its name.
bool axis_column(const std::string& flag) {
  return flag != "tp" &&
         std::find(kResolvedText.begin(), kResolvedText.end(), flag) == kResolvedText.end();
}

// The table's columns for GRID: the axes, then what each point resolved to, then the summary
// metrics.
SweepTable sweep_schema(const SweepGrid& grid) {
  SweepTable t;
  for (const SweepAxis& a : grid.axes) {
    if (axis_column(a.flag)) t.text_columns.push_back(a.flag);
  }
  t.text_columns.insert(t.text_columns.end(), kResolvedText.begin(), kResolvedText.end());
  t.int_columns = {"max_num_batched_tokens", "max_num_seqs", "tp", "num_gpu_blocks"};
  t.real_columns = {"request_rate"};
  for (const auto& [name, v] : summary_metrics(RunSummary{}))
    t.real_columns.push_back(name);
  t.grid = grid.describe();
  t.grid_id = grid.id();
  t.points_total = grid.size();
  return t;
}

SweepRow sweep_row(const SweepGrid& grid, const SweepTable& schema, uint64_t point) {
  SweepRow row;
  row.point = int64_t(point);
  const std::vector<std::string> values = grid.values(point);
  for (size_t i = 0; i < grid.axes.size(); ++i) {
    if (axis_column(grid.axes[i].flag)) row.text.push_back(values[i]);
  }
  try {
    const PointRun p = run_point(grid.args(point));
    const RunResult& r = p.run;
    row.text.insert(row.text.end(), {run_label(r), r.config.scheduler.policy, r.config.gpu.name,
                                     r.config.model.name, ""});
    row.ints = {r.config.scheduler.max_num_batched_tokens, r.config.scheduler.max_num_seqs,
                r.config.tp, r.memory.num_gpu_blocks};
    row.reals.push_back(p.request_rate);
    for (const auto& [name, v] : summary_metrics(r.summary))
      row.reals.push_back(v);
  } catch (const Error& e) {
    // A point that cannot run (a model that does not fit a GPU of the grid, ...) is a row with
    // its reason, not the end of the sweep. Swept GPU, model and TP keep their values.
    auto axis_value = [&](const char* flag) -> std::string {
      for (size_t i = 0; i < grid.axes.size(); ++i) {
        if (grid.axes[i].flag == flag) return values[i];
      }
      return "";
    };
    std::string tp = axis_value("tp");
    if (tp.empty()) tp = axis_value("tensor-parallel-size");
    row.text.insert(row.text.end(), {"", "", axis_value("gpu"), axis_value("model"), e.what()});
    row.ints.assign(schema.int_columns.size(), 0);
    if (!tp.empty()) row.ints[2] = std::stoll(tp);  // checked before the sweep started
    row.reals.assign(schema.real_columns.size(), NAN);
  }
  return row;
}

int sweep_merge(int argc, const char* const* argv, std::ostream& out) {
  std::string output, csv;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string tok = argv[i];
    if (tok == "--help" || tok == "-h") {
      out << kSweepHelp;
      return 0;
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
  std::vector<SweepTable> parts;
  for (const std::string& p : inputs)
    parts.push_back(read_sweep_h5(p));
  const SweepTable merged = merge_sweeps(parts, inputs);
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
  const std::string path = get(s.own, "out");
  if (path.empty()) throw Error("out", "sweep needs --out FILE.h5");
  const int jobs = get_jobs(s.own);
  const Shard shard = s.own.count("shard") ? parse_shard(s.own["shard"]) : Shard{};

  SweepGrid grid;
  for (const auto& [flag, value] : s.run) {
    if (value.empty()) {
      grid.fixed.emplace_back(flag, "");
      continue;
    }
    std::vector<std::string> values = expand_values(flag, value, is_numeric_flag(flag));
    if (values.size() == 1) {
      grid.fixed.emplace_back(flag, values[0]);
    } else {
      grid.axes.push_back({flag, std::move(values)});
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
  // Every flag and value is checked before anything runs: point 0, and each value of each axis.
  check_point_args(grid.args(0));
  {
    uint64_t stride = 1;
    for (size_t i = grid.axes.size(); i-- > 0;) {
      for (size_t k = 1; k < grid.axes[i].values.size(); ++k)
        check_point_args(grid.args(stride * k));
      stride *= grid.axes[i].values.size();
    }
  }

  SweepTable table = sweep_schema(grid);
  table.shard = shard.text();
  // Resume: rows of the journal of a stopped run of the same grid, or of a finished file.
  const std::string journal = path + ".journal";
  std::map<int64_t, SweepRow> done;
  std::error_code ec;
  const std::string header =
      ordered_json{{"grid_id", table.grid_id}, {"shard", table.shard}}.dump();
  bool journal_ok = false;
  if (std::filesystem::exists(journal, ec)) {
    std::ifstream in(journal);
    std::string line;
    std::getline(in, line);
    // A run stopped before its header was whole left nothing to resume: start afresh.
    journal_ok = !in.fail() && !line.empty() && line.back() == '}';
    if (!journal_ok) {
      in.close();
      std::filesystem::remove(journal, ec);
    } else if (line != header) {
      throw Error(journal, 1, "grid_id",
                  "belongs to another grid or shard; remove it to start this sweep afresh");
    }
    for (SweepRow row; journal_ok && std::getline(in, line);) {
      if (parse_row(line, table, row) && shard.owns(uint64_t(row.point))) done[row.point] = row;
    }
  }
  if (!journal_ok && std::filesystem::exists(path, ec)) {
    const SweepTable old = read_sweep_h5(path);
    if (old.grid_id != table.grid_id || !old.same_schema(table) || old.shard != table.shard) {
      throw Error(path, 0, "grid_id",
                  "exists and holds another grid or shard; remove it or choose another --out");
    }
    for (const SweepRow& row : old.rows)
      done[row.point] = row;
  }
  std::vector<uint64_t> todo;
  uint64_t owned = 0;
  for (uint64_t p = 0; p < grid.size(); ++p) {
    if (!shard.owns(p)) continue;
    ++owned;
    if (!done.count(int64_t(p))) todo.push_back(p);
  }
  const size_t resumed = done.size();

  std::FILE* j = nullptr;
  if (!todo.empty()) {
    const bool fresh = !std::filesystem::exists(journal, ec);
    bool end_line = false;
    if (!fresh) {
      // A run stopped mid-line leaves a partial last line: end it, so the next row is whole.
      std::ifstream in(journal, std::ios::binary | std::ios::ate);
      if (in.tellg() > 0) {
        in.seekg(-1, std::ios::end);
        end_line = in.get() != '\n';
      }
    }
    j = std::fopen(journal.c_str(), "ab");
    if (j == nullptr) throw Error(journal, 0, "", "cannot open for writing");
    if (end_line) std::fputc('\n', j);
    if (fresh) {
      std::fprintf(j, "%s\n", header.c_str());
      for (const auto& [point, row] : done)  // rows of a finished file carried over
        std::fprintf(j, "%s\n", row_json(row).c_str());
      std::fflush(j);
    }
  }
  std::vector<SweepRow> computed(todo.size());
  try {
    parallel_for(
        todo.size(), jobs, "sweep",
        [&](size_t i) { computed[i] = sweep_row(grid, table, todo[i]); },
        [&](size_t i) {
          std::fprintf(j, "%s\n", row_json(computed[i]).c_str());
          std::fflush(j);
        });
  } catch (...) {
    if (j) std::fclose(j);
    throw;
  }
  if (j) std::fclose(j);
  for (size_t i = 0; i < todo.size(); ++i)
    done[computed[i].point] = std::move(computed[i]);
  for (auto& [point, row] : done)
    table.rows.push_back(std::move(row));
  write_sweep_h5(path, table);
  if (!get(s.own, "csv").empty()) write_sweep_csv(get(s.own, "csv"), table);
  std::filesystem::remove(journal, ec);

  size_t errors = 0;
  const size_t error_col = table.text_columns.size() - 1;
  for (const SweepRow& r : table.rows)
    errors += !r.text[error_col].empty();
  out << "sweep: " << grid.size() << " points in the grid (" << grid.axes.size() << " axes), "
      << owned << " in shard " << table.shard << ": " << todo.size() << " run, " << resumed
      << " already done";
  if (errors) out << ", " << errors << " could not run (see the error column)";
  out << "\nwrote " << path;
  if (!get(s.own, "csv").empty()) out << " and " << get(s.own, "csv");
  out << "\n";
  for (const SweepRow& r : table.rows) {
    if (!r.text[error_col].empty()) {
      out << "first error, point " << r.point << ": " << r.text[error_col] << "\n";
      break;
    }
  }
  return 0;
}

// ---- capacity ----------------------------------------------------------------------------

namespace {

const char* kCapacityHelp =
    "usage: servesim capacity [run flags] (--slo LIST | --attainment F --slo-ttft-ms X "
    "[--slo-tpot-ms Y]) [options]\n"
    "\n"
    "The highest request rate (req/s) each configuration sustains under the SLO, by bisection on\n"
    "--request-rate over the same trace or generator (same seed: the same requests, arriving\n"
    "faster). --scheduler and --max-num-batched-tokens may be lists: one capacity per policy and\n"
    "token budget.\n"
    "\n"
    "  --slo LIST           bounds on summary metrics, e.g. ttft_p50_ms=2000,itl_p99_ms=100;\n"
    "                       latencies are upper bounds, otps_*/throughput lower bounds (or\n"
    "                       write <= / >=). Sarathi-Serve's capacity: queue_p50_ms=2000 plus a\n"
    "                       P99 TBT bound itl_p99_ms=...\n"
    "  --attainment F       goodput (DistServe, vLLM benchmark_serving --goodput): at least this\n"
    "                       share (0 < F <= 1) of all requests meets every per-request SLO below\n"
    "                       (rejected requests miss)\n"
    "  --slo-ttft-ms X      per-request TTFT bound\n"
    "  --slo-tpot-ms Y      per-request TPOT bound (one-token answers meet it)\n"
    "  --target-rate R      also print the replicas of each configuration that serve R req/s,\n"
    "                       assuming ideal spreading (each replica sees R/replicas)\n"
    "  --rate-start R       first rate tried (default 1); it doubles or halves to a bracket\n"
    "  --rate-max R         the highest rate tried (default 100000)\n"
    "  --rel-tol F          stop when the bracket is within F of its top (default 0.02)\n"
    "  --jobs N             configurations searched in parallel (default: all cores)\n"
    "  --out FILE.h5, --csv FILE.csv   the capacity table\n"
    "  --config FILE        read flags from an INI file; the command line wins\n";

const std::set<std::string> kCapacityOwn = {
    "slo",      "attainment", "slo-ttft-ms", "slo-tpot-ms", "target-rate", "rate-start",
    "rate-max", "rel-tol",    "jobs",        "out",         "csv",         "config"};

struct Bound {
  std::string text, metric;  // as written, and the summary_metrics column
  double limit = 0;
  bool upper = true;  // value <= limit (else >=)
};

// "ttft_p50_ms" / "ttft_ms_p50" / "ttft_ms.p50" -> "ttft_ms_p50"; other names unchanged.
std::string metric_column(std::string name) {
  std::replace(name.begin(), name.end(), '.', '_');
  const size_t p = name.find("_p");
  if (name.size() > 3 && name.compare(name.size() - 3, 3, "_ms") == 0 && p != std::string::npos &&
      p + 3 < name.size()) {
    const std::string base = name.substr(0, p), q = name.substr(p + 1, name.size() - 3 - p - 1);
    return base + "_ms_" + q;
  }
  for (const char* stat : {"_mean_ms", "_max_ms"}) {
    const std::string st = stat;
    if (name.size() > st.size() && name.compare(name.size() - st.size(), st.size(), st) == 0) {
      return name.substr(0, name.size() - st.size()) + "_ms_" + st.substr(1, st.size() - 4);
    }
  }
  return name;
}

std::vector<Bound> parse_slo(const std::string& text) {
  std::vector<Bound> out;
  std::set<std::string> known;
  for (const auto& [name, v] : summary_metrics(RunSummary{}))
    known.insert(name);
  std::stringstream ss(text);
  for (std::string term; std::getline(ss, term, ',');) {
    if (term.empty()) continue;
    Bound b;
    b.text = term;
    size_t op = term.find("<=");
    size_t len = 2;
    int dir = 0;
    if (op != std::string::npos) {
      dir = 1;
    } else if ((op = term.find(">=")) != std::string::npos) {
      dir = -1;
    } else {
      op = term.find('=');
      len = 1;
    }
    if (op == std::string::npos) throw Error("slo", "'" + term + "' must be METRIC=VALUE");
    b.metric = metric_column(term.substr(0, op));
    if (!known.count(b.metric)) {
      throw Error("slo", "'" + term.substr(0, op) +
                             "' is not a summary metric (e.g. ttft_p50_ms, itl_p99_ms, "
                             "e2e_p95_ms, queue_p50_ms, otps_p50, output_tokens_per_s)");
    }
    const std::string value = term.substr(op + len);
    try {
      size_t used = 0;
      b.limit = std::stod(value, &used);
      if (used != value.size() || !std::isfinite(b.limit)) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw Error("slo", "'" + term + "': '" + value + "' is not a number");
    }
    const bool higher_is_better = b.metric.rfind("otps", 0) == 0 ||
                                  b.metric.find("_per_s") != std::string::npos ||
                                  b.metric == "completed";
    b.upper = dir == 0 ? !higher_is_better : dir > 0;
    out.push_back(b);
  }
  if (out.empty()) throw Error("slo", "no bound given");
  return out;
}

struct CapacitySpec {
  std::vector<Bound> bounds;
  double attainment = 0, ttft_ms = INFINITY, tpot_ms = INFINITY;
  double rate_start = 1, rate_max = 100000, rel_tol = 0.02;
};

// The share of all requests meeting the per-request SLOs (rejected requests miss).
double attainment(const RunResult& r, double ttft_ms, double tpot_ms) {
  if (r.requests.empty()) return 0;
  size_t good = 0;
  for (const RequestRecord& q : r.requests) {
    if (!q.finished()) continue;
    if (q.ttft_s() * 1e3 > ttft_ms) continue;
    if (q.has_decode() && q.tpot_s() * 1e3 > tpot_ms) continue;
    ++good;
  }
  return double(good) / double(r.requests.size());
}

struct Probe {
  bool ok = false;
  double rate = 0, attained = NAN;
  RunSummary summary;
  std::string label, policy;
  int64_t budget = 0;
};

Probe probe(const std::vector<std::string>& base, const CapacitySpec& spec, double rate) {
  std::vector<std::string> args = base;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", rate);
  args.insert(args.end(), {"--request-rate", buf});
  const PointRun p = run_point(args);
  Probe pr;
  pr.rate = rate;
  pr.summary = p.run.summary;
  pr.label = run_label(p.run);
  pr.policy = p.run.config.scheduler.policy;
  pr.budget = p.run.config.scheduler.max_num_batched_tokens;
  pr.ok = true;
  const auto metrics = summary_metrics(p.run.summary);
  for (const Bound& b : spec.bounds) {
    for (const auto& [name, v] : metrics) {
      if (name != b.metric) continue;
      if (b.upper ? !(v <= b.limit) : !(v >= b.limit)) pr.ok = false;
    }
  }
  // Rejections (request too long for the context, the token budget or the KV cache) do not
  // depend on the rate: a configuration that refuses requests does not serve the workload.
  if (p.run.summary.rejected > 0) pr.ok = false;
  if (spec.attainment > 0) {
    pr.attained = attainment(p.run, spec.ttft_ms, spec.tpot_ms);
    if (pr.attained < spec.attainment) pr.ok = false;
  }
  return pr;
}

struct CapacityResult {
  std::string label, policy;
  int64_t budget = 0;
  double capacity = 0;
  bool above_max = false, below_min = false;
  uint64_t rejected = 0;  // requests the configuration refuses at any rate
  int iterations = 0;
  Probe at;  // the probe at the capacity (the highest rate that met the SLO)
};

CapacityResult search(const std::vector<std::string>& base, const CapacitySpec& spec) {
  CapacityResult c;
  Probe lo_probe;
  const Probe first = probe(base, spec, spec.rate_start);
  c.iterations = 1;
  c.label = first.label;
  c.policy = first.policy;
  c.budget = first.budget;
  double lo = 0, hi = 0;
  if (first.summary.rejected > 0) {
    c.rejected = first.summary.rejected;
    return c;
  }
  if (first.ok) {
    lo = first.rate;
    lo_probe = first;
    // Double up to a rate that fails; --rate-max itself is the last rate tried.
    while (lo < spec.rate_max) {
      const double r = std::min(lo * 2, spec.rate_max);
      Probe p = probe(base, spec, r);
      ++c.iterations;
      if (!p.ok) {
        hi = r;
        break;
      }
      lo = r;
      lo_probe = p;
    }
    c.above_max = hi == 0;
  } else {
    hi = first.rate;
    const double floor_rate = spec.rate_start / 1024;
    for (double r = first.rate / 2; r >= floor_rate; r /= 2) {
      Probe p = probe(base, spec, r);
      ++c.iterations;
      if (p.ok) {
        lo = r;
        lo_probe = p;
        break;
      }
      hi = r;
    }
    c.below_min = lo == 0;
  }
  // Bisection between a rate that meets the SLO and one that does not.
  while (!c.above_max && !c.below_min && (hi - lo) > spec.rel_tol * hi && c.iterations < 60) {
    const double mid = (lo + hi) / 2;
    Probe p = probe(base, spec, mid);
    ++c.iterations;
    if (p.ok) {
      lo = mid;
      lo_probe = p;
    } else {
      hi = mid;
    }
  }
  c.capacity = lo;
  c.at = lo_probe;
  return c;
}

}  // namespace

int cmd_capacity(int argc, const char* const* argv, std::ostream& out) {
  SplitArgs s = split_args(argc, argv, kCapacityOwn, {"help"});
  if (s.own.count("help")) {
    out << kCapacityHelp;
    return 0;
  }
  if (!s.positional.empty()) {
    throw Error("capacity", "unexpected argument '" + s.positional[0] + "'");
  }
  if (s.own.count("config")) {
    add_ini_run_flags(s.own["config"], "", kCapacityOwn, s.run, s.own, true);
  }
  CapacitySpec spec;
  if (s.own.count("slo")) spec.bounds = parse_slo(s.own["slo"]);
  spec.attainment = get_number(s.own, "attainment", 0);
  spec.ttft_ms = get_number(s.own, "slo-ttft-ms", INFINITY);
  spec.tpot_ms = get_number(s.own, "slo-tpot-ms", INFINITY);
  spec.rate_start = get_number(s.own, "rate-start", 1);
  spec.rate_max = get_number(s.own, "rate-max", 100000);
  spec.rel_tol = get_number(s.own, "rel-tol", 0.02);
  const double target = get_number(s.own, "target-rate", 0);
  if (s.own.count("attainment") && !(spec.attainment > 0 && spec.attainment <= 1)) {
    throw Error("attainment", "must be in (0, 1]");
  }
  if (s.own.count("attainment") && !s.own.count("slo-ttft-ms") && !s.own.count("slo-tpot-ms")) {
    throw Error("attainment", "needs --slo-ttft-ms and/or --slo-tpot-ms");
  }
  if ((s.own.count("slo-ttft-ms") || s.own.count("slo-tpot-ms")) && !s.own.count("attainment")) {
    throw Error("slo-ttft-ms", "per-request SLOs need --attainment (e.g. 0.9)");
  }
  if (spec.bounds.empty() && spec.attainment == 0) {
    throw Error("slo", "capacity needs --slo or --attainment (see servesim capacity --help)");
  }
  if (!(spec.rate_start > 0) || !(spec.rate_max >= spec.rate_start)) {
    throw Error("rate-start", "need 0 < --rate-start <= --rate-max");
  }
  if (!(spec.rel_tol > 0 && spec.rel_tol < 1)) throw Error("rel-tol", "must be in (0, 1)");
  if (target < 0) throw Error("target-rate", "must be >= 0");
  const int jobs = get_jobs(s.own);

  // One search per scheduler x token budget; every other flag is shared.
  std::vector<std::string> schedulers = {""}, budgets = {""};
  std::vector<std::string> base;
  for (const auto& [flag, value] : s.run) {
    if (flag == "request-rate") {
      throw Error("request-rate", "is what capacity searches; see --rate-start and --rate-max");
    }
    if (flag == "scheduler") {
      schedulers = expand_values(flag, value, false);
    } else if (flag == "max-num-batched-tokens") {
      budgets = expand_values(flag, value, true);
    } else {
      base.push_back("--" + flag);
      if (!value.empty()) base.push_back(value);
    }
  }
  std::vector<std::vector<std::string>> configs;
  for (const std::string& sch : schedulers) {
    for (const std::string& b : budgets) {
      std::vector<std::string> args = base;
      if (!sch.empty()) args.insert(args.end(), {"--scheduler", sch});
      if (!b.empty()) args.insert(args.end(), {"--max-num-batched-tokens", b});
      check_point_args(args);
      configs.push_back(args);
    }
  }
  std::vector<CapacityResult> results(configs.size());
  parallel_for(
      configs.size(), jobs, "capacity",
      [&](size_t i) {
        try {
          results[i] = search(configs[i], spec);
        } catch (const Error& e) {
          throw Error("capacity", "configuration '" + join_args(configs[i]) + "': " + e.what());
        }
      },
      [](size_t) {});

  std::string slo_text = s.own.count("slo") ? s.own["slo"] : "";
  if (spec.attainment > 0) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s%.0f%% of requests with TTFT <= %g ms and TPOT <= %g ms",
                  slo_text.empty() ? "" : " and ", spec.attainment * 100, spec.ttft_ms,
                  spec.tpot_ms);
    slo_text += buf;
  }
  out << "servesim capacity: the highest request rate meeting " << slo_text << "\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-18s %12s %9s %9s %9s %9s %6s%s\n", "scheduler", "capacity_rps",
                "TTFT p50", "ITL p99", "TPOT p50", "OTPS p50", "probes",
                target > 0 ? "  replicas" : "");
  out << buf;
  SweepTable t;
  t.text_columns = {"label", "policy", "note"};
  t.int_columns = {"max_num_batched_tokens", "replicas", "iterations"};
  t.real_columns = {"capacity_req_s", "attainment"};
  for (const auto& [name, v] : summary_metrics(RunSummary{}))
    t.real_columns.push_back(name);
  t.points_total = results.size();
  t.grid = slo_text;
  for (size_t i = 0; i < results.size(); ++i) {
    const CapacityResult& c = results[i];
    const int64_t replicas =
        target > 0 && c.capacity > 0 ? int64_t(std::ceil(target / c.capacity - 1e-9)) : 0;
    const std::string note =
        c.rejected > 0 ? "rejects " + std::to_string(c.rejected) +
                             " requests at any rate (too long for its context, budget or KV)"
        : c.above_max ? "at least: meets the SLO at --rate-max"
        : c.below_min ? "fails the SLO at every rate tried, down to --rate-start/1024"
                      : "";
    std::snprintf(buf, sizeof buf, "%-18s %12.3f %9.1f %9.1f %9.1f %9.1f %6d", c.label.c_str(),
                  c.capacity, c.at.summary.ttft_ms.p50, c.at.summary.itl_ms.p99,
                  c.at.summary.tpot_ms.p50, c.at.summary.otps.p50, c.iterations);
    out << buf;
    if (target > 0) out << "  " << (c.capacity > 0 ? std::to_string(replicas) : "n/a");
    if (!note.empty()) out << "  (" << note << ")";
    out << "\n";
    SweepRow row;
    row.point = int64_t(i);
    row.text = {c.label, c.policy, note};
    row.ints = {c.budget, replicas, c.iterations};
    row.reals = {c.capacity, c.at.attained};
    for (const auto& [name, v] : summary_metrics(c.at.summary))
      row.reals.push_back(c.capacity > 0 ? v : NAN);
    t.rows.push_back(row);
  }
  if (target > 0) {
    out << "replicas serve --target-rate " << target
        << " req/s assuming ideal spreading: each replica sees target/replicas req/s with the "
           "same arrival pattern (no router imbalance).\n";
  }
  const std::string h5_out = get(s.own, "out"), csv_out = get(s.own, "csv");
  if (!h5_out.empty()) {
    write_table_h5(h5_out, t, "servesim-capacity", "capacity",
                   {{"slo", slo_text}, {"target_rate", std::to_string(target)}});
  }
  if (!csv_out.empty()) write_sweep_csv(csv_out, t);
  return 0;
}

// ---- check -------------------------------------------------------------------------------

namespace {

const char* kCheckHelp =
    "usage: servesim check SPEC.ini [--update] [--jobs N]\n"
    "\n"
    "The CI gate. SPEC names a baseline results file, tolerances per summary metric and\n"
    "scenarios (each a `servesim run` configuration). check runs the scenarios, prints baseline\n"
    "vs current vs tolerance, and exits 1 when a metric moved beyond its tolerance in the bad\n"
    "direction, 0 otherwise (2 for bad input). --update runs them and rewrites the baseline.\n"
    "\n"
    "  baseline = check-baseline.h5   # relative to SPEC's folder\n"
    "  model = llama-3.1-8b           # top-level run flags apply to every scenario\n"
    "  [tolerance]\n"
    "  ttft_ms.p50 = +10%             # may rise at most 10%\n"
    "  itl_ms.p99 = +5%\n"
    "  otps.p50 = -5%                 # may fall at most 5%\n"
    "  throughput.output_tokens_per_s = -2%\n"
    "  [scenario.chat]                # a scenario named chat\n"
    "  scheduler = chunked:512\n"
    "  request-rate = 8\n"
    "\n"
    "A tolerance is +X% / -X% of the baseline or +X / -X in the metric's unit; its sign says "
    "which\n"
    "direction is a regression. Metric names are paths in the JSON summary (`run --json`).\n";

struct Tolerance {
  std::string metric, text;
  int line = 0;
  double amount = 0;
  bool relative = false, rise_is_bad = true;
};

Tolerance parse_tolerance(const std::string& spec, const IniEntry& e) {
  Tolerance t;
  t.metric = e.key;
  t.text = e.value;
  t.line = e.line;
  std::string v = e.value;
  if (v.empty() || (v[0] != '+' && v[0] != '-')) {
    throw Error(spec, e.line, e.key, "a tolerance starts with + (may rise) or - (may fall)");
  }
  t.rise_is_bad = v[0] == '+';
  v.erase(0, 1);
  if (!v.empty() && v.back() == '%') {
    t.relative = true;
    v.pop_back();
  }
  try {
    size_t used = 0;
    t.amount = std::stod(v, &used);
    if (used != v.size() || !(t.amount >= 0) || !std::isfinite(t.amount)) {
      throw std::invalid_argument("");
    }
  } catch (const std::exception&) {
    throw Error(spec, e.line, e.key, "'" + e.value + "' must be like +10%, -5% or +20");
  }
  return t;
}

// The node at dotted PATH of a summary (ttft_ms.p50), or null when there is none.
const ordered_json* find_path(const ordered_json& j, const std::string& path) {
  const ordered_json* node = &j;
  std::stringstream ss(path);
  for (std::string part; std::getline(ss, part, '.');) {
    if (!node->is_object() || !node->contains(part)) return nullptr;
    node = &(*node)[part];
  }
  return node;
}

// The number at PATH; NaN when it is null (an undefined statistic) or missing.
double lookup(const ordered_json& j, const std::string& path) {
  const ordered_json* node = find_path(j, path);
  return node && node->is_number() ? node->get<double>() : NAN;
}

}  // namespace

int cmd_check(int argc, const char* const* argv, std::ostream& out) {
  SplitArgs s = split_args(argc, argv, {"jobs"}, {"help", "update"});
  if (s.own.count("help")) {
    out << kCheckHelp;
    return 0;
  }
  if (!s.run.empty()) throw Error(s.run[0].first, "not an option of check (flags go in SPEC)");
  if (s.positional.size() != 1) throw Error("check", "expects one SPEC.ini");
  const std::string spec = s.positional[0];
  const bool update = s.own.count("update") > 0;
  const int jobs = get_jobs(s.own);

  std::string baseline;
  std::vector<Tolerance> tolerances;
  std::vector<std::string> names;
  for (const IniEntry& e : read_ini_entries(spec)) {
    if (e.section.empty()) {
      if (e.key == "baseline") baseline = e.value;
    } else if (e.section == "tolerance") {
      if (!e.key.empty()) tolerances.push_back(parse_tolerance(spec, e));
    } else if (e.section.rfind("scenario.", 0) == 0 && e.section.size() > 9) {
      const std::string name = e.section.substr(9);
      if (e.key.empty()) {  // the section's header
        if (std::find(names.begin(), names.end(), name) != names.end()) {
          throw Error(spec, e.line, e.section, "a second section for the same scenario");
        }
        if (name.find('/') != std::string::npos) {
          throw Error(spec, e.line, e.section, "a scenario name cannot hold '/'");
        }
        names.push_back(name);
      }
    } else {
      throw Error(spec, e.line, e.section,
                  "unknown section (expected [tolerance] or [scenario.NAME])");
    }
  }
  if (baseline.empty()) throw Error(spec, 0, "baseline", "missing: baseline = FILE.h5");
  if (names.empty()) throw Error(spec, 0, "scenario", "no [scenario.NAME] section");
  if (tolerances.empty() && !update) throw Error(spec, 0, "tolerance", "no [tolerance] entries");
  if (std::filesystem::path(baseline).is_relative()) {
    baseline = (std::filesystem::path(spec).parent_path() / baseline).string();
  }
  // Scenario flags: the section's, then the top level's where the section does not set them.
  std::vector<std::vector<std::string>> args;
  for (const std::string& name : names) {
    std::vector<std::pair<std::string, std::string>> run;
    std::map<std::string, std::string> own;
    add_ini_run_flags(spec, "scenario." + name, {}, run, own);
    add_ini_run_flags(spec, "", {"baseline"}, run, own);
    std::vector<std::string> a;
    for (const auto& [flag, value] : run) {
      a.push_back("--" + flag);
      if (!value.empty()) a.push_back(value);
    }
    try {
      check_point_args(a);
    } catch (const Error& e) {
      throw Error(spec, 0, "scenario." + name, e.what());
    }
    args.push_back(a);
  }
  std::vector<ordered_json> baselines(names.size());
  if (!update) {
    std::error_code ec;
    if (!std::filesystem::exists(baseline, ec)) {
      throw Error(baseline, 0, "",
                  "no baseline yet: run `servesim check " + spec + " --update` and commit it");
    }
    for (size_t i = 0; i < names.size(); ++i) {
      try {
        baselines[i] = read_results_summary(baseline, names[i]);
      } catch (const Error& e) {
        throw Error(spec, 0, "scenario." + names[i],
                    std::string(e.what()) + " (added since the baseline? run check --update)");
      }
    }
  }

  std::vector<PointRun> runs(names.size());
  parallel_for(
      names.size(), jobs, "check",
      [&](size_t i) {
        try {
          runs[i] = run_point(args[i]);
        } catch (const Error& e) {
          throw Error(spec, 0, "scenario." + names[i], e.what());
        }
      },
      [](size_t) {});

  if (update) {
    std::vector<NamedRun> named;
    for (size_t i = 0; i < names.size(); ++i)
      named.push_back({names[i], &runs[i].run, &runs[i].workload});
    ResultsOptions o;
    o.steps = false;
    write_results_h5(baseline, named, runs[0].workload, o);
    out << "check: baseline " << baseline << " updated with " << names.size() << " scenario"
        << (names.size() == 1 ? "" : "s") << "\n";
    return 0;
  }

  char buf[320];
  std::snprintf(buf, sizeof buf, "%-20s %-32s %12s %12s %9s %9s  %s\n", "scenario", "metric",
                "baseline", "current", "change", "tolerance", "verdict");
  out << buf;
  int regressions = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const ordered_json current = summary_json(runs[i].run, runs[i].workload);
    for (const Tolerance& t : tolerances) {
      const ordered_json* node = find_path(current, t.metric);
      if (node == nullptr || !(node->is_number() || node->is_null())) {
        throw Error(spec, t.line, t.metric,
                    "not a number in the JSON summary (e.g. ttft_ms.p50, otps.p50, "
                    "throughput.output_tokens_per_s)");
      }
      const double b = lookup(baselines[i], t.metric), c = lookup(current, t.metric);
      const double delta = t.relative ? t.amount / 100 * std::abs(b) : t.amount;
      const double limit = t.rise_is_bad ? b + delta : b - delta;
      std::string verdict;
      if (std::isnan(b) || std::isnan(c)) {
        verdict =
            std::isnan(b) == std::isnan(c) ? "ok (undefined in both)" : "REGRESSED (undefined)";
      } else if (t.rise_is_bad ? c > limit : c < limit) {
        verdict = "REGRESSED";
      } else if (t.rise_is_bad ? c < b - delta : c > b + delta) {
        verdict = "improved (consider --update)";
      } else {
        verdict = "ok";
      }
      if (verdict.rfind("REGRESSED", 0) == 0) ++regressions;
      const double change = b != 0 ? (c / b - 1) * 100 : NAN;
      std::snprintf(buf, sizeof buf, "%-20s %-32s %12.4g %12.4g %+8.1f%% %9s  %s\n",
                    names[i].c_str(), t.metric.c_str(), b, c, change, t.text.c_str(),
                    verdict.c_str());
      out << buf;
    }
  }
  out << (regressions ? "check: FAILED, " + std::to_string(regressions) + " regression" +
                            (regressions == 1 ? "" : "s")
                      : std::string("check: passed"))
      << " (" << names.size() << " scenario" << (names.size() == 1 ? "" : "s") << ", "
      << tolerances.size() << " tolerance" << (tolerances.size() == 1 ? "" : "s") << ")\n";
  return regressions ? 1 : 0;
}

}  // namespace servesim::cli
