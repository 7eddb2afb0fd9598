// Fuzz target: a sweep journal's rows (analysis/sweep.hpp parse_row), as a resumed sweep reads
// them: one JSON object a line. An accepted row fits the schema, names a point of the grid, and
// reads back from its own JSON unchanged (the resume promise).
#include <cmath>
#include <sstream>

#include "analysis/sweep.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace servesim;
  SweepTable schema;
  schema.text_columns = {"scheduler", "error"};
  schema.int_columns = {"max_num_seqs"};
  schema.real_columns = {"request_rate", "ttft_ms_p50"};
  schema.points_total = 16;
  std::istringstream lines{std::string(fuzz::as_text(data, size))};
  fuzz::expect_errors([&] {
    for (std::string line; std::getline(lines, line);) {
      SweepRow row;
      if (!parse_row(line, schema, row)) continue;
      fuzz::fuzz_assert(row.point >= 0 && uint64_t(row.point) < schema.points_total,
                        "a point of the grid");
      fuzz::fuzz_assert(row.text.size() == 2 && row.ints.size() == 1 && row.reals.size() == 2,
                        "the schema's columns");
      SweepRow again;
      fuzz::fuzz_assert(parse_row(row_json(row), schema, again), "its own JSON reads back");
      bool same = again.point == row.point && again.text == row.text && again.ints == row.ints;
      for (size_t k = 0; k < row.reals.size(); ++k) {
        same = same && (again.reals[k] == row.reals[k] ||
                        (std::isnan(again.reals[k]) && std::isnan(row.reals[k])));
      }
      fuzz::fuzz_assert(same, "unchanged through its JSON");
    }
  });
  return 0;
}
