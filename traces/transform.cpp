#include "traces/transform.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "traces/synthetic.hpp"
#include "util/error.hpp"
#include "util/text_input.hpp"

namespace servesim {

bool TransformOptions::any() const {
  return has_window || max_requests > 0 || time_scale != 1 || request_rate > 0 || input_trim > 0 ||
         input_scale != 1 || output_scale != 1 || max_input_len > 0 || max_output_len > 0;
}

namespace {
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

std::string TransformOptions::describe() const {
  std::string s;
  auto add = [&s](const std::string& flag, const std::string& value) {
    s.append(s.empty() ? "" : " ").append("--").append(flag).append(" ").append(value);
  };
  if (has_window) add("window", num(window_start_s) + ":" + num(window_end_s));
  if (max_requests > 0) add("max-requests", std::to_string(max_requests));
  if (time_scale != 1) add("time-scale", num(time_scale));
  if (request_rate > 0) add("request-rate", num(request_rate));
  if (input_trim > 0) add("input-trim", std::to_string(input_trim));
  if (input_scale != 1) add("input-scale", num(input_scale));
  if (output_scale != 1) add("output-scale", num(output_scale));
  if (max_input_len > 0) add("max-input-len", std::to_string(max_input_len));
  if (max_output_len > 0) add("max-output-len", std::to_string(max_output_len));
  return s;
}

void parse_window(const std::string& spec, TransformOptions& o) {
  const auto colon = spec.find(':');
  if (colon == std::string::npos)
    throw Error("window", "expected START:END in seconds, got '" + spec + "'");
  const std::string a = spec.substr(0, colon), b = spec.substr(colon + 1);
  double start = 0, end = std::numeric_limits<double>::infinity();
  if (!a.empty() && !parse_double(a, start)) throw Error("window", "'" + a + "' is not a number");
  if (!b.empty() && b != "inf" && !parse_double(b, end)) {
    throw Error("window", "'" + b + "' is not a number");
  }
  if (start < 0 || !(end > start))
    throw Error("window", "needs 0 <= START < END, got '" + spec + "'");
  o.has_window = true;
  o.window_start_s = start;
  o.window_end_s = end;
}

namespace {

// Keeps the rows whose KEEP(i) is true, in every column.
template <class Keep>
void keep_rows(Trace& t, Keep keep) {
  size_t out = 0;
  const bool hashes = t.has_hash_ids();
  std::vector<uint64_t> offsets;
  if (hashes) offsets.push_back(0);
  size_t hash_out = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (!keep(i)) continue;
    t.arrival_s[out] = t.arrival_s[i];
    t.input_tokens[out] = t.input_tokens[i];
    t.output_tokens[out] = t.output_tokens[i];
    if (!t.session_id.empty()) t.session_id[out] = t.session_id[i];
    if (!t.request_class.empty()) t.request_class[out] = t.request_class[i];
    if (hashes) {
      for (uint64_t k = t.hash_offsets[i]; k < t.hash_offsets[i + 1]; ++k) {
        t.hash_ids[hash_out++] = t.hash_ids[k];
      }
      offsets.push_back(hash_out);
    }
    ++out;
  }
  t.arrival_s.resize(out);
  t.input_tokens.resize(out);
  t.output_tokens.resize(out);
  if (!t.session_id.empty()) t.session_id.resize(out);
  if (!t.request_class.empty()) t.request_class.resize(out);
  if (hashes) {
    t.hash_ids.resize(hash_out);
    t.hash_offsets.swap(offsets);
  }
}

int32_t scaled(int32_t v, double x) {
  const double r = std::round(double(v) * x);
  return int32_t(std::clamp(r, 1.0, double(INT32_MAX)));
}

// Prefix hash ids follow prompt edits where they can: --input-trim drops the blocks it removes
// whole (the rest are kept, exact when N is a multiple of the block size) and a clip keeps the
// leading blocks; --input-scale changes every token, so the ids no longer mean anything and are
// dropped (the options say so).
void adjust_hash_ids(Trace& t, const TransformOptions& o) {
  if (!t.has_hash_ids() || (o.input_trim == 0 && o.input_scale == 1 && o.max_input_len == 0)) {
    return;
  }
  if (o.input_scale != 1) {
    t.hash_offsets.clear();
    t.hash_ids.clear();
    t.hash_block_size = 0;
    t.options.append(t.options.empty() ? "" : " ").append("(hash ids dropped: --input-scale)");
    return;
  }
  const int64_t bs = t.hash_block_size;
  std::vector<uint64_t> offsets{0};
  offsets.reserve(t.size() + 1);
  size_t out = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    int64_t in = t.input_tokens[i];
    const uint64_t begin = t.hash_offsets[i], end = t.hash_offsets[i + 1];
    const uint64_t dropped =
        std::min(uint64_t(std::min<int64_t>(o.input_trim, in - 1) / bs), end - begin);
    in = std::max<int64_t>(1, in - o.input_trim);
    if (o.max_input_len > 0) in = std::min(in, o.max_input_len);
    const uint64_t keep = std::min<uint64_t>(end - begin - dropped, uint64_t((in + bs - 1) / bs));
    for (uint64_t k = 0; k < keep; ++k)
      t.hash_ids[out++] = t.hash_ids[begin + dropped + k];
    offsets.push_back(out);
  }
  t.hash_ids.resize(out);
  t.hash_offsets.swap(offsets);
}

void check(const TransformOptions& o) {
  if (!(o.time_scale > 0 && std::isfinite(o.time_scale))) throw Error("time-scale", "must be > 0");
  if (o.request_rate < 0 || std::isnan(o.request_rate)) throw Error("request-rate", "must be > 0");
  if (o.max_requests < 0) throw Error("max-requests", "must be >= 0");
  if (o.input_trim < 0) throw Error("input-trim", "must be >= 0");
  if (!(o.input_scale > 0 && std::isfinite(o.input_scale)))
    throw Error("input-scale", "must be > 0");
  if (!(o.output_scale > 0 && std::isfinite(o.output_scale))) {
    throw Error("output-scale", "must be > 0");
  }
  if (o.max_input_len < 0) throw Error("max-input-len", "must be >= 0");
  if (o.max_output_len < 0) throw Error("max-output-len", "must be >= 0");
}

}  // namespace

