#include "analysis/sweep.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "analysis/report.hpp"
#include "util/error.hpp"
#include "util/format.hpp"
#include "util/h5_columns.hpp"
#include "util/provenance.hpp"
#include "util/text_input.hpp"

namespace servesim {

using nlohmann::ordered_json;

uint64_t SweepGrid::size() const {
  uint64_t n = 1;
  for (const SweepAxis& a : axes)
    n *= a.values.size();
  return n;
}

std::vector<std::string> SweepGrid::values(uint64_t point) const {
  std::vector<std::string> v(axes.size());
  for (size_t i = axes.size(); i-- > 0;) {
    const uint64_t k = axes[i].values.size();
    v[i] = axes[i].values[point % k];
    point /= k;
  }
  return v;
}

RunSpec SweepGrid::spec(uint64_t point) const {
  RunSpec s = base;
  for (size_t i = axes.size(); i-- > 0;) {
    const uint64_t k = axes[i].values.size();
    axes[i].set[point % k](s);
    point /= k;
  }
  return s;
}

std::string SweepGrid::describe() const {
  ordered_json j;
  j["fixed"] = ordered_json::array();
  for (const auto& [flag, value] : fixed)
    j["fixed"].push_back({flag, value});
  j["axes"] = ordered_json::array();
  for (const SweepAxis& a : axes)
    j["axes"].push_back({a.flag, a.values});
  return json_text(j);
}

std::string SweepGrid::id() const {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : describe()) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {

bool to_double(const std::string& s, double& v) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(v);
}

// The shortest text that reads back as V ("2", "2.5", "0.1").
std::string number_text(double v) {
  char buf[40];
  if (v == std::floor(v) && std::abs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    double back = 0;
    if (to_double(buf, back) && back == v) break;
  }
  return buf;
}

// TEXT's items between SEPARATORs, a separator inside a JSON object, array or string (a
// --speculative-config value) not splitting it: '{"method":"ngram","k":3},{"method":"eagle"}' is
// two items. An unbalanced bracket keeps the rest as one item, for its parser to refuse.
std::vector<std::string> split_outside_json(const std::string& text, char separator) {
  if (text.empty()) return {};
  std::vector<std::string> items(1);
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      in_string = !(c == '"' && !escaped);
      escaped = !escaped && c == '\\';
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    } else if (c == separator && depth == 0) {
      items.emplace_back();
      continue;
    }
    items.back() += c;
  }
  // getline's convention, which the callers relied on: a trailing separator adds no item.
  if (items.size() > 1 && items.back().empty()) items.pop_back();
  return items;
}

}  // namespace

std::vector<std::string> expand_values(const std::string& flag, const std::string& text,
                                       bool numeric, char separator) {
  constexpr size_t kMaxValues = 1000000;
  std::vector<std::string> out;
  for (std::string item : split_outside_json(text, separator)) {
    item = std::string(trim(item));
    if (item.empty()) throw Error(flag, "'" + text + "' has an empty item");
    const size_t c1 = item.find(':');
    const size_t c2 = c1 == std::string::npos ? c1 : item.find(':', c1 + 1);
    if (numeric && c2 != std::string::npos && item.find(':', c2 + 1) == std::string::npos) {
      double lo = 0, hi = 0, step = 0;
      if (!to_double(item.substr(0, c1), lo) || !to_double(item.substr(c1 + 1, c2 - c1 - 1), hi) ||
          !to_double(item.substr(c2 + 1), step) || !(step > 0) || hi < lo) {
        throw Error(flag, "'" + item + "': a range is LO:HI:STEP with LO <= HI and STEP > 0");
      }
      // Values LO + k x STEP (no accumulated rounding), HI included when it is on the grid
      // within a millionth of a step.
      int64_t ilo = 0, ihi = 0, istep = 0;
      auto as_int = [](const std::string& s, int64_t& v) {
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        return ec == std::errc() && end == s.data() + s.size();
      };
      if (as_int(item.substr(0, c1), ilo) && as_int(item.substr(c1 + 1, c2 - c1 - 1), ihi) &&
          as_int(item.substr(c2 + 1), istep)) {
        // Integers stay integers, exactly, whatever their size.
        if ((uint64_t(ihi) - uint64_t(ilo)) / uint64_t(istep) >= kMaxValues) {
          throw Error(flag, "'" + item + "': too many values");
        }
        for (int64_t v = ilo; v <= ihi; v += istep) {
          out.push_back(std::to_string(v));
          if (v > ihi - istep) break;
        }
        continue;
      }
      const double count = std::floor((hi - lo) / step + 1e-6);
      if (count + 1 > double(kMaxValues)) throw Error(flag, "'" + item + "': too many values");
      // Values are rounded to the decimals the range was written with: 0.1:0.3:0.1 gives 0.3,
      // not 0.30000000000000004.
      int decimals = 0;
      for (const std::string& part : {item.substr(0, c1), item.substr(c2 + 1)}) {
        const size_t dot = part.find('.');
        if (dot != std::string::npos && part.find_first_of("eE") == std::string::npos) {
          decimals = std::max(decimals, int(part.size() - dot - 1));
        }
      }
      const double scale = std::pow(10.0, std::min(decimals, 15));
      for (int64_t k = 0; k <= int64_t(count); ++k) {
        const double v = lo + double(k) * step;
        out.push_back(number_text(decimals > 0 ? std::round(v * scale) / scale : v));
      }
    } else {
      out.push_back(item);
    }
    if (out.size() > kMaxValues) throw Error(flag, "more than a million values");
  }
  if (out.empty()) throw Error(flag, "no value");
  return out;
}

