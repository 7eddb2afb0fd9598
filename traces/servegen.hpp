// ServeGen clients (Alibaba, arXiv 2505.09999; github.com/alibaba/ServeGen): per-client workload
// statistics, not requests, and the workload they generate.
//  - A client is two files: `chunk-N-trace.csv`, one row per 600-s window
//    `window_start_s,rate,cv,iat_dist,arg1,arg2` (no header; iat_dist Gamma or Weibull with shape
//    arg1 and scale arg2; empty with rate 0 for an idle window), and `chunk-N-dataset.json`, an
//    object keyed by window start (every 21,600 s) whose fields `input_tokens` and
//    `output_tokens` are strings holding a Python dict literal PMF `{224: 0.0003, ...}`; "{}" is
//    a window without data.
//  - Generation follows ServeGen's construct.generate_workload: for each active window, ceil(rate
//    x window) gaps drawn from the window's distribution and scaled so that they sum to the
//    window, arrivals at the window start plus their running sum, kept while inside the window;
//    lengths drawn from the PMFs of the latest dataset window at or before it (inverse CDF over
//    0..max, as ServeGen's searchsorted; 0 becomes 1, servesim's least). Several clients make a
//    mixture: each generates its own requests, and the workload is all of them in time order.
//    RATE_SCALE multiplies every window's rate (ServeGen's rate function, applied uniformly).
// Promises: bad files throw Error naming the file, line (or window) and field; the same clients,
// span and seed give the same Workload on every machine (Boost.Random).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "traces/request.hpp"

namespace servesim {

struct ServeGenWindow {
  double start_s = 0, rate = 0, cv = 0;
  std::string dist;  // "Gamma", "Weibull" or "" (idle)
  double shape = 0, scale = 0;
};

// A length distribution as its support: tokens in increasing order and the cumulative
// probability up to each (the last exactly 1). Sparse, so a PMF of a few entries near 2^24 tokens
// takes bytes, not the 128 MiB a dense CDF over 0..max would.
struct TokenCdf {
  std::vector<int32_t> tokens;
  std::vector<double> cumulative;
  bool empty() const { return tokens.empty(); }
};

struct ServeGenClient {
  std::string name;                     // the trace file's path
  double window_s = 600;                // the windows' length (the first two starts apart)
  std::vector<ServeGenWindow> windows;  // by start time
  // Dataset windows by start: cumulative distributions of input and output tokens (empty when
  // the window has no data).
  std::map<int64_t, TokenCdf> input_cdf, output_cdf;
  // A multimodal chunk has no input_tokens but one distribution per modality (text_tokens,
  // image_tokens, audio_tokens, video_tokens: every *_tokens field but output_tokens): a request's
  // input is the sum of one draw from each (ServeGen's multimodal requests carry each modality's
  // tokens). Their names, and by window start their CDFs in that order (empty: no data).
  std::vector<std::string> input_fields;
  std::map<int64_t, std::vector<TokenCdf>> input_parts;
};

// Reads TRACE_CSV and the dataset beside it (its name with "-trace.csv" turned into
// "-dataset.json").
ServeGenClient load_servegen_client(const std::string& trace_csv);

// "{224: 0.25, 225: 0.75}" -> the CDF {224: 0.25, 225: 1}. Throws Error(FILE, 0, FIELD) on bad
// text.
TokenCdf parse_pmf_literal(const std::string& text, const std::string& file,
                           const std::string& field);

struct ServeGenOptions {
  double start_s = 0, duration_s = 3600;  // the span of the clients' timelines replayed
  double rate_scale = 1;
  uint64_t seed = 0;
};

// The requests CLIENTS send in [start_s, start_s + duration_s), arrivals shifted to start at 0.
// When a client is multimodal the Workload's input_parts hold each request's tokens by modality
// (every client's *_tokens fields; a language client's input is text_tokens).
// Throws Error naming the flag on bad options, or the client file when a window it needs has no
// dataset before it.
Workload generate_servegen(const std::vector<ServeGenClient>& clients, const ServeGenOptions& o);

}  // namespace servesim
