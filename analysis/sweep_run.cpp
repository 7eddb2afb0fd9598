#include "analysis/sweep_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "analysis/intervals.hpp"
#include "analysis/report.hpp"
#include "util/distributed.hpp"
#include "util/error.hpp"
#include "util/parallel.hpp"

namespace servesim {

namespace {

// `error` last: what a point that could not run says.
const std::vector<std::string> kResolvedText = {"label", "policy",      "gpu",
                                                "model", "cost_source", "error"};

// Whether an axis gets a column of its own: not when a resolved column has its name.
bool axis_column(const std::string& flag) {
  return flag != "tp" &&
         std::find(kResolvedText.begin(), kResolvedText.end(), flag) == kResolvedText.end();
}

}  // namespace

void check_grid(const SweepGrid& grid, Inputs& inputs) {
  check_point(grid.spec(0), inputs);
  uint64_t stride = 1;
  for (size_t i = grid.axes.size(); i-- > 0;) {
    for (size_t k = 1; k < grid.axes[i].values.size(); ++k)
      check_point(grid.spec(stride * k), inputs);
    stride *= grid.axes[i].values.size();
  }
}

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
  t.real_columns.push_back("rejection_heavy");  // 1: more than kComparableRejectedShare
  for (const auto& [name, v] : interval_columns(RunResult{}, kDefaultIntervalLevel))
    t.real_columns.push_back(name);
  t.grid = grid.describe();
  t.grid_id = grid.id();
  t.points_total = grid.size();
  return t;
}

namespace {

// The row of a point that could not run: its reason; swept GPU, model and TP keep their values.
void error_row(SweepRow& row, const SweepGrid& grid, const SweepTable& schema,
               const std::vector<std::string>& values, const std::string& reason) {
  auto axis_value = [&](const char* flag) -> std::string {
    for (size_t i = 0; i < grid.axes.size(); ++i) {
      if (grid.axes[i].flag == flag) return values[i];
    }
    return "";
  };
  std::string tp = axis_value("tp");
  if (tp.empty()) tp = axis_value("tensor-parallel-size");
  row.text.insert(row.text.end(), {"", "", axis_value("gpu"), axis_value("model"), "", reason});
  row.ints.assign(schema.int_columns.size(), 0);
  if (!tp.empty()) row.ints[2] = std::stoll(tp);  // checked before the sweep started
  row.reals.assign(schema.real_columns.size(), NAN);
}

}  // namespace

SweepRow sweep_row(const SweepGrid& grid, const SweepTable& schema, uint64_t point,
                   Inputs& inputs) {
  SweepRow row;
  row.point = int64_t(point);
  const std::vector<std::string> values = grid.values(point);
  for (size_t i = 0; i < grid.axes.size(); ++i) {
    if (axis_column(grid.axes[i].flag)) row.text.push_back(values[i]);
  }
  try {
    const PointRun p = run_point(grid.spec(point), inputs);
    const RunResult& r = p.run;
    row.text.insert(row.text.end(),
                    {run_label(r), policy_name(r.config.scheduler.policy), r.config.gpu.name,
                     r.config.model.name, cost_source(r.config), ""});
    row.ints = {r.config.scheduler.max_num_batched_tokens, r.config.scheduler.max_num_seqs,
                r.config.tp, r.memory.num_gpu_blocks};
    row.reals.push_back(p.request_rate);
    for (const auto& [name, v] : summary_metrics(r.summary))
      row.reals.push_back(v);
    row.reals.push_back(rejection_heavy(r.summary) ? 1.0 : 0.0);
    for (const auto& [name, v] : interval_columns(r, kDefaultIntervalLevel))
      row.reals.push_back(v);
  } catch (const Error& e) {
    error_row(row, grid, schema, values, e.what());
  } catch (const std::exception& e) {
    // Not bad input but a failure of this point (out of memory, a broken invariant): still a
    // row, so that one point never takes a whole sweep, or an MPI job, down with it.
    error_row(row, grid, schema, values, std::string("internal error: ") + e.what());
  }
  return row;
}