std::string Shard::text() const {
  return count == 1 ? "all" : std::to_string(index) + "/" + std::to_string(count);
}

Shard parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  Shard s;
  auto num = [&](const std::string& part, uint64_t& v) {
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    return ec == std::errc() && end == part.data() + part.size();
  };
  if (slash == std::string::npos || !num(text.substr(0, slash), s.index) ||
      !num(text.substr(slash + 1), s.count) || s.count < 1 || s.index >= s.count) {
    throw Error(field::kShard, "'" + text + "' must be K/N with 0 <= K < N (e.g. 0/4 ... 3/4)");
  }
  return s;
}

namespace {

constexpr const char* kSweepMagic = "servesim-sweep";
constexpr int64_t kSweepVersion = 1;
constexpr hsize_t kMaxSweepRows = hsize_t(1) << 31;

using h5::join_lines;
using h5::split_lines;

}  // namespace

namespace {

// T's rows as one column each in group NAME of F.
void write_rows(H5::H5File& f, const char* name, const SweepTable& t) {
  H5::Group g = h5::create_group(f, name);
  std::vector<int64_t> point;
  for (const SweepRow& r : t.rows)
    point.push_back(r.point);
  h5::write_column(g, "point", point);
  for (size_t c = 0; c < t.text_columns.size(); ++c) {
    std::vector<std::string> v;
    for (const SweepRow& r : t.rows)
      v.push_back(r.text[c]);
    h5::write_column(g, t.text_columns[c], v);
  }
  for (size_t c = 0; c < t.int_columns.size(); ++c) {
    std::vector<int64_t> v;
    for (const SweepRow& r : t.rows)
      v.push_back(r.ints[c]);
    h5::write_column(g, t.int_columns[c], v);
  }
  for (size_t c = 0; c < t.real_columns.size(); ++c) {
    std::vector<double> v;
    for (const SweepRow& r : t.rows)
      v.push_back(r.reals[c]);
    h5::write_column(g, t.real_columns[c], v);
  }
}

}  // namespace

void write_table_group(H5::H5File& f, const char* name, const SweepTable& t) {
  write_rows(f, name, t);
}

void write_sweep_h5(const std::string& path, const SweepTable& t) {
  const SweepTable units = sweep_intervals(t);
  std::string replicates;
  for (const std::string& c : t.text_columns) {
    if (is_replicate_column(c)) replicates += (replicates.empty() ? "" : "\n") + c;
  }
  write_table_h5(path, t, kSweepMagic, "points", {{"replicate_columns", replicates}},
                 [&units](H5::H5File& f) { write_rows(f, "intervals", units); });
}

