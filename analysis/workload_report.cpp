#include "analysis/workload_report.hpp"

#include <cmath>
#include <sstream>

namespace servesim {

using nlohmann::ordered_json;

ordered_json trace_json(const Trace& t) {
  const TraceCounts& c = t.counts;
  return {{"kind", "trace"},
          {"file", t.file},
          {"source", t.source},
          {"format", t.format},
          {"options", t.options},
          {"timed", t.timed},
          {"rows_read", c.rows_read},
          {"replayed", t.size()},
          {"skipped_bad", c.skipped_bad},
          {"skipped_failed", c.skipped_failed},
          {"filtered", c.filtered},
          {"outside_window", c.outside_window},
          {"beyond_max", c.beyond_max},
          {"kept_failed", c.kept_failed},
          {"clipped_input", c.clipped_input},
          {"clipped_output", c.clipped_output},
          {"first_errors", t.first_errors}};
}

std::string trace_text(const Trace& t) {
  std::ostringstream s;
  s << "trace " << t.file << " (" << t.format;
  if (t.source != t.file) s << ", from " << t.source;
  s << ")";
  if (!t.options.empty()) s << " " << t.options;
  s << ": " << t.counts.rows_read << " rows, " << t.size() << " replayed, " << t.counts.skipped()
    << " skipped";
  if (t.counts.skipped() > 0) {
    s << " (" << t.counts.skipped_bad << " bad, " << t.counts.skipped_failed << " failed, "
      << t.counts.filtered << " filtered, " << t.counts.outside_window << " outside window, "
      << t.counts.beyond_max << " beyond --max-requests)";
  }
  for (const std::string& e : t.first_errors)
    s << "\n  skipped: " << e;
  return s.str();
}

ordered_json synthetic_json(const SyntheticOptions& w) {
  ordered_json rate =
      std::isinf(w.request_rate) ? ordered_json("inf") : ordered_json(w.request_rate);
  return {{"kind", "synthetic"},
          {"num_requests", w.num_requests},
          {"request_rate", rate},
          {"burstiness", w.burstiness},
          {"input_len", w.input_len.spec},
          {"output_len", w.output_len.spec},
          {"seed", w.seed}};
}

ordered_json transforms_json(const TransformOptions& o) {
  const auto rate = [](double v) { return std::isinf(v) ? ordered_json("inf") : ordered_json(v); };
  return {{"window_s", o.has_window ? ordered_json::array({o.window_start_s,
                                                           rate(o.window_end_s)})
                                    : ordered_json()},
          {"max_requests", o.max_requests},
          {"time_scale", o.time_scale},
          {"request_rate", o.request_rate > 0 ? rate(o.request_rate) : ordered_json()},
          {"input_trim", o.input_trim},
          {"input_scale", o.input_scale},
          {"output_scale", o.output_scale},
          {"max_input_len", o.max_input_len},
          {"max_output_len", o.max_output_len},
          {"replicates", resample_name(o.resample)},
          {"replicate_block_s", o.replicate_block_s},
          {"replicate_jitter_s", o.replicate_jitter_s}};
}

ordered_json import_json(const ImportOptions& o) {
  return {{"trace_format", o.format},         {"col_arrival", o.col_arrival},
          {"col_input", o.col_input},         {"col_output", o.col_output},
          {"col_priority", o.col_priority},   {"col_lora", o.col_lora},
          {"time_unit", o.time_unit},         {"skip_bad_rows", o.skip_bad_rows},
          {"keep_failed", o.keep_failed},     {"model_filter", o.model_filter},
          {"log_type", o.log_type},           {"hash_block_size", o.hash_block_size}};
}

std::string synthetic_text(const SyntheticOptions& w) {
  std::ostringstream s;
  s << w.num_requests << " requests, ";
  if (std::isinf(w.request_rate)) {
    s << "all at t=0";
  } else {
    s << (w.burstiness == 1.0 ? "Poisson " : "Gamma(" + std::to_string(w.burstiness) + ") ")
      << w.request_rate << " req/s";
  }
  s << ", input " << w.input_len.spec << ", output " << w.output_len.spec << ", seed " << w.seed;
  return s.str();
}

}  // namespace servesim