namespace {

// The journal's first line: which grid and shard its rows belong to.
std::string journal_header(const SweepTable& t) {
  return json_text(nlohmann::ordered_json{{"grid_id", t.grid_id}, {"shard", t.shard}});
}

// The rows already done: the journal of a stopped run of the same grid and shard, else the
// table of a finished one. A journal cut before its header was whole is removed.
std::map<int64_t, SweepRow> done_rows(const SweepTable& table, const SweepOptions& o) {
  const std::string journal = o.out + ".journal";
  std::map<int64_t, SweepRow> done;
  std::error_code ec;
  bool journal_ok = false;
  if (std::filesystem::exists(journal, ec)) {
    std::ifstream in(journal);
    std::string line;
    std::getline(in, line);
    journal_ok = !in.fail() && !line.empty() && line.back() == '}';
    if (!journal_ok) {
      in.close();
      std::filesystem::remove(journal, ec);
    } else if (line != journal_header(table)) {
      throw Error(journal, 1, "grid_id",
                  "belongs to another grid or shard; remove it to start this sweep afresh");
    }
    for (SweepRow row; journal_ok && std::getline(in, line);) {
      if (parse_row(line, table, row) && o.shard.owns(uint64_t(row.point))) done[row.point] = row;
    }
  }
  if (!journal_ok && std::filesystem::exists(o.out, ec)) {
    const SweepTable old = read_sweep_h5(o.out);
    if (old.grid_id != table.grid_id || !old.same_schema(table) || old.shard != table.shard) {
      throw Error(
          o.out, 0, "grid_id",
          "exists and holds another grid or shard; remove it or choose another {{output.out}}");
    }
    for (const SweepRow& row : old.rows)
      done[row.point] = row;
  }
  return done;
}

// The journal, opened to append: a fresh one gets the header and the rows carried over from a
// finished file; a cut one gets its partial last line ended, so the next row is whole.
std::FILE* open_journal(const SweepTable& table, const SweepOptions& o,
                        const std::map<int64_t, SweepRow>& done) {
  const std::string journal = o.out + ".journal";
  std::error_code ec;
  const bool fresh = !std::filesystem::exists(journal, ec);
  bool end_line = false;
  if (!fresh) {
    std::ifstream in(journal, std::ios::binary | std::ios::ate);
    if (in.tellg() > 0) {
      in.seekg(-1, std::ios::end);
      end_line = in.get() != '\n';
    }
  }
  std::FILE* j = std::fopen(journal.c_str(), "ab");
  if (j == nullptr) throw Error(journal, 0, "", "cannot open for writing");
  if (end_line) std::fputc('\n', j);
  if (fresh) {
    std::fprintf(j, "%s\n", journal_header(table).c_str());
    for (const auto& [point, row] : done)
      std::fprintf(j, "%s\n", row_json(row).c_str());
    std::fflush(j);
  }
  return j;
}

// Simulates the points TODO, each row journaled as it finishes: on JOBS threads, or under mpirun
// by the other ranks, rank 0 keeping the queue and the journal.
std::vector<SweepRow> run_points(const SweepGrid& grid, const SweepTable& table,
                                 const std::vector<uint64_t>& todo, std::FILE* journal, int jobs,
                                 Inputs& inputs) {
  std::vector<SweepRow> computed(todo.size());
  auto journal_row = [&](const std::string& text) {
    std::fprintf(journal, "%s\n", text.c_str());
    std::fflush(journal);
  };
  try {
    if (mpi::world().distributed()) {
      std::map<uint64_t, size_t> index;
      for (size_t i = 0; i < todo.size(); ++i)
        index[todo[i]] = i;
      // A row crosses between ranks as its journal line, which reads back exactly (the resume
      // promise), so the table is the one `--jobs 1` writes.
      mpi::work_queue(
          todo, jobs, [](uint64_t) { return std::string(); },
          [&](uint64_t point, const std::string& text) {
            const auto it = index.find(point);
            if (it == index.end() || !parse_row(text, table, computed[it->second]) ||
                computed[it->second].point != int64_t(point)) {
              throw Error("sweep", "a rank answered point " + std::to_string(point) +
                                       " with an unreadable row");
            }
            journal_row(text);
          });
    } else {
      parallel_for(
          todo.size(), jobs, "sweep",
          [&](size_t i) { computed[i] = sweep_row(grid, table, todo[i], inputs); },
          [&](size_t i) { journal_row(row_json(computed[i])); });
    }
  } catch (...) {
    if (journal) std::fclose(journal);
    throw;
  }
  if (journal) std::fclose(journal);
  return computed;
}

}  // namespace

SweepOutcome run_sweep(const SweepGrid& grid, const SweepOptions& o, Inputs& inputs) {
  SweepOutcome r;
  r.table = sweep_schema(grid);
  r.table.shard = o.shard.text();
  if (mpi::world().distributed() && mpi::world().rank != 0) {  // compute what rank 0 hands out
    // A row crosses to rank 0 as its journal line.
    mpi::work_queue(
        {}, o.jobs,
        [&](uint64_t point) { return row_json(sweep_row(grid, r.table, point, inputs)); }, {});
    r.worker = true;
    return r;
  }
  std::map<int64_t, SweepRow> done = done_rows(r.table, o);
  std::vector<uint64_t> todo;
  for (uint64_t p = 0; p < grid.size(); ++p) {
    if (!o.shard.owns(p)) continue;
    ++r.owned;
    if (!done.count(int64_t(p))) todo.push_back(p);
  }
  r.resumed = done.size();
  r.run = todo.size();
  std::FILE* journal = todo.empty() ? nullptr : open_journal(r.table, o, done);
  for (SweepRow& row : run_points(grid, r.table, todo, journal, o.jobs, inputs))
    done[row.point] = std::move(row);
  for (auto& [point, row] : done)
    r.table.rows.push_back(std::move(row));
  write_sweep_h5(o.out, r.table);
  if (!o.csv.empty()) write_sweep_csv(o.csv, r.table);
  std::error_code ec;
  std::filesystem::remove(o.out + ".journal", ec);
  const size_t error_col = r.table.text_columns.size() - 1;
  for (const SweepRow& row : r.table.rows)
    r.errors += !row.text[error_col].empty();
  return r;
}

}  // namespace servesim
