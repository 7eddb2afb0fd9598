// What the capacity tests read back: the capacity table's CSV as rows of named fields, and the
// TTFT p99 of one `servesim run` (to check a capacity or a fleet against a run of its own).
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_helpers.hpp"

namespace servesim::test {

// One CSV line's fields ("a,\"b, c\"" -> a, b, c).
inline std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> f(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') {
      f.back() += c;
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      f.emplace_back();
    } else {
      f.back() += c;
    }
  }
  return f;
}

// A CSV table as rows of column name -> text.
inline std::vector<std::map<std::string, std::string>> read_csv(const std::filesystem::path& p) {
  std::stringstream in(slurp(p));
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = csv_fields(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = csv_fields(line);
    REQUIRE(f.size() == header.size());
    std::map<std::string, std::string> row;
    for (size_t k = 0; k < f.size(); ++k)
      row[header[k]] = f[k];
    rows.push_back(row);
  }
  return rows;
}

inline double num(const std::map<std::string, std::string>& row, const std::string& col) {
  REQUIRE(row.count(col));
  return row.at(col).empty() ? NAN : std::stod(row.at(col));
}

// Runs `servesim run` with ARGS at RATE req/s and returns its TTFT p99 (ms), via DIR/r.json.
inline double run_ttft_p99(const std::filesystem::path& dir, const std::string& rate,
                           std::vector<std::string> args) {
  args.insert(args.begin(), {"run", "--request-rate", rate, "--json", (dir / "r.json").string()});
  const auto r = call_cli(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(slurp(dir / "r.json"))["ttft_ms"]["p99"].get<double>();
}

}  // namespace servesim::test