void write_table_h5(const std::string& path, const SweepTable& t, const char* magic,
                    const char* group,
                    const std::vector<std::pair<std::string, std::string>>& attrs,
                    const std::function<void(H5::H5File&)>& more) {
  h5::write_file_atomically(path, [&](H5::H5File& f) {
    h5::write_attr(f, "magic", std::string(magic));
    for (const auto& [name, value] : attrs)
      h5::write_attr(f, name, value);
    h5::write_attr(f, "version", kSweepVersion);
    h5::write_attr(f, "servesim_version", std::string(servesim_version()));
    h5::write_attr(f, "command_line",
                   t.command_line.empty() ? current_command_line() : t.command_line);
    h5::write_attr(f, "grid", t.grid);
    h5::write_attr(f, "grid_id", t.grid_id);
    h5::write_attr(f, "points_total", int64_t(t.points_total));
    h5::write_attr(f, "shard", t.shard);
    h5::write_attr(f, "text_columns", join_lines(t.text_columns));
    h5::write_attr(f, "int_columns", join_lines(t.int_columns));
    h5::write_attr(f, "real_columns", join_lines(t.real_columns));
    // The reals that count things (requests, tokens, steps): whole numbers a reader may type as
    // integers.
    std::vector<std::string> counts;
    for (const std::string& c : t.real_columns) {
      if (summary_metric_is_count(c)) counts.push_back(c);
    }
    h5::write_attr(f, "count_columns", join_lines(counts));
    write_rows(f, group, t);
    if (more) more(f);
  });
}

SweepTable read_sweep_h5(const std::string& path) {
  H5::Exception::dontPrint();
  SweepTable t;
  try {
    H5::H5File f = h5::open_checked(path, kSweepMagic, kSweepVersion, "sweep file");
    t.grid = h5::read_string_attr(f, "grid");
    t.grid_id = h5::read_string_attr(f, "grid_id");
    if (f.attrExists("command_line")) t.command_line = h5::read_string_attr(f, "command_line");
    const int64_t total = h5::read_int_attr(f, path, "points_total");
    if (total < 0) throw Error(path, 0, "points_total", "must be >= 0");
    t.points_total = uint64_t(total);
    t.shard = h5::read_string_attr(f, "shard");
    t.text_columns = split_lines(h5::read_string_attr(f, "text_columns"));
    t.int_columns = split_lines(h5::read_string_attr(f, "int_columns"));
    t.real_columns = split_lines(h5::read_string_attr(f, "real_columns"));
    H5::Group g = f.openGroup("points");
    const hsize_t n = h5::column_length<int64_t>(g, path, "point", kMaxSweepRows);
    const std::vector<int64_t> point = h5::read_column<int64_t>(g, "point", n);
    t.rows.resize(n);
    for (size_t i = 0; i < n; ++i) {
      t.rows[i].point = point[i];
      if (point[i] < 0 || uint64_t(point[i]) >= t.points_total ||
          (i > 0 && point[i] <= point[i - 1])) {
        throw Error(path, 0, "point", "must be increasing and below points_total");
      }
    }
    for (const std::string& c : t.text_columns) {
      const auto v = h5::read_string_column(g, path, c, n);
      for (size_t i = 0; i < n; ++i)
        t.rows[i].text.push_back(v[i]);
    }
    for (const std::string& c : t.int_columns) {
      const auto v = h5::read_checked<int64_t>(g, path, c, n);
      for (size_t i = 0; i < n; ++i)
        t.rows[i].ints.push_back(v[i]);
    }
    for (const std::string& c : t.real_columns) {
      const auto v = h5::read_checked<double>(g, path, c, n);
      for (size_t i = 0; i < n; ++i)
        t.rows[i].reals.push_back(v[i]);
    }
  } catch (const H5::Exception& e) {
    throw Error(path, 0, "",
                "unreadable servesim sweep file (truncated or corrupt HDF5?): " + e.getFuncName() +
                    ": " + e.getDetailMsg());
  }
  return t;
}

