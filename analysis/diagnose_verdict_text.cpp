// A diagnose Verdict in words: its headline and detail lines (analysis/diagnose_verdict_text.hpp).
#include "analysis/diagnose_verdict_text.hpp"

#include "analysis/diagnose_util.hpp"

namespace servesim {

namespace {

using diagnose_util::num;
using diagnose_util::pct;
using diagnose_util::signed_num;

std::string tolerance_text(const Verdict& v) {
  return format("%g%%", v.tolerance * 100);
}

// "TTFT p50 100.0 -> 150.0 ms (+50.0%)"; UNIT is " ms", " tokens/s" or "".
std::string change_line(const char* name, const Change& c, const char* unit) {
  return format("%s %s -> %s%s (%s)", name, num(c.baseline, 1).c_str(), num(c.current, 1).c_str(),
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

// The split of the latency change: under kInputOutputSpeed input length is the TTFT change.
std::string parts_line(const Verdict& v) {
  const Decomposition& d = v.p50;
  const std::string first =
      d.split == Split::kInputOutputSpeed
          ? "input length " + signed_num(d.input, 1) + " ms (the TTFT change, queueing included)"
          : "TTFT " + signed_num(d.ttft, 1) + " ms";
  return format(
      "of the %s ms change of InvocationLatency p50: %s, output length %s ms, generation speed "
      "%s ms",
      signed_num(d.il, 1).c_str(), first.c_str(), signed_num(d.output, 1).c_str(),
      signed_num(d.speed, 1).c_str());
}

// Which log lacks a statistic that one of them (or neither) recorded.
std::string missing_from(const Change& c) {
  return std::isfinite(c.baseline)  ? "the current log"
         : std::isfinite(c.current) ? "the baseline log"
                                    : "either log";
}

// What the prompts' change says beside the finding.
const char* input_suffix(const Verdict& v) {
  const bool ours = v.finding == Finding::kInputLength;
  if (v.longer_prompts) {
    return ours ? ": longer prompts, more prefill work per request (trim the system prompt, cut "
                  "unused retrieved context, reuse cached prefixes)"
                : ": longer prompts, yet the latency did not get worse with them";
  }
  if (v.shorter_prompts) {
    return ours      ? ": shorter prompts, less prefill work per request"
           : v.worse ? ": shorter prompts, so they do not explain the slowdown"
                     : ": shorter prompts, yet the latency did not get better with them";
  }
  return ": the prompts held";
}

std::string input_line(const Verdict& v) {
  const Change& c = v.input_tokens;
  if (!std::isfinite(c.baseline) || !std::isfinite(c.current)) {
    return "input tokens: not recorded in " + missing_from(c) +
           " (give --col-input): input length not judged, so longer prompts cannot be told from "
           "queueing or a slower host";
  }
  return change_line("input tokens p50", c, "") + input_suffix(v);
}

std::string queue_line(const Verdict& v) {
  const Change& c = v.queue_ms;
  if (!std::isfinite(c.baseline) || !std::isfinite(c.current)) {
    return "queueing delay: not recorded in " + missing_from(c) + " (give --col-queue)";
  }
  std::string s = format("queueing delay p50 %s -> %s ms (%s ms", num(c.baseline, 1).c_str(),
                         num(c.current, 1).c_str(), signed_num(c.delta(), 1).c_str());
  if (!(v.p50.ttft > 0)) return s + ")";
  s += format(", %.0f%% of the TTFT p50 change)", c.delta() / v.p50.ttft * 100);
  if (v.mostly_queueing) s += ": mostly waiting to be scheduled (load or capacity)";
  return s;
}

// What the longer prompts did to the p50s, e.g. "raised TTFT p50 +83.9%, queueing included".
std::string prompts_effect(const Verdict& v) {
  std::string s;
  if (v.ttft_up) s = "raised TTFT p50 " + pct(v.ttft.relative) + ", queueing included";
  if (v.otps_down) {
    s += (s.empty() ? "" : ", and ") + std::string("under load slowed decode (OTPS p50 ") +
         pct(v.otps.relative) + ")";
  }
  return s.empty() ? "raised InvocationLatency p50 " + pct(v.il.relative) : s;
}

std::string input_headline(const Verdict& v) {
  const std::string head =
      format("prompts got %s: input tokens p50 %s -> %s (%s), a workload change",
             v.shorter_prompts ? "shorter" : "longer", num(v.input_tokens.baseline, 1).c_str(),
             num(v.input_tokens.current, 1).c_str(), pct(v.input_tokens.relative).c_str());
  if (v.host_slower_too) {
    return head + "; and the host's prefill speed fell too (prefill speed p99 " +
           pct(v.prefill_tps.relative) + "): check the host as well";
  }
  if (v.shorter_prompts) return head + ": less prefill work per request, not a faster host";
  return head + ", not the host: more prefill work per request " + prompts_effect(v);
}

// OTPS beside the prompts: under load it moves with them.
std::string otps_consequence_line(const Verdict& v) {
  if (!v.otps.defined()) return otps_line(v) + ": undefined, throughput not judged";
  if (std::abs(v.otps.relative) <= v.tolerance) {
    return otps_line(v) + ": decode speed held (little prefill shares the decode steps)";
  }
  if (v.host_slower_too) {
    return otps_line(v) +
           ": the prompts under load and the slower host (host check below) "
           "together; the split cannot tell their shares apart";
  }
  return otps_line(v) +
         ": a consequence of the prompts, not the verdict: under load their prefill chunks run "
         "in the same steps as the decodes (chunked prefill) and queue ahead of them, so each "
         "output token waits " +
         (v.otps.relative < 0 ? "longer" : "less");
}

// The host check: the fastest prefills, per prompt token, hold unless the host changed.
std::string host_check_line(const Verdict& v) {
  const Change& c = v.prefill_tps;
  if (!std::isfinite(c.baseline) || !std::isfinite(c.current)) {
    return "host check: prefill speed not known (needs input tokens and queueing delay in both "
           "logs, --col-input and --col-queue): cannot tell whether the host slowed as well";
  }
  const std::string line = change_line(
      "host check: prefill speed p99 (input tokens / (TTFT - queueing), the fastest prefills)", c,
      " tokens/s");
  if (v.host_slower_too) {
    return line + ", beyond the " + tolerance_text(v) +
           " tolerance: the prompts do not explain that; the host is slower as well "
           "(alarm-worthy)";
  }
  return line + ", not down beyond the " + tolerance_text(v) +
         " tolerance: the host prefills as fast as before";
}

// The decode host check: each log's decode line at the matched concurrency.
std::string decode_check_line(const Verdict& v) {
  const Change& c = v.decode_speed;
  if (!c.defined()) {
    return format(
        "host check: decode speed at matched concurrency not known (needs %lld or more completed "
        "requests with two or more output tokens in each log)",
        static_cast<long long>(kMinDecodeRequests));
  }
  std::string line = format(
      "host check: decode speed at matched concurrency (%s requests decoding at once%s) %s -> "
      "%s tokens/s per sequence (%s)",
      num(v.matched_concurrency, 1).c_str(),
      v.decode_extrapolated ? ", the baseline's line extrapolated: the logs' loads do not overlap"
                            : "",
      num(c.baseline, 1).c_str(), num(c.current, 1).c_str(), pct(c.relative).c_str());
  if (v.decode_slower) {
    return line + ", beyond the " + tolerance_text(v) +
           " tolerance: at the same load each token takes longer, the host (or the work in each "
           "step) changed";
  }
  return line + ", not down beyond the " + tolerance_text(v) +
         " tolerance: at the same load the host decodes as fast as before";
}

std::string concurrency_line(const Verdict& v) {
  return change_line("requests decoding at once p50", v.concurrency, "");
}

std::string rate_line(const Verdict& v) {
  return format("request rate %s -> %s req/s (%s)", num(v.rate.baseline, 2).c_str(),
                num(v.rate.current, 2).c_str(), pct(v.rate.relative).c_str());
}

void input_length_text(const Verdict& v, VerdictText& t) {
  t.headline = input_headline(v);
  t.details.push_back(input_line(v));
  t.details.push_back(parts_line(v));
  t.details.push_back(il_line(v) + "; " + ttft_line(v));
  t.details.push_back(queue_line(v));
  t.details.push_back(otps_consequence_line(v));
  t.details.push_back(host_check_line(v));
  if (std::abs(v.otc.relative) > v.tolerance) {
    t.details.push_back(otc_line(v) + " too: the answers' length changed (the output-length part)");
  }
}

void throughput_text(const Verdict& v, VerdictText& t) {
  t.headline =
      v.decode_speed.defined()
          ? "the host generates tokens slower at the same load (decode speed at matched "
            "concurrency " +
                pct(v.decode_speed.relative) + "), a service-side throughput change (alarm-worthy)"
          : "OTPS down: the host generates tokens slower, a service-side throughput change "
            "(alarm-worthy; the decode check at matched concurrency is not known)";
  t.details.push_back(otps_line(v) +
                      (v.otps_down ? ", beyond the " + tolerance_text(v) + " tolerance"
                                   : ", within the " + tolerance_text(v) + " tolerance at p50"));
  t.details.push_back(decode_check_line(v));
  t.details.push_back(concurrency_line(v));
  t.details.push_back(parts_line(v));
  t.details.push_back(input_line(v));
  if (!v.ttft_up) return;
  t.details.push_back(ttft_line(v) +
                      " too: a slower host also prefills slower, and queued requests wait "
                      "behind slower generation");
  t.details.push_back(queue_line(v));
}

// Bigger batches at the same host speed (rule 3): what the OTPS drop is, in words.
std::string bigger_batches(const Verdict& v) {
  return "each step serves more requests and each token waits longer (OTPS p50 " +
         pct(v.otps.relative) + ", requests decoding at once p50 " + pct(v.concurrency.relative) +
         "), while the host decodes as fast at matched "
         "concurrency (" +
         pct(v.decode_speed.relative) + ")";
}

// The details every bigger-batches finding shows.
void batches_details(const Verdict& v, VerdictText& t) {
  t.details.push_back(otps_line(v) + ": a consequence of the load, not the verdict");
  t.details.push_back(decode_check_line(v));
  t.details.push_back(concurrency_line(v));
  t.details.push_back(parts_line(v));
}

// The details of a load finding: the bigger batches when OTPS fell, else the queueing.
void load_details(const Verdict& v, VerdictText& t) {
  if (v.otps_down) {
    batches_details(v, t);
    return;
  }
  t.details.push_back(ttft_line(v) + "; " + otps_line(v));
  t.details.push_back(queue_line(v));
  t.details.push_back(host_check_line(v));
}

void rate_text(const Verdict& v, VerdictText& t) {
  t.headline = "more requests per second (" + rate_line(v) +
               "), a workload change, not the host: " +
               (v.otps_down ? bigger_batches(v)
                            : "more requests queue for each step (TTFT p50 " +
                                  pct(v.ttft.relative) + ") while the host prefills as fast");
  t.details.push_back(rate_line(v));
  load_details(v, t);
}

void config_text(const Verdict& v, VerdictText& t) {
  t.headline = format(
      "the recorded configuration changed (%zu setting%s, below) and the host decodes as fast at "
      "matched concurrency: the OTPS drop follows the bigger batches the new configuration forms",
      v.config_changes.size(), v.config_changes.size() == 1 ? "" : "s");
  batches_details(v, t);
}

void noise_text(const Verdict& v, VerdictText& t) {
  const std::string lead =
      v.other_seed_only
          ? format("the two runs share their configuration but for the seed (%lld instead of %lld)",
                   static_cast<long long>(v.current_seed), static_cast<long long>(v.baseline_seed))
          : "the workload held (input, output and rate within " + tolerance_text(v) + ")";
  const std::string what = v.otps_down
                               ? bigger_batches(v)
                               : "more queueing before the first token (TTFT p50 " +
                                     pct(v.ttft.relative) + ") while the host prefills as fast";
  t.headline = std::string(v.otps_down ? "OTPS down" : "TTFT up") + ", but " + lead + ": " + what +
               "; this arrival sample" +
               (v.rate_up ? " (its rate " + pct(v.rate.relative) + ")" : "") +
               " loaded the host more (noise near saturation), not a slower host; not alarm-worthy";
  load_details(v, t);
  t.details.push_back(rate_line(v));
  t.details.push_back(
      "to measure the noise, replicate: check's num-seeds, compare --num-seeds, run --num-seeds");
}

void ttft_text(const Verdict& v, VerdictText& t) {
  t.headline = v.input_tokens.defined()
                   ? "TTFT up while OTPS holds and the prompts did not grow: queueing or slower "
                     "prefill before generation"
                   : "TTFT up while OTPS holds: input length or queueing before generation";
  t.details.push_back(ttft_line(v) + "; " + otps_line(v) +
                      (v.otps.defined()
                           ? ", not down beyond the " + tolerance_text(v) + " tolerance"
                           : ": undefined, throughput not judged"));
  t.details.push_back(input_line(v));
  t.details.push_back(queue_line(v));
  if (v.otc_up) t.details.push_back(otc_line(v) + " too: longer answers add to the latency");
}

void output_length_text(const Verdict& v, VerdictText& t) {
  if (v.otps_down) {  // rule 3: longer answers under load
    t.headline = "answers got longer (OutputTokenCount p50 " + pct(v.otc.relative) +
                 "), a workload change, not a throughput incident: under load longer answers "
                 "keep more requests decoding at once: " +
                 bigger_batches(v);
    t.details.push_back(il_line(v) + "; " + otc_line(v));
    batches_details(v, t);
    return;
  }
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
  } else if (v.longer_prompts || v.shorter_prompts) {
    t.headline =
        "no significant latency regression, though the prompts changed (input tokens p50 " +
        pct(v.input_tokens.relative) + "): a workload change the latency absorbed";
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

// Whether a detail line of T starts with PREFIX.
bool says(const VerdictText& t, const std::string& prefix) {
  for (const std::string& line : t.details) {
    if (line.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

bool says_input(const VerdictText& t) {
  return says(t, "input tokens");
}

// The notes after any finding: the prompts (once), the tail, dropped requests, an undefined OTPS.
void notes_text(const Verdict& v, VerdictText& t) {
  if (!says_input(t)) t.details.push_back(input_line(v));
  if (!says(t, "host check: decode speed") &&
      (v.decode_slower || v.otps_down || v.finding == Finding::kTtft)) {
    t.details.push_back(decode_check_line(v));
  }
  constexpr size_t kMaxConfigLines = 12;
  for (size_t k = 0; k < v.config_changes.size() && k < kMaxConfigLines; ++k) {
    t.details.push_back("recorded configuration: " + v.config_changes[k]);
  }
  if (v.config_changes.size() > kMaxConfigLines) {
    t.details.push_back(format("recorded configuration: %zu more changes",
                               v.config_changes.size() - kMaxConfigLines));
  }
  if (v.tail_otps_down) {
    t.details.push_back("tail: OTPS p95 " + pct(v.otps_p95.relative) +
                        " while p50 held: investigate, do not page");
  }
  if (v.tail_ttft_up) {
    t.details.push_back("tail: TTFT p95 " + pct(v.ttft_p95.relative) + " while p50 held");
  }
  if (v.fewer_completed) {
    t.details.push_back(
        format("completed %.1f%% -> %.1f%% of requests: the requests that failed or were rejected "
               "are not in these statistics; look at them first",
               v.completed_share.baseline * 100, v.completed_share.current * 100));
  }
  if (!v.otps.defined() && v.finding != Finding::kInputLength) {
    t.details.push_back(
        "OTPS p50 undefined in a log (no decode time: one output token per request?): "
        "throughput not judged");
  }
}

}  // namespace

VerdictText verdict_text(const Verdict& v) {
  VerdictText t;
  switch (v.finding) {
    case Finding::kInputLength:
      input_length_text(v, t);
      break;
    case Finding::kThroughput:
      throughput_text(v, t);
      break;
    case Finding::kTtft:
      ttft_text(v, t);
      break;
    case Finding::kOutputLength:
      output_length_text(v, t);
      break;
    case Finding::kRate:
      rate_text(v, t);
      break;
    case Finding::kConfig:
      config_text(v, t);
      break;
    case Finding::kNoise:
      noise_text(v, t);
      break;
    case Finding::kNone:
      no_finding_text(v, t);
      break;
  }
  notes_text(v, t);
  return t;
}

}  // namespace servesim
