#include "analysis/diagnose.hpp"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <ctime>
#include <string_view>

#include "util/error.hpp"
#include "util/text_input.hpp"

namespace servesim {

namespace {

bool positive(double x) {
  return std::isfinite(x) && x > 0;
}

template <typename... T>
std::string fmt(const char* format, T... args) {
  char buf[256];
  const int n = std::snprintf(buf, sizeof buf, format, args...);
  if (n < int(sizeof buf)) return buf;
  std::string s(size_t(n) + 1, '\0');  // a long path or number: no line is ever cut
  std::snprintf(s.data(), s.size(), format, args...);
  s.resize(size_t(n));
  return s;
}

// "+12.3%", or "n/a" when undefined.
std::string pct(double r) {
  if (std::isinf(r)) return r > 0 ? "up from 0" : "down from 0";
  return std::isfinite(r) ? fmt("%+.1f%%", r * 100) : "n/a";
}

std::string num(double x, int decimals) {
  return std::isfinite(x) ? fmt("%.*f", decimals, x) : "-";
}

std::string signed_num(double x, int decimals) {
  return std::isfinite(x) ? fmt("%+.*f", decimals, x) : "-";
}

}  // namespace

double LatencyPoint::decode_ms() const {
  if (positive(otps) && std::isfinite(otc)) return otc / otps * 1e3;
  return il_ms - ttft_ms;  // OTPS undefined (no decode time) or zero (no tokens)
}

LogStats log_stats(const RequestLog& log) {
  const Window w = whole_log(log);
  LogStats s;
  s.source = log.source;
  s.requests = w.arrivals;
  s.completed = w.completions;
  s.p50 = {w.e2e_ms_p50, w.ttft_ms_p50, w.output_tokens_p50, w.otps};
  s.p95 = {w.e2e_ms_p95, w.ttft_ms_p95, w.output_tokens_p95,
           cloudwatch_otps(w.output_tokens_p95, w.e2e_ms_p95, w.ttft_ms_p95)};
  s.input_tokens_p50 = w.input_tokens_p50;
  s.queue_ms_p50 = w.queue_ms_p50;
  s.start_s = w.start_s;
  s.end_s = w.end_s;
  return s;
}

Decomposition decompose(const LatencyPoint& base, const LatencyPoint& cur) {
  Decomposition d;
  d.il = cur.il_ms - base.il_ms;
  d.ttft = cur.ttft_ms - base.ttft_ms;
  d.decode = cur.decode_ms() - base.decode_ms();
  if (positive(base.otps) && positive(cur.otps)) {
    d.output = (cur.otc - base.otc) / base.otps * 1e3;
    d.speed = cur.otc * (1 / cur.otps - 1 / base.otps) * 1e3;
  }
  return d;
}

double relative_change(double baseline, double current) {
  if (!std::isfinite(baseline) || !std::isfinite(current) || baseline < 0) return NAN;
  if (baseline == 0) {  // from nothing: any rise is significant
    return current > 0 ? INFINITY : current < 0 ? -INFINITY : 0.0;
  }
  return (current - baseline) / baseline;
}

void validate(const DiagnoseOptions& o) {
  if (!(o.tolerance >= 0) || !std::isfinite(o.tolerance)) {
    throw Error("tolerance", "must be a finite number >= 0 (a relative change, 0.1 = 10%)");
  }
  if (!positive(o.period_s)) throw Error("period-s", "must be a number of seconds > 0");
  if (!positive(o.alarm_fraction)) throw Error("alarm-fraction", "must be a number > 0");
  if (o.evaluation_periods < 1 || o.evaluation_periods > 10000) {
    throw Error("evaluation-periods", "must be in [1, 10000]");
  }
  if (o.datapoints < 1 || o.datapoints > o.evaluation_periods) {
    throw Error("datapoints", "must be in [1, --evaluation-periods]");
  }
}

const char* finding_name(Finding f) {
  switch (f) {
    case Finding::kThroughput:
      return "throughput";
    case Finding::kTtft:
      return "ttft";
    case Finding::kOutputLength:
      return "output_length";
    case Finding::kNone:
      break;
  }
  return "none";
}

Verdict decide(const LogStats& base, const LogStats& cur, double tol) {
  const LatencyPoint& b = base.p50;
  const LatencyPoint& c = cur.p50;
  const Decomposition d = decompose(b, c);
  const double r_il = relative_change(b.il_ms, c.il_ms);
  const double r_ttft = relative_change(b.ttft_ms, c.ttft_ms);
  const double r_otps = relative_change(b.otps, c.otps);
  const double r_otc = relative_change(b.otc, c.otc);
  const double r_input = relative_change(base.input_tokens_p50, cur.input_tokens_p50);
  const double r_otps95 = relative_change(base.p95.otps, cur.p95.otps);
  const double r_ttft95 = relative_change(base.p95.ttft_ms, cur.p95.ttft_ms);
  // NaN compares false: an undefined change is never significant.
  const bool otps_down = r_otps < -tol;
  const bool ttft_up = r_ttft > tol;
  const bool il_up = r_il > tol;
  const bool otc_up = r_otc > tol;
  const std::string tol_text = fmt("%g%%", tol * 100);

  const std::string il_line = fmt("InvocationLatency p50 %s -> %s ms (%s)", num(b.il_ms, 1).c_str(),
                                  num(c.il_ms, 1).c_str(), pct(r_il).c_str());
  const std::string ttft_line = fmt("TTFT p50 %s -> %s ms (%s)", num(b.ttft_ms, 1).c_str(),
                                    num(c.ttft_ms, 1).c_str(), pct(r_ttft).c_str());
  const std::string otps_line = fmt("OTPS p50 %s -> %s tokens/s (%s)", num(b.otps, 1).c_str(),
                                    num(c.otps, 1).c_str(), pct(r_otps).c_str());
  const std::string otc_line = fmt("OutputTokenCount p50 %s -> %s (%s)", num(b.otc, 1).c_str(),
                                   num(c.otc, 1).c_str(), pct(r_otc).c_str());
  const std::string parts_line =
      fmt("of the %s ms change of InvocationLatency p50: TTFT %s ms, output length %s ms, "
          "generation speed %s ms",
          signed_num(d.il, 1).c_str(), signed_num(d.ttft, 1).c_str(),
          signed_num(d.output, 1).c_str(), signed_num(d.speed, 1).c_str());
  auto input_line = [&]() -> std::string {
    if (!std::isfinite(base.input_tokens_p50) || !std::isfinite(cur.input_tokens_p50)) {
      return "input tokens: not recorded in " +
             std::string(std::isfinite(base.input_tokens_p50)  ? "the current log"
                         : std::isfinite(cur.input_tokens_p50) ? "the baseline log"
                                                               : "either log") +
             " (give --col-input): cannot tell longer prompts from queueing";
    }
    std::string s = fmt("input tokens p50 %s -> %s (%s)", num(base.input_tokens_p50, 1).c_str(),
                        num(cur.input_tokens_p50, 1).c_str(), pct(r_input).c_str());
    if (r_input > tol) {
      s += ": longer prompts, more prefill work per request (trim the system prompt, cut unused "
           "retrieved context, reuse cached prefixes)";
    }
    return s;
  };
  auto queue_line = [&]() -> std::string {
    if (!std::isfinite(base.queue_ms_p50) || !std::isfinite(cur.queue_ms_p50)) {
      return "queueing delay: not recorded in " +
             std::string(std::isfinite(base.queue_ms_p50)  ? "the current log"
                         : std::isfinite(cur.queue_ms_p50) ? "the baseline log"
                                                           : "either log") +
             " (give --col-queue)";
    }
    const double dq = cur.queue_ms_p50 - base.queue_ms_p50;
    std::string s = fmt("queueing delay p50 %s -> %s ms (%s ms", num(base.queue_ms_p50, 1).c_str(),
                        num(cur.queue_ms_p50, 1).c_str(), signed_num(dq, 1).c_str());
    if (d.ttft > 0) {
      s += fmt(", %.0f%% of the TTFT p50 change)", dq / d.ttft * 100);
      if (dq >= 0.5 * d.ttft) s += ": mostly waiting to be scheduled (load or capacity)";
    } else {
      s += ")";
    }
    return s;
  };

  Verdict v;
  if (otps_down) {
    v.finding = Finding::kThroughput;
    v.headline =
        "OTPS down: the host generates tokens slower, a service-side throughput change "
        "(alarm-worthy)";
    v.details.push_back(otps_line + ", beyond the " + tol_text + " tolerance");
    v.details.push_back(parts_line);
    if (ttft_up) {
      v.details.push_back(ttft_line +
                          " too: a slower host also prefills slower, and queued requests wait "
                          "behind slower generation; did prompts grow as well?");
      v.details.push_back(input_line());
      v.details.push_back(queue_line());
    }
  } else if (ttft_up) {
    v.finding = Finding::kTtft;
    v.headline = "TTFT up while OTPS holds: input length or queueing before generation";
    v.details.push_back(ttft_line + "; " + otps_line +
                        (std::isfinite(r_otps) ? ", not down beyond the " + tol_text + " tolerance"
                                               : ": undefined, throughput not judged"));
    v.details.push_back(input_line());
    v.details.push_back(queue_line());
    if (otc_up) v.details.push_back(otc_line + " too: longer answers add to the latency");
  } else if (il_up && otc_up) {
    v.finding = Finding::kOutputLength;
    v.headline =
        "latency up while TTFT and OTPS hold: more output tokens per request, a workload change "
        "(review cost and UX; not a throughput incident)";
    v.details.push_back(il_line + "; " + otc_line);
    v.details.push_back(parts_line);
    v.details.push_back(ttft_line + " and " + otps_line +
                        ": neither TTFT up nor OTPS down beyond the " + tol_text + " tolerance");
  } else {
    v.finding = Finding::kNone;
    const bool any = std::abs(r_il) > tol || std::abs(r_ttft) > tol || std::abs(r_otps) > tol ||
                     std::abs(r_otc) > tol;
    if (il_up && std::isfinite(r_ttft) && std::isfinite(r_otps) && std::isfinite(r_otc)) {
      v.headline = "latency up, but no part of it moved beyond the " + tol_text + " tolerance";
      v.details.push_back(il_line + ": small drifts add up");
      v.details.push_back(parts_line);
    } else if (any) {
      v.headline =
          "no significant regression (TTFT not up, OTPS not down, latency not up by more "
          "than " +
          tol_text + ")";
    } else {
      v.headline =
          "no significant change (InvocationLatency, TTFT, OTPS and OutputTokenCount p50 "
          "within " +
          tol_text + ")";
    }
    v.details.push_back(il_line);
    v.details.push_back(ttft_line);
    v.details.push_back(otps_line);
    v.details.push_back(otc_line);
  }
  // The tail, for investigation, never the verdict (the article: p95 beside p50, p50 pages).
  if (!otps_down && r_otps95 < -tol) {
    v.details.push_back("tail: OTPS p95 " + pct(r_otps95) +
                        " while p50 held: investigate, do "
                        "not page");
  }
  if (!ttft_up && r_ttft95 > tol) {
    v.details.push_back("tail: TTFT p95 " + pct(r_ttft95) + " while p50 held");
  }
  // Failed or rejected requests are not in the statistics: say when their share moved.
  const double done_b = base.requests ? double(base.completed) / double(base.requests) : NAN;
  const double done_c = cur.requests ? double(cur.completed) / double(cur.requests) : NAN;
  if (done_b - done_c > tol) {
    v.details.push_back(
        fmt("completed %.1f%% -> %.1f%% of requests: the requests that failed or "
            "were rejected are not in these statistics; look at them first",
            done_b * 100, done_c * 100));
  }
  if (!std::isfinite(r_otps)) {
    v.details.push_back(
        "OTPS p50 undefined in a log (no decode time: one output token per "
        "request?): throughput not judged");
  }
  return v;
}

const char* alarm_state_name(AlarmState s) {
  switch (s) {
    case AlarmState::kOk:
      return "OK";
    case AlarmState::kAlarm:
      return "ALARM";
    case AlarmState::kInsufficientData:
      break;
  }
  return "INSUFFICIENT_DATA";
}

std::vector<AlarmState> evaluate_alarm(const std::vector<double>& otps, double threshold,
                                       int datapoints, int periods) {
  assert(datapoints >= 1 && datapoints <= periods);
  std::vector<AlarmState> out(otps.size(), AlarmState::kInsufficientData);
  // Counts over the last PERIODS datapoints, slid one period at a time (missing: neither
  // breaching nor OK).
  int present = 0, breaching = 0;
  for (size_t k = 0; k < otps.size(); ++k) {
    if (std::isfinite(otps[k])) {
      ++present;
      breaching += otps[k] < threshold;
    }
    if (k >= size_t(periods)) {
      const double gone = otps[k - size_t(periods)];
      if (std::isfinite(gone)) {
        --present;
        breaching -= gone < threshold;
      }
    }
    out[k] = breaching >= datapoints ? AlarmState::kAlarm
             : present == 0          ? AlarmState::kInsufficientData
                                     : AlarmState::kOk;
  }
  return out;
}

std::vector<AlarmEpisode> alarm_episodes(const std::vector<AlarmState>& states) {
  std::vector<AlarmEpisode> out;
  for (size_t k = 0; k < states.size(); ++k) {
    if (states[k] != AlarmState::kAlarm) continue;
    if (k > 0 && states[k - 1] == AlarmState::kAlarm) {
      out.back().last = k;
      continue;
    }
    out.push_back({k, k, false});
  }
  for (AlarmEpisode& e : out)
    e.ended = e.last + 1 < states.size();
  return out;
}

Diagnosis diagnose(const RequestLog& baseline, const RequestLog& current,
                   const DiagnoseOptions& o) {
  validate(o);
  Diagnosis d;
  d.options = o;
  d.baseline = log_stats(baseline);
  d.current = log_stats(current);
  for (const LogStats* s : {&d.baseline, &d.current}) {
    if (s->completed == 0) {
      throw Error(s->source, 0, "",
                  fmt("no completed request (with both TTFT and latency) among %lld: nothing to "
                      "diagnose",
                      static_cast<long long>(s->requests)));
    }
  }
  d.p50 = decompose(d.baseline.p50, d.current.p50);
  d.p95 = decompose(d.baseline.p95, d.current.p95);
  d.verdict = decide(d.baseline, d.current, o.tolerance);
  if ((d.current.end_s - d.current.start_s) / o.period_s > 1e6) {
    throw Error("period-s",
                fmt("%s spans %.0f s: more than a million %g s periods (mixed clocks or "
                    "time units? see --time-unit)",
                    d.current.source.c_str(), d.current.end_s - d.current.start_s, o.period_s));
  }
  d.windows = compute_windows(current, o.period_s);
  if (positive(d.baseline.p50.otps)) d.alarm_threshold = o.alarm_fraction * d.baseline.p50.otps;
  std::vector<double> series;
  series.reserve(d.windows.size());
  for (const Window& w : d.windows)
    series.push_back(w.otps);
  d.alarm = evaluate_alarm(series, d.alarm_threshold, o.datapoints, o.evaluation_periods);
  d.firings = alarm_episodes(d.alarm);
  return d;
}

namespace {

// "[600, 900) s", with UTC times when the clock looks like epoch seconds (after 2001).
std::string span(double start, double end) {
  std::string s = fmt("[%g, %g) s", start, end);
  if (start > 1e9 && start < 1e11) {
    const std::time_t t = std::time_t(start);
    std::tm tm{};
    if (gmtime_r(&t, &tm) != nullptr) {
      char buf[32];
      std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
      s += fmt(" (from %s)", buf);
    }
  }
  return s;
}

// When the OTPS alarm would have fired on the current log, and when it returned to OK.
void print_alarm(std::ostream& out, const Diagnosis& d) {
  const DiagnoseOptions& o = d.options;
  out << "\nOTPS alarm on the current log (CloudWatch-style):";
  if (!std::isfinite(d.alarm_threshold)) {
    out << " baseline OTPS undefined, no alarm evaluated\n";
    return;
  }
  size_t missing = 0, empty = 0;
  for (const Window& w : d.windows) {
    missing += !std::isfinite(w.otps);
    empty += w.completions == 0;
  }
  out << fmt(
      " OTPS < %.1f tokens/s (%g x baseline p50 %.1f)\n  for %d of %d periods of %g s, "
      "missing data ignored; %zu periods, %zu without an OTPS datapoint (%zu without "
      "completions)\n",
      d.alarm_threshold, o.alarm_fraction, d.baseline.p50.otps, o.datapoints, o.evaluation_periods,
      o.period_s, d.windows.size(), missing, empty);
  auto recent = [&](size_t k) {
    std::string s;
    // At most the last 10 periods of the evaluation range.
    const size_t shown = std::min<size_t>(size_t(o.evaluation_periods), 10);
    const size_t from = k + 1 >= shown ? k + 1 - shown : 0;
    for (size_t j = from; j <= k; ++j) {
      if (!s.empty()) s += ", ";
      const double x = d.windows[j].otps;
      s += std::isfinite(x) ? fmt("%.1f%s", x, x < d.alarm_threshold ? "*" : "") : "missing";
    }
    return s;
  };
  if (d.firings.empty()) {
    const Window* low = nullptr;
    for (const Window& w : d.windows) {
      if (std::isfinite(w.otps) && (low == nullptr || w.otps < low->otps)) low = &w;
    }
    out << "  never fired";
    if (low != nullptr) {
      out << fmt(" (lowest period OTPS %.1f tokens/s, %s)", low->otps,
                 span(low->start_s, low->end_s).c_str());
    }
    out << "\n";
  }
  for (const AlarmEpisode& e : d.firings) {
    const Window& w = d.windows[e.first];
    out << "  ALARM at the end of " << span(w.start_s, w.end_s)
        << "; last periods' OTPS (* breaching): " << recent(e.first) << "\n";
    if (e.ended) {
      const Window& ok = d.windows[e.last + 1];
      out << "  left ALARM for " << alarm_state_name(d.alarm[e.last + 1]) << " at the end of "
          << span(ok.start_s, ok.end_s) << "; last periods' OTPS: " << recent(e.last + 1) << "\n";
    } else {
      out << "  still in ALARM at the end of the log\n";
    }
  }
}

}  // namespace

void print_diagnosis(std::ostream& out, const Diagnosis& d, bool show_windows) {
  const LogStats& b = d.baseline;
  const LogStats& c = d.current;
  out << "servesim diagnose: InvocationLatency = TTFT + OutputTokenCount / OTPS x 1000, "
         "completed requests\n";
  for (const LogStats* s : {&b, &c}) {
    out << fmt("  %-9s %s: %lld requests, %lld completed\n", s == &b ? "baseline" : "current",
               s->source.c_str(), static_cast<long long>(s->requests),
               static_cast<long long>(s->completed));
  }
  out << fmt("\n%-28s %12s %12s %9s\n", "", "baseline", "current", "change");
  auto row = [&](const char* name, double x, double y, int decimals) {
    out << fmt("%-28s %12s %12s %9s\n", name, num(x, decimals).c_str(), num(y, decimals).c_str(),
               pct(relative_change(x, y)).c_str());
  };
  row("InvocationLatency p50 (ms)", b.p50.il_ms, c.p50.il_ms, 1);
  row("InvocationLatency p95 (ms)", b.p95.il_ms, c.p95.il_ms, 1);
  row("TimeToFirstToken p50 (ms)", b.p50.ttft_ms, c.p50.ttft_ms, 1);
  row("TimeToFirstToken p95 (ms)", b.p95.ttft_ms, c.p95.ttft_ms, 1);
  row("OutputTokenCount p50", b.p50.otc, c.p50.otc, 1);
  row("OutputTokenCount p95", b.p95.otc, c.p95.otc, 1);
  row("OTPS p50 (tokens/s)", b.p50.otps, c.p50.otps, 1);
  row("OTPS p95 (tokens/s)", b.p95.otps, c.p95.otps, 1);
  row("input tokens p50", b.input_tokens_p50, c.input_tokens_p50, 1);
  row("queueing delay p50 (ms)", b.queue_ms_p50, c.queue_ms_p50, 1);

  out << fmt("\n%-44s %10s %10s\n", "change of InvocationLatency (ms)", "p50", "p95");
  auto part = [&](const char* name, double x, double y) {
    out << fmt("%-44s %10s %10s\n", name, signed_num(x, 1).c_str(), signed_num(y, 1).c_str());
  };
  part("  total", d.p50.il, d.p95.il);
  part("  = TTFT", d.p50.ttft, d.p95.ttft);
  part("  + decode, OTC / OTPS x 1000", d.p50.decode, d.p95.decode);
  part("      = output length, dOTC / OTPS_base", d.p50.output, d.p95.output);
  part("      + speed, OTC_cur x d(1/OTPS)", d.p50.speed, d.p95.speed);

  out << "\nverdict (" << finding_name(d.verdict.finding) << "): " << d.verdict.headline << "\n";
  for (const std::string& line : d.verdict.details)
    out << "  - " << line << "\n";

  print_alarm(out, d);
  if (show_windows) {
    out << fmt("\n%-24s %9s %11s %10s %10s %10s  %s\n", "period (s)", "arrivals", "completions",
               "TTFT p50", "IL p50", "OTPS p50", "alarm");
    for (size_t k = 0; k < d.windows.size(); ++k) {
      const Window& w = d.windows[k];
      out << fmt("%-24s %9lld %11lld %10s %10s %10s  %s\n",
                 fmt("[%g, %g)", w.start_s, w.end_s).c_str(), static_cast<long long>(w.arrivals),
                 static_cast<long long>(w.completions), num(w.ttft_ms_p50, 1).c_str(),
                 num(w.e2e_ms_p50, 1).c_str(), num(w.otps, 1).c_str(),
                 alarm_state_name(d.alarm[k]));
    }
  }
}

nlohmann::ordered_json diagnosis_json(const Diagnosis& d) {
  using nlohmann::ordered_json;
  auto point = [](const LatencyPoint& p) {
    return ordered_json{{"invocation_latency_ms", p.il_ms},
                        {"ttft_ms", p.ttft_ms},
                        {"output_token_count", p.otc},
                        {"otps", p.otps}};
  };
  auto stats = [&](const LogStats& s) {
    return ordered_json{{"source", s.source},
                        {"requests", s.requests},
                        {"completed", s.completed},
                        {"p50", point(s.p50)},
                        {"p95", point(s.p95)},
                        {"input_tokens_p50", s.input_tokens_p50},
                        {"queue_ms_p50", s.queue_ms_p50}};
  };
  auto parts = [](const Decomposition& x) {
    return ordered_json{{"invocation_latency_ms", x.il},
                        {"ttft_ms", x.ttft},
                        {"decode_ms", x.decode},
                        {"output_length_ms", x.output},
                        {"speed_ms", x.speed}};
  };
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
  const DiagnoseOptions& o = d.options;
  return ordered_json{
      {"options",
       {{"tolerance", o.tolerance},
        {"period_s", o.period_s},
        {"alarm_fraction", o.alarm_fraction},
        {"datapoints", o.datapoints},
        {"evaluation_periods", o.evaluation_periods}}},
      {"baseline", stats(d.baseline)},
      {"current", stats(d.current)},
      {"change", {{"p50", parts(d.p50)}, {"p95", parts(d.p95)}}},
      {"verdict",
       {{"finding", finding_name(d.verdict.finding)},
        {"headline", d.verdict.headline},
        {"details", d.verdict.details}}},
      {"alarm",
       {{"threshold_otps", d.alarm_threshold},
        {"fired", !d.firings.empty()},
        {"firings", firings},
        {"windows", windows}}},
  };
}

// ---------------------------------------------------------------------------------------------
// Request log CSV.

RequestLog read_request_log_csv(const std::string& path, const CsvLogColumns& c) {
  LineReader reader(path);
  CsvSplitter splitter;
  std::vector<std::string_view> fields;
  std::string reason;
  std::string_view line;
  bool header = false;
  while (reader.next(line)) {
    if (!trim(line).empty()) {
      header = true;
      break;
    }
  }
  if (!header) throw Error(path, 0, "", "empty file: expected a CSV header line");
  const int header_line = int(reader.line_number());
  const CsvHeader h = read_csv_header(line, path, header_line);
  const std::vector<std::string>& names = h.names;
  auto column = [&](const std::string& name, const char* flag, bool required) -> int {
    const int i = h.find(name);
    if (i >= 0 || !required) return i;
    throw Error(path, header_line, name,
                "no such column (the header has: " + h.joined() + "); name it with --" + flag);
  };
  const int i_arrival = column(c.arrival, "col-arrival", true);
  const int i_ttft = column(c.ttft, "col-ttft", true);
  const int i_latency = column(c.latency, "col-latency", true);
  const int i_output = column(c.output, "col-output", true);
  const int i_input = column(c.input, "col-input", c.input_required);
  const int i_queue = column(c.queue, "col-queue", c.queue_required);

  RequestLog log;
  log.source = path;
  const size_t expect = size_t(std::max<int64_t>(reader.estimated_lines(), 1));
  log.arrival_s.reserve(expect);
  log.ttft_ms.reserve(expect);
  log.e2e_ms.reserve(expect);
  log.output_tokens.reserve(expect);
  if (i_input >= 0) log.input_tokens.reserve(expect);
  if (i_queue >= 0) log.queue_ms.reserve(expect);
  while (reader.next(line)) {
    if (trim(line).empty()) continue;
    const int n = int(reader.line_number());
    if (!splitter.split(line, fields, reason)) throw Error(path, n, "", reason);
    if (fields.size() != names.size()) {
      throw Error(path, n, "", fmt("%zu fields, the header has %zu", fields.size(), names.size()));
    }
    auto real = [&](int i, const std::string& field, double scale, bool allow_empty) {
      const std::string_view text = trim(fields[size_t(i)]);
      if (text.empty() && allow_empty) return double(NAN);
      double v = 0;
      if (!parse_double(text, v)) {
        throw Error(path, n, field, "'" + std::string(text) + "' is not a finite number");
      }
      return v * scale;
    };
    auto nonnegative = [&](double v, const std::string& field) {
      if (v < 0) throw Error(path, n, field, fmt("%g is negative", v));
      return v;
    };
    const double arrival = real(i_arrival, c.arrival, c.time_to_s, false);
    double ttft = nonnegative(real(i_ttft, c.ttft, c.latency_to_ms, true), c.ttft);
    double e2e = nonnegative(real(i_latency, c.latency, c.latency_to_ms, true), c.latency);
    const bool done = std::isfinite(ttft) && std::isfinite(e2e);
    if (done && e2e < ttft) {
      throw Error(path, n, c.latency, fmt("latency %g ms is below TTFT %g ms", e2e, ttft));
    }
    if (!done) ttft = e2e = NAN;  // started, or non-streaming: not a completed stream
    auto tokens = [&](int i, const std::string& field) -> int64_t {
      const std::string_view text = trim(fields[size_t(i)]);
      if (text.empty() && !done) return 0;
      int64_t v = 0;
      if (!parse_int(text, v) || v < 0) {
        throw Error(path, n, field, "'" + std::string(text) + "' is not a token count >= 0");
      }
      return v;
    };
    log.arrival_s.push_back(arrival);
    log.ttft_ms.push_back(ttft);
    log.e2e_ms.push_back(e2e);
    log.output_tokens.push_back(tokens(i_output, c.output));
    if (i_input >= 0) log.input_tokens.push_back(tokens(i_input, c.input));
    if (i_queue >= 0) {
      log.queue_ms.push_back(nonnegative(real(i_queue, c.queue, c.latency_to_ms, true), c.queue));
    }
  }
  if (log.size() == 0) throw Error(path, 0, "", "no requests after the header");
  return log;
}

}  // namespace servesim
