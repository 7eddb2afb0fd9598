#include "traces/transform.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "traces/synthetic.hpp"
#include "util/error.hpp"
#include "util/text_input.hpp"

namespace servesim {

bool TransformOptions::any() const {
  return has_window || max_requests > 0 || resample != Resample::kNone || time_scale != 1 ||
         request_rate > 0 || input_trim > 0 || input_scale != 1 || output_scale != 1 ||
         max_input_len > 0 || max_output_len > 0;
}

namespace {
// V's shortest text that reads back as V exactly: the record says the value used, not 6 digits.
std::string num(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}
}  // namespace

std::string TransformOptions::describe() const {
  std::string s;
  auto add = [&s](const char* path, const std::string& value) {
    s.append(s.empty() ? "" : " ").append(spell_field(path, true)).append(" ").append(value);
  };
  if (has_window) add(field::kWindow, num(window_start_s) + ":" + num(window_end_s));
  if (max_requests > 0) add(field::kMaxRequests, std::to_string(max_requests));
  if (resample != Resample::kNone) {
    add(field::kTraceReplicates, resample_name(resample));
    if (resample == Resample::kBootstrap) add(field::kReplicateBlockS, num(replicate_block_s));
    if (resample == Resample::kJitter) add(field::kReplicateJitterS, num(replicate_jitter_s));
    add(field::kSeed, std::to_string(seed));
  }
  if (time_scale != 1) add(field::kTimeScale, num(time_scale));
  if (request_rate > 0) add(field::kRequestRate, num(request_rate));
  if (input_trim > 0) add(field::kInputTrim, std::to_string(input_trim));
  if (input_scale != 1) add(field::kInputScale, num(input_scale));
  if (output_scale != 1) add(field::kOutputScale, num(output_scale));
  if (max_input_len > 0) add(field::kMaxInputLen, std::to_string(max_input_len));
  if (max_output_len > 0) add(field::kMaxOutputLen, std::to_string(max_output_len));
  return s;
}

void parse_window(const std::string& spec, TransformOptions& o) {
  const auto colon = spec.find(':');
  if (colon == std::string::npos)
    throw Error(field::kWindow, "expected START:END in seconds, got '" + spec + "'");
  const std::string a = spec.substr(0, colon), b = spec.substr(colon + 1);
  double start = 0, end = std::numeric_limits<double>::infinity();
  if (!a.empty() && !parse_double(a, start))
    throw Error(field::kWindow, "'" + a + "' is not a number");
  if (!b.empty() && b != "inf" && !parse_double(b, end)) {
    throw Error(field::kWindow, "'" + b + "' is not a number");
  }
  if (start < 0 || !(end > start))
    throw Error(field::kWindow, "needs 0 <= START < END, got '" + spec + "'");
  o.has_window = true;
  o.window_start_s = start;
  o.window_end_s = end;
}

namespace {

// Moves the entries of row I of a ragged column (OFFSETS into VALUES) to position OUT of VALUES,
// and appends its new end to NEW_OFFSETS.
template <class T>
void keep_ragged(const std::vector<uint64_t>& offsets, std::vector<T>& values, size_t i,
                 size_t& out, std::vector<uint64_t>& new_offsets) {
  for (uint64_t k = offsets[i]; k < offsets[i + 1]; ++k)
    values[out++] = values[k];
  new_offsets.push_back(out);
}

// Keeps the rows whose KEEP(i) is true, in every column.
template <class Keep>
void keep_rows(Trace& t, Keep keep) {
  size_t out = 0;
  const bool hashes = t.has_hash_ids(), spans = t.has_spans();
  std::vector<uint64_t> hash_offsets, span_offsets;
  if (hashes) hash_offsets.push_back(0);
  if (spans) span_offsets.push_back(0);
  size_t hash_out = 0, span_out = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (!keep(i)) continue;
    t.arrival_s[out] = t.arrival_s[i];
    t.input_tokens[out] = t.input_tokens[i];
    t.output_tokens[out] = t.output_tokens[i];
    if (t.has_sessions()) t.session_id[out] = t.session_id[i];
    if (!t.request_class.empty()) t.request_class[out] = t.request_class[i];
    if (!t.priority.empty()) t.priority[out] = t.priority[i];
    if (!t.lora.empty()) t.lora[out] = t.lora[i];
    if (hashes) keep_ragged(t.hash_offsets, t.hash_ids, i, hash_out, hash_offsets);
    if (spans) {
      keep_ragged(t.span_offsets, t.spans, i, span_out, span_offsets);
      t.output_continues[out] = t.output_continues[i];
    }
    ++out;
  }
  t.arrival_s.resize(out);
  t.input_tokens.resize(out);
  t.output_tokens.resize(out);
  if (t.has_sessions()) t.session_id.resize(out);
  if (!t.request_class.empty()) t.request_class.resize(out);
  if (!t.priority.empty()) t.priority.resize(out);
  if (!t.lora.empty()) t.lora.resize(out);
  if (hashes) {
    t.hash_ids.resize(hash_out);
    t.hash_offsets.swap(hash_offsets);
  }
  if (spans) {
    t.spans.resize(span_out);
    t.span_offsets.swap(span_offsets);
    t.output_continues.resize(out);
  }
}

int32_t scaled(int32_t v, double x) {
  const double r = std::round(double(v) * x);
  return int32_t(std::clamp(r, 1.0, double(INT32_MAX)));
}

bool edits_prompts(const TransformOptions& o) {
  return o.input_trim > 0 || o.input_scale != 1 || o.max_input_len > 0;
}

// Content follows the length transforms exactly. When a transform edits prompts, hash ids and
// session ids become spans first (content_as_spans), since their blocks and conversations no
// longer line up with the new prompts; the trace's options say so. Longer outputs
// (--output-scale > 1) also make sessions spans: the extra answer tokens are not in the next turn.
void prepare_content(Trace& t, const TransformOptions& o) {
  const bool hashes = t.has_hash_ids() && edits_prompts(o);
  const bool sessions = t.has_sessions() && (edits_prompts(o) || o.output_scale > 1);
  if (t.has_spans() || !(hashes || sessions)) return;
  content_as_spans(t);
  t.options.append(t.options.empty() ? "" : " ")
      .append(hashes ? "(hash ids as spans: prompts edited)" : "(sessions as spans)");
}

// The spans of row I, in place from position OUT of t.spans (rows are edited in order and never
// grow), after its prompt lost its first TRIMMED tokens and then kept (or, scaled up, grew
// unique tokens to) INPUT tokens, and its output grew or not (OUTPUT_GREW). The tokens kept keep
// their names; tokens added are the request's own. The output continues the last span's stream
// only when the prompt still ends where it did, and the answer holds no extra tokens.
void edit_spans(Trace& t, size_t i, int64_t trimmed, int64_t input, bool output_grew, size_t& out,
                std::vector<uint64_t>& offsets) {
  const int64_t before = int64_t(t.input_tokens[i]);
  const uint64_t begin = t.span_offsets[i], end = t.span_offsets[i + 1];
  const size_t first = out;
  for (uint64_t k = begin; k < end; ++k) {
    TokenSpan s = t.spans[k];
    const int64_t from = std::max<int64_t>(s.prompt_pos, trimmed);
    const int64_t to = std::min<int64_t>(int64_t(s.prompt_pos) + s.tokens, trimmed + input);
    if (to <= from) continue;
    s.stream_pos += int32_t(from - s.prompt_pos);
    s.prompt_pos = int32_t(from - trimmed);
    s.tokens = int32_t(to - from);
    t.spans[out++] = s;
  }
  offsets.push_back(out);
  const bool same_end = before - trimmed == input;
  t.output_continues[i] = t.output_continues[i] && out > first && same_end && !output_grew;
}

void check(const TransformOptions& o) {
  if (!(o.time_scale > 0 && std::isfinite(o.time_scale)))
    throw Error(field::kTimeScale, "must be > 0");
  if (o.request_rate < 0 || std::isnan(o.request_rate))
    throw Error(field::kRequestRate, "must be > 0");
  if (o.max_requests < 0) throw Error(field::kMaxRequests, "must be >= 0");
  if (o.input_trim < 0) throw Error(field::kInputTrim, "must be >= 0");
  if (!(o.input_scale > 0 && std::isfinite(o.input_scale)))
    throw Error(field::kInputScale, "must be > 0");
  if (!(o.output_scale > 0 && std::isfinite(o.output_scale))) {
    throw Error(field::kOutputScale, "must be > 0");
  }
  if (o.max_input_len < 0) throw Error(field::kMaxInputLen, "must be >= 0");
  if (o.max_output_len < 0) throw Error(field::kMaxOutputLen, "must be >= 0");
  if (!(o.replicate_block_s > 0 && o.replicate_block_s <= 1e9)) {
    throw Error(field::kReplicateBlockS, "must be a number of seconds in (0, 1e9]");
  }
  if (!(o.replicate_jitter_s > 0 && o.replicate_jitter_s <= 1e6)) {
    throw Error(field::kReplicateJitterS, "must be a number of seconds in (0, 1e6]");
  }
}

}  // namespace

