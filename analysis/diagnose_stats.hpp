// The statistics diagnose compares, read the way Amazon Bedrock's OTPS guidance reads its identity
//     InvocationLatency_ms = TimeToFirstToken_ms + OutputTokenCount / OTPS x 1000
//  - LogStats: p50 and p95 of InvocationLatency, TTFT and OutputTokenCount over the completed
//    requests, and OTPS the CloudWatch way at each percentile q:
//        OTPS_q = OTC_q / (IL_q - TTFT_q) x 1000,
//    so IL_q = TTFT_q + OTC_q / OTPS_q x 1000 holds for each q (up to rounding).
//    Beside them, the prefill speed of the fastest prefills: p99 over the completed requests of
//        input tokens / (TTFT - queueing delay) x 1000   (tokens/s),
//    the rate the host turns prompt tokens into a first token once it has scheduled the request.
//    Per prompt token, so longer prompts leave it in place; the fastest requests are prefilled
//    when little else runs, so load barely moves it (chunked prefill or not); a slower host
//    lowers it. diagnose reads it to tell "longer prompts under load" from "a slower host".
//    And the decode speed against the load (DecodeLoad): each request's time per output token
//    after the first, (IL - TTFT) / (OTC - 1), against the mean number of requests decoding at
//    once over its decode (the batch it shared), fitted as a line. Longer answers, a higher rate
//    or an unlucky arrival sample raise the concurrency and move along the line; a slower host
//    (or a scheduler that puts more work in each step) moves the line. diagnose compares the two
//    logs' lines at matched concurrency to tell "under load each token waits longer" from "the
//    host generates slower" (issue 24).
//  - Decomposition: the change of IL_q split, in one of two ways (Split):
//      kTtftDecode:       dIL = dTTFT + d(OTC_q / OTPS_q x 1000), the decode part split again
//                         into an output-length part dOTC / OTPS_base x 1000 and a speed part
//                         OTC_cur x (1/OTPS_cur - 1/OTPS_base) x 1000;
//      kInputOutputSpeed: dIL = input length + output length + speed, where input length is
//                         the whole TTFT change, queueing included: when the prompts changed,
//                         the prefill work and the queueing it causes are the prompts' doing.
//                         Output length and speed as above.
//    The parts sum to dIL (to rounding) either way; the verdict chooses the split.
// Promises: pure functions of their inputs.
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/windows.hpp"

namespace servesim {

// The CloudWatch statistics of one log at one percentile (NaN when undefined).
struct LatencyPoint {
  double il_ms = NAN;    // InvocationLatency
  double ttft_ms = NAN;  // TimeToFirstToken
  double otc = NAN;      // OutputTokenCount
  double otps = NAN;     // OTC / (IL - TTFT) x 1000
  // OTC / OTPS x 1000: the decode time the identity attributes to generation.
  double decode_ms() const;
};

// The decode time per output token against the decode concurrency (above), over the completed
// requests with two or more output tokens. Concurrency at time t is the number of requests
// between their first and last token; a request's is its mean over its own decode (itself
// included, so >= 1). Fitted by least squares as tpot = a + b x concurrency (b = 0 when the
// concurrency does not vary). Undefined (requests < kMinDecodeRequests, NaN fields) otherwise.
struct DecodeLoad {
  int64_t requests = 0;           // requests in the fit
  double a_ms = NAN, b_ms = NAN;  // ms per token; ms per token per concurrent request
  double concurrency_p5 = NAN, concurrency_p50 = NAN, concurrency_p95 = NAN;
  double tpot_ms_p50 = NAN;

  bool defined() const { return std::isfinite(a_ms) && std::isfinite(b_ms); }
  double tpot_ms_at(double concurrency) const { return a_ms + b_ms * concurrency; }
};

inline constexpr int64_t kMinDecodeRequests = 10;

DecodeLoad decode_load(const RequestLog& log);

struct LogStats {
  std::string source;
  nlohmann::ordered_json config;  // the run's recorded configuration (results files), else null
  int64_t requests = 0, completed = 0;
  LatencyPoint p50, p95;
  double input_tokens_p50 = NAN, queue_ms_p50 = NAN;  // NaN when the log does not say
  // Input tokens / (TTFT - queueing) x 1000, p99 (above); NaN without input and queueing.
  double prefill_tps_p99 = NAN;
  double start_s = 0, end_s = 0;  // first arrival, last completion
  // Arrivals per second: (requests - 1) / (last arrival - first arrival); NaN below 2 requests
  // or when they all arrive at once.
  double request_rate = NAN;
  DecodeLoad decode;
};

LogStats log_stats(const RequestLog& log);

// Which parts a latency change is split into (above).
enum class Split { kTtftDecode, kInputOutputSpeed };

const char* split_name(Split s);  // "ttft_decode", "input_output_speed"

// The change of InvocationLatency at one percentile, in ms: il = ttft + decode and
// decode = output + speed (each to rounding), whatever the split. kInputOutputSpeed adds
// input = ttft, so that il = input + output + speed. output and speed are NaN when an OTPS is
// undefined; input is NaN under kTtftDecode.
struct Decomposition {
  Split split = Split::kTtftDecode;
  double il = NAN, ttft = NAN, decode = NAN, output = NAN, speed = NAN;
  double input = NAN;
};

Decomposition decompose(const LatencyPoint& baseline, const LatencyPoint& current,
                        Split split = Split::kTtftDecode);

// (CURRENT - BASELINE) / BASELINE; NaN unless BASELINE >= 0 and both are finite; +-infinity for a
// change from 0 (any rise from nothing is significant).
double relative_change(double baseline, double current);

}  // namespace servesim
