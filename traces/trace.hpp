// Trace: a workload as columns, the way a trace file holds it: arrival times, token counts, and
// optional prefix-block hash ids, session ids, token spans, priorities and request classes.
// Importers, the HDF5 store and the what-if transforms all work on this form; the simulator replays
// it as a Workload.
// Promises: arrival_s is sorted, finite and >= 0 (0 first when imported); token counts are
// >= 1; when hash ids exist, hash_offsets has size() + 1 non-decreasing entries ending at
// hash_ids.size(); when spans exist, they are as content_problem() checks. Columns stay compact
// (16 bytes a request without content columns), so a trace of tens of millions of rows fits in
// memory.
//
// Where prompts' content comes from (to_workload), the first that exists: spans; hash ids (one
// span per id); session ids (the conversation so far, output continuing it); else nothing shared.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "traces/request.hpp"

namespace servesim {

// Where the rows of the source went. rows_read = size() + every skipped count, always.
struct TraceCounts {
  int64_t rows_read = 0;       // data rows in the source
  int64_t skipped_bad = 0;     // malformed rows skipped with --skip-bad-rows
  int64_t skipped_failed = 0;  // BurstGPT rows with 0 response tokens (failed requests)
  int64_t filtered = 0;        // rows another model or log type than --model-filter/--log-type
  int64_t outside_window = 0;  // dropped by --window
  int64_t beyond_max = 0;      // dropped by --max-requests
  int64_t kept_failed = 0;     // failed rows kept with --keep-failed (replayed as 1 output token)
  int64_t clipped_input = 0;   // prompts cut by --max-input-len
  int64_t clipped_output = 0;  // outputs cut by --max-output-len
  int64_t skipped() const {
    return skipped_bad + skipped_failed + filtered + outside_window + beyond_max;
  }
};

struct Trace {
  std::vector<double> arrival_s;
  std::vector<int32_t> input_tokens;
  std::vector<int32_t> output_tokens;
  // Prefix-block hash ids (Mooncake): request i's ids are hash_ids[hash_offsets[i] ..
  // hash_offsets[i + 1]); one id per hash_block_size prompt tokens. Empty when absent.
  std::vector<uint64_t> hash_offsets;
  std::vector<uint64_t> hash_ids;
  int32_t hash_block_size = 0;
  std::vector<int64_t> session_id;  // BurstGPT_3 Session ID, -1 when empty; empty when absent
  // Token content named explicitly (traces/request.hpp): request i's spans are
  // spans[span_offsets[i] .. span_offsets[i + 1]) and output_continues[i] says whether its output
  // continues its last span's stream. Generated workloads carry them, and hash ids and session
  // ids become them when a transform edits prompts (traces/transform.hpp). Empty when absent.
  std::vector<uint64_t> span_offsets;
  std::vector<TokenSpan> spans;
  std::vector<uint8_t> output_continues;
  std::vector<int32_t> priority;  // vLLM request priority (csv --col-priority); empty = 0
  // LoRA adapter ids (csv --col-lora): 0 the base model, k the adapter named lora_names[k - 1];
  // empty = 0.
  std::vector<int32_t> lora;
  std::vector<std::string> lora_names;
  std::vector<uint8_t> request_class;    // index into class_names; empty when absent
  std::vector<std::string> class_names;  // e.g. "ChatGPT / Conversation log"

  bool timed = true;    // false for length-only traces: arrivals come from a generator
  std::string file;     // the file this trace was read from
  std::string source;   // the file its rows came from (a servesim HDF5 trace keeps its CSV's)
  bool stored = false;  // read from a servesim HDF5 trace (already imported)
  std::string format;   // azure, burstgpt, mooncake, vidur, csv, synthetic, servesim
  std::string options;  // import options and transforms, as flags
  TraceCounts counts;
  std::vector<std::string> first_errors;  // the first few reasons for skipped bad rows

  size_t size() const { return arrival_s.size(); }
  bool has_hash_ids() const { return !hash_offsets.empty(); }
  bool has_spans() const { return !span_offsets.empty(); }
  bool has_sessions() const { return !session_id.empty(); }
  void reserve(size_t n) {
    arrival_s.reserve(n);
    input_tokens.reserve(n);
    output_tokens.reserve(n);
  }
  void push(double arrival, int32_t input, int32_t output) {
    arrival_s.push_back(arrival);
    input_tokens.push_back(input);
    output_tokens.push_back(output);
  }
};

// The requests to replay, ids in arrival order, with their content (see above). Mooncake hash id
// j of a request (hash_block_size tokens a block, the last block possibly partial) becomes the
// span {stream_id(kTraceBlock, id), 0, j * hash_block_size, the block's tokens}; a request of a
// session becomes {stream_id(kSession, session), 0, 0, input_tokens} with its output continuing
// the stream. REQUIRES: t.timed.
Workload to_workload(const Trace& t);

// A trace of the requests of a Workload, spans and priorities included (the what-if transforms on
// generated workloads, `trace synth`).
Trace from_workload(const Workload& w);

// Makes T's content explicit: hash ids and session ids become spans (as to_workload maps them)
// and the hash ids are dropped, so that transforms can edit prompts without losing track of
// which tokens are whose. Does nothing when T has spans already or no content.
void content_as_spans(Trace& t);

// Why T's content columns break the Trace's promises, as {field, reason}; {"", ""} when they hold.
// Spans must cover each prompt from position 0, consecutive, each of >= 1 token, within the
// prompt; output_continues only after a span; every content column one entry a request.
std::pair<std::string, std::string> content_problem(const Trace& t);

}  // namespace servesim
