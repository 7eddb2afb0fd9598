// What every trace importer shares: quoted values, token counts, blank lines and CSV headers
// (traces/import_rows.hpp).
#include "traces/import_rows.hpp"

namespace servesim::import_detail {

std::string quoted(std::string_view s) {
  constexpr size_t kMax = 60;
  std::string q = "'";
  q.append(s.substr(0, kMax));
  if (s.size() > kMax) q.append("...");
  return q.append("'");
}

bool tokens(std::string_view s, int64_t min, int32_t& out, std::string& reason) {
  int64_t v = 0;
  if (!parse_int(s, v)) {
    reason = s.empty() ? "missing value" : quoted(s) + " is not a whole number";
    return false;
  }
  if (v < min) {
    reason = std::to_string(v) + (min == 1 ? " must be >= 1" : " must be >= 0");
    return false;
  }
  if (v > INT32_MAX) {
    reason = std::to_string(v) + " is too large";
    return false;
  }
  out = int32_t(v);
  return true;
}

bool blank(std::string_view line) {
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

Header parse_header(std::string_view line, const std::string& path, int64_t line_number) {
  Header h;
  static_cast<CsvHeader&>(h) = read_csv_header(line, path, line_number);
  h.text = quoted(line);
  return h;
}

int require(const Header& h, const std::string& path, const std::string& name) {
  const int i = h.find(name);
  if (i < 0) throw Error(path, 1, name, "missing column (header: " + h.text + ")");
  return i;
}

}  // namespace servesim::import_detail
