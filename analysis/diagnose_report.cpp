// The report of a Diagnosis (analysis/diagnose.hpp): the text `servesim diagnose` prints (the
// statistics table, the decomposition, the verdict in words, the OTPS alarm and optionally each
// period) and the same as JSON.
#include <algorithm>
#include <ctime>

#include "analysis/diagnose.hpp"
#include "analysis/diagnose_util.hpp"
#include "analysis/diagnose_verdict_text.hpp"

namespace servesim {

using diagnose_util::num;
using diagnose_util::pct;
using diagnose_util::signed_num;
using nlohmann::ordered_json;

namespace {

void print_logs(std::ostream& out, const Diagnosis& d) {
  out << "servesim diagnose: InvocationLatency = TTFT + OutputTokenCount / OTPS x 1000, "
         "completed requests\n";
  for (const LogStats* s : {&d.baseline, &d.current}) {
    out << format("  %-9s %s: %lld requests, %lld completed\n",
                  s == &d.baseline ? "baseline" : "current", s->source.c_str(),
                  static_cast<long long>(s->requests), static_cast<long long>(s->completed));
  }
}

// One row of the statistics table: NAME, the baseline X, the current Y and the change.
void print_row(std::ostream& out, const char* name, double x, double y) {
  out << format("%-28s %12s %12s %9s\n", name, num(x, 1).c_str(), num(y, 1).c_str(),
                pct(relative_change(x, y)).c_str());
}

void print_table(std::ostream& out, const LogStats& b, const LogStats& c) {
  out << format("\n%-28s %12s %12s %9s\n", "", "baseline", "current", "change");
  print_row(out, "InvocationLatency p50 (ms)", b.p50.il_ms, c.p50.il_ms);
  print_row(out, "InvocationLatency p95 (ms)", b.p95.il_ms, c.p95.il_ms);
  print_row(out, "TimeToFirstToken p50 (ms)", b.p50.ttft_ms, c.p50.ttft_ms);
  print_row(out, "TimeToFirstToken p95 (ms)", b.p95.ttft_ms, c.p95.ttft_ms);
  print_row(out, "OutputTokenCount p50", b.p50.otc, c.p50.otc);
  print_row(out, "OutputTokenCount p95", b.p95.otc, c.p95.otc);
  print_row(out, "OTPS p50 (tokens/s)", b.p50.otps, c.p50.otps);
  print_row(out, "OTPS p95 (tokens/s)", b.p95.otps, c.p95.otps);
  print_row(out, "input tokens p50", b.input_tokens_p50, c.input_tokens_p50);
  print_row(out, "queueing delay p50 (ms)", b.queue_ms_p50, c.queue_ms_p50);
  print_row(out, "prefill speed p99 (tokens/s)", b.prefill_tps_p99, c.prefill_tps_p99);
  print_row(out, "request rate (req/s)", b.request_rate, c.request_rate);
  print_row(out, "decoding at once p50", b.decode.concurrency_p50, c.decode.concurrency_p50);
  print_row(out, "time per output token p50 (ms)", b.decode.tpot_ms_p50, c.decode.tpot_ms_p50);
}

// One row of the decomposition: NAME, the part at p50 (X) and at p95 (Y).
void print_part(std::ostream& out, const char* name, double x, double y) {
  out << format("%-44s %10s %10s\n", name, signed_num(x, 1).c_str(), signed_num(y, 1).c_str());
}

// The split the verdict chose, and why.
const char* split_reason(Split s) {
  return s == Split::kInputOutputSpeed
             ? "input length + output length + speed (the prompts changed: the whole TTFT "
               "change, queueing included, is input length)"
             : "TTFT + decode (the prompts held, or were not recorded)";
}

void print_decomposition(std::ostream& out, const Decomposition& p50, const Decomposition& p95) {
  out << "\nsplit: " << split_reason(p50.split) << "\n";
  out << format("%-44s %10s %10s\n", "change of InvocationLatency (ms)", "p50", "p95");
  print_part(out, "  total", p50.il, p95.il);
  if (p50.split == Split::kInputOutputSpeed) {
    print_part(out, "  = input length, dTTFT (queueing included)", p50.input, p95.input);
    print_part(out, "  + output length, dOTC / OTPS_base", p50.output, p95.output);
    print_part(out, "  + speed, OTC_cur x d(1/OTPS)", p50.speed, p95.speed);
    return;
  }
  print_part(out, "  = TTFT", p50.ttft, p95.ttft);
  print_part(out, "  + decode, OTC / OTPS x 1000", p50.decode, p95.decode);
  print_part(out, "      = output length, dOTC / OTPS_base", p50.output, p95.output);
  print_part(out, "      + speed, OTC_cur x d(1/OTPS)", p50.speed, p95.speed);
}

void print_verdict(std::ostream& out, const Verdict& v) {
  const VerdictText text = verdict_text(v);
  out << "\nverdict (" << finding_name(v.finding) << "): " << text.headline << "\n";
  for (const std::string& line : text.details)
    out << "  - " << line << "\n";
}

// "[600, 900) s", with UTC times when the clock looks like epoch seconds (after 2001).
std::string span(double start, double end) {
  std::string s = format("[%g, %g) s", start, end);
  if (start > 1e9 && start < 1e11) {
    const std::time_t t = std::time_t(start);
    std::tm tm{};
    if (gmtime_r(&t, &tm) != nullptr) {
      char buf[32];
      std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
      s += format(" (from %s)", buf);
    }
  }
  return s;
}

// The alarm's rule and how many periods had no datapoint.
void print_alarm_rule(std::ostream& out, const Diagnosis& d) {
  const DiagnoseOptions& o = d.options;
  size_t missing = 0, empty = 0;
  for (const Window& w : d.windows) {
    missing += !std::isfinite(w.otps);
    empty += w.completions == 0;
  }
  out << format(
      " OTPS < %.1f tokens/s (%g x baseline p50 %.1f)\n  for %d of %d periods of %g s, "
      "missing data ignored; %zu periods, %zu without an OTPS datapoint (%zu without "
      "completions)\n",
      d.alarm_threshold, o.alarm_fraction, d.baseline.p50.otps, o.datapoints, o.evaluation_periods,
      o.period_s, d.windows.size(), missing, empty);
}

// The OTPS of the periods up to K, at most the last 10 of the evaluation range ("*" breaching).
std::string recent_otps(const Diagnosis& d, size_t k) {
  const size_t shown = std::min<size_t>(size_t(d.options.evaluation_periods), 10);
  const size_t from = k + 1 >= shown ? k + 1 - shown : 0;
  std::string s;
  for (size_t j = from; j <= k; ++j) {
    if (!s.empty()) s += ", ";
    const double x = d.windows[j].otps;
    s += std::isfinite(x) ? format("%.1f%s", x, x < d.alarm_threshold ? "*" : "") : "missing";
  }
  return s;
}

// The alarm never fired: say how close the lowest period came.
void print_never_fired(std::ostream& out, const Diagnosis& d) {
  const Window* low = nullptr;
  for (const Window& w : d.windows) {
    if (std::isfinite(w.otps) && (low == nullptr || w.otps < low->otps)) low = &w;
  }
  out << "  never fired";
  if (low != nullptr) {
    out << format(" (lowest period OTPS %.1f tokens/s, %s)", low->otps,
                  span(low->start_s, low->end_s).c_str());
  }
  out << "\n";
}

// When the alarm went to ALARM, and when (and for which state) it left.
void print_episode(std::ostream& out, const Diagnosis& d, const AlarmEpisode& e) {
  const Window& w = d.windows[e.first];
  out << "  ALARM at the end of " << span(w.start_s, w.end_s)
      << "; last periods' OTPS (* breaching): " << recent_otps(d, e.first) << "\n";
  if (!e.ended) {
    out << "  still in ALARM at the end of the log\n";
    return;
  }
  const Window& ok = d.windows[e.last + 1];
  out << "  left ALARM for " << alarm_state_name(d.alarm[e.last + 1]) << " at the end of "
      << span(ok.start_s, ok.end_s) << "; last periods' OTPS: " << recent_otps(d, e.last + 1)
      << "\n";
}

// When the OTPS alarm would have fired on the current log, and when it returned to OK.
void print_alarm(std::ostream& out, const Diagnosis& d) {
  out << "\nOTPS alarm on the current log (CloudWatch-style):";
  if (!std::isfinite(d.alarm_threshold)) {
    out << " baseline OTPS undefined, no alarm evaluated\n";
    return;
  }
  print_alarm_rule(out, d);
  if (d.firings.empty()) print_never_fired(out, d);
  for (const AlarmEpisode& e : d.firings)
    print_episode(out, d, e);
  if (d.alarm_excused()) {
    out << "  the alarm fired as CloudWatch would page, but the verdict (" +
               std::string(finding_name(d.verdict.finding)) +
               ") puts the OTPS drop on the workload or noise, not the service: excused "
               "(--fail-on-alarm does not fail on it; --fail-on-any-alarm does)\n";
  }
}

void print_windows(std::ostream& out, const Diagnosis& d) {
  out << format("\n%-24s %9s %11s %10s %10s %10s  %s\n", "period (s)", "arrivals", "completions",
                "TTFT p50", "IL p50", "OTPS p50", "alarm");
  for (size_t k = 0; k < d.windows.size(); ++k) {
    const Window& w = d.windows[k];
    out << format("%-24s %9lld %11lld %10s %10s %10s  %s\n",
                  format("[%g, %g)", w.start_s, w.end_s).c_str(),
                  static_cast<long long>(w.arrivals), static_cast<long long>(w.completions),
                  num(w.ttft_ms_p50, 1).c_str(), num(w.e2e_ms_p50, 1).c_str(),
                  num(w.otps, 1).c_str(), alarm_state_name(d.alarm[k]));
  }
}

ordered_json point_json(const LatencyPoint& p) {
  return ordered_json{{"invocation_latency_ms", p.il_ms},
                      {"ttft_ms", p.ttft_ms},
                      {"output_token_count", p.otc},
                      {"otps", p.otps}};
}

ordered_json stats_json(const LogStats& s) {
  return ordered_json{{"source", s.source},
                      {"requests", s.requests},
                      {"completed", s.completed},
                      {"p50", point_json(s.p50)},
                      {"p95", point_json(s.p95)},
                      {"input_tokens_p50", s.input_tokens_p50},
                      {"queue_ms_p50", s.queue_ms_p50},
                      {"prefill_tps_p99", s.prefill_tps_p99},
                      {"request_rate", s.request_rate},
                      {"decode_load",
                       {{"requests", s.decode.requests},
                        {"tpot_ms_intercept", s.decode.a_ms},
                        {"tpot_ms_per_concurrent_request", s.decode.b_ms},
                        {"concurrency_p5", s.decode.concurrency_p5},
                        {"concurrency_p50", s.decode.concurrency_p50},
                        {"concurrency_p95", s.decode.concurrency_p95},
                        {"tpot_ms_p50", s.decode.tpot_ms_p50}}}};
}

// Under "input_output_speed" input_length + output_length + speed = invocation_latency; under
// "ttft_decode" ttft + decode = invocation_latency (input_length null); decode = output + speed.
ordered_json parts_json(const Decomposition& x) {
  return ordered_json{
      {"invocation_latency_ms", x.il}, {"input_length_ms", x.input},   {"ttft_ms", x.ttft},
      {"decode_ms", x.decode},         {"output_length_ms", x.output}, {"speed_ms", x.speed}};
}

ordered_json options_json(const DiagnoseOptions& o) {
  return ordered_json{{"tolerance", o.tolerance},
                      {"period_s", o.period_s},
                      {"alarm_fraction", o.alarm_fraction},
                      {"datapoints", o.datapoints},
                      {"evaluation_periods", o.evaluation_periods}};
}

ordered_json verdict_json(const Verdict& v) {
  const VerdictText text = verdict_text(v);
  return ordered_json{{"finding", finding_name(v.finding)},
                      {"headline", text.headline},
                      {"details", text.details},
                      {"host_check",
                       {{"decode_speed_tps_per_sequence",
                         {{"baseline", v.decode_speed.baseline},
                          {"current", v.decode_speed.current},
                          {"relative", v.decode_speed.relative}}},
                        {"matched_concurrency", v.matched_concurrency},
                        {"extrapolated", v.decode_extrapolated},
                        {"decode_slower", v.decode_slower},
                        {"prefill_slower", v.prefill_slower}}},
                      {"workload",
                       {{"input_tokens_p50_relative", v.input_tokens.relative},
                        {"output_tokens_p50_relative", v.otc.relative},
                        {"request_rate_relative", v.rate.relative}}},
                      {"config_changes", v.config_changes}};
}

ordered_json windows_json(const Diagnosis& d) {
  ordered_json windows = ordered_json::array();
  for (size_t k = 0; k < d.windows.size(); ++k) {
    const Window& w = d.windows[k];
    windows.push_back({{"start_s", w.start_s},
                       {"end_s", w.end_s},
                       {"arrivals", w.arrivals},
                       {"completions", w.completions},
                       {"ttft_ms_p50", w.ttft_ms_p50},
                       {"invocation_latency_ms_p50", w.e2e_ms_p50},
                       {"output_token_count_p50", w.output_tokens_p50},
                       {"otps", w.otps},
                       {"state", alarm_state_name(d.alarm[k])}});
  }
  return windows;
}

ordered_json firings_json(const Diagnosis& d) {
  ordered_json firings = ordered_json::array();
  for (const AlarmEpisode& e : d.firings) {
    firings.push_back(
        {{"alarm_at_s", d.windows[e.first].end_s},
         {"ended_at_s", e.ended ? ordered_json(d.windows[e.last + 1].end_s) : ordered_json()},
         {"ended_state",
          e.ended ? ordered_json(alarm_state_name(d.alarm[e.last + 1])) : ordered_json()},
         {"first_window", e.first},
         {"last_window", e.last}});
  }
  return firings;
}

ordered_json alarm_json(const Diagnosis& d) {
  return ordered_json{{"threshold_otps", d.alarm_threshold},
                      {"fired", !d.firings.empty()},
                      {"excused", d.alarm_excused()},
                      {"firings", firings_json(d)},
                      {"windows", windows_json(d)}};
}

}  // namespace

std::vector<std::string> small_sample_warnings(const Diagnosis& d) {
  std::vector<std::string> out;
  for (const auto& [name, stats] :
       {std::pair<const char*, const LogStats*>{"baseline", &d.baseline},
        {"current", &d.current}}) {
    if (stats->completed < kMinRequestsForVerdict) {
      out.push_back(
          format("the %s log has %lld completed requests (fewer than %d): its "
                 "percentiles, and this verdict, may be noise",
                 name, static_cast<long long>(stats->completed), kMinRequestsForVerdict));
    }
  }
  return out;
}

void print_diagnosis(std::ostream& out, const Diagnosis& d, bool show_windows) {
  for (const std::string& w : small_sample_warnings(d))
    out << "WARNING: " << w << "\n";
  print_logs(out, d);
  print_table(out, d.baseline, d.current);
  print_decomposition(out, d.p50, d.p95);
  print_verdict(out, d.verdict);
  print_alarm(out, d);
  if (show_windows) print_windows(out, d);
}

nlohmann::ordered_json diagnosis_json(const Diagnosis& d) {
  return ordered_json{
      {"options", options_json(d.options)},
      {"baseline", stats_json(d.baseline)},
      {"current", stats_json(d.current)},
      {"change",
       {{"split", split_name(d.p50.split)},
        {"p50", parts_json(d.p50)},
        {"p95", parts_json(d.p95)}}},
      {"verdict", verdict_json(d.verdict)},
      {"alarm", alarm_json(d)},
      {"warnings", small_sample_warnings(d)},
  };
}

}  // namespace servesim
