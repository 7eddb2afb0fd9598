// A diagnose Verdict in words: its headline and detail lines (analysis/diagnose_verdict_text.hpp).
#include "analysis/diagnose_verdict_text.hpp"

#include "analysis/diagnose_util.hpp"

namespace servesim {

namespace {

using diagnose_util::fmt;
using diagnose_util::num;
using diagnose_util::pct;
using diagnose_util::signed_num;

std::string tolerance_text(const Verdict& v) {
  return fmt("%g%%", v.tolerance * 100);
}

// "TTFT p50 100.0 -> 150.0 ms (+50.0%)"; UNIT is " ms", " tokens/s" or "".
std::string change_line(const char* name, const Change& c, const char* unit) {
  return fmt("%s %s -> %s%s (%s)", name, num(c.baseline, 1).c_str(), num(c.current, 1).c_str(),
             unit, pct(c.relative).c_str());
}

std::string il_line(const Verdict& v) {
  return change_line("InvocationLatency p50", v.il, " ms");
}

std::string ttft_line(const Verdict& v) {
  return change_line("TTFT p50", v.ttft, " ms");
}

std::string otps_line(const Verdict& v) {
  return change_line("OTPS p50", v.otps, " tokens/s");
}

std::string otc_line(const Verdict& v) {
  return change_line("OutputTokenCount p50", v.otc, "");
}

std::string parts_line(const Verdict& v) {
  const Decomposition& d = v.p50;
  return fmt(
      "of the %s ms change of InvocationLatency p50: TTFT %s ms, output length %s ms, "
      "generation speed %s ms",
      signed_num(d.il, 1).c_str(), signed_num(d.ttft, 1).c_str(), signed_num(d.output, 1).c_str(),
      signed_num(d.speed, 1).c_str());
}

// Which log lacks a statistic that one of them (or neither) recorded.
std::string missing_from(const Change& c) {
  return std::isfinite(c.baseline)  ? "the current log"
         : std::isfinite(c.current) ? "the baseline log"
                                    : "either log";
}

std::string input_line(const Verdict& v) {
  const Change& c = v.input_tokens;
  if (!std::isfinite(c.baseline) || !std::isfinite(c.current)) {
    return "input tokens: not recorded in " + missing_from(c) +
           " (give --col-input): cannot tell longer prompts from queueing";
  }
  std::string s = change_line("input tokens p50", c, "");
  if (v.longer_prompts) {
    s += ": longer prompts, more prefill work per request (trim the system prompt, cut unused "
         "retrieved context, reuse cached prefixes)";
  }
  return s;
}

std::string queue_line(const Verdict& v) {
  const Change& c = v.queue_ms;
  if (!std::isfinite(c.baseline) || !std::isfinite(c.current)) {
    return "queueing delay: not recorded in " + missing_from(c) + " (give --col-queue)";
  }
  std::string s = fmt("queueing delay p50 %s -> %s ms (%s ms", num(c.baseline, 1).c_str(),
                      num(c.current, 1).c_str(), signed_num(c.delta(), 1).c_str());
  if (!(v.p50.ttft > 0)) return s + ")";
  s += fmt(", %.0f%% of the TTFT p50 change)", c.delta() / v.p50.ttft * 100);
  if (v.mostly_queueing) s += ": mostly waiting to be scheduled (load or capacity)";
  return s;
}

void throughput_text(const Verdict& v, VerdictText& t) {
  t.headline =
      "OTPS down: the host generates tokens slower, a service-side throughput change "
      "(alarm-worthy)";
  t.details.push_back(otps_line(v) + ", beyond the " + tolerance_text(v) + " tolerance");
  t.details.push_back(parts_line(v));
  if (!v.ttft_up) return;
  t.details.push_back(ttft_line(v) +
                      " too: a slower host also prefills slower, and queued requests wait "
                      "behind slower generation; did prompts grow as well?");
  t.details.push_back(input_line(v));
  t.details.push_back(queue_line(v));
}

void ttft_text(const Verdict& v, VerdictText& t) {
  t.headline = "TTFT up while OTPS holds: input length or queueing before generation";
  t.details.push_back(ttft_line(v) + "; " + otps_line(v) +
                      (v.otps.defined()
                           ? ", not down beyond the " + tolerance_text(v) + " tolerance"
                           : ": undefined, throughput not judged"));
  t.details.push_back(input_line(v));
  t.details.push_back(queue_line(v));
  if (v.otc_up) t.details.push_back(otc_line(v) + " too: longer answers add to the latency");
}

void output_length_text(const Verdict& v, VerdictText& t) {
  t.headline =
      "latency up while TTFT and OTPS hold: more output tokens per request, a workload change "
      "(review cost and UX; not a throughput incident)";
  t.details.push_back(il_line(v) + "; " + otc_line(v));
  t.details.push_back(parts_line(v));
  t.details.push_back(ttft_line(v) + " and " + otps_line(v) +
                      ": neither TTFT up nor OTPS down beyond the " + tolerance_text(v) +
                      " tolerance");
}

void no_finding_text(const Verdict& v, VerdictText& t) {
  const std::string tol = tolerance_text(v);
  if (v.small_drift) {
    t.headline = "latency up, but no part of it moved beyond the " + tol + " tolerance";
    t.details.push_back(il_line(v) + ": small drifts add up");
    t.details.push_back(parts_line(v));
  } else if (v.any_moved) {
    t.headline =
        "no significant regression (TTFT not up, OTPS not down, latency not up by more than " +
        tol + ")";
  } else {
    t.headline =
        "no significant change (InvocationLatency, TTFT, OTPS and OutputTokenCount p50 within " +
        tol + ")";
  }
  for (const std::string& line : {il_line(v), ttft_line(v), otps_line(v), otc_line(v)})
    t.details.push_back(line);
}

// The notes after any finding: the tail, dropped requests, an undefined OTPS.
void notes_text(const Verdict& v, VerdictText& t) {
  if (v.tail_otps_down) {
    t.details.push_back("tail: OTPS p95 " + pct(v.otps_p95.relative) +
                        " while p50 held: investigate, do not page");
  }
  if (v.tail_ttft_up) {
    t.details.push_back("tail: TTFT p95 " + pct(v.ttft_p95.relative) + " while p50 held");
  }
  if (v.fewer_completed) {
    t.details.push_back(
        fmt("completed %.1f%% -> %.1f%% of requests: the requests that failed or were rejected "
            "are not in these statistics; look at them first",
            v.completed_share.baseline * 100, v.completed_share.current * 100));
  }
  if (!v.otps.defined()) {
    t.details.push_back(
        "OTPS p50 undefined in a log (no decode time: one output token per request?): "
        "throughput not judged");
  }
}

}  // namespace

VerdictText verdict_text(const Verdict& v) {
  VerdictText t;
  switch (v.finding) {
    case Finding::kThroughput:
      throughput_text(v, t);
      break;
    case Finding::kTtft:
      ttft_text(v, t);
      break;
    case Finding::kOutputLength:
      output_length_text(v, t);
      break;
    case Finding::kNone:
      no_finding_text(v, t);
      break;
  }
  notes_text(v, t);
  return t;
}

}  // namespace servesim