void write_sweep_csv(const std::string& path, const SweepTable& t) {
  std::string out = "point";
  for (const auto* cols : {&t.text_columns, &t.int_columns, &t.real_columns}) {
    for (const std::string& c : *cols)
      out.append(",").append(csv_field(c));
  }
  out += "\n";
  char buf[64];
  for (const SweepRow& r : t.rows) {
    out += std::to_string(r.point);
    for (const std::string& s : r.text)
      out.append(",").append(csv_field(s));
    for (int64_t v : r.ints)
      out.append(",").append(std::to_string(v));
    for (double v : r.reals) {
      out += ",";
      if (std::isfinite(v)) {
        std::snprintf(buf, sizeof buf, "%.10g", v);
        out += buf;
      } else if (std::isinf(v)) {
        out += v > 0 ? "inf" : "-inf";
      }
    }
    out += "\n";
  }
  write_text_file(path, out);
}

std::string row_json(const SweepRow& r) {
  ordered_json j;
  j["point"] = r.point;
  j["text"] = r.text;
  j["ints"] = r.ints;
  ordered_json reals = ordered_json::array();
  for (double v : r.reals) {
    if (std::isnan(v)) {
      reals.push_back(nullptr);
    } else if (std::isinf(v)) {
      reals.push_back(v > 0 ? "inf" : "-inf");
    } else {
      reals.push_back(v);
    }
  }
  j["reals"] = reals;
  return json_text(j);
}

bool parse_row(const std::string& line, const SweepTable& schema, SweepRow& row) {
  try {
    const ordered_json j = ordered_json::parse(line);
    row = SweepRow{};
    // Integers must be written as integers: nlohmann's get<int64_t> reads 1.5 as 1.
    const ordered_json& point = j.at("point");
    if (!point.is_number_integer()) return false;
    row.point = point.get<int64_t>();
    row.text = j.at("text").get<std::vector<std::string>>();
    if (!j.at("ints").is_array() || !j.at("reals").is_array()) return false;
    for (const auto& v : j.at("ints")) {
      if (!v.is_number_integer()) return false;
      row.ints.push_back(v.get<int64_t>());
    }
    for (const auto& v : j.at("reals")) {
      if (v.is_null()) {
        row.reals.push_back(NAN);
      } else if (v.is_string()) {
        const std::string& text = v.get_ref<const std::string&>();
        if (text != "inf" && text != "-inf") return false;
        row.reals.push_back(text == "inf" ? INFINITY : -INFINITY);
      } else {
        row.reals.push_back(v.get<double>());
      }
    }
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  return row.point >= 0 && uint64_t(row.point) < schema.points_total &&
         row.text.size() == schema.text_columns.size() &&
         row.ints.size() == schema.int_columns.size() &&
         row.reals.size() == schema.real_columns.size();
}

SweepTable merge_sweeps(const std::vector<SweepTable>& parts,
                        const std::vector<std::string>& paths) {
  if (parts.empty()) throw Error("sweep merge", "no input file");
  SweepTable out = parts.front();
  out.rows.clear();
  std::map<int64_t, const SweepRow*> by_point;
  for (size_t i = 0; i < parts.size(); ++i) {
    const SweepTable& p = parts[i];
    if (p.grid_id != out.grid_id || p.grid != out.grid || p.points_total != out.points_total) {
      throw Error(paths[i], 0, "grid_id",
                  "comes from a different grid than " + paths[0] + " (" + p.grid_id + " vs " +
                      out.grid_id + ")");
    }
    if (!p.same_schema(out)) throw Error(paths[i], 0, "columns", "differ from " + paths[0]);
    for (const SweepRow& r : p.rows) {
      const auto [it, fresh] = by_point.emplace(r.point, &r);
      if (!fresh) {
        const SweepRow& o = *it->second;
        auto same_reals = [&] {
          for (size_t k = 0; k < r.reals.size(); ++k) {
            const bool both_nan = std::isnan(r.reals[k]) && std::isnan(o.reals[k]);
            if (!both_nan && r.reals[k] != o.reals[k]) return false;
          }
          return true;
        };
        if (o.text != r.text || o.ints != r.ints || !same_reals()) {
          throw Error(paths[i], 0, "point",
                      "point " + std::to_string(r.point) + " differs from another file's");
        }
      }
    }
  }
  for (const auto& [point, row] : by_point)
    out.rows.push_back(*row);
  out.shard = out.rows.size() == out.points_total ? "all" : "partial";
  return out;
}

}  // namespace servesim