void apply_transforms(Trace& t, const TransformOptions& o) {
  check(o);
  if (!o.any()) return;
  if (!t.timed && (o.has_window || o.time_scale != 1)) {
    throw Error(o.has_window ? field::kWindow : field::kTimeScale,
                "needs the trace's own arrival times, and this length-only trace has none (" +
                    field::ref(field::kRequestRate) + " generates arrivals; " +
                    field::ref(field::kMaxRequests) + " selects requests)");
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
    throw Error(o.has_window ? field::kWindow : field::kMaxRequests,
                "no request of the trace is left");
  }
  if (o.resample != Resample::kNone) {
    if (!t.timed) {
      throw Error(field::kTraceReplicates,
                  "needs the trace's own arrival times, and this length-only trace has none (its "
                  "arrivals are drawn from " +
                      field::ref(field::kSeed) + " already)");
    }
    resample_trace(t, o.resample,
                   o.resample == Resample::kBootstrap ? o.replicate_block_s : o.replicate_jitter_s,
                   o.seed);
  }
  if (t.timed) {
    if (o.time_scale != 1) {
      for (double& a : t.arrival_s)
        a *= o.time_scale;
    }
    if (o.request_rate > 0 && !std::isinf(o.request_rate)) {
      const double span = t.arrival_s.back() - t.arrival_s.front();
      if (!(span > 0))
        throw Error(field::kRequestRate, "the trace's arrivals span no time to rescale");
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
    throw Error(o.request_rate > 0 ? field::kRequestRate : field::kTimeScale,
                "arrival times overflow: the rate is too low or the scale too large");
  }
  prepare_content(t, o);
  const bool spans = t.has_spans();
  std::vector<uint64_t> offsets;
  if (spans) offsets.assign(1, 0);
  size_t span_out = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    int32_t in = t.input_tokens[i];
    int32_t out = t.output_tokens[i];
    if (o.input_trim > 0) in = int32_t(std::max<int64_t>(1, in - o.input_trim));
    const int64_t trimmed = int64_t(t.input_tokens[i]) - in;
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
    if (spans) edit_spans(t, i, trimmed, in, out > t.output_tokens[i], span_out, offsets);
    t.input_tokens[i] = in;
    t.output_tokens[i] = out;
  }
  if (spans) {
    t.spans.resize(span_out);
    t.span_offsets.swap(offsets);
  }
  t.options.append(t.options.empty() ? "" : " ").append(o.describe());
}

}  // namespace servesim
