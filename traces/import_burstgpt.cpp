// The BurstGPT trace format: Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
// (BurstGPT_3 adds Session ID), with its filters, failed requests, request classes and sessions
// (traces/import_formats.hpp).
#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "traces/import_formats.hpp"
#include "util/lookup.hpp"

namespace servesim::import_detail {

namespace {

// The columns of a BurstGPT trace.
struct BurstGptColumns {
  int time, model, input, output, log, session;  // session: -1 when absent
};

BurstGptColumns burstgpt_columns(const std::string& path, const Header& h) {
  BurstGptColumns c;
  c.time = require(h, path, "Timestamp");
  c.model = require(h, path, "Model");
  c.input = require(h, path, "Request tokens");
  c.output = require(h, path, "Response tokens");
  c.log = require(h, path, "Log Type");
  c.session = h.find("Session ID");  // BurstGPT_3 only: a UUID, or empty
  return c;
}

// Reads BurstGPT rows: the --model-filter and --log-type selection, failed requests, and the
// request classes (model / log type) and sessions met so far.
class BurstGpt {
 public:
  BurstGpt(const std::string& path, const ImportOptions& opt, const Header& h, Rows& rows,
           Trace& t);
  BurstGpt(const BurstGpt&) = delete;
  BurstGpt& operator=(const BurstGpt&) = delete;

  size_t needed() const;  // fields a row must have
  void row(int64_t line, const std::vector<std::string_view>& f);

 private:
  void reserve_columns();
  bool parse(int64_t line, const std::vector<std::string_view>& f, double& time, int32_t& input,
             int32_t& output);
  bool selected(std::string_view model, std::string_view log);
  bool replayed(int32_t& output);
  uint8_t class_of(int64_t line, std::string_view model, std::string_view log);
  uint8_t intern_class(int64_t line, std::string name);
  int64_t session_of(std::string_view id);

  const std::string& path_;
  const ImportOptions& opt_;
  Rows& rows_;
  Trace& t_;
  const BurstGptColumns c_;
  const std::string model_filter_, log_filter_;  // lowercase
  bool reserved_ = false;
  std::string reason_;
  // Classes and sessions are interned: a few distinct models and log types, and session ids
  // numbered in order of first appearance. The last class is cached to avoid a lookup per row.
  std::unordered_map<std::string, uint8_t> classes_;
  std::unordered_map<std::string, int64_t> sessions_;
  std::string last_model_, last_log_;
  uint8_t last_class_ = 0;
  bool have_class_ = false;
};

BurstGpt::BurstGpt(const std::string& path, const ImportOptions& opt, const Header& h, Rows& rows,
                   Trace& t)
    : path_(path),
      opt_(opt),
      rows_(rows),
      t_(t),
      c_(burstgpt_columns(path, h)),
      model_filter_(lowercase(opt.model_filter)),
      log_filter_(lowercase(opt.log_type)) {
  if (!log_filter_.empty() && log_filter_ != "conversation" && log_filter_ != "api") {
    throw Error(field::kLogType, "expected conversation or api, got '" + opt.log_type + "'");
  }
}

size_t BurstGpt::needed() const {
  return size_t(std::max({c_.time, c_.model, c_.input, c_.output, c_.log, c_.session})) + 1;
}

void BurstGpt::row(int64_t line, const std::vector<std::string_view>& f) {
  reserve_columns();
  double time = 0, rel = 0;
  int32_t input = 0, output = 0;
  if (!parse(line, f, time, input, output)) return;
  if (!rows_.in_order(line, "Timestamp", time)) return;
  const std::string_view model = clean_header_name(f[size_t(c_.model)]);
  const std::string_view log = clean_header_name(f[size_t(c_.log)]);
  if (!selected(model, log) || !replayed(output)) return;
  if (!rows_.relative(line, "Timestamp", time, rel)) return;
  const uint8_t request_class = class_of(line, model, log);
  t_.push(rel, input, output);
  t_.request_class.push_back(request_class);
  if (c_.session >= 0) {
    t_.session_id.push_back(session_of(clean_header_name(f[size_t(c_.session)])));
  }
}

// The class and session columns, once: on the first row for_each_row has reserved the others.
void BurstGpt::reserve_columns() {
  if (reserved_) return;
  t_.request_class.reserve(t_.arrival_s.capacity());
  if (c_.session >= 0) t_.session_id.reserve(t_.arrival_s.capacity());
  reserved_ = true;
}

// The time and token counts; false (and the row reported) when one is malformed.
bool BurstGpt::parse(int64_t line, const std::vector<std::string_view>& f, double& time,
                     int32_t& input, int32_t& output) {
  if (!parse_double(f[size_t(c_.time)], time)) {
    return rows_.fail(line, "Timestamp", quoted(f[size_t(c_.time)]) + " is not a number");
  }
  if (!tokens(f[size_t(c_.input)], 1, input, reason_)) {
    return rows_.fail(line, "Request tokens", reason_);
  }
  if (!tokens(f[size_t(c_.output)], 0, output, reason_)) {
    return rows_.fail(line, "Response tokens", reason_);
  }
  return true;
}

// False (and the row counted as filtered) for another model or log type than the filters ask.
bool BurstGpt::selected(std::string_view model, std::string_view log) {
  if ((!model_filter_.empty() && lowercase(model) != model_filter_) ||
      (!log_filter_.empty() && lowercase(log).rfind(log_filter_, 0) != 0)) {
    ++t_.counts.filtered;
    return false;
  }
  return true;
}

// A failed request (0 response tokens): false (and counted) unless --keep-failed, which replays
// it as one output token.
bool BurstGpt::replayed(int32_t& output) {
  if (output != 0) return true;
  if (!opt_.keep_failed) {
    ++t_.counts.skipped_failed;
    return false;
  }
  ++t_.counts.kept_failed;
  output = 1;  // it still took a prefill; replayed as one output token
  return true;
}

uint8_t BurstGpt::class_of(int64_t line, std::string_view model, std::string_view log) {
  if (have_class_ && model == last_model_ && log == last_log_) return last_class_;
  last_model_.assign(model);
  last_log_.assign(log);
  last_class_ = intern_class(line, last_model_ + " / " + last_log_);
  have_class_ = true;
  return last_class_;
}

// The index of class NAME (cut to 100 characters) in the trace's class names, added if new.
uint8_t BurstGpt::intern_class(int64_t line, std::string name) {
  if (name.size() > 100) name = name.substr(0, 100);
  const auto it = classes_.find(name);
  if (it != classes_.end()) return it->second;
  if (classes_.size() == 255) {
    throw Error(path_, int(line), "Model", "more than 255 model / log-type classes");
  }
  const uint8_t index = uint8_t(classes_.size());
  classes_.emplace(name, index);
  t_.class_names.push_back(name);
  return index;
}

// Session ids numbered in order of first appearance; -1 for an empty one.
int64_t BurstGpt::session_of(std::string_view id) {
  if (id.empty()) return -1;
  return sessions_.emplace(std::string(id), int64_t(sessions_.size())).first->second;
}

}  // namespace

void import_burstgpt(const std::string& path, const ImportOptions& opt, LineReader& in,
                     const Header& h, Rows& rows, Trace& t) {
  BurstGpt burstgpt(path, opt, h, rows, t);
  for_each_row(
      in, rows, t, burstgpt.needed(), h,
      [&burstgpt](int64_t line, const std::vector<std::string_view>& f) { burstgpt.row(line, f); });
}

}  // namespace servesim::import_detail