void apply_transforms(Trace& t, const TransformOptions& o) {
  check(o);
  if (!o.any()) return;
  if (!t.timed && (o.has_window || o.time_scale != 1)) {
    throw Error(o.has_window ? "window" : "time-scale",
                "needs the trace's own arrival times, and this length-only trace has none "
                "(--request-rate generates arrivals; --max-requests selects requests)");
  }
  if (o.has_window) {
    const size_t before = t.size();
    keep_rows(t, [&](size_t i) {
      return t.arrival_s[i] >= o.window_start_s && t.arrival_s[i] < o.window_end_s;
    });
    t.counts.outside_window += int64_t(before - t.size());
    for (double& a : t.arrival_s)
      a -= o.window_start_s;
  }
  if (o.max_requests > 0 && t.size() > size_t(o.max_requests)) {
    t.counts.beyond_max += int64_t(t.size()) - o.max_requests;
    keep_rows(t, [&](size_t i) { return i < size_t(o.max_requests); });
  }
  if (t.size() == 0) {
    throw Error(o.has_window ? "window" : "max-requests", "no request of the trace is left");
  }
  if (t.timed) {
    if (o.time_scale != 1) {
      for (double& a : t.arrival_s)
        a *= o.time_scale;
    }
    if (o.request_rate > 0 && !std::isinf(o.request_rate)) {
      const double span = t.arrival_s.back() - t.arrival_s.front();
      if (!(span > 0)) throw Error("request-rate", "the trace's arrivals span no time to rescale");
      const double factor = (double(t.size() - 1) / span) / o.request_rate;
      const double first = t.arrival_s.front();
      for (double& a : t.arrival_s)
        a = (a - first) * factor;
    } else if (std::isinf(o.request_rate)) {
      std::fill(t.arrival_s.begin(), t.arrival_s.end(), 0.0);
    }
  } else if (o.request_rate > 0) {
    t.arrival_s = generate_arrivals(t.size(), o.request_rate, o.burstiness, o.seed);
    t.timed = true;
  }
  if (!std::isfinite(t.arrival_s.back())) {
    throw Error(o.request_rate > 0 ? "request-rate" : "time-scale",
                "arrival times overflow: the rate is too low or the scale too large");
  }
  adjust_hash_ids(t, o);
  for (size_t i = 0; i < t.size(); ++i) {
    int32_t& in = t.input_tokens[i];
    int32_t& out = t.output_tokens[i];
    if (o.input_trim > 0) in = int32_t(std::max<int64_t>(1, in - o.input_trim));
    if (o.input_scale != 1) in = scaled(in, o.input_scale);
    if (o.output_scale != 1) out = scaled(out, o.output_scale);
    if (o.max_input_len > 0 && in > o.max_input_len) {
      in = int32_t(o.max_input_len);
      ++t.counts.clipped_input;
    }
    if (o.max_output_len > 0 && out > o.max_output_len) {
      out = int32_t(o.max_output_len);
      ++t.counts.clipped_output;
    }
  }
  t.options.append(t.options.empty() ? "" : " ").append(o.describe());
}

}  // namespace servesim
